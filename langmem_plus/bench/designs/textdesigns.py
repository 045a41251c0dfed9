"""Memory designs for text games, in the forms the memory-design literature publishes.

A text game's memory is not a WRONG -> CORRECT rewrite: the agent chooses among valid
actions, so a design hands back avoid / prefer hints that ``TextGameExecutor`` reads
(back-quoted action patterns; see its docstring). Every design here reads trajectories
the same plain way, without the library's learning code: a step that lost the game
(constraint channel) is an action to avoid, a step that raised the score is an action
to prefer, a won attempt is a procedure to follow. They keep those actions literally,
as the offline forms of these designs would (their published forms ask an LLM to
distill; none abstracts over a task's entities).

- ``trajectory_retrieval``: the most similar past trajectory by task embedding (cosine
  > 0.3, ties to the newest); its won procedure or its fatal action, and the
  trajectory itself as text.
- ``reasoning_bank``: strategy items distilled from successes (prefer a scoring action)
  and failures (avoid the fatal action), embedded with their task; the top
  ``REASONING_TOP_K`` by cosine to the task (ReasoningBank, Ouyang et al. 2025).
- ``dynamic_cheatsheet``: one curated cheatsheet rewritten after each task: the newest
  entry per action wins (an action once fatal then scoring flips), at most
  ``CHEATSHEET_MAX`` entries, all shown (Dynamic Cheatsheet, Suzgun et al. 2025).
- ``expel``: insights with votes (the existing vote memory's rule): new at 2, derived
  again +1, +1 when a run shown it passes, -2 when it fails, dropped at <= 0 (ExpeL).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from langmem_plus.bench.designs.base import Context, Embedder, render_trajectory, task_text
from langmem_plus.bench.designs.baselines import TRAJECTORY_MIN_COSINE, VOTE_DOWNVOTE, VOTE_INITIAL, VOTE_MAX_SHOWN, VOTE_UPVOTE
from langmem_plus.memory import Trajectory
from langmem_plus.records import Hint, TaskSpec

REASONING_TOP_K = 7
"""reasoning_bank's k: the largest lesson budget K' (DESIGN §5.6), so it is not short of slots."""
CHEATSHEET_MAX = 30
"""dynamic_cheatsheet keeps at most this many entries (the newest)."""
PROCEDURE_MAX = 25
"""Longest won procedure a hint carries (actions)."""


def plain_items(traj: Trajectory) -> list[tuple[bool, str]]:
    """(avoid?, action) items a trajectory shows: its fatal step, its score-raising steps."""
    out: list[tuple[bool, str]] = []
    for s in traj.steps:
        if s.feedback.constraint_failure:
            out.append((True, s.action))
        elif not s.feedback.failed and s.feedback.reward > 0:
            out.append((False, s.action))
    return list(dict.fromkeys(out))


def item_hint(avoid: bool, action: str, source: str, score: float = 0.0) -> Hint:
    """An avoid / prefer hint for one literal action."""
    return Hint(text=f"{'Avoid' if avoid else 'Prefer'} `{action}`", source_kind="episode", source_id=source, score=score)


def procedure_hint(traj: Trajectory, source: str, score: float = 0.0) -> Hint | None:
    """A won attempt's successful actions as a procedure hint; None for a lost one."""
    if not (traj.verdict and traj.verdict.passed):
        return None
    actions = [s.action for s in traj.steps if not s.feedback.failed][:PROCEDURE_MAX]
    text = "Worked before for a similar goal: " + " ; ".join(f"`{a}`" for a in actions)
    return Hint(text=text, source_kind="episode", source_id=source, score=score)


class TextTrajectoryRetrieval:
    """Top-1 past trajectory by task cosine > ``TRAJECTORY_MIN_COSINE`` (newest on ties)."""

    name = "trajectory_retrieval"

    def __init__(self) -> None:
        self._emb = Embedder()
        self._items: list[tuple[str | None, np.ndarray, Trajectory]] = []

    def general_update(self, trajectory: Trajectory) -> None:
        """Store the task and its whole trajectory."""
        self._items.append((trajectory.task.tool, self._emb.vector(task_text(trajectory.task)), trajectory))

    def general_retrieve(self, task: TaskSpec, *, run_id: str | None = None) -> Context:
        """The nearest trajectory: its procedure when won, plus its fatal and scoring actions; the text."""
        q = self._emb.vector(task_text(task))
        best: tuple[float, Trajectory] | None = None
        for tool, vec, traj in self._items:
            cos = float(q @ vec)
            if tool == task.tool and cos > TRAJECTORY_MIN_COSINE and (best is None or cos >= best[0]):
                best = (cos, traj)
        if best is None:
            return Context()
        cos, traj = best
        hints = [item_hint(a, act, traj.run_id, cos) for a, act in plain_items(traj)]
        proc = procedure_hint(traj, traj.run_id, cos)
        return Context(tuple([proc, *hints] if proc else hints), render_trajectory(traj))

    def close(self) -> None:
        """Nothing to release."""


