"""Fingerprints: the part of a failure that names its cause, with every volatile literal replaced (design.md §3).

Pure and deterministic; at most ``scan_chars`` characters are read, and every pattern is anchored so hostile
input cannot make it backtrack quadratically.

Example:
    >>> fingerprint("sqlite3.OperationalError: no such column: agee")
    'sqlite3.operationalerror: no such column: <id>'
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from langmem_plus._text import clean_text, stable_hash
from langmem_plus.config import DEFAULT_CONFIG

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
SPACE = re.compile(r"\s+")
"""Runs of whitespace (shared with detection)."""
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
    return SPACE.sub(" ", s).strip()[:FINGERPRINT_MAX_CHARS]


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


def failure_lines(text: str, action: str | None) -> list[str]:
    """The raw lines of ``text`` that name the failure, in order (design.md §3)."""
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
    scan_chars: int = DEFAULT_CONFIG.capture.error_text_scan_chars,
) -> str:
    """Normalise a failure into a stable, literal-free string (design.md §3).

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
        scan_chars: Characters of text and action read (``MemoryConfig.capture.error_text_scan_chars``).

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
        for line in failure_lines(text, action_text):
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


