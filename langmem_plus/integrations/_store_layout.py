"""Where a LangGraph store's namespaces and items live in Chroma (design.md §4, §8).

Split from ``integrations.store`` (the BaseStore semantics) so the on-disk layout is
in one place. Each LangGraph namespace is a ``Space``: an items collection
``lmp_<hash>_lgitems`` and, once a field is embedded, a vectors collection
``lmp_<hash>_lgvectors``, named like langmem_plus's own collections (``store.mapping``)
with the hash over the store's root and the namespace, both as JSON
(``namespace_key``), so no two (root, namespace) pairs share a name. Collection
metadata records the namespace, root, kind and creation order (``lmp_seq``); every
entry records its namespace under ``ns`` and is dropped on read if it is foreign.

An item entry: id ``"k" + key``, the value as JSON in the document, and scalar
metadata ``key``, ``created_at``, ``updated_at`` (ISO 8601), ``seq`` (insertion
order) and ``vectors`` (its vector ids, JSON). Its embedding is a placeholder:
Chroma wants one per entry, and items are only read by id. A vector entry: id
``json([key, path])``, the field's embedding, metadata ``ns``, ``key``, ``path``.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from langgraph.store.base import Item

from langmem_plus._text import stable_hash
from langmem_plus.errors import InvalidRecord
from langmem_plus.store.chroma import PAGE_SIZE
from langmem_plus.store.mapping import namespace_key

logger = logging.getLogger(__name__)

ITEMS_KIND = "lgitems"
"""Collection-name suffix and ``lmp_kind`` of a namespace's items."""
VECTORS_KIND = "lgvectors"
"""Collection-name suffix and ``lmp_kind`` of a namespace's field vectors."""
PLACEHOLDER = [1.0]
"""The embedding of an item entry: Chroma needs one, items are only ever read by id."""

Namespace = tuple[str, ...]


