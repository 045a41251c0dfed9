"""Does a lesson help? Utility, reliability and the lifecycle rules of DESIGN §6.

A lesson earns its place by measured effect. For a run in which it was shown:

- ``error_reduction`` compares how often its trigger fingerprints occurred with the
  mean of comparable runs without it (``baseline_for``);
- ``step_efficiency_gain`` compares the run's steps with theirs;
- ``utility`` weighs the two (0.65 / 0.35), or three with an LLM referee's score
  gain (0.50 / 0.30 / 0.20).

``record_outcome`` folds one run's utility into the lesson's counters and
``decide_status`` turns the counters into a status: promote, suppress, archive or
leave alone. Everything is pure and returns copies; nothing is ever deleted.

Example:
    >>> er = error_reduction(baseline_repeats=2, repeats_after=0)
    >>> gain = step_efficiency_gain(baseline_steps=10, steps=8)
    >>> round(utility(er, gain, None), 2)  # 0.65 * 1 + 0.35 * 0.2
    0.72
    >>> reliability(helped=3, harmed=1)
    0.6666666666666666
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from statistics import fmean
from typing import NamedTuple

from langmem_plus._text import action_tokens
from langmem_plus.config import DEFAULT_CONFIG, MemoryConfig
from langmem_plus.records import FailureNote, Lesson, LessonStatus, RunRecord, TaskSpec
from langmem_plus.rewrite import apply_rewrite

UTILITY_WINDOW = 20
"""Utilities kept per lesson (newest last) for the promotion/suppression means (DESIGN §6
"evidence window"); old evidence ages out so a lesson that stops helping can still be suppressed."""

PRIOR_HELPED = 1
"""Pseudo-count of helpful runs in the reliability prior: Beta(1, 1), uniform (DESIGN §6)."""

PRIOR_HARMED = 1
"""Pseudo-count of harmful runs in the reliability prior: Beta(1, 1), uniform (DESIGN §6)."""

PASS_RATE_TOLERANCE = 1e-9
"""Float slack when comparing a pass-rate drop with ``promote_max_pass_drop`` (0.9 - 0.8 is not exactly 0.1)."""


def _clip1(x: float) -> float:
    return min(1.0, max(-1.0, x))


def error_reduction(baseline_repeats: float, repeats_after: float) -> float:
    """(baseline - after) / max(baseline, 1), clipped to [-1, 1] (DESIGN §6).

    Args:
        baseline_repeats: Mean count of the lesson's trigger fingerprints per
            comparable run without it.
        repeats_after: Their count in the run with the lesson.

    Example:
        >>> error_reduction(4, 1)
        0.75
        >>> error_reduction(0, 3)  # triggers appeared where they usually do not
        -1.0
    """
    return _clip1((baseline_repeats - repeats_after) / max(baseline_repeats, 1.0))


def step_efficiency_gain(baseline_steps: float, steps: float) -> float:
    """(baseline_steps - steps) / baseline_steps, clipped to [-1, 1]; 0 without a baseline (DESIGN §6).

    Example:
        >>> step_efficiency_gain(10, 8)
        0.2
    """
    if baseline_steps <= 0:
        return 0.0
    return _clip1((baseline_steps - steps) / baseline_steps)


def utility(
    error_reduction: float,
    step_gain: float,
    referee_gain: float | None,
    config: MemoryConfig = DEFAULT_CONFIG,
) -> float:
    """Weighted utility of one activation (DESIGN §6).

    ``0.65 error_reduction + 0.35 step_gain``, or, when an LLM referee's score
    gain is known, ``0.50 error_reduction + 0.30 step_gain + 0.20 referee_gain``.
    """
    if referee_gain is None:
        return config.utility_w_errors * error_reduction + config.utility_w_steps * step_gain
    return (
        config.utility_w_errors_ref * error_reduction
        + config.utility_w_steps_ref * step_gain
        + config.utility_w_referee_ref * _clip1(referee_gain)
    )


def reliability(helped: int, harmed: int) -> float:
    """Posterior mean of helped / (helped + harmed) under a Beta(1, 1) prior (DESIGN §6).

    Example:
        >>> reliability(0, 0)
        0.5
    """
    return (max(helped, 0) + PRIOR_HELPED) / (max(helped, 0) + max(harmed, 0) + PRIOR_HELPED + PRIOR_HARMED)


# --------------------------------------------------------------------------- lifecycle


@dataclass(frozen=True)
class LessonEvidence:
    """The figures the lifecycle rules read from a lesson (DESIGN §6).

    Example:
        >>> from langmem_plus.records import Lesson
        >>> ev = LessonEvidence.of(Lesson(id="l", namespace=("n",), rule_text="r"), runs_since_activation=0)
        >>> ev.mean_utility is None
        True
    """

    evidence_runs: int
    """Runs whose outcome could say whether the lesson helped."""
    mean_utility: float | None
    """Mean of the utility window; None with no evidence yet."""
    reliability: float
    conflict_losses: int
    pass_rate_with: float | None
    pass_rate_baseline: float | None
    runs_since_activation: int

    @classmethod
    def of(cls, lesson: Lesson, *, runs_since_activation: int) -> LessonEvidence:
        """Collect the evidence of ``lesson``."""
        s = lesson.stats
        return cls(
            evidence_runs=s.evidence_runs,
            mean_utility=fmean(s.utility_window) if s.utility_window else None,
            reliability=lesson.reliability,
            conflict_losses=s.conflict_losses,
            pass_rate_with=s.pass_rate_with,
            pass_rate_baseline=s.pass_rate_baseline,
            runs_since_activation=runs_since_activation,
        )

    def describe(self) -> str:
        """The numbers, for a reason string."""
        mu = "n/a" if self.mean_utility is None else f"{self.mean_utility:.3f}"
        pw = "n/a" if self.pass_rate_with is None else f"{self.pass_rate_with:.2f}"
        pb = "n/a" if self.pass_rate_baseline is None else f"{self.pass_rate_baseline:.2f}"
        return (
            f"evidence_runs={self.evidence_runs}, mean_utility={mu}, reliability={self.reliability:.3f}, "
            f"conflict_losses={self.conflict_losses}, pass_rate={pw} vs baseline {pb}, "
            f"runs_since_activation={self.runs_since_activation}"
        )


def _pass_rate_ok(ev: LessonEvidence, config: MemoryConfig) -> bool:
    if ev.pass_rate_with is None or ev.pass_rate_baseline is None:
        return True
    return ev.pass_rate_baseline - ev.pass_rate_with <= config.promote_max_pass_drop + PASS_RATE_TOLERANCE


def decide_status(
    lesson: Lesson,
    config: MemoryConfig = DEFAULT_CONFIG,
    *,
    runs_since_activation: int,
) -> tuple[LessonStatus, str]:
    """The status a lesson should have now, and why, with the numbers (DESIGN §6).

    Rules, first match wins; suppressed and archived lessons are left as they are:

    1. Suppress when ``conflict_losses >= conflict_losses_to_suppress`` (it keeps
       losing its conflict cluster).
    2. Suppress when ``evidence_runs >= suppress_min_activations`` and the mean
       utility is ``<= suppress_max_utility``. Only evidence-bearing activations
       count: an activation whose run said nothing about the lesson
       (``activation_utility`` returned None) is not held against it.
    3. Suppress a promoted lesson whose mean utility falls ``<= suppress_max_utility``.
    4. Promote a candidate with ``evidence_runs >= promote_min_runs``, mean utility
       ``>= promote_min_utility``, and a pass rate (when both are known) not more
       than ``promote_max_pass_drop`` under the baseline.
    5. Archive when ``reliability <= archive_max_reliability`` and the lesson has not
       been activated for ``archive_unused_runs`` runs.
    6. Otherwise unchanged. Nothing is ever deleted.

    Args:
        lesson: The lesson, with up-to-date stats.
        config: Supplies the thresholds.
        runs_since_activation: Runs since it was last activated (or created).

    Returns:
        ``(status, reason)``; ``status == lesson.status`` when nothing changes.
    """
    ev = LessonEvidence.of(lesson, runs_since_activation=runs_since_activation)
    nums = ev.describe()
    if lesson.status in ("suppressed", "archived"):
        return lesson.status, f"unchanged: already {lesson.status} ({nums})"
    if ev.conflict_losses >= config.conflict_losses_to_suppress:
        return "suppressed", f"suppress: lost its conflict cluster {ev.conflict_losses} times ({nums})"
    mu = ev.mean_utility
    if mu is not None and mu <= config.suppress_max_utility:
        if ev.evidence_runs >= config.suppress_min_activations:
            return "suppressed", f"suppress: mean utility <= {config.suppress_max_utility} ({nums})"
        if lesson.status == "promoted":
            limit = config.suppress_max_utility
            return "suppressed", f"suppress: promoted lesson fell to mean utility <= {limit} ({nums})"
    if (
        lesson.status == "candidate"
        and mu is not None
        and ev.evidence_runs >= config.promote_min_runs
        and mu >= config.promote_min_utility
    ):
        if _pass_rate_ok(ev, config):
            need = f"mean utility >= {config.promote_min_utility} over >= {config.promote_min_runs} runs"
            return "promoted", f"promote: {need} ({nums})"
        reason = f"unchanged: pass rate more than {config.promote_max_pass_drop} under baseline ({nums})"
        return lesson.status, reason
    if ev.reliability <= config.archive_max_reliability and runs_since_activation >= config.archive_unused_runs:
        why = f"reliability <= {config.archive_max_reliability}, unused {runs_since_activation} runs"
        return "archived", f"archive: {why} ({nums})"
    return lesson.status, f"unchanged ({nums})"


def record_outcome(lesson: Lesson, u: float, *, passed: bool, now: float, window: int = UTILITY_WINDOW) -> Lesson:
    """A copy of ``lesson`` with one evidence run's outcome folded in (DESIGN §6).

    Appends ``u`` to the utility window (keeping the last ``window``), counts an
    evidence run, a helped (u > 0) or harmed (u < 0) run, updates the running pass
    rate with the lesson active, recomputes reliability and sets ``updated_at``.

    Args:
        lesson: The lesson; not modified.
        u: The run's utility (``activation_utility``), clipped to [-1, 1].
        passed: Whether the run passed.
        now: Current time, epoch seconds.
        window: Utilities kept.

    Raises:
        ValueError: When ``u`` is not a finite number.
    """
    if not math.isfinite(u):
        raise ValueError(f"utility must be a finite number, got {u!r}")
    u = _clip1(u)
    out = lesson.model_copy(deep=True)
    s = out.stats
    n_before = s.evidence_runs
    s.utility_window = [*s.utility_window, u][-max(window, 1) :]
    s.evidence_runs = n_before + 1
    s.helped += int(u > 0)
    s.harmed += int(u < 0)
    prior = s.pass_rate_with if s.pass_rate_with is not None else 0.0
    s.pass_rate_with = (prior * n_before + float(passed)) / (n_before + 1)
    out.reliability = reliability(s.helped, s.harmed)
    out.updated_at = now
    return out


# --------------------------------------------------------------------------- baselines


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
    """True when ``error`` names a token that ``lesson``'s CORRECT side put into the action."""
    if not lesson.correct:
        return False
    introduced = {t.strip("'\"`").lower() for t in action_tokens(lesson.correct)} - {"*", ""}
    return bool(introduced & {t.strip("'\"`").lower() for t in action_tokens(error)})


