"""One line of memory for a LangChain ``create_agent`` agent: a SQL agent over a real sqlite3 database.

    agent = create_agent(model, tools, middleware=[memory.as_middleware(docs_tools=["describe_table"]), errors])

The model here is scripted (no API key needed) but decides like a model: from the request
it is sent. Its habit is a plausible column name, ``name``, for a table whose column is
``emp_name``. On the error it reads the table's schema and fixes the query. Memory
captures the failure, pairs it with the fix at the end of the run, and from then on the
lesson rides in the system message of every request as quoted data; the model reads it
there (it parses the "Use `x` instead of `y`" note it was shown) and writes the right column at
once. Nothing from memory enters the conversation history.

Middleware order: memory first (outermost), so it sees each tool call's final outcome,
then ``ToolErrorMiddleware``, which turns sqlite errors into error ToolMessages the
model can read (without it, ``create_agent`` re-raises a tool's exception and the run ends).

Run it:  python examples/create_agent_sql.py [store-path]
Exit status 0 when the second run made fewer tool errors than the first.
"""

from __future__ import annotations

import re
import sqlite3
import sys
import tempfile
import threading
from collections.abc import Sequence
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import ToolErrorMiddleware
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import BaseTool, tool
from pydantic import Field

from langmem_plus import LearningMemory, LearningMiddleware

QUESTION = "Which employees earn more than 50000?"
HABIT = "SELECT name FROM employees WHERE salary > 50000 ORDER BY name"
"""The query the model drafts first: ``name`` is the usual column name, not this table's."""
_RULE = re.compile(r"Use `(\w+)` instead of `(\w+)`")
"""A rewrite note as memory writes it (docs/notes-contract.md): the correct form, then the wrong one."""
_LESSON_ID = re.compile(r"\[lesson:([\w.:-]+)\]")
_NO_COLUMN = re.compile(r"no such column: (\w+)")


def _text(message: BaseMessage) -> str:
    return message.content if isinstance(message.content, str) else str(message.content)


class SqlModel(BaseChatModel):
    """A scripted chat model that acts on what its request says, as a model would."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> "SqlModel":
        return self

    @property
    def _llm_type(self) -> str:
        return "scripted-sql"

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self.decide(messages))])

    def decide(self, messages: Sequence[BaseMessage]) -> AIMessage:
        """Draft the habitual query, corrected by any rewrite note in the system message (or in the answer memory
        gave a call it stopped); after an error read the schema; after the schema fix the column; after rows, answer."""
        system = _text(messages[0]) if messages and isinstance(messages[0], SystemMessage) else ""
        results = [m for m in messages if isinstance(m, ToolMessage)]
        last = results[-1] if results else None
        if last is None:
            return self._call("run_sql", {"query": self.apply(system, HABIT)}, len(messages))
        if last.name == "run_sql" and _text(last).startswith("Not run:"):  # memory stopped the call: read its notes
            return self._call("run_sql", {"query": self.apply(_text(last), HABIT)}, len(messages))
        if last.name == "run_sql" and last.status == "error":
            return self._call("describe_table", {"table": "employees"}, len(messages))
        if last.name == "describe_table":
            failed = [m for m in results if m.name == "run_sql" and m.status == "error"][-1]
            bad = _NO_COLUMN.search(_text(failed))
            columns = re.findall(r"(\w+) \w+", _text(last))
            fix = next((c for c in columns if bad and bad.group(1) in c), None)
            query = re.sub(rf"\b{bad.group(1)}\b", fix, HABIT) if bad and fix else HABIT
            return self._call("run_sql", {"query": query}, len(messages))
        return AIMessage(content=f"Employees earning more than 50000: {_text(last)}")

    @staticmethod
    def apply(notes: str, query: str) -> str:
        """The query with every rewrite note in ``notes`` applied (notes it was shown, read as text)."""
        for correct, wrong in _RULE.findall(notes):
            query = re.sub(rf"\b{wrong}\b", correct, query)
        return query

    @staticmethod
    def _call(name: str, args: dict[str, Any], n: int) -> AIMessage:
        return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": f"call_{n}"}])


class SeenModel(SqlModel):
    """The same model, remembering the system message of each request (to print what memory added)."""

    seen: list[str] = Field(default_factory=list)

    def decide(self, messages: Sequence[BaseMessage]) -> AIMessage:
        self.seen.append(_text(messages[0]) if messages and isinstance(messages[0], SystemMessage) else "")
        return super().decide(messages)


def make_tools(conn: sqlite3.Connection) -> list[BaseTool]:
    lock = threading.Lock()  # tools run on worker threads; one connection serves one call at a time

    @tool
    def run_sql(query: str) -> str:
        """Run one SQL query on the company database and return the rows."""
        with lock:
            return repr(conn.execute(query).fetchall())

    @tool
    def describe_table(table: str) -> str:
        """The columns of a table, as 'name TYPE' pairs."""
        with lock:
            rows = conn.execute(f"PRAGMA table_info({table})").fetchall()
        return ", ".join(f"{r[1]} {r[2]}" for r in rows)

    return [run_sql, describe_table]


def make_db() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:", check_same_thread=False)
    conn.execute("CREATE TABLE employees (emp_name TEXT, salary INTEGER)")
    conn.executemany("INSERT INTO employees VALUES (?, ?)", [("ada", 72000), ("bob", 41000), ("cy", 58000)])
    return conn


def main(store: str | None = None, runs: int = 2) -> list[int]:
    """Run the agent ``runs`` times on one memory; returns the tool errors of each run."""
    memory = LearningMemory.open(store or tempfile.mkdtemp(), namespace=("example", "create-agent-sql"))
    conn = make_db()
    sql_errors = ToolErrorMiddleware(on_error=lambda exc, req: f"Error: {exc}" if isinstance(exc, sqlite3.Error) else None)
    errors = []
    for r in range(runs):
        model = SeenModel()
        agent = create_agent(
            model,
            make_tools(conn),
            system_prompt="You answer questions about the company database with SQL.",
            middleware=[memory.as_middleware(docs_tools=["describe_table"]), sql_errors],
        )
        result = agent.invoke({"messages": [HumanMessage(QUESTION)]})
        report = LearningMiddleware.report(result)
        assert report is not None  # set by the middleware when the agent ends
        shown = sorted(set(_LESSON_ID.findall(model.seen[0])))
        errors.append(report.tool_errors)
        print(f"run {r + 1}: tool errors {report.tool_errors}, tool calls {report.steps}, "
              f"lessons in the first request {shown}, new lessons {report.new_lessons}")
        print(f"  answer: {result['messages'][-1].content}")
    for lesson in memory.list_lessons():
        print(f"lesson {lesson.id} [{lesson.status}]: {lesson.rule_text}")
    memory.close()
    conn.close()
    return errors


if __name__ == "__main__":
    counts = main(sys.argv[1] if len(sys.argv) > 1 else None)
    sys.exit(0 if len(counts) >= 2 and counts[-1] < counts[0] else 1)
