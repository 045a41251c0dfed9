"""A tool world: four real programs (sqlite3, jq, git, awk) behind LangChain tools.

Each tool runs the real binary with an argument list (never a shell) on fixtures written
into a directory the caller owns, and fails with the program's own stderr, so the errors an
agent sees are the errors those programs really print.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

from langchain_core.tools import BaseTool, StructuredTool, ToolException
from pydantic import BaseModel, Field

from langmem_plus.bench.toolworld.build import DB_NAME, REPO_NAME, git_env, write_world
from langmem_plus.bench.toolworld.fixtures import Catalog, make_catalog

__all__ = [
    "GIT_READ_ONLY",
    "PROGRAMS",
    "MissingProgramError",
    "ToolRunError",
    "ToolWorld",
]

TIMEOUT_S = 5.0
_STDERR_LINES = 3

#: program -> the apt package that provides it
PROGRAMS: dict[str, str] = {"sqlite3": "sqlite3", "jq": "jq", "git": "git", "awk": "mawk"}

#: git subcommands the `git` tool runs; every other one is refused
GIT_READ_ONLY = frozenset({"log", "diff", "show", "branch", "rev-list", "status", "ls-files"})

# options of `git branch` that change branches rather than list them
_BRANCH_WRITING = frozenset({
    "-d", "-D", "-m", "-M", "-c", "-C", "-f", "-u", "--delete", "--move", "--copy", "--force",
    "--track", "--no-track", "--unset-upstream", "--edit-description",
})
_BRANCH_LISTING = frozenset({"--list", "-l", "--contains", "--no-contains", "--merged",
                             "--no-merged", "--points-at"})
_AWK_UNSAFE = re.compile(r"\bsystem\s*\(|\bgetline\b|(?<!\|)\|(?!\|)")


class _SqlArgs(BaseModel):
    query: str = Field(description="One SQL statement for sqlite3.")


class _JqArgs(BaseModel):
    filter: str = Field(description="The jq filter.")
    file: str = Field(description="The JSON file to read.")


class _GitArgs(BaseModel):
    args: str = Field(description="The command line after `git`, e.g. `log --oneline -3`.")


class _AwkArgs(BaseModel):
    program: str = Field(description="The awk program text.")
    file: str = Field(description="The text file to read.")


class MissingProgramError(RuntimeError):
    """A program a tool world needs is not installed."""


class ToolRunError(ToolException):
    """A tool call failed; the message is what the program printed on stderr (trimmed)."""

    def __init__(self, program: str, message: str, returncode: int | None = None) -> None:
        super().__init__(message)
        self.program = program
        self.returncode = returncode


def _trim(stderr: str) -> str:
    lines = [line.rstrip() for line in stderr.strip("\n").splitlines()]
    return "\n".join(lines[:_STDERR_LINES]).strip()


class ToolWorld:
    """Fixtures for sqlite3, jq, git and awk in `root`, and one LangChain tool per program.

    Args:
        root: An empty directory the caller owns (a temp dir; made if missing); the world writes
            its database, JSON files, text files and a git repository there.
        seed: Draws the world's content; the same seed gives the same world.

    Raises:
        MissingProgramError: A program is not on PATH (the message names its apt package).
    """

    def __init__(self, root: Path, seed: int = 0) -> None:
        missing = [f"{prog} (apt package {pkg})" for prog, pkg in PROGRAMS.items()
                   if shutil.which(prog) is None]
        if missing:
            raise MissingProgramError("ToolWorld needs these programs: " + ", ".join(missing))
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.seed = seed
        self.catalog: Catalog = make_catalog(seed)
        write_world(self.root, self.catalog)
        self.db_path = self.root / DB_NAME
        self.repo_path = self.root / REPO_NAME
        self._env = git_env(self.root)
        self.tools: list[BaseTool] = self._make_tools()

    # ----------------------------------------------------------------------------- running
    def _run(self, program: str, argv: list[str], cwd: Path) -> str:
        try:
            proc = subprocess.run(
                argv, cwd=cwd, env=self._env, capture_output=True, text=True,
                timeout=TIMEOUT_S, stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired:
            raise ToolRunError(program, f"{program}: timed out after {TIMEOUT_S:g} s") from None
        if proc.returncode != 0:
            message = _trim(proc.stderr) or f"{program}: exit status {proc.returncode}"
            raise ToolRunError(program, message, proc.returncode)
        return proc.stdout

    def _check_file(self, program: str, file: str, allowed: tuple[str, ...]) -> None:
        if file not in allowed:
            raise ToolRunError(
                program, f"{program}: no file {file!r} in this world (files: {', '.join(allowed)})"
            )

    def run_sql(self, query: str) -> str:
        """Run `query` with sqlite3 on the world's database (read-only, safe mode)."""
        if query.lstrip().startswith("."):
            raise ToolRunError("sqlite3", "sqlite3: dot-commands are not allowed; send SQL only")
        argv = ["sqlite3", "-batch", "-safe", "-readonly", str(self.db_path), query]
        return self._run("sqlite3", argv, self.root)

    def run_jq(self, filter: str, file: str) -> str:
        """Run jq 1.6 with `filter` on the JSON file `file` of the world."""
        self._check_file("jq", file, self.catalog.json_files)
        return self._run("jq", ["jq", filter, file], self.root)

    def run_awk(self, program: str, file: str) -> str:
        """Run the machine's awk (mawk) with `program` on the text file `file` of the world."""
        self._check_file("awk", file, self.catalog.text_files)
        if _AWK_UNSAFE.search(program):
            raise ToolRunError("awk", "awk: system(), getline and pipes are not allowed here")
        return self._run("awk", ["awk", "--", program, file], self.root)

    def run_git(self, args: str) -> str:
        """Run a read-only git subcommand (`args` split like a shell would) in the repository."""
        try:
            argv = shlex.split(args)
        except ValueError as exc:
            raise ToolRunError("git", f"git: cannot split arguments: {exc}") from None
        if argv and argv[0] == "git":
            argv = argv[1:]
        if not argv or argv[0] not in GIT_READ_ONLY:
            allowed = ", ".join(sorted(GIT_READ_ONLY))
            raise ToolRunError("git", f"git: only read-only subcommands are allowed ({allowed})")
        rest = argv[1:]
        if any(a.startswith("--output") or a == "--no-index" for a in rest):
            raise ToolRunError("git", "git: --output and --no-index are not allowed here")
        if argv[0] == "branch" and (
            any(a in _BRANCH_WRITING or a.startswith("--set-upstream") for a in rest)
            or (not _BRANCH_LISTING.intersection(rest) and any(not a.startswith("-") for a in rest))
        ):
            raise ToolRunError("git", "git: `git branch` may only list branches here")
        return self._run("git", ["git", "--no-pager", *argv], self.repo_path)

    def call(self, tool_name: str, args: Mapping[str, str]) -> str:
        """Run one tool call by name, as the agent's tool would; raises ToolRunError on failure."""
        runners = {
            "run_sql": lambda: self.run_sql(args["query"]),
            "jq": lambda: self.run_jq(args["filter"], args["file"]),
            "git": lambda: self.run_git(args["args"]),
            "awk": lambda: self.run_awk(args["program"], args["file"]),
        }
        if tool_name not in runners:
            raise KeyError(f"no tool {tool_name!r} in this world")
        return runners[tool_name]()

    # ----------------------------------------------------------------------------- tools
    def _make_tools(self) -> list[BaseTool]:
        tables = ", ".join(f"{t.name}({', '.join(t.columns)})" for t in self.catalog.tables)
        return [
            StructuredTool.from_function(
                func=self.run_sql, name="run_sql", args_schema=_SqlArgs,
                description="Run one SQL query with the sqlite3 program on the database and "
                            f"return its output. Tables: {tables}.",
            ),
            StructuredTool.from_function(
                func=self.run_jq, name="jq", args_schema=_JqArgs,
                description="Run the jq program (version 1.6) with a filter on one of the JSON "
                            f"files: {', '.join(self.catalog.json_files)}.",
            ),
            StructuredTool.from_function(
                func=self.run_git, name="git", args_schema=_GitArgs,
                description="Run a read-only git command (log, diff, show, branch, rev-list, "
                            "status, ls-files) in the project repository.",
            ),
            StructuredTool.from_function(
                func=self.run_awk, name="awk", args_schema=_AwkArgs,
                description="Run the awk program (mawk) on one of the whitespace-separated text "
                            f"files: {', '.join(self.catalog.text_files)}.",
            ),
        ]
