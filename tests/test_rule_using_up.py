"""``textgames.delivery_rules.using_up`` and what it reads (``textgames.consume``): a command seen using up its object
keeps the next attempt from using up a thing its task does not ask it to, before the recipe is read too."""

from __future__ import annotations

import shutil
from collections.abc import Sequence

import pytest

from langmem_plus.bench.designs.base import Context, run_episode
from langmem_plus.bench.env import _tasks, parse_range
from langmem_plus.textgames.executor import TextGameExecutor
from langmem_plus.textgames.consume import consumed_commands
from langmem_plus.memory import Trajectory
from langmem_plus.config import MemoryConfig
from langmem_plus.records import Feedback, RunRecord, Step, TaskSpec
from langmem_plus.textgames.delivery import StepDelivery
from langmem_plus.textgames.delivery_rules.using_up import consuming_verbs
from listing import listing

GOAL = "Cook a meal. Check the cookbook for the recipe."
RECIPE = "Ingredients:\n  carrot\n  red apple\nDirections:\n  dice the carrot\n  prepare meal"
HELD = ["eat carrot", "drop carrot", "eat meal", "eat green apple", "drop green apple", "look"]


def _step(i: int, action: str, valid: Sequence[str], *, failed: bool = False, observation: str = "Done.") -> Step:
    return Step(index=i, action=action, observation=observation, info={"valid_actions": list(valid)},
                feedback=Feedback(hard_failure=failed, error_text="no" if failed else ""))


def _task(valid: Sequence[str]) -> TaskSpec:
    return TaskSpec(task_id="t", goal=GOAL, tool="game", context={"observation": "A kitchen.", "valid_actions": list(valid)})


def _runs(n: int, consumed: Sequence[str] = ("eat",)) -> list[RunRecord]:
    return [RunRecord(run_id=f"r{i}", namespace=("ns",), seq=i, task_id="t", tool="game",
                      extras={"textgames": {"consumed": list(consumed)}})
            for i in range(n)]


def test_a_command_whose_step_leaves_nothing_naming_its_object_consumes_it() -> None:
    start = ["eat green apple", "drop green apple", "put green apple in fridge", "look"]
    task = TaskSpec(task_id="t", goal="g", context={"valid_actions": start})
    assert consumed_commands(task, [_step(0, "eat green apple", ["look"])]) == ["eat"]
    put = [_step(0, "put green apple in fridge", ["take green apple from fridge", "look"])]
    assert consumed_commands(task, put) == []  # no other command takes "green apple in fridge" whole; the apple is still named
    assert consumed_commands(task, [_step(0, "drop green apple", ["take green apple", "look"])]) == []  # still named
    assert consumed_commands(task, [_step(0, "eat green apple", ["look"], failed=True)]) == []  # a failure did nothing
    assert consumed_commands(task, [_step(0, "eat green apple", [])]) == []  # the game's last step offers nothing to read
    cut_short = [_step(0, "eat green apple", ["restart", "quit"])]  # a list replaced (a game's end), not a thing gone
    assert consumed_commands(task, cut_short) == []
    rooms = TaskSpec(task_id="r", goal="g", context={"valid_actions": ["enter shed", "examine shed", "look", "wait"]})
    entered = Step(index=0, action="enter shed", info={"valid_actions": ["exit", "look", "wait"]},
                   state_before={"location": "garden"}, state_after={"location": "shed"})
    assert consumed_commands(rooms, [entered]) == []  # leaving a place takes its things out of the valid actions too
    stayed = entered.model_copy(update={"state_after": {"location": "garden"}})
    assert consumed_commands(rooms, [stayed]) == ["enter"]  # the same step where the agent stayed: the shed is gone


