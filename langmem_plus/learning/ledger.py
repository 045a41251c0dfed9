"""Ledger: each lesson's stored record plus the run evidence folded over it (DESIGN §6, issue #13).

A lesson's counters and status are never read, changed and written back to the store,
where two writers would overwrite each other. The store keeps each lesson's *record*
(its content and the counters it was created or imported with) and an append-only log
of ``RunEvidence`` (what each run said about it, keyed by lesson and run). The lesson
every surface reads is the fold of its evidence over its record, in Lamport
order (``LogKey``), with ``lifecycle.apply_evidence``: the same function ``end_run``
judges with, so a memory that folds another writer's evidence reaches the lesson that
writer reached, and every memory that has read the same evidence holds the same lesson.

Only lessons with evidence are held here; any other lesson's record is the lesson.

Example:
    >>> from langmem_plus.records import Lesson, RunEvidence
    >>> rec = Lesson(id="l1", namespace=("ns",), rule_text="WRONG: a -> CORRECT: b")
    >>> ledger = Ledger()
    >>> shown = RunEvidence(lesson_id="l1", run_id="r1", run_seq=1, at=1.0, shown=2)
    >>> ledger.add([((1, 1.0, "w", 1), shown)], current={"l1": rec}.get)["l1"].stats.activations
    2
    >>> again = shown.model_copy(update={"run_id": "r2", "run_seq": 2})
    >>> lesson = ledger.add([((2, 2.0, "w", 2), again)], current={"l1": rec}.get)["l1"]
    >>> lesson.stats.activations, ledger.record_of(lesson).stats.activations
    (4, 0)
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from langmem_plus.config import DEFAULT_CONFIG, MemoryConfig
from langmem_plus.learning.lifecycle import apply_evidence
from langmem_plus.records import Lesson, RunEvidence

LogKey = tuple[int, float, str, int]
"""An evidence entry's place in the fold: (run seq, ts, writer, n). Run seq is a Lamport clock, so a run's
evidence folds after the evidence of every run its writer knew of; the shared log's (ts, writer, n) breaks ties."""
FOLDED_FIELDS = ("stats", "status", "reliability", "last_activated_at")
"""The lesson fields evidence changes; a content write keeps the record's values of these."""


@dataclass
class _Account:
    """One lesson's record, its evidence in log order and the fold of the two."""

    record: Lesson | None
    entries: list[tuple[LogKey, RunEvidence]] = field(default_factory=list)
    runs: set[str] = field(default_factory=set)
    folded: Lesson | None = None
    last: LogKey | None = None
    """The key of the newest entry in ``folded``."""


