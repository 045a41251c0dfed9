"""Fast equivalents of the lesson scoring of ``scoring`` for the on-error hot path.

``scoring`` holds the reference: pure, one lesson at a time, readable; most of its cost on the hot path is
``fingerprint_credit`` (``apply_rewrite`` tokenizes the failing action again for every candidate, and
``_action_candidates`` already ran it on the same lessons). This module computes the same numbers, bit for bit, with the
repeated work hoisted out of the per-lesson loop:

- ``ActionMatcher`` tokenizes the actions once and memoises, per (WRONG, CORRECT)
  pattern, whether the rewrite occurs in each action. A form whose literal tokens
  are not all among an action's tokens cannot match there (``forms`` compares
  literals with whole tokens), so ``apply_rewrite`` is only called when they are.
- ``lesson_components_fast`` and ``lesson_scores`` build the sets and weights once
  per retrieval and evaluate the same floating-point expressions in the same order.
- ``cosines`` computes the query norm once.
- ``scored_lesson`` builds the ``ScoredItem`` that ``ScoredItem.model_construct`` builds
  from the same values, without its per-field loop.

Every function is tested equal (``==`` on floats) to its reference in
``tests/test_fast_scoring.py``; if ``scoring`` changes, those tests say so.

Example:
    >>> from langmem_plus.records import Lesson, ScoredItem
    >>> l = Lesson(id="l", namespace=("ns",), rule_text="r", wrong="pick", correct="SELECT", triggers=["f"])
    >>> m = ActionMatcher(["pick name | sort age"])
    >>> m.applies(l), fingerprint_credit_fast(l, exact=True, matcher=m, miss_factor=0.5, action_credit=0.5)
    (True, 1.0)
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from langmem_plus.config import DEFAULT_CONFIG, MemoryConfig, config_value
from langmem_plus.records import Lesson, ScoredItem
from langmem_plus.retrieval.scoring import LESSON_WEIGHTS, SECONDS_PER_HOUR, recency
from langmem_plus.forms import parse_form
from langmem_plus.rewrite import action_spans, apply_rewrite

PATTERN_CACHE_SIZE = 1 << 16
"""WRONG patterns whose literal tokens are memoised per process (one entry per distinct pattern)."""


@lru_cache(maxsize=PATTERN_CACHE_SIZE)
def _literals(wrong: str) -> tuple[bool, frozenset[str]]:
    """(form has elements, its literal tokens): what an action must contain for a match."""
    form = parse_form(wrong)
    return bool(form.elements), form.literals


class ActionMatcher:
    """Whether rewrite lessons' WRONG patterns occur in a fixed list of actions, memoised per pattern.

    ``hits(lesson)[k]`` equals ``apply_rewrite(actions[k], lesson.wrong, lesson.correct) is not None``;
    ``applies(lesson)`` equals ``scoring.rewrite_applies(lesson, actions)``.
    """

    def __init__(self, actions: Sequence[str]) -> None:
        self.actions: list[str] = list(actions)
        self._spans = [action_spans(a) for a in self.actions]
        self._tokens = [frozenset(t.text for t in spans) for spans in self._spans]
        self._memo: dict[tuple[str, str], tuple[bool, ...]] = {}

    def hits(self, lesson: Lesson) -> tuple[bool, ...]:
        """Per action, whether ``lesson``'s rewrite changes it; all False for a non-rewrite lesson."""
        return self.pattern_hits(lesson.wrong, lesson.correct)

    def pattern_hits(self, wrong: str | None, correct: str | None) -> tuple[bool, ...]:
        """``hits`` for a (WRONG, CORRECT) pattern given without its lesson (the graph's index holds them)."""
        if not wrong or correct is None:
            return (False,) * len(self.actions)
        key = (wrong, correct)
        found = self._memo.get(key)
        if found is None:
            has_tokens, literals = _literals(wrong)
            found = tuple(
                has_tokens and literals <= toks and apply_rewrite(action, wrong, correct, spans=spans) is not None
                for action, toks, spans in zip(self.actions, self._tokens, self._spans)
            )
            self._memo[key] = found
        return found

    def applies(self, lesson: Lesson) -> bool:
        """``scoring.rewrite_applies(lesson, self.actions)``."""
        return any(self.hits(lesson))


def fingerprint_credit_fast(
    lesson: Lesson, *, exact: bool, matcher: ActionMatcher, miss_factor: float, action_credit: float
) -> float:
    """``scoring.fingerprint_credit(lesson, exact=exact, actions=matcher.actions, ...)``, memoised."""
    actions = matcher.actions
    if exact:
        if not actions or not lesson.wrong or lesson.correct is None:
            return 1.0
        hits = sum(1 for h in matcher.hits(lesson) if h)
        return miss_factor + (1.0 - miss_factor) * hits / len(actions)
    return action_credit if actions and matcher.applies(lesson) else 0.0


