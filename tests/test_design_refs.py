"""The code's references to the design (``design.md §N``) point at sections ``docs/design.md`` has."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REF = re.compile(r"design\.md §(\d+(?:\.\d+)?)")
HEADING = re.compile(r"^#{2,3} (\d+(?:\.\d+)?)\.? ", re.MULTILINE)


def test_every_design_section_the_code_cites_exists() -> None:
    sections = set(HEADING.findall((ROOT / "docs" / "design.md").read_text(encoding="utf-8")))
    assert {"1", "5", "5.6", "11"} <= sections
    cited: dict[str, str] = {}
    for path in [*ROOT.joinpath("langmem_plus").rglob("*.py"), *ROOT.joinpath("tests").glob("*.py"), *ROOT.joinpath("docs").glob("*.md")]:
        for ref in REF.findall(path.read_text(encoding="utf-8")):
            cited.setdefault(ref, str(path.relative_to(ROOT)))
    assert len(cited) >= 10, "the code cites the design"
    missing = {ref: where for ref, where in cited.items() if ref not in sections}
    assert not missing, f"cited sections docs/design.md lacks: {missing}"


def test_no_code_or_document_cites_an_issue_number() -> None:
    """Issues are the team's unit of work, not the project's documentation: what an issue decided is said in the code,
    the design or the changelog."""
    issue = re.compile(r"\b[Ii]ssue #?\d+")
    paths = [*ROOT.joinpath("langmem_plus").rglob("*.py"), *ROOT.joinpath("tests").glob("*.py"),
             *ROOT.joinpath("docs").glob("*.md"), ROOT / "README.md"]
    found = [f"{p.relative_to(ROOT)}: {m.group()}" for p in paths for m in issue.finditer(p.read_text(encoding="utf-8"))]
    assert not found, found[:10]
