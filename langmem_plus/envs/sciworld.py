"""ScienceWorld tasks as environments (design.md §11).

``make_env("sciworld:boil")`` (or any ScienceWorld task name, e.g.
``sciworld:find-living-thing``) gives one task; a third field picks the
simplifications: ``easy`` by default (teleport, open doors and containers,
self-watering pots, no electrical actions except where the task needs them),
``none`` for the full game, or a comma list of ScienceWorld's own names
(``sciworld:boil:none``, ``sciworld:boil:teleportAction,openDoors``). The task's
variations are its seeds, split by the game into train/dev/test folds; a task
id is ``"<fold>-<variation>"`` such as ``"test-225"``. ``sciworld:all`` (or a
comma list of tasks) runs many tasks in one JVM (``sciworld_suite``).

ScienceWorld scores 0..100 (normalised here to 0..1) and marks a failed task
with a score of -100: the step that caused it is a constraint failure. When a
command is ambiguous the game asks for a number; the adapter answers with the
first reading, as the ScienceWorld baselines do, and says so in the observation.

``sciworld_gold.gold_demonstrations`` replays the game's own gold action
sequences on train variations only.

One JVM per ``SciWorldServer``, reused across resets and tasks (starting it takes
about a second).

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
"""ScienceWorld simplification string used unless another is given (``parse_simplifications``)."""
SIMPLIFICATIONS: tuple[str, ...] = (
    "easy", "teleportAction", "selfWateringFlowerPots", "openContainers", "openDoors", "noElectricalAction",
)
"""ScienceWorld's simplification names (``easy`` is all of the others)."""
NO_SIMPLIFICATIONS = "none"
"""The name that means the full game (ScienceWorld's empty simplification string)."""
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


def parse_simplifications(text: str) -> str:
    """ScienceWorld's simplification string for ``text``: ``none`` (or "") is the full game, else names joined by commas.

    Names are matched without regard to case, since environment names are lowercased.

    Example:
        >>> parse_simplifications("none"), parse_simplifications("teleportaction,OPENDOORS")
        ('', 'teleportAction,openDoors')

    Raises:
        EnvError: a name ScienceWorld does not know.
    """
    words = [w.strip() for w in str(text).split(",") if w.strip()]
    if [w.lower() for w in words] in ([], [NO_SIMPLIFICATIONS]):
        return ""
    known = {name.lower(): name for name in SIMPLIFICATIONS}
    unknown = [w for w in words if w.lower() not in known]
    if unknown:
        raise EnvError(
            f"unknown ScienceWorld simplification(s) {unknown}; choose {NO_SIMPLIFICATIONS!r} or from: {', '.join(SIMPLIFICATIONS)}"
        )
    return ",".join(known[w.lower()] for w in words)


def task_names() -> list[str]:
    """Every ScienceWorld task name, from the installed package (no JVM needed).

    Raises:
        EnvError: the ``scienceworld`` package is not installed.
    """
    constants = require_module("scienceworld.constants", PACKAGE)
    return [str(name) for name in constants.ID2TASK.values()]


def check_task(task: str) -> str:
    """``task`` when ScienceWorld knows it; else EnvError listing every name."""
    names = task_names()
    if task not in names:
        raise EnvError(f"unknown ScienceWorld task {task!r}; choose one of: {', '.join(names)}")
    return task


