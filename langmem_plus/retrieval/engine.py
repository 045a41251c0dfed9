"""The retrieval pipeline: candidates from three sources, scored, guarded, diversified (design.md §5).

On error: exact fingerprint matches (the in-memory index of the lesson graph, not a
Chroma ``where``), rewrite lessons whose WRONG pattern the failing action repeats
(an in-memory index too: the same mistake behind a reworded error), vector
neighbours, then the best ``error_graph_k`` personalized PageRank neighbours on a bounded neighbourhood of the
lesson graph; lessons scoped to another tool are left out. Pre-run: vector
neighbours of the task intent in its tool/domain scope, exact matches for the
fingerprints this task hit in earlier runs, and graph neighbours of its task, tool
and domain nodes. Every candidate gets the pure lesson score of ``scoring``;
``select`` applies the guards, MMR and the budget. Episodes and skills are scored on
their own scale and chosen beside the lessons (``support.choose_support``: budget
plus the avoidance reminder). The chosen items (and, before a run, the tool sheet)
then compete for ``max_context_tokens`` in an instant memory (``retrieval.context``):
ranked by relevance, the least relevant compressed to one short line, then
left out; the block and its tokens are reported on ``Retrieval``.

The query path decodes no Chroma records (ids and distances only; lessons are in
memory) and re-embeds nothing but the query: text similarity of non-vector
candidates uses the vectors Chroma stores, MMR's content vectors are computed for
the guard survivors only and cached.

On error, the fast path (``on_error``) runs the Chroma calls on a worker thread
beside the in-memory work when that has been faster lately (``retrieval.worker``)
and scores with ``fast_scoring``. The sequential version with reference scoring lives
in ``tests/retrieval_reference.py``; the two return the same ``Retrieval`` (tested).

Where candidates come from is ``retrieval.candidates``; this module ranks them.
The engine reads; it writes nothing but what it returns. The facade persists
activations and audit records.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from langmem_plus.config import MemoryConfig
from langmem_plus.retrieval.context import Assembled, Relevance, assemble
from langmem_plus.records import (
    ErrorEvent,
    Lesson,
    ScoredItem,
    TaskSpec,
    WorkingContext,
)
from langmem_plus.retrieval.candidates import CandidateSources
from langmem_plus.retrieval.fast_scoring import ActionMatcher, cosines, lesson_rows_fast, scored_lesson
from langmem_plus.retrieval.query import build_query
from langmem_plus.retrieval.select import budget, difficulty, select_with_drops, sheet_fill
from langmem_plus.retrieval.support import choose_support
from langmem_plus.retrieval.vectors import VectorCache
from langmem_plus.retrieval.worker import StrategyTimer, Worker, run_inline
from langmem_plus.store.chroma import ChromaStore
from langmem_plus.store.graph import LessonGraph

logger = logging.getLogger(__name__)
T = TypeVar("T")


def _error_query(event: ErrorEvent, ctx: WorkingContext, error_chars: int) -> str:
    """The text an error is looked up by: its fingerprint, error text, action and the run's working state."""
    parts = (event.fingerprint, event.error_text[:error_chars], event.action, build_query(ctx))
    return "\n".join(p for p in parts if p)


@dataclass
class Retrieval:
    """What one retrieval found: the chosen items, how many candidates, and what was dropped."""

    chosen: list[ScoredItem]
    candidates: list[ScoredItem]
    dropped: list[tuple[str, str]] = field(default_factory=list)
    query: str = ""
    difficulty: float = 0.0
    budget: int = 0
    tokens: int = 0
    """Tokens of ``text``, the hint block of ``chosen`` (header included), as ``tokens.count_tokens`` counts them."""
    tokens_exact: bool = True
    """False when tiktoken was unavailable and ``tokens`` is an offline estimate."""
    text: str = ""
    """The hint block of ``chosen`` as assembled in instant memory (``retrieval.context``)."""
    graph_ms: float = 0.0
    """Milliseconds the graph step (bounded personalized PageRank) took."""

    @property
    def conflict_losers(self) -> list[str]:
        return [i for i, why in self.dropped if why.startswith("conflict_loss")]


