"""guard: what the agent would not need is held back until it proposes an action a held rule bears on.

Most of a step's rules concern actions the agent was not going to take; listed up front they cost tokens and crowd
what matters. So the guard shows only what was paid for already, holds each standing avoidance until the agent
proposes the action it stands on (``check``), and, with ``text_guard="all"``, holds the step's recommendations
until the agent proposes something else. An answer brings what concerns the proposal: the alike patterns of the same
command or on the same things, joined in one line, and the recommendations a shown pattern would otherwise override.
Pre-run avoidances wait for a proposal they quote. Every rule standing is in force (activated) whether shown or held.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import ClassVar, Protocol

from langmem_plus.learning.textmatch import SLOT, Pattern, norm
from langmem_plus.records import Hint, ScoredItem, Step
from langmem_plus.textgames.delivery_rules.base import Firing
from langmem_plus.textgames.shown import as_pattern, endorsed_step, grounded, held_avoidance, join_key, rule_line, short_line


class Show(Protocol):
    """``StepDelivery._show``: items as hints within the budget, their lines and activations recorded."""

    def __call__(self, items: list[ScoredItem], step: int, *, line: Callable[[ScoredItem], str] = ...) -> list[Hint]: ...


class Guard:
    """Holds a step's rules for the agent's proposal (module docstring).

    Args:
        show: How a shown item becomes a hint (the delivery's budget and bookkeeping).
        paid: Each shown rule's own line so far (the delivery's, shared): what costs nothing to show again.
        delivered: Lesson id -> first step in force (the delivery's, shared).
        avoidances: Pre-run items whose hint avoids literal actions (``shown.held_avoidance``).
        endorsed: Actions memory recommended outright before the run (``shown.endorsed_actions``).
        procedures: The steps of the procedures memory recommended before the run (``shown.procedure_steps``).
        lazy: Hold recommendations too (``text_guard="all"``).
    """

    name: ClassVar[str] = "guard"
    summary: ClassVar[str] = "what the agent would not need is held for its proposal"

    def __init__(self, show: Show, paid: set[str], delivered: dict[str, int], *, avoidances: Sequence[ScoredItem] = (),
                 endorsed: Collection[str] = (), procedures: Sequence[Sequence[Pattern]] = (), lazy: bool = True,
                 inferred: tuple[str, ...] = ()) -> None:
        self._show, self._paid, self._delivered = show, paid, delivered
        self._endorsed, self._procedures, self._lazy, self._inferred = endorsed, procedures, lazy, inferred
        self._pre_held = [(it, ps) for it in avoidances for ps in [held_avoidance(it)] if ps]
        """Pre-run avoidances not shown yet, each with the actions its line quotes."""
        self._pre_paid: list[Hint] = []
        """Pre-run avoidances shown at a proposal; paid for, they are handed over at every later step."""
        self._held_at = -1
        """The step the held rules are for (the history's length then); ``check`` answers only there."""
        self._held_for: Step | None = None
        """The last step of that history (another attempt's history of the same length gets nothing)."""
        self._held: dict[str, ScoredItem] = {}
        """The avoidances standing at that step and not shown yet, by the action each stands on (normalised)."""
        self._held_recs: dict[str, ScoredItem] = {}
        """That step's recommendations not shown yet, grounded (``lazy``)."""
        self._open: frozenset[str] = frozenset()
        """The actions that step's recommendations win on and the attempt has not taken."""
        self._recs: dict[str, tuple[ScoredItem, str]] = {}
        """That step's winning recommendation per action (normalised), with the action as offered."""
        self._fires: dict[str, set[str]] = {}
        """Per rule id, the actions (normalised) it fired on at that step."""

    def step(self, winners: list[Firing], fired: list[Firing], history: Sequence[Step]) -> list[Hint]:
        """What is shown of one step before the agent proposes; the rest is held for ``check``."""
        step = len(history)
        self._held_at, self._held_for, self._fires = step, history[-1] if history else None, {}
        for it, a in fired:
            self._fires.setdefault(it.item_id, set()).add(norm(a))
        for it, _ in winners:  # in force whether shown or held: the run's activations do not depend on the guard
            if not it.item_id.startswith(self._inferred):
                self._delivered.setdefault(it.item_id, step)
        self._recs = {norm(a): (it, a) for it, a in winners if not it.item.wrong}  # type: ignore[union-attr]
        held = {norm(a): it if as_pattern(it) else grounded(it, a) for it, a in winners if it.item.wrong}  # type: ignore[union-attr]
        paid = {it.item_id: it for it in held.values() if rule_line(it) in self._paid}  # shown before: costs nothing now
        self._held = {a: it for a, it in held.items() if it.item_id not in paid}
        covered = {a for pid in paid for a in self._fires.get(pid, ())}  # a pattern shown binds these too
        recs = [(a, self._rec(a, bare=a not in covered)) for a in self._recs]
        taken = {norm(s.action) for s in history}
        self._open = frozenset(a for a in self._recs if a not in taken)
        # a recommendation a shown pattern covers is shown with it: held, the pattern alone would forbid its action
        self._held_recs = {a: r for a, r in recs if rule_line(r) not in self._paid and a not in covered} if self._lazy else {}
        shown = [*paid.values(), *(r for a, r in recs if a not in self._held_recs)]
        shown.sort(key=lambda it: it.item_id.startswith(self._inferred))  # stable: what memory stored first
        return [*self._show(shown, step), *self._pre_paid]  # what was answered from before the run stays in view

    def _rec(self, action: str, *, bare: bool) -> ScoredItem:
        """The step's recommendation on ``action`` (normalised), grounded on the action as offered; its lines bound
        unless ``bare``."""
        it, offered = self._recs[action]
        return grounded(it, offered, bare=bare)

    def check(self, history: Sequence[Step], action: str) -> list[Hint]:
        """What was held back at this step that bears on ``action``, the agent's proposal, shown now.

        The avoidance that stands on ``action`` (with, when it is a pattern, the held patterns whose lines differ from
        its line only in their action, ``_alike``, and the recommendations those patterns would otherwise override,
        their lines bound); else, when ``lazy``, the step's recommendations when ``action`` is none of them. ``[]``
        when nothing bears on it or ``history`` is not the step last delivered. Each is returned once per step.
        """
        last = history[-1] if history else None
        if len(history) != self._held_at or last != self._held_for:
            return []
        act = norm(action)
        before = next((e for e in self._pre_held if any(p.match(action) is not None for p in e[1])), None)
        if before is not None:  # an avoidance from before the run quoting the proposal
            self._pre_held.remove(before)
            answer = self._show([before[0]], len(history), line=short_line)
            self._pre_paid += answer
            return answer
        item = self._held.pop(act, None)
        if item is not None:
            alike = [item, *self._alike(item)]  # one line for them all (``shown.joined_lines``)
            reach = {a for it in alike if as_pattern(it) for a in self._fires.get(it.item_id, ())}
            bound = [a for a in self._recs if a in reach]
            answer = self._show([*alike, *(self._rec(a, bare=False) for a in bound)], len(history))
            shown = [it for it in alike if rule_line(it) in self._paid]  # what the budget left out stays held
            ids = {item.item_id, *(it.item_id for it in shown)}
            self._held = {a: it for a, it in self._held.items() if it.item_id not in ids}
            reached = {a for it in shown if as_pattern(it) for a in self._fires.get(it.item_id, ())}
            self._held_recs = {a: r for a, r in self._held_recs.items() if a not in reached}  # they went with it, bound
            return answer
        endorsed = ((act in self._endorsed and all(norm(s.action) != act for s in history))
                    or endorsed_step(self._procedures, history, action))
        if self._held_recs and self._open and act not in self._open and not endorsed:
            recs, self._held_recs = list(self._held_recs.values()), {}
            return self._show(recs, len(history))
        return []

    def _alike(self, item: ScoredItem) -> list[ScoredItem]:
        """The held avoidances that go with ``item``, a pattern answered at a proposal: the other patterns whose lines
        differ from its line only in their action (``shown.join_key``) and that concern the proposal, the same command
        (``cook <X> in stove`` beside ``cook <X> in oven``) or another on the same things (``slice <X>`` beside
        ``chop <X>``); joined into its line each costs its action alone. ``eat <X>`` is no concern of an oven."""
        def pattern(it: ScoredItem) -> bool:  # shown as its pattern, not grounded on one action
            return as_pattern(it) and SLOT.search(str(it.item.wrong)) is not None  # type: ignore[union-attr]

        def verb_rest(it: ScoredItem) -> tuple[str, str]:
            verb, _, rest = str(it.item.wrong).partition(" ")  # type: ignore[union-attr]
            return verb, rest

        key = join_key(item) if pattern(item) else None
        if key is None:
            return []
        verb, rest = verb_rest(item)
        alike = {it.item_id: it for it in self._held.values() if it.item_id != item.item_id and pattern(it)
                 and join_key(it) == key and (verb_rest(it)[0] == verb or verb_rest(it)[1] == rest)}
        return list(alike.values())


__all__ = ["Guard", "Show"]
