"""Capture: turn a failed or stalled step into a fingerprinted ErrorEvent (design.md §3).

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
``MemoryConfig.capture.error_text_scan_chars`` characters are read (head and tail), and
every pattern is anchored so that hostile input cannot make it backtrack
quadratically.

The package, one idea per module: ``fingerprints`` (the cause, literal-free),
``tags`` (the structure, on a fixed vocabulary) and ``detect`` (failed or stalled,
on which channel, and the event).

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

from langmem_plus.capture.detect import detect_failure, failure_text
from langmem_plus.capture.fingerprints import fingerprint, fingerprint_id
from langmem_plus.capture.tags import TAG_VOCABULARY, extract_tags

__all__ = [
    "TAG_VOCABULARY",
    "detect_failure",
    "extract_tags",
    "failure_text",
    "fingerprint",
    "fingerprint_id",
]
