"""The guard (``textgames.delivery_rules.guard``): a step's rules held until the agent proposes what they bear on."""

from __future__ import annotations

import json

import pytest
from listing import listing
from text_rule_cases import (
    COOKS,
    CUT_RECIPE,
    GOAL,
    FRY,
    ONE_CUT,
    RECIPE,
    allowed,
    closed_door,
    procedure,
    read,
    rule,
    taken,
    task,
)

from langmem_plus.config import DEFAULT_CONFIG
from langmem_plus.records import (
    Episode,
    Hint,
    Lesson,
    ScoredItem,
    Step,
    TaskSpec,
)
from langmem_plus.retrieval.rule_lines import read_rule_line
from langmem_plus.textgames.delivery import StepDelivery
from langmem_plus.textgames.executor import TextGameExecutor
from langmem_plus.textgames.shown import TRIGGERED_HEADER, rule_line
from langmem_plus.tokens import count_tokens


def test_the_guard_holds_an_avoidance_until_the_agent_proposes_the_action_it_stands_on() -> None:
    deliver = StepDelivery([rule("eat", wrong="eat <X>", when=["<X>"])], runs=[])  # the default: text_guard="all"
    listed = "Ingredients:\n  red apple"  # the task's text names it and says nothing more: the rule's situation
    history = read(COOKS, listed)
    assert deliver(task([]), history) == [] and deliver.tokens == 0  # nothing shown before the agent proposes
    assert [(a.lesson_id, a.step) for a in deliver.activations("run")] == [("eat", 1)]  # in force all the same
    assert deliver.check(task([]), history, "look") == []  # a proposal it does not stand on
    assert deliver.check(task([]), history[:0], "eat red apple") == []  # not the step last delivered
    answer = deliver.check(task([]), history, "eat red apple")
    assert [h.text for h in answer] == ["Avoid `eat red apple`"] and deliver.tokens > 0
    assert not allowed(answer, "eat red apple", listed) and allowed(answer, "look", listed)
    assert deliver.check(task([]), history, "eat red apple") == []  # once per step: the agent has it
    later = [*history, Step(index=1, action="look", observation="A kitchen.", info={"valid_actions": COOKS})]
    assert [h.text for h in deliver(task([]), later)] == ["Avoid `eat red apple`"]  # paid for: shown while it stands


def test_the_guard_shows_a_recommendation_only_when_the_agent_proposes_something_else() -> None:
    rules = [rule("roast-oven", correct="cook <X> in oven", when=["roast <X>"])]
    for guard in ("all", "avoidances"):
        deliver = StepDelivery(rules, runs=[], config=DEFAULT_CONFIG.replace(textgames={"text_guard": guard}))
        shown = [h.text for h in deliver(task([]), read(COOKS))]
        assert shown == ([] if guard == "all" else ["Prefer `cook red apple in oven`"])
        assert deliver.check(task([]), read(COOKS), "cook red apple in oven") == []  # follows memory already
        other = [h.text for h in deliver.check(task([]), read(COOKS), "eat red apple")]
        assert other == (["Prefer `cook red apple in oven`"] if guard == "all" else [])
        assert list(deliver.lines) == ['- "Prefer `cook red apple in oven`"']


def test_an_avoidance_with_an_exception_is_answered_on_the_action_it_stands_on() -> None:
    """``cook <X> in oven`` fatal everywhere but where the task roasts (``shown.with_exceptions``): shown on the
    action it stands on here, it holds there without condition, so a reader that obeys it alone still roasts."""
    rules = [rule("avoid-oven", wrong="cook <X> in oven"), rule("roast-oven", correct="cook <X> in oven", when=["roast <X>"])]
    deliver = StepDelivery(rules, runs=[])
    history = taken(COOKS, "look")
    assert [h.text for h in deliver(task([]), history)] == []
    assert deliver.check(task([]), history, "cook red apple in oven") == []  # memory's own recommendation
    answer = deliver.check(task([]), history, "cook milk in oven")
    assert {h.text: h.precondition for h in answer} == {"Avoid `cook milk in oven`": None}
    assert allowed(answer, "cook red apple in oven") and not allowed(answer, "cook milk in oven")


