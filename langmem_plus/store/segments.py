"""Where a snapshot base's records lie: byte ranges of files already in the folder, not a fresh copy (format 5).

After ``add_lessons`` imports 100k lessons, the journal holds every record's JSON; writing the
same 100 MB again into the new base, then scanning it for the row index, was 0.5-0.7 s of the
close (docs/performance-log.md, "Writes and close"). A format-5 base instead lists, per record, a
file of the folder (a *segment*: its own records file, a journal an earlier base took over, an
earlier base's records file) and the record's byte range in it, in the row index
(``base-<id>.rows.npz``). Only records whose text lies in no file yet (folded evidence, another
writer's records, runs) are written to the base's own file.

Segments are never written again once a base names them: a journal becomes a segment only at
the rebase that starts the next journal. A segment whose live records fill less than
``live_min`` of it, or beyond ``segments_max`` segments, is copied into the own file, so the
dead bytes of replaced records do not pile up.

Example:
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "journal-a.tsv").write_bytes(b't\\tlessons\\t"x"\\t{"v": 1}\\nt\\t#end\\n')
    >>> located = {"lessons": {"x": (text := '{"v": 1}', "journal-a.tsv", 14, 22)}}
    >>> placed = place_records(folder, "own.tsv", {"lessons": [("x", text)], "links": [("k", "{}")]}, located, live_min=0.2)
    >>> placed.names, placed.segment.tolist(), placed.starts.tolist()
    (['own.tsv', 'journal-a.tsv'], [1, 0], [14, 10])
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import compress, repeat
from operator import is_, itemgetter
from pathlib import Path
from typing import BinaryIO, Protocol

import numpy as np

from langmem_plus.store.columns import pack_strings

Located = tuple[str, str, int, int]
"""A record's latest journalled JSON text, the file it lies in, and its byte range there."""
FLUSH_LINES = 4096
"""Lines of the own file encoded and written at once (one large string would double the memory at 1M records)."""


class BaseRows(Protocol):
    """The loaded base's records (``snapshot.RawRecords``): where its rows lie, and their text."""

    names: list[str]

    def where(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]: ...

    def text(self, row: int) -> str: ...


RecordSource = str | tuple[BaseRows, int]
"""A record's JSON text, or (the loaded base's records, its row there) when unchanged since the open."""
_MISS: Located = ("\x00".join(["", "no place"]), "", -1, -1)
"""What a record with no noted place looks up: its text is a string made here, never identical to a record's."""


@dataclass
class RecordColumns:
    """One kind's records as two parallel lists, ids and sources: what ``place_records`` takes besides (id, source)
    pairs, so a base of 100k records is not turned into 100k pairs and back."""

    ids: Sequence[str]
    sources: Sequence[RecordSource]


def utf8_len(text: str) -> int:
    """Bytes of ``text`` in UTF-8 (``str.isascii`` is O(1): no encode for the usual ASCII text)."""
    return len(text) if text.isascii() else len(text.encode("utf-8"))


@dataclass
class Placed:
    """Every record's place: row ``i`` is bytes ``[starts[i], ends[i])`` of ``names[segment[i]]``; rows by kind in order."""

    names: list[str]
    """Segment files, the base's own records file first."""
    sizes: list[int]
    """Each segment's size in bytes when the base was written (a segment never changes after)."""
    segment: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    ids: dict[str, list[str]]
    """Per kind, the record ids in row order (kinds follow the order given, lessons first as written)."""

    def arrays(self) -> dict[str, np.ndarray]:
        """The row index as arrays (``base-<id>.rows.npz``), read back by ``read_placed``."""
        out: dict[str, np.ndarray] = {
            "size": np.asarray(self.sizes[:1], dtype=np.int64),
            "segment_sizes": np.asarray(self.sizes, dtype=np.int64),
            "segment": self.segment.astype(np.int32),
            "starts": self.starts,
            "ends": self.ends,
            **pack_strings(self.names, "segments_"),
        }
        row = 0
        for kind, ids in self.ids.items():
            out[f"{kind}_rows"] = np.arange(row, row + len(ids), dtype=np.int64)
            out.update(pack_strings(ids, f"{kind}_ids_"))
            row += len(ids)
        return out


class _OwnFile:
    """The base's own records file, written ``kind \\t json(id) \\t record_json`` a line, noting each record's bytes."""

    def __init__(self, path: Path) -> None:
        self._file: BinaryIO = open(path, "wb")
        self._lines: list[str] = []
        self.size = 0

    def add(self, kind: str, quoted_id: str, text: str) -> tuple[int, int]:
        """Append one record; its JSON's byte range."""
        head = f"{kind}\t{quoted_id}\t"
        start = self.size + utf8_len(head)
        end = start + utf8_len(text)
        self.size = end + 1
        self._lines.append(f"{head}{text}\n")
        if len(self._lines) >= FLUSH_LINES:
            self.flush()
        return start, end

    def flush(self) -> None:
        self._file.write("".join(self._lines).encode("utf-8"))
        self._lines.clear()

    def close(self) -> None:
        try:
            self.flush()
        finally:
            self._file.close()


