"""The local snapshot: a fast open that equals a full read from Chroma, and never a stale one."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from langmem_plus import LearningMemory
from memory_state import memory_state
from langmem_plus.bench.foundation import synthetic_lessons
from langmem_plus.config import MemoryConfig
from langmem_plus.demo import run_demo
from langmem_plus.records import Lesson, Link
from langmem_plus.store.snapshot import RecordTable, snapshot_dir

NS = ("demo", "gridtool")
NO_SNAPSHOT = MemoryConfig(storage={"snapshot": False})
LAZY = MemoryConfig(storage={"warm_lessons": False})
"""No background parse, so the tests can see what an open itself parsed."""


_state = memory_state


def _from_chroma(path: Path, ns: tuple[str, ...] = NS) -> tuple[Any, ...]:
    mem = LearningMemory.open(path, namespace=ns, config=NO_SNAPSHOT)
    try:
        return _state(mem)
    finally:
        mem.close()


@pytest.fixture(scope="module")
def demo_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("snap") / "s"
    run_demo(runs=2, tool="gridtool", store=path, seed=0)
    return path


def test_open_from_snapshot_is_lazy_and_equals_a_full_read(demo_store: Path, tmp_path: Path) -> None:
    mem = LearningMemory.open(demo_store, namespace=NS, config=LAZY)
    assert (snapshot_dir(demo_store, NS) / "meta.json").exists()
    assert mem.lessons.parsed_count() == 0 and mem.graph._nx is None  # nothing parsed or built yet
    assert len(mem.lessons) > 0 and len(mem.runs) == mem.store.count("runs") > 0
    assert _state(mem) == _from_chroma(demo_store)
    mem.close()


def test_open_pauses_the_garbage_collector_throughout_and_restores_it(
    demo_store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full collection inside an open costs the whole process's heap; an open runs none."""
    import gc

    from langmem_plus.store.chroma import ChromaStore

    seen: list[bool] = []
    from langmem_plus.memory.sync import StoreSync

    real_open, real_load = ChromaStore.open.__func__, StoreSync._load_snapshot  # type: ignore[attr-defined]
    monkeypatch.setattr(ChromaStore, "open", classmethod(lambda cls, **kw: (seen.append(gc.isenabled()), real_open(cls, **kw))[1]))
    monkeypatch.setattr(StoreSync, "_load_snapshot", lambda self: (seen.append(gc.isenabled()), real_load(self))[1])
    for enabled in (True, False):
        (gc.enable if enabled else gc.disable)()
        try:
            LearningMemory.open(demo_store, namespace=NS, config=LAZY).close()
            assert gc.isenabled() is enabled
        finally:
            gc.enable()
    assert seen == [False, False, False, False]


def test_writes_after_open_are_journalled_and_replayed(demo_store: Path, tmp_path: Path) -> None:
    """Runs, lessons, links and skills written after an open, without a close, come back on the next open."""
    import shutil

    path = tmp_path / "s"
    shutil.copytree(demo_store, path)
    run_demo(runs=1, tool="gridtool", store=path, seed=1)  # opens from the snapshot, writes, closes
    mem = LearningMemory.open(path, namespace=NS)
    mem.add_lessons(synthetic_lessons(5, NS, seed=2))
    journal = next(snapshot_dir(path, NS).glob("journal-*.tsv"))
    assert journal.stat().st_size > 0
    # no close: the journal holds the writes
    again = LearningMemory.open(path, namespace=NS, config=LAZY)
    assert again.lessons.parsed_count() <= 5 + 1  # only the journalled lessons were parsed (to update the graph)
    assert _state(again) == _from_chroma(path)
    assert len(again.runs) == again.store.count("runs") == 3 * len({r.task_id for r in again.runs})


