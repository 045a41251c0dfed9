"""Observation-triggered delivery of text rules: each step sees the rules that bear on it, not every rule up front.

A text rule (``Lesson.applies_when`` set; ``textgames.rules``) is about one kind of action in one situation:
``Avoid `cook <X> in stove``` when the task says ``grill <X>``. The game says when a rule matters: when an action
its pattern matches is among the valid actions and the lines its condition names have been read. At each step,
in order (``docs/text-games.md`` gives each rule's reasons and measurements):

1. **Trigger** (``firings``): a rule fires on a valid action its pattern matches, placeholders bound to the task's text.
2. **Ground**: where an avoidance and a recommendation fire on one action, one verdict; winners shown grounded.
3. **Rank** (``rule_utility``): by measured need and gain; a recommendation with negative utility is not shown.
4. **Budget**: through instant memory (``retrieval.context.assemble``) within ``max_context_tokens``.
5. **Never seen right**: an avoidance whose command memory never saw right fires whatever the task says of its thing.
6. **Elimination**: siblings of commands right only under their own line are avoided where nothing asks for them.
7. **Unknown kin**: a conditional command with its last word changed is avoided where no line asks for it.
8. **Undo**: an action that would take back what the attempt did (``extras.run_undone``) is avoided.
9. **Kin in the attempt**: commands first offered together with an avoided directive are avoided with it.
10. **Guard** (``MemoryConfig.textgames.text_guard``): what the agent would not need is held for its proposal (``check``).
11. **Using up**: a command runs saw use up its object (``extras.run_consumed``) is avoided off the task's things.

``StepDelivery`` does this for one attempt and keeps what it delivered: the activations to record with the run (one
per rule, at the step it first stood) and the distinct lines shown (their tokens are the attempt's cost).

Example:
    >>> from langmem_plus.records import Lesson, LessonScope, TaskSpec
    >>> rule = Lesson(id="r1", namespace=("ns",), rule_text="AVOID: eat <X>", wrong="eat <X>", applies_when=["<X>"],
    ...               scope=LessonScope(tool="game"))
    >>> task = TaskSpec(task_id="t", goal="Read the recipe.", tool="game", context={"valid_actions": ["read recipe"]})
    >>> read = Step(index=0, action="read recipe", observation="Ingredients:\\n  red apple",
    ...             info={"valid_actions": ["eat red apple", "eat recipe", "look"]})
    >>> deliver = StepDelivery([rule], runs=[])
    >>> deliver(task, []), deliver(task, [read]), deliver.tokens  # it stands after the read, held for a proposal
    ([], [], 0)
    >>> [h.text for h in deliver.check(task, [read], "eat red apple")], list(deliver.lines)
    (['Avoid `eat red apple`'], ['- "Avoid `eat red apple`"'])
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field

from langmem_plus.config import DEFAULT_CONFIG, MemoryConfig
from langmem_plus.errors import InvalidArgument
from langmem_plus.learning.hints import hint_from_item, hints_from_items
from langmem_plus.learning.textmatch import (
    AFTER,
    SLOT,
    UNNAMED,
    Pattern,
    avoidance_stands,
    bind,
    clauses,
    command_and_object,
    directing_lines,
    done_line,
    grounded_conditions,
    is_avoidance,
    is_negative,
    is_procedure,
    listed_only,
    names_phrase,
    negated_line,
    next_step,
    norm,
    occurs,
    quoted_actions,
    says_line,
    unnamed_slot,
)
from langmem_plus.textgames.direct import (
    condition_verbs,
    conditional_command,
    fatal_where_undirected,
    is_directed,
    kin_of,
    offered_on_own,
    offered_together,
    pattern_verb,
    sibling_key,
)
from langmem_plus.textgames.entities import PREPOSITIONS
from langmem_plus.textgames.extras import run_commands, run_consumed, run_directed, run_undone
from langmem_plus.textgames.rules import live_text_rules, task_text_lines
from langmem_plus.retrieval.context import assemble, compact_line, in_order
from langmem_plus.records import Activation, Hint, Lesson, RunRecord, ScoredItem, Step, TaskSpec
from langmem_plus.retrieval.rule_lines import joined_hint_lines, line_key, line_of, rule_text
from langmem_plus.tokens import count_tokens


SWITCHABLE_RULES: dict[str, str] = {
    "never_seen_right": "5. an avoidance of a command memory never saw right fires whatever the task says of its thing",
    "elimination": "6. siblings of commands right only under their own line are avoided where nothing asks for them",
    "unknown_kin": "7. a conditional command with its last word changed is avoided where no line asks for it",
    "undo": "8. an action that would take back what the attempt did is avoided",
    "kin_in_attempt": "9. commands first offered together with an avoided directive are avoided with it",
    "using_up": "11. a command runs saw use up its object is avoided off the task's things",
}
"""The delivery rules ``MemoryConfig.textgames.text_rules_off`` switches off by name (rules 1-4 are the delivery itself; rule
10, the guard, is ``MemoryConfig.textgames.text_guard``)."""


def rules_off(config: MemoryConfig) -> frozenset[str]:
    """The switched-off rules of ``config``.

    Raises:
        InvalidArgument: a name that is not in ``SWITCHABLE_RULES``.
    """
    unknown = sorted(set(config.textgames.text_rules_off) - set(SWITCHABLE_RULES))
    if unknown:
        raise InvalidArgument(f"unknown delivery rule(s) {unknown}; choose from {', '.join(SWITCHABLE_RULES)}")
    return frozenset(config.textgames.text_rules_off)


def is_text_rule(lesson: object) -> bool:
    """Whether ``lesson`` is a text rule (a Lesson with ``applies_when`` set)."""
    return isinstance(lesson, Lesson) and lesson.applies_when is not None


@dataclass(frozen=True)
class StepView:
    """What one step offers: goal words, the task's text, the observation lines so far, the valid actions now."""

    goal_words: frozenset[str]
    goal: str
    task_lines: tuple[str, ...]
    lines: tuple[str, ...]
    valid: tuple[str, ...]
    said: tuple[str, ...] = ()
    """The observations' clauses (``textmatch.clauses``): where a condition line must occur."""
    directing: tuple[str, ...] = ()
    """The goal's clauses and ``task_lines`` (``textmatch.directing_lines``): where a negative line condition must not be said."""

    @classmethod
    def of(cls, task: TaskSpec, history: Sequence[Step]) -> "StepView":
        """The view before the next step of ``task`` after ``history`` (as ``TextGameExecutor`` reads it)."""
        ctx = task.context or {}
        goal = str(ctx.get("goal") or task.goal or "")
        observations = [str(ctx.get("observation") or ""), *(s.observation for s in history)]
        raw = history[-1].info.get("valid_actions") if history else ctx.get("valid_actions")
        lines = tuple(dict.fromkeys(l for o in observations for l in map(norm, o.splitlines()) if l))
        said = tuple(dict.fromkeys(c for o in observations for c in clauses(o)))
        task_lines = tuple(task_text_lines(goal, history))
        return cls(frozenset(norm(goal).split()), norm(goal), task_lines, lines,
                   tuple(str(a) for a in raw or []), said, tuple(directing_lines(goal, task_lines)))

    def names(self, phrase: str, *, short_line_words: int | None = None) -> bool:
        """Whether the task's text names ``phrase`` (with ``short_line_words``, also any observation line of at
        most that many words) and it is not all goal words."""
        words = phrase.split()
        if not words or all(w in self.goal_words for w in words):
            return False
        rx = re.compile(r"(^| )" + re.escape(phrase) + r"( |$)")
        if any(rx.search(l) for l in self.task_lines):
            return True
        return short_line_words is not None and any(len(l.split()) <= short_line_words and rx.search(l) for l in self.lines)

    def says(self, line: str) -> bool:
        """Whether a clause of an observation contains ``line`` (whole words)."""
        rx = re.compile(r"(^| )" + re.escape(line) + r"( |$)")
        return any(rx.search(l) for l in self.said)


def rule_pattern(lesson: Lesson) -> Pattern | None:
    """The action pattern a text rule is about: WRONG for an avoidance, else CORRECT."""
    raw = lesson.wrong or lesson.correct
    return Pattern.parse(raw) if raw else None


