"""Forms: the one pattern language of a lesson's actions, its WRONG and CORRECT sides.

A form is text in which a few placeholders stand for what varies between calls or games
(``docs/notes-contract.md`` is the contract any reader of a note relies on):

- ``<n>``, ``<str>``, ``<id2>``: one literal value (a number, a quoted string, a
  ``/regex/`` or a name); the same placeholder twice is the same value;
- ``<X>``, ``<Y>`` (one capital letter): a phrase, one or more words (names and
  numbers), the name of one thing (``cook <X> in oven``); the same letter twice is the
  same phrase;
- ``"<s>"`` / ``'<s>'``: a quoted string, the placeholder bound to what is inside;
- ``<...>``: any run of tokens (to the end of the value when it ends the form);
- ``*`` (and ``"*"``, ``'*'``): one token, filled in order (the older notation).

Matching works on tokens (``tokenize``), so whitespace between tokens never matters
and a word is never matched inside a longer one. A tool lesson's form matches inside
one argument value: ``rewrite`` replaces every non-overlapping match of a WRONG form
with its CORRECT form, filled with what the match bound, text outside the matches kept
byte for byte. An action of a world that lists its actions is matched whole
(``whole_match``; ``learning.textmatch.Pattern`` compares it normalised).

Example:
    >>> rewrite("SELECT TOP 3 name FROM pets ORDER BY age", "TOP <n> <...>", "<...> LIMIT <n>")
    'SELECT name FROM pets ORDER BY age LIMIT 3'
    >>> rewrite(".pets.[0].name", "<id>.[", "<id>[")
    '.pets[0].name'
"""

from __future__ import annotations

import functools
import itertools
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from langmem_plus.conditions import SLOT

_TOKEN = re.compile(
    r"""
    (?P<str>"(?:[^"\\]|\\.)*"?|'(?:[^'\\]|\\.)*'?)    # quoted string (possibly unterminated)
  | (?P<re>/(?:[^/\\\s]|\\.)+/)                        # /regex/ (no spaces inside)
  | (?P<flag>(?<!\S)--?[A-Za-z]\w*(?:-\w+)*)          # -n, --name-only (after a space or at the start)
  | (?P<name>[A-Za-z_]\w*(?:-\w+)*)                    # names, with inner dashes (fix-typo)
  | (?P<num>\d+(?:\.\d+)?)                             # numbers
  | (?P<op>\.\.\.|\.\.|[<>!=]=|==|->|=>|\|\||&&|\|=|::)  # operators of two or three characters
  | (?P<punct>\S)                                      # any other character
    """,
    re.VERBOSE,
)
_PLACEHOLDER = re.compile(r"<\.\.\.>|<[A-Za-z][A-Za-z0-9]*>|\*")
PHRASE = SLOT
"""A phrase placeholder: one capital letter in angle brackets (``<X>``), as text rules and their conditions write it."""
_QUOTED_PLACEHOLDER = re.compile(r"""(["'])(<[A-Za-z][A-Za-z0-9]*>|\*)\1""")

VALUE_KINDS = frozenset({"str", "re", "name", "num"})
"""Token kinds a placeholder such as ``<n>`` binds: the literal values of a call."""
WORD_KINDS = frozenset({"name", "num"})
"""Token kinds a phrase placeholder (``<X>``) binds a run of: words."""
GAP = "<...>"
"""The placeholder for any run of tokens."""
ANY = "*"
"""The older placeholder for any one token."""


class Token(NamedTuple):
    """One token of a value: its text, kind (``VALUE_KINDS``, ``flag``, ``op``, ``punct``) and offsets."""

    text: str
    kind: str
    start: int
    end: int


def tokenize(text: str) -> tuple[Token, ...]:
    """The tokens of ``text``, whitespace dropped.

    Example:
        >>> [t.text for t in tokenize("git log master..fix-typo --oneline")]
        ['git', 'log', 'master', '..', 'fix-typo', '--oneline']
    """
    return tuple(Token(m.group(), m.lastgroup or "punct", m.start(), m.end()) for m in _TOKEN.finditer(text))


