"""Tool-call lessons: rewrites whose literals are slots, learned from real programs' error pairs, merged across
literal variants, and the call guard that holds them against a proposed call before it runs."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import ToolErrorMiddleware
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from langmem_plus import LearningMemory
from langmem_plus.bench.toolworld import ToolWorld
from langmem_plus.learning.synthesis import synthesize_offline
from langmem_plus.records import ErrorEvent, Feedback, Lesson, LessonScope, Step
from langmem_plus.rewrite import apply_rewrite, derive_rewrite
from recording_model import RecordingModel

NS = ("acme", "tools")


def run(*argv: str, cwd: Path | None = None, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), cwd=cwd, input=stdin, capture_output=True, text=True, timeout=10)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    for program in ("sqlite3", "jq", "git", "awk", "python3"):
        if shutil.which(program) is None:
            pytest.fail(f"{program} is needed by these tests (apt install {program})")
    root = tmp_path_factory.mktemp("real")
    db = root / "db.sqlite"
    run("sqlite3", str(db), "CREATE TABLE pets(name TEXT, age INT); CREATE TABLE cars(model TEXT, year INT);"
        "INSERT INTO pets VALUES('rex',3),('tom',5),('kit',1); INSERT INTO cars VALUES('golf',2001),('polo',1999);")
    (root / "a.json").write_text(json.dumps({"pets": [{"n": "rex", "w": 3}, {"n": "tom", "w": 5}],
                                             "cars": [{"m": "golf", "km": 10}, {"m": "polo", "km": 7}]}))
    (root / "t.txt").write_text("a-b x_y\nc-d z_w\n")
    repo = root / "repo"
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t",
           "HOME": str(root), "GIT_CONFIG_NOSYSTEM": "1", "PATH": "/usr/bin:/bin"}
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True, env=env)
    subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "one"], cwd=repo, check=True, env=env)
    subprocess.run(["git", "branch", "fix-typo"], cwd=repo, check=True, env=env)
    return root


def sql(root: Path, query: str) -> subprocess.CompletedProcess[str]:
    return run("sqlite3", str(root / "db.sqlite"), query)


def jq(root: Path, program: str) -> subprocess.CompletedProcess[str]:
    return run("jq", "-c", program, str(root / "a.json"))


def git(root: Path, args: str) -> subprocess.CompletedProcess[str]:
    return run("git", *args.split(), cwd=root / "repo")


def awk(root: Path, program: str) -> subprocess.CompletedProcess[str]:
    return run("awk", program, str(root / "t.txt"))


def py(root: Path, code: str) -> subprocess.CompletedProcess[str]:
    return run("python3", "-c", code)


# (program, failed, fixed, a new call with other literals, what the rewritten new call must print)
PAIRS = [
    (sql, "SELECT TOP 2 name FROM pets ORDER BY age DESC", "SELECT name FROM pets ORDER BY age DESC LIMIT 2",
     "SELECT TOP 1 model FROM cars ORDER BY year", "polo"),
    (sql, "SELECT name FROM pets WHERE name ILIKE 'r%'", "SELECT name FROM pets WHERE name LIKE 'r%'",
     "SELECT model FROM cars WHERE model ILIKE 'G%'", "golf"),
    (sql, "SELECT LEN(name) FROM pets WHERE age = 3", "SELECT LENGTH(name) FROM pets WHERE age = 3",
     "SELECT model, LEN(model) FROM cars WHERE year = 1999", "polo|4"),
    (jq, ".pets.[1].n", ".pets[1].n", ".cars.[0].m", '"golf"'),
    (jq, "[.pets[].w] | sum", "[.pets[].w] | add", "[.cars[].km] | sum", "17"),
    (git, "log --format=%s master", "log --format=%s main", "log -1 --format=%s master..fix-typo", ""),
    (awk, '{print gensub(/-/, " ", "g", $1)}', '{gsub(/-/, " ", $1); print $1}', '{print gensub(/_/, "+", "g", $2)}',
     "x+y\nz+w"),
    (py, 'd = {"a": 1}\nprint(d.has_key("a"))', 'd = {"a": 1}\nprint("a" in d)', 'm = {"k": 2}\nprint(m.has_key("k"))',
     "True"),
]


@pytest.mark.parametrize("program, failed, fixed, new, printed", PAIRS, ids=[f"{p[0].__name__}-{i}" for i, p in enumerate(PAIRS)])
def test_a_real_error_pair_becomes_a_rule_over_other_literals(files: Path, program: Any, failed: str, fixed: str,
                                                               new: str, printed: str) -> None:
    bad, good = program(files, failed), program(files, fixed)
    assert bad.returncode != 0 and good.returncode == 0, (bad.stderr, good.stderr)
    rule = derive_rewrite(failed, fixed, bad.stderr)
    assert rule is not None and rule[1].strip(), rule  # the CORRECT side is never empty
    assert program(files, new).returncode != 0  # the new call makes the same mistake with other literals ...
    rewritten = apply_rewrite(new, *rule)
    assert rewritten is not None, (rule, new)
    out = program(files, rewritten)  # ... and the rule, learned on other values, fixes it
    assert out.returncode == 0 and out.stdout.strip() == printed, (rule, rewritten, out.stderr)


def test_structural_edits_keep_the_moved_value_and_the_path_expression() -> None:
    assert derive_rewrite("SELECT TOP 4 name FROM t", "SELECT name FROM t LIMIT 4") == ("TOP * <...>", "<...> LIMIT *")
    assert derive_rewrite(".students.[2].name", ".students[2].name") == ("*.[", "*[")
    assert derive_rewrite("pick 'a' | x 3", 'pick "a" | x 3') == ("'*'", '"*"')
    assert derive_rewrite('{print gensub(/-/, " ", "g", $1)}', '{gsub(/-/, " ", $1); print $1}') == (
        'print gensub(<...>, "g", $<n>)', 'gsub(<...>, $<n>); print $<n>')  # a value used twice keeps its name
    assert derive_rewrite('d.has_key("a")', '"a" in d') == ("<id>.has_key(<str>)", "<str> in <id>")


def _pair(run_id: str, failed: str, fixed: str, error: str, k: int = 0) -> tuple[list[Step], list[ErrorEvent]]:
    steps = [Step(index=0, action=f"run_sql query={failed}", tool="run_sql", info={"args": {"query": failed}},
                  feedback=Feedback(hard_failure=True, error_text=error)),
             Step(index=1, action=f"run_sql query={fixed}", tool="run_sql", info={"args": {"query": fixed}})]
    event = ErrorEvent(id=f"e{run_id}", namespace=NS, run_id=run_id, step=0, channel="hard", tool="run_sql",
                       fingerprint="near <str>: syntax error", fingerprint_id="fp-top", action=steps[0].action,
                       error_text=error)
    return steps, [event]


def test_literal_variants_are_one_lesson_with_the_evidence_of_each(tmp_path: Path) -> None:
    memory = LearningMemory.open(tmp_path, namespace=NS)
    ids = []
    for n, table in ((3, "pets"), (5, "cars")):
        steps, events = _pair(f"r{n}", f"SELECT TOP {n} a FROM {table}", f"SELECT a FROM {table} LIMIT {n}",
                              f'Error: near "{n}": syntax error')
        report = memory.end_run(run_id=f"r{n}", task=_task(), steps=steps, events=events)
        ids += report.new_lessons + report.merged_lessons
    rewrites = [l for l in memory.list_lessons() if l.wrong and l.correct]
    assert len(rewrites) == 1 and rewrites[0].wrong == "TOP * <...>"
    assert set(rewrites[0].provenance.run_ids) == {"r3", "r5"}
    memory.close()


def _task() -> Any:
    from langmem_plus.records import TaskSpec

    return TaskSpec(task_id="t", goal="the oldest pets")


def test_a_general_lesson_absorbs_a_stored_literal_one_keeping_its_id_and_evidence(tmp_path: Path) -> None:
    memory = LearningMemory.open(tmp_path, namespace=NS)
    literal = Lesson(id="les_old", namespace=NS, rule_text="WRONG: master...fix -> CORRECT: main...fix",
                     wrong="master...fix", correct="main...fix", triggers=["fp-git"], scope=LessonScope(tool="git"),
                     created_at=1.0, updated_at=1.0)
    memory.add_lessons([literal])
    steps = [Step(index=0, action="git args=log master", tool="git", info={"args": {"args": "log master"}},
                  feedback=Feedback(hard_failure=True, error_text="fatal: ambiguous argument 'master'")),
             Step(index=1, action="git args=log main", tool="git", info={"args": {"args": "log main"}})]
    event = ErrorEvent(id="e1", namespace=NS, run_id="r1", step=0, channel="hard", tool="git", fingerprint="ambiguous",
                       fingerprint_id="fp-git", action=steps[0].action, error_text=steps[0].feedback.error_text)
    report = memory.end_run(run_id="r1", task=_task(), steps=steps, events=[event])
    kept = memory.get_lesson("les_old")
    assert report.merged_lessons == ["les_old"] and kept is not None
    assert (kept.wrong, kept.correct) == ("master", "main") and "r1" in kept.provenance.run_ids
    assert len([l for l in memory.list_lessons() if l.wrong]) == 1
    memory.close()


def test_a_fix_after_a_lookup_still_pairs_with_its_error() -> None:
    failed, lookup, fixed = "log --oneline master..fix-typo", "branch", "log --oneline main..fix-typo"
    steps = [Step(index=i, action=f"git args={a}", tool="git", info={"args": {"args": a}},
                  feedback=Feedback(hard_failure=i == 0, error_text="fatal: ambiguous argument 'master..fix-typo'" if i == 0 else None))
             for i, a in enumerate((failed, lookup, fixed))]
    event = ErrorEvent(id="e", namespace=NS, run_id="r", step=0, channel="hard", tool="git", fingerprint="f",
                       fingerprint_id="f", action=steps[0].action, error_text=steps[0].feedback.error_text or "")
    lessons = synthesize_offline(namespace=NS, run_id="r", steps=steps, events=[event], prior_runs_seen={}, task=None,
                                 now=0.0)
    assert [(l.wrong, l.correct) for l in lessons] == [("master", "main")]


def test_an_unfixed_error_gives_an_avoidance_of_what_it_names_in_its_own_words() -> None:
    error = "awk: line 2: function gensub never defined"
    steps = [Step(index=i, action="awk program={print gensub(/-/, \" \", \"g\", $1)}", tool="awk",
                  info={"args": {"program": '{print gensub(/-/, " ", "g", $1)}'}},
                  feedback=Feedback(hard_failure=True, error_text=error)) for i in range(2)]
    events = [ErrorEvent(id=f"e{i}", namespace=NS, run_id="r", step=i, channel="hard", tool="awk", fingerprint="f",
                         fingerprint_id="f", action=steps[i].action, error_text=error) for i in range(2)]
    [lesson] = synthesize_offline(namespace=NS, run_id="r", steps=steps, events=events, prior_runs_seen={}, task=None,
                                  now=0.0)
    assert lesson.wrong == "gensub" and lesson.correct is None and error in lesson.rule_text


# --------------------------------------------------------------------------- the call guard on a real agent

TOP = "SELECT TOP 2 name FROM students ORDER BY age DESC"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> ToolWorld:
    return ToolWorld(tmp_path_factory.mktemp("world"), seed=0)


def top_query(world: ToolWorld) -> tuple[str, str]:
    table = world.catalog.tables[0]
    cols = table.columns
    return (f"SELECT TOP 2 {cols[1]} FROM {table.name} ORDER BY {cols[0]}",
            f"SELECT {cols[1]} FROM {table.name} ORDER BY {cols[0]} LIMIT 2")


def guarded_memory(path: Path, status: str = "candidate") -> LearningMemory:
    memory = LearningMemory.open(path, namespace=NS)
    memory.add_lessons([Lesson(id="les_top", namespace=NS, rule_text="WRONG: TOP <n> <...> -> CORRECT: <...> LIMIT <n>",
                               wrong="TOP <n> <...>", correct="<...> LIMIT <n>", scope=LessonScope(tool="run_sql"),
                               status=status, triggers=["fp"])])
    return memory


def call(query: str, n: int) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": "run_sql", "args": {"query": query}, "id": f"c{n}"}])


def ask(agent: Any, how: str) -> dict[str, Any]:
    payload = {"messages": [HumanMessage("the two first rows")]}
    return asyncio.run(agent.ainvoke(payload)) if how == "ainvoke" else agent.invoke(payload)


def agent_with(world: ToolWorld, memory: LearningMemory, replies: list[AIMessage], **options: Any) -> tuple[Any, RecordingModel]:
    model = RecordingModel(responses=replies)
    agent = create_agent(model, world.tools, middleware=[memory.as_middleware(**options),
                                                          ToolErrorMiddleware(on_error=lambda e, r: str(e))])
    return agent, model


def tool_messages(result: dict[str, Any]) -> list[ToolMessage]:
    return [m for m in result["messages"] if isinstance(m, ToolMessage)]


@pytest.mark.parametrize("how", ["invoke", "ainvoke"])
def test_the_guard_answers_a_call_a_lesson_holds_against_and_the_model_chooses_again(world: ToolWorld, tmp_path: Path,
                                                                                     how: str) -> None:
    wrong, right = top_query(world)
    memory = guarded_memory(tmp_path)
    agent, model = agent_with(world, memory, [call(wrong, 1), call(right, 2), AIMessage(content="done")])
    result = ask(agent, how)
    answer, ran = tool_messages(result)
    assert answer.content.startswith("Not run:") and "Use `<...> LIMIT <n>` instead of `TOP <n> <...>`" in answer.content
    assert right in answer.content and answer.artifact["lessons"] == ["les_top"]
    assert ran.status != "error" and ran.content.strip() == world.call("run_sql", {"query": right}).strip()
    assert "Not run:" in str(model.seen[1][-1].content)  # the model read the answer before choosing again
    report = agent_with.__name__ and result["lm_report"]
    assert "les_top" in report["activated_lesson_ids"] and report["tool_errors"] == 0
    memory.close()


def test_the_same_call_proposed_again_runs(world: ToolWorld, tmp_path: Path) -> None:
    wrong, _ = top_query(world)
    memory = guarded_memory(tmp_path)
    agent, _ = agent_with(world, memory, [call(wrong, 1), call(wrong, 2), AIMessage(content="done")])
    answer, ran = tool_messages(agent.invoke({"messages": [HumanMessage("q")]}))
    assert answer.content.startswith("Not run:") and ran.status == "error" and "syntax error" in ran.content
    memory.close()


def test_rewrite_mode_runs_a_promoted_lessons_fix_and_says_so(world: ToolWorld, tmp_path: Path) -> None:
    wrong, right = top_query(world)
    memory = guarded_memory(tmp_path, status="promoted")
    agent, _ = agent_with(world, memory, [call(wrong, 1), AIMessage(content="done")], guard="rewrite")
    result = agent.invoke({"messages": [HumanMessage("q")]})
    [ran] = tool_messages(result)
    assert ran.content.startswith("Memory rewrote this call") and right in ran.content
    assert world.call("run_sql", {"query": right}).strip() in ran.content
    steps = result["lm_steps"]
    assert steps[0]["action"] == f"run_sql query={right}" and steps[0]["info"]["rewritten_by"] == ["les_top"]
    memory.close()


@pytest.mark.parametrize("status, guard", [("suppressed", "answer"), ("candidate", "off")])
def test_a_suppressed_lesson_never_guards_and_off_means_off(world: ToolWorld, tmp_path: Path, status: str, guard: str) -> None:
    wrong, _ = top_query(world)
    memory = guarded_memory(tmp_path, status=status)
    agent, _ = agent_with(world, memory, [call(wrong, 1), AIMessage(content="done")], guard=guard)
    [ran] = tool_messages(agent.invoke({"messages": [HumanMessage("q")]}))
    assert ran.status == "error" and "syntax error" in ran.content
    memory.close()


def test_a_guard_check_with_no_lesson_for_the_tool_holds_nothing(tmp_path: Path) -> None:
    memory = guarded_memory(tmp_path)
    assert memory.check_call("jq", {"filter": "TOP 3 x"}) == []
    assert memory.check_call("run_sql", {"query": "SELECT a FROM t LIMIT 3"}) == []
    [held] = memory.check_call("run_sql", {"query": "SELECT TOP 3 a FROM t"})
    assert held.after == "SELECT a FROM t LIMIT 3"
    memory.close()


# --------------------------------------------------------------------------- notes for the tools at hand


def test_notes_before_a_call_are_the_lessons_of_the_tool_the_task_is_likely_to_call(tmp_path: Path) -> None:
    from langmem_plus.bench.agent_tools import SYSTEM_PROMPT, AnswerReferee, _memory_text, _Recording
    from langmem_plus.bench.toolworld import questions
    from langmem_plus.integrations.agent_run import read_records
    from langmem_plus.records import Activation

    world = ToolWorld(tmp_path / "world", seed=3)
    stream = questions(world, 44, seed=3)
    memory = LearningMemory.open(tmp_path / "memory", namespace=NS)
    model = _Recording()
    agent = create_agent(model, world.tools, system_prompt=SYSTEM_PROMPT, middleware=[
        memory.as_middleware(referee=AnswerReferee({q.text: q.expected or "" for q in stream})),
        ToolErrorMiddleware(on_error=lambda e, r: str(e))])
    learned_tools = set()
    for q in stream[:22]:
        agent.invoke({"messages": [HumanMessage(q.text)]})
        learned_tools = {l.scope.tool for l in memory.list_lessons() if l.wrong}
    assert learned_tools == {"run_sql", "jq", "git", "awk"}  # every tool has lessons to show
    shown_tools: list[set[str | None]] = []
    for q in stream[22:30]:
        model.seen = []
        result = agent.invoke({"messages": [HumanMessage(q.text)]})
        block = _memory_text(str(model.seen[0][0].content))
        ids = [line[len("- [lesson:"):].split("]")[0] for line in block.splitlines() if line.startswith("- [lesson:")]
        tools = {memory.get_lesson(i).scope.tool for i in ids}  # type: ignore[union-attr]
        shown_tools.append(tools)
        assert tools <= {q.tool}, (q.text, tools)  # never another tool's lessons
        activated = {a.lesson_id for a in read_records(result, "lm_activations", Activation) if a.moment == "pre_run"}
        assert activated == set(ids)  # what was shown is what was activated
    assert sum(1 for t in shown_tools if t) >= 6  # and the task's own tool's lessons were there
    memory.close()


def test_bench_agent_tools_learns_from_the_first_half_and_reports_its_figures() -> None:
    from langmem_plus.bench.agent_tools import run_bench

    result = run_bench(seeds=[1], tasks=20, designs=["no_memory", "langmem_plus"], guard_lessons=50)
    ours, none = result["designs"]["langmem_plus"], result["designs"]["no_memory"]
    for key in ("heldout_tool_errors", "habits_never_recur_share", "applicable_note_share",
                "memory_tokens_per_model_call", "guard_extra_model_calls"):
        assert key in ours and key in none
    assert none["heldout_tool_errors"] >= 8 and ours["heldout_tool_errors"] < none["heldout_tool_errors"] / 2
    assert none["memory_tokens_per_model_call"] == 0 and ours["memory_tokens_per_model_call"] > 0
    assert result["guard_speed"]["lessons_for_tool"] == 50 and result["guard_speed"]["tool_call_ms_p50"] > 0


def test_a_rewrite_the_guard_ran_that_fails_counts_against_its_lesson(world: ToolWorld, tmp_path: Path) -> None:
    from langmem_plus.learning.baselines import addressed_failures

    memory = LearningMemory.open(tmp_path, namespace=NS)
    bad = Lesson(id="les_bad", namespace=NS, rule_text="WRONG: LIMIT * -> CORRECT: TOP *", wrong="LIMIT *",
                 correct="TOP *", scope=LessonScope(tool="run_sql"), status="promoted", triggers=["fp"])
    memory.add_lessons([bad])
    table = world.catalog.tables[0]
    query = f"SELECT {table.columns[0]} FROM {table.name} LIMIT 2"
    agent, _ = agent_with(world, memory, [call(query, 1), AIMessage(content="done")], guard="rewrite")
    result = agent.invoke({"messages": [HumanMessage("q")]})
    [ran] = tool_messages(result)
    assert ran.status == "error" and ran.content.startswith("Memory rewrote this call")
    run = memory.runs[-1]
    assert addressed_failures(bad, run) == 1 and run.failures[0].rewritten == ["les_bad"]
    memory.close()
