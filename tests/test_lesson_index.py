"""The indexes ``end_run`` reads, each against a brute-force reference.

``plan_bands``' pigeonhole guarantee, ``LessonIndex`` under random write sequences
(counts, due runs, SimHash bands, a save and load), ``sweep_due`` against
``decide_status`` at every run, ``simhash_many`` against ``simhash``, and
``integrate_candidates`` with the indexes against the full scan: the same upserts, in
the same order, the same merges and conflicts.
"""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from langmem_plus.config import MemoryConfig
from langmem_plus.learning.dedup import hamming, lesson_hashes, simhash, simhash_many
from langmem_plus.learning.incremental import StoreLookup, index_entries, sweep_due
from langmem_plus.learning.lifecycle import Judgement, integrate_candidates, sweep_unused
from langmem_plus.records import LESSON_STATUSES, Lesson, LessonStats
from langmem_plus.store.graph import LessonGraph
from langmem_plus.store.lesson_index import DUE_NOW, LessonIndex, plan_bands

NS = ("t",)
WORDS = ["pick", "select", "sort", "order", "filter", "keep", "where", "desc"]
FPS = ["fp1", "fp2", "fp3", "fp4"]
FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# --------------------------------------------------------------------------- bands


@given(bits=st.integers(16, 64), k=st.integers(0, 70), bands=st.integers(1, 8), data=st.data())
@settings(max_examples=200, deadline=None)
def test_bands_leave_every_hash_within_k_bits_one_whole_band(bits: int, k: int, bands: int, data: st.DataObject) -> None:
    plan = plan_bands(bits, k, bands)
    if plan is None:
        assert max(bands, k + 1) > bits  # only then is a scan the exact answer
        return
    assert len(plan) > k and len(plan) >= bands
    covered = [b for shift, width in plan for b in range(shift, shift + width)]
    assert sorted(covered) == list(range(bits))  # disjoint, every bit once
    h = data.draw(st.integers(0, (1 << bits) - 1))
    flips = data.draw(st.sets(st.integers(0, bits - 1), max_size=k))
    other = h
    for b in flips:
        other ^= 1 << b
    mask = lambda shift, width: ((1 << width) - 1) << shift  # noqa: E731
    assert any((h ^ other) & mask(shift, width) == 0 for shift, width in plan)


OPS = st.lists(
    st.tuples(
        st.sampled_from(["put", "put", "put", "remove"]),
        st.integers(0, 25),  # lesson id
        st.sampled_from(LESSON_STATUSES),
        st.integers(0, 15).map(lambda x: (0xF00D << 20) ^ (1 << x) ^ (x << 40)),  # hashes near one another
        st.one_of(st.none(), st.just(DUE_NOW), st.integers(0, 40)),
    ),
    max_size=120,
)


@given(ops=OPS, k=st.integers(0, 20), queries=st.lists(st.integers(0, 15), min_size=1, max_size=4))
@FAST
def test_lesson_index_matches_a_brute_force_model_through_writes_and_a_reload(
    ops: list[tuple[str, int, str, int, int | None]], k: int, queries: list[int]
) -> None:
    idx = LessonIndex(bits=64, max_distance=k, bands=4)
    model: dict[str, tuple[str, int, int | None]] = {}  # insertion order = the table's order
    for op, n, status, h, due in ops:
        lid = f"l{n}"
        if op == "remove":
            idx.remove(lid)
            model.pop(lid, None)
        else:
            idx.put(lid, status, h, due)
            model[lid] = (status, h, due)
    reloaded = LessonIndex.from_arrays(list(model), idx.to_arrays(list(model)), bits=64, max_distance=k, bands=4)
    for index in (idx, reloaded):
        assert index.counts() == {s: Counter(v[0] for v in model.values()).get(s, 0) for s in LESSON_STATUSES}
        assert len(index) == len(model)
        for seq in (-1, 0, 7, 40, 100):
            assert index.due_by(seq) == [i for i, v in model.items() if v[2] is not None and v[2] <= seq]
        for q in queries:
            h = (0xF00D << 20) ^ (1 << q)
            assert index.near(h) == [i for i, v in model.items() if hamming(h, v[1]) <= k]
        ids = list(model)[::-1]
        assert index.rows_in_order([*ids, "new"]) == [*model, "new"]


