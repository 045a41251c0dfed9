"""Trajectories from wherever users have them, as ``workflows.Demonstration`` (design.md §6 "Workflows").

- ``from_messages``: a LangChain agent's message list (a ``create_agent`` run's ``messages``): the first human
  message is the goal; each AI tool call, paired with the tool message that answered it, is a step whose action is
  the call rendered as ``name {"arg": value}``. A tool message with ``status="error"`` is a failed step and is left
  out (a procedure keeps what worked).
- ``from_steps``: plain lists: actions, ``(action, observation)`` or ``(action, observation, score)`` tuples, or
  mappings with those keys (``reward`` is read as the score).
- ``from_run``: the memory's own recorded steps (``records.Step``); failed steps are left out, and the score after a
  step is its progress feedback.
- ``demonstration``: any of these, told apart by shape.

Text from tools and models is data here: it is kept as observations, never run.

Example:
    >>> from_steps("build the docs", [("clone repo", "Cloned.", 0.1), "run tests"]).steps[1]
    DemoStep(action='run tests', observation='', score=None)
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from langmem_plus.errors import InvalidArgument
from langmem_plus.learning.workflows import Demonstration, DemoStep
from langmem_plus.records import Step


def _score(value: Any) -> float | None:
    if value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError) as exc:
        raise InvalidArgument(f"a step's score must be a number, got {value!r}") from exc


def _step(item: Any) -> DemoStep:
    """One plain step: an action, a tuple, or a mapping (or a ``DemoStep`` already)."""
    if isinstance(item, DemoStep):
        return item
    if isinstance(item, str):
        return DemoStep(action=item)
    if isinstance(item, Mapping):
        action = item.get("action")
        if not isinstance(action, str) or not action.strip():
            raise InvalidArgument(f"a step needs a non-empty 'action', got {dict(item)!r}")
        score = item.get("score", item.get("reward"))
        return DemoStep(action=action, observation=str(item.get("observation", "") or ""), score=_score(score))
    if isinstance(item, Sequence) and item and isinstance(item[0], str):
        parts = list(item)
        if len(parts) > 3:
            raise InvalidArgument(f"a step tuple is (action, observation, score), got {len(parts)} items")
        observation = str(parts[1]) if len(parts) > 1 and parts[1] is not None else ""
        return DemoStep(action=parts[0], observation=observation, score=_score(parts[2]) if len(parts) > 2 else None)
    raise InvalidArgument(f"a step is an action, an (action, observation[, score]) tuple or a mapping; got {item!r}")


def from_steps(goal: str, steps: Iterable[Any], *, source: str = "") -> Demonstration:
    """A trajectory from plain steps (module docstring).

    Raises:
        InvalidArgument: an empty goal, or a step of another shape.
    """
    if not isinstance(goal, str) or not goal.strip():
        raise InvalidArgument("a trajectory needs its goal's text")
    return Demonstration(goal=goal, steps=tuple(_step(s) for s in steps), source=source)


def render_call(name: str, args: Mapping[str, Any]) -> str:
    """A tool call as one action line: ``name {"arg": value}`` (keys sorted, so one call renders one way)."""
    return f"{name} {json.dumps(dict(args), sort_keys=True, default=str)}"


def from_messages(messages: Sequence[Any], *, goal: str | None = None, source: str = "") -> Demonstration:
    """A trajectory from a LangChain message list (module docstring); ``goal`` overrides the first human message.

    Raises:
        InvalidArgument: no goal (no human message and none given).
    """
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    answers: dict[str, Any] = {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}
    if goal is None:
        human = next((m for m in messages if isinstance(m, HumanMessage)), None)
        goal = _text(human.content) if human is not None else ""
    steps: list[DemoStep] = []
    for message in messages:
        if not isinstance(message, AIMessage):
            continue
        for call in message.tool_calls:
            answer = answers.get(call.get("id") or "")
            if answer is not None and getattr(answer, "status", "success") == "error":
                continue
            steps.append(DemoStep(action=render_call(call["name"], call.get("args") or {}),
                                  observation=_text(answer.content) if answer is not None else ""))
    return from_steps(goal or "", steps, source=source)


def _text(content: Any) -> str:
    """A message's content as text (a list of content blocks joined)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b if isinstance(b, str) else str(b.get("text", "")) for b in content if b)
    return str(content)


def from_run(goal: str, steps: Sequence[Step], *, source: str = "") -> Demonstration:
    """A trajectory from the memory's own recorded steps (module docstring)."""
    kept = [DemoStep(action=s.action, observation=s.observation, score=s.feedback.progress)
            for s in steps if not s.feedback.failed and s.action]
    return from_steps(goal, kept, source=source)


def demonstration(item: Any, *, goal: str | None = None, source: str = "") -> Demonstration:
    """Any supported trajectory as a ``Demonstration``: one already, a message list, recorded ``Step``s, plain
    steps, or a mapping ``{"goal": ..., "steps": [...]}``.

    Raises:
        InvalidArgument: a shape none of these has, or a missing goal.
    """
    if isinstance(item, Demonstration):
        return item
    if isinstance(item, Mapping) and "steps" in item:
        return demonstration(item["steps"], goal=goal or item.get("goal"), source=source or str(item.get("source", "")))
    if isinstance(item, Sequence) and not isinstance(item, str):
        from langchain_core.messages import BaseMessage

        if item and all(isinstance(m, BaseMessage) for m in item):
            return from_messages(item, goal=goal, source=source)
        if item and all(isinstance(s, Step) for s in item):
            return from_run(goal or "", item, source=source)
        return from_steps(goal or "", item, source=source)
    raise InvalidArgument(f"not a trajectory: {type(item).__name__}")


__all__ = ["demonstration", "from_messages", "from_run", "from_steps", "render_call"]
