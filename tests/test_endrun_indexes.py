"""``end_run`` with its indexes against the full scan, through real Chroma stores.

Two memories take the same imports and runs, one reading the indexes
(``end_run_indexes=True``, the default) and one scanning every lesson (False, the
reference): every run report, every stored lesson and every status count must agree,
also after each is closed and reopened (from its snapshot, and from Chroma alone). An
operation count shows what one ``end_run`` reads from a large store: the lessons the
run touches, not the store.
"""

from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import langmem_plus.learning.lifecycle as lifecycle
from langmem_plus import LearningMemory
from langmem_plus.config import MemoryConfig, nest
from langmem_plus.learning.incremental import index_entries
from langmem_plus.records import LESSON_STATUSES, Feedback, Lesson, LessonStats, Step, TaskSpec
from langmem_plus.store.snapshot import RecordTable

NS = ("endrun",)
TASK = TaskSpec(task_id="t1", goal="list adults", tool="gridtool", family="f")
# (failing action, its error, the fix that got past it)
MISTAKES = [
    ("filter age > 30 | select name", "unknown command 'filter' at stage 1", "keep age > 30 | select name"),
    ("keep age > 30 | pick name", "unknown command 'pick' at stage 2", "keep age > 30 | select name"),
    ("sort age down", "invalid sort direction 'down'", "sort age desc"),
    ("select nme", "no such column: nme", "select name"),
]
BASE = dict(archive_unused_runs=3, archive_max_reliability=0.6, promote_min_runs=2, suppress_min_activations=2)


def _clock() -> float:
    return 1_000_000.0


def _open(path: Path, indexes: bool, **extra: Any) -> LearningMemory:
    cfg = MemoryConfig(**nest({**BASE, **extra, "end_run_indexes": indexes, "warm_lessons": False}))
    return LearningMemory.open(path, namespace=NS, config=cfg, clock=_clock)


def _steps(plan: list[tuple[int, bool]]) -> list[Step]:
    steps: list[Step] = []
    for mistake, fixed in plan:
        action, error, fix = MISTAKES[mistake]
        steps.append(Step(index=len(steps), action=action, tool="gridtool",
                          feedback=Feedback(hard_failure=True, error_text=error)))
        if fixed:
            steps.append(Step(index=len(steps), action=fix, tool="gridtool"))
    return steps


def _run(mem: LearningMemory, run_id: str, plan: list[tuple[int, bool]], activate_from: LearningMemory) -> dict[str, Any]:
    steps = _steps(plan)
    events = mem.capture_steps(steps, run_id=run_id, task=TASK)
    shown = []
    for e in activate_from.capture_steps(steps, run_id=run_id + "-probe", task=TASK)[:2]:
        items = activate_from.retrieve_on_error(e, run_id=run_id)
        shown += activate_from.activations_for(items, run_id=run_id, step=e.step, moment="on_error")
    report = mem.end_run(run_id=run_id, task=TASK, steps=steps, events=events, activations=shown)
    return report.model_dump()


def _imports(n: int) -> list[Lesson]:
    """Lessons some of which the sweep archives, suppresses or promotes, and some the runs duplicate."""
    out = []
    for i in range(n):
        action, error, fix = MISTAKES[i % len(MISTAKES)]
        wrong, correct = action.split()[0] + ("" if i < len(MISTAKES) else str(i)), fix.split()[0]
        out.append(Lesson(
            id=f"imp{i}", namespace=NS, rule_text=f"WRONG: {wrong} -> CORRECT: {correct}", wrong=wrong, correct=correct,
            triggers=[f"fp{i % 3}"], reliability=[0.2, 0.5, 0.9][i % 3], created_at=float(i % 4), updated_at=9.0,
            stats=LessonStats(evidence_runs=i % 3, utility_window=[[-0.5], [0.4, 0.5], []][i % 3][: i % 3],
                              conflict_losses=i % 2, created_run_seq=0),
        ))
    return out


def _state(mem: LearningMemory) -> tuple[dict[str, Any], dict[str, int]]:
    lessons = {i: mem.lessons[i].model_dump() for i in sorted(mem.lessons)}
    scan = Counter(l.status for l in mem.lessons.values())
    assert mem.lessons_by_status() == {s: scan.get(s, 0) for s in LESSON_STATUSES}
    return lessons, mem.lessons_by_status()


