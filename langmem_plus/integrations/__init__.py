"""Integrations with LangChain and LangGraph surfaces (design.md §8): agent middleware and a LangGraph store.

Example:
    >>> from langmem_plus.integrations import LangGraphChromaStore
    >>> LangGraphChromaStore.supports_ttl
    False
"""

from langmem_plus.integrations.middleware import LearningMiddleware
from langmem_plus.integrations.store import LangGraphChromaStore

__all__ = ["LangGraphChromaStore", "LearningMiddleware"]
