"""A memory taught by wrong feedback repairs itself: corrected verdicts re-fold what the runs said, a suppressed
lesson learned again from a passing fix is restored, a promoted lesson whose evidence turns is demoted, and a detour
fix loses its conflict to the direct one. Real gridtool runs through the reference graph."""

from __future__ import annotations

from pathlib import Path

import pytest

from langmem_plus import LearningMemory
from langmem_plus.bench.feedback_stress import WRONG_MANUAL, InvertedReferee, run_scenario
from langmem_plus.config import DEFAULT_CONFIG
from langmem_plus.demo import LogicalClock
from langmem_plus.envs.gridtool import GridToolEnv
from langmem_plus.errors import InvalidArgument
from langmem_plus.executors.scripted import ScriptedExecutor
from langmem_plus.graph import build_executor_referee_graph, run_task
from langmem_plus.learning.utility import decide_status
from langmem_plus.memory import Trajectory
from langmem_plus.records import Lesson, LessonStats, ScoredItem
from langmem_plus.referee import DeterministicReferee, ReplayReferee
from langmem_plus.retrieval.select import select

NS = ("acme", "repair")


def _runs(memory: LearningMemory, env: GridToolEnv, referee: object, tag: str, tasks: list[str]) -> dict[str, object]:
    graph = build_executor_referee_graph(memory, env, ScriptedExecutor(seed=0), referee=referee)  # type: ignore[arg-type]
    return {t.task_id: run_task(graph, t, run_id=f"{tag}-{t.task_id}") for t in env.tasks() if t.task_id in tasks}


def test_a_corrected_verdict_refolds_the_lessons_the_run_measured_and_retires_its_success(tmp_path: Path) -> None:
    memory = LearningMemory.open(tmp_path, namespace=NS, clock=LogicalClock(1.7e9))
    env = GridToolEnv(docs_edits=WRONG_MANUAL, silent=True)
    truth = DeterministicReferee(env)
    learned = _runs(memory, env, InvertedReferee(truth), "learn", ["g06", "g07"])  # the wrong sort spelling, told it passed
    out = _runs(memory, env, InvertedReferee(truth), "use", ["g06"])["g06"]
    wrong = next(l for l in memory.list_lessons() if l.wrong == "sort * desc")
    assert wrong.correct == "SORT * UP" and out["report"].utilities[wrong.id] > 0  # the lie made it look good
    stored = next(r for r in memory.runs if r.run_id == "use-g06")
    successes = [e for e in memory.episodes() if e.kind == "success" and "use-g06" in e.run_ids]
    assert stored.passed and successes

    fixed = memory.correct_verdict("use-g06", truth.judge(out["task"], out["steps"]))  # type: ignore[index]
    assert fixed["lessons"][wrong.id]["utility"][1] < 0 < fixed["lessons"][wrong.id]["utility"][0]
    assert not next(r for r in memory.runs if r.run_id == "use-g06").passed
    kept = memory.get_lesson(wrong.id)
    assert kept is not None and kept.stats.utility_window[-1] < 0
    assert not [e for e in memory.episodes() if e.retired]  # its episode also stands on runs still judged passed
    for task_id, run in learned.items():  # the right referee judges the rest of the wrong phase again
        memory.correct_verdict(f"learn-{task_id}", truth.judge(run["task"], run["steps"]))  # type: ignore[index]
    retired = {e.episode_id for e in memory.episodes() if e.retired}
    assert {e.episode_id for e in successes} <= retired
    assert any(r["kind"] == "verdict_corrected" and r["run_id"] == "use-g06" for r in memory.audit.read())
    memory.close()


