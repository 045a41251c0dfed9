"""One PEP 562 ``__getattr__`` for the packages that load their names on first use.

``import langmem_plus`` (and ``langmem_plus.store``, ``langmem_plus.memory_types``) must stay
light: a name is imported from its module only when it is first read, then cached on the
package, so the next read is a plain attribute.

Example:
    >>> get = lazy_getattr("langmem_plus", {"MemoryConfig": "langmem_plus.config"})
    >>> get("MemoryConfig").__name__
    'MemoryConfig'
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_getattr(package: str, table: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: ``name`` comes from module ``table[name]``, cached on the package.

    Raises (from the returned function):
        AttributeError: ``name`` is not in ``table``.
    """

    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__


__all__ = ["lazy_getattr"]
