"""Which steps of a text-game run its episodes keep: the ones that mattered, their entities as placeholders.

A success becomes a procedure another task of the family can follow only without its exploration and its
literals: ``cook <X> in oven`` after ``read cookbook``, not every ``examine`` on the way.
"""

from __future__ import annotations

from collections.abc import Sequence

from langmem_plus.config import DEFAULT_CONFIG, MemoryConfig
from langmem_plus.learning.textmatch import norm_words
from langmem_plus.records import Step, TaskSpec
from langmem_plus.textgames.entities import FUNCTION_WORDS
from langmem_plus.textgames.rules import abstract_action, enabling_step, task_text_lines


def key_steps(task: TaskSpec, commands: Sequence[Step], config: MemoryConfig = DEFAULT_CONFIG) -> list[Step]:
    """The steps of a text-game run that mattered, their entities as placeholders.

    Kept: steps that raised the score, the steps that made those possible
    (``rules.enabling_step``), and steps that read what the goal names (the task's
    text, ``rules.task_text_lines``) when what they read was new and a later kept step
    acts on it (``_informs``: ``read cookbook`` before ``cook red apple in oven``, not
    ``take cookbook`` or a second ``examine cookbook``); exploration that changed nothing is
    dropped, so a success becomes a procedure another task of the family can follow.
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
    return [s.model_copy(update={"action": abstract_action(s.action, lines, goal, config)[0]})
            for i, s in enumerate(commands) if i in keep]


def _informs(step: Step, new_lines: Sequence[str], later: Sequence[Step]) -> bool:
    """Whether a step's newly read lines say something a later kept step acts on: a word of theirs, beyond the step's own
    action's words (an echo, ``you take cookbook``) and function words, in a later kept step's action."""
    said = {w for line in new_lines for w in line.split()} - set(norm_words(step.action)) - FUNCTION_WORDS
    return any(said & set(norm_words(s.action)) for s in later)


__all__ = ["key_steps"]
