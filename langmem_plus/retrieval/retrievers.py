"""LangChain surfaces: a BaseRetriever over lessons and a lookup tool (DESIGN §8).

The retriever writes one hook, ``_get_relevant_documents``; LangChain's ``invoke``
handles callbacks and tracing. ``kind="pre_run"`` reads the query as a task goal,
``kind="on_error"`` reads it as error text and fingerprints it first.

Example:
    >>> import tempfile
    >>> from langmem_plus import LearningMemory
    >>> mem = LearningMemory.open(tempfile.mkdtemp(), namespace=("docs",))
    >>> mem.as_retriever(kind="on_error").invoke("no such column: agee")
    []
"""

from __future__ import annotations

from typing import Any, Literal

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import BaseTool, StructuredTool
from pydantic import ConfigDict

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
    """Retrieves lessons from a LearningMemory for a goal (pre_run) or an error text (on_error)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    memory: Any
    """The LearningMemory to read (one namespace)."""
    kind: Literal["pre_run", "on_error"] = "pre_run"
    """How the query is read: as a task goal or as error text."""
    tool: str | None = None
    """Tool scope for pre-run queries."""
    domain: str | None = None
    """Domain scope for pre-run queries."""

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        if self.kind == "on_error":
            items = self.memory.retrieve_on_error(event_from_text(self.memory, query, tool=self.tool))
        else:
            task = TaskSpec(task_id=f"query-{stable_hash(query, length=10)}", goal=query, tool=self.tool, domain=self.domain)
            items = self.memory.retrieve_pre_run(task)
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
