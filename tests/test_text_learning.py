"""Learning in text games: the generic executor, text rules, and ``bench env``.

Every game here is the real TextWorldExpress CookingWorld (``twx-cooking:easy``); the
recipes named below were read by playing the seeds (train and dev folds only).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from fixed_executor import Fixed
from langmem_plus import LearningMemory
from langmem_plus.bench.designs.base import Context, run_episode
from langmem_plus.envs.textgame import TextGameEnv
from langmem_plus.executors.base import Decision
from langmem_plus.textgames.executor import Pattern, TextGameExecutor, read_hint
from langmem_plus.textgames.policy import ExecutorPolicy
from langmem_plus.textgames.rules import (
    abstract_action,
    conditions_for,
    directed_verbs,
    live_text_rules,
    offered_verbs,
)
from langmem_plus.textgames.direct import instrument_kin
from langmem_plus.textgames.learn import learn_text_rules
from langmem_plus.textgames.effects import effect_of
from langmem_plus.memory import Trajectory
from langmem_plus.records import Feedback, Hint, Lesson, Step, TaskSpec

ROAST_TRAIN = "train-18"
"""Recipe: chop the yellow potato, roast the yellow potato, prepare meal."""
ROAST_DEV = "dev-10001"
"""Recipe: roast the chicken wing, prepare meal (another ingredient, the same cooking verb)."""
FRY_TRAIN = "train-10"
"""Recipe: fry the pork chop, prepare meal."""


def _task(env: TextGameEnv, task_id: str) -> TaskSpec:
    env.reset(task_id)
    return TaskSpec(task_id=task_id, goal=env.goal, tool=env.name, domain=env.domain, family=env.family)


def _play(env: TextGameEnv, task_id: str, actions: Sequence[str], run_id: str) -> Trajectory:
    return run_episode(env, Fixed(actions), _task(env, task_id), Context(), run_id=run_id, max_steps=len(actions))


# --------------------------------------------------------------------------- the executor


def test_executor_never_repeats_an_action_in_the_same_state(cooking: TextGameEnv) -> None:
    traj = run_episode(cooking, TextGameExecutor(seed=3), _task(cooking, "train-5"), Context(), max_steps=40)
    assert len(traj.steps) > 10
    seen: set[tuple[str, str]] = set()
    for i, step in enumerate(traj.steps):
        valid = traj.steps[i - 1].info["valid_actions"] if i else traj.task.context["valid_actions"]
        key = (json.dumps(step.state_before, sort_keys=True) + "|".join(sorted(valid)), step.action)
        assert key not in seen, f"step {i} repeats {step.action!r} in the same state"
        seen.add(key)
        assert step.action in valid  # only valid actions: no invalid-action failures
    assert not any(s.feedback.hard_failure for s in traj.steps)


def test_executor_is_deterministic_per_seed(cooking: TextGameEnv) -> None:
    task = _task(cooking, "train-3")
    a = [s.action for s in run_episode(cooking, TextGameExecutor(seed=1), task, Context(), max_steps=15).steps]
    b = [s.action for s in run_episode(cooking, TextGameExecutor(seed=1), task, Context(), max_steps=15).steps]
    assert a == b


def _cook_choice(env: TextGameEnv, task_id: str, ingredient: str, hints: Sequence[Hint]) -> Decision:
    """The executor's decision once the recipe is read and ``ingredient`` is held."""
    traj = _play(env, task_id, ["read cookbook", "open fridge", f"take {ingredient}"], run_id=f"setup-{task_id}")
    assert not any(s.feedback.failed for s in traj.steps)
    return TextGameExecutor(seed=0).act(traj.task, traj.steps, hints)


def test_executor_follows_a_prefer_hint_with_its_condition_bound(cooking: TextGameEnv) -> None:
    prefer = Hint(text="Prefer `cook <X> in oven`", precondition="when the task says `roast <X>`", source_id="p1")
    decision = _cook_choice(cooking, ROAST_DEV, "chicken wing", [prefer])
    assert decision.action == "cook chicken wing in oven" and decision.applied_hints == ("p1",)
    # the condition does not hold for a fry recipe: the hint is not applied there
    other = _cook_choice(cooking, FRY_TRAIN, "pork chop", [prefer])
    assert "p1" not in other.applied_hints and other.action != "cook pork chop in oven"


