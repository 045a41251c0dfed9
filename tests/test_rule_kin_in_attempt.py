"""``textgames.delivery_rules.kin_in_attempt``: the attempt's directive verbs and their kin avoided where undirected."""

from __future__ import annotations

from listing import listing
from text_rule_cases import (
    CUTS,
    HOLDING,
    allowed,
    knife_taken,
    rule,
    task,
    with_extras,
)

from langmem_plus.records import (
    RunRecord,
    Step,
)
from langmem_plus.textgames.delivery_rules.kin_in_attempt import object_phrase
from langmem_plus.textgames.delivery_rules.unknown_kin import KIN_PREFIX
from langmem_plus.textgames.direct import offered_on_own


def test_a_command_the_attempt_offers_with_one_avoided_where_undirected_is_avoided_where_undirected_too() -> None:
    slice_ = rule("slice", wrong="slice <X>", when=["!slice <X>"], runs=("r0", "r1"))
    recipe = "Ingredients:\n  red apple\n  milk\nDirections:\n  slice the red apple\n  prepare meal"
    holding, cuts, steps = HOLDING, CUTS, knife_taken(recipe)
    deliver = listing([slice_], runs=[])
    from_start = [*holding, *cuts]  # the cuts offered from the start: no step offered dice together with slice
    first = [Step(index=0, action="read cookbook", observation=recipe, info={"valid_actions": from_start})]
    assert not any("dice" in h.text for h in listing([slice_], runs=[])(task(from_start), first))
    hints = deliver(task(holding), steps)
    shown = {(h.text, h.precondition) for h in hints}
    assert ("Avoid `dice <X>`", "unless the task says so") in shown  # offered with slice, on the same things
    assert ("Avoid `chop <X>`", "unless the task says so") in shown
    assert not any(lid.startswith(KIN_PREFIX) for lid in deliver.delivered)  # an inference: nothing to activate
    assert [a for a in cuts if allowed(hints, a, recipe)] == ["slice red apple"]  # the one cut the recipe says
    known = rule("dice-ok", correct="dice <X>", when=["dice <X>"])
    assert not any("dice" in h.text for h in listing([slice_, known], runs=[])(task(holding), steps))  # memory knows dice
    stepwise = listing([slice_], runs=[])  # called step by step, it reads each step once: the same verdicts
    stepwise(task(holding), steps[:1])
    assert stepwise(task(holding), steps) == hints
    assert not any("dice" in h.text for h in stepwise(task(from_start), first))  # another attempt is read afresh


def test_the_attempts_own_directive_verbs_are_avoided_where_undirected_once_memory_knows_an_undirected_command_fatal() -> None:
    fry_stove = rule("fry-stove", correct="cook <X> in stove", when=["fry <X>"])
    widened = rule("stove-widened", wrong="cook <X> in stove")  # right where the task says fry, fatal elsewhere
    recipe = "Ingredients:\n  red apple\n  milk\nDirections:\n  dice the red apple\n  fry the red apple\n  prepare meal"
    holding, cuts, steps = HOLDING, CUTS, knife_taken(recipe)
    hints = listing([fry_stove, widened], runs=[])(task(holding), steps)
    shown = {(h.text, h.precondition) for h in hints}
    assert ("Avoid `dice <X>`", "unless the task says so") in shown  # a line of the recipe opens with it
    assert ("Avoid `slice <X>`", "unless the task says so") in shown  # offered with dice
    assert [a for a in cuts if allowed(hints, a, recipe)] == ["dice red apple"]  # the one cut the recipe says
    unproven = listing([fry_stove], runs=[])(task(holding), steps)  # nothing fatal known: no inference
    assert not any(h.text.startswith("Avoid") for h in unproven)
    assert len([a for a in cuts if allowed(unproven, a, recipe)]) == len(cuts)
    in_its_place = rule("stove-roast", wrong="cook <X> in stove", when=["roast <X>"])  # fatal where roast, not fry
    assert ("Avoid `chop <X>`", "unless the task says so") in {
        (h.text, h.precondition) for h in listing([fry_stove, in_its_place], runs=[])(task(holding), steps)}
    where_directed = rule("stove-fry", wrong="cook <X> in stove", when=["fry <X>"])  # fatal only where directed
    assert not any("dice" in h.text for h in listing([fry_stove, where_directed], runs=[])(task(holding), steps))
    stepwise = listing([fry_stove, widened], runs=[])  # step by step: the same verdicts
    stepwise(task(holding), steps[:1])
    assert stepwise(task(holding), steps) == hints


