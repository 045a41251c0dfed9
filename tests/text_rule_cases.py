"""Test-only: the rules, tasks and steps the text-rule delivery tests share (a cookbook read, a knife taken)."""

from __future__ import annotations

from collections.abc import Sequence

from langmem_plus.records import (
    Episode,
    Hint,
    Lesson,
    LessonScope,
    Provenance,
    RunRecord,
    ScoredItem,
    Step,
    TaskSpec,
)
from langmem_plus.textgames.executor import TextGameExecutor

GOAL = "Cook a meal. Check the cookbook for the recipe."


RECIPE = "Ingredients:\n  red apple\n  milk\nDirections:\n  roast the red apple\n  prepare meal"


def rule(lid: str, *, wrong: str | None = None, correct: str | None = None, when: Sequence[str] = (),
         runs: Sequence[str] = ("r0",)) -> Lesson:
    return Lesson(id=lid, namespace=("ns",), rule_text=lid, wrong=wrong, correct=correct, applies_when=list(when),
                  scope=LessonScope(tool="game"), provenance=Provenance(run_ids=list(runs)))


def with_extras(run: RunRecord, **kept: list[str]) -> RunRecord:
    """A copy of ``run`` whose text-game extras have ``kept`` in place of theirs."""
    return run.model_copy(update={"extras": {"textgames": {**run.extras.get("textgames", {}), **kept}}})


def task(valid: Sequence[str]) -> TaskSpec:
    return TaskSpec(task_id="t", goal=GOAL, tool="game", context={"observation": "A kitchen.", "valid_actions": list(valid)})


def read(valid: Sequence[str], observation: str = RECIPE) -> list[Step]:
    """One step that read the cookbook (its object is a goal word), then ``valid`` are offered."""
    return [Step(index=0, action="read cookbook", observation=observation, info={"valid_actions": list(valid)})]


COOKS = ["cook red apple in oven", "cook red apple in stove", "cook milk in oven", "eat red apple", "look"]


def allowed(hints: Sequence[Hint], action: str, observation: str = RECIPE) -> bool:
    """Whether ``TextGameExecutor`` may take ``action`` with ``hints`` (offered alone, it is taken unless avoided)."""
    return TextGameExecutor(seed=0).act(task([]), read([action], observation), hints).kind == "command"


def taken(valid: Sequence[str], action: str, observation: str = RECIPE) -> list[Step]:
    """``read`` and then ``action`` taken, with ``valid`` still offered (a recommendation already followed)."""
    return [*read(valid, observation), Step(index=1, action=action, observation="Done.", info={"valid_actions": list(valid)})]


CUT_RECIPE = "Ingredients:\n  red apple\n  milk\nDirections:\n  chop the red apple\n  prepare meal"


ONE_CUT = ["chop red apple", "slice red apple", "chop milk", "slice milk", "eat milk", "look"]


def closed_door() -> ScoredItem:
    """An avoided episode as memory keeps one after a run wasted steps on an action that kept failing."""
    ep = Episode(episode_id="ep-door", namespace=("ns",), kind="avoidance", goal_signature=GOAL,
                 action_seq=["close door to north", "close door to west"],
                 summary="`close door to north` fails with: that is already closed. (3x in one run)")
    return ScoredItem(kind="episode", item=ep, score=0.5)


def procedure() -> ScoredItem:
    """A won attempt's procedure, longer than a compact line keeps."""
    steps = ["read cookbook", "take cookbook", "open fridge", "take red apple", "cook red apple in oven", "prepare meal"]
    ep = Episode(episode_id="ep-won", namespace=("ns",), kind="success", goal_signature=GOAL, action_seq=steps,
                 preconds_missing=["in the kitchen"])
    return ScoredItem(kind="episode", item=ep, score=0.5)


FRY = "Ingredients:\n  red apple\nDirections:\n  fry the red apple\n  prepare meal"


HOLDING = ["eat red apple", "eat milk", "drop red apple", "drop milk", "take knife", "look"]


"""What is offered holding a red apple and milk, the knife at hand."""


CUTS = [f"{v} {thing}" for v in ("slice", "dice", "chop") for thing in ("red apple", "milk")]


"""What taking the knife offers on them."""


def knife_taken(recipe: str) -> list[Step]:
    """The recipe read, then the knife taken: its cuts first offered together, on the red apple and the milk."""
    return [Step(index=0, action="read cookbook", observation=recipe, info={"valid_actions": HOLDING}),
            Step(index=1, action="take knife", observation="You take the knife.",
                 info={"valid_actions": [*HOLDING[:4], *CUTS, "drop knife", "look"]})]
