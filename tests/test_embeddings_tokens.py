"""HashingEmbeddings and count_tokens: deterministic, offline, honest about approximations."""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.embeddings import Embeddings

from langmem_plus import tokens
from langmem_plus.embeddings import HashingEmbeddings, make_embeddings
from langmem_plus.tokens import TokenCount, count_tokens, encoding_name

TEXTS = [
    "unknown column 'agee' in keep",
    "Traceback (most recent call last):\n  File \"x.py\", line 3\nNameError: name 'foo' is not defined",
    "",
    "   ",
    "ünïcödé テキスト \ud800 surrogate",
]

DIGEST_SCRIPT = """
import hashlib, sys
from langmem_plus.embeddings import HashingEmbeddings
texts = {texts!r}
arr = HashingEmbeddings().embed_array(texts)
print(hashlib.sha256(arr.tobytes()).hexdigest())
"""


def _digest_in_subprocess(hashseed: str) -> str:
    env = {**os.environ, "PYTHONHASHSEED": hashseed, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    out = subprocess.run(
        [sys.executable, "-c", DIGEST_SCRIPT.format(texts=TEXTS)],
        env=env, capture_output=True, text=True, timeout=60, check=True,
    )
    return out.stdout.strip()


def test_embeddings_identical_across_processes_with_different_hash_seeds() -> None:
    import hashlib

    here = hashlib.sha256(HashingEmbeddings().embed_array(TEXTS).tobytes()).hexdigest()
    assert _digest_in_subprocess("1") == _digest_in_subprocess("12345") == here


def test_unit_norm_float_vectors_and_query_equals_document() -> None:
    emb = HashingEmbeddings(dim=128)
    docs = emb.embed_documents(TEXTS)
    assert len(docs) == len(TEXTS) and all(len(v) == 128 for v in docs)
    assert all(isinstance(x, float) for x in docs[0])
    norms = np.linalg.norm(np.array(docs), axis=1)
    assert norms == pytest.approx(np.ones(len(TEXTS)), abs=1e-6)
    assert emb.embed_query(TEXTS[1]) == docs[1]
    assert asyncio.run(emb.aembed_query(TEXTS[1])) == docs[1]
    assert asyncio.run(emb.aembed_documents(TEXTS[:2])) == docs[:2]


def test_empty_text_is_a_fixed_nonzero_unit_vector() -> None:
    emb = HashingEmbeddings()
    empty, blank = emb.embed_documents(["", " \n\t "])
    assert empty == blank == emb.embed_query("")
    assert np.count_nonzero(empty) >= 1 and np.linalg.norm(empty) == pytest.approx(1.0)


def test_similar_texts_are_closer_than_unrelated() -> None:
    emb = HashingEmbeddings()
    a, b, c, d = np.array(emb.embed_documents([
        "unknown column 'agee' in keep clause",
        "unknown column 'agge' in keep clause",
        "permission denied while writing /tmp/out.csv",
        "WRONG: sort -d age -> CORRECT: sort --desc age",
    ]))
    assert a @ b > 0.6
    assert a @ b > a @ c + 0.4 and a @ b > a @ d + 0.3
    typo = np.array(emb.embed_query("sort --dsc age"))
    assert typo @ d > typo @ c  # character 3-grams survive a typo


def test_word_order_matters_a_little() -> None:
    emb = HashingEmbeddings()
    x, y = np.array(emb.embed_documents(["sort age desc", "desc age sort"]))
    assert 0.5 < x @ y < 0.999


def test_dim_validation() -> None:
    with pytest.raises(ValueError, match="dim"):
        HashingEmbeddings(dim=1)


def test_make_embeddings_forms() -> None:
    assert isinstance(make_embeddings(), HashingEmbeddings) and make_embeddings().dim == 256
    assert make_embeddings("hashing", dim=64).dim == 64
    assert make_embeddings("hashing:32").dim == 32
    mine = HashingEmbeddings(16)
    assert make_embeddings(mine) is mine
    for bad in ("sentence-transformers", "openai", "hashing:abc", "", 42):
        with pytest.raises(ValueError, match="hashing.*openai:<model>"):
            make_embeddings(bad)  # type: ignore[arg-type]


def test_make_embeddings_openai_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "langchain_openai", None)  # import fails as if not installed
    with pytest.raises(ImportError, match=r"langmem-plus\[openai\]"):
        make_embeddings("openai:text-embedding-3-small")


def test_make_embeddings_openai_builds_the_model(monkeypatch: pytest.MonkeyPatch) -> None:
    import types

    class FakeOpenAIEmbeddings(HashingEmbeddings):
        def __init__(self, model: str) -> None:
            super().__init__()
            self.model = model

    monkeypatch.setitem(sys.modules, "langchain_openai", types.SimpleNamespace(OpenAIEmbeddings=FakeOpenAIEmbeddings))
    built: Any = make_embeddings("openai:text-embedding-3-small")
    assert isinstance(built, Embeddings) and built.model == "text-embedding-3-small"


# --------------------------------------------------------------------------- tokens


@pytest.fixture
def fresh_tokens() -> Any:
    tokens._reset_for_tests()
    yield tokens
    tokens._reset_for_tests()


def _block_tiktoken(monkeypatch: pytest.MonkeyPatch) -> None:
    import tiktoken

    def refuse(name: str) -> Any:
        raise ConnectionError(f"no network to fetch {name}")

    monkeypatch.setattr(tiktoken, "get_encoding", refuse)


