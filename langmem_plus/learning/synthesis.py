"""Offline lesson synthesis from one run's failures (design.md §6 "Lesson synthesis").

At the end of a run the events are grouped by fingerprint. A fingerprint that
recurred (``min_occurrences`` times in this run, or in that many runs counting
this one) is worth a lesson. The offline path needs no model:

- a contrastive pair, the failed action and the next attempt that got past the
  failure, gives a WRONG -> CORRECT token rewrite from their minimal difference
  (``rewrite.derive_rewrite``);
- with no usable pair, an "avoid" lesson records the failing action pattern.

Lesson ids hash the namespace, the rule and the fingerprint id, so the same rule
learned in another run (with other literals) gets the same id and dedups exactly.

Example:
    >>> from langmem_plus.records import ErrorEvent, Feedback, Step
    >>> fail = Feedback(hard_failure=True, error_text="unknown command 'filter' at stage 1")
    >>> steps = [Step(index=0, action="filter age > 30 | select name", feedback=fail),
    ...          Step(index=1, action="keep age > 30 | select name")]
    >>> ev = ErrorEvent(id="e0", namespace=("ns",), run_id="r1", step=0, channel="hard",
    ...                 fingerprint="unknown command <str> at stage <num>", fingerprint_id="fp1",
    ...                 action=steps[0].action, error_text=fail.error_text)
    >>> [l.rule_text for l in synthesize_offline(namespace=("ns",), run_id="r1", steps=steps,
    ...     events=[ev], prior_runs_seen={"fp1": 1}, task=None, config=DEFAULT_CONFIG, now=0.0)]
    ['WRONG: filter -> CORRECT: keep (when: unknown command <str> at stage <num>)']
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping, Sequence

from langmem_plus._text import action_tokens, stable_id
from langmem_plus.config import DEFAULT_CONFIG, MemoryConfig
from langmem_plus.learning.dedup import lesson_simhash
from langmem_plus.records import (
    ErrorEvent,
    Lesson,
    LessonScope,
    LessonSource,
    Namespace,
    Provenance,
    ScopeLevel,
    Step,
    TaskSpec,
)
from langmem_plus.capture.fingerprints import failure_lines
from langmem_plus.forms import VALUE_KINDS, argument_values, tokenize
from langmem_plus.rewrite import SLOT_OF_KIND, best_rewrite, derive_rewrites, error_names_fix

WHEN_MAX_CHARS = 80
"""Longest fingerprint quoted in a rule's ``(when: ...)`` / ``(fails with: ...)`` suffix."""

AVOID_PATTERN_MAX_TOKENS = 8
"""Tokens of the failing action kept in an avoid lesson's pattern."""

NO_ACTION = "<no action>"
"""Stands in for the action pattern of an avoid lesson whose failure had no action (a stall)."""

_NUMBER = re.compile(r"^-?\d+(?:\.\d+)?$")


def recurring_fingerprints(
    events: Sequence[ErrorEvent],
    prior_runs_seen: Mapping[str, int],
    config: MemoryConfig = DEFAULT_CONFIG,
) -> dict[str, list[ErrorEvent]]:
    """Fingerprints of this run that deserve a lesson, with their events (design.md §6).

    A fingerprint id recurs when it occurred ``min_occurrences`` times in this run,
    or when the runs it occurred in, counting this one, reach ``min_occurrences``.

    Args:
        events: This run's error events.
        prior_runs_seen: Fingerprint id -> number of earlier runs it occurred in.
        config: Supplies ``min_occurrences``.

    Returns:
        Fingerprint id -> its events in this run, in order of first occurrence.
    """
    groups: dict[str, list[ErrorEvent]] = {}
    for ev in events:
        groups.setdefault(ev.fingerprint_id, []).append(ev)
    need = config.lifecycle.min_occurrences
    return {fp: evs for fp, evs in groups.items() if len(evs) >= need or prior_runs_seen.get(fp, 0) + 1 >= need}


def _is_docs(step: Step) -> bool:
    return step.info.get("kind") == "docs"


