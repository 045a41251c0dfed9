"""The retrieval pipeline: candidates from three sources, scored, guarded, diversified (DESIGN §5).

On error: exact fingerprint matches (the in-memory index of the lesson graph, not a
Chroma ``where``), then vector neighbours, then personalized PageRank neighbours on a
bounded neighbourhood of the lesson graph. Pre-run: vector neighbours of the task
intent in its tool/domain scope, exact matches for the fingerprints this task hit in
earlier runs, and graph neighbours of its task, tool and domain nodes. Every
candidate gets the pure lesson score of ``scoring``; ``select`` applies the guards,
MMR and the budget.

The engine reads; it writes nothing but what it returns. The facade persists
activations and audit records.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Collection, Iterable, Mapping, Sequence

import numpy as np

from langmem_plus.config import MemoryConfig
from langmem_plus.embeddings import HashingEmbeddings
from langmem_plus.records import ErrorEvent, Lesson, ScoredItem, TaskSpec, WorkingContext
from langmem_plus.retrieval.query import build_query
from langmem_plus.retrieval.scoring import cosine, lesson_components, lesson_score, rewrite_applicability
from langmem_plus.retrieval.select import budget, difficulty, select_with_drops
from langmem_plus.store.chroma import ChromaStore
from langmem_plus.store.graph import LessonGraph

TAG_SEED_WEIGHT = 0.5
"""PageRank personalization mass on each tag node, relative to the fingerprint node."""
SCOPE_SEED_WEIGHT = 0.25
"""PageRank personalization mass on tool / domain / task nodes."""


class VectorCache:
    """Two vectors per lesson, computed in one batch when first needed.

    ``relevance``: the store's embedding of the lesson's full text (rule, failures it
    answers, tags), for text similarity to a query. ``content``: a local hashing
    embedding of the rule alone, for MMR's redundancy term: lessons answering one
    failure share its text, yet ``filter -> KEEP`` and ``select -> PICK`` are not
    redundant. Local hashing keeps this free of API calls whatever the embedder.
    """

    def __init__(self, store: ChromaStore, dim: int) -> None:
        self._store = store
        self._content_embedder = HashingEmbeddings(dim=dim)
        self._relevance: dict[str, np.ndarray] = {}
        self._content: dict[str, np.ndarray] = {}

    def drop(self, lesson_id: str) -> None:
        self._relevance.pop(lesson_id, None)
        self._content.pop(lesson_id, None)

    def relevance(self, lessons: list[Lesson]) -> np.ndarray:
        """Relevance rows for ``lessons`` in order, embedding the missing ones in one call."""
        return self._rows(lessons, self._relevance, self._store.embed_documents, lesson_text)

    def content(self, lessons: list[Lesson]) -> np.ndarray:
        """Content rows for ``lessons`` in order (for MMR)."""
        return self._rows(lessons, self._content, self._content_embedder.embed_documents, rule_core)

    @staticmethod
    def _rows(
        lessons: list[Lesson],
        cache: dict[str, np.ndarray],
        embed: Callable[[list[str]], list[list[float]]],
        text: Callable[[Lesson], str],
    ) -> np.ndarray:
        missing = [l for l in lessons if l.id not in cache]
        if missing:
            for lesson, vec in zip(missing, embed([text(l) for l in missing])):
                cache[lesson.id] = np.asarray(vec, dtype=np.float32)
        if not lessons:
            return np.zeros((0, 1), dtype=np.float32)
        return np.vstack([cache[l.id] for l in lessons])


def lesson_text(lesson: Lesson) -> str:
    """The text a lesson is embedded by: its rule, the failures it answers and its tags."""
    return " ".join([lesson.rule_text, *lesson.fingerprints, *lesson.tags])


def rule_core(lesson: Lesson) -> str:
    """What a lesson says, without the context it shares with its siblings."""
    if lesson.wrong and lesson.correct is not None:
        return f"{lesson.wrong} -> {lesson.correct}"
    return lesson.rule_text.split(" (", 1)[0]


@dataclass
class Retrieval:
    """What one retrieval found: the chosen items, how many candidates, and what was dropped."""

    chosen: list[ScoredItem]
    candidates: list[ScoredItem]
    dropped: list[tuple[str, str]] = field(default_factory=list)
    query: str = ""
    difficulty: float = 0.0
    budget: int = 0

    @property
    def conflict_losers(self) -> list[str]:
        return [i for i, why in self.dropped if why.startswith("conflict_loss")]


class RetrievalEngine:
    """Runs DESIGN §5 over one namespace's store, graph and lesson cache."""

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

    # ------------------------------------------------------------------ sources
    def _vector_candidates(self, qvec: list[float], n: int) -> dict[str, float]:
        if not self.lessons:
            return {}
        hits = self.store.query("lessons", embedding=qvec, n=n)
        return {rec.id: sim for rec, sim in hits if isinstance(rec, Lesson)}

    def _graph_candidates(self, seeds: Mapping[str, float]) -> dict[str, float]:
        seeds = {node: w for node, w in seeds.items() if node in self.graph.nx}
        if not seeds:
            return {}
        cfg = self.config
        ranks = self.graph.personalized_pagerank(
            seeds, hops=cfg.graph_hops, max_nodes=cfg.graph_max_nodes, alpha=cfg.pagerank_alpha
        )
        top = sorted(ranks.items(), key=lambda kv: -kv[1])[: cfg.candidates_k]
        return dict(top)

    # ------------------------------------------------------------------ scoring
    def _score(
        self,
        sources: dict[str, list[str]],
        qvec: list[float],
        vector_sims: Mapping[str, float],
        *,
        fingerprint_ids: Collection[str],
        tags: Collection[str],
        now: float,
        actions: Sequence[str] = (),
        known: Collection[str] = (),
    ) -> tuple[list[ScoredItem], np.ndarray]:
        lessons = [self.lessons[i] for i in sources if i in self.lessons and self.lessons[i].retrievable]
        vecs = self.vectors.relevance(lessons)
        q = np.asarray(qvec, dtype=np.float32)
        items: list[ScoredItem] = []
        for row, lesson in enumerate(lessons):
            sim = vector_sims.get(lesson.id)
            if sim is None:
                sim = cosine(q, vecs[row])
            comps = lesson_components(
                lesson, fingerprint_ids=fingerprint_ids, tags=tags, text_similarity=sim, now=now, config=self.config
            )
            if lesson.id in known:
                comps["fingerprint_match"] = 1.0
            else:
                comps["fingerprint_match"] *= rewrite_applicability(lesson, actions, self.config.rewrite_miss_factor)
            items.append(
                ScoredItem(
                    kind="lesson",
                    item=lesson,
                    score=lesson_score(comps, self.config),
                    components=comps,
                    reasons=[f"source:{s}" for s in sources[lesson.id]],
                )
            )
        order = sorted(range(len(items)), key=lambda i: -items[i].score)
        ranked = [lessons[i] for i in order]
        return [items[i] for i in order], self.vectors.content(ranked)

    def _finish(self, items: list[ScoredItem], vecs: np.ndarray, ctx: WorkingContext, query: str) -> Retrieval:
        d = difficulty(ctx, self.config)
        k = budget(d, self.config)
        chosen, dropped = select_with_drops(items, vectors=vecs if len(items) else None, k=k, config=self.config)
        return Retrieval(chosen=chosen, candidates=items, dropped=dropped, query=query, difficulty=d, budget=k)

    @staticmethod
    def _merge_sources(*named: tuple[str, Iterable[str]]) -> dict[str, list[str]]:
        sources: dict[str, list[str]] = {}
        for name, ids in named:
            for i in ids:
                sources.setdefault(i, []).append(name)
        return sources

    # ------------------------------------------------------------------ moments
    def on_error(self, event: ErrorEvent, ctx: WorkingContext, *, now: float) -> Retrieval:
        """DESIGN §5 at the moment of an error."""
        cfg = self.config
        query = "\n".join(p for p in (event.fingerprint, event.error_text[:500], event.action, build_query(ctx)) if p)
        qvec = self.store.embed_query(query)
        exact = self.graph.lessons_for_fingerprint(event.fingerprint_id)
        vec = self._vector_candidates(qvec, cfg.candidates_k)
        seeds = {f"fp:{event.fingerprint_id}": cfg.graph_seed_weight_fp}
        seeds.update({f"tag:{t}": TAG_SEED_WEIGHT for t in event.tags})
        if event.tool:
            seeds[f"tool:{event.tool}"] = SCOPE_SEED_WEIGHT
        graph = self._graph_candidates(seeds)
        sources = self._merge_sources(("fingerprint", exact), ("vector", vec), ("graph", graph))
        items, vecs = self._score(
            sources, qvec, vec, fingerprint_ids={event.fingerprint_id}, tags=event.tags, now=now, actions=[event.action] if event.action else []
        )
        return self._finish(items, vecs, ctx, query)

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
    ) -> Retrieval:
        """DESIGN §5 before a run: task intent in scope, plus this task's recent failure context.

        ``recent_actions`` are the agent's failed actions in earlier runs of this task (or
        its family): lessons whose WRONG pattern occurs there keep their full fingerprint
        credit, the others keep ``rewrite_miss_factor`` of it. ``known_lessons`` were applied
        in those runs (the agent's draft matched their WRONG pattern): they count as a full
        fingerprint match, since their failures stopped showing only because they were applied.
        """
        cfg = self.config
        query = build_query(ctx)
        qvec = self.store.embed_query(query)
        vec = {
            i: s for i, s in self._vector_candidates(qvec, 2 * cfg.candidates_k).items() if self._in_scope(i, task)
        }
        vec = dict(sorted(vec.items(), key=lambda kv: -kv[1])[: cfg.candidates_k])
        exact: set[str] = set()
        for fp in recent_fingerprints:
            exact |= self.graph.lessons_for_fingerprint(fp)
        seeds = {f"fp:{fp}": cfg.graph_seed_weight_fp for fp in recent_fingerprints}
        for node in (f"task:{task.task_id}", f"tool:{task.tool}", f"domain:{task.domain}"):
            seeds[node] = SCOPE_SEED_WEIGHT
        graph = {i: s for i, s in self._graph_candidates(seeds).items() if self._in_scope(i, task)}
        sources = self._merge_sources(
            ("history", known_lessons), ("fingerprint", exact), ("vector", vec), ("graph", graph)
        )
        items, vecs = self._score(
            sources,
            qvec,
            vec,
            fingerprint_ids=set(recent_fingerprints),
            tags=set(recent_tags),
            now=now,
            actions=recent_actions,
            known=set(known_lessons),
        )
        return self._finish(items, vecs, ctx, query)

    def _in_scope(self, lesson_id: str, task: TaskSpec) -> bool:
        lesson = self.lessons.get(lesson_id)
        if lesson is None:
            return False
        scope = lesson.scope
        if scope.level == "global":
            return True
        if scope.level == "task":
            return scope.task in (None, task.task_id)
        # A field unknown on either side does not exclude: only a known mismatch does.
        tool_ok = scope.tool is None or task.tool is None or scope.tool == task.tool
        domain_ok = scope.domain is None or task.domain is None or scope.domain == task.domain
        return tool_ok and domain_ok


__all__ = ["Retrieval", "RetrievalEngine", "VectorCache", "lesson_text", "rule_core"]
