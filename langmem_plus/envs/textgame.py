"""Text games written by others, behind the ``Env`` protocol (design.md §11).

TextWorldExpress and ScienceWorld run in a JVM, TextWorld games in Jericho, and
their APIs differ, but once a backend has turned one game command into a ``Turn`` (what the game printed, its
normalised score, won/lost, the valid actions, where the player is and what it
carries) everything else is shared here: task ids and folds, reset/step, the
mapping onto the four feedback channels, the deterministic evaluator.

Feedback mapping (the same for every text game):

- a command the game rejects (it did not parse, or cannot be done: "Unknown
  action", "No known action matches that input", "The door is already open.",
  "You can't ...") is a **hard failure** whose ``error_text`` is the game's line;
- a command that ends the game as a loss (TextWorldExpress ``taskfailure``, a
  negative ScienceWorld score, "You lost") is a **constraint failure** on that
  step; its ``error_text`` names the fatal action and what the game said;
- ``progress`` is the game's score normalised to 0..1 and ``reward`` its change,
  so a score increase is progress;
- ``efficiency.steps`` is 1 per command.

The game packages are optional (``pip install -e ".[envs]"``, which also needs a
Java 17 runtime; ``".[textworld]"`` for TextWorld) and are imported only when a
game starts, so the core never needs them.

Example:
    >>> before = Turn("You are in the kitchen.", score=0.2)
    >>> after = Turn("Unknown action: I'm not sure what you mean.", score=0.2)
    >>> fb = map_feedback("dance", before, after, ())
    >>> fb.hard_failure, fb.error_text
    (True, "Unknown action: I'm not sure what you mean.")
"""

from __future__ import annotations

import importlib
import re
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Protocol

from langmem_plus.errors import EnvError
from langmem_plus.records import Efficiency, Feedback, TaskSpec, Verdict

FOLDS: tuple[str, ...] = ("train", "dev", "test")
"""The games' own seed folds, in order."""
TASKS_PER_FOLD = 10
"""Seeds per fold that ``tasks()`` lists (the first ones of each fold); any seed of a fold can be reset."""
GAME_STEP_LIMIT = 100_000
"""Step limit handed to the game packages: high, so the caller's budget (the graph's ``max_steps``) decides."""
MESSAGE_CHARS = 300
"""Longest game message quoted in a fatal-action error text."""
INSTALL_HINT = "install the optional extra with `pip install 'langmem-plus[envs]'` and a Java 17 runtime (e.g. openjdk-17-jre)"
"""What to install when a game package or Java is missing."""

DOMAIN = "text-game"
"""Domain scope of lessons learned in any text game."""

COMMON_REJECTIONS: tuple[str, ...] = (
    r"^I don't understand",
    r"^I'm not sure",
    r"^You can't",
    r"^That's not something you can",
    r"^That is not a command",
    r"^That is already (open|closed)",
    r"^You are unable to",
    r"^Unknown action",
    r"^ERROR:",
)
"""Rejection lines shared by the games (regexes, matched on the first line of the answer)."""


_ASIDE = re.compile(r"^\(.*\)$")


@dataclass(frozen=True)
class Turn:
    """What a game reported after one command (or after a reset)."""

    observation: str
    """The game's answer, as printed."""
    score: float = 0.0
    """Score normalised so that 1.0 is a won game (may be negative when the game punishes)."""
    won: bool = False
    lost: bool = False
    valid_actions: tuple[str, ...] = ()
    """Commands the game accepts now, sorted."""
    location: str = ""
    inventory: tuple[str, ...] = ()
    goal: str = ""
    """The game's task description."""
    info: Mapping[str, Any] = field(default_factory=dict)
    """Backend extras (e.g. an ambiguity the backend resolved)."""


def first_line(text: str) -> str:
    """The first non-empty line of ``text`` that is not a parenthesised aside, stripped.

    Games print asides before their answer ("(with the knife)", "(disconnecting
    wire)"); the answer is the line after them.

    Example:
        >>> first_line("(with the knife)\\nYou can't see any such thing.")
        "You can't see any such thing."
    """
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return next((line for line in lines if not _ASIDE.match(line)), lines[0] if lines else "")


