"""LangGraph deployment entry point named in langgraph.json: the reference executor/referee graph.

Offline by default: embedded Chroma at $LANGMEM_PLUS_STORE (default ./.langmem_plus),
the scripted executor, and the tool named by $LANGMEM_PLUS_TOOL (default gridtool).
Invoke it with {"run_id": "...", "task": {"task_id": "...", "goal": "..."}}; the task
id must be one of the tool's tasks.

A server runs many invocations at once, so each run gets its own environment (a
factory, not one shared instance) and the memory of the namespace its context names,
e.g. ``context={"namespace": ["acme", "user-1"]}``; ("deploy", <tool>) when it names
none. Who may name which namespace is the deployment's policy: set the context from
the authenticated user (a LangGraph auth handler), not from what a client sends.
"""

from __future__ import annotations

import functools
import os

from langmem_plus import build_executor_referee_graph, make_env
from langmem_plus.executors.scripted import ScriptedExecutor
from langmem_plus.resolver import MemoryContext, MemoryResolver

TOOL = os.environ.get("LANGMEM_PLUS_TOOL", "gridtool")
make_env(TOOL)  # an unknown tool fails here, at load, not in the first run
memory = MemoryResolver(os.environ.get("LANGMEM_PLUS_STORE", ".langmem_plus"), default_namespace=("deploy", TOOL))
"""The graph's memories: one LearningMemory per namespace, opened on first use."""
graph = build_executor_referee_graph(
    memory, functools.partial(make_env, TOOL), ScriptedExecutor(seed=0), context_schema=MemoryContext
)
