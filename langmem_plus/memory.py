"""LearningMemory: the one facade every surface (nodes, graph, CLI, retrievers) goes through.

It owns one namespace's Chroma collections, its lesson graph and its audit log, and
exposes the learning loop: ``capture`` failed steps, ``retrieve_pre_run`` and
``retrieve_on_error`` lessons, ``end_run`` to synthesize, measure, promote and
suppress. Reads and writes never cross namespaces: each namespace has its own
collections, graph and audit file.

Example:
    >>> import tempfile
    >>> from langmem_plus import LearningMemory, TaskSpec
    >>> mem = LearningMemory.open(tempfile.mkdtemp(), namespace=("acme", "agent-7"))
    >>> mem.retrieve_pre_run(TaskSpec(task_id="t1", goal="count rows", tool="gridtool"))
    []
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import math
import threading
import time
import uuid
from collections import ChainMap, Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Sequence, TypeVar

import numpy as np
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel, Field

from langmem_plus._text import stable_id
from langmem_plus.capture import detect_failure
from langmem_plus.config import DEFAULT_CONFIG, MemoryConfig
from langmem_plus.embeddings import make_embeddings
from langmem_plus.errors import InvalidRecord, StoreUnavailable
from langmem_plus.learning.consolidate import consolidate
from langmem_plus.learning.dedup import find_conflicts, lesson_hashes
from langmem_plus.learning.episodes import episodes_from_run, goal_template, plan_episode_writes
from langmem_plus.learning.hints import hints_from_items
from langmem_plus.learning.incremental import StoreLookup, index_entries, index_key
from langmem_plus.learning.lifecycle import (
    Integration,
    Judgement,
    apply_conflict_losses,
    integrate_candidates,
    judge_activated,
    run_outcome,
    sweep_unused,
)
from langmem_plus.learning.llm_synthesis import synthesize_with_llm
from langmem_plus.learning.recall import Direction, link_episodes, recall_at, recall_before, recall_sequence
from langmem_plus.learning.synthesis import synthesize_offline
from langmem_plus.memory_types.context import assemble, habit_relevance
from langmem_plus.learning.textrules import learn_text_rules
from langmem_plus.records import (
    LESSON_STATUSES,
    Activation,
    Episode,
    ErrorEvent,
    Hint,
    Lesson,
    Link,
    Moment,
    Namespace,
    RunRecord,
    RunReport,
    ScoredItem,
    Skill,
    Step,
    TaskSpec,
    Verdict,
    WorkingContext,
    validate_namespace,
)
from langmem_plus.retrieval.engine import Retrieval, RetrievalEngine, VectorCache, rule_core
from langmem_plus.store.audit import AuditLog, audit_path
from langmem_plus.store.chroma import PAGE_SIZE, ChromaStore
from langmem_plus.store.graph import LessonGraph
from langmem_plus.store.lesson_index import LessonIndex
from langmem_plus.store.mapping import KIND_SPECS
from langmem_plus.store.snapshot import LessonVectors, Loaded, RecordTable, SnapshotDir, snapshot_dir

if TYPE_CHECKING:
    from langmem_plus.integrations.middleware import LearningMiddleware
    from langmem_plus.memory_types.cognitive import CognitiveMemory
    from langmem_plus.memory_types.semantic import FactHit, SemanticMemory

logger = logging.getLogger(__name__)
T = TypeVar("T")

DEFAULT_PATH = ".langmem_plus"
"""Where the embedded store lives when no path is given."""
SHOWN_UNCLAIMED_MAX = 1000
"""Run ids whose ``general_retrieve`` activations wait for a ``general_update``; the oldest are dropped beyond this."""


class Trajectory(BaseModel):
    """One finished task attempt, the recorder of the two-interface memory abstraction."""

    task: TaskSpec
    steps: list[Step] = Field(default_factory=list)
    verdict: Verdict | None = None
    run_id: str = Field(default_factory=lambda: uuid.uuid4().hex[:12])


R = TypeVar("R", bound=BaseModel)


def _all(store: ChromaStore, kind: str, cls: type[R]) -> list[R]:
    """Every record of ``kind`` in the store, typed."""
    return [r for r in store.all(kind) if isinstance(r, cls)]


def _first_steps(activations: Sequence[Activation]) -> dict[str, int]:
    """The step at which each lesson was first shown in a run."""
    first: dict[str, int] = {}
    for a in activations:
        first[a.lesson_id] = min(a.step, first.get(a.lesson_id, a.step))
    return first


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """The cyclic garbage collector paused for a bulk load, restored after.

    An open at 100k lessons makes ~500k long-lived objects: with the collector on they
    trigger full collections, whose cost is the whole process's heap (0.3 s in a lean
    process, 1.3-1.7 s in the retrieval bench's, which holds the 100k synthetic lessons
    too) and which landed inside the open in three of eight bench runs (2.4-2.6 s
    instead of 0.7-1.0 s). The load makes almost no cyclic garbage to wait for.
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


