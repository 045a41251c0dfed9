"""Does a lesson help? Utility, reliability and the lifecycle rules of design.md §6.

A lesson earns its place by measured effect. For a run in which it was shown:

- ``error_reduction`` compares how often its trigger fingerprints occurred with the
  mean of comparable runs without it (``baseline_for``);
- ``step_efficiency_gain`` compares the run's steps with theirs;
- ``utility`` weighs the two (0.65 / 0.35), or three with a referee's score gain
  (0.50 / 0.30 / 0.20); a good outcome of the calls the lesson was applied to
  (``learning.outcomes``) is half of it, a bad one makes it -1.

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
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import fmean
from typing import NamedTuple

from langmem_plus.config import DEFAULT_CONFIG, MemoryConfig
from langmem_plus.learning.baselines import (
    addressed_failures,
    addresses,
    baseline_for,
    baseline_score,
    caused_failures,
    count_addressed,
)
from langmem_plus.learning.outcomes import Outcome
from langmem_plus.records import Lesson, LessonStatus, RunRecord, TaskSpec, UtilityParts, Verdict

PRIOR_HELPED = 1
"""Pseudo-count of helpful runs in the reliability prior: Beta(1, 1), uniform (design.md §6)."""

PRIOR_HARMED = 1
"""Pseudo-count of harmful runs in the reliability prior: Beta(1, 1), uniform (design.md §6)."""

PASS_RATE_TOLERANCE = 1e-9
"""Float slack when comparing a pass-rate drop with ``promote_max_pass_drop`` (0.9 - 0.8 is not exactly 0.1)."""


def _clip1(x: float) -> float:
    return min(1.0, max(-1.0, x))


def error_reduction(baseline_repeats: float, repeats_after: float) -> float:
    """(baseline - after) / max(baseline, 1), clipped to [-1, 1] (design.md §6).

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
    """(baseline_steps - steps) / baseline_steps, clipped to [-1, 1]; 0 without a baseline (design.md §6).

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
    outcome: float | None = None,
) -> float:
    """Weighted utility of one activation (design.md §6).

    ``0.65 error_reduction + 0.35 step_gain``, or, when a referee's score gain is
    known, ``0.50 error_reduction + 0.30 step_gain + 0.20 referee_gain``. With the
    ``outcome`` of the calls the lesson was applied to (``learning.outcomes``): a good
    one is ``utility_w_outcome`` of the whole; a bad one is the utility, since a
    wrong result outweighs any error the lesson silenced on the way.

    Example:
        >>> utility(1.0, 0.0, None, outcome=-1.0)  # it silenced its error, and the call did the wrong thing
        -1.0
        >>> utility(1.0, 0.0, None, outcome=1.0)
        0.825
    """
    if referee_gain is None:
        base = config.lifecycle.utility_w_errors * error_reduction + config.lifecycle.utility_w_steps * step_gain
    else:
        base = (
            config.lifecycle.utility_w_errors_ref * error_reduction
            + config.lifecycle.utility_w_steps_ref * step_gain
            + config.lifecycle.utility_w_referee_ref * _clip1(referee_gain)
        )
    if outcome is None:
        return base
    if outcome < 0:  # a wrong result outweighs any error the lesson silenced on the way
        return _clip1(outcome)
    w = config.lifecycle.utility_w_outcome
    return (1.0 - w) * base + w * _clip1(outcome)


def reliability(helped: int, harmed: int) -> float:
    """Posterior mean of helped / (helped + harmed) under a Beta(1, 1) prior (design.md §6).

    Example:
        >>> reliability(0, 0)
        0.5
    """
    return (max(helped, 0) + PRIOR_HELPED) / (max(helped, 0) + max(harmed, 0) + PRIOR_HELPED + PRIOR_HARMED)


# --------------------------------------------------------------------------- lifecycle


@dataclass(frozen=True)
class LessonEvidence:
    """The figures the lifecycle rules read from a lesson (design.md §6).

    Example:
        >>> from langmem_plus.records import Lesson
        >>> ev = LessonEvidence.of(Lesson(id="l", namespace=("n",), rule_text="r"), runs_since_activation=0)
        >>> ev.mean_utility is None
        True
    """

    evidence_runs: int
    """Runs whose outcome could say whether the lesson helped."""
    runs_activated: int
    """Runs in which the lesson was shown, with or without evidence."""
    helped: int
    """Evidence runs in which it helped (utility > 0)."""
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
            runs_activated=s.runs_activated,
            helped=s.helped,
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
            f"shown_runs={self.runs_activated}, evidence_runs={self.evidence_runs}, mean_utility={mu}, "
            f"reliability={self.reliability:.3f}, "
            f"conflict_losses={self.conflict_losses}, pass_rate={pw} vs baseline {pb}, "
            f"runs_since_activation={self.runs_since_activation}"
        )


def _pass_rate_ok(ev: LessonEvidence, config: MemoryConfig) -> bool:
    if ev.pass_rate_with is None or ev.pass_rate_baseline is None:
        return True
    return ev.pass_rate_baseline - ev.pass_rate_with <= config.lifecycle.promote_max_pass_drop + PASS_RATE_TOLERANCE


def decide_status(
    lesson: Lesson,
    config: MemoryConfig = DEFAULT_CONFIG,
    *,
    runs_since_activation: int,
) -> tuple[LessonStatus, str]:
    """The status a lesson should have now, and why, with the numbers (design.md §6).

    Rules, first match wins; suppressed and archived lessons are left as they are:

    1. Suppress when ``conflict_losses >= conflict_losses_to_suppress`` (it keeps
       losing its conflict cluster).
    2. Suppress when ``evidence_runs >= suppress_min_activations`` and the mean
       utility is ``<= suppress_max_utility``. Only evidence-bearing activations
       count: an activation whose run said nothing about the lesson
       (``activation_utility`` returned None) is not held against it.
    3. Suppress a promoted lesson whose last ``demote_window`` utilities (its evidence
       turned), or whose mean utility, fall ``<= suppress_max_utility``;
       and a lesson shown in ``suppress_min_activations`` runs whose every measured run
       was ``<= suppress_max_utility`` (it never helped). This is design.md §6 read
       literally ("retrieved >= 3 times and utility for those activations <= 0"): a
       harmful lesson that acted once and since sits in the hints without acting
       again (its WRONG no longer occurs first) would otherwise never gather three
       evidence runs and keep its retrieval slot forever.
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
    if ev.conflict_losses >= config.lifecycle.conflict_losses_to_suppress:
        return "suppressed", f"suppress: lost its conflict cluster {ev.conflict_losses} times ({nums})"
    mu = ev.mean_utility
    if mu is not None and mu <= config.lifecycle.suppress_max_utility:
        if ev.evidence_runs >= config.lifecycle.suppress_min_activations:
            return "suppressed", f"suppress: mean utility <= {config.lifecycle.suppress_max_utility} ({nums})"
        if lesson.status == "promoted":
            limit = config.lifecycle.suppress_max_utility
            return "suppressed", f"suppress: promoted lesson fell to mean utility <= {limit} ({nums})"
        if ev.helped == 0 and ev.runs_activated >= config.lifecycle.suppress_min_activations:
            shown = config.lifecycle.suppress_min_activations
            why = f"shown in >= {shown} runs, never helped, mean utility <= {config.lifecycle.suppress_max_utility}"
            return "suppressed", f"suppress: {why} ({nums})"
    recent = lesson.stats.utility_window[-config.lifecycle.demote_window:]
    if lesson.status == "promoted" and recent and fmean(recent) <= config.lifecycle.suppress_max_utility:
        limit, n = config.lifecycle.suppress_max_utility, len(recent)
        return "suppressed", f"suppress: promoted lesson's evidence turned: its last {n} utilities mean <= {limit} ({nums})"
    if (
        lesson.status == "candidate"
        and mu is not None
        and ev.evidence_runs >= config.lifecycle.promote_min_runs
        and mu >= config.lifecycle.promote_min_utility
    ):
        if _pass_rate_ok(ev, config):
            need = f"mean utility >= {config.lifecycle.promote_min_utility} over >= {config.lifecycle.promote_min_runs} runs"
            return "promoted", f"promote: {need} ({nums})"
        reason = f"unchanged: pass rate more than {config.lifecycle.promote_max_pass_drop} under baseline ({nums})"
        return lesson.status, reason
    if ev.reliability <= config.lifecycle.archive_max_reliability and runs_since_activation >= config.lifecycle.archive_unused_runs:
        why = f"reliability <= {config.lifecycle.archive_max_reliability}, unused {runs_since_activation} runs"
        return "archived", f"archive: {why} ({nums})"
    return lesson.status, f"unchanged ({nums})"


