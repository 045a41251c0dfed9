"""``textgames.learners.directed_kin``: a directive verb recommended where directed brings its kin with it."""

from __future__ import annotations

from text_learning_cases import FATAL, RECIPE, SCORED, learned, rules


def test_slice_is_recommended_where_directed_once_dice_is_and_slice_is_a_directive_verb() -> None:
    runs = [("a", RECIPE.format("dice"), "dice red apple", SCORED, "x"),
            ("b", RECIPE.format("slice"), "chop red apple", FATAL, "x")]
    assert ("PREFER", "slice <X>", ("slice <X>",)) in rules(learned(runs))
    assert ("PREFER", "slice <X>", ("slice <X>",)) not in rules(learned(runs, off={"directed_kin"}))
