"""enablers: a step that first offered a directive command is recommended where the task directs that command.

Some commands a task's text directs are not offered until another step makes them possible: the game offers
``slice <X> with knife`` only once the knife is held. A run shows that whenever a step first offered a directive
verb's commands on things other than its own object (``direct.first_offered``), whether or not the run went on to
use them, so even an agent that never cut anything can learn where cutting comes from. The step is recommended
where a line of the task's text opens with that verb (``take knife`` when the task says ``slice``); it fires only
while the step is offered, so it falls silent once taken.
"""

from __future__ import annotations

from typing import ClassVar

from langmem_plus.learning.textmatch import SLOT, norm_words
from langmem_plus.textgames.direct import first_offered
from langmem_plus.textgames.learners.base import RunLearning, text_lesson
from langmem_plus.textgames.rules import abstract_action


class Enablers:
    """Recommends the step that makes a directive command possible where the task directs it (module docstring)."""

    name: ClassVar[str] = "enablers"
    summary: ClassVar[str] = "a step that first offered a directive command is recommended where the task directs it"

    def learn(self, run: RunLearning) -> None:
        """A recommendation per (enabling step, directive verb) the run showed, with the verb as its condition."""
        first_valid = [str(a) for a in run.task.context.get("valid_actions") or []]
        for step, new in first_offered(run.ordered, first_valid):
            if step.feedback.failed:
                continue
            own = norm_words(step.action)[1:]
            verbs = {words[0] for words in map(norm_words, new) if len(words) >= 2 and words[1:] != own} & run.directives
            if not verbs:
                continue
            pattern = abstract_action(step.action, run.lines, run.goal, run.config)[0]
            if SLOT.search(pattern) or pattern.split()[0] in run.directives:
                continue  # a step on the task's own things, or itself directed: other mechanisms speak for it
            for verb in sorted(verbs):
                lid = run.rid("enable", pattern, verb)
                run.out[lid] = text_lesson(run, lid, run.has(lid), step, False, pattern, [verb])


__all__ = ["Enablers"]