class SciWorldServer:
    """One ScienceWorld JVM serving any task and simplifications; it starts on first use.

    Each call that starts a game loads it, so whatever was in progress in this JVM is gone.
    """

    def __init__(self) -> None:
        self._env: Any = None
        self._help = ""
        self._folds: dict[tuple[str, str], tuple[int, ...]] = {}
        self._goal = ""
        self._loaded = ""
        """Task of the loaded game ("" before any)."""

    def _server(self, task: str, simplifications: str) -> Any:
        if self._env is None:
            module = require_module("scienceworld", PACKAGE)
            require_java("ScienceWorld")
            try:
                self._env = module.ScienceWorldEnv("", envStepLimit=GAME_STEP_LIMIT)
            except Exception as exc:  # noqa: BLE001 - a JVM that fails to start is an install problem
                raise EnvError(f"ScienceWorld could not start ({type(exc).__name__}: {exc}); needs a Java 17 runtime") from exc
            try:  # help needs a loaded game; read it now, before any game is in progress
                self.load(task, 0, simplifications)
                self._help = str(self._env.step("help")[0])
            except EnvError:
                self.close()
                raise
        return self._env

    def load(self, task: str, variation: int, simplifications: str, *, gold: bool = False) -> Any:
        """Load one variation of ``task`` (with its gold path when ``gold``) and return the game's handle."""
        server = self._server(task, simplifications)
        try:
            server.load(task, variation, simplifications, generateGoldPath=gold)
        except ValueError as exc:
            raise EnvError(f"ScienceWorld rejected task {task!r} ({simplifications or NO_SIMPLIFICATIONS}): {exc}") from exc
        self._loaded = task
        return server

    def has_folds(self, task: str) -> bool:
        """Whether ``fold_seeds(task, ...)`` is known without loading a game."""
        return (task, "train") in self._folds or self._loaded == task

    def fold_seeds(self, task: str, fold: str, simplifications: str) -> tuple[int, ...]:
        """The variations of ``task`` in ``fold``, cached; loads the task unless it is the loaded one (``has_folds``)."""
        if (task, fold) not in self._folds:
            server = self._env if self._loaded == task else self.load(task, 0, simplifications)
            for name in ("train", "dev", "test"):
                self._folds[task, name] = tuple(int(v) for v in getattr(server, f"get_variations_{name}")())
        return self._folds[task, fold]

    def describe(self, task: str, variation: int, simplifications: str) -> str:
        """The task description of one variation (loads it; the caller restores any game in progress)."""
        return _task_text(str(self.load(task, variation, simplifications).get_task_description()))

    def new_game(self, task: str, variation: int, simplifications: str) -> Turn:
        """Load and reset one variation; its opening turn."""
        return self._reset(self.load(task, variation, simplifications))

    def gold_game(self, task: str, variation: int, simplifications: str) -> tuple[Turn, list[str]]:
        """Load and reset one variation with its gold path: the opening turn and the game's gold action sequence."""
        server = self.load(task, variation, simplifications, gold=True)
        gold = [str(a) for a in server.get_gold_action_sequence()]
        return self._reset(server), gold

    def act(self, action: str, answer: str = AMBIGUITY_ANSWER, *, full: bool = True) -> Turn:
        """Run one command in the loaded game; an ambiguous one is answered with the reading ``answer``.

        ``full=False`` returns only the answer and the score (no valid actions, location or inventory), which
        spares the game enumerating every valid action: many times faster, for replays that need no more.
        """
        if self._env is None:
            raise EnvError("ScienceWorld: no game is loaded; start one first")
        step = self._step if full else self._quick_step
        observation, infos, completed = step(action)
        info: dict[str, str] = {}
        if observation.startswith(AMBIGUOUS):
            options = [line for line in observation.splitlines()[1:] if line.strip()]
            readings = {o.split(":", 1)[0].strip(): o.split(":", 1)[-1].strip() for o in options}
            chosen = readings.get(answer, "")
            observation, infos, completed = step(answer)
            which = "the first reading" if answer == AMBIGUITY_ANSWER else f"reading {answer}"
            observation = f"(ambiguous command; {which} was used: {chosen})\n{observation}"
            info = {"ambiguity": chosen, "answer": answer}
        return self._turn(observation, infos, completed=completed, info=info)

    def _step(self, action: str) -> tuple[str, dict[str, Any], bool]:
        observation, _, completed, infos = self._env.step(action)
        return str(observation), infos, bool(completed)

    def _quick_step(self, action: str) -> tuple[str, dict[str, Any], bool]:
        interface = self._env.server  # the JVM interface the package's own step() calls, without its extras
        observation = str(interface.step(action))
        score = round(MAX_SCORE * float(interface.getScore()))
        return observation, {"score": score}, bool(interface.getCompleted()) or score < 0

    def help_text(self, task: str, simplifications: str) -> str:
        """The game's own help (read once, when the JVM starts)."""
        self._server(task, simplifications)
        return self._help

    def close(self) -> None:
        """Stop the JVM; the next call starts a new one."""
        if self._env is not None:
            self._env.close()
            self._env, self._loaded = None, ""

    def _reset(self, server: Any) -> Turn:
        observation, infos = server.reset()
        self._goal = _task_text(str(infos.get("taskDesc", "")))
        return self._turn(str(observation), infos, completed=False)

    def _turn(self, observation: str, infos: dict[str, Any], *, completed: bool, info: dict[str, str] | None = None) -> Turn:
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
            info=info or {},
        )