def encode_value(value: Any) -> str:
    """The JSON document of an item value, or InvalidRecord for what JSON cannot hold."""
    if not isinstance(value, Mapping):
        raise InvalidRecord(f"a store value must be a dict, got {type(value).__name__}")
    try:
        return json.dumps(dict(value), allow_nan=False, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise InvalidRecord(f"a store value must be JSON without NaN or infinity: {exc}") from exc


def item_id(key: str) -> str:
    """Chroma id of an item entry (prefixed, so the empty key is a valid id)."""
    return "k" + key


def vector_id(key: str, path: str) -> str:
    """Chroma id of one embedded field of an item."""
    return json.dumps([key, path], ensure_ascii=False)


@dataclass(frozen=True)
class Entry:
    """A decoded item entry."""

    item: Item
    seq: int
    """Insertion order within the namespace (kept by overwrites, renewed after a delete)."""
    vector_ids: list[str]


@dataclass
class Space:
    """One namespace's collections, and its creation order among namespaces."""

    namespace: Namespace
    items: Any
    seq: int
    vectors: Any | None = None


class Collections:
    """Finds, creates and lists the ``Space`` of each namespace under one root.

    Args:
        client: A chromadb client.
        root: The store's root namespace (part of every collection name).
    """

    def __init__(self, client: Any, root: Namespace) -> None:
        self.client = client
        self.root_key = namespace_key(root)
        self._spaces: dict[Namespace, Space] = {}
        self._last_seq = 0

    def clear(self) -> None:
        """Forget cached collection handles."""
        self._spaces.clear()

    def _name(self, namespace: Namespace, kind: str) -> str:
        return f"lmp_{stable_hash(self.root_key, namespace_key(namespace))}_{kind}"

    def _metadata(self, namespace: Namespace, kind: str, seq: int) -> dict[str, Any]:
        return {"lmp_ns": namespace_key(namespace), "lmp_root": self.root_key, "lmp_kind": kind, "lmp_seq": seq}

    def next_seq(self) -> int:
        """A per-process increasing, roughly time-ordered insertion number (nanoseconds)."""
        self._last_seq = max(self._last_seq + 1, time.time_ns())
        return self._last_seq

    def space(self, namespace: Namespace, *, create: bool = False) -> Space | None:
        """A namespace's collections: cached, looked up, or (for a write) created."""
        space = self._spaces.get(namespace)
        if space is not None:
            return space
        from chromadb.errors import NotFoundError

        name = self._name(namespace, ITEMS_KIND)
        try:
            coll = self.client.get_collection(name, embedding_function=None)
        except (NotFoundError, ValueError):
            if not create:
                return None
            metadata = self._metadata(namespace, ITEMS_KIND, self.next_seq())
            coll = self.client.get_or_create_collection(name, embedding_function=None, metadata=metadata)
        space = self._remember(namespace, coll)
        if space is None and create:
            raise InvalidRecord(f"Chroma collection {name} belongs to another namespace than {namespace!r}")
        return space

    def _remember(self, namespace: Namespace, coll: Any) -> Space | None:
        meta = coll.metadata or {}
        if meta.get("lmp_ns") != namespace_key(namespace) or meta.get("lmp_root") != self.root_key:
            logger.warning("langmem_plus: collection %s belongs to another namespace; skipped", coll.name)
            return None
        space = Space(namespace, coll, int(meta.get("lmp_seq", 0)))
        self._spaces[namespace] = space
        return space

    def vectors(self, space: Space) -> Any | None:
        """The namespace's vectors collection, or None while no field was embedded."""
        if space.vectors is None:
            from chromadb.errors import NotFoundError

            try:
                space.vectors = self.client.get_collection(self._name(space.namespace, VECTORS_KIND), embedding_function=None)
            except (NotFoundError, ValueError):
                return None
        return space.vectors

    def ensure_vectors(self, space: Space) -> Any:
        """The namespace's vectors collection, created (cosine space) if missing."""
        if space.vectors is None:
            space.vectors = self.client.get_or_create_collection(
                self._name(space.namespace, VECTORS_KIND),
                embedding_function=None,
                configuration={"hnsw": {"space": "cosine"}},
                metadata=self._metadata(space.namespace, VECTORS_KIND, space.seq),
            )
        return space.vectors

    def all_spaces(self) -> list[Space]:
        """Every namespace of this root that was ever written, in creation order."""
        spaces = []
        for coll in self.client.list_collections():
            meta = coll.metadata or {}
            if meta.get("lmp_kind") != ITEMS_KIND or meta.get("lmp_root") != self.root_key:
                continue
            namespace = tuple(json.loads(str(meta.get("lmp_ns", "[]"))))
            space = self._spaces.get(namespace) or self._remember(namespace, coll)
            if space is not None:
                spaces.append(space)
        return sorted(spaces, key=lambda s: (s.seq, s.namespace))

    # ---- entries ---------------------------------------------------------------

    def entries(self, space: Space, keys: Sequence[str] | None = None) -> list[Entry]:
        """Items of a namespace by key, or all of them (``keys=None``) in insertion order."""
        out: list[Entry] = []
        if keys is not None:
            res = space.items.get(ids=[item_id(k) for k in keys], include=["documents", "metadatas"])
            return self._decode_all(space, res, out)
        offset = 0
        while True:
            res = space.items.get(limit=PAGE_SIZE, offset=offset, include=["documents", "metadatas"])
            self._decode_all(space, res, out)
            if len(res["ids"]) < PAGE_SIZE:
                return sorted(out, key=lambda entry: entry.seq)
            offset += PAGE_SIZE

    def _decode_all(self, space: Space, res: Mapping[str, Any], out: list[Entry]) -> list[Entry]:
        for rid, doc, meta in zip(res["ids"], res["documents"] or [], res["metadatas"] or []):
            entry = self._decode(space, rid, doc, meta)
            if entry is not None:
                out.append(entry)
        return out

    def _decode(self, space: Space, rid: str, document: str | None, meta: Mapping[str, Any] | None) -> Entry | None:
        """An entry as an ``Entry``; None (logged) if it is foreign or unreadable."""
        if not meta or meta.get("ns") != namespace_key(space.namespace):
            logger.warning("langmem_plus: skipped store entry %r of a foreign namespace", rid)
            return None
        try:
            item = Item(
                value=json.loads(document or ""),
                key=str(meta["key"]),
                namespace=space.namespace,
                created_at=datetime.fromisoformat(str(meta["created_at"])),
                updated_at=datetime.fromisoformat(str(meta["updated_at"])),
            )
            return Entry(item, int(meta["seq"]), list(json.loads(str(meta.get("vectors", "[]")))))
        except (KeyError, TypeError, ValueError) as exc:
            logger.warning("langmem_plus: skipped unreadable store entry %r: %s", rid, exc)
            return None

    @staticmethod
    def item_metadata(space: Space, key: str, *, created_at: str, updated_at: str, seq: int, vector_ids: list[str]) -> dict[str, Any]:
        """The scalar metadata of an item entry."""
        return {
            "ns": namespace_key(space.namespace),
            "key": key,
            "created_at": created_at,
            "updated_at": updated_at,
            "seq": seq,
            "vectors": json.dumps(vector_ids, ensure_ascii=False),
        }


__all__ = [
    "ITEMS_KIND",
    "PLACEHOLDER",
    "VECTORS_KIND",
    "Collections",
    "Entry",
    "Space",
    "encode_value",
    "item_id",
    "vector_id",
]
