"""Episode write policy, decay and recall (DESIGN §6 "Episodes", "Decay"), pure and through end_run."""

from __future__ import annotations

from pathlib import Path

import pytest

from langmem_plus import LearningMemory
from langmem_plus.config import MemoryConfig
from langmem_plus.learning.episodes import (
    episode_recallable,
    episode_simhash,
    episode_strength,
    plan_episode_writes,
)
from langmem_plus.records import Episode, Feedback, Step, TaskSpec, Verdict

NS = ("e",)
CFG = MemoryConfig()
HOUR = 3600.0


def ep(eid: str, kind: str = "success", *, summary: str = "Solved 'g' with: LOAD people | KEEP age >= 30",
       template: str = "filter_select", context: str = "gridtool", weight: float = 1.0, ttl: int | None = None,
       significance: float = 0.5, t: float = 0.0, count: int = 1) -> Episode:
    return Episode.model_validate(dict(
        episode_id=eid, namespace=NS, kind=kind, goal_signature="g", subgoal_template=template, context=context,
        summary=summary, simhash=format(episode_simhash("g", summary), "x"), success_weight=weight,
        ttl_episodes=ttl, significance=significance, created_at=t, last_seen_at=t, count=count, run_ids=[f"r-{eid}"],
    ))


def test_a_near_duplicate_merges_counts_and_last_seen_into_the_stored_episode() -> None:
    stored = ep("old", t=0.0)
    again = ep("new", summary="solved 'g' with:  LOAD people | KEEP age >= 41", t=50.0)  # other case, spacing, literal
    plan = plan_episode_writes([again], [stored], CFG, now=50.0)
    assert plan.merged == [("old", "new")] and plan.created == []
    kept = plan.upserts["old"]
    assert kept.count == 2 and kept.last_seen_at == 50.0 and kept.success_weight == 2.0  # reused: weight grows
    assert kept.run_ids == ["r-old", "r-new"]
    different = ep("other", summary="Solved 'h' with: LOAD orders | GROUP city SUM(amount) | TOP 3")
    assert plan_episode_writes([different], [stored], CFG, now=50.0).created == ["other"]


def test_near_misses_are_capped_per_template_and_context_the_better_one_wins() -> None:
    stored = ep("nm1", "nearmiss", summary="Reached progress 0.50 with: LOAD people", weight=0.5)
    worse = ep("nm2", "nearmiss", summary="Reached progress 0.40 with: LOAD orders | KEEP x", weight=0.4)
    plan = plan_episode_writes([worse], [stored], CFG, now=1.0)
    assert plan.capped == ["nm2"] and plan.created == [] and plan.upserts["nm1"].count == 2
    better = ep("nm3", "nearmiss", summary="Reached progress 0.90 with: LOAD cities | KEEP y | PICK z", weight=0.9)
    plan = plan_episode_writes([better], [stored], CFG, now=1.0)
    assert list(plan.upserts) == ["nm1"] and plan.upserts["nm1"].success_weight == 0.9  # replaced in place
    elsewhere = ep("nm4", "nearmiss", summary="Reached progress 0.40 with: foo", weight=0.4, context="fluxtool")
    assert plan_episode_writes([elsewhere], [stored], CFG, now=1.0).created == ["nm4"]  # another context


def test_avoidance_ttl_counts_down_per_run_expires_and_renews_when_seen_again() -> None:
    avoid = ep("av", "avoidance", summary="`from <str>` fails with: unknown command", ttl=2)
    plan = plan_episode_writes([], [avoid], CFG, now=1.0)
    assert plan.upserts["av"].ttl_episodes == 1 and plan.expired == []
    plan = plan_episode_writes([], [plan.upserts["av"]], CFG, now=2.0)
    expired = plan.upserts["av"]
    assert expired.ttl_episodes == 0 and plan.expired == ["av"]
    assert not episode_recallable(expired, now=2.0, config=CFG)
    renewed = plan_episode_writes([ep("av2", "avoidance", summary=avoid.summary)], [expired], CFG, now=3.0).upserts["av"]
    assert renewed.ttl_episodes == CFG.avoidance_ttl_episodes and renewed.count == 2
    assert episode_recallable(renewed, now=3.0, config=CFG)


def test_strength_decays_slower_for_significant_episodes_and_faded_ones_are_not_recalled() -> None:
    ordinary, significant = ep("o", significance=0.0), ep("s", significance=1.0)
    half = CFG.episode_half_life_hours * HOUR
    assert episode_strength(ordinary, half, CFG) == pytest.approx(0.5)
    assert episode_strength(significant, half, CFG) == pytest.approx(0.5 ** (1 / 5))  # 5x slower by default
    # below 0.1 after log2(10) = 3.32 half-lives: ordinary fades, significant is still recalled
    late = 3.5 * half
    assert not episode_recallable(ordinary, late, CFG) and episode_recallable(significant, late, CFG)
    assert episode_strength(ordinary, -100.0, CFG) == 1.0  # a clock going backwards never strengthens


def test_end_run_merges_repeated_episodes_instead_of_writing_new_ones(tmp_path: Path) -> None:
    mem = LearningMemory.open(tmp_path, namespace=NS)
    task = TaskSpec(task_id="g01", goal="people over 30", tool="gridtool", family="filter_select")
    steps = [Step(index=0, action="LOAD people | KEEP age >= 30", feedback=Feedback(reward=1.0), tool="gridtool")]
    for i in range(2):
        mem.end_run(run_id=f"r{i}", task=task, steps=steps, events=[], verdict=Verdict(passed=True, score=1.0), now=10.0 + i)
    eps = [e for e in mem.store.all("episodes") if isinstance(e, Episode)]
    assert len(eps) == 1 and eps[0].count == 2 and eps[0].last_seen_at == 11.0
    assert eps[0].run_ids == ["r0", "r1"]
    mem.close()
