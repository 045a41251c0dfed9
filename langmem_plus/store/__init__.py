"""Storage: Chroma collections (the source of truth), the lesson graph, the audit log (design.md §4).

Names load on first use, so ``from langmem_plus.store.graph import LessonGraph``
does not pay for importing chromadb.

Example:
    >>> from langmem_plus.store import AuditLog, ChromaStore, LessonGraph, audit_path
    >>> len(LessonGraph())
    0
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from langmem_plus._lazy import lazy_getattr

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


__getattr__ = lazy_getattr(__name__, _EXPORTS)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


__all__ = ["KINDS", "AuditLog", "ChromaStore", "LessonGraph", "audit_path"]
