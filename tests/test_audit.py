"""AuditLog: append-only, torn lines skipped (never fatal), namespaces kept apart."""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path

import pytest

from langmem_plus.store.audit import AuditLog, Later, audit_path

NS = ("acme", "agent-7")


def test_append_only_earlier_lines_unchanged(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "audit" / "a.jsonl", NS)
    for i in range(3):
        log.write("capture", event_id=f"evt_{i}")
    before = log.path.read_bytes()
    log.write("promote", lesson_id="les_1", utility=0.3)
    log.write("retrieval", query="sort -d", chosen=["les_1"], components={"les_1": {"fp": 1.0}})
    after = log.path.read_bytes()
    assert after.startswith(before) and len(after) > len(before)
    records = list(log.read())
    assert [r["kind"] for r in records] == ["capture"] * 3 + ["promote", "retrieval"]
    assert records[4]["components"] == {"les_1": {"fp": 1.0}}
    assert all(r["ns"] == list(NS) and isinstance(r["ts"], float) for r in records)
    assert after.count(b"\n") == 5


def test_write_returns_the_record_and_serialises_anything(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "a.jsonl", NS)
    rec = log.write("merge", ts=12.5, path=Path("/x/y"), ids={"b"}, text="café ✓")
    assert rec == {"ts": 12.5, "ns": list(NS), "kind": "merge", "path": Path("/x/y"), "ids": {"b"}, "text": "café ✓"}
    (read,) = log.read()
    assert read == {"ts": 12.5, "ns": list(NS), "kind": "merge", "path": "/x/y", "ids": "{'b'}", "text": "café ✓"}
    assert "café ✓" in log.path.read_text(encoding="utf-8")  # ensure_ascii=False
    with pytest.raises(ValueError, match="ns"):
        log.write("merge", ns=["other"])
    with pytest.raises(ValueError, match="kind"):
        log.write("")


