"""Fast retrieval pieces against their slow references: adjacency/CSR, sparse PageRank,
batched hashing embeddings, guards, budget, token cap, the WRONG-pattern index."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from langmem_plus.config import DEFAULT_CONFIG, MemoryConfig
from langmem_plus.embeddings import HashingEmbeddings
from langmem_plus.records import Lesson, LessonScope, Link, Provenance, ScoredItem
from langmem_plus.retrieval.select import apply_guards, budget
from langmem_plus.retrieval.support import cap_tokens, cap_tokens_reference
from langmem_plus.store.graph import LessonGraph, fp_node, tag_node, tool_node
from langmem_plus.store.ppr import sparse_power_iteration, sparse_ppr
from ppr_reference import dense_ppr, power_iteration
from retrieval_reference import apply_guards_reference, budget_reference

NS = ("acme", "fast")
TAGS = ["t0", "t1", "t2", "t3", "t4"]


def _lessons(n: int, seed: int) -> list[Lesson]:
    rng = random.Random(seed)
    return [
        Lesson(
            id=f"l{i}", namespace=NS, rule_text=f"rule {i}",
            triggers=[f"f{rng.randrange(max(2, n // 4))}"], tags=rng.sample(TAGS, 2),
            status=rng.choice(["candidate", "candidate", "promoted", "suppressed", "archived"]),
            scope=LessonScope(tool=rng.choice(["a", "b"]), domain="d"),
            conflicts_with=[f"l{rng.randrange(n)}"] if rng.random() < 0.1 else [],
            wrong=f"w{i % 7}", correct=f"C{i}",
        )
        for i in range(n)
    ]


def _links(n: int, seed: int, k: int) -> list[Link]:
    rng = random.Random(seed)
    return [
        Link(id=f"k{j}", namespace=NS, a=f"lesson:l{rng.randrange(n)}", b=f"lesson:l{rng.randrange(n)}", weight=float(rng.randint(1, 3)))
        for j in range(k)
    ]


def _dense(n: int, entries: tuple[np.ndarray, np.ndarray, np.ndarray]) -> np.ndarray:
    m = np.zeros((n, n))
    np.add.at(m, (entries[0], entries[1]), entries[2])
    return m


def _adjacency_from_nx(g: LessonGraph) -> dict[tuple[str, str], float]:
    out: dict[tuple[str, str], float] = {}
    for u, v, d in g.nx.edges(data=True):
        if u != v:
            for key in ((u, v), (v, u)):
                out[key] = out.get(key, 0.0) + float(d.get("weight", 1.0))
    return out


@pytest.mark.parametrize("seed", range(4))
def test_adjacency_stays_in_step_with_networkx_through_writes(seed: int) -> None:
    rng = random.Random(seed)
    lessons = _lessons(60, seed)
    g = LessonGraph.from_records(lessons, links=_links(60, seed, 30))
    assert g.nx.number_of_edges() > 0  # built now, so the writes below keep it in step edge by edge
    for _ in range(80):  # upserts with changed fields, removals, links
        r = rng.random()
        lesson = rng.choice(lessons)
        if r < 0.4:
            g.upsert_lesson(lesson.model_copy(update={"tags": rng.sample(TAGS, 1), "triggers": [f"f{rng.randrange(9)}"]}))
        elif r < 0.6:
            g.remove_lesson(lesson.id)
        else:
            g.add_link(rng.choice(_links(60, rng.randrange(1000), 1)))
    live = {(u, v): cell[1] for u, row in g.adjacency.as_dict().items() for v, cell in row.items()}
    assert live == pytest.approx(_adjacency_from_nx(g))
    g.adjacency.compact()
    assert {(u, v): cell[1] for u, row in g.adjacency.as_dict().items() for v, cell in row.items()} == pytest.approx(live)
    lazy = LessonGraph.from_state(*g.to_state(), lesson_source=lambda i: None)
    lazy._targets = dict(g._targets)
    assert lazy.snapshot() == g.snapshot()  # a view built from the state equals the one kept in step


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("max_nodes", [12, 40, 10_000])
def test_vectorised_edges_equal_reference_with_hubs_and_dirty_nodes(seed: int, max_nodes: int) -> None:
    lessons = _lessons(120, seed)
    g = LessonGraph.from_records(lessons, links=_links(120, seed, 40))
    # Writes after the snapshot leave dirty nodes that must be read from the dictionaries.
    for lesson in lessons[:15]:
        g.upsert_lesson(lesson.model_copy(update={"tags": ["t0"], "triggers": ["fresh"]}))
    g.add_link(Link(id="x", namespace=NS, a="lesson:l3", b="lesson:l90", weight=5.0))
    seeds = {fp_node("fresh"): 1.0, tag_node("t1"): 0.5, tool_node("a"): 0.25}
    nodes = g.neighbourhood(seeds, max_nodes=max_nodes, hops=3)
    index = {n: i for i, n in enumerate(nodes)}
    fast = _dense(len(nodes), g.adjacency.edges_among(nodes, index))
    ref = _dense(len(nodes), g.adjacency.edges_among_reference(nodes, index))
    assert np.abs(ref).sum() > 0
    assert fast == pytest.approx(ref)
    g.adjacency.compact()
    assert _dense(len(nodes), g.adjacency.edges_among(nodes, index)) == pytest.approx(ref)


@pytest.mark.parametrize("seed", range(4))
def test_sparse_ppr_equals_dense_reference_on_bounded_neighbourhoods(seed: int) -> None:
    g = LessonGraph.from_records(_lessons(150, seed), links=_links(150, seed, 50))
    seeds = {fp_node("f1"): 1.0, tag_node(TAGS[seed]): 0.5, tool_node("b"): 0.25}
    for max_nodes in (15, 60, 400):
        fast = g.personalized_pagerank(seeds, max_nodes=max_nodes)
        dense = dense_ppr(g, seeds, max_nodes=max_nodes)
        assert fast and set(fast) == set(dense)
        for lid, score in dense.items():
            assert fast[lid] == pytest.approx(score, abs=1e-9)


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 12), st.integers(0, 10_000), st.floats(0.1, 0.95))
def test_sparse_power_iteration_equals_dense(n: int, seed: int, alpha: float) -> None:
    rng = np.random.default_rng(seed)
    w = rng.random((n, n)) * (rng.random((n, n)) < 0.4)
    w = w + w.T
    np.fill_diagonal(w, 0.0)
    p = rng.random(n) + 1e-3
    p = p / p.sum()
    rows, cols = np.nonzero(w)
    sparse = sparse_power_iteration(n, rows, cols, w[rows, cols], p, alpha)
    assert sparse == pytest.approx(power_iteration(w, p, alpha), abs=1e-9)


def _symmetric_graph(n: int, seed: int, isolated: int) -> tuple[np.ndarray, np.ndarray]:
    """A random symmetric weight matrix with ``isolated`` dangling nodes first, and a normalised seed vector with at
    least one seed (node 0, possibly an isolated one)."""
    rng = np.random.default_rng(seed)
    w = rng.random((n, n)) * (rng.random((n, n)) < 0.3) * rng.choice([1.0, 5.0], size=(n, n))
    w = w + w.T
    np.fill_diagonal(w, 0.0)
    w[: min(isolated, n), :] = 0.0
    w[:, : min(isolated, n)] = 0.0
    p = rng.random(n) * (rng.random(n) < 0.5)
    p[0] += 0.5
    return w, p / p.sum()


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 30), st.integers(0, 10_000), st.floats(0.1, 0.95), st.integers(0, 3))
def test_sparse_ppr_solves_the_power_iteration_fixed_point(n: int, seed: int, alpha: float, isolated: int) -> None:
    """Conjugate gradients reach the same PageRank as the power iteration run to 1e-14, with
    isolated (dangling) nodes and seeds among them, and the answer meets the iteration's stop rule."""
    w, p = _symmetric_graph(n, seed, isolated)
    rows, cols = np.nonzero(w)
    exact = power_iteration(w, p, alpha, tol=1e-15, max_iter=100_000)
    solved = sparse_ppr(n, rows, cols, w[rows, cols], p, alpha)
    assert solved == pytest.approx(exact, abs=1e-9)
    assert solved.sum() == pytest.approx(1.0)
    again = sparse_power_iteration(n, rows, cols, w[rows, cols], p, alpha, start=solved, max_iter=1)
    assert np.abs(again - solved).sum() < n * 1e-6


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 40), st.integers(0, 10_000), st.floats(0.1, 0.95), st.integers(0, 3), st.sampled_from([1e-2, 1e-4, 1e-6]))
def test_sparse_ppr_with_rtol_is_within_the_conjugate_gradients_bound(n: int, seed: int, alpha: float, isolated: int, rtol: float) -> None:
    """With ``rtol`` (``MemoryConfig.pagerank_rtol``) the solve stops early and is not checked: each score is
    within ``c sqrt(max degree) rtol |p D^-1/2| / (1 - alpha)`` of the exact answer (the scaled system's
    eigenvalues are at least ``1 - alpha``; ``c`` the normalisation, exact since dangling rows are ``p``)."""
    w, p = _symmetric_graph(n, seed, isolated)
    rows, cols = np.nonzero(w)
    exact = sparse_ppr(n, rows, cols, w[rows, cols], p, alpha)
    loose = sparse_ppr(n, rows, cols, w[rows, cols], p, alpha, rtol=rtol)
    degree = w.sum(axis=1)
    linked = degree > 0
    c = (1 - alpha) / (1 - alpha * float(p[~linked].sum()))
    b = np.linalg.norm(p[linked] / np.sqrt(degree[linked])) if linked.any() else 0.0
    bound = c * math.sqrt(float(degree.max())) * rtol * b / (1 - alpha)
    assert np.abs(loose - exact).max() <= bound + 1e-12
    assert loose[~linked] == pytest.approx(exact[~linked], abs=1e-12)  # dangling rows: (1 - alpha) p / ..., exact


