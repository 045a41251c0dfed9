"""The literal reader's reading of memory's text: every note to the letter, its condition checked on the text seen.

A note is a ``- "..."`` line after a ``## Memory notes (langmem_plus)`` title, in a system message or a
guard answer (``Not run: ...``). "Avoid `F`, ..." forbids the forms, "Prefer `F`, ..." recommends them,
"Use `B` instead of `A`" does both, "start with `A` then `B` ..." is a plan to follow while nothing else
was run. A form's ``<X>`` is one name of one or more words (the same X throughout a note), ``<...>`` any
text, ``a/b`` either word. A condition after the forms is checked against what the reader has seen:
"after `F`" (F was run), "unless the task says so" (the task text names the command), "when the task
says `F`", "(when: ...)"; any other condition holds when all its words appear in the text seen.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

NOTES_TITLE = "## Memory notes (langmem_plus)"
"""The line a block of notes starts under."""
HELD_MARK = "Not run:"
"""How a tool answer that memory held (instead of running the command) starts."""
NOTE_LINE = re.compile(r'^-\s+(?:\[[^\]]*\]\s*)?"((?:[^"\\]|\\.)*)"')
"""A note line: ``- "TEXT"`` or ``- [KIND:ID] "TEXT" ...``; TEXT is a JSON string."""
FORM = re.compile(r"`([^`]+)`")
"""A backquoted form."""
LEAD_FORMS = re.compile(r"^\s*(`[^`]+`(?:\s*(?:,|or|and)\s*`[^`]+`)*)")
"""The list of forms right after a note's verb."""
PLACEHOLDER = re.compile(r"^<([A-Za-z0-9_]+)>$")
"""``<X>``: one name."""
ANY_TEXT = "<...>"
"""Any text, possibly empty."""
FILLER = frozenset({"the", "a", "an", "some", "your"})
"""Words a quoted form may leave out of the text it quotes ("roast red onion" in "roast the red onion")."""
SAYS_SO = re.compile(r"unless the (?:task|recipe|goal) says so", re.IGNORECASE)
"""The condition that lifts an avoidance when the task names the command."""
AFTER = re.compile(r"^after\s+`([^`]+)`", re.IGNORECASE)
"""The condition that a form was run before."""
WHEN_SAYS = re.compile(r"^when the (?:task|recipe|goal) says\s+`([^`]+)`", re.IGNORECASE)
"""The condition that the task text says a form."""
WHEN_QUOTE = re.compile(r"^\((?:when|fails with):\s*(.*)\)$", re.IGNORECASE)
"""A quoted error the note answers."""
EXPLAINS = re.compile(r"^\(fails with:", re.IGNORECASE)
"""An explanation, not a condition: the note holds."""
WORD = re.compile(r"[a-z]+")
"""A word of a condition's plain text."""


@dataclass
class Seen:
    """What the reader has seen in the game: commands run, the task's text and every game text."""

    run: list[str]
    task: str
    texts: list[str]
    latest: str


def form_regex(form: str, bound: dict[str, str] | None = None) -> re.Pattern[str]:
    """A form as a regex over one whole command: ``<X>`` one or more words, ``<...>`` any text, ``a/b`` either."""
    parts: list[str] = []
    named: set[str] = set()
    for token in form.split():
        slot = PLACEHOLDER.match(token)
        if token == ANY_TEXT:
            parts.append(r".*?")
        elif slot:
            name = slot.group(1)
            if bound and name in bound:
                parts.append(re.escape(bound[name]))
            elif name in named:
                parts.append(f"(?P={name})")
            else:
                named.add(name)
                parts.append(rf"(?P<{name}>\S+(?:\s\S+)*?)")
        elif "/" in token:
            parts.append("(?:" + "|".join(re.escape(t) for t in token.split("/") if t) + ")")
        else:
            parts.append(re.escape(token))
    return re.compile(r"\s+".join(parts), re.IGNORECASE)


def says(text: str, phrase: str) -> bool:
    """Whether ``text`` contains the phrase's words in order, filler words allowed between them."""
    tokens = [re.escape(t) for t in phrase.lower().split() if t not in FILLER]
    if not tokens:
        return False
    gap = r"\s+(?:(?:" + "|".join(FILLER) + r")\s+)*"
    return re.search(r"\b" + gap.join(tokens) + r"\b", text.lower()) is not None


