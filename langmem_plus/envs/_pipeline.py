"""Shared machinery of the made-up pipeline tools (gridtool, fluxtool).

Both tools run a one-line pipeline of stages over small in-memory tables; they
differ only in syntax, so everything below the syntax lives here once:

- a lexer that is whitespace tolerant (``SUM ( x )`` and ``SUM(x)`` lex alike, as
  token rewrites re-join tokens with single spaces) and quote aware;
- the abstract operations both tools compile to (``load``, ``filter``, ``select``,
  ``sort``, ``limit``, ``count``, ``group``) and the reference implementation that
  computes a task's expected answer straight from its intent;
- ``PipelineEnv``, the ``Env`` protocol implemented once: tasks, reset, step with
  the four feedback channels, docs sections, the deterministic evaluator.

A tool subclass supplies its data, tasks, error messages, docs file and one
``_run(action) -> Table`` that parses its syntax and raises ``ToolError``.

Example:
    >>> table = reference_result({"t": Table(("n",), ((1,), (5,)))},
    ...                          [{"op": "load", "table": "t"},
    ...                           {"op": "filter", "col": "n", "cmp": ">", "value": 2}])
    >>> table.rows
    ((5,),)
"""

from __future__ import annotations

import difflib
import re
import time
import unicodedata
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any, ClassVar

from langmem_plus.errors import EnvError
from langmem_plus.records import Efficiency, Feedback, TaskSpec, Verdict

Value = int | float | str
Intent = list[dict[str, Any]]

MAX_ACTION_CHARS = 2000
"""Longest action a tool accepts; longer input is a clean hard failure, never parsed."""
FLOAT_DIGITS = 2
"""Averages are rounded to this many decimals, in results and in comparisons."""
OUTPUT_MAX_ROWS = 20
"""Rows printed in an observation; the rest are summarised as a count."""
RAN_PROGRESS = 0.2
"""Progress credited to a pipeline that ran but gave the wrong result."""
ROWS_PROGRESS = 0.7
"""Extra progress scaled by the share of expected rows the wrong result already has."""
PARSE_PROGRESS = 0.2
"""Progress of a failed pipeline, scaled by the share of stages before the failing one."""

COMPARATORS = ("==", "!=", "<", "<=", ">", ">=")
"""Abstract comparison names used in task intents (both tools spell them their own way)."""
AGGREGATES = ("sum", "avg", "min", "max", "count")
"""Abstract aggregate names used in task intents."""
SHARED_ERROR_CLASSES = (
    "unknown_command",
    "unknown_column",
    "unknown_table",
    "operator_mismatch",
    "sort_direction",
    "arity",
    "type_mismatch",
    "quote_style",
    "unquoted_string",
)
"""Error classes that mean the same in both tools although the syntax differs."""
BAD_ACTION_CLASSES = ("empty_action", "too_long", "non_printable")
"""Error classes for input that is not a pipeline at all."""

_OPERATORS = ("->", "=>", "|>", ">>", ">=", "<=", "!=", "==", "<>", "|", "=", "<", ">", ",", "(", ")", ";", "*")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:-[A-Za-z0-9_]+)*")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?![A-Za-z_])")


# --------------------------------------------------------------------------- values


@dataclass(frozen=True)
class Table:
    """An immutable result table: column names and rows of plain values."""

    columns: tuple[str, ...]
    rows: tuple[tuple[Value, ...], ...]


class ToolError(Exception):
    """A parse or runtime error of a tool, by class, with the literals of its message.

    Args:
        kind: Error class, a key of the tool's ``messages``.
        stage: 1-based stage the error belongs to, or None for the whole action.
        **fields: Literals the message template names (``cmd``, ``col``, ``got``...).
    """

    def __init__(self, kind: str, stage: int | None = None, **fields: Any) -> None:
        super().__init__(kind)
        self.kind = kind
        self.stage = stage
        self.fields = fields


@dataclass(frozen=True)
class Token:
    """One lexed token: ``kind`` is ``word``, ``num``, ``str`` or ``op``."""

    kind: str
    text: str
    value: Value | None = None
    quote: str = ""
    """The quote character of a ``str`` token."""
    pos: int = 0


# --------------------------------------------------------------------------- action hygiene


