"""undo: an action that would take back what the attempt did is avoided.

A run keeps the pairs of steps where one took back an earlier one (``textgames.undo``: ``close fridge`` after
``open fridge``, the valid actions back as they were; ``extras.run_undone``). Once ``min_occurrences`` runs recorded
a pair, an action it says takes back a step this attempt took without failing is avoided, unless the task's text
says it, or memory recommends its command or knows it directed somewhere. Such a step costs a move and undoes
progress: the efficiency channel.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Sequence
from typing import ClassVar

from langmem_plus.learning.textmatch import AFTER, Pattern, bind, norm, says_line
from langmem_plus.records import RunRecord, ScoredItem, Step, TaskSpec
from langmem_plus.textgames.delivery_rules.base import Firing, Known, inferred
from langmem_plus.textgames.extras import run_undone
from langmem_plus.textgames.trigger import StepView, head_verb

UNDO_PREFIX = "undo:"
"""Id prefix of this rule's lines."""


def undo_rules(runs: Sequence[RunRecord], commands_used: Collection[str], min_runs: int) -> list[tuple[Pattern, str]]:
    """The pairs, ``(undo pattern, done pattern)``, in order of how many runs recorded them (at least ``min_runs``),
    leaving out an undo whose command is in ``commands_used`` (memory recommends or knows it directed somewhere).

    Example:
        >>> runs = [RunRecord(run_id=i, namespace=("n",), seq=0, task_id=i,
        ...                  extras={"textgames": {"undone": [["close <X>", "open <X>"]]}}) for i in "ab"]
        >>> [(p.text, d) for p, d in undo_rules(runs, {"open"}, 2)], undo_rules(runs, {"close"}, 2), undo_rules(runs, (), 3)
        ([('close <X>', 'open <X>')], [], [])
    """
    counts = Counter(pair for run in runs for pair in set(run_undone(run)))
    out: list[tuple[Pattern, str]] = []
    for (undo, done), n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        pattern = Pattern.parse(undo)
        if n >= min_runs and pattern is not None and head_verb(pattern) not in commands_used:
            out.append((pattern, done))
    return out


def undo_item(undo: str, done: str) -> ScoredItem:
    """The avoidance of ``undo`` after ``done`` (patterns, or one action and what it takes back) as an item."""
    return inferred(UNDO_PREFIX, f"{undo} after {done}", undo, [f"{AFTER}{done}"],
                    "it takes back an earlier step of this attempt")


def undoing(rules: Sequence[tuple[Pattern, str]], view: StepView, history: Sequence[Step]) -> list[Firing]:
    """The firings at this step: each valid action a pair says takes back an action this attempt took without failing
    and that the task's text does not say. A pair none of whose actions here the task says is shown once as its
    patterns (``Avoid `close <X>` after `open <X>```), the reader binding them; else each action apart
    (``Avoid `close fridge` after `open fridge```)."""
    done = {norm(s.action) for s in history if not s.feedback.failed}
    out: list[Firing] = []
    seen: set[str] = set()
    for pattern, done_pattern in rules:
        fires: list[tuple[str, str]] = []
        said = False
        for action in view.valid:
            binding = pattern.match(action)
            bound = bind(done_pattern, binding) if binding is not None else None
            if bound is None or bound not in done:
                continue
            if says_line(norm(action), view.directing):
                said = True
            elif action not in seen:
                fires.append((action, bound))
        seen.update(a for a, _ in fires)
        out += [(undo_item(pattern.text, done_pattern) if not said else undo_item(a, d), a) for a, d in fires]
    return out


class Undo:
    """Avoids taking back what the attempt did (module docstring)."""

    name: ClassVar[str] = "undo"
    summary: ClassVar[str] = "an action that would take back what the attempt did is avoided"
    prefix: ClassVar[str] = UNDO_PREFIX

    def __init__(self, known: Known) -> None:
        recommended_anywhere = {head_verb(p) for l, p in known.parsed if not l.wrong}
        self._pairs = undo_rules(known.runs, known.right_somewhere | recommended_anywhere,
                                 known.config.lifecycle.min_occurrences)

    def fire(self, view: StepView, task: TaskSpec, history: Sequence[Step]) -> list[Firing]:
        """``undoing`` at this step."""
        return undoing(self._pairs, view, history)


__all__ = ["UNDO_PREFIX", "Undo", "undo_item", "undo_rules", "undoing"]
