"""The memory designs compared side by side, each in its published form.

- ``no_memory``: nothing is kept.
- ``trajectory_retrieval``: stores each task with its whole trajectory and hands back
  the top-1 past trajectory of the same tool whose task embedding has cosine > 0.3,
  the strongest hand-made design in recent memory-design comparisons. A reader of
  that trajectory takes from it every fix it shows (error -> the action that got
  past it) as a rewrite, and a model is shown the trajectory itself.
- ``flat_vector``: every error stored with the action that fixed it, in one vector
  collection per tool, retrieved top-k by cosine to the task; no lifecycle (what a
  generic semantic memory store gives). Duplicate rules are skipped at read time so
  the k slots hold k distinct fixes.
- ``vote_memory``: insights (here the rewrites a trajectory shows) with an importance
  score: new insights start at 2 and re-deriving one upvotes it (ExpeL's ADD /
  UPVOTE); after a run that was shown an insight, +1 if it passed, -2 if it failed;
  an insight at <= 0 is dropped (the ExpeL / G-Memory family). All live insights of
  the tool are shown, highest score first.
- ``langmem_plus``: ``LearningMemory``'s own ``general_retrieve`` (pre-run retrieval:
  K' lessons by difficulty plus the tool sheet) and ``general_update`` (capture +
  ``end_run``, the shown lessons measured as activations), paired by run id.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from langmem_plus.bench.designs.base import (
    Context,
    Embedder,
    goal_of,
    MemoryDesign,
    error_fixes,
    render_rules,
    render_trajectory,
    rewrite_hint,
    task_text,
)
from langmem_plus.config import MemoryConfig
from langmem_plus.demo import LogicalClock
from langmem_plus.memory import LearningMemory, Trajectory
from langmem_plus.memory.advisor import WorkflowAdvisor
from langmem_plus.memory.run import Run
from langmem_plus.records import Hint, ScoredItem, TaskSpec
from langmem_plus.textgames.delivery import StepDelivery
from langmem_plus.textgames.shown import is_text_rule
from langmem_plus.textgames.delivery_start import open_triggered

TRAJECTORY_MIN_COSINE = 0.3
"""trajectory_retrieval returns the top-1 past trajectory only above this task cosine."""
FLAT_TOP_K = 7
"""flat_vector's k: the largest lesson budget K' langmem_plus may use (design.md §5.6), so it is not short of slots."""
VOTE_INITIAL = 2
"""Importance of a new insight (ExpeL's ADD)."""
VOTE_UPVOTE = 1
"""Added when an insight is derived again, and when a run shown it passes."""
VOTE_DOWNVOTE = 2
"""Subtracted when a run shown the insight fails (-2)."""
VOTE_MAX_SHOWN = 20
"""At most this many insights are shown, highest score first (a prompt-size cap, far above what a tool yields)."""
TRIGGERED_UNCLAIMED_MAX = 1000
"""Triggered-delivery records kept for runs not yet updated (static deployment never updates)."""
CLOCK_START = 1_700_000_000.0
"""Logical clock start of the langmem_plus design, so its runs repeat exactly."""


class NoMemory:
    """Keeps nothing; the executor relies on its guesses and the docs."""

    name = "no_memory"

    def general_update(self, trajectory: Trajectory) -> None:
        """Nothing to keep."""

    def general_retrieve(self, task: TaskSpec, *, run_id: str | None = None) -> Context:
        """Always the empty context."""
        return Context()

    def close(self) -> None:
        """Nothing to release."""


@dataclass
class _Stored:
    tool: str | None
    vector: np.ndarray
    trajectory: Trajectory


class TrajectoryRetrieval:
    """Top-1 past trajectory of the same tool by task cosine > ``TRAJECTORY_MIN_COSINE``."""

    name = "trajectory_retrieval"

    def __init__(self) -> None:
        self._emb = Embedder()
        self._items: list[_Stored] = []

    def general_update(self, trajectory: Trajectory) -> None:
        """Store the task and its whole trajectory."""
        self._items.append(_Stored(trajectory.task.tool, self._emb.vector(task_text(trajectory.task)), trajectory))

    def general_retrieve(self, task: TaskSpec, *, run_id: str | None = None) -> Context:
        """The most similar past trajectory: its fixes as rewrites, the trajectory as text."""
        q = self._emb.vector(task_text(task))
        best: tuple[float, _Stored] | None = None
        for item in self._items:
            if item.tool != task.tool:
                continue
            cos = float(q @ item.vector)
            if cos > TRAJECTORY_MIN_COSINE and (best is None or cos > best[0]):
                best = (cos, item)
        if best is None:
            return Context()
        cos, item = best
        seen: set[tuple[str, str]] = set()
        hints: list[Hint] = []
        for fix in error_fixes(item.trajectory):
            if (fix.wrong, fix.correct) not in seen:
                seen.add((fix.wrong, fix.correct))
                hints.append(rewrite_hint(fix.wrong, fix.correct, item.trajectory.run_id, kind="episode", score=cos))
        return Context(tuple(hints), render_trajectory(item.trajectory))

    def close(self) -> None:
        """Nothing to release."""


@dataclass
class _ErrorFix:
    tool: str | None
    vector: np.ndarray
    error: str
    wrong: str
    correct: str
    source: str


class FlatVector:
    """Every error with the action that fixed it; top-k cosine to the task; no lifecycle."""

    name = "flat_vector"

    def __init__(self, k: int = FLAT_TOP_K) -> None:
        self.k = k
        self._emb = Embedder()
        self._items: list[_ErrorFix] = []

    def general_update(self, trajectory: Trajectory) -> None:
        """Store each fixed error of the trajectory, embedded with its task, error and fix."""
        for i, fix in enumerate(error_fixes(trajectory)):
            text = f"{task_text(trajectory.task)}\n{fix.error}\n{fix.failed} -> {fix.fixed}"
            self._items.append(
                _ErrorFix(trajectory.task.tool, self._emb.vector(text), fix.error, fix.wrong, fix.correct, f"{trajectory.run_id}-{i}")
            )

    def general_retrieve(self, task: TaskSpec, *, run_id: str | None = None) -> Context:
        """The k nearest distinct error fixes of the tool, as rewrites and as text."""
        q = self._emb.vector(task_text(task))
        ranked = sorted(
            ((float(q @ it.vector), n, it) for n, it in enumerate(self._items) if it.tool == task.tool),
            key=lambda t: (-t[0], t[1]),
        )
        seen: set[tuple[str, str]] = set()
        hints: list[Hint] = []
        lines = ["Past errors and the actions that fixed them:"]
        for score, _, it in ranked:
            if (it.wrong, it.correct) in seen:
                continue
            seen.add((it.wrong, it.correct))
            hints.append(rewrite_hint(it.wrong, it.correct, it.source, score=score))
            lines.append(f"- error: {' '.join(it.error.split())} | fix: WRONG: {it.wrong} -> CORRECT: {it.correct}")
            if len(hints) >= self.k:
                break
        return Context(tuple(hints), "\n".join(lines) if hints else "")

    def close(self) -> None:
        """Nothing to release."""


@dataclass
class _Insight:
    tool: str | None
    wrong: str
    correct: str
    score: int
    key: str


class VoteMemory:
    """ExpeL / G-Memory style insights with votes: +1 on success, -2 on failure, dropped at <= 0."""

    name = "vote_memory"

    def __init__(self) -> None:
        self._insights: dict[tuple[str | None, str, str], _Insight] = {}
        self._shown: dict[str, list[tuple[str | None, str, str]]] = {}

    def general_update(self, trajectory: Trajectory) -> None:
        """Vote on the insights shown for this task, then add or upvote the ones it shows."""
        passed = bool(trajectory.verdict and trajectory.verdict.passed)
        for key in self._shown.pop(trajectory.task.task_id, []):
            ins = self._insights.get(key)
            if ins is None:
                continue
            ins.score += VOTE_UPVOTE if passed else -VOTE_DOWNVOTE
            if ins.score <= 0:
                del self._insights[key]
        for fix in error_fixes(trajectory):
            key = (trajectory.task.tool, fix.wrong, fix.correct)
            if key in self._insights:
                self._insights[key].score += VOTE_UPVOTE
            else:
                self._insights[key] = _Insight(key[0], fix.wrong, fix.correct, VOTE_INITIAL, f"ins{len(self._insights)}")

    def general_retrieve(self, task: TaskSpec, *, run_id: str | None = None) -> Context:
        """Every live insight of the tool, highest score first (at most ``VOTE_MAX_SHOWN``)."""
        live = sorted((i for i in self._insights.values() if i.tool == task.tool), key=lambda i: (-i.score, i.key))
        live = live[:VOTE_MAX_SHOWN]
        self._shown[task.task_id] = [(i.tool, i.wrong, i.correct) for i in live]
        hints = [rewrite_hint(i.wrong, i.correct, i.key, score=float(i.score)) for i in live]
        return Context(tuple(hints), render_rules("Insights (importance-ranked):", hints))

    def close(self) -> None:
        """Nothing to release."""


@dataclass
class LangmemPlus:
    """``LearningMemory`` behind the two-method interface, in a temporary store.

    It goes through ``LearningMemory.general_retrieve`` / ``general_update``, paired by run
    id, so the lessons shown before an attempt are measured by the update that follows it.
    """

    name: str = "langmem_plus"
    root: str = field(default_factory=lambda: tempfile.mkdtemp(prefix="lmp-design-"))
    memory: LearningMemory = field(init=False)
    _retrieved_as: dict[str, str] = field(default_factory=dict)
    """Run id of the latest retrieval per task id, for an update recorded under another id."""
    config: MemoryConfig | None = None
    """The memory's config; None: the defaults."""
    delivery: str = "pre_run"
    """``pre_run``: every lesson in the block before the task (``LearningMemory.general_retrieve``);
    ``triggered``: text rules leave the pre-run block and reach the executor at the steps they fire
    on (``textgames.delivery.StepDelivery``), everything else stays before the task."""
    _triggered: dict[str, tuple[list[ScoredItem], StepDelivery | WorkflowAdvisor]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.delivery not in ("pre_run", "triggered"):
            raise ValueError(f"delivery must be pre_run or triggered, got {self.delivery!r}")
        self.memory = LearningMemory.open(
            self.root, namespace=("bench", "designs"), clock=LogicalClock(CLOCK_START), config=self.config
        )

    def general_update(self, trajectory: Trajectory) -> None:
        """``LearningMemory.general_update``: capture, synthesis, and the shown lessons measured.

        With triggered delivery the same steps go through a ``Run`` (``Run.observe``, then ``Run.end``), its
        activations the pre-run items plus each rule delivered, at the step it first fired.
        """
        retrieved_as = self._retrieved_as.pop(trajectory.task.task_id, None)
        shown = self._triggered.pop(retrieved_as or trajectory.run_id, None)
        if shown is None:
            self.memory.general_update(trajectory, retrieved_as=retrieved_as)
            return
        items, stepper = shown
        run_id = trajectory.run_id
        run = Run(self.memory, trajectory.task, run_id=run_id, step_advice=False)
        run.activate(items, moment="pre_run", step=0)
        run.activations += stepper.activations(run_id)
        for step in trajectory.steps:
            run.observe(step)
        run.end(trajectory.verdict)

    def general_retrieve(self, task: TaskSpec, *, run_id: str | None = None) -> Context:
        """``LearningMemory.general_retrieve`` under ``run_id`` (a fresh one when not given), or triggered delivery."""
        recorder = Trajectory(task=task, run_id=run_id) if run_id else Trajectory(task=task)
        self._retrieved_as[task.task_id] = recorder.run_id
        if self.delivery == "triggered":
            return self._triggered_context(task, recorder.run_id)
        out = self.memory.general_retrieve(recorder)
        return Context(tuple(Hint.model_validate(h) for h in out["hints"]), out["text"])

    def _triggered_context(self, task: TaskSpec, run_id: str) -> Context:
        """Pre-run items other than text rules in one block of short lines; the tool's text rules to ``StepDelivery``."""
        cfg = self.memory.config
        items = [i for i in Run(self.memory, task, run_id=run_id, step_advice=False).retrieve_pre_run() if not is_text_rule(i.item)]
        start = open_triggered(items, cfg, budget=cfg.context.max_context_tokens)
        stepper: StepDelivery | WorkflowAdvisor = start.delivery(self.memory.text_rules(task.tool), [r for r in self.memory.runs if r.tool == task.tool], cfg)
        if self.memory.workflows_for(goal_of(task), family=task.family):  # a workflow's next step comes first
            stepper = WorkflowAdvisor(self.memory, stepper)
        self._triggered[run_id] = (list(start.fitted), stepper)  # held ones are in force from the start
        while len(self._triggered) > TRIGGERED_UNCLAIMED_MAX:  # retrievals never followed by an update (a frozen memory)
            del self._triggered[next(iter(self._triggered))]
        return Context(tuple(start.hints), start.block.text, stepper)

    def close(self) -> None:
        """Close the store and remove its folder."""
        self.memory.close()
        shutil.rmtree(self.root, ignore_errors=True)


DESIGNS: dict[str, Callable[[], MemoryDesign]] = {
    "no_memory": NoMemory,
    "trajectory_retrieval": TrajectoryRetrieval,
    "flat_vector": FlatVector,
    "vote_memory": VoteMemory,
    "langmem_plus": LangmemPlus,
}
"""Design name -> factory of a fresh, empty design."""
DESIGN_NAMES: tuple[str, ...] = tuple(DESIGNS)
"""The compared designs, in report order."""


def make_design(name: str) -> MemoryDesign:
    """A fresh, empty design by name.

    Raises:
        ValueError: ``name`` is not one of ``DESIGN_NAMES``.
    """
    factory = DESIGNS.get(name)
    if factory is None:
        raise ValueError(f"unknown memory design {name!r}; choose from {', '.join(DESIGN_NAMES)}")
    return factory()


__all__ = [
    "DESIGNS",
    "DESIGN_NAMES",
    "FlatVector",
    "LangmemPlus",
    "NoMemory",
    "TrajectoryRetrieval",
    "VoteMemory",
    "make_design",
]
