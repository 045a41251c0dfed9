"""ChromaStore: the single source of truth for every record kind (design.md §4).

Each namespace gets its own Chroma collections, one per record kind, named
``lmp_<stable_hash(namespace)>_<kind>``: a code path cannot forget a namespace
filter, and queries stay fast because Chroma's metadata filters do not scale (design.md §4).
Every record's metadata also carries ``ns`` (the namespace as JSON) and reads
drop anything whose ``ns`` is not this store's, so a stray record never leaks.

A record is stored as: the embedded ``document`` (the text retrieval should
match on), the full model as JSON under ``metadata["record"]``, and a few scalar
keys for optional filters (``status``, ``kind``, ``fp``, ``tool``, ``domain``,
``task``, ``run``, ``seq``, ``passed``). Metadata is scalar only: list-valued
metadata leaks across recreated collections in chromadb 1.5.9
(chroma-core/chroma#7594), and Chroma rejects ``None``, so ``None`` keys are
left out. Embeddings are always passed explicitly; Chroma's default embedding
function (a model download) is never used.

Every write of a kind a local snapshot keeps (``TRACKED_KINDS``) first stores a
fresh token under ``GENERATION_KEY`` in the lessons collection's metadata, and
``upsert`` returns what it stored (``Written``): the writer hands that to whoever keeps a
view of the store (``LearningMemory`` its in-memory state and ``store.snapshot``
journal), and a snapshot knows it is current by the token (``generation()``).

Example:
    >>> import tempfile
    >>> from langmem_plus.embeddings import HashingEmbeddings
    >>> from langmem_plus.records import Lesson
    >>> ns = ("acme", "agent-7")
    >>> store = ChromaStore.open(path=tempfile.mkdtemp(), namespace=ns,
    ...                          embeddings=HashingEmbeddings())
    >>> written = store.upsert("lessons", [Lesson(id="les_1", namespace=ns,
    ...                                 rule_text="WRONG: sort -d -> CORRECT: sort --desc")])
    >>> written.kind, written.token is not None
    ('lessons', True)
    >>> [(lesson.id, sim > 0.3) for lesson, sim in store.query("lessons", "sort -d")]
    [('les_1', True)]
    >>> store.close()
"""

from __future__ import annotations

import logging
import os
import threading
import uuid
from dataclasses import dataclass
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import chromadb
import httpx
import numpy as np
from chromadb.config import Settings
from langchain_core.embeddings import Embeddings
from pydantic import BaseModel, ValidationError

from langmem_plus.config import DEFAULT_CONFIG, MemoryConfig
from langmem_plus.embeddings import HashingEmbeddings
from langmem_plus.errors import InvalidRecord, StoreUnavailable
from langmem_plus.records import Namespace, validate_namespace
from langmem_plus.store.mapping import (
    KIND_SPECS,
    KINDS,
    KindSpec,
    Scalar,
    collection_name,
    namespace_key,
)
from langmem_plus.store.snapshot import SNAPSHOT_KINDS

logger = logging.getLogger(__name__)

DEFAULT_PATH = Path(".langmem_plus")
"""Where the embedded store lives when neither a path nor a URL is given (design.md §4)."""
CONNECT_TIMEOUT_S = 3.0
"""Seconds the heartbeat probe of a Chroma server may take before ``StoreUnavailable``."""
PAGE_SIZE = 2000
"""Records fetched per ``get`` page by ``all()``; bounds memory per round trip at 100k records."""
HEARTBEAT_PATH = "/api/v2/heartbeat"
"""Chroma 1.x heartbeat endpoint, probed before the HTTP client is built."""
GENERATION_KEY = "lmp_gen"
"""Lessons-collection metadata key holding the token of the latest write of a tracked kind."""
TRACKED_KINDS = frozenset(SNAPSHOT_KINDS)
"""Kinds whose writes bump the generation (the ones a local snapshot keeps, ``store.snapshot``)."""

@dataclass(frozen=True)
class Written:
    """What one ``upsert`` stored: the records (last per id), their JSON and vectors, and the generation token
    of a tracked write (None for other kinds). The writer hands it to whoever keeps a view of the store."""

    kind: str
    records: list[BaseModel]
    raws: list[str]
    vectors: np.ndarray
    token: str | None
"""Called after every successful upsert: (kind, records, their JSON, their vectors, generation token or None)."""