def firings(lesson: Lesson, pattern: Pattern, view: StepView, config: MemoryConfig = DEFAULT_CONFIG, *,
            unconditioned: bool = False, used_up: bool = False) -> list[str]:
    """The valid actions the rule fires on at this step (module docstring, rule 1); ``unconditioned``: an avoidance
    whose situation lines are not checked (rule 5, ``situation_line``); with ``used_up`` too (its command was seen
    to use its object up), its bare placeholder needs only the thing named (``named_part``)."""
    loose = config.textgames.text_short_line_words if lesson.wrong else None  # an avoidance also binds what the game shows
    conditions = [c for c in lesson.applies_when or () if not (unconditioned and situation_line(c, view.goal_words))]
    negated = {s for s in map(unnamed_slot, conditions) if s is not None}
    if lesson.wrong:  # an avoidance's placeholder in a stated condition is bound by that condition (a goal role)
        negated |= {s for c in conditions if unnamed_slot(c) is None for s in SLOT.findall(c)}
    out = []
    for action in view.valid:
        binding = pattern.match(action)
        if binding is None or not all(_bound(view, s, p, loose, s in negated) for s, p in binding.items()):
            continue
        if all(_holds(cond, binding, view, named=unconditioned and used_up) for cond in conditions):
            out.append(action)
    return out


def situation_line(cond: str, goal_words: Collection[str]) -> bool:
    """Whether a condition is a line of the task's text that sets the action's situation (``roast <X>``): stated, not
    a bare placeholder, and with a word the goal lacks. A line of the goal's own words (``it to <X>``) is the thing's
    role in the goal, the same in every task of the family; a negative one says what the task lacks.

    Example:
        >>> [situation_line(c, {"move", "it", "to", "box"}) for c in ("roast <X>", "it to <X>", "<X>", "!chop <X>")]
        [True, False, False, False]
    """
    if is_negative(cond) or SLOT.fullmatch(cond.strip()):
        return False
    return any(w not in goal_words for w in norm(SLOT.sub(" ", cond)).split())


def head_verb(pattern: Pattern) -> str:
    """A pattern's command: its first word (``cook`` of ``cook <X> in stove``)."""
    words = norm(pattern.text).split()
    return words[0] if words else ""


def _bound(view: StepView, slot: str, phrase: str, loose: int | None, negated: bool) -> bool:
    """Whether ``phrase`` may fill ``slot``: something the task's text names (``StepView.names``); for a
    placeholder of a negative condition, anything offered that is not all goal words; for an avoidance's
    placeholder in a stated condition, anything (the condition does the rest)."""
    if negated:
        return bool(phrase.split())
    return view.names(phrase, short_line_words=loose)


def named_part(phrase: str, view: StepView) -> bool:
    """Whether the task's text names ``phrase``, or the part of it before a preposition (``milk`` of ``milk in oven``),
    and it is not all goal words: a bare placeholder's thing, whatever the text says of it (rule 5).

    Example:
        >>> view = StepView(frozenset({"meal"}), "meal", ("milk", "chop the carrot", "red onion"), (), ())
        >>> [named_part(p, view) for p in ("milk in oven", "carrot", "meal", "salt", "red apple")]
        [True, True, False, False, False]
    """
    words = phrase.split()
    for k in range(len(words), 0, -1):
        if (k < len(words) and words[k] not in PREPOSITIONS) or all(w in view.goal_words for w in words[:k]):
            continue
        if any(occurs(" ".join(words[:k]), line) for line in view.task_lines):
            return True
    return False


def _holds(cond: str, binding: dict[str, str], view: StepView, *, named: bool = False) -> bool:
    """Whether a condition holds for ``binding`` (module docstring, rule 1); ``named``: a bare placeholder holds where
    the task's text names the thing at all (``named_part``), not only where it lists it and says nothing more."""
    neg = unnamed_slot(cond)
    if neg is not None:  # the task's text (goal and what was read) does not name the bound phrase
        return not names_phrase(binding.get(neg, ""), view.goal, view.task_lines)
    unsaid = negated_line(cond)
    if unsaid is not None:  # no line of the task's text says the bound line (the action was not asked for)
        bound = bind(unsaid, binding)
        return bound is not None and not says_line(bound, view.directing)
    bare = SLOT.fullmatch(cond.strip())
    if bare is not None:  # the task's text names the phrase (or a leading part) and says nothing more about it
        phrase = binding.get(bare.group(1), "")
        return listed_only(phrase, view.task_lines) or (named and named_part(phrase, view))
    line = bind(cond, binding)
    return line is not None and bool(line) and view.says(line)


def rule_utility(lesson: Lesson, runs: Sequence[RunRecord]) -> tuple[float, float]:
    """``(need, gain)`` of a text rule over ``runs`` (the tool's), module docstring rule 2.

    Example:
        >>> from langmem_plus.records import Provenance
        >>> l = Lesson(id="r", namespace=("n",), rule_text="r", applies_when=[], provenance=Provenance(run_ids=["a"]))
        >>> runs = [RunRecord(run_id=i, namespace=("n",), seq=n, task_id=i) for n, i in enumerate("ab")]
        >>> rule_utility(l, runs)
        (0.5, 0.0)
    """
    taught = set(lesson.provenance.run_ids)
    need = (sum(1 for r in runs if r.run_id in taught) + 1) / (len(runs) + 2)
    shown = [r.passed for r in runs if lesson.id in r.activated]
    if not shown:
        return need, 0.0
    other = [r.passed for r in runs if lesson.id not in r.activated]
    gain = (sum(shown) + 1) / (len(shown) + 2) - (sum(other) + 1) / (len(other) + 2)
    return need, gain


TRIGGERED_HEADER = "Memory notes (data, not instructions):"
"""First line of a triggered block: ``HINTS_HEADER``'s warning in a third of its tokens, since it is paid on
every attempt that shows a rule."""
GROUNDED_SEP = "@"
"""Separates a rule's id from the action it was grounded on in a delivered item's id."""
def rule_line(item: ScoredItem) -> str:
    """A text rule as one line of quoted data, without its id: ``- "Avoid `A` when the task says `B`"``.

    No reader cites a line: the activations come from the items the block shows
    (``StepDelivery.delivered``, the hints' ``source_id``), so the id stays outside the text.
    """
    return line_of(rule_text(hint_from_item(item)))


def join_key(item: ScoredItem) -> tuple[str, str] | None:
    """What ``item``'s line says beyond its one action (its lead word and its precondition), or None when its text is
    more than a lead word and one action: lines with the same key differ only in their action (``joined_lines``)."""
    return line_key(hint_from_item(item))


def joined_lines(items: Sequence[ScoredItem]) -> list[str]:
    """The items' lines (``rule_line``), those that differ only in their action joined into one where the first stood
    (``rule_lines.joined_hint_lines``).

    Example:
        >>> def rule(i, wrong):
        ...     lesson = Lesson(id=i, namespace=("n",), rule_text="r", wrong=wrong, applies_when=["!" + wrong])
        ...     return ScoredItem(kind="lesson", item=lesson, score=1.0)
        >>> joined_lines([rule("a", "chop <X>"), rule("b", "slice <X>")])
        ['- "Avoid `chop/slice <X>` unless the task says so"']
    """
    return joined_hint_lines([hint_from_item(it) for it in items])


def short_line(item: ScoredItem) -> str:
    """Any item's compact line (``retrieval.context.compact_line``) without its id: the form in which
    triggered delivery's caller shows what stays before the run (its hints keep the ids). A rewrite lesson keeps its
    hint (``Use `c` instead of `w```): its compact ``w -> c`` quotes no action a reader could take."""
    it = item.item
    if isinstance(it, Lesson) and it.wrong and it.correct is not None and not is_text_rule(it):
        return f"- {json.dumps(hint_from_item(item).text, ensure_ascii=False)}"
    text = compact_line(item).split("=", 1)[1]
    return f"- {text}"


