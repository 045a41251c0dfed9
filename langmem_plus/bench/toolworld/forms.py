"""Forms of the notes contract: backquoted code with placeholders, matched inside one value.

A form `A` compiles to a regular expression over one argument value; a rewrite `A -> B`
replaces every match of `A` with `B`, its placeholders filled from the match. The rules are
those of docs/notes-contract.md ("Forms and their placeholders"), nothing more.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Form", "compile_form", "form_matches", "rewrite_value"]

_WORD = "A-Za-z0-9_"
# one literal value: a quoted string, a number, or a name (letters, digits, `_`, `-` inside)
_LITERAL = (
    r'(?:"(?:[^"\\\n]|\\.)*"'
    r"|'(?:[^'\\\n]|\\.)*'"
    rf"|(?<![{_WORD}])\d+(?:\.\d+)?(?![{_WORD}])"
    rf"|(?<![{_WORD}])[{_WORD}](?:[{_WORD}-]*[{_WORD}])?(?![{_WORD}]|-[{_WORD}]))"
)
_TOKEN = re.compile(r"(?P<any><\.\.\.>)|(?P<ph><[A-Za-z0-9]+>)|(?P<star>\*)"
                    rf"|(?P<word>[{_WORD}]+)|(?P<ws>\s+)|(?P<other>.)", re.DOTALL)


@dataclass(frozen=True)
class Form:
    """A compiled form: its text, its regex, and the placeholders it binds."""

    text: str
    regex: re.Pattern[str]
    names: frozenset[str]
    anys: int
    stars: int


def _tokens(text: str) -> list[tuple[str, str]]:
    return [(m.lastgroup or "other", m.group()) for m in _TOKEN.finditer(text)]


def compile_form(text: str) -> Form | None:
    """Compile form `A`; None when it has no literal token to anchor on (e.g. only `<...>`)."""
    toks = [(kind, tok) for kind, tok in _tokens(text) if kind != "ws"]
    if not any(kind in ("word", "other") for kind, _ in toks):
        return None
    parts: list[str] = []
    names: set[str] = set()
    anys = stars = 0
    for i, (kind, tok) in enumerate(toks):
        if i:
            parts.append(r"\s*")
        if kind == "word":
            parts.append(rf"(?<![{_WORD}]){re.escape(tok)}(?![{_WORD}])")
        elif kind == "other":
            parts.append(re.escape(tok))
        elif kind == "ph":
            name = tok[1:-1]
            if name in names:
                parts.append(f"(?P=p_{name})")
            else:
                names.add(name)
                parts.append(f"(?P<p_{name}>{_LITERAL})")
        elif kind == "star":
            parts.append(f"(?P<s_{stars}>{_LITERAL})")
            stars += 1
        else:  # <...>: to the end of the value when last, else the shortest text that fits
            last = i == len(toks) - 1
            parts.append(f"(?P<e_{anys}>.*)" if last else f"(?P<e_{anys}>.*?)")
            anys += 1
    regex = re.compile("".join(parts), re.DOTALL)
    return Form(text, regex, frozenset(names), anys, stars)


def form_matches(form: str, value: str) -> bool:
    """True when form `form` matches anywhere inside `value`."""
    compiled = compile_form(form)
    return compiled is not None and compiled.regex.search(value) is not None


def _fill(b: str, form: Form, match: re.Match[str]) -> str | None:
    out: list[str] = []
    anys = stars = 0
    for kind, tok in _tokens(b):
        if kind == "any":
            if anys >= form.anys:
                return None
            out.append(match.group(f"e_{anys}"))
            anys += 1
        elif kind == "ph":
            name = tok[1:-1]
            if name not in form.names:
                return None
            out.append(match.group(f"p_{name}"))
        elif kind == "star" and stars < form.stars:
            out.append(match.group(f"s_{stars}"))
            stars += 1
        else:
            out.append(tok)
    return "".join(out)


def rewrite_value(wrong: str, right: str, value: str) -> str | None:
    """Apply the rewrite `wrong -> right` to every match inside `value`.

    Returns the new value, or None when `wrong` does not match or `right` names a
    placeholder that `wrong` does not bind (a note the reader cannot apply).
    """
    form = compile_form(wrong)
    if form is None or form.regex.search(value) is None:
        return None
    pieces: list[str] = []
    pos = 0
    for match in form.regex.finditer(value):
        if match.end() == match.start():
            continue
        filled = _fill(right, form, match)
        if filled is None:
            return None
        pieces.append(value[pos:match.start()])
        pieces.append(filled)
        pos = match.end()
    pieces.append(value[pos:])
    return "".join(pieces)
