"""gridtool: a made-up table query CLI (domain ``table-cli``) that no model knows in advance.

An action is one pipeline of stages joined by ``|`` over small in-memory tables.
Its syntax is deliberately unlike SQL, pandas or unix: ``KEEP`` filters, ``PICK``
selects, ``SORT ... DOWN`` sorts descending, ``TOP`` limits, ``TALLY`` counts,
``GROUP key SUM(col)`` aggregates, ``=`` compares for equality and strings take
single quotes. Command words are case-insensitive; function names must be upper
case. Errors name the stage and the offending literal, so the same cause with
different literals gives the same fingerprint.

Example:
    >>> env = GridToolEnv()
    >>> _ = env.reset("g01")
    >>> obs, fb = env.step("LOAD people | KEEP age >= 30 | PICK name, age")
    >>> fb.reward, env.done
    (1.0, True)
    >>> env.step("from people")[1].error_text
    "unknown command 'from' at stage 1"
"""

from __future__ import annotations

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

SEPARATOR = "|"
MESSAGES: Mapping[str, str] = {
    "unknown_command": "unknown command '{cmd}' at stage {stage}",
    "unknown_column": "unknown column '{col}' at stage {stage}{suggestion}",
    "unknown_table": "unknown table '{table}' at stage {stage} (tables: {tables})",
    "operator_mismatch": "expected a comparison operator (=, !=, <, <=, >, >=) at stage {stage}, got '{got}'",
    "sort_direction": "sort direction must be UP or DOWN at stage {stage}, got '{got}'",
    "function_case": "function '{name}' must be upper case at stage {stage}",
    "unknown_function": "unknown function '{name}' at stage {stage} (functions: SUM, AVG, MIN, MAX, COUNT)",
    "arity": "wrong number of arguments to '{cmd}' at stage {stage}: expected {expected}, got {got}",
    "quote_style": 'string literal "{value}" at stage {stage} must use single quotes',
    "unquoted_string": "unquoted string literal '{value}' at stage {stage}",
    "type_mismatch": "type mismatch at stage {stage}: column '{col}' compared with '{value}'",
    "bad_number": "row count at stage {stage} must be an integer >= {minimum}, got '{got}'",
    "source_first": "syntax error: a pipeline must start with LOAD, got '{cmd}' at stage {stage}",
    "source_twice": "syntax error: LOAD may only be used at stage 1, found at stage {stage}",
    "empty_stage": "syntax error: empty stage at stage {stage}",
    "syntax": "syntax error at stage {stage} near '{tok}'",
    "unterminated_string": "unterminated string at stage {stage} near '{snippet}'",
    "empty_action": "empty pipeline: nothing to run",
    "too_long": "action too long: {length} characters (limit {limit})",
    "non_printable": "action contains {count} non-printable characters",
}
"""Error class -> message template. Literals (names, numbers, stages) vary; the rest does not."""

