"""End-of-run lesson work read from indexes, so it follows the run's change.

A full scan answers three questions at ``end_run``: which stored lesson a new candidate
duplicates, which it conflicts with, and which unused lessons the sweep changes. Each
has a small exact superset an index can name:

* a duplicate shares a trigger with the candidate or is within ``dedup_max_hamming``
  SimHash bits of it: the fingerprint index and the SimHash bands
  (``store.lesson_index.plan_bands``) name every such lesson;
* a conflict shares a trigger: the fingerprint index;
* the sweep changes a lesson only once its evidence decides (any run) or once it has
  gone ``archive_unused_runs`` runs unused (``sweep_due``): the due-run buckets.

``IndexedPool`` hands ``lifecycle.integrate_candidates`` those supersets, in the order
the full scan meets them, so every decision is the scan's (tested against it). This
module computes the figures the index keeps (``index_entries``); the memory writes them.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping, Sequence
from typing import Protocol

from langmem_plus._text import stable_hash
from langmem_plus.config import MemoryConfig, config_value
from langmem_plus.learning.dedup import lesson_hashes
from langmem_plus.learning.utility import decide_status
from langmem_plus.records import Lesson
from langmem_plus.store.graph import LessonGraph
from langmem_plus.store.lesson_index import DUE_NOW, LessonIndex


class LessonLookup(Protocol):
    """What the indexed pool asks of a store's indexes (``LessonIndex`` plus the graph's fingerprints)."""

    def near(self, simhash: int) -> Iterable[str]:
        """Ids of every stored lesson within ``dedup_max_hamming`` bits of ``simhash`` (more do no harm)."""

    def triggered_by(self, fingerprint_id: str) -> Iterable[str]:
        """Ids of the stored lessons with this trigger."""

    def in_order(self, ids: Iterable[str]) -> list[str]:
        """``ids`` in the stored table's order; ids it does not hold last, in the order given."""

    def hash_of(self, lesson_id: str) -> int | None:
        """A stored lesson's SimHash as dedup reads it (None when not indexed)."""


def sweep_due(lesson: Lesson, config: MemoryConfig) -> int | None:
    """The first run at which ``sweep_unused`` would change ``lesson``: ``DUE_NOW``, a run seq, or None.

    ``decide_status`` reads ``runs_since_activation`` only in its archive rule
    (``>= archive_unused_runs``), so its answer is one value below that many runs and
    another from there on: asked at 0 runs and at ``archive_unused_runs``, it tells
    whether the next sweep changes the lesson whatever the run (``DUE_NOW``), from run
    ``last activation (or creation) + archive_unused_runs`` on, or never (None). The
    answer holds until the lesson is written again (tested against ``decide_status`` at
    every run).
    """
    if lesson.status in ("archived", "suppressed"):
        return None  # the sweep skips them
    if decide_status(lesson, config, runs_since_activation=0)[0] != lesson.status:
        return DUE_NOW
    if decide_status(lesson, config, runs_since_activation=config.lifecycle.archive_unused_runs)[0] == lesson.status:
        return None
    last = lesson.stats.last_activated_run_seq
    return (last if last is not None else lesson.stats.created_run_seq) + config.lifecycle.archive_unused_runs


INDEX_FIELDS = (
    "simhash_bits",
    "archive_max_reliability",
    "archive_unused_runs",
    "conflict_losses_to_suppress",
    "promote_max_pass_drop",
    "promote_min_runs",
    "promote_min_utility",
    "suppress_max_utility",
    "suppress_min_activations",
)
"""The config fields the indexed figures follow: the SimHash width and every threshold ``decide_status`` reads."""


def index_key(config: MemoryConfig) -> str:
    """Names the figures ``index_entries`` computes under ``config``: a saved index is reused only under the same key."""
    return stable_hash("lesson-index-1", *(f"{f}={config_value(config, f)!r}" for f in INDEX_FIELDS))


def index_entries(lessons: Sequence[Lesson], config: MemoryConfig) -> list[tuple[str, int, int | None]]:
    """(status, SimHash, due run) of each lesson, as ``LessonIndex.put`` takes them (hashes in one batch)."""
    hashes = lesson_hashes(lessons, config.lifecycle.simhash_bits)
    return [(lesson.status, h, sweep_due(lesson, config)) for lesson, h in zip(lessons, hashes)]


