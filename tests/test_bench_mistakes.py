"""Repeated mistakes in ``bench env`` (``bench.mistakes``): a lost game named in the task's own terms.

The pairs are real TextWorldExpress CookingWorld games (``twx-cooking:easy``), lost on
purpose; recipes were read by playing the seeds (train and dev folds only).
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from fixed_executor import Fixed
from langmem_plus.bench.designs.base import Context, run_episode
from langmem_plus.bench.mistakes import Episode, Mistake, mistake_signature, repeated_losses
from langmem_plus.envs.textgame import TextGameEnv
from langmem_plus.executors.base import Decision
from langmem_plus.records import Feedback, Hint, Step, TaskSpec

CHOP_ROAST = "train-18"
"""Recipe: chop the yellow potato, roast the yellow potato."""
ROAST = "dev-10001"
"""Recipe: roast the chicken wing."""
FRY = "train-10"
"""Recipe: fry the pork chop."""


def _lose(env: TextGameEnv, task_id: str, actions: Sequence[str], *, shown: bool = True) -> Episode:
    env.reset(task_id)
    task = TaskSpec(task_id=task_id, goal=env.goal, tool=env.name)
    traj = run_episode(env, Fixed(actions), task, Context(), run_id=task_id, max_steps=len(actions))
    assert traj.steps[-1].feedback.constraint_failure, f"{actions[-1]} did not lose {task_id}"
    return Episode(env.goal, traj.steps, shown)


def test_one_mistake_with_two_ingredients_is_repeated_and_another_situation_is_not(cooking: TextGameEnv) -> None:
    knife_first = _lose(cooking, CHOP_ROAST, ["read cookbook", "open cutlery drawer", "take knife", "take yellow potato", "cook yellow potato in stove"])
    chicken = _lose(cooking, ROAST, ["read cookbook", "open fridge", "take chicken wing", "cook chicken wing in stove"])
    fried_in_oven = _lose(cooking, FRY, ["read cookbook", "open fridge", "take pork chop", "cook pork chop in oven"])
    assert mistake_signature(chicken.goal, chicken.steps) == Mistake("cook <X> in stove", ("roast <X>",))
    assert mistake_signature(fried_in_oven.goal, fried_in_oven.steps) == Mistake("cook <X> in oven", ("fry <X>",))
    assert repeated_losses([knife_first, chicken, fried_in_oven]) == [False, True, False]


def test_a_directive_another_command_carries_out_is_no_part_of_the_situation(cooking: TextGameEnv) -> None:
    no_knife = _lose(cooking, CHOP_ROAST, ["read cookbook", "take yellow potato", "cook yellow potato in stove"])
    chicken = _lose(cooking, ROAST, ["read cookbook", "open fridge", "take chicken wing", "cook chicken wing in stove"])
    # alone, the run never offered `chop`, so its own reading keeps the recipe's chop line
    assert mistake_signature(no_knife.goal, no_knife.steps) == Mistake("cook <X> in stove", ("chop <X>", "roast <X>"))
    assert repeated_losses([no_knife, chicken]) == [False, False]
    # once an episode of the sequence offered `chop`, the earlier loss reads as the same mistake; never before it
    knife = _lose(cooking, CHOP_ROAST, ["read cookbook", "open cutlery drawer", "take knife", "take yellow potato", "cook yellow potato in stove"])
    assert repeated_losses([no_knife, knife, chicken]) == [False, True, True]
    assert repeated_losses([no_knife, chicken, knife]) == [False, False, True]


def _lost(action: str, line: str) -> list[Step]:
    return [Step(index=0, action="read recipe", observation=line, info={"valid_actions": [action]}),
            Step(index=1, action=action, info={"valid_actions": []}, feedback=Feedback(constraint_failure=True, error_text="lost"))]


def test_what_memory_was_not_shown_does_not_change_how_losses_read(cooking: TextGameEnv) -> None:
    no_knife = _lose(cooking, CHOP_ROAST, ["read cookbook", "take yellow potato", "cook yellow potato in stove"])
    chicken = _lose(cooking, ROAST, ["read cookbook", "open fridge", "take chicken wing", "cook chicken wing in stove"])
    knife = _lose(cooking, CHOP_ROAST, ["read cookbook", "open cutlery drawer", "take knife", "take yellow potato",
                                        "cook yellow potato in stove"], shown=False)  # a static deployment game offered `chop`
    assert repeated_losses([no_knife, knife, chicken]) == [False, True, False]


def test_only_losses_memory_was_shown_make_later_ones_repeats() -> None:
    goal = "Read the recipe."
    first, again = _lost("bake red apple", "grill the red apple"), _lost("bake milk", "grill the milk")
    won = [Step(index=0, action="read recipe", observation="grill the milk", info={"valid_actions": ["x"]})]
    static = [Episode(goal, first, shown=False), Episode(goal, again, shown=False)]  # deployment, memory frozen
    assert repeated_losses(static) == [False, False]
    dynamic = [Episode(goal, first, shown=True), Episode(goal, won, shown=True), Episode(goal, again, shown=True)]
    assert repeated_losses(dynamic) == [False, False, True]
    assert mistake_signature(goal, won) is None and repeated_losses([]) == []


def _recipe_loss(action: str, *lines: str, valid: Sequence[str] = ()) -> list[Step]:
    return [Step(index=0, action="read recipe", observation="\n".join(lines), info={"valid_actions": list(valid) or [action]}),
            Step(index=1, action=action, info={"valid_actions": []}, feedback=Feedback(constraint_failure=True, error_text="lost"))]


def test_the_signature_follows_the_learning_for_directed_commands_and_bare_situations() -> None:
    goal = "Read the recipe."
    cut = ["chop carrot", "dice carrot", "slice carrot"]
    won = [Step(index=0, action="read recipe", observation="chop the carrot", info={"valid_actions": cut})]
    # a command some recipe directs (chop), spent where the recipe does not say it: one mistake, whatever else it says
    a = _recipe_loss("chop red apple", "dice the red apple", "roast the red apple", valid=cut)
    b = _recipe_loss("chop milk", "slice the milk", "fry the milk", valid=cut)
    assert mistake_signature(goal, a, directives={"chop", "dice", "slice"}) == Mistake("chop <X>", ("!chop <X>",))
    assert repeated_losses([Episode(goal, won, True), Episode(goal, a, True), Episode(goal, b, True)]) == [False, False, True]
    # a thing the recipe only lists, cooked in any appliance: the verb and the thing (``unasked_head``)
    toaster = _recipe_loss("cook red apple in toaster", "red apple", "prepare meal")
    oven = _recipe_loss("cook milk in oven", "milk", "prepare meal")
    assert mistake_signature(goal, oven) == Mistake("cook <X>", ("<X>",))
    assert repeated_losses([Episode(goal, toaster, True), Episode(goal, oven, True)]) == [False, True]


class Glutton:
    """Takes what it can and eats what it took: the same mistake in every game."""

    def act(self, task: TaskSpec, history: Sequence[Step], hints: Sequence[Hint]) -> Decision:
        valid = list(history[-1].info.get("valid_actions") or []) if history else list(task.context.get("valid_actions") or [])
        done = {s.action for s in history}
        for verb in ("eat", "take", "open"):
            for action in sorted(valid):
                if action.startswith(f"{verb} ") and action not in done and action != "eat meal" and "cookbook" not in action:
                    return Decision(kind="command", action=action)
        return Decision(kind="done")


def test_bench_env_counts_the_same_mistake_made_again(cooking: TextGameEnv) -> None:
    from langmem_plus.bench.env import run_env_bench

    result = run_env_bench(env_name="twx-cooking:easy", collect="0-2", seeds="0-2", fold="dev", repeats=1, max_steps=15,
                           designs=("no_memory",), executor_factory=lambda seed: Glutton())
    fig, curve = result["designs"]["no_memory"], result["curves"]["no_memory"]
    lost = curve["cumulative_fatal_failures"]
    assert fig["collection_fatal_failures"] >= 1 and fig["fatal_failures"] >= 1  # it does lose by eating
    # one mistake throughout: every loss after the first shown one repeats it, in collection and deployment
    assert fig["collection_repeated_fatal_failures"] == fig["collection_fatal_failures"] - 1
    assert fig["repeated_fatal_failures"] == fig["fatal_failures"]
    assert curve["cumulative_repeated_fatal_failures"][-1] == pytest.approx(lost[-1] - 1)
