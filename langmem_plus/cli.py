"""The ``langmem-plus`` command line.

    langmem-plus demo [--runs N] [--tool gridtool|fluxtool] [--store PATH] [--seed S] [--json]
    langmem-plus lessons [--store PATH] [--namespace a/b] [--status S] [--json]
    langmem-plus inspect lesson ID [--store PATH] [--namespace a/b]
    langmem-plus report --from RESULT.json --out DIR                      (a bench result's plots)
    langmem-plus report --store PATH [--url URL] [--namespace a/b] --out DIR   (a memory's page)
    langmem-plus bench NAME [--json] [--seed S] ...   (one per module in langmem_plus/bench/)

``--help`` lists every command in one line each, and a bench's options under
``bench NAME --help``; a bench module is imported only to run it, so help comes back at
once. Long commands (``demo``, ``report --store``) print progress on stderr and their
result on stdout. Errors a user can fix (a bad path, a missing store, an unreachable
server, a missing extra, a bad namespace) print one line saying what to do and exit 2;
they never dump a traceback.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import json
import logging
import pkgutil
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from langmem_plus.errors import InvalidArgument, LangmemPlusError, StoreUnavailable

if TYPE_CHECKING:
    from langmem_plus.memory import LearningMemory

DEFAULT_STORE = ".langmem_plus"


def _namespace(text: str | None, default: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(p for p in text.split("/")) if text else default


def _cmd_demo(args: argparse.Namespace) -> int:
    from langmem_plus.demo import rows_as_json, rows_as_table, run_demo, stderr_progress

    rows = run_demo(
        runs=args.runs,
        tool=args.tool,
        store=args.store,
        url=args.url,
        seed=args.seed,
        namespace=_namespace(args.namespace, ("demo", args.tool)),
        progress=stderr_progress(),
    )
    if args.json:
        print(json.dumps(rows_as_json(rows)))
    else:
        print(rows_as_table(rows))
    return 0


def _existing_store(store: str | None, url: str | None) -> str:
    """The store folder a reading command opens; a missing one is an error, not a new empty store."""
    path = store or DEFAULT_STORE
    if url is None and not Path(path).is_dir():
        raise StoreUnavailable(
            f"no memory at {path}: make one with `langmem-plus demo --store {path}`, or give --store the folder of an "
            "existing store (or --url a Chroma server)"
        )
    return path


def _open(args: argparse.Namespace, default_ns: tuple[str, ...]) -> LearningMemory:
    from langmem_plus.memory import LearningMemory

    path = _existing_store(args.store, args.url)
    return LearningMemory.open(path, url=args.url, namespace=_namespace(args.namespace, default_ns))


def _cmd_lessons(args: argparse.Namespace) -> int:
    with _open(args, ("demo", "gridtool")) as mem:
        lessons = mem.list_lessons(args.status)
        if args.json:
            print(json.dumps([l.model_dump(mode="json") for l in lessons]))
            return 0
        for l in lessons:
            print(f"{l.id}  {l.status:<10} rel={l.reliability:.2f} act={l.stats.activations:<3} {l.rule_text[:90]}")
        print(f"{len(lessons)} lessons", file=sys.stderr)
    return 0


def _cmd_inspect(args: argparse.Namespace) -> int:
    with _open(args, ("demo", "gridtool")) as mem:
        lesson = mem.get_lesson(args.id)
        if lesson is None:
            print(f"langmem-plus: no lesson {args.id!r} in namespace {'/'.join(mem.namespace)}", file=sys.stderr)
            return 2
        print(json.dumps(lesson.model_dump(mode="json"), indent=2))
        from langmem_plus.learning.explain import explain_history

        print("--- history (audit log) ---")
        for line in explain_history(mem.history(args.id), lesson_id=args.id):
            print(line)
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    from_memory = args.store is not None or args.url is not None
    if (args.source is None) == (not from_memory):
        raise InvalidArgument(
            "report needs exactly one source: --from RESULT.json (a bench result) or --store PATH / --url URL (a memory)"
        )
    try:
        if from_memory:
            from langmem_plus.report_store_page import write_store_report
        else:
            from langmem_plus.report import load_result, write_report
    except ImportError as exc:
        print(f"langmem-plus: the report needs matplotlib: pip install 'langmem-plus[report]' ({exc})", file=sys.stderr)
        return 2
    if from_memory:
        return _report_memory(args, write_store_report)
    try:
        result = load_result(args.source)
    except (OSError, ValueError) as exc:
        print(f"langmem-plus: cannot read {args.source}: {exc}", file=sys.stderr)
        return 2
    print(write_report(result, args.out))
    return 0


def _report_memory(args: argparse.Namespace, write: Callable[..., Path]) -> int:
    """``report --store``: read the namespace (progress on stderr), then write the page."""
    from langmem_plus.memory import LearningMemory
    from langmem_plus.report_store import read_page, stderr_progress

    progress = stderr_progress()
    namespace = _namespace(args.namespace, ("demo", "gridtool"))
    print(f"report: opening {args.url or args.store} namespace {'/'.join(namespace)}", file=sys.stderr)
    with LearningMemory.open(_existing_store(args.store, args.url), url=args.url, namespace=namespace) as mem:
        page = read_page(mem, progress=progress)
    print(write(page, args.out, progress=progress))
    return 0


@dataclass(frozen=True)
class _Bench:
    """A bench module found in ``langmem_plus.bench``, read from its source: it is imported only to run."""

    name: str
    module: str
    summary: str


_BENCH_LEAD = re.compile(r"^``langmem-plus bench [\w-]+``:\s*")
"""The lead of a bench module's docstring, which its help line leaves out."""


