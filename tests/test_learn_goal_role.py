"""``textgames.learners.goal_role``: an action on a thing the goal names is avoided for the next goal's thing in that role."""

from __future__ import annotations

from text_learning_cases import fatal_in


def test_focusing_on_the_room_the_wire_is_located_around() -> None:
    goal, seen = "Measure the wire, located around the living room.", "You see the living room."
    assert fatal_in(goal, seen, "focus on living room") == {("AVOID", "focus on <X>", ("located around <X>",))}
    assert fatal_in(goal, seen, "focus on living room", off={"goal_role"}) == set()
