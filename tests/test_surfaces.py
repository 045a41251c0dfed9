"""Where users meet the memory: their own graph, an LLM executor, retrievers, tools, async, the CLI."""

from __future__ import annotations

import asyncio
import importlib.util
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import FakeListChatModel

from langmem_plus import LearningMemory, MemoryConfig
from langmem_plus.demo import run_demo
from langmem_plus.envs.registry import make_env
from langmem_plus.executors.llm import LLMExecutor
from langmem_plus.executors.scripted import ScriptedExecutor
from langmem_plus.graph import build_executor_referee_graph, run_task
from langmem_plus.memory import Trajectory
from langmem_plus.records import Feedback, Step, TaskSpec

ROOT = Path(__file__).resolve().parents[1]


def _load_example() -> Any:
    spec = importlib.util.spec_from_file_location("own_graph", ROOT / "examples" / "own_graph.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_example_own_graph_learns_its_mistake(tmp_path: Path) -> None:
    errors = _load_example().main(store=str(tmp_path), runs=3)
    assert errors[0] >= 2, "the habit fails on both queries in the first run"
    assert errors[-1] == 0, "after the lesson, the habit is rewritten before acting"


def test_example_runs_as_a_script(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "own_graph.py")], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "lesson" in out.stdout and "WRONG: nme -> CORRECT: name" in out.stdout


def test_llm_executor_end_to_end_through_the_reference_graph(tmp_path: Path) -> None:
    env = make_env("gridtool")
    task = env.tasks()[0]
    wrong = '{"kind": "command", "action": "from people | filter age >= 30 | select name, age"}'
    right = '{"kind": "command", "action": "LOAD people | KEEP age >= 30 | PICK name, age"}'
    model = FakeListChatModel(responses=[wrong, wrong, '{"kind": "docs", "topic": "load"}', right])
    mem = LearningMemory.open(tmp_path, namespace=("llm", "e2e"))
    graph = build_executor_referee_graph(mem, env, LLMExecutor(model))
    final = run_task(graph, task, run_id="llm-1")
    report = final["report"]
    assert report.passed and report.verdict.source == "deterministic"
    assert report.tool_errors == 2 and report.repeated_errors == 1
    assert [s.info.get("kind") for s in final["steps"]].count("docs") == 1
    assert len(final["events"]) == 2 and mem.store.count("events") == 2
    assert report.new_lessons, "the repeated failure in one run becomes a candidate lesson"


def test_llm_executor_with_garbage_answers_ends_the_run_cleanly(tmp_path: Path) -> None:
    env = make_env("fluxtool")
    mem = LearningMemory.open(tmp_path, namespace=("llm", "garbage"))
    graph = build_executor_referee_graph(mem, env, LLMExecutor(FakeListChatModel(responses=["{", "?!\n??"])))
    report = run_task(graph, env.tasks()[0], run_id="g1")["report"]
    assert not report.passed and report.steps <= 2


def test_malformed_llm_json_in_hint_distillation_falls_back_to_rules(tmp_path: Path) -> None:
    run_demo(runs=1, tool="gridtool", store=tmp_path / "s", seed=0)
    bad_llm = FakeListChatModel(responses=["not json", '{"hints": "nope"}'])
    mem = LearningMemory.open(tmp_path / "s", namespace=("demo", "gridtool"), llm=bad_llm)
    env = make_env("gridtool")
    graph = build_executor_referee_graph(mem, env, ScriptedExecutor(seed=0))
    final = run_task(graph, env.tasks()[5], run_id="bad-llm")
    assert final["report"].passed
    assert all(h.wrong for h in final["hints"] if h.source_kind == "lesson" and h.correct)


def _learned(tmp_path: Path) -> LearningMemory:
    run_demo(runs=1, tool="gridtool", store=tmp_path / "s", seed=0)
    return LearningMemory.open(tmp_path / "s", namespace=("demo", "gridtool"))


