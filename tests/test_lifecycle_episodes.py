"""Episode write policy, decay and recall (design.md §6 "Episodes", "Decay"), pure and through end_run."""

from __future__ import annotations

from pathlib import Path

import pytest

from langmem_plus import LearningMemory
from langmem_plus.config import MemoryConfig
from langmem_plus.learning.episodes import (
    age_episode,
    apply_episode_evidence,
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
    assert plan.upserts == {}  # a merge is a sighting, not a rewritten record
    assert plan.sightings["old"].count == 1 and plan.sightings["old"].run_id == "r-new"
    kept = plan.folded["old"]
    assert kept == apply_episode_evidence(stored, plan.sightings["old"], CFG)  # what every reader's fold reaches
    assert kept.count == 2 and kept.last_seen_at == 50.0 and kept.success_weight == 2.0  # reused: weight grows
    assert kept.run_ids == ["r-old", "r-new"]
    different = ep("other", summary="Solved 'h' with: LOAD orders | GROUP city SUM(amount) | TOP 3")
    assert plan_episode_writes([different], [stored], CFG, now=50.0).created == ["other"]


def test_near_misses_are_capped_per_template_and_context_the_better_one_wins() -> None:
    stored = ep("nm1", "nearmiss", summary="Reached progress 0.50 with: LOAD people", weight=0.5)
    worse = ep("nm2", "nearmiss", summary="Reached progress 0.40 with: LOAD orders | KEEP x", weight=0.4)
    plan = plan_episode_writes([worse], [stored], CFG, now=1.0)
    assert plan.capped == ["nm2"] and plan.created == [] and plan.upserts == {} and plan.folded["nm1"].count == 2
    better = ep("nm3", "nearmiss", summary="Reached progress 0.90 with: LOAD cities | KEEP y | PICK z", weight=0.9)
    plan = plan_episode_writes([better], [stored], CFG, now=1.0)
    assert list(plan.upserts) == ["nm1"] and plan.upserts["nm1"].summary == better.summary  # replaced in place
    assert plan.folded["nm1"].success_weight == 0.9 and plan.folded["nm1"].count == 2
    elsewhere = ep("nm4", "nearmiss", summary="Reached progress 0.40 with: foo", weight=0.4, context="fluxtool")
    assert plan_episode_writes([elsewhere], [stored], CFG, now=1.0).created == ["nm4"]  # another context


def test_avoidance_ttl_counts_down_per_run_expires_and_renews_when_seen_again() -> None:
    avoid = ep("av", "avoidance", summary="`from <str>` fails with: unknown command", ttl=2)
    plan = plan_episode_writes([], [avoid], CFG, now=1.0)
    assert plan.folded["av"].ttl_episodes == 1 and plan.expired == [] and plan.upserts == {}
    plan = plan_episode_writes([], [plan.folded["av"]], CFG, now=2.0)
    expired = plan.folded["av"]
    assert expired.ttl_episodes == 0 and plan.expired == ["av"]
    assert not episode_recallable(expired, now=2.0, config=CFG)
    renewed = plan_episode_writes([ep("av2", "avoidance", summary=avoid.summary)], [expired], CFG, now=3.0).folded["av"]
    assert renewed.ttl_episodes == CFG.lifecycle.avoidance_ttl_episodes and renewed.count == 2
    assert episode_recallable(renewed, now=3.0, config=CFG)


def test_an_avoidances_ttl_is_aged_by_the_runs_after_the_one_that_last_saw_it() -> None:
    avoid = ep("av", "avoidance", ttl=3).model_copy(update={"seen_run_seq": 5})
    runs = [3, 5, 6, 6, 9]  # sequence numbers of the stored runs (two writers may share one)

    def after(seq: int) -> int:
        return sum(1 for r in runs if r > seq)

    assert age_episode(avoid, after).ttl_episodes == 0  # runs 6, 6 and 9 came after it
    runs.pop()
    assert age_episode(avoid, after).ttl_episodes == 1
    legacy = avoid.model_copy(update={"seen_run_seq": None})  # written before the field: keeps its stored TTL
    assert age_episode(legacy, after).ttl_episodes == 3
    success = ep("s").model_copy(update={"seen_run_seq": 0})
    assert age_episode(success, after) is success


def test_strength_decays_slower_for_significant_episodes_and_faded_ones_are_not_recalled() -> None:
    ordinary, significant = ep("o", significance=0.0), ep("s", significance=1.0)
    half = CFG.lifecycle.episode_half_life_hours * HOUR
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
    [record] = [e for e in mem.store.all("episodes") if isinstance(e, Episode)]
    assert record.count == 0 and record.run_ids == []  # the base: every sighting, the first included, is evidence
    eps = mem.episodes()
    assert len(eps) == 1 and eps[0].count == 2 and eps[0].last_seen_at == 11.0
    assert eps[0].run_ids == ["r0", "r1"]
    mem.close()
    for snapshot in (True, False):  # a reopened memory folds the same sighting, from its snapshot or from Chroma
        again = LearningMemory.open(tmp_path, namespace=NS, config=MemoryConfig(storage={"snapshot": snapshot}))
        assert again.episodes() == eps
        again.close()


def test_end_run_ages_an_avoidance_by_the_runs_after_it_without_rewriting_it(tmp_path: Path) -> None:
    cfg = MemoryConfig(lifecycle={"avoidance_ttl_episodes": 2}, storage={"warm_lessons": False})
    mem = LearningMemory.open(tmp_path, namespace=NS, config=cfg)
    task = TaskSpec(task_id="g01", goal="people over 30", tool="gridtool", family="filter_select")
    bad = [Step(index=i, action=f"from people where age > {30 + i}", tool="gridtool",
                feedback=Feedback(hard_failure=True, error_text="unknown command 'from' at stage 1")) for i in range(2)]
    ok = [Step(index=0, action="LOAD people | KEEP age >= 30", feedback=Feedback(reward=1.0), tool="gridtool")]

    def failing(run_id: str) -> None:
        mem.end_run(run_id=run_id, task=task, steps=bad, events=mem.capture_steps(bad, run_id=run_id, task=task),
                    verdict=Verdict(passed=False, score=0.0))

    def avoidance() -> Episode:
        [found] = [e for e in mem.episodes() if e.kind == "avoidance"]
        return found

    failing("r0")
    assert avoidance().ttl_episodes == 2
    mem.end_run(run_id="r1", task=task, steps=ok, events=[], verdict=Verdict(passed=True, score=1.0))
    assert avoidance().ttl_episodes == 1
    mem.end_run(run_id="r2", task=task, steps=ok, events=[], verdict=Verdict(passed=True, score=1.0))
    expired = avoidance()
    assert expired.ttl_episodes == 0 and not episode_recallable(expired, now=expired.last_seen_at, config=cfg)
    [record] = [e for e in mem.store.all("episodes") if isinstance(e, Episode) and e.kind == "avoidance"]
    assert record.ttl_episodes == 2  # never rewritten: the TTL is derived from the runs
    failing("r3")  # seen again: renewed from this run
    renewed = avoidance()
    assert renewed.ttl_episodes == 2 and renewed.count == 2
    mem.close()


def test_two_writers_creating_the_same_episode_both_count() -> None:
    """Each writer plans from the same stored state and creates the episode: same base record, one sighting each."""
    first = ep("new", t=5.0).model_copy(update={"run_id": "ra", "run_ids": ["ra"], "seen_run_seq": 3})
    second = first.model_copy(update={"run_id": "rb", "run_ids": ["rb"]})
    plan_a = plan_episode_writes([first], [], CFG, now=5.0)
    plan_b = plan_episode_writes([second], [], CFG, now=6.0)
    assert plan_a.created == plan_b.created == ["new"]
    same = {"exclude": {"run_id"}}  # which creator it names is content: either is true
    assert plan_a.upserts["new"].model_dump(**same) == plan_b.upserts["new"].model_dump(**same)  # no counter in it
    base = plan_a.upserts["new"]
    assert base.count == 0 and base.run_ids == [] and base.success_weight == 0.0
    assert apply_episode_evidence(base, plan_a.sightings["new"], CFG) == plan_a.folded["new"]
    both = apply_episode_evidence(plan_a.folded["new"], plan_b.sightings["new"], CFG)
    assert both.count == 2 and both.run_ids == ["ra", "rb"] and both.success_weight == 2.0


def _passing_run(mem: LearningMemory, run_id: str, goal: str, now: float) -> None:
    task = TaskSpec(task_id=f"t-{goal}", goal=goal, tool="gridtool", family="filter_select")
    steps = [Step(index=0, action=f"LOAD {goal} | KEEP age >= 30", feedback=Feedback(reward=1.0), tool="gridtool")]
    mem.end_run(run_id=run_id, task=task, steps=steps, events=[], verdict=Verdict(passed=True, score=1.0), now=now)


def test_end_run_plans_episodes_from_the_view_and_reads_none_back_from_chroma(tmp_path: Path) -> None:
    """The episodes a run is planned against are the view's (kept in step with every write), not a
    full read of the namespace's episodes from Chroma at every run; the merges come out the same."""
    mem = LearningMemory.open(tmp_path, namespace=NS)
    for i, goal in enumerate(["people", "orders", "cities"]):
        _passing_run(mem, f"r{i}", goal, 10.0 + i)
    read: list[str] = []
    real_all, real_get = mem.store.all, mem.store.get
    mem.store.all = lambda kind, *a, **k: read.append(kind) or real_all(kind, *a, **k)  # type: ignore[method-assign]
    mem.store.get = lambda kind, *a, **k: read.append(kind) or real_get(kind, *a, **k)  # type: ignore[method-assign]
    _passing_run(mem, "r3", "people", 20.0)
    assert "episodes" not in read
    mem.store.all, mem.store.get = real_all, real_get  # type: ignore[method-assign]
    by_goal = {e.goal_signature: e for e in mem.episodes()}
    assert len(by_goal) == 3 and sorted(e.count for e in by_goal.values()) == [1, 1, 2]
    mem.close()
    again = LearningMemory.open(tmp_path, namespace=NS)  # the snapshot base holds the episodes
    assert {e.episode_id: e for e in again.episodes()} == {e.episode_id: e for e in by_goal.values()}
    again.close()


def test_an_episode_another_writer_stored_is_merged_into_not_duplicated(chroma_server: str, tmp_path: Path) -> None:
    """The view learns another writer's episodes from its announcements (``refresh`` at ``end_run``), so a run
    that repeats it adds a sighting to the stored episode instead of creating a second one."""
    ns = ("episodes-shared", tmp_path.name)
    first = LearningMemory.open(url=chroma_server, namespace=ns, audit_dir=tmp_path / "a")
    second = LearningMemory.open(url=chroma_server, namespace=ns, audit_dir=tmp_path / "b")
    try:
        assert second.episodes() == []
        _passing_run(first, "ra", "people", 10.0)
        [theirs] = second.episodes()  # announced by the first writer's end_run, read by id
        assert theirs.count == 1 and theirs.run_ids == ["ra"]
        _passing_run(second, "rb", "people", 11.0)
        stored = [e for e in second.store.all("episodes") if isinstance(e, Episode)]
        assert len(stored) == 1
        for mem in (first, second):
            [seen] = mem.episodes()
            assert seen.count == 2 and sorted(seen.run_ids) == ["ra", "rb"]
    finally:
        first.close()
        second.close()
