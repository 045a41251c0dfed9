"""Slow, obvious versions of the selection functions, kept only to test the fast ones against.

STYLE: a fast algorithm keeps an obvious reference beside it; the references only tests
use live in the tests. ``mmr.mmr_select_reference`` stays beside its fast
version (``select_reference`` uses it); the PageRank references are in
``tests/ppr_reference.py``. Here: the guards of design.md §5.4 and the budget of §5.6,
written the way the design states them rather than the way ``select`` computes them (one
pass, counters, union-find), and the on-error retrieval done sequentially with the
reference scoring, which the overlapped fast path must equal.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping, Sequence

import numpy as np

from langmem_plus.config import DEFAULT_CONFIG, MemoryConfig
from langmem_plus.records import ErrorEvent, Lesson, ScoredItem, WorkingContext
from langmem_plus.retrieval.engine import Retrieval, RetrievalEngine, _error_query
from langmem_plus.retrieval.scoring import cosine, fingerprint_credit, lesson_components, lesson_score
from langmem_plus.retrieval.select import default_bucket_of, default_run_of


def _cluster(start: int, live: list[int], items: Sequence[ScoredItem]) -> set[int]:
    """Positions conflict-linked to ``start`` (either direction, transitively), by breadth-first search."""
    ids: dict[str, int] = {}
    for i in live:
        it = items[i].item
        if isinstance(it, Lesson):
            ids.setdefault(it.id, i)
    seen, todo = {start}, [start]
    while todo:
        cur = todo.pop()
        cur_lesson = items[cur].item
        assert isinstance(cur_lesson, Lesson)
        for j in ids.values():
            other = items[j].item
            assert isinstance(other, Lesson)
            linked = other.id in cur_lesson.conflicts_with or cur_lesson.id in other.conflicts_with
            if linked and j not in seen:
                seen.add(j)
                todo.append(j)
    return seen


def apply_guards_reference(
    items: Sequence[ScoredItem],
    config: MemoryConfig = DEFAULT_CONFIG,
    *,
    run_of: Callable[[ScoredItem], str | None] = default_run_of,
    bucket_of: Callable[[ScoredItem], str | None] = default_bucket_of,
) -> tuple[list[str], list[tuple[str, str]]]:
    """design.md §5.4 literally: the kept ids in score order, and the ``(id, why)`` drops.

    Each item, best first: a repeated id is a duplicate; a suppressed or archived
    lesson is dropped; a lesson that is not the best of its conflict cluster (highest
    reliability, then newest evidence, then rank) loses; an item whose bucket or run
    already has ``cap`` kept items (counted by scanning the kept list) is capped.
    """
    order = sorted(range(len(items)), key=lambda i: -items[i].score)
    dropped: list[tuple[str, str]] = []
    live: list[int] = []
    for i in order:
        item = items[i]
        if any(items[j].item_id == item.item_id for j in order[: order.index(i)]):
            dropped.append((item.item_id, "duplicate"))
        elif isinstance(item.item, Lesson) and item.item.status in ("suppressed", "archived"):
            dropped.append((item.item_id, f"status:{item.item.status}"))
        else:
            live.append(i)
    rank = {i: r for r, i in enumerate(live)}
    kept: list[int] = []
    for i in live:
        item = items[i]
        if isinstance(item.item, Lesson):
            cluster = _cluster(i, live, items)
            if len(cluster) > 1:
                def key(j: int) -> tuple[float, float, int]:
                    les = items[j].item
                    assert isinstance(les, Lesson)
                    return (les.reliability, les.updated_at, -rank[j])

                best = max(cluster, key=key)
                if best != i:
                    dropped.append((item.item_id, f"conflict_loss:{items[best].item_id}"))
                    continue
        bucket, run = bucket_of(item), run_of(item)
        if bucket is not None and sum(1 for j in kept if bucket_of(items[j]) == bucket) >= config.retrieval.tag_bucket_cap:
            dropped.append((item.item_id, f"tag_bucket_cap:{bucket}"))
            continue
        if run is not None and sum(1 for j in kept if run_of(items[j]) == run) >= config.retrieval.per_run_cap:
            dropped.append((item.item_id, f"per_run_cap:{run}"))
            continue
        kept.append(i)
    return [items[i].item_id for i in kept], dropped


def budget_reference(difficulty: float, config: MemoryConfig = DEFAULT_CONFIG) -> int:
    """K' as design.md §5.6 states it: <= 0.3 -> 3, <= 0.7 -> 5, else 7 (configurable); NaN or inf count as 0."""
    if not math.isfinite(difficulty):
        difficulty = 0.0
    if difficulty <= config.retrieval.difficulty_easy_max:
        return config.retrieval.budget_easy
    if difficulty <= config.retrieval.difficulty_medium_max:
        return config.retrieval.budget_medium
    return config.retrieval.budget_hard


