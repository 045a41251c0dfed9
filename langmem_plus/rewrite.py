"""WRONG -> CORRECT rewrites: derived from a contrastive pair with literals as slots, applied to new actions.

A lesson's ``wrong`` and ``correct`` are forms (``forms``: the pattern language of
``docs/notes-contract.md``). ``derive_rewrites`` turns a failed action and the action
that fixed it into the forms of their difference:

- the changed tokens stay literal: they are what the lesson is about (``ILIKE`` ->
  ``LIKE``, ``sum`` -> ``add``);
- values that the fix carried from one place to another become one slot, and changes
  they link become one rule (``TOP * <...>`` -> ``<...> LIMIT *``);
- unchanged tokens inside a rule become slots (values and names, which vary between
  calls); the run a moved value crosses is a gap ``<...>`` (unless the fix copies a
  value out of it);
- an edit of punctuation only is located by its neighbours, names among them as slots
  (``*.[`` -> ``*[``); the CORRECT side is never empty;
- placeholders are written ``*`` (one value, kept in order) where each occurs once on both
  sides in the same order, and named (``<n>``, ``<str>``, ``<id>``) where a value moves,
  repeats or is dropped.

Example:
    >>> derive_rewrite("SELECT TOP 4 name FROM pets ORDER BY age", "SELECT name FROM pets ORDER BY age LIMIT 4")
    ('TOP * <...>', '<...> LIMIT *')
    >>> derive_rewrite("sort age desc | take 3", "order age down | take 3")
    ('sort * desc', 'order * down')
    >>> apply_rewrite("keep x > 1 | sort salary desc", "sort * desc", "order * down")
    'keep x > 1 | order salary down'
    >>> derive_rewrite('d.has_key("a")', '"a" in d')  # values that change places keep their names
    ('<id>.has_key(<str>)', '<str> in <id>')
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from langmem_plus._text import action_tokens
from langmem_plus.forms import GAP, VALUE_KINDS, Token, occurs, parse_form, rewrite, tokenize

WILDCARDS = ("*", '"*"', "'*'")
"""The older one-token placeholders (still read: lessons stored before slots)."""
MAX_GAP = 1
"""Equal tokens between two changed hunks that still merge them into one rule (``sort <id> desc``).
Two is too many: ``limit 3 | select`` would merge two pipeline stages into one rule."""
MAX_CHANGED = 6
"""Changed tokens on either side beyond which a difference is a rewrite of the whole action, not a rule."""
_SLOT_NAMES = {"num": "n", "str": "str", "re": "re", "name": "id"}
_NAMED = re.compile(r"<[A-Za-z][A-Za-z0-9]*>")
SLOT_OF_KIND = {kind: f"<{name}>" for kind, name in _SLOT_NAMES.items()}
"""The first slot of each value kind, as a form writes it (``<n>`` for a number)."""


@dataclass(frozen=True)
class Rewrite:
    """One derived rule: its WRONG and CORRECT forms, and the failed action's tokens it was read from."""

    wrong: str
    correct: str
    source: tuple[str, ...] = field(default=(), compare=False)


@dataclass
class _Hunk:
    """Changed tokens: ``a[i1:i2]`` became ``b[j1:j2]``."""

    tag: str
    i1: int
    i2: int
    j1: int
    j2: int


def _linked(x: Sequence[_Hunk], y: Sequence[_Hunk], a: Sequence[Token], b: Sequence[Token]) -> bool:
    """Whether the fix moved a value or a name from one group of hunks to the other."""
    def removed(g: Sequence[_Hunk]) -> set[str]:
        return {a[i].text for h in g for i in range(h.i1, h.i2) if a[i].kind != "punct" and a[i].kind != "op"}

    def added(g: Sequence[_Hunk]) -> set[str]:
        return {b[j].text for h in g for j in range(h.j1, h.j2) if b[j].kind != "punct" and b[j].kind != "op"}

    return bool(removed(x) & added(y)) or bool(removed(y) & added(x))


