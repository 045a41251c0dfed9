"""End-of-run maths with stated answers: lesson-specific utility, guards, integration of candidates."""

from __future__ import annotations

from langmem_plus.config import MemoryConfig
from langmem_plus.learning.lifecycle import integrate_candidates, judge_activated, run_outcome
from langmem_plus.learning.utility import addressed_failures, count_addressed
from langmem_plus.records import (
    ErrorEvent,
    FailureNote,
    Feedback,
    Lesson,
    LessonScope,
    Provenance,
    RunRecord,
    ScoredItem,
    Step,
    TaskSpec,
    Verdict,
)
from langmem_plus.retrieval.select import apply_guards

NS = ("t",)
CFG = MemoryConfig()
TASK = TaskSpec(task_id="t1", goal="g", tool="gridtool", family="f")


def lesson(lid: str, wrong: str | None, correct: str | None, *, runs: list[str] | None = None, tag: str = "unknown_command") -> Lesson:
    return Lesson(
        id=lid,
        namespace=NS,
        rule_text=f"WRONG: {wrong} -> CORRECT: {correct}",
        wrong=wrong,
        correct=correct,
        triggers=["fpU"],
        tags=[tag],
        scope=LessonScope(tool="gridtool"),
        provenance=Provenance(run_ids=runs or ["r0"]),
    )


def run(rid: str, seq: int, failures: list[FailureNote], *, activated: list[str] = (), steps: int = 4) -> RunRecord:  # type: ignore[assignment]
    return RunRecord(
        run_id=rid, namespace=NS, seq=seq, task_id="t1", family="f", tool="gridtool", passed=True, steps=steps,
        fingerprint_counts={"fpU": len(failures)}, failures=failures, activated=list(activated),
    )


def test_a_lesson_is_not_blamed_for_failures_of_its_siblings() -> None:
    select = lesson("sel", "select", "PICK")
    notes = [
        FailureNote(fp="fpU", step=0, action="LOAD t | select a", error="unknown command 'select'"),
        FailureNote(fp="fpU", step=2, action="LOAD t | PICK a | limit 3", error="unknown command 'limit'"),
    ]
    assert addressed_failures(select, run("r", 1, notes)) == 1  # only the select failure
    assert count_addressed(select, notes[1:]) == 0


def test_a_lesson_is_blamed_for_failures_it_caused() -> None:
    harmful = lesson("bad", "KEEP", "filter")
    notes = [FailureNote(fp="fpU", step=0, action="LOAD t | filter a > 1", error="unknown command 'filter'", applied=["bad"])]
    assert addressed_failures(harmful, run("r", 1, notes)) == 1


def test_only_failures_after_the_activation_count_against_the_lesson() -> None:
    select = lesson("sel", "select", "PICK")
    baseline = run("r1", 1, [FailureNote(fp="fpU", step=0, action="x | select a")], steps=4)
    # activated on error at step 1, after the failure at step 0 that it answered: full credit
    now_run = run("r2", 2, [FailureNote(fp="fpU", step=0, action="x | select a")], activated=["sel"], steps=2)
    out = judge_activated(
        lessons={"sel": select}, activations={"sel": 1}, first_steps={"sel": 1}, run=now_run,
        prior_runs=[baseline], task=TASK, referee_gain=None, config=CFG, now=10.0,
    )
    # error_reduction (1 - 0) / 1 = 1; steps (4 - 2) / 4 = 0.5; 0.65 * 1 + 0.35 * 0.5
    assert abs(out.utilities["sel"] - 0.825) < 1e-9
    # shown before the failure (pre-run at step 0) and not applied: the failure counts, no gain
    out = judge_activated(
        lessons={"sel": select}, activations={"sel": 1}, first_steps={"sel": 0}, run=now_run,
        prior_runs=[baseline], task=TASK, referee_gain=None, config=CFG, now=10.0,
    )
    assert abs(out.utilities["sel"] - 0.35 * 0.5) < 1e-9


