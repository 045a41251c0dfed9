"""ChromaStore: round trips, nearest-first queries, namespace isolation, failures, crash safety.

Every behavioural test runs against the embedded store and against a real
``chroma run`` server (``-m server`` selects only those).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from langmem_plus.embeddings import HashingEmbeddings
from langmem_plus.errors import InvalidRecord, StoreUnavailable
from langmem_plus.records import (
    CognitiveItem,
    CognitiveRecord,
    Entity,
    Episode,
    ErrorEvent,
    Evidence,
    Fact,
    Lesson,
    LessonScope,
    LessonStats,
    Link,
    Provenance,
    RunRecord,
    Skill,
    SkillStats,
)
from langmem_plus.store import chroma as chroma_mod
from langmem_plus.store.chroma import KINDS, ChromaStore, namespace_key

NS = ("acme", "agent-7")
OTHER = ("acme", "agent-8")
EMB = HashingEmbeddings()


# --------------------------------------------------------------------------- records


def lesson(i: int, ns: tuple[str, ...] = NS, *, rule: str | None = None, **kw: Any) -> Lesson:
    return Lesson(
        id=f"les_{i}",
        namespace=ns,
        rule_text=rule or f"WRONG: sort -d col{i} -> CORRECT: sort --desc col{i}",
        wrong="sort -d *",
        correct="sort --desc *",
        triggers=[f"fp{i}", f"fp{i}b"],
        fingerprints=[f"unknown flag -d in sort {i}"],
        tags=["unknown_command", "sort_direction"],
        scope=LessonScope(level="domain", tool="gridtool", domain="tables"),
        stats=LessonStats(activations=3, utility_window=[0.1, -0.2, 0.5]),
        provenance=Provenance(run_ids=["r1", "r2"], event_ids=["e1"]),
        conflicts_with=["les_x"],
        **kw,
    )


def samples(ns: tuple[str, ...] = NS) -> dict[str, list[Any]]:
    """Two records of every kind, with lists, dicts and None fields."""
    return {
        "lessons": [lesson(1, ns), lesson(2, ns, status="promoted")],
        "episodes": [
            Episode(episode_id=f"ep_{i}", namespace=ns, kind="success", goal_signature=f"open door {i}",
                    summary="used the key", action_seq=["take key", "open door"], run_id=None)
            for i in range(2)
        ],
        "skills": [
            Skill(id=f"sk_{i}", namespace=ns, name=f"unlock {i}", goal_templates=["open <door>"],
                  steps=["take key", "use key"], stats=SkillStats(executions=4, successes=3))
            for i in range(2)
        ],
        "events": [
            ErrorEvent(id=f"evt_{i}", namespace=ns, run_id="r1", step=i, fingerprint="unknown flag <str>",
                       fingerprint_id=f"fp{i}", tags=["unknown_command"], channel="hard",
                       action="sort -d x", error_text="unknown flag '-d'", tool="gridtool", domain=None)
            for i in range(2)
        ],
        "links": [
            Link(id=f"lnk_{i}", namespace=ns, a="lesson:les_1", b=f"lesson:les_{i + 2}", weight=2.5)
            for i in range(2)
        ],
        "runs": [
            RunRecord(run_id=f"run_{i}", namespace=ns, seq=i, task_id="t1", family="sorting",
                      passed=bool(i), fingerprint_counts={"fp1": 2, "fp2": 1}, activated=["les_1"])
            for i in range(2)
        ],
        "cognitive": [
            CognitiveRecord(id=f"state_{i}", namespace=ns, agent_id=f"H00{i}", next_seq=2,
                            working=[CognitiveItem(content="Year 2: did nothing", importance=0.3, year=2, seq=1)],
                            episodic=[CognitiveItem(content="Year 1: flood", importance=0.9, year=1, tags=("flood",))])
            for i in range(2)
        ],
        "facts": [
            Fact(id=f"fact_{i}", namespace=ns, subject="fridge", relation="contains", object=f"item {i}",
                 subject_id="ent_f", object_id=f"ent_{i}", state="held", confidence=0.95,
                 sources=[Evidence(kind="observed", source="run-1")])
            for i in range(2)
        ],
        "entities": [
            Entity(id=f"ent_{i}", namespace=ns, label=f"Item {i}", key=f"item {i}", aliases=[f"thing {i}"])
            for i in range(2)
        ],
    }


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(params=["embedded", pytest.param("server", marks=pytest.mark.server)])
def location(request: pytest.FixtureRequest, tmp_store_path: Path) -> dict[str, Any]:
    """``{"path": ...}`` for the embedded store or ``{"url": ...}`` for the test server."""
    if request.param == "server":
        return {"url": request.getfixturevalue("chroma_server")}
    return {"path": tmp_store_path}


@pytest.fixture
def ns_pair() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Two look-alike namespaces unique to this test (the server is shared by the session)."""
    run = uuid.uuid4().hex[:8]
    return ("acme", f"agent-7-{run}"), ("acme", f"agent-8-{run}")


