"""Token counting that never hangs offline: tiktoken when it can, a labelled estimate otherwise.

tiktoken downloads its BPE files on first use. On a machine without internet the
download fails (or, behind a black-holed network, hangs), so ``count_tokens``
looks in tiktoken's local cache first and loads from it when the file is there;
otherwise it tries the load in a daemon thread and gives up after
``TIKTOKEN_LOAD_TIMEOUT_S``. Either outcome is remembered for the process. When
no encoding loads, the count is an approximation (a blend of ~4 characters per
token and ~1.3 tokens per word, the usual rules of thumb for English and code)
and says so: ``exact=False`` and a method string starting with ``approx``.

Example:
    >>> tc = count_tokens("WRONG: sort -d -> CORRECT: sort --desc")
    >>> tc.n > 0 and tc.method.startswith(("tiktoken:", "approx:"))
    True
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import re
import tempfile
import threading
from functools import lru_cache
from typing import Any, NamedTuple

logger = logging.getLogger(__name__)

DEFAULT_ENCODING = "cl100k_base"
"""Encoding used when no model is given or tiktoken does not know the model."""
TIKTOKEN_LOAD_TIMEOUT_S = 3.0
"""Seconds to wait for tiktoken to fetch an encoding that is not in its local cache."""
CHARS_PER_TOKEN = 4.0
"""Approximation: characters per token (OpenAI's rule of thumb for English text)."""
TOKENS_PER_WORD = 1.3
"""Approximation: tokens per word or punctuation run (code and identifiers split more)."""
COUNT_CACHE_SIZE = 1 << 14
"""Texts whose counts are remembered per encoding: a retrieval counts the same hint lines and header again
(docs/PERFORMANCE.md)."""
COUNT_CACHE_MAX_CHARS = 1024
"""Longest text whose count is remembered: hint lines and headers are short; a long text is counted afresh,
so the cache holds at most ``COUNT_CACHE_SIZE`` x this many characters."""

_BLOB_BASE = "https://openaipublic.blob.core.windows.net/encodings/"
_BLOB_FILE = {
    "r50k_base": "r50k_base.tiktoken",
    "p50k_base": "p50k_base.tiktoken",
    "p50k_edit": "p50k_base.tiktoken",
    "cl100k_base": "cl100k_base.tiktoken",
    "o200k_base": "o200k_base.tiktoken",
    "o200k_harmony": "o200k_base.tiktoken",
}
_WORDISH = re.compile(r"\w+|[^\w\s]+")

_lock = threading.Lock()
_encodings: dict[str, Any] = {}
_approx_logged = False


class TokenCount(NamedTuple):
    """A token count and how it was obtained."""

    n: int
    """Number of tokens."""
    exact: bool
    """True when a tiktoken encoding counted them."""
    method: str
    """``tiktoken:<encoding>`` or ``approx:...`` naming the estimate."""


def count_tokens(text: str, model: str | None = None) -> TokenCount:
    """Count the tokens of ``text`` for ``model``.

    Args:
        text: The text.
        model: A model name such as ``"gpt-4o"`` (an ``"openai:"`` prefix is
            ignored); ``None`` uses ``DEFAULT_ENCODING``.

    Returns:
        ``TokenCount(n, exact, method)``; ``exact`` is False when tiktoken's
        encoding could not be loaded and the count is estimated.

    Example:
        >>> count_tokens("").n
        0
    """
    name = encoding_name(model)
    return _remembered(text, name) if len(text) <= COUNT_CACHE_MAX_CHARS else _count(text, name)


@lru_cache(maxsize=COUNT_CACHE_SIZE)
def _remembered(text: str, name: str) -> TokenCount:
    """``_count``, remembered: a text's count never changes within a process (the encoding, or its absence,
    is settled on first use)."""
    return _count(text, name)


def _count(text: str, name: str) -> TokenCount:
    """``count_tokens`` with the encoding named."""
    encoding = _load_encoding(name)
    if encoding is not None:
        try:
            return TokenCount(len(encoding.encode(text, disallowed_special=())), True, f"tiktoken:{name}")
        except Exception as exc:  # a broken encoding must not break a run
            logger.warning("langmem_plus: tiktoken %s failed (%s); approximating", name, exc)
    return approximate_tokens(text)


def approximate_tokens(text: str) -> TokenCount:
    """Estimate tokens as the mean of a character-based and a word-based estimate.

    Example:
        >>> approximate_tokens("hello world")
        TokenCount(n=3, exact=False, method='approx:chars+words')
    """
    _log_approximation_once()
    if not text:
        return TokenCount(0, False, "approx:chars+words")
    by_chars = len(text) / CHARS_PER_TOKEN
    by_words = len(_WORDISH.findall(text)) * TOKENS_PER_WORD
    return TokenCount(max(1, math.ceil((by_chars + by_words) / 2)), False, "approx:chars+words")


def encoding_name(model: str | None) -> str:
    """The tiktoken encoding for a model name, ``DEFAULT_ENCODING`` when unknown."""
    if not model:
        return DEFAULT_ENCODING
    model = model.split(":", 1)[-1]
    try:
        import tiktoken

        return str(tiktoken.encoding_name_for_model(model))
    except Exception:
        return DEFAULT_ENCODING


def _load_encoding(name: str) -> Any | None:
    """The tiktoken Encoding for ``name``, or None; attempted once per process."""
    with _lock:
        if name in _encodings:
            return _encodings[name]
    encoding = _load_from_cache(name) if _is_cached(name) else _load_with_timeout(name)
    with _lock:
        _encodings.setdefault(name, encoding)
        return _encodings[name]


def _cache_dir() -> str | None:
    """tiktoken's cache directory, resolved as tiktoken resolves it; None when disabled."""
    for var in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if var in os.environ:
            return os.environ[var] or None
    return os.path.join(tempfile.gettempdir(), "data-gym-cache")


def _is_cached(name: str) -> bool:
    """True when the BPE file of a known encoding is already in tiktoken's cache."""
    cache_dir = _cache_dir()
    blob = _BLOB_FILE.get(name)
    if cache_dir is None or blob is None:
        return False
    key = hashlib.sha1((_BLOB_BASE + blob).encode()).hexdigest()
    return os.path.exists(os.path.join(cache_dir, key))


def _load_from_cache(name: str) -> Any | None:
    """Load an encoding whose file is cached locally (no network)."""
    try:
        import tiktoken

        return tiktoken.get_encoding(name)
    except Exception as exc:
        logger.info("langmem_plus: tiktoken encoding %s did not load from cache: %s", name, exc)
        return None


def _load_with_timeout(name: str) -> Any | None:
    """Try ``tiktoken.get_encoding`` in a daemon thread; give up after the timeout."""
    box: list[Any] = []

    def attempt() -> None:
        box.append(_load_from_cache(name))

    worker = threading.Thread(target=attempt, name=f"lmp-tiktoken-{name}", daemon=True)
    worker.start()
    worker.join(TIKTOKEN_LOAD_TIMEOUT_S)
    if not box:
        logger.info(
            "langmem_plus: tiktoken encoding %s did not load within %.1f s", name, TIKTOKEN_LOAD_TIMEOUT_S
        )
        return None
    return box[0]


def _log_approximation_once() -> None:
    global _approx_logged
    if not _approx_logged:
        _approx_logged = True
        logger.info(
            "langmem_plus: tiktoken encodings are unavailable (offline?); token counts are "
            "approximated (~%s chars/token blended with ~%s tokens/word)",
            CHARS_PER_TOKEN,
            TOKENS_PER_WORD,
        )


def _reset_for_tests() -> None:
    """Forget cached encodings and the logged-once flag (tests only)."""
    global _approx_logged
    with _lock:
        _encodings.clear()
    _remembered.cache_clear()
    _approx_logged = False


__all__ = ["DEFAULT_ENCODING", "TokenCount", "approximate_tokens", "count_tokens", "encoding_name"]
