"""LangGraph state and node factories for dropping the learning loop into any graph (design.md §8).

Memory is read deterministically in nodes, not left to a model's decision to call a
tool, and the end-of-run update runs inside the graph, not on a side thread. The run lives
in the graph's state; each node takes it up as a ``memory.run.Run`` and makes the call a run
makes: ``hints`` before the first step, ``observe`` for the steps the act node appended,
``check`` for a proposed call, ``end``. The on-error lessons stay two nodes of their own
(retrieve, distill: a model may rewrite the hints, and what its block shows is activated).

The state keys are plain TypedDict fields with reducers: ``steps``, ``events`` and
``activations`` accumulate; ``hints`` merge by source id. Your own act node appends
a ``Step`` to ``steps``; ``capture`` fingerprints the steps it has not seen yet.

Each factory takes a fixed ``LearningMemory`` or a resolver from the run's context to
one (``MemoryResolver``): the nodes declare ``runtime`` and LangGraph injects its
``Runtime``, so one compiled graph serves many users, each run in the namespace its
``context`` names (``graph.invoke(state, context={"namespace": ("acme", "user-1")})``).

Sync nodes run under ``invoke`` and, on LangGraph's worker threads, under ``ainvoke``;
the ``a*_node`` twins are ``async def`` nodes for graphs run only with ``ainvoke`` /
``astream``. Both run one shared body per node; the async one awaits it on a worker
thread (``asyncio.to_thread``) because Chroma's embedded client is synchronous.

Example:
    >>> import tempfile
    >>> from langgraph.graph import StateGraph, START, END
    >>> from langmem_plus import TaskSpec
    >>> resolver = MemoryResolver(tempfile.mkdtemp())
    >>> builder = StateGraph(MemoryState, context_schema=MemoryContext)
    >>> _ = builder.add_node("pre_run", pre_run_node(resolver)).add_edge(START, "pre_run").add_edge("pre_run", END)
    >>> graph = builder.compile()
    >>> out = graph.invoke({"run_id": "r1", "task": TaskSpec(task_id="t", goal="count rows")},
    ...                    context=MemoryContext(namespace=("acme", "user-1")))
    >>> out["retrieved"], resolver.namespaces
    ([], [('acme', 'user-1')])
    >>> resolver.close()
"""

from __future__ import annotations

import asyncio
import operator
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Protocol, Sequence, TypedDict

from langgraph.runtime import Runtime

from langmem_plus.learning.distill import distill_hints
from langmem_plus.memory import LearningMemory
from langmem_plus.memory.run import Run
from langmem_plus.retrieval.context import assemble
from langmem_plus.records import (
    Activation,
    ErrorEvent,
    Hint,
    RunReport,
    ScoredItem,
    Step,
    TaskSpec,
    Verdict,
)
from langmem_plus.referee import Referee
from langmem_plus.resolver import MemoryContext, MemoryResolver, MemorySource, resolve_memory

class Node(Protocol):
    """A LangGraph node: takes the state (and the ``Runtime`` LangGraph injects), returns an update."""

    def __call__(self, state: Any, runtime: Runtime[Any] | None = None) -> dict[str, Any]: ...


class AsyncNode(Protocol):
    """An async LangGraph node (for ``ainvoke`` / ``astream``); otherwise as ``Node``."""

    def __call__(self, state: Any, runtime: Runtime[Any] | None = None) -> Awaitable[dict[str, Any]]: ...


def merge_hints(existing: Sequence[Hint] | None, new: Sequence[Hint] | None) -> list[Hint]:
    """Reducer: keep hints in arrival order, a newer hint replacing one with the same source id."""
    out: dict[str, Hint] = {h.source_id: h for h in existing or ()}
    for h in new or ():
        out[h.source_id] = h
    return list(out.values())


class MemoryState(TypedDict, total=False):
    """The keys the memory nodes read and write. Extend it with your own keys."""

    run_id: str
    """Identifies this run in events, activations and the audit log."""
    task: TaskSpec
    """What the run is trying to do."""
    steps: Annotated[list[Step], operator.add]
    """Every executed step, appended by your act node."""
    captured: int
    """How many of ``steps`` the capture node has already looked at."""
    events: Annotated[list[ErrorEvent], operator.add]
    """Fingerprinted failures of this run."""
    last_event: ErrorEvent | None
    """The failure found by the latest capture, None when the latest steps were fine."""
    retrieved: list[ScoredItem]
    """The latest retrieval, with scores and their components."""
    hints: Annotated[list[Hint], merge_hints]
    """Hints shown to the executor so far in this run."""
    activations: Annotated[list[Activation], operator.add]
    """Every lesson shown to the executor, with the step and moment."""
    proposed: dict[str, Any] | None
    """A tool call your act node proposes, ``{"tool": name, "args": {...}}``, for ``check_call_node`` before it runs."""
    held: list[Hint]
    """What memory holds against ``proposed`` (``check_call_node``): one hint per lesson, empty when nothing does."""
    rewritten: dict[str, Any] | None
    """``proposed``'s arguments as the held rewrites write them; None when no rewrite applies."""
    verdict: Verdict | None
    """The referee's judgement."""
    report: RunReport | None
    """What end_of_run changed in memory."""


