"""What a run's outcome says about each lesson applied in it: judged by what followed from the call it shaped.

A lesson is applied to a call when the executor wrote it in (``info["applied_hints"]``) or the call guard
rewrote the call with it (``info["rewritten_by"]``). Such a lesson is judged by what followed from that call,
not only by the error it silenced:

- the verdict judged that call's result (``Verdict.step``): +1 when the run passed, -1 when it failed;
- the call failed a constraint (a wrong result, a lost game): -1.

A call that ran without a tool error and did the wrong thing is the common harm of a lesson: these outcomes
reach its utility (``utility.utility``'s ``outcome``). Pure: steps and verdict in, outcomes out.

Example:
    >>> from langmem_plus.records import Feedback, Step, Verdict
    >>> steps = [Step(index=0, action="a", info={"applied_hints": ["l1"]}),
    ...          Step(index=1, action="b", info={"applied_hints": ["l2"]}, feedback=Feedback(constraint_failure=True))]
    >>> step_outcomes(steps, Verdict(passed=True, score=1.0, step=0))
    {'l1': 1.0, 'l2': -1.0}
"""

from __future__ import annotations

from collections.abc import Sequence

from langmem_plus.records import Step, Verdict

PASSED = 1.0
"""Outcome of a lesson applied to the call whose result the verdict passed."""
FAILED = -1.0
"""Outcome of a lesson applied to a call whose result was judged wrong, or that failed a constraint."""


def applied_at(step: Step) -> list[str]:
    """Ids of the lessons applied to the step's call: written in by the executor or rewritten in by the guard."""
    ids = [*step.info.get("applied_hints", []), *step.info.get("rewritten_by", [])]
    return list(dict.fromkeys(str(i) for i in ids))


def step_outcomes(steps: Sequence[Step], verdict: Verdict | None) -> dict[str, float]:
    """Lesson id -> the worst outcome of the calls it was applied to (``FAILED`` or ``PASSED``); lessons whose calls
    neither the verdict judged nor a constraint failed are left out (their outcome says nothing)."""
    out: dict[str, float] = {}
    for step in steps:
        if step.feedback.constraint_failure:
            outcome: float | None = FAILED
        elif verdict is not None and verdict.step is not None and step.index == verdict.step:
            outcome = PASSED if verdict.passed else FAILED
        else:
            outcome = None
        if outcome is None:
            continue
        for lesson_id in applied_at(step):
            out[lesson_id] = min(out.get(lesson_id, PASSED), outcome)
    return out


__all__ = ["FAILED", "PASSED", "applied_at", "step_outcomes"]