@dataclass
class _Strategy:
    tool: str | None
    vector: np.ndarray
    avoid: bool
    action: str
    source: str


class ReasoningBank:
    """Strategy items from successes and failures, top-k by embedding of task + item."""

    name = "reasoning_bank"

    def __init__(self, k: int = REASONING_TOP_K) -> None:
        self.k = k
        self._emb = Embedder()
        self._items: list[_Strategy] = []
        self._keys: set[tuple[str | None, bool, str]] = set()

    def general_update(self, trajectory: Trajectory) -> None:
        """Distill the trajectory's items; each new (tool, polarity, action) is stored once."""
        for i, (avoid, action) in enumerate(plain_items(trajectory)):
            key = (trajectory.task.tool, avoid, action)
            if key in self._keys:
                continue
            self._keys.add(key)
            text = f"{task_text(trajectory.task)}\n{'avoid' if avoid else 'prefer'} {action}"
            self._items.append(_Strategy(key[0], self._emb.vector(text), avoid, action, f"{trajectory.run_id}-{i}"))

    def general_retrieve(self, task: TaskSpec, *, run_id: str | None = None) -> Context:
        """The k items nearest to the task."""
        q = self._emb.vector(task_text(task))
        ranked = sorted(((float(q @ s.vector), n, s) for n, s in enumerate(self._items) if s.tool == task.tool), key=lambda t: (-t[0], t[1]))
        chosen = ranked[: self.k]
        hints = tuple(item_hint(s.avoid, s.action, s.source, sc) for sc, _, s in chosen)
        text = "\n".join(["Strategy items:", *(f"- {h.text}" for h in hints)]) if hints else ""
        return Context(hints, text)

    def close(self) -> None:
        """Nothing to release."""


class DynamicCheatsheet:
    """One cheatsheet per tool, rewritten after every task (newest entry per action wins)."""

    name = "dynamic_cheatsheet"

    def __init__(self, cap: int = CHEATSHEET_MAX) -> None:
        self.cap = cap
        self._sheets: dict[str | None, dict[str, bool]] = {}

    def general_update(self, trajectory: Trajectory) -> None:
        """Fold the trajectory's items into the sheet; the oldest entries go past ``cap``."""
        sheet = self._sheets.setdefault(trajectory.task.tool, {})
        for avoid, action in plain_items(trajectory):
            sheet.pop(action, None)
            sheet[action] = avoid
        while len(sheet) > self.cap:
            del sheet[next(iter(sheet))]

    def general_retrieve(self, task: TaskSpec, *, run_id: str | None = None) -> Context:
        """The whole sheet of the task's tool."""
        sheet = self._sheets.get(task.tool, {})
        hints = tuple(item_hint(avoid, action, f"sheet-{n}") for n, (action, avoid) in enumerate(sheet.items()))
        text = "\n".join(["Cheatsheet:", *(f"- {h.text}" for h in hints)]) if hints else ""
        return Context(hints, text)

    def close(self) -> None:
        """Nothing to release."""


class Expel:
    """Voted insights (the vote memory's rule) over avoid / prefer items."""

    name = "expel"

    def __init__(self) -> None:
        self._votes: dict[tuple[str | None, bool, str], int] = {}
        self._shown: dict[str, list[tuple[str | None, bool, str]]] = {}

    def general_update(self, trajectory: Trajectory) -> None:
        """Vote on what was shown for this task, then add or upvote what it shows."""
        passed = bool(trajectory.verdict and trajectory.verdict.passed)
        for key in self._shown.pop(trajectory.task.task_id, []):
            if key in self._votes:
                self._votes[key] += VOTE_UPVOTE if passed else -VOTE_DOWNVOTE
                if self._votes[key] <= 0:
                    del self._votes[key]
        for avoid, action in plain_items(trajectory):
            key = (trajectory.task.tool, avoid, action)
            self._votes[key] = self._votes.get(key, VOTE_INITIAL - VOTE_UPVOTE) + VOTE_UPVOTE

    def general_retrieve(self, task: TaskSpec, *, run_id: str | None = None) -> Context:
        """Live insights of the tool, highest vote first (at most ``VOTE_MAX_SHOWN``)."""
        live = sorted((k for k in self._votes if k[0] == task.tool), key=lambda k: (-self._votes[k], k[2]))[:VOTE_MAX_SHOWN]
        self._shown[task.task_id] = live
        hints = tuple(item_hint(avoid, action, f"ins-{n}", float(self._votes[(t, avoid, action)])) for n, (t, avoid, action) in enumerate(live))
        text = "\n".join(["Insights (importance-ranked):", *(f"- {h.text}" for h in hints)]) if hints else ""
        return Context(hints, text)

    def close(self) -> None:
        """Nothing to release."""


__all__ = ["CHEATSHEET_MAX", "DynamicCheatsheet", "Expel", "REASONING_TOP_K", "ReasoningBank", "TextTrajectoryRetrieval", "item_hint", "plain_items", "procedure_hint"]
