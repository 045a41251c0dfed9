"""``langmem-plus bench endrun``: what ``end_run``, imports and ``close`` cost at 10k and 100k lessons.

For each size it imports the synthetic memory of ``bench.synthetic`` with
``add_lessons`` (in batches of ``WRITE_BATCH``), closes (the journal folds into a new
snapshot base) and reopens the store, then times ``end_run`` for runs with a handful
of events: each run fails on three labelled queries' actions, retries each with a fix
that works (so it synthesizes three candidate lessons, deduplicated against the
store), and shows the lessons two on-error retrievals chose (so they are judged). In
the same process it reports:

- imports per second, and the share of that time spent inside Chroma's own upsert;
- raw Chroma's rate on the same records (ids, vectors, documents, metadata), written by
  chromadb alone into a fresh collection after the runs: the import's ceiling here;
- ``close`` after the import, and the open after it;
- ``end_run`` p50/p95 with the indexes (the default) and with the full scan
  (``end_run_indexes=False``, the reference: every lesson scanned),
  alternating on the same store, and their ratio; likewise for a text game's run (``_text_run``:
  its steps enumerate valid actions, so it learns text rules, which read the tool's rules); and how much of ``end_run`` is
  Chroma's own writes (upserts and the snapshot's generation token), which no index
  removes, and the rest (p50/p95 of each run's time outside Chroma);
- the machine's load average while it ran (the machine may be shared).

Progress goes to stderr; ``--json`` prints ``{"sizes": [...]}`` on stdout.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any

from langmem_plus.bench.synthetic import Query, SyntheticMemory, build_memory
from langmem_plus.records import Activation, Feedback, Step, TaskSpec

BENCH_NAME = "endrun"
WRITE_BATCH = 5000
"""Lessons per ``add_lessons`` call while importing."""
RUNS = 30
"""Timed ``end_run`` calls with the indexes, per size."""
REFERENCE_RUNS = 6
"""Timed ``end_run`` calls with the full scan, interleaved with the others."""
TEXT_RUNS = 6
"""Timed ``end_run`` calls of a text game's run (``_text_run``) with the indexes, and as many with the scan."""
TEXT_TOOL = "textgame-bench"
"""The text game's tool: none of the synthetic lessons is scoped to it."""
EVENTS_PER_RUN = 3
"""Labelled queries whose failing action each run repeats and then fixes."""
NOW = 2_000_000.0
"""Fixed clock, so runs are reproducible."""
TARGETS = {"end_run_p50_ms": 100.0, "end_run_p95_ms": 300.0, "imports_per_s": 5000.0, "close_s": 1.0}
"""Targets at 100,000 lessons."""


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else 0.0


def _log(msg: str) -> None:
    print(f"[bench endrun] {msg}", file=sys.stderr, flush=True)


class ChromaClock:
    """Seconds spent inside chromadb's ``Collection.upsert`` and ``modify`` while it is installed (bench only)."""

    def __init__(self) -> None:
        self.seconds = 0.0

    @contextlib.contextmanager
    def installed(self) -> Iterator[ChromaClock]:
        """Wrap the two chromadb methods for the duration of the block."""
        from chromadb.api.models.Collection import Collection

        originals = {name: getattr(Collection, name) for name in ("upsert", "modify")}

        def timed(fn: Callable[..., Any]) -> Callable[..., Any]:
            def wrapper(*args: Any, **kwargs: Any) -> Any:
                started = time.perf_counter()
                try:
                    return fn(*args, **kwargs)
                finally:
                    self.seconds += time.perf_counter() - started

            return wrapper

        for name, fn in originals.items():
            setattr(Collection, name, timed(fn))
        try:
            yield self
        finally:
            for name, fn in originals.items():
                setattr(Collection, name, fn)


def _run_inputs(mem: Any, queries: list[Query], run_id: str) -> tuple[TaskSpec, list[Step], list[Any], list[Activation]]:
    """A run failing on each query's action once, then fixing it; the events captured and the lessons shown."""
    steps: list[Step] = []
    for q in queries:
        ev = q.event
        steps.append(Step(index=len(steps), action=ev.action, tool=ev.tool,
                          feedback=Feedback(hard_failure=True, error_text=ev.error_text)))
        words = ev.action.split()
        steps.append(Step(index=len(steps), action=" ".join([*words[:2], "fixed", *words[3:]]), tool=ev.tool))
    task = TaskSpec(task_id=f"{run_id}-task", goal="bench end_run", tool=queries[0].event.tool)
    events = mem.capture_steps(steps, run_id=run_id, task=task)
    shown: list[Activation] = []
    for e in events[:2]:
        items = mem.retrieve_on_error(e, run_id=run_id, now=NOW)
        shown += mem.activations_for(items, run_id=run_id, step=e.step, moment="on_error")
    return task, steps, events, shown


