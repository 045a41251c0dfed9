"""Undirected weighted adjacency of the lesson graph, as CSR arrays plus an overlay of changed rows.

PageRank needs only "which neighbours, with what summed weight", in both directions.
``Adjacency`` keeps that as a CSR snapshot (``indptr``, ``neighbours``, ``counts``,
``weights`` numpy arrays over integer node ids) so that

* the edges among a neighbourhood of a few hundred nodes are gathered with a handful
  of vectorised operations instead of a Python loop over every adjacency entry;
* the whole structure saves and loads as a few arrays (``to_state`` / ``from_state``):
  opening a 100k-lesson store does not rebuild 600k dictionary cells.

Rows changed since the snapshot live in an overlay of dictionaries (node -> neighbour
-> [edge count, summed weight]) that is authoritative for those nodes; the snapshot is
rebuilt when more than ``REBUILD_SHARE`` of the nodes are in the overlay, so it stays
in step with writes at a bounded, amortised cost.

Hubs (a tool or tag node touches thousands of lessons) are never scanned: an edge to
a hub is found from its other end, whose adjacency is short.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Mapping, Sequence
from itertools import chain, repeat
from typing import Any

import numpy as np

from langmem_plus.store.columns import replaced_rows_layout, row_cells

REBUILD_SHARE = 0.05
"""Share of overlay (changed) nodes above which the CSR snapshot is rebuilt (amortises the rebuild over writes)."""
REBUILD_MIN = 256
"""Changed nodes always tolerated before a rebuild, so small graphs do not rebuild on every write."""

Entries = tuple[np.ndarray, np.ndarray, np.ndarray]
Row = dict[str, list[float]]


def _empty_entries() -> Entries:
    return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0)


class Adjacency:
    """Symmetric adjacency: node -> neighbour -> [edge count, summed weight].

    Example:
        >>> a = Adjacency()
        >>> a.adjust("lesson:x", "tag:t", 1, 1.0)
        >>> a.compact()
        >>> a.fanout("tag:t"), a.neighbours("tag:t"), a.weight("tag:t", "lesson:x")
        (1, ['lesson:x'], 1.0)
    """

    def __init__(self) -> None:
        self._ids: dict[str, int] = {}
        self._names: list[str] = []
        self._overlay: dict[str, Row] = {}
        """Rows changed since the snapshot; authoritative for their nodes (an empty row: no neighbours)."""
        self._indptr = np.zeros(1, dtype=np.int64)
        self._neighbours = np.zeros(0, dtype=np.int64)
        self._counts = np.zeros(0, dtype=np.int64)
        self._weights = np.zeros(0, dtype=np.float64)
        self._snapshot_n = 0
        self._pos = np.zeros(0, dtype=np.int64)
        self._log = _EdgeLog()
        """Every ``adjust`` since the snapshot, as arrays: ``compact`` folds it with numpy instead of walking the overlay."""

    # ---- reads ----------------------------------------------------------------

    def _span(self, node: str) -> tuple[int, int]:
        gid = self._ids.get(node)
        return (0, 0) if gid is None else self._span_of_id(gid)

    def _span_of_id(self, gid: int) -> tuple[int, int]:
        """Node ``gid``'s range in the snapshot's CSR arrays (empty past the snapshot)."""
        if gid >= self._snapshot_n:
            return 0, 0
        return int(self._indptr[gid]), int(self._indptr[gid + 1])

    def row(self, node: str) -> Mapping[str, list[float]]:
        """``node``'s neighbours with [edge count, weight]; read it, do not change it."""
        found = self._overlay.get(node)
        if found is not None:
            return found
        start, end = self._span(node)
        names = self._names
        return {
            names[j]: [float(c), float(w)]
            for j, c, w in zip(
                self._neighbours[start:end].tolist(), self._counts[start:end].tolist(), self._weights[start:end].tolist()
            )
        }

    def neighbours(self, node: str) -> list[str]:
        """Names of ``node``'s neighbours."""
        found = self._overlay.get(node)
        if found is not None:
            return list(found)
        start, end = self._span(node)
        names = self._names
        return [names[j] for j in self._neighbours[start:end].tolist()]

    def neighbour_chunks(self, node: str, size: int = 128) -> Iterator[list[str]]:
        """``node``'s neighbours in pieces of ``size`` names: a walk that stops early never names a hub's thousands."""
        found = self._overlay.get(node)
        if found is not None:
            yield list(found)
            return
        start, end = self._span(node)
        names = self._names
        for lo in range(start, end, size):
            yield list(map(names.__getitem__, self._neighbours[lo : min(end, lo + size)].tolist()))

    def neighbour_id_chunks(self, gid: int, size: int = 128) -> Iterator[np.ndarray]:
        """``neighbour_chunks`` of the node with id ``gid``, as arrays of node ids: no neighbour is named."""
        if self._overlay:
            found = self._overlay.get(self._names[gid])
            if found is not None:
                yield np.fromiter(map(self._ids.__getitem__, found), dtype=np.int64, count=len(found))
                return
        start, end = self._span_of_id(gid)
        for lo in range(start, end, size):
            yield self._neighbours[lo : min(end, lo + size)]

    def fanout_of_id(self, gid: int) -> int:
        """``fanout`` of the node with id ``gid``."""
        if self._overlay:
            found = self._overlay.get(self._names[gid])
            if found is not None:
                return len(found)
        start, end = self._span_of_id(gid)
        return end - start

    def fanout(self, node: str) -> int:
        """Distinct neighbours of ``node``, in O(1)."""
        found = self._overlay.get(node)
        if found is not None:
            return len(found)
        start, end = self._span(node)
        return end - start

    def weight(self, u: str, v: str) -> float | None:
        """Summed weight between ``u`` and ``v``; None when they are not adjacent."""
        found = self._overlay.get(u)
        if found is not None:
            cell = found.get(v)
            return None if cell is None else cell[1]
        start, end = self._span(u)
        gid = self._ids.get(v)
        if gid is None or start == end:
            return None
        hit = np.flatnonzero(self._neighbours[start:end] == gid)
        return float(self._weights[start + int(hit[0])]) if hit.size else None

    def nodes(self) -> Iterator[str]:
        """Every node with at least one neighbour."""
        for node in self._names:
            if self.fanout(node) > 0:
                yield node

    def as_dict(self) -> dict[str, dict[str, list[float]]]:
        """The whole adjacency as dictionaries (tests and debugging; O(edges))."""
        return {node: dict(self.row(node)) for node in self.nodes()}

    def gid(self, node: str) -> int | None:
        """``node``'s integer id (stable for the adjacency's life and across ``to_state``), None when unknown."""
        return self._ids.get(node)

    def node_count(self) -> int:
        """Nodes with an integer id (with or without neighbours)."""
        return len(self._names)

    def name(self, gid: int) -> str:
        """The node of integer id ``gid``."""
        return self._names[gid]

    # ---- writes ---------------------------------------------------------------

    def intern(self, node: str) -> int:
        """``node``'s integer id, giving it one (and no neighbours) when it has none: columns by node id need one."""
        gid = self._ids.get(node)
        if gid is None:
            gid = self._ids[node] = len(self._names)
            self._names.append(node)
        return gid

    def _editable(self, node: str) -> Row:
        row = self._overlay.get(node)
        if row is None:
            row = self._overlay[node] = {k: list(v) for k, v in self.row(node).items()}
            self.intern(node)
        return row

    def adjust(self, u: str, v: str, edges: int, weight: float) -> None:
        """``edges`` more (or fewer) edges between ``u`` and ``v`` carrying ``weight`` more weight."""
        if u == v:
            return
        for a, b in ((u, v), (v, u)):
            row = self._editable(a)
            cell = row.get(b)
            if cell is None:
                cell = row[b] = [0.0, 0.0]
            else:
                self._log.repeats = True  # a cell changed again: the log's entries must be summed per cell
            cell[0] += edges
            cell[1] += weight
            if cell[0] <= 0:
                del row[b]
                self._log.ok = False  # a removed cell starts again from zero: only the overlay has that right
        if self._log.ok:
            self._log.note(self._ids[u], self._ids[v], edges, weight)

    # ---- snapshot -------------------------------------------------------------

    def compact(self) -> None:
        """Rebuild the CSR snapshot from the old snapshot and the overlay (on load, save, and when too many rows changed).

        The overlay's cells are flattened in one pass and every row, old or changed, is
        then placed by one gather over both sources (``_compact_reference`` is the plain
        row-by-row version it is tested against).
        """
        if self._log.ok and self._compact_log():
            return
        n = len(self._names)
        ids = self._ids
        changed = [(ids[node], row) for node, row in self._overlay.items()]
        rows = [row for _, row in changed]
        gids = np.fromiter((gid for gid, _ in changed), dtype=np.int64, count=len(changed))
        row_lens = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
        cells = int(row_lens.sum())
        # One gather over the combined source (old CSR entries, then the overlay's cells).
        indptr, gather = replaced_rows_layout(self._indptr, n, gids, row_lens, len(self._neighbours))
        new_nbrs = np.fromiter(map(ids.__getitem__, chain.from_iterable(rows)), dtype=np.int64, count=cells)
        new_cells = np.fromiter(
            chain.from_iterable(chain.from_iterable(row.values() for row in rows)), dtype=np.float64, count=2 * cells
        ).reshape(-1, 2)
        self._set_csr(
            indptr,
            np.concatenate([self._neighbours, new_nbrs])[gather],
            np.concatenate([self._counts, new_cells[:, 0].astype(np.int64)])[gather],
            np.concatenate([self._weights, new_cells[:, 1]])[gather],
        )
        self._overlay.clear()

    def _compact_log(self) -> bool:
        """``compact`` from the edge log (``_csr_from_log``); False (nothing done) when the log does not describe the overlay."""
        found = self._csr_from_log()
        if found is None:
            return False
        self._set_csr(*found)
        self._overlay.clear()
        return True

    def _csr_from_log(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
        """The CSR arrays ``compact`` would make, from the edge log instead of the overlay's dictionaries (state unchanged);
        None when the log does not describe the overlay.

        Every cell of a changed row is its old CSR value (if any) plus the log's deltas for it, summed in the order
        they were made (``np.bincount`` adds sequentially, so the floats equal the overlay's), and its place in the
        row is its first appearance: the old CSR cells in their order, then new cells as the log met them, which is
        the overlay dictionary's insertion order. Valid while no cell was removed (``adjust`` marks the log then).
        A 1M-cell overlay (a 100k import): 1.1 s walking the dictionaries, 0.4 s this way.
        """
        if not self._log.ok:
            return None
        u, v, d_counts, d_weights = self._log.arrays()
        n, old_n, old_total = len(self._names), self._snapshot_n, len(self._neighbours)
        touched = np.flatnonzero(np.bincount(np.concatenate([u, v]), minlength=n))
        if len(touched) != len(self._overlay):
            return None
        # The old CSR cells of the touched rows, in CSR order (their place is their CSR position).
        old_rows = touched[touched < old_n]
        spans, at = row_cells(self._indptr, old_rows)
        # Entries in the order they were made: the old cells, then each call's two directions (a call's two entries
        # lie in different rows), so a stable sort by cell keeps every cell's entries in that order.
        step = np.repeat(np.arange(len(u), dtype=np.int64) + old_total, 2)
        cell_row = np.concatenate([np.repeat(old_rows, spans), np.stack([u, v], axis=1).ravel()])
        cell_col = np.concatenate([self._neighbours[at], np.stack([v, u], axis=1).ravel()])
        place = np.concatenate([at, step])
        counts = np.concatenate([self._counts[at].astype(np.float64), np.repeat(d_counts, 2)])
        weights = np.concatenate([self._weights[at], np.repeat(d_weights, 2)])
        if self._log.repeats:
            c_row, c_col, summed_counts, summed_weights = _sum_cells(cell_row, cell_col, place, counts, weights, n, old_total + len(u))
        else:  # every entry is a cell of its own, already in place order: a stable sort by row alone (an import's case)
            by_row = np.argsort(cell_row, kind="stable")
            c_row, c_col = cell_row[by_row], cell_col[by_row]
            summed_counts, summed_weights = counts[by_row], weights[by_row] + 0.0  # + 0.0: as a sum from zero (no -0.0)
        indptr, gather = replaced_rows_layout(self._indptr, n, touched, np.bincount(c_row, minlength=n)[touched], old_total)
        return (
            indptr,
            np.concatenate([self._neighbours, c_col])[gather],
            np.concatenate([self._counts, summed_counts.astype(np.int64)])[gather],
            np.concatenate([self._weights, summed_weights])[gather],
        )

    def _compact_reference(self) -> None:
        """``compact`` row by row: the plain version it is tested against."""
        n = len(self._names)
        lens = np.zeros(n, dtype=np.int64)
        nbr_parts: list[np.ndarray] = []
        cnt_parts: list[np.ndarray] = []
        wt_parts: list[np.ndarray] = []
        ids = self._ids
        for gid, node in enumerate(self._names):
            row = self._overlay.get(node)
            if row is not None:
                lens[gid] = len(row)
                if row:
                    nbr_parts.append(np.fromiter((ids[v] for v in row), dtype=np.int64, count=len(row)))
                    cnt_parts.append(np.fromiter((c[0] for c in row.values()), dtype=np.int64, count=len(row)))
                    wt_parts.append(np.fromiter((c[1] for c in row.values()), dtype=np.float64, count=len(row)))
            elif gid < self._snapshot_n:
                start, end = int(self._indptr[gid]), int(self._indptr[gid + 1])
                if end > start:
                    lens[gid] = end - start
                    nbr_parts.append(self._neighbours[start:end])
                    cnt_parts.append(self._counts[start:end])
                    wt_parts.append(self._weights[start:end])
        self._set_csr(
            np.concatenate([np.zeros(1, dtype=np.int64), np.cumsum(lens)]),
            np.concatenate(nbr_parts) if nbr_parts else np.zeros(0, dtype=np.int64),
            np.concatenate(cnt_parts) if cnt_parts else np.zeros(0, dtype=np.int64),
            np.concatenate(wt_parts) if wt_parts else np.zeros(0, dtype=np.float64),
        )
        self._overlay.clear()

    def _set_csr(self, indptr: np.ndarray, neighbours: np.ndarray, counts: np.ndarray, weights: np.ndarray) -> None:
        self._indptr = indptr.astype(np.int64, copy=False)
        self._neighbours = neighbours.astype(np.int64, copy=False)
        self._counts = counts.astype(np.int64, copy=False)
        self._weights = weights.astype(np.float64, copy=False)
        self._snapshot_n = len(self._indptr) - 1
        self._pos = np.full(self._snapshot_n, -1, dtype=np.int64)
        self._log = _EdgeLog()  # every caller empties the overlay with it

    def _fresh(self) -> None:
        if len(self._overlay) > max(REBUILD_MIN, REBUILD_SHARE * max(1, len(self._names))):
            self.compact()

    def csr_from_log(self) -> tuple[int, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] | None:
        """(node count, CSR arrays) as ``compact`` would make them, from the edge log and without changing anything
        (safe on another thread while nodes are only interned); None when the log does not describe the overlay."""
        found = self._csr_from_log() if self._overlay else None
        return None if found is None else (len(found[0]) - 1, found)

    def to_state(
        self, from_log: tuple[int, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] | None = None
    ) -> tuple[list[str], dict[str, np.ndarray]]:
        """Node names and the compacted CSR arrays (what a snapshot saves).

        From the edge log (``from_log``: ``csr_from_log``'s result, nodes interned since get empty rows) the
        arrays are computed and the adjacency is left as it is: a save at close would otherwise spend 0.2 s of a
        100k import's close freeing the overlay's million cells, which the process frees with the rest of the
        memory anyway. Else the adjacency is compacted first.
        """
        if from_log is None:
            from_log = self.csr_from_log()
        names = list(self._names)
        if from_log is None:
            self.compact()
            found = self._indptr, self._neighbours, self._counts, self._weights
        else:
            counted, found = from_log
            if len(names) > counted:  # nodes given an id since, without neighbours
                indptr = np.concatenate([found[0], np.full(len(names) - counted, found[0][-1], dtype=np.int64)])
                found = (indptr, *found[1:])
        return names, dict(zip(("indptr", "neighbours", "counts", "weights"), found))

    @classmethod
    def from_state(cls, names: Sequence[str], arrays: Mapping[str, Any]) -> Adjacency:
        """The adjacency ``to_state`` saved.

        Raises:
            ValueError: the arrays do not describe ``names`` (a damaged snapshot).
        """
        adj = cls()
        indptr = np.asarray(arrays["indptr"])
        nbrs, counts, weights = (np.asarray(arrays[k]) for k in ("neighbours", "counts", "weights"))
        if len(indptr) != len(names) + 1 or not (len(nbrs) == len(counts) == len(weights) == int(indptr[-1])):
            raise ValueError("adjacency arrays do not match the node list")
        if len(nbrs) and (int(nbrs.min()) < 0 or int(nbrs.max()) >= len(names)):
            raise ValueError("adjacency neighbour ids out of range")
        adj._names = list(names)
        adj._ids = dict(zip(adj._names, range(len(adj._names))))
        if len(adj._ids) != len(adj._names):
            raise ValueError("duplicate node names in the adjacency")
        adj._set_csr(indptr, nbrs, counts, weights)
        return adj

    # ---- the neighbourhood's edges ----------------------------------------------

    def edges_among(self, nodes: Sequence[str], index: Mapping[str, int]) -> Entries:
        """Directed (row, col, weight) entries of the symmetric weight matrix among ``nodes``.

        ``index`` maps each node to its row (``nodes[i]`` has row ``i``). Nodes with more
        neighbours than there are ``nodes`` are hubs and are not scanned (see the module
        docstring). Node ids, fanouts and the clean/changed split are computed as arrays.
        """
        cap = len(nodes)
        gids = np.fromiter(map(self._ids.get, nodes, repeat(-1, cap)), dtype=np.int64, count=cap)
        return self._edges_among(gids, nodes, index)

    def edges_among_ids(self, gids: np.ndarray) -> Entries:
        """``edges_among`` of the nodes with ids ``gids`` (row ``i`` is ``gids[i]``), naming only what must be named:
        rows changed since the snapshot and the hubs."""
        return self._edges_among(np.asarray(gids, dtype=np.int64), None, None)

    def _edges_among(self, gids: np.ndarray, nodes: Sequence[str] | None, index: Mapping[str, int] | None) -> Entries:
        """``edges_among`` over node ids (-1: a node without one); ``nodes`` and ``index`` are made when needed."""
        self._fresh()
        cap = len(gids)
        local = np.arange(cap, dtype=np.int64)  # ``nodes[i]`` has row ``i``
        in_csr = (gids >= 0) & (gids < self._snapshot_n)
        fanout = np.zeros(cap, dtype=np.int64)
        csr_gids = gids[in_csr]
        fanout[in_csr] = self._indptr[csr_gids + 1] - self._indptr[csr_gids]
        changed = ~in_csr
        if self._overlay:
            if nodes is None:
                nodes = list(map(self._names.__getitem__, gids.tolist()))
            for i, u in enumerate(nodes):
                row = self._overlay.get(u)
                if row is not None:
                    changed[i] = True
                    fanout[i] = len(row)
        hub = fanout > cap
        hub_rows = np.flatnonzero(hub).tolist()
        if nodes is None:  # no changed rows (they are named above): only the hubs need names and rows
            hubs = [self._names[g] for g in gids[hub_rows].tolist()]
            slow: list[str] = []  # a node past the snapshot and outside the overlay has no neighbours
            index = dict(zip(hubs, hub_rows))
        else:
            hubs = [nodes[i] for i in hub_rows]
            slow = [nodes[i] for i in np.flatnonzero(changed & ~hub).tolist()]
            if index is None:
                index = {u: i for i, u in enumerate(nodes)}
        hub_set = set(hubs)
        clean = in_csr & ~changed & ~hub
        parts = [
            self._gather(gids[in_csr], local[in_csr], gids[clean], local[clean], hub if hubs else None),
            self._slow_entries(slow, index, hub_set),
            self._hub_pairs(hubs, index),
        ]
        return (
            np.concatenate([p[0] for p in parts]),
            np.concatenate([p[1] for p in parts]),
            np.concatenate([p[2] for p in parts]),
        )

    def _gather(
        self, member_gids: np.ndarray, member_local: np.ndarray, src: np.ndarray, local: np.ndarray, hub: np.ndarray | None
    ) -> Entries:
        """Entries of the clean (snapshot) nodes ``src``, vectorised; edges to hub rows (``hub[row]``) are mirrored."""
        if not len(src):
            return _empty_entries()
        pos = self._pos
        pos[member_gids] = member_local
        try:
            starts, ends = self._indptr[src], self._indptr[src + 1]
            lens = ends - starts
            total = int(lens.sum())
            if total == 0:
                return _empty_entries()
            offsets = np.repeat(starts - np.cumsum(lens) + lens, lens) + np.arange(total)
            cols = pos[self._neighbours[offsets]]
            rows = np.repeat(local, lens)
            wts = self._weights[offsets]
            keep = cols >= 0
            rows, cols, wts = rows[keep], cols[keep], wts[keep]
        finally:
            pos[member_gids] = -1
        if hub is not None:
            mirror = hub[cols]  # a lookup: ``np.isin`` sorts, ~10x slower on a neighbourhood
            rows, cols, wts = (
                np.concatenate([rows, cols[mirror]]),
                np.concatenate([cols, rows[mirror]]),
                np.concatenate([wts, wts[mirror]]),
            )
        return rows, cols, wts

    def _slow_entries(self, slow: list[str], index: Mapping[str, int], hub_set: set[str]) -> Entries:
        rows: list[int] = []
        cols: list[int] = []
        vals: list[float] = []
        for u in slow:
            i = index[u]
            for v, cell in self._overlay.get(u, {}).items():
                j = index.get(v)
                if j is None:
                    continue
                rows.append(i)
                cols.append(j)
                vals.append(cell[1])
                if v in hub_set:
                    rows.append(j)
                    cols.append(i)
                    vals.append(cell[1])
        return np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64), np.asarray(vals, dtype=np.float64)

    def _hub_pairs(self, hubs: list[str], index: Mapping[str, int]) -> Entries:
        rows: list[int] = []
        cols: list[int] = []
        vals: list[float] = []
        for a in hubs:
            for b in hubs:
                w = self.weight(a, b) if a != b else None
                if w is not None:
                    rows.append(index[a])
                    cols.append(index[b])
                    vals.append(w)
        return np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64), np.asarray(vals, dtype=np.float64)

    def edges_among_reference(self, nodes: Sequence[str], index: Mapping[str, int]) -> Entries:
        """The same entries the obvious way: every node's whole adjacency, hubs included."""
        rows: list[int] = []
        cols: list[int] = []
        vals: list[float] = []
        for u in nodes:
            for v, cell in self.row(u).items():
                if v in index:
                    rows.append(index[u])
                    cols.append(index[v])
                    vals.append(cell[1])
        return np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64), np.asarray(vals, dtype=np.float64)