def test_an_avoidance_shown_earlier_comes_back_where_it_stands_and_the_recommendation_waits_for_its_proposal() -> None:
    rules = [rule("avoid-oven", wrong="cook <X> in oven"), rule("roast-oven", correct="cook <X> in oven", when=["roast <X>"])]
    before = ["look", "cook milk in oven", "read cookbook"]
    looked = Step(index=0, action="look", observation="A kitchen.\nmilk", info={"valid_actions": before})
    after = ["cook red apple in oven", "cook milk in oven"]
    deliver = StepDelivery(rules, runs=[])
    deliver(task(before), [looked])
    assert [h.text for h in deliver.check(task(before), [looked], "cook milk in oven")] == ["Avoid `cook milk in oven`"]
    history = [looked, Step(index=1, action="read cookbook", observation=RECIPE, info={"valid_actions": after})]
    shown = deliver(task(before), history)  # paid for, it stays in view on its action; the roast is not under it
    assert {h.text: h.precondition for h in shown} == {"Avoid `cook milk in oven`": None}
    assert TextGameExecutor(seed=0).act(task(before), history, shown).action == "cook red apple in oven"
    assert deliver.check(task(before), history, "cook red apple in oven") == []
    assert [h.text for h in deliver.check(task(before), history, "look")] == ["Prefer `cook red apple in oven`"]


def test_a_stale_history_gets_no_answer_and_an_equal_one_rebuilt_does() -> None:
    rules = [rule("avoid-oven", wrong="cook <X> in oven"), rule("roast-oven", correct="cook <X> in oven", when=["roast <X>"])]
    deliver = StepDelivery(rules, runs=[])
    history = taken(COOKS, "look")
    deliver(task([]), history)
    assert len(deliver.check(task([]), history, "cook milk in oven")) == 1  # the avoidance where it stands
    fresh = StepDelivery(rules, runs=[])
    fresh(task([]), history)
    assert fresh.check(task([]), taken(COOKS, "eat red apple"), "cook milk in oven") == []  # another history, same length
    assert fresh.check(task([]), taken(COOKS, "look"), "cook milk in oven") != []  # an equal one (rebuilt) is answered


def test_avoidances_alike_come_together_at_a_proposal_in_one_line_and_each_is_read_as_its_own() -> None:
    rules = [*(rule(v, wrong=f"{v} <X>", when=[f"!{v} <X>"]) for v in ("chop", "slice")), rule("eat", wrong="eat <X>", when=["<X>"])]
    deliver = StepDelivery(rules, runs=[])
    history = taken(ONE_CUT, "look", CUT_RECIPE)
    assert deliver(task([]), history) == []
    answer = deliver.check(task([]), history, "slice red apple")
    assert sorted(h.text for h in answer) == ["Avoid `chop <X>`", "Avoid `slice <X>`"]  # eat's line says more: held
    assert list(deliver.lines) == ['- "Avoid `slice/chop <X>` unless the task says so"']  # one action, its alternatives
    apart = count_tokens("\n".join([TRIGGERED_HEADER, *map(rule_line, ([ScoredItem(kind="lesson", item=r, score=1.0)
                                                                          for r in rules[:2]]))])).n
    assert deliver.tokens < apart  # one line for the two
    assert deliver.check(task([]), history, "chop milk") == []  # it has that one already
    assert [h.text for h in deliver.check(task([]), history, "eat milk")] == ["Avoid `eat milk`"]  # alone: it says more
    joined = read_rule_line(json.loads(next(iter(deliver.lines))[2:]))  # the line as a reader of the block reads it
    assert joined.text == "Avoid `slice <X>`, `chop <X>`" and joined.precondition == "unless the task says so"
    for hints in (answer, [joined]):  # the line as handed over, and as read
        assert allowed(hints, "chop red apple", CUT_RECIPE)  # the recipe says this cut
        assert not allowed(hints, "slice red apple", CUT_RECIPE) and not allowed(hints, "chop milk", CUT_RECIPE)