def _text_run(n: int) -> tuple[TaskSpec, list[Step]]:
    """A text game's run (its steps enumerate valid actions): read the recipe, take the ingredient (scored), cook it
    on the wrong appliance (fatal); each run's ingredient is new, so it teaches the same rules over a new entity."""
    thing = f"item{n} apple"
    offered = [f"take {thing}", f"cook {thing} in stove", f"cook {thing} in oven", f"eat {thing}", "read cookbook"]
    steps = [
        Step(index=0, action="read cookbook", observation=f"Ingredients:\n  {thing}\nDirections:\n  roast the {thing}",
             info={"valid_actions": offered}),
        Step(index=1, action=f"take {thing}", observation=f"You take the {thing}.", feedback=Feedback(reward=1.0),
             info={"valid_actions": offered}),
        Step(index=2, action=f"cook {thing} in stove", observation="You burn it. You lost!",
             feedback=Feedback(constraint_failure=True, error_text="taskfailure"), info={"valid_actions": offered}),
    ]
    task = TaskSpec(task_id=f"text-{n}", goal="Read the cookbook and prepare the meal.", tool=TEXT_TOOL, domain="text-game",
                    context={"goal": "Read the cookbook and prepare the meal.", "valid_actions": ["read cookbook"]})
    return task, steps


def _timed_text_end_run(mem: Any, n: int) -> float:
    """Seconds of ``end_run`` for one text game's run (``_text_run``)."""
    task, steps = _text_run(n)
    run_id = f"text{n}"
    events = mem.capture_steps(steps, run_id=run_id, task=task)
    started = time.perf_counter()
    mem.end_run(run_id=run_id, task=task, steps=steps, events=events, now=NOW)
    return time.perf_counter() - started


def _timed_end_run(mem: Any, queries: list[Query], run_id: str, clock: ChromaClock) -> tuple[float, float]:
    """(end_run seconds, of which inside Chroma)."""
    task, steps, events, shown = _run_inputs(mem, queries, run_id)
    in_chroma = clock.seconds
    started = time.perf_counter()
    mem.end_run(run_id=run_id, task=task, steps=steps, events=events, activations=shown, now=NOW)
    return time.perf_counter() - started, clock.seconds - in_chroma


def _import(mem: Any, synth: SyntheticMemory, n: int, clock: ChromaClock) -> tuple[float, float]:
    """Import every synthetic lesson with ``add_lessons``; (seconds, of which inside Chroma)."""
    in_chroma = clock.seconds
    started = time.perf_counter()
    for start in range(0, len(synth.lessons), WRITE_BATCH):
        mem.add_lessons(synth.lessons[start : start + WRITE_BATCH])
        done = min(start + WRITE_BATCH, len(synth.lessons))
        _log(f"{n}: imported {done}/{len(synth.lessons)} ({done / (time.perf_counter() - started):.0f}/s)")
    return time.perf_counter() - started, clock.seconds - in_chroma


def _raw_chroma_rate(path: str, payload: tuple[list[str], Any, list[str], list[Any]]) -> float:
    """Records per second chromadb alone takes the import's payload at, in batches of ``WRITE_BATCH``.

    The same ids, vectors, documents and metadata ``add_lessons`` sent (``ChromaStore.encode``),
    upserted into a fresh collection of a fresh client at ``path``, with no langmem_plus code
    between the calls: the ceiling the import is measured against, in the same process and hour.
    """
    import chromadb
    from chromadb.config import Settings

    ids, vectors, docs, metas = payload
    client = chromadb.PersistentClient(path=path, settings=Settings(anonymized_telemetry=False))
    try:
        coll = client.get_or_create_collection(
            "bench_raw_lessons", embedding_function=None, configuration={"hnsw": {"space": "cosine"}}
        )
        started = time.perf_counter()
        for start in range(0, len(ids), WRITE_BATCH):
            end = start + WRITE_BATCH
            coll.upsert(ids=ids[start:end], embeddings=vectors[start:end], documents=docs[start:end], metadatas=metas[start:end])
        return len(ids) / (time.perf_counter() - started)
    finally:
        close = getattr(client, "close", None)
        if close is not None:
            close()