COMPARATORS: Mapping[str, str] = {"=": "==", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
"""gridtool comparison spelling -> abstract comparison."""
DIRECTIONS: Mapping[str, str] = {"UP": "asc", "DOWN": "desc"}
"""gridtool sort direction (any case) -> abstract direction."""
FUNCTIONS: Mapping[str, tuple[str, int]] = {
    "SUM": ("sum", 1),
    "AVG": ("avg", 1),
    "MIN": ("min", 1),
    "MAX": ("max", 1),
    "COUNT": ("count", 0),
}
"""gridtool aggregate function -> (abstract aggregate, number of arguments)."""
KEEP_ARITY = 3
"""KEEP takes a column, an operator and a value."""
GROUP_ARITY = 2
"""GROUP takes a key column and one function call."""


def _table(columns: str, *rows: tuple[Any, ...]) -> Table:
    return Table(tuple(columns.split()), tuple(rows))


DATASETS: Mapping[str, Table] = {
    "people": _table(
        "name age city dept",
        ("Ada", 36, "Paris", "eng"),
        ("Bo", 24, "Oslo", "ops"),
        ("Cy", 41, "Lima", "eng"),
        ("Di", 29, "Paris", "sales"),
        ("Eve", 33, "Oslo", "eng"),
        ("Finn", 52, "Lima", "ops"),
        ("Gus", 19, "Paris", "sales"),
        ("Hana", 45, "Kyoto", "eng"),
    ),
    "orders": _table(
        "id customer amount status city",
        (101, "Ada", 250, "paid", "Paris"),
        (102, "Bo", 80, "open", "Oslo"),
        (103, "Ada", 120, "paid", "Paris"),
        (104, "Cy", 400, "refunded", "Lima"),
        (105, "Di", 60, "paid", "Paris"),
        (106, "Eve", 310, "open", "Oslo"),
        (107, "Finn", 90, "paid", "Lima"),
        (108, "Hana", 500, "paid", "Kyoto"),
        (109, "Bo", 45, "paid", "Oslo"),
        (110, "Gus", 150, "open", "Paris"),
    ),
    "cities": _table(
        "city country population",
        ("Paris", "France", 2100),
        ("Oslo", "Norway", 700),
        ("Lima", "Peru", 10000),
        ("Kyoto", "Japan", 1460),
        ("Quito", "Ecuador", 2800),
    ),
}
"""The in-memory tables gridtool queries."""


TASKS: Sequence[tuple[str, str, str, Intent]] = (
    ("g01", "filter_select", "List the name and age of every person aged 30 or older.",
     [load_op("people"), filter_op("age", ">=", 30), select_op("name", "age")]),
    ("g02", "filter_select", "Show the id and amount of every order whose status is paid.",
     [load_op("orders"), filter_op("status", "==", "paid"), select_op("id", "amount")]),
    ("g03", "filter_select", "Which people live in Oslo? Give their names.",
     [load_op("people"), filter_op("city", "==", "Oslo"), select_op("name")]),
    ("g04", "filter_select", "List the city and country of cities with a population above 2000 (thousands).",
     [load_op("cities"), filter_op("population", ">", 2000), select_op("city", "country")]),
    ("g05", "filter_select", "Give the id and customer of orders with an amount under 100.",
     [load_op("orders"), filter_op("amount", "<", 100), select_op("id", "customer")]),
    ("g06", "sort_limit", "Who are the three oldest people? Give name and age, oldest first.",
     [load_op("people"), sort_op("age", "desc"), limit_op(3), select_op("name", "age")]),
    ("g07", "sort_limit", "Show the id and amount of the two largest orders, largest first.",
     [load_op("orders"), sort_op("amount", "desc"), limit_op(2), select_op("id", "amount")]),
    ("g08", "sort_limit", "Name the two least populated cities, smallest first.",
     [load_op("cities"), sort_op("population"), limit_op(2), select_op("city")]),
    ("g09", "sort_limit", "List the people in dept eng by age, youngest first: name and age.",
     [load_op("people"), filter_op("dept", "==", "eng"), sort_op("age"), select_op("name", "age")]),
    ("g10", "sort_limit", "Show the id and amount of orders above 100, largest amount first.",
     [load_op("orders"), filter_op("amount", ">", 100), sort_op("amount", "desc"), select_op("id", "amount")]),
    ("g11", "aggregate", "How many people are younger than 30?",
     [load_op("people"), filter_op("age", "<", 30), COUNT_OP]),
    ("g12", "aggregate", "How many orders are paid?",
     [load_op("orders"), filter_op("status", "==", "paid"), COUNT_OP]),
    ("g13", "aggregate", "What is the total order amount per city?",
     [load_op("orders"), group_op("city", "sum", "amount")]),
    ("g14", "aggregate", "What is the average age in each dept?",
     [load_op("people"), group_op("dept", "avg", "age")]),
    ("g15", "aggregate", "What is the largest order amount for each status?",
     [load_op("orders"), group_op("status", "max", "amount")]),
)
"""(task_id, family, goal, intent): 15 tasks in 3 families."""


# --------------------------------------------------------------------------- parsing


def _arity(cmd: str, stage: int, args: Sequence[Any], expected: int | str) -> ToolError:
    return ToolError("arity", stage, cmd=cmd, expected=expected, got=len(args))


def _value(tok: Token, stage: int) -> Any:
    if tok.kind == "num":
        return tok.value
    if tok.kind == "str" and tok.quote == "'":
        return tok.value
    if tok.kind == "str":
        raise ToolError("quote_style", stage, value=tok.value)
    if tok.kind == "word":
        raise ToolError("unquoted_string", stage, value=tok.text)
    raise ToolError("syntax", stage, tok=tok.text)


def _word(tok: Token, stage: int) -> str:
    if tok.kind != "word":
        raise ToolError("syntax", stage, tok=tok.text)
    return tok.text


def _keep(table: Table, args: Sequence[Token], stage: int) -> Table:
    if len(args) != KEEP_ARITY:
        raise _arity("KEEP", stage, args, KEEP_ARITY)
    col = _word(args[0], stage)
    cmp = COMPARATORS.get(args[1].text) if args[1].kind == "op" else None
    if cmp is None:
        raise ToolError("operator_mismatch", stage, got=args[1].text)
    return apply_op(table, {"op": "filter", "col": col, "cmp": cmp, "value": _value(args[2], stage)}, stage)


def _pick(table: Table, args: Sequence[Token], stage: int) -> Table:
    cols = comma_list(args, stage)
    if not cols:
        raise _arity("PICK", stage, args, "at least 1")
    return apply_op(table, {"op": "select", "cols": cols}, stage)


def _sort_stage(table: Table, args: Sequence[Token], stage: int) -> Table:
    if len(args) not in (1, 2):
        raise _arity("SORT", stage, args, "1 or 2")
    col = _word(args[0], stage)
    direction = "asc"
    if len(args) == 2:
        direction = DIRECTIONS.get(args[1].text.upper(), "") if args[1].kind == "word" else ""
        if not direction:
            raise ToolError("sort_direction", stage, got=args[1].text)
    return apply_op(table, {"op": "sort", "col": col, "dir": direction}, stage)


def _top(table: Table, args: Sequence[Token], stage: int) -> Table:
    if len(args) != 1:
        raise _arity("TOP", stage, args, 1)
    return apply_op(table, {"op": "limit", "n": whole_number(args[0], stage, 0)}, stage)


def _tally(table: Table, args: Sequence[Token], stage: int) -> Table:
    if args:
        raise _arity("TALLY", stage, args, 0)
    return apply_op(table, {"op": "count"}, stage)


def _items(args: Sequence[Token]) -> list[list[Token]]:
    """Top-level items: a word followed by ``( ... )`` is one item, any other token is one."""
    items: list[list[Token]] = []
    i = 0
    while i < len(args):
        if args[i].kind == "word" and i + 1 < len(args) and args[i + 1].text == "(":
            j = i + 1
            while j < len(args) and args[j].text != ")":
                j += 1
            items.append(list(args[i : j + 1]))
            i = j + 1
        else:
            items.append([args[i]])
            i += 1
    return items


def _group_stage(table: Table, args: Sequence[Token], stage: int) -> Table:
    items = _items(args)
    if len(items) != GROUP_ARITY:
        raise ToolError("arity", stage, cmd="GROUP", expected=GROUP_ARITY, got=len(items))
    if len(items[0]) != 1:
        raise ToolError("syntax", stage, tok=items[0][0].text)
    key = _word(items[0][0], stage)
    call = items[1]
    if len(call) < 3 or call[-1].text != ")":
        raise ToolError("syntax", stage, tok=call[-1].text if len(call) > 1 else call[0].text)
    name = call[0].text
    if name.upper() not in FUNCTIONS:
        raise ToolError("unknown_function", stage, name=name)
    if name != name.upper():
        raise ToolError("function_case", stage, name=name)
    agg, n_args = FUNCTIONS[name]
    fn_args = comma_list(call[2:-1], stage)
    if len(fn_args) != n_args:
        raise ToolError("arity", stage, cmd=name, expected=n_args, got=len(fn_args))
    col = fn_args[0] if fn_args else None
    result = apply_op(table, {"op": "group", "key": key, "agg": agg, "col": col}, stage)
    return Table((key, f"{name}({col or ''})"), result.rows)


Handler = Callable[[Table, Sequence[Token], int], Table]
COMMANDS: Mapping[str, Handler] = {
    "KEEP": _keep,
    "PICK": _pick,
    "SORT": _sort_stage,
    "TOP": _top,
    "TALLY": _tally,
    "GROUP": _group_stage,
}
"""Every command but LOAD, by its upper-case name."""


def run_pipeline(action: str, datasets: Mapping[str, Table] = DATASETS) -> Table:
    """Parse and run a gridtool pipeline. Raises ToolError naming the failing stage."""
    table: Table | None = None
    for stage, tokens in enumerate(lex_stages(action, SEPARATOR), start=1):
        if not tokens:
            raise ToolError("empty_stage", stage)
        head, args = tokens[0], tokens[1:]
        if head.kind != "word":
            raise ToolError("syntax", stage, tok=head.text)
        cmd = head.text.upper()
        if cmd != "LOAD" and cmd not in COMMANDS:
            raise ToolError("unknown_command", stage, cmd=head.text)
        if (stage == 1) != (cmd == "LOAD"):
            raise ToolError("source_first" if stage == 1 else "source_twice", stage, cmd=head.text)
        table = _load_stage(args, stage, datasets) if table is None else COMMANDS[cmd](table, args, stage)
    if table is None:  # pragma: no cover - lex_stages always yields a stage
        raise ToolError("empty_action", None)
    return table


def _load_stage(args: Sequence[Token], stage: int, datasets: Mapping[str, Table]) -> Table:
    if len(args) != 1:
        raise _arity("LOAD", stage, args, 1)
    name = _word(args[0], stage)
    if name not in datasets:
        raise ToolError("unknown_table", stage, table=name, tables=", ".join(datasets))
    return datasets[name]


def format_table(table: Table, max_rows: int = 20) -> str:
    """An ASCII rendering: header, rule, rows, and a row count."""
    cells = [list(table.columns)] + [[str(v) for v in row] for row in table.rows[:max_rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(table.columns))]
    lines = [" | ".join(c.ljust(w) for c, w in zip(row, widths)) for row in cells]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    more = len(table.rows) - max_rows
    if more > 0:
        lines.append(f"... {more} more rows")
    lines.append(f"({len(table.rows)} rows)")
    return "\n".join(lines)


class GridToolEnv(PipelineEnv):
    """The gridtool environment: 15 table-query tasks over people, orders and cities.

    Example:
        >>> env = GridToolEnv()
        >>> [t.task_id for t in env.tasks()][:3]
        ['g01', 'g02', 'g03']
        >>> "usage[filter]: KEEP" in env.docs("filter")
        True
    """

    name: str = "gridtool"
    domain: str = "table-cli"
    docs_file: ClassVar[str] = "gridtool.md"
    messages: ClassVar[Mapping[str, str]] = MESSAGES
    datasets: ClassVar[Mapping[str, Table]] = DATASETS
    task_defs: ClassVar[Sequence[tuple[str, str, str, Intent]]] = TASKS

    def _run(self, action: str) -> Table:
        return run_pipeline(action, self.datasets)

    def _format(self, table: Table) -> str:
        return format_table(table)


__all__ = ["DATASETS", "MESSAGES", "TASKS", "GridToolEnv", "format_table", "run_pipeline"]