def place_records(
    folder: Path,
    own: str,
    records: Mapping[str, RecordColumns | Iterable[tuple[str, RecordSource]]],
    located: Mapping[str, Mapping[str, Located]],
    *,
    live_min: float = 0.5,
    segments_max: int = 8,
    quote: Callable[[str], str] = lambda rid: f'"{rid}"',
    by_row: bool = False,
) -> Placed:
    """Place every record of a new base: where its text already lies in the folder, else in the own file ``own``.

    A text lies in a file when it is the very string a journal line of this process holds (``located``,
    checked by identity: equal text written since would be another string) or the row of a loaded base
    whose file is still there. Then segments below ``live_min`` live bytes, or beyond ``segments_max``,
    are copied into the own file. ``by_row``: look each record up one by one (``_place_kind_reference``,
    the plain version the default ``_place_kind`` is tested against).

    Raises:
        OSError: the own file cannot be written, or a segment read.
    """
    names, seg_of = [own], {own: 0}
    ids: dict[str, list[str]] = {}
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    pending: dict[int, tuple[BaseRows, list[int], list[int]]] = {}
    out = _OwnFile(folder / own)
    place_kind = _place_kind_reference if by_row else _place_kind
    try:
        row = 0
        for kind, entries in records.items():
            if isinstance(entries, RecordColumns):
                rids, srcs = list(entries.ids), entries.sources
            else:
                pairs = list(entries)
                rids, srcs = [rid for rid, _ in pairs], [src for _, src in pairs]
            ids[kind] = rids
            parts.append(place_kind(kind, rids, srcs, located.get(kind, {}), names, seg_of, out, quote, pending, row))
            row += len(rids)
        segment, starts, ends = (np.concatenate([p[k] for p in parts]) if parts else np.zeros(0, dtype=np.int64) for k in range(3))
        placed = Placed(names, [], segment, starts, ends, ids)
        kinds = list(ids)
        row_kind = np.repeat(np.arange(len(kinds)), [len(ids[k]) for k in kinds])
        offsets = np.concatenate([[0], np.cumsum([len(ids[k]) for k in kinds])]).astype(np.int64)

        def rewrite(rows: np.ndarray, text_of: Callable[[int], str]) -> None:
            """Write rows ``rows`` into the own file, their text from ``text_of(row)``."""
            for r in rows.tolist():
                k = int(row_kind[r])
                rid = ids[kinds[k]][r - int(offsets[k])]
                placed.starts[r], placed.ends[r] = out.add(kinds[k], quote(rid), text_of(r))
                placed.segment[r] = 0

        _place_base_rows(folder, placed, seg_of, pending, rewrite)
        _fold_segments(folder, placed, live_min, segments_max, rewrite)
        out.flush()
    finally:
        out.close()
    placed.sizes = [out.size] + [os.path.getsize(folder / name) for name in placed.names[1:]]
    return placed


