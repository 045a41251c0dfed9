"""WRONG -> CORRECT token rewrites: derived from a contrastive pair, applied to new actions.

A lesson's ``wrong`` and ``correct`` are token patterns (tokens as split by
``action_tokens``). Three wildcards generalise a rule beyond the literals it was
learned from:

- ``*`` matches any one token and captures it;
- ``"*"`` / ``'*'`` match a double- / single-quoted token and capture its inside.

In ``correct`` the same wildcards are filled with the captures, in order. So a rule
learned from ``sort age desc`` -> ``order age down`` is ``sort * desc`` ->
``order * down`` and rewrites ``sort salary desc`` to ``order salary down``.

Example:
    >>> derive_rewrite("sort age desc | take 3", "order age down | take 3")
    ('sort * desc', 'order * down')
    >>> apply_rewrite("keep x > 1 | sort salary desc", "sort * desc", "order * down")
    'keep x > 1 | order salary down'
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Sequence
from dataclasses import dataclass

from langmem_plus._text import _ACTION_TOKEN, action_tokens

WILDCARDS = ("*", '"*"', "'*'")
MAX_GAP = 1
"""Equal tokens between two changed hunks that still merge them into one rule (``sort * desc``).
Two is too many: ``limit 3 | select`` would merge two pipeline stages into one rule."""


@dataclass(frozen=True)
class Rewrite:
    """One derived rule: the token patterns and the tokens they were learned from."""

    wrong: str
    correct: str


def _spans(text: str) -> list[tuple[str, int, int]]:
    return [(m.group(0), m.start(), m.end()) for m in _ACTION_TOKEN.finditer(text)]


def _join(tokens: list[str], source: str, spans: list[tuple[str, int, int]]) -> str:
    """Tokens joined with the separators they had in ``source`` (``--long`` stays one word).

    A wildcard next to another token gets a space, so the pattern re-tokenizes the same way.
    """
    out = tokens[0] if tokens else ""
    for k in range(1, len(tokens)):
        sep = source[spans[k - 1][2] : spans[k][1]]
        if not sep and (tokens[k] in WILDCARDS or tokens[k - 1] in WILDCARDS):
            sep = " "
        out += sep + tokens[k]
    return out


def _quoted(tok: str) -> str | None:
    if len(tok) >= 2 and tok[0] == tok[-1] and tok[0] in "\"'":
        return tok[0]
    return None


def _generalise(a: str, b: str) -> tuple[str, str] | None:
    """Patterns for an aligned token pair that differs only by its quotes, else None."""
    qa, qb = _quoted(a), _quoted(b)
    if qa and qb and a[1:-1] == b[1:-1]:
        return f"{qa}*{qa}", f"{qb}*{qb}"
    if qa and not qb and a[1:-1] == b:
        return f"{qa}*{qa}", "*"
    if qb and not qa and b[1:-1] == a:
        return "*", f"{qb}*{qb}"
    return None


def derive_rewrites(failed: str, fixed: str, max_span: int = 6) -> list[Rewrite]:
    """All rules that turn ``failed`` into ``fixed``, one per group of nearby changes.

    Changed hunks closer than ``MAX_GAP`` equal tokens merge into one rule whose
    inner equal tokens become ``*``. A pure insertion is anchored on the token
    before it. Groups wider than ``max_span`` tokens are not rules and are dropped.
    """
    sa, sb = _spans(failed), _spans(fixed)
    ta, tb = [t for t, _, _ in sa], [t for t, _, _ in sb]
    ops = [op for op in difflib.SequenceMatcher(None, ta, tb, autojunk=False).get_opcodes()]
    groups: list[list[tuple[str, int, int, int, int]]] = []
    for op in ops:
        if op[0] == "equal":
            continue
        if groups and op[1] - groups[-1][-1][2] <= MAX_GAP:
            groups[-1].append(op)
        else:
            groups.append([op])
    rules: list[Rewrite] = []
    for group in groups:
        a0, a1 = group[0][1], group[-1][2]
        b0, b1 = group[0][3], group[-1][4]
        anchor: tuple[int, int] | None = None
        if a0 == a1 and a0 > 0:  # pure insertion: anchor on the previous token, kept literal
            a0, b0 = a0 - 1, b0 - 1
            anchor = (a0, b0)
        if a1 - a0 > max_span or b1 - b0 > max_span or a1 == a0:
            continue
        changed = {i for op in group for i in range(op[1], op[2])}
        changed_b = {j for op in group for j in range(op[3], op[4])}
        wrong, correct = list(ta[a0:a1]), list(tb[b0:b1])
        # Equal tokens inside the span become wildcards on both sides, in order.
        for op in ops:
            if op[0] != "equal":
                continue
            for k in range(op[2] - op[1]):
                i, j = op[1] + k, op[3] + k
                if a0 <= i < a1 and b0 <= j < b1 and i not in changed and j not in changed_b:
                    if (i, j) != anchor:
                        wrong[i - a0], correct[j - b0] = "*", "*"
        # A one-for-one replacement that only changes quoting generalises the quotes.
        for tag, i1, i2, j1, j2 in group:
            if tag == "replace" and i2 - i1 == j2 - j1:
                for k in range(i2 - i1):
                    pat = _generalise(ta[i1 + k], tb[j1 + k])
                    if pat:
                        wrong[i1 + k - a0], correct[j1 + k - b0] = pat
        if wrong.count("*") + sum(w in WILDCARDS[1:] for w in wrong) < sum(c in WILDCARDS for c in correct):
            continue
        rules.append(Rewrite(_join(wrong, failed, sa[a0:a1]), _join(correct, fixed, sb[b0:b1])))
    return rules


def derive_rewrite(failed: str, fixed: str, hint_text: str = "", max_span: int = 6) -> tuple[str, str] | None:
    """The single best rule from a contrastive pair, or None when there is none.

    With several candidate groups, prefer the one whose wrong-side tokens occur in
    ``hint_text`` (the error message usually names the offending token), else the first.
    """
    rules = derive_rewrites(failed, fixed, max_span=max_span)
    if not rules:
        return None
    hint = {t.strip("'\"`") for t in action_tokens(hint_text.lower())} if hint_text else set()
    for rule in rules:
        if hint & {t.lower().strip("'\"") for t in action_tokens(rule.wrong) if t not in WILDCARDS}:
            return rule.wrong, rule.correct
    return rules[0].wrong, rules[0].correct


@dataclass(frozen=True)
class _Capture:
    token: str
    """The matched token as written."""
    inner: str
    """Its content without quotes."""
    from_quoted_pattern: bool


def _match_token(pattern: str, tok: str) -> tuple[bool, _Capture | None]:
    if pattern == "*":
        q = _quoted(tok)
        return True, _Capture(tok, tok[1:-1] if q else tok, False)
    if pattern in WILDCARDS[1:]:
        if _quoted(tok) == pattern[0]:
            return True, _Capture(tok, tok[1:-1], True)
        return False, None
    return pattern == tok, None


def _fill(pattern_tokens: list[str], captures: list[_Capture]) -> list[str] | None:
    """The replacement tokens: pattern tokens with each wildcard filled by the next capture."""
    out: list[str] = []
    it = iter(captures)
    for p in pattern_tokens:
        if p not in WILDCARDS:
            out.append(p)
            continue
        cap = next(it, None)
        if cap is None:
            return None
        if p == "*":
            out.append(cap.inner if cap.from_quoted_pattern else cap.token)
        else:
            out.append(f"{p[0]}{cap.inner}{p[0]}")
    return out


def _rejoin(filled: list[str], pattern: str, spans: Sequence[tuple[str, int, int]]) -> str:
    """Filled tokens joined with the separators of the pattern they came from."""
    out = filled[0] if filled else ""
    for k in range(1, len(filled)):
        out += pattern[spans[k - 1][2] : spans[k][1]] + filled[k]
    return out


@functools.lru_cache(maxsize=1 << 16)
def compile_rewrite(wrong: str, correct: str) -> tuple[tuple[str, ...], tuple[tuple[str, int, int], ...]]:
    """A rule's WRONG tokens and CORRECT token spans, parsed once per rule (a hot path tries many)."""
    return tuple(action_tokens(wrong)), tuple(_spans(correct))


