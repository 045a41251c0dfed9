"""Workflow delivery at each step: the next step of the workflow that fits the task, grounded on the offered actions
(design.md §6 "Workflows").

``WorkflowAdvisor`` is a step-hint source (the bench's ``StepHints``: called before each step, ``check`` on a
proposal, ``tokens``, ``activations``). Before each step it asks the memory for the workflow's next step among the
actions the environment offers (``LearningMemory.workflow_step``) and puts that one line first, then whatever the
wrapped source delivers. A proposal that takes a workflow's scoring step on another thing than the task's text names
is held (``LearningMemory.workflow_check``), and the hold stays in view at every later step. Each workflow it
handed over is activated once, so the run's outcome is the workflow's (``SkillEvidence``), as a lesson's is.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from langmem_plus.records import Activation, Hint, Step, TaskSpec
from langmem_plus.tokens import count_tokens

if TYPE_CHECKING:
    from langmem_plus.memory.facade import LearningMemory


class StepSource(Protocol):
    """What ``WorkflowAdvisor`` wraps: another step-hint source (``textgames.delivery.StepDelivery``)."""

    def __call__(self, task: TaskSpec, history: Sequence[Step]) -> Sequence[Hint]: ...

    def check(self, task: TaskSpec, history: Sequence[Step], action: str) -> Sequence[Hint]: ...

    @property
    def tokens(self) -> int: ...


def offered_actions(task: TaskSpec, history: Sequence[Step]) -> list[str]:
    """The actions the environment offers now: the last step's ``valid_actions``, else the task's at the start."""
    raw: Any = history[-1].info.get("valid_actions") if history else task.context.get("valid_actions")
    return [str(a) for a in raw or ()]


def done_actions(history: Sequence[Step]) -> list[str]:
    """The actions the attempt took that did not fail."""
    return [s.action for s in history if not s.feedback.failed]


class WorkflowAdvisor:
    """The next workflow step first, then ``inner``'s hints (module docstring)."""

    def __init__(self, memory: "LearningMemory", inner: StepSource | None = None) -> None:
        self.memory, self.inner = memory, inner
        self.lines: dict[str, None] = {}
        self.delivered: dict[str, int] = {}
        """Workflow skill id -> the step it was first handed over at."""
        self.held: list[Hint] = []
        """What the workflows held against proposals so far: handed over again at every later step."""

    def __call__(self, task: TaskSpec, history: Sequence[Step]) -> list[Hint]:
        """The workflow's grounded next step (if any), then the wrapped source's hints."""
        goal = str(task.context.get("goal") or task.goal or "")
        seen = "\n".join([str(task.context.get("observation") or ""), *(s.observation for s in history)])
        hint = self.memory.workflow_step(goal, done_actions(history), offered_actions(task, history), family=task.family,
                                         seen=seen)
        rest = [*self.held, *(self.inner(task, history) if self.inner is not None else [])]
        if hint is None:
            return rest
        self.lines.setdefault(hint.text, None)
        self.delivered.setdefault(hint.source_id or "", len(history))
        return [hint, *rest]

    def check(self, task: TaskSpec, history: Sequence[Step], action: str) -> list[Hint]:
        """What a workflow holds against a proposal (``LearningMemory.workflow_check``: a scoring step on another
        thing than the task names), then the wrapped source's answer."""
        goal = str(task.context.get("goal") or task.goal or "")
        own = [h for h in self.memory.workflow_check(goal, action, family=task.family) if h not in self.held]
        self.held += own  # shown once, it stands for the rest of the attempt
        for hint in own:
            self.lines.setdefault(hint.text, None)
            self.delivered.setdefault(hint.source_id or "", len(history))
        return [*own, *(self.inner.check(task, history, action) if self.inner is not None else [])]

    @property
    def tokens(self) -> int:
        """Tokens of every workflow line delivered (each once), plus the wrapped source's."""
        own = count_tokens("\n".join(self.lines)).n if self.lines else 0
        return own + (self.inner.tokens if self.inner is not None else 0)

    def activations(self, run_id: str) -> list[Activation]:
        """One activation per workflow handed over, at the step it first was, then the wrapped source's."""
        own = [Activation(lesson_id=sid, run_id=run_id, step=step, moment="pre_run") for sid, step in self.delivered.items()]
        inner = getattr(self.inner, "activations", None)
        return own + (list(inner(run_id)) if callable(inner) else [])


__all__ = ["StepSource", "WorkflowAdvisor", "done_actions", "offered_actions"]
