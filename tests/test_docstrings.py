"""Code says what it does in a few lines: no module docstring is a design document (those live in ``docs/``)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "langmem_plus"
MAX_MODULE_DOC_LINES = 40


def test_no_module_docstring_runs_over_forty_lines() -> None:
    long = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        doc = ast.get_docstring(ast.parse(path.read_text()), clean=False)
        if doc and doc.count("\n") + 1 > MAX_MODULE_DOC_LINES:
            long[str(path.relative_to(PACKAGE))] = doc.count("\n") + 1
    assert long == {}
