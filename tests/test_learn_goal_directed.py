"""``textgames.learners.goal_directed``: a command the goal directs, spent on the wrong thing, is avoided on anything."""

from __future__ import annotations

from text_learning_cases import fatal_in


def test_focusing_on_air_when_the_goal_says_focus_on_the_thermometer() -> None:
    goal, seen = "First, focus on the thermometer. Then measure.", "You see air and a thermometer."
    assert fatal_in(goal, seen, "focus on air") == {("AVOID", "focus on <X>", ("!focus on <X>",))}
    # without it, the next reading applies: air is a thing the task never named
    assert fatal_in(goal, seen, "focus on air", off={"goal_directed"}) == {("AVOID", "focus on <X>", ("!<X>",))}
