"""Text rules: what an agent that chooses among enumerated actions learns from their outcomes.

Where the environment enumerates its valid actions, a mistake is not a malformed command but a wrong choice, so the
lesson is about the action, in the terms of the task's own text, with no game knowledge: a fatal action becomes an
avoidance, a scoring action (and the step that made it possible) a recommendation; phrases the task's text names
beyond its goal become placeholders (``cook <X> in oven``); the lines of the task's text that bear on the action
become its conditions (``Lesson.applies_when``: ``roast <X>``). Lesson ids hash the namespace, the tool, the
polarity and the pattern (and an avoidance's condition), so the same rule learned again updates one record.
``docs/text-games.md`` ("Learning") gives each mechanism and why.

Example:
    >>> from langmem_plus.records import Feedback, Step, TaskSpec
    >>> task = TaskSpec(task_id="t", goal="Check the cookbook for the recipe.", tool="game")
    >>> steps = [
    ...     Step(index=0, action="read cookbook", observation="Directions:\\n  roast the red apple",
    ...          info={"valid_actions": []}),
    ...     Step(index=1, action="cook red apple in stove", info={"valid_actions": []},
    ...          feedback=Feedback(constraint_failure=True, error_text="fatal")),
    ... ]
    >>> learned = learn_text_rules(namespace=("ns",), run_id="r1", task=task, steps=steps, existing={}, now=0.0)
    >>> sorted({(l.wrong, tuple(l.applies_when)) for l in learned.values()})
    [('cook <X> in stove', ('roast <X>',))]
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping, Sequence

from langmem_plus._text import stable_id
from langmem_plus.config import DEFAULT_CONFIG, MemoryConfig
from langmem_plus.textgames.direct import (
    condition_verbs,
    directed_kin,
    directed_rule,
    extend_to_kin,
    instrument_kin,
    known_verbs,
    revise,
    undirected,
    widened_kin,
)
from langmem_plus.textgames.entities import (
    FUNCTION_WORDS,
    GOAL_ROLE_WORDS,
    STOP_WORDS,
    goal_directed,
    goal_entity,
    unasked_head,
    unnamed_entity,
)
from langmem_plus.textgames.effects import effect_of
from langmem_plus.learning.textmatch import (
    ARTICLES,
    UNNAMED,
    directing_lines,
    done_line,
    is_negative,
    negated_line,
    norm_words,
    occurs,
)
from langmem_plus.records import Lesson, LessonScope, Namespace, Provenance, Step, TaskSpec

SLOTS = ("X", "Y", "Z")
"""Placeholder names, in order of appearance in an action."""


def applies_to_text_envs(steps: Sequence[Step]) -> bool:
    """Whether the run's environment enumerated its actions (steps carry ``info["valid_actions"]``)."""
    return any("valid_actions" in s.info for s in steps)




def moved(step: Step) -> bool:
    """Whether the step changed the agent's location (the structured state's ``location``): it arrived
    somewhere, and what it then saw describes the world, not the task."""
    before, after = step.state_before, step.state_after
    if not isinstance(before, dict) or not isinstance(after, dict):
        return False
    return before.get("location") != after.get("location")


def moved_by_layout(step: Step) -> bool:
    """Whether the step took the agent somewhere its action does not name (``move east`` into the pantry): where
    it leads is this game's map, a fact of the task, where ``teleport to kitchen`` leads anywhere it is offered."""
    if not moved(step):
        return False
    place = norm_words(str((step.state_after or {}).get("location") or ""))
    return not place or not set(place) <= set(norm_words(step.action))


def is_read(step: Step, goal_words: Collection[str]) -> bool:
    """Whether the step read something the goal names: its object words all occur in the goal and are not
    only prepositions (``FUNCTION_WORDS``), it did not fail, and it did not take the agent elsewhere (``moved``)."""
    obj = norm_words(step.action)[1:]
    if not obj or all(w in FUNCTION_WORDS for w in obj):  # "look around": no thing of the goal
        return False
    return all(w in goal_words for w in obj) and not step.feedback.failed and not moved(step)


