"""Commands the goal directs: a fatal action of a command the goal itself directs ("First, focus
on the thing."), on anything the goal did not direct it to, teaches one avoidance of that command wherever the task
does not say it; a command fatal although the goal directed it (done too early) keeps its situation.

The goals and the room below are ScienceWorld's own messages (find-living-thing and use-thermometer, easy
simplifications), copied from real runs."""

from __future__ import annotations

from langmem_plus.textgames.executor import TextGameExecutor, read_hint
from langmem_plus.learning.hints import hint_from_item
from langmem_plus.textgames.entities import goal_directed
from langmem_plus.textgames.learn import learn_text_rules
from langmem_plus.textgames.rules import live_text_rules
from langmem_plus.records import Feedback, Lesson, ScoredItem, Step, TaskSpec
from listing import listing

FIND_A = "Your task is to find a(n) living thing. First, focus on the thing. Then, move it to the red box in the bathroom."
FIND_B = "Your task is to find a(n) living thing. First, focus on the thing. Then, move it to the purple box in the living room."
MEASURE_A = ("Your task is to measure the temperature of unknown substance B, which is located around the living room. "
             "First, focus on the thermometer. Next, focus on the unknown substance B. If the unknown substance B "
             "temperature is above 100.0 degrees celsius, place it in the red box. If the unknown substance B temperature "
             "is below 100.0 degrees celsius, place it in the green box. The boxes are located around the bathroom.")
MEASURE_B = ("Your task is to measure the temperature of wood, which is located around the bedroom. First, focus on the "
             "thermometer. Next, focus on the wood. If the wood temperature is above 50.0 degrees celsius, place it in the "
             "orange box. If the wood temperature is below 50.0 degrees celsius, place it in the yellow box. The boxes are "
             "located around the kitchen.")
STAGES = "Your task is to focus on the 4 life stages of the butterfly, starting from earliest to latest."
HALLWAY = ("This room is called the hallway. In it, you see: \n\tthe agent\n\ta substance called air\n\ta picture\n"
           "You also see:\n\tA door to the art studio (that is open)\n\tA door to the bedroom (that is open)\n"
           "\tA door to the living room (that is open)")


def _fatal(run_id: str, goal: str, action: str, existing: dict[str, Lesson]) -> dict[str, Lesson]:
    """Fold one run (look around, then the fatal ``action``) into ``existing`` and return it."""
    valid = ["look around", action]
    task = TaskSpec(task_id=run_id, goal=goal, tool="sciworld", context={"observation": f"Goal: {goal}\n{HALLWAY}"})
    steps = [Step(index=0, action="look around", observation=HALLWAY, info={"valid_actions": valid}),
             Step(index=1, action=action, observation=f"You {action}.", info={"valid_actions": valid},
                  feedback=Feedback(constraint_failure=True, error_text="fatal"))]
    existing.update(learn_text_rules(namespace=("ns",), run_id=run_id, task=task, steps=steps, existing=existing, now=0.0))
    return existing


def _task(goal: str, valid: list[str]) -> TaskSpec:
    return TaskSpec(task_id="new", goal=goal, tool="sciworld", context={"observation": f"Goal: {goal}\n{HALLWAY}",
                                                                         "valid_actions": valid})


def test_goal_directed_needs_a_clause_opening_with_the_command_and_not_saying_the_action() -> None:
    assert goal_directed("focus on air", FIND_A) == ("focus on <X>", ["!focus on <X>"])
    assert goal_directed("focus on red box", FIND_A) == ("focus on <X>", ["!focus on <X>"])  # named, in another role
    assert goal_directed("focus on thermometer", MEASURE_A) is None  # the goal says it
    assert goal_directed("focus on air", "You are hungry! Let's cook a delicious meal. Check the cookbook.") is None
    assert goal_directed("look around", FIND_A) is None  # no such command in the goal
    assert goal_directed("focus on butterfly", STAGES) == ("focus on <X>", ["!focus on <X>"])  # "is to focus on ..."
    assert goal_directed("focus on air", "Your task is to find the coin. Focus groups meet here.") is None


