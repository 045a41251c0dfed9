"""``langmem-plus bench growth``: does memory stay bounded over hundreds of runs?

Runs the scripted executor through the reference graph over every task of the
demo tools (gridtool and fluxtool, one namespace each, as the demo does), run
after run, with a different executor seed per run so its second guesses vary and
new mistakes keep appearing. After each run it records the number of lessons per
status, the non-archived total, stored episodes and skills, and the run's tool
errors. A memory that only grows would show ``live`` rising with the run count; a
bounded one levels off (dedup merges relearned rules, suppression and archiving
retire the rest).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from langmem_plus.demo import LogicalClock
from langmem_plus.envs.registry import make_env
from langmem_plus.executors.scripted import ScriptedExecutor
from langmem_plus.graph import build_executor_referee_graph, run_task
from langmem_plus.memory import LearningMemory

BENCH_NAME = "growth"
DEMO_TOOLS = ("gridtool", "fluxtool")
"""The demo tool set."""


def run_growth(
    *,
    runs: int = 200,
    tools: tuple[str, ...] = DEMO_TOOLS,
    seed: int = 0,
    store: str | Path | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Run ``runs`` demo runs over ``tools`` and return the per-run memory size curve.

    Returns:
        ``{"runs": [{"run", "live", "by_status", "episodes", "skills", "tool_errors",
        "pass_rate"}], "live_first": int, "live_max": int, "live_last": int,
        "live_at": {run: live}}`` where ``live`` counts non-archived lessons over all tools.
    """
    if runs < 1:
        raise ValueError(f"runs must be >= 1, got {runs}")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(store) if store is not None else Path(tmp)
        clock = LogicalClock(start=1_700_000_000)
        mems = {t: LearningMemory.open(root, namespace=("growth", t), clock=clock) for t in tools}
        envs = {t: make_env(t) for t in tools}
        rows: list[dict[str, Any]] = []
        try:
            for r in range(1, runs + 1):
                errors = passed = total = 0
                for t in tools:
                    graph = build_executor_referee_graph(mems[t], envs[t], ScriptedExecutor(seed=seed + r))
                    for task in envs[t].tasks():
                        rep = run_task(graph, task, run_id=f"growth-r{r}-{t}-{task.task_id}")["report"]
                        errors += rep.tool_errors
                        passed += int(rep.passed)
                        total += 1
                by_status: dict[str, int] = {}
                for m in mems.values():
                    for k, v in m.lessons_by_status().items():
                        by_status[k] = by_status.get(k, 0) + v
                rows.append(
                    {
                        "run": r,
                        "live": sum(v for k, v in by_status.items() if k != "archived"),
                        "by_status": by_status,
                        "episodes": sum(m.store.count("episodes") for m in mems.values()),
                        "skills": sum(m.store.count("skills") for m in mems.values()),
                        "tool_errors": errors,
                        "pass_rate": round(passed / max(total, 1), 4),
                    }
                )
                if progress:
                    progress(r, runs)
        finally:
            for m in mems.values():
                m.close()
    lives = [row["live"] for row in rows]
    marks = sorted({m for m in (1, 5, 10, 25, 50, 100, 150, 200, runs) if m <= runs})
    return {
        "runs": rows,
        "live_first": lives[0],
        "live_max": max(lives),
        "live_last": lives[-1],
        "live_at": {str(m): lives[m - 1] for m in marks},
    }


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``langmem-plus bench growth``."""
    parser.add_argument("--runs", type=int, default=200, help="runs over every task of every tool (default 200)")
    parser.add_argument("--store", default=None, help="keep the store here (default: a temporary folder)")


def run(args: argparse.Namespace) -> int:
    """Entry point of ``langmem-plus bench growth``."""
    started = time.perf_counter()

    def show(r: int, n: int) -> None:
        sys.stderr.write(f"[growth] run {r}/{n} ({time.perf_counter() - started:.0f}s)\n")
        sys.stderr.flush()

    out = run_growth(runs=args.runs, seed=args.seed, store=args.store, progress=show)
    if args.json:
        print(json.dumps(out))
    else:
        print("run  live  candidate  promoted  suppressed  archived  episodes  skills  tool_errors")
        for row in out["runs"]:
            s = row["by_status"]
            print(
                f"{row['run']:>3}  {row['live']:>4}  {s.get('candidate', 0):>9}  {s.get('promoted', 0):>8}  "
                f"{s.get('suppressed', 0):>10}  {s.get('archived', 0):>8}  {row['episodes']:>8}  {row['skills']:>6}  "
                f"{row['tool_errors']:>11}"
            )
    return 0


__all__ = ["BENCH_NAME", "DEMO_TOOLS", "add_arguments", "run", "run_growth"]
