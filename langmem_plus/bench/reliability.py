"""``langmem-plus bench reliability``: many writers on one namespace; what was reported against what was stored.

Three rounds on a real ``chroma run`` server on 127.0.0.1, started and stopped here:

1. **Processes**: N worker processes each run R attempts of gridtool's tasks through the
   reference graph (scripted executor) on one namespace. Each worker acknowledges every
   run whose ``end_run`` returned, with the lesson activations and the episodes its report
   counted. Then a fresh memory reads what Chroma holds: run records, the activations in
   the lessons' stats, the sightings in the episodes' counts, and live lessons that say
   the same rule under two ids.
2. **Kills**: K times, a worker runs attempts and imports lessons on its own local
   snapshot until it is SIGKILLed at a random moment (seeded). The store must then open
   from that same snapshot folder, answer a query, and hold every run and lesson whose
   write call had returned before the kill, with all of each such run's evidence (the
   activations it reported).
3. **Threads**: T threads retrieving (and an asyncio gather of retrievals) while the
   main thread runs attempts; exceptions are counted.

Reported: runs, activations and episodes reported vs stored, duplicate live lessons, run records
lost, kill rounds survived, records lost after kills, exceptions in threads. The target
is nothing lost, no duplicate, no exception with 8 processes x 50 runs and
20 kills.

A worker is this module run as ``python -m langmem_plus.bench.reliability --worker ...``:
it prints one JSON line per acknowledged write on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

BENCH_NAME = "reliability"
NAMESPACE = ("bench", "reliability")
"""The one namespace every writer shares."""
KILL_DELAY_S = (0.5, 4.0)
"""A kill lands this long (uniform, seeded) after the worker's first acknowledgement."""
WORKER_START_TIMEOUT_S = 120.0
"""How long a kill-round worker may take to acknowledge its first write."""

Progress = Callable[[str], None]


# --------------------------------------------------------------------------- the worker


def _attempts(url: str, audit_dir: str, worker: int, runs: int, session: str, seed: int, lessons_every: int) -> None:
    """Run ``runs`` attempts (forever when 0) and print an acknowledgement after each write returns."""
    from langmem_plus.bench.foundation import synthetic_lessons
    from langmem_plus.envs.registry import make_env
    from langmem_plus.executors.scripted import ScriptedExecutor
    from langmem_plus.graph import build_executor_referee_graph, run_task
    from langmem_plus.memory import LearningMemory

    env = make_env("gridtool")
    tasks = env.tasks()
    memory = LearningMemory.open(url=url, namespace=NAMESPACE, audit_dir=audit_dir)
    graph = build_executor_referee_graph(memory, env, ScriptedExecutor(seed=seed + worker))
    i = 0
    while runs == 0 or i < runs:
        task = tasks[(worker + i) % len(tasks)]
        run_id = f"{session}-w{worker}-r{i}"
        report = run_task(graph, task, run_id=run_id)["report"]
        print(json.dumps({"run": run_id, "activations": report.lesson_activations, "episodes": report.episodes_seen}),
              flush=True)
        if lessons_every and i % lessons_every == 0:
            imported = synthetic_lessons(3, NAMESPACE, seed=seed * 1000 + worker * 100 + i)
            ids = memory.add_lessons(imported)
            print(json.dumps({"lessons": ids}), flush=True)
        i += 1
    memory.close()


def _worker_cli(argv: Sequence[str]) -> int:
    p = argparse.ArgumentParser(prog="langmem_plus.bench.reliability --worker")
    p.add_argument("--worker", type=int, required=True)
    p.add_argument("--url", required=True)
    p.add_argument("--audit-dir", required=True)
    p.add_argument("--runs", type=int, required=True, help="0: until killed")
    p.add_argument("--session", required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--lessons-every", type=int, default=0)
    a = p.parse_args(argv)
    _attempts(a.url, a.audit_dir, a.worker, a.runs, a.session, a.seed, a.lessons_every)
    return 0


def _spawn(url: str, audit_dir: Path, worker: int, runs: int, session: str, seed: int, lessons_every: int = 0) -> subprocess.Popen[str]:
    cmd = [
        sys.executable, "-m", "langmem_plus.bench.reliability", "--worker", str(worker), "--url", url,
        "--audit-dir", str(audit_dir), "--runs", str(runs), "--session", session, "--seed", str(seed),
        "--lessons-every", str(lessons_every),
    ]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)


def _acks(lines: Sequence[str]) -> tuple[dict[str, int], list[str], int]:
    """Acknowledged runs (run id -> activations), lesson ids and episodes seen, from a worker's complete JSON lines."""
    runs: dict[str, int] = {}
    episodes = 0
    lessons: list[str] = []
    for line in lines:
        try:
            ack = json.loads(line)
        except json.JSONDecodeError:  # a line torn by the kill was never acknowledged
            continue
        if "run" in ack:
            runs[str(ack["run"])] = int(ack["activations"])
            episodes += int(ack.get("episodes", 0))
        lessons += [str(i) for i in ack.get("lessons", [])]
    return runs, lessons, episodes


