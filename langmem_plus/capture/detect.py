"""Detection: whether a step failed, on which feedback channel, and the ErrorEvent it becomes (design.md §3)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from langmem_plus._text import clean_text, stable_id
from langmem_plus.config import DEFAULT_CONFIG, MemoryConfig
from langmem_plus.records import (
    Channel,
    ErrorEvent,
    Namespace,
    Step,
    TaskSpec,
    validate_namespace,
)
from langmem_plus.capture.fingerprints import SPACE, fingerprint, fingerprint_id
from langmem_plus.capture.tags import extract_tags

# --------------------------------------------------------------------------- detection


def failure_text(step: Step) -> str:
    """The text to fingerprint for a step: its error text, else its observation when it failed.

    Example:
        >>> from langmem_plus.records import Feedback
        >>> failure_text(Step(index=0, action="x", observation="bad input",
        ...                   feedback=Feedback(hard_failure=True)))
        'bad input'
    """
    if step.feedback.error_text.strip():
        return step.feedback.error_text
    if step.feedback.failed:
        return step.observation
    return ""


def _is_docs(step: Step) -> bool:
    return step.info.get("kind") == "docs"


def _advanced(step: Step, best: float | None) -> bool:
    """Did the step move toward the goal? Progress above the best so far, or a reward/success."""
    progress = step.feedback.progress
    if progress is not None:
        return progress > (best if best is not None else 0.0)
    return step.feedback.reward > 0 or step.info.get("success") is True


def _stall_length(step: Step, prior: Sequence[Step]) -> tuple[int, float | None]:
    """Consecutive steps without progress ending at ``step``, and its progress delta.

    Docs lookups are neutral: they neither advance nor count as stalled steps.
    """
    best: float | None = None
    last: float | None = None
    delta_base: float | None = None
    streak = 0
    for s in (*prior, step):
        if _is_docs(s):
            continue
        delta_base = last
        if _advanced(s, best):
            streak = 0
        else:
            streak += 1
        progress = s.feedback.progress
        if progress is not None:
            best = progress if best is None else max(best, progress)
            last = progress
    now_progress = step.feedback.progress
    delta = None if now_progress is None or delta_base is None else now_progress - delta_base
    return streak, delta


def _same_action(a: str, b: str) -> bool:
    return SPACE.sub(" ", a).strip() == SPACE.sub(" ", b).strip()


def _repeats(step: Step, prior: Sequence[Step], window: int) -> bool:
    """The step repeats a recent step's action and lands in the same state."""
    for earlier in prior[-window:]:
        if _is_docs(earlier) or not _same_action(earlier.action, step.action):
            continue
        if step.state_after is not None or earlier.state_after is not None:
            if earlier.state_after == step.state_after:
                return True
        elif earlier.observation == step.observation:
            # Without structured state the observation is the best view of the state.
            return True
    return False


def detect_failure(
    step: Step,
    history: Sequence[Step],
    *,
    namespace: Namespace,
    run_id: str,
    task: TaskSpec | None = None,
    config: MemoryConfig = DEFAULT_CONFIG,
    now: float | None = None,
) -> ErrorEvent | None:
    """Decide whether ``step`` is a failure and, if so, build its ErrorEvent (design.md §3).

    Channels, in order: ``hard`` (``hard_failure``), ``constraint``
    (``constraint_failure``, tagged ``constraint_failed``), then ``no_progress``:
    either the run has gone ``config.capture.stall_steps`` steps without progress (emitted
    when the stall length reaches a multiple of ``stall_steps``, so once per
    threshold, not on every later step; tagged ``no_progress``), or the step
    repeats an action from the last ``config.capture.repeat_window`` steps and lands in
    the same state (tagged ``state_stall``). A docs lookup (``info["kind"] ==
    "docs"``) is never a failure and does not count toward a stall.

    Args:
        step: The step just executed.
        history: Earlier steps of the same run, oldest first. Steps whose index is
            not below ``step.index`` are ignored, so the whole trajectory may be passed.
        namespace: Namespace of the memory the event belongs to.
        run_id: The run the step belongs to.
        task: The task, for the event's tool, domain and task scope.
        config: Thresholds (``stall_steps``, ``repeat_window``) and text sizes
            (``error_text_scan_chars`` read, ``error_text_max_chars`` kept on the event).
        now: Timestamp of the event; ``time.time()`` when None.

    Returns:
        The ErrorEvent, or None when the step is not a failure.

    Example:
        >>> from langmem_plus.records import Feedback
        >>> bad = Step(index=0, action="keep agee > 3", tool="gridtool",
        ...            feedback=Feedback(hard_failure=True, error_text="unknown column 'agee'"))
        >>> ev = detect_failure(bad, [], namespace=("acme",), run_id="r1", now=0.0)
        >>> ev.channel, ev.fingerprint, ev.tags
        ('hard', 'unknown column <str>', ['column_reference'])
    """
    ns = validate_namespace(namespace)
    if _is_docs(step):
        return None
    prior = [h for h in history if h.index < step.index]
    feedback = step.feedback
    streak, delta = _stall_length(step, prior)
    context: dict[str, Any] = {"progress_delta": delta, "unsafe": step.info.get("unsafe") is True}
    channel: Channel
    if feedback.hard_failure:
        channel, reason = "hard", "hard_failure"
    elif feedback.constraint_failure:
        channel, reason = "constraint", "constraint_failed"
    else:
        stalled = streak > 0 and streak % config.capture.stall_steps == 0
        repeated = streak > 0 and _repeats(step, prior, config.capture.repeat_window)
        if not (stalled or repeated):
            return None
        channel, reason = "no_progress", "state_stall" if repeated else "no_progress"
        context["repeated"] = repeated
    context["channel"] = channel
    info_reason = step.info.get("failure_reason")
    if isinstance(info_reason, str) and info_reason.strip():
        reason = info_reason
    text = failure_text(step)
    fp = fingerprint(
        text,
        action=step.action,
        state_before=step.state_before,
        state_after=step.state_after,
        failure_reason=reason,
        scan_chars=config.capture.error_text_scan_chars,
    )
    fp_id = fingerprint_id(fp)
    return ErrorEvent(
        id=stable_id("ev", *ns, run_id, str(step.index), fp_id),
        namespace=ns,
        run_id=run_id,
        step=step.index,
        fingerprint=fp,
        fingerprint_id=fp_id,
        tags=extract_tags(text, step.action, context, scan_chars=config.capture.error_text_scan_chars),
        channel=channel,
        action=clean_text(step.action, config.capture.error_text_max_chars),
        error_text=clean_text(text, config.capture.error_text_max_chars),
        tool=step.tool or (task.tool if task else None),
        domain=task.domain if task else None,
        task=task.task_id if task else None,
        ts=time.time() if now is None else now,
    )


