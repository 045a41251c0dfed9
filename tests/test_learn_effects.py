"""``textgames.learners.effects``: what the game says a command did recommends it where the task says that line."""

from __future__ import annotations

from text_learning_cases import PLAIN, RECIPE, learned, rules


def test_the_game_saying_it_fried_the_thing_recommends_the_stove_where_the_recipe_fries() -> None:
    runs = [("a", RECIPE.format("fry"), "cook red apple in stove", PLAIN, "You fry the red apple with the stove.")]
    assert ("PREFER", "cook <X> in stove", ("fry <X>",)) in rules(learned(runs))
    assert not any(kind == "PREFER" for kind, _, _ in rules(learned(runs, off={"effects"})))
