"""SharedLog: an append-only log on Chroma that many writers share without a lost update (design.md §4).

Each opened log is a *writer* with a fresh id. Its entries get ids ``<writer>:<n>``
(n = 1, 2, ...), so two writers never write the same entry, and after each append the
writer stores its own head ``n`` in a small heads collection: a record only that writer
ever writes. Nothing any two writers share is read, modified and written back, so
nothing a writer appended can be overwritten by another, whatever the interleaving.

A reader learns what others appended with ``read_new``: one read of the heads (one row
per writer), then a read by id of exactly the entries past what it has seen. The cost is
the size of the change, not of the log, and no metadata filter is needed (Chroma's
``where`` does not scale, design.md §4).

Crash safety: entries are written before the head that covers them. A writer killed
between the two leaves entries past its head; no reader ever reads them (its append
call never returned), and the next open is a new writer. A head is only ever raised.

Entries are JSON objects. A damaged entry (not JSON) is logged and skipped, never fatal.

Example:
    >>> import tempfile
    >>> from langmem_plus.store.chroma import ChromaStore
    >>> from langmem_plus.embeddings import HashingEmbeddings
    >>> store = ChromaStore.open(path=tempfile.mkdtemp(), namespace=("acme",), embeddings=HashingEmbeddings())
    >>> a, b = SharedLog(store, "evidence"), SharedLog(store, "evidence")
    >>> _ = a.append([{"lesson": "l1", "run": "r1", "activations": 2}])
    >>> [e.data["run"] for e in b.read_new()]
    ['r1']
    >>> b.read_new()
    []
    >>> store.close()
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langmem_plus._text import stable_hash
from langmem_plus.errors import InvalidRecord

logger = logging.getLogger(__name__)

READ_CHUNK = 500
"""Entries fetched by id per Chroma call when catching up with a writer."""
_VECTOR = [1.0, 0.0]
"""Every entry's embedding: Chroma needs one, the log is never searched by meaning."""
_NAME = re.compile(r"^[a-z][a-z0-9_]{0,30}$")


@dataclass(frozen=True, order=True)
class Entry:
    """One appended record: who wrote it, its place in that writer's sequence, when, and the data."""

    ts: float
    writer: str
    n: int
    data: dict[str, Any]

    @property
    def id(self) -> str:
        """The entry's id, unique across writers: ``<writer>:<n>``."""
        return entry_id(self.writer, self.n)


def entry_id(writer: str, n: int) -> str:
    """The id of the ``n``-th entry of ``writer`` (zero-padded, so ids sort in append order)."""
    return f"{writer}:{n:012d}"