def _place_kind(
    kind: str, rids: list[str], srcs: Sequence[RecordSource], found: Mapping[str, Located], names: list[str],
    seg_of: dict[str, int], out: _OwnFile, quote: Callable[[str], str], pending: dict[int, tuple[BaseRows, list[int], list[int]]],
    first_row: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One kind's (segment, start, end) per record, in the order given; the records that lie in no file are written
    to ``out``, those of a loaded base noted in ``pending`` (segment -1 until ``_place_base_rows``).

    The usual record after an import is the very text the journal holds: those are matched in C-level passes
    (``map`` over ``dict.get``, ``operator.is_``), and only the others are visited one by one (0.2 s of Python
    for 100k records otherwise).
    """
    n = len(rids)
    hits = list(map(found.get, rids, repeat(_MISS)))
    same = list(map(is_, map(itemgetter(0), hits), srcs))
    hit_names = list(map(itemgetter(1), hits))
    for name in dict.fromkeys(compress(hit_names, same)):
        _segment_of(name, names, seg_of)
    segment = np.fromiter(map(seg_of.get, hit_names, repeat(-1)), dtype=np.int64, count=n)
    starts = np.fromiter(map(itemgetter(2), hits), dtype=np.int64, count=n)
    ends = np.fromiter(map(itemgetter(3), hits), dtype=np.int64, count=n)
    others = np.flatnonzero(~np.fromiter(same, dtype=bool, count=n)).tolist()
    for i in others:
        segment[i], starts[i], ends[i] = _place_one(kind, rids[i], srcs[i], out, quote, pending, first_row + i)
    return segment, starts, ends


def _place_kind_reference(
    kind: str, rids: list[str], srcs: Sequence[RecordSource], found: Mapping[str, Located], names: list[str],
    seg_of: dict[str, int], out: _OwnFile, quote: Callable[[str], str], pending: dict[int, tuple[BaseRows, list[int], list[int]]],
    first_row: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``_place_kind`` record by record: the plain version it is tested against."""
    placed: list[tuple[int, int, int]] = []
    for i, (rid, src) in enumerate(zip(rids, srcs)):
        hit = found.get(rid)
        if hit is not None and hit[0] is src:
            placed.append((_segment_of(hit[1], names, seg_of), hit[2], hit[3]))
        else:
            placed.append(_place_one(kind, rid, src, out, quote, pending, first_row + i))
    table = np.asarray(placed, dtype=np.int64).reshape(-1, 3)
    return table[:, 0].copy(), table[:, 1].copy(), table[:, 2].copy()


def _segment_of(name: str, names: list[str], seg_of: dict[str, int]) -> int:
    """The segment number of file ``name`` in the base being placed, numbering it next when it has none."""
    if name not in seg_of:
        seg_of[name] = len(names)
        names.append(name)
    return seg_of[name]


def _place_one(
    kind: str, rid: str, src: RecordSource, out: _OwnFile, quote: Callable[[str], str],
    pending: dict[int, tuple[BaseRows, list[int], list[int]]], row: int,
) -> tuple[int, int, int]:
    """(segment, start, end) of a record no journal line holds: its text written to the own file (segment 0), or its
    loaded base's row noted in ``pending`` (segment -1, placed by ``_place_base_rows``)."""
    if isinstance(src, str):  # a str subclass is written as its text
        start, end = out.add(kind, quote(rid), str(src))
        return 0, start, end
    base, base_row = src
    group = pending.setdefault(id(base), (base, [], []))
    group[1].append(row)
    group[2].append(base_row)
    return -1, 0, 0


def _place_base_rows(
    folder: Path, placed: Placed, seg_of: dict[str, int], pending: Mapping[int, tuple[BaseRows, list[int], list[int]]], rewrite: Callable[[np.ndarray, Callable[[int], str]], None]
) -> None:
    """Rows unchanged since the open, placed where the loaded base has them (one gather per base); rows whose file is
    gone (copied away by an earlier rebase of this process) are written from the base's open file instead."""
    names = placed.names
    for base, at, rows in pending.values():
        where = np.asarray(at, dtype=np.int64)
        base_rows = np.asarray(rows, dtype=np.int64)
        ours = np.full(len(where), -1, dtype=np.int64)
        if base.names:
            seg, lo, hi = base.where(base_rows)
            mapping = np.full(len(base.names), -1, dtype=np.int64)
            for k, name in enumerate(base.names):
                if (folder / name).exists():
                    mapping[k] = _segment_of(name, names, seg_of)
            ours = mapping[seg]
            placed.starts[where], placed.ends[where] = lo, hi
        placed.segment[where] = ours
        lost = ours < 0
        if np.any(lost):
            text_of = dict(zip(where[lost].tolist(), base_rows[lost].tolist()))
            rewrite(where[lost], lambda r: base.text(text_of[r]))


def _fold_segments(
    folder: Path, placed: Placed, live_min: float, segments_max: int, rewrite: Callable[[np.ndarray, Callable[[int], str]], None]
) -> None:
    """Copy the rows of mostly-dead segments (and of the smallest beyond ``segments_max``) into the own file, then
    drop the segments no row names."""
    n = len(placed.names)
    if n > 1:
        live = np.bincount(placed.segment, weights=(placed.ends - placed.starts).astype(np.float64), minlength=n)
        sizes = np.asarray([1.0] + [float(max(os.path.getsize(folder / name), 1)) for name in placed.names[1:]])
        fold = [k for k in range(1, n) if live[k] < live_min * sizes[k]]
        kept = sorted((k for k in range(1, n) if k not in fold), key=lambda k: live[k])
        fold += kept[: max(0, len(kept) - segments_max)]
        for k in fold:
            rows = np.flatnonzero(placed.segment == k)
            with open(folder / placed.names[k], "rb") as f:
                fd = f.fileno()
                spans = {r: (int(placed.starts[r]), int(placed.ends[r])) for r in rows.tolist()}
                rewrite(rows, lambda r: _read(fd, *spans[r]))
    used = sorted(set(np.unique(placed.segment).tolist()) | {0})
    if len(used) < n:
        remap = np.full(n, -1, dtype=np.int64)
        remap[used] = np.arange(len(used))
        placed.segment = remap[placed.segment]
        placed.names = [placed.names[k] for k in used]


def _read(fd: int, start: int, end: int) -> str:
    data = os.pread(fd, end - start, start)
    if len(data) != end - start:
        raise OSError("a records segment ends before a record")
    return data.decode("utf-8")


__all__ = ["BaseRows", "Located", "Placed", "RecordColumns", "RecordSource", "place_records", "utf8_len"]
