"""The command line fits people's habits: ``--help`` lists every command in one line each and comes back at once,
long commands show progress on stderr, and an error says what to do (a server to start, an extra to install)."""

from __future__ import annotations

import argparse
import io
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from langmem_plus.cli import build_parser, main
from langmem_plus.envs.textgame import require_module
from langmem_plus.errors import EnvError
from langmem_plus.report_store import stderr_progress

COMMANDS = ("demo", "lessons", "inspect", "report", "bench")


def _choices(parser: argparse.ArgumentParser) -> dict[str, tuple[argparse.ArgumentParser, str]]:
    """A parser's subcommands: name -> (its parser, its one-line help)."""
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {c.dest: c.help or "" for c in action._choices_actions}
    return {name: (sub, helps.get(name, "")) for name, sub in action.choices.items()}


def test_help_lists_every_command_and_every_bench_in_one_line_each() -> None:
    top = build_parser(["--help"])
    commands = _choices(top)
    assert tuple(commands) == COMMANDS
    text = top.format_help()
    benches = _choices(commands["bench"][0])
    assert {"env", "protocol", "stress", "foundation"} <= set(benches)
    for name, (_, line) in {**commands, **benches}.items():
        assert line and "\n" not in line and "``" not in line and not line.startswith("`langmem-plus"), name
    for name, (_, line) in commands.items():
        assert name in text and " ".join(line.split()[:4]) in " ".join(text.split()), name
    assert all(name in " ".join(text.split()) for name in benches)  # the bench line names them all


def test_help_comes_back_without_importing_the_benches() -> None:
    code = ("import sys; from langmem_plus.cli import build_parser; build_parser(['bench', '--help']).format_help(); "
            "print(sorted(m for m in ('chromadb', 'langgraph', 'langchain') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize("argv", [[c, "--help"] for c in COMMANDS] + [["bench", "stress", "--help"]], ids=lambda a: " ".join(a))
def test_every_command_has_its_help(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 0 and capsys.readouterr().out.startswith("usage: langmem-plus")


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("command", [["lessons"], ["report", "--out", "rep"]], ids=["lessons", "report"])
def test_an_unreachable_server_names_its_url_and_how_to_start_one(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    port = _closed_port()  # nothing listens on it: a real refused connection
    url = f"http://127.0.0.1:{port}"
    start = time.monotonic()
    assert main([*command, "--url", url, "--store", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"no Chroma server answers at {url}" in err
    assert f"start one with `chroma run --path <dir> --host 127.0.0.1 --port {port}`" in err
    assert "Traceback" not in err and time.monotonic() - start < 10


def test_a_missing_store_is_an_error_naming_how_to_make_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "typo"
    for argv in (["lessons", "--store", str(missing)], ["report", "--store", str(missing), "--out", str(tmp_path / "r")]):
        assert main(argv) == 2
        assert f"no memory at {missing}: make one with `langmem-plus demo --store {missing}`" in capsys.readouterr().err
    assert not missing.exists()  # reading a memory never makes an empty one


def test_a_missing_extra_names_the_pip_line() -> None:
    with pytest.raises(EnvError, match=r"pip install 'langmem-plus\[envs\]'"):
        require_module("langmem_plus_no_such_game", "no-such-game")


def test_the_report_without_matplotlib_names_the_pip_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("matplotlib", "langmem_plus.report", "langmem_plus.report_store_page"):
        monkeypatch.setitem(sys.modules, name, None)  # an import of it now raises ImportError
    assert main(["report", "--store", str(tmp_path), "--out", str(tmp_path / "r")]) == 2
    assert "pip install 'langmem-plus[report]'" in capsys.readouterr().err


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_is_a_line_per_report_and_one_rewritten_line_on_a_terminal() -> None:
    log = io.StringIO()
    show = stderr_progress(log)
    show("lessons", 200, 450)
    show("lessons", 450, 450)
    show("audit records", 7, 0)
    assert log.getvalue().splitlines() == ["report: lessons 200/450", "report: lessons 450/450", "report: audit records 7"]
    term = _Terminal()
    show = stderr_progress(term)
    show("lessons", 200, 450)
    show("lessons", 450, 450)
    assert term.getvalue() == "\r\x1b[2Kreport: lessons 200/450\r\x1b[2Kreport: lessons 450/450\n"