def test_many_writes_between_lookups_resort_the_bands_and_stay_exact() -> None:
    idx = LessonIndex(bits=64, max_distance=3, bands=4)
    hashes = {f"l{n}": (n * 0x9E3779B97F4A7C15) % (1 << 64) for n in range(3000)}
    for lid, h in hashes.items():
        idx.put(lid, "candidate", h, None)
    probe = hashes["l7"] ^ 0b101  # two bits away from l7
    assert "l7" in idx.near(probe)
    for n in range(0, 3000, 2):  # rewrite half the hashes: more than the re-sort share
        hashes[f"l{n}"] ^= 1 << 63
        idx.put(f"l{n}", "promoted", hashes[f"l{n}"], None)
    assert idx.near(probe) == [i for i, h in hashes.items() if hamming(probe, h) <= 3]
    assert idx.counts()["promoted"] == 1500


# --------------------------------------------------------------------------- sweep due runs

STATS = st.builds(
    LessonStats,
    activations=st.integers(0, 6),
    runs_activated=st.integers(0, 6),
    evidence_runs=st.integers(0, 6),
    helped=st.integers(0, 4),
    harmed=st.integers(0, 4),
    utility_window=st.lists(st.floats(-1, 1, allow_nan=False), max_size=4),
    conflict_losses=st.integers(0, 4),
    pass_rate_with=st.one_of(st.none(), st.floats(0, 1)),
    pass_rate_baseline=st.one_of(st.none(), st.floats(0, 1)),
    created_run_seq=st.integers(0, 30),
    last_activated_run_seq=st.one_of(st.none(), st.integers(0, 30)),
)


@st.composite
def lessons(draw: st.DrawFn, lesson_id: str | None = None) -> Lesson:
    wrong = draw(st.sampled_from([*WORDS, None]))
    correct = draw(st.sampled_from([*WORDS, None])) if wrong is not None else None
    tail = draw(st.sampled_from(["", " at stage <num>", " now"]))
    rule = f"WRONG: {wrong} -> CORRECT: {correct}{tail}" if wrong and correct else f"AVOID: {wrong or 'it'}{tail}"
    lesson = Lesson(
        id=lesson_id or f"l{draw(st.integers(0, 10**6))}",
        namespace=NS,
        rule_text=rule,
        wrong=wrong,
        correct=correct,
        triggers=draw(st.lists(st.sampled_from(FPS), max_size=2, unique=True)),
        status=draw(st.sampled_from(LESSON_STATUSES)),
        stats=draw(STATS),
        reliability=draw(st.floats(0, 1)),
        created_at=float(draw(st.integers(0, 3))),  # ties on purpose: the scan's order breaks them
    )
    stored = draw(st.sampled_from(["none", "own", "other", "corrupt"]))
    if stored == "own":
        lesson = lesson.model_copy(update={"simhash": format(lesson_hashes([lesson])[0], "016x")})
    elif stored == "other":
        lesson = lesson.model_copy(update={"simhash": format(draw(st.integers(0, (1 << 64) - 1)), "016x")})
    elif stored == "corrupt":
        lesson = lesson.model_copy(update={"simhash": "not-hex"})
    return lesson


CONFIGS = st.sampled_from([
    MemoryConfig(),
    MemoryConfig(lifecycle={"archive_unused_runs": 3, "archive_max_reliability": 0.6, "conflict_losses_to_suppress": 2}),
    MemoryConfig(lifecycle={"dedup_max_hamming": 12, "simhash_bits": 32}),
    MemoryConfig(lifecycle={"dedup_max_hamming": 20, "simhash_bits": 16}),  # more bands than bits: the index scans
])


@given(lesson=lessons(), config=CONFIGS)
@FAST
def test_sweep_due_is_the_first_run_at_which_the_sweep_changes_a_lesson(lesson: Lesson, config: MemoryConfig) -> None:
    due = sweep_due(lesson, config)
    for seq in range(0, 100):
        out = Judgement()
        sweep_unused({lesson.id: lesson}, run_seq=seq, skip=set(), config=config, out=out)
        changed = bool(out.transitions)
        assert changed == (due is not None and seq >= due), (seq, due)


@given(texts=st.lists(st.text(max_size=80), max_size=12), bits=st.sampled_from([16, 33, 64]))
@FAST
def test_simhash_many_equals_simhash(texts: list[str], bits: int) -> None:
    assert simhash_many(texts, bits) == [simhash(t, bits) for t in texts]