@pytest.fixture
def open_store(location: dict[str, Any]) -> Iterator[Any]:
    opened: list[ChromaStore] = []

    def _open(namespace: tuple[str, ...], embeddings: Any = EMB) -> ChromaStore:
        store = ChromaStore.open(namespace=namespace, embeddings=embeddings, **location)
        opened.append(store)
        return store

    yield _open
    for store in opened:
        if not store._closed:
            store.delete_namespace()
            store.close()


# --------------------------------------------------------------------------- round trips


def test_round_trip_every_kind(open_store: Any, ns_pair: Any) -> None:
    ns = ns_pair[0]
    store = open_store(ns)
    data = samples(ns)
    for kind, records in data.items():
        store.upsert(kind, records)
    for kind, records in data.items():
        ids = [store_id(kind, r) for r in records]
        assert store.get(kind, ids) == records, kind
        assert store.get(kind, [ids[1], "missing", ids[0]]) == [records[1], records[0]], kind
        assert sorted(store.all(kind), key=lambda r: store_id(kind, r)) == records, kind
        assert store.count(kind) == len(records), kind


def store_id(kind: str, record: Any) -> str:
    return chroma_mod.KIND_SPECS[kind].id_of(record)


def test_metadata_is_scalar_without_none(open_store: Any, ns_pair: Any) -> None:
    ns = ns_pair[0]
    store = open_store(ns)
    for kind, records in samples(ns).items():
        store.upsert(kind, records)
        raw = store.raw_collection(kind).get(include=["metadatas", "documents"])
        for meta, doc in zip(raw["metadatas"], raw["documents"]):
            assert meta["ns"] == namespace_key(ns)
            assert all(isinstance(v, (str, int, float, bool)) for v in meta.values()), meta
            assert doc
    meta = store.raw_collection("lessons").get(ids=["les_2"], include=["metadatas"])["metadatas"][0]
    assert (meta["status"], meta["fp"], meta["tool"], meta["domain"]) == ("promoted", "fp2", "gridtool", "tables")
    assert "task" not in meta  # scope.task is None and Chroma rejects None
    event_meta = store.raw_collection("events").get(ids=["evt_0"], include=["metadatas"])["metadatas"][0]
    assert "domain" not in event_meta and event_meta["fp"] == "fp0"


def test_upsert_replaces_and_keeps_last_duplicate(open_store: Any, ns_pair: Any) -> None:
    ns = ns_pair[0]
    store = open_store(ns)
    store.upsert("lessons", [lesson(1, ns, rule="first"), lesson(1, ns, rule="second")])
    assert [l.rule_text for l in store.all("lessons")] == ["second"]
    store.upsert("lessons", [lesson(1, ns, rule="third", status="suppressed")])
    (got,) = store.get("lessons", ["les_1"])
    assert (got.rule_text, got.status, store.count("lessons")) == ("third", "suppressed", 1)