def test_graph_step_rtol_keeps_the_ranking_on_small_graphs() -> None:
    """The default ``pagerank_rtol`` on the test graphs: the scores move by less than 1e-5 and the top lessons are
    the exact solve's, in order, wherever the exact scores differ by more than that."""
    rtol = DEFAULT_CONFIG.retrieval.pagerank_rtol
    for seed in range(4):
        g = LessonGraph.from_records(_lessons(300, seed), links=_links(300, seed, 80))
        seeds = {fp_node("f1"): 1.0, tag_node(TAGS[seed]): 0.5, tool_node("a"): 0.25}
        for max_nodes in (33, 200, 10_000):
            exact = g.personalized_pagerank(seeds, max_nodes=max_nodes)
            loose = g.personalized_pagerank(seeds, max_nodes=max_nodes, rtol=rtol)
            assert set(loose) == set(exact)
            assert max(abs(loose[i] - exact[i]) for i in exact) < 1e-5
            top = list(g.personalized_pagerank(seeds, max_nodes=max_nodes, top=20, rtol=rtol))
            want = sorted(exact, key=lambda i: -exact[i])[:20]
            for got, best in zip(top, want):
                assert got == best or abs(exact[got] - exact[best]) < 2e-5


def test_sparse_ppr_falls_back_to_the_iteration_when_weights_are_not_symmetric_or_negative() -> None:
    rng = np.random.default_rng(3)
    n = 12
    w = rng.random((n, n)) * (rng.random((n, n)) < 0.5)
    np.fill_diagonal(w, 0.0)  # not symmetric: CG's assumption fails, the check catches it
    p = np.full(n, 1.0 / n)
    rows, cols = np.nonzero(w)
    reference = power_iteration(w, p, 0.85, tol=1e-15, max_iter=100_000)
    assert sparse_ppr(n, rows, cols, w[rows, cols], p, 0.85) == pytest.approx(reference, abs=1e-5)
    signed = w[rows, cols].copy()
    signed[0] = -0.1
    assert np.allclose(
        sparse_ppr(n, rows, cols, signed, p, 0.85), sparse_power_iteration(n, rows, cols, signed, p, 0.85)
    )


