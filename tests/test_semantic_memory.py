"""SemanticMemory (seed 002 "Semantic Memory"): beliefs, graph, persistence, fact sources.

Every test runs on a real embedded Chroma in tmp_path through ``LearningMemory``;
the gridtool test runs the demo's real learning loop, and the text-game test plays a
real TextWorldExpress game when the ``envs`` extra and Java are installed.
"""

from __future__ import annotations

import doctest
import random
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from langmem_plus import LearningMemory, MemoryConfig
from langmem_plus.memory_types import SemanticMemory
from langmem_plus.memory_types.fact_sources import Claim, facts_from_observation
from langmem_plus.records import Evidence
from langmem_plus.errors import InvalidRecord
from langmem_plus.memory_types import beliefs, fact_sources, semantic
from langmem_plus.memory_types.beliefs import evidence_strength, normalize_label, settle
from langmem_plus.records import Lesson, LessonScope, TaskSpec

NS = ("acme", "agent-7")


@pytest.fixture
def memory(tmp_path: Path) -> LearningMemory:
    mem = LearningMemory.open(tmp_path / "store", namespace=NS)
    yield mem
    mem.close()


def ev(source: str, kind: str = "observed", level: float = 0.5) -> Evidence:
    return Evidence(kind=kind, source=source, level=level)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- the seed's rules


@pytest.mark.parametrize(
    ("kind", "level", "strength"),
    [
        ("axiomatic", 0.5, 1.0), ("observed", 0.5, 0.95), ("computed", 0.5, 0.9),
        ("consensus", 1.0, 0.9), ("reported", 0.0, 0.4), ("reported", 1.0, 0.7),
        ("inferred", 0.5, 0.5), ("hypothetical", 0.5, 0.2), ("hearsay", 0.5, 0.1), ("unknown", 0.5, 0.0),
    ],
)
def test_evidence_strength_follows_seed_002(kind: str, level: float, strength: float) -> None:
    assert evidence_strength(ev("s", kind, level)) == pytest.approx(strength)


def test_seed_handle_contradiction_three_arms() -> None:
    # new > old + 0.3: the old is superseded
    out = settle({"old": [ev("a", "hearsay")], "new": [ev("b", "observed")]})
    assert out["new"][0] == "held" and out["old"] == ("retracted", "superseded by stronger evidence")
    # old > new + 0.3: the new one is rejected, the old stays held
    out = settle({"old": [ev("a", "observed")], "new": [ev("b", "hypothetical")]})
    assert out["old"][0] == "held" and out["new"][0] == "retracted"
    # similar strength: both contested
    out = settle({"old": [ev("a", "observed")], "new": [ev("b", "computed")]})
    assert out == {"old": ("contested", "rivals of similar strength"), "new": ("contested", "rivals of similar strength")}


def test_margin_is_the_config_field() -> None:
    positions = {"a": [ev("x", "observed")], "b": [ev("y", "reported", 1.0)]}  # 0.95 vs 0.7
    assert settle(positions)["a"][0] == "contested"
    assert settle(positions, MemoryConfig(semantic={"semantic_contradiction_margin": 0.2}))["a"][0] == "held"


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["p", "q", "r"]),
        st.lists(st.tuples(st.sampled_from(["observed", "reported", "inferred", "hearsay"]), st.integers(0, 4)), min_size=1, max_size=5),
        min_size=1,
    ),
    st.randoms(),
)
def test_settle_is_order_independent_and_holds_at_most_one(positions: dict[str, list[tuple[str, int]]], rnd) -> None:
    as_ev = {k: [ev(f"s{i}", kind) for kind, i in v] for k, v in positions.items()}
    shuffled = {k: rnd.sample(v, len(v)) for k, v in reversed(list(as_ev.items()))}
    out = settle(as_ev)
    assert out == settle(shuffled)
    if len(as_ev) > 1:
        assert sum(state == "held" for state, _ in out.values()) <= 1
        assert not (any(s == "held" for s, _ in out.values()) and any(s == "contested" for s, _ in out.values()))


def test_two_positions_a_margin_apart_settle_the_same_in_every_order() -> None:
    """0.9 against 0.6 with margin 0.3: a plain float sum put them an ulp either side of the margin by order."""
    positions = {"p": [("inferred", 0), ("inferred", 1)],
                 "q": [("inferred", 0), ("hearsay", 0), ("inferred", 1), ("hearsay", 1), ("hearsay", 2)]}
    as_ev = {k: [ev(f"s{i}", kind) for kind, i in v] for k, v in positions.items()}
    rnd = random.Random(0)
    outcomes = {
        tuple(sorted(settle({k: rnd.sample(v, len(v)) for k, v in items}).items()))
        for items in (list(as_ev.items()), list(reversed(list(as_ev.items()))))
        for _ in range(50)
    }
    assert len(outcomes) == 1