def test_executor_avoids_what_an_avoid_hint_matches(cooking: TextGameEnv) -> None:
    traj = _play(cooking, ROAST_DEV, ["read cookbook", "open fridge", "take chicken wing"], run_id="avoid")
    valid = traj.steps[-1].info["valid_actions"]
    cooks = [a for a in valid if a.startswith("cook ")]
    avoid = [Hint(text=f"Avoid `{a.replace('chicken wing', '<X>')}`", source_id=f"a{i}") for i, a in enumerate(cooks)]
    avoid.append(Hint(text="Avoid `eat <X>`", source_id="eat"))
    ex = TextGameExecutor(seed=0)
    for seed in range(5):
        action = TextGameExecutor(seed=seed).act(traj.task, traj.steps, avoid).action
        assert not action.startswith(("cook ", "eat chicken"))
    assert ex.act(traj.task, traj.steps, []).action in valid


@pytest.mark.parametrize(
    "hint",
    [
        Hint(text="", source_id="empty"),
        Hint(text="Prefer cook things in the oven", source_id="no-quotes"),
        Hint(text="Prefer `<X>`", source_id="only-slot"),
        Hint(text="Prefer ``", source_id="empty-quotes"),
        Hint(text="Prefer `cook <X> in oven`", precondition="when `roast <Z> <Q>`", source_id="unbound"),
        Hint(text="Avoid `((( [unbalanced`", source_id="regexy"),
    ],
)
def test_executor_ignores_malformed_hints(cooking: TextGameEnv, hint: Hint) -> None:
    traj = _play(cooking, ROAST_DEV, ["read cookbook", "open fridge", "take chicken wing"], run_id="malformed")
    plain = TextGameExecutor(seed=0).act(traj.task, traj.steps, [])
    with_hint = TextGameExecutor(seed=0).act(traj.task, traj.steps, [hint])
    assert with_hint.action == plain.action and hint.source_id not in with_hint.applied_hints


ROOMS = "You are hungry! Let's cook a delicious meal. Check the cookbook in the kitchen for the recipe."


def _room_step(i: int, action: str, before: str, after: str, valid: list[str], *, failed: bool = False,
               held: Sequence[str] = (), held_before: Sequence[str] = (), observation: str | None = None) -> Step:
    """A step of a made-up game of rooms: ``action`` taken in ``before`` holding ``held_before``, leaving the agent in
    ``after`` holding ``held``; ``observation`` defaults to a plain answer."""
    seen = observation if observation is not None else ("You can't." if failed else "Done.")
    return Step(index=i, action=action, observation=seen,
                feedback=Feedback(hard_failure=failed, error_text="You can't." if failed else ""),
                state_before={"location": before, "inventory": list(held_before)},
                state_after={"location": after, "inventory": list(held)}, info={"valid_actions": valid})


def test_a_failed_action_is_tried_again_only_after_an_action_on_its_object_succeeds() -> None:
    start = ["move north", "examine chair", "open door to north", "take apple"]
    after = ["move north", "examine table"]
    task = TaskSpec(task_id="t", goal=ROOMS, context={"valid_actions": start, "state": {"location": "kitchen"}})
    looked = _room_step(0, "examine chair", "kitchen", "kitchen", start)
    failed = _room_step(1, "move north", "kitchen", "kitchen", start, failed=True)
    took = _room_step(2, "take apple", "kitchen", "kitchen", after, held=["apple"])
    opened = _room_step(2, "open door to north", "kitchen", "kitchen", after)
    ex = TextGameExecutor(seed=0)
    assert ex.act(task, [looked, failed, took], []).action == "examine table"  # nothing changed about the north
    assert ex.act(task, [looked, failed, opened], []).action == "move north"  # the door on its way was opened


def test_a_way_out_not_taken_from_here_outranks_looking_around_once_moving_is_known() -> None:
    hall = ["move south", "move east", "examine chair", "examine lamp"]
    task = TaskSpec(task_id="t", goal=ROOMS, context={"valid_actions": ["move north", "examine table"],
                                                      "state": {"location": "kitchen"}})
    moved = _room_step(0, "move north", "kitchen", "hall", hall)
    ex = TextGameExecutor(seed=0)
    first = ex.act(task, [moved], [])
    assert first.action in {"move south", "move east"}  # "move" changed the room: its untaken ways out draw the agent
    looked = _room_step(1, "examine chair", "hall", "hall", hall)
    back = _room_step(2, "move south", "hall", "kitchen", ["move north", "examine table"])
    again = _room_step(3, "move north", "kitchen", "hall", hall)
    assert ex.act(task, [moved, looked, back, again], []).action == "move east"  # south was taken from here already
    with_task_thing = ["move south", "move east", "examine chair", "take cookbook"]  # the goal names the cookbook
    arrived = _room_step(0, "move north", "kitchen", "hall", with_task_thing)
    eager = TextGameExecutor(seed=0, policy=ExecutorPolicy(explore_bonus=5.0))
    assert eager.act(task, [arrived], []).action == "take cookbook"  # a room is left once nothing the task names is left in it
    assert eager.act(task, [moved], []).action in {"move south", "move east"}


