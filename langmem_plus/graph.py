"""The reference executor/referee graph (DESIGN §8).

    reset -> pre_run -> executor -> act -> capture -> on error: on_error_retrieve -> distill_hints -> executor
                                          -> done:     referee -> end_of_run -> END
                                          -> else:     executor

The environment and the executor are bound when the graph is built, so one compiled
graph runs many tasks: ``run_task(graph, task)`` invokes it for one attempt.

Example:
    >>> import tempfile
    >>> from langmem_plus import LearningMemory
    >>> from langmem_plus.envs.registry import make_env
    >>> from langmem_plus.executors.scripted import ScriptedExecutor
    >>> mem = LearningMemory.open(tempfile.mkdtemp(), namespace=("docs",))
    >>> env = make_env("gridtool")
    >>> graph = build_executor_referee_graph(mem, env, ScriptedExecutor(seed=0))
    >>> final = run_task(graph, env.tasks()[0], run_id="r1")
    >>> final["report"].steps > 0
    True
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from typing import Any, Literal

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from langmem_plus.envs.base import Env
from langmem_plus.executors.base import Decision, Executor
from langmem_plus.memory import LearningMemory
from langmem_plus.nodes import (
    MemoryState,
    Node,
    capture_node,
    task_of,
    distill_hints_node,
    end_of_run_node,
    on_error_retrieve_node,
    pre_run_node,
    referee_node,
)
from langmem_plus.records import Efficiency, Feedback, Step, TaskSpec
from langmem_plus.referee import DeterministicReferee, Referee

DEFAULT_MAX_STEPS = 15
"""Steps (commands and docs lookups) one attempt may take before the referee is called."""
SUPERSTEPS_PER_STEP = 6
"""Graph supersteps one executed step can take (executor, act, capture, retrieve, distill, slack)."""


class ExecutorState(MemoryState, total=False):
    """MemoryState plus what the reference loop needs."""

    decision: Decision | None
    """The executor's latest decision."""
    done: bool
    """True once the task is solved, the executor stops, or the step budget is spent."""
    max_steps: int
    """Step budget of this attempt."""


def executor_node(executor: Executor) -> Node:
    """Node: ask the executor for its next decision, given the hints gathered so far."""

    def decide(state: ExecutorState) -> dict[str, Any]:
        decision = executor.act(task_of(state), state.get("steps") or [], state.get("hints") or [])
        return {"decision": decision}

    return decide


def act_node(env: Env) -> Node:
    """Node: carry out the decision in the environment (a docs lookup costs a step too)."""

    def act(state: ExecutorState) -> dict[str, Any]:
        decision = state.get("decision")
        steps = state.get("steps") or []
        index = len(steps)
        if decision is None or decision.kind == "done":
            return {"done": True}
        started = time.perf_counter()
        if decision.kind == "docs":
            text = env.docs(decision.topic)
            step = Step(
                index=index,
                action=f"docs {decision.topic or ''}".strip(),
                observation=text,
                feedback=Feedback(efficiency=Efficiency(seconds=time.perf_counter() - started)),
                tool=env.name,
                info={"kind": "docs", "topic": decision.topic},
            )
        else:
            before = env_state(env)
            obs, fb = env.step(decision.action)
            fb = fb.model_copy(update={"efficiency": Efficiency(seconds=time.perf_counter() - started)})
            info: dict[str, Any] = {"applied_hints": list(decision.applied_hints)}
            valid = getattr(env, "valid_actions", None)
            if valid is not None:
                info["valid_actions"] = [str(a) for a in valid]
            step = Step(
                index=index,
                action=decision.action,
                observation=obs,
                feedback=fb,
                tool=env.name,
                state_before=before,
                state_after=env_state(env),
                info=info,
            )
        budget = state.get("max_steps", DEFAULT_MAX_STEPS)
        return {"steps": [step], "done": bool(env.done) or index + 1 >= budget}

    return act


def env_state(env: Env) -> dict[str, Any] | None:
    """The env's optional structured ``state`` (room, inventory, score), copied; None when it has none."""
    state = getattr(env, "state", None)
    return dict(state) if isinstance(state, Mapping) else None