# --------------------------------------------------------------------------- opening


def _settings() -> Settings:
    return Settings(anonymized_telemetry=False)


def _connect_embedded(path: str | Path | None) -> tuple[Any, str]:
    """A PersistentClient at ``path`` (created), or StoreUnavailable naming the path and fix."""
    root = Path(path if path is not None else DEFAULT_PATH).expanduser().resolve()
    fix = "pass path= an existing or creatable directory you can write to"
    if root.exists() and not root.is_dir():
        raise StoreUnavailable(f"Chroma store path {root} is a file, not a directory; {fix}")
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreUnavailable(f"cannot create Chroma store directory {root}: {exc}; {fix}") from exc
    if not os.access(root, os.W_OK | os.X_OK):
        raise StoreUnavailable(f"Chroma store directory {root} is not writable; {fix}")
    try:
        return chromadb.PersistentClient(path=str(root), settings=_settings()), str(root)
    except Exception as exc:
        _forget_failed_system(str(root))
        raise StoreUnavailable(f"cannot open the Chroma store at {root}: {exc}; {fix}") from exc


def _forget_failed_system(identifier: str) -> None:
    """Drop a half-started System chromadb caches by path, so a retry starts afresh."""
    try:
        from chromadb.api.shared_system_client import SharedSystemClient

        SharedSystemClient._identifier_to_system.pop(identifier, None)
    except Exception:  # private API; best effort only
        pass


def _connect_http(url: str) -> tuple[Any, str]:
    """An HttpClient for ``http(s)://host:port`` after a short heartbeat probe."""
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ValueError(f"Chroma url must look like http://host:port, got {url!r}")
    ssl = parsed.scheme == "https"
    port = parsed.port or (443 if ssl else 8000)
    base = f"{parsed.scheme}://{parsed.hostname}:{port}"
    fix = f"start one with `chroma run --path <dir> --host {parsed.hostname} --port {port}`, or give the url of a running one"
    try:
        httpx.get(base + HEARTBEAT_PATH, timeout=CONNECT_TIMEOUT_S).raise_for_status()
    except httpx.HTTPError as exc:
        raise StoreUnavailable(f"no Chroma server answers at {base} ({exc}); {fix}") from exc
    try:
        client = chromadb.HttpClient(
            host=parsed.hostname, port=port, ssl=ssl, settings=_settings()
        )
    except Exception as exc:
        raise StoreUnavailable(f"cannot connect to the Chroma server at {base}: {exc}; {fix}") from exc
    return client, base


# --------------------------------------------------------------------------- the store