def _same_intent(a: str, b: str, min_similarity: float) -> bool:
    ratio = difflib.SequenceMatcher(None, action_tokens(a), action_tokens(b), autojunk=False).ratio()
    return ratio >= min_similarity


def _retry_of(failed: Step, step: Step, min_similarity: float) -> bool:
    """Whether ``step`` retries ``failed``: the same tool, and the arguments that changed (else the whole actions)
    alike enough, so a lookup between them (``git branch`` after ``git log master``) is not taken for the fix."""
    return failed.tool == step.tool and all(_same_intent(a, b, min_similarity) for a, b in _changed(failed, step))


def _values(step: Step) -> dict[str, str]:
    """What a rewrite is derived on: the call's arguments (``info["args"]``, as the middleware records them),
    else the whole action under the key ``""``."""
    args = step.info.get("args")
    return argument_values(args) if isinstance(args, dict) and args else {"": step.action}


def _changed(failed: Step, later: Step) -> list[tuple[str, str]]:
    """(before, after) of each argument that changed between two calls with the same arguments, else of the two
    whole actions: what a retry is compared on and a rule derived from (so a form never spans two arguments)."""
    before, after = _values(failed), _values(later)
    if before.keys() == after.keys() and "" not in before:
        return [(before[k], after[k]) for k in before if before[k] != after[k]]
    return [(failed.action, later.action)]


def pair_rewrite(failed: Step, fixed: Step, hint_text: str) -> tuple[str, str] | None:
    """The rule from a failed call to the call that fixed it, derived on what changed (``_changed``); the rule the
    error names wins (``best_rewrite``)."""
    return best_rewrite([r for a, b in _changed(failed, fixed) for r in derive_rewrites(a, b)], hint_text)


def _fix_after(
    failed: Step,
    steps: Sequence[Step],
    hint_text: str,
    min_similarity: float = DEFAULT_CONFIG.lifecycle.pair_min_similarity,
    lookahead: int = DEFAULT_CONFIG.lifecycle.fix_lookahead,
) -> tuple[str, str] | None:
    """The rule from ``failed`` to the next retry that got past its failure, if there is one.

    A later command step got past the failure when it did not fail, failed
    differently, or failed with the same fingerprint about something else (e.g. the
    next unknown command of a pipeline). It did not get past when it failed with
    the identical error text, or when its error names a token the fix introduced
    (the fix itself was wrong, e.g. ``desc`` -> ``descending``): such steps are
    skipped. A step that is not a retry of the failed action (``_retry_of``: the same
    tool, same intent by ``MemoryConfig.lifecycle.pair_min_similarity``), such as a lookup, is
    passed over, up to ``lookahead`` of them.
    """
    passed = 0
    for step in steps:
        if step.index <= failed.index or _is_docs(step):
            continue
        if step.feedback.failed and step.feedback.error_text == failed.feedback.error_text:
            continue
        if not _retry_of(failed, step, min_similarity):
            passed += 1
            if passed > lookahead:
                return None
            continue
        rule = pair_rewrite(failed, step, hint_text)
        if rule is None:
            continue
        if step.feedback.failed and error_names_fix(rule[1], step.feedback.error_text):
            continue
        return rule
    return None


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= WHEN_MAX_CHARS else text[: WHEN_MAX_CHARS - 1] + "…"


def action_pattern(action: str) -> str:
    """The failing action with its literals generalised, for an avoid lesson.

    Example:
        >>> action_pattern("filter age > 30 | select 'name'")
        'filter age > <num> | select <str>'
    """
    toks = []
    for tok in action_tokens(action)[:AVOID_PATTERN_MAX_TOKENS]:
        if _NUMBER.match(tok):
            toks.append("<num>")
        elif len(tok) >= 2 and tok[0] in "\"'":
            toks.append("<str>")
        else:
            toks.append(tok)
    return " ".join(toks)


def failure_words(error_text: str, action: str) -> str:
    """The error's own words for a note: its first line that names the failure (``capture.failure_lines``)."""
    lines = failure_lines(error_text, action)
    return " ".join((lines[0] if lines else error_text).split())


