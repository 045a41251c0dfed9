"""The episode index against the scan it replaces (design.md §6 episodes).

``end_run`` plans a run's episodes and consolidates them reading ``EpisodeIndex`` (SimHash
bands, groups by template, live avoidances, fingerprint clusters) instead of every stored
episode. The scan (``plan_episode_writes`` over every episode, ``consolidate`` over the
whole pool; ``MemoryConfig.end_run_indexes=False``) is the reference: random stores and
runs through both, pure and through ``LearningMemory`` (also across close / reopen and
beside a second writer), must give the same plans, the same records, skills and lessons.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from langmem_plus import LearningMemory
from langmem_plus.config import MemoryConfig, nest
from langmem_plus.learning.consolidate import consolidate
from langmem_plus.learning.episode_index import EpisodeIndex, consolidation_input, plan_indexed_writes
from langmem_plus.learning.episodes import plan_episode_writes
from langmem_plus.learning.skills import skill_id
from langmem_plus.memory.runs import _Consolidating, _indexed, _scanned
from langmem_plus.records import Episode, Feedback, RunRecord, Skill, Step, TaskSpec, Verdict

NS = ("epidx",)
BASES = [0x0123_4567_89AB_CDEF, 0xFEDC_BA98_7654_3210, 0x0F0F_0F0F_F0F0_F0F0]


def _index(cfg: MemoryConfig, stored: list[Episode]) -> EpisodeIndex:
    index = EpisodeIndex(bits=cfg.lifecycle.simhash_bits, max_distance=cfg.lifecycle.episode_dedup_max_hamming,
                         bands=cfg.lifecycle.dedup_simhash_bands, min_cluster=cfg.lifecycle.consolidate_min_episodes)
    for e in stored:
        index.put(e)
    return index


@st.composite
def episodes(draw: st.DrawFn, prefix: str, n: int) -> list[Episode]:
    """Episodes over few hashes (0-6 bits apart: inside and outside the radius), templates, times and fingerprints."""
    out = []
    for k in range(n):
        kind = draw(st.sampled_from(["success", "nearmiss", "avoidance"]))
        h = draw(st.sampled_from(BASES))
        for bit in draw(st.lists(st.integers(0, 63), max_size=6)):
            h ^= 1 << bit
        t = float(draw(st.integers(0, 3)))  # few times: ties in (distance, created_at) are common
        out.append(Episode(
            episode_id=draw(st.sampled_from([f"{prefix}{k}", f"s{k}", f"s{k // 2}"])), namespace=NS, kind=kind,
            goal_signature="g", subgoal_template=draw(st.sampled_from(["t1", "t2"])), context=draw(st.sampled_from(["c", ""])),
            summary=f"{kind} {k}", simhash=format(h, "x"), success_weight=draw(st.sampled_from([0.2, 0.5, 0.9, 1.0])),
            ttl_episodes=draw(st.sampled_from([None, 0, 1, 2, 5])) if kind == "avoidance" else None,
            created_at=t, last_seen_at=t + draw(st.integers(0, 2)), count=draw(st.integers(0, 3)),
            run_ids=[f"r{prefix}{k}"], run_id=f"r{prefix}{k}", seen_run_seq=7,
            state_fingerprint=[f"fp:{draw(st.sampled_from(['x', 'y', 'z']))}"] if kind == "avoidance" else [],
            consolidated_into=draw(st.sampled_from([None, None, "done"])),
        ))
    return out


@given(
    stored=st.integers(0, 14).flatmap(lambda n: episodes("s", n)),
    new=st.integers(0, 5).flatmap(lambda n: episodes("n", n)),
    cap=st.integers(0, 2),
    covered=st.sets(st.sampled_from(["x", "y", "z"])),
    with_skill=st.booleans(),
    wide=st.integers(0, 2),
)
@settings(max_examples=400, deadline=None)
def test_indexed_plan_and_consolidation_equal_the_scan(
    stored: list[Episode], new: list[Episode], cap: int, covered: set[str], with_skill: bool, wide: int
) -> None:
    stored = list({e.episode_id: e for e in stored}.values())  # a table holds one record per id
    # radius 3 (4 bands of 16 bits), 5 (6 bands), and 20 on 16-bit hashes (no exact banding: the kind is listed)
    cfg = [MemoryConfig(lifecycle={"nearmiss_cap": cap}), MemoryConfig(lifecycle={"nearmiss_cap": cap, "episode_dedup_max_hamming": 5}),
           MemoryConfig(lifecycle={"nearmiss_cap": cap, "episode_dedup_max_hamming": 20, "simhash_bits": 16})][wide]
    index = _index(cfg, stored)
    assert (index.plan is None) == (wide == 2)
    by_id = {e.episode_id: e for e in stored}
    scan = plan_episode_writes(new, stored, cfg, now=9.0)
    fast = plan_indexed_writes(new, index, by_id.__getitem__, cfg, now=9.0)
    for name in ("upserts", "sightings", "folded", "created", "merged", "capped", "expired"):
        assert getattr(fast, name) == getattr(scan, name), name
    assert list(fast.folded) == list(scan.folded) and list(fast.upserts) == list(scan.upserts)  # same order too
    assert set(fast.spent) == {e.episode_id for e in stored if e.kind == "avoidance" and e.episode_id not in scan.folded
                               and e.episode_id not in scan.sightings}

    pool = {e.episode_id: e for e in stored}
    pool.update(scan.folded)
    pool.update(scan.upserts)
    common: dict[str, Any] = dict(lessons={}, template="t1", context="c", passed=True, failure_mode=None, tool="c",
                                  config=cfg, now=9.0, covered=covered)
    sid = skill_id(NS, "t1", "c")
    skills = {sid: Skill(id=sid, namespace=NS, name="s", failure_modes=["old"])} if with_skill else {}
    reference = consolidate(episodes=list(pool.values()), skills=skills, **common)
    changed = [i for i in dict.fromkeys([*fast.folded, *fast.upserts]) if i in fast.upserts or i in fast.sightings]
    ids = consolidation_input(index, pool.__getitem__, changed, template="t1", context="c",
                              sighted=lambda i: 0, covered=covered.__contains__)
    assert ids == [i for i in pool if i in set(ids)]  # pool order
    first = index.first()
    if first is None:
        first = next((i for i in changed if i not in index), None)
    subset = consolidate(episodes=[pool[i] for i in ids], skills=skills,
                         namespace=None if first is None else pool[first].namespace, **common)
    assert subset == reference


def test_a_runs_own_episodes_are_met_in_the_order_created_and_by_id_first() -> None:
    """Within one run: a tie in (distance, created_at) between two new episodes goes to the one created first, and a
    second episode under a new one's id merges into it whatever its hash (the scan's pool order and same-id rule)."""
    cfg = MemoryConfig()

    def new(i: str, h: int) -> Episode:
        return Episode(episode_id=i, namespace=NS, kind="success", goal_signature="g", simhash=format(h, "x"),
                       created_at=1.0, last_seen_at=1.0, run_id="r", run_ids=["r"], seen_run_seq=1)

    for stored in ([], [new("old", 0xFFFF_0000_0000_0000)]):
        run = [new("b", 0b0011), new("a", 0b1100), new("c", 0), new("b", 0xFFFF_FFFF)]
        scan = plan_episode_writes(run, stored, cfg, now=2.0)
        fast = plan_indexed_writes(run, _index(cfg, stored), {e.episode_id: e for e in stored}.__getitem__, cfg, now=2.0)
        assert scan.merged == fast.merged == [("b", "c"), ("b", "b")]
        assert scan.folded == fast.folded and scan.upserts == fast.upserts


def test_bands_find_exactly_the_hashes_within_the_radius_and_a_spent_avoidance_comes_back_with_a_sighting() -> None:
    rng = random.Random(5)
    for cfg in (MemoryConfig(), MemoryConfig(lifecycle={"episode_dedup_max_hamming": 6, "simhash_bits": 32})):
        radius, bits = cfg.lifecycle.episode_dedup_max_hamming, cfg.lifecycle.simhash_bits
        hashes = [rng.getrandbits(bits) for _ in range(200)]
        hashes += [h ^ (1 << rng.randrange(bits)) ^ (1 << rng.randrange(bits)) for h in hashes[:100]]
        stored = [Episode(episode_id=f"e{k}", namespace=NS, kind="success", goal_signature="g", simhash=format(h, "x"))
                  for k, h in enumerate(hashes)]
        index = _index(cfg, stored)
        for h in hashes[:60]:
            for flips in range(radius + 3):
                probe = h
                for b in rng.sample(range(bits), flips):
                    probe ^= 1 << b
                brute = [f"e{k}" for k, other in enumerate(hashes) if (probe ^ other).bit_count() <= radius]
                assert index.near("success", probe) == brute
                assert index.near("nearmiss", probe) == []
    index = _index(MemoryConfig(), [])
    av = Episode(episode_id="a", namespace=NS, kind="avoidance", goal_signature="g", ttl_episodes=0,
                 state_fingerprint=["fp:q"])
    index.put(av)
    assert index.live_avoidances() == ["a"]
    index.spent(["a"])
    assert index.live_avoidances() == []
    index.touch(["a"])
    assert index.live_avoidances() == ["a"]


# --------------------------------------------------------------------------- through LearningMemory

TOOL = "gridtool"


def _clock() -> float:
    return 1_000_000.0


def _open(path: Path, indexes: bool, **extra: Any) -> LearningMemory:
    cfg = MemoryConfig(**nest({"end_run_indexes": indexes, "warm_lessons": False, "avoidance_ttl_episodes": 3,
                               "min_occurrences": 6, "nearmiss_cap": 1, **extra}))
    return LearningMemory.open(path, namespace=NS, config=cfg, clock=_clock)


def _random_run(rng: random.Random, n: int) -> tuple[TaskSpec, list[Step], Verdict]:
    """A run of one of a few goals: passed (a success), failed with progress (a near-miss), repeated errors (avoidances)."""
    goal = rng.choice(["people over 30", "people over 40", "orders by city", "cities by size", f"odd goal {n}"])
    task = TaskSpec(task_id=f"t{rng.randrange(4)}", goal=goal, tool=TOOL, family=rng.choice(["filter", "sort"]))
    steps: list[Step] = []
    for _ in range(rng.randrange(3)):  # the same failure repeated: an avoidance (another fingerprint, another one)
        bad = rng.choice(["filter", "pick", "sortby"])
        for _ in range(2):
            steps.append(Step(index=len(steps), action=f"{bad} age", tool=TOOL,
                              feedback=Feedback(hard_failure=True, error_text=f"unknown command '{bad}'")))
    passed = rng.random() < 0.5
    for k in range(rng.randrange(1, 3)):
        action = rng.choice(["keep age > 30", "keep age > 40", "sort size", "group city"]) + (" | select name" if k else "")
        steps.append(Step(index=len(steps), action=action, tool=TOOL,
                          feedback=Feedback(progress=rng.choice([None, 0.6, 0.8, 0.9]), reward=1.0 if passed else 0.0)))
    return task, steps, Verdict(passed=passed, score=1.0 if passed else 0.0)


def _run(mem: LearningMemory, run_id: str, run: tuple[TaskSpec, list[Step], Verdict], now: float) -> dict[str, Any]:
    task, steps, verdict = run
    events = mem.capture_steps(steps, run_id=run_id, task=task)
    return mem.end_run(run_id=run_id, task=task, steps=steps, events=events, verdict=verdict, now=now).model_dump()


def _state(mem: LearningMemory) -> dict[str, Any]:
    """What the memory holds: stored episode records (in table order), their folds, skills, lessons."""
    return {
        "records": [(i, e.model_dump()) for i, e in mem.view.episodes.items()],
        "episodes": sorted((e.episode_id, e.model_dump()) for e in mem.episodes()),
        "skills": sorted((s.id, s.model_dump()) for s in mem.view.skills.values()),
        "lessons": sorted((l.id, l.rule_text, l.status, l.triggers) for l in mem.lessons.values()),
    }


def _check_index(mem: LearningMemory) -> None:
    """The live index answers as one rebuilt from the view now, and a probe run plans the same both ways."""
    view = mem.view
    index = view.indexed_episodes()
    rebuilt = _index(mem.config, [e for _, e in view.episodes.items()])
    assert list(index._entries) == list(rebuilt._entries)  # table order
    assert {i: e[1:] for i, e in index._entries.items()} == {i: e[1:] for i, e in rebuilt._entries.items()}
    assert index._groups == rebuilt._groups and index._members == rebuilt._members
    bucket: Callable[[str | list[str]], set[str]] = lambda held: {held} if isinstance(held, str) else set(held)
    assert [{k: bucket(v) for k, v in band.items()} for band in index._bands] == [
        {k: bucket(v) for k, v in band.items()} for band in rebuilt._bands]
    for i, entry in index._entries.items():  # the count the clusters sum is the fold's, read without a parse
        assert entry.record_count + view.episode_sighted(i) == view.episode(view.episodes[i]).count
    assert index.ripe(view.episode_sighted) == rebuilt.ripe(view.episode_sighted)
    for i, entry in index._entries.items():  # the TTL pass's test, read without a parse, is the fold's
        if entry.kind == "avoidance":
            for run in view.runs[-3:]:
                aged = view.episode(view.episodes[i], excluding_run=run).ttl_episodes
                assert view.avoidance_spent(i, excluding_run=run) == (aged is None or aged <= 0)
    assert set(rebuilt.live_avoidances()) >= set(index.live_avoidances())
    last = view.runs[-1] if view.runs else RunRecord(run_id="none", namespace=NS, task_id="t", seq=0)
    probe = [e for _, e in list(view.episodes.items())[-3:]]
    lookup = mem._lookup()
    assert lookup is not None
    common = _Consolidating(lessons=view.lessons, template="filter", context=TOOL, passed=True, failure_mode=None,
                            tool=TOOL, config=mem.config, now=2e6, covered=lookup.covered())
    a = _scanned(view, mem.config, probe, run=last, now=2e6, common=common)
    b = _indexed(view, mem.config, probe, run=last, now=2e6, common=common)
    assert a[0].upserts == b[0].upserts and a[0].sightings == b[0].sightings and a[0].folded == b[0].folded
    assert a[0].expired == b[0].expired and a[1] == b[1]


@pytest.mark.parametrize(("seed", "reopen"), [(0, "snapshot"), (1, "chroma"), (2, "snapshot")])
def test_end_run_with_the_episode_index_equals_the_scan_through_a_reopen(tmp_path: Path, seed: int, reopen: str) -> None:
    """Random runs into two memories, indexed and scanning: the same reports, records, folds, skills and lessons,
    also after both are closed and reopened (from the snapshot, or from Chroma alone): the index is rebuilt from
    the reloaded table at the first run, and nothing is parsed for it at open."""
    rng = random.Random(seed)
    runs = [_random_run(rng, n) for n in range(36)]
    fast, slow = _open(tmp_path / "fast", True), _open(tmp_path / "slow", False)
    kinds: set[str] = set()
    for n, run in enumerate(runs):
        if n == len(runs) // 2:
            _check_index(fast)
            fast.close()
            slow.close()
            extra = {"snapshot": False} if reopen == "chroma" else {}
            fast, slow = _open(tmp_path / "fast", True, **extra), _open(tmp_path / "slow", False, **extra)
            assert fast.view.episode_index is None
            if reopen == "snapshot":
                assert fast.view.episodes.parsed_count() == 0  # the base holds them unparsed until a run needs them
        assert _run(fast, f"r{n}", run, 100.0 + n) == _run(slow, f"r{n}", run, 100.0 + n)
        assert _state(fast) == _state(slow)
        kinds.update(e.kind for e in fast.episodes())
    _check_index(fast)
    state = _state(fast)
    assert kinds == {"success", "nearmiss", "avoidance"}
    assert state["skills"] and any(t == 0 for _, d in state["episodes"] for t in [d["ttl_episodes"]] if t is not None)
    assert any(d["count"] > 1 for _, d in state["episodes"])  # merges happened
    assert any((d["consolidated_into"] or "").startswith("les") for _, d in state["episodes"])  # avoid lessons too
    fast.close()
    slow.close()


@pytest.mark.server
def test_the_index_follows_a_second_writers_episodes_and_sightings(chroma_server: str, tmp_path: Path) -> None:
    """Another writer's announced episodes and sightings reach the index (``apply``, ``fold_evidence``): the
    first writer's next plans still equal the scan over its view."""
    ns = ("epidx-shared", tmp_path.name)
    cfg = MemoryConfig(storage={"warm_lessons": False}, lifecycle={"avoidance_ttl_episodes": 3, "min_occurrences": 6})
    first = LearningMemory.open(url=chroma_server, namespace=ns, audit_dir=tmp_path / "a", config=cfg)
    second = LearningMemory.open(url=chroma_server, namespace=ns, audit_dir=tmp_path / "b", config=cfg)
    rng = random.Random(7)
    try:
        for n in range(16):
            writer = first if n % 3 == 0 else second
            task, steps, verdict = _random_run(rng, n)
            events = writer.capture_steps(steps, run_id=f"r{n}", task=task)
            writer.end_run(run_id=f"r{n}", task=task, steps=steps, events=events, verdict=verdict, now=100.0 + n)
            first.refresh()
            assert first.view.episode_index is not None  # built at its first run, then kept in step
            _check_index(first)
        assert len(first.view.episodes) == len(second.view.episodes) > 3
    finally:
        first.close()
        second.close()


