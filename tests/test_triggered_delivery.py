"""Observation-triggered delivery of text rules (``textgames.delivery``): what fires when, ranking, budget, a real game."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Sequence
from pathlib import Path

import pytest

from fixed_executor import Fixed
from langmem_plus import LearningMemory
from langmem_plus.bench.designs.base import Context, run_episode
from langmem_plus.config import DEFAULT_CONFIG
from langmem_plus.envs.textgame import TextGameEnv
from langmem_plus.executors.base import Decision
from langmem_plus.textgames.executor import TextGameExecutor
from langmem_plus.records import Episode, Feedback, Hint, Lesson, LessonScope, Provenance, RunRecord, ScoredItem, Step, TaskSpec
from langmem_plus.textgames.direct import offered_on_own
from langmem_plus.textgames.delivery import (KIN_PREFIX, TRIGGERED_HEADER, StepDelivery, StepView, firings, object_phrase,
                                               rule_line, rule_pattern, rule_utility)
from langmem_plus.retrieval.rule_lines import read_rule_line
from langmem_plus.tokens import count_tokens
from listing import listing

GOAL = "Cook a meal. Check the cookbook for the recipe."
RECIPE = "Ingredients:\n  red apple\n  milk\nDirections:\n  roast the red apple\n  prepare meal"


def rule(lid: str, *, wrong: str | None = None, correct: str | None = None, when: Sequence[str] = (),
         runs: Sequence[str] = ("r0",)) -> Lesson:
    return Lesson(id=lid, namespace=("ns",), rule_text=lid, wrong=wrong, correct=correct, applies_when=list(when),
                  scope=LessonScope(tool="game"), provenance=Provenance(run_ids=list(runs)))


def with_extras(run: RunRecord, **kept: list[str]) -> RunRecord:
    """A copy of ``run`` whose text-game extras have ``kept`` in place of theirs."""
    return run.model_copy(update={"extras": {"textgames": {**run.extras.get("textgames", {}), **kept}}})


def task(valid: Sequence[str]) -> TaskSpec:
    return TaskSpec(task_id="t", goal=GOAL, tool="game", context={"observation": "A kitchen.", "valid_actions": list(valid)})


def read(valid: Sequence[str], observation: str = RECIPE) -> list[Step]:
    """One step that read the cookbook (its object is a goal word), then ``valid`` are offered."""
    return [Step(index=0, action="read cookbook", observation=observation, info={"valid_actions": list(valid)})]


COOKS = ["cook red apple in oven", "cook red apple in stove", "cook milk in oven", "eat red apple", "look"]


def test_a_placeholder_rule_fires_only_once_the_task_text_names_its_entity() -> None:
    avoid_eat = rule("eat", wrong="eat <X>")
    p = rule_pattern(avoid_eat)
    assert p is not None
    before = StepView.of(task(COOKS), [])
    assert firings(avoid_eat, p, before) == []  # nothing read yet: no phrase is known to be the task's
    after = StepView.of(task(["read cookbook"]), read(COOKS))
    assert firings(avoid_eat, p, after) == ["eat red apple"]
    # a phrase only the goal names never binds (``cookbook`` is the goal's word)
    assert firings(avoid_eat, p, StepView.of(task([]), read(["eat cookbook"]))) == []


def test_a_condition_must_hold_with_the_same_binding() -> None:
    oven = rule("oven", correct="cook <X> in oven", when=["roast <X>"])
    p = rule_pattern(oven)
    assert p is not None
    view = StepView.of(task([]), read(COOKS))
    assert firings(oven, p, view) == ["cook red apple in oven"]  # milk is named, but the recipe roasts the apple
    bare = rule("bare", wrong="cook <X> in oven", when=["<X>"])  # "the task names X and says nothing more"
    pb = rule_pattern(bare)
    assert pb is not None and firings(bare, pb, view) == ["cook milk in oven"]


def allowed(hints: Sequence[Hint], action: str, observation: str = RECIPE) -> bool:
    """Whether ``TextGameExecutor`` may take ``action`` with ``hints`` (offered alone, it is taken unless avoided)."""
    return TextGameExecutor(seed=0).act(task([]), read([action], observation), hints).kind == "command"


def taken(valid: Sequence[str], action: str, observation: str = RECIPE) -> list[Step]:
    """``read`` and then ``action`` taken, with ``valid`` still offered (a recommendation already followed)."""
    return [*read(valid, observation), Step(index=1, action=action, observation="Done.", info={"valid_actions": list(valid)})]


def test_the_more_specific_rule_wins_on_one_action_and_an_avoidance_wins_a_tie() -> None:
    rules = [rule("avoid-oven", wrong="cook <X> in oven"), rule("roast-oven", correct="cook <X> in oven", when=["roast <X>"]),
             rule("prefer-stove", correct="cook <X> in stove"), rule("avoid-stove", wrong="cook <X> in stove")]
    first = listing(rules, runs=[])(task([]), read(COOKS))
    assert [h.text for h in first] == ["Prefer `cook red apple in oven`"]  # avoidances wait while it is not followed
    assert first[0].precondition is None  # no avoidance beside it: its line need not say why it wins
    hints = listing(rules, runs=[])(task([]), taken(COOKS, "cook red apple in oven"))
    texts = {h.text: h.source_id for h in hints}
    assert {h.text: h.precondition for h in hints}["Prefer `cook red apple in oven`"] == "when the task says `roast red apple`"
    assert texts["Prefer `cook red apple in oven`"] == "roast-oven"  # one condition beats none
    assert texts["Avoid `cook <X> in oven`"] == "avoid-oven"  # an unconditioned avoidance: one line, as its pattern
    assert "Prefer `cook red apple in stove`" not in texts  # the tie went to the avoidance
    assert allowed(hints, "cook red apple in oven")
    assert not allowed(hints, "cook red apple in stove") and not allowed(hints, "cook milk in oven")


def test_a_recommendation_wins_with_a_line_the_avoidances_situation_lacked() -> None:
    recipe = "Ingredients:\n  red apple\nDirections:\n  chop the red apple\n  fry the red apple\n  prepare meal"
    cuts = ["chop red apple", "cook red apple in stove"]
    # fatal where the task said `fry <X>` (and not `chop <X>`), right where it said `chop <X>`: both hold here
    chop = [rule("chop-when-fry", wrong="chop <X>", when=["fry <X>"]), rule("chop", correct="chop <X>", when=["chop <X>"])]
    # fatal where the task said `chop <X>` and `fry <X>`; the recommendation's line was in that situation too
    stove = [rule("stove-when-both", wrong="cook <X> in stove", when=["chop <X>", "fry <X>"]),
             rule("stove", correct="cook <X> in stove", when=["fry <X>"])]
    hints = listing([*chop, *stove], runs=[])(task([]), taken(cuts, "look", recipe))
    assert allowed(hints, "chop red apple", recipe)
    hints = listing([*chop, *stove], runs=[])(task([]), taken(cuts, "chop red apple", recipe))
    assert not allowed(hints, "cook red apple in stove", recipe)
    assert {h.source_id for h in hints} == {"chop", "stove-when-both"}  # one verdict per action


def test_rules_are_ranked_by_measured_utility_within_the_budget() -> None:
    runs = [RunRecord(run_id=f"r{i}", namespace=("ns",), seq=i, task_id=f"t{i}", tool="game", passed=i % 2 == 0) for i in range(6)]
    often = rule("often", wrong="eat <X>", runs=["r0", "r1", "r2", "r3"])
    rare = rule("rare", wrong="cook <X> in stove", runs=["r0"])
    assert rule_utility(often, runs)[0] > rule_utility(rare, runs)[0]
    roomy = listing([rare, often], runs=runs)
    assert [h.source_id for h in roomy(task([]), read(COOKS))] == ["often", "rare"]
    # a budget with room for the header and one line keeps the rule that mattered in more runs
    tight = listing([rare, often], runs=runs, config=DEFAULT_CONFIG.replace(context={"max_context_tokens": 24}))
    assert [h.source_id for h in tight(task([]), read(COOKS))] == ["often"]


def test_delivery_outcomes_move_a_rules_gain_and_a_harmful_recommendation_is_held_back() -> None:
    lesson = rule("r", correct="cook <X> in oven", when=["roast <X>"], runs=["r0"])
    base = [RunRecord(run_id=f"r{i}", namespace=("ns",), seq=i, task_id="t", tool="game", passed=True) for i in range(4)]
    assert rule_utility(lesson, base)[1] == 0.0  # never delivered: no gain measured
    lost = [RunRecord(run_id=f"d{i}", namespace=("ns",), seq=10 + i, task_id="t", tool="game", passed=False, activated=["r"])
            for i in range(6)]
    need, gain = rule_utility(lesson, base + lost)
    assert gain < 0 and need + gain < 0
    assert listing([lesson], runs=base + lost)(task([]), read(COOKS)) == []
    assert [h.source_id for h in listing([lesson], runs=base)(task([]), read(COOKS))] == ["r"]


def test_an_avoidance_is_delivered_whatever_the_pass_rate_of_the_runs_it_was_shown_in() -> None:
    # it fires where a fatal action is on offer: runs that lose more often for other reasons, not because of it
    avoid = rule("r", wrong="eat <X>", runs=["r0"])
    runs = [RunRecord(run_id=f"r{i}", namespace=("ns",), seq=i, task_id="t", tool="game", passed=True) for i in range(4)]
    runs += [RunRecord(run_id=f"d{i}", namespace=("ns",), seq=10 + i, task_id="t", tool="game", passed=False, activated=["r"])
             for i in range(6)]
    need, gain = rule_utility(avoid, runs)
    assert need + gain < 0
    hints = listing([avoid], runs=runs)(task([]), read(COOKS))
    assert [h.text for h in hints] == ["Avoid `eat <X>`"] and not allowed(hints, "eat red apple")


def test_avoidances_are_ranked_by_need_alone_within_the_budget() -> None:
    runs = [RunRecord(run_id=f"r{i}", namespace=("ns",), seq=i, task_id="t", tool="game", passed=i < 4,
                      activated=["lucky"] if i < 4 else ["often"]) for i in range(8)]
    often = rule("often", wrong="eat <X>", runs=["r4", "r5", "r6"])  # three runs lost to it; shown in the lost ones
    lucky = rule("lucky", wrong="cook <X> in stove", runs=["r0"])  # one; shown in runs that passed
    assert rule_utility(often, runs)[0] > rule_utility(lucky, runs)[0]
    assert sum(rule_utility(often, runs)) < sum(rule_utility(lucky, runs))  # its gain would rank it last
    tight = listing([lucky, often], runs=runs, config=DEFAULT_CONFIG.replace(context={"max_context_tokens": 24}))
    assert [h.source_id for h in tight(task([]), read(COOKS))] == ["often"]


def test_literal_rules_of_one_run_about_other_things_stay_with_their_task() -> None:
    one_run = rule("pepper", correct="take red hot pepper")
    family = rule("meal", correct="prepare meal")  # names only the goal's words
    seen_twice = rule("fridge", correct="open fridge", runs=["r0", "r1"])
    valid = ["take red hot pepper", "prepare meal", "open fridge"]
    got = {h.source_id for h in listing([one_run, family, seen_twice], runs=[])(task(valid), [])}
    assert got == {"meal", "fridge"}


def test_each_line_counts_once_and_the_header_only_when_it_is_the_callers() -> None:
    rules = [rule("eat", wrong="eat <X>")]
    own, shared = listing(rules, runs=[]), listing(rules, runs=[], header="")
    for d in (own, shared):
        d(task([]), read(COOKS))
        d(task([]), read(COOKS) * 2)  # the same line again at a later step
    assert list(own.lines) == list(shared.lines) == ['- "Avoid `eat <X>`"']  # no id in the text: activations keep it
    assert own.tokens > shared.tokens > 0
    assert [(a.lesson_id, a.step) for a in own.activations("run")] == [("eat", 1)]


# --------------------------------------------------------------------------- rule 10: the guard


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


def test_a_pattern_shown_at_a_proposal_brings_the_recommendations_it_would_override_with_their_lines() -> None:
    rules = [rule("avoid-oven", wrong="cook <X> in oven"), rule("roast-oven", correct="cook <X> in oven", when=["roast <X>"])]
    deliver = StepDelivery(rules, runs=[])
    history = taken(COOKS, "look")
    assert [h.text for h in deliver(task([]), history)] == []
    assert deliver.check(task([]), history, "cook red apple in oven") == []  # memory's own recommendation
    answer = deliver.check(task([]), history, "cook milk in oven")
    assert {h.text: h.precondition for h in answer} == {
        "Avoid `cook <X> in oven`": None, "Prefer `cook red apple in oven`": "when the task says `roast red apple`"}
    assert allowed(answer, "cook red apple in oven") and not allowed(answer, "cook milk in oven")
    assert not allowed([h for h in answer if h.text.startswith("Avoid")], "cook red apple in oven")  # what the line is for


def test_a_pattern_shown_earlier_comes_back_with_the_recommendation_it_would_override_and_its_lines() -> None:
    rules = [rule("avoid-oven", wrong="cook <X> in oven"), rule("roast-oven", correct="cook <X> in oven", when=["roast <X>"])]
    before = ["look", "cook milk in oven", "read cookbook"]
    looked = Step(index=0, action="look", observation="A kitchen.\nmilk", info={"valid_actions": before})
    after = ["cook red apple in oven", "cook milk in oven"]
    deliver = StepDelivery(rules, runs=[])
    deliver(task(before), [looked])
    assert [h.text for h in deliver.check(task(before), [looked], "cook milk in oven")] == ["Avoid `cook <X> in oven`"]
    history = [looked, Step(index=1, action="read cookbook", observation=RECIPE, info={"valid_actions": after})]
    shown = deliver(task(before), history)  # the pattern is paid for: the recommendation it covers is not held
    assert {h.text: h.precondition for h in shown} == {
        "Avoid `cook <X> in oven`": None, "Prefer `cook red apple in oven`": "when the task says `roast red apple`"}
    assert TextGameExecutor(seed=0).act(task(before), history, shown).action == "cook red apple in oven"
    assert deliver.check(task(before), history, "cook red apple in oven") == []


def test_a_recommendation_shown_with_a_pattern_is_not_shown_again_bare_and_a_stale_history_gets_no_answer() -> None:
    rules = [rule("avoid-oven", wrong="cook <X> in oven"), rule("roast-oven", correct="cook <X> in oven", when=["roast <X>"])]
    deliver = StepDelivery(rules, runs=[])
    history = taken(COOKS, "look")
    deliver(task([]), history)
    assert len(deliver.check(task([]), history, "cook milk in oven")) == 2  # the pattern and the bound recommendation
    assert deliver.check(task([]), history, "eat red apple") == []  # it already has the recommendation
    fresh = StepDelivery(rules, runs=[])
    fresh(task([]), history)
    assert fresh.check(task([]), taken(COOKS, "eat red apple"), "cook milk in oven") == []  # another history, same length
    assert fresh.check(task([]), taken(COOKS, "look"), "cook milk in oven") != []  # an equal one (rebuilt) is answered


CUT_RECIPE = "Ingredients:\n  red apple\n  milk\nDirections:\n  chop the red apple\n  prepare meal"
ONE_CUT = ["chop red apple", "slice red apple", "chop milk", "slice milk", "eat milk", "look"]


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


def test_recommendations_answered_together_are_one_line_and_a_list_is_not_a_procedure() -> None:
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


def _closed_door() -> ScoredItem:
    """An avoided episode as memory keeps one after a run wasted steps on an action that kept failing."""
    ep = Episode(episode_id="ep-door", namespace=("ns",), kind="avoidance", goal_signature=GOAL,
                 action_seq=["close door to north", "close door to west"],
                 summary="`close door to north` fails with: that is already closed. (3x in one run)")
    return ScoredItem(kind="episode", item=ep, score=0.5)


def test_an_avoidance_from_before_the_run_waits_for_a_proposal_it_quotes() -> None:
    door = ["close door to north", "close door to west", "look"]
    deliver = StepDelivery([], runs=[], avoidances=[_closed_door()])
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
    off = StepDelivery([], runs=[], config=DEFAULT_CONFIG.replace(textgames={"text_guard": "off"}), avoidances=[_closed_door()])
    off(task(door), history)
    assert off.check(task(door), history, "close door to north") == []  # no guard: the caller lists it before the run


def _procedure() -> ScoredItem:
    """A won attempt's procedure, longer than a compact line keeps."""
    steps = ["read cookbook", "take cookbook", "open fridge", "take red apple", "cook red apple in oven", "prepare meal"]
    ep = Episode(episode_id="ep-won", namespace=("ns",), kind="success", goal_signature=GOAL, action_seq=steps,
                 preconds_missing=["in the kitchen"])
    return ScoredItem(kind="episode", item=ep, score=0.5)