def test_a_procedures_next_step_is_recommended_only_right_after_the_step_before_it() -> None:
    """A remembered procedure's later steps (``move west``) were for the game it was learned in: the reader follows it
    from its first step while the attempt keeps to it; after another step nothing draws the agent back to it."""
    procedure = Hint(text="Worked before for a similar goal: start with `read cookbook` then `move west`", source_id="e")
    here = ["move west", "take salt", "examine chair"]
    task = TaskSpec(task_id="t", goal=ROOMS, context={"valid_actions": ["read cookbook", "examine chair"],
                                                      "state": {"location": "kitchen"}})
    read = Step(index=0, action="read cookbook", observation="Ingredients:\n  salt", info={"valid_actions": here},
                state_before={"location": "kitchen"}, state_after={"location": "kitchen"})
    ex = TextGameExecutor(seed=0)
    assert ex.act(task, [], [procedure]).action == "read cookbook"
    assert ex.act(task, [read], []).action == "take salt"  # what the recipe names, on its own
    assert ex.act(task, [read], [procedure]).action == "move west"  # the procedure's next step, right after its first
    looked = _room_step(1, "examine chair", "kitchen", "kitchen", here)
    assert ex.act(task, [read, looked], [procedure]).action == "take salt"  # away from it: move west has no bonus
    failed = _room_step(1, "examine chair", "kitchen", "kitchen", here, failed=True)
    assert ex.act(task, [read, failed], [procedure]).action == "move west"  # a failed step leaves nothing
    longer = Hint(text="Worked before for a similar goal: start with `read cookbook` then `take salt` ; `move west`",
                  source_id="e2")
    salted = _room_step(2, "take salt", "kitchen", "kitchen", here)
    kept = ex.act(task, [read, salted], [longer])
    assert kept.action == "move west" and kept.applied_hints == ("e2",)  # kept to: its next step
    back = ex.act(task, [read, looked, salted], [longer])  # the agent came back to it on its own: followed again
    assert back.applied_hints == ("e2",)


def _held_step(i: int, action: str, observation: str, before: Sequence[str], after: Sequence[str], valid: list[str]) -> Step:
    """A step in the kitchen that changed what the agent holds from ``before`` to ``after`` (``_room_step``)."""
    return _room_step(i, action, "kitchen", "kitchen", valid, held=after, held_before=before, observation=observation)


def test_a_held_thing_the_goal_points_at_still_draws_the_agent_until_it_is_read() -> None:
    holding = ["read cookbook", "examine cutlery drawer", "examine oven"]
    task = TaskSpec(task_id="t", goal=ROOMS, context={
        "valid_actions": ["take cookbook", "examine cutlery drawer"], "observation": "You see a cutlery drawer.",
        "state": {"location": "kitchen", "inventory": []}})
    took = _held_step(0, "take cookbook", "Adding the cookbook to your inventory.", [], ["cookbook"], holding)
    ex = TextGameExecutor(seed=0)
    assert ex.act(task, [took], []).action == "read cookbook"  # taking it only acknowledged it: the cookbook still draws
    recipe = "Ingredients:\n  carrot\nDirections:\n  chop the carrot"
    read = _held_step(1, "read cookbook", recipe, ["cookbook"], ["cookbook"], [*holding[1:], "examine cookbook"])
    assert ex.act(task, [took, read], []).action == "examine cutlery drawer"  # read: holding it no longer draws
    boil = TaskSpec(task_id="b", goal="Your task is to boil caesium. First, focus on the substance.", context={
        "valid_actions": ["move wood to inventory"], "observation": "You see a fire pit.",
        "state": {"location": "outside", "inventory": []}})
    wood = _room_step(0, "move wood to inventory", "outside", "outside", ["examine substance called wood", "look at fire pit"],
                      held=["substance called wood"], observation="You move the wood to the inventory.")
    assert ex.act(boil, [wood], []).action == "look at fire pit"  # the goal names "substance", not this held thing


def test_a_recommendation_undone_by_putting_its_gain_away_is_followed_again() -> None:
    prefer = Hint(text="Prefer `take knife`", source_id="k")
    here = ["take knife", "examine oven", "examine stove"]
    task = TaskSpec(task_id="t", goal=ROOMS, context={"valid_actions": here, "state": {"location": "kitchen", "inventory": []}})
    took = _held_step(0, "take knife", "You take the knife.", [], ["knife"], ["put knife in drawer", "examine oven"])
    ex = TextGameExecutor(seed=0)
    assert ex.act(task, [], [prefer]).action == "take knife"
    put = _held_step(1, "put knife in drawer", "You put the knife in the drawer.", ["knife"], [], [*here, "close drawer"])
    assert ex.act(task, [took, put], [prefer]).action == "take knife"  # the knife was put away: take it again
    assert ex.act(task, [took, put], []).action != "take knife"  # without the recommendation it stays a repeat
    kept = _held_step(1, "examine oven", "an oven", ["knife"], ["knife"], here)
    assert ex.act(task, [took, kept], [prefer]).action != "take knife"  # still held: followed once


