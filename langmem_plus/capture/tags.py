"""Tags: a failure's structure on the fixed vocabulary of design.md §3, so a lesson learned on one tool is found for another.

Example:
    >>> extract_tags("no such column: agee")
    ['column_reference', 'not_found']
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from langmem_plus._text import clean_text
from langmem_plus.config import DEFAULT_CONFIG
from langmem_plus.capture.fingerprints import QUOTED_MAX_CHARS, failure_lines

TAG_VOCABULARY: tuple[str, ...] = (
    "syntax_structure",
    "unknown_symbol",
    "unknown_command",
    "path_quote",
    "operator_mismatch",
    "arity_mismatch",
    "column_reference",
    "function_case",
    "sort_direction",
    "type_mismatch",
    "not_found",
    "permission",
    "timeout",
    "rate_limit",
    "no_progress",
    "constraint_failed",
    "state_stall",
    "unsafe_action",
    "goal_distance_increase",
)
"""The fixed tag vocabulary of design.md §3; ``extract_tags`` never returns anything else."""

# --------------------------------------------------------------------------- tags

_TAG_RULES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (tag, re.compile(pattern))
    for tag, pattern in (
        (
            "syntax_structure",
            (
                r"syntax|parse ?error|parseerror|decodeerror|unexpected (?:token|end|eof|character|input|"
                r"\$end|symbol|keyword|indent)|expecting\b|incomplete input|unterminated|unbalanced|"
                r"never closed|unmatched|malformed|compile error|expected (?:an? )?(?:expression|token|"
                r"identifier|'|\"|`)|indentationerror"
            ),
        ),
        (
            "unknown_symbol",
            (
                r"not defined|undefined\b|undeclared|(?:unknown|unresolved|no such|unrecogni[sz]ed) "
                r"(?:identifier|symbol|variable|name|function|attribute|key|table|module|field|property|"
                r"method|type|class|macro)|has no attribute|nameerror|keyerror|attributeerror|"
                r"cannot find (?:value|symbol|name|function|type|module)|no module named|"
                r"modulenotfounderror|is not a function|unresolved reference"
            ),
        ),
        (
            "unknown_command",
            (
                r"(?:unknown|unrecogni[sz]ed|invalid|no such|unsupported) (?:sub)?(?:command|verb|"
                r"instruction|directive|option|flag|switch|argument|action|operation|op)s?\b|"
                r"is not an? [\w\-]+ command|command not found|not recogni[sz]ed as an internal|"
                r"invalid choice"
            ),
        ),
        (
            "path_quote",
            (
                r"no such file|filenotfounderror|cannot (?:open|access|stat|read)|could not open|"
                r"not a directory|is a directory|notadirectoryerror|isadirectoryerror|invalid path|"
                r"bad path|path .{0,80}(?:does not exist|not found)|unterminated (?:quoted )?string|"
                r"unclosed (?:quote|string)|unmatched quote|quoting|string literal|"
                r"looking for matching|pathspec"
            ),
        ),
        (
            "operator_mismatch",
            (
                r"operator|operand|cannot be (?:added|subtracted|multiplied|divided|compared)|"
                r"not supported between"
            ),
        ),
        (
            "arity_mismatch",
            (
                r"takes (?:exactly |at most |at least |from )?\d+ (?:positional )?arguments?|"
                r"(?<!\d)\d+ (?:were|was) given|missing \d+ required|"
                r"wrong number of (?:arguments|values|columns)|"
                r"too (?:many|few) (?:arguments|values|columns|parameters)|has \d+ columns? but \d+ values?|"
                r"arity|takes no arguments|unexpected keyword argument|multiple values for|"
                r"requires (?:an? |\d+ )?(?:value|argument|parameter)s?|option requires|"
                r"not enough (?:arguments|values)|too many values to unpack|expected \d+ arguments?"
            ),
        ),
        (
            "column_reference",
            (
                r"(?:no such|unknown|unrecogni[sz]ed|invalid|missing|ambiguous|undefined|bad) "
                r"(?:column|field)|"
                r"(?:column|field)s? (?:reference |name )?(?:\S+ )?(?:not found|does not exist|is ambiguous|"
                r"not in)|no (?:column|field) named|cannot resolve (?:column|field)"
            ),
        ),
        (
            "function_case",
            (
                r"case[- ]sensitive|wrong case|must be (?:lower|upper)[- ]?case|(?:lower|upper)[- ]?case "
                r"(?:function|name|command|keyword)"
            ),
        ),
        (
            "sort_direction",
            r"sort (?:direction|order)|order direction|\b(?:asc|desc|ascending|descending)\b",
        ),
        (
            "type_mismatch",
            (
                r"type mismatch|mismatched types|incompatible types?|datatype mismatch|cannot convert|"
                r"could not convert|invalid literal for|unsupported operand type|can only concatenate|"
                r"cannot index \w+ with|is not iterable|is not subscriptable|"
                r"cannot be (?:cast|converted|added)|wrong type|invalid type|"
                r"must be (?:str|int|float|real number|an? \w+)|"
                r"expected (?:type|str|int|float|string|number|array|object|list|dict)\b|"
                r"not (?:an? )?(?:number|string|integer|array|object)\b"
            ),
        ),
        (
            "not_found",
            (
                r"not found|no such|does not exist|doesn't exist|notfounderror|cannot find|could not find|"
                r"unable to find|did not match any|no match(?:es)? for|unknown revision|keyerror|"
                r"no module named|\b404\b"
            ),
        ),
        (
            "permission",
            (
                r"permission|access denied|access is denied|not permitted|forbidden|\b40[13]\b|"
                r"unauthori[sz]ed|eacces|eperm|read-?only|insufficient privileges"
            ),
        ),
        ("timeout", r"timed? ?out|timeout|deadline exceeded|took too long"),
        (
            "rate_limit",
            r"rate[- _]?limit|too many requests|\b429\b|quota exceeded|throttl|retry after|slow down",
        ),
        ("no_progress", r"no[_ ]progress|not making progress|made no progress"),
        (
            "constraint_failed",
            r"constraint|integrityerror|assertion ?error|check failed|invariant|precondition failed",
        ),
        ("state_stall", r"\bstuck\b|\bstall|same state|state unchanged|nothing happened|loop detected"),
        (
            "unsafe_action",
            (
                r"unsafe|safety|dangerous|destructive|guardrail|policy violation|refusing to|"
                r"blocked by|collision|collided"
            ),
        ),
        (
            "goal_distance_increase",
            (
                r"(?:further|farther) (?:from|away)|moved away|distance (?:to (?:the )?(?:goal|target) )?"
                r"(?:increased|grew)|regress"
            ),
        ),
    )
)
_QUOTED_INNER = re.compile(
    rf"""
      '([^'\n]{{0,{QUOTED_MAX_CHARS}}})'
    | "([^"\n]{{0,{QUOTED_MAX_CHARS}}})"
    | `([^`'\n]{{0,{QUOTED_MAX_CHARS}}})[`']
    """,
    re.VERBOSE,
)
_APOSTROPHE_FREE_QUOTE = re.compile(r"(?<![A-Za-z])'|'(?![A-Za-z])")
_OPERATOR_LITERAL = re.compile(r"[=<>!&|+\-*/%^~]+")
_SORT_WORDS = frozenset({"asc", "desc", "ascending", "descending"})
_SUGGESTION = re.compile(r"(?:did you mean|perhaps you meant|maybe you meant)\W+([\w.\-]+)")
_ANY_WORD_LITERAL = re.compile(r"[\w.\-]+")


def _quoted_literals(text: str) -> list[str]:
    return [next(g for g in m.groups() if g is not None) for m in _QUOTED_INNER.finditer(text)]


def _unbalanced_quotes(action: str) -> bool:
    """An odd number of quote characters, ignoring apostrophes inside words (it's)."""
    singles = len(_APOSTROPHE_FREE_QUOTE.findall(action))
    return action.count('"') % 2 == 1 or singles % 2 == 1 or action.count("`") % 2 == 1


def _literal_tags(text: str) -> set[str]:
    """Tags read from the literals an error quotes: an operator, a sort word, a case slip."""
    tags: set[str] = set()
    literals = _quoted_literals(text)
    for lit in literals:
        if _OPERATOR_LITERAL.fullmatch(lit):
            tags.add("operator_mismatch")
        if lit.lower() in _SORT_WORDS:
            tags.add("sort_direction")
    suggestion = _SUGGESTION.search(text.lower())
    if suggestion:
        wanted = suggestion.group(1).strip(".-")
        offered = literals or _ANY_WORD_LITERAL.findall(text[: suggestion.start()])
        if any(lit != wanted and lit.lower() == wanted for lit in offered):
            tags.add("function_case")
    return tags


def _context_tags(context: Mapping[str, Any]) -> set[str]:
    tags: set[str] = set()
    channel = context.get("channel")
    if channel == "no_progress":
        tags.add("no_progress")
    elif channel == "constraint":
        tags.add("constraint_failed")
    try:
        delta = float(context.get("progress_delta") or 0.0)
    except (TypeError, ValueError):
        delta = 0.0
    if delta < 0:
        tags.add("goal_distance_increase")
    if context.get("repeated") is True or context.get("state_stall") is True:
        tags.add("state_stall")
    if context.get("unsafe") is True:
        tags.add("unsafe_action")
    extra = context.get("tags")
    if isinstance(extra, (list, tuple, set, frozenset)):
        tags.update(t for t in extra if isinstance(t, str) and t in TAG_VOCABULARY)
    return tags


def extract_tags(
    text: str | bytes | bytearray | None,
    action: str | None = None,
    context: Mapping[str, Any] | None = None,
    *,
    scan_chars: int = DEFAULT_CONFIG.capture.error_text_scan_chars,
) -> list[str]:
    """Map a failure's structure onto ``TAG_VOCABULARY`` (design.md §3).

    Tags come from the failure lines of ``text`` (the same lines ``fingerprint``
    reads, so echoed source or usage dumps cannot add tags), from the literals the
    error quotes (an operator, ``desc``, a name whose suggestion differs only in
    case), from the action's shape (unbalanced quotes -> ``path_quote``), and from
    ``context``: ``channel`` (``"no_progress"``, ``"constraint"``),
    ``progress_delta`` (negative -> ``goal_distance_increase``), ``repeated`` /
    ``state_stall``, ``unsafe`` (booleans) and ``tags`` (vocabulary tags passed on).

    Args:
        text: Failure text; bytes and huge inputs are accepted as in ``fingerprint``.
        action: The failed action, read for its shape only, never its command name.
        context: Channel and progress information about the step.
        scan_chars: Characters of text and action read (``MemoryConfig.capture.error_text_scan_chars``).

    Returns:
        Sorted, deduplicated tags from ``TAG_VOCABULARY``.

    Example:
        >>> extract_tags("git: 'comit' is not a git command")
        ['unknown_command']
        >>> extract_tags("", context={"channel": "no_progress", "progress_delta": -0.2})
        ['goal_distance_increase', 'no_progress']
    """
    cleaned = clean_text(text, scan_chars)
    action_text = clean_text(action, scan_chars) if action else ""
    tags: set[str] = set()
    if cleaned.strip():
        failure = "\n".join(failure_lines(cleaned, action_text or None))
        lowered = failure.lower()
        tags.update(tag for tag, rule in _TAG_RULES if rule.search(lowered))
        tags.update(_literal_tags(failure))
        if action_text and _unbalanced_quotes(action_text):
            tags.add("path_quote")
    if isinstance(context, Mapping):
        tags.update(_context_tags(context))
    return sorted(tags)


