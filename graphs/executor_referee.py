"""LangGraph deployment entry point named in langgraph.json: the reference executor/referee graph.

Offline by default: embedded Chroma at $LANGMEM_PLUS_STORE (default ./.langmem_plus),
the scripted executor, and the tool named by $LANGMEM_PLUS_TOOL (default gridtool).
Invoke it with {"run_id": "...", "task": {"task_id": "...", "goal": "..."}}; the task
id must be one of the tool's tasks.
"""

from __future__ import annotations

import os

from langmem_plus import LearningMemory, ScriptedExecutor, build_executor_referee_graph, make_env

TOOL = os.environ.get("LANGMEM_PLUS_TOOL", "gridtool")
memory = LearningMemory.open(os.environ.get("LANGMEM_PLUS_STORE", ".langmem_plus"), namespace=("deploy", TOOL))
graph = build_executor_referee_graph(memory, make_env(TOOL), ScriptedExecutor(seed=0))
