"""``textgames.learners.undirected_kin``: a directive verb avoided where undirected brings its kin with it."""

from __future__ import annotations

from text_learning_cases import FATAL, RECIPE, SCORED, learned, rules


def test_chop_never_failed_but_is_avoided_where_undirected_once_dice_is() -> None:
    runs = [("a", RECIPE.format("dice"), "dice red apple", SCORED, "x"),
            ("b", RECIPE.format("slice"), "chop red apple", FATAL, "x")]
    assert ("AVOID", "dice <X>", ("!dice <X>",)) in rules(learned(runs))
    assert ("AVOID", "dice <X>", ("!dice <X>",)) not in rules(learned(runs, off={"undirected_kin"}))
