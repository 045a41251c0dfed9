"""Text rules as short lines of quoted data, and those lines read back.

Triggered delivery shows a rule as one line without its id (``- "Avoid `A` when the task says `B`"``): the
activations come from the items delivered, so no reader needs to cite one. Lines that differ only in their action
are one line (``Avoid `chop <X>`, `slice <X>` unless the task says so``). A reader that gets only the text (a chat
model's system message) reads each line back into a hint, its precondition split from its text
(``read_rule_line``), so it acts on the same hints a reader handed them directly would.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from langmem_plus.learning.textmatch import AFTER_WORDS, SAID_SO_WORDS, WHEN_WORDS
from langmem_plus.records import Hint

_ONE_ACTION = re.compile(r"(Prefer|Avoid) (`[^`]+`)")
"""A hint's text that is its lead word and one back-quoted action: lines of such hints can be joined."""
_RULE_TEXT = re.compile(rf"((?:Prefer|Avoid) `[^`]+`(?:, `[^`]+`)*) ((?:{AFTER_WORDS} `|{WHEN_WORDS} |{SAID_SO_WORDS}).*)",
                        re.DOTALL)
"""A rule line's text: its lead word and actions, then its precondition (how ``hints._lesson_hint`` opens one)."""


def rule_text(hint: Hint) -> str:
    """A hint's text and precondition as one sentence, as a rule line says it."""
    return hint.text + (f" {hint.precondition}" if hint.precondition else "")


def line_of(text: str) -> str:
    """``text`` as one line of quoted data: a JSON string, so it can neither leave its quotes nor start a line."""
    return f"- {json.dumps(text, ensure_ascii=False)}"


def joined_hint_lines(hints: Sequence[Hint]) -> list[str]:
    """The hints' lines, those that differ only in their action joined into one where the first stood; each line, and
    each action of a joined line, once.

    A reader takes the joined line as the lines it joins (a list of actions not joined as steps recommends, or
    avoids, each under the line's precondition), and each action costs its back-quotes instead of a line.

    Example:
        >>> joined_hint_lines([Hint(text="Avoid `chop <X>`", precondition=SAID_SO_WORDS, source_id="a"),
        ...                    Hint(text="Prefer `take knife`", source_id="b"),
        ...                    Hint(text="Avoid `slice <X>`", precondition=SAID_SO_WORDS, source_id="c")])
        ['- "Avoid `chop <X>`, `slice <X>` unless the task says so"', '- "Prefer `take knife`"']
    """
    groups: dict[tuple[str, str], dict[str, None]] = {}
    out: list[str | tuple[str, str]] = []
    for hint in hints:
        key = line_key(hint)
        if key is None:
            out.append(line_of(rule_text(hint)))
            continue
        if key not in groups:
            out.append(key)
        groups.setdefault(key, {})[hint.text[len(key[0]) + 1:]] = None  # an action repeated is said once
    lines = [line if isinstance(line, str) else
             line_of(" ".join([line[0], ", ".join(groups[line]), *([line[1]] if line[1] else [])])) for line in out]
    return list(dict.fromkeys(lines))


def line_key(hint: Hint) -> tuple[str, str] | None:
    """What a hint's line says beyond its one action (its lead word and its precondition), or None when its text is
    more than a lead word and one back-quoted action: lines with the same key differ only in their action."""
    m = _ONE_ACTION.fullmatch(hint.text)
    return (m.group(1), hint.precondition or "") if m else None


def read_rule_line(text: str, source_id: str = "") -> Hint:
    """A line's quoted text read back as a hint: a rule's precondition split from its actions; any other text whole.

    Example:
        >>> h = read_rule_line("Avoid `chop <X>`, `slice <X>` unless the task says so")
        >>> h.text, h.precondition
        ('Avoid `chop <X>`, `slice <X>`', 'unless the task says so')
        >>> read_rule_line("Avoid: `move west` fails with: the door is closed after dark").precondition is None
        True
    """
    m = _RULE_TEXT.fullmatch(text)
    return Hint(text=m.group(1), precondition=m.group(2), source_id=source_id) if m else Hint(text=text, source_id=source_id)


__all__ = ["joined_hint_lines", "line_key", "line_of", "read_rule_line", "rule_text"]