def test_sparse_ppr_needs_few_sparse_products(monkeypatch: pytest.MonkeyPatch) -> None:
    """The point of the solver: ~10 products on a hub-shaped neighbourhood where the iteration takes ~50."""
    n = 200
    rows_l, cols_l = [], []
    for lesson in range(3, n):  # a fingerprint (0), a tag hub (1) and a tool hub (2) over 197 lessons
        for hub in ((0, 1, 2) if lesson < 8 else (1, 2) if lesson % 3 else (1,)):
            rows_l += [lesson, hub]
            cols_l += [hub, lesson]
    rows, cols = np.array(rows_l), np.array(cols_l)
    w = np.ones(len(rows))
    p = np.array([1.0, 0.5, 0.25] + [0.0] * (n - 3))
    p = p / p.sum()
    calls = 0
    real = np.bincount

    def counting(*args: object, **kwargs: object) -> np.ndarray:
        nonlocal calls
        calls += 1
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(np, "bincount", counting)
    fast = sparse_ppr(n, rows, cols, w, p, 0.85)
    fast_calls, calls = calls, 0
    slow = sparse_power_iteration(n, rows, cols, w, p, 0.85)
    assert fast == pytest.approx(slow, abs=1e-4)
    assert fast_calls * 3 < calls
    calls = 0
    loose = sparse_ppr(n, rows, cols, w, p, 0.85, rtol=DEFAULT_CONFIG.retrieval.pagerank_rtol)
    assert loose == pytest.approx(fast, abs=1e-4)
    assert calls < fast_calls  # the graph step's stop: fewer products, no check


