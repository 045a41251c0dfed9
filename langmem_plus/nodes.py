"""LangGraph state and node factories for dropping the learning loop into any graph (DESIGN §8).

Memory is read deterministically in nodes, not left to a model's decision to call a
tool, and the end-of-run update runs inside the graph, not on a side thread.

The state keys are plain TypedDict fields with reducers: ``steps``, ``events`` and
``activations`` accumulate; ``hints`` merge by source id. Your own act node appends
a ``Step`` to ``steps``; ``capture`` fingerprints the steps it has not seen yet.

Example:
    >>> from langgraph.graph import StateGraph, START, END
    >>> from langmem_plus.nodes import MemoryState, pre_run_node
    >>> builder = StateGraph(MemoryState)  # or your own TypedDict that extends MemoryState
    >>> # builder.add_node("pre_run", pre_run_node(memory)); builder.add_edge(START, "pre_run") ...
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, Protocol, Sequence, TypedDict

from langmem_plus.config import DEFAULT_CONFIG
from langmem_plus.learning.distill import distill_hints
from langmem_plus.memory import LearningMemory
from langmem_plus.records import (
    Activation,
    ErrorEvent,
    Hint,
    RunReport,
    ScoredItem,
    Step,
    TaskSpec,
    Verdict,
    WorkingContext,
)
from langmem_plus.referee import Referee

class Node(Protocol):
    """A LangGraph node: takes the state, returns an update."""

    def __call__(self, state: Any) -> dict[str, Any]: ...


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
    verdict: Verdict | None
    """The referee's judgement."""
    report: RunReport | None
    """What end_of_run changed in memory."""


def task_of(state: Any) -> TaskSpec:
    """The state's task as a TaskSpec (a deployment server hands it over as a plain dict)."""
    task = state["task"]
    return task if isinstance(task, TaskSpec) else TaskSpec.model_validate(task)


def _working(state: Any, event: ErrorEvent | None = None, chars: int = DEFAULT_CONFIG.context_text_chars) -> WorkingContext:
    """The run's working context; ``chars`` bounds the observation and failure text (``context_text_chars``)."""
    task = task_of(state)
    steps: list[Step] = state.get("steps") or []
    stalls = 0
    best = -1.0
    for s in steps:
        p = s.feedback.progress
        if p is not None and p > best:
            best, stalls = p, 0
        else:
            stalls += 1
    recent = steps[-5:]
    last = steps[-1] if steps else None
    return WorkingContext(
        goal=task.goal,
        context=task.tool or task.domain or "",
        obs=(last.observation[:chars] if last else ""),
        last_fail=(event.error_text[:chars] if event else ""),
        stalls=stalls,
        recent_failures=sum(1 for s in recent if s.feedback.failed),
    )


def pre_run_node(memory: LearningMemory) -> Node:
    """Node: retrieve lessons for the task before the first step; they become hints."""

    def pre_run(state: MemoryState) -> dict[str, Any]:
        items = memory.retrieve_pre_run(
            task_of(state), _working(state, chars=memory.config.context_text_chars), run_id=state["run_id"]
        )
        step = len(state.get("steps") or [])
        return {
            "retrieved": items,
            "hints": memory.hints(items),
            "activations": memory.activations_for(items, run_id=state["run_id"], step=step, moment="pre_run"),
            "last_event": None,
        }

    return pre_run


def capture_node(memory: LearningMemory) -> Node:
    """Node: fingerprint the steps appended since the last capture; sets ``last_event``."""

    def capture(state: MemoryState) -> dict[str, Any]:
        steps = state.get("steps") or []
        events = memory.capture_steps(steps, run_id=state["run_id"], task=task_of(state), start=state.get("captured", 0))
        return {"events": events, "last_event": events[-1] if events else None, "captured": len(steps)}

    return capture


def on_error_retrieve_node(memory: LearningMemory) -> Node:
    """Node: retrieve lessons for ``last_event`` (exact fingerprint first)."""

    def on_error_retrieve(state: MemoryState) -> dict[str, Any]:
        event = state.get("last_event")
        if event is None:
            return {"retrieved": []}
        items = memory.retrieve_on_error(
            event, _working(state, event, memory.config.context_text_chars), run_id=state["run_id"]
        )
        return {"retrieved": items}

    return on_error_retrieve


def distill_hints_node(memory: LearningMemory) -> Node:
    """Node: turn the latest retrieval into hints (LLM with strict JSON when memory has one) and record activations."""

    def distill(state: MemoryState) -> dict[str, Any]:
        items = state.get("retrieved") or []
        event = state.get("last_event")
        hints = distill_hints(items, goal=task_of(state).goal, obs=event.error_text if event else "", llm=memory.llm)
        step = len(state.get("steps") or [])
        acts = memory.activations_for(
            items, run_id=state["run_id"], step=step, moment="on_error", fingerprint_id=event.fingerprint_id if event else None
        )
        return {"hints": hints, "activations": acts}

    return distill


def referee_node(referee: Referee) -> Node:
    """Node: judge the run with any Referee (deterministic, LLM or signals)."""

    def judge(state: MemoryState) -> dict[str, Any]:
        return {"verdict": referee.judge(task_of(state), state.get("steps") or [])}

    return judge


def end_of_run_node(memory: LearningMemory) -> Node:
    """Node: lesson synthesis and utility update, inside the graph (no background race)."""

    def end_of_run(state: MemoryState) -> dict[str, Any]:
        report = memory.end_run(
            run_id=state["run_id"],
            task=task_of(state),
            steps=state.get("steps") or [],
            events=state.get("events") or [],
            activations=state.get("activations") or [],
            verdict=state.get("verdict"),
        )
        return {"report": report}

    return end_of_run


__all__ = [
    "MemoryState",
    "Node",
    "capture_node",
    "distill_hints_node",
    "end_of_run_node",
    "merge_hints",
    "on_error_retrieve_node",
    "pre_run_node",
    "referee_node",
    "task_of",
]
