"""A memory's records as the data of its report page (``langmem-plus report --store PATH``).

What a person asks of a memory they look at, each answered by one pure function over
records the memory keeps, so each is tested without a page:

- ``lesson_rows``, ``count_by_status``, ``count_by_tool``: the lessons, how many of each
  status, per tool;
- ``fold_points``: what a lesson's figures fold from, run by run: its evidence
  (``RunEvidence``, design.md §6) replayed over its stored record with the fold every
  memory reads with (``lifecycle.apply_evidence``), so each point shows the run's
  utility and the status, reliability and mean utility the lesson had after it;
- ``timeline``: promotions, suppressions, archives, merges, conflicts and new lessons
  from the audit log, in order;
- ``run_rows``: the runs with their errors and the lessons shown in them;
- ``unanswered_mistakes``: fingerprints that recur across runs and that no live lesson
  (candidate or promoted) is triggered by.

``read_page`` is the one reader of a ``LearningMemory``; ``report_store_page`` draws
and writes the page.

Example:
    >>> from langmem_plus.records import FailureNote, RunRecord
    >>> runs = [RunRecord(run_id=f"r{i}", namespace=("ns",), seq=i, task_id="t", fingerprint_counts={"fp1": 1},
    ...                   failures=[FailureNote(fp="fp1", error="unknown function 'median'")]) for i in (1, 2)]
    >>> [(m.fingerprint_id, m.runs) for m in unanswered_mistakes(runs, lessons=[])]
    [('fp1', 2)]
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO

from langmem_plus.config import DEFAULT_CONFIG, MemoryConfig
from langmem_plus.learning.ledger import restate_corrections
from langmem_plus.learning.lifecycle import apply_evidence
from langmem_plus.records import LESSON_STATUSES, Lesson, RunEvidence, RunRecord

if TYPE_CHECKING:
    from langmem_plus.memory import LearningMemory

TIMELINE_KINDS = ("lesson_created", "lesson_imported", "merge", "conflict", "promoted", "suppressed", "archived", "lifecycle")
"""Audit kinds the timeline shows: a lesson coming to be, joining another, and every change of status."""
LIVE_STATUSES = frozenset({"candidate", "promoted"})
"""Statuses of a lesson that answers its triggers (the others are never retrieved, design.md §5.4)."""
NO_TOOL = "(any tool)"
"""The tool column of a lesson scoped to no tool."""
TOP_MISTAKES = 12
"""Unanswered recurring fingerprints listed, the most frequent first."""
FOLDED_LESSONS = 40
"""Lessons whose evidence is replayed for the page (the most measured first); replaying costs one fold per entry."""
ERRORS_PER_RUN = 3
"""Errors a run's row names (the first ones)."""
PROGRESS_REPORTS = 10
"""Progress reports within a stage of known size, the last one included."""
PROGRESS_EVERY = 1000
"""Items between two progress reports within a stage of unknown size."""

Progress = Callable[[str, int, int], None]
"""progress(stage, done, total): a stage of ``read_page`` advanced; total 0 when unknown."""


@dataclass(frozen=True)
class LessonRow:
    """One lesson as the lessons table shows it."""

    id: str
    status: str
    tool: str
    rule: str
    reliability: float
    mean_utility: float | None
    """Mean of the utility window the lifecycle judges by; None before any measurement."""
    evidence_runs: int
    activations: int
    source: str


@dataclass(frozen=True)
class FoldPoint:
    """One run's evidence about a lesson and the lesson as it stood after folding it in."""

    run_id: str
    run_seq: int
    shown: int
    utility: float | None
    """The run's measured utility; None when the run could not say."""
    passed: bool
    note: str
    """What else the entry did: swept, restored, conflict losses, set members added, a corrected verdict."""
    status: str
    reliability: float
    mean_utility: float | None


@dataclass(frozen=True)
class TimelineEvent:
    """One audit record of the timeline."""

    ts: float
    kind: str
    lesson_id: str
    run_id: str | None
    run_seq: int | None
    what: str


@dataclass(frozen=True)
class RunRow:
    """One stored run with its errors and the lessons shown in it."""

    seq: int
    run_id: str
    task_id: str
    tool: str
    passed: bool
    score: float
    steps: int
    tool_errors: int
    errors: tuple[str, ...]
    activated: tuple[str, ...]


