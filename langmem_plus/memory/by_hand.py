"""The calls that record a run by hand (``capture``, ``retrieve_pre_run``, ``end_run``, ...), kept for one release
beside ``LearningMemory.start_run``.

Called from code outside langmem_plus, each warns (``DeprecationWarning``) and names what replaces it; the package's
own layers (``memory.run.Run``, the retrievers, the benches) call them without a warning, since ``Run`` is built on
them.
"""

from __future__ import annotations

import functools
import sys
import warnings
from collections.abc import Awaitable, Callable
from types import FrameType
from typing import Any, TypeVar, cast

PACKAGE = __name__.partition(".")[0]
"""The package whose modules call these without a warning."""
INSTEAD = "memory.start_run(task) (run.hints / run.record / run.check / run.end)"
"""What a warning tells the caller to use."""

F = TypeVar("F", bound=Callable[..., Any])
A = TypeVar("A", bound=Callable[..., Awaitable[Any]])


def _inside(frame: FrameType | None) -> bool:
    """Whether ``frame`` runs code of this package."""
    name = str(frame.f_globals.get("__name__", "")) if frame is not None else ""
    return name == PACKAGE or name.startswith(PACKAGE + ".")


def warn_by_hand(name: str, *, depth: int = 2) -> None:
    """Warn the caller ``depth`` frames up, when it is outside the package, that ``LearningMemory.name`` by hand is
    kept for one release."""
    if _inside(sys._getframe(depth)):
        return
    warnings.warn(f"recording a run by hand with LearningMemory.{name} is kept for one release; use {INSTEAD}",
                  DeprecationWarning, stacklevel=depth + 1)


def by_hand(method: F) -> F:
    """Mark a sync call that records a run by hand (module docstring); ``__wrapped__`` is the call without the warning."""

    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        warn_by_hand(method.__name__, depth=2)
        return method(*args, **kwargs)

    return cast(F, wrapper)


def by_hand_async(method: A) -> A:
    """``by_hand`` for an async twin (its name starts with ``a``)."""

    @functools.wraps(method)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        warn_by_hand(method.__name__, depth=2)
        return await method(*args, **kwargs)

    return cast(A, wrapper)


def unwarned(bound: Callable[..., Any]) -> Callable[..., Any]:
    """A ``by_hand`` method, bound, without its warning: what an async twin runs on a worker thread (whose frames are
    not the caller's)."""
    func = getattr(bound, "__func__", bound)
    inner = getattr(func, "__wrapped__", func)
    owner = getattr(bound, "__self__", None)
    return cast(Callable[..., Any], functools.partial(inner, owner) if owner is not None else inner)


__all__ = ["INSTEAD", "by_hand", "by_hand_async", "unwarned", "warn_by_hand"]