@dataclass(frozen=True)
class Element:
    """One element of a parsed form.

    ``kind`` is ``lit`` (``text`` must equal a token), ``slot`` (a named value; ``quote`` set for ``"<s>"``),
    ``phrase`` (``<X>``: a run of words), ``any`` (``*``; ``quote`` set for ``"*"``), ``gap`` (``<...>``) or
    ``end`` (the end of the value; ``whole_match`` adds it).
    """

    kind: str
    text: str
    quote: str = ""


@dataclass(frozen=True)
class Form:
    """A parsed form: its elements, the text between them (for writing it filled), and its literal tokens."""

    text: str
    elements: tuple[Element, ...]
    separators: tuple[str, ...]
    """``separators[k]`` is the text before element ``k`` (``""`` for the first)."""

    @property
    def literals(self) -> frozenset[str]:
        """Tokens a value must contain for this form to match in it."""
        return frozenset(e.text for e in self.elements if e.kind == "lit")

    @property
    def slots(self) -> frozenset[str]:
        """Names of the form's named placeholders, values and phrases."""
        return frozenset(e.text for e in self.elements if e.kind in ("slot", "phrase"))


def _form_tokens(text: str) -> Iterator[tuple[Element, int, int]]:
    """A form's elements with their offsets: placeholders first, then the tokens of the text between them."""
    pos = 0
    marks = sorted(
        [(m.start(), m.end(), Element("slot" if m.group(2) != ANY else "any", m.group(2), m.group(1)))
         for m in _QUOTED_PLACEHOLDER.finditer(text)]
        + [(m.start(), m.end(), None) for m in _PLACEHOLDER.finditer(text)],
        key=lambda x: (x[0], -x[1]),
    )
    for start, end, quoted in marks:
        if start < pos:
            continue  # inside a quoted placeholder already taken
        for tok in tokenize(text[pos:start]):
            yield Element("lit", tok.text), pos + tok.start, pos + tok.end
        word = text[start:end]
        if quoted is not None:
            yield quoted, start, end
        elif word == GAP:
            yield Element("gap", GAP), start, end
        elif word == ANY:
            yield Element("any", ANY), start, end
        elif PHRASE.fullmatch(word):
            yield Element("phrase", word), start, end
        else:
            yield Element("slot", word), start, end
        pos = end
    for tok in tokenize(text[pos:]):
        yield Element("lit", tok.text), pos + tok.start, pos + tok.end


@functools.lru_cache(maxsize=1 << 16)
def parse_form(text: str) -> Form:
    """``text`` parsed into elements (cached: a hot path tries many forms on one value).

    Example:
        >>> [e.kind for e in parse_form('TOP <n> <...>').elements]
        ['lit', 'slot', 'gap']
    """
    elements: list[Element] = []
    separators: list[str] = []
    last = 0
    for element, start, end in _form_tokens(text):
        separators.append(text[last:start] if elements else "")
        elements.append(element)
        last = end
    return Form(text, tuple(elements), tuple(separators))


@dataclass(frozen=True)
class Binding:
    """What one placeholder bound: the token as written and, for a quoted string, what is inside."""

    token: str
    inner: str
    from_quoted: bool


@dataclass(frozen=True)
class Match:
    """One match of a form in a value's tokens: tokens ``[start, end)`` and what the placeholders bound."""

    start: int
    end: int
    slots: dict[str, Binding]
    anys: tuple[Binding, ...]
    gaps: tuple[tuple[int, int], ...]


def _inner(tok: Token) -> str:
    return tok.text[1:-1] if tok.kind == "str" and len(tok.text) >= 2 else tok.text


def _bind(element: Element, tok: Token) -> Binding | None:
    """What ``element`` (a slot or ``*``) binds at ``tok``, or None when it does not match there."""
    if element.quote:
        if tok.kind != "str" or not tok.text.startswith(element.quote):
            return None
        return Binding(tok.text, _inner(tok), True)
    if element.kind == "slot" and tok.kind not in VALUE_KINDS:
        return None
    return Binding(tok.text, _inner(tok) if tok.kind == "str" else tok.text, False)


