"""Adjacency.compact (one gather over the old CSR and the overlay) against the row-by-row reference."""

from __future__ import annotations

import copy

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from langmem_plus.store.adjacency import Adjacency

NODES = [f"n{i}" for i in range(12)]

# One write: (u, v, edges, weight); edges may be negative, which removes cells that reach 0.
writes = st.lists(
    st.tuples(st.sampled_from(NODES), st.sampled_from(NODES), st.integers(-2, 3), st.floats(-2, 5, allow_nan=False)),
    max_size=40,
)


def _arrays(adj: Adjacency) -> tuple[list[str], dict[str, np.ndarray]]:
    return list(adj._names), {
        "indptr": adj._indptr.copy(), "neighbours": adj._neighbours.copy(),
        "counts": adj._counts.copy(), "weights": adj._weights.copy(),
    }


def _assert_same_layout(fast: Adjacency, slow: Adjacency) -> None:
    """The same names and CSR arrays, values and dtypes."""
    names_f, arr_f = _arrays(fast)
    names_s, arr_s = _arrays(slow)
    assert names_f == names_s
    for key in arr_f:
        assert arr_f[key].dtype == arr_s[key].dtype, key
        np.testing.assert_array_equal(arr_f[key], arr_s[key], err_msg=key)


@settings(max_examples=150, deadline=None)
@given(rounds=st.lists(writes, min_size=1, max_size=4))
def test_compact_equals_reference_through_rounds(rounds: list[list[tuple[str, str, int, float]]]) -> None:
    """Several rounds of writes, each compacted both ways: the same CSR arrays and the same rows every time."""
    fast = Adjacency()
    for round_ in rounds:
        for u, v, edges, weight in round_:
            fast.adjust(u, v, edges, weight)
        slow = copy.deepcopy(fast)
        before = fast.as_dict()
        fast.compact()
        slow._compact_reference()
        _assert_same_layout(fast, slow)
        assert fast.as_dict() == before  # compaction changes the layout, never the adjacency
        assert not fast._overlay


def test_compact_keeps_untouched_rows_and_places_changed_ones() -> None:
    """A snapshot row left alone keeps its cells; a changed row between two untouched ones lands in its slot."""
    adj = Adjacency()
    for a, b in (("a", "b"), ("b", "c"), ("c", "d")):
        adj.adjust(a, b, 1, 1.0)
    adj.compact()
    adj.adjust("b", "d", 2, 0.5)  # b and d change; a and c do not
    adj.compact()
    assert adj.as_dict() == {
        "a": {"b": [1.0, 1.0]},
        "b": {"a": [1.0, 1.0], "c": [1.0, 1.0], "d": [2.0, 0.5]},
        "c": {"b": [1.0, 1.0], "d": [1.0, 1.0]},
        "d": {"c": [1.0, 1.0], "b": [2.0, 0.5]},
    }
    assert adj.fanout("b") == 3 and adj.weight("d", "b") == 0.5


# Writes that never remove a cell (edges >= 0 only where the cell exists): the edge log describes them.
growing = st.lists(
    st.tuples(st.sampled_from(NODES), st.sampled_from(NODES), st.integers(1, 3), st.floats(-2, 5, allow_nan=False)),
    max_size=60,
)


@settings(max_examples=150, deadline=None)
@given(rounds=st.lists(st.tuples(growing, growing), min_size=1, max_size=4))
def test_compact_from_the_edge_log_equals_reference(rounds: list[tuple[list[tuple[str, str, int, float]], ...]]) -> None:
    """Adds, then weight changes of existing cells (edges 0), compacted from the log: the reference's arrays exactly."""
    fast = Adjacency()
    for adds, changes in rounds:
        for u, v, edges, weight in adds:
            fast.adjust(u, v, edges, weight)
        for u, v, _, weight in changes:
            if fast.weight(u, v) is not None:  # an existing cell: no removal, the log stays valid
                fast.adjust(u, v, 0, weight)
        assert fast._log.ok
        slow = copy.deepcopy(fast)
        before = fast.as_dict()
        assert fast._compact_log()
        slow._compact_reference()
        _assert_same_layout(fast, slow)
        assert fast.as_dict() == before and not fast._overlay


def test_a_removed_cell_sends_compact_to_the_overlay() -> None:
    """Once a cell is removed the log no longer describes the rows; compaction still gives the reference's rows."""
    adj = Adjacency()
    adj.adjust("a", "b", 1, 1.0)
    adj.adjust("a", "c", 1, 2.0)
    adj.adjust("a", "b", -1, -1.0)
    adj.adjust("a", "b", 1, 0.25)  # back, now after c in the row
    assert not adj._log.ok
    adj.compact()
    assert adj.row("a") == {"c": [1.0, 2.0], "b": [1.0, 0.25]} and adj._log.ok


# Rounds of writes that each make new cells only (as an import does): pairs drawn without repeats across the rounds.
PAIRS = [(u, v) for i, u in enumerate(NODES) for v in NODES[i + 1 :]]
fresh_rounds = st.lists(st.lists(st.tuples(st.integers(0, len(PAIRS) - 1), st.booleans(), st.integers(1, 3),
                                           st.sampled_from([1.0, -0.0, 0.25, -2.5])), max_size=30), min_size=1, max_size=4)


@settings(max_examples=150, deadline=None)
@given(rounds=fresh_rounds)
def test_compact_of_new_cells_only_sorts_by_row_and_equals_reference(rounds: list[list[tuple[int, bool, int, float]]]) -> None:
    """Writes that only make new cells (no cell met twice since the compaction) take the one-sort path: the
    reference's arrays exactly, the weights' bytes included (a lone -0.0 is saved as the reference's 0.0)."""
    fast = Adjacency()
    used: set[int] = set()
    for writes_ in rounds:
        for k, flip, edges, weight in writes_:
            if k not in used:
                used.add(k)
                u, v = PAIRS[k]
                fast.adjust(*((v, u) if flip else (u, v)), edges, weight)
        assert fast._log.ok and not fast._log.repeats
        slow = copy.deepcopy(fast)
        assert fast._compact_log()
        slow._compact_reference()
        _assert_same_layout(fast, slow)
        assert fast._weights.tobytes() == slow._weights.tobytes()
