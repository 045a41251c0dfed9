"""Records: the pydantic models every layer speaks (design.md §2).

Untrusted values are cleaned at the boundary: text may arrive as bytes, with NUL
bytes, or a megabyte long; numbers may be NaN or infinite. Such values are
repaired with a logged warning (a "logged skip"), never allowed to break a run.

Example:
    >>> fb = Feedback(hard_failure=True, error_text=b"unknown column 'agee'")
    >>> step = Step(index=0, action="keep agee > 3", feedback=fb, tool="gridtool")
    >>> step.feedback.failed
    True
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Iterable
from typing import Any, Literal, TypeVar, Union

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from langmem_plus.conditions import Condition
from langmem_plus.conditions import parse as parse_condition
from langmem_plus._text import clean_text
from langmem_plus.config import ERROR_TEXT_CEILING_CHARS, NOTE_CEILING_CHARS, SCAN_CEILING_CHARS
from langmem_plus.errors import InvalidNamespace

logger = logging.getLogger(__name__)

Namespace = tuple[str, ...]
Channel = Literal["hard", "constraint", "no_progress"]
LessonStatus = Literal["candidate", "promoted", "suppressed", "archived"]
LessonSource = Literal["rule", "llm", "imported"]
ScopeLevel = Literal["task", "domain", "global"]
EpisodeKind = Literal["success", "nearmiss", "avoidance"]
Moment = Literal["pre_run", "on_error", "guard"]
VerdictSource = Literal["deterministic", "llm", "signals"]

LESSON_STATUSES: tuple[LessonStatus, ...] = ("candidate", "promoted", "suppressed", "archived")
RETRIEVABLE_STATUSES: frozenset[str] = frozenset({"candidate", "promoted"})
_MAX_NS_PART = 128


def validate_namespace(namespace: Any) -> Namespace:
    """Return ``namespace`` as a tuple of non-empty strings or raise InvalidNamespace."""
    if isinstance(namespace, str):
        namespace = (namespace,)
    try:
        parts = tuple(namespace)
    except TypeError as exc:
        raise InvalidNamespace(f"namespace must be a tuple of strings, got {namespace!r}") from exc
    if not parts:
        raise InvalidNamespace("namespace must have at least one part, e.g. ('acme', 'agent-7')")
    for part in parts:
        if not isinstance(part, str) or not part.strip():
            raise InvalidNamespace(f"namespace parts must be non-empty strings, got {parts!r}")
        if len(part) > _MAX_NS_PART or any(ord(c) < 32 for c in part):
            raise InvalidNamespace(
                f"namespace part {part[:40]!r} is longer than {_MAX_NS_PART} chars or has control characters"
            )
    return parts


def _finite(value: Any, field: str, default: float) -> float:
    """A finite float, or ``default`` with a logged warning for NaN/inf/garbage."""
    try:
        f = float(value)
    except (TypeError, ValueError):
        logger.warning("langmem_plus: %s=%r is not a number; using %s", field, value, default)
        return default
    if not math.isfinite(f):
        logger.warning("langmem_plus: %s=%r is not finite; using %s", field, value, default)
        return default
    return f


_M = TypeVar("_M", bound=BaseModel)


def with_fields(target: _M, source: BaseModel, fields: Iterable[str]) -> _M:
    """``target`` with ``source``'s values of ``fields``: a content write over a record whose counters fold from evidence."""
    return target.model_copy(update={name: getattr(source, name) for name in fields})


class _Record(BaseModel):
    model_config = ConfigDict(extra="ignore", validate_assignment=False)


# --------------------------------------------------------------------------- feedback


class Efficiency(_Record):
    """The efficiency channel: what one step cost."""

    steps: int = 1
    """Steps consumed (1 for an ordinary step)."""
    seconds: float = 0.0
    """Wall time of the step."""
    cost: float = 0.0
    """Money or tokens spent, in the caller's unit."""

    @field_validator("seconds", "cost", mode="before")
    @classmethod
    def _finite_nonneg(cls, v: Any, info: Any) -> float:
        return max(0.0, _finite(v, f"efficiency.{info.field_name}", 0.0))