def bench_size(n: int, *, runs: int = RUNS, reference_runs: int = REFERENCE_RUNS, text_runs: int = TEXT_RUNS,
               seed: int = 0) -> dict[str, Any]:
    """All measurements for one memory size."""
    from langmem_plus.config import MemoryConfig
    from langmem_plus.memory import LearningMemory

    ns = ("bench", "endrun")
    need = EVENTS_PER_RUN * (runs + reference_runs + 1)
    synth = build_memory(n, ns, queries=need, seed=seed)
    load_before = os.getloadavg()[0]
    clock = ChromaClock()
    with tempfile.TemporaryDirectory() as tmp, clock.installed():
        mem = LearningMemory.open(tmp, namespace=ns, clock=lambda: NOW)
        import_s, import_chroma_s = _import(mem, synth, n, clock)
        _, ids, docs, metas = mem.store.encode("lessons", list(mem.lessons.values()))  # what Chroma now holds
        payload = (ids, mem.store.embed_array(docs), docs, metas)
        started = time.perf_counter()
        mem.close()
        close_s = time.perf_counter() - started
        started = time.perf_counter()
        mem = LearningMemory.open(tmp, namespace=ns, clock=lambda: NOW)
        open_s = time.perf_counter() - started
        mem.wait_warm()
        _log(f"{n}: close {close_s:.2f}s, open {open_s:.2f}s")
        indexed, scan = mem.config, mem.config.replace(lifecycle={"end_run_indexes": False})
        first_s, _ = _timed_end_run(mem, synth.queries[:EVENTS_PER_RUN], "first", clock)
        ours: list[tuple[float, float]] = []
        ref: list[tuple[float, float]] = []
        total = runs + reference_runs
        ref_at = {int((k + 0.5) * total / reference_runs) for k in range(reference_runs)} if reference_runs else set()
        q = EVENTS_PER_RUN
        for i in range(total):
            use_ref = i in ref_at
            mem.config = scan if use_ref else indexed
            sample = _timed_end_run(mem, synth.queries[q : q + EVENTS_PER_RUN], f"run{i}", clock)
            q += EVENTS_PER_RUN
            (ref if use_ref else ours).append(sample)
            _log(f"{n}: end_run {i + 1}/{runs + reference_runs} ({'scan' if use_ref else 'indexes'}) {sample[0] * 1000:.0f} ms")
        text_ours: list[float] = []
        text_ref: list[float] = []
        for i in range(2 * text_runs):  # alternating, the index first
            use_ref = bool(i % 2)
            mem.config = scan if use_ref else indexed
            ms = _timed_text_end_run(mem, i) * 1000
            (text_ref if use_ref else text_ours).append(ms)
            _log(f"{n}: text end_run {i + 1}/{2 * text_runs} ({'scan' if use_ref else 'indexes'}) {ms:.0f} ms")
        mem.config = indexed
        started = time.perf_counter()
        mem.close()
        final_close_s = time.perf_counter() - started
        raw_rate = _raw_chroma_rate(os.path.join(tmp, "raw"), payload)
        _log(f"{n}: raw Chroma took the same records at {raw_rate:.0f}/s")
    ours_ms = [t * 1000 for t, _ in ours]
    ref_ms = [t * 1000 for t, _ in ref]
    p50, ref50 = statistics.median(ours_ms), statistics.median(ref_ms) if ref_ms else 0.0
    return {
        "lessons": len(synth.lessons),
        "imports_per_s": round(len(synth.lessons) / import_s, 1),
        "imports_chroma_share": round(import_chroma_s / import_s, 2),
        "raw_chroma_upserts_per_s": round(raw_rate, 1),
        "imports_over_raw_chroma": round(len(synth.lessons) / import_s / raw_rate, 2),
        "close_after_import_s": round(close_s, 2),
        "open_s": round(open_s, 2),
        "first_end_run_ms": round(first_s * 1000, 1),
        "end_run_p50_ms": round(p50, 1),
        "end_run_p95_ms": round(_pct(ours_ms, 0.95), 1),
        "end_run_chroma_p50_ms": round(statistics.median(c * 1000 for _, c in ours), 1),
        "end_run_outside_chroma_p50_ms": round(statistics.median((t - c) * 1000 for t, c in ours), 1),
        "end_run_outside_chroma_p95_ms": round(_pct([(t - c) * 1000 for t, c in ours], 0.95), 1),
        "scan_p50_ms": round(ref50, 1),
        "scan_p95_ms": round(_pct(ref_ms, 0.95), 1),
        "scan_over_ours_p50": round(ref50 / p50, 1) if p50 else 0.0,
        "text_end_run_p50_ms": round(statistics.median(text_ours), 1) if text_ours else 0.0,
        "text_scan_p50_ms": round(statistics.median(text_ref), 1) if text_ref else 0.0,
        "close_s": round(final_close_s, 2),
        "runs": len(ours),
        "reference_runs": len(ref),
        "load_avg_1m": [round(load_before, 2), round(os.getloadavg()[0], 2)],
    }


