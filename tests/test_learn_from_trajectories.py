"""``LearningMemory.learn_from_trajectories``: trajectories users have (a real ``create_agent`` run's messages, plain
lists) become stored workflow skills that a reopened memory grounds; a followed workflow's outcome is measured; and
the learning and delivery code names no ScienceWorld task, object or room."""

from __future__ import annotations

import re
import sqlite3
import subprocess
from pathlib import Path

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from recording_model import RecordingModel

from langmem_plus import LearningMemory, Step, TaskSpec, Verdict
from langmem_plus.errors import InvalidArgument
from langmem_plus.learning.trajectory_import import from_messages, from_steps
from langmem_plus.memory.advisor import WorkflowAdvisor
from langmem_plus.records import Activation, Feedback


def sqlite_tool(db: Path):  # type: ignore[no-untyped-def]
    @tool
    def sql(query: str) -> str:
        """Run one SQL statement with the sqlite3 program and return what it printed."""
        done = subprocess.run(["sqlite3", str(db), query], capture_output=True, text=True, timeout=10)
        if done.returncode:
            raise ValueError(done.stderr.strip())
        return done.stdout.strip()

    return sql


def agent_messages(db: Path, table: str) -> list:  # type: ignore[type-arg]
    """A real create_agent run (scripted model, real sqlite3) that makes a table and counts its rows."""
    calls = [
        AIMessage(content="", tool_calls=[{"name": "sql", "args": {"query": f"CREATE TABLE {table}(x)"}, "id": "c1"}]),
        AIMessage(content="", tool_calls=[{"name": "sql", "args": {"query": f"INSERT INTO {table} VALUES (1)"}, "id": "c2"}]),
        AIMessage(content="", tool_calls=[{"name": "sql", "args": {"query": f"SELECT count(*) FROM {table}"}, "id": "c3"}]),
        AIMessage(content="done"),
    ]
    agent = create_agent(RecordingModel(responses=calls), [sqlite_tool(db)])
    return agent.invoke({"messages": [("user", f"Make a table {table} with one row and count it.")]})["messages"]


def test_a_create_agent_run_and_plain_lists_become_one_workflow_that_a_reopened_memory_grounds(tmp_path: Path) -> None:
    db = tmp_path / "w.db"
    runs = [agent_messages(db, "alpha"), agent_messages(db, "beta")]
    assert sqlite3.connect(db).execute("select count(*) from beta").fetchone() == (1,)  # the tool really ran
    demo = from_messages(runs[0])
    assert demo.goal.startswith("Make a table alpha") and len(demo.steps) == 3
    assert demo.steps[2].action == 'sql {"query": "SELECT count(*) FROM alpha"}' and demo.steps[2].observation == "1"

    mem = LearningMemory.open(tmp_path / "store", namespace=("t", "sql"))
    written = mem.learn_from_trajectories(runs)
    assert len(written) == 1
    skill = written[0]
    assert skill.goal_pattern == "make table <A> with one row and count it"
    assert skill.steps[0] == 'sql query create table <A> x'
    mem.close()

    again = LearningMemory.open(tmp_path / "store", namespace=("t", "sql"))  # stored, not held in a process
    goal = "Make a table gamma with one row and count it."
    offered = ['sql {"query": "CREATE TABLE gamma(x)"}', 'sql {"query": "DROP TABLE gamma"}']
    hint = again.workflow_step(goal, [], offered)
    assert hint is not None and "`sql {\"query\": \"CREATE TABLE gamma(x)\"}`" in hint.text
    assert hint.source_id == skill.id
    # plain lists of the same kind join the same workflow, and the same trajectory twice counts once
    plain = [("sql {\"query\": \"CREATE TABLE delta(x)\"}", "", 0.3), "sql {\"query\": \"INSERT INTO delta VALUES (1)\"}"]
    joined = again.learn_from_trajectories([{"goal": "Make a table delta with one row and count it.", "steps": plain}] * 2)
    assert [s.id for s in joined] == [skill.id] and len(joined[0].sources) == 3
    again.close()


def test_bad_trajectories_get_clear_errors(tmp_path: Path) -> None:
    mem = LearningMemory.open(tmp_path / "store", namespace=("t",))
    with pytest.raises(InvalidArgument, match="goal"):
        mem.learn_from_trajectories([["a", "b"]])
    with pytest.raises(InvalidArgument, match="step"):
        from_steps("g", [42])
    with pytest.raises(InvalidArgument, match="score"):
        from_steps("g", [("a", "o", "high")])
    assert mem.learn_from_trajectories([]) == [] and len(mem.skills) == 0  # nothing stored, nothing lost
    mem.close()


def test_a_followed_workflow_is_measured_by_its_runs_and_suppressed_when_it_fails(tmp_path: Path) -> None:
    mem = LearningMemory.open(tmp_path / "store", namespace=("t",))
    (skill,) = mem.learn_from_trajectories([{"goal": "build the docs", "steps": ["fetch sources", "compile sources"]}],
                                           family="docs")
    task = TaskSpec(task_id="t1", goal="build the docs", family="docs",
                    context={"goal": "build the docs", "valid_actions": ["fetch sources", "list files"]})
    advisor = WorkflowAdvisor(mem)
    assert [h.text.split("`")[1] for h in advisor(task, [])] == ["fetch sources"]
    assert advisor.tokens > 0
    for k in range(3):
        acts = [a.model_copy(update={"run_id": f"r{k}"}) for a in advisor.activations("r")]
        assert acts == [Activation(lesson_id=skill.id, run_id=f"r{k}", step=0, moment="pre_run", ts=acts[0].ts)]
        step = Step(index=0, action="list files", feedback=Feedback())
        mem.end_run(run_id=f"r{k}", task=task, steps=[step], events=[], activations=acts,
                    verdict=Verdict(passed=False, score=0.0))
    measured = mem.skills.get(skill.id)
    assert measured is not None and measured.stats.executions == 3 and measured.stats.failures == 3
    assert mem.workflows_for("build the docs", family="docs") == []  # suppressed by its outcomes
    mem.close()