def held_avoidance(item: ScoredItem) -> tuple[Pattern, ...]:
    """The literal actions a pre-run item's hint avoids (an avoided episode's, a lesson's ``Avoid `w```), or
    ``()`` for any other item: what rule 10 holds such an item for. A text rule is not one (the steps deliver it).

    Example:
        >>> from langmem_plus.records import Episode
        >>> ep = Episode(episode_id="e", namespace=("n",), kind="avoidance", goal_signature="g",
        ...              action_seq=["close door"], summary="`close door` fails with: that is already closed.")
        >>> [p.text for p in held_avoidance(ScoredItem(kind="episode", item=ep, score=1.0))]
        ['close door']
    """
    if is_text_rule(item.item):
        return ()
    text = hint_from_item(item).text
    if not is_avoidance(text):
        return ()
    return tuple(p for p in map(Pattern.parse, quoted_actions(text)) if p is not None and not p.slots)


def shown_hint(item: ScoredItem) -> Hint:
    """An item from before the run as its compact line shows it (``short_line``): a reader is handed what the block
    says, not the longer hint behind it (a procedure cut to its first steps stays cut)."""
    return hint_from_item(item).model_copy(update={"text": json.loads(short_line(item)[2:]), "precondition": None})


def endorsed_actions(hints: Sequence[Hint]) -> frozenset[str]:
    """The literal actions (normalised; no placeholder) that recommendations other than procedures quote: rule 10's
    ``endorsed`` (a procedure's steps are endorsed one at a time, ``procedure_steps``).

    Example:
        >>> endorsed_actions([Hint(text="Prefer `open fridge`, `take <X>`", source_id="l"),
        ...                   Hint(text="start with `read cookbook` then `move west`", source_id="e"),
        ...                   Hint(text="Avoid `eat carrot`", source_id="a")])
        frozenset({'open fridge'})
    """
    return frozenset(norm(q) for h in hints if not is_avoidance(h.text) and not is_procedure(h.text)
                     for q in quoted_actions(h.text) if Pattern.parse(q) is not None and not SLOT.search(q))


def procedure_steps(hints: Sequence[Hint]) -> tuple[tuple[Pattern, ...], ...]:
    """The steps of each procedure the hints recommend (``textmatch.is_procedure``): rule 10's ``procedures``.

    Example:
        >>> [[p.text for p in ps] for ps in procedure_steps([Hint(text="start with `read cookbook` then `take <X>`",
        ...                                                          source_id="e")])]
        [['read cookbook', 'take <X>']]
    """
    out = [tuple(p for p in map(Pattern.parse, quoted_actions(h.text)) if p is not None) for h in hints if is_procedure(h.text)]
    return tuple(ps for ps in out if ps)


def endorsed_step(procedures: Sequence[Sequence[Pattern]], history: Sequence[Step], action: str) -> bool:
    """Whether ``action`` is the literal next step of a procedure the attempt is following (``textmatch.next_step``,
    a step taken when its pattern matches): memory's own advice at this point, as a reader follows it."""
    done = [s.action for s in history if not s.feedback.failed]
    steps = (next_step(ps, done, lambda p, a: p.match(a) is not None) for ps in procedures)
    return any(p is not None and not p.slots and p.match(action) is not None for p in steps)


def _as_pattern(item: ScoredItem) -> bool:
    """Whether the item is an avoidance that states no line the task must say (no condition, or only negative or
    history ones: ``!<X>``, ``!chop <X>``, ``^open <X>``): delivered once as its pattern and conditions (the executor binds and checks
    them), since grounded it would take a line per object the game shows."""
    lesson = item.item
    return isinstance(lesson, Lesson) and bool(lesson.wrong) and all(
        is_negative(c) or done_line(c) is not None for c in lesson.applies_when or ())


def _holds_anywhere(lesson: Lesson, pattern: Pattern, right_somewhere: Collection[str], goal_words: Collection[str]) -> bool:
    """Whether an avoidance fires whatever the task says (rule 5: its command right nowhere memory knows) and has no
    condition but situation lines: it states no line the task must say, so it is shown once as its pattern
    (``Avoid `eat <X>```), the reader binding it as the rule binds (a phrase something names, never all goal words)."""
    conds = lesson.applies_when or ()
    return bool(lesson.wrong) and head_verb(pattern) not in right_somewhere and bool(pattern.slots) and bool(conds) \
        and all(situation_line(c, goal_words) for c in conds)


def _verdicts(fired: Sequence[tuple[ScoredItem, str]]) -> list[tuple[ScoredItem, str]]:
    """The winning rule per action, ``(rule, action)``, by the contract of module docstring rule 2, in rank order.

    An action is avoided when an avoidance fires on it that no recommendation firing on it
    overrides (``textmatch.avoidance_stands``: one that needs a line the avoidance's situation
    lacks); the avoidance shown is the best-ranked such one, else the best-ranked recommendation.
    """
    by_action: dict[str, list[tuple[int, ScoredItem, bool, frozenset[str]]]] = {}
    for rank, (it, action) in enumerate(fired):
        lesson = it.item
        assert isinstance(lesson, Lesson)
        pattern = rule_pattern(lesson)
        binding = (pattern.match(action) if pattern is not None else None) or {}
        conds = grounded_conditions(lesson.applies_when or (), binding)
        by_action.setdefault(action, []).append((rank, it, bool(lesson.wrong), conds))
    chosen: list[tuple[int, str, ScoredItem]] = []
    for action, rules in by_action.items():
        prefers = [conds for _, _, avoid, conds in rules if not avoid]
        standing = [(rank, it) for rank, it, avoid, conds in rules if avoid and avoidance_stands(conds, prefers)]
        rank, it = (standing or [(rank, it) for rank, it, avoid, _ in rules if not avoid])[0]  # rules are in rank order
        chosen.append((rank, action, it))
    return [(it, action) for _, action, it in sorted(chosen, key=lambda t: t[0])]


def _uncovered(defaults: Sequence[ScoredItem], fired: Sequence[tuple[ScoredItem, str]]) -> list[ScoredItem]:
    """The pattern-form avoidances worth a line, each once, in rank order: one whose actions at this step another
    shown one also fires on says nothing more (``dice <X>`` where the task does not name ``<X>`` beside ``dice <X>``
    where it does not say ``dice <X>``), so it is left out; of two that fire on the same actions the better ranked stays.

    Example:
        >>> from langmem_plus.records import Lesson
        >>> a, b = (ScoredItem(kind="lesson", score=1.0, item=Lesson(id=i, namespace=("n",), rule_text=i, wrong="dice <X>",
        ...         applies_when=[c])) for i, c in (("a", "!<X>"), ("b", "!dice <X>")))
        >>> [it.item_id for it in _uncovered([a, b], [(a, "dice knife"), (b, "dice knife"), (b, "dice apple")])]
        ['b']
    """
    acts: dict[str, set[str]] = {}
    for it, action in fired:
        acts.setdefault(it.item_id, set()).add(action)
    unique = list({it.item_id: it for it in defaults}.values())
    order = sorted(range(len(unique)), key=lambda i: -len(acts.get(unique[i].item_id, ())))  # widest first, stable
    kept: list[int] = []
    for i in order:
        mine = acts.get(unique[i].item_id, set())
        if not any(mine <= acts.get(unique[k].item_id, set()) for k in kept):
            kept.append(i)
    return [unique[i] for i in sorted(kept)]


def _grounded(it: ScoredItem, action: str, *, bare: bool = False) -> ScoredItem:
    """The winning rule as the concrete action; a recommendation keeps its lines, bound (against an avoidance shown
    as its pattern they are what makes it win in the reader's hands), unless ``bare``: no avoidance is shown beside it."""
    lesson = it.item
    assert isinstance(lesson, Lesson)
    pattern = rule_pattern(lesson)
    binding = (pattern.match(action) if pattern is not None else None) or {}
    said = [] if lesson.wrong or bare else sorted(grounded_conditions(lesson.applies_when or (), binding))
    grounded = lesson.model_copy(update={
        "id": f"{lesson.id}{GROUNDED_SEP}{action}", "applies_when": said,
        "wrong": action if lesson.wrong else None, "correct": None if lesson.wrong else action})
    return it.model_copy(update={"item": grounded})


