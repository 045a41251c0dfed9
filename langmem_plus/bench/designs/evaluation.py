"""Two-phase evaluation of memory designs: collection, then deployment (static and dynamic).

Per repeat (a fixed seed each) and per design, on the same tasks with the same
executor:

1. collection: every collection task is attempted with no retrieval and the design's
   ``general_update`` is called after each trajectory;
2. deployment, static: every deployment task is attempted with the design's
   ``general_retrieve`` context, memory frozen;
3. deployment, dynamic: the same tasks again from the post-collection memory, now
   with ``general_update`` after each task.

Collection and deployment use different tasks: within each family of each tool,
tasks alternate between the two (so deployment needs transfer within a family).
Per design and mode the figures are the mean and standard error over repeats.
"""

from __future__ import annotations

import math
import random
import statistics
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from langmem_plus.bench.designs.base import (
    Context,
    MemoryDesign,
    run_episode,
    tool_errors,
)
from langmem_plus.bench.designs.baselines import DESIGN_NAMES, make_design
from langmem_plus.envs.base import Env
from langmem_plus.envs.registry import make_env
from langmem_plus.executors.scripted import ScriptedExecutor
from langmem_plus.records import TaskSpec

DEFAULT_REPEATS = 3
"""Repeats with fixed seeds (seed, seed + 1, ...) per design."""
DEFAULT_TOOLS: tuple[str, ...] = ("gridtool", "fluxtool")
"""Tools whose tasks the designs are evaluated on."""
MODES: tuple[str, ...] = ("static", "dynamic")
"""Deployment modes: memory frozen, or updated after each task."""

DesignProgress = Callable[[str], None]
"""progress(message): one line per design and repeat."""


@dataclass(frozen=True)
class Split:
    """Collection and deployment tasks of one tool."""

    env: Env
    collection: list[TaskSpec]
    deployment: list[TaskSpec]


def split_tasks(tasks: Sequence[TaskSpec], per_family: int | None = None) -> tuple[list[TaskSpec], list[TaskSpec]]:
    """Alternate each family's tasks between collection (1st, 3rd, ...) and deployment (2nd, 4th, ...).

    ``per_family`` keeps only that many tasks of each family first (for small runs).
    """
    families: dict[str, list[TaskSpec]] = {}
    for t in tasks:
        families.setdefault(t.family or "", []).append(t)
    collection: list[TaskSpec] = []
    deployment: list[TaskSpec] = []
    for fam in families.values():
        kept = fam[:per_family] if per_family else fam
        collection += kept[0::2]
        deployment += kept[1::2]
    return collection, deployment


def _attempt(design: MemoryDesign, split: Split, task: TaskSpec, seed: int, run_id: str, *, retrieve: bool, update: bool) -> dict[str, Any]:
    ctx = design.general_retrieve(task, run_id=run_id) if retrieve else Context()
    traj = run_episode(split.env, ScriptedExecutor(seed=seed), task, ctx, run_id=run_id)
    if update:
        design.general_update(traj)
    return {
        "task_id": task.task_id,
        "passed": bool(traj.verdict and traj.verdict.passed),
        "steps": len(traj.steps),
        "tool_errors": tool_errors(traj),
        "context_tokens": ctx.tokens,
    }


def _totals(rows: list[dict[str, Any]]) -> dict[str, float]:
    n = max(len(rows), 1)
    return {
        "pass_rate": sum(r["passed"] for r in rows) / n,
        "tool_errors": float(sum(r["tool_errors"] for r in rows)),
        "steps": float(sum(r["steps"] for r in rows)),
        "context_tokens_per_task": sum(r["context_tokens"] for r in rows) / n,
    }


def run_design_once(name: str, splits: Sequence[Split], seed: int, repeat: int) -> dict[str, list[dict[str, Any]]]:
    """One repeat of one design: per-task rows of its collection, static and dynamic phases."""
    design = make_design(name)
    rng = random.Random(f"{seed}:{repeat}")
    order = [(s, t) for s in splits for t in s.deployment]
    rng.shuffle(order)
    out: dict[str, list[dict[str, Any]]] = {"collection": [], "static": [], "dynamic": []}
    try:
        for s in splits:
            for t in s.collection:
                out["collection"].append(_attempt(design, s, t, seed, f"r{repeat}-c-{t.task_id}", retrieve=False, update=True))
        for s, t in order:
            out["static"].append(_attempt(design, s, t, seed, f"r{repeat}-s-{t.task_id}", retrieve=True, update=False))
        for s, t in order:
            out["dynamic"].append(_attempt(design, s, t, seed, f"r{repeat}-d-{t.task_id}", retrieve=True, update=True))
    finally:
        design.close()
    return out