def test_fatal_focuses_on_unnamed_and_goal_named_things_become_one_rule_that_guards_the_next_goals_rooms() -> None:
    memory: dict[str, Lesson] = {}
    _fatal("r1", FIND_A, "focus on air", memory)
    _fatal("r2", FIND_A, "focus on red box", memory)  # named by the goal, as the destination
    live = live_text_rules(list(memory.values()))
    assert [(l.wrong, l.applies_when, sorted(l.provenance.run_ids)) for l in live] == [
        ("focus on <X>", ["!focus on <X>"], ["r1", "r2"])]
    valid = ["focus on living room", "focus on purple box", "focus on picture", "focus on thing", "look around"]
    hints = listing(live, runs=[])(_task(FIND_B, valid), [])
    assert [(h.text, h.precondition) for h in hints] == [("Avoid `focus on <X>`", "unless the task says so")]
    ex = TextGameExecutor(seed=0)
    task = _task(FIND_B, [a for a in valid if a != "focus on thing"])
    assert ex.act(task, [], hints).action == "look around"  # the goal's room and box, and the picture, are avoided
    assert ex.act(_task(FIND_B, valid), [], hints).action == "focus on thing"  # what the goal directs is not


def test_a_command_fatal_although_directed_keeps_its_situation_beside_the_undirected_rule() -> None:
    memory: dict[str, Lesson] = {}
    _fatal("r1", MEASURE_A, "focus on unknown substance", memory)  # directed, but before the thermometer
    _fatal("r2", MEASURE_A, "focus on air", memory)  # not directed
    live = {frozenset(l.applies_when or ()) for l in live_text_rules(list(memory.values()))}
    assert live == {frozenset({"focus on <X>", "temperature of <X>"}), frozenset({"!focus on <X>"})}  # the first is not rewritten as undirected
    rules = live_text_rules(list(memory.values()))
    valid = ["focus on thermometer", "focus on wood", "focus on bedroom", "look around"]
    hints = listing(rules, runs=[])(_task(MEASURE_B, valid), [])
    read = [read_hint(h) for h in hints]
    assert all(r is not None and r.avoid for r in read)
    ex = TextGameExecutor(seed=0)
    assert ex.act(_task(MEASURE_B, valid), [], hints).action == "focus on thermometer"
    assert ex.act(_task(MEASURE_B, valid[1:]), [], hints).action == "look around"  # the wood and the room are avoided
    # the executor reads the undirected rule alone the same way (as a pattern, no grounding by delivery)
    undirected = next(l for l in rules if l.applies_when == ["!focus on <X>"])
    hint = hint_from_item(ScoredItem(kind="lesson", item=undirected, score=1.0))
    assert ex.act(_task(MEASURE_B, ["focus on bedroom", "look around"]), [], [hint]).action == "look around"
    assert ex.act(_task(MEASURE_B, ["focus on thermometer", "look around"]), [], [hint]).action == "focus on thermometer"


def test_a_condition_on_the_rules_own_pattern_is_said_short_and_read_as_the_long_form() -> None:
    own = Lesson(id="o", namespace=("ns",), rule_text="AVOID: chop <X>", wrong="chop <X>", applies_when=["!chop <X>"])
    other = Lesson(id="d", namespace=("ns",), rule_text="AVOID: dice <X>", wrong="dice <X>", applies_when=["!chop <X>"])
    short = hint_from_item(ScoredItem(kind="lesson", item=own, score=1.0))
    long = hint_from_item(ScoredItem(kind="lesson", item=other, score=1.0))
    assert (short.text, short.precondition) == ("Avoid `chop <X>`", "unless the task says so")
    assert long.precondition == "when the task does not say `chop <X>`"  # another line is quoted
    spelled = short.model_copy(update={"precondition": "when the task does not say `chop <X>`"})
    short_read, spelled_read = read_hint(short), read_hint(spelled)
    assert short_read is not None and spelled_read is not None
    assert short_read.conditions_of(short_read.patterns[0]) == spelled_read.conditions_of(spelled_read.patterns[0]) == ("!chop <X>",)
    recipe = [Step(index=0, action="read cookbook", observation="Directions:\n  chop the carrot\n  fry the leek",
                   info={"valid_actions": ["chop carrot", "chop leek", "look"]})]
    task = TaskSpec(task_id="t", goal="Cook a meal. Check the cookbook.", tool="game",
                    context={"valid_actions": ["chop carrot", "chop leek", "look"]})
    ex = TextGameExecutor(seed=0)
    assert ex.act(task, recipe, [short]).action == "chop carrot"  # said: open
    leek = [recipe[0].model_copy(update={"info": {"valid_actions": ["chop leek", "look"]}})]
    assert ex.act(task, leek, [short]).action == "look"  # not said: avoided
