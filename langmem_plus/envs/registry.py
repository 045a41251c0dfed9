"""Environment registry: build an environment by name.

The CLI, the bench harness and the examples name environments by their tool
name; this module maps the name to a fresh instance so they never import the
environment classes themselves.

Two kinds of names:

- bundled tools, ``ENV_NAMES`` (no extra needed): ``gridtool``, ``fluxtool``;
- text games written by others, ``OPTIONAL_ENV_NAMES`` (the ``envs`` extra and a
  Java 17 runtime): ``twx-cooking``, ``twx-coin``, ``twx-twc`` with a setting as
  ``NAME:SETTING`` (``easy``, ``medium``, ``rooms3``, ``default``), and
  ``sciworld:TASKS[:SIMPLIFICATIONS]``; ``tw-cooking`` and ``tw-treasure`` (TextWorld
  games made with tw-make, the ``textworld`` extra). Their game packages are imported
  only when a game starts.

ScienceWorld's ``TASKS`` is one task name (``sciworld:boil``: task ids
``test-225``), or ``all`` or a comma list of names (``sciworld:all``,
``sciworld:boil,melt``: one env over those tasks, task ids ``boil/test-225``);
``SIMPLIFICATIONS`` is ``easy`` (the default), ``none``, or a comma list of
ScienceWorld's names (``sciworld:boil:none``, ``sciworld:all:teleportaction,opendoors``).

Example:
    >>> env = make_env("gridtool")
    >>> env.name, env.domain
    ('gridtool', 'table-cli')
    >>> ENV_NAMES
    ('gridtool', 'fluxtool')
    >>> OPTIONAL_ENV_NAMES
    ('twx-cooking', 'twx-coin', 'twx-twc', 'sciworld', 'tw-cooking', 'tw-treasure')
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from langmem_plus.envs.base import Env
from langmem_plus.envs.fluxtool import FluxToolEnv
from langmem_plus.envs.gridtool import GridToolEnv
from langmem_plus.errors import EnvError

_FACTORIES: Mapping[str, Callable[[], Env]] = {
    "gridtool": GridToolEnv,
    "fluxtool": FluxToolEnv,
}

ENV_NAMES: tuple[str, ...] = tuple(_FACTORIES)
"""Names of the bundled environments (no extra needed), in a stable order."""

OPTIONAL_ENV_NAMES: tuple[str, ...] = ("twx-cooking", "twx-coin", "twx-twc", "sciworld", "tw-cooking", "tw-treasure")
"""Text-game environments behind the ``envs`` extra (``tw-*``: the ``textworld`` extra); settings or tasks follow a colon."""


def _make_twx(game: str, setting: str | None) -> Env:
    from langmem_plus.envs.twx import DEFAULT_SETTING, TwxEnv, game_params

    setting = setting or DEFAULT_SETTING
    game_params(game, setting)  # validates before any JVM starts
    return TwxEnv(game, setting)


SCIWORLD_ALL = "all"
"""The ScienceWorld ``TASKS`` field that means every task."""


def _make_sciworld(option: str) -> Env:
    from langmem_plus.envs.sciworld import (
        DEFAULT_SIMPLIFICATIONS,
        SciWorldEnv,
        parse_simplifications,
    )
    from langmem_plus.envs.sciworld_suite import SciWorldSuiteEnv

    tasks, _, simplified = option.partition(":")
    if not tasks:
        raise EnvError(
            "sciworld needs a task name, e.g. 'sciworld:boil' or 'sciworld:all' (see langmem_plus.envs.sciworld.task_names())"
        )
    simplifications = parse_simplifications(simplified or DEFAULT_SIMPLIFICATIONS)
    if tasks == SCIWORLD_ALL:
        return SciWorldSuiteEnv(simplifications=simplifications)
    if "," in tasks:
        return SciWorldSuiteEnv([t.strip() for t in tasks.split(",") if t.strip()], simplifications=simplifications)
    return SciWorldEnv(tasks, simplifications=simplifications)


def _make_tw(game: str, setting: str | None) -> Env:
    from langmem_plus.envs.tw import TwEnv

    return TwEnv(game, setting or "default")


def optional_settings(name: str) -> tuple[str, ...]:
    """The settings (TextWorldExpress) or tasks (ScienceWorld) an optional env accepts after the colon.

    ScienceWorld's task list comes from its package, so it raises EnvError when the extra is missing;
    ``all`` and comma lists of its tasks are accepted too (module docstring).
    """
    key = str(name).strip().lower()
    if key.startswith("twx-") and key in OPTIONAL_ENV_NAMES:
        from langmem_plus.envs.twx import SETTINGS

        return tuple(SETTINGS[key.removeprefix("twx-")])
    if key.startswith("tw-") and key in OPTIONAL_ENV_NAMES:
        from langmem_plus.envs.tw import SETTINGS as TW_SETTINGS

        return tuple(TW_SETTINGS[key.removeprefix("tw-")])
    if key == "sciworld":
        from langmem_plus.envs.sciworld import task_names

        return tuple(task_names())
    raise EnvError(f"{name!r} is not an optional environment; choose one of: {', '.join(OPTIONAL_ENV_NAMES)}")


def make_env(name: str) -> Env:
    """A fresh environment for ``name`` (case and surrounding space ignored).

    Args:
        name: A bundled name (``"gridtool"``) or an optional one with its setting or
            task after a colon (``"twx-cooking:easy"``, ``"sciworld:boil"``,
            ``"sciworld:all:none"``: module docstring).

    Raises:
        EnvError: unknown name, setting or task; or an optional env whose extra or Java is missing.
    """
    key = str(name).strip().lower()
    factory = _FACTORIES.get(key)
    if factory is not None:
        return factory()
    base, _, option = key.partition(":")
    if base.startswith("twx-") and base in OPTIONAL_ENV_NAMES:
        return _make_twx(base.removeprefix("twx-"), option or None)
    if base.startswith("tw-") and base in OPTIONAL_ENV_NAMES:
        return _make_tw(base.removeprefix("tw-"), option or None)
    if base == "sciworld":
        return _make_sciworld(option)
    choices = ", ".join((*ENV_NAMES, *(f"{n}:..." for n in OPTIONAL_ENV_NAMES)))
    raise EnvError(f"unknown environment {name!r}; choose one of: {choices}")


__all__ = ["ENV_NAMES", "OPTIONAL_ENV_NAMES", "make_env", "optional_settings"]
