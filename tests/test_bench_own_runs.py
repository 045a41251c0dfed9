"""``bench env --own-runs N``: each design learns from its own runs of a task's train variations (``bench.demos``)."""

from __future__ import annotations

import pytest

from langmem_plus.bench.demos import AwmWorkflows, DemoLangmemPlus, LiteralReplay, learn_own, run_demo_bench
from langmem_plus.errors import EnvError
from langmem_plus.memory import Trajectory
from langmem_plus.records import Feedback, Step, TaskSpec, Verdict


def own_run(marks: list[tuple[str, float | None]], *, run_id: str = "r0-train-3") -> Trajectory:
    task = TaskSpec(task_id="train-3", goal="put the red key in the box", family="fetch",
                    context={"goal": "put the red key in the box"})
    steps = [Step(index=i, action=a, observation="ok", feedback=Feedback(progress=p)) for i, (a, p) in enumerate(marks)]
    return Trajectory(task=task, steps=steps, verdict=Verdict(passed=False, score=0.0), run_id=run_id)


def test_a_literal_design_learns_the_part_of_its_own_run_that_made_progress_and_nothing_from_one_that_made_none() -> None:
    replay, awm = LiteralReplay(), AwmWorkflows()
    for design in (replay, awm):
        learn_own(design, own_run([("look", 0.0), ("take red key", 0.5), ("put red key in box", 1.0), ("look", 1.0)]),
                  min_progress=1.0)
        learn_own(design, own_run([("look", 0.0), ("take red key", 0.5)], run_id="r0-train-4"), min_progress=1.0)
    [(family, demo, _)] = replay.demos
    assert family == "fetch" and [s.action for s in demo.steps] == ["look", "take red key", "put red key in box"]
    assert demo.goal == "put the red key in the box" and demo.source == "r0-train-3"
    assert awm.workflows["fetch"] == ["look", "take red key", "put red key in box"]


def test_langmem_plus_learns_its_own_runs_only_through_the_end_of_its_runs() -> None:
    design = DemoLangmemPlus(delivery="triggered")
    try:
        learn_own(design, own_run([("look", 0.0), ("take red key", 0.5), ("put red key in box", 1.0)]), min_progress=1.0)
        assert len(design.memory.runs) == 1  # the run was folded in, as any of its runs
        enabled = design.memory.config.workflows.workflow_own_runs
        assert bool(design.memory.workflows_for("put the blue cup in the box", family="fetch")) == enabled
    finally:
        design.close()


def test_the_bench_takes_demonstrations_or_own_runs_not_both_nor_neither() -> None:
    common = dict(env_base="twx-cooking", tasks=["easy"], demos=0, variations=1, fold="dev", repeats=1, max_steps=5,
                  designs=["no_memory"], seed=0, executor_factory=lambda s: None)
    with pytest.raises(EnvError, match="one of them"):
        run_demo_bench(**common, source=None, own_runs=0)  # type: ignore[arg-type]
    with pytest.raises(EnvError, match="one of them"):
        run_demo_bench(**common, source=lambda task, n: [], own_runs=2)  # type: ignore[arg-type]
