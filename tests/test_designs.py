"""Memory designs behind one interface, and their two-phase evaluation."""

from __future__ import annotations

from typing import Any

import pytest

from langmem_plus.bench.designs import (
    DESIGN_NAMES,
    Context,
    MemoryDesign,
    evaluate_designs,
    make_design,
    run_episode,
    split_tasks,
)
from langmem_plus.bench.designs.base import error_fixes, tool_errors
from langmem_plus.bench.designs.baselines import VOTE_INITIAL, VoteMemory
from langmem_plus.bench.designs.evaluation import mean_se
from langmem_plus.envs.registry import make_env
from langmem_plus.executors.scripted import ScriptedExecutor
from langmem_plus.memory import Trajectory
from langmem_plus.records import TaskSpec, Verdict
from langmem_plus.rewrite import apply_rewrite

MEMORY_DESIGNS = [n for n in DESIGN_NAMES if n != "no_memory"]


def _traj(tool: str, task_id: str, seed: int = 0) -> Trajectory:
    env = make_env(tool)
    task = next(t for t in env.tasks() if t.task_id == task_id)
    return run_episode(env, ScriptedExecutor(seed=seed), task, Context(), run_id=f"t-{task_id}")


def test_design_names_are_the_issue_names() -> None:
    assert DESIGN_NAMES == ("no_memory", "trajectory_retrieval", "flat_vector", "vote_memory", "langmem_plus")
    with pytest.raises(ValueError, match="unknown memory design"):
        make_design("mem0")


def test_split_tasks_is_disjoint_and_covers_every_family() -> None:
    tasks = make_env("gridtool").tasks()
    col, dep = split_tasks(tasks)
    assert not {t.task_id for t in col} & {t.task_id for t in dep}
    assert len(col) + len(dep) == len(tasks)
    assert {t.family for t in col} == {t.family for t in dep} == {t.family for t in tasks}
    small_col, small_dep = split_tasks(tasks, per_family=2)
    assert len(small_col) == len(small_dep) == 3


def test_error_fixes_turn_the_failed_action_into_its_fix() -> None:
    traj = _traj("gridtool", "g01")
    assert tool_errors(traj) > 0 and traj.verdict is not None and traj.verdict.passed
    fixes = error_fixes(traj)
    assert fixes
    for fix in fixes:
        rewritten = apply_rewrite(fix.failed, fix.wrong, fix.correct)
        assert rewritten is not None and rewritten != fix.failed


@pytest.mark.parametrize("name", DESIGN_NAMES)
def test_every_design_has_the_two_method_interface(name: str) -> None:
    design = make_design(name)
    try:
        assert isinstance(design, MemoryDesign)
        task = make_env("gridtool").tasks()[1]
        empty = design.general_retrieve(task)
        assert empty.hints == () and empty.tokens == 0
        design.general_update(_traj("gridtool", "g01"))
        design.general_update(_traj("gridtool", "g03"))
        ctx = design.general_retrieve(task)
        if name == "no_memory":
            assert ctx == Context()
        else:
            assert ctx.hints and ctx.tokens > 0, name
            assert all(h.wrong and h.correct is not None for h in ctx.hints)
            # Memory of one tool is not handed to another tool's task.
            other = design.general_retrieve(make_env("fluxtool").tasks()[1])
            assert other.hints == (), name
    finally:
        design.close()


@pytest.mark.parametrize("name", MEMORY_DESIGNS)
def test_each_memory_design_cuts_errors_on_a_sibling_task(name: str) -> None:
    env = make_env("gridtool")
    design = make_design(name)
    try:
        for tid in ("g01", "g03", "g05"):
            design.general_update(_traj("gridtool", tid))
        task = next(t for t in env.tasks() if t.task_id == "g02")
        bare = run_episode(env, ScriptedExecutor(seed=0), task, Context())
        helped = run_episode(env, ScriptedExecutor(seed=0), task, design.general_retrieve(task))
        assert tool_errors(helped) < tool_errors(bare), name
    finally:
        design.close()


def test_trajectory_retrieval_needs_a_similar_task() -> None:
    design = make_design("trajectory_retrieval")
    design.general_update(_traj("gridtool", "g01"))
    unrelated = TaskSpec(task_id="x", goal="zebra quantum umbrella", tool="gridtool", family="filter_select")
    assert design.general_retrieve(unrelated) == Context()


def test_vote_memory_drops_an_insight_after_a_failed_run() -> None:
    design = VoteMemory()
    traj = _traj("gridtool", "g01")
    design.general_update(traj)
    shown = design.general_retrieve(traj.task)
    assert shown.hints and all(h.score == VOTE_INITIAL for h in shown.hints)
    failed = Trajectory(task=traj.task, steps=[], verdict=Verdict(passed=False), run_id="fail")
    design.general_update(failed)  # -2 on every shown insight: 2 -> 0 -> dropped
    assert design.general_retrieve(traj.task) == Context()


def test_vote_memory_upvotes_on_success() -> None:
    design = VoteMemory()
    traj = _traj("gridtool", "g01")
    design.general_update(traj)
    design.general_retrieve(traj.task)
    design.general_update(Trajectory(task=traj.task, steps=[], verdict=Verdict(passed=True), run_id="ok"))
    assert all(h.score == VOTE_INITIAL + 1 for h in design.general_retrieve(traj.task).hints)


def test_mean_se() -> None:
    assert mean_se([]) == (0.0, 0.0)
    assert mean_se([4.0]) == (4.0, 0.0)
    assert mean_se([1.0, 3.0]) == (2.0, 1.0)


def test_two_phase_evaluation_small_and_reproducible() -> None:
    kwargs: dict[str, Any] = {"designs": ("no_memory", "vote_memory"), "tools": ("gridtool",), "repeats": 2, "seed": 3, "per_family": 2}
    first = evaluate_designs(**kwargs)
    assert evaluate_designs(**kwargs) == first
    for d in first.values():
        assert {"pass_rate", "tool_errors", "steps", "context_tokens_per_task", "static", "dynamic", "collection"} <= set(d)
        assert isinstance(d["tool_errors"], int) and isinstance(d["steps"], int)
        assert d["repeats"] == 2 and d["tasks_per_repeat"] == 3
        assert set(d["static"]["tool_errors"]) == {"mean", "se"}
        assert len(d["dynamic_cumulative_errors"]) == 3
    assert first["no_memory"]["context_tokens_per_task"] == 0
    assert first["vote_memory"]["context_tokens_per_task"] > 0
    # Collection is the same memory-free pass for every design.
    assert first["no_memory"]["collection"] == first["vote_memory"]["collection"]
    assert first["vote_memory"]["tool_errors"] < first["no_memory"]["tool_errors"]
    with pytest.raises(ValueError):
        evaluate_designs(repeats=0)
