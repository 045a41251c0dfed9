"""learn_text_rules: what a finished text-game run teaches, as the learning pipeline reads it.

It reads the run once (the task's text, the teaching steps, the commands and directive verbs known: ``RunLearning``)
and runs ``learners.pipeline`` over it; each mechanism adds or rewrites lessons. ``docs/text-games.md`` ("Learning").

Example:
    >>> from langmem_plus.records import Feedback, Step, TaskSpec
    >>> task = TaskSpec(task_id="t", goal="Check the cookbook for the recipe.", tool="game")
    >>> steps = [
    ...     Step(index=0, action="read cookbook", observation="Directions:\\n  roast the red apple",
    ...          info={"valid_actions": []}),
    ...     Step(index=1, action="cook red apple in stove", info={"valid_actions": []},
    ...          feedback=Feedback(constraint_failure=True, error_text="fatal")),
    ... ]
    >>> learned = learn_text_rules(namespace=("ns",), run_id="r1", task=task, steps=steps, existing={}, now=0.0)
    >>> sorted({(l.wrong, tuple(l.applies_when)) for l in learned.values()})
    [('cook <X> in stove', ('roast <X>',))]
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from langmem_plus.config import DEFAULT_CONFIG, MemoryConfig
from langmem_plus.learning.textmatch import norm_words
from langmem_plus.records import Lesson, Namespace, Step, TaskSpec
from langmem_plus.textgames.direct import condition_verbs, directed_rule, instrument_kin, known_verbs
from langmem_plus.textgames.learners import pipeline
from langmem_plus.textgames.learners.base import RunLearning, text_rule_id
from langmem_plus.textgames.rules import (
    abstract_action,
    applies_to_text_envs,
    command_verbs,
    live_text_rules,
    task_text_lines,
    teaching_steps,
)


def learn_text_rules(
    *,
    namespace: Namespace,
    run_id: str,
    task: TaskSpec,
    steps: Sequence[Step],
    existing: Mapping[str, Lesson],
    config: MemoryConfig = DEFAULT_CONFIG,
    now: float,
    offered_before: Collection[str] = (),
    directed_before: Collection[str] = (),
    tool_rules: Sequence[Lesson] | None = None,
) -> dict[str, Lesson]:
    """Avoid / prefer lessons this run teaches, merged with the stored ones of the same id (module docstring).

    ``tool_rules`` are the text rules of the task's tool among ``existing`` (the caller's index,
    ``MemoryView.tool_text_rules``); None reads them off every lesson of ``existing``.

    ``offered_before`` are the verbs the tool's earlier runs were offered (``extras.run_commands``): a directive
    line one of them carries out (``slice <X>``) is no part of another action's situation even in a run
    that never offered it, and the stored avoidances are read again with them (``learners.revision``).
    ``directed_before`` are the verbs their task texts opened lines with (``extras.run_directed``): the commands among
    them (offered in this run or known) are directive verbs even in a run whose own text directs none of them.
    Returns an empty dict for a run whose environment does not enumerate actions.
    """
    if not applies_to_text_envs(steps):
        return {}
    goal = str(task.context.get("goal") or task.goal or "")
    ordered = sorted(steps, key=lambda s: s.index)
    lines = task_text_lines(goal, ordered)

    def rid(*key: str) -> str:
        return text_rule_id(namespace, task.tool, *key)

    teach = [(step, avoid, *abstract_action(step.action, lines, goal, config)) for step, avoid in teaching_steps(ordered)]
    stored = live_text_rules(tool_rules if tool_rules is not None else [l for l in existing.values() if l.scope.tool == task.tool])
    memory_verbs = known_verbs(stored)
    verbs = command_verbs(ordered, task, [t[2] for t in teach], lines, lambda v: v in memory_verbs, offered_before)
    has = lambda i: existing.get(i)  # noqa: E731  (nothing of this run's yet)
    commands = verbs | memory_verbs  # every command known, this run's or memory's
    directives = {v for v in commands if directed_rule(has, rid, v) is not None} | (
        {l.split()[0] for l in lines if l.split()} | condition_verbs(stored) | set(directed_before)) & commands
    instrumental = instrument_kin(ordered, [str(a) for a in task.context.get("valid_actions") or []], directives) & commands
    run = RunLearning(
        namespace=namespace, run_id=run_id, task=task, config=config, now=now, existing=existing, goal=goal,
        ordered=ordered, lines=lines, goal_words=frozenset(norm_words(goal)),
        seen=[str(task.context.get("observation") or ""), *(s.observation for s in ordered)], teach=teach,
        stored=stored, verbs=frozenset(verbs), commands=frozenset(commands), directives=frozenset(directives | instrumental),
        instrumental=frozenset(instrumental),
    )
    for mechanism in pipeline(config):
        mechanism.learn(run)
    return run.out


__all__ = ["learn_text_rules"]
