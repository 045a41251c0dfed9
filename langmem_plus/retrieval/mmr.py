"""Maximal Marginal Relevance, greedy (design.md §5.5; Carbonell & Goldstein, SIGIR 1998).

Picks items one at a time, each maximising ``lam * score - (1 - lam) * max_sim``
where ``max_sim`` is the item's highest similarity to anything already picked. A
high ``lam`` favours relevance; a low one favours diversity (default 0.4, design.md §5.5).

``mmr_select`` keeps a running vector of max-similarities, so each pick is one
vectorised pass (O(n) numpy work per pick). ``mmr_select_reference`` is the
obvious double loop, kept beside it so tests can check the fast one against it.

Example:
    >>> import numpy as np
    >>> sim = similarity_matrix(np.array([[1.0, 0.0], [0.99, 0.1], [0.0, 1.0]]))
    >>> mmr_select([0.9, 0.85, 0.6], sim, k=2, lam=0.4)  # item 1 is a near-duplicate of 0
    [0, 2]
    >>> mmr_select_reference([0.9, 0.85, 0.6], sim, k=2, lam=0.4)
    [0, 2]
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]


def _check(scores: Sequence[float], similarity: npt.ArrayLike) -> tuple[FloatArray, FloatArray]:
    s = np.asarray(scores, dtype=np.float64).ravel()
    sim = np.asarray(similarity, dtype=np.float64)
    n = s.shape[0]
    if sim.shape != (n, n):
        raise ValueError(f"similarity must be {n} x {n} for {n} scores, got shape {sim.shape}")
    if not (np.all(np.isfinite(s)) and np.all(np.isfinite(sim))):
        raise ValueError("MMR scores and similarities must be finite numbers")
    return s, sim


def mmr_select(scores: Sequence[float], similarity: npt.ArrayLike, k: int, lam: float) -> list[int]:
    """Greedy MMR: indices of up to ``k`` items, in pick order (design.md §5.5).

    The first pick is the highest score. Each later pick maximises
    ``lam * score - (1 - lam) * max(similarity to the picked items)``; ties go to
    the lower index.

    Args:
        scores: Relevance score of each item.
        similarity: ``n x n`` pairwise similarity (e.g. from ``similarity_matrix``).
        k: How many to pick; fewer are returned when there are fewer items.
        lam: Relevance/diversity trade-off in [0, 1] (``MemoryConfig.retrieval.mmr_lambda``).

    Returns:
        Picked indices, best first.

    Raises:
        ValueError: On a shape mismatch or a non-finite score or similarity.
    """
    s, sim = _check(scores, similarity)
    n = s.shape[0]
    k = min(max(int(k), 0), n)
    if k == 0:
        return []
    first = int(np.argmax(s))
    picked = [first]
    available = np.ones(n, dtype=bool)
    available[first] = False
    max_sim = sim[:, first].copy()
    relevance = lam * s
    while len(picked) < k:
        mmr = relevance - (1.0 - lam) * max_sim
        mmr[~available] = -np.inf
        nxt = int(np.argmax(mmr))  # argmax returns the first maximum: ties go to the lower index
        picked.append(nxt)
        available[nxt] = False
        np.maximum(max_sim, sim[:, nxt], out=max_sim)
    return picked


def mmr_select_reference(scores: Sequence[float], similarity: npt.ArrayLike, k: int, lam: float) -> list[int]:
    """The same selection as ``mmr_select``, written as the obvious double loop.

    Slow (O(k * n * k)) and kept only as the reference the fast version is tested against.
    """
    s, sim = _check(scores, similarity)
    n = s.shape[0]
    k = min(max(int(k), 0), n)
    picked: list[int] = []
    while len(picked) < k:
        best, best_val = -1, -math.inf
        for i in range(n):
            if i in picked:
                continue
            if not picked:
                val = float(s[i])
            else:
                max_sim = max(float(sim[i, j]) for j in picked)
                val = float(lam * s[i] - (1.0 - lam) * max_sim)
            if val > best_val:
                best, best_val = i, val
        picked.append(best)
    return picked


def similarity_matrix(vectors: npt.ArrayLike) -> FloatArray:
    """Pairwise cosine similarity of the rows of ``vectors``; zero rows have similarity 0.

    Example:
        >>> similarity_matrix([[3.0, 4.0], [0.0, 0.0]]).tolist()
        [[1.0, 0.0], [0.0, 0.0]]
    """
    v = np.asarray(vectors, dtype=np.float64)
    if v.ndim != 2:
        raise ValueError(f"vectors must be a 2-d array (one row per item), got {v.ndim} dimension(s)")
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    unit = np.divide(v, norms, out=np.zeros_like(v), where=norms > 0)
    out: FloatArray = np.clip(unit @ unit.T, -1.0, 1.0)
    return out


__all__ = ["mmr_select", "mmr_select_reference", "similarity_matrix"]
