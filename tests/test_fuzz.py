"""10,000 generated hostile inputs through capture, records, JSON parsing, the retriever and the tool.

Every call either succeeds or raises one of the documented types (``LangmemPlusError``
and the builtins our errors subclass: ``ValueError``, which pydantic's ValidationError
is, and ``TypeError``). Nothing stored before the storm is lost, and every capture that
returned an event left it in the store.

The pure paths (fingerprint, tags, detect_failure, records, JSON) see all 10,000 inputs;
``detect_failure`` every ``DETECT_EVERY``-th and the paths that write or query Chroma every
``STORE_EVERY``-th, so the test stays within a unit test's time.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from langmem_plus import LearningMemory
from langmem_plus._llm import extract_json_object
from langmem_plus.capture import detect_failure, extract_tags, fingerprint
from langmem_plus.errors import LangmemPlusError
from langmem_plus.records import ErrorEvent, Feedback, Lesson, Step, TaskSpec

N_INPUTS = 10_000
STORE_EVERY = 25
"""Inputs between two that also go through the memory's store (capture, retriever, tool)."""
DETECT_EVERY = 4
"""Inputs between two that go through ``detect_failure`` (fingerprint and tags again, via a Step)."""
ALLOWED = (LangmemPlusError, ValueError, TypeError)
NS = ("fuzz", "agent")
TASK = TaskSpec(task_id="t", goal="names of people over 30", tool="gridtool")


def _text(rng: random.Random) -> str:
    pick = rng.randrange(9)
    if pick == 0:
        return "".join(chr(rng.randrange(0x110000)) for _ in range(rng.randrange(200)))  # lone surrogates included
    if pick == 1:
        size = 100_000 if rng.random() < 0.05 else rng.choice([10, 1000])  # past the scan window now and then
        return rng.choice(["x", "'", '"a', "a.", "\n", "{", "[", "Traceback"]) * size
    if pick == 2:
        depth = rng.choice([10, 1000, 50_000])
        return '{"a":' * depth + "1" + "}" * (depth if rng.random() < 0.5 else 0)
    if pick == 3:  # a malformed model answer
        return rng.choice(['{"rule_text": ', '```json\n{"passed": "yes"}\n```', '{"score": NaN}', "[1, 2]", "null", '{"a": 1e999}'])
    if pick == 4:
        return f"sqlite3.OperationalError: no such column: {rng.choice(['agee', 'name', '😀', ''])}"
    if pick == 5:
        return ""
    if pick == 6:
        return "\x00\x01\x1b[31mred\x1b[0m\r\n" * rng.randrange(1, 50)
    if pick == 7:
        return f"error: unknown command '{rng.randbytes(8).hex()}' at stage {rng.randrange(-5, 10**12)}"
    return " ".join(rng.choice(["filter", "keep", "|", "LOAD", "age", ">", "30", "--desc"]) for _ in range(rng.randrange(12)))


def hostile(rng: random.Random) -> Any:
    """One generated input: text, bytes, numbers that are not numbers, containers, None."""
    pick = rng.randrange(10)
    if pick < 5:
        return _text(rng)
    if pick == 5:
        return rng.randbytes(rng.choice([0, 10, 5000]))
    if pick == 6:
        return rng.choice([math.nan, math.inf, -math.inf, 1e308, -0.0, 2**80])
    if pick == 7:
        return rng.choice([None, [], {}, [1, "a"], {"k": math.nan}, object()])
    if pick == 8:
        return _text(rng).encode("utf-8", "surrogatepass")
    return rng.choice(["hard", "constraint", "no_progress", "weird", "", "HARD"])  # enum values, known and not


def survives(fn: Callable[[], Any]) -> Any:
    """Call ``fn``; a documented exception is fine (returned as None), anything else fails the test."""
    try:
        return fn()
    except ALLOWED:
        return None


def _inputs(n: int, seed: int) -> Iterator[tuple[int, Any, Any, Any]]:
    rng = random.Random(seed)
    for i in range(n):
        yield i, hostile(rng), hostile(rng), hostile(rng)


@pytest.mark.slow
def test_ten_thousand_hostile_inputs(tmp_path: Path) -> None:
    memory = LearningMemory.open(tmp_path / "m", namespace=NS)
    kept = [
        Lesson(id=f"keep{i}", namespace=NS, rule_text=f"WRONG: filter{i} -> CORRECT: keep", wrong=f"filter{i}",
               correct="keep", triggers=[f"fp{i}"], tags=["unknown_command"])
        for i in range(5)
    ]
    memory.add_lessons(kept)
    before = {l.id: l.model_dump() for l in memory.list_lessons()}
    retriever, tool = memory.as_retriever(kind="on_error"), memory.as_tool()
    stored_events: set[str] = set()
    for i, a, b, c in _inputs(N_INPUTS, seed=13):
        survives(lambda: fingerprint(a, action=b if isinstance(b, str) else None))
        survives(lambda: extract_tags(a, b if isinstance(b, str) else None))
        survives(lambda: extract_json_object(a if isinstance(a, str) else repr(a)))
        survives(lambda: ErrorEvent.model_validate({
            "id": "e", "namespace": NS, "run_id": "r", "step": 0, "fingerprint": a, "fingerprint_id": "x", "channel": c,
            "error_text": b,
        }))
        survives(lambda: Lesson.model_validate({"id": "l", "namespace": NS, "rule_text": a, "status": c, "reliability": b}))
        step = survives(lambda: Step(index=i, action=b, observation=c, feedback=Feedback(
            hard_failure=True, error_text=a, progress=c if isinstance(c, float) else None,
            reward=b if isinstance(b, float) else 0.0)))
        if step is None:
            continue
        if i % DETECT_EVERY == 0:
            survives(lambda: detect_failure(step, [], namespace=NS, run_id=f"r{i}", task=TASK))
        if i % STORE_EVERY == 0:
            event = survives(lambda: memory.capture(step, run_id=f"r{i}", task=TASK))
            if event is not None:
                stored_events.add(event.id)
            query = a if isinstance(a, str) else repr(a)
            survives(lambda: retriever.invoke(query))
            survives(lambda: tool.invoke({"error_text": query, "goal": repr(b)[:100]}))
    memory.close()
    again = LearningMemory.open(tmp_path / "m", namespace=NS)
    try:
        assert {l.id: l.model_dump() for l in again.list_lessons() if l.id in before} == before  # nothing stored lost
        assert len(stored_events) > N_INPUTS // STORE_EVERY // 2  # most hostile failures were still captured
        held = {e.id for e in again.store.get("events", sorted(stored_events))}
        assert held == stored_events  # every capture that returned is in the store
    finally:
        again.close()


def test_the_generator_reaches_the_hostile_cases() -> None:
    """The fuzz is only as good as its inputs: check it makes the cases the issue names."""
    seen = [x for _, a, b, c in _inputs(2000, seed=13) for x in (a, b, c)]
    assert any(isinstance(x, bytes) for x in seen)
    assert any(isinstance(x, float) and math.isnan(x) for x in seen)
    assert any(isinstance(x, str) and len(x) >= 100_000 for x in seen)  # past the scan window
    assert any(isinstance(x, str) and x.startswith('{"a":{"a":') for x in seen)
    assert any(isinstance(x, str) and any(0xD800 <= ord(ch) <= 0xDFFF for ch in x) for x in seen)
    assert "weird" in seen and '{"score": NaN}' in seen
    json.dumps([repr(x)[:10] for x in seen])
