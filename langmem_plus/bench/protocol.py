"""``langmem-plus bench protocol``: the four-phase tool-learning protocol and the design comparison.

Phases (one memory, one namespace, the reference graph with the scripted executor):

- A, docs-enabled bootstrap: gridtool's training families, first run with an empty
  memory (the docs are the only help), then runs with memory;
- B, new tool: fluxtool's training families, first run with docs, then >= 3 runs with memory;
- C, retention: gridtool's training families again after fluxtool;
- D, cross-task: the held-out family (``aggregate`` by default, kept out of A-C) of each tool.

Per run: pass rate, mean score, steps, tool errors, lesson activations, fingerprint
recurrence (events whose fingerprint already occurred in an earlier run of the tool),
promoted / suppressed counts, and the retrieval precision proxy (activated lessons
with utility > 0 / activated lessons). Then the memory designs are evaluated in two
phases (``designs.evaluation``) and the acceptance checks are computed.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from langmem_plus.bench.designs.baselines import DESIGN_NAMES
from langmem_plus.bench.designs.evaluation import DEFAULT_REPEATS, evaluate_designs
from langmem_plus.demo import LogicalClock
from langmem_plus.envs.registry import make_env
from langmem_plus.executors.scripted import ScriptedExecutor
from langmem_plus.graph import DEFAULT_MAX_STEPS, build_executor_referee_graph, run_task
from langmem_plus.memory import LearningMemory
from langmem_plus.records import RunReport, TaskSpec

BENCH_NAME = "protocol"
HELD_OUT_FAMILY = "aggregate"
"""Task family kept out of phases A-C and run in phase D."""
RUNS_A = 3
"""Phase A runs: one docs-only bootstrap, then runs with memory."""
RUNS_B = 4
"""Phase B runs: fluxtool's first run, then 3 with memory (at least 3)."""
RUNS_C = 1
"""Phase C runs: the retention check."""
RECURRENCE_DROP = 0.5
"""Key-error recurrence on the new tool must drop by at least this fraction (seed 001)."""
RETENTION_TOLERANCE = 0.10
"""Gridtool steps after fluxtool may exceed the steps before by at most this fraction."""
STRESS_RUNS = 10
"""Runs of the stress scenario for the suppression check."""
CLOCK_START = 1_700_000_000.0
"""Logical clock start: recency stays meaningful and runs repeat exactly."""

Progress = Callable[[str], None]
"""progress(message): one line per protocol run, design repeat and stress run."""


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _tasks(tool: str, held_out: bool, family: str, per_family: int | None) -> list[TaskSpec]:
    fams: dict[str, list[TaskSpec]] = {}
    for t in make_env(tool).tasks():
        if (t.family == family) == held_out:
            fams.setdefault(t.family or "", []).append(t)
    return [t for group in fams.values() for t in (group[:per_family] if per_family else group)]


def summarize_run(phase: str, tool: str, run: int, label: str, reports: Sequence[RunReport], seen_fps: Counter[str]) -> dict[str, Any]:
    """One protocol row from the per-task reports of a run; ``seen_fps`` holds the tool's earlier fingerprints."""
    n = max(len(reports), 1)
    fps: Counter[str] = Counter()
    for r in reports:
        fps.update(r.fingerprint_counts)
    utilities = [u for r in reports for u in r.utilities.values()]
    helped = sum(1 for u in utilities if u > 0)
    harmed = sum(1 for u in utilities if u < 0)
    last = reports[-1].lessons_by_status if reports else {}
    return {
        "phase": phase,
        "tool": tool,
        "run": run,
        "label": label,
        "tasks": len(reports),
        "pass_rate": round(sum(r.passed for r in reports) / n, 4),
        "passed": [r.passed for r in reports],
        "score": round(sum(r.score for r in reports) / n, 4),
        "steps": sum(r.steps for r in reports),
        "tool_errors": sum(r.tool_errors for r in reports),
        "repeated_errors": sum(r.repeated_errors for r in reports),
        "lesson_activations": sum(r.lesson_activations for r in reports),
        "fingerprint_counts": dict(sorted(fps.items())),
        "recurrence": sum(c for fp, c in fps.items() if fp in seen_fps),
        "promoted": sum(len(r.promoted) for r in reports),
        "suppressed": sum(len(r.suppressed) for r in reports),
        "lessons_by_status": dict(last),
        "activated_judged": len(utilities),
        "helped": helped,
        "harmed": harmed,
        "precision": round(helped / len(utilities), 4) if utilities else None,
    }