def _match_at(
    elements: Sequence[Element], k: int, tokens: Sequence[Token], i: int,
    slots: dict[str, Binding], anys: list[Binding], gaps: list[tuple[int, int]],
) -> int | None:
    """End token of a match of ``elements[k:]`` starting at token ``i``, or None; fills the bindings."""
    if k == len(elements):
        return i
    element = elements[k]
    if element.kind == "gap":
        if k == len(elements) - 1:
            gaps.append((i, len(tokens)))
            return len(tokens)
        for j in range(i, len(tokens) + 1):  # the shortest run that lets the rest match
            kept = len(gaps)
            gaps.append((i, j))
            end = _attempt(elements, k + 1, tokens, j, slots, anys, gaps, kept)
            if end is not None:
                return end
        return None
    if element.kind == "end":
        return i if i == len(tokens) else None
    if element.kind == "phrase":
        return _match_phrase(elements, k, tokens, i, slots, anys, gaps)
    if i >= len(tokens):
        return None
    tok = tokens[i]
    if element.kind == "lit":
        return _match_at(elements, k + 1, tokens, i + 1, slots, anys, gaps) if tok.text == element.text else None
    binding = _bind(element, tok)
    if binding is None:
        return None
    if element.kind == "any":
        anys.append(binding)
    else:
        bound = slots.get(element.text)
        if bound is not None and bound.inner != binding.inner:
            return None
        slots[element.text] = binding
    return _match_at(elements, k + 1, tokens, i + 1, slots, anys, gaps)


def _attempt(
    elements: Sequence[Element], k: int, tokens: Sequence[Token], i: int,
    slots: dict[str, Binding], anys: list[Binding], gaps: list[tuple[int, int]], kept_gaps: int,
    binding: tuple[str, Binding] | None = None,
) -> int | None:
    """``_match_at`` of ``elements[k:]`` from token ``i`` after ``binding`` (a placeholder's choice) is made; when it
    fails, the bindings are put back as they were, the gaps cut to their first ``kept_gaps``."""
    mark_slots, mark_anys = dict(slots), len(anys)
    if binding is not None:
        slots[binding[0]] = binding[1]
    end = _match_at(elements, k, tokens, i, slots, anys, gaps)
    if end is None:
        slots.clear()
        slots.update(mark_slots)
        del anys[mark_anys:]
        del gaps[kept_gaps:]
    return end


def _joined(tokens: Sequence[Token]) -> str:
    """A run of tokens as one phrase: one space where the value had space between two, none where it had none."""
    out = [tokens[0].text]
    for before, tok in itertools.pairwise(tokens):
        out.append(tok.text if tok.start == before.end else " " + tok.text)
    return "".join(out)


def _match_phrase(
    elements: Sequence[Element], k: int, tokens: Sequence[Token], i: int,
    slots: dict[str, Binding], anys: list[Binding], gaps: list[tuple[int, int]],
) -> int | None:
    """End token of a match of ``elements[k:]``, a phrase first, from token ``i``: the shortest run of words that
    lets the rest match, the phrase already bound when its letter came before."""
    name = elements[k].text
    bound = slots.get(name)
    for j in range(i + 1, len(tokens) + 1):
        if tokens[j - 1].kind not in WORD_KINDS:
            return None
        phrase = _joined(tokens[i:j])
        if bound is not None and phrase != bound.inner:
            continue
        end = _attempt(elements, k + 1, tokens, j, slots, anys, gaps, len(gaps), (name, Binding(phrase, phrase, False)))
        if end is not None:
            return end
    return None


def whole_match(form: Form, tokens: Sequence[Token]) -> Match | None:
    """The match of ``form`` over all of ``tokens`` (an action matched whole), or None.

    Example:
        >>> m = whole_match(parse_form("cook <X> in oven"), tokenize("cook red apple in oven"))
        >>> m.slots["<X>"].inner
        'red apple'
        >>> whole_match(parse_form("cook <X> in oven"), tokenize("cook red apple in oven now")) is None
        True
    """
    if not form.literals <= {t.text for t in tokens}:
        return None
    slots: dict[str, Binding] = {}
    anys: list[Binding] = []
    gaps: list[tuple[int, int]] = []
    end = _match_at((*form.elements, _END), 0, tokens, 0, slots, anys, gaps)
    return None if end is None else Match(0, end, slots, tuple(anys), tuple(gaps))


