"""Where retrieval's candidates come from (design.md §5): the sources, apart from how they are ranked.

Lessons: Chroma's vector neighbours of the query, exact fingerprint matches and rewrite
lessons whose WRONG pattern the failing action repeats (in-memory indexes of the lesson
graph, never a Chroma ``where``), and personalized PageRank neighbours on a bounded
neighbourhood of the graph; scope and tool filters. Support items: episodes and skills
near the query, episodes as memory holds them (sightings folded, TTL aged). The engine
(``retrieval.engine``) scores, guards, diversifies and budgets what these return.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import NamedTuple

from langmem_plus.config import MemoryConfig
from langmem_plus.learning.episodes import episode_recallable
from langmem_plus.records import RETRIEVABLE_STATUSES, Episode, ErrorEvent, Lesson, ScoredItem, Skill, TaskSpec
from langmem_plus.retrieval.fast_scoring import ActionMatcher
from langmem_plus.retrieval.scoring import episode_components, episode_score
from langmem_plus.retrieval.support import skill_components
from langmem_plus.store.chroma import ChromaStore
from langmem_plus.store.graph import LessonGraph


class GraphTop(NamedTuple):
    """The graph source's answer: lesson id -> PageRank score, and the milliseconds it took."""

    scores: dict[str, float]
    ms: float


