"""fast_scoring against the reference functions of scoring: equal floats, not approximately equal.

The on-error fast path ranks with these numbers; a last-bit difference could reorder
equal-scored lessons, so every comparison here is ``==``.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from langmem_plus.config import DEFAULT_CONFIG, MemoryConfig, RetrievalConfig
from langmem_plus.records import Lesson
from langmem_plus.retrieval.fast_scoring import (
    ActionMatcher,
    cosines,
    fingerprint_credit_fast,
    lesson_components_fast,
    lesson_rows_fast,
    lesson_scores,
)
from langmem_plus.retrieval.scoring import (
    cosine,
    fingerprint_credit,
    lesson_components,
    lesson_score,
    rewrite_applies,
)
from langmem_plus.rewrite import apply_rewrite

NS = ("acme", "fast-scoring")
WORDS = ["pick", "from", "sort", "age", "name", "desc", "|", "'x'", '"y"', "--all", "3", "*", "'*'", '"*"', "LOAD"]


def _pattern(rng: random.Random, max_len: int = 3) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, max_len)))


def _lesson(rng: random.Random, i: int) -> Lesson:
    kind = rng.random()
    wrong = _pattern(rng) if kind < 0.8 else ("" if kind < 0.9 else None)
    correct = _pattern(rng) if rng.random() < 0.9 else None
    return Lesson(
        id=f"l{i}", namespace=NS, rule_text=f"rule {i}", wrong=wrong, correct=correct,
        triggers=rng.sample(["f1", "f2", "f3", "f4"], rng.randint(0, 2)),
        tags=rng.sample(["t1", "t2", "t3"], rng.randint(0, 3)),
        reliability=rng.choice([0.0, 0.3, 0.99, 1.0]),
        updated_at=rng.choice([0.0, 500.0, 1_000.0, 2_000.0]),
        last_activated_at=rng.choice([None, 900.0, 1_500.0]),
    )


@pytest.mark.parametrize("seed", range(6))
def test_action_matcher_equals_apply_rewrite_and_rewrite_applies(seed: int) -> None:
    rng = random.Random(seed)
    actions = [_pattern(rng, 6) for _ in range(rng.randint(0, 3))]
    matcher = ActionMatcher(actions)
    for i in range(300):
        lesson = _lesson(rng, i)
        want = tuple(
            bool(lesson.wrong) and lesson.correct is not None
            and apply_rewrite(a, lesson.wrong or "", lesson.correct or "") is not None
            for a in actions
        )
        assert matcher.hits(lesson) == want
        assert matcher.hits(lesson) == want  # memoised answer is the same
        assert matcher.applies(lesson) == rewrite_applies(lesson, actions)


def test_action_matcher_finds_wildcard_and_rejects_missing_literals() -> None:
    lesson = Lesson(id="l", namespace=NS, rule_text="r", wrong="read '*'", correct="LOAD '*'")
    assert ActionMatcher(["read 'a.csv' | sort"]).applies(lesson)
    assert not ActionMatcher(["load 'a.csv'"]).applies(lesson)  # literal "read" missing
    assert not ActionMatcher(["read a.csv"]).applies(lesson)  # literals present, quoted wildcard not


@pytest.mark.parametrize("seed", range(6))
def test_fingerprint_credit_fast_equals_reference(seed: int) -> None:
    rng = random.Random(100 + seed)
    cfg = MemoryConfig(retrieval={"rewrite_miss_factor": rng.choice([0.0, 0.3, 0.5]), "action_match_credit": rng.choice([0.25, 0.5])})
    actions = [_pattern(rng, 6) for _ in range(rng.randint(0, 4))]
    matcher = ActionMatcher(actions)
    for i in range(200):
        lesson = _lesson(rng, i)
        for exact in (True, False):
            want = fingerprint_credit(
                lesson, exact=exact, actions=actions, miss_factor=cfg.retrieval.rewrite_miss_factor,
                action_credit=cfg.retrieval.action_match_credit,
            )
            got = fingerprint_credit_fast(
                lesson, exact=exact, matcher=matcher, miss_factor=cfg.retrieval.rewrite_miss_factor,
                action_credit=cfg.retrieval.action_match_credit,
            )
            assert got == want


@pytest.mark.parametrize("seed", range(4))
def test_components_and_scores_equal_reference_bit_for_bit(seed: int) -> None:
    rng = random.Random(200 + seed)
    cfg = MemoryConfig(retrieval={"recency_tau_hours": rng.choice([1.0, 72.0]), "w_text": rng.choice([0.2, 0.33])})
    lessons = [_lesson(rng, i) for i in range(150)]
    sims = [rng.choice([rng.random(), -0.2, 1.7, math.nan, math.inf, 0.0]) for _ in lessons]
    now = rng.choice([1_000.0, 1e6, math.nan])
    for fps, tags in (({"f1", "f3"}, ["t1", "t2"]), (set(), []), ({"f2"}, ["t1", "t1", "t9"])):
        got = lesson_components_fast(lessons, fingerprint_ids=fps, tags=tags, text_similarity=sims, now=now, config=cfg)
        want = [
            lesson_components(l, fingerprint_ids=fps, tags=tags, text_similarity=s, now=now, config=cfg)
            for l, s in zip(lessons, sims)
        ]
        assert got == want
        assert [list(c) for c in got] == [list(c) for c in want]  # same key order: the audit JSON is the same
        assert [[math.copysign(1.0, v) for v in c.values()] for c in got] == [
            [math.copysign(1.0, v) for v in c.values()] for c in want
        ]  # no -0.0 for 0.0
        assert lesson_scores(got, cfg) == [lesson_score(c, cfg) for c in want]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("reordered", [False, True])
def test_lesson_rows_fast_equals_credit_components_and_scores(
    seed: int, reordered: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The one-pass rows equal the reference's components with the fingerprint credit in place (1.0 for a known
    lesson), and its scores, bit for bit, keys in the same order; also down the composed path (another weight order)."""
    import langmem_plus.retrieval.fast_scoring as fast

    if reordered:  # as if ``LESSON_WEIGHTS`` had other keys or another order: the composed path
        monkeypatch.setattr(fast, "_FUSED_KEYS", ())
    rng = random.Random(300 + seed)
    cfg = MemoryConfig(retrieval={"recency_tau_hours": rng.choice([1.0, 72.0]), "w_text": rng.choice([0.2, 0.33]), "rewrite_miss_factor": rng.choice([0.0, 0.3, 0.5]), "action_match_credit": rng.choice([0.25, 0.5])})
    lessons = [_lesson(rng, i) for i in range(150)]
    sims = [rng.choice([rng.random(), -0.2, 1.7, math.nan, math.inf, 0.0]) for _ in lessons]
    now = rng.choice([1_000.0, 1e6, math.nan])
    actions = [_pattern(rng, 6) for _ in range(rng.randint(0, 3))]
    known = {f"l{i}" for i in rng.sample(range(150), 20)}
    for fps, tags in (({"f1", "f3"}, ["t1", "t2"]), (set(), []), ({"f2"}, ["t1", "t1", "t9"])):
        comps, scores = lesson_rows_fast(
            lessons, fingerprint_ids=fps, tags=tags, text_similarity=sims, now=now, matcher=ActionMatcher(actions),
            known=known, config=cfg,
        )
        want = []
        for lesson, sim in zip(lessons, sims):
            c = lesson_components(lesson, fingerprint_ids=fps, tags=tags, text_similarity=sim, now=now, config=cfg)
            c["fingerprint_match"] = 1.0 if lesson.id in known else fingerprint_credit(
                lesson, exact=bool(fps & set(lesson.triggers)), actions=actions, miss_factor=cfg.retrieval.rewrite_miss_factor,
                action_credit=cfg.retrieval.action_match_credit,
            )
            want.append(c)
        assert comps == want and [list(c) for c in comps] == [list(c) for c in want]
        assert scores == [lesson_score(c, cfg) for c in want]


