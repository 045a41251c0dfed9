"""The ``langmem-plus`` command line.

    langmem-plus demo [--runs N] [--tool gridtool|fluxtool] [--store PATH] [--seed S] [--json]
    langmem-plus lessons [--store PATH] [--namespace a/b] [--status S] [--json]
    langmem-plus inspect lesson ID [--store PATH] [--namespace a/b]
    langmem-plus bench NAME [--json] [--seed S] ...   (one per module in langmem_plus/bench/)
    langmem-plus report --from RESULT.json --out DIR

Errors a user can fix (a bad path, an unreachable server, a bad namespace) print one
clear line and exit 2; they never dump a traceback.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from typing import Any, Sequence

from langmem_plus.errors import LangmemPlusError

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


def _open(args: argparse.Namespace, default_ns: tuple[str, ...]):  # type: ignore[no-untyped-def]
    from langmem_plus.memory import LearningMemory

    return LearningMemory.open(args.store, url=args.url, namespace=_namespace(args.namespace, default_ns))


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
    try:
        from langmem_plus.report import load_result, write_report
    except ImportError as exc:
        print(f"langmem-plus: the report needs matplotlib: pip install 'langmem-plus[report]' ({exc})", file=sys.stderr)
        return 2
    try:
        result = load_result(args.source)
    except (OSError, ValueError) as exc:
        print(f"langmem-plus: cannot read {args.source}: {exc}", file=sys.stderr)
        return 2
    print(write_report(result, args.out))
    return 0


def _bench_modules() -> dict[str, Any]:
    """Bench modules found in ``langmem_plus.bench``: each has ``BENCH_NAME``, ``add_arguments``, ``run``."""
    import importlib
    import pkgutil

    import langmem_plus.bench as bench_pkg

    found: dict[str, Any] = {}
    for info in sorted(pkgutil.iter_modules(bench_pkg.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"langmem_plus.bench.{info.name}")
        name = getattr(module, "BENCH_NAME", None)
        if name and callable(getattr(module, "run", None)):
            found[name] = module
    return found


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for tests and docs)."""
    p = argparse.ArgumentParser(prog="langmem-plus", description="A learning memory for LangGraph agents.")
    p.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    sub = p.add_subparsers(dest="command", required=True)

    def store_args(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--store", default=DEFAULT_STORE, help="embedded store folder (default ./.langmem_plus)")
        sp.add_argument("--url", default=None, help="a Chroma server instead, e.g. http://127.0.0.1:8000")
        sp.add_argument("--namespace", default=None, help="namespace parts joined by '/', e.g. acme/agent-7")

    d = sub.add_parser("demo", help="watch the scripted agent learn a made-up tool")
    d.add_argument("--runs", type=int, default=3, help="runs over all tasks (default 3)")
    d.add_argument("--tool", choices=("gridtool", "fluxtool"), default="gridtool")
    d.add_argument("--seed", type=int, default=0)
    d.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    store_args(d)
    d.set_defaults(func=_cmd_demo)

    l = sub.add_parser("lessons", help="list the lessons of a namespace")
    l.add_argument("--status", choices=("candidate", "promoted", "suppressed", "archived"), default=None)
    l.add_argument("--json", action="store_true")
    store_args(l)
    l.set_defaults(func=_cmd_lessons)

    i = sub.add_parser("inspect", help="show one lesson and why it is where it is")
    i.add_argument("what", choices=("lesson",))
    i.add_argument("id")
    store_args(i)
    i.set_defaults(func=_cmd_inspect)

    rp = sub.add_parser("report", help="HTML page with plots from a `bench protocol --json` or `bench env --json` result")
    rp.add_argument("--from", dest="source", required=True, help="the result JSON file")
    rp.add_argument("--out", required=True, help="folder for index.html and the PNG plots")
    rp.set_defaults(func=_cmd_report)

    b = sub.add_parser("bench", help="measurements, each beside a reference in the same run")
    benches = b.add_subparsers(dest="which", required=True)
    for name, module in _bench_modules().items():
        bp = benches.add_parser(name, help=(module.__doc__ or "").strip().splitlines()[0])
        bp.add_argument("--json", action="store_true", help="print one JSON object")
        bp.add_argument("--seed", type=int, default=0)
        module.add_arguments(bp)
        bp.set_defaults(func=module.run)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``langmem-plus`` console script."""
    args = build_parser().parse_args(argv)
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
