"""``textgames.delivery_rules.undo`` and what it reads (``textgames.undo``, the efficiency channel): a step that takes back an
earlier one is learned from the valid actions a run toggled and avoided after what it would undo."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from langmem_plus import LearningMemory
from langmem_plus.bench.designs.base import Context, run_episode
from langmem_plus.bench.env import _tasks, parse_range
from langmem_plus.envs.textgame import TextGameEnv
from langmem_plus.textgames.executor import TextGameExecutor, read_hint
from langmem_plus.textgames.plugin import run_undone
from langmem_plus.textgames.undo import shared_object, undo_pairs
from langmem_plus.records import Feedback, Hint, Lesson, LessonScope, Provenance, RunRecord, Step, TaskSpec
from langmem_plus.config import DEFAULT_CONFIG, MemoryConfig
from langmem_plus.errors import InvalidArgument
from listing import listing


def _step(i: int, action: str, valid: Sequence[str], *, reward: float = 0.0, failed: bool = False) -> Step:
    return Step(index=i, action=action, observation=f"You {action}.", info={"valid_actions": list(valid)},
                feedback=Feedback(reward=reward, hard_failure=failed, error_text="no" if failed else ""))


START = ["open drawer", "look"]
OPENED = [_step(0, "open drawer", ["close drawer", "take knife", "look"]),
          _step(1, "take knife", ["close drawer", "drop knife", "put knife in drawer", "look"]),  # taken between
          _step(2, "close drawer", ["open drawer", "drop knife", "look"])]


def test_a_step_that_toggles_back_an_earlier_one_is_an_undo_pair_whatever_came_between() -> None:
    task = TaskSpec(task_id="t", goal="Find the knife.", context={"valid_actions": START})
    assert undo_pairs(task, OPENED) == [("close <X>", "open <X>")]
    reopened = [*OPENED, _step(3, "open drawer", ["close drawer", "drop knife", "look"])]
    assert undo_pairs(task, reopened) == [("close <X>", "open <X>")]  # opening again redoes what was needed: no pair
    dropped = [*OPENED[:2], _step(2, "drop knife", ["close drawer", "take knife", "look"])]
    assert undo_pairs(task, dropped) == [("drop <X>", "take <X>")]
    opened_at_start = [_step(0, "close door", ["open door", "look"]), _step(1, "open door", ["close door", "move west", "look"])]
    assert undo_pairs(TaskSpec(task_id="d", goal="g", context={"valid_actions": ["close door", "move west", "look"]}),
                      opened_at_start) == []  # reopening fixes the close, which offered nothing but the open
    spaced = [_step(0, "open the drawer", OPENED[0].info["valid_actions"]), *OPENED[1:]]
    assert undo_pairs(task, spaced) == [("close <X>", "open <X>")]  # compared as normalised text
    scored = [*OPENED[:2], _step(2, "close drawer", ["open drawer", "drop knife", "look"], reward=1.0)]
    failed = [*OPENED[:2], _step(2, "close drawer", ["close drawer", "drop knife", "look"], failed=True)]
    assert undo_pairs(task, scored) == [] and undo_pairs(task, failed) == []  # more than a reversal, or none
    moves = [_step(0, "move west", ["move east"]), _step(1, "move east", ["move west"])]
    assert undo_pairs(TaskSpec(task_id="m", goal="g", context={"valid_actions": ["move west"]}), moves) == []
    assert shared_object("move east", "move west") is None  # a toggle, but no shared object to say it over
    assert undo_pairs(task, [Step(index=0, action="open drawer"), Step(index=1, action="close drawer")]) == []


def test_the_executor_avoids_taking_back_a_step_only_after_the_attempt_took_it() -> None:
    hint = Hint(text="Avoid `close <X>`", precondition="after `open <X>`", source_id="undo")
    rh = read_hint(hint)
    assert rh is not None and rh.avoid and rh.conditions == ("^open <X>",)
    task = TaskSpec(task_id="t", goal="Find the knife.", context={"observation": "A kitchen.", "valid_actions": ["close drawer"]})
    ex = TextGameExecutor(seed=0)
    assert ex.act(task, [], [hint]).action == "close drawer"  # open from the start: closing takes back nothing
    opened = [_step(0, "open drawer", ["close drawer"])]
    assert ex.act(task, opened, [hint]).kind == "done"  # the one action left would take back the attempt's step
    tried = [_step(0, "open drawer", ["close drawer"], failed=True)]
    assert ex.act(task, tried, [hint]).action == "close drawer"  # a failed open did nothing to take back


def _runs(n: int) -> list[RunRecord]:
    return [RunRecord(run_id=f"r{i}", namespace=("ns",), seq=i, task_id="t", tool="game",
                      extras={"textgames": {"undone": [["close <X>", "open <X>"]]}})
            for i in range(n)]


def test_delivery_avoids_taking_back_a_step_once_enough_runs_recorded_the_pair() -> None:
    valid = ["close fridge", "close door", "look"]
    task = TaskSpec(task_id="t", goal="Find the milk.", tool="game", context={"observation": "A kitchen.", "valid_actions": valid})
    opened = [_step(0, "open fridge", valid)]
    deliver = listing([], _runs(2))
    assert deliver(task, []) == []  # nothing taken yet: nothing to take back
    hints = deliver(task, opened)
    assert [(h.text, h.precondition) for h in hints] == [("Avoid `close <X>`", "after `open <X>`")]
    assert list(deliver.lines) == ['- "Avoid `close <X>` after `open <X>`"'] and deliver.activations("x") == []
    assert {TextGameExecutor(seed=s).act(task, opened, []).action for s in range(8)} == {"close fridge"}  # unwarned
    warned = {TextGameExecutor(seed=s).act(task, opened, hints).action for s in range(8)}
    assert "close fridge" not in warned and "close door" in warned  # never opened: closing it takes nothing back
    assert listing([], _runs(1))(task, opened) == []  # one run is not evidence enough (``min_occurrences``)
    assert listing([], _runs(2), MemoryConfig(textgames={"text_rules_off": frozenset({"undo"})}))(task, opened) == []  # switched off
    with pytest.raises(InvalidArgument, match="unknown delivery rule"):
        listing([], _runs(2), MemoryConfig(textgames={"text_rules_off": frozenset({"undoo"})}))
    recommended = Lesson(id="p", namespace=("ns",), rule_text="p", correct="close <X>", applies_when=["<X>"],
                         scope=LessonScope(tool="game"), provenance=Provenance(run_ids=["r0", "r1"]))
    assert not any(h.text.startswith("Avoid") for h in listing([recommended], _runs(2))(task, opened))
    told = task.model_copy(update={"goal": "Find the milk. Close the fridge."})  # the task says one of the actions
    both = [*opened, _step(1, "open door", valid)]
    assert [(h.text, h.precondition) for h in listing([], _runs(2))(told, both)] == [
        ("Avoid `close door`", "after `open door`")]


def test_a_real_game_teaches_that_closing_what_was_opened_wastes_steps(cooking: TextGameEnv, tmp_path: Path) -> None:
    ex = TextGameExecutor(seed=0)
    memory = LearningMemory.open(tmp_path / "m", namespace=("t", "undo"))
    for t in _tasks(cooking, "train", parse_range("0-2")):  # memory-free games: the executor closes what it opened
        memory.general_update(run_episode(cooking, ex, t, Context(), run_id=f"c-{t.task_id}", max_steps=30))
    assert all(("close <X>", "open <X>") in run_undone(run) for run in memory.runs)  # read off the game's valid actions
    memory.close()
    memory = LearningMemory.open(tmp_path / "m", namespace=("t", "undo"))  # the runs keep their pairs
    rules = [l for l in memory.list_lessons() if l.applies_when is not None]
    try:
        for t in _tasks(cooking, "dev", parse_range("0-1")):
            alone = run_episode(cooking, ex, t, Context(), max_steps=30)
            deliver = listing(rules, [r for r in memory.runs if r.tool == t.tool], memory.config)
            helped = run_episode(cooking, ex, t, Context(step_hints=deliver), max_steps=30)
            for traj, closes in ((alone, True), (helped, False)):
                done = [s.action for s in traj.steps if not s.feedback.failed]
                undone = [a for i, a in enumerate(done) if a.startswith("close ") and "open " + a[6:] in done[:i]]
                assert bool(undone) is closes, (t.task_id, undone)
            assert '- "Avoid `close <X>` after `open <X>`"' in deliver.lines
    finally:
        memory.close()


def test_pairs_that_undo_different_steps_with_one_command_are_each_shown() -> None:
    valid = ["take knife from fridge", "take knife from table", "look"]
    task = TaskSpec(task_id="t", goal="Find the milk.", tool="game", context={"observation": "A kitchen.", "valid_actions": valid})
    runs = [RunRecord(run_id=f"r{i}", namespace=("ns",), seq=i, task_id="t", tool="game",
                      undone=[("take knife from <X>", "put knife on <X>"), ("take knife from <X>", "insert knife into <X>")])
            for i in range(2)]
    history = [_step(0, "put knife on table", valid), _step(1, "insert knife into fridge", valid)]
    hints = listing([], runs)(task, history)
    assert {h.precondition for h in hints} == {"after `put knife on <X>`", "after `insert knife into <X>`"}
    assert TextGameExecutor(seed=0).act(task, history, hints).action == "look"  # both takes would undo a step


def test_a_stored_rule_with_a_history_condition_is_no_live_rule() -> None:
    imported = Lesson(id="imp", namespace=("ns",), rule_text="imp", wrong="close <X>", applies_when=["^open <X>"],
                      scope=LessonScope(tool="game"), provenance=Provenance(run_ids=["r0", "r1"]))
    valid = ["close fridge", "look"]
    task = TaskSpec(task_id="t", goal="Find the milk.", tool="game", context={"observation": "A fridge.", "valid_actions": valid})
    assert listing([imported], runs=[])(task, [_step(0, "look", valid)]) == []  # not read as a line of the task


def test_an_inference_never_takes_the_budget_from_a_rule_memory_stored() -> None:
    fatal = Lesson(id="fatal", namespace=("ns",), rule_text="fatal", wrong="cook <X> in stove", applies_when=["roast <X>"],
                   scope=LessonScope(tool="game"), provenance=Provenance(run_ids=["r0"]))
    oven = Lesson(id="oven", namespace=("ns",), rule_text="oven", correct="cook <X> in oven", applies_when=["roast <X>"],
                  scope=LessonScope(tool="game"), provenance=Provenance(run_ids=["r1"]))  # cooking is right somewhere
    valid = ["close fridge", "close drawer", "cook red apple in stove", "look"]
    task = TaskSpec(task_id="t", goal="Cook a meal. Check the cookbook for the recipe.", tool="game",
                    context={"observation": "A kitchen.", "valid_actions": valid})
    history = [_step(0, "open fridge", valid), _step(1, "open drawer", valid),
               Step(index=2, action="read cookbook", observation="Ingredients:\n  red apple\nDirections:\n  roast the red apple",
                    info={"valid_actions": valid})]
    roomy = listing([fatal, oven], _runs(2))(task, history)
    assert {h.text for h in roomy} == {"Avoid `cook red apple in stove`", "Avoid `close <X>`"}
    tight = DEFAULT_CONFIG.replace(context={"max_context_tokens": 30})  # the header and one line
    assert [h.text for h in listing([fatal, oven], _runs(2), tight)(task, history)] == ["Avoid `cook red apple in stove`"]
