"""LessonGraph: lessons, fingerprints, tags and scopes as a NetworkX graph (design.md §4, §5.2).

The graph answers two retrieval questions quickly:

* which lessons answer this exact fingerprint? ``lessons_for_fingerprint`` is a
  dictionary lookup, kept in step with every upsert and removal (a Chroma ``where`` is far slower);
* which lessons are near this failure in structure? ``personalized_pagerank``
  runs PageRank (Page et al. 1999; Haveliwala 2002 for the personalised form)
  seeded at the failure's fingerprint, tag and tool nodes, on a bounded
  neighbourhood of the seeds so its cost does not grow with the whole graph;
* which rewrite lessons does this failing action repeat? ``lessons_for_action`` (an index of WRONG patterns).

PageRank reads only ``adjacency`` (``store.adjacency.Adjacency``: summed undirected
weights as CSR arrays plus an overlay of changed rows, kept in step with every edge
change) and solves for the PageRank vector by conjugate gradients (``store.ppr.sparse_ppr``,
checked by a step of ``sparse_power_iteration``; the slow references are in ``tests/ppr_reference.py``).

Nodes are ``lesson:<id>``, ``fp:<fingerprint_id>``, ``tag:<t>``, ``tool:<t>``,
``domain:<d>``, ``task:<t>``, ``skill:<id>``. Edges are keyed by kind. Edges a
lesson's own fields imply (``triggers``, ``tagged``, ``scoped``, ``conflicts``,
``supersedes``) are owned by that lesson and replaced when it is upserted. Edges no
field can rebuild (``co_activated``, ``derived_from``, ...) come from ``Link``
records; ``add_link`` accumulates their weights, so a graph rebuilt from stored links
whose weights are the running totals equals the live one.

The state is flat (indexes, statuses, field edges, link weights, the CSR arrays), so it saves and loads as a
snapshot without networkx (``to_state`` / ``from_state``); ``nx`` is a ``MultiDiGraph`` view built on first access.

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
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, cast

import networkx as nx
from networkx import MultiDiGraph
import numpy as np

from langmem_plus.config import DEFAULT_CONFIG
from langmem_plus.records import Lesson, Link, Skill
from langmem_plus.store.adjacency import Adjacency
from langmem_plus.store.columns import CsrIndex, pack_strings, unpack_strings
from langmem_plus.store.lesson_columns import LessonColumns, StringCodes, checked_codes
from langmem_plus.store.ppr import ordered_seeds, personalization, sparse_ppr
from langmem_plus.store.walk import walk_ids

DEFAULT_EXCLUDED: tuple[str, ...] = ("suppressed", "archived")
"""Lesson statuses PageRank walks around: never retrieved (design.md §5.4)."""

FIELD_EDGE_KINDS = frozenset({"triggers", "tagged", "scoped", "conflicts", "supersedes"})
"""Edge kinds rebuilt from a lesson's own fields; owned by (out-edges of) that lesson."""
_LINK_KEY = "link:"
_LESSON_PREFIX_LEN = len("lesson:")
COLUMNS_VERSION = 1
"""Version of the columnar state ``to_state`` writes; state without it is read as the older plain dictionaries."""
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


def _best(rows: np.ndarray, scores: np.ndarray, top: int) -> list[int]:
    """The ``top`` of ``rows`` by score, best first, ties in row order (the PageRank answer of both walks)."""
    return rows[np.argsort(-scores[rows], kind="stable")[: max(0, top)]].tolist()


