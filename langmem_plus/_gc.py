"""``gc_paused``: the cyclic garbage collector paused around a bulk load or save, restored after."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic garbage collector paused for a bulk load, restored after.

    An open at 100k lessons makes ~500k long-lived objects: with the collector on they
    trigger full collections, whose cost is the whole process's heap (0.3 s in a lean
    process, 1.3-1.7 s in the retrieval bench's, which holds the 100k synthetic lessons
    too) and which landed inside the open in three of eight bench runs (2.4-2.6 s
    instead of 0.7-1.0 s). The load makes almost no cyclic garbage to wait for.
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


__all__ = ["gc_paused"]