@dataclass(frozen=True)
class Mistake:
    """A fingerprint recurring across runs that no live lesson answers."""

    fingerprint_id: str
    fingerprint: str
    """Its normalised text when the audit log has it, else the first error seen with it."""
    runs: int
    occurrences: int
    last_seq: int
    tools: tuple[str, ...]
    example_action: str
    example_error: str
    dropped: tuple[str, ...]
    """Suppressed or archived lessons it triggers: answers the memory tried and gave up."""


@dataclass(frozen=True)
class StorePage:
    """Everything the page shows, read from one namespace."""

    namespace: tuple[str, ...]
    lessons: list[LessonRow]
    by_status: dict[str, int]
    by_tool: dict[str, dict[str, int]]
    folds: dict[str, list[FoldPoint]]
    timeline: list[TimelineEvent]
    runs: list[RunRow]
    mistakes: list[Mistake]
    audit_path: str = ""
    notes: list[str] = field(default_factory=list)
    """What the reader could not read (e.g. no audit log), shown on the page."""


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _tool(lesson: Lesson) -> str:
    return lesson.scope.tool or NO_TOOL


def lesson_rows(lessons: Iterable[Lesson]) -> list[LessonRow]:
    """The lessons by status (in ``LESSON_STATUSES`` order), then the most shown first."""
    order: dict[str, int] = {s: i for i, s in enumerate(LESSON_STATUSES)}
    rows = [
        LessonRow(id=l.id, status=l.status, tool=_tool(l), rule=l.rule_text, reliability=l.reliability,
                  mean_utility=_mean(l.stats.utility_window), evidence_runs=l.stats.evidence_runs,
                  activations=l.stats.activations, source=l.source)
        for l in lessons
    ]
    return sorted(rows, key=lambda r: (order.get(r.status, len(order)), -r.activations, r.id))


def count_by_status(lessons: Iterable[Lesson]) -> dict[str, int]:
    """Lessons per status, every status present (zero included)."""
    counts: Counter[str] = Counter(str(l.status) for l in lessons)
    return {s: counts.get(s, 0) for s in LESSON_STATUSES}


def count_by_tool(lessons: Iterable[Lesson]) -> dict[str, dict[str, int]]:
    """Lessons per tool and status, tools by lesson count (most first)."""
    per: dict[str, Counter[str]] = {}
    for l in lessons:
        per.setdefault(_tool(l), Counter())[l.status] += 1
    ranked = sorted(per.items(), key=lambda kv: (-sum(kv[1].values()), kv[0]))
    return {tool: {s: c.get(s, 0) for s in LESSON_STATUSES} for tool, c in ranked}


def _note(ev: RunEvidence) -> str:
    parts: list[str] = []
    if ev.corrects:
        parts.append(f"restates run {ev.corrects} under a corrected verdict")
    if ev.restored:
        parts.append("learned again: restored")
    if ev.conflict_losses:
        parts.append(f"lost its conflict cluster {ev.conflict_losses}x" + (f" to {', '.join(ev.lost_to)}" if ev.lost_to else ""))
    if ev.swept:
        parts.append("swept (unused)")
    if ev.added is not None:
        added = [f"{len(v)} {k.replace('_', ' ')}" for k, v in ev.added.model_dump().items() if v]
        if added:
            parts.append("added " + ", ".join(added))
    return "; ".join(parts)


def fold_points(record: Lesson, evidence: Sequence[RunEvidence], config: MemoryConfig = DEFAULT_CONFIG) -> list[FoldPoint]:
    """``evidence`` replayed over the lesson's stored ``record``: one point per entry, in fold order.

    The fold is the one every memory reads with (``learning.ledger``): corrections are read
    into the runs they restate, then each entry goes through ``lifecycle.apply_evidence``, so
    the last point's status and reliability are the lesson's own.
    """
    keyed = [((ev.run_seq, ev.at, "", i), ev) for i, ev in enumerate(evidence)]
    lesson = record
    points: list[FoldPoint] = []
    for _, ev in restate_corrections(keyed):
        lesson = apply_evidence(lesson, ev, config)
        points.append(FoldPoint(
            run_id=ev.run_id, run_seq=ev.run_seq, shown=ev.shown, utility=ev.utility, passed=ev.passed, note=_note(ev),
            status=lesson.status, reliability=lesson.reliability, mean_utility=_mean(lesson.stats.utility_window),
        ))
    return points


