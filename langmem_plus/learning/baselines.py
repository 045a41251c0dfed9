"""Baselines for utility: which failures count against a lesson, and comparable runs without it (design.md §6).

A lesson is judged only on the failures it speaks to (its WRONG pattern occurs in
the failing action, or it caused the failure by putting a token there), measured
against comparable runs that did not show it: the same task, else the same family,
else the same tool. Pure functions over run records.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from statistics import fmean

from langmem_plus.records import FailureNote, Lesson, RunRecord
from langmem_plus.rewrite import apply_rewrite, error_names_fix


def _comparable(
    runs: Sequence[RunRecord], lesson_id: str, task_id: str, family: str | None, tool: str | None
) -> list[RunRecord]:
    without = [r for r in runs if lesson_id not in r.activated]
    tiers = (
        [r for r in without if r.task_id == task_id],
        [r for r in without if family is not None and r.family == family],
        [r for r in without if tool is not None and r.tool == tool],
    )
    return next((tier for tier in tiers if tier), [])


def addresses(lesson: Lesson, action: str) -> bool:
    """True when ``lesson`` speaks to a failure of ``action``: its WRONG pattern occurs in it
    (a rewrite lesson), or always (an avoid lesson, which has no pattern to check)."""
    if not lesson.wrong or lesson.correct is None:
        return True
    return apply_rewrite(action, lesson.wrong, lesson.correct) is not None


def _introduced(lesson: Lesson, error: str) -> bool:
    """True when ``error`` names something that ``lesson``'s CORRECT side put into the action."""
    return bool(lesson.correct) and error_names_fix(lesson.correct or "", error)


def addressed_failures(lesson: Lesson, run: RunRecord) -> int:
    """Failures of ``run`` that count against ``lesson`` (the utility's "repeats").

    A failure counts when it has one of the lesson's trigger fingerprints and the
    lesson addresses its action, or when the lesson was applied to the failing action
    and the error names what the lesson put there (the lesson caused it), or when the call guard
    rewrote the failing call with the lesson (its fix ran and failed). Counting
    trigger fingerprints alone, as design.md §6 reads, blames a lesson for every failure
    that shares its fingerprint: ``select -> PICK`` for an ``unknown command 'limit'``.
    Run records without failure notes fall back to the fingerprint counts.
    """
    if not run.failures and run.fingerprint_counts:
        triggers = set(lesson.triggers)
        return sum(c for fp, c in run.fingerprint_counts.items() if fp in triggers)
    return count_addressed(lesson, run.failures)


def count_addressed(lesson: Lesson, notes: Iterable[FailureNote]) -> int:
    """How many of ``notes`` count against ``lesson`` (see ``addressed_failures``)."""
    triggers = set(lesson.triggers)
    n = 0
    for f in notes:
        if (f.fp in triggers and addresses(lesson, f.action) or lesson.id in f.applied and _introduced(lesson, f.error)
                or lesson.id in f.rewritten):
            n += 1
    return n


def caused_failures(lesson: Lesson, notes: Iterable[FailureNote]) -> int:
    """Failures among ``notes`` that ``lesson`` caused: it was applied to the failing action and
    the error names a token its CORRECT side put there (``KEEP`` -> ``filter``, then
    "unknown command 'filter'").

    Example:
        >>> bad = Lesson(id="bad", namespace=("n",), rule_text="r", wrong="KEEP", correct="filter")
        >>> note = FailureNote(fp="fp", action="filter a > 1", error="unknown command 'filter'", applied=["bad"])
        >>> caused_failures(bad, [note])
        1
    """
    return sum(1 for f in notes if lesson.id in f.applied and _introduced(lesson, f.error))


def baseline_for(
    fingerprint_ids: Collection[str],
    runs: Sequence[RunRecord],
    *,
    lesson_id: str,
    task_id: str,
    family: str | None,
    tool: str | None,
    counter: Callable[[RunRecord], float] | None = None,
) -> tuple[float | None, float | None, float | None]:
    """Baseline figures of comparable runs without the lesson (design.md §6 utility).

    Comparable runs are those that did not activate ``lesson_id``, taken from the
    first non-empty tier: the same ``task_id``; else the same task ``family``; else
    the same ``tool``. The narrowest tier is the fairest comparison; the wider ones
    let a lesson be judged on a task no run without it has attempted yet.

    Returns:
        ``(mean trigger count per run, mean steps, pass rate)``, each None when there
        is no comparable run; the pass rate is None too when every comparable run
        failed: runs that could not succeed are no baseline to beat (a promotion gate
        won against them would be no evidence).

    Example:
        >>> r = RunRecord(run_id="r1", namespace=("n",), seq=1, task_id="t", steps=10,
        ...               fingerprint_counts={"fp": 2}, passed=True)
        >>> baseline_for(["fp"], [r], lesson_id="l", task_id="t", family=None, tool=None)
        (2.0, 10.0, 1.0)
        >>> baseline_for(["fp"], [r.model_copy(update={"passed": False})], lesson_id="l", task_id="t", family=None, tool=None)
        (2.0, 10.0, None)
    """
    comparable = _comparable(runs, lesson_id, task_id, family, tool)
    if not comparable:
        return None, None, None
    fps = set(fingerprint_ids)
    if counter is None:
        repeats = fmean(sum(c for fp, c in r.fingerprint_counts.items() if fp in fps) for r in comparable)
    else:
        repeats = fmean(counter(r) for r in comparable)
    steps = fmean(r.steps for r in comparable)
    pass_rate = fmean(1.0 if r.passed else 0.0 for r in comparable)
    return repeats, steps, pass_rate if pass_rate > 0 else None


def baseline_score(
    runs: Sequence[RunRecord], *, lesson_id: str, task_id: str, family: str | None, tool: str | None
) -> float | None:
    """Mean referee score of the comparable runs without the lesson (``baseline_for``'s tiers); None without one.

    The baseline of design.md §6's ``referee_score_gain = score - baseline_score``.

    Example:
        >>> r = RunRecord(run_id="r1", namespace=("n",), seq=1, task_id="t", score=0.4)
        >>> baseline_score([r], lesson_id="l", task_id="t", family=None, tool=None)
        0.4
    """
    comparable = _comparable(runs, lesson_id, task_id, family, tool)
    return fmean(r.score for r in comparable) if comparable else None


__all__ = ["addressed_failures", "addresses", "baseline_for", "baseline_score", "caused_failures", "count_addressed"]