class RetrievalEngine:
    """Runs design.md §5 over one namespace's store, graph and lesson cache."""

    def __init__(
        self,
        *,
        store: ChromaStore,
        graph: LessonGraph,
        lessons: Mapping[str, Lesson],
        vectors: VectorCache,
        config: MemoryConfig,
    ) -> None:
        self.store, self.graph, self.lessons, self.vectors, self.config = store, graph, lessons, vectors, config
        self.sources = CandidateSources(store=store, graph=graph, lessons=lessons, config=config)
        """Where candidates come from (``retrieval.candidates``)."""
        self._worker = Worker("langmem-plus-retrieval")

        self.overlap: bool | None = config.retrieval.overlap_store_calls
        """Whether the fast path runs its Chroma calls on the worker thread; None: timed choice."""
        self._strategy = StrategyTimer()
        self.facts: Callable[[list[float], str, set[str]], list[ScoredItem]] | None = None
        """Facts for a query (its vector, its text, the ids already chosen), shown beside the chosen items;
        set by the facade."""

    def close(self) -> None:
        """Stop the background thread; later retrievals make their store calls inline."""
        self._worker.close()

    def _submit(self, overlap: bool, fn: Callable[..., T], *args: Any) -> Future[T]:
        """``fn(*args)`` started on the worker (``overlap``) or run here; join with ``result()``."""
        return self._worker.submit(fn, *args) if overlap else run_inline(fn, *args)

    # ------------------------------------------------------------------ scoring
    def _score_fast(
        self,
        sources: dict[str, list[str]],
        qvec: list[float],
        vector_sims: Mapping[str, float],
        *,
        fingerprint_ids: Collection[str],
        tags: Collection[str],
        now: float,
        matcher: ActionMatcher,
        known: Collection[str] = (),
        overlap: bool = False,
    ) -> list[ScoredItem]:
        """``_score`` with ``matcher.actions`` as ``actions``: the same items, computed faster.

        The stored vectors of the non-vector candidates come from the snapshot's rows; when
        some must be read from Chroma, that read runs on the worker while the rewrite checks
        (the costly part of the fingerprint credits) are memoised here; components, credits and
        scores come from ``fast_scoring.lesson_rows_fast`` in one pass over the lessons; ``ScoredItem``s
        are built without re-validating what this method just computed (``fast_scoring.scored_lesson``, as ``model_construct`` would).
        """
        cfg = self.config
        lessons = self.sources.retrievable(sources)
        need = [l for l in lessons if l.id not in vector_sims]
        # The snapshot's rows are a memory read: a thread handoff would cost more than it hides.
        here = self.vectors.relevance_here(need) if need else None
        pending = self._submit(overlap, self.vectors.relevance, need) if need and here is None else None
        if pending is not None:  # the stored-vector read runs on the worker: the rewrite checks meanwhile
            for lesson in lessons:
                matcher.hits(lesson)
        sims = dict(vector_sims)
        rows = here if pending is None else pending.result()
        if rows is not None:
            sims.update(zip((l.id for l in need), cosines(np.asarray(qvec, dtype=np.float32), rows)))
        comps, scores = lesson_rows_fast(
            lessons, fingerprint_ids=fingerprint_ids, tags=tags, text_similarity=[sims[l.id] for l in lessons], now=now,
            matcher=matcher, known=known, config=cfg,
        )
        items = [
            scored_lesson(lesson, score, c, [f"source:{s}" for s in sources[lesson.id]])
            for lesson, score, c in zip(lessons, scores, comps)
        ]
        neg = [-score for score in scores]
        return [items[i] for i in sorted(range(len(items)), key=neg.__getitem__)]  # stable: ties keep source order

    def _finish(
        self,
        items: list[ScoredItem],
        ctx: WorkingContext,
        query: str,
        *,
        qvec: list[float],
        goal: str,
        now: float,
        limit: int | None = None,
        relevance: Relevance | None = None,
        more: Callable[[list[ScoredItem]], list[ScoredItem]] | None = None,
        graph_ms: float = 0.0,
    ) -> Retrieval:
        """Guards, MMR and the budget over the scored lessons, the support items beside them, the token cap.

        ``limit`` replaces the difficulty budget K' and caps the whole list (lessons first,
        then episodes and skills) at that many items, e.g. a retriever's ``k``. ``more``
        adds items beside the chosen ones (the tool sheet) before all of them compete for
        the token budget in instant memory, ranked by ``relevance``. ``graph_ms``: the graph source's time, reported.

        Raises:
            ValueError: ``limit`` is negative.
        """
        if limit is not None and limit < 0:
            raise ValueError(f"limit (k) must be a count of items >= 0, got {limit}")
        cfg = self.config
        d = difficulty(ctx, cfg)
        k = budget(d, cfg) if limit is None else limit
        chosen, dropped = select_with_drops(items, vectors=None, k=k, config=cfg, vectors_of=self._content_rows)
        support = self.sources.support(qvec, goal, now)
        chosen += choose_support(support, cfg, taken={c.item_id for c in chosen})
        if self.facts is not None and cfg.retrieval.fact_budget > 0:
            chosen += self.facts(qvec, query, {c.item_id for c in chosen})[: cfg.retrieval.fact_budget]
        if limit is not None:
            dropped += [(c.item_id, f"limit:{limit}") for c in chosen[limit:]]
            chosen = chosen[:limit]
        if more is not None:
            chosen += more(chosen)
        block = self._cap(chosen, relevance, now)
        dropped += [(c.item_id, f"token_cap:{cfg.context.max_context_tokens}") for c in block.dropped]
        return Retrieval(
            chosen=block.shown, candidates=items + support, dropped=dropped, query=query, difficulty=d, budget=k,
            tokens=block.tokens, tokens_exact=block.exact, graph_ms=graph_ms, text=block.text,
        )

    def _content_rows(self, items: list[ScoredItem]) -> np.ndarray:
        return self.vectors.content([it.item for it in items if isinstance(it.item, Lesson)])

    def _cap(self, chosen: list[ScoredItem], relevance: Relevance | None, now: float) -> Assembled:
        """The chosen items through instant memory: they compete for ``max_context_tokens`` by relevance."""
        return assemble(chosen, budget=self.config.context.max_context_tokens, config=self.config, relevance=relevance, now=now)

    # ------------------------------------------------------------------ moments
    def on_error(self, event: ErrorEvent, ctx: WorkingContext, *, now: float, limit: int | None = None) -> Retrieval:
        """design.md §5 at the moment of an error.

        The vector query can run on the worker thread (Chroma releases the GIL) while the
        fingerprint, failing-action and graph candidates are computed here; nothing here
        depends on its result, and it is joined before the sources are merged. Likewise
        the stored-vector read of ``_score_fast``. Whether to overlap is ``self.overlap``,
        or, when None, whichever has been faster lately (``worker.StrategyTimer``): on a
        busy machine thread wake-ups cost more than the overlap saves. Either way the
        result is the sequential reference's (``tests/retrieval_reference.py``, tested). ``limit``: as in ``_finish``.
        """
        overlap = self._strategy.choose() if self.overlap is None else self.overlap
        started = time.perf_counter()
        result = self._on_error_fast(event, ctx, now=now, overlap=overlap, limit=limit)
        self._strategy.record(overlap, (time.perf_counter() - started) * 1000.0)
        return result

    def _on_error_fast(
        self, event: ErrorEvent, ctx: WorkingContext, *, now: float, overlap: bool, limit: int | None = None
    ) -> Retrieval:
        cfg = self.config
        query = _error_query(event, ctx, self.config.capture.query_error_chars)
        qvec = self.store.embed_query(query)
        src = self.sources
        pending = self._submit(overlap, src.vector, qvec, cfg.retrieval.candidates_k)
        matcher = ActionMatcher([event.action] if event.action else [])
        exact = self.graph.lessons_for_fingerprint(event.fingerprint_id)
        action = src.action(event.action, event.tool, matcher, tool_only=True) if event.action else []
        graph = src.graph_top(src.error_seeds(event), cfg.retrieval.error_graph_k)
        vec = pending.result()
        sources = src.error_sources(event, exact, action, vec, graph.scores)
        items = self._score_fast(
            sources, qvec, vec, fingerprint_ids={event.fingerprint_id}, tags=event.tags, now=now, matcher=matcher,
            overlap=overlap,
        )
        goal = ctx.goal or event.error_text[: self.config.capture.context_text_chars]
        return self._finish(items, ctx, query, qvec=qvec, goal=goal, now=now, limit=limit, graph_ms=graph.ms)

    def pre_run(
        self,
        task: TaskSpec,
        ctx: WorkingContext,
        *,
        recent_fingerprints: Collection[str],
        recent_tags: Collection[str],
        recent_actions: Sequence[str] = (),
        known_lessons: Collection[str] = (),
        now: float,
        limit: int | None = None,
        relevance: Relevance | None = None,
    ) -> Retrieval:
        """design.md §5 before a run: task intent in scope, plus this task's recent failure context.

        ``recent_actions`` are the agent's failed actions in earlier runs of this task (or
        its family): lessons whose WRONG pattern occurs there keep their full fingerprint
        credit, the others keep ``rewrite_miss_factor`` of it. ``known_lessons`` were applied
        in those runs (the agent's draft matched their WRONG pattern): they count as a full
        fingerprint match, since their failures stopped showing only because they were applied.
        ``limit`` (as in ``_finish``) also leaves out the tool sheet, so no more than ``limit`` items come back.
        ``relevance`` ranks the chosen items and the sheet in instant memory (the facade passes habit rates).
        """
        cfg, src = self.config, self.sources
        query = build_query(ctx)
        qvec = self.store.embed_query(query)
        vec = {
            i: s for i, s in src.vector(qvec, 2 * cfg.retrieval.candidates_k).items() if src.in_scope(i, task)
        }
        vec = dict(sorted(vec.items(), key=lambda kv: -kv[1])[: cfg.retrieval.candidates_k])
        exact: set[str] = set()
        for fp in sorted(recent_fingerprints):
            exact |= self.graph.lessons_for_fingerprint(fp)
        seeds = {f"fp:{fp}": cfg.retrieval.graph_seed_weight_fp for fp in sorted(recent_fingerprints)}
        for node in (f"task:{task.task_id}", f"tool:{task.tool}", f"domain:{task.domain}"):
            seeds[node] = self.config.retrieval.graph_seed_weight_scope
        top = src.graph_top(seeds)
        graph = {i: s for i, s in top.scores.items() if src.in_scope(i, task)}
        sources = src.merge(
            ("history", known_lessons), ("fingerprint", exact), ("vector", vec), ("graph", graph)
        )
        items = self._score_fast(
            sources,
            qvec,
            vec,
            fingerprint_ids=set(recent_fingerprints),
            tags=set(recent_tags),
            now=now,
            matcher=ActionMatcher(recent_actions),
            known=set(known_lessons),
        )
        def sheet(chosen: list[ScoredItem]) -> list[ScoredItem]:
            return sheet_fill(items, chosen, tool=task.tool, config=cfg)

        return self._finish(
            items, ctx, query, qvec=qvec, goal=ctx.goal or task.goal, now=now, limit=limit, relevance=relevance,
            graph_ms=top.ms,
            more=None if limit is not None else sheet,
        )


__all__ = ["Retrieval", "RetrievalEngine"]