def _neighbourhood_reference(g: LessonGraph, seeds: dict[str, float], hops: int, max_nodes: int) -> list[str]:
    """The walk node by node: seeds heaviest first, then hop by hop, low-fanout nodes first."""
    excluded = {"suppressed", "archived"}
    visited: list[str] = []
    for node in sorted((n for n, w in seeds.items() if w > 0), key=lambda n: (-seeds[n], n)):
        if len(visited) < max_nodes and node in g and g._status.get(node) not in excluded:
            visited.append(node)
    frontier = list(visited)
    for _ in range(hops):
        nxt = []
        for node in sorted(frontier, key=lambda n: (g.adjacency.fanout(n), n)):
            for nb in g.adjacency.neighbours(node):
                if len(visited) >= max_nodes:
                    return visited
                if nb not in visited and g._status.get(nb) not in excluded:
                    visited.append(nb)
                    nxt.append(nb)
        frontier = nxt
    return visited


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("max_nodes", [10, 33, 130, 10_000])
def test_neighbourhood_and_top_ranks_equal_references(seed: int, max_nodes: int) -> None:
    g = LessonGraph.from_records(_lessons(300, seed), links=_links(300, seed, 80))
    for lesson in _lessons(300, seed)[:10]:  # changed rows live in the overlay
        g.upsert_lesson(lesson.model_copy(update={"tags": ["t0"]}))
    seeds = {fp_node("f1"): 1.0, tag_node(TAGS[seed]): 0.5, tool_node("a"): 0.25}
    for hops in (1, 2, 3):
        assert g.neighbourhood(seeds, hops=hops, max_nodes=max_nodes) == _neighbourhood_reference(g, seeds, hops, max_nodes)
    full = g.personalized_pagerank(seeds, max_nodes=max_nodes)
    for k in (0, 1, 7, 10_000):
        top = g.personalized_pagerank(seeds, max_nodes=max_nodes, top=k)
        assert list(top.items()) == sorted(full.items(), key=lambda kv: -kv[1])[:k]


def test_batched_hashing_embeddings_equal_row_by_row() -> None:
    emb = HashingEmbeddings(dim=64)
    texts = ["WRONG: pick -> CORRECT: SELECT", "", "  ", "a", "no such column: agee", "x" * 300]
    rows = np.vstack([emb._row(t) for t in texts])
    ref = (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)
    assert np.array_equal(emb.embed_array(texts), ref)


def test_wrong_pattern_index_follows_upserts_and_removals() -> None:
    a = Lesson(id="a", namespace=NS, rule_text="r", wrong="Pick name", correct="SELECT name")
    g = LessonGraph.from_records([a, Lesson(id="b", namespace=NS, rule_text="r")])
    assert g.lessons_for_action("pick name | sort") == {"a"}
    assert g.lessons_for_action("sort age") == set()
    g.upsert_lesson(a.model_copy(update={"wrong": "sortd"}))
    assert g.lessons_for_action("pick name") == set() and g.lessons_for_action("x | sortd") == {"a"}
    g.remove_lesson("a")
    assert g.lessons_for_action("x | sortd") == set()


# --------------------------------------------------------------------------- guards and budget


