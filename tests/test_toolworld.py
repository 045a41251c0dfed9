"""Toolworld: real programs, real errors, seeded questions, and the habit model in a real agent."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import ToolErrorMiddleware, wrap_tool_call
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import ToolException

from langmem_plus.bench.toolworld import (
    HABITS,
    TEMPLATES,
    UNKNOWN_QUESTION,
    HabitModel,
    Lookup,
    MissingProgramError,
    Question,
    ToolRunError,
    ToolWorld,
    decide,
    directives,
    notes_in_system,
    parse_note_line,
    parse_question,
    questions,
    rewrite_value,
)
from langmem_plus.bench.toolworld.notes import Avoid, Rewrite

SEED = 11
HEADER = "## Memory notes (langmem_plus)"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> ToolWorld:
    return ToolWorld(tmp_path_factory.mktemp("toolworld"), seed=SEED)


@pytest.fixture(scope="module")
def qs(world: ToolWorld) -> list[Question]:
    return questions(world, 44, seed=SEED)


def _agent(world: ToolWorld, system: str | None = None, middleware: list[Any] | None = None) -> Any:
    return create_agent(
        HabitModel(), tools=world.tools, system_prompt=system,
        middleware=[*(middleware or []), ToolErrorMiddleware(lambda exc, req: str(exc))],
    )


def _ask(agent: Any, text: str) -> list[Any]:
    return list(agent.invoke({"messages": [HumanMessage(text)]})["messages"])


def _calls(messages: list[Any]) -> list[dict[str, Any]]:
    return [tc for m in messages if isinstance(m, AIMessage) for tc in m.tool_calls]


def _errors(messages: list[Any]) -> list[ToolMessage]:
    return [m for m in messages if isinstance(m, ToolMessage) and m.status == "error"]


def _first(qs: list[Question], habit: str | None, tool: str | None = None) -> Question:
    return next(q for q in qs if q.habit == habit and (tool is None or q.tool == tool))


# ----------------------------------------------------------------------------- the world
def test_world_builds_fixtures_and_tools(world: ToolWorld) -> None:
    assert [t.name for t in world.tools] == ["run_sql", "jq", "git", "awk"]
    assert world.db_path.is_file() and (world.repo_path / ".git").is_dir()
    assert 5 <= len(world.catalog.tables) <= 7
    for file in world.catalog.json_files:
        doc = json.loads((world.root / file).read_text())
        assert 1 <= len(doc) <= 2 and all(isinstance(v, list) for v in doc.values())
    branches = world.call("git", {"args": "branch"}).split()
    assert "*" in branches and branches[branches.index("*") + 1] == "main"
    assert 3 <= len(world.catalog.branches) <= 5
    assert all((world.root / f).is_file() for f in world.catalog.text_files)


@pytest.mark.parametrize(
    ("name", "args", "pattern"),
    [
        ("run_sql", {"query": "SELECT COUNT(*) FROM students"}, r"^\d+\n$"),
        ("jq", {"filter": ".pupils | length", "file": "pupils.json"}, r"^\d+\n$"),
        ("git", {"args": "rev-list --count main"}, r"^6\n$"),
        ("awk", {"program": "END { print NR }", "file": "scores.txt"}, r"^\d+\n$"),
    ],
)
def test_each_tool_runs_a_correct_call(world: ToolWorld, name: str, args: dict[str, str],
                                       pattern: str) -> None:
    tool = next(t for t in world.tools if t.name == name)
    assert re.match(pattern, tool.invoke(args))


def test_tool_errors_carry_the_programs_stderr(world: ToolWorld) -> None:
    sql = world.tools[0]
    with pytest.raises(ToolException, match='near "3": syntax error'):
        sql.invoke({"query": "SELECT TOP 3 student FROM students"})
    with pytest.raises(ToolRunError) as usage:
        world.call("git", {"args": "diff --names-only main fix-typo"})
    assert usage.value.returncode == 129 and len(str(usage.value).splitlines()) == 3
    with pytest.raises(ToolRunError, match="no file"):
        world.call("jq", {"filter": ".", "file": "/etc/passwd"})
    with pytest.raises(ToolRunError, match="read-only"):
        world.call("git", {"args": "commit -m x"})
    with pytest.raises(ToolRunError, match="only list"):
        world.call("git", {"args": "branch -D fix-typo"})


def test_missing_program_is_named_with_its_package(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(MissingProgramError, match=r"jq \(apt package jq\).*awk \(apt package mawk\)"):
        ToolWorld(tmp_path / "w", seed=1)


# ----------------------------------------------------------------------------- habits
@pytest.mark.parametrize("habit_name", list(HABITS))
def test_habit_draft_fails_for_real_and_recovery_gives_expected(
    world: ToolWorld, qs: list[Question], habit_name: str
) -> None:
    habit = HABITS[habit_name]
    for q in [q for q in qs if q.habit == habit_name]:
        draft = habit.draft(q.args)
        assert habit.present(q.tool, draft) and not habit.present(q.tool, q.args)
        with pytest.raises(ToolRunError) as failed:
            world.call(q.tool, draft)
        error = str(failed.value)
        assert re.search(habit.error, error, habit.flags), error
        fix = habit.recover(error, draft, None)
        if habit_name == "git_master":
            assert isinstance(fix, Lookup) and fix.args == {"args": "branch"}
            fix = habit.recover(error, draft, world.call(fix.tool, fix.args))
        assert fix == q.args
        assert world.call(q.tool, fix) == q.expected


def test_recoveries_read_errors_with_placeholders() -> None:
    sql_top, jq_sum = HABITS["sql_top"], HABITS["jq_sum"]
    draft = {"query": "SELECT TOP 2 city FROM cities ORDER BY city"}
    assert sql_top.recover('near <str>: syntax error', draft) == {
        "query": "SELECT city FROM cities ORDER BY city LIMIT 2"}
    assert HABITS["sql_ilike"].recover('near <str>: syntax error', draft) is None
    assert jq_sum.recover("sum/<num> is not defined", {"filter": "[.a[].b] | sum", "file": "x"})
    assert jq_sum.recover("no such function: LEN", {"filter": "[.a[].b] | sum", "file": "x"}) is None


# ----------------------------------------------------------------------------- questions
def test_questions_are_seeded_and_split_in_phases(world: ToolWorld, qs: list[Question]) -> None:
    assert questions(world.catalog, 44, seed=SEED) == [
        Question(q.text, q.tool, q.habit, None, q.phase, q.args, q.template) for q in qs]
    assert [q.text for q in questions(world.catalog, 44, seed=SEED + 1)] != [q.text for q in qs]
    assert [q.phase for q in qs] == ["learn"] * 22 + ["heldout"] * 22
    for phase in ("learn", "heldout"):
        half = [q for q in qs if q.phase == phase]
        habits = Counter(q.habit for q in half if q.habit)
        assert set(habits) == set(HABITS) and set(habits.values()) == {2}
        controls = [q for q in half if q.habit is None]
        assert len(controls) == 4 and {q.tool for q in controls} == {"run_sql", "jq", "git", "awk"}
    assert all(q.expected for q in qs)


def test_heldout_literals_differ_from_learning(qs: list[Question]) -> None:
    def literals(phase: str) -> dict[str, set[str]]:
        seen: dict[str, set[str]] = {}
        for q in qs:
            if q.phase == phase:
                parsed = parse_question(q.text)
                assert parsed is not None
                for slot, value in parsed[1].items():
                    seen.setdefault(slot, set()).add(value)
        return seen

    learn, heldout = literals("learn"), literals("heldout")
    for slot in ("table", "label", "text", "num", "file", "key", "field", "branch",
                 "n", "i", "col", "ncol", "dcol"):
        assert not learn.get(slot, set()) & heldout.get(slot, set()), slot


def test_every_question_parses_back_to_its_correct_call(qs: list[Question]) -> None:
    for q in qs:
        parsed = parse_question(q.text)
        assert parsed is not None and parsed[0].id == q.template
        assert parsed[0].call(parsed[1]) == q.args
    tools = Counter(t.tool for t in TEMPLATES if t.habit is None)
    assert set(tools) == {"run_sql", "jq", "git", "awk"}


# ----------------------------------------------------------------------------- the model
@pytest.mark.parametrize("habit_name", list(HABITS))
def test_model_without_memory_recovers_after_one_error(
    world: ToolWorld, qs: list[Question], habit_name: str
) -> None:
    q = _first(qs, habit_name)
    messages = _ask(_agent(world), q.text)
    assert len(_errors(messages)) == 1
    assert len(_calls(messages)) == (3 if habit_name == "git_master" else 2)
    assert q.expected is not None and q.expected in messages[-1].content
    ids = [tc["id"] for tc in _calls(messages)]
    assert len(set(ids)) == len(ids)


def test_model_answers_controls_without_error_and_declines_unknown(
    world: ToolWorld, qs: list[Question]
) -> None:
    agent = _agent(world)
    for q in [q for q in qs if q.habit is None][:4]:
        messages = _ask(agent, q.text)
        assert len(_calls(messages)) == 1 and not _errors(messages)
        assert q.expected is not None and q.expected in messages[-1].content
    messages = _ask(agent, "What is the weather like in Lisbon?")
    assert not _calls(messages) and messages[-1].content == UNKNOWN_QUESTION


def test_model_applies_notes_from_the_system_block(world: ToolWorld, qs: list[Question]) -> None:
    notes = "\n".join([
        "You answer questions with tools.",
        "",
        HEADER,
        '- [lesson:a1] "Use `SELECT <...> LIMIT <n>` instead of `SELECT TOP <n> <...>`"',
        "- [lesson:a2] " + json.dumps('Avoid `LEN(` (fails with: "no such function: LEN")')
        + ' uses="3"',
        "- " + json.dumps('Avoid `master` (fails with: "fatal: ambiguous argument <str>: '
                          'unknown revision")'),
        '- "Use `STOP` instead of `GO`"',
    ])
    agent = _agent(world, notes)
    for habit, n_calls in (("sql_top", 1), ("sql_len", 1), ("git_master", 2)):
        for q in [q for q in qs if q.habit == habit]:
            messages = _ask(agent, q.text)
            assert not _errors(messages), (habit, messages)
            assert len(_calls(messages)) == n_calls
            assert _calls(messages)[-1]["args"] == q.args
            assert q.expected is not None and q.expected in messages[-1].content
    q = _first(qs, "jq_sum")  # no note ties to it: the habit shows as without memory
    assert len(_errors(_ask(agent, q.text))) == 1


def test_not_run_makes_the_model_repropose(world: ToolWorld, qs: list[Question]) -> None:
    q = _first(qs, "sql_ilike")
    draft = HABITS["sql_ilike"].draft(q.args)
    proposed = AIMessage("", tool_calls=[{"name": "run_sql", "args": draft, "id": "call_1"}])

    def after(content: str) -> AIMessage:
        return decide([SystemMessage("s"), HumanMessage(q.text), proposed,
                       ToolMessage(content, tool_call_id="call_1", status="error")])

    changed = after('Not run: memory holds a lesson against this call.\n'
                    '- [lesson:x] "r" rule="WRONG: <a> ILIKE <b> -> CORRECT: <a> LIKE <b>"')
    assert changed.tool_calls[0]["args"] == q.args and changed.tool_calls[0]["id"] == "call_2"
    same = after('Not run: memory holds a lesson against this call.\n- "Avoid `GROUP BY`"')
    assert same.tool_calls[0]["args"] == draft

    @wrap_tool_call
    def guard(request: Any, handler: Any) -> Any:
        call = request.tool_call
        if HABITS["sql_ilike"].present(call["name"], call["args"]):
            note = "- " + json.dumps('Avoid `ILIKE` (fails with: "near "ILIKE": syntax error")')
            return ToolMessage(f"Not run: a lesson says this fails.\n{note}",
                               tool_call_id=call["id"], name=call["name"])
        return handler(request)

    messages = _ask(_agent(world, middleware=[guard]), q.text)
    assert not _errors(messages) and [c["args"] for c in _calls(messages)] == [draft, q.args]
    assert q.expected is not None and q.expected in messages[-1].content


def test_model_gives_up_on_errors_it_cannot_read(qs: list[Question]) -> None:
    q = _first(qs, "sql_len")
    call = AIMessage("", tool_calls=[{"name": "run_sql", "args": q.args, "id": "call_1"}])
    final = decide([HumanMessage(q.text), call,
                    ToolMessage("disk I/O error", tool_call_id="call_1", status="error")])
    assert not final.tool_calls and "could not" in str(final.content)


# ----------------------------------------------------------------------------- notes and forms
def test_contract_example_and_placeholders() -> None:
    assert rewrite_value("SELECT TOP <n> <...>", "SELECT <...> LIMIT <n>",
                         "SELECT TOP 3 name FROM pets ORDER BY age") == (
        "SELECT name FROM pets ORDER BY age LIMIT 3")
    assert rewrite_value(".x [0]", ".y[0]", ".x[0] | .z") == ".y[0] | .z"
    assert rewrite_value("TOP", "LIMIT", "SELECT a FROM STOP") is None
    assert rewrite_value("sum", "add", ". | sum_all") is None
    assert rewrite_value("* ILIKE *", "* LIKE *", "WHERE a ILIKE 'x%'") == "WHERE a LIKE 'x%'"
    assert rewrite_value("<a>..<b>", "<b>..<a>", "log main..fix-typo") == "log fix-typo..main"
    assert rewrite_value("LEN(<x>)", "LENGTH(<y>)", "LEN(a)") is None


def test_note_lines_parse_as_the_contract_writes_them() -> None:
    note = parse_note_line('- [lesson:L7] "Use `\\"a\\"` instead of `b`" rule="WRONG: `c` -> '
                           'CORRECT: `d` (when: \\"x <num>\\")" seen="2"')
    assert note is not None and (note.kind, note.id) == ("lesson", "L7")
    assert note.values == {"rule": 'WRONG: `c` -> CORRECT: `d` (when: "x <num>")', "seen": "2"}
    assert directives([note]) == [Rewrite("b", '"a"'), Rewrite("c", "d", "x <num>")]
    block = f"intro\n- not a note\n{HEADER} (2)\n- \"Avoid `x` (fails with: \\\"boom (1)\\\")\"\n"
    assert directives(notes_in_system(block)) == [Avoid("x", "boom (1)")]
    assert parse_note_line("- plain words") is None
