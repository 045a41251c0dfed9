"""The graph's columnar snapshot state answers every lookup as the live graph and the older plain dictionaries do.

``LessonGraph.to_state`` saves per-node columns and CSR indexes (``store.columns``); these
tests drive a live graph through random writes, round-trip it through the columns (and
through a snapshot folder), and compare every lookup with the live graph and with a graph
loaded from the plain dictionaries an older snapshot (format 2) held.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from langmem_plus.records import Episode, Lesson, LessonScope, Link
from langmem_plus.store.columns import (
    CsrIndex,
    csr_from_sets,
    pack_strings,
    unpack_strings,
)
from langmem_plus.store.graph import LessonGraph, fp_node, lesson_node
from langmem_plus.store.snapshot import FORMAT, SNAPSHOT_KINDS, SnapshotDir

NS = ("acme",)
WORDS = ["pick", "sort", "Pick", "grep", "", "über", "a\nb"]


def _lesson(rng: random.Random, lid: str) -> Lesson:
    wrong = rng.choice([None, *[f"{w} -x {rng.randrange(3)}" for w in WORDS]])
    return Lesson(
        id=lid, namespace=NS, rule_text="r",
        triggers=[f"f{rng.randrange(12)}" for _ in range(rng.randint(0, 2))],
        tags=rng.sample(["t1", "t2", "t3"], rng.randint(0, 2)),
        status=rng.choice(["candidate", "promoted", "suppressed", "archived"]),
        scope=LessonScope(tool=rng.choice([None, "", "sql", "sh", "té\tl"])),
        wrong=wrong, correct=rng.choice([None, "SELECT", "ordér"]) if wrong else None,
        conflicts_with=[f"l{rng.randrange(30)}"] if rng.random() < 0.15 else [],
    )


def _apply(rng: random.Random, graphs: list[LessonGraph], stored: dict[str, Lesson]) -> None:
    """One random write (upsert, removal or link) applied to every graph."""
    lid = f"l{rng.randrange(30)}"
    op = rng.random()
    if op < 0.6:
        lesson = _lesson(rng, lid)
        for g in graphs:
            g.upsert_lesson(lesson)
        stored[lid] = lesson
    elif op < 0.8 and lid in stored:
        for g in graphs:
            g.remove_lesson(lid)
        del stored[lid]
    else:
        other = rng.choice([lesson_node(f"l{rng.randrange(30)}"), fp_node(f"f{rng.randrange(12)}"), lesson_node(lid)])
        link = Link(id=f"{lid}-{other}", namespace=NS, a=lesson_node(lid), b=other, weight=rng.choice([0.5, 1.0, 2.25]))
        for g in graphs:
            g.add_link(link)


def _lookups(g: LessonGraph) -> dict[str, Any]:
    """Every answer the graph gives by lesson id, fingerprint and action word, and its whole shape."""
    ids = [f"l{i}" for i in range(30)]
    return {
        "fp": {f"f{i}": g.lessons_for_fingerprint(f"f{i}") for i in range(12)},
        "action": {w: g.lessons_for_action(f"{w} -x") for w in WORDS},
        "tool": {i: g.tool_of(i) for i in ids},
        "rewrite": {i: g.rewrite_of(i) for i in ids},
        "status": {i: g.status_of(i) for i in ids},
        "lessons": g.number_of_lessons,
        "links": dict(g._links),
        "adjacency": g.adjacency.as_dict(),
        "shape": g.snapshot(),
    }


def _plain_state(g: LessonGraph) -> dict[str, Any]:
    """The dictionaries a format-2 snapshot saved, as the old ``to_state`` built them (from the graph's answers)."""
    ids = [n[len("lesson:"):] for n in g._status]
    rewrites = {i: list(p) for i in ids if (p := g.rewrite_of(i)) is not None}
    return {
        "status": dict(g._status),
        "skills": dict(g._skills),
        "fp_index": {fp: sorted(found) for fp, found in g._fp_items()},
        "wrong_index": {w: sorted(found) for w, found in g._wrong_items()},
        "rewrite": rewrites,
        "tool": {i: t for i in ids if (t := g.tool_of(i)) is not None},
        "links": [[a, b, key, w] for (a, b, key), w in g._links.items()],
    }


def _columns_round_trip(g: LessonGraph, stored: dict[str, Lesson]) -> LessonGraph:
    data, names, arrays = g.to_state()
    json.loads(json.dumps(data))  # the plain part stays JSON
    return LessonGraph.from_state(data, names, arrays, lesson_source=stored.get)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), steps=st.integers(0, 80), saves=st.integers(1, 3))