def _sum_cells(
    cell_row: np.ndarray, cell_col: np.ndarray, place: np.ndarray, counts: np.ndarray, weights: np.ndarray, n: int, span: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Entries summed per (row, col) cell in the order they were made, the cells of each row by first appearance:
    (rows, cols, counts, weights) sorted by (row, place of the cell's first entry)."""
    order = np.argsort(cell_row * max(n, 1) + cell_col, kind="stable")
    cell_row, cell_col, place = cell_row[order], cell_col[order], place[order]
    first = np.ones(len(order), dtype=bool)
    first[1:] = (cell_row[1:] != cell_row[:-1]) | (cell_col[1:] != cell_col[:-1])
    cell = np.cumsum(first) - 1
    cells = int(cell[-1]) + 1 if len(cell) else 0
    summed_counts = np.bincount(cell, weights=counts[order], minlength=cells)
    summed_weights = np.bincount(cell, weights=weights[order], minlength=cells)
    c_row, c_place = cell_row[first], place[first]
    # Each row's cells by first appearance: (row, place) pairs are distinct, one sort by a combined key.
    by_row = np.argsort(c_row * span + c_place) if n * span < 2**62 else np.lexsort((c_place, c_row))
    return c_row[by_row], cell_col[first][by_row], summed_counts[by_row], summed_weights[by_row]


class _EdgeLog:
    """The ``adjust`` calls since the last compaction: (node id, node id, edges, weight), appended to typed arrays.

    ``ok`` turns False for good (until the next compaction) once a call removed a cell: from then on the
    overlay alone knows where each cell restarted, and ``compact`` walks it.
    """

    def __init__(self) -> None:
        self.ok = True
        self.repeats = False
        """Whether some call changed a cell that existed already (in the overlay or the old CSR row it copied)."""
        self._u, self._v = array("q"), array("q")
        self._counts, self._weights = array("d"), array("d")

    def note(self, u: int, v: int, edges: float, weight: float) -> None:
        """One ``adjust`` between node ids ``u`` and ``v``."""
        self._u.append(u)
        self._v.append(v)
        self._counts.append(edges)
        self._weights.append(weight)

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(u, v, edges, weight) as numpy arrays (copies: the log may grow again)."""
        return (np.array(self._u, dtype=np.int64), np.array(self._v, dtype=np.int64),
                np.array(self._counts, dtype=np.float64), np.array(self._weights, dtype=np.float64))


__all__ = ["REBUILD_MIN", "REBUILD_SHARE", "Adjacency"]