def run_phases(
    *,
    seed: int = 0,
    store: str | Path | None = None,
    runs_a: int = RUNS_A,
    runs_b: int = RUNS_B,
    runs_c: int = RUNS_C,
    per_family: int | None = None,
    held_out: str = HELD_OUT_FAMILY,
    max_steps: int = DEFAULT_MAX_STEPS,
    progress: Progress | None = None,
) -> list[dict[str, Any]]:
    """Phases A-D on one memory; one row per run (see ``summarize_run``)."""
    plan = [("A", "gridtool", False, runs_a), ("B", "fluxtool", False, runs_b), ("C", "gridtool", False, runs_c)]
    plan += [("D", "gridtool", True, 1), ("D", "fluxtool", True, 1)]
    tmp = tempfile.TemporaryDirectory(prefix="lmp-protocol-") if store is None else None
    root = Path(tmp.name) if tmp else Path(store)  # type: ignore[arg-type]
    memory = LearningMemory.open(root, namespace=("bench", "protocol", str(seed)), clock=LogicalClock(CLOCK_START))
    seen: dict[str, Counter[str]] = {}
    rows: list[dict[str, Any]] = []
    try:
        executor = ScriptedExecutor(seed=seed)
        compiled = {
            tool: build_executor_referee_graph(memory, make_env(tool), executor, max_steps=max_steps)
            for tool in ("gridtool", "fluxtool")
        }
        for phase, tool, is_held_out, runs in plan:
            tasks = _tasks(tool, is_held_out, held_out, per_family)
            for r in range(1, runs + 1):
                started = time.perf_counter()
                reports = [
                    run_task(compiled[tool], t, run_id=f"p{phase}-{tool}-r{r}-{t.task_id}", max_steps=max_steps)["report"]
                    for t in tasks
                ]
                label = "docs" if phase in "AB" and r == 1 else ("held-out" if phase == "D" else "memory")
                tool_seen = seen.setdefault(tool, Counter())
                row = summarize_run(phase, tool, r, label, reports, tool_seen)
                for rep in reports:
                    tool_seen.update(rep.fingerprint_counts)
                rows.append(row)
                if progress:
                    progress(
                        f"[protocol] phase {phase} {tool} run {r}/{runs}: pass {row['pass_rate']:.2f} "
                        f"steps {row['steps']} errors {row['tool_errors']} ({time.perf_counter() - started:.1f}s)"
                    )
    finally:
        memory.close()
        if tmp:
            tmp.cleanup()
    return rows


def stress_suppression(
    seed: int, progress: Progress | None = None, *, runs: int = STRESS_RUNS, tasks: int | None = None
) -> bool | None:
    """Whether the issue-4 stress scenario suppresses a harmful lesson; None when it is not available.

    ``runs`` and ``tasks`` size the scenario (tests run a slice; the bench the full ``STRESS_RUNS``).
    """
    try:
        from langmem_plus.bench.stress import run_stress  # type: ignore[import-not-found,unused-ignore]
    except ImportError as exc:
        if progress:
            progress(f"[protocol] suppression check skipped: bench.stress.run_stress is not available ({exc})")
        return None
    def tick(run: int, runs: int) -> None:
        if progress:
            progress(f"[stress] run {run}/{runs}")

    result = run_stress(runs=runs, seed=seed, progress=tick, tasks=tasks)
    return any(bool(h.get("suppressed")) for h in result.get("harmful", []))


def acceptance(phases: Sequence[dict[str, Any]], designs: dict[str, dict[str, Any]], suppression: bool | None) -> dict[str, bool]:
    """The acceptance checks (seed 001's criteria) and the design target, as booleans."""
    b = [p for p in phases if p["phase"] == "B"]
    key = set(b[0]["fingerprint_counts"]) if b else set()
    first = sum(b[0]["fingerprint_counts"].get(fp, 0) for fp in key) if b else 0
    last = sum(b[-1]["fingerprint_counts"].get(fp, 0) for fp in key) if b else 0
    a = [p for p in phases if p["phase"] == "A"]
    c = [p for p in phases if p["phase"] == "C"]
    helped = sum(p["helped"] for p in phases)
    harmed = sum(p["harmed"] for p in phases)
    out = {
        "key_error_recurrence_drops_50pct": bool(first > 0 and (first - last) / first >= RECURRENCE_DROP),
        "retention_steps_within_10pct": bool(a and c and c[0]["steps"] <= a[-1]["steps"] * (1 + RETENTION_TOLERANCE)),
        "suppression_in_stress": bool(suppression),
        "activations_help_more_than_harm": helped > harmed,
    }
    if "langmem_plus" in designs and len(designs) > 1:
        ours = designs["langmem_plus"]
        others = [d for n, d in designs.items() if n != "langmem_plus"]
        out["langmem_plus_fewest_tool_errors"] = all(ours["tool_errors"] < d["tool_errors"] for d in others)
        out["langmem_plus_steps_not_above_any"] = all(ours["steps"] <= d["steps"] for d in others)
    return out