def _check_index(mem: LearningMemory) -> None:
    """The live index equals one computed from the lessons now (what a rebuild would hold)."""
    index = mem.view.index
    assert index is not None
    lessons = [mem.lessons[i] for i in mem.lessons]
    assert [index.row_of(l.id) for l in lessons] == sorted(index.row_of(l.id) for l in lessons)  # table order
    for lesson, (status, h, due) in zip(lessons, index_entries(lessons, mem.config)):
        assert (index.status_of(lesson.id), index.hash_of(lesson.id), index.due_of(lesson.id)) == (status, h, due)


RUNS = st.lists(
    st.lists(st.tuples(st.integers(0, len(MISTAKES) - 1), st.booleans()), min_size=1, max_size=4),
    min_size=2, max_size=6,
)


@given(runs=RUNS, imports=st.integers(0, 12), reopen=st.sampled_from(["snapshot", "chroma"]))
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
def test_end_run_with_indexes_equals_the_full_scan_before_and_after_reopen(
    tmp_path_factory: pytest.TempPathFactory, runs: list[list[tuple[int, bool]]], imports: int, reopen: str
) -> None:
    root = tmp_path_factory.mktemp("pair")
    fast, slow = _open(root / "fast", True), _open(root / "slow", False)
    for mem in (fast, slow):
        mem.add_lessons(_imports(imports))
    half = len(runs) // 2
    for n, plan in enumerate(runs[:half]):
        assert _run(fast, f"r{n}", plan, fast) == _run(slow, f"r{n}", plan, slow)
        assert _state(fast) == _state(slow)
    _check_index(fast)
    fast.close()
    slow.close()
    extra = {"snapshot": False} if reopen == "chroma" else {}
    fast, slow = _open(root / "fast", True, **extra), _open(root / "slow", False, **extra)
    _check_index(fast)
    for n, plan in enumerate(runs[half:], start=half):
        assert _run(fast, f"r{n}", plan, fast) == _run(slow, f"r{n}", plan, slow)
        assert _state(fast) == _state(slow)
    _check_index(fast)
    fast.close()
    slow.close()


def test_the_index_saved_with_the_snapshot_is_reused_and_a_changed_threshold_rebuilds_it(tmp_path: Path) -> None:
    mem = _open(tmp_path, True)
    mem.add_lessons(_imports(30))
    mem.sync.write_base()  # fold the journal, with the index, into a base
    mem.close()
    again = _open(tmp_path, True)
    assert again.lessons.parsed_count() == 0  # the index came from the snapshot, no lesson was parsed
    _check_index(again)
    again.close()
    other = _open(tmp_path, True, archive_unused_runs=7)  # due runs follow this threshold: rebuilt
    assert other.lessons.parsed_count() == len(other.lessons)
    _check_index(other)
    other.close()


def test_end_run_on_a_large_store_reads_the_lessons_it_changes_not_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    big = [
        Lesson(id=f"bulk{i}", namespace=NS, rule_text=f"WRONG: cmd{i} -> CORRECT: CMD{i}", wrong=f"cmd{i}",
               correct=f"CMD{i}", triggers=[f"fpbulk{i % 500}"], reliability=0.3 if i % 7 == 0 else 0.8,
               stats=LessonStats(created_run_seq=0))
        for i in range(3000)
    ]
    reads: Counter[str] = Counter()
    decided: Counter[str] = Counter()
    get_item = RecordTable.__getitem__
    decide = lifecycle.decide_status

    def counting_get(self: RecordTable[Any], key: str) -> Any:
        reads[key] += 1
        return get_item(self, key)

    def counting_decide(lesson: Lesson, *args: Any, **kwargs: Any) -> Any:
        decided[lesson.id] += 1
        return decide(lesson, *args, **kwargs)

    def one_run(mem: LearningMemory, run_id: str) -> None:
        steps = _steps([(0, True), (2, False), (2, True)])
        events = mem.capture_steps(steps, run_id=run_id, task=TASK)
        shown = mem.activations_for(mem.retrieve_on_error(events[0], run_id=run_id), run_id=run_id, step=0, moment="on_error")
        reads.clear()
        decided.clear()
        if mem.view.index is not None:
            mem.view.index.touched = 0
        mem.end_run(run_id=run_id, task=TASK, steps=steps, events=events, activations=shown)

    for indexes in (True, False):
        mem = _open(tmp_path / str(indexes), indexes)
        mem.add_lessons(big)
        monkeypatch.setattr(RecordTable, "__getitem__", counting_get)
        monkeypatch.setattr(lifecycle, "decide_status", counting_decide)
        one_run(mem, "r1")
        if indexes:
            # The run's own lessons, their fingerprint and SimHash neighbours, the activated ones.
            assert sum(reads.values()) < 40 and sum(decided.values()) < 20, (reads, decided)
            assert mem.view.index is not None and mem.view.index.touched < 40
        else:
            assert sum(reads.values()) >= 3000 and sum(decided.values()) >= 3000  # the reference scans
        monkeypatch.undo()
        mem.close()