def _what(rec: Mapping[str, Any]) -> str:
    kind = rec.get("kind")
    if kind == "merge":
        merged, kept = rec.get("merged"), rec.get("lesson_id")
        return "learned again" if merged == kept else f"merged duplicate {merged}"
    if kind == "conflict":
        return f"conflict linked with {rec.get('other')} (same trigger, different fix)"
    if kind in ("lesson_created", "lesson_imported"):
        return str(rec.get("rule", ""))
    return f"{rec.get('old')} -> {rec.get('new')}: {rec.get('reason', '')}"


def timeline(records: Iterable[Mapping[str, Any]], run_seqs: Mapping[str, int] | None = None) -> list[TimelineEvent]:
    """The audit records of ``TIMELINE_KINDS`` about a lesson, in log order, each with its run's sequence number."""
    seqs = run_seqs or {}
    out: list[TimelineEvent] = []
    for rec in records:
        kind = str(rec.get("kind"))
        if kind not in TIMELINE_KINDS or not rec.get("lesson_id"):
            continue
        run_id = rec.get("run_id")
        out.append(TimelineEvent(ts=float(rec.get("ts", 0.0)), kind=kind, lesson_id=str(rec["lesson_id"]),
                                 run_id=None if run_id is None else str(run_id),
                                 run_seq=seqs.get(str(run_id)) if run_id is not None else None, what=_what(rec)))
    return out


def run_rows(runs: Iterable[RunRecord], errors_per_run: int = ERRORS_PER_RUN) -> list[RunRow]:
    """The runs in sequence order, each naming its first errors and the lessons shown."""
    return [
        RunRow(seq=r.seq, run_id=r.run_id, task_id=r.task_id, tool=r.tool or NO_TOOL, passed=r.passed, score=r.score,
               steps=r.steps, tool_errors=r.tool_errors,
               errors=tuple(f.error or f.fp for f in r.failures[:errors_per_run]), activated=tuple(r.activated))
        for r in sorted(runs, key=lambda r: (r.seq, r.ts, r.run_id))
    ]


def unanswered_mistakes(
    runs: Iterable[RunRecord],
    lessons: Iterable[Lesson],
    fingerprints: Mapping[str, str] | None = None,
    *,
    top: int = TOP_MISTAKES,
) -> list[Mistake]:
    """Fingerprints seen in two runs or more that no live lesson has as a trigger, in most runs first.

    Args:
        runs: The stored runs (their ``fingerprint_counts`` and ``failures``).
        lessons: Every lesson; a candidate or promoted one answers its triggers, a suppressed or
            archived one does not (it is named in ``Mistake.dropped``).
        fingerprints: Fingerprint id -> normalised text (from the audit log's captures), when known.
        top: How many to return.
    """
    answered: set[str] = set()
    dropped: dict[str, list[str]] = {}
    for l in lessons:
        for fp in l.triggers:
            if l.status in LIVE_STATUSES:
                answered.add(fp)
            else:
                dropped.setdefault(fp, []).append(l.id)
    in_runs: Counter[str] = Counter()
    total: Counter[str] = Counter()
    last: dict[str, int] = {}
    tools: dict[str, dict[str, None]] = {}
    example: dict[str, tuple[str, str]] = {}
    for r in runs:
        for fp, n in r.fingerprint_counts.items():
            if fp in answered:
                continue
            in_runs[fp] += 1
            total[fp] += n
            last[fp] = max(last.get(fp, r.seq), r.seq)
            tools.setdefault(fp, {})[r.tool or NO_TOOL] = None
        for f in r.failures:
            if f.fp not in answered and f.fp not in example:
                example[f.fp] = (f.action, f.error)
    texts = fingerprints or {}
    recurring = sorted((fp for fp, n in in_runs.items() if n >= 2), key=lambda fp: (-in_runs[fp], -total[fp], fp))
    return [
        Mistake(fingerprint_id=fp, fingerprint=texts.get(fp) or example.get(fp, ("", fp))[1], runs=in_runs[fp],
                occurrences=total[fp], last_seq=last[fp], tools=tuple(tools[fp]), example_action=example.get(fp, ("", ""))[0],
                example_error=example.get(fp, ("", ""))[1], dropped=tuple(dropped.get(fp, ())))
        for fp in recurring[:top]
    ]