# --------------------------------------------------------------------------- reading what was stored


def _stored(url: str, audit_dir: Path) -> Any:
    from langmem_plus.memory import LearningMemory

    return LearningMemory.open(url=url, namespace=NAMESPACE, audit_dir=audit_dir)


def duplicate_live_lessons(lessons: Sequence[Any]) -> int:
    """Live lessons beyond the first that state the same rule (WRONG, CORRECT, triggers) under another id."""
    groups = Counter(
        (l.wrong, l.correct, tuple(sorted(l.triggers)), l.rule_text if not l.wrong else "")
        for l in lessons
        if l.status not in ("suppressed", "archived")
    )
    return sum(n - 1 for n in groups.values() if n > 1)


def round_processes(url: str, root: Path, processes: int, runs: int, seed: int, progress: Progress) -> dict[str, Any]:
    """N processes x R attempts on one namespace; what they reported against what a fresh reader finds."""
    session = f"p{uuid.uuid4().hex[:6]}"
    workers = [_spawn(url, root / f"proc-{w}", w, runs, session, seed) for w in range(processes)]
    reported: dict[str, int] = {}
    failed = episodes_reported = 0
    for w, proc in enumerate(workers):
        out, err = proc.communicate()
        got, _, episodes = _acks(out.splitlines())
        reported.update(got)
        episodes_reported += episodes
        if proc.returncode != 0:
            failed += 1
            progress(f"[reliability] worker {w} exited {proc.returncode}: {err.strip().splitlines()[-1:]}")
        progress(f"[reliability] worker {w + 1}/{processes} done: {len(got)} runs")
    with _stored(url, root / "reader") as memory:
        stored_runs = {r.run_id for r in memory.runs if r.run_id.startswith(session)}
        lessons = memory.list_lessons()
        stored_activations = sum(l.stats.activations for l in lessons)
        duplicates = duplicate_live_lessons(lessons)
        episodes_stored = sum(e.count for e in memory.episodes())
    return {
        "runs": len(reported),
        "workers_failed": failed,
        "activations_reported": sum(reported.values()),
        "activations_stored": stored_activations,
        "run_records_lost": len(set(reported) - stored_runs),
        "episodes_reported": episodes_reported,
        "episodes_stored": episodes_stored,
        "duplicate_live_lessons": duplicates,
    }


def _kill_round(url: str, snapshot_dir: Path, rnd: int, rng: random.Random, session: str, seed: int) -> dict[str, Any]:
    """One worker, killed with SIGKILL a random moment after its first acknowledgement; then the checks."""
    proc = _spawn(url, snapshot_dir, 100 + rnd, 0, f"{session}-k{rnd}", seed, lessons_every=2)
    lines: list[str] = []
    first = threading.Event()

    def read() -> None:
        for line in proc.stdout or ():
            lines.append(line)
            first.set()
        first.set()  # the worker ended (it died at its start): no need to wait out the timeout

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    started = first.wait(WORKER_START_TIMEOUT_S)
    if started:
        time.sleep(rng.uniform(*KILL_DELAY_S))
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    reader.join(timeout=10)
    if proc.stderr is not None:
        proc.stderr.close()
    acked_runs, acked_lessons, _ = _acks(lines)
    try:
        with _stored(url, snapshot_dir) as memory:
            from langmem_plus.records import TaskSpec

            memory.retrieve_pre_run(TaskSpec(task_id="probe", goal="names of people over 30", tool="gridtool"))
            runs = {r.run_id for r in memory.runs}
            shown: Counter[str] = Counter()
            for lesson in memory.list_lessons():
                shown.update({ev.run_id: ev.shown for ev in memory.evidence(lesson.id)})
            lost = (
                len(set(acked_runs) - runs)
                + sum(1 for i in acked_lessons if memory.get_lesson(i) is None)
                + sum(1 for r, n in acked_runs.items() if shown[r] != n)  # a run's evidence, all of it or none
            )
        return {"survived": True, "acknowledged": len(acked_runs) + len(acked_lessons), "lost": lost, "error": ""}
    except Exception as exc:  # the round's finding: the store did not open or answer after the kill
        return {"survived": False, "acknowledged": len(acked_runs) + len(acked_lessons), "lost": 0, "error": repr(exc)[:300]}


def round_kills(url: str, root: Path, kills: int, seed: int, progress: Progress) -> dict[str, Any]:
    """K SIGKILL rounds on one local snapshot folder and one namespace."""
    rng = random.Random(seed)
    session = f"k{uuid.uuid4().hex[:6]}"
    rounds = []
    for rnd in range(kills):
        rounds.append(_kill_round(url, root / "killed", rnd, rng, session, seed))
        last = rounds[-1]
        progress(f"[reliability] kill {rnd + 1}/{kills}: survived={last['survived']} lost={last['lost']} {last['error']}")
    return {
        "kill_rounds": kills,
        "kill_rounds_survived": sum(r["survived"] for r in rounds),
        "records_acknowledged_before_kills": sum(r["acknowledged"] for r in rounds),
        "records_lost_after_kills": sum(r["lost"] for r in rounds),
        "kill_errors": sorted({r["error"] for r in rounds if r["error"]}),
    }