class LearningMemory:
    """A namespace's learning memory. Open it with ``LearningMemory.open``."""

    def __init__(
        self,
        *,
        store: ChromaStore,
        audit: AuditLog,
        namespace: Namespace,
        config: MemoryConfig = DEFAULT_CONFIG,
        llm: BaseChatModel | None = None,
        clock: Callable[[], float] = time.time,
        snapshot: SnapshotDir | None = None,
    ) -> None:
        self.store, self.audit, self.namespace, self.config, self.llm = store, audit, namespace, config, llm
        self.clock = clock
        self._lock = threading.RLock()
        self._snapshot = snapshot
        self._generation: str | None = None
        self._lesson_vectors = LessonVectors()
        self.vectors = VectorCache(
            store, config.embedding_dim, capacity=config.vector_cache_size, known=lambda ids: self._lesson_vectors.get_many(ids)
        )
        self.lessons: RecordTable[Lesson] = RecordTable(Lesson, namespace)
        """Lessons by id; parsed from the snapshot on first use."""
        self._links: RecordTable[Link] = RecordTable(Link, namespace)
        self._skills: RecordTable[Skill] = RecordTable(Skill, namespace)
        self.runs: list[RunRecord] = []
        self._fp_runs: Counter[str] = Counter()
        self.graph = LessonGraph()
        self._index: LessonIndex | None = None
        """Status counts, sweep due runs and SimHash bands of the lessons (``store.lesson_index``)."""
        self._journal_group: list[tuple[str, str, list[tuple[str, str]]]] | None = None
        """Journal entries of the open ``_write_group``, written when it ends."""
        loaded = self._load_snapshot()
        if loaded is None:
            self._load_store()
        if self._index is None:
            self._index = self._build_index()
        store.listeners.append(self._on_write)
        self.engine = RetrievalEngine(
            store=store, graph=self.graph, lessons=self.lessons, vectors=self.vectors, config=config
        )
        if loaded is None and snapshot is not None:
            self._write_base()
        self._warm_stop = threading.Event()
        self._warmer: threading.Thread | None = None
        if loaded is not None and config.warm_lessons and self.lessons.parsed_count() < len(self.lessons):
            self._warmer = threading.Thread(
                target=self.lessons.warm, args=(self._warm_stop,), name="langmem-plus-warm", daemon=True
            )
            self._warmer.start()
        self._pending_losses: dict[str, Counter[str]] = {}
        """Run id -> conflict-cluster losses at its retrievals, consumed by that run's ``end_run``; ad-hoc
        retrievals (no run id: the retriever, the tool) count for no run."""
        self._shown: dict[str, list[Activation]] = {}
        """Activations ``general_retrieve`` showed, by run id, until ``general_update`` takes them."""
        self.last_retrieval: Retrieval | None = None
        """The full result of the latest retrieval (candidates, drops, tokens), for inspection."""

    # ------------------------------------------------------------------ opening
    @classmethod
    def open(
        cls,
        path: str | Path | None = None,
        *,
        url: str | None = None,
        namespace: Iterable[str] | str = ("default",),
        config: MemoryConfig | None = None,
        embeddings: Embeddings | str | None = None,
        llm: BaseChatModel | None = None,
        audit_dir: str | Path | None = None,
        clock: Callable[[], float] = time.time,
    ) -> "LearningMemory":
        """Open (or create) a memory: embedded Chroma at ``path``, or a Chroma server at ``url``.

        Args:
            path: Folder of the embedded store (default ``./.langmem_plus``). Ignored with ``url``.
            url: A Chroma server, e.g. ``http://127.0.0.1:8000`` (started with ``chroma run``).
            namespace: Tuple of strings, e.g. ``("acme", "agent-7")``; every read stays inside it.
            config: Tunable numbers; DESIGN defaults when omitted.
            embeddings: A LangChain Embeddings, ``"hashing"`` (offline default) or ``"openai:<model>"``.
            llm: Optional chat model for lesson synthesis and hint distillation.
            audit_dir: Where the JSONL audit log lives (default: the store folder).
            clock: Source of "now" in epoch seconds; pass a logical clock for reproducible runs.

        Raises:
            InvalidNamespace: the namespace is empty or malformed.
            StoreUnavailable: the path or server cannot be used.
        """
        ns = validate_namespace(namespace)
        cfg = config or DEFAULT_CONFIG
        emb = make_embeddings(embeddings, dim=cfg.embedding_dim)
        root = Path(path) if path is not None else Path(DEFAULT_PATH)
        with _gc_paused():
            store = ChromaStore.open(path=None if url else root, url=url, namespace=ns, embeddings=emb, config=cfg)
            local = Path(audit_dir) if audit_dir else root
            audit = AuditLog(audit_path(local, ns), ns, clock=clock)
            snapshot = SnapshotDir(snapshot_dir(local, ns)) if cfg.snapshot else None
            try:
                return cls(store=store, audit=audit, namespace=ns, config=cfg, llm=llm, clock=clock, snapshot=snapshot)
            except BaseException:
                store.close()
                raise

    def wait_warm(self, timeout: float | None = None) -> bool:
        """Wait until the background parse after an open (``warm_lessons``) is done; True when it is."""
        if self._warmer is not None:
            self._warmer.join(timeout)
            return not self._warmer.is_alive()
        return True

    def close(self) -> None:
        """Fold a long snapshot journal into a new base (``snapshot_rebase_share``), then release the store client."""
        self._warm_stop.set()
        self.wait_warm(timeout=5.0)
        with self._lock:
            if self._snapshot is not None and not self.store.closed:
                stored = len(self.lessons) + len(self._links) + len(self._skills) + len(self.runs)
                if self._snapshot.journal_records > self.config.snapshot_rebase_share * stored:
                    with _gc_paused():  # a full collection of a 100k-lesson heap (1.2-1.5 s) fell inside it
                        self._write_base()
        self.engine.close()  # the retrieval worker thread, before the client it calls
        self.audit.close()  # writes the deferred retrieval records
        self.store.close()

    # ------------------------------------------------------------------ state and snapshot
    def _load_snapshot(self) -> Loaded | None:
        """Lessons, links, skills, runs and the graph from the local snapshot, if it matches Chroma's generation.

        ``open`` runs it with the garbage collector paused (``_gc_paused``).
        """
        if self._snapshot is None:
            return None
        generation = self.store.generation()
        loaded = self._snapshot.load(generation)
        if loaded is None:
            return None
        ns = self.namespace
        try:
            self.lessons = RecordTable(Lesson, ns, loaded.records["lessons"])
            self._links = RecordTable(Link, ns, loaded.records["links"])
            self._skills = RecordTable(Skill, ns, loaded.records["skills"])
            runs = (RunRecord.model_validate_json(raw) for raw in loaded.records["runs"].values())
            self._set_runs(r for r in runs if tuple(r.namespace) == ns)
            self.graph = LessonGraph.from_state(
                loaded.graph_data, loaded.graph_names, loaded.graph_arrays, lesson_source=self.lessons.get
            )
            self._lesson_vectors = LessonVectors(loaded.vector_ids, loaded.vectors)
            self._index = self._saved_index(loaded)  # before the journal: its writes update it
            for _token, kind, entries in loaded.journal:
                parse = KIND_SPECS[kind].model.model_validate_json if kind else None
                if parse is not None:
                    self._apply(kind, [parse(raw) for _, raw in entries], [raw for _, raw in entries], None)
        except (ValueError, KeyError, TypeError) as exc:  # pydantic's ValidationError is a ValueError
            logger.warning("langmem_plus: snapshot %s is damaged (%s); reading from Chroma", self._snapshot.path, exc)
            self._index = None
            return None
        self._generation = generation
        return loaded

    def _load_store(self) -> None:
        """Every lesson, link, skill and run read from Chroma, and the graph rebuilt (no usable snapshot)."""
        self._generation = self.store.generation()  # read first: a write racing this read makes it stale, never wrong
        self._index = None  # built from the lessons read here
        ns = self.namespace
        self.lessons, self._links, self._skills = RecordTable(Lesson, ns), RecordTable(Link, ns), RecordTable(Skill, ns)
        for lesson in _all(self.store, "lessons", Lesson):
            self.lessons[lesson.id] = lesson
        for link in _all(self.store, "links", Link):
            self._links[link.id] = link
        for skill in _all(self.store, "skills", Skill):
            self._skills[skill.id] = skill
        self.graph = LessonGraph.from_records(self.lessons.values(), self._skills.values(), self._links.values())
        self._set_runs(_all(self.store, "runs", RunRecord))

    def _set_runs(self, runs: Iterable[RunRecord]) -> None:
        """The stored runs in ``seq`` order, and how many runs each fingerprint appeared in."""
        self.runs = sorted(runs, key=lambda r: r.seq)
        self._fp_runs = Counter(fp for r in self.runs for fp in set(r.fingerprint_counts))

    def _new_index(self) -> LessonIndex:
        cfg = self.config
        return LessonIndex(bits=cfg.simhash_bits, max_distance=cfg.dedup_max_hamming, bands=cfg.dedup_simhash_bands)

    def _build_index(self) -> LessonIndex:
        """The lesson index computed from every lesson (an open from Chroma, or a snapshot without one)."""
        index = self._new_index()
        lessons: list[Lesson] = []
        for lesson_id in list(self.lessons):
            found = self.lessons.get(lesson_id)  # an unreadable snapshot record is dropped here
            if found is not None:
                lessons.append(found)
        for lesson, entry in zip(lessons, index_entries(lessons, self.config)):
            index.put(lesson.id, *entry)
        return index

    def _saved_index(self, loaded: Loaded) -> LessonIndex | None:
        """The lesson index saved with the snapshot's base, when it was computed with this config."""
        meta, arrays = loaded.index_meta, loaded.index_arrays
        ids = list(loaded.records["lessons"])
        if meta is None or arrays is None or meta.get("key") != index_key(self.config) or meta.get("count") != len(ids):
            return None
        cfg = self.config
        try:
            return LessonIndex.from_arrays(
                ids, arrays, bits=cfg.simhash_bits, max_distance=cfg.dedup_max_hamming, bands=cfg.dedup_simhash_bands
            )
        except (ValueError, KeyError) as exc:
            logger.info("langmem_plus: the saved lesson index does not fit (%s); rebuilding it", exc)
            return None

    def _index_state(self, ids: list[str]) -> tuple[dict[str, Any], dict[str, np.ndarray]] | None:
        """The lesson index's columns for a new base, aligned with ``ids``; None when it cannot say."""
        if self._index is None:
            return None
        try:
            arrays = self._index.to_arrays(ids)
        except KeyError:  # a record the table could not read: the next open rebuilds the index
            return None
        return {"key": index_key(self.config), "count": len(ids)}, arrays

    def _base_vectors(self) -> tuple[list[str], np.ndarray] | None:
        """Every lesson's relevance vector, for a new base: known here, else read from Chroma in pages."""
        ids = list(self.lessons)
        found = self._lesson_vectors.get_many(ids)
        missing = [i for i in ids if i not in found]
        for start in range(0, len(missing), PAGE_SIZE):
            found.update(self.store.stored_embeddings("lessons", missing[start : start + PAGE_SIZE]))
        ids = [i for i in ids if i in found]
        if not ids:
            return None
        return ids, np.vstack([found[i] for i in ids]).astype(np.float32, copy=False)

    def _write_base(self) -> None:
        """Save the whole state as a new snapshot base; a failure only costs the next open its speed."""
        assert self._snapshot is not None
        lesson_ids = list(self.lessons)
        records = {
            "lessons": ((i, self.lessons.raw_json(i)) for i in lesson_ids),
            "links": ((i, self._links.raw_json(i)) for i in self._links),
            "skills": ((i, self._skills.raw_json(i)) for i in self._skills),
            "runs": ((r.run_id, r.model_dump_json()) for r in self.runs),
        }
        try:
            self._snapshot.write_base(
                self._generation, records, self.graph.to_state(), self._base_vectors(), self._index_state(lesson_ids)
            )
        except (OSError, StoreUnavailable) as exc:
            logger.warning("langmem_plus: could not write the snapshot %s (%s); opens read from Chroma", self._snapshot.path, exc)

    def _on_write(
        self, kind: str, records: list[BaseModel], raws: list[str], vectors: np.ndarray, token: str | None
    ) -> None:
        """Keep the in-memory state (and the snapshot journal) in step with every store write."""
        with self._lock:
            self._apply(kind, records, raws, vectors)
            if token is None:
                return
            self._generation = token
            if self._snapshot is not None:
                id_of = KIND_SPECS[kind].id_of
                entries = [(id_of(r), raw) for r, raw in zip(records, raws)]
                if self._journal_group is not None and self.store.in_write_group():
                    self._journal_group.append((token, kind, entries))  # journalled when the group ends
                else:
                    self._journal([(token, kind, entries)])

    def _journal(self, writes: Sequence[tuple[str, str, list[tuple[str, str]]]]) -> None:
        """Append committed writes to the snapshot journal, one end line per token."""
        if self._snapshot is None:
            return
        by_token: dict[str, list[tuple[str, list[tuple[str, str]]]]] = {}
        for token, kind, entries in writes:
            by_token.setdefault(token, []).append((kind, entries))
        try:
            for token, group in by_token.items():
                self._snapshot.append_group(token, group)
        except OSError as exc:  # the token check makes the next open read from Chroma
            logger.warning("langmem_plus: snapshot journal write failed (%s)", exc)

    @contextlib.contextmanager
    def _write_group(self) -> Iterator[None]:
        """The block's tracked writes share one generation token (``ChromaStore.write_group``), journalled after it.

        One Chroma call for the token instead of one per write. The journal gets the
        writes only once the block is over (also when it fails: what Chroma took is
        journalled), so a crash inside leaves Chroma's token ahead and the next open exact.
        """
        if self._journal_group is not None:
            yield
            return
        self._journal_group = []
        try:
            with self.store.write_group():
                yield
        finally:
            pending, self._journal_group = self._journal_group, None
            self._journal(pending)

    def _apply(self, kind: str, records: Sequence[BaseModel], raws: Sequence[str], vectors: np.ndarray | None) -> None:
        """Fold written records into the in-memory state; ``vectors`` are their stored embeddings (None on replay)."""
        document = KIND_SPECS["lessons"].document
        written: list[Lesson] = []
        for n, (record, raw) in enumerate(zip(records, raws)):
            if isinstance(record, Lesson):
                old = self.lessons.get(record.id)
                embedded_text_changed = old is None or document(old) != document(record)
                if vectors is not None:
                    self._lesson_vectors.put(record.id, vectors[n])
                elif embedded_text_changed:
                    self._lesson_vectors.forget(record.id)
                if old is None or embedded_text_changed or rule_core(old) != rule_core(record):
                    self.vectors.drop(record.id)
                self.graph.upsert_lesson(record)  # before the table: the graph reads the old record from it
                self.lessons.put(record.id, record, raw)
                written.append(record)
            elif isinstance(record, Link):
                self._links.put(record.id, record, raw)
                self.graph.set_link(record)
            elif isinstance(record, Skill):
                self._skills.put(record.id, record, raw)
                self.graph.upsert_skill(record)
            elif isinstance(record, RunRecord):
                self._add_run(record)
        if written and self._index is not None:
            for lesson, entry in zip(written, index_entries(written, self.config)):
                self._index.put(lesson.id, *entry)

    def _add_run(self, run: RunRecord) -> None:
        for i, known in enumerate(self.runs):
            if known.run_id == run.run_id:
                self.runs[i] = run
                return
        self.runs.append(run)
        if len(self.runs) > 1 and self.runs[-2].seq > run.seq:
            self.runs.sort(key=lambda r: r.seq)
        self._fp_runs.update(set(run.fingerprint_counts))

    def __enter__(self) -> "LearningMemory":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ capture
    def capture(
        self,
        step: Step,
        *,
        run_id: str,
        task: TaskSpec | None = None,
        history: Sequence[Step] = (),
        now: float | None = None,
    ) -> ErrorEvent | None:
        """Fingerprint a failed step into an ErrorEvent and store it; None when the step is fine."""
        event = detect_failure(
            step,
            history,
            namespace=self.namespace,
            run_id=run_id,
            task=task,
            config=self.config,
            now=self.clock() if now is None else now,
        )
        if event is None:
            return None
        with self._lock:
            self.store.upsert("events", [event])
            self.audit.write("capture", event=event.model_dump(mode="json"))
        return event

    def capture_steps(
        self, steps: Sequence[Step], *, run_id: str, task: TaskSpec | None = None, start: int = 0
    ) -> list[ErrorEvent]:
        """``capture`` each of ``steps[start:]`` with the steps before it as history; the events found."""
        events: list[ErrorEvent] = []
        for i in range(start, len(steps)):
            event = self.capture(steps[i], run_id=run_id, task=task, history=steps[:i])
            if event is not None:
                events.append(event)
        return events

    # ------------------------------------------------------------------ retrieval
    def retrieve_pre_run(
        self,
        task: TaskSpec,
        context: WorkingContext | None = None,
        *,
        run_id: str | None = None,
        now: float | None = None,
        k: int | None = None,
    ) -> list[ScoredItem]:
        """Lessons worth knowing before a task starts (DESIGN §5, pre-run moment).

        ``k`` replaces the difficulty budget K' (and the tool sheet): at most ``k`` items,
        exactly ``k`` when that many pass the guards and the token cap (a retriever's ``k``).
        The items come back in the order of the hint block instant memory assembled from
        them (``memory_types.context``): lessons ranked by how often the tool's recent runs
        needed them, within ``max_context_tokens``.
        """
        return self._after_retrieval("pre_run", self._pre_run(task, context, now=now, k=k), run_id=run_id)

    def _pre_run(self, task: TaskSpec, context: WorkingContext | None, *, now: float | None, k: int | None) -> Retrieval:
        """``retrieve_pre_run``'s retrieval, before it is recorded."""
        now = self.clock() if now is None else now
        context_runs = self._context_runs(task)
        fps = {fp for r in context_runs for fp in r.fingerprint_counts}
        actions = list(dict.fromkeys(f.action for r in context_runs for f in r.failures if f.action))
        known = {i for r in context_runs for i in r.applied}
        tags = {t for fp in fps for l in self._lessons_for_fp(fp) for t in l.tags}
        ctx = context or WorkingContext(goal=task.goal, context=task.tool or task.domain or "")
        if ctx.difficulty is None:
            ctx = ctx.model_copy(update={"difficulty": self._pre_run_difficulty(task, context_runs, known)})
        runs = [r for r in self.runs if r.tool == task.tool][-self.config.instant_habit_runs :]
        return self.engine.pre_run(
            task,
            ctx,
            recent_fingerprints=fps,
            recent_tags=tags,
            recent_actions=actions,
            known_lessons=known,
            now=now,
            limit=k,
            relevance=habit_relevance(runs, self.config, task_runs=context_runs),
        )

    def retrieve_on_error(
        self,
        event: ErrorEvent,
        context: WorkingContext | None = None,
        *,
        run_id: str | None = None,
        now: float | None = None,
        k: int | None = None,
    ) -> list[ScoredItem]:
        """Lessons for the failure that just happened: exact fingerprint first (DESIGN §5).

        ``k``: as in ``retrieve_pre_run``.
        """
        now = self.clock() if now is None else now
        ctx = context or WorkingContext(last_fail=event.error_text[: self.config.context_text_chars], context=event.tool or "")
        result = self.engine.on_error(event, ctx, now=now, limit=k)
        return self._after_retrieval("on_error", result, run_id=run_id or event.run_id)

    def _after_retrieval(self, moment: Moment, result: Retrieval, *, run_id: str | None) -> list[ScoredItem]:
        with self._lock:
            self.last_retrieval = result
            if run_id is not None and result.conflict_losers:
                self._pending_losses.setdefault(run_id, Counter()).update(result.conflict_losers)
                while len(self._pending_losses) > SHOWN_UNCLAIMED_MAX:  # runs that never ended: oldest first
                    self._pending_losses.pop(next(iter(self._pending_losses)))
            # Encoded and appended off the query thread; ``audit.read`` (``history``) flushes first.
            self.audit.write_deferred(
                "retrieval",
                moment=moment,
                run_id=run_id,
                query=result.query[: self.config.query_error_chars],
                difficulty=result.difficulty,
                budget=result.budget,
                candidates=[
                    {"id": c.item_id, "score": round(c.score, 4), "components": dict(c.components)}
                    for c in result.candidates[: self.config.candidates_k]
                ],
                chosen=[c.item_id for c in result.chosen],
                dropped=list(result.dropped),
                tokens=result.tokens,
                tokens_exact=result.tokens_exact,
            )
        return result.chosen

    def activations_for(
        self, items: Sequence[ScoredItem], *, run_id: str, step: int, moment: Moment, fingerprint_id: str | None = None
    ) -> list[Activation]:
        """Activation records for the lessons among ``items`` that are shown to the executor."""
        return [
            Activation(
                lesson_id=i.item_id, run_id=run_id, step=step, moment=moment, fingerprint_id=fingerprint_id, score=i.score
            )
            for i in items
            if i.kind == "lesson"
        ]

    @staticmethod
    def hints(items: Sequence[ScoredItem]) -> list[Hint]:
        """Rule-based hints (one actionable step each) from retrieved items."""
        return hints_from_items(items)

    # ------------------------------------------------------------------ end of run
    def end_run(
        self,
        *,
        run_id: str,
        task: TaskSpec,
        steps: Sequence[Step],
        events: Sequence[ErrorEvent],
        activations: Sequence[Activation] = (),
        verdict: Verdict | None = None,
        now: float | None = None,
    ) -> RunReport:
        """Synthesize lessons from the run's failures, measure activated lessons, apply the lifecycle."""
        now = self.clock() if now is None else now
        with self._lock:
            outcome = run_outcome(steps, events, verdict, self.config)
            seq = (self.runs[-1].seq + 1) if self.runs else 1
            activated = Counter(a.lesson_id for a in activations)
            run = RunRecord(
                run_id=run_id,
                namespace=self.namespace,
                seq=seq,
                task_id=task.task_id,
                family=task.family,
                tool=task.tool,
                domain=task.domain,
                passed=outcome.passed,
                score=outcome.score,
                steps=outcome.steps,
                tool_errors=outcome.tool_errors,
                fingerprint_counts=outcome.fingerprint_counts,
                failures=outcome.failures,
                activated=sorted(activated),
                applied=outcome.applied,
                ts=now,
            )
            # 1. New candidate lessons from recurring failures, deduped and conflict-linked.
            candidates = self._synthesize(run_id=run_id, task=task, steps=steps, events=events, now=now)
            candidates = [c.model_copy(update={"stats": c.stats.model_copy(update={"created_run_seq": seq})}) for c in candidates]
            lookup = self._lookup()
            integ = integrate_candidates(candidates, self.lessons, self.config, now=now, lookup=lookup)
            # 2. Utility of what was shown, then promotion / suppression / archive.
            judged = judge_activated(
                lessons=ChainMap(integ.upserts, self.lessons),
                activations=activated,
                first_steps=_first_steps(activations),
                run=run,
                prior_runs=self.runs,
                task=task,
                # An LLM judge's score reaches utility as its gain over comparable runs (DESIGN §6).
                referee_score=verdict.score if verdict is not None and verdict.source == "llm" else None,
                config=self.config,
                now=now,
            )
            # Writes to the pool land in its first map: the lessons changed this run.
            pool = ChainMap({**integ.upserts, **judged.updated}, self.lessons)
            apply_conflict_losses(
                pool, dict(self._pending_losses.pop(run_id, Counter())), run_id=run_id, run_seq=seq, config=self.config, out=judged
            )
            sweep_unused(
                pool if lookup is not None else dict(pool), run_seq=seq, skip=set(activated), config=self.config,
                out=judged, only=self._sweep_ids(seq, [*integ.upserts, *judged.updated]) if lookup is not None else None,
            )
            changed = {**integ.upserts, **judged.updated}
            changed.update(learn_text_rules(namespace=self.namespace, run_id=run_id, task=task, steps=steps,
                                            existing=ChainMap(changed, self.lessons), config=self.config, now=now))
            with self._write_group():  # one generation token for the run's writes
                self._write_lessons(changed)
                self._write_links(activated)
                self.store.upsert("runs", [run])  # _on_write appends it to self.runs
                episodes = episodes_from_run(
                    namespace=self.namespace,
                    run_id=run_id,
                    task=task,
                    steps=steps,
                    verdict=verdict or Verdict(passed=outcome.passed, score=outcome.score),
                    config=self.config,
                    now=now,
                    events=events,
                )
                self._audit_run(run, integ, judged)
                self._write_episodes(episodes, run=run, task=task, events=events, now=now)
            self._semantic_from_run(run_id, judged)
            by_status = self.lessons_by_status()
            return RunReport(
                run_id=run_id,
                task_id=task.task_id,
                passed=outcome.passed,
                score=outcome.score,
                steps=outcome.steps,
                tool_errors=outcome.tool_errors,
                repeated_errors=outcome.repeated_errors,
                fingerprint_counts=outcome.fingerprint_counts,
                lesson_activations=sum(activated.values()),
                activated_lesson_ids=sorted(activated),
                new_lessons=integ.created,
                merged_lessons=[k for k, _ in integ.merged],
                promoted=[t.lesson_id for t in judged.transitions if t.new == "promoted"],
                suppressed=[t.lesson_id for t in judged.transitions if t.new == "suppressed"],
                archived=[t.lesson_id for t in judged.transitions if t.new == "archived"],
                utilities=judged.utilities,
                lessons_by_status=by_status,
                verdict=verdict,
            )

    def add_lessons(self, lessons: Sequence[Lesson]) -> list[str]:
        """Import lessons (e.g. hand-written rules) into this namespace; returns their ids.

        Raises:
            InvalidRecord: a lesson belongs to another namespace.
        """
        for lesson in lessons:
            if tuple(lesson.namespace) != self.namespace:
                raise InvalidRecord(
                    f"lesson {lesson.id} belongs to namespace {lesson.namespace}, not {self.namespace}"
                )
        with self._lock:
            changed = self._link_imported(self._with_simhash(lessons))
            self._write_lessons(changed)
            linked: set[frozenset[str]] = set()
            for lesson in lessons:
                self.audit.write("lesson_imported", lesson_id=lesson.id, rule=lesson.rule_text[:300])
                for other in changed[lesson.id].conflicts_with:
                    pair = frozenset((lesson.id, other))
                    if other not in lesson.conflicts_with and pair not in linked:
                        linked.add(pair)
                        self.audit.write("conflict", lesson_id=lesson.id, other=other, run_id=None)
        return [l.id for l in lessons]

    def _with_simhash(self, lessons: Sequence[Lesson]) -> list[Lesson]:
        """Imports carry their SimHash (computed in one batch when missing), so no dedup hashes them again."""
        bits = self.config.simhash_bits
        hashes = iter(lesson_hashes([l for l in lessons if not l.simhash], bits))
        width = (bits + 3) // 4
        return [l if l.simhash else l.model_copy(update={"simhash": format(next(hashes), f"0{width}x")}) for l in lessons]

    def _link_imported(self, lessons: Sequence[Lesson]) -> dict[str, Lesson]:
        """Imported lessons with conflict links (DESIGN §6) to the stored ones and to each other, both ways.

        A conflict shares a trigger (``find_conflicts``), so only lessons the fingerprint
        index names are compared: linear in the import, not in the store.
        """
        changed: dict[str, Lesson] = {}
        batch_fp: dict[str, set[str]] = {}

        def current(lesson_id: str) -> Lesson | None:
            return changed.get(lesson_id) or self.lessons.get(lesson_id)

        for lesson in lessons:
            near: set[str] = set()
            for fp in lesson.triggers:
                near |= self.graph.lessons_for_fingerprint(fp) | batch_fp.get(fp, set())
            near.discard(lesson.id)
            pool = [l for l in map(current, sorted(near)) if l is not None]
            rivals = find_conflicts(lesson, pool)
            lesson = lesson.model_copy(update={"conflicts_with": sorted({*lesson.conflicts_with, *rivals})})
            for rid in rivals:
                rival = current(rid)
                if rival is not None and lesson.id not in rival.conflicts_with:
                    changed[rid] = rival.model_copy(update={"conflicts_with": sorted({*rival.conflicts_with, lesson.id})})
            changed[lesson.id] = lesson
            for fp in lesson.triggers:
                batch_fp.setdefault(fp, set()).add(lesson.id)
        return changed

    def _synthesize(
        self, *, run_id: str, task: TaskSpec, steps: Sequence[Step], events: Sequence[ErrorEvent], now: float
    ) -> list[Lesson]:
        """Candidate lessons of a run: the chat model's when ``self.llm`` is set and answers well, else offline."""
        kwargs: dict[str, Any] = dict(
            namespace=self.namespace, run_id=run_id, steps=steps, events=events,
            prior_runs_seen=self._fp_runs, task=task, config=self.config, now=now,
        )
        if self.llm is None:
            return synthesize_offline(**kwargs)
        lessons, source = synthesize_with_llm(self.llm, **kwargs)
        self.audit.write("synthesis", run_id=run_id, source=source, lessons=[l.id for l in lessons])
        return lessons

    def _write_episodes(
        self, episodes: Sequence[Episode], *, run: RunRecord, task: TaskSpec, events: Sequence[ErrorEvent], now: float
    ) -> None:
        """Write a run's episodes by the DESIGN §6 policy, then consolidate clusters into skills / lessons."""
        stored = _all(self.store, "episodes", Episode)
        plan = plan_episode_writes(episodes, stored, self.config, now=now)
        pool = {e.episode_id: e for e in stored}
        pool.update(plan.upserts)
        template = episodes[0].subgoal_template if episodes else (task.family or goal_template(task.goal))
        cons = consolidate(
            episodes=list(pool.values()),
            skills={s.id: s for s in self._skills.values()},
            lessons=self.lessons,
            template=template,
            context=task.tool or "",
            passed=run.passed,
            failure_mode=events[0].fingerprint if events else None,
            tool=task.tool,
            config=self.config,
            now=now,
            covered=lookup.covered() if (lookup := self._lookup()) is not None else None,
        )
        writes = {**plan.upserts, **cons.episodes}
        if writes:
            self.store.upsert("episodes", list(writes.values()))
        if cons.skills:
            self.store.upsert("skills", list(cons.skills.values()))
        new_lessons = {
            i: l.model_copy(update={"stats": l.stats.model_copy(update={"created_run_seq": run.seq})})
            for i, l in cons.lessons.items()
        }
        self._write_lessons(new_lessons)
        if plan.merged or plan.capped or plan.expired:
            self.audit.write(
                "episodes", run_id=run.run_id, created=plan.created, merged=plan.merged,
                capped=plan.capped, expired=plan.expired,
            )
        for sid in cons.new_skills:
            skill = cons.skills[sid]
            self.audit.write("consolidation", skill_id=sid, into="skill", run_id=run.run_id,
                             episodes=skill.source_episodes, steps=skill.steps)
        for lid, lesson in new_lessons.items():
            self.audit.write("consolidation", lesson_id=lid, into="lesson", run_id=run.run_id,
                             rule=lesson.rule_text, episodes=sorted(e for e, ep in cons.episodes.items()
                                                                     if ep.consolidated_into == lid))

    def _lookup(self) -> StoreLookup | None:
        """The indexes ``end_run`` reads (``end_run_indexes``), or None to scan every lesson."""
        if not self.config.end_run_indexes or self._index is None:
            return None
        return StoreLookup(self._index, self.graph)

    def _sweep_ids(self, run_seq: int, changed: Sequence[str]) -> list[str]:
        """The lessons the sweep can change at ``run_seq``, in table order: those due by then and those changed this run.

        Every other lesson's due run (``incremental.sweep_due``) is later, so a scan would leave it as it is.
        """
        assert self._index is not None  # _lookup checked it
        return self._index.rows_in_order([*self._index.due_by(run_seq), *changed])

    def _write_lessons(self, changed: dict[str, Lesson]) -> None:
        """Store changed lessons; ``_on_write`` updates the table, graph and vector cache."""
        if changed:
            self.store.upsert("lessons", list(changed.values()))

    def _write_links(self, activated: Counter[str]) -> None:
        ids = sorted(activated)
        new: list[Link] = []
        for i, a in enumerate(ids):
            for b in ids[i + 1 :]:
                lid = stable_id("lnk", a, b, "co_activated")
                old = self._links.get(lid)
                link = Link(
                    id=lid,
                    namespace=self.namespace,
                    a=f"lesson:{a}",
                    b=f"lesson:{b}",
                    weight=(old.weight if old else 0.0) + 1.0,
                )
                new.append(link)
        if new:
            self.store.upsert("links", new)  # _on_write sets the graph's edges to these running totals

    def _audit_run(self, run: RunRecord, integ: Integration, judged: Judgement) -> None:
        for lid in integ.created:
            self.audit.write("lesson_created", lesson_id=lid, run_id=run.run_id, rule=self.lessons[lid].rule_text)
        for kept, other in integ.merged:
            self.audit.write("merge", lesson_id=kept, merged=other, run_id=run.run_id)
        for a, b in integ.conflicts:
            self.audit.write("conflict", lesson_id=a, other=b, run_id=run.run_id)
        for t in judged.transitions:
            self.audit.write(
                t.new if t.new != "candidate" else "lifecycle",
                lesson_id=t.lesson_id,
                old=t.old,
                new=t.new,
                reason=t.reason,
                evidence=t.evidence,
                run_id=run.run_id,
            )
        self.audit.write("run_end", run=run.model_dump(mode="json"), utilities=judged.utilities)

    # ------------------------------------------------------------------ reading
    def _context_runs(self, task: TaskSpec) -> list[RunRecord]:
        """Earlier runs of this task, else of its family on the same tool: its failure context."""
        same_task = [r for r in self.runs if r.task_id == task.task_id]
        if same_task:
            return same_task[-self.config.recent_runs:]
        return [r for r in self.runs if task.family and r.family == task.family and r.tool == task.tool][-self.config.recent_runs:]

    def _pre_run_difficulty(self, task: TaskSpec, context_runs: list[RunRecord], known: set[str]) -> float:
        """Difficulty before a run (DESIGN §5.6): the task's pitfalls, else the tool's failure rate.

        Pitfalls are the lessons the task needed in earlier runs plus the failures its last
        run still had. A failure rate alone would shrink the budget as lessons succeed,
        just when the task needs them all.
        """
        if context_runs:
            pitfalls = len(known) + len(context_runs[-1].failures)
            return 1.0 - math.exp(-pitfalls / self.config.pitfall_scale)
        recent = [r for r in self.runs if r.tool == task.tool][-self.config.recent_runs:]
        if not recent:
            return 0.0
        return sum(1 for r in recent if r.tool_errors > 0 or not r.passed) / len(recent)

    def _lessons_for_fp(self, fp: str) -> list[Lesson]:
        return [self.lessons[i] for i in self.graph.lessons_for_fingerprint(fp) if i in self.lessons]

    def get_lesson(self, lesson_id: str) -> Lesson | None:
        """The lesson with this id in this namespace, or None."""
        return self.lessons.get(lesson_id)

    def list_lessons(self, status: str | None = None) -> list[Lesson]:
        """All lessons of this namespace, optionally of one status, newest first."""
        out = [l for l in self.lessons.values() if status is None or l.status == status]
        return sorted(out, key=lambda l: -l.updated_at)

    def lessons_by_status(self) -> dict[str, int]:
        """Lesson counts per status (every status present, zero included): kept by the lesson index."""
        if self.config.end_run_indexes and self._index is not None:
            return self._index.counts()
        counts = Counter(l.status for l in self.lessons.values())
        return {s: counts.get(s, 0) for s in LESSON_STATUSES}

    def history(self, lesson_id: str) -> list[dict[str, Any]]:
        """Every audit record about one lesson, oldest first: why it exists and what happened to it."""
        return [
            r
            for r in self.audit.read()
            if r.get("lesson_id") == lesson_id or r.get("other") == lesson_id or lesson_id in r.get("chosen", [])
        ]

    def render(self, items: Sequence[ScoredItem]) -> str:
        """Hints for ``items`` as a quoted data block for a model prompt, assembled in instant memory
        within ``max_context_tokens`` (``memory_types.context.assemble``)."""
        return assemble(items, budget=self.config.max_context_tokens, config=self.config, now=self.clock()).text

    # ------------------------------------------------------------------ two-interface abstraction
    def general_update(self, recorder: Trajectory, *, retrieved_as: str | None = None) -> RunReport:
        """Fold one finished trajectory into memory (the ``general_update`` interface).

        The lessons ``general_retrieve`` showed for the same run id are measured as its
        activations. ``retrieved_as``: the run id ``general_retrieve`` was called with, when
        the attempt was then recorded under another one (a caller that names runs late).
        """
        events = self.capture_steps(recorder.steps, run_id=recorder.run_id, task=recorder.task)
        with self._lock:
            shown = self._shown.pop(recorder.run_id, [])
            if retrieved_as is not None and retrieved_as != recorder.run_id:
                shown += [a.model_copy(update={"run_id": recorder.run_id}) for a in self._shown.pop(retrieved_as, [])]
        return self.end_run(
            run_id=recorder.run_id,
            task=recorder.task,
            steps=recorder.steps,
            events=events,
            activations=shown,
            verdict=recorder.verdict,
        )

    def general_retrieve(self, recorder: Trajectory) -> dict[str, Any]:
        """What memory offers before a task (the ``general_retrieve`` interface).

        What it shows is remembered under the trajectory's run id, so the matching
        ``general_update`` can measure whether those lessons helped.
        """
        result = self._pre_run(recorder.task, None, now=None, k=None)
        items = self._after_retrieval("pre_run", result, run_id=recorder.run_id)
        hints = hints_from_items(items)
        with self._lock:
            self._shown[recorder.run_id] = self.activations_for(items, run_id=recorder.run_id, step=0, moment="pre_run")
            while len(self._shown) > SHOWN_UNCLAIMED_MAX:  # retrievals never followed by an update (a frozen memory)
                del self._shown[next(iter(self._shown))]
        return {"hints": [h.model_dump() for h in hints], "text": result.text, "items": items}

    # ------------------------------------------------------------------ LangChain surfaces
    def as_retriever(self, kind: str = "pre_run", **kwargs: Any) -> Any:
        """A LangChain BaseRetriever over this memory (``kind``: ``pre_run`` or ``on_error``)."""
        from langmem_plus.retrieval.retrievers import LessonRetriever

        return LessonRetriever(memory=self, kind=kind, **kwargs)

    def as_tool(self) -> Any:
        """A LangChain tool an agent can call to look up lessons for an error or a goal."""
        from langmem_plus.retrieval.retrievers import lesson_lookup_tool

        return lesson_lookup_tool(self)

    def as_middleware(self, **options: Any) -> "LearningMiddleware":
        """A LangChain 1.x ``AgentMiddleware`` that makes a ``create_agent`` agent learn (``LearningMiddleware``)."""
        from langmem_plus.integrations.middleware import LearningMiddleware

        return LearningMiddleware(self, **options)

    def as_store(self, index: Any = None) -> Any:
        """A LangGraph ``BaseStore`` on this memory's Chroma, in collections of its own under its namespace."""
        from langmem_plus.integrations.store import LangGraphChromaStore

        return LangGraphChromaStore(self.store.client, index=index, root=self.namespace, location=self.store.location)

    # ------------------------------------------------------------------ async twins
    async def _run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return await asyncio.to_thread(fn, *args, **kwargs)

    async def acapture(self, step: Step, **kwargs: Any) -> ErrorEvent | None:
        """Async ``capture``."""
        return await self._run(self.capture, step, **kwargs)

    async def aretrieve_pre_run(self, task: TaskSpec, context: WorkingContext | None = None, **kwargs: Any) -> list[ScoredItem]:
        """Async ``retrieve_pre_run``."""
        return await self._run(self.retrieve_pre_run, task, context, **kwargs)

    async def aretrieve_on_error(self, event: ErrorEvent, context: WorkingContext | None = None, **kwargs: Any) -> list[ScoredItem]:
        """Async ``retrieve_on_error``."""
        return await self._run(self.retrieve_on_error, event, context, **kwargs)

    async def aend_run(self, **kwargs: Any) -> RunReport:
        """Async ``end_run``."""
        return await self._run(self.end_run, **kwargs)

    # ------------------------------------------------------------------ other memory types
    def cognitive(self, agent_id: str) -> "CognitiveMemory":
        """The importance-routed cognitive memory (seed 004) of ``agent_id``, kept in this memory's store and audit log."""
        from langmem_plus.memory_types.cognitive_store import open_cognitive

        return open_cognitive(self, agent_id)
    # ------------------------------------------------------------------ facts and episodic recall (issue 14)
    def semantic(self) -> "SemanticMemory":
        """This namespace's facts with belief states (``SemanticMemory``), loaded on first use and kept."""
        from langmem_plus.memory_types.semantic import SemanticMemory

        with self._lock:
            if getattr(self, "_semantic", None) is None:
                self._semantic = SemanticMemory(self.store, config=self.config, audit=self.audit, clock=self.clock)
            return self._semantic

    def _semantic_from_run(self, run_id: str, judged: Judgement) -> None:
        """Facts stated by the lessons a run verified (promoted, or helped): ``SemanticMemory.learn_from_lessons``."""
        promoted = {t.lesson_id for t in judged.transitions if t.new == "promoted"}
        ids = promoted | {i for i, u in judged.utilities.items() if u > self.config.semantic_lesson_min_utility}
        lessons = [self.lessons[i] for i in sorted(ids) if i in self.lessons]
        if self.config.semantic_from_runs and lessons:
            self.semantic().learn_from_lessons(lessons, promoted=promoted, utilities=judged.utilities, run_id=run_id)

    def retrieve_facts(self, text: str, limit: int = 5) -> "list[FactHit]":
        """Facts relevant to ``text`` beside what the retrievals return: ``semantic().query`` (held and contested)."""
        return self.semantic().query(text, limit)

    def episodes(self) -> list[Episode]:
        """Every episode of this namespace, faded ones included."""
        return _all(self.store, "episodes", Episode)

    def recall_at(self, time: float, window: float, *, now: float | None = None) -> list[Episode]:
        """Episodes that happened within ``window`` seconds of ``time``, faded ones skipped (``learning.recall``)."""
        return recall_at(self.episodes(), time, window, now=self.clock() if now is None else now, config=self.config)

    def recall_before(self, time: float, limit: int = 5, *, now: float | None = None) -> list[Episode]:
        """The most significant episodes before ``time``, faded ones skipped (``learning.recall``)."""
        return recall_before(self.episodes(), time, limit, now=self.clock() if now is None else now, config=self.config)

    def recall_sequence(self, start: str, direction: Direction = "forward", *, now: float | None = None) -> list[Episode]:
        """Episodes from ``start`` along ``leads_to`` (forward) or ``caused_by`` (backward) links (``learning.recall``)."""
        now = self.clock() if now is None else now
        return recall_sequence(self.episodes(), start, direction, now=now, config=self.config)

    def link_episodes(self, cause_id: str, effect_id: str) -> None:
        """Record that episode ``cause_id`` led to ``effect_id`` (both stored; both must exist).

        Raises:
            InvalidRecord: Either episode is not in this namespace.
        """
        found = {e.episode_id: e for e in self.store.get("episodes", [cause_id, effect_id]) if isinstance(e, Episode)}
        missing = [i for i in (cause_id, effect_id) if i not in found]
        if missing:
            raise InvalidRecord(f"no episode {missing[0]!r} in namespace {self.namespace!r}")
        self.store.upsert("episodes", list(link_episodes(found[cause_id], found[effect_id])))


__all__ = ["DEFAULT_PATH", "LearningMemory", "Trajectory"]
