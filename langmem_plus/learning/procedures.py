"""Workflow skills: ``workflows.Workflow`` kept as a ``Skill`` record, grouped by kind of task (design.md §6).

Trajectories of one kind of task are induced into one workflow. Their kind is the family a user names (a task's
``TaskSpec.family``: goals of different tasks can read almost alike) or, when none is named, goals whose words
overlap by at least ``workflow_min_goal_overlap``. A workflow skill keeps the trajectories it came from (goals,
actions and scores; at most ``workflow_max_sources``, the newest), so more trajectories of its kind re-induce it;
its ``version`` rises when its procedure changes. Its success rate over the runs that followed it suppresses it
below ``workflow_suppress_rate``. All pure: the facade stores what these return.

Example:
    >>> from langmem_plus.learning.workflows import Demonstration, DemoStep
    >>> demo = Demonstration("build the docs", (DemoStep("fetch sources"), DemoStep("compile sources", score=1.0)))
    >>> skill = workflow_skill([demo], ("ns",), family="docs", now=0.0)
    >>> [s.action for s in skill.procedure], skill.version
    (['fetch sources', 'compile sources'], 1)
"""

from __future__ import annotations

from collections.abc import Sequence

from langmem_plus._text import stable_id
from langmem_plus.config import DEFAULT_CONFIG, WorkflowConfig
from langmem_plus.learning.textmatch import norm, norm_words
from langmem_plus.learning.workflows import (
    Demonstration,
    DemoStep,
    Workflow,
    WorkflowStep,
    bind_goal,
    induce_workflow,
    told_lines,
)
from langmem_plus.records import Namespace, ProcedureStep, Skill, SkillStats, Step, WorkflowSource

KIND_PREFIX = "workflow"
"""Leads a workflow skill's goal templates, so a reader tells it from a skill distilled from episodes."""


def learned_part(steps: Sequence[Step], *, min_progress: float) -> list[Step]:
    """The part of one of the memory's own runs a workflow is learned from: its steps up to the first that reached
    the most progress the run made, when that is at least ``min_progress`` and above none at all; ``[]`` otherwise
    (a run without progress signals, or one that made too little). What came after it added nothing to the run.

    Example:
        >>> from langmem_plus.records import Feedback
        >>> run = [Step(index=i, action=a, feedback=Feedback(progress=p))
        ...        for i, (a, p) in enumerate([("open box", 0.0), ("take key", 0.5), ("look", 0.5), ("drop key", 0.0)])]
        >>> [s.action for s in learned_part(run, min_progress=0.5)], learned_part(run, min_progress=0.6)
        (['open box', 'take key'], [])
    """
    marks = [s.feedback.progress for s in steps]
    best = max((p for p in marks if p is not None), default=None)
    if best is None or best <= 0.0 or best < min_progress:
        return []
    return list(steps[: marks.index(best) + 1])


def source_of(demo: Demonstration, config: WorkflowConfig = DEFAULT_CONFIG.workflows) -> WorkflowSource:
    """What a workflow keeps of a trajectory: its goal, actions, scores and the short lines each step was told."""
    return WorkflowSource(goal=demo.goal, actions=[s.action for s in demo.steps], scores=[s.score for s in demo.steps],
                          told=[told_lines(s.observation, config.workflow_short_line_words) for s in demo.steps],
                          source=demo.source)


def demo_of(source: WorkflowSource) -> Demonstration:
    """A kept trajectory as a ``Demonstration`` again (its observations the short lines kept)."""
    n = len(source.actions)
    scores = list(source.scores) + [None] * (n - len(source.scores))
    told = list(source.told) + [[]] * (n - len(source.told))
    return Demonstration(source.goal, tuple(DemoStep(a, "\n".join(t), s) for a, s, t in zip(source.actions, scores, told)),
                         source.source)


def workflow_of(skill: Skill) -> Workflow:
    """The workflow a workflow skill holds."""
    return Workflow(goal=skill.goal_pattern,
                    steps=tuple(WorkflowStep(s.action, s.repeat, s.progress, s.only_named) for s in skill.procedure),
                    values={k: tuple(v) for k, v in skill.slot_values.items()}, sources=max(1, len(skill.sources)),
                    cues={k: {v: tuple(c) for v, c in vals.items()} for k, vals in skill.slot_cues.items()},
                    kin=dict(skill.slot_kin), passed={k: tuple(v) for k, v in skill.slot_passed.items()})


def is_workflow(skill: Skill) -> bool:
    """Whether a skill is a workflow (it has a procedure), not a skill distilled from episodes."""
    return bool(skill.procedure)


def goal_overlap(a: str, b: str) -> float:
    """Jaccard overlap of two goals' words (articles dropped), in [0, 1].

    Example:
        >>> goal_overlap("build the docs", "build docs now")
        0.6666666666666666
    """
    wa, wb = set(norm_words(a)), set(norm_words(b))
    return len(wa & wb) / len(wa | wb) if wa and wb else 0.0


def workflow_id(namespace: Namespace, family: str | None, goal: str) -> str:
    """Stable id of the workflow of one kind of task: its family, else its first trajectory's goal."""
    return stable_id("wfl", *namespace, family or "", "" if family else norm(goal))


