"""Environment plugins: learning and step advice that belong to one kind of environment, behind small protocols.

The core learns from any run: failures become rewrite lessons, outcomes judge them. What only one kind of
environment can teach (a text game's "Avoid `eat <X>`" from a lost game) lives in a plugin (``EnvPlugin``), and so
does advice at each step of an agent's run (``StepAdvisor``: what stands now, what holds a proposed action). A task
chooses its plugin by the domain it declares (``TaskSpec.domain``), never by the shape of its steps; a plugin
registers the domains it serves, by object or, for a built-in, by module path (loaded on first use, so the core
never imports it).

Example:
    >>> from langmem_plus.records import TaskSpec
    >>> plugin_for(TaskSpec(task_id="t", goal="g", domain="table-cli")) is None
    True
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from langmem_plus.config import MemoryConfig
from langmem_plus.errors import InvalidArgument
from langmem_plus.records import Activation, Hint, Lesson, Namespace, ScoredItem, Step, TaskSpec

if TYPE_CHECKING:
    from langmem_plus.memory import LearningMemory
    from langmem_plus.retrieval.context import Assembled

GUARD_CALL_KIND = "call"
"""``kind`` of the run-state guard entries (``lm_guard``) the call guard writes: a whole tool call answered, which a
step advisor's own answers (a proposed action at a step) are not."""


@dataclass(frozen=True)
class LearnInput:
    """What a plugin's learner reads at the end of a run: the run, the lessons known, what earlier runs kept."""

    namespace: Namespace
    run_id: str
    task: TaskSpec
    steps: Sequence[Step]
    existing: Mapping[str, Lesson]
    """Every lesson known, this run's changes first."""
    config: MemoryConfig
    now: float
    tool_extras: Callable[[str], frozenset[str]]
    """Key -> the union of that string-list extra over the plugin's earlier runs of the task's tool."""
    tool_rules: Sequence[Lesson] | None
    """The conditional lessons (``applies_when`` set) of the task's tool, from the memory's index; None: read them
    off ``existing``."""


@runtime_checkable
class EnvPlugin(Protocol):
    """Learning from one kind of environment: what its runs keep, the lessons they teach, the episodes they make."""

    name: str
    """The key of its data in ``RunRecord.extras``."""
    domains: tuple[str, ...]
    """The ``TaskSpec.domain`` values it serves."""

    def claims(self, steps: Sequence[Step]) -> bool:
        """Whether the run's failures are this plugin's to learn from (the core then makes no rewrite lessons)."""
        ...

    def run_extras(self, task: TaskSpec, steps: Sequence[Step]) -> dict[str, list[Any]]:
        """What a finished run keeps for later runs (JSON-able lists), stored under ``RunRecord.extras[name]``."""
        ...

    def learn(self, given: LearnInput) -> dict[str, Lesson]:
        """The lessons the run teaches, merged with the stored ones of the same id."""
        ...

    def episode_steps(self, task: TaskSpec, commands: Sequence[Step], config: MemoryConfig) -> list[Step]:
        """The steps of a claimed run that its episodes keep (the ones that mattered, made general)."""
        ...

    @property
    def step_advisor(self) -> StepAdvisor | None:
        """Its advice at each step of an agent's run, when it gives any."""
        ...


class StepOpening(Protocol):
    """How an agent's run opens under step advice: the pre-run items in force, and the block shown before it."""

    @property
    def fitted(self) -> Sequence[ScoredItem]:
        """The pre-run items within the budget, in force from the start."""
        ...

    @property
    def block(self) -> Assembled:
        """What is shown before the first step."""
        ...


