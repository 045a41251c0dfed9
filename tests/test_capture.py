"""Tests of langmem_plus.capture: fingerprints, tags and failure detection (design.md §3)."""

from __future__ import annotations

import doctest
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from langmem_plus import capture
from langmem_plus.capture import detect as capture_detect
from langmem_plus.capture import fingerprints as capture_fp
from langmem_plus.capture import tags as capture_tags
from langmem_plus._text import stable_hash, stable_id
from langmem_plus.bench.foundation import adversarial_texts
from langmem_plus.capture import (
    TAG_VOCABULARY,
    detect_failure,
    extract_tags,
    failure_text,
    fingerprint,
    fingerprint_id,
)
from langmem_plus.config import DEFAULT_CONFIG, SCAN_CEILING_CHARS, MemoryConfig
from langmem_plus.errors import InvalidNamespace
from langmem_plus.records import Feedback, Step, TaskSpec

ROOT = Path(__file__).resolve().parents[1]
NS = ("acme", "agent-7")
ONE_MB = 1 << 20

# --------------------------------------------------------------------------- literal strategies

# English words after a structural noun are read as structure ("column is ambiguous"),
# so bare identifiers are drawn from names that are not such words; quoted literals
# may be anything a tool would print inside its quotes.
_RESERVED = capture_fp._STOPWORDS


def _is_identifier_like(name: str) -> bool:
    lowered = name.lower()
    return lowered not in _RESERVED and not lowered.endswith(("ed", "ing"))


bare_names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,12}", fullmatch=True).filter(_is_identifier_like)
single_quoted = st.text(
    st.characters(blacklist_characters="'\\\n\r", blacklist_categories=("Cs", "Cc")), max_size=20
)
double_quoted = st.text(
    st.characters(blacklist_characters='"\\\n\r', blacklist_categories=("Cs", "Cc")), max_size=20
)
numbers = st.integers(min_value=0, max_value=10**9)
segments = st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_.\-]{0,9}", fullmatch=True)
paths = st.builds(
    lambda parts, ext: "/" + "/".join(parts) + ext,
    st.lists(segments, min_size=1, max_size=5),
    st.sampled_from(["", ".py", ".csv", ".json", ".txt"]),
)
urls = st.from_regex(
    r"https?://[a-z0-9]{1,10}(\.[a-z]{2,5}){1,2}(:[0-9]{2,5})?(/[A-Za-z0-9_.~\-]{1,8}){0,3}(\?[a-z]=[0-9]{1,3})?",
    fullmatch=True,
)
hex_ids = st.one_of(
    st.from_regex(r"[0-9a-f]{7,40}", fullmatch=True),  # git shas, including all-digit ones
    st.from_regex(r"0x[0-9a-f]{4,16}", fullmatch=True),  # addresses
)
emails = st.from_regex(r"[a-z][a-z0-9.+]{0,8}@[a-z]{1,8}\.(com|org|io)", fullmatch=True)
uuids = st.uuids().map(str)

literal_sets = st.fixed_dictionaries(
    {
        "bare": bare_names,
        "bare2": bare_names,
        "sq": single_quoted,
        "sq2": single_quoted,
        "dq": double_quoted,
        "n": numbers,
        "m": numbers,
        "col": numbers,
        "path": paths,
        "path2": paths,
        "url": urls,
        "hex": hex_ids,
        "email": emails,
        "uuid": uuids,
    }
)

TB = 'Traceback (most recent call last):\n  File "{path}", line {n}, in <module>\n    {bare}({m})\n'

