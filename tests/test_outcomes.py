"""Lessons judged by what their calls led to: a real gridtool run through the reference graph, where a fix that
runs and gives the wrong result measures below zero, the right one above, and a promoted lesson that turns harmful
is demoted and no longer delivered."""

from __future__ import annotations

from pathlib import Path

import pytest

from langmem_plus import LearningMemory
from langmem_plus.envs.registry import make_env
from langmem_plus.executors.scripted import ScriptedExecutor
from langmem_plus.graph import build_executor_referee_graph, run_task
from langmem_plus.records import Lesson, LessonScope, TaskSpec

NS = ("acme", "outcomes")


def planted(path: Path, correct: str) -> LearningMemory:
    memory = LearningMemory.open(path, namespace=NS)
    memory.add_lessons([Lesson(id="les_sort", namespace=NS, rule_text=f"WRONG: sort * desc -> CORRECT: {correct}",
                               wrong="sort * desc", correct=correct, scope=LessonScope(tool="gridtool"),
                               status="promoted", reliability=0.9, triggers=["fp-sort"])])
    return memory


def oldest_three(env: object) -> TaskSpec:
    return next(t for t in env.tasks() if t.task_id == "g06")  # type: ignore[attr-defined]


@pytest.mark.parametrize("correct, sign", [("SORT * UP", -1), ("SORT * DOWN", 1)])
def test_a_lesson_is_judged_by_the_result_of_the_call_it_shaped(tmp_path: Path, correct: str, sign: int) -> None:
    memory = planted(tmp_path, correct)
    env = make_env("gridtool")
    out = run_task(build_executor_referee_graph(memory, env, ScriptedExecutor(seed=0)), oldest_three(env), run_id="r1")
    shaped = [s for s in out["steps"] if "les_sort" in s.info.get("applied_hints", [])]
    assert shaped  # the executor wrote the lesson into its calls
    if sign < 0:  # the wrong direction runs without a tool error and gives the wrong rows: a constraint failure
        assert any(s.feedback.constraint_failure and not s.feedback.hard_failure for s in shaped)
    utility = out["report"].utilities["les_sort"]
    assert utility * sign > 0, utility
    memory.close()


def test_a_promoted_lesson_whose_calls_do_the_wrong_thing_is_demoted_and_stops_being_delivered(tmp_path: Path) -> None:
    memory = planted(tmp_path, "SORT * UP")
    env = make_env("gridtool")
    graph = build_executor_referee_graph(memory, env, ScriptedExecutor(seed=0))
    report = run_task(graph, oldest_three(env), run_id="r1")["report"]
    assert "les_sort" in report.suppressed
    kept = memory.get_lesson("les_sort")
    assert kept is not None and kept.status == "suppressed"
    [change] = [h for h in memory.history("les_sort") if h.get("new") == "suppressed"]
    assert "utility" in change["reason"]
    again = run_task(graph, oldest_three(env), run_id="r2")
    assert all("les_sort" not in s.info.get("applied_hints", []) for s in again["steps"])
    assert "les_sort" not in again["report"].activated_lesson_ids
    memory.close()


def test_the_promotion_gate_has_no_baseline_in_runs_that_all_failed() -> None:
    from langmem_plus.learning.baselines import baseline_for
    from langmem_plus.records import RunRecord

    failing = [RunRecord(run_id=f"r{i}", namespace=NS, seq=i, task_id="t", passed=False, steps=5) for i in range(3)]
    assert baseline_for([], failing, lesson_id="l", task_id="t", family=None, tool=None)[2] is None
    can_pass = [*failing, RunRecord(run_id="r9", namespace=NS, seq=9, task_id="t", passed=True, steps=5)]
    assert baseline_for([], can_pass, lesson_id="l", task_id="t", family=None, tool=None)[2] == 0.25


def test_a_call_that_set_the_score_back_blames_its_lesson_and_one_that_raised_it_credits_its_own() -> None:
    from langmem_plus.learning.outcomes import step_outcomes
    from langmem_plus.records import Feedback, Step

    def step(i: int, lesson: str, progress: float | None, **fb: object) -> Step:
        return Step(index=i, action=f"a{i}", info={"applied_hints": [lesson]}, feedback=Feedback(progress=progress, **fb))

    steps = [step(0, "up", 0.5), step(1, "err", 0.1, hard_failure=True),  # a hard failure is judged by its error
             step(2, "flat", 0.5), step(3, "down", 0.25), step(4, "quiet", None)]
    found = step_outcomes(steps, None)
    assert {k: v.value(passed=True) for k, v in found.items()} == {"up": 1.0, "down": -1.0}
    assert step_outcomes(steps, None, progress=False) == {}  # the score is no outcome when switched off