# --------------------------------------------------------------------------- dedup and conflicts


@st.composite
def stores(draw: st.DrawFn) -> tuple[list[Lesson], list[Lesson]]:
    n = draw(st.integers(0, 14))
    existing = [draw(lessons(f"e{i}")) for i in range(n)]
    k = draw(st.integers(0, 6))
    cands = [
        draw(lessons(draw(st.sampled_from([f"e{i}" for i in range(n)] or ["c0"])) if draw(st.booleans()) else f"c{j}"))
        for j in range(k)
    ]
    return existing, cands


@given(data=stores(), config=CONFIGS)
@FAST
def test_indexed_integration_decides_as_the_full_scan(data: tuple[list[Lesson], list[Lesson]], config: MemoryConfig) -> None:
    existing, cands = data
    table = {l.id: l for l in existing}
    index = LessonIndex(bits=config.lifecycle.simhash_bits, max_distance=config.lifecycle.dedup_max_hamming, bands=config.lifecycle.dedup_simhash_bands)
    for lesson, entry in zip(table.values(), index_entries(list(table.values()), config)):
        index.put(lesson.id, *entry)
    lookup = StoreLookup(index, LessonGraph.from_records(table.values()))
    fast = integrate_candidates(cands, table, config, now=9.0, lookup=lookup)
    slow = integrate_candidates(cands, table, config, now=9.0)
    assert list(fast.upserts.items()) == list(slow.upserts.items())
    assert (fast.created, fast.merged, fast.conflicts) == (slow.created, slow.merged, slow.conflicts)


def test_indexed_integration_meets_only_the_lessons_the_indexes_name() -> None:
    config = MemoryConfig()
    table = {
        f"e{i}": Lesson(id=f"e{i}", namespace=NS, rule_text=f"WRONG: w{i} -> CORRECT: c{i}", wrong=f"w{i}",
                        correct=f"c{i}", triggers=[f"fp{i}"])
        for i in range(2000)
    }
    index = LessonIndex(bits=64, max_distance=3, bands=4)
    for lesson, entry in zip(table.values(), index_entries(list(table.values()), config)):
        index.put(lesson.id, *entry)
    reads: Counter[str] = Counter()

    class Counting(dict[str, Lesson]):
        def get(self, key: str, default: Lesson | None = None) -> Lesson | None:  # type: ignore[override]
            reads[key] += 1
            return super().get(key, default)

    again = table["e5"].model_copy(update={"id": "c1", "created_at": table["e5"].created_at + 5.0})  # same rule and trigger
    rival = Lesson(id="c2", namespace=NS, rule_text="WRONG: w7 -> CORRECT: other", wrong="w7", correct="other",
                   triggers=["fp7"])
    out = integrate_candidates(
        [again, rival], Counting(table), config, now=1.0, lookup=StoreLookup(index, LessonGraph.from_records(table.values()))
    )
    assert out.merged == [("e5", "c1")] and out.conflicts == [("c2", "e7")]
    assert sum(reads.values()) <= 12  # a handful of lessons, not the 2,000 a scan reads
    assert index.touched <= 12


def test_the_saved_band_sort_is_used_checked_and_dropped_for_another_plan() -> None:
    idx = LessonIndex(bits=64, max_distance=3, bands=4)
    hashes = {f"l{n}": (n * 0x9E3779B97F4A7C15) % (1 << 64) for n in range(500)}
    for lid, h in hashes.items():
        idx.put(lid, "candidate", h, None)
    arrays = idx.to_arrays(list(hashes))
    probe = hashes["l9"] ^ 0b11
    loaded = LessonIndex.from_arrays(list(hashes), arrays, bits=64, max_distance=3, bands=4)
    assert loaded._sorted is not None and loaded.near(probe) == ["l9"]  # no sort needed after the load
    wider = LessonIndex.from_arrays(list(hashes), arrays, bits=64, max_distance=5, bands=4)
    assert wider._sorted is None and "l9" in wider.near(probe)  # another plan: sorted on first use
    broken = dict(arrays, band_rows=arrays["band_rows"][:, ::-1].copy())
    with pytest.raises(ValueError, match="not a sort"):  # the memory then rebuilds the index
        LessonIndex.from_arrays(list(hashes), broken, bits=64, max_distance=3, bands=4)
