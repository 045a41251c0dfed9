"""The reference executor/referee graph (design.md §8).

    reset -> pre_run -> executor -> act -> capture -> on error: on_error_retrieve -> distill_hints -> executor
                                          -> done:     referee -> end_of_run -> END
                                          -> else:     executor

The executor is bound when the graph is built, so one compiled graph runs many tasks:
``run_task(graph, task)`` invokes it for one attempt. Compiled once, it also serves many
users at once: give it a resolver (``MemoryResolver``) instead of a memory and an
environment factory instead of an environment, and each invocation runs in the
namespace its ``context`` names, on an environment of its own (``RunEnvs``)::

    graph = build_executor_referee_graph(MemoryResolver(path), lambda: make_env("gridtool"), executor)
    run_task(graph, task, context=MemoryContext(namespace=("acme", "user-1")))

An environment instance (the old signature) is shared by every run, so such a graph
must run one attempt at a time.

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

import logging
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, Literal, Union

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime

from langmem_plus.envs.base import Env
from langmem_plus.executors.base import Decision, Executor
from langmem_plus.errors import EnvError
from langmem_plus.nodes import (
    MemoryState,
    Node,
    capture_node,
    context_of,
    distill_hints_node,
    end_of_run_node,
    on_error_retrieve_node,
    pre_run_node,
    task_of,
)
from langmem_plus.records import Efficiency, Feedback, Step, TaskSpec
from langmem_plus.referee import DeterministicReferee, Referee
from langmem_plus.resolver import MemorySource, resolve_memory

logger = logging.getLogger(__name__)

DEFAULT_MAX_STEPS = 15
"""Steps (commands and docs lookups) one attempt may take before the referee is called."""
SUPERSTEPS_PER_STEP = 6
"""Graph supersteps one executed step can take (executor, act, capture, retrieve, distill, slack)."""
LIVE_ENVS_MAX = 1024
"""Per-run environments one graph holds at once; past it the oldest (a run that died before its
referee, or a leak) is dropped with a warning."""

EnvSource = Union[Env, Callable[[], Env]]
"""An environment shared by every run, or a factory that makes a fresh one for each run."""


def _is_env(obj: Any) -> bool:
    """An environment instance: it can ``reset`` and ``step`` (a class is a factory, though it has both)."""
    return not isinstance(obj, type) and hasattr(obj, "reset") and hasattr(obj, "step")


class RunEnvs:
    """The environment of each run of a graph: one shared instance, or one per run from a factory.

    With a factory, ``start`` (the reset node) makes a fresh environment for the run, keyed
    by (namespace, run id), the act and referee nodes get it with ``current``, and ``finish``
    (after the referee) drops it, so runs of one compiled graph in parallel, in the same
    or in different namespaces, never step through one environment's state. With an
    instance, every run gets that instance (the old behaviour; one run at a time).

    Args:
        env: An ``Env`` shared by every run, or a zero-argument factory of fresh ones.
        memory: Where the namespace of a run comes from (a memory or a resolver); None keys
            runs by run id alone.

    Raises:
        TypeError: ``env`` is neither an environment nor a callable.
    """

    def __init__(self, env: EnvSource, memory: MemorySource | None = None) -> None:
        if not _is_env(env) and not callable(env):
            raise TypeError(f"expected an Env or a factory of Envs, got {env!r}")
        self._shared: Env | None = env if _is_env(env) else None  # type: ignore[assignment]
        self._factory: Callable[[], Env] = env if self._shared is None else (lambda: env)  # type: ignore[assignment,return-value]
        self._memory = memory
        self._live: OrderedDict[tuple[Any, ...], Env] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def per_run(self) -> bool:
        """Whether each run gets an environment of its own."""
        return self._shared is None

    def __len__(self) -> int:
        """Environments held for runs that have not finished."""
        return len(self._live)

    def _key(self, state: Any, runtime: Runtime[Any] | None) -> tuple[Any, ...]:
        ns = () if self._memory is None else resolve_memory(self._memory, context_of(runtime)).namespace
        return (ns, state["run_id"])

    def _make(self) -> Env:
        env = self._factory()
        if not _is_env(env):
            raise EnvError(f"the environment factory returned {type(env).__name__}, not an Env")
        return env

    def start(self, state: Any, runtime: Runtime[Any] | None = None) -> Env:
        """A fresh environment for this run (the shared one without a factory)."""
        if self._shared is not None:
            return self._shared
        env, key = self._make(), self._key(state, runtime)
        with self._lock:
            self._live[key] = env
            self._live.move_to_end(key)
            dropped = []
            while len(self._live) > LIVE_ENVS_MAX:
                old, old_env = self._live.popitem(last=False)
                dropped.append(old_env)
                logger.warning("langmem_plus: dropped the environment of unfinished run %s (over %d live)", old, LIVE_ENVS_MAX)
        for old_env in dropped:
            _close(old_env)
        return env

    def current(self, state: Any, runtime: Runtime[Any] | None = None) -> Env:
        """This run's environment.

        Raises:
            EnvError: no environment was started for this run (no reset node ran, or it
                was dropped past ``LIVE_ENVS_MAX``); stepping a fresh one would act on no task.
        """
        if self._shared is not None:
            return self._shared
        key = self._key(state, runtime)  # outside the lock: it may open the run's memory
        with self._lock:
            env = self._live.get(key)
        if env is None:
            raise EnvError(f"no environment was started for run {key}: the graph's reset node starts one per run")
        return env

    def finish(self, state: Any, runtime: Runtime[Any] | None = None) -> None:
        """Drop this run's environment and close it if it can be (nothing to drop for a shared one)."""
        if self._shared is None:
            key = self._key(state, runtime)
            with self._lock:
                env = self._live.pop(key, None)
            if env is not None:
                _close(env)


