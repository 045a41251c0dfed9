"""What a finished run writes beside its lessons and evidence: its audit records, its episodes and skills."""

from __future__ import annotations

from collections.abc import Callable, Container, Mapping, Sequence
from typing import TypedDict

from pydantic import BaseModel

from langmem_plus.config import MemoryConfig
from langmem_plus.learning.consolidate import Consolidation, consolidate
from langmem_plus.learning.episode_index import consolidation_input, plan_indexed_writes
from langmem_plus.learning.episodes import EPISODE_COUNTERS, EpisodeWrites, goal_template, plan_episode_writes
from langmem_plus.learning.incremental import StoreLookup
from langmem_plus.learning.lifecycle import Integration, Judgement
from langmem_plus.memory.view import MemoryView
from langmem_plus.records import Episode, ErrorEvent, Lesson, RunFinding, RunRecord, SkillEvidence, TaskSpec, with_fields
from langmem_plus.store.audit import AuditLog


def audit_run(audit: AuditLog, view: MemoryView, run: RunRecord, integ: Integration, judged: Judgement) -> None:
    """The run's audit records: lessons created, merged and linked, each lifecycle transition, the run itself."""
    for lid in integ.created:
        audit.write("lesson_created", lesson_id=lid, run_id=run.run_id, rule=view.lessons[lid].rule_text)
    for kept, other in integ.merged:
        audit.write("merge", lesson_id=kept, merged=other, run_id=run.run_id)
    for a, b in integ.conflicts:
        audit.write("conflict", lesson_id=a, other=b, run_id=run.run_id)
    for t in judged.transitions:
        audit.write(
            t.new if t.new != "candidate" else "lifecycle",
            lesson_id=t.lesson_id, old=t.old, new=t.new, reason=t.reason, evidence=t.evidence, run_id=run.run_id,
        )
    audit.write("run_end", run=run.model_dump(mode="json"), utilities=judged.utilities)


def write_episodes(
    audit: AuditLog,
    view: MemoryView,
    config: MemoryConfig,
    episodes: Sequence[Episode],
    *,
    run: RunRecord,
    task: TaskSpec,
    events: Sequence[ErrorEvent],
    now: float,
    lookup: StoreLookup | None,
    write: Callable[[str, Sequence[BaseModel]], None],
    evidence: list[RunFinding],
) -> None:
    """Write a run's episodes by the design.md §6 policy, then consolidate clusters into skills / lessons.

    ``write(kind, records)`` stores records and keeps the memory's view in step
    (``StoreSync.write``). Content goes to the store with the stored record's counters;
    what the run adds to a stored episode's or skill's counters (a sighting, an
    outcome) goes to ``evidence``, appended to the shared log with the run's.
    With ``end_run_indexes`` the plan reads the view's episode index, the episodes the run
    concerns; without, every stored episode (the reference, same decisions).
    """
    episodes = [e.model_copy(update={"seen_run_seq": run.seq}) for e in episodes]
    template = episodes[0].subgoal_template if episodes else (task.family or goal_template(task.goal))
    common = _Consolidating(lessons=view.lessons, template=template, context=task.tool or "", passed=run.passed,
                            failure_mode=events[0].fingerprint if events else None, tool=task.tool, config=config,
                            now=now, covered=lookup.covered() if lookup is not None else None)
    plan_and_consolidate = _indexed if config.lifecycle.end_run_indexes else _scanned
    plan, cons, stored_record = plan_and_consolidate(view, config, episodes, run=run, now=now, common=common)
    writes = {**plan.upserts, **cons.episodes}
    if writes:
        # A new episode's stored counters are its base's (``plan.upserts``): its sightings add the rest.
        write("episodes", [_episode_record(e, stored_record(e.episode_id) or plan.upserts.get(e.episode_id))
                           for e in writes.values()])
    evidence.extend(plan.sightings.values())
    if cons.skills:
        write("skills", [view.skill_record(s) for s in cons.skills.values()])
        for sid in cons.skills:
            if sid not in cons.new_skills and sid in view.skills:  # an existing skill's template ran again
                evidence.append(SkillEvidence(skill_id=sid, run_id=run.run_id, run_seq=run.seq, at=now, passed=run.passed,
                                              failure_mode=events[0].fingerprint if events else None))
    new_lessons = {
        i: l.model_copy(update={"stats": l.stats.model_copy(update={"created_run_seq": run.seq})})
        for i, l in cons.lessons.items()
    }
    if new_lessons:
        write("lessons", list(new_lessons.values()))
    if plan.merged or plan.capped or plan.expired:
        audit.write("episodes", run_id=run.run_id, created=plan.created, merged=plan.merged,
                    capped=plan.capped, expired=plan.expired)
    for sid in cons.new_skills:
        skill = cons.skills[sid]
        audit.write("consolidation", skill_id=sid, into="skill", run_id=run.run_id,
                    episodes=skill.source_episodes, steps=skill.steps)
    for lid, lesson in new_lessons.items():
        audit.write("consolidation", lesson_id=lid, into="lesson", run_id=run.run_id, rule=lesson.rule_text,
                    episodes=sorted(e for e, ep in cons.episodes.items() if ep.consolidated_into == lid))


