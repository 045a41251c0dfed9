"""A local snapshot of a namespace's lessons, links, skills, runs, episodes and graph, for a fast open.

Reading 100k lessons back from Chroma, parsing them and rebuilding the graph took 46 s
(docs/PERFORMANCE.md). The snapshot keeps the same records as raw JSON lines, parsed
only when a record is first used (``RecordTable``), and the lesson graph's flat state
(``LessonGraph.to_state``: CSR arrays and indexes), so an open reads a few files.

Layout of a snapshot folder (one per namespace):

* ``meta.json``: format, the Chroma write generation the base reflects, the names
  of the current base and journal, and the files its records lie in (``segments``).
  Replaced atomically last, so it is the commit point.
* ``base-<id>.records.tsv``: ``kind \\t json(id) \\t record_json`` per record that lies in
  no earlier file; since format 5 the others stay where they are, as byte ranges of
  earlier journals or bases' records files (``store.segments``).
* ``base-<id>.rows.npz``: every record's kind, id, file and byte range (required when the
  records lie in more than the base's own file; else an open may scan that file instead).
* ``base-<id>.graph.json`` / ``base-<id>.graph.npz``: the graph state (no pickle).
* ``base-<id>.vectors.npy``: the lessons' relevance vectors (the ones Chroma stores),
  memory-mapped on open, so text similarity of any candidate is a dot product and not
  a Chroma ``get`` (``LessonVectors``).
* ``base-<id>.index.npz``: the lesson index's columns (``store.lesson_index``: status,
  SimHash and sweep due run per lesson, in the records' order), described under
  ``lesson_index`` in the graph file; absent or stale, the memory rebuilds the index.
* ``journal-<id>.tsv``: every write since the base, ``token \\t kind \\t json(id) \\t
  record_json``, each write closed by a ``token \\t #end`` line; a write without its end
  line (a process killed mid-append) is ignored.

Chroma stays the source of truth. Every write of a snapshotted kind first stores a
fresh generation token in the lessons collection's metadata (``ChromaStore.upsert``),
then writes, then the journal records the token. A snapshot is used only when its last
committed token equals Chroma's current one; anything else (a crash between the two, a
write by another client, a damaged file) means a full read from Chroma and a new base.
"""

from __future__ import annotations

import json
import logging
import mmap
import os
import threading
import time
import uuid
import weakref
import zipfile
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Generic, TypeVar

import numpy as np
import pydantic_core
from pydantic import BaseModel, ValidationError

from langmem_plus._text import stable_hash
from langmem_plus.records import Namespace
from langmem_plus.config import DEFAULT_CONFIG
from langmem_plus.store.segments import Located, RecordColumns, RecordSource, place_records, utf8_len
from numpy.lib import format as npy_format

from langmem_plus.store.columns import (
    LayeredMap,
    load_npz_mapped,
    pack_strings,
    release_pages,
    unpack_strings,
)

logger = logging.getLogger(__name__)

FORMAT = 5
"""Snapshot format version written; one not in ``READ_FORMATS`` is ignored (rebuilt from Chroma)."""
READ_FORMATS = (2, 3, 4, 5)
"""Formats an open reads: 5 is 4 whose records may lie in several files of the folder (``store.segments``: the
journal an import wrote, the previous base's records), placed by the row index, which ``meta.json``'s ``segments``
then makes required; 4 keeps the graph as columns, node names and vector ids as arrays (``store.columns``),
the records' row index, and the episodes; 2 kept them in the JSON head (read as before, the episodes then come from
Chroma, and the next base is 5); 3 is 2 with the episodes, which an open still reads from Chroma."""
EPISODES_SINCE = 4
"""The first format whose bases hold the episodes (``Loaded.has_episodes``)."""
SNAPSHOT_KINDS: tuple[str, ...] = ("lessons", "links", "skills", "runs", "episodes")
"""Record kinds the snapshot keeps (the ones an open or ``end_run`` needs in memory: ``end_run`` plans its
episode writes against every stored episode, which it used to read back from Chroma at every run)."""
END = "#end"
"""Journal marker closing one write."""

R = TypeVar("R", bound=BaseModel)


GraphState = tuple[dict[str, Any], list[str], Mapping[str, np.ndarray]]
"""What ``LessonGraph.to_state`` gives: (plain data, node names, arrays)."""


def snapshot_dir(root: str | Path, namespace: Namespace) -> Path:
    """Default snapshot folder of a namespace: ``root / "snapshot" / "<stable_hash(ns)>"``."""
    return Path(root) / "snapshot" / stable_hash(*namespace)


