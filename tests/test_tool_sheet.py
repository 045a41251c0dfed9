"""The pre-run tool sheet (``select.sheet_fill``, ``MemoryConfig.pre_run_sheet_max``) and the
run-id pairing of ``general_retrieve`` / ``general_update`` behind the langmem_plus design."""

from __future__ import annotations

from pathlib import Path

import pytest

from langmem_plus.bench.designs import Context, run_episode
from langmem_plus.bench.designs.base import tool_errors
from langmem_plus.bench.designs.baselines import LangmemPlus
from langmem_plus.config import DEFAULT_CONFIG, MemoryConfig, nest
from langmem_plus.envs.registry import make_env
from langmem_plus.executors.scripted import ScriptedExecutor
from langmem_plus.memory import LearningMemory, Trajectory
from langmem_plus.records import (
    Lesson,
    LessonScope,
    LessonStats,
    LessonStatus,
    ScoredItem,
    TaskSpec,
)
from langmem_plus.retrieval.select import (
    select,
    sheet_eligible,
    sheet_fill,
    sheet_prior,
)

NS = ("acme", "sheet")


def _lesson(
    i: str,
    wrong: str | None = None,
    correct: str | None = None,
    *,
    tool: str = "gridtool",
    level: str = "domain",
    status: LessonStatus = "candidate",
    helped: int = 0,
    harmed: int = 0,
    conflicts: list[str] | None = None,
    reliability: float = 0.5,
    fp: str | None = None,
) -> Lesson:
    return Lesson(
        id=i, namespace=NS, rule_text=f"WRONG: {wrong} -> CORRECT: {correct}", wrong=wrong,
        correct=correct, tags=["unknown_command"], triggers=[fp or f"fp_{i}"], fingerprints=[f"unknown command ({fp or i})"],
        scope=LessonScope(level=level, tool=tool, domain="tables"),  # type: ignore[arg-type]
        status=status, stats=LessonStats(helped=helped, harmed=harmed), conflicts_with=conflicts or [],
        reliability=reliability, updated_at=900.0,
    )


def _item(lesson: Lesson, score: float) -> ScoredItem:
    return ScoredItem(kind="lesson", item=lesson, score=score)


# --------------------------------------------------------------------------- pure


def test_sheet_eligible_needs_a_live_net_helpful_rewrite_of_the_tool() -> None:
    assert sheet_eligible(_lesson("a", "==", "="), "gridtool")
    assert not sheet_eligible(_lesson("a", "==", "="), "fluxtool")  # another tool
    assert not sheet_eligible(_lesson("a", "==", "="), None)
    assert not sheet_eligible(_lesson("a", "==", "=", status="suppressed"), "gridtool")
    assert not sheet_eligible(_lesson("a", "==", "=", harmed=2, helped=1), "gridtool")  # measured net harmful
    assert sheet_eligible(_lesson("a", "==", "=", harmed=1, helped=1), "gridtool")
    assert not sheet_eligible(_lesson("a", "avoid ==", None), "gridtool")  # an avoid lesson, no verified fix
    assert not sheet_eligible(_lesson("a", "==", "=", level="task"), "gridtool")  # stays with its task


def test_sheet_prior_ranks_promoted_then_net_help() -> None:
    ranked = sorted(
        [_lesson("new", "a", "A"), _lesson("helped", "b", "B", helped=3, harmed=1), _lesson("pro", "c", "C", status="promoted")],
        key=sheet_prior,
        reverse=True,
    )
    assert [l.id for l in ranked] == ["pro", "helped", "new"]


def test_sheet_fill_adds_the_rest_of_the_tool_beyond_k_proven_first() -> None:
    items = [
        _item(_lesson("top", "from", "LOAD"), 0.9),
        _item(_lesson("eq", "==", "="), 0.1),  # nothing in the task's history points at it
        _item(_lesson("proven", "count()", "TALLY", helped=2), 0.05),
        _item(_lesson("other_tool", "|", "->", tool="fluxtool"), 0.8),
        _item(_lesson("harmful", "KEEP", "filter", harmed=3), 0.7),
        _item(_lesson("gone", "limit", "TOP", status="suppressed"), 0.6),
    ]
    chosen = select(items, vectors=None, k=1, config=DEFAULT_CONFIG)
    assert [c.item_id for c in chosen] == ["top"]
    extra = sheet_fill(items, chosen, tool="gridtool")
    assert [c.item_id for c in extra] == ["proven", "eq"]
    assert all(any("tool sheet rank" in r for r in c.reasons) for c in extra)
    assert sheet_fill(items, chosen, tool="gridtool", config=MemoryConfig(context={"pre_run_sheet_max": 1}))[0].item_id == "proven"
    assert sheet_fill(items, chosen, tool="gridtool", config=MemoryConfig(context={"pre_run_sheet_max": 0})) == []
    assert sheet_fill(items, chosen, tool=None) == []


def test_sheet_fill_keeps_the_guards_of_the_whole_context() -> None:
    # A conflict loser does not come back through the sheet; nor a third lesson of one bucket.
    winner = _lesson("win", "==", "=", conflicts=["lose"], reliability=0.9)
    loser = _lesson("lose", "==", "is", conflicts=["win"], reliability=0.2)
    same = [_lesson(f"b{i}", "select", "PICK") for i in range(3)]  # bucket unknown_command|select, cap 2
    items = [_item(winner, 0.5), _item(loser, 0.9), *(_item(l, 0.3) for l in same)]
    extra = sheet_fill(items, [], tool="gridtool")
    got = [c.item_id for c in extra]
    assert "lose" not in got and "win" in got
    assert sum(1 for i in got if i.startswith("b")) == DEFAULT_CONFIG.retrieval.tag_bucket_cap