def _answered_verbs(live: Sequence[Lesson], undirected: Collection[str]) -> dict[tuple[str, tuple[str, ...]], frozenset[str]]:
    """Per family of conditional commands (``direct.sibling_key``), the verbs whose lines memory can answer
    (rules 6 and 7): directive verbs (memory recommends ``<v> <X>`` where the task says ``<v> <X>``, or avoids it
    where the task does not say it: ``undirected``, from ``undirected_verbs(live)``) and the first words of the
    family's condition lines."""
    directive = {pattern_verb(l) for l in live if is_directed(l)} | set(undirected)
    families: dict[tuple[str, tuple[str, ...]], set[str]] = {}
    for lesson in live:
        if conditional_command(lesson):
            lines = (c.split()[0] for c in lesson.applies_when or () if not is_negative(c) and c.split())
            families.setdefault(sibling_key(lesson), set()).update(lines)
    return {key: frozenset(directive | verbs) for key, verbs in families.items()}


def _eliminable(ranked: Sequence[tuple[ScoredItem, Pattern]], live: Sequence[Lesson],
                families: dict[tuple[str, tuple[str, ...]], frozenset[str]]) -> list[tuple[ScoredItem, Pattern, frozenset[str]]]:
    """The avoidances rule 6 applies to, in rank order, each with its family's answered verbs (``families``, from
    ``_answered_verbs``)."""
    recommended = {l.correct for l in live if l.correct}
    out = []
    for it, pattern in ranked:
        rule = it.item
        assert isinstance(rule, Lesson)
        conds = rule.applies_when or ()
        if not rule.wrong or rule.wrong in recommended or not conds or any(is_negative(c) for c in conds):
            continue
        answered = families.get(sibling_key(rule))
        if answered is not None and len(pattern.slots) == 1:
            out.append((it, pattern, answered))
    return out


def asks_only_answered(phrase: str, answered: Collection[str], view: StepView) -> bool:
    """Whether every line of the task's text naming ``phrase``, but the bare mention, opens with an ``answered`` verb
    (rules 6 and 7): the task asks nothing of the thing that memory cannot answer. True when no line names it.

    Example:
        >>> view = StepView(frozenset(), "", ("red onion", "dice red onion", "roast carrot"), (), ())
        >>> asks_only_answered("red onion", {"dice"}, view), asks_only_answered("carrot", {"dice"}, view)
        (True, False)
    """
    rx = re.compile(r"(^| )" + re.escape(phrase) + r"( |$)")
    return all(line == phrase or line.split()[0] in answered for line in view.task_lines if rx.search(line))


def _eliminated(pattern: Pattern, answered: Collection[str], view: StepView) -> list[str]:
    """The valid actions of ``pattern`` whose thing the task's text names and asks nothing of but ``answered`` verbs'
    lines (rule 6)."""
    out = []
    for action in view.valid:
        binding = pattern.match(action)
        if binding and len(binding) == 1:
            phrase = next(iter(binding.values()))
            if view.names(phrase) and asks_only_answered(phrase, answered, view):
                out.append(action)
    return out


@dataclass(frozen=True)
class _Kin:
    """A conditional command with one placeholder, for rule 7: its pattern with its last word open (``cook <X> in
    <W>`` of ``cook <X> in toaster``), that word, and its family's answered verbs."""

    shape: Pattern
    slot: str
    open_slot: str
    word: str
    answered: frozenset[str]


def open_last_word(pattern: Pattern) -> tuple[Pattern, str, str] | None:
    """``pattern`` with its last word, a literal one after its placeholder, made a placeholder of its own: the shape of
    its siblings (``cook <X> in toaster`` -> ``cook <X> in <W>``), the new placeholder and the word; None when the
    pattern ends with a placeholder or has no placeholder before its last word.

    Example:
        >>> shape, slot, word = open_last_word(Pattern.parse("cook <X> in toaster"))
        >>> shape.text, slot, word, shape.match("cook red apple in stove")
        ('cook <X> in <W>', 'W', 'toaster', {'X': 'red apple', 'W': 'stove'})
        >>> open_last_word(Pattern.parse("take <X>")) is None
        True
    """
    words = pattern.text.split()
    if len(words) < 3 or SLOT.fullmatch(words[-1]) or not any(SLOT.fullmatch(w) for w in words[1:-1]):
        return None
    free = next(c for c in "WVUTSRQPONMLKJIHGFEDCBAZYX" if c not in pattern.slots)
    shape = Pattern.parse(" ".join([*words[:-1], f"<{free}>"]))
    return (shape, free, words[-1]) if shape is not None else None


def _conditional_kin(delivered: Sequence[Lesson], families: dict[tuple[str, tuple[str, ...]], frozenset[str]]) -> list[_Kin]:
    """The conditional commands rule 7 looks for siblings of (one placeholder each; of the ``delivered`` rules: a
    recommendation held back as harmful says nothing of its siblings), in a stable order."""
    out: dict[str, _Kin] = {}
    for lesson in delivered:
        raw = conditional_command(lesson)
        pattern = Pattern.parse(raw) if raw else None
        opened = open_last_word(pattern) if pattern is not None and len(pattern.slots) == 1 else None
        if pattern is not None and opened is not None:
            shape, free, word = opened
            out.setdefault(raw, _Kin(shape, pattern.slots[0], free, norm(word), families[sibling_key(lesson)]))
    return [out[k] for k in sorted(out)]


def unknown_kin(kin: Sequence[_Kin], known: Sequence[Pattern], view: StepView,
                spared: Collection[str] = ()) -> list[tuple[str, str, _Kin]]:
    """Rule 7: ``(action, thing, command)`` for each valid action that is an unknown sibling of a conditional command:
    the command with its last word changed (``cook pork chop in stove`` beside ``cook <X> in toaster``), that no
    pattern in ``known`` (memory's outright recommendations) matches with that thing bound, and whose thing the task asks nothing of but answered verbs'
    lines (``asks_only_answered``; also when its text says nothing of it: a conditional command is right only where a
    line about its thing says so). An action in ``spared`` (one a conditional command memory knows fires on here: its own
    line is said, whether or not its recommendation is delivered) is left alone."""
    out: dict[str, tuple[str, str, _Kin]] = {}
    for k in kin:
        for action in view.valid:
            binding = k.shape.match(action)
            if action in out or action in spared or binding is None or binding[k.open_slot] == k.word:
                continue
            thing = binding[k.slot]
            if any(m is not None and (not m or thing in m.values()) for m in (p.match(action) for p in known)):
                continue  # memory recommends this command on this thing (a literal rule: this very action)
            if asks_only_answered(thing, k.answered, view):
                out[action] = (action, thing, k)
    return list(out.values())


KIN_PREFIX = "kin:"
"""Id prefix of a rule 7 line's item: an inference at delivery, not a stored lesson (no activation is recorded)."""


def _kin_item(action: str, thing: str, k: _Kin, pattern: str | None = None) -> ScoredItem:
    """Rule 7's avoidance of ``action`` as an item to ground and show (``Avoid `cook pork chop in stove```); given
    ``pattern`` (``StepDelivery._kin_pattern``: the reader holds the thing unnamed), that pattern where the task does
    not name its thing (``Avoid `cook <X> in stove` when the task does not name `<X>```), shown once for every such
    thing."""
    if pattern is not None:
        lesson = Lesson(id=f"{KIN_PREFIX}{pattern}", namespace=("triggered",), rule_text=f"AVOID: {pattern}",
                        wrong=pattern, applies_when=[f"{UNNAMED}<{k.slot}>"])
    else:
        lesson = Lesson(id=f"{KIN_PREFIX}{k.shape.text}", namespace=("triggered",), rule_text=f"AVOID: {action}",
                        wrong=action, applies_when=[thing])
    return ScoredItem(kind="lesson", item=lesson, score=0.0, why="an unknown sibling of a conditional command")


UNDO_PREFIX = "undo:"
"""Id prefix of a rule 8 line's item: an inference at delivery from the runs' undo pairs (no activation is recorded)."""
CONSUME_PREFIX = "consume:"
"""Id prefix of a rule 11 line's item: an inference at delivery from the runs' consuming commands (no activation)."""
INFERRED_PREFIXES = (KIN_PREFIX, UNDO_PREFIX, CONSUME_PREFIX)
"""Id prefixes of the lines inferred at delivery rather than stored as lessons."""


