"""SharedLog: appends from many writers (threads, processes on one Chroma server) are never lost or doubled."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from langmem_plus.embeddings import HashingEmbeddings
from langmem_plus.errors import InvalidRecord, StoreUnavailable
from langmem_plus.store.chroma import ChromaStore
from langmem_plus.store.journal import SharedLog, entry_id

NS = ("acme", "journal")
EMB = HashingEmbeddings(dim=32)


@pytest.fixture
def store(tmp_path: Path) -> Any:
    s = ChromaStore.open(path=tmp_path / "s", namespace=NS, embeddings=EMB)
    yield s
    s.close()


def test_a_reader_sees_each_entry_of_other_writers_once_in_order(store: Any) -> None:
    ticks = iter(range(100, 1000))
    a, b = SharedLog(store, "evidence", clock=lambda: float(next(ticks))), SharedLog(store, "evidence")
    a.append([{"i": 1}, {"i": 2}])
    reader = SharedLog(store, "evidence")
    assert [e.data["i"] for e in reader.read_new()] == [1, 2]
    assert reader.read_new() == []  # nothing new
    a.append([{"i": 3}])
    b.append([{"i": 4}])
    new = reader.read_new()
    assert sorted(e.data["i"] for e in new) == [3, 4] and new == sorted(new)
    assert [e.data["i"] for e in b.read_new()] == [1, 2, 3]  # another writer's entries, not its own
    assert sorted(e.data["i"] for e in SharedLog(store, "evidence").read_all()) == [1, 2, 3, 4]


def test_own_entries_are_skipped_unless_asked(store: Any) -> None:
    log = SharedLog(store, "evidence")
    log.append([{"x": 1}])
    assert log.read_new() == []
    assert log.heads()[log.writer] == 1
    assert [e.data for e in log.read_all()] == [{"x": 1}]


def test_logs_and_namespaces_are_separate(tmp_path: Path, store: Any) -> None:
    SharedLog(store, "evidence").append([{"x": 1}])
    assert SharedLog(store, "other").read_all() == []
    with ChromaStore.open(path=tmp_path / "s", namespace=("elsewhere",), embeddings=EMB) as other:
        assert SharedLog(other, "evidence").read_all() == []


def test_threads_appending_through_one_writer_lose_nothing(store: Any) -> None:
    log = SharedLog(store, "evidence")

    def work(t: int) -> None:
        for i in range(20):
            log.append([{"t": t, "i": i}])

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    got = [(e.data["t"], e.data["i"]) for e in SharedLog(store, "evidence").read_all()]
    assert sorted(got) == [(t, i) for t in range(4) for i in range(20)]
    assert log.heads()[log.writer] == 80


def test_bad_records_are_refused_whole(store: Any) -> None:
    log = SharedLog(store, "evidence")
    for bad in ([{"x": float("nan")}], [{"x": object()}], ["not a mapping"]):
        with pytest.raises(InvalidRecord):
            log.append(bad)  # type: ignore[arg-type]
    assert log.heads() == {} and log.append([]) == []
    with pytest.raises(ValueError):
        SharedLog(store, "Bad Name")


def test_a_write_that_did_not_return_is_never_read(store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Entries written but not covered by the head (a crash between the two) stay invisible."""
    log = SharedLog(store, "evidence")
    log.append([{"ok": 1}])
    real = log._heads.upsert

    def crash(**kwargs: Any) -> None:
        raise ConnectionError("the server went away between the entries and the head")

    monkeypatch.setattr(log._heads, "upsert", crash)
    with pytest.raises(StoreUnavailable):
        log.append([{"lost": 2}])
    monkeypatch.setattr(log._heads, "upsert", real)
    assert [e.data for e in SharedLog(store, "evidence").read_all()] == [{"ok": 1}]


def test_a_damaged_entry_is_skipped_and_logged(store: Any, caplog: pytest.LogCaptureFixture) -> None:
    log = SharedLog(store, "evidence")
    log.append([{"ok": 1}, {"ok": 2}])
    log._entries.upsert(ids=[entry_id(log.writer, 1)], documents=["{torn"], embeddings=[[1.0, 0.0]],
                        metadatas=[{"w": log.writer, "n": 1, "ts": 0.0}])
    with caplog.at_level(logging.WARNING, logger="langmem_plus"):
        assert [e.data for e in SharedLog(store, "evidence").read_all()] == [{"ok": 2}]
    assert any("damaged log entry" in m for m in caplog.messages)


WRITER = """
import json, sys
from langmem_plus.embeddings import HashingEmbeddings
from langmem_plus.store.chroma import ChromaStore
from langmem_plus.store.journal import SharedLog
url, worker, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with ChromaStore.open(url=url, namespace=("acme", "journal"), embeddings=HashingEmbeddings(dim=32)) as store:
    log = SharedLog(store, "evidence")
    for i in range(n):
        log.append([{"worker": worker, "i": i}])
print(json.dumps({"worker": worker}))
"""


@pytest.mark.server
def test_processes_appending_to_one_server_lose_nothing(tmp_path: Path, chroma_server: str) -> None:
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, chroma_server, str(w), "25"], stdout=subprocess.PIPE, text=True)
        for w in range(4)
    ]
    for p in procs:
        out, _ = p.communicate(timeout=300)
        assert p.returncode == 0 and json.loads(out)["worker"] >= 0
    with ChromaStore.open(url=chroma_server, namespace=NS, embeddings=EMB) as store:
        got = [(e.data["worker"], e.data["i"]) for e in SharedLog(store, "evidence").read_all()]
    assert sorted(got) == [(w, i) for w in range(4) for i in range(25)]  # every append, exactly once