def _items(draw_seed: int, n: int) -> list[ScoredItem]:
    rng = random.Random(draw_seed)
    out = []
    for i in range(n):
        lid = f"l{rng.randrange(n)}"  # repeated ids happen
        out.append(
            ScoredItem(
                kind="lesson",
                score=round(rng.random(), 2),
                item=Lesson(
                    id=lid, namespace=NS, rule_text="r", tags=[rng.choice(TAGS[:3])],
                    wrong=rng.choice([None, "w1", "w2"]), correct="C",
                    status=rng.choice(["candidate", "promoted", "suppressed", "archived", "candidate"]),
                    reliability=rng.choice([0.2, 0.5, 0.8]), updated_at=float(rng.randrange(3)),
                    conflicts_with=[f"l{rng.randrange(n)}"] if rng.random() < 0.3 else [],
                    provenance=Provenance(run_ids=rng.choice([["r1"], ["r2"], ["r1", "r2"]])),
                ),
            )
        )
    return out


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 100_000), st.integers(0, 14), st.integers(1, 3), st.integers(1, 3))
def test_guards_equal_reference(seed: int, n: int, bucket_cap: int, run_cap: int) -> None:
    cfg = MemoryConfig(retrieval={"tag_bucket_cap": bucket_cap, "per_run_cap": run_cap})
    items = _items(seed, n)
    kept, dropped = apply_guards(items, cfg)
    ref_kept, ref_dropped = apply_guards_reference(items, cfg)
    assert [k.item_id for k in kept] == ref_kept
    assert sorted(dropped) == sorted(ref_dropped)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 100_000), st.integers(0, 14), st.integers(1, 3), st.booleans())
def test_guard_positions_and_reasons_equal_the_reference_loop(seed: int, n: int, cap: int, custom: bool) -> None:
    """The fast guards (one pass for the default bucket and run, conflict clusters only when a candidate has a
    link) keep the same positions with the same reasons as ``_guard_positions_reference``."""
    from langmem_plus.retrieval import select as select_mod

    cfg = MemoryConfig(retrieval={"tag_bucket_cap": cap, "per_run_cap": cap})
    items = _items(seed, n)
    rng = random.Random(seed)
    items = [  # untagged lessons have no bucket; some candidates carry no conflict link at all
        it.model_copy(update={"item": it.item.model_copy(update={"tags": [] if rng.random() < 0.2 else it.item.tags,
                                                                    "conflicts_with": [] if seed % 2 else it.item.conflicts_with})})
        for it in items
    ]
    run_of = (lambda it: it.item_id[-1:]) if custom else select_mod.default_run_of
    bucket_of = (lambda it: None) if custom else select_mod.default_bucket_of
    fast = select_mod._guard_positions(items, cfg, run_of, bucket_of)
    assert fast == select_mod._guard_positions_reference(items, cfg, run_of, bucket_of)


def test_with_reason_equals_model_copy() -> None:
    from langmem_plus.retrieval.select import _with_reason

    for item in _items(3, 6) + [ScoredItem.model_construct(kind="lesson", item=_items(4, 1)[0].item, score=0.1)]:
        fast, ref = _with_reason(item, "why"), item.model_copy(update={"reasons": [*item.reasons, "why"]})
        assert fast == ref and list(fast.__dict__) == list(ref.__dict__)
        assert fast.__pydantic_fields_set__ == ref.__pydantic_fields_set__ and fast.reasons is not item.reasons


@given(st.floats(allow_nan=True, allow_infinity=False, width=32))
def test_budget_equals_reference(d: float) -> None:
    d = float(d)
    expected = budget_reference(min(1.0, max(0.0, d)) if math.isfinite(d) else 0.0, DEFAULT_CONFIG)
    assert budget(d, DEFAULT_CONFIG) == expected == budget_reference(d, DEFAULT_CONFIG)


@given(st.lists(st.integers(0, 400), max_size=12), st.integers(0, 1200))
def test_cap_tokens_equals_reference(costs: list[int], cap: int) -> None:
    items = list(range(len(costs)))
    fast = cap_tokens(items, costs, cap)
    assert fast == cap_tokens_reference(items, costs, cap)
    assert fast[2] <= cap and sorted(fast[0] + fast[1]) == items


def test_cap_tokens_skips_what_does_not_fit_and_keeps_order() -> None:
    assert cap_tokens(["a", "b", "c", "d"], [300, 600, 200, 400], 800) == (["a", "c"], ["b", "d"], 500)
    with pytest.raises(ValueError):
        cap_tokens(["a"], [], 10)


def test_edges_among_before_any_snapshot_and_with_only_changed_rows() -> None:
    """A graph written to since it was empty has no CSR rows at all: every node is read from the overlay."""
    g = LessonGraph()
    for lesson in _lessons(30, 5):
        g.upsert_lesson(lesson)
    nodes = g.neighbourhood({tag_node("t1"): 1.0, tool_node("a"): 0.5}, max_nodes=25)
    index = {n: i for i, n in enumerate(nodes)}
    assert _dense(len(nodes), g.adjacency.edges_among(nodes, index)) == pytest.approx(
        _dense(len(nodes), g.adjacency.edges_among_reference(nodes, index))
    )
