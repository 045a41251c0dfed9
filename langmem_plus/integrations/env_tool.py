"""Any ``Env`` as a LangChain tool whose calls carry all four feedback channels to ``LearningMiddleware``.

A plain tool tells the middleware only whether it raised. A game's worst mistakes raise nothing:
``eat carrot`` is accepted and the game is lost. ``env_tool`` wraps an environment (a text game,
gridtool, fluxtool) in a ``response_format="content_and_artifact"`` tool: the model reads the
observation (and, for a text game, the valid actions); the middleware reads the artifact, a
``ToolReport`` built from the step the reference graph would record (``graph.take_step``): hard
and constraint failures, progress, efficiency, the action as the game took it and the state
around it. So a ``create_agent`` agent learns the game's hidden rules as the bench's executor does.

Example:
    >>> from langmem_plus.envs.registry import make_env
    >>> env = make_env("gridtool"); _ = env.reset(env.tasks()[0].task_id)
    >>> text, report = env_tool(env).func("filter age > 3")
    >>> report["feedback"]["hard_failure"], report["action"]
    (True, 'filter age > 3')
"""

from __future__ import annotations

from typing import Any

from langchain_core.tools import BaseTool, StructuredTool

from langmem_plus.envs.base import Env
from langmem_plus.executors.base import Decision
from langmem_plus.graph import take_step

VALID_ACTIONS_TITLE = "Valid actions:"
"""The line before the valid actions a text game's observation is followed by."""
GAME_OVER = "The episode is over."
"""Follows the observation once the env is done (won, lost or out of moves); the report's ``info["done"]`` says so too."""


def env_tool(env: Env, *, name: str = "act", description: str | None = None, show_valid_actions: bool = True) -> BaseTool:
    """A tool taking one command in ``env`` (already reset to its task by the caller) per call.

    Args:
        env: The environment; the tool steps it and never resets it.
        name: The tool's name as the model sees it.
        description: What the model is told; default: one command per call in ``env.name``.
        show_valid_actions: Follow the observation with the env's valid actions, when it lists them.
    """
    count = 0

    def act(command: str) -> tuple[str, dict[str, Any]]:
        nonlocal count
        step = take_step(env, Decision(kind="command", action=command), count)
        count += 1
        text = step.observation or step.feedback.error_text
        valid = step.info.get("valid_actions")
        over = bool(getattr(env, "done", False))
        if over:
            text = f"{text}\n\n{GAME_OVER}"
        elif show_valid_actions and valid:
            text = f"{text}\n\n{VALID_ACTIONS_TITLE} {', '.join(map(str, valid))}"
        report = {
            "feedback": step.feedback.model_dump(mode="json"),
            "action": step.action,
            "observation": step.observation,  # what memory reads: the game's text, without the list added above
            "state_before": step.state_before,
            "state_after": step.state_after,
            "info": {**{k: v for k, v in step.info.items() if k != "applied_hints"}, "done": over},
            "domain": getattr(env, "domain", None) or None,
        }
        return text, report

    return StructuredTool.from_function(
        act, name=name, response_format="content_and_artifact",
        description=description or f"Type one command into {env.name} and read what happens.",
    )


__all__ = ["GAME_OVER", "VALID_ACTIONS_TITLE", "env_tool"]