# Each template is one failure cause; its slots are the volatile literals.
TEMPLATES: tuple[str, ...] = (
    "sqlite3.OperationalError: no such column: {bare}",
    "sqlite3.OperationalError: no such table: {bare}",
    'Error: in prepare, near "{dq}": syntax error\n  {bare} {n}\n  ^--- error here',
    "sqlite3.IntegrityError: UNIQUE constraint failed: {bare}.{bare2}",
    TB + "NameError: name '{sq}' is not defined",
    TB + "KeyError: '{sq}'",
    TB + "FileNotFoundError: [Errno 2] No such file or directory: '{path2}'",
    TB + "TypeError: {bare}() takes {n} positional arguments but {m} were given",
    TB + "ZeroDivisionError: division by zero",
    "{path}:{n}:{col}: error: unknown type name '{sq}'",
    "error: unknown command '{sq}' at position {n}",
    "ls: cannot access '{path}': Permission denied",
    "request to {url} timed out after {n} ms",
    "HTTP 429 Too Many Requests: retry after {n} seconds (request {hex})",
    "fatal: ambiguous argument '{sq}': unknown revision or path not in the working tree.",
    'jq: error (at <stdin>:{n}): Cannot index array with "{dq}"',
    "ValueError: invalid literal for int() with base {n}: '{sq}'",
    "constraint violated: expected {n} rows, got {m}",
    "agent stuck at ({n}, {m}): no progress for {col} steps",
    "safety stop: refusing to delete {path}",
    "mail to {email} rejected: mailbox unavailable",
    "object {uuid} not found in bucket '{sq}'",
    "bash: line {n}: {bare}: command not found",
    "git: '{sq}' is not a git command. See 'git --help'.\n\nThe most similar command is\n\t{bare}",
    "usage: tool [-h] [--foo FOO]\ntool: error: unrecognized arguments: --{bare} {bare2}",
    "unknown column {bare} in 'where clause'",
    "segmentation fault at address {hex}",
    "error: unknown function '{sq}'. Did you mean '{sq2}'?",
)


def render(template: str, literals: dict[str, object]) -> str:
    return template.format(**literals)


# --------------------------------------------------------------------------- fingerprint: examples


def test_module_doctests_pass() -> None:
    results = [doctest.testmod(m) for m in (capture, capture_fp, capture_tags, capture_detect)]
    assert sum(r.attempted for r in results) >= 8
    assert sum(r.failed for r in results) == 0


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("no such column: agee", "no such column: <id>"),
        ("sqlite3.OperationalError: no such column: agee", "sqlite3.operationalerror: no such column: <id>"),
        ("unknown column agee in 'field list'", "unknown column <id> in <str>"),
        ("KeyError: 'user_42'", "keyerror: <str>"),
        (
            "timed out after 30s contacting https://api.example.com/v1?x=2",
            "timed out after <n>s contacting <url>",
        ),
        ("cannot open /var/data/x.csv: Permission denied", "cannot open <path>: permission denied"),
        ("src/main.c:12:5: error: expected ';'", "<loc>: error: expected <str>"),
        ("fatal: bad object 3f2a9c1d", "fatal: bad object <n>"),
        ("bash: line 1: frob: command not found", "bash: line <n>: <id>: command not found"),
        ("ERROR: Column 'Age' IS AMBIGUOUS", "error: column <str> is ambiguous"),
        (
            "jq: error: foo/0 is not defined at <top-level>, line 1:",
            "jq: error: <id>/<n> is not defined at <top-level>, line <n>:",
        ),
    ],
)
def test_fingerprint_examples(text: str, expected: str) -> None:
    assert fingerprint(text) == expected


def test_traceback_keeps_only_the_final_exception_line() -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "/app/run.py", line 12, in <module>\n'
        "    main(timeout=5)\n"
        "    ^^^^^^^^^^^^^^^\n"
        '  File "/app/lib.py", line 40, in main\n'
        "    return table[key]\n"
        "           ~~~~~^^^^^\n"
        "KeyError: 'agee'\n"
    )
    assert fingerprint(text) == "keyerror: <str>"
    # The echoed source mentions a timeout; the failure does not.
    assert "timeout" not in extract_tags(text)


def test_chained_traceback_uses_the_last_exception() -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "a.py", line 1, in <module>\n'
        "KeyError: 'x'\n\n"
        "During handling of the above exception, another exception occurred:\n\n"
        "Traceback (most recent call last):\n"
        '  File "a.py", line 3, in <module>\n'
        "ValueError: bad value 7\n"
    )
    assert fingerprint(text) == "valueerror: bad value <n>"


