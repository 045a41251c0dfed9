"""Ledger: stored records plus the run evidence folded over them (design.md §6).

A record's counters are never read, changed and written back to the store, where two
writers would overwrite each other. The store keeps each record (its content and the
counters it was created with) and an append-only log of evidence: what each run said
about it, keyed by (record, run). What every surface reads is the fold of the evidence
over the record, in Lamport order (``LogKey``), with the kind's fold function
(``FoldSpec``): the same function ``end_run`` judges with, so a memory that folds
another writer's evidence reaches the record that writer reached, and every memory
that has read the same evidence holds the same record.

Five kinds fold this way: lessons (``RunEvidence``: stats, status, merged sets),
episodes (``EpisodeEvidence``: sightings and links), skills (``SkillEvidence``:
outcomes), facts (``FactEvidence``: their sources, a grow-only set their states settle
from) and entities (``EntityEvidence``: aliases).
Only records with evidence are held here; any other record is its own fold.

Example:
    >>> from langmem_plus.records import Lesson, RunEvidence
    >>> rec = Lesson(id="l1", namespace=("ns",), rule_text="WRONG: a -> CORRECT: b")
    >>> ledger = Ledger(LESSON_FOLD)
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
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from langmem_plus.config import DEFAULT_CONFIG, MemoryConfig
from langmem_plus.learning.episodes import EPISODE_COUNTERS, apply_episode_evidence
from langmem_plus.learning.lifecycle import apply_evidence
from langmem_plus.learning.skills import apply_skill_evidence
from langmem_plus.memory_types.beliefs import add_entity_alias, add_fact_evidence
from langmem_plus.records import (
    Entity,
    EntityEvidence,
    Episode,
    EpisodeEvidence,
    Fact,
    FactEvidence,
    Lesson,
    RunEvidence,
    RunFinding,
    Skill,
    SkillEvidence,
    with_fields,
)

R = TypeVar("R", bound=BaseModel)
E = TypeVar("E", bound=RunFinding)

LogKey = tuple[int, float, str, int]
"""An evidence entry's place in the fold: (run seq, ts, writer, n). Run seq is a Lamport clock, so a run's
evidence folds after the evidence of every run its writer knew of; the shared log's (ts, writer, n) breaks ties."""


@dataclass(frozen=True)
class FoldSpec(Generic[R, E]):
    """How one kind of record folds its evidence."""

    kind: str
    """The store kind of the records (``lessons``, ``episodes``, ``skills``)."""
    log_key: str
    """The key a shared-log entry holds this kind's evidence under."""
    record: type[R]
    evidence: type[E]
    subject: Callable[[E], str]
    """The id of the record a piece of evidence is about."""
    id_of: Callable[[R], str]
    """A record's id."""
    apply: Callable[[R, E, MemoryConfig], R]
    """One run's evidence folded into a record; pure."""
    folded: tuple[str, ...]
    """The fields evidence changes: a content write keeps the stored record's values of these."""
    restate: Callable[[list[tuple[LogKey, E]]], list[tuple[LogKey, E]]] | None = None
    """The entries as the fold reads them, when some restate others (a corrected verdict); None: as logged."""


def restate_corrections(entries: list[tuple[LogKey, RunEvidence]]) -> list[tuple[LogKey, RunEvidence]]:
    """Lesson evidence with its corrections read in: the newest correction of a run (``RunEvidence.corrects``)
    restates that run's utility, pass, parts and conflict losses (a contest decided under the denied feedback) in
    the run's own place; the correction folds nothing itself.

    Example:
        >>> first = RunEvidence(lesson_id="l", run_id="r1", run_seq=1, at=1.0, shown=1, utility=0.9, passed=True)
        >>> fix = RunEvidence(lesson_id="l", run_id="r1~c1", run_seq=2, at=2.0, corrects="r1", utility=-1.0)
        >>> [(ev.run_id, ev.utility, ev.passed) for _, ev in restate_corrections([((1, 1.0, "w", 1), first), ((2, 2.0, "w", 2), fix)])]
        [('r1', -1.0, False)]
    """
    latest = {ev.corrects: ev for _, ev in entries if ev.corrects}
    if not latest:
        return entries
    out: list[tuple[LogKey, RunEvidence]] = []
    for key, ev in entries:
        if ev.corrects:
            continue
        fix = latest.get(ev.run_id)
        out.append((key, ev if fix is None else ev.model_copy(update={
            "utility": fix.utility, "passed": fix.passed, "parts": fix.parts,
            "conflict_losses": fix.conflict_losses, "lost_to": fix.lost_to,
        })))
    return out


