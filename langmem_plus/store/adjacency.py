"""Undirected weighted adjacency of the lesson graph, with a compact CSR copy for the query path.

``LessonGraph`` keeps a networkx ``MultiDiGraph`` as its record of edges; personalized
PageRank needs only "which neighbours, with what summed weight", in both directions.
``Adjacency`` keeps exactly that in dictionaries (``rows``, updated on every edge
change), plus a CSR snapshot (``indptr``, ``neighbours``, ``weights`` numpy arrays over
integer node ids) so the edges among a neighbourhood of a few hundred nodes are
gathered with a handful of vectorised operations instead of a Python loop over every
adjacency entry. Nodes changed since the snapshot are "dirty" and read from the
dictionaries; the snapshot is rebuilt when more than ``REBUILD_SHARE`` of the nodes are
dirty, so it stays in step with writes at a bounded, amortised cost.

Hubs (a tool or tag node touches thousands of lessons) are never scanned: an edge to
a hub is found from its other end, whose adjacency is short.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

REBUILD_SHARE = 0.05
"""Share of dirty nodes above which the CSR snapshot is rebuilt (amortises the rebuild over writes)."""
REBUILD_MIN = 256
"""Dirty nodes always tolerated before a rebuild, so small graphs do not rebuild on every write."""

Entries = tuple[np.ndarray, np.ndarray, np.ndarray]


class Adjacency:
    """Symmetric adjacency: node -> neighbour -> [edge count, summed weight]."""

    def __init__(self) -> None:
        self.rows: dict[str, dict[str, list[float]]] = {}
        """The live adjacency; read it freely, change it only through ``adjust``."""
        self._ids: dict[str, int] = {}
        self._dirty: set[str] = set()
        self._indptr = np.zeros(1, dtype=np.int64)
        self._neighbours = np.zeros(0, dtype=np.int64)
        self._weights = np.zeros(0, dtype=np.float64)
        self._snapshot_n = 0
        self._pos = np.zeros(0, dtype=np.int64)

    def adjust(self, u: str, v: str, edges: int, weight: float) -> None:
        """``edges`` more (or fewer) edges between ``u`` and ``v`` carrying ``weight`` more weight."""
        if u == v:
            return
        for a, b in ((u, v), (v, u)):
            row = self.rows.setdefault(a, {})
            cell = row.setdefault(b, [0.0, 0.0])
            cell[0] += edges
            cell[1] += weight
            if cell[0] <= 0:
                del row[b]
                if not row:
                    del self.rows[a]
            self._dirty.add(a)

    def fanout(self, node: str) -> int:
        """Distinct neighbours of ``node``."""
        return len(self.rows.get(node, ()))

    # ---- snapshot -------------------------------------------------------------

    def compact(self) -> None:
        """Rebuild the CSR snapshot from ``rows`` (on open, and when too many nodes are dirty)."""
        for node in self.rows:
            if node not in self._ids:
                self._ids[node] = len(self._ids)
        n = len(self._ids)
        counts = np.zeros(n + 1, dtype=np.int64)
        nbrs: list[int] = []
        wts: list[float] = []
        ids = self._ids
        for node, i in ids.items():
            row = self.rows.get(node)
            if row:
                counts[i + 1] = len(row)
        order = sorted(ids.items(), key=lambda kv: kv[1])
        for node, _ in order:
            row = self.rows.get(node)
            if row:
                for v, cell in row.items():
                    nbrs.append(ids[v])
                    wts.append(cell[1])
        self._indptr = np.cumsum(counts)
        self._neighbours = np.asarray(nbrs, dtype=np.int64)
        self._weights = np.asarray(wts, dtype=np.float64)
        self._snapshot_n = n
        self._pos = np.full(n, -1, dtype=np.int64)
        self._dirty.clear()

    def _fresh(self) -> None:
        if len(self._dirty) > max(REBUILD_MIN, REBUILD_SHARE * max(1, len(self.rows))):
            self.compact()

    # ---- the neighbourhood's edges ----------------------------------------------

    def edges_among(self, nodes: Sequence[str], index: Mapping[str, int]) -> Entries:
        """Directed (row, col, weight) entries of the symmetric weight matrix among ``nodes``.

        ``index`` maps each node to its row. Nodes with more neighbours than there are
        ``nodes`` are hubs and are not scanned (see the module docstring).
        """
        self._fresh()
        cap = len(nodes)
        rows_map = self.rows
        hubs = [u for u in nodes if len(rows_map.get(u, ())) > cap]
        hub_set = set(hubs)
        clean: list[int] = []
        clean_local: list[int] = []
        slow: list[str] = []
        for u in nodes:
            if u in hub_set:
                continue
            gid = self._ids.get(u)
            if gid is None or gid >= self._snapshot_n or u in self._dirty:
                slow.append(u)
            else:
                clean.append(gid)
                clean_local.append(index[u])
        parts = [self._gather(nodes, index, clean, clean_local, hub_set)]
        parts.append(self._slow_entries(slow, index, hub_set))
        parts.append(self._hub_pairs(hubs, index))
        return (
            np.concatenate([p[0] for p in parts]),
            np.concatenate([p[1] for p in parts]),
            np.concatenate([p[2] for p in parts]),
        )

    def _gather(
        self, nodes: Sequence[str], index: Mapping[str, int], clean: list[int], local: list[int], hub_set: set[str]
    ) -> Entries:
        """Entries of the clean (snapshot) nodes, vectorised; hub ends are mirrored."""
        empty = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0))
        if not clean:
            return empty
        pos = self._pos
        members = [(self._ids[n], index[n]) for n in nodes if self._ids.get(n, self._snapshot_n) < self._snapshot_n]
        gids = np.fromiter((g for g, _ in members), dtype=np.int64, count=len(members))
        pos[gids] = np.fromiter((i for _, i in members), dtype=np.int64, count=len(members))
        try:
            src = np.asarray(clean, dtype=np.int64)
            starts, ends = self._indptr[src], self._indptr[src + 1]
            lens = ends - starts
            total = int(lens.sum())
            if total == 0:
                return empty
            offsets = np.repeat(starts - np.cumsum(lens) + lens, lens) + np.arange(total)
            cols = pos[self._neighbours[offsets]]
            rows = np.repeat(np.asarray(local, dtype=np.int64), lens)
            wts = self._weights[offsets]
            keep = cols >= 0
            rows, cols, wts = rows[keep], cols[keep], wts[keep]
        finally:
            pos[gids] = -1
        if hub_set:
            hub_rows = np.fromiter((index[h] for h in hub_set), dtype=np.int64, count=len(hub_set))
            mirror = np.isin(cols, hub_rows)
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
            for v, cell in self.rows.get(u, {}).items():
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
            row = self.rows[a]
            for b in hubs:
                pair = row.get(b)
                if pair is not None:
                    rows.append(index[a])
                    cols.append(index[b])
                    vals.append(pair[1])
        return np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64), np.asarray(vals, dtype=np.float64)

    def edges_among_reference(self, nodes: Sequence[str], index: Mapping[str, int]) -> Entries:
        """The same entries the obvious way: every node's whole adjacency, hubs included."""
        rows: list[int] = []
        cols: list[int] = []
        vals: list[float] = []
        for u in nodes:
            for v, cell in self.rows.get(u, {}).items():
                if v in index:
                    rows.append(index[u])
                    cols.append(index[v])
                    vals.append(cell[1])
        return np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64), np.asarray(vals, dtype=np.float64)


__all__ = ["REBUILD_MIN", "REBUILD_SHARE", "Adjacency"]
