"""The on-error fast path (store calls overlapped on a worker thread, fast scoring) against
the sequential reference; the worker, the strategy timer and the bounded vector cache."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from langmem_plus.bench.synthetic import build_memory
from langmem_plus.memory import LearningMemory
from langmem_plus.config import MemoryConfig
from langmem_plus.records import Lesson, TaskSpec, WorkingContext
import langmem_plus.retrieval.select as select_mod
from langmem_plus.retrieval.engine import Retrieval
from langmem_plus.retrieval.vectors import VectorCache
from langmem_plus.retrieval.worker import StrategyTimer, Worker
from retrieval_reference import on_error_reference, score_reference

NS = ("acme", "overlap")
NOW = 2_000_000.0


def _comparable(r: Retrieval) -> Retrieval:
    r.graph_ms = 0.0  # a timing, not a result
    return r


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list]:  # type: ignore[type-arg]
    root = tmp_path_factory.mktemp("overlap") / "store"
    synth = build_memory(450, NS, queries=60, seed=3)
    mem = LearningMemory.open(root, namespace=NS, clock=lambda: NOW)
    mem.write("lessons", synth.lessons)  # the memory follows its writes
    mem.write("links", synth.links)
    mem.close()
    return root, synth.queries


@pytest.mark.parametrize("overlap", [True, False, None])
def test_fast_on_error_equals_the_sequential_reference(synthetic: tuple[Path, list], overlap: bool | None) -> None:  # type: ignore[type-arg]
    root, queries = synthetic
    mem = LearningMemory.open(root, namespace=NS, clock=lambda: NOW)
    try:
        mem.engine.overlap = overlap
        compared = 0
        for q in queries:
            ctx = WorkingContext(last_fail=q.event.error_text[:300], context=q.event.tool or "")
            fast = _comparable(mem.engine.on_error(q.event, ctx, now=NOW))
            with pytest.MonkeyPatch.context() as old_routes:  # the reference takes the routes the fast ones replaced
                old_routes.setattr(mem.graph, "_neighbourhood_ids", lambda *a, **k: None)  # the named walk
                old_routes.setattr(select_mod, "_guard_positions", select_mod._guard_positions_reference)
                ref = _comparable(on_error_reference(mem.engine, q.event, ctx, now=NOW))
            assert fast == ref
            assert [c.reasons for c in fast.chosen] == [c.reasons for c in ref.chosen]
            assert [list(c.components) for c in fast.candidates] == [list(c.components) for c in ref.candidates]
            compared += bool(fast.chosen)
        assert compared > len(queries) // 2  # the comparison was about real results
    finally:
        mem.close()


@pytest.mark.parametrize("k", [0, 3, 20])
def test_error_graph_k_bounds_the_graph_candidates_on_error_only(synthetic: tuple[Path, list], k: int) -> None:  # type: ignore[type-arg]
    """``error_graph_k``: on error the graph source adds its best ``k`` lessons (the PageRank's top, in order);
    before a run it still adds ``candidates_k``."""
    root, queries = synthetic
    mem = LearningMemory.open(root, namespace=NS, clock=lambda: NOW, config=MemoryConfig(retrieval={"error_graph_k": k}))
    seen: list[tuple[int | None, int]] = []
    graph_top = mem.engine.sources.graph_top

    def spy(seeds: dict[str, float], top: int | None = None) -> Any:
        found = graph_top(seeds, top)
        seen.append((top, len(found.scores)))
        return found

    try:
        mem.engine.sources.graph_top = spy  # type: ignore[method-assign]
        most = 0
        for q in queries[:20]:
            mem.retrieve_on_error(q.event, now=NOW)
            graph = [c for c in mem.last_retrieval.candidates if "source:graph" in c.reasons]
            assert len(graph) <= k
            most = max(most, seen[-1][1])
        assert {top for top, _ in seen} == {k} and (most == k or k == 20)  # the top k are used, when there are k
        if k == 20:
            assert most > 10  # the bound was not what limited them
        mem.retrieve_pre_run(TaskSpec(task_id="t", goal="g", tool=queries[0].event.tool), now=NOW)
        assert seen[-1][0] is None  # pre-run: candidates_k
    finally:
        mem.close()


def test_fast_path_is_taken_and_overlaps_on_the_worker(synthetic: tuple[Path, list]) -> None:  # type: ignore[type-arg]
    root, queries = synthetic
    mem = LearningMemory.open(root, namespace=NS, clock=lambda: NOW)
    seen: list[str] = []
    original = mem.engine.sources.vector

    def spy(qvec: list[float], n: int) -> dict[str, float]:
        seen.append(threading.current_thread().name)
        return original(qvec, n)

    try:
        mem.engine.sources.vector = spy  # type: ignore[method-assign]
        mem.engine.overlap = True
        mem.retrieve_on_error(queries[0].event, now=NOW)
        mem.engine.overlap = False
        mem.retrieve_on_error(queries[1].event, now=NOW)
        assert seen[0].startswith("langmem-plus-retrieval") and seen[1] == threading.current_thread().name
    finally:
        mem.close()
    # After close the worker is gone: retrieval still works, inline.
    assert mem.engine._worker.submit(sum, [1, 2]).result() == 3


def test_worker_errors_reach_the_caller_after_the_in_memory_work(synthetic: tuple[Path, list]) -> None:  # type: ignore[type-arg]
    root, queries = synthetic
    mem = LearningMemory.open(root, namespace=NS, clock=lambda: NOW)

    def broken(qvec: list[float], n: int) -> dict[str, float]:
        raise RuntimeError("chroma went away")

    try:
        mem.engine.sources.vector = broken  # type: ignore[method-assign]
        mem.engine.overlap = True
        with pytest.raises(RuntimeError, match="went away"):
            mem.retrieve_on_error(queries[0].event, now=NOW)
    finally:
        mem.close()


def test_worker_runs_tasks_in_order_and_inline_after_close() -> None:
    w = Worker("test-worker")
    out: list[int] = []
    futures = [w.submit(out.append, i) for i in range(20)]
    for f in futures:
        f.result()
    assert out == list(range(20))
    with pytest.raises(ZeroDivisionError):
        w.submit(lambda: 1 / 0).result()
    w.close()
    done = w.submit(out.append, 99)
    assert done.done() and out[-1] == 99


def test_strategy_timer_follows_the_faster_strategy_and_keeps_exploring() -> None:
    t = StrategyTimer(window=3, explore_every=5)
    assert t.choose() is True
    t.record(True, 9.0)
    assert t.choose() is False
    t.record(False, 2.0)
    picks = []
    for _ in range(20):
        s = t.choose()
        picks.append(s)
        t.record(s, 9.0 if s else 2.0)
    assert picks.count(True) == 4 and picks.count(False) == 16  # every 5th call explores
    for _ in range(3):  # the load changes: overlap is now the faster
        t.record(True, 1.0)
    assert [t.choose() for _ in range(4)].count(True) >= 3


def test_vector_cache_is_bounded_and_returns_the_same_rows(tmp_path: Path) -> None:
    mem = LearningMemory.open(tmp_path / "s", namespace=NS)
    try:
        lessons = [
            Lesson(id=f"l{i}", namespace=NS, rule_text=f"WRONG: w{i} -> CORRECT: C{i}", wrong=f"w{i}", correct=f"C{i}")
            for i in range(6)
        ]
        mem.write("lessons", lessons)
        small = VectorCache(mem.store, mem.config.storage.embedding_dim, capacity=3)
        unbounded = VectorCache(mem.store, mem.config.storage.embedding_dim, capacity=100)
        for cache in (small, unbounded):
            first = cache.relevance(lessons[:4])
            again = cache.relevance(lessons[2:])
            assert np.array_equal(first[2:], again[:2])
        assert np.array_equal(small.relevance(lessons), unbounded.relevance(lessons))
        assert np.array_equal(small.content(lessons), unbounded.content(lessons))
        assert len(small._relevance) == 3 and len(small._content) == 3
        assert list(small._relevance) == ["l3", "l4", "l5"]  # least recently used evicted first
        small.relevance([lessons[3]])
        small.relevance([lessons[0]])
        assert list(small._relevance) == ["l5", "l3", "l0"]
    finally:
        mem.close()


def test_content_rows_are_kept_by_text_and_equal_embedding_each_lesson(tmp_path: Path) -> None:
    """MMR's content rows: one cached row per content text (``rule_core``), shared by lessons with one WRONG
    pattern, equal to embedding each lesson's text alone; a rewritten lesson gets its new text's row."""
    from langmem_plus.embeddings import HashingEmbeddings
    from langmem_plus.retrieval.vectors import rule_core

    mem = LearningMemory.open(tmp_path / "s", namespace=NS)
    try:
        lessons = [
            Lesson(id=f"l{i}", namespace=NS, rule_text=f"WRONG: w{i % 3} -> CORRECT: C{i}", wrong=f"w{i % 3}", correct=f"C{i}")
            for i in range(6)
        ] + [Lesson(id="plain", namespace=NS, rule_text="Quote the path (seen twice)")]
        cache = VectorCache(mem.store, mem.config.storage.embedding_dim, capacity=100)
        emb = HashingEmbeddings(dim=mem.config.storage.embedding_dim)
        rows = cache.content(lessons)
        assert np.array_equal(rows, np.vstack([emb.embed_array([rule_core(l)])[0] for l in lessons]))
        assert sorted(cache._content) == ["Quote the path", "w0", "w1", "w2"]
        rewritten = lessons[0].model_copy(update={"wrong": "w9", "rule_text": "WRONG: w9 -> CORRECT: C0"})
        cache.drop(rewritten.id)
        assert np.array_equal(cache.content([rewritten])[0], emb.embed_array(["w9"])[0])
        assert np.array_equal(cache.content(lessons[:1])[0], rows[0])  # the old text's row is still right for it
    finally:
        mem.close()


def test_vector_cache_keeps_the_snapshot_rows_it_reads(tmp_path: Path) -> None:
    mem = LearningMemory.open(tmp_path / "s", namespace=NS)
    try:
        lessons = [Lesson(id=f"l{i}", namespace=NS, rule_text=f"rule {i}") for i in range(5)]
        mem.write("lessons", lessons)
        rows = {l.id: np.full(mem.config.storage.embedding_dim, float(i), dtype=np.float32) for i, l in enumerate(lessons)}
        asked: list[list[str]] = []

        def known(ids: list[str]) -> dict[str, np.ndarray]:
            asked.append(list(ids))
            return {i: rows[i] for i in ids if i != "l4"}  # l4: not in the snapshot, read from Chroma

        cache = VectorCache(mem.store, mem.config.storage.embedding_dim, capacity=3, known=known)
        first = cache.relevance_here(lessons[:3])
        assert first is not None and np.array_equal(first, np.vstack([rows[l.id] for l in lessons[:3]]))
        again = cache.relevance_here(lessons[:3])
        assert again is not None and np.array_equal(again, first)
        assert asked == [["l0", "l1", "l2"]]  # the second time from the cache: no snapshot read
        assert cache.relevance_here(lessons[3:]) is None  # l4 needs Chroma: the engine asks ``relevance`` next
        assert np.array_equal(cache.relevance(lessons[3:])[0], rows["l3"])
        assert list(cache._relevance) == ["l2", "l3", "l4"]  # bounded: least recently used evicted first
    finally:
        mem.close()


def test_action_candidates_and_tool_filter_from_the_index_equal_reading_the_lessons(synthetic: tuple[Path, list]) -> None:  # type: ignore[type-arg]
    """The failing-action source and the tool filter read status, tool and pattern from the graph's
    index so dropped lessons are never parsed; they must equal the same rules applied to the lessons."""
    from langmem_plus.retrieval.scoring import rewrite_applies

    from langmem_plus.config import MemoryConfig

    root, queries = synthetic
    mem = LearningMemory.open(root, namespace=NS, clock=lambda: NOW, config=MemoryConfig(storage={"warm_lessons": False}))
    try:
        assert mem.lessons.parsed_count() == 0
        found = 0
        for q in queries:
            action, tool = q.event.action, q.event.tool
            fast = mem.engine.sources.action(action, tool)
            assert mem.lessons.parsed_count() == 0  # nothing parsed to find them
            ref = sorted(
                (mem.lessons[i].scope.tool not in (None, tool), i)
                for i in mem.graph.lessons_for_action(action)
                if mem.lessons[i].retrievable and rewrite_applies(mem.lessons[i], [action])
            )
            assert fast == [i for _, i in ref[: mem.config.retrieval.candidates_k]]
            # tool_only (the engine's): this tool's lessons (and unscoped ones) only, the rest never checked; what
            # ``error_sources`` keeps of the full list
            mine = mem.engine.sources.action(action, tool, tool_only=True)
            assert mine == ([i for i in fast if mem.engine.sources.tool_ok(i, tool)] if tool else fast)
            found += len(fast)
            for i in list(mem.lessons)[:50]:
                assert mem.engine.sources.tool_ok(i, tool or "") == (mem.lessons[i].scope.tool in (None, tool or ""))
            mem.view.lessons = type(mem.lessons)(Lesson, NS, {i: mem.lessons.raw_json(i) for i in mem.lessons})
            mem.engine.lessons = mem.lessons
        assert found > len(queries)
    finally:
        mem.close()


def test_fast_scoring_equals_the_reference_on_pre_run_inputs(synthetic: tuple[Path, list]) -> None:  # type: ignore[type-arg]
    """Pre-run scores with ``_score_fast`` too: several earlier failed actions and known lessons at once."""
    from langmem_plus.retrieval.fast_scoring import ActionMatcher

    root, queries = synthetic
    mem = LearningMemory.open(root, namespace=NS, clock=lambda: NOW)
    try:
        eng = mem.engine
        compared = 0
        for n in range(0, len(queries) - 3, 3):
            batch = queries[n : n + 3]
            actions = [q.event.action for q in batch]
            ids = sorted({i for q in batch for i in eng.graph.lessons_for_action(q.event.action)})[:30]
            sources = {i: ["history" if k % 4 == 0 else "graph"] for k, i in enumerate(ids)}
            known = set(ids[::5])
            qvec = mem.store.embed_query(" ".join(actions))
            kwargs = dict(fingerprint_ids={q.event.fingerprint_id for q in batch}, tags={t for q in batch for t in q.event.tags}, now=NOW, known=known)
            ref = score_reference(eng, sources, qvec, {}, actions=actions, **kwargs)  # type: ignore[arg-type]
            fast = eng._score_fast(sources, qvec, {}, matcher=ActionMatcher(actions), **kwargs)  # type: ignore[arg-type]
            assert [(c.item_id, c.score, c.components, c.reasons) for c in fast] == [
                (c.item_id, c.score, c.components, c.reasons) for c in ref
            ]
            compared += len(ref)
        assert compared > 50  # scored candidates compared, over all batches
    finally:
        mem.close()