def test_the_design_holds_pre_run_avoidances_for_the_guard_and_hands_over_what_its_block_says(monkeypatch: pytest.MonkeyPatch) -> None:
    from langmem_plus.bench.designs.baselines import LangmemPlus

    for guard, listed in (("all", False), ("off", True)):
        design = LangmemPlus(config=DEFAULT_CONFIG.replace(textgames={"text_guard": guard}), delivery="triggered")
        try:
            monkeypatch.setattr(design.memory, "retrieve_pre_run", lambda *a, **k: [_procedure(), _closed_door()])
            ctx = design.general_retrieve(task(["close door to north"]), run_id="run-1")
            assert ("close door to north" in ctx.text) is listed
            assert ctx.step_hints is not None and bool(ctx.step_hints.avoidances) is not listed
            assert [i.item_id for i in design._triggered["run-1"][0]] == ["ep-won", "ep-door"]  # in force either way
            shown = ctx.text.splitlines()[1:]
            assert [f"- {json.dumps(h.text, ensure_ascii=False)}" for h in ctx.hints] == shown  # the reader gets the block's words, no more
            assert ctx.hints[0].text.endswith("…") and "open fridge" not in ctx.hints[0].text
            assert all(h.precondition is None for h in ctx.hints)  # a compact line shows none
        finally:
            design.close()
    tight = LangmemPlus(config=DEFAULT_CONFIG.replace(context={"max_context_tokens": 35}), delivery="triggered")
    try:  # a block with room for the procedure only: the avoidance it would not show is neither held nor in force
        monkeypatch.setattr(tight.memory, "retrieve_pre_run", lambda *a, **k: [_procedure(), _closed_door()])
        ctx = tight.general_retrieve(task(["close door to north"]), run_id="run-2")
        assert ctx.step_hints is not None and not ctx.step_hints.avoidances
        assert [i.item_id for i in tight._triggered["run-2"][0]] == ["ep-won"]
    finally:
        tight.close()


