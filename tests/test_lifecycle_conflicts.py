"""Conflict clusters end to end: linking, selection by reliability then recency, losing until suppressed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langmem_plus import LearningMemory
from langmem_plus.config import MemoryConfig
from langmem_plus.learning.lifecycle import Judgement, apply_conflict_losses
from langmem_plus.records import (
    Activation,
    Feedback,
    Lesson,
    LessonStats,
    ScoredItem,
    Step,
    TaskSpec,
    Verdict,
)
from langmem_plus.retrieval.select import apply_guards

NS = ("c",)
CFG = MemoryConfig()


def rule(lid: str, wrong: str, correct: str, *, fp: str = "fpU", rel: float = 0.5, updated: float = 0.0,
         status: str = "candidate", ns: tuple[str, ...] = NS) -> Lesson:
    return Lesson.model_validate(
        dict(id=lid, namespace=ns, rule_text=f"WRONG: {wrong} -> CORRECT: {correct}", wrong=wrong, correct=correct,
             triggers=[fp], tags=["unknown_command"], status=status, reliability=rel, updated_at=updated)
    )


def test_guards_keep_the_more_reliable_then_the_newer_evidence() -> None:
    a = rule("a", "from", "LOAD", rel=0.8).model_copy(update={"conflicts_with": ["b"]})
    b = rule("b", "from", "read", rel=0.6).model_copy(update={"conflicts_with": ["a"]})
    kept, dropped = apply_guards([ScoredItem(kind="lesson", item=b, score=0.9), ScoredItem(kind="lesson", item=a, score=0.5)], CFG)
    assert [k.item_id for k in kept] == ["a"] and ("b", "conflict_loss:a") in dropped  # reliability beats score
    old = a.model_copy(update={"reliability": 0.6, "updated_at": 1.0})
    new = b.model_copy(update={"reliability": 0.6, "updated_at": 2.0})
    kept, _ = apply_guards([ScoredItem(kind="lesson", item=old, score=0.9), ScoredItem(kind="lesson", item=new, score=0.5)], CFG)
    assert [k.item_id for k in kept] == ["b"]  # same reliability: newer evidence wins


def test_a_lesson_that_keeps_losing_to_a_proven_winner_is_suppressed_with_the_winner_as_evidence() -> None:
    loser = rule("lose", "from", "read").model_copy(update={"conflicts_with": ["win"]})
    pool = {"lose": loser}
    for run in range(1, 4):
        out = Judgement(utilities={"win": 0.5})
        apply_conflict_losses(pool, {"lose": 4}, run_id=f"r{run}", run_seq=run, config=CFG, out=out)
        # four losses at selection within one run count once: losing is judged per run
        assert pool["lose"].stats.conflict_losses == run
    assert pool["lose"].status == "suppressed"
    t = out.transitions[0]
    assert t.new == "suppressed" and t.evidence["lost_to"] == ["win"] and t.evidence["winner_utilities"] == {"win": 0.5}


def test_losing_to_a_rival_that_did_not_help_is_not_held_against_a_lesson() -> None:
    good = rule("good", "from", "LOAD").model_copy(update={"conflicts_with": ["bad"]})
    pool = {"good": good}
    for run in range(1, 6):
        out = Judgement(utilities={"bad": -0.65})  # the rival won on planted trust and hurt
        apply_conflict_losses(pool, {"good": 2}, run_id=f"r{run}", run_seq=run, config=CFG, out=out)
    assert pool["good"].stats.conflict_losses == 0 and pool["good"].status == "candidate"
    # with the refinement turned off every selection loss counts, as design.md §6 reads literally
    literal = CFG.replace(lifecycle={"conflict_loss_needs_winner_help": False})
    out = Judgement()
    apply_conflict_losses(pool, {"good": 3}, run_id="r9", run_seq=9, config=literal, out=out)
    assert pool["good"].status == "suppressed"


def test_conflict_path_through_memory(tmp_path: Path) -> None:
    mem = LearningMemory.open(tmp_path, namespace=NS)
    task = TaskSpec(task_id="g01", goal="people over 30", tool="gridtool", family="filter_select")
    fail = Step(index=0, action="from people | KEEP age >= 30", tool="gridtool",
                feedback=Feedback(hard_failure=True, error_text="unknown command 'from' at stage 1"))
    ev = mem.capture(fail, run_id="r1", task=task)
    assert ev is not None
    helpful = rule("helpful", "from", "LOAD", fp=ev.fingerprint_id, rel=0.5)
    harmful = rule("harmful", "from", "read", fp=ev.fingerprint_id, rel=0.9, status="promoted", updated=1.0)
    mem.add_lessons([helpful, harmful])
    # 1. imported lessons with the same trigger and different fixes are linked both ways, and audited
    assert mem.lessons["helpful"].conflicts_with == ["harmful"] and mem.lessons["harmful"].conflicts_with == ["helpful"]
    assert any(r["kind"] == "conflict" for r in mem.history("helpful"))
    # 2. the more reliable side wins selection; the other loses
    chosen = [i.item_id for i in mem.retrieve_on_error(ev, run_id="r1")]
    assert "harmful" in chosen and "helpful" not in chosen
    # 3. the winner is applied and causes a failure: it is suppressed, the loser is not blamed
    steps = [
        fail,
        Step(index=1, action="read people | KEEP age >= 30", tool="gridtool", info={"applied_hints": ["harmful"]},
             feedback=Feedback(hard_failure=True, error_text="unknown command 'read' at stage 1")),
        Step(index=2, action="LOAD people | KEEP age >= 30", tool="gridtool", feedback=Feedback(reward=1.0)),
    ]
    events = [ev] + [e for e in (mem.capture(steps[1], run_id="r1", task=task, history=steps[:1]),) if e is not None]
    report = mem.end_run(run_id="r1", task=task, steps=steps, events=events,
                         activations=[Activation(lesson_id="harmful", run_id="r1", step=1, moment="on_error")],
                         verdict=Verdict(passed=True, score=1.0))
    assert "harmful" in report.suppressed
    assert mem.lessons["helpful"].retrievable and mem.lessons["helpful"].stats.conflict_losses == 0
    # 4. from now on the cluster resolves to the helpful side
    chosen = [i.item_id for i in mem.retrieve_on_error(ev, run_id="r2")]
    assert "helpful" in chosen and "harmful" not in chosen
    mem.close()


def test_imported_lessons_in_other_namespaces_or_with_other_triggers_are_not_linked(tmp_path: Path) -> None:
    mem = LearningMemory.open(tmp_path, namespace=NS)
    mem.add_lessons([rule("a", "from", "LOAD", fp="fp1"), rule("b", "from", "read", fp="fp2"), rule("c", "limit", "TOP", fp="fp1")])
    assert all(not l.conflicts_with for l in mem.lessons.values())
    assert LessonStats().conflict_losses == 0
    mem.close()


def test_conflict_losses_belong_to_the_run_that_retrieved(tmp_path: Path, monkeypatch: Any) -> None:
    """A loss at run A's retrieval is judged at A's end_run, not at whichever run ends first; ad-hoc reads count for none."""
    import langmem_plus.memory.facade as memory_mod

    seen: dict[str, dict[str, int]] = {}
    real = memory_mod.apply_conflict_losses

    def spy(pool: Any, losses: Any, *, run_id: str, **kwargs: Any) -> None:
        seen[run_id] = dict(losses)
        real(pool, losses, run_id=run_id, **kwargs)

    monkeypatch.setattr(memory_mod, "apply_conflict_losses", spy)
    mem = LearningMemory.open(tmp_path, namespace=NS)
    task = TaskSpec(task_id="g01", goal="people over 30", tool="gridtool", family="filter_select")
    fail = Step(index=0, action="from people | KEEP age >= 30", tool="gridtool",
                feedback=Feedback(hard_failure=True, error_text="unknown command 'from' at stage 1"))
    ev = mem.capture(fail, run_id="rA", task=task)
    assert ev is not None
    mem.add_lessons([rule("helpful", "from", "LOAD", fp=ev.fingerprint_id, rel=0.5),
                     rule("harmful", "from", "read", fp=ev.fingerprint_id, rel=0.9)])
    mem.retrieve_on_error(ev, run_id="rA")  # helpful loses its cluster in run A
    mem.as_retriever(kind="on_error").invoke("unknown command 'from' at stage 1")  # an ad-hoc read
    done = Step(index=0, action="LOAD people | KEEP age >= 30", tool="gridtool", feedback=Feedback(reward=1.0))
    mem.end_run(run_id="rB", task=task, steps=[done], events=[], verdict=Verdict(passed=True, score=1.0))
    mem.end_run(run_id="rA", task=task, steps=[fail, done.model_copy(update={"index": 1})], events=[ev],
                verdict=Verdict(passed=True, score=1.0))
    mem.close()
    assert seen["rB"] == {} and seen["rA"] == {"helpful": 1}
