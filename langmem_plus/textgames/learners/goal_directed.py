"""goal_directed: a command the goal directs, spent on what it was not directed to, is avoided on anything else.

When a clause of the goal opens with the action's command (``focus on the thermometer``) and no clause says the
action itself, what the command was spent on is the mistake, whatever the thing: ``focus on <X>`` where the task
does not say ``focus on <X>`` (``entities.goal_directed``). Read only for an action the task's text bound nothing in.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from langmem_plus.records import Step
from langmem_plus.textgames.entities import goal_directed
from langmem_plus.textgames.learners.base import RunLearning, Situation


class GoalDirected:
    """Reads a fatal step as a goal-directed command spent on the wrong thing (module docstring)."""

    name: ClassVar[str] = "goal_directed"
    summary: ClassVar[str] = "a command the goal directs, spent on what it was not directed to, is avoided on anything else"

    def situation(self, run: RunLearning, step: Step, pattern: str, bindings: Mapping[str, str]) -> Situation | None:
        """The command on a placeholder where the task does not say it, or None."""
        if bindings:
            return None
        found = goal_directed(step.action, run.goal)
        return None if found is None else Situation(*found)


__all__ = ["GoalDirected"]
