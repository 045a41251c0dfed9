"""TextWorld games generated with tw-make (cooking, treasure hunter) as environments (design.md §11).

``make_env("tw-cooking:easy")`` and ``make_env("tw-treasure:easy")``. TextWorld
compiles each game with Inform 7 (a few seconds a game), so a game is generated the
first time its seed is reset and cached as a ``.z8`` file under ``cache_dir``
(``$LANGMEM_PLUS_TW_CACHE``, else ``<tmp>/langmem_plus_textworld``); later resets
only load it. A game is compiled in a scratch folder and moved into the cache whole
(``publish_game``), so processes sharing a cache never load a half-written one. The
games run in Jericho (a Z-machine; no JVM).

Settings (the challenges' own parameters):

============  ================================================  =======================
setting       tw-cooking                                        tw-treasure (level)
============  ================================================  =======================
``easy``      1 location, recipe of 1, 1 ingredient to take     level 1 (5 rooms)
``medium``    1 location, recipe of 2, 2 to take, cook, cut     level 5
``rooms6``    6 locations, recipe of 2, 2 to take, open doors   level 15 (10 rooms)
``default``   tw-make's defaults (1 location, recipe of 1)      level 1
============  ================================================  =======================

Folds: seeds 0..999 are train, 10000..10999 dev, 20000..20999 test (the convention
of TextWorldExpress). tw-cooking also draws its food from the challenge's own
``train``/``valid``/``test`` split of that fold; treasure hunter has no split, so
its folds differ only by seed. Generating every listed game to read its objective
would take minutes, so ``tasks()`` gives the challenge's generic goal; the game's
own objective is ``env.goal`` after a reset.

Example (needs ``pip install textworld``; Linux or macOS):
    >>> env = TwEnv("treasure", "easy")                  # doctest: +SKIP
    >>> _ = env.reset("test-20001"); env.goal            # doctest: +SKIP
    "It's time to explore the amazing world of TextWorld! Recover the carrot ..."
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from langmem_plus.envs.textgame import TASKS_PER_FOLD, TextGameEnv, Turn, parse_inventory, require_module
from langmem_plus.errors import EnvError

PACKAGE = "textworld"
"""The PyPI package behind these environments (it builds Jericho from source: needs gcc and make)."""
INSTALL = "install the optional extra with `pip install 'langmem-plus[textworld]'` (builds Jericho from source: needs gcc and make)"
"""What to install when TextWorld is missing."""
CACHE_ENV = "LANGMEM_PLUS_TW_CACHE"
"""Environment variable naming the directory of generated games."""

CHALLENGES: Mapping[str, str] = {"cooking": "tw-cooking", "treasure": "tw-treasure_hunter"}
"""Our game name -> TextWorld challenge name."""
_COOK = {"recipe": 1, "take": 1, "go": 1, "open": False, "cook": False, "cut": False, "drop": False, "recipe_seed": 0}
SETTINGS: Mapping[str, Mapping[str, Mapping[str, Any]]] = {
    "cooking": {
        "easy": _COOK,
        "medium": {**_COOK, "recipe": 2, "take": 2, "cook": True, "cut": True},
        "rooms6": {**_COOK, "recipe": 2, "take": 2, "go": 6, "open": True},
        "default": {**_COOK, "take": 0},
    },
    "treasure": {"easy": {"level": 1}, "medium": {"level": 5}, "rooms6": {"level": 15}, "default": {"level": 1}},
}
"""Game -> setting -> the challenge's settings (what tw-make's flags set)."""
FOLD_SEEDS: Mapping[str, range] = {"train": range(0, 1000), "dev": range(10000, 11000), "test": range(20000, 21000)}
"""Seeds of each fold."""
COOKING_SPLIT: Mapping[str, str] = {"train": "train", "dev": "valid", "test": "test"}
"""Fold -> tw-cooking's own food split."""
GENERIC_GOALS: Mapping[str, str] = {
    "cooking": "You are hungry! Let's cook a delicious meal. Check the cookbook in the kitchen for the recipe. "
    "Once done, enjoy your meal!",
    "treasure": "Explore the world and recover the object named in the game's objective.",
}
"""Goal text ``tasks()`` lists (the cooking objective is the same in every game)."""

REJECTIONS: tuple[str, ...] = (
    r"^That's not a verb I recognise",
    r"^I didn't understand",
    r"^I only understood you as far as",
    r"^You must name something more substantial",
    r"^That's plainly inedible",
    r"^You couldn't pay me to eat",
    r"^It isn't something you can",
    r"^That's (already|fixed|hardly)",
    r"\bis (already here|fixed in place)\b",
    r"^You (aren't|don't|haven't|already)",
    r"^That isn't available",
    r"^There is no\b",
)
"""Inform 7 library refusals seen in TextWorld games (random play and deliberate bad commands),
beyond ``textgame.COMMON_REJECTIONS`` (which holds "You can't ..." and "That's not something you can")."""

_ROOM = re.compile(r"-=\s*(.+?)\s*=-")
_PROMPT = re.compile(r"\n\s*>.*\Z", re.DOTALL)
_TRAILING = re.compile(r"[ \t]+\n")
_BLANKS = re.compile(r"\n{3,}")


def cache_dir(path: str | os.PathLike[str] | None = None) -> Path:
    """The directory of generated games: ``path``, ``$LANGMEM_PLUS_TW_CACHE``, or one under the temp dir."""
    chosen = path or os.environ.get(CACHE_ENV) or Path(tempfile.gettempdir()) / "langmem_plus_textworld"
    return Path(chosen)


