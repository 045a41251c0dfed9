"""Columnar pieces of a snapshot: many strings as one byte array, and a key -> ids index as CSR arrays.

At a million lessons the graph's head was a 250 MB JSON text, and the open decoded it and
built nine dictionaries of a million entries from it (7-8 s of an 8.7 s open,
docs/PERFORMANCE.md). Saved as arrays instead, an open reads the bytes and splits them
once; indexes that are looked up a handful of times per query (fingerprint -> lessons,
WRONG word -> rewrite lessons) stay CSR arrays, decoded per lookup, with an overlay of
the keys changed since the open (as ``store.adjacency`` keeps its rows).

Example:
    >>> unpack_strings(pack_strings(["a", "b\\nc", ""]))
    ['a', 'b\\nc', '']
"""

from __future__ import annotations

import mmap
from array import array as typed_array
import os
from itertools import chain
import struct
import zipfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Generic, TypeVar

import numpy as np
from numpy.lib import format as npy_format

V = TypeVar("V")

SEPARATORS = ("\n", "\x00", "\x1f", "\x1e")
"""Characters tried, in order, to join strings; the first that no string holds is used (else lengths are saved)."""


def pack_strings(strings: Sequence[str], prefix: str = "") -> dict[str, np.ndarray]:
    """``strings`` as arrays: their UTF-8 joined by a separator none holds (or, failing one, with their lengths).

    The keys start with ``prefix``, so several lists fit in one ``.npz``.
    """
    whole = "".join(strings)  # a separator no string holds is one the joined text does not hold: one search each
    sep = next((s for s in SEPARATORS if s not in whole), None)
    joined = (sep or "").join(strings)
    out: dict[str, np.ndarray] = {
        f"{prefix}utf8": np.frombuffer(joined.encode("utf-8"), dtype=np.uint8),
        f"{prefix}count": np.asarray([len(strings)], dtype=np.int64),
        f"{prefix}sep": np.asarray([ord(sep) if sep is not None else -1], dtype=np.int64),
    }
    if sep is None:
        out[f"{prefix}lengths"] = np.fromiter(map(len, strings), dtype=np.int64, count=len(strings))
    return out


def unpack_strings(arrays: Mapping[str, np.ndarray], prefix: str = "") -> list[str]:
    """The strings ``pack_strings`` saved.

    Raises:
        ValueError: the arrays are damaged (count or lengths do not match, bytes not UTF-8).
        KeyError: an array is missing.
    """
    text = np.asarray(arrays[f"{prefix}utf8"], dtype=np.uint8).tobytes().decode("utf-8")
    count = int(np.asarray(arrays[f"{prefix}count"])[0])
    sep = int(np.asarray(arrays[f"{prefix}sep"])[0])
    if count == 0:
        if text:
            raise ValueError("packed strings do not match their count")
        return []
    if sep >= 0:
        out = text.split(chr(sep))
    else:
        lengths = np.asarray(arrays[f"{prefix}lengths"], dtype=np.int64)
        if len(lengths) != count or int(lengths.sum()) != len(text) or (count and int(lengths.min()) < 0):
            raise ValueError("packed strings do not match their lengths")
        ends = np.cumsum(lengths).tolist()
        out = [text[e - n : e] for e, n in zip(ends, lengths.tolist())]
    if len(out) != count:
        raise ValueError("packed strings do not match their count")
    return out


