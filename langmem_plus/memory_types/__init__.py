"""Memory types beside the learning memory facade (DESIGN §1, §10).

Today: ``CognitiveMemory``, the importance-routed working / episodic memory of seed 004.
``LearningMemory.cognitive(agent_id)`` opens one persisted in the memory's store.

Example:
    >>> from langmem_plus.memory_types import CognitiveMemory
    >>> CognitiveMemory("H001").retrieve()
    []
"""

from __future__ import annotations

from langmem_plus.memory_types.cognitive import CognitiveMemory, Recalled, decayed_score

__all__ = ["CognitiveMemory", "Recalled", "decayed_score"]