class CandidateSources:
    """The candidate sources of one namespace: its store, lesson graph and lessons (read only)."""

    def __init__(self, *, store: ChromaStore, graph: LessonGraph, lessons: Mapping[str, Lesson], config: MemoryConfig) -> None:
        self.store, self.graph, self.lessons, self.config = store, graph, lessons, config
        self.episode_view: Callable[[Episode], Episode] | None = None
        """A stored episode as memory holds it (sightings folded, TTL aged; ``MemoryView.episode``); set by the facade."""

    def vector(self, qvec: list[float], n: int) -> dict[str, float]:
        """Chroma's ``n`` nearest lessons to ``qvec`` that this memory holds, with their cosine similarity."""
        if not self.lessons:
            return {}
        return {i: sim for i, sim in self.store.query_ids("lessons", qvec, n=n) if i in self.lessons}

    def graph_top(self, seeds: Mapping[str, float], k: int | None = None) -> GraphTop:
        """The top ``k`` lessons (default ``candidates_k``) of a personalized PageRank from ``seeds`` on a bounded
        neighbourhood, and its time."""
        cfg = self.config
        k = cfg.retrieval.candidates_k if k is None else k
        seeds = {node: w for node, w in seeds.items() if node in self.graph}
        if not seeds or k <= 0:
            return GraphTop({}, 0.0)
        started = time.perf_counter()
        top = self.graph.personalized_pagerank(
            seeds, hops=cfg.retrieval.graph_hops, max_nodes=cfg.retrieval.graph_max_nodes, alpha=cfg.retrieval.pagerank_alpha, top=k,
            rtol=cfg.retrieval.pagerank_rtol,
        )
        return GraphTop(top, (time.perf_counter() - started) * 1000.0)

    def action(
        self, action: str, tool: str | None, matcher: ActionMatcher | None = None, *, tool_only: bool = False
    ) -> list[str]:
        """Rewrite lessons whose WRONG pattern occurs in the failing action, same tool first, at most K.

        The same mistake can come back with a reworded error or fresh literals, so a
        new fingerprint; the action still shows it (an in-memory index, like fingerprints).
        Status, tool and pattern come from the graph's index, so the lessons this drops
        are never parsed. ``matcher`` (over ``[action]``) memoises the pattern checks for
        the scoring that follows. ``tool_only`` (with a ``tool``): lessons scoped to another
        tool are left out before their patterns are checked. ``error_sources`` drops them
        anyway, and they sort after this tool's, so its sources are the same; at 100k lessons
        most lessons sharing the action's WRONG word belong to other tools.
        """
        matcher = matcher if matcher is not None else ActionMatcher([action])
        graph = self.graph
        skip_other = tool_only and bool(tool)
        found = []
        for i in graph.lessons_for_action(action):
            other = graph.tool_of(i) not in (None, tool)
            if other and skip_other:
                continue
            pattern = graph.rewrite_of(i)
            if pattern is None or graph.status_of(i) not in RETRIEVABLE_STATUSES or i not in self.lessons:
                continue
            if any(matcher.pattern_hits(*pattern)):
                found.append((other, i))
        return [i for _, i in sorted(found)[: self.config.retrieval.candidates_k]]

    def retrievable(self, ids: Iterable[str]) -> list[Lesson]:
        """The retrievable lessons among ``ids``, in order; the graph's statuses drop the others unparsed."""
        status_of, lessons = self.graph.status_of, self.lessons
        out = []
        for i in ids:
            if status_of(i) in RETRIEVABLE_STATUSES:
                lesson = lessons.get(i)
                if lesson is not None and lesson.retrievable:
                    out.append(lesson)
        return out

    def support(self, qvec: list[float], goal: str, now: float) -> list[ScoredItem]:
        """Scored episodes and skills near the query (design.md §5.3), each on its own scale."""
        cfg = self.config
        out: list[ScoredItem] = []
        for kind in ("episodes", "skills"):
            if cfg.retrieval.episode_candidates_k <= 0 or not self.store.has_records(kind):
                continue
            for rec, sim in self.store.query(kind, embedding=qvec, n=cfg.retrieval.episode_candidates_k):
                if isinstance(rec, Episode):
                    if self.episode_view is not None:
                        rec = self.episode_view(rec)
                    if not episode_recallable(rec, now, cfg):  # faded or expired: kept, not shown
                        continue
                    comps = episode_components(rec, cos=sim, goal=goal, now=now, config=cfg)
                    out.append(ScoredItem(kind="episode", item=rec, score=episode_score(comps, cfg), components=comps, reasons=["source:episodes"]))
                elif isinstance(rec, Skill) and rec.retired is None:  # a retired skill is kept, not shown
                    comps = skill_components(rec, cos=sim, goal=goal)
                    out.append(ScoredItem(kind="skill", item=rec, score=episode_score(comps, cfg), components=comps, reasons=["source:skills"]))
        return out

    @staticmethod
    def merge(*named: tuple[str, Iterable[str]]) -> dict[str, list[str]]:
        """Candidate id -> the names of the sources that found it, in source order."""
        sources: dict[str, list[str]] = {}
        for name, ids in named:
            # Sets have a per-process order (string hashing is salted): sort, so that ties
            # break the same way in every process and a seeded run repeats exactly.
            for i in ids if isinstance(ids, (list, tuple, dict)) else sorted(ids):
                sources.setdefault(i, []).append(name)
        return sources

    def error_seeds(self, event: ErrorEvent) -> dict[str, float]:
        """PageRank seeds of an error: its fingerprint, its tags and its tool."""
        seeds = {f"fp:{event.fingerprint_id}": self.config.retrieval.graph_seed_weight_fp}
        seeds.update({f"tag:{t}": self.config.retrieval.graph_seed_weight_tag for t in event.tags})
        if event.tool:
            seeds[f"tool:{event.tool}"] = self.config.retrieval.graph_seed_weight_scope
        return seeds

    def error_sources(
        self, event: ErrorEvent, exact: Iterable[str], action: list[str], vec: dict[str, float], graph: dict[str, float]
    ) -> dict[str, list[str]]:
        """The four candidate sources merged; a lesson scoped to another tool does not answer this tool's error."""
        sources = self.merge(("fingerprint", exact), ("action", action), ("vector", vec), ("graph", graph))
        if event.tool:
            sources = {i: s for i, s in sources.items() if self.tool_ok(i, event.tool)}
        return sources

    def tool_ok(self, lesson_id: str, tool: str) -> bool:
        """Whether a lesson may answer this tool's error (scoped to it or to no tool); read from the graph's index."""
        return lesson_id in self.lessons and self.graph.tool_of(lesson_id) in (None, tool)

    def in_scope(self, lesson_id: str, task: TaskSpec) -> bool:
        """Whether a lesson's scope admits ``task`` (a field unknown on either side does not exclude)."""
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


__all__ = ["CandidateSources", "GraphTop"]