def _task_text(text: str) -> str:
    """The task description without ScienceWorld's "Task Description:" header."""
    return re.sub(r"^\s*Task [Dd]escription:\s*", "", text).strip()


class SciWorldBackend:
    """The ``GameBackend`` of one task on a ``SciWorldServer`` (its own, or one shared by several tasks)."""

    rejections: Sequence[str] = REJECTIONS

    def __init__(self, task: str, simplifications: str = DEFAULT_SIMPLIFICATIONS, server: SciWorldServer | None = None) -> None:
        self.task, self.simplifications = task, parse_simplifications(simplifications)
        self.server = server or SciWorldServer()

    def fold_seeds(self, fold: str) -> Sequence[int]:
        return self.server.fold_seeds(self.task, fold, self.simplifications)

    def describe(self, variation: int) -> str:
        """The task description of one variation (loads it; the caller restores any game in progress)."""
        return self.server.describe(self.task, variation, self.simplifications)

    def new_game(self, fold: str, seed: int) -> Turn:
        return self.server.new_game(self.task, seed, self.simplifications)

    def act(self, action: str) -> Turn:
        return self.server.act(action)

    def help_text(self) -> str:
        simplified = self.simplifications or NO_SIMPLIFICATIONS
        return f"ScienceWorld task {self.task!r} (simplifications: {simplified}).\n{self.server.help_text(self.task, self.simplifications)}"

    def close(self) -> None:
        """Stop the server's JVM (shared servers stop for every task on them)."""
        self.server.close()


class SciWorldEnv(TextGameEnv):
    """One ScienceWorld task; its variations are the seeds of the train/dev/test folds.

    Args:
        task: A ScienceWorld task name (``task_names()``).
        simplifications: ``easy``, ``none`` or a comma list (``parse_simplifications``).
        tasks_per_fold: Seeds per fold that ``tasks()`` lists.
        server: The JVM to run on (a new one by default); ``server`` of another env shares its JVM.

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
        server: SciWorldServer | None = None,
    ) -> None:
        self._sw = SciWorldBackend(check_task(task), simplifications, server)
        super().__init__(self._sw, tasks_per_fold=tasks_per_fold)
        self.name = "sciworld"
        self.family = task
        self.task = task
        self.simplifications = self._sw.simplifications

    @property
    def server(self) -> SciWorldServer:
        """The JVM this env runs on."""
        return self._sw.server

    def _goal_of(self, fold: str, seed: int) -> str:
        return self._sw.describe(seed)


__all__ = [
    "DEFAULT_SIMPLIFICATIONS",
    "REJECTIONS",
    "SIMPLIFICATIONS",
    "SciWorldBackend",
    "SciWorldEnv",
    "SciWorldServer",
    "check_task",
    "parse_simplifications",
    "task_names",
]
