"""Environment plugins: learning that belongs to one kind of environment, behind one small protocol.

The core learns from any run: failures become rewrite lessons, outcomes judge them. What only one kind of
environment can teach (a text game's "Avoid `eat <X>`" from a lost game) lives in a plugin. A task chooses its
plugin by the domain it declares (``TaskSpec.domain``), never by the shape of its steps; a plugin registers the
domains it serves, by object or, for a built-in, by module path (loaded on first use, so the core never imports it).

Example:
    >>> from langmem_plus.records import TaskSpec
    >>> plugin_for(TaskSpec(task_id="t", goal="g", domain="table-cli")) is None
    True
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from langmem_plus.config import MemoryConfig
from langmem_plus.errors import InvalidArgument
from langmem_plus.records import Lesson, Namespace, Step, TaskSpec


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


_BY_DOMAIN: dict[str, EnvPlugin | str] = {}
"""Domain -> its plugin, or the ``module:attribute`` path it loads from on first use."""


def register_plugin(plugin: EnvPlugin | str, domains: Collection[str] | None = None) -> None:
    """Serve ``domains`` (default: the plugin's own) with ``plugin``, an object or a ``module:attribute`` path.

    Raises:
        InvalidArgument: a path without ``:``, or a path registered without domains.
    """
    if isinstance(plugin, str):
        if ":" not in plugin or not domains:
            raise InvalidArgument(f"a plugin path is 'module:attribute' with its domains, got {plugin!r}")
    served = list(domains) if domains is not None else list(getattr(plugin, "domains", ()))
    for domain in served:
        _BY_DOMAIN[domain] = plugin


def plugin_for(task: TaskSpec) -> EnvPlugin | None:
    """The plugin serving the task's declared domain, loaded if registered by path; None when none does."""
    found = _BY_DOMAIN.get(task.domain or "")
    if isinstance(found, str):
        module, _, attribute = found.partition(":")
        found = getattr(importlib.import_module(module), attribute)
        assert not isinstance(found, str)
        for domain, entry in list(_BY_DOMAIN.items()):
            if entry == f"{module}:{attribute}":
                _BY_DOMAIN[domain] = found
    return found


__all__ = ["EnvPlugin", "LearnInput", "plugin_for", "register_plugin"]