def test_the_advisor_holds_a_scoring_step_on_another_thing_than_the_task_names(tmp_path: Path) -> None:
    mem = LearningMemory.open(tmp_path / "store", namespace=("t",))
    trajectories = [{"goal": f"sign the {x} form", "steps": [("read notes", "", 0.0), (f"sign {x} form", "", 1.0)]}
                    for x in ("tax", "rent")]
    mem.learn_from_trajectories(trajectories, family="forms")
    offered = ["read notes", "sign visa form", "sign bank form"]
    task = TaskSpec(task_id="t1", goal="sign the visa form", family="forms",
                    context={"goal": "sign the visa form", "valid_actions": offered})
    advisor = WorkflowAdvisor(mem)
    assert [h.text.split("`")[1] for h in advisor(task, [])] == ["read notes"]
    held = advisor.check(task, [], "sign bank form")
    assert [h.text.split("`")[1] for h in held] == ["sign bank form"] and "sign visa form" in held[0].text
    assert advisor.check(task, [], "read notes") == []  # another step: nothing held
    took = Step(index=0, action="read notes", observation="", feedback=Feedback(), info={"valid_actions": offered})
    later = [h.text for h in advisor(task, [took])]
    assert later[0].startswith("Prefer `sign visa form`") and held[0].text in later  # the hold stays in view
    mem.close()


SCIENCEWORLD_WORDS = (
    # task names
    "boil", "melt", "freeze", "thermometer", "melting", "conductivity", "mendelian", "lifespan", "inclined",
    "friction", "renewable", "nonrenewable", "genetics", "pollinate",
    # objects and rooms of its gold sequences
    "beaker", "freezer", "foundry", "greenhouse", "workshop", "art studio", "blast furnace", "paint", "dove",
    "butterfly", "tortoise", "battery", "wire", "light bulb", "solar panel", "flower pot", "seed jar", "teleport",
    "substance", "multimeter", "chameleon", "orange juice",
)
"""Words that name ScienceWorld's tasks, objects or rooms (and not every text game's)."""
CORE = ("learning", "memory", "retrieval", "capture")
"""The learning and delivery code: it must know no game."""


def test_the_learning_and_delivery_code_names_no_scienceworld_task_object_or_room() -> None:
    root = Path(__file__).resolve().parents[1] / "langmem_plus"
    found: list[str] = []
    for part in CORE:
        for path in sorted((root / part).rglob("*.py")):
            text = path.read_text(encoding="utf-8").lower()
            for word in SCIENCEWORLD_WORDS:
                if re.search(rf"\b{re.escape(word)}\b", text):
                    found.append(f"{path.relative_to(root)}: {word}")
    assert found == []
    assert re.search(r"\bboil\b", "to boil water")  # the scan finds a word where it is


def _progress_run(memory: LearningMemory, thing: str, marks: list[tuple[str, float | None]], k: int) -> None:
    """One run of the memory's own: each step's progress as the task's environment reported it."""
    task = TaskSpec(task_id=f"fetch-{k}", goal=f"put the {thing} in the box", family="fetch")
    with memory.start_run(task) as run:
        for action, progress in marks:
            run.record(action=action.format(thing=thing), observation="ok", feedback=Feedback(progress=progress))
        run.end(Verdict(passed=(marks[-1][1] or 0.0) >= 1.0, score=marks[-1][1] or 0.0))


@pytest.mark.parametrize("own_runs", [True, False])
def test_the_memorys_own_runs_that_made_progress_become_its_workflow(tmp_path: Path, own_runs: bool) -> None:
    """``workflow_own_runs``: two won runs on different things become one workflow with the thing as a slot, cut
    after the step that won (the wandering after it is not a step); a run that never reached
    ``workflow_own_min_progress`` and one without progress signals teach nothing; off, none does."""
    from langmem_plus.config import MemoryConfig

    config = MemoryConfig.model_validate({"workflows": {"workflow_own_runs": own_runs, "workflow_own_min_progress": 1.0}})
    mem = LearningMemory.open(tmp_path / "store", namespace=("t", "own"), config=config)
    try:
        _progress_run(mem, "red key", [("look", 0.0), ("open box", 0.0), ("take {thing}", 0.5), ("put {thing} in box", 1.0),
                                       ("look", 1.0)], 0)
        assert len(mem.workflows_for("put the red key in the box", family="fetch")) == int(own_runs)
        _progress_run(mem, "blue cup", [("open box", 0.0), ("take {thing}", 0.5), ("put {thing} in box", 1.0)], 1)
        _progress_run(mem, "old coin", [("open box", 0.0), ("take {thing}", 0.5), ("drop {thing}", 0.5)], 2)
        _progress_run(mem, "new coin", [("open box", None), ("take {thing}", None)], 3)
        skills = mem.workflows_for("put the green hat in the box", family="fetch")
        if not own_runs:
            assert skills == []
            return
        [skill] = skills
        assert [s.source.rsplit("-", 1)[0] for s in skill.sources] == ["run:fetch-0", "run:fetch-1"]
        *_, take, put = [s.action for s in skill.procedure]
        assert re.fullmatch(r"take <[A-Z]>", take) and put == f"put {take[5:]} in box"  # one slot; `look` after the win is no step
        step = mem.workflow_step("put the green hat in the box", ["open box"], ["take green hat", "look"], family="fetch")
        assert step is not None and step.correct == "take green hat"
    finally:
        mem.close()
