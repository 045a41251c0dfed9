"""The LangGraph deployment entry point named in langgraph.json loads and runs a task."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_langgraph_json_names_an_existing_graph_module() -> None:
    config = json.loads((ROOT / "langgraph.json").read_text())
    target = config["graphs"]["executor_referee"]
    path, _, attr = target.partition(":")
    assert (ROOT / path).is_file() and attr == "graph"


def test_deployed_graph_runs_a_task_given_as_plain_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANGMEM_PLUS_STORE", str(tmp_path / "store"))
    monkeypatch.setenv("LANGMEM_PLUS_TOOL", "fluxtool")
    spec = importlib.util.spec_from_file_location("executor_referee", ROOT / "graphs" / "executor_referee.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    task = module.make_env("fluxtool").tasks()[0].model_dump()  # a server hands the task over as JSON
    final = module.graph.invoke({"run_id": "deploy-1", "task": task, "steps": []})
    assert final["report"].task_id == task["task_id"] and final["report"].steps > 0
    assert (tmp_path / "store").is_dir()
    module.memory.close()
