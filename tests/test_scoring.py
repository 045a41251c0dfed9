"""Scoring components and weights (design.md §5.3) and the block query (design.md §5.1)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from langmem_plus.config import DEFAULT_CONFIG, MemoryConfig, config_value
from langmem_plus.records import Episode, Lesson, WorkingContext
from langmem_plus.retrieval.query import build_query
from langmem_plus.retrieval.scoring import (
    EPISODE_WEIGHTS,
    LESSON_WEIGHTS,
    cosine,
    episode_components,
    episode_score,
    goal_overlap,
    jaccard,
    lesson_components,
    lesson_score,
    recency,
)

HOUR = 3600.0
NOW = 1_700_000_000.0
unit = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
words = st.lists(st.sampled_from(["a", "b", "c", "d", "e"]), max_size=6)


def lesson(**kw: object) -> Lesson:
    base: dict[str, object] = dict(id="les_x", namespace=("ns",), rule_text="r", updated_at=NOW, created_at=NOW)
    base.update(kw)
    return Lesson.model_validate(base)


# --------------------------------------------------------------------------- recency


def test_recency_is_one_now_and_halves_at_tau_ln2() -> None:
    assert recency(0.0, 72.0) == 1.0
    assert recency(72 * HOUR * math.log(2), 72.0) == pytest.approx(0.5)
    assert recency(72 * HOUR, 72.0) == pytest.approx(math.exp(-1))


def test_recency_treats_negative_dt_as_now() -> None:
    assert recency(-5 * HOUR, 72.0) == 1.0


def test_recency_rejects_nonpositive_tau() -> None:
    with pytest.raises(ValueError):
        recency(1.0, 0.0)


@given(st.floats(0, 1e8), st.floats(0, 1e8))
def test_recency_is_monotone_non_increasing(a: float, b: float) -> None:
    lo, hi = sorted((a, b))
    assert 0.0 < recency(hi, 72.0) <= recency(lo, 72.0) <= 1.0


# --------------------------------------------------------------------------- overlaps


def test_jaccard_examples() -> None:
    assert jaccard([], []) == 0.0
    assert jaccard(["a"], []) == 0.0
    assert jaccard(["a", "b"], ["b", "a"]) == 1.0
    assert jaccard(["a", "b"], ["b", "c"]) == pytest.approx(1 / 3)


@given(words, words)
def test_jaccard_is_symmetric_and_bounded(a: list[str], b: list[str]) -> None:
    assert jaccard(a, b) == jaccard(b, a)
    assert 0.0 <= jaccard(a, b) <= 1.0


def test_goal_overlap_uses_lowercased_words() -> None:
    assert goal_overlap("Sort by AGE", "sort by name") == pytest.approx(2 / 4)
    assert goal_overlap("", "") == 0.0


def test_cosine_examples() -> None:
    assert cosine([1.0, 0.0], [2.0, 0.0]) == pytest.approx(1.0)
    assert cosine([1.0, 0.0], [0.0, 3.0]) == pytest.approx(0.0)
    assert cosine([1.0, 0.0], [-1.0, 0.0]) == pytest.approx(-1.0)
    assert cosine([0.0, 0.0], [1.0, 1.0]) == 0.0


def test_cosine_rejects_length_mismatch() -> None:
    with pytest.raises(ValueError):
        cosine([1.0, 2.0], [1.0])


@given(st.lists(st.floats(-1e3, 1e3), min_size=3, max_size=3), st.lists(st.floats(-1e3, 1e3), min_size=3, max_size=3))
def test_cosine_is_symmetric_and_bounded(a: list[float], b: list[float]) -> None:
    assert cosine(a, b) == pytest.approx(cosine(b, a))
    assert -1.0 <= cosine(a, b) <= 1.0


# --------------------------------------------------------------------------- lesson score


def test_lesson_weights_sum_to_one_and_match_design() -> None:
    cfg = DEFAULT_CONFIG
    weights = [config_value(cfg, f) for f in LESSON_WEIGHTS.values()]
    assert weights == [0.40, 0.25, 0.20, 0.10, 0.05]
    assert sum(weights) == pytest.approx(1.0)
    assert lesson_score({k: 1.0 for k in LESSON_WEIGHTS}) == pytest.approx(1.0)
    assert [config_value(cfg, f) for f in EPISODE_WEIGHTS.values()] == [1.0, 0.5, 0.3, 0.2]


def test_lesson_score_is_the_weighted_sum() -> None:
    comps = {"fingerprint_match": 1.0, "tag_overlap": 0.5, "text_similarity": 0.25, "reliability": 0.8, "recency": 0.4}
    assert lesson_score(comps) == pytest.approx(0.40 + 0.125 + 0.05 + 0.08 + 0.02)
    custom = MemoryConfig(retrieval={"w_fingerprint": 0.0})
    assert lesson_score(comps, custom) == pytest.approx(0.125 + 0.05 + 0.08 + 0.02)


def test_exact_fingerprint_and_tags_beat_text_similarity() -> None:
    exact = lesson(id="a", triggers=["fp1"], tags=["unknown_command"])
    textual = lesson(id="b", triggers=["fp9"], tags=["sort_direction"])

    def score(les: Lesson, text_similarity: float) -> float:
        comps = lesson_components(
            les, fingerprint_ids=["fp1"], tags=["unknown_command"], text_similarity=text_similarity, now=NOW
        )
        return lesson_score(comps)

    s_exact, s_text = score(exact, 0.1), score(textual, 1.0)
    assert s_exact > s_text


def test_lesson_components_values() -> None:
    les = lesson(triggers=["fp1", "fp2"], tags=["a", "b"], reliability=0.7, updated_at=NOW - 72 * HOUR)
    comps = lesson_components(les, fingerprint_ids={"fp2"}, tags=["b", "c"], text_similarity=1.7, now=NOW)
    assert comps == {
        "fingerprint_match": 1.0,
        "tag_overlap": pytest.approx(1 / 3),
        "text_similarity": 1.0,
        "reliability": 0.7,
        "recency": pytest.approx(math.exp(-1)),
    }
    assert lesson_components(les, fingerprint_ids=[], tags=[], text_similarity=-0.3, now=NOW)["text_similarity"] == 0.0
    assert (
        lesson_components(les, fingerprint_ids=[], tags=[], text_similarity=float("nan"), now=NOW)["fingerprint_match"]
        == 0.0
    )


def test_lesson_recency_prefers_last_activation() -> None:
    les = lesson(updated_at=NOW - 1000 * HOUR, last_activated_at=NOW)
    assert lesson_components(les, fingerprint_ids=[], tags=[], text_similarity=0, now=NOW)["recency"] == 1.0


@given(unit, unit, unit, unit, unit)
def test_lesson_score_bounded_by_weight_sum(a: float, b: float, c: float, d: float, e: float) -> None:
    comps = dict(zip(LESSON_WEIGHTS, (a, b, c, d, e), strict=True))
    assert 0.0 <= lesson_score(comps) <= 1.0 + 1e-12


# --------------------------------------------------------------------------- episode score


def test_episode_score_worked_example() -> None:
    ep = Episode(
        episode_id="ep1",
        namespace=("ns",),
        kind="success",
        goal_signature="sort people by age",
        success_weight=math.e - 1,
        last_seen_at=NOW,
    )
    comps = episode_components(ep, cos=0.5, goal="sort people by age", now=NOW)
    assert comps == pytest.approx({"cos": 0.5, "goal_overlap": 1.0, "success_prior": 1.0, "recency": 1.0})
    assert episode_score(comps) == pytest.approx(0.5 + 0.5 + 0.3 + 0.2)


def test_episode_negative_success_weight_gives_no_prior() -> None:
    ep = Episode(episode_id="e", namespace=("ns",), kind="avoidance", goal_signature="g", success_weight=-3)
    assert episode_components(ep, cos=0.0, goal="g", now=NOW)["success_prior"] == 0.0


# --------------------------------------------------------------------------- query


def test_build_query_blocks_in_order_omitting_empty() -> None:
    ctx = WorkingContext(
        goal="names over 30",
        context="gridtool",
        inventory=["people.csv", "", "ages"],
        obs="table loaded",
        preconds_sat=["file_open"],
        preconds_miss=["sorted"],
        last_fail="unknown command 'filter'\nat stage 1",
    )
    assert build_query(ctx).splitlines() == [
        "[GOAL] names over 30",
        "[CONTEXT] gridtool",
        "[INVENTORY] people.csv; ages",
        "[OBS] table loaded",
        "[PRECONDS_SAT] file_open",
        "[PRECONDS_MISS] sorted",
        "[LAST_FAIL] unknown command 'filter' at stage 1",
    ]
    assert build_query(WorkingContext(goal="g", obs="  \n ")) == "[GOAL] g"
    assert build_query(WorkingContext()) == ""


@given(st.text(max_size=40), st.text(max_size=40), st.lists(st.text(max_size=10), max_size=3))
def test_build_query_one_line_per_nonempty_block(goal: str, obs: str, inv: list[str]) -> None:
    q = build_query(WorkingContext(goal=goal, obs=obs, inventory=inv))
    lines = q.splitlines() if q else []
    assert all(line.startswith("[") for line in lines)
    assert len(lines) == sum(bool(x.split()) for x in (goal, obs, " ".join(inv)))