def fingerprint_texts(captures: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Fingerprint id -> its normalised text, from the audit log's ``capture`` records."""
    out: dict[str, str] = {}
    for rec in captures:
        event = rec.get("event")
        if isinstance(event, dict) and event.get("fingerprint_id") and event.get("fingerprint"):
            out.setdefault(str(event["fingerprint_id"]), str(event["fingerprint"]))
    return out


def _counting(items: Iterable[Any], stage: str, total: int, progress: Progress | None) -> Iterable[Any]:
    """``items`` as they are, reporting ``stage`` about ``PROGRESS_REPORTS`` times and at the end (``total`` 0: unknown,
    then every ``PROGRESS_EVERY`` items)."""
    step = max(total // PROGRESS_REPORTS, 1) if total else PROGRESS_EVERY
    n = 0
    for n, item in enumerate(items, 1):
        if progress is not None and n % step == 0 and n != total:
            progress(stage, n, total)
        yield item
    if progress is not None:
        progress(stage, n, total or n)  # the last report has the total, known or counted


def read_page(memory: LearningMemory, *, progress: Progress | None = None, folded: int = FOLDED_LESSONS) -> StorePage:
    """Read everything the page shows from ``memory``'s namespace.

    Lessons, runs and evidence come from the memory's view (what Chroma holds, folded);
    the timeline and fingerprint texts from its audit log, read once. ``folded`` lessons
    (the most measured, then the most shown) get their evidence replayed.
    """
    lessons = list(_counting(memory.lessons.values(), "lessons", len(memory.lessons), progress))
    runs = list(memory.runs)
    seqs = {r.run_id: r.seq for r in runs}
    notes: list[str] = []
    audit_records: list[dict[str, Any]] = []
    if memory.audit.path.exists():
        audit_records = list(_counting(memory.audit.read(kinds=(*TIMELINE_KINDS, "capture")), "audit records", 0, progress))
    else:
        notes.append(f"no audit log at {memory.audit.path}: the timeline is empty")
    ranked = sorted(lessons, key=lambda l: (-l.stats.evidence_runs, -l.stats.activations, l.id))[:folded]
    folds: dict[str, list[FoldPoint]] = {}
    ledger = memory.view.ledger
    for lesson in _counting(ranked, "lesson folds", len(ranked), progress):
        evidence = memory.evidence(lesson.id)
        if evidence:
            folds[lesson.id] = fold_points(ledger.record_of(lesson), evidence, memory.config)
    return StorePage(
        namespace=tuple(memory.namespace),
        lessons=lesson_rows(lessons),
        by_status=count_by_status(lessons),
        by_tool=count_by_tool(lessons),
        folds=folds,
        timeline=timeline((r for r in audit_records if r.get("kind") != "capture"), seqs),
        runs=run_rows(runs),
        mistakes=unanswered_mistakes(runs, lessons, fingerprint_texts(r for r in audit_records if r.get("kind") == "capture")),
        audit_path=str(memory.audit.path) if not notes else "",
        notes=notes,
    )


def stderr_progress(stream: TextIO | None = None, prefix: str = "report") -> Progress:
    """A progress printer for ``read_page``: one rewritten line on a terminal, one line per report otherwise.

    ``stream``: where to print (default: ``sys.stderr`` as it is when the printer is made).
    """
    out: TextIO = sys.stderr if stream is None else stream
    tty = out.isatty()

    def show(stage: str, done: int, total: int) -> None:
        text = f"{prefix}: {stage} {done}/{total}" if total else f"{prefix}: {stage} {done}"
        out.write(f"\r\x1b[2K{text}" if tty else f"{text}\n")
        if tty and total and done >= total:
            out.write("\n")
        out.flush()

    return show


__all__ = [
    "FoldPoint",
    "LessonRow",
    "Mistake",
    "Progress",
    "RunRow",
    "StorePage",
    "TimelineEvent",
    "count_by_status",
    "count_by_tool",
    "fingerprint_texts",
    "fold_points",
    "lesson_rows",
    "read_page",
    "run_rows",
    "stderr_progress",
    "timeline",
    "unanswered_mistakes",
]
