"""The text-game baselines in both forms: literal items as their offline forms keep them, and abstracted items
that carry the task's entity abstraction and its lines as their condition; and the bench's count of notes shown
against the task (``bench.contradicted``)."""

from __future__ import annotations

import pytest

from langmem_plus.bench.contradicted import contradicted_notes, is_contradicted
from langmem_plus.bench.designs.textdesigns import (
    DynamicCheatsheet,
    Expel,
    ReasoningBank,
    TextTrajectoryRetrieval,
)
from langmem_plus.bench.env import TEXT_DESIGNS
from langmem_plus.memory import Trajectory
from langmem_plus.records import Feedback, Step, TaskSpec, Verdict

GOAL = "Check the cookbook in the kitchen for the recipe, then prepare and eat the meal."


def game(food: str, verb: str, action: str, *, lost: bool, run_id: str) -> Trajectory:
    """One attempt: the cookbook read (its recipe says ``verb the food``), then ``action``, fatal or scoring."""
    task = TaskSpec(task_id=run_id, goal=GOAL, tool="twx-cooking", context={"goal": GOAL})
    read = Step(index=0, action="read cookbook", observation=f"Ingredients:\n  {food}\n\nDirections:\n  {verb} the {food}",
                info={"valid_actions": [f"cook {food} in oven", f"cook {food} in stove"]})
    last = Step(index=1, action=action, observation="done",
                feedback=Feedback(constraint_failure=lost, error_text="You lost." if lost else None,
                                  reward=0.0 if lost else 1.0),
                info={"valid_actions": []})
    return Trajectory(task=task, steps=[read, last], verdict=Verdict(passed=not lost, score=0.0 if lost else 1.0),
                      run_id=run_id)


def next_task() -> TaskSpec:
    return TaskSpec(task_id="next", goal=GOAL, tool="twx-cooking", context={"goal": GOAL})


@pytest.mark.parametrize("cls", [ReasoningBank, DynamicCheatsheet, Expel, TextTrajectoryRetrieval])
def test_an_abstracted_baseline_carries_the_entity_and_its_condition(cls: type) -> None:
    literal, abstracted = cls(), cls(abstract=True)
    assert abstracted.name == literal.name + "_abstracted" and abstracted.name in TEXT_DESIGNS
    lost = game("red apple", "fry", "cook red apple in oven", lost=True, run_id="c1")
    for design in (literal, abstracted):
        design.general_update(lost)
    said = {(h.text, h.precondition) for h in literal.general_retrieve(next_task()).hints}
    assert ("Avoid `cook red apple in oven`", None) in said
    said = {(h.text, h.precondition) for h in abstracted.general_retrieve(next_task()).hints}
    assert ("Avoid `cook <X> in oven`", "when the task says `fry <X>`") in said
    assert "when the task says `fry <X>`" in abstracted.general_retrieve(next_task()).text or cls is TextTrajectoryRetrieval


def test_the_abstracted_cheatsheet_keeps_one_entry_per_condition_where_the_literal_one_flips() -> None:
    literal, abstracted = DynamicCheatsheet(), DynamicCheatsheet(abstract=True)
    for design in (literal, abstracted):
        design.general_update(game("red apple", "fry", "cook red apple in oven", lost=True, run_id="c1"))
        design.general_update(game("red apple", "roast", "cook red apple in oven", lost=False, run_id="c2"))
    assert [h.text for h in literal.general_retrieve(next_task()).hints] == ["Prefer `cook red apple in oven`"]
    said = {(h.text, h.precondition) for h in abstracted.general_retrieve(next_task()).hints}
    assert said == {("Avoid `cook <X> in oven`", "when the task says `fry <X>`"),
                    ("Prefer `cook <X> in oven`", "when the task says `roast <X>`")}


def test_a_note_is_contradicted_only_where_no_offered_action_makes_its_condition_hold() -> None:
    offered = ["cook yellow potato in oven", "cook yellow potato in stove", "take knife"]
    lines = ["yellow potato", "fry yellow potato"]
    judge = lambda text, pre: is_contradicted(text, pre, GOAL, lines, offered)  # noqa: E731
    assert judge("Avoid `cook <X> in oven`", "when the task says `roast <X>`")
    assert not judge("Avoid `cook <X> in oven`", "when the task says `fry <X>`")
    assert judge("Avoid `fry <X>`", "unless the task says so") is False  # nothing offered is `fry ...`: not judged
    assert judge("Avoid `cook <X> in stove`", "when the task does not say `fry <X>`")
    assert judge("Prefer `cook <X> in oven`", "when the task does not name `<X>`")
    assert not judge("Prefer `take knife`", None)  # no condition: not judged
    assert not judge("Avoid `cook <X> in oven/stove`", "when the task says `fry <X>`")


def test_contradicted_notes_reads_the_task_text_the_attempt_read() -> None:
    attempt = game("red apple", "fry", "cook red apple in stove", lost=False, run_id="d1")
    notes = [("Avoid `cook <X> in oven`", "when the task says `roast <X>`"),
             ("Avoid `cook <X> in oven`", "when the task says `roast <X>`"),
             ("Prefer `cook <X> in stove`", "when the task says `fry <X>`")]
    assert contradicted_notes(notes, GOAL, attempt.task.context, attempt.steps) == 1
    offered = {**attempt.task.context, "valid_actions": ["cook red apple in oven", "cook red apple in stove"]}
    assert contradicted_notes(notes, GOAL, offered, attempt.steps[1:]) == 2  # the recipe unread: neither holds
    assert contradicted_notes(notes, GOAL, attempt.task.context, attempt.steps[1:]) == 0  # nothing offered: unjudged
