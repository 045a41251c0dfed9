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


MAX_RULE_DOC_LINES = 15


def test_every_text_game_rule_and_learning_mechanism_has_a_name_a_module_of_its_own_and_a_test_file() -> None:
    """Each rule's module says in at most 15 lines what it does and why, and ``tests/`` holds a file for it."""
    import inspect

    from langmem_plus.textgames.delivery_rules import PIPELINE as DELIVERY
    from langmem_plus.textgames.delivery_rules.guard import Guard
    from langmem_plus.textgames.learners import PIPELINE as LEARNING, SITUATIONS

    tests = Path(__file__).resolve().parent
    found = []
    for rule, prefix in [*((r, "test_rule_") for r in (*DELIVERY, Guard)), *((m, "test_learn_") for m in (*SITUATIONS, *LEARNING))]:
        module = inspect.getmodule(rule)
        assert module is not None and module.__name__.rsplit(".", 1)[1] == rule.name  # the module is named after it
        doc = inspect.getdoc(module) or ""
        assert doc.startswith(f"{rule.name}:") and doc.count("\n") + 1 <= MAX_RULE_DOC_LINES, rule.name
        assert (tests / f"{prefix}{rule.name}.py").is_file(), rule.name
        found.append(rule.name)
    assert len(found) == len(set(found)) == 7 + 11  # every name once
