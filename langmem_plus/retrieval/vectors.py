"""VectorCache: the lesson vectors retrieval scores with, kept for the lessons used most recently.

Apart from the engine's ranking: the engine asks for rows, the cache knows where they
come from (its two LRU maps, the snapshot's memory-mapped rows, Chroma, or an
embedder) and what a lesson is embedded by (``lesson_text``, ``rule_core``).
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence

import numpy as np

from langmem_plus.config import DEFAULT_CONFIG
from langmem_plus.embeddings import HashingEmbeddings
from langmem_plus.records import Lesson
from langmem_plus.store.chroma import ChromaStore
from langmem_plus.store.mapping import KIND_SPECS

logger = logging.getLogger(__name__)


class VectorCache:
    """Two vectors per lesson, computed in one batch when first needed.

    ``relevance``: the store's embedding of the lesson's full text (rule, failures it
    answers, tags), for text similarity to a query. ``content``: a local hashing
    embedding of the rule alone, for MMR's redundancy term: lessons answering one
    failure share its text, yet ``filter -> KEEP`` and ``select -> PICK`` are not
    redundant. Local hashing keeps this free of API calls whatever the embedder.

    Both are kept for the ``capacity`` most recently used lessons (content rows by their
    text, which lessons with one WRONG pattern share; least recently used evicted first): agents meet the same lessons again, and a bound keeps a 100k-lesson
    store (or wide remote embeddings) from holding every vector in memory.
    """

    def __init__(
        self,
        store: ChromaStore,
        dim: int,
        *,
        capacity: int = DEFAULT_CONFIG.retrieval.vector_cache_size,
        known: Callable[[list[str]], dict[str, np.ndarray]] | None = None,
    ) -> None:
        self._store = store
        self._known = known
        """Vectors held outside Chroma (the snapshot's memory-mapped rows), asked before a Chroma ``get``."""
        self._content_embedder = HashingEmbeddings(dim=dim)
        self.capacity = max(1, int(capacity))
        self._relevance: OrderedDict[str, np.ndarray] = OrderedDict()
        self._content: OrderedDict[str, np.ndarray] = OrderedDict()
        self._guard = threading.Lock()
        """Every change to the two caches (fill, touch, evict, drop) happens under it."""

    def drop(self, lesson_id: str) -> None:
        """Forget a lesson's relevance vector (it was rewritten or removed); content rows are kept by text."""
        with self._guard:
            self._relevance.pop(lesson_id, None)

    def _fill(self, cache: OrderedDict[str, np.ndarray], rows: Iterable[tuple[str, np.ndarray]]) -> None:
        with self._guard:
            cache.update(rows)

    def _touch(self, cache: OrderedDict[str, np.ndarray], ids: Iterable[str]) -> None:
        """Mark ``ids`` used and evict the least recently used beyond ``capacity``."""
        with self._guard:
            for i in ids:
                if i in cache:
                    cache.move_to_end(i)
            while len(cache) > self.capacity:
                cache.popitem(last=False)

    def relevance(self, lessons: list[Lesson]) -> np.ndarray:
        """Relevance rows for ``lessons`` in order: cached, else known outside Chroma (the snapshot's
        rows), else read from Chroma in one ``get``.

        Chroma holds the vectors it ranks by, so nothing is re-embedded on the query
        path: a remote embedder is never called, and one ``get`` of the candidates' vectors
        is cheaper than hashing their texts.
        A lesson Chroma cannot return (not written yet, or a read error) is embedded
        with the store's embedder instead.
        """
        known, missing = self._relevance_held(lessons)
        if missing:
            try:
                known.update(self._store.stored_embeddings("lessons", [l.id for l in missing]))
            except Exception as exc:  # a damaged vector segment must not break retrieval
                logger.warning("langmem_plus: reading stored lesson vectors failed (%s); re-embedding", exc)
            unstored = [l for l in missing if l.id not in known]
            if unstored:
                rows = self._store.embed_documents([lesson_text(l) for l in unstored])
                known.update((l.id, np.asarray(r, dtype=np.float32)) for l, r in zip(unstored, rows))
            self._fill(self._relevance, [(l.id, known[l.id]) for l in missing])
        self._touch(self._relevance, (l.id for l in lessons))
        return self._stack([known[l.id] for l in lessons])

    def relevance_here(self, lessons: list[Lesson]) -> np.ndarray | None:
        """``relevance(lessons)`` when every row is cached or held outside Chroma, else None (no store call)."""
        known, missing = self._relevance_held(lessons)
        if missing:
            return None
        self._touch(self._relevance, (l.id for l in lessons))
        return self._stack([known[l.id] for l in lessons])

    def _relevance_held(self, lessons: list[Lesson]) -> tuple[dict[str, np.ndarray], list[Lesson]]:
        """The relevance rows held here (cached, or the snapshot's) and the lessons that need Chroma."""
        known = self._cached(self._relevance, lessons)
        missing = [l for l in lessons if l.id not in known]
        if missing and self._known is not None:
            held = self._known([l.id for l in missing])
            # Kept like Chroma's rows: the snapshot reads each row with a system call (~3 us, ~12 a retrieval).
            self._fill(self._relevance, held.items())
            known.update(held)
            missing = [l for l in missing if l.id not in known]
        return known, missing

    def content(self, lessons: Sequence[Lesson]) -> np.ndarray:
        """Content rows for ``lessons`` in order (for MMR).

        Kept by content text (``rule_core``), not by lesson: the row is the hashing embedding of that
        text alone, so lessons with one WRONG pattern (the same mistake under other tools, or fixed
        another way) share it, and a rewritten lesson finds its new text's row or embeds it.
        """
        texts = [rule_core(l) for l in lessons]
        with self._guard:
            known = {t: row for t in texts if (row := self._content.get(t)) is not None}
        missing = list(dict.fromkeys(t for t in texts if t not in known))
        if missing:
            rows = self._content_embedder.embed_array(missing)
            fresh = [(t, rows[i]) for i, t in enumerate(missing)]
            known.update(fresh)
            self._fill(self._content, fresh)
        self._touch(self._content, texts)
        return self._stack([known[t] for t in texts])

    def _cached(self, cache: OrderedDict[str, np.ndarray], lessons: Iterable[Lesson]) -> dict[str, np.ndarray]:
        """The cached rows of ``lessons``, held locally so a concurrent eviction cannot lose them."""
        found: dict[str, np.ndarray] = {}
        with self._guard:
            for l in lessons:
                row = cache.get(l.id)
                if row is not None:
                    found[l.id] = row
        return found

    def _stack(self, rows: Sequence[np.ndarray | None]) -> np.ndarray:
        if not rows:
            return np.zeros((0, 1), dtype=np.float32)
        dim = next((len(r) for r in rows if r is not None), 1)
        return np.vstack([r if r is not None else np.zeros(dim, dtype=np.float32) for r in rows])


def lesson_text(lesson: Lesson) -> str:
    """The text a lesson is embedded by: the document the store writes (rule, failures it answers, tags)."""
    return KIND_SPECS["lessons"].document(lesson)


def rule_core(lesson: Lesson) -> str:
    """The mistake a lesson fixes, without the context it shares with its siblings.

    Two lessons are redundant when they fix the same mistake: ``from -> LOAD`` and
    ``read -> LOAD`` share their fix but answer different habits, and an agent may have both.
    """
    if lesson.wrong and lesson.correct is not None:
        return lesson.wrong
    return lesson.rule_text.split(" (", 1)[0]


__all__ = ["VectorCache", "lesson_text", "rule_core"]