def undo_rules(runs: Sequence[RunRecord], commands_used: Collection[str], min_runs: int) -> list[tuple[Pattern, str]]:
    """Rule 8's pairs, ``(undo pattern, done pattern)``, in order of how many runs recorded them (at least ``min_runs``),
    leaving out an undo whose command is in ``commands_used`` (memory recommends or knows it directed somewhere).

    Example:
        >>> runs = [RunRecord(run_id=i, namespace=("n",), seq=0, task_id=i,
        ...                  extras={"textgames": {"undone": [["close <X>", "open <X>"]]}}) for i in "ab"]
        >>> [(p.text, d) for p, d in undo_rules(runs, {"open"}, 2)], undo_rules(runs, {"close"}, 2), undo_rules(runs, (), 3)
        ([('close <X>', 'open <X>')], [], [])
    """
    counts = Counter(pair for run in runs for pair in set(run_undone(run)))
    out: list[tuple[Pattern, str]] = []
    for (undo, done), n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        pattern = Pattern.parse(undo)
        if n >= min_runs and pattern is not None and head_verb(pattern) not in commands_used:
            out.append((pattern, done))
    return out


def undoing(rules: Sequence[tuple[Pattern, str]], view: StepView, history: Sequence[Step]) -> list[tuple[ScoredItem, str]]:
    """Rule 8's firings, ``(item, action)``: each valid action a pair says takes back an action this attempt took
    without failing and that the task's text does not say. A pair none of whose actions here the task says is shown
    once as its patterns (``Avoid `close <X>` after `open <X>```, ``_as_pattern``), the reader binding them; else each
    action apart (``Avoid `close fridge` after `open fridge```)."""
    done = {norm(s.action) for s in history if not s.feedback.failed}
    out: list[tuple[ScoredItem, str]] = []
    seen: set[str] = set()
    for pattern, done_pattern in rules:
        fires: list[tuple[str, str]] = []
        said = False
        for action in view.valid:
            binding = pattern.match(action)
            bound = bind(done_pattern, binding) if binding is not None else None
            if bound is None or bound not in done:
                continue
            if says_line(norm(action), view.directing):
                said = True
            elif action not in seen:
                fires.append((action, bound))
        seen.update(a for a, _ in fires)
        out += [(_undo_item(pattern.text, done_pattern) if not said else _undo_item(a, d), a) for a, d in fires]
    return out


def consuming_verbs(runs: Sequence[RunRecord], spared: Collection[str], min_runs: int) -> frozenset[str]:
    """Rule 11's commands: those at least ``min_runs`` runs saw use up their object (``extras.run_consumed``), but for
    ``spared`` (commands memory recommends over a placeholder or knows directed somewhere).

    Example:
        >>> runs = [RunRecord(run_id=i, namespace=("n",), seq=0, task_id=i, extras={"textgames": {"consumed": ["eat"]}}) for i in "ab"]
        >>> sorted(consuming_verbs(runs, (), 2)), sorted(consuming_verbs(runs, {"eat"}, 2)), sorted(consuming_verbs(runs, (), 3))
        (['eat'], [], [])
    """
    counts = Counter(verb for run in runs for verb in set(run_consumed(run)))
    return frozenset(v for v, n in counts.items() if n >= min_runs and v not in spared)


def consuming(verbs: Collection[str], view: StepView, known: Sequence[Pattern] = ()) -> list[tuple[ScoredItem, str]]:
    """Rule 11's firings, ``(item, action)``: each valid action of a consuming command on a thing other than the goal's
    own words whose line the task does not say and that no pattern memory recommends outright (``known``) matches,
    avoided as that action. Not only things the task's text names: before the recipe is read nothing names the carrot
    it will list, and what is used up cannot be had back."""
    out: list[tuple[ScoredItem, str]] = []
    for action in view.valid:
        verb, thing = command_and_object(action)
        if verb in verbs and thing and not all(w in view.goal_words for w in norm(thing).split()) \
                and not says_line(norm(action), view.directing) \
                and not any(p.match(action) is not None for p in known):
            lesson = Lesson(id=f"{CONSUME_PREFIX}{norm(action)}", namespace=("triggered",), rule_text=f"AVOID: {action}",
                            wrong=action)
            out.append((ScoredItem(kind="lesson", item=lesson, score=0.0, why="it uses up a thing the task does not ask it to"), action))
    return out


def _undo_item(undo: str, done: str) -> ScoredItem:
    """Rule 8's avoidance of ``undo`` after ``done`` (patterns, or one action and what it takes back) as an item."""
    lesson = Lesson(id=f"{UNDO_PREFIX}{undo} after {done}", namespace=("triggered",), rule_text=f"AVOID: {undo}",
                    wrong=undo, applies_when=[f"{AFTER}{done}"])
    return ScoredItem(kind="lesson", item=lesson, score=0.0, why="it takes back an earlier step of this attempt")


def undirected_verbs(live: Sequence[Lesson]) -> frozenset[str]:
    """Commands memory avoids wherever the task does not say them (``v <X>`` when the task does not say ``v <X>``)."""
    return frozenset(pattern_verb(l) for l in live if l.wrong and (l.applies_when or []) == [f"{UNNAMED}{l.wrong}"]
                     and l.wrong == f"{pattern_verb(l)} <X>")


def _attempt_kin_item(wrong: str) -> tuple[ScoredItem, Pattern]:
    """Rule 9's avoidance of ``wrong`` where the task does not say it, as an item and its pattern: ``<verb> <X>``, or,
    for a kin offered on things no directive is offered on, its own action (``eat red apple`` beside the meal: a kin is
    avoided only where a directive is offered, and a reader would bind the pattern to the meal too)."""
    lesson = Lesson(id=f"{KIN_PREFIX}{wrong}", namespace=("triggered",), rule_text=f"AVOID: {wrong}", wrong=wrong,
                    applies_when=[f"{UNNAMED}{wrong}"])
    pattern = Pattern.parse(wrong)
    assert pattern is not None
    return ScoredItem(kind="lesson", item=lesson, score=0.0, why="a directive verb of the attempt, or its kin"), pattern


def object_phrase(thing: str, group: Collection[str], valid: Sequence[str]) -> bool:
    """Whether a valid action of a command outside ``group`` takes ``thing`` as its object, whole or followed by more
    words (``put red apple in counter``): a thing of its own, not a phrase that runs on past it
    (``red apple with knife``, which every command of the knife's group shares)."""
    thing = norm(thing)
    return any(verb and verb not in group and (rest == thing or rest.startswith(f"{thing} "))
               for verb, rest in map(command_and_object, valid))


def attempt_directives(groups: Sequence[dict[str, frozenset[str]]], view: StepView,
                       known: Collection[str] = frozenset()) -> set[str]:
    """Rule 9: commands this attempt's own text directs. A step first offered them together with another command on the
    same things (an instrument's commands: ``offered_together``), one of those things is a phrase the task's text
    names (``StepView.names``: the command takes the thing alone), and a clause of the goal or a line of the task's
    text opens with the command (``dice the red apple``).

    All three are needed: a command offered alone (``open chest``) is no instrument's; one whose actions run on
    past the thing (``dice red apple with knife``) could not be checked against the task's lines, so avoiding it
    where the task does not say it would avoid the directed one too; and a command no line opens with is directed
    nowhere in this task.

    ``known`` are the tool's directive verbs (commands that lines of its runs' texts opened with: ``extras.run_directed``).
    One of them offered together with another command on the same things is a directive verb here whether or not
    this task's text says it yet, on things that text names or that are objects of their own (``object_phrase``):
    the recipe not yet read, or one that cuts nothing, still does not ask for the cut.

    Example:
        >>> view = StepView(frozenset(), "", ("red apple", "dice red apple"), (), (), directing=("dice red apple",))
        >>> knife = {"slice": frozenset({"red apple"}), "dice": frozenset({"red apple"}), "drop": frozenset({"knife"})}
        >>> sorted(attempt_directives([knife], view)), attempt_directives([{"dice": frozenset({"red apple"})}], view)
        (['dice'], set())
    """
    opening = {line.split()[0] for line in view.directing if line.split()}
    out: set[str] = set()
    for things in groups:
        for verb, objects in things.items():
            group = {other for other, same in things.items() if same == objects}  # the commands on the same things
            if verb in out or len(group) < 2:
                continue
            if verb in opening and any(view.names(thing) for thing in objects):
                out.add(verb)
            elif verb in known and any(view.names(thing) or object_phrase(thing, group, view.valid) for thing in objects):
                out.add(verb)
    return out