def test_components_reject_a_bad_tau_like_the_reference() -> None:
    lesson = Lesson(id="l", namespace=NS, rule_text="r")
    bad = DEFAULT_CONFIG.model_copy()
    object.__setattr__(bad, "retrieval", RetrievalConfig.model_construct(**{**DEFAULT_CONFIG.retrieval.model_dump(), "recency_tau_hours": 0.0}))
    with pytest.raises(ValueError, match="tau_hours"):
        lesson_components(lesson, fingerprint_ids=(), tags=(), text_similarity=0.5, now=0.0, config=bad)
    with pytest.raises(ValueError, match="tau_hours"):
        lesson_components_fast([lesson], fingerprint_ids=(), tags=(), text_similarity=[0.5], now=0.0, config=bad)


@settings(max_examples=60, deadline=None)
@given(
    st.integers(min_value=0, max_value=2**31 - 1),
    st.integers(min_value=0, max_value=12),
    st.sampled_from([2, 7, 256]),
)
def test_cosines_equal_cosine_row_by_row(seed: int, n: int, dim: int) -> None:
    rng = np.random.default_rng(seed)
    q = rng.standard_normal(dim).astype(np.float32)
    rows = rng.standard_normal((n, dim)).astype(np.float32)
    if n:
        rows[0] = 0.0  # a zero row has similarity 0
    if n > 1:
        rows[1] = q * 3  # parallel: clipped to 1
    assert cosines(q, rows) == [cosine(q, r) for r in rows]
    zero = np.zeros(dim, dtype=np.float32)
    assert cosines(zero, rows) == [cosine(zero, r) for r in rows]


def test_cosines_reject_mismatched_lengths() -> None:
    with pytest.raises(ValueError):
        cosines(np.ones(3), np.ones((2, 4)))
    with pytest.raises(ValueError):
        cosines(np.ones(3), np.ones(3))


@pytest.mark.parametrize("seed", range(5))
def test_scored_lesson_equals_model_construct(seed: int) -> None:
    """``scored_lesson`` leaves the instance as ``ScoredItem.model_construct`` does: a field added to
    ``ScoredItem`` (or a default, a post-init, extra fields) makes them differ and this fail."""
    from langmem_plus.records import ScoredItem
    from langmem_plus.retrieval.fast_scoring import scored_lesson

    rng = random.Random(seed)
    for lesson in (_lesson(rng, i) for i in range(10)):
        comps = {"fingerprint_match": rng.random(), "recency": rng.random()}
        reasons = [f"source:{rng.choice(['vector', 'graph', 'action'])}"]
        score = rng.random()
        fast = scored_lesson(lesson, score, comps, reasons)
        ref = ScoredItem.model_construct(kind="lesson", item=lesson, score=score, components=comps, reasons=reasons)
        assert type(fast) is type(ref) and fast == ref
        assert list(fast.__dict__.items()) == list(ref.__dict__.items())
        assert fast.model_fields_set == ref.model_fields_set
        assert (fast.__pydantic_extra__, fast.__pydantic_private__) == (ref.__pydantic_extra__, ref.__pydantic_private__)
        assert fast.model_dump() == ref.model_dump() and fast.item_id == lesson.id
        assert fast.model_copy(update={"reasons": ["x"]}) == ref.model_copy(update={"reasons": ["x"]})
