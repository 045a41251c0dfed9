"""The package's layers hold: import-linter checks the contract in ``pyproject.toml`` (a lower layer never imports a
higher one at import time, so no package-level import cycles)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def test_every_package_sits_in_one_layer_of_the_contract() -> None:
    config = tomllib.loads(PYPROJECT.read_text())["tool"]["importlinter"]
    [contract] = [c for c in config["contracts"] if c["type"] == "layers"]
    named = {name.strip() for layer in contract["layers"] for name in layer.split("|")}
    package = PYPROJECT.parent / "langmem_plus"
    present = {f"langmem_plus.{p.stem}" for p in package.glob("*.py") if p.stem != "__init__"}
    present |= {f"langmem_plus.{p.parent.name}" for p in package.glob("*/__init__.py")}
    assert present <= named, sorted(present - named)  # a new package or module must be given its layer


def test_no_layer_imports_a_higher_one() -> None:
    # its own process: import-linter configures logging, which disables every logger this suite's tests read
    check = (f"from importlinter.cli import lint_imports; "
             f"raise SystemExit(lint_imports(config_filename={str(PYPROJECT)!r}, no_cache=True))")
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