def test_a_pre_run_line_cut_short_keeps_whole_actions_a_reader_can_take_and_a_rewrite_keeps_its_quotes() -> None:
    from langmem_plus.textgames.executor import read_hint
    from langmem_plus.textgames.delivery import endorsed_actions, shown_hint

    wire = "connect red wire terminal 1 to battery cathode"
    ep = Episode(episode_id="ep-wire", namespace=("ns",), kind="success", goal_signature=GOAL,
                 action_seq=[wire, "focus on light bulb", "look around"])
    hint = shown_hint(ScoredItem(kind="episode", item=ep, score=0.5))
    assert f"`{wire}`" in hint.text and hint.text.endswith("…")  # the first step whole, the rest cut
    read_wire = read_hint(hint)
    assert read_wire is not None and [p.text for p in read_wire.patterns] == [wire]
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
    from langmem_plus.textgames.delivery import endorsed_actions, procedure_steps

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


def test_the_episode_loop_asks_memory_before_each_step_and_records_what_it_answered(cooking: TextGameEnv, tmp_path: Path) -> None:
    memory = LearningMemory.open(tmp_path / "m", namespace=("t", "guard"))
    lost = run_episode(cooking, Fixed(["read cookbook", "take red hot pepper", "eat red hot pepper"]), _task(cooking, "train-14"),
                       Context(), run_id="e1", max_steps=3)
    memory.general_update(lost)
    deliver = StepDelivery(memory.text_rules(cooking.name), memory.runs, memory.config)
    stubborn = Fixed(["read cookbook", "take salt", "eat salt"])  # asked again, it proposes the same action
    traj = run_episode(cooking, stubborn, _task(cooking, "train-2"), Context(step_hints=deliver), max_steps=3)
    assert "Avoid `eat <X>`" not in stubborn.seen[2] and "Avoid `eat <X>`" in stubborn.seen[3]  # answered at its proposal
    assert [s.info.get("guarded") for s in traj.steps] == [None, None, ["eat salt"]]
    assert len(stubborn.seen) == 4  # one more call for the one proposal answered, none for the others
    executor = TextGameExecutor(seed=0)
    for task_id in ("train-2", "train-6"):
        guarded = StepDelivery(memory.text_rules(cooking.name), memory.runs, memory.config)
        played = run_episode(cooking, executor, _task(cooking, task_id), Context(step_hints=guarded), max_steps=30)
        listed = listing(memory.text_rules(cooking.name), memory.runs, memory.config)
        reference = run_episode(cooking, executor, _task(cooking, task_id), Context(step_hints=listed), max_steps=30)
        assert not any(s.action.startswith("eat ") and s.action != "eat meal" for s in played.steps)
        assert played.verdict.passed == reference.verdict.passed and guarded.tokens <= listed.tokens
    memory.close()


