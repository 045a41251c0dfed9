"""Integrations with LangChain and LangGraph surfaces (DESIGN §8)."""

from langmem_plus.integrations.middleware import LearningMiddleware

__all__ = ["LearningMiddleware"]
