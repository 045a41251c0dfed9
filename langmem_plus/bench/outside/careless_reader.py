"""The careless cook's reader of memory's text: backquoted forms after "Avoid" or "Prefer", taken at face value.

It looks at every line of the system messages and of the latest tool answer that starts with ``- "``:
forms after "Avoid"/"Don't" are warnings, forms after "Prefer"/"start with"/"then" or before "instead of"
are recommendations. Conditions ("after ...", "unless ...", "when ...") are not read: a warned form is
skipped always. ``<...>``-style slots match any words and ``a/b`` either word.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

NOTE_START = '- "'
"""How a line of memory's notes starts."""
QUOTED = re.compile(r"`([^`]+)`")
"""A backquoted form."""
SLOT = re.compile(r"^<[^>]*>$")
"""A placeholder in a form: any words."""
WARN_WORDS = ("avoid", "don't", "do not", "never")
"""A note starting with one of these warns."""
RECOMMEND_WORDS = ("prefer", "start with", "use", "try")
"""A note starting with one of these recommends."""
CONDITION_CUT = re.compile(r"\s(?:after|unless|when|if|before)\s|\(", re.IGNORECASE)
"""Where a note's condition begins: the careless reader drops everything from there on."""


def loose_pattern(form: str) -> re.Pattern[str]:
    """A form as a whole-command regex: slots match any words, ``a/b`` matches either word."""
    parts = []
    for token in form.split():
        if SLOT.match(token):
            parts.append(r".+")
        elif "/" in token:
            parts.append("(?:" + "|".join(re.escape(t) for t in token.split("/") if t) + ")")
        else:
            parts.append(re.escape(token))
    return re.compile(r"\s+".join(parts), re.IGNORECASE)


@dataclass
class LooseNotes:
    """Commands memory warns against and commands it recommends, as whole-command patterns."""

    warned: list[re.Pattern[str]] = field(default_factory=list)
    recommended: list[re.Pattern[str]] = field(default_factory=list)

    def warns(self, command: str) -> bool:
        """Whether some warning's form is the command."""
        return any(p.fullmatch(command.strip()) for p in self.warned)

    def recommends(self, command: str) -> bool:
        """Whether some recommendation's form is the command."""
        return any(p.fullmatch(command.strip()) for p in self.recommended)


def read_loosely(system: Sequence[str], answers: Sequence[str]) -> LooseNotes:
    """Read the notes in the system messages and in the latest tool answer; conditions are cut off unread."""
    notes = LooseNotes()
    for block in [*system, *answers]:
        for raw in block.splitlines():
            line = raw.strip()
            if not line.startswith(NOTE_START):
                continue
            text = line[len(NOTE_START):].rstrip('"').strip()
            lower = text.lower()
            head = CONDITION_CUT.split(text, maxsplit=1)[0]
            if " instead of " in lower:
                good, _, bad = head.partition(" instead of ") if " instead of " in head else (text, "", "")
                notes.recommended += [loose_pattern(f) for f in QUOTED.findall(good)]
                notes.warned += [loose_pattern(f) for f in QUOTED.findall(bad)]
            elif lower.startswith(WARN_WORDS):
                notes.warned += [loose_pattern(f) for f in QUOTED.findall(head)]
            elif lower.startswith(RECOMMEND_WORDS):
                notes.recommended += [loose_pattern(f) for f in QUOTED.findall(head)]
    return notes
