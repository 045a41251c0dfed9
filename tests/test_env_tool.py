"""A ``create_agent`` agent playing a real TextWorldExpress game through ``env_tool`` and ``LearningMiddleware``.

A lost game raises nothing: the tool's ``ToolReport`` artifact carries the constraint failure to the middleware,
so memory learns the fatal move, abstracted over the ingredient, and the next game's model call is shown it. The
chat model is langchain-core's ``FakeMessagesListChatModel`` (scripted tool calls); the game, the agent, the
middleware and the memory are real.
"""

from __future__ import annotations

import logging
import subprocess
import sys
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, SystemMessage, ToolMessage

from langmem_plus.config import nest
from langmem_plus import LearningMemory
from langmem_plus.integrations.agent_run import read_memory_block, tool_step
from langmem_plus.integrations.env_tool import VALID_ACTIONS_TITLE, env_tool
from langmem_plus.textgames.step_rules import StepRules
from langmem_plus.referee import DeterministicReferee
from recording_model import RecordingModel


def plays(*commands: str) -> RecordingModel:
    calls = [AIMessage(content="", tool_calls=[{"name": "act", "args": {"command": c}, "id": f"c{i}"}])
             for i, c in enumerate(commands)]
    return RecordingModel(responses=[*calls, AIMessage(content="I am done.")])


def test_a_tool_report_gives_the_step_its_channels_and_a_malformed_one_is_ignored(caplog: pytest.LogCaptureFixture) -> None:
    lost = ToolMessage(content="You eat the egg. *** You lost! ***\n\nValid actions: look", tool_call_id="c1",
                       artifact={"feedback": {"constraint_failure": True}, "action": "eat egg",
                                 "observation": "You eat the egg. *** You lost! ***", "info": {"valid_actions": ["look"]}})
    step = tool_step(3, "act", "act command=eat egg", lost)
    assert step.feedback.constraint_failure and step.action == "eat egg" and step.info["valid_actions"] == ["look"]
    assert step.observation == step.feedback.error_text == "You eat the egg. *** You lost! ***"  # not the list
    assert "success" not in step.info
    rewarded = ToolMessage(content="You take the egg.", tool_call_id="c2", artifact={"feedback": {"reward": 0.5, "progress": 0.5}})
    step = tool_step(4, "act", "act command=take egg", rewarded)
    assert step.feedback.reward == 0.5 and not step.feedback.failed and step.action == "act command=take egg"
    with caplog.at_level(logging.WARNING, logger="langmem_plus.integrations.agent_run"):
        odd = tool_step(5, "act", "act command=x", ToolMessage(content="ok", tool_call_id="c3", artifact={"feedback": ["lost"]}))
    assert not odd.feedback.failed and odd.info["success"] and "malformed tool report" in caplog.text
    error = ToolMessage(content="boom", tool_call_id="c4", status="error", artifact={"feedback": {}})
    assert tool_step(6, "act", "act", error).feedback.hard_failure  # the message's status still counts


@pytest.fixture()
def kitchen() -> Iterator[Any]:
    """TextWorldExpress CookingWorld, easy setting (one room, one ingredient)."""
    pytest.importorskip("textworld_express")
    from langmem_plus.envs.registry import make_env

    env = make_env("twx-cooking:easy")
    yield env
    env.close()


def _learned_to_grill(tmp_path: Path, name: str, env: Any, **config: Any) -> LearningMemory:
    """A memory that saw two games lost by roasting what the recipe grills (a pepper, a pork chop)."""
    from langmem_plus.config import MemoryConfig

    memory = LearningMemory.open(tmp_path / name, namespace=("test", name), config=MemoryConfig(**nest(config)))
    for game, food in (("train-3", "yellow bell pepper"), ("train-4", "pork chop")):
        run_game(env, memory, game, plays("read cookbook", "open fridge", f"take {food}", f"cook {food} in oven"))
    return memory


def run_game(env: Any, memory: LearningMemory, game: str, model: RecordingModel, *, rules: StepRules | None = None,
             **options: Any) -> dict[str, Any]:
    """One game as a ``create_agent`` agent with the middleware (``rules``: the middleware's ``StepRules`` cache)."""
    opening = env.reset(game)
    middleware = memory.as_middleware(tool=env.name, task_id=game, referee=DeterministicReferee(env), **options)
    if rules is not None:
        middleware._rules = rules
    return create_agent(model, [env_tool(env)], middleware=[middleware]).invoke({"messages": [("user", opening)]})