def test_alike_avoidances_the_budget_leaves_out_of_an_answer_stay_held_for_their_own_proposal() -> None:
    verbs = ["chop", "slice", "dice", "mince", "grate", "peel", "crush", "mash"]
    rules = [rule(v, wrong=f"{v} <X>", when=[f"!{v} <X>"]) for v in verbs]
    deliver = StepDelivery(rules, runs=[], config=DEFAULT_CONFIG.replace(context={"max_context_tokens": 40}))
    history = taken([*(f"{v} milk" for v in verbs), "look"], "look", CUT_RECIPE)
    deliver(task([]), history)
    first = {h.text for h in deliver.check(task([]), history, "slice milk")}
    assert "Avoid `slice <X>`" in first and len(first) < len(verbs)  # the budget cut the answer short
    answered = set(first)
    for v in verbs:
        answered |= {h.text for h in deliver.check(task([]), history, f"{v} milk")}
    assert answered == {f"Avoid `{v} <X>`" for v in verbs}  # none lost: each answered at its own proposal


def test_recommendations_answered_together_are_one_line_and_a_list_is_not_aprocedure() -> None:
    rules = [rule("roast-oven", correct="cook <X> in oven", when=["roast <X>"]),
             rule("fridge", correct="open fridge", runs=("r0", "r1", "r2"))]
    deliver = StepDelivery(rules, runs=[])
    history = read([*COOKS, "open fridge"])
    assert deliver(task([]), history) == []
    assert sorted(h.text for h in deliver.check(task([]), history, "eat red apple")) == [
        "Prefer `cook red apple in oven`", "Prefer `open fridge`"]
    assert len(deliver.lines) == 1 and next(iter(deliver.lines)).startswith('- "Prefer `')
    listed = Hint(text="Prefer `open fridge`, `take knife`", source_id="l")
    procedure = Hint(text="start with `open fridge` then `take knife`", source_id="p")
    alone = read(["take knife"], "Nothing here.")  # the fridge was never opened: only the list's second step counts
    assert TextGameExecutor(seed=0).act(task([]), alone, [listed]).applied_hints == ("l",)
    steps = Hint(text="Worked before for a similar goal: `open fridge` ; `take knife`", source_id="s")  # a baseline's
    for hint in (procedure, steps):
        assert TextGameExecutor(seed=0).act(task([]), alone, [hint]).applied_hints == ()


def test_an_avoidance_from_before_the_run_waits_for_a_proposal_it_quotes() -> None:
    door = ["close door to north", "close door to west", "look"]
    deliver = StepDelivery([], runs=[], avoidances=[closed_door()])
    history = read(door)
    assert deliver(task(door), history) == [] and deliver.tokens == 0
    assert deliver.check(task(door), history, "close door to west") == []  # its line quotes only the north door
    answer = deliver.check(task(door), history, "close door to north")
    assert [h.source_id for h in answer] == ["ep-door"] and answer[0].text.startswith("Avoid: `close door to north`")
    assert list(deliver.lines) == [f"- {json.dumps(answer[0].text, ensure_ascii=False)}"]  # handed over as paid for
    assert not allowed(answer, "close door to north") and allowed(answer, "look")
    assert len(deliver.lines) == 1 and deliver.activations("run") == []  # the caller activates it, from the start
    assert deliver.check(task(door), history, "close door to north") == []  # shown once
    later = [*history, Step(index=1, action="look", observation="A kitchen.", info={"valid_actions": door})]
    assert [h.source_id for h in deliver(task(door), later)] == ["ep-door"] and len(deliver.lines) == 1  # kept, paid
    off = StepDelivery([], runs=[], config=DEFAULT_CONFIG.replace(textgames={"text_guard": "off"}), avoidances=[closed_door()])
    off(task(door), history)
    assert off.check(task(door), history, "close door to north") == []  # no guard: the caller lists it before the run


