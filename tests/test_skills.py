"""Skills (design.md §6): promotion at 3 solves, common subsequence, matching, hints, EMA, failure modes, storage."""

from __future__ import annotations

from pathlib import Path

import pytest

from langmem_plus import LearningMemory
from langmem_plus.config import MemoryConfig
from langmem_plus.embeddings import HashingEmbeddings
from langmem_plus.learning.consolidate import consolidate
from langmem_plus.learning.skills import (
    common_subsequence,
    match_skills,
    record_skill_outcome,
    skeleton,
    skill_hints,
    synthesize_skill,
)
from langmem_plus.records import (
    Episode,
    ErrorEvent,
    Feedback,
    Skill,
    SkillStats,
    Step,
    TaskSpec,
    Verdict,
)

NS = ("s",)
CFG = MemoryConfig()


def success(eid: str, actions: list[str], *, count: int = 1, pre: list[str] | None = None, state: list[str] | None = None) -> Episode:
    return Episode(episode_id=eid, namespace=NS, kind="success", goal_signature=f"goal {eid}", subgoal_template="filter_select",
                   context="gridtool", action_seq=actions, count=count, preconds_satisfied=pre or [], state_fingerprint=state or [])


A = ["LOAD people | KEEP age >= 30 | PICK name, age"]
B = ["LOAD orders | KEEP status = 'paid' | PICK id, amount"]
C = ["LOAD cities | KEEP population > 2000 | PICK city"]


def test_common_subsequence_and_skeleton() -> None:
    assert common_subsequence([list("abcde"), list("xbxdx"), list("bd")]) == ["b", "d"]
    assert common_subsequence([]) == []
    assert skeleton([["a", "b", "c"], ["a", "c"]]) == "a … c"


def test_a_template_solved_three_times_becomes_a_skill_not_before() -> None:
    assert synthesize_skill([success("1", A), success("2", B)], config=CFG, now=0.0) is None
    skill = synthesize_skill(
        [success("1", A, pre=["table_known"], state=["rows>0"]), success("2", B, pre=["table_known", "x"], state=["rows>0"]),
         success("3", C, pre=["table_known"], state=["rows>0"])],
        failures=[Episode(episode_id="av", namespace=NS, kind="avoidance", goal_signature="g", summary="`from` fails")],
        config=CFG, now=5.0,
    )
    assert skill is not None
    assert skill.steps == ["LOAD … | KEEP … | PICK …"]  # the procedure they share, literals gapped
    assert skill.preconds == ["table_known"] and skill.effects == ["rows>0"]
    assert skill.failure_modes == ["`from` fails"]
    assert skill.stats.successes == 3 and skill.stats.success_rate == 1.0
    assert sorted(skill.source_episodes) == ["1", "2", "3"]
    # merged duplicates count: one episode seen three times is three solves
    assert synthesize_skill([success("1", A, count=3)], config=CFG, now=0.0) is not None


def test_success_rate_is_an_ema_and_failures_become_failure_modes() -> None:
    s = Skill(id="k", namespace=NS, name="n", stats=SkillStats(executions=3, successes=3, success_rate=1.0))
    s = record_skill_outcome(s, passed=False, failure_mode="unknown command <str>", config=CFG)
    assert s.stats.success_rate == pytest.approx(0.9) and s.stats.failures == 1
    s = record_skill_outcome(s, passed=True, config=CFG)
    assert s.stats.success_rate == pytest.approx(0.91) and s.failure_modes == ["unknown command <str>"]
    s = record_skill_outcome(s, passed=False, failure_mode="unknown command <str>", config=CFG)
    assert s.failure_modes == ["unknown command <str>"]  # recorded once


