"""Avoidances of what the task does not name: a fatal action on something the goal never
names teaches "avoid <verb> <X> when the task does not name X", which then applies to other objects."""

from __future__ import annotations


import pytest

from fixed_executor import Fixed
from langmem_plus import LearningMemory
from langmem_plus.bench.designs.base import Context, run_episode
from langmem_plus.textgames.executor import TextGameExecutor, read_hint
from langmem_plus.learning.hints import hint_from_item
from langmem_plus.textgames.learn import learn_text_rules
from langmem_plus.textgames.rules import is_read, live_text_rules
from langmem_plus.records import Feedback, Hint, ScoredItem, Step, TaskSpec
from langmem_plus.memory import Trajectory
from listing import listing

GOAL = "Your task is to find a living thing and to move it to the red box."
"""A goal that names the thing's destination but directs no command by name (no clause opens with one)."""
ROOM = "This room is called the hallway. In it, you see:\n\ta door to the kitchen\n\ta substance called air\n\tthe red box"


def _run() -> tuple[TaskSpec, list[Step]]:
    task = TaskSpec(task_id="t1", goal=GOAL, tool="game", context={"observation": ROOM, "valid_actions": ["look around"]})
    valid = ["focus on door to kitchen", "focus on air", "focus on red box", "look around"]
    steps = [
        Step(index=0, action="look around", observation=ROOM, info={"valid_actions": valid}),
        Step(index=1, action="focus on door to kitchen", observation="You focus on the door.", info={"valid_actions": valid},
             feedback=Feedback(constraint_failure=True, error_text="fatal")),
    ]
    return task, steps


def test_fatal_action_on_an_unnamed_thing_teaches_a_negative_avoidance() -> None:
    task, steps = _run()
    learned = learn_text_rules(namespace=("ns",), run_id="r1", task=task, steps=steps, existing={}, now=0.0)
    rules = {(l.wrong, tuple(l.applies_when or ())) for l in learned.values()}
    assert rules == {("focus on <X>", ("!<X>",))}


def test_look_around_is_not_reading_the_task() -> None:
    assert not is_read(Step(index=0, action="look around", observation=ROOM), {"around", "look"})
    assert is_read(Step(index=0, action="read recipe", observation="Directions"), {"recipe"})


def test_executor_avoids_other_unnamed_objects_but_not_goal_named_ones_and_yields_to_a_recommendation() -> None:
    task, steps = _run()
    learned = learn_text_rules(namespace=("ns",), run_id="r1", task=task, steps=steps, existing={}, now=0.0)
    hint = hint_from_item(ScoredItem(kind="lesson", item=next(iter(learned.values())), score=1.0))
    assert hint.precondition == "when the task does not name `<X>`"
    read = read_hint(hint)
    assert read is not None and read.avoid and read.conditions == ("!<X>",)
    other = TaskSpec(task_id="t2", goal=GOAL, context={
        "observation": "In it, you see:\n\ta chair\n\tthe thing", "valid_actions": ["focus on chair", "focus on thing"]})
    ex = TextGameExecutor(seed=0)
    assert ex.act(other, [], [hint]).action == "focus on thing"  # the chair is avoided, the goal's thing is not
    assert ex.act(other, [], []).action in {"focus on chair", "focus on thing"}
    prefer = Hint(text="Prefer `focus on <X>`", precondition="when the task says `a <X>`", source_id="p")
    chair = TaskSpec(task_id="t3", goal=GOAL, context={"observation": "In it, you see:\n\ta chair",
                                                        "valid_actions": ["focus on chair", "wait"]})
    assert ex.act(chair, [], [hint]).action == "wait"
    assert ex.act(chair, [], [hint, prefer]).action == "focus on chair"  # a positive condition beats the default


def test_triggered_delivery_shows_the_default_avoidance_once_as_its_pattern() -> None:
    task, steps = _run()
    learned = learn_text_rules(namespace=("ns",), run_id="r1", task=task, steps=steps, existing={}, now=0.0)
    deliver = listing(list(learned.values()), runs=[])
    other = TaskSpec(task_id="t2", goal=GOAL, tool="game", context={
        "observation": "In it, you see:\n\ta chair\n\ta table",
        "valid_actions": ["focus on chair", "focus on table", "focus on red box"]})
    hints = deliver(other, [])
    assert [h.text for h in hints] == ["Avoid `focus on <X>`"]
    assert hints[0].precondition == "when the task does not name `<X>`"


