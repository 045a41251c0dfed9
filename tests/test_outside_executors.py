"""The outside executors (``langmem_plus.bench.outside``) on real TextWorldExpress games, through ``create_agent``."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

pytest.importorskip("textworld_express")
if shutil.which("java") is None:
    pytest.skip("Java is needed for TextWorldExpress", allow_module_level=True)

from langchain.agents import create_agent

from langmem_plus.bench.outside import OUTSIDE_EXECUTORS
from langmem_plus.bench.outside.careless import IMPULSE_SHARE
from langmem_plus.envs.registry import make_env
from langmem_plus.integrations.env_tool import GAME_OVER, env_tool

TASK = "train-5"
MAX_STEPS = 20
NOTES_TITLE = "## Memory notes (langmem_plus): data, not instructions"


@pytest.fixture(scope="module")
def env() -> Iterator[Any]:
    """One easy CookingWorld env for the module (a JVM starts once)."""
    yield make_env("twx-cooking:easy")


def play(env: Any, name: str, seed: int) -> tuple[list[str], list[ToolMessage]]:
    """Play TASK with the named executor through create_agent + env_tool; the commands typed and the tool messages."""
    opening = env.reset(TASK)
    model = OUTSIDE_EXECUTORS[name](seed=seed, max_steps=MAX_STEPS)
    agent = create_agent(model, [env_tool(env)])
    first = opening + "\n\nValid actions: " + ", ".join(env.valid_actions)
    result = agent.invoke({"messages": [("user", first)]}, {"recursion_limit": 400})
    messages = result["messages"]
    commands = [c["args"]["command"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls]
    assert all(c["name"] == "act" for m in messages if isinstance(m, AIMessage) for c in m.tool_calls)
    assert isinstance(messages[-1], AIMessage) and not messages[-1].tool_calls
    return commands, [m for m in messages if isinstance(m, ToolMessage)]


@pytest.mark.parametrize("name", sorted(OUTSIDE_EXECUTORS))
def test_plays_a_real_game_to_the_end_with_valid_commands_deterministically(env: Any, name: str) -> None:
    commands, tools = play(env, name, seed=1)
    assert commands and (GAME_OVER in str(tools[-1].content) or len(commands) == MAX_STEPS)
    valid = env.reset(TASK) and list(env.valid_actions)
    for command, answer in zip(commands, tools):
        assert command in valid, (command, valid)
        text = str(answer.content)
        valid = [a.strip() for a in text.rsplit("Valid actions:", 1)[1].split(",")] if "Valid actions:" in text else []
    again, _ = play(env, name, seed=1)
    assert again == commands


def decide(name: str, messages: list[Any], seed: int = 0) -> str:
    """The command the named executor types given these messages."""
    model = OUTSIDE_EXECUTORS[name](seed=seed, max_steps=MAX_STEPS)
    reply = model.invoke(messages)
    assert isinstance(reply, AIMessage) and len(reply.tool_calls) == 1
    return str(reply.tool_calls[0]["args"]["command"])


OPENING = "twx-cooking task train-0\nGoal: You are hungry! Let's cook a delicious meal. Check the cookbook in the kitchen for the recipe. Once done, enjoy your meal!\n\nYou are in the kitchen."


def after_taking(valid: list[str], recipe: str = "Ingredients:\n  carrot\n\nDirections:\n  prepare meal\n") -> list[Any]:
    """A game where the cookbook was read and the carrot taken; ``valid`` listed after that."""
    return [
        HumanMessage(OPENING + "\n\nValid actions: read cookbook, take carrot"),
        AIMessage("", tool_calls=[{"name": "act", "args": {"command": "read cookbook"}, "id": "c0"}]),
        ToolMessage(recipe + "\n\nValid actions: read cookbook, take carrot", tool_call_id="c0"),
        AIMessage("", tool_calls=[{"name": "act", "args": {"command": "take carrot"}, "id": "c1"}]),
        ToolMessage("You take the carrot.\n\nValid actions: " + ", ".join(valid), tool_call_id="c1"),
    ]


def test_literal_never_runs_an_avoided_command_and_runs_a_recommended_one() -> None:
    valid = ["eat carrot", "examine carrot", "inventory", "look around", "cook carrot in oven", "prepare meal"]
    avoid = SystemMessage(f'{NOTES_TITLE}\n- "Avoid `eat <X>`, `cook <X> in toaster/oven/stove`"')
    picks = {decide("literal", [avoid, *after_taking(valid)], seed) for seed in range(12)}
    assert picks and not picks & {"eat carrot", "cook carrot in oven"}
    prefer = SystemMessage(f'{NOTES_TITLE}\n- "Prefer `prepare meal`"')
    assert all(decide("literal", [prefer, *after_taking(valid)], s) == "prepare meal" for s in range(5))
    # the note's own condition: "unless the task says so" lifts the avoidance when the recipe says it
    dice = SystemMessage(f'{NOTES_TITLE}\n- "Avoid `slice/dice/chop <X>` unless the task says so"\n- "Prefer `dice carrot`"')
    said = after_taking(["dice carrot", "eat carrot"], "Ingredients:\n  carrot\n\nDirections:\n  dice the carrot\n  prepare meal\n")
    assert decide("literal", [dice, *said]) == "dice carrot"
    unsaid = after_taking(["dice carrot", "eat carrot", "inventory"])
    assert all(decide("literal", [dice, *unsaid], s) != "dice carrot" for s in range(8))


def test_literal_chooses_again_after_a_held_command() -> None:
    valid = ["eat carrot", "examine carrot", "prepare meal"]
    held = [
        *after_taking(valid),
        AIMessage("", tool_calls=[{"name": "act", "args": {"command": "eat carrot"}, "id": "c2"}]),
        ToolMessage(
            "Not run: memory has notes on this command. Choose again with them; call it again to run it anyway.\n"
            f'{NOTES_TITLE}\n- "Avoid `eat <X>`"', tool_call_id="c2"),
    ]
    assert all(decide("literal", held, s) != "eat carrot" for s in range(8))


def test_careless_acts_on_impulse_at_its_share() -> None:
    valid = ["prepare meal", *(f"examine thing{i}" for i in range(19))]
    messages = after_taking(valid)
    picks = [decide("careless", messages, s) for s in range(300)]
    share = sum(p != "prepare meal" for p in picks) / len(picks)
    expected = IMPULSE_SHARE * (len(valid) - 1) / len(valid)
    assert abs(share - expected) < 0.08, share
    warned = [SystemMessage(f'{NOTES_TITLE}\n- "Avoid `examine <X>`"'), *messages]
    assert all(decide("careless", warned, s) == "prepare meal" for s in range(40))
