"""Code says what it does in a few lines (design documents live in ``docs/``), and the docs' links resolve."""

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


def test_every_relative_link_in_the_readme_and_docs_resolves() -> None:
    import re

    root = PACKAGE.parent
    missing = []
    for doc in [root / "README.md", *sorted((root / "docs").glob("*.md"))]:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", doc.read_text()):
            if not target.startswith(("http://", "https://")) and not (doc.parent / target).exists():
                missing.append(f"{doc.relative_to(root)} -> {target}")
    assert missing == []