# --------------------------------------------------------------------------- engine


GOAL = "How many orders are paid?"


def _mem(tmp_path: Path, name: str = "s", **cfg: object) -> LearningMemory:
    return LearningMemory.open(tmp_path / name, namespace=NS, config=MemoryConfig(**nest(cfg)), clock=lambda: 1_000.0)  # type: ignore[arg-type]


def _tool_lessons() -> list[Lesson]:
    return [_lesson(f"l{i}", f"cmd{i}", f"CMD{i}") for i in range(8)] + [_lesson("eq", "==", "=")]


def test_pre_run_shows_the_tool_sheet_past_k_and_under_the_token_cap(tmp_path: Path) -> None:
    task = TaskSpec(task_id="t", goal=GOAL, tool="gridtool", domain="tables", family="aggregate")
    mem = _mem(tmp_path)
    mem.add_lessons(_tool_lessons())
    chosen = mem.retrieve_pre_run(task)
    result = mem.last_retrieval
    assert result is not None
    lessons = [c.item_id for c in chosen if c.kind == "lesson"]
    assert len(lessons) > result.budget  # K' is a floor, not the ceiling
    assert set(lessons) == {l.id for l in _tool_lessons()}
    assert result.tokens <= mem.config.context.max_context_tokens
    record = [r for r in mem.audit.read() if r["kind"] == "retrieval"][-1]
    assert record["chosen"] == [c.item_id for c in chosen] and record["tokens"] == result.tokens
    # The sheet off: K' only, as design.md §5.6 reads.
    off = LearningMemory(store=mem.store, audit=mem.audit, namespace=NS, config=MemoryConfig(context={"pre_run_sheet_max": 0}))
    assert len([c for c in off.retrieve_pre_run(task) if c.kind == "lesson"]) == result.budget
    # A tight token cap: the sheet spends only what is left, and says what it dropped. (Instant memory
    # compresses the least relevant lines first, so nine rewrites fit 150 tokens: 100 is tight.)
    tight = LearningMemory(store=mem.store, audit=mem.audit, namespace=NS, config=MemoryConfig(context={"max_context_tokens": 100}))
    few = tight.retrieve_pre_run(task)
    assert tight.last_retrieval is not None and tight.last_retrieval.tokens <= 100
    assert result.budget <= len(few) < len(chosen)
    assert any(why.startswith("token_cap:") for _, why in tight.last_retrieval.dropped)
    # Another tool's task gets none of it.
    assert mem.retrieve_pre_run(TaskSpec(task_id="u", goal=GOAL, tool="fluxtool", domain="tables")) == []


# --------------------------------------------------------------------------- pairing


def test_general_update_measures_what_general_retrieve_showed_under_another_run_id(tmp_path: Path) -> None:
    mem = _mem(tmp_path)
    mem.add_lessons(_tool_lessons())
    task = TaskSpec(task_id="t", goal=GOAL, tool="gridtool", domain="tables")
    out = mem.general_retrieve(Trajectory(task=task, run_id="early"))
    shown = {i.item_id for i in out["items"] if i.kind == "lesson"}
    assert shown
    report = mem.general_update(Trajectory(task=task, run_id="late"), retrieved_as="early")
    assert set(report.activated_lesson_ids) == shown
    assert mem.runs[-1].run_id == "late" and set(mem.runs[-1].activated) == shown
    # Taken once: a second update under the same ids measures nothing.
    again = mem.general_update(Trajectory(task=task, run_id="late2"), retrieved_as="early")
    assert again.activated_lesson_ids == []


def test_langmem_plus_design_pairs_retrieval_and_update_through_the_memory() -> None:
    env = make_env("gridtool")
    tasks = {t.task_id: t for t in env.tasks()}
    design = LangmemPlus()
    try:
        for tid in ("g01", "g03", "g06"):
            traj = run_episode(env, ScriptedExecutor(seed=0), tasks[tid], Context(), run_id=f"c-{tid}")
            design.general_update(traj)
        # g12 (aggregate) needs the `==` fix that only a filter_select task showed.
        task = tasks["g12"]
        bare = run_episode(env, ScriptedExecutor(seed=0), task, Context())
        ctx = design.general_retrieve(task, run_id="d-g12")
        assert ("==", "=") in {(h.wrong, h.correct) for h in ctx.hints}
        helped = run_episode(env, ScriptedExecutor(seed=0), task, ctx, run_id="d-g12")
        assert tool_errors(helped) < tool_errors(bare)
        design.general_update(helped)
        run = design.memory.runs[-1]
        assert run.run_id == "d-g12" and run.activated  # the shown lessons were measured
        # Without a run id at retrieval, the update is still paired (by the task's latest retrieval).
        ctx2 = design.general_retrieve(task)
        again = run_episode(env, ScriptedExecutor(seed=0), task, ctx2, run_id="d2-g12")
        design.general_update(again)
        assert design.memory.runs[-1].run_id == "d2-g12" and design.memory.runs[-1].activated
    finally:
        design.close()


def test_unclaimed_retrievals_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A frozen memory (static deployment) retrieves without ever updating: what it showed must not pile up."""
    import langmem_plus.memory.facade as memory_module
    from langmem_plus.memory import LearningMemory, Trajectory
    from langmem_plus.records import TaskSpec

    monkeypatch.setattr(memory_module, "SHOWN_UNCLAIMED_MAX", 3)
    mem = LearningMemory.open(tmp_path, namespace=("frozen",))
    task = TaskSpec(task_id="t", goal="count rows", tool="gridtool")
    for i in range(5):
        mem.general_retrieve(Trajectory(task=task, run_id=f"r{i}"))
    assert list(mem._shown) == ["r2", "r3", "r4"]
    mem.close()
