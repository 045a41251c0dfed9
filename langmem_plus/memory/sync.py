"""StoreSync: keeps a MemoryView in step with Chroma, the local snapshot and the other writers.

Three things, one idea (the view is what the store holds):

* **Writes.** Every tracked write (lessons, links, skills, runs, episodes) reaches the view
  (``write``) and the snapshot journal; a block of writes shares one generation token
  (``write_group``) and is then announced on the namespace's shared log, with the run
  evidence the block produced, in one append (``publish``).
* **Snapshot.** An open reads the local snapshot when it reflects Chroma's generation
  (its base holds the view, the run-evidence ledger and the shared-log heads it
  reflects), else everything from Chroma; ``write_base`` saves a new base.
* **Other writers.** ``refresh`` reads what others appended since the last look: the
  records they announced (read by id) and their run evidence (folded). The cost is the
  size of the change, not of the store (``store.journal.SharedLog``).
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from pydantic import BaseModel

from langmem_plus._gc import gc_paused
from langmem_plus.errors import InvalidRecord, StoreUnavailable
from langmem_plus.learning.ledger import FOLDS, Ledger
from langmem_plus.memory.view import MemoryView
from langmem_plus.records import RunFinding
from langmem_plus.store.chroma import ChromaStore
from langmem_plus.store.journal import Entry, SharedLog
from langmem_plus.store.mapping import KIND_SPECS
from langmem_plus.store.segments import RecordColumns
from langmem_plus.store.snapshot import Loaded, SnapshotDir

logger = logging.getLogger(__name__)

LOG_NAME = "evidence"
"""The shared log of run evidence and write announcements (``store.journal.SharedLog``)."""
_LOG_KEYS: dict[type[RunFinding], str] = {spec.evidence: spec.log_key for spec in FOLDS}
"""The shared-log key of each kind of evidence."""
_SAVED_AS = {"lessons": "accounts", "episodes": "episode_accounts", "skills": "skill_accounts", "facts": "fact_accounts",
             "entities": "entity_accounts"}
"""The key each kind's ledger is saved under in a snapshot base."""
Writes = Sequence[tuple[str, str, list[tuple[str, str]]]]
"""Committed writes: (generation token, kind, [(id, record JSON), ...])."""


