"""Bottom-layer text helpers shared by records, capture, learning and executors.

Pure functions only: cleaning untrusted text (bytes, NUL, huge inputs), a stable
hash that is the same in every process (Python's ``hash()`` is salted), and the
action tokenizer that lesson synthesis and the scripted executor must agree on.

Example:
    >>> clean_text(b"caf\\xe9\\x00 ok")
    'caf\\ufffd ok'
    >>> action_tokens("keep age>=30 | pick name")
    ['keep', 'age', '>=', '30', '|', 'pick', 'name']
"""

from __future__ import annotations

import hashlib
import re

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_ACTION_TOKEN = re.compile(
    r"""
    "(?:[^"\\]|\\.)*"?      # double-quoted string (possibly unterminated)
  | '(?:[^'\\]|\\.)*'?      # single-quoted string
  | [A-Za-z_][\w.\-]*       # words, dotted names, --flags after the dashes
  | -?\d+(?:\.\d+)?         # numbers
  | [<>!=]=|==|->|=>|\|\||&&|--?  # multi-char operators and flag dashes
  | \S                      # any other single character
    """,
    re.VERBOSE,
)


def clean_text(value: str | bytes | bytearray | None, max_chars: int | None = None) -> str:
    """Decode and sanitise untrusted text; cut it keeping the head and the tail.

    Bytes are decoded as UTF-8 with replacement characters, NUL and other control
    characters (except newline and tab) are removed. When ``max_chars`` is given
    and exceeded, a quarter of the budget keeps the head and the rest the tail,
    since tracebacks and tool errors put the failure at the end.
    """
    if value is None:
        return ""
    if isinstance(value, (bytes, bytearray)):
        value = bytes(value).decode("utf-8", errors="replace")
    elif not isinstance(value, str):
        value = str(value)
    text = _CONTROL.sub("", value.replace("\r\n", "\n").replace("\r", "\n"))
    if max_chars is not None and len(text) > max_chars:
        marker = f"\n...[{len(text) - max_chars} chars cut]...\n"
        keep = max(max_chars - len(marker), 0)
        head = keep // 4
        tail = keep - head
        text = text[:head] + marker + (text[-tail:] if tail else "")
    return text


def stable_hash(*parts: str, length: int = 16) -> str:
    """Hex digest of the parts, identical across processes and machines."""
    h = hashlib.blake2b(digest_size=max(4, min(32, (length + 1) // 2)))
    for part in parts:
        h.update(part.encode("utf-8", errors="replace"))
        h.update(b"\x1f")
    return h.hexdigest()[:length]


def stable_id(prefix: str, *parts: str) -> str:
    """A deterministic record id such as ``les_3f2a...`` built from its identifying parts."""
    return f"{prefix}_{stable_hash(*parts)}"


def action_tokens(action: str) -> list[str]:
    """Split an action (a command line, an API call) into comparable tokens."""
    return _ACTION_TOKEN.findall(action)


def word_set(text: str) -> set[str]:
    """Lowercased alphanumeric words of a text, for overlap scores."""
    return set(re.findall(r"[a-z0-9]+", text.lower()))
