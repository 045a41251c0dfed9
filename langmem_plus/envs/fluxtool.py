"""fluxtool: a made-up stream-transform CLI (domain ``stream-cli``) that no model knows in advance.

An action is one pipeline over streams of JSON-like records whose stages are
chained with ``->`` (not ``|``). Its verbs are lower case and unlike SQL, pandas,
jq or gridtool: ``only`` filters, ``fields`` selects, ``sort f hi-lo`` sorts
descending, ``first`` limits, ``length`` counts and ``per key => sum(f)``
aggregates; equality is ``is``, inequality ``isnt``, the mean is ``mean``.
Errors start with ``stage #N:`` and quote the offending literal.

Example:
    >>> env = FluxToolEnv()
    >>> _ = env.reset("f03")
    >>> obs, fb = env.step('from users -> only plan is "pro" -> fields user')
    >>> fb.reward
    1.0
    >>> env.step("from users | only plan is 'pro'")[1].error_text
    "stage #1: unexpected token '|' (fluxtool does not chain stages with it)"
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from langmem_plus.envs._pipeline import (
    COUNT_OP,
    Intent,
    PipelineEnv,
    Table,
    Token,
    ToolError,
    apply_op,
    comma_list,
    filter_op,
    group_op,
    lex_stages,
    limit_op,
    load_op,
    select_op,
    sort_op,
    whole_number,
)

SEPARATOR = "->"
FOREIGN_JOINERS = ("|", "|>", ">>", ";")
"""Stage joiners of other tools; fluxtool reports them as stray tokens."""
MESSAGES: Mapping[str, str] = {
    "unknown_command": "stage #{stage}: unknown verb '{cmd}'",
    "unknown_column": "stage #{stage}: no field named '{col}'{suggestion}",
    "unknown_table": "stage #{stage}: unknown table '{table}' (fluxtool streams: {tables})",
    "operator_mismatch": "stage #{stage}: bad comparison '{got}' (use is, isnt, <, <=, >, >=)",
    "sort_direction": "stage #{stage}: direction must be lo-hi or hi-lo, got '{got}'",
    "unknown_function": "stage #{stage}: unknown function '{name}' (aggregates: sum, mean, min, max, count)",
    "arity": "stage #{stage}: '{cmd}' takes {expected} argument(s), got {got}",
    "stray_joiner": "stage #{stage}: unexpected token '{tok}' (fluxtool does not chain stages with it)",
    "quote_style": "stage #{stage}: string literal '{value}' must use double quotes",
    "unquoted_string": "stage #{stage}: unquoted string literal '{value}'",
    "type_mismatch": "stage #{stage}: type mismatch, cannot compare field '{col}' with '{value}'",
    "bad_number": "stage #{stage}: record count must be an integer >= {minimum}, got '{got}'",
    "missing_arrow": "stage #{stage}: expected '=>' after the key of 'per', got '{got}'",
    "source_first": "stage #{stage}: syntax error, got '{cmd}' where the pipeline must begin with 'from'",
    "source_twice": "stage #{stage}: syntax error, 'from' may only open the pipeline",
    "empty_stage": "stage #{stage}: syntax error, nothing between two arrows",
    "syntax": "stage #{stage}: syntax error near '{tok}'",
    "unterminated_string": "stage #{stage}: unterminated string near '{snippet}'",
    "empty_action": "fluxtool: empty pipeline",
    "too_long": "fluxtool: pipeline of {length} characters exceeds the {limit} limit",
    "non_printable": "fluxtool: {count} non-printable characters in the pipeline",
}
"""Error class -> message template. Literals (names, numbers, stages) vary; the rest does not."""

COMPARATORS: Mapping[str, str] = {"is": "==", "isnt": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
"""fluxtool comparison spelling -> abstract comparison."""
DIRECTIONS: Mapping[str, str] = {"lo-hi": "asc", "hi-lo": "desc"}
"""fluxtool sort direction -> abstract direction."""
AGGREGATES: Mapping[str, tuple[str, int]] = {
    "sum": ("sum", 1),
    "mean": ("avg", 1),
    "min": ("min", 1),
    "max": ("max", 1),
    "count": ("count", 0),
}
"""fluxtool aggregate -> (abstract aggregate, number of arguments)."""
ONLY_ARITY = 3
"""``only`` takes a field, a comparison and a value."""


def _stream(fields: str, *records: tuple[Any, ...]) -> Table:
    return Table(tuple(fields.split()), tuple(records))


DATASETS: Mapping[str, Table] = {
    "users": _stream(
        "user age country plan",
        ("ana", 34, "ES", "pro"),
        ("ben", 22, "UK", "free"),
        ("caro", 41, "DE", "pro"),
        ("dev", 28, "IN", "free"),
        ("eli", 37, "UK", "team"),
        ("fay", 45, "ES", "team"),
        ("gil", 19, "DE", "free"),
        ("hal", 30, "IN", "pro"),
    ),
    "orders": _stream(
        "oid user price state",
        (1, "ana", 120, "shipped"),
        (2, "ben", 35, "pending"),
        (3, "caro", 410, "shipped"),
        (4, "ana", 75, "cancelled"),
        (5, "dev", 220, "shipped"),
        (6, "eli", 60, "pending"),
        (7, "fay", 300, "shipped"),
        (8, "gil", 15, "shipped"),
        (9, "hal", 180, "pending"),
        (10, "caro", 95, "shipped"),
    ),
    "events": _stream(
        "user kind ms",
        ("ana", "login", 120),
        ("ben", "click", 45),
        ("ana", "click", 30),
        ("caro", "login", 200),
        ("dev", "purchase", 900),
        ("eli", "click", 60),
        ("fay", "login", 150),
        ("ana", "purchase", 700),
        ("gil", "click", 20),
        ("hal", "login", 110),
        ("ben", "purchase", 650),
        ("caro", "click", 80),
    ),
}
"""The in-memory streams fluxtool transforms (records are rows of these fields)."""


TASKS: Sequence[tuple[str, str, str, Intent]] = (
    ("f01", "filter_select", "List the user and age of users aged 30 or more.",
     [load_op("users"), filter_op("age", ">=", 30), select_op("user", "age")]),
    ("f02", "filter_select", "Show the oid and price of shipped orders.",
     [load_op("orders"), filter_op("state", "==", "shipped"), select_op("oid", "price")]),
    ("f03", "filter_select", "Which users are on the pro plan? Give their user names.",
     [load_op("users"), filter_op("plan", "==", "pro"), select_op("user")]),
    ("f04", "filter_select", "List the user and kind of events that took longer than 100 ms.",
     [load_op("events"), filter_op("ms", ">", 100), select_op("user", "kind")]),
    ("f05", "filter_select", "Give the oid and user of orders with a price below 50.",
     [load_op("orders"), filter_op("price", "<", 50), select_op("oid", "user")]),
    ("f06", "sort_limit", "Show the oid and price of the three most expensive orders, most expensive first.",
     [load_op("orders"), sort_op("price", "desc"), limit_op(3), select_op("oid", "price")]),
    ("f07", "sort_limit", "Who are the two youngest users? Give user and age, youngest first.",
     [load_op("users"), sort_op("age"), limit_op(2), select_op("user", "age")]),
    ("f08", "sort_limit", "List the user and ms of the four slowest events, slowest first.",
     [load_op("events"), sort_op("ms", "desc"), limit_op(4), select_op("user", "ms")]),
    ("f09", "sort_limit", "List users from the UK by age, oldest first: user and age.",
     [load_op("users"), filter_op("country", "==", "UK"), sort_op("age", "desc"), select_op("user", "age")]),
    ("f10", "sort_limit", "Show pending orders by price, cheapest first: oid and price.",
     [load_op("orders"), filter_op("state", "==", "pending"), sort_op("price"), select_op("oid", "price")]),
    ("f11", "aggregate", "How many events are clicks?",
     [load_op("events"), filter_op("kind", "==", "click"), COUNT_OP]),
    ("f12", "aggregate", "How many users are younger than 30?",
     [load_op("users"), filter_op("age", "<", 30), COUNT_OP]),
    ("f13", "aggregate", "What is the total price of the orders of each user?",
     [load_op("orders"), group_op("user", "sum", "price")]),
    ("f14", "aggregate", "What is the average event duration (ms) per kind?",
     [load_op("events"), group_op("kind", "avg", "ms")]),
    ("f15", "aggregate", "What is the oldest age on each plan?",
     [load_op("users"), group_op("plan", "max", "age")]),
)
"""(task_id, family, goal, intent): 15 tasks in 3 families."""


# --------------------------------------------------------------------------- parsing


def _arity(verb: str, stage: int, args: Sequence[Any], expected: int | str) -> ToolError:
    return ToolError("arity", stage, cmd=verb, expected=expected, got=len(args))


def _word(tok: Token, stage: int) -> str:
    if tok.kind != "word":
        raise ToolError("syntax", stage, tok=tok.text)
    return tok.text


def _value(tok: Token, stage: int) -> Any:
    if tok.kind == "num" or (tok.kind == "str" and tok.quote == '"'):
        return tok.value
    if tok.kind == "str":
        raise ToolError("quote_style", stage, value=tok.value)
    if tok.kind == "word":
        raise ToolError("unquoted_string", stage, value=tok.text)
    raise ToolError("syntax", stage, tok=tok.text)


def _only(table: Table, args: Sequence[Token], stage: int) -> Table:
    if len(args) != ONLY_ARITY:
        raise _arity("only", stage, args, ONLY_ARITY)
    field = _word(args[0], stage)
    cmp = COMPARATORS.get(args[1].text) if args[1].kind in ("op", "word") else None
    if cmp is None:
        raise ToolError("operator_mismatch", stage, got=args[1].text)
    return apply_op(table, {"op": "filter", "col": field, "cmp": cmp, "value": _value(args[2], stage)}, stage)


def _fields(table: Table, args: Sequence[Token], stage: int) -> Table:
    cols = comma_list(args, stage)
    if not cols:
        raise _arity("fields", stage, args, "at least 1")
    return apply_op(table, {"op": "select", "cols": cols}, stage)


def _sort_stage(table: Table, args: Sequence[Token], stage: int) -> Table:
    if len(args) not in (1, 2):
        raise _arity("sort", stage, args, "1 or 2")
    field = _word(args[0], stage)
    direction = DIRECTIONS.get(args[1].text, "") if len(args) == 2 else "asc"
    if not direction:
        raise ToolError("sort_direction", stage, got=args[1].text)
    return apply_op(table, {"op": "sort", "col": field, "dir": direction}, stage)


def _first(table: Table, args: Sequence[Token], stage: int) -> Table:
    if len(args) != 1:
        raise _arity("first", stage, args, 1)
    return apply_op(table, {"op": "limit", "n": whole_number(args[0], stage, 1)}, stage)


def _length(table: Table, args: Sequence[Token], stage: int) -> Table:
    if args:
        raise _arity("length", stage, args, 0)
    return apply_op(table, {"op": "count"}, stage)


def _per(table: Table, args: Sequence[Token], stage: int) -> Table:
    if not args:
        raise _arity("per", stage, args, "a key, '=>' and an aggregate")
    key = _word(args[0], stage)
    if len(args) < 2 or args[1].text != "=>":
        raise ToolError("missing_arrow", stage, got=args[1].text if len(args) > 1 else "end of stage")
    call = args[2:]
    if len(call) < 3 or call[0].kind != "word" or call[1].text != "(" or call[-1].text != ")":
        raise ToolError("syntax", stage, tok=call[0].text if call else "=>")
    name = call[0].text
    if name not in AGGREGATES:
        raise ToolError("unknown_function", stage, name=name)
    agg, n_args = AGGREGATES[name]
    fn_args = comma_list(call[2:-1], stage)
    if len(fn_args) != n_args:
        raise _arity(name, stage, fn_args, n_args)
    col = fn_args[0] if fn_args else None
    result = apply_op(table, {"op": "group", "key": key, "agg": agg, "col": col}, stage)
    return Table((key, f"{name}_{col}" if col else name), result.rows)


Handler = Callable[[Table, Sequence[Token], int], Table]
VERBS: Mapping[str, Handler] = {
    "only": _only,
    "fields": _fields,
    "sort": _sort_stage,
    "first": _first,
    "length": _length,
    "per": _per,
}
"""Every verb but ``from``; verbs are case-sensitive."""


def run_pipeline(action: str, datasets: Mapping[str, Table] = DATASETS) -> Table:
    """Parse and run a fluxtool pipeline. Raises ToolError naming the failing stage."""
    stages = lex_stages(action, SEPARATOR)
    for number, tokens in enumerate(stages, start=1):
        stray = next((t for t in tokens if t.kind == "op" and t.text in FOREIGN_JOINERS), None)
        if stray is not None:
            raise ToolError("stray_joiner", number, tok=stray.text)
    table: Table | None = None
    for stage, tokens in enumerate(stages, start=1):
        if not tokens:
            raise ToolError("empty_stage", stage)
        head, args = tokens[0], tokens[1:]
        verb = _word(head, stage)
        if verb != "from" and verb not in VERBS:
            raise ToolError("unknown_command", stage, cmd=verb)
        if (stage == 1) != (verb == "from"):
            raise ToolError("source_first" if stage == 1 else "source_twice", stage, cmd=verb)
        table = _from(args, stage, datasets) if table is None else VERBS[verb](table, args, stage)
    if table is None:  # pragma: no cover - lex_stages always yields a stage
        raise ToolError("empty_action", None)
    return table


def _from(args: Sequence[Token], stage: int, datasets: Mapping[str, Table]) -> Table:
    if len(args) != 1:
        raise _arity("from", stage, args, 1)
    name = _word(args[0], stage)
    if name not in datasets:
        raise ToolError("unknown_table", stage, table=name, tables=", ".join(datasets))
    return datasets[name]


def format_records(table: Table, max_rows: int = 20) -> str:
    """One JSON object per line, then a count line."""
    lines = [json.dumps(dict(zip(table.columns, row))) for row in table.rows[:max_rows]]
    more = len(table.rows) - max_rows
    if more > 0:
        lines.append(f"# ... {more} more records")
    lines.append(f"# {len(table.rows)} records")
    return "\n".join(lines)


class FluxToolEnv(PipelineEnv):
    """The fluxtool environment: 15 stream-transform tasks over users, orders and events.

    Example:
        >>> env = FluxToolEnv()
        >>> env.domain
        'stream-cli'
        >>> "usage[pipe]: {stage} -> {stage}" in env.docs("pipe")
        True
    """

    name: str = "fluxtool"
    domain: str = "stream-cli"
    docs_file: ClassVar[str] = "fluxtool.md"
    messages: ClassVar[Mapping[str, str]] = MESSAGES
    datasets: ClassVar[Mapping[str, Table]] = DATASETS
    task_defs: ClassVar[Sequence[tuple[str, str, str, Intent]]] = TASKS

    def _run(self, action: str) -> Table:
        return run_pipeline(action, self.datasets)

    def _format(self, table: Table) -> str:
        return format_records(table)


__all__ = ["DATASETS", "MESSAGES", "TASKS", "FluxToolEnv", "format_records", "run_pipeline"]