# --------------------------------------------------------------------------- a real game


def _task(env: TextGameEnv, task_id: str) -> TaskSpec:
    env.reset(task_id)
    return TaskSpec(task_id=task_id, goal=env.goal, tool=env.name, domain=env.domain, family=env.family)


def test_a_rule_learned_on_one_ingredient_reaches_another_at_the_step_it_matters(cooking: TextGameEnv, tmp_path: Path) -> None:
    memory = LearningMemory.open(tmp_path / "m", namespace=("t", "triggered"))
    plays = [("c1", "train-18", ["read cookbook", "take yellow potato", "cook yellow potato in stove"]),  # chop, roast: lost
             ("c2", "train-18", ["read cookbook", "take yellow potato", "cook yellow potato in oven"]),
             ("c3", "train-20", ["read cookbook", "open fridge", "take orange bell pepper", "cook orange bell pepper in oven"])]
    for run_id, task_id, actions in plays:
        memory.general_update(run_episode(cooking, Fixed(actions), _task(cooking, task_id), Context(), run_id=run_id,
                                          max_steps=len(actions)))
    rules = [l for l in memory.list_lessons() if l.applies_when is not None]
    deliver = listing(rules, memory.runs, memory.config)
    agent = Fixed(["open fridge", "read cookbook", "take chicken wing"])  # dev-10001: roast the chicken wing, no chopping
    run_episode(cooking, agent, _task(cooking, "dev-10001"), Context(step_hints=deliver), max_steps=4)
    before_reading, after_reading, holding = agent.seen[1], agent.seen[2], agent.seen[3]
    assert not any("chicken wing" in h for h in before_reading)  # nothing names the chicken wing before the recipe is read
    assert "Prefer `take chicken wing`" in after_reading
    assert "Prefer `cook chicken wing in oven`" in holding  # learned on a potato and a pepper, grounded on the wing
    # the stove was fatal where the recipe said chop and roast; this one does not say chop, so that avoidance stays out
    assert not any("stove" in h for h in holding)
    assert deliver.tokens > 0 and {a.lesson_id for a in deliver.activations("x")} <= {l.id for l in rules}
    memory.close()