class StoreSync:
    """The view's link to Chroma, the snapshot folder and the shared log of one namespace."""

    def __init__(
        self,
        store: ChromaStore,
        view: MemoryView,
        *,
        snapshot: SnapshotDir | None,
        lock: threading.RLock,
        clock: Callable[[], float],
    ) -> None:
        self.store, self.view, self.snapshot, self.lock, self.clock = store, view, snapshot, lock, clock
        self.generation: str | None = None
        """The token of the latest write this view reflects (``ChromaStore.generation``)."""
        self.log = SharedLog(store, LOG_NAME, clock=clock)
        """Run evidence and write announcements, shared with every other writer of the namespace."""
        self.snapshot_heads: dict[str, int] | None = None
        """The shared-log heads the opened snapshot's base reflected (None: opened from Chroma)."""
        self.log_since_base = 0
        """Shared-log entries folded since the snapshot base: they count toward a rebase like journal records."""
        self.refreshed_at = -math.inf
        self._journal_group: list[tuple[str, str, list[tuple[str, str]]]] | None = None
        """Journal entries of the open ``write_group``, written when it ends."""

    # ------------------------------------------------------------------ opening
    def open_view(self) -> bool:
        """Fill the view: from the snapshot when it is current, else from Chroma; then catch up with the log.

        Returns whether the snapshot was used.
        """
        heads_before = self.log.heads()  # before the state is read: later announcements may not be in it
        loaded = self._load_snapshot()
        if loaded is None:
            self.generation = self.store.generation()  # read first: a racing write makes it stale, never wrong
            self.view.load_store(self.store)
        if self.view.index is None:
            self.view.index = self.view.build_index()
        self._catch_up(heads_before if loaded is None else (self.snapshot_heads or {}), from_snapshot=loaded is not None)
        return loaded is not None

    def _load_snapshot(self) -> Loaded | None:
        """The view from the local snapshot, if it matches Chroma's generation (run with the collector paused)."""
        if self.snapshot is None:
            return None
        generation = self.store.generation()
        loaded = self.snapshot.load(generation)
        if loaded is None:
            return None
        try:
            if loaded.ledger is None:  # the saved lessons are folds: without their evidence they cannot be trusted
                raise ValueError("the base has no run-evidence ledger")
            saved = json.loads(loaded.ledger)
            cfg = self.view.config
            # "accounts" holds the lessons' (the name predates the other kinds); a base older than a kind's ledger
            # had no evidence of that kind to save.
            ledgers = {spec.kind: Ledger.from_state(spec, saved.get(_SAVED_AS[spec.kind], {}), cfg) for spec in FOLDS}
            self.snapshot_heads = {str(w): int(n) for w, n in saved["heads"].items()}
            self.view.load_snapshot(loaded, ledgers)
            if not loaded.has_episodes:  # an older base: its episodes are Chroma's (the next base holds them)
                self.view.load_episodes(self.store)
        except (ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:  # ValidationError is a ValueError
            logger.warning("langmem_plus: snapshot %s is damaged (%s); reading from Chroma", self.snapshot.path, exc)
            self.view.index = None
            self.snapshot_heads = None
            return None
        self.generation = generation
        return loaded

    def _catch_up(self, heads: dict[str, int], *, from_snapshot: bool) -> None:
        """At open: read what the view does not reflect yet from the shared log.

        From a snapshot, the view (its ledger included) reflects the log up to the heads
        saved with the base: only the entries past them are read. From Chroma, the records
        are all there but not the evidence: every entry is read, and the records of
        announcements past ``heads`` (the heads read before the records) are fetched.
        """
        if from_snapshot:
            self.log.skip_to(heads)
            entries = self.log.read_new()
            self._apply_announced(entries)
        else:
            entries = self.log.read_all()
            self._apply_announced([e for e in entries if e.n > heads.get(e.writer, 0)])
        self.view.fold_evidence(entries)
        self.log_since_base += len(entries)

    # ------------------------------------------------------------------ other writers
    def refresh(self) -> int:
        """Read what other writers appended since the last look: their records and run evidence; the entries read.

        Raises:
            StoreUnavailable: Chroma cannot be read.
        """
        with self.lock:
            self.refreshed_at = self.clock()
            entries = self.log.read_new()
            if entries:
                self._apply_announced(entries)
                self.view.fold_evidence(entries)
                self.log_since_base += len(entries)
            return len(entries)

    def _apply_announced(self, entries: Sequence[Entry]) -> None:
        """Read the records named by ``wrote`` announcements from Chroma and fold them into the view."""
        wanted: dict[str, set[str]] = {}
        for e in entries:
            wrote = e.data.get("wrote")
            if isinstance(wrote, dict):
                for kind, ids in wrote.items():
                    if kind in KIND_SPECS and isinstance(ids, list):
                        wanted.setdefault(kind, set()).update(str(i) for i in ids)
        for kind, ids in wanted.items():
            records = self.store.get(kind, sorted(ids))
            if records:
                self.view.apply(kind, records, [r.model_dump_json() for r in records], None)

    # ------------------------------------------------------------------ writes
    def write(self, kind: str, records: Sequence[BaseModel]) -> None:
        """Store records, then fold what was stored into the view, the snapshot journal and the shared log."""
        with self.lock:
            written = self.store.upsert(kind, records)
            if written is None:
                return
            self.view.apply(kind, written.records, written.raws, written.vectors)
            token = written.token
            if token is None:
                return
            self.generation = token
            id_of = KIND_SPECS[kind].id_of
            entries = [(id_of(r), raw) for r, raw in zip(written.records, written.raws)]
            if self._journal_group is not None and self.store.in_write_group():
                self._journal_group.append((token, kind, entries))  # journalled and announced when the group ends
            else:
                self._journal([(token, kind, entries)])
                self._publish([(token, kind, entries)], [])

    def _journal(self, writes: Writes) -> None:
        """Append committed writes to the snapshot journal, one end line per token."""
        if self.snapshot is None:
            return
        by_token: dict[str, list[tuple[str, list[tuple[str, str]]]]] = {}
        for token, kind, entries in writes:
            by_token.setdefault(token, []).append((kind, entries))
        try:
            for token, group in by_token.items():
                self.snapshot.append_group(token, group)
        except OSError as exc:  # the token check makes the next open read from Chroma
            logger.warning("langmem_plus: snapshot journal write failed (%s)", exc)

    @contextlib.contextmanager
    def write_group(self) -> Iterator[list[RunFinding]]:
        """The block's tracked writes share one generation token (``ChromaStore.write_group``), journalled after it.

        One Chroma call for the token instead of one per write. The journal gets the
        writes only once the block is over (also when it fails: what Chroma took is
        journalled), so a crash inside leaves Chroma's token ahead and the next open exact.
        Then the writes are announced on the shared log, with the run evidence the block
        added to the list it yields, in one append (``publish``); the evidence is folded
        into the view only once the log holds it, so what this memory shows another can read.
        """
        evidence: list[RunFinding] = []
        if self._journal_group is not None:
            yield evidence
            if evidence:
                raise InvalidRecord("run evidence belongs to the outermost write group")
            return
        self._journal_group = []
        done = False
        try:
            with self.store.write_group():
                yield evidence
            done = True
        finally:
            pending, self._journal_group = self._journal_group, None
            self._journal(pending)
            if done or pending:
                self._publish(pending, evidence if done else [])

    def publish_evidence(self, evidence: Sequence[RunFinding]) -> None:
        """Append evidence given outside a run's write group (a fact learned directly) and fold it in."""
        with self.lock:
            self._publish([], evidence)

    def _publish(self, writes: Writes, evidence: Sequence[RunFinding]) -> None:
        """Announce committed writes (their ids) and append run evidence on the shared log, then fold the evidence.

        Records first, announcement after: a reader that sees the announcement finds the
        records. A crash in between leaves records nobody was told of, whose write never
        returned; a full open still reads them from Chroma.
        """
        wrote: dict[str, list[str]] = {}
        for _token, kind, entries in writes:
            wrote.setdefault(kind, []).extend(i for i, _ in entries)
        records: list[dict[str, Any]] = [{"wrote": wrote}] if wrote else []
        records += [{_LOG_KEYS[type(ev)]: ev.model_dump(mode="json")} for ev in evidence]
        if not records:
            return
        appended = self.log.append_entries(records)
        self.view.fold_evidence(appended)
        self.log_since_base += len(appended)

    # ------------------------------------------------------------------ snapshot bases
    def write_base(self) -> None:
        """Save the whole view as a new snapshot base; a failure only costs the next open its speed."""
        if self.snapshot is None:
            return
        view = self.view
        graph_state = view.graph.state_later()  # its CSR arrays are sorted on a thread while the records are placed
        lesson_ids = list(view.lessons)
        # Each record's text or its row in the loaded base: what the journal or that base holds is pointed at.
        records: dict[str, RecordColumns | Iterable[tuple[str, str]]] = {
            kind: RecordColumns(ids, table.sources(ids))
            for kind, table, ids in (("lessons", view.lessons, lesson_ids), ("links", view.links, list(view.links)),
                                     ("skills", view.skills, list(view.skills)), ("episodes", view.episodes, list(view.episodes)))
        }
        records["runs"] = ((r.run_id, r.model_dump_json()) for r in view.runs)
        try:
            self.snapshot.write_base(
                self.generation, records, graph_state, view.base_vectors(self.store), view.index_state(lesson_ids),
                ledger=json.dumps({
                    "heads": self.log.seen(),
                    **{_SAVED_AS[k]: ledger.to_state() for k, ledger in view.ledgers().items()},
                }),
            )
            self.log_since_base = 0
        except (OSError, StoreUnavailable) as exc:
            logger.warning("langmem_plus: could not write the snapshot %s (%s); opens read from Chroma", self.snapshot.path, exc)

    def rebase_if_long(self, share: float) -> None:
        """A new base when the journal and the log since the base exceed ``share`` of the stored records."""
        with self.lock:
            if self.snapshot is not None and not self.store.closed:
                if self.snapshot.journal_records + self.log_since_base > share * self.view.stored_count():
                    with gc_paused():  # a full collection of a 100k-lesson heap (1.2-1.5 s) fell inside it
                        self.write_base()


__all__ = ["LOG_NAME", "StoreSync"]