def _groups(hunks: list[_Hunk], a: Sequence[Token], b: Sequence[Token]) -> list[list[_Hunk]]:
    """Hunks grouped into rules: near ones (``MAX_GAP``) and ones a moved token links, with all between them."""
    groups: list[list[_Hunk]] = []
    for h in hunks:
        if groups and h.i1 - groups[-1][-1].i2 <= MAX_GAP:
            groups[-1].append(h)
        else:
            groups.append([h])
    changed = True
    while changed:
        changed = False
        for x in range(len(groups)):
            for y in range(len(groups) - 1, x, -1):
                if _linked(groups[x], groups[y], a, b):
                    groups[x:y + 1] = [[h for g in groups[x:y + 1] for h in g]]
                    changed = True
                    break
            if changed:
                break
    return groups


class _Namer:
    """Slot names by kind, in order of appearance: ``<n>``, ``<n2>``, ``<id>``, ..."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def __call__(self, kind: str) -> str:
        base = _SLOT_NAMES.get(kind, "id")
        self.counts[base] = self.counts.get(base, 0) + 1
        n = self.counts[base]
        return f"<{base}>" if n == 1 else f"<{base}{n}>"


def _quote_of(tok: Token) -> str:
    return tok.text[0] if tok.kind == "str" and len(tok.text) >= 2 and tok.text[0] == tok.text[-1] else ""


def _requote(x: Token, y: Token) -> tuple[str, str] | None:
    """Forms for a replaced token that only changes its quotes (``"Oslo"`` -> ``'Oslo'``), else None."""
    qx, qy = _quote_of(x), _quote_of(y)
    inner_x = x.text[1:-1] if qx else x.text
    inner_y = y.text[1:-1] if qy else y.text
    if (qx or qy) and qx != qy and inner_x == inner_y:
        return (f"{qx}<str>{qx}" if qx else "<str>"), (f"{qy}<str>{qy}" if qy else "<str>")
    return None


def _join(pieces: list[tuple[str, int, int]], text: str) -> str:
    """Pieces (form text, source start, source end) joined with the source's own separators."""
    return "".join((text[pieces[k - 1][2]:start] if k else "") + piece for k, (piece, start, _end) in enumerate(pieces))


def _widened(span: tuple[int, int, int, int], size: int, *, both: bool) -> tuple[int, int, int, int] | None:
    """The span ``(a0, a1, b0, b1)`` with the token before it; and the one after it when ``both``, or when there is
    none before. None when it has no neighbour to take."""
    a0, a1, b0, b1 = span
    left = a0 > 0
    if left:
        a0, b0 = a0 - 1, b0 - 1
    if (both or not left) and a1 < size:
        a1, b1 = a1 + 1, b1 + 1
    return (a0, a1, b0, b1) if (a0, a1, b0, b1) != span else None


def _pieces(tokens: Sequence[Token], lo: int, hi: int, elements: dict[int, str],
            gaps: dict[int, int]) -> list[tuple[str, int, int]]:
    """One side of a rule as pieces (form text, source start, source end): each token's element, a gap's run as one
    ``<...>``."""
    out: list[tuple[str, int, int]] = []
    k = lo
    while k < hi:
        end = gaps.get(k)
        if end is not None:
            out.append((GAP, tokens[k].start, tokens[end - 1].end))
            k = end
            continue
        out.append((elements[k], tokens[k].start, tokens[k].end))
        k += 1
    return out


def _slot_names(pieces: list[tuple[str, int, int]]) -> list[str]:
    return [m.group(0) for p, _, _ in pieces if (m := _NAMED.fullmatch(p.strip("'\""))) is not None]


def _in_order(pieces_a: list[tuple[str, int, int]], pieces_b: list[tuple[str, int, int]]) -> bool:
    """Whether every placeholder occurs once on each side, in the same order: then ``*`` says all a name would."""
    names = _slot_names(pieces_a)
    return len(set(names)) == len(names) and names == _slot_names(pieces_b)


def _plain(pieces: list[tuple[str, int, int]]) -> list[tuple[str, int, int]]:
    """Pieces with their named placeholders written ``*`` (``"<str>"`` as ``"*"``), the shorter notation."""
    return [(_NAMED.sub("*", p) if _NAMED.fullmatch(p.strip("'\"")) else p, a, b) for p, a, b in pieces]


