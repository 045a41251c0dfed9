"""The graph step's walk in integer node ids: the bounded neighbourhood without naming its nodes (design.md §5.2).

``LessonGraph.neighbourhood`` walks by node name: each neighbour is named, looked up in the
visited set and in the status map: many string lookups per on-error retrieval (docs/PERFORMANCE.md). ``walk_ids`` visits the same nodes in the
same order by node id: a neighbour chunk is a slice of the adjacency's CSR array, filtered by
two boolean lookups (seen, blocked). Names are made only to break fanout ties between
frontier nodes, as the named walk does. ``LessonGraph.neighbourhood`` is the reference it
is tested against (``tests/test_graph_walk.py``).

Example:
    >>> import numpy as np
    >>> from langmem_plus.store.adjacency import Adjacency
    >>> a = Adjacency()
    >>> for lesson in ("lesson:x", "lesson:y"):
    ...     a.adjust("fp:f", lesson, 1, 1.0)
    >>> a.compact()
    >>> [a.name(g) for g in walk_ids(a, [a.gid("fp:f")], hops=1, max_nodes=10, blocked=np.zeros(3, dtype=bool))]
    ['fp:f', 'lesson:x', 'lesson:y']
"""

from __future__ import annotations

import numpy as np

from langmem_plus.store.adjacency import Adjacency


def walk_ids(adj: Adjacency, start: list[int], *, hops: int, max_nodes: int, blocked: np.ndarray) -> list[int]:
    """Node ids within ``hops`` of ``start`` (already admitted, in order), breadth first, at most ``max_nodes``.

    Within a hop, the frontier is expanded lowest fanout first, ties by name; a node
    ``blocked`` (by id) is neither visited nor walked through. The same rules, and so the
    same list, as ``LessonGraph.neighbourhood``; ``blocked`` has a cell per node id.
    """
    seen = np.zeros(len(blocked), dtype=bool)
    visited = list(start)
    seen[visited] = True
    frontier = list(visited)
    for _ in range(hops):
        nxt: list[int] = []
        for gid in sorted(frontier, key=lambda g: (adj.fanout_of_id(g), adj.name(g))):
            for chunk in adj.neighbour_id_chunks(gid):
                fresh = chunk[~(seen[chunk] | blocked[chunk])]  # a chunk names each node once
                room = max_nodes - len(visited)
                if len(fresh) >= room:
                    visited += fresh[:room].tolist()
                    return visited
                seen[fresh] = True
                found = fresh.tolist()
                visited += found
                nxt += found
        frontier = nxt
    return visited


__all__ = ["walk_ids"]
