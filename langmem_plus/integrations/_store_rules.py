"""The pure rules of a LangGraph store: filters, namespace matching, texts to embed, ranking.

Split from ``integrations.store`` (the Chroma I/O) so the semantics LangGraph's stores
share can be read and tested without a database. They follow the installed
``langgraph.store.memory.InMemoryStore`` (langgraph 1.2): filters compare like
PostgreSQL JSONB, ``*`` in a prefix or suffix matches any one label, a query search
scores an item by its best field (max pooling) and pads a short page with unscored
items. One deliberate difference: a comparison operator (``$gt`` ...) on a missing or
non-numeric value does not match, where InMemoryStore raises ``TypeError``.

Example:
    >>> matches_filter({"n": 3, "tag": "x"}, {"n": {"$gte": 2, "$lt": 5}, "tag": "x"})
    True
    >>> namespace_matches(("users", "u1", "prefs"), [("prefix", ("users", "*")), ("suffix", ("prefs",))])
    True
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np
from langgraph.store.base import get_text_at_path, tokenize_path

T = TypeVar("T")

_NUMERIC_OPS = {
    "$gt": lambda a, b: a > b,
    "$gte": lambda a, b: a >= b,
    "$lt": lambda a, b: a < b,
    "$lte": lambda a, b: a <= b,
}


def _as_float(value: Any) -> float | None:
    """``value`` as a float for a comparison operator, or None when it is not a number."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return None if math.isnan(number) else number


def _apply_operator(value: Any, operator: str, operand: Any) -> bool:
    if operator == "$eq":
        return bool(value == operand)
    if operator == "$ne":
        return bool(value != operand)
    compare = _NUMERIC_OPS.get(operator)
    if compare is None:
        raise ValueError(f"Unsupported operator: {operator}")
    left, right = _as_float(value), _as_float(operand)
    return left is not None and right is not None and bool(compare(left, right))


def _compare(value: Any, wanted: Any) -> bool:
    """Whether a stored value satisfies one filter value (JSONB-like, nested)."""
    if isinstance(wanted, Mapping):
        if any(str(k).startswith("$") for k in wanted):
            return all(_apply_operator(value, op, operand) for op, operand in wanted.items())
        return isinstance(value, Mapping) and all(_compare(value.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, (list, tuple)):
        return (
            isinstance(value, (list, tuple))
            and len(value) == len(wanted)
            and all(_compare(v, w) for v, w in zip(value, wanted))
        )
    return bool(value == wanted)


def matches_filter(value: Mapping[str, Any], filter: Mapping[str, Any] | None) -> bool:
    """Whether an item's value passes a LangGraph search ``filter`` (every key must match).

    Args:
        value: The stored item value.
        filter: ``{field: wanted}``; ``wanted`` is a plain value (equality, nested
            dicts and lists compared part by part) or ``{"$eq"|"$ne"|"$gt"|"$gte"|
            "$lt"|"$lte": operand}``.

    Raises:
        ValueError: An operator LangGraph does not define.
    """
    return not filter or all(_compare(value.get(key), wanted) for key, wanted in filter.items())


def namespace_matches(namespace: tuple[str, ...], conditions: Iterable[tuple[str, Sequence[str]]]) -> bool:
    """Whether a namespace meets every ``(match_type, path)`` condition (LangGraph's ``MatchCondition``).

    ``"prefix"`` compares the first labels and ``"suffix"`` the last ones; ``*`` matches
    any one label, and a path longer than the namespace never matches.

    Raises:
        ValueError: A match type other than ``prefix`` or ``suffix``.
    """
    for match_type, path in conditions:
        if match_type not in ("prefix", "suffix"):
            raise ValueError(f"Unsupported match type: {match_type}")
        if len(namespace) < len(path):
            return False
        labels = namespace[: len(path)] if match_type == "prefix" else namespace[len(namespace) - len(path) :]
        if not all(p == "*" or label == p for label, p in zip(labels, path)):
            return False
    return True


def index_paths(fields: Sequence[str] | None) -> list[tuple[str, list[str] | str]]:
    """Field paths as LangGraph tokenizes them; ``None`` means the whole value (``"$"``)."""
    return [(p, p if p == "$" else tokenize_path(p)) for p in (fields or ["$"])]


def texts_to_embed(value: Mapping[str, Any], paths: Sequence[tuple[str, list[str] | str]]) -> list[tuple[str, str]]:
    """``(path, text)`` pairs to embed for one item; an array path gives ``path.i`` per element."""
    out: list[tuple[str, str]] = []
    for path, tokens in paths:
        texts = get_text_at_path(value, tokens)
        if len(texts) == 1:
            out.append((path, texts[0]))
        else:
            out.extend((f"{path}.{i}", text) for i, text in enumerate(texts))
    return out


def cosine_scores(query: Sequence[float], vectors: Sequence[Sequence[float]]) -> list[float]:
    """Cosine similarity of ``query`` to each vector; 0 for a zero vector."""
    if not vectors:
        return []
    q = np.asarray(query, dtype=np.float64)
    m = np.asarray(vectors, dtype=np.float64)
    norms = np.linalg.norm(m, axis=1) * float(np.linalg.norm(q))
    scores = np.zeros(len(m))
    ok = norms != 0
    scores[ok] = (m[ok] @ q) / norms[ok]
    return [float(s) for s in scores]


def rank_page(
    candidates: Sequence[tuple[T, list[float]]], *, offset: int, limit: int
) -> list[tuple[T, float | None]]:
    """One page of a query search: items by their best score, then unscored ones.

    ``candidates`` are items (in store order) with the scores of their embedded
    fields. An item's score is its best field's (max pooling); items without
    vectors never outrank scored ones and pad a page that scored items do not
    fill. As in InMemoryStore, the padding starts at the first unscored item
    whatever the offset.
    """
    scored = sorted(
        ((max(scores), i) for i, (_, scores) in enumerate(candidates) if scores),
        key=lambda pair: pair[0],
        reverse=True,
    )
    page: list[tuple[T, float | None]] = [(candidates[i][0], s) for s, i in scored[offset : offset + limit]]
    if len(page) < limit:
        unscored = [item for item, scores in candidates if not scores]
        page.extend((item, None) for item in unscored[: limit - len(page)])
    return page


__all__ = [
    "cosine_scores",
    "index_paths",
    "matches_filter",
    "namespace_matches",
    "rank_page",
    "texts_to_embed",
]