def test_columns_answer_as_the_live_graph_and_the_plain_state(seed: int, steps: int, saves: int) -> None:
    """Writes, saves and loads interleaved: the loaded graphs (columnar and plain) answer every lookup as the live one."""
    rng = random.Random(seed)
    stored: dict[str, Lesson] = {}
    live = LessonGraph()
    loaded = LessonGraph(lesson_source=stored.get)
    for _ in range(saves):
        for _ in range(steps):
            _apply(rng, [live, loaded], stored)
        plain = LessonGraph.from_state(_plain_state(loaded), *loaded.adjacency.to_state(), lesson_source=stored.get)
        loaded = _columns_round_trip(loaded, stored)
        assert _lookups(loaded) == _lookups(live) == _lookups(plain)
    for _ in range(steps):  # writes after the last load change the columns' overlays
        _apply(rng, [live, loaded], stored)
    assert _lookups(loaded) == _lookups(live)


def _random_graph(seed: int, writes: int) -> tuple[LessonGraph, dict[str, Lesson]]:
    """A graph after ``writes`` random writes (``_apply``), and the lessons it was given."""
    rng = random.Random(seed)
    stored: dict[str, Lesson] = {}
    graph = LessonGraph()
    for _ in range(writes):
        _apply(rng, [graph], stored)
    return graph, stored


def test_columns_survive_a_snapshot_folder(tmp_path: Path) -> None:
    """Through ``SnapshotDir`` (names packed into the npz, a small JSON head), the graph comes back the same."""
    live, stored = _random_graph(5, 200)
    folder = SnapshotDir(tmp_path / "snap")
    folder.write_base("g", {"lessons": [(i, "{}") for i in stored]}, live.to_state())
    loaded = folder.load("g")
    assert loaded is not None
    head = json.loads(next((tmp_path / "snap").glob("base-*.graph.json")).read_text())
    assert set(head) == {"data"} and "status" not in head["data"]  # no per-lesson list in the JSON
    again = LessonGraph.from_state(loaded.graph_data, loaded.graph_names, loaded.graph_arrays, lesson_source=stored.get)
    assert _lookups(again) == _lookups(live)


@pytest.mark.parametrize(
    "damage",
    ["status_code", "status_len", "tool_code", "rewrite_past_text", "rewrite_order", "fp_member", "fp_indptr", "wrong_count", "link_end"],
)
def test_damaged_columns_are_refused(damage: str) -> None:
    g, stored = _random_graph(1, 80)
    g.add_link(Link(id="x", namespace=NS, a=lesson_node("l1"), b=lesson_node("l2")))
    data, names, arrays = g.to_state()
    bad = {k: np.array(v, copy=True) for k, v in arrays.items()}
    if damage == "status_code":
        bad["status"][0] = 100
    elif damage == "status_len":
        bad["status"] = bad["status"][:-1]
    elif damage == "tool_code":
        bad["tool"][int(np.flatnonzero(bad["tool"] >= 0)[0])] = len(data["tools"])
    elif damage == "rewrite_past_text":
        bad["rewrite_offsets"][int(np.flatnonzero(bad["rewrite_offsets"][:, 0] >= 0)[0]), 2] = len(bad["rewrite_utf8"]) + 5
    elif damage == "rewrite_order":
        row = int(np.flatnonzero(bad["rewrite_offsets"][:, 0] >= 0)[-1])
        bad["rewrite_offsets"][row, 1] = bad["rewrite_offsets"][row, 0] - 1
    elif damage == "fp_member":
        bad["fp_members"][0] = len(names)
    elif damage == "fp_indptr":
        bad["fp_indptr"][-1] += 1
    elif damage == "wrong_count":
        bad["wrong_words_count"][0] += 1
    elif damage == "link_end":
        bad["link_a"][0] = -1
    with pytest.raises(ValueError):
        LessonGraph.from_state(data, names, bad, lesson_source=stored.get)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(), max_size=20))
