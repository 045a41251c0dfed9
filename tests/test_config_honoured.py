"""Every MemoryConfig field that used to be read from DEFAULT_CONFIG (or hard-coded) takes effect.

One test per field: a user's config changes what happens, the default does not.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel

from langmem_plus import LearningMemory, MemoryConfig
from langmem_plus.capture import detect_failure, fingerprint_id
from langmem_plus.config import DEFAULT_CONFIG, ERROR_TEXT_CEILING_CHARS, nest
from langmem_plus.learning.lifecycle import run_outcome
from langmem_plus.nodes import on_error_retrieve_node
from langmem_plus.records import Activation, ErrorEvent, Feedback, Lesson, LessonScope, Step, TaskSpec, Verdict
from langmem_plus.referee import LLMJudge

NS = ("acme", "config")
TASK = TaskSpec(task_id="t1", goal="pick the columns", tool="gridtool", family="f")


def hard_step(index: int, error: str, action: str = "LOAD t | select a") -> Step:
    return Step(index=index, action=action, tool="gridtool", feedback=Feedback(hard_failure=True, error_text=error))


class Clock:
    """A logical clock: 1000, 1001, 1002, ..."""

    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        self.t += 1.0
        return self.t


@pytest.fixture
def open_memory(tmp_path: Path) -> Iterator[Any]:
    opened: list[LearningMemory] = []

    def make(name: str = "m", **fields: Any) -> LearningMemory:
        clock = fields.pop("clock", None)
        kwargs: dict[str, Any] = {"clock": clock} if clock else {}
        memory = LearningMemory.open(tmp_path / name, namespace=NS, config=MemoryConfig(**nest(fields)), **kwargs)
        opened.append(memory)
        return memory

    yield make
    for memory in opened:
        memory.close()


def test_error_text_max_chars_cuts_the_event() -> None:
    step = hard_step(0, "error: " + "x" * 5000)
    short = detect_failure(step, [], namespace=NS, run_id="r", config=MemoryConfig(capture={"error_text_max_chars": 100}))
    default = detect_failure(step, [], namespace=NS, run_id="r")
    assert short is not None and default is not None
    assert len(short.error_text) <= 100 < len(default.error_text) <= DEFAULT_CONFIG.capture.error_text_max_chars


def test_error_text_max_chars_may_not_pass_the_record_ceiling() -> None:
    with pytest.raises(ValueError):
        MemoryConfig(capture={"error_text_max_chars": ERROR_TEXT_CEILING_CHARS + 1})


def test_error_text_scan_chars_bounds_what_the_fingerprint_reads() -> None:
    # The failure line sits in the middle: a 16k window reads it, a 256-char window (head + tail) does not.
    step = hard_step(0, "a" * 3000 + "\nKeyError: 'k'\n" + "b" * 3000)
    wide = detect_failure(step, [], namespace=NS, run_id="r")
    narrow = detect_failure(step, [], namespace=NS, run_id="r", config=MemoryConfig(capture={"error_text_scan_chars": 256}))
    assert wide is not None and narrow is not None
    assert "keyerror" in wide.fingerprint and "keyerror" not in narrow.fingerprint


def test_failure_note_chars_cuts_failure_notes() -> None:
    step = hard_step(0, "error: " + "y" * 1000, action="LOAD t | " + "select a " * 100)
    event = detect_failure(step, [], namespace=NS, run_id="r")
    assert event is not None
    notes = run_outcome([step], [event], None, MemoryConfig(lifecycle={"failure_note_chars": 40})).failures
    default = run_outcome([step], [event], None).failures
    assert len(notes[0].error) <= 40 and len(notes[0].action) <= 40
    assert len(default[0].error) > 40


def test_context_text_chars_bounds_the_working_context(open_memory: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    memory = open_memory(context_text_chars=25)
    seen: list[Any] = []
    real = memory.engine.on_error
    monkeypatch.setattr(memory.engine, "on_error", lambda event, ctx, **kw: (seen.append(ctx), real(event, ctx, **kw))[1])
    event = memory.capture(hard_step(0, "unknown command 'select': " + "z" * 500), run_id="r1", task=TASK)
    assert event is not None
    memory.retrieve_on_error(event, run_id="r1")  # the memory's own context
    node = on_error_retrieve_node(memory)  # the node's context
    node({"run_id": "r1", "task": TASK, "steps": [hard_step(0, "q" * 500)], "last_event": event})
    assert len(seen) == 2
    assert all(0 < len(ctx.last_fail) <= 25 for ctx in seen)
    assert len(seen[1].obs) <= 25


def test_query_error_chars_bounds_the_audited_query(open_memory: Any) -> None:
    memory = open_memory(query_error_chars=60)
    event = memory.capture(hard_step(0, "unknown command 'select': " + "w" * 900), run_id="r1", task=TASK)
    assert event is not None
    memory.retrieve_on_error(event, run_id="r1")
    queries = [r["query"] for r in memory.audit.read() if r["kind"] == "retrieval"]
    assert queries and all(len(q) <= 60 for q in queries)


def test_graph_seed_weights_come_from_the_config(open_memory: Any) -> None:
    memory = open_memory(graph_seed_weight_tag=0.9, graph_seed_weight_scope=0.05)
    event = ErrorEvent(
        id="e", namespace=NS, run_id="r", step=0, fingerprint="f", fingerprint_id="fp1",
        tags=["unknown_command"], channel="hard", tool="gridtool",
    )
    seeds = memory.engine.sources.error_seeds(event)
    assert seeds == {"fp:fp1": 1.0, "tag:unknown_command": 0.9, "tool:gridtool": 0.05}


def test_recent_runs_bounds_the_pre_run_context(open_memory: Any) -> None:
    memory = open_memory(recent_runs=2)
    for i in range(4):
        step = hard_step(0, f"unknown command 'c{i}x': case {i}")
        event = memory.capture(step, run_id=f"r{i}", task=TASK)
        memory.end_run(run_id=f"r{i}", task=TASK, steps=[step], events=[event] if event else [])
    assert [r.run_id for r in memory._context_runs(TASK)] == ["r2", "r3"]


def test_the_audit_log_stamps_the_memory_clock(open_memory: Any) -> None:
    memory = open_memory(clock=Clock())
    memory.capture(hard_step(0, "unknown command 'select'"), run_id="r1", task=TASK)
    stamps = [r["ts"] for r in memory.audit.read()]
    assert stamps and all(1000.0 < ts < 1100.0 for ts in stamps)


def _referee_scenario(memory: LearningMemory, verdict: Verdict) -> float:
    """A baseline run fails once on ``select`` (score 0.2, 2 steps); the next shows the fix and passes in 1 step."""
    error = "unknown command 'select'"
    fp = fingerprint_id(detect_failure(hard_step(0, error), [], namespace=NS, run_id="x").fingerprint)  # type: ignore[union-attr]
    lesson = Lesson(
        id="sel", namespace=NS, rule_text="WRONG: select -> CORRECT: PICK", wrong="select", correct="PICK",
        triggers=[fp], tags=["unknown_command"], scope=LessonScope(tool="gridtool"),
    )
    memory.add_lessons([lesson])
    first = [hard_step(0, error), Step(index=1, action="LOAD t | PICK a", tool="gridtool")]
    events = [e for e in (memory.capture(s, run_id="base", task=TASK) for s in first) if e]
    memory.end_run(run_id="base", task=TASK, steps=first, events=events, verdict=Verdict(passed=True, score=0.2))
    shown = [Activation(lesson_id="sel", run_id="next", step=0, moment="pre_run")]
    report = memory.end_run(
        run_id="next", task=TASK, steps=[Step(index=0, action="LOAD t | PICK a", tool="gridtool")],
        events=[], activations=shown, verdict=verdict,
    )
    return report.utilities["sel"]


def test_an_llm_judge_score_reaches_lesson_utility(open_memory: Any) -> None:
    answer = json.dumps({"passed": True, "score": 0.9, "reasons": ["goal reached"]})
    verdict = LLMJudge(FakeListChatModel(responses=[answer])).judge(TASK, [Step(index=0, action="LOAD t | PICK a")])
    assert verdict.source == "llm" and verdict.score == 0.9
    with_judge = _referee_scenario(open_memory("judged"), verdict)
    signals = _referee_scenario(open_memory("signals"), Verdict(passed=True, score=0.9, source="signals"))
    # error_reduction 1, step gain (2 - 1) / 2 = 0.5, referee gain 0.9 - 0.2 = 0.7 (design.md §6 weights)
    assert with_judge == pytest.approx(0.50 * 1 + 0.30 * 0.5 + 0.20 * 0.7)
    assert signals == pytest.approx(0.65 * 1 + 0.35 * 0.5)