def task_text_lines(goal: str, steps: Sequence[Step]) -> list[str]:
    """Normalised lines of the task's text: what the agent read in things the goal names (``is_read``)."""
    goal_words = set(norm_words(goal))
    lines: list[str] = []
    for step in steps:
        if not is_read(step, goal_words):
            continue
        for line in step.observation.splitlines():
            words = norm_words(line)
            if words:
                lines.append(" ".join(words))
    return list(dict.fromkeys(lines))


def abstract_action(action: str, lines: Sequence[str], goal: str, config: MemoryConfig = DEFAULT_CONFIG) -> tuple[str, dict[str, str]]:
    """The action with its volatile phrases as placeholders, and the bindings.

    Example:
        >>> abstract_action("slice red apple with knife", ["slice the red apple"], "cook a meal")
        ('slice <X> with knife', {'X': 'red apple'})
    """
    words = norm_words(action)
    goal_words = set(norm_words(goal))
    out: list[str] = words[:1]
    bindings: dict[str, str] = {}
    i = 1
    while i < len(words):
        found = 0
        for n in range(min(config.textgames.text_rule_max_entity_words, len(words) - i), 0, -1):
            phrase = " ".join(words[i : i + n])
            if all(w in goal_words or w in STOP_WORDS for w in words[i : i + n]):
                continue
            if any(occurs(phrase, line) for line in lines):
                found = n
                break
        if found and len(bindings) < len(SLOTS):
            phrase = " ".join(words[i : i + found])
            slot = next((s for s, p in bindings.items() if p == phrase), SLOTS[len(bindings)])
            bindings[slot] = phrase
            out.append(f"<{slot}>")
            i += found
        else:
            out.append(words[i])
            i += 1
    return " ".join(out), bindings


def conditions_for(bindings: Mapping[str, str], lines: Sequence[str], limit: int) -> list[str]:
    """Lines of the task's text that name a bound phrase, with placeholders.

    A bare mention (a line that is only the phrase, such as an ingredient list entry) is
    left out when other lines say something about the phrase; when none does, the bare
    ``<X>`` is the condition: "the task names X and says nothing more about it".
    """
    out: list[str] = []
    bare: list[str] = []
    for line in lines:
        templ = line
        named = False
        for slot, phrase in bindings.items():
            if occurs(phrase, templ):
                templ = re.sub(r"(^| )" + re.escape(phrase) + r"(?= |$)", rf"\1<{slot}>", templ)
                named = True
        if named and templ not in {f"<{s}>" for s in bindings}:
            out.append(templ)
        elif named:
            bare.append(templ)
    if not out and bare:  # named, and nothing said about it: that itself is the situation
        out = bare
    return sorted(dict.fromkeys(out))[: max(limit, 0)] if limit else []


def relevant_conditions(action: str, conditions: Sequence[str], command_verbs: Collection[str],
                        directive_verbs: Collection[str] = ()) -> list[str]:
    """The condition lines that bear on ``action``.

    A line whose first word is the action's own verb is the directive the action carries
    out: it alone is the condition. Otherwise a line whose first word is the verb of a
    command the game offered answers another command (``chop <X>`` is done by chopping),
    so only the lines no command names are kept (``roast <X>`` for ``cook <X> in oven``);
    when every line answers some command, all are kept (the action was not asked for). An
    action whose verb is itself a directive verb (``directive_verbs``: a command that task
    texts direct, as memory knows from ``<verb> <X>`` recommendations) clashes with the
    directive of another such command (``chop <X>`` when the task says ``dice <X>``).

    Example:
        >>> relevant_conditions("cook <X> in oven", ["chop <X>", "roast <X>"], {"chop", "cook", "take"})
        ['roast <X>']
        >>> relevant_conditions("chop <X>", ["chop <X>", "roast <X>"], {"chop", "cook"})
        ['chop <X>']
        >>> relevant_conditions("chop <X>", ["dice <X>", "roast <X>"], {"chop", "dice", "cook"}, {"chop", "dice"})
        ['dice <X>']
    """
    verb = action.split()[0] if action.split() else ""
    own = [c for c in conditions if c.split()[:1] == [verb]]
    if own:
        return own
    if verb in directive_verbs:  # a command the task's text also directs (chop): it clashes with the directive
        rivals = [c for c in conditions if c.split()[0] in command_verbs and c.split()[0] in directive_verbs]
        if rivals:  # of another such command on the same thing (dice <X>), not with how it is cooked
            return rivals
    unnamed = [c for c in conditions if c.split()[0] not in command_verbs]
    return unnamed or list(conditions)  # every line answers a command: the situation is all of them


