"""Action patterns with placeholders, as text rules write them (``cook <X> in oven``), and their matcher.

One reader of the pattern syntax for everything that matches a text rule against the
actions a game offers: ``TextGameExecutor`` when it weighs a hint, and observation-triggered
delivery (``textgames.delivery``) when it decides which rules bear on the current step.
Text is compared after ``norm`` (lowercase words, articles dropped), so ``the red apple``
and ``a red apple`` are one phrase.

Example:
    >>> Pattern.parse("cook <X> in oven").match("Cook the red apple in oven")
    {'X': 'red apple'}
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from functools import lru_cache

from langmem_plus.conditions import (
    AFTER,
    AFTER_WORDS,
    NOT_NAMED_WORDS,
    NOT_SAID_WORDS,
    SAID_SO_WORDS,
    SLOT,
    UNNAMED,
    WHEN_WORDS,
    After,
    Condition,
    NotNamed,
    NotSaid,
)
from langmem_plus.conditions import parse as parse_condition
from langmem_plus.forms import Form, Token, parse_form, tokenize, whole_match

ARTICLES = frozenset({"a", "an", "the", "some"})
"""Dropped when text is normalised, so ``the red apple`` and ``a red apple`` match ``red apple``."""

_WORD = re.compile(r"[a-z0-9]+")
THEN_WORDS = "then"
"""Joins a procedure's steps in a recommendation (``start with `a` then `b` ; `c```, with ``;`` between later steps):
several back-quoted actions joined otherwise (``Prefer `a`, `b```) are a list, each recommended (or avoided) on its
own."""
_STEP_JOIN = re.compile(rf"`\s+(?:{THEN_WORDS}|;)\s+`")
"""Two back-quoted actions joined as steps (``THEN_WORDS`` or ``;``)."""
INSTEAD_WORDS = "instead of"
"""In a recommendation (``Use `keep` instead of `filter```), the back-quoted actions after these words are the ones
it replaces, not recommended."""


def norm_words(text: str) -> list[str]:
    """Lowercase words of ``text`` without articles.

    Example:
        >>> norm_words("Roast the Red Apple!")
        ['roast', 'red', 'apple']
    """
    return [w for w in _WORD.findall(text.lower()) if w not in ARTICLES]


def norm(text: str) -> str:
    """``text`` as one normalised line of words (see ``norm_words``)."""
    return " ".join(norm_words(text))


def command_and_object(action: str) -> tuple[str, str]:
    """An action's first word and the rest, normalised (``norm_words``): ``("slice", "red apple")``."""
    words = norm_words(action)
    return (words[0], " ".join(words[1:])) if words else ("", "")


_CLAUSE_END = re.compile(r"[,.;:!?()\[\]]")


def clauses(text: str) -> list[str]:
    """Normalised clauses of ``text``: its lines cut at punctuation, so that a phrase said about one thing never
    runs into the next (a list "raw pork chop, a block of cheese" does not say "chop block of cheese").

    Example:
        >>> clauses("The fridge contains a raw pork chop, a block of cheese.\\nRoast the apple")
        ['fridge contains raw pork chop', 'block of cheese', 'roast apple']
    """
    return [c for line in text.splitlines() for c in map(norm, _CLAUSE_END.split(line)) if c]


def directing_lines(goal: str, task_lines: Sequence[str]) -> list[str]:
    """Where a task can direct a command: the goal's clauses and the lines of the task's text. A "does not say"
    condition (``!chop <X>``) holds, bound, where ``says_line`` finds it in none of them.

    Example:
        >>> directing_lines("First, focus on the thing.", ["chop the apple"])
        ['first', 'focus on thing', 'chop the apple']
    """
    return [*clauses(goal), *task_lines]


@lru_cache(maxsize=1 << 14)
def action_tokens(action: str) -> tuple[Token, ...]:
    """The tokens of ``action`` normalised (``norm``), as a pattern matches them (cached: a step tries many patterns
    on the same valid actions)."""
    return tokenize(norm(action))


@dataclass(frozen=True)
class Pattern:
    """One action pattern in the lessons' pattern language (``forms``), compiled to match an action whole after
    normalisation: its words literal, each placeholder (``<X>``) a phrase of one or more words."""

    text: str
    form: Form
    slots: tuple[str, ...]

    @classmethod
    def parse(cls, raw: str) -> "Pattern | None":
        """Compile ``raw`` (``cook <X> in oven``); None when it has no words or only placeholders."""
        pieces = [p if SLOT.fullmatch(p) else norm(p) for p in re.split(r"(<[A-Z]>)", raw.strip())]
        form = parse_form(" ".join(p for p in pieces if p))
        if not form.literals:
            return None
        slots = tuple(dict.fromkeys(e.text[1:-1] for e in form.elements if e.kind == "phrase"))
        return cls(raw.strip(), form, slots)

    @property
    def verb(self) -> str | None:
        """The pattern's first word when it is literal (an index key), else None."""
        first = self.text.split()[0]
        return None if SLOT.fullmatch(first) else (norm(first) or None)

    def match(self, action: str) -> dict[str, str] | None:
        """Bindings of the placeholders when ``action`` matches, else None."""
        m = whole_match(self.form, action_tokens(action))
        if m is None:
            return None
        return {s: m.slots[f"<{s}>"].inner for s in self.slots}


