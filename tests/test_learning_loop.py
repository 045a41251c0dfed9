"""The learning loop end to end: the demo criterion, persistence, namespaces, the Chroma server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from langmem_plus import LearningMemory, StoreUnavailable, TaskSpec
from langmem_plus.bench.foundation import synthetic_lessons
from langmem_plus.demo import run_demo
from langmem_plus.envs.registry import make_env
from langmem_plus.executors.scripted import ScriptedExecutor
from langmem_plus.graph import build_executor_referee_graph, run_task
from langmem_plus.retrieval.retrievers import event_from_text


@pytest.mark.parametrize("tool", ["gridtool", "fluxtool"])
def test_demo_learns_run_three_has_at_most_half_the_errors(tool: str, tmp_path: Path) -> None:
    rows = run_demo(runs=3, tool=tool, store=tmp_path / "s", seed=0)
    first, last = rows[0], rows[-1]
    assert first.tool_errors > 0, "the cold agent must make mistakes for the demo to mean anything"
    assert last.tool_errors <= first.tool_errors / 2
    assert last.pass_rate >= first.pass_rate
    assert last.steps < first.steps
    assert sum(last.lessons.values()) > 0 and last.lesson_activations > 0


def test_second_demo_on_the_same_store_starts_from_what_the_first_learned(tmp_path: Path) -> None:
    first = run_demo(runs=1, tool="gridtool", store=tmp_path / "s", seed=0)
    second = run_demo(runs=1, tool="gridtool", store=tmp_path / "s", seed=0)
    assert second[0].tool_errors < first[0].tool_errors


def test_same_seed_gives_the_same_demo(tmp_path: Path) -> None:
    a = run_demo(runs=2, tool="fluxtool", store=tmp_path / "a", seed=3)
    b = run_demo(runs=2, tool="fluxtool", store=tmp_path / "b", seed=3)
    assert [(r.tool_errors, r.steps, r.lessons) for r in a] == [(r.tool_errors, r.steps, r.lessons) for r in b]


def test_cli_demo_json_shape(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "langmem_plus.cli", "demo", "--json", "--runs", "2", "--store", str(tmp_path / "s")],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    data = json.loads(out.stdout)
    assert [r["run"] for r in data["runs"]] == [1, 2]
    keys = {"run", "pass_rate", "steps", "tool_errors", "repeated_errors", "lesson_activations", "lessons"}
    for row in data["runs"]:
        assert set(row) == keys
        assert set(row["lessons"]) == {"candidate", "promoted", "suppressed", "archived"}
        assert isinstance(row["pass_rate"], float) and isinstance(row["steps"], int)
    assert "[run 2/2]" in out.stderr  # progress is shown while it runs


def test_reopened_memory_has_the_same_lessons_graph_and_runs(tmp_path: Path) -> None:
    run_demo(runs=1, tool="gridtool", store=tmp_path / "s", seed=0)
    mem = LearningMemory.open(tmp_path / "s", namespace=("demo", "gridtool"))
    before = (mem.graph.snapshot(), {i: l.model_dump() for i, l in mem.lessons.items()}, [r.run_id for r in mem.runs])
    mem.close()
    again = LearningMemory.open(tmp_path / "s", namespace=("demo", "gridtool"))
    after = (again.graph.snapshot(), {i: l.model_dump() for i, l in again.lessons.items()}, [r.run_id for r in again.runs])
    assert before[0]["nodes"] and before == after


def test_namespaces_isolate_reads_retrieval_graph_and_audit(tmp_path: Path) -> None:
    a = LearningMemory.open(tmp_path, namespace=("acme", "a"))
    b = LearningMemory.open(tmp_path, namespace=("acme", "b"))
    a.add_lessons(synthetic_lessons(40, a.namespace, seed=1))
    b.add_lessons(synthetic_lessons(40, b.namespace, seed=1))  # look-alike rules, same triggers
    ids_b = set(b.lessons)
    ev = event_from_text(a, "error: unknown command 'age3' near age3 in tool1", tool="tool1")
    for items in (a.retrieve_on_error(ev), a.retrieve_pre_run(TaskSpec(task_id="t", goal="age3", tool="tool1"))):
        assert items and not {i.item_id for i in items} & ids_b
        assert all(i.item.namespace == a.namespace for i in items)
    assert not ids_b & set(a.lessons)
    assert not any(n.removeprefix("lesson:") in ids_b for n in a.graph.nx.nodes)
    assert all(rec["ns"] == list(a.namespace) for rec in a.audit.read())
    assert a.store.count("lessons") == 40 and b.store.count("lessons") == 40
    # a lesson of b cannot be imported into a
    with pytest.raises(ValueError):
        a.add_lessons([b.lessons[next(iter(ids_b))]])


def test_memory_against_a_real_chroma_server(chroma_server: str) -> None:
    mem = LearningMemory.open(url=chroma_server, namespace=("server", "gridtool"), audit_dir=None)
    env = make_env("gridtool")
    graph = build_executor_referee_graph(mem, env, ScriptedExecutor(seed=0))
    reports = [run_task(graph, t, run_id=f"srv-{t.task_id}")["report"] for t in env.tasks()[:6]]
    assert sum(r.tool_errors for r in reports) > 0
    assert mem.store.count("runs") == 6 and mem.store.count("events") > 0
    assert mem.lessons, "recurring failures became lessons on the server too"
    mem.close()
    again = LearningMemory.open(url=chroma_server, namespace=("server", "gridtool"))
    assert set(again.lessons) == set(mem.lessons)


def test_unreachable_server_is_a_clear_quick_error(tmp_path: Path) -> None:
    with pytest.raises(StoreUnavailable) as info:
        LearningMemory.open(url="http://127.0.0.1:9", namespace=("x",), audit_dir=tmp_path)
    assert "127.0.0.1:9" in str(info.value)
    out = subprocess.run(
        [sys.executable, "-m", "langmem_plus.cli", "lessons", "--url", "http://127.0.0.1:9"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2 and "127.0.0.1:9" in out.stderr and "Traceback" not in out.stderr


def test_seeded_demo_repeats_across_processes_with_different_hash_seeds(tmp_path: Path) -> None:
    outputs = []
    for hash_seed in ("1", "2"):
        out = subprocess.run(
            [sys.executable, "-m", "langmem_plus.cli", "demo", "--json", "--runs", "2", "--tool", "fluxtool",
             "--store", str(tmp_path / hash_seed)],
            capture_output=True, text=True, timeout=300, check=True, env={**os.environ, "PYTHONHASHSEED": hash_seed},
        )
        outputs.append(json.loads(out.stdout))
    assert outputs[0] == outputs[1]
