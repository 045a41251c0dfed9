"""``textgames.learners.undirected``: a fatal directive verb the task did not direct is avoided wherever undirected."""

from __future__ import annotations

from text_learning_cases import FATAL, RECIPE, SCORED, learned, rules


def test_dicing_where_the_recipe_slices_is_avoided_wherever_the_task_does_not_say_dice() -> None:
    runs = [("a", RECIPE.format("dice"), "dice red apple", SCORED, "x"),  # dice is a directive verb
            ("b", RECIPE.format("slice"), "dice red apple", FATAL, "x")]
    assert ("AVOID", "dice <X>", ("!dice <X>",)) in rules(learned(runs))
    situated = rules(learned(runs, off={"undirected", "undirected_kin", "revision"}))  # (revision would rewrite it so)
    assert ("AVOID", "dice <X>", ("!dice <X>",)) not in situated  # without it: kept to where the recipe sliced
    assert any(kind == "AVOID" and pattern == "dice <X>" for kind, pattern, _ in situated)
