"""``langmem-plus bench retrieval``: retrieval speed and quality at scale, beside raw Chroma.

For each size (default 10,000 and 100,000 lessons) it builds the synthetic memory of
``bench.synthetic`` (many tools, fingerprints with several fixes each, tags,
conflicts, co-activations, every status) in a fresh store, then measures in one run:

- write throughput (Chroma upsert in batches, with the graph and snapshot journal
  following each write; ``add_lessons``'s conflict check and audit are left out);
- store open time (a fresh ``LearningMemory.open`` after a clean close: the snapshot
  read, lessons left unparsed, the graph's arrays and indexes loaded), the open from
  Chroma alone (no snapshot: every record read, the graph rebuilt), and how long the
  background parse of the lessons takes after the open (``warm_s``; queries are timed
  after it, the steady state of a running agent: every lesson parsed, as the open from
  Chroma alone leaves them);
- on-error and pre-run latency p50/p95 through the facade (audit write included),
  after ``--warmup`` untimed queries (other labelled queries) through both sides;
- raw Chroma ``query(n_results=20)`` on the same collection with the same query
  vector, and the ratio ours / raw at p50; the same on-error retrieval again with
  ``overlap_store_calls=False`` (``ratio_sequential_p50``: no spare core assumed). That
  query returns documents and metadata, which ours never reads, so the same query asking
  for distances only (ids come with them) is timed too, with the ratios against it
  (``ratio_ids_p50``, ``ratio_sequential_ids_p50``): the like-for-like reference;
- the graph step (bounded personalized PageRank) p95;
- hit@1, hit@3 and MRR of the labelled queries for ours (the chosen lessons, in
  order) and for vector-only top-k (raw Chroma's ranking).

It also reports the process's resident memory after the queries (``rss_mb``; ``memory_mb``
splits it into anonymous and mapped-file pages). ``--store DIR`` keeps the built store, its
build figures and labelled queries in ``DIR``; a later run with the same size and seed reuses
it without writing (a fresh process holding no synthetic lessons, so the resident memory is
the memory's own: how the million-lesson figures of docs/PERFORMANCE.md were taken).

Progress goes to stderr; ``--json`` prints ``{"sizes": [...]}`` on stdout.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langmem_plus.bench.synthetic import DOMAINS, Query, build_memory
from langmem_plus.config import MemoryConfig
from langmem_plus.records import ErrorEvent, Lesson, TaskSpec

BENCH_NAME = "retrieval"
WRITE_BATCH = 5000
"""Lessons per store write while building."""
RAW_N = 20
"""``n_results`` of the raw Chroma reference query (the issue's ``query(n_results=20)``)."""
WARMUP = 200
"""Labelled queries run through ours and raw Chroma, untimed, before the timed ones (other queries
than the timed ones, so no cache holds their answers): both sides are measured warm."""
NOW = 2_000_000.0
"""Fixed retrieval time, so recency is reproducible."""
MANIFEST_FILE = "bench-retrieval.json"
"""In a ``--store`` folder: the build's figures, size and seed, so a later run can reuse the store."""
QUERIES_FILE = "bench-retrieval-queries.jsonl"
"""In a ``--store`` folder: the labelled queries drawn with the memory, one JSON object a line."""
TARGETS = {"ratio_p50": 1.5, "ratio_p50_default": 1.3, "hit3_margin": 0.15, "open_s": 3.0, "graph_p95_ms": 5.0}
"""Targets at 100,000 lessons."""


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else 0.0


def _ranks(ranked: list[str], target: str) -> int | None:
    return ranked.index(target) + 1 if target in ranked else None


def _quality(ranks: list[int | None]) -> dict[str, float]:
    n = len(ranks) or 1
    return {
        "hit1": round(sum(1 for r in ranks if r == 1) / n, 3),
        "hit3": round(sum(1 for r in ranks if r is not None and r <= 3) / n, 3),
        "mrr": round(sum(1.0 / r for r in ranks if r is not None) / n, 3),
    }


def _log(msg: str) -> None:
    print(f"[bench retrieval] {msg}", file=sys.stderr, flush=True)


def bench_size(
    n: int, *, queries: int = 200, seed: int = 0, warmup: int = WARMUP, store: Path | None = None, chroma_open: bool = True,
    config: MemoryConfig | None = None,
) -> dict[str, Any]:
    """All measurements for one memory size.

    Args:
        n: Lessons to build.
        queries: Timed labelled queries.
        seed: Seed of the synthetic memory.
        warmup: Untimed labelled queries before the timed ones.
        store: Folder to build the store in and keep (None: a temporary one). A folder that
            already holds a store this bench built with the same ``n`` and ``seed`` is reused:
            nothing is generated or written, the build figures are the ones saved with it, and
            the process holds no synthetic lessons, so its resident memory is the memory's own.
        chroma_open: Also time the open from Chroma alone (every record read and parsed; minutes
            and several GB at a million lessons).
        config: The memory's settings (default ``MemoryConfig()``).
    """
    cfg = config or MemoryConfig()
    if store is None:
        with tempfile.TemporaryDirectory() as tmp:
            return _bench_in(Path(tmp), n, queries=queries, seed=seed, warmup=warmup, chroma_open=chroma_open, config=cfg)
    store.mkdir(parents=True, exist_ok=True)
    return _bench_in(store, n, queries=queries, seed=seed, warmup=warmup, chroma_open=chroma_open, config=cfg)


def _bench_in(
    root: Path, n: int, *, queries: int, seed: int, warmup: int, chroma_open: bool, config: MemoryConfig
) -> dict[str, Any]:
    from langmem_plus.memory import LearningMemory

    ns = ("bench", "retrieval")
    built = _load_built(root, n, seed, warmup + queries)
    if built is None:
        built = _build(root, n, ns, queries=warmup + queries, seed=seed, config=config)
    build, labelled = built
    started = time.perf_counter()
    mem = LearningMemory.open(root, namespace=ns, clock=lambda: NOW, config=config)
    open_s = time.perf_counter() - started
    rss_open = rss_mb()
    _log(f"{n}: opened in {open_s:.2f}s ({len(mem.lessons)} lessons, {mem.graph.number_of_lessons} in the graph; resident {rss_open:.0f} MB)")
    started = time.perf_counter()
    mem.wait_warm()
    warm_s = time.perf_counter() - started
    _log(f"{n}: lessons parsed in the background in {warm_s:.1f}s after the open (queries are timed after it)")
    result = _measure(mem, labelled[warmup:], warmup=labelled[:warmup])
    result["memory_mb"] = memory_mb()  # after the warm parse and every query: the steady state
    result["rss_mb"] = result["memory_mb"].get("VmRSS") or round(rss_mb(), 1)
    result["rss_open_mb"] = round(rss_open, 1)
    _log(f"{n}: resident {result['rss_mb']:.0f} MB after the queries")
    open_chroma_s: float | None = None
    if chroma_open:  # after the resident-memory reading: this open's garbage would inflate it
        started = time.perf_counter()
        LearningMemory.open(root, namespace=ns, config=MemoryConfig(storage={"snapshot": False})).store.close()
        open_chroma_s = round(time.perf_counter() - started, 2)
        _log(f"{n}: opened from Chroma alone (no snapshot) in {open_chroma_s:.1f}s")
    started = time.perf_counter()
    mem.close()
    result["close_after_queries_s"] = round(time.perf_counter() - started, 2)
    result.update(
        lessons=build["lessons"], open_s=round(open_s, 2), open_chroma_s=open_chroma_s, warm_s=round(warm_s, 2),
        close_s=build["close_s"], writes_per_s=build["writes_per_s"], build_s=build["build_s"], fresh_process=build["reused"],
        hnsw_ef_construction=build.get("hnsw_ef_construction"),
    )
    return result


def _build(
    root: Path, n: int, ns: tuple[str, ...], *, queries: int, seed: int, config: MemoryConfig
) -> tuple[dict[str, Any], list[Query]]:
    """Generate the synthetic memory, write it into a new store at ``root``, close it, and save what a reuse needs."""
    from langmem_plus.memory import LearningMemory

    started = time.perf_counter()
    synth = build_memory(n, ns, queries=queries, seed=seed)
    count = len(synth.lessons)
    _log(f"{n}: generated {count} lessons, {len(synth.links)} links in {time.perf_counter() - started:.1f}s")
    mem = LearningMemory.open(root, namespace=ns, clock=lambda: NOW, config=config)
    started = time.perf_counter()
    for start in range(0, count, WRITE_BATCH):
        _write(mem, synth.lessons[start : start + WRITE_BATCH])
        done = min(start + WRITE_BATCH, count)
        _log(f"{n}: wrote {done}/{count} lessons ({done / (time.perf_counter() - started):.0f}/s)")
    write_s = time.perf_counter() - started
    mem.write("links", synth.links)
    build_s = time.perf_counter() - started
    ef = (mem.store.raw_collection("lessons").configuration or {}).get("hnsw", {}).get("ef_construction")
    labelled = synth.queries
    del synth  # the synthetic lessons are not the memory's: let them go before the memory is measured
    gc.collect()
    started = time.perf_counter()
    mem.close()
    close_s = time.perf_counter() - started
    _log(f"{n}: built in {build_s:.0f}s ({count / write_s:.0f} lessons/s); close took {close_s:.1f}s")
    build = {
        "lessons": count, "seed": seed, "hnsw_ef_construction": ef, "close_s": round(close_s, 2),
        "writes_per_s": round(count / write_s, 1), "build_s": round(build_s, 1),
    }
    (root / QUERIES_FILE).write_text("".join(_query_line(q) + "\n" for q in labelled))
    (root / MANIFEST_FILE).write_text(json.dumps({**build, "requested": n, "queries": len(labelled)}))
    return {**build, "reused": False}, labelled


def _load_built(root: Path, n: int, seed: int, queries: int) -> tuple[dict[str, Any], list[Query]] | None:
    """The build figures and labelled queries of a store this bench built at ``root``, or None when there is none.

    Raises:
        ValueError: ``root`` holds files but no matching build (another size, seed, or too few queries).
    """
    manifest = root / MANIFEST_FILE
    if not manifest.exists():
        if any(root.iterdir()):
            raise ValueError(f"{root} is not empty and holds no store built by this bench; give an empty or new folder")
        return None
    build = json.loads(manifest.read_text())
    if build["requested"] != n or build["seed"] != seed or build["queries"] < queries:
        raise ValueError(
            f"{root} holds a store built with --lessons {build['requested']} --seed {build['seed']} and "
            f"{build['queries']} labelled queries; asked for {n}, seed {seed}, {queries} queries"
        )
    lines = (root / QUERIES_FILE).read_text().splitlines()[:queries]
    _log(f"{n}: reusing the store built at {root} ({build['lessons']} lessons, build {build['build_s']}s)")
    return {**build, "reused": True}, [_query_of(line) for line in lines]


def _query_line(q: Query) -> str:
    return json.dumps({"event": q.event.model_dump(mode="json"), "target": q.target, "paraphrased": q.paraphrased})


def _query_of(line: str) -> Query:
    data = json.loads(line)
    return Query(event=ErrorEvent.model_validate(data["event"]), target=data["target"], paraphrased=data["paraphrased"])


def rss_mb() -> float:
    """This process's resident memory in MB (``VmRSS`` of ``/proc/self/status``; the peak from
    ``getrusage`` where there is no ``/proc``)."""
    found = memory_mb().get("VmRSS")
    if found is not None:
        return found
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def memory_mb() -> dict[str, float]:
    """``VmRSS`` (resident), ``RssAnon`` (heap and other private memory), ``RssFile`` (mapped file pages:
    the snapshot's vectors and records, libraries) and ``VmHWM`` (peak resident) in MB; empty without ``/proc``."""
    out: dict[str, float] = {}
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "RssAnon", "RssFile", "VmHWM"):
                out[key] = round(int(value.split()[0]) / 1024, 1)
    except (OSError, ValueError):
        return {}
    return out


