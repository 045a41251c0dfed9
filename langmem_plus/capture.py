"""Capture: turn a failed or stalled step into a fingerprinted ErrorEvent (DESIGN §3).

Memory can only learn from a failure it recognises the next time. A fingerprint is
the part of an error text that names the cause, lowercased, with every volatile
literal (quoted strings, numbers, paths, file:line locations, hex ids, URLs,
identifiers after words such as ``column`` or ``table``) replaced by a placeholder.
Two failures with the same cause and different literals share a fingerprint, so
memory can count recurrences and key lessons on them; different causes keep their
different words and stay apart. Tags map the same text onto a small fixed
vocabulary of failure *structure* (not command names), so a lesson learned on one
tool can be found for a similar failure on another.

Everything here is pure and deterministic: no ``hash()``, no I/O, no clock unless
``detect_failure`` is called without ``now``. Cost is bounded: at most
``MemoryConfig.error_text_scan_chars`` characters are read (head and tail), and
every pattern is anchored so that hostile input cannot make it backtrack
quadratically.

Example:
    >>> fingerprint("sqlite3.OperationalError: no such column: agee")
    'sqlite3.operationalerror: no such column: <id>'
    >>> fingerprint('near "selec": syntax error') == fingerprint('near "sleect": syntax error')
    True
    >>> extract_tags("no such column: agee")
    ['column_reference', 'not_found']
    >>> fingerprint("", action="go north", state_before={"room": "hall"},
    ...             state_after={"room": "hall"}, failure_reason="stuck")
    'transition | before: {room=hall} | action: go | after: {room=hall} | reason: stuck'
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from typing import Any

from langmem_plus._text import clean_text, stable_hash, stable_id
from langmem_plus.config import DEFAULT_CONFIG, MemoryConfig
from langmem_plus.records import (
    Channel,
    ErrorEvent,
    Namespace,
    Step,
    TaskSpec,
    validate_namespace,
)

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
"""The fixed tag vocabulary of DESIGN §3; ``extract_tags`` never returns anything else."""

FINGERPRINT_MAX_LINES = 3
"""Distinct failure lines kept in one fingerprint; the first few name the cause, the rest are fallout."""
FINGERPRINT_MAX_CHARS = 400
"""Longest fingerprint (and longest transition part); keeps store metadata and audit lines small."""
ECHO_MIN_CHARS = 4
"""Output lines at least this long that occur verbatim in the action are echoed input and dropped."""
QUOTED_MAX_CHARS = 256
"""Longest quoted literal replaced by ``<str>``; bounds the cost of lines full of unmatched quotes."""
STATE_MAX_ITEMS = 32
"""Keys (or list items) read per level of a state dict when fingerprinting a transition."""
STATE_MAX_DEPTH = 3
"""Nesting depth read in a state dict; deeper values become ``...``."""

# --------------------------------------------------------------------------- line selection

_TB_FILE = re.compile(r'^\s*File "[^"\n]*", line \d+')
_EXC_LINE = re.compile(r"^[A-Za-z_][\w.]*(?::|$)")
# A caret/marker line points at a column of the line above it: "   ^^^", "~~~^~~",
# sqlite's "^--- error here", rustc's "  |   ^^^ not found". A lone "~/" is a path.
_CARET = re.compile(r"^\s*(?:\|\s*)?(?:\^|~~)[\^~\-\s]*(?:\s.*)?$")
_CUT_MARKER = re.compile(r"^\.\.\.\[\d+ chars cut\]\.\.\.$")
_USAGE = re.compile(
    r"^\s*(?:usage|options|commands|positional arguments|optional arguments|flags|examples?)\s*:",
    re.IGNORECASE,
)
_SUGGESTION_LINE = re.compile(
    r"^\s*(?:did you mean|perhaps you meant|maybe you meant|the most similar commands? (?:is|are)"
    r"|similar commands?\b|hint:|see also\b)",
    re.IGNORECASE,
)
_ERROR_LINE = re.compile(
    r"error|errno|fatal|exception|traceback|fail|fault|panic|abort|"
    r"\b(?:cannot|can't|could not|couldn't|unable|not found|no such|unknown|unrecogni[sz]ed|invalid|"
    r"illegal|missing|expected|expecting|unexpected|undefined|not defined|undeclared|denied|forbidden|"
    r"refused|timed? ?out|violat\w*|constraint|stuck|no_progress|stall\w*|incomplete|mismatch\w*|wrong|"
    r"too (?:many|few)|does not|doesn't|did not|is not|not a|not allowed|not permitted|rate.?limit\w*|"
    r"overflow|unsupported|conflict\w*|already exists|out of range|deadlock|killed|ambiguous|"
    r"unterminated|unmatched|unsafe|blocked|takes|requires|given)\b",
    re.IGNORECASE,
)

# --------------------------------------------------------------------------- normalisation

_DID_YOU_MEAN = re.compile(
    r"(?<![\s.,;:!?(\-])[\s.,;:!?(\-]*"
    r"\b(?:did you mean|perhaps you meant|maybe you meant|you may have meant)\b.*$"
)
_URL = re.compile(r"(?<![\w+.\-])[a-z][a-z0-9+.\-]*://[^\s'\"<>]+")
_EMAIL = re.compile(r"(?<![\w.+\-])[\w.+\-]+@[\w\-]+(?:\.[\w\-]+)+")
_QUOTED = re.compile(
    rf"""
      # 'x' and b'x', but not the apostrophe of can't
      (?<![\w'])(?:[bruf]{{1,2}}(?='))?'(?:[^'\\\n]|\\.){{0,{QUOTED_MAX_CHARS}}}'(?![\w'])
    | "(?:[^"\\\n]|\\.){{0,{QUOTED_MAX_CHARS}}}"                                      # "x"
    | `[^`'\n]{{0,{QUOTED_MAX_CHARS}}}[`']                                          # `x` and old-style `x'
    | \u2018[^\u2019\n]{{0,{QUOTED_MAX_CHARS}}}\u2019
    | \u201c[^\u201d\n]{{0,{QUOTED_MAX_CHARS}}}\u201d
    | \u00ab[^\u00bb\n]{{0,{QUOTED_MAX_CHARS}}}\u00bb
    """,
    re.VERBOSE,
)
_UUID = re.compile(r"(?<![\w-])[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(?![\w-])")
# name/arity as jq, Erlang and Prolog print a function ("foo/0 is not defined").
_NAME_ARITY = re.compile(r"(?<![\w/.~\-<])[a-z_]\w*/\d+(?![\w/.])")
# Every alternative starts at a token boundary (the lookbehind), so a long run of
# path characters is scanned once, not once per start position.
_PATH = re.compile(
    r"""
    (?<![\w/.~\-<\\])
    (?:
        [a-z]:\\[^\s'"<>|:*?]*                       # windows
      | (?:~|\.{1,2})?/[^\s'"<>|:,;()\[\]{}]+        # /abs, ~/home, ./rel, ../rel
      | [\w.\-]+(?:/[\w.\-]+)+/?                     # rel/with/slash
    )
    """,
    re.VERBOSE,
)
_LOCATION = re.compile(r"(?:<path>|(?<![\w.\-])[\w\-]+(?:\.[\w\-]+)*\.[a-z][a-z0-9]{0,5}):\d+(?::\d+)?")
_REST_LITERAL = re.compile(
    r"(?P<lead>\b(?:constraint failed|unrecogni[sz]ed arguments?|invalid choices?)\s*:\s*)"
    r"(?P<rest>[^(\n]*[^(\s])"
)
_CALL = re.compile(r"(?<![\w.<])[a-z_][\w.]*\(\)")
_FLAG = re.compile(r"(?<![\w\-<])--?[a-z][\w\-]*")
_NOUNS = (
    r"(?:column|table|field|function|func|command|subcommand|key|variable|var|name|attribute|attr|"
    r"property|method|module|package|option|argument|arg|parameter|param|index|view|trigger|"
    r"collation|database|schema|class|symbol|identifier|label|macro|member|branch|revision|remote|"
    r"alias|relation|role|setting|file|directory|type|token|operator|keyword|verb|flag|enum|struct)"
)
_IDENT = r"[a-z_$@\-][\w$.\-]*"
_NOUN_COLON_ID = re.compile(
    rf"(?P<lead>\b{_NOUNS}s?\s*:\s*)(?P<id>[^\s<>()\[\]{{}},;:'\"`]+(?:\s*,\s*[^\s<>()\[\]{{}},;:'\"`]+)*)"
)
_NOUN_ID = re.compile(rf"(?P<lead>\b{_NOUNS}s?\s+(?:{_NOUNS}s?\s+)*)(?P<id>{_IDENT})(?![\w(<])")
# Words that follow a structural noun without naming a literal ("column is ambiguous").
_STOPWORDS = frozenset(
    """
    a an the and or but nor if then else of to in on at by for from with without into onto as is are
    was were be been being not no does do did done has have had must should shall can cannot could may
    might will would already also only that which this these those it its there here named called
    exists exist existing found missing expected required requires unknown invalid undefined defined
    declared undeclared unexpected unrecognized unrecognised unsupported ambiguous reference references
    referenced definition list count number size length format syntax error errors failed failure
    value values mismatch mismatches conflict conflicts out too more less than when while after before
    contains contain takes take given needs need accepts expects returns got found instead here
    """.split()
) | frozenset(
    # the nouns themselves, so "column name foo" reads "name" as structure
    re.findall(r"\w+", _NOUNS)
)
_PARTICIPLE_MIN_CHARS = 5
"""Words longer than this ending in -ed/-ing after a noun read as English, not identifiers."""
_HEX_WORD_MIN_CHARS = 8
"""Letter-only a-f words this long are hashes ("deadbeef"); shorter ones are English ("decade")."""
_HEX = re.compile(r"(?<![\w\-])(?:0x[0-9a-f]+|[0-9a-f]{6,})(?![\w\-])")
_SUBJECT = re.compile(
    r"(?<![\w.\-/<$])[a-z_][\w.\-]*(?=:\s*(?:command not found|not found|no such file or directory|"
    r"permission denied|is a directory|not a directory|unbound variable|parameter not set|"
    r"undefined variable)\b)"
)
_PROGRAM_WORDS = frozenset({"fatal", "warning", "bash", "sh", "zsh", "dash"})
_TYPE_SUFFIXES = ("error", "exception", "warning", "fault")
_NUMBER = re.compile(r"(?:(?<![\w.\-])-)?(?<![\w.])\d+(?:\.\d+)*(?:e[+\-]?\d+)?")
_AFTER_NUMBER = re.compile(r"<n>((?:\s+[a-z][a-z\-]*){1,3})")
_PLURAL_KEEP = frozenset(
    "does always perhaps whereas besides towards afterwards sometimes series species news yes".split()
)
_PLACEHOLDER_RUN = re.compile(
    r"(<(?:str|n|path|id|flag|loc|url|email|uuid)>)(?:\s*(?:,|\||\band\b|\bor\b)?\s*\1)+"
)
_SPACE = re.compile(r"\s+")
_VERB = re.compile(r"[^\s(){}\[\]:=,;|]+")


def _singular(m: re.Match[str]) -> str:
    """After a number, 'arguments'/'argument' and 'were'/'was' differ only with the count.

    Only the first plural within the window is the counted noun; a verb after it
    ("characters exceeds") is left alone.
    """
    words = m.group(1).split()
    for i, word in enumerate(words):
        if word == "was":
            words[i] = "were"
            break
        if (
            len(word) > 3
            and word.endswith("s")
            and not word.endswith(("ss", "us", "is"))
            and word not in _PLURAL_KEEP
        ):
            words[i] = word[:-1]
            break
    return "<n> " + " ".join(words)


def _hex(m: re.Match[str]) -> str:
    """Hex ids and hashes read as numbers: a hash may be all digits, and must not split."""
    token = m.group(0)
    # A word made of a-f letters only ("decade", "facade") is English unless long.
    if token.startswith("0x") or any(c.isdigit() for c in token) or len(token) >= _HEX_WORD_MIN_CHARS:
        return "<n>"
    return token


def _subject(m: re.Match[str]) -> str:
    """``foo: command not found``: the name before the verdict is a literal, a type is not."""
    token = m.group(0)
    if token in _STOPWORDS or token in _PROGRAM_WORDS or token.endswith(_TYPE_SUFFIXES):
        return token
    return "<id>"


def _noun_id(m: re.Match[str]) -> str:
    ident = m.group("id").strip(".-")
    # An English word after the noun is structure ("name enclosed in", "key exists");
    # participles are told apart by their ending, since identifiers rarely carry one.
    if ident in _STOPWORDS or (len(ident) > _PARTICIPLE_MIN_CHARS and ident.endswith(("ed", "ing"))):
        return m.group(0)
    return m.group("lead") + "<id>"


def _normalise(line: str) -> str:
    """One failure line -> its literal-free form (the order of the rules matters)."""
    s = line.lower()
    s = _DID_YOU_MEAN.sub("", s)
    s = _URL.sub("<url>", s)
    s = _EMAIL.sub("<email>", s)
    s = _QUOTED.sub("<str>", s)
    s = _UUID.sub("<uuid>", s)
    s = _NAME_ARITY.sub("<id>/<n>", s)
    s = _PATH.sub("<path>", s)
    s = _LOCATION.sub("<loc>", s)
    s = _REST_LITERAL.sub(r"\g<lead><id>", s)
    s = _CALL.sub("<id>()", s)
    s = _FLAG.sub("<flag>", s)
    s = _NOUN_COLON_ID.sub(r"\g<lead><id>", s)
    s = _NOUN_ID.sub(_noun_id, s)
    s = _SUBJECT.sub(_subject, s)
    s = _HEX.sub(_hex, s)
    s = _NUMBER.sub("<n>", s)
    s = _AFTER_NUMBER.sub(_singular, s)
    s = _PLACEHOLDER_RUN.sub(r"\1", s)
    return _SPACE.sub(" ", s).strip()[:FINGERPRINT_MAX_CHARS]


def _traceback_exception(lines: list[str]) -> str | None:
    """The final exception line of a Python traceback, or None if there is none."""
    last_file = -1
    for i, line in enumerate(lines):
        if _TB_FILE.match(line):
            last_file = i
    if last_file < 0:
        return None
    for line in lines[last_file + 1 :]:
        if not line.strip() or line[:1].isspace():
            continue  # echoed source and caret lines are indented
        return line if _EXC_LINE.match(line) else None
    return None


def _candidate_lines(lines: list[str], action: str) -> list[str]:
    """Lines left after dropping markers, echoed input, usage dumps and suggestions."""
    kept: list[tuple[int, str]] = []
    skipping = False  # inside a usage dump or a suggestion block
    for i, line in enumerate(lines):
        stripped = line.strip()
        if not stripped:
            continue
        indented = line[:1].isspace()
        if skipping and indented:
            continue
        skipping = False
        if _CUT_MARKER.match(stripped):
            continue
        if _CARET.match(line):
            # The line a caret points into is echoed input, unless it is the message itself.
            if kept and kept[-1][0] == i - 1:
                prev = kept[-1][1]
                if prev[:1].isspace() or not _ERROR_LINE.search(prev):
                    kept.pop()
            continue
        if _USAGE.match(line) or _SUGGESTION_LINE.match(line):
            skipping = True
            continue
        if action and len(stripped) >= ECHO_MIN_CHARS and stripped in action:
            continue
        kept.append((i, line))
    return [line for _, line in kept]


def _failure_lines(text: str, action: str | None) -> list[str]:
    """The raw lines of ``text`` that name the failure, in order (DESIGN §3)."""
    lines = text.split("\n")
    exc = _traceback_exception(lines)
    if exc is not None:
        return [exc]
    candidates = _candidate_lines(lines, action or "")
    errors = [line for line in candidates if _ERROR_LINE.search(line)]
    # Without a recognisable error line (a wrong output, a bare message) the end of
    # the output is where tools put their verdict.
    return errors or candidates[-FINGERPRINT_MAX_LINES:]


def _norm_value(value: Any, depth: int) -> str:
    """A state value normalised like error text: literals become placeholders."""
    if value is None or isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float)):
        return "<n>"
    if depth >= STATE_MAX_DEPTH:
        return "..."
    if isinstance(value, Mapping):
        items = sorted(((_safe_str(k).lower(), v) for k, v in value.items()), key=lambda kv: kv[0])
        body = ", ".join(f"{k}={_norm_value(v, depth + 1)}" for k, v in items[:STATE_MAX_ITEMS])
        return "{" + body + "}"
    if isinstance(value, (set, frozenset)):
        return "[" + ", ".join(sorted(_norm_value(v, depth + 1) for v in value)[:STATE_MAX_ITEMS]) + "]"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_norm_value(v, depth + 1) for v in value[:STATE_MAX_ITEMS]) + "]"
    return _normalise(clean_text(_safe_str(value), FINGERPRINT_MAX_CHARS))


def _safe_str(value: Any) -> str:
    try:
        return str(value)
    except Exception:  # noqa: BLE001 - a hostile __str__ must not break capture
        return f"<{type(value).__name__}>"


def _action_verb(action: str | None) -> str:
    m = _VERB.search(clean_text(action, FINGERPRINT_MAX_CHARS)) if action else None
    return _normalise(m.group(0)) if m else "-"


def _transition(
    action: str | None,
    state_before: Mapping[str, Any] | None,
    state_after: Mapping[str, Any] | None,
    failure_reason: str | None,
) -> str:
    before = "-" if state_before is None else _norm_value(state_before, 0)
    after = "-" if state_after is None else _norm_value(state_after, 0)
    reason = _normalise(clean_text(failure_reason, FINGERPRINT_MAX_CHARS)) if failure_reason else ""
    parts = (
        "transition",
        f"before: {before[:FINGERPRINT_MAX_CHARS]}",
        f"action: {_action_verb(action)}",
        f"after: {after[:FINGERPRINT_MAX_CHARS]}",
        f"reason: {reason or '-'}",
    )
    return " | ".join(parts)


# --------------------------------------------------------------------------- public API


def fingerprint(
    error_text: str | bytes | bytearray | None,
    *,
    action: str | None = None,
    state_before: Mapping[str, Any] | None = None,
    state_after: Mapping[str, Any] | None = None,
    failure_reason: str | None = None,
    scan_chars: int = DEFAULT_CONFIG.error_text_scan_chars,
) -> str:
    """Normalise a failure into a stable, literal-free string (DESIGN §3).

    The failure lines are chosen first (a traceback's final exception line; else
    the lines that read like errors, without caret markers, echoed input, usage
    dumps and "did you mean" suggestions), then lowercased with volatile literals
    replaced by ``<str>``, ``<n>`` (numbers, hex ids, hashes), ``<path>``, ``<loc>``,
    ``<url>``, ``<email>``, ``<uuid>``, ``<flag>`` and ``<id>``. Structural words
    (syntax, unknown, missing, not found, ...) and the exception type are kept.
    Up to ``FINGERPRINT_MAX_LINES`` distinct failure lines are joined with `` | ``.

    When the text is empty (or holds nothing but markers), the transition is
    fingerprinted instead: ``state_before`` + the action's verb + ``state_after``
    + ``failure_reason``, with keys sorted and values normalised like text.

    Args:
        error_text: What the tool printed. Bytes, non-UTF-8 and megabyte inputs are
            accepted; only ``scan_chars`` characters (head and tail) are read.
        action: The action that failed; lines of output that repeat it are treated as
            echoed input, and its first token is the verb of a transition fingerprint.
        state_before: Structured state before the step, for transition fingerprints.
        state_after: Structured state after the step, for transition fingerprints.
        failure_reason: Why a transition failed (``"no_progress"``, ``"stuck"``, ...).
        scan_chars: Characters of text and action read (``MemoryConfig.error_text_scan_chars``).

    Returns:
        The fingerprint. The same input gives the same string in every process.

    Example:
        >>> fingerprint("KeyError: 'user_42'") == fingerprint("KeyError: 'order_7'")
        True
    """
    text = clean_text(error_text, scan_chars)
    if text.strip():
        action_text = clean_text(action, scan_chars) if action else None
        seen: list[str] = []
        for line in _failure_lines(text, action_text):
            norm = _normalise(line)
            if norm and norm not in seen:
                seen.append(norm)
                if len(seen) >= FINGERPRINT_MAX_LINES:
                    break
        if seen:
            return " | ".join(seen)[:FINGERPRINT_MAX_CHARS]
    return _transition(action, state_before, state_after, failure_reason)


def fingerprint_id(fp: str) -> str:
    """A short stable id of a fingerprint: 12 hex characters, the same in every process.

    Example:
        >>> len(fingerprint_id("no such column: <id>"))
        12
    """
    return stable_hash(fp, length=12)


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
    scan_chars: int = DEFAULT_CONFIG.error_text_scan_chars,
) -> list[str]:
    """Map a failure's structure onto ``TAG_VOCABULARY`` (DESIGN §3).

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
        scan_chars: Characters of text and action read (``MemoryConfig.error_text_scan_chars``).

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
        failure = "\n".join(_failure_lines(cleaned, action_text or None))
        lowered = failure.lower()
        tags.update(tag for tag, rule in _TAG_RULES if rule.search(lowered))
        tags.update(_literal_tags(failure))
        if action_text and _unbalanced_quotes(action_text):
            tags.add("path_quote")
    if isinstance(context, Mapping):
        tags.update(_context_tags(context))
    return sorted(tags)


# --------------------------------------------------------------------------- detection


def failure_text(step: Step) -> str:
    """The text to fingerprint for a step: its error text, else its observation when it failed.

    Example:
        >>> from langmem_plus.records import Feedback
        >>> failure_text(Step(index=0, action="x", observation="bad input",
        ...                   feedback=Feedback(hard_failure=True)))
        'bad input'
    """
    if step.feedback.error_text.strip():
        return step.feedback.error_text
    if step.feedback.failed:
        return step.observation
    return ""


def _is_docs(step: Step) -> bool:
    return step.info.get("kind") == "docs"


def _advanced(step: Step, best: float | None) -> bool:
    """Did the step move toward the goal? Progress above the best so far, or a reward/success."""
    progress = step.feedback.progress
    if progress is not None:
        return progress > (best if best is not None else 0.0)
    return step.feedback.reward > 0 or step.info.get("success") is True


def _stall_length(step: Step, prior: Sequence[Step]) -> tuple[int, float | None]:
    """Consecutive steps without progress ending at ``step``, and its progress delta.

    Docs lookups are neutral: they neither advance nor count as stalled steps.
    """
    best: float | None = None
    last: float | None = None
    delta_base: float | None = None
    streak = 0
    for s in (*prior, step):
        if _is_docs(s):
            continue
        delta_base = last
        if _advanced(s, best):
            streak = 0
        else:
            streak += 1
        progress = s.feedback.progress
        if progress is not None:
            best = progress if best is None else max(best, progress)
            last = progress
    now_progress = step.feedback.progress
    delta = None if now_progress is None or delta_base is None else now_progress - delta_base
    return streak, delta


def _same_action(a: str, b: str) -> bool:
    return _SPACE.sub(" ", a).strip() == _SPACE.sub(" ", b).strip()


def _repeats(step: Step, prior: Sequence[Step], window: int) -> bool:
    """The step repeats a recent step's action and lands in the same state."""
    for earlier in prior[-window:]:
        if _is_docs(earlier) or not _same_action(earlier.action, step.action):
            continue
        if step.state_after is not None or earlier.state_after is not None:
            if earlier.state_after == step.state_after:
                return True
        elif earlier.observation == step.observation:
            # Without structured state the observation is the best view of the state.
            return True
    return False


def detect_failure(
    step: Step,
    history: Sequence[Step],
    *,
    namespace: Namespace,
    run_id: str,
    task: TaskSpec | None = None,
    config: MemoryConfig = DEFAULT_CONFIG,
    now: float | None = None,
) -> ErrorEvent | None:
    """Decide whether ``step`` is a failure and, if so, build its ErrorEvent (DESIGN §3).

    Channels, in order: ``hard`` (``hard_failure``), ``constraint``
    (``constraint_failure``, tagged ``constraint_failed``), then ``no_progress``:
    either the run has gone ``config.stall_steps`` steps without progress (emitted
    when the stall length reaches a multiple of ``stall_steps``, so once per
    threshold, not on every later step; tagged ``no_progress``), or the step
    repeats an action from the last ``config.repeat_window`` steps and lands in
    the same state (tagged ``state_stall``). A docs lookup (``info["kind"] ==
    "docs"``) is never a failure and does not count toward a stall.

    Args:
        step: The step just executed.
        history: Earlier steps of the same run, oldest first. Steps whose index is
            not below ``step.index`` are ignored, so the whole trajectory may be passed.
        namespace: Namespace of the memory the event belongs to.
        run_id: The run the step belongs to.
        task: The task, for the event's tool, domain and task scope.
        config: Thresholds (``stall_steps``, ``repeat_window``) and text sizes
            (``error_text_scan_chars`` read, ``error_text_max_chars`` kept on the event).
        now: Timestamp of the event; ``time.time()`` when None.

    Returns:
        The ErrorEvent, or None when the step is not a failure.

    Example:
        >>> from langmem_plus.records import Feedback
        >>> bad = Step(index=0, action="keep agee > 3", tool="gridtool",
        ...            feedback=Feedback(hard_failure=True, error_text="unknown column 'agee'"))
        >>> ev = detect_failure(bad, [], namespace=("acme",), run_id="r1", now=0.0)
        >>> ev.channel, ev.fingerprint, ev.tags
        ('hard', 'unknown column <str>', ['column_reference'])
    """
    ns = validate_namespace(namespace)
    if _is_docs(step):
        return None
    prior = [h for h in history if h.index < step.index]
    feedback = step.feedback
    streak, delta = _stall_length(step, prior)
    context: dict[str, Any] = {"progress_delta": delta, "unsafe": step.info.get("unsafe") is True}
    channel: Channel
    if feedback.hard_failure:
        channel, reason = "hard", "hard_failure"
    elif feedback.constraint_failure:
        channel, reason = "constraint", "constraint_failed"
    else:
        stalled = streak > 0 and streak % config.stall_steps == 0
        repeated = streak > 0 and _repeats(step, prior, config.repeat_window)
        if not (stalled or repeated):
            return None
        channel, reason = "no_progress", "state_stall" if repeated else "no_progress"
        context["repeated"] = repeated
    context["channel"] = channel
    info_reason = step.info.get("failure_reason")
    if isinstance(info_reason, str) and info_reason.strip():
        reason = info_reason
    text = failure_text(step)
    fp = fingerprint(
        text,
        action=step.action,
        state_before=step.state_before,
        state_after=step.state_after,
        failure_reason=reason,
        scan_chars=config.error_text_scan_chars,
    )
    fp_id = fingerprint_id(fp)
    return ErrorEvent(
        id=stable_id("ev", *ns, run_id, str(step.index), fp_id),
        namespace=ns,
        run_id=run_id,
        step=step.index,
        fingerprint=fp,
        fingerprint_id=fp_id,
        tags=extract_tags(text, step.action, context, scan_chars=config.error_text_scan_chars),
        channel=channel,
        action=clean_text(step.action, config.error_text_max_chars),
        error_text=clean_text(text, config.error_text_max_chars),
        tool=step.tool or (task.tool if task else None),
        domain=task.domain if task else None,
        task=task.task_id if task else None,
        ts=time.time() if now is None else now,
    )


__all__ = [
    "TAG_VOCABULARY",
    "detect_failure",
    "extract_tags",
    "failure_text",
    "fingerprint",
    "fingerprint_id",
]