def _close(env: Env) -> None:
    """Release a per-run environment that has a ``close`` (a text game's JVM); a failure is logged, not raised."""
    close = getattr(env, "close", None)
    if callable(close):
        try:
            close()
        except Exception as exc:  # a run's end must not fail on its environment's cleanup
            logger.warning("langmem_plus: closing environment %s failed: %s", getattr(env, "name", env), exc)


def _run_envs(env: Env | RunEnvs | Callable[[], Env]) -> RunEnvs:
    return env if isinstance(env, RunEnvs) else RunEnvs(env)


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

    def decide(state: ExecutorState, runtime: Runtime[Any] | None = None) -> dict[str, Any]:
        decision = executor.act(task_of(state), state.get("steps") or [], state.get("hints") or [])
        return {"decision": decision}

    return decide


def take_step(env: Env, decision: Decision, index: int) -> Step:
    """Carry out a command or docs decision in ``env`` and record it as the run's ``index``-th Step.

    A command's step carries the env's optional ``state`` before and after and its
    ``valid_actions`` (the text games); a docs lookup costs a step too. Used by the
    reference graph and by the design harness's episode loop, so both record alike.
    """
    started = time.perf_counter()
    if decision.kind == "docs":
        return Step(
            index=index,
            action=f"docs {decision.topic or ''}".strip(),
            observation=env.docs(decision.topic),
            feedback=Feedback(efficiency=Efficiency(seconds=time.perf_counter() - started)),
            tool=env.name,
            info={"kind": "docs", "topic": decision.topic},
        )
    before = env_state(env)
    obs, fb = env.step(decision.action)
    fb = fb.model_copy(update={"efficiency": Efficiency(seconds=time.perf_counter() - started)})
    info: dict[str, Any] = {"applied_hints": list(decision.applied_hints)}
    valid = getattr(env, "valid_actions", None)
    if valid is not None:
        info["valid_actions"] = [str(a) for a in valid]
    return Step(
        index=index,
        action=decision.action,
        observation=obs,
        feedback=fb,
        tool=env.name,
        state_before=before,
        state_after=env_state(env),
        info=info,
    )


def act_node(env: Env | RunEnvs) -> Node:
    """Node: carry out the decision in the run's environment (a docs lookup costs a step too)."""
    envs = _run_envs(env)

    def act(state: ExecutorState, runtime: Runtime[Any] | None = None) -> dict[str, Any]:
        env = envs.current(state, runtime)
        decision = state.get("decision")
        steps = state.get("steps") or []
        index = len(steps)
        if decision is None or decision.kind == "done":
            return {"done": True}
        step = take_step(env, decision, index)
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