def addressed_failures(lesson: Lesson, run: RunRecord) -> int:
    """Failures of ``run`` that count against ``lesson`` (the utility's "repeats").

    A failure counts when it has one of the lesson's trigger fingerprints and the
    lesson addresses its action, or when the lesson was applied to the failing action
    and the error names what the lesson put there (the lesson caused it). Counting
    trigger fingerprints alone, as DESIGN §6 reads, blames a lesson for every failure
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
        if f.fp in triggers and addresses(lesson, f.action):
            n += 1
        elif lesson.id in f.applied and _introduced(lesson, f.error):
            n += 1
    return n


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
    """Baseline figures of comparable runs without the lesson (DESIGN §6 utility).

    Comparable runs are those that did not activate ``lesson_id``, taken from the
    first non-empty tier: the same ``task_id``; else the same task ``family``; else
    the same ``tool``. The narrowest tier is the fairest comparison; the wider ones
    let a lesson be judged on a task no run without it has attempted yet.

    Returns:
        ``(mean trigger count per run, mean steps, pass rate)``, each None when there
        is no comparable run.

    Example:
        >>> r = RunRecord(run_id="r1", namespace=("n",), seq=1, task_id="t", steps=10,
        ...               fingerprint_counts={"fp": 2}, passed=True)
        >>> baseline_for(["fp"], [r], lesson_id="l", task_id="t", family=None, tool=None)
        (2.0, 10.0, 1.0)
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
    return repeats, steps, pass_rate


