"""LangChain surfaces: a BaseRetriever over lessons and a lookup tool (design.md §8).

The retriever writes one hook, ``_get_relevant_documents`` (and its async twin);
LangChain's ``invoke`` handles callbacks and tracing. ``kind="pre_run"`` reads the
query as a task goal, ``kind="on_error"`` reads it as error text and fingerprints it
first. ``k`` (constructor or ``invoke``) sets how many documents come back; it passes
LangChain's standard retriever suite (``tests/test_standard_suites.py``).

Example:
    >>> import tempfile
    >>> from langmem_plus import LearningMemory
    >>> mem = LearningMemory.open(tempfile.mkdtemp(), namespace=("docs",))
    >>> mem.as_retriever(kind="on_error").invoke("no such column: agee")
    []
"""

from __future__ import annotations

from typing import Any, Literal

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import BaseTool, StructuredTool
from pydantic import ConfigDict, Field

from langmem_plus._text import stable_hash, stable_id
from langmem_plus.capture import extract_tags, fingerprint, fingerprint_id
from langmem_plus.records import ErrorEvent, ScoredItem, TaskSpec


def item_document(item: ScoredItem) -> Document:
    """A retrieved item as a LangChain Document: the rule as content, scores as metadata."""
    lesson = item.item
    text = getattr(lesson, "rule_text", None) or getattr(lesson, "summary", None) or getattr(lesson, "name", "")
    meta: dict[str, Any] = {
        "id": item.item_id,
        "kind": item.kind,
        "score": item.score,
        "components": dict(item.components),
        "reasons": list(item.reasons),
    }
    for attr in ("status", "wrong", "correct", "reliability"):
        if getattr(lesson, attr, None) is not None:
            meta[attr] = getattr(lesson, attr)
    return Document(page_content=str(text), metadata=meta, id=item.item_id)


def event_from_text(memory: Any, text: str, *, tool: str | None = None, action: str = "") -> ErrorEvent:
    """An ad-hoc ErrorEvent for free error text (not stored), for lookups from outside a run."""
    fp = fingerprint(text, action=action or None)
    fid = fingerprint_id(fp)
    return ErrorEvent(
        id=stable_id("ev", *memory.namespace, "adhoc", fid),
        namespace=memory.namespace,
        run_id="adhoc",
        step=0,
        fingerprint=fp,
        fingerprint_id=fid,
        tags=extract_tags(text, action or None),
        channel="hard",
        action=action,
        error_text=text,
        tool=tool,
    )


class LessonRetriever(BaseRetriever):
    """Retrieves lessons from a LearningMemory for a goal (pre_run) or an error text (on_error).

    ``k`` sets how many documents come back, in the constructor or per call
    (``invoke(query, k=3)``); the memory then returns exactly ``k`` items when that many
    pass its guards and token cap. Without ``k`` the memory picks its own budget K'
    (3 / 5 / 7 by difficulty, design.md §5.6), plus the tool sheet before a run.

    Sync and async share one core (``_request``) and differ only where they call the
    memory: ``ainvoke`` awaits ``LearningMemory.aretrieve_*``, which run the retrieval in
    ``asyncio.to_thread`` because Chroma's embedded client is synchronous; the event loop
    is never blocked.

    Example:
        >>> import tempfile
        >>> from langmem_plus import LearningMemory
        >>> mem = LearningMemory.open(tempfile.mkdtemp(), namespace=("docs",))
        >>> LessonRetriever(memory=mem, k=2).invoke("count rows", k=1)
        []
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    memory: Any
    """The LearningMemory to read (one namespace)."""
    kind: Literal["pre_run", "on_error"] = "pre_run"
    """How the query is read: as a task goal or as error text."""
    tool: str | None = None
    """Tool scope for pre-run queries."""
    domain: str | None = None
    """Domain scope for pre-run queries."""
    k: int | None = Field(default=None, ge=0)
    """Documents to return; None lets the memory choose (its difficulty budget K' and, before a run, the tool sheet)."""

    def _request(self, query: str, k: int | None) -> tuple[TaskSpec | ErrorEvent, int | None]:
        """What to ask the memory for ``query``: a task (pre_run) or an ad-hoc event (on_error), and the count."""
        count = self.k if k is None else k
        if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 0):
            raise ValueError(f"k must be an int >= 0, got {count!r}")
        if self.kind == "on_error":
            return event_from_text(self.memory, query, tool=self.tool), count
        task = TaskSpec(task_id=f"query-{stable_hash(query, length=10)}", goal=query, tool=self.tool, domain=self.domain)
        return task, count

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, k: int | None = None
    ) -> list[Document]:
        """The lessons for ``query``; ``k`` overrides the constructor's ``k`` for this call."""
        target, count = self._request(query, k)
        if isinstance(target, ErrorEvent):
            items = self.memory.retrieve_on_error(target, k=count)
        else:
            items = self.memory.retrieve_pre_run(target, k=count)
        return [item_document(i) for i in items]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, k: int | None = None
    ) -> list[Document]:
        """Async ``_get_relevant_documents``: the same request, awaited on the memory's async twins."""
        target, count = self._request(query, k)
        if isinstance(target, ErrorEvent):
            items = await self.memory.aretrieve_on_error(target, k=count)
        else:
            items = await self.memory.aretrieve_pre_run(target, k=count)
        return [item_document(i) for i in items]


def lesson_lookup_tool(memory: Any) -> BaseTool:
    """A tool an agent can call with an error message (or a goal) to get matching lessons."""

    def lookup_lessons(error_text: str = "", goal: str = "", tool: str | None = None) -> str:
        if error_text:
            items = memory.retrieve_on_error(event_from_text(memory, error_text, tool=tool))
        else:
            items = memory.retrieve_pre_run(TaskSpec(task_id=f"tool-{stable_hash(goal, length=10)}", goal=goal, tool=tool))
        return memory.render(items) or "No lessons match."

    return StructuredTool.from_function(
        func=lookup_lessons,
        name="lookup_lessons",
        description="Look up lessons learned from earlier failures. Pass the error text you got, or the goal you are about to work on.",
    )


__all__ = ["LessonRetriever", "event_from_text", "item_document", "lesson_lookup_tool"]
