"""LangGraph 1.x runtime conventions: memory from ``runtime.context``, async nodes, one graph for many users.

Everything runs real parts: compiled LangGraph graphs, embedded Chroma memories in
``tmp_path``, the gridtool environment and the scripted executor. The concurrency tests
compile the reference graph once and run several namespaces through it at the same
time (threads over ``invoke``, ``asyncio.gather`` over ``ainvoke``), then check that
each namespace holds only its own runs, events and lessons, and that each attempt went
exactly as it goes when run alone (a shared environment would interleave their steps).
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from langgraph.graph import END, START, StateGraph

from langmem_plus import LearningMemory
from langmem_plus.executors.scripted import ScriptedExecutor
from langmem_plus.envs.registry import make_env
from langmem_plus.errors import EnvError, InvalidNamespace, StoreUnavailable
from langmem_plus.graph import RunEnvs, arun_task, build_executor_referee_graph, run_task
from langmem_plus.nodes import (
    MemoryState,
    acapture_node,
    adistill_hints_node,
    aend_of_run_node,
    aon_error_retrieve_node,
    apre_run_node,
    capture_node,
    distill_hints_node,
    end_of_run_node,
    on_error_retrieve_node,
    pre_run_node,
)
from langmem_plus.records import Feedback, Step, TaskSpec
from langmem_plus.resolver import MemoryContext, MemoryResolver, resolve_memory

TOOL = "gridtool"
TASKS = make_env(TOOL).tasks()


@pytest.fixture
def resolver(tmp_path: Path) -> Iterator[MemoryResolver]:
    with MemoryResolver(tmp_path / "store") as r:
        yield r


def _summary(final: dict[str, Any]) -> tuple[Any, ...]:
    """What an attempt did: its actions, their outcomes and the verdict (all deterministic)."""
    report = final["report"]
    return (
        [s.action for s in final["steps"]],
        [s.feedback.failed for s in final["steps"]],
        report.passed,
        report.tool_errors,
        sorted(e.fingerprint_id for e in final["events"]),
    )


# --------------------------------------------------------------------------- the resolver


def test_resolver_opens_each_namespace_once_across_threads(resolver: MemoryResolver) -> None:
    barrier = threading.Barrier(8)

    def grab(i: int) -> LearningMemory:
        barrier.wait()
        return resolver(MemoryContext(namespace=("t", f"user-{i % 2}")))

    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(grab, range(8)))
    assert len({id(m) for m in got[0::2]}) == 1 and len({id(m) for m in got[1::2]}) == 1
    assert got[0] is not got[1]
    assert sorted(resolver.namespaces) == [("t", "user-0"), ("t", "user-1")]
    assert got[0].namespace == ("t", "user-0") and got[1].namespace == ("t", "user-1")


def test_resolver_reads_dicts_objects_and_a_context_memory(resolver: MemoryResolver, tmp_path: Path) -> None:
    by_dict = resolver({"namespace": ["acme", "u1"]})
    assert resolver(MemoryContext(namespace=("acme", "u1"))) is by_dict
    assert resolver(MemoryContext(namespace="solo")).namespace == ("solo",)
    own = LearningMemory.open(tmp_path / "own", namespace=("own",))
    try:
        assert resolver({"memory": own, "namespace": ["acme", "u1"]}) is own  # a ready memory wins
        assert ("own",) not in resolver.namespaces
    finally:
        own.close()


def test_resolver_refuses_what_names_no_namespace(tmp_path: Path) -> None:
    with MemoryResolver(tmp_path / "a") as strict:
        with pytest.raises(InvalidNamespace, match="names no namespace"):
            strict(None)
        with pytest.raises(InvalidNamespace):
            strict({"namespace": ["ok", ""]})
    with MemoryResolver(tmp_path / "b", default_namespace=("shared",)) as lenient:
        assert lenient(None).namespace == ("shared",) and lenient({}).namespace == ("shared",)


def test_a_closed_resolver_closes_its_memories_and_opens_no_more(tmp_path: Path) -> None:
    resolver = MemoryResolver(tmp_path / "s")
    memory = resolver({"namespace": ["x"]})
    resolver.close()
    assert memory.store.closed
    with pytest.raises(StoreUnavailable):
        resolver({"namespace": ["x"]})


def test_resolve_memory_checks_what_a_resolver_returns(tmp_path: Path) -> None:
    with pytest.raises(TypeError):
        resolve_memory(lambda ctx: "not a memory", None)  # type: ignore[arg-type,return-value]
    with pytest.raises(TypeError):
        pre_run_node(42)  # type: ignore[arg-type]


def test_namespace_of_keys_memories_by_user_id(tmp_path: Path) -> None:
    """The LangGraph store-example pattern: the context carries a user id, the namespace derives from it."""
    with MemoryResolver(tmp_path / "s", namespace_of=lambda ctx: ("memories", ctx["user_id"])) as resolver:
        assert resolver({"user_id": "alice"}).namespace == ("memories", "alice")


# --------------------------------------------------------------------------- nodes: sync and async, one body


def _failing_act(state: MemoryState) -> dict[str, Any]:
    """A user's act node: the same mistake twice, so end_of_run has a recurring failure to learn from."""
    steps = state.get("steps") or []
    step = Step(
        index=len(steps),
        action="from people | filter age > 30",
        tool=TOOL,
        feedback=Feedback(hard_failure=True, error_text=f"unknown command 'from' at stage {len(steps) + 1}"),
    )
    return {"steps": [step]}


