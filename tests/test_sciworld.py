"""ScienceWorld beyond one task: every task by name, many tasks in one env, simplifications, gold demonstrations.

The game tests play the real game in one JVM for the module (``server``); they skip
cleanly without the ``envs`` extra or Java.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from langmem_plus.envs.base import Env
from langmem_plus.envs.registry import make_env
from langmem_plus.envs.sciworld import (
    SciWorldEnv,
    SciWorldServer,
    parse_simplifications,
    task_names,
)
from langmem_plus.envs.sciworld_gold import DemoStep, _replay_gold, gold_demonstrations
from langmem_plus.envs.sciworld_suite import SciWorldSuiteEnv
from langmem_plus.envs.textgame import FOLDS, Turn
from langmem_plus.errors import EnvError

FIND_THING = "find-non-living-thing"
"""A short task whose gold paths reach the full score under ``easy``."""
FIND_LIVING = "find-living-thing"
TEST_VARIATION = "test-225"
"""The first test variation of both find tasks."""


def _names() -> list[str]:
    pytest.importorskip("scienceworld")
    return task_names()


@pytest.fixture(scope="module")
def server(sciworld_server: SciWorldServer) -> SciWorldServer:
    return sciworld_server


# --------------------------------------------------------------------------- names (no JVM)


def test_every_task_name_makes_an_env_and_all_makes_one_over_every_task() -> None:
    names = _names()
    assert len(names) == 30
    for name in names:
        env = make_env(f"sciworld:{name}")
        assert isinstance(env, SciWorldEnv) and env.family == name and env.simplifications == "easy"
    every = make_env("sciworld:all")
    assert isinstance(every, SciWorldSuiteEnv) and every.task_names == tuple(names) and isinstance(every, Env)
    pair = make_env("sciworld:boil,melt:none")
    assert isinstance(pair, SciWorldSuiteEnv) and pair.task_names == ("boil", "melt") and pair.simplifications == ""
    assert SciWorldSuiteEnv(["melt"]).task_names == ("melt",)


def test_simplifications_are_named_without_regard_to_case() -> None:
    _names()
    assert parse_simplifications("none") == parse_simplifications("") == ""
    assert parse_simplifications("easy") == "easy"
    assert parse_simplifications("teleportaction,OPENDOORS") == "teleportAction,openDoors"
    assert make_env("sciworld:boil:teleportaction").simplifications == "teleportAction"  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("name", "needle"),
    [
        ("sciworld:bogus", "unknown ScienceWorld task 'bogus'; choose one of: boil, melt"),
        ("sciworld:boil,bogus", "unknown ScienceWorld task 'bogus'; choose one of: boil, melt"),
        ("sciworld:boil:fast", "unknown ScienceWorld simplification.*'fast'.*openDoors"),
        ("sciworld::none", "needs a task name"),
    ],
)
def test_unknown_tasks_and_simplifications_are_clear_env_errors(name: str, needle: str) -> None:
    _names()
    with pytest.raises(EnvError, match=needle) as info:
        make_env(name)
    assert name == "sciworld::none" or "mendelian-genetics-unknown-plant" in str(info.value) or "easy" in str(info.value)
    with pytest.raises(EnvError, match="distinct"):
        SciWorldSuiteEnv(["boil", "boil"])


def test_a_number_after_a_gold_command_answers_it_and_is_never_a_command() -> None:
    class Scripted(SciWorldServer):
        """Answers ``move seed`` with an ambiguity (``look around`` with none); records what it was asked."""

        def __init__(self) -> None:
            super().__init__()
            self.asked: list[tuple[str, str]] = []

        def gold_game(self, task: str, variation: int, simplifications: str) -> tuple[Turn, list[str]]:
            return Turn("start", goal="grow"), ["move seed", "1", "look around", "0", "wait", "wait"]

        def act(self, action: str, answer: str = "0", *, full: bool = True) -> Turn:
            self.asked.append((action, answer))
            info = {"ambiguity": "seed 1", "answer": answer} if action == "move seed" else {}
            return Turn(f"did {action}", score=0.5 * len(self.asked), won=len(self.asked) == 3, info=info)

    jvm = Scripted()
    demo = _replay_gold(jvm, "grow-plant", 0, "easy")
    assert jvm.asked == [("move seed", "1"), ("look around", "0"), ("wait", "0")]  # no "0" command; stops once won
    assert demo.steps[0] == DemoStep("move seed", "did move seed", 0.5) and demo.goal == "grow" and demo.won


# --------------------------------------------------------------------------- the game, one JVM


def test_gold_demonstrations_come_from_train_variations_and_replay_for_real(server: SciWorldServer) -> None:
    demos = gold_demonstrations(FIND_THING, 2, server=server)
    train = server.fold_seeds(FIND_THING, "train", "easy")
    assert [d.variation for d in demos] == list(train[:2])
    assert {d.variation for d in demos} <= set(train)
    for demo in demos:
        assert demo.task == FIND_THING and "non-living thing" in demo.goal and demo.simplifications == "easy"
        assert demo.won and demo.final_score == 1.0
        scores = [s.score for s in demo.steps]
        assert scores == sorted(scores) and 0.0 <= scores[0] < 1.0
    demo = demos[0]
    env = SciWorldEnv(FIND_THING, server=server)
    env.reset(f"train-{demo.variation}")
    assert [env.step(s.action)[0] for s in demo.steps] == [s.observation for s in demo.steps]
    assert env.won and env.goal == demo.goal


def test_gold_demonstrations_refuse_dev_and_test_variations(server: SciWorldServer) -> None:
    test = server.fold_seeds(FIND_THING, "test", "easy")
    dev = server.fold_seeds(FIND_THING, "dev", "easy")
    for outside in (test[0], dev[0]):
        with pytest.raises(EnvError, match="not train variations"):
            gold_demonstrations(FIND_THING, 1, variations=[outside], server=server)
    assert gold_demonstrations(FIND_THING, 0, server=server) == []
    with pytest.raises(EnvError, match="unknown ScienceWorld task"):
        gold_demonstrations("bogus", 1, server=server)


def test_simplification_none_is_honoured(server: SciWorldServer) -> None:
    full = SciWorldEnv(FIND_LIVING, simplifications="none", server=server)
    opening = full.reset(TEST_VARIATION)
    assert "A door to the hallway (that is closed)" in opening and "simplifications: none" in full.docs()
    assert full.step("teleport to kitchen")[1].error_text == "No known action matches that input."
    easy = SciWorldEnv(FIND_LIVING, server=server)
    assert "A door to the hallway (that is open)" in easy.reset(TEST_VARIATION)
    assert not easy.step("teleport to kitchen")[1].failed


def test_suite_ids_carry_the_task_and_reset_switches_the_task(server: SciWorldServer) -> None:
    env = SciWorldSuiteEnv([FIND_THING, FIND_LIVING, "lifespan-longest-lived"], tasks_per_fold=1, server=server)
    with pytest.raises(EnvError, match="task_seeds"):
        env.fold_seeds("test")
    env.reset(f"{FIND_LIVING}/{TEST_VARIATION}")
    assert env.family == FIND_LIVING and "find a(n) living thing" in env.goal
    env.step("teleport to kitchen")
    env.task_seeds("lifespan-longest-lived", "train")  # loads that task: the game in progress is replayed
    assert env.state["location"] == "kitchen" and env.step("look around")[0].startswith("This room is called the kitchen")  # type: ignore[index]
    env.reset(f"{FIND_THING}/{TEST_VARIATION}")
    assert env.family == FIND_THING and "non-living thing" in env.goal and env.state["location"] == "art studio"  # type: ignore[index]
    specs = env.tasks()
    assert [s.task_id.split("/")[0] for s in specs] == [t for t in env.task_names for _ in FOLDS]
    assert all(s.family == env.family_of(s.task_id) == s.context["task"] for s in specs)
    assert env.state["location"] == "art studio"  # type: ignore[index]  # listing replays the game in progress
    with pytest.raises(EnvError, match="not '<task>/<fold>-<variation>' with task one of: find-non-living-thing"):
        env.reset("boil/test-21")
    with pytest.raises(EnvError, match="seed 21 is not in the test fold"):
        env.reset(f"{FIND_THING}/test-21")


def _first_valid(actions: Sequence[str]) -> str:
    return "look around" if "look around" in actions else actions[0]


@pytest.mark.slow
def test_every_task_resets_and_takes_a_valid_action_in_one_jvm(server: SciWorldServer) -> None:
    env = SciWorldSuiteEnv(server=server)
    ids = {fold: env.fold_task_ids(fold) for fold in FOLDS}
    every = [i for fold in FOLDS for i in ids[fold]]
    assert len(every) == len(set(every)) and {env.family_of(i) for i in ids["test"]} == set(task_names())
    for task in env.task_names:
        first = next(i for i in ids["train"] if env.family_of(i) == task)
        env.reset(first)
        observation, feedback = env.step(_first_valid(env.valid_actions))
        assert env.family == task and observation and not feedback.failed, task
