"""End of run, as pure functions: what the run was, which lessons it taught, which it judged.

``run_outcome`` reduces a trajectory to the figures the report and the baselines need.
``integrate_candidates`` dedups new candidate lessons against the existing ones and
links conflicts (design.md §6 dedup). ``judge_activated`` measures each activated
lesson's utility against comparable runs without it, then applies the promotion,
suppression and archive rules (design.md §6). Nothing here does I/O: the facade writes
what these functions return.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field

from langmem_plus._text import clean_text
from langmem_plus.config import DEFAULT_CONFIG, MemoryConfig
from langmem_plus.learning.dedup import find_conflicts, find_duplicate, generalised, merge, subsumes
from langmem_plus.learning.incremental import IndexedPool, LessonLookup
from langmem_plus.learning.outcomes import Outcome
from langmem_plus.learning.utility import (
    activation_utility,
    count_addressed,
    decide_status,
    record_outcome,
)
from langmem_plus.records import (
    ErrorEvent,
    FailureNote,
    Lesson,
    LessonAdditions,
    RunEvidence,
    RunRecord,
    Step,
    TaskSpec,
    Verdict,
)

PROVENANCE_EVENTS_KEPT = 50
"""A lesson's provenance keeps at most this many event ids (the lexically last)."""


@dataclass(frozen=True)
class RunOutcome:
    """The figures of one finished run."""

    steps: int
    tool_errors: int
    """Command steps that failed hard (docs lookups never count)."""
    repeated_errors: int
    """Error events whose fingerprint already occurred earlier in the run."""
    fingerprint_counts: dict[str, int]
    passed: bool
    score: float
    failures: list[FailureNote]
    """Each failure with its action and the lessons applied to it, for lesson-specific baselines."""
    applied: list[str]
    """Lessons whose rewrite changed some action of the run."""


def run_outcome(
    steps: Sequence[Step], events: Sequence[ErrorEvent], verdict: Verdict | None, config: MemoryConfig = DEFAULT_CONFIG
) -> RunOutcome:
    """Reduce a trajectory and its events to a RunOutcome."""
    by_index = {s.index: s for s in steps}
    failures = [
        FailureNote(
            fp=e.fingerprint_id,
            step=e.step,
            action=clean_text(e.action, config.lifecycle.failure_note_chars),
            error=clean_text(e.error_text, config.lifecycle.failure_note_chars),
            applied=[str(i) for i in by_index[e.step].info.get("applied_hints", [])] if e.step in by_index else [],
            rewritten=[str(i) for i in by_index[e.step].info.get("rewritten_by", [])] if e.step in by_index else [],
        )
        for e in events[: config.lifecycle.failures_kept_per_run]
    ]
    counts = Counter(e.fingerprint_id for e in events)
    seen: set[str] = set()
    repeated = 0
    for e in events:
        if e.fingerprint_id in seen:
            repeated += 1
        seen.add(e.fingerprint_id)
    tool_errors = sum(1 for s in steps if s.feedback.hard_failure and s.info.get("kind") != "docs")
    return RunOutcome(
        steps=len(steps),
        tool_errors=tool_errors,
        repeated_errors=repeated,
        fingerprint_counts=dict(counts),
        passed=bool(verdict.passed) if verdict else False,
        score=float(verdict.score) if verdict else 0.0,
        failures=failures,
        applied=sorted({str(i) for s in steps for i in s.info.get("applied_hints", [])}),
    )


@dataclass
class Integration:
    """Lessons to write after integrating candidates, and what happened to each."""

    upserts: dict[str, Lesson] = field(default_factory=dict)
    created: list[str] = field(default_factory=list)
    merged: list[tuple[str, str]] = field(default_factory=list)
    """(kept id, merged-in candidate id)."""
    conflicts: list[tuple[str, str]] = field(default_factory=list)


