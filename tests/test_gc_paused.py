"""``gc_paused``: the collector is off inside and back after, and what the block made is aged, not left young."""

from __future__ import annotations

import gc

import pytest

from langmem_plus._gc import gc_paused


def test_objects_made_inside_leave_the_young_generation() -> None:
    """The block's objects are in the oldest generation afterwards: the first young collection does not walk them."""
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        made = [[i] for i in range(1000)]  # lists: always tracked (a dict of atomic values is not)
    assert gc.isenabled()
    young = {id(o) for o in gc.get_objects(generation=0)}
    assert not any(id(o) in young for o in made)
    assert any(o is made[0] for o in gc.get_objects(generation=2))


def test_an_application_freeze_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """Objects the process froze itself stay frozen (``unfreeze`` would release them), and nothing is aged then: no
    freeze or unfreeze at the end (read off the calls, since another thread's allocations may run a young collection
    at any time once the collector is back)."""
    kept = [{"frozen": True}]
    gc.freeze()
    try:
        calls: list[str] = []
        monkeypatch.setattr(gc, "freeze", lambda: calls.append("freeze"))
        monkeypatch.setattr(gc, "unfreeze", lambda: calls.append("unfreeze"))
        with gc_paused():
            made = [[1]]
            assert any(o is made[0] for o in gc.get_objects(generation=0))  # not aged while paused
        # no unfreeze released them (the count itself may fall as frozen objects die elsewhere)
        assert calls == [] and gc.get_freeze_count() > 0 and gc.isenabled()
    finally:
        monkeypatch.undo()
        gc.unfreeze()
    assert kept


def test_a_disabled_collector_stays_disabled() -> None:
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
