"""``langmem-plus bench reliability``: the counts it reports are right on a case with a known answer."""

from __future__ import annotations

import json

import pytest

from langmem_plus.bench.reliability import duplicate_live_lessons, run_reliability
from langmem_plus.cli import main
from langmem_plus.records import Lesson

NS = ("bench", "reliability")


def _lesson(lid: str, *, wrong: str | None = "filter", correct: str | None = "keep", triggers: tuple[str, ...] = ("fp1",),
            status: str = "candidate", rule: str = "WRONG: filter -> CORRECT: keep") -> Lesson:
    return Lesson(id=lid, namespace=NS, rule_text=rule, wrong=wrong, correct=correct, triggers=list(triggers), status=status)


def test_duplicates_count_live_lessons_beyond_the_first_of_each_rule() -> None:
    lessons = [
        _lesson("a"), _lesson("b"), _lesson("c"),  # one rule under three ids: two duplicates
        _lesson("d", status="suppressed"),  # not live
        _lesson("e", triggers=("fp2",)),  # another trigger: another rule
        _lesson("f", wrong=None, correct=None, rule="avoid: rm -rf"), _lesson("g", wrong=None, correct=None, rule="avoid: dd"),
    ]
    assert duplicate_live_lessons(lessons) == 2


@pytest.mark.server
@pytest.mark.slow
def test_one_writer_loses_nothing_and_a_kill_keeps_every_acknowledged_write() -> None:
    """With one writer the figures have a known answer: every activation and run reported is stored."""
    said: list[str] = []
    out = run_reliability(processes=1, runs=3, kills=1, threads=1, seed=3, progress=said.append)
    assert out["runs"] == 3 and out["workers_failed"] == 0
    assert out["activations_reported"] > 0 and out["activations_stored"] == out["activations_reported"]
    assert out["run_records_lost"] == 0 and out["duplicate_live_lessons"] == 0
    assert out["kill_rounds_survived"] == 1 and out["records_acknowledged_before_kills"] > 0
    assert out["records_lost_after_kills"] == 0
    assert out["thread_exceptions"] == 0 and out["nothing_lost"] and out["no_exceptions"]
    assert any("kill 1/1" in line for line in said)
    json.dumps(out)


def test_cli_refuses_bad_counts(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "reliability", "--processes", "0"]) == 2
    assert main(["bench", "reliability", "--kills", "-1"]) == 2
    assert "--processes must be >= 1" in capsys.readouterr().err