class Feedback(_Record):
    """The four feedback channels of one step, identical in every domain (design.md §2)."""

    hard_failure: bool = False
    """Exception, non-zero exit, tool/API error, safety stop."""
    constraint_failure: bool = False
    """A required condition was not met (wrong output shape, invariant broken)."""
    progress: float | None = None
    """Progress toward the goal in [0, 1]; None when unknown. NaN/inf become None."""
    efficiency: Efficiency = Field(default_factory=Efficiency)
    """Steps, seconds, cost."""
    error_text: str = ""
    """Error text as the tool printed it; bytes are decoded, huge text is cut (head + tail)."""
    reward: float = 0.0
    """Environment reward for the step. NaN/inf become 0."""

    @field_validator("progress", mode="before")
    @classmethod
    def _progress(cls, v: Any) -> float | None:
        if v is None:
            return None
        try:
            f = float(v)
        except (TypeError, ValueError):
            logger.warning("langmem_plus: progress=%r is not a number; treated as unknown", v)
            return None
        if not math.isfinite(f):
            logger.warning("langmem_plus: progress=%r is not finite; treated as unknown", v)
            return None
        return min(1.0, max(0.0, f))

    @field_validator("reward", mode="before")
    @classmethod
    def _reward(cls, v: Any) -> float:
        return _finite(v, "reward", 0.0)

    @field_validator("error_text", mode="before")
    @classmethod
    def _text(cls, v: Any) -> str:
        return clean_text(v, SCAN_CEILING_CHARS)

    @property
    def failed(self) -> bool:
        """True on a hard or constraint failure."""
        return self.hard_failure or self.constraint_failure


class Step(_Record):
    """One executed step of a run."""

    index: int
    """Position of the step in its run, from 0."""
    action: str
    """What the agent did (a command line, an API call, a move)."""
    observation: str = ""
    """What came back, cleaned and cut like error text."""
    feedback: Feedback = Field(default_factory=Feedback)
    """The four channels."""
    tool: str | None = None
    """The tool used, if any."""
    state_before: dict[str, Any] | None = None
    """Optional structured state before the step (room, screen, inventory)."""
    state_after: dict[str, Any] | None = None
    """Optional structured state after the step."""
    info: dict[str, Any] = Field(default_factory=dict)
    """Free-form extras, e.g. ``{"kind": "docs"}`` for a docs lookup, ``subgoal``."""

    @field_validator("action", "observation", mode="before")
    @classmethod
    def _clean(cls, v: Any) -> str:
        return clean_text(v, SCAN_CEILING_CHARS)


class ErrorEvent(_Record):
    """A failed step, fingerprinted (design.md §2, §3)."""

    id: str
    namespace: Namespace
    run_id: str
    step: int
    fingerprint: str
    """Normalised failure text (literals replaced by placeholders)."""
    fingerprint_id: str
    """Short stable hash of ``fingerprint``."""
    tags: list[str] = Field(default_factory=list)
    channel: Channel
    action: str = ""
    error_text: str = ""
    """Error text; capture cuts it to ``MemoryConfig.capture.error_text_max_chars`` (never above the ceiling)."""
    tool: str | None = None
    domain: str | None = None
    task: str | None = None
    ts: float = Field(default_factory=time.time)

    @field_validator("error_text", "action", mode="before")
    @classmethod
    def _cut(cls, v: Any) -> str:
        return clean_text(v, ERROR_TEXT_CEILING_CHARS)


# --------------------------------------------------------------------------- lessons


class LessonScope(_Record):
    """Where a lesson applies."""

    level: ScopeLevel = "domain"
    tool: str | None = None
    domain: str | None = None
    task: str | None = None


class LessonStats(_Record):
    """Counters behind promotion, suppression and archiving (design.md §6)."""

    activations: int = 0
    """Times the lesson was shown to an executor."""
    runs_activated: int = 0
    """Distinct runs in which it was shown."""
    evidence_runs: int = 0
    """Runs whose outcome could say whether it helped (its triggers were at stake)."""
    helped: int = 0
    """Evidence runs with positive utility."""
    harmed: int = 0
    """Evidence runs with negative utility."""
    utility_window: list[float] = Field(default_factory=list)
    """Utility of each evidence run, newest last."""
    conflict_losses: int = 0
    """Times it lost its conflict cluster at selection."""
    pass_rate_with: float | None = None
    """Pass rate of the evidence runs in which it was active."""
    pass_rate_baseline: float | None = None
    """Pass rate of comparable runs without it."""
    created_run_seq: int = 0
    """Run sequence number at creation."""
    last_activated_run_seq: int | None = None
    """Run sequence number of the last activation."""


