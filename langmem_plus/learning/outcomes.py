"""What a run's outcome says about each lesson applied in it: judged by what followed from the call it shaped.

A lesson is applied to a call when the executor wrote it in (``info["applied_hints"]``) or the call guard
rewrote the call with it (``info["rewritten_by"]``). Such a lesson is judged by what followed from that call,
not only by the error it silenced:

- the verdict judged that call's result (``Verdict.step``): +1 when the run passed, -1 when it failed;
- the call failed a constraint (a wrong result, a lost game): -1;
- the call ran (no hard failure) and the run's progress changed with it (``Feedback.progress``, a game's score):
  -1 when it fell, +1 when it rose and nothing else judged the call.

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
    >>> scored = [Step(index=0, action="take", info={"applied_hints": ["l3"]}, feedback=Feedback(progress=0.5)),
    ...           Step(index=1, action="drop", info={"applied_hints": ["l4"]}, feedback=Feedback(progress=0.25))]
    >>> found = step_outcomes(scored, None)
    >>> found["l3"].value(passed=False), found["l4"].value(passed=True)
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
    setback: bool = False
    """The run's progress fell with one of them."""
    advanced: bool = False
    """The run's progress rose with one of them."""

    def value(self, passed: bool) -> float | None:
        """``FAILED`` for a failed constraint or a setback, else the judged verdict's ``PASSED`` / ``FAILED``, else
        ``PASSED`` for an advance; None when none of these."""
        if self.constraint or self.setback:
            return FAILED
        if self.judged:
            return PASSED if passed else FAILED
        return PASSED if self.advanced else None


def progress_changes(steps: Sequence[Step]) -> dict[int, float]:
    """Step index -> how far the run's progress moved with that call, for calls that ran (a hard failure is judged
    by its error) and reported progress, measured from the last such call's progress (the run starts at 0).

    Example:
        >>> from langmem_plus.records import Feedback, Step
        >>> progress_changes([Step(index=0, action="a", feedback=Feedback(progress=0.5)),
        ...                   Step(index=1, action="b", feedback=Feedback(hard_failure=True, progress=0.0)),
        ...                   Step(index=2, action="c", feedback=Feedback(progress=0.5))])
        {0: 0.5, 2: 0.0}
    """
    out: dict[int, float] = {}
    last = 0.0
    for step in steps:
        now = step.feedback.progress
        if now is None or step.feedback.hard_failure or step.info.get("kind") == "docs":
            continue
        out[step.index], last = now - last, now
    return out


def step_outcomes(steps: Sequence[Step], verdict: Verdict | None, *, progress: bool = True) -> dict[str, Outcome]:
    """Lesson id -> what followed from the calls it was applied to; lessons whose calls neither the verdict judged
    nor a constraint failed nor (with ``progress``) moved the run's progress are left out (their outcome says
    nothing)."""
    out: dict[str, Outcome] = {}
    judged_step = verdict.step if verdict is not None else None
    moved = progress_changes(steps) if progress else {}
    for step in steps:
        delta = moved.get(step.index, 0.0)
        found = Outcome(judged=judged_step is not None and step.index == judged_step,
                        constraint=step.feedback.constraint_failure, setback=delta < 0, advanced=delta > 0)
        if not any(found):
            continue
        for lesson_id in applied_at(step):
            before = out.get(lesson_id, Outcome(False, False))
            out[lesson_id] = Outcome(*(a or b for a, b in zip(before, found)))
    return out


__all__ = ["FAILED", "PASSED", "Outcome", "applied_at", "applied_in_run", "progress_changes", "step_outcomes"]
