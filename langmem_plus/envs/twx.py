"""TextWorldExpress games (cooking, coin, twc) as environments (design.md §11).

Names are ``twx-cooking``, ``twx-coin`` and ``twx-twc``, each with a named
setting chosen as ``NAME:SETTING`` (``make_env("twx-cooking:easy")``); the plain
name means ``default``, the game's own generation defaults. The settings map onto
each game's own parameters (``TextWorldExpressEnv.getGenerationProperties``):

============  ===============================  ==============================  ===============================
setting       cooking (cookingworld)           coin                            twc
============  ===============================  ==============================  ===============================
``easy``      1 location, 1 ingredient,        1 location, 0 distractors,      1 location, 1 item to put away,
              0 distractors, no doors,         no doors, no inventory limit    no doors, no inventory limit
              no inventory limit
``medium``    1 location, 2 ingredients,       1 location, 5 distractors,      1 location, 2 items to put away,
              5 distractors                    no doors                        no doors
``rooms3``    3 locations, 3 ingredients,      3 locations, 5 distractors,     3 locations, 3 items to put away,
              5 distractors, doors             doors                           doors
``default``   the game's defaults              the game's defaults             the game's defaults
============  ===============================  ==============================  ===============================

Coin has no ingredients, so its settings vary only locations, distractors and
doors; twc has no distractor parameter and its items to put away play the role
of ingredients. No setting limits the inventory.

Seeds and folds are the game's own: train 0..999, dev 10000..10999, test
20000..20999; a task id is ``"<fold>-<seed>"`` such as ``"test-20017"``.

Example (needs the ``envs`` extra and Java 17):
    >>> env = TwxEnv("cooking", "easy")                       # doctest: +SKIP
    >>> print(env.reset("test-20003").splitlines()[1])        # doctest: +SKIP
    Goal: You are hungry! Let's cook a delicious meal. ...
    >>> env.step("take salt")[1].progress                     # doctest: +SKIP
    0.3333333333333333
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from langmem_plus.envs.textgame import (
    GAME_STEP_LIMIT,
    TASKS_PER_FOLD,
    TextGameEnv,
    Turn,
    parse_inventory,
    require_java,
    require_module,
)
from langmem_plus.errors import EnvError

PACKAGE = "textworld-express"
"""The PyPI package behind these environments."""

GAMES: Mapping[str, str] = {"cooking": "cookingworld", "coin": "coin", "twc": "twc"}
"""Our game name -> TextWorldExpress game name."""

_NO_LIMITS = {"includeDoors": 0, "limitInventorySize": 0}
SETTINGS: Mapping[str, Mapping[str, Mapping[str, int]]] = {
    "cooking": {
        "easy": {"numLocations": 1, "numIngredients": 1, "numDistractorItems": 0, **_NO_LIMITS},
        "medium": {"numLocations": 1, "numIngredients": 2, "numDistractorItems": 5, **_NO_LIMITS},
        "rooms3": {"numLocations": 3, "numIngredients": 3, "numDistractorItems": 5, "includeDoors": 1, "limitInventorySize": 0},
        "default": {},
    },
    "coin": {
        "easy": {"numLocations": 1, "numDistractorItems": 0, **_NO_LIMITS},
        "medium": {"numLocations": 1, "numDistractorItems": 5, **_NO_LIMITS},
        "rooms3": {"numLocations": 3, "numDistractorItems": 5, "includeDoors": 1, "limitInventorySize": 0},
        "default": {},
    },
    "twc": {
        "easy": {"numLocations": 1, "numItemsToPutAway": 1, **_NO_LIMITS},
        "medium": {"numLocations": 1, "numItemsToPutAway": 2, **_NO_LIMITS},
        "rooms3": {"numLocations": 3, "numItemsToPutAway": 3, "includeDoors": 1, "limitInventorySize": 0},
        "default": {},
    },
}
"""Game -> setting name -> generation parameters (an empty mapping keeps the game's defaults)."""
DEFAULT_SETTING = "default"
"""Setting used when a name carries none."""

REJECTIONS: tuple[str, ...] = ()
"""Rejection lines of TextWorldExpress beyond ``textgame.COMMON_REJECTIONS``: none. Its own
lines (read from its jar: "Unknown action", "That is not a command that I recognize",
"That is already open/closed", "You can't", "You are unable to") are all common ones. Any
command outside the valid actions, impossible ones included, gets "Unknown action: I'm not
sure what you mean."."""

HELP = (
    "TextWorldExpress {game}: a text game. Type short commands such as 'look around', "
    "'inventory', 'examine X', 'take X', 'put X in Y', 'open X', 'move north'{extra}. "
    "Only the currently valid actions are understood (docs topic 'actions' lists them); "
    "anything else answers \"Unknown action\". The game's own help prints the task:\n{task}"
)
"""Help text; TextWorldExpress's `help` command only prints the task description."""
HELP_EXTRA: Mapping[str, str] = {
    "cooking": ", 'read cookbook', 'slice X', 'cook X in stove', 'prepare meal', 'eat meal'",
    "coin": "",
    "twc": "",
}
"""Game-specific command examples for the help text."""

_LOCATION = re.compile(r"You are in the ([^.]+)\.")


def game_params(game: str, setting: str) -> str:
    """The ``gameParams`` string of a setting, e.g. ``"numLocations=1,numIngredients=1,..."``.

    Raises:
        EnvError: unknown game or setting.
    """
    if game not in SETTINGS:
        raise EnvError(f"unknown TextWorldExpress game {game!r}; choose one of: {', '.join(SETTINGS)}")
    params = SETTINGS[game].get(setting)
    if params is None:
        raise EnvError(f"unknown setting {setting!r} for twx-{game}; choose one of: {', '.join(SETTINGS[game])}")
    return ",".join(f"{k}={v}" for k, v in params.items())


class GoldGame(NamedTuple):
    """A train game's gold action sequence, replayed: its seed, goal, and each step as (action, observation, score)."""

    seed: int
    goal: str
    steps: tuple[tuple[str, str, float], ...]


class TwxBackend:
    """One TextWorldExpress JVM, loaded with one game and setting, reused across resets."""

    rejections: Sequence[str] = REJECTIONS

    def __init__(self, game: str, setting: str) -> None:
        self.game, self.setting = game, setting
        self.params = game_params(game, setting)
        self._env: Any = None
        self._task = ""

    def _server(self) -> Any:
        if self._env is None:
            module = require_module("textworld_express", PACKAGE)
            require_java("TextWorldExpress")
            try:
                env = module.TextWorldExpressEnv(envStepLimit=GAME_STEP_LIMIT)
                env.load(GAMES[self.game], self.params)
            except Exception as exc:  # noqa: BLE001 - a JVM that fails to start is an install problem
                raise EnvError(f"TextWorldExpress could not start ({type(exc).__name__}: {exc}); needs a Java 17 runtime") from exc
            self._env = env
        return self._env

    def fold_seeds(self, fold: str) -> Sequence[int]:
        server = self._server()
        getter = {"train": server.getValidSeedsTrain, "dev": server.getValidSeedsDev, "test": server.getValidSeedsTest}[fold]
        return [int(s) for s in getter()]

    def new_game(self, fold: str, seed: int) -> Turn:
        _, infos = self._server().reset(seed=seed, gameFold=fold)
        self._task = str(infos.get("taskDescription", ""))
        return self._turn(infos, str(infos["observation"]))

    def act(self, action: str) -> Turn:
        observation, _, _, infos = self._server().step(action)
        return self._turn(infos, str(observation))

    def gold_games(self, seeds: Sequence[int]) -> list[GoldGame]:
        """The gold action sequences of the train games ``seeds``, replayed so observations and scores are real.

        Raises:
            EnvError: a seed that is not a train seed (the dev and test games stay unseen).
        """
        server = self._server()
        train = set(self.fold_seeds("train"))
        outside = [s for s in seeds if s not in train]
        if outside:
            raise EnvError(f"seeds {outside} are not train seeds of twx-{self.game}")
        out: list[GoldGame] = []
        for seed in seeds:
            _, infos = server.reset(seed=seed, gameFold="train", generateGoldPath=True)
            goal = str(infos.get("taskDescription", ""))
            steps: list[tuple[str, str, float]] = []
            for action in server.getGoldActionSequence():
                if action == "look around" and not steps:
                    continue  # the sequence opens with the look the reset already answered
                turn = self.act(str(action))
                steps.append((str(action), turn.observation, turn.score))
                if turn.won or turn.lost:
                    break
            out.append(GoldGame(seed, goal, tuple(steps)))
        self._task = ""
        return out

    def help_text(self) -> str:
        return HELP.format(game=self.game, extra=HELP_EXTRA.get(self.game, ""), task=self._task or "(reset to see the task)")

    def close(self) -> None:
        if self._env is not None:
            self._env.close()
            self._env = None

    def _turn(self, infos: Mapping[str, Any], observation: str) -> Turn:
        location = _LOCATION.search(str(infos.get("look", "")))
        return Turn(
            observation=observation,
            score=float(infos.get("score", 0.0)),
            won=bool(infos.get("tasksuccess")),
            lost=bool(infos.get("taskfailure")),
            valid_actions=tuple(sorted(str(a) for a in infos.get("validActions", ()))),
            location=location.group(1) if location else "",
            inventory=parse_inventory(str(infos.get("inventory", "")), "Inventory:"),
            goal=self._task,
        )


class TwxEnv(TextGameEnv):
    """A TextWorldExpress game (``cooking``, ``coin`` or ``twc``) at one named setting.

    One JVM per instance, started at the first ``tasks()`` or ``reset()`` and reused;
    call ``close()`` (or use it as a context manager) to stop it early.

    Example:
        >>> with TwxEnv("coin", "easy") as env:                   # doctest: +SKIP
        ...     _ = env.reset("train-0"); env.step("take coin")[1].reward
        1.0
    """

    domain = "text-game"

    def __init__(self, game: str, setting: str = DEFAULT_SETTING, *, tasks_per_fold: int = TASKS_PER_FOLD) -> None:
        backend = TwxBackend(game, setting)
        super().__init__(backend, tasks_per_fold=tasks_per_fold)
        self.name = f"twx-{game}"
        self.family = f"twx-{game}:{setting}"
        self.setting = setting


__all__ = ["DEFAULT_SETTING", "GAMES", "GoldGame", "REJECTIONS", "SETTINGS", "TwxBackend", "TwxEnv", "game_params"]