def test_packed_strings_round_trip(strings: list[str]) -> None:
    """Any strings, separators inside them included (then their lengths are saved)."""
    assert unpack_strings(pack_strings(strings, "p_"), "p_") == strings


def test_packed_strings_fall_back_to_lengths_when_every_separator_is_taken() -> None:
    strings = ["a\nb", "c\x00", "\x1f", "\x1e", "plain", ""]
    packed = pack_strings(strings)
    assert "lengths" in packed and unpack_strings(packed) == strings
    with pytest.raises(ValueError):
        unpack_strings(dict(packed, lengths=packed["lengths"] + 1))


@settings(max_examples=100, deadline=None)
@given(
    base=st.dictionaries(st.sampled_from("abcdef"), st.sets(st.integers(0, 9), max_size=5), max_size=6),
    ops=st.lists(st.tuples(st.booleans(), st.sampled_from("abcdefg"), st.integers(0, 9)), max_size=30),
)
def test_csr_index_equals_a_dict_of_sets(base: dict[str, set[int]], ops: list[tuple[bool, str, int]]) -> None:
    """Built from a base as CSR rows, then changed: every key's members are those of a plain dict of sets."""
    keys = sorted(base)
    indptr, members = csr_from_sets([(n, base[k]) for n, k in enumerate(keys)], len(keys))
    rows = {k: n for n, k in enumerate(keys)}
    idx = CsrIndex(indptr, members, rows.get, lambda m: f"m{m}")
    reference = {k: {f"m{m}" for m in v} for k, v in base.items()}
    for add, key, m in ops:
        if add:
            idx.add(key, f"m{m}")
            reference.setdefault(key, set()).add(f"m{m}")
        else:
            idx.discard(key, f"m{m}")
            reference.get(key, set()).discard(f"m{m}")
    for key in "abcdefgh":
        assert idx.get(key) == reference.get(key, set())
    assert dict(idx.items(rows.items())) == {k: v for k, v in reference.items() if v}
    # saved again: the base's rows reused as arrays, the changed ones replaced; loaded, the same sets
    new_rows = dict(rows)
    changed = idx.changed_rows(lambda k: new_rows.setdefault(k, len(new_rows)), lambda m: int(m[1:]))
    indptr, saved = idx.to_csr(len(new_rows), changed)
    again = CsrIndex(indptr, saved, new_rows.get, lambda m: f"m{m}")
    for key in "abcdefgh":
        assert again.get(key) == reference.get(key, set())


# --------------------------------------------------------------------------- the records' row index


def _write_records(folder: Path, records: dict[str, dict[str, str]]) -> SnapshotDir:
    snap = SnapshotDir(folder)
    snap.write_base("g", {k: list(v.items()) for k, v in records.items()}, LessonGraph().to_state())
    return snap


def _read_back(snap: SnapshotDir) -> dict[str, dict[str, str]]:
    loaded = snap.load("g")
    assert loaded is not None
    return {k: {i: loaded.raw.text(row) for i, row in rows.items()} for k, rows in loaded.records.items()}


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(list(SNAPSHOT_KINDS)), st.text(min_size=1, max_size=12), st.text(max_size=30)),
        max_size=25,
    )
)
def test_row_index_reads_as_the_scan(entries: list[tuple[str, str, str]]) -> None:
    """The saved row index gives every kind's ids, rows and texts exactly as scanning the records file does."""
    import tempfile

    from langmem_plus.store.snapshot import _read_row_index, _scan_records

    records: dict[str, dict[str, str]] = {}
    for kind, rid, text in entries:
        records.setdefault(kind, {})[rid] = json.dumps(text)
    with tempfile.TemporaryDirectory() as tmp:
        snap = _write_records(Path(tmp) / "snap", records)
        tsv = next(Path(tmp, "snap").glob("base-*.records.tsv"))
        fast, fast_raw = _read_row_index(tsv, tsv.with_name(tsv.name.replace(".records.tsv", ".rows.npz")))
        scanned, scan_raw = _scan_records(tsv)
        assert fast == scanned
        assert [fast_raw.text(r) for r in range(len(fast_raw))] == [scan_raw.text(r) for r in range(len(scan_raw))]
        assert _read_back(snap) == {k: records.get(k, {}) for k in SNAPSHOT_KINDS}


