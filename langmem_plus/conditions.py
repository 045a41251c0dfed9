"""Typed conditions of a text rule: what must hold of the task's text or of the attempt for the rule to bear on it.

A condition is one of five kinds, each with a compact stored form (``Lesson.applies_when`` keeps that form, so
stores written before open unchanged) and one English rendering in a hint's precondition:

============== ================ ==============================================================
kind            stored form      in a precondition
============== ================ ==============================================================
``Says``        ``roast <X>``    ``when the task says `roast <X>```
``Listed``      ``<X>``          ``when the task says `<X>``` (names it and says nothing more)
``NotNamed``    ``!<X>``         ``when the task does not name `<X>```
``NotSaid``     ``!chop <X>``    ``when the task does not say `chop <X>```, or, of an avoidance's own
                                 pattern, ``unless the task says so``
``After``       ``^open <X>``    ``after `open <X>```
============== ================ ==============================================================

``parse`` and ``encode`` are the stored form's codec; ``render_precondition`` is the one renderer and
``read_precondition`` the one reader, its exact inverse (``tests/test_conditions.py`` proves it over generated
conditions). A condition's text is a line of words and placeholders (``<X>``), compared after normalisation.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

SLOT = re.compile(r"<([A-Z])>")
"""A placeholder: ``<X>``, ``<Y>`` ..."""
UNNAMED = "!"
"""Stored-form prefix of a negative condition (``NotNamed``, ``NotSaid``)."""
AFTER = "^"
"""Stored-form prefix of a history condition (``After``)."""
WHEN_WORDS = "when the task"
"""How a precondition opens its conditions on the task's text."""
SAYS_WORDS = "says"
"""Introduces ``Says`` and ``Listed`` conditions in a precondition (each back-quoted after it)."""
NOT_NAMED_WORDS = "does not name"
"""Introduces ``NotNamed`` conditions in a precondition."""
NOT_SAID_WORDS = "does not say"
"""Introduces ``NotSaid`` conditions in a precondition."""
SAID_SO_WORDS = "unless the task says so"
"""A precondition whose one condition on the task's text is ``NotSaid`` of the avoidance's own pattern, in a third of
the tokens; a reader takes it as that condition on each pattern of the line."""
AFTER_WORDS = "after"
"""Introduces ``After`` conditions in a precondition."""


@dataclass(frozen=True)
class Says:
    """A line of the task's text says ``line`` (its placeholders bound): ``roast <X>``."""

    line: str


@dataclass(frozen=True)
class Listed:
    """The task's text names the thing bound to ``slot`` and says nothing more about it."""

    slot: str


@dataclass(frozen=True)
class NotNamed:
    """Neither the goal nor the task's text names the thing bound to ``slot``."""

    slot: str


@dataclass(frozen=True)
class NotSaid:
    """No clause of the goal and no line of the task's text says ``line`` (bound)."""

    line: str


@dataclass(frozen=True)
class After:
    """The attempt took ``action`` (bound) earlier, and it did not fail."""

    action: str


Condition = Says | Listed | NotNamed | NotSaid | After
"""A text rule's condition."""


def parse(text: str) -> Condition:
    """The condition a stored form says (``roast <X>``, ``<X>``, ``!<X>``, ``!chop <X>``, ``^open <X>``).

    Raises:
        ValueError: an empty condition, or a prefix with nothing after it.

    Example:
        >>> [parse(t) for t in ("roast <X>", "<X>", "!<X>", "!chop <X>", "^open <X>")]  # doctest: +NORMALIZE_WHITESPACE
        [Says(line='roast <X>'), Listed(slot='X'), NotNamed(slot='X'), NotSaid(line='chop <X>'), After(action='open <X>')]
    """
    raw = text.strip()
    for prefix in (UNNAMED, AFTER):
        if raw.startswith(prefix):
            rest = raw[len(prefix):].strip()
            if not rest:
                raise ValueError(f"condition {text!r} has nothing after {prefix!r}")
            if prefix == AFTER:
                return After(rest)
            slot = SLOT.fullmatch(rest)
            return NotNamed(slot.group(1)) if slot else NotSaid(rest)
    if not raw:
        raise ValueError("an empty condition")
    slot = SLOT.fullmatch(raw)
    return Listed(slot.group(1)) if slot else Says(raw)


def encode(condition: Condition) -> str:
    """The stored form of ``condition`` (``parse``'s inverse)."""
    match condition:
        case Says(line):
            return line
        case Listed(slot):
            return f"<{slot}>"
        case NotNamed(slot):
            return f"{UNNAMED}<{slot}>"
        case NotSaid(line):
            return f"{UNNAMED}{line}"
        case After(action):
            return f"{AFTER}{action}"
    raise TypeError(f"not a condition: {condition!r}")