def test_torn_last_line_is_skipped_and_later_writes_survive(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    log = AuditLog(tmp_path / "a.jsonl", NS)
    log.write("capture", event_id="evt_1")
    log.write("capture", event_id="evt_2")
    torn = json.dumps({"ts": 1.0, "ns": list(NS), "kind": "capture", "event_id": "evt_torn"})
    with open(log.path, "ab") as fh:
        fh.write(torn[: len(torn) // 2].encode())  # a crash mid-write
    with caplog.at_level(logging.WARNING, logger="langmem_plus"):
        assert [r["event_id"] for r in log.read()] == ["evt_1", "evt_2"]
    assert any("skipped unreadable audit line" in m and ":3" in m for m in caplog.messages)
    log.write("capture", event_id="evt_3")
    assert [r["event_id"] for r in log.read()] == ["evt_1", "evt_2", "evt_3"]
    assert log.path.read_bytes().count(b"\n") == 4  # the torn fragment was closed off by a newline


def test_garbled_lines_anywhere_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    log = AuditLog(path, NS)
    log.write("capture", event_id="evt_1")
    with open(path, "ab") as fh:
        fh.write(b"\xff\xfe not utf8\n[1, 2]\n\n{\"unterminated\": \n")
    log.write("capture", event_id="evt_2")
    assert [r["event_id"] for r in log.read()] == ["evt_1", "evt_2"]


def test_reads_only_its_namespace_and_kinds(tmp_path: Path) -> None:
    path = tmp_path / "shared.jsonl"
    mine, theirs = AuditLog(path, NS), AuditLog(path, ("acme", "agent-8"))
    mine.write("capture", n=1)
    theirs.write("capture", n=2)
    mine.write("promote", n=3)
    theirs.write("promote", n=4)
    assert [r["n"] for r in mine.read()] == [1, 3]
    assert [r["n"] for r in theirs.read()] == [2, 4]
    assert [r["n"] for r in mine.read(kinds=["promote"])] == [3]
    assert [r["n"] for r in mine.read(kinds=[])] == []
    assert list(AuditLog(tmp_path / "missing.jsonl", NS).read()) == []


def test_audit_path_is_stable_per_namespace(tmp_path: Path) -> None:
    p = audit_path(tmp_path, NS)
    assert p == audit_path(tmp_path, ("acme", "agent-7"))
    assert p.parent == tmp_path / "audit" and p.suffix == ".jsonl"
    assert p != audit_path(tmp_path, ("acme", "agent-8"))
    assert audit_path(str(tmp_path), "solo") == audit_path(tmp_path, ("solo",))


def test_concurrent_writers_never_interleave(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    logs = [AuditLog(path, NS) for _ in range(4)]  # separate instances, one file

    def work(k: int) -> None:
        for i in range(150):
            logs[k].write("capture", writer=k, i=i, blob="x" * 2000)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    records = list(logs[0].read())
    assert len(records) == 600
    for k in range(4):
        assert [r["i"] for r in records if r["writer"] == k] == list(range(150))


def test_fsync_flag_writes_the_same(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "a.jsonl", NS, fsync=True)
    log.write("capture", ts=1.0, x=1)
    assert list(log.read()) == [{"ts": 1.0, "ns": list(NS), "kind": "capture", "x": 1}]


def test_deferred_writes_keep_order_with_sync_writes_and_are_read_at_once(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "a.jsonl", NS)
    rec = log.write_deferred("retrieval", n=0, chosen=["l1"])
    assert rec["kind"] == "retrieval" and rec["ns"] == list(NS) and isinstance(rec["ts"], float)
    log.write("promote", n=1)  # a synchronous write lands after the deferred one queued before it
    for i in range(2, 6):
        log.write_deferred("retrieval", n=i)
    assert [r["n"] for r in log.read()] == [0, 1, 2, 3, 4, 5]  # read flushes first
    assert log.path.read_bytes().count(b"\n") == 6
    with pytest.raises(ValueError, match="ns"):
        log.write_deferred("retrieval", ns=["x"])


def test_deferred_writes_reach_the_file_without_a_reader_and_close_stops_the_thread(tmp_path: Path) -> None:
    import time

    log = AuditLog(tmp_path / "a.jsonl", NS)
    log.write_deferred("retrieval", n=1)
    deadline = time.monotonic() + 5.0
    while (not log.path.exists() or b'"n": 1' not in log.path.read_bytes()) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert b'"n": 1' in log.path.read_bytes()  # the background thread wrote it
    writer = log._writer
    log.write_deferred("retrieval", n=2)
    log.close()
    assert writer is None or not writer.is_alive()
    assert [r["n"] for r in log.read()] == [1, 2]
    log.write_deferred("retrieval", n=3)  # after close: written at once
    assert log._writer is None and log.path.read_bytes().count(b"\n") == 3


def test_the_writer_batches_records_that_come_close_together_and_close_cuts_its_wait(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import time

    import langmem_plus.store.audit as audit_mod

    log = AuditLog(tmp_path / "a.jsonl", NS)
    appends: list[int] = []
    real = log._append_locked
    monkeypatch.setattr(log, "_append_locked", lambda data: (appends.append(data.count(b"\n")), real(data)))
    for i in range(5):
        log.write_deferred("retrieval", n=i)
    deadline = time.monotonic() + 5.0
    while not appends and time.monotonic() < deadline:
        time.sleep(0.01)
    assert appends == [5]  # one write for the five records, not five

    monkeypatch.setattr(audit_mod, "WRITER_LINGER_S", 30.0)
    log.write_deferred("retrieval", n=5)
    time.sleep(0.05)  # the writer is now lingering for up to 30 s
    started = time.monotonic()
    log.close()
    assert time.monotonic() - started < 5.0
    assert [r["n"] for r in log.read()] == [0, 1, 2, 3, 4, 5]


def test_a_full_queue_is_written_by_the_caller(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import langmem_plus.store.audit as audit_mod

    monkeypatch.setattr(audit_mod, "DEFERRED_QUEUE_MAX", 4)
    log = AuditLog(tmp_path / "a.jsonl", NS)
    monkeypatch.setattr(log, "_start_writer_locked", lambda: True)  # a writer that never gets to run
    for i in range(3):
        log.write_deferred("retrieval", n=i)
    assert len(log._queue) == 3 and not log.path.exists()
    log.write_deferred("retrieval", n=3)  # reaches the bound: the caller writes the queue
    assert log.path.read_bytes().count(b"\n") == 4 and not log._queue
    assert [r["n"] for r in log.read()] == [0, 1, 2, 3]


def test_deferred_records_survive_interpreter_exit_without_close(tmp_path: Path) -> None:
    import subprocess
    import sys

    path = tmp_path / "a.jsonl"
    code = (
        "from langmem_plus.store.audit import AuditLog\n"
        f"log = AuditLog({str(path)!r}, {NS!r})\n"
        "for i in range(50): log.write_deferred('retrieval', n=i)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).resolve().parents[1])
    assert [r["n"] for r in AuditLog(path, NS).read()] == list(range(50))


def test_concurrent_deferred_and_sync_writers_never_lose_or_interleave(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "a.jsonl", NS)

    def work(k: int) -> None:
        for i in range(100):
            (log.write_deferred if i % 3 else log.write)("capture", writer=k, i=i, blob="x" * 500)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    records = list(log.read())
    assert len(records) == 400
    for k in range(4):
        assert [r["i"] for r in records if r["writer"] == k] == list(range(100))
    log.close()


def test_a_later_value_is_computed_when_encoded_in_write_order(tmp_path: Path) -> None:
    """A ``Later`` payload value is made when its record is encoded (the writer's thread for deferred writes),
    written as the value it returns, nested ones too; the rest of the record is as given."""
    log = AuditLog(tmp_path / "a.jsonl", NS)
    calls: list[list[int]] = []

    def rows(items: list[int]) -> list[dict[str, object]]:
        calls.append(items)
        return [{"i": i, "later": Later(lambda j=i: j * 10)} for i in items]

    rec = log.write_deferred("retrieval", n=0, candidates=Later(rows, [1, 2]))
    assert isinstance(rec["candidates"], Later)
    log.write("promote", n=1, x=Later(len, "abc"))  # a synchronous write computes it at once
    assert [(r["n"], r.get("candidates"), r.get("x")) for r in log.read()] == [
        (0, [{"i": 1, "later": 10}, {"i": 2, "later": 20}], None), (1, None, 3)
    ]
    assert calls == [[1, 2]]  # computed once, when written