def is_rejection(observation: str, patterns: Sequence[str]) -> bool:
    """True when the game's first line says the command was not understood or cannot be done."""
    line = first_line(observation)
    return any(re.search(p, line, re.IGNORECASE) for p in (*COMMON_REJECTIONS, *patterns))


def fatal_text(action: str, observation: str) -> str:
    """Error text of a fatal step: the action's verb, its object quoted, and what the game said.

    The object and the game's words are quoted so the fingerprint keeps the verb
    (eating and cooking differ) but not the literals (salt and pepper do not).

    Example:
        >>> fatal_text("eat salt", "You eat the salt.")
        "fatal action: eat 'salt' lost the game (the game said: 'You eat the salt.')"
    """
    verb, _, rest = " ".join(action.split()).partition(" ")
    said = " ".join(observation.split())[:MESSAGE_CHARS]
    target = f" '{rest}'" if rest else ""
    return f"fatal action: {verb or '(empty)'}{target} lost the game (the game said: '{said}')"


def map_feedback(action: str, before: Turn, after: Turn, rejections: Sequence[str]) -> Feedback:
    """The four channels for one command, from the game's turns before and after it (module docstring)."""
    progress = min(1.0, max(0.0, after.score))
    common: dict[str, Any] = {"progress": progress, "reward": after.score - before.score}
    if after.lost:
        return Feedback(constraint_failure=True, error_text=fatal_text(action, after.observation), **common)
    if is_rejection(after.observation, rejections):
        return Feedback(hard_failure=True, error_text=first_line(after.observation), **common)
    return Feedback(**common)


def require_module(module: str, package: str, hint: str = INSTALL_HINT) -> ModuleType:
    """Import an optional game package, or raise EnvError naming what to install."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise EnvError(f"the game package {package!r} is not installed ({exc}); {hint}") from exc


def require_java(game: str) -> None:
    """Raise EnvError when no ``java`` executable is on PATH (the games run in a JVM)."""
    if shutil.which("java") is None:
        raise EnvError(f"{game} runs in a JVM but no `java` executable is on PATH; {INSTALL_HINT}")


class GameBackend(Protocol):
    """One game package driven through its own API; a single JVM serves every reset."""

    rejections: Sequence[str]
    """Regexes (first line of the answer) that mean "command rejected", beyond the common ones."""

    def fold_seeds(self, fold: str) -> Sequence[int]:
        """Every seed (or variation) of ``fold``, as the game defines the folds."""
        ...

    def new_game(self, fold: str, seed: int) -> Turn:
        """Start the game for ``seed`` of ``fold`` and return its opening turn."""
        ...

    def act(self, action: str) -> Turn:
        """Run one command in the current game."""
        ...

    def help_text(self) -> str:
        """The game's own help, or a short description of its commands."""
        ...

    def close(self) -> None:
        """Stop the JVM."""
        ...