def _summary(doc: str | None) -> str:
    """A module docstring's first line without its ``langmem-plus bench NAME``: lead."""
    first = (doc or "").strip().splitlines()[0] if (doc or "").strip() else ""
    return _BENCH_LEAD.sub("", first).replace("``", "`")


def _bench_index() -> dict[str, _Bench]:
    """Every module of ``langmem_plus.bench`` that sets ``BENCH_NAME``, by that name, found without importing it:
    a bench imports the memory, LangChain and Chroma, which ``--help`` has no need of."""
    import langmem_plus.bench as bench_pkg

    found: dict[str, _Bench] = {}
    for info in sorted(pkgutil.iter_modules(bench_pkg.__path__), key=lambda m: m.name):
        module = f"langmem_plus.bench.{info.name}"
        spec = importlib.util.find_spec(module)
        if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
            continue
        tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
        for node in tree.body:
            if (isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "BENCH_NAME" for t in node.targets)
                    and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):
                found[node.value.value] = _Bench(node.value.value, module, _summary(ast.get_docstring(tree)))
    return found


def _wanted_bench(argv: Sequence[str] | None) -> str | None:
    """The bench ``argv`` runs (the word after ``bench``), or None."""
    words = list(argv or ())
    if "bench" not in words:
        return None
    rest = [w for w in words[words.index("bench") + 1:] if not w.startswith("-")]
    return rest[0] if rest else None


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The argument parser (exposed for tests and docs).

    ``argv``: the command line it is built to parse; only the bench it runs is imported, with its options. Without
    it every bench is imported, so each bench's help lists its options.
    """
    p = argparse.ArgumentParser(prog="langmem-plus", description="A learning memory for LangGraph agents.")
    p.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    sub = p.add_subparsers(dest="command", required=True)

    def command(name: str, summary: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=summary, description=summary[0].upper() + summary[1:] + ".")

    def store_args(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--store", default=DEFAULT_STORE, metavar="PATH", help="embedded store folder (default ./.langmem_plus)")
        sp.add_argument("--url", default=None, metavar="URL", help="a Chroma server instead, e.g. http://127.0.0.1:8000")
        sp.add_argument("--namespace", default=None, metavar="a/b", help="namespace parts joined by '/', e.g. acme/agent-7")

    d = command("demo", "watch the scripted agent learn a made-up tool")
    d.add_argument("--runs", type=int, default=3, help="runs over all tasks (default 3)")
    d.add_argument("--tool", choices=("gridtool", "fluxtool"), default="gridtool")
    d.add_argument("--seed", type=int, default=0)
    d.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    store_args(d)
    d.set_defaults(func=_cmd_demo)

    l = command("lessons", "list the lessons of a namespace")
    l.add_argument("--status", choices=("candidate", "promoted", "suppressed", "archived"), default=None)
    l.add_argument("--json", action="store_true")
    store_args(l)
    l.set_defaults(func=_cmd_lessons)

    i = command("inspect", "show one lesson and why it is where it is")
    i.add_argument("what", choices=("lesson",))
    i.add_argument("id")
    store_args(i)
    i.set_defaults(func=_cmd_inspect)

    rp = command("report", "an HTML page of a bench result (--from) or of a memory (--store / --url)")
    rp.add_argument("--from", dest="source", default=None, metavar="RESULT.json",
                    help="a `bench protocol --json` or `bench env --json` result file")
    rp.add_argument("--store", default=None, metavar="PATH",
                    help="a memory instead: its embedded store folder (with --url, where its audit log is)")
    rp.add_argument("--url", default=None, metavar="URL", help="a memory on a Chroma server, e.g. http://127.0.0.1:8000")
    rp.add_argument("--namespace", default=None, metavar="a/b",
                    help="the memory's namespace parts joined by '/' (default demo/gridtool)")
    rp.add_argument("--out", required=True, metavar="DIR", help="folder for index.html and the PNG plots")
    rp.set_defaults(func=_cmd_report)

    index = _bench_index()
    b = command("bench", f"measurements, each beside a reference in the same run ({', '.join(index)})")
    benches = b.add_subparsers(dest="which", required=True, metavar="NAME")
    wanted = _wanted_bench(argv)
    for name, bench in index.items():
        bp = benches.add_parser(name, help=bench.summary, description=bench.summary)
        bp.add_argument("--json", action="store_true", help="print one JSON object")
        bp.add_argument("--seed", type=int, default=0)
        if argv is None or name == wanted:
            module = importlib.import_module(bench.module)
            module.add_arguments(bp)
            bp.set_defaults(func=module.run)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``langmem-plus`` console script."""
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(argv).parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(message)s")
    try:
        return int(args.func(args))
    except LangmemPlusError as exc:
        print(f"langmem-plus: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("langmem-plus: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