def test_the_design_holds_pre_run_avoidances_for_the_guard_and_hands_over_what_its_block_says(monkeypatch: pytest.MonkeyPatch) -> None:
    from langmem_plus.bench.designs.baselines import LangmemPlus

    for guard, listed in (("all", False), ("off", True)):
        design = LangmemPlus(config=DEFAULT_CONFIG.replace(textgames={"text_guard": guard}), delivery="triggered")
        try:
            monkeypatch.setattr(design.memory, "retrieve_pre_run", lambda *a, **k: [procedure(), closed_door()])
            ctx = design.general_retrieve(task(["close door to north"]), run_id="run-1")
            assert ("close door to north" in ctx.text) is listed
            assert ctx.step_hints is not None and bool(ctx.step_hints.avoidances) is not listed
            assert [i.item_id for i in design._triggered["run-1"][0]] == ["ep-won", "ep-door"]  # in force either way
            shown = ctx.text.splitlines()[1:]
            assert [f"- {json.dumps(h.text, ensure_ascii=False)}" for h in ctx.hints] == shown  # the reader gets the block's words, no more
            assert "…" not in ctx.hints[0].text and "`open fridge` ; `take red apple`" in ctx.hints[0].text  # whole
            assert all(h.precondition is None for h in ctx.hints)  # a compact line shows none
        finally:
            design.close()
    tight = LangmemPlus(config=DEFAULT_CONFIG.replace(context={"max_context_tokens": 56}), delivery="triggered")
    try:  # a block with room for the procedure only: the avoidance it would not show is neither held nor in force
        monkeypatch.setattr(tight.memory, "retrieve_pre_run", lambda *a, **k: [procedure(), closed_door()])
        ctx = tight.general_retrieve(task(["close door to north"]), run_id="run-2")
        assert ctx.step_hints is not None and not ctx.step_hints.avoidances
        assert [i.item_id for i in tight._triggered["run-2"][0]] == ["ep-won"]
    finally:
        tight.close()


def test_a_pre_run_line_cut_short_keeps_whole_actions_a_reader_can_take_and_a_rewrite_keeps_its_quotes() -> None:
    from langmem_plus.textgames.executor import read_hint
    from langmem_plus.textgames.shown import endorsed_actions, shown_hint

    wire = "connect red wire terminal 1 to battery cathode"
    ep = Episode(episode_id="ep-wire", namespace=("ns",), kind="success", goal_signature=GOAL,
                 action_seq=[wire, "focus on light bulb", "look around"])
    hint = shown_hint(ScoredItem(kind="episode", item=ep, score=0.5))
    assert hint.text == f"start with `{wire}` then `focus on light bulb` ; `look around`"  # a plan is shown whole
    read_wire = read_hint(hint)
    assert read_wire is not None and read_wire.procedure
    assert [p.text for p in read_wire.patterns] == [wire, "focus on light bulb", "look around"]
    offered = TaskSpec(task_id="t", goal="Turn on the light bulb.", tool="game",
                       context={"valid_actions": ["focus on light bulb", wire, "look around"]})
    assert TextGameExecutor(seed=0).act(offered, [], [hint]).action == wire
    rewrite = Lesson(id="les-fridge", namespace=("ns",), rule_text="take carrot -> take carrot from fridge",
                     wrong="take carrot", correct="take carrot from fridge")
    use = shown_hint(ScoredItem(kind="lesson", item=rewrite, score=0.5))
    assert use.text == "Use `take carrot from fridge` instead of `take carrot`"
    read_use = read_hint(use)
    assert read_use is not None and not read_use.avoid and [p.text for p in read_use.patterns] == ["take carrot from fridge"]
    assert endorsed_actions([use]) == {"take carrot from fridge"}  # not the action it replaces


def test_a_proposal_memory_endorsed_before_the_run_is_not_answered_until_the_attempt_has_taken_it() -> None:
    rules = [rule("open-fridge", correct="open fridge", runs=("r0", "r1"))]  # taught by two runs: it stands
    valid = ["read cookbook", "open fridge", "look"]
    deliver = StepDelivery(rules, runs=[], endorsed={"read cookbook"})
    deliver(task(valid), [])
    assert deliver.check(task(valid), [], "read cookbook") == []  # the procedure's step: memory's own advice
    assert [h.text for h in deliver.check(task(valid), [], "look")] == ["Prefer `open fridge`"]
    again = StepDelivery(rules, runs=[], endorsed={"read cookbook"})
    history = [Step(index=0, action="read cookbook", observation=RECIPE, info={"valid_actions": valid})]
    again(task(valid), history)
    assert [h.text for h in again.check(task(valid), history, "read cookbook")] == ["Prefer `open fridge`"]  # taken: a loop
    plain = StepDelivery(rules, runs=[])
    plain(task(valid), [])
    assert [h.text for h in plain.check(task(valid), [], "read cookbook")] == ["Prefer `open fridge`"]