def action_spans(action: str) -> list[tuple[str, int, int]]:
    """An action's tokens with their offsets, for ``apply_rewrite(..., spans=)``."""
    return _spans(action)


def apply_rewrite(
    action: str, wrong: str, correct: str, *, spans: list[tuple[str, int, int]] | None = None
) -> str | None:
    """``action`` with every non-overlapping match of ``wrong`` replaced, or None if none.

    Text outside the matched spans is kept byte for byte. ``spans`` (``action_spans(action)``)
    saves tokenizing the action again when many rules are tried on it.
    """
    pw, correct_spans = compile_rewrite(wrong, correct)
    pc = [t for t, _, _ in correct_spans]
    if not pw:
        return None
    if spans is None:
        spans = _spans(action)
    out, pos, i, changed = [], 0, 0, False
    while i <= len(spans) - len(pw):
        captures: list[_Capture] = []
        ok = True
        for k, p in enumerate(pw):
            hit, cap = _match_token(p, spans[i + k][0])
            if not hit:
                ok = False
                break
            if cap is not None:
                captures.append(cap)
        filled = _fill(pc, captures) if ok else None
        if filled is None:
            i += 1
            continue
        start, end = spans[i][1], spans[i + len(pw) - 1][2]
        out.append(action[pos:start])
        out.append(_rejoin(filled, correct, correct_spans))
        pos, i, changed = end, i + len(pw), True
    if not changed:
        return None
    out.append(action[pos:])
    result = "".join(out)
    return result if result != action else None


def _bare(tok: str) -> str:
    return tok.strip("'\"`").lower()


def error_names_fix(correct: str, error_text: str) -> bool:
    """True when ``error_text`` names something the CORRECT pattern put into the action.

    That is how a failing retry shows the fix itself was wrong (``desc`` -> ``descending``
    failing with ``got 'descending'``). A token of the pattern may be named bare, or a
    whole piece quoted (``'|>'``, which tokenizes as ``|`` and ``>``).
    """
    pieces = [p for p in correct.split() if p not in WILDCARDS]
    if not pieces:
        return False
    lowered = error_text.lower()
    for piece in pieces:
        for q in ("'", '"', "`"):
            if f"{q}{piece.lower()}{q}" in lowered:
                return True
    introduced = {_bare(t) for t in action_tokens(correct)} - {"*", ""}
    return bool(introduced & {_bare(t) for t in action_tokens(error_text)})


__all__ = ["Rewrite", "error_names_fix", "apply_rewrite", "derive_rewrite", "derive_rewrites"]