def test_the_executor_leaves_its_first_room_in_a_real_three_room_game() -> None:
    pytest.importorskip("textworld_express")
    from langmem_plus.envs.registry import make_env

    env = make_env("twx-cooking:rooms3")
    assert isinstance(env, TextGameEnv)
    try:
        rooms = []
        for task_id in ("train-1", "train-2", "train-4"):
            traj = run_episode(env, TextGameExecutor(seed=0), _task(env, task_id), Context(), max_steps=50)
            rooms.append({s.state_after["location"] for s in traj.steps})
            for i, step in enumerate(traj.steps):  # a failed action is never repeated before its state changed
                if i and traj.steps[i - 1].feedback.failed and traj.steps[i - 1].action == step.action:
                    assert traj.steps[i - 1].state_after != step.state_before or step.info != traj.steps[i - 1].info
    finally:
        env.close()
    assert all(len(r) >= 2 for r in rooms), rooms


def test_hint_reader_parses_patterns_and_conditions() -> None:
    rh = read_hint(Hint(text="Avoid `eat <X>`", precondition="when the task says `slice <X>` and `fry <X>`", source_id="l"))
    assert rh is not None and rh.avoid and rh.conditions == ("slice <X>", "fry <X>")
    pattern = Pattern.parse("put <X> in <Y>")
    assert pattern is not None and pattern.match("put the red apple in fridge") == {"X": "red apple", "Y": "fridge"}
    assert Pattern.parse("<X>") is None


# --------------------------------------------------------------------------- learning


def test_terminal_failure_is_attributed_to_the_fatal_action_only(cooking: TextGameEnv, tmp_path: Path) -> None:
    actions = ["read cookbook", "open fridge", "take pork chop", "cook pork chop in oven"]  # the recipe says fry
    traj = _play(cooking, FRY_TRAIN, actions, run_id="fatal-1")
    assert traj.steps[-1].feedback.constraint_failure and traj.steps[2].feedback.reward > 0
    memory = LearningMemory.open(tmp_path / "m", namespace=("t", "fatal"))
    memory.general_update(traj)
    rules = {l.rule_text: l for l in memory.list_lessons() if l.applies_when is not None}
    avoids = [l for l in rules.values() if l.wrong]
    assert [l.wrong for l in avoids] == ["cook <X> in oven"] and avoids[0].applies_when == ["fry <X>"]
    prefers = {l.correct: l.applies_when for l in rules.values() if l.correct}
    # the step that scored and the step that made it possible: recommended, never blamed; and what the fatal step
    # did, in the game's words ("You roast the pork chop with the oven."): right where a task says roast
    assert sorted(prefers) == ["cook <X> in oven", "open fridge", "take <X>"]
    assert prefers["cook <X> in oven"] == ["roast <X>"]
    # no rewrite or stall lessons from a run whose actions were enumerated
    assert all(l.applies_when is not None for l in memory.list_lessons())
    memory.close()


def test_a_rule_learned_with_one_ingredient_steers_another(cooking: TextGameEnv, tmp_path: Path) -> None:
    memory = LearningMemory.open(tmp_path / "m", namespace=("t", "transfer"))
    lost = _play(cooking, ROAST_TRAIN, ["read cookbook", "take yellow potato", "cook yellow potato in stove"], "c1")
    won = _play(cooking, ROAST_TRAIN, ["read cookbook", "take yellow potato", "cook yellow potato in oven"], "c2")
    assert lost.steps[-1].feedback.constraint_failure and won.steps[-1].feedback.reward > 0
    memory.general_update(lost)
    memory.general_update(won)
    by_pattern = {(l.wrong, l.correct): l.applies_when for l in memory.list_lessons() if l.applies_when is not None}
    assert by_pattern[(None, "cook <X> in oven")] == ["chop <X>", "roast <X>"]
    assert by_pattern[("cook <X> in stove", None)] == ["chop <X>", "roast <X>"]
    # a second roast run without chopping narrows the condition to what all evidence shares
    won2 = _play(cooking, "train-20", ["read cookbook", "open fridge", "take orange bell pepper", "cook orange bell pepper in oven"], "c3")
    memory.general_update(won2)
    narrowed = {l.correct: l.applies_when for l in memory.list_lessons() if l.correct}
    assert narrowed["cook <X> in oven"] == ["roast <X>"]

    task = _task(cooking, ROAST_DEV)  # chicken wing: never seen in collection
    hints = [Hint.model_validate(h) for h in memory.general_retrieve(Trajectory(task=task, run_id="d1"))["hints"]]
    assert any("cook <X> in oven" in h.text for h in hints)
    decision = _cook_choice(cooking, ROAST_DEV, "chicken wing", hints)
    assert decision.action == "cook chicken wing in oven"
    _, fb = cooking.step(decision.action)
    assert fb.reward > 0 and not fb.constraint_failure
    memory.close()


