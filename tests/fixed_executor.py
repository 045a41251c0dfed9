"""Test-only executor: plays a fixed list of actions, then stops, recording the hints it was handed at each step."""

from __future__ import annotations

from collections.abc import Sequence

from langmem_plus.executors.base import Decision
from langmem_plus.records import Hint, Step, TaskSpec


class Fixed:
    """Plays ``actions`` in order, then says it is done; ``seen`` holds the hint texts of each call."""

    def __init__(self, actions: Sequence[str]) -> None:
        self.actions = list(actions)
        self.seen: list[list[str]] = []

    def act(self, task: TaskSpec, history: Sequence[Step], hints: Sequence[Hint]) -> Decision:
        self.seen.append([h.text for h in hints])
        if len(history) < len(self.actions):
            return Decision(kind="command", action=self.actions[len(history)])
        return Decision(kind="done")