LESSON_FOLD: FoldSpec[Lesson, RunEvidence] = FoldSpec(
    "lessons", "evidence", Lesson, RunEvidence, lambda e: e.lesson_id, lambda r: r.id, lambda r, e, c: apply_evidence(r, e, c),
    ("stats", "status", "reliability", "last_activated_at"), restate_corrections,
)
EPISODE_FOLD: FoldSpec[Episode, EpisodeEvidence] = FoldSpec(
    "episodes", "episode_evidence", Episode, EpisodeEvidence, lambda e: e.episode_id, lambda r: r.episode_id,
    apply_episode_evidence,
    EPISODE_COUNTERS,
)
SKILL_FOLD: FoldSpec[Skill, SkillEvidence] = FoldSpec(
    "skills", "skill_evidence", Skill, SkillEvidence, lambda e: e.skill_id, lambda r: r.id, apply_skill_evidence, ("stats",),
)
FACT_FOLD: FoldSpec[Fact, FactEvidence] = FoldSpec(
    "facts", "fact_evidence", Fact, FactEvidence, lambda e: e.fact_id, lambda r: r.id, add_fact_evidence, (),
)
ENTITY_FOLD: FoldSpec[Entity, EntityEvidence] = FoldSpec(
    "entities", "entity_evidence", Entity, EntityEvidence, lambda e: e.entity_id, lambda r: r.id, add_entity_alias, (),
)
FOLDS: tuple[FoldSpec[Any, Any], ...] = (LESSON_FOLD, EPISODE_FOLD, SKILL_FOLD, FACT_FOLD, ENTITY_FOLD)


@dataclass
class _Account(Generic[R, E]):
    """One record, its evidence in log order and the fold of the two."""

    record: R | None
    entries: list[tuple[LogKey, E]] = field(default_factory=list)
    runs: set[str] = field(default_factory=set)
    folded: R | None = None
    last: LogKey | None = None
    """The key of the newest entry in ``folded``."""