def integrate_candidates(
    candidates: Sequence[Lesson],
    existing: Mapping[str, Lesson],
    config: MemoryConfig,
    *,
    now: float,
    lookup: LessonLookup | None = None,
) -> Integration:
    """Dedup candidates into the existing lessons and link conflicts (design.md §6).

    A candidate with the id of an existing lesson, or a near duplicate of one, is merged
    into it (the older id is kept); otherwise it is new. New lessons that share triggers
    with an existing one but propose a different fix are linked both ways as conflicts.

    With ``lookup`` (the store's indexes, ``learning.incremental``), each candidate meets
    only the lessons the indexes name, in the order a scan would meet them: the same
    decisions (tested), at a cost that follows the candidates, not ``existing``. Without
    it, every candidate is compared with every lesson (the reference).
    """
    out = Integration()
    pool: IndexedPool | _ScanPool = (
        IndexedPool(existing, lookup, config) if lookup is not None else _ScanPool(existing)
    )
    for cand in candidates:
        base = pool.get(cand.id) or find_duplicate(cand, pool.dup_pool(cand), config, hash_of=pool.hash_of)
        if base is not None:
            kept = (
                merge(base, cand, now, bits=config.lifecycle.simhash_bits, window=config.lifecycle.utility_window)
                if base.id != cand.id
                else _refresh(base, cand, now)
            )
            if subsumes(cand, base):  # the same rule over more values: the general form is the one kept
                kept = generalised(kept, cand, config.lifecycle.simhash_bits)
            pool.put(kept)
            out.upserts[kept.id] = kept
            out.merged.append((kept.id, cand.id))
            continue
        rivals = find_conflicts(cand, pool.conflict_pool(cand))
        if rivals:
            cand = cand.model_copy(update={"conflicts_with": sorted(set(cand.conflicts_with) | set(rivals))})
            for rid in rivals:
                rival = pool.get(rid)
                if rival is None:
                    continue  # not reachable: find_conflicts names pool lessons
                if cand.id not in rival.conflicts_with:
                    rival = rival.model_copy(update={"conflicts_with": sorted({*rival.conflicts_with, cand.id})})
                    pool.put(rival)
                    out.upserts[rid] = rival
                out.conflicts.append((cand.id, rid))
        pool.put(cand)
        out.upserts[cand.id] = cand
        out.created.append(cand.id)
    return out


class _ScanPool:
    """``integrate_candidates``' pool as a copy of every lesson, each compared with every candidate (the reference)."""

    def __init__(self, existing: Mapping[str, Lesson]) -> None:
        self._pool: dict[str, Lesson] = dict(existing)
        self.get = self._pool.get
        self.hash_of: Callable[[Lesson], int] | None = None
        """``find_duplicate`` hashes each lesson itself."""

    def put(self, lesson: Lesson) -> None:
        self._pool[lesson.id] = lesson

    def dup_pool(self, cand: Lesson) -> list[Lesson]:
        return list(self._pool.values())

    def conflict_pool(self, cand: Lesson) -> list[Lesson]:
        return list(self._pool.values())


def _refresh(base: Lesson, cand: Lesson, now: float) -> Lesson:
    """The same rule learned again: add its provenance and triggers, keep everything else."""
    prov = base.provenance.model_copy(
        update={
            "run_ids": sorted(set(base.provenance.run_ids) | set(cand.provenance.run_ids)),
            "event_ids": sorted(set(base.provenance.event_ids) | set(cand.provenance.event_ids))[-PROVENANCE_EVENTS_KEPT:],
        }
    )
    return base.model_copy(
        update={
            "triggers": sorted(set(base.triggers) | set(cand.triggers)),
            "fingerprints": sorted(set(base.fingerprints) | set(cand.fingerprints)),
            "tags": sorted(set(base.tags) | set(cand.tags)),
            "provenance": prov,
            "updated_at": now,
        }
    )


@dataclass
class Transition:
    """A lifecycle change and the evidence behind it, for the audit log."""

    lesson_id: str
    old: str
    new: str
    reason: str
    evidence: dict[str, object]


@dataclass
class Judgement:
    """Updated lessons, their lifecycle transitions, the utilities measured this run and its evidence per lesson."""

    updated: dict[str, Lesson] = field(default_factory=dict)
    transitions: list[Transition] = field(default_factory=list)
    utilities: dict[str, float] = field(default_factory=dict)
    evidence: dict[str, RunEvidence] = field(default_factory=dict)
    """Lesson id -> what this run said about it: the append-only record ``updated`` was folded from."""

    def add_evidence(self, ev: RunEvidence) -> None:
        """Record ``ev``, combined with what this run already said about the same lesson."""
        old = self.evidence.get(ev.lesson_id)
        self.evidence[ev.lesson_id] = ev if old is None else _combine(old, ev)


def _combine(a: RunEvidence, b: RunEvidence) -> RunEvidence:
    """Two parts of one run's evidence about one lesson as one record (each part is set in one of them)."""
    return a.model_copy(
        update={
            "shown": a.shown or b.shown,
            "utility": a.utility if a.utility is not None else b.utility,
            "passed": a.passed or b.passed,
            "baseline_pass": a.baseline_pass if a.baseline_pass is not None else b.baseline_pass,
            "conflict_losses": a.conflict_losses + b.conflict_losses,
            "lost_to": sorted({*a.lost_to, *b.lost_to}),
            "swept": a.swept or b.swept,
            "added": _union_additions(a.added, b.added),
            "restored": a.restored or b.restored,
            "parts": a.parts if a.parts is not None else b.parts,
        }
    )


