"""LessonGraph: lessons, fingerprints, tags and scopes as a NetworkX graph (DESIGN §4, §5.2).

The graph answers two retrieval questions quickly:

* which lessons answer this exact fingerprint? ``lessons_for_fingerprint`` is a
  dictionary lookup, kept in step with every upsert and removal (DESIGN §4: a
  Chroma ``where`` on a fingerprint key took 43 ms at 100k records);
* which lessons are near this failure in structure? ``personalized_pagerank``
  runs PageRank (Page et al. 1999; Haveliwala 2002 for the personalised form)
  seeded at the failure's fingerprint, tag and tool nodes, on a bounded
  neighbourhood of the seeds so its cost does not grow with the whole graph;
* which rewrite lessons does this failing action repeat? ``lessons_for_action``
  looks the action's words up in an index of WRONG patterns.

PageRank reads only ``adjacency`` (``store.adjacency.Adjacency``: summed undirected
weights, kept in step with every edge change, with a CSR snapshot for vectorised
edge gathering and hub handling) and runs a sparse power iteration
(``sparse_power_iteration``). ``_dense_ppr`` (dense matrix from the networkx edges)
and ``_reference_ppr`` (``networkx.pagerank`` on the whole graph) are the slow
references it is tested against.

Nodes are ``lesson:<id>``, ``fp:<fingerprint_id>``, ``tag:<t>``, ``tool:<t>``,
``domain:<d>``, ``task:<t>``, ``skill:<id>``. Edges are keyed by kind in a
``MultiDiGraph``. Edges a lesson's own fields imply (``triggers``, ``tagged``,
``scoped``, ``conflicts``, ``supersedes``) are owned by that lesson and replaced
when it is upserted. Edges no field can rebuild (``co_activated``,
``derived_from``, ...) come from ``Link`` records; ``add_link`` accumulates
their weights, so a graph rebuilt from stored links whose weights are the
running totals equals the live one.

Example:
    >>> from langmem_plus.records import Lesson
    >>> g = LessonGraph.from_records([
    ...     Lesson(id="a", namespace=("ns",), rule_text="r", triggers=["fp1"], tags=["syntax"]),
    ...     Lesson(id="b", namespace=("ns",), rule_text="r", triggers=["fp2"], tags=["syntax"]),
    ... ])
    >>> sorted(g.lessons_for_fingerprint("fp1"))
    ['a']
    >>> ranks = g.personalized_pagerank({fp_node("fp1"): 1.0, tag_node("syntax"): 0.5})
    >>> ranks["a"] > ranks["b"] > 0
    True
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import networkx as nx
import numpy as np

from langmem_plus.config import DEFAULT_CONFIG
from langmem_plus.records import Lesson, Link, Skill
from langmem_plus.store.adjacency import Adjacency

PPR_TOL = 1.0e-6
"""Power-iteration stop: L1 change per node below this (networkx.pagerank's default)."""
PPR_MAX_ITER = 100
"""Power-iteration cap (networkx.pagerank's default); the last iterate is returned."""
DEFAULT_EXCLUDED: tuple[str, ...] = ("suppressed", "archived")
"""Lesson statuses PageRank walks around: never retrieved (DESIGN §5.4)."""

FIELD_EDGE_KINDS = frozenset({"triggers", "tagged", "scoped", "conflicts", "supersedes"})
"""Edge kinds rebuilt from a lesson's own fields; owned by (out-edges of) that lesson."""
_LINK_KEY = "link:"
_WORDS = re.compile(r"\w+")


def lesson_node(lesson_id: str) -> str:
    """Node id of a lesson."""
    return f"lesson:{lesson_id}"


def fp_node(fingerprint_id: str) -> str:
    """Node id of a fingerprint id."""
    return f"fp:{fingerprint_id}"


def tag_node(tag: str) -> str:
    """Node id of a tag."""
    return f"tag:{tag}"


def tool_node(tool: str) -> str:
    """Node id of a tool."""
    return f"tool:{tool}"


def domain_node(domain: str) -> str:
    """Node id of a domain."""
    return f"domain:{domain}"


def task_node(task: str) -> str:
    """Node id of a task."""
    return f"task:{task}"


def skill_node(skill_id: str) -> str:
    """Node id of a skill."""
    return f"skill:{skill_id}"


def _node_type(node: str) -> str:
    return node.split(":", 1)[0]


class LessonGraph:
    """Lessons and what they answer, as a ``networkx.MultiDiGraph`` (DESIGN §4).

    Example:
        >>> g = LessonGraph()
        >>> g.upsert_lesson(Lesson(id="x", namespace=("ns",), rule_text="r", triggers=["f"]))
        >>> g.lessons_for_fingerprint("f"), g.number_of_lessons
        ({'x'}, 1)
    """

    def __init__(self) -> None:
        self.nx: nx.MultiDiGraph = nx.MultiDiGraph()
        """The underlying networkx graph; read it freely, change it only through this class."""
        self._fp_index: dict[str, set[str]] = {}
        self.adjacency = Adjacency()
        """Undirected weighted adjacency kept in step with ``nx`` (PageRank reads only this)."""
        self._adj = self.adjacency.rows
        self._status: dict[str, str] = {}
        """Lesson node -> status, for lessons known by record."""
        self._wrong_index: dict[str, set[str]] = {}
        """First word of a rewrite lesson's WRONG pattern (lowercased) -> lesson ids."""
        self._wrong_key: dict[str, str] = {}

    @classmethod
    def from_records(
        cls,
        lessons: Iterable[Lesson],
        skills: Iterable[Skill] = (),
        links: Iterable[Link] = (),
    ) -> LessonGraph:
        """Build the graph from stored records (on open, and in tests against the live graph)."""
        g = cls()
        for lesson in lessons:
            g.upsert_lesson(lesson)
        for skill in skills:
            g.upsert_skill(skill)
        for link in links:
            g.add_link(link)
        g.adjacency.compact()
        return g

    # ---- size -----------------------------------------------------------------

    @property
    def graph(self) -> nx.MultiDiGraph:
        """Alias of ``nx``, the underlying networkx graph."""
        return self.nx

    def __contains__(self, node: object) -> bool:
        return node in self.nx

    def __len__(self) -> int:
        return int(self.nx.number_of_nodes())

    @property
    def number_of_lessons(self) -> int:
        """Lessons known by record (not bare nodes that only a link or conflict names)."""
        return len(self._status)

    # ---- writes ---------------------------------------------------------------

    def _ensure_node(self, node: str) -> None:
        if node not in self.nx:
            self.nx.add_node(node, type=_node_type(node))

    def _add_edge(self, u: str, v: str, kind: str, key: str, weight: float = 1.0) -> None:
        self._ensure_node(u)
        self._ensure_node(v)
        old = self.nx.get_edge_data(u, v, key=key)
        if old is not None:
            self._adjust(u, v, -1, -float(old.get("weight", 1.0)))
        self.nx.add_edge(u, v, key=key, kind=kind, weight=weight)
        self._adjust(u, v, 1, float(weight))

    def _remove_edge(self, u: str, v: str, key: str) -> None:
        old = self.nx.get_edge_data(u, v, key=key)
        if old is not None:
            self._adjust(u, v, -1, -float(old.get("weight", 1.0)))
            self.nx.remove_edge(u, v, key=key)

    def _adjust(self, u: str, v: str, edges: int, weight: float) -> None:
        self.adjacency.adjust(u, v, edges, weight)

    def upsert_lesson(self, lesson: Lesson) -> None:
        """Add or replace a lesson: its status and the edges its fields imply."""
        node = lesson_node(lesson.id)
        self._drop_field_edges(node, lesson.id)
        self._ensure_node(node)
        attrs = self.nx.nodes[node]
        attrs.clear()
        attrs.update(type="lesson", status=lesson.status)
        self._status[node] = lesson.status
        for target, kind in _field_targets(lesson):
            if target != node:
                self._add_edge(node, target, kind, key=kind)
        for fp in lesson.triggers:
            self._fp_index.setdefault(fp, set()).add(lesson.id)
        self._unindex_wrong(lesson.id)
        key = _wrong_word(lesson.wrong)
        if key and lesson.correct is not None:
            self._wrong_index.setdefault(key, set()).add(lesson.id)
            self._wrong_key[lesson.id] = key

    def remove_lesson(self, lesson_id: str) -> None:
        """Remove a lesson and the edges its fields implied; link edges stay (they are records too)."""
        node = lesson_node(lesson_id)
        if node not in self.nx:
            return
        self._drop_field_edges(node, lesson_id)
        attrs = self.nx.nodes[node]
        attrs.clear()
        attrs["type"] = "lesson"
        self._status.pop(node, None)
        self._unindex_wrong(lesson_id)
        self._prune(node)

    def _drop_field_edges(self, node: str, lesson_id: str) -> None:
        if node not in self.nx:
            return
        old = [(v, k) for _, v, k in self.nx.out_edges(node, keys=True) if k in FIELD_EDGE_KINDS]
        for v, k in old:
            self._remove_edge(node, v, k)
            if k == "triggers":
                self._unindex(v[len("fp:"):], lesson_id)
        for v in {v for v, _ in old}:
            self._prune(v)

    def _unindex_wrong(self, lesson_id: str) -> None:
        key = self._wrong_key.pop(lesson_id, None)
        if key is not None:
            ids = self._wrong_index[key]
            ids.discard(lesson_id)
            if not ids:
                del self._wrong_index[key]

    def _unindex(self, fp: str, lesson_id: str) -> None:
        ids = self._fp_index.get(fp)
        if ids is not None:
            ids.discard(lesson_id)
            if not ids:
                del self._fp_index[fp]

    def _prune(self, node: str) -> None:
        """Remove a node that has no edges and no record behind it (a rebuild would not create it)."""
        if node not in self.nx or self._fanout(node) > 0:
            return
        attrs = self.nx.nodes[node]
        if "status" in attrs or "name" in attrs:
            return
        self.nx.remove_node(node)

    def upsert_skill(self, skill: Skill) -> None:
        """Add or update a skill node; its edges come from links (e.g. ``derived_from``)."""
        node = skill_node(skill.id)
        self._ensure_node(node)
        attrs = self.nx.nodes[node]
        attrs.clear()
        attrs.update(type="skill", name=skill.name)

    def add_link(self, link: Link) -> None:
        """Add ``link.weight`` to the edge ``a -> b`` of the link's kind (weights accumulate).

        Rebuilding from stored Link records therefore equals the live graph when
        each stored link carries the total its ``add_link`` calls added.
        """
        key = _LINK_KEY + link.kind
        data = self.nx.get_edge_data(link.a, link.b, key=key)
        weight = float(link.weight) + (float(data["weight"]) if data else 0.0)
        self._add_edge(link.a, link.b, link.kind, key=key, weight=weight)

    # ---- lookups --------------------------------------------------------------

    def lessons_for_fingerprint(self, fp_id: str) -> set[str]:
        """Ids of lessons triggered by this exact fingerprint id (a dictionary lookup)."""
        return set(self._fp_index.get(fp_id, ()))

    def lessons_for_action(self, action: str) -> set[str]:
        """Ids of rewrite lessons whose WRONG pattern starts with a word of ``action`` (dictionary lookups).

        A superset: the caller checks that the whole pattern applies (``rewrite_applies``).

        Example:
            >>> g = LessonGraph.from_records([Lesson(id="a", namespace=("ns",), rule_text="r", wrong="pick", correct="SELECT")])
            >>> g.lessons_for_action("pick name | sort age"), g.lessons_for_action("sort age")
            ({'a'}, set())
        """
        out: set[str] = set()
        for word in dict.fromkeys(_WORDS.findall(action.lower())):
            out |= self._wrong_index.get(word, set())
        return out

    def lessons_for(self, node: str) -> set[str]:
        """Ids of lessons adjacent to ``node`` in either direction, e.g. ``lessons_for("tag:x")``."""
        if node not in self.nx:
            return set()
        return {n[len("lesson:"):] for n in self._neighbours(node) if n.startswith("lesson:")}

    def _neighbours(self, node: str) -> Iterator[str]:
        yield from self.nx.successors(node)
        yield from self.nx.predecessors(node)

    def _fanout(self, node: str) -> int:
        """Distinct neighbours, in O(1) (``degree`` walks the multi-edge keys)."""
        return len(self.nx.succ[node]) + len(self.nx.pred[node])

    # ---- personalised PageRank --------------------------------------------------

    def neighbourhood(
        self,
        seeds: Mapping[str, float],
        *,
        hops: int = DEFAULT_CONFIG.graph_hops,
        max_nodes: int = DEFAULT_CONFIG.graph_max_nodes,
        exclude_status: Iterable[str] = DEFAULT_EXCLUDED,
    ) -> list[str]:
        """Nodes within ``hops`` of the seeds, breadth first, at most ``max_nodes``.

        Seeds come first (heaviest first). Within a hop, low-fanout nodes are
        expanded before hubs (a tool or domain node touches every lesson of its
        tool), so when the cap is hit it is the hubs' neighbours that are cut.
        The walk stops as soon as ``max_nodes`` nodes are collected, so its cost
        is bounded by ``max_nodes`` rather than the graph size. Lessons whose
        status is excluded are neither visited nor walked through.
        """
        excluded = frozenset(exclude_status)
        visited: dict[str, None] = {}
        for node in _ordered_seeds(seeds):
            if len(visited) >= max_nodes:
                return list(visited)
            if node in self.nx and self._allowed(node, excluded):
                visited[node] = None
        frontier = list(visited)
        for _ in range(hops):
            nxt: list[str] = []
            adj = self._adj
            for node in sorted(frontier, key=lambda n: (len(adj.get(n, ())), n)):
                for nb in adj.get(node, ()):
                    if nb in visited or not self._allowed(nb, excluded):
                        continue
                    visited[nb] = None
                    nxt.append(nb)
                    if len(visited) >= max_nodes:
                        return list(visited)
            frontier = nxt
        return list(visited)

    def _allowed(self, node: str, excluded: frozenset[str]) -> bool:
        return self._status.get(node) not in excluded

    def personalized_pagerank(
        self,
        seeds: Mapping[str, float],
        *,
        hops: int = DEFAULT_CONFIG.graph_hops,
        max_nodes: int = DEFAULT_CONFIG.graph_max_nodes,
        alpha: float = DEFAULT_CONFIG.pagerank_alpha,
        exclude_status: Iterable[str] = DEFAULT_EXCLUDED,
    ) -> dict[str, float]:
        """Personalised PageRank of lessons around the seeds, on a bounded neighbourhood.

        Edges are walked in both directions with their ``weight`` (1 unless a
        link says otherwise); teleports and dangling mass return to the seeds.

        Args:
            seeds: Node id -> personalization weight, e.g. ``{"fp:ab12": 1.0, "tag:syntax_structure": 0.5}``.
                Unknown nodes and non-positive weights are ignored.
            hops: Neighbourhood radius in edges (DESIGN §5.2).
            max_nodes: Largest neighbourhood PageRank runs on.
            alpha: Damping factor.
            exclude_status: Lesson statuses left out of the walk and the result.

        Returns:
            Lesson id -> score for the lessons in the neighbourhood; empty if no seed is in the graph.
        """
        excluded = tuple(exclude_status)
        nodes = self.neighbourhood(seeds, hops=hops, max_nodes=max_nodes, exclude_status=excluded)
        if not nodes:
            return {}
        index = {n: i for i, n in enumerate(nodes)}
        rows, cols, weights = self._edges_among(nodes, index)
        p = np.zeros(len(nodes))
        for node in _ordered_seeds(seeds):
            if node in index:
                p[index[node]] = float(seeds[node])
        scores = sparse_power_iteration(len(nodes), rows, cols, weights, p / p.sum(), alpha)
        return self._lesson_scores(nodes, scores)

    def _edges_among(
        self, nodes: list[str], index: Mapping[str, int]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Directed (row, col, weight) entries of the symmetric weight matrix among ``nodes`` (``Adjacency``)."""
        return self.adjacency.edges_among(nodes, index)

    def _weight_matrix(self, nodes: list[str], index: Mapping[str, int]) -> np.ndarray:
        """Dense symmetric weight matrix among ``nodes`` from the networkx edges (slow reference)."""
        w = np.zeros((len(nodes), len(nodes)))
        for u in nodes:
            i = index[u]
            for v, keyed in self.nx.succ[u].items():
                j = index.get(v)
                if j is None or j == i:
                    continue
                total = sum(float(d.get("weight", 1.0)) for d in keyed.values())
                w[i, j] += total
                w[j, i] += total
        return w

    def _dense_ppr(
        self,
        seeds: Mapping[str, float],
        *,
        hops: int = DEFAULT_CONFIG.graph_hops,
        max_nodes: int = DEFAULT_CONFIG.graph_max_nodes,
        alpha: float = DEFAULT_CONFIG.pagerank_alpha,
        exclude_status: Iterable[str] = DEFAULT_EXCLUDED,
    ) -> dict[str, float]:
        """``personalized_pagerank`` the slow, obvious way: a dense matrix from the networkx edges.

        Same neighbourhood, same seeds; kept to test the sparse, hub-aware version against.
        """
        excluded = tuple(exclude_status)
        nodes = self.neighbourhood(seeds, hops=hops, max_nodes=max_nodes, exclude_status=excluded)
        if not nodes:
            return {}
        index = {n: i for i, n in enumerate(nodes)}
        p = np.zeros(len(nodes))
        for node in _ordered_seeds(seeds):
            if node in index:
                p[index[node]] = float(seeds[node])
        scores = power_iteration(self._weight_matrix(nodes, index), p / p.sum(), alpha)
        return self._lesson_scores(nodes, scores)

    def _lesson_scores(self, nodes: list[str], scores: np.ndarray) -> dict[str, float]:
        status = self._status
        return {n[len("lesson:"):]: float(s) for n, s in zip(nodes, scores) if n in status}

    def _reference_ppr(
        self,
        seeds: Mapping[str, float],
        *,
        alpha: float = DEFAULT_CONFIG.pagerank_alpha,
        exclude_status: Iterable[str] = DEFAULT_EXCLUDED,
    ) -> dict[str, float]:
        """Slow, obvious PPR: ``networkx.pagerank`` on the whole graph, same exclusions and seeds.

        Kept to test ``personalized_pagerank`` against (STYLE: keep a reference beside a fast algorithm).
        """
        excluded = frozenset(exclude_status)
        keep = [n for n in self.nx if self._allowed(n, excluded)]
        undirected = nx.Graph()
        undirected.add_nodes_from(keep)
        for u, v, d in self.nx.subgraph(keep).edges(data=True):
            if u != v:
                prev = undirected.get_edge_data(u, v, default={"weight": 0.0})["weight"]
                undirected.add_edge(u, v, weight=prev + float(d.get("weight", 1.0)))
        personalization = {n: float(w) for n, w in seeds.items() if n in undirected and w > 0}
        if not personalization:
            return {}
        ranks = nx.pagerank(
            undirected, alpha=alpha, personalization=personalization, weight="weight",
            tol=PPR_TOL, max_iter=PPR_MAX_ITER * 10,
        )
        return {
            n[len("lesson:"):]: float(s)
            for n, s in ranks.items()
            if n.startswith("lesson:") and "status" in self.nx.nodes[n]
        }

    # ---- equality -------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        """Sorted nodes and edges with their attributes, for equality tests."""
        nodes = sorted((n, dict(sorted(d.items()))) for n, d in self.nx.nodes(data=True))
        edges = sorted(
            (u, v, k, dict(sorted(d.items()))) for u, v, k, d in self.nx.edges(keys=True, data=True)
        )
        return {"nodes": nodes, "edges": edges}


def _wrong_word(wrong: str | None) -> str | None:
    """The index key of a WRONG pattern: its first word, lowercased (None without one)."""
    if not wrong:
        return None
    found = _WORDS.search(wrong.lower())
    return found.group(0) if found else None


def _field_targets(lesson: Lesson) -> Iterator[tuple[str, str]]:
    """(target node, edge kind) pairs a lesson's fields imply."""
    for fp in lesson.triggers:
        yield fp_node(fp), "triggers"
    for tag in lesson.tags:
        yield tag_node(tag), "tagged"
    scope = lesson.scope
    if scope.tool:
        yield tool_node(scope.tool), "scoped"
    if scope.domain:
        yield domain_node(scope.domain), "scoped"
    if scope.task:
        yield task_node(scope.task), "scoped"
    for other in lesson.conflicts_with:
        yield lesson_node(other), "conflicts"
    for old in lesson.supersedes:
        yield lesson_node(old), "supersedes"


def _ordered_seeds(seeds: Mapping[str, float]) -> list[str]:
    """Seed nodes with positive weight, heaviest first, ties by name (deterministic)."""
    return sorted((n for n, w in seeds.items() if w > 0), key=lambda n: (-float(seeds[n]), n))


def sparse_power_iteration(
    n: int,
    rows: np.ndarray,
    cols: np.ndarray,
    weights: np.ndarray,
    personalization: np.ndarray,
    alpha: float = DEFAULT_CONFIG.pagerank_alpha,
    *,
    tol: float = PPR_TOL,
    max_iter: int = PPR_MAX_ITER,
) -> np.ndarray:
    """``power_iteration`` on a sparse matrix given as (row, col, weight) entries (duplicates add up).

    Each iteration is two ``numpy.bincount`` passes over the entries, so its cost is
    the number of edges in the neighbourhood, not ``n`` squared.

    Example:
        >>> r, c, w = np.array([0, 1]), np.array([1, 0]), np.array([1.0, 1.0])
        >>> [round(float(x), 3) for x in sparse_power_iteration(2, r, c, w, np.array([1.0, 0.0]), 0.5)]
        [0.667, 0.333]
    """
    out = np.bincount(rows, weights=weights, minlength=n)
    dangling = out == 0
    safe = np.where(dangling, 1.0, out)
    step = weights / safe[rows]
    x = np.full(n, 1.0 / n)
    for _ in range(max_iter):
        last = x
        spread = np.bincount(cols, weights=x[rows] * step, minlength=n)
        x = alpha * (spread + x[dangling].sum() * personalization) + (1 - alpha) * personalization
        if np.abs(x - last).sum() < n * tol:
            break
    return x


def power_iteration(
    weights: np.ndarray,
    personalization: np.ndarray,
    alpha: float = DEFAULT_CONFIG.pagerank_alpha,
    *,
    tol: float = PPR_TOL,
    max_iter: int = PPR_MAX_ITER,
) -> np.ndarray:
    """PageRank by power iteration on a dense weight matrix, as ``networkx.pagerank`` computes it.

    ``x <- alpha * (x P + dangling_mass * p) + (1 - alpha) * p`` where ``P`` is
    ``weights`` row-normalised and ``p`` the personalization (summing to 1);
    stops when the L1 change is below ``n * tol``.

    Example:
        >>> w = np.array([[0.0, 1.0], [1.0, 0.0]])
        >>> [round(float(x), 3) for x in power_iteration(w, np.array([1.0, 0.0]), 0.5)]
        [0.667, 0.333]
    """
    n = len(personalization)
    out = weights.sum(axis=1)
    dangling = out == 0
    transition = np.divide(weights, out[:, None], out=np.zeros_like(weights), where=~dangling[:, None])
    x = np.full(n, 1.0 / n)
    for _ in range(max_iter):
        last = x
        x = alpha * (x @ transition + x[dangling].sum() * personalization) + (1 - alpha) * personalization
        if np.abs(x - last).sum() < n * tol:
            break
    return x


__all__ = [
    "DEFAULT_EXCLUDED",
    "FIELD_EDGE_KINDS",
    "PPR_MAX_ITER",
    "PPR_TOL",
    "LessonGraph",
    "domain_node",
    "fp_node",
    "lesson_node",
    "power_iteration",
    "skill_node",
    "sparse_power_iteration",
    "tag_node",
    "task_node",
    "tool_node",
]