def test_markers_echo_usage_and_suggestions_are_dropped() -> None:
    caret = 'Error: near "selec": syntax error\n  selec * from t\n  ^--- error here\n'
    assert fingerprint(caret) == "error: near <str>: syntax error"
    # The echoed input reads like an error line; the caret under it gives it away.
    echoed = 'Error: near "frm": syntax error\n  select error_count frm logs\n                     ^--- error here\n'
    assert fingerprint(echoed) == "error: near <str>: syntax error"
    usage = (
        "usage: tool [-h] [--on-error MODE]\n            [--fail-fast]\n"
        "tool: error: argument --foo: expected one argument"
    )
    assert fingerprint(usage) == "tool: error: argument <flag>: expected one argument"
    mean = "NameError: name 'prnt' is not defined. Did you mean: 'print'?"
    assert fingerprint(mean) == fingerprint("NameError: name 'zz' is not defined")
    git = "git: 'comit' is not a git command. See 'git --help'.\n\nThe most similar command is\n\tcommit\n"
    assert fingerprint(git) == "git: <str> is not a git command. see <str>."
    echo = "kep age > 3\nerror: unknown verb"
    assert fingerprint(echo, action="kep age > 3") == "error: unknown verb"


def test_lists_of_literals_collapse_to_one_placeholder() -> None:
    one = "TypeError: f() missing 1 required positional argument: 'a'"
    two = "TypeError: g() missing 2 required positional arguments: 'a' and 'b'"
    assert (
        fingerprint(one)
        == fingerprint(two)
        == "typeerror: <id>() missing <n> required positional argument: <str>"
    )
    assert fingerprint("bad values: 1, 2, 3") == fingerprint("bad values: 7") == "bad values: <n>"


def test_output_without_error_words_keeps_its_tail() -> None:
    out = "\n".join(f"row {i}" for i in range(50))
    assert fingerprint(out) == "row <n>"


def test_structural_words_and_exception_type_are_kept() -> None:
    fp = fingerprint("SyntaxError: invalid syntax; expected ')' but missing, not found, cannot parse")
    for word in ("syntaxerror", "invalid", "syntax", "expected", "missing", "not found", "cannot"):
        assert word in fp


def test_fingerprint_id_is_a_short_stable_hash() -> None:
    fp = fingerprint("no such column: agee")
    assert fingerprint_id(fp) == stable_hash(fp, length=12)
    assert len(fingerprint_id(fp)) == 12
    assert fingerprint_id(fp) != fingerprint_id(fingerprint("no such table: agee"))


# --------------------------------------------------------------------------- fingerprint: properties


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(template=st.sampled_from(TEMPLATES), a=literal_sets, b=literal_sets)
def test_same_cause_with_different_literals_shares_a_fingerprint(
    template: str, a: dict[str, object], b: dict[str, object]
) -> None:
    assert fingerprint(render(template, a)) == fingerprint(render(template, b))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(a=literal_sets, b=literal_sets)
def test_distinct_templates_stay_distinct(a: dict[str, object], b: dict[str, object]) -> None:
    assert len(TEMPLATES) >= 15
    # Neighbouring templates get different literals, so no pair can agree by sharing them.
    fps = [fingerprint(render(t, a if i % 2 else b)) for i, t in enumerate(TEMPLATES)]
    assert len(set(fps)) == len(fps), [fp for fp in fps if fps.count(fp) > 1]