class Provenance(_Record):
    run_ids: list[str] = Field(default_factory=list)
    event_ids: list[str] = Field(default_factory=list)


class Lesson(_Record):
    """A WRONG -> CORRECT rule learned from recurring failures (design.md §2, §6)."""

    id: str
    namespace: Namespace
    rule_text: str
    """Human-readable rule, ``WRONG: ... -> CORRECT: ...`` when possible."""
    wrong: str | None = None
    """Token pattern to avoid; ``*`` matches one token. None for a pure "avoid" lesson."""
    correct: str | None = None
    """Replacement token pattern; ``*`` takes the matched token at the same position."""
    triggers: list[str] = Field(default_factory=list)
    """Fingerprint ids this lesson answers."""
    fingerprints: list[str] = Field(default_factory=list)
    """The readable fingerprints behind ``triggers``."""
    tags: list[str] = Field(default_factory=list)
    scope: LessonScope = Field(default_factory=LessonScope)
    status: LessonStatus = "candidate"
    stats: LessonStats = Field(default_factory=LessonStats)
    reliability: float = 0.5
    """Posterior mean of helped / (helped + harmed) under a (1, 1) prior."""
    conflicts_with: list[str] = Field(default_factory=list)
    supersedes: list[str] = Field(default_factory=list)
    provenance: Provenance = Field(default_factory=Provenance)
    source: LessonSource = "rule"
    simhash: str = ""
    """Hex SimHash of normalised rule text + triggers, for dedup."""
    created_at: float = Field(default_factory=time.time)
    updated_at: float = Field(default_factory=time.time)
    last_activated_at: float | None = None
    applies_when: list[str] | None = None
    """A text rule's conditions in their stored form (``conditions.parse``: ``roast <X>``, ``!<X>``, ``!chop <X>``,
    ``^open <X>``), placeholders bound as in the action pattern; ``[]`` for a rule that always applies. None (every
    older record) for a lesson that is not a text rule. ``conditions`` is the typed view."""

    @field_validator("applies_when")
    @classmethod
    def _conditions_parse(cls, value: list[str] | None) -> list[str] | None:
        """Every condition must be one ``conditions.parse`` reads (a clear error, not a rule that never fires)."""
        for text in value or ():
            parse_condition(text)
        return value

    @property
    def conditions(self) -> tuple[Condition, ...] | None:
        """``applies_when`` as typed conditions; None for a lesson that is no text rule."""
        return None if self.applies_when is None else tuple(parse_condition(c) for c in self.applies_when)

    @property
    def retrievable(self) -> bool:
        """Suppressed and archived lessons are never retrieved (design.md §5.4)."""
        return self.status in RETRIEVABLE_STATUSES


# --------------------------------------------------------------------------- episodes, skills


class Episode(_Record):
    """A remembered success, near-miss or avoidance (design.md §2, §6)."""

    episode_id: str
    namespace: Namespace
    kind: EpisodeKind
    goal_signature: str
    subgoal_template: str = ""
    context: str = ""
    """Room / screen / tool the episode happened in."""
    state_fingerprint: list[str] = Field(default_factory=list)
    preconds_satisfied: list[str] = Field(default_factory=list)
    preconds_missing: list[str] = Field(default_factory=list)
    action_seq: list[str] = Field(default_factory=list)
    obs_seq: list[str] = Field(default_factory=list)
    inventory_delta: list[str] = Field(default_factory=list)
    summary: str = ""
    success_weight: float = 1.0
    avoid_tags: list[str] = Field(default_factory=list)
    ttl_episodes: int | None = None
    simhash: str = ""
    strength: float = 1.0
    significance: float = 0.5
    run_id: str | None = None
    created_at: float = Field(default_factory=time.time)
    last_seen_at: float = Field(default_factory=time.time)
    count: int = 1
    """Times this episode (or a SimHash near duplicate merged into it) was seen (design.md §6 dedup)."""
    seen_run_seq: int | None = None
    """Sequence number of the run that produced it or last saw it again: an avoidance's TTL counts the
    runs after it (``learning.episodes.age_episode``). None on records written before it existed."""
    run_ids: list[str] = Field(default_factory=list)
    """Runs that produced it or a merged duplicate, newest last (at most a few dozen kept)."""
    consolidated_into: str | None = None
    """Id of the skill or lesson this episode's cluster was consolidated into, if any."""
    retired: str | None = None
    """Why the episode is no longer recalled (the runs whose success made it were denied), or None."""
    caused_by: list[str] = Field(default_factory=list)
    """Ids of episodes that led to this one, first the main cause (seed 002 "Recall by Time");
    empty for records written before links existed."""
    leads_to: list[str] = Field(default_factory=list)
    """Ids of episodes this one led to, first the main successor (seed 002 "Recall by Time")."""