class TextGameEnv:
    """The ``Env`` protocol over a ``GameBackend``; task ids are ``"<fold>-<seed>"``.

    Besides the protocol it exposes what a generic executor needs to read:
    ``goal`` (the game's task description), ``valid_actions`` (sorted), ``observation``
    (the latest answer) and ``state`` (location, inventory, score: compact, so it
    can be fingerprinted and compared between steps). ``done`` is true once the game
    is over, won or lost; stepping after that raises EnvError.
    """

    name: str = "text-game"
    domain: str = DOMAIN
    family: str = ""
    """Task family of every task (e.g. ``"twx-cooking:easy"``, ``"boil"``)."""
    goal_needs_game: bool = True
    """Whether ``_goal_of`` starts a game (then ``tasks()`` replays a game in progress)."""

    def __init__(self, backend: GameBackend, *, tasks_per_fold: int = TASKS_PER_FOLD) -> None:
        if tasks_per_fold < 1:
            raise EnvError(f"tasks_per_fold must be >= 1, got {tasks_per_fold}")
        self._backend = backend
        self._tasks_per_fold = tasks_per_fold
        self._task_list: list[TaskSpec] | None = None
        self._seeds: dict[str, tuple[int, ...]] = {}
        self._task_id: str | None = None
        self._actions: list[str] = []
        self._turn: Turn | None = None
        self._best = 0.0

    # ---- hooks ---------------------------------------------------------------

    def _goal_of(self, fold: str, seed: int) -> str:
        """Goal text of a listed task; may start that game (``tasks()`` replays a game in progress)."""
        return self._backend.new_game(fold, seed).goal

    def _start(self, task_id: str) -> Turn:
        """Start the game a task id names and return its opening turn (``reset`` and the replay use it)."""
        fold, seed = self._parse_task_id(task_id)
        return self._backend.new_game(fold, seed)

    def _listing(self) -> list[TaskSpec]:
        """The tasks ``tasks()`` lists: the first ``tasks_per_fold`` seeds of each fold."""
        return [
            self._spec(fold, seed, self._goal_of(fold, seed))
            for fold in FOLDS
            for seed in self._fold_seeds(fold)[: self._tasks_per_fold]
        ]

    # ---- what an executor reads -----------------------------------------------

    @property
    def goal(self) -> str:
        """The current game's task description ("" before a reset)."""
        return self._turn.goal if self._turn else ""

    @property
    def valid_actions(self) -> list[str]:
        """Commands the game accepts now, sorted (empty before a reset and once the game is over)."""
        return [] if self._turn is None or self.done else list(self._turn.valid_actions)

    @property
    def observation(self) -> str:
        """The game's latest answer."""
        return self._turn.observation if self._turn else ""

    @property
    def state(self) -> dict[str, Any] | None:
        """Compact structured state: location, inventory, normalised score; None before a reset."""
        if self._turn is None:
            return None
        t = self._turn
        return {"location": t.location, "inventory": list(t.inventory), "score": round(t.score, 4)}

    def fold_seeds(self, fold: str) -> tuple[int, ...]:
        """Every seed (or variation) of ``fold`` (``train``, ``dev``, ``test``), as the game defines it."""
        if fold not in FOLDS:
            raise EnvError(f"{self.name}: unknown fold {fold!r}; choose one of: {', '.join(FOLDS)}")
        return self._fold_seeds(fold)

    def fold_task_ids(self, fold: str) -> list[str]:
        """The id of every task of ``fold``, in the fold's order (a bench picks positions from it)."""
        return [f"{fold}-{seed}" for seed in self.fold_seeds(fold)]

    def family_of(self, task_id: str) -> str:
        """Task family of ``task_id``: the same for every task of a single game (per-family aggregation reads it)."""
        return self.family or self.name

    # ---- protocol ------------------------------------------------------------

    def tasks(self) -> list[TaskSpec]:
        """The first ``tasks_per_fold`` seeds of train, dev and test, in that order (stable)."""
        if self._task_list is None:
            self._task_list = self._listing()
            if self._task_id is not None and self.goal_needs_game:
                self._replay()
        return [t.model_copy(deep=True) for t in self._task_list]

    def reset(self, task_id: str) -> str:
        """Start ``task_id`` (``"<fold>-<seed>"``); returns the goal and the first observation."""
        self._turn = self._start(task_id)
        self._task_id, self._actions, self._best = task_id, [], max(0.0, self._turn.score)
        return f"{self.name} task {task_id}\nGoal: {self._turn.goal}\n\n{self._turn.observation}".rstrip() + "\n"

    @property
    def done(self) -> bool:
        """True once the game is over (won or lost)."""
        return self._turn is not None and (self._turn.won or self._turn.lost)

    @property
    def won(self) -> bool:
        """True once the current game is won."""
        return self._turn is not None and self._turn.won

    def step(self, action: str) -> tuple[str, Feedback]:
        """Run one command and map the game's answer onto the four channels."""
        if self._turn is None:
            raise EnvError(f"{self.name}: call reset(task_id) before step()")
        if self.done:
            raise EnvError(f"{self.name}: the game is over ({'won' if self.won else 'lost'}); call reset(task_id)")
        started = time.perf_counter()
        action = " ".join(str(action).split())
        before, after = self._turn, self._backend.act(action)
        self._turn = after
        self._actions.append(action)
        self._best = max(self._best, after.score)
        fb = map_feedback(action, before, after, self._backend.rejections)
        fb = fb.model_copy(update={"efficiency": Efficiency(steps=1, seconds=time.perf_counter() - started)})
        return after.observation, fb

    def docs(self, topic: str | None = None) -> str:
        """The game's help text; topic ``"actions"`` lists the commands valid now."""
        if topic and topic.strip().lower() in ("actions", "valid", "valid actions"):
            acts = self.valid_actions
            none = "  (none: the game is over; reset)" if self.done else "  (none: reset first)"
            return "Valid actions now:\n" + ("\n".join(f"  {a}" for a in acts) if acts else none)
        text = self._backend.help_text()
        goal = self.goal
        return f"{text}\n\nGoal: {goal}".strip() if goal else text

    def evaluate(self) -> Verdict:
        """Deterministic verdict: passed when the game is won; score is the game's score, 0..1."""
        if self._turn is None:
            raise EnvError(f"{self.name}: call reset(task_id) before evaluate()")
        score = min(1.0, max(0.0, self._turn.score))
        if self._turn.won:
            reasons = [f"game won in {len(self._actions)} command(s)"]
        elif self._turn.lost:
            last = self._actions[-1] if self._actions else ""
            reasons = [f"game lost after {last!r} (score {score:.2f}, best {self._best:.2f})"]
        else:
            reasons = [f"game not finished after {len(self._actions)} command(s) (score {score:.2f})"]
        return Verdict(passed=self._turn.won, score=score, reasons=reasons, source="deterministic")

    def close(self) -> None:
        """Stop the game's JVM; the env cannot be used afterwards."""
        self._backend.close()

    def __enter__(self) -> TextGameEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- helpers -------------------------------------------------------------

    def _fold_seeds(self, fold: str) -> tuple[int, ...]:
        if fold not in self._seeds:
            self._seeds[fold] = tuple(int(s) for s in self._backend.fold_seeds(fold))
        return self._seeds[fold]

    def _spec(self, fold: str, seed: int, goal: str) -> TaskSpec:
        return TaskSpec(
            task_id=f"{fold}-{seed}",
            goal=goal,
            tool=self.name,
            domain=self.domain,
            family=self.family or self.name,
            context={"fold": fold, "seed": seed},
        )

    def _parse_task_id(self, task_id: str) -> tuple[str, int]:
        return parse_task_id(task_id, self._fold_seeds, self.name)

    def _replay(self) -> None:
        """Restart the current game and replay its commands (the games are deterministic per seed)."""
        if self._task_id is None:
            return
        turn = self._start(self._task_id)
        for action in self._actions:
            turn = self._backend.act(action)
        self._turn = turn


