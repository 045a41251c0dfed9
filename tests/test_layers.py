"""The package's layers hold: import-linter checks the contract in ``pyproject.toml`` (a lower layer never imports a
higher one at import time, so no package-level import cycles)."""

from __future__ import annotations

from pathlib import Path

import pytest
from importlinter.cli import lint_imports

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def test_every_package_sits_in_one_layer_of_the_contract() -> None:
    config = tomllib.loads(PYPROJECT.read_text())["tool"]["importlinter"]
    [contract] = config["contracts"]
    named = {name.strip() for layer in contract["layers"] for name in layer.split("|")}
    package = PYPROJECT.parent / "langmem_plus"
    present = {f"langmem_plus.{p.stem}" for p in package.glob("*.py") if p.stem != "__init__"}
    present |= {f"langmem_plus.{p.parent.name}" for p in package.glob("*/__init__.py")}
    assert present <= named, sorted(present - named)  # a new package or module must be given its layer


def test_no_layer_imports_a_higher_one() -> None:
    assert lint_imports(config_filename=str(PYPROJECT), no_cache=True, no_logo=True) == 0