def record_outcome(lesson: Lesson, u: float, *, passed: bool, now: float, window: int | None = None) -> Lesson:
    """A copy of ``lesson`` with one evidence run's outcome folded in (design.md §6).

    Appends ``u`` to the utility window (keeping the last ``window``), counts an
    evidence run, a helped (u > 0) or harmed (u < 0) run, updates the running pass
    rate with the lesson active, recomputes reliability and sets ``updated_at``.

    Args:
        lesson: The lesson; not modified.
        u: The run's utility (``activation_utility``), clipped to [-1, 1].
        passed: Whether the run passed.
        now: Current time, epoch seconds.
        window: Utilities kept; default ``MemoryConfig.lifecycle.utility_window``.

    Raises:
        ValueError: When ``u`` is not a finite number.
    """
    if not math.isfinite(u):
        raise ValueError(f"utility must be a finite number, got {u!r}")
    u = _clip1(u)
    out = lesson.model_copy(deep=True)
    s = out.stats
    n_before = s.evidence_runs
    keep = DEFAULT_CONFIG.lifecycle.utility_window if window is None else window
    s.utility_window = [*s.utility_window, u][-max(keep, 1) :]
    s.evidence_runs = n_before + 1
    s.helped += int(u > 0)
    s.harmed += int(u < 0)
    prior = s.pass_rate_with if s.pass_rate_with is not None else 0.0
    s.pass_rate_with = (prior * n_before + float(passed)) / (n_before + 1)
    out.reliability = reliability(s.helped, s.harmed)
    out.updated_at = now
    return out


