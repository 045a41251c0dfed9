"""Memory designs for text games, in the forms the memory-design literature publishes.

A text game's memory is not a WRONG -> CORRECT rewrite: the agent chooses among valid
actions, so a design hands back avoid / prefer hints that ``TextGameExecutor`` reads
(back-quoted action patterns; see its docstring). Every design here reads trajectories
the same plain way, without the library's learning code: a step that lost the game
(constraint channel) is an action to avoid, a step that raised the score is an action
to prefer, a won attempt is a procedure to follow. Each comes in two forms:

- literal (the name alone): actions kept word for word, as the offline forms of these
  designs would (their published forms ask an LLM to distill);
- abstracted (``<name>_abstracted``): the same entity abstraction langmem_plus learns
  with, so a comparison measures what each design does with an item, not whether it may
  generalise one. The task's own text binds ``<X>`` (``textgames.rules.abstract_action``:
  ``cook red apple in oven`` under a recipe that says ``fry the red apple`` is
  ``cook <X> in oven``), and an item carries the lines of its task's text that name the
  thing as its condition (``conditions_for``: ``when the task says `fry <X>```), the way
  the papers' items carry the task they came from.

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

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from langmem_plus.bench.designs.base import Context, Embedder, MemoryDesign, goal_of, render_trajectory, task_text
from langmem_plus.bench.designs.baselines import TRAJECTORY_MIN_COSINE, VOTE_DOWNVOTE, VOTE_INITIAL, VOTE_MAX_SHOWN, VOTE_UPVOTE
from langmem_plus.conditions import parse, render_precondition
from langmem_plus.config import DEFAULT_CONFIG
from langmem_plus.memory import Trajectory
from langmem_plus.records import Hint, TaskSpec
from langmem_plus.retrieval.rule_lines import rule_text
from langmem_plus.textgames.rules import abstract_action, conditions_for, task_text_lines

REASONING_TOP_K = 7
"""reasoning_bank's k: the largest lesson budget K' (design.md §5.6), so it is not short of slots."""
CHEATSHEET_MAX = 30
"""dynamic_cheatsheet keeps at most this many entries (the newest)."""
PROCEDURE_MAX = 25
"""Longest won procedure a hint carries (actions)."""
ABSTRACTED = "_abstracted"
"""Suffix of a design's abstracted form (module docstring)."""


class Item(NamedTuple):
    """One avoid / prefer item: the action (literal, or a pattern with ``<X>``) and the conditions it carries
    (``conditions.parse``'s stored forms; none for a literal item)."""

    avoid: bool
    action: str
    conditions: tuple[str, ...] = ()

    @property
    def hint_text(self) -> str:
        """The item as a hint's text: ``Avoid `cook <X> in oven```."""
        return f"{'Avoid' if self.avoid else 'Prefer'} `{self.action}`"

    @property
    def precondition(self) -> str | None:
        """When the item holds, as hints say it (``conditions.render_precondition``); None for none."""
        return render_precondition([parse(c) for c in self.conditions], self.action if self.avoid else None)

    @property
    def line(self) -> str:
        """The item as one line of a design's text: its hint text, then when it holds (``rule_lines.rule_text``)."""
        return rule_text(item_hint(self, ""))


def abstracted(action: str, lines: list[str], goal: str) -> tuple[str, tuple[str, ...]]:
    """``action`` with the phrases the task's text names as placeholders, and the lines naming them as conditions
    (module docstring).

    Example:
        >>> abstracted("cook red apple in oven", ["fry red apple", "slice yellow potato"], "Cook a meal.")
        ('cook <X> in oven', ('fry <X>',))
    """
    pattern, bindings = abstract_action(action, lines, goal)
    conds = conditions_for(bindings, lines, DEFAULT_CONFIG.textgames.text_rule_max_conditions) if bindings else []
    return pattern, tuple(conds)