class ActivationUtility(NamedTuple):
    """One run's measured utility for a lesson, and the baseline pass rate it was measured against."""

    utility: float
    baseline_pass_rate: float | None


def activation_utility(
    *,
    lesson: Lesson,
    run: RunRecord,
    prior_runs: Sequence[RunRecord],
    task: TaskSpec | None = None,
    referee_gain: float | None = None,
    repeats_after: float | None = None,
    config: MemoryConfig = DEFAULT_CONFIG,
) -> ActivationUtility | None:
    """Utility of ``lesson`` in one run where it was activated, or None for "no evidence" (DESIGN §6).

    The baseline comes from ``baseline_for`` over ``prior_runs`` (``run`` itself is
    excluded), with the task id, family and tool of ``task`` (else of ``run``).

    Returns None, meaning the run says nothing about the lesson, when there is no
    comparable run, or when the baseline trigger count is 0 and this run had no
    trigger occurrence either. The second case is a deliberate refinement over
    DESIGN §6: there the formula would give error_reduction 0 and a utility of
    about 0, so a lesson shown where its triggers were never at stake would
    collect zeros and be suppressed without ever having had a chance to help.

    Args:
        lesson: The activated lesson (its ``triggers`` are the fingerprints counted).
        run: The finished run.
        prior_runs: Earlier runs, the pool for the baseline.
        task: The run's task spec; None to use the run record's task id, family, tool.
        referee_gain: LLM referee score gain over the baseline; None without an LLM referee.
        repeats_after: Failures counted against the lesson after the activation;
            default: ``addressed_failures(lesson, run)``.
        config: Supplies the utility weights.

    Returns:
        ``ActivationUtility(utility, baseline_pass_rate)`` or None.
    """
    task_id = task.task_id if task is not None else run.task_id
    family = task.family if task is not None else run.family
    tool = task.tool if task is not None else run.tool
    pool = [r for r in prior_runs if r.run_id != run.run_id]
    base_repeats, base_steps, base_pass = baseline_for(
        lesson.triggers,
        pool,
        lesson_id=lesson.id,
        task_id=task_id,
        family=family,
        tool=tool,
        counter=lambda r: addressed_failures(lesson, r),
    )
    if base_repeats is None:
        return None
    occurrences = addressed_failures(lesson, run)
    if base_repeats == 0 and occurrences == 0:
        return None
    after = float(occurrences) if repeats_after is None else float(repeats_after)
    er = error_reduction(base_repeats, after)
    gain = step_efficiency_gain(base_steps or 0.0, run.steps)
    return ActivationUtility(utility(er, gain, referee_gain, config), base_pass)


__all__ = [
    "PASS_RATE_TOLERANCE",
    "PRIOR_HARMED",
    "PRIOR_HELPED",
    "UTILITY_WINDOW",
    "ActivationUtility",
    "LessonEvidence",
    "activation_utility",
    "addressed_failures",
    "count_addressed",
    "addresses",
    "baseline_for",
    "decide_status",
    "error_reduction",
    "record_outcome",
    "reliability",
    "step_efficiency_gain",
    "utility",
]
