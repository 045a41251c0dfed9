"""Environment registry: build a bundled environment by name.

The CLI, the bench harness and the examples name environments by their tool
name; this module maps the name to a fresh instance so they never import the
environment classes themselves.

Example:
    >>> env = make_env("gridtool")
    >>> env.name, env.domain
    ('gridtool', 'table-cli')
    >>> ENV_NAMES
    ('gridtool', 'fluxtool')
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
"""Names of the bundled environments, in a stable order."""


def make_env(name: str) -> Env:
    """A fresh environment for ``name`` (case and surrounding space ignored).

    Raises:
        EnvError: ``name`` is not one of ``ENV_NAMES``.
    """
    factory = _FACTORIES.get(str(name).strip().lower())
    if factory is None:
        raise EnvError(f"unknown environment {name!r}; choose one of: {', '.join(ENV_NAMES)}")
    return factory()


__all__ = ["ENV_NAMES", "make_env"]