def publish_game(built: Path, path: Path) -> None:
    """Move a game compiled in a scratch folder to ``path``, its companion files (``.json``, ``.ni``) first and the
    ``.z8`` last, each with an atomic rename: a process that finds the ``.z8`` (``game_file``'s test) finds a whole
    game, even while another process generates the same seed."""
    companions = sorted(p for p in built.parent.iterdir() if p.stem == built.stem and p != built)
    for part in [*companions, built]:
        os.replace(part, path.with_suffix(part.suffix))


class TwBackend:
    """Generates (once) and plays TextWorld games of one challenge and setting."""

    rejections: Sequence[str] = REJECTIONS

    def __init__(self, game: str, setting: str, directory: Path) -> None:
        if game not in SETTINGS:
            raise EnvError(f"unknown TextWorld game {game!r}; choose one of: {', '.join(SETTINGS)}")
        if setting not in SETTINGS[game]:
            raise EnvError(f"unknown setting {setting!r} for tw-{game}; choose one of: {', '.join(SETTINGS[game])}")
        self.game, self.setting, self.directory = game, setting, directory
        self._env: Any = None
        self._file = ""

    def fold_seeds(self, fold: str) -> Sequence[int]:
        return FOLD_SEEDS[fold]

    def game_file(self, fold: str, seed: int) -> Path:
        """The compiled game for ``seed`` of ``fold``, generated on first use."""
        path = self.directory / f"tw-{self.game}-{self.setting}-{fold}-{seed}.z8"
        if path.exists():
            return path
        textworld = require_module("textworld", PACKAGE, INSTALL)
        challenges = require_module("textworld.challenges", PACKAGE, INSTALL)
        settings = dict(SETTINGS[self.game][self.setting])
        if self.game == "cooking":
            settings["split"] = COOKING_SPLIT[fold]
        self.directory.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix=".tw-make-", dir=self.directory))
        options = textworld.GameOptions()
        options.seeds = seed
        options.path = str(scratch / path.name)
        options.file_ext = ".z8"
        options.force_recompile = True
        try:
            _, make, _ = challenges.CHALLENGES[CHALLENGES[self.game]]
            game = make(settings=settings, options=options)
            built = Path(textworld.generator.compile_game(game, options))
            publish_game(built, path)
            return path
        except Exception as exc:  # noqa: BLE001 - generation failures are install or setting problems
            raise EnvError(f"tw-make could not generate tw-{self.game}:{self.setting} seed {seed}: {exc}") from exc
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def new_game(self, fold: str, seed: int) -> Turn:
        textworld = require_module("textworld", PACKAGE, INSTALL)
        path = str(self.game_file(fold, seed))
        if path != self._file:
            self.close()
            infos = textworld.EnvInfos(
                admissible_commands=True, objective=True, score=True, max_score=True,
                won=True, lost=True, inventory=True, description=True,
            )
            self._env, self._file = textworld.start(path, request_infos=infos), path
        return self._turn(self._env.reset(), opening=True)

    def act(self, action: str) -> Turn:
        state, _, _ = self._env.step(action)
        return self._turn(state)

    def help_text(self) -> str:
        return (
            f"TextWorld tw-{self.game} ({self.setting}), an Inform 7 game. Commands are short imperatives such as "
            "'look', 'inventory', 'examine X', 'take X from Y', 'open X', 'go north', 'put X on Y'"
            + (", 'read cookbook', 'prepare meal', 'eat meal'" if self.game == "cooking" else "")
            + ". Docs topic 'actions' lists the commands the game admits now."
        )

    def close(self) -> None:
        if self._env is not None:
            self._env.close()
            self._env, self._file = None, ""

    def _turn(self, state: Any, *, opening: bool = False) -> Turn:
        text = _PROMPT.sub("", str(state.feedback))
        if opening:  # drop the ASCII-art banner: keep the room description
            text = str(state.description or text)
        text = _BLANKS.sub("\n\n", _TRAILING.sub("\n", text)).strip()
        room = _ROOM.search(str(state.description or ""))
        max_score = float(state.max_score or 1)
        return Turn(
            observation=text,
            score=float(state.score or 0) / max_score,
            won=bool(state.won),
            lost=bool(state.lost),
            valid_actions=tuple(sorted(str(a) for a in state.admissible_commands or ())),
            location=room.group(1) if room else "",
            inventory=parse_inventory(str(state.inventory or ""), "You are carrying:"),
            goal=str(state.objective or ""),
        )


class TwEnv(TextGameEnv):
    """A TextWorld challenge (``cooking`` or ``treasure``) at one named setting; games cached on disk."""

    domain = "text-game"
    goal_needs_game = False

    def __init__(
        self,
        game: str,
        setting: str = "default",
        *,
        cache: str | os.PathLike[str] | None = None,
        tasks_per_fold: int = TASKS_PER_FOLD,
    ) -> None:
        super().__init__(TwBackend(game, setting, cache_dir(cache)), tasks_per_fold=tasks_per_fold)
        self.name = f"tw-{game}"
        self.family = f"tw-{game}:{setting}"
        self.setting = setting
        self._game = game

    def _goal_of(self, fold: str, seed: int) -> str:
        return GENERIC_GOALS[self._game]


__all__ = ["CHALLENGES", "GENERIC_GOALS", "REJECTIONS", "SETTINGS", "TwBackend", "TwEnv", "cache_dir", "publish_game"]