def test_fingerprints_are_identical_across_processes() -> None:
    corpus = [
        render(
            t,
            {
                "bare": "agee",
                "bare2": "name",
                "sq": "x y",
                "sq2": "X Y",
                "dq": "selec",
                "n": 3,
                "m": 12,
                "col": 7,
                "path": "/tmp/a.py",
                "path2": "/srv/b.csv",
                "url": "https://a.io/x",
                "hex": "3f2a9c1",
                "email": "a@b.io",
                "uuid": "550e8400-e29b-41d4-a716-446655440000",
            },
        )
        for t in TEMPLATES
    ] + ["", "   "]
    script = (
        "import json, sys\n"
        "from langmem_plus.capture import fingerprint, fingerprint_id, extract_tags\n"
        "corpus = json.load(sys.stdin)\n"
        "fps = [fingerprint(t, action='go north', state_before={'room': 'hall', 'hp': 3},"
        " failure_reason='stuck') for t in corpus]\n"
        "print(json.dumps([fps, [fingerprint_id(f) for f in fps], [extract_tags(t) for t in corpus]]))\n"
    )
    results = []
    for seed in ("0", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(ROOT)}
        proc = subprocess.run(
            [sys.executable, "-c", script],
            input=json.dumps(corpus),
            capture_output=True,
            text=True,
            env=env,
            cwd=ROOT,
            timeout=60,
            check=True,
        )
        results.append(json.loads(proc.stdout))
    assert results[0] == results[1]
    local = [
        fingerprint(t, action="go north", state_before={"room": "hall", "hp": 3}, failure_reason="stuck")
        for t in corpus
    ]
    assert results[0][0] == local
    assert len(set(local)) == len(TEMPLATES) + 1  # the two blank texts share the transition


# --------------------------------------------------------------------------- fingerprint: bad input


def test_empty_and_blank_text_fingerprint_the_transition() -> None:
    assert fingerprint("") == fingerprint("  \n\t ") == fingerprint(None)
    assert fingerprint("").startswith("transition |")


@pytest.fixture
def scanned(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Lengths of the texts capture's patterns run over (what ``clean_text`` hands them)."""
    lengths: list[int] = []
    real = capture_fp.clean_text

    def recording(value: Any, max_chars: int | None = None) -> str:
        out = real(value, max_chars)
        lengths.append(len(out))
        return out

    for module in (capture_fp, capture_tags, capture_detect):
        monkeypatch.setattr(module, "clean_text", recording)
    return lengths


@pytest.mark.parametrize("name", sorted(adversarial_texts(64)))
def test_one_megabyte_inputs_are_scanned_in_a_bounded_window(name: str, scanned: list[int]) -> None:
    """The patterns see at most ``error_text_scan_chars`` of a 1 MB text, so their cost is bounded.

    (The time they take on such texts is a figure of ``langmem-plus bench foundation``.)
    """
    payload = adversarial_texts(ONE_MB)[name]
    fp = fingerprint(payload)
    tags = extract_tags(payload)
    assert scanned and max(scanned) <= DEFAULT_CONFIG.capture.error_text_scan_chars
    assert fp == fingerprint(payload)
    assert len(fp) <= capture_fp.FINGERPRINT_MAX_CHARS
    assert set(tags) <= set(TAG_VOCABULARY)


def test_binary_and_non_utf8_bytes_are_accepted() -> None:
    blob = random.Random(0).randbytes(ONE_MB)
    fp = fingerprint(blob)
    assert fp == fingerprint(blob)
    latin = "error: fichier introuvable: caf\xe9".encode("latin-1")
    assert fingerprint(latin) == "error: fichier introuvable: caf\ufffd"
    assert fingerprint(bytearray(b"\x00\x01KeyError: 'k'\x00")) == "keyerror: <str>"


def test_a_huge_text_fingerprints_like_its_stored_cut() -> None:
    raw = "noise line\n" * 200_000 + "sqlite3.OperationalError: no such column: agee\n"
    stored = Feedback(hard_failure=True, error_text=raw).error_text
    assert len(stored) <= SCAN_CEILING_CHARS  # a record keeps at most the ceiling; capture reads its config's window
    assert fingerprint(raw) == fingerprint(stored) == "sqlite3.operationalerror: no such column: <id>"


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=400), st.binary(max_size=400)), st.one_of(st.none(), st.text(max_size=40)))
def test_never_raises_and_is_deterministic(text: str | bytes, action: str | None) -> None:
    fp = fingerprint(text, action=action)
    assert isinstance(fp, str) and fp
    assert fp == fingerprint(text, action=action)
    tags = extract_tags(text, action)
    assert tags == sorted(set(tags)) and set(tags) <= set(TAG_VOCABULARY)


# --------------------------------------------------------------------------- transition fingerprints