def task_of(state: Any) -> TaskSpec:
    """The state's task as a TaskSpec (a deployment server hands it over as a plain dict)."""
    task = state["task"]
    return task if isinstance(task, TaskSpec) else TaskSpec.model_validate(task)


# --------------------------------------------------------------------------- node cores


def _run(memory: LearningMemory, state: MemoryState, *, record: bool = False) -> Run:
    """The state's run taken up for one node (``memory.run.Run``), without a domain's step advice (a graph routes
    its own steps); with ``record``, from the events and activations it holds (for its end)."""
    return Run(memory, task_of(state), run_id=state["run_id"], step_advice=False, steps=state.get("steps") or [],
               events=(state.get("events") or []) if record else (),
               activations=(state.get("activations") or []) if record else ())


def _pre_run(memory: LearningMemory, state: MemoryState) -> dict[str, Any]:
    run = _run(memory, state)
    hints = run.hints()
    return {"retrieved": run.retrieved, "hints": hints, "activations": run.activations, "last_event": None}


def _capture(memory: LearningMemory, state: MemoryState) -> dict[str, Any]:
    steps = state.get("steps") or []
    start = state.get("captured", 0)
    run = Run(memory, task_of(state), run_id=state["run_id"], step_advice=False, steps=steps[:start])
    for step in steps[start:]:  # numbered by the graph's act node
        run.observe(step)
    events = run.events
    return {"events": events, "last_event": events[-1] if events else None, "captured": len(steps)}


def _on_error_retrieve(memory: LearningMemory, state: MemoryState) -> dict[str, Any]:
    event = state.get("last_event")
    if event is None:
        return {"retrieved": []}
    return {"retrieved": _run(memory, state).retrieve_on_error(event)}


def _distill(memory: LearningMemory, state: MemoryState) -> dict[str, Any]:
    # The hints go through instant memory like every context: the retrieval's items compete for its budget.
    items = assemble(state.get("retrieved") or [], budget=memory.config.context.max_context_tokens, config=memory.config).shown
    event = state.get("last_event")
    hints = distill_hints(items, goal=task_of(state).goal, obs=event.error_text if event else "", llm=memory.llm)
    acts = _run(memory, state).activate(items, moment="on_error", fingerprint_id=event.fingerprint_id if event else None)
    return {"hints": hints, "activations": acts}


def _check_call(memory: LearningMemory, state: MemoryState) -> dict[str, Any]:
    proposed = state.get("proposed") or {}
    tool, args = proposed.get("tool"), proposed.get("args") or {}
    if not isinstance(tool, str) or not isinstance(args, dict):
        return {"held": [], "rewritten": None}
    run = _run(memory, state)
    held = run.check(tool, args)
    return {"held": held, "rewritten": run.rewritten_args(args), "activations": run.activations}


def _end_of_run(memory: LearningMemory, state: MemoryState) -> dict[str, Any]:
    return {"report": _run(memory, state, record=True).end(state.get("verdict"))}


# --------------------------------------------------------------------------- sync and async nodes over one core

Body = Callable[[Any, Runtime[Any] | None], dict[str, Any]]
"""A node's whole work given the state and the runtime: what the sync node runs and the async one awaits."""


def context_of(runtime: Runtime[Any] | None) -> Any:
    """The run's ``runtime.context`` (None when the node is called outside a graph)."""
    return None if runtime is None else runtime.context


def _with_memory(core: Callable[[LearningMemory, MemoryState], dict[str, Any]], memory: MemorySource) -> Body:
    """``core`` run on the memory of each run: ``memory`` itself, or what it resolves the run's context to."""
    if not isinstance(memory, LearningMemory) and not callable(memory):
        raise TypeError(f"expected a LearningMemory or a resolver (context -> LearningMemory), got {memory!r}")

    def body(state: Any, runtime: Runtime[Any] | None) -> dict[str, Any]:
        return core(resolve_memory(memory, context_of(runtime)), state)

    return body


