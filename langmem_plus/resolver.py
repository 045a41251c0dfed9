"""Which memory a graph run uses: a fixed one, or one per namespace named by the run's context (design.md §8).

LangGraph 1.x hands every node a ``Runtime`` whose ``context`` is static, per-invocation
data (``graph.invoke(state, context=...)``), the place LangGraph's own store examples
put the user id. So one compiled graph can serve many users: each node factory of
``langmem_plus.nodes`` takes either a fixed ``LearningMemory`` (as before) or a
*resolver*, any callable mapping the run's context to a ``LearningMemory``.
``MemoryResolver`` is the ready one: it reads a namespace (or a ready memory) from the
context, opens one ``LearningMemory`` per namespace over one store path or server url,
and keeps it open for later runs; it is safe to share between threads and event loops.

Security: every record belongs to the namespace the context names, and reads never
cross namespaces. Who may name which namespace is the caller's policy: behind
LangGraph Server, derive the namespace from the authenticated user (``namespace_of``),
not from client-supplied context alone.

Example:
    >>> import tempfile
    >>> resolver = MemoryResolver(tempfile.mkdtemp())
    >>> a = resolver(MemoryContext(namespace=("acme", "user-1")))
    >>> b = resolver({"namespace": ["acme", "user-2"]})
    >>> a.namespace, b.namespace, resolver(MemoryContext(namespace=("acme", "user-1"))) is a
    (('acme', 'user-1'), ('acme', 'user-2'), True)
    >>> resolver.close()
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Union

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel

from langmem_plus.config import MemoryConfig
from langmem_plus.errors import InvalidNamespace, StoreUnavailable
from langmem_plus.memory import LearningMemory
from langmem_plus.records import Namespace, validate_namespace

MemorySource = Union[LearningMemory, Callable[[Any], LearningMemory]]
"""What a node factory takes: a fixed memory, or a resolver from the run's context to a memory."""


@dataclass(frozen=True)
class MemoryContext:
    """A LangGraph ``context_schema`` naming the namespace of one run.

    Pass it as ``graph.invoke(state, context=MemoryContext(namespace=("acme", "user-1")))``;
    a plain dict with a ``namespace`` key works too (LangGraph coerces it to the schema).
    Your own context type works with ``MemoryResolver`` as long as it has a ``namespace``
    (or a ``memory``) field or key, or you pass ``namespace_of``.
    """

    namespace: tuple[str, ...] | list[str] | str | None = None
    """The namespace this run reads and writes, e.g. ``("acme", "user-1")``."""


def _field(context: Any, name: str) -> Any:
    """``context[name]`` for a mapping, ``context.name`` otherwise; None when absent."""
    if context is None:
        return None
    if isinstance(context, Mapping):
        return context.get(name)
    return getattr(context, name, None)


def namespace_from_context(context: Any) -> Any:
    """The ``namespace`` field (or key) of a run context, None when it names none."""
    return _field(context, "namespace")


class MemoryResolver:
    """Opens and caches one ``LearningMemory`` per namespace over one store; the resolver nodes take.

    Called with a run's context it returns, in order of precedence: the context's own
    ``memory`` (a ``LearningMemory`` field or key), else the memory of the namespace
    ``namespace_of(context)`` names, else that of ``default_namespace``. Each namespace is
    opened once (under a lock, so two threads never open it twice) and stays open until
    ``close``.

    Args:
        path: Folder of the embedded store shared by all namespaces. Ignored with ``url``.
        url: A Chroma server instead of an embedded store.
        config: Tunables for every memory opened.
        embeddings: Embedder for every memory (shared instance or spec); the offline default when None.
        llm: Optional chat model for lesson synthesis and hint distillation.
        audit_dir: Where the audit logs live (default: the store folder).
        clock: Source of "now" for every memory.
        namespace_of: Reads the namespace from a context (default: its ``namespace`` field or key).
        default_namespace: Used when the context names none; None makes that an error.

    Example:
        >>> import tempfile
        >>> with MemoryResolver(tempfile.mkdtemp(), default_namespace=("shared",)) as resolve:
        ...     resolve(None).namespace
        ('shared',)
    """

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        url: str | None = None,
        config: MemoryConfig | None = None,
        embeddings: Embeddings | str | None = None,
        llm: BaseChatModel | None = None,
        audit_dir: str | Path | None = None,
        clock: Callable[[], float] = time.time,
        namespace_of: Callable[[Any], Any] = namespace_from_context,
        default_namespace: Iterable[str] | str | None = None,
    ) -> None:
        self.path, self.url, self.config, self.embeddings, self.llm = path, url, config, embeddings, llm
        self.audit_dir, self.clock, self.namespace_of = audit_dir, clock, namespace_of
        self.default_namespace = None if default_namespace is None else validate_namespace(default_namespace)
        self._memories: dict[Namespace, LearningMemory] = {}
        self._lock = threading.Lock()
        self._closed = False

    def __call__(self, context: Any) -> LearningMemory:
        """The memory for a run context (see the class docstring for the order of precedence).

        Raises:
            InvalidNamespace: the context names no namespace and there is no default, or
                it names a malformed one.
        """
        own = _field(context, "memory")
        if isinstance(own, LearningMemory):
            return own
        named = self.namespace_of(context)
        if named is None:
            if self.default_namespace is None:
                raise InvalidNamespace(
                    "the run context names no namespace: invoke the graph with "
                    "context={'namespace': ('acme', 'user-1')} (or MemoryContext), "
                    "or give MemoryResolver a default_namespace"
                )
            return self.get(self.default_namespace)
        return self.get(named)

    def get(self, namespace: Iterable[str] | str) -> LearningMemory:
        """The open memory of ``namespace``, opened on first use.

        Raises:
            InvalidNamespace: ``namespace`` is malformed.
            StoreUnavailable: the resolver was closed.
        """
        ns = validate_namespace(namespace)
        memory = self._memories.get(ns)  # a dict read is atomic: no lock on the hot path
        if memory is not None:
            return memory
        with self._lock:
            if self._closed:
                raise StoreUnavailable("this MemoryResolver is closed; make a new one")
            memory = self._memories.get(ns)
            if memory is None:
                memory = LearningMemory.open(
                    self.path, url=self.url, namespace=ns, config=self.config, embeddings=self.embeddings,
                    llm=self.llm, audit_dir=self.audit_dir, clock=self.clock,
                )
                self._memories[ns] = memory
            return memory

    @property
    def namespaces(self) -> list[Namespace]:
        """The namespaces opened so far, in opening order."""
        return list(self._memories)

    def close(self) -> None:
        """Close every memory this resolver opened; later calls raise."""
        with self._lock:
            self._closed = True
            memories, self._memories = list(self._memories.values()), {}
        for memory in memories:
            memory.close()

    def __enter__(self) -> MemoryResolver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def resolve_memory(source: MemorySource, context: Any) -> LearningMemory:
    """The memory a node uses: ``source`` itself when fixed, else ``source(context)``.

    Raises:
        TypeError: ``source`` is neither a memory nor a callable, or the callable returned no memory.
    """
    if isinstance(source, LearningMemory):
        return source
    if not callable(source):
        raise TypeError(f"expected a LearningMemory or a resolver (context -> LearningMemory), got {source!r}")
    memory = source(context)
    if not isinstance(memory, LearningMemory):
        raise TypeError(f"the memory resolver returned {type(memory).__name__}, not a LearningMemory")
    return memory


__all__ = ["MemoryContext", "MemoryResolver", "MemorySource", "namespace_from_context", "resolve_memory"]
