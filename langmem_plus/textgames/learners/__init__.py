"""The learning mechanisms of the text-game plugin: named, switchable, each in its own module.

``textgames.learn.learn_text_rules`` reads a finished run once (``base.RunLearning``) and runs ``PIPELINE`` over it
in order: ``attribution`` turns each teaching step into a rule, reading an avoidance's situation with the first of
``SITUATIONS`` that applies; ``effects`` adds what the game said commands did; ``revision`` rewrites stored
avoidances with what memory knows now; the three kin mechanisms extend what one command taught to its kind; ``enablers`` recommends the step
that makes a directed command possible.
``MemoryConfig.textgames.text_learners_off`` (``bench env --without NAME``) switches any of them off by name but
``attribution``; ``docs/text-games.md`` gives each one's reasons and the ablation.
"""

from __future__ import annotations

from langmem_plus.config import MemoryConfig
from langmem_plus.textgames.learners.attribution import Attribution
from langmem_plus.textgames.learners.base import Learner, RunLearning, SituationReader
from langmem_plus.textgames.learners.directed_kin import DirectedKin
from langmem_plus.textgames.learners.effects import Effects
from langmem_plus.textgames.learners.enablers import Enablers
from langmem_plus.textgames.learners.goal_directed import GoalDirected
from langmem_plus.textgames.learners.goal_role import GoalRole
from langmem_plus.textgames.learners.revision import Revision
from langmem_plus.textgames.learners.undirected import Undirected
from langmem_plus.textgames.learners.undirected_kin import UndirectedKin
from langmem_plus.textgames.learners.unnamed import Unnamed
from langmem_plus.textgames.learners.widened_kin import WidenedKin
from langmem_plus.textgames.switches import switched_off

SITUATIONS: tuple[type[SituationReader], ...] = (Undirected, GoalDirected, Unnamed, GoalRole)
"""The readings of a fatal step's situation, in the order ``attribution`` tries them."""

PIPELINE: tuple[type[Learner], ...] = (Attribution, Effects, Revision, UndirectedKin, DirectedKin, WidenedKin, Enablers)
"""The mechanisms in the order they run over a finished run."""

SWITCHABLE_LEARNERS: dict[str, str] = {
    **{s.name: s.summary for s in SITUATIONS}, **{m.name: m.summary for m in PIPELINE[1:]}}
"""Each mechanism that can be switched off, and what it learns."""


def learners_off(config: MemoryConfig) -> frozenset[str]:
    """The switched-off mechanisms of ``config``.

    Raises:
        InvalidArgument: a name that is not in ``SWITCHABLE_LEARNERS``.
    """
    return switched_off(config.textgames.text_learners_off, SWITCHABLE_LEARNERS, "learning mechanism")


def pipeline(config: MemoryConfig) -> list[Learner]:
    """The mechanisms in force, in order."""
    off = learners_off(config)
    situations = [s() for s in SITUATIONS if s.name not in off]
    return [Attribution(situations), *(m() for m in PIPELINE[1:] if m.name not in off)]  # type: ignore[call-arg]


__all__ = ["PIPELINE", "SITUATIONS", "SWITCHABLE_LEARNERS", "Learner", "RunLearning", "learners_off", "pipeline"]
