"""The graph's columns and index changes kept at write time save exactly what the brute-force references give.

``LessonColumns`` (status, tool, rewrite pair by node id) and ``CsrIndex``'s change log are
built write by write so a close only copies and sorts arrays. Here random writes, removals,
saves and loads (the loaded arrays read-only, as a mapped base's are) are checked against:

* the graph rebuilt from the stored lessons (``LessonGraph.from_records``): each node's saved
  status, tool and pair, and each fingerprint's and WRONG word's saved members;
* ``CsrIndex.changed_rows``, the overlay walk the log replaces: the same CSR arrays.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from langmem_plus.records import Lesson, LessonScope
from langmem_plus.store.columns import CsrIndex, csr_from_sets, unpack_strings
from langmem_plus.store.graph import LessonGraph, lesson_node
from langmem_plus.store.lesson_columns import LessonColumns

NS = ("acme",)
WRONG = ["pick x", "sort y", "Pick z", "über a", "!!", ""]


def _lesson(rng: random.Random, lid: str) -> Lesson:
    wrong = rng.choice([None, *WRONG])
    return Lesson(
        id=lid, namespace=NS, rule_text="r",
        triggers=[f"f{rng.randrange(8)}" for _ in range(rng.randint(0, 2))],
        status=rng.choice(["candidate", "promoted", "suppressed", "archived"]),
        scope=LessonScope(tool=rng.choice([None, "", "sql", "sh", "té\tl"])),
        wrong=wrong, correct=rng.choice([None, "SELECT", "ordér"]) if wrong is not None else None,
    )


def _reloaded(g: LessonGraph, stored: dict[str, Lesson]) -> LessonGraph:
    """``g`` saved and loaded, its arrays read-only (a base's are memory-mapped)."""
    data, names, arrays = g.to_state()
    frozen = {k: np.array(v) for k, v in arrays.items()}
    for v in frozen.values():
        v.setflags(write=False)
    return LessonGraph.from_state(data, names, frozen, lesson_source=stored.get)


def _saved_by_lesson(g: LessonGraph) -> dict[str, Any]:
    """What ``to_state`` saves, decoded by lesson id / fingerprint / word (non-lesson nodes must hold nothing)."""
    data, names, arrays = g.to_state()
    out: dict[str, Any] = {"status": {}, "tool": {}, "rewrite": {}}
    text = arrays["rewrite_utf8"].tobytes().decode("utf-8")
    for gid, name in enumerate(names):
        status, tool, (a, b, c) = int(arrays["status"][gid]), int(arrays["tool"][gid]), arrays["rewrite_offsets"][gid].tolist()
        if not name.startswith("lesson:"):
            assert status == tool == a == -1, name
            continue
        lid = name[len("lesson:"):]
        if status >= 0:
            out["status"][lid] = data["statuses"][status]
        if tool >= 0:
            out["tool"][lid] = data["tools"][tool]
        if a >= 0:
            out["rewrite"][lid] = (text[a:b], text[b:c])
    assert data["statuses"] == sorted(set(out["status"].values()))
    ptr, members = arrays["fp_indptr"], arrays["fp_members"]
    out["fp"] = {names[k][len("fp:"):]: sorted(names[m][len("lesson:"):] for m in members[ptr[k]:ptr[k + 1]].tolist())
                 for k in range(len(names)) if ptr[k + 1] > ptr[k]}
    words = unpack_strings(arrays, "wrong_words_")
    ptr, members = arrays["wrong_indptr"], arrays["wrong_members"]
    out["wrong"] = {w: sorted(names[m][len("lesson:"):] for m in members[ptr[k]:ptr[k + 1]].tolist())
                    for k, w in enumerate(words) if ptr[k + 1] > ptr[k]}
    for key in ("fp", "wrong"):  # members sorted by node id within a row, as the overlay walk saves them
        ptr, members = arrays[f"{key}_indptr"], arrays[f"{key}_members"]
        assert all(np.all(np.diff(members[ptr[k]:ptr[k + 1]]) > 0) for k in range(len(ptr) - 1))
    return out


def _reference(stored: dict[str, Lesson]) -> dict[str, Any]:
    """The same, from a graph rebuilt from the stored lessons."""
    g = LessonGraph.from_records(stored.values())
    ids = sorted(stored)
    return {
        "status": {i: g.status_of(i) for i in ids},
        "tool": {i: t for i in ids if (t := g.tool_of(i)) is not None},
        "rewrite": {i: p for i in ids if (p := g.rewrite_of(i)) is not None},
        "fp": {fp: sorted(found) for fp, found in g._fp_items() if found},
        "wrong": {w: sorted(found) for w, found in g._wrong_items() if found},
    }


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 100_000), steps=st.integers(0, 60), saves=st.integers(1, 4))
def test_saved_columns_equal_a_rebuild_from_the_records(seed: int, steps: int, saves: int) -> None:
    """Writes and removals between saves and read-only loads: every save equals the rebuild's answers."""
    rng = random.Random(seed)
    stored: dict[str, Lesson] = {}
    g = LessonGraph(lesson_source=stored.get)
    for _ in range(saves):
        for _ in range(steps):
            lid = f"l{rng.randrange(20)}"
            if rng.random() < 0.75:
                lesson = _lesson(rng, lid)
                g.upsert_lesson(lesson)
                stored[lid] = lesson
            elif lid in stored:
                g.remove_lesson(lid)
                del stored[lid]
        saved = _saved_by_lesson(g)
        assert saved == _reference(stored)
        g = _reloaded(g, stored)
        assert _saved_by_lesson(g) == saved  # a save right after a load changes nothing
    for lid, lesson in stored.items():
        assert g.status_of(lid) == lesson.status and g.tool_of(lid) == (lesson.scope.tool or None)