def test_the_bench_design_delivers_rules_by_step_and_measures_them_as_activations(cooking: TextGameEnv) -> None:
    from langmem_plus.bench.designs.baselines import LangmemPlus
    from langmem_plus.bench.env import _tasks, parse_range
    from langmem_plus.textgames.executor import TextGameExecutor

    design = LangmemPlus(delivery="triggered")
    try:
        ex = TextGameExecutor(seed=0)
        for t in _tasks(cooking, "train", parse_range("0-5")):
            design.general_update(run_episode(cooking, ex, t, Context(), run_id=f"c-{t.task_id}", max_steps=30))
        delivered_runs = shown_runs = 0
        for t in _tasks(cooking, "dev", parse_range("0-3")):
            ctx = design.general_retrieve(t, run_id=f"d-{t.task_id}")
            assert ctx.step_hints is not None and not any("txt_" in line for line in ctx.text.splitlines())  # no rule up front
            traj = run_episode(cooking, ex, t, ctx, run_id=f"d-{t.task_id}", max_steps=30)
            design.general_update(traj)
            run = design.memory.runs[-1]
            text_rules = {l.id for l in design.memory.list_lessons() if l.applies_when is not None}
            delivered = set(run.activated) & text_rules
            assert delivered == {a.lesson_id for a in ctx.step_hints.activations(run.run_id)}  # type: ignore[attr-defined]
            delivered_runs += bool(delivered)
            shown_runs += ctx.step_hints.tokens > 0
            assert ctx.tokens >= ctx.step_hints.tokens and (ctx.step_hints.tokens == 0 or delivered)
        assert delivered_runs >= shown_runs >= 1  # a rule followed unprompted is in force but costs nothing (rule 10)
    finally:
        design.close()


