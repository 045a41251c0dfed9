"""LessonGraph: the fingerprint index, rebuild equality, bounded PageRank vs the reference."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from langmem_plus.records import Lesson, LessonScope, Link, Skill
from langmem_plus.store import graph as graph_mod
from langmem_plus.store.graph import (
    LessonGraph,
    fp_node,
    lesson_node,
    tag_node,
    tool_node,
)
from ppr_reference import power_iteration, whole_graph_ppr

NS = ("acme", "agent-7")
TAGS = [
    "syntax_structure", "unknown_symbol", "unknown_command", "path_quote", "operator_mismatch",
    "arity_mismatch", "column_reference", "function_case", "sort_direction", "type_mismatch",
    "not_found", "permission", "timeout", "rate_limit", "no_progress", "constraint_failed",
    "state_stall", "unsafe_action", "goal_distance_increase",
]
STATUSES = ["candidate"] * 6 + ["promoted"] * 2 + ["suppressed", "archived"]


def les(i: Any, *, triggers: list[str] = (), tags: list[str] = (), status: str = "candidate",
        tool: str | None = None, domain: str | None = None, task: str | None = None,
        conflicts: list[str] = (), supersedes: list[str] = ()) -> Lesson:  # type: ignore[assignment]
    return Lesson(
        id=str(i), namespace=NS, rule_text="r", triggers=list(triggers), tags=list(tags),
        status=status, scope=LessonScope(tool=tool, domain=domain, task=task),
        conflicts_with=list(conflicts), supersedes=list(supersedes),
    )


def synthetic(n: int, seed: int = 0) -> list[Lesson]:
    """n lessons over n/4 fingerprints, 19 tags, 3 tools, 2 domains; 20% suppressed/archived."""
    rng = random.Random(seed)
    n_fp = max(5, n // 4)
    return [
        les(
            f"l{i}",
            triggers=[f"f{rng.randrange(n_fp)}" for _ in range(rng.randint(1, 2))],
            tags=rng.sample(TAGS, 2),
            status=rng.choice(STATUSES),
            tool=rng.choice(["gridtool", "fluxtool", "sh"]),
            domain=rng.choice(["tables", "files"]),
            conflicts=[f"l{rng.randrange(n)}"] if rng.random() < 0.1 else [],
        )
        for i in range(n)
    ]


# --------------------------------------------------------------------------- fingerprint index


def test_fingerprint_index_follows_upserts_and_removals() -> None:
    g = LessonGraph()
    g.upsert_lesson(les("a", triggers=["f1", "f2"], tags=["t"]))
    g.upsert_lesson(les("b", triggers=["f2"]))
    assert (g.lessons_for_fingerprint("f1"), g.lessons_for_fingerprint("f2")) == ({"a"}, {"a", "b"})
    g.upsert_lesson(les("a", triggers=["f3"]))  # replaces a's edges
    assert g.lessons_for_fingerprint("f1") == set()
    assert (g.lessons_for_fingerprint("f2"), g.lessons_for_fingerprint("f3")) == ({"b"}, {"a"})
    assert fp_node("f1") not in g and tag_node("t") not in g  # orphans pruned
    g.remove_lesson("b")
    assert g.lessons_for_fingerprint("f2") == set() and fp_node("f2") not in g
    assert lesson_node("b") not in g and g.number_of_lessons == 1
    g.remove_lesson("missing")  # no-op
    assert g.lessons_for_fingerprint("unknown") == set()


def test_index_is_a_copy_and_lessons_for_looks_both_ways() -> None:
    g = LessonGraph.from_records([
        les("a", triggers=["f"], tags=["syntax_structure"], tool="gridtool", conflicts=["b"]),
        les("b", triggers=["f"], tags=["syntax_structure"]),
    ])
    g.lessons_for_fingerprint("f").add("zzz")
    assert g.lessons_for_fingerprint("f") == {"a", "b"}
    assert g.lessons_for(tag_node("syntax_structure")) == {"a", "b"}
    assert g.lessons_for(tool_node("gridtool")) == {"a"}
    assert g.lessons_for(lesson_node("b")) == {"a"}  # incoming conflicts edge
    assert g.lessons_for("tag:none") == set()


def test_upsert_keeps_status_and_replaces_edges() -> None:
    g = LessonGraph()
    g.upsert_lesson(les("a", tags=["x", "y"], tool="gridtool", domain="tables", task="t1", supersedes=["old"]))
    kinds = sorted(k for _, _, k in g.nx.out_edges(lesson_node("a"), keys=True))
    assert kinds == ["scoped", "scoped", "scoped", "supersedes", "tagged", "tagged"]
    g.upsert_lesson(les("a", tags=["y"], status="suppressed"))
    assert g.nx.nodes[lesson_node("a")]["status"] == "suppressed"
    assert sorted(v for _, v in g.nx.out_edges(lesson_node("a"))) == ["tag:y"]
    assert len(g) == 2  # lesson:a and tag:y; the rest were orphans


# --------------------------------------------------------------------------- rebuild equality


def test_rebuild_from_records_equals_live_graph() -> None:
    rng = random.Random(7)
    live = LessonGraph()
    lessons: dict[str, Lesson] = {}
    stored_links: dict[str, Link] = {}
    skills = [Skill(id="sk1", namespace=NS, name="sort tables")]
    live.upsert_skill(skills[0])
    for step in range(600):
        op = rng.random()
        lid = f"l{rng.randrange(60)}"
        if op < 0.6:
            lesson = les(lid, triggers=[f"f{rng.randrange(25)}" for _ in range(rng.randint(0, 3))],
                         tags=rng.sample(TAGS, rng.randint(0, 3)), status=rng.choice(STATUSES),
                         tool=rng.choice([None, "gridtool", "fluxtool"]), domain=rng.choice([None, "tables"]),
                         conflicts=[f"l{rng.randrange(60)}"] if rng.random() < 0.3 else [])
            lessons[lid] = lesson
            live.upsert_lesson(lesson)
        elif op < 0.7 and lid in lessons:
            del lessons[lid]
            live.remove_lesson(lid)
        else:  # co-activation, stored the way the memory stores it: running total per pair
            a, b = sorted([lid, f"l{rng.randrange(60)}"])
            kind = "co_activated" if op < 0.95 else "derived_from"
            link_id = f"lnk_{a}_{b}_{kind}"
            old = stored_links.get(link_id)
            total = (old.weight if old else 0.0) + 1.0
            stored_links[link_id] = Link(id=link_id, namespace=NS, a=lesson_node(a), b=lesson_node(b),
                                         kind=kind, weight=total)
            live.add_link(stored_links[link_id].model_copy(update={"weight": 1.0}))
    rebuilt = LessonGraph.from_records(
        list(reversed(list(lessons.values()))), skills, list(stored_links.values())
    )
    assert rebuilt.snapshot() == live.snapshot()
    assert rebuilt.number_of_lessons == live.number_of_lessons == len(lessons)
    for fp in {t for l in lessons.values() for t in l.triggers}:
        assert rebuilt.lessons_for_fingerprint(fp) == live.lessons_for_fingerprint(fp)
    weights = [d["weight"] for _, _, d in live.nx.edges(data=True) if d["kind"] == "co_activated"]
    assert max(weights) > 1.0  # some pairs really accumulated


def test_co_activated_weight_accumulates() -> None:
    g = LessonGraph.from_records([les("a"), les("b")])
    link = Link(id="lnk1", namespace=NS, a="lesson:a", b="lesson:b", weight=1.0)
    g.add_link(link)
    g.add_link(link.model_copy(update={"weight": 2.0}))
    assert g.nx.get_edge_data("lesson:a", "lesson:b", key="link:co_activated")["weight"] == 3.0
    rebuilt = LessonGraph.from_records([les("a"), les("b")], links=[link.model_copy(update={"weight": 3.0})])
    assert rebuilt.snapshot() == g.snapshot()


# --------------------------------------------------------------------------- PageRank


def _top(scores: dict[str, float], k: int) -> list[str]:
    return [i for i, _ in sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:k]]


@pytest.mark.parametrize("seed", range(5))
def test_ppr_matches_reference_when_neighbourhood_covers_graph(seed: int) -> None:
    g = LessonGraph.from_records(synthetic(40, seed))
    g.add_link(Link(id="x", namespace=NS, a="lesson:l1", b="lesson:l2", weight=4.0))
    seeds = {fp_node("f1"): 1.0, tag_node(TAGS[seed]): 0.5, tool_node("gridtool"): 0.25}
    fast = g.personalized_pagerank(seeds, hops=50, max_nodes=10_000)
    ref = whole_graph_ppr(g, seeds)
    assert fast and ref
    for lid in set(fast) | set(ref):
        assert fast.get(lid, 0.0) == pytest.approx(ref.get(lid, 0.0), abs=1e-6), lid
    assert _top(fast, 5) == _top(ref, 5)


@pytest.mark.parametrize("seed", range(5))
def test_bounded_ppr_ranks_like_reference_on_small_graphs(seed: int) -> None:
    g = LessonGraph.from_records(synthetic(40, seed))
    seeds = {fp_node("f1"): 1.0, tag_node(TAGS[seed]): 0.5, tool_node("gridtool"): 0.25}
    bounded, ref = g.personalized_pagerank(seeds), whole_graph_ppr(g, seeds)
    assert _top(bounded, 1) == _top(ref, 1)
    assert len(set(_top(bounded, 5)) & set(_top(ref, 5))) >= 3


def test_suppressed_and_archived_are_excluded_and_do_not_conduct() -> None:
    g = LessonGraph.from_records([
        les("s", triggers=["f"], status="suppressed", conflicts=["behind"]),
        les("a", triggers=["f"], status="archived"),
        les("ok", triggers=["f"]),
        les("behind", tags=["lonely"]),  # reachable from f only through the suppressed lesson
    ])
    for scores in (g.personalized_pagerank({fp_node("f"): 1.0}), whole_graph_ppr(g, {fp_node("f"): 1.0})):
        assert not {"s", "a"} & set(scores)
        assert scores["ok"] > 0.1
        # the reference keeps the cut-off component at ~0 (leftover of its uniform start)
        assert scores.get("behind", 0.0) < 1e-4 * scores["ok"]
    everything = g.personalized_pagerank({fp_node("f"): 1.0}, exclude_status=())
    assert {"s", "a", "ok", "behind"} == set(everything) and everything["behind"] > 0


def test_unknown_seeds_give_nothing() -> None:
    g = LessonGraph.from_records([les("a", triggers=["f"])])
    assert g.personalized_pagerank({"fp:nope": 1.0}) == {}
    assert g.personalized_pagerank({fp_node("f"): 0.0}) == {}


def test_power_iteration_matches_closed_form() -> None:
    # Two nodes joined by one edge, all teleport to node 0: x0 = (1 - a) + a*x1, x1 = a*x0.
    alpha = 0.85
    x = power_iteration(np.array([[0.0, 1.0], [1.0, 0.0]]), np.array([1.0, 0.0]), alpha, tol=1e-12, max_iter=1000)
    x0 = 1.0 / (1.0 + alpha)
    assert x == pytest.approx([x0, alpha * x0], abs=1e-9)


@pytest.fixture(scope="module")
def big_graph() -> LessonGraph:
    return LessonGraph.from_records(synthetic(20_000, 1))


CHUNK = 128
"""Names per ``Adjacency.neighbour_chunks`` piece: the most a walk reads past its cap."""


def _count_reads(monkeypatch: pytest.MonkeyPatch, g: LessonGraph) -> Callable[[], int]:
    """Count the neighbour names the walk reads from the adjacency: its unit of work."""
    reads = 0
    adjacency = type(g.adjacency)

    def counted(name: str) -> None:
        real = getattr(adjacency, name)

        def counting(self: Any, node: Any, size: int = CHUNK) -> Iterator[Any]:
            nonlocal reads
            for chunk in real(self, node, size):
                reads += len(chunk)
                yield chunk

        monkeypatch.setattr(adjacency, name, counting)

    counted("neighbour_chunks")  # the named walk (``LessonGraph.neighbourhood``)
    counted("neighbour_id_chunks")  # the walk by node id (``walk.walk_ids``)

    def taken() -> int:
        nonlocal reads
        out, reads = reads, 0
        return out

    return taken


def test_bounded_ppr_on_20k_lessons_reads_o_max_nodes_neighbours(big_graph: LessonGraph, monkeypatch: pytest.MonkeyPatch) -> None:
    g = big_graph
    assert g.number_of_lessons == 20_000
    hub_seeds = {tool_node("gridtool"): 1.0, tag_node("path_quote"): 0.5, fp_node("f7"): 1.0}
    assert g.adjacency.fanout(tool_node("gridtool")) > 5_000  # a hub: reading it whole would cost thousands
    reads = _count_reads(monkeypatch, g)
    for max_nodes in (50, 400):
        nodes = g.neighbourhood(hub_seeds, max_nodes=max_nodes)
        assert len(nodes) == max_nodes  # the cap is reached on a graph this size...
        assert 0 < reads() <= 2 * max_nodes + CHUNK  # ...and the walk read O(max_nodes) names, not the hubs'
        scores = g.personalized_pagerank(hub_seeds, max_nodes=max_nodes)
        assert set(scores) <= {n.removeprefix("lesson:") for n in nodes}
        assert not any(g.nx.nodes[lesson_node(i)]["status"] in ("suppressed", "archived") for i in scores)


def test_bounded_ppr_work_does_not_grow_with_graph(big_graph: LessonGraph, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ten times the lessons, the same work: names read by the walk and matrix entries solved."""
    small = LessonGraph.from_records(synthetic(2_000, 1))
    seeds = {tool_node("gridtool"): 1.0, fp_node("f7"): 1.0}
    entries: list[int] = []
    real_ppr = graph_mod.sparse_ppr

    def counting_ppr(n: int, rows: np.ndarray, *args: Any, **kwargs: Any) -> np.ndarray:
        entries.append(len(rows))
        return real_ppr(n, rows, *args, **kwargs)

    monkeypatch.setattr(graph_mod, "sparse_ppr", counting_ppr)
    work: list[tuple[int, int]] = []
    for g in (small, big_graph):
        reads = _count_reads(monkeypatch, g)
        g.personalized_pagerank(seeds)
        work.append((reads(), entries[-1]))
    (small_reads, small_entries), (big_reads, big_entries) = work
    assert small_reads > 0 and small_entries > 0
    assert big_reads <= 2 * small_reads + CHUNK, work
    assert big_entries <= 2 * small_entries, work


