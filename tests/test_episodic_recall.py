"""Episodic recall in time and sequence (seed 002 "Recall by Time").

The pure functions of ``learning.recall`` on plain episodes, then the same through
``LearningMemory`` on episodes stored in a real embedded Chroma, including episodes a
real gridtool run wrote and records stored before the link fields existed.
"""

from __future__ import annotations

import doctest
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from langmem_plus import LearningMemory, MemoryConfig
from langmem_plus.errors import InvalidRecord
from langmem_plus.learning import recall
from langmem_plus.learning.episodes import HOUR, episode_recallable
from langmem_plus.learning.recall import link_episodes, recall_at, recall_before, recall_sequence
from langmem_plus.records import Episode
from langmem_plus.store.mapping import namespace_key

NS = ("acme", "agent-7")
NOW = 1000 * HOUR
FADED_AGE = 4 * 72 * HOUR
"""Four half-lives unused: strength 1/16 < the recall threshold 0.1 for significance 0."""


def ep(eid: str, at: float, significance: float = 0.5, *, seen: float | None = None, **links: list[str]) -> Episode:
    return Episode(
        episode_id=eid, namespace=NS, kind="success", goal_signature=f"goal {eid}", summary=f"did {eid}",
        created_at=at, last_seen_at=at if seen is None else seen, significance=significance, **links,
    )


def fresh(eid: str, at: float, significance: float = 0.5, **links: list[str]) -> Episode:
    """An episode that happened at ``at`` and was seen just now (never faded)."""
    return ep(eid, at, significance, seen=NOW, **links)


def ids(episodes: list[Episode]) -> list[str]:
    return [e.episode_id for e in episodes]


# --------------------------------------------------------------------------- pure


def test_recall_at_window_most_significant_first_faded_skipped() -> None:
    eps = [
        fresh("early", NOW - 10 * HOUR, 0.9),
        fresh("a", NOW - 3 * HOUR, 0.2),
        fresh("b", NOW - 2 * HOUR, 0.8),
        ep("faded", NOW - 2 * HOUR, 0.0, seen=NOW - FADED_AGE),
        fresh("c", NOW - 1 * HOUR, 0.5),
        fresh("late", NOW + 5 * HOUR, 1.0),
    ]
    assert not episode_recallable(eps[3], NOW)
    assert ids(recall_at(eps, NOW - 2 * HOUR, window=HOUR, now=NOW)) == ["b", "c", "a"]
    assert ids(recall_at(eps, NOW - 2 * HOUR, window=0.0, now=NOW)) == ["b"]
    with pytest.raises(ValueError, match="window"):
        recall_at(eps, NOW, window=-1.0, now=NOW)


def test_recall_before_is_strict_and_limited() -> None:
    eps = [fresh("x", 10.0, 0.1), fresh("y", 20.0, 0.9), fresh("z", 30.0, 0.5), ep("old", 5.0, 0.0, seen=NOW - FADED_AGE)]
    assert ids(recall_before(eps, 30.0, limit=5, now=NOW)) == ["y", "x"]
    assert ids(recall_before(eps, 31.0, limit=2, now=NOW)) == ["y", "z"]
    assert recall_before(eps, 31.0, limit=0, now=NOW) == []


def test_significant_episodes_fade_slower() -> None:
    ordinary, significant = ep("o", 0.0, 0.0, seen=NOW - FADED_AGE), ep("s", 0.0, 1.0, seen=NOW - FADED_AGE)
    assert ids(recall_before([ordinary, significant], 1.0, limit=5, now=NOW)) == ["s"]
    lenient = MemoryConfig(lifecycle={"episode_recall_min_strength": 0.05})
    assert ids(recall_before([ordinary, significant], 1.0, limit=5, now=NOW, config=lenient)) == ["s", "o"]


def test_recall_sequence_forward_backward_through_faded_and_loops() -> None:
    a, b = link_episodes(fresh("a", 1.0), fresh("b", 2.0))
    b, c = link_episodes(b, ep("c", 3.0, 0.0, seen=NOW - FADED_AGE))  # c has faded
    c, d = link_episodes(c, fresh("d", 4.0))
    eps = [a, b, c, d]
    assert ids(recall_sequence(eps, "a", "forward", now=NOW)) == ["a", "b", "d"]  # walks through c, skips it
    assert ids(recall_sequence(eps, "d", "backward", now=NOW)) == ["d", "b", "a"]
    assert recall_sequence(eps, "missing", now=NOW) == []
    d, a = link_episodes(d, a)  # a loop
    assert ids(recall_sequence([a, b, c, d], "a", now=NOW)) == ["a", "b", "d"]
    with pytest.raises(ValueError, match="direction"):
        recall_sequence(eps, "a", "sideways", now=NOW)  # type: ignore[arg-type]


