"""Memory types beside lessons, episodes and skills (DESIGN §10, issue 14).

- ``SemanticMemory``: facts (subject, relation, object) with belief states, per namespace.
"""

from __future__ import annotations

from langmem_plus.memory_types.semantic import SemanticMemory

__all__ = ["SemanticMemory"]