class ChromaStore:
    """Namespaced record storage on Chroma, embedded or client/server (design.md §4).

    Build one with ``ChromaStore.open``; every method reads and writes only this
    store's namespace.

    Example:
        >>> import tempfile
        >>> from langmem_plus.embeddings import HashingEmbeddings
        >>> with ChromaStore.open(path=tempfile.mkdtemp(), namespace=("acme",),
        ...                       embeddings=HashingEmbeddings()) as store:
        ...     store.count("lessons")
        0
    """

    def __init__(
        self,
        client: Any,
        *,
        namespace: Namespace,
        embeddings: Embeddings,
        config: MemoryConfig = DEFAULT_CONFIG,
        location: str,
    ) -> None:
        self.client = client
        """The chromadb client (shared with, e.g., a ``langchain_chroma.Chroma`` view)."""
        self.namespace: Namespace = validate_namespace(namespace)
        self.embeddings = embeddings
        self.config = config
        self.location = location
        """The store's directory or server URL, for messages."""
        self._ns_key = namespace_key(self.namespace)
        self._collections: dict[str, Any] = {}
        self._max_batch = max(1, int(client.get_max_batch_size()))
        self._closed = False
        self._nonempty: dict[str, bool] = {}
        self._group = threading.local()
        """This thread's write group (``write_group``): whether one is open, and its token once bumped."""
        """Told of every successful upsert (``LearningMemory`` keeps its in-memory state and snapshot by them)."""

    @classmethod
    def open(
        cls,
        *,
        path: str | Path | None = None,
        url: str | None = None,
        namespace: Namespace,
        embeddings: Embeddings,
        config: MemoryConfig = DEFAULT_CONFIG,
    ) -> ChromaStore:
        """Open the embedded store at ``path`` or connect to the server at ``url``.

        Args:
            path: Directory of the embedded store (created if missing); default
                ``./.langmem_plus``. Mutually exclusive with ``url``.
            url: ``http://host:port`` of a ``chroma run`` server.
            namespace: Namespace tuple, e.g. ``("acme", "agent-7")``.
            embeddings: The embedder; its vectors are always passed to Chroma.
            config: Tunables.

        Returns:
            An open store.

        Raises:
            StoreUnavailable: The path cannot be used or the server does not
                answer within ``CONNECT_TIMEOUT_S``.
            InvalidNamespace: The namespace is malformed.
            ValueError: Both ``path`` and ``url`` given, or a malformed ``url``.
        """
        namespace = validate_namespace(namespace)
        if path is not None and url is not None:
            raise ValueError("pass either path= (embedded store) or url= (Chroma server), not both")
        client, location = _connect_http(url) if url is not None else _connect_embedded(path)
        try:
            return cls(client, namespace=namespace, embeddings=embeddings, config=config, location=location)
        except Exception as exc:
            _close_quietly(client)
            raise StoreUnavailable(f"Chroma at {location} is not usable: {exc}") from exc

    # ---- lifecycle ------------------------------------------------------------

    def close(self) -> None:
        """Release the client (the embedded System stops with its last client)."""
        if not self._closed:
            self._closed = True
            self._collections.clear()
            _close_quietly(self.client)

    @property
    def closed(self) -> bool:
        """Whether ``close`` was called."""
        return self._closed

    def __enter__(self) -> ChromaStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ChromaStore(location={self.location!r}, namespace={self.namespace!r})"

    @contextmanager
    def _guard(self, what: str) -> Iterator[None]:
        """Turn transport failures into StoreUnavailable naming the location."""
        if self._closed:
            raise StoreUnavailable(f"ChromaStore at {self.location} is closed; open it again")
        try:
            yield
        except (httpx.TransportError, ConnectionError) as exc:
            if isinstance(exc, StoreUnavailable):
                raise
            raise StoreUnavailable(f"Chroma at {self.location} failed during {what}: {exc}") from exc

    # ---- collections ----------------------------------------------------------

    def collection_name(self, kind: str) -> str:
        """Chroma collection name of ``kind`` in this namespace."""
        return collection_name(self.namespace, _check_kind(kind))

    def raw_collection(self, kind: str) -> Any:
        """The chromadb Collection of ``kind`` (created on first use), e.g. for benchmarks."""
        kind = _check_kind(kind)
        coll = self._collections.get(kind)
        if coll is None:
            with self._guard(f"opening collection {kind}"):
                coll = self.client.get_or_create_collection(
                    name=self.collection_name(kind),
                    embedding_function=None,
                    configuration={"hnsw": {"space": "cosine", "ef_construction": self.config.storage.hnsw_ef_construction}},
                    metadata=self._collection_metadata(kind),
                )
            self._collections[kind] = coll
        return coll

    def _collection_metadata(self, kind: str) -> dict[str, str]:
        """The metadata naming a collection's namespace and kind (``modify`` replaces it whole)."""
        return {"lmp_ns": self._ns_key, "lmp_kind": kind}

    def delete_namespace(self) -> None:
        """Drop every collection of this namespace (tests and ``reset``)."""
        from chromadb.errors import NotFoundError

        self._nonempty.clear()
        for kind in KINDS:
            self._collections.pop(kind, None)
            with self._guard("delete_namespace"):
                try:
                    self.client.delete_collection(self.collection_name(kind))
                except (NotFoundError, ValueError):
                    pass

    # ---- embeddings -----------------------------------------------------------

    def embed_query(self, text: str) -> list[float]:
        """Embed a query with the store's embedder."""
        return list(self.embeddings.embed_query(text))

    def embed_array(self, texts: Sequence[str]) -> np.ndarray:
        """Embed documents into a float32 array in one call; ``HashingEmbeddings`` (whose
        ``embed_documents`` is ``embed_array`` as lists) skips the round trip through Python
        lists. A subclass that overrides ``embed_documents`` is honoured."""
        if isinstance(self.embeddings, HashingEmbeddings) and (
            type(self.embeddings).embed_documents is HashingEmbeddings.embed_documents
        ):
            return self.embeddings.embed_array(list(texts))
        return np.asarray(self.embeddings.embed_documents(list(texts)), dtype=np.float32)

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed documents with the store's embedder, in one call."""
        return [list(v) for v in self.embeddings.embed_documents(list(texts))]

    # ---- writes ---------------------------------------------------------------

    def upsert(self, kind: str, records: Sequence[BaseModel]) -> Written | None:
        """Insert or replace records of one kind, embedding all documents in one call; what was stored (None: nothing).

        Args:
            kind: One of ``KINDS``.
            records: Models of the kind's type, all in this store's namespace.
                A repeated id keeps its last record.

        Raises:
            ValueError: Unknown kind.
            InvalidRecord: A record of the wrong type or another namespace.
        """
        latest, ids, docs, metas = self.encode(kind, records)
        if not ids:
            return None
        self._nonempty[kind] = True
        vectors = self.embed_array(docs)
        coll = self.raw_collection(kind)
        token = self._write_token() if kind in TRACKED_KINDS else None
        for start in range(0, len(ids), self._max_batch):
            end = start + self._max_batch
            with self._guard(f"upsert {kind}"), _dimension_hint(self.location):
                coll.upsert(
                    ids=ids[start:end],
                    embeddings=vectors[start:end],
                    documents=docs[start:end],
                    metadatas=metas[start:end],
                )
        return Written(kind, list(latest), [str(m["record"]) for m in metas], vectors, token)

    def encode(
        self, kind: str, records: Sequence[BaseModel]
    ) -> tuple[list[BaseModel], list[str], list[str], list[dict[str, Scalar]]]:
        """The records as ``upsert`` sends them to Chroma: the last record per id, their ids, documents and metadata.

        ``upsert``'s own encoding, public so a benchmark can write exactly the same payload
        to a bare collection.

        Raises:
            ValueError: Unknown kind.
            InvalidRecord: A record of the wrong type or another namespace.
        """
        spec = KIND_SPECS[_check_kind(kind)]
        latest: dict[str, BaseModel] = {}
        for record in records:
            self._check_record(kind, spec, record)
            latest[spec.id_of(record)] = record
        values = list(latest.values())
        return values, list(latest), [spec.document(r) for r in values], [self._metadata(spec, r) for r in values]

    @contextmanager
    def write_group(self) -> Iterator[None]:
        """Tracked writes of this thread inside the block share one generation token.

        The token is stored before the group's first tracked write (one Chroma call for
        the group instead of one per write: ``end_run`` writes lessons, links, runs and
        skills). A caller that journals the group must do so only after the block, all
        writes under that token and one end line, so a crash inside the group still leaves
        Chroma's token ahead of the journal (``LearningMemory`` does). Other threads' writes
        keep their own tokens. Nested groups are one group.
        """
        if getattr(self._group, "open", False):
            yield
            return
        self._group.open, self._group.token = True, None
        try:
            yield
        finally:
            self._group.open, self._group.token = False, None

    def in_write_group(self) -> bool:
        """Whether this thread is inside ``write_group``."""
        return bool(getattr(self._group, "open", False))

    def _write_token(self) -> str:
        """The token a tracked write goes under: its group's (bumped once), else a fresh one."""
        if not getattr(self._group, "open", False):
            return self._bump_generation()
        if self._group.token is None:
            self._group.token = self._bump_generation()
        return str(self._group.token)

    def _bump_generation(self) -> str:
        """Store a fresh token in the lessons collection's metadata before a tracked write.

        Bumped *before* the write, so a crash between the two leaves a token no snapshot
        has seen: the next open reads from Chroma instead of trusting a stale snapshot.
        """
        token = uuid.uuid4().hex
        coll = self.raw_collection("lessons")
        with self._guard("generation"):
            coll.modify(metadata={**self._collection_metadata("lessons"), GENERATION_KEY: token})
        return token

    def generation(self) -> str | None:
        """The token of the latest tracked write (None if none was made since the store existed)."""
        self.raw_collection("lessons")
        with self._guard("generation"):
            meta = self.client.get_collection(self.collection_name("lessons"), embedding_function=None).metadata or {}
        value = meta.get(GENERATION_KEY)
        return str(value) if value is not None else None

    def _check_record(self, kind: str, spec: KindSpec, record: BaseModel) -> None:
        if not isinstance(record, spec.model):
            raise InvalidRecord(
                f"{kind} holds {spec.model.__name__} records, got {type(record).__name__}"
            )
        ns = tuple(getattr(record, "namespace", ()))
        if ns != self.namespace:
            raise InvalidRecord(
                f"{spec.model.__name__} {spec.id_of(record)!r} has namespace {ns!r}; "
                f"this store is {self.namespace!r}"
            )

    def _metadata(self, spec: KindSpec, record: BaseModel) -> dict[str, Scalar]:
        meta: dict[str, Scalar] = {"ns": self._ns_key, "record": record.model_dump_json()}
        for key, value in spec.scalars(record).items():
            if value is not None:
                meta[key] = value
        return meta

    # ---- reads ----------------------------------------------------------------

    def get(self, kind: str, ids: Sequence[str]) -> list[BaseModel]:
        """Records with these ids, in the order asked; missing ids are skipped."""
        kind = _check_kind(kind)
        wanted = list(dict.fromkeys(ids))
        found: dict[str, BaseModel] = {}
        coll = self.raw_collection(kind)
        for start in range(0, len(wanted), self._max_batch):
            with self._guard(f"get {kind}"):
                res = coll.get(ids=wanted[start : start + self._max_batch], include=["metadatas"])
            for rid, meta in zip(res["ids"], res["metadatas"] or []):
                record = self._decode(kind, rid, meta)
                if record is not None:
                    found[rid] = record
        return [found[i] for i in wanted if i in found]

    def all(self, kind: str) -> list[BaseModel]:
        """Every record of ``kind`` in this namespace, fetched in pages of ``PAGE_SIZE``."""
        kind = _check_kind(kind)
        coll = self.raw_collection(kind)
        out: list[BaseModel] = []
        offset = 0
        while True:
            with self._guard(f"all {kind}"):
                res = coll.get(limit=PAGE_SIZE, offset=offset, include=["metadatas"])
            for rid, meta in zip(res["ids"], res["metadatas"] or []):
                record = self._decode(kind, rid, meta)
                if record is not None:
                    out.append(record)
            if len(res["ids"]) < PAGE_SIZE:
                return out
            offset += PAGE_SIZE

    def query(
        self,
        kind: str,
        text: str | None = None,
        *,
        embedding: Sequence[float] | None = None,
        n: int = DEFAULT_CONFIG.retrieval.candidates_k,
        where: dict[str, Any] | None = None,
    ) -> list[tuple[BaseModel, float]]:
        """Nearest records to a text or an embedding, best first.

        Args:
            kind: One of ``KINDS``.
            text: Query text (embedded with ``embed_query``); or
            embedding: a precomputed query vector.
            n: Number of neighbours wanted.
            where: Optional Chroma metadata filter on the scalar keys. Slow at
                scale (design.md §4); prefer post-filtering.

        Returns:
            ``(record, cosine similarity)`` pairs, similarity = 1 - distance.
        """
        kind = _check_kind(kind)
        if (text is None) == (embedding is None):
            raise ValueError("query needs exactly one of text= or embedding=")
        if n <= 0:
            return []
        vector = self.embed_query(text) if text is not None else list(embedding or [])
        coll = self.raw_collection(kind)
        with self._guard(f"query {kind}"), _dimension_hint(self.location):
            res = coll.query(
                query_embeddings=np.asarray([vector], dtype=np.float32),
                n_results=n,
                where=where,
                include=["metadatas", "distances"],
            )
        out: list[tuple[BaseModel, float]] = []
        metas = (res["metadatas"] or [[]])[0]
        dists = (res["distances"] or [[]])[0]
        for rid, meta, dist in zip(res["ids"][0], metas, dists):
            record = self._decode(kind, rid, meta)
            if record is not None:
                out.append((record, 1.0 - float(dist)))
        return out

    def query_ids(self, kind: str, embedding: Sequence[float], *, n: int = DEFAULT_CONFIG.retrieval.candidates_k) -> list[tuple[str, float]]:
        """Ids and cosine similarities of the nearest entries, best first, without decoding records.

        The retrieval hot path: the caller already holds the records in memory, and
        asking Chroma for distances only costs well under what metadatas and documents do (docs/PERFORMANCE.md).
        Entries of a foreign namespace cannot appear: each namespace has its own collections.
        """
        kind = _check_kind(kind)
        if n <= 0:
            return []
        coll = self.raw_collection(kind)
        with self._guard(f"query {kind}"), _dimension_hint(self.location):
            res = coll.query(
                query_embeddings=np.asarray([embedding], dtype=np.float32), n_results=n, include=["distances"]
            )
        dists = (res["distances"] or [[]])[0]
        return [(rid, 1.0 - float(d)) for rid, d in zip(res["ids"][0], dists)]

    def stored_embeddings(self, kind: str, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The embeddings Chroma holds for these ids (no re-embedding, no API call)."""
        kind = _check_kind(kind)
        if not ids:
            return {}
        coll = self.raw_collection(kind)
        with self._guard(f"get {kind}"):
            res = coll.get(ids=list(ids), include=["embeddings"])
        vecs = res["embeddings"]
        if vecs is None:
            return {}
        return {rid: np.asarray(v, dtype=np.float32) for rid, v in zip(res["ids"], vecs)}

    def has_records(self, kind: str) -> bool:
        """Whether ``kind`` holds anything: counted once per handle, then kept true by ``upsert``.

        Lets the query path skip empty collections (episodes, skills) without a
        ``count`` round trip per retrieval. Writes by another handle to an
        empty kind are seen after reopening.
        """
        known = self._nonempty.get(kind)
        if known is None:
            known = self._nonempty[kind] = self.count(kind) > 0
        return known

    def count(self, kind: str) -> int:
        """Number of entries in this namespace's ``kind`` collection (O(1)).

        Entries whose ``ns`` metadata is foreign (only possible by writing to the
        raw collection) are counted here but never returned by a read.
        """
        coll = self.raw_collection(kind)
        with self._guard(f"count {kind}"):
            return int(coll.count())

    def _decode(self, kind: str, rid: str, meta: Any) -> BaseModel | None:
        """The record in an entry's metadata; None (logged) if foreign or unreadable."""
        if not meta or meta.get("ns") != self._ns_key:
            logger.warning(
                "langmem_plus: skipped %s entry %r in %s: namespace %r is not %r",
                kind, rid, self.location, (meta or {}).get("ns"), self._ns_key,
            )
            return None
        model = KIND_SPECS[kind].model
        try:
            record = model.model_validate_json(meta["record"])
        except (KeyError, TypeError, ValidationError, ValueError) as exc:
            logger.warning("langmem_plus: skipped unreadable %s entry %r: %s", kind, rid, exc)
            return None
        if tuple(getattr(record, "namespace", ())) != self.namespace:
            logger.warning("langmem_plus: skipped %s entry %r with a foreign namespace", kind, rid)
            return None
        return record


def _check_kind(kind: str) -> str:
    if kind not in KIND_SPECS:
        raise ValueError(f"unknown record kind {kind!r}; kinds are {', '.join(KINDS)}")
    return kind


@contextmanager
def _dimension_hint(location: str) -> Iterator[None]:
    """Explain an embedding-dimension mismatch (a store opened with another embedder)."""
    from chromadb.errors import InvalidArgumentError

    try:
        yield
    except InvalidArgumentError as exc:
        if "dimension" not in str(exc):
            raise
        raise InvalidRecord(
            f"{exc} (store {location}): it was written with another embedder or dimension; "
            "open it with the same embeddings, or use a new path/namespace"
        ) from exc


def _close_quietly(client: Any) -> None:
    try:
        client.close()
        # chromadb 1.5.9 never closes the httpx sessions of an HttpClient (its
        # own and its internal admin client's); nobody else uses them, so close
        # them here to release the sockets.
        for owner in (client, getattr(client, "_admin_client", None)):
            session = getattr(getattr(owner, "_server", None), "_session", None)
            if isinstance(session, httpx.Client):
                session.close()
    except Exception as exc:  # closing must never mask the real error
        logger.debug("langmem_plus: closing the Chroma client failed: %s", exc)


__all__ = [
    "CONNECT_TIMEOUT_S",
    "GENERATION_KEY",
    "TRACKED_KINDS",
    "DEFAULT_PATH",
    "KINDS",
    "KIND_SPECS",
    "PAGE_SIZE",
    "ChromaStore",
    "KindSpec",
    "Written",
    "collection_name",
    "namespace_key",
]