def _quoted(items: Sequence[str], joiner: str) -> str:
    return f" {joiner} ".join(f"`{item}`" for item in items)


def render_precondition(conditions: Sequence[Condition], avoided: str | None = None) -> str | None:
    """A hint's precondition for ``conditions`` (module docstring), or None when there are none.

    History first (a cut to a hint's length keeps it), then the task's lines: what it says, what it does not name,
    what it does not say. ``avoided``: the avoidance's own pattern; when the only condition on the task's text is
    that it does not say that pattern, the precondition says ``unless the task says so``.

    Example:
        >>> render_precondition([Says("roast <X>"), NotNamed("Y")])
        'when the task says `roast <X>` and does not name `<Y>`'
        >>> render_precondition([NotSaid("chop <X>"), After("take knife")], avoided="chop <X>")
        'after `take knife` unless the task says so'
    """
    done = [c.action for c in conditions if isinstance(c, After)]
    says = [encode(c) for c in conditions if isinstance(c, (Says, Listed))]
    nots = [encode(c)[len(UNNAMED):] for c in conditions if isinstance(c, NotNamed)]
    unsaid = [c.line for c in conditions if isinstance(c, NotSaid)]
    parts = ([f"{SAYS_WORDS} {_quoted(says, 'and')}"] if says else []) + (
        [f"{NOT_NAMED_WORDS} {_quoted(nots, 'or')}"] if nots else []) + (
        [f"{NOT_SAID_WORDS} {_quoted(unsaid, 'or')}"] if unsaid else [])
    own = avoided is not None and not says and not nots and unsaid == [avoided]
    when = [SAID_SO_WORDS] if own else [f"{WHEN_WORDS} {' and '.join(parts)}"] if parts else []
    return " ".join([*([f"{AFTER_WORDS} {_quoted(done, 'and')}"] if done else []), *when]) or None


_MARKER = re.compile(rf"({SAID_SO_WORDS})|\b({SAYS_WORDS}|{NOT_NAMED_WORDS}|{NOT_SAID_WORDS}|{AFTER_WORDS})\b|`([^`]*)`")
"""A precondition's markers (which kind the back-quoted lines after one are) and its back-quoted lines; what is
back-quoted is a line, whatever words it holds."""
_PREFIX = {SAYS_WORDS: "", NOT_NAMED_WORDS: UNNAMED, NOT_SAID_WORDS: UNNAMED, AFTER_WORDS: AFTER}


@dataclass(frozen=True)
class Precondition:
    """A precondition as read back: its conditions, and whether it said ``unless the task says so``."""

    conditions: tuple[Condition, ...] = ()
    said_so: bool = False

    def of(self, pattern: str) -> tuple[Condition, ...]:
        """The conditions as they bear on ``pattern``, one of the hint's own: with ``said_so``, that the task does
        not say the pattern itself (each pattern of a joined line its own)."""
        return (*self.conditions, NotSaid(pattern)) if self.said_so else self.conditions


def read_precondition(text: str | None) -> Precondition:
    """The conditions a precondition says (``render_precondition``'s inverse); what is not a condition is ignored.

    Example:
        >>> read_precondition("when the task says `roast <X>` and does not name `<Y>`").conditions
        (Says(line='roast <X>'), NotNamed(slot='Y'))
        >>> read_precondition("after `take knife` unless the task says so").of("chop <X>")
        (After(action='take knife'), NotSaid(line='chop <X>'))
    """
    said_so = False
    prefix = ""  # the back-quoted lines before any marker are lines the task says
    out: list[Condition] = []
    for m in _MARKER.finditer(str(text or "")):
        if m.group(1) is not None:
            said_so = True
        elif m.group(2) is not None:
            prefix = _PREFIX[m.group(2)]
        elif m.group(3).strip():
            out.append(parse(prefix + m.group(3).strip()))
    return Precondition(tuple(out), said_so)


def canonical(conditions: Sequence[Condition]) -> tuple[Condition, ...]:
    """``conditions`` in the order a precondition says them: history, then said, not named, not said."""
    rank = {After: 0, Says: 1, Listed: 1, NotNamed: 2, NotSaid: 3}
    return tuple(sorted(conditions, key=lambda c: rank[type(c)]))


__all__ = ["AFTER", "AFTER_WORDS", "NOT_NAMED_WORDS", "NOT_SAID_WORDS", "SAID_SO_WORDS", "SAYS_WORDS", "SLOT", "UNNAMED",
           "WHEN_WORDS", "After", "Condition", "Listed", "NotNamed", "NotSaid", "Precondition", "Says", "canonical",
           "encode", "parse", "read_precondition", "render_precondition"]