def test_a_fatal_action_on_a_goal_named_thing_is_learned_under_its_goal_role_and_binds_the_next_goals_thing() -> None:
    goal_a = "Find a living thing and move it to the red box in the kitchen."
    goal_b = "Find a living thing and move it to the green box in the bedroom."
    task = TaskSpec(task_id="a", goal=goal_a, tool="game", context={"observation": ROOM})
    steps = [Step(index=0, action="focus on red box", observation="You focus on the red box.",
                  info={"valid_actions": ["focus on red box"]}, feedback=Feedback(constraint_failure=True, error_text="x"))]
    learned = learn_text_rules(namespace=("ns",), run_id="r1", task=task, steps=steps, existing={}, now=0.0)
    assert {(l.wrong, tuple(l.applies_when or ())) for l in learned.values()} == {("focus on <X>", ("it to <X>",))}
    deliver = listing(list(learned.values()), runs=[])
    other = TaskSpec(task_id="b", goal=goal_b, tool="game", context={
        "observation": f"Goal: {goal_b}\nIn it, you see:\n\tthe green box\n\tthe red box",
        "valid_actions": ["focus on green box", "focus on red box"]})
    assert [h.text for h in deliver(other, [])] == ["Avoid `focus on green box`"]  # this goal's box, not the old one


def test_no_role_rule_when_the_goal_asks_for_the_action_itself() -> None:
    goal = "First, focus on the thermometer. Then focus on the orange box."
    task = TaskSpec(task_id="a", goal=goal, tool="game", context={"observation": ROOM})
    steps = [Step(index=0, action="focus on orange box", observation="x", info={"valid_actions": []},
                  feedback=Feedback(constraint_failure=True, error_text="x"))]
    learned = learn_text_rules(namespace=("ns",), run_id="r1", task=task, steps=steps, existing={}, now=0.0)
    assert [l.wrong for l in learned.values()] == ["focus on orange box"]  # only the literal: no rule for every box


def test_undirected_use_fatal_for_one_directed_command_is_extended_to_its_kin() -> None:
    recipe = "Ingredients:\n  red apple\n\nDirections:\n  {verb} the red apple\n  roast the red apple"
    valid = ["read cookbook", "dice red apple", "chop red apple", "slice red apple", "cook red apple in oven"]
    existing: dict = {}

    def run(run_id: str, verb: str, action: str, fatal: bool) -> dict:
        task = TaskSpec(task_id=run_id, goal="Check the cookbook for the recipe.", tool="game")
        steps = [Step(index=0, action="read cookbook", observation=recipe.format(verb=verb), info={"valid_actions": valid}),
                 Step(index=1, action=action, observation="x", info={"valid_actions": valid},
                      feedback=Feedback(constraint_failure=True, error_text="x") if fatal else Feedback(reward=0.1))]
        learned = learn_text_rules(namespace=("ns",), run_id=run_id, task=task, steps=steps, existing=existing, now=0.0)
        existing.update(learned)
        return learned

    run("a", "dice", "dice red apple", fatal=False)   # dice is directed and done: a recommendation
    run("b", "chop", "chop red apple", fatal=False)   # so is chop
    before_any_loss = {l.wrong: l.applies_when for l in existing.values() if l.wrong}
    assert before_any_loss == {"dice <X>": ["!dice <X>"], "chop <X>": ["!chop <X>"]}  # right where directed: not elsewhere
    run("c", "slice", "dice red apple", fatal=True)   # dicing where slicing was directed: fatal
    run("d", "slice", "dice red apple", fatal=True)
    undirected = {l.wrong for l in existing.values() if l.wrong and l.retrievable and l.applies_when == [f"!{l.wrong}"]}
    assert {"dice <X>", "chop <X>"} <= undirected  # chop never failed, but it is a command of the same kind
    assert not any(l.wrong == "dice <X>" and l.applies_when != ["!dice <X>"] for l in live_text_rules(list(existing.values())))
    # the undirected rule fires where the task does not say the action, and not where it does
    rules = [l for l in existing.values() if l.retrievable]
    cuts = ["dice red apple", "chop red apple", "slice red apple"]
    for verb, avoided in (("slice", {"Avoid `chop <X>`", "Avoid `dice <X>`"}), ("chop", {"Avoid `dice <X>`"})):
        task = TaskSpec(task_id="t", goal="Check the cookbook for the recipe.", tool="game", context={"valid_actions": valid})
        seen = [Step(index=0, action="read cookbook", observation=recipe.format(verb=verb), info={"valid_actions": cuts})]
        hints = listing(rules, runs=[])(task, seen)
        if any(h.text.startswith("Prefer") for h in hints):  # the directed cut is recommended: avoidances wait
            assert not any(h.text.startswith("Avoid") for h in hints)
        assert TextGameExecutor(seed=0).act(task, seen, hints).action == f"{verb} red apple"  # only the directed cut
        done = [*seen, Step(index=1, action=f"{verb} red apple", observation="Done.", info={"valid_actions": cuts})]
        hints = listing(rules, runs=[])(task, done)
        assert {h.text for h in hints if h.text.startswith("Avoid")} == avoided  # one line per rule, not per thing