def avoids(text: str, pattern: str) -> bool:
    """Whether a memory block, read as a model-side reader reads it, avoids ``pattern`` (alone or in a joined line)."""
    return any(h.text.startswith("Avoid") and f"`{pattern}`" in h.text for h in read_memory_block(text))


def rule_ids(memory: LearningMemory, env: Any, wrong: str) -> set[str]:
    """The text rules that avoid ``wrong`` (learned in different situations)."""
    return {r.id for r in memory.text_rules(env.name) if r.wrong == wrong}


def test_an_agent_learns_a_fatal_move_in_one_real_game_and_is_warned_in_another(tmp_path: Path, kitchen: Any) -> None:
    with closing(LearningMemory.open(tmp_path / "store", namespace=("test", "env-tool"))) as memory:
        first = plays("read cookbook", "open fridge", "take yellow bell pepper", "eat yellow bell pepper")
        out = run_game(kitchen, memory, "train-3", first)
        last = out["lm_steps"][-1]
        assert last["action"] == "eat yellow bell pepper" and last["feedback"]["constraint_failure"]
        assert not out["lm_report"]["passed"]  # the game's own verdict: lost
        tool_texts = [str(m.content) for m in out["messages"] if isinstance(m, ToolMessage)]
        assert VALID_ACTIONS_TITLE in tool_texts[0] and all(VALID_ACTIONS_TITLE not in s["observation"] for s in out["lm_steps"])
        avoid = [r for r in memory.text_rules(kitchen.name) if r.wrong == "eat <X>"]
        assert avoid, [r.rule_text for r in memory.text_rules(kitchen.name)]  # over the ingredient, not the pepper

        second = plays("read cookbook")
        run_game(kitchen, memory, "test-20000", second)  # a test-fold game: a pork chop, never seen in training
        system = second.seen[0][0]
        assert isinstance(system, SystemMessage) and "Avoid `eat <X>`" in str(system.content)
        assert avoid[0].id in str(system.content)