class CsrIndex:
    """Key -> set of member ids: a saved base as CSR arrays over key positions, plus an overlay of changed keys.

    ``position`` gives a key's row in the base (None when the base has none), ``member`` turns a
    stored integer back into an id. The overlay holds each key changed since the base as a set and
    is authoritative for it (an empty set: no members).

    Example:
        >>> idx = CsrIndex(np.array([0, 2, 3]), np.array([7, 8, 9]), {"a": 0, "b": 1}.get, lambda n: f"l{n}")
        >>> sorted(idx.get("a")), idx.get("zz")
        (['l7', 'l8'], set())
        >>> idx.add("b", "l1"); idx.discard("a", "l7"); sorted(idx.get("b")), sorted(idx.get("a"))
        (['l1', 'l9'], ['l8'])
    """

    def __init__(
        self,
        indptr: np.ndarray | None = None,
        members: np.ndarray | None = None,
        position: Callable[[str], int | None] = lambda key: None,
        member: Callable[[int], str] = str,
        *,
        rows: tuple[Callable[[str], int], Callable[[str], int]] | None = None,
    ) -> None:
        """``rows``: (key -> its row, member -> its integer), which may give new ones; with them every change is
        also logged as integers, so a save sorts the log (``changes``) instead of walking the overlay's sets."""
        self._indptr = np.zeros(1, dtype=np.int64) if indptr is None else np.asarray(indptr, dtype=np.int64)
        self._members = np.zeros(0, dtype=np.int64) if members is None else np.asarray(members, dtype=np.int64)
        self._position, self._member = position, member
        self._overlay: dict[str, set[str]] = {}
        self._rows = rows
        self._log: _MemberLog | None = _MemberLog() if rows is not None else None
        """Every change since the base as (key row, member row, present), when ``rows`` were given."""

    @classmethod
    def from_sets(cls, sets: Mapping[str, Iterable[str]]) -> CsrIndex:
        """An index holding ``sets`` (all in the overlay: the plain form, e.g. read from an older snapshot)."""
        idx = cls()
        idx._overlay = {k: set(v) for k, v in sets.items()}
        return idx

    def _base(self, key: str) -> list[str]:
        pos = self._position(key)
        if pos is None or not 0 <= pos < len(self._indptr) - 1:
            return []
        lo, hi = int(self._indptr[pos]), int(self._indptr[pos + 1])
        return list(map(self._member, self._members[lo:hi].tolist()))

    def get(self, key: str) -> set[str]:
        """The members of ``key`` (a new set)."""
        found = self._overlay.get(key)
        return set(found) if found is not None else set(self._base(key))

    def _editable(self, key: str) -> set[str]:
        found = self._overlay.get(key)
        if found is None:
            found = self._overlay[key] = set(self._base(key))
        return found

    def add(self, key: str, member: str) -> None:
        """Add ``member`` under ``key``."""
        self._editable(key).add(member)
        self._note(key, member, 1)

    def discard(self, key: str, member: str) -> None:
        """Remove ``member`` from ``key`` if present."""
        if member in self.get(key):
            self._editable(key).discard(member)
            self._note(key, member, 0)

    def _note(self, key: str, member: str, present: int) -> None:
        if self._log is not None and self._rows is not None:
            key_row, member_row = self._rows
            self._log.note(key_row(key), member_row(member), present)

    def changes(
        self, key_row: Callable[[str], int], member_row: Callable[[str], int]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``changed_rows``' answer for ``to_csr``: from the log when the index keeps one (``rows``), else by walking the
        overlay with ``key_row`` and ``member_row``."""
        if self._log is None:
            return self.changed_rows(key_row, member_row)
        return self._logged_rows(self._log)

    def _logged_rows(self, log: _MemberLog) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(changed key rows, their sizes, their members sorted within each key, flat) from the log: each (key, member)
        pair is as its last change left it, else as the base has it. One sort for the whole log, no per-member Python.
        """
        keys, members, present = log.arrays()
        changed = np.unique(keys)
        # The base's members of the changed keys, as if added before the log began.
        in_base = changed[changed < self.keys_in_base()]
        spans, at = row_cells(self._indptr, in_base)
        all_keys = np.concatenate([np.repeat(in_base, spans), keys])
        all_members = np.concatenate([self._members[at], members])
        all_present = np.concatenate([np.ones(len(at), dtype=np.int8), present])
        order = np.lexsort((all_members, all_keys))  # stable: a pair's changes stay in the order they were made
        all_keys, all_members, all_present = all_keys[order], all_members[order], all_present[order]
        last = np.ones(len(order), dtype=bool)
        last[:-1] = (all_keys[1:] != all_keys[:-1]) | (all_members[1:] != all_members[:-1])
        kept = last & (all_present == 1)
        lens = np.bincount(np.searchsorted(changed, all_keys[kept]), minlength=len(changed)).astype(np.int64)
        return changed, lens, all_members[kept]

    def changed_rows(
        self, key_row: Callable[[str], int], member_row: Callable[[str], int]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The overlay's keys for ``to_csr``: (their rows, their sizes, their member rows sorted within each key, flat).

        ``key_row`` and ``member_row`` may assign new rows (keys first, then members). The members are sorted as
        arrays (one sort for every key: a sorted list per key took 0.1-0.2 s after a 100k import).
        """
        keys = list(self._overlay)
        sets = list(self._overlay.values())
        rows = np.fromiter(map(key_row, keys), dtype=np.int64, count=len(keys))
        lens = np.fromiter(map(len, sets), dtype=np.int64, count=len(sets))
        flat = np.fromiter(map(member_row, chain.from_iterable(sets)), dtype=np.int64, count=int(lens.sum()))
        owner = np.repeat(np.arange(len(keys), dtype=np.int64), lens)
        return rows, lens, flat[np.lexsort((flat, owner))]

    def to_csr(self, n_rows: int, changed: tuple[np.ndarray, np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """CSR arrays of ``n_rows`` rows: the base's rows as they are, gathered as arrays, and the ``changed`` rows
        (``changed_rows``) in their place. Saving thus costs what changed since the base, not the whole index."""
        base = self.keys_in_base()
        if base > n_rows:
            raise ValueError("fewer rows than the base has")
        rows, row_lens, flat = changed
        indptr, gather = replaced_rows_layout(self._indptr, n_rows, rows, row_lens, len(self._members))
        return indptr, np.concatenate([self._members, flat])[gather]

    def keys_in_base(self) -> int:
        """Rows of the saved base (the overlay aside)."""
        return len(self._indptr) - 1

    def items(self, base_keys: Iterable[tuple[str, int]]) -> Iterator[tuple[str, set[str]]]:
        """Every non-empty (key, members): the overlay's keys, then ``base_keys`` ((key, row) pairs of the base) not overridden."""
        for key, found in self._overlay.items():
            if found:
                yield key, set(found)
        for key, _ in base_keys:
            if key not in self._overlay:
                found_base = self._base(key)
                if found_base:
                    yield key, set(found_base)


def row_cells(indptr: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The length of each of ``rows`` in a CSR (``indptr``), and the positions of their cells, row after row."""
    spans = indptr[rows + 1] - indptr[rows]
    at = np.repeat(indptr[rows] - np.cumsum(spans) + spans, spans) + np.arange(int(spans.sum()), dtype=np.int64)
    return spans, at


def replaced_rows_layout(
    indptr: np.ndarray, n_rows: int, rows: np.ndarray, row_lens: np.ndarray, appended_after: int
) -> tuple[np.ndarray, np.ndarray]:
    """A CSR of ``n_rows`` rows whose ``rows`` are replaced: (its indptr, the position of each of its cells in the old
    cells followed by the new ones).

    The other rows keep the old CSR's cells (``indptr``; rows past it are empty); the new cells of ``rows`` follow the
    old source's ``appended_after`` cells, row after row, ``row_lens`` each. One gather places every row.
    """
    base = len(indptr) - 1
    lens = np.zeros(n_rows, dtype=np.int64)
    starts = np.zeros(n_rows, dtype=np.int64)
    lens[:base] = np.diff(indptr)
    starts[:base] = indptr[:-1]
    lens[rows] = row_lens
    starts[rows] = appended_after + np.cumsum(row_lens) - row_lens
    out = np.concatenate([np.zeros(1, dtype=np.int64), np.cumsum(lens)])
    gather = np.repeat(starts - out[:-1], lens) + np.arange(int(out[-1]), dtype=np.int64)
    return out, gather


class _MemberLog:
    """A ``CsrIndex``'s changes since its base, as typed arrays: (key row, member row, 1 added / 0 removed)."""

    def __init__(self) -> None:
        self._keys, self._members, self._present = typed_array("q"), typed_array("q"), typed_array("b")

    def note(self, key: int, member: int, present: int) -> None:
        self._keys.append(key)
        self._members.append(member)
        self._present.append(present)

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(keys, members, present) as numpy arrays (copies: the log may grow again)."""
        return (np.array(self._keys, dtype=np.int64), np.array(self._members, dtype=np.int64),
                np.array(self._present, dtype=np.int8))


LOCAL_HEADER = 30
"""Bytes of a zip member's local header before its name and extra field (the zip format's fixed part)."""


def load_npz_mapped(path: Path) -> dict[str, np.ndarray]:
    """The arrays of an uncompressed ``.npz`` (as ``np.savez`` writes it), memory-mapped read-only where they can be.

    ``np.load`` copies every member through the zip reader and checks its CRC (~1 s for the 400 MB
    of a million lessons' graph); mapped, an open reads none of it, and the pages an array keeps
    resident are only those read (file pages, which the kernel may drop again). A member that is
    compressed or not a plain array is read by ``np.load``. The arrays' shapes and values are checked
    by their readers, as before.

    Raises:
        OSError, ValueError, zipfile.BadZipFile: the file is not such an archive.
    """
    out: dict[str, np.ndarray] = {}
    with zipfile.ZipFile(path) as archive, open(path, "rb") as f:
        whole = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if os.fstat(f.fileno()).st_size else b""
        for info in archive.infolist():
            name = info.filename.removesuffix(".npy")
            if info.compress_type != zipfile.ZIP_STORED:
                out[name] = np.load(archive.open(info), allow_pickle=False)
                continue
            f.seek(info.header_offset)
            fixed = f.read(LOCAL_HEADER)
            if len(fixed) != LOCAL_HEADER or fixed[:4] != b"PK\x03\x04":
                raise ValueError(f"{path.name}: a member's header is damaged")
            name_len, extra_len = struct.unpack("<HH", fixed[26:30])
            start = info.header_offset + LOCAL_HEADER + name_len + extra_len
            f.seek(start)
            version = npy_format.read_magic(f)
            shape, fortran, dtype = (
                npy_format.read_array_header_1_0(f) if version == (1, 0) else npy_format.read_array_header_2_0(f)
            )
            if dtype.hasobject:
                raise ValueError(f"{path.name}: {name} holds objects")
            size = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
            if f.tell() + size > start + info.file_size:
                raise ValueError(f"{path.name}: {name} is shorter than its header says")
            if size == 0:
                out[name] = np.zeros(shape, dtype=dtype)
                continue
            flat = np.frombuffer(whole, dtype=dtype, count=size // dtype.itemsize, offset=f.tell())
            out[name] = flat.reshape(shape, order="F" if fortran else "C")
    return out


def release_pages(arrays: Mapping[str, np.ndarray]) -> int:
    """Let the pages of mapped arrays (``load_npz_mapped``) that checks read go from the process's resident set;
    they stay in the page cache, and the few a lookup reads later come back on their own. Returns the maps released."""
    done: set[int] = set()
    for array in arrays.values():
        base: object = array
        while isinstance(base, (np.ndarray, memoryview)):
            base = base.obj if isinstance(base, memoryview) else base.base
        if isinstance(base, mmap.mmap) and id(base) not in done and hasattr(mmap, "MADV_DONTNEED"):
            done.add(id(base))
            base.madvise(mmap.MADV_DONTNEED)
    return len(done)


_ABSENT = object()


class LayeredMap(Generic[V]):
    """A dict over a read-only base mapping shared with others: reads fall through to the base, writes and deletes
    stay here, and iteration gives the order a copied dict would (base keys in place, re-added keys at the end).

    The records' id -> row map of a snapshot (a million entries) is the base of the lesson table,
    the lesson index and the vectors at once, instead of one copy each (~0.5-0.7 s apiece at a
    million lessons); as ``LayeredMap[int]`` it is the index's and the vectors' id -> row map.

    Example:
        >>> m = LayeredMap({"a": 0, "b": 1})
        >>> m["c"] = "x"; del m["a"]; m["b"] = "y"; m["a"] = "z"
        >>> list(m), m.get("b"), len(m)
        (['b', 'c', 'a'], 'y', 3)
    """

    def __init__(self, base: Mapping[str, V] | None = None) -> None:
        self._base: Mapping[str, V] = base if base is not None else {}
        self._set: dict[str, V] = {}
        self._removed: set[str] = set()
        """Base keys deleted (and, if set again, placed at the end)."""
        self._len = len(self._base)

    def get(self, key: str, default: V | None = None) -> V | None:
        found = self._set.get(key, _ABSENT)
        if found is not _ABSENT:
            return found  # type: ignore[return-value]
        if key in self._removed:
            return default
        return self._base.get(key, default)

    def __getitem__(self, key: str) -> V:
        found = self._set.get(key, _ABSENT)
        if found is not _ABSENT:
            return found  # type: ignore[return-value]
        if key in self._removed:
            raise KeyError(key)
        return self._base[key]

    def values_of(self, keys: Sequence[str]) -> list[V]:
        """``self[key]`` of each key, in one pass.

        Raises:
            KeyError: a key is not here.
        """
        over, base, removed = self._set, self._base, self._removed
        if removed and any(k in removed and k not in over for k in keys):
            raise KeyError(next(k for k in keys if k in removed and k not in over))
        return [over[k] if k in over else base[k] for k in keys]

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and (key in self._set or (key not in self._removed and key in self._base))

    def __setitem__(self, key: str, value: V) -> None:
        if key not in self:
            self._len += 1
        self._set[key] = value

    def __delitem__(self, key: str) -> None:
        if key not in self:
            raise KeyError(key)
        self._set.pop(key, None)
        if key in self._base:
            self._removed.add(key)
        self._len -= 1

    def pop(self, key: str, default: V | None = None) -> V | None:
        """Remove ``key``; its value, or ``default``."""
        if key not in self:
            return default
        found = self[key]
        del self[key]
        return found

    def __iter__(self) -> Iterator[str]:
        removed, base = self._removed, self._base
        kept: Iterable[str] = (k for k in base if k not in removed) if removed else base
        return chain(kept, (k for k in self._set if k in removed or k not in base))

    def __len__(self) -> int:
        return self._len


def csr_from_sets(rows: Iterable[tuple[int, Iterable[int]]], n_rows: int) -> tuple[np.ndarray, np.ndarray]:
    """CSR arrays (indptr of ``n_rows + 1``, members sorted within a row) from (row, members) pairs."""
    counts = np.zeros(n_rows, dtype=np.int64)
    parts: list[tuple[int, list[int]]] = []
    for row, members in rows:
        found = sorted(set(members))
        counts[row] += len(found)
        parts.append((row, found))
    parts.sort(key=lambda p: p[0])
    indptr = np.concatenate([np.zeros(1, dtype=np.int64), np.cumsum(counts)])
    flat = [m for _, found in parts for m in found]
    return indptr, np.asarray(flat, dtype=np.int64)


__all__ = [
    "CsrIndex", "LayeredMap", "csr_from_sets", "load_npz_mapped", "pack_strings", "release_pages", "replaced_rows_layout",
    "row_cells", "unpack_strings",
]
