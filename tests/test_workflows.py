"""Workflows induced from trajectories: slots from what differs, grounding on offered actions, recovery, storage.

The trajectories here are small, hand-made ones in the shape a text game gives (the ScienceWorld test plays real
gold trajectories); every assertion is about what induction or grounding decided, which a wrong alignment, slot or
binding would change.
"""

from __future__ import annotations

from langmem_plus.learning.procedures import group_by_kind, matching, suppressed, workflow_of, workflow_skill
from langmem_plus.learning.workflows import (
    Demonstration,
    DemoStep,
    Workflow,
    WorkflowStep,
    against,
    bind_goal,
    fold_loops,
    ground,
    induce_workflow,
    progress,
)
from langmem_plus.records import SkillStats


def demo(goal: str, *actions: str, scores: dict[int, float] | None = None) -> Demonstration:
    scores = scores or {}
    return Demonstration(goal, tuple(DemoStep(a, score=scores.get(i)) for i, a in enumerate(actions)))


PAINT = [
    demo("Your task is to create green paint. Then focus on the green paint.",
         "open door to hallway", "go to hallway", "go to art studio", "pour blue paint in jug", "pour yellow paint in jug",
         "mix jug", "focus on green paint", scores={5: 0.5, 6: 1.0}),
    demo("Your task is to create orange paint. Then focus on the orange paint.",
         "go to art studio", "look around", "pour red paint in bowl", "pour yellow paint in bowl", "mix bowl",
         "focus on orange paint", scores={4: 0.5, 5: 1.0}),
]


def test_two_variations_give_goal_slots_and_step_slots() -> None:
    wf = induce_workflow(PAINT)
    assert wf.goal == "your task is to create <A> paint then focus on <A> paint"
    assert [s.action for s in wf.steps] == [
        "go to art studio", "pour <Z> paint in <Y>", "pour yellow paint in <Y>", "mix <Y>", "focus on <A> paint"]
    assert wf.values["A"] == ("green", "orange") and wf.values["Y"] == ("jug", "bowl")
    assert [s.progress for s in wf.steps] == [False, False, False, True, True]
    assert wf.sources == 2


def test_one_trajectory_gives_a_workflow_with_fewer_slots() -> None:
    wf = induce_workflow(PAINT[:1])
    assert wf.goal == "your task is to create <A> then focus on <A>"
    assert wf.values == {"A": ("green paint",)}
    assert [s.action for s in wf.steps][-1] == "focus on <A>"
    assert "pour blue paint in jug" in [s.action for s in wf.steps]  # nothing to tell a slot there from


def test_loops_fold_into_one_repeated_step() -> None:
    assert fold_loops(["a", "b", "a", "b", "a", "b", "c"], 3) == [("a", True), ("b", True), ("c", False)]
    wf = induce_workflow([demo("heat the water", "take pot", "look", "measure", "look", "measure", "done")])
    assert [(s.action, s.repeat) for s in wf.steps] == [("take pot", False), ("look", True), ("measure", True),
                                                        ("done", False)]


def test_grounding_binds_goal_slots_from_the_task_and_step_slots_from_the_attempt() -> None:
    wf = induce_workflow(PAINT)
    goal = "Your task is to create violet paint. Then focus on the violet paint."
    offered = ["go to art studio", "look around", "pour red paint in cup", "pour yellow paint in cup", "mix cup",
               "focus on violet paint", "focus on red paint"]
    assert bind_goal(wf, goal) == {"A": "violet"}
    first = ground(wf, goal, [], offered)
    assert first is not None and (first.action, first.how) == ("go to art studio", "step")
    # the attempt poured into a cup: the cup is the container of every later step
    at, bound = progress(wf, {"A": "violet"}, ["go to art studio", "pour red paint in cup"])
    assert at == 2 and bound["Y"] == "cup"
    nxt = ground(wf, goal, ["go to art studio", "pour red paint in cup"], offered)
    assert nxt is not None and nxt.action == "pour yellow paint in cup"
    last = ground(wf, goal, ["go to art studio", "pour red paint in cup", "pour yellow paint in cup", "mix cup"], offered)
    assert last is not None and last.action == "focus on violet paint"


