"""elimination: siblings of commands right only under their own line are avoided where nothing asks for them.

Memory may know a family of conditional commands (``cook <X> in oven`` right where the task says ``roast <X>``, the
stove where it says ``fry <X>``) and an avoidance learned in one situation (``cook <X> in toaster`` when ``grill
<X>``). Where the task's text names a thing and asks nothing of it but lines whose verbs memory can answer
(``base.asks_only_answered``), the family's avoidance holds on that thing whatever its situation: every way the task
could ask for the command is known, and none is asked.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import ClassVar

from langmem_plus.learning.textmatch import Pattern, is_negative
from langmem_plus.records import Lesson, ScoredItem, Step, TaskSpec
from langmem_plus.textgames.delivery_rules.base import Families, Firing, Known, asks_only_answered
from langmem_plus.textgames.direct import sibling_key
from langmem_plus.textgames.trigger import StepView


def eliminable(ranked: Sequence[tuple[ScoredItem, Pattern]], live: Sequence[Lesson],
               families: Families) -> list[tuple[ScoredItem, Pattern, frozenset[str]]]:
    """The avoidances the rule applies to, in rank order, each with its family's answered verbs: stated situations,
    one placeholder, a command memory does not also recommend."""
    recommended = {l.correct for l in live if l.correct}
    out = []
    for it, pattern in ranked:
        rule = it.item
        assert isinstance(rule, Lesson)
        conds = rule.applies_when or ()
        if not rule.wrong or rule.wrong in recommended or not conds or any(is_negative(c) for c in conds):
            continue
        answered = families.get(sibling_key(rule))
        if answered is not None and len(pattern.slots) == 1:
            out.append((it, pattern, answered))
    return out


def eliminated(pattern: Pattern, answered: Collection[str], view: StepView) -> list[str]:
    """The valid actions of ``pattern`` whose thing the task's text names and asks nothing of but ``answered`` verbs'
    lines."""
    out = []
    for action in view.valid:
        binding = pattern.match(action)
        if binding and len(binding) == 1:
            phrase = next(iter(binding.values()))
            if view.names(phrase) and asks_only_answered(phrase, answered, view):
                out.append(action)
    return out


class Elimination:
    """Avoids a conditional family's avoided sibling where the task asks nothing unanswered (module docstring)."""

    name: ClassVar[str] = "elimination"
    summary: ClassVar[str] = "siblings of commands right only under their own line are avoided where nothing asks for them"
    prefix: ClassVar[str] = ""

    def __init__(self, known: Known) -> None:
        self._eliminable = eliminable(known.ranked, known.live, known.families)

    def fire(self, view: StepView, task: TaskSpec, history: Sequence[Step]) -> list[Firing]:
        """Each eliminable avoidance on each action ``eliminated`` at this step, in rank order."""
        return [(it, a) for it, p, answered in self._eliminable for a in eliminated(p, answered, view)]


__all__ = ["Elimination", "eliminable", "eliminated"]
