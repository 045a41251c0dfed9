"""The memory-design interface and the one episode loop every design is run through.

A memory design has two methods (the two-interface abstraction of the
memory-design literature, design.md §8): ``general_update(trajectory)`` folds a
finished attempt into memory, ``general_retrieve(task)`` returns the ``Context``
handed to the executor before the task: ``Hint``s the scripted executor applies
(WRONG -> CORRECT rewrites) and the text a chat model would be shown, whose
tokens are what the design costs per task.

``run_episode`` runs one attempt of a task with a fixed context, the same way for
every design, so differences come from memory only.

Example:
    >>> from langmem_plus.envs.registry import make_env
    >>> from langmem_plus.executors.scripted import ScriptedExecutor
    >>> env = make_env("gridtool")
    >>> traj = run_episode(env, ScriptedExecutor(seed=0), env.tasks()[0], Context())
    >>> traj.verdict.passed, tool_errors(traj) > 0
    (True, True)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from langmem_plus.capture import fingerprint
from langmem_plus.config import DEFAULT_CONFIG
from langmem_plus.embeddings import HashingEmbeddings
from langmem_plus.envs.base import Env
from langmem_plus.executors.base import Executor
from langmem_plus.graph import env_view, take_step
from langmem_plus.learning.synthesis import pair_rewrite
from langmem_plus.memory import Trajectory
from langmem_plus.records import Hint, Step, TaskSpec, Verdict
from langmem_plus.tokens import count_tokens

DEFAULT_EPISODE_STEPS = 15
"""Step budget of one attempt, the reference graph's ``DEFAULT_MAX_STEPS``."""
OBSERVATION_CHARS = 200
"""Characters of an observation kept when a trajectory is rendered for a model."""


@runtime_checkable
class StepHints(Protocol):
    """Hints a design delivers during an attempt, step by step (``textgames.delivery.StepDelivery``)."""

    def __call__(self, task: TaskSpec, history: Sequence[Step]) -> Sequence[Hint]:
        """The hints for the next step of ``task`` after ``history``."""
        ...

    def check(self, task: TaskSpec, history: Sequence[Step], action: str) -> Sequence[Hint]:
        """Hints held back that bear on ``action``, proposed as the next step (a guard); empty when none do."""
        ...

    @property
    def tokens(self) -> int:
        """Tokens of everything delivered so far in the attempt (each distinct line once)."""
        ...


@dataclass(frozen=True)
class Context:
    """What a design hands the executor: hints before a task and, optionally, more at each step."""

    hints: tuple[Hint, ...] = ()
    """Actionable hints; the scripted executor applies their WRONG -> CORRECT rewrites."""
    text: str = ""
    """The same memory as a model would be shown it (counted in tokens)."""
    step_hints: StepHints | None = None
    """Called before each step; its hints join ``hints`` for that step only."""

    @property
    def tokens(self) -> int:
        """Tokens of ``text`` plus what ``step_hints`` delivered (tiktoken when available, else the labelled approximation)."""
        pre = count_tokens(self.text).n if self.text else 0
        return pre + (self.step_hints.tokens if self.step_hints is not None else 0)


@runtime_checkable
class MemoryDesign(Protocol):
    """A memory design: one update and one retrieval method."""

    name: str
    """Design name as reported, e.g. ``"flat_vector"``."""

    def general_update(self, trajectory: Trajectory) -> None:
        """Fold one finished trajectory into memory."""
        ...

    def general_retrieve(self, task: TaskSpec, *, run_id: str | None = None) -> Context:
        """The context for ``task``, before it starts; ``run_id`` names the attempt when known,
        so a design that measures what it showed can pair this call with ``general_update``."""
        ...

    def close(self) -> None:
        """Release resources (stores, temp folders)."""
        ...


def _is_docs(step: Step) -> bool:
    return step.info.get("kind") == "docs"


def tool_errors(traj: Trajectory) -> int:
    """Failed tool commands of a trajectory (docs lookups excluded), as ``run_outcome`` counts them."""
    return sum(1 for s in traj.steps if s.feedback.hard_failure and not _is_docs(s))