class SkillStats(_Record):
    executions: int = 0
    successes: int = 0
    failures: int = 0
    success_rate: float = 0.0


class ProcedureStep(_Record):
    """One step of a workflow skill: an action pattern (``<Z>`` a phrase), whether it was looped, whether it scored."""

    action: str
    repeat: bool = False
    progress: bool = False
    only_named: bool = False
    """Every trajectory that took an action of this form took it on what its task's text named
    (``workflows.WorkflowStep.only_named``)."""


class WorkflowSource(_Record):
    """A trajectory a workflow skill was induced from, kept so the workflow can be induced again as more arrive:
    its goal, actions, the score after each (None where unknown) and the short lines each step was answered with;
    longer observations are not kept."""

    goal: str
    actions: list[str] = Field(default_factory=list)
    scores: list[float | None] = Field(default_factory=list)
    told: list[list[str]] = Field(default_factory=list)
    """Per step, the short lines of what came back (``workflows.told_lines``): what the slots' cues are read from."""
    source: str = ""


class Skill(_Record):
    """A procedure distilled from repeated successes (design.md §2, §6), or a workflow induced from trajectories
    (``procedure`` set; design.md §6 "Workflows")."""

    id: str
    namespace: Namespace
    name: str
    goal_templates: list[str] = Field(default_factory=list)
    preconds: list[str] = Field(default_factory=list)
    steps: list[str] = Field(default_factory=list)
    effects: list[str] = Field(default_factory=list)
    failure_modes: list[str] = Field(default_factory=list)
    stats: SkillStats = Field(default_factory=SkillStats)
    source_episodes: list[str] = Field(default_factory=list)
    created_at: float = Field(default_factory=time.time)
    retired: str | None = None
    """Why the skill is no longer delivered (every episode it was built on was retired), or None."""
    goal_pattern: str = ""
    """A workflow's goal pattern (``<A>`` where its trajectories' goals differ); empty for other skills."""
    procedure: list[ProcedureStep] = Field(default_factory=list)
    """A workflow's steps; empty for other skills."""
    slot_values: dict[str, list[str]] = Field(default_factory=dict)
    """A workflow's slots and the values its trajectories gave them: the facts a run binds a slot with."""
    slot_cues: dict[str, dict[str, list[str]]] = Field(default_factory=dict)
    """Per slot and value, what its trajectories were told before taking it (``workflows.Workflow.cues``)."""
    slot_kin: dict[str, str] = Field(default_factory=dict)
    """Step slot -> the slot whose value names the same thing (``workflows.Workflow.kin``)."""
    slot_passed: dict[str, list[str]] = Field(default_factory=dict)
    """Step slot -> the lines its trajectories were always told and never chose from (``workflows.Workflow.passed``)."""
    sources: list[WorkflowSource] = Field(default_factory=list)
    """The trajectories a workflow was induced from (newest last, at most ``workflow_max_sources``)."""
    version: int = 1
    """Bumped each time the workflow is induced again with a changed procedure."""


# --------------------------------------------------------------------------- runs, retrieval


class TaskSpec(_Record):
    """What memory knows of a task: its goal text and scope."""

    task_id: str
    goal: str
    tool: str | None = None
    domain: str | None = None
    family: str | None = None
    """Task family, for comparable-run baselines and held-out evaluation."""
    context: dict[str, Any] = Field(default_factory=dict)


class WorkingContext(_Record):
    """Working memory of a run, the source of the retrieval query blocks (design.md §5.1)."""

    goal: str = ""
    context: str = ""
    inventory: list[str] = Field(default_factory=list)
    obs: str = ""
    preconds_sat: list[str] = Field(default_factory=list)
    preconds_miss: list[str] = Field(default_factory=list)
    last_fail: str = ""
    stalls: int = 0
    """Steps since progress last increased."""
    recent_failures: int = 0
    """Failures in the last ``repeat_window`` steps."""
    difficulty: float | None = None
    """Explicit difficulty in [0, 1]; derived from stalls and failures when None."""


