"""Contradicted notes: notes an attempt was shown whose condition on the task's text the task contradicts.

A note is a line of memory as any agent reads it: a hint's text and its precondition (``docs/notes-contract.md``).
It is **contradicted** in an attempt when it states conditions on the task's text (says, does not say, does not
name, names and says nothing more) and no action the game offered in the attempt that one of its forms matches makes
them hold, read against the attempt's whole task text (the goal, and what was read of the things the goal names:
``textgames.rules.task_text_lines``). A reader that obeys such a note acts on a situation this task is not in. A note
none of whose forms matches an offered action, or with no condition on the task's text, is not judged here.

The count is the bench's measure of what every design showed, read from the text alone with the contract's reader
(``conditions.read_precondition``), whatever design wrote it.

Example:
    >>> offered = ["cook red apple in oven", "cook red apple in stove"]
    >>> lines = ["fry red apple"]
    >>> is_contradicted("Avoid `cook <X> in oven`", "when the task says `roast <X>`", "Cook.", lines, offered)
    True
    >>> is_contradicted("Prefer `cook <X> in stove`", "when the task says `fry <X>`", "Cook.", lines, offered)
    False
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from langmem_plus.conditions import After, Condition, Listed, NotNamed, Says, read_precondition
from langmem_plus.learning.textmatch import (
    Pattern,
    bind,
    directing_lines,
    listed_only,
    names_phrase,
    quoted_actions,
    says_line,
)
from langmem_plus.records import Step
from langmem_plus.retrieval.rule_lines import spelt_out
from langmem_plus.textgames.rules import task_text_lines


def _holds(cond: Condition, binding: Mapping[str, str], goal: str, lines: Sequence[str]) -> bool:
    """Whether ``cond``, bound, holds of the task's text; a condition that cannot be bound, or on the attempt's own
    history (``After``), is not held against the note."""
    if isinstance(cond, After):
        return True
    if isinstance(cond, (Listed, NotNamed)):
        phrase = binding.get(cond.slot)
        if phrase is None:
            return True
        return listed_only(phrase, lines) if isinstance(cond, Listed) else not names_phrase(phrase, goal, list(lines))
    bound = bind(cond.line, dict(binding))
    if bound is None:
        return True
    said = says_line(bound, directing_lines(goal, lines))
    return said if isinstance(cond, Says) else not said


def is_contradicted(text: str, precondition: str | None, goal: str, lines: Sequence[str],
                    offered: Iterable[str]) -> bool:
    """Whether the note ``text`` / ``precondition`` is contradicted by a task of ``goal`` and text ``lines`` whose game
    offered ``offered`` (module docstring)."""
    pre = read_precondition(precondition)
    actions = list(dict.fromkeys(offered))
    judged = False
    for raw in quoted_actions(spelt_out(text)):
        pattern = Pattern.parse(raw)
        if pattern is None:
            continue
        conditions = [c for c in pre.of(pattern.text) if not isinstance(c, After)]
        if not conditions:
            return False
        for action in actions:
            binding = pattern.match(action)
            if binding is None:
                continue
            judged = True
            if all(_holds(c, binding, goal, lines) for c in conditions):
                return False
    return judged


def offered_actions(task_context: Mapping[str, object], steps: Sequence[Step]) -> list[str]:
    """Every action the game offered in an attempt: at its start and after each step."""
    out = [str(a) for a in task_context.get("valid_actions") or ()]  # type: ignore[attr-defined]
    for step in steps:
        out += [str(a) for a in step.info.get("valid_actions") or ()]
    return list(dict.fromkeys(out))


def contradicted_notes(notes: Iterable[tuple[str, str | None]], goal: str, task_context: Mapping[str, object],
                       steps: Sequence[Step]) -> int:
    """How many of the distinct ``notes`` (text, precondition) an attempt was shown its task contradicts."""
    ordered = sorted(steps, key=lambda s: s.index)
    lines = task_text_lines(goal, ordered)
    offered = offered_actions(task_context, ordered)
    return sum(is_contradicted(text, pre, goal, lines, offered) for text, pre in dict.fromkeys(notes))


__all__ = ["contradicted_notes", "is_contradicted", "offered_actions"]
