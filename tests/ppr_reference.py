"""Slow, obvious PageRank references that the fast graph code is tested against (STYLE 5).

They live with the tests, not the library: nothing at run time needs them. They are
written plainly in numpy (no ``networkx.pagerank``, which needs scipy) so the test
suite depends only on what the project declares.

* ``power_iteration``: PageRank on a dense weight matrix, as ``networkx.pagerank``
  computes it (Page et al. 1999; personalised teleport and dangling mass).
* ``dense_ppr``: ``LessonGraph.personalized_pagerank`` the slow way: the same bounded
  neighbourhood, a dense matrix built from the networkx edges, iterated to 1e-14.
* ``whole_graph_ppr``: personalised PageRank over the whole graph (every allowed
  node, undirected summed weights), the answer the bounded version approximates.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

from langmem_plus.config import DEFAULT_CONFIG
from langmem_plus.store.graph import DEFAULT_EXCLUDED, LessonGraph
from langmem_plus.store.ppr import PPR_MAX_ITER, PPR_TOL


def power_iteration(
    weights: np.ndarray,
    personalization: np.ndarray,
    alpha: float = DEFAULT_CONFIG.retrieval.pagerank_alpha,
    *,
    tol: float = PPR_TOL,
    max_iter: int = PPR_MAX_ITER,
) -> np.ndarray:
    """``x <- alpha * (x P + dangling_mass * p) + (1 - alpha) * p`` until the L1 change is below ``n * tol``.

    ``P`` is ``weights`` row-normalised and ``p`` the personalization (summing to 1).
    """
    n = len(personalization)
    out = weights.sum(axis=1)
    dangling = out == 0
    transition = np.divide(weights, out[:, None], out=np.zeros_like(weights), where=~dangling[:, None])
    x = np.full(n, 1.0 / n)
    for _ in range(max_iter):
        last = x
        x = alpha * (x @ transition + x[dangling].sum() * personalization) + (1 - alpha) * personalization
        if np.abs(x - last).sum() < n * tol:
            break
    return x


def _personalization(seeds: Mapping[str, float], index: Mapping[str, int]) -> np.ndarray:
    p = np.zeros(len(index))
    for node, w in seeds.items():
        if node in index and w > 0:
            p[index[node]] += float(w)
    return p / p.sum() if p.sum() > 0 else p


def _weight_matrix(g: LessonGraph, nodes: list[str]) -> np.ndarray:
    """Symmetric matrix of summed edge weights among ``nodes``, read edge by edge from networkx."""
    index = {n: i for i, n in enumerate(nodes)}
    w = np.zeros((len(nodes), len(nodes)))
    for u, v, d in g.nx.edges(data=True):
        i, j = index.get(u), index.get(v)
        if i is None or j is None or i == j:
            continue
        w[i, j] += float(d.get("weight", 1.0))
        w[j, i] += float(d.get("weight", 1.0))
    return w


def _lesson_scores(g: LessonGraph, nodes: list[str], scores: np.ndarray) -> dict[str, float]:
    return {
        n.removeprefix("lesson:"): float(s)
        for n, s in zip(nodes, scores)
        if n.startswith("lesson:") and "status" in g.nx.nodes[n]
    }


def dense_ppr(
    g: LessonGraph,
    seeds: Mapping[str, float],
    *,
    hops: int = DEFAULT_CONFIG.retrieval.graph_hops,
    max_nodes: int = DEFAULT_CONFIG.retrieval.graph_max_nodes,
    alpha: float = DEFAULT_CONFIG.retrieval.pagerank_alpha,
    exclude_status: Iterable[str] = DEFAULT_EXCLUDED,
) -> dict[str, float]:
    """The bounded PPR on the same neighbourhood, by a dense power iteration run to 1e-14."""
    nodes = g.neighbourhood(seeds, hops=hops, max_nodes=max_nodes, exclude_status=tuple(exclude_status))
    if not nodes:
        return {}
    p = _personalization(seeds, {n: i for i, n in enumerate(nodes)})
    scores = power_iteration(_weight_matrix(g, nodes), p, alpha, tol=1e-14, max_iter=100_000)
    return _lesson_scores(g, nodes, scores)


def whole_graph_ppr(
    g: LessonGraph,
    seeds: Mapping[str, float],
    *,
    alpha: float = DEFAULT_CONFIG.retrieval.pagerank_alpha,
    exclude_status: Iterable[str] = DEFAULT_EXCLUDED,
) -> dict[str, float]:
    """PPR over every node whose status is not excluded: no neighbourhood, no cap."""
    excluded = frozenset(exclude_status)
    nodes = sorted(n for n, d in g.nx.nodes(data=True) if d.get("status") not in excluded)
    p = _personalization(seeds, {n: i for i, n in enumerate(nodes)})
    if not p.any():
        return {}
    scores = power_iteration(_weight_matrix(g, nodes), p, alpha, tol=1e-14, max_iter=100_000)
    return _lesson_scores(g, nodes, scores)
