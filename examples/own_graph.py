"""The memory nodes inside your own LangGraph graph: a tiny SQL agent over a real sqlite3 database.

Your graph keeps its own executor and tool nodes; langmem_plus adds four nodes:
``pre_run`` (lessons before the first step), ``capture`` (fingerprint failed steps),
``on_error_retrieve`` + ``distill_hints`` (lessons at the moment of an error) and
``end_of_run`` (lesson synthesis and utility update, inside the graph).

The agent below has a habit: it writes ``nme`` for the ``name`` column. On an error it
reads the schema (a step) and fixes the query. Memory turns the repeated
``no such column`` failure into a WRONG -> CORRECT lesson, and the agent applies
retrieved lessons with ``langmem_plus.rewrite.apply_rewrite`` before acting, so the
second run makes no errors.

Run it:  python examples/own_graph.py
"""

from __future__ import annotations

import sqlite3
import sys
import tempfile
from typing import Any

from langgraph.graph import END, START, StateGraph

from langmem_plus import LearningMemory, TaskSpec
from langmem_plus.nodes import (
    MemoryState,
    capture_node,
    distill_hints_node,
    end_of_run_node,
    on_error_retrieve_node,
    pre_run_node,
)
from langmem_plus.records import Feedback, Step, Verdict
from langmem_plus.rewrite import apply_rewrite

HABIT_QUERIES = [
    "SELECT nme FROM people WHERE age > 30 ORDER BY nme",
    "SELECT nme, age FROM people WHERE age < 40",
]


class AgentState(MemoryState, total=False):
    """Your own state: MemoryState's keys plus whatever your agent needs."""

    next_query: int
    pending: str


def make_db() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE people (name TEXT, age INTEGER)")
    conn.executemany("INSERT INTO people VALUES (?, ?)", [("ada", 36), ("bob", 25), ("cy", 41)])
    return conn


def build(memory: LearningMemory, conn: sqlite3.Connection) -> Any:
    def plan(state: AgentState) -> dict[str, Any]:
        """The agent: next query (or a fix after a failure), with retrieved lessons applied."""
        steps = state.get("steps") or []
        i = state.get("next_query", 0)
        query = state.get("pending") or HABIT_QUERIES[i]
        if steps and steps[-1].feedback.failed and steps[-1].action != "PRAGMA table_info(people)":
            return {"pending": "PRAGMA table_info(people)"}  # read the schema: costs a step
        if steps and steps[-1].action == "PRAGMA table_info(people)":
            query = HABIT_QUERIES[i].replace("nme", "name")  # what the schema taught, this run only
        for hint in state.get("hints") or []:
            if hint.wrong and hint.correct:
                query = apply_rewrite(query, hint.wrong, hint.correct) or query
        return {"pending": query}

    def act(state: AgentState) -> dict[str, Any]:
        query = state["pending"]
        steps = state.get("steps") or []
        try:
            rows = conn.execute(query).fetchall()
            fb, obs = Feedback(reward=1.0 if not query.startswith("PRAGMA") else 0.0, progress=1.0), repr(rows)
        except sqlite3.Error as exc:
            fb, obs = Feedback(hard_failure=True, error_text=f"sqlite3.{type(exc).__name__}: {exc}"), ""
        # Reading the schema is a docs lookup: flag it so memory never mistakes it for an attempt.
        info = {"kind": "docs"} if query.startswith("PRAGMA") else {}
        step = Step(index=len(steps), action=query, observation=obs, feedback=fb, tool="sqlite3", info=info)
        advance = not fb.failed and not query.startswith("PRAGMA")
        return {"steps": [step], "pending": "", "next_query": state.get("next_query", 0) + int(advance)}

    def route(state: AgentState) -> str:
        if state.get("last_event") is not None:
            return "on_error_retrieve"
        return "finish" if state.get("next_query", 0) >= len(HABIT_QUERIES) else "plan"

    def finish(state: AgentState) -> dict[str, Any]:
        failed = sum(s.feedback.failed for s in state.get("steps") or [])
        return {"verdict": Verdict(passed=True, score=1.0 if failed == 0 else 0.5, source="signals")}

    g = StateGraph(AgentState)
    g.add_node("pre_run", pre_run_node(memory))
    g.add_node("plan", plan)
    g.add_node("act", act)
    g.add_node("capture", capture_node(memory))
    g.add_node("on_error_retrieve", on_error_retrieve_node(memory))
    g.add_node("distill_hints", distill_hints_node(memory))
    g.add_node("finish", finish)
    g.add_node("end_of_run", end_of_run_node(memory))
    g.add_edge(START, "pre_run")
    g.add_edge("pre_run", "plan")
    g.add_edge("plan", "act")
    g.add_edge("act", "capture")
    g.add_conditional_edges("capture", route)
    g.add_edge("on_error_retrieve", "distill_hints")
    g.add_edge("distill_hints", "plan")
    g.add_edge("finish", "end_of_run")
    g.add_edge("end_of_run", END)
    return g.compile()


def main(store: str | None = None, runs: int = 2) -> list[int]:
    """Run the agent ``runs`` times on one memory; returns the tool errors of each run."""
    memory = LearningMemory.open(store or tempfile.mkdtemp(), namespace=("example", "sql-agent"))
    graph = build(memory, make_db())
    task = TaskSpec(task_id="people-report", goal="report names of people by age", tool="sqlite3", domain="sql")
    errors = []
    for r in range(runs):
        final = graph.invoke({"run_id": f"run-{r}", "task": task, "steps": [], "captured": 0}, {"recursion_limit": 100})
        report = final["report"]
        errors.append(report.tool_errors)
        print(f"run {r + 1}: tool errors {report.tool_errors}, steps {report.steps}, new lessons {report.new_lessons}")
    for lesson in memory.list_lessons():
        print(f"lesson {lesson.id} [{lesson.status}]: {lesson.rule_text}")
    memory.close()
    return errors


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
