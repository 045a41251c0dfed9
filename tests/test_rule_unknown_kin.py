"""``textgames.delivery_rules.unknown_kin``: unknown siblings of a conditional command avoided where no line asks for them."""

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
    RunRecord,
    Step,
)
from langmem_plus.textgames.delivery import StepDelivery, rule_utility
from langmem_plus.textgames.delivery_rules.unknown_kin import KIN_PREFIX
from langmem_plus.textgames.executor import TextGameExecutor


def test_an_unknown_sibling_of_a_conditional_command_is_avoided_where_the_task_asks_nothing_unanswered_of_its_thing() -> None:
    oven = rule("oven", correct="cook <X> in oven", when=["roast <X>"])
    toaster = rule("toaster", correct="cook <X> in toaster", when=["grill <X>"])
    dice = rule("dice", correct="dice <X>", when=["dice <X>"])
    valid = ["cook red apple in stove", "cook red apple in oven", "cook red apple in toaster", "look"]

    def shown(observation: str, rules: Sequence[Lesson], done: str = "look") -> tuple[set[str], bool, StepDelivery]:
        deliver = listing(rules, runs=[])
        history = taken(valid, done, observation) if observation.startswith("Ingredients") else \
            [Step(index=0, action="open fridge", observation=observation, info={"valid_actions": valid})]
        hints = deliver(task(valid), history)
        if observation.startswith("Ingredients"):
            return {h.text for h in hints}, allowed(hints, "cook red apple in stove", observation), deliver
        alone = [history[0].model_copy(update={"info": {"valid_actions": ["cook red apple in stove"]}})]  # nothing read
        return {h.text for h in hints}, TextGameExecutor(seed=0).act(task([]), alone, hints).kind == "command", deliver

    def recipe(directions: str) -> str:
        return f"Ingredients:\n  red apple\nDirections:\n  {directions}\n  prepare meal"

    stove = "Avoid `cook red apple in stove`"
    texts, ok, deliver = shown(recipe("dice the red apple"), [oven, toaster, dice])
    assert stove in texts and not ok  # dicing is answered by `dice`: the recipe asks no cooking of the apple
    assert not any(lid.startswith(KIN_PREFIX) for lid in deliver.delivered)  # an inference: no lesson to activate
    assert all(a.lesson_id in {"oven", "toaster", "dice"} for a in deliver.activations("run"))
    texts, ok, _ = shown(recipe("roast the red apple"), [oven, toaster, dice], done="cook red apple in oven")
    assert stove in texts and not ok  # roasting is the oven's line
    texts, ok, _ = shown(recipe("fry the red apple"), [oven, toaster, dice])
    assert stove not in texts and ok  # a line no known command answers: maybe the stove's
    texts, ok, deliver = shown("The fridge holds a red apple.", [oven, toaster, dice])
    # nothing read of the apple yet: no line makes any cooking of it right; shown once as the pattern, for any such thing
    assert "Avoid `cook <X> in stove`" in texts and not ok
    assert "when the task does not name `<X>`" in "\n".join(deliver.lines)
    fry = rule("stove", correct="cook <X> in stove", when=["fry <X>"])
    texts, ok, _ = shown(recipe("dice the red apple"), [oven, toaster, dice, fry])
    assert stove in texts and not ok  # known right only where the task says `fry <X>`: not asked here either
    texts, ok, _ = shown(recipe("fry the red apple"), [oven, toaster, dice, fry])
    assert "Prefer `cook red apple in stove`" in texts and stove not in texts and ok  # its own line: its rule decides
    pepper = "Ingredients:\n  red hot pepper\nDirections:\n  dice the red hot pepper\n  prepare meal"
    texts, ok, _ = shown(pepper, [oven, toaster, dice])  # `red` leads a listed phrase: the reader holds the apple named
    assert stove in texts and not ok  # so its line is the action itself, not a "does not name" pattern it would not apply
    texts, ok, _ = shown("The fridge holds a red apple.", [oven, toaster, dice, fry])
    assert "Avoid `cook <X> in stove`" in texts and not ok  # a command memory knows: a guess too before its line
    anywhere = rule("oven-any", correct="cook <X> in oven")  # right with no line: not a conditional command
    texts, ok, _ = shown(recipe("dice the red apple"), [anywhere, dice])
    assert stove not in texts and ok
    valid[1:3] = []  # the oven and the toaster are in another room: the stove is still their sibling
    texts, ok, _ = shown(recipe("dice the red apple"), [oven, toaster, dice])
    assert stove in texts and not ok
    texts, ok, _ = shown(recipe("dice the red apple"), [oven, dice])  # `cook <X> in oven` alone has the same kin
    assert stove in texts and not ok


def test_a_conditional_command_whose_line_the_task_says_is_never_avoided_as_kin_though_its_recommendation_is_held_back() -> None:
    oven = rule("oven", correct="cook <X> in oven", when=["roast <X>"])
    stove = rule("stove", correct="cook <X> in stove", when=["fry <X>"], runs=("x",))
    lost = [RunRecord(run_id=f"l{i}", namespace=("ns",), seq=i, task_id=f"t{i}", tool="game", passed=False, activated=["stove"])
            for i in range(3)]
    runs = [*lost, RunRecord(run_id="w", namespace=("ns",), seq=9, task_id="w", tool="game", passed=True)]
    need, gain = rule_utility(stove, runs)
    assert need + gain < 0  # held back (rule 3)
    valid = ["cook red apple in stove", "cook red apple in oven", "look"]
    fried = "Ingredients:\n  red apple\nDirections:\n  fry the red apple\n  prepare meal"
    toaster = rule("toaster", correct="cook <X> in toaster", when=["grill <X>"])  # its kin covers the oven
    hints = listing([oven, stove, toaster], runs=runs)(task(valid), taken(valid, "look", fried))
    assert "Avoid `cook red apple in stove`" not in {h.text for h in hints} and allowed(hints, "cook red apple in stove", fried)
    assert "Avoid `cook red apple in oven`" in {h.text for h in hints}  # the oven is not asked of a fried apple


def test_switched_off_by_name_an_unknown_sibling_is_not_avoided() -> None:
    from langmem_plus.config import DEFAULT_CONFIG

    rules = [rule("oven", correct="cook <X> in oven", when=["roast <X>"]), rule("dice", correct="dice <X>", when=["dice <X>"])]
    valid = ["cook red apple in stove", "look"]
    recipe = "Ingredients:\n  red apple\nDirections:\n  dice the red apple\n  prepare meal"
    off = DEFAULT_CONFIG.replace(textgames={"text_rules_off": frozenset({"unknown_kin"})})
    on = {h.text for h in listing(rules, runs=[])(task(valid), taken(valid, "look", recipe))}
    assert "Avoid `cook red apple in stove`" in on
    assert listing(rules, runs=[], config=off)(task(valid), taken(valid, "look", recipe)) == []