def _user_graph(resolver: MemoryResolver, mode: str) -> Any:
    """pre_run -> act -> capture -> retrieve -> distill -> act -> capture -> end_of_run, sync or async nodes."""
    sync = mode == "sync"
    builder = StateGraph(MemoryState, context_schema=MemoryContext)
    builder.add_node("pre_run", (pre_run_node if sync else apre_run_node)(resolver))
    builder.add_node("act", _failing_act)
    builder.add_node("capture", (capture_node if sync else acapture_node)(resolver))
    builder.add_node("on_error_retrieve", (on_error_retrieve_node if sync else aon_error_retrieve_node)(resolver))
    builder.add_node("distill_hints", (distill_hints_node if sync else adistill_hints_node)(resolver))
    builder.add_node("end_of_run", (end_of_run_node if sync else aend_of_run_node)(resolver))
    builder.add_edge(START, "pre_run")
    builder.add_edge("pre_run", "act")
    builder.add_edge("act", "capture")
    builder.add_conditional_edges(
        "capture", lambda s: "end_of_run" if len(s["steps"]) >= 2 else "on_error_retrieve"
    )
    builder.add_edge("on_error_retrieve", "distill_hints")
    builder.add_edge("distill_hints", "act")
    builder.add_edge("end_of_run", END)
    return builder.compile()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_nodes_take_the_memory_from_the_runtime_context(tmp_path: Path, mode: str) -> None:
    task = TaskSpec(task_id="t1", goal="names of people older than 30", tool=TOOL)
    with MemoryResolver(tmp_path / mode) as resolver:
        graph = _user_graph(resolver, mode)
        for user in ("alice", "bob"):
            state = {"run_id": f"run-{user}", "task": task, "steps": [], "events": [], "activations": [], "hints": []}
            context = MemoryContext(namespace=("acme", user))
            final = graph.invoke(state, context=context) if mode == "sync" else asyncio.run(graph.ainvoke(state, context=context))
            assert len(final["events"]) == 2 and final["report"].new_lessons
        for user in ("alice", "bob"):
            memory = resolver({"namespace": ["acme", user]})
            assert [r.run_id for r in memory.runs] == [f"run-{user}"]
            assert memory.store.count("events") == 2
            assert all(l.namespace == ("acme", user) for l in memory.list_lessons())
            assert {rid for l in memory.list_lessons() for rid in l.provenance.run_ids} == {f"run-{user}"}
        alice, bob = (resolver({"namespace": ["acme", u]}) for u in ("alice", "bob"))
        # The same mistake taught each namespace the same rule, kept apart.
        assert sorted(l.rule_text for l in alice.list_lessons()) == sorted(l.rule_text for l in bob.list_lessons())


def test_sync_and_async_nodes_write_the_same_memory(tmp_path: Path) -> None:
    task = TaskSpec(task_id="t1", goal="names of people older than 30", tool=TOOL)
    reports = {}
    for mode in ("sync", "async"):
        with MemoryResolver(tmp_path / mode, default_namespace=("n",)) as resolver:
            graph = _user_graph(resolver, mode)
            state = {"run_id": "r", "task": task, "steps": [], "events": [], "activations": [], "hints": []}
            final = graph.invoke(state) if mode == "sync" else asyncio.run(graph.ainvoke(state))
            reports[mode] = (final["report"].tool_errors, final["report"].repeated_errors, len(final["report"].new_lessons))
    assert reports["sync"] == reports["async"] == (2, 1, 1)


