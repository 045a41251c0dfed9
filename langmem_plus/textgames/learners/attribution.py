"""attribution: each teaching step becomes a rule about its action, in the situation the task's text gave it.

A terminal failure (the constraint channel) or a score lost is pinned on the step that carries it: its action
becomes an avoidance. A step that raised the score, and the step that made it possible, become recommendations.
The action is abstracted over what the task's text names (``cook <X> in oven``), and the lines that name the thing
and bear on the action are its conditions (``roast <X>``). An avoidance's situation is read by the first of
``learners.SITUATIONS`` that applies. A recommendation keeps the intersection of its conditions over every run that
taught it; an avoidance is kept per situation, and widened to every situation once memory also knows where the
action is right (a recommendation of the same pattern with a condition).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from langmem_plus.learning.textmatch import is_negative, norm_words
from langmem_plus.records import Step
from langmem_plus.textgames.entities import unasked_head
from langmem_plus.textgames.learners.base import RunLearning, Situation, SituationReader, text_lesson
from langmem_plus.textgames.rules import conditions_for, relevant_conditions


class Attribution:
    """Turns the run's teaching steps into avoidances and recommendations (module docstring)."""

    name: ClassVar[str] = "attribution"
    summary: ClassVar[str] = "each fatal or scoring step becomes a rule about its action, in its situation"

    def __init__(self, situations: Sequence[SituationReader] = ()) -> None:
        self.situations = tuple(situations)

    def _situation(self, run: RunLearning, step: Step, pattern: str, bindings: dict[str, str]) -> Situation | None:
        """The first reading of the fatal step's situation that applies, or None."""
        return next((s for s in (r.situation(run, step, pattern, bindings) for r in self.situations) if s is not None), None)

    def learn(self, run: RunLearning) -> None:
        """One rule per teaching step, merged with the stored one of the same id."""
        for step, avoid, pattern, bindings in run.teach:
            conds = conditions_for(bindings, run.lines, run.config.textgames.text_rule_max_conditions) if bindings else []
            conds = relevant_conditions(pattern, conds, run.verbs, run.directives)
            found = self._situation(run, step, pattern, bindings) if avoid else None
            if found is not None:
                pattern, conds = found.pattern, list(found.conditions)
            elif not run.lines and not all(w in run.goal_words for w in norm_words(pattern)[1:]):
                continue  # nothing read: a literal rule about things beyond the goal would be this task's fact
            if avoid:
                pattern = unasked_head(pattern, conds)
            general = (found is not None and found.general) or any(is_negative(c) for c in conds)
            wid = run.rid("avoid", pattern)  # the widened avoidance, once it exists
            if avoid and conds and not general and run.has(wid) is not None:
                conds = []  # already avoided everywhere: one lesson, not one per situation
            lid = run.rid("avoid", pattern, *conds) if avoid else run.rid("prefer", pattern)
            old = run.has(lid)
            if old is not None and old.applies_when is not None:  # same id: the shared situation
                conds = sorted(set(old.applies_when) & set(conds))
            run.out[lid] = text_lesson(run, lid, old, step, avoid, pattern, conds)
            known = run.has(run.rid("prefer", pattern))
            if avoid and conds and not general and known is not None and known.applies_when:  # the exception is known
                run.out[wid] = text_lesson(run, wid, run.has(wid), step, True, pattern, [])


__all__ = ["Attribution"]
