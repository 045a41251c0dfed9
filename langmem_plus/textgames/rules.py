"""Text rules: what an agent that chooses among enumerated actions learns from their outcomes.

Where the environment enumerates its valid actions, a mistake is not a malformed command but a wrong choice, so the
lesson is about the action, in the terms of the task's own text, with no game knowledge: a fatal action becomes an
avoidance, a scoring action (and the step that made it possible) a recommendation; phrases the task's text names
beyond its goal become placeholders (``cook <X> in oven``); the lines of the task's text that bear on the action
become its conditions (``Lesson.applies_when``: ``roast <X>``). Lesson ids hash the namespace, the tool, the
polarity and the pattern (and an avoidance's condition), so the same rule learned again updates one record.
The mechanisms that use them are ``textgames.learners``; ``docs/text-games.md`` ("Learning") gives each and why.

"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping, Sequence

from langmem_plus.config import DEFAULT_CONFIG, MemoryConfig
from langmem_plus.textgames.entities import (
    FUNCTION_WORDS,
    GOAL_ROLE_WORDS,
    STOP_WORDS,
    goal_entity,
    unasked_head,
    unnamed_entity,
)
from langmem_plus.learning.textmatch import (
    ARTICLES,
    done_line,
    norm_words,
    occurs,
)
from langmem_plus.records import Lesson, Step, TaskSpec

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


def command_verbs(ordered: Sequence[Step], task: TaskSpec, patterns: Sequence[str], lines: Sequence[str],
                   known: Callable[[str], bool], offered_before: Collection[str] = ()) -> set[str]:
    """Verbs that name commands: offered in this run or in the tool's earlier runs, used by what it teaches, or
    already known to memory."""
    verbs = offered_verbs(ordered, task) | set(offered_before)
    verbs |= {p.split()[0] for p in patterns if p.split()}
    return verbs | {v for v in {line.split()[0] for line in lines} - verbs if known(v)}


def live_text_rules(lessons: Sequence[Lesson]) -> list[Lesson]:
    """The text rules among ``lessons`` that are retrievable and that no other of them supersedes (``Lesson.supersedes``:
    a rule rewritten with what memory learned later, ``direct.revise``, retires the one it replaces). A stored rule
    with a history condition (``^open <X>``, ``textmatch.done_line``) is none: learning never writes one, and only
    delivery_rules.undo reads them (an imported one would be misread as a line of the task by the rules here)."""
    rules = [l for l in lessons if l.applies_when is not None and l.retrievable
             and not any(done_line(c) is not None for c in l.applies_when)]  # history lines: delivery's inferences only
    retired = {old for l in rules for old in l.supersedes}
    return [l for l in rules if l.id not in retired]


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
    "command_verbs",
    "offered_verbs",
    "live_text_rules",
    "relevant_conditions",
    "task_text_lines",
    "teaching_steps",
    "unasked_head",
    "unnamed_entity",
]
