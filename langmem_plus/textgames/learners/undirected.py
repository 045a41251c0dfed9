"""undirected: a fatal directive verb the task did not direct is avoided wherever the task does not say it.

A directive verb (a command task texts open lines with: ``chop the red apple``) is right where it is directed and,
as far as one fatal run shows, fatal where it is not. So its situation is not what else the task said (``fry <X>``)
but that the task did not say it: ``chop <X>`` when the task does not say ``chop <X>`` (``!chop <X>``), one rule
for every situation (``direct.undirected``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from langmem_plus.learning.textmatch import directing_lines
from langmem_plus.records import Step
from langmem_plus.textgames.direct import undirected
from langmem_plus.textgames.learners.base import RunLearning, Situation


class Undirected:
    """Reads a fatal directive verb's situation as "the task does not say it" (module docstring)."""

    name: ClassVar[str] = "undirected"
    summary: ClassVar[str] = "a fatal directive verb the task did not direct is avoided wherever undirected"

    def situation(self, run: RunLearning, step: Step, pattern: str, bindings: Mapping[str, str]) -> Situation | None:
        """``!<pattern>``, or None when the verb is no directive verb, the pattern binds nothing, or a line says it."""
        when = undirected(pattern, bindings, directing_lines(run.goal, run.lines), run.directives)
        return None if when is None else Situation(pattern, when, general=True)


__all__ = ["Undirected"]
