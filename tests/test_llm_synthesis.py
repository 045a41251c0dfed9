"""LLM paths with fake chat models: lesson synthesis and hint distillation, good answers and garbage."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from langchain_core.language_models.fake_chat_models import FakeListChatModel

from langmem_plus import LearningMemory
from langmem_plus.capture import fingerprint, fingerprint_id
from langmem_plus.config import MemoryConfig
from langmem_plus.learning.distill import distill_hints
from langmem_plus.learning.llm_synthesis import synthesize_with_llm
from langmem_plus.learning.synthesis import synthesize_offline
from langmem_plus.records import (
    ErrorEvent,
    Feedback,
    Lesson,
    ScoredItem,
    Step,
    TaskSpec,
    Verdict,
)

NS = ("llm",)
CFG = MemoryConfig()
TASK = TaskSpec(task_id="g01", goal="people over 30", tool="gridtool", family="filter_select")
ERR = "unknown command 'filter' at stage 2"
STEPS = [
    Step(index=0, action="LOAD people | filter age >= 30", feedback=Feedback(hard_failure=True, error_text=ERR), tool="gridtool"),
    Step(index=1, action="LOAD people | filter age >= 30 ", feedback=Feedback(hard_failure=True, error_text=ERR), tool="gridtool"),
    Step(index=2, action="LOAD people | KEEP age >= 30", feedback=Feedback(reward=1.0), tool="gridtool"),
]
EVENTS = [
    ErrorEvent(id=f"e{i}", namespace=NS, run_id="r1", step=i, channel="hard", fingerprint="unknown command <str> at stage <n>",
               fingerprint_id="fpU", action=STEPS[i].action, error_text=ERR, tags=["unknown_command"])
    for i in (0, 1)
]
GOOD = {"trigger_fingerprints": ["fpU"], "rule_text": "WRONG: filter -> CORRECT: KEEP", "wrong": "filter",
        "correct": "KEEP", "scope_hint": "domain"}


def synth(responses: list[str]) -> tuple[list[Lesson], str]:
    return synthesize_with_llm(FakeListChatModel(responses=responses), namespace=NS, run_id="r1", steps=STEPS,
                               events=EVENTS, prior_runs_seen={}, task=TASK, config=CFG, now=1.0)


def offline_ids() -> list[str]:
    return [l.id for l in synthesize_offline(namespace=NS, run_id="r1", steps=STEPS, events=EVENTS, prior_runs_seen={},
                                             task=TASK, config=CFG, now=1.0)]


def test_a_valid_answer_becomes_unproven_llm_candidates() -> None:
    lessons, source = synth([json.dumps({"lessons": [GOOD]})])
    assert source == "llm" and len(lessons) == 1
    l = lessons[0]
    assert (l.wrong, l.correct, l.triggers, l.source, l.status) == ("filter", "KEEP", ["fpU"], "llm", "candidate")
    assert l.stats.evidence_runs == 0 and l.reliability == 0.5  # never promoted without evidence
    single, _ = synth(["```json\n" + json.dumps(GOOD) + "\n```"])  # one bare object, fenced, is accepted too
    assert [x.wrong for x in single] == ["filter"]


def test_garbage_twice_falls_back_to_the_offline_path() -> None:
    lessons, source = synth(["I think you should use KEEP!", "{not json"])
    assert source == "offline" and [l.id for l in lessons] == offline_ids() and lessons


def test_one_bad_answer_is_retried_with_the_validation_error() -> None:
    lessons, source = synth(["nonsense", json.dumps({"lessons": [GOOD]})])
    assert source == "llm" and lessons[0].correct == "KEEP"


def test_model_output_is_validated_as_data() -> None:
    invented = {**GOOD, "trigger_fingerprints": ["fp_the_model_made_up"]}
    prose = {**GOOD, "wrong": "please replace every filter command you ever see with keep instead"}
    ungrounded = {**GOOD, "wrong": "DROP TABLE", "correct": "x"}
    noop = {**GOOD, "correct": "filter"}
    for bad in (invented, prose, ungrounded, noop):
        _, source = synth([json.dumps(bad), json.dumps(bad)])
        assert source == "offline", bad


class Exploding(FakeListChatModel):
    def invoke(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        raise RuntimeError("provider down")


def test_a_failing_provider_never_breaks_end_run(tmp_path: Path) -> None:
    real_fp = fingerprint_id(fingerprint(ERR))
    answer = json.dumps({**GOOD, "trigger_fingerprints": [real_fp]})
    for llm, expected in ((Exploding(responses=["x"]), "offline"), (FakeListChatModel(responses=[answer]), "llm")):
        mem = LearningMemory.open(tmp_path / expected, namespace=NS, llm=llm)
        events = [e for i, s in enumerate(STEPS) if (e := mem.capture(s, run_id="r1", task=TASK, history=STEPS[:i]))]
        assert {e.fingerprint_id for e in events} == {real_fp}
        report = mem.end_run(run_id="r1", task=TASK, steps=STEPS, events=events, verdict=Verdict(passed=True, score=1.0))
        assert report.new_lessons
        audit = [r for r in mem.audit.read() if r["kind"] == "synthesis"]
        assert audit[-1]["source"] == expected
        assert all(mem.lessons[i].status == "candidate" for i in report.new_lessons)
        mem.close()


def test_hint_distillation_with_garbage_falls_back_to_rules() -> None:
    lesson = Lesson(id="les_1", namespace=NS, rule_text="WRONG: filter -> CORRECT: KEEP", wrong="filter", correct="KEEP")
    items = [ScoredItem(kind="lesson", item=lesson, score=0.9)]
    rules = distill_hints(items, goal="g")
    assert distill_hints(items, goal="g", llm=FakeListChatModel(responses=["garbage", "more garbage"])) == rules
    good = json.dumps({"hints": [{"id": "les_1", "next_step": "Write KEEP for filtering", "precondition": None},
                                 {"id": "les_invented", "next_step": "rm -rf /"}]})
    [hint] = distill_hints(items, goal="g", llm=FakeListChatModel(responses=[good]))
    assert hint.text == "Write KEEP for filtering" and (hint.wrong, hint.correct) == ("filter", "KEEP")  # rewrite from the store
