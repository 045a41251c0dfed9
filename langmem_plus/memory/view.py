"""MemoryView: one namespace's records as this process sees them, and the one place they change.

Lessons (each the fold of its run evidence over its stored record, ``learning.ledger``),
links, skills, runs and episodes, with what is derived from them: the lesson graph, the lesson
index, the lessons' relevance vectors, the episode index. ``apply`` folds written or read records in;
``fold_evidence`` folds run evidence in. Loading (from Chroma or a snapshot) fills a
fresh view; nothing here writes to the store.
"""

from __future__ import annotations

import bisect
import logging
import threading
from collections import ChainMap, Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel

from langmem_plus._text import stable_id
from langmem_plus.config import MemoryConfig
from langmem_plus.learning.episode_index import EpisodeIndex
from langmem_plus.learning.episodes import age_episode
from langmem_plus.learning.incremental import index_entries, index_key
from langmem_plus.learning.ledger import (
    ENTITY_FOLD,
    EPISODE_FOLD,
    FACT_FOLD,
    FOLDS,
    LESSON_FOLD,
    SKILL_FOLD,
    E,
    FoldSpec,
    Ledger,
    LogKey,
    R,
)
from langmem_plus.records import (
    LESSON_STATUSES,
    Entity,
    EntityEvidence,
    Episode,
    EpisodeEvidence,
    Fact,
    FactEvidence,
    Lesson,
    Link,
    Namespace,
    RunEvidence,
    RunFinding,
    RunRecord,
    Skill,
    SkillEvidence,
)
from langmem_plus.retrieval.call_guard import ToolForms
from langmem_plus.retrieval.vectors import VectorCache, rule_core
from langmem_plus.store.chroma import PAGE_SIZE, ChromaStore
from langmem_plus.store.columns import release_pages
from langmem_plus.store.graph import LessonGraph, tool_node
from langmem_plus.store.journal import Entry
from langmem_plus.store.lesson_index import LessonIndex
from langmem_plus.store.mapping import KIND_SPECS
from langmem_plus.store.snapshot import LessonVectors, Loaded, RecordTable, VectorRuns

logger = logging.getLogger(__name__)


def run_order(r: RunRecord) -> tuple[int, float, str]:
    """Runs in Lamport order: sequence number, then end time, then id (two writers may share a number)."""
    return (r.seq, r.ts, r.run_id)


def stored(store: ChromaStore, kind: str, cls: type[Any]) -> list[Any]:
    """Every record of ``kind`` in the store, typed."""
    return [r for r in store.all(kind) if isinstance(r, cls)]