def plain_items(traj: Trajectory, abstract: bool = False) -> list[Item]:
    """The items a trajectory shows: its fatal step (avoid), its score-raising steps (prefer); ``abstract``: each
    abstracted over its task's text (``abstracted``)."""
    steps = sorted(traj.steps, key=lambda s: s.index)
    goal = goal_of(traj.task)
    lines = task_text_lines(goal, steps) if abstract else []
    out: list[Item] = []
    for s in steps:
        if s.feedback.constraint_failure:
            avoid = True
        elif not s.feedback.failed and s.feedback.reward > 0:
            avoid = False
        else:
            continue
        out.append(Item(avoid, *abstracted(s.action, lines, goal)) if abstract else Item(avoid, s.action))
    return list(dict.fromkeys(out))


def item_hint(item: Item, source: str, score: float = 0.0) -> Hint:
    """An avoid / prefer hint for one item, with its precondition."""
    return Hint(text=item.hint_text, precondition=item.precondition, source_kind="episode", source_id=source, score=score)


def procedure_hint(traj: Trajectory, source: str, score: float = 0.0, abstract: bool = False) -> Hint | None:
    """A won attempt's successful actions as a procedure hint (``abstract``: each step's phrases that its task's text
    names as placeholders); None for a lost one."""
    if not (traj.verdict and traj.verdict.passed):
        return None
    ordered = sorted(traj.steps, key=lambda s: s.index)
    goal = goal_of(traj.task)
    lines = task_text_lines(goal, ordered) if abstract else []
    actions = [abstract_action(s.action, lines, goal)[0] if abstract else s.action
               for s in ordered if not s.feedback.failed][:PROCEDURE_MAX]
    text = "Worked before for a similar goal: " + " ; ".join(f"`{a}`" for a in actions)
    return Hint(text=text, source_kind="episode", source_id=source, score=score)


def _listing(title: str, hints: tuple[Hint, ...]) -> str:
    """A design's text: its title, then a line per hint with its precondition (``rule_lines.rule_text``)."""
    return "\n".join([title, *(f"- {rule_text(h)}" for h in hints)]) if hints else ""


class TextTrajectoryRetrieval:
    """Top-1 past trajectory by task cosine > ``TRAJECTORY_MIN_COSINE`` (newest on ties)."""

    name = "trajectory_retrieval"

    def __init__(self, abstract: bool = False) -> None:
        self.abstract = abstract
        self.name = type(self).name + (ABSTRACTED if abstract else "")
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
        hints = [item_hint(item, traj.run_id, cos) for item in plain_items(traj, self.abstract)]
        proc = procedure_hint(traj, traj.run_id, cos, self.abstract)
        return Context(tuple([proc, *hints] if proc else hints), render_trajectory(traj))

    def close(self) -> None:
        """Nothing to release."""


@dataclass
class _Strategy:
    tool: str | None
    vector: np.ndarray
    item: Item
    source: str


class ReasoningBank:
    """Strategy items from successes and failures, top-k by embedding of task + item."""

    name = "reasoning_bank"

    def __init__(self, k: int = REASONING_TOP_K, abstract: bool = False) -> None:
        self.k = k
        self.abstract = abstract
        self.name = type(self).name + (ABSTRACTED if abstract else "")
        self._emb = Embedder()
        self._items: list[_Strategy] = []
        self._keys: set[tuple[str | None, Item]] = set()

    def general_update(self, trajectory: Trajectory) -> None:
        """Distill the trajectory's items; each new (tool, item) is stored once, embedded with its task."""
        for i, item in enumerate(plain_items(trajectory, self.abstract)):
            key = (trajectory.task.tool, item)
            if key in self._keys:
                continue
            self._keys.add(key)
            text = f"{task_text(trajectory.task)}\n{item.line}"
            self._items.append(_Strategy(key[0], self._emb.vector(text), item, f"{trajectory.run_id}-{i}"))

    def general_retrieve(self, task: TaskSpec, *, run_id: str | None = None) -> Context:
        """The k items nearest to the task."""
        q = self._emb.vector(task_text(task))
        ranked = sorted(((float(q @ s.vector), n, s) for n, s in enumerate(self._items) if s.tool == task.tool), key=lambda t: (-t[0], t[1]))
        chosen = ranked[: self.k]
        hints = tuple(item_hint(s.item, s.source, sc) for sc, _, s in chosen)
        return Context(hints, _listing("Strategy items:", hints))

    def close(self) -> None:
        """Nothing to release."""