def _union_additions(a: LessonAdditions | None, b: LessonAdditions | None) -> LessonAdditions | None:
    if a is None or b is None:
        return a if b is None else b
    return LessonAdditions(**{f: sorted({*getattr(a, f), *getattr(b, f)}) for f in LessonAdditions.model_fields})


def _mark_shown(lesson: Lesson, shown: int, run_seq: int, at: float) -> Lesson:
    """``lesson`` shown ``shown`` times in the run numbered ``run_seq``, which ended at ``at``."""
    s = lesson.stats
    latest = s.last_activated_run_seq is None or run_seq >= s.last_activated_run_seq
    stats = s.model_copy(
        update={
            "activations": s.activations + shown,
            "runs_activated": s.runs_activated + 1,
            "last_activated_run_seq": run_seq if latest else s.last_activated_run_seq,
        }
    )
    update: dict[str, object] = {"stats": stats, "updated_at": at}
    if latest:
        update["last_activated_at"] = at
    return lesson.model_copy(update=update)


def _runs_since(lesson: Lesson, run_seq: int) -> int:
    last = lesson.stats.last_activated_run_seq
    return run_seq - (last if last is not None else lesson.stats.created_run_seq)


def add_members(lesson: Lesson, added: LessonAdditions) -> Lesson:
    """``lesson`` with ``added`` unioned into its grow-only sets; the same lesson when it holds them all already.

    A union is order-free and idempotent, so a run's additions survive another writer's
    record write that did not know them: every fold puts them back.
    """
    prov = lesson.provenance
    update: dict[str, object] = {}
    for name, have in (("triggers", lesson.triggers), ("fingerprints", lesson.fingerprints), ("tags", lesson.tags),
                       ("conflicts_with", lesson.conflicts_with)):
        extra = set(getattr(added, name)) - set(have) - ({lesson.id} if name == "conflicts_with" else set())
        if extra:
            update[name] = sorted(set(have) | extra)
    run_ids = set(added.run_ids) - set(prov.run_ids)
    event_ids = set(added.event_ids) - set(prov.event_ids)
    if run_ids or event_ids:
        update["provenance"] = prov.model_copy(update={
            "run_ids": sorted(set(prov.run_ids) | run_ids),
            "event_ids": sorted(set(prov.event_ids) | event_ids)[-PROVENANCE_EVENTS_KEPT:],
        })
    return lesson.model_copy(update=update) if update else lesson


def additions(before: Lesson, after: Lesson) -> LessonAdditions | None:
    """What ``after`` holds in its grow-only sets that ``before`` does not (None: nothing)."""
    found = LessonAdditions(
        triggers=sorted(set(after.triggers) - set(before.triggers)),
        fingerprints=sorted(set(after.fingerprints) - set(before.fingerprints)),
        tags=sorted(set(after.tags) - set(before.tags)),
        run_ids=sorted(set(after.provenance.run_ids) - set(before.provenance.run_ids)),
        event_ids=sorted(set(after.provenance.event_ids) - set(before.provenance.event_ids)),
        conflicts_with=sorted(set(after.conflicts_with) - set(before.conflicts_with)),
    )
    return found if any(getattr(found, f) for f in LessonAdditions.model_fields) else None