def test_snapshot_is_order_independent() -> None:
    lessons = synthetic(200, 3)
    a = LessonGraph.from_records(lessons)
    b = LessonGraph.from_records(reversed(lessons))
    assert a.snapshot() == b.snapshot()
    assert a.personalized_pagerank({fp_node("f3"): 1.0}) == pytest.approx(
        b.personalized_pagerank({fp_node("f3"): 1.0}), abs=1e-9
    )


# --------------------------------------------------------------------------- snapshot state


def test_state_round_trip_then_writes_equal_a_rebuild() -> None:
    """A graph loaded from ``to_state`` (no networkx, field edges read lazily from the
    stored lessons) takes upserts, removals and links exactly like the live graph."""
    rng = random.Random(3)
    stored: dict[str, Lesson] = {}
    links: dict[str, Link] = {}

    def random_lesson(lid: str) -> Lesson:
        return les(lid, triggers=[f"f{rng.randrange(15)}" for _ in range(rng.randint(0, 2))],
                   tags=rng.sample(TAGS, rng.randint(0, 2)), status=rng.choice(STATUSES),
                   tool=rng.choice([None, "gridtool"]), conflicts=[f"l{rng.randrange(30)}"] if rng.random() < 0.2 else [])

    for i in range(30):
        stored[f"l{i}"] = random_lesson(f"l{i}")
    live = LessonGraph.from_records(stored.values())
    data, names, arrays = live.to_state()
    loaded = LessonGraph.from_state(data, names, arrays, lesson_source=stored.get)
    assert loaded._nx is None and loaded.number_of_lessons == 30
    for _ in range(120):
        lid = f"l{rng.randrange(40)}"
        op = rng.random()
        if op < 0.6:
            lesson = random_lesson(lid)
            for g in (live, loaded):
                g.upsert_lesson(lesson)  # the source still holds the old record: read before replacing
            stored[lid] = lesson
        elif op < 0.75 and lid in stored:
            for g in (live, loaded):
                g.remove_lesson(lid)
            del stored[lid]
        else:
            a, b = sorted([lid, f"l{rng.randrange(40)}"])
            link_id = f"{a}-{b}"
            total = (links[link_id].weight if link_id in links else 0.0) + 1.0
            links[link_id] = Link(id=link_id, namespace=NS, a=lesson_node(a), b=lesson_node(b), weight=total)
            live.add_link(links[link_id].model_copy(update={"weight": 1.0}))
            loaded.set_link(links[link_id])
    rebuilt = LessonGraph.from_records(stored.values(), links=links.values())
    assert loaded.snapshot() == live.snapshot() == rebuilt.snapshot()
    assert loaded.adjacency.as_dict() == live.adjacency.as_dict()
    for fp in {f"f{i}" for i in range(15)}:
        assert loaded.lessons_for_fingerprint(fp) == live.lessons_for_fingerprint(fp)
    seeds = {fp_node("f1"): 1.0, tag_node(TAGS[0]): 0.5}
    assert loaded.personalized_pagerank(seeds) == pytest.approx(live.personalized_pagerank(seeds))


def test_damaged_state_is_refused() -> None:
    g = LessonGraph.from_records([les("a", triggers=["f"]), les("b", triggers=["f"])])
    data, names, arrays = g.to_state()
    with pytest.raises(ValueError):
        LessonGraph.from_state(data, names[:-1], arrays, lesson_source=lambda i: None)
    bad = dict(arrays, neighbours=arrays["neighbours"] + 100)
    with pytest.raises(ValueError):
        LessonGraph.from_state(data, names, bad, lesson_source=lambda i: None)