def test_matching_by_template_overlap_or_cosine() -> None:
    heat = Skill(id="h", namespace=NS, name="heat", goal_templates=["heat solution to <num> degrees"])
    rows = Skill(id="r", namespace=NS, name="rows", goal_templates=["list names of people over <num>"])
    got = match_skills("heat the solution to 90 degrees", [heat, rows], CFG)
    assert [s.id for s, _ in got] == ["h"]
    assert match_skills("warm it up", [heat, rows], CFG) == []
    emb = HashingEmbeddings(dim=256)
    loose = CFG.replace(lifecycle={"skill_match_min_overlap": 1.0, "skill_match_cosine": 0.3})
    by_cos = match_skills("heat solution to 70 degree", [heat, rows], loose, embed=emb.embed_documents)
    assert [s.id for s, _ in by_cos] == ["h"]  # overlap alone is below 1.0 here; the cosine matched


def test_missing_preconditions_become_hints() -> None:
    s = Skill(id="k", namespace=NS, name="heat", preconds=["burner_on", "beaker_present"], steps=["light burner"])
    hints = skill_hints(s, satisfied={"beaker_present"})
    assert [h.precondition for h in hints] == [None, "burner_on"]
    assert all(h.source_kind == "skill" and h.source_id == "k" for h in hints)


def test_consolidation_turns_repeated_avoidances_into_one_avoid_lesson() -> None:
    av = Episode(episode_id="av", namespace=NS, kind="avoidance", goal_signature="g", subgoal_template="t", context="gridtool",
                 summary="`frob <str>` fails with: unknown verb", state_fingerprint=["fp:fp9"], count=3, avoid_tags=["unknown_command"])
    out = consolidate(episodes=[av], skills={}, lessons={}, template="t", context="gridtool", passed=False,
                      failure_mode=None, tool="gridtool", config=CFG, now=1.0)
    [lesson] = out.lessons.values()
    assert lesson.triggers == ["fp9"] and lesson.status == "candidate" and lesson.stats.evidence_runs == 0
    assert out.episodes["av"].consolidated_into == lesson.id
    twice = av.model_copy(update={"count": 2})
    assert not consolidate(episodes=[twice], skills={}, lessons={}, template="t", context="gridtool", passed=False,
                           failure_mode=None, tool=None, config=CFG, now=1.0).lessons


def test_memory_stores_a_skill_after_three_solves_and_updates_it(tmp_path: Path) -> None:
    mem = LearningMemory.open(tmp_path, namespace=NS)
    for i, action in enumerate([A[0], B[0], C[0], A[0]]):
        task = TaskSpec(task_id=f"g0{i}", goal=f"goal {i}", tool="gridtool", family="filter_select")
        steps = [Step(index=0, action=action, feedback=Feedback(reward=1.0), tool="gridtool")]
        mem.end_run(run_id=f"r{i}", task=task, steps=steps, events=[], verdict=Verdict(passed=True, score=1.0), now=float(i))
        skills = [s for s in mem.store.all("skills") if isinstance(s, Skill)]
        assert len(skills) == (0 if i < 2 else 1)
    [record] = skills
    assert record.stats.executions == 3  # the outcome of the 4th run is evidence, never a rewritten record
    [skill] = mem.skills.values()
    assert skill.steps == ["LOAD … | KEEP … | PICK …"] and skill.stats.executions == 4
    assert f"skill:{skill.id}" in mem.graph.nx
    # a failed run of the template lowers the EMA and records the failure mode
    task = TaskSpec(task_id="g09", goal="goal 9", tool="gridtool", family="filter_select")
    bad = Step(index=0, action="from x", tool="gridtool", feedback=Feedback(hard_failure=True, error_text="unknown command 'from' at stage 1"))
    ev = mem.capture(bad, run_id="r9", task=task)
    assert isinstance(ev, ErrorEvent)
    mem.end_run(run_id="r9", task=task, steps=[bad], events=[ev], verdict=Verdict(passed=False, score=0.0), now=9.0)
    [skill] = mem.skills.values()
    assert skill.stats.success_rate == pytest.approx(0.9) and skill.failure_modes == [ev.fingerprint]
    assert skill.stats.executions == 5 and skill.stats.failures == 1
    mem.close()
    for snapshot in (True, False):  # reopened, from the snapshot or from Chroma, the same fold
        again = LearningMemory.open(tmp_path, namespace=NS, config=MemoryConfig(storage={"snapshot": snapshot}))
        assert list(again.skills.values()) == [skill]
        again.close()
