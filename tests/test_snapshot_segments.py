"""Snapshot format 5: a new base points at records where the journal (or the previous base) already holds them.

A base closed this way must reopen exactly as one whose every record was copied into its own file (the
format-4 way, ``snapshot_segment_live_min`` above 1), and as a full read from Chroma; a process killed at
any point of the rebase must leave a folder that opens, from the snapshot, with nothing lost.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from langmem_plus import LearningMemory
from memory_state import memory_state
from langmem_plus.bench.foundation import synthetic_lessons
from langmem_plus.config import MemoryConfig
from langmem_plus.records import Link
from langmem_plus.store.segments import place_records
from langmem_plus.store.snapshot import LessonVectors, SnapshotDir, snapshot_dir

NS = ("seg", "ments")
LAZY = MemoryConfig(storage={"warm_lessons": False, "snapshot_rebase_share": 0.0})
"""Every close rebases (the journal is never short enough to keep)."""
COPY_ALL = MemoryConfig(storage={"warm_lessons": False, "snapshot_rebase_share": 0.0, "snapshot_segment_live_min": 2.0})
"""Every record copied into the base's own file: what format 4 wrote."""
NO_SNAPSHOT = MemoryConfig(storage={"snapshot": False})


_state = memory_state


def _vectors(mem: LearningMemory) -> dict[str, list[float]]:
    ids = sorted(mem.lessons)
    return {i: v.tolist() for i, v in sorted(mem.view.lesson_vectors.get_many(ids).items())}


def _index(mem: LearningMemory) -> dict[str, Any]:
    ids = sorted(mem.lessons)
    found = mem.view.index_state(ids)
    assert found is not None
    return {k: np.asarray(v).tolist() for k, v in found[1].items()}


def _meta(path: Path) -> dict[str, Any]:
    return json.loads((snapshot_dir(path, NS) / "meta.json").read_text())


def _fill(path: Path, config: MemoryConfig, lessons: list[Any], *, rounds: int = 3) -> None:
    """Imports, rewrites of some lessons (their journal lines go dead) and links, one close per round."""
    for r in range(rounds):
        mem = LearningMemory.open(path, namespace=NS, config=config)
        mem.add_lessons(lessons[r * 20 : (r + 1) * 20])
        if r:
            old = [mem.lessons[l.id] for l in lessons[: 10 * r]]
            mem.write("lessons", [l.model_copy(update={"rule_text": f"{l.rule_text} (round {r})"}) for l in old])
            mem.write("links", [Link(id=f"k{r}", namespace=NS, a=f"lesson:{lessons[0].id}", b=f"lesson:{lessons[r].id}",
                                     kind="similar", weight=0.5 * r, ts=float(r))])
        mem.close()


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The same writes closed the new way (records pointed at) and the format-4 way (every record copied)."""
    pointed, copied = tmp_path_factory.mktemp("pointed"), tmp_path_factory.mktemp("copied")
    lessons = synthetic_lessons(60, NS, seed=5)  # one set: the lessons carry their creation time
    _fill(pointed, LAZY, lessons)
    _fill(copied, COPY_ALL, lessons)
    return pointed, copied


def test_pointed_base_reopens_as_the_copied_one_and_as_chroma(pair: tuple[Path, Path]) -> None:
    pointed, copied = pair
    assert len(_meta(pointed)["segments"]) > 1 and len(_meta(copied)["segments"]) == 1
    a = LearningMemory.open(pointed, namespace=NS, config=LAZY)
    b = LearningMemory.open(copied, namespace=NS, config=LAZY)
    try:
        assert a.sync.snapshot_heads is not None and b.sync.snapshot_heads is not None  # both from their snapshots
        assert a.lessons.parsed_count() == 0  # nothing replayed: the records come from the segments, unparsed
        assert _state(a) == _state(b)
        assert _vectors(a) == _vectors(b)
        assert _index(a) == _index(b)
        full = LearningMemory.open(pointed, namespace=NS, config=NO_SNAPSHOT)
        try:
            assert _state(a) == _state(full)
        finally:
            full.close()
    finally:
        a.close()
        b.close()


def test_segments_stay_few_and_dead_ones_are_copied(tmp_path: Path) -> None:
    """Many rounds of rewrites: the base never names more than ``snapshot_segments_max`` other files, the folder
    holds no file the base does not name, and mostly-dead journals are copied rather than kept."""
    config = MemoryConfig(storage={"warm_lessons": False, "snapshot_rebase_share": 0.0, "snapshot_segments_max": 2})
    lessons = synthetic_lessons(30, NS, seed=8)
    mem = LearningMemory.open(tmp_path, namespace=NS, config=config)
    mem.add_lessons(lessons)
    mem.close()
    for r in range(6):
        mem = LearningMemory.open(tmp_path, namespace=NS, config=config)
        mem.write("lessons", [mem.lessons[l.id].model_copy(update={"rule_text": f"v{r}"}) for l in lessons[r * 5 : r * 5 + 5]])
        mem.close()
        meta = _meta(tmp_path)
        assert len(meta["segments"]) <= 1 + 2
        folder = snapshot_dir(tmp_path, NS)
        named = {*meta["segments"], f"journal-{meta['journal']}.tsv"}
        assert {p.name for p in folder.glob("*.tsv")} == named
    again = LearningMemory.open(tmp_path, namespace=NS, config=LAZY)
    assert again.sync.snapshot_heads is not None
    assert _state(again) == _state(LearningMemory.open(tmp_path, namespace=NS, config=NO_SNAPSHOT))
    assert {again.lessons[l.id].rule_text for l in lessons} == {f"v{r}" for r in range(6)}


def test_a_changed_segment_means_a_full_read(pair: tuple[Path, Path], tmp_path: Path) -> None:
    """A file the base points into that changed since (appended to, or gone): never read as records; Chroma is."""
    import shutil

    pointed, _ = pair
    for damage in ("appended", "missing"):
        path = tmp_path / damage
        shutil.copytree(pointed, path)
        folder = snapshot_dir(path, NS)
        segment = folder / _meta(path)["segments"][1]
        if damage == "appended":
            with open(segment, "ab") as f:
                f.write(b"x\tlessons\t\"y\"\t{}\n")
        else:
            segment.unlink()
        mem = LearningMemory.open(path, namespace=NS, config=LAZY)
        assert mem.sync.snapshot_heads is None  # read from Chroma
        assert _state(mem) == _state(LearningMemory.open(path, namespace=NS, config=NO_SNAPSHOT))
        mem.close()


KILL_SCRIPT = textwrap.dedent("""
    import os, sys
    from langmem_plus import LearningMemory
    from langmem_plus.bench.foundation import synthetic_lessons
    from langmem_plus.config import MemoryConfig
    import langmem_plus.store.snapshot as snapshot
    path, point = sys.argv[1], sys.argv[2]
    ns = ("seg", "ments")
    mem = LearningMemory.open(path, namespace=ns, config=MemoryConfig(snapshot_rebase_share=0.0))
    part = int(sys.argv[3])
    mem.add_lessons(synthetic_lessons(50, ns, seed=0)[part * 25 : (part + 1) * 25])
    real_place, real_replace, real_unlink = snapshot.place_records, os.replace, os.unlink
    def place(*args, **kwargs):
        out = real_place(*args, **kwargs)
        if point == "placed":
            os._exit(9)
        return out
    def replace(src, dst):
        real_replace(src, dst)
        if point == "committed" and str(dst).endswith("meta.json"):
            os._exit(9)
    def unlink(p, *args, **kwargs):
        real_unlink(p, *args, **kwargs)
        if point == "cleaning":
            os._exit(9)
    snapshot.place_records, os.replace, os.unlink = place, replace, unlink
    mem.close()
    os._exit(0)