SLICE_ROAST = "train-20"
"""Recipe: slice the orange bell pepper, roast the orange bell pepper (the knife lies in the kitchen)."""
WITH_KNIFE = ["read cookbook", "open cutlery drawer", "take knife", "open fridge", "take orange bell pepper"]
NO_KNIFE_LOST = ["read cookbook", "open fridge", "take orange bell pepper", "cook orange bell pepper in stove"]


def _live_avoidances(memory: LearningMemory, pattern: str) -> list[list[str] | None]:
    return [l.applies_when for l in live_text_rules(memory.list_lessons()) if l.wrong == pattern]


def test_a_command_an_earlier_run_was_offered_is_no_part_of_a_fatal_situation(cooking: TextGameEnv, tmp_path: Path) -> None:
    knife, lost = _play(cooking, SLICE_ROAST, WITH_KNIFE, "k1"), _play(cooking, SLICE_ROAST, NO_KNIFE_LOST, "k2")
    assert "slice" in offered_verbs(knife.steps) and "slice" not in offered_verbs(lost.steps, lost.task)
    assert lost.steps[-1].feedback.constraint_failure
    alone = LearningMemory.open(tmp_path / "alone", namespace=("t", "vocab"))
    alone.general_update(lost)  # one run that never held the knife: slicing might be what mattered
    assert _live_avoidances(alone, "cook <X> in stove") == [["roast <X>", "slice <X>"]]
    alone.close()
    memory = LearningMemory.open(tmp_path / "m", namespace=("t", "vocab"))
    memory.general_update(knife)  # slicing is a command of its own: the recipe's slice line is done by it
    memory.general_update(lost)
    assert _live_avoidances(memory, "cook <X> in stove") == [["roast <X>"]]
    memory.close()
    reopened = LearningMemory.open(tmp_path / "m", namespace=("t", "vocab"))
    assert "slice" in reopened.view.tool_extras(knife.task.tool, "textgames", "commands")  # the runs keep what they were offered
    reopened.close()


def test_a_stored_avoidance_is_read_again_once_a_later_run_offers_its_other_line_as_a_command(
        cooking: TextGameEnv, tmp_path: Path) -> None:
    memory = LearningMemory.open(tmp_path / "m", namespace=("t", "revise"))
    memory.general_update(_play(cooking, SLICE_ROAST, NO_KNIFE_LOST, "r1"))
    (old,) = [l for l in memory.list_lessons() if l.wrong == "cook <X> in stove"]
    memory.general_update(_play(cooking, SLICE_ROAST, WITH_KNIFE, "r2"))
    assert _live_avoidances(memory, "cook <X> in stove") == [["roast <X>"]]
    (new,) = [l for l in live_text_rules(memory.list_lessons()) if l.wrong == "cook <X> in stove"]
    assert old.id in new.supersedes and "r1" in new.provenance.run_ids  # the old rule's evidence moves with it
    memory.close()


WRONG_CUT = ["read cookbook", "open cutlery drawer", "take knife", "take yellow potato", "slice yellow potato"]
"""ROAST_TRAIN's recipe says chop the yellow potato: slicing it loses the game, and no line of it says slice."""


def test_a_command_an_earlier_recipe_directed_is_avoided_wherever_a_task_does_not_say_it(
        cooking: TextGameEnv, tmp_path: Path) -> None:
    wrong_cut = _play(cooking, ROAST_TRAIN, WRONG_CUT, "w1")
    assert wrong_cut.steps[-1].feedback.constraint_failure and "slice" not in directed_verbs(wrong_cut.task.goal, wrong_cut.steps)
    alone = LearningMemory.open(tmp_path / "alone", namespace=("t", "directed"))
    alone.general_update(wrong_cut)  # nothing says slicing is a directed command: the fatal situation is kept
    assert _live_avoidances(alone, "slice <X>") == [["roast <X>"]]
    alone.close()
    memory = LearningMemory.open(tmp_path / "m", namespace=("t", "directed"))
    sliced = _play(cooking, SLICE_ROAST, [*WITH_KNIFE, "slice orange bell pepper"], "s1")  # a recipe that says slice it
    assert "slice" in directed_verbs(sliced.task.goal, sliced.steps)
    memory.general_update(sliced)  # right where the recipe said it: avoided where a recipe does not, before any loss
    assert _live_avoidances(memory, "slice <X>") == [["!slice <X>"]]
    memory.general_update(wrong_cut)
    assert _live_avoidances(memory, "slice <X>") == [["!slice <X>"]]  # wherever the task does not say `slice <X>`
    memory.close()