def test_the_attempts_own_directive_verbs_need_an_instrument_a_thing_named_alone_and_a_line_opening_with_them() -> None:
    evidence = [rule("fry-stove", correct="cook <X> in stove", when=["fry <X>"]), rule("stove-widened", wrong="cook <X> in stove")]
    recipe = "Ingredients:\n  red apple\nDirections:\n  dice the red apple\n  prepare meal"
    holding = ["eat red apple", "drop red apple", "take knife", "look"]
    cuts = [f"{v} red apple with knife" for v in ("slice", "dice", "chop")]  # no line says a cut whole
    steps = [Step(index=0, action="read cookbook", observation=recipe, info={"valid_actions": holding}),
             Step(index=1, action="take knife", observation="You take the knife.", info={"valid_actions": [*holding[:2], *cuts, "look"]})]
    hints = listing(evidence, runs=[])(task(holding), steps)
    assert not any(h.source_id.startswith(KIN_PREFIX) for h in hints)
    assert allowed(hints, "dice red apple with knife", recipe)  # the directed cut stays open
    plain = [f"{v} red apple" for v in ("slice", "dice", "chop")]
    roasted = "Ingredients:\n  red apple\nDirections:\n  roast the red apple\n  prepare meal"  # no line opens with a cut
    knife = [Step(index=0, action="read cookbook", observation=roasted, info={"valid_actions": holding}),
             Step(index=1, action="take knife", observation="You take the knife.", info={"valid_actions": [*holding[:2], *plain, "look"]})]
    assert not any(h.source_id.startswith(KIN_PREFIX) for h in listing(evidence, runs=[])(task(holding), knife))
    note = "Take the key from the drawer.\nOpen the chest."  # a step offers `open` alone: no instrument's command
    valid = ["open drawer", "open chest", "look"]
    lit = [Step(index=0, action="read cookbook", observation=note, info={"valid_actions": ["light lamp", "look"]}),
           Step(index=1, action="light lamp", observation="You can see now.", info={"valid_actions": valid})]
    hints = listing(evidence, runs=[])(task(["light lamp", "look"]), lit)
    assert not any(h.text.startswith("Avoid `open") for h in hints) and allowed(hints, "open drawer", note)


def test_the_tools_directive_verbs_offered_as_an_instrument_are_avoided_where_a_recipe_that_cuts_nothing_or_is_unread_does_not_say_them() -> None:
    evidence = [rule("fry-stove", correct="cook <X> in stove", when=["fry <X>"]), rule("stove-widened", wrong="cook <X> in stove")]
    cut_before = RunRecord(run_id="r", namespace=("ns",), seq=1, task_id="t", tool="game", passed=True,
                           extras={"textgames": {"directed": ["dice", "prepare"],
                                                 "commands": ["dice", "slice", "prepare", "take"]}})
    roasted = "Ingredients:\n  red apple\n  milk\nDirections:\n  roast the red apple\n  prepare meal"  # no line opens with a cut
    steps = knife_taken(roasted)
    hints = listing(evidence, runs=[cut_before])(task(HOLDING), steps)
    assert ("Avoid `dice <X>`", "unless the task says so") in {(h.text, h.precondition) for h in hints}
    assert not [a for a in CUTS if allowed(hints, a, roasted)]  # the recipe cuts nothing
    assert not any(h.source_id.startswith(KIN_PREFIX) for h in listing(evidence, runs=[])(task(HOLDING), steps))
    never_directed = with_extras(cut_before, directed=["prepare"])  # the tool's texts never opened with a cut
    assert not any(h.source_id.startswith(KIN_PREFIX) for h in listing(evidence, runs=[never_directed])(task(HOLDING), steps))
    unread = [Step(index=0, action="look", observation="A kitchen.", info={"valid_actions": HOLDING}), steps[1]]
    blind = listing(evidence, runs=[cut_before])(task(HOLDING), unread)  # the recipe not read yet: no cut is asked for
    assert not [a for a in CUTS if allowed(blind, a, "A kitchen.")]
    with_knife = [f"{v} red apple with knife" for v in ("slice", "dice", "chop")]  # every cut runs on past the thing
    runs_on = [unread[0], Step(index=1, action="take knife", observation="You take the knife.",
                               info={"valid_actions": [*HOLDING[:4], *with_knife, "look"]})]
    assert not any(h.source_id.startswith(KIN_PREFIX) for h in listing(evidence, runs=[cut_before])(task(HOLDING), runs_on))
    put = ["put red apple in counter", "put milk in counter", "take knife", "look"]  # `put` alone says they are things
    put_knife = [Step(index=0, action="look", observation="A kitchen.", info={"valid_actions": put}),
                 Step(index=1, action="take knife", observation="You take the knife.",  # `put knife` first offered too:
                      info={"valid_actions": [*put[:2], *CUTS, "put knife in counter", "look"]})]  # not the cuts' group
    assert not [a for a in CUTS if allowed(listing(evidence, runs=[cut_before])(task(put), put_knife), a, "A kitchen.")]