_END = Element("end", "")
"""Closes a form matched whole: it matches only at the end of the value."""


def find_matches(form: Form, tokens: Sequence[Token]) -> list[Match]:
    """Every non-overlapping match of ``form`` in ``tokens``, left to right; none for a form of no tokens."""
    if not any(e.kind != "gap" for e in form.elements):
        return []
    out: list[Match] = []
    i = 0
    while i < len(tokens):
        slots: dict[str, Binding] = {}
        anys: list[Binding] = []
        gaps: list[tuple[int, int]] = []
        end = _match_at(form.elements, 0, tokens, i, slots, anys, gaps)
        if end is None or end == i:
            i += 1
            continue
        out.append(Match(i, end, slots, tuple(anys), tuple(gaps)))
        i = end
    return out


def _filled(form: Form, match: Match, value: str, tokens: Sequence[Token]) -> str | None:
    """``form`` written with what ``match`` bound, or None when it needs a placeholder the match did not bind.

    An empty ``<...>`` takes its separator with it, so ``<...> LIMIT <n>`` on an empty run is ``LIMIT 3``.
    """
    out: list[str] = []
    anys, gaps = iter(match.anys), iter(match.gaps)
    for element, sep in zip(form.elements, form.separators):
        if element.kind == "lit":
            piece = element.text
        elif element.kind == "gap":
            span = next(gaps, None)
            if span is None:
                return None
            a, b = span
            if b <= a:
                continue
            piece = value[tokens[a].start:tokens[b - 1].end]
        else:
            binding = next(anys, None) if element.kind == "any" else match.slots.get(element.text)
            if binding is None:
                return None
            if element.quote:
                piece = f"{element.quote}{binding.inner}{element.quote}"
            else:
                piece = binding.inner if binding.from_quoted else binding.token
        out.append(sep + piece if out else piece)
    return "".join(out)


def rewrite(value: str, wrong: str, correct: str, *, tokens: Sequence[Token] | None = None) -> str | None:
    """``value`` with every match of the ``wrong`` form replaced by the filled ``correct`` form, or None if none.

    ``tokens`` (``tokenize(value)``) saves tokenizing the value again when many forms are tried on it.
    """
    form, target = parse_form(wrong), parse_form(correct)
    if tokens is None:
        tokens = tokenize(value)
    if not form.literals <= {t.text for t in tokens}:
        return None
    out: list[str] = []
    pos = 0
    for match in find_matches(form, tokens):
        filled = _filled(target, match, value, tokens)
        if filled is None:
            continue
        start, end = tokens[match.start].start, tokens[match.end - 1].end
        out.append(value[pos:start])
        out.append(filled)
        pos = end
    if not out:
        return None
    out.append(value[pos:])
    result = "".join(out)
    return result if result != value else None


def occurs(value: str, form_text: str, *, tokens: Sequence[Token] | None = None) -> bool:
    """Whether the form ``form_text`` matches somewhere in ``value``."""
    form = parse_form(form_text)
    tokens = tokenize(value) if tokens is None else tokens
    return form.literals <= {t.text for t in tokens} and bool(find_matches(form, tokens))


def argument_values(args: Mapping[str, Any]) -> dict[str, str]:
    """A call's arguments as the text forms are matched in: strings as they are, anything else as JSON.

    Example:
        >>> argument_values({"query": "SELECT 1", "n": [1, 2]})
        {'query': 'SELECT 1', 'n': '[1, 2]'}
    """
    return {str(k): v if isinstance(v, str) else json.dumps(v, sort_keys=True, default=str) for k, v in args.items()}


__all__ = [
    "ANY",
    "GAP",
    "PHRASE",
    "VALUE_KINDS",
    "WORD_KINDS",
    "Binding",
    "Element",
    "Form",
    "Match",
    "Token",
    "argument_values",
    "find_matches",
    "occurs",
    "parse_form",
    "rewrite",
    "tokenize",
    "whole_match",
]