def run_protocol(
    *,
    seed: int = 0,
    repeats: int = DEFAULT_REPEATS,
    designs: Sequence[str] = DESIGN_NAMES,
    per_family: int | None = None,
    runs_a: int = RUNS_A,
    runs_b: int = RUNS_B,
    check_stress: bool = True,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """The whole bench: ``{"acceptance": {...}, "designs": {...}, "phases": [...]}``."""
    phases = run_phases(seed=seed, runs_a=runs_a, runs_b=runs_b, per_family=per_family, progress=progress)
    results = evaluate_designs(designs=designs, repeats=repeats, seed=seed, per_family=per_family, progress=progress)
    suppression = stress_suppression(seed, progress) if check_stress else None
    return {"acceptance": acceptance(phases, results, suppression), "designs": results, "phases": phases}


def format_text(result: dict[str, Any]) -> str:
    """Tables for people: phases, designs, acceptance."""
    lines = [f"{'run':<14}{'pass':>6}{'steps':>7}{'errors':>8}{'recur':>7}{'activ':>7}{'prom':>6}{'supp':>6}{'prec':>7}"]
    for p in result["phases"]:
        prec = "-" if p["precision"] is None else f"{p['precision']:.2f}"
        name = f"{p['phase']}{p['run']} {p['tool'][:4]} {p['label'][:4]}"
        lines.append(
            f"{name:<14}{p['pass_rate']:>6.2f}{p['steps']:>7}{p['tool_errors']:>8}{p['recurrence']:>7}"
            f"{p['lesson_activations']:>7}{p['promoted']:>6}{p['suppressed']:>6}{prec:>7}"
        )
    lines.append("")
    lines.append(f"{'design':<22}{'pass':>6}{'errors':>8}{'steps':>7}{'ctx tok/task':>14}")
    for name, d in result["designs"].items():
        lines.append(f"{name:<22}{d['pass_rate']:>6.2f}{d['tool_errors']:>8}{d['steps']:>7}{d['context_tokens_per_task']:>14.1f}")
    lines.append("")
    lines += [f"{k}: {v}" for k, v in result["acceptance"].items()]
    return "\n".join(lines)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``langmem-plus bench protocol``."""
    parser.add_argument("--repeats", type=int, default=DEFAULT_REPEATS, help=f"design repeats (default {DEFAULT_REPEATS})")
    parser.add_argument("--per-family", type=int, default=None, help="tasks per family (default: all)")
    parser.add_argument("--runs-a", type=int, default=RUNS_A, help=f"phase A runs (default {RUNS_A})")
    parser.add_argument("--runs-b", type=int, default=RUNS_B, help=f"phase B runs (default {RUNS_B}, at least 2)")
    parser.add_argument("--out", default=None, help="also write the JSON result to this file")
    parser.add_argument("--skip-stress", action="store_true", help="skip the stress scenario (its check is then false)")


def run(args: argparse.Namespace) -> int:
    """Entry point of ``langmem-plus bench protocol``."""
    started = time.perf_counter()
    if args.runs_a < 1 or args.runs_b < 2:
        print("langmem-plus: --runs-a must be >= 1 and --runs-b >= 2", file=sys.stderr)
        return 2
    result = run_protocol(
        seed=args.seed,
        repeats=args.repeats,
        per_family=args.per_family,
        runs_a=args.runs_a,
        runs_b=args.runs_b,
        check_stress=not args.skip_stress,
        progress=_stderr,
    )
    _stderr(f"[protocol] done in {time.perf_counter() - started:.1f}s")
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1))
    print(json.dumps(result) if args.json else format_text(result))
    return 0


__all__ = ["BENCH_NAME", "HELD_OUT_FAMILY", "acceptance", "add_arguments", "format_text", "run", "run_phases", "run_protocol", "summarize_run"]
