"""unknown_kin: a conditional command with its last word changed is avoided where no line asks for it.

A conditional command is right only where a line about its thing says so (``cook <X> in oven`` when the task says
``roast <X>``). Its unknown siblings, the same command with the last word changed (``cook <X> in stove``), that
memory neither recommends outright nor knows fire here, are avoided on a thing the task asks nothing of but lines
memory can answer (``base.asks_only_answered``). Where the task does not name the thing the line is a pattern,
shown once for every such thing; else it is the action itself.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import ClassVar

from langmem_plus.learning.textmatch import SLOT, UNNAMED, Pattern, names_phrase, norm
from langmem_plus.records import Lesson, ScoredItem, Step, TaskSpec
from langmem_plus.textgames.delivery_rules.base import Families, Firing, Known, asks_only_answered, inferred
from langmem_plus.textgames.direct import conditional_command, sibling_key
from langmem_plus.textgames.trigger import StepView, firings

KIN_PREFIX = "kin:"
"""Id prefix of this rule's lines (and ``kin_in_attempt``'s)."""


@dataclass(frozen=True)
class Kin:
    """A conditional command with one placeholder: its pattern with its last word open (``cook <X> in <W>`` of
    ``cook <X> in toaster``), that word, and its family's answered verbs."""

    shape: Pattern
    slot: str
    open_slot: str
    word: str
    answered: frozenset[str]


def open_last_word(pattern: Pattern) -> tuple[Pattern, str, str] | None:
    """``pattern`` with its last word, a literal one after its placeholder, made a placeholder of its own: the shape of
    its siblings (``cook <X> in toaster`` -> ``cook <X> in <W>``), the new placeholder and the word; None when the
    pattern ends with a placeholder or has no placeholder before its last word.

    Example:
        >>> shape, slot, word = open_last_word(Pattern.parse("cook <X> in toaster"))
        >>> shape.text, slot, word, shape.match("cook red apple in stove")
        ('cook <X> in <W>', 'W', 'toaster', {'X': 'red apple', 'W': 'stove'})
        >>> open_last_word(Pattern.parse("take <X>")) is None
        True
    """
    words = pattern.text.split()
    if len(words) < 3 or SLOT.fullmatch(words[-1]) or not any(SLOT.fullmatch(w) for w in words[1:-1]):
        return None
    free = next(c for c in "WVUTSRQPONMLKJIHGFEDCBAZYX" if c not in pattern.slots)
    shape = Pattern.parse(" ".join([*words[:-1], f"<{free}>"]))
    return (shape, free, words[-1]) if shape is not None else None


def conditional_kin(delivered: Sequence[Lesson], families: Families) -> list[Kin]:
    """The conditional commands to look for siblings of (one placeholder each; of the ``delivered`` rules: a
    recommendation held back as harmful says nothing of its siblings), in a stable order."""
    out: dict[str, Kin] = {}
    for lesson in delivered:
        raw = conditional_command(lesson)
        pattern = Pattern.parse(raw) if raw else None
        opened = open_last_word(pattern) if pattern is not None and len(pattern.slots) == 1 else None
        if pattern is not None and opened is not None:
            shape, free, word = opened
            out.setdefault(raw, Kin(shape, pattern.slots[0], free, norm(word), families[sibling_key(lesson)]))
    return [out[k] for k in sorted(out)]


def unknown_kin(kin: Sequence[Kin], known: Sequence[Pattern], view: StepView,
                spared: Collection[str] = ()) -> list[tuple[str, str, Kin]]:
    """``(action, thing, command)`` for each valid action that is an unknown sibling of a conditional command: the
    command with its last word changed (``cook pork chop in stove`` beside ``cook <X> in toaster``), that no pattern in
    ``known`` (memory's outright recommendations) matches with that thing bound, and whose thing the task asks nothing
    of but answered verbs' lines (also when its text says nothing of it). An action in ``spared`` (one a conditional
    command memory knows fires on here: its own line is said) is left alone."""
    out: dict[str, tuple[str, str, Kin]] = {}
    for k in kin:
        for action in view.valid:
            binding = k.shape.match(action)
            if action in out or action in spared or binding is None or binding[k.open_slot] == k.word:
                continue
            thing = binding[k.slot]
            if any(m is not None and (not m or thing in m.values()) for m in (p.match(action) for p in known)):
                continue  # memory recommends this command on this thing (a literal rule: this very action)
            if asks_only_answered(thing, k.answered, view):
                out[action] = (action, thing, k)
    return list(out.values())


def kin_item(action: str, thing: str, k: Kin, pattern: str | None = None) -> ScoredItem:
    """The avoidance of ``action`` as an item (``Avoid `cook pork chop in stove```); given ``pattern`` (the reader
    holds the thing unnamed), that pattern where the task does not name its thing (``Avoid `cook <X> in stove` when
    the task does not name `<X>```), shown once for every such thing."""
    why = "an unknown sibling of a conditional command"
    if pattern is not None:
        return inferred(KIN_PREFIX, pattern, pattern, [f"{UNNAMED}<{k.slot}>"], why)
    return inferred(KIN_PREFIX, k.shape.text, action, [thing], why)


class UnknownKin:
    """Avoids unknown siblings of conditional commands where nothing asks for them (module docstring)."""

    name: ClassVar[str] = "unknown_kin"
    summary: ClassVar[str] = "a conditional command with its last word changed is avoided where no line asks for it"
    prefix: ClassVar[str] = KIN_PREFIX

    def __init__(self, known: Known) -> None:
        self._kin = conditional_kin([it.item for it, _ in known.ranked], known.families)  # type: ignore[misc]
        self._known = known.known
        self._conditional = known.conditional
        self._config = known.config

    def fire(self, view: StepView, task: TaskSpec, history: Sequence[Step]) -> list[Firing]:
        """Each unknown sibling at this step, as its line."""
        if not self._kin:
            return []
        spared = {a for lesson, p in self._conditional for a in firings(lesson, p, view, self._config)}
        return [(kin_item(a, thing, k, self._pattern(a, thing, k, view)), a)
                for a, thing, k in unknown_kin(self._kin, self._known, view, spared)]

    def _pattern(self, action: str, thing: str, k: Kin, view: StepView) -> str | None:
        """The pattern the line for ``action`` may be, where the task does not name ``<X>`` (``cook <X> in stove``), or
        None: the reader's reading of that condition (``textmatch.names_phrase``, a word beyond the goal's) must hold
        for ``thing``, and no valid action the pattern covers may be one memory recommends outright."""
        if names_phrase(thing, view.goal, view.task_lines) or all(w in view.goal_words for w in norm(thing).split()):
            return None
        binding = k.shape.match(action) or {}
        text = k.shape.text.replace(f"<{k.open_slot}>", binding.get(k.open_slot, ""))
        pattern = Pattern.parse(text)
        if pattern is None or any(pattern.match(v) is not None and any(p.match(v) is not None for p in self._known)
                                  for v in view.valid):
            return None
        return text


__all__ = ["KIN_PREFIX", "Kin", "UnknownKin", "conditional_kin", "kin_item", "open_last_word", "unknown_kin"]
