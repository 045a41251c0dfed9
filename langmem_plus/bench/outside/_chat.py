"""The chat-model shell both outside executors share: one ``act`` tool call per model call, or a final answer.

A subclass implements ``choose(view)``, the command to type given the game so far (``GameView``);
the shell ends the game when the game said it is over or ``max_steps`` calls were made.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable

from langmem_plus.bench.outside._game import TOOL_NAME, GameView, read_game

DEFAULT_MAX_STEPS = 50
"""Tool calls a game may take before the model stops, when the factory is not told."""


class OutsideChatModel(BaseChatModel):
    """A scripted chat model that plays a text game from its messages only (no state kept between calls)."""

    seed: int = 0
    max_steps: int = DEFAULT_MAX_STEPS

    @property
    def _llm_type(self) -> str:
        """LangChain's name for this kind of model."""
        return "outside-executor"

    def bind_tools(self, tools: Sequence[Any], *, tool_choice: Any = None, **kwargs: Any) -> Runnable[LanguageModelInput, AIMessage]:
        """Accept ``create_agent``'s tools; the model always calls ``act``, so binding changes nothing."""
        return self  # type: ignore[return-value]

    def choose(self, view: GameView) -> str:
        """The command to type next (subclasses decide)."""
        raise NotImplementedError

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        """Answer one model call: a tool call with the chosen command, or a final message when the game is done."""
        view = read_game(messages)
        if view.over or view.calls >= self.max_steps or not view.valid:
            reason = "The game is over." if view.over else f"Stopped after {view.calls} commands."
            return ChatResult(generations=[ChatGeneration(message=AIMessage(content=reason))])
        command = self.choose(view)
        call = {"name": TOOL_NAME, "args": {"command": command}, "id": f"call_{view.calls}", "type": "tool_call"}
        message = AIMessage(content="", tool_calls=[call])
        return ChatResult(generations=[ChatGeneration(message=message)])


Factory = Callable[..., BaseChatModel]
"""``make_x(*, seed, max_steps)``: how the bench builds an outside executor."""