def targets_met(row: dict[str, Any]) -> dict[str, bool]:
    """Which issue-15 targets a size's row meets."""
    return {
        "end_run_p50<=100ms": row["end_run_p50_ms"] <= TARGETS["end_run_p50_ms"],
        "end_run_p95<=300ms": row["end_run_p95_ms"] <= TARGETS["end_run_p95_ms"],
        "imports>=5000/s": row["imports_per_s"] >= TARGETS["imports_per_s"],
        "close<=1s": row["close_after_import_s"] <= TARGETS["close_s"],
    }


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``langmem-plus bench endrun``."""
    parser.add_argument("--lessons", type=int, nargs="+", default=[10_000, 100_000], help="memory sizes (default 10000 100000)")
    parser.add_argument("--runs", type=int, default=RUNS, help=f"timed end_run calls with the indexes (default {RUNS})")
    parser.add_argument("--reference-runs", type=int, default=REFERENCE_RUNS,
                        help=f"timed end_run calls with the full scan, interleaved (default {REFERENCE_RUNS})")
    parser.add_argument("--text-runs", type=int, default=TEXT_RUNS,
                        help=f"timed end_run calls of a text game's run with the indexes, and as many with the scan (default {TEXT_RUNS})")


def run(args: argparse.Namespace) -> int:
    """Entry point of ``langmem-plus bench endrun``."""
    rows = [bench_size(n, runs=args.runs, reference_runs=args.reference_runs, text_runs=args.text_runs, seed=args.seed)
            for n in args.lessons]
    for row in rows:
        row["targets_met"] = targets_met(row)
    if args.json:
        print(json.dumps({"sizes": rows}))
        return 0
    print(f"{'lessons':>8} {'end_run p50/p95 ms':>19} {'in Chroma p50':>13} {'rest p50/p95':>13} {'scan p50/p95 ms':>17} {'ratio':>6}"
          f" {'imports/s':>10} {'raw/s':>7} {'close s':>8} {'open s':>7} {'load':>11}")
    for r in rows:
        print(f"{r['lessons']:>8} {r['end_run_p50_ms']:>9.1f}/{r['end_run_p95_ms']:<9.1f} {r['end_run_chroma_p50_ms']:>13.1f}"
              f" {r['end_run_outside_chroma_p50_ms']:>6.1f}/{r['end_run_outside_chroma_p95_ms']:<6.1f}"
              f" {r['scan_p50_ms']:>8.1f}/{r['scan_p95_ms']:<8.1f} {r['scan_over_ours_p50']:>6.1f} {r['imports_per_s']:>10.0f}"
              f" {r['raw_chroma_upserts_per_s']:>7.0f} {r['close_after_import_s']:>8.2f} {r['open_s']:>7.2f} {r['load_avg_1m'][0]:>5.1f}-{r['load_avg_1m'][1]:<5.1f}")
        print(f"  a text game's run: end_run p50 {r['text_end_run_p50_ms']:.1f} ms, with the scan {r['text_scan_p50_ms']:.1f} ms")
        print("  targets: " + ", ".join(f"{k} {'met' if v else 'NOT met'}" for k, v in r["targets_met"].items()))
    return 0


__all__ = ["BENCH_NAME", "ChromaClock", "add_arguments", "bench_size", "run", "targets_met"]
