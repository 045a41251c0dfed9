"""When a text rule fires: the step's view of the task, and the valid actions a rule's pattern and conditions hold on.

A rule fires on a valid action its pattern matches with each placeholder bound to a phrase of the task's text (an
avoidance also to a phrase a short observation line names), and every ``applies_when`` condition holding with those
bindings (``docs/text-games.md``, delivery rule 1). Every delivery rule reads the step through ``StepView``.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from langmem_plus.config import DEFAULT_CONFIG, MemoryConfig
from langmem_plus.learning.textmatch import (
    SLOT,
    Pattern,
    bind,
    clauses,
    directing_lines,
    is_negative,
    listed_only,
    names_phrase,
    negated_line,
    norm,
    occurs,
    says_line,
    unnamed_slot,
)
from langmem_plus.records import Lesson, Step, TaskSpec
from langmem_plus.textgames.entities import PREPOSITIONS
from langmem_plus.textgames.rules import task_text_lines


@dataclass(frozen=True)
class StepView:
    """What one step offers: goal words, the task's text, the observation lines so far, the valid actions now."""

    goal_words: frozenset[str]
    goal: str
    task_lines: tuple[str, ...]
    lines: tuple[str, ...]
    valid: tuple[str, ...]
    said: tuple[str, ...] = ()
    """The observations' clauses (``textmatch.clauses``): where a condition line must occur."""
    directing: tuple[str, ...] = ()
    """The goal's clauses and ``task_lines`` (``textmatch.directing_lines``): where a negative line condition must not be said."""

    @classmethod
    def of(cls, task: TaskSpec, history: Sequence[Step]) -> "StepView":
        """The view before the next step of ``task`` after ``history`` (as ``TextGameExecutor`` reads it)."""
        ctx = task.context or {}
        goal = str(ctx.get("goal") or task.goal or "")
        observations = [str(ctx.get("observation") or ""), *(s.observation for s in history)]
        raw = history[-1].info.get("valid_actions") if history else ctx.get("valid_actions")
        lines = tuple(dict.fromkeys(l for o in observations for l in map(norm, o.splitlines()) if l))
        said = tuple(dict.fromkeys(c for o in observations for c in clauses(o)))
        task_lines = tuple(task_text_lines(goal, history))
        return cls(frozenset(norm(goal).split()), norm(goal), task_lines, lines,
                   tuple(str(a) for a in raw or []), said, tuple(directing_lines(goal, task_lines)))

    def names(self, phrase: str, *, short_line_words: int | None = None) -> bool:
        """Whether the task's text names ``phrase`` (with ``short_line_words``, also any observation line of at
        most that many words) and it is not all goal words."""
        words = phrase.split()
        if not words or all(w in self.goal_words for w in words):
            return False
        rx = re.compile(r"(^| )" + re.escape(phrase) + r"( |$)")
        if any(rx.search(l) for l in self.task_lines):
            return True
        return short_line_words is not None and any(len(l.split()) <= short_line_words and rx.search(l) for l in self.lines)

    def says(self, line: str) -> bool:
        """Whether a clause of an observation contains ``line`` (whole words)."""
        rx = re.compile(r"(^| )" + re.escape(line) + r"( |$)")
        return any(rx.search(l) for l in self.said)


def rule_pattern(lesson: Lesson) -> Pattern | None:
    """The action pattern a text rule is about: WRONG for an avoidance, else CORRECT."""
    raw = lesson.wrong or lesson.correct
    return Pattern.parse(raw) if raw else None