def round_threads(url: str, root: Path, threads: int, runs: int, seed: int, progress: Progress) -> dict[str, Any]:
    """T retrieving threads and an asyncio gather of retrievals while attempts run in the main thread."""
    from langmem_plus.envs.registry import make_env
    from langmem_plus.executors.scripted import ScriptedExecutor
    from langmem_plus.graph import build_executor_referee_graph, run_task
    from langmem_plus.records import ErrorEvent

    errors: list[str] = []
    stop = threading.Event()
    env = make_env("gridtool")
    tasks = env.tasks()
    with _stored(url, root / "threads") as memory:
        probe = ErrorEvent(
            id="probe", namespace=NAMESPACE, run_id="probe", step=0, fingerprint="unknown command <str>",
            fingerprint_id="probe", tags=["unknown_command"], channel="hard", action="filter age > 3",
            error_text="unknown command 'filter'", tool="gridtool",
        )

        def retrieve(i: int) -> None:
            while not stop.is_set():
                try:
                    memory.retrieve_on_error(probe)
                    memory.retrieve_pre_run(tasks[i % len(tasks)])
                except Exception as exc:  # counted: the finding of this round
                    errors.append(repr(exc)[:200])

        async def gathered() -> None:
            await asyncio.gather(*(memory.aretrieve_pre_run(t) for t in tasks[:8]))

        pool = [threading.Thread(target=retrieve, args=(i,), daemon=True) for i in range(threads)]
        for t in pool:
            t.start()
        graph = build_executor_referee_graph(memory, env, ScriptedExecutor(seed=seed))
        session = f"t{uuid.uuid4().hex[:6]}"
        for i in range(runs):
            try:
                run_task(graph, tasks[i % len(tasks)], run_id=f"{session}-r{i}")
                asyncio.run(gathered())
            except Exception as exc:  # counted, as in the threads
                errors.append(repr(exc)[:200])
        stop.set()
        for t in pool:
            t.join(timeout=30)
    progress(f"[reliability] threads: {threads} retrieving during {runs} runs, {len(errors)} exceptions")
    return {"threads": threads, "thread_runs": runs, "thread_exceptions": len(errors), "thread_errors": sorted(set(errors))[:5]}


def run_reliability(
    *,
    processes: int = 8,
    runs: int = 50,
    kills: int = 20,
    threads: int = 4,
    seed: int = 0,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """All three rounds on one fresh ``chroma run`` server; the issue-13 figures as one dict."""
    from langmem_plus.bench.server import running_chroma_server

    say = progress or (lambda message: None)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="langmem-reliability-") as tmp:
        root = Path(tmp)
        with running_chroma_server(root / "chroma") as (url, _):
            say(f"[reliability] chroma run on {url}; {processes} processes x {runs} runs")
            out: dict[str, Any] = {"processes": processes, "runs_per_process": runs}
            out.update(round_processes(url, root, processes, runs, seed, say))
            out.update(round_kills(url, root, kills, seed, say))
            out.update(round_threads(url, root, threads, max(2, runs // 5), seed, say))
    out["seconds"] = round(time.perf_counter() - started, 1)
    out["nothing_lost"] = (
        out["activations_reported"] == out["activations_stored"]
        and out["episodes_reported"] == out["episodes_stored"]
        and out["run_records_lost"] == 0
        and out["records_lost_after_kills"] == 0
        and out["kill_rounds_survived"] == kills
    )
    out["no_duplicates"] = out["duplicate_live_lessons"] == 0
    out["no_exceptions"] = out["thread_exceptions"] == 0 and out["workers_failed"] == 0
    return out


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``langmem-plus bench reliability``."""
    parser.add_argument("--processes", type=int, default=8, help="worker processes on one namespace (default 8)")
    parser.add_argument("--runs", type=int, default=50, help="attempts per process (default 50)")
    parser.add_argument("--kills", type=int, default=20, help="SIGKILL rounds (default 20)")
    parser.add_argument("--threads", type=int, default=4, help="retrieving threads during end_runs (default 4)")


def run(args: argparse.Namespace) -> int:
    """Entry point of ``langmem-plus bench reliability``."""
    for name in ("processes", "runs", "threads"):
        if getattr(args, name) < 1:
            print(f"--{name} must be >= 1", file=sys.stderr)
            return 2
    if args.kills < 0:
        print("--kills must be >= 0", file=sys.stderr)
        return 2
    result = run_reliability(
        processes=args.processes, runs=args.runs, kills=args.kills, threads=args.threads, seed=args.seed,
        progress=lambda message: print(message, file=sys.stderr, flush=True),
    )
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key}: {value}")
    return 0


__all__ = ["BENCH_NAME", "add_arguments", "duplicate_live_lessons", "run", "run_reliability"]


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        raise SystemExit(_worker_cli(sys.argv[1:]))
    raise SystemExit("run it as `langmem-plus bench reliability`")
