"""Embeddings: an offline, deterministic default and a factory for the others (design.md §4).

``HashingEmbeddings`` turns text into a vector without a model or a network:
every feature of the text (lowercased words, word bigrams and character 3-grams)
is hashed with BLAKE2b to a dimension and a sign ("signed feature hashing",
Weinberger et al. 2009), the counts are summed, and the vector is L2-normalised.
Texts that share words and spellings share dimensions, so cosine similarity
tracks lexical overlap, which is what error fingerprints and rule texts need.
BLAKE2b, unlike Python's salted ``hash()``, gives the same vector in every
process and on every machine, so a store written by one process is readable by
the next.

``make_embeddings`` builds any supported embedder from a short spec string, or
passes a LangChain ``Embeddings`` instance through.

Example:
    >>> emb = HashingEmbeddings(dim=64)
    >>> a, b = emb.embed_documents(["unknown column agee", "unknown column agge"])
    >>> round(sum(x * x for x in a), 4)
    1.0
    >>> make_embeddings("hashing", dim=64).embed_query("") == emb.embed_query("")
    True
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
from langchain_core.embeddings import Embeddings

from langmem_plus.config import DEFAULT_CONFIG

WORD_WEIGHT = 1.0
"""Weight of a whole-word feature; words carry most of the meaning."""
BIGRAM_WEIGHT = 0.7
"""Weight of a word-bigram feature; word order ("sort desc" vs "desc sort") matters a little."""
CHAR_NGRAM_WEIGHT = 0.35
"""Weight of a character 3-gram feature; catches typos and inflections (agee ~ agge)."""
CHAR_NGRAM = 3
"""Character n-gram length of the sub-word features."""
FEATURE_CACHE_SIZE = 1 << 18
"""Feature -> (dimension, sign) entries memoised per process; vocabularies repeat a lot."""

_WORD = re.compile(r"\w+")
_SPACES = re.compile(r"\s+")
_EMPTY_FEATURE = "\x00empty"


@lru_cache(maxsize=FEATURE_CACHE_SIZE)
def _slot(feature: str, dim: int) -> tuple[int, float]:
    """Dimension and sign of one feature: 8 bytes of BLAKE2b, never Python's ``hash()``."""
    digest = hashlib.blake2b(feature.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    value = int.from_bytes(digest, "little")
    sign = 1.0 if value & 1 else -1.0
    return (value >> 1) % dim, sign


class _SlotTable(dict[str, int]):
    """One feature family's memo: feature text (no family prefix) -> ``2 * slot + (sign > 0)``.

    A plain dict lookup per feature (``__missing__`` hashes the first sighting with
    ``_slot``), so ``embed_array`` skips building the prefixed feature string and the
    ``lru_cache`` key for every character 3-gram. Cleared when it reaches
    ``FEATURE_CACHE_SIZE`` entries, so memory stays bounded.
    """

    def __init__(self, prefix: str, dim: int) -> None:
        super().__init__()
        self.prefix, self.dim = prefix, dim

    def __missing__(self, key: str) -> int:
        if len(self) >= FEATURE_CACHE_SIZE:
            self.clear()
        slot, sign = _slot(self.prefix + key, self.dim)
        code = 2 * slot + (1 if sign > 0 else 0)
        self[key] = code
        return code


@lru_cache(maxsize=16)
def _tables(dim: int) -> tuple[_SlotTable, _SlotTable, _SlotTable]:
    """The word, bigram and character 3-gram slot tables of one dimension."""
    return _SlotTable("w:", dim), _SlotTable("b:", dim), _SlotTable("c:", dim)


def text_features(text: str) -> list[tuple[str, float]]:
    """The weighted features of a text: words, word bigrams, character 3-grams.

    Features are prefixed by their family (``w:``, ``b:``, ``c:``) so the word
    ``"abc"`` and the 3-gram ``"abc"`` land in different slots.

    Example:
        >>> [f for f, _ in text_features("Hi there")][:3]
        ['w:hi', 'w:there', 'b:hi there']
    """
    lowered = _SPACES.sub(" ", text.lower()).strip()
    if not lowered:
        return []
    words = _WORD.findall(lowered)
    features = [(f"w:{w}", WORD_WEIGHT) for w in words]
    features += [(f"b:{a} {b}", BIGRAM_WEIGHT) for a, b in zip(words, words[1:])]
    padded = f" {lowered} "
    features += [
        (f"c:{padded[i:i + CHAR_NGRAM]}", CHAR_NGRAM_WEIGHT)
        for i in range(len(padded) - CHAR_NGRAM + 1)
    ]
    return features


class HashingEmbeddings(Embeddings):
    """Deterministic feature-hashing embeddings; offline, fast, the same in every process.

    Args:
        dim: Number of dimensions (default ``MemoryConfig.storage.embedding_dim``, 256).

    Example:
        >>> emb = HashingEmbeddings(dim=32)
        >>> len(emb.embed_query("syntax error near 'pick'"))
        32
    """

    def __init__(self, dim: int = DEFAULT_CONFIG.storage.embedding_dim) -> None:
        if not isinstance(dim, int) or dim < 2:
            raise ValueError(f"HashingEmbeddings dim must be an int >= 2, got {dim!r}")
        self.dim = dim

    def __repr__(self) -> str:
        return f"HashingEmbeddings(dim={self.dim})"

    def _row(self, text: str) -> np.ndarray:
        """Unnormalised float64 vector of one text; empty text gets a fixed one-hot vector."""
        features = text_features(text) or [(_EMPTY_FEATURE, 1.0)]
        slots = [_slot(feature, self.dim) for feature, _ in features]
        index = np.fromiter((s[0] for s in slots), dtype=np.int64, count=len(slots))
        weights = np.fromiter(
            (s[1] * w for s, (_, w) in zip(slots, features)), dtype=np.float64, count=len(slots)
        )
        row = np.bincount(index, weights=weights, minlength=self.dim)
        if not np.any(row):
            # Signed features can cancel exactly; fall back to the fixed vector
            # so Chroma never receives a zero vector (cosine is undefined there).
            slot, sign = _slot(_EMPTY_FEATURE, self.dim)
            row[slot] = sign
        return row

    def embed_array(self, texts: Sequence[str]) -> np.ndarray:
        """Embed many texts into a ``(len(texts), dim)`` float32 array of unit rows.

        Args:
            texts: The texts; ``None`` entries are treated as empty text.

        Returns:
            A C-contiguous float32 array, one L2-normalised row per text.
        """
        dim = self.dim
        words_t, bigrams_t, chars_t = _tables(dim)
        empty_slot, empty_sign = _slot(_EMPTY_FEATURE, dim)
        empty_code = 2 * empty_slot + (1 if empty_sign > 0 else 0)
        codes: list[int] = []
        weights_of: list[float] = []  # each family's weight, and how many features it has, text by text
        counts: list[int] = []
        rows: list[int] = []
        for text in texts:
            # The features of ``text_features``, in its order (words, bigrams, 3-grams), as slot codes.
            lowered = _SPACES.sub(" ", (text or "").lower()).strip()
            if not lowered:
                codes.append(empty_code)
                weights_of.append(1.0)
                counts.append(1)
                rows.append(1)
                continue
            words = _WORD.findall(lowered)
            padded = f" {lowered} "
            n_grams = len(padded) - CHAR_NGRAM + 1
            codes += map(words_t.__getitem__, words)
            codes += map(bigrams_t.__getitem__, map(" ".join, zip(words, words[1:])))
            codes += [chars_t[padded[i : i + CHAR_NGRAM]] for i in range(n_grams)]
            n_bigrams = max(len(words) - 1, 0)
            weights_of += (WORD_WEIGHT, BIGRAM_WEIGHT, CHAR_NGRAM_WEIGHT)
            counts += (len(words), n_bigrams, n_grams)
            rows.append(len(words) + n_bigrams + n_grams)
        code = np.asarray(codes, dtype=np.int64)
        magnitude = np.repeat(np.asarray(weights_of, dtype=np.float64), counts)
        weights = np.where(code & 1, magnitude, -magnitude)  # sign * weight, exactly
        index = (code >> 1) + np.repeat(np.arange(len(texts), dtype=np.int64) * dim, rows)
        # One bincount for the whole batch; per row it adds in the same order as ``_row``.
        matrix = np.bincount(index, weights=weights, minlength=len(texts) * dim).reshape(len(texts), dim)
        for row in np.flatnonzero(~matrix.any(axis=1)).tolist():
            matrix[row] = self._row(texts[row] or "")  # cancelled features: ``_row``'s fixed fallback
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        return (matrix / norms).astype(np.float32)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed documents.

        Args:
            texts: Texts to embed.

        Returns:
            One unit vector (a list of floats) per text.
        """
        vectors: list[list[float]] = self.embed_array(texts).tolist()
        return vectors

    def embed_query(self, text: str) -> list[float]:
        """Embed a query; identical to embedding it as a document.

        Args:
            text: Text to embed.

        Returns:
            A unit vector.
        """
        return self.embed_documents([text])[0]


_SPEC_FORMS = (
    "None or 'hashing' (offline HashingEmbeddings), 'hashing:<dim>', "
    "'openai:<model>' (needs the langmem-plus[openai] extra), "
    "or a langchain_core Embeddings instance"
)


def make_embeddings(
    spec: str | Embeddings | None = None, *, dim: int = DEFAULT_CONFIG.storage.embedding_dim
) -> Embeddings:
    """Build an embedder from a spec.

    Args:
        spec: ``None`` or ``"hashing"`` for ``HashingEmbeddings(dim)``;
            ``"hashing:<dim>"`` to choose the dimension in the spec;
            ``"openai:<model>"`` for ``langchain_openai.OpenAIEmbeddings``;
            an ``Embeddings`` instance is returned unchanged.
        dim: Dimension of the hashing embedder when the spec does not name one.

    Returns:
        A LangChain ``Embeddings``.

    Raises:
        ValueError: The spec is not one of the supported forms.
        ImportError: ``openai:`` was asked for but ``langchain-openai`` is missing.

    Example:
        >>> make_embeddings("hashing:128").dim
        128
    """
    if spec is None:
        return HashingEmbeddings(dim)
    if isinstance(spec, Embeddings):
        return spec
    if not isinstance(spec, str):
        raise ValueError(f"unsupported embeddings spec {spec!r}; use {_SPEC_FORMS}")
    name, _, arg = spec.strip().partition(":")
    name = name.lower()
    if name == "hashing":
        if not arg:
            return HashingEmbeddings(dim)
        if not arg.isdigit():
            raise ValueError(f"bad dimension in embeddings spec {spec!r}; use {_SPEC_FORMS}")
        return HashingEmbeddings(int(arg))
    if name == "openai" and arg:
        return _openai_embeddings(arg)
    raise ValueError(f"unsupported embeddings spec {spec!r}; use {_SPEC_FORMS}")


def _openai_embeddings(model: str) -> Embeddings:
    """``OpenAIEmbeddings(model=...)``, imported only when asked for."""
    try:
        from langchain_openai import OpenAIEmbeddings
    except ImportError as exc:
        raise ImportError(
            "embeddings spec 'openai:...' needs langchain-openai; "
            "install it with: pip install 'langmem-plus[openai]'"
        ) from exc
    embedder: Embeddings = OpenAIEmbeddings(model=model)
    return embedder


__all__ = ["HashingEmbeddings", "make_embeddings", "text_features"]
