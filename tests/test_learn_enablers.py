"""``textgames.learners.enablers``: the step that first offered a directed command is recommended where it is
directed, though the run never used what it offered."""

from __future__ import annotations

from collections.abc import Collection

from text_learning_cases import COOKBOOK_GOAL, FATAL, PLAIN, rules

from langmem_plus.config import DEFAULT_CONFIG
from langmem_plus.records import Feedback, Step, TaskSpec
from langmem_plus.textgames.learn import learn_text_rules

RECIPE = "Ingredients:\n  red apple\n\nDirections:\n  slice the red apple\n  prepare meal"
OPENING = ["read cookbook", "take knife", "take red apple", "look"]


def run(plan: list[tuple[str, str, list[str], Feedback]], *, off: Collection[str] = ()) -> set[tuple[str, str, tuple[str, ...]]]:
    """What one run teaches: each step's action, observation, the actions it newly offers, and its feedback."""
    valid, steps = list(OPENING), []
    for i, (action, observation, new, feedback) in enumerate(plan):
        valid = [*valid, *new]
        steps.append(Step(index=i, action=action, observation=observation, info={"valid_actions": list(valid)}, feedback=feedback))
    task = TaskSpec(task_id="t", goal=COOKBOOK_GOAL, tool="game", context={"valid_actions": list(OPENING)})
    config = DEFAULT_CONFIG.replace(textgames={"text_learners_off": frozenset(off)})
    return rules(learn_text_rules(namespace=("ns",), run_id="r", task=task, steps=steps, existing={}, now=0.0, config=config))


PLAN = [("take red apple", "You take the red apple.", ["eat red apple"], PLAIN),
        ("read cookbook", RECIPE, [], PLAIN),
        ("take knife", "You take the knife.", ["slice red apple with knife"], PLAIN),  # offered, never used
        ("eat red apple", "You lost.", [], FATAL)]


def test_taking_the_knife_is_recommended_where_the_task_says_to_slice() -> None:
    assert ("PREFER", "take knife", ("slice",)) in run(PLAN)
    assert not any(kind == "PREFER" and pattern == "take knife" for kind, pattern, _ in run(PLAN, off={"enablers"}))


def test_a_step_on_the_tasks_own_thing_enables_nothing_of_its_own() -> None:
    plan = [("read cookbook", RECIPE, [], PLAIN),
            ("take knife", "You take the knife.", [], PLAIN),  # nothing held yet: the knife offers no cut
            ("take red apple", "You take the red apple.", ["slice red apple with knife"], PLAIN),  # its own object
            ("eat red apple", "You lost.", [], FATAL)]
    assert not any(kind == "PREFER" and pattern.startswith("take") for kind, pattern, _ in run(plan))