def clean_action(action: object) -> str:
    """The action as text, or ToolError for empty, huge or binary-looking input."""
    if isinstance(action, (bytes, bytearray)):
        action = bytes(action).decode("utf-8", errors="replace")
    text = action if isinstance(action, str) else str(action)
    if len(text) > MAX_ACTION_CHARS:
        raise ToolError("too_long", None, length=len(text), limit=MAX_ACTION_CHARS)
    bad = sum(1 for c in text if c == "\ufffd" or (unicodedata.category(c) == "Cc" and c not in "\t\n\r"))
    if bad:
        raise ToolError("non_printable", None, count=bad)
    if not text.strip():
        raise ToolError("empty_action", None)
    return text


# --------------------------------------------------------------------------- lexing


def lex(action: str) -> list[Token]:
    """Split an action into tokens; raises ToolError on an unclosed string or a stray character.

    A lexing error carries its character offset as ``fields["pos"]``; ``lex_stages``
    turns it into a stage number.
    """
    tokens: list[Token] = []
    i, n = 0, len(action)
    while i < n:
        c = action[i]
        if c.isspace():
            i += 1
            continue
        if c in "\"'":
            end = action.find(c, i + 1)
            if end < 0:
                raise ToolError("unterminated_string", None, snippet=action[i + 1 : i + 13], pos=i)
            tokens.append(Token("str", action[i : end + 1], action[i + 1 : end], c, i))
            i = end + 1
            continue
        num = _NUMBER.match(action, i)
        if num:
            text = num.group(0)
            tokens.append(Token("num", text, float(text) if "." in text else int(text), "", i))
            i = num.end()
            continue
        word = _WORD.match(action, i)
        if word:
            tokens.append(Token("word", word.group(0), word.group(0), "", i))
            i = word.end()
            continue
        op = next((o for o in _OPERATORS if action.startswith(o, i)), None)
        if op:
            tokens.append(Token("op", op, None, "", i))
            i += len(op)
            continue
        raise ToolError("syntax", None, tok=c, pos=i)
    return tokens


def lex_stages(action: str, separator: str) -> list[list[Token]]:
    """Lex and split on ``separator``; a lexing error gets the stage it occurred in."""
    try:
        tokens = lex(action)
    except ToolError as err:
        pos = int(err.fields.get("pos", 0))
        prefix = lex(action[:pos]) if pos else []
        err.stage = 1 + sum(1 for t in prefix if t.text == separator)
        raise
    stages: list[list[Token]] = [[]]
    for tok in tokens:
        if tok.kind == "op" and tok.text == separator:
            stages.append([])
        else:
            stages[-1].append(tok)
    return stages


def comma_list(args: Sequence[Token], stage: int) -> list[str]:
    """Column names from ``a, b, c``; ToolError on anything else."""
    names: list[str] = []
    expect_name = True
    for tok in args:
        if expect_name and tok.kind == "word":
            names.append(tok.text)
        elif not expect_name and tok.text == ",":
            pass
        else:
            raise ToolError("syntax", stage, tok=tok.text)
        expect_name = not expect_name
    if expect_name and names:  # trailing comma
        raise ToolError("syntax", stage, tok=",")
    return names


def whole_number(tok: Token, stage: int, minimum: int) -> int:
    """The integer value of ``tok`` if it is a whole number >= minimum, else ToolError."""
    if tok.kind != "num" or not isinstance(tok.value, int) or tok.value < minimum:
        raise ToolError("bad_number", stage, got=tok.text, minimum=minimum)
    return tok.value


# --------------------------------------------------------------------------- abstract operations


def _column(table: Table, col: str, stage: int) -> int:
    if col in table.columns:
        return table.columns.index(col)
    close = difflib.get_close_matches(col, list(table.columns), n=1)
    suggestion = f" (did you mean '{close[0]}'?)" if close else ""
    raise ToolError("unknown_column", stage, col=col, suggestion=suggestion, columns=", ".join(table.columns))


def _compare(left: Value, cmp: str, right: Value) -> bool:
    if cmp == "==":
        return left == right
    if cmp == "!=":
        return left != right
    if cmp == "<":
        return left < right  # type: ignore[operator]
    if cmp == "<=":
        return left <= right  # type: ignore[operator]
    if cmp == ">":
        return left > right  # type: ignore[operator]
    return left >= right  # type: ignore[operator]


