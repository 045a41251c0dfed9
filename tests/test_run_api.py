"""One way to record a run: ``memory.start_run(task)`` over a real program (sqlite3) and a real text game."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from pathlib import Path

import pytest

from langmem_plus import InvalidArgument, LearningMemory, Step, TaskSpec, Verdict
from langmem_plus.memory.run import Run
from langmem_plus.records import Feedback

pytestmark = pytest.mark.skipif(shutil.which("sqlite3") is None, reason="needs the sqlite3 program")

WRONG = "SELECT TOP 2 name FROM pets ORDER BY age"
RIGHT = "SELECT name FROM pets ORDER BY age LIMIT 2"


def sqlite(db: Path, query: str) -> Step:
    """One real call of the sqlite3 program, as a step: its output, or its error as a hard failure."""
    proc = subprocess.run(["sqlite3", str(db), query], capture_output=True, text=True, timeout=30)
    failed = proc.returncode != 0 or "Error" in proc.stderr
    return Step(index=0, action=query, tool="sqlite3", observation=proc.stdout,
                feedback=Feedback(hard_failure=failed, error_text=proc.stderr.strip()))


@pytest.fixture()
def db(tmp_path: Path) -> Path:
    path = tmp_path / "pets.db"
    subprocess.run(["sqlite3", str(path), "CREATE TABLE pets(name TEXT, age INT); INSERT INTO pets VALUES ('a', 3), ('b', 1), ('c', 2);"],
                   check=True, timeout=30)
    return path


def task(k: int) -> TaskSpec:
    return TaskSpec(task_id=f"youngest-{k}", goal="the two youngest pets' names", tool="sqlite3")


def test_a_run_learns_from_a_real_failure_and_holds_the_mistake_before_it_runs(db: Path, tmp_path: Path) -> None:
    memory = LearningMemory.open(tmp_path / "store", namespace=("acme", "agent"))
    try:
        for k in range(3):  # the agent's habit: TOP first, then the fix the error leads it to
            with memory.start_run(task(k)) as run:
                first = sqlite(db, WRONG)
                assert first.feedback.hard_failure, "sqlite3 must refuse TOP for the test to mean anything"
                run.record(first)
                run.record(sqlite(db, RIGHT))
                report = run.end(Verdict(passed=True, score=1.0))
            assert report.steps == 2 and report.tool_errors == 1
        assert memory.lessons, "three runs of the same mistake and its fix teach a lesson"
        with memory.start_run(task(9)) as run:
            held = run.check("sqlite3", {"query": WRONG})
            assert held, "the lesson is held against the mistake before the call runs"
            fixed = run.rewritten_args({"query": WRONG})
            assert fixed is not None and "LIMIT 2" in fixed["query"] and "TOP" not in fixed["query"]
            assert not run.check("sqlite3", {"query": RIGHT})
            step = sqlite(db, fixed["query"])
            assert not step.feedback.hard_failure and step.observation.split() == ["b", "c"]
            run.record(step)
            report = run.end(Verdict(passed=True, score=1.0))
        assert report.tool_errors == 0 and report.lesson_activations >= 1  # what was held is measured by the outcome
    finally:
        memory.close()


def test_a_run_records_fields_ends_once_and_refuses_bad_input(tmp_path: Path) -> None:
    memory = LearningMemory.open(tmp_path / "store", namespace=("acme", "agent"))
    try:
        run = memory.start_run(task(0), run_id="r-1")
        assert run.record(action="SELECT 1", observation="1", tool="sqlite3") == []
        assert [s.index for s in run.steps] == [0]
        with pytest.raises(InvalidArgument, match="no field"):
            run.record(action="x", observaton="typo")
        with pytest.raises(InvalidArgument, match="not both"):
            run.record(Step(index=0, action="x"), action="y")
        assert run.end().run_id == "r-1"
        with pytest.raises(InvalidArgument, match="has ended"):
            run.record(action="SELECT 2")
        assert [r.run_id for r in memory.runs] == ["r-1"]
        with memory.start_run(task(1), run_id="r-2") as left_open:
            left_open.record(action="SELECT 3", tool="sqlite3")
        assert left_open.report is not None and [r.run_id for r in memory.runs] == ["r-1", "r-2"]
    finally:
        memory.close()


def test_a_run_taken_up_from_what_it_recorded_carries_on_where_it_was(db: Path, tmp_path: Path) -> None:
    """A run whose record lives elsewhere between calls (a graph's state, an agent's state) is taken up from its
    steps, events and activations: a step another loop numbered is observed as it is, the next recorded step is
    numbered after them all, and the end counts them all."""
    memory = LearningMemory.open(tmp_path / "store", namespace=("acme", "agent"))
    try:
        for k in range(3):
            with memory.start_run(task(k)) as run:
                run.record(sqlite(db, WRONG))
                run.record(sqlite(db, RIGHT))
        first = memory.start_run(task(7), run_id="t-7")
        assert first.record(sqlite(db, WRONG)), "a failure with a lesson for it returns the lesson"
        assert first.retrieved and first.activations and first.events
        taken = Run(memory, task(7), run_id="t-7", step_advice=False, steps=first.steps, events=first.events,
                    activations=first.activations)
        shown = list(taken.activations)
        event = taken.observe(sqlite(db, WRONG).model_copy(update={"index": 1}))  # a step another loop numbered
        assert event is not None and event.step == 1 and taken.activations == shown  # captured, no lessons asked for
        taken.record(sqlite(db, RIGHT))
        assert [s.index for s in taken.steps] == [0, 1, 2]
        report = taken.end(Verdict(passed=True, score=1.0))
        assert report.steps == 3 and report.tool_errors == 2  # the two refused TOPs
        assert report.lesson_activations >= len(first.activations)  # what the first part showed is measured
        assert first.steps == [taken.steps[0]]  # taking a run up copies what it recorded
    finally:
        memory.close()


def test_the_async_run_is_the_same_run(db: Path, tmp_path: Path) -> None:
    memory = LearningMemory.open(tmp_path / "store", namespace=("acme", "agent"))

    async def play() -> int:
        async with memory.astart_run(task(0), run_id="a-1") as run:
            assert await run.hints() == []
            await run.record(sqlite(db, WRONG))
            await run.record(action=RIGHT, tool="sqlite3", observation="b\nc")
            assert await run.check("sqlite3", {"query": RIGHT}) == []
        assert run.report is not None
        return run.report.tool_errors

    try:
        assert asyncio.run(play()) == 1
    finally:
        memory.close()


def test_a_text_game_run_gets_the_step_advice_of_its_domain(tmp_path: Path) -> None:
    """A TextWorldExpress game lost to a fatal command, then the same mistake proposed in a new game: ``check``
    answers it with the game plugin's step advice, ``hints`` carries what stands at the step."""
    pytest.importorskip("textworld_express")
    from langmem_plus.bench.designs.base import Context, run_episode
    from langmem_plus.bench.env import _tasks
    from langmem_plus.envs.registry import make_env
    from langmem_plus.textgames.executor import TextGameExecutor

    memory = LearningMemory.open(tmp_path / "store", namespace=("acme", "cook"))
    env = make_env("twx-cooking:easy")
    try:
        taught = 0
        for t in _tasks(env, "train", list(range(12))):
            traj = run_episode(env, TextGameExecutor(seed=0), t, Context(), run_id=t.task_id, max_steps=40)
            fatal = next((s for s in traj.steps if s.feedback.constraint_failure), None)
            with memory.start_run(traj.task, run_id=f"c-{t.task_id}") as run:
                for s in traj.steps:
                    run.record(s)
                run.end(traj.verdict)
            taught += fatal is not None
        assert taught and memory.text_rules(memory.runs[-1].tool), "lost games teach the plugin's rules"
        advised = 0
        for t in _tasks(env, "dev", list(range(10))):
            env.reset(t.task_id)
            run = memory.start_run(t.model_copy(update={"context": {"goal": env.goal, "valid_actions": list(env.valid_actions)}}))
            held = [run.check(a) for a in env.valid_actions]
            advised += any(held) or bool(run.hints())
            run.end()
        assert advised, "the step advice reaches a new game through the run"
    finally:
        env.close()
        memory.close()