@pytest.mark.parametrize("damage", ["missing", "garbage", "rows_swapped", "same_size_edit"])
def test_a_row_index_that_does_not_fit_is_not_used(tmp_path: Path, damage: str) -> None:
    """Absent, unreadable or not matching its records file: the open scans the file instead (and still reads it right),
    or, when the file itself no longer parses, reads Chroma."""
    records = {"lessons": {f"l{i}": json.dumps({"n": i}) for i in range(20)}, "links": {"k": "{}"}}
    _write_records(tmp_path / "snap", records)
    rows_file = next((tmp_path / "snap").glob("base-*.rows.npz"))
    tsv = next((tmp_path / "snap").glob("base-*.records.tsv"))
    if damage == "missing":
        rows_file.unlink()
    elif damage == "garbage":
        rows_file.write_bytes(rows_file.read_bytes()[:100])
    elif damage == "rows_swapped":
        with np.load(rows_file) as npz:
            arrays = {k: npz[k] for k in npz.files}
        arrays["lessons_rows"] = arrays["lessons_rows"][::-1].copy()
        arrays["starts"] = arrays["starts"] + 1  # the texts would be cut one byte late
        with open(rows_file, "wb") as f:
            np.savez(f, **arrays)
    else:  # same size, a separator moved: the index no longer fits; the scan finds the malformed line
        data = bytearray(tsv.read_bytes())
        at = data.index(b"\t{")
        data[at], data[at + 1] = ord("{"), ord("\t")
        tsv.write_bytes(bytes(data))
        assert SnapshotDir(tmp_path / "snap").load("g") is None
        return
    assert _read_back(SnapshotDir(tmp_path / "snap")) == {k: records.get(k, {}) for k in SNAPSHOT_KINDS}


# --------------------------------------------------------------------------- rows shared by the table, index and vectors


@settings(max_examples=100, deadline=None)
@given(
    base=st.lists(st.sampled_from("abcdefgh"), unique=True, max_size=8),
    ops=st.lists(st.tuples(st.sampled_from(["set", "pop"]), st.sampled_from("abcdefghij"), st.integers(0, 99)), max_size=30),
)
def test_layered_rows_equal_a_dict(base: list[str], ops: list[tuple[str, str, int]]) -> None:
    """Over a shared base map that is never written, sets and pops answer as a plain dict copy does."""
    from langmem_plus.store.columns import LayeredMap

    shared = {k: n for n, k in enumerate(base)}
    frozen = dict(shared)
    rows, reference = LayeredMap[int](shared), dict(shared)
    for op, key, value in ops:
        if op == "set":
            rows[key], reference[key] = value, value
        else:
            assert rows.pop(key) == reference.pop(key, None)
        assert len(rows) == len(reference)
    for key in "abcdefghijk":
        assert rows.get(key) == reference.get(key) and (key in rows) == (key in reference)
    assert shared == frozen


def test_an_open_shares_one_lesson_order_between_the_index_and_the_vectors(tmp_path: Path) -> None:
    """A snapshot open builds the lessons' id -> row map once: the index and the vectors read the records' own."""
    from langmem_plus import LearningMemory
    from langmem_plus.bench.foundation import synthetic_lessons
    from langmem_plus.config import MemoryConfig

    ns = ("shared", "rows")
    mem = LearningMemory.open(tmp_path, namespace=ns, config=MemoryConfig(storage={"warm_lessons": False}))
    mem.add_lessons(synthetic_lessons(60, seed=1, namespace=ns))
    mem.sync.write_base()
    mem.close()
    again = LearningMemory.open(tmp_path, namespace=ns, config=MemoryConfig(storage={"warm_lessons": False}))
    view = again.view
    assert view.index is not None
    assert view.index._rows._base is view.lesson_vectors._rows._base  # one map, shared
    ids = list(view.lessons)
    assert [view.index.row_of(i) for i in ids] == list(range(len(ids)))
    for i in ids[:10]:
        np.testing.assert_allclose(view.lesson_vectors.get(i), again.store.stored_embeddings("lessons", [i])[i], atol=1e-6)
    again.close()