def _aggregate(agg: str, values: list[Value]) -> Value:
    if agg == "count":
        return len(values)
    nums = [v for v in values if isinstance(v, (int, float))]
    if agg == "sum":
        return sum(nums)
    if agg == "avg":
        return round(sum(nums) / len(nums), FLOAT_DIGITS) if nums else 0
    return min(values) if agg == "min" else max(values)  # type: ignore[type-var]


def apply_op(table: Table, op: Mapping[str, Any], stage: int) -> Table:
    """Run one abstract operation (not ``load``) on ``table``.

    Tools rename result columns (``count``, the aggregate column) as they like;
    the evaluator compares values, not names.

    Args:
        table: Input table.
        op: An intent operation, e.g. ``{"op": "limit", "n": 3}``.
        stage: Stage number for error messages.

    Raises:
        ToolError: unknown_column or type_mismatch.
    """
    kind = op["op"]
    if kind == "filter":
        idx = _column(table, op["col"], stage)
        value = op["value"]
        sample = next((r[idx] for r in table.rows), None)
        if sample is not None and isinstance(sample, str) != isinstance(value, str):
            raise ToolError("type_mismatch", stage, col=op["col"], value=str(value))
        return Table(table.columns, tuple(r for r in table.rows if _compare(r[idx], op["cmp"], value)))
    if kind == "select":
        idxs = [_column(table, c, stage) for c in op["cols"]]
        return Table(tuple(op["cols"]), tuple(tuple(r[i] for i in idxs) for r in table.rows))
    if kind == "sort":
        idx = _column(table, op["col"], stage)
        rows = sorted(table.rows, key=lambda r: r[idx], reverse=op.get("dir", "asc") == "desc")
        return Table(table.columns, tuple(rows))
    if kind == "limit":
        return Table(table.columns, table.rows[: int(op["n"])])
    if kind == "count":
        return Table(("count",), ((len(table.rows),),))
    if kind == "group":
        return _group(table, op, stage)
    raise ToolError("syntax", stage, tok=str(kind))


def _group(table: Table, op: Mapping[str, Any], stage: int) -> Table:
    key = _column(table, op["key"], stage)
    col = _column(table, op["col"], stage) if op.get("col") else None
    buckets: dict[Value, list[Value]] = {}
    for row in table.rows:
        buckets.setdefault(row[key], []).append(row[col] if col is not None else 1)
    label = f"{op['agg']}_{op.get('col') or ''}".rstrip("_")
    rows = tuple((k, _aggregate(op["agg"], buckets[k])) for k in sorted(buckets))  # type: ignore[type-var]
    return Table((op["key"], label), rows)


def reference_result(datasets: Mapping[str, Table], intent: Sequence[Mapping[str, Any]]) -> Table:
    """The expected answer of a task, computed straight from its intent (no parsing)."""
    if not intent or intent[0].get("op") != "load":
        raise EnvError("a task intent must start with a load operation")
    table = datasets[intent[0]["table"]]
    for stage, op in enumerate(intent[1:], start=2):
        table = apply_op(table, op, stage)
    return table


def _norm_row(row: Sequence[Value]) -> tuple[Value, ...]:
    return tuple(round(v, FLOAT_DIGITS) if isinstance(v, float) else v for v in row)


def tables_match(actual: Table, expected: Table) -> bool:
    """Same number of columns and the same rows in the same order (names are free)."""
    return len(actual.columns) == len(expected.columns) and [_norm_row(r) for r in actual.rows] == [
        _norm_row(r) for r in expected.rows
    ]


def row_overlap(actual: Table, expected: Table) -> float:
    """Share of rows the two tables have in common (multiset), in [0, 1]."""
    if len(actual.columns) != len(expected.columns):
        return 0.0
    a = Counter(_norm_row(r) for r in actual.rows)
    e = Counter(_norm_row(r) for r in expected.rows)
    denom = max(sum(a.values()), sum(e.values()), 1)
    return sum((a & e).values()) / denom


# --------------------------------------------------------------------------- docs