def test_count_tokens_approximates_when_tiktoken_is_blocked(
    fresh_tokens: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    _block_tiktoken(monkeypatch)
    text = "WRONG: sort -d age -> CORRECT: sort --desc age. " * 10
    with caplog.at_level(logging.INFO, logger="langmem_plus"):
        first = count_tokens(text)
        second = count_tokens("hello world", model="gpt-4o")
    assert isinstance(first, TokenCount) and not first.exact and first.method.startswith("approx")
    assert 80 <= first.n <= 200  # the true cl100k count of this text is about 130
    assert second == TokenCount(3, False, "approx:chars+words")
    assert sum("approximated" in m for m in caplog.messages) == 1  # logged once
    assert count_tokens("") == TokenCount(0, False, "approx:chars+words")


def test_count_tokens_uses_tiktoken_when_it_loads(fresh_tokens: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import tiktoken

    class FakeEncoding:
        def encode(self, text: str, disallowed_special: Any = ()) -> list[int]:
            return list(range(len(text.split())))

    asked: list[str] = []
    monkeypatch.setattr(tiktoken, "get_encoding", lambda name: asked.append(name) or FakeEncoding())
    assert count_tokens("a b c") == TokenCount(3, True, "tiktoken:cl100k_base")
    assert count_tokens("a b", model="gpt-4o") == TokenCount(2, True, "tiktoken:o200k_base")
    count_tokens("a")
    assert asked == ["cl100k_base", "o200k_base"]  # each encoding loaded once, then cached


def test_count_tokens_gives_up_on_a_hanging_download(fresh_tokens: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import tiktoken

    release = threading.Event()
    asked: list[str] = []

    def hanging(name: str) -> Any:
        asked.append(name)
        release.wait(60)  # a download that never finishes while the test runs
        raise ConnectionError("gave up")

    monkeypatch.setattr(tiktoken, "get_encoding", hanging)
    monkeypatch.setattr(tokens, "TIKTOKEN_LOAD_TIMEOUT_S", 0.2)
    try:
        result = count_tokens("some text here")
        assert not release.is_set()  # answered while the load still hangs: it did not wait for it
        assert not result.exact and result.n > 0
        again = count_tokens("again")
        assert not again.exact and asked == ["cl100k_base"]  # the failed attempt is remembered, not retried
    finally:
        release.set()


def test_count_tokens_with_real_tiktoken_is_labelled(fresh_tokens: Any) -> None:
    """Whatever this machine allows (cached file, download, or neither), the label tells the truth."""
    result = count_tokens("The quick brown fox jumps over the lazy dog.")
    if result.exact:
        assert result == TokenCount(10, True, "tiktoken:cl100k_base")
    else:
        assert result.method.startswith("approx") and 6 <= result.n <= 16


def test_encoding_name() -> None:
    assert encoding_name(None) == "cl100k_base"
    assert encoding_name("gpt-4o") == encoding_name("openai:gpt-4o") == "o200k_base"
    assert encoding_name("no-such-model") == "cl100k_base"


def _reference_rows(emb: HashingEmbeddings, texts: list[str]) -> np.ndarray:
    """One text at a time through ``text_features`` and ``_slot`` (``_row``), then L2-normalised."""
    rows = [emb._row(t) for t in texts]
    return np.vstack([(r / np.linalg.norm(r)).astype(np.float32) for r in rows]) if rows else np.zeros((0, emb.dim), np.float32)


@pytest.mark.parametrize("dim", [2, 64, 256])
def test_batched_slot_tables_equal_the_feature_by_feature_reference(dim: int, monkeypatch: pytest.MonkeyPatch) -> None:
    import random

    import langmem_plus.embeddings as emb_mod

    rng = random.Random(dim)
    alphabet = "ab Z  é_-|.'\"\t\n12テ"
    texts = TEXTS + ["a", "ab", "Hi there", "x" * 300] + [
        "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 80))) for _ in range(300)
    ]
    emb = HashingEmbeddings(dim=dim)
    assert np.array_equal(emb.embed_array(texts), _reference_rows(emb, texts))
    monkeypatch.setattr(emb_mod, "FEATURE_CACHE_SIZE", 8)  # tables cleared over and over: same vectors
    emb_mod._tables.cache_clear()
    assert np.array_equal(emb.embed_array(texts), _reference_rows(emb, texts))
    assert all(len(t) <= 8 for t in emb_mod._tables(dim))
    emb_mod._tables.cache_clear()
    assert emb.embed_array([]).shape == (0, dim)


def test_count_tokens_remembers_short_texts_only(fresh_tokens: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import tiktoken

    encoded: list[str] = []

    class FakeEncoding:
        def encode(self, text: str, disallowed_special: Any = ()) -> list[int]:
            encoded.append(text)
            return list(range(len(text.split())))

    monkeypatch.setattr(tiktoken, "get_encoding", lambda name: FakeEncoding())
    short, long = "a b c", "w " * tokens.COUNT_CACHE_MAX_CHARS
    assert [count_tokens(short) for _ in range(3)] == [TokenCount(3, True, "tiktoken:cl100k_base")] * 3
    assert count_tokens(long) == count_tokens(long) == TokenCount(tokens.COUNT_CACHE_MAX_CHARS, True, "tiktoken:cl100k_base")
    assert encoded == [short, long, long]  # the short text counted once, the long one each time


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_remembered_counts_equal_fresh_ones(text: str) -> None:
    assert count_tokens(text) == count_tokens(text) == tokens._count(text, tokens.DEFAULT_ENCODING)