class Ledger:
    """Records and evidence of the lessons that have evidence; the lesson is their fold."""

    def __init__(self, config: MemoryConfig = DEFAULT_CONFIG) -> None:
        self.config = config
        self._accounts: dict[str, _Account] = {}

    def __contains__(self, lesson_id: object) -> bool:
        return lesson_id in self._accounts

    def __len__(self) -> int:
        return len(self._accounts)

    def to_state(self) -> dict[str, Any]:
        """The ledger as JSON-able data (for a snapshot base): each account's record and evidence, with their keys."""
        return {
            lesson_id: {
                "record": a.record.model_dump(mode="json") if a.record is not None else None,
                "entries": [[list(key), ev.model_dump(mode="json")] for key, ev in a.entries],
            }
            for lesson_id, a in self._accounts.items()
        }

    @classmethod
    def from_state(cls, data: Any, config: MemoryConfig = DEFAULT_CONFIG) -> "Ledger":
        """A ledger saved with ``to_state`` (its folds are refolded when evidence next arrives; the table holds them).

        Raises:
            ValueError, KeyError, TypeError: ``data`` is not a saved ledger (the caller reads from Chroma instead).
        """
        if not isinstance(data, dict):
            raise ValueError("a saved ledger is a JSON object")
        ledger = cls(config)
        for lesson_id, saved in data.items():
            record = Lesson.model_validate(saved["record"]) if saved["record"] is not None else None
            entries: list[tuple[LogKey, RunEvidence]] = []
            for key, ev in saved["entries"]:
                run_seq, ts, writer, n = key
                entries.append(((int(run_seq), float(ts), str(writer), int(n)), RunEvidence.model_validate(ev)))
            ledger._accounts[str(lesson_id)] = _Account(record=record, entries=entries, runs={ev.run_id for _, ev in entries})
        return ledger

    def knows(self, lesson_id: str, run_id: str) -> bool:
        """Whether the evidence of run ``run_id`` about lesson ``lesson_id`` is already folded in."""
        account = self._accounts.get(lesson_id)
        return account is not None and run_id in account.runs

    def evidence(self, lesson_id: str) -> list[RunEvidence]:
        """The lesson's evidence in log order."""
        account = self._accounts.get(lesson_id)
        return [ev for _, ev in account.entries] if account else []

    def record_of(self, lesson: Lesson) -> Lesson:
        """``lesson``'s content with its record's counters: what a content write stores (no evidence in it)."""
        account = self._accounts.get(lesson.id)
        if account is None or account.record is None:
            return lesson
        return lesson.model_copy(update={k: getattr(account.record, k) for k in FOLDED_FIELDS})

    def set_record(self, record: Lesson) -> Lesson:
        """A stored record arrived (written here or read back): the lesson is its fold with the evidence."""
        account = self._accounts.get(record.id)
        if account is None:
            return record
        account.record = record
        self._refold(account)
        assert account.folded is not None
        return account.folded

    def add(
        self, entries: Iterable[tuple[LogKey, RunEvidence]], *, current: Callable[[str], Lesson | None]
    ) -> dict[str, Lesson]:
        """Fold new evidence in; returns the lessons it changed (their new fold), by id.

        ``current(id)`` gives a lesson without evidence yet (its record). Evidence about a
        lesson no record of which has arrived is kept and folded when it does. A second
        entry for the same (lesson, run) is a retried write and is ignored.
        """
        touched: dict[str, bool] = {}
        for key, ev in sorted(entries, key=lambda e: e[0]):
            account = self._accounts.get(ev.lesson_id)
            if account is None:
                account = self._accounts[ev.lesson_id] = _Account(record=current(ev.lesson_id))
            if ev.run_id in account.runs:
                continue
            account.runs.add(ev.run_id)
            at_end = not account.entries or account.entries[-1][0] < key
            bisect.insort(account.entries, (key, ev), key=lambda e: e[0])
            touched[ev.lesson_id] = touched.get(ev.lesson_id, True) and at_end
        changed: dict[str, Lesson] = {}
        for lesson_id, appended_only in touched.items():
            account = self._accounts[lesson_id]
            if account.record is None:
                continue
            if appended_only and account.folded is not None and account.last is not None:
                # The common case: only newer evidence, so fold on from the last fold.
                start = bisect.bisect_right(account.entries, account.last, key=lambda e: e[0])
                self._fold_on(account, account.folded, account.entries[start:])
            else:
                self._refold(account)
            assert account.folded is not None
            changed[lesson_id] = account.folded
        return changed

    def _refold(self, account: _Account) -> None:
        assert account.record is not None
        account.last = None
        self._fold_on(account, account.record, account.entries)

    def _fold_on(self, account: _Account, lesson: Lesson, entries: Iterable[tuple[LogKey, RunEvidence]]) -> None:
        for key, ev in entries:
            lesson = apply_evidence(lesson, ev, self.config)
            account.last = key
        account.folded = lesson


def fold_all(records: Mapping[str, Lesson], entries: Iterable[tuple[LogKey, RunEvidence]], config: MemoryConfig) -> dict[str, Lesson]:
    """Every lesson of ``records`` with ``entries`` folded over it, from scratch (the reference a memory's view must equal)."""
    ledger = Ledger(config)
    out = dict(records)
    out.update(ledger.add(entries, current=records.get))
    return out


__all__ = ["FOLDED_FIELDS", "Ledger", "LogKey", "fold_all"]
