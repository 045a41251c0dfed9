"""The graph step by node id (``store.walk``, ``LessonGraph._pagerank_of_ids``) against the named walk it replaced:
the same nodes in the same order, the same edges, the same PageRank top, bit for bit."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from langmem_plus.records import Lesson, LessonScope, Link
from langmem_plus.store.graph import DEFAULT_EXCLUDED, LessonGraph, fp_node, lesson_node, tag_node, tool_node
from langmem_plus.store.walk import walk_ids

NS = ("acme", "walk")
TAGS = ["t0", "t1", "t2", "t3"]
STATUSES = ["candidate", "candidate", "promoted", "suppressed", "archived"]


def _lesson(i: int, rng: random.Random, n: int) -> Lesson:
    return Lesson(
        id=f"l{i}", namespace=NS, rule_text=f"rule {i}", triggers=[f"f{rng.randrange(max(2, n // 5))}"],
        tags=rng.sample(TAGS, rng.randint(1, 2)), status=rng.choice(STATUSES),
        scope=LessonScope(tool=rng.choice(["a", "b", None])), wrong=f"w{i % 5}", correct=f"C{i}",
    )


def _graph(seed: int, n: int, writes: int, compact: bool) -> LessonGraph:
    """A graph of ``n`` lessons and links, then ``writes`` changes (status, fields, removals, links) in the overlay."""
    rng = random.Random(seed)
    lessons = [_lesson(i, rng, n) for i in range(n)]
    links = [Link(id=f"k{j}", namespace=NS, a=lesson_node(f"l{rng.randrange(n)}"), b=lesson_node(f"l{rng.randrange(n)}"),
                  weight=float(rng.randint(1, 3))) for j in range(n // 4)]
    g = LessonGraph.from_records(lessons, links=links)
    if compact:
        g.adjacency.compact()
    for _ in range(writes):
        r, lesson = rng.random(), rng.choice(lessons)
        if r < 0.5:
            g.upsert_lesson(lesson.model_copy(update={"status": rng.choice(STATUSES), "tags": rng.sample(TAGS, 1)}))
        elif r < 0.7:
            g.remove_lesson(lesson.id)
        elif r < 0.85:
            g.upsert_lesson(_lesson(n + rng.randrange(50), rng, n))  # a new lesson: a node past the snapshot
        else:
            g.add_link(Link(id=f"x{rng.random()}", namespace=NS, a=lesson_node(lesson.id),
                            b=lesson_node(f"l{rng.randrange(n)}"), weight=2.0))
    return g


def _seeds(rng: random.Random, n: int) -> dict[str, float]:
    pool = [fp_node(f"f{rng.randrange(n // 5 + 2)}"), tag_node(rng.choice(TAGS)), tool_node(rng.choice(["a", "b"])),
            lesson_node(f"l{rng.randrange(n)}"), "fp:unknown"]
    return {node: rng.choice([1.0, 0.5, 0.25, 0.0]) for node in rng.sample(pool, rng.randint(1, len(pool)))}


def _named(g: LessonGraph, monkeypatch: pytest.MonkeyPatch) -> Any:
    """``g.personalized_pagerank`` through the named walk (the code before the walk by id)."""
    def run(*args: Any, **kwargs: Any) -> dict[str, float]:
        with monkeypatch.context() as m:
            m.setattr(g, "_neighbourhood_ids", lambda *a, **k: None)
            return g.personalized_pagerank(*args, **kwargs)
    return run


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from([40, 150]), st.integers(0, 40), st.booleans())
def test_walk_by_id_equals_the_named_walk(seed: int, n: int, writes: int, compact: bool) -> None:
    g = _graph(seed, n, writes, compact)
    rng = random.Random(seed + 1)
    adj = g.adjacency
    for _ in range(4):
        seeds = _seeds(rng, n)
        for hops in (1, 2, 3):
            for max_nodes in (1, 3, 17, 60, 10_000):
                named = g.neighbourhood(seeds, hops=hops, max_nodes=max_nodes)
                walked = g._neighbourhood_ids(seeds, hops=hops, max_nodes=max_nodes, excluded=DEFAULT_EXCLUDED)
                assert walked is not None
                start, ids, is_lesson = walked
                assert [adj.name(i) for i in ids] == named
                assert start == named[: len(start)]
                assert [bool(is_lesson[i]) for i in ids] == [node in g._status for node in named]
                if named:
                    index = {node: i for i, node in enumerate(named)}
                    for got, want in zip(adj.edges_among_ids(np.asarray(ids)), adj.edges_among(named, index)):
                        assert np.array_equal(got, want)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(0, 30), st.booleans())
def test_pagerank_by_id_equals_the_named_pagerank_bit_for_bit(seed: int, writes: int, compact: bool) -> None:
    g = _graph(seed, 120, writes, compact)
    rng = random.Random(seed + 2)
    with pytest.MonkeyPatch.context() as mp:
        named = _named(g, mp)
        for _ in range(4):
            seeds = _seeds(rng, 120)
            for max_nodes, top in ((200, 20), (30, 5), (10_000, None), (8, 0)):
                got = g.personalized_pagerank(seeds, max_nodes=max_nodes, top=top)
                want = named(seeds, max_nodes=max_nodes, top=top)
                assert list(got.items()) == list(want.items())
                other = g.personalized_pagerank(seeds, max_nodes=max_nodes, top=top, exclude_status=("archived",))
                assert list(other.items()) == list(named(seeds, max_nodes=max_nodes, top=top, exclude_status=("archived",)).items())


def test_the_masks_follow_status_changes_and_new_nodes() -> None:
    g = _graph(3, 40, 0, True)
    blocked, lessons = g._walk_masks(DEFAULT_EXCLUDED)
    g.upsert_lesson(Lesson(id="l0", namespace=NS, rule_text="r", tags=["t0"], status="suppressed"))
    g.upsert_lesson(Lesson(id="fresh", namespace=NS, rule_text="r", tags=["brand_new"]))
    blocked, lessons = g._walk_masks(DEFAULT_EXCLUDED)
    adj = g.adjacency
    assert len(blocked) == len(lessons) == adj.node_count()
    for gid in range(adj.node_count()):
        node = adj.name(gid)
        assert bool(lessons[gid]) == (node in g._status)
        assert bool(blocked[gid]) == (g._status.get(node) in DEFAULT_EXCLUDED)


def test_a_seed_without_a_node_id_takes_the_named_walk() -> None:
    g = LessonGraph.from_records([Lesson(id="a", namespace=NS, rule_text="r", tags=["t0"])])
    g._skills["skill:lonely"] = "lonely"  # in the graph, yet no adjacency row or id
    assert g._neighbourhood_ids({"skill:lonely": 1.0, tag_node("t0"): 0.5}, hops=2, max_nodes=10, excluded=DEFAULT_EXCLUDED) is None
    assert set(g.personalized_pagerank({"skill:lonely": 1.0, tag_node("t0"): 0.5})) == {"a"}


def test_walk_ids_stops_at_max_nodes_in_chunk_order() -> None:
    g = LessonGraph.from_records([Lesson(id=f"l{i}", namespace=NS, rule_text="r", tags=["t0"]) for i in range(300)])
    g.adjacency.compact()
    adj = g.adjacency
    blocked = np.zeros(adj.node_count(), dtype=bool)
    start = [adj.gid(tag_node("t0"))]
    ids = walk_ids(adj, start, hops=1, max_nodes=150, blocked=blocked)  # the hub's second chunk is cut
    assert [adj.name(i) for i in ids] == g.neighbourhood({tag_node("t0"): 1.0}, hops=1, max_nodes=150)
    assert len(ids) == 150


def test_status_masks_read_the_column_in_place() -> None:
    from langmem_plus.store.lesson_columns import LessonColumns

    cols = LessonColumns()
    for gid, status in ((0, "candidate"), (2, "suppressed"), (3, "archived"), (5, "promoted")):
        cols.set_lesson(gid, status, None)
    cols.set_lesson(3, None, None)  # not a lesson any more
    blocked, lessons = cols.status_masks(8, ("suppressed", "archived", "no_such_status"))
    assert blocked.tolist() == [False, False, True, False, False, False, False, False]
    assert lessons.tolist() == [True, False, True, False, False, True, False, False]