FRY_IN = ["read cookbook", "open fridge", "take pork chop"]
"""FRY_TRAIN up to the cooking step: the pork chop held, the recipe read."""
SLICE_DEV = "dev-10000"
"""Recipe: slice the yellow bell pepper, prepare meal (nothing to cook)."""


def test_one_appliance_fatal_outside_its_condition_warns_against_its_siblings_outside_theirs(
        cooking: TextGameEnv, tmp_path: Path) -> None:
    roasted = _play(cooking, ROAST_TRAIN, ["read cookbook", "take yellow potato", "cook yellow potato in oven"], "w1")
    fried = _play(cooking, FRY_TRAIN, [*FRY_IN, "cook pork chop in stove"], "w2")
    oven_in_fry = _play(cooking, FRY_TRAIN, [*FRY_IN, "cook pork chop in oven"], "l1")
    assert roasted.steps[-1].feedback.reward > 0 and fried.steps[-1].feedback.reward > 0
    assert oven_in_fry.steps[-1].feedback.constraint_failure
    memory = LearningMemory.open(tmp_path / "m", namespace=("t", "kin"))
    memory.general_update(roasted)
    memory.general_update(fried)  # right where the task says roast, right where it says fry: nothing is avoided
    assert _live_avoidances(memory, "cook <X> in stove") == [] and _live_avoidances(memory, "cook <X> in oven") == []
    memory.general_update(oven_in_fry)  # the oven outside roasting: it and its sibling are avoided outside their lines
    assert [] in _live_avoidances(memory, "cook <X> in oven")
    assert _live_avoidances(memory, "cook <X> in stove") == [[]]

    hints = [Hint.model_validate(h) for h in memory.general_retrieve(Trajectory(task=_task(cooking, SLICE_DEV), run_id="d1"))["hints"]]
    assert any(h.text == "Avoid `cook <X> in stove`" for h in hints)
    for seed in range(3):  # nothing in this recipe is fried: the stove is not taken for the pepper
        traj = _play(cooking, SLICE_DEV, ["read cookbook", "open fridge", "take yellow bell pepper"], run_id=f"s{seed}")
        assert TextGameExecutor(seed=seed).act(traj.task, traj.steps, hints).action != "cook yellow bell pepper in stove"
    fry = [Hint.model_validate(h) for h in memory.general_retrieve(Trajectory(task=_task(cooking, FRY_TRAIN), run_id="d2"))["hints"]]
    assert _cook_choice(cooking, FRY_TRAIN, "pork chop", fry).action == "cook pork chop in stove"  # where it is right
    memory.close()


def _entered_and_took(move: str) -> dict[str, Lesson]:
    """The rules of a run that took ``move`` from the kitchen into the pantry, then scored taking the carrot there."""
    kitchen, pantry = ["move east", "teleport to pantry", "examine stove"], ["move west", "take carrot", "examine shelf"]
    task = TaskSpec(task_id="r", goal=ROOMS, tool="twx-cooking", context={"valid_actions": kitchen, "observation": "Kitchen."})
    steps = [
        Step(index=0, action="read cookbook", observation="Ingredients:\n  carrot\nDirections:\n  prepare meal",
             state_before={"location": "kitchen"}, state_after={"location": "kitchen"}, info={"valid_actions": kitchen}),
        Step(index=1, action=move, observation="You are in the pantry.", state_before={"location": "kitchen"},
             state_after={"location": "pantry"}, info={"valid_actions": pantry}),
        Step(index=2, action="take carrot", observation="You take the carrot.", feedback=Feedback(reward=1.0),
             state_before={"location": "pantry"}, state_after={"location": "pantry"}, info={"valid_actions": pantry}),
    ]
    return learn_text_rules(namespace=("ns",), run_id="r", task=task, steps=steps, existing={}, now=0.0)


def test_a_move_that_does_not_name_where_it_leads_is_no_recommendation() -> None:
    by_direction = {l.rule_text for l in _entered_and_took("move east").values()}
    by_name = {l.rule_text for l in _entered_and_took("teleport to pantry").values()}
    assert not any("move east" in t for t in by_direction)  # east of the kitchen is this game's map
    assert any(t.startswith("PREFER: take") for t in by_direction)  # what it did there is still taught
    assert "PREFER: teleport to pantry" in by_name  # the pantry is wherever it is offered