class DynamicCheatsheet:
    """One cheatsheet per tool, rewritten after every task (newest entry per action wins)."""

    name = "dynamic_cheatsheet"

    def __init__(self, cap: int = CHEATSHEET_MAX, abstract: bool = False) -> None:
        self.cap = cap
        self.abstract = abstract
        self.name = type(self).name + (ABSTRACTED if abstract else "")
        self._sheets: dict[str | None, dict[tuple[str, tuple[str, ...]], bool]] = {}

    def general_update(self, trajectory: Trajectory) -> None:
        """Fold the trajectory's items into the sheet, one entry per action and conditions (the newest polarity
        wins); the oldest entries go past ``cap``."""
        sheet = self._sheets.setdefault(trajectory.task.tool, {})
        for item in plain_items(trajectory, self.abstract):
            key = (item.action, item.conditions)
            sheet.pop(key, None)
            sheet[key] = item.avoid
        while len(sheet) > self.cap:
            del sheet[next(iter(sheet))]

    def general_retrieve(self, task: TaskSpec, *, run_id: str | None = None) -> Context:
        """The whole sheet of the task's tool."""
        sheet = self._sheets.get(task.tool, {})
        hints = tuple(item_hint(Item(avoid, action, conds), f"sheet-{n}")
                      for n, ((action, conds), avoid) in enumerate(sheet.items()))
        return Context(hints, _listing("Cheatsheet:", hints))

    def close(self) -> None:
        """Nothing to release."""


class Expel:
    """Voted insights (the vote memory's rule) over avoid / prefer items."""

    name = "expel"

    def __init__(self, abstract: bool = False) -> None:
        self.abstract = abstract
        self.name = type(self).name + (ABSTRACTED if abstract else "")
        self._votes: dict[tuple[str | None, Item], int] = {}
        self._shown: dict[str, list[tuple[str | None, Item]]] = {}

    def general_update(self, trajectory: Trajectory) -> None:
        """Vote on what was shown for this task, then add or upvote what it shows."""
        passed = bool(trajectory.verdict and trajectory.verdict.passed)
        for key in self._shown.pop(trajectory.task.task_id, []):
            if key in self._votes:
                self._votes[key] += VOTE_UPVOTE if passed else -VOTE_DOWNVOTE
                if self._votes[key] <= 0:
                    del self._votes[key]
        for item in plain_items(trajectory, self.abstract):
            key = (trajectory.task.tool, item)
            self._votes[key] = self._votes.get(key, VOTE_INITIAL - VOTE_UPVOTE) + VOTE_UPVOTE

    def general_retrieve(self, task: TaskSpec, *, run_id: str | None = None) -> Context:
        """Live insights of the tool, highest vote first (at most ``VOTE_MAX_SHOWN``)."""
        live = sorted((k for k in self._votes if k[0] == task.tool),
                      key=lambda k: (-self._votes[k], k[1].action, k[1].conditions))[:VOTE_MAX_SHOWN]
        self._shown[task.task_id] = live
        hints = tuple(item_hint(k[1], f"ins-{n}", float(self._votes[k])) for n, k in enumerate(live))
        return Context(hints, _listing("Insights (importance-ranked):", hints))

    def close(self) -> None:
        """Nothing to release."""


def abstracted_designs() -> dict[str, Callable[[], MemoryDesign]]:
    """Each text baseline's abstracted form by name (``<name>_abstracted``), as factories of fresh designs."""
    out: dict[str, Callable[[], MemoryDesign]] = {}
    for cls in (TextTrajectoryRetrieval, ReasoningBank, DynamicCheatsheet, Expel):
        out[cls.name + ABSTRACTED] = lambda cls=cls: cls(abstract=True)  # type: ignore[misc]
    return out


__all__ = ["ABSTRACTED", "CHEATSHEET_MAX", "DynamicCheatsheet", "Expel", "Item", "REASONING_TOP_K", "ReasoningBank",
           "TextTrajectoryRetrieval", "abstracted", "abstracted_designs", "item_hint", "plain_items", "procedure_hint"]