def test_query_nearest_first_with_similarity(open_store: Any, ns_pair: Any) -> None:
    ns = ns_pair[0]
    store = open_store(ns)
    rules = [
        "WRONG: sort -d age -> CORRECT: sort --desc age",
        "WRONG: keep age>30 -> CORRECT: filter age > 30",
        "quote paths with spaces in double quotes",
        "permission denied: write to the output directory instead",
    ]
    store.upsert("lessons", [lesson(i, ns, rule=r) for i, r in enumerate(rules)])
    hits = store.query("lessons", "WRONG: sort -d height -> CORRECT: sort --desc height")
    assert [h[0].id for h in hits][0] == "les_0"
    sims = [s for _, s in hits]
    assert sims == sorted(sims, reverse=True) and len(hits) == 4
    assert all(-1.0 <= s <= 1.0 + 1e-6 for s in sims)
    exact_doc = chroma_mod.KIND_SPECS["lessons"].document(lesson(2, ns, rule=rules[2]))
    top, sim = store.query("lessons", exact_doc, n=1)[0]
    assert top.id == "les_2" and sim == pytest.approx(1.0, abs=1e-4)
    by_vector = store.query("lessons", embedding=store.embed_query(exact_doc), n=2)
    assert [r.id for r, _ in by_vector] == [r.id for r, _ in store.query("lessons", exact_doc, n=2)]
    filtered = store.query("lessons", rules[0], where={"status": "promoted"})
    assert filtered == []
    assert store.query("lessons", rules[0], n=0) == []


def test_query_empty_collection_and_argument_errors(open_store: Any, ns_pair: Any) -> None:
    store = open_store(ns_pair[0])
    assert store.query("skills", "anything") == []
    with pytest.raises(ValueError, match="exactly one"):
        store.query("lessons")
    with pytest.raises(ValueError, match="exactly one"):
        store.query("lessons", "x", embedding=[0.0] * 256)


# --------------------------------------------------------------------------- namespaces


def test_namespace_isolation(open_store: Any, ns_pair: Any) -> None:
    ns_a, ns_b = ns_pair
    a, b = open_store(ns_a), open_store(ns_b)
    data_a, data_b = samples(ns_a), samples(ns_b)  # same ids and texts, other namespace
    for kind in KINDS:
        a.upsert(kind, data_a[kind])
        b.upsert(kind, data_b[kind][:1])
    for kind in KINDS:
        ids = [store_id(kind, r) for r in data_a[kind]]
        assert all(r.namespace == ns_b for r in b.get(kind, ids)), kind
        assert len(b.get(kind, ids)) == 1 and len(b.all(kind)) == 1 and b.count(kind) == 1, kind
        assert all(r.namespace == ns_a for r in a.all(kind)) and a.count(kind) == 2, kind
        doc = chroma_mod.KIND_SPECS[kind].document(data_a[kind][1])
        assert [r.namespace for r, _ in b.query(kind, doc)] == [ns_b], kind
    assert a.collection_name("lessons") != b.collection_name("lessons")


def test_records_of_another_namespace_are_refused(open_store: Any, ns_pair: Any) -> None:
    ns_a, ns_b = ns_pair
    store = open_store(ns_a)
    with pytest.raises(InvalidRecord, match="namespace"):
        store.upsert("lessons", [lesson(1, ns_a), lesson(2, ns_b)])
    with pytest.raises(InvalidRecord, match="Lesson"):
        store.upsert("lessons", samples(ns_a)["skills"])
    assert store.count("lessons") == 0


def test_planted_foreign_record_is_never_returned(open_store: Any, ns_pair: Any) -> None:
    ns_a, ns_b = ns_pair
    store = open_store(ns_a)
    store.upsert("lessons", [lesson(1, ns_a)])
    planted = lesson(9, ns_b, rule="planted rule about sort")
    doc = chroma_mod.KIND_SPECS["lessons"].document(planted)
    store.raw_collection("lessons").upsert(
        ids=["les_9", "les_10"],
        embeddings=EMB.embed_documents([doc, doc]),
        documents=[doc, doc],
        metadatas=[
            {"ns": namespace_key(ns_b), "record": planted.model_dump_json()},
            # right ns key, but the record inside claims the other namespace
            {"ns": namespace_key(ns_a), "record": planted.model_dump_json()},
        ],
    )
    assert store.get("lessons", ["les_9", "les_10"]) == []
    assert [l.id for l in store.all("lessons")] == ["les_1"]
    assert [l.id for l, _ in store.query("lessons", doc)] == ["les_1"]