def test_transition_fingerprint_parts() -> None:
    fp = fingerprint(
        "",
        action="Go north quickly",
        state_before={"room": "hall", "hp": 3},
        state_after={"room": "hall", "hp": 2},
        failure_reason="stuck",
    )
    assert (
        fp
        == "transition | before: {hp=<n>, room=hall} | action: go | after: {hp=<n>, room=hall} | reason: stuck"
    )


def test_transition_ignores_key_order_literals_and_action_arguments() -> None:
    a = fingerprint(
        "",
        action="move 3 4",
        state_before={"x": 1, "room": "lab"},
        state_after={"room": "lab"},
        failure_reason="no_progress",
    )
    b = fingerprint(
        " ",
        action="move 9 1",
        state_before={"room": "lab", "x": 7},
        state_after={"room": "lab"},
        failure_reason="no_progress",
    )
    assert a == b


def test_transitions_with_different_parts_differ() -> None:
    base = {
        "action": "open door",
        "state_before": {"room": "hall"},
        "state_after": {"room": "hall"},
        "failure_reason": "stuck",
    }
    variants = [
        {**base},
        {**base, "action": "close door"},
        {**base, "state_before": {"room": "lab"}},
        {**base, "state_after": {"room": "lab"}},
        {**base, "failure_reason": "unsafe"},
        {**base, "state_before": None},
    ]
    fps = [fingerprint("", **v) for v in variants]  # type: ignore[arg-type]
    assert len(set(fps)) == len(fps)


def test_transition_survives_odd_state_values() -> None:
    class Hostile:
        def __str__(self) -> str:
            raise RuntimeError("no")

    nested: dict[str, object] = {"a": {"b": {"c": {"d": {"e": 1}}}}, "s": {3, 1}, "h": Hostile(), "n": None}
    fp = fingerprint("", action=None, state_before=nested, state_after={"big": list(range(10_000))})
    assert fp == fingerprint("", action=None, state_before=nested, state_after={"big": list(range(10_000))})
    assert "..." in fp and "<hostile>" in fp


# --------------------------------------------------------------------------- tags

TAG_EXAMPLES: list[tuple[str, str]] = [
    ("syntax_structure", 'Error: near "selec": syntax error'),
    ("syntax_structure", "SyntaxError: '(' was never closed"),
    ("unknown_symbol", "NameError: name 'foo' is not defined"),
    ("unknown_symbol", "AttributeError: 'list' object has no attribute 'push'"),
    ("unknown_command", "error: unknown command 'sort'"),
    ("unknown_command", "git: 'comit' is not a git command. See 'git --help'."),
    ("path_quote", "FileNotFoundError: [Errno 2] No such file or directory: 'data/x.csv'"),
    ("path_quote", "bash: -c: line 1: unexpected EOF while looking for matching `\"'"),
    ("operator_mismatch", 'Error: near "==": syntax error'),
    ("operator_mismatch", "TypeError: '<' not supported between instances of 'str' and 'int'"),
    ("arity_mismatch", "TypeError: f() takes 2 positional arguments but 3 were given"),
    ("arity_mismatch", "table people has 2 columns but 1 values were supplied"),
    ("column_reference", "sqlite3.OperationalError: no such column: agee"),
    ("column_reference", "error: unknown column 'agee'"),
    ("function_case", "error: unknown function 'Count'. Did you mean 'count'?"),
    ("function_case", "function names are case-sensitive"),
    ("sort_direction", "error: invalid sort direction 'downward'"),
    ("sort_direction", 'Error: near "desc": syntax error'),
    ("type_mismatch", "jq: error (at <stdin>:1): Cannot index number with number"),
    ("type_mismatch", "ValueError: invalid literal for int() with base 10: 'abc'"),
    ("not_found", "fatal: ambiguous argument 'x': unknown revision or path not in the working tree."),
    ("not_found", "error: object not found"),
    ("permission", "ls: cannot open directory '/root': Permission denied"),
    ("permission", "HTTP 403 Forbidden"),
    ("timeout", "request timed out after 30 s"),
    ("timeout", "TimeoutError: deadline exceeded"),
    ("rate_limit", "HTTP 429 Too Many Requests"),
    ("rate_limit", "openai.RateLimitError: rate limit reached, retry after 20s"),
    ("no_progress", "no_progress for 3 steps"),
    ("constraint_failed", "UNIQUE constraint failed: people.name"),
    ("constraint_failed", "AssertionError: expected 3 rows"),
    ("state_stall", "agent is stuck: same state after move"),
    ("unsafe_action", "safety stop: refusing to delete protected branch"),
    ("goal_distance_increase", "moved away from the target: distance increased to 7"),
]