def test_text_rule_abstraction_is_general_over_the_task_text() -> None:
    lines = ["ingredients", "milk", "directions", "roast milk", "prepare meal"]
    assert abstract_action("cook milk in oven", lines, "cook a meal") == ("cook <X> in oven", {"X": "milk"})
    assert abstract_action("prepare meal", lines, "cook a meal") == ("prepare meal", {})  # goal words stay literal
    assert conditions_for({"X": "milk"}, lines, 4) == ["roast <X>"]  # the bare mention is no condition
    steps = [Step(index=0, action="cook milk in oven")]  # no valid_actions: not a text game
    assert learn_text_rules(namespace=("n",), run_id="r", task=TaskSpec(task_id="t", goal="g"), steps=steps, existing={}, now=0.0) == {}


def test_old_lesson_records_load_without_a_condition() -> None:
    old = Lesson.model_validate_json('{"id": "l", "namespace": ["n"], "rule_text": "WRONG: a -> CORRECT: b"}')
    assert old.applies_when is None


# --------------------------------------------------------------------------- bench env


def test_bench_env_runs_designs_and_prints_the_json_shape(cooking: TextGameEnv, capsys: pytest.CaptureFixture[str]) -> None:
    from langmem_plus.cli import main

    code = main(["bench", "env", "--env", "twx-cooking:easy", "--collect-seeds", "0-1", "--seeds", "0-1", "--fold", "dev",
                 "--repeats", "2", "--max-steps", "20", "--designs", "no_memory", "langmem_plus", "--json"])
    out = capsys.readouterr()
    assert code == 0 and "[env] langmem_plus repeat 2/2" in out.err
    result = json.loads(out.out)
    assert (result["env"], result["setting"], result["fold"], result["mode"]) == ("twx-cooking", "easy", "dev", "static")
    assert set(result["designs"]) == {"no_memory", "langmem_plus"} == set(result["curves"])
    for fig in result["designs"].values():
        for key in ("success", "success_se", "score", "steps", "fatal_failures", "repeated_fatal_failures", "invalid_actions",
                    "context_tokens_per_task", "guarded_proposals", "seconds"):
            assert key in fig
        assert 0 <= fig["repeated_fatal_failures"] <= fig["fatal_failures"]
        assert 0.0 <= fig["success"] <= 1.0 and fig["repeats"] == 2
    for curve in result["curves"].values():
        assert len(curve["cumulative_fatal_failures"]) == len(curve["success"]) == 4
        assert curve["cumulative_fatal_failures"] == sorted(curve["cumulative_fatal_failures"])
        repeated = curve["cumulative_repeated_fatal_failures"]
        assert repeated == sorted(repeated) and all(r <= f for r, f in zip(repeated, curve["cumulative_fatal_failures"]))
    assert result["designs"]["no_memory"]["context_tokens_per_task"] == 0
    assert result["designs"]["no_memory"]["guarded_proposals"] == 0  # no memory: nothing answers a proposal
    assert "undo" in result["rules"] and "guard" in result["rules"]  # the switchable rules in force, all by default
    assert main(["bench", "env", "--without", "undo,nosuch"]) == 2 and "nosuch" in capsys.readouterr().err


def test_bench_env_context_tokens_reach_the_langmem_plus_design() -> None:
    from langmem_plus.bench.env import make_design
    from langmem_plus.config import DEFAULT_CONFIG

    design = make_design("langmem_plus", 480)
    try:
        assert design.memory.config.context.max_context_tokens == 480  # type: ignore[attr-defined]
    finally:
        design.close()
    default = make_design("langmem_plus")
    try:
        assert default.memory.config.context.max_context_tokens == DEFAULT_CONFIG.context.max_context_tokens  # type: ignore[attr-defined]
    finally:
        default.close()


def test_what_a_fatal_command_did_teaches_where_it_is_right(cooking: TextGameEnv, tmp_path: Path) -> None:
    memory = LearningMemory.open(tmp_path / "m", namespace=("t", "effect"))
    lost = _play(cooking, ROAST_TRAIN, ["read cookbook", "take yellow potato", "cook yellow potato in stove"], "e1")
    assert lost.steps[-1].feedback.constraint_failure and "fry" in lost.steps[-1].observation.lower()
    memory.general_update(lost)  # the stove was never right anywhere; the game said it fried the potato
    rules = {(l.wrong, l.correct): l.applies_when for l in memory.list_lessons() if l.applies_when is not None}
    assert rules[("cook <X> in stove", None)] == ["chop <X>", "roast <X>"]
    assert rules[(None, "cook <X> in stove")] == ["fry <X>"]

    task = _task(cooking, FRY_TRAIN)  # fry the pork chop: never cooked, never seen
    hints = [Hint.model_validate(h) for h in memory.general_retrieve(Trajectory(task=task, run_id="e2"))["hints"]]
    decision = _cook_choice(cooking, FRY_TRAIN, "pork chop", hints)
    assert decision.action == "cook pork chop in stove"
    _, fb = cooking.step(decision.action)
    assert fb.reward > 0 and not fb.constraint_failure
    memory.close()


