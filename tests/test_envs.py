"""gridtool and fluxtool: tasks, reference answers, error classes, docs, bad input.

The correct pipeline of every task is built from the machine-readable lines of
the tool's own docs (``usage[...]`` / ``term[...]``), not from the tools' code, so
these tests fail if the docs, the parser or the reference answers disagree.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import pytest

from langmem_plus._text import action_tokens
from langmem_plus.envs import fluxtool, gridtool
from langmem_plus.envs._pipeline import BAD_ACTION_CLASSES, SHARED_ERROR_CLASSES, PipelineEnv
from langmem_plus.envs.base import Env
from langmem_plus.envs.fluxtool import FluxToolEnv
from langmem_plus.envs.gridtool import GridToolEnv
from langmem_plus.envs.registry import ENV_NAMES, make_env
from langmem_plus.errors import EnvError

ENVS = [GridToolEnv, FluxToolEnv]
OPS = {"load", "filter", "select", "sort", "limit", "count", "group"}
MIN_TASKS = 12
MIN_FAMILIES = 3
MIN_ERROR_CLASSES = 8
_LINE = re.compile(r"^(usage|term)\[([^\]]+)\]:[ \t]*(.*?)[ \t]*$", re.MULTILINE)


def _grammar(env: PipelineEnv) -> tuple[dict[str, str], dict[str, str]]:
    usage: dict[str, str] = {}
    terms: dict[str, str] = {}
    for kind, key, value in _LINE.findall(env.docs()):
        (usage if kind == "usage" else terms)[key] = value
    return usage, terms


def _render(op: Mapping[str, Any], usage: Mapping[str, str], terms: Mapping[str, str]) -> str:
    def fill(m: re.Match[str]) -> str:
        name = m.group(1)
        if name == "cols":
            return ", ".join(op["cols"])
        if name in ("cmp", "agg"):
            return terms[f"{name}.{op[name]}"]
        if name == "dir":
            return terms[f"dir.{op.get('dir', 'asc')}"]
        if name == "value" and isinstance(op["value"], str):
            return f"{terms['quote']}{op['value']}{terms['quote']}"
        return str(op[name])

    return re.sub(r"\{(\w+)\}", fill, usage[op["op"]])


def correct_pipeline(env: PipelineEnv, intent: list[dict[str, Any]]) -> str:
    """The task's pipeline written from the docs' usage and term lines."""
    usage, terms = _grammar(env)
    joiner = re.search(r"\{stage\}(.+?)\{stage\}", usage["pipe"])
    assert joiner is not None
    return joiner.group(1).join(_render(op, usage, terms) for op in intent)


def _template_regex(template: str) -> re.Pattern[str]:
    return re.compile(".*?".join(re.escape(p) for p in re.split(r"\{\w+\}", template)), re.DOTALL)


# --------------------------------------------------------------------------- tasks


@pytest.mark.parametrize("cls", ENVS)
def test_tasks_are_many_stable_and_structured(cls: type[PipelineEnv]) -> None:
    env = cls()
    tasks = env.tasks()
    assert len(tasks) >= MIN_TASKS
    assert [t.task_id for t in tasks] == [t.task_id for t in cls().tasks()]
    assert len({t.task_id for t in tasks}) == len(tasks)
    assert len({t.family for t in tasks}) >= MIN_FAMILIES
    for task in tasks:
        assert (task.tool, task.domain) == (env.name, env.domain)
        assert task.goal and task.goal[0].isupper()
        intent = task.context["intent"]
        assert intent[0]["op"] == "load" and {op["op"] for op in intent} <= OPS
    tasks[0].context["intent"].clear()  # callers get copies
    assert env.tasks()[0].context["intent"]


@pytest.mark.parametrize("cls", ENVS)
def test_every_reference_answer_passes_with_the_documented_pipeline(cls: type[PipelineEnv]) -> None:
    env = cls()
    for task in env.tasks():
        env.reset(task.task_id)
        assert not env.done and not env.evaluate().passed
        pipeline = correct_pipeline(env, task.context["intent"])
        obs, fb = env.step(pipeline)
        assert (fb.reward, fb.progress, fb.failed, env.done) == (1.0, 1.0, False, True), (task.task_id, obs)
        verdict = env.evaluate()
        assert verdict.passed and verdict.score == 1.0 and verdict.source == "deterministic"


@pytest.mark.parametrize("cls", ENVS)
def test_parsing_is_whitespace_tolerant(cls: type[PipelineEnv]) -> None:
    env = cls()
    for task in env.tasks():
        pipeline = correct_pipeline(env, task.context["intent"])
        respaced = " ".join(action_tokens(pipeline))  # how token rewrites re-join an action
        tight = re.sub(r"\s*(\||->|=>|,|\(|\))\s*", r"\1", pipeline)
        for variant in (respaced, tight, f"  {pipeline}\n"):
            env.reset(task.task_id)
            assert env.step(variant)[1].reward == 1.0, variant


@pytest.mark.parametrize("cls", ENVS)
def test_wrong_result_is_a_constraint_failure_without_the_answer(cls: type[PipelineEnv]) -> None:
    env = cls()
    task = next(t for t in env.tasks() if t.context["intent"][-1]["op"] == "group")
    env.reset(task.task_id)
    load_only = correct_pipeline(env, task.context["intent"][:1])
    _, fb = env.step(load_only)
    assert fb.constraint_failure and not fb.hard_failure and fb.reward == 0.0
    assert fb.progress is not None and 0.0 <= fb.progress < 1.0
    expected_sums = correct_pipeline(env, task.context["intent"])
    env_values = re.findall(r"\d{3,}", env.step(expected_sums)[0])  # the right answer's big numbers
    assert env_values and not any(v in fb.error_text for v in env_values)
    env.reset(task.task_id)
    env.step(load_only)
    verdict = env.evaluate()
    assert not verdict.passed and verdict.score < 1.0 and verdict.source == "deterministic"


# --------------------------------------------------------------------------- error classes

GRID_ERRORS: list[tuple[str, str, list[str]]] = [
    ("unknown_command", "LOAD people | filter age >= 30", ["'filter'", "stage 2"]),
    ("unknown_column", "LOAD people | KEEP agee >= 30", ["'agee'", "did you mean 'age'"]),
    ("unknown_table", "LOAD peeple", ["'peeple'"]),
    ("operator_mismatch", "LOAD people | KEEP age == 30", ["'=='", "stage 2"]),
    ("sort_direction", "LOAD people | SORT age desc", ["'desc'", "stage 2"]),
    ("function_case", "LOAD orders | GROUP city sum(amount)", ["'sum'"]),
    ("unknown_function", "LOAD orders | GROUP city MEDIAN(amount)", ["'MEDIAN'"]),
    ("arity", "LOAD people | TOP 3 5", ["'TOP'", "expected 1, got 2"]),
    ("quote_style", 'LOAD people | KEEP city = "Oslo"', ['"Oslo"']),
    ("unquoted_string", "LOAD people | KEEP city = Oslo", ["'Oslo'"]),
    ("type_mismatch", "LOAD people | KEEP age > 'abc'", ["'age'", "'abc'"]),
    ("bad_number", "LOAD people | TOP 2.5", ["'2.5'"]),
    ("source_first", "KEEP age > 3", ["'KEEP'", "stage 1"]),
    ("source_twice", "LOAD people | LOAD orders", ["stage 2"]),
    ("empty_stage", "LOAD people | | TOP 2", ["stage 2"]),
    ("syntax", "LOAD people | KEEP $age > 3", ["'$'", "stage 2"]),
    ("unterminated_string", "LOAD people | KEEP city = 'Oslo", ["Oslo", "stage 2"]),
    ("empty_action", "   ", []),
    ("too_long", "x" * 1_000_000, ["1000000"]),
    ("non_printable", "LOAD \x00\x01\x02 people", ["3"]),
]
FLUX_ERRORS: list[tuple[str, str, list[str]]] = [
    ("unknown_command", "from users -> filter age >= 30", ["'filter'", "#2"]),
    ("unknown_column", "from users -> only agee >= 30", ["'agee'", "did you mean 'age'"]),
    ("unknown_table", "from user", ["'user'"]),
    ("operator_mismatch", 'from users -> only plan == "pro"', ["'=='", "#2"]),
    ("sort_direction", "from users -> sort age desc", ["'desc'", "#2"]),
    ("unknown_function", "from orders -> per user => avg(price)", ["'avg'"]),
    ("arity", "from users -> first 3 4", ["'first'", "got 2"]),
    ("stray_joiner", "from users | first 2", ["'|'", "#1"]),
    ("quote_style", "from users -> only plan is 'pro'", ["'pro'"]),
    ("unquoted_string", "from users -> only plan is pro", ["'pro'"]),
    ("type_mismatch", 'from users -> only age > "old"', ["'age'", "'old'"]),
    ("bad_number", "from users -> first 0", ["'0'"]),
    ("missing_arrow", "from orders -> per user sum(price)", ["'sum'"]),
    ("source_first", "only age > 3", ["'only'", "#1"]),
    ("source_twice", "from users -> from orders", ["#2"]),
    ("empty_stage", "from users -> -> first 2", ["#2"]),
    ("syntax", "from users -> fields user, , age", ["','"]),
    ("unterminated_string", 'from users -> only plan is "pro', ["pro", "#2"]),
    ("empty_action", "", []),
    ("too_long", "y" * 1_000_000, ["1000000"]),
    ("non_printable", "\x00\x01binary\xff\x7f", ["3"]),
]
CASES = [(GridToolEnv, gridtool.MESSAGES, GRID_ERRORS), (FluxToolEnv, fluxtool.MESSAGES, FLUX_ERRORS)]


@pytest.mark.parametrize(("cls", "messages", "cases"), CASES)
def test_each_error_class_is_produced_with_its_literals(
    cls: type[PipelineEnv], messages: Mapping[str, str], cases: list[tuple[str, str, list[str]]]
) -> None:
    assert {kind for kind, _, _ in cases} == set(messages)  # every class has a producing action
    assert len(set(messages) - set(BAD_ACTION_CLASSES)) >= MIN_ERROR_CLASSES
    env = cls()
    env.reset(env.tasks()[0].task_id)
    for kind, action, literals in cases:
        obs, fb = env.step(action)
        assert fb.hard_failure and not fb.constraint_failure and fb.reward == 0.0, (kind, obs)
        assert _template_regex(messages[kind]).fullmatch(fb.error_text), (kind, fb.error_text)
        for literal in literals:
            assert literal in fb.error_text, (kind, literal, fb.error_text)
        assert obs.startswith("error: ") and not env.done


@pytest.mark.parametrize(("cls", "pairs"), [
    (GridToolEnv, [("LOAD people | filter age > 3", "LOAD people | KEEP age > 3 | where x")]),
    (FluxToolEnv, [("from users -> filter age > 3", "from users -> only age > 3 -> where x")]),
])
def test_same_class_different_literals_differ_only_in_literals(cls: type[PipelineEnv], pairs: list[tuple[str, str]]) -> None:
    env = cls()
    env.reset(env.tasks()[0].task_id)
    for a, b in pairs:
        ta, tb = env.step(a)[1].error_text, env.step(b)[1].error_text
        assert ta != tb
        strip = lambda t: re.sub(r"'[^']*'|\d+", "_", t)
        assert strip(ta) == strip(tb)


def test_shared_error_classes_exist_in_both_tools_with_different_wording() -> None:
    for kind in SHARED_ERROR_CLASSES:
        assert kind in gridtool.MESSAGES and kind in fluxtool.MESSAGES
        assert gridtool.MESSAGES[kind] != fluxtool.MESSAGES[kind]
    grid, flux = GridToolEnv(), FluxToolEnv()
    grid.reset("g01")
    flux.reset("f01")
    # The same conventional mistake is an error in both tools, with each tool's own words.
    for g_action, f_action in [
        ("LOAD people | filter age > 3", "from users -> filter age > 3"),
        ("LOAD people | SORT age desc", "from users -> sort age desc"),
        ("LOAD people | KEEP city == 'Oslo'", 'from users -> only plan == "pro"'),
    ]:
        g, f = grid.step(g_action)[1], flux.step(f_action)[1]
        assert g.hard_failure and f.hard_failure and g.error_text != f.error_text


@pytest.mark.parametrize("cls", ENVS)
@pytest.mark.parametrize("action", ["", "\n\t ", "z" * 1_048_576, "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "\ufffd\ufffd"])
def test_bad_actions_are_clean_hard_failures(cls: type[PipelineEnv], action: str) -> None:
    env = cls()
    env.reset(env.tasks()[0].task_id)
    obs, fb = env.step(action)
    assert fb.hard_failure and fb.error_text and len(obs) < 1000


@pytest.mark.parametrize("cls", ENVS)
def test_bytes_and_non_text_actions_do_not_crash(cls: type[PipelineEnv]) -> None:
    env = cls()
    env.reset(env.tasks()[0].task_id)
    assert env.step(b"\x00\xff\xfe binary")[1].hard_failure  # type: ignore[arg-type]
    assert env.step(None)[1].hard_failure  # type: ignore[arg-type]


# --------------------------------------------------------------------------- protocol and docs


@pytest.mark.parametrize("cls", ENVS)
def test_env_errors_for_misuse(cls: type[PipelineEnv]) -> None:
    env = cls()
    with pytest.raises(EnvError):
        env.step("anything")
    with pytest.raises(EnvError):
        env.evaluate()
    with pytest.raises(EnvError, match="no-such-task"):
        env.reset("no-such-task")
    obs = env.reset(env.tasks()[0].task_id)
    assert env.tasks()[0].goal in obs


@pytest.mark.parametrize("cls", ENVS)
def test_docs_sections_carry_usage_lines_for_every_op(cls: type[PipelineEnv]) -> None:
    env = cls()
    whole = env.docs()
    ops = {op["op"] for t in env.tasks() for op in t.context["intent"]}
    for topic in ops | {"pipe", "compare", "quote", "aggregate"}:
        section = env.docs(topic)
        assert section.startswith(f"## {topic}") and section.strip() in whole
        assert f"usage[{topic}]:" in section or "term[" in section
    assert env.docs("SORT ") == env.docs("sort")
    assert "no section" in env.docs("teleport") and "filter" in env.docs("teleport")
    assert len(whole) < 16_000  # fits a Step observation uncut


def test_registry_builds_fresh_envs_that_follow_the_protocol() -> None:
    assert ENV_NAMES == ("gridtool", "fluxtool")
    for name in ENV_NAMES:
        a, b = make_env(name), make_env(f" {name.upper()} ")
        assert isinstance(a, Env) and a is not b and a.name == name
    assert make_env("gridtool").domain == "table-cli" and make_env("fluxtool").domain == "stream-cli"
    with pytest.raises(EnvError, match="gridtool"):
        make_env("sqlite")


def test_messages_fingerprint_by_class_and_tag_alike_across_tools() -> None:
    capture = pytest.importorskip("langmem_plus.capture")
    tags: dict[str, list[list[str]]] = {}
    for cls, _, cases in CASES:
        env = cls()
        env.reset(env.tasks()[0].task_id)
        seen: dict[str, str] = {}
        for kind, action, _ in cases:
            text = env.step(action)[1].error_text
            fp = capture.fingerprint(text)
            assert seen.setdefault(fp, kind) == kind, (kind, seen[fp], fp)  # no two classes collide
            tags.setdefault(kind, []).append(sorted(capture.extract_tags(text)))
    for kind in SHARED_ERROR_CLASSES:
        grid_tags, flux_tags = tags[kind]
        assert grid_tags and grid_tags == flux_tags, (kind, grid_tags, flux_tags)
    env = GridToolEnv()
    env.reset("g01")
    a, b = (env.step(x)[1].error_text for x in ("LOAD people | filter age > 3", "LOAD people | KEEP age > 3 | where x"))
    assert capture.fingerprint(a) == capture.fingerprint(b)  # same cause, other literals
