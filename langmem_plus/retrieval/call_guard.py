"""The tool-call guard: what memory holds against a proposed call, before it runs.

A lesson guards the calls of its tool when its WRONG form (``forms``) matches inside one
of the call's argument values: a rewrite (WRONG -> CORRECT) says what to write instead,
an avoidance what the error said. Suppressed and archived lessons never guard, nor do
text rules (they have their own delivery).

``ToolForms`` keeps one tool's WRONG forms keyed by one literal token each (the least
shared one), so a check looks up the tokens of the call's values and matches only the
few lessons that could fire: the cost follows the call, not the number of lessons.

Example:
    >>> from langmem_plus.records import Lesson, LessonScope
    >>> top = Lesson(id="l1", namespace=("n",), rule_text="r", wrong="TOP <n> <...>", correct="<...> LIMIT <n>",
    ...              scope=LessonScope(tool="run_sql"))
    >>> forms = ToolForms(); forms.put(top)
    >>> held = check_call(forms, {"l1": top}.get, {"query": "SELECT TOP 2 a FROM t"})
    >>> held[0].after
    'SELECT a FROM t LIMIT 2'
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langmem_plus.forms import argument_values, parse_form, tokenize
from langmem_plus.records import Activation, Lesson
from langmem_plus.rewrite import apply_rewrite, form_occurs

GUARDING_STATUSES = frozenset({"candidate", "promoted"})
"""Lessons in these states guard calls; a suppressed or archived lesson never does."""


def guards(lesson: Lesson) -> bool:
    """Whether ``lesson`` can guard a call: a form of its own to match (not a text rule), and not suppressed."""
    return lesson.applies_when is None and bool(lesson.wrong) and lesson.status in GUARDING_STATUSES


def _key(wrong: str, load: Callable[[str], int]) -> str | None:
    """The literal token of a form that indexes it: the one whose bucket holds fewest forms so far (so no common word
    such as ``SELECT`` gathers many), a word before punctuation, the longest first; None for a form without one."""
    literals = parse_form(wrong).literals
    return min(literals, key=lambda t: (load(t), not t[:1].isalpha() and not t.startswith("-"), -len(t), t), default=None)


class ToolForms:
    """The WRONG forms of one tool's lessons, by a literal token each."""

    def __init__(self) -> None:
        self._by_key: dict[str, dict[str, str]] = {}
        self._key_of: dict[str, str] = {}

    def __len__(self) -> int:
        return len(self._key_of)

    def put(self, lesson: Lesson) -> None:
        """Index ``lesson``'s WRONG form (or drop it, if it no longer has one to match)."""
        self.drop(lesson.id)
        if lesson.applies_when is not None or not lesson.wrong:
            return
        key = _key(lesson.wrong, lambda t: len(self._by_key.get(t, ())))
        if key is None:
            return
        self._by_key.setdefault(key, {})[lesson.id] = lesson.wrong
        self._key_of[lesson.id] = key

    def drop(self, lesson_id: str) -> None:
        """Forget one lesson's form."""
        key = self._key_of.pop(lesson_id, None)
        if key is not None:
            bucket = self._by_key.get(key, {})
            bucket.pop(lesson_id, None)
            if not bucket:
                self._by_key.pop(key, None)

    def candidates(self, token_texts: set[str]) -> list[str]:
        """Ids of the lessons whose key token is among ``token_texts`` (those that could match), in a stable order."""
        out: list[str] = []
        for text in sorted(token_texts):
            bucket = self._by_key.get(text)
            if bucket:
                out.extend(bucket)
        return out


@dataclass(frozen=True)
class Held:
    """One lesson memory holds against a proposed call."""

    lesson: Lesson
    key: str
    """The argument whose value the lesson's WRONG form matched."""
    before: str
    """That value as proposed."""
    after: str | None
    """The value rewritten by the lesson; None for an avoidance."""


def _rank(held: Held) -> tuple[int, float, int, str]:
    lesson = held.lesson
    return (lesson.status != "promoted", -lesson.reliability, held.after is None, lesson.id)


def check_call(forms: ToolForms, lesson_of: Callable[[str], Lesson | None], args: Mapping[str, Any]) -> list[Held]:
    """The lessons that hold against a call with ``args``: promoted first, then by reliability; rewrites before
    avoidances. Each lesson at most once (its first matching argument)."""
    held: list[Held] = []
    seen: set[str] = set()
    for key, value in argument_values(args).items():
        tokens = tokenize(value)
        for lesson_id in forms.candidates({t.text for t in tokens}):
            lesson = lesson_of(lesson_id)
            if lesson_id in seen or lesson is None or not guards(lesson) or lesson.wrong is None:
                continue
            if lesson.correct is not None:
                after = apply_rewrite(value, lesson.wrong, lesson.correct, spans=tokens)
                if after is None:
                    continue
            elif form_occurs(value, lesson.wrong, spans=tokens):
                after = None
            else:
                continue
            seen.add(lesson_id)
            held.append(Held(lesson, key, value, after))
    return sorted(held, key=_rank)


def rewritten_args(args: Mapping[str, Any], held: list[Held]) -> dict[str, Any] | None:
    """``args`` with the first rewrite of each argument applied (from the ranked ``held``); None if none applies."""
    out = dict(args)
    done: set[str] = set()
    for h in held:
        if h.after is not None and h.key not in done and isinstance(out.get(h.key), str):
            out[h.key] = h.after
            done.add(h.key)
    return out if done else None


def guard_activations(held: Sequence[Held], *, run_id: str, step: int) -> list[Activation]:
    """One activation per lesson the guard used, at the step the model's next call becomes."""
    return [Activation(lesson_id=h.lesson.id, run_id=run_id, step=step, moment="guard", score=h.lesson.reliability)
            for h in dict((h.lesson.id, h) for h in held).values()]


__all__ = [
    "GUARDING_STATUSES",
    "Held",
    "ToolForms",
    "check_call",
    "guard_activations",
    "guards",
    "rewritten_args",
]
