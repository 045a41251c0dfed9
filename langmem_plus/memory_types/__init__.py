"""Memory types beside lessons, episodes and skills (design.md §1, §10).

- ``CognitiveMemory``: the importance-routed working / episodic memory of seed 004;
  ``LearningMemory.cognitive(agent_id)`` opens one persisted in the memory's store.
- ``SemanticMemory``: facts (subject, relation, object) with belief states, per namespace;
  ``LearningMemory.semantic()``.
- ``InstantMemory``: what a model attends to now, bounded by tokens (seed 002); every
  context langmem_plus hands a model is assembled through it (``retrieval.context``).

Names load on first use, so importing one type does not import the others' dependencies
(the semantic memory needs Chroma; the cognitive memory alone does not).

Example:
    >>> from langmem_plus.memory_types import CognitiveMemory
    >>> CognitiveMemory("H001").retrieve()
    []
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from langmem_plus._lazy import lazy_getattr

_LAZY: dict[str, str] = {
    "CognitiveMemory": "langmem_plus.memory_types.cognitive",
    "Recalled": "langmem_plus.memory_types.cognitive",
    "decayed_score": "langmem_plus.memory_types.cognitive",
    "SemanticMemory": "langmem_plus.memory_types.semantic",
    "InstantMemory": "langmem_plus.memory_types.instant",
}

if TYPE_CHECKING:
    from langmem_plus.memory_types.cognitive import CognitiveMemory, Recalled, decayed_score
    from langmem_plus.memory_types.instant import InstantMemory
    from langmem_plus.memory_types.semantic import SemanticMemory


__getattr__ = lazy_getattr(__name__, _LAZY)


__all__ = ["CognitiveMemory", "InstantMemory", "Recalled", "SemanticMemory", "decayed_score"]
