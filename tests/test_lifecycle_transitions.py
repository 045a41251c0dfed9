"""Every lifecycle transition of design.md §6, each with its stated expected outcome.

The table drives ``decide_status`` (the pure rule); the tests below it drive the same
rules through ``judge_activated`` / ``sweep_unused`` / ``LearningMemory.end_run`` and
check the audit record a user reads with ``langmem-plus inspect lesson ID``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from langmem_plus import LearningMemory
from langmem_plus.cli import main
from langmem_plus.config import MemoryConfig
from langmem_plus.learning.lifecycle import Judgement, judge_activated, sweep_unused
from langmem_plus.learning.utility import activation_utility, decide_status
from langmem_plus.records import (
    Activation,
    FailureNote,
    Feedback,
    Lesson,
    LessonStats,
    LessonStatus,
    RunRecord,
    Step,
    TaskSpec,
    Verdict,
)

NS = ("t",)
CFG = MemoryConfig()
TASK = TaskSpec(task_id="t1", goal="g", tool="gridtool", family="f")


def lesson(status: LessonStatus = "candidate", **stats: object) -> Lesson:
    st = LessonStats.model_validate(stats)
    helped, harmed = st.helped, st.harmed
    return Lesson(
        id="l", namespace=NS, rule_text="WRONG: filter -> CORRECT: KEEP", wrong="filter", correct="KEEP",
        triggers=["fpU"], status=status, stats=st, reliability=(helped + 1) / (helped + harmed + 2),
    )


# (name, lesson, runs since activation, expected status, words the reason must contain)
TRANSITIONS = [
    ("candidate -> promoted: 3 evidence runs, mean utility 0.5 >= 0.20",
     lesson(evidence_runs=3, utility_window=[0.5, 0.5, 0.5], helped=3), 0, "promoted", ["promote", "mean_utility=0.500"]),
    ("candidate stays: only 2 evidence runs, however good",
     lesson(evidence_runs=2, utility_window=[0.9, 0.9], helped=2), 0, "candidate", ["unchanged"]),
    ("candidate stays: mean utility 0.1 < 0.20",
     lesson(evidence_runs=3, utility_window=[0.1, 0.1, 0.1], helped=3), 0, "candidate", ["unchanged"]),
    ("candidate stays: pass rate 30 points under baseline blocks promotion",
     lesson(evidence_runs=3, utility_window=[0.5] * 3, helped=3, pass_rate_with=0.6, pass_rate_baseline=0.9), 0,
     "candidate", ["pass rate more than 0.1 under baseline"]),
    ("candidate -> suppressed: 3 evidence runs, mean utility -0.3 <= 0",
     lesson(evidence_runs=3, utility_window=[-0.3] * 3, harmed=3), 0, "suppressed", ["suppress", "mean utility <= 0.0"]),
    ("candidate stays: 2 harmful evidence runs are not yet 3",
     lesson(evidence_runs=2, utility_window=[-0.9, -0.9], harmed=2), 0, "candidate", ["unchanged"]),
    ("promoted -> suppressed: a promoted lesson whose mean utility falls to <= 0",
     lesson("promoted", evidence_runs=1, utility_window=[-0.65], harmed=1), 0, "suppressed", ["promoted lesson fell"]),
    ("candidate -> suppressed: shown in 3 runs, its only measurement harmful, never helped",
     lesson(runs_activated=3, evidence_runs=1, utility_window=[-0.65], harmed=1), 0, "suppressed", ["never helped"]),
    ("candidate stays: shown in 3 runs, measured once harmful and once helpful",
     lesson(runs_activated=3, evidence_runs=2, utility_window=[-0.65, 0.45], harmed=1, helped=1), 0, "candidate", ["unchanged"]),
    ("candidate stays: shown in 2 runs, its only measurement harmful",
     lesson(runs_activated=2, evidence_runs=1, utility_window=[-0.65], harmed=1), 0, "candidate", ["unchanged"]),
    ("promoted stays: mean utility still positive",
     lesson("promoted", evidence_runs=5, utility_window=[0.6, 0.6, 0.6, 0.6, -0.2], helped=4, harmed=1), 0,
     "promoted", ["unchanged"]),
    ("candidate -> suppressed: lost its conflict cluster 3 times",
     lesson(conflict_losses=3), 0, "suppressed", ["conflict cluster 3 times"]),
    ("candidate -> archived: reliability 0.25 <= 0.35 and unused 50 runs",
     lesson(harmed=2), 50, "archived", ["archive", "unused 50 runs"]),
    ("candidate stays: low reliability but used 49 runs ago",
     lesson(harmed=2), 49, "candidate", ["unchanged"]),
    ("candidate stays: unused 80 runs but reliability 0.5 (no evidence either way)",
     lesson(), 80, "candidate", ["unchanged"]),
    ("suppressed stays suppressed: nothing revives it, nothing deletes it",
     lesson("suppressed", evidence_runs=5, utility_window=[0.9] * 5, helped=5), 0, "suppressed", ["already suppressed"]),
    ("archived stays archived", lesson("archived"), 0, "archived", ["already archived"]),
]


@pytest.mark.parametrize(("name", "les", "since", "expected", "words"), TRANSITIONS, ids=[t[0] for t in TRANSITIONS])
def test_each_transition_has_its_stated_outcome(name: str, les: Lesson, since: int, expected: str, words: list[str]) -> None:
    status, reason = decide_status(les, CFG, runs_since_activation=since)
    assert status == expected, name
    for w in words:
        assert w in reason, (name, reason)


def rec(rid: str, seq: int, failures: list[FailureNote], *, activated: list[str] | None = None, steps: int = 4) -> RunRecord:
    return RunRecord(
        run_id=rid, namespace=NS, seq=seq, task_id="t1", family="f", tool="gridtool", passed=True, steps=steps,
        fingerprint_counts={"fpU": len(failures)} if failures else {}, failures=failures, activated=activated or [],
    )


def test_a_run_that_says_nothing_about_a_lesson_is_no_evidence() -> None:
    les = lesson()
    base = rec("r0", 1, [])
    quiet = rec("r1", 2, [], activated=["l"])
    assert activation_utility(lesson=les, run=quiet, prior_runs=[base]) is None
    out = judge_activated(lessons={"l": les}, activations={"l": 2}, first_steps={"l": 0}, run=quiet, prior_runs=[base],
                          task=TASK, referee_gain=None, config=CFG, now=1.0)
    got = out.updated["l"]
    assert got.stats.activations == 2 and got.stats.runs_activated == 1  # counted as shown ...
    assert got.stats.evidence_runs == 0 and "l" not in out.utilities   # ... but not as evidence


def test_a_lesson_that_caused_a_failure_is_judged_even_without_a_baseline() -> None:
    harmful = Lesson(id="h", namespace=NS, rule_text="r", wrong="KEEP", correct="filter", triggers=["fpU"],
                     status="promoted", reliability=0.9)
    caused = FailureNote(fp="fpU", step=0, action="LOAD t | filter a > 1", error="unknown command 'filter'", applied=["h"])
    run = rec("r1", 1, [caused], activated=["h"])
    # no earlier run at all: the failure it caused is still evidence (counterfactual count 0)
    measured = activation_utility(lesson=harmful, run=run, prior_runs=[])
    assert measured is not None and measured.utility == pytest.approx(-0.65)
    out = judge_activated(lessons={"h": harmful}, activations={"h": 1}, first_steps={"h": 0}, run=run, prior_runs=[],
                          task=TASK, referee_gain=None, config=CFG, now=1.0)
    assert out.updated["h"].status == "suppressed"
    t = out.transitions[0]
    assert (t.old, t.new) == ("promoted", "suppressed")
    assert t.evidence["utility_this_run"] == pytest.approx(-0.65) and t.evidence["harmed"] == 1
    assert out.updated["h"].reliability == pytest.approx(1 / 3)  # earned reliability replaces the planted 0.9


def test_sweep_archives_an_unused_unreliable_lesson_and_leaves_the_rest() -> None:
    stale = lesson(harmed=3).model_copy(update={"id": "stale"})
    fresh = lesson(harmed=3).model_copy(update={"id": "fresh", "stats": LessonStats(harmed=3, last_activated_run_seq=40)})
    good = lesson(helped=3).model_copy(update={"id": "good"})
    out = Judgement()
    sweep_unused({l.id: l for l in (stale, fresh, good)}, run_seq=60, skip=set(), config=CFG, out=out)
    assert set(out.updated) == {"stale"} and out.updated["stale"].status == "archived"
    assert out.transitions[0].evidence["runs_since_activation"] == 60


def _failing_step(i: int, action: str, error: str, applied: list[str]) -> Step:
    return Step(index=i, action=action, feedback=Feedback(hard_failure=True, error_text=error), tool="gridtool",
                info={"applied_hints": applied})


def test_suppression_is_audited_and_inspect_answers_why(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mem = LearningMemory.open(tmp_path, namespace=("demo", "gridtool"))
    task = TaskSpec(task_id="g01", goal="g", tool="gridtool", family="filter_select")
    probe = mem.capture(_failing_step(0, "x", "unknown command 'filter' at stage 2", []), run_id="probe", task=task)
    assert probe is not None
    harmful = Lesson(id="les_harm", namespace=mem.namespace, rule_text="WRONG: KEEP -> CORRECT: filter",
                     wrong="KEEP", correct="filter", triggers=[probe.fingerprint_id], status="promoted", reliability=0.9)
    mem.add_lessons([harmful])
    steps = [_failing_step(0, "LOAD people | filter age >= 30", "unknown command 'filter' at stage 2", ["les_harm"]),
             Step(index=1, action="LOAD people | KEEP age >= 30", feedback=Feedback(reward=1.0), tool="gridtool")]
    events = [e for e in (mem.capture(steps[0], run_id="r1", task=task),) if e is not None]
    report = mem.end_run(run_id="r1", task=task, steps=steps, events=events,
                         activations=[Activation(lesson_id="les_harm", run_id="r1", step=0, moment="pre_run")],
                         verdict=Verdict(passed=True, score=1.0))
    assert report.suppressed == ["les_harm"] and mem.get_lesson("les_harm").status == "suppressed"  # type: ignore[union-attr]
    record = next(r for r in mem.history("les_harm") if r["kind"] == "suppressed")
    assert record["old"] == "promoted" and record["evidence"]["utility_this_run"] < 0
    mem.close()
    assert main(["inspect", "lesson", "les_harm", "--store", str(tmp_path), "--namespace", "demo/gridtool"]) == 0
    out = capsys.readouterr().out
    assert "promoted -> suppressed" in out
    assert "why: suppress: promoted lesson fell to mean utility <= 0.0" in out
    assert "evidence: run r1" in out and "utility this run -0.65" in out
    head = out.split("--- history")[0]
    assert json.loads(head)["status"] == "suppressed"
