"""``gc_paused``: the cyclic garbage collector paused around a bulk load or save, restored after."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic garbage collector paused for a bulk load, restored after; what the load made is aged at once.

    An open at 100k lessons makes ~500k long-lived objects: with the collector on they
    trigger full collections, whose cost is the whole process's heap (0.3 s in a lean
    process, 1.3-1.7 s in the retrieval bench's, which holds the 100k synthetic lessons
    too) and which landed inside the open in three of eight bench runs (2.4-2.6 s
    instead of 0.7-1.0 s). The load makes almost no cyclic garbage to wait for.

    Paused, those objects all stay in the youngest generation, and the first allocation
    after the collector is back ran a young collection over every one of them (0.2 s of
    an open's 0.35 s in ``bench endrun``, in ``contextlib.__exit__``). So they are moved
    to the oldest generation before it is back (``gc.freeze`` then ``gc.unfreeze``: two
    list splices, no pass over them), where the next full collection meets them as it
    would have after two young ones. Skipped when the process froze objects itself
    (``gc.get_freeze_count``): ``unfreeze`` would release those too.
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            if gc.get_freeze_count() == 0:
                gc.freeze()
                gc.unfreeze()
            gc.enable()


__all__ = ["gc_paused"]
