"""The stress scenario on a slice of gridtool (the full 10-run bench is ``langmem-plus bench stress``)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from langmem_plus.bench import stress
from langmem_plus.bench.stress import (
    TARGET_ACTIVATIONS,
    meets_target,
    planted_lessons,
    run_stress,
)
from langmem_plus.learning.dedup import find_conflicts


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory) -> dict:  # type: ignore[type-arg]
    # 6 tasks (filter_select + one sort) x 3 runs: every planted lesson but TALLY -> count() gets to act
    return run_stress(runs=3, tasks=6, store=tmp_path_factory.mktemp("stress"))


def test_json_shape_is_exactly_the_issue_shape(result: dict) -> None:  # type: ignore[type-arg]
    assert set(result) == {"harmful", "conflicts", "pass_rate_clean", "pass_rate_last", "runs"}
    assert all(set(h) == {"id", "suppressed", "activations_to_suppress"} for h in result["harmful"])
    assert all(set(c) == {"ids", "resolved_to_helpful"} and len(c["ids"]) == 2 for c in result["conflicts"])
    assert isinstance(result["pass_rate_clean"], float) and len(result["runs"]) == 3
    json.dumps(result)


def test_harmful_lessons_that_act_are_suppressed_within_five_activations(result: dict) -> None:  # type: ignore[type-arg]
    last = result["runs"][-1]["harmful_state"]
    acted = [h for h in result["harmful"] if last[h["id"]]["evidence_runs"] > 0]
    assert len(acted) >= 4, "most planted lessons got their chance to act in these tasks"
    for h in acted:
        assert h["suppressed"] and h["activations_to_suppress"] <= TARGET_ACTIVATIONS, h
    # a lesson that never acted (its WRONG absent from these tasks, or ranked out before it could
    # apply) has no evidence, and is not judged on none
    idle = [h for h in result["harmful"] if h not in acted]
    assert idle and all(last[h["id"]]["evidence_runs"] == 0 and not h["suppressed"] for h in idle)


def test_conflicts_resolve_to_the_helpful_side_and_pass_rate_recovers(result: dict) -> None:  # type: ignore[type-arg]
    assert all(c["resolved_to_helpful"] for c in result["conflicts"])
    assert result["pass_rate_last"] >= result["pass_rate_clean"]
    first = result["runs"][0]
    assert first["tool_errors"] > first["tool_errors_clean"], "the planted lessons must actually hurt at first"


def test_planted_pairs_are_real_conflicts_and_harmful_ones_are_trusted() -> None:
    harmful, pairs = planted_lessons(("s",), 0.0)
    for good, bad in pairs:
        assert find_conflicts(bad, [good]) == [good.id] and bad.reliability > good.reliability
    assert all(h.reliability >= 0.9 and h.status in ("promoted", "candidate") for h in harmful)


def test_meets_target_reads_the_result() -> None:
    ok = {"harmful": [{"id": "a", "suppressed": True, "activations_to_suppress": 5}],
          "conflicts": [{"ids": ["g", "b"], "resolved_to_helpful": True}], "pass_rate_clean": 1.0, "pass_rate_last": 1.0, "runs": []}
    assert meets_target(ok)
    assert not meets_target({**ok, "harmful": [{"id": "a", "suppressed": True, "activations_to_suppress": 6}]})
    assert not meets_target({**ok, "pass_rate_last": 0.9})


def test_cli_entry_point_prints_json(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    canned = {"harmful": [], "conflicts": [], "pass_rate_clean": 1.0, "pass_rate_last": 1.0, "runs": []}
    seen: dict = {}  # type: ignore[type-arg]

    def fake(**kwargs: object) -> dict:  # type: ignore[type-arg]
        seen.update(kwargs)
        return canned

    monkeypatch.setattr(stress, "run_stress", fake)
    code = stress.run(argparse.Namespace(runs=12, seed=3, store=str(tmp_path), json=True))
    assert code == 0 and json.loads(capsys.readouterr().out) == canned
    assert (seen["runs"], seen["seed"]) == (12, 3)