def reset_node(env: Env | RunEnvs) -> Node:
    """Node: start the task in the run's environment (a fresh one when ``env`` makes one per run).

    When the env exposes ``goal``, ``valid_actions`` or ``state`` (the text games),
    they and the first observation go into ``task.context`` so the executor can read
    them before its first step; later steps carry them in ``Step.info`` and
    ``Step.state_after``.
    """
    envs = _run_envs(env)

    def reset(state: ExecutorState, runtime: Runtime[Any] | None = None) -> dict[str, Any]:
        task = task_of(state)
        run_env = envs.start(state, runtime)
        observation = run_env.reset(task.task_id)
        view = env_view(run_env, observation)
        if not view:
            return {}
        return {"task": task.model_copy(update={"context": {**task.context, **view}})}

    return reset


def judge_node(envs: RunEnvs, referee: Referee | None = None) -> Node:
    """Node: judge the run (``referee``, or the run environment's own evaluator), then release its environment."""

    def judge(state: ExecutorState, runtime: Runtime[Any] | None = None) -> dict[str, Any]:
        try:
            judge_with = referee or DeterministicReferee(envs.current(state, runtime))
            return {"verdict": judge_with.judge(task_of(state), state.get("steps") or [])}
        finally:
            envs.finish(state, runtime)

    return judge


def _after_capture(state: ExecutorState) -> Literal["on_error_retrieve", "referee", "executor"]:
    if state.get("done"):
        return "referee"
    if state.get("last_event") is not None:
        return "on_error_retrieve"
    return "executor"


def build_executor_referee_graph(
    memory: MemorySource,
    env: EnvSource,
    executor: Executor,
    *,
    referee: Referee | None = None,
    max_steps: int = DEFAULT_MAX_STEPS,
    context_schema: type[Any] | None = None,
) -> CompiledStateGraph:
    """Compile the reference loop for one executor, over a memory and an environment.

    Args:
        memory: The learning memory (one namespace), or a resolver from each run's
            ``runtime.context`` to a memory (``MemoryResolver``): one graph, many namespaces.
        env: An environment shared by every run (one run at a time), or a factory that
            makes a fresh one per run, so runs may go in parallel (``RunEnvs``).
        executor: Scripted, LLM-backed, or your own ``Executor``; shared by runs, so it
            should keep no per-run state (both shipped ones are pure).
        referee: Judge of each attempt; the run environment's deterministic evaluator by default.
        max_steps: Step budget per attempt.
        context_schema: LangGraph context schema (e.g. ``MemoryContext``), declared on the graph.
    """
    envs = RunEnvs(env, memory)
    builder = StateGraph(ExecutorState, context_schema=context_schema)
    builder.add_node("reset", reset_node(envs))
    builder.add_node("pre_run", pre_run_node(memory))
    builder.add_node("executor", executor_node(executor))
    builder.add_node("act", act_node(envs))
    builder.add_node("capture", capture_node(memory))
    builder.add_node("on_error_retrieve", on_error_retrieve_node(memory))
    builder.add_node("distill_hints", distill_hints_node(memory))
    builder.add_node("referee", judge_node(envs, referee))
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


def _first_state(task: TaskSpec, run_id: str | None, max_steps: int) -> ExecutorState:
    return {
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


def run_task(
    graph: Any,
    task: TaskSpec,
    *,
    run_id: str | None = None,
    max_steps: int = DEFAULT_MAX_STEPS,
    context: Any = None,
) -> dict[str, Any]:
    """Run one attempt of ``task`` through a compiled reference graph; returns the final state.

    ``context`` is the run's LangGraph context, e.g. ``MemoryContext(namespace=...)`` for a
    graph built over a ``MemoryResolver``.
    """
    return dict(graph.invoke(_first_state(task, run_id, max_steps), context=context))


async def arun_task(
    graph: Any,
    task: TaskSpec,
    *,
    run_id: str | None = None,
    max_steps: int = DEFAULT_MAX_STEPS,
    context: Any = None,
) -> dict[str, Any]:
    """Async ``run_task`` (``graph.ainvoke``), so attempts can be gathered on one event loop."""
    return dict(await graph.ainvoke(_first_state(task, run_id, max_steps), context=context))


__all__ = [
    "DEFAULT_MAX_STEPS",
    "EnvSource",
    "ExecutorState",
    "RunEnvs",
    "act_node",
    "arun_task",
    "build_executor_referee_graph",
    "env_state",
    "env_view",
    "executor_node",
    "judge_node",
    "reset_node",
    "run_task",
    "take_step",
]