def test_an_unbound_slot_takes_a_value_the_trajectories_gave_it_among_those_offered() -> None:
    wf = induce_workflow(PAINT)
    goal = "Your task is to create violet paint. Then focus on the violet paint."
    got = ground(wf, goal, ["go to art studio"], ["pour red paint in tin", "pour blue paint in jug", "look around"])
    assert got is not None and got.action == "pour blue paint in jug"


def test_a_goal_of_another_kind_does_not_fit() -> None:
    wf = induce_workflow(PAINT)
    assert bind_goal(wf, "Your task is to boil water.") is None
    assert ground(wf, "Your task is to boil water.", [], ["go to art studio"]) is None


def test_recovery_reaches_the_thing_of_a_step_that_cannot_be_taken_or_skips_to_one_that_can() -> None:
    wf = Workflow(goal="fetch the <A>", steps=(WorkflowStep("go to kitchen"), WorkflowStep("pick up <A>")), values={})
    # "go to kitchen" is not offered: an offered action ending with the kitchen brings it within reach
    reach = ground(wf, "Fetch the apple.", [], ["teleport to kitchen", "look around"])
    assert reach is not None and (reach.action, reach.index, reach.how) == ("teleport to kitchen", 0, "reach")
    # nothing offered names the kitchen: the next step that can be taken is handed over
    skip = ground(wf, "Fetch the apple.", [], ["pick up apple", "look around"])
    assert skip is not None and (skip.action, skip.index, skip.how) == ("pick up apple", 1, "skip")
    assert ground(wf, "Fetch the apple.", [], ["look around"]) is None
    # never past a scoring step: what it brings about is needed later
    scoring = Workflow(goal="fetch the <A>", steps=(WorkflowStep("go to kitchen", progress=True), WorkflowStep("pick up <A>")))
    assert ground(scoring, "Fetch the apple.", [], ["pick up apple", "look around"]) is None
    # a step whose slot nothing binds is passed over freely
    unbound = Workflow(goal="fetch the <A>", steps=(WorkflowStep("open door to <Z>", progress=True), WorkflowStep("pick up <A>")))
    got = ground(unbound, "Fetch the apple.", [], ["pick up apple"])
    assert got is not None and got.action == "pick up apple"


def test_workflow_skills_group_by_family_version_and_suppress() -> None:
    a, b = group_by_kind(PAINT, [], family=None)[0], None
    assert b is None and len(a[1]) == 2  # overlapping goals are one kind
    skill = workflow_skill(PAINT[:1], ("ns",), family="paint", now=0.0)
    again = workflow_skill(PAINT[1:], ("ns",), family="paint", existing=skill, now=1.0)
    assert again.id == skill.id and again.version == 2 and len(again.sources) == 2
    same = workflow_skill(PAINT[1:], ("ns",), family="paint", existing=again, now=2.0)
    assert same.version == 2 and len(same.sources) == 2  # the same trajectory again adds nothing
    assert workflow_of(again).steps == induce_workflow(PAINT).steps
    goal = "Your task is to create violet paint. Then focus on the violet paint."
    assert matching(goal, [again], family="paint") == [again]
    failing = again.model_copy(update={"stats": SkillStats(executions=5, failures=5, success_rate=0.05)})
    assert suppressed(failing) and matching(goal, [failing]) == []


