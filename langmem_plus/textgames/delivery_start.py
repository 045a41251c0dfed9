"""How a triggered attempt opens: the pre-run block in short lines, the avoidances it holds back, its step delivery.

With triggered delivery (``textgames.delivery``) text rules reach the agent at the steps they fire on; everything
else memory retrieved for the task stays before it, one short line an item (``short_line``), within a budget. An
avoidance of literal actions among them (an avoided episode's ``close door to north``, ``held_avoidance``) waits for
a proposal it quotes when the guard is on, and what the block recommends is what the attempt's proposals
are measured against (``endorsed_actions``, ``procedure_steps``). The bench's ``langmem_plus`` design and
``LearningMiddleware(text_rules="at_step")`` both open an attempt here, so an agent behind the middleware is shown
what the bench's executor is shown.

Example:
    >>> from langmem_plus.records import Episode
    >>> ep = Episode(episode_id="e", namespace=("n",), kind="avoidance", goal_signature="g",
    ...              action_seq=["close door"], summary="`close door` fails with: that is already closed.")
    >>> start = open_triggered([ScoredItem(kind="episode", item=ep, score=1.0)], DEFAULT_CONFIG, budget=200)
    >>> start.block.text, [i.item_id for i in start.held], [i.item_id for i in start.fitted]
    ('', ['e'], ['e'])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from langmem_plus.config import DEFAULT_CONFIG, MemoryConfig
from langmem_plus.retrieval.context import Assembled, assemble, in_order
from langmem_plus.records import Hint, Lesson, RunRecord, ScoredItem
from langmem_plus.textgames.delivery import StepDelivery
from langmem_plus.textgames.shown import TRIGGERED_HEADER, endorsed_actions, held_avoidance, procedure_steps, short_line, shown_hint


@dataclass(frozen=True)
class TriggeredStart:
    """The opening of one triggered attempt (module docstring)."""

    fitted: tuple[ScoredItem, ...]
    """The items within the budget, in the block's order, held ones included: in force from the start (what the run
    activates before its first step); ``open_triggered`` of them opens the same attempt again."""
    block: Assembled
    """What is shown before the attempt: short lines under ``TRIGGERED_HEADER`` (``""`` when nothing is)."""
    held: tuple[ScoredItem, ...]
    """Avoidances of literal actions held for a proposal they quote (none with ``text_guard="off"``)."""

    @property
    def hints(self) -> list[Hint]:
        """The block as a reader reads it (``shown_hint``), each distinct text and precondition once."""
        said = {(h.text, h.precondition): h for h in map(shown_hint, self.block.shown)}
        return list(said.values())

    def delivery(self, rules: Sequence[Lesson], runs: Sequence[RunRecord], config: MemoryConfig) -> StepDelivery:
        """The attempt's ``StepDelivery``: the tool's text rules and runs, the held avoidances, and what the block
        endorses; its lines join the block's header when the block has one."""
        hints = self.hints
        return StepDelivery(rules, runs, config, avoidances=self.held, endorsed=endorsed_actions(hints),
                            procedures=procedure_steps(hints), header="" if self.block.text else TRIGGERED_HEADER)


def open_triggered(items: Sequence[ScoredItem], config: MemoryConfig = DEFAULT_CONFIG, *, budget: int) -> TriggeredStart:
    """The block of ``items`` (pre-run items other than text rules, best first) in ``budget`` tokens, those the guard
    holds left out of it (module docstring)."""
    def block_of(shown: Sequence[ScoredItem]) -> Assembled:
        return assemble(shown, budget=budget, config=config, relevance=in_order(shown), line=short_line,
                        header=TRIGGERED_HEADER)

    block = block_of(items)
    fitted = tuple(block.shown)
    if config.textgames.text_guard == "off":
        return TriggeredStart(fitted, block, ())
    held = tuple(i for i in fitted if held_avoidance(i))
    return TriggeredStart(fitted, block_of([i for i in fitted if i not in held]), held)


__all__ = ["TriggeredStart", "open_triggered"]