class SharedLog:
    """An append-only log in one namespace of a ``ChromaStore``, shared by any number of writers.

    Args:
        store: The namespace's store (embedded or a Chroma server).
        name: The log's name, e.g. ``"evidence"``: lowercase letters, digits and ``_``.
        clock: Source of an entry's ``ts`` (the memory's clock).

    Raises:
        ValueError: ``name`` is not a valid log name.
    """

    def __init__(self, store: Any, name: str, *, clock: Callable[[], float] = time.time) -> None:
        if not _NAME.match(name):
            raise ValueError(f"log name must match {_NAME.pattern}, got {name!r}")
        self.store = store
        self.name = name
        self.clock = clock
        self.writer = uuid.uuid4().hex[:16]
        """This log's writer id: fresh on every open, so a crashed writer's orphans are never resumed."""
        self._head = 0
        self._seen: dict[str, int] = {self.writer: 0}
        self._lock = threading.Lock()
        """Serialises this writer's appends (its head) and this reader's catch-up (its seen heads)."""
        prefix = f"lmp_{stable_hash(*store.namespace)}_log_{name}"
        self._entries = self._collection(f"{prefix}_entries")
        self._heads = self._collection(f"{prefix}_heads")

    def _collection(self, name: str) -> Any:
        with self.store._guard(f"opening log {self.name}"):
            return self.store.client.get_or_create_collection(
                name=name,
                embedding_function=None,
                configuration={"hnsw": {"space": "cosine"}},
                metadata={"lmp_ns": json.dumps(list(self.store.namespace)), "lmp_log": self.name},
            )

    def append(self, records: Iterable[Mapping[str, Any]]) -> list[str]:
        """Append JSON-able records; returns their ids. Once this returns, every reader can see them.

        Raises:
            InvalidRecord: a record is not a JSON object (nothing is written).
            StoreUnavailable: Chroma failed (the head is not raised, so nothing half-written is ever read).
        """
        return [e.id for e in self.append_entries(records)]

    def append_entries(self, records: Iterable[Mapping[str, Any]]) -> list[Entry]:
        """``append``, returning the entries as every reader will see them (their place in the log order).

        Raises:
            InvalidRecord: a record is not a JSON object (nothing is written).
            StoreUnavailable: Chroma failed (the head is not raised, so nothing half-written is ever read).
        """
        docs: list[str] = []
        for record in records:
            if not isinstance(record, Mapping):
                raise InvalidRecord(f"a log record must be a JSON object, got {type(record).__name__}")
            try:
                docs.append(json.dumps(dict(record), ensure_ascii=False, allow_nan=False, sort_keys=True))
            except (TypeError, ValueError) as exc:
                raise InvalidRecord(f"a log record is not JSON: {exc}") from exc
        if not docs:
            return []
        with self._lock:
            start, ts = self._head + 1, self.clock()
            ids = [entry_id(self.writer, start + i) for i in range(len(docs))]
            metas = [{"w": self.writer, "n": start + i, "ts": float(ts)} for i in range(len(docs))]
            with self.store._guard(f"append to log {self.name}"):
                self._entries.upsert(ids=ids, documents=docs, metadatas=metas, embeddings=[_VECTOR] * len(ids))
                head = start + len(docs) - 1
                self._heads.upsert(ids=[self.writer], documents=[self.writer], metadatas=[{"head": head}], embeddings=[_VECTOR])
            self._head = self._seen[self.writer] = head
        return [Entry(ts=float(ts), writer=self.writer, n=start + i, data=json.loads(d)) for i, d in enumerate(docs)]

    def seen(self) -> dict[str, int]:
        """Each writer's last entry this reader has read (its own appends included): where ``read_new`` goes on from."""
        with self._lock:
            return dict(self._seen)

    def skip_to(self, heads: Mapping[str, int]) -> None:
        """Treat the entries up to ``heads`` as read (a reader whose state already reflects them)."""
        with self._lock:
            for writer, head in heads.items():
                if writer != self.writer:
                    self._seen[writer] = max(self._seen.get(writer, 0), int(head))

    def heads(self) -> dict[str, int]:
        """Every writer's head: the number of entries it has appended and acknowledged."""
        with self.store._guard(f"reading heads of log {self.name}"):
            got = self._heads.get(include=["metadatas"])
        return {str(i): int((m or {}).get("head", 0)) for i, m in zip(got["ids"], got["metadatas"] or [])}

    def read_new(self, *, include_own: bool = False) -> list[Entry]:
        """Entries appended since this reader last looked, by any writer (not its own unless asked), oldest first.

        Order is (ts, writer, n): the same for every reader, so a fold over it is deterministic.
        """
        with self._lock:
            wanted: list[tuple[str, int]] = []
            heads = self.heads()
            for writer, head in sorted(heads.items()):
                seen = self._seen.get(writer, 0)
                if head > seen and (include_own or writer != self.writer):
                    wanted += [(writer, n) for n in range(seen + 1, head + 1)]
            entries = self._fetch(wanted)
            for writer, head in heads.items():
                if include_own or writer != self.writer:
                    self._seen[writer] = max(self._seen.get(writer, 0), head)
        return sorted(entries)

    def read_all(self) -> list[Entry]:
        """Every acknowledged entry of every writer (this one's included), oldest first; resets what was seen."""
        with self._lock:
            self._seen = {self.writer: 0}
        return self.read_new(include_own=True)

    def _fetch(self, wanted: Sequence[tuple[str, int]]) -> list[Entry]:
        out: list[Entry] = []
        for lo in range(0, len(wanted), READ_CHUNK):
            ids = [entry_id(w, n) for w, n in wanted[lo : lo + READ_CHUNK]]
            with self.store._guard(f"reading log {self.name}"):
                got = self._entries.get(ids=ids, include=["documents", "metadatas"])
            for rid, doc, meta in zip(got["ids"], got["documents"] or [], got["metadatas"] or []):
                entry = _decode(rid, doc, meta)
                if entry is not None:
                    out.append(entry)
        return out


def _decode(rid: str, doc: Any, meta: Any) -> Entry | None:
    try:
        data = json.loads(doc)
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        return Entry(ts=float(meta["ts"]), writer=str(meta["w"]), n=int(meta["n"]), data=data)
    except (TypeError, ValueError, KeyError) as exc:
        logger.warning("langmem_plus: skipped damaged log entry %s: %s", rid, exc)
        return None


__all__ = ["Entry", "SharedLog", "entry_id"]
