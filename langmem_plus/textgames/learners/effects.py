"""effects: what a command did, as the game says it, recommends it where the task says that line.

A step that taught no recommendation itself, fatal or not, whose observation says a verb no command names of a
phrase of its action (``You fry the green apple with the stove.``; ``textgames.effects.effect_of``) recommends the
action's pattern where the task says that line (``cook <X> in stove`` when ``fry <X>``). A game lost to the stove
where the recipe roasted still teaches where the stove is right; but a step fatal where the task said that very
line teaches nothing, and an effect never narrows or widens a command memory knows right elsewhere.
"""

from __future__ import annotations

from typing import ClassVar

from langmem_plus.textgames.effects import effect_of
from langmem_plus.textgames.learners.base import RunLearning, text_lesson
from langmem_plus.textgames.rules import abstract_action


class Effects:
    """Recommends commands where the task says what the game said they did (module docstring)."""

    name: ClassVar[str] = "effects"
    summary: ClassVar[str] = "what a command did, as the game says it, recommends it where the task says that line"

    def learn(self, run: RunLearning) -> None:
        """A recommendation per step whose observation says its effect."""
        taught = {id(t[0]) for t in run.teach if not t[1]}  # the steps that taught a recommendation themselves
        for step in run.ordered:
            if id(step) in taught or (step.feedback.failed and not step.feedback.constraint_failure):
                continue
            effect = effect_of(step.action, step.observation, run.commands)
            if effect is None:
                continue
            pattern, said = effect
            if step.feedback.constraint_failure:
                phrase = abstract_action(step.action, run.lines, "")[1].get("X")
                if phrase is not None and said.replace("<X>", phrase) in run.lines:
                    continue  # it did what the task said and still lost: the effect is not what was wrong or right
            lid = run.rid("prefer", pattern)
            old = run.out.get(lid) or run.has(lid)
            conds = [said] if old is None or old.applies_when is None else sorted(set(old.applies_when) & {said})
            if old is not None and not conds:
                continue  # memory knows the command right in other situations: an effect does not narrow or widen it
            run.out[lid] = text_lesson(run, lid, old, step, False, pattern, conds)


__all__ = ["Effects"]
