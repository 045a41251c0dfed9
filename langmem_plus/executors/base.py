"""The Executor protocol: what acts in a run (design.md §8).

An executor sees the task, the steps taken so far in this attempt, and the hints
memory retrieved; it returns one Decision. It keeps no memory across attempts:
everything it carries from one run to the next comes through hints. Executors
depend only on ``records`` and ``config``.
"""

from __future__ import annotations

from typing import Literal, Protocol, Sequence, runtime_checkable

from pydantic import BaseModel, ConfigDict

from langmem_plus.records import Hint, Step, TaskSpec

DecisionKind = Literal["command", "docs", "done"]


class Decision(BaseModel):
    """The next move: run a command, read the docs (costs a step), or stop."""

    model_config = ConfigDict(frozen=True)

    kind: DecisionKind
    action: str = ""
    """The command to run when ``kind == "command"``."""
    topic: str | None = None
    """Docs topic when ``kind == "docs"``; None for the whole docs."""
    applied_hints: tuple[str, ...] = ()
    """Ids of the hints (lessons) that changed this action."""
    note: str = ""
    """A short reason, for traces."""


@runtime_checkable
class Executor(Protocol):
    """Decides the next move from the task, this attempt's history and the hints."""

    def act(self, task: TaskSpec, history: Sequence[Step], hints: Sequence[Hint]) -> Decision:
        """Return the next Decision. Must not raise on odd hints; ignore what it cannot use."""
        ...


__all__ = ["Decision", "DecisionKind", "Executor"]