def test_link_episodes_is_idempotent_and_first_link_is_followed() -> None:
    a, b = link_episodes(fresh("a", 1.0), fresh("b", 2.0))
    a2, b2 = link_episodes(a, b)
    assert a2.leads_to == ["b"] and b2.caused_by == ["a"]
    a3, _ = link_episodes(a2, fresh("z", 3.0))
    assert a3.leads_to == ["b", "z"]
    assert ids(recall_sequence([a3, b2, fresh("z", 3.0)], "a", now=NOW)) == ["a", "b"]


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 100), st.floats(0.0, 1.0), st.integers(0, 400)), min_size=0, max_size=25
    ),
    st.integers(0, 100),
    st.integers(0, 30),
)
def test_recall_at_matches_a_brute_force_filter(raw: list[tuple[int, float, int]], t: int, w: int) -> None:
    eps = [ep(f"e{i}", at * HOUR, sig, seen=NOW - age * HOUR) for i, (at, sig, age) in enumerate(raw)]
    got = recall_at(eps, t * HOUR, w * HOUR, now=NOW)
    expected = {e.episode_id for e in eps if abs(e.created_at - t * HOUR) <= w * HOUR and episode_recallable(e, NOW)}
    assert {e.episode_id for e in got} == expected
    sigs = [e.significance for e in got]
    assert sigs == sorted(sigs, reverse=True)


def test_module_doctests_pass() -> None:
    result = doctest.testmod(recall)
    assert result.failed == 0 and result.attempted > 0


# --------------------------------------------------------------------------- through LearningMemory


@pytest.fixture
def memory(tmp_path: Path) -> LearningMemory:
    mem = LearningMemory.open(tmp_path / "store", namespace=NS, clock=lambda: NOW)
    yield mem
    mem.close()


def test_memory_recall_on_stored_episodes(memory: LearningMemory) -> None:
    memory.write("episodes", [
        fresh("a", NOW - 3 * HOUR, 0.2), fresh("b", NOW - 2 * HOUR, 0.8),
        ep("faded", NOW - 2 * HOUR, 0.0, seen=NOW - FADED_AGE), fresh("c", NOW + HOUR, 0.9),
    ])
    assert ids(memory.recall_at(NOW - 2 * HOUR, window=HOUR)) == ["b", "a"]
    assert ids(memory.recall_before(NOW, limit=5)) == ["b", "a"]
    then = NOW - FADED_AGE + HOUR  # an hour after "faded" was last seen, it had not faded yet
    assert ids(memory.recall_before(NOW, limit=5, now=then)) == ["b", "a", "faded"]
    memory.link_episodes("a", "b")
    memory.link_episodes("b", "c")
    memory.link_episodes("a", "b")  # a retried link is one link (its evidence is keyed by the pair)
    assert {e.episode_id: e.leads_to for e in memory.episodes()}["a"] == ["b"]
    assert ids(memory.recall_sequence("a")) == ["a", "b", "c"]
    assert ids(memory.recall_sequence("c", "backward")) == ["c", "b", "a"]
    with pytest.raises(InvalidRecord, match="no episode 'nope'"):
        memory.link_episodes("a", "nope")


def test_links_persist_and_namespaces_stay_apart(tmp_path: Path) -> None:
    path = tmp_path / "store"
    with LearningMemory.open(path, namespace=NS, clock=lambda: NOW) as mem:
        mem.write("episodes", [fresh("a", 1.0), fresh("b", 2.0)])
        mem.link_episodes("a", "b")
    with LearningMemory.open(path, namespace=NS, clock=lambda: NOW) as mem, \
            LearningMemory.open(path, namespace=("other",), clock=lambda: NOW) as other:
        assert ids(mem.recall_sequence("a")) == ["a", "b"]
        assert other.recall_sequence("a") == [] and other.recall_before(NOW, 5) == []
        with pytest.raises(InvalidRecord):
            other.link_episodes("a", "b")


def test_records_stored_before_links_existed_still_load(tmp_path: Path) -> None:
    old = fresh("legacy", NOW - HOUR).model_dump(mode="json")
    old.pop("caused_by"), old.pop("leads_to")
    with LearningMemory.open(tmp_path / "store", namespace=NS, clock=lambda: NOW) as writer:
        coll = writer.store.raw_collection("episodes")
        coll.upsert(ids=["legacy"], embeddings=np.zeros((1, writer.config.storage.embedding_dim), dtype=np.float32) + 0.1,
                    documents=["goal legacy"], metadatas=[{"ns": namespace_key(NS), "record": json.dumps(old)}])
    shutil.rmtree(tmp_path / "store" / "snapshot")  # an older version's store: no snapshot holds its episodes
    memory = LearningMemory.open(tmp_path / "store", namespace=NS, clock=lambda: NOW)
    [loaded] = memory.episodes()
    assert loaded.episode_id == "legacy" and loaded.caused_by == [] and loaded.leads_to == []
    assert ids(memory.recall_at(NOW - HOUR, window=0.0)) == ["legacy"]
    memory.close()


def test_recall_over_episodes_of_a_real_gridtool_run(tmp_path: Path) -> None:
    from langmem_plus.demo import run_demo

    path = tmp_path / "store"
    run_demo(runs=1, store=path, namespace=NS)
    with LearningMemory.open(path, namespace=NS) as mem:
        stored = mem.episodes()
        assert stored
        newest = max(e.created_at for e in stored)
        around = mem.recall_at(newest, window=newest - min(e.created_at for e in stored))
        assert {e.episode_id for e in around} == {e.episode_id for e in stored if episode_recallable(e, mem.clock())}
        assert mem.recall_before(min(e.created_at for e in stored), 5) == []