class LessonGraph:
    """Lessons and what they answer: indexes and a weighted adjacency, with a networkx view (design.md §4).

    The graph's own state is small and flat (statuses, the fingerprint and WRONG-word
    indexes, each lesson's field edges, link weights, skill names, and the CSR
    ``adjacency``), so it saves and loads as a snapshot (``to_state`` / ``from_state``)
    without touching networkx. ``nx`` is a ``MultiDiGraph`` view built from that state on
    first access and then kept in step with every write; retrieval never needs it.

    A graph loaded from a snapshot knows its lessons' field edges only through
    ``lesson_source`` (the stored lesson, read before an upsert replaces it).

    Example:
        >>> g = LessonGraph()
        >>> g.upsert_lesson(Lesson(id="x", namespace=("ns",), rule_text="r", triggers=["f"]))
        >>> g.lessons_for_fingerprint("f"), g.number_of_lessons
        ({'x'}, 1)
    """

    def __init__(
        self, lesson_source: Callable[[str], Lesson | None] | None = None, *, rewrite_slack: int = DEFAULT_CONFIG.storage.graph_rewrite_slack
    ) -> None:
        self._rewrite_slack = rewrite_slack
        """``MemoryConfig.storage.graph_rewrite_slack``: how far the saved rewrite text may outgrow the live pairs'."""
        self._nx: MultiDiGraph | None = None
        self._source = lesson_source
        self.adjacency = Adjacency()
        """Undirected weighted adjacency (PageRank reads only this)."""
        self._status: dict[str, str] = {}
        """Lesson node -> status, for lessons known by record."""
        self._skills: dict[str, str] = {}
        """Skill node -> name."""
        self._wrong_words = StringCodes()
        """The words of the WRONG-word index, by row (``names``; the saved base's, then words met since) and word -> row."""
        self._fp_index = self._new_fp_index()
        """Fingerprint id -> lesson ids (a saved base over the fingerprint nodes' ids, and the changes since)."""
        self._wrong_index = self._new_wrong_index()
        """First word of a rewrite lesson's WRONG pattern (lowercased) -> lesson ids."""
        self._columns = LessonColumns(rewrite_slack=rewrite_slack)
        """Status, tool and (WRONG, CORRECT) per lesson node id, set by every write: a save copies them as arrays."""
        self._masks: tuple[tuple[Any, ...], np.ndarray, np.ndarray] | None = None
        """(key, blocked, lessons) of ``_walk_masks``, for the statuses and node count of its key."""
        self._targets: dict[str, tuple[tuple[str, str], ...]] = {}
        """Lesson id -> (target node, edge kind) of its field edges; filled lazily from ``lesson_source`` after a load."""
        self._links_map: dict[tuple[str, str, str], float] | None = {}
        """(a, b, edge key) -> summed weight of each link edge; None until first needed after a load (``_links_base``)."""
        self._links_base: tuple[list[str], Mapping[str, np.ndarray]] | None = None
        """The saved links (kinds, arrays) the map is built from on first use."""

    def _node_position(self, prefix: str) -> Callable[[str], int | None]:
        """A key's row in a base saved by node id: the id of node ``prefix + key``."""
        return lambda key: self.adjacency.gid(prefix + key)

    def _lesson_gid(self, lesson_id: str) -> int:
        """The adjacency's node id of a lesson, given one when it has none (columns and indexes are by node id)."""
        return self.adjacency.intern(lesson_node(lesson_id))

    def _fp_gid(self, fp: str) -> int:
        """The adjacency's node id of a fingerprint, given one when it has none (the index's rows are by node id)."""
        return self.adjacency.intern(fp_node(fp))

    def _word_row(self, word: str) -> int:
        """A WRONG word's row in the index, given the next one when it has none."""
        return self._wrong_words.of(word)

    def _new_fp_index(self, indptr: np.ndarray | None = None, members: np.ndarray | None = None) -> CsrIndex:
        """The fingerprint index over a base (rows by fingerprint node id), logging its changes by node id."""
        return CsrIndex(indptr, members, self._node_position("fp:"), self._lesson_of_gid, rows=(self._fp_gid, self._lesson_gid))

    def _new_wrong_index(self, indptr: np.ndarray | None = None, members: np.ndarray | None = None) -> CsrIndex:
        """The WRONG-word index over a base (rows by ``_wrong_words``), logging its changes by row and node id."""
        return CsrIndex(indptr, members, self._wrong_words.code.get, self._lesson_of_gid, rows=(self._word_row, self._lesson_gid))

    def _lesson_of_gid(self, gid: int) -> str:
        return self.adjacency.name(gid)[_LESSON_PREFIX_LEN:]

    @property
    def _links(self) -> dict[tuple[str, str, str], float]:
        """The link edges' weights, built from the saved arrays on first use after a load (retrieval never needs them)."""
        if self._links_map is None:
            self._links_map = _links_from_arrays(self.adjacency, *self._links_base) if self._links_base else {}
            self._links_base = None
        return self._links_map

    @classmethod
    def from_records(
        cls,
        lessons: Iterable[Lesson],
        skills: Iterable[Skill] = (),
        links: Iterable[Link] = (),
        *,
        rewrite_slack: int = DEFAULT_CONFIG.storage.graph_rewrite_slack,
    ) -> LessonGraph:
        """Build the graph from stored records (a full rebuild, and in tests against the live graph)."""
        g = cls(rewrite_slack=rewrite_slack)
        for lesson in lessons:
            g.upsert_lesson(lesson)
        for skill in skills:
            g.upsert_skill(skill)
        for link in links:
            g.add_link(link)
        g.adjacency.compact()
        return g

    # ---- snapshot -------------------------------------------------------------

    def to_state(self) -> tuple[dict[str, Any], list[str], dict[str, np.ndarray]]:
        """Everything the graph needs to come back without records: (plain data, node names, arrays).

        Per-node values are arrays by the adjacency's node id and the two indexes CSR arrays
        (``store.columns``), so a load reads arrays and builds one dictionary (statuses) besides
        the adjacency's names; the plain data holds only short tables (statuses, tools, link kinds, skills).
        """
        return self.state_later()()

    def state_later(self) -> Callable[[], tuple[dict[str, Any], list[str], dict[str, np.ndarray]]]:
        """``to_state`` in two halves: the adjacency's CSR arrays are started on a thread now, and the function
        returned builds the columns and waits for them.

        The CSR arrays are numpy sorts and gathers that release the GIL (0.2-0.5 s after a 100k import): a close
        places the records and gathers the vectors meanwhile. Between the two halves the graph must not be written.
        """
        adj = self.adjacency
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="langmem-plus-csr")
        csr = pool.submit(adj.csr_from_log)
        pool.shutdown(wait=False)

        def finish() -> tuple[dict[str, Any], list[str], dict[str, np.ndarray]]:
            data, arrays = self._columns_state(adj)
            names, adjacency_arrays = adj.to_state(csr.result())  # after every node got its id
            return data, names, {**adjacency_arrays, **arrays}

        return finish

    def _columns_state(self, adj: Adjacency) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """``to_state`` but the adjacency's arrays: the head and the columns.

        The lesson columns and the two indexes' changes were kept by node id at every write
        (``LessonColumns``, ``CsrIndex``'s log): this copies and sorts arrays, with no per-lesson
        Python (0.6 s of a close after a 100k import when they were built here from dictionaries).
        """
        fp_rows = self._fp_index.changes(self._fp_gid, self._lesson_gid)
        changed_words = self._wrong_index.changes(self._word_row, self._lesson_gid)
        words = list(self._wrong_words.names)
        saved_links = self._links_base if self._links_map is None else None
        links = list(self._links.items()) if saved_links is None else []
        link_ends = [(adj.intern(a), adj.intern(b)) for (a, b, _), _ in links]
        n = adj.node_count()
        tables, arrays = self._columns.arrays(n)
        arrays["fp_indptr"], arrays["fp_members"] = self._fp_index.to_csr(n, fp_rows)
        arrays.update(pack_strings(words, "wrong_words_"))
        arrays["wrong_indptr"], arrays["wrong_members"] = self._wrong_index.to_csr(len(words), changed_words)
        if saved_links is not None:  # never changed since the load: the saved arrays, as they are (node ids are stable)
            link_kinds = list(saved_links[0])
            arrays.update({f"link_{k}": np.array(saved_links[1][k]) for k in ("a", "b", "kind", "weight")})
        else:
            link_kinds = sorted({key for (_, _, key), _ in links})
            kind_code = {k: c for c, k in enumerate(link_kinds)}
            arrays["link_a"] = np.asarray([a for a, _ in link_ends], dtype=np.int64)
            arrays["link_b"] = np.asarray([b for _, b in link_ends], dtype=np.int64)
            arrays["link_kind"] = np.asarray([kind_code[key] for (_, _, key), _ in links], dtype=np.int64)
            arrays["link_weight"] = np.asarray([w for _, w in links], dtype=np.float64)
        data = {"columns": COLUMNS_VERSION, **tables, "link_kinds": link_kinds, "skills": self._skills}
        return data, arrays

    def _fp_items(self) -> Iterator[tuple[str, set[str]]]:
        """Every fingerprint with its lessons (the base's fingerprint nodes, and the changes since)."""
        adj, idx = self.adjacency, self._fp_index
        base = ((adj.name(g)[len("fp:"):], g) for g in range(min(idx.keys_in_base(), adj.node_count())))
        return idx.items((key, g) for key, g in base if adj.name(g).startswith("fp:"))

    def _wrong_items(self) -> Iterator[tuple[str, set[str]]]:
        return self._wrong_index.items((w, n) for n, w in enumerate(self._wrong_words.names))

    @classmethod
    def from_state(
        cls,
        data: Mapping[str, Any],
        names: Sequence[str],
        arrays: Mapping[str, Any],
        lesson_source: Callable[[str], Lesson | None],
        *,
        rewrite_slack: int = DEFAULT_CONFIG.storage.graph_rewrite_slack,
    ) -> LessonGraph:
        """The graph ``to_state`` saved (or the plain dictionaries an older snapshot saved); ``lesson_source`` gives a stored lesson by id.

        Raises:
            ValueError, KeyError, TypeError: the state is damaged (the caller rebuilds from records).
        """
        g = cls(lesson_source, rewrite_slack=rewrite_slack)
        g.adjacency = Adjacency.from_state(names, arrays)
        g._skills = dict(data["skills"])
        if data.get("columns") != COLUMNS_VERSION:
            g._load_plain(data)
            return g
        n = len(names)
        g._columns = LessonColumns.from_arrays(data, arrays, n, rewrite_slack=rewrite_slack)
        statuses = [str(s) for s in data["statuses"]]
        codes = np.asarray(arrays["status"])
        lesson_gids = np.flatnonzero(codes >= 0).tolist()
        g._status = dict(zip(map(names.__getitem__, lesson_gids), map(statuses.__getitem__, codes[lesson_gids].tolist())))
        g._fp_index = g._new_fp_index(*_checked_csr(arrays["fp_indptr"], arrays["fp_members"], n, n))
        g._wrong_words = StringCodes(unpack_strings(arrays, "wrong_words_"))
        if len(g._wrong_words.code) != len(g._wrong_words.names):
            raise ValueError("the WRONG-word index repeats a word")
        g._wrong_index = g._new_wrong_index(*_checked_csr(arrays["wrong_indptr"], arrays["wrong_members"], len(g._wrong_words.names), n))
        kinds = [str(k) for k in data["link_kinds"]]
        link = {k: np.asarray(arrays[f"link_{k}"]) for k in ("a", "b", "kind", "weight")}
        if not len(link["a"]) == len(link["b"]) == len(link["kind"]) == len(link["weight"]):
            raise ValueError("the link arrays differ in length")
        checked_codes(link["kind"], len(link["kind"]), len(kinds), allow_none=False)
        checked_codes(np.concatenate([link["a"], link["b"]]), 2 * len(link["a"]), n, allow_none=False)
        g._links_map, g._links_base = (None, (kinds, link)) if len(link["a"]) else ({}, None)
        return g

    def _load_plain(self, data: Mapping[str, Any]) -> None:
        """The state as an older snapshot saved it: dictionaries and lists (read as before; the next base is columnar)."""
        # JSON gives str keys and values; the shapes are checked by unpacking them here.
        self._status = dict(data["status"])
        self._fp_index = CsrIndex.from_sets({fp: ids for fp, ids in dict(data["fp_index"]).items()})
        self._wrong_index = CsrIndex.from_sets({k: ids for k, ids in dict(data["wrong_index"]).items()})
        rewrite = {str(i): (str(w), str(c)) for i, (w, c) in dict(data["rewrite"]).items()}
        tool = {str(i): str(t) for i, t in dict(data["tool"]).items()}
        for node, status in self._status.items():
            lesson_id = node[_LESSON_PREFIX_LEN:]
            gid = self._lesson_gid(lesson_id)
            self._columns.set_lesson(gid, status, tool.get(lesson_id))
            self._columns.set_rewrite(gid, rewrite.get(lesson_id))
        self._links_map = {(a, b, key): float(w) for a, b, key, w in data["links"]}

    # ---- size -----------------------------------------------------------------

    @property
    def nx(self) -> MultiDiGraph:
        """A networkx view of the graph, built on first access and kept in step afterwards; read it, change it only through this class."""
        if self._nx is None:
            self._nx = self._build_nx()
        return self._nx

    @property
    def graph(self) -> MultiDiGraph:
        """Alias of ``nx``, the networkx view."""
        return self.nx

    def _build_nx(self) -> MultiDiGraph:
        g = nx.MultiDiGraph()
        for node, status in self._status.items():
            g.add_node(node, type="lesson", status=status)
        for node, name in self._skills.items():
            g.add_node(node, type="skill", name=name)
        for node in list(self._status):
            lesson_id = node[len("lesson:"):]
            for target, kind in self._field_edges(lesson_id):
                if target not in g:
                    g.add_node(target, type=_node_type(target))
                g.add_edge(node, target, key=kind, kind=kind, weight=1.0)
        for (a, b, key), w in self._links.items():
            for n in (a, b):
                if n not in g:
                    g.add_node(n, type=_node_type(n))
            g.add_edge(a, b, key=key, kind=key[len(_LINK_KEY):], weight=w)
        return g

    def __contains__(self, node: object) -> bool:
        return isinstance(node, str) and (
            node in self._status or node in self._skills or self.adjacency.fanout(node) > 0
        )

    def __len__(self) -> int:
        return len({*self.adjacency.nodes(), *self._status, *self._skills})

    @property
    def number_of_lessons(self) -> int:
        """Lessons known by record (not bare nodes that only a link or conflict names)."""
        return len(self._status)

    # ---- writes ---------------------------------------------------------------

    def _field_edges(self, lesson_id: str) -> tuple[tuple[str, str], ...]:
        """The field edges a lesson has now: known, or read from its stored record."""
        known = self._targets.get(lesson_id)
        if known is not None:
            return known
        stored = self._source(lesson_id) if self._source is not None and lesson_node(lesson_id) in self._status else None
        found = _edges_of(stored) if stored is not None else ()
        self._targets[lesson_id] = found
        return found

    def _nx_edge(self, u: str, v: str, key: str, kind: str, weight: float) -> None:
        g = self._nx
        if g is None:
            return
        for n in (u, v):
            if n not in g:
                g.add_node(n, type=_node_type(n))
        g.add_edge(u, v, key=key, kind=kind, weight=weight)

    def _nx_node(self, node: str, **attrs: str) -> None:
        """Set a node's attributes in the networkx view, if it is built."""
        if self._nx is not None:
            if node not in self._nx:
                self._nx.add_node(node)
            found = self._nx.nodes[node]
            found.clear()
            found.update(attrs)

    def _nx_remove_edge(self, u: str, v: str, key: str) -> None:
        if self._nx is not None and self._nx.has_edge(u, v, key=key):
            self._nx.remove_edge(u, v, key=key)

    def upsert_lesson(self, lesson: Lesson) -> None:
        """Add or replace a lesson: its status and the edges its fields imply."""
        node = lesson_node(lesson.id)
        old = self._field_edges(lesson.id) if node in self._status else self._targets.get(lesson.id, ())
        new = _edges_of(lesson)
        old_set, new_set = set(old), set(new)
        for target, kind in old:
            if (target, kind) not in new_set:
                self._drop_field_edge(lesson.id, target, kind)
        for target, kind in new:
            if (target, kind) not in old_set:
                self.adjacency.adjust(node, target, 1, 1.0)
                self._nx_edge(node, target, kind, kind, 1.0)
        self._targets[lesson.id] = new
        self._status[node] = lesson.status
        self._nx_node(node, type="lesson", status=lesson.status)
        for fp in lesson.triggers:
            self._fp_index.add(fp, lesson.id)
        gid = self._lesson_gid(lesson.id)
        self._set_rewrite(lesson.id, gid, _rewrite_pair(lesson))
        self._columns.set_lesson(gid, lesson.status, lesson.scope.tool or None)
        for target, _ in old:
            if (target, _) not in new_set:
                self._prune(target)

    def remove_lesson(self, lesson_id: str) -> None:
        """Remove a lesson and the edges its fields implied; link edges stay (they are records too)."""
        node = lesson_node(lesson_id)
        if node not in self._status:
            return
        old = self._field_edges(lesson_id)
        for target, kind in old:
            self._drop_field_edge(lesson_id, target, kind)
        del self._status[node]
        self._targets.pop(lesson_id, None)
        gid = self._lesson_gid(lesson_id)
        self._set_rewrite(lesson_id, gid, None)
        self._columns.set_lesson(gid, None, None)
        if self._nx is not None and node in self._nx:
            self._nx_node(node, type="lesson")
        self._prune(node)
        for target, _ in old:
            self._prune(target)

    def _drop_field_edge(self, lesson_id: str, target: str, kind: str) -> None:
        """Remove one edge a lesson's fields implied (and its fingerprint index entry)."""
        node = lesson_node(lesson_id)
        self.adjacency.adjust(node, target, -1, -1.0)
        self._nx_remove_edge(node, target, kind)
        if kind == "triggers":
            self._unindex(target[len("fp:"):], lesson_id)

    def _set_rewrite(self, lesson_id: str, gid: int, pair: tuple[str, str] | None) -> None:
        """The lesson's (WRONG, CORRECT) from now on (None: not a rewrite lesson), and its WRONG word in the index."""
        old = self._columns.rewrite_of(gid)
        if old == pair:
            return
        key = _wrong_word(old[0]) if old is not None else None
        if key is not None:
            self._wrong_index.discard(key, lesson_id)
        key = _wrong_word(pair[0]) if pair is not None else None
        if key is not None:
            self._wrong_index.add(key, lesson_id)
        self._columns.set_rewrite(gid, pair)

    def _unindex(self, fp: str, lesson_id: str) -> None:
        self._fp_index.discard(fp, lesson_id)

    def _prune(self, node: str) -> None:
        """Drop a node from the networkx view once no edge and no record keeps it (a rebuild would not create it)."""
        g = self._nx
        if g is None or node not in g or node in self._status or node in self._skills:
            return
        if len(g.succ[node]) + len(g.pred[node]) == 0:
            g.remove_node(node)

    def upsert_skill(self, skill: Skill) -> None:
        """Add or update a skill node; its edges come from links (e.g. ``derived_from``)."""
        node = skill_node(skill.id)
        self._skills[node] = skill.name
        self._nx_node(node, type="skill", name=skill.name)

    def add_link(self, link: Link) -> None:
        """Add ``link.weight`` to the edge ``a -> b`` of the link's kind (weights accumulate).

        Rebuilding from stored Link records therefore equals the live graph when
        each stored link carries the total its ``add_link`` calls added.
        """
        key = (link.a, link.b, _LINK_KEY + link.kind)
        self._set_link(key, float(link.weight) + self._links.get(key, 0.0))

    def set_link(self, link: Link) -> None:
        """Set the edge ``a -> b`` of the link's kind to ``link.weight`` (a stored running total)."""
        self._set_link((link.a, link.b, _LINK_KEY + link.kind), float(link.weight))

    def _set_link(self, key: tuple[str, str, str], weight: float) -> None:
        a, b, edge_key = key
        old = self._links.get(key)
        if old is None:
            self.adjacency.adjust(a, b, 1, weight)
        else:
            self.adjacency.adjust(a, b, 0, weight - old)
        self._links[key] = weight
        self._nx_edge(a, b, edge_key, edge_key[len(_LINK_KEY):], weight)

    # ---- lookups --------------------------------------------------------------

    def lessons_for_fingerprint(self, fp_id: str) -> set[str]:
        """Ids of lessons triggered by this exact fingerprint id (a dictionary lookup)."""
        return self._fp_index.get(fp_id)

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
            out |= self._wrong_index.get(word)
        return out

    def lessons_for(self, node: str) -> set[str]:
        """Ids of lessons adjacent to ``node`` in either direction, e.g. ``lessons_for("tag:x")``."""
        return {n[len("lesson:"):] for n in self.adjacency.neighbours(node) if n.startswith("lesson:")}

    def status_of(self, lesson_id: str) -> str | None:
        """The status of a lesson known by record, else None."""
        return self._status.get(lesson_node(lesson_id))

    def tool_of(self, lesson_id: str) -> str | None:
        """The tool a lesson is scoped to, None when it is not scoped to one (or unknown)."""
        return self._columns.tool_of(self.adjacency.gid(lesson_node(lesson_id)))

    def rewrite_of(self, lesson_id: str) -> tuple[str, str] | None:
        """(WRONG, CORRECT) of a rewrite lesson, None for any other lesson."""
        return self._columns.rewrite_of(self.adjacency.gid(lesson_node(lesson_id)))

    # ---- personalised PageRank --------------------------------------------------

    def neighbourhood(
        self,
        seeds: Mapping[str, float],
        *,
        hops: int = DEFAULT_CONFIG.retrieval.graph_hops,
        max_nodes: int = DEFAULT_CONFIG.retrieval.graph_max_nodes,
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
        status = self._status
        visited: dict[str, None] = {}
        for node in ordered_seeds(seeds):
            if len(visited) >= max_nodes:
                return list(visited)
            if node in self and status.get(node) not in excluded:
                visited[node] = None
        frontier = list(visited)
        adj = self.adjacency
        for _ in range(hops):
            nxt: list[str] = []
            for node in sorted(frontier, key=lambda n: (adj.fanout(n), n)):
                for chunk in adj.neighbour_chunks(node):
                    fresh = [nb for nb in chunk if nb not in visited and status.get(nb) not in excluded]
                    room = max_nodes - len(visited)
                    if len(fresh) >= room:  # a chunk names each node once, so the first ``room`` are new
                        visited.update(dict.fromkeys(fresh[:room]))
                        return list(visited)
                    visited.update(dict.fromkeys(fresh))
                    nxt += fresh
            frontier = nxt
        return list(visited)

    def personalized_pagerank(
        self,
        seeds: Mapping[str, float],
        *,
        hops: int = DEFAULT_CONFIG.retrieval.graph_hops,
        max_nodes: int = DEFAULT_CONFIG.retrieval.graph_max_nodes,
        alpha: float = DEFAULT_CONFIG.retrieval.pagerank_alpha,
        exclude_status: Iterable[str] = DEFAULT_EXCLUDED,
        top: int | None = None,
        rtol: float | None = None,
    ) -> dict[str, float]:
        """Personalised PageRank of lessons around the seeds, on a bounded neighbourhood.

        Edges are walked in both directions with their ``weight`` (1 unless a
        link says otherwise); teleports and dangling mass return to the seeds.

        Args:
            seeds: Node id -> personalization weight, e.g. ``{"fp:ab12": 1.0, "tag:syntax_structure": 0.5}``.
                Unknown nodes and non-positive weights are ignored.
            hops: Neighbourhood radius in edges (design.md §5.2).
            max_nodes: Largest neighbourhood PageRank runs on.
            alpha: Damping factor.
            exclude_status: Lesson statuses left out of the walk and the result.
            top: Only the ``top`` best lessons, best first (ties in neighbourhood order), chosen
                as arrays; None: every lesson of the neighbourhood, in neighbourhood order.
            rtol: Where the solve stops (``sparse_ppr``'s ``rtol``, e.g. ``MemoryConfig.retrieval.pagerank_rtol``);
                None: the exact, checked solve.

        Returns:
            Lesson id -> score for the lessons in the neighbourhood; empty if no seed is in the graph.
        """
        excluded = tuple(exclude_status)
        walked = self._neighbourhood_ids(seeds, hops=hops, max_nodes=max_nodes, excluded=excluded)
        if walked is not None:
            return self._pagerank_of_ids(seeds, walked, alpha=alpha, top=top, rtol=rtol)
        nodes = self.neighbourhood(seeds, hops=hops, max_nodes=max_nodes, exclude_status=excluded)
        if not nodes:
            return {}
        index = {n: i for i, n in enumerate(nodes)}
        rows, cols, weights = self._edges_among(nodes, index)
        scores = sparse_ppr(len(nodes), rows, cols, weights, personalization(seeds, index), alpha, rtol=rtol)
        if top is None:
            return self._lesson_scores(nodes, scores)
        status = self._status
        lessons = np.flatnonzero(np.fromiter(map(status.__contains__, nodes), dtype=bool, count=len(nodes)))
        return {nodes[i][_LESSON_PREFIX_LEN:]: float(scores[i]) for i in _best(lessons, scores, top)}

    def _neighbourhood_ids(
        self, seeds: Mapping[str, float], *, hops: int, max_nodes: int, excluded: tuple[str, ...]
    ) -> tuple[list[str], list[int], np.ndarray] | None:
        """(the admitted seeds, every node's id, the lesson mask by node id) of ``neighbourhood``, walked by node
        id (``walk.walk_ids``); None when an admitted seed has no node id (a lone skill node): the named walk answers then."""
        status, adj = self._status, self.adjacency
        start: list[str] = []
        for node in ordered_seeds(seeds):
            if len(start) >= max_nodes:
                break  # full: the walk below adds nothing
            if node in self and status.get(node) not in excluded:
                start.append(node)
        gids = [adj.gid(node) for node in start]
        if None in gids:
            return None
        blocked, lessons = self._walk_masks(excluded)
        return start, walk_ids(adj, cast(list[int], gids), hops=hops, max_nodes=max_nodes, blocked=blocked), lessons

    def _walk_masks(self, excluded: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
        """Per node id: (a lesson with an ``excluded`` status, a lesson known by record); kept until a status or node changes."""
        key = (excluded, id(self._columns), self._columns.status_version, self.adjacency.node_count())
        if self._masks is None or self._masks[0] != key:
            self._masks = (key, *self._columns.status_masks(key[3], excluded))
        return self._masks[1], self._masks[2]

    def _pagerank_of_ids(
        self,
        seeds: Mapping[str, float],
        walked: tuple[list[str], list[int], np.ndarray],
        *,
        alpha: float,
        top: int | None,
        rtol: float | None = None,
    ) -> dict[str, float]:
        """``personalized_pagerank`` over a neighbourhood walked by node id; nodes are named only for the answer."""
        start, ids, is_lesson = walked
        if not ids:
            return {}
        adj = self.adjacency
        gids = np.asarray(ids, dtype=np.int64)
        rows, cols, weights = adj.edges_among_ids(gids)
        p = personalization(seeds, {node: i for i, node in enumerate(start)}, n=len(ids))  # the seeds come first
        scores = sparse_ppr(len(ids), rows, cols, weights, p, alpha, rtol=rtol)
        if top is None:
            return self._lesson_scores([adj.name(g) for g in ids], scores)
        lessons = np.flatnonzero(is_lesson[gids])
        return {adj.name(ids[i])[_LESSON_PREFIX_LEN:]: float(scores[i]) for i in _best(lessons, scores, top)}

    def _edges_among(
        self, nodes: list[str], index: Mapping[str, int]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Directed (row, col, weight) entries of the symmetric weight matrix among ``nodes`` (``Adjacency``)."""
        return self.adjacency.edges_among(nodes, index)

    def _lesson_scores(self, nodes: list[str], scores: np.ndarray) -> dict[str, float]:
        status = self._status
        return {n[len("lesson:"):]: float(s) for n, s in zip(nodes, scores) if n in status}

    # ---- equality -------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        """Sorted nodes and edges with their attributes, for equality tests."""
        nodes = sorted((n, dict(sorted(d.items()))) for n, d in self.nx.nodes(data=True))
        edges = sorted(
            (u, v, k, dict(sorted(d.items()))) for u, v, k, d in self.nx.edges(keys=True, data=True)
        )
        return {"nodes": nodes, "edges": edges}


def _checked_csr(indptr: Any, members: Any, rows: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """CSR arrays of ``rows`` rows whose members are node ids below ``n``.

    Raises:
        ValueError: they are not.
    """
    ptr, found = np.asarray(indptr, dtype=np.int64), np.asarray(members, dtype=np.int64)
    if ptr.shape != (rows + 1,) or int(ptr[0]) != 0 or int(ptr[-1]) != len(found) or np.any(np.diff(ptr) < 0):
        raise ValueError("a saved index's row pointers are damaged")
    if len(found) and (int(found.min()) < 0 or int(found.max()) >= n):
        raise ValueError("a saved index names an unknown node")
    return ptr, found


def _links_from_arrays(adj: Adjacency, kinds: list[str], link: Mapping[str, np.ndarray]) -> dict[tuple[str, str, str], float]:
    """The link weights' map from the saved arrays (ends by node id, kinds by code)."""
    name = adj.name
    ends = zip(map(name, link["a"].tolist()), map(name, link["b"].tolist()), map(kinds.__getitem__, link["kind"].tolist()))
    return dict(zip(ends, link["weight"].tolist()))


def _edges_of(lesson: Lesson) -> tuple[tuple[str, str], ...]:
    """The distinct (target node, edge kind) field edges of a lesson, self-loops left out."""
    node = lesson_node(lesson.id)
    return tuple(dict.fromkeys((t, k) for t, k in _field_targets(lesson) if t != node))


def _rewrite_pair(lesson: Lesson) -> tuple[str, str] | None:
    """A rewrite lesson's (WRONG, CORRECT): a WRONG pattern with an index word and a CORRECT; else None."""
    if lesson.correct is None or not _wrong_word(lesson.wrong):
        return None
    return str(lesson.wrong), lesson.correct


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


__all__ = [
    "DEFAULT_EXCLUDED",
    "FIELD_EDGE_KINDS",
    "LessonGraph",
    "domain_node",
    "fp_node",
    "lesson_node",
    "skill_node",
    "tag_node",
    "task_node",
    "tool_node",
]