def test_vocabulary_is_the_design_vocabulary() -> None:
    assert TAG_VOCABULARY == (
        "syntax_structure",
        "unknown_symbol",
        "unknown_command",
        "path_quote",
        "operator_mismatch",
        "arity_mismatch",
        "column_reference",
        "function_case",
        "sort_direction",
        "type_mismatch",
        "not_found",
        "permission",
        "timeout",
        "rate_limit",
        "no_progress",
        "constraint_failed",
        "state_stall",
        "unsafe_action",
        "goal_distance_increase",
    )
    assert {tag for tag, _ in TAG_EXAMPLES} == set(TAG_VOCABULARY)


@pytest.mark.parametrize(("tag", "text"), TAG_EXAMPLES)
def test_each_tag_has_a_positive_example(tag: str, text: str) -> None:
    tags = extract_tags(text)
    assert tag in tags
    assert tags == sorted(set(tags))


def test_unknown_command_and_unknown_column_get_different_tags() -> None:
    command = extract_tags("error: unknown command 'sort'")
    column = extract_tags("error: unknown column 'sort'")
    assert "unknown_command" in command and "column_reference" not in command
    assert "column_reference" in column and "unknown_command" not in column


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ZeroDivisionError: division by zero", []),
        ("sqlite3.OperationalError: no such column: agee", ["column_reference", "not_found"]),
        ("error: unknown command 'sort'", ["unknown_command"]),
        ("TypeError: f() missing 1 required positional argument: 'b'", ["arity_mismatch"]),
    ],
)
def test_tags_are_specific(text: str, expected: list[str]) -> None:
    assert extract_tags(text) == expected


def test_tags_from_action_shape_and_context() -> None:
    assert "path_quote" in extract_tags("syntax error", action='cat "my file.txt')
    assert "path_quote" not in extract_tags("syntax error", action='cat "my file.txt"')
    assert "path_quote" not in extract_tags("syntax error", action="it's fine")
    assert extract_tags("", context={"channel": "no_progress", "progress_delta": -0.2}) == [
        "goal_distance_increase",
        "no_progress",
    ]
    assert extract_tags("", context={"channel": "constraint"}) == ["constraint_failed"]
    assert extract_tags("", context={"repeated": True, "unsafe": True}) == ["state_stall", "unsafe_action"]
    assert extract_tags("", context={"tags": ["timeout", "made_up"]}) == ["timeout"]
    assert extract_tags("", context={"progress_delta": "garbage", "channel": object()}) == []
    assert extract_tags("") == []


def test_tags_read_the_command_structure_not_its_name() -> None:
    # The same failure structure under different tool names gives the same tags.
    assert extract_tags("gridtool: unknown command 'srt'") == extract_tags("fluxtool: unknown command 'ordr'")


# --------------------------------------------------------------------------- detect_failure


def mk(
    index: int,
    action: str = "keep x",
    *,
    progress: float | None = None,
    hard: bool = False,
    constraint: bool = False,
    error: str = "",
    observation: str = "",
    state_after: dict[str, Any] | None = None,
    info: dict[str, Any] | None = None,
    reward: float = 0.0,
    tool: str | None = None,
) -> Step:
    fb = Feedback(
        hard_failure=hard, constraint_failure=constraint, progress=progress, error_text=error, reward=reward
    )
    return Step(
        index=index,
        action=action,
        observation=observation,
        feedback=fb,
        tool=tool,
        state_after=state_after,
        info=info or {},
    )