class _Consolidating(TypedDict):
    """What ``consolidate`` is told about the run, beside the episodes and skills (the same on both paths)."""

    lessons: Mapping[str, Lesson]
    template: str
    context: str
    passed: bool
    failure_mode: str | None
    tool: str | None
    config: MemoryConfig
    now: float
    covered: Container[str] | None


def _scanned(
    view: MemoryView, config: MemoryConfig, episodes: list[Episode], *, run: RunRecord, now: float, common: _Consolidating
) -> tuple[EpisodeWrites, Consolidation, Callable[[str], Episode | None]]:
    """The plan and consolidation over every stored episode: the reference the indexed path is tested against."""
    raw = dict(view.episodes.items())  # the view follows every episode write, ours and the other writers' announced ones
    known = [view.episode(e, excluding_run=run) for e in raw.values()]  # as they were before this run
    plan = plan_episode_writes(episodes, known, config, now=now)
    pool = {e.episode_id: e for e in known}
    pool.update(plan.folded)
    pool.update(plan.upserts)
    cons = consolidate(episodes=list(pool.values()), skills={s.id: s for s in view.skills.values()}, **common)
    return plan, cons, raw.get


def _indexed(
    view: MemoryView, config: MemoryConfig, episodes: list[Episode], *, run: RunRecord, now: float, common: _Consolidating
) -> tuple[EpisodeWrites, Consolidation, Callable[[str], Episode | None]]:
    """The same plan and consolidation reading the view's episode index: the episodes the run concerns, not the store."""
    index = view.indexed_episodes()
    memo: dict[str, Episode] = {}

    def known(i: str) -> Episode:  # as it was before this run, folded and aged once per run
        found = memo.get(i)
        if found is None:
            found = memo[i] = view.episode(view.episodes[i], excluding_run=run)
        return found

    plan = plan_indexed_writes(episodes, index, known, config, now=now,
                               spent=lambda i: view.avoidance_spent(i, excluding_run=run))
    index.spent(plan.spent)

    def pool(i: str) -> Episode:  # the scan's pool: the stored episodes, the plan's folds over them, its writes over those
        return plan.upserts[i] if i in plan.upserts else plan.folded[i] if i in plan.folded else known(i)

    changed = [i for i in dict.fromkeys([*plan.folded, *plan.upserts]) if i in plan.upserts or i in plan.sightings]
    covered = common["covered"]
    ids = consolidation_input(
        index, pool, changed, template=common["template"], context=common["context"],
        sighted=view.episode_sighted,
        covered=None if covered is None else covered.__contains__,
    )
    first = index.first()  # the namespace consolidate names a skill in is the first pool episode's
    if first is None:
        first = next((i for i in changed if i not in index), None)
    cons = consolidate(episodes=[pool(i) for i in ids], skills=view.skills,
                       namespace=None if first is None else pool(first).namespace, **common)
    return plan, cons, view.episodes.get


def _episode_record(episode: Episode, stored_record: Episode | None) -> Episode:
    """What a content write of ``episode`` stores: its content, with the stored record's counters when there is one."""
    return episode if stored_record is None else with_fields(episode, stored_record, EPISODE_COUNTERS)


__all__ = ["audit_run", "write_episodes"]
