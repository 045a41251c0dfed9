"""Observation-triggered delivery of text rules: each step sees the rules that bear on it, not every rule up front.

A text rule (``Lesson.applies_when`` set; ``textgames.rules``) is about one kind of action in one situation:
``Avoid `cook <X> in stove``` when the task says ``grill <X>``. The game says when a rule matters: when an action
its pattern matches is among the valid actions and the lines its condition names have been read. At each step,
in order (``docs/text-games.md`` gives each rule's reasons and measurements):

1. **Trigger** (``trigger.firings``): a rule fires on a valid action its pattern matches, placeholders bound to the
   task's text.
2. **Ground**: where an avoidance and a recommendation fire on one action, one verdict; winners shown grounded.
3. **Rank** (``rule_utility``): by measured need and gain; a recommendation with negative utility is not shown.
4. **Budget**: through instant memory (``retrieval.context.assemble``) within ``max_context_tokens``.
5. **The named rules** (``delivery_rules.PIPELINE``, each switchable): ``never_seen_right`` widens the trigger;
   ``elimination``, ``unknown_kin``, ``undo``, ``using_up`` and ``kin_in_attempt`` add firings, in that order.
6. **Guard** (``MemoryConfig.textgames.text_guard``): what the agent would not need is held for its proposal
   (``check``).

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

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field

from langmem_plus.config import DEFAULT_CONFIG, MemoryConfig
from langmem_plus.learning.hints import hints_from_items
from langmem_plus.learning.textmatch import Pattern, avoidance_stands, grounded_conditions, norm
from langmem_plus.records import Activation, Hint, Lesson, RunRecord, ScoredItem, Step, TaskSpec
from langmem_plus.retrieval.context import assemble, in_order
from langmem_plus.textgames.delivery_rules import INFERRED_PREFIXES, build
from langmem_plus.textgames.delivery_rules.base import DeliveryRule, Firing, Known, answered_verbs, undirected_verbs
from langmem_plus.textgames.delivery_rules.guard import Guard
from langmem_plus.textgames.delivery_rules.never_seen_right import NeverSeenRight
from langmem_plus.textgames.direct import condition_verbs, conditional_command
from langmem_plus.textgames.extras import run_commands, run_directed
from langmem_plus.textgames.rules import live_text_rules
from langmem_plus.textgames.shown import (
    GROUNDED_SEP,
    TRIGGERED_HEADER,
    as_pattern,
    grounded,
    joined_lines,
    rule_line,
    short_line,
    shown_hint,
    with_exceptions,
)
from langmem_plus.textgames.trigger import StepView, firings, head_verb, rule_pattern
from langmem_plus.tokens import count_tokens


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
            episode, a lesson with only a wrong action), held for a proposal one of them quotes (the guard); the caller records their
            activations, since they are in force from the start. Ignored with ``text_guard="off"``.
        endorsed: Actions (normalised) that memory recommended outright before the run (``endorsed_actions``): a
            proposal among them that the attempt has not taken yet follows memory already, so the guard does not answer
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
    """The stored rules that may be delivered, with their patterns, best first (rule 3)."""
    _rules: list[DeliveryRule] = field(default_factory=list, init=False)
    """The delivery rules in force, in pipeline order (``delivery_rules.build``)."""
    _widen: NeverSeenRight | None = field(default=None, init=False)
    """``never_seen_right``, when in force: it widens the trigger of stored avoidances."""
    _guard: Guard | None = field(default=None, init=False)
    """The guard (``delivery_rules.guard``), unless ``text_guard="off"``."""

    def __post_init__(self) -> None:
        if self.config.textgames.text_guard != "off":
            self._guard = Guard(self._show, self._paid, self.delivered, avoidances=self.avoidances,
                                endorsed=self.endorsed, procedures=self.procedures,
                                lazy=self.config.textgames.text_guard == "all", inferred=INFERRED_PREFIXES)
        live = with_exceptions(live_text_rules(self.rules))  # a rule shown never wrong for a reader that obeys it
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
        undirected = undirected_verbs(live)
        known = Known(config=self.config, runs=self.runs, live=live, parsed=parsed, ranked=self._ranked,
                      right_somewhere=frozenset(recommended | condition_verbs(live) | directed),
                      directive_verbs=frozenset(directed), undirected=undirected,
                      families=answered_verbs(live, undirected),
                      known=[p for l, p in parsed if not l.wrong and not conditional_command(l)],
                      conditional=[(l, p) for l, p in parsed if conditional_command(l)])
        self._rules = build(known)
        self._widen = next((r for r in self._rules if isinstance(r, NeverSeenRight)), None)

    def _delivers(self, lesson: Lesson, pattern: Pattern, view: StepView) -> bool:
        """Whether the rule may fire here: a placeholder rule always; a literal one when taught by
        ``min_occurrences`` runs or about only what the goal names (the same for every task of a family),
        since a literal rule one run taught about other things is that task's fact, not the tool's."""
        if pattern.slots or len(set(lesson.provenance.run_ids)) >= self.config.lifecycle.min_occurrences:
            return True
        return all(w in view.goal_words for w in norm(pattern.text).split()[1:])

    def _triggered(self, view: StepView) -> list[Firing]:
        """The stored rules' firings at this step, in rank order (rules 1 and 3, widened by ``never_seen_right``)."""
        widen = self._widen
        out: list[Firing] = []
        for it, p in self._ranked:
            lesson = it.item
            assert isinstance(lesson, Lesson)
            if not self._delivers(lesson, p, view):
                continue
            shown = widen.shown(it, p, view) if widen is not None else it
            wide = widen is not None and widen.unconditioned(lesson, p)
            out += [(shown, a) for a in firings(lesson, p, view, self.config, unconditioned=wide,
                                                used_up=widen is not None and widen.used_up(p))]
        return out

    def __call__(self, task: TaskSpec, history: Sequence[Step]) -> list[Hint]:
        """The hints of the rules that fire before the next step, within the budget, best first; with the guard on
        (the guard), only those shown before the agent proposes, the rest held for ``check``."""
        view = StepView.of(task, history)
        fired = self._triggered(view)
        for rule in self._rules:
            fired += rule.fire(view, task, history)
        winners = _verdicts(fired)
        if self._guard is not None:  # what bears on no proposal yet waits for one
            return self._guard.step(winners, fired, history)
        taken = {norm(s.action) for s in history}
        alone = any(not it.item.wrong and norm(a) not in taken for it, a in winners)  # type: ignore[union-attr]
        if alone:  # a recommendation not yet followed decides this step (the reader's contract): avoidances wait
            winners = [(it, a) for it, a in winners if not it.item.wrong]  # type: ignore[union-attr]
        default = _uncovered([it for it, _ in winners if as_pattern(it)], fired)
        # an avoidance stating no line once, as its pattern: one line however many actions
        shown = default + [grounded(it, action, bare=alone) for it, action in winners if not as_pattern(it)]
        shown.sort(key=lambda it: it.item_id.startswith(INFERRED_PREFIXES))  # stable: what memory stored first
        return self._show(shown, len(history))

    def check(self, task: TaskSpec, history: Sequence[Step], action: str) -> list[Hint]:
        """The guard's answer to ``action``, the agent's proposal (``Guard.check``); ``[]`` with the guard off.
        Hints returned mean: choose again with them."""
        return self._guard.check(history, action) if self._guard is not None else []

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

    @property
    def tokens(self) -> int:
        """Tokens of everything delivered in the attempt: the header once (when set) and each line once (``lines``:
        rules delivered together that differ only in their action share one)."""
        return count_tokens("\n".join([*([self.header] if self.header else []), *self.lines])).n if self.lines else 0

    def activations(self, run_id: str) -> list[Activation]:
        """One activation per delivered rule, at the step it was first delivered (with the guard on, first stood)."""
        return [Activation(lesson_id=lid, run_id=run_id, step=step, moment="pre_run") for lid, step in self.delivered.items()]


__all__ = ["StepDelivery", "rule_utility"]
