"""``textgames.delivery_rules.elimination``: a conditional family's avoided sibling where nothing unanswered is asked."""

from __future__ import annotations

from collections.abc import Sequence

from listing import listing
from text_rule_cases import (
    allowed,
    rule,
    taken,
    task,
)

from langmem_plus.records import (
    Lesson,
)


def test_a_sibling_never_seen_right_is_avoided_on_a_thing_the_task_asks_nothing_unanswered_of() -> None:
    siblings = [rule("oven", correct="cook <X> in oven", when=["roast <X>"]),
                rule("stove", correct="cook <X> in stove", when=["fry <X>"]),
                rule("dice", correct="dice <X>", when=["dice <X>"])]
    toaster = rule("toaster", wrong="cook <X> in toaster", when=["fry <X>"])  # fatal once, where the recipe fried
    valid = ["cook red apple in toaster", "look"]  # the dicing done, no oven here: no recommendation waits

    def avoided(directions: str, rules: Sequence[Lesson]) -> bool:
        recipe = f"Ingredients:\n  red apple\nDirections:\n  {directions}\n  prepare meal"
        hints = listing(rules, runs=[])(task(valid), taken(valid, "look", recipe))
        return "Avoid `cook red apple in toaster`" in {h.text for h in hints} and not allowed(hints, "cook red apple in toaster", recipe)

    assert avoided("dice the red apple", [*siblings, toaster])  # dicing is answered by `dice`: nothing left to cook
    assert avoided("roast the red apple", [*siblings, toaster])  # roasting is the oven's line
    assert not avoided("grill the red apple", [*siblings, toaster])  # a line no known command answers: maybe the toaster's
    anywhere = rule("oven-any", correct="cook <X> in oven")  # cooking right with no line: no sibling to eliminate by
    assert not avoided("dice the red apple", [anywhere, siblings[2], toaster])
    seen_right = rule("toaster-right", correct="cook <X> in toaster", when=["grill <X>"])
    # right somewhere, so elimination does not apply; but right only where the task says `grill <X>`, it is not asked
    # here, and unknown_kin avoids it as it would an unknown sibling
    assert avoided("dice the red apple", [*siblings, toaster, seen_right])
    assert not avoided("grill the red apple", [*siblings, toaster, seen_right])


def test_switched_off_by_name_the_sibling_is_left_to_the_reader() -> None:
    from langmem_plus.config import DEFAULT_CONFIG

    rules = [rule("oven", correct="cook <X> in oven", when=["roast <X>"]), rule("dice", correct="dice <X>", when=["dice <X>"]),
             rule("stove", correct="cook <X> in stove", when=["fry <X>"]),
             rule("toaster", wrong="cook <X> in toaster", when=["fry <X>"])]
    valid = ["cook red apple in toaster", "look"]
    recipe = "Ingredients:\n  red apple\nDirections:\n  dice the red apple\n  prepare meal"

    def texts(off: frozenset[str]) -> set[str]:
        config = DEFAULT_CONFIG.replace(textgames={"text_rules_off": off})
        return {h.text for h in listing(rules, runs=[], config=config)(task(valid), taken(valid, "look", recipe))}

    assert "Avoid `cook red apple in toaster`" in texts(frozenset())
    assert "Avoid `cook red apple in toaster`" in texts(frozenset({"elimination"}))  # unknown_kin still stands on it
    assert "Avoid `cook red apple in toaster`" not in texts(frozenset({"elimination", "unknown_kin"}))