class ActivationUtility(NamedTuple):
    """One run's measured utility for a lesson, the baseline pass rate it was measured against, and what it was
    computed from (so a corrected verdict can compute it again: ``utility_from``)."""

    utility: float
    baseline_pass_rate: float | None
    parts: UtilityParts | None = None


def utility_from(parts: UtilityParts, verdict: Verdict, config: MemoryConfig = DEFAULT_CONFIG) -> float:
    """An activation's utility computed again from its ``parts`` under ``verdict`` (a corrected one).

    Example:
        >>> parts = UtilityParts(error_reduction=1.0, judged=True)
        >>> utility_from(parts, Verdict(passed=True, score=1.0)), utility_from(parts, Verdict(passed=False))
        (0.825, -1.0)
    """
    gain = None
    if parts.referee_baseline is not None and verdict.source != "signals":
        gain = verdict.score - parts.referee_baseline
    outcome = Outcome(parts.judged, parts.constraint, parts.setback, parts.advanced).value(verdict.passed)
    return utility(parts.error_reduction, parts.step_gain, gain, config, outcome)


def activation_utility(
    *,
    lesson: Lesson,
    run: RunRecord,
    prior_runs: Sequence[RunRecord],
    task: TaskSpec | None = None,
    referee_gain: float | None = None,
    referee_score: float | None = None,
    repeats_after: float | None = None,
    repeats_before: float = 0.0,
    outcome: Outcome | None = None,
    config: MemoryConfig = DEFAULT_CONFIG,
) -> ActivationUtility | None:
    """Utility of ``lesson`` in one run where it was activated, or None for "no evidence" (design.md §6).

    The baseline comes from ``baseline_for`` over ``prior_runs`` (``run`` itself is
    excluded), with the task id, family and tool of ``task`` (else of ``run``).

    Returns None, meaning the run says nothing about the lesson, when there is no
    comparable run, or when the baseline trigger count is 0 and this run had no
    trigger occurrence either. The second case is a deliberate refinement over
    design.md §6: there the formula would give error_reduction 0 and a utility of
    about 0, so a lesson shown where its triggers were never at stake would
    collect zeros and be suppressed without ever having had a chance to help.

    Args:
        lesson: The activated lesson (its ``triggers`` are the fingerprints counted).
        run: The finished run.
        prior_runs: Earlier runs, the pool for the baseline.
        task: The run's task spec; None to use the run record's task id, family, tool.
        referee_gain: LLM referee score gain over the baseline; None without an LLM referee.
        referee_score: The run's LLM-referee score; when ``referee_gain`` is None, the gain is
            this minus the comparable runs' mean score (``baseline_score``), none without them.
        repeats_after: Failures counted against the lesson after the activation;
            default: ``addressed_failures(lesson, run)``.
        repeats_before: Failures the lesson addresses that happened in this run before it
            was first shown (it was retrieved on error). They prove its failure was at
            stake in this very task, so the baseline is at least this count: a lesson
            shown after a failure that then does not recur is credited even when the
            comparable runs (say, other tasks of the family) never met that failure.
            Refinement over design.md §6, which only looks at other runs.
        outcome: What followed from the calls the lesson was applied to (``learning.outcomes``; its value under
            the run's verdict, ``run.passed``), None when nothing judged them; it is evidence on its own, even
            without a comparable run.
        config: Supplies the utility weights.

    Returns:
        ``ActivationUtility(utility, baseline_pass_rate)`` or None.
    """
    task_id = task.task_id if task is not None else run.task_id
    family = task.family if task is not None else run.family
    tool = task.tool if task is not None else run.tool
    pool = [r for r in prior_runs if r.run_id != run.run_id]
    base_score: float | None = None
    if referee_gain is None and referee_score is not None:
        base_score = baseline_score(pool, lesson_id=lesson.id, task_id=task_id, family=family, tool=tool)
        referee_gain = None if base_score is None else referee_score - base_score
    seen = outcome or Outcome(False, False)
    value = seen.value(run.passed)

    def measured(er: float, gain: float, base_pass: float | None) -> ActivationUtility:
        parts = UtilityParts(error_reduction=er, step_gain=gain, referee_baseline=base_score, judged=seen.judged,
                             constraint=seen.constraint, setback=seen.setback, advanced=seen.advanced)
        return ActivationUtility(utility(er, gain, referee_gain, config, value), base_pass, parts)

    base_repeats, base_steps, base_pass = baseline_for(
        lesson.triggers,
        pool,
        lesson_id=lesson.id,
        task_id=task_id,
        family=family,
        tool=tool,
        counter=lambda r: addressed_failures(lesson, r),
    )
    occurrences = addressed_failures(lesson, run)
    after = float(occurrences) if repeats_after is None else float(repeats_after)
    if base_repeats is None:
        # No comparable run without the lesson. A failure the lesson caused (it was applied
        # and the error names what it put there) would not have happened without it, so its
        # counterfactual count is 0 by construction; failures it addresses before it was
        # shown are this run's own baseline. Either is evidence even unbaselined (no step gain).
        caused = caused_failures(lesson, run.failures)
        if caused == 0 and repeats_before <= 0:
            return None if value is None else measured(0.0, 0.0, None)
        return measured(error_reduction(float(repeats_before), after if repeats_before > 0 else float(caused)), 0.0, None)
    base_repeats = max(base_repeats, float(repeats_before))
    if base_repeats == 0 and occurrences == 0 and value is None:
        return None
    return measured(error_reduction(base_repeats, after), step_efficiency_gain(base_steps or 0.0, run.steps), base_pass)


__all__ = [
    "PASS_RATE_TOLERANCE",
    "PRIOR_HARMED",
    "PRIOR_HELPED",
    "ActivationUtility",
    "LessonEvidence",
    "activation_utility",
    "addressed_failures",
    "addresses",
    "baseline_for",
    "caused_failures",
    "count_addressed",
    "decide_status",
    "error_reduction",
    "record_outcome",
    "reliability",
    "step_efficiency_gain",
    "utility",
    "utility_from",
]
