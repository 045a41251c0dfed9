"""LangChain's standard test suites for our retriever and embeddings, plus what ``k`` means beyond them.

``langchain-tests`` ships the suites LangChain runs on every partner integration:
``RetrieversIntegrationTests`` (``k`` in the constructor and in ``invoke``, documents
from ``invoke`` and ``ainvoke``) and ``EmbeddingsUnitTests`` /
``EmbeddingsIntegrationTests`` (construction, sync and async embedding shapes). The
retriever runs over a real embedded Chroma memory in a temporary folder, filled with
``add_lessons`` so the suite's query matches more lessons than any ``k`` it asks for.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_tests.integration_tests import EmbeddingsIntegrationTests, RetrieversIntegrationTests
from langchain_tests.unit_tests import EmbeddingsUnitTests

from langmem_plus import LearningMemory
from langmem_plus.embeddings import HashingEmbeddings
from langmem_plus.records import Lesson, LessonScope
from langmem_plus.retrieval.retrievers import LessonRetriever

NS = ("suite", "retriever")
QUERY = "sort the people table by age in descending order"
# (wrong, correct, tag): distinct WRONG patterns, so the tag-bucket guard (2 per bucket) keeps them all.
RULES = [
    ("sort age desc", "ORDER age DOWN", "unknown_command"),
    ("sort -age", "ORDER age DOWN", "syntax_structure"),
    ("order by age desc", "ORDER age DOWN", "unknown_command"),
    ("sort age descending", "ORDER age DOWN", "sort_direction"),
    ("table people", "LOAD people", "unknown_command"),
    ("from people", "LOAD people", "unknown_command"),
    ("select name, age", "PICK name, age", "unknown_command"),
    ("where age > 40", "KEEP age > 40", "unknown_command"),
]


def _lessons(namespace: tuple[str, ...]) -> list[Lesson]:
    return [
        Lesson(
            id=f"l{i}",
            namespace=namespace,
            rule_text=f"WRONG: {wrong} -> CORRECT: {correct} (sorting the people table by age)",
            wrong=wrong,
            correct=correct,
            tags=[tag],
            triggers=[f"fp{i}"],
            scope=LessonScope(level="global"),
            source="imported",
        )
        for i, (wrong, correct, tag) in enumerate(RULES)
    ]


@pytest.fixture(scope="module")
def memory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LearningMemory]:
    """A real embedded memory holding the lessons of ``RULES``."""
    mem = LearningMemory.open(tmp_path_factory.mktemp("suite_store"), namespace=NS)
    mem.add_lessons(_lessons(NS))
    yield mem
    mem.close()


class TestLessonRetrieverStandard(RetrieversIntegrationTests):
    """LangChain's retriever suite over a memory with more matching lessons than the suite's largest ``k`` (3)."""

    _memory: LearningMemory | None = None

    @pytest.fixture(autouse=True)
    def _bind_memory(self, memory: LearningMemory) -> None:
        # The suite reads ``retriever_constructor_params`` as a property, not a fixture.
        type(self)._memory = memory

    @property
    def retriever_constructor(self) -> type[LessonRetriever]:
        return LessonRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"memory": self._memory}

    @property
    def retriever_query_example(self) -> str:
        return QUERY


class TestHashingEmbeddingsUnit(EmbeddingsUnitTests):
    @property
    def embeddings_class(self) -> type[HashingEmbeddings]:
        return HashingEmbeddings

    @property
    def embedding_model_params(self) -> dict[str, Any]:
        return {"dim": 64}


class TestHashingEmbeddingsIntegration(EmbeddingsIntegrationTests):
    @property
    def embeddings_class(self) -> type[HashingEmbeddings]:
        return HashingEmbeddings

    @property
    def embedding_model_params(self) -> dict[str, Any]:
        return {"dim": 64}


# --------------------------------------------------------------------------- beyond the suites


def _ids(docs: list[Document]) -> list[str]:
    return [str(d.metadata["id"]) for d in docs]


@pytest.mark.parametrize("k", [1, 2, 4, 5, 7, len(RULES)])
def test_k_beyond_the_difficulty_budget_returns_exactly_k(memory: LearningMemory, k: int) -> None:
    """``k`` replaces K' (3 for a fresh task), both above and below it, and ranks consistently."""
    docs = LessonRetriever(memory=memory, k=k).invoke(QUERY)
    assert len(docs) == k and len(set(_ids(docs))) == k
    assert _ids(docs) == _ids(LessonRetriever(memory=memory).invoke(QUERY, k=len(RULES)))[:k]


def test_without_k_the_memory_budget_applies(memory: LearningMemory) -> None:
    assert len(LessonRetriever(memory=memory).invoke(QUERY)) == memory.config.retrieval.budget_easy
    assert LessonRetriever(memory=memory, k=0).invoke(QUERY) == []


def test_k_is_capped_by_what_matches(memory: LearningMemory) -> None:
    """More than the namespace holds: every lesson once, no padding."""
    docs = LessonRetriever(memory=memory).invoke(QUERY, k=50)
    assert sorted(_ids(docs)) == sorted(f"l{i}" for i in range(len(RULES)))


def test_on_error_kind_honours_k(memory: LearningMemory) -> None:
    retriever = LessonRetriever(memory=memory, kind="on_error", k=2)
    docs = retriever.invoke("unknown command 'sort' at stage 2")
    assert len(docs) == 2
    assert len(retriever.invoke("unknown command 'sort' at stage 2", k=5)) == 5


@pytest.mark.parametrize("bad", [-1, 1.5, True, "3"])
def test_a_bad_k_is_refused(memory: LearningMemory, bad: Any) -> None:
    with pytest.raises(ValueError):
        LessonRetriever(memory=memory).invoke(QUERY, k=bad)


def test_a_bad_constructor_k_is_refused(memory: LearningMemory) -> None:
    with pytest.raises(ValueError):
        LessonRetriever(memory=memory, k=-2)


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("kind", ["pre_run", "on_error"])
def test_sync_and_async_paths_agree(memory: LearningMemory, mode: str, kind: str) -> None:
    retriever = LessonRetriever(memory=memory, kind=kind)  # type: ignore[arg-type]
    query = QUERY if kind == "pre_run" else "unknown command 'sort' at stage 2"
    if mode == "sync":
        docs = retriever.invoke(query, k=4)
    else:
        docs = asyncio.run(retriever.ainvoke(query, k=4))
    assert len(docs) == 4
    assert _ids(docs) == _ids(retriever.invoke(query, k=4))


def test_async_retrievals_run_concurrently_off_the_event_loop(memory: LearningMemory) -> None:
    """``ainvoke`` calls gathered on one loop all complete, each with its own ``k``."""
    retriever = LessonRetriever(memory=memory)

    async def main() -> list[list[Document]]:
        return await asyncio.gather(*(retriever.ainvoke(QUERY, k=k) for k in (1, 2, 3, 4)))

    assert [len(d) for d in asyncio.run(main())] == [1, 2, 3, 4]


def test_the_memory_records_each_limited_retrieval(memory: LearningMemory) -> None:
    """The audit log keeps what a ``k`` retrieval chose, with ``k`` as its budget."""
    LessonRetriever(memory=memory).invoke(QUERY, k=2)
    last = memory.last_retrieval
    assert last is not None and last.budget == 2 and len(last.chosen) == 2
    record = list(memory.audit.read(kinds=["retrieval"]))[-1]
    assert record["chosen"] == [c.item_id for c in last.chosen] and record["budget"] == 2