@settings(max_examples=150, deadline=None)
@given(
    base=st.dictionaries(st.sampled_from("abcdef"), st.sets(st.integers(0, 9), max_size=5), max_size=6),
    ops=st.lists(st.tuples(st.booleans(), st.sampled_from("abcdefgh"), st.integers(0, 9)), max_size=40),
)
def test_logged_changes_save_as_the_overlay_walk(base: dict[str, set[int]], ops: list[tuple[bool, str, int]]) -> None:
    """The log's CSR arrays equal those of ``changed_rows`` (the overlay walk), for any base and changes."""
    keys = sorted(base)
    indptr, members = csr_from_sets([(n, base[k]) for n, k in enumerate(keys)], len(keys))
    rows = {k: n for n, k in enumerate(keys)}

    def key_row(key: str) -> int:
        return rows.setdefault(key, len(rows))

    idx = CsrIndex(indptr, members, rows.get, lambda m: f"m{m}", rows=(key_row, lambda m: int(m[1:])))
    for add, key, m in ops:
        (idx.add if add else idx.discard)(key, f"m{m}")
    logged = idx.to_csr(len(rows) + 2, idx.changes(key_row, lambda m: int(m[1:])))
    walked = idx.to_csr(len(rows) + 2, idx.changed_rows(key_row, lambda m: int(m[1:])))
    for got, want in zip(logged, walked):
        np.testing.assert_array_equal(got, want)
        assert got.dtype == want.dtype


def test_an_index_without_rows_falls_back_to_the_overlay_walk() -> None:
    """An index read from the plain sets of an older base keeps no log; ``changes`` walks its overlay."""
    idx = CsrIndex.from_sets({"a": {"m1", "m3"}})
    idx.add("b", "m2")
    ptr, members = idx.to_csr(2, idx.changes({"a": 0, "b": 1}.__getitem__, lambda m: int(m[1:])))
    assert ptr.tolist() == [0, 2, 3] and members.tolist() == [1, 3, 2]


def test_columns_grow_over_a_read_only_base_and_drop_replaced_text() -> None:
    """Written after a load from read-only arrays (copied at the first write); rewriting one pair again and again
    keeps the saved text bounded (``graph_rewrite_slack``)."""
    c = LessonColumns()
    c.set_lesson(1, "promoted", "sql")
    c.set_rewrite(1, ("pick", "SELECT"))
    tables, arrays = c.arrays(2)
    for v in arrays.values():
        v.setflags(write=False)
    loaded = LessonColumns.from_arrays(tables, arrays, 2)
    loaded.set_lesson(5, "candidate", None)
    for k in range(50):
        loaded.set_rewrite(1, (f"w{k} " + "x" * 500, "c"))
    assert loaded.rewrite_of(1) == ("w49 " + "x" * 500, "c") and loaded.status_of(5) == "candidate"
    tables, arrays = loaded.arrays(6)
    assert len(arrays["rewrite_utf8"]) <= 2 * 506 + 4096
    again = LessonColumns.from_arrays(tables, arrays, 6)
    assert again.rewrite_of(1) == loaded.rewrite_of(1) and again.tool_of(1) == "sql" and again.status_of(5) == "candidate"
    assert arrays["status"].tolist() == [-1, 1, -1, -1, -1, 0]  # the table is the sorted statuses in use


def test_the_graph_honours_the_configured_rewrite_slack() -> None:
    """``MemoryConfig.graph_rewrite_slack`` reaches the graph's columns, built, loaded and rebuilt from records."""
    def saved_text(g: LessonGraph) -> int:
        _, _, arrays = g.to_state()
        return len(arrays["rewrite_utf8"])

    def rewritten(slack: int) -> LessonGraph:
        g = LessonGraph(rewrite_slack=slack)
        for k in range(3):
            g.upsert_lesson(Lesson(id="x", namespace=NS, rule_text="r", wrong=f"pick {k}", correct="SELECT"))
        return g

    live = len("pick 2") + len("SELECT")
    assert saved_text(rewritten(0)) == live  # replaced pairs dropped at once
    assert saved_text(rewritten(4096)) == 3 * live  # within the slack: appended text kept
    data, names, arrays = rewritten(0).to_state()
    lesson = Lesson(id="x", namespace=NS, rule_text="r", wrong="pick 9", correct="SELECT")
    loaded = LessonGraph.from_state(data, names, arrays, lesson_source=lambda _: None, rewrite_slack=0)
    rebuilt = LessonGraph.from_records([lesson], rewrite_slack=0)
    for g in (loaded, rebuilt):  # text beyond twice the live pairs' (3 pairs) is dropped with no slack
        for wrong in ("pick 8", "pick 7"):
            g.upsert_lesson(lesson.model_copy(update={"wrong": wrong}))
        assert saved_text(g) == live


def test_a_lesson_without_edges_has_a_node_and_its_columns() -> None:
    g = LessonGraph()
    g.upsert_lesson(Lesson(id="x", namespace=NS, rule_text="r", status="promoted"))
    assert g.adjacency.gid(lesson_node("x")) is not None and g.status_of("x") == "promoted"
    g.remove_lesson("x")
    assert g.status_of("x") is None and _saved_by_lesson(g)["status"] == {}