def test_a_format_2_base_still_opens_and_equals_a_full_read(tmp_path: Path) -> None:
    """A base written before the columns (plain dictionaries and names in the JSON head, no row index) opens as
    it did, answers as a full read from Chroma does, and the next base is columnar."""
    import pydantic_core

    from langmem_plus import LearningMemory
    from langmem_plus.bench.foundation import synthetic_lessons
    from langmem_plus.config import MemoryConfig
    from langmem_plus.store.snapshot import snapshot_dir

    ns = ("old", "format")
    lazy = MemoryConfig(storage={"warm_lessons": False})
    # Every record in the base's own file, as the old formats kept them (not pointed at in the journal).
    mem = LearningMemory.open(tmp_path, namespace=ns, config=MemoryConfig(storage={"warm_lessons": False, "snapshot_segment_live_min": 2.0}))
    mem.add_lessons(synthetic_lessons(80, seed=2, namespace=ns))
    episode = Episode(episode_id="ep1", namespace=ns, kind="success", goal_signature="g", summary="Solved g", count=1)
    mem.write("episodes", [episode])
    mem.sync.write_base()
    live = _lookups_of(mem.graph)
    mem.close()
    folder = snapshot_dir(tmp_path, ns)
    meta = json.loads((folder / "meta.json").read_text())
    base = folder / f"base-{meta['base']}"
    loaded = SnapshotDir(folder).load(meta["generation"])
    assert loaded is not None
    graph = LessonGraph.from_state(loaded.graph_data, loaded.graph_names, loaded.graph_arrays, lesson_source=lambda i: None)
    head = {"data": _plain_state(graph), "names": loaded.graph_names, "vector_ids": loaded.vector_ids,
            "lesson_index": json.loads(Path(f"{base}.graph.json").read_text()).get("lesson_index")}
    Path(f"{base}.graph.json").write_bytes(pydantic_core.to_json(head))
    Path(f"{base}.rows.npz").unlink()
    tsv = Path(f"{base}.records.tsv")  # format 2 kept no episodes
    tsv.write_text("".join(line for line in tsv.read_text().splitlines(keepends=True) if not line.startswith("episodes\t")))
    (folder / "meta.json").write_text(json.dumps({**meta, "format": 2}))
    old = LearningMemory.open(tmp_path, namespace=ns, config=lazy)
    assert old.sync.snapshot_heads is not None  # opened from the snapshot, not from Chroma
    assert _lookups_of(old.graph) == live
    assert [e.episode_id for e in old.episodes()] == ["ep1"]  # read from Chroma: the old base had none
    old.sync.write_base()
    old.close()
    assert json.loads((folder / "meta.json").read_text())["format"] == FORMAT
    chroma = LearningMemory.open(tmp_path, namespace=ns, config=MemoryConfig(storage={"snapshot": False}))
    again = LearningMemory.open(tmp_path, namespace=ns, config=lazy)
    assert _lookups_of(again.graph) == _lookups_of(chroma.graph) == live
    assert [e.episode_id for e in again.episodes()] == ["ep1"]  # the new base holds it
    again.close()
    chroma.close()


def _lookups_of(g: LessonGraph) -> dict[str, Any]:
    """Every answer by the graph's own lesson ids, fingerprints and WRONG words."""
    ids = sorted(n[len("lesson:"):] for n in g._status)
    fps = sorted(fp for fp, _ in g._fp_items())
    return {
        "fp": {fp: g.lessons_for_fingerprint(fp) for fp in fps},
        "action": {w: g.lessons_for_action(w) for w, _ in g._wrong_items()},
        "tool": {i: g.tool_of(i) for i in ids},
        "rewrite": {i: g.rewrite_of(i) for i in ids},
        "status": {i: g.status_of(i) for i in ids},
        "adjacency": g.adjacency.as_dict(),
    }