@given(st.text(min_size=1, max_size=30))
def test_normalize_label_is_idempotent(text: str) -> None:
    once = normalize_label(text)
    assert normalize_label(once) == once


def test_module_doctests_pass() -> None:
    for module in (beliefs, fact_sources, semantic):
        result = doctest.testmod(module)
        assert result.failed == 0 and result.attempted > 0, module.__name__


# --------------------------------------------------------------------------- learn and reconcile


def test_belief_goes_held_contested_held_with_evidence_kept(memory: LearningMemory) -> None:
    sem = memory.semantic()
    fridge = sem.learn(("milk", "located_in", "fridge"), ev("run-1"))
    assert fridge.state == "held" and fridge.confidence == pytest.approx(0.95)
    table = sem.learn(("milk", "located_in", "table"), ev("run-2"))
    fridge = sem.get(fridge.id)
    assert table.state == fridge.state == "contested"
    assert fridge.rivals == [table.id] and table.rivals == [fridge.id]
    fridge = sem.learn(("milk", "located_in", "fridge"), ev("run-3"))
    table = sem.get(table.id)
    assert fridge.state == "held" and table.state == "retracted"
    assert table.reason == "superseded by stronger evidence"
    assert [e.source for e in fridge.sources] == ["run-1", "run-3"]
    assert [e.source for e in table.sources] == ["run-2"]  # the loser's evidence is kept
    assert [(c.old, c.new) for c in fridge.history] == [("unknown", "held"), ("held", "contested"), ("contested", "held")]
    assert [(c.old, c.new) for c in table.history] == [("unknown", "contested"), ("contested", "retracted")]
    kinds = [r["new"] for r in memory.audit.read() if r["kind"] == "belief"]
    assert kinds == ["contested", "held", "retracted"]


def test_contested_can_end_retracted_by_evidence_for_the_rival(memory: LearningMemory) -> None:
    sem = memory.semantic()
    a = sem.learn(("door", "has_state", "open"), ev("r1"))
    b = sem.learn(("door", "has_state", "closed"), ev("r2"))
    assert sem.get(a.id).state == "contested"
    sem.learn(("door", "has_state", "closed"), ev("r3", "computed"))
    assert sem.get(a.id).state == "retracted" and sem.get(b.id).state == "held"


def test_weaker_contradiction_is_kept_but_rejected(memory: LearningMemory) -> None:
    sem = memory.semantic()
    held = sem.learn(("cat", "located_in", "garden"), ev("seen", "observed"))
    rumour = sem.learn(("cat", "located_in", "attic"), ev("neighbour", "hearsay"))
    assert sem.get(held.id).state == "held"
    assert rumour.state == "retracted" and rumour.sources[0].source == "neighbour"


def test_non_functional_relations_never_contradict(memory: LearningMemory) -> None:
    sem = memory.semantic()
    facts = sem.learn_many([("fridge", "contains", "milk"), ("fridge", "contains", "eggs")], ev("obs"))
    assert [f.state for f in facts] == ["held", "held"] and facts[0].rivals == []


def test_opposite_relations_contradict_and_functional_set_is_a_parameter(memory: LearningMemory) -> None:
    sem = memory.semantic()
    a = sem.learn(("gridtool", "accepts", "keep"), ev("r1"))
    sem.learn(("gridtool", "rejects", "keep"), ev("r2"))
    assert sem.get(a.id).state == "contested"
    custom = SemanticMemory(memory.store, functional={"colour"}, opposites=())
    x = custom.learn(("sky", "colour", "blue"), ev("r1"))
    custom.learn(("sky", "colour", "grey"), ev("r2"))
    assert custom.get(x.id).state == "contested"
    y = custom.learn(("tool", "accepts", "q"), ev("r1"))
    custom.learn(("tool", "rejects", "q"), ev("r2"))
    assert custom.get(y.id).state == "held"  # no opposites configured


