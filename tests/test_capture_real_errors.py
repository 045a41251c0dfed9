"""Fingerprints of REAL error messages, produced here by running real programs.

Each cause is produced twice with different literals (names, paths, line numbers).
Same-cause pairs must share a fingerprint; messages of different causes must not,
over all pairs. Nothing is pasted from memory: the texts come from Python's sqlite3
module, python3 tracebacks, and the sqlite3 / jq / git command lines when installed.
"""

from __future__ import annotations

import itertools
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from langmem_plus.capture import extract_tags, fingerprint

PEOPLE = "create table people(name text unique, age int); insert into people values ('ann', 30);"
USERS = "create table users(email text unique); insert into users values ('a@b.io');"


def sqlite_module_error(setup: str, query: str) -> str:
    """The error Python's sqlite3 module raises, formatted as a traceback's last line."""
    con = sqlite3.connect(":memory:")
    try:
        con.executescript(setup)
        con.execute(query)
    except sqlite3.Error as exc:
        return f"sqlite3.{type(exc).__name__}: {exc}"
    finally:
        con.close()
    raise AssertionError(f"{query!r} did not fail")


def python_stderr(code: str) -> str:
    """The traceback a real python3 prints for ``code``."""
    proc = subprocess.run(
        [sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=30
    )
    assert proc.returncode != 0, code
    return proc.stderr


def cli_stderr(argv: list[str], stdin: str = "", cwd: Path | None = None) -> str:
    """The stderr of a real command that fails, in the C locale and without user config."""
    env = {**os.environ, "LC_ALL": "C", "LANG": "C", "GIT_CONFIG_NOSYSTEM": "1"}
    if cwd is not None:
        env["HOME"] = str(cwd)
    proc = subprocess.run(
        argv, check=False, input=stdin, capture_output=True, text=True, timeout=30, env=env, cwd=cwd
    )
    assert proc.returncode != 0, argv
    return proc.stderr or proc.stdout


def _python_cases(tmp: Path) -> dict[str, tuple[str, str]]:
    return {
        "py_name_error": (
            python_stderr("print(undefined_x)"),
            python_stderr("\n\nx = 1\ny = some_other_name + x\n"),
        ),
        "py_key_error": (
            python_stderr("d = {'a': 1}\nd['bcd']"),
            python_stderr("\n\n\nconfig = {}\nprint(config['database_url'])\n"),
        ),
        "py_zero_division": (
            python_stderr("x = 5 / 0"),
            python_stderr("total = 10\ncount = 0\n\n\nprint(total / count)\n"),
        ),
        "py_file_not_found": (
            python_stderr(f"open({str(tmp / 'nope' / 'x.txt')!r})"),
            python_stderr(f"import os\n\nopen(os.path.join({str(tmp)!r}, 'missing-dir', 'data.csv'))"),
        ),
        "py_type_arity": (
            python_stderr("def f(a, b):\n    pass\nf(1)"),
            # two missing arguments: a plural message with a list of names
            python_stderr("\n\ndef load(path, mode, retries):\n    return path\n\n\nload('x.json')\n"),
        ),
    }


def _sqlite_module_cases() -> dict[str, tuple[str, str]]:
    return {
        "sqlite_no_such_column": (
            sqlite_module_error(PEOPLE, "select agee from people"),
            sqlite_module_error(PEOPLE, "select salary from people where age > 3"),
        ),
        "sqlite_no_such_table": (
            sqlite_module_error(PEOPLE, "select * from peoplez"),
            sqlite_module_error(PEOPLE, "select name from staff_2024"),
        ),
        "sqlite_syntax_near": (
            sqlite_module_error(PEOPLE, "selec * from people"),
            sqlite_module_error(PEOPLE, "select * from people wher age > 3"),
        ),
        "sqlite_unique_failed": (
            sqlite_module_error(PEOPLE, "insert into people values ('ann', 31)"),
            sqlite_module_error(USERS, "insert into users values ('a@b.io')"),
        ),
    }


def _cli_cases(tmp: Path) -> dict[str, tuple[str, str]]:
    cases: dict[str, tuple[str, str]] = {}
    if shutil.which("sqlite3"):
        cases["sqlite_cli_no_such_column"] = (
            cli_stderr(["sqlite3", ":memory:", "create table t(a); select zz from t;"]),
            cli_stderr(["sqlite3", ":memory:", "create table u(a, b); select u.qq from u;"]),
        )
        cases["sqlite_cli_syntax_near"] = (
            cli_stderr(["sqlite3", ":memory:", "selec 1"]),
            cli_stderr(["sqlite3", ":memory:", "create table t(a); select 1 frm t"]),
        )
    if shutil.which("jq"):
        cases["jq_not_defined"] = (
            cli_stderr(["jq", ".a | foo"], '{"a": 1}\n'),
            cli_stderr(["jq", ".items | map(barbaz)"], '{"items": []}\n'),
        )
        cases["jq_unfinished_json"] = (
            cli_stderr(["jq", "."], '{"a": 1'),
            cli_stderr(["jq", "."], "[1,\n2,\n"),
        )
    if shutil.which("git"):
        cases["git_not_a_command"] = (
            cli_stderr(["git", "frobnicate"], cwd=tmp),
            cli_stderr(["git", "comit"], cwd=tmp),  # also prints a "most similar command" tail
        )
        cases["git_cannot_change_dir"] = (
            cli_stderr(["git", "-C", str(tmp / "no-such-dir"), "status"], cwd=tmp),
            cli_stderr(["git", "-C", "/nonexistent/x/y", "log"], cwd=tmp),
        )
    return cases


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, str]]:
    tmp = tmp_path_factory.mktemp("capture_real")
    return {**_sqlite_module_cases(), **_python_cases(tmp), **_cli_cases(tmp)}