def same_kind(skill: Skill, demo: Demonstration, family: str | None, config: WorkflowConfig) -> bool:
    """Whether ``demo`` (of ``family``, if named) joins the workflow ``skill``."""
    if family is not None:
        return skill.name == _name(family)
    return not skill.name.startswith(f"{KIND_PREFIX}:") and any(
        goal_overlap(s.goal, demo.goal) >= config.workflow_min_goal_overlap for s in skill.sources[:1])


def group_by_kind(
    demos: Sequence[Demonstration],
    known: Sequence[Skill],
    *,
    family: str | None = None,
    config: WorkflowConfig = DEFAULT_CONFIG.workflows,
) -> list[tuple[Skill | None, list[Demonstration]]]:
    """``demos`` grouped by kind of task: each group the stored workflow skill it joins (None: a new one) and its
    trajectories, in the order the groups first appear."""
    groups: dict[str, tuple[Skill | None, list[Demonstration]]] = {}
    for demo in demos:
        held = next((s for s in known if is_workflow(s) and same_kind(s, demo, family, config)), None)
        if held is not None:
            groups.setdefault(held.id, (held, []))[1].append(demo)
            continue
        key = next((k for k, (ex, ds) in groups.items() if ex is None and (
            family is not None or goal_overlap(ds[0].goal, demo.goal) >= config.workflow_min_goal_overlap)), None)
        if key is None:
            key = workflow_id((), family, demo.goal)
            groups[key] = (None, [])
        groups[key][1].append(demo)
    return list(groups.values())


def _name(family: str) -> str:
    return f"{KIND_PREFIX}:{family}"


def workflow_skill(
    demos: Sequence[Demonstration],
    namespace: Namespace,
    *,
    family: str | None = None,
    existing: Skill | None = None,
    config: WorkflowConfig = DEFAULT_CONFIG.workflows,
    now: float,
) -> Skill:
    """The workflow skill of ``demos`` (one kind of task), joined to ``existing``'s kept trajectories if given.

    Raises:
        ValueError: no trajectory has a step.
    """
    unique: dict[tuple[str, tuple[str, ...]], WorkflowSource] = {}
    for src in [*(existing.sources if existing else []), *(source_of(d, config) for d in demos)]:
        unique.setdefault((norm(src.goal), tuple(src.actions)), src)  # one trajectory counts once
    kept = list(unique.values())[-config.workflow_max_sources :]
    wf = induce_workflow([demo_of(s) for s in kept], config)
    procedure = [ProcedureStep(action=s.action, repeat=s.repeat, progress=s.progress, only_named=s.only_named)
                 for s in wf.steps]
    changed = existing is None or procedure != existing.procedure or wf.goal != existing.goal_pattern
    first_goal = kept[0].goal
    return Skill(
        id=existing.id if existing else workflow_id(namespace, family, first_goal),
        namespace=namespace,
        name=_name(family) if family else existing.name if existing else KIND_PREFIX,
        goal_templates=[wf.goal],
        steps=[s.action for s in wf.steps],
        effects=[s.action for s in wf.steps if s.progress],
        stats=existing.stats if existing else SkillStats(),
        created_at=existing.created_at if existing else now,
        goal_pattern=wf.goal,
        procedure=procedure,
        slot_values={k: list(v) for k, v in wf.values.items()},
        slot_cues={k: {v: list(c) for v, c in vals.items()} for k, vals in wf.cues.items()},
        slot_kin=dict(wf.kin),
        slot_passed={k: list(v) for k, v in wf.passed.items()},
        sources=kept,
        version=(existing.version + int(changed)) if existing else 1,
    )


def suppressed(skill: Skill, config: WorkflowConfig = DEFAULT_CONFIG.workflows) -> bool:
    """Whether the runs that followed a workflow measured it below ``workflow_suppress_rate`` (or it is retired)."""
    st = skill.stats
    return skill.retired is not None or (
        st.executions >= config.workflow_min_executions and st.success_rate < config.workflow_suppress_rate)


def matching(
    goal: str, skills: Sequence[Skill], *, family: str | None = None, config: WorkflowConfig = DEFAULT_CONFIG.workflows
) -> list[Skill]:
    """Workflow skills that fit ``goal`` (its slots bind, ``workflows.bind_goal``), not suppressed, best first: the
    one of ``family`` when named, then by goal overlap with their trajectories."""
    fits = [s for s in skills if is_workflow(s) and not suppressed(s, config)
            and bind_goal(workflow_of(s), goal, config.workflow_min_goal_overlap) is not None]
    if family is not None:
        own = [s for s in fits if s.name == _name(family)]
        if own:
            return own
    return sorted(fits, key=lambda s: (-max((goal_overlap(goal, x.goal) for x in s.sources), default=0.0), s.id))


__all__ = [
    "KIND_PREFIX",
    "demo_of",
    "goal_overlap",
    "group_by_kind",
    "is_workflow",
    "matching",
    "same_kind",
    "source_of",
    "suppressed",
    "workflow_id",
    "workflow_of",
    "workflow_skill",
]