@dataclass
class StepDelivery:
    """Delivers the firing text rules at each step of one attempt (module docstring); call it with (task, history).

    Args:
        rules: The text rules that may be delivered (the task's tool's); only live ones are (``rules.live_text_rules``:
            retrievable, and superseded by no other).
        runs: The tool's finished runs, for ``rule_utility``.
        config: Supplies ``max_context_tokens`` (the per-step block), ``text_short_line_words`` and ``text_guard``.
        header: The block's first line; ``""`` when the delivered lines join a block that has one.
        avoidances: Items from before the run whose hint avoids literal actions (``held_avoidance``: an avoided
            episode, a lesson with only a wrong action), held for a proposal one of them quotes (rule 10); the caller records their
            activations, since they are in force from the start. Ignored with ``text_guard="off"``.
        endorsed: Actions (normalised) that memory recommended outright before the run (``endorsed_actions``): a
            proposal among them that the attempt has not taken yet follows memory already, so rule 10 does not answer
            it with the step's recommendations.
        procedures: The steps of the procedures memory recommended before the run (``procedure_steps``): a proposal
            that is the next step of one the attempt is following (``endorsed_step``) follows memory too (the
            procedure's ``read cookbook`` is not met with ``open fridge``); a step of one it has left is not (its
            ``move west`` proposed beside the salt is met with ``take salt``).
    """

    rules: Sequence[Lesson]
    runs: Sequence[RunRecord]
    config: MemoryConfig = DEFAULT_CONFIG
    header: str = TRIGGERED_HEADER
    avoidances: Sequence[ScoredItem] = ()
    endorsed: Collection[str] = ()
    procedures: Sequence[Sequence[Pattern]] = ()
    delivered: dict[str, int] = field(default_factory=dict)
    """Lesson id -> the first step it was delivered at (with the guard, the first it stood at, shown or held)."""
    lines: dict[str, None] = field(default_factory=dict)
    """Every distinct line shown, in order of first delivery; lines delivered together that differ only in their
    action are one (``joined_lines``)."""
    _paid: set[str] = field(default_factory=set, init=False)
    """Each shown rule's own line (``rule_line``), joined or not: what the attempt has paid for."""
    _ranked: list[tuple[ScoredItem, Pattern]] = field(default_factory=list, init=False)
    _eliminable: list[tuple[ScoredItem, Pattern, frozenset[str]]] = field(default_factory=list, init=False)
    """Avoidances of rule 6 (elimination), each with the verbs whose lines memory can answer."""
    _anywhere: dict[str, ScoredItem] = field(default_factory=dict, init=False)
    """Rule 5 avoidances without their situation lines, by id (``_as_anywhere``)."""
    _kin: list[_Kin] = field(default_factory=list, init=False)
    """Conditional commands whose unknown siblings rule 7 avoids."""
    _conditional: list[tuple[Lesson, Pattern]] = field(default_factory=list, init=False)
    """Every live conditional command (``direct.conditional_command``), delivered or held back: rule 7 spares
    the actions whose own line the task says."""
    _known: list[Pattern] = field(default_factory=list, init=False)
    """The patterns memory recommends outright (no conditional command): rule 7 leaves what they match to them."""
    _undo: list[tuple[Pattern, str]] = field(default_factory=list, init=False)
    """Rule 8's undo pairs (``undo_rules``)."""
    _consuming: frozenset[str] = field(default_factory=frozenset, init=False)
    """Rule 11: commands the tool's runs saw use up their object (``consuming_verbs``)."""
    _undirected: frozenset[str] = field(default_factory=frozenset, init=False)
    """Rule 9: commands memory avoids wherever the task does not say them (``undirected_verbs``)."""
    _directive_verbs: frozenset[str] = field(default_factory=frozenset, init=False)
    """Rule 9: the tool's directive verbs (its runs' ``directed`` verbs that are its commands)."""
    _guarded: bool = field(default=False, init=False)
    """Rule 9: memory knows a command fatal where the task does not direct it (``_undirected``, or
    ``direct.fatal_where_undirected``), so the attempt's own directive verbs are avoided where undirected too."""
    _ruled: frozenset[str] = field(default_factory=frozenset, init=False)
    """Rule 9: the commands of every live rule (a command memory has any rule about is not inferred)."""
    _kin_read: list[Step] = field(default_factory=list, init=False)
    """Rule 9: the steps of the attempt already read for kin (``_offered``), so each step is read once."""
    _kin_groups: list[dict[str, frozenset[str]]] = field(default_factory=list, init=False)
    """Rule 9: the commands those steps first offered together (``direct.offered_together``, and on their own
    objects ``direct.offered_on_own``)."""
    _own_seen: dict[str, set[str]] = field(default_factory=dict, init=False)
    """Rule 9: per command, what its steps so far first offered on their own objects (``offered_on_own``'s state)."""
    _held_at: int = field(default=-1, init=False)
    """Rule 10: the step the held rules below are for (the history's length then); ``check`` answers only there."""
    _held: dict[str, ScoredItem] = field(default_factory=dict, init=False)
    """Rule 10: the avoidances standing at that step and not shown yet, by the action each stands on (normalised), in
    the form they are shown in (a pattern once, ``_as_pattern``; any other grounded on the action)."""
    _held_recs: dict[str, ScoredItem] = field(default_factory=dict, init=False)
    """Rule 10 (``text_guard="all"``): that step's recommendations not shown yet, grounded."""
    _open: frozenset[str] = field(default_factory=frozenset, init=False)
    """Rule 10: the actions that step's recommendations win on and the attempt has not taken (a proposal among them
    follows memory already)."""
    _recs: dict[str, tuple[ScoredItem, str]] = field(default_factory=dict, init=False)
    """Rule 10: that step's winning recommendation per action (normalised), as ranked, with the action as offered."""
    _held_for: Step | None = field(default=None, init=False)
    """Rule 10: the last step of the history the held rules are for (``check`` answers a history ending with an equal
    step: another attempt's of the same length gets nothing)."""
    _fires: dict[str, set[str]] = field(default_factory=dict, init=False)
    """Rule 10: per rule id, the actions (normalised) it fired on at that step."""
    _pre_held: list[tuple[ScoredItem, tuple[Pattern, ...]]] = field(default_factory=list, init=False)
    """Rule 10: ``avoidances`` not shown yet, each with the actions its line quotes."""
    _pre_paid: list[Hint] = field(default_factory=list, init=False)
    """Rule 10: ``avoidances`` shown at a proposal; paid for, they are handed over at every later step."""
    _used_up: frozenset[str] = field(default_factory=frozenset, init=False)
    """Rule 5: commands any of the tool's runs saw use up their object (``extras.run_consumed``)."""
    _off: frozenset[str] = field(default_factory=frozenset, init=False)
    """The rules switched off (``MemoryConfig.textgames.text_rules_off``)."""
    _right_somewhere: frozenset[str] = field(default_factory=frozenset, init=False)
    """Commands memory recommends over a placeholder somewhere, or that tasks' texts direct (a rule's condition line
    starts with one, or a run's text directed it) (rule 5): their avoidances keep their situations."""

    def __post_init__(self) -> None:
        self._off = rules_off(self.config)
        self._pre_held = [(it, ps) for it in self.avoidances for ps in [held_avoidance(it)] if ps]
        live = live_text_rules(self.rules)
        parsed = [(lesson, pattern) for lesson in live for pattern in [rule_pattern(lesson)] if pattern is not None]
        ranked: list[tuple[float, str, ScoredItem, Pattern]] = []
        for lesson, pattern in parsed:
            need, gain = rule_utility(lesson, self.runs)
            if need + gain < 0 and not lesson.wrong:  # a recommendation measured to go with losing
                continue  # (an avoidance's gain is no such measure: module docstring rule 3)
            score = need if lesson.wrong else need + gain  # nor does it rank avoidances
            item = ScoredItem(kind="lesson", item=lesson, score=score, components={"need": need, "gain": gain},
                              why="fires on this step's valid actions")
            ranked.append((-score, lesson.id, item, pattern))
        self._ranked = [(it, p) for _, _, it, p in sorted(ranked, key=lambda t: t[:2])]
        recommended = {head_verb(p) for l, p in parsed if not l.wrong and p.slots}
        directed = set().union(*map(run_directed, self.runs)) & set().union(*map(run_commands, self.runs))
        self._right_somewhere = frozenset(recommended | condition_verbs(live) | directed)
        self._directive_verbs = frozenset(directed)
        self._undirected = undirected_verbs(live)
        families = _answered_verbs(live, self._undirected)
        self._eliminable = [] if "elimination" in self._off else _eliminable(self._ranked, live, families)
        self._kin = [] if "unknown_kin" in self._off else _conditional_kin([it.item for it, _ in self._ranked], families)  # type: ignore[misc]
        self._known = [p for l, p in parsed if not l.wrong and not conditional_command(l)]
        self._conditional = [(l, p) for l, p in parsed if conditional_command(l)]
        self._guarded = "kin_in_attempt" not in self._off and (bool(self._undirected) or fatal_where_undirected(live))
        self._ruled = frozenset(head_verb(p) for _, p in parsed)
        recommended_anywhere = {head_verb(p) for l, p in parsed if not l.wrong}
        self._undo = [] if "undo" in self._off else undo_rules(
            self.runs, self._right_somewhere | recommended_anywhere, self.config.lifecycle.min_occurrences)
        self._consuming = frozenset() if "using_up" in self._off else consuming_verbs(
            self.runs, self._right_somewhere, self.config.lifecycle.min_occurrences)
        self._used_up = frozenset() if "never_seen_right" in self._off else consuming_verbs(self.runs, (), 1)

    def _delivers(self, lesson: Lesson, pattern: Pattern, view: StepView) -> bool:
        """Whether the rule may fire here: a placeholder rule always; a literal one when taught by
        ``min_occurrences`` runs or about only what the goal names (the same for every task of a family),
        since a literal rule one run taught about other things is that task's fact, not the tool's."""
        if pattern.slots or len(set(lesson.provenance.run_ids)) >= self.config.lifecycle.min_occurrences:
            return True
        return all(w in view.goal_words for w in norm(pattern.text).split()[1:])

    def _as_anywhere(self, item: ScoredItem, pattern: Pattern, view: StepView) -> ScoredItem:
        """``item``, or, for an avoidance that holds anywhere here (``_holds_anywhere``), it without its conditions."""
        lesson = item.item
        assert isinstance(lesson, Lesson)
        if "never_seen_right" in self._off or not _holds_anywhere(lesson, pattern, self._right_somewhere, view.goal_words):
            return item
        if item.item_id not in self._anywhere:
            self._anywhere[item.item_id] = item.model_copy(update={"item": lesson.model_copy(update={"applies_when": []})})
        return self._anywhere[item.item_id]

    def __call__(self, task: TaskSpec, history: Sequence[Step]) -> list[Hint]:
        """The hints of the rules that fire before the next step, within the budget, best first; with the guard on
        (rule 10), only those shown before the agent proposes, the rest held for ``check``."""
        view = StepView.of(task, history)
        fired = [(self._as_anywhere(it, p, view), a) for it, p in self._ranked if self._delivers(it.item, p, view)  # type: ignore[arg-type]
                 for a in firings(it.item, p, view, self.config,  # type: ignore[arg-type]
                                  unconditioned=bool(it.item.wrong) and "never_seen_right" not in self._off  # type: ignore[union-attr]
                                  and head_verb(p) not in self._right_somewhere,
                                  used_up=head_verb(p) in self._used_up)]
        fired += [(it, a) for it, p, answered in self._eliminable for a in _eliminated(p, answered, view)]
        if self._kin:
            spared = {a for lesson, p in self._conditional for a in firings(lesson, p, view, self.config)}
            fired += [(_kin_item(a, thing, k, self._kin_pattern(a, thing, k, view)), a)
                      for a, thing, k in unknown_kin(self._kin, self._known, view, spared)]
        fired += undoing(self._undo, view, history)
        fired += consuming(self._consuming, view, self._known)
        if self._guarded and history:
            directives, kin = self._attempt_directives(task, history, view)
            verbs = sorted((directives | kin) - self._ruled)
            parsed = [(*command_and_object(a), norm(a)) for a in view.valid] if verbs else []  # (verb, thing, action)
            directed_on = {thing for verb, thing, _ in parsed if verb in directives}
            for verb in verbs:
                on = [(a, thing) for v, thing, a in parsed if v == verb]
                wrongs = [f"{verb} <X>"] if verb in directives or all(t in directed_on for _, t in on) else [
                    a for a, t in on if t in directed_on]  # a kin offered beyond a directive's things (the meal): by name
                for wrong in wrongs:
                    it, p = _attempt_kin_item(wrong)
                    fired += [(it, a) for a in firings(it.item, p, view, self.config)]  # type: ignore[arg-type]
        winners = _verdicts(fired)
        if self.config.textgames.text_guard != "off":  # rule 10: what bears on no proposal yet waits for one
            return self._guard(winners, fired, history)
        taken = {norm(s.action) for s in history}
        alone = any(not it.item.wrong and norm(a) not in taken for it, a in winners)  # type: ignore[union-attr]
        if alone:  # a recommendation not yet followed decides this step (the reader's contract): avoidances wait
            winners = [(it, a) for it, a in winners if not it.item.wrong]  # type: ignore[union-attr]
        default = _uncovered([it for it, _ in winners if _as_pattern(it)], fired)
        # an avoidance stating no line once, as its pattern: one line however many actions
        grounded = default + [_grounded(it, action, bare=alone) for it, action in winners if not _as_pattern(it)]
        grounded.sort(key=lambda it: it.item_id.startswith(INFERRED_PREFIXES))  # stable: what memory stored first
        return self._show(grounded, len(history))

    def _guard(self, winners: list[tuple[ScoredItem, str]], fired: list[tuple[ScoredItem, str]], history: Sequence[Step]) -> list[Hint]:
        """Rule 10's delivery of one step: what is shown before the agent proposes; the rest is held for ``check``."""
        step = len(history)
        lazy = self.config.textgames.text_guard == "all"
        self._held_at, self._held_for, self._fires = step, history[-1] if history else None, {}
        for it, a in fired:
            self._fires.setdefault(it.item_id, set()).add(norm(a))
        for it, _ in winners:  # in force whether shown or held: the run's activations do not depend on the guard
            if not it.item_id.startswith(INFERRED_PREFIXES):
                self.delivered.setdefault(it.item_id, step)
        self._recs = {norm(a): (it, a) for it, a in winners if not it.item.wrong}  # type: ignore[union-attr]
        held = {norm(a): it if _as_pattern(it) else _grounded(it, a) for it, a in winners if it.item.wrong}  # type: ignore[union-attr]
        paid = {it.item_id: it for it in held.values() if rule_line(it) in self._paid}  # shown before: costs nothing now
        self._held = {a: it for a, it in held.items() if it.item_id not in paid}
        covered = {a for pid in paid for a in self._fires.get(pid, ())}  # a pattern shown binds these too
        recs = [(a, self._rec(a, bare=a not in covered)) for a in self._recs]
        taken = {norm(s.action) for s in history}
        self._open = frozenset(a for a in self._recs if a not in taken)
        # a recommendation a shown pattern covers is shown with it: held, the pattern alone would forbid its action
        self._held_recs = {a: r for a, r in recs if rule_line(r) not in self._paid and a not in covered} if lazy else {}
        shown = [*paid.values(), *(r for a, r in recs if a not in self._held_recs)]
        shown.sort(key=lambda it: it.item_id.startswith(INFERRED_PREFIXES))  # stable: what memory stored first
        return [*self._show(shown, step), *self._pre_paid]  # what was answered from before the run stays in view

    def _rec(self, action: str, *, bare: bool) -> ScoredItem:
        """The step's recommendation on ``action`` (normalised), grounded on the action as offered; its lines bound
        unless ``bare`` (``_grounded``)."""
        it, offered = self._recs[action]
        return _grounded(it, offered, bare=bare)

    def check(self, task: TaskSpec, history: Sequence[Step], action: str) -> list[Hint]:
        """Rule 10: what memory held back at this step that bears on ``action``, the agent's proposal, shown now.

        The avoidance that stands on ``action`` (with, when it is a pattern, the held patterns whose lines differ from
        its line only in their action, ``_alike``, and the recommendations those patterns would otherwise override,
        their lines bound); else, with ``text_guard="all"``, the step's recommendations when
        ``action`` is none of them. ``[]`` when nothing bears on it, the guard is off, or ``history`` is not the step
        last delivered. Hints returned mean: choose again with them; each is returned once per step.
        """
        last = history[-1] if history else None
        if self.config.textgames.text_guard == "off" or len(history) != self._held_at or last != self._held_for:
            return []
        act = norm(action)
        before = next((e for e in self._pre_held if any(p.match(action) is not None for p in e[1])), None)
        if before is not None:  # an avoidance from before the run quoting the proposal
            self._pre_held.remove(before)
            answer = self._show([before[0]], len(history), line=short_line)
            self._pre_paid += answer
            return answer
        item = self._held.pop(act, None)
        if item is not None:
            alike = [item, *self._alike(item)]  # one line for them all (``joined_lines``)
            reach = {a for it in alike if _as_pattern(it) for a in self._fires.get(it.item_id, ())}
            bound = [a for a in self._recs if a in reach]
            answer = self._show([*alike, *(self._rec(a, bare=False) for a in bound)], len(history))
            shown = [it for it in alike if rule_line(it) in self._paid]  # what the budget left out stays held
            ids = {item.item_id, *(it.item_id for it in shown)}
            self._held = {a: it for a, it in self._held.items() if it.item_id not in ids}
            reached = {a for it in shown if _as_pattern(it) for a in self._fires.get(it.item_id, ())}
            self._held_recs = {a: r for a, r in self._held_recs.items() if a not in reached}  # they went with it, bound
            return answer
        endorsed = ((act in self.endorsed and all(norm(s.action) != act for s in history))
                    or endorsed_step(self.procedures, history, action))
        if self._held_recs and self._open and act not in self._open and not endorsed:
            recs, self._held_recs = list(self._held_recs.values()), {}
            return self._show(recs, len(history))
        return []

    def _alike(self, item: ScoredItem) -> list[ScoredItem]:
        """Rule 10: the held avoidances that go with ``item``, a pattern answered at a proposal: the other patterns
        whose lines differ from its line only in their action (``join_key``: ``Avoid `slice <X>` unless the task says
        so`` with ``chop <X>``'s). An agent that reaches for one command of a rule's kind tends to reach for the others,
        and joined into its line each costs its action alone (``joined_lines``)."""
        def pattern(it: ScoredItem) -> bool:  # shown as its pattern, not grounded on one action
            return _as_pattern(it) and SLOT.search(str(it.item.wrong)) is not None  # type: ignore[union-attr]

        key = join_key(item) if pattern(item) else None
        if key is None:
            return []
        alike = {it.item_id: it for it in self._held.values() if it.item_id != item.item_id and pattern(it)
                 and join_key(it) == key}
        return list(alike.values())

    def _show(self, items: list[ScoredItem], step: int, *, line: Callable[[ScoredItem], str] = rule_line) -> list[Hint]:
        """``items`` as hints within the budget, their lines and activations recorded. With ``line=short_line``
        (items from before the run, which the caller activates): the hints say what those lines say, and nothing is
        recorded here."""
        if not items:
            return []
        # no short form: a rule cut to its action alone would lose the condition that keeps it from the directed case
        block = assemble(items, budget=self.config.context.max_context_tokens, config=self.config, relevance=in_order(items),
                         line=line, short=line, header=self.header or TRIGGERED_HEADER)
        if line is short_line:
            for text in block.text.splitlines()[1:]:
                self.lines.setdefault(text, None)
            return [shown_hint(it) for it in block.shown]
        own = [rule_line(it) for it in block.shown]
        for text in joined_lines([it for it, o in zip(block.shown, own) if o not in self._paid]):  # the new ones
            self.lines.setdefault(text, None)
        self._paid.update(own)
        hints = hints_from_items(block.shown)
        for hint in hints:
            if hint.source_id.startswith(INFERRED_PREFIXES):
                continue  # an inference, not a stored lesson: nothing to activate
            self.delivered.setdefault(hint.source_id.split(GROUNDED_SEP)[0], step)
        return [h.model_copy(update={"source_id": h.source_id.split(GROUNDED_SEP)[0]}) for h in hints]

    def _kin_pattern(self, action: str, thing: str, k: _Kin, view: StepView) -> str | None:
        """The pattern rule 7's line for ``action`` may be, where the task does not name ``<X>`` (``cook <X> in stove``),
        or None: the reader's reading of that condition (``textmatch.names_phrase``, a word beyond the goal's) must
        hold for ``thing``, and no valid action the pattern covers may be one memory recommends outright (rule 7
        leaves those alone)."""
        if names_phrase(thing, view.goal, view.task_lines) or all(w in view.goal_words for w in norm(thing).split()):
            return None
        binding = k.shape.match(action) or {}
        text = k.shape.text.replace(f"<{k.open_slot}>", binding.get(k.open_slot, ""))
        pattern = Pattern.parse(text)
        if pattern is None or any(pattern.match(v) is not None and any(p.match(v) is not None for p in self._known)
                                  for v in view.valid):
            return None
        return text

    def _attempt_directives(self, task: TaskSpec, history: Sequence[Step], view: StepView) -> tuple[set[str], set[str]]:
        """Rule 9's commands: memory's undirected ones and the attempt's own directive verbs (``attempt_directives``),
        then their kin in the attempt (``direct.kin_of``). Kin are avoided only on things a directive is offered on
        now: ``eat`` offered with the cuts on a held apple is not thereby avoided on the meal, which nothing cuts."""
        groups = self._offered(task, history)
        directives = set(self._undirected) | attempt_directives(groups, view, self._directive_verbs)
        return directives, kin_of(groups, directives)

    def _offered(self, task: TaskSpec, history: Sequence[Step]) -> list[dict[str, frozenset[str]]]:
        """``offered_together`` and ``offered_on_own`` over the attempt so far, reading only the steps added since the
        last call: the same groups as reading the whole history (a step's new actions are against the last step that
        offered any)."""
        read = self._kin_read
        if len(read) > len(history) or any(a is not b for a, b in zip(read, history)):
            read, self._kin_groups, self._own_seen = [], [], {}  # another attempt's history: read from its start
        offered = [s.info.get("valid_actions") for s in reversed(read) if s.info.get("valid_actions")]
        before = [str(a) for a in (offered[0] if offered else (task.context or {}).get("valid_actions")) or []]
        added = history[len(read):]
        self._kin_groups += offered_together(added, before) + offered_on_own(added, before, self._own_seen)
        self._kin_read = list(history)
        return self._kin_groups

    @property
    def tokens(self) -> int:
        """Tokens of everything delivered in the attempt: the header once (when set) and each line once (``lines``:
        rules delivered together that differ only in their action share one)."""
        return count_tokens("\n".join([*([self.header] if self.header else []), *self.lines])).n if self.lines else 0

    def activations(self, run_id: str) -> list[Activation]:
        """One activation per delivered rule, at the step it was first delivered (with the guard on, first stood)."""
        return [Activation(lesson_id=lid, run_id=run_id, step=step, moment="pre_run") for lid, step in self.delivered.items()]


__all__ = ["CONSUME_PREFIX", "GROUNDED_SEP", "INFERRED_PREFIXES", "KIN_PREFIX", "TRIGGERED_HEADER", "UNDO_PREFIX", "attempt_directives", "consuming", "consuming_verbs", "object_phrase", "undirected_verbs", "undo_rules", "undoing", "asks_only_answered", "open_last_word", "unknown_kin", "StepDelivery", "StepView", "endorsed_actions", "endorsed_step", "procedure_steps", "firings", "held_avoidance", "is_text_rule", "join_key", "joined_lines", "shown_hint", "rule_line", "rule_pattern",
           "rule_utility", "short_line"]