def _rule(group: list[_Hunk], ops: Sequence[tuple[str, int, int, int, int]], a: Sequence[Token], b: Sequence[Token],
          failed: str, fixed: str) -> Rewrite | None:
    """The forms of one group of hunks, or None when it is no rule (too wide, or nothing to locate it by)."""
    a0, a1, b0, b1 = group[0].i1, group[-1].i2, group[0].j1, group[-1].j2
    changed_a = {i for h in group for i in range(h.i1, h.i2)}
    changed_b = {j for h in group for j in range(h.j1, h.j2)}
    if len(changed_a) > MAX_CHANGED or len(changed_b) > MAX_CHANGED:
        return None
    to_b = {i1 + k: j1 + k for tag, i1, i2, j1, j2 in ops if tag == "equal" for k in range(i2 - i1)}
    inserted_values = {b[j].text for j in changed_b if b[j].kind in VALUE_KINDS and b[j].kind != "name"}
    distinctive = any(a[i].kind != "punct" for i in changed_a)
    literal_context = not changed_a  # a pure insertion is located by its neighbours as written
    span: tuple[int, int, int, int] | None = (a0, a1, b0, b1)
    if literal_context:  # a pure insertion: anchored on the token before it (after it, at the start)
        span = _widened((a0, a1, b0, b1), len(a), both=False)
    elif not distinctive:  # an edit of single punctuation marks only: both neighbours locate it
        span = _widened((a0, a1, b0, b1), len(a), both=True)
    if span is not None and not changed_b and span[2] == span[3]:  # a pure deletion: a neighbour keeps CORRECT
        span = _widened(span, len(a), both=False)
    if span is None:
        return None
    a0, a1, b0, b1 = span
    name = _Namer()
    elem_a: dict[int, str] = {}
    elem_b: dict[int, str] = {}
    gaps: list[tuple[int, int]] = []
    by_text: dict[str, str] = {}
    for h in group:  # quote-only replacements generalise the quotes
        if h.tag == "replace" and h.i2 - h.i1 == h.j2 - h.j1:
            for k in range(h.i2 - h.i1):
                pair = _requote(a[h.i1 + k], b[h.j1 + k])
                if pair is not None:
                    elem_a[h.i1 + k], elem_b[h.j1 + k] = pair
    i = a0
    while i < a1:
        if i in changed_a:
            tok = a[i]
            if i not in elem_a:
                if tok.kind in VALUE_KINDS and tok.kind != "name" and tok.text in inserted_values:
                    elem_a[i] = by_text.setdefault(tok.text, name(tok.kind))
                else:
                    elem_a[i] = tok.text
            i += 1
            continue
        run_end = i
        while run_end < a1 and run_end not in changed_a:
            run_end += 1
        run = range(i, run_end)
        inside = group[0].i1 <= i and run_end <= group[-1].i2
        copied = any(a[k].text in inserted_values for k in run)
        if inside and len(run) > MAX_GAP and not copied:  # only a move links changes this far apart
            g0, g1 = i, run_end
            while g0 < g1 and a[g0].kind == "punct":  # punctuation at a gap's edges stays written out
                g0 += 1
            while g1 > g0 and a[g1 - 1].kind == "punct":
                g1 -= 1
            for k in (*range(i, g0), *range(g1, run_end)):
                elem_a[k] = elem_b[to_b[k]] = a[k].text
            if g1 > g0:
                gaps.append((g0, g1))
        else:
            for k in run:
                tok = a[k]
                between = group[0].i1 <= k < group[-1].i2  # unchanged between two changes, not a neighbour
                if tok.kind in VALUE_KINDS and (between or not literal_context):
                    elem_a[k] = name(tok.kind)
                    by_text.setdefault(tok.text, elem_a[k])
                else:
                    elem_a[k] = tok.text
                elem_b[to_b[k]] = elem_a[k]
        i = run_end
    if gaps and gaps[-1][1] == a1 and a1 < len(a):  # a gap ends the span: the next token closes it
        elem_a[a1] = elem_b[to_b[a1]] = a[a1].text
        a1, b1 = a1 + 1, b1 + 1
    gap_at = {g0: g1 for g0, g1 in gaps}
    gap_b = {to_b[g0]: to_b[g1 - 1] + 1 for g0, g1 in gaps}
    for j in range(b0, b1):
        if j in changed_b and j not in elem_b:
            tok = b[j]
            elem_b[j] = by_text.get(tok.text, tok.text) if tok.kind in VALUE_KINDS and tok.kind != "name" else tok.text
    pieces_a, pieces_b = _pieces(a, a0, a1, elem_a, gap_at), _pieces(b, b0, b1, elem_b, gap_b)
    if not pieces_a or not pieces_b or all(p[0] == GAP or p[0].startswith("<") for p in pieces_a):
        return None
    if _in_order(pieces_a, pieces_b):
        pieces_a, pieces_b = _plain(pieces_a), _plain(pieces_b)
    wrong, correct = _join(pieces_a, failed), _join(pieces_b, fixed)
    if not parse_form(correct).slots <= parse_form(wrong).slots or wrong == correct:
        return None
    return Rewrite(wrong, correct, tuple(a[k].text for k in range(a0, a1)))


