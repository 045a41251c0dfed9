"""A scripted chat model with the habits of real language models, for judging a memory.

`HabitModel` decides each turn from the request's messages alone: it parses the question,
drafts its call (habit included), applies the memory notes in the system message, then
replays the conversation's tool calls and results to choose its next step. It keeps no state
of its own, so nothing reaches it from the memory except through the messages.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool

from langmem_plus.bench.toolworld.habits import HABITS
from langmem_plus.bench.toolworld.notes import NOT_RUN, notes_in_lines, notes_in_system
from langmem_plus.bench.toolworld.reader import Pending, apply_notes, finish_recovery, recover_call
from langmem_plus.bench.toolworld.templates import parse_question

__all__ = ["HabitModel", "UNKNOWN_QUESTION", "decide"]

UNKNOWN_QUESTION = "Sorry, I don't know how to answer that with the tools I have."


def _text(message: BaseMessage) -> str:
    """A message's text, whether its content is a string or a list of blocks."""
    content = message.content
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and isinstance(block.get("text"), str):
            parts.append(block["text"])
    return "".join(parts)


@dataclass
class _Turn:
    """Where the replay stands: the next call (or final answer) and any fix awaiting a look-up."""

    tool: str
    args: dict[str, str]
    pending: Pending | None = None
    final: str | None = None


def _failed(tool: str, error: str) -> str:
    """A final answer saying the model could not recover."""
    first = error.strip().splitlines()[0] if error.strip() else "an error"
    return f"I could not get an answer: `{tool}` failed with: {first}"


def _propose(tool: str, args: Mapping[str, str], notes: Sequence[Any]) -> _Turn:
    """The first call: the draft with the notes applied (or the look-up an avoidance needs)."""
    new_args, pending = apply_notes(tool, args, notes)
    if pending is not None:
        return _Turn(pending.lookup.tool, dict(pending.lookup.args), pending)
    return _Turn(tool, new_args)


def _after_error(turn: _Turn, tool: str, args: dict[str, str], error: str,
                 errors: int, max_attempts: int) -> _Turn:
    """After a failed call: fix it from the error, make a look-up first, or give up."""
    if errors >= max_attempts or (turn.pending and turn.pending.is_lookup(tool, args)):
        return _Turn(tool, args, final=_failed(tool, error))
    fix = recover_call(tool, error, args)
    if isinstance(fix, Pending):
        return _Turn(fix.lookup.tool, dict(fix.lookup.args), fix)
    if fix is None or fix == args:
        return _Turn(tool, args, final=_failed(tool, error))
    return _Turn(tool, fix)


def _after_success(turn: _Turn, tool: str, args: dict[str, str], output: str) -> _Turn:
    """After a call ran: finish a pending fix from a look-up's output, or answer with it."""
    pending = turn.pending
    if pending is not None and pending.is_lookup(tool, args):
        fixed = finish_recovery(pending, output)
        if fixed is None:
            return _Turn(tool, args, final=_failed(pending.tool, pending.error))
        return _Turn(pending.tool, fixed)
    return _Turn(tool, args, final=output)


def _after_not_run(turn: _Turn, tool: str, args: dict[str, str], content: str) -> _Turn:
    """After memory stopped a call: apply the message's notes, and propose the (new) call."""
    notes = notes_in_lines(content.splitlines()[1:])
    new_args, pending = apply_notes(tool, args, notes)
    if pending is not None:
        return _Turn(pending.lookup.tool, dict(pending.lookup.args), pending)
    keep = turn.pending if turn.pending and turn.pending.is_lookup(tool, new_args) else None
    return _Turn(tool, new_args, keep)


def decide(messages: Sequence[BaseMessage], max_attempts: int = 3, max_calls: int = 8) -> AIMessage:
    """The model's next message for a conversation: one tool call or a final answer."""
    last_human = max((i for i, m in enumerate(messages) if isinstance(m, HumanMessage)), default=-1)
    if last_human < 0:
        return AIMessage(content=UNKNOWN_QUESTION)
    asked = _text(messages[last_human])
    parsed = parse_question(asked)
    for line in asked.splitlines() if parsed is None else ():
        parsed = parse_question(line) if line.strip() else None
        if parsed is not None:
            break
    if parsed is None:
        return AIMessage(content=UNKNOWN_QUESTION)
    template, literals = parsed
    correct = template.call(literals)
    draft = HABITS[template.habit].draft(correct) if template.habit else correct
    system = "\n".join(_text(m) for m in messages if isinstance(m, SystemMessage))
    turn = _propose(template.tool, draft, notes_in_system(system))

    later = messages[last_human + 1:]
    results = {m.tool_call_id: m for m in later if isinstance(m, ToolMessage)}
    errors = calls = 0
    for message in later:
        if not isinstance(message, AIMessage) or not message.tool_calls:
            continue
        call = message.tool_calls[0]
        result = results.get(call.get("id") or "")
        if result is None:
            continue
        calls += 1
        tool, args = call["name"], {k: str(v) for k, v in call["args"].items()}
        content = _text(result)
        if content.startswith(NOT_RUN):
            turn = _after_not_run(turn, tool, args, content)
        elif result.status == "error":
            errors += 1
            turn = _after_error(turn, tool, args, content, errors, max_attempts)
        else:
            turn = _after_success(turn, tool, args, content)
        if turn.final is not None:
            return AIMessage(content=turn.final)
    if calls >= max_calls:
        return AIMessage(content=f"I could not get an answer after {calls} tool calls.")
    used = {tc.get("id") for m in messages if isinstance(m, AIMessage) for tc in m.tool_calls}
    k = calls + 1
    while f"call_{k}" in used:
        k += 1
    call_id = f"call_{k}"
    return AIMessage(content="", tool_calls=[{"name": turn.tool, "args": turn.args, "id": call_id}])


class HabitModel(BaseChatModel):
    """A chat model that answers tool-world questions with real models' habits.

    It reads memory notes as docs/notes-contract.md writes them (system-message block and
    `Not run:` tool messages), recovers from tool errors as a model would (at most
    `max_attempts` failed calls per question), and answers with the tool's output.
    """

    max_attempts: int = 3
    max_calls: int = 8

    @property
    def _llm_type(self) -> str:
        return "toolworld-habit-model"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        message = decide(messages, self.max_attempts, self.max_calls)
        return ChatResult(generations=[ChatGeneration(message=message)])

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Return the model itself: it knows its tools from the questions it understands."""
        return self