def test_retract_keeps_evidence_and_repeated_source_adds_nothing(memory: LearningMemory) -> None:
    sem = memory.semantic()
    fact = sem.learn(("oven", "has_state", "on"))
    assert sem.learn(("oven", "has_state", "on")).sources == fact.sources  # "user" repeating itself
    retracted = sem.retract(("oven", "has_state", "on"), reason="turned it off", source="r9")
    assert retracted.state == "retracted"
    assert [(e.source, e.against) for e in retracted.sources] == [("user", False), ("r9", True)]
    assert sem.query("oven", 5) == []
    assert [h.fact.id for h in sem.query("oven", 5, states=("retracted",))] == [fact.id]


def test_alias_get_or_create(memory: LearningMemory) -> None:
    sem = memory.semantic()
    fridge = sem.add_alias("Refrigerator", "the fridge")
    fact = sem.learn(("Fridge", "contains", "milk"))  # found by alias, case and article ignored
    assert fact.subject_id == fridge.id and fact.subject == "Refrigerator"
    again = sem.learn(("The refrigerator.", "contains", "Milk"))
    assert again.id == fact.id and len(sem) == 1
    assert sem.entity("FRIDGE") == sem.entity("refrigerator")
    sem.learn(("freezer", "contains", "ice"))
    with pytest.raises(InvalidRecord, match="already names"):
        sem.add_alias("freezer", "fridge")
    with pytest.raises(InvalidRecord):
        sem.learn(("...", "contains", "x"))


def test_token_entities_keep_case_and_scope(memory: LearningMemory) -> None:
    sem = memory.semantic()
    low = sem.learn(Claim("gridtool", "rejects", "sum", object_kind="token", scope="gridtool"))
    up = sem.learn(Claim("gridtool", "accepts", "SUM", object_kind="token", scope="gridtool"))
    other = sem.learn(Claim("fluxtool", "accepts", "sum", object_kind="token", scope="fluxtool"))
    assert len({low.object_id, up.object_id, other.object_id}) == 3
    assert low.state == up.state == other.state == "held"


# --------------------------------------------------------------------------- query and traverse


def test_query_by_meaning_with_one_hop_expansion(memory: LearningMemory) -> None:
    sem = memory.semantic()
    cfg = MemoryConfig(semantic={"semantic_candidates_factor": 1})
    sem = SemanticMemory(memory.store, config=cfg)
    hit = sem.learn(("fridge", "contains", "milk"))
    neighbour = sem.learn(("fridge", "located_in", "kitchen"))
    distractor = sem.learn(("bottle", "contains", "water"))
    direct = sem.query("fridge contains milk", limit=2, expand=False)
    assert [h.fact.id for h in direct] == [hit.id, distractor.id]
    expanded = sem.query("fridge contains milk", limit=2)
    assert [h.fact.id for h in expanded] == [hit.id, neighbour.id]
    assert expanded[1].hop == 1 and expanded[1].via == hit.id
    assert expanded[1].relevance >= cfg.semantic.semantic_hop_decay * expanded[0].relevance - 1e-6


def test_query_ranks_by_relevance_times_confidence(memory: LearningMemory) -> None:
    sem = memory.semantic()
    sure = sem.learn(("lamp", "has_property", "bright"), ev("a", "observed"))
    unsure = sem.learn(("lamp", "has_property", "bright red"), ev("b", "hearsay"))  # confidence 0.1: dropped
    found = [h.fact.id for h in sem.query("lamp bright", 5)]
    assert sure.id in found and unsure.id not in found


def test_traverse_along_relations_both_directions(memory: LearningMemory) -> None:
    sem = memory.semantic()
    sem.learn_many([("alice", "uses", "hammer"), ("hammer", "created_by", "bob"), ("alice", "uses", "saw"),
                    ("saw", "created_by", "carol")])
    ends = sem.traverse("alice", ["uses", "created_by"])
    assert sorted(t.entity.label for t in ends) == ["bob", "carol"]
    assert [f.relation for f in ends[0].path] == ["uses", "created_by"]
    back = sem.traverse("bob", ["~created_by", ("uses", "in")])
    assert [t.entity.label for t in back] == ["alice"]
    assert sem.traverse("nobody", ["uses"]) == []


def test_traverse_skips_retracted_facts(memory: LearningMemory) -> None:
    sem = memory.semantic()
    sem.learn(("milk", "located_in", "fridge"), ev("a", "hearsay"))
    sem.learn(("milk", "located_in", "table"), ev("b", "observed"))
    assert [t.entity.label for t in sem.traverse("milk", ["located_in"])] == ["table"]
    assert len(sem.traverse("milk", ["located_in"], states=("held", "retracted"))) == 2


# --------------------------------------------------------------------------- persistence and namespaces