def _unit(value: float) -> float:
    """``_clip(_finite_or(value, 0.0), 0.0, 1.0)`` of ``scoring``."""
    f = float(value)
    if not math.isfinite(f):
        f = 0.0
    return min(1.0, max(0.0, f))


def _recency_scale(config: MemoryConfig) -> float:
    """``recency_tau_hours`` in seconds, refused as ``scoring.recency`` refuses it (its ValueError)."""
    tau = config.retrieval.recency_tau_hours
    if tau <= 0 or not math.isfinite(tau):
        recency(0.0, tau)  # raises the reference's ValueError
    return tau * SECONDS_PER_HOUR


def _tags_and_age(lesson: Lesson, query_tags: set[str], n_query: int, now: float) -> tuple[float, float]:
    """The lesson's tag overlap with the query's (the reference's Jaccard from one intersection:
    |a | b| = |a| + |b| - |a & b|, the same integers) and the seconds since its last activation (0 when not finite)."""
    lesson_tags = set(lesson.tags)
    shared = len(lesson_tags & query_tags) if n_query else 0
    union = len(lesson_tags) + n_query - shared
    last = lesson.last_activated_at if lesson.last_activated_at is not None else lesson.updated_at
    dt = float(now - last)
    return (shared / union if union else 0.0), (dt if math.isfinite(dt) else 0.0)


def lesson_components_fast(
    lessons: Sequence[Lesson],
    *,
    fingerprint_ids: Collection[str],
    tags: Collection[str],
    text_similarity: Sequence[float],
    now: float,
    config: MemoryConfig = DEFAULT_CONFIG,
) -> list[dict[str, float]]:
    """``scoring.lesson_components`` of each lesson (``text_similarity[i]`` for ``lessons[i]``)."""
    fps = set(fingerprint_ids)
    query_tags = set(tags)
    scale = _recency_scale(config)
    exp, n_query = math.exp, len(query_tags)
    out: list[dict[str, float]] = []
    for lesson, sim in zip(lessons, text_similarity, strict=True):
        tag, dt = _tags_and_age(lesson, query_tags, n_query, now)
        out.append(
            {
                "fingerprint_match": 0.0 if fps.isdisjoint(lesson.triggers) else 1.0,
                "tag_overlap": tag,
                "text_similarity": _unit(sim),
                "reliability": _unit(lesson.reliability),
                "recency": exp(-max(dt, 0.0) / scale),
            }
        )
    return out


def lesson_scores(components: Sequence[dict[str, float]], config: MemoryConfig = DEFAULT_CONFIG) -> list[float]:
    """``scoring.lesson_score`` of each components dict: the same products, summed in the same order."""
    weights = [(key, float(config_value(config, field))) for key, field in LESSON_WEIGHTS.items()]
    # ``sum`` as in the reference, so the additions (and any compensation ``sum`` applies) are the same.
    return [sum(w * float(comps.get(key, 0.0)) for key, w in weights) for comps in components]


_FUSED_KEYS = ("fingerprint_match", "tag_overlap", "text_similarity", "reliability", "recency")
"""The components ``lesson_rows_fast`` writes, in ``LESSON_WEIGHTS`` order; another order takes the composed path."""


