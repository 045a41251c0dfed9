"""AuditLog: an append-only JSON-lines record of what memory did and why (DESIGN §4).

Captures, retrievals (query, candidates, score components, chosen), lifecycle
changes (promote, suppress, archive, merge, conflict) and consolidations are each
written as one JSON object per line, in one ``write`` system call on a file
opened with ``O_APPEND``, so a line is never interleaved with another writer's
and is on its way to disk when ``write`` returns (``fsync=True`` also forces it
to the device). A crash can still tear the last line; reading skips a torn or
garbled line with a logged warning and never raises on it, and the next write
starts on a fresh line so nothing after the tear is lost.

Example:
    >>> import tempfile, pathlib
    >>> log = AuditLog(audit_path(pathlib.Path(tempfile.mkdtemp()), ("acme",)), ("acme",))
    >>> rec = log.write("promote", lesson_id="les_1", utility=0.31)
    >>> [r["lesson_id"] for r in log.read(kinds=["promote"])]
    ['les_1']
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from langmem_plus._text import stable_hash
from langmem_plus.records import Namespace, validate_namespace

logger = logging.getLogger("langmem_plus")

_RESERVED = frozenset({"ns", "kind"})


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

    def __init__(self, path: str | Path, namespace: Namespace, *, fsync: bool = False) -> None:
        self.path = Path(path)
        self.namespace: Namespace = validate_namespace(namespace)
        self.fsync = fsync
        self._lock = threading.Lock()

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
        if not kind or not isinstance(kind, str):
            raise ValueError(f"audit kind must be a non-empty string, got {kind!r}")
        clash = _RESERVED.intersection(payload)
        if clash:
            raise ValueError(f"audit payload may not set {sorted(clash)}; they are filled in")
        ts = payload.pop("ts", None)
        record: dict[str, Any] = {
            "ts": time.time() if ts is None else ts,
            "ns": list(self.namespace),
            "kind": kind,
            **payload,
        }
        line = json.dumps(record, default=str, ensure_ascii=False) + "\n"
        self._append(line.encode("utf-8", errors="surrogatepass"))
        return record

    def _append(self, data: bytes) -> None:
        """One O_APPEND write of a whole line, after a newline if a crash left a torn tail."""
        with self._lock:
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


__all__ = ["AuditLog", "audit_path"]
