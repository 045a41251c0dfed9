"""Text rules at their steps for ``LearningMiddleware(text_rules="at_step")``, the guard included.

The bench hands a game's rules to its executor through one ``StepDelivery`` per attempt
(``textgames.delivery``): before each step, what stands now; at a proposal, what memory held
back that bears on it (the guard, ``MemoryConfig.textgames.text_guard``). An agent's run is the same
attempt seen through its state: the steps the tool calls recorded (``lm_steps``) and the
proposals memory answered (``lm_guard``). ``StepRules`` keeps one ``StepDelivery`` per run and
advances it as the state grows; one it does not hold (another process, a resumed thread, an
evicted run) it rebuilds by replaying the state, which gives the same delivery, since a
delivery depends only on the task, the steps and the answered proposals. So the cache holds
nothing the state does not; per-run data still lives in the state.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from langmem_plus.learning.textmatch import norm
from langmem_plus.plugins import GUARD_CALL_KIND
from langmem_plus.records import Activation, Hint, Step, TaskSpec
from langmem_plus.textgames.delivery import StepDelivery
from langmem_plus.textgames.delivery_start import TriggeredStart

if TYPE_CHECKING:
    from langmem_plus.memory import LearningMemory

Opening = Callable[[], TriggeredStart]
"""How the run opened (``textgames.delivery_start``), read from its state only when a delivery is built."""
MAX_CACHED_RUNS = 256
"""Runs whose delivery ``StepRules`` keeps (least recently used dropped first; rebuilt from the state if needed)."""


@dataclass
class _Run:
    deliver: StepDelivery
    at: int = -1
    """The number of steps the delivery was last called with."""
    shown: list[Hint] = field(default_factory=list)
    """What it returned then, plus the answers given at that step since."""
    applied: list[tuple[int, str]] = field(default_factory=list)
    """The answered proposals replayed into it, (step, normalised action), in order."""


def answered(state_guard: Sequence[Any]) -> list[tuple[int, str]]:
    """The answered proposals the state records (``lm_guard``: ``{"step", "action"}``), in order."""
    out = []
    for entry in state_guard:
        if isinstance(entry, dict) and entry.get("kind") == GUARD_CALL_KIND:
            continue  # the call guard's answers: a proposal of a whole tool call, not of an action
        if isinstance(entry, dict) and isinstance(entry.get("step"), int) and isinstance(entry.get("action"), str):
            out.append((int(entry["step"]), norm(str(entry["action"]))))
    return out


class StepRules:
    """One ``StepDelivery`` per run, kept in step with the run's state (module docstring)."""

    def __init__(self, max_runs: int = MAX_CACHED_RUNS) -> None:
        self.max_runs = max_runs
        self._runs: OrderedDict[str, _Run] = OrderedDict()
        self._lock = threading.Lock()

    def shown(self, memory: LearningMemory, run_id: str, task: TaskSpec, steps: Sequence[Step],
              answers: Sequence[tuple[int, str]], opening: Opening) -> list[Hint]:
        """What the model is shown before its next proposal: the step's rules and the answers given at this step."""
        with self._lock:
            return list(self._synced(memory, run_id, task, steps, answers, opening).shown)

    def check(self, memory: LearningMemory, run_id: str, task: TaskSpec, steps: Sequence[Step],
              answers: Sequence[tuple[int, str]], opening: Opening, action: str) -> list[Hint]:
        """What memory held back that bears on ``action`` (``StepDelivery.check``): non-empty means do not run it
        yet; the caller records ``(len(steps), action)`` in the state. ``[]`` for a proposal answered at this step
        already: proposed again, it runs."""
        with self._lock:
            run = self._synced(memory, run_id, task, steps, answers, opening)
            key = (len(steps), norm(action))
            if key in run.applied:
                return []
            held = run.deliver.check(task, steps, action)
            if held:
                run.applied.append(key)
                run.shown += held
            return held

    def activations(self, memory: LearningMemory, run_id: str, task: TaskSpec, steps: Sequence[Step],
                    answers: Sequence[tuple[int, str]], opening: Opening) -> list[Activation]:
        """One activation per rule delivered so far, at the step it first stood (``StepDelivery.activations``)."""
        with self._lock:
            return self._synced(memory, run_id, task, steps, answers, opening).deliver.activations(run_id)

    def drop(self, run_id: str) -> None:
        """Forget a finished run."""
        with self._lock:
            self._runs.pop(run_id, None)

    def _synced(self, memory: LearningMemory, run_id: str, task: TaskSpec, steps: Sequence[Step],
                answers: Sequence[tuple[int, str]], opening: Opening) -> _Run:
        run = self._runs.get(run_id)
        stale = run is not None and (run.at > len(steps) or any(a not in answers for a in run.applied)
                                     or any(a[0] < run.at and a not in run.applied for a in answers))
        if run is None or stale:  # not held, or the state moved on without it: replay the state
            runs = [r for r in memory.runs if r.tool == task.tool]
            run = _Run(opening().delivery(memory.text_rules(task.tool), runs, memory.config))
            self._runs[run_id] = run
        self._runs.move_to_end(run_id)
        while len(self._runs) > self.max_runs:
            self._runs.popitem(last=False)
        for n in range(max(run.at, 0), len(steps) + 1):
            if n > run.at:
                run.shown, run.at = run.deliver(task, steps[:n]), n
            for step, action in answers:
                if step == n and (step, action) not in run.applied:
                    run.shown += run.deliver.check(task, steps[:n], action)
                    run.applied.append((step, action))
        return run


__all__ = ["MAX_CACHED_RUNS", "Opening", "StepRules", "answered"]
