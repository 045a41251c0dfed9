"""Question templates: how a user asks, and the correct call that answers, for each tool.

Questions are rendered from these templates and the scripted model parses a question back
into its template and literals, so both sides share this one table. Every literal a correct
call needs is written in the question's text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

__all__ = ["TEMPLATES", "Template", "parse_question"]

_NAME = r"[A-Za-z_][A-Za-z0-9_-]*"
_SLOTS: dict[str, str] = {
    **dict.fromkeys(("table", "label", "text", "num", "key", "field", "branch"), _NAME),
    "file": r"[A-Za-z0-9_-]+\.(?:json|txt)",
    **dict.fromkeys(("n", "i", "len", "above", "col", "dcol", "ncol"), r"-?\d+"),
    **dict.fromkeys(("prefix", "infix", "a", "b"), r"[^'\s]+"),
}
_FIELD = re.compile(r"\{([a-z]+)\}")

Call = Callable[[Mapping[str, str]], dict[str, str]]


@dataclass(frozen=True)
class Template:
    """A question template: its text with `{slot}` fields and the correct call it asks for."""

    id: str
    tool: str
    habit: str | None
    text: str
    call: Call = field(compare=False, repr=False)

    @property
    def slots(self) -> tuple[str, ...]:
        """The slots the text names, each once, in order."""
        return tuple(dict.fromkeys(_FIELD.findall(self.text)))

    def render(self, literals: Mapping[str, str]) -> str:
        """The question's text with `literals` filled in."""
        return _FIELD.sub(lambda m: literals[m.group(1)], self.text)

    def pattern(self) -> re.Pattern[str]:
        """A regex that matches this template's questions and captures their literals."""
        parts: list[str] = []
        seen: set[str] = set()
        pos = 0
        for m in _FIELD.finditer(self.text):
            parts.append(re.escape(self.text[pos:m.start()]))
            slot = m.group(1)
            parts.append(f"(?P={slot})" if slot in seen else f"(?P<{slot}>{_SLOTS[slot]})")
            seen.add(slot)
            pos = m.end()
        parts.append(re.escape(self.text[pos:]))
        return re.compile("".join(parts).replace(r"\ ", r"\s+"), re.IGNORECASE)

    def parse(self, text: str) -> dict[str, str] | None:
        """The literals of `text` when it is a question of this template, else None."""
        m = self.pattern().fullmatch(" ".join(text.split()))
        return dict(m.groupdict()) if m else None


def _sql(query: str) -> Call:
    return lambda v: {"query": query.format(**v)}


def _jq(filt: str) -> Call:
    return lambda v: {"filter": filt.format(**v), "file": v["file"]}


def _git(args: str) -> Call:
    return lambda v: {"args": args.format(**v)}


def _awk(program: str) -> Call:
    return lambda v: {"program": program.format(**v), "file": v["file"]}