def env_view(env: Env, observation: str) -> dict[str, Any]:
    """What an env that exposes ``goal`` / ``valid_actions`` / ``state`` shows at the start of a task.

    Empty for envs without those optional attributes (gridtool, fluxtool).
    """
    view: dict[str, Any] = {}
    goal = getattr(env, "goal", None)
    if isinstance(goal, str) and goal:
        view["goal"] = goal
    valid = getattr(env, "valid_actions", None)
    if valid is not None:
        view["valid_actions"] = [str(a) for a in valid]
    state = env_state(env)
    if state is not None:
        view["state"] = state
    if view:
        view["observation"] = observation
    return view


def reset_node(env: Env) -> Node:
    """Node: start the task in the environment.

    When the env exposes ``goal``, ``valid_actions`` or ``state`` (the text games),
    they and the first observation go into ``task.context`` so the executor can read
    them before its first step; later steps carry them in ``Step.info`` and
    ``Step.state_after``.
    """

    def reset(state: ExecutorState) -> dict[str, Any]:
        task = task_of(state)
        observation = env.reset(task.task_id)
        view = env_view(env, observation)
        if not view:
            return {}
        return {"task": task.model_copy(update={"context": {**task.context, **view}})}

    return reset


def _after_capture(state: ExecutorState) -> Literal["on_error_retrieve", "referee", "executor"]:
    if state.get("done"):
        return "referee"
    if state.get("last_event") is not None:
        return "on_error_retrieve"
    return "executor"


def build_executor_referee_graph(
    memory: LearningMemory,
    env: Env,
    executor: Executor,
    *,
    referee: Referee | None = None,
    max_steps: int = DEFAULT_MAX_STEPS,
) -> CompiledStateGraph:
    """Compile the reference loop for one environment, executor and memory.

    Args:
        memory: The learning memory (one namespace).
        env: The environment tasks run in.
        executor: Scripted, LLM-backed, or your own ``Executor``.
        referee: Judge of each attempt; the environment's deterministic evaluator by default.
        max_steps: Step budget per attempt.
    """
    builder = StateGraph(ExecutorState)
    builder.add_node("reset", reset_node(env))
    builder.add_node("pre_run", pre_run_node(memory))
    builder.add_node("executor", executor_node(executor))
    builder.add_node("act", act_node(env))
    builder.add_node("capture", capture_node(memory))
    builder.add_node("on_error_retrieve", on_error_retrieve_node(memory))
    builder.add_node("distill_hints", distill_hints_node(memory))
    builder.add_node("referee", referee_node(referee or DeterministicReferee(env)))
    builder.add_node("end_of_run", end_of_run_node(memory))
    builder.add_edge(START, "reset")
    builder.add_edge("reset", "pre_run")
    builder.add_edge("pre_run", "executor")
    builder.add_edge("executor", "act")
    builder.add_edge("act", "capture")
    builder.add_conditional_edges("capture", _after_capture)
    builder.add_edge("on_error_retrieve", "distill_hints")
    builder.add_edge("distill_hints", "executor")
    builder.add_edge("referee", "end_of_run")
    builder.add_edge("end_of_run", END)
    graph = builder.compile()
    return graph.with_config({"recursion_limit": SUPERSTEPS_PER_STEP * max_steps + 10})  # type: ignore[return-value]


def run_task(
    graph: Any,
    task: TaskSpec,
    *,
    run_id: str | None = None,
    max_steps: int = DEFAULT_MAX_STEPS,
) -> dict[str, Any]:
    """Run one attempt of ``task`` through a compiled reference graph; returns the final state."""
    state: ExecutorState = {
        "run_id": run_id or uuid.uuid4().hex[:12],
        "task": task,
        "steps": [],
        "events": [],
        "activations": [],
        "hints": [],
        "captured": 0,
        "done": False,
        "max_steps": max_steps,
    }
    return dict(graph.invoke(state))


__all__ = [
    "DEFAULT_MAX_STEPS",
    "ExecutorState",
    "act_node",
    "build_executor_referee_graph",
    "env_state",
    "env_view",
    "executor_node",
    "reset_node",
    "run_task",
]