@lru_cache(maxsize=8192)
def _condition(cond: str) -> Condition | None:
    """``cond`` parsed (``conditions.parse``), or None for one it cannot read."""
    try:
        return parse_condition(cond)
    except ValueError:
        return None


def unnamed_slot(cond: str) -> str | None:
    """The placeholder of a negative condition (``!<X>`` -> ``X``, ``conditions.NotNamed``), else None.

    Example:
        >>> unnamed_slot("!<X>"), unnamed_slot("roast <X>")
        ('X', None)
    """
    c = _condition(cond)
    return c.slot if isinstance(c, NotNamed) else None


def negated_line(cond: str) -> str | None:
    """The line a negative line condition denies (``!chop <X>`` -> ``chop <X>``, ``conditions.NotSaid``); None for a
    positive condition or a bare negative placeholder (``!<X>``, see ``unnamed_slot``).

    Example:
        >>> negated_line("!chop <X>"), negated_line("!<X>"), negated_line("chop <X>")
        ('chop <X>', None, None)
    """
    c = _condition(cond)
    return c.line if isinstance(c, NotSaid) else None


def done_line(cond: str) -> str | None:
    """The earlier action a history condition asks for (``^open <X>`` -> ``open <X>``, ``conditions.After``), else None.

    Example:
        >>> done_line("^open <X>"), done_line("open <X>")
        ('open <X>', None)
    """
    c = _condition(cond)
    return c.action if isinstance(c, After) else None


def is_negative(cond: str) -> bool:
    """Whether ``cond`` says what the task's text lacks (``!<X>``, ``!chop <X>``), not what it holds."""
    return cond.strip().startswith(UNNAMED)


_QUOTED = re.compile(r"`([^`]+)`")
"""A back-quoted action in a hint's text."""


def is_avoidance(text: str) -> bool:
    """Whether a hint's text is an avoidance: it opens with "Avoid" (any case), as every reader takes it."""
    return text.strip().lower().startswith("avoid")


def is_procedure(text: str) -> bool:
    """Whether a hint's text is a procedure: a recommendation whose back-quoted actions are joined as steps
    (``THEN_WORDS`` or ``;``), followed in order; any other with several is a list of alternatives, as every reader
    takes it.

    Example:
        >>> is_procedure("start with `read cookbook` then `take <X>`"), is_procedure("Worked before: `a` ; `b`")
        (True, True)
        >>> is_procedure("Prefer `open fridge`, `take knife`"), is_procedure("Avoid `a` then `b`")
        (False, False)
    """
    return not is_avoidance(text) and _STEP_JOIN.search(text) is not None


def quoted_actions(text: str) -> list[str]:
    """The back-quoted actions a hint's text puts forward: every one in an avoidance; in a recommendation those
    before ``INSTEAD_WORDS`` (``Use `keep` instead of `filter```: ``filter`` is what it replaces).

    Example:
        >>> quoted_actions("Use `keep` instead of `filter`"), quoted_actions("Avoid `a` then `b`")
        (['keep'], ['a', 'b'])
    """
    return _QUOTED.findall(text if is_avoidance(text) else text.split(INSTEAD_WORDS, 1)[0])


def occurs(phrase: str, line: str) -> bool:
    """Whether ``phrase`` occurs in ``line`` as whole words (both taken as given, not normalised).

    Example:
        >>> occurs("red apple", "slice the red apple"), occurs("apple", "pineapple tart")
        (True, False)
    """
    return re.search(r"(^| )" + re.escape(phrase) + r"( |$)", line) is not None


def says_line(line: str, task_lines: Sequence[str]) -> bool:
    """Whether a line of the task's text contains ``line`` (normalised, whole words).

    Example:
        >>> says_line("chop red apple", ["chop red apple", "fry red apple"]), says_line("chop milk", ["chop red apple"])
        (True, False)
    """
    text = norm(line)
    rx = re.compile(r"(^| )" + re.escape(text) + r"( |$)")
    return bool(text) and any(rx.search(t) for t in task_lines)


def listed_only(phrase: str, task_lines: Sequence[str]) -> bool:
    """Whether the task's text lists ``phrase`` (or its longest leading part it mentions) and says nothing more
    about it: every line that mentions it is that phrase alone. The leading part lets an action's object run on
    (``red hot pepper in oven`` is listed only where the recipe lists ``red hot pepper`` and says nothing of it).

    Example:
        >>> listed_only("red hot pepper in oven", ["red hot pepper", "parsley", "chop parsley"])
        True
        >>> listed_only("parsley", ["red hot pepper", "parsley", "chop parsley"]), listed_only("milk", ["parsley"])
        (False, False)
    """
    words = norm_words(phrase)
    for k in range(len(words), 0, -1):
        part = " ".join(words[:k])
        rx = re.compile(r"(^| )" + re.escape(part) + r"( |$)")
        mentions = [t for t in task_lines if rx.search(t)]
        if mentions:
            return all(t == part for t in mentions)
    return False


