"""Utility, reliability, baselines and the lifecycle rules (design.md §6)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from langmem_plus.config import DEFAULT_CONFIG, MemoryConfig
from langmem_plus.learning.utility import (
    LessonEvidence,
    activation_utility,
    baseline_for,
    decide_status,
    error_reduction,
    record_outcome,
    reliability,
    step_efficiency_gain,
    utility,
)
from langmem_plus.records import Lesson, LessonStats, RunRecord, TaskSpec

NOW = 1_700_000_000.0


def lesson(**kw: object) -> Lesson:
    base: dict[str, object] = dict(id="les_a", namespace=("ns",), rule_text="r", triggers=["fp1"])
    base.update(kw)
    return Lesson.model_validate(base)


def run(
    run_id: str,
    *,
    task: str = "t1",
    fp1: int = 0,
    steps: int = 10,
    passed: bool = True,
    activated: tuple[str, ...] = (),
    family: str | None = None,
    tool: str | None = None,
) -> RunRecord:
    return RunRecord(
        run_id=run_id,
        namespace=("ns",),
        seq=0,
        task_id=task,
        family=family,
        tool=tool,
        steps=steps,
        passed=passed,
        fingerprint_counts={"fp1": fp1, "other": 5},
        activated=list(activated),
    )


def with_outcomes(les: Lesson, utilities: list[float], passed: bool = True) -> Lesson:
    for u in utilities:
        les = record_outcome(les, u, passed=passed, now=NOW)
    return les


# --------------------------------------------------------------------------- formulas


def test_worked_example_without_referee() -> None:
    er = error_reduction(2, 0)
    gain = step_efficiency_gain(10, 8)
    assert er == 1.0 and gain == pytest.approx(0.2)
    assert utility(er, gain, None) == pytest.approx(0.65 * 1 + 0.35 * 0.2)
    assert utility(er, gain, None) == pytest.approx(0.72)


def test_worked_example_with_referee() -> None:
    assert utility(1.0, 0.2, 0.5) == pytest.approx(0.50 + 0.30 * 0.2 + 0.20 * 0.5)


def test_error_reduction_edges() -> None:
    assert error_reduction(4, 1) == 0.75
    assert error_reduction(0, 0) == 0.0
    assert error_reduction(0.5, 0) == 0.5  # divided by max(baseline, 1)
    assert error_reduction(1, 5) == -1.0  # clipped


def test_step_gain_edges() -> None:
    assert step_efficiency_gain(0, 5) == 0.0
    assert step_efficiency_gain(10, 30) == -1.0
    assert step_efficiency_gain(4, 5) == pytest.approx(-0.25)


@given(st.floats(0, 100), st.floats(0, 100), st.floats(0, 100), st.floats(0, 100), st.none() | st.floats(-1, 1))
def test_utility_bounded(b: float, a: float, bs: float, s: float, ref: float | None) -> None:
    er, gain = error_reduction(b, a), step_efficiency_gain(bs, s)
    assert -1.0 <= er <= 1.0 and -1.0 <= gain <= 1.0
    assert -1.0 - 1e-9 <= utility(er, gain, ref) <= 1.0 + 1e-9


def test_reliability_posterior_mean() -> None:
    assert reliability(0, 0) == 0.5
    assert reliability(3, 1) == pytest.approx(4 / 6)
    assert reliability(0, 4) == pytest.approx(1 / 6)


# --------------------------------------------------------------------------- record_outcome


def test_record_outcome_updates_a_copy() -> None:
    original = lesson()
    les = record_outcome(original, 0.5, passed=True, now=NOW)
    les = record_outcome(les, -0.2, passed=False, now=NOW + 1)
    assert original.stats.evidence_runs == 0 and original.stats.utility_window == []
    s = les.stats
    assert (s.evidence_runs, s.helped, s.harmed) == (2, 1, 1)
    assert s.utility_window == [0.5, -0.2]
    assert s.pass_rate_with == pytest.approx(0.5)
    assert les.reliability == pytest.approx(0.5)
    assert les.updated_at == NOW + 1


def test_record_outcome_bounds_window_and_rejects_nan() -> None:
    les = with_outcomes(lesson(), [0.1] * (DEFAULT_CONFIG.lifecycle.utility_window + 5))
    assert len(les.stats.utility_window) == DEFAULT_CONFIG.lifecycle.utility_window
    assert les.stats.evidence_runs == DEFAULT_CONFIG.lifecycle.utility_window + 5
    assert len(record_outcome(les, 0.0, passed=True, now=NOW, window=3).stats.utility_window) == 3
    with pytest.raises(ValueError):
        record_outcome(les, float("nan"), passed=True, now=NOW)


# --------------------------------------------------------------------------- decide_status


def test_promote_after_three_runs_at_0_3_not_after_two() -> None:
    two = with_outcomes(lesson(), [0.3, 0.3])
    assert decide_status(two, runs_since_activation=0)[0] == "candidate"
    three = with_outcomes(lesson(), [0.3, 0.3, 0.3])
    status, reason = decide_status(three, runs_since_activation=0)
    assert status == "promoted"
    assert "mean_utility=0.300" in reason and "evidence_runs=3" in reason


def test_low_utility_is_not_promoted() -> None:
    les = with_outcomes(lesson(), [0.15, 0.15, 0.15])
    assert decide_status(les, runs_since_activation=0)[0] == "candidate"


def test_suppress_at_three_activations_with_mean_zero() -> None:
    les = with_outcomes(lesson(), [0.5, -0.5, 0.0])
    status, reason = decide_status(les, runs_since_activation=0)
    assert status == "suppressed" and reason.startswith("suppress")
    assert decide_status(with_outcomes(lesson(), [0.0, 0.0]), runs_since_activation=0)[0] == "candidate"


def test_promoted_lesson_falling_to_zero_is_suppressed() -> None:
    cfg = MemoryConfig(lifecycle={"promote_min_runs": 2, "suppress_min_activations": 5})
    les = with_outcomes(lesson(status="promoted"), [0.1, -0.3])
    assert decide_status(les, cfg, runs_since_activation=0)[0] == "suppressed"
    assert decide_status(les.model_copy(update={"status": "candidate"}), cfg, runs_since_activation=0)[0] == "candidate"


def test_conflict_losses_suppress() -> None:
    les = lesson(stats=LessonStats(conflict_losses=3))
    status, reason = decide_status(les, runs_since_activation=0)
    assert status == "suppressed" and "conflict" in reason
    assert decide_status(lesson(stats=LessonStats(conflict_losses=2)), runs_since_activation=0)[0] == "candidate"


def test_pass_rate_drop_blocks_promotion() -> None:
    good = with_outcomes(lesson(), [0.4, 0.4, 0.4])

    def rates(with_: float, baseline: float) -> Lesson:
        stats = good.stats.model_copy(update={"pass_rate_with": with_, "pass_rate_baseline": baseline})
        return good.model_copy(update={"stats": stats})

    assert decide_status(rates(0.8, 0.9), runs_since_activation=0)[0] == "promoted"  # exactly 10 points under
    far_under = rates(0.5, 0.9)
    status, reason = decide_status(far_under, runs_since_activation=0)
    assert status == "candidate" and "pass rate" in reason


def test_archive_unreliable_unused_lessons() -> None:
    weak = lesson(reliability=0.25)
    assert decide_status(weak, runs_since_activation=50)[0] == "archived"
    assert decide_status(weak, runs_since_activation=49)[0] == "candidate"
    assert decide_status(lesson(reliability=0.6), runs_since_activation=500)[0] == "candidate"


def test_suppressed_and_archived_stay() -> None:
    for status in ("suppressed", "archived"):
        les = with_outcomes(lesson(status=status), [0.9, 0.9, 0.9])
        assert decide_status(les, runs_since_activation=0)[0] == status


def test_lesson_evidence_reads_stats() -> None:
    les = with_outcomes(lesson(), [0.2, 0.4])
    ev = LessonEvidence.of(les, runs_since_activation=7)
    assert ev.mean_utility == pytest.approx(0.3) and ev.evidence_runs == 2 and ev.runs_since_activation == 7


# --------------------------------------------------------------------------- baselines


def test_baseline_prefers_same_task_then_family_then_tool() -> None:
    runs = [
        run("r1", task="t1", fp1=2, steps=10, passed=True),
        run("r2", task="t1", fp1=4, steps=20, passed=False),
        run("r3", task="t2", fp1=9, steps=99, family="fam", tool="gridtool"),
        run("r4", task="t1", fp1=50, steps=50, activated=("les_a",)),  # had the lesson: not a baseline
    ]

    def base(task_id: str) -> tuple[float | None, float | None, float | None]:
        return baseline_for(["fp1"], runs, lesson_id="les_a", task_id=task_id, family="fam", tool="gridtool")

    assert base("t1") == (3.0, 15.0, 0.5)
    assert base("t9") == (9.0, 99.0, 1.0)  # no run of t9: same family
    tool_only = baseline_for(["fp1"], runs, lesson_id="les_a", task_id="t9", family="other", tool="gridtool")
    assert tool_only == (9.0, 99.0, 1.0)
    assert baseline_for(["fp1"], runs, lesson_id="les_a", task_id="t9", family=None, tool=None) == (None, None, None)


def test_activation_utility_worked_example() -> None:
    prior = [run("r1", fp1=2, steps=10, passed=True), run("r2", fp1=2, steps=10, passed=False)]
    now_run = run("r3", fp1=0, steps=8, activated=("les_a",))
    measured = activation_utility(lesson=lesson(), run=now_run, prior_runs=prior)
    assert measured is not None
    assert measured.utility == pytest.approx(0.72) and measured.baseline_pass_rate == 0.5


def test_activation_utility_no_evidence_when_triggers_not_at_stake() -> None:
    prior = [run("r1", fp1=0, steps=10)]
    quiet = run("r2", fp1=0, steps=6, activated=("les_a",))
    assert activation_utility(lesson=lesson(), run=quiet, prior_runs=prior) is None
    # Triggers did occur this run although the baseline had none: that is evidence (negative).
    noisy = run("r2", fp1=1, steps=10, activated=("les_a",))
    measured = activation_utility(lesson=lesson(), run=noisy, prior_runs=prior)
    assert measured is not None and measured.utility == pytest.approx(0.65 * -1.0)


def test_activation_utility_none_without_comparable_runs_and_ignores_itself() -> None:
    this = run("r1", fp1=0, steps=8, activated=())
    assert activation_utility(lesson=lesson(), run=this, prior_runs=[this]) is None
    other_task = run("r0", task="t2", fp1=3)
    task = TaskSpec(task_id="t1", goal="g", family="fam")
    assert activation_utility(lesson=lesson(), run=this, prior_runs=[other_task], task=task) is None


def test_activation_utility_uses_referee_gain_and_repeats_after() -> None:
    prior = [run("r1", fp1=4, steps=10)]
    this = run("r2", fp1=4, steps=10, activated=("les_a",))
    m = activation_utility(lesson=lesson(), run=this, prior_runs=prior, repeats_after=2, referee_gain=0.5)
    assert m is not None and m.utility == pytest.approx(0.50 * 0.5 + 0.20 * 0.5)