def test_facts_persist_across_reopen(tmp_path: Path) -> None:
    path = tmp_path / "store"
    with LearningMemory.open(path, namespace=NS) as mem:
        sem = mem.semantic()
        sem.add_alias("fridge", "icebox")
        sem.learn(("milk", "located_in", "fridge"), ev("r1"))
        table = sem.learn(("milk", "located_in", "table"), ev("r2"))
    with LearningMemory.open(path, namespace=NS) as mem:
        sem = mem.semantic()
        assert sem.get(table.id).state == "contested"
        assert sem.entity("icebox") is not None and sem.entity("icebox") == sem.entity("fridge")
        sem.learn(("milk", "located_in", "icebox"), ev("r3"))  # the alias survives the reopen
        assert sem.get(table.id).state == "retracted"
        assert [t.entity.label for t in sem.traverse("milk", ["located_in"])] == ["fridge"]
        assert [h.fact.object for h in sem.query("where is the milk", 1)] == ["fridge"]


def test_namespaces_never_see_each_others_facts(tmp_path: Path) -> None:
    path = tmp_path / "store"
    with LearningMemory.open(path, namespace=("a",)) as one, LearningMemory.open(path, namespace=("b",)) as two:
        one.semantic().learn(("milk", "located_in", "fridge"))
        two.semantic().learn(("milk", "located_in", "table"))
        assert [f.object for f in one.semantic().facts()] == ["fridge"]
        assert [f.object for f in two.semantic().facts()] == ["table"]
        assert one.semantic().facts()[0].state == "held"  # no contradiction across namespaces
        assert [h.fact.object for h in two.retrieve_facts("milk fridge", 5)] == ["table"]
        assert one.semantic().entity("table") is None


# --------------------------------------------------------------------------- facts from lessons


def _lesson(lid: str, wrong: str, correct: str | None, status: str = "candidate") -> Lesson:
    return Lesson(id=lid, namespace=NS, rule_text=f"WRONG: {wrong} -> CORRECT: {correct}", wrong=wrong,
                  correct=correct, scope=LessonScope(tool="gridtool"), status=status)  # type: ignore[arg-type]


def test_conflicting_lessons_make_a_contested_belief(memory: LearningMemory) -> None:
    sem = memory.semantic()
    a, b = _lesson("les_a", "where", "KEEP"), _lesson("les_b", "where", "FILTER")
    sem.learn_from_lessons([a, b], utilities={"les_a": 0.8, "les_b": 0.7}, run_id="r1")
    fix = sem.facts("where", "corrected_to")
    assert sorted(f.object for f in fix) == ["FILTER", "KEEP"] and {f.state for f in fix} == {"contested"}
    sem.learn_from_lessons([a], promoted=["les_a"], run_id="r2")  # les_a's fix verified: promoted
    states = {f.object: f.state for f in sem.facts("where", "corrected_to")}
    assert states == {"KEEP": "held", "FILTER": "retracted"}
    ends = sem.traverse("gridtool", ["rejects", "corrected_to"], scope="gridtool")
    assert [t.entity.label for t in ends] == ["KEEP"]


def test_unverified_lessons_state_nothing(memory: LearningMemory) -> None:
    sem = memory.semantic()
    assert sem.learn_from_lessons([_lesson("les_c", "head", "TOP")], utilities={"les_c": -0.2}) == []
    assert len(sem) == 0


def test_facts_from_the_real_gridtool_learning_loop(tmp_path: Path) -> None:
    from langmem_plus.demo import run_demo

    path = tmp_path / "store"
    run_demo(runs=2, store=path, namespace=NS)
    with LearningMemory.open(path, namespace=NS) as mem:
        promoted = [l for l in mem.lessons.values() if l.status == "promoted" and l.wrong and l.correct]
        assert promoted
        sem = mem.semantic()
        for lesson in promoted:
            rejects = [f for f in sem.facts("gridtool", "rejects") if f.object == lesson.wrong]
            assert rejects and rejects[0].state == "held"
            assert any(e.kind == "observed" and e.source == f"lesson:{lesson.id}" for e in rejects[0].sources)
        filter_fix = [t.entity.label for t in sem.traverse("filter", ["corrected_to"], scope="gridtool")]
        assert filter_fix == ["KEEP"]
        assert any(h.fact.object == "KEEP" for h in mem.retrieve_facts("gridtool keep filter", 5))