def test_an_avoidance_binds_what_the_game_shows_a_recommendation_only_the_task_text() -> None:
    shown = TaskSpec(task_id="t", goal=GOAL, tool="game", context={
        "observation": "You see:\n  a red hot pepper", "valid_actions": ["eat red hot pepper", "take red hot pepper"]})
    avoid, prefer = rule("eat", wrong="eat <X>"), rule("take", correct="take <X>")
    view = StepView.of(shown, [])
    pa, pp = rule_pattern(avoid), rule_pattern(prefer)
    assert pa is not None and pp is not None
    assert firings(avoid, pa, view) == ["eat red hot pepper"]  # the pepper may be anything: warn anyway
    assert firings(prefer, pp, view) == []  # no recipe names it: do not lure the agent to it


def test_a_condition_holds_only_within_one_clause_of_what_the_game_said() -> None:
    chop = rule("chop", correct="chop <X>", when=["chop <X>"])
    p = rule_pattern(chop)
    assert p is not None
    recipe = "Ingredients:\n  pork chop\n  block of cheese\nDirections:\n  chop the pork chop\n  roast the block of cheese"
    fridge = Step(index=1, action="open fridge", observation="The fridge contains a raw pork chop, a block of cheese.",
                  info={"valid_actions": ["chop pork chop", "chop block of cheese"]})
    view = StepView.of(task([]), [*read([], recipe), fridge])
    assert firings(chop, p, view) == ["chop pork chop"]  # "pork chop, a block of cheese" does not say "chop block of cheese"


def test_an_avoidance_of_a_thing_the_task_only_lists_holds_whatever_follows_the_thing() -> None:
    from langmem_plus.textgames.rules import learn_text_rules

    recipe = "Ingredients:\n  red apple\n  milk\nDirections:\n  roast the red apple\n  prepare meal"
    task_ = TaskSpec(task_id="a", goal=GOAL, tool="game")
    steps = [*read(COOKS + ["cook milk in toaster"]),
             Step(index=1, action="cook milk in toaster", observation="x", info={"valid_actions": []},
                  feedback=Feedback(constraint_failure=True, error_text="x"))]
    learned = learn_text_rules(namespace=("ns",), run_id="r1", task=task_, steps=steps, existing={}, now=0.0)
    assert [(l.wrong, l.applies_when) for l in learned.values()] == [("cook <X>", ["<X>"])]  # not only in the toaster
    hints = listing(list(learned.values()), runs=[])(task([]), read(COOKS, recipe))
    assert not allowed(hints, "cook milk in oven", recipe)  # milk is listed and nothing is said of it
    assert allowed(hints, "cook red apple in oven", recipe)  # the recipe says something of the red apple


def test_avoidances_withheld_while_a_recommendation_is_unfollowed_would_not_change_the_executors_choice() -> None:
    rules = [rule("avoid-stove", wrong="cook <X> in stove"), rule("roast-oven", correct="cook <X> in oven", when=["roast <X>"]),
             rule("avoid-eat", wrong="eat <X>"), rule("avoid-milk", wrong="cook <X> in oven", when=["<X>"])]
    from langmem_plus.learning.hints import hint_from_item
    from langmem_plus.records import ScoredItem
    every = [hint_from_item(ScoredItem(kind="lesson", item=r, score=1.0)) for r in rules]  # the old, uncut delivery
    ex = TextGameExecutor(seed=0)
    for valid in (COOKS, COOKS[1:], ["cook red apple in oven", "eat red apple"]):
        steps = read(valid)
        cut = listing(rules, runs=[])(task([]), steps)
        if any(h.text.startswith("Prefer") for h in cut):
            assert not any(h.text.startswith("Avoid") for h in cut)
        assert ex.act(task([]), steps, cut).action == ex.act(task([]), steps, every).action


FRY = "Ingredients:\n  red apple\nDirections:\n  fry the red apple\n  prepare meal"


def test_an_avoidance_of_a_command_never_seen_right_holds_beyond_the_situation_it_was_learned_in() -> None:
    """Rule 5: ``eat <X>`` was fatal when the task said ``roast <X>``; nothing ever recommended eating anything and no
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


def test_a_game_lost_to_eating_a_sliced_ingredient_warns_against_eating_another_recipes_one(cooking: TextGameEnv,
                                                                                            tmp_path: Path) -> None:
    memory = LearningMemory.open(tmp_path / "m", namespace=("t", "eat"))
    lost = run_episode(cooking, Fixed(["read cookbook", "take red hot pepper", "eat red hot pepper"]), _task(cooking, "train-14"),
                       Context(), run_id="e1", max_steps=3)  # train-14: slice the red hot pepper
    assert lost.steps[-1].feedback.constraint_failure
    memory.general_update(lost)
    learned = [l.applies_when for l in memory.text_rules(cooking.name) if l.wrong and l.wrong.startswith("eat")]
    assert learned and all(learned)  # learned in its situation (the recipe's line)
    deliver = listing(memory.text_rules(cooking.name), memory.runs, memory.config)
    agent = Fixed(["read cookbook", "take salt", "look"])  # train-2: salt, which no line of the recipe slices
    run_episode(cooking, agent, _task(cooking, "train-2"), Context(step_hints=deliver), max_steps=3)
    assert "Avoid `eat <X>`" in agent.seen[2]  # another situation; nothing ever said eating is right
    assert not allowed([Hint(text="Avoid `eat <X>`", source_id="e")], "eat salt", "Ingredients:\n  salt")
    memory.close()


def test_an_avoidance_learned_on_a_listed_only_thing_holds_where_the_task_says_more_of_it_once_the_command_uses_things_up() -> None:
    """Rule 5 on a bare placeholder: ``eat <X>`` was fatal on a thing the recipe listed and said nothing more of. Once
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