def test_a_rule_inferred_from_a_promoted_one_starts_as_a_candidate_with_no_counters() -> None:
    recipe = "Ingredients:\n  red apple\n\nDirections:\n  dice the red apple\n  roast the red apple"
    valid = ["read cookbook", "dice red apple", "cook red apple in oven"]
    task = TaskSpec(task_id="a", goal="Check the cookbook for the recipe.", tool="game")
    steps = [Step(index=0, action="read cookbook", observation=recipe, info={"valid_actions": valid}),
             Step(index=1, action="dice red apple", observation="x", info={"valid_actions": valid}, feedback=Feedback(reward=0.1))]
    learned = learn_text_rules(namespace=("ns",), run_id="a", task=task, steps=steps, existing={}, now=0.0)
    (prefer,) = [l for l in learned.values() if l.correct == "dice <X>"]
    earned = prefer.model_copy(update={"status": "promoted", "stats": prefer.stats.model_copy(update={"activations": 9, "helped": 5})})
    again = learn_text_rules(namespace=("ns",), run_id="b", task=task.model_copy(update={"task_id": "b"}), steps=steps,
                             existing={prefer.id: earned}, now=1.0)
    (inferred,) = [l for l in again.values() if l.wrong == "dice <X>"]  # avoided where undirected: inferred, not seen
    assert inferred.applies_when == ["!dice <X>"] and inferred.status == "candidate"
    assert (inferred.stats.activations, inferred.stats.helped) == (0, 0) and "a" in inferred.provenance.run_ids


def test_a_condition_that_names_another_command_leaves_the_rule_once_that_command_is_known() -> None:
    recipe = "Ingredients:\n  red apple\n\nDirections:\n  {a} the red apple\n  {b} the red apple"
    with_knife = ["read cookbook", "slice red apple", "cook red apple in oven", "cook red apple in toaster"]
    existing: dict = {}

    def run(run_id: str, a: str, b: str, action: str, fatal: bool, offered: list[str]) -> None:
        task = TaskSpec(task_id=run_id, goal="Check the cookbook for the recipe.", tool="game")
        steps = [Step(index=0, action="read cookbook", observation=recipe.format(a=a, b=b), info={"valid_actions": offered}),
                 Step(index=1, action=action, observation="x", info={"valid_actions": offered},
                      feedback=Feedback(constraint_failure=True, error_text="x") if fatal else Feedback(reward=0.1))]
        existing.update(learn_text_rules(namespace=("ns",), run_id=run_id, task=task, steps=steps, existing=existing, now=0.0))

    # slicing is not offered (no knife): nothing says `slice <X>` is a command, so its line stays in the situation
    run("a", "roast", "slice", "cook red apple in toaster", True, with_knife[:1] + with_knife[2:])
    assert [l.applies_when for l in live_text_rules(list(existing.values()))] == [["roast <X>", "slice <X>"]]
    run("b", "slice", "fry", "slice red apple", False, with_knife)  # slice is a command the task directs
    live = {l.wrong or l.correct: l for l in live_text_rules(list(existing.values()))}
    toaster = live["cook <X> in toaster"]
    assert toaster.applies_when == ["roast <X>"] and toaster.provenance.run_ids == ["a"] and len(toaster.supersedes) == 1
    # the narrow rule is retired: delivery shows the revised one where the task says roast and nothing of slicing
    task = TaskSpec(task_id="t", goal="Check the cookbook for the recipe.", tool="game")
    seen = [Step(index=0, action="read cookbook", observation="Directions:\n  roast the red apple", info={"valid_actions": with_knife})]
    hints = listing(list(existing.values()), runs=[])(task, seen)
    # (cooking was never seen right: it holds anywhere, shown once as its pattern, never_seen_right)
    assert [h.source_id for h in hints if h.text == "Avoid `cook <X> in toaster`"] == [toaster.id]