class StepSession(Protocol):
    """One middleware's advice over its runs; everything it keeps can be rebuilt from the run's state."""

    def shown(self, memory: LearningMemory, run_id: str, task: TaskSpec, steps: Sequence[Step],
              answers: Sequence[tuple[int, str]], opening: Callable[[], StepOpening]) -> list[Hint]:
        """What the model is shown before its next proposal."""
        ...

    def check(self, memory: LearningMemory, run_id: str, task: TaskSpec, steps: Sequence[Step],
              answers: Sequence[tuple[int, str]], opening: Callable[[], StepOpening], action: str) -> list[Hint]:
        """What memory holds against ``action`` proposed now; ``[]``: run it."""
        ...

    def activations(self, memory: LearningMemory, run_id: str, task: TaskSpec, steps: Sequence[Step],
                    answers: Sequence[tuple[int, str]], opening: Callable[[], StepOpening]) -> list[Activation]:
        """One activation per item advised so far in the run."""
        ...

    def drop(self, run_id: str) -> None:
        """Forget a finished run."""
        ...


@runtime_checkable
class StepAdvisor(Protocol):
    """Advice at each step of an agent's run (``LearningMiddleware(text_rules="at_step")``)."""

    def at_step(self, item: ScoredItem) -> bool:
        """Whether a retrieved item is delivered at the steps it bears on rather than before the run."""
        ...

    def open(self, items: Sequence[ScoredItem], config: MemoryConfig, budget: int) -> StepOpening:
        """The run's opening from its pre-run items."""
        ...

    def short_line(self, item: ScoredItem) -> str:
        """An item as one short line without its id (the form step advice shows lessons in)."""
        ...

    def answered(self, state_guard: Sequence[Any]) -> list[tuple[int, str]]:
        """The proposals answered so far, from the run state's guard entries (``GUARD_CALL_KIND`` ones skipped)."""
        ...

    def session(self) -> StepSession:
        """A fresh session for one middleware."""
        ...


_BY_DOMAIN: dict[str, EnvPlugin | str] = {}
"""Domain -> its plugin, or the ``module:attribute`` path it loads from on first use."""
_STEP_DEFAULT: list[str] = []
"""The domain whose plugin advises at steps when a middleware names no domain (the last registered so)."""


def register_plugin(plugin: EnvPlugin | str, domains: Collection[str] | None = None, *, step_default: bool = False) -> None:
    """Serve ``domains`` (default: the plugin's own) with ``plugin``, an object or a ``module:attribute`` path;
    ``step_default``: its step advice serves a middleware that names no domain.

    Raises:
        InvalidArgument: a path without ``:``, or a path registered without domains.
    """
    if isinstance(plugin, str):
        if ":" not in plugin or not domains:
            raise InvalidArgument(f"a plugin path is 'module:attribute' with its domains, got {plugin!r}")
    served = list(domains) if domains is not None else list(getattr(plugin, "domains", ()))
    for domain in served:
        _BY_DOMAIN[domain] = plugin
    if step_default and served:
        _STEP_DEFAULT[:] = [served[0]]


def _loaded(domain: str) -> EnvPlugin | None:
    found = _BY_DOMAIN.get(domain)
    if isinstance(found, str):
        module, _, attribute = found.partition(":")
        found = getattr(importlib.import_module(module), attribute)
        assert not isinstance(found, str)
        for other, entry in list(_BY_DOMAIN.items()):
            if entry == f"{module}:{attribute}":
                _BY_DOMAIN[other] = found
    return found


def plugin_for(task: TaskSpec) -> EnvPlugin | None:
    """The plugin serving the task's declared domain, loaded if registered by path; None when none does."""
    return _loaded(task.domain or "")


def step_advisor_for(domain: str | None) -> StepAdvisor | None:
    """The step advice of the plugin serving ``domain`` (None: the step default's); None when it gives none."""
    name = domain if domain is not None else (_STEP_DEFAULT[0] if _STEP_DEFAULT else "")
    plugin = _loaded(name)
    return plugin.step_advisor if plugin is not None else None


__all__ = [
    "GUARD_CALL_KIND",
    "EnvPlugin",
    "LearnInput",
    "StepAdvisor",
    "StepOpening",
    "StepSession",
    "plugin_for",
    "register_plugin",
    "step_advisor_for",
]
