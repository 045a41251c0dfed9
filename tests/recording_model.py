"""Test-only: langchain-core's scripted fake chat model that keeps every message list a ``create_agent`` agent sent it,
so a test reads the system message the model actually received."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import BaseMessage, SystemMessage
from pydantic import Field


class RecordingModel(FakeMessagesListChatModel):
    """Scripted replies; remembers the messages of every request (system message included)."""

    seen: list[list[BaseMessage]] = Field(default_factory=list)

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> "RecordingModel":
        return self

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None, **kwargs: Any) -> Any:
        self.seen.append(list(messages))
        return super()._generate(messages, stop, run_manager, **kwargs)

    def system_texts(self) -> list[str]:
        """The system message of each request, ``""`` where there was none."""
        return [str(m[0].content) if m and isinstance(m[0], SystemMessage) else "" for m in self.seen]