def enabling_step(steps: Sequence[Step], i: int) -> int | None:
    """Index (in ``steps``) of the latest earlier step after which ``steps[i]``'s action became valid."""
    action = steps[i].action
    for j in range(i - 1, -1, -1):
        before = steps[j - 1].info.get("valid_actions") if j else None
        after = steps[j].info.get("valid_actions") or []
        if action in after and before is not None and action not in before and not steps[j].feedback.failed:
            return j
    return None


def _rule_text(avoid: bool, pattern: str, conditions: Sequence[str]) -> str:
    head = f"AVOID: {pattern}" if avoid else f"PREFER: {pattern}"
    unsaid = [line for line in map(negated_line, conditions) if line is not None]
    said = [c for c in conditions if negated_line(c) is None]
    return head + (f" (when the task says: {' ; '.join(said)})" if said else "") + (
        f" (unless the task says: {' ; '.join(unsaid)})" if unsaid else "")


def teaching_steps(ordered: Sequence[Step]) -> list[tuple[Step, bool]]:
    """(step, avoid?) pairs a run teaches: each fatal or score-lowering step, each score-raising step and the
    step that enabled it (unless that was a move its action does not name the end of, ``moved_by_layout``)."""
    teach: list[tuple[Step, bool]] = []
    for i, step in enumerate(ordered):
        fb = step.feedback
        if fb.constraint_failure or (not fb.failed and fb.reward < 0):  # it ended the game, or undid progress
            teach.append((step, True))
        elif not fb.failed and fb.reward > 0:
            j = enabling_step(ordered, i)
            if j is not None and not moved_by_layout(ordered[j]):  # not "go east": the next game's map differs
                teach.append((ordered[j], False))
            teach.append((step, False))
    return teach


def offered_verbs(steps: Sequence[Step], task: TaskSpec | None = None) -> set[str]:
    """First words of the valid actions the environment offered in a run (after each step, and before the first
    in ``task.context``): its commands.

    Example:
        >>> sorted(offered_verbs([Step(index=0, action="look", info={"valid_actions": ["slice apple", "look"]})]))
        ['look', 'slice']
    """
    offered = [a for s in steps for a in s.info.get("valid_actions") or []]
    offered += list((task.context.get("valid_actions") or []) if task is not None else [])
    return {str(a).split()[0].lower() for a in offered if str(a).split()}


def directed_verbs(goal: str, steps: Sequence[Step], task: TaskSpec | None = None) -> set[str]:
    """The verbs a run's task text opens lines with (``task_text_lines``: ``chop the red apple``), offered in the run or
    not: the commands among them (the tool's, known from any run) are what it directed. A recipe read where no knife
    was at hand still says that slicing is something recipes direct. ``task`` is accepted for symmetry with
    ``offered_verbs`` and not read.

    Example:
        >>> read = Step(index=0, action="read recipe", observation="chop the apple\\nroast the apple",
        ...             info={"valid_actions": ["cook apple in oven"]})
        >>> sorted(directed_verbs("Read the recipe.", [read]))
        ['chop', 'roast']
    """
    return {line.split()[0] for line in task_text_lines(goal, steps) if line.split() and line.split()[0].isalpha()}


def _command_verbs(ordered: Sequence[Step], task: TaskSpec, patterns: Sequence[str], lines: Sequence[str],
                   known: Callable[[str], bool], offered_before: Collection[str] = ()) -> set[str]:
    """Verbs that name commands: offered in this run or in the tool's earlier runs, used by what it teaches, or
    already known to memory."""
    verbs = offered_verbs(ordered, task) | set(offered_before)
    verbs |= {p.split()[0] for p in patterns if p.split()}
    return verbs | {v for v in {line.split()[0] for line in lines} - verbs if known(v)}


