"""What a memory holds, as plain data, for tests that compare two ways of storing or reopening it."""

from __future__ import annotations

from typing import Any

from langmem_plus import LearningMemory


def memory_state(mem: LearningMemory) -> tuple[Any, ...]:
    """The graph, lessons, links, skills, runs and per-fingerprint run counts."""
    return (
        mem.graph.snapshot(),
        {i: l.model_dump() for i, l in mem.lessons.items()},
        {i: l.model_dump() for i, l in mem.view.links.items()},
        {i: s.model_dump() for i, s in mem.view.skills.items()},
        [r.model_dump() for r in mem.runs],
        dict(mem.view.fp_runs),
    )
