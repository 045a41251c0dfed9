"""directed_kin: the kin of a directive verb recommended where directed are recommended where directed too.

The other side of ``undirected_kin``: a directive verb memory recommends where the task says it (``slice <X>`` when
the task says ``slice <X>``) says the same of the verbs of its kind, so each is recommended where the task says it
(``direct.directed_kin``), with the source's runs but counters of its own.
"""

from __future__ import annotations

from typing import ClassVar

from langmem_plus.textgames.direct import directed_kin
from langmem_plus.textgames.learners.base import RunLearning, derived


class DirectedKin:
    """Recommends a directive verb's kin where the task directs them (module docstring)."""

    name: ClassVar[str] = "directed_kin"
    summary: ClassVar[str] = "the kin of a directive verb recommended where directed are recommended where directed too"

    def learn(self, run: RunLearning) -> None:
        """A directed recommendation per kin not yet recommended."""
        for lid, pattern, source in directed_kin(run.has, run.directives, run.about_things(), run.rid):
            run.out[lid] = derived(source, lid, False, pattern, [pattern], run.now)


__all__ = ["DirectedKin"]
