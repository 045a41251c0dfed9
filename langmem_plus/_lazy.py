"""One PEP 562 ``__getattr__`` for the packages that load their names on first use.

``import langmem_plus`` (and ``langmem_plus.store``, ``langmem_plus.memory_types``) must stay
light: a name is imported from its module only when it is first read, then cached on the
package, so the next read is a plain attribute. A name that has left the package's public
surface (``moved``) still resolves from its module, with a ``DeprecationWarning`` naming it,
at every read (it is never cached, so each importer hears of it).

Example:
    >>> get = lazy_getattr("langmem_plus", {"MemoryConfig": "langmem_plus.config"})
    >>> get("MemoryConfig").__name__
    'MemoryConfig'
"""

from __future__ import annotations

import importlib
import sys
import warnings
from collections.abc import Callable, Mapping
from typing import Any


def moved_message(package: str, name: str, module: str) -> str:
    """What a read of ``package.name`` that moved to ``module`` warns."""
    return (f"importing {name!r} from {package!r} is deprecated and stops working in the next release; "
            f"import it from its module: `from {module} import {name}`")


def lazy_getattr(
    package: str, table: Mapping[str, str], moved: Mapping[str, str] | None = None
) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: ``name`` comes from module ``table[name]``, cached on the package;
    a name in ``moved`` comes from module ``moved[name]`` with a ``DeprecationWarning`` (``moved_message``).

    Raises (from the returned function):
        AttributeError: ``name`` is in neither table.
    """
    old = dict(moved or {})

    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            if name in old:
                warnings.warn(moved_message(package, name, old[name]), DeprecationWarning, stacklevel=2)
                return getattr(importlib.import_module(old[name]), name)
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__


__all__ = ["lazy_getattr", "moved_message"]