T = Template
TEMPLATES: tuple[Template, ...] = (
    # ---------------------------------------------------------------- run_sql (sqlite3)
    T("sql_top_highest", "run_sql", "sql_top",
      "Which {n} rows of the {table} table have the highest {num}? Show {label} and {num}.",
      _sql("SELECT {label}, {num} FROM {table} ORDER BY {num} DESC, id LIMIT {n}")),
    T("sql_top_alpha", "run_sql", "sql_top",
      "List the first {n} {label} values of the {table} table in alphabetical order.",
      _sql("SELECT {label} FROM {table} ORDER BY {label} LIMIT {n}")),
    T("sql_ilike_prefix", "run_sql", "sql_ilike",
      "Which {label} values in the {table} table start with '{prefix}', ignoring case?",
      _sql("SELECT {label} FROM {table} WHERE {label} LIKE '{prefix}%' ORDER BY {label}")),
    T("sql_ilike_count", "run_sql", "sql_ilike",
      "How many rows of the {table} table have a {text} containing '{infix}' in any case?",
      _sql("SELECT COUNT(*) FROM {table} WHERE {text} LIKE '%{infix}%'")),
    T("sql_len_longest", "run_sql", "sql_len",
      "What is the longest {label} in the {table} table, and how many characters does it have?",
      _sql("SELECT {label}, LENGTH({label}) FROM {table} ORDER BY LENGTH({label}) DESC, "
           "{label} LIMIT 1")),
    T("sql_len_longer", "run_sql", "sql_len",
      "Which {label} values in the {table} table are longer than {len} characters?",
      _sql("SELECT {label} FROM {table} WHERE LENGTH({label}) > {len} ORDER BY {label}")),
    T("sql_avg", "run_sql", None,
      "What is the average {num} in the {table} table?",
      _sql("SELECT AVG({num}) FROM {table}")),
    T("sql_group", "run_sql", None,
      "How many rows does the {table} table have for each {text}?",
      _sql("SELECT {text}, COUNT(*) FROM {table} GROUP BY {text} ORDER BY {text}")),
    # ---------------------------------------------------------------- jq (1.6)
    T("jq_item_field", "jq", "jq_dot_index",
      "In {file}, what is the {field} of entry {i} (counting from 0) of the {key} list?",
      _jq(".{key}[{i}].{field}")),
    T("jq_first_n", "jq", "jq_dot_index",
      "Show the first {n} entries of the {key} list in {file}.",
      _jq(".{key}[:{n}]")),
    T("jq_total", "jq", "jq_sum",
      "What is the total {num} over all the {key} in {file}?",
      _jq("[.{key}[].{num}] | add")),
    T("jq_total_above", "jq", "jq_sum",
      "In {file}, what is the total {num} of the {key} whose {num} is above {above}?",
      _jq("[.{key}[] | select(.{num} > {above}) | .{num}] | add")),
    T("jq_pairs", "jq", "jq_to_string",
      "In {file}, turn each of the {key} into a '{label}: {num}' string.",
      _jq('.{key}[] | .{label} + ": " + (.{num} | tostring)')),
    T("jq_join", "jq", "jq_to_string",
      "Join the {num} values of the {key} in {file} into one comma-separated string.",
      _jq('[.{key}[].{num} | tostring] | join(",")')),
    T("jq_count", "jq", None,
      "How many entries does the {key} list in {file} have?",
      _jq(".{key} | length")),
    T("jq_names", "jq", None,
      "List the {label} of every entry of the {key} list in {file}.",
      _jq("[.{key}[].{label}]")),
    # ---------------------------------------------------------------- git
    T("git_ahead", "git", "git_master",
      "Which commits are on {branch} but not on the default branch? One line each.",
      _git("log --oneline main..{branch}")),
    T("git_stat", "git", "git_master",
      "Give a diffstat of {branch} against the default branch.",
      _git("diff --stat main...{branch}")),
    T("git_recent", "git", "git_master",
      "Show the last {n} commits of the default branch, one line each.",
      _git("log --oneline -{n} main")),
    T("git_changed", "git", "git_names_only",
      "Which files does {branch} change compared to main? Names only.",
      _git("diff --name-only main...{branch}")),
    T("git_last_files", "git", "git_names_only",
      "Which files did the latest commit on {branch} touch? Just the names.",
      _git("show --name-only --format= {branch}")),
    T("git_subject", "git", None,
      "What is the subject of the latest commit on {branch}?",
      _git("log -1 --format=%s {branch}")),
    T("git_count", "git", None,
      "How many commits does {branch} have in total?",
      _git("rev-list --count {branch}")),
    # ---------------------------------------------------------------- awk (mawk)
    T("awk_replace", "awk", "awk_gensub",
      "In {file}, print column {col} with every '{a}' replaced by '{b}'.",
      _awk('{{ gsub(/{a}/, "{b}", ${col}); print ${col} }}')),
    T("awk_digits", "awk", "awk_gensub",
      "In {file}, print column {dcol} with every digit replaced by '#'.",
      _awk('{{ gsub(/[0-9]/, "#", ${dcol}); print ${dcol} }}')),
    T("awk_sum", "awk", None,
      "What is the sum of column {ncol} in {file}?",
      _awk("{{ s += ${ncol} }} END {{ print s }}")),
    T("awk_filter", "awk", None,
      "Print the lines of {file} whose column {ncol} is greater than {above}.",
      _awk("${ncol} > {above}")),
)
del T

_PATTERNS = [(t, t.pattern()) for t in TEMPLATES]


def parse_question(text: str) -> tuple[Template, dict[str, str]] | None:
    """The template and literals of a question, or None for a question no template asks."""
    flat = " ".join(text.split())
    for template, pattern in _PATTERNS:
        m = pattern.fullmatch(flat)
        if m:
            return template, dict(m.groupdict())
    return None
