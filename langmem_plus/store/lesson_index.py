"""Lesson indexes that keep ``end_run``'s work in step with the run's change, not the store.

``LessonIndex`` holds, per lesson id, in flat arrays by row (rows in the order the
memory's lesson table holds its lessons, so a subset found here can be put back in
that order and every decision is taken in the order a full scan would take it):

* its status, and how many lessons each status has, kept in step with every write,
  so ``lessons_by_status`` counts nothing;
* the run at which the unused-lesson sweep could next change it (its "due" run), in
  buckets by that run, so a sweep looks only at the lessons due by the current run;
* its SimHash, in bands (``plan_bands``), so the lessons within a Hamming distance of
  a hash are found by a few binary searches instead of a scan.

The memory computes each lesson's hash and due run (``learning.incremental``) and calls
``put`` on every write; nothing here reads a lesson or knows the lifecycle rules.
``to_state`` / ``from_state`` save and load the arrays with the snapshot.

Example:
    >>> idx = LessonIndex(bits=64, max_distance=3, bands=4)
    >>> idx.put("a", "candidate", 0b1011, due=60)
    >>> idx.put("b", "promoted", 0b1011 ^ (1 << 40), due=None)
    >>> idx.put("c", "promoted", 0b1011 ^ 0b1111 << 20, due=None)
    >>> idx.near(0b1011), idx.due_by(59), idx.due_by(60), idx.counts()["promoted"]
    (['a', 'b'], [], ['a'], 2)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from langmem_plus.records import LESSON_STATUSES
from langmem_plus.store.columns import LayeredMap

DUE_NOW = -(1 << 62)
"""Due run of a lesson the next sweep changes whatever the run (its evidence already decides)."""
_NEVER = 1 << 62
"""Stored due run of a lesson no sweep changes (archived, suppressed, or reliable enough)."""
RESORT_SHARE = 0.05
"""The bands' sorted arrays are rebuilt once more than this share of rows changed hash since
(the changed rows are checked directly meanwhile), as ``store.adjacency`` does with its CSR rows."""
RESORT_MIN = 256
"""...and at least this many rows, so a small store is not re-sorted on every write."""
_CODES: dict[str, int] = {status: code for code, status in enumerate(LESSON_STATUSES)}


def plan_bands(bits: int, max_distance: int, bands: int) -> tuple[tuple[int, int], ...] | None:
    """(shift, width) of each band of a ``bits``-wide hash, or None when only a scan is exact.

    Two hashes within ``max_distance`` differing bits leave at least one of
    ``max_distance + 1`` disjoint bands untouched (pigeonhole), so they agree on it
    exactly: looking up each band of a hash finds every hash that near, and more. The
    plan uses ``max(bands, max_distance + 1)`` bands of near-equal width; when that is
    more bands than bits, no banding guarantees it and the caller scans.

    Example:
        >>> plan_bands(64, 3, 4)
        ((0, 16), (16, 16), (32, 16), (48, 16))
        >>> plan_bands(64, 5, 4)[:2], plan_bands(16, 20, 4)
        (((0, 11), (11, 11)), None)
    """
    need = max(bands, max_distance + 1)
    if need > bits:
        return None
    width, extra = divmod(bits, need)
    out: list[tuple[int, int]] = []
    shift = 0
    for b in range(need):
        w = width + (1 if b < extra else 0)
        out.append((shift, w))
        shift += w
    return tuple(out)


class LessonIndex:
    """Status counts, sweep due runs and SimHash bands of one namespace's lessons (see module doc).

    Args:
        bits: SimHash width (``MemoryConfig.lifecycle.simhash_bits``).
        max_distance: Near-duplicate threshold in bits (``MemoryConfig.lifecycle.dedup_max_hamming``).
        bands: Bands wanted (``MemoryConfig.lifecycle.dedup_simhash_bands``); raised as ``plan_bands`` says.
    """

    def __init__(self, *, bits: int, max_distance: int, bands: int) -> None:
        self.plan = plan_bands(bits, max_distance, bands)
        """The bands, or None: ``near`` then checks every lesson (still exact, not fast)."""
        self.max_distance = max_distance
        self._rows = LayeredMap[int]()
        """Id -> row (over the open's shared lesson order when loaded from a snapshot)."""
        self._ids: list[str] = []
        self._hash = np.zeros(0, dtype=np.uint64)
        self._due = np.zeros(0, dtype=np.int64)
        self._status = np.zeros(0, dtype=np.int8)
        """Status code by row; -1 for a removed lesson's row."""
        self._counts = [0] * len(LESSON_STATUSES)
        self._buckets: dict[int, set[int]] = {}
        """Due run -> rows due then (finite due runs only)."""
        self._sorted: list[tuple[np.ndarray, np.ndarray]] | None = None
        """Per band: the band values of rows ``[0, len)`` sorted, and their rows."""
        self._fresh: set[int] = set()
        """Rows whose hash changed (or that were added) since the bands were sorted."""
        self.touched = 0
        """Rows handed out by ``near``, ``due_by`` and ``rows_in_order`` (an operation count for tests)."""

    # ---- writes ---------------------------------------------------------------

    def put(self, lesson_id: str, status: str, simhash: int, due: int | None) -> None:
        """Add or update a lesson: its status, SimHash and due run (None: no sweep changes it)."""
        row = self._rows.get(lesson_id)
        if row is None:
            row = self._append(lesson_id)
        else:
            self._forget_row(row)
            if int(self._hash[row]) != simhash:
                self._fresh.add(row)
        code = _CODES[status]
        self._status[row] = code
        self._counts[code] += 1
        self._hash[row] = simhash
        stored = _NEVER if due is None else due
        self._due[row] = stored
        if stored != _NEVER:
            self._buckets.setdefault(stored, set()).add(row)

    def remove(self, lesson_id: str) -> None:
        """Forget a lesson; its row stays as a tombstone (a re-added id gets a new row, as a table appends it)."""
        row = self._rows.pop(lesson_id, None)
        if row is not None:
            self._forget_row(row)
            self._status[row] = -1
            self._fresh.discard(row)

    def _append(self, lesson_id: str) -> int:
        row = len(self._ids)
        if row >= len(self._hash):
            size = max(1024, 2 * len(self._hash))
            self._hash = np.resize(self._hash, size)
            self._due = np.resize(self._due, size)
            self._status = np.resize(self._status, size)
        self._status[row] = -1
        self._ids.append(lesson_id)
        self._rows[lesson_id] = row
        self._fresh.add(row)
        return row

    def _forget_row(self, row: int) -> None:
        """Take a live row out of the counts and its due bucket (before an update or removal)."""
        code = int(self._status[row])
        if code < 0:
            return
        self._counts[code] -= 1
        due = int(self._due[row])
        rows = self._buckets.get(due)
        if rows is not None:
            rows.discard(row)
            if not rows:
                del self._buckets[due]

    # ---- reads ----------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._rows)

    def __contains__(self, lesson_id: object) -> bool:
        return lesson_id in self._rows

    def counts(self) -> dict[str, int]:
        """Lessons per status, every status present (zero included)."""
        return {status: self._counts[code] for status, code in _CODES.items()}

    def status_of(self, lesson_id: str) -> str | None:
        """A lesson's indexed status, or None."""
        row = self._rows.get(lesson_id)
        return None if row is None else LESSON_STATUSES[int(self._status[row])]

    def hash_of(self, lesson_id: str) -> int | None:
        """A lesson's indexed SimHash, or None."""
        row = self._rows.get(lesson_id)
        return None if row is None else int(self._hash[row])

    def due_of(self, lesson_id: str) -> int | None:
        """A lesson's indexed due run (``DUE_NOW`` for any run, None for never)."""
        row = self._rows.get(lesson_id)
        if row is None:
            return None
        due = int(self._due[row])
        return None if due == _NEVER else due

    def row_of(self, lesson_id: str) -> int | None:
        """A lesson's row: its position in the table's order (rows only grow)."""
        return self._rows.get(lesson_id)

    def due_by(self, run_seq: int) -> list[str]:
        """Ids of the lessons whose due run is ``run_seq`` or earlier, in row order."""
        rows = sorted(r for due, found in self._buckets.items() if due <= run_seq for r in found)
        self.touched += len(rows)
        return [self._ids[r] for r in rows]

    def near(self, simhash: int) -> list[str]:
        """Ids of the lessons whose SimHash is within ``max_distance`` bits of ``simhash``, in row order.

        Every band value of ``simhash`` is looked up in that band's sorted values (rows
        whose hash changed since the sort are compared directly), then the distance of
        each row found is checked; with no plan, every row is checked.
        """
        n = len(self._ids)
        if self.plan is None:
            rows = np.flatnonzero(self._status[:n] >= 0)
        else:
            rows = np.fromiter(self._near_rows(simhash, n), dtype=np.int64)
        close = rows[np.bitwise_count(self._hash[rows] ^ np.uint64(simhash)) <= self.max_distance]
        self.touched += len(close)
        return [self._ids[r] for r in sorted(close.tolist())]

    def _near_rows(self, simhash: int, n: int) -> set[int]:
        assert self.plan is not None  # checked by the caller
        if self._sorted is None or len(self._fresh) > max(RESORT_MIN, RESORT_SHARE * n):
            self._resort(n)
        assert self._sorted is not None
        found: set[int] = set()
        h = np.uint64(simhash)
        for (shift, width), (values, rows) in zip(self.plan, self._sorted):
            key = values.dtype.type((h >> np.uint64(shift)) & np.uint64((1 << width) - 1))
            lo, hi = np.searchsorted(values, key, "left"), np.searchsorted(values, key, "right")
            found.update(rows[lo:hi].tolist())
        found -= self._fresh  # their sorted values may be stale: compared below
        if self._fresh:
            fresh = np.fromiter(self._fresh, dtype=np.int64, count=len(self._fresh))
            diff = self._hash[fresh] ^ h
            hit = np.zeros(len(fresh), dtype=bool)
            for shift, width in self.plan:
                hit |= ((diff >> np.uint64(shift)) & np.uint64((1 << width) - 1)) == 0
            found.update(fresh[hit].tolist())
        return {r for r in found if self._status[r] >= 0}

    def _resort(self, n: int) -> None:
        self._sorted = []
        for (_, width), values in zip(self.plan or (), self._band_values(self._hash[:n])):
            order = np.argsort(values, kind="stable")
            self._sorted.append((_narrow(values[order], width), order))
        self._fresh.clear()

    def rows_in_order(self, ids: Iterable[str]) -> list[str]:
        """``ids`` sorted by row (the table's order); ids not indexed come last, in the order given."""
        known, unknown = [], []
        for i in dict.fromkeys(ids):
            row = self._rows.get(i)
            if row is None:
                unknown.append(i)
            else:
                known.append((row, i))
        known.sort()
        self.touched += len(known)
        return [i for _, i in known] + unknown

    # ---- snapshot -------------------------------------------------------------

    def to_arrays(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The status codes, hashes and due runs of ``ids`` (all indexed), aligned with them, and the bands' sort.

        The bands' sort order is saved too (``band_rows``, one row of positions per band,
        with the ``band_plan`` it is for), so the first lookup after an open does not sort
        (~0.1 s at 100k lessons).
        """
        if self._ids == ids:  # ids in the index's own order (a list compared in C, by identity first): row = position
            rows = np.arange(len(ids), dtype=np.int64)
        else:
            rows = np.fromiter((self._rows[i] for i in ids), dtype=np.int64, count=len(ids))
        out: dict[str, np.ndarray] = {"status": self._status[rows], "hash": self._hash[rows], "due": self._due[rows]}
        if self.plan is not None:
            out["band_plan"] = np.asarray(self.plan, dtype=np.int64).reshape(len(self.plan), 2)
            out["band_rows"] = np.vstack([np.argsort(v, kind="stable") for v in self._band_values(out["hash"])])
        return out

    def _band_values(self, hashes: np.ndarray) -> list[np.ndarray]:
        """Each band's value of each hash."""
        assert self.plan is not None  # checked by the callers
        return [(hashes >> np.uint64(shift)) & np.uint64((1 << width) - 1) for shift, width in self.plan]

    @classmethod
    def from_arrays(
        cls, ids: Sequence[str], arrays: dict[str, Any], *, bits: int, max_distance: int, bands: int,
        rows: Mapping[str, int] | None = None,
    ) -> LessonIndex:
        """The index ``to_arrays`` saved for ``ids``.

        ``rows``: ``ids``' positions (id -> position in ``ids``), when the caller has them already:
        kept as the index's base map, read only, instead of building its own.

        Raises:
            ValueError, KeyError: the arrays do not match the ids (the caller rebuilds).
        """
        status = np.asarray(arrays["status"], dtype=np.int8)
        hashes = np.asarray(arrays["hash"], dtype=np.uint64)
        due = np.asarray(arrays["due"], dtype=np.int64)
        n = len(ids)
        if not len(status) == len(hashes) == len(due) == n:
            raise ValueError("the lesson index does not match the lessons")
        if n and (status.min() < 0 or status.max() >= len(LESSON_STATUSES)):
            raise ValueError("the lesson index holds an unknown status")
        idx = cls(bits=bits, max_distance=max_distance, bands=bands)
        idx._ids = list(ids)
        idx._rows = LayeredMap[int](rows if rows is not None else dict(zip(idx._ids, range(n))))
        if len(idx._rows) != n:
            raise ValueError("the lesson index repeats an id")
        idx._status, idx._hash, idx._due = status.copy(), hashes.copy(), due.copy()
        idx._counts = np.bincount(status, minlength=len(LESSON_STATUSES)).tolist() if n else idx._counts
        finite = np.flatnonzero(due != _NEVER)
        order = finite[np.argsort(due[finite], kind="stable")]
        values, starts = np.unique(due[order], return_index=True)
        idx._buckets = {v: set(part.tolist()) for v, part in zip(values.tolist(), np.split(order, starts[1:]))}
        idx._fresh = set()
        idx._sorted = idx._saved_sort(arrays, n)
        return idx

    def _saved_sort(self, arrays: dict[str, Any], n: int) -> list[tuple[np.ndarray, np.ndarray]] | None:
        """The bands' sort saved by ``to_arrays``, if it is for this plan and checks out; else None (sorted when needed)."""
        if self.plan is None or "band_rows" not in arrays or "band_plan" not in arrays:
            return None
        plan = np.asarray(arrays["band_plan"], dtype=np.int64)
        order = np.asarray(arrays["band_rows"], dtype=np.int64)
        if plan.shape != (len(self.plan), 2) or [tuple(p) for p in plan.tolist()] != list(self.plan):
            return None
        if order.shape != (len(self.plan), n):
            raise ValueError("the saved band order does not match the lessons")
        out = []
        for (_, width), values, rows in zip(self.plan, self._band_values(self._hash[:n]), order):
            if n and (rows.min() < 0 or rows.max() >= n or np.any(values[rows][1:] < values[rows][:-1])
                      or np.bincount(rows, minlength=n).max() != 1):
                raise ValueError("the saved band order is not a sort of the hashes")
            out.append((_narrow(values[rows], width), rows))
        return out


def _narrow(values: np.ndarray, width: int) -> np.ndarray:
    """Band values in the smallest unsigned type of ``width`` bits (16-bit bands: a quarter of the memory of uint64)."""
    return values.astype(np.min_scalar_type((1 << width) - 1), copy=False)


__all__ = ["DUE_NOW", "RESORT_MIN", "RESORT_SHARE", "LessonIndex", "plan_bands"]
