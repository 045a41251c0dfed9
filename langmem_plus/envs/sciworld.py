"""ScienceWorld tasks as environments (design.md §11).

``make_env("sciworld:boil")`` (or any ScienceWorld task name, e.g.
``sciworld:find-living-thing``) gives one task with the ``easy`` simplifications
by default (teleport, open doors and containers, self-watering pots, no
electrical actions except where the task needs them). The task's variations are
its seeds, split by the game into train/dev/test folds; a task id is
``"<fold>-<variation>"`` such as ``"test-225"``.

ScienceWorld scores 0..100 (normalised here to 0..1) and marks a failed task
with a score of -100: the step that caused it is a constraint failure. When a
command is ambiguous the game asks for a number; the adapter answers with the
first reading, as the ScienceWorld baselines do, and says so in the observation.

One JVM per instance, reused across resets (starting it takes about a second).

Example (needs the ``envs`` extra and Java 17):
    >>> env = SciWorldEnv("find-living-thing")          # doctest: +SKIP
    >>> _ = env.reset("test-225")                       # doctest: +SKIP
    >>> env.step("dance")[1].error_text                 # doctest: +SKIP
    'No known action matches that input.'
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

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

PACKAGE = "scienceworld"
"""The PyPI package behind this environment."""
DEFAULT_SIMPLIFICATIONS = "easy"
"""ScienceWorld simplification string used unless another is given ("" for none)."""
MAX_SCORE = 100.0
"""ScienceWorld's score of a completed task."""
AMBIGUOUS = "Ambiguous request"
"""Start of the game's question when a command matches several objects."""
AMBIGUITY_ANSWER = "0"
"""The reading chosen for an ambiguous command: the first one listed."""

REJECTIONS: tuple[str, ...] = (
    r"^No known action matches that input",
    r"\bis not (moveable|movable|openable|closeable|edible|flammable|open|a container|currently passable)\b",
    r"\bis not something that can be",
    r"\bisn't open\b",
    r"\bis already (open|closed|activated|deactivated|connected|on fire|flushing)\b",
    r"^That is already flushing",
    r"\bcan't\b",
    r"^That object (does not appear to be|already appears to be) in the inventory",
    r"\bdoes not contain any liquids\b",
    r"\bdoes not have any text\b",
    r"^There is nothing in the\b",
    r"^That container is empty, so there are no items to mix",
    r"^There is only one thing\b",
    r"\bdoes not appear to produce anything new\b",
    r"\bappears broken\b",
    r"^Something can't be connected to itself",
)
"""ScienceWorld's rejection lines (read from its jar and from random play): the command parsed
but could not be done, or did nothing."""

_LOCATION = re.compile(r"This (?:room|[a-z]+ location) is called the ([^.]+)\.")
"""The location line of `look around`: "This room is called the kitchen.", "This outside location is called the outside."."""


