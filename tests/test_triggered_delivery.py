"""Observation-triggered delivery of text rules (``textgames.delivery``): what fires when, ranking, budget, a real game."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Sequence
from pathlib import Path

import pytest
from fixed_executor import Fixed
from listing import listing
from text_rule_cases import (
    COOKS,
    GOAL,
    allowed,
    read,
    rule,
    taken,
    task,
)

from langmem_plus import LearningMemory
from langmem_plus.bench.designs.base import Context, run_episode
from langmem_plus.config import DEFAULT_CONFIG
from langmem_plus.envs.textgame import TextGameEnv
from langmem_plus.executors.base import Decision
from langmem_plus.records import (
    Feedback,
    Hint,
    RunRecord,
    Step,
    TaskSpec,
)
from langmem_plus.retrieval.rule_lines import read_rule_line
from langmem_plus.textgames.delivery import StepDelivery, rule_utility
from langmem_plus.textgames.executor import TextGameExecutor
from langmem_plus.textgames.trigger import StepView, firings, rule_pattern


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
    assert texts["Avoid `cook milk in oven`"] == "avoid-oven"  # with its exception known, grounded where it holds
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
        assert delivered_runs >= shown_runs >= 1  # a rule followed unprompted is in force but costs nothing (the guard)
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
    from langmem_plus.textgames.learn import learn_text_rules

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


def test_a_real_game_whose_collection_never_held_the_knife_still_cuts_only_what_its_recipe_says(tmp_path: Path) -> None:
    pytest.importorskip("textworld_express")
    if shutil.which("java") is None:
        pytest.skip("the text games need a Java runtime")
    from langmem_plus.bench.env import _tasks, parse_range
    from langmem_plus.envs.registry import make_env
    from langmem_plus.learning.textmatch import says_line
    from langmem_plus.textgames.direct import fatal_where_undirected, pattern_verb
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
        # games the same memory lost to a cut: 7-8 before kin_in_attempt read the recipe; 6 (its recipe cuts nothing), 11 and 23
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