def test_each_cause_was_produced_with_different_literals(corpus: dict[str, tuple[str, str]]) -> None:
    assert len(corpus) >= 9
    for label, (a, b) in corpus.items():
        assert a and b and a != b, label


def test_same_cause_pairs_share_a_fingerprint(corpus: dict[str, tuple[str, str]]) -> None:
    for label, (a, b) in corpus.items():
        assert fingerprint(a) == fingerprint(b), (label, a, b)


def test_different_causes_never_collide(corpus: dict[str, tuple[str, str]]) -> None:
    fps = {label: {fingerprint(a), fingerprint(b)} for label, (a, b) in corpus.items()}
    for (la, fa), (lb, fb) in itertools.combinations(fps.items(), 2):
        assert not (fa & fb), (la, lb, fa & fb)


@pytest.mark.parametrize("cli", ["sqlite3", "jq", "git"])
def test_at_least_this_cli_was_exercised(cli: str, corpus: dict[str, tuple[str, str]]) -> None:
    if not shutil.which(cli):
        pytest.skip(f"{cli} is not installed")
    prefix = {"sqlite3": "sqlite_cli_", "jq": "jq_", "git": "git_"}[cli]
    assert any(label.startswith(prefix) for label in corpus)


EXPECTED_TAGS = {
    "sqlite_no_such_column": {"column_reference", "not_found"},
    "sqlite_no_such_table": {"not_found", "unknown_symbol"},
    "sqlite_syntax_near": {"syntax_structure"},
    "sqlite_unique_failed": {"constraint_failed"},
    "py_name_error": {"unknown_symbol"},
    "py_key_error": {"not_found"},
    "py_file_not_found": {"not_found", "path_quote"},
    "py_type_arity": {"arity_mismatch"},
    "sqlite_cli_no_such_column": {"column_reference"},
    "sqlite_cli_syntax_near": {"syntax_structure"},
    "jq_not_defined": {"unknown_symbol"},
    "jq_unfinished_json": {"syntax_structure"},
    "git_not_a_command": {"unknown_command"},
    "git_cannot_change_dir": {"not_found", "path_quote"},
}


def test_real_errors_get_their_structural_tags(corpus: dict[str, tuple[str, str]]) -> None:
    for label, (a, b) in corpus.items():
        expected = EXPECTED_TAGS.get(label, set())
        assert expected <= set(extract_tags(a)), (label, a, extract_tags(a))
        assert extract_tags(a) == extract_tags(b), label