class SciWorldBackend:
    """One ScienceWorld JVM; ``new_game`` loads the task's variation and resets it."""

    rejections: Sequence[str] = REJECTIONS

    def __init__(self, task: str, simplifications: str = DEFAULT_SIMPLIFICATIONS) -> None:
        self.task, self.simplifications = task, simplifications
        self._env: Any = None
        self._help = ""
        self._goal = ""

    def _server(self) -> Any:
        if self._env is None:
            module = require_module("scienceworld", PACKAGE)
            require_java("ScienceWorld")
            try:
                env = module.ScienceWorldEnv("", envStepLimit=GAME_STEP_LIMIT)
                env.load(self.task, 0, self.simplifications)
                self._help = str(env.step("help")[0])
            except ValueError as exc:
                raise EnvError(f"ScienceWorld rejected task {self.task!r}: {exc}") from exc
            except Exception as exc:  # noqa: BLE001 - a JVM that fails to start is an install problem
                raise EnvError(f"ScienceWorld could not start ({type(exc).__name__}: {exc}); needs a Java 17 runtime") from exc
            self._env = env
        return self._env

    def fold_seeds(self, fold: str) -> Sequence[int]:
        server = self._server()
        getter = {
            "train": server.get_variations_train,
            "dev": server.get_variations_dev,
            "test": server.get_variations_test,
        }[fold]
        return [int(v) for v in getter()]

    def describe(self, variation: int) -> str:
        """The task description of one variation (loads it; the caller restores any game in progress)."""
        server = self._server()
        server.load(self.task, variation, self.simplifications)
        return _task_text(str(server.get_task_description()))

    def new_game(self, fold: str, seed: int) -> Turn:
        server = self._server()
        server.load(self.task, seed, self.simplifications)
        observation, infos = server.reset()
        self._goal = _task_text(str(infos.get("taskDesc", "")))
        return self._turn(str(observation), infos, completed=False)

    def act(self, action: str) -> Turn:
        server = self._server()
        observation, _, completed, infos = server.step(action)
        observation = str(observation)
        if observation.startswith(AMBIGUOUS):
            options = [line for line in observation.splitlines()[1:] if line.strip()]
            chosen = options[0].split(":", 1)[-1].strip() if options else ""
            observation, _, completed, infos = server.step(AMBIGUITY_ANSWER)
            observation = f"(ambiguous command; the first reading was used: {chosen})\n{observation}"
        return self._turn(observation, infos, completed=bool(completed))

    def help_text(self) -> str:
        self._server()
        return f"ScienceWorld task {self.task!r} (simplifications: {self.simplifications or 'none'}).\n{self._help}"

    def close(self) -> None:
        if self._env is not None:
            self._env.close()
            self._env = None

    def _turn(self, observation: str, infos: dict[str, Any], *, completed: bool) -> Turn:
        raw = float(infos.get("score", 0.0))
        location = _LOCATION.search(str(infos.get("look", "")))
        return Turn(
            observation=observation,
            score=raw / MAX_SCORE,
            won=completed and raw >= MAX_SCORE,
            lost=raw < 0,
            valid_actions=tuple(sorted(str(a) for a in infos.get("valid", ()))),
            location=location.group(1) if location else "",
            inventory=parse_inventory(str(infos.get("inv", "")), "In your inventory, you see:"),
            goal=self._goal,
        )


def _task_text(text: str) -> str:
    """The task description without ScienceWorld's "Task Description:" header."""
    return re.sub(r"^\s*Task [Dd]escription:\s*", "", text).strip()


def task_names() -> list[str]:
    """Every ScienceWorld task name, from the installed package (no JVM needed).

    Raises:
        EnvError: the ``scienceworld`` package is not installed.
    """
    constants = require_module("scienceworld.constants", PACKAGE)
    return [str(name) for name in constants.ID2TASK.values()]


class SciWorldEnv(TextGameEnv):
    """One ScienceWorld task; its variations are the seeds of the train/dev/test folds.

    Example:
        >>> with SciWorldEnv("boil") as env:                     # doctest: +SKIP
        ...     [t.task_id for t in env.tasks()][:2]
        ['train-0', 'train-1']
    """

    domain = "text-game"

    def __init__(
        self,
        task: str,
        *,
        simplifications: str = DEFAULT_SIMPLIFICATIONS,
        tasks_per_fold: int = TASKS_PER_FOLD,
    ) -> None:
        names = task_names()
        if task not in names:
            raise EnvError(f"unknown ScienceWorld task {task!r}; choose one of: {', '.join(names)}")
        self._sw = SciWorldBackend(task, simplifications)
        super().__init__(self._sw, tasks_per_fold=tasks_per_fold)
        self.name = "sciworld"
        self.family = task
        self.task = task

    def _goal_of(self, fold: str, seed: int) -> str:
        return self._sw.describe(seed)


__all__ = ["DEFAULT_SIMPLIFICATIONS", "REJECTIONS", "SciWorldBackend", "SciWorldEnv", "task_names"]
