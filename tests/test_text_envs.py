"""Text games written by others (TextWorldExpress, ScienceWorld, TextWorld) behind the Env protocol.

Every channel assertion runs on the real game's own messages. The games need the
optional ``envs`` extra and Java 17; the game tests skip cleanly without them.
Each game runs in one JVM per module (started once), so the file stays fast.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from langmem_plus import LearningMemory
from langmem_plus.envs.base import Env
from langmem_plus.envs.registry import ENV_NAMES, OPTIONAL_ENV_NAMES, make_env, optional_settings
from langmem_plus.envs.textgame import FOLDS, TextGameEnv, Turn, fatal_text, first_line, map_feedback
from langmem_plus.errors import EnvError
from langmem_plus.executors.base import Decision
from langmem_plus.graph import build_executor_referee_graph, run_task
from langmem_plus.records import ErrorEvent, Hint, RunReport, Step, TaskSpec

COOKING_SALT = "test-20003"
"""twx-cooking:easy test seed whose recipe is salt alone (found by playing it)."""
COOKING_SALT_WIN = ["take cookbook", "read cookbook", "take salt", "prepare meal", "eat meal"]
COOKING_FRY = "test-20002"
"""twx-cooking:easy test seed whose recipe says to fry a chicken wing (on the stove)."""
SCI_TASK = "find-living-thing"
SCI_TEST = "test-225"


def _needs(module: str) -> None:
    pytest.importorskip(module)
    if shutil.which("java") is None:
        pytest.skip("the text games need a Java runtime")


@pytest.fixture(scope="module")
def sciworld() -> Iterator[TextGameEnv]:
    _needs("scienceworld")
    env = make_env(f"sciworld:{SCI_TASK}")
    assert isinstance(env, TextGameEnv)
    yield env
    env.close()


def _play(env: TextGameEnv, task_id: str, actions: Sequence[str]) -> list[tuple[str, object]]:
    env.reset(task_id)
    return [env.step(a) for a in actions]


# --------------------------------------------------------------------------- registry (no game needed)


def test_registry_keeps_bundled_names_and_lists_the_optional_ones() -> None:
    assert ENV_NAMES == ("gridtool", "fluxtool")
    assert OPTIONAL_ENV_NAMES == ("twx-cooking", "twx-coin", "twx-twc", "sciworld", "tw-cooking", "tw-treasure")
    assert optional_settings("twx-coin") == ("easy", "medium", "rooms3", "default")
    assert optional_settings("tw-treasure") == ("easy", "medium", "rooms6", "default")


@pytest.mark.parametrize(
    ("name", "needle"),
    [
        ("twx-cooking:hard", "unknown setting 'hard'"),
        ("tw-cooking:rooms3", "unknown setting 'rooms3'"),
        ("twx-chess:easy", "unknown environment"),
        ("nethack", "unknown environment"),
        ("sciworld", "needs a task name"),
    ],
)
def test_unknown_names_and_settings_are_clear_env_errors(name: str, needle: str) -> None:
    with pytest.raises(EnvError, match=needle) as info:
        make_env(name)
    assert "easy" in str(info.value) or "twx-cooking" in str(info.value) or "sciworld:boil" in str(info.value)


def test_missing_game_package_names_the_extra_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "textworld_express", None)  # import now raises ImportError
    env = make_env("twx-coin:easy")  # building validates only; the JVM starts on first use
    with pytest.raises(EnvError, match=r"pip install 'langmem-plus\[envs\]'"):
        env.reset("train-0")
    monkeypatch.setitem(sys.modules, "scienceworld.constants", None)
    with pytest.raises(EnvError, match="Java 17"):
        make_env("sciworld:boil")


def test_missing_java_is_a_clear_env_error(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("textworld_express")
    monkeypatch.setattr("langmem_plus.envs.textgame.shutil.which", lambda _name: None)
    env = make_env("twx-coin:easy")
    with pytest.raises(EnvError, match="no `java` executable.*Java 17"):
        env.tasks()


def test_fatal_text_keeps_the_verb_and_quotes_the_literals() -> None:
    from langmem_plus.capture import fingerprint

    salt = fatal_text("eat salt", "You eat the salt.  It is delicious.")
    pepper = fatal_text("eat red hot pepper", "You eat the red hot pepper.  It is delicious.")
    roast = fatal_text("cook chicken wing in oven", "You roast the chicken wing with the oven.")
    assert "eat 'salt'" in salt and "You eat the salt." in salt
    assert fingerprint(salt) == fingerprint(pepper) != fingerprint(roast)


def test_parenthesised_asides_are_skipped_when_reading_the_answer() -> None:
    assert first_line("(with the knife)\n\nYou can't see any such thing.") == "You can't see any such thing."
    assert first_line("(disconnecting wire)") == "(disconnecting wire)"
    fb = map_feedback("cut apple", Turn("x"), Turn("(with the knife)\nYou can't see any such thing."), ())
    assert fb.hard_failure and fb.error_text == "You can't see any such thing."


def test_a_loss_outranks_a_rejection_line_and_reward_is_the_score_change() -> None:
    fb = map_feedback("focus on fridge", Turn("x", score=0.17), Turn("You can't. You focus.", score=-1.0, lost=True), ())
    assert fb.constraint_failure and not fb.hard_failure
    assert fb.progress == 0.0 and fb.reward == pytest.approx(-1.17)


# --------------------------------------------------------------------------- TextWorldExpress: channels


def test_twx_unknown_command_is_a_hard_failure_with_the_game_text(cooking: TextGameEnv) -> None:
    (obs, fb), = _play(cooking, COOKING_SALT, ["dance wildly"])
    assert fb.hard_failure and not fb.constraint_failure
    assert fb.error_text == obs.strip() == "Unknown action: I'm not sure what you mean."
    assert fb.progress == 0.0 and not cooking.done


def test_twx_impossible_command_is_a_hard_failure(cooking: TextGameEnv) -> None:
    steps = _play(cooking, COOKING_SALT, ["take stove", "open fridge", "open fridge"])
    (_, stove), (_, first), (_, again) = steps
    assert stove.hard_failure and "Unknown action" in stove.error_text
    assert not first.hard_failure and first.error_text == ""
    assert again.hard_failure  # already open: no longer a valid action


def test_twx_scoring_step_is_progress_and_eating_an_ingredient_is_fatal(cooking: TextGameEnv) -> None:
    (_, take), (obs, eat) = _play(cooking, COOKING_SALT, ["take salt", "eat salt"])
    assert take.progress == pytest.approx(1 / 3) and take.reward == pytest.approx(1 / 3)
    assert not (take.hard_failure or take.constraint_failure)
    assert eat.constraint_failure and not eat.hard_failure
    assert eat.error_text.startswith("fatal action: eat 'salt' lost the game") and "You eat the salt." in eat.error_text
    assert cooking.done and not cooking.won and cooking.valid_actions == []
    verdict = cooking.evaluate()
    assert not verdict.passed and verdict.score == pytest.approx(1 / 3) and "eat salt" in verdict.reasons[0]
    with pytest.raises(EnvError, match="game is over"):
        cooking.step("look around")


def test_twx_wrong_appliance_is_fatal(cooking: TextGameEnv) -> None:
    steps = _play(cooking, COOKING_FRY, ["open fridge", "take chicken wing", "cook chicken wing in oven"])
    _, fb = steps[-1]
    assert fb.constraint_failure and "cook 'chicken wing in oven'" in fb.error_text and "roast" in fb.error_text
    assert cooking.done and not cooking.evaluate().passed


def test_twx_winning_run_passes_with_full_score(cooking: TextGameEnv) -> None:
    steps = _play(cooking, COOKING_SALT, COOKING_SALT_WIN)
    progress = [fb.progress for _, fb in steps]  # type: ignore[attr-defined]
    assert progress == sorted(progress) and progress[-1] == 1.0
    assert cooking.done and cooking.won
    verdict = cooking.evaluate()
    assert verdict.passed and verdict.score == 1.0 and verdict.source == "deterministic"


@pytest.mark.parametrize(("game", "task_id", "actions"), [
    ("coin", "train-0", ["take coin"]),
    ("twc", "test-20000", ["take notebook", "put notebook in side table"]),
])
def test_twx_coin_and_twc_settings_map_onto_their_own_parameters(game: str, task_id: str, actions: list[str]) -> None:
    _needs("textworld_express")
    with make_env(f"twx-{game}:easy") as env:  # type: ignore[attr-defined]
        first = env.reset(task_id)
        assert env.goal and env.goal in first
        assert env.state["location"] and env.valid_actions == sorted(env.valid_actions)
        for action in actions:
            env.step(action)
        assert env.won and env.evaluate().passed


# --------------------------------------------------------------------------- TextWorldExpress: tasks, folds, determinism


def test_twx_tasks_are_stable_bounded_and_fold_seeds_are_disjoint(cooking: TextGameEnv) -> None:
    tasks = cooking.tasks()
    assert [t.task_id for t in tasks] == [t.task_id for t in cooking.tasks()]
    assert [t.context["fold"] for t in tasks] == [f for f in FOLDS for _ in range(10)]
    assert all(t.tool == "twx-cooking" and t.family == "twx-cooking:easy" and "cook" in t.goal for t in tasks)
    folds = {f: set(cooking.fold_seeds(f)) for f in FOLDS}
    assert all(len(s) == 1000 for s in folds.values())
    assert not (folds["train"] & folds["dev"] or folds["train"] & folds["test"] or folds["dev"] & folds["test"])
    with pytest.raises(EnvError, match="not in the test fold"):
        cooking.reset("test-17")
    with pytest.raises(EnvError, match="<fold>-<seed>"):
        cooking.reset("seventeen")


def test_twx_reset_step_evaluate_on_seeds_of_every_fold(cooking: TextGameEnv) -> None:
    for fold in FOLDS:
        for seed in cooking.fold_seeds(fold)[:2]:
            first = cooking.reset(f"{fold}-{seed}")
            assert "Goal: You are hungry!" in first and "kitchen" in first
            assert cooking.state == {"location": "kitchen", "inventory": [], "score": 0.0}
            obs, fb = cooking.step("take cookbook")
            assert obs == "You take the cookbook." and not fb.failed
            assert cooking.state["inventory"] == ["cookbook"]  # type: ignore[index]
            verdict = cooking.evaluate()
            assert not verdict.passed and verdict.score == 0.0


def test_twx_same_seed_same_actions_same_observations(cooking: TextGameEnv) -> None:
    actions = ["look around", "open fridge", "take cookbook", "read cookbook", "dance"]
    first = [obs for obs, _ in _play(cooking, COOKING_FRY, actions)]
    _play(cooking, COOKING_SALT, ["take salt"])
    again = [obs for obs, _ in _play(cooking, COOKING_FRY, actions)]
    assert first == again and "chicken wing" in first[3]


def test_twx_tasks_called_mid_game_keeps_the_game() -> None:
    _needs("textworld_express")
    with make_env("twx-coin:medium") as env:  # type: ignore[attr-defined]
        env.reset("dev-10001")
        env.step("look around")
        before = (env.observation, env.state, env.valid_actions)
        assert len(env.tasks()) == 30  # generates 30 games to read their goals, then replays ours
        assert (env.observation, env.state, env.valid_actions) == before
        env.step("take coin")
        assert env.won


# --------------------------------------------------------------------------- ScienceWorld


def test_sciworld_channels_on_real_messages(sciworld: TextGameEnv) -> None:
    steps = _play(
        sciworld,
        SCI_TEST,
        ["dance", "open door to hallway", "teleport to kitchen", "pick up fridge", "focus on fridge"],
    )
    (_, dance), (_, door), (_, tele), (_, fridge), (_, focus) = steps
    assert dance.hard_failure and dance.error_text == "No known action matches that input."
    assert door.hard_failure and door.error_text == "The door is already open."
    assert fridge.hard_failure and fridge.error_text == "The fridge is not moveable."
    assert not tele.failed and tele.reward > 0 and tele.progress == pytest.approx(0.17)
    assert focus.constraint_failure and "focus 'on fridge'" in focus.error_text and focus.progress == 0.0
    assert sciworld.done and not sciworld.evaluate().passed


def test_sciworld_win_passes_and_progress_follows_the_score(sciworld: TextGameEnv) -> None:
    steps = _play(sciworld, SCI_TEST, ["teleport to outside"])
    assert sciworld.state["location"] == "outside"  # type: ignore[index]  # "This outside location is called the outside."
    steps = _play(sciworld, SCI_TEST, [
        "teleport to outside",
        "focus on baby baby wolf",
        "pick up baby baby wolf",
        "teleport to living room",
        "move baby baby wolf in inventory to orange box",
    ])
    progress = [fb.progress for _, fb in steps]  # type: ignore[attr-defined]
    assert progress == sorted(progress) and progress[-1] == 1.0
    assert not any(fb.failed for _, fb in steps)  # type: ignore[attr-defined]
    assert sciworld.won and sciworld.evaluate().passed and sciworld.evaluate().score == 1.0


def test_sciworld_tasks_folds_and_determinism(sciworld: TextGameEnv) -> None:
    tasks = sciworld.tasks()
    assert len(tasks) == 30 and tasks[0].task_id == "train-0" and "living thing" in tasks[0].goal
    assert len({t.goal for t in tasks}) > 1  # the goal names the variation's box
    folds = {f: set(sciworld.fold_seeds(f)) for f in FOLDS}
    assert not (folds["train"] & folds["dev"] or folds["train"] & folds["test"] or folds["dev"] & folds["test"])
    actions = ["look around", "teleport to kitchen", "open fridge", "look at fridge"]
    first = [obs for obs, _ in _play(sciworld, "dev-150", actions)]
    again = [obs for obs, _ in _play(sciworld, "dev-150", actions)]
    assert first == again
    assert sciworld.state["location"] == "kitchen" and "Possible actions" in sciworld.docs()  # type: ignore[index]


# --------------------------------------------------------------------------- TextWorld (tw-make)


@pytest.fixture(scope="module")
def tw_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("textworld")
    return tmp_path_factory.mktemp("tw-games")


def test_tw_cooking_channels_on_real_inform7_messages(tw_cache: Path) -> None:
    from langmem_plus.envs.tw import TwEnv

    with TwEnv("cooking", "easy", cache=tw_cache) as env:  # generates one game (a few seconds)
        steps = _play(env, "test-20001", ["dance", "eat cookbook", "open fridge", "take egg from fridge", "eat egg"])
        (_, dance), (_, book), (_, fridge), (_, egg), (_, eat) = steps
        assert dance.hard_failure and dance.error_text == "That's not a verb I recognise."
        assert book.hard_failure and book.error_text == "That's plainly inedible."
        assert fridge.hard_failure and fridge.error_text == "That's already open."
        assert not egg.failed and egg.progress == pytest.approx(1 / 3) and egg.reward > 0
        assert eat.constraint_failure and "eat 'egg'" in eat.error_text and "You lost" in eat.error_text
        assert env.done and not env.evaluate().passed
        assert env.state["location"] == "Kitchen" and env.state["score"] == pytest.approx(1 / 3, abs=1e-3)  # type: ignore[index]


def test_a_tw_game_appears_in_the_cache_only_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """tw-make compiles in a scratch folder; the cached .z8 (what another process's ``game_file`` tests for) appears
    only once the game is complete, its .json and .ni beside it, and no scratch is left behind."""
    pytest.importorskip("textworld")
    import textworld.generator

    from langmem_plus.envs.tw import TwEnv

    final = tmp_path / "tw-treasure-easy-test-20002.z8"
    seen_while_compiling: list[bool] = []
    compile_game = textworld.generator.compile_game

    def watched(game: object, options: object) -> str:
        out = compile_game(game, options)
        seen_while_compiling.append(final.exists())  # what a second process would find now
        return out

    monkeypatch.setattr(textworld.generator, "compile_game", watched)
    with TwEnv("treasure", "easy", cache=tmp_path) as env:
        assert "Goal: " in env.reset("test-20002")
    assert seen_while_compiling == [False]
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"tw-treasure-easy-test-20002.{ext}" for ext in ("json", "ni", "z8")]


def test_tw_treasure_win_determinism_and_folds(tw_cache: Path) -> None:
    from langmem_plus.envs.tw import TwEnv

    with TwEnv("treasure", "easy", cache=tw_cache) as env:
        first = env.reset("test-20001")
        assert "carrot" in env.goal and env.goal in first
        steps = [env.step(a) for a in ("look", "take unicorn", "take carrot")]
        assert steps[1][1].hard_failure and steps[1][1].error_text == "You can't see any such thing."
        assert env.won and env.evaluate().passed and env.state["inventory"] == ["carrot"]  # type: ignore[index]
        assert env.reset("test-20001") == first  # the cached game replays identically
        assert [env.step(a)[0] for a in ("look", "take unicorn", "take carrot")] == [o for o, _ in steps]
        folds = {f: set(env.fold_seeds(f)) for f in FOLDS}
        assert not (folds["train"] & folds["dev"] or folds["dev"] & folds["test"] or folds["train"] & folds["test"])
        assert len(list(tw_cache.glob("tw-treasure-easy-test-20001.z8"))) == 1


# --------------------------------------------------------------------------- the reference graph


class ValidActionExecutor:
    """Test-only executor: runs a fixed opening, then the first valid action not tried yet.

    It reads the valid actions the graph passes along: ``task.context`` before the
    first step, ``Step.info`` after each step.
    """

    def __init__(self, opening: Sequence[str]) -> None:
        self.opening = list(opening)
        self.seen_valid: list[int] = []

    def act(self, task: TaskSpec, history: Sequence[Step], hints: Sequence[Hint]) -> Decision:
        valid = history[-1].info.get("valid_actions", []) if history else task.context.get("valid_actions", [])
        self.seen_valid.append(len(valid))
        if len(history) < len(self.opening):
            return Decision(kind="command", action=self.opening[len(history)])
        tried = {s.action for s in history}
        fresh = [a for a in valid if a not in tried]
        return Decision(kind="command", action=fresh[0]) if fresh else Decision(kind="done")


def test_graph_run_captures_text_game_failures_on_the_right_channels(cooking: TextGameEnv, tmp_path: Path) -> None:
    memory = LearningMemory.open(tmp_path / "mem", namespace=("tests", "twx"))
    executor = ValidActionExecutor(["dance", "take stove", "take salt", "eat salt"])
    graph = build_executor_referee_graph(memory, cooking, executor, max_steps=10)
    task = next(t for t in cooking.tasks() if t.task_id == COOKING_SALT)
    final = run_task(graph, task, run_id="twx-run-1", max_steps=10)

    assert executor.seen_valid[0] > 0  # the first decision already saw the valid actions
    assert final["task"].context["goal"].startswith("You are hungry!")
    steps: list[Step] = final["steps"]
    assert [s.action for s in steps] == ["dance", "take stove", "take salt", "eat salt"]  # the loss ends the run
    assert steps[2].state_before["inventory"] == [] and steps[2].state_after["inventory"] == ["salt"]  # type: ignore[index]
    events: list[ErrorEvent] = final["events"]
    by_step = {e.step: e for e in events}
    assert by_step[0].channel == by_step[1].channel == "hard"
    assert by_step[0].error_text == "Unknown action: I'm not sure what you mean."
    assert by_step[0].fingerprint_id == by_step[1].fingerprint_id  # same cause, same fingerprint
    assert by_step[3].channel == "constraint" and "eat 'salt'" in by_step[3].error_text
    assert 2 not in by_step  # the scoring step is not a failure
    stored = {e.id for e in memory.store.all("events")}  # type: ignore[attr-defined]
    assert {e.id for e in events} <= stored
    report = final["report"]
    assert not report.passed and report.verdict.source == "deterministic" and report.steps == 4
    memory.close()


def test_text_envs_satisfy_the_env_protocol(cooking: TextGameEnv) -> None:
    assert isinstance(cooking, Env)


def test_bench_env_default_ranges_are_cut_to_a_small_fold() -> None:
    _needs("scienceworld")
    from langmem_plus.bench.env import run_env_bench

    result = run_env_bench(env_name="sciworld:identify-life-stages-1", designs=("no_memory",), repeats=1, max_steps=1)
    assert (result["collect_seeds"], result["seeds"]) == ("0-5", "0-4")  # its folds hold 6 train and 5 test variations
    assert result["curves"]["no_memory"]["success"] and len(result["curves"]["no_memory"]["success"]) == 6 + 5


def _graph_channels(env: TextGameEnv, task_id: str, actions: Sequence[str], memory_path: Path) -> tuple[dict[int, str], RunReport]:
    """A reference-graph run of ``actions`` on a real game: the channel of each step's event, and the run's report."""
    memory = LearningMemory.open(memory_path, namespace=("tests", "graph-text"))
    graph = build_executor_referee_graph(memory, env, ValidActionExecutor(actions), max_steps=len(actions))
    task = next(t for t in env.tasks() if t.task_id == task_id)
    final = run_task(graph, task, run_id=f"graph-{task_id}", max_steps=len(actions))
    assert [s.action for s in final["steps"]] == list(actions)
    stored = {e.id for e in memory.store.all("events")}  # type: ignore[attr-defined]
    assert {e.id for e in final["events"]} <= stored
    memory.close()
    return {e.step: e.channel for e in final["events"]}, final["report"]


def test_sciworld_runs_through_the_reference_graph_on_the_right_channels(sciworld: TextGameEnv, tmp_path: Path) -> None:
    channels, report = _graph_channels(sciworld, SCI_TEST, ["dance", "teleport to kitchen", "focus on fridge"], tmp_path / "m")
    assert channels == {0: "hard", 2: "constraint"}  # the scoring teleport is no failure; the wrong focus ends it
    assert not report.passed and report.verdict.source == "deterministic" and report.steps == 3


def test_textworld_runs_through_the_reference_graph_on_the_right_channels(tw_cache: Path, tmp_path: Path) -> None:
    from langmem_plus.envs.tw import TwEnv

    with TwEnv("cooking", "easy", cache=tw_cache) as env:
        channels, report = _graph_channels(env, "test-20001", ["dance", "open fridge", "take egg from fridge", "eat egg"],
                                           tmp_path / "m")
    assert channels == {0: "hard", 1: "hard", 3: "constraint"}  # the egg taken scores; eating it loses
    assert not report.passed and report.verdict.source == "deterministic" and report.steps == 4