def score_reference(
    engine: RetrievalEngine,
    sources: dict[str, list[str]],
    qvec: list[float],
    vector_sims: Mapping[str, float],
    *,
    fingerprint_ids: Collection[str],
    tags: Collection[str],
    now: float,
    actions: Sequence[str] = (),
    known: Collection[str] = (),
) -> list[ScoredItem]:
    """Every candidate scored by the reference functions of ``scoring``: ``RetrievalEngine._score_fast`` must equal it."""
    lessons = engine.sources.retrievable(sources)
    need = [l for l in lessons if l.id not in vector_sims]
    q = np.asarray(qvec, dtype=np.float32)
    sims = dict(vector_sims)
    if need:
        sims.update(zip((l.id for l in need), (cosine(q, row) for row in engine.vectors.relevance(need))))
    items: list[ScoredItem] = []
    for lesson in lessons:
        sim = sims[lesson.id]
        comps = lesson_components(
            lesson, fingerprint_ids=fingerprint_ids, tags=tags, text_similarity=sim, now=now, config=engine.config
        )
        if lesson.id in known:
            comps["fingerprint_match"] = 1.0
        else:
            comps["fingerprint_match"] = fingerprint_credit(
                lesson,
                exact=comps["fingerprint_match"] > 0,
                actions=actions,
                miss_factor=engine.config.retrieval.rewrite_miss_factor,
                action_credit=engine.config.retrieval.action_match_credit,
            )
        items.append(
            ScoredItem(
                kind="lesson",
                item=lesson,
                score=lesson_score(comps, engine.config),
                components=comps,
                reasons=[f"source:{s}" for s in sources[lesson.id]],
            )
        )
    order = sorted(range(len(items)), key=lambda i: -items[i].score)
    return [items[i] for i in order]


def on_error_reference(
    engine: RetrievalEngine, event: ErrorEvent, ctx: WorkingContext, *, now: float, limit: int | None = None
) -> Retrieval:
    """``RetrievalEngine.on_error`` the obvious way: every step in turn, reference scoring."""
    query = _error_query(event, ctx, engine.config.capture.query_error_chars)
    qvec = engine.store.embed_query(query)
    exact = engine.graph.lessons_for_fingerprint(event.fingerprint_id)
    action = engine.sources.action(event.action, event.tool) if event.action else []
    vec = engine.sources.vector(qvec, engine.config.retrieval.candidates_k)
    graph = engine.sources.graph_top(engine.sources.error_seeds(event), engine.config.retrieval.error_graph_k)
    sources = engine.sources.error_sources(event, exact, action, vec, graph.scores)
    items = score_reference(
        engine, sources, qvec, vec, fingerprint_ids={event.fingerprint_id}, tags=event.tags, now=now, actions=[event.action] if event.action else []
    )
    goal = ctx.goal or event.error_text[: engine.config.capture.context_text_chars]
    return engine._finish(items, ctx, query, qvec=qvec, goal=goal, now=now, limit=limit, graph_ms=graph.ms)


__all__ = ["apply_guards_reference", "budget_reference", "on_error_reference", "score_reference"]
