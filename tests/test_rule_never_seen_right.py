"""``textgames.delivery_rules.never_seen_right``: an avoidance of a command never seen right holds beyond its situation."""

from __future__ import annotations

from listing import listing
from text_rule_cases import (
    FRY,
    allowed,
    rule,
    taken,
    task,
    with_extras,
)

from langmem_plus.records import (
    RunRecord,
)


def test_an_avoidance_of_a_command_never_seen_right_holds_beyond_the_situation_it_was_learned_in() -> None:
    """never_seen_right: ``eat <X>`` was fatal when the task said ``roast <X>``; nothing ever recommended eating anything and no
    task directs it, so it holds where the recipe fries the thing instead; a command memory knows to be right
    somewhere (``cook <X> in oven`` when roasting) keeps its avoidance to the situation it killed in."""
    eat = rule("eat", wrong="eat <X>", when=["roast <X>"])
    stove = rule("stove", wrong="cook <X> in stove", when=["roast <X>"])
    oven = rule("oven", correct="cook <X> in oven", when=["roast <X>"])
    offered = ["eat red apple", "cook red apple in stove", "eat meal", "look"]
    hints = listing([eat, stove, oven], runs=[])(task([]), taken(offered, "look", FRY))
    # holding anywhere, it states no line the task must say: shown once as its pattern, and the reader binds it as the
    # rule does (what something names, never the goal's own words: the meal stays edible)
    assert {h.text for h in hints} == {"Avoid `eat <X>`"}
    assert not allowed(hints, "eat red apple", FRY) and allowed(hints, "eat meal", FRY)
    # once memory recommends the command over a placeholder somewhere, its avoidance keeps its situation again
    eat_right = rule("eat-right", correct="eat <X>", when=["dessert <X>"])
    assert listing([eat, eat_right], runs=[])(task([]), taken(offered, "look", FRY)) == []
    # so does a command a task's text directs: a rule's condition line starts with it, or a run's text directed it
    assert all(h.text != "Avoid `eat red apple`" for h in
               listing([eat, rule("eat-line", wrong="look", when=["eat <X>"])], runs=[])(task([]), taken(offered, "look", FRY)))
    directed = RunRecord(run_id="r1", namespace=("ns",), seq=1, task_id="t1", tool="game",
                         extras={"textgames": {"directed": ["eat"], "commands": ["eat"]}})
    assert listing([eat], runs=[directed])(task([]), taken(offered, "look", FRY)) == []
    # a line's first word that no run was offered as a command is no command a text directed
    worded = with_extras(directed, commands=["look"])
    assert {h.text for h in listing([eat], runs=[worded])(task([]), taken(offered, "look", FRY))} == {"Avoid `eat <X>`"}
    # and in its own situation it holds as before
    assert {h.text for h in listing([eat], runs=[directed])(task([]), taken(offered, "look"))} == {"Avoid `eat red apple`"}


def test_an_avoidance_learned_on_a_listed_only_thing_holds_where_the_task_says_more_of_it_once_the_command_uses_things_up() -> None:
    """never_seen_right on a bare placeholder: ``eat <X>`` was fatal on a thing the recipe listed and said nothing more of. Once
    a run saw eating use its object up, what the task says of a thing does not matter: eating never seen right, it
    holds on a thing the recipe fries, grounded on the action; once the command is right somewhere, it is narrowed again."""
    eat = rule("eat", wrong="eat <X>", when=["<X>"])
    offered = ["eat red apple", "eat meal", "look"]
    ate = RunRecord(run_id="r1", namespace=("ns",), seq=1, task_id="t1", tool="game", extras={"textgames": {"consumed": ["eat"]}})
    assert listing([eat], runs=[])(task([]), taken(offered, "look", FRY)) == []  # nothing seen used up: listed only
    hints = listing([eat], runs=[ate])(task([]), taken(offered, "look", FRY))
    assert {h.text for h in hints} == {"Avoid `eat red apple`"}  # not the meal: the goal's own word
    assert not allowed(hints, "eat red apple", FRY) and allowed(hints, "eat meal", FRY)
    eat_right = rule("eat-right", correct="eat <X>", when=["dessert <X>"])
    assert listing([eat, eat_right], runs=[ate])(task([]), taken(offered, "look", FRY)) == []  # right somewhere
    listed = "Ingredients:\n  red apple\nDirections:\n  prepare meal"
    assert {h.text for h in listing([eat, eat_right], runs=[ate])(task([]), taken(offered, "look", listed))} == \
        {"Avoid `eat red apple`"}  # and in its own situation it holds as before
    # a cut pattern's placeholder binds what follows the thing (``red apple in oven``): it holds on the thing named
    cook = rule("cook", wrong="cook <X>", when=["<X>"])
    cooks = ["cook red apple in oven", "look"]
    used = with_extras(ate, consumed=["cook"])
    assert {h.text for h in listing([cook], runs=[used])(task([]), taken(cooks, "look", FRY))} == {"Avoid `cook red apple in oven`"}
    assert listing([cook], runs=[ate])(task([]), taken(cooks, "look", FRY)) == []  # cooking uses nothing up


def test_switched_off_by_name_an_avoidance_keeps_its_situation() -> None:
    from langmem_plus.config import DEFAULT_CONFIG

    eat = rule("eat", wrong="eat <X>", when=["roast <X>"])
    offered = ["eat red apple", "eat meal", "look"]
    off = DEFAULT_CONFIG.replace(textgames={"text_rules_off": frozenset({"never_seen_right"})})
    assert {h.text for h in listing([eat], runs=[])(task([]), taken(offered, "look", FRY))} == {"Avoid `eat <X>`"}
    assert listing([eat], runs=[], config=off)(task([]), taken(offered, "look", FRY)) == []  # where it said roast only
    assert {h.text for h in listing([eat], runs=[], config=off)(task([]), taken(offered, "look"))} == {"Avoid `eat red apple`"}