def lesson_rows_fast(
    lessons: Sequence[Lesson],
    *,
    fingerprint_ids: Collection[str],
    tags: Collection[str],
    text_similarity: Sequence[float],
    now: float,
    matcher: ActionMatcher,
    known: Collection[str] = (),
    config: MemoryConfig = DEFAULT_CONFIG,
) -> tuple[list[dict[str, float]], list[float]]:
    """Each lesson's components with its fingerprint credit as ``fingerprint_match``, and its score, in one pass.

    Equal to ``lesson_components_fast`` with ``fingerprint_match`` replaced by ``fingerprint_credit_fast``
    (1.0 for a lesson in ``known``), then ``lesson_scores``: the same floats, keys in the same order. Each
    lesson's fields are read once (the three passes read them again, ~20 lessons cold in the caches each time).
    """
    fps = set(fingerprint_ids)
    miss, credit_if_action = config.retrieval.rewrite_miss_factor, config.retrieval.action_match_credit
    if tuple(LESSON_WEIGHTS) != _FUSED_KEYS:
        composed = lesson_components_fast(
            lessons, fingerprint_ids=fps, tags=tags, text_similarity=text_similarity, now=now, config=config
        )
        for lesson, c in zip(lessons, composed):
            c["fingerprint_match"] = 1.0 if lesson.id in known else fingerprint_credit_fast(
                lesson, exact=not fps.isdisjoint(lesson.triggers), matcher=matcher, miss_factor=miss,
                action_credit=credit_if_action,
            )
        return composed, lesson_scores(composed, config)
    query_tags = set(tags)
    scale = _recency_scale(config)
    w_fp, w_tags, w_text, w_rel, w_rec = (float(config_value(config, LESSON_WEIGHTS[k])) for k in _FUSED_KEYS)
    exp, n_query = math.exp, len(query_tags)
    comps: list[dict[str, float]] = []
    scores: list[float] = []
    for lesson, sim in zip(lessons, text_similarity, strict=True):
        if lesson.id in known:
            credit = 1.0
        else:
            credit = fingerprint_credit_fast(
                lesson, exact=not fps.isdisjoint(lesson.triggers), matcher=matcher, miss_factor=miss,
                action_credit=credit_if_action,
            )
        tag, dt = _tags_and_age(lesson, query_tags, n_query, now)
        text = _unit(sim)
        rel = _unit(lesson.reliability)
        rec = exp(-max(dt, 0.0) / scale)
        comps.append(
            {"fingerprint_match": credit, "tag_overlap": tag, "text_similarity": text, "reliability": rel, "recency": rec}
        )
        # ``lesson_scores``' sum over the same products in the same order (``float`` of a float is itself).
        scores.append(sum((w_fp * float(credit), w_tags * tag, w_text * text, w_rel * rel, w_rec * rec)))
    return comps, scores


_SCORED_FIELDS = tuple(ScoredItem.model_fields)
_PLAIN_SCORED = (
    _SCORED_FIELDS == ("kind", "item", "score", "components", "reasons")
    and not ScoredItem.__pydantic_post_init__
    and not ScoredItem.__pydantic_root_model__
    and ScoredItem.model_config.get("extra") != "allow"
)
"""Whether ``scored_lesson`` may set the fields itself; else it calls ``model_construct``."""


def scored_lesson(lesson: Lesson, score: float, components: dict[str, float], reasons: list[str]) -> ScoredItem:
    """``ScoredItem.model_construct(kind="lesson", item=lesson, score=score, components=components, reasons=reasons)``.

    The same instance state (``__dict__`` in field order, every field set, no extra, no
    private), written directly: the values were just computed here, so there is nothing to
    validate, and ``model_construct``'s loop over the fields and their aliases was ~20 % of
    the scoring step.
    """
    if not _PLAIN_SCORED:
        return ScoredItem.model_construct(kind="lesson", item=lesson, score=score, components=components, reasons=reasons)
    item = ScoredItem.__new__(ScoredItem)
    state = {"kind": "lesson", "item": lesson, "score": score, "components": components, "reasons": reasons}
    object.__setattr__(item, "__dict__", state)
    object.__setattr__(item, "__pydantic_fields_set__", set(_SCORED_FIELDS))
    object.__setattr__(item, "__pydantic_extra__", None)
    object.__setattr__(item, "__pydantic_private__", None)
    return item


def cosines(query: npt.ArrayLike, rows: npt.ArrayLike) -> list[float]:
    """``scoring.cosine(query, row)`` for each row of a 2-d array (the query's norm computed once)."""
    va = np.asarray(query, dtype=np.float64).ravel()
    na = float(np.linalg.norm(va))
    matrix = np.asarray(rows)
    if matrix.ndim != 2:
        raise ValueError(f"rows must be a 2-d array, got {matrix.ndim} dimension(s)")
    if matrix.shape[0] and matrix.shape[1] != va.shape[0]:
        raise ValueError(f"cosine needs vectors of one length, got {va.shape[0]} and {matrix.shape[1]}")
    query_ok = na != 0.0 and math.isfinite(na)
    if not query_ok:
        return [0.0] * matrix.shape[0]
    # One float64 copy of the matrix: each row is then contiguous float64, as the reference's fresh copy, and
    # its dot products are the same calls on the same values.
    wide = np.ascontiguousarray(matrix, dtype=np.float64)
    out: list[float] = []
    sqrt, isfinite = math.sqrt, math.isfinite
    for vb in wide:
        nb = sqrt(float(vb.dot(vb)))
        if nb == 0.0 or not isfinite(nb):
            out.append(0.0)
            continue
        out.append(min(1.0, max(-1.0, float(va.dot(vb)) / (na * nb))))
    return out


__all__ = [
    "ActionMatcher",
    "cosines",
    "fingerprint_credit_fast",
    "lesson_components_fast",
    "lesson_rows_fast",
    "lesson_scores",
    "scored_lesson",
]
