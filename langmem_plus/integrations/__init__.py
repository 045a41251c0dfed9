"""Integrations with LangGraph and LangChain surfaces (DESIGN §8).

Example:
    >>> from langmem_plus.integrations import LangGraphChromaStore
    >>> LangGraphChromaStore.supports_ttl
    False
"""

from langmem_plus.integrations.store import LangGraphChromaStore

__all__ = ["LangGraphChromaStore"]