# --------------------------------------------------------------------------- mapped npz members


@settings(max_examples=60, deadline=None)
@given(
    arrays=st.lists(
        st.sampled_from(["int64", "int8", "uint64", "float64", "float32", "bool", "<U3"]).flatmap(
            lambda dtype: hnp.arrays(dtype, hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=5))
        ),
        max_size=5,
    ),
    fortran=st.booleans(),
    compressed=st.booleans(),
)
def test_mapped_npz_reads_as_np_load(arrays: list[np.ndarray], fortran: bool, compressed: bool) -> None:
    """Every member, mapped (or read, when compressed), equals what ``np.load`` gives: dtype, shape and values."""
    import tempfile

    from langmem_plus.store.columns import load_npz_mapped

    named = {f"a{n}": (np.asfortranarray(a) if fortran else a) for n, a in enumerate(arrays)}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "x.npz"
        with open(path, "wb") as f:
            (np.savez_compressed if compressed else np.savez)(f, **named)
        with np.load(path, allow_pickle=False) as npz:
            expected = {k: npz[k] for k in npz.files}
        got = load_npz_mapped(path)
        assert set(got) == set(expected)
        for k, a in expected.items():
            assert got[k].dtype == a.dtype and got[k].shape == a.shape
            np.testing.assert_array_equal(np.asarray(got[k]), a)


def test_a_truncated_npz_is_refused(tmp_path: Path) -> None:
    import zipfile

    from langmem_plus.store.columns import load_npz_mapped

    path = tmp_path / "x.npz"
    with open(path, "wb") as f:
        np.savez(f, a=np.arange(1000), b=np.ones(3))
    path.write_bytes(path.read_bytes()[:-200])
    with pytest.raises((ValueError, OSError, zipfile.BadZipFile)):
        load_npz_mapped(path)


def test_vectors_read_by_pread_equal_the_mapped_rows(tmp_path: Path) -> None:
    """A base's vector rows read with ``os.pread`` are the map's rows; new and forgotten vectors still override them."""
    from langmem_plus.store.snapshot import LessonVectors

    matrix = np.random.default_rng(0).standard_normal((50, 7)).astype(np.float32)
    np.save(tmp_path / "v.npy", matrix)
    mapped = np.load(tmp_path / "v.npy", mmap_mode="r")
    ids = [f"l{i}" for i in range(50)]
    vectors = LessonVectors(ids, mapped)
    assert vectors._reader is not None  # the pread path is the one under test
    wanted = ["l3", "l49", "l0", "nope", "l3"]
    got = vectors.get_many(wanted)
    assert set(got) == {"l3", "l49", "l0"}
    for i in got:
        np.testing.assert_array_equal(got[i], matrix[int(i[1:])])
    vectors.put("l3", np.ones(7, dtype=np.float32))
    vectors.forget("l49")
    again = vectors.get_many(wanted)
    assert set(again) == {"l3", "l0"} and again["l3"].tolist() == [1.0] * 7


def test_release_pages_finds_the_map_behind_every_mapped_array(tmp_path: Path) -> None:
    """One map per npz file; released, the arrays still read the same (the pages come back from the file)."""
    from langmem_plus.store.columns import load_npz_mapped, release_pages

    with open(tmp_path / "x.npz", "wb") as f:
        np.savez(f, a=np.arange(5000), b=np.ones((20, 3)))
    arrays = load_npz_mapped(tmp_path / "x.npz")
    assert release_pages(arrays) == 1
    assert int(arrays["a"].sum()) == sum(range(5000)) and float(arrays["b"].sum()) == 60.0
    assert release_pages({"plain": np.arange(3)}) == 0