class MemoryView:
    """The in-memory state of one namespace: tables, runs, graph, lesson index, ledger and vectors."""

    def __init__(self, store: ChromaStore, namespace: Namespace, config: MemoryConfig) -> None:
        self.namespace, self.config = namespace, config
        self.lesson_vectors = LessonVectors()
        self.vectors = VectorCache(
            store, config.storage.embedding_dim, capacity=config.retrieval.vector_cache_size, known=lambda ids: self.lesson_vectors.get_many(ids)
        )
        self.lessons: RecordTable[Lesson] = RecordTable(Lesson, namespace, keep_parsed=config.storage.parsed_lessons_max)
        """Lessons by id (folds of their evidence); parsed from the snapshot on first use."""
        self.links: RecordTable[Link] = RecordTable(Link, namespace)
        self.skills: RecordTable[Skill] = RecordTable(Skill, namespace)
        self.episodes: RecordTable[Episode] = RecordTable(Episode, namespace)
        """Stored episode records by id, as written (``episode`` folds their sightings and ages them when read)."""
        self.episode_index: EpisodeIndex | None = None
        self.episodes_version = 0
        """Bumped whenever what the episode index reflects may change (an episode written or read, a sighting, the
        runs): an index built off the lock is installed only if it did not move meanwhile (``offer_episode_index``)."""
        """What ``end_run``'s episode plan asks of ``episodes`` (``learning.episode_index``): built on first use
        (``indexed_episodes``), then kept in step by every write; None again whenever ``episodes`` is reloaded."""
        self.runs: list[RunRecord] = []
        """Stored runs in Lamport order (``run_order``)."""
        self.fp_runs: Counter[str] = Counter()
        """How many runs each fingerprint appeared in."""
        self.extras: dict[tuple[str, str, str], set[str]] = {}
        """Per (tool, plugin, key), the union of the string lists its runs' ``RunRecord.extras`` keep there."""
        self.graph = LessonGraph(rewrite_slack=config.storage.graph_rewrite_slack)
        self.call_forms: dict[str, ToolForms] = {}
        """Per tool, its lessons' WRONG forms for the call guard: built on a tool's first check, kept in step by every
        lesson written, emptied when the lessons are reloaded."""
        self.index: LessonIndex | None = None
        """Status counts, sweep due runs and SimHash bands of the lessons (``store.lesson_index``)."""
        self.ledger: Ledger[Lesson, RunEvidence]
        """Records and run evidence of the lessons that have evidence; ``lessons`` holds their fold."""
        self.episode_ledger: Ledger[Episode, EpisodeEvidence]
        """Records and sightings of the episodes seen again; ``episodes`` holds the records, folded as they are read."""
        self.skill_ledger: Ledger[Skill, SkillEvidence]
        """Records and outcomes of the skills executed again; ``skills`` holds their fold."""
        self.fact_ledger: Ledger[Fact, FactEvidence]
        """Facts' logged evidence; the semantic memory folds it over the facts it reads (``memory_types.semantic``)."""
        self.entity_ledger: Ledger[Entity, EntityEvidence]
        """Entities' logged aliases; the semantic memory folds them over the entities it reads."""
        self.set_ledgers({})
        self.facts_touched: set[str] = set()
        """Facts whose logged evidence changed since the semantic memory last looked (``FactLog.take_changed``)."""
        self.entities_touched: set[str] = set()
        """Entities whose logged aliases changed since the semantic memory last looked."""

    # ------------------------------------------------------------------ loading
    def load_store(self, store: ChromaStore) -> None:
        """Every lesson, link, skill, run and episode read from Chroma, and the graph rebuilt (no usable snapshot)."""
        ns = self.namespace
        self.index = None  # built from the lessons read here
        self.call_forms = {}
        self.set_ledgers({})
        self.lessons = RecordTable(Lesson, ns, keep_parsed=self.config.storage.parsed_lessons_max)
        self.links, self.skills = RecordTable(Link, ns), RecordTable(Skill, ns)
        for lesson in stored(store, "lessons", Lesson):
            self.lessons[lesson.id] = lesson
        for link in stored(store, "links", Link):
            self.links[link.id] = link
        for skill in stored(store, "skills", Skill):
            self.skills[skill.id] = skill
        self.load_episodes(store)
        self.graph = LessonGraph.from_records(
            self.lessons.values(), self.skills.values(), self.links.values(), rewrite_slack=self.config.storage.graph_rewrite_slack
        )
        self.set_runs(stored(store, "runs", RunRecord))

    def load_episodes(self, store: ChromaStore) -> None:
        """Every episode read from Chroma (an open without a snapshot, or from a base older than episodes in it)."""
        self.episodes = RecordTable(Episode, self.namespace)
        self.episode_index = None
        self.episodes_version += 1
        for episode in stored(store, "episodes", Episode):
            self.episodes[episode.episode_id] = episode

    def load_snapshot(self, loaded: Loaded, ledgers: dict[str, Ledger[Any, Any]]) -> None:
        """Lessons, links, skills, runs, episodes, graph, vectors and index from a snapshot, then its journal replayed.

        Raises:
            ValueError, KeyError, TypeError: the snapshot is damaged (the caller reads from Chroma instead).
        """
        ns = self.namespace
        keep = self.config.storage.parsed_lessons_max
        self.call_forms = {}
        self.lessons = RecordTable(Lesson, ns, loaded.records["lessons"], loaded.raw, keep_parsed=keep)
        self.links = RecordTable(Link, ns, loaded.records["links"], loaded.raw)
        self.skills = RecordTable(Skill, ns, loaded.records["skills"], loaded.raw)
        self.episodes = RecordTable(Episode, ns, loaded.records["episodes"], loaded.raw)
        self.episode_index = None  # built at the first end_run or on the warm thread, not at open: it parses every episode
        self.episodes_version += 1
        runs = (RunRecord.model_validate_json(loaded.raw.text(row)) for row in loaded.records["runs"].values())
        self.set_runs(r for r in runs if tuple(r.namespace) == ns)
        self.graph = LessonGraph.from_state(
            loaded.graph_data, loaded.graph_names, loaded.graph_arrays, lesson_source=self.lessons.get,
            rewrite_slack=self.config.storage.graph_rewrite_slack,
        )
        order = loaded.lesson_order()
        self.lesson_vectors = LessonVectors(loaded.vector_ids, loaded.vectors, order if loaded.vectors_follow_lessons else None)
        self.index = self.saved_index(loaded, order)  # before the journal: its writes update it
        release_pages(loaded.graph_arrays)  # what the checks read stays in the page cache, not in this process
        release_pages(loaded.index_arrays or {})
        self.set_ledgers(ledgers)  # before the journal: its writes fold over the saved evidence
        for _token, kind, entries in loaded.journal:
            parse = KIND_SPECS[kind].model.model_validate_json if kind else None
            if parse is not None:
                self.apply(kind, [parse(raw) for _, raw in entries], [raw for _, raw in entries], None)

    def set_ledgers(self, ledgers: dict[str, Ledger[Any, Any]]) -> None:
        """The ledgers given (by store kind, e.g. from a snapshot base); an empty one for each kind not given."""
        def pick(spec: FoldSpec[R, E]) -> Ledger[R, E]:
            found = ledgers.get(spec.kind)
            return found if found is not None else Ledger(spec, self.config)

        self.ledger, self.episode_ledger = pick(LESSON_FOLD), pick(EPISODE_FOLD)
        self.skill_ledger, self.fact_ledger, self.entity_ledger = pick(SKILL_FOLD), pick(FACT_FOLD), pick(ENTITY_FOLD)

    def set_runs(self, runs: Iterable[RunRecord]) -> None:
        """The stored runs in Lamport order, and how many runs each fingerprint appeared in."""
        self.runs = sorted(runs, key=run_order)
        self.episodes_version += 1
        if self.episode_index is not None:  # other runs: the avoidances' ages may go back
            self.episode_index.revive_avoidances()
        self.fp_runs = Counter(fp for r in self.runs for fp in set(r.fingerprint_counts))
        self.extras = {}
        for r in self.runs:
            self._add_extras(r)

    def _add_extras(self, run: RunRecord) -> None:
        for plugin, kept in run.extras.items():
            for key, values in kept.items():
                if values and all(isinstance(v, str) for v in values):
                    self.extras.setdefault((run.tool or "", plugin, key), set()).update(values)

    def _recount_extras(self, tools: set[str]) -> None:
        self.extras = {k: v for k, v in self.extras.items() if k[0] not in tools}
        for r in self.runs:
            if (r.tool or "") in tools:
                self._add_extras(r)

    def tool_extras(self, tool: str | None, plugin: str, key: str) -> frozenset[str]:
        """The union of what ``tool``'s stored runs keep under ``RunRecord.extras[plugin][key]`` (string lists)."""
        return frozenset(self.extras.get((tool or "", plugin, key), ()))

    # ------------------------------------------------------------------ the lesson index
    def new_index(self) -> LessonIndex:
        cfg = self.config
        return LessonIndex(bits=cfg.lifecycle.simhash_bits, max_distance=cfg.lifecycle.dedup_max_hamming, bands=cfg.lifecycle.dedup_simhash_bands)

    def build_index(self) -> LessonIndex:
        """The lesson index computed from every lesson (an open from Chroma, or a snapshot without one)."""
        index = self.new_index()
        lessons: list[Lesson] = []
        for lesson_id in list(self.lessons):
            found = self.lessons.get(lesson_id)  # an unreadable snapshot record is dropped here
            if found is not None:
                lessons.append(found)
        for lesson, entry in zip(lessons, index_entries(lessons, self.config)):
            index.put(lesson.id, *entry)
        return index

    def saved_index(self, loaded: Loaded, order: Mapping[str, int] | None = None) -> LessonIndex | None:
        """The lesson index saved with the snapshot's base, when it was computed with this config.

        ``order``: the base's lesson order (``Loaded.lesson_order``), shared with the index rather than copied.
        """
        meta, arrays = loaded.index_meta, loaded.index_arrays
        ids = loaded.lesson_ids
        if meta is None or arrays is None or meta.get("key") != index_key(self.config) or meta.get("count") != len(ids):
            return None
        cfg = self.config
        try:
            return LessonIndex.from_arrays(
                ids, arrays, bits=cfg.lifecycle.simhash_bits, max_distance=cfg.lifecycle.dedup_max_hamming, bands=cfg.lifecycle.dedup_simhash_bands,
                rows=order,
            )
        except (ValueError, KeyError) as exc:
            logger.info("langmem_plus: the saved lesson index does not fit (%s); rebuilding it", exc)
            return None

    def index_state(self, ids: list[str]) -> tuple[dict[str, Any], dict[str, np.ndarray]] | None:
        """The lesson index's columns for a new base, aligned with ``ids``; None when it cannot say."""
        if self.index is None:
            return None
        try:
            arrays = self.index.to_arrays(ids)
        except KeyError:  # a record the table could not read: the next open rebuilds the index
            return None
        return {"key": index_key(self.config), "count": len(ids)}, arrays

    def base_vectors(self, store: ChromaStore) -> tuple[list[str], np.ndarray | VectorRuns] | None:
        """Every lesson's relevance vector, for a new base: known here, else read from Chroma in pages."""
        ids = list(self.lessons)
        runs, known = self.lesson_vectors.runs_of(ids)
        if bool(known.all()):  # the usual case: written as runs of the writes' matrices and the base's file
            return (ids, runs) if ids else None
        found = self.lesson_vectors.get_many(ids)
        missing = [i for i in ids if i not in found]
        for start in range(0, len(missing), PAGE_SIZE):
            found.update(store.stored_embeddings("lessons", missing[start : start + PAGE_SIZE]))
        ids = [i for i in ids if i in found]
        if not ids:
            return None
        return ids, np.vstack([found[i] for i in ids]).astype(np.float32, copy=False)

    # ------------------------------------------------------------------ change
    def apply(self, kind: str, records: Sequence[BaseModel], raws: Sequence[str], vectors: np.ndarray | None) -> None:
        """Fold written or read records into the state; ``vectors`` are their stored embeddings (None on replay)."""
        lessons: list[tuple[Lesson, str | None]] = []
        for record, raw in zip(records, raws):
            if isinstance(record, Lesson):
                lesson = self.ledger.set_record(record)  # a lesson with evidence is the fold over its record
                lessons.append((lesson, raw if lesson is record else None))
            elif isinstance(record, Link):
                self.links.put(record.id, record, raw)
                self.graph.set_link(record)
            elif isinstance(record, Skill):
                skill = self.skill_ledger.set_record(record)
                self.skills.put(skill.id, skill, raw if skill is record else None)
                self.graph.upsert_skill(skill)
            elif isinstance(record, RunRecord):
                self.add_run(record)
            elif isinstance(record, Episode):
                self.episodes.put(record.episode_id, record, raw)
                self.episodes_version += 1
                if self.episode_index is not None:
                    self.episode_index.put(record)
        if lessons:
            self.put_lessons(lessons, vectors if len(lessons) == len(records) else None)

    def put_lessons(self, lessons: Sequence[tuple[Lesson, str | None]], vectors: np.ndarray | None) -> None:
        """Put lessons (with their JSON when known) into the table, graph, vector caches and index."""
        document = KIND_SPECS["lessons"].document
        if vectors is not None:
            matrix = np.asarray(vectors, dtype=np.float32).reshape(len(lessons), -1)
            self.lesson_vectors.put_rows([lesson.id for lesson, _ in lessons], matrix)
        for lesson, raw in lessons:
            old = self.lessons.get(lesson.id)
            embedded_text_changed = old is None or document(old) != document(lesson)
            if vectors is None and embedded_text_changed:
                self.lesson_vectors.forget(lesson.id)
            if old is None or embedded_text_changed or rule_core(old) != rule_core(lesson):
                self.vectors.drop(lesson.id)
            self.graph.upsert_lesson(lesson)  # before the table: the graph reads the old record from it
            self.lessons.put(lesson.id, lesson, raw)
            forms = self.call_forms.get(lesson.scope.tool or "")
            if forms is not None:
                forms.put(lesson)
        if self.index is not None:
            written = [lesson for lesson, _ in lessons]
            for lesson, entry in zip(written, index_entries(written, self.config)):
                self.index.put(lesson.id, *entry)

    def add_run(self, run: RunRecord) -> None:
        for i, known in enumerate(self.runs):
            if known.run_id == run.run_id:
                self.runs[i] = run
                self.episodes_version += 1
                if self.episode_index is not None and known.seq != run.seq:  # the avoidances' ages may go back
                    self.episode_index.revive_avoidances()
                self._recount_extras({known.tool or "", run.tool or ""})  # the run's verbs as now stored
                return
        self._add_extras(run)
        self.runs.append(run)
        if len(self.runs) > 1 and run_order(self.runs[-2]) > run_order(run):
            self.runs.sort(key=run_order)
        self.fp_runs.update(set(run.fingerprint_counts))

    def fold_evidence(self, entries: Sequence[Entry]) -> None:
        """Fold shared-log entries holding evidence (about lessons, episodes, skills, facts or entities) into what they are about."""
        found: dict[str, list[tuple[LogKey, Any]]] = {}
        for e in entries:
            for spec in FOLDS:
                raw = e.data.get(spec.log_key)
                if raw is None:
                    continue
                try:
                    ev: RunFinding = spec.evidence.model_validate(raw)
                except ValueError as exc:
                    logger.warning("langmem_plus: skipped unreadable %s %s: %s", spec.log_key, e.id, exc)
                    continue
                found.setdefault(spec.kind, []).append(((ev.run_seq, e.ts, e.writer, e.n), ev))
        lessons = found.get("lessons")
        if lessons:
            shown: dict[str, set[str]] = {}
            for _, ev in lessons:
                # A retried write adds no co-activation.
                if isinstance(ev, RunEvidence) and ev.shown and not self.ledger.knows(ev.lesson_id, ev.run_id):
                    shown.setdefault(ev.run_id, set()).add(ev.lesson_id)
            changed = self.ledger.add(lessons, current=self.lessons.get)
            self.put_lessons([(lesson, None) for lesson in changed.values()], None)
            for ids in shown.values():
                self._co_activated(sorted(ids))
        if found.get("skills"):
            for skill in self.skill_ledger.add(found["skills"], current=self.skills.get).values():
                self.skills.put(skill.id, skill, None)
                self.graph.upsert_skill(skill)
        if found.get("episodes"):
            self.episode_ledger.add(found["episodes"], current=lambda _id: None)  # folded as they are read
            self.episodes_version += 1
            if self.episode_index is not None:
                self.episode_index.touch(ev.episode_id for _, ev in found["episodes"] if isinstance(ev, EpisodeEvidence))
        if found.get("facts"):
            self.fact_ledger.add(found["facts"], current=lambda _id: None)  # folded by the semantic memory
            self.facts_touched.update(ev.fact_id for _, ev in found["facts"])
        if found.get("entities"):
            self.entity_ledger.add(found["entities"], current=lambda _id: None)
            self.entities_touched.update(ev.entity_id for _, ev in found["entities"])

    def _co_activated(self, ids: list[str]) -> None:
        """One more run showed every pair of ``ids``: their co-activation edges gain 1 (from evidence, never stored).

        Derived from the run evidence like the lessons' counters, so two writers' runs both
        count: a stored running total would be a record two writers read, change and write.
        """
        for i, a in enumerate(ids):
            for b in ids[i + 1 :]:
                self.graph.add_link(Link(id=stable_id("lnk", a, b, "co_activated"), namespace=self.namespace,
                                         a=f"lesson:{a}", b=f"lesson:{b}", weight=1.0))

    # ------------------------------------------------------------------ reading
    def as_record(self, lesson: Lesson) -> Lesson:
        """``lesson``'s content with its stored record's counters: what a content write stores (evidence stays in the log)."""
        return self.ledger.record_of(lesson, fallback=self.lessons.get(lesson.id))  # no evidence yet: the table holds it

    def ledgers(self) -> dict[str, Ledger[Any, Any]]:
        """Each folded kind's ledger, by store kind."""
        return {"lessons": self.ledger, "episodes": self.episode_ledger, "skills": self.skill_ledger,
                "facts": self.fact_ledger, "entities": self.entity_ledger}

    def skill_record(self, skill: Skill) -> Skill:
        """``skill``'s content with its stored record's stats: what a content write stores (outcomes stay in the log)."""
        return self.skill_ledger.record_of(skill, fallback=self.skills.get(skill.id))

    @property
    def last_seq(self) -> int:
        """The sequence number of the newest stored run (0: none yet); the next run takes one more (a Lamport clock)."""
        return self.runs[-1].seq if self.runs else 0

    def runs_after(self, seq: int, *, excluding: RunRecord | None = None) -> int:
        """How many stored runs have a sequence number above ``seq``, ``excluding`` one stored run."""
        n = len(self.runs) - bisect.bisect_right(self.runs, seq, key=lambda r: r.seq)
        return n - 1 if excluding is not None and excluding.seq > seq and n > 0 else n

    def episode(self, record: Episode, *, excluding_run: RunRecord | None = None) -> Episode:
        """A stored episode as memory holds it: its sightings folded over it, an avoidance's TTL aged by the runs since.

        ``excluding_run`` (stored) leaves that run out of the aging: ``end_run`` plans with
        the episodes as they were before its own run.
        """
        folded = self.episode_ledger.set_record(record) if record.episode_id in self.episode_ledger else record
        return age_episode(folded, lambda seq: self.runs_after(seq, excluding=excluding_run))

    def indexed_episodes(self) -> EpisodeIndex:
        """The episode index, built from every stored episode on first use (``build_episode_index``)."""
        if self.episode_index is None:
            built = self.build_episode_index()
            assert built is not None  # without ``stop`` it always completes
            self.episode_index = built
        return self.episode_index

    def build_episode_index(self, stop: threading.Event | None = None) -> EpisodeIndex | None:
        """A new episode index over every stored episode; None when ``stop`` was set before it was done.

        Each record is parsed once for it and not kept (a parsed episode is ~5 KB; the plans
        read the few they need through the table); one the table could not use is left to
        the table's own read, which drops it as a scan would. With ``stop`` (the warm thread,
        off the lock) a record that cannot be read directly ends the build instead: the table's
        own read would change the table under the lock's holder.
        """
        cfg = self.config
        index = EpisodeIndex(bits=cfg.lifecycle.simhash_bits, max_distance=cfg.lifecycle.episode_dedup_max_hamming,
                             bands=cfg.lifecycle.dedup_simhash_bands, min_cluster=cfg.lifecycle.consolidate_min_episodes)
        for n, key in enumerate(list(self.episodes)):  # the table's order
            if stop is not None and n % 256 == 0 and stop.is_set():
                return None
            record: Episode | None
            try:
                record = Episode.model_validate_json(self.episodes.raw_json(key))
                if tuple(record.namespace) != self.namespace:
                    raise ValueError("another namespace")
            except (ValueError, IndexError, KeyError):  # ValidationError is a ValueError
                if stop is not None:
                    return None
                record = self.episodes.get(key)
            if record is not None:
                index.put(record)
        return index

    def offer_episode_index(self, index: EpisodeIndex, version: int) -> bool:
        """Install an index built off the lock from ``version`` (``episodes_version`` then); refused when one is
        installed already or what it reflects moved since (it would be stale). Call under the memory's lock."""
        if self.episode_index is not None or version != self.episodes_version:
            return False
        self.episode_index = index
        return True

    def avoidance_spent(self, episode_id: str, *, excluding_run: RunRecord | None = None) -> bool:
        """Whether a stored avoidance's TTL, folded and aged (``episode``), is over or never counts: read from its
        indexed record fields and the ledger, without parsing the record.

        A sighting (count > 0) restarts the TTL at ``avoidance_ttl_episodes`` from the newest
        sighting's run (``apply_episode_evidence``); the runs after it count it down (``age_episode``).
        """
        ttl, seen = self.indexed_episodes().ttl_of(episode_id)
        sightings = [ev.run_seq for ev in self.episode_ledger.evidence(episode_id) if ev.count > 0]
        if sightings:
            ttl, seen = self.config.lifecycle.avoidance_ttl_episodes, max([seen or 0, *sightings])
        if ttl is not None and seen is not None:
            ttl = max(0, ttl - self.runs_after(seen, excluding=excluding_run))
        return ttl is None or ttl <= 0

    def episode_sighted(self, episode_id: str) -> int:
        """What the folded sightings add to a stored episode's count (``apply_episode_evidence`` adds each positive
        count), read from the ledger without parsing the record."""
        return sum(ev.count for ev in self.episode_ledger.evidence(episode_id) if ev.count > 0)

    def lessons_by_status(self) -> dict[str, int]:
        """Lesson counts per status (every status present, zero included): kept by the lesson index."""
        if self.config.lifecycle.end_run_indexes and self.index is not None:
            return self.index.counts()
        counts = Counter(l.status for l in self.lessons.values())
        return {s: counts.get(s, 0) for s in LESSON_STATUSES}

    def tool_text_rules(self, tool: str | None, changed: Iterable[Mapping[str, Lesson]] = ()) -> list[Lesson]:
        """The text rules (``Lesson.applies_when`` set) scoped to ``tool``, read through the graph's tool node, so the
        cost is the tool's lessons, not the store's; ``changed`` are maps of lessons written since (they win over the
        table). Without a tool, every lesson is read."""
        changed = list(changed)
        pool: ChainMap[str, Lesson] = ChainMap(*changed, self.lessons)  # type: ignore[arg-type]  # read only
        ids = set(self.graph.lessons_for(tool_node(tool)) if tool else self.lessons).union(*changed)
        rules = (pool.get(i) for i in sorted(ids))
        return [l for l in rules if l is not None and l.applies_when is not None and (l.scope.tool or None) == (tool or None)]

    def tool_forms(self, tool: str) -> ToolForms:
        """The call guard's forms of the lessons scoped to ``tool`` (read through the graph's tool node once)."""
        forms = self.call_forms.get(tool)
        if forms is None:
            forms = ToolForms()
            for lesson_id in sorted(self.graph.lessons_for(tool_node(tool))):
                lesson = self.lessons.get(lesson_id)
                if lesson is not None and lesson.scope.tool == tool:
                    forms.put(lesson)
            self.call_forms[tool] = forms
        return forms

    def lessons_for_fp(self, fp: str) -> list[Lesson]:
        return [self.lessons[i] for i in self.graph.lessons_for_fingerprint(fp) if i in self.lessons]

    def stored_count(self) -> int:
        """Records a snapshot base holds (lessons, links, skills, runs, episodes)."""
        return len(self.lessons) + len(self.links) + len(self.skills) + len(self.runs) + len(self.episodes)


__all__ = ["MemoryView", "run_order", "stored"]
