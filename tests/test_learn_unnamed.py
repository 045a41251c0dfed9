"""``textgames.learners.unnamed``: an action on something the task never named is avoided for anything unnamed."""

from __future__ import annotations

from text_learning_cases import fatal_in


def test_focusing_on_a_door_the_task_never_named() -> None:
    goal, seen = "Find a living thing.", "In it, you see:\n  a door to the hallway"
    assert fatal_in(goal, seen, "focus on door to hallway") == {("AVOID", "focus on <X>", ("!<X>",))}
    assert fatal_in(goal, seen, "focus on door to hallway", off={"unnamed"}) == set()  # a literal rule of one task