class Activation(_Record):
    """A lesson was shown to the executor (design.md §6)."""

    lesson_id: str
    run_id: str
    step: int
    moment: Moment
    fingerprint_id: str | None = None
    score: float = 0.0
    ts: float = Field(default_factory=time.time)


class ScoredItem(_Record):
    """A retrieved item with its score, the score's parts, and why it was chosen."""

    kind: Literal["lesson", "episode", "skill", "fact"]
    item: Union[Lesson, Episode, Skill, "Fact"]
    score: float
    components: dict[str, float] = Field(default_factory=dict)
    reasons: list[str] = Field(default_factory=list)

    @property
    def item_id(self) -> str:
        item = self.item
        if type(item) is Lesson:  # the common case, without the model metaclass's isinstance (~0.3 us; ~40 a retrieval)
            return item.id
        if isinstance(item, Episode):
            return item.episode_id
        return item.id


class Hint(_Record):
    """One actionable next step distilled from a retrieved item (design.md §6)."""

    text: str
    precondition: str | None = None
    source_kind: Literal["lesson", "episode", "skill", "fact"] = "lesson"
    source_id: str
    wrong: str | None = None
    correct: str | None = None
    score: float = 0.0


class Verdict(_Record):
    """The referee's judgement of a run (design.md §7)."""

    passed: bool
    score: float = Field(0.0, ge=0.0, le=1.0)
    reasons: list[str] = Field(default_factory=list)
    source: VerdictSource = "signals"
    step: int | None = None
    """The step whose result the verdict judges, when the referee ties it to one: the lessons applied to that call
    are judged by it (``learning.outcomes``)."""


class FailureNote(_Record):
    """One failed step of a finished run, kept for lesson-specific baselines and pre-run context."""

    fp: str
    """Fingerprint id of the failure."""
    step: int = 0
    """Index of the failed step in its run."""
    action: str = ""
    """The failing action (cut)."""
    error: str = ""
    """The error text (cut)."""
    applied: list[str] = Field(default_factory=list)
    """Ids of the lessons whose rewrites were applied to this action."""
    rewritten: list[str] = Field(default_factory=list)
    """Ids of the lessons the call guard rewrote this very call with before it ran (``guard="rewrite"``): its failure
    is the lessons' own."""

    @field_validator("action", "error", mode="before")
    @classmethod
    def _cut(cls, v: Any) -> str:
        return clean_text(v, NOTE_CEILING_CHARS)


class RunRecord(_Record):
    """What one finished run leaves behind for later baselines (design.md §6 utility)."""

    run_id: str
    namespace: Namespace
    seq: int
    task_id: str
    family: str | None = None
    tool: str | None = None
    domain: str | None = None
    passed: bool = False
    score: float = 0.0
    steps: int = 0
    tool_errors: int = 0
    fingerprint_counts: dict[str, int] = Field(default_factory=dict)
    failures: list[FailureNote] = Field(default_factory=list)
    """The run's failures in order, at most ``MemoryConfig.lifecycle.failures_kept_per_run``."""
    activated: list[str] = Field(default_factory=list)
    applied: list[str] = Field(default_factory=list)
    """Lessons whose rewrite changed an action in the run: known to matter for this task."""
    extras: dict[str, dict[str, list[Any]]] = Field(default_factory=dict)
    """What environment plugins keep of the run (``plugins.EnvPlugin.run_extras``), under each plugin's name."""
    goal: str = ""
    """The task's goal (cut to ``MemoryConfig.lifecycle.run_goal_chars``): later tasks read which tools goals like it called."""
    tools: list[str] = Field(default_factory=list)
    """The tools the run's steps called, in order of first call."""
    ts: float = Field(default_factory=time.time)

    @model_validator(mode="before")
    @classmethod
    def _retired_fields(cls, data: Any) -> Any:
        """Stores written before plugins kept four fields of the text-game plugin at the top: they move under it."""
        if not isinstance(data, dict) or not any(k in data for k in _RETIRED_RUN_FIELDS):
            return data
        data = dict(data)
        moved = {k: data.pop(k) for k in _RETIRED_RUN_FIELDS if k in data}
        kept = {k: list(v) for k, v in moved.items() if v}
        if kept:
            extras = {name: dict(fields) for name, fields in (data.get("extras") or {}).items()}
            extras.setdefault(_RETIRED_RUN_FIELDS_PLUGIN, {}).update(kept)
            data["extras"] = extras
        return data