@dataclass
class LiteralNote:
    """One note: its verb (avoid, prefer, use, plan), its forms and the condition text after them."""

    kind: str
    forms: list[str]
    condition: str
    text: str

    def binding(self, command: str) -> dict[str, str] | None:
        """The placeholder values under which one of the note's forms is the whole command, or None."""
        for form in self.forms:
            found = form_regex(form).fullmatch(command.strip())
            if found:
                return {k: v for k, v in found.groupdict().items() if v is not None}
        return None

    def holds(self, command: str, bound: dict[str, str], seen: Seen) -> bool:
        """Whether the note's stated condition is met for this command, on the text seen."""
        condition = self.condition.strip().rstrip(".").strip()
        if not condition or EXPLAINS.match(condition):
            return True
        if SAYS_SO.search(condition):
            return not says(seen.task, command)
        after = AFTER.match(condition)
        if after:
            pattern = form_regex(after.group(1), bound)
            return any(pattern.fullmatch(c) for c in seen.run)
        when_says = WHEN_SAYS.match(condition)
        if when_says:
            phrase = when_says.group(1)
            for name, value in bound.items():
                phrase = phrase.replace(f"<{name}>", value)
            return says(seen.task, phrase)
        quoted = WHEN_QUOTE.match(condition)
        if quoted:
            return set(WORD.findall(quoted.group(1).lower())) <= set(WORD.findall(seen.latest.lower()))
        needed = set(WORD.findall(FORM.sub(" ", condition).lower())) - FILLER
        return needed <= set(WORD.findall(" ".join(seen.texts).lower()))


@dataclass
class LiteralNotes:
    """Every note the reader was given, in the order given."""

    notes: list[LiteralNote] = field(default_factory=list)

    def forbids(self, command: str, seen: Seen) -> bool:
        """Whether an avoidance (or a rewrite's wrong form) names the command and its condition holds."""
        for note in self.notes:
            if note.kind == "avoid":
                bound = note.binding(command)
                if bound is not None and note.holds(command, bound, seen):
                    return True
        return False

    def recommended(self, valid: Sequence[str], seen: Seen) -> list[str]:
        """The valid commands a recommendation names (note order, then form order) whose condition holds."""
        out: list[str] = []
        for note in self.notes:
            if note.kind != "prefer":
                continue
            for form in note.forms:
                one = LiteralNote(note.kind, [form], note.condition, note.text)
                for command in valid:
                    bound = one.binding(command)
                    if bound is not None and command not in out and one.holds(command, bound, seen):
                        out.append(command)
        return out

    def plan(self) -> list[str]:
        """The steps of the first "start with ... then ..." note (empty without one)."""
        for note in self.notes:
            if note.kind == "plan":
                return note.forms
        return []


def parse_note(text: str) -> list[LiteralNote]:
    """A note's text as notes: "Use B instead of A" gives a prefer and an avoid; unknown wordings give none."""
    stripped = text.strip()
    lower = stripped.lower()
    use = re.match(r"^use\s+`([^`]+)`\s+instead of\s+`([^`]+)`(.*)$", stripped, re.IGNORECASE)
    if use:
        return [LiteralNote("prefer", [use.group(1)], use.group(3), text), LiteralNote("avoid", [use.group(2)], use.group(3), text)]
    if lower.startswith("start with"):
        return [LiteralNote("plan", FORM.findall(stripped), "", text)]
    for verb, kind in (("avoid", "avoid"), ("prefer", "prefer"), ("do not", "avoid"), ("don't", "avoid")):
        if lower.startswith(verb):
            rest = stripped[len(verb):]
            lead = LEAD_FORMS.match(rest)
            if not lead:
                return []
            return [LiteralNote(kind, FORM.findall(lead.group(1)), rest[lead.end():], text)]
    return []


def note_texts(block: str) -> list[str]:
    """The texts of the note lines that follow a notes title in ``block``."""
    out: list[str] = []
    inside = False
    for line in block.splitlines():
        if line.startswith(NOTES_TITLE):
            inside = True
            continue
        found = NOTE_LINE.match(line.strip()) if inside else None
        if found:
            try:
                out.append(str(json.loads(f'"{found.group(1)}"')))
            except json.JSONDecodeError:
                out.append(found.group(1))
    return out


def is_held(answer: str) -> bool:
    """Whether a tool answer says memory held the command instead of running it."""
    return answer.lstrip().startswith(HELD_MARK)


def read_literally(blocks: Sequence[str]) -> LiteralNotes:
    """Every note in the given system messages and guard answers, parsed to the letter."""
    notes: list[LiteralNote] = []
    for block in blocks:
        for text in note_texts(block):
            notes.extend(parse_note(text))
    return LiteralNotes(notes)
