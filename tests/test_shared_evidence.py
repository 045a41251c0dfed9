"""One memory, many writers: run evidence is appended, never read-modified-written.

Two memories open on one Chroma server each keep their own view. Each judges its runs
and appends what a run said about a lesson as ``RunEvidence``; a lesson's stats and
status are the fold of that evidence over its stored record. So the activations two
stale writers report all reach the store, every reader that has read the same evidence
holds the same lessons, and the fold does not depend on the order evidence arrives in.
"""

from __future__ import annotations

import itertools
import random
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from langmem_plus import LearningMemory
from langmem_plus.bench.reliability import round_processes
from langmem_plus.config import MemoryConfig, nest
from langmem_plus.learning.ledger import LESSON_FOLD, Ledger, LogKey, fold_all
from langmem_plus.learning.lifecycle import add_members
from langmem_plus.records import (
    Activation,
    Feedback,
    Lesson,
    LessonAdditions,
    LessonStats,
    Provenance,
    RunEvidence,
    Step,
    TaskSpec,
    Verdict,
)

TASK = TaskSpec(task_id="t1", goal="list adults", tool="gridtool", family="f")
CFG = MemoryConfig(lifecycle={"promote_min_runs": 2, "suppress_min_activations": 2, "archive_unused_runs": 3}, storage={"warm_lessons": False})
LESSON_IDS = ["l1", "l2", "l3"]


def _lesson(ns: tuple[str, ...], lid: str) -> Lesson:
    return Lesson(id=lid, namespace=ns, rule_text=f"WRONG: bad{lid} -> CORRECT: good{lid}", wrong=f"bad{lid}",
                  correct=f"good{lid}", triggers=[f"fp-{lid}"], stats=LessonStats(created_run_seq=0))


def _steps(lid: str, fixed: bool) -> list[Step]:
    steps = [Step(index=0, action=f"bad{lid} x", tool="gridtool", feedback=Feedback(hard_failure=True, error_text="unknown"))]
    if fixed:
        steps.append(Step(index=1, action=f"good{lid} x", tool="gridtool"))
    return steps


def _end(mem: LearningMemory, run_id: str, lid: str, shown: int, fixed: bool) -> int:
    """One run in which lesson ``lid`` was shown ``shown`` times; returns the activations its report counted."""
    steps = _steps(lid, fixed)
    acts = [Activation(lesson_id=lid, run_id=run_id, step=0, moment="pre_run") for _ in range(shown)]
    report = mem.end_run(run_id=run_id, task=TASK, steps=steps, events=mem.capture_steps(steps, run_id=run_id, task=TASK),
                         activations=acts)
    return report.lesson_activations


def _open(url: str, ns: tuple[str, ...], root: Path, name: str, **cfg: Any) -> LearningMemory:
    return LearningMemory.open(url=url, namespace=ns, audit_dir=root / name, config=CFG.replace(**nest(cfg)))


def _co_weight(mem: LearningMemory, a: str, b: str) -> float:
    """The co-activation edge between two lessons (0 when none)."""
    edge = (mem.graph.nx.get_edge_data(f"lesson:{a}", f"lesson:{b}") or {}).get("link:co_activated")
    return float(edge["weight"]) if edge else 0.0


def _end_both(mem: LearningMemory, run_id: str) -> int:
    """A run that showed l1 and l3 together."""
    steps = _steps("l1", True)
    acts = [Activation(lesson_id=lid, run_id=run_id, step=0, moment="pre_run") for lid in ("l1", "l3")]
    return mem.end_run(run_id=run_id, task=TASK, steps=steps, events=[], activations=acts).lesson_activations


def _lessons(mem: LearningMemory) -> dict[str, dict[str, Any]]:
    return {i: mem.lessons[i].model_dump(exclude={"updated_at"}) for i in sorted(mem.lessons)}


# --------------------------------------------------------------------------- the fold


EVIDENCE = st.lists(
    st.tuples(st.sampled_from(LESSON_IDS), st.integers(0, 3), st.one_of(st.none(), st.floats(-1, 1)), st.booleans(),
              st.integers(0, 2), st.booleans()),
    min_size=1, max_size=25,
)


