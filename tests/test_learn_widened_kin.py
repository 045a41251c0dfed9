"""``textgames.learners.widened_kin``: a command avoided everywhere but its exception widens its siblings too."""

from __future__ import annotations

from text_learning_cases import FATAL, RECIPE, SCORED, learned, rules


def test_the_oven_fatal_where_the_recipe_fries_widens_the_stove_known_right_only_where_it_fries() -> None:
    runs = [("a", RECIPE.format("roast"), "cook red apple in oven", SCORED, "x"),
            ("b", RECIPE.format("fry"), "cook red apple in stove", SCORED, "x"),
            ("c", RECIPE.format("fry"), "cook red apple in oven", FATAL, "x")]
    got = rules(learned(runs))
    assert {("AVOID", "cook <X> in oven", ()), ("AVOID", "cook <X> in stove", ())} <= got  # the reader lets the
    assert ("PREFER", "cook <X> in stove", ("fry <X>",)) in got  # more specific recommendation win
    assert ("AVOID", "cook <X> in stove", ()) not in rules(learned(runs, off={"widened_kin"}))
