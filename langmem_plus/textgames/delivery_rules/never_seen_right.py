"""never_seen_right: an avoidance of a command memory never saw right holds whatever the task says of its thing.

An avoidance is learned in the situation it was fatal in (``cook <X> in oven`` when the task says ``grill <X>``).
Where memory knows no situation in which its command is right (no recommendation over a placeholder, no task text
directing it), the situation lines are no evidence that it is right elsewhere, so the rule fires without them, and
is shown once as its pattern. With its command seen using up its object, a bare placeholder needs only the thing
named (``trigger.named_part``). Unlike the other rules it adds no firing: it widens the trigger of stored rules.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import ClassVar

from langmem_plus.learning.textmatch import Pattern
from langmem_plus.records import Lesson, ScoredItem, Step, TaskSpec
from langmem_plus.textgames.delivery_rules.base import Firing, Known
from langmem_plus.textgames.delivery_rules.using_up import consuming_verbs
from langmem_plus.textgames.trigger import StepView, head_verb, situation_line


def holds_anywhere(lesson: Lesson, pattern: Pattern, right_somewhere: Collection[str], goal_words: Collection[str]) -> bool:
    """Whether an avoidance fires whatever the task says (its command right nowhere memory knows) and has no condition
    but situation lines: it states no line the task must say, so it is shown once as its pattern (``Avoid `eat <X>```),
    the reader binding it as the rule binds (a phrase something names, never all goal words)."""
    conds = lesson.applies_when or ()
    return bool(lesson.wrong) and head_verb(pattern) not in right_somewhere and bool(pattern.slots) and bool(conds) \
        and all(situation_line(c, goal_words) for c in conds)


class NeverSeenRight:
    """Widens the trigger of avoidances whose command memory never saw right (module docstring)."""

    name: ClassVar[str] = "never_seen_right"
    summary: ClassVar[str] = "an avoidance of a command memory never saw right fires whatever the task says of its thing"
    prefix: ClassVar[str] = ""

    def __init__(self, known: Known) -> None:
        self._right_somewhere = known.right_somewhere
        self._used_up = consuming_verbs(known.runs, (), 1)
        self._anywhere: dict[str, ScoredItem] = {}

    def unconditioned(self, lesson: Lesson, pattern: Pattern) -> bool:
        """Whether the stored rule fires without its situation lines (an avoidance of a command never seen right)."""
        return bool(lesson.wrong) and head_verb(pattern) not in self._right_somewhere

    def used_up(self, pattern: Pattern) -> bool:
        """Whether any run saw the pattern's command use up its object."""
        return head_verb(pattern) in self._used_up

    def shown(self, item: ScoredItem, pattern: Pattern, view: StepView) -> ScoredItem:
        """``item``, or, for an avoidance that holds anywhere here (``holds_anywhere``), it without its conditions."""
        lesson = item.item
        assert isinstance(lesson, Lesson)
        if not holds_anywhere(lesson, pattern, self._right_somewhere, view.goal_words):
            return item
        if item.item_id not in self._anywhere:
            self._anywhere[item.item_id] = item.model_copy(update={"item": lesson.model_copy(update={"applies_when": []})})
        return self._anywhere[item.item_id]

    def fire(self, view: StepView, task: TaskSpec, history: Sequence[Step]) -> list[Firing]:
        """No firing of its own (it widens the trigger)."""
        return []


__all__ = ["NeverSeenRight", "holds_anywhere"]
