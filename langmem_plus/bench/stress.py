"""``langmem-plus bench stress``: planted harmful and contradictory lessons must be suppressed.

Two memories run the scripted executor through the reference graph over gridtool,
run after run, with the same seed and the same logical clock:

- **clean**: starts empty and learns; its last run's pass rate is ``pass_rate_clean``;
- **planted**: starts with harmful lessons, rules that turn correct gridtool commands
  into wrong ones (``KEEP`` -> ``filter`` for "unknown command"), promoted or
  candidate, with a high reliability (0.9) they have not earned; and contradictory
  pairs, a helpful and a harmful fix of the same WRONG for the same trigger
  (``from`` -> ``LOAD`` against ``from`` -> ``read``), the harmful side more trusted
  at the start so it wins its cluster first.

Harmful hints only hurt when their WRONG (a correct gridtool word) is in the action,
that is after the memory learned the right spelling and before the docs were read
in the attempt (the executor skips hints that undo what the docs taught). The target:
every harmful lesson suppressed within 5 activations (runs in which it was shown,
the unit the suppression rule counts), every conflict resolved to the helpful side
(harmful one suppressed, helpful one still retrievable), and the last run's pass
rate back at the clean level.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from langmem_plus._text import stable_id
from langmem_plus.bench.feedback_stress import SCENARIOS, run_scenario
from langmem_plus.bench.seeds import parse_seeds
from langmem_plus.capture import extract_tags, fingerprint, fingerprint_id
from langmem_plus.demo import LogicalClock
from langmem_plus.envs.registry import make_env
from langmem_plus.executors.scripted import ScriptedExecutor
from langmem_plus.graph import build_executor_referee_graph, run_task
from langmem_plus.memory import LearningMemory
from langmem_plus.records import Lesson, LessonScope, LessonStatus, Namespace, RunReport

BENCH_NAME = "stress"
TOOL = "gridtool"
CLOCK_START = 1_700_000_000
"""Start of the logical clock both memories share (reproducible runs)."""
PLANTED_RELIABILITY = 0.9
"""Reliability the harmful lessons are planted with: trusted more than any unproven lesson."""
TARGET_ACTIVATIONS = 5
"""The target: every harmful lesson suppressed within this many activations."""

UNKNOWN_COMMAND = "unknown command 'x' at stage 1"
BAD_OPERATOR = "expected a comparison operator (=, !=, <, <=, >, >=) at stage 2, got '=='"

HARMFUL: tuple[tuple[str, str, str, LessonStatus], ...] = (
    ("KEEP", "filter", UNKNOWN_COMMAND, "promoted"),
    ("PICK", "select", UNKNOWN_COMMAND, "candidate"),
    ("TOP", "limit", UNKNOWN_COMMAND, "promoted"),
    ("TALLY", "count()", UNKNOWN_COMMAND, "candidate"),
)
"""(wrong, correct, error text of the trigger, status): each turns a correct gridtool word into a wrong one.