def derive_rewrites(failed: str, fixed: str) -> list[Rewrite]:
    """All rules that turn ``failed`` into ``fixed``: one per group of changes that belong together.

    Changed hunks closer than ``MAX_GAP`` equal tokens, or linked by a value the fix moved, form one rule;
    a group with more than ``MAX_CHANGED`` changed tokens on a side is not a rule.
    """
    a, b = tokenize(failed), tokenize(fixed)
    ops = difflib.SequenceMatcher(None, [t.text for t in a], [t.text for t in b], autojunk=False).get_opcodes()
    hunks = [_Hunk(*op) for op in ops if op[0] != "equal"]
    rules: list[Rewrite] = []
    for group in _groups(hunks, a, b):
        rule = _rule(group, ops, a, b, failed, fixed)
        if rule is not None and rule not in rules:
            rules.append(rule)
    return rules


def _bare(tok: str) -> str:
    return tok.strip("'\"`").lower()


def best_rewrite(rules: Sequence[Rewrite], hint_text: str = "") -> tuple[str, str] | None:
    """The rule among ``rules`` whose failed tokens the error names (``hint_text``), else the first; None if none."""
    if not rules:
        return None
    hint = {_bare(t) for t in action_tokens(hint_text)} - {""} if hint_text else set()
    for rule in rules:
        if hint & {_bare(t) for t in rule.source}:
            return rule.wrong, rule.correct
    return rules[0].wrong, rules[0].correct


def derive_rewrite(failed: str, fixed: str, hint_text: str = "") -> tuple[str, str] | None:
    """The single best rule from a contrastive pair, or None when there is none.

    With several candidate rules, prefer the one whose failed tokens occur in ``hint_text`` (the error
    message usually names the offending token), else the first.
    """
    return best_rewrite(derive_rewrites(failed, fixed), hint_text)


def action_spans(action: str) -> tuple[Token, ...]:
    """An action's tokens, for ``apply_rewrite(..., spans=)`` (tokenize once, try many rules)."""
    return tokenize(action)


def apply_rewrite(action: str, wrong: str, correct: str, *, spans: Sequence[Token] | None = None) -> str | None:
    """``action`` with every non-overlapping match of the ``wrong`` form replaced by ``correct``, or None if none.

    Text outside the matched spans is kept byte for byte. ``spans`` (``action_spans(action)``) saves
    tokenizing the action again when many rules are tried on it.
    """
    return rewrite(action, wrong, correct, tokens=spans)


def form_occurs(action: str, form: str, *, spans: Sequence[Token] | None = None) -> bool:
    """Whether ``form`` matches somewhere in ``action``."""
    return occurs(action, form, tokens=spans)


def error_names_fix(correct: str, error_text: str) -> bool:
    """True when ``error_text`` names something the CORRECT form put into the action.

    That is how a failing retry shows the fix itself was wrong (``desc`` -> ``descending``
    failing with ``got 'descending'``). A literal of the form may be named bare, or a
    whole piece quoted (``'|>'``, which tokenizes as ``|`` and ``>``).
    """
    form = parse_form(correct)
    pieces = [p for p in correct.split() if p not in WILDCARDS and not (p.startswith("<") and p.endswith(">"))]
    if not form.literals:
        return False
    lowered = error_text.lower()
    for piece in pieces:
        for q in ("'", '"', "`"):
            if f"{q}{piece.lower()}{q}" in lowered:
                return True
    introduced = {_bare(t) for t in form.literals} - {"*", ""}
    return bool(introduced & {_bare(t) for t in action_tokens(error_text)})


__all__ = [
    "MAX_CHANGED",
    "MAX_GAP",
    "Rewrite",
    "SLOT_OF_KIND",
    "WILDCARDS",
    "action_spans",
    "apply_rewrite",
    "best_rewrite",
    "derive_rewrite",
    "derive_rewrites",
    "error_names_fix",
    "form_occurs",
]
