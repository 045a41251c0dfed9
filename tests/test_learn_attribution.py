"""``textgames.learners.attribution``: a fatal step becomes an avoidance in its situation, a scoring one a recommendation."""

from __future__ import annotations

import pytest
from text_learning_cases import FATAL, RECIPE, SCORED, learned, rules

from langmem_plus.errors import InvalidArgument


def test_the_fatal_action_alone_becomes_an_avoidance_in_the_situation_the_recipe_gave_it() -> None:
    got = rules(learned([("a", RECIPE.format("roast"), "cook red apple in stove", FATAL, "You burn it.")]))
    assert got == {("AVOID", "cook <X> in stove", ("roast <X>",))}  # not the read before it; the apple abstracted


def test_a_recommendation_keeps_the_situation_every_run_that_taught_it_shares() -> None:
    both = "Ingredients:\n  red apple\n\nDirections:\n  slice the red apple\n  roast the red apple\n  prepare meal"
    runs = [("a", both, "cook red apple in oven", SCORED, "You roast it."),
            ("b", RECIPE.format("roast"), "cook red apple in oven", SCORED, "You roast it.")]
    assert ("PREFER", "cook <X> in oven", ("roast <X>",)) in rules(learned(runs))  # the slicing was not the reason


def test_it_cannot_be_switched_off_and_unknown_names_are_refused() -> None:
    with pytest.raises(InvalidArgument, match="unknown learning mechanism"):
        learned([("a", RECIPE.format("roast"), "cook red apple in stove", FATAL, "x")], off={"attribution"})
