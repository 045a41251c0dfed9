"""``PolicyChatModel`` (an executor as a chat model) and ``langmem-plus bench env --agent`` on real games."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from langmem_plus.errors import EnvError
from langmem_plus.bench.agent_env import memory_tokens
from langmem_plus.integrations.policy_model import PolicyChatModel, split_valid_actions
from langmem_plus.textgames.executor import TextGameExecutor
from langmem_plus.integrations.agent_run import MEMORY_TITLE, render_memory
from langmem_plus.integrations.env_tool import GAME_OVER, VALID_ACTIONS_TITLE
from langmem_plus.records import Lesson, ScoredItem

OPENING = f"Goal: eat the red apple.\n\nYou are in the kitchen.\n\n{VALID_ACTIONS_TITLE} eat red apple, look"


def model() -> PolicyChatModel:
    return PolicyChatModel(executor=TextGameExecutor(seed=0), task_id="t")


def test_the_policy_reads_memory_from_the_system_message_only() -> None:
    assert model().decide([HumanMessage(OPENING)]).tool_calls[0]["args"] == {"command": "eat red apple"}
    lesson = Lesson(id="l1", namespace=("ns",), rule_text="AVOID: eat red apple", wrong="eat red apple")
    block = render_memory([ScoredItem(kind="lesson", item=lesson, score=1.0)])
    warned = model().decide([SystemMessage(f"You play.\n\n{block}"), HumanMessage(OPENING)])
    assert warned.tool_calls[0]["args"] == {"command": "look"}
    told_elsewhere = model().decide([HumanMessage(OPENING + "\n" + block)])  # a note in the task's text is no memory
    assert told_elsewhere.tool_calls[0]["args"] == {"command": "eat red apple"}


def test_the_policy_rebuilds_the_attempt_from_tool_reports_and_stops_when_the_episode_is_over() -> None:
    call = AIMessage(content="", tool_calls=[{"name": "act", "args": {"command": "look"}, "id": "c0"}])
    seen = ToolMessage(content=f"A kitchen.\n\n{VALID_ACTIONS_TITLE} eat red apple, look", tool_call_id="c0",
                       artifact={"feedback": {}, "action": "look", "observation": "A kitchen.",
                                 "info": {"valid_actions": ["eat red apple", "look"], "done": False}})
    steps = model().steps([HumanMessage(OPENING), call, seen, ToolMessage(content="plain", tool_call_id="x")])
    assert [(s.action, s.observation, s.info["valid_actions"]) for s in steps] == [("look", "A kitchen.", ["eat red apple", "look"])]
    over = seen.model_copy(update={"artifact": {"feedback": {"constraint_failure": True}, "action": "eat red apple",
                                                "info": {"done": True}}, "content": f"You lost.\n\n{GAME_OVER}"})
    assert not model().decide([HumanMessage(OPENING), call, over]).tool_calls
    assert not model().model_copy(update={"max_steps": 1}).decide([HumanMessage(OPENING), call, seen]).tool_calls
    assert split_valid_actions("no list") == ("no list", [])


def test_memory_tokens_count_each_line_once_and_nothing_without_a_block() -> None:
    one = f"sys\n\n{MEMORY_TITLE}\n- a line"
    assert memory_tokens([one, one]) == memory_tokens([one]) > 0
    assert memory_tokens([one, one + "\n- another"]) > memory_tokens([one])
    assert memory_tokens(["sys", ""]) == 0


def test_bench_env_agent_runs_both_designs_through_create_agent() -> None:
    pytest.importorskip("textworld_express")
    proc = subprocess.run(
        [sys.executable, "-m", "langmem_plus.cli", "bench", "env", "--agent", "--env", "twx-cooking:easy",
         "--collect-seeds", "0-3", "--seeds", "0-2", "--repeats", "1", "--designs", "no_memory", "langmem_plus", "--json"],
        capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout)
    assert out["executor"] == "agent" and set(out["designs"]) == {"no_memory", "langmem_plus"}
    bare, memory = out["designs"]["no_memory"], out["designs"]["langmem_plus"]
    assert bare["context_tokens_per_task"] == 0 and memory["context_tokens_per_task"] > 0  # the middleware's block
    assert bare["steps"] > 0 and memory["steps"] > 0 and len(out["curves"]["langmem_plus"]["success"]) == 7
    assert "[env --agent] langmem_plus repeat 1/1" in proc.stderr


def test_a_memory_free_agent_plays_the_benchs_game_action_for_action() -> None:
    """The agent path adds nothing: given the state the bench's executor starts from, the same policy behind
    ``create_agent`` and ``env_tool`` takes the same actions (rooms3 train-0 opened differently without it)."""
    pytest.importorskip("textworld_express")
    from langmem_plus.bench.agent_env import play
    from langmem_plus.bench.designs.base import Context, run_episode
    from langmem_plus.bench.env import _tasks
    from langmem_plus.envs.registry import make_env

    env = make_env("twx-cooking:rooms3")
    try:
        for task in _tasks(env, "train", [0, 1]):
            bench = run_episode(env, TextGameExecutor(seed=0), task, Context(), run_id=task.task_id, max_steps=12)
            agent, tokens, guarded = play(env, task, 0, 12, [])
            assert [s.action for s in agent.steps] == [s.action for s in bench.steps] and len(bench.steps) >= 4
            assert tokens == 0 and guarded == 0
    finally:
        env.close()


def test_an_outside_model_plays_the_agent_bench_and_its_memory_tokens_are_counted() -> None:
    """``--executor literal``: a model written to memory's public text plays the designs, a baseline's notes reaching
    it in the system message as langmem_plus's do; what memory sent it is read off its calls (a callback), as for the
    bench's own policy, and the notes it was shown are judged against its task (``contradicted_notes``)."""
    pytest.importorskip("textworld_express")
    from langmem_plus.bench.agent_env import run_agent_bench

    designs = ("no_memory", "reasoning_bank_abstracted", "langmem_plus")
    out = run_agent_bench(env_name="twx-cooking:easy", collect="0-3", seeds="0-1", fold="dev", repeats=1,
                          executor="literal", designs=designs)
    assert out["executor"] == "agent:literal" and set(out["designs"]) == set(designs)
    assert out["designs"]["no_memory"]["context_tokens_per_task"] == 0
    assert out["designs"]["no_memory"]["contradicted_notes"] == 0
    assert out["designs"]["reasoning_bank_abstracted"]["context_tokens_per_task"] > 0
    assert out["designs"]["langmem_plus"]["context_tokens_per_task"] > 0 and out["designs"]["langmem_plus"]["steps"] > 0
    with pytest.raises(EnvError, match="executor must be one of"):
        run_agent_bench(env_name="twx-cooking:easy", executor="nobody")