def test_a_pre_run_procedures_step_is_endorsed_only_while_the_attempt_follows_it() -> None:
    from langmem_plus.textgames.shown import endorsed_actions, procedure_steps

    rules = [rule("take-salt", correct="take salt", runs=("r0", "r1"))]
    proc = [Hint(text="start with `read cookbook` then `move west`", source_id="ep")]
    assert endorsed_actions(proc) == frozenset()  # its steps are endorsed one at a time
    valid = ["read cookbook", "move west", "take salt", "look"]

    def step(i: int, action: str) -> Step:
        return Step(index=i, action=action, observation=RECIPE if action == "read cookbook" else "ok",
                    info={"valid_actions": valid})

    def answer(history: list[Step], proposal: str) -> list[str]:
        deliver = StepDelivery(rules, runs=[], endorsed=endorsed_actions(proc), procedures=procedure_steps(proc))
        deliver(task(valid), history)
        return [h.text for h in deliver.check(task(valid), history, proposal)]

    assert answer([], "read cookbook") == []  # the procedure's first step: memory's own advice
    assert answer([], "move west") == ["Prefer `take salt`"]  # not its step yet
    assert answer([step(0, "read cookbook")], "move west") == []  # right after the step before it
    assert answer([step(0, "read cookbook"), step(1, "look")], "move west") == ["Prefer `take salt`"]  # left it


def test_with_the_guard_the_executor_chooses_what_it_chooses_with_every_standing_rule_listed() -> None:
    rules = [rule("avoid-oven", wrong="cook <X> in oven"), rule("roast-oven", correct="cook <X> in oven", when=["roast <X>"]),
             rule("prefer-stove", correct="cook <X> in stove"), rule("avoid-stove", wrong="cook <X> in stove"),
             rule("eat", wrong="eat <X>")]
    executor = TextGameExecutor(seed=0)
    for history in (read(COOKS), taken(COOKS, "look"), taken(COOKS, "cook red apple in oven")):
        listed = executor.act(task([]), history, listing(rules, runs=[])(task([]), history))
        deliver = StepDelivery(rules, runs=[])
        hints = deliver(task([]), history)
        decision = executor.act(task([]), history, hints)
        while answer := deliver.check(task([]), history, decision.action):  # the episode loop's guard
            hints = [*hints, *answer]
            decision = executor.act(task([]), history, hints)
        assert decision.action == listed.action


def test_an_answer_joins_only_the_avoidances_that_concern_the_proposal() -> None:
    rules = [rule(f"cook-{a}", wrong=f"cook <X> in {a}") for a in ("oven", "toaster")] + [rule("eat", wrong="eat <X>")]
    valid = ["cook red apple in oven", "cook red apple in toaster", "eat red apple", "look"]
    deliver = StepDelivery(rules, runs=[])
    history = taken(valid, "look", FRY)
    deliver(task([]), history)
    answer = {h.text for h in deliver.check(task([]), history, "cook red apple in oven")}
    assert answer == {"Avoid `cook <X> in oven`", "Avoid `cook <X> in toaster`"}  # its siblings; eating is no concern
    assert {h.text for h in deliver.check(task([]), history, "eat red apple")} == {"Avoid `eat <X>`"}


def test_a_note_standing_at_a_step_stands_after_an_examine_that_changes_nothing() -> None:
    """Stable delivery: what stood before an ``examine`` that left the valid actions as they were stands after it;
    a note on actions no longer offered goes with them (the state it depends on changed)."""
    rules = [rule("avoid-oven", wrong="cook <X> in oven")]
    deliver = StepDelivery(rules, runs=[])
    history = taken(COOKS, "look", FRY)
    deliver(task([]), history)
    answer = [h.text for h in deliver.check(task([]), history, "cook red apple in oven")]
    assert answer == ["Avoid `cook <X> in oven`"]
    examined = [*history, Step(index=2, action="examine oven", observation="An oven.", info={"valid_actions": COOKS})]
    assert [h.text for h in deliver(task([]), examined)] == answer
    moved = [*examined, Step(index=3, action="look", observation="A kitchen.", info={"valid_actions": ["look"]})]
    assert deliver(task([]), moved) == []
