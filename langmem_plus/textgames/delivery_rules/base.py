"""What every delivery rule shares: what memory knows for one attempt, a rule's interface, and inferred lines.

A delivery rule (``DeliveryRule``) is built once per attempt from ``Known`` and asked at each step which valid actions
it avoids (``fire``). What it returns is a firing, ``(item, action)``: the item is a stored rule, or a line inferred
at delivery (its id starts with the rule's ``prefix``; no activation is recorded for it).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import ClassVar, Protocol

from langmem_plus.config import MemoryConfig
from langmem_plus.learning.textmatch import UNNAMED, Pattern, is_negative
from langmem_plus.records import Lesson, RunRecord, ScoredItem, Step, TaskSpec
from langmem_plus.textgames.direct import conditional_command, is_directed, pattern_verb, sibling_key
from langmem_plus.textgames.trigger import StepView

Firing = tuple[ScoredItem, str]
"""A rule standing on one valid action: the item shown for it, and the action as offered."""

Families = dict[tuple[str, tuple[str, ...]], frozenset[str]]
"""Per family of conditional commands (``direct.sibling_key``), the verbs whose lines memory can answer."""


@dataclass(frozen=True)
class Known:
    """What memory knows for one attempt, computed once by ``StepDelivery`` and read by every rule."""

    config: MemoryConfig
    runs: Sequence[RunRecord]
    """The tool's finished runs."""
    live: Sequence[Lesson]
    """The live text rules (``rules.live_text_rules``)."""
    parsed: Sequence[tuple[Lesson, Pattern]]
    """Each live rule with its action pattern."""
    ranked: Sequence[tuple[ScoredItem, Pattern]]
    """The rules that may be delivered, best first (delivery rule 3)."""
    right_somewhere: frozenset[str]
    """Commands memory recommends over a placeholder somewhere, or that tasks' texts direct."""
    directive_verbs: frozenset[str]
    """The tool's directive verbs (its runs' directed verbs that are its commands)."""
    undirected: frozenset[str]
    """Commands memory avoids wherever the task does not say them (``undirected_verbs``)."""
    families: Families
    """``answered_verbs`` of the live rules."""
    known: Sequence[Pattern]
    """The patterns memory recommends outright (no conditional command)."""
    conditional: Sequence[tuple[Lesson, Pattern]]
    """Every live conditional command (``direct.conditional_command``), delivered or held back."""


class DeliveryRule(Protocol):
    """One delivery rule of the pipeline (``delivery_rules.PIPELINE``), built for one attempt."""

    name: ClassVar[str]
    """What ``MemoryConfig.textgames.text_rules_off`` and ``bench env --without`` call it."""
    summary: ClassVar[str]
    """One line: what it does."""
    prefix: ClassVar[str]
    """Id prefix of the lines it infers (``""``: it shows only stored rules)."""

    def fire(self, view: StepView, task: TaskSpec, history: Sequence[Step]) -> list[Firing]:
        """The firings it adds at this step."""
        ...


def inferred(prefix: str, key: str, wrong: str, conditions: Sequence[str] | None, why: str) -> ScoredItem:
    """A line inferred at delivery as an item to ground and show: an avoidance of ``wrong`` under ``conditions``."""
    lesson = Lesson(id=f"{prefix}{key}", namespace=("triggered",), rule_text=f"AVOID: {wrong}", wrong=wrong,
                    applies_when=None if conditions is None else list(conditions))
    return ScoredItem(kind="lesson", item=lesson, score=0.0, why=why)


def undirected_verbs(live: Sequence[Lesson]) -> frozenset[str]:
    """Commands memory avoids wherever the task does not say them (``v <X>`` when the task does not say ``v <X>``)."""
    return frozenset(pattern_verb(l) for l in live if l.wrong and (l.applies_when or []) == [f"{UNNAMED}{l.wrong}"]
                     and l.wrong == f"{pattern_verb(l)} <X>")


def answered_verbs(live: Sequence[Lesson], undirected: Collection[str]) -> Families:
    """Per family of conditional commands (``direct.sibling_key``), the verbs whose lines memory can answer: directive
    verbs (memory recommends ``<v> <X>`` where the task says ``<v> <X>``, or avoids it where the task does not say it:
    ``undirected``) and the first words of the family's condition lines."""
    directive = {pattern_verb(l) for l in live if is_directed(l)} | set(undirected)
    families: dict[tuple[str, tuple[str, ...]], set[str]] = {}
    for lesson in live:
        if conditional_command(lesson):
            lines = (c.split()[0] for c in lesson.applies_when or () if not is_negative(c) and c.split())
            families.setdefault(sibling_key(lesson), set()).update(lines)
    return {key: frozenset(directive | verbs) for key, verbs in families.items()}


def asks_only_answered(phrase: str, answered: Collection[str], view: StepView) -> bool:
    """Whether every line of the task's text naming ``phrase``, but the bare mention, opens with an ``answered`` verb:
    the task asks nothing of the thing that memory cannot answer. True when no line names it.

    Example:
        >>> view = StepView(frozenset(), "", ("red onion", "dice red onion", "roast carrot"), (), ())
        >>> asks_only_answered("red onion", {"dice"}, view), asks_only_answered("carrot", {"dice"}, view)
        (True, False)
    """
    rx = re.compile(r"(^| )" + re.escape(phrase) + r"( |$)")
    return all(line == phrase or line.split()[0] in answered for line in view.task_lines if rx.search(line))


__all__ = ["DeliveryRule", "Families", "Firing", "Known", "answered_verbs", "asks_only_answered", "inferred",
           "undirected_verbs"]
