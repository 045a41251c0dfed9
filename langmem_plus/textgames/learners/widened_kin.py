"""widened_kin: once one command is avoided everywhere but its exception, its siblings are too.

An avoidance is widened to every situation once memory also knows where the action is right (``attribution``):
"fatal unless the task says roast". Its siblings (``cook <X> in stove`` beside ``cook <X> in oven``) that memory
knows right under a condition of their own are widened the same way (``direct.widened_kin``): the reader lets the
more specific recommendation win.
"""

from __future__ import annotations

from typing import ClassVar

from langmem_plus.textgames.direct import widened_kin
from langmem_plus.textgames.learners.base import RunLearning, derived
from langmem_plus.textgames.rules import live_text_rules


class WidenedKin:
    """Widens the siblings of a widened avoidance (module docstring)."""

    name: ClassVar[str] = "widened_kin"
    summary: ClassVar[str] = "once one command is avoided everywhere but its exception, its siblings are too"

    def learn(self, run: RunLearning) -> None:
        """A widened avoidance per sibling known right under its own condition."""
        for lid, pattern, source in widened_kin(live_text_rules([*run.stored, *run.out.values()]), run.has, run.rid):
            run.out[lid] = derived(source, lid, True, pattern, [], run.now)


__all__ = ["WidenedKin"]