def run(steps: list[Step], config: MemoryConfig = DEFAULT_CONFIG) -> list[tuple[int, str]]:
    """(index, channel) of every event detect_failure emits over a run."""
    out: list[tuple[int, str]] = []
    for i, step in enumerate(steps):
        ev = detect_failure(step, steps[:i], namespace=NS, run_id="run-1", config=config, now=1.0)
        if ev is not None:
            out.append((step.index, ev.channel))
    return out


def test_hard_failure_event_fields() -> None:
    task = TaskSpec(task_id="t-1", goal="filter rows", tool="gridtool", domain="table-cli")
    step = mk(4, "keep agee > 3", hard=True, error="error: unknown column 'agee'")
    ev = detect_failure(step, [], namespace=NS, run_id="run-1", task=task, now=123.0)
    assert ev is not None
    assert ev.channel == "hard"
    assert ev.fingerprint == "error: unknown column <str>"
    assert ev.fingerprint_id == fingerprint_id(ev.fingerprint)
    assert ev.id == stable_id("ev", "acme", "agent-7", "run-1", "4", ev.fingerprint_id)
    assert ev.tags == ["column_reference"]
    assert (ev.tool, ev.domain, ev.task, ev.ts, ev.step, ev.namespace) == (
        "gridtool",
        "table-cli",
        "t-1",
        123.0,
        4,
        NS,
    )
    assert ev.action == "keep agee > 3"
    again = detect_failure(step, [], namespace=NS, run_id="run-1", task=task, now=999.0)
    assert again is not None and again.id == ev.id


def test_step_tool_wins_and_clock_is_used_without_now() -> None:
    task = TaskSpec(task_id="t-1", goal="g", tool="gridtool")
    before = time.time()
    ev = detect_failure(
        mk(0, hard=True, error="boom failed", tool="fluxtool"), [], namespace=NS, run_id="r", task=task
    )
    assert ev is not None and ev.tool == "fluxtool" and ev.ts >= before


def test_error_text_is_cut_on_the_event() -> None:
    ev = detect_failure(mk(0, hard=True, error="error: " + "x" * 10_000), [], namespace=NS, run_id="r")
    assert ev is not None
    assert len(ev.error_text) <= DEFAULT_CONFIG.capture.error_text_max_chars


def test_constraint_failure_is_tagged() -> None:
    ev = detect_failure(
        mk(0, constraint=True, observation="expected 3 rows, got 5"), [], namespace=NS, run_id="r", now=0.0
    )
    assert ev is not None
    assert ev.channel == "constraint"
    assert "constraint_failed" in ev.tags
    assert ev.fingerprint == "expected <n> row, got <n>"  # plural follows the count


def test_hard_failure_without_any_text_fingerprints_the_transition() -> None:
    ev = detect_failure(mk(0, "press red button", hard=True), [], namespace=NS, run_id="r", now=0.0)
    assert ev is not None
    assert ev.fingerprint == "transition | before: - | action: press | after: - | reason: hard_failure"


def test_docs_step_is_never_a_failure() -> None:
    docs = mk(0, "docs sort", hard=True, error="error: whatever", info={"kind": "docs"})
    assert detect_failure(docs, [], namespace=NS, run_id="r") is None


def test_stall_emits_once_at_each_threshold() -> None:
    steps = [mk(i, f"try {i}", progress=0.0) for i in range(7)]
    assert run(steps[:5]) == [(2, "no_progress")]
    assert run(steps) == [(2, "no_progress"), (5, "no_progress")]
    assert run(steps, MemoryConfig(capture={"stall_steps": 4})) == [(3, "no_progress")]


def test_stall_event_fingerprints_the_transition() -> None:
    steps = [mk(i, f"try {i}", progress=0.0) for i in range(3)]
    ev = detect_failure(steps[2], steps[:2], namespace=NS, run_id="r", now=0.0)
    assert ev is not None
    assert ev.fingerprint == "transition | before: - | action: try | after: - | reason: no_progress"
    assert ev.tags == ["no_progress"]
    assert ev.error_text == ""


