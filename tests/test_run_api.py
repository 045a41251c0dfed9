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


def taught(db: Path, tmp_path: Path) -> LearningMemory:
    """A memory three runs taught the habit and its fix: a refused `TOP`, then `LIMIT`."""
    memory = LearningMemory.open(tmp_path / "store", namespace=("acme", "agent"))
    for k in range(3):
        with memory.start_run(task(k)) as run:
            run.record(sqlite(db, WRONG))
            run.record(sqlite(db, RIGHT))
    return memory


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
    memory = taught(db, tmp_path)
    try:
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


# --------------------------------------------------------------------------- the parts a loop of its own takes up


def _guarding(path: Path, *, quote: int) -> LearningMemory:
    """A memory with two lessons against `TOP` in a `run_sql` query: a promoted rewrite and a candidate avoidance."""
    from langmem_plus.config import MemoryConfig
    from langmem_plus.records import Lesson, LessonScope

    config = MemoryConfig.model_validate({"retrieval": {"guard_max_lessons": quote}})
    memory = LearningMemory.open(path, namespace=("acme", "agent"), config=config)
    memory.add_lessons([
        Lesson(id="les_limit", namespace=memory.namespace, rule_text="WRONG: TOP <n> <...> -> CORRECT: <...> LIMIT <n>",
               wrong="TOP <n> <...>", correct="<...> LIMIT <n>", scope=LessonScope(tool="run_sql"), status="promoted",
               triggers=["fp"]),
        Lesson(id="les_fetch", namespace=memory.namespace, rule_text="WRONG: TOP <n> <...> -> CORRECT: <...> FETCH FIRST <n> ROWS ONLY",
               wrong="TOP <n> <...>", correct="<...> FETCH FIRST <n> ROWS ONLY", scope=LessonScope(tool="run_sql"),
               status="candidate", triggers=["fp"]),
    ])
    return memory


def test_a_call_check_quotes_the_best_lessons_keeps_every_held_one_and_numbers_it_where_asked(tmp_path: Path) -> None:
    """``check`` with a call's arguments: ``quoted`` (returned as hints, activated at ``step``) is at most
    ``guard_max_lessons`` of ``held``; ``rewritten_args(promoted=True)`` applies only a promoted lesson's fix."""
    memory = _guarding(tmp_path / "store", quote=1)
    try:
        run = Run(memory, task(0), run_id="g-1", step_advice=False)
        hints = run.check("run_sql", {"query": "SELECT TOP 3 a FROM t"}, step=4)
        assert [h.lesson.id for h in run.held] == ["les_limit", "les_fetch"]  # promoted first
        assert [h.lesson.id for h in run.quoted] == ["les_limit"] and len(hints) == 1
        assert [(a.lesson_id, a.step, a.moment) for a in run.activations] == [("les_limit", 4, "guard")]
        assert run.rewritten_args({"query": "SELECT TOP 3 a FROM t"}, promoted=True) == {"query": "SELECT a FROM t LIMIT 3"}
        assert [h.lesson.id for h in run.rewriting()] == ["les_limit", "les_fetch"]
        run.held = [h for h in run.held if h.lesson.status != "promoted"]  # the candidate alone: no fix may run unasked
        assert run.rewritten_args({"query": "SELECT TOP 3 a FROM t"}, promoted=True) is None
        assert run.rewritten_args({"query": "SELECT TOP 3 a FROM t"}) == {"query": "SELECT a FROM t FETCH FIRST 3 ROWS ONLY"}
    finally:
        memory.close()


def test_a_loop_that_shows_lessons_itself_retrieves_through_the_run_and_activates_what_it_showed(db: Path, tmp_path: Path) -> None:
    """``retrieve_pre_run`` and ``retrieve_on_error`` activate nothing; ``activate`` records what the loop showed, at
    the step it names; pre-run items are retrieved once, and a run taken up with ``pre_run`` neither retrieves nor
    activates them again."""
    from langmem_plus.records import WorkingContext

    memory = taught(db, tmp_path)
    try:
        run = Run(memory, task(5), run_id="l-5", step_advice=False)
        pre = run.retrieve_pre_run()
        assert pre and run.activations == [] and run.retrieve_pre_run() is pre
        assert run.activate(pre[:1], moment="pre_run", step=0) == run.activations and len(run.activations) == 1
        event = run.observe(sqlite(db, WRONG))
        assert event is not None
        items = run.retrieve_on_error(event, WorkingContext(last_fail=event.error_text, context="sqlite3"))
        assert items and run.retrieved == items and len(run.activations) == 1
        new = run.activate(items, moment="on_error", step=3, fingerprint_id=event.fingerprint_id)
        assert new and {(a.step, a.moment, a.fingerprint_id) for a in new} == {(3, "on_error", event.fingerprint_id)}
        taken = Run(memory, task(5), run_id="l-5", step_advice=False, steps=run.steps, pre_run=pre[:1])
        assert taken.hints() and taken.activations == []  # shown already: not activated twice
        assert taken.retrieve_pre_run() == pre[:1]
        with pytest.raises(InvalidArgument, match="no step advice"):
            taken.opening()
    finally:
        memory.close()


def test_recording_by_hand_warns_outside_the_package_and_the_run_does_not(db: Path, tmp_path: Path) -> None:
    """The by-hand calls are kept for one release: from a caller's code each warns and names ``start_run``; a
    ``Run``, which is built on them, records a whole run without one warning."""
    import warnings

    memory = LearningMemory.open(tmp_path / "store", namespace=("acme", "agent"))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with memory.start_run(task(0)) as run:
                run.hints()
                run.record(sqlite(db, WRONG))
                run.check("sqlite3", {"query": WRONG})
                run.end(Verdict(passed=False, score=0.0))
        failed = sqlite(db, WRONG)
        with pytest.warns(DeprecationWarning, match=r"LearningMemory\.capture .*start_run") as caught:
            event = memory.capture(failed, run_id="h-1", task=task(1))
        assert event is not None and caught[0].filename == __file__  # the warning points at the caller's line
        with pytest.warns(DeprecationWarning, match="retrieve_on_error"):
            memory.retrieve_on_error(event)
        with pytest.warns(DeprecationWarning, match="end_run"):
            memory.end_run(run_id="h-1", task=task(1), steps=[failed], events=[event])
        with pytest.warns(DeprecationWarning, match="aretrieve_pre_run"):
            asyncio.run(memory.aretrieve_pre_run(task(2)))
    finally:
        memory.close()