def test_an_effect_is_a_verb_the_game_says_of_a_phrase_of_the_action_that_no_command_names() -> None:
    commands = {"cook", "take", "open", "examine"}
    assert effect_of("cook green apple in stove", "You fry the green apple with the stove.", commands) == \
        ("cook <X> in stove", "fry <X>")
    assert effect_of("take green apple", "You take the green apple.", commands) is None  # an echo of the command
    assert effect_of("open fridge", "You open the fridge. It contains a green apple.", commands) is None
    assert effect_of("examine green apple", "It is a green apple.", commands) is None  # `is`: says nothing was done
    assert effect_of("cook green apple in stove", "The green apple is here.", commands) is None
    # a word of the action is part of its phrase, not what was done to it ("green" before "apple")
    assert effect_of("slice green apple", "You dice the green apple.", commands) == ("slice <X>", "dice <X>")
    assert effect_of("cook green apple in fry", "Fry green apple", commands) is None
    # a word right before the phrase later in the sentence is a modifier, not what was done ("the plain door")
    assert effect_of("close door to west", "You close the plain door to the pantry.", {"close"}) is None
    assert effect_of("cook green apple in stove", "Fried: green apple.", commands) == ("cook <X> in stove", "fried <X>")
    # bad input: empty, binary and replacement characters, a record's largest observation
    assert effect_of("", "", commands) is None and effect_of("cook apple", "\x00\ufffd apple", commands) is None
    huge = "the stove hums. " * 4000 + "You fry the green apple."
    assert effect_of("cook green apple in stove", huge, commands) == ("cook <X> in stove", "fry <X>")


def test_a_recipe_read_where_its_command_was_not_offered_still_makes_that_command_a_directed_one(
        cooking: TextGameEnv, tmp_path: Path) -> None:
    memory = LearningMemory.open(tmp_path / "m", namespace=("t", "directed-unoffered"))
    read_only = _play(cooking, SLICE_ROAST, ["read cookbook"], "r0")  # "slice the orange bell pepper"; no knife held
    assert "slice" not in {a.split()[0] for s in read_only.steps for a in s.info["valid_actions"]}
    memory.general_update(read_only)
    memory.general_update(_play(cooking, ROAST_TRAIN, WRONG_CUT, "w1"))  # a recipe that chops: slicing loses
    assert _live_avoidances(memory, "slice <X>") == [["!slice <X>"]]  # avoided wherever the task does not say it
    memory.close()


def test_commands_a_tool_first_offers_with_a_directed_one_are_its_kin_before_any_recipe_names_them(
        cooking: TextGameEnv, tmp_path: Path) -> None:
    memory = LearningMemory.open(tmp_path / "m", namespace=("t", "instrument"))
    # the pepper first, then the knife: taking it offers slice, chop and dice on the pepper at once
    actions = ["read cookbook", "open fridge", "take orange bell pepper", "open cutlery drawer", "take knife",
               "slice orange bell pepper"]
    sliced = _play(cooking, SLICE_ROAST, actions, "k1")
    assert sliced.steps[-1].feedback.reward > 0
    memory.general_update(sliced)  # no recipe ever said dice or chop
    assert _live_avoidances(memory, "dice <X>") == [["!dice <X>"]]
    assert _live_avoidances(memory, "chop <X>") == [["!chop <X>"]]
    assert _live_avoidances(memory, "eat <X>") == []  # offered on the pepper since it was taken: no kin of slicing
    memory.close()
    knife_first = LearningMemory.open(tmp_path / "k", namespace=("t", "instrument"))
    knife_first.general_update(_play(cooking, SLICE_ROAST, [*WITH_KNIFE, "slice orange bell pepper"], "k2"))
    assert _live_avoidances(knife_first, "dice <X>") == []  # taking the pepper offered eat and drop with them too
    knife_first.close()


def test_instrument_kin_are_commands_offered_first_with_a_directive_on_the_same_things() -> None:
    took = Step(index=0, action="take knife", info={"valid_actions": [
        "slice apple", "dice apple", "chop pear", "eat apple", "drop knife", "eat knife", "look"]})
    assert instrument_kin([took], ["eat apple", "look"], {"slice"}) == {"dice"}  # chop: another thing; eat: offered before
    assert instrument_kin([took], ["eat apple", "look"], set()) == set()  # no directive among them
    held = Step(index=0, action="take apple", info={"valid_actions": ["slice apple", "dice apple", "eat apple"]})
    assert instrument_kin([held], ["look"], {"slice"}) == set()  # all on the step's own object: holding it offered them
    assert instrument_kin([took], [], {"slice"}) == set()  # what was offered before the first step is unknown