def test_async_nodes_refuse_a_sync_invoke(tmp_path: Path) -> None:
    """LangGraph runs ``async def`` nodes only under ``ainvoke``; the sync factories serve both."""
    with MemoryResolver(tmp_path / "s", default_namespace=("n",)) as resolver:
        graph = _user_graph(resolver, "async")
        with pytest.raises(TypeError, match="No synchronous function"):
            graph.invoke({"run_id": "r", "task": TaskSpec(task_id="t", goal="g"), "steps": []})


def test_fixed_memory_nodes_ignore_the_context(tmp_path: Path) -> None:
    """The old signature: a fixed memory serves every run, whatever the context says."""
    memory = LearningMemory.open(tmp_path / "fixed", namespace=("fixed",))
    try:
        node = pre_run_node(memory)
        state = {"run_id": "r", "task": TaskSpec(task_id="t", goal="g"), "steps": []}
        assert node(state)["retrieved"] == []  # called directly, no runtime
        graph = _user_graph_fixed(memory)
        final = graph.invoke({**state, "events": [], "activations": [], "hints": []}, context={"namespace": ["other"]})
        assert final["report"].run_id == "r" and [r.run_id for r in memory.runs] == ["r"]
    finally:
        memory.close()


def _user_graph_fixed(memory: LearningMemory) -> Any:
    builder = StateGraph(MemoryState)
    builder.add_node("act", _failing_act)
    builder.add_node("capture", capture_node(memory))
    builder.add_node("end_of_run", end_of_run_node(memory))
    builder.add_edge(START, "act")
    builder.add_edge("act", "capture")
    builder.add_edge("capture", "end_of_run")
    builder.add_edge("end_of_run", END)
    return builder.compile()


# --------------------------------------------------------------------------- per-run environments


def test_run_envs_give_each_run_its_own_environment() -> None:
    made: list[Any] = []

    def factory() -> Any:
        made.append(make_env(TOOL))
        return made[-1]

    envs = RunEnvs(factory)
    a, b = {"run_id": "a"}, {"run_id": "b"}
    env_a, env_b = envs.start(a), envs.start(b)
    assert env_a is not env_b and len(made) == 2 and len(envs) == 2
    assert envs.current(a) is env_a and envs.current(b) is env_b
    envs.finish(a)
    assert len(envs) == 1 and envs.current(b) is env_b
    with pytest.raises(EnvError, match="reset node"):  # a finished (or never reset) run has none
        envs.current(a)
    assert len(made) == 2


def test_run_envs_with_an_instance_share_it() -> None:
    env = make_env(TOOL)
    envs = RunEnvs(env)
    assert not envs.per_run
    assert envs.start({"run_id": "a"}) is env and envs.current({"run_id": "b"}) is env and len(envs) == 0


def test_run_envs_key_by_namespace_too(resolver: MemoryResolver) -> None:
    envs = RunEnvs(functools.partial(make_env, TOOL), resolver)

    class _Rt:  # what a node sees of LangGraph's Runtime: its context
        def __init__(self, ns: str) -> None:
            self.context = {"namespace": [ns]}

    one, two = envs.start({"run_id": "r1"}, _Rt("a")), envs.start({"run_id": "r1"}, _Rt("b"))  # type: ignore[arg-type]
    assert one is not two and len(envs) == 2