def _write(mem: Any, lessons: list[Lesson]) -> None:
    """The persistence path of a lesson write: Chroma upsert (embedding included), then the graph and snapshot journal.

    ``add_lessons`` also checks each import for conflicts and audits it, which is a
    learning cost, not a storage one; it is left out so the figure is the store's.
    ``LearningMemory.write`` keeps the memory in step with the store.
    """
    mem.write("lessons", lessons)


def _task_of(q: Query, i: int) -> TaskSpec:
    tool = q.event.tool or "tool0"
    return TaskSpec(
        task_id=f"bench-task-{i % 50}", goal=f"{q.event.error_text} while running {tool}", tool=tool,
        domain=f"domain{int(tool.removeprefix('tool')) % DOMAINS}",
    )


def _measure(mem: Any, queries: Sequence[Query], *, warmup: Sequence[Query] = ()) -> dict[str, Any]:
    coll = mem.store.raw_collection("lessons")
    mem.retrieve_on_error(queries[0].event, now=NOW)  # first-call costs (tiktoken load, collection handles)
    for i, q in enumerate(warmup):
        mem.retrieve_on_error(q.event, now=NOW)
        coll.query(query_embeddings=[mem.store.embed_query(mem.last_retrieval.query)], n_results=RAW_N)
        mem.retrieve_pre_run(_task_of(q, i), now=NOW)
    if warmup:
        _log(f"  {len(warmup)} warm-up queries (untimed)")
    ours: list[float] = []
    sequential: list[float] = []
    raw: list[float] = []
    raw_ids: list[float] = []
    graph: list[float] = []
    pre: list[float] = []
    tokens: list[float] = []
    ranks_ours: list[int | None] = []
    ranks_vec: list[int | None] = []
    para_ours: list[int | None] = []
    for i, q in enumerate(queries):
        s = time.perf_counter()
        chosen = mem.retrieve_on_error(q.event, now=NOW)
        ours.append((time.perf_counter() - s) * 1000)
        last = mem.last_retrieval
        sequential.append(_sequential_ms(mem, q))
        graph.append(last.graph_ms)
        tokens.append(float(last.tokens))
        vec = mem.store.embed_query(last.query)
        s = time.perf_counter()
        res = coll.query(query_embeddings=[vec], n_results=RAW_N)
        raw.append((time.perf_counter() - s) * 1000)
        s = time.perf_counter()
        coll.query(query_embeddings=[vec], n_results=RAW_N, include=["distances"])
        raw_ids.append((time.perf_counter() - s) * 1000)
        r = _ranks([c.item_id for c in chosen if isinstance(c.item, Lesson)], q.target)
        ranks_ours.append(r)
        if q.paraphrased:
            para_ours.append(r)
        ranks_vec.append(_ranks(list(res["ids"][0]), q.target))
        task = _task_of(q, i)
        s = time.perf_counter()
        mem.retrieve_pre_run(task, now=NOW)
        pre.append((time.perf_counter() - s) * 1000)
        if (i + 1) % 50 == 0:
            _log(f"  {i + 1}/{len(queries)} queries")
    p50, raw50, ids50 = statistics.median(ours), statistics.median(raw), statistics.median(raw_ids)
    return {
        "ours_p50_ms": round(p50, 2),
        "ours_p95_ms": round(_pct(ours, 0.95), 2),
        "pre_run_p50_ms": round(statistics.median(pre), 2),
        "pre_run_p95_ms": round(_pct(pre, 0.95), 2),
        "raw_chroma_p50_ms": round(raw50, 2),
        "raw_chroma_p95_ms": round(_pct(raw, 0.95), 2),
        "ratio_p50": round(p50 / raw50, 2) if raw50 else 0.0,
        "sequential_p50_ms": round(statistics.median(sequential), 2),
        "ratio_sequential_p50": round(statistics.median(sequential) / raw50, 2) if raw50 else 0.0,
        "raw_chroma_ids_p50_ms": round(ids50, 2),
        "ratio_ids_p50": round(p50 / ids50, 2) if ids50 else 0.0,
        "ratio_sequential_ids_p50": round(statistics.median(sequential) / ids50, 2) if ids50 else 0.0,
        "graph_p95_ms": round(_pct(graph, 0.95), 2),
        "tokens_p50": statistics.median(tokens),
        **_quality(ranks_ours),
        "vector_only": _quality(ranks_vec),
        "paraphrased": {"queries": len(para_ours), **_quality(para_ours)},
    }


