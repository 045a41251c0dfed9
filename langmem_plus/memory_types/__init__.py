"""Memory types beside the learning memory (DESIGN §10): instant memory, the context a model sees now."""

from langmem_plus.memory_types.instant import InstantMemory

__all__ = ["InstantMemory"]