_RETIRED_RUN_FIELDS = ("commands", "directed", "undone", "consumed")
"""``RunRecord`` fields of stores written before plugins (read for one release, then dropped)."""
_RETIRED_RUN_FIELDS_PLUGIN = "textgames"
"""The plugin those fields belonged to."""


class RunFinding(_Record):
    """What one run said about one stored record: append-only, keyed by (record, run) (design.md §6).

    Two writers never write the same evidence. A record's counters are the deterministic
    fold of its stored record and its evidence in log order (``learning.ledger``), never
    a record read, changed and written back.
    """

    run_id: str
    run_seq: int
    """The run's sequence number (a Lamport clock over the runs every writer stored)."""
    at: float = Field(allow_inf_nan=False)
    """When the run ended, epoch seconds."""


class LessonAdditions(_Record):
    """What a run added to a lesson's grow-only sets: a merged duplicate's triggers and provenance, a new rival."""

    triggers: list[str] = Field(default_factory=list)
    fingerprints: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    run_ids: list[str] = Field(default_factory=list)
    event_ids: list[str] = Field(default_factory=list)
    conflicts_with: list[str] = Field(default_factory=list)


class UtilityParts(_Record):
    """What one activation's utility was computed from, kept with the evidence so a corrected verdict can compute it
    again (``utility.utility_from``)."""

    error_reduction: float = Field(0.0, allow_inf_nan=False)
    step_gain: float = Field(0.0, allow_inf_nan=False)
    referee_baseline: float | None = Field(None, allow_inf_nan=False)
    """Comparable runs' mean referee score the run's score was measured against; None when no score entered."""
    judged: bool = False
    """The verdict judged a call the lesson was applied to (``learning.outcomes``)."""
    constraint: bool = False
    """A call the lesson was applied to failed a constraint."""
    setback: bool = False
    """The run's progress fell with a call the lesson was applied to."""
    advanced: bool = False
    """The run's progress rose with a call the lesson was applied to."""


class RunEvidence(RunFinding):
    """What one run said about one lesson: the evidence its stats, status and merged sets fold from (design.md §6)."""

    lesson_id: str
    shown: int = Field(0, ge=0)
    """Times the lesson was shown in the run (0: not shown)."""
    utility: float | None = Field(None, allow_inf_nan=False)
    """The run's measured utility for the lesson, when the run could say (``activation_utility``)."""
    passed: bool = False
    baseline_pass: float | None = Field(None, allow_inf_nan=False)
    """Pass rate of comparable runs without the lesson, when measured."""
    conflict_losses: int = Field(0, ge=0)
    """Conflict-cluster losses counted in the run (``apply_conflict_losses``)."""
    lost_to: list[str] = Field(default_factory=list)
    """The rivals it lost to, for the audit log."""
    swept: bool = False
    """The run's unused-lesson sweep looked at it (archive / suppress without activation)."""
    added: LessonAdditions | None = None
    """Set members the run added (a duplicate merged in, a conflict linked): unioned by the fold, so two
    writers merging into one lesson both keep theirs even when one's record write overwrites the other's."""
    restored: bool = False
    """The run learned the suppressed lesson again, from a fix in a run its verdict passed: the fold makes it a
    candidate again with a fresh utility window (the old evidence stays in the log)."""
    parts: UtilityParts | None = None
    """What ``utility`` was computed from (None on evidence stored before parts were kept, or without a utility)."""
    corrects: str | None = None
    """This entry restates the evidence of run ``corrects`` under a corrected verdict (``correct_verdict``): the fold
    reads that run's utility and pass from here instead; its own ``run_id`` is the correction's key."""


class EpisodeEvidence(RunFinding):
    """One run saw a stored episode again (a SimHash duplicate merged into it), or a link was made: what the fold adds.

    A sighting has ``count`` > 0 (design.md §6); a link (``LearningMemory.link_episodes``) has
    ``count`` 0 and names the episode it led to or was caused by; ``run_id`` is then the link's key.
    """

    episode_id: str
    count: int = Field(1, ge=0)
    """Times the run's duplicate was seen (0: a link only)."""
    leads_to: list[str] = Field(default_factory=list)
    caused_by: list[str] = Field(default_factory=list)
    success_weight: float = Field(0.0, allow_inf_nan=False)
    """The duplicate's weight: a success's weight grows by it, a near-miss keeps the larger."""
    significance: float = Field(0.0, allow_inf_nan=False)