def _sync_node(name: str, body: Body) -> Node:
    def node(state: MemoryState, runtime: Runtime[Any] | None = None) -> dict[str, Any]:
        return body(state, runtime)

    node.__name__ = node.__qualname__ = name
    return node


def _async_node(name: str, body: Body) -> AsyncNode:
    async def node(state: MemoryState, runtime: Runtime[Any] | None = None) -> dict[str, Any]:
        # Chroma's embedded client (and a memory's first open) is synchronous: the same body
        # runs on a worker thread, as LearningMemory's own async twins do, so the loop never blocks.
        return await asyncio.to_thread(body, state, runtime)

    node.__name__ = node.__qualname__ = name
    return node


def pre_run_node(memory: MemorySource) -> Node:
    """Node: retrieve lessons for the task before the first step; they become hints.

    Args:
        memory: A fixed ``LearningMemory``, or a resolver from the run's ``runtime.context``
            to one (``MemoryResolver``), so one compiled graph serves many namespaces.
    """
    return _sync_node("pre_run", _with_memory(_pre_run, memory))


def apre_run_node(memory: MemorySource) -> AsyncNode:
    """Async ``pre_run_node``, for graphs run with ``ainvoke`` / ``astream`` only."""
    return _async_node("pre_run", _with_memory(_pre_run, memory))


def capture_node(memory: MemorySource) -> Node:
    """Node: fingerprint the steps appended since the last capture; sets ``last_event``. ``memory``: as in ``pre_run_node``."""
    return _sync_node("capture", _with_memory(_capture, memory))


def acapture_node(memory: MemorySource) -> AsyncNode:
    """Async ``capture_node``."""
    return _async_node("capture", _with_memory(_capture, memory))


def on_error_retrieve_node(memory: MemorySource) -> Node:
    """Node: retrieve lessons for ``last_event`` (exact fingerprint first). ``memory``: as in ``pre_run_node``."""
    return _sync_node("on_error_retrieve", _with_memory(_on_error_retrieve, memory))


def aon_error_retrieve_node(memory: MemorySource) -> AsyncNode:
    """Async ``on_error_retrieve_node``."""
    return _async_node("on_error_retrieve", _with_memory(_on_error_retrieve, memory))


def distill_hints_node(memory: MemorySource) -> Node:
    """Node: turn the latest retrieval into hints (LLM with strict JSON when memory has one) and record activations."""
    return _sync_node("distill", _with_memory(_distill, memory))


def adistill_hints_node(memory: MemorySource) -> AsyncNode:
    """Async ``distill_hints_node``."""
    return _async_node("distill", _with_memory(_distill, memory))


def check_call_node(memory: MemorySource) -> Node:
    """Node: the call guard before a tool call runs: what memory holds against ``proposed`` goes into ``held`` (and
    ``rewritten``), each lesson activated. Route to your act node to choose again, or to the tool. ``memory``: as in
    ``pre_run_node``."""
    return _sync_node("check_call", _with_memory(_check_call, memory))


def acheck_call_node(memory: MemorySource) -> AsyncNode:
    """Async ``check_call_node``."""
    return _async_node("check_call", _with_memory(_check_call, memory))


def _judging(referee: Referee) -> Body:
    def body(state: Any, runtime: Runtime[Any] | None) -> dict[str, Any]:
        return {"verdict": referee.judge(task_of(state), state.get("steps") or [])}

    return body


def referee_node(referee: Referee) -> Node:
    """Node: judge the run with any Referee (deterministic, LLM or signals)."""
    return _sync_node("judge", _judging(referee))


def areferee_node(referee: Referee) -> AsyncNode:
    """Async ``referee_node``."""
    return _async_node("judge", _judging(referee))


def end_of_run_node(memory: MemorySource) -> Node:
    """Node: lesson synthesis and utility update, inside the graph (no background race). ``memory``: as in ``pre_run_node``."""
    return _sync_node("end_of_run", _with_memory(_end_of_run, memory))


def aend_of_run_node(memory: MemorySource) -> AsyncNode:
    """Async ``end_of_run_node``."""
    return _async_node("end_of_run", _with_memory(_end_of_run, memory))


__all__ = [
    "AsyncNode",
    "MemoryContext",
    "MemoryResolver",
    "MemorySource",
    "MemoryState",
    "Node",
    "acapture_node",
    "acheck_call_node",
    "adistill_hints_node",
    "aend_of_run_node",
    "aon_error_retrieve_node",
    "apre_run_node",
    "areferee_node",
    "capture_node",
    "check_call_node",
    "context_of",
    "distill_hints_node",
    "end_of_run_node",
    "merge_hints",
    "on_error_retrieve_node",
    "pre_run_node",
    "referee_node",
    "task_of",
]
