"""unnamed: an action on something the task never named is avoided for anything unnamed.

A fatal action on a thing the game showed but the task's text does not name (``focus on door to hallway`` when the
goal asks for a living thing) teaches what it did to something the task never asked for: ``focus on <X>`` where
the task does not name ``<X>`` (``!<X>``; ``entities.unnamed_entity``). The literal action would warn against that
one object only. Read only for an action the task's text bound nothing in.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from langmem_plus.learning.textmatch import UNNAMED
from langmem_plus.records import Step
from langmem_plus.textgames.entities import unnamed_entity
from langmem_plus.textgames.learners.base import RunLearning, Situation


class Unnamed:
    """Reads a fatal step on an unnamed thing as a rule for every unnamed thing (module docstring)."""

    name: ClassVar[str] = "unnamed"
    summary: ClassVar[str] = "an action on something the task never named is avoided for anything unnamed"

    def situation(self, run: RunLearning, step: Step, pattern: str, bindings: Mapping[str, str]) -> Situation | None:
        """The action over ``<X>`` where the task does not name ``<X>``, or None."""
        if bindings:
            return None
        found = unnamed_entity(step.action, run.seen, run.goal, run.config)
        return None if found is None else Situation(found[0], [f"{UNNAMED}<X>"])


__all__ = ["Unnamed"]