def run_episode(
    env: Env,
    executor: Executor,
    task: TaskSpec,
    context: Context,
    *,
    run_id: str | None = None,
    max_steps: int = DEFAULT_EPISODE_STEPS,
    shown: set[tuple[str, str | None]] | None = None,
) -> Trajectory:
    """One attempt of ``task`` with ``context``'s hints; the env's evaluator gives the verdict.

    Like the reference graph, an env that exposes ``goal`` / ``valid_actions`` / ``state`` (a
    text game) has them copied into ``task.context`` at the start and into each step's
    ``info["valid_actions"]`` and ``state_before`` / ``state_after``, so a text executor can read them.

    Before each step is taken, the executor's proposal goes to ``context.step_hints.check`` (the guard,
    ``textgames.delivery`` rule 10); while memory answers it with hints, the executor chooses again with them
    added. The step records the proposals answered in ``info["guarded"]``; those after which the executor said it
    was done, ``Trajectory.guarded``.

    ``run_id`` defaults to the task id; pass a unique, deterministic one per attempt. ``shown``, when given, gathers
    every hint the executor was handed (text, precondition), for ``bench.contradicted``.
    """
    first = env.reset(task.task_id)
    view = env_view(env, first)  # goal, valid actions and state of a text game; {} for the CLI tools
    if view:
        task = task.model_copy(update={"context": {**task.context, **view}})
    steps: list[Step] = []
    hints = list(context.hints)
    guarded: list[str] = []  # proposals memory answered before the next step was taken (the guard)
    while len(steps) < max_steps and not env.done:
        now = [*hints, *context.step_hints(task, steps)] if context.step_hints is not None else hints
        decision = executor.act(task, steps, now)
        while context.step_hints is not None and decision.kind == "command":
            held = context.step_hints.check(task, steps, decision.action)
            if not held:
                break
            guarded.append(decision.action)
            now = [*now, *held]
            decision = executor.act(task, steps, now)
        if shown is not None:
            shown.update((h.text, h.precondition) for h in now)
        if decision.kind == "done":
            break
        step = take_step(env, decision, len(steps))
        steps.append(step.model_copy(update={"info": {**step.info, "guarded": guarded}}) if guarded else step)
        guarded = []  # the step keeps its own
    verdict: Verdict = env.evaluate()
    return Trajectory(task=task, steps=steps, verdict=verdict, run_id=run_id or task.task_id, guarded=guarded)


@dataclass(frozen=True)
class Fix:
    """A failed command, the later command that got past its error, and the rewrite between them."""

    error: str
    failed: str
    fixed: str
    wrong: str
    correct: str


def error_fixes(traj: Trajectory, lookahead: int = DEFAULT_CONFIG.lifecycle.fix_lookahead) -> list[Fix]:
    """Every error of ``traj`` with the action that fixed it.

    The fix is the first later command whose outcome is not the same failure (same fingerprint) and whose
    rewrite of the pair exists (``synthesis.pair_rewrite``, argument by argument, guided by the error text);
    up to ``lookahead`` later commands that give no rewrite (a lookup) are passed over, as memory's own
    synthesis does. Errors never fixed in the attempt give nothing.
    """
    commands = [s for s in traj.steps if not _is_docs(s)]
    out: list[Fix] = []
    for i, step in enumerate(commands):
        if not step.feedback.hard_failure:
            continue
        fp = fingerprint(step.feedback.error_text or step.observation)
        passed = 0
        for later in commands[i + 1 :]:
            same = later.feedback.hard_failure and fingerprint(later.feedback.error_text or later.observation) == fp
            if same:
                continue
            rule = pair_rewrite(step, later, step.feedback.error_text)
            if rule is not None:
                out.append(Fix(step.feedback.error_text, step.action, later.action, rule[0], rule[1]))
                break
            passed += 1
            if passed > lookahead:
                break
    return out


def rewrite_hint(wrong: str, correct: str, source_id: str, *, kind: str = "lesson", score: float = 0.0) -> Hint:
    """A Hint carrying one WRONG -> CORRECT rewrite."""
    return Hint(
        text=f"WRONG: {wrong} -> CORRECT: {correct}",
        source_kind=kind,  # type: ignore[arg-type]
        source_id=source_id,
        wrong=wrong,
        correct=correct,
        score=score,
    )


def render_trajectory(traj: Trajectory) -> str:
    """A past attempt as a model would be shown it: goal, each action and what came back, outcome."""
    lines = [f"Past task ({traj.task.tool}): {traj.task.goal}"]
    for s in traj.steps:
        obs = " ".join(s.observation.split())[:OBSERVATION_CHARS]
        lines.append(f"> {s.action}")
        lines.append(f"< {'ERROR: ' if s.feedback.hard_failure else ''}{obs}")
    passed = traj.verdict.passed if traj.verdict else False
    lines.append(f"Outcome: {'passed' if passed else 'failed'}")
    return "\n".join(lines)


def render_rules(title: str, hints: list[Hint]) -> str:
    """Rewrite hints as a plain list under a title (empty with no hints)."""
    if not hints:
        return ""
    return "\n".join([title, *(f"- {h.text}" for h in hints)])


class Embedder:
    """Unit-normalised task/error vectors with the offline default embeddings."""

    def __init__(self) -> None:
        self._emb = HashingEmbeddings()

    def vector(self, text: str) -> np.ndarray:
        """The unit vector of ``text``."""
        v = np.asarray(self._emb.embed_query(text), dtype=float)
        norm = float(np.linalg.norm(v))
        return v / norm if norm else v


def task_text(task: TaskSpec) -> str:
    """What a design embeds for a task: its goal (the tool scopes the search, not the vector)."""
    return task.goal


def goal_of(task: TaskSpec) -> str:
    """The goal a text environment gave the attempt (``task.context["goal"]``, copied from the env), else the task's."""
    return str(task.context.get("goal") or task.goal or "")


__all__ = [
    "DEFAULT_EPISODE_STEPS",
    "Context",
    "Embedder",
    "StepHints",
    "Fix",
    "MemoryDesign",
    "error_fixes",
    "goal_of",
    "render_rules",
    "render_trajectory",
    "rewrite_hint",
    "run_episode",
    "task_text",
    "tool_errors",
]