class StoreLookup:
    """``LessonLookup`` over a memory's ``LessonIndex`` and its lesson graph's fingerprint index."""

    def __init__(self, index: LessonIndex, graph: LessonGraph) -> None:
        self.index, self.graph = index, graph

    def near(self, simhash: int) -> list[str]:
        """Every indexed lesson within ``dedup_max_hamming`` bits of ``simhash``, in table order."""
        return self.index.near(simhash)

    def triggered_by(self, fingerprint_id: str) -> set[str]:
        """The lessons with this trigger (the graph's fingerprint index)."""
        return self.graph.lessons_for_fingerprint(fingerprint_id)

    def in_order(self, ids: Iterable[str]) -> list[str]:
        """``ids`` in table order; unknown ones last."""
        return self.index.rows_in_order(ids)

    def hash_of(self, lesson_id: str) -> int | None:
        """The indexed SimHash."""
        return self.index.hash_of(lesson_id)

    def covered(self) -> Container[str]:
        """Fingerprint ids some lesson has as a trigger (for ``consolidate``), answered by the graph."""
        return _Covered(self.graph)


class _Covered:
    def __init__(self, graph: LessonGraph) -> None:
        self._graph = graph

    def __contains__(self, fingerprint_id: object) -> bool:
        return isinstance(fingerprint_id, str) and bool(self._graph.lessons_for_fingerprint(fingerprint_id))


class IndexedPool:
    """The lessons ``integrate_candidates`` reads and writes, without copying the store.

    Reads fall through to ``existing``; writes stay here (and are returned as upserts by
    the caller). ``dup_pool`` and ``conflict_pool`` list only what the indexes name, plus
    every lesson written here (their indexed hash and triggers may be stale), in the
    order ``dict(existing)`` followed by the additions would list them.
    """

    def __init__(self, existing: Mapping[str, Lesson], lookup: LessonLookup, config: MemoryConfig) -> None:
        self._existing, self._lookup, self._bits = existing, lookup, config.lifecycle.simhash_bits
        self._local: dict[str, Lesson] = {}
        self._added: list[str] = []
        """Ids new to the pool, in the order they joined it."""

    def get(self, lesson_id: str) -> Lesson | None:
        """The pool's lesson with this id, or None."""
        found = self._local.get(lesson_id)
        return found if found is not None else self._existing.get(lesson_id)

    def put(self, lesson: Lesson) -> None:
        """Put a lesson into the pool (a new id joins at the end, as in a dict)."""
        if lesson.id not in self._local and lesson.id not in self._existing:
            self._added.append(lesson.id)
        self._local[lesson.id] = lesson

    def hash_of(self, lesson: Lesson) -> int:
        """A pool lesson's SimHash: the indexed one for a stored lesson not written here."""
        if lesson.id not in self._local:
            found = self._lookup.hash_of(lesson.id)
            if found is not None:
                return found
        return lesson_hashes([lesson], self._bits)[0]

    def dup_pool(self, cand: Lesson) -> list[Lesson]:
        """Every pool lesson ``find_duplicate`` could pick for ``cand``, in pool order."""
        mine = lesson_hashes([cand], self._bits)[0]
        return self._ordered({*self._lookup.near(mine), *self._sharing(cand)})

    def conflict_pool(self, cand: Lesson) -> list[Lesson]:
        """Every pool lesson that shares a trigger with ``cand`` (``find_conflicts`` needs one), in pool order."""
        return self._ordered(set(self._sharing(cand)))

    def _sharing(self, cand: Lesson) -> Iterable[str]:
        for fp in cand.triggers:
            yield from self._lookup.triggered_by(fp)

    def _ordered(self, ids: set[str]) -> list[Lesson]:
        ids |= self._local.keys()
        added = set(self._added)
        order = self._lookup.in_order(i for i in ids if i not in added) + [i for i in self._added if i in ids]
        return [lesson for lesson in map(self.get, order) if lesson is not None]


__all__ = ["INDEX_FIELDS", "IndexedPool", "LessonLookup", "StoreLookup", "index_entries", "index_key", "sweep_due"]
