"""A LangChain ``create_agent`` agent in a real TextWorldExpress kitchen learns a move that loses the game.

    agent = create_agent(model, [env_tool(env)], middleware=[memory.as_middleware(tool=env.name, ...)])

In these games eating an ingredient loses the game, and nothing says so beforehand: the game accepts
``eat yellow bell pepper`` and ends. No exception is raised, so a plain tool would tell memory nothing.
``env_tool`` returns the game's feedback in its artifact (a ``ToolReport``): the middleware records the
move as a constraint failure, and at the end of the run memory turns it into ``Avoid `eat <X>```,
abstracted over the ingredient through the recipe's own text.

The model here is scripted (no API key needed) but decides like a model, from the request it is sent.
Its habit: read the cookbook, open the fridge, take the recipe's first ingredient, then taste it. Before
each move it reads the system message, and it skips a move that an ``Avoid`` note there matches (the
note's back-quoted pattern, ``<X>`` standing for any words). Game 1 (train fold) is lost by tasting.
Game 2 is a test-fold game with an ingredient never seen in training: the model is shown the note and
does not taste.

Run it:  python examples/create_agent_game.py [store-path]    (needs ``pip install -e ".[envs]"`` and Java)
Exit status 0 when game 1 was lost by a fatal move and game 2 made none.
"""

from __future__ import annotations

import re
import sys
import tempfile
from collections.abc import Sequence
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field

from langmem_plus import LearningMemory, env_tool, make_env
from langmem_plus.referee import DeterministicReferee

GAMES = ("train-3", "test-20000")
"""Game 1 from the train fold, game 2 from the test fold (its ingredient appears in no train game here)."""
_AVOID = re.compile(r"Avoid `([^`]+)`")
_INGREDIENT = re.compile(r"Ingredients:\s*\n\s*(.+)")


def _text(message: BaseMessage) -> str:
    return message.content if isinstance(message.content, str) else str(message.content)


def _matches(pattern: str, action: str) -> bool:
    """A note's back-quoted pattern against an action: ``<X>`` stands for one or more words."""
    parts = [re.escape(p) for p in re.split(r"<\w+>", pattern)]
    return re.fullmatch(r"\w[\w ]*?".join(parts), action) is not None


class HabitModel(BaseChatModel):
    """A scripted chat model with a bad habit, which it drops when its system message warns against it."""

    seen: list[str] = Field(default_factory=list)

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> "HabitModel":
        return self

    @property
    def _llm_type(self) -> str:
        return "scripted-habit"

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self.decide(messages))])

    def decide(self, messages: Sequence[BaseMessage]) -> AIMessage:
        """The next move of the habit that no ``Avoid`` note in the system message matches; an answer once the
        game is over or the habit is done."""
        system = _text(messages[0]) if messages and isinstance(messages[0], SystemMessage) else ""
        self.seen.append(system)
        results = [_text(m) for m in messages if isinstance(m, ToolMessage)]
        if results and "lost" in results[-1].lower():
            return AIMessage(content="I lost the game.")
        recipe = next((m for m in results if "Ingredients:" in m), "")
        found = _INGREDIENT.search(recipe)
        food = found.group(1).strip() if found else ""
        habit = ["read cookbook", "open fridge", f"take {food}", f"eat {food}"]
        avoided = _AVOID.findall(system)
        moves = [m for m in habit if not any(_matches(p, m) for p in avoided)]
        if len(results) >= len(moves):
            return AIMessage(content="Done for now.")
        move = moves[len(results)]
        return AIMessage(content="", tool_calls=[{"name": "act", "args": {"command": move}, "id": f"call_{len(messages)}"}])


def main(store: str | None = None) -> list[bool]:
    """Play the two games on one memory; returns whether each ended in a fatal move."""
    memory = LearningMemory.open(store or tempfile.mkdtemp(), namespace=("example", "create-agent-game"))
    env = make_env("twx-cooking:easy")
    fatal = []
    try:
        for game in GAMES:
            opening = env.reset(game)
            model = HabitModel()
            middleware = memory.as_middleware(tool=env.name, task_id=game, referee=DeterministicReferee(env))
            agent = create_agent(model, [env_tool(env)], middleware=[middleware])
            result = agent.invoke({"messages": [("user", opening)]})
            steps = result.get("lm_steps") or []
            fatal.append(any(s["feedback"]["constraint_failure"] for s in steps))
            notes = [line for line in model.seen[0].splitlines() if "Avoid" in line]
            print(f"{game}: moves {[s['action'] for s in steps]}; fatal move: {fatal[-1]}")
            print(f"  notes on avoiding in its first request: {notes or 'none'}")
    finally:
        env.close()
        memory.close()
    return fatal


if __name__ == "__main__":
    outcome = main(sys.argv[1] if len(sys.argv) > 1 else None)
    sys.exit(0 if outcome[0] and not any(outcome[1:]) else 1)
