"""Workflows on the real ScienceWorld: slots induced from two train variations' gold trajectories, bound and
recovered on a dev variation, and followed through the memory's advisor. One JVM for the module; dev variations
only (the test fold is for reported figures)."""

from __future__ import annotations


import pytest

from langmem_plus.bench.demos import sciworld_demonstrations, spaced
from langmem_plus.envs.sciworld import SciWorldEnv, SciWorldServer
from langmem_plus.envs.sciworld_gold import gold_demonstrations
from langmem_plus.learning.trajectory_import import from_steps
from langmem_plus.learning.workflows import Demonstration, bind_goal, ground, induce_workflow

TASK = "chemistry-mix-paint-secondary-color"
"""Variations differ in the colour the goal names and in where the paints stand: slots of both kinds."""


@pytest.fixture(scope="module")
def server(sciworld_server: SciWorldServer) -> SciWorldServer:
    return sciworld_server


def two_demos(server: SciWorldServer) -> list[Demonstration]:
    """Gold trajectories of two train variations whose goals name different colours."""
    train = server.fold_seeds(TASK, "train", "easy")
    chosen = [train[0], next(v for v in train if server.describe(TASK, v, "easy") != server.describe(TASK, train[0], "easy"))]
    demos = gold_demonstrations(TASK, 2, variations=chosen, server=server)
    return [from_steps(d.goal, [(s.action, s.observation, s.score) for s in d.steps]) for d in demos]


def test_two_gold_variations_give_a_colour_slot_and_a_dev_variation_binds_and_follows_it(server: SciWorldServer) -> None:
    demos = two_demos(server)
    wf = induce_workflow(demos)
    assert "<A> paint" in wf.goal and "focus on <A> paint" in [s.action for s in wf.steps]
    assert len(set(wf.values["A"])) == 2  # the two colours of the train goals
    assert any(s.progress for s in wf.steps)

    env = SciWorldEnv(TASK, server=server)
    # a dev variation whose colour neither demonstration had
    dev = next(v for v in env.fold_seeds("dev") if not any(c in server.describe(TASK, v, "easy") for c in wf.values["A"]))
    env.reset(f"dev-{dev}")
    goal = env.goal
    binding = bind_goal(wf, goal)
    assert binding is not None and binding["A"] in goal.lower() and binding["A"] not in wf.values["A"]
    done: list[str] = []
    score = 0.0
    for _ in range(40):
        grounded = ground(wf, goal, done, env.valid_actions)
        if grounded is None:
            break
        assert grounded.action in env.valid_actions  # only what the game offers now
        env.step(grounded.action)
        done.append(grounded.action)
        score = max(score, env.evaluate().score)
        if env.done:
            break
    assert score > 0.0  # the workflow carried the new colour's attempt forward


def test_a_step_that_cannot_be_taken_is_reached_or_skipped_on_the_real_game(server: SciWorldServer) -> None:
    wf = induce_workflow(two_demos(server))
    env = SciWorldEnv(TASK, server=server)
    hows = set()
    for seed in list(env.fold_seeds("dev"))[:3]:
        env.reset(f"dev-{seed}")
        grounded = ground(wf, env.goal, [], env.valid_actions)
        assert grounded is not None and grounded.action in env.valid_actions
        hows.add(grounded.how)
    assert hows - {"step"}  # some start room does not offer the first step: recovery took over


def test_the_bench_source_spreads_its_demonstrations_over_the_train_fold(server: SciWorldServer) -> None:
    source = sciworld_demonstrations()
    demos = source(TASK, 3)
    train = server.fold_seeds(TASK, "train", "easy")
    assert [d.source for d in demos] == [f"gold:{TASK}:{v}" for v in spaced(train, 3)]
    assert all(d.steps and d.steps[-1].score is not None and d.steps[-1].score >= 1.0 for d in demos)
