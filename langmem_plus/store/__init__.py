"""Storage: Chroma collections (the source of truth), the lesson graph, the audit log (DESIGN §4).

Names load on first use, so ``from langmem_plus.store.graph import LessonGraph``
does not pay for importing chromadb.

Example:
    >>> from langmem_plus.store import AuditLog, ChromaStore, LessonGraph, audit_path
    >>> len(LessonGraph())
    0
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from langmem_plus.store.audit import AuditLog, audit_path
    from langmem_plus.store.chroma import KINDS, ChromaStore
    from langmem_plus.store.graph import LessonGraph

_EXPORTS = {
    "AuditLog": "langmem_plus.store.audit",
    "audit_path": "langmem_plus.store.audit",
    "ChromaStore": "langmem_plus.store.chroma",
    "KINDS": "langmem_plus.store.chroma",
    "LessonGraph": "langmem_plus.store.graph",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


__all__ = ["KINDS", "AuditLog", "ChromaStore", "LessonGraph", "audit_path"]