# --------------------------------------------------------------------------- one token per end_run


def _full(mem: LearningMemory) -> tuple[Any, ...]:
    return (
        {i: l.model_dump() for i, l in mem.lessons.items()},
        {i: l.model_dump() for i, l in mem.view.links.items()},
        [r.model_dump() for r in mem.runs],
        mem.graph.snapshot(),
    )


def test_end_run_stores_one_generation_token_and_its_journal_replays_exactly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mem = _open(tmp_path, True)
    mem.add_lessons(_imports(8))
    bumps: list[str] = []
    bump = type(mem.store)._bump_generation

    def counting(store: Any) -> str:
        token = bump(store)
        bumps.append(token)
        return token

    monkeypatch.setattr(type(mem.store), "_bump_generation", counting)
    report = _run(mem, "r1", [(0, True), (1, True), (0, False)], mem)
    assert report["new_lessons"] and report["activated_lesson_ids"]  # lessons, links and the run were written
    assert len(bumps) == 1 and mem.store.generation() == bumps[0]
    monkeypatch.undo()
    live = _full(mem)
    mem.close()
    again = _open(tmp_path, True)  # from the snapshot: the grouped journal replayed
    assert _full(again) == live
    again.close()
    chroma = _open(tmp_path, True, snapshot=False)
    assert _full(chroma) == live
    chroma.close()


def test_a_crash_inside_the_group_before_the_journal_means_a_full_read(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    mem = _open(tmp_path, True)
    mem.add_lessons(_imports(4))
    mem.sync._journal = lambda writes: None  # type: ignore[method-assign]  # the process dies before the journal append
    _run(mem, "r1", [(0, True), (2, True)], mem)
    live = _full(mem)
    mem.store.close()  # no clean close: nothing more reaches the snapshot
    with caplog.at_level(logging.INFO, logger="langmem_plus"):
        again = _open(tmp_path, True)
    assert "behind the store" in caplog.text  # the stale snapshot was not trusted
    assert _full(again) == live
    _check_index(again)
    again.close()


def test_bench_endrun_times_both_paths_and_chromas_share_on_a_small_store() -> None:
    from langmem_plus.bench.endrun import bench_size, targets_met

    row = bench_size(400, runs=3, reference_runs=2, text_runs=2)
    assert row["lessons"] == 400 and (row["runs"], row["reference_runs"]) == (3, 2)
    assert row["text_end_run_p50_ms"] > 0 and row["text_scan_p50_ms"] > 0
    assert 0 < row["end_run_chroma_p50_ms"] <= row["end_run_p50_ms"]  # each run's Chroma time is part of it
    assert 0.0 < row["imports_chroma_share"] < 1.0 and row["scan_p50_ms"] > 0
    assert row["raw_chroma_upserts_per_s"] > 0
    assert row["imports_over_raw_chroma"] == round(row["imports_per_s"] / row["raw_chroma_upserts_per_s"], 2)
    assert set(targets_met(row)) == {"end_run_p50<=100ms", "end_run_p95<=300ms", "imports>=5000/s", "close<=1s"}


def test_the_benchs_text_run_teaches_text_rules_over_a_new_entity_each_time(tmp_path: Path) -> None:
    from langmem_plus.bench.endrun import TEXT_TOOL, _text_run

    memory = LearningMemory.open(tmp_path / "m", namespace=NS)
    for n in range(2):
        task, steps = _text_run(n)
        memory.end_run(run_id=f"t{n}", task=task, steps=steps, events=memory.capture_steps(steps, run_id=f"t{n}", task=task))
    rules = {(l.wrong, l.correct): l.applies_when for l in memory.text_rules(TEXT_TOOL)}
    assert rules[("cook <X> in stove", None)] == ["roast <X>"]  # one rule over both runs' ingredients
    assert rules[(None, "take <X>")] is not None
    memory.close()