def names_phrase(phrase: str, goal: str, task_lines: "list[str] | tuple[str, ...]") -> bool:
    """Whether the goal contains ``phrase``, or a line of the task's text contains it or a leading part of it
    (whole words, normalised): ``red apple in oven`` is named where the recipe says ``roast red apple``, and
    ``bathroom door`` is not named by a goal that only says ``around the bathroom``.

    Example:
        >>> names_phrase("red apple in oven", "cook a meal", ["roast red apple"]), names_phrase("bathroom door", "bathroom", [])
        (True, False)
    """
    words = norm_words(phrase)
    if words and re.search(r"(^| )" + re.escape(" ".join(words)) + r"( |$)", norm(goal)):
        return True
    for k in range(1, len(words) + 1):
        rx = re.compile(r"(^| )" + re.escape(" ".join(words[:k])) + r"( |$)")
        if any(rx.search(t) for t in task_lines):
            return True
    return False


def bind(line: str, binding: dict[str, str]) -> str | None:
    """``line`` with its placeholders replaced by their bound phrases, normalised; None when one is unbound.

    Example:
        >>> bind("roast <X>", {"X": "red apple"}), bind("roast <Y>", {"X": "red apple"})
        ('roast red apple', None)
    """
    if any(s not in binding for s in SLOT.findall(line)):
        return None
    return norm(SLOT.sub(lambda m: binding[m.group(1)], line))


def grounded_conditions(conditions: Sequence[str], binding: dict[str, str]) -> frozenset[str]:
    """The positive conditions of a rule with ``binding`` applied: the concrete lines the situation must hold
    (``roast <X>`` -> ``roast red apple``; a bare ``<X>`` -> ``red apple``). Negative ones (``!<X>``) say what
    the task lacks, not what it holds, and history ones (``^open <X>``) what the attempt did: both are left out.

    Example:
        >>> sorted(grounded_conditions(["roast <X>", "!<Y>"], {"X": "red apple", "Y": "knife"}))
        ['roast red apple']
    """
    return frozenset(line for c in conditions if not is_negative(c) and done_line(c) is None
                     for line in [bind(c, binding)] if line)


def avoidance_stands(avoided_in: AbstractSet[str], recommended_in: Iterable[AbstractSet[str]]) -> bool:
    """Whether an avoidance that fires on an action holds against the recommendations that fire on it too.

    Each argument is a rule's grounded conditions (``grounded_conditions``). A recommendation
    overrides the avoidance when it needs a line the avoidance's situation lacks: the action
    proved fatal where that line was not said, and right where it was, so where it is said the
    recommendation's evidence is the one that covers the case ("fatal when the task says
    `chop X`" yields to "right when the task says `fry X`" once the task says both). A
    recommendation whose lines all belong to the avoidance's situation (fewer or the same) does
    not: the action was fatal although they held. Comparing the lines, not their numbers, keeps
    two rules learned in unrelated situations from deciding by how many lines each happened to carry.

    Example:
        >>> avoidance_stands({"chop red apple"}, [{"fry red apple"}]), avoidance_stands({"roast red apple"}, [set()])
        (False, True)
    """
    return not any(not set(p) <= set(avoided_in) for p in recommended_in)


def next_step(steps: Sequence[Pattern], done: Sequence[str], takes: Callable[[Pattern, str], bool]) -> Pattern | None:
    """The step of a procedure an attempt that did ``done`` (its actions that did not fail, in order) is on: it took
    the earlier steps in order, the latest of them as its latest action (or none yet); None once it has stepped away,
    or taken them all. It comes back only by taking the next step on its own. ``takes(step, action)`` says whether an
    action is that step (a reader binds and checks the step's conditions there).

    Why: a procedure's later steps (``move west``) were right in the situation it was learned in; once the attempt
    does something else, it is somewhere else, and drawing it back costs it the steps it needs here.

    Example:
        >>> steps = [Pattern.parse(a) for a in ("read cookbook", "move west")]
        >>> same = lambda p, a: p.match(a) is not None
        >>> [next_step(steps, d, same).text for d in ([], ["read cookbook"])]
        ['read cookbook', 'move west']
        >>> next_step(steps, ["read cookbook", "take salt"], same) is None
        True
    """
    k, last = 0, False
    for action in done:
        last = k < len(steps) and takes(steps[k], action)
        k += last
    if k and not last:
        return None
    return steps[k] if k < len(steps) else None


__all__ = ["AFTER", "AFTER_WORDS", "WHEN_WORDS", "ARTICLES", "INSTEAD_WORDS", "NOT_NAMED_WORDS", "NOT_SAID_WORDS", "SAID_SO_WORDS", "SLOT", "THEN_WORDS", "UNNAMED", "Pattern", "avoidance_stands", "bind",
           "clauses", "command_and_object", "directing_lines", "done_line", "grounded_conditions", "is_avoidance", "is_negative", "is_procedure", "listed_only", "names_phrase", "negated_line", "next_step", "norm", "norm_words", "occurs", "quoted_actions", "says_line", "unnamed_slot"]