def test_the_game_example_loses_once_then_reads_the_note_and_does_not(tmp_path: Path) -> None:
    pytest.importorskip("textworld_express")
    example = Path(__file__).resolve().parents[1] / "examples" / "create_agent_game.py"
    proc = subprocess.run([sys.executable, str(example), str(tmp_path / "store")], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    first, second = [line for line in proc.stdout.splitlines() if "fatal move:" in line]
    assert "'eat yellow bell pepper'" in first and first.endswith("fatal move: True")
    assert "eat pork chop" not in second and second.endswith("fatal move: False")  # a test-fold ingredient


def test_at_step_text_rules_reach_the_model_when_they_fire_and_are_activated_once(tmp_path: Path, kitchen: Any) -> None:
    from langmem_plus.errors import InvalidArgument

    with closing(LearningMemory.open(tmp_path / "x", namespace=("t", "x"))) as bare, pytest.raises(InvalidArgument, match="text_rules"):
        bare.as_middleware(text_rules="sometimes")
    with closing(_learned_to_grill(tmp_path, "listed", kitchen, text_guard="off")) as memory:  # every standing rule listed
        model = plays("read cookbook", "open fridge", "take pork chop", "look around")
        out = run_game(kitchen, memory, "test-20000", model, text_rules="at_step", end_run=False)  # a pork chop to grill
        systems = model.system_texts()
        assert not any("oven" in s for s in systems[:3])  # nothing to cook on offer yet: the rule waits for its step
        assert avoids(systems[3], "cook pork chop in oven") and "Prefer `open fridge`" in systems[1]  # after `take pork chop`
        assert "[lesson:" not in systems[3]  # short lines: the activations, not the text, carry the ids
        oven = rule_ids(memory, kitchen, "cook <X> in oven")
        assert [a["lesson_id"] in oven for a in out["lm_activations"]].count(True) == 1  # shown at two calls, activated once
        pre = plays("read cookbook")
        run_game(kitchen, memory, "test-20001", pre, end_run=False)  # the default: among the pre-run lessons, at the first call
        assert "Avoid `cook <X> in oven`" in str(pre.seen[0][0].content)


def test_the_guard_answers_a_proposed_call_instead_of_running_it_and_runs_it_when_proposed_again(tmp_path: Path, kitchen: Any) -> None:
    from langmem_plus.integrations.middleware import GUARD_NOTE

    with closing(_learned_to_grill(tmp_path, "guarded", kitchen)) as memory:  # the default guard: warnings wait for a proposal
        oven = "cook pork chop in oven"
        model = plays("read cookbook", "open fridge", "take pork chop", oven, oven)
        out = run_game(kitchen, memory, "test-20000", model, text_rules="at_step", end_run=False)
        systems = model.system_texts()
        assert not any("Avoid `cook" in s for s in systems[:4])  # held until the model reaches for the oven
        replies = [m for m in out["messages"] if isinstance(m, ToolMessage)]
        assert replies[3].content.startswith(GUARD_NOTE) and "`cook pork chop in oven`" in replies[3].content
        assert str(replies[3].content).splitlines()[0].startswith(f"Not run: `{oven}`: memory holds a note against it.")
        assert avoids(systems[4], "cook pork chop in oven")  # the model chooses again with the note
        assert out["lm_guard"] == [{"step": 3, "action": oven}]
        assert [s["action"] for s in out["lm_steps"]] == ["read cookbook", "open fridge", "take pork chop", oven]
        assert out["lm_steps"][-1]["feedback"]["constraint_failure"]  # proposed again, it ran: the model's choice
        lessons = rule_ids(memory, kitchen, "cook <X> in oven")
        assert [a["lesson_id"] in lessons for a in out["lm_activations"]].count(True) == 1


def test_a_delivery_rebuilt_from_the_state_at_every_call_shows_what_a_kept_one_shows(tmp_path: Path, kitchen: Any) -> None:
    """Another process, a resumed thread or an evicted run rebuilds the run's delivery by replaying its state."""
    with closing(_learned_to_grill(tmp_path, "replay", kitchen)) as memory:
        oven = "cook pork chop in oven"
        seen = []
        for cache in (StepRules(), StepRules(max_runs=0)):  # kept across calls; rebuilt at every call
            model = plays("read cookbook", "open fridge", "take pork chop", "examine oven", oven, oven)
            out = run_game(kitchen, memory, "test-20000", model, rules=cache, text_rules="at_step", end_run=False)
            seen.append((model.system_texts(), out["lm_guard"], [s["action"] for s in out["lm_steps"]]))
        assert seen[0] == seen[1] and seen[0][1]  # the same notes, answers and steps; and the guard did answer


def test_an_avoidance_from_before_the_run_waits_for_the_call_it_quotes(tmp_path: Path, kitchen: Any) -> None:
    """With the guard, an avoided episode's literal action is answered when proposed, as the bench's executor's is."""
    from langmem_plus.integrations.middleware import GUARD_NOTE

    with closing(LearningMemory.open(tmp_path / "store", namespace=("test", "held"))) as memory:
        for game in ("train-3", "train-4"):  # closing a closed fridge, again and again: an avoided episode
            run_game(kitchen, memory, game, plays("close fridge", "close fridge", "close fridge", "read cookbook"))
        model = plays("read cookbook", "close fridge", "close fridge", "look around")
        out = run_game(kitchen, memory, "test-20000", model, text_rules="at_step", end_run=False)
        systems = model.system_texts()
        assert not any("close fridge" in s for s in systems[:2])  # held: not paid for until proposed
        replies = [m for m in out["messages"] if isinstance(m, ToolMessage)]
        assert replies[1].content.startswith(GUARD_NOTE) and avoids(str(replies[1].content), "close fridge")
        assert "`close fridge`: memory holds a note against it" in str(replies[1].content).splitlines()[0]
        assert out["lm_guard"] == [{"step": 1, "action": "close fridge"}]
        assert all(avoids(s, "close fridge") for s in systems[2:])  # answered, it stays in view
        assert [s["action"] for s in out["lm_steps"]] == ["read cookbook", "close fridge", "look around"]


def test_a_held_step_names_the_proposal_and_says_a_recommendation_is_no_note_against_it() -> None:
    from langmem_plus.integrations.guard_answer import STEP_AGAINST, STEP_INSTEAD, step_guard_note
    from langmem_plus.records import Hint

    prefer = [Hint(text="Prefer `open fridge`, `open kitchen cupboard`", source_id="p")]
    assert step_guard_note("examine  kitchen cupboard", prefer) == (
        f"Not run: `examine kitchen cupboard`: {STEP_INSTEAD}. Choose again with the notes below; call it again "
        "unchanged to run it anyway.")
    oven = [Hint(text="Avoid `cook <X> in oven/toaster`", precondition="unless the task says so", source_id="a")]
    assert STEP_AGAINST in step_guard_note("cook red apple in toaster", oven)
    assert STEP_INSTEAD in step_guard_note("cook red apple in stove", oven)  # a note on other commands is none on this