def apply_evidence(
    lesson: Lesson, ev: RunEvidence, config: MemoryConfig, out: Judgement | None = None
) -> Lesson:
    """``lesson`` with one run's evidence folded in: counts, utility, then the status rules (design.md §6).

    The one place a lesson's stats and status change. ``end_run`` applies its own
    run's evidence with it as it judges, and every memory folds the evidence other
    writers appended with it (``learning.ledger``), so both reach the same lesson.
    Parts apply in a fixed order: added set members, shown (with its utility), conflict
    losses, sweep. ``out`` receives the status transitions, with their evidence, for the audit log.
    """
    if ev.added is not None:
        lesson = add_members(lesson, ev.added)
    if ev.restored and lesson.status == "suppressed":
        lesson = _restore(lesson, ev, out)
    if ev.shown:
        lesson = _mark_shown(lesson, ev.shown, ev.run_seq, ev.at)
        if ev.utility is not None:
            lesson = record_outcome(lesson, ev.utility, passed=ev.passed, now=ev.at, window=config.lifecycle.utility_window)
            if ev.baseline_pass is not None:
                stats = lesson.stats.model_copy(update={"pass_rate_baseline": ev.baseline_pass})
                lesson = lesson.model_copy(update={"stats": stats})
        shown_note: dict[str, object] = {
            "run_id": ev.run_id,
            "shown_this_run": ev.shown,
            "utility_this_run": None if ev.utility is None else round(ev.utility, 4),
        }
        lesson = _apply_status(lesson, 0, config, out, evidence=shown_note)
    if ev.conflict_losses:
        stats = lesson.stats.model_copy(update={"conflict_losses": lesson.stats.conflict_losses + ev.conflict_losses})
        lesson = lesson.model_copy(update={"stats": stats})
        utilities = out.utilities if out is not None else {}
        loss_note: dict[str, object] = {"run_id": ev.run_id, "lost_to": list(ev.lost_to), "winner_utilities": {
            w: round(utilities[w], 4) for w in ev.lost_to if w in utilities
        }}
        lesson = _apply_status(lesson, _runs_since(lesson, ev.run_seq), config, out, evidence=loss_note)
    if ev.swept and lesson.status not in ("archived", "suppressed"):
        since = _runs_since(lesson, ev.run_seq)
        lesson = _apply_status(lesson, since, config, out, evidence={"runs_since_activation": since})
    return lesson


def judge_activated(
    *,
    lessons: Mapping[str, Lesson],
    activations: Mapping[str, int],
    first_steps: Mapping[str, int],
    run: RunRecord,
    prior_runs: Sequence[RunRecord],
    task: TaskSpec,
    referee_gain: float | None = None,
    referee_score: float | None = None,
    outcomes: Mapping[str, Outcome] | None = None,
    applied: Collection[str] | None = None,
    config: MemoryConfig,
    now: float,
) -> Judgement:
    """Measure each activated lesson against comparable runs without it, then apply the rules.

    ``first_steps`` maps a lesson id to the step at which it was first shown in this run:
    only failures from that step on count as its "repeats after activation" (design.md §6).
    ``outcomes`` (``learning.outcomes.step_outcomes``) say what followed from the calls each
    lesson was applied to. ``applied`` (``learning.outcomes.applied_in_run``, None when the
    executor does not report it) are the lessons applied to a call: one shown, never applied,
    whose failure did not occur either, was not at stake, and the run is no evidence about it.
    """
    out = Judgement()
    for lesson_id, count in sorted(activations.items()):
        lesson = lessons.get(lesson_id)
        if lesson is None:
            continue
        first = first_steps.get(lesson_id, 0)
        after = count_addressed(lesson, (f for f in run.failures if f.step >= first))
        before = count_addressed(lesson, (f for f in run.failures if f.step < first))
        idle = applied is not None and lesson_id not in applied and after == 0 and before == 0
        measured = None if idle else activation_utility(
            lesson=_mark_shown(lesson, count, run.seq, now),
            run=run,
            prior_runs=prior_runs,
            task=task,
            referee_gain=referee_gain,
            referee_score=referee_score,
            repeats_after=after,
            repeats_before=before,
            outcome=(outcomes or {}).get(lesson_id),
            config=config,
        )
        u, baseline_pass, parts = measured if measured is not None else (None, None, None)
        if u is not None:
            out.utilities[lesson_id] = u
        ev = RunEvidence(
            lesson_id=lesson_id, run_id=run.run_id, run_seq=run.seq, at=now, shown=count,
            utility=u, passed=run.passed, baseline_pass=baseline_pass, parts=parts,
        )
        out.add_evidence(ev)
        out.updated[lesson_id] = apply_evidence(lesson, ev, config, out)
    return out


def sweep_unused(
    lessons: Mapping[str, Lesson],
    *,
    run_seq: int,
    skip: set[str],
    config: MemoryConfig,
    out: Judgement,
    only: Sequence[str] | None = None,
    run_id: str = "",
    now: float = 0.0,
) -> None:
    """Archive or suppress lessons that were not activated this run, where the rules say so.

    ``only``: the ids to look at, in ``lessons``' order, when the caller knows no other
    lesson changes (the due lessons of ``incremental.sweep_due`` and those written this
    run); None looks at every lesson (the reference). A lesson whose status changes
    gets a ``swept`` evidence record of run ``run_id``.
    """
    found = (lessons.get(i) for i in only) if only is not None else iter(lessons.values())
    for lesson in found:
        if lesson is None or lesson.id in skip or lesson.status in ("archived", "suppressed"):
            continue
        ev = RunEvidence(lesson_id=lesson.id, run_id=run_id, run_seq=run_seq, at=now, swept=True)
        updated = apply_evidence(lesson, ev, config, out)
        if updated is not lesson:
            out.updated[lesson.id] = updated
            out.add_evidence(ev)