def test_a_game_lost_to_eating_a_listed_only_ingredient_warns_against_eating_a_sliced_one(cooking: TextGameEnv,
                                                                                          tmp_path: Path) -> None:
    memory = LearningMemory.open(tmp_path / "m", namespace=("t", "eat-listed"))
    lost = run_episode(cooking, Fixed(["read cookbook", "take salt", "eat salt"]), _task(cooking, "train-2"),
                       Context(), run_id="e1", max_steps=3)  # train-2: salt, which the recipe lists and does nothing to
    assert lost.steps[-1].feedback.constraint_failure
    memory.general_update(lost)
    learned = [l.applies_when for l in memory.text_rules(cooking.name) if l.wrong and l.wrong.startswith("eat")]
    assert learned == [["<X>"]]  # learned in its situation: listed, nothing more said
    ate = RunRecord(run_id="r0", namespace=("t", "eat-listed"), seq=0, task_id="x", tool=cooking.name,
                    extras={"textgames": {"consumed": ["eat"]}})
    for runs, warned in ((memory.runs, False), ([*memory.runs, ate], True)):  # a run that saw eating use a thing up
        deliver = listing(memory.text_rules(cooking.name), runs, memory.config)
        agent = Fixed(["read cookbook", "take red hot pepper", "look"])  # train-14: slice the red hot pepper
        run_episode(cooking, agent, _task(cooking, "train-14"), Context(step_hints=deliver), max_steps=3)
        assert ("Avoid `eat red hot pepper`" in agent.seen[2]) is warned
    memory.close()


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
    # right somewhere, so rule 6 does not apply; but right only where the task says `grill <X>`, it is not asked
    # here, and rule 7 avoids it as it would an unknown sibling
    assert avoided("dice the red apple", [*siblings, toaster, seen_right])
    assert not avoided("grill the red apple", [*siblings, toaster, seen_right])


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


HOLDING = ["eat red apple", "eat milk", "drop red apple", "drop milk", "take knife", "look"]
"""What is offered holding a red apple and milk, the knife at hand."""
CUTS = [f"{v} {thing}" for v in ("slice", "dice", "chop") for thing in ("red apple", "milk")]
"""What taking the knife offers on them."""


def knife_taken(recipe: str) -> list[Step]:
    """The recipe read, then the knife taken: its cuts first offered together, on the red apple and the milk."""
    return [Step(index=0, action="read cookbook", observation=recipe, info={"valid_actions": HOLDING}),
            Step(index=1, action="take knife", observation="You take the knife.",
                 info={"valid_actions": [*HOLDING[:4], *CUTS, "drop knife", "look"]})]


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


def test_a_real_game_whose_collection_never_held_the_knife_still_cuts_only_what_its_recipe_says(tmp_path: Path) -> None:
    pytest.importorskip("textworld_express")
    if shutil.which("java") is None:
        pytest.skip("the text games need a Java runtime")
    from langmem_plus.bench.env import _tasks, parse_range
    from langmem_plus.envs.registry import make_env
    from langmem_plus.textgames.direct import fatal_where_undirected, pattern_verb
    from langmem_plus.learning.textmatch import says_line
    from langmem_plus.textgames.rules import live_text_rules, task_text_lines

    env = make_env("twx-cooking:rooms3")
    memory = LearningMemory.open(tmp_path / "m", namespace=("t", "rule9"))
    ex = TextGameExecutor(seed=0)
    cuts = ("slice", "dice", "chop")
    try:
        for t in _tasks(env, "train", parse_range("0-5")):  # six memory-free games: they hold the knife, but teach no rule about cutting
            memory.general_update(run_episode(env, ex, t, Context(), run_id=f"c-{t.task_id}", max_steps=50))
        rules = [l for l in memory.list_lessons() if l.applies_when is not None]
        assert not any(pattern_verb(l) in cuts for l in rules)  # memory knows nothing about cutting
        assert fatal_where_undirected(live_text_rules(rules))  # but a stove that was fatal where the recipe did not fry
        # games the same memory lost to a cut: 7-8 before rule 9 read the recipe; 6 (its recipe cuts nothing), 11 and 23
        # (cut before the recipe was read) before it knew the tool's directive verbs
        for t in _tasks(env, "dev", [*parse_range("6-8"), 11, 23]):
            deliver = StepDelivery(rules, [r for r in memory.runs if r.tool == t.tool], memory.config)
            traj = run_episode(env, ex, t, Context(step_hints=deliver), max_steps=50)
            assert not any(s.feedback.constraint_failure for s in traj.steps), t.task_id
            taken = [(s.action, task_text_lines(str(t.context.get("goal") or t.goal), traj.steps[:s.index]))
                     for s in traj.steps if s.action.split()[0] in cuts]
            assert all(says_line(a, lines) for a, lines in taken), (t.task_id, taken)  # every cut the recipe's own, read
            offered = any(a.split()[0] in cuts for s in traj.steps for a in s.info.get("valid_actions") or [])
            said = [read_rule_line(json.loads(line[2:])) for line in deliver.lines]  # as a reader of the lines reads them
            assert offered == any(h.text.startswith("Avoid `") and h.precondition == "unless the task says so"
                                  and f"`{c} <X>`" in h.text for h in said for c in cuts)  # once the knife offers them
            assert traj.verdict is not None and traj.verdict.passed, t.task_id
            assert bool(taken) == (t.task_id != "dev-10006"), t.task_id  # its recipe cuts nothing
    finally:
        memory.close()
        env.close()