def test_promotion_after_three_good_runs_is_audited_with_evidence() -> None:
    sel = lesson("sel", "select", "PICK")
    prior = [run("r0", 1, [FailureNote(fp="fpU", step=0, action="x | select a")], steps=4)]
    lessons = {"sel": sel}
    transitions = []
    for i in range(3):
        r = run(f"r{i + 1}", i + 2, [], activated=["sel"], steps=2)
        out = judge_activated(
            lessons=lessons, activations={"sel": 1}, first_steps={"sel": 0}, run=r,
            prior_runs=prior, task=TASK, referee_gain=None, config=CFG, now=float(i),
        )
        lessons = {"sel": out.updated["sel"]}
        transitions += out.transitions
        prior.append(r)
    assert lessons["sel"].status == "promoted"
    assert [t.new for t in transitions] == ["promoted"]
    assert transitions[0].evidence["evidence_runs"] == 3 and len(transitions[0].evidence["utility_window"]) == 3


def _scored(l: Lesson, score: float) -> ScoredItem:
    return ScoredItem(kind="lesson", item=l, score=score)


def test_tag_bucket_caps_fixes_of_the_same_thing_not_distinct_fixes() -> None:
    two_runs = ["r0", "r1"]  # corroborated, so the per-run cap stays out of this test
    distinct = [
        _scored(lesson(f"l{i}", w, w.upper(), runs=two_runs), 1.0 - i / 10)
        for i, w in enumerate(["from", "filter", "select", "limit"])
    ]
    kept, _ = apply_guards(distinct, CFG)
    assert len(kept) == 4  # four different WRONG patterns under one tag are four facts
    same = [_scored(lesson(f"s{i}", "select", c, runs=two_runs), 1.0 - i / 10) for i, c in enumerate(["PICK", "pick", "Pick"])]
    kept, dropped = apply_guards(same, CFG)
    assert len(kept) == CFG.retrieval.tag_bucket_cap and any("tag_bucket_cap" in why for _, why in dropped)


def test_per_run_cap_applies_to_single_run_lessons_only() -> None:
    single = [_scored(lesson(f"a{i}", f"w{i}", f"c{i}", tag=f"t{i}", runs=["r0"]), 1 - i / 10) for i in range(5)]
    kept, _ = apply_guards(single, CFG)
    assert len(kept) == CFG.retrieval.per_run_cap
    corroborated = [_scored(lesson(f"b{i}", f"w{i}", f"c{i}", tag=f"t{i}", runs=["r0", "r9"]), 1 - i / 10) for i in range(5)]
    kept, _ = apply_guards(corroborated, CFG)
    assert len(kept) == 5


def test_integrate_merges_relearned_rule_and_links_real_conflicts() -> None:
    base = lesson("les_a", "select", "PICK")
    again = base.model_copy(update={"provenance": Provenance(run_ids=["r5"])})
    rival = lesson("les_b", "select", "CHOOSE")
    sibling = lesson("les_c", "limit", "TOP")
    out = integrate_candidates([again, rival, sibling], {"les_a": base}, CFG, now=1.0)
    assert out.merged == [("les_a", "les_a")]
    assert out.upserts["les_a"].provenance.run_ids == ["r0", "r5"]
    assert ("les_b", "les_a") in out.conflicts and "les_b" in out.upserts["les_a"].conflicts_with
    assert "les_c" in out.created and not out.upserts["les_c"].conflicts_with


def test_run_outcome_counts_tool_errors_repeats_and_applied_lessons() -> None:
    steps = [
        Step(index=0, action="a", feedback=Feedback(hard_failure=True, error_text="e1"), info={"applied_hints": ["l1"]}),
        Step(index=1, action="docs", info={"kind": "docs"}),
        Step(index=2, action="b", feedback=Feedback(hard_failure=True, error_text="e1")),
        Step(index=3, action="c", feedback=Feedback(reward=1.0)),
    ]
    events = [
        ErrorEvent(id=f"e{i}", namespace=NS, run_id="r", step=i, fingerprint="f", fingerprint_id="fp", channel="hard", action=s.action)
        for i, s in enumerate(steps) if s.feedback.hard_failure
    ]
    out = run_outcome(steps, events, Verdict(passed=True, score=1.0))
    assert (out.tool_errors, out.repeated_errors, out.fingerprint_counts) == (2, 1, {"fp": 2})
    assert out.applied == ["l1"] and [f.step for f in out.failures] == [0, 2]