def test_the_end_of_run_hook_can_be_turned_off(tmp_path: Path) -> None:
    from langmem_plus.demo import run_demo

    run_demo(runs=1, store=tmp_path / "s", namespace=NS, config=MemoryConfig(semantic={"semantic_from_runs": False}))
    with LearningMemory.open(tmp_path / "s", namespace=NS) as mem:
        assert mem.lessons_by_status()["promoted"] + mem.lessons_by_status()["candidate"] > 0
        assert len(mem.semantic()) == 0


# --------------------------------------------------------------------------- facts from observations


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The fridge contains milk.", [("fridge", "contains", "milk")]),
        ("The apple is on the table.", [("apple", "located_on", "table")]),
        ("The stove is a heat source.", [("stove", "is_a", "heat source")]),
        ("The door is open.", [("door", "has_state", "open")]),
        ("You are in the kitchen. There is also an oven.", [("player", "located_in", "kitchen"), ("oven", "located_in", "kitchen")]),
        ("A counter that has a knife, and a cookbook on it.", [("knife", "located_on", "counter"), ("cookbook", "located_on", "counter")]),
        ("There is also a dining chair, that has nothing on it.", []),
        ("Your inventory is currently empty.", []),
    ],
)
def test_facts_from_observation_patterns(text: str, expected: list[tuple[str, str, str]]) -> None:
    assert facts_from_observation(text) == expected


def test_a_newer_observation_supersedes_an_older_state(memory: LearningMemory) -> None:
    sem = memory.semantic()
    sem.learn_from_observation("You are in the kitchen. You see a fridge that is closed.", source="step-1")
    sem.learn_from_observation("The fridge is open.", source="step-2")
    states = {f.object: f.state for f in sem.facts("fridge", "has_state")}
    assert states == {"closed": "retracted", "open": "held"}
    sem.learn_from_observation("The fridge is closed.", source="step-3")
    states = {f.object: f.state for f in sem.facts("fridge", "has_state")}
    assert states == {"closed": "held", "open": "retracted"}
    closed = [f for f in sem.facts("fridge", "has_state") if f.object == "closed"][0]
    assert [(e.source, e.against) for e in closed.sources] == [("step-1", False), ("step-2", True), ("step-3", False)]


def test_real_textworld_express_observations_become_facts(memory: LearningMemory) -> None:
    pytest.importorskip("textworld_express")
    if shutil.which("java") is None:
        pytest.skip("the text games need a Java runtime")
    from langmem_plus import make_env

    env = make_env("twx-cooking:easy")
    first = env.reset(env.tasks()[0].task_id)
    opened, _ = env.step("open fridge")
    sem = memory.semantic()
    sem.learn_from_observation(first, source="reset")
    sem.learn_from_observation(opened, source="open fridge")
    assert ("player", "located_in", "kitchen") in facts_from_observation(first)
    state = {f.object: f.state for f in sem.facts("fridge", "has_state")}
    assert state == {"closed": "retracted", "open": "held"}
    contents = [f.object for f in sem.facts("fridge", "contains")]
    assert contents and all(item in opened.lower() for item in contents)
    assert [t.entity.label for t in sem.traverse("fridge", ["located_in"])] == ["kitchen"]
    assert memory.retrieve_facts("the fridge contains", 3)[0].fact.relation == "contains"