def learn_text_rules(
    *,
    namespace: Namespace,
    run_id: str,
    task: TaskSpec,
    steps: Sequence[Step],
    existing: Mapping[str, Lesson],
    config: MemoryConfig = DEFAULT_CONFIG,
    now: float,
    offered_before: Collection[str] = (),
    directed_before: Collection[str] = (),
    tool_rules: Sequence[Lesson] | None = None,
) -> dict[str, Lesson]:
    """Avoid / prefer lessons this run teaches, merged with the stored ones of the same id (module docstring).

    ``tool_rules`` are the text rules of the task's tool among ``existing`` (the caller's index,
    ``MemoryView.tool_text_rules``); None reads them off every lesson of ``existing``.

    ``offered_before`` are the verbs the tool's earlier runs were offered (``extras.run_commands``): a directive
    line one of them carries out (``slice <X>``) is no part of another action's situation even in a run
    that never offered it, and the stored avoidances are read again with them (``_revise_stored``).
    ``directed_before`` are the verbs their task texts opened lines with (``extras.run_directed``): the commands among
    them (offered in this run or known) are directive verbs even in a run whose own text directs none of them.
    Returns an empty dict for a run whose environment does not enumerate actions.
    """
    if not applies_to_text_envs(steps):
        return {}
    goal = str(task.context.get("goal") or task.goal or "")
    ordered = sorted(steps, key=lambda s: s.index)
    lines = task_text_lines(goal, ordered)
    goal_words = set(norm_words(goal))

    def rid(*key: str) -> str:
        return stable_id("txt", *namespace, task.tool or "", *key)

    out: dict[str, Lesson] = {}
    seen = [str(task.context.get("observation") or ""), *(s.observation for s in ordered)]
    teach = [(step, avoid, *abstract_action(step.action, lines, goal, config)) for step, avoid in teaching_steps(ordered)]
    stored = live_text_rules(tool_rules if tool_rules is not None else [l for l in existing.values() if l.scope.tool == task.tool])
    memory_verbs = known_verbs(stored)
    verbs = _command_verbs(ordered, task, [t[2] for t in teach], lines, lambda v: v in memory_verbs, offered_before)
    has = lambda i: out.get(i) or existing.get(i)  # noqa: E731  (this run's rules first, then memory's)
    commands = verbs | memory_verbs  # every command known, this run's or memory's
    directives = {v for v in commands if directed_rule(has, rid, v) is not None} | ({l.split()[0] for l in lines if l.split()} | condition_verbs(stored)
                                                         | set(directed_before)) & commands
    instrumental = instrument_kin(ordered, [str(a) for a in task.context.get("valid_actions") or []], directives) & commands
    directives |= instrumental
    for step, avoid, pattern, bindings in teach:
        conds = conditions_for(bindings, lines, config.textgames.text_rule_max_conditions) if bindings else []
        conds = relevant_conditions(pattern, conds, verbs, directives)
        directed = goal_directed(step.action, goal) if avoid and not bindings else None
        unnamed = unnamed_entity(step.action, seen, goal, config) if avoid and not bindings and directed is None else None
        role = goal_entity(step.action, goal, config) if avoid and not bindings and directed is None and unnamed is None else None
        undirected_when = undirected(pattern, bindings, directing_lines(goal, lines), directives) if avoid else None
        if undirected_when is not None:  # a directed command the task did not direct: avoid it wherever undirected
            conds = undirected_when
        elif directed is not None:  # a command the goal directs, spent on what it was not directed to
            pattern, conds = directed
        elif unnamed is not None:  # it acted on something the task never named: avoid that, for anything unnamed
            pattern, conds = unnamed[0], [f"{UNNAMED}<X>"]
        elif role is not None:  # it acted on what the goal names in a role: avoid that for the role's next filler
            pattern, conds = role
        elif not lines and not all(w in goal_words for w in norm_words(pattern)[1:]):
            continue  # nothing read: a literal rule about things beyond the goal would be this task's fact
        if avoid:
            pattern = unasked_head(pattern, conds)
        general = undirected_when is not None or any(is_negative(c) for c in conds)
        wid = rid("avoid", pattern)  # the widened avoidance, once it exists
        if avoid and conds and not general and (out.get(wid) or existing.get(wid)) is not None:
            conds = []  # already avoided everywhere: one lesson, not one per situation
        lid = rid("avoid", pattern, *conds) if avoid else rid("prefer", pattern)
        old = out.get(lid) or existing.get(lid)
        if old is not None and old.applies_when is not None:  # same id: the shared situation (module docstring)
            conds = sorted(set(old.applies_when) & set(conds))
        out[lid] = _text_lesson(lid, old, namespace, run_id, task, step, avoid, pattern, conds, now)
        known = out.get(rid("prefer", pattern)) or existing.get(rid("prefer", pattern))
        if avoid and conds and not general and known is not None and known.applies_when:  # the exception is known
            out[wid] = _text_lesson(wid, out.get(wid) or existing.get(wid), namespace, run_id, task, step, True, pattern, [], now)
    taught = {id(t[0]) for t in teach if not t[1]}  # the steps that taught a recommendation themselves
    _learn_effects(out, has, ordered, taught, task, lines, commands, rid, namespace, run_id, now)
    _revise_stored(out, stored, directives, commands, rid, now)
    about_things = condition_verbs([*stored, *out.values()]) | instrumental
    for lid, pattern, source in extend_to_kin(has, directives, about_things, rid):
        out[lid] = _derived(source, lid, True, pattern, [f"{UNNAMED}{pattern}"], now)
    for lid, pattern, source in directed_kin(has, directives, about_things, rid):
        out[lid] = _derived(source, lid, False, pattern, [pattern], now)
    for lid, pattern, source in widened_kin(live_text_rules([*stored, *out.values()]), has, rid):
        out[lid] = _derived(source, lid, True, pattern, [], now)
    return out