def _error_mentions(error_text: str, action: str) -> tuple[set[str], set[str]]:
    """(what the failure lines quote, the words they use), from the lines that name the failure."""
    text = " ".join(failure_lines(error_text, action))
    quoted = set(re.findall(r"[\"'`]([^\"'`\s]+)[\"'`]", text))
    return quoted, set(re.findall(r"[A-Za-z_][\w-]*", text))


def named_form(step: Step, error_text: str) -> str | None:
    """The form an avoid lesson holds against: the token of the failed call its error names, or None.

    A token the error quotes wins over one it merely uses; a value (``near "4"``) is written as a slot after the
    word before it (``TOP <n>``), so the lesson holds for every value. Punctuation alone is never a form.
    """
    quoted, words = _error_mentions(error_text, step.action)
    for value in _values(step).values():
        tokens = tokenize(value)
        for pool, kinds in ((quoted, VALUE_KINDS | {"flag"}), (words, {"name", "flag"})):
            for k, tok in enumerate(tokens):
                bare = tok.text[1:-1] if tok.kind == "str" and len(tok.text) >= 2 else tok.text
                if tok.kind not in kinds or bare not in pool:
                    continue
                if tok.kind in ("name", "flag"):
                    return tok.text
                if k > 0 and tokens[k - 1].kind == "name":
                    return f"{tokens[k - 1].text} {SLOT_OF_KIND[tok.kind]}"
    return None


def candidate_lesson(
    *,
    namespace: Namespace,
    run_id: str,
    rule_text: str,
    wrong: str | None,
    correct: str | None,
    triggers: Sequence[str],
    events: Sequence[ErrorEvent],
    source_events: Sequence[ErrorEvent],
    level: ScopeLevel,
    source: LessonSource,
    task: TaskSpec | None,
    config: MemoryConfig,
    now: float,
) -> Lesson:
    """A new candidate lesson, built the same way by the offline and the LLM path.

    The id depends only on the namespace, the rule and its triggers, so the same rule
    learned again in another run gets the same id. Fingerprints and tags come from
    ``events`` (the trigger fingerprints' events); the scope falls back to the first
    event where the task leaves a field empty; provenance names ``source_events``.
    """
    first = events[0]
    lesson = Lesson(
        id=stable_id("les", *namespace, wrong or "", correct or "", *triggers),
        namespace=namespace,
        rule_text=rule_text,
        wrong=wrong,
        correct=correct,
        triggers=list(triggers),
        fingerprints=list(dict.fromkeys(ev.fingerprint for ev in events)),
        tags=list(dict.fromkeys(t for ev in events for t in ev.tags)),
        scope=LessonScope(
            level=level,
            tool=(task.tool if task and task.tool else first.tool),
            domain=(task.domain if task and task.domain else first.domain),
            task=(task.task_id if task else first.task),
        ),
        status="candidate",
        provenance=Provenance(run_ids=[run_id], event_ids=[ev.id for ev in source_events]),
        source=source,
        created_at=now,
        updated_at=now,
    )
    return lesson.model_copy(update={"simhash": lesson_simhash(lesson, config.lifecycle.simhash_bits)})


def _lesson(
    *,
    namespace: Namespace,
    run_id: str,
    fp_events: Sequence[ErrorEvent],
    wrong: str | None,
    correct: str | None,
    rule_text: str,
    source_events: Sequence[ErrorEvent],
    task: TaskSpec | None,
    config: MemoryConfig,
    now: float,
) -> Lesson:
    """An offline lesson for one fingerprint (all of ``fp_events`` share it)."""
    return candidate_lesson(
        namespace=namespace,
        run_id=run_id,
        rule_text=rule_text,
        wrong=wrong,
        correct=correct,
        triggers=[fp_events[0].fingerprint_id],
        events=fp_events,
        source_events=source_events,
        level="domain",
        source="rule",
        task=task,
        config=config,
        now=now,
    )


