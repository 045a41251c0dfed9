"""Consolidation: clusters of similar episodes become skills or lessons (design.md §6 "Decay").

Episodes are cheap and many; what lasts is what they have in common. After each run:

- the success episodes of the run's (subgoal template, context), once they count
  ``skill_min_successes`` (merged duplicates included), become or refresh a skill
  (``skills.synthesize_skill``), and the run's outcome updates a skill that already
  existed for it (EMA success rate, failure mode);
- avoidance episodes of one failure fingerprint seen ``consolidate_min_episodes``
  times, for which no lesson exists yet (of any status: a suppressed lesson is a
  verdict, not a gap), become an avoid lesson, status candidate, with no evidence:
  it has to earn promotion like any other lesson.

Pure: returns what to write; the facade writes it.
"""

from __future__ import annotations

from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass, field

from langmem_plus._text import stable_id
from langmem_plus.config import DEFAULT_CONFIG, MemoryConfig
from langmem_plus.learning.dedup import lesson_simhash
from langmem_plus.learning.skills import (
    record_skill_outcome,
    skill_id,
    synthesize_skill,
)
from langmem_plus.records import Episode, Lesson, LessonScope, Namespace, Provenance, Skill

FP_PREFIX = "fp:"
"""State-fingerprint entry of an avoidance episode that names its failure fingerprint id."""


@dataclass
class Consolidation:
    """Skills, lessons and episodes to write after consolidation."""

    skills: dict[str, Skill] = field(default_factory=dict)
    lessons: dict[str, Lesson] = field(default_factory=dict)
    episodes: dict[str, Episode] = field(default_factory=dict)
    """Episodes marked with ``consolidated_into``."""
    new_skills: list[str] = field(default_factory=list)


def _fp_of(ep: Episode) -> str | None:
    return next((s[len(FP_PREFIX) :] for s in ep.state_fingerprint if s.startswith(FP_PREFIX)), None)


def consolidate(
    *,
    episodes: Sequence[Episode],
    skills: Mapping[str, Skill],
    lessons: Mapping[str, Lesson],
    template: str,
    context: str,
    passed: bool,
    failure_mode: str | None,
    tool: str | None,
    config: MemoryConfig = DEFAULT_CONFIG,
    now: float,
    covered: Container[str] | None = None,
    namespace: Namespace | None = None,
) -> Consolidation:
    """Consolidate the stored ``episodes`` after a run of ``template`` in ``context`` (see module doc).

    Args:
        episodes: Every stored episode of the namespace after this run's writes, in stored order, or
            the ones that can matter (``learning.episode_index.consolidation_input``).
        skills: Stored skills by id.
        lessons: Stored lessons by id.
        template: The run's subgoal template.
        context: The run's context (tool).
        passed: Whether the run passed, for the matching skill's EMA.
        failure_mode: The run's first failure, recorded on a skill when it failed.
        tool: Scope of a consolidated lesson.
        config: Supplies the thresholds.
        now: Current time, epoch seconds.
        covered: Fingerprint ids some lesson has as a trigger, when the caller indexes them
            (the lesson graph does); None collects them from ``lessons``.
        namespace: The first stored episode's namespace when ``episodes`` are the part of them that
            matters (``learning.episode_index.consolidation_input``); None: ``episodes[0]``'s.
    """
    out = Consolidation()
    ns = namespace if namespace is not None else (episodes[0].namespace if episodes else None)
    sid = skill_id(ns, template, context) if ns is not None else None
    existing = skills.get(sid) if sid else None
    if existing is not None:
        existing = record_skill_outcome(existing, passed=passed, failure_mode=failure_mode, config=config)
        out.skills[existing.id] = existing
    same = [e for e in episodes if (e.subgoal_template, e.context) == (template, context)]
    skill = synthesize_skill(
        [e for e in same if e.kind == "success"],
        failures=[e for e in same if e.kind == "avoidance"],
        existing=existing,
        config=config,
        now=now,
    )
    if skill is not None:
        out.skills[skill.id] = skill
        if existing is None:
            out.new_skills.append(skill.id)
        for ep in same:
            if ep.kind == "success" and ep.episode_id in skill.source_episodes and ep.consolidated_into != skill.id:
                out.episodes[ep.episode_id] = ep.model_copy(update={"consolidated_into": skill.id})
    if covered is None:
        covered = {t for l in lessons.values() for t in l.triggers}
    clusters: dict[str, list[Episode]] = {}
    for ep in episodes:
        fp = _fp_of(ep) if ep.kind == "avoidance" else None
        if fp is not None and fp not in covered and ep.consolidated_into is None:
            clusters.setdefault(fp, []).append(ep)
    for fp, eps in sorted(clusters.items()):
        if sum(max(e.count, 1) for e in eps) < config.lifecycle.consolidate_min_episodes:
            continue
        lesson = _avoid_lesson(fp, eps, tool=tool, config=config, now=now)
        out.lessons[lesson.id] = lesson
        for ep in eps:
            out.episodes[ep.episode_id] = ep.model_copy(update={"consolidated_into": lesson.id})
    return out


def _avoid_lesson(fp: str, eps: Sequence[Episode], *, tool: str | None, config: MemoryConfig, now: float) -> Lesson:
    first = eps[0]
    summary = first.summary
    lesson = Lesson(
        id=stable_id("les", *first.namespace, "avoid-episodes", fp),
        namespace=first.namespace,
        rule_text=f"AVOID: {summary}",
        triggers=[fp],
        tags=list(dict.fromkeys(t for e in eps for t in e.avoid_tags)),
        scope=LessonScope(level="domain", tool=tool or first.context or None),
        status="candidate",
        provenance=Provenance(run_ids=list(dict.fromkeys(r for e in eps for r in e.run_ids))),
        source="rule",
        created_at=now,
        updated_at=now,
    )
    return lesson.model_copy(update={"simhash": lesson_simhash(lesson, config.lifecycle.simhash_bits)})


__all__ = ["Consolidation", "consolidate"]