def test_the_workflow_config_is_honoured() -> None:
    from langmem_plus.config import DEFAULT_CONFIG

    cfg = DEFAULT_CONFIG.workflows
    three = [demo("make the report", "open sheet", "read notes", "save sheet"),
             demo("make the report", "open sheet", "save sheet"),
             demo("make the report", "open sheet", "read notes", "save sheet")]
    assert "read notes" in [s.action for s in induce_workflow(three, cfg).steps]  # two of three took it
    strict = cfg.model_copy(update={"workflow_min_share": 1.0})
    assert "read notes" not in [s.action for s in induce_workflow(three, strict).steps]
    looped = [demo("poll the queue", "look", "look", "look", "done")]
    assert [s.repeat for s in induce_workflow(looped, cfg).steps] == [True, False]
    assert len(induce_workflow(looped, cfg.model_copy(update={"workflow_max_steps": 1})).steps) == 1
    wf = Workflow(goal="make the report", steps=(WorkflowStep("wash hands"), WorkflowStep("save sheet")))
    assert ground(wf, "make the report", [], ["save sheet"], cfg) is not None
    assert ground(wf, "make the report", [], ["save sheet"], cfg.model_copy(update={"workflow_skip_lookahead": 0})) is None
    loose = cfg.model_copy(update={"workflow_min_goal_overlap": 0.1})
    assert bind_goal(induce_workflow(PAINT), "create paint", cfg.workflow_min_goal_overlap) is None
    assert bind_goal(Workflow(goal="create <A> paint now please", steps=()), "create red paint", loose.workflow_min_goal_overlap) == {"A": "red"}
    from langmem_plus.learning.procedures import learned_part
    from langmem_plus.records import Feedback, Step

    half = [Step(index=0, action="open sheet", feedback=Feedback(progress=0.5)), Step(index=1, action="look")]
    assert learned_part(half, min_progress=cfg.workflow_own_min_progress) == []  # the default asks for a win
    assert [s.action for s in learned_part(half, min_progress=0.5)] == ["open sheet"]


def test_an_offered_action_that_cannot_be_quoted_whole_is_never_handed_over() -> None:
    wf = Workflow(goal="make the report", steps=(WorkflowStep("run <Z>"),), values={"Z": ("`rm -rf /`", "tests")})
    got = ground(wf, "make the report", [], ["run `rm -rf /`", "run tests"])
    assert got is not None and got.action == "run tests"


def test_a_slot_no_trajectory_bound_takes_a_phrase_a_short_line_of_the_observations_names() -> None:
    wf = Workflow(goal="cook the meal", steps=(WorkflowStep("read list"), WorkflowStep("take <Z>")),
                  values={"Z": ("red pen",)})
    offered = ["take blue cup", "take green lamp", "look"]
    told = "You see a blue cup, a green lamp, a desk and a chair on the floor here.\nItems:\n  green lamp"
    got = ground(wf, "cook the meal", ["read list"], offered, seen=told)
    assert got is not None and got.action == "take green lamp"  # named alone on a line, not only in the room's list
    assert ground(wf, "cook the meal", ["read list"], offered, seen=told.splitlines()[0]) is None


def test_cues_the_trajectories_were_told_choose_a_slot_value_for_what_this_attempt_is_told() -> None:
    def cooked(thing: str, how: str, where: str) -> Demonstration:
        return Demonstration("cook the meal", (DemoStep("read list", f"Directions:\n  {how} the {thing}"),
                                               DemoStep(f"cook {thing} in {where}", score=1.0)))

    wf = induce_workflow([cooked("red pen", "roast", "oven"), cooked("blue cup", "fry", "stove"),
                          cooked("green lamp", "roast", "oven")])
    assert wf.cues["Y"] == {"oven": ("roast <Z>",), "stove": ("fry <Z>",)}
    offered = ["cook old shoe in oven", "cook old shoe in stove", "look"]
    fried = ground(wf, "cook the meal", ["read list"], offered, seen="Directions:\n  fry the old shoe")
    roasted = ground(wf, "cook the meal", ["read list"], offered, seen="Directions:\n  roast the old shoe")
    assert fried is not None and fried.action == "cook old shoe in stove"
    assert roasted is not None and roasted.action == "cook old shoe in oven"


def test_a_step_that_names_where_its_thing_is_matches_the_offered_action_that_does_not() -> None:
    wf = Workflow(goal="file the <A>", steps=(WorkflowStep("move <A> in tray to cabinet", progress=True),
                                             WorkflowStep("close cabinet")))
    offered = ["move memo to bin", "move memo to cabinet", "close cabinet"]
    got = ground(wf, "File the memo.", [], offered)
    assert got is not None and (got.action, got.how) == ("move memo to cabinet", "step")
    assert progress(wf, {"A": "memo"}, ["move memo to cabinet"])[0] == 1  # taken, the step is done
    # only a phrase with a function word of its own is left out, never a word of the thing
    plain = Workflow(goal="file the <A>", steps=(WorkflowStep("move big <A> to cabinet", progress=True),))
    assert ground(plain, "File the memo.", [], ["move memo to cabinet"]) is None


