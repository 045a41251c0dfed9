"""LangGraphChromaStore: a LangGraph ``BaseStore`` on the Chroma langmem_plus uses (design.md §8).

So ``create_agent(store=...)``, ``StateGraph.compile(store=...)`` and LangMem's memory
tools can persist on the same embedded or served Chroma as a ``LearningMemory``.

Layout (``integrations._store_layout``): each LangGraph namespace has collections of
its own, named like langmem_plus's (``lmp_<hash>_lgitems`` and ``lmp_<hash>_lgvectors``)
with the hash over the store's ``root`` and the namespace, so a read of one namespace
cannot see another's entries; every entry also carries its namespace, checked on read.
Values are JSON documents; each embedded field is one vector entry. Embeddings are
always computed here and passed to Chroma, never left to Chroma's default model.

Semantics follow the installed ``InMemoryStore`` (``integrations._store_rules``):
reads in a batch see the state before its writes, the last write to a key wins,
searches list namespaces in creation order and items in insertion order, and
``list_namespaces`` sorts. Differences: ``created_at`` survives an overwrite (as in
PostgresStore); namespaces without items are not listed; values are stored as JSON
(tuples come back as lists; NaN and non-JSON values raise ``InvalidRecord``); TTLs are
not supported (``supports_ttl = False``, ``refresh_ttl`` is ignored); a batch is not
atomic across namespaces (Chroma has no transactions).

Cost: a get is one Chroma read; a put one read and one or two upserts. An unfiltered
query search asks Chroma for the nearest field vectors of each namespace under the
prefix and reads only the items it ranks. A filter or a search without a query reads
every item under the prefix and filters in Python (exact; Chroma's ``where`` does not
scale, design.md §4), so those cost time linear in the items under the prefix.

Example:
    >>> import tempfile
    >>> from langmem_plus.embeddings import HashingEmbeddings
    >>> store = LangGraphChromaStore.open(
    ...     path=tempfile.mkdtemp(), index={"dims": 256, "embed": HashingEmbeddings(), "fields": ["text"]})
    >>> store.put(("users", "u1"), "pref", {"text": "likes dark mode"})
    >>> [item.key for item in store.search(("users",), query="dark mode")]
    ['pref']
    >>> store.close()
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import httpx
from langchain_core.embeddings import Embeddings
from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    ensure_embeddings,
    validate_op_namespace,
)

from langmem_plus.errors import InvalidRecord, StoreUnavailable
from langmem_plus.integrations._store_layout import (
    PLACEHOLDER,
    Collections,
    Entry,
    Namespace,
    Space,
    encode_value,
    item_id,
    vector_id,
)
from langmem_plus.integrations._store_rules import (
    cosine_scores,
    index_paths,
    matches_filter,
    namespace_matches,
    rank_page,
    texts_to_embed,
)
from langmem_plus.store.chroma import _close_quietly, _connect_embedded, _connect_http, _dimension_hint
from langmem_plus.store.mapping import namespace_key

Fields = dict[tuple[Namespace, str], list[tuple[str, list[float]]]]
"""The embedded fields of each written item: (namespace, key) -> [(path, vector)]."""


@dataclass
class _Plan:
    """A validated batch: its reads, its last write per key, and what to embed."""

    ops: list[Op]
    puts: dict[tuple[Namespace, str], PutOp] = field(default_factory=dict)
    queries: list[str] = field(default_factory=list)
    texts: list[tuple[Namespace, str, str, str]] = field(default_factory=list)
    """(namespace, key, path, text) for every field vector the writes need."""


class LangGraphChromaStore(BaseStore):
    """A LangGraph ``BaseStore`` persisted in Chroma collections (design.md §8).

    Args:
        client: A chromadb client (``PersistentClient``, ``HttpClient``, or the one a
            ``LearningMemory`` holds). Use ``open`` to make one from a path or URL.
        index: Optional LangGraph ``IndexConfig`` (``dims``, ``embed``: any LangChain
            ``Embeddings``, an embedding function or a provider string, ``fields``);
            without it ``query`` is ignored, as in InMemoryStore.
        root: Namespace this store lives under: stores with different roots on one
            Chroma never see each other's items (``LearningMemory.as_store`` uses the
            memory's namespace).
        location: The path or URL, for messages.
        owns_client: Whether ``close`` closes the client.

    Example:
        >>> import tempfile
        >>> with LangGraphChromaStore.open(path=tempfile.mkdtemp()) as store:
        ...     store.put(("a", "b"), "k", {"n": 1})
        ...     store.get(("a", "b"), "k").value, store.list_namespaces(prefix=("a",))
        ({'n': 1}, [('a', 'b')])
    """

    supports_ttl = False

    def __init__(
        self,
        client: Any,
        *,
        index: IndexConfig | None = None,
        root: Namespace = (),
        location: str = "chromadb client",
        owns_client: bool = False,
    ) -> None:
        self.client = client
        self.index_config = index
        self.embeddings: Embeddings | None = ensure_embeddings(index.get("embed")) if index else None
        self.root: Namespace = tuple(root)
        self.location = location
        self._paths = index_paths(index.get("fields")) if index else []
        self._owns_client = owns_client
        self._layout = Collections(client, self.root)
        self._lock = threading.RLock()
        self._max_batch = max(1, int(client.get_max_batch_size()))

    @classmethod
    def open(
        cls,
        *,
        path: str | Path | None = None,
        url: str | None = None,
        index: IndexConfig | None = None,
        root: Namespace = (),
    ) -> LangGraphChromaStore:
        """Open the embedded Chroma at ``path`` or the ``chroma run`` server at ``url``.

        Raises:
            StoreUnavailable: The path cannot be used or the server does not answer.
            ValueError: Both ``path`` and ``url`` given.
        """
        if path is not None and url is not None:
            raise ValueError("pass either path= (embedded store) or url= (Chroma server), not both")
        client, location = _connect_http(url) if url is not None else _connect_embedded(path)
        return cls(client, index=index, root=root, location=location, owns_client=True)

    def close(self) -> None:
        """Forget cached collections; close the client if ``open`` made it."""
        with self._lock:
            self._layout.clear()
        if self._owns_client:
            _close_quietly(self.client)

    def __enter__(self) -> LangGraphChromaStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"LangGraphChromaStore(location={self.location!r}, root={self.root!r})"

    # ------------------------------------------------------------------ the batch core

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run operations in order: every read sees the state before the batch's writes."""
        plan = self._plan(ops)
        queries, vectors = self._embed(plan)
        return self._execute(plan, queries, vectors)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Async ``batch``: embeds with the embedder's async methods, runs Chroma in a thread."""
        plan = self._plan(ops)
        queries: dict[str, list[float]] = {}
        vectors: list[list[float]] = []
        if self.embeddings is not None:
            if plan.queries:
                found = await asyncio.gather(*(self.embeddings.aembed_query(q) for q in plan.queries))
                queries = dict(zip(plan.queries, found))
            if plan.texts:
                vectors = await self.embeddings.aembed_documents([t for *_, t in plan.texts])
        return await asyncio.to_thread(self._execute, plan, queries, vectors)

    def _plan(self, ops: Iterable[Op]) -> _Plan:
        """Validate every op and gather the texts and queries to embed (pure, no I/O)."""
        plan = _Plan(ops=list(ops))
        for op in plan.ops:
            if not isinstance(op, (GetOp, PutOp, SearchOp, ListNamespacesOp)):
                raise ValueError(f"Unknown operation type: {type(op)}")
            validate_op_namespace(op)
            if isinstance(op, PutOp):
                self._check_put(op)
                plan.puts[(tuple(op.namespace), op.key)] = op
            elif isinstance(op, SearchOp) and op.query and self.embeddings is not None and op.query not in plan.queries:
                plan.queries.append(op.query)
        for (namespace, key), op in plan.puts.items():
            if op.value is None or op.index is False or self.embeddings is None:
                continue
            paths = self._paths if op.index is None else index_paths(op.index)
            plan.texts.extend((namespace, key, path, text) for path, text in texts_to_embed(op.value, paths))
        return plan

    def _check_put(self, op: PutOp) -> None:
        if not op.namespace:
            raise InvalidNamespaceError("Namespace cannot be empty.")
        if op.ttl is not None:
            raise NotImplementedError(f"TTL is not supported by {type(self).__name__}; put with ttl=None")
        if op.value is not None:
            encode_value(op.value)

    def _embed(self, plan: _Plan) -> tuple[dict[str, list[float]], list[list[float]]]:
        if self.embeddings is None:
            return {}, []
        queries = {q: self.embeddings.embed_query(q) for q in plan.queries}
        vectors = self.embeddings.embed_documents([t for *_, t in plan.texts]) if plan.texts else []
        return queries, vectors

    def _execute(self, plan: _Plan, queries: dict[str, list[float]], vectors: list[list[float]]) -> list[Result]:
        """Answer the reads, then apply the writes (the shared core of ``batch`` and ``abatch``)."""
        if len(vectors) != len(plan.texts):
            raise InvalidRecord(f"the embedder returned {len(vectors)} vectors for {len(plan.texts)} texts")
        self._check_dims(vectors)
        with self._lock, _dimension_hint(self.location), self._unavailable():
            results: list[Result] = []
            for op in plan.ops:
                if isinstance(op, GetOp):
                    results.append(self._get(tuple(op.namespace), op.key))
                elif isinstance(op, SearchOp):
                    results.append(self._search(op, queries.get(op.query or "")))
                elif isinstance(op, ListNamespacesOp):
                    results.append(self._list_namespaces(op))
                else:
                    results.append(None)
            self._write(plan, vectors)
            return results

    @contextmanager
    def _unavailable(self) -> Iterator[None]:
        """Turn a lost Chroma server or closed client into StoreUnavailable naming the location."""
        try:
            yield
        except (httpx.TransportError, ConnectionError) as exc:
            if isinstance(exc, StoreUnavailable):
                raise
            raise StoreUnavailable(f"Chroma at {self.location} failed: {exc}") from exc

    # ------------------------------------------------------------------ reads

    def _get(self, namespace: Namespace, key: str) -> Item | None:
        space = self._layout.space(namespace)
        found = self._layout.entries(space, [key]) if space is not None else []
        return found[0].item if found else None

    def _search(self, op: SearchOp, query: list[float] | None) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        spaces = [s for s in self._layout.all_spaces() if s.namespace[: len(prefix)] == prefix]
        page = self._nearest_page(spaces, op, query) if query is not None and not op.filter else None
        if page is None:
            page = self._exact_page(spaces, op, query)
        return [
            SearchItem(item.namespace, item.key, item.value, item.created_at, item.updated_at, score=score)
            for item, score in page
        ]

    def _exact_page(self, spaces: list[Space], op: SearchOp, query: list[float] | None) -> list[tuple[Item, float | None]]:
        """The reference path: read every item under the prefix, filter and score in Python."""
        candidates: list[tuple[Item, list[float]]] = []
        for space in spaces:
            found = [e for e in self._layout.entries(space) if matches_filter(e.item.value, op.filter)]
            scores = self._field_scores(space, query, [v for e in found for v in e.vector_ids]) if query else {}
            candidates.extend((e.item, [scores[v] for v in e.vector_ids if v in scores]) for e in found)
        if query is None:
            return [(item, None) for item, _ in candidates[op.offset : op.offset + op.limit]]
        return rank_page(candidates, offset=op.offset, limit=op.limit)

    def _nearest_page(self, spaces: list[Space], op: SearchOp, query: list[float]) -> list[tuple[Item, float | None]] | None:
        """The fast path of an unfiltered query: Chroma's nearest field vectors, best per item.

        Reads at most ``offset + limit`` items per namespace instead of all of them.
        Returns None (use ``_exact_page``) when the scored items cannot fill the page,
        which is when unscored items pad it. HNSW is approximate on large collections,
        so a far page may differ from the exact ranking where scores are close.
        """
        want = op.offset + op.limit
        if op.offset < 0 or op.limit <= 0:
            return None
        ranked: list[tuple[float, int, int, Item]] = []
        for space in spaces:
            coll = self._layout.vectors(space)
            best = self._nearest_keys(coll, space, query, want) if coll is not None else {}
            found = self._layout.entries(space, list(best)) if best else []
            # a vector its item no longer lists (left by racing writers) is skipped
            ranked.extend((best[e.item.key][0], space.seq, e.seq, e.item) for e in found if best[e.item.key][1] in e.vector_ids)
        ranked.sort(key=lambda r: (-r[0], r[1], r[2]))  # ties in store order, as in the reference path
        if len(ranked) < want:
            return None
        return [(item, score) for score, _, _, item in ranked[op.offset : want]]

    def _nearest_keys(self, coll: Any, space: Space, query: list[float], want: int) -> dict[str, tuple[float, str]]:
        """The ``want`` best-scoring keys of one namespace's vectors (or all, if fewer): key -> (score, vector id)."""
        ns_key = namespace_key(space.namespace)
        total = int(coll.count())
        n = min(want, total)
        while n > 0:
            res = coll.query(query_embeddings=[query], n_results=n, include=["metadatas", "distances"])
            best: dict[str, tuple[float, str]] = {}
            rows = zip(res["ids"][0], (res["metadatas"] or [[]])[0], (res["distances"] or [[]])[0])
            for vid, meta, dist in rows:
                if meta and meta.get("ns") == ns_key:
                    best.setdefault(str(meta.get("key")), (1.0 - float(dist), vid))  # nearest first: the first is the best
            if len(best) >= want or n >= total:
                return best
            n = min(total, n * 2)
        return {}

    def _field_scores(self, space: Space, query: list[float], vector_ids: list[str]) -> dict[str, float]:
        """Cosine similarity of the query to each stored field vector, by vector id."""
        coll = self._layout.vectors(space)
        if coll is None or not vector_ids:
            return {}
        ids: list[str] = []
        embeddings: list[Sequence[float]] = []
        for start in range(0, len(vector_ids), self._max_batch):
            res = coll.get(ids=vector_ids[start : start + self._max_batch], include=["embeddings"])
            ids.extend(res["ids"])
            embeddings.extend(res["embeddings"] if res["embeddings"] is not None else [])
        return dict(zip(ids, cosine_scores(query, embeddings)))

    def _list_namespaces(self, op: ListNamespacesOp) -> list[Namespace]:
        conditions = [(c.match_type, tuple(c.path)) for c in op.match_conditions or ()]
        found = {
            space.namespace[: op.max_depth] if op.max_depth is not None else space.namespace
            for space in self._layout.all_spaces()
            if namespace_matches(space.namespace, conditions) and space.items.count() > 0
        }
        return sorted(found)[op.offset : op.offset + op.limit]

    # ------------------------------------------------------------------ writes

    def _write(self, plan: _Plan, vectors: list[list[float]]) -> None:
        """Apply the batch's last write per key, namespace by namespace."""
        fields: Fields = {}
        for (namespace, key, path, _), vector in zip(plan.texts, vectors):
            fields.setdefault((namespace, key), []).append((path, list(vector)))
        by_space: dict[Namespace, list[PutOp]] = {}
        for (namespace, _), op in plan.puts.items():
            by_space.setdefault(namespace, []).append(op)
        for namespace, ops in by_space.items():
            self._write_space(namespace, ops, fields)

    def _write_space(self, namespace: Namespace, ops: list[PutOp], fields: Fields) -> None:
        """Upsert first, delete last, so a failure part way leaves each item whole.

        An interrupted write can leave vectors no item points at; searches skip them.
        """
        space = self._layout.space(namespace, create=any(op.value is not None for op in ops))
        if space is None:
            return  # only deletes, in a namespace that never existed
        old = {e.item.key: e for e in self._layout.entries(space, [op.key for op in ops])}
        kept = [op for op in ops if op.value is not None]
        if kept:
            self._upsert(space, kept, old, fields)
        gone = [item_id(op.key) for op in ops if op.value is None and op.key in old]
        if gone:
            space.items.delete(ids=gone)
        rewritten = {vector_id(key, path) for (ns, key), found in fields.items() if ns == namespace for path, _ in found}
        stale = [v for e in old.values() for v in e.vector_ids if v not in rewritten]
        if stale and (coll := self._layout.vectors(space)) is not None:
            coll.delete(ids=stale)

    def _upsert(self, space: Space, ops: list[PutOp], old: dict[str, Entry], fields: Fields) -> None:
        """Write items and their field vectors; an overwrite keeps ``created_at`` and its order."""
        now = datetime.now(timezone.utc).isoformat()
        ns_key = namespace_key(space.namespace)
        vec_ids: list[str] = []
        vec_embs: list[list[float]] = []
        vec_metas: list[dict[str, Any]] = []
        metas: list[dict[str, Any]] = []
        for op in ops:
            prior = old.get(op.key)
            ids = []
            for path, vector in fields.get((space.namespace, op.key), []):
                ids.append(vector_id(op.key, path))
                vec_embs.append(vector)
                vec_metas.append({"ns": ns_key, "key": op.key, "path": path})
            vec_ids.extend(ids)
            created = prior.item.created_at.isoformat() if prior else now
            seq = prior.seq if prior else self._layout.next_seq()
            metas.append(self._layout.item_metadata(space, op.key, created_at=created, updated_at=now, seq=seq, vector_ids=ids))
        if vec_ids:
            coll = self._layout.ensure_vectors(space)
            for start in range(0, len(vec_ids), self._max_batch):
                end = start + self._max_batch
                coll.upsert(ids=vec_ids[start:end], embeddings=vec_embs[start:end], metadatas=vec_metas[start:end])
        for start in range(0, len(ops), self._max_batch):
            chunk = ops[start : start + self._max_batch]
            space.items.upsert(
                ids=[item_id(op.key) for op in chunk],
                embeddings=[PLACEHOLDER] * len(chunk),
                documents=[encode_value(op.value) for op in chunk],
                metadatas=metas[start : start + self._max_batch],
            )

    def _check_dims(self, vectors: list[list[float]]) -> None:
        dims = (self.index_config or {}).get("dims")
        bad = next((len(v) for v in vectors if dims is not None and len(v) != dims), None)
        if bad is not None:
            raise InvalidRecord(f"the embedder returned {bad}-dimensional vectors; the index says dims={dims}")


__all__ = ["LangGraphChromaStore"]
