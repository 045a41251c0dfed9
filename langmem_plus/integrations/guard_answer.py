"""What the call guard says to a model: the tool message that stands in for a call memory stopped, and the note on
a call memory rewrote. Both are written as the notes contract (``docs/notes-contract.md``) says, lesson text quoted
as data; the state records each answer, so the same call proposed again in the run runs.

Example:
    >>> from langmem_plus.records import Lesson
    >>> lesson = Lesson(id="l1", namespace=("n",), rule_text="r", wrong="ILIKE", correct="LIKE")
    >>> print(guard_text([Held(lesson, "query", "a ILIKE 'x'", "a LIKE 'x'")]))
    Not run: memory holds a lesson against this call; call it again unchanged to run it anyway.
    - [lesson:l1] "Use `LIKE` instead of `ILIKE`"
    - "query as the lesson writes it: `a LIKE 'x'`"
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from langmem_plus.plugins import GUARD_CALL_KIND
from langmem_plus.learning.hints import hint_from_item
from langmem_plus.learning.textmatch import Pattern, is_avoidance, quoted_actions
from langmem_plus.records import Hint, ScoredItem
from langmem_plus.retrieval.rule_lines import spelt_out
from langmem_plus.retrieval.call_guard import Held

CALL_GUARD_NOTE = "Not run: memory holds a lesson against this call; call it again unchanged to run it anyway."
"""First line of the tool message a stopped call gets (the contract: a tool message starting ``Not run:``)."""
REWRITE_NOTE = "Memory rewrote this call before it ran"
"""First words of the line a rewritten call's result starts with."""


def _quoted(text: str) -> str:
    return json.dumps(" ".join(text.split()), ensure_ascii=False)


def lesson_note(held: Held) -> str:
    """One held lesson as a note line with its id: what it says, quoted as data."""
    hint = hint_from_item(ScoredItem(kind="lesson", item=held.lesson, score=held.lesson.reliability))
    return f"- [lesson:{held.lesson.id}] {_quoted(hint.text)}"


def guard_text(held: Sequence[Held]) -> str:
    """The tool message of a stopped call: the note line, then each lesson and, for a rewrite, the argument as the
    lesson writes it."""
    lines = [CALL_GUARD_NOTE]
    for h in held:
        lines.append(lesson_note(h))
        if h.after is not None:
            lines.append(f"- {_quoted(f'{h.key} as the lesson writes it: `{h.after}`')}")
    return "\n".join(lines)


STEP_AGAINST = "memory holds a note against it"
"""What a held step's first line says when a note stands on the proposed command itself."""
STEP_INSTEAD = "memory recommends another command at this step"
"""What it says when the notes are recommendations the proposal is none of."""
STEP_AGAIN = "Choose again with the notes below; call it again unchanged to run it anyway."


def step_guard_note(action: str, hints: Sequence[Hint]) -> str:
    """The first line of a held step's tool message: the proposed command, and what memory holds on it: a note
    against it (an avoidance whose actions match it), or recommendations of other commands.

    Example:
        >>> step_guard_note("cook red apple in stove", [Hint(text="Avoid `cook <X> in stove`", source_id="a")])
        'Not run: `cook red apple in stove`: memory holds a note against it. Choose again with the notes below; call it again unchanged to run it anyway.'
    """
    against = any(is_avoidance(h.text) and any(p is not None and p.match(action) is not None
                                               for p in map(Pattern.parse, quoted_actions(spelt_out(h.text))))
                  for h in hints)
    return f"Not run: `{' '.join(action.split())}`: {STEP_AGAINST if against else STEP_INSTEAD}. {STEP_AGAIN}"


def rewrite_text(held: Sequence[Held], args: Mapping[str, Any], content: str) -> str:
    """A rewritten call's result, opened by a line that says which lessons rewrote it and what ran."""
    ids = ", ".join(dict.fromkeys(h.lesson.id for h in held))
    ran = ", ".join(f"{k}=`{v}`" for k, v in args.items())
    return f"{REWRITE_NOTE} (lessons {ids}): {ran}\n{content}"


def answer_entry(step: int, call: str, lesson_ids: Sequence[str]) -> dict[str, Any]:
    """The ``lm_guard`` entry of one answer: the step, the call as one line, the lessons it quoted."""
    return {"kind": GUARD_CALL_KIND, "step": step, "action": call, "lessons": list(lesson_ids)}


def was_answered(state_guard: Sequence[Any], call: str) -> bool:
    """Whether the guard already answered this very call in the run: proposed again after its notes (at once, or
    after a lookup), it runs, so memory never holds an agent in a loop."""
    return any(isinstance(e, dict) and e.get("kind") == GUARD_CALL_KIND and e.get("action") == call for e in state_guard)


__all__ = [
    "STEP_AGAINST",
    "STEP_INSTEAD",
    "step_guard_note",
    "CALL_GUARD_NOTE",
    "REWRITE_NOTE",
    "answer_entry",
    "guard_text",
    "lesson_note",
    "rewrite_text",
    "was_answered",
]