def _learn_effects(out: dict[str, Lesson], has: Callable[[str], Lesson | None], ordered: Sequence[Step],
                   taught: Collection[int], task: TaskSpec, lines: Sequence[str], commands: Collection[str],
                   rid: Callable[..., str], namespace: Namespace, run_id: str, now: float) -> None:
    """Recommendations from what actions did (``textgames.effects``): a step that taught no recommendation itself,
    whose observation says a verb of a phrase of its action (``You fry the green apple``), recommends the action's
    pattern where the task says that line, unless the step was fatal where the task said that very line. ``taught``:
    the ids of the steps that taught a recommendation themselves (``teaching_steps``)."""
    for step in ordered:
        if id(step) in taught or (step.feedback.failed and not step.feedback.constraint_failure):
            continue
        effect = effect_of(step.action, step.observation, commands)
        if effect is None:
            continue
        pattern, said = effect
        if step.feedback.constraint_failure:
            phrase = abstract_action(step.action, lines, "")[1].get("X")
            if phrase is not None and said.replace("<X>", phrase) in lines:
                continue  # it did what the task said and still lost: the effect is not what was wrong or right
        lid = rid("prefer", pattern)
        old = out.get(lid) or has(lid)
        conds = [said] if old is None or old.applies_when is None else sorted(set(old.applies_when) & {said})
        if old is not None and not conds:
            continue  # memory knows the command right in other situations: an effect does not narrow or widen it
        out[lid] = _text_lesson(lid, old, namespace, run_id, task, step, False, pattern, conds, now)


def live_text_rules(lessons: Sequence[Lesson]) -> list[Lesson]:
    """The text rules among ``lessons`` that are retrievable and that no other of them supersedes (``Lesson.supersedes``:
    a rule rewritten with what memory learned later, ``direct.revise``, retires the one it replaces). A stored rule
    with a history condition (``^open <X>``, ``textmatch.done_line``) is none: learning never writes one, and only
    delivery's rule 8 reads them (an imported one would be misread as a line of the task by the rules here)."""
    rules = [l for l in lessons if l.applies_when is not None and l.retrievable
             and not any(done_line(c) is not None for c in l.applies_when)]  # history lines: delivery's inferences only
    retired = {old for l in rules for old in l.supersedes}
    return [l for l in rules if l.id not in retired]