def test_retriever_and_tool_return_the_matching_lesson(tmp_path: Path) -> None:
    mem = _learned(tmp_path)
    docs = mem.as_retriever(kind="on_error", tool="gridtool").invoke("unknown command 'select' at stage 4")
    assert docs and isinstance(docs[0], Document)
    assert docs[0].metadata["wrong"] == "select" and "score" in docs[0].metadata
    text = mem.as_tool().invoke({"error_text": "unknown command 'select' at stage 2", "tool": "gridtool"})
    assert "select" in text and "[lesson:" in text
    pre = mem.as_retriever(kind="pre_run", tool="gridtool").invoke("names of people older than 40")
    lessons = [d for d in pre if d.metadata["kind"] == "lesson"]
    assert lessons and all(d.metadata["status"] in ("candidate", "promoted") for d in lessons)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_sync_and_async_twins_agree(mode: str, tmp_path: Path) -> None:
    mem = _learned(tmp_path)
    task = make_env("gridtool").tasks()[2]
    step = Step(index=0, action="from people | filter x", feedback=Feedback(hard_failure=True, error_text="unknown command 'from' at stage 1"))
    if mode == "sync":
        items = mem.retrieve_pre_run(task, now=1e9)
        event = mem.capture(step, run_id="tw", task=task, now=1e9)
    else:
        items = asyncio.run(mem.aretrieve_pre_run(task, now=1e9))
        event = asyncio.run(mem.acapture(step, run_id="tw", task=task, now=1e9))
    reference = LearningMemory.open(tmp_path / "s", namespace=("demo", "gridtool")).retrieve_pre_run(task, now=1e9)
    assert [i.item_id for i in items] == [i.item_id for i in reference]
    assert event is not None and event.channel == "hard"


def test_general_update_and_general_retrieve(tmp_path: Path) -> None:
    mem = LearningMemory.open(tmp_path, namespace=("paper", "iface"))
    task = TaskSpec(task_id="t", goal="list files", tool="shell", domain="os")

    def fail(i: int, flag: str) -> Step:
        return Step(index=i, action=f"ls {flag} /tmp", feedback=Feedback(hard_failure=True, error_text=f"ls: invalid option -- '{flag[-1]}'"))

    ok = Step(index=4, action="ls -l /tmp", feedback=Feedback(reward=1.0, progress=1.0))
    for r in range(2):
        rec = Trajectory(task=task, steps=[fail(0, "--long"), fail(1, "--long"), ok.model_copy(update={"index": 2})], run_id=f"r{r}")
        report = mem.general_update(rec)
        assert report.tool_errors == 2
    assert mem.lessons, "a failure repeated across runs became a lesson"
    out = mem.general_retrieve(Trajectory(task=task, run_id="next"))
    assert out["hints"] and "--long" in out["text"]
    # what general_retrieve showed is measured by the matching general_update
    fixed = Trajectory(task=task, steps=[ok.model_copy(update={"index": 0})], run_id="next")
    report = mem.general_update(fixed)
    assert report.lesson_activations == len([i for i in out["items"] if i.kind == "lesson"]) > 0


def test_cli_lessons_and_inspect(tmp_path: Path) -> None:
    store = str(tmp_path / "s")
    run_demo(runs=2, tool="gridtool", store=store, seed=0)
    cli = [sys.executable, "-m", "langmem_plus.cli"]
    listing = subprocess.run(cli + ["lessons", "--store", store], capture_output=True, text=True, timeout=120, check=True)
    first_id = listing.stdout.split()[0]
    assert first_id.startswith("les_")
    shown = subprocess.run(cli + ["inspect", "lesson", first_id, "--store", store], capture_output=True, text=True, timeout=120, check=True)
    assert '"rule_text"' in shown.stdout and "lesson_created" in shown.stdout
    missing = subprocess.run(cli + ["inspect", "lesson", "les_nope", "--store", store], capture_output=True, text=True, timeout=120)
    assert missing.returncode == 2 and "no lesson" in missing.stderr


def test_faded_episodes_are_not_recalled_but_stay_stored(tmp_path: Path) -> None:
    _learned(tmp_path).close()
    # A budget with room for episodes beside the lessons (in instant memory they rank below likely-needed fixes).
    mem = LearningMemory.open(tmp_path / "s", namespace=("demo", "gridtool"), config=MemoryConfig(context={"max_context_tokens": 800}))
    task = make_env("gridtool").tasks()[0]
    stored = mem.store.count("episodes")
    assert stored > 0
    soon = mem.clock() + 60
    assert any(i.kind == "episode" for i in mem.retrieve_pre_run(task, now=soon))
    years_later = soon + 10 * 365 * 24 * 3600.0
    assert not any(i.kind == "episode" for i in mem.retrieve_pre_run(task, now=years_later))
    assert mem.store.count("episodes") == stored
