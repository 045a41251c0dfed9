"""AuditLog: an append-only JSON-lines record of what memory did and why (design.md §4).

Captures, retrievals (query, candidates, score components, chosen), lifecycle
changes (promote, suppress, archive, merge, conflict) and consolidations are each
written as one JSON object per line, in one ``write`` system call on a file
opened with ``O_APPEND``, so a line is never interleaved with another writer's
and is on its way to disk when ``write`` returns (``fsync=True`` also forces it
to the device). A crash can still tear the last line; reading skips a torn or
garbled line with a logged warning and never raises on it, and the next write
starts on a fresh line so nothing after the tear is lost.

``write_deferred`` is for the retrieval hot path: the record is built (and its time
taken) at once, but encoded and appended by a background thread, in order with
every other write of the same ``AuditLog``. A payload value may be a ``Later``: computed
when the record is encoded (on that thread), so the caller hands over references and
the list building leaves its thread too. Anything that reads through this
``AuditLog`` (``read``) or writes synchronously (``write``) first writes what is
queued, so a reader never misses an earlier write; ``flush`` and ``close`` do it
explicitly, and interpreter exit flushes every open log. A crash can lose the
queued records (at most ``DEFERRED_QUEUE_MAX``), as it could tear the last line.

Example:
    >>> import tempfile, pathlib
    >>> log = AuditLog(audit_path(pathlib.Path(tempfile.mkdtemp()), ("acme",)), ("acme",))
    >>> rec = log.write("promote", lesson_id="les_1", utility=0.31)
    >>> [r["lesson_id"] for r in log.read(kinds=["promote"])]
    ['les_1']
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from langmem_plus._text import stable_hash
from langmem_plus.records import Namespace, validate_namespace

logger = logging.getLogger(__name__)

_RESERVED = frozenset({"ns", "kind"})

DEFERRED_QUEUE_MAX = 256
"""Deferred records queued at most; beyond that ``write_deferred`` writes the queue itself."""
WRITER_IDLE_S = 2.0
"""The writer thread exits after this long without records (so idle logs hold no thread)."""
WRITER_LINGER_S = 0.05
"""How long the writer lets records gather before writing them as one batch. Writing each
record as it came took the GIL back from the next retrieval on a busy loop (``bench retrieval``); one batch
per linger rarely meets a retrieval."""

_OPEN_LOGS: weakref.WeakSet[AuditLog] = weakref.WeakSet()
"""Logs that may hold deferred records, flushed at interpreter exit."""


class Later:
    """A payload value made when its record is encoded: ``fn(*args)`` (JSON-able), on the writer thread for
    ``write_deferred``, so the hot path hands over references instead of building the value itself.

    What ``fn`` reads must not change after the write (as for any deferred payload).

    Example:
        >>> _encode({"n": Later(len, [1, 2])})
        b'{"n": 2}\\n'
    """

    __slots__ = ("fn", "args")

    def __init__(self, fn: Callable[..., Any], *args: Any) -> None:
        self.fn, self.args = fn, args

    def __call__(self) -> Any:
        return self.fn(*self.args)

    def __repr__(self) -> str:
        return f"Later({getattr(self.fn, '__name__', self.fn)!r})"


def audit_path(root: str | Path, namespace: Namespace) -> Path:
    """Default audit file of a namespace: ``root / "audit" / "<stable_hash(ns)>.jsonl"``."""
    return Path(root) / "audit" / f"{stable_hash(*validate_namespace(namespace))}.jsonl"


class AuditLog:
    """Append-only JSON-lines audit log of one namespace.

    Args:
        path: The ``.jsonl`` file; it and its directory are created on first write.
        namespace: Only records of this namespace are read back.
        fsync: Also ``os.fsync`` after every record (slower; survives power loss).

    Example:
        >>> import tempfile, pathlib
        >>> log = AuditLog(pathlib.Path(tempfile.mkdtemp()) / "a.jsonl", ("acme",))
        >>> log.write("capture", event_id="evt_1", ts=0.0)["ns"]
        ['acme']
    """

    def __init__(
        self, path: str | Path, namespace: Namespace, *, fsync: bool = False, clock: Callable[[], float] = time.time
    ) -> None:
        self.path = Path(path)
        self.clock = clock
        """Source of a record's ``ts`` when the payload gives none (the memory's clock)."""
        self.namespace: Namespace = validate_namespace(namespace)
        self.fsync = fsync
        self._lock = threading.Lock()
        """Held while appending to the file (and while draining the queue into it)."""
        self._queue: list[dict[str, Any]] = []
        self._wake = threading.Condition(threading.Lock())
        """Guards ``_queue``, ``_writer`` and ``_closed``; wakes the writer thread."""
        self._writer: threading.Thread | None = None
        self._closed = False
        self._closing = threading.Event()
        """Set by ``close``: ends the writer's linger at once."""

    def __repr__(self) -> str:
        return f"AuditLog(path={str(self.path)!r}, namespace={self.namespace!r})"

    def write(self, kind: str, **payload: Any) -> dict[str, Any]:
        """Append one record and return it.

        Args:
            kind: What happened, e.g. ``"retrieval"``, ``"promote"``.
            **payload: JSON-able fields (others are written with ``str``). A
                ``ts`` field overrides the current time; ``ns`` is reserved.

        Returns:
            The record as written: ``{"ts", "ns", "kind", **payload}``.

        Raises:
            ValueError: ``kind`` is empty or the payload sets ``ns``.
        """
        record = self._record(kind, payload)
        line = _encode(record)
        with self._lock:
            self._drain_locked()  # deferred records written before this one keep their order
            self._append_locked(line)
        return record

    def write_deferred(self, kind: str, **payload: Any) -> dict[str, Any]:
        """``write``, with the encoding and the append done by a background thread.

        The record (and its ``ts``) is made now and returned; the payload must not be
        changed afterwards. ``Later`` values are computed when the record is encoded. ``read``, ``write``, ``flush`` and ``close`` first write
        everything queued. After ``close`` this is ``write``.
        """
        record = self._record(kind, payload)
        with self._wake:
            if not self._closed:
                self._queue.append(record)
                if len(self._queue) < DEFERRED_QUEUE_MAX and self._start_writer_locked():
                    self._wake.notify()
                    return record
                backlog = True
            else:
                backlog = False
        if backlog:
            self.flush()  # a full queue (or no writer thread): write it here
        else:
            line = _encode(record)
            with self._lock:
                self._append_locked(line)
        return record

    def flush(self) -> None:
        """Write every deferred record now, in order."""
        with self._lock:
            self._drain_locked()

    def close(self) -> None:
        """Flush and stop the writer thread; later deferred writes are written at once."""
        with self._wake:
            self._closed = True
            writer, self._writer = self._writer, None
            self._wake.notify_all()
        self._closing.set()
        if writer is not None and writer is not threading.current_thread():
            writer.join()
        self.flush()

    def _record(self, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
        if not kind or not isinstance(kind, str):
            raise ValueError(f"audit kind must be a non-empty string, got {kind!r}")
        clash = _RESERVED.intersection(payload)
        if clash:
            raise ValueError(f"audit payload may not set {sorted(clash)}; they are filled in")
        ts = payload.pop("ts", None)
        return {"ts": self.clock() if ts is None else ts, "ns": list(self.namespace), "kind": kind, **payload}

    def _start_writer_locked(self) -> bool:
        """Start the writer thread if needed (``_wake`` held); False if it cannot run."""
        if self._writer is not None and self._writer.is_alive():
            return True
        try:
            self._writer = threading.Thread(target=self._write_loop, name="langmem-plus-audit", daemon=True)
            self._writer.start()
        except RuntimeError:  # interpreter shutting down: no new threads
            self._writer = None
            return False
        _OPEN_LOGS.add(self)
        return True

    def _write_loop(self) -> None:
        """The writer thread: write queued records as they come; exit when idle or closed."""
        while True:
            with self._wake:
                if not self._queue and not self._closed:
                    self._wake.wait(WRITER_IDLE_S)
                if not self._queue:  # idle (or closed): the next deferred write starts a new thread
                    if self._writer is threading.current_thread():
                        self._writer = None
                    return
            self._closing.wait(WRITER_LINGER_S)  # waiting holds no GIL; reads flush meanwhile
            try:
                self.flush()
            except Exception as exc:  # a full disk must not kill the thread; records stay queued
                logger.warning("langmem_plus: writing deferred audit records to %s failed: %s", self.path, exc)
                time.sleep(0.1)

    def _drain_locked(self) -> None:
        """Append the queued records in one write (``_lock`` held); on failure they stay queued."""
        with self._wake:
            if not self._queue:
                return
            batch = list(self._queue)
        self._append_locked(b"".join(_encode(r) for r in batch))
        with self._wake:
            del self._queue[: len(batch)]

    def _append_locked(self, data: bytes) -> None:
        """One O_APPEND write of whole lines, after a newline if a crash left a torn tail (``_lock`` held)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            if _ends_torn(fd):
                data = b"\n" + data
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            if self.fsync:
                os.fsync(fd)
        finally:
            os.close(fd)

    def read(self, kinds: Iterable[str] | None = None) -> Iterator[dict[str, Any]]:
        """Yield this namespace's records in write order, optionally only some kinds.

        A torn or garbled line is skipped with a logged warning.
        """
        self.flush()
        wanted = None if kinds is None else frozenset(kinds)
        ns = list(self.namespace)
        if not self.path.exists():
            return
        with open(self.path, "rb") as fh:
            for lineno, raw in enumerate(fh, start=1):
                record = _parse(raw, self.path, lineno)
                if record is None or record.get("ns") != ns:
                    continue
                if wanted is None or record.get("kind") in wanted:
                    yield record


def _encode(record: dict[str, Any]) -> bytes:
    """One record as one JSON line (a ``Later`` computed now, anything else not JSON-able written with ``str``)."""
    return (json.dumps(record, default=_jsonable, ensure_ascii=False) + "\n").encode("utf-8", errors="surrogatepass")


def _jsonable(value: Any) -> Any:
    """``json.dumps``'s fallback: a ``Later``'s value (encoded in turn), else ``str(value)``."""
    return value() if isinstance(value, Later) else str(value)


@atexit.register
def _flush_open_logs() -> None:
    """Write what deferred writers still hold before the interpreter stops their threads."""
    for log in list(_OPEN_LOGS):
        try:
            log.flush()
        except Exception as exc:  # never fail interpreter exit over the audit log
            logger.warning("langmem_plus: flushing audit log %s at exit failed: %s", log.path, exc)


def _ends_torn(fd: int) -> bool:
    """True when the file is non-empty and its last byte is not a newline."""
    size = os.fstat(fd).st_size
    if size == 0:
        return False
    os.lseek(fd, size - 1, os.SEEK_SET)
    return os.read(fd, 1) != b"\n"


def _parse(raw: bytes, path: Path, lineno: int) -> dict[str, Any] | None:
    """One line as a dict, or None (with a warning) when it is torn or garbled."""
    if not raw.strip():
        return None
    try:
        record = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        logger.warning("langmem_plus: skipped unreadable audit line %s:%d (%s)", path, lineno, exc)
        return None
    if not isinstance(record, dict):
        logger.warning("langmem_plus: skipped non-object audit line %s:%d", path, lineno)
        return None
    return record


__all__ = ["AuditLog", "Later", "audit_path"]