class RawRecords:
    """A base's records file: a record's JSON is read from the file when it is used.

    Holding every record's JSON as a Python string cost about 1 KB a lesson (1 GB of the
    resident memory at a million lessons); the file holds none of it in the heap. Given the
    open file, a record is read with ``os.pread`` (from the page cache, as a map would give it,
    but without the kernel mapping 64 KB around each record read into the process: 0.7 GB
    of file pages counted resident at a million lessons); else it is sliced from ``buffer``.

    A format-5 base's records may lie in several files of the folder (``segmented``: its own
    file, earlier journals, an earlier base's file), each row a byte range of one of them.

    Example:
        >>> raw = RawRecords(b'{"a": 1}{"b": 2}', np.array([0, 8]), np.array([8, 16]))
        >>> raw.text(1), len(raw)
        ('{"b": 2}', 2)
    """

    def __init__(
        self, buffer: Any, starts: np.ndarray, ends: np.ndarray, file: BinaryIO | None = None, *, name: str | None = None
    ) -> None:
        self._buffer = buffer
        self._starts, self._ends = starts, ends
        self._file = file if file is not None and hasattr(os, "pread") else None
        self._files: list[BinaryIO] = []
        self._segment: np.ndarray | None = None
        self.names: list[str] = [name] if name is not None else []
        """The files (names in the snapshot folder) the rows lie in; empty when not known (a buffer)."""
        if file is not None:
            weakref.finalize(self, file.close)

    @classmethod
    def segmented(cls, files: list[BinaryIO], names: list[str], segment: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> RawRecords:
        """Rows lying in several files: row ``i`` is bytes ``[starts[i], ends[i])`` of ``files[segment[i]]``."""
        raw = cls(b"", starts, ends)
        raw._files, raw._segment, raw.names = files, segment, list(names)
        for f in files:
            weakref.finalize(raw, f.close)
        return raw

    def text(self, row: int) -> str:
        """The JSON of record ``row``.

        Raises:
            UnicodeDecodeError: the bytes are not UTF-8 (a damaged file; a ``ValueError``).
            ValueError: the file ends before the record (it changed since the open).
        """
        start, end = int(self._starts[row]), int(self._ends[row])
        if self._segment is not None:
            fd = self._files[int(self._segment[row])].fileno()
        elif self._file is not None:
            fd = self._file.fileno()
        else:
            return bytes(self._buffer[start:end]).decode("utf-8")
        data = os.pread(fd, end - start, start)
        if len(data) != end - start:
            raise ValueError("the records file ends before the record")
        return data.decode("utf-8")

    def where(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(segment, start, end) of each of ``rows``: segment indexes ``names``.

        Raises:
            ValueError: the files are not known (``names`` is empty).
        """
        if not self.names:
            raise ValueError("the records' file is not known")
        segment = self._segment[rows] if self._segment is not None else np.zeros(len(rows), dtype=np.int64)
        return segment, self._starts[rows], self._ends[rows]

    def __len__(self) -> int:
        return len(self._starts)

    def release(self) -> None:
        """Unmap the file now (a base being written checks it and is done with it)."""
        if hasattr(self._buffer, "close"):
            self._buffer.close()


EMPTY_RECORDS = RawRecords(b"", np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
"""No base records (a table filled by writes or from Chroma)."""


class RecordTable(MutableMapping[str, R], Generic[R]):
    """Records by id, kept as raw JSON (a string, or a row of the base's memory-mapped file) until first read, then as models.

    Parsing 100k lessons costs about 6 s; most are never read in a session, so they
    are parsed on demand. A record that does not parse, or belongs to another
    namespace, is logged and dropped (as ``ChromaStore`` does on read).

    ``keep_parsed`` bounds the parsed records whose JSON the table holds: beyond it the
    longest-parsed is dropped and parsed again when next read (a parsed lesson takes about
    6 KB, so a million of them would not fit beside the rest; ``MemoryConfig.storage.parsed_lessons_max``).
    A record put without its JSON (a fold of evidence) is never dropped.

    Example:
        >>> from langmem_plus.records import Link
        >>> t = RecordTable(Link, ("ns",), {"k": Link(id="k", namespace=("ns",), a="x", b="y").model_dump_json()})
        >>> t.parsed_count(), t["k"].a, t.parsed_count()
        (0, 'x', 1)
    """

    def __init__(
        self,
        model: type[R],
        namespace: Namespace,
        raw: Mapping[str, str | int] | None = None,
        base: RawRecords = EMPTY_RECORDS,
        *,
        keep_parsed: int | None = None,
    ) -> None:
        self._model = model
        self._namespace = tuple(namespace)
        self._raw: LayeredMap[str | int | None] = LayeredMap(raw)  # type: ignore[arg-type]
        """Id -> JSON text, row of ``base``, or None (the parsed model is the only copy); ``raw`` is read, never written
        (a snapshot's records map is shared with the lesson index and the vectors)."""
        self._base = base
        self._parsed: dict[str, R] = {}
        self._keep = keep_parsed
        self._droppable: dict[str, None] = {}
        """Parsed records whose JSON is held, oldest parse first (dropped first beyond ``keep_parsed``)."""
        self._drop_lock = threading.Lock()

    def __getitem__(self, key: str) -> R:
        found = self._parsed.get(key)
        if found is not None:
            return found
        raw = self._raw[key]
        try:
            text = self._base.text(raw) if isinstance(raw, int) else raw
            record = self._model.model_validate_json(text) if text is not None else None
        except (ValidationError, ValueError, IndexError) as exc:
            logger.warning("langmem_plus: dropped unreadable %s %r from the snapshot: %s", self._model.__name__, key, exc)
            record = None
        if record is None or tuple(getattr(record, "namespace", ())) != self._namespace:
            if self._raw.get(key) is raw:
                self._raw.pop(key, None)
            raise KeyError(key)
        if self._raw.get(key) is raw:  # not replaced meanwhile (``warm`` parses beside the caller's writes)
            self._parsed[key] = record
            self._parsed_from_json(key)
        return record

    def _parsed_from_json(self, key: str) -> None:
        """Note a parsed record whose JSON is held, and drop the oldest such beyond ``keep_parsed``."""
        if self._keep is None:
            return
        with self._drop_lock:  # ``warm`` parses on its own thread
            self._droppable[key] = None
            while len(self._droppable) > self._keep:
                old = next(iter(self._droppable))
                del self._droppable[old]
                self._parsed.pop(old, None)

    def warm(self, stop: threading.Event, *, chunk: int = 64, pause_s: float = 0.0005) -> int:
        """Parse records not parsed yet, ``chunk`` at a time with a pause between, until done, ``stop``,
        or ``keep_parsed`` records are parsed.

        Runs on a background thread after an open, so the first retrievals do not pay the parse
        (and a query meeting a record first parses it itself, as without warming). Returns how
        many records it parsed.
        """
        done = 0
        limit = len(self._raw) if self._keep is None else self._keep
        keys = [k for k in list(self._raw) if k not in self._parsed]
        for start in range(0, len(keys), chunk):
            if stop.is_set() or len(self._parsed) >= limit:
                break
            for key in keys[start : start + chunk]:
                if key in self._raw and key not in self._parsed:
                    try:
                        self[key]
                        done += 1
                    except KeyError:
                        continue
            time.sleep(pause_s)  # hand the GIL to a waiting query
        return done

    def __setitem__(self, key: str, value: R) -> None:
        self.put(key, value, None)

    def put(self, key: str, value: R, raw: str | None) -> None:
        """Store a record with its JSON when known (saves dumping it again for the next base)."""
        self._raw[key] = raw
        self._parsed[key] = value
        if raw is None:
            with self._drop_lock:
                self._droppable.pop(key, None)
        else:
            self._parsed_from_json(key)

    def __delitem__(self, key: str) -> None:
        del self._raw[key]
        self._parsed.pop(key, None)
        with self._drop_lock:
            self._droppable.pop(key, None)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._raw))

    def __len__(self) -> int:
        return len(self._raw)

    def __contains__(self, key: object) -> bool:
        return key in self._raw

    def items(self) -> list[tuple[str, R]]:  # type: ignore[override]
        """Every readable (id, record), parsing the rest now; unreadable ones are dropped."""
        out = []
        for key in list(self._raw):
            try:
                out.append((key, self[key]))
            except KeyError:
                continue
        return out

    def values(self) -> list[R]:  # type: ignore[override]
        """Every readable record, parsing the rest now."""
        return [record for _, record in self.items()]

    def raw_json(self, key: str) -> str:
        """The record's JSON (dumped from the model when the raw text is not kept)."""
        raw = self._raw[key]
        if isinstance(raw, int):
            return self._base.text(raw)
        return raw if raw is not None else self._parsed[key].model_dump_json()

    def sources(self, keys: Sequence[str]) -> list[RecordSource]:
        """Where each record's JSON is, for a new base, in one pass over ``keys``: (the loaded base's records, row) when
        unchanged since the open, else the text (the write's own string, which the journal may hold: ``store.segments``)."""
        raws, base, parsed = self._raw.values_of(keys), self._base, self._parsed
        return [
            (base, raw) if raw.__class__ is int else (raw if raw is not None else parsed[key].model_dump_json())  # type: ignore[misc]
            for key, raw in zip(keys, raws)
        ]

    def parsed_count(self) -> int:
        """How many records are parsed now."""
        return len(self._parsed)


@dataclass
class Loaded:
    """A valid snapshot: raw records per kind, the graph state, and the journal to replay on top."""

    records: dict[str, dict[str, int]]
    """Per kind: id -> row of ``raw`` (the base's records file)."""
    raw: RawRecords
    graph_data: dict[str, Any]
    graph_names: list[str]
    graph_arrays: dict[str, np.ndarray]
    journal: list[tuple[str, str, list[tuple[str, str]]]] = field(default_factory=list)
    """(token, kind, [(id, record_json), ...]) per committed write since the base, in order."""
    vector_ids: list[str] = field(default_factory=list)
    vectors: np.ndarray | None = None
    """Relevance vectors of ``vector_ids``, row by row (memory-mapped, read-only)."""
    index_meta: dict[str, Any] | None = None
    """What ``write_base`` was given to describe the lesson index (None: no index saved)."""
    index_arrays: dict[str, np.ndarray] | None = None
    """The lesson index's columns, aligned with the base's lesson records."""
    ledger: str | None = None
    """The run-evidence ledger saved with the base, as JSON (None: none saved)."""
    vectors_follow_lessons: bool = False
    """The vector rows are the lesson records' order (``vector_ids`` is then ``lesson_ids``)."""
    has_episodes: bool = True
    """The base holds the episodes (format ``EPISODES_SINCE`` on); an older one's come from Chroma."""

    @property
    def lesson_ids(self) -> list[str]:
        """The base's lesson ids, in the records' order."""
        return list(self.records["lessons"])

    def lesson_order(self) -> Mapping[str, int]:
        """Lesson id -> its position among the base's lessons: the records' own map when the lessons come first
        in the file (as ``write_base`` writes them), so no second million-entry map is built."""
        rows = self.records["lessons"]
        if not rows or (next(iter(rows.values())) == 0 and next(reversed(rows.values())) == len(rows) - 1):
            return rows  # rows increase with the file, so the first at 0 and the last at n-1 are 0..n-1
        return dict(zip(rows, range(len(rows))))


class LessonVectors:
    """Lessons' relevance vectors: the base's rows (memory-mapped) and those written since.

    Example:
        >>> v = LessonVectors(["a"], np.ones((1, 2), dtype=np.float32))
        >>> v.put("b", np.zeros(2, dtype=np.float32)); v.forget("a")
        >>> v.get("a") is None, v.get("b").tolist()
        (True, [0.0, 0.0])
    """

    def __init__(self, ids: Sequence[str] = (), matrix: np.ndarray | None = None, rows: Mapping[str, int] | None = None) -> None:
        """``rows``: ``ids``' positions when the caller has them (the open's lesson order), shared and never written."""
        self._matrix = matrix
        base = (rows if rows is not None else dict(zip(ids, range(len(ids))))) if matrix is not None else {}
        self._rows = LayeredMap[int](base)
        self._new: dict[str, tuple[np.ndarray, int, int]] = {}
        """Vectors written since the open: (the write's matrix, row, the write's number), so a new base writes them
        a batch at a time."""
        self._writes = 0
        self._reader = _RowReader.of(matrix)

    def get(self, lesson_id: str) -> np.ndarray | None:
        """The lesson's vector, or None when it is not known here (read it from Chroma)."""
        return self.get_many([lesson_id]).get(lesson_id)

    def get_many(self, lesson_ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The vectors known here for ``lesson_ids``, the base's rows gathered with one index."""
        found = {i: hit[0][hit[1]] for i in lesson_ids if (hit := self._new.get(i)) is not None}
        if self._matrix is None:
            return found
        hits = [(i, r) for i in lesson_ids if i not in found and (r := self._rows.get(i)) is not None]
        if hits:
            block = self._base_rows([r for _, r in hits])
            found.update((i, block[n]) for n, (i, _) in enumerate(hits))
        return found

    def _base_rows(self, rows: Sequence[int]) -> np.ndarray:
        """Rows of the base's matrix (callers check there is one)."""
        if self._reader is not None:
            return self._reader.rows(rows)
        return np.asarray(np.asarray(self._matrix)[list(rows)], dtype=np.float32)

    def runs_of(self, lesson_ids: Sequence[str]) -> tuple[VectorRuns, np.ndarray]:
        """The vectors known here for ``lesson_ids`` (the found ones, in order) as runs of consecutive rows of the
        writes' matrices and of the base's file, and the mask of ids found: a new base's ``.npy`` is written run by
        run (``VectorRuns``), never gathered row by row into one 100 MB matrix first (0.2-0.6 s of a close).

        Example:
            >>> v = LessonVectors()
            >>> v.put_rows(["x0", "a", "b"], np.eye(3, dtype=np.float32)); v.forget("x0")
            >>> runs, found = v.runs_of(["a", "x", "b"]); runs.matrix().tolist(), found.tolist()
            ([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]], [True, False, True])
        """
        new = self._new
        base = self._rows if self._matrix is not None else LayeredMap[int]({})
        hits = list(map(new.get, lesson_ids))
        batches = {hit[2]: hit[0] for hit in hits if hit is not None}  # one entry per write (its batch number)
        batch_of = {b: k for k, b in enumerate(batches)}
        stacked = list(batches.values())
        which: list[int] = []  # the batch; -1: a base row; -2: not known here
        rows: list[int] = []
        if None not in hits:  # the usual close after writes: every vector known, no base lookups
            which = [batch_of[hit[2]] for hit in hits]  # type: ignore[index]
            rows = [hit[1] for hit in hits]  # type: ignore[index]
        else:
            for i, hit in zip(lesson_ids, hits):
                if hit is not None:
                    which.append(batch_of[hit[2]])
                    rows.append(hit[1])
                else:
                    row = base.get(i)
                    which.append(-2 if row is None else -1)
                    rows.append(0 if row is None else row)
        width = stacked[0].shape[1] if stacked else (self._matrix.shape[1] if self._matrix is not None else 0)
        source, at = np.asarray(which, dtype=np.int64), np.asarray(rows, dtype=np.int64)
        found = source > -2
        source, at = source[found], at[found]
        breaks = (np.flatnonzero((source[1:] != source[:-1]) | (at[1:] != at[:-1] + 1)) + 1).tolist()
        base_source: np.ndarray | _RowReader | None = self._reader if self._reader is not None else self._matrix
        runs: list[tuple[np.ndarray | _RowReader, int, int]] = []
        for lo, hi in zip([0, *breaks], [*breaks, len(source)]):
            if hi > lo:
                k, first = int(source[lo]), int(at[lo])
                origin = stacked[k] if k >= 0 else base_source
                if origin is not None:
                    runs.append((origin, first, first + hi - lo))
        return VectorRuns(width, runs), found

    def put(self, lesson_id: str, vector: np.ndarray) -> None:
        """The vector a write just stored."""
        self.put_rows([lesson_id], np.asarray(vector, dtype=np.float32).reshape(1, -1))

    def put_rows(self, lesson_ids: Sequence[str], matrix: np.ndarray) -> None:
        """The vectors a write just stored: row ``n`` of the float32 ``matrix`` (kept, not copied) is ``lesson_ids[n]``'s."""
        self._writes += 1
        for n, lesson_id in enumerate(lesson_ids):
            self._new[lesson_id] = (matrix, n, self._writes)

    def forget(self, lesson_id: str) -> None:
        """The lesson was rewritten and its vector is not known here."""
        self._new.pop(lesson_id, None)
        self._rows.pop(lesson_id, None)


class VectorRuns:
    """A matrix of float32 rows given as runs ``source[lo:hi]`` of other matrices (the writes' batches, the base's file),
    saved as ``.npy`` run by run (``LessonVectors.runs_of``)."""

    def __init__(self, width: int, runs: list[tuple[np.ndarray | _RowReader, int, int]]) -> None:
        self.width, self._runs = width, runs
        self.shape = (sum(hi - lo for _, lo, hi in runs), width)

    def _blocks(self) -> Iterator[np.ndarray]:
        for origin, lo, hi in self._runs:
            if isinstance(origin, _RowReader):
                yield from origin.spans(lo, hi)
            else:
                yield np.ascontiguousarray(origin[lo:hi], dtype=np.float32)

    def save(self, path: Path) -> None:
        """Write the rows as a ``.npy`` file (what ``np.save`` of ``matrix()`` writes, read back equal)."""
        with open(path, "wb") as f:
            npy_format.write_array_header_1_0(f, {"descr": npy_format.dtype_to_descr(np.dtype(np.float32)), "fortran_order": False, "shape": self.shape})
            for block in self._blocks():
                f.write(np.ascontiguousarray(block).data)

    def matrix(self) -> np.ndarray:
        """The rows as one matrix (tests, and the rare base whose vectors are partly read from Chroma)."""
        blocks = list(self._blocks())
        return np.concatenate(blocks) if blocks else np.zeros((0, self.width), dtype=np.float32)


class _RowReader:
    """Rows of a memory-mapped ``.npy`` matrix read with ``os.pread``: the page cache serves them as the map
    would, but no page (and no 64 KB around it) is mapped into the process, so reading vectors of random
    lessons does not grow the resident memory (0.7 GB of file pages at a million lessons with the map)."""

    def __init__(self, file: BinaryIO, offset: int, width: int, dtype: np.dtype[Any], count: int) -> None:
        self._file, self._offset, self._width, self._dtype, self._count = file, offset, width, dtype, count
        self._row_bytes = width * dtype.itemsize
        weakref.finalize(self, file.close)

    @classmethod
    def of(cls, matrix: np.ndarray | None) -> _RowReader | None:
        """A reader for ``matrix`` when it is a C-ordered 2-D map of a file and ``os.pread`` exists, else None."""
        if not isinstance(matrix, np.memmap) or matrix.ndim != 2 or not matrix.flags.c_contiguous or not hasattr(os, "preadv"):
            return None
        if matrix.filename is None:
            return None
        return cls(open(matrix.filename, "rb"), int(matrix.offset), int(matrix.shape[1]), matrix.dtype, int(matrix.shape[0]))

    def spans(self, lo: int, hi: int, chunk_rows: int = 16384) -> Iterator[np.ndarray]:
        """Rows ``lo:hi`` as float32 blocks, one read per ``chunk_rows``.

        Raises:
            IndexError: the span is out of range.
            ValueError: the file ends before a row.
        """
        if not 0 <= lo <= hi <= self._count:
            raise IndexError((lo, hi))
        for start in range(lo, hi, chunk_rows):
            end = min(hi, start + chunk_rows)
            out = np.empty((end - start, self._width), dtype=self._dtype)
            if os.preadv(self._file.fileno(), [out.data], self._offset + start * self._row_bytes) != out.nbytes:
                raise ValueError("the vectors file ends before a row")
            yield out.astype(np.float32, copy=False)

    def rows(self, rows: Sequence[int]) -> np.ndarray:
        """The rows ``rows``, as float32.

        Raises:
            IndexError: a row is out of range.
            ValueError: the file ends before a row (it changed since the open).
        """
        out = np.empty((len(rows), self._width), dtype=self._dtype)
        fd, size = self._file.fileno(), self._row_bytes
        for n, row in enumerate(rows):
            if not 0 <= row < self._count:
                raise IndexError(row)
            if os.preadv(fd, [out[n]], self._offset + row * size) != size:
                raise ValueError("the vectors file ends before a row")
        return out.astype(np.float32, copy=False)


class SnapshotDir:
    """Reads and writes one namespace's snapshot folder.

    ``segment_live_min`` and ``segments_max``: when a new base copies a records segment instead of
    pointing at it (``MemoryConfig.storage.snapshot_segment_live_min`` / ``snapshot_segments_max``).
    """

    def __init__(
        self,
        path: str | Path,
        *,
        segment_live_min: float = DEFAULT_CONFIG.storage.snapshot_segment_live_min,
        segments_max: int = DEFAULT_CONFIG.storage.snapshot_segments_max,
    ) -> None:
        self.path = Path(path)
        self.segment_live_min, self.segments_max = segment_live_min, segments_max
        self._journal_name: str | None = None
        self.journal_records = 0
        """Records in the current journal's committed writes (read at load, counted on append)."""
        self._located: dict[str, dict[str, Located]] = {}
        """Per kind, id -> (JSON text, file, byte range): where the latest journalled text of each record lies (the
        current journal, or one a base took as a segment), so a new base points at it instead of writing it again."""

    # ---- reading --------------------------------------------------------------

    def load(self, generation: str | None) -> Loaded | None:
        """The snapshot if it reflects Chroma's ``generation`` exactly, else None (logged why)."""
        meta_path = self.path / "meta.json"
        if not meta_path.exists():
            return None
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            if meta.get("format") not in READ_FORMATS:
                logger.info("langmem_plus: snapshot %s has another format; reading from Chroma", self.path)
                return None
            base = self.path / f"base-{meta['base']}"
            segments = meta.get("segments")
            records, raw = _read_records(
                Path(f"{base}.records.tsv"), Path(f"{base}.rows.npz"), required=isinstance(segments, list) and len(segments) > 1
            )
            # pydantic-core's parser: the same values as ``json.loads`` (tested), faster on a large head, and it
            # shares repeated short strings (statuses, tools).
            graph = pydantic_core.from_json(Path(f"{base}.graph.json").read_bytes(), cache_strings="all")
            arrays = load_npz_mapped(Path(f"{base}.graph.npz"))
            names = [str(n) for n in graph["names"]] if "names" in graph else unpack_strings(arrays, "names_")
            journal, located = _read_journal(self.path / f"journal-{meta['journal']}.tsv")
            vectors_path = Path(f"{base}.vectors.npy")
            vectors = np.load(vectors_path, mmap_mode="r", allow_pickle=False) if vectors_path.exists() else None
            vector_ids = _vector_ids(graph, arrays, records["lessons"])
            if vectors is not None and (vectors.ndim != 2 or len(vectors) != len(vector_ids)):
                raise ValueError("the vector rows do not match their ids")
            index_meta, index_arrays = _read_index(Path(f"{base}.index.npz"), graph.get("lesson_index"))
            ledger_path = Path(f"{base}.ledger.json")
            ledger = ledger_path.read_text(encoding="utf-8") if ledger_path.exists() else None
        except (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile) as exc:
            logger.warning("langmem_plus: snapshot %s is unreadable (%s); reading from Chroma", self.path, exc)
            return None
        last = journal[-1][0] if journal else meta.get("generation")
        if last != generation:
            logger.info("langmem_plus: snapshot %s is behind the store; reading from Chroma", self.path)
            return None
        self._journal_name = str(meta["journal"])
        self.journal_records = sum(len(entries) for _, _, entries in journal)
        self._located = located
        return Loaded(
            records=records, raw=raw, graph_data=graph["data"], graph_names=names,
            graph_arrays=arrays, journal=journal, vector_ids=vector_ids, vectors=vectors,
            index_meta=index_meta, index_arrays=index_arrays, vectors_follow_lessons="vectors_follow_lessons" in arrays,
            ledger=ledger, has_episodes=meta["format"] >= EPISODES_SINCE,
        )

    # ---- writing --------------------------------------------------------------

    def append(self, token: str, kind: str, entries: Iterable[tuple[str, str]]) -> None:
        """Record one committed Chroma write (its token, kind and records) in the journal."""
        self.append_group(token, [(kind, entries)])

    def append_group(self, token: str, writes: Sequence[tuple[str, Iterable[tuple[str, str]]]]) -> None:
        """Record committed Chroma writes that went under one token (``ChromaStore.write_group``), closed by one end line.

        Once written, each record's JSON is noted with its byte range (``_located``): the next base points at it.
        """
        if self._journal_name is None:
            return  # no base yet: the next base will hold this write
        name = f"journal-{self._journal_name}.tsv"
        written = [(kind, rid, raw) for kind, entries in writes for rid, raw in entries]
        lines = [f"{token}\t{kind}\t{_quote(rid)}\t{raw}\n" for kind, rid, raw in written]
        self.journal_records += len(lines)
        lines.append(f"{token}\t{END}\n")
        data = "".join(lines).encode("utf-8")
        with open(self.path / name, "ab") as f:
            at = f.tell()
            f.write(data)
        for line, (kind, rid, raw) in zip(lines, written):
            at += utf8_len(line)
            self._located.setdefault(kind, {})[rid] = (raw, name, at - 1 - utf8_len(raw), at - 1)

    def write_base(
        self,
        generation: str | None,
        records: Mapping[str, RecordColumns | Iterable[tuple[str, RecordSource]]],
        graph_state: GraphState | Callable[[], GraphState],
        vectors: tuple[list[str], np.ndarray | VectorRuns] | None = None,
        index: tuple[dict[str, Any], Mapping[str, np.ndarray]] | None = None,
        ledger: str | None = None,
    ) -> None:
        """Write a new base reflecting ``generation`` and start an empty journal; old files are removed after the commit.

        ``records``: per kind, (id, text or the loaded base's row) pairs or ``RecordColumns``; a text the journal
        holds, or a row whose file is still here, is pointed at, not written again (``store.segments``).
        ``graph_state``: ``LessonGraph.to_state``'s answer, or a function giving it (``LessonGraph.state_later``),
        called once the records are placed, so work the graph started on a thread overlaps the placing.
        ``index``: the lesson index's description and columns (aligned with the lesson records).
        ``ledger``: the memory's run-evidence ledger and shared-log heads, as JSON (``learning.ledger``).

        Crash safety: nothing the current ``meta.json`` names is written or removed before ``meta.json`` is replaced
        (the commit); the journal a new base takes as a segment is only appended to while it is the current journal.
        """
        self.path.mkdir(parents=True, exist_ok=True)
        base_id, journal_id = uuid.uuid4().hex[:12], uuid.uuid4().hex[:12]
        base = self.path / f"base-{base_id}"
        # The vectors (100 MB at 100k lessons) go to disk on a thread while the records are placed here:
        # numpy's write releases the GIL.
        saver = _VectorSaver(Path(f"{base}.vectors.npy"), vectors[1]) if vectors is not None else None
        try:
            placed = place_records(
                self.path, f"base-{base_id}.records.tsv", {k: records.get(k, ()) for k in SNAPSHOT_KINDS},
                self._located, live_min=self.segment_live_min, segments_max=self.segments_max, quote=_quote,
            )
            data, names, graph_arrays = graph_state() if callable(graph_state) else graph_state
            arrays = {**graph_arrays, **pack_strings(names, "names_")}
            head: dict[str, Any] = {"data": data}
            if vectors is not None:
                arrays.update(_vector_ids_arrays(vectors[0], placed.ids["lessons"]))
            if index is not None:
                head["lesson_index"] = index[0]
                with open(f"{base}.index.npz", "wb") as f:
                    np.savez(f, **dict(index[1]))  # type: ignore[arg-type]
            # pydantic-core's encoder: the same JSON as ``json.dumps`` (read back equal), and faster.
            Path(f"{base}.graph.json").write_bytes(pydantic_core.to_json(head, inf_nan_mode="constants"))
            with open(f"{base}.graph.npz", "wb") as f:
                np.savez(f, **dict(arrays))  # type: ignore[arg-type]
            with open(f"{base}.rows.npz", "wb") as f:
                np.savez(f, **placed.arrays())  # type: ignore[arg-type]
            if ledger is not None:
                Path(f"{base}.ledger.json").write_text(ledger, encoding="utf-8")
        finally:
            if saver is not None:
                saver.join()
        (self.path / f"journal-{journal_id}.tsv").touch()
        meta = {"format": FORMAT, "generation": generation, "base": base_id, "journal": journal_id, "segments": placed.names}
        tmp = self.path / "meta.json.tmp"
        tmp.write_text(json.dumps(meta), encoding="utf-8")
        os.replace(tmp, self.path / "meta.json")
        self._journal_name, self.journal_records = journal_id, 0
        keep = {f"base-{base_id}.records.tsv", f"base-{base_id}.rows.npz", f"base-{base_id}.graph.json", f"base-{base_id}.graph.npz",
                f"base-{base_id}.vectors.npy", f"base-{base_id}.index.npz", f"base-{base_id}.ledger.json", f"journal-{journal_id}.tsv",
                "meta.json", *placed.names}
        for old in self.path.iterdir():
            if old.name not in keep and (old.name.startswith("base-") or old.name.startswith("journal-")):
                try:
                    old.unlink(missing_ok=True)
                except OSError as exc:  # e.g. still memory-mapped on a platform that forbids it; harmless
                    logger.debug("langmem_plus: could not remove old snapshot file %s: %s", old, exc)
        self._forget_removed()

    def _forget_removed(self) -> None:
        """Drop the noted places whose file is gone (a segment the new base copied instead of naming)."""
        files = {loc[1] for found in self._located.values() for loc in found.values()}
        gone = {name for name in files if not (self.path / name).exists()}
        if gone:
            self._located = {k: {i: loc for i, loc in found.items() if loc[1] not in gone} for k, found in self._located.items()}


class _VectorSaver(threading.Thread):
    """Writes a base's vector matrix as ``.npy`` on its own thread; ``join`` re-raises what the write raised."""

    def __init__(self, path: Path, matrix: np.ndarray | VectorRuns) -> None:
        super().__init__(name="langmem-plus-snapshot-vectors", daemon=True)
        self._path, self._matrix = path, matrix
        self._error: BaseException | None = None
        self.start()

    def run(self) -> None:
        try:
            if isinstance(self._matrix, VectorRuns):
                self._matrix.save(self._path)
            else:
                np.save(self._path, np.asarray(self._matrix, dtype=np.float32), allow_pickle=False)
        except BaseException as exc:  # handed to the caller by ``join``
            self._error = exc

    def join(self, timeout: float | None = None) -> None:
        super().join(timeout)
        if self._error is not None:
            raise self._error


def _vector_ids_arrays(vector_ids: Sequence[str], lesson_ids: Sequence[str]) -> dict[str, np.ndarray]:
    """How a base names its vector rows: as the lesson records' order when they follow it (the usual case: no
    second list of a million ids to read back), else the ids themselves, packed."""
    if list(vector_ids) == list(lesson_ids):
        return {"vectors_follow_lessons": np.ones(1, dtype=np.int64)}
    return pack_strings(list(vector_ids), "vector_ids_")


def _vector_ids(head: Mapping[str, Any], arrays: Mapping[str, np.ndarray], lessons: Mapping[str, int]) -> list[str]:
    """The ids of a base's vector rows (format 2 kept them in the head)."""
    if "vector_ids" in head:
        return [str(i) for i in head["vector_ids"]]
    if "vectors_follow_lessons" in arrays:
        return list(lessons)
    return unpack_strings(arrays, "vector_ids_") if "vector_ids_count" in arrays else []


def _quote(rid: str) -> str:
    """``json.dumps(rid)``, without the encoder for the usual id (printable ASCII, no quote or backslash)."""
    if rid.isascii() and rid.isprintable() and '"' not in rid and "\\" not in rid:
        return f'"{rid}"'
    return json.dumps(rid)


def _read_index(path: Path, meta: Any) -> tuple[dict[str, Any] | None, dict[str, np.ndarray] | None]:
    """The lesson index saved with a base, or (None, None): absent or unreadable, the memory rebuilds it."""
    if not isinstance(meta, dict) or not path.exists():
        return None, None
    try:
        return meta, load_npz_mapped(path)
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        logger.info("langmem_plus: lesson index %s is unreadable (%s); rebuilding it", path, exc)
        return None, None


def _read_records(
    path: Path, row_index: Path | None = None, *, required: bool = False
) -> tuple[dict[str, dict[str, int]], RawRecords]:
    """The base's records, and per kind each record's id -> row: from the saved row index when there is one that
    fits the files, else by scanning the base's own file (``_scan_records``), unless the index is ``required``
    (a format-5 base whose records lie in other files too: the scan would miss them).

    Raises:
        ValueError: the file is truncated or a line is malformed (found by the scan), or a required index does not fit.
        KeyError: a line names an unknown kind.
        OSError: a required index or a segment cannot be read.
    """
    if required:
        if row_index is None:
            raise ValueError("the records' row index is required")
        return _read_row_index(path, row_index)
    if row_index is not None and row_index.exists():
        try:
            return _read_row_index(path, row_index)
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
            logger.info("langmem_plus: the records' row index %s does not fit (%s); scanning the records", row_index, exc)
    return _scan_records(path)


def _read_row_index(path: Path, row_index: Path) -> tuple[dict[str, dict[str, int]], RawRecords]:
    """The records file mapped, with the rows, kinds and ids ``_write_row_index`` saved, checked against the file:
    its size, and a newline at every line's end and a tab before every record.

    Raises:
        ValueError, KeyError: the index does not fit the file.
    """
    arrays = load_npz_mapped(row_index)
    if "segment" in arrays:
        return _read_segmented(path, arrays)
    buffer = _map(path)
    size = len(buffer)
    starts, ends = arrays["starts"].astype(np.int64, copy=False), arrays["ends"].astype(np.int64, copy=False)
    n = len(starts)
    if int(arrays["size"][0]) != size or len(ends) != n:
        raise ValueError("the row index is for another file")
    out = _kind_rows(arrays, n)  # every row placed once
    if n and (int(starts.min()) < 1 or np.any(starts > ends) or int(ends[-1]) != size - 1 or np.any(ends[:-1] >= starts[1:])):
        raise ValueError("the row index's lines do not fit")
    if n:
        if not _rows_framed(np.frombuffer(buffer, dtype=np.uint8), starts, ends):
            raise ValueError("the row index does not match the file's separators")
        _release(buffer)
    release_pages(arrays)
    return out, (RawRecords(buffer, starts, ends, open(path, "rb"), name=path.name) if n else EMPTY_RECORDS)


def _kind_rows(arrays: Mapping[str, np.ndarray], n: int) -> dict[str, dict[str, int]]:
    """Per kind, id -> row, from a row index; every row placed once.

    Raises:
        ValueError, KeyError: the kinds' rows do not fit ``n`` rows.
    """
    out: dict[str, dict[str, int]] = {}
    placed = np.zeros(n, dtype=np.int64)
    for kind in SNAPSHOT_KINDS:
        rows = arrays[f"{kind}_rows"].astype(np.int64, copy=False)
        ids = unpack_strings(arrays, f"{kind}_ids_")
        if len(ids) != len(rows) or (len(rows) and (int(rows.min()) < 0 or int(rows.max()) >= n)):
            raise ValueError("the row index's rows do not fit")
        placed += np.bincount(rows, minlength=n)[:n] if len(rows) else 0
        out[kind] = dict(zip(ids, rows.tolist()))
    if n and np.any(placed != 1):
        raise ValueError("the row index's rows do not fit")
    return out


def _rows_framed(data: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> bool:
    """Whether every row ``[start, end)`` of a records file's bytes follows a tab and ends at a newline (a line's JSON)."""
    return bool(np.all(data[ends] == ord("\n")) and np.all(data[starts - 1] == ord("\t")))


def _read_segmented(path: Path, arrays: Mapping[str, np.ndarray]) -> tuple[dict[str, dict[str, int]], RawRecords]:
    """A format-5 row index (``store.segments``): records in the base's own file ``path`` and in other files of its
    folder, each checked against its saved size, each row within its file, and a tab before and a newline after it.

    Raises:
        ValueError, KeyError: the index does not fit the files.
        OSError: a segment is missing.
    """
    names = unpack_strings(arrays, "segments_")
    sizes = arrays["segment_sizes"].astype(np.int64, copy=False)
    segment = arrays["segment"].astype(np.int64)
    starts, ends = arrays["starts"].astype(np.int64, copy=False), arrays["ends"].astype(np.int64, copy=False)
    n = len(starts)
    if not names or names[0] != path.name or len(sizes) != len(names) or len(segment) != n or len(ends) != n:
        raise ValueError("the row index is for another base")
    if n and (int(segment.min()) < 0 or int(segment.max()) >= len(names)):
        raise ValueError("the row index names a segment it does not list")
    if n and (int(starts.min()) < 1 or np.any(starts > ends) or np.any(ends >= sizes[segment])):
        raise ValueError("the row index's rows do not fit their files")
    out = _kind_rows(arrays, n)
    files: list[BinaryIO] = []
    try:
        for k, name in enumerate(names):
            f: BinaryIO = open(path.parent / name, "rb")
            files.append(f)
            if os.fstat(f.fileno()).st_size != int(sizes[k]):
                raise ValueError(f"the records segment {name} changed since the base was written")
            rows = np.flatnonzero(segment == k)
            if len(rows):
                buffer = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
                try:
                    fits = _rows_framed(np.frombuffer(buffer, dtype=np.uint8), starts[rows], ends[rows])
                    _release(buffer)
                finally:
                    buffer.close()
                if not fits:
                    raise ValueError(f"the row index does not match the separators of {name}")
    except BaseException:
        for opened in files:
            opened.close()
        raise
    release_pages(arrays)
    if not n:
        for opened in files:
            opened.close()
        return out, EMPTY_RECORDS
    return out, RawRecords.segmented(files, names, segment, starts, ends)


def _release(buffer: Any) -> None:
    """Let the pages a check touched go from this process's resident set (they stay in the page cache)."""
    if hasattr(buffer, "madvise") and hasattr(mmap, "MADV_DONTNEED"):
        buffer.madvise(mmap.MADV_DONTNEED)


def _scan_records(path: Path) -> tuple[dict[str, dict[str, int]], RawRecords]:
    """The base's records file memory-mapped, and per kind each record's id -> row, by scanning the file.

    Lines are ``kind \\t json(id) \\t record_json``; JSON escapes tabs and newlines inside
    strings, so the only raw tabs and newlines are the separators: the lines are found with a
    vectorised scan of the bytes and the kinds and ids gathered with one index each (the per-line
    Python loop this replaced took ~2 s at a million records; no record's JSON is copied).

    Raises:
        ValueError: the file is truncated or a line is malformed.
        KeyError: a line names an unknown kind.
    """
    out: dict[str, dict[str, int]] = {k: {} for k in SNAPSHOT_KINDS}
    buffer = _map(path)
    if not len(buffer):
        return out, EMPTY_RECORDS
    newlines, tabs = _separators(buffer)
    if newlines.size == 0 or newlines[-1] != len(buffer) - 1:
        raise ValueError(f"{path.name} is truncated")
    starts = np.concatenate((np.zeros(1, dtype=np.int64), newlines[:-1] + 1))
    if len(tabs) != 2 * len(newlines):
        raise ValueError(f"{path.name} has a malformed line")
    first, second = tabs[0::2], tabs[1::2]
    if not (np.all(first >= starts) and np.all(second < newlines)):
        raise ValueError(f"{path.name} has a malformed line")
    data = np.frombuffer(buffer, dtype=np.uint8)
    kinds = _kind_codes(data, starts, first)
    # The ids between their quotes; a JSON string without escapes is its own text (most ids): no decode.
    ids = _fields(data, first + 2, second - 1)
    if not (np.all(data[first + 1] == ord('"')) and np.all(data[second - 1] == ord('"'))):
        raise ValueError(f"{path.name} has an id that is not a JSON string")
    loads = json.loads
    for row in [r for r, rid in enumerate(ids) if "\\" in rid]:
        ids[row] = loads(f'"{ids[row]}"')
    placed = 0
    for kind in SNAPSHOT_KINDS:
        rows = np.flatnonzero(kinds == _kind_code(kind)).tolist()
        out[kind] = dict(zip([ids[r] for r in rows], rows))
        placed += len(rows)
    if placed != len(ids):
        raise KeyError(f"{path.name} names an unknown kind")
    # The scan touched every page; let them go from this process's resident set (the file stays
    # in the page cache), so a record's page is resident only while records near it are read.
    _release(buffer)
    return out, RawRecords(buffer, second + 1, newlines, open(path, "rb"), name=path.name)


KIND_BYTES = 8
"""A kind's name fits in 8 bytes, so each line's kind reads as one 64-bit code."""


def _kind_code(kind: str) -> int:
    return int(np.frombuffer(kind.encode().ljust(KIND_BYTES, b"\0"), dtype=np.uint64)[0])


def _kind_codes(data: np.ndarray, begins: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Each line's kind ``data[begins[i]:ends[i]]`` as a 64-bit code (its bytes, zero-padded), or 0 when
    longer than any kind: compared with ``_kind_code`` without making a string a line."""
    lengths = ends - begins
    columns = np.arange(KIND_BYTES)
    block = data[np.minimum(begins[:, None] + columns, len(data) - 1)]
    block[columns >= lengths[:, None]] = 0
    codes = np.ascontiguousarray(block).view(np.uint64).ravel()
    codes[lengths > KIND_BYTES] = 0
    return codes


def _fields(data: np.ndarray, begins: np.ndarray, ends: np.ndarray) -> list[str]:
    """The byte ranges ``[begins[i], ends[i])`` of ``data`` as strings, gathered as arrays: the ranges of
    one length at a time as a 2-D block, decoded at once (ids and kinds come in a few lengths). No range
    holds a newline (the file's only raw newlines end its lines), so one joins each block's rows.

    Raises:
        ValueError: a range is reversed, or the bytes are not UTF-8.
    """
    lengths = ends - begins
    if len(lengths) and int(lengths.min()) < 0:
        raise ValueError("a malformed line")
    widths = np.unique(lengths).tolist()
    out = [""] * len(begins)
    for width in widths:
        rows = np.flatnonzero(lengths == width) if len(widths) > 1 else np.arange(len(begins))
        block = np.full((len(rows), width + 1), ord("\n"), dtype=np.uint8)
        block[:, :width] = data[begins[rows, None] + np.arange(width)]
        texts = block.tobytes().decode("utf-8").split("\n")[:-1]
        if len(widths) == 1:
            return texts
        for row, text in zip(rows.tolist(), texts):
            out[row] = text
    return out


def _map(path: Path) -> Any:
    """The file's bytes, memory-mapped read-only (``b""`` when empty: an empty file cannot be mapped)."""
    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            return b""
        return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)


def _separators(buffer: Any, chunk: int = 1 << 26) -> tuple[np.ndarray, np.ndarray]:
    """Offsets of the newlines and of the tabs in ``buffer``: one scan for bytes <= 10 (JSON text holds
    no raw control character), in chunks so the comparison's temporary stays small."""
    data = np.frombuffer(buffer, dtype=np.uint8)
    newlines, tabs = [], []
    for start in range(0, len(data), chunk):
        part = data[start : start + chunk]
        found = np.flatnonzero(part <= 10)
        kind = part[found]
        newlines.append(found[kind == 10] + start)
        tabs.append(found[kind == 9] + start)
    empty = np.zeros(0, dtype=np.int64)
    return np.concatenate([empty, *newlines]).astype(np.int64), np.concatenate([empty, *tabs]).astype(np.int64)


def _read_journal(path: Path) -> tuple[list[tuple[str, str, list[tuple[str, str]]]], dict[str, dict[str, Located]]]:
    """Committed writes of a journal, in order, and where each record's latest committed text lies in the file;
    a trailing write without its end line is ignored.

    One end line may close several kinds' writes under one token (``append_group``): each
    kind's run of records comes back as its own entry, in order, with that token.
    """
    writes: list[tuple[str, str, list[tuple[str, str]]]] = []
    located: dict[str, dict[str, Located]] = {}
    pending: dict[str, list[tuple[str, list[tuple[str, str]], list[int]]]] = {}
    name, at = path.name, 0
    for line in path.read_text(encoding="utf-8").split("\n")[:-1]:  # the last piece is "" or a torn line
        at += utf8_len(line) + 1
        token, kind, *rest = line.split("\t", 3)
        if kind == END:
            found = pending.pop(token, None) or [("", [], [])]
            for k, entries, ends in found:
                writes.append((token, k, entries))
                if k:
                    noted = located.setdefault(k, {})
                    for (rid, raw), end in zip(entries, ends):
                        noted[rid] = (raw, name, end - utf8_len(raw), end)
            continue
        if kind not in SNAPSHOT_KINDS or len(rest) != 2:
            raise ValueError(f"{path.name} has a malformed line")
        runs = pending.setdefault(token, [])
        if not runs or runs[-1][0] != kind:
            runs.append((kind, [], []))
        runs[-1][1].append((json.loads(rest[0]), rest[1]))
        runs[-1][2].append(at - 1)
    return writes, located


__all__ = [
    "GraphState",
    "EPISODES_SINCE", "FORMAT", "SNAPSHOT_KINDS", "LessonVectors", "Loaded", "RawRecords", "RecordTable", "SnapshotDir", "VectorRuns",
    "snapshot_dir",
]
