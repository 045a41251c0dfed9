"""Which steps of a text-game run its episodes keep: the ones that mattered, their entities as placeholders.

A success becomes a procedure another task of the family can follow only without its exploration, its literals and
the steps this task's own text chose: ``read cookbook`` then ``take <X>``, not every ``examine`` on the way, and
not ``cook <X> in oven`` where the recipe said to roast (another recipe fries; the rule with its condition says
when the oven is right).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from langmem_plus.config import DEFAULT_CONFIG, MemoryConfig
from langmem_plus.learning.textmatch import Pattern, norm, norm_words, says_line
from langmem_plus.records import Step, TaskSpec
from langmem_plus.textgames.effects import effect_of
from langmem_plus.textgames.entities import FUNCTION_WORDS
from langmem_plus.textgames.rules import abstract_action, enabling_step, offered_verbs, task_text_lines


def key_steps(task: TaskSpec, commands: Sequence[Step], config: MemoryConfig = DEFAULT_CONFIG) -> list[Step]:
    """The steps of a text-game run that mattered, their entities as placeholders.

    Kept: steps that raised the score, the steps that made those possible
    (``rules.enabling_step``), and steps that read what the goal names (the task's
    text, ``rules.task_text_lines``) when what they read was new and a later kept step
    acts on it (``_informs``: ``read cookbook`` before ``cook red apple in oven``, not
    ``take cookbook`` or a second ``examine cookbook``); exploration that changed nothing is
    dropped, so a success becomes a procedure another task of the family can follow. So is a step that carried out
    a line of the task's text about one of its things, in other words than its own (``_chosen_by_text``) or in its
    own (``chop <X>`` where the recipe says ``chop the red onion``): its choice was this task's.
    """
    goal = str(task.context.get("goal") or task.goal or "")
    lines = task_text_lines(goal, commands)
    keep: set[int] = set()
    for i, s in enumerate(commands):
        if s.feedback.reward > 0 and not s.feedback.failed:
            keep.add(i)
            j = enabling_step(commands, i)
            if j is not None:
                keep.add(j)
    seen: set[str] = set()
    for i, s in enumerate(commands):
        read = task_text_lines(goal, [s])
        if i not in keep and _informs(s, [r for r in read if r not in seen], [commands[k] for k in keep if k > i]):
            keep.add(i)
        seen.update(read)
    commands_known = offered_verbs(commands, task)
    out = []
    for i, s in enumerate(commands):
        if i not in keep:
            continue
        pattern, bindings = abstract_action(s.action, lines, goal, config)
        if not _chosen_by_text(s, lines, commands_known, bool(bindings)):
            out.append(s.model_copy(update={"action": pattern}))
    return out


def _chosen_by_text(step: Step, lines: Sequence[str], commands: Collection[str], of_a_thing: bool) -> bool:
    """Whether the step did what a line of the task's text asks about one of its things (``of_a_thing``: the action
    names a thing the text names), in its own words (``chop red onion``, or ``chop red onion with knife``, where the
    recipe says ``chop the red onion``; another recipe slices), or in words no command has (``effects.effect_of``:
    ``cook red apple in oven`` answering ``You roast the red apple`` where the recipe says ``roast the red apple``)."""
    action = norm(step.action)
    if of_a_thing and any(action == line or action.startswith(line + " ") for line in lines):
        return True
    effect = effect_of(step.action, step.observation, commands)
    if effect is None:
        return False
    pattern, said = effect
    binding = (Pattern.parse(pattern) or Pattern.parse(step.action))
    phrase = (binding.match(step.action) or {}).get("X") if binding is not None else None
    return phrase is not None and says_line(said.replace("<X>", phrase), lines)


def _informs(step: Step, new_lines: Sequence[str], later: Sequence[Step]) -> bool:
    """Whether a step's newly read lines say something a later kept step acts on: a word of theirs, beyond the step's own
    action's words (an echo, ``you take cookbook``) and function words, in a later kept step's action."""
    said = {w for line in new_lines for w in line.split()} - set(norm_words(step.action)) - FUNCTION_WORDS
    return any(said & set(norm_words(s.action)) for s in later)


__all__ = ["key_steps"]