class SkillEvidence(RunFinding):
    """One run executed a stored skill's template: its outcome, folded into the skill's stats (design.md §6)."""

    skill_id: str
    passed: bool
    failure_mode: str | None = None


class Link(_Record):
    """A graph edge that lesson fields cannot rebuild, e.g. co_activated (design.md §4)."""

    id: str
    namespace: Namespace
    a: str
    """Graph node id, e.g. ``lesson:les_1a2b``."""
    b: str
    kind: str = "co_activated"
    weight: float = 1.0
    ts: float = Field(default_factory=time.time)


class CognitiveItem(BaseModel):
    """One item of a cognitive memory (seed 004 §2.2), immutable so a memory's views can be shared.

    ``seq`` is the item's place in its memory's insertion order: it breaks ties between
    equal timestamps and scores, so ordering and eviction are deterministic.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    content: str = Field(min_length=1)
    """What happened, e.g. "Year 3: A flood occurred causing $50,000 in damages"."""
    importance: float = Field(ge=0.0, le=1.0, allow_inf_nan=False)
    """0..1; decides routing and consolidation (seed 004 §2.2)."""
    year: int = 0
    """Simulation year the item was made in (decay counts years from it)."""
    timestamp: float = Field(0.0, allow_inf_nan=False)
    """Epoch seconds from the memory's clock when it was added (recency of working items)."""
    tags: tuple[str, ...] = ()
    """Classification tags, e.g. ``("flood", "damage")``."""
    seq: int = Field(0, ge=0)
    """Insertion order within its memory."""


class CognitiveRecord(_Record):
    """A cognitive memory's whole state, one record per agent (seed 004 §6.3), stored under the
    agent's own namespace (``memory_types.cognitive_store``)."""

    id: str
    namespace: Namespace
    agent_id: str
    working: list[CognitiveItem] = Field(default_factory=list)
    episodic: list[CognitiveItem] = Field(default_factory=list)
    next_seq: int = Field(0, ge=0)
    updated_at: float = 0.0
# --------------------------------------------------------------------------- semantic memory

EpistemicState = Literal["held", "contested", "retracted", "unknown"]
"""Belief state of a fact (seed 002 "Belief Management")."""
EvidenceKind = Literal[
    "axiomatic", "observed", "computed", "consensus", "reported", "inferred", "hypothetical", "hearsay", "unknown"
]
"""How a piece of evidence was obtained; its strength follows seed 002 ``epistemic_strength``."""


class Evidence(_Record):
    """One piece of support for (or against) a fact; kept forever, never overwritten."""

    kind: EvidenceKind = "observed"
    """How it was obtained; sets its strength (``MemoryConfig.semantic.semantic_evidence_base``)."""
    source: str
    """Where it came from: a run id, ``lesson:<id>``, ``observation``, a user name."""
    detail: str = ""
    """The text behind it (an observation, a lesson's rule), cut to a note's length."""
    level: float = Field(0.5, ge=0.0, le=1.0)
    """Agreement, trust or confidence in [0, 1] for ``consensus``, ``reported`` and ``inferred``."""
    against: bool = False
    """True when it speaks against the fact (an explicit retraction)."""
    run_id: str | None = None
    """The run it came from, if any."""
    ts: float = Field(default_factory=time.time)

    @field_validator("detail", mode="before")
    @classmethod
    def _cut(cls, v: Any) -> str:
        return clean_text(v, NOTE_CEILING_CHARS)


class BeliefChange(_Record):
    """One revision of a fact's state, with the reason (seed 002 ``revision_history``)."""

    old: EpistemicState
    new: EpistemicState
    reason: str
    ts: float = Field(default_factory=time.time)


class Entity(_Record):
    """A node of the semantic graph: a labelled thing with aliases (seed 002 ``Node``)."""

    id: str
    namespace: Namespace
    label: str
    """Display label, as first learned."""
    key: str
    """Normalised label the node is found by (``memory_types.beliefs.normalize_label``)."""
    kind: str = "thing"
    """Node type, e.g. ``thing``, ``tool``, ``place``; ``token`` labels keep their case."""
    scope: str = ""
    """Scope of a ``token`` (the tool it belongs to); empty for ordinary entities."""
    aliases: list[str] = Field(default_factory=list)
    """Normalised alternative labels that find this node."""
    created_at: float = Field(default_factory=time.time)