def test_invalid_kind_names_the_kinds(tmp_store_path: Path) -> None:
    with ChromaStore.open(path=tmp_store_path, namespace=NS, embeddings=EMB) as store:
        for call in (lambda: store.get("lesson", ["x"]), lambda: store.count("rules"),
                     lambda: store.upsert("nope", []), lambda: store.query("x", "y")):
            with pytest.raises(ValueError, match="lessons, episodes, skills, events, links, runs"):
                call()


# --------------------------------------------------------------------------- batching


class CountingEmbeddings(HashingEmbeddings):
    def __init__(self) -> None:
        super().__init__()
        self.document_calls = 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.document_calls += 1
        return super().embed_documents(texts)


def test_upsert_embeds_once_and_chunks_under_max_batch(tmp_store_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    emb = CountingEmbeddings()
    with ChromaStore.open(path=tmp_store_path, namespace=NS, embeddings=emb) as store:
        store._max_batch = 7
        calls: list[int] = []
        coll = store.raw_collection("lessons")
        real = coll.upsert
        monkeypatch.setattr(coll, "upsert", lambda **kw: (calls.append(len(kw["ids"])), real(**kw))[1])
        store.upsert("lessons", [lesson(i) for i in range(30)])
        assert emb.document_calls == 1
        assert calls == [7, 7, 7, 7, 2]
        assert store.count("lessons") == 30
        assert len(store.get("lessons", [f"les_{i}" for i in range(30)])) == 30


def test_all_pages_through_everything(tmp_store_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(chroma_mod, "PAGE_SIZE", 7)
    with ChromaStore.open(path=tmp_store_path, namespace=NS, embeddings=EMB) as store:
        store.upsert("lessons", [lesson(i) for i in range(30)])
        ids = [l.id for l in store.all("lessons")]
        assert sorted(ids) == sorted(f"les_{i}" for i in range(30))


def test_other_embedding_dimension_is_a_clear_error(tmp_store_path: Path) -> None:
    with ChromaStore.open(path=tmp_store_path, namespace=NS, embeddings=EMB) as store:
        store.upsert("lessons", [lesson(1)])
    with ChromaStore.open(path=tmp_store_path, namespace=NS, embeddings=HashingEmbeddings(64)) as small:
        with pytest.raises(InvalidRecord, match="same embeddings"):
            small.query("lessons", "sort")
        with pytest.raises(InvalidRecord, match="dimension"):
            small.upsert("lessons", [lesson(2)])


# --------------------------------------------------------------------------- opening and failure


def test_unreachable_url_raises_quickly() -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    start = time.monotonic()
    with pytest.raises(StoreUnavailable, match=f"127.0.0.1:{port}.*chroma run"):
        ChromaStore.open(url=url, namespace=NS, embeddings=EMB)
    assert time.monotonic() - start < 5.0


def test_bad_url_and_both_locations_are_value_errors(tmp_store_path: Path) -> None:
    with pytest.raises(ValueError, match="http://host:port"):
        ChromaStore.open(url="localhost:8000", namespace=NS, embeddings=EMB)
    with pytest.raises(ValueError, match="not both"):
        ChromaStore.open(path=tmp_store_path, url="http://127.0.0.1:1", namespace=NS, embeddings=EMB)


def test_path_that_is_a_file_raises(tmp_path: Path) -> None:
    a_file = tmp_path / "store.txt"
    a_file.write_text("not a directory")
    start = time.monotonic()
    with pytest.raises(StoreUnavailable, match="store.txt is a file"):
        ChromaStore.open(path=a_file, namespace=NS, embeddings=EMB)
    with pytest.raises(StoreUnavailable, match="store.txt"):
        ChromaStore.open(path=a_file / "below", namespace=NS, embeddings=EMB)
    assert time.monotonic() - start < 5.0


def test_closed_store_raises_store_unavailable(tmp_store_path: Path) -> None:
    store = ChromaStore.open(path=tmp_store_path, namespace=NS, embeddings=EMB)
    store.close()
    with pytest.raises(StoreUnavailable, match="closed"):
        store.count("lessons")


def test_reopen_embedded_store_keeps_records(tmp_store_path: Path) -> None:
    data = samples()
    with ChromaStore.open(path=tmp_store_path, namespace=NS, embeddings=EMB) as store:
        for kind, records in data.items():
            store.upsert(kind, records)
    assert (tmp_store_path / "chroma.sqlite3").exists()
    with ChromaStore.open(path=tmp_store_path, namespace=NS, embeddings=EMB) as again:
        for kind, records in data.items():
            assert sorted(again.all(kind), key=lambda r: store_id(kind, r)) == records
        assert again.query("lessons", data["lessons"][0].rule_text, n=1)[0][0].id == "les_1"


def test_default_path_is_created(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with ChromaStore.open(namespace=NS, embeddings=EMB) as store:
        store.upsert("lessons", [lesson(1)])
        assert Path(store.location) == (tmp_path / ".langmem_plus").resolve()
    assert (tmp_path / ".langmem_plus").is_dir()


WRITER = textwrap.dedent(
    """
    import sys
    from langmem_plus.embeddings import HashingEmbeddings
    from langmem_plus.records import Lesson
    from langmem_plus.store.chroma import ChromaStore

    ns = ("acme", "agent-7")
    store = ChromaStore.open(path=sys.argv[1], namespace=ns, embeddings=HashingEmbeddings())
    batch = 0
    while True:
        store.upsert("lessons", [
            Lesson(id=f"les_{batch}_{i}", namespace=ns, rule_text=f"rule {batch} {i} " * 20)
            for i in range(50)
        ])
        print(batch, flush=True)
        batch += 1
    """
)


def test_killed_writer_leaves_an_openable_store(tmp_store_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    stderr_path = tmp_store_path.parent / "writer.err"
    acknowledged: list[int] = []
    with open(stderr_path, "wb") as err, subprocess.Popen(
        [sys.executable, "-c", WRITER, str(tmp_store_path)],
        stdout=subprocess.PIPE, stderr=err, env=env, text=True,
    ) as proc:
        try:
            assert proc.stdout is not None
            deadline = time.monotonic() + 60
            while len(acknowledged) < 8 and time.monotonic() < deadline:
                line = proc.stdout.readline()
                if not line:
                    break
                acknowledged.append(int(line))
        finally:
            proc.send_signal(signal.SIGKILL)  # most likely in the middle of the next upsert
            proc.wait()
    assert len(acknowledged) >= 8, stderr_path.read_text(errors="replace")
    with ChromaStore.open(path=tmp_store_path, namespace=NS, embeddings=EMB) as store:
        ids = [f"les_{b}_{i}" for b in acknowledged for i in range(50)]
        assert len(store.get("lessons", ids)) == len(ids)
        assert store.count("lessons") >= len(ids)
        assert len(store.all("lessons")) == store.count("lessons")
        store.upsert("lessons", [Lesson(id="after", namespace=NS, rule_text="written after the crash")])
        assert store.query("lessons", "written after the crash", n=1)[0][0].id == "after"


@pytest.mark.server
def test_server_death_mid_session_is_store_unavailable(tmp_path: Path, spawn_chroma_server: Any) -> None:
    """A server that goes away surfaces as StoreUnavailable naming it, not a raw transport error."""
    with spawn_chroma_server(tmp_path / "data") as (url, proc):
        store = ChromaStore.open(url=url, namespace=NS, embeddings=EMB)
        store.upsert("lessons", [lesson(1)])
        proc.kill()
        proc.wait()
        start = time.monotonic()
        with pytest.raises(StoreUnavailable, match=url.removeprefix("http://")):
            store.query("lessons", "sort")
        assert time.monotonic() - start < 5.0
    store.close()


def test_collection_names_are_valid_and_stable() -> None:
    name = chroma_mod.collection_name(NS, "lessons")
    assert name == chroma_mod.collection_name(("acme", "agent-7"), "lessons")
    assert name.startswith("lmp_") and name.endswith("_lessons") and 3 <= len(name) <= 63
    assert chroma_mod.collection_name(("acme", "agent-8"), "lessons") != name
    assert json.loads(namespace_key(NS)) == list(NS)


def test_store_package_exports_lazily() -> None:
    import langmem_plus.store as store_pkg
    from langmem_plus.store.audit import AuditLog, audit_path
    from langmem_plus.store.graph import LessonGraph

    assert sorted(store_pkg.__all__) == sorted(["KINDS", "AuditLog", "ChromaStore", "LessonGraph", "audit_path"])
    assert (store_pkg.ChromaStore, store_pkg.LessonGraph, store_pkg.AuditLog, store_pkg.audit_path) == (
        ChromaStore, LessonGraph, AuditLog, audit_path)
    assert store_pkg.KINDS == KINDS
    with pytest.raises(AttributeError):
        store_pkg.Nope  # noqa: B018


# --------------------------------------------------------------------------- retrieval hot path


def test_query_ids_and_stored_embeddings_match_query_and_embedder(tmp_path: Path) -> None:
    with ChromaStore.open(path=tmp_path / "hot", namespace=NS, embeddings=EMB) as store:
        records = [lesson(i, rule=f"WRONG: verb{i} -> CORRECT: VERB{i}") for i in range(6)]
        store.upsert("lessons", records)
        qvec = store.embed_query("WRONG: verb3 -> CORRECT: VERB3")
        ids = store.query_ids("lessons", qvec, n=4)
        full = store.query("lessons", embedding=qvec, n=4)
        assert [i for i, _ in ids] == [r.id for r, _ in full] and ids[0][0] == "les_3"
        assert [s for _, s in ids] == pytest.approx([s for _, s in full])
        assert store.query_ids("lessons", qvec, n=0) == []
        vecs = store.stored_embeddings("lessons", ["les_1", "les_nope", "les_4"])
        assert set(vecs) == {"les_1", "les_4"}
        doc = chroma_mod.KIND_SPECS["lessons"].document(records[1])
        assert vecs["les_1"] == pytest.approx(EMB.embed_array([doc])[0], abs=1e-6)
        assert store.stored_embeddings("lessons", []) == {}


def test_has_records_counts_once_then_follows_upserts(tmp_path: Path) -> None:
    with ChromaStore.open(path=tmp_path / "has", namespace=NS, embeddings=EMB) as store:
        assert store.has_records("episodes") is False
        store.upsert("episodes", samples()["episodes"])
        assert store.has_records("episodes") is True
        store.delete_namespace()
        assert store.has_records("episodes") is False
    with ChromaStore.open(path=tmp_path / "has2", namespace=NS, embeddings=EMB) as first:
        first.upsert("skills", samples()["skills"])
    with ChromaStore.open(path=tmp_path / "has2", namespace=NS, embeddings=EMB) as reopened:
        assert reopened.has_records("skills") is True and reopened.has_records("episodes") is False


def test_encode_is_what_upsert_stores(tmp_path: Path) -> None:
    """``encode`` is upsert's own payload: the last record per id, its document, and metadata whose record reads back."""
    store = ChromaStore.open(path=tmp_path, namespace=NS, embeddings=EMB)
    try:
        first = Lesson(id="les_a", namespace=NS, rule_text="WRONG: sort -d -> CORRECT: sort --desc")
        again = first.model_copy(update={"rule_text": "WRONG: ls -Z -> CORRECT: ls -l"})
        records, ids, docs, metas = store.encode("lessons", [first, again])
        assert ids == ["les_a"] and records == [again]
        store.upsert("lessons", [first, again])
        raw = store.raw_collection("lessons").get(ids=ids, include=["documents", "metadatas"])
        assert raw["documents"] == docs and raw["metadatas"] == metas
        assert Lesson.model_validate_json(str(metas[0]["record"])) == again
    finally:
        store.close()