@given(evidence=EVIDENCE, seed=st.integers(0, 10_000))
@settings(max_examples=60, deadline=None)
def test_the_fold_is_the_same_whatever_order_the_evidence_arrives_in(evidence: list[Any], seed: int) -> None:
    """Two ledgers given the same evidence in different batches and orders hold the fold of it in Lamport order."""
    records = {lid: _lesson(("ns",), lid) for lid in LESSON_IDS}
    entries: list[tuple[LogKey, RunEvidence]] = []
    for n, (lid, shown, u, passed, losses, swept) in enumerate(evidence):
        seq = n // 2 + 1  # two writers at a time share a run number
        entries.append(((seq, float(n % 3), f"w{n % 2}", n), RunEvidence(
            lesson_id=lid, run_id=f"r{n}", run_seq=seq, at=float(n), shown=shown, utility=u if shown else None,
            passed=passed, conflict_losses=losses, lost_to=["x"] if losses else [], swept=swept,
        )))
    reference = fold_all(records, entries, CFG)
    rng = random.Random(seed)
    for _ in range(2):
        shuffled = entries[:]
        rng.shuffle(shuffled)
        ledger, view = Ledger(LESSON_FOLD, CFG), dict(records)
        cut = sorted(rng.sample(range(len(shuffled) + 1), k=min(3, len(shuffled) + 1)))
        for lo, hi in itertools.pairwise([0, *cut, len(shuffled)]):
            view.update(ledger.add(shuffled[lo:hi], current=view.get))
        assert {i: l.model_dump() for i, l in view.items()} == {i: l.model_dump() for i, l in reference.items()}
        again = ledger.add(shuffled, current=view.get)  # the same evidence again (a retried write) changes nothing
        assert again == {}
        for lid in LESSON_IDS:
            assert ledger.record_of(view[lid]).stats == records[lid].stats  # the record keeps no evidence


def test_members_a_run_added_survive_a_record_write_that_did_not_know_them() -> None:
    """Another writer's stale content write drops ``fp-new`` from the stored record; the fold puts it back."""
    ns = ("n",)
    record = _lesson(ns, "l1")
    added = RunEvidence(lesson_id="l1", run_id="r1", run_seq=1, at=1.0,
                        added=LessonAdditions(triggers=["fp-new"], run_ids=["r1"], conflicts_with=["l1", "l9"]))
    ledger: Ledger[Lesson, RunEvidence] = Ledger(LESSON_FOLD, CFG)
    folded = ledger.add([((1, 1.0, "w", 1), added)], current={"l1": record}.get)["l1"]
    assert folded.triggers == ["fp-l1", "fp-new"] and folded.provenance.run_ids == ["r1"]
    assert folded.conflicts_with == ["l9"]  # never itself
    stale = record.model_copy(update={"tags": ["retagged"]})  # written by a writer that never saw r1's merge
    refolded = ledger.set_record(stale)
    assert refolded.triggers == ["fp-l1", "fp-new"] and refolded.tags == ["retagged"]
    assert ledger.record_of(refolded).triggers == ["fp-l1", "fp-new"]  # a set member is content: rewritten with it
    assert add_members(refolded, added.added) == refolded  # idempotent: folding it twice changes nothing


def test_a_saved_ledger_folds_when_its_record_is_read_back_unchanged() -> None:
    """A ledger from a snapshot base holds records and evidence but no folds: reading back the same record folds it."""
    ns = ("n",)
    record = _lesson(ns, "l1")
    ledger: Ledger[Lesson, RunEvidence] = Ledger(LESSON_FOLD, CFG)
    ledger.add([((1, 1.0, "w", 1), RunEvidence(lesson_id="l1", run_id="r1", run_seq=1, at=1.0, shown=2))],
               current={"l1": record}.get)
    saved = Ledger.from_state(LESSON_FOLD, ledger.to_state(), CFG)
    assert saved.set_record(record.model_copy()).stats.activations == 2  # equal to the saved record, still folded
    assert saved.set_record(record).stats.activations == 2


def test_a_folded_lesson_matches_what_end_run_judged_in_one_process(tmp_path: Path) -> None:
    """The lessons ``end_run`` judged equal the fold of the evidence it appended over the stored records."""
    mem = LearningMemory.open(tmp_path / "s", namespace=("one",), config=CFG)
    mem.add_lessons([_lesson(("one",), lid) for lid in LESSON_IDS])
    for n in range(6):
        _end(mem, f"r{n}", LESSON_IDS[n % 3], shown=1 + n % 2, fixed=n % 4 != 0)
    records = {l.id: l for l in mem.store.all("lessons") if isinstance(l, Lesson)}
    assert all(records[lid].stats.activations == 0 for lid in LESSON_IDS)  # the records were never rewritten
    entries = [((ev.run_seq, 0.0, "w", n), ev) for n, ev in enumerate(
        ev for lid in LESSON_IDS for ev in mem.view.ledger.evidence(lid))]
    assert sum(ev.shown for _, ev in entries) == sum(mem.lessons[lid].stats.activations for lid in LESSON_IDS) > 0
    folded = fold_all(records, entries, CFG)
    for lid in LESSON_IDS:
        assert folded[lid].stats == mem.lessons[lid].stats and folded[lid].status == mem.lessons[lid].status
    mem.close()