class Fact(_Record):
    """A (subject, relation, object) claim with its belief state, confidence and evidence (seed 002)."""

    id: str
    namespace: Namespace
    subject: str
    """Subject's display label."""
    relation: str
    """Normalised relation, e.g. ``contains``, ``located_in``, ``rejects``."""
    object: str
    """Object's display label."""
    subject_id: str
    object_id: str
    state: EpistemicState = "unknown"
    confidence: float = 0.0
    """Combined strength of the supporting evidence, 1 - prod(1 - s), in [0, 1]."""
    sources: list[Evidence] = Field(default_factory=list)
    """Every piece of evidence, oldest first; appended to, never rewritten."""
    rivals: list[str] = Field(default_factory=list)
    """Ids of facts that contradict this one."""
    reason: str = ""
    """Why the fact is in its state (e.g. ``superseded by stronger evidence``)."""
    history: list[BeliefChange] = Field(default_factory=list)
    created_at: float = Field(default_factory=time.time)
    updated_at: float = Field(default_factory=time.time)

    @property
    def text(self) -> str:
        """The fact as a sentence-like line, the text it is embedded by."""
        return f"{self.subject} {self.relation.replace('_', ' ')} {self.object}"


class FactEvidence(RunFinding):
    """A piece of evidence a writer gave a fact, appended to the shared log: the facts' sources fold from it.

    Keyed by (fact, ``run_id``) where ``run_id`` is a hash of the evidence itself
    (``beliefs.fact_evidence_key``): the same evidence given twice is one entry.
    """

    fact_id: str
    source: Evidence


class EntityEvidence(RunFinding):
    """An alias a writer gave an entity, appended to the shared log: aliases fold from it like facts' sources.

    Keyed by (entity, ``run_id``) where ``run_id`` names the alias (``alias:<key>``).
    """

    entity_id: str
    alias: str


class RunReport(_Record):
    """What ``end_run`` returns: the run's figures and what memory changed."""

    run_id: str
    task_id: str
    passed: bool
    score: float
    steps: int
    tool_errors: int
    repeated_errors: int
    """Errors whose fingerprint had already occurred earlier in the same run."""
    fingerprint_counts: dict[str, int] = Field(default_factory=dict)
    lesson_activations: int = 0
    activated_lesson_ids: list[str] = Field(default_factory=list)
    new_lessons: list[str] = Field(default_factory=list)
    merged_lessons: list[str] = Field(default_factory=list)
    promoted: list[str] = Field(default_factory=list)
    suppressed: list[str] = Field(default_factory=list)
    archived: list[str] = Field(default_factory=list)
    utilities: dict[str, float] = Field(default_factory=dict)
    lessons_by_status: dict[str, int] = Field(default_factory=dict)
    episodes_seen: int = 0
    """Episodes the run produced (each a new episode or a sighting of a stored one)."""
    verdict: Verdict | None = None


ScoredItem.model_rebuild()  # ``Fact`` is defined after it


__all__ = [
    "with_fields",
    "RunEvidence",
    "RunFinding",
    "UtilityParts",
    "EpisodeEvidence",
    "EntityEvidence",
    "FactEvidence",
    "SkillEvidence",
    "LessonAdditions",
    "ProcedureStep",
    "WorkflowSource",
    "Activation",
    "BeliefChange",
    "Channel",
    "CognitiveItem",
    "CognitiveRecord",
    "Efficiency",
    "Entity",
    "Episode",
    "EpisodeKind",
    "EpistemicState",
    "ErrorEvent",
    "Evidence",
    "EvidenceKind",
    "Fact",
    "FailureNote",
    "Feedback",
    "Hint",
    "LESSON_STATUSES",
    "Lesson",
    "LessonScope",
    "LessonStats",
    "LessonStatus",
    "Link",
    "Namespace",
    "Provenance",
    "RETRIEVABLE_STATUSES",
    "RunRecord",
    "RunReport",
    "ScoredItem",
    "Skill",
    "SkillStats",
    "Step",
    "TaskSpec",
    "Verdict",
    "WorkingContext",
    "validate_namespace",
]
