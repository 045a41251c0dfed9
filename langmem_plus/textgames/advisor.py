"""The text-game plugin's step advice for ``LearningMiddleware(text_rules="at_step")``: text rules at their steps.

An agent's run opens as the bench's attempt opens (``delivery_start.open_triggered``), sees at each model call the
rules that stand after its latest step (``delivery.StepDelivery`` through ``step_rules.StepRules``), and has a
proposed action answered by the guard; the middleware reaches all of it through ``plugins.StepAdvisor``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langmem_plus.config import MemoryConfig
from langmem_plus.records import ScoredItem
from langmem_plus.textgames.shown import is_text_rule, short_line
from langmem_plus.textgames.delivery_start import TriggeredStart, open_triggered
from langmem_plus.textgames.step_rules import StepRules, answered


class TextGameAdvisor:
    """``plugins.StepAdvisor`` for text games."""

    def at_step(self, item: ScoredItem) -> bool:
        """Text rules come at the steps they fire on, not before the run."""
        return is_text_rule(item.item)

    def open(self, items: Sequence[ScoredItem], config: MemoryConfig, budget: int) -> TriggeredStart:
        """The attempt's opening: the pre-run block in short lines, the avoidances it holds for a proposal."""
        return open_triggered(items, config, budget=budget)

    def short_line(self, item: ScoredItem) -> str:
        """An item's compact line without its id."""
        return short_line(item)

    def answered(self, state_guard: Sequence[Any]) -> list[tuple[int, str]]:
        """The proposals the guard answered, from the run state."""
        return answered(state_guard)

    def session(self) -> StepRules:
        """One ``StepDelivery`` per run, kept in step with the run's state."""
        return StepRules()


ADVISOR = TextGameAdvisor()
"""The text-game plugin's step advisor."""

__all__ = ["ADVISOR", "TextGameAdvisor"]