# --------------------------------------------------------------------------- writers on one server


@pytest.mark.server
def test_two_stale_writers_lose_no_activation_and_agree_after_a_refresh(chroma_server: str, tmp_path: Path) -> None:
    ns = ("shared", uuid.uuid4().hex[:8])
    a = _open(chroma_server, ns, tmp_path, "a")
    a.add_lessons([_lesson(ns, lid) for lid in LESSON_IDS])
    b = _open(chroma_server, ns, tmp_path, "b")  # opened once; from here on each writes from its own view
    reported = 0
    for n in range(4):
        reported += _end(a, f"a{n}", "l1", shown=2, fixed=True)
        reported += _end(b, f"b{n}", "l1", shown=1, fixed=n % 2 == 0)
    reported += _end_both(b, "b-both") + _end_both(a, "a-both")  # co-activations from both writers
    assert reported == 16
    reader = _open(chroma_server, ns, tmp_path, "reader")
    assert reader.lessons["l1"].stats.activations == 14 and reader.lessons["l1"].stats.runs_activated == 10
    assert _co_weight(reader, "l1", "l3") == 2.0  # each writer's run counts: links fold from evidence too
    a.refresh()
    b.refresh()
    assert _lessons(a) == _lessons(b) == _lessons(reader)  # one fold, whoever computes it
    assert _co_weight(a, "l1", "l3") == _co_weight(b, "l1", "l3") == 2.0
    seqs = sorted(r.seq for r in reader.runs)
    assert len(set(seqs)) == len(seqs) == 10  # each end_run read the others first: a Lamport clock, no collision
    for mem in (a, b, reader):
        mem.close()


