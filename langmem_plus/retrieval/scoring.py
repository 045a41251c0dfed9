"""Pure scoring functions behind the hybrid re-rank of design.md §5.3.

A retrieved lesson is scored from five components (exact fingerprint match, tag
overlap, text similarity, reliability, recency) and an episode from four (cosine,
goal overlap, success prior, recency). Each ``*_components`` function returns the
components as a plain dict, so the audit log can show why an item ranked where it
did, and each ``*_score`` function turns components into the weighted sum with the
weights of ``MemoryConfig``. Nothing here reads a clock: the caller passes ``now``.

Example:
    >>> from langmem_plus.records import Lesson
    >>> lesson = Lesson(id="les_1", namespace=("acme",), rule_text="WRONG: filter -> CORRECT: keep",
    ...                 triggers=["fp1"], tags=["unknown_command"], updated_at=0.0)
    >>> comps = lesson_components(lesson, fingerprint_ids=["fp1"], tags=["unknown_command"],
    ...                           text_similarity=0.5, now=0.0)
    >>> round(lesson_score(comps), 2)  # 0.40 + 0.25 + 0.20 * 0.5 + 0.10 * 0.5 + 0.05 * 1
    0.85
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from langmem_plus._text import word_set
from langmem_plus.config import DEFAULT_CONFIG, MemoryConfig, config_value
from langmem_plus.records import Episode, Lesson
from langmem_plus.rewrite import apply_rewrite

SECONDS_PER_HOUR = 3600.0
"""Unit conversion: ``recency_tau_hours`` is in hours, timestamps are epoch seconds."""

LESSON_WEIGHTS: Mapping[str, str] = {
    "fingerprint_match": "w_fingerprint",
    "tag_overlap": "w_tags",
    "text_similarity": "w_text",
    "reliability": "w_reliability",
    "recency": "w_recency",
}
"""Lesson score component -> the ``MemoryConfig`` field holding its weight (design.md §5.3)."""

EPISODE_WEIGHTS: Mapping[str, str] = {
    "cos": "ep_w_cos",
    "goal_overlap": "ep_w_goal",
    "success_prior": "ep_w_success",
    "recency": "ep_w_recency",
}
"""Episode score component -> the ``MemoryConfig`` field holding its weight (design.md §5.3)."""


def _finite_or(value: float, default: float) -> float:
    f = float(value)
    return f if math.isfinite(f) else default


def _clip(value: float, lo: float, hi: float) -> float:
    return min(hi, max(lo, value))


def recency(dt_seconds: float, tau_hours: float) -> float:
    """Exponential recency ``exp(-dt / tau)`` (design.md §5.3).

    Args:
        dt_seconds: Time since the item was last active, in seconds. Negative values
            (clock skew, an item "from the future") count as 0, so recency is at most 1.
        tau_hours: Time constant in hours (``MemoryConfig.retrieval.recency_tau_hours``, 72 h).

    Returns:
        A value in (0, 1]; it halves every ``tau * ln 2`` hours.

    Example:
        >>> recency(0.0, 72.0)
        1.0
        >>> round(recency(72 * 3600 * math.log(2), 72.0), 6)
        0.5
    """
    if tau_hours <= 0 or not math.isfinite(tau_hours):
        raise ValueError(f"tau_hours must be a positive finite number of hours, got {tau_hours!r}")
    dt = _finite_or(dt_seconds, 0.0)
    return math.exp(-max(dt, 0.0) / (tau_hours * SECONDS_PER_HOUR))


def jaccard(a: Iterable[str], b: Iterable[str]) -> float:
    """Jaccard overlap |A ∩ B| / |A ∪ B| of two collections of strings (design.md §5.3 tag_overlap).

    Two empty collections overlap 0 (nothing in common is not evidence of a match).

    Example:
        >>> jaccard(["a", "b"], ["b", "c"])
        0.3333333333333333
    """
    sa, sb = set(a), set(b)
    union = sa | sb
    if not union:
        return 0.0
    return len(sa & sb) / len(union)


def cosine(a: npt.ArrayLike, b: npt.ArrayLike) -> float:
    """Cosine similarity of two vectors; 0 when either is a zero vector (design.md §5.3).

    Example:
        >>> cosine([1.0, 0.0], [1.0, 1.0])  # doctest: +ELLIPSIS
        0.7071...
    """
    va = np.asarray(a, dtype=np.float64).ravel()
    vb = np.asarray(b, dtype=np.float64).ravel()
    if va.shape != vb.shape:
        raise ValueError(f"cosine needs vectors of one length, got {va.shape[0]} and {vb.shape[0]}")
    na, nb = float(np.linalg.norm(va)), float(np.linalg.norm(vb))
    if na == 0.0 or nb == 0.0 or not (math.isfinite(na) and math.isfinite(nb)):
        return 0.0
    return _clip(float(np.dot(va, vb)) / (na * nb), -1.0, 1.0)


def goal_overlap(a: str, b: str) -> float:
    """Token overlap of two goal strings, |A ∩ B| / |A ∪ B| over lowercased words (design.md §5.3).

    Example:
        >>> goal_overlap("sort by age", "sort by name")
        0.5
    """
    return jaccard(word_set(a), word_set(b))


def lesson_components(
    lesson: Lesson,
    *,
    fingerprint_ids: Collection[str],
    tags: Collection[str],
    text_similarity: float,
    now: float,
    config: MemoryConfig = DEFAULT_CONFIG,
) -> dict[str, float]:
    """The five components of a lesson's retrieval score (design.md §5.3).

    Args:
        lesson: The candidate lesson.
        fingerprint_ids: Fingerprint ids of the moment (the error event's on error,
            the task's known fingerprints pre-run).
        tags: Structural tags of the moment.
        text_similarity: Embedding cosine between the query and the lesson, clipped
            to [0, 1] (a non-finite value counts as 0).
        now: Current time, epoch seconds.
        config: Supplies ``recency_tau_hours``.

    Returns:
        ``fingerprint_match`` (1.0 if any trigger is among ``fingerprint_ids``),
        ``tag_overlap`` (Jaccard), ``text_similarity``, ``reliability`` and
        ``recency`` (from ``last_activated_at``, else ``updated_at``).
    """
    fps = set(fingerprint_ids)
    last = lesson.last_activated_at if lesson.last_activated_at is not None else lesson.updated_at
    return {
        "fingerprint_match": 1.0 if any(t in fps for t in lesson.triggers) else 0.0,
        "tag_overlap": jaccard(lesson.tags, tags),
        "text_similarity": _clip(_finite_or(text_similarity, 0.0), 0.0, 1.0),
        "reliability": _clip(_finite_or(lesson.reliability, 0.0), 0.0, 1.0),
        "recency": recency(now - last, config.retrieval.recency_tau_hours),
    }


def _weighted(components: Mapping[str, float], weights: Mapping[str, str], config: MemoryConfig) -> float:
    return sum(float(config_value(config, field)) * float(components.get(key, 0.0)) for key, field in weights.items())


def lesson_score(components: Mapping[str, float], config: MemoryConfig = DEFAULT_CONFIG) -> float:
    """Weighted lesson score 0.40 fp + 0.25 tags + 0.20 text + 0.10 reliability + 0.05 recency (design.md §5.3).

    Missing components count as 0; unknown keys are ignored.
    """
    return _weighted(components, LESSON_WEIGHTS, config)


def episode_components(
    episode: Episode,
    *,
    cos: float,
    goal: str,
    now: float,
    config: MemoryConfig = DEFAULT_CONFIG,
) -> dict[str, float]:
    """The four components of an episode's retrieval score (design.md §5.3, AMM spec §5.3).

    Args:
        episode: The candidate episode.
        cos: Embedding cosine between the query and the episode, clipped to [-1, 1].
        goal: The current goal text, compared with ``episode.goal_signature``.
        now: Current time, epoch seconds; recency is measured from ``last_seen_at``.
        config: Supplies ``recency_tau_hours``.

    Returns:
        ``cos``, ``goal_overlap``, ``success_prior`` = log(1 + success_weight)
        (negative weights count as 0) and ``recency``.
    """
    return {
        "cos": _clip(_finite_or(cos, 0.0), -1.0, 1.0),
        "goal_overlap": goal_overlap(goal, episode.goal_signature),
        "success_prior": math.log1p(max(0.0, _finite_or(episode.success_weight, 0.0))),
        "recency": recency(now - episode.last_seen_at, config.retrieval.recency_tau_hours),
    }


def episode_score(components: Mapping[str, float], config: MemoryConfig = DEFAULT_CONFIG) -> float:
    """Weighted episode score 1.0 cos + 0.5 goal_overlap + 0.3 log(1 + w) + 0.2 recency (design.md §5.3)."""
    return _weighted(components, EPISODE_WEIGHTS, config)


__all__ = [
    "EPISODE_WEIGHTS",
    "LESSON_WEIGHTS",
    "SECONDS_PER_HOUR",
    "cosine",
    "episode_components",
    "episode_score",
    "goal_overlap",
    "jaccard",
    "lesson_components",
    "lesson_score",
    "recency",
]


def rewrite_applies(lesson: Lesson, actions: Sequence[str]) -> bool:
    """True when ``lesson`` is a rewrite whose WRONG pattern occurs in one of ``actions``."""
    if not lesson.wrong or lesson.correct is None:
        return False
    return any(apply_rewrite(a, lesson.wrong, lesson.correct) is not None for a in actions)


def fingerprint_credit(
    lesson: Lesson, *, exact: bool, actions: Sequence[str], miss_factor: float, action_credit: float
) -> float:
    """The ``fingerprint_match`` component once the failing action is taken into account.

    An exact fingerprint match keeps 1.0 when the lesson's rewrite applies to the
    action (or no action / no rewrite is known), else ``miss_factor``
    (``rewrite_applicability``). Without an exact match, a rewrite lesson whose WRONG
    pattern occurs in the action still gets ``action_credit``: the same mistake
    behind a reworded error or fresh literals (measured with ``bench retrieval``).

    Example:
        >>> l = Lesson(id="l", namespace=("ns",), rule_text="r", wrong="pick", correct="SELECT", triggers=["f"])
        >>> fingerprint_credit(l, exact=False, actions=["pick name"], miss_factor=0.5, action_credit=0.5)
        0.5
        >>> fingerprint_credit(l, exact=True, actions=["sort age"], miss_factor=0.5, action_credit=0.5)
        0.5
    """
    if exact:
        return rewrite_applicability(lesson, actions, miss_factor)
    return action_credit if actions and rewrite_applies(lesson, actions) else 0.0


def rewrite_applicability(lesson: Lesson, actions: Sequence[str], miss_factor: float) -> float:
    """``miss_factor + (1 - miss_factor) * share``, ``share`` being the fraction of ``actions``
    in which ``lesson``'s WRONG pattern occurs; 1.0 without a rewrite or without actions.

    Multiplies the fingerprint match: on error, ``actions`` is the failing action (so the
    result is 1.0 or ``miss_factor``); before a run, the agent's failed actions in earlier
    runs of the task (agents repeat their habits). One fingerprint can have many fixes, and
    the one that applies is the answer; a habit that shows in most failed actions (the first
    guess, ``from``) outranks one that showed once (a second guess, ``read``).

    Example:
        >>> l = Lesson(id="l", namespace=("ns",), rule_text="r", wrong="from", correct="LOAD")
        >>> rewrite_applicability(l, ["from a", "from b", "read c", "x"], 0.5)
        0.75
    """
    if not actions or not lesson.wrong or lesson.correct is None:
        return 1.0
    hits = sum(1 for a in actions if apply_rewrite(a, lesson.wrong, lesson.correct) is not None)
    return miss_factor + (1.0 - miss_factor) * hits / len(actions)
