"""Habits: mistakes real language models make with sqlite3, jq 1.6, git and mawk.

Each habit knows how a model's draft differs from the correct call (`draft`), whether a call
shows the habit (`present`, for counting recurrences), and how the model fixes its call after
reading the error (`recover`), which may first ask for a look-up call (`Lookup`) and then fix
the call from that call's output. Error patterns accept the real message and the same message
with its literals replaced by placeholders (`<num>`, `<str>`), as notes quote errors.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

__all__ = ["HABITS", "Habit", "Lookup", "Recovery", "habits_for"]

# a placeholder a note may put where the error had a literal
_PH = r"<[A-Za-z0-9.]+>"


@dataclass(frozen=True)
class Lookup:
    """A call the model makes before it can fix its call: `tool` with `args`."""

    tool: str
    args: dict[str, str] = field(hash=False)


#: what `Habit.recover` returns: fixed arguments, a look-up to make first, or None (cannot fix)
Recovery = dict[str, str] | Lookup | None


@dataclass(frozen=True)
class Habit:
    """One habit of a model with one tool, living in one argument of the call.

    Attributes:
        name: The habit's name.
        tool: The tool whose calls show it.
        key: The argument the habit lives in (`query`, `filter`, `args`, `program`).
        correct: Regex of the correct form in a correct call (what `draft` replaces).
        to_habit: Replacement (`re` template) that turns the correct form into the habit.
        habitual: Regex of the habit in a call (what `present` finds and `recover` fixes).
        to_correct: Replacement that fixes the habit; `{found}` is what `read` took from the
            look-up's output.
        error: Regex of the error text this habit's recovery understands.
        lookup: The call to make before fixing, when the fix needs to look something up.
        read: Reads the value the fix needs from the look-up's output.
        flags: `re` flags for `correct`, `habitual` and `error`.
    """

    name: str
    tool: str
    key: str
    correct: str
    to_habit: str
    habitual: str
    to_correct: str
    error: str
    lookup: Lookup | None = None
    read: Callable[[str], str | None] | None = None
    flags: int = 0

    def draft(self, correct_args: Mapping[str, str]) -> dict[str, str]:
        """The call a model with this habit writes where `correct_args` is the right call."""
        value = correct_args[self.key]
        drafted = re.sub(self.correct, self.to_habit, value, flags=self.flags | re.DOTALL)
        if drafted == value:
            raise ValueError(f"habit {self.name}: nothing to draft in {value!r}")
        return {**correct_args, self.key: drafted}

    def present(self, tool: str, args: Mapping[str, object]) -> bool:
        """True when a call of `tool` with `args` shows this habit."""
        value = args.get(self.key)
        return tool == self.tool and isinstance(value, str) and bool(
            re.search(self.habitual, value, self.flags | re.DOTALL)
        )

    def recover(
        self, error_text: str, args: Mapping[str, str], lookup: str | None = None
    ) -> Recovery:
        """How the model fixes `args` after `error_text`: fixed args, a Lookup first, or None.

        Args:
            error_text: The tool's error (or the error a note quotes).
            args: The call that failed (or is about to).
            lookup: The output of this habit's look-up call, once it has been made.
        """
        if not re.search(self.error, error_text, self.flags) or not self.present(self.tool, args):
            return None
        found = ""
        if self.lookup is not None:
            if lookup is None:
                return self.lookup
            found = (self.read(lookup) if self.read else None) or ""
            if not found:
                return None
        template = self.to_correct.replace("{found}", found.replace("\\", "\\\\"))
        fixed = re.sub(self.habitual, template, args[self.key], flags=self.flags | re.DOTALL)
        return None if fixed == args[self.key] else {**args, self.key: fixed}


def _current_branch(git_branch_output: str) -> str | None:
    for line in git_branch_output.splitlines():
        if line.startswith("* ") and not line[2:].startswith("("):
            return line[2:].strip() or None
    return None


_LIST = (
    Habit(
        name="sql_top", tool="run_sql", key="query",
        correct=r"^(\s*)SELECT\s+(.*?)\s+LIMIT\s+(\d+)\s*(;?)\s*$",
        to_habit=r"\1SELECT TOP \3 \2\4",
        habitual=r"^(\s*)SELECT\s+TOP\s*\(?\s*(\d+)\s*\)?\s+(.*?)\s*(;?)\s*$",
        to_correct=r"\1SELECT \3 LIMIT \2\4",
        error=rf'near\s+(?:"(?:\d+|TOP|{_PH})"|{_PH}|\d+)\s*:\s*syntax error',
        flags=re.IGNORECASE,
    ),
    Habit(
        name="sql_ilike", tool="run_sql", key="query",
        correct=r"(?<![\w])LIKE(?![\w])", to_habit="ILIKE",
        habitual=r"(?<![\w])ILIKE(?![\w])", to_correct="LIKE",
        error=rf'near\s+(?:"(?:ILIKE|{_PH})"|{_PH}|ILIKE)\s*:\s*syntax error',
        flags=re.IGNORECASE,
    ),
    Habit(
        name="sql_len", tool="run_sql", key="query",
        correct=r"(?<![\w])LENGTH\s*\(", to_habit="LEN(",
        habitual=r"(?<![\w])LEN\s*\(", to_correct="LENGTH(",
        error=rf"no such function:\s*(?:LEN|{_PH})(?![\w])",
        flags=re.IGNORECASE,
    ),
    Habit(
        name="jq_dot_index", tool="jq", key="filter",
        correct=r"(?<=[\w\]])\[", to_habit=".[",
        habitual=r"(?<=[\w\]])\.\[", to_correct="[",
        error=rf"syntax error, unexpected\s+(?:'\['|\"\[\"|{_PH}|\[)",
    ),
    Habit(
        name="jq_sum", tool="jq", key="filter",
        correct=r"\|\s*add(?![\w])", to_habit="| sum",
        habitual=r"\|\s*sum(?![\w])", to_correct="| add",
        error=rf"(?:sum|{_PH})/(?:0|{_PH}) is not defined",
    ),
    Habit(
        name="jq_to_string", tool="jq", key="filter",
        correct=r"(?<![\w])tostring(?![\w])", to_habit="to_string",
        habitual=r"(?<![\w])to_string(?![\w])", to_correct="tostring",
        error=rf"(?:to_string|{_PH})/(?:0|{_PH}) is not defined",
    ),
    Habit(
        name="git_master", tool="git", key="args",
        correct=r"(?<![\w-])main(?![\w-])", to_habit="master",
        habitual=r"(?<![\w-])master(?![\w-])", to_correct="{found}",
        error=rf"ambiguous argument\s+(?:'[^']*master[^']*'|\"[^\"]*master[^\"]*\"|{_PH})"
              rf"|unknown revision",
        lookup=Lookup("git", {"args": "branch"}), read=_current_branch,
    ),
    Habit(
        name="git_names_only", tool="git", key="args",
        correct=r"(?<![\w-])--name-only(?![\w-])", to_habit="--names-only",
        habitual=r"(?<![\w-])--names-only(?![\w-])", to_correct="--name-only",
        error=rf"usage: git \w+|unrecognized argument:\s*(?:--names-only|{_PH})|unknown option",
    ),
    Habit(
        name="awk_gensub", tool="awk", key="program",
        correct=r"gsub\((/(?:[^/\\]|\\.)*/),\s*(\"[^\"]*\"),\s*\$(\d+)\);\s*print\s+\$\3(?!\d)",
        to_habit=r'print gensub(\1, \2, "g", $\3)',
        habitual=r"print\s+gensub\s*\(\s*(/(?:[^/\\]|\\.)*/|\"[^\"]*\")\s*,\s*(\"[^\"]*\")\s*,"
                 r"\s*\"g\"\s*,\s*\$(\d+)\s*\)",
        to_correct=r"gsub(\1, \2, $\3); print $\3",
        error=rf"function\s+(?:gensub|{_PH})\s+never defined",
    ),
)

#: the nine habits by name
HABITS: Mapping[str, Habit] = {h.name: h for h in _LIST}


def habits_for(tool: str) -> list[Habit]:
    """The habits of calls to `tool`, in HABITS order."""
    return [h for h in HABITS.values() if h.tool == tool]