""")


@pytest.mark.parametrize("point", ["placed", "committed", "cleaning"])
def test_a_process_killed_during_the_rebase_leaves_a_store_that_opens_with_nothing_lost(tmp_path: Path, point: str) -> None:
    """Killed after the records are placed (before the commit), right after ``meta.json`` is replaced, or while old
    files are removed: the next open reads the snapshot (old base and journal, or the new base) and equals Chroma."""
    script = tmp_path / "kill.py"
    script.write_text(KILL_SCRIPT)
    store = tmp_path / "s"
    for part, expect in ((0, 0), (1, 9)):  # the first close rebases normally; the second is killed
        done = subprocess.run([sys.executable, str(script), str(store), point if expect else "none", str(part)], timeout=300)
        assert done.returncode == expect
    mem = LearningMemory.open(store, namespace=NS, config=LAZY)
    try:
        assert mem.sync.snapshot_heads is not None  # the snapshot was used
        assert len(mem.lessons) == 50
        assert _state(mem) == _state(LearningMemory.open(store, namespace=NS, config=NO_SNAPSHOT))
    finally:
        mem.close()
    again = LearningMemory.open(store, namespace=NS, config=LAZY)  # and the close after it left a readable base too
    assert again.sync.snapshot_heads is not None and len(again.lessons) == 50


def test_only_the_journal_lines_own_text_is_pointed_at(tmp_path: Path) -> None:
    """A text equal to a journalled one but not that very string (written since by someone else) is copied."""
    folder = tmp_path / "snap"
    snap = SnapshotDir(folder, segment_live_min=0.0)
    snap.write_base("g0", {}, _empty_graph())
    text = json.dumps({"rule": "r"})
    snap.append_group("g1", [("lessons", [("a", text)])])
    journal = f"journal-{snap._journal_name}.tsv"
    same = "".join(list(text))  # equal, another object
    placed = place_records(folder, "own.tsv", {"lessons": [("a", text), ("b", same)]}, snap._located, live_min=0.0)
    assert placed.names == ["own.tsv", journal] and placed.segment.tolist() == [1, 0]
    data = (folder / journal).read_bytes()
    assert data[placed.starts[0] : placed.ends[0]].decode() == text
    assert (folder / "own.tsv").read_bytes()[placed.starts[1] : placed.ends[1]].decode() == text


def test_vector_runs_equal_the_rows_one_by_one(tmp_path: Path) -> None:
    """A new base's vectors written as runs (writes' matrices, the base's file read a span at a time) equal the
    rows ``get_many`` gives one by one, and the saved file reads back the same."""
    rng = np.random.default_rng(0)
    base = rng.standard_normal((40, 8)).astype(np.float32)
    np.save(tmp_path / "v.npy", base)
    ids = [f"l{i}" for i in range(40)]
    vectors = LessonVectors(ids, np.load(tmp_path / "v.npy", mmap_mode="r"))
    vectors.put_rows(["l3", "l4", "new1", "l20", "new2", "l39"], rng.standard_normal((6, 8)).astype(np.float32))
    vectors.put_rows(["l5", "new3"], rng.standard_normal((2, 8)).astype(np.float32))
    vectors.put("l4", rng.standard_normal(8).astype(np.float32))  # written again: its latest vector
    vectors.forget("l7")
    order = ["new2", *ids, "new1", "new3", "missing"]
    runs, found = vectors.runs_of(order)
    known = vectors.get_many(order)
    assert found.tolist() == [i in known for i in order]
    expected = np.vstack([known[i] for i in order if i in known])
    np.testing.assert_array_equal(runs.matrix(), expected)
    runs.save(tmp_path / "out.npy")
    np.testing.assert_array_equal(np.load(tmp_path / "out.npy"), expected)


def _empty_graph() -> tuple[dict[str, Any], list[str], dict[str, np.ndarray]]:
    from langmem_plus.store.graph import LessonGraph

    return LessonGraph().to_state()


class _Text(str):
    """A str subclass: written as its text, never pointed at."""


@pytest.mark.parametrize("seed", range(6))
def test_placing_in_passes_equals_placing_record_by_record(tmp_path: Path, seed: int) -> None:
    """``place_records``' C-level passes give the plain per-record loop's places, segment names and own file exactly:
    journalled texts (the very string, an equal copy, a replaced one), a loaded base's rows (file kept or gone),
    str subclasses, records no file holds; as pairs and as ``RecordColumns``."""
    from langmem_plus.store.segments import RecordColumns

    rng = np.random.default_rng(seed)
    folder = tmp_path / "snap"
    snap = SnapshotDir(folder, segment_live_min=0.0)
    snap.write_base("g0", {"lessons": [(f"b{i}", json.dumps({"base": i})) for i in range(30)]}, _empty_graph())
    loaded = snap.load("g0")
    assert loaded is not None
    texts = {f"j{i}": json.dumps({"j": i, "é": "ü" * int(rng.integers(0, 3))}) for i in range(60)}
    snap.append_group("g1", [("lessons", list(texts.items())[:40]), ("links", [("k1", "{}")])])
    snap.append_group("g2", [("lessons", list(texts.items())[40:])])
    replaced = json.dumps({"j": 3, "again": True})
    snap.append_group("g3", [("lessons", [("j3", replaced)])])
    kinds: dict[str, list[tuple[str, Any]]] = {"lessons": [], "links": [("k1", "{}"), ("k2", "{}")]}
    for rid, text in texts.items():
        pick = rng.integers(0, 4)
        src = text if pick < 2 else "".join(list(text)) if pick == 2 else _Text(text)
        kinds["lessons"].append((rid, replaced if rid == "j3" else src))
    kinds["lessons"] += [(f"b{i}", (loaded.raw, row)) for i, row in list(loaded.records["lessons"].items())[::2]]
    kinds["lessons"] += [("new", json.dumps({"new": 1})), ("j0", texts["j0"])]  # j0 twice: the later place wins
    order = rng.permutation(len(kinds["lessons"])).tolist()
    kinds["lessons"] = [kinds["lessons"][i] for i in order]
    results = []
    for by_row, columns in ((True, False), (False, False), (False, True)):
        records: dict[str, Any] = {
            k: RecordColumns([i for i, _ in v], [s for _, s in v]) if columns else list(v) for k, v in kinds.items()
        }
        own = f"own-{by_row}-{columns}.tsv"
        placed = place_records(folder, own, records, snap._located, live_min=0.0, by_row=by_row)
        results.append((placed, (folder / own).read_bytes()))
    (reference, ref_bytes), *fast = results
    for placed, data in fast:
        assert placed.names[1:] == reference.names[1:] and placed.sizes[1:] == reference.sizes[1:]
        assert placed.ids == reference.ids and data == ref_bytes
        for got, want in ((placed.segment, reference.segment), (placed.starts, reference.starts), (placed.ends, reference.ends)):
            np.testing.assert_array_equal(got, want)
    assert reference.segment.min() >= 0 and len(set(reference.names)) > 2  # the cases above all happened
