"""Test-only: runs of a cookbook game as the text-rule learning pipeline reads them, and what they teach."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from langmem_plus.config import DEFAULT_CONFIG
from langmem_plus.records import Feedback, Lesson, Step, TaskSpec
from langmem_plus.textgames.learn import learn_text_rules

FATAL = Feedback(constraint_failure=True, error_text="You lost.")
SCORED = Feedback(reward=0.1)
PLAIN = Feedback()
RECIPE = "Ingredients:\n  red apple\n\nDirections:\n  {} the red apple\n  prepare meal"
COOKBOOK_GOAL = "Check the cookbook for the recipe."
VALID = ["read cookbook", "cook red apple in oven", "cook red apple in stove", "dice red apple", "slice red apple",
         "chop red apple", "look"]

Run = tuple[str, str, str, Feedback, str]
"""(run id, the recipe read, the action then taken, its feedback, its observation)."""


def learned(runs: Sequence[Run], *, off: Collection[str] = (), valid: Sequence[str] = VALID,
            goal: str = COOKBOOK_GOAL) -> dict[str, Lesson]:
    """What memory holds after learning from ``runs`` in order (each: the recipe read, then one action), with the
    mechanisms ``off`` switched off."""
    config = DEFAULT_CONFIG.replace(textgames={"text_learners_off": frozenset(off)})
    existing: dict[str, Lesson] = {}
    for run_id, recipe, action, feedback, observation in runs:
        task = TaskSpec(task_id=run_id, goal=goal, tool="game")
        steps = [Step(index=0, action="read cookbook", observation=recipe, info={"valid_actions": list(valid)}),
                 Step(index=1, action=action, observation=observation, info={"valid_actions": list(valid)}, feedback=feedback)]
        existing.update(learn_text_rules(namespace=("ns",), run_id=run_id, task=task, steps=steps, existing=existing,
                                         now=0.0, config=config))
    return existing


def rules(lessons: dict[str, Lesson], *, live: bool = True) -> set[tuple[str, str, tuple[str, ...]]]:
    """``(AVOID|PREFER, pattern, conditions)`` of the retrievable lessons that nothing supersedes (``live``), or of all."""
    from langmem_plus.textgames.rules import live_text_rules

    held = live_text_rules(list(lessons.values())) if live else list(lessons.values())
    return {("AVOID", l.wrong, tuple(l.applies_when or ())) if l.wrong else ("PREFER", str(l.correct), tuple(l.applies_when or ()))
            for l in held}


def fatal_in(goal: str, observation: str, action: str, *, off: Collection[str] = ()) -> set[tuple[str, str, tuple[str, ...]]]:
    """What one run teaches that looked around (``observation``), then took ``action`` and lost (no text read)."""
    config = DEFAULT_CONFIG.replace(textgames={"text_learners_off": frozenset(off)})
    valid = [action, "look around"]
    steps = [Step(index=0, action="look around", observation=observation, info={"valid_actions": valid}),
             Step(index=1, action=action, observation="x", info={"valid_actions": valid}, feedback=FATAL)]
    task = TaskSpec(task_id="t", goal=goal, tool="world", context={"valid_actions": valid})
    return rules(learn_text_rules(namespace=("ns",), run_id="r", task=task, steps=steps, existing={}, now=0.0, config=config))


__all__ = ["fatal_in", "COOKBOOK_GOAL", "FATAL", "PLAIN", "RECIPE", "SCORED", "VALID", "Run", "learned", "rules"]