def test_progress_resets_the_stall() -> None:
    rising = [mk(i, f"try {i}", progress=p) for i, p in enumerate([0.1, 0.2, 0.3, 0.4, 0.5])]
    assert run(rising) == []
    plateau = [mk(i, f"try {i}", progress=p) for i, p in enumerate([0.1, 0.2, 0.2, 0.2, 0.2])]
    assert run(plateau) == [(4, "no_progress")]
    # Unknown progress counts as a stall unless the step is rewarded.
    rewarded = [mk(i, f"try {i}", reward=1.0 if i == 2 else 0.0) for i in range(5)]
    assert run(rewarded) == []
    unknown = [mk(i, f"try {i}") for i in range(3)]
    assert run(unknown) == [(2, "no_progress")]


def test_falling_progress_is_tagged_goal_distance_increase() -> None:
    steps = [mk(0, "a", progress=0.5), mk(1, "b", progress=0.4), mk(2, "c", progress=0.3)]
    ev = detect_failure(
        steps[2], steps[:2], namespace=NS, run_id="r", now=0.0, config=MemoryConfig(capture={"stall_steps": 2})
    )
    assert ev is not None and ev.tags == ["goal_distance_increase", "no_progress"]


def test_docs_steps_do_not_count_toward_a_stall() -> None:
    steps = [
        mk(0, "a", progress=0.0),
        mk(1, "docs", info={"kind": "docs"}),
        mk(2, "b", progress=0.0),
        mk(3, "c", progress=0.0),
    ]
    assert run(steps) == [(3, "no_progress")]


def test_repeating_an_action_into_the_same_state_is_a_state_stall() -> None:
    hall = {"room": "hall"}
    steps = [mk(0, "go north", state_after=hall), mk(1, "go  north", state_after=hall)]
    ev = detect_failure(steps[1], steps[:1], namespace=NS, run_id="r", now=0.0)
    assert ev is not None
    assert ev.channel == "no_progress"
    assert "state_stall" in ev.tags
    assert ev.fingerprint.endswith("reason: state_stall")
    # A different resulting state, or progress, is not a stall.
    moved = mk(1, "go north", state_after={"room": "lab"})
    assert detect_failure(moved, steps[:1], namespace=NS, run_id="r") is None
    advanced = mk(1, "go north", state_after=hall, progress=0.3)
    assert detect_failure(advanced, steps[:1], namespace=NS, run_id="r") is None


def test_repeat_only_counts_inside_the_window() -> None:
    cfg_far = MemoryConfig(capture={"stall_steps": 10, "repeat_window": 2})
    cfg_near = MemoryConfig(capture={"stall_steps": 10, "repeat_window": 5})
    s = {"room": "hall"}
    steps = [
        mk(0, "go north", state_after=s),
        mk(1, "look", state_after={"room": "x"}),
        mk(2, "wait", state_after={"room": "y"}),
        mk(3, "go north", state_after=s),
    ]
    assert detect_failure(steps[3], steps[:3], namespace=NS, run_id="r", config=cfg_far) is None
    ev = detect_failure(steps[3], steps[:3], namespace=NS, run_id="r", config=cfg_near)
    assert ev is not None and "state_stall" in ev.tags


def test_history_may_include_the_step_itself() -> None:
    steps = [mk(i, f"try {i}", progress=0.0) for i in range(3)]
    ev = detect_failure(steps[2], steps, namespace=NS, run_id="r", now=0.0)
    assert ev is not None and ev.step == 2
    assert detect_failure(steps[1], steps, namespace=NS, run_id="r") is None


def test_bad_namespace_raises() -> None:
    with pytest.raises(InvalidNamespace):
        detect_failure(mk(0, hard=True, error="x failed"), [], namespace=(), run_id="r")


def test_failure_text() -> None:
    assert failure_text(mk(0, error="E1", observation="obs", hard=True)) == "E1"
    assert failure_text(mk(0, observation="obs", hard=True)) == "obs"
    assert failure_text(mk(0, observation="obs", constraint=True)) == "obs"
    assert failure_text(mk(0, observation="obs")) == ""