def docs_section(text: str, topic: str | None, tool: str) -> str:
    """The whole docs, or the ``## topic`` section of them."""
    if topic is None or not str(topic).strip():
        return text
    want = str(topic).strip().lower()
    sections = re.split(r"(?m)^(?=## )", text)
    for section in sections:
        if section.startswith("## ") and section[3:].split("\n", 1)[0].strip().lower() == want:
            return section.strip() + "\n"
    topics = [s[3:].split("\n", 1)[0].strip() for s in sections if s.startswith("## ")]
    return f"{tool} docs have no section '{topic}'. Topics: {', '.join(topics)}.\n"


# --------------------------------------------------------------------------- the env


class PipelineEnv:
    """The Env protocol for a pipeline tool; subclasses supply the syntax.

    Subclass contract: class attributes ``name``, ``domain``, ``docs_file``,
    ``messages`` (error class -> message template), ``datasets`` and
    ``task_defs`` (task_id, family, goal, intent); and ``_run`` and ``_format``.
    ``evaluate`` judges the last result that ran (``judges_last_result``), so a
    referee ties its verdict to that step.

    Example:
        >>> from langmem_plus.envs.gridtool import GridToolEnv
        >>> env = GridToolEnv()
        >>> _ = env.reset("g11")
        >>> env.step("LOAD people | TALLY")[1].constraint_failure
        True
        >>> env.step("LOAD people | KEEP age < 30 | TALLY")[1].reward
        1.0
        >>> env.evaluate().passed
        True
    """

    name: str = ""
    domain: str = ""
    judges_last_result = True
    """``evaluate`` compares the last result that ran with the reference: the verdict is about that step."""
    docs_file: ClassVar[str] = ""
    messages: ClassVar[Mapping[str, str]] = {}
    datasets: ClassVar[Mapping[str, Table]] = {}
    task_defs: ClassVar[Sequence[tuple[str, str, str, Intent]]] = ()

    def __init__(self, *, docs_edits: Mapping[str, str] | None = None, silent: bool = False) -> None:
        """Args:
            docs_edits: Text replacements applied to the docs (``{"term[dir.desc]: DOWN": "term[dir.desc]: UP"}``):
                a manual that is wrong, for scenarios where an agent learns from bad documentation.
            silent: Report a pipeline that ran as done, whatever its result (no constraint failure): a tool that
                cannot know the answer, so only a referee (``evaluate``) can tell a wrong result.
        """
        self.docs_edits = dict(docs_edits or {})
        self.silent = silent
        self._tasks = [
            TaskSpec(
                task_id=tid,
                goal=goal,
                tool=self.name,
                domain=self.domain,
                family=family,
                context={"intent": intent},
            )
            for tid, family, goal, intent in self.task_defs
        ]
        self._by_id = {t.task_id: t for t in self._tasks}
        self._task: TaskSpec | None = None
        self._expected: Table | None = None
        self._last: Table | None = None
        self._done = False
        self._docs_text: str | None = None

    # ---- hooks ---------------------------------------------------------------

    def _run(self, action: str) -> Table:  # pragma: no cover - abstract
        """Parse and run one pipeline; raise ToolError on a parse or runtime error."""
        raise NotImplementedError

    def _format(self, table: Table) -> str:  # pragma: no cover - abstract
        """Print a result table the way the tool does."""
        raise NotImplementedError

    # ---- protocol ------------------------------------------------------------

    def tasks(self) -> list[TaskSpec]:
        """Every task, in a stable order (copies: callers may not mutate ours)."""
        return [t.model_copy(deep=True) for t in self._tasks]

    def reset(self, task_id: str) -> str:
        """Start ``task_id``; raises EnvError for an unknown id."""
        task = self._by_id.get(task_id)
        if task is None:
            raise EnvError(f"{self.name} has no task {task_id!r}; tasks: {', '.join(self._by_id)}")
        self._task = task
        self._expected = reference_result(self.datasets, task.context["intent"])
        self._last = None
        self._done = False
        tables = "; ".join(f"{n}({', '.join(t.columns)})" for n, t in self.datasets.items())
        return f"{self.name} task {task.task_id}: {task.goal}\nData: {tables}\n"

    @property
    def done(self) -> bool:
        """True once the current task is solved."""
        return self._done

    def step(self, action: str) -> tuple[str, Feedback]:
        """Run one pipeline and report it on the four feedback channels."""
        if self._task is None or self._expected is None:
            raise EnvError(f"{self.name}: call reset(task_id) before step()")
        start = time.perf_counter()
        n_stages = max(1, len(self._task.context["intent"]))
        try:
            table = self._run(clean_action(action))
        except ToolError as err:
            text = self.error_message(err)
            stage = err.stage or 1
            progress = PARSE_PROGRESS * min(stage - 1, n_stages) / n_stages
            fb = Feedback(hard_failure=True, error_text=text, progress=progress, efficiency=self._eff(start))
            return f"error: {text}", fb
        self._last = table
        out = self._format(table)
        if self.silent or tables_match(table, self._expected):
            self._done = True
            return out, Feedback(progress=1.0, reward=1.0, efficiency=self._eff(start))
        progress = RAN_PROGRESS + ROWS_PROGRESS * row_overlap(table, self._expected)
        msg = (
            f"result has {len(table.rows)} rows x {len(table.columns)} columns, "
            "which is not what the task asks for"
        )
        fb = Feedback(constraint_failure=True, error_text=msg, progress=progress, efficiency=self._eff(start))
        return f"{out}\nconstraint failed: {msg}", fb

    def docs(self, topic: str | None = None) -> str:
        """The tool's docs, or one topic's section (an abstract op name such as ``"sort"``)."""
        if self._docs_text is None:
            text = resources.files("langmem_plus.envs").joinpath("docs").joinpath(self.docs_file).read_text("utf-8")
            for old, new in self.docs_edits.items():
                text = text.replace(old, new)
            self._docs_text = text
        return docs_section(self._docs_text, topic, self.name)

    def evaluate(self) -> Verdict:
        """Compare the last result that ran with the reference answer of the task."""
        if self._task is None or self._expected is None:
            raise EnvError(f"{self.name}: call reset(task_id) before evaluate()")
        if self._last is None:
            return Verdict(passed=False, score=0.0, reasons=["no pipeline ran successfully"], source="deterministic")
        if tables_match(self._last, self._expected):
            return Verdict(passed=True, score=1.0, reasons=["result matches the reference answer"], source="deterministic")
        score = row_overlap(self._last, self._expected)
        return Verdict(
            passed=False,
            score=score,
            reasons=[f"last result differs from the reference answer ({score:.0%} of rows in common)"],
            source="deterministic",
        )

    # ---- helpers -------------------------------------------------------------

    def error_message(self, err: ToolError) -> str:
        """The tool's message for ``err``, with its literals filled in."""
        template = self.messages.get(err.kind, "{kind}")
        return template.format(stage=err.stage, kind=err.kind, tool=self.name, **err.fields)

    @staticmethod
    def _eff(start: float) -> Efficiency:
        return Efficiency(steps=1, seconds=time.perf_counter() - start)



