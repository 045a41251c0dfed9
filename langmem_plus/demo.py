"""The demo: the reference graph and the scripted executor over a tool's tasks, run after run.

Each demo run attempts every task of the tool once. Between attempts memory
captures failures, synthesizes lessons and hands them back, so a user sees tool
errors fall from run to run. Progress goes to stderr; results are returned as
plain data for the CLI to print as a table or JSON.
"""

from __future__ import annotations

import sys
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, TextIO

from langmem_plus.config import MemoryConfig
from langmem_plus.envs.registry import make_env
from langmem_plus.executors.scripted import ScriptedExecutor
from langmem_plus.graph import DEFAULT_MAX_STEPS, build_executor_referee_graph, run_task
from langmem_plus.memory import LearningMemory
from langmem_plus.records import RunReport


@dataclass
class DemoRun:
    """One row of the demo table: every task of the tool attempted once."""

    run: int
    pass_rate: float
    steps: int
    tool_errors: int
    repeated_errors: int
    lesson_activations: int
    lessons: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0


class LogicalClock:
    """A clock that advances one second per reading: recency stays meaningful, runs repeat exactly."""

    def __init__(self, start: float) -> None:
        self._now = float(int(start))

    def __call__(self) -> float:
        self._now += 1.0
        return self._now


Progress = Callable[[int, int, int, int, str], None]
"""progress(run, runs, task_index, tasks, task_id)."""


def stderr_progress(stream: TextIO = sys.stderr) -> Progress:
    """A progress printer: one rewritten line on a terminal, one line per run otherwise."""
    tty = stream.isatty()

    def show(run: int, runs: int, i: int, n: int, task_id: str) -> None:
        if tty:
            stream.write(f"\r\x1b[2K[run {run}/{runs}] task {i}/{n} {task_id}")
            if i == n:
                stream.write("\n")
        elif i == n:
            stream.write(f"[run {run}/{runs}] {n} tasks done\n")
        stream.flush()

    return show


def summarize(run: int, reports: list[RunReport], lessons: dict[str, int], seconds: float) -> DemoRun:
    """Aggregate one demo run's per-task reports into a table row."""
    n = max(len(reports), 1)
    return DemoRun(
        run=run,
        pass_rate=round(sum(r.passed for r in reports) / n, 4),
        steps=sum(r.steps for r in reports),
        tool_errors=sum(r.tool_errors for r in reports),
        repeated_errors=sum(r.repeated_errors for r in reports),
        lesson_activations=sum(r.lesson_activations for r in reports),
        lessons=dict(lessons),
        seconds=round(seconds, 2),
    )


def run_demo(
    *,
    runs: int = 3,
    tool: str = "gridtool",
    store: str | Path = ".langmem_plus",
    url: str | None = None,
    seed: int = 0,
    namespace: tuple[str, ...] | None = None,
    config: MemoryConfig | None = None,
    max_steps: int = DEFAULT_MAX_STEPS,
    progress: Progress | None = None,
) -> list[DemoRun]:
    """Run the demo and return one DemoRun per run. A second call on the same store continues learning."""
    if runs < 1:
        raise ValueError(f"runs must be >= 1, got {runs}")
    env = make_env(tool)
    memory = LearningMemory.open(
        store, url=url, namespace=namespace or ("demo", tool), config=config, clock=LogicalClock(start=time.time())
    )
    try:
        graph = build_executor_referee_graph(memory, env, ScriptedExecutor(seed=seed), max_steps=max_steps)
        tasks = env.tasks()
        session = uuid.uuid4().hex[:8]
        rows: list[DemoRun] = []
        for r in range(1, runs + 1):
            started = time.perf_counter()
            reports: list[RunReport] = []
            for i, task in enumerate(tasks, 1):
                final = run_task(graph, task, run_id=f"demo-{session}-r{r}-{task.task_id}", max_steps=max_steps)
                reports.append(final["report"])
                if progress:
                    progress(r, runs, i, len(tasks), task.task_id)
            rows.append(summarize(r, reports, memory.lessons_by_status(), time.perf_counter() - started))
        return rows
    finally:
        memory.close()


def rows_as_json(rows: list[DemoRun]) -> dict[str, object]:
    """The ``--json`` shape: ``{"runs": [{"run": 1, "pass_rate": ..., ...}]}``."""
    out = []
    for row in rows:
        d = asdict(row)
        d.pop("seconds", None)
        out.append(d)
    return {"runs": out}


def rows_as_table(rows: list[DemoRun]) -> str:
    """A fixed-width table of the demo rows, for people."""
    head = ("run", "pass_rate", "steps", "tool_errors", "repeated", "activations", "candidate", "promoted", "suppressed", "archived", "secs")
    lines = ["  ".join(f"{h:>11}" for h in head)]
    for r in rows:
        vals = (
            r.run,
            f"{r.pass_rate:.2f}",
            r.steps,
            r.tool_errors,
            r.repeated_errors,
            r.lesson_activations,
            r.lessons.get("candidate", 0),
            r.lessons.get("promoted", 0),
            r.lessons.get("suppressed", 0),
            r.lessons.get("archived", 0),
            f"{r.seconds:.1f}",
        )
        lines.append("  ".join(f"{v:>11}" for v in vals))
    return "\n".join(lines)


__all__ = ["DemoRun", "LogicalClock", "rows_as_json", "rows_as_table", "run_demo", "stderr_progress", "summarize"]
