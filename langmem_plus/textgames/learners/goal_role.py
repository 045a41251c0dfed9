"""goal_role: an action on a thing the goal names is avoided for the next goal's thing in the same role.

Goals of one family differ in their entities (the room, the box's colour) and agree on the words around them, which
say the entity's role. A fatal action on a thing the goal names becomes the action over ``<X>`` with the role as
its condition (``focus on <X>`` when the task says ``located around <X>``; ``entities.goal_entity``), so it binds
the next goal's thing in that role. Read only for an action the task's text bound nothing in.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from langmem_plus.records import Step
from langmem_plus.textgames.entities import goal_entity
from langmem_plus.textgames.learners.base import RunLearning, Situation


class GoalRole:
    """Reads a fatal step on a goal-named thing as a rule about that thing's role (module docstring)."""

    name: ClassVar[str] = "goal_role"
    summary: ClassVar[str] = "an action on a thing the goal names is avoided for the next goal's thing in the same role"

    def situation(self, run: RunLearning, step: Step, pattern: str, bindings: Mapping[str, str]) -> Situation | None:
        """The action over ``<X>`` when the task says the role, or None."""
        if bindings:
            return None
        found = goal_entity(step.action, run.goal, run.config)
        return None if found is None else Situation(*found)


__all__ = ["GoalRole"]
