"""``DesignNotes``: a baseline design's notes in an agent's system message, the surface memory's own notes use."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import AgentMiddleware

from langmem_plus.integrations.agent_run import with_memory


class DesignNotes(AgentMiddleware):  # type: ignore[type-arg]
    """Appends ``block`` (a design's notes as a memory block) to the system message of every model call; an empty
    block leaves the request as it is. The block may be replaced between runs of one agent."""

    def __init__(self, block: str = "") -> None:
        super().__init__()
        self.block = block

    def wrap_model_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        """The request with the notes in its system message."""
        return handler(request.override(system_message=with_memory(request.system_message, self.block)) if self.block else request)

    async def awrap_model_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        """Async ``wrap_model_call``."""
        return await handler(request.override(system_message=with_memory(request.system_message, self.block)) if self.block else request)


__all__ = ["DesignNotes"]