def parse_task_id(task_id: str, fold_seeds: Callable[[str], Sequence[int]], name: str) -> tuple[str, int]:
    """``"<fold>-<seed>"`` as (fold, seed), checked against ``fold_seeds(fold)``; ``name`` prefixes the error.

    Raises:
        EnvError: not ``<fold>-<seed>``, an unknown fold, or a seed outside its fold.
    """
    fold, _, raw = str(task_id).strip().partition("-")
    if fold not in FOLDS or not raw.isdigit():
        raise EnvError(f"{name}: task id {task_id!r} is not '<fold>-<seed>' with fold one of {', '.join(FOLDS)}")
    seeds = fold_seeds(fold)
    if int(raw) not in seeds:
        span = f"{min(seeds)}..{max(seeds)}" if seeds else "none"
        raise EnvError(f"{name}: seed {raw} is not in the {fold} fold (its seeds: {span})")
    return fold, int(raw)


def parse_inventory(text: str, header: str) -> tuple[str, ...]:
    """Item names listed under ``header`` in an inventory answer, without articles, sorted.

    Example:
        >>> parse_inventory("Inventory: \\n  a cookbook\\n  some salt\\n", "Inventory:")
        ('cookbook', 'salt')
    """
    _, _, body = text.partition(header)
    items = []
    for line in body.splitlines():
        item = line.strip()
        if not item or "empty" in item.lower():
            continue
        items.append(re.sub(r"^(a|an|the|some)\s+", "", item.rstrip("."), flags=re.IGNORECASE))
    return tuple(sorted(items))


__all__ = [
    "COMMON_REJECTIONS",
    "DOMAIN",
    "FOLDS",
    "GameBackend",
    "INSTALL_HINT",
    "TASKS_PER_FOLD",
    "TextGameEnv",
    "Turn",
    "first_line",
    "fatal_text",
    "is_rejection",
    "map_feedback",
    "parse_inventory",
    "parse_task_id",
    "require_java",
    "require_module",
]