def synthesize_offline(
    *,
    namespace: Namespace,
    run_id: str,
    steps: Sequence[Step],
    events: Sequence[ErrorEvent],
    prior_runs_seen: Mapping[str, int],
    task: TaskSpec | None,
    config: MemoryConfig = DEFAULT_CONFIG,
    now: float,
) -> list[Lesson]:
    """Candidate lessons from one run's recurring failures, without a model (design.md §6).

    For each recurring fingerprint (``recurring_fingerprints``) and each of its
    events, the failed step is paired with the next retry that got past the
    failure (see ``_fix_after``) and has the same intent (``pair_min_similarity``). ``derive_rewrite`` turns each pair into
    WRONG -> CORRECT; each distinct rule becomes one lesson with rule text
    ``"WRONG: {wrong} -> CORRECT: {correct} (when: {fingerprint})"``. A fingerprint
    without any usable pair gets one avoid lesson,
    ``"AVOID: {action pattern} (fails with: {fingerprint})"``.

    The memory does not call this for a run an environment plugin claims (``plugins.EnvPlugin.claims``: a text
    game's wrong choices are its text rules' to learn from, not malformed calls to rewrite).

    Args:
        namespace: The memory namespace.
        run_id: This run.
        steps: The run's steps (docs lookups carry ``info["kind"] == "docs"``).
        events: The run's error events.
        prior_runs_seen: Fingerprint id -> number of earlier runs it occurred in.
        task: The task, for the lesson scope; None to take it from the events.
        config: Supplies ``min_occurrences`` and ``simhash_bits``.
        now: Current time, epoch seconds.

    Returns:
        Candidate lessons, in order of first occurrence of their fingerprint.
    """
    ordered = sorted(steps, key=lambda s: s.index)
    by_index = {s.index: s for s in ordered}
    lessons: list[Lesson] = []
    recurring = recurring_fingerprints(events, prior_runs_seen, config)
    groups: dict[str, list[ErrorEvent]] = {}
    for ev in events:
        groups.setdefault(ev.fingerprint_id, []).append(ev)
    for fp_id, fp_events in groups.items():
        is_recurring = fp_id in recurring
        if not is_recurring and not config.lifecycle.verified_fix_lessons:
            continue
        when = _short(fp_events[0].fingerprint)
        rules: dict[tuple[str, str], list[ErrorEvent]] = {}
        for ev in fp_events:
            failed = by_index.get(ev.step)
            if failed is None:
                continue
            rule = _fix_after(failed, ordered, ev.error_text, config.lifecycle.pair_min_similarity, config.lifecycle.fix_lookahead)
            if rule is not None:
                rules.setdefault(rule, []).append(ev)
        for (wrong, correct), source in rules.items():
            lessons.append(
                _lesson(
                    namespace=namespace,
                    run_id=run_id,
                    fp_events=fp_events,
                    wrong=wrong,
                    correct=correct,
                    rule_text=f"WRONG: {wrong} -> CORRECT: {correct} (when: {when})",
                    source_events=source,
                    task=task,
                    config=config,
                    now=now,
                )
            )
        if not rules and is_recurring:
            first = fp_events[0]
            failed_step = by_index.get(first.step)
            failing = failed_step.action if failed_step is not None else first.action
            named = named_form(failed_step, first.error_text) if failed_step is not None else None
            said = json.dumps(_short(failure_words(first.error_text, failing)), ensure_ascii=False)
            lessons.append(
                _lesson(
                    namespace=namespace,
                    run_id=run_id,
                    fp_events=fp_events,
                    wrong=named,
                    correct=None,
                    rule_text=(f"AVOID: {named} (fails with: {said})" if named is not None
                               else f"AVOID: {action_pattern(failing) or NO_ACTION} (fails with: {when})"),
                    source_events=fp_events,
                    task=task,
                    config=config,
                    now=now,
                )
            )
    return lessons


__all__ = [
    "candidate_lesson",
    "AVOID_PATTERN_MAX_TOKENS",
    "NO_ACTION",
    "WHEN_MAX_CHARS",
    "action_pattern",
    "failure_words",
    "named_form",
    "pair_rewrite",
    "recurring_fingerprints",
    "synthesize_offline",
]