def test_the_index_build_keeps_no_parsed_episode_and_drops_what_the_table_drops(tmp_path: Path) -> None:
    """Built from the records' JSON without keeping them parsed; a record the table cannot use (unreadable, another
    namespace) is left to the table, which drops it as the scan's read would."""
    from langmem_plus.store.snapshot import RecordTable

    mem = _open(tmp_path, True)
    good = Episode(episode_id="good", namespace=NS, kind="success", goal_signature="g", simhash="ff")
    other = good.model_copy(update={"episode_id": "other", "namespace": ("elsewhere",)})
    mem.view.episodes = RecordTable(Episode, NS, {"bad": "{not json", "other": other.model_dump_json(),
                                                  "good": good.model_dump_json()})
    index = mem.view.indexed_episodes()
    assert list(index._entries) == ["good"] and mem.view.episodes.parsed_count() == 0
    assert list(mem.view.episodes) == ["good"]
    mem.close()


def test_the_warm_thread_builds_the_index_and_one_built_before_a_change_is_refused(tmp_path: Path) -> None:
    """After an open from the snapshot the warm thread builds the index off the lock (the first run does not pay
    for it); an index built from a view that moved meanwhile is not installed, and a stopped build gives none."""
    rng = random.Random(3)
    runs = [_random_run(rng, n) for n in range(20)]
    mem = _open(tmp_path / "m", True)
    for n, run in enumerate(runs[:14]):
        _run(mem, f"r{n}", run, 100.0 + n)
    mem.close()
    warm = _open(tmp_path / "m", True, warm_lessons=True)
    assert warm.wait_warm(timeout=60) and warm.view.episode_index is not None
    _check_index(warm)  # as one rebuilt now
    for n, run in enumerate(runs[14:], start=14):
        _run(warm, f"r{n}", run, 100.0 + n)
        _check_index(warm)
    view = warm.view
    view.episode_index = None
    version = view.episodes_version
    built = view.build_episode_index(threading.Event())
    assert built is not None
    view.set_runs(list(view.runs))  # the runs were read again: the avoidances' ages may differ
    assert not view.offer_episode_index(built, version) and view.episode_index is None
    assert view.offer_episode_index(built, view.episodes_version) and view.episode_index is built
    stopped = threading.Event()
    stopped.set()
    assert view.build_episode_index(stopped) is None
    warm.close()
