"""PolicyChatModel: an ``Executor`` as a LangChain chat model, so a ``create_agent`` agent can be measured offline.

A real chat model decides from the messages it is sent. So does this one: from the system message it
reads memory's notes (``integrations.agent_run.read_memory_block``, the block ``LearningMiddleware``
adds), from the first human message the task (its ``Goal:`` line and valid actions), and from the
``ToolMessage``s of an ``env_tool`` the steps so far (their ``ToolReport`` artifacts: what the game
answered, the action as taken, the state around it). It hands all that to its executor and answers
with one tool call of the executor's action, or with a final message once the executor is done, the
episode is over or ``max_steps`` calls were made. Nothing reaches it except through those messages,
so an agent built with it learns only what the middleware delivers: ``langmem-plus bench env --agent``
runs the bench this way, with ``TextGameExecutor`` as the policy.

Example:
    >>> from langchain_core.messages import HumanMessage
    >>> from langmem_plus.textgames.executor import TextGameExecutor
    >>> model = PolicyChatModel(executor=TextGameExecutor(seed=0), task_id="t")
    >>> opening = "Goal: eat the apple.\\n\\nValid actions: eat apple, look"
    >>> model.invoke([HumanMessage(opening)]).tool_calls[0]["args"]
    {'command': 'eat apple'}
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import ConfigDict

from langmem_plus._llm import message_text
from langmem_plus.executors.base import Executor
from langmem_plus.integrations.agent_run import read_memory_block, reported_steps
from langmem_plus.integrations.env_tool import VALID_ACTIONS_TITLE
from langmem_plus.records import Step, TaskSpec

_GOAL = re.compile(r"^Goal: (.+)$", re.MULTILINE)


def split_valid_actions(text: str) -> tuple[str, list[str]]:
    """An observation and the valid actions ``env_tool`` lists after it (``VALID_ACTIONS_TITLE``); none listed: [].

    Example:
        >>> split_valid_actions("You see a fridge.\\n\\nValid actions: open fridge, look")
        ('You see a fridge.', ['open fridge', 'look'])
    """
    head, sep, tail = text.rpartition(f"\n\n{VALID_ACTIONS_TITLE} ")
    if not sep:
        return text, []
    return head, [a.strip() for a in tail.split(", ") if a.strip()]


class PolicyChatModel(BaseChatModel):
    """A chat model whose every reply is its executor's decision on what the messages say (module docstring)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    executor: Executor
    task_id: str
    """Names the task for the executor (its tie-breaking is seeded by task id and step)."""
    tool_name: str = "act"
    start_state: dict[str, Any] | None = None
    """The game's structured state at reset (location, inventory: ``graph.env_view``'s ``state``), which the bench's
    executor is given with the task; None: the messages are all it has. Later states come with the tool reports."""
    max_steps: int = 50
    """Tool calls after which it stops, as the bench's episode loop does."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> "PolicyChatModel":
        """Tools are known by name (``tool_name``); binding changes nothing."""
        return self

    @property
    def _llm_type(self) -> str:
        return "policy"

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self.decide(messages))])

    def decide(self, messages: Sequence[BaseMessage]) -> AIMessage:
        """The executor's next action as a tool call; a final message when there is none to take."""
        system = next((message_text(m) for m in messages if isinstance(m, SystemMessage)), "")
        opening = next((message_text(m) for m in messages if isinstance(m, HumanMessage)), "")
        steps = self.steps(messages)
        if len(steps) >= self.max_steps or (steps and steps[-1].info.get("done")):
            return AIMessage(content="The episode is over.")
        observation, valid = split_valid_actions(opening)
        goal = _GOAL.search(opening)
        task = TaskSpec(task_id=self.task_id, goal=goal.group(1) if goal else opening[:200],
                        context={"observation": observation, "valid_actions": valid,
                                 **({"state": self.start_state} if self.start_state is not None else {})})
        decision = self.executor.act(task, steps, read_memory_block(system))
        if decision.kind != "command":
            return AIMessage(content="Nothing more to do.")
        call = {"name": self.tool_name, "args": {"command": decision.action}, "id": f"call_{len(steps)}_{len(messages)}"}
        return AIMessage(content="", tool_calls=[call])

    def steps(self, messages: Sequence[BaseMessage]) -> list[Step]:
        """The attempt so far, one step per tool result that carries a ``ToolReport`` (what the game answered), read
        as the middleware reads it (``agent_run.reported_steps``)."""
        return reported_steps(messages, self.tool_name)


__all__ = ["PolicyChatModel", "split_valid_actions"]
