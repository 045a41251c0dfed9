"""Text rules as short lines of quoted data, and those lines read back.

Triggered delivery shows a rule as one line without its id (``- "Avoid `A` when the task says `B`"``): the
activations come from the items delivered, so no reader needs to cite one. Lines that differ only in their action
are one line (``Avoid `chop <X>`, `slice <X>` unless the task says so``), and actions of such a line that differ in
one word are one action with that word's alternatives (``Avoid `cook <X> in oven/stove```, ``compact_actions``). A
reader that gets only the text (a chat model's system message) reads each line back into a hint, its precondition
split from its text and its alternatives spelt out (``read_rule_line``), so it acts on the same hints a reader
handed them directly would.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from langmem_plus.conditions import AFTER_WORDS, SAID_SO_WORDS, WHEN_WORDS
from langmem_plus.learning.textmatch import quoted_actions
from langmem_plus.records import Hint

_ONE_ACTION = re.compile(r"(Prefer|Avoid) (`[^`]+`)")
"""A hint's text that is its lead word and one back-quoted action: lines of such hints can be joined."""
_ACTIONS = re.compile(r"(?:Prefer|Avoid) `[^`]+`(?:, `[^`]+`)*")
"""A hint's text that is its lead word and a list of back-quoted actions (a joined line's, without its precondition)."""
_ALTERNATIVE = re.compile(r"[A-Za-z][A-Za-z'-]*")
"""A word that may stand as one of a compacted action's alternatives: letters (``oven``), never a path or a number."""
_ALTERNATIVES = re.compile(rf"{_ALTERNATIVE.pattern}(?:/{_ALTERNATIVE.pattern})+")
"""A word of a compacted action: its alternatives, ``/`` between them (``oven/stove``)."""
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
    avoids, each under the line's precondition), and each action costs its back-quotes instead of a line, or one
    word where it differs from another in one word (``compact_actions``).

    Example:
        >>> joined_hint_lines([Hint(text="Avoid `chop <X>`", precondition=SAID_SO_WORDS, source_id="a"),
        ...                    Hint(text="Prefer `take knife`", source_id="b"),
        ...                    Hint(text="Avoid `slice <X>`", precondition=SAID_SO_WORDS, source_id="c"),
        ...                    Hint(text="Avoid `eat red apple`", precondition=SAID_SO_WORDS, source_id="d")])
        ['- "Avoid `chop/slice <X>`, `eat red apple` unless the task says so"', '- "Prefer `take knife`"']
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
             line_of(" ".join([line[0], ", ".join(compact_actions(list(groups[line]))), *([line[1]] if line[1] else [])]))
             for line in out]
    return list(dict.fromkeys(lines))


def compact_actions(actions: Sequence[str]) -> list[str]:
    """Back-quoted actions, those that differ in one word (the same word) written once, that word's alternatives
    joined by ``/``: a reader of the joined line takes ``cook <X> in oven/stove`` as both actions (``read_rule_line``
    spells them out), and the action costs one word more instead of a second action.

    Only words of letters are alternatives (``_ALTERNATIVE``), so reading a compacted line back gives exactly the
    actions joined. Like ``<X>``, a slash between words of letters is notation in a line's actions: an action with
    one of its own is left as it is, never merged, but a reader takes it as alternatives.

    Example:
        >>> compact_actions(["`cook <X> in oven`", "`eat <X>`", "`cook <X> in stove`", "`cook <X> in barbeque`"])
        ['`cook <X> in oven/stove/barbeque`', '`eat <X>`']
        >>> compact_actions(["`chop <X>`", "`dice <X>`", "`open a/b`", "`open c`"])
        ['`chop/dice <X>`', '`open a/b`', '`open c`']
    """
    out: list[list[str]] = []  # each action's words, a compacted word as its alternatives joined
    at: dict[int, int | None] = {}  # an action of ``out`` that may take alternatives -> the word they are of
    for quoted in actions:
        words = quoted[1:-1].split(" ")
        if "/" in quoted or not (quoted.startswith("`") and quoted.endswith("`")):
            out.append(words)  # said as it is, joined with nothing
            continue
        for k, word in at.items():
            differ = [i for i, (a, b) in enumerate(zip(out[k], words)) if a != b]
            if (len(out[k]) == len(words) and len(differ) == 1 and word in (None, differ[0])
                    and _ALTERNATIVE.fullmatch(words[differ[0]])
                    and all(map(_ALTERNATIVE.fullmatch, out[k][differ[0]].split("/")))):
                out[k][differ[0]] += "/" + words[differ[0]]  # the word's alternatives so far, and this one
                at[k] = differ[0]
                break
        else:
            at[len(out)] = None
            out.append(words)
    return ["`" + " ".join(words) + "`" for words in out]


def spelt_out(text: str) -> str:
    """``text`` with each back-quoted action of compacted alternatives (``compact_actions``) written as the actions it
    stands for; any other text as it is.

    Example:
        >>> spelt_out("Avoid `cook <X> in oven/stove`, `eat <X>`")
        'Avoid `cook <X> in oven`, `cook <X> in stove`, `eat <X>`'
        >>> spelt_out("Use `cat a/b` instead of `cat a`")
        'Use `cat a/b` instead of `cat a`'
    """
    if not _ACTIONS.fullmatch(text) or "/" not in text:
        return text
    spelt: list[str] = []
    for action in quoted_actions(text):  # every one: the text is a lead word and its list of actions
        words = action.split(" ")
        slashed = [i for i, w in enumerate(words) if "/" in w]
        if len(slashed) != 1 or not _ALTERNATIVES.fullmatch(words[slashed[0]]):
            spelt.append(f"`{action}`")
            continue
        at = slashed[0]
        spelt += [f"`{' '.join([*words[:at], alt, *words[at + 1:]])}`" for alt in words[at].split("/")]
    return f"{text.split(' ', 1)[0]} {', '.join(spelt)}"


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
        >>> read_rule_line("Avoid `chop/dice <X>` unless the task says so").text
        'Avoid `chop <X>`, `dice <X>`'
        >>> read_rule_line("Avoid: `move west` fails with: the door is closed after dark").precondition is None
        True
    """
    m = _RULE_TEXT.fullmatch(text)
    if m:
        return Hint(text=spelt_out(m.group(1)), precondition=m.group(2), source_id=source_id)
    return Hint(text=spelt_out(text), source_id=source_id)


__all__ = ["compact_actions", "joined_hint_lines", "line_key", "line_of", "read_rule_line", "rule_text", "spelt_out"]
