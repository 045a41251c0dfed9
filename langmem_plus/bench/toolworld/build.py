"""Write a catalog to disk: an SQLite database, JSON files, text files and a git repository.

The files are the fixtures the real programs run on; nothing here runs a query. Git commits
carry fixed dates and identities so that the same seed gives the same commit hashes.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from pathlib import Path

from langmem_plus.bench.toolworld.fixtures import Catalog, Commit

__all__ = ["DB_NAME", "REPO_NAME", "git_env", "write_world"]

DB_NAME = "world.db"
REPO_NAME = "repo"
_EPOCH = 1_700_000_000


def git_env(root: Path, when: int | None = None) -> dict[str, str]:
    """Environment for git that needs no global configuration and pages nothing."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(root),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_AUTHOR_NAME": "Toolworld Author",
        "GIT_AUTHOR_EMAIL": "author@toolworld.invalid",
        "GIT_COMMITTER_NAME": "Toolworld Author",
        "GIT_COMMITTER_EMAIL": "author@toolworld.invalid",
        "GIT_PAGER": "cat",
        "GIT_OPTIONAL_LOCKS": "0",
        "GIT_TERMINAL_PROMPT": "0",
        "LC_ALL": "C",
    }
    if when is not None:
        stamp = f"@{when} +0000"
        env["GIT_AUTHOR_DATE"] = stamp
        env["GIT_COMMITTER_DATE"] = stamp
    return env


def _write_db(path: Path, catalog: Catalog) -> None:
    con = sqlite3.connect(path)
    try:
        for t in catalog.tables:
            label, text, (n1, n2) = t.label, t.text, t.nums
            con.execute(
                f"CREATE TABLE {t.name} (id INTEGER PRIMARY KEY, {label} TEXT, {text} TEXT, "
                f"{n1} INTEGER, {n2} INTEGER)"
            )
            con.executemany(f"INSERT INTO {t.name} VALUES (?, ?, ?, ?, ?)", t.rows)
        con.commit()
    finally:
        con.close()


def _write_json(root: Path, catalog: Catalog) -> None:
    for file in catalog.json_files:
        doc: dict[str, list[dict[str, object]]] = {}
        for jl in catalog.lists:
            if jl.file == file:
                doc[jl.key] = [
                    {jl.label: lab, jl.nums[0]: a, jl.nums[1]: b} for lab, a, b in jl.items
                ]
        (root / file).write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")


def _write_texts(root: Path, catalog: Catalog) -> None:
    for tf in catalog.texts:
        lines = [" ".join(str(v) for v in row) for row in tf.rows]
        (root / tf.name).write_text("\n".join(lines) + "\n", encoding="utf-8")


def _git(repo: Path, root: Path, *args: str, when: int | None = None) -> None:
    subprocess.run(
        ["git", *args], cwd=repo, env=git_env(root, when), check=True,
        capture_output=True, timeout=10,
    )


def _commit(repo: Path, root: Path, commit: Commit, when: int) -> None:
    for path, content in commit.files:
        target = repo / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
    _git(repo, root, "add", "--", *(p for p, _ in commit.files))
    _git(repo, root, "commit", "-q", "-m", commit.subject, when=when)


def _write_repo(repo: Path, root: Path, catalog: Catalog) -> None:
    repo.mkdir()
    _git(repo, root, "init", "-q", "-b", catalog.default_branch)
    when = _EPOCH + 86_400 * (catalog.seed % 1000)
    tips: list[str] = []
    for commit in catalog.main:
        when += 3600
        _commit(repo, root, commit, when)
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=repo, env=git_env(root), check=True,
            capture_output=True, text=True, timeout=10,
        )
        tips.append(out.stdout.strip())
    for branch in catalog.branches:
        _git(repo, root, "checkout", "-q", "-b", branch.name, tips[branch.base])
        for commit in branch.commits:
            when += 600
            _commit(repo, root, commit, when)
    _git(repo, root, "checkout", "-q", catalog.default_branch)


def write_world(root: Path, catalog: Catalog) -> None:
    """Write every fixture of `catalog` into the existing directory `root`."""
    _write_db(root / DB_NAME, catalog)
    _write_json(root, catalog)
    _write_texts(root, catalog)
    _write_repo(root / REPO_NAME, root, catalog)