def _revise_stored(out: dict[str, Lesson], stored: Sequence[Lesson], directives: Collection[str], verbs: Collection[str],
                   rid: Callable[..., str], now: float) -> None:
    """Rewrite the tool's avoidances with what memory knows now (``direct.revise``): the new rule takes the
    old one's evidence (its runs) and names it in ``supersedes``, which retires it (``live_text_rules``): a status
    is a fold over evidence, not content, so the old record itself stays as it was."""
    current = {**{l.id: l for l in stored}, **out}
    reduce = lambda pattern, conds: relevant_conditions(pattern, conds, verbs, directives)  # noqa: E731
    rewrites = [(old, lid, old.wrong or "", conds) for old, lid, conds in revise(current.values(), directives, verbs, reduce, rid)]
    for old in current.values():  # a bare-situation avoidance learned before ``unasked_head`` cut its pattern
        head = unasked_head(old.wrong or "", old.applies_when or ()) if old.wrong and old.retrievable else ""
        if head and head != old.wrong:
            rewrites.append((old, rid("avoid", head, "<X>"), head, ["<X>"]))
    for old, lid, pattern, conds in rewrites:
        have = out.get(lid) or current.get(lid)
        base = have if have is not None else old.model_copy(update={"id": lid, "created_at": now, "supersedes": []})
        runs = sorted({*old.provenance.run_ids, *base.provenance.run_ids})
        out[lid] = base.model_copy(update={
            "wrong": pattern, "applies_when": conds, "rule_text": _rule_text(True, pattern, conds), "updated_at": now,
            "provenance": base.provenance.model_copy(update={"run_ids": runs}), "supersedes": sorted({*base.supersedes, old.id})})


def _derived(source: Lesson, lid: str, avoid: bool, pattern: str, conds: list[str], now: float) -> Lesson:
    """A rule memory infers from ``source`` (a kin, ``textgames.direct``): the source's scope and the runs that taught it, but
    its own counters and status from nothing, since the inference is not the evidence the source earned its status with."""
    return Lesson(
        id=lid, namespace=source.namespace, rule_text=_rule_text(avoid, pattern, conds),
        wrong=pattern if avoid else None, correct=None if avoid else pattern, applies_when=conds,
        tags=["constraint_failed"] if avoid and "constraint_failed" in source.tags else [],
        scope=source.scope, provenance=source.provenance.model_copy(), source="rule", created_at=now, updated_at=now,
    )


def _text_lesson(
    lid: str, old: Lesson | None, namespace: Namespace, run_id: str, task: TaskSpec, step: Step,
    avoid: bool, pattern: str, conds: list[str], now: float,
) -> Lesson:
    """A new text rule, or ``old`` with its condition narrowed and this run added to its provenance."""
    rule = _rule_text(avoid, pattern, conds)
    if old is not None:
        prov = old.provenance.model_copy(update={"run_ids": sorted({*old.provenance.run_ids, run_id})})
        return old.model_copy(update={"applies_when": conds, "rule_text": rule, "provenance": prov, "updated_at": now})
    return Lesson(
        id=lid,
        namespace=namespace,
        rule_text=rule,
        wrong=pattern if avoid else None,
        correct=None if avoid else pattern,
        applies_when=conds,
        tags=["constraint_failed"] if avoid else [],
        scope=LessonScope(level="domain", tool=task.tool, domain=task.domain, task=task.task_id),
        provenance=Provenance(run_ids=[run_id]),
        source="rule",
        created_at=now,
        updated_at=now,
    )


__all__ = [
    "ARTICLES",
    "FUNCTION_WORDS",
    "GOAL_ROLE_WORDS",
    "SLOTS",
    "abstract_action",
    "applies_to_text_envs",
    "conditions_for",
    "directed_verbs",
    "enabling_step",
    "goal_entity",
    "is_read",
    "moved",
    "learn_text_rules",
    "offered_verbs",
    "live_text_rules",
    "relevant_conditions",
    "task_text_lines",
    "teaching_steps",
    "unasked_head",
    "unnamed_entity",
]
