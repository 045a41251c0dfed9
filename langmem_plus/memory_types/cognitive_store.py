"""A CognitiveMemory persisted in a LearningMemory's Chroma store (seed 004 §6.3, design.md §4, §10).

Each agent's memory lives under its own namespace, the memory's namespace plus
``("cognitive", agent_id)``, so it gets its own ``cognitive`` collection (design.md §4:
namespaces are separate collections) and no read can see another agent's items. The
whole state is one ``CognitiveRecord`` document (at most working + episodic capacity
items, 60 by default), rewritten before each change takes effect; its embedding is
passed explicitly by ``ChromaStore``, as every write's is. Updates, consolidations and
retrievals go to the memory's audit log.

``open_cognitive`` hands out one ``CognitiveMemory`` per (memory, agent id), so two
callers in one process share its lock and never overwrite each other's changes. Two
processes writing one agent's memory at once are not supported: the last write wins.

Example:
    >>> import tempfile
    >>> from langmem_plus import LearningMemory
    >>> path = tempfile.mkdtemp()
    >>> with LearningMemory.open(path, namespace=("acme",)) as mem:
    ...     _ = mem.cognitive("H001").add_experience("Year 3: major flood", 0.9, year=3)
    >>> with LearningMemory.open(path, namespace=("acme",)) as mem:
    ...     mem.cognitive("H001").retrieve(current_year=3)
    ['Year 3: major flood']
"""

from __future__ import annotations

import threading
import weakref
from typing import TYPE_CHECKING, Any

from langmem_plus.errors import StoreUnavailable
from langmem_plus.memory_types.cognitive import CognitiveMemory
from langmem_plus.records import CognitiveRecord, Namespace, validate_namespace
from langmem_plus.store.chroma import ChromaStore

if TYPE_CHECKING:
    from langmem_plus.memory import LearningMemory

KIND = "cognitive"
"""The record kind (and collection) holding cognitive memories."""
NAMESPACE_PART = "cognitive"
"""Namespace part between a memory's namespace and the agent id."""
RECORD_ID = "state"
"""Id of the one document in an agent's collection."""

_OPEN: weakref.WeakKeyDictionary[LearningMemory, dict[str, CognitiveMemory]] = weakref.WeakKeyDictionary()
_OPEN_LOCK = threading.Lock()


def cognitive_namespace(namespace: Namespace, agent_id: str) -> Namespace:
    """The namespace an agent's cognitive memory lives in: ``(*namespace, "cognitive", agent_id)``.

    Raises:
        InvalidNamespace: the agent id is empty, not a str, too long or has control characters.
    """
    return validate_namespace((*namespace, NAMESPACE_PART, agent_id))


class ChromaPersistence:
    """Loads and saves one agent's cognitive memory as one record in its own namespace."""

    def __init__(self, parent: ChromaStore, namespace: Namespace, agent_id: str, clock: Any) -> None:
        self._parent = parent
        self.agent_id = agent_id
        self.clock = clock
        self.store = ChromaStore(
            parent.client, namespace=namespace, embeddings=parent.embeddings, config=parent.config, location=parent.location
        )
        """A view on the parent's client in the agent's namespace (never closed: the parent owns the client)."""

    def _check_open(self) -> None:
        if self._parent.closed:
            raise StoreUnavailable(f"the memory at {self._parent.location} is closed; open it again")

    def load(self) -> dict[str, Any] | None:
        """The stored state (``CognitiveMemory.to_dict`` form), or None if nothing was stored yet."""
        self._check_open()
        found = self.store.get(KIND, [RECORD_ID])
        if not found or not isinstance(found[0], CognitiveRecord) or found[0].agent_id != self.agent_id:
            return None
        return found[0].model_dump(mode="json", include={"agent_id", "working", "episodic", "next_seq"})

    def save(self, state: dict[str, Any]) -> None:
        """Store the whole state, replacing the previous one."""
        self._check_open()
        record = CognitiveRecord.model_validate(
            {**state, "id": RECORD_ID, "namespace": self.store.namespace, "updated_at": self.clock()}
        )
        self.store.upsert(KIND, [record])


def open_cognitive(memory: LearningMemory, agent_id: str) -> CognitiveMemory:
    """The cognitive memory of ``agent_id`` in ``memory``'s store, restored if it was stored before."""
    ns = cognitive_namespace(memory.namespace, agent_id)
    with _OPEN_LOCK:
        per_memory = _OPEN.setdefault(memory, {})
        known = per_memory.get(agent_id)
        if known is not None:
            return known
        persistence = ChromaPersistence(memory.store, ns, agent_id, memory.clock)
        options: dict[str, Any] = dict(config=memory.config, clock=memory.clock, audit=memory.audit, persist=persistence.save)
        state = persistence.load()
        cog = CognitiveMemory.from_dict(state, **options) if state is not None else CognitiveMemory(agent_id, **options)
        per_memory[agent_id] = cog
        return cog


__all__ = ["KIND", "NAMESPACE_PART", "RECORD_ID", "ChromaPersistence", "cognitive_namespace", "open_cognitive"]