def test_rejudging_stored_runs_with_the_right_referee_corrects_only_the_verdicts_that_change(tmp_path: Path) -> None:
    memory = LearningMemory.open(tmp_path, namespace=NS, clock=LogicalClock(1.7e9))
    env = GridToolEnv(docs_edits=WRONG_MANUAL, silent=True)
    truth = DeterministicReferee(env)
    played = _runs(memory, env, InvertedReferee(truth), "learn", ["g06", "g07"])
    truth = ReplayReferee(GridToolEnv(silent=True))  # judges each stored run from its own commands, not the env's state
    runs = [Trajectory(task=out["task"], steps=out["steps"], run_id=f"learn-{task_id}")  # type: ignore[index]
            for task_id, out in played.items()]
    with pytest.raises(InvalidArgument, match="never-stored"):
        memory.rejudge(truth, [*runs, Trajectory(task=runs[0].task, run_id="never-stored")])
    assert all(r["kind"] != "verdict_corrected" for r in memory.audit.read())  # refused whole: nothing corrected
    assert memory.rejudge(InvertedReferee(truth), runs) == []  # the same referee says the same: nothing to correct
    passed_before = {r.run_id: r.passed for r in memory.runs}
    fixed = memory.rejudge(truth, runs)
    assert fixed and {f["run_id"] for f in fixed} <= {r.run_id for r in runs}
    for f in fixed:
        now = next(r for r in memory.runs if r.run_id == f["run_id"])
        assert now.passed != passed_before[f["run_id"]]
    wrong = next(l for l in memory.list_lessons() if l.wrong == "sort * desc")
    assert wrong.stats.utility_window and wrong.stats.utility_window[-1] < 0  # its wrong answers now count against it
    assert memory.rejudge(truth, runs) == []  # judged right once, there is nothing left to correct
    memory.close()


def test_a_suppressed_lesson_learned_again_from_a_passing_fix_is_restored(tmp_path: Path) -> None:
    env = GridToolEnv(silent=True)
    with LearningMemory.open(tmp_path / "first", namespace=NS, clock=LogicalClock(1.7e9)) as first:
        _runs(first, env, DeterministicReferee(env), "learn", ["g06"])
        top = next(l for l in first.list_lessons() if l.wrong == "limit")
    memory = LearningMemory.open(tmp_path / "second", namespace=NS, clock=LogicalClock(1.7e9))
    memory.add_lessons([top.model_copy(update={"status": "suppressed", "stats": LessonStats()})])  # suppressed for another's fault
    assert memory.get_lesson(top.id).status == "suppressed"  # type: ignore[union-attr]
    out = _runs(memory, env, DeterministicReferee(env), "again", ["g07"])["g07"]
    assert out["report"].passed and top.id in out["report"].merged_lessons
    assert memory.get_lesson(top.id).status == "candidate"  # type: ignore[union-attr]
    assert any(h.get("new") == "candidate" and "restore" in (h.get("reason") or "") for h in memory.history(top.id))
    memory.close()


def _lesson(lid: str, wrong: str, correct: str, status: str = "candidate", **stats: object) -> Lesson:
    return Lesson(id=lid, namespace=NS, rule_text=f"WRONG: {wrong} -> CORRECT: {correct}", wrong=wrong, correct=correct,
                  status=status, stats=LessonStats(**stats))  # type: ignore[arg-type]


def test_a_promoted_lesson_whose_latest_evidence_turned_is_demoted() -> None:
    window = [0.9] * 10 + [-1.0] * DEFAULT_CONFIG.lifecycle.demote_window
    turned = _lesson("l", "a", "b", "promoted", evidence_runs=len(window), utility_window=window, helped=10, harmed=5)
    status, reason = decide_status(turned, runs_since_activation=0)
    assert status == "suppressed" and "evidence turned" in reason
    steady = turned.model_copy(update={"stats": turned.stats.model_copy(update={"utility_window": [0.9] * 15})})
    assert decide_status(steady, runs_since_activation=0)[0] == "promoted"


def test_a_detour_fix_loses_its_conflict_to_the_direct_one() -> None:
    direct = _lesson("direct", "select", "PICK").model_copy(update={"conflicts_with": ["detour"], "reliability": 0.6})
    detour = _lesson("detour", "select", "project").model_copy(update={"conflicts_with": ["direct"], "reliability": 0.9})
    hop = _lesson("hop", "project", "PICK")
    items = [ScoredItem(kind="lesson", item=l, score=s) for l, s in ((detour, 0.9), (direct, 0.8), (hop, 0.7))]
    kept = [i.item_id for i in select(items, vectors=None, k=3, config=DEFAULT_CONFIG)]
    assert "direct" in kept and "detour" not in kept


def test_the_feedback_scenarios_run_both_memories_and_report_their_targets() -> None:
    result = run_scenario("wrong_feedback", seed=0, wrong_runs=1, right_runs=2)
    assert [r["phase"] for r in result["runs"]] == ["wrong", "right", "right"]
    assert result["verdicts_corrected"] > 0  # the right referee judged the wrong phase again
    wrong = result["runs"][0]["scenario"]
    assert wrong["wrong_answers"] > 0 and result["runs"][0]["clean"]["wrong_answers"] == 0
    assert set(result) >= {"runs_to_clean_level", "harmful_still_promoted", "denied_still_recalled", "meets_target"}
