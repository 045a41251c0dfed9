"""Environment plugins: a task's declared domain chooses its plugin, a claimed run keeps the plugin's extras and
learns through it, and a store written before plugins (by commit c58a40b, ``data/make_store_c58a40b.py``) opens
with its runs' text-game fields under the plugin's extras."""

from __future__ import annotations

import tarfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from langmem_plus import LearningMemory
from langmem_plus.memory import Trajectory
from langmem_plus.config import MemoryConfig
from langmem_plus.errors import InvalidArgument
from langmem_plus.plugins import EnvPlugin, LearnInput, StepAdvisor, plugin_for, register_plugin, step_advisor_for
from langmem_plus.records import Feedback, Lesson, RunRecord, Step, TaskSpec, Verdict
from langmem_plus.textgames.plugin import PLUGIN, run_commands, run_consumed, run_directed, run_undone

OLD_STORE = Path(__file__).parent / "data" / "store-c58a40b.tgz"


class Counting:
    """A plugin for a made-up domain: keeps the run's actions, teaches one lesson per run."""

    name = "counting"
    domains = ("counting-domain",)

    def __init__(self) -> None:
        self.seen: list[frozenset[str]] = []

    def claims(self, steps: Sequence[Step]) -> bool:
        return True

    def run_extras(self, task: TaskSpec, steps: Sequence[Step]) -> dict[str, list[Any]]:
        return {"actions": [s.action for s in steps]}

    def learn(self, given: LearnInput) -> dict[str, Lesson]:
        self.seen.append(given.tool_extras("actions"))
        lid = f"cnt_{given.run_id}"
        return {lid: Lesson(id=lid, namespace=given.namespace, rule_text=f"AVOID: {given.steps[-1].action}",
                            wrong=given.steps[-1].action)}

    def episode_steps(self, task: TaskSpec, commands: Sequence[Step], config: MemoryConfig) -> list[Step]:
        return list(commands[-1:])

    step_advisor = None


def test_a_task_chooses_its_plugin_by_the_domain_it_declares(tmp_path: Path) -> None:
    plugin = Counting()
    assert isinstance(plugin, EnvPlugin)
    register_plugin(plugin)
    assert plugin_for(TaskSpec(task_id="t", goal="g", domain="counting-domain")) is plugin
    assert plugin_for(TaskSpec(task_id="t", goal="g", domain="text-game")) is PLUGIN  # loaded by path on first use
    assert isinstance(PLUGIN.step_advisor, StepAdvisor) and isinstance(PLUGIN, EnvPlugin)
    assert step_advisor_for(None) is PLUGIN.step_advisor  # the step default: a middleware naming no domain
    assert step_advisor_for("counting-domain") is None  # a plugin that gives no step advice
    assert plugin_for(TaskSpec(task_id="t", goal="g")) is None
    with pytest.raises(InvalidArgument):
        register_plugin("no.colon.here", domains=["x"])
    memory = LearningMemory.open(tmp_path, namespace=("t", "plugins"))
    steps = [Step(index=0, action="go north", feedback=Feedback(hard_failure=True, error_text="blocked"), tool="walk"),
             Step(index=1, action="go south", tool="walk")]
    for n in range(2):
        task = TaskSpec(task_id=f"t{n}", goal="walk out", tool="walk", domain="counting-domain")
        memory.general_update(Trajectory(task=task, steps=steps, verdict=Verdict(passed=True, score=1.0), run_id=f"r{n}"))
    assert [r.extras for r in memory.runs] == [{"counting": {"actions": ["go north", "go south"]}}] * 2
    assert plugin.seen == [frozenset(), frozenset({"go north", "go south"})]  # the second run reads the first's extras
    assert {l.id for l in memory.list_lessons()} == {"cnt_r0", "cnt_r1"}  # through the plugin, no rewrite lesson
    memory.close()


def test_a_store_written_before_plugins_opens_with_its_runs_text_fields_under_the_plugin(tmp_path: Path) -> None:
    with tarfile.open(OLD_STORE) as archive:
        archive.extractall(tmp_path, filter="data")
    memory = LearningMemory.open(tmp_path / "store", namespace=("t", "v0"))
    assert [r.run_id for r in memory.runs] == ["run0", "run1"]
    for run in memory.runs:
        assert run_commands(run) == ["close", "eat", "look", "open", "read", "slice", "take"]
        assert "slice" in run_directed(run) and run_undone(run) == [("close <X>", "open <X>")]
        assert run_consumed(run) == ["eat"]
    assert "slice" in memory.view.tool_extras("twx-cooking", "textgames", "commands")
    assert len(memory.list_lessons()) == 1
    memory.close()
    again = LearningMemory.open(tmp_path / "store", namespace=("t", "v0"))  # opening changed nothing stored
    assert [r.extras for r in again.runs] == [r.extras for r in memory.runs]
    again.close()


def test_a_run_record_in_the_old_shape_reads_into_extras_and_an_empty_one_keeps_none() -> None:
    old = {"run_id": "r", "namespace": ["n"], "seq": 1, "task_id": "t", "commands": ["eat"], "directed": [],
           "undone": [["close <X>", "open <X>"]], "consumed": []}
    run = RunRecord.model_validate(old)
    assert run.extras == {"textgames": {"commands": ["eat"], "undone": [["close <X>", "open <X>"]]}}
    assert RunRecord.model_validate({**old, "commands": [], "undone": []}).extras == {}
    assert "commands" not in run.model_dump()


def test_step_advice_needs_a_plugin_that_gives_it(tmp_path: Path) -> None:
    register_plugin(Counting())
    with LearningMemory.open(tmp_path, namespace=("t", "advice")) as memory:
        with pytest.raises(InvalidArgument, match="counting-domain"):
            memory.as_middleware(domain="counting-domain", text_rules="at_step")
        assert memory.as_middleware(domain="text-game", text_rules="at_step")._advisor is PLUGIN.step_advisor