def test_kin_read_on_a_steps_own_object_are_avoided_only_where_a_directive_is_offered_so_the_meal_is_still_eaten() -> None:
    evidence = [rule("fry-stove", correct="cook <X> in stove", when=["fry <X>"]), rule("stove-widened", wrong="cook <X> in stove")]
    recipe = "Ingredients:\n  red apple\nDirections:\n  slice the red apple\n  roast the red apple\n  prepare meal"
    apple = ["eat red apple", "put red apple in counter", "cook red apple in oven"]
    cuts = ["slice red apple", "dice red apple", "chop red apple"]
    rest = ["read cookbook", "put knife in counter", "look"]

    def at(i: int, action: str, *valid: str, seen: str = "Done.") -> Step:
        return Step(index=i, action=action, observation=seen, info={"valid_actions": [*rest, *valid]})

    start = ["take knife", "take red apple", *rest]
    steps = [at(0, "read cookbook", "take knife", "take red apple", seen=recipe), at(1, "take knife", "take red apple"),
             at(2, "take red apple", *apple, *cuts)]  # the knife first: `eat` is first offered with the cuts, on the apple
    deliver = listing(evidence, runs=[])
    held = deliver(task(start), steps)
    assert not allowed(held, "eat red apple", recipe) and not allowed(held, "dice red apple", recipe)
    assert allowed(held, "slice red apple", recipe)  # the recipe's own cut
    steps += [at(3, "slice red apple", *apple), at(4, "cook red apple in oven", "prepare meal"), at(5, "prepare meal", "eat meal")]
    assert allowed(deliver(task(start), steps), "eat meal", recipe)  # nothing cuts the meal: `eat` is no directive's kin there
    both = [*steps[:3], at(3, "cook red apple in oven", "eat meal", *apple, *cuts)]  # the meal beside an apple to cut
    hints = deliver(task(start), both)
    assert not allowed(hints, "eat red apple", recipe) and allowed(hints, "eat meal", recipe)  # the line names the apple


def test_an_object_phrase_is_the_object_of_a_command_outside_the_group() -> None:
    valid = ["slice red apple", "dice red apple", "put red apple in fridge", "slice red apple with knife", "look"]
    assert object_phrase("red apple", {"slice", "dice"}, valid)  # `put red apple in fridge` takes it
    assert not object_phrase("red apple", {"slice", "dice", "put"}, valid)  # only the group's commands do
    assert not object_phrase("red apple with knife", {"slice", "dice"}, valid)
    assert not object_phrase("red", {"slice", "dice"}, ["put redder apple in fridge"])  # whole words only


def test_commands_a_step_first_offers_on_its_own_object_count_against_an_earlier_step_of_the_same_command() -> None:
    def took(thing: str, *offered: str) -> Step:
        return Step(index=0, action=f"take {thing}", info={"valid_actions": ["look", *offered]})

    cuts_and_eat = ("eat apple", "slice apple", "dice apple")
    assert offered_on_own([took("knife"), took("apple", *cuts_and_eat)], ["look"], {}) == [
        {"dice": frozenset({"apple"}), "eat": frozenset({"apple"}), "slice": frozenset({"apple"})}]
    after_salt = offered_on_own([took("salt", "eat salt"), took("knife", "eat salt"), took("apple", "eat salt", *cuts_and_eat)],
                                ["look"], {})
    assert after_salt == [{"dice": frozenset({"apple"}), "slice": frozenset({"apple"})}]  # eat: what any take offers
    assert offered_on_own([took("apple", *cuts_and_eat)], ["look"], {}) == []  # no earlier take to compare with
    assert offered_on_own([took("knife"), took("apple", *cuts_and_eat)], [], {}) == []  # the first step's offers unknown
    seen: dict[str, set[str]] = {}  # read step by step, the state carries the comparison
    assert offered_on_own([took("knife")], ["look"], seen) == []
    assert offered_on_own([took("apple", *cuts_and_eat)], ["look"], seen) == [
        {"dice": frozenset({"apple"}), "eat": frozenset({"apple"}), "slice": frozenset({"apple"})}]


def test_switched_off_by_name_the_attempts_kin_are_not_avoided() -> None:
    from langmem_plus.config import DEFAULT_CONFIG

    slice_ = rule("slice", wrong="slice <X>", when=["!slice <X>"], runs=("r0", "r1"))
    recipe = "Ingredients:\n  red apple\n  milk\nDirections:\n  slice the red apple\n  prepare meal"
    off = DEFAULT_CONFIG.replace(textgames={"text_rules_off": frozenset({"kin_in_attempt"})})
    hints = listing([slice_], runs=[], config=off)(task(HOLDING), knife_taken(recipe))
    assert not any("dice" in h.text or "chop" in h.text for h in hints)
    assert any("slice" in h.text for h in hints)  # the stored rule itself stands