def test_concurrent_learners_lose_no_evidence(memory: LearningMemory) -> None:
    import threading

    sem = memory.semantic()
    objects = ["fridge", "table", "shelf", "bag"]
    threads = [
        threading.Thread(target=lambda o=o, i=i: sem.learn(("milk", "located_in", o), ev(f"t{i}")))
        for i, o in enumerate(objects)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    facts = sem.facts("milk", "located_in")
    assert sorted(f.object for f in facts) == sorted(objects)
    assert {f.state for f in facts} == {"contested"} and all(len(f.rivals) == 3 for f in facts)
    reopened = SemanticMemory(memory.store)
    assert {f.state for f in reopened.facts("milk")} == {"contested"}


def test_seed_traversal_example_creators_of_tools_used_by_the_user(memory: LearningMemory) -> None:
    """Seed 002: ``traverse(user, follow(UsedBy, Incoming).follow(CreatedBy, Outgoing))``."""
    sem = memory.semantic()
    sem.learn_many([
        Claim("hammer", "used_by", "current user", subject_kind="tool", object_kind="user"),
        Claim("hammer", "created_by", "acme tools", subject_kind="tool"),
        Claim("drill", "used_by", "someone else", subject_kind="tool"),
        Claim("drill", "created_by", "drillco", subject_kind="tool"),
        Claim("Fluffy", "instance_of", "cat"), Claim("cat", "is_a", "animal"),
    ])
    creators = sem.traverse("current user", [("used_by", "in"), ("created_by", "out")])
    assert [t.entity.label for t in creators] == ["acme tools"]
    assert [t.entity.label for t in sem.traverse("fluffy", ["instance_of", "is_a"])] == ["animal"]


# --------------------------------------------------------------------------- facts beside lessons in a retrieval


def _fact_task() -> TaskSpec:
    return TaskSpec(task_id="t-kitchen", goal="find the cheese in the kitchen fridge", tool="cooking")


def test_a_retrieval_shows_a_relevant_fact_as_quoted_data_within_the_budget(tmp_path: Path) -> None:
    mem = LearningMemory.open(tmp_path / "store", namespace=NS)
    mem.semantic().learn(("fridge", "contains", "block of cheese"))
    mem.semantic().learn(("garage", "contains", "red bicycle"))
    items = mem.retrieve_pre_run(_fact_task())
    facts = [i for i in items if i.kind == "fact"]
    assert [f.item.text for f in facts] == ["fridge contains block of cheese"]  # the relevant one, fact_budget = 1
    block = mem.render(items)
    assert 'Known: fridge contains block of cheese' in block and "red bicycle" not in block
    assert mem.last_retrieval is not None and mem.last_retrieval.tokens <= mem.config.context.max_context_tokens
    mem.close()
    off = LearningMemory.open(tmp_path / "store", namespace=NS, config=MemoryConfig(retrieval={"fact_budget": 0}))
    assert not [i for i in off.retrieve_pre_run(_fact_task()) if i.kind == "fact"]
    off.close()


def test_a_fact_that_only_repeats_a_chosen_lesson_is_left_out(tmp_path: Path) -> None:
    """Facts a verified lesson states are not shown again beside that lesson."""
    from langmem_plus.records import Evidence as Ev
    from langmem_plus.records import TaskSpec

    mem = LearningMemory.open(tmp_path / "store", namespace=NS)
    lesson = Lesson(id="les_sort", namespace=NS, rule_text="WRONG: sort age down -> CORRECT: sort age desc", wrong="down",
                    correct="desc", triggers=["fp-sort"], scope=LessonScope(level="domain", tool="gridtool"), status="promoted")
    mem.add_lessons([lesson])
    mem.semantic().learn(("gridtool sort", "accepts", "desc"), Ev(kind="observed", source="lesson:les_sort", level=1.0))
    task = TaskSpec(task_id="t-sort", goal="gridtool sort age desc order", tool="gridtool")
    items = mem.retrieve_pre_run(task, k=5)
    kinds = {i.item_id: i.kind for i in items}
    assert kinds.get("les_sort") == "lesson" and "fact" not in kinds.values()
    mem.semantic().learn(("gridtool sort", "accepts", "desc"), Ev(kind="observed", source="user"))  # now also known otherwise
    assert any(i.kind == "fact" for i in mem.retrieve_pre_run(task, k=5))
    mem.close()


def test_end_run_reads_a_text_game_runs_observations_into_facts_when_asked(tmp_path: Path) -> None:
    from langmem_plus.records import Step, TaskSpec

    task = TaskSpec(task_id="cook-1", goal="make a meal with the cheese", tool="cooking", domain="text-game")
    steps = [
        Step(index=0, action="open fridge", observation="You open the fridge. The fridge contains a block of cheese.",
             info={"valid_actions": ["open fridge", "go east"]}),
        Step(index=1, action="go east", observation="You are in the pantry. You see a shelf.", info={"valid_actions": ["go west"]}),
    ]
    off = LearningMemory.open(tmp_path / "off", namespace=NS)
    off.end_run(run_id="r1", task=task, steps=steps, events=[])
    assert not off.semantic().facts()  # off by default
    off.close()
    on = LearningMemory.open(tmp_path / "on", namespace=NS, config=MemoryConfig(semantic={"semantic_from_observations": True}))
    on.end_run(run_id="r1", task=task, steps=steps, events=[])
    found = {f.text: f for f in on.semantic().facts()}
    assert "fridge contains block of cheese" in found
    assert found["fridge contains block of cheese"].sources[0].source == "r1:0"  # which run and step said it
    items = on.retrieve_pre_run(TaskSpec(task_id="cook-2", goal="find the cheese in the fridge", tool="cooking"))
    assert any(i.kind == "fact" and "cheese" in i.item.text for i in items)
    on.close()