def test_a_write_the_snapshot_did_not_see_means_a_full_read(demo_store: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    import shutil

    path = tmp_path / "s"
    shutil.copytree(demo_store, path)
    other = LearningMemory.open(path, namespace=NS, config=NO_SNAPSHOT)  # another client: no journal
    lesson = synthetic_lessons(1, NS, seed=9)[0]
    other.add_lessons([lesson])
    other.close()
    with caplog.at_level(logging.INFO, logger="langmem_plus"):
        mem = LearningMemory.open(path, namespace=NS, config=LAZY)
    assert "behind the store" in caplog.text
    assert lesson.id in mem.lessons and mem.lessons.parsed_count() == len(mem.lessons)  # read from Chroma
    assert _state(mem) == _from_chroma(path)
    mem.close()
    assert LearningMemory.open(path, namespace=NS, config=LAZY).lessons.parsed_count() == 0  # the new base is used again


def test_a_torn_journal_write_is_not_trusted(demo_store: Path, tmp_path: Path) -> None:
    """A process killed after the Chroma write but before the journal's end line: Chroma wins."""
    import shutil

    path = tmp_path / "s"
    shutil.copytree(demo_store, path)
    mem = LearningMemory.open(path, namespace=NS)
    lesson = synthetic_lessons(1, NS, seed=4)[0]
    mem.add_lessons([lesson])
    journal = next(snapshot_dir(path, NS).glob("journal-*.tsv"))
    lines = journal.read_text(encoding="utf-8").splitlines(keepends=True)
    assert lines[-1].split("\t")[1].strip() == "#end"
    journal.write_text("".join(lines[:-1]) + lines[-1][:5], encoding="utf-8")  # end line torn off
    again = LearningMemory.open(path, namespace=NS)
    assert lesson.id in again.lessons
    assert _state(again) == _from_chroma(path)


@pytest.mark.parametrize("damage", ["records", "graph_json", "npz", "meta"])
def test_a_damaged_snapshot_falls_back_to_chroma(demo_store: Path, tmp_path: Path, damage: str) -> None:
    import shutil

    path = tmp_path / "s"
    shutil.copytree(demo_store, path)
    folder = snapshot_dir(path, NS)
    target = {
        "records": next(folder.glob("base-*.records.tsv")),
        "graph_json": next(folder.glob("base-*.graph.json")),
        "npz": next(folder.glob("base-*.graph.npz")),
        "meta": folder / "meta.json",
    }[damage]
    data = target.read_bytes()
    target.write_bytes(data[: len(data) // 2] + b"\xff\x00garbage")
    mem = LearningMemory.open(path, namespace=NS)
    assert _state(mem) == _from_chroma(path)
    mem.close()


def test_record_table_parses_on_demand_and_drops_foreign_or_broken_records() -> None:
    ns = ("a",)
    good = Link(id="g", namespace=ns, a="x", b="y")
    foreign = Link(id="f", namespace=("b",), a="x", b="y")
    table: RecordTable[Link] = RecordTable(Link, ns, {"g": good.model_dump_json(), "f": foreign.model_dump_json(), "bad": "{not json"})
    assert len(table) == 3 and table.parsed_count() == 0
    assert table["g"] == good and table.parsed_count() == 1
    assert table.get("f") is None and table.get("bad") is None  # dropped, logged
    assert list(table) == ["g"] and table.values() == [good]
    table["n"] = Link(id="n", namespace=ns, a="p", b="q")
    assert Link.model_validate_json(table.raw_json("n")).a == "p"


def test_import_conflict_check_finds_rivals_through_the_fingerprint_index(tmp_path: Path) -> None:
    mem = LearningMemory.open(tmp_path, namespace=("acme",))
    base = Lesson(id="a", namespace=("acme",), rule_text="WRONG: sort -d -> CORRECT: sort --desc", triggers=["fp1"], wrong="sort -d", correct="sort --desc")
    mem.add_lessons([base, Lesson(id="z", namespace=("acme",), rule_text="other", triggers=["fp9"], wrong="sort -d", correct="order")])
    rival = base.model_copy(update={"id": "b", "correct": "sort -r", "rule_text": "WRONG: sort -d -> CORRECT: sort -r"})
    mem.add_lessons([rival])
    assert mem.lessons["b"].conflicts_with == ["a"] and mem.lessons["a"].conflicts_with == ["b"]
    assert mem.lessons["z"].conflicts_with == []  # same WRONG, no shared trigger: not a rival


def test_server_snapshot_sees_another_clients_write(chroma_server: str, tmp_path: Path) -> None:
    """Over HTTP the generation lives in the server's collection metadata, so a second machine's write is seen."""
    ns = ("server", "snapshot")
    mine, theirs = tmp_path / "mine", tmp_path / "theirs"
    a = LearningMemory.open(url=chroma_server, namespace=ns, audit_dir=mine)
    a.add_lessons(synthetic_lessons(20, ns, seed=5))
    a.close()
    warm = LearningMemory.open(url=chroma_server, namespace=ns, audit_dir=mine, config=LAZY)
    assert warm.lessons.parsed_count() == 0 and len(warm.lessons) == 20  # from the local snapshot
    warm.close()
    b = LearningMemory.open(url=chroma_server, namespace=ns, audit_dir=theirs)
    extra = synthetic_lessons(1, ns, seed=6)[0].model_copy(update={"id": "les_from_the_other_machine"})
    assert extra.id not in warm.lessons
    b.add_lessons([extra])
    b.close()
    again = LearningMemory.open(url=chroma_server, namespace=ns, audit_dir=mine)
    assert extra.id in again.lessons and len(again.lessons) == again.store.count("lessons")
    again.close()


def test_snapshot_vectors_are_chromas_and_never_stale(demo_store: Path, tmp_path: Path) -> None:
    """Text similarity reads the snapshot's memory-mapped rows: they must be what Chroma stores
    (Chroma re-normalises vectors for cosine, so they agree to float32 rounding)."""
    import shutil

    import numpy as np

    path = tmp_path / "s"
    shutil.copytree(demo_store, path)
    mem = LearningMemory.open(path, namespace=NS)
    ids = sorted(mem.lessons)
    stored = mem.store.stored_embeddings("lessons", ids)
    for i in ids:
        row = mem.view.lesson_vectors.get(i)
        assert row is not None and np.allclose(row, stored[i], rtol=0, atol=1e-6)
    target = mem.lessons[ids[0]]
    rewritten = target.model_copy(update={"rule_text": "WRONG: frobnicate -> CORRECT: defrobnicate", "wrong": "frobnicate"})
    mem.write("lessons", [rewritten])  # journalled, not folded into the base (no close)
    again = LearningMemory.open(path, namespace=NS)
    assert again.view.lesson_vectors.get(target.id) is None  # the base row is stale: not used
    fresh = again.store.stored_embeddings("lessons", [target.id])[target.id]
    assert np.array_equal(again.vectors.relevance([again.lessons[target.id]])[0], fresh)
    assert not np.allclose(fresh, stored[target.id], rtol=0, atol=1e-3)
    assert np.allclose(again.view.lesson_vectors.get(ids[1]), stored[ids[1]], rtol=0, atol=1e-6)  # the others: from the base


def test_background_warm_parses_everything_and_never_undoes_a_write() -> None:
    import threading

    ns = ("a",)
    links = {f"k{i}": Link(id=f"k{i}", namespace=ns, a="x", b=f"y{i}") for i in range(300)}
    table: RecordTable[Link] = RecordTable(Link, ns, {i: l.model_dump_json() for i, l in links.items()})
    assert table.warm(threading.Event(), chunk=7, pause_s=0) == 300 and table.parsed_count() == 300
    assert table["k5"] == links["k5"]
    # A write lands while a record is being parsed: the parse must not overwrite it.
    racy: RecordTable[Link] = RecordTable(Link, ns, {"k": links["k1"].model_dump_json()})
    newer = Link(id="k", namespace=ns, a="new", b="write")
    real = Link.model_validate_json

    def parse_while_writing(raw: str) -> Link:
        racy.put("k", newer, None)  # the concurrent write
        return real(raw)

    Link.model_validate_json = parse_while_writing  # type: ignore[method-assign]
    try:
        assert racy.warm(threading.Event(), pause_s=0) == 1
    finally:
        Link.model_validate_json = real  # type: ignore[method-assign]
    assert racy["k"] == newer
    stop = threading.Event()
    stop.set()
    assert RecordTable(Link, ns, {"k": newer.model_dump_json()}).warm(stop) == 0  # stopped before it began


def test_memory_warms_after_an_open_from_the_snapshot(demo_store: Path) -> None:
    mem = LearningMemory.open(demo_store, namespace=NS)
    assert mem.wait_warm(timeout=30) and mem.lessons.parsed_count() == len(mem.lessons) > 0
    mem.close()
    cold = LearningMemory.open(demo_store, namespace=NS, config=MemoryConfig(storage={"warm_lessons": False}))
    assert cold.wait_warm(timeout=0) and cold.lessons.parsed_count() == 0
    cold.close()


def test_lesson_vectors_batch_read_equals_row_by_row() -> None:
    import numpy as np

    from langmem_plus.store.snapshot import LessonVectors

    rng = np.random.default_rng(0)
    matrix = rng.random((6, 4)).astype(np.float32)
    v = LessonVectors([f"l{i}" for i in range(6)], matrix)
    v.put("l2", np.ones(4, dtype=np.float32))  # written since the base
    v.forget("l4")  # rewritten elsewhere
    asked = ["l5", "l2", "nope", "l4", "l0"]
    many = v.get_many(asked)
    assert set(many) == {"l5", "l2", "l0"}
    for i in many:
        assert np.array_equal(many[i], v.get(i))


def test_snapshot_ids_with_escapes_round_trip(tmp_path: Path) -> None:
    """Ids are written as JSON strings; the fast read path must not mangle ones that need escapes."""
    import numpy as np

    from langmem_plus.store.snapshot import SnapshotDir

    ids = ["plain", 'quo"te', "tab\there", "uni\u00e9", "back\\slash"]
    folder = SnapshotDir(tmp_path / "snap")
    graph = ({"status": {}}, ["n"], {"indptr": np.zeros(2, dtype=np.int64)})
    folder.write_base("g1", {"links": [(i, f"raw-{n}") for n, i in enumerate(ids)]}, graph)
    loaded = folder.load("g1")
    assert loaded is not None
    assert {i: loaded.raw.text(row) for i, row in loaded.records["links"].items()} == {i: f"raw-{n}" for n, i in enumerate(ids)}


def test_a_tag_change_refreshes_the_cached_relevance_vector(tmp_path: Path) -> None:
    """Tags are part of the embedded document: the engine's cached vector must follow them."""
    import numpy as np

    lesson = Lesson(id="a", namespace=("acme",), rule_text="WRONG: sort -d -> CORRECT: sort --desc", tags=["flags"])
    writer = LearningMemory.open(tmp_path, namespace=("acme",), config=NO_SNAPSHOT)
    writer.write("lessons", [lesson])
    writer.close()
    mem = LearningMemory.open(tmp_path, namespace=("acme",), config=NO_SNAPSHOT)  # no vector known locally
    first = mem.vectors.relevance([mem.lessons["a"]])[0].copy()  # read from Chroma and cached
    retagged = lesson.model_copy(update={"tags": ["ordering", "cli_syntax"]})
    mem.write("lessons", [retagged])
    stored = mem.store.stored_embeddings("lessons", ["a"])["a"]
    now = mem.vectors.relevance([mem.lessons["a"]])[0]
    assert not np.allclose(first, stored, atol=1e-3)
    assert np.allclose(now, stored, atol=1e-6)
    mem.close()


@settings(max_examples=300, deadline=None)
@given(rid=st.text())
def test_fast_id_quote_equals_json_dumps(rid: str) -> None:
    """Ids skip the JSON encoder only when the encoder would write them unchanged between quotes."""
    import json

    from langmem_plus.store.snapshot import _quote

    assert _quote(rid) == json.dumps(rid)


def test_base_graph_head_reads_back_as_json_dumps_would(tmp_path: Path) -> None:
    """The graph head is encoded by pydantic-core: read back, it equals what ``json.dumps`` gave (floats, escapes, infinities)."""
    import json

    import numpy as np

    from langmem_plus.store.snapshot import SnapshotDir

    data = {"status": {"lesson:é\"x": "candidate"}, "rewrite": {"a": ("w\t1", "c\\2")},
            "links": [["a", "b", "co", 0.1 + 0.2], ["a", "c", "co", float("inf")]], "skills": {}}
    folder = SnapshotDir(tmp_path / "snap")
    vectors = (["a"], np.arange(4, dtype=np.float32).reshape(1, 4))
    folder.write_base("g1", {"lessons": [("a", "{}")]}, (data, ["n"], {"indptr": np.zeros(2, dtype=np.int64)}), vectors)
    loaded = folder.load("g1")
    assert loaded is not None
    assert loaded.graph_data == json.loads(json.dumps(data))
    assert loaded.vector_ids == ["a"] and loaded.vectors is not None
    np.testing.assert_array_equal(np.asarray(loaded.vectors), vectors[1])


def test_a_failed_vector_write_keeps_the_previous_base(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The vectors are saved on a thread; its failure reaches the caller before the commit, so the old base stays current."""
    import numpy as np

    from langmem_plus.store import snapshot as snapshot_mod
    from langmem_plus.store.snapshot import SnapshotDir

    graph = ({"status": {}}, ["n"], {"indptr": np.zeros(2, dtype=np.int64)})
    folder = SnapshotDir(tmp_path / "snap")
    folder.write_base("g1", {"links": [("old", "raw-old")]}, graph, (["old"], np.ones((1, 4), dtype=np.float32)))

    def broken_save(*args: Any, **kwargs: Any) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(snapshot_mod.np, "save", broken_save)
    with pytest.raises(OSError, match="disk full"):
        folder.write_base("g2", {"links": [("new", "raw-new")]}, graph, (["new"], np.zeros((1, 4), dtype=np.float32)))
    monkeypatch.undo()
    again = SnapshotDir(tmp_path / "snap").load("g1")
    assert again is not None and again.records["links"] == {"old": 0} and again.raw.text(0) == "raw-old"
    np.testing.assert_array_equal(np.asarray(again.vectors), np.ones((1, 4), dtype=np.float32))


def _records_reference(text: str) -> dict[str, dict[str, str]]:
    """The records file read the plain way: split lines, split each at its first two tabs, decode the id."""
    import json

    out: dict[str, dict[str, str]] = {"lessons": {}, "links": {}, "skills": {}, "runs": {}, "episodes": {}}
    for line in text.splitlines():
        kind, rid, raw = line.split("\t", 2)
        out[kind][json.loads(rid)] = raw
    return out


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["lessons", "links", "skills", "runs", "episodes"]), st.text(min_size=1, max_size=12), st.text(max_size=30)),
        max_size=25,
    )
)
def test_mapped_records_file_reads_as_the_plain_line_split(entries: list[tuple[str, str, str]]) -> None:
    """The vectorised scan of the memory-mapped records file gives every kind's ids and texts as splitting lines does."""
    import json
    import tempfile

    import numpy as np

    from langmem_plus.store.snapshot import SnapshotDir

    records: dict[str, dict[str, str]] = {}
    for kind, rid, text in entries:
        records.setdefault(kind, {})[rid] = json.dumps(text)  # record JSON: tabs and newlines escaped
    graph = ({"status": {}}, ["n"], {"indptr": np.zeros(2, dtype=np.int64)})
    with tempfile.TemporaryDirectory() as tmp:
        folder = SnapshotDir(Path(tmp) / "snap")
        folder.write_base("g", {k: list(v.items()) for k, v in records.items()}, graph)
        loaded = folder.load("g")
        assert loaded is not None
        got = {k: {i: loaded.raw.text(row) for i, row in rows.items()} for k, rows in loaded.records.items()}
        reference = _records_reference(next(Path(tmp, "snap").glob("base-*.records.tsv")).read_text(encoding="utf-8"))
        assert got == reference == {k: records.get(k, {}) for k in reference}


@pytest.mark.parametrize("damage", [b"lessons\t\"x\"\t{}", b"lessons\t\"x\"\t{\t}\n", b"nokind\t\"x\"\t{}\n", b"lessons\t\"x\"\n"])
def test_a_malformed_records_line_makes_the_base_unreadable(tmp_path: Path, damage: bytes) -> None:
    """Truncated, an extra tab, an unknown kind, a missing field: the snapshot is not used (the open reads Chroma)."""
    import numpy as np

    from langmem_plus.store.snapshot import SnapshotDir

    folder = SnapshotDir(tmp_path / "snap")
    folder.write_base("g", {"links": [("a", "{}")]}, ({"status": {}}, ["n"], {"indptr": np.zeros(2, dtype=np.int64)}))
    assert folder.load("g") is not None
    path = next((tmp_path / "snap").glob("base-*.records.tsv"))
    path.write_bytes(path.read_bytes() + damage)
    assert SnapshotDir(tmp_path / "snap").load("g") is None


def test_record_table_keeps_at_most_keep_parsed_and_reparses_the_dropped() -> None:
    import threading

    ns = ("a",)
    links = {f"k{i}": Link(id=f"k{i}", namespace=ns, a="x", b=f"y{i}") for i in range(50)}
    table: RecordTable[Link] = RecordTable(Link, ns, {i: l.model_dump_json() for i, l in links.items()}, keep_parsed=8)
    assert table.warm(threading.Event(), chunk=3, pause_s=0) <= 10 and table.parsed_count() == 8  # the warm stops at the bound
    for i, link in links.items():
        assert table[i] == link
        assert table.parsed_count() <= 8
    folded = Link(id="k0", namespace=ns, a="folded", b="z")
    table.put("k0", folded, None)  # no JSON held: this one is never dropped
    for i in links:
        table.get(i)
    assert table["k0"] is folded and table.parsed_count() <= 9
    assert Link.model_validate_json(table.raw_json("k0")) == folded
    del table["k0"]
    assert "k0" not in table and table.parsed_count() <= 8


def test_an_open_parses_at_most_parsed_lessons_max(demo_store: Path) -> None:
    """The warm parse after an open stops at the bound, and every lesson still reads as a full read gives it."""
    mem = LearningMemory.open(demo_store, namespace=NS, config=MemoryConfig(storage={"parsed_lessons_max": 3}))
    assert mem.wait_warm(timeout=30) and mem.lessons.parsed_count() == 3 < len(mem.lessons)
    full = _from_chroma(demo_store)
    assert {i: l.model_dump() for i, l in mem.lessons.items()} == full[1]
    assert mem.lessons.parsed_count() == 3
    mem.close()


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(
        st.text(max_size=8),
        st.lists(st.one_of(st.floats(allow_nan=False), st.text(max_size=10), st.integers(), st.booleans(), st.none()), max_size=6),
        max_size=6,
    )
)
def test_graph_head_parser_reads_what_json_loads_reads(head: dict[str, Any]) -> None:
    """The open parses the graph head with pydantic-core; the values must be ``json.loads``'s, floats and escapes included."""
    import json

    import pydantic_core

    encoded = pydantic_core.to_json(head, inf_nan_mode="constants")
    assert pydantic_core.from_json(encoded, cache_strings="all") == json.loads(encoded) == json.loads(json.dumps(head))