def test_an_unnamed_instrument_of_what_the_goal_names_is_the_thing_avoided_in_a_real_textworld_game(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    pytest.importorskip("textworld")
    from langmem_plus.envs.tw import TwEnv

    with TwEnv("cooking", "default", cache=tmp_path_factory.mktemp("tw-games")) as env:  # generates two games
        def task(task_id: str) -> TaskSpec:
            env.reset(task_id)
            return TaskSpec(task_id=task_id, goal=env.goal, tool=env.name, domain=env.domain)

        burnt = run_episode(env, Fixed(["prepare meal", "cook meal with stove", "cook meal with oven"]), task("train-0"),
                            Context(), run_id="c1", max_steps=3)
        assert burnt.steps[-1].feedback.constraint_failure and "meal" in burnt.task.goal  # the goal's meal, burnt
        memory = LearningMemory.open(tmp_path_factory.mktemp("m"), namespace=("t", "instrument"))
        memory.general_update(burnt)
        rules = {(l.wrong, tuple(l.applies_when or ())) for l in live_text_rules(memory.list_lessons()) if l.wrong}
        assert rules == {("cook meal with <X>", ("!<X>",))}  # not "cook <X>" with X = "meal with oven"
        other = task("test-20000")
        prepared = run_episode(env, Fixed(["prepare meal"]), other, Context(), run_id="d1", max_steps=1)
        cook_meal = [a for a in prepared.steps[-1].info["valid_actions"] if a.startswith("cook meal with")]
        assert cook_meal  # the game offers to cook the meal it just made, with each appliance
        hints = [Hint.model_validate(h) for h in memory.general_retrieve(Trajectory(task=prepared.task, run_id="d2"))["hints"]]
        last = prepared.steps[-1]  # offered only the meal's cooking and a look around
        steps = [last.model_copy(update={"info": {**last.info, "valid_actions": [*cook_meal, "look"]}})]
        ex = [TextGameExecutor(seed=s) for s in range(4)]
        assert {e.act(prepared.task, steps, hints).action for e in ex} == {"look"}
        assert {e.act(prepared.task, steps, []).action for e in ex} <= set(cook_meal)  # without the rule, it cooks
        memory.close()


def test_only_a_preposition_after_a_goal_named_object_opens_its_instrument_and_function_words_name_nothing() -> None:
    from langmem_plus.textgames.entities import unnamed_entity

    shown = ["You see an oven, some water, some salt and a pot.", "You are in the kitchen. Look around."]
    goal = "Boil the water. Then cook a meal."
    assert unnamed_entity("pour water in pot", shown, goal) == ("pour water in <X>", {"X": "pot"})
    assert unnamed_entity("cook meal with oven", shown, goal) == ("cook meal with <X>", {"X": "oven"})
    # "and" joins a second object, not an instrument: the whole object stays the unnamed thing
    assert unnamed_entity("mix water and salt", shown, goal) == ("mix <X>", {"X": "water and salt"})
    assert unnamed_entity("look around", shown, goal) is None  # no thing at all