# --------------------------------------------------------------------------- intent builders
# Both tools describe their tasks with the same abstract ops; these build them.


def load_op(table: str) -> dict[str, Any]:
    return {"op": "load", "table": table}


def filter_op(col: str, cmp: str, value: Any) -> dict[str, Any]:
    return {"op": "filter", "col": col, "cmp": cmp, "value": value}


def select_op(*cols: str) -> dict[str, Any]:
    return {"op": "select", "cols": list(cols)}


def sort_op(col: str, direction: str = "asc") -> dict[str, Any]:
    return {"op": "sort", "col": col, "dir": direction}


def limit_op(n: int) -> dict[str, Any]:
    return {"op": "limit", "n": n}


def group_op(key: str, agg: str, col: str) -> dict[str, Any]:
    return {"op": "group", "key": key, "agg": agg, "col": col}


COUNT_OP: dict[str, Any] = {"op": "count"}

__all__ = [
    "AGGREGATES",
    "BAD_ACTION_CLASSES",
    "COMPARATORS",
    "COUNT_OP",
    "MAX_ACTION_CHARS",
    "SHARED_ERROR_CLASSES",
    "PipelineEnv",
    "Table",
    "Token",
    "ToolError",
    "apply_op",
    "clean_action",
    "comma_list",
    "docs_section",
    "filter_op",
    "group_op",
    "lex",
    "lex_stages",
    "limit_op",
    "load_op",
    "reference_result",
    "row_overlap",
    "select_op",
    "sort_op",
    "tables_match",
    "whole_number",
]