def test_an_action_that_gets_where_a_step_goes_another_way_counts_as_that_step() -> None:
    wf = Workflow(goal="fetch the <A>", steps=(WorkflowStep("go to kitchen", progress=True), WorkflowStep("pick up <A>")))
    assert progress(wf, {"A": "apple"}, ["teleport to kitchen"])[0] == 1
    got = ground(wf, "Fetch the apple.", ["teleport to kitchen"], ["pick up apple", "look around"])
    assert got is not None and (got.action, got.how) == ("pick up apple", "step")
    # another place, or the same command, is not that step
    assert progress(wf, {"A": "apple"}, ["teleport to garden"])[0] == 0
    assert progress(wf, {"A": "apple"}, ["go to garden"])[0] == 0


def test_a_slot_the_trajectories_named_by_another_slots_value_is_bound_from_it() -> None:
    def released(stage: str, thing: str) -> Demonstration:
        return demo("release the insect", f"focus on {stage} {thing}", f"move {thing} to box", scores={1: 1.0})

    wf = induce_workflow([released("egg", "moth"), released("larva", "wasp"), released("egg", "gnat")])
    assert [s.action for s in wf.steps] == ["focus on <Z>", "move <Y> to box"]
    assert wf.kin["Y"] == "Z"
    offered = ["move spoon to box", "move beetle to box", "look around"]
    got = ground(wf, "release the insect", ["focus on pupa beetle"], offered)
    assert got is not None and got.action == "move beetle to box"
    # without the relation, none of the values the trajectories gave is offered: nothing to hand over
    bare = Workflow(wf.goal, wf.steps, wf.values, wf.sources, wf.cues)
    assert ground(bare, "release the insect", ["focus on pupa beetle"], offered) is None


def test_a_scoring_step_the_task_names_the_thing_of_holds_a_proposal_on_another_thing() -> None:
    wf = induce_workflow(PAINT)
    goal = "Your task is to create violet paint. Then focus on the violet paint."
    assert against(wf, goal, "focus on red paint") == "focus on violet paint"
    assert against(wf, goal, "focus on violet paint") is None  # the step itself
    assert against(wf, goal, "mix cup") is None  # a step whose slot the task does not bind
    assert against(wf, "Your task is to boil water.", "focus on red paint") is None  # another kind of task
    # an action that is another step of the procedure (one move of several) is never held
    moves = Workflow(goal="take the <A> to <B>", steps=(WorkflowStep("go to <Z>"),
                                                       WorkflowStep("go to <B>", progress=True, only_named=True)))
    assert against(moves, "take the cup to the desk", "go to hall") is None
    # a trajectory that took the step's form on a thing its goal did not name: the task's text is not all it acts on
    other = [*PAINT, demo("Your task is to create red paint. Then focus on the red paint.",
                          "go to art studio", "mix pot", "focus on mixed paint", scores={2: 1.0})]
    assert against(induce_workflow(other), goal, "focus on blue paint") is None


def test_a_line_every_trajectory_was_told_and_never_chose_from_names_no_value() -> None:
    demos = [Demonstration("tidy up", (DemoStep("look", f"the robot\n{x}"), DemoStep(f"take {x}", score=1.0)))
             for x in ("pen", "cup", "key")]
    wf = induce_workflow(demos)
    assert wf.passed["Z"] == ("robot", "tidy up")
    offered = ["take robot", "take lamp", "take desk", "take box"]
    got = ground(wf, "tidy up", ["look"], offered, seen="the robot\nlamp")
    assert got is not None and got.action == "take lamp"
    bare = Workflow(wf.goal, wf.steps, wf.values, wf.sources, wf.cues, wf.kin)
    naive = ground(bare, "tidy up", ["look"], offered, seen="the robot\nlamp")
    assert naive is not None and naive.action == "take robot"  # what the trajectories never chose, without it
