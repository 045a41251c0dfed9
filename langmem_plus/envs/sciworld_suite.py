"""Many ScienceWorld tasks as one environment, in one JVM (``make_env("sciworld:all")``).

A task id carries its task, ``"<task>/<fold>-<variation>"`` such as
``"boil/test-225"``, and each task's family is its ScienceWorld task name, so a
bench can aggregate per task (``family_of``; ``family`` is the current task's
after a reset). ``reset`` on another task's id loads that task in the same JVM.
Folds are per task: ``task_seeds(task, fold)`` gives one task's variations and
``fold_task_ids(fold)`` every task id of a fold, task by task.

Example (needs the ``envs`` extra and Java 17):
    >>> env = SciWorldSuiteEnv(["boil", "melt"])        # doctest: +SKIP
    >>> env.fold_task_ids("test")[0]                    # doctest: +SKIP
    'boil/test-21'
    >>> _ = env.reset("melt/test-21"); env.family       # doctest: +SKIP
    'melt'
"""

from __future__ import annotations

from collections.abc import Sequence

from langmem_plus.envs.sciworld import (
    DEFAULT_SIMPLIFICATIONS,
    SciWorldBackend,
    SciWorldServer,
    check_task,
    parse_simplifications,
    task_names,
)
from langmem_plus.envs.textgame import (
    FOLDS,
    TASKS_PER_FOLD,
    TextGameEnv,
    Turn,
    parse_task_id,
)
from langmem_plus.errors import EnvError
from langmem_plus.records import TaskSpec

TASK_SEPARATOR = "/"
"""Between a task name and its ``<fold>-<variation>`` in a task id."""


class SciWorldSuiteEnv(TextGameEnv):
    """ScienceWorld tasks behind one ``Env``; task ids are ``"<task>/<fold>-<variation>"``.

    Args:
        tasks: Task names, in the order ``tasks()`` and ``fold_task_ids`` list them (default: all of ScienceWorld's).
        simplifications: ``easy``, ``none`` or a comma list, for every task (``sciworld.parse_simplifications``).
        tasks_per_fold: Variations per fold and task that ``tasks()`` lists.
        server: The JVM to run on (a new one by default).
    """

    domain = "text-game"

    def __init__(
        self,
        tasks: Sequence[str] | None = None,
        *,
        simplifications: str = DEFAULT_SIMPLIFICATIONS,
        tasks_per_fold: int = TASKS_PER_FOLD,
        server: SciWorldServer | None = None,
    ) -> None:
        names = [check_task(t) for t in tasks] if tasks is not None else task_names()
        if not names or len(set(names)) < len(names):
            raise EnvError(f"sciworld: the tasks must be distinct and at least one, got {names}")
        self.server = server or SciWorldServer()
        self.simplifications = parse_simplifications(simplifications)
        self._backends = {t: SciWorldBackend(t, self.simplifications, self.server) for t in names}
        super().__init__(self._backends[names[0]], tasks_per_fold=tasks_per_fold)
        self.name = "sciworld"
        self.family = ""  # the current task's name once a game starts
        self.task_names: tuple[str, ...] = tuple(names)

    def task_seeds(self, task: str, fold: str) -> tuple[int, ...]:
        """The variations of one task in ``fold`` (a game in progress is replayed if the task had to be loaded)."""
        if fold not in FOLDS:
            raise EnvError(f"{self.name}: unknown fold {fold!r}; choose one of: {', '.join(FOLDS)}")
        loads = not self.server.has_folds(task)
        seeds = self._variations(task, fold)
        if loads and self._task_id is not None:
            self._replay()
        return seeds

    def fold_seeds(self, fold: str) -> tuple[int, ...]:
        """Refused: each task has its own variations (``task_seeds``, ``fold_task_ids``)."""
        raise EnvError(f"{self.name}: every task has its own {fold} variations; use task_seeds(task, fold) or fold_task_ids(fold)")

    def fold_task_ids(self, fold: str) -> list[str]:
        """Every task id of ``fold``, task by task in the suite's order, each task's variations in the game's order."""
        return [f"{task}{TASK_SEPARATOR}{fold}-{seed}" for task in self.task_names for seed in self.task_seeds(task, fold)]

    def family_of(self, task_id: str) -> str:
        """The task name a task id carries."""
        return self._split(task_id)[0]

    # ---- TextGameEnv hooks ---------------------------------------------------

    def _start(self, task_id: str) -> Turn:
        task, local = self._split(task_id)
        fold, seed = parse_task_id(local, lambda f: self._variations(task, f), f"{self.name}:{task}")
        self._backend, self.family = self._backends[task], task
        return self._backends[task].new_game(fold, seed)

    def _listing(self) -> list[TaskSpec]:
        specs = []
        for task in self.task_names:
            backend = self._backends[task]
            for fold in FOLDS:
                for seed in self._variations(task, fold)[: self._tasks_per_fold]:
                    specs.append(TaskSpec(
                        task_id=f"{task}{TASK_SEPARATOR}{fold}-{seed}", goal=backend.describe(seed), tool=self.name,
                        domain=self.domain, family=task, context={"task": task, "fold": fold, "seed": seed},
                    ))
        return specs

    # ---- helpers -------------------------------------------------------------

    def _variations(self, task: str, fold: str) -> tuple[int, ...]:
        return self.server.fold_seeds(task, fold, self.simplifications)

    def _split(self, task_id: str) -> tuple[str, str]:
        task, sep, local = str(task_id).strip().partition(TASK_SEPARATOR)
        if not sep or task not in self._backends:
            raise EnvError(
                f"{self.name}: task id {task_id!r} is not '<task>{TASK_SEPARATOR}<fold>-<variation>' "
                f"with task one of: {', '.join(self.task_names)}"
            )
        return task, local


__all__ = ["TASK_SEPARATOR", "SciWorldSuiteEnv"]