@pytest.mark.parametrize("lessons_first", [True, False])
def test_lesson_order_is_the_position_among_lessons(tmp_path: Path, lessons_first: bool) -> None:
    """The records' own map is shared only when it already gives positions among lessons; vectors follow either way."""
    from langmem_plus.store.snapshot import LessonVectors

    lessons = [(f"l{i}", "{}") for i in range(6)]
    links = [(f"k{i}", "{}") for i in range(3)]
    records = {"lessons": lessons, "links": links} if lessons_first else {"links": links, "lessons": lessons}
    matrix = np.arange(6 * 4, dtype=np.float32).reshape(6, 4)
    SnapshotDir(tmp_path / "s").write_base("g", records, LessonGraph().to_state(), ([i for i, _ in lessons], matrix))
    if not lessons_first:  # bases are now written lessons first: an older one, links first and no row index (scanned)
        tsv = next((tmp_path / "s").glob("base-*.records.tsv"))
        lines = tsv.read_text().splitlines(keepends=True)
        tsv.write_text("".join(sorted(lines, key=lambda line: not line.startswith("links\t"))))
        next((tmp_path / "s").glob("base-*.rows.npz")).unlink()
    loaded = SnapshotDir(tmp_path / "s").load("g")
    assert loaded is not None and loaded.vectors_follow_lessons
    order = loaded.lesson_order()
    assert dict(order) == {f"l{i}": i for i in range(6)}
    assert (order is loaded.records["lessons"]) == lessons_first
    vectors = LessonVectors(loaded.vector_ids, loaded.vectors, order)
    got = vectors.get_many([f"l{i}" for i in range(6)])
    for i in range(6):
        np.testing.assert_array_equal(got[f"l{i}"], matrix[i])


def test_replaced_rewrite_text_is_dropped_once_it_outweighs_the_live_text() -> None:
    """Saving appends changed pairs to the saved text; once replaced text dominates, the text is rebuilt from the live pairs."""
    stored: dict[str, Lesson] = {}
    g = LessonGraph(lesson_source=stored.get)
    sizes = []
    for round_ in range(6):
        for i in range(4):
            lesson = Lesson(id=f"l{i}", namespace=NS, rule_text="r", wrong=f"w{round_} " + "x" * 3000, correct=f"c{round_}{i}")
            g.upsert_lesson(lesson)
            stored[lesson.id] = lesson
        g = _columns_round_trip(g, stored)
        sizes.append(g._columns.text_size)
        for i in range(4):
            assert g.rewrite_of(f"l{i}") == (f"w{round_} " + "x" * 3000, f"c{round_}{i}")
            assert g.lessons_for_action(f"w{round_}") == {f"l{j}" for j in range(4)}
    assert max(sizes) <= 2 * sizes[0] + 4096 + 4 * 3100  # bounded, not growing by a round's text each save


@settings(max_examples=200, deadline=None)
@given(
    base=st.lists(st.sampled_from("abcdefgh"), unique=True, max_size=8),
    ops=st.lists(
        st.tuples(st.sampled_from(["set", "del", "pop"]), st.sampled_from("abcdefghij"), st.one_of(st.none(), st.integers(0, 9))),
        max_size=40,
    ),
)
def test_layered_map_is_a_dict_copy(base: list[str], ops: list[tuple[str, str, int | None]]) -> None:
    """Over a shared base it never writes, a layered map answers, counts and iterates (order included) as a dict copy."""
    from langmem_plus.store.columns import LayeredMap

    shared: dict[str, int | None] = {k: n for n, k in enumerate(base)}
    frozen = dict(shared)
    layered: LayeredMap[int | None] = LayeredMap(shared)
    reference = dict(shared)
    for op, key, value in ops:
        if op == "set":
            layered[key] = reference[key] = value
        elif op == "del":
            if key in reference:
                del layered[key]
                del reference[key]
            else:
                with pytest.raises(KeyError):
                    del layered[key]
        else:
            assert layered.pop(key, -1) == reference.pop(key, -1)
        assert list(layered) == list(reference) and len(layered) == len(reference)
    for key in "abcdefghijk":
        assert (key in layered) == (key in reference) and layered.get(key, -2) == reference.get(key, -2)
    assert shared == frozen
