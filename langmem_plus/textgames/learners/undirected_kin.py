"""undirected_kin: once one directive verb is avoided where undirected, its kin are avoided where undirected too.

Directive verbs that direct something done to a thing (``chop``, ``slice``, ``dice``: condition lines open with
them, or a step offered them together as an instrument's commands) share their kind of mistake. Once one of them
is avoided where the task does not say it (or recommended where it does), every other such verb memory knows gets
the same undirected avoidance (``direct.extend_to_kin``), with the source's runs but counters of its own.
"""

from __future__ import annotations

from typing import ClassVar

from langmem_plus.learning.textmatch import UNNAMED
from langmem_plus.textgames.direct import extend_to_kin
from langmem_plus.textgames.learners.base import RunLearning, derived


class UndirectedKin:
    """Extends an undirected avoidance to the directive verb's kin (module docstring)."""

    name: ClassVar[str] = "undirected_kin"
    summary: ClassVar[str] = "once one directive verb is avoided where undirected, its kin are avoided where undirected"

    def learn(self, run: RunLearning) -> None:
        """An undirected avoidance per kin not yet avoided."""
        for lid, pattern, source in extend_to_kin(run.has, run.directives, run.about_things(), run.rid):
            run.out[lid] = derived(source, lid, True, pattern, [f"{UNNAMED}{pattern}"], run.now)


__all__ = ["UndirectedKin"]