def test_a_proposal_answered_before_the_agent_gives_up_is_counted_though_no_step_follows(cooking: TextGameEnv, tmp_path: Path) -> None:
    from langmem_plus.bench.env import _row

    class Quitter(Fixed):
        """Plays its actions, but stops as soon as memory answers one of them."""

        def act(self, task: TaskSpec, history: Sequence[Step], hints: Sequence[Hint]) -> Decision:
            answered = any(h.text.startswith("Avoid") for h in hints)
            return Decision(kind="done") if answered and len(history) == 2 else super().act(task, history, hints)

    memory = LearningMemory.open(tmp_path / "m", namespace=("t", "quit"))
    memory.general_update(run_episode(cooking, Fixed(["read cookbook", "take red hot pepper", "eat red hot pepper"]),
                                      _task(cooking, "train-14"), Context(), run_id="e1", max_steps=3))
    deliver = StepDelivery(memory.text_rules(cooking.name), memory.runs, memory.config)
    traj = run_episode(cooking, Quitter(["read cookbook", "take salt", "eat salt"]), _task(cooking, "train-2"),
                       Context(step_hints=deliver), max_steps=3)
    assert [s.action for s in traj.steps] == ["read cookbook", "take salt"] and traj.guarded == ["eat salt"]
    assert _row(traj, Context(step_hints=deliver), 0.0)["guarded"] == 1
    memory.close()



class Obedient(Fixed):
    """Plays its script, but takes an action a hint recommends when the game offers it, saying which hint it took."""

    def act(self, task: TaskSpec, history: Sequence[Step], hints: Sequence[Hint]) -> Decision:
        decision = super().act(task, history, hints)
        valid = (history[-1].info if history else task.context).get("valid_actions", [])
        for hint in hints:
            found = re.match(r"Prefer `([^`]+)`", hint.text)
            if decision.kind == "command" and found and found.group(1) in valid:
                return Decision(kind="command", action=found.group(1), applied_hints=(hint.source_id,))
        return decision


@pytest.mark.parametrize("appliance, progress, sign", [("oven", True, 1), ("oven", False, 0), ("stove", True, -1)])
def test_a_text_rule_is_judged_by_what_the_step_it_shaped_did_to_the_game(
    cooking: TextGameEnv, appliance: str, progress: bool, sign: int
) -> None:
    """A recommendation the agent followed earns by the score its step gained (when progress is an outcome), and
    pays for the game its step lost."""
    from langmem_plus.bench.designs.baselines import LangmemPlus

    design = LangmemPlus(delivery="triggered", config=DEFAULT_CONFIG.replace(lifecycle={"outcome_from_progress": progress}))
    try:
        for run_id, task_id, actions in [
            ("c2", "train-18", ["read cookbook", "take yellow potato", "cook yellow potato in oven"]),
            ("c3", "train-20", ["read cookbook", "open fridge", "take orange bell pepper", "cook orange bell pepper in oven"])]:
            design.general_update(run_episode(cooking, Fixed(actions), _task(cooking, task_id), Context(), run_id=run_id,
                                              max_steps=len(actions)))
        memory = design.memory
        [rule_] = [l for l in memory.list_lessons() if l.correct == "cook <X> in oven"]
        assert rule_.applies_when == ["roast <X>"]
        if appliance != "oven":  # the same rule with the wrong appliance, as feedback that lied would have taught it
            memory.add_lessons([rule_.model_copy(update={
                "correct": f"cook <X> in {appliance}", "rule_text": rule_.rule_text.replace("oven", appliance)})])
        task = _task(cooking, "dev-10001")  # roast the chicken wing: the rule's ingredient was never this one
        agent = Obedient(["open fridge", "read cookbook", "take chicken wing", "cook chicken wing in toaster", "prepare meal"])
        traj = run_episode(cooking, agent, task, design.general_retrieve(task, run_id="d1"), run_id="d1", max_steps=5)
        [shaped] = [s for s in traj.steps if rule_.id in s.info.get("applied_hints", [])]  # the guard offered it
        assert shaped.action == f"cook chicken wing in {appliance}"
        assert (shaped.feedback.reward > 0) if sign >= 0 else shaped.feedback.constraint_failure
        design.general_update(traj)
        kept = memory.get_lesson(rule_.id)
        assert kept is not None
        if sign == 0:  # its step scored, but nothing else judged it: without progress as an outcome, no evidence
            assert kept.stats.utility_window == []
        else:
            [utility] = kept.stats.utility_window
            assert utility * sign > 0, utility
    finally:
        design.close()
