"""using_up: a command runs saw use up its object is avoided on things the task does not ask it of.

A run keeps the commands it saw consume their object (``textgames.consume``, ``extras.run_consumed``): after the
step nothing names the thing any more. What is used up cannot be had back, so such a command is avoided on any thing
but the goal's own words, where no line of the task says the action and memory recommends no pattern matching it.
Not only things the task's text names: before the recipe is read nothing names the carrot it will list.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Sequence
from typing import ClassVar

from langmem_plus.learning.textmatch import Pattern, command_and_object, norm, says_line
from langmem_plus.records import RunRecord, Step, TaskSpec
from langmem_plus.textgames.delivery_rules.base import Firing, Known, inferred
from langmem_plus.textgames.extras import run_consumed
from langmem_plus.textgames.trigger import StepView

CONSUME_PREFIX = "consume:"
"""Id prefix of this rule's lines."""


def consuming_verbs(runs: Sequence[RunRecord], spared: Collection[str], min_runs: int) -> frozenset[str]:
    """The commands at least ``min_runs`` runs saw use up their object (``extras.run_consumed``), but for ``spared``
    (commands memory recommends over a placeholder or knows directed somewhere).

    Example:
        >>> runs = [RunRecord(run_id=i, namespace=("n",), seq=0, task_id=i, extras={"textgames": {"consumed": ["eat"]}}) for i in "ab"]
        >>> sorted(consuming_verbs(runs, (), 2)), sorted(consuming_verbs(runs, {"eat"}, 2)), sorted(consuming_verbs(runs, (), 3))
        (['eat'], [], [])
    """
    counts = Counter(verb for run in runs for verb in set(run_consumed(run)))
    return frozenset(v for v, n in counts.items() if n >= min_runs and v not in spared)


def consuming(verbs: Collection[str], view: StepView, known: Sequence[Pattern] = ()) -> list[Firing]:
    """The firings at this step: each valid action of a consuming command on a thing other than the goal's own words
    whose line the task does not say and that no pattern memory recommends outright (``known``) matches."""
    out: list[Firing] = []
    for action in view.valid:
        verb, thing = command_and_object(action)
        if verb in verbs and thing and not all(w in view.goal_words for w in norm(thing).split()) \
                and not says_line(norm(action), view.directing) \
                and not any(p.match(action) is not None for p in known):
            out.append((inferred(CONSUME_PREFIX, norm(action), action, None,
                                 "it uses up a thing the task does not ask it to"), action))
    return out


class UsingUp:
    """Avoids commands seen using up their object, off the task's things (module docstring)."""

    name: ClassVar[str] = "using_up"
    summary: ClassVar[str] = "a command runs saw use up its object is avoided off the task's things"
    prefix: ClassVar[str] = CONSUME_PREFIX

    def __init__(self, known: Known) -> None:
        self._verbs = consuming_verbs(known.runs, known.right_somewhere, known.config.lifecycle.min_occurrences)
        self._known = known.known

    def fire(self, view: StepView, task: TaskSpec, history: Sequence[Step]) -> list[Firing]:
        """``consuming`` at this step."""
        return consuming(self._verbs, view, self._known)


__all__ = ["CONSUME_PREFIX", "UsingUp", "consuming", "consuming_verbs"]
