"""What every learning mechanism shares: one run being learned from, a mechanism's interface, and lesson makers.

``textgames.learn.learn_text_rules`` reads a finished run once into ``RunLearning`` (the task's text, the steps that
teach, the commands and directive verbs known) and hands it to each mechanism of ``learners.PIPELINE`` in turn;
each adds or rewrites lessons in ``RunLearning.out``. A lesson's id hashes the namespace, the tool, the polarity
and the pattern (and an avoidance's condition), so the same rule learned again updates one record.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar, NamedTuple, Protocol

from langmem_plus._text import stable_id
from langmem_plus.config import MemoryConfig
from langmem_plus.learning.textmatch import negated_line
from langmem_plus.records import Lesson, LessonScope, Namespace, Provenance, Step, TaskSpec
from langmem_plus.textgames.direct import condition_verbs


def text_rule_id(namespace: Namespace, tool: str | None, *key: str) -> str:
    """A text rule's id: the namespace, the tool and ``key`` (polarity, pattern, an avoidance's conditions) hashed."""
    return stable_id("txt", *namespace, tool or "", *key)


@dataclass
class RunLearning:
    """One finished run as the mechanisms read it, and the lessons they have written so far (``out``)."""

    namespace: Namespace
    run_id: str
    task: TaskSpec
    config: MemoryConfig
    now: float
    existing: Mapping[str, Lesson]
    """Every stored lesson memory passed in, by id."""
    goal: str
    ordered: Sequence[Step]
    """The run's steps in order."""
    lines: Sequence[str]
    """The task's text (``rules.task_text_lines``)."""
    goal_words: frozenset[str]
    seen: Sequence[str]
    """Every observation of the run, the task's first one included."""
    teach: Sequence[tuple[Step, bool, str, dict[str, str]]]
    """The teaching steps (``rules.teaching_steps``): step, avoid?, abstracted pattern, its bindings."""
    stored: Sequence[Lesson]
    """The tool's live text rules before this run."""
    verbs: frozenset[str]
    """The verbs that name commands in this run (offered, used, or known)."""
    commands: frozenset[str]
    """Every command known, this run's or memory's."""
    directives: frozenset[str]
    """The directive verbs: commands that lines of task texts open with."""
    instrumental: frozenset[str]
    """Directive verbs' instrument kin in this run (``direct.instrument_kin``)."""
    out: dict[str, Lesson] = field(default_factory=dict)
    _about: frozenset[str] | None = field(default=None, repr=False)

    def about_things(self) -> frozenset[str]:
        """The directive verbs that direct something done to a thing (condition lines open with them, or they are
        instrument kin), read once, before the first kin is inferred."""
        if self._about is None:
            self._about = frozenset(condition_verbs([*self.stored, *self.out.values()]) | self.instrumental)
        return self._about

    def rid(self, *key: str) -> str:
        """A text rule's id (``text_rule_id``)."""
        return text_rule_id(self.namespace, self.task.tool, *key)

    def has(self, lid: str) -> Lesson | None:
        """The lesson ``lid``: this run's if it wrote one, else memory's."""
        return self.out.get(lid) or self.existing.get(lid)


class Learner(Protocol):
    """One learning mechanism of the pipeline (``learners.PIPELINE``)."""

    name: ClassVar[str]
    """What ``MemoryConfig.textgames.text_learners_off`` and ``bench env --without`` call it."""
    summary: ClassVar[str]
    """One line: what it learns."""

    def learn(self, run: RunLearning) -> None:
        """Add or rewrite lessons in ``run.out``."""
        ...


class Situation(NamedTuple):
    """Where an avoidance holds: its pattern, its conditions, and whether they hold in every situation (``general``)."""

    pattern: str
    conditions: list[str]
    general: bool = False


class SituationReader(Protocol):
    """A way to read a fatal step's situation from the task's text (``learners.SITUATIONS``), tried in order."""

    name: ClassVar[str]
    summary: ClassVar[str]

    def situation(self, run: RunLearning, step: Step, pattern: str, bindings: Mapping[str, str]) -> Situation | None:
        """The avoidance's situation, or None when this reading does not apply."""
        ...


def rule_text(avoid: bool, pattern: str, conditions: Sequence[str]) -> str:
    """A text rule's stored text: ``AVOID: p (when the task says: a ; b) (unless the task says: c)``."""
    head = f"AVOID: {pattern}" if avoid else f"PREFER: {pattern}"
    unsaid = [line for line in map(negated_line, conditions) if line is not None]
    said = [c for c in conditions if negated_line(c) is None]
    return head + (f" (when the task says: {' ; '.join(said)})" if said else "") + (
        f" (unless the task says: {' ; '.join(unsaid)})" if unsaid else "")


def text_lesson(run: RunLearning, lid: str, old: Lesson | None, step: Step, avoid: bool, pattern: str,
                conds: list[str]) -> Lesson:
    """A new text rule, or ``old`` with its condition narrowed and this run added to its provenance."""
    text = rule_text(avoid, pattern, conds)
    if old is not None:
        prov = old.provenance.model_copy(update={"run_ids": sorted({*old.provenance.run_ids, run.run_id})})
        return old.model_copy(update={"applies_when": conds, "rule_text": text, "provenance": prov, "updated_at": run.now})
    task = run.task
    return Lesson(
        id=lid,
        namespace=run.namespace,
        rule_text=text,
        wrong=pattern if avoid else None,
        correct=None if avoid else pattern,
        applies_when=conds,
        tags=["constraint_failed"] if avoid else [],
        scope=LessonScope(level="domain", tool=task.tool, domain=task.domain, task=task.task_id),
        provenance=Provenance(run_ids=[run.run_id]),
        source="rule",
        created_at=run.now,
        updated_at=run.now,
    )


def derived(source: Lesson, lid: str, avoid: bool, pattern: str, conds: list[str], now: float) -> Lesson:
    """A rule memory infers from ``source`` (a kin, ``textgames.direct``): the source's scope and the runs that taught
    it, but its own counters and status from nothing, since the inference is not the evidence the source earned its
    status with."""
    return Lesson(
        id=lid, namespace=source.namespace, rule_text=rule_text(avoid, pattern, conds),
        wrong=pattern if avoid else None, correct=None if avoid else pattern, applies_when=conds,
        tags=["constraint_failed"] if avoid and "constraint_failed" in source.tags else [],
        scope=source.scope, provenance=source.provenance.model_copy(), source="rule", created_at=now, updated_at=now,
    )


__all__ = ["Learner", "RunLearning", "Situation", "SituationReader", "derived", "rule_text", "text_lesson", "text_rule_id"]