def test_a_consuming_command_is_avoided_on_things_the_task_does_not_ask_it_of() -> None:
    history = [_step(0, "read cookbook", HELD, observation=RECIPE)]
    deliver = listing([], _runs(2))
    avoided = {h.text for h in deliver(_task(HELD), history)}
    assert avoided == {"Avoid `eat carrot`", "Avoid `eat green apple`"}  # not the meal: the goal's own word
    unread = {h.text for h in listing([], _runs(2))(_task(HELD), [])}
    assert unread == avoided  # before the recipe is read: nothing names the carrot yet, and eaten it is gone
    asked = "Ingredients:\n  carrot\nDirections:\n  eat the carrot"
    said = {h.text for h in listing([], _runs(2))(_task(HELD), [_step(0, "read cookbook", HELD, observation=asked)])}
    assert said == {"Avoid `eat green apple`"}  # the recipe asks it of the carrot
    assert listing([], _runs(1))(_task(HELD), history) == []  # one run is not evidence enough (``min_occurrences``)
    assert listing([], _runs(2), MemoryConfig(textgames={"text_rules_off": frozenset({"using_up"})}))(_task(HELD), history) == []
    assert consuming_verbs(_runs(2), {"eat"}, 2) == frozenset()  # a command memory knows right over a placeholder
    guarded = StepDelivery([], _runs(2))
    assert guarded(_task(HELD), history) == []
    answer = guarded.check(_task(HELD), history, "eat carrot")
    assert [h.text for h in answer] == ["Avoid `eat carrot`"] and guarded.activations("run") == []  # an inference
    offered = ["eat carrot", "drop carrot", "eat green apple", "drop green apple", "look"]
    read = [_step(0, "read cookbook", offered, observation=RECIPE)]
    assert TextGameExecutor(seed=1).act(_task(offered), read, []).action == "eat carrot"  # what it does unwarned
    warned = StepDelivery([], _runs(2))
    warned(_task(offered), read)
    answer = warned.check(_task(offered), read, "eat carrot")
    assert TextGameExecutor(seed=1).act(_task(offered), read, answer).action not in ("", "eat carrot")


def test_an_action_memory_recommends_outright_is_not_avoided_as_using_up() -> None:
    from langmem_plus.records import Lesson, LessonScope, Provenance

    rec = Lesson(id="eat-carrot", namespace=("ns",), rule_text="PREFER: eat carrot", correct="eat carrot", applies_when=[],
                 scope=LessonScope(tool="game"), provenance=Provenance(run_ids=["r0", "r1"]))
    history = [_step(0, "read cookbook", HELD, observation=RECIPE)]
    shown = {h.text for h in listing([rec], _runs(2))(_task(HELD), history)}
    assert "Prefer `eat carrot`" in shown and "Avoid `eat carrot`" not in shown


@pytest.mark.skipif(shutil.which("java") is None, reason="the text games need a Java runtime")
def test_real_games_show_eating_uses_a_thing_up_and_nothing_else_they_did_does() -> None:
    pytest.importorskip("textworld_express")
    from langmem_plus.envs.registry import make_env

    env = make_env("twx-cooking:medium")
    try:
        runs: list[Trajectory] = []
        ate: list[bool] = []
        for t in _tasks(env, "train", parse_range("0-11")):  # games until one ate mid-game without losing and one did not
            runs.append(run_episode(env, TextGameExecutor(seed=2), t, Context(), max_steps=50))
            ate.append(any(s.action.startswith("eat ") and not s.feedback.constraint_failure for s in runs[-1].steps[:-1]))
            if any(ate) and not all(ate):
                break
        assert any(ate) and not all(ate), ate
        seen = [consumed_commands(r.task, r.steps) for r in runs]
        assert seen == [["eat"] if a else [] for a in ate], seen  # eating, and nothing else, used a thing up
        taken = {s.action.split()[0] for r in runs for s in r.steps}
        assert {"take", "open"} <= taken  # commands that moved or opened things were there, and are not read as using up
    finally:
        env.close()


def test_a_using_up_warning_shown_at_a_proposal_stays_paid_for_a_long_thing_too() -> None:
    thing = "slice of homemade rye bread with butter and honey"  # a line longer than a compact line keeps
    valid = [f"eat {thing}", f"drop {thing}", "look"]
    deliver = StepDelivery([], _runs(2))
    history = [_step(0, "look", valid, observation="A kitchen.")]
    assert deliver(_task(valid), history) == []
    assert [h.text for h in deliver.check(_task(valid), history, f"eat {thing}")] == [f"Avoid `eat {thing}`"]
    later = [*history, _step(1, "look", valid, observation="A kitchen.")]
    assert [h.text for h in deliver(_task(valid), later)] == [f"Avoid `eat {thing}`"]  # paid: shown, not held again
    assert len(deliver.lines) == 1
