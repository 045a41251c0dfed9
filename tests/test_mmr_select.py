"""MMR (design.md §5.5), guards (§5.4), budget and selection (§5.6)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from langmem_plus.config import DEFAULT_CONFIG, MemoryConfig
from langmem_plus.records import Episode, Lesson, LessonStatus, Provenance, ScoredItem, Skill, WorkingContext
from langmem_plus.retrieval.mmr import mmr_select, mmr_select_reference, similarity_matrix
from langmem_plus.retrieval.select import (
    _guard_positions,
    _guard_positions_reference,
    apply_guards,
    avoidance_reminder,
    budget,
    default_bucket_of,
    default_run_of,
    difficulty,
    select,
    select_reference,
)


def lesson_item(
    id: str,
    score: float,
    *,
    tags: list[str] | None = None,
    run: str | None = None,
    status: LessonStatus = "candidate",
    conflicts: list[str] | None = None,
    reliability: float = 0.5,
    updated_at: float = 0.0,
) -> ScoredItem:
    les = Lesson(
        id=id,
        namespace=("ns",),
        rule_text=id,
        tags=tags if tags is not None else [f"tag_{id}"],
        provenance=Provenance(run_ids=[run] if run else []),
        status=status,
        conflicts_with=conflicts or [],
        reliability=reliability,
        updated_at=updated_at,
    )
    return ScoredItem(kind="lesson", item=les, score=score)


def episode_item(id: str, score: float, kind: str = "avoidance", run: str | None = None) -> ScoredItem:
    ep = Episode.model_validate(dict(episode_id=id, namespace=("ns",), kind=kind, goal_signature="g", run_id=run))
    return ScoredItem(kind="episode", item=ep, score=score)


def ids(items: list[ScoredItem]) -> list[str]:
    return [i.item_id for i in items]


# --------------------------------------------------------------------------- MMR


@st.composite
def mmr_inputs(draw: st.DrawFn) -> tuple[list[float], np.ndarray, int, float]:
    n = draw(st.integers(0, 12))
    d = draw(st.integers(1, 4))
    # Scores from a small set too, so exact ties (and the tie-break rule) get exercised.
    score = st.one_of(st.floats(-1, 2, allow_nan=False), st.sampled_from([0.0, 0.5, 1.0]))
    scores = draw(st.lists(score, min_size=n, max_size=n))
    flat = draw(
        st.lists(st.sampled_from([-1.0, 0.0, 0.5, 1.0, 2.0]) | st.floats(-1, 1), min_size=n * d, max_size=n * d)
    )
    vectors = np.array(flat, dtype=float).reshape(n, d)
    k = draw(st.integers(0, n + 2))
    lam = draw(st.sampled_from([0.0, 0.4, 1.0]) | st.floats(0, 1))
    return scores, similarity_matrix(vectors), k, lam


@given(mmr_inputs())
@settings(max_examples=200)
def test_mmr_fast_equals_reference(args: tuple[list[float], np.ndarray, int, float]) -> None:
    scores, sim, k, lam = args
    fast = mmr_select(scores, sim, k, lam)
    assert fast == mmr_select_reference(scores, sim, k, lam)
    assert len(fast) == min(k, len(scores)) and len(set(fast)) == len(fast)
    if fast:
        assert fast[0] == int(np.argmax(scores))


def test_mmr_prefers_diverse_item_over_near_duplicate() -> None:
    vecs = np.array([[1.0, 0.0], [0.999, 0.04], [0.0, 1.0]])
    assert mmr_select([0.9, 0.88, 0.6], similarity_matrix(vecs), k=2, lam=0.4) == [0, 2]
    # With pure relevance (lambda = 1) the near-duplicate wins instead.
    assert mmr_select([0.9, 0.88, 0.6], similarity_matrix(vecs), k=2, lam=1.0) == [0, 1]


def test_mmr_ties_go_to_lower_index_and_bounds() -> None:
    eye = np.eye(3)
    assert mmr_select([0.5, 0.5, 0.5], eye, k=3, lam=0.4) == [0, 1, 2]
    assert mmr_select([0.1, 0.2], np.eye(2), k=5, lam=0.4) == [1, 0]
    assert mmr_select([0.1, 0.2], np.eye(2), k=0, lam=0.4) == []
    assert mmr_select([], np.zeros((0, 0)), k=3, lam=0.4) == []


def test_mmr_rejects_bad_input() -> None:
    with pytest.raises(ValueError):
        mmr_select([0.1, 0.2], np.eye(3), k=1, lam=0.4)
    with pytest.raises(ValueError):
        mmr_select_reference([0.1, float("nan")], np.eye(2), k=1, lam=0.4)


def test_similarity_matrix_normalises_rows_and_keeps_zero_rows_zero() -> None:
    sim = similarity_matrix([[3.0, 4.0], [6.0, 8.0], [0.0, 0.0]])
    assert sim[0, 1] == pytest.approx(1.0)
    assert sim[0, 0] == pytest.approx(1.0)
    assert sim[2].tolist() == [0.0, 0.0, 0.0]


# --------------------------------------------------------------------------- difficulty and budget


def test_budget_three_five_seven() -> None:
    assert [budget(d) for d in (0.2, 0.5, 0.9)] == [3, 5, 7]
    assert budget(float("nan")) == 3


def test_difficulty_explicit_wins_and_is_clipped() -> None:
    assert difficulty(WorkingContext(difficulty=0.42, stalls=99)) == 0.42
    assert difficulty(WorkingContext(difficulty=3.0)) == 1.0
    assert difficulty(WorkingContext(difficulty=-1.0)) == 0.0


def test_difficulty_derived_from_stalls_and_failures() -> None:
    assert difficulty(WorkingContext()) == 0.0
    stalled = difficulty(WorkingContext(stalls=DEFAULT_CONFIG.capture.stall_steps))
    assert stalled == pytest.approx(1 - np.exp(-1))
    assert budget(stalled) == 5
    assert budget(difficulty(WorkingContext(stalls=3, recent_failures=2))) == 7


@given(st.integers(0, 50), st.integers(0, 50), st.integers(0, 5), st.integers(0, 5))
def test_difficulty_monotone_and_bounded(s: int, f: int, ds: int, df: int) -> None:
    lo = difficulty(WorkingContext(stalls=s, recent_failures=f))
    hi = difficulty(WorkingContext(stalls=s + ds, recent_failures=f + df))
    assert 0.0 <= lo <= hi <= 1.0


# --------------------------------------------------------------------------- guards


def test_guards_drop_suppressed_and_archived() -> None:
    items = [
        lesson_item("a", 0.9, status="suppressed"),
        lesson_item("b", 0.8, status="archived"),
        lesson_item("c", 0.1),
    ]
    kept, dropped = apply_guards(items)
    assert ids(kept) == ["c"]
    assert dropped == [("a", "status:suppressed"), ("b", "status:archived")]


def test_guards_enforce_tag_bucket_cap() -> None:
    items = [lesson_item(i, s, tags=["unknown_command", "x"]) for i, s in (("a", 0.5), ("b", 0.9), ("c", 0.7))]
    kept, dropped = apply_guards(items)
    assert ids(kept) == ["b", "c"]
    assert dropped == [("a", "tag_bucket_cap:unknown_command")]


def test_guards_enforce_per_run_cap() -> None:
    items = [lesson_item(f"l{i}", 1 - i / 10, run="r1") for i in range(5)] + [episode_item("e", 0.05, run="r1")]
    kept, dropped = apply_guards(items)
    assert ids(kept) == ["l0", "l1", "l2"]
    assert [d for d, _ in dropped] == ["l3", "l4", "e"]
    assert all(why == "per_run_cap:r1" for _, why in dropped)
    kept, _ = apply_guards(items, MemoryConfig(retrieval={"per_run_cap": 10}))
    assert len(kept) == 6


def test_guards_resolve_conflict_by_reliability() -> None:
    items = [
        lesson_item("a", 0.9, conflicts=["b"], reliability=0.4),
        lesson_item("b", 0.5, reliability=0.8),
    ]
    kept, dropped = apply_guards(items)
    assert ids(kept) == ["b"]
    assert dropped == [("a", "conflict_loss:b")]
    assert "won conflict cluster" in kept[0].reasons[-1]


def test_guards_resolve_conflict_tie_by_newer_evidence_and_transitively() -> None:
    items = [
        lesson_item("a", 0.9, conflicts=["b"], updated_at=10.0),
        lesson_item("b", 0.5, conflicts=["c"], updated_at=30.0),
        lesson_item("c", 0.7, updated_at=20.0),
        lesson_item("d", 0.6, conflicts=["zzz"]),  # its rival is not a candidate: no cluster
    ]
    kept, dropped = apply_guards(items)
    assert ids(kept) == ["d", "b"]
    assert sorted(dropped) == [("a", "conflict_loss:b"), ("c", "conflict_loss:b")]


def test_guards_keep_reasons_and_do_not_mutate_input() -> None:
    items = [lesson_item("a", 0.9), episode_item("e", 0.5)]
    kept, _ = apply_guards(items)
    assert all(i.reasons and i.reasons[-1].startswith("guards:passed") for i in kept)
    assert all(i.reasons == [] for i in items)


def test_guards_custom_bucket_and_run_functions() -> None:
    items = [lesson_item(i, 1.0 - n / 10) for n, i in enumerate("abc")]
    kept, dropped = apply_guards(
        items, run_of=lambda _: "same", bucket_of=lambda _: None, config=MemoryConfig(retrieval={"per_run_cap": 1})
    )
    assert ids(kept) == ["a"] and len(dropped) == 2


# --------------------------------------------------------------------------- select


def test_select_guards_then_mmr_then_k() -> None:
    items = [
        lesson_item("a", 0.9),
        lesson_item("dup", 0.88),
        lesson_item("far", 0.6),
        lesson_item("s", 1.0, status="suppressed"),
    ]
    vecs = np.array([[1.0, 0.0], [0.999, 0.04], [0.0, 1.0], [1.0, 0.0]])
    chosen = select(items, vectors=vecs, k=2, config=DEFAULT_CONFIG)
    assert ids(chosen) == ["a", "far"]
    assert chosen[1].reasons[-1].endswith("mmr rank 2")
    assert ids(select(items, vectors=None, k=2)) == ["a", "dup"]
    assert select(items, vectors=None, k=0) == []


def test_select_rejects_misaligned_vectors() -> None:
    with pytest.raises(ValueError):
        select([lesson_item("a", 0.9)], vectors=np.zeros((2, 3)), k=1)


@st.composite
def candidate_sets(draw: st.DrawFn) -> tuple[list[ScoredItem], np.ndarray | None, int]:
    n = draw(st.integers(0, 10))
    items: list[ScoredItem] = []
    for i in range(n):
        score = draw(st.sampled_from([0.1, 0.5, 0.9]) | st.floats(0, 1))
        if draw(st.integers(0, 4)) == 0:
            items.append(
                episode_item(
                    f"e{i}",
                    score,
                    kind=draw(st.sampled_from(["success", "avoidance"])),
                    run=draw(st.sampled_from(["r1", "r2", None])),
                )
            )
            continue
        items.append(
            lesson_item(
                f"l{i}",
                score,
                tags=draw(st.lists(st.sampled_from(["t1", "t2", "t3"]), max_size=2)),
                run=draw(st.sampled_from(["r1", "r2", None])),
                status=draw(st.sampled_from(["candidate", "promoted", "candidate", "suppressed", "archived"])),
                conflicts=draw(st.lists(st.sampled_from([f"l{j}" for j in range(n)]), max_size=2)),
                reliability=draw(st.sampled_from([0.2, 0.5, 0.8])),
                updated_at=draw(st.sampled_from([0.0, 1.0])),
            )
        )
    vectors = None
    if draw(st.booleans()):
        flat = draw(st.lists(st.floats(-1, 1), min_size=n * 3, max_size=n * 3))
        vectors = np.array(flat, dtype=float).reshape(n, 3)
    return items, vectors, draw(st.integers(0, 8))


@given(candidate_sets(), st.sampled_from([0.0, 0.4, 1.0]))
@settings(max_examples=150, deadline=None)
def test_select_equals_select_reference(case: tuple[list[ScoredItem], np.ndarray | None, int], lam: float) -> None:
    items, vectors, k = case
    cfg = MemoryConfig(retrieval={"mmr_lambda": lam})
    fast = select(items, vectors=vectors, k=k, config=cfg)
    ref = select_reference(items, vectors=vectors, k=k, config=cfg)
    assert ids(fast) == ids(ref)
    assert [i.reasons for i in fast] == [i.reasons for i in ref]
    assert len(fast) <= k
    assert all(not isinstance(i.item, Lesson) or i.item.retrievable for i in fast)
    buckets = [i.item.tags[0] for i in fast if isinstance(i.item, Lesson) and i.item.tags]
    assert all(buckets.count(b) <= cfg.retrieval.tag_bucket_cap for b in buckets)


@given(candidate_sets(), st.integers(0, 4), st.integers(1, 3), st.integers(1, 3))
@settings(max_examples=200, deadline=None)
def test_guard_positions_equal_the_reference(
    case: tuple[list[ScoredItem], np.ndarray | None, int], repeats: int, bucket_cap: int, run_cap: int
) -> None:
    items = case[0]
    items = items + items[:repeats]  # repeated ids: the best-scored copy stays
    cfg = MemoryConfig(retrieval={"tag_bucket_cap": bucket_cap, "per_run_cap": run_cap})
    for run_of, bucket_of in ((default_run_of, default_bucket_of), (lambda it: None, lambda it: it.kind)):
        assert _guard_positions(items, cfg, run_of, bucket_of) == _guard_positions_reference(items, cfg, run_of, bucket_of)


# --------------------------------------------------------------------------- avoidance reminder


def test_avoidance_reminder_is_best_unchosen_avoidance() -> None:
    items = [
        episode_item("e1", 0.9),
        episode_item("e2", 0.7),
        episode_item("s", 0.95, kind="success"),
        lesson_item("a", 1.0),
    ]
    chosen = [items[0]]
    reminder = avoidance_reminder(items, chosen)
    assert reminder is not None and reminder.item_id == "e2"
    assert "avoidance reminder" in reminder.reasons[-1]
    assert avoidance_reminder(items, [items[0], items[1]]) is None
    skill = ScoredItem(kind="skill", item=Skill(id="sk", namespace=("ns",), name="s"), score=1.0)
    assert avoidance_reminder([skill], []) is None
