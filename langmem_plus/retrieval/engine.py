"""The retrieval pipeline: candidates from three sources, scored, guarded, diversified (DESIGN §5).

On error: exact fingerprint matches (the in-memory index of the lesson graph, not a
Chroma ``where``), rewrite lessons whose WRONG pattern the failing action repeats
(an in-memory index too: the same mistake behind a reworded error), vector
neighbours, then personalized PageRank neighbours on a bounded neighbourhood of the
lesson graph; lessons scoped to another tool are left out. Pre-run: vector
neighbours of the task intent in its tool/domain scope, exact matches for the
fingerprints this task hit in earlier runs, and graph neighbours of its task, tool
and domain nodes. Every candidate gets the pure lesson score of ``scoring``;
``select`` applies the guards, MMR and the budget. Episodes and skills are scored on
their own scale and chosen beside the lessons (``support.choose_support``: budget
plus the avoidance reminder), and ``max_context_tokens`` caps the rendered hints
(``support.cap_tokens``); the tokens handed over are reported on ``Retrieval``.

The query path decodes no Chroma records (ids and distances only; lessons are in
memory) and re-embeds nothing but the query: text similarity of non-vector
candidates uses the vectors Chroma stores, MMR's content vectors are computed for
the guard survivors only and cached.

The engine reads; it writes nothing but what it returns. The facade persists
activations and audit records.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from langmem_plus.config import MemoryConfig
from langmem_plus.embeddings import HashingEmbeddings
from langmem_plus.learning.episodes import episode_recallable
from langmem_plus.learning.hints import HINTS_HEADER, hint_from_item, render_hints
from langmem_plus.records import (
    Episode,
    ErrorEvent,
    Lesson,
    ScoredItem,
    Skill,
    TaskSpec,
    WorkingContext,
)
from langmem_plus.retrieval.query import build_query
from langmem_plus.retrieval.scoring import (
    cosine,
    episode_components,
    episode_score,
    fingerprint_credit,
    lesson_components,
    lesson_score,
    rewrite_applies,
)
from langmem_plus.retrieval.select import budget, difficulty, select_with_drops
from langmem_plus.retrieval.support import cap_tokens, choose_support, skill_components
from langmem_plus.store.chroma import ChromaStore
from langmem_plus.store.graph import LessonGraph
from langmem_plus.tokens import count_tokens

logger = logging.getLogger("langmem_plus")

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
        """Relevance rows for ``lessons`` in order, the missing ones read from Chroma in one ``get``.

        Chroma holds the vectors it ranks by, so nothing is re-embedded on the query
        path: a remote embedder is never called, and one ``get`` of 20 vectors (0.6 ms)
        is cheaper than hashing 20 texts (2.2 ms, measured at 5k lessons).
        A lesson Chroma cannot return (not written yet, or a read error) is embedded
        with the store's embedder instead.
        """
        missing = [l for l in lessons if l.id not in self._relevance]
        if missing:
            try:
                self._relevance.update(self._store.stored_embeddings("lessons", [l.id for l in missing]))
            except Exception as exc:  # a damaged vector segment must not break retrieval
                logger.warning("langmem_plus: reading stored lesson vectors failed (%s); re-embedding", exc)
            unstored = [l for l in missing if l.id not in self._relevance]
            if unstored:
                rows = self._store.embed_documents([lesson_text(l) for l in unstored])
                self._relevance.update((l.id, np.asarray(r, dtype=np.float32)) for l, r in zip(unstored, rows))
        return self._stack([self._relevance[l.id] for l in lessons])

    def content(self, lessons: Sequence[Lesson]) -> np.ndarray:
        """Content rows for ``lessons`` in order (for MMR)."""
        missing = [l for l in lessons if l.id not in self._content]
        if missing:
            rows = self._content_embedder.embed_array([rule_core(l) for l in missing])
            self._content.update((l.id, rows[i]) for i, l in enumerate(missing))
        return self._stack([self._content[l.id] for l in lessons])

    def _stack(self, rows: Sequence[np.ndarray | None]) -> np.ndarray:
        if not rows:
            return np.zeros((0, 1), dtype=np.float32)
        dim = next((len(r) for r in rows if r is not None), 1)
        return np.vstack([r if r is not None else np.zeros(dim, dtype=np.float32) for r in rows])


def lesson_text(lesson: Lesson) -> str:
    """The text a lesson is embedded by: its rule, the failures it answers and its tags."""
    return " ".join([lesson.rule_text, *lesson.fingerprints, *lesson.tags])


def rule_core(lesson: Lesson) -> str:
    """The mistake a lesson fixes, without the context it shares with its siblings.

    Two lessons are redundant when they fix the same mistake: ``from -> LOAD`` and
    ``read -> LOAD`` share their fix but answer different habits, and an agent may have both.
    """
    if lesson.wrong and lesson.correct is not None:
        return lesson.wrong
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
    tokens: int = 0
    """Tokens of the rendered hints of ``chosen`` (header included), as ``tokens.count_tokens`` counts them."""
    tokens_exact: bool = True
    """False when tiktoken was unavailable and ``tokens`` is an offline estimate."""
    graph_ms: float = 0.0
    """Milliseconds the graph step (bounded personalized PageRank) took."""

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
        self._graph_ms = 0.0

    # ------------------------------------------------------------------ sources
    def _vector_candidates(self, qvec: list[float], n: int) -> dict[str, float]:
        if not self.lessons:
            return {}
        return {i: sim for i, sim in self.store.query_ids("lessons", qvec, n=n) if i in self.lessons}

    def _graph_candidates(self, seeds: Mapping[str, float]) -> dict[str, float]:
        seeds = {node: w for node, w in seeds.items() if node in self.graph.nx}
        self._graph_ms = 0.0
        if not seeds:
            return {}
        cfg = self.config
        started = time.perf_counter()
        ranks = self.graph.personalized_pagerank(
            seeds, hops=cfg.graph_hops, max_nodes=cfg.graph_max_nodes, alpha=cfg.pagerank_alpha
        )
        top = sorted(ranks.items(), key=lambda kv: -kv[1])[: cfg.candidates_k]
        self._graph_ms = (time.perf_counter() - started) * 1000.0
        return dict(top)

    def _action_candidates(self, action: str, tool: str | None) -> list[str]:
        """Rewrite lessons whose WRONG pattern occurs in the failing action, same tool first, at most K.

        The same mistake can come back with a reworded error or fresh literals, so a
        new fingerprint; the action still shows it (an in-memory index, like fingerprints).
        """
        found = []
        for i in self.graph.lessons_for_action(action):
            lesson = self.lessons.get(i)
            if lesson is not None and lesson.retrievable and rewrite_applies(lesson, [action]):
                found.append((lesson.scope.tool not in (None, tool), i))
        return [i for _, i in sorted(found)[: self.config.candidates_k]]

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
    ) -> list[ScoredItem]:
        lessons = [self.lessons[i] for i in sources if i in self.lessons and self.lessons[i].retrievable]
        need = [l for l in lessons if l.id not in vector_sims]
        q = np.asarray(qvec, dtype=np.float32)
        sims = dict(vector_sims)
        if need:
            sims.update(zip((l.id for l in need), (cosine(q, row) for row in self.vectors.relevance(need))))
        items: list[ScoredItem] = []
        for lesson in lessons:
            sim = sims[lesson.id]
            comps = lesson_components(
                lesson, fingerprint_ids=fingerprint_ids, tags=tags, text_similarity=sim, now=now, config=self.config
            )
            if lesson.id in known:
                comps["fingerprint_match"] = 1.0
            else:
                comps["fingerprint_match"] = fingerprint_credit(
                    lesson,
                    exact=comps["fingerprint_match"] > 0,
                    actions=actions,
                    miss_factor=self.config.rewrite_miss_factor,
                    action_credit=self.config.action_match_credit,
                )
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
        return [items[i] for i in order]

    def _support(self, qvec: list[float], goal: str, now: float) -> list[ScoredItem]:
        """Scored episodes and skills near the query (DESIGN §5.3), each on its own scale."""
        cfg = self.config
        out: list[ScoredItem] = []
        for kind in ("episodes", "skills"):
            if cfg.episode_candidates_k <= 0 or not self.store.has_records(kind):
                continue
            for rec, sim in self.store.query(kind, embedding=qvec, n=cfg.episode_candidates_k):
                if isinstance(rec, Episode):
                    if not episode_recallable(rec, now, cfg):  # faded or expired: kept, not shown
                        continue
                    comps = episode_components(rec, cos=sim, goal=goal, now=now, config=cfg)
                    out.append(ScoredItem(kind="episode", item=rec, score=episode_score(comps, cfg), components=comps, reasons=["source:episodes"]))
                elif isinstance(rec, Skill):
                    comps = skill_components(rec, cos=sim, goal=goal)
                    out.append(ScoredItem(kind="skill", item=rec, score=episode_score(comps, cfg), components=comps, reasons=["source:skills"]))
        return out

    def _finish(
        self, items: list[ScoredItem], ctx: WorkingContext, query: str, *, qvec: list[float], goal: str, now: float
    ) -> Retrieval:
        cfg = self.config
        d = difficulty(ctx, cfg)
        k = budget(d, cfg)
        chosen, dropped = select_with_drops(items, vectors=None, k=k, config=cfg, vectors_of=self._content_rows)
        support = self._support(qvec, goal, now)
        chosen += choose_support(support, cfg, taken={c.item_id for c in chosen})
        shown, skipped, tokens, exact = self._cap(chosen)
        dropped += [(c.item_id, f"token_cap:{cfg.max_context_tokens}") for c in skipped]
        return Retrieval(
            chosen=shown, candidates=items + support, dropped=dropped, query=query,
            difficulty=d, budget=k, tokens=tokens, tokens_exact=exact, graph_ms=self._graph_ms,
        )

    def _content_rows(self, items: list[ScoredItem]) -> np.ndarray:
        return self.vectors.content([it.item for it in items if isinstance(it.item, Lesson)])

    def _cap(self, chosen: list[ScoredItem]) -> tuple[list[ScoredItem], list[ScoredItem], int, bool]:
        """Enforce ``max_context_tokens`` on the rendered hints, in choice order (issue 3)."""
        if not chosen:
            return [], [], 0, True
        header = count_tokens(HINTS_HEADER)
        lines = [render_hints([hint_from_item(c)]).split("\n", 1)[1] for c in chosen]
        counts = [count_tokens(line) for line in lines]
        shown, skipped, used = cap_tokens(chosen, [c.n + 1 for c in counts], self.config.max_context_tokens - header.n)
        exact = header.exact and all(c.exact for c in counts)
        return shown, skipped, (used + header.n) if shown else 0, exact

    @staticmethod
    def _merge_sources(*named: tuple[str, Iterable[str]]) -> dict[str, list[str]]:
        sources: dict[str, list[str]] = {}
        for name, ids in named:
            # Sets have a per-process order (string hashing is salted): sort, so that ties
            # break the same way in every process and a seeded run repeats exactly.
            for i in ids if isinstance(ids, (list, tuple, dict)) else sorted(ids):
                sources.setdefault(i, []).append(name)
        return sources

    # ------------------------------------------------------------------ moments
    def on_error(self, event: ErrorEvent, ctx: WorkingContext, *, now: float) -> Retrieval:
        """DESIGN §5 at the moment of an error."""
        cfg = self.config
        query = "\n".join(p for p in (event.fingerprint, event.error_text[:500], event.action, build_query(ctx)) if p)
        qvec = self.store.embed_query(query)
        exact = self.graph.lessons_for_fingerprint(event.fingerprint_id)
        action = self._action_candidates(event.action, event.tool) if event.action else []
        vec = self._vector_candidates(qvec, cfg.candidates_k)
        seeds = {f"fp:{event.fingerprint_id}": cfg.graph_seed_weight_fp}
        seeds.update({f"tag:{t}": TAG_SEED_WEIGHT for t in event.tags})
        if event.tool:
            seeds[f"tool:{event.tool}"] = SCOPE_SEED_WEIGHT
        graph = self._graph_candidates(seeds)
        sources = self._merge_sources(("fingerprint", exact), ("action", action), ("vector", vec), ("graph", graph))
        if event.tool:  # a lesson scoped to another tool does not answer this tool's error
            sources = {i: s for i, s in sources.items() if self._tool_ok(i, event.tool)}
        items = self._score(
            sources, qvec, vec, fingerprint_ids={event.fingerprint_id}, tags=event.tags, now=now, actions=[event.action] if event.action else []
        )
        return self._finish(items, ctx, query, qvec=qvec, goal=ctx.goal or event.error_text[:300], now=now)

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
        for fp in sorted(recent_fingerprints):
            exact |= self.graph.lessons_for_fingerprint(fp)
        seeds = {f"fp:{fp}": cfg.graph_seed_weight_fp for fp in sorted(recent_fingerprints)}
        for node in (f"task:{task.task_id}", f"tool:{task.tool}", f"domain:{task.domain}"):
            seeds[node] = SCOPE_SEED_WEIGHT
        graph = {i: s for i, s in self._graph_candidates(seeds).items() if self._in_scope(i, task)}
        sources = self._merge_sources(
            ("history", known_lessons), ("fingerprint", exact), ("vector", vec), ("graph", graph)
        )
        items = self._score(
            sources,
            qvec,
            vec,
            fingerprint_ids=set(recent_fingerprints),
            tags=set(recent_tags),
            now=now,
            actions=recent_actions,
            known=set(known_lessons),
        )
        return self._finish(items, ctx, query, qvec=qvec, goal=ctx.goal or task.goal, now=now)

    def _tool_ok(self, lesson_id: str, tool: str) -> bool:
        lesson = self.lessons.get(lesson_id)
        return lesson is not None and lesson.scope.tool in (None, tool)

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
