"""The Env protocol: any domain a learning agent works in (design.md §8).

An environment hands out tasks, runs actions and answers with the four feedback
channels, serves its own documentation, and (when it can) judges the outcome
deterministically. Envs depend only on ``records`` and ``config`` so users can
bring their own.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from langmem_plus.records import Feedback, TaskSpec, Verdict


@runtime_checkable
class Env(Protocol):
    """A task environment. ``reset`` starts a task, ``step`` runs one action.

    Optional attributes, read with ``getattr`` by the reference graph when present
    (the text games have them; gridtool and fluxtool do not): ``goal`` (str),
    ``valid_actions`` (sequence of str) and ``state`` (a small dict such as
    location, inventory, score). The graph copies them into ``task.context`` at reset,
    ``Step.info["valid_actions"]`` and ``Step.state_before`` / ``state_after``.
    """

    name: str
    """Tool name, e.g. ``"gridtool"``; used as the tool scope of lessons."""
    domain: str
    """Domain name, e.g. ``"table-cli"``; used as the domain scope of lessons."""

    def tasks(self) -> list[TaskSpec]:
        """Every task of the environment, in a stable order."""
        ...

    def reset(self, task_id: str) -> str:
        """Start ``task_id`` and return the first observation (goal and inputs)."""
        ...

    def step(self, action: str) -> tuple[str, Feedback]:
        """Run one action and return its observation and feedback."""
        ...

    @property
    def done(self) -> bool:
        """True once the current task is solved."""
        ...

    def docs(self, topic: str | None = None) -> str:
        """The tool's documentation, whole or for one topic."""
        ...

    def evaluate(self) -> Verdict:
        """Deterministic verdict on the current task attempt."""
        ...


__all__ = ["Env"]