def test_run_envs_bound_what_they_hold(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("langmem_plus.graph.LIVE_ENVS_MAX", 3)
    envs = RunEnvs(functools.partial(make_env, TOOL))
    first = envs.start({"run_id": "r0"})
    for i in range(1, 5):
        envs.start({"run_id": f"r{i}"})
    assert len(envs) == 3 and first not in [envs.current({"run_id": f"r{i}"}) for i in range(2, 5)]
    with pytest.raises(EnvError):
        envs.current({"run_id": "r0"})


def test_run_envs_close_what_they_drop_but_never_a_shared_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """A per-run environment may hold a process (a text game's JVM): finishing or dropping it closes it."""
    closed: list[str] = []

    class Closing:
        def __init__(self, name: str) -> None:
            self.name = name

        def reset(self, task_id: str) -> str:
            return ""

        def step(self, action: str) -> Any:
            raise NotImplementedError

        def close(self) -> None:
            closed.append(self.name)

    monkeypatch.setattr("langmem_plus.graph.LIVE_ENVS_MAX", 2)
    counter = iter(range(100))
    envs = RunEnvs(lambda: Closing(f"e{next(counter)}"))
    for run in ("a", "b", "c"):  # the third start drops the first run's environment
        envs.start({"run_id": run})
    assert closed == ["e0"]
    envs.finish({"run_id": "b"})
    assert closed == ["e0", "e1"] and len(envs) == 1
    shared = Closing("shared")
    one = RunEnvs(shared)
    one.start({"run_id": "a"})
    one.finish({"run_id": "a"})
    assert "shared" not in closed


def test_run_envs_refuse_what_is_not_an_environment() -> None:
    with pytest.raises(TypeError):
        RunEnvs(42)  # type: ignore[arg-type]
    with pytest.raises(EnvError):
        RunEnvs(lambda: "no env").start({"run_id": "r"})  # type: ignore[arg-type,return-value]


# --------------------------------------------------------------------------- one compiled graph, many users at once

USERS = [("acme", f"user-{i}") for i in range(4)]
"""Namespaces run at once; every user's run is called "r1", so only the namespace tells them apart."""


def _alone(tmp_path: Path, user_index: int) -> tuple[Any, ...]:
    """The attempt of ``USERS[user_index]`` run alone, on a fresh store and environment: the oracle."""
    memory = LearningMemory.open(tmp_path / f"alone-{user_index}", namespace=USERS[user_index])
    try:
        graph = build_executor_referee_graph(memory, make_env(TOOL), ScriptedExecutor(seed=0))
        return _summary(run_task(graph, TASKS[user_index], run_id="r1"))
    finally:
        memory.close()


def _check_isolated(resolver: MemoryResolver, finals: list[dict[str, Any]], tmp_path: Path) -> None:
    for i, (user, final) in enumerate(zip(USERS, finals)):
        memory = resolver({"namespace": list(user)})
        assert [(r.run_id, r.task_id) for r in memory.runs] == [("r1", TASKS[i].task_id)]
        events = memory.store.count("events")
        assert events == len(final["events"]) and all(e.namespace == user for e in final["events"])
        assert all(l.namespace == user for l in memory.list_lessons())
        assert _summary(final) == _alone(tmp_path, i), f"{user}'s attempt differs from the same attempt alone"


def _graph(resolver: MemoryResolver) -> Any:
    return build_executor_referee_graph(
        resolver, functools.partial(make_env, TOOL), ScriptedExecutor(seed=0), context_schema=MemoryContext
    )


@pytest.mark.slow
def test_one_graph_serves_many_namespaces_from_threads(resolver: MemoryResolver, tmp_path: Path) -> None:
    graph = _graph(resolver)
    barrier = threading.Barrier(len(USERS))

    def attempt(i: int) -> dict[str, Any]:
        barrier.wait()
        return run_task(graph, TASKS[i], run_id="r1", context=MemoryContext(namespace=USERS[i]))

    with ThreadPoolExecutor(len(USERS)) as pool:
        finals = list(pool.map(attempt, range(len(USERS))))
    _check_isolated(resolver, finals, tmp_path)


@pytest.mark.slow
def test_one_graph_serves_many_namespaces_with_asyncio_gather(resolver: MemoryResolver, tmp_path: Path) -> None:
    graph = _graph(resolver)

    async def main() -> list[dict[str, Any]]:
        return await asyncio.gather(
            *(arun_task(graph, TASKS[i], run_id="r1", context={"namespace": list(USERS[i])}) for i in range(len(USERS)))
        )

    finals = asyncio.run(main())
    _check_isolated(resolver, finals, tmp_path)


def test_the_old_signature_still_runs_one_attempt_at_a_time(tmp_path: Path) -> None:
    memory = LearningMemory.open(tmp_path / "old", namespace=("old",))
    try:
        env = make_env(TOOL)
        graph = build_executor_referee_graph(memory, env, ScriptedExecutor(seed=0))
        first = run_task(graph, TASKS[0], run_id="a")
        second = run_task(graph, TASKS[1], run_id="b")
        assert first["report"].task_id == TASKS[0].task_id and second["report"].task_id == TASKS[1].task_id
        assert [r.run_id for r in memory.runs] == ["a", "b"]
    finally:
        memory.close()