def firings(lesson: Lesson, pattern: Pattern, view: StepView, config: MemoryConfig = DEFAULT_CONFIG, *,
            unconditioned: bool = False, used_up: bool = False) -> list[str]:
    """The valid actions the rule fires on at this step (delivery rule 1); ``unconditioned``: an avoidance
    whose situation lines are not checked (``delivery_rules.never_seen_right``, ``situation_line``); with ``used_up`` too (its command was seen
    to use its object up), its bare placeholder needs only the thing named (``named_part``)."""
    loose = config.textgames.text_short_line_words if lesson.wrong else None  # an avoidance also binds what the game shows
    conditions = [c for c in lesson.applies_when or () if not (unconditioned and situation_line(c, view.goal_words))]
    negated = {s for s in map(unnamed_slot, conditions) if s is not None}
    if lesson.wrong:  # an avoidance's placeholder in a stated condition is bound by that condition (a goal role)
        negated |= {s for c in conditions if unnamed_slot(c) is None for s in SLOT.findall(c)}
    out = []
    for action in view.valid:
        binding = pattern.match(action)
        if binding is None or not all(_bound(view, s, p, loose, s in negated) for s, p in binding.items()):
            continue
        if all(_holds(cond, binding, view, named=unconditioned and used_up) for cond in conditions):
            out.append(action)
    return out


def situation_line(cond: str, goal_words: Collection[str]) -> bool:
    """Whether a condition is a line of the task's text that sets the action's situation (``roast <X>``): stated, not
    a bare placeholder, and with a word the goal lacks. A line of the goal's own words (``it to <X>``) is the thing's
    role in the goal, the same in every task of the family; a negative one says what the task lacks.

    Example:
        >>> [situation_line(c, {"move", "it", "to", "box"}) for c in ("roast <X>", "it to <X>", "<X>", "!chop <X>")]
        [True, False, False, False]
    """
    if is_negative(cond) or SLOT.fullmatch(cond.strip()):
        return False
    return any(w not in goal_words for w in norm(SLOT.sub(" ", cond)).split())


def head_verb(pattern: Pattern) -> str:
    """A pattern's command: its first word (``cook`` of ``cook <X> in stove``)."""
    words = norm(pattern.text).split()
    return words[0] if words else ""


def _bound(view: StepView, slot: str, phrase: str, loose: int | None, negated: bool) -> bool:
    """Whether ``phrase`` may fill ``slot``: something the task's text names (``StepView.names``); for a
    placeholder of a negative condition, anything offered that is not all goal words; for an avoidance's
    placeholder in a stated condition, anything (the condition does the rest)."""
    if negated:
        return bool(phrase.split())
    return view.names(phrase, short_line_words=loose)


def named_part(phrase: str, view: StepView) -> bool:
    """Whether the task's text names ``phrase``, or the part of it before a preposition (``milk`` of ``milk in oven``),
    and it is not all goal words: a bare placeholder's thing, whatever the text says of it (``delivery_rules.never_seen_right``).

    Example:
        >>> view = StepView(frozenset({"meal"}), "meal", ("milk", "chop the carrot", "red onion"), (), ())
        >>> [named_part(p, view) for p in ("milk in oven", "carrot", "meal", "salt", "red apple")]
        [True, True, False, False, False]
    """
    words = phrase.split()
    for k in range(len(words), 0, -1):
        if (k < len(words) and words[k] not in PREPOSITIONS) or all(w in view.goal_words for w in words[:k]):
            continue
        if any(occurs(" ".join(words[:k]), line) for line in view.task_lines):
            return True
    return False


def _holds(cond: str, binding: dict[str, str], view: StepView, *, named: bool = False) -> bool:
    """Whether a condition holds for ``binding`` (delivery rule 1); ``named``: a bare placeholder holds where
    the task's text names the thing at all (``named_part``), not only where it lists it and says nothing more."""
    neg = unnamed_slot(cond)
    if neg is not None:  # the task's text (goal and what was read) does not name the bound phrase
        return not names_phrase(binding.get(neg, ""), view.goal, view.task_lines)
    unsaid = negated_line(cond)
    if unsaid is not None:  # no line of the task's text says the bound line (the action was not asked for)
        bound = bind(unsaid, binding)
        return bound is not None and not says_line(bound, view.directing)
    bare = SLOT.fullmatch(cond.strip())
    if bare is not None:  # the task's text names the phrase (or a leading part) and says nothing more about it
        phrase = binding.get(bare.group(1), "")
        return listed_only(phrase, view.task_lines) or (named and named_part(phrase, view))
    line = bind(cond, binding)
    return line is not None and bool(line) and view.says(line)


__all__ = ["StepView", "firings", "head_verb", "named_part", "rule_pattern", "situation_line"]
