"""Read memory notes as docs/notes-contract.md writes them: lines, then rewrites and avoidances.

One parser for the line grammar (`- [KIND:ID] "TEXT" key="value" ...` or `- "TEXT"`) and one
for the sentences inside (`Use `B` instead of `A``, `WRONG: A -> CORRECT: B`, `Avoid `A``
with an optional quoted error). What a reader does with them is up to the reader.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

__all__ = [
    "BLOCK_HEADER",
    "NOT_RUN",
    "Avoid",
    "Note",
    "Rewrite",
    "directives",
    "notes_in_lines",
    "notes_in_system",
    "parse_note_line",
]

BLOCK_HEADER = "## Memory notes (langmem_plus)"
NOT_RUN = "Not run:"

_DECODER = json.JSONDecoder()
_TAG = re.compile(r"\[([^\]]*)\]\s*")
_KEY = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_.-]*)=")
_USE = re.compile(r"Use `([^`]*)` instead of `([^`]+)`")
_WRONG_QUOTED = re.compile(r"WRONG:\s*`([^`]+)`\s*->\s*CORRECT:\s*`([^`]*)`")
_WRONG_PLAIN = re.compile(r"WRONG:\s*(.+?)\s*->\s*CORRECT:\s*(.+)", re.DOTALL)
_AVOID = re.compile(r"Avoid `([^`]+)`")
_ERROR_QUOTED = re.compile(r"\((?:fails with|when):\s*\"(.*?)\"\s*\)", re.DOTALL)
_ERROR_PLAIN = re.compile(r"\((?:fails with|when):\s*(.*)\)", re.DOTALL)
_CONDITION = re.compile(r"\s*\((?:fails with|when):.*$", re.DOTALL)
# keys whose value may carry the error a note answers (beside the quoted form in TEXT)
_ERROR_KEYS = ("fails_with", "when", "error")


@dataclass(frozen=True)
class Note:
    """One note line: optional kind and id, its text, and its key="value" pairs."""

    text: str
    kind: str | None = None
    id: str | None = None
    values: dict[str, str] = field(default_factory=dict, hash=False, compare=True)


@dataclass(frozen=True)
class Rewrite:
    """`Use `right` instead of `wrong``: replace form `wrong` by form `right`."""

    wrong: str
    right: str
    error: str | None = None


@dataclass(frozen=True)
class Avoid:
    """`Avoid `form`` and, when the note quotes it, the error the form fails with."""

    form: str
    error: str | None = None


def _json_string(line: str, pos: int) -> tuple[str, int] | None:
    if pos >= len(line) or line[pos] != '"':
        return None
    try:
        value, end = _DECODER.raw_decode(line, pos)
    except ValueError:
        return None
    return (value, end) if isinstance(value, str) else None


def parse_note_line(line: str) -> Note | None:
    """Parse one line; None when it is not a note (`- ` then an optional tag and a JSON string)."""
    line = line.rstrip("\r\n")
    if not line.startswith("- "):
        return None
    pos = 2
    kind = note_id = None
    tag = _TAG.match(line, pos)
    if tag:
        kind, _, rest = tag.group(1).partition(":")
        note_id = rest or None
        pos = tag.end()
    first = _json_string(line, pos)
    if first is None:
        return None
    text, pos = first
    values: dict[str, str] = {}
    while True:
        key = _KEY.match(line, pos)
        if key is None:
            break
        item = _json_string(line, key.end())
        if item is None:
            break
        values[key.group(1)], pos = item
    return Note(text=text, kind=kind or None, id=note_id, values=values)


def notes_in_lines(lines: Iterable[str]) -> list[Note]:
    """Every note among `lines` (lines that are not notes are skipped)."""
    return [note for note in map(parse_note_line, lines) if note is not None]


def notes_in_system(text: str) -> list[Note]:
    """The notes of the memory block in a system message: note lines after the block header."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith(BLOCK_HEADER):
            return notes_in_lines(lines[i + 1:])
    return []


def _unquote(form: str) -> str:
    form = form.strip()
    if len(form) >= 2 and form[0] == form[-1] == "`":
        return form[1:-1]
    return form


def _error_in(text: str) -> str | None:
    quoted = _ERROR_QUOTED.search(text)
    if quoted:
        return quoted.group(1)
    plain = _ERROR_PLAIN.search(text)
    return plain.group(1).strip().strip('"') if plain else None


def _sentences(text: str) -> list[Rewrite | Avoid]:
    found: list[Rewrite | Avoid] = []
    error = _error_in(text)
    for m in _USE.finditer(text):
        found.append(Rewrite(wrong=m.group(2), right=m.group(1), error=error))
    quoted = list(_WRONG_QUOTED.finditer(text))
    for m in quoted:
        found.append(Rewrite(wrong=m.group(1), right=m.group(2), error=error))
    if not quoted:
        for m in _WRONG_PLAIN.finditer(text):
            right = _CONDITION.sub("", m.group(2))
            found.append(Rewrite(wrong=_unquote(m.group(1)), right=_unquote(right), error=error))
    for m in _AVOID.finditer(text):
        found.append(Avoid(form=m.group(1), error=error))
    return found


def directives(notes: Iterable[Note]) -> list[Rewrite | Avoid]:
    """The rewrites and avoidances the notes state, in note order, each once.

    Sentences are read from a note's text and from each of its values (a `rule=` value, for
    example); an avoidance without a quoted error takes it from a `fails_with`/`when`/`error`
    value of the same note, when there is one.
    """
    out: list[Rewrite | Avoid] = []
    for note in notes:
        keyed = next((note.values[k] for k in _ERROR_KEYS if note.values.get(k)), None)
        for text in (note.text, *note.values.values()):
            for item in _sentences(text):
                if isinstance(item, Avoid) and item.error is None and keyed:
                    item = Avoid(item.form, keyed)
                if item not in out:
                    out.append(item)
    return out