@pytest.mark.server
def test_two_writers_racing_inside_end_run_lose_no_episode_sighting_skill_outcome_or_merged_trigger(
    chroma_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both writers read the store before either writes (a barrier after planning): nothing either adds is lost.

    A read-modify-write of the episode's count, the skill's stats or the lesson's
    triggers would keep only the last writer's increment here.
    """
    import langmem_plus.memory.runs as runs_module

    ns = ("shared", uuid.uuid4().hex[:8])
    a = _open(chroma_server, ns, tmp_path, "a")
    a.add_lessons([_lesson(ns, "l1")])
    solves = ["LOAD people | KEEP age >= 30 | PICK name, age", "LOAD orders | KEEP status = 'paid' | PICK id, amount",
              "LOAD cities | KEEP population > 2000 | PICK city"]

    def solve(n: int) -> tuple[TaskSpec, list[Step]]:
        task = TaskSpec(task_id=f"g{n}", goal=f"goal {n}", tool="gridtool", family="filter_select")
        return task, [Step(index=0, action=solves[n], tool="gridtool", feedback=Feedback(reward=1.0))]

    for n in range(3):  # three solves of one template: three success episodes and a skill
        a.end_run(run_id=f"solo{n}", task=solve(n)[0], steps=solve(n)[1], events=[], verdict=Verdict(passed=True, score=1.0))
    assert [s.stats.executions for s in a.skills.values()] == [3]
    first = {e.episode_id: e.count for e in a.episodes()}
    assert sorted(first.values()) == [1, 1, 1]
    b = _open(chroma_server, ns, tmp_path, "b")
    barrier = threading.Barrier(2, timeout=60)
    plan = runs_module.plan_episode_writes

    def both_read_first(*args: Any, **kwargs: Any) -> Any:
        planned = plan(*args, **kwargs)
        barrier.wait()  # each has read the episodes and holds its view of the skill before the other writes
        return planned

    monkeypatch.setattr(runs_module, "plan_episode_writes", both_read_first)
    relearned = {  # the same rule learned by each writer from its own failure: same content id, new trigger
        name: _lesson(ns, "l1").model_copy(update={"triggers": [f"fp-{name}"], "stats": LessonStats(),
                                                   "provenance": Provenance(run_ids=[f"race-{name}"])})
        for name in ("a", "b")
    }

    def run(mem: LearningMemory, name: str) -> None:
        mem._synthesize = lambda **_: [relearned[name]]  # type: ignore[method-assign]
        task, steps = solve(0)  # the first solve again: a sighting of its stored episode
        mem.end_run(run_id=f"race-{name}", task=task, steps=steps, events=[], verdict=Verdict(passed=True, score=1.0))

    threads = [threading.Thread(target=run, args=(m, n)) for m, n in ((a, "a"), (b, "b"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not barrier.broken
    reader = _open(chroma_server, ns, tmp_path, "reader", snapshot=False)
    for mem in (reader, a, b):
        mem.refresh()
        counts = {e.episode_id: e.count for e in mem.episodes()}
        assert sorted(counts.values()) == [1, 1, 3] and set(counts) == set(first)
        assert [s.stats.executions for s in mem.skills.values()] == [5]
        assert {"fp-l1", "fp-a", "fp-b"} <= set(mem.lessons["l1"].triggers)
        assert {"race-a", "race-b"} <= set(mem.lessons["l1"].provenance.run_ids)
    for mem in (a, b, reader):
        mem.close()


@pytest.mark.server
def test_two_writers_on_one_fact_keep_every_source_and_alias_and_readers_see_what_others_learned(
    chroma_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fact's sources are a grow-only set on the shared log: a stale record write loses none of them."""
    from langmem_plus.memory_types.semantic import SemanticMemory
    from langmem_plus.records import Evidence

    ns = ("shared", uuid.uuid4().hex[:8])
    a, b = _open(chroma_server, ns, tmp_path, "a"), _open(chroma_server, ns, tmp_path, "b")
    reader = _open(chroma_server, ns, tmp_path, "reader")
    assert reader.semantic().facts() == []  # loaded before anyone learned: a stale view to refresh
    a.semantic().learn(("fridge", "contains", "milk"), Evidence(kind="observed", source="seed"))
    b.refresh()
    barrier = threading.Barrier(2, timeout=60)
    upsert = a.store.upsert.__func__  # type: ignore[attr-defined]

    def both_hold_the_old_record(store: Any, kind: str, records: Any) -> Any:
        if kind == "facts" and threading.current_thread().name.startswith("learner"):
            barrier.wait()  # each has folded its new source into the record it read; neither has written
        return upsert(store, kind, records)

    monkeypatch.setattr(type(a.store), "upsert", both_hold_the_old_record)

    def learn(mem: LearningMemory, source: str) -> None:
        mem.semantic().learn(("fridge", "contains", "milk"), Evidence(kind="observed", source=source))

    threads = [threading.Thread(target=learn, args=(m, src), name=f"learner-{src}") for m, src in ((a, "a"), (b, "b"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not barrier.broken
    monkeypatch.undo()
    fresh = _open(chroma_server, ns, tmp_path, "fresh", snapshot=False)
    for mem in (fresh, reader, a, b):
        mem.refresh()
        [fact] = mem.semantic().facts()
        assert {e.source for e in fact.sources} == {"seed", "a", "b"}
        assert fact.state == "held"
    assert isinstance(reader.semantic(), SemanticMemory)
    a.semantic().add_alias("fridge", "icebox")
    b.semantic().add_alias("fridge", "cooler")  # b has not read a's alias: its entity record lacks it
    for mem in (fresh, reader, a, b):
        mem.refresh()
        for alias in ("icebox", "cooler"):
            found = mem.semantic().entity(alias)
            assert found is not None and found.label == "fridge", alias
    for mem in (a, b, reader, fresh):
        mem.close()


@pytest.mark.server
def test_a_snapshot_saved_after_another_writer_reopens_to_the_same_state(chroma_server: str, tmp_path: Path) -> None:
    """The base's ledger and log heads: a snapshot reopen neither double-folds nor misses the other writer's evidence."""
    ns = ("shared", uuid.uuid4().hex[:8])
    a = _open(chroma_server, ns, tmp_path, "a")
    a.add_lessons([_lesson(ns, lid) for lid in LESSON_IDS])
    b = _open(chroma_server, ns, tmp_path, "b")
    _end(b, "b0", "l2", shown=3, fixed=True)
    _end(a, "a0", "l2", shown=1, fixed=True)  # a reads b's run first, then writes last
    a.sync.write_base()
    a.close()
    b.close()
    again = _open(chroma_server, ns, tmp_path, "a")
    assert again.sync.snapshot_heads  # opened from the snapshot, which recorded the heads it reflects
    fresh = _open(chroma_server, ns, tmp_path, "fresh", snapshot=False)
    assert again.lessons["l2"].stats.activations == 4
    assert _lessons(again) == _lessons(fresh)
    _end_both(again, "again-both")
    assert _co_weight(again, "l1", "l3") == 1.0 and again.graph.snapshot() != fresh.graph.snapshot()
    fresh.refresh()
    assert _co_weight(fresh, "l1", "l3") == 1.0
    again.close()
    fresh.close()


@pytest.mark.server
@pytest.mark.slow
def test_three_processes_lose_no_activation_or_episode_sighting(chroma_server: str, tmp_path: Path) -> None:
    """The issue's user scenario: worker processes on one namespace report activations; a fresh reader finds them all."""
    notes: list[str] = []  # a worker's exit and the last line of its error, should one fail
    out = round_processes(chroma_server, tmp_path, processes=3, runs=4, seed=5, progress=notes.append)
    assert out["runs"] == 12 and out["workers_failed"] == 0, notes
    assert out["activations_reported"] > 0 and out["activations_stored"] == out["activations_reported"]
    assert out["run_records_lost"] == 0 and out["duplicate_live_lessons"] == 0
    assert out["episodes_reported"] > 0 and out["episodes_stored"] == out["episodes_reported"]  # sightings too


# --------------------------------------------------------------------------- threads and async tasks in one process


def test_threads_and_async_tasks_share_one_memory_without_loss_or_error(tmp_path: Path) -> None:
    """Retrievals from threads and an ``asyncio.gather`` run while other threads end runs: no exception, nothing lost."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    from langmem_plus.capture import detect_failure

    mem = LearningMemory.open(tmp_path / "s", namespace=("threads",), config=CFG)
    mem.add_lessons([_lesson(("threads",), lid) for lid in LESSON_IDS])
    event = detect_failure(_steps("l1", False)[0], [], namespace=("threads",), run_id="probe", task=TASK, now=0.0)
    assert event is not None

    def ender(w: int) -> int:
        return sum(_end(mem, f"t{w}-{n}", LESSON_IDS[(w + n) % 3], shown=1 + n % 3, fixed=n % 2 == 0) for n in range(5))

    def reader(w: int) -> int:
        found = 0
        for n in range(15):
            found += len(mem.retrieve_pre_run(TASK, run_id=f"q{w}-{n}"))
            found += len(mem.retrieve_on_error(event))
        return found

    async def gathered() -> list[list[Any]]:
        return await asyncio.gather(*(mem.aretrieve_on_error(event) for _ in range(8)),
                                    *(mem.aretrieve_pre_run(TASK) for _ in range(8)))

    with ThreadPoolExecutor(max_workers=6) as pool:
        enders = [pool.submit(ender, w) for w in range(3)]
        readers = [pool.submit(reader, w) for w in range(2)]
        results = asyncio.run(gathered())
        reported = sum(f.result() for f in enders)  # .result() re-raises any exception of the thread
        assert all(f.result() > 0 for f in readers)
    assert len(results) == 16 and all(isinstance(r, list) for r in results)
    assert sum(mem.lessons[lid].stats.activations for lid in LESSON_IDS) == reported > 0
    assert len({r.seq for r in mem.runs}) == len(mem.runs) == 15
    mem.close()
    again = LearningMemory.open(tmp_path / "s", namespace=("threads",), config=CFG)
    assert sum(again.lessons[lid].stats.activations for lid in LESSON_IDS) == reported
    again.close()


async def test_the_async_context_manager_closes_the_memory(tmp_path: Path) -> None:
    async with LearningMemory.open(tmp_path / "s", namespace=("async",), config=CFG) as mem:
        await mem.aend_run(run_id="r0", task=TASK, steps=_steps("l1", True), events=[])
        assert await mem.arefresh() == 0  # nobody else writes here
    assert mem.store.closed


@pytest.mark.server
@pytest.mark.slow
def test_twenty_kills_in_a_row_lose_no_acknowledged_write(chroma_server: str, tmp_path: Path) -> None:
    """SIGKILL at random moments (end_run, add_lessons, a snapshot base being written), 20 times on one store and folder."""
    from langmem_plus.bench.reliability import round_kills

    said: list[str] = []
    out = round_kills(chroma_server, tmp_path, kills=20, seed=11, progress=said.append)
    assert out["kill_rounds_survived"] == 20, out["kill_errors"]
    assert out["records_acknowledged_before_kills"] > 20  # the kills landed after real work, not before it
    assert out["records_lost_after_kills"] == 0
    assert len(said) == 20