def apply_conflict_losses(
    pool: MutableMapping[str, Lesson],
    losses: Mapping[str, int],
    *,
    run_id: str,
    run_seq: int,
    config: MemoryConfig,
    out: Judgement,
    now: float = 0.0,
) -> None:
    """Count this run's conflict-cluster losses and suppress lessons that keep losing (design.md §6).

    ``losses`` maps a lesson id to the times it lost its conflict cluster at selection in
    this run. With ``conflict_loss_needs_winner_help`` (the default), a loss counts only
    when a rival it is linked to was measured to help in this run (``out.utilities > 0``),
    and at most once per run: a lesson that merely lost to a rival trusted more a priori
    (a planted, unproven lesson with high reliability) has not lost on evidence.
    Otherwise every loss counts. Lessons whose count reaches
    ``conflict_losses_to_suppress`` are suppressed here, with the winners as evidence.
    ``pool`` and ``out.updated`` receive the updated lessons.
    """
    for lesson_id, n in sorted(losses.items()):
        lesson = pool.get(lesson_id)
        if lesson is None or not lesson.retrievable or n <= 0:
            continue
        winners = sorted(r for r in lesson.conflicts_with if out.utilities.get(r, 0.0) > 0)
        if config.lifecycle.conflict_loss_needs_winner_help:
            if not winners:
                continue
            n = 1
        ev = RunEvidence(lesson_id=lesson_id, run_id=run_id, run_seq=run_seq, at=now, conflict_losses=n, lost_to=winners)
        out.add_evidence(ev)
        pool[lesson_id] = out.updated[lesson_id] = apply_evidence(lesson, ev, config, out)


def _restore(lesson: Lesson, ev: RunEvidence, out: Judgement | None) -> Lesson:
    """A suppressed lesson learned again from a fix in a passing run: a candidate again, measured afresh (its utility
    window and conflict losses restart; what they held stays in the evidence log and the audit log)."""
    s = lesson.stats
    if out is not None:
        out.transitions.append(restore_transition(lesson, ev.run_id))
    stats = s.model_copy(update={"utility_window": [], "conflict_losses": 0})
    return lesson.model_copy(update={"status": "candidate", "stats": stats})


def restore_transition(lesson: Lesson, run_id: str) -> Transition:
    """The audit record of ``lesson``'s restoration by run ``run_id``, with the evidence it had when suppressed."""
    s = lesson.stats
    return Transition(
        lesson_id=lesson.id, old=lesson.status, new="candidate",
        reason=f"restore: learned again from a fix in run {run_id}, whose verdict passed",
        evidence={"run_id": run_id, "utility_window": list(s.utility_window), "conflict_losses": s.conflict_losses},
    )


def restorations(merged: Sequence[tuple[str, str]], lessons: Mapping[str, Lesson], *, passed: bool) -> list[str]:
    """The suppressed rewrite lessons a run learned again (``Integration.merged``: kept id, candidate id) from a fix,
    when the run's verdict passed: its fix is evidence the lesson was suppressed for another's fault."""
    if not passed:
        return []
    out = []
    for kept, _ in merged:
        lesson = lessons.get(kept)
        if lesson is not None and lesson.status == "suppressed" and lesson.wrong and lesson.correct is not None:
            out.append(kept)
    return list(dict.fromkeys(out))


def _apply_status(
    lesson: Lesson, runs_since: int, config: MemoryConfig, out: Judgement | None, *, evidence: dict[str, object]
) -> Lesson:
    new, reason = decide_status(lesson, config, runs_since_activation=runs_since)
    if new == lesson.status:
        return lesson
    s = lesson.stats
    if out is not None:
        out.transitions.append(
            Transition(
                lesson_id=lesson.id,
                old=lesson.status,
                new=new,
                reason=reason,
                evidence={
                    **evidence,
                    "activations": s.activations,
                    "evidence_runs": s.evidence_runs,
                    "utility_window": list(s.utility_window),
                    "helped": s.helped,
                    "harmed": s.harmed,
                    "conflict_losses": s.conflict_losses,
                    "reliability": lesson.reliability,
                },
            )
        )
    return lesson.model_copy(update={"status": new})


__all__ = [
    "Integration",
    "restorations",
    "restore_transition",
    "Judgement",
    "RunOutcome",
    "PROVENANCE_EVENTS_KEPT",
    "Transition",
    "add_members",
    "additions",
    "apply_conflict_losses",
    "apply_evidence",
    "integrate_candidates",
    "judge_activated",
    "run_outcome",
    "sweep_unused",
]
