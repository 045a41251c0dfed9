"""What a run's outcome says about each lesson applied in it: judged by what followed from the call it shaped.

A lesson is applied to a call when the executor wrote it in (``info["applied_hints"]``) or the call guard
rewrote the call with it (``info["rewritten_by"]``). Such a lesson is judged by what followed from that call,
not only by the error it silenced:

- the verdict judged that call's result (``Verdict.step``): +1 when the run passed, -1 when it failed;
- the call failed a constraint (a wrong result, a lost game): -1.

A call that ran without a tool error and did the wrong thing is the common harm of a lesson: these outcomes
reach its utility (``utility.utility``'s ``outcome``). And where the executor reports what it applied, a lesson
shown but applied to no call, whose failure did not occur either, was not at stake: that run is no evidence about
it (``applied_in_run``). Pure: steps and verdict in, outcomes out.

Example:
    >>> from langmem_plus.records import Feedback, Step, Verdict
    >>> steps = [Step(index=0, action="a", info={"applied_hints": ["l1"]}),
    ...          Step(index=1, action="b", info={"applied_hints": ["l2"]}, feedback=Feedback(constraint_failure=True))]
    >>> found = step_outcomes(steps, Verdict(passed=True, score=1.0, step=0))
    >>> found["l1"].value(passed=True), found["l2"].value(passed=True)
    (1.0, -1.0)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from langmem_plus.records import Step, Verdict

PASSED = 1.0
"""Outcome of a lesson applied to the call whose result the verdict passed."""
FAILED = -1.0
"""Outcome of a lesson applied to a call whose result was judged wrong, or that failed a constraint."""


def applied_at(step: Step) -> list[str]:
    """Ids of the lessons applied to the step's call: written in by the executor or rewritten in by the guard."""
    ids = [*step.info.get("applied_hints", []), *step.info.get("rewritten_by", [])]
    return list(dict.fromkeys(str(i) for i in ids))


def applied_in_run(steps: Sequence[Step]) -> set[str] | None:
    """Ids of the lessons applied to any call of the run, when the executor reports what it applied on every call
    (``info["applied_hints"]``, empty or not); None when it does not (a reader that applies notes unseen)."""
    commands = [s for s in steps if s.info.get("kind") != "docs"]
    if not commands or any("applied_hints" not in s.info for s in commands):
        return None
    return {lesson_id for s in commands for lesson_id in applied_at(s)}


class Outcome(NamedTuple):
    """What followed from the calls one lesson was applied to in a run."""

    judged: bool
    """The verdict judged one of them (``Verdict.step``)."""
    constraint: bool
    """One of them failed a constraint."""

    def value(self, passed: bool) -> float | None:
        """``FAILED`` for a failed constraint, else the judged verdict's ``PASSED`` / ``FAILED``; None when neither."""
        if self.constraint:
            return FAILED
        return (PASSED if passed else FAILED) if self.judged else None


def step_outcomes(steps: Sequence[Step], verdict: Verdict | None) -> dict[str, Outcome]:
    """Lesson id -> what followed from the calls it was applied to; lessons whose calls neither the verdict judged
    nor a constraint failed are left out (their outcome says nothing)."""
    out: dict[str, Outcome] = {}
    judged_step = verdict.step if verdict is not None else None
    for step in steps:
        judged, constraint = judged_step is not None and step.index == judged_step, step.feedback.constraint_failure
        if not (judged or constraint):
            continue
        for lesson_id in applied_at(step):
            before = out.get(lesson_id, Outcome(False, False))
            out[lesson_id] = Outcome(before.judged or judged, before.constraint or constraint)
    return out


__all__ = ["FAILED", "PASSED", "Outcome", "applied_at", "applied_in_run", "step_outcomes"]