class Ledger(Generic[R, E]):
    """Records and evidence of one kind's records that have evidence; the record every surface reads is their fold."""

    def __init__(self, spec: FoldSpec[R, E], config: MemoryConfig = DEFAULT_CONFIG) -> None:
        self.spec, self.config = spec, config
        self._accounts: dict[str, _Account[R, E]] = {}

    def __contains__(self, record_id: object) -> bool:
        return record_id in self._accounts

    def __len__(self) -> int:
        return len(self._accounts)

    def to_state(self) -> dict[str, Any]:
        """The ledger as JSON-able data (for a snapshot base): each account's record and evidence, with their keys."""
        return {
            record_id: {
                "record": a.record.model_dump(mode="json") if a.record is not None else None,
                "entries": [[list(key), ev.model_dump(mode="json")] for key, ev in a.entries],
            }
            for record_id, a in self._accounts.items()
        }

    @classmethod
    def from_state(cls, spec: FoldSpec[R, E], data: Any, config: MemoryConfig = DEFAULT_CONFIG) -> "Ledger[R, E]":
        """A ledger saved with ``to_state`` (its folds are refolded when evidence next arrives; the table holds them).

        Raises:
            ValueError, KeyError, TypeError: ``data`` is not a saved ledger (the caller reads from Chroma instead).
        """
        if not isinstance(data, dict):
            raise ValueError("a saved ledger is a JSON object")
        ledger = cls(spec, config)
        for record_id, saved in data.items():
            record = spec.record.model_validate(saved["record"]) if saved["record"] is not None else None
            entries: list[tuple[LogKey, E]] = []
            for key, ev in saved["entries"]:
                run_seq, ts, writer, n = key
                entries.append(((int(run_seq), float(ts), str(writer), int(n)), spec.evidence.model_validate(ev)))
            ledger._accounts[str(record_id)] = _Account(record=record, entries=entries, runs={ev.run_id for _, ev in entries})
        return ledger

    def knows(self, record_id: str, run_id: str) -> bool:
        """Whether the evidence of run ``run_id`` about record ``record_id`` is already folded in."""
        account = self._accounts.get(record_id)
        return account is not None and run_id in account.runs

    def about_run(self, run_id: str) -> list[tuple[str, E]]:
        """(record id, its evidence) of every record with evidence from run ``run_id``, as folded (corrected)."""
        out: list[tuple[str, E]] = []
        for record_id, account in self._accounts.items():
            if run_id not in account.runs:
                continue
            out += [(record_id, ev) for _, ev in self._read(account) if ev.run_id == run_id]
        return out

    def corrections_of(self, record_id: str, run_id: str) -> int:
        """How many corrections of run ``run_id``'s evidence about ``record_id`` are in the log."""
        account = self._accounts.get(record_id)
        return sum(1 for _, ev in account.entries if getattr(ev, "corrects", None) == run_id) if account else 0

    def evidence(self, record_id: str) -> list[E]:
        """The record's evidence in log order."""
        account = self._accounts.get(record_id)
        return [ev for _, ev in account.entries] if account else []

    def record_of(self, folded: R, fallback: R | None = None) -> R:
        """``folded``'s content with the stored record's counters: what a content write stores (no evidence in it).

        The stored record is the one this ledger holds, else ``fallback`` (the caller's
        table holds a record without evidence as it is stored); with neither, ``folded``.
        """
        account = self._accounts.get(self.spec.id_of(folded))
        record = account.record if account is not None and account.record is not None else fallback
        return folded if record is None else with_fields(folded, record, self.spec.folded)

    def set_record(self, record: R) -> R:
        """A stored record arrived (written here or read back): returns its fold with the evidence."""
        account = self._accounts.get(self.spec.id_of(record))
        if account is None:
            return record
        if account.folded is None or (account.record is not record and account.record != record):
            account.record = record  # new, or the fold is not computed yet (a saved ledger); else read back unchanged
            self._refold(account)
        assert account.folded is not None
        return account.folded

    def add(self, entries: Iterable[tuple[LogKey, E]], *, current: Callable[[str], R | None]) -> dict[str, R]:
        """Fold new evidence in; returns the records it changed (their new fold), by id.

        ``current(id)`` gives a record without evidence yet (as stored). Evidence about a
        record that has not arrived is kept and folded when it does (``set_record``). A
        second entry for the same (record, run) is a retried write and is ignored.
        """
        subject = self.spec.subject
        touched: dict[str, bool] = {}
        for key, ev in sorted(entries, key=lambda e: e[0]):
            record_id = subject(ev)
            account = self._accounts.get(record_id)
            if account is None:
                account = self._accounts[record_id] = _Account(record=current(record_id))
            if ev.run_id in account.runs:
                continue
            account.runs.add(ev.run_id)
            at_end = (not account.entries or account.entries[-1][0] < key) and not getattr(ev, "corrects", None)
            bisect.insort(account.entries, (key, ev), key=lambda e: e[0])
            touched[record_id] = touched.get(record_id, True) and at_end
        changed: dict[str, R] = {}
        for record_id, appended_only in touched.items():
            account = self._accounts[record_id]
            if account.record is None:
                continue
            if appended_only and account.folded is not None and account.last is not None:
                # The common case: only newer evidence, so fold on from the last fold.
                start = bisect.bisect_right(account.entries, account.last, key=lambda e: e[0])
                self._fold_on(account, account.folded, account.entries[start:])
            else:
                self._refold(account)
            assert account.folded is not None
            changed[record_id] = account.folded
        return changed

    def _refold(self, account: _Account[R, E]) -> None:
        assert account.record is not None
        account.last = None
        self._fold_on(account, account.record, self._read(account))
        if account.entries:
            account.last = account.entries[-1][0]  # a correction folds nothing itself, but it is in the fold

    def _read(self, account: _Account[R, E]) -> list[tuple[LogKey, E]]:
        """An account's entries as the fold reads them (``FoldSpec.restate``)."""
        return self.spec.restate(account.entries) if self.spec.restate is not None else account.entries

    def _fold_on(self, account: _Account[R, E], record: R, entries: Iterable[tuple[LogKey, E]]) -> None:
        apply, config = self.spec.apply, self.config
        for key, ev in entries:
            record = apply(record, ev, config)
            account.last = key
        account.folded = record


def fold_all(records: Mapping[str, Lesson], entries: Iterable[tuple[LogKey, RunEvidence]], config: MemoryConfig) -> dict[str, Lesson]:
    """Every lesson of ``records`` with ``entries`` folded over it, from scratch (the reference a memory's view must equal)."""
    ledger = Ledger(LESSON_FOLD, config)
    out = dict(records)
    out.update(ledger.add(entries, current=records.get))
    return out


__all__ = [
    "ENTITY_FOLD", "EPISODE_FOLD", "FACT_FOLD", "FOLDS", "LESSON_FOLD", "SKILL_FOLD", "FoldSpec", "Ledger", "LogKey", "fold_all",
    "restate_corrections",
]