def _sequential_ms(mem: Any, q: Query) -> float:
    """The same on-error retrieval with ``overlap_store_calls=False`` (no worker thread), in ms: what it costs
    when no core is spare."""
    chosen = mem.engine.overlap
    mem.engine.overlap = False
    try:
        s = time.perf_counter()
        mem.retrieve_on_error(q.event, now=NOW)
        return (time.perf_counter() - s) * 1000
    finally:
        mem.engine.overlap = chosen


def targets_met(row: dict[str, Any]) -> dict[str, bool]:
    """Which issue-3 and issue-15 targets a size's row meets."""
    return {
        "ratio_p50<=1.5": row["ratio_p50"] <= TARGETS["ratio_p50"],
        "ratio_p50<=1.3": row["ratio_p50"] <= TARGETS["ratio_p50_default"],
        "ratio_sequential_p50<=1.5": row["ratio_sequential_p50"] <= TARGETS["ratio_p50"],
        "hit3>=vector+0.15": row["hit3"] >= row["vector_only"]["hit3"] + TARGETS["hit3_margin"],
        "open_s<=3": row["open_s"] <= TARGETS["open_s"],
        "graph_p95_ms<=5": row["graph_p95_ms"] <= TARGETS["graph_p95_ms"],
    }


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``langmem-plus bench retrieval``."""
    parser.add_argument("--lessons", type=int, nargs="+", default=[10_000, 100_000], help="memory sizes (default 10000 100000)")
    parser.add_argument("--queries", type=int, default=200, help="labelled queries per size (default 200)")
    parser.add_argument("--warmup", type=int, default=WARMUP, help=f"untimed warm-up queries before them (default {WARMUP})")
    parser.add_argument(
        "--store", type=Path, default=None,
        help="folder to build the store in and keep; a folder this bench built before (same size and seed) is reused "
        "without rebuilding, in a process that holds no synthetic lessons (one size only)",
    )
    parser.add_argument(
        "--no-chroma-open", dest="chroma_open", action="store_false",
        help="skip timing the open from Chroma alone (every record read and parsed: minutes and GBs at 1M lessons)",
    )
    parser.add_argument(
        "--hnsw-ef-construction", type=int, default=None,
        help="MemoryConfig.storage.hnsw_ef_construction of the built store (default: MemoryConfig's)",
    )


def run(args: argparse.Namespace) -> int:
    """Entry point of ``langmem-plus bench retrieval``."""
    if args.store is not None and len(args.lessons) != 1:
        print("--store takes one size (--lessons N)", file=sys.stderr)
        return 2
    try:
        rows = [
            bench_size(
                n, queries=args.queries, seed=args.seed, warmup=args.warmup, store=args.store, chroma_open=args.chroma_open,
                config=MemoryConfig(storage={"hnsw_ef_construction": args.hnsw_ef_construction}) if args.hnsw_ef_construction else None,
            )
            for n in args.lessons
        ]
    except ValueError as exc:  # a --store folder that holds something else
        print(f"bench retrieval: {exc}", file=sys.stderr)
        return 2
    for row in rows:
        row["targets_met"] = targets_met(row)
    if args.json:
        print(json.dumps({"sizes": rows}))
        return 0
    head = f"{'lessons':>8} {'ours p50/p95':>14} {'pre-run p50/p95':>16} {'raw p50':>8} {'ratio':>6} {'graph p95':>9} {'open s':>7} {'writes/s':>9} {'hit@1':>6} {'hit@3':>6} {'MRR':>6} {'vec hit@3':>9}"
    print(head)
    for r in rows:
        print(
            f"{r['lessons']:>8} {r['ours_p50_ms']:>6.2f}/{r['ours_p95_ms']:<7.2f} {r['pre_run_p50_ms']:>7.2f}/{r['pre_run_p95_ms']:<8.2f}"
            f" {r['raw_chroma_p50_ms']:>8.2f} {r['ratio_p50']:>6.2f} {r['graph_p95_ms']:>9.2f} {r['open_s']:>7.2f}"
            f" {r['writes_per_s']:>9.0f} {r['hit1']:>6.3f} {r['hit3']:>6.3f} {r['mrr']:>6.3f} {r['vector_only']['hit3']:>9.3f}"
        )
        print("  targets: " + ", ".join(f"{k} {'met' if v else 'NOT met'}" for k, v in r["targets_met"].items()))
    return 0


__all__ = ["BENCH_NAME", "add_arguments", "bench_size", "memory_mb", "rss_mb", "run", "targets_met"]