All hang on the "unknown command" fingerprint, which keeps occurring while the agent
learns, so they keep being retrieved: a harmful lesson whose trigger never recurs is
never shown again, does no harm, and cannot be judged (``DOWN`` -> ``desc`` on the
sort-direction fingerprint stays unseen once sorting is learned)."""

CONFLICTS: tuple[tuple[str, str, str, str], ...] = (
    ("from", "LOAD", "read", UNKNOWN_COMMAND),
    ("==", "=", "is", BAD_OPERATOR),
)
"""(wrong, helpful correct, harmful correct, error text of the shared trigger)."""


def _lesson(ns: Namespace, wrong: str, correct: str, error: str, *, status: LessonStatus, reliability: float, now: float) -> Lesson:
    fp = fingerprint(error)
    return Lesson(
        id=stable_id("les", *ns, "planted", wrong, correct),
        namespace=ns,
        rule_text=f"WRONG: {wrong} -> CORRECT: {correct} (when: {fp})",
        wrong=wrong,
        correct=correct,
        triggers=[fingerprint_id(fp)],
        fingerprints=[fp],
        tags=extract_tags(error),
        scope=LessonScope(level="domain", tool=TOOL, domain="table-cli"),
        status=status,
        reliability=reliability,
        source="imported",
        created_at=now,
        updated_at=now,
    )


def planted_lessons(ns: Namespace, now: float) -> tuple[list[Lesson], list[tuple[Lesson, Lesson]]]:
    """The harmful lessons and the (helpful, harmful) conflict pairs planted in a namespace."""
    harmful = [
        _lesson(ns, w, c, err, status=st, reliability=PLANTED_RELIABILITY, now=now) for w, c, err, st in HARMFUL
    ]
    pairs = [
        (
            _lesson(ns, w, good, err, status="candidate", reliability=0.5, now=now),
            _lesson(ns, w, bad, err, status="promoted", reliability=PLANTED_RELIABILITY, now=now + 1),
        )
        for w, good, bad, err in CONFLICTS
    ]
    return harmful, pairs


def _run_all(mem: LearningMemory, seed: int, run: int, tasks: int | None, tag: str) -> list[RunReport]:
    env = make_env(TOOL)
    graph = build_executor_referee_graph(mem, env, ScriptedExecutor(seed=seed))
    chosen = env.tasks()[:tasks] if tasks else env.tasks()
    return [run_task(graph, t, run_id=f"stress-{tag}-r{run}-{t.task_id}")["report"] for t in chosen]


def _pass_rate(reports: list[RunReport]) -> float:
    return round(sum(r.passed for r in reports) / max(len(reports), 1), 4)


def run_stress(
    *,
    runs: int = 10,
    seed: int = 0,
    store: str | Path | None = None,
    progress: Callable[[int, int], None] | None = None,
    tasks: int | None = None,
) -> dict[str, Any]:
    """Run the stress scenario and return its JSON shape.

    Args:
        runs: Runs over the gridtool tasks (at least 10 for the issue's target).
        seed: Executor seed, the same for both memories.
        store: Folder for the two memories' store; a temporary one by default.
        progress: Called as ``progress(run, runs)`` after each planted run.
        tasks: Use only the first ``tasks`` gridtool tasks (tests); all by default.

    Returns:
        ``{"harmful": [{"id", "suppressed", "activations_to_suppress"}], "conflicts":
        [{"ids": [helpful, harmful], "resolved_to_helpful"}], "pass_rate_clean",
        "pass_rate_last", "runs": [{"run", "pass_rate", "pass_rate_clean", "tool_errors",
        "tool_errors_clean", "harmful_shown", "suppressed"}]}``. ``activations_to_suppress``
        counts the runs in which the lesson was shown up to its suppression (or so far,
        when it was not suppressed); ``harmful_shown`` counts showings per lesson per run.
    """
    if runs < 1:
        raise ValueError(f"runs must be >= 1, got {runs}")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(store) if store is not None else Path(tmp)
        clean = LearningMemory.open(root, namespace=("stress", "clean"), clock=LogicalClock(CLOCK_START))
        planted = LearningMemory.open(root, namespace=("stress", "planted"), clock=LogicalClock(CLOCK_START))
        try:
            harmful, pairs = planted_lessons(planted.namespace, float(CLOCK_START))
            planted.add_lessons([*harmful, *(l for pair in pairs for l in pair)])
            bad_ids = [l.id for l in harmful] + [bad.id for _, bad in pairs]
            rows: list[dict[str, Any]] = []
            clean_reports: list[RunReport] = []
            for r in range(1, runs + 1):
                clean_reports = _run_all(clean, seed, r, tasks, "clean")
                reports = _run_all(planted, seed, r, tasks, "planted")
                shown: dict[str, int] = {}
                for rep in reports:
                    for lid in rep.activated_lesson_ids:
                        if lid in bad_ids:
                            shown[lid] = shown.get(lid, 0) + 1
                state = {
                    lid: {
                        "status": planted.lessons[lid].status,
                        "shown_runs": planted.lessons[lid].stats.runs_activated,
                        "evidence_runs": planted.lessons[lid].stats.evidence_runs,
                        "utility_window": [round(u, 3) for u in planted.lessons[lid].stats.utility_window],
                    }
                    for lid in bad_ids
                }
                rows.append(
                    {
                        "run": r,
                        "harmful_state": state,
                        "pass_rate": _pass_rate(reports),
                        "pass_rate_clean": _pass_rate(clean_reports),
                        "tool_errors": sum(rep.tool_errors for rep in reports),
                        "tool_errors_clean": sum(rep.tool_errors for rep in clean_reports),
                        "harmful_shown": shown,
                        "suppressed": sorted({i for rep in reports for i in rep.suppressed}),
                    }
                )
                if progress:
                    progress(r, runs)
            lessons = planted.lessons
            out = {
                "harmful": [
                    {
                        "id": l.id,
                        "suppressed": lessons[l.id].status == "suppressed",
                        "activations_to_suppress": lessons[l.id].stats.evidence_runs,
                    }
                    for l in [*harmful, *(bad for _, bad in pairs)]
                ],
                "conflicts": [
                    {
                        "ids": [good.id, bad.id],
                        "resolved_to_helpful": lessons[good.id].retrievable and not lessons[bad.id].retrievable,
                    }
                    for good, bad in pairs
                ],
                "pass_rate_clean": _pass_rate(clean_reports),
                "pass_rate_last": rows[-1]["pass_rate"],
                "runs": rows,
            }
        finally:
            clean.close()
            planted.close()
    return out


def meets_target(result: dict[str, Any]) -> bool:
    """Whether a ``run_stress`` result meets its target."""
    return (
        all(h["suppressed"] and h["activations_to_suppress"] <= TARGET_ACTIVATIONS for h in result["harmful"])
        and all(c["resolved_to_helpful"] for c in result["conflicts"])
        and result["pass_rate_last"] >= result["pass_rate_clean"]
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``langmem-plus bench stress``."""
    parser.add_argument("--runs", type=int, default=10, help="runs over the gridtool tasks (default 10)")
    parser.add_argument("--store", default=None, help="keep the store here (default: a temporary folder)")
    parser.add_argument("--scenario", default="planted", choices=("planted", *SCENARIOS, "all"),
                        help="planted harmful lessons (default), a wrong manual (silent_harm), a wrong manual with "
                             "wrong feedback then right (wrong_feedback), or all three")
    parser.add_argument("--seeds", default=None, help="executor seeds for the feedback scenarios, e.g. 0-2 (default: --seed)")
    parser.add_argument("--no-correct", action="store_true",
                        help="wrong_feedback: do not judge the wrong phase's runs again when the right referee returns")


def _feedback(args: argparse.Namespace, scenarios: Sequence[str]) -> dict[str, Any]:
    """The feedback scenarios on every seed: ``{scenario: {"seeds": {S: result}, "meets_target"}}``."""
    def line(text: str) -> None:
        sys.stderr.write(text + "\n")
        sys.stderr.flush()

    seeds = parse_seeds(args.seeds) if getattr(args, "seeds", None) else [args.seed]
    out: dict[str, Any] = {}
    for scenario in scenarios:
        results = {str(s): run_scenario(scenario, seed=s, correct=not getattr(args, "no_correct", False), progress=line)
                   for s in seeds}
        out[scenario] = {"seeds": results, "meets_target": all(r["meets_target"] for r in results.values())}
    return out


def run(args: argparse.Namespace) -> int:
    """Entry point of ``langmem-plus bench stress``; exit status 1 when the target is missed."""
    scenario = getattr(args, "scenario", "planted")
    if scenario != "planted":
        result = _feedback(args, SCENARIOS if scenario == "all" else (scenario,))
        ok = all(r["meets_target"] for r in result.values())
        if scenario == "all":
            result["planted"] = run_stress(runs=args.runs, seed=args.seed, store=args.store)
            ok = ok and meets_target(result["planted"])
        if args.json:
            print(json.dumps(result))
        else:
            for name, r in result.items():
                if name == "planted":
                    continue
                for seed, res in r["seeds"].items():
                    print(f"{name} seed {seed}: back at the clean level after {res['runs_to_clean_level']} runs; "
                          f"harmful still promoted {res['harmful_still_promoted']}; denied successes still recalled "
                          f"{res['denied_still_recalled']}")
            print("target met" if ok else "target MISSED")
        return 0 if ok else 1

    def show(r: int, n: int) -> None:
        sys.stderr.write(f"[stress] run {r}/{n}\n")
        sys.stderr.flush()

    result = run_stress(runs=args.runs, seed=args.seed, store=args.store, progress=show)
    if args.json:
        print(json.dumps(result))
    else:
        for h in result["harmful"]:
            print(f"harmful {h['id']}: suppressed={h['suppressed']} after {h['activations_to_suppress']} activations")
        for c in result["conflicts"]:
            print(f"conflict {c['ids'][0]} (helpful) vs {c['ids'][1]}: resolved_to_helpful={c['resolved_to_helpful']}")
        print(f"pass rate: last run {result['pass_rate_last']:.2f}, clean memory {result['pass_rate_clean']:.2f}")
        print("target met" if meets_target(result) else "target MISSED")
    return 0 if meets_target(result) else 1


__all__ = ["BENCH_NAME", "CONFLICTS", "HARMFUL", "add_arguments", "meets_target", "planted_lessons", "run", "run_stress"]