def mean_se(xs: Sequence[float]) -> tuple[float, float]:
    """Mean and standard error of the mean (0 with one value).

    Example:
        >>> mean_se([1.0, 2.0, 3.0])
        (2.0, 0.5774)
    """
    if not xs:
        return 0.0, 0.0
    m = statistics.fmean(xs)
    se = statistics.stdev(xs) / math.sqrt(len(xs)) if len(xs) > 1 else 0.0
    return round(m, 4), round(se, 4)


def summarize_design(repeats: list[dict[str, list[dict[str, Any]]]]) -> dict[str, Any]:
    """A design's figures: headline numbers from the dynamic phase, mean and SE per mode.

    Headline ``tool_errors`` and ``steps`` are integer totals over all repeats of the
    dynamic deployment phase; ``pass_rate`` and ``context_tokens_per_task`` are
    per-task means over the same attempts.
    """
    out: dict[str, Any] = {}
    dyn = [row for rep in repeats for row in rep["dynamic"]]
    head = _totals(dyn)
    out["pass_rate"] = round(head["pass_rate"], 4)
    out["tool_errors"] = int(head["tool_errors"])
    out["steps"] = int(head["steps"])
    out["context_tokens_per_task"] = round(head["context_tokens_per_task"], 2)
    out["repeats"] = len(repeats)
    out["tasks_per_repeat"] = len(repeats[0]["dynamic"]) if repeats else 0
    for mode in ("collection", *MODES):
        per = [_totals(rep[mode]) for rep in repeats]
        out[mode] = {k: dict(zip(("mean", "se"), mean_se([p[k] for p in per]))) for k in per[0]} if per else {}
    curve: list[list[int]] = [[0] * len(repeats[0]["dynamic"]) for _ in repeats] if repeats else []
    for r, rep in enumerate(repeats):
        total = 0
        for i, row in enumerate(rep["dynamic"]):
            total += row["tool_errors"]
            curve[r][i] = total
    out["dynamic_cumulative_errors"] = [round(statistics.fmean(c[i] for c in curve), 3) for i in range(len(curve[0]))] if curve else []
    return out


def evaluate_designs(
    *,
    designs: Sequence[str] = DESIGN_NAMES,
    tools: Sequence[str] = DEFAULT_TOOLS,
    repeats: int = DEFAULT_REPEATS,
    seed: int = 0,
    per_family: int | None = None,
    progress: DesignProgress | None = None,
) -> dict[str, dict[str, Any]]:
    """Run the two-phase evaluation for every design; ``{name: figures}`` (see ``summarize_design``).

    Args:
        designs: Design names (``DESIGN_NAMES`` by default).
        tools: Tools whose tasks are used.
        repeats: Repeats; repeat ``r`` uses executor seed ``seed + r``.
        seed: Base seed; the whole evaluation repeats exactly for the same seed.
        per_family: Keep only this many tasks per family (small runs, tests).
        progress: Called with one line per design and repeat.
    """
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    splits = []
    for tool in tools:
        env = make_env(tool)
        col, dep = split_tasks(env.tasks(), per_family)
        splits.append(Split(env, col, dep))
    results: dict[str, dict[str, Any]] = {}
    for name in designs:
        reps = []
        for r in range(repeats):
            reps.append(run_design_once(name, splits, seed + r, r))
            if progress:
                progress(f"[designs] {name} repeat {r + 1}/{repeats} done")
        results[name] = summarize_design(reps)
    return results


def stderr_lines(message: str) -> None:
    """Progress printer for ``evaluate_designs``: one line on stderr."""
    print(message, file=sys.stderr, flush=True)


__all__ = [
    "DEFAULT_REPEATS",
    "DEFAULT_TOOLS",
    "MODES",
    "Split",
    "evaluate_designs",
    "mean_se",
    "run_design_once",
    "split_tasks",
    "stderr_lines",
]
