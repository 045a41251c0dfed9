"""The four-phase protocol bench: per-run figures, acceptance, CLI shape."""

from __future__ import annotations

import json
import sys
import types
from collections import Counter
from typing import Any

import pytest

from langmem_plus.bench import protocol
from langmem_plus.cli import main
from langmem_plus.records import RunReport


def _report(task: str, *, errors: int = 0, fps: dict[str, int] | None = None, utilities: dict[str, float] | None = None) -> RunReport:
    return RunReport(
        run_id=f"r-{task}",
        task_id=task,
        passed=True,
        score=1.0,
        steps=errors + 1,
        tool_errors=errors,
        repeated_errors=0,
        fingerprint_counts=fps or {},
        lesson_activations=len(utilities or {}),
        utilities=utilities or {},
        lessons_by_status={"candidate": 1, "promoted": 2, "suppressed": 0, "archived": 0},
    )


def test_summarize_run_precision_and_recurrence() -> None:
    reports = [
        _report("t1", errors=2, fps={"a": 2}, utilities={"l1": 0.5, "l2": -0.1}),
        _report("t2", errors=1, fps={"b": 1}, utilities={"l1": 0.2, "l3": 0.0}),
    ]
    row = protocol.summarize_run("B", "fluxtool", 2, "memory", reports, Counter({"a": 3}))
    assert row["tool_errors"] == 3 and row["steps"] == 5 and row["tasks"] == 2
    assert row["fingerprint_counts"] == {"a": 2, "b": 1}
    assert row["recurrence"] == 2  # only "a" occurred in an earlier run
    assert (row["helped"], row["harmed"], row["activated_judged"]) == (2, 1, 4)
    assert row["precision"] == 0.5
    assert row["lessons_by_status"]["promoted"] == 2
    assert protocol.summarize_run("A", "gridtool", 1, "docs", [_report("t")], Counter())["precision"] is None


def _row(phase: str, steps: int, fps: dict[str, int], helped: int = 1, harmed: int = 0) -> dict[str, Any]:
    return {"phase": phase, "steps": steps, "fingerprint_counts": fps, "helped": helped, "harmed": harmed}


def test_acceptance_checks_can_pass_and_fail() -> None:
    designs = {
        "langmem_plus": {"tool_errors": 3, "steps": 10},
        "vote_memory": {"tool_errors": 5, "steps": 10},
    }
    good = [_row("A", 10, {}), _row("B", 30, {"x": 10, "y": 2}), _row("B", 12, {"x": 4, "z": 9}), _row("C", 11, {})]
    acc = protocol.acceptance(good, designs, True)
    assert acc == {
        "key_error_recurrence_drops_50pct": True,  # 12 -> 4 on the first run's fingerprints (z is new)
        "retention_steps_within_10pct": True,
        "suppression_in_stress": True,
        "activations_help_more_than_harm": True,
        "langmem_plus_fewest_tool_errors": True,
        "langmem_plus_steps_not_above_any": True,
    }
    bad = [_row("A", 10, {}), _row("B", 30, {"x": 10}), _row("B", 12, {"x": 6}), _row("C", 12, {}, helped=0, harmed=3)]
    worse = {"langmem_plus": {"tool_errors": 5, "steps": 11}, "vote_memory": {"tool_errors": 5, "steps": 10}}
    acc = protocol.acceptance(bad, worse, None)
    assert not any(acc.values()), acc


def test_stress_check_skips_cleanly_or_reads_the_issue4_shape(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "langmem_plus.bench.stress", None)  # import fails
    said: list[str] = []
    assert protocol.stress_suppression(0, said.append) is None
    assert said and "skipped" in said[0]
    fake = types.ModuleType("langmem_plus.bench.stress")

    def run_stress(
        *, runs: int = 10, seed: int = 0, store: Any = None, progress: Any = None, tasks: int | None = None
    ) -> dict[str, Any]:
        return {"harmful": [{"id": "l1", "suppressed": seed == 1, "activations_to_suppress": 3}], "conflicts": []}

    fake.run_stress = run_stress  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "langmem_plus.bench.stress", fake)
    assert protocol.stress_suppression(1) is True
    assert protocol.stress_suppression(0) is False


def test_phases_small_run_is_reproducible() -> None:
    kwargs: dict[str, Any] = {"seed": 1, "runs_a": 2, "runs_b": 2, "per_family": 1}
    rows = protocol.run_phases(**kwargs)
    assert [(r["phase"], r["tool"], r["run"]) for r in rows] == [
        ("A", "gridtool", 1), ("A", "gridtool", 2), ("B", "fluxtool", 1), ("B", "fluxtool", 2),
        ("C", "gridtool", 1), ("D", "gridtool", 1), ("D", "fluxtool", 1),
    ]
    assert [r["label"] for r in rows[:3]] == ["docs", "memory", "docs"]
    assert all(r["tasks"] == 2 for r in rows[:5]) and all(r["tasks"] == 1 for r in rows[5:])
    assert rows[0]["recurrence"] == 0 and rows[0]["tool_errors"] > 0
    assert rows[1]["tool_errors"] < rows[0]["tool_errors"]  # memory helps on the second gridtool run
    for r in rows:
        assert {"pass_rate", "score", "steps", "tool_errors", "lesson_activations", "fingerprint_counts", "recurrence",
                "promoted", "suppressed", "precision", "lessons_by_status"} <= set(r)
    assert protocol.run_phases(**kwargs) == rows


@pytest.mark.slow
def test_stress_check_suppresses_a_harmful_lesson_on_a_real_run() -> None:
    """The real scenario (a slice of it): planted harmful lessons act, hurt, and one is suppressed."""
    assert protocol.stress_suppression(0, runs=3, tasks=6) is True


def test_stress_check_is_false_when_the_lifecycle_never_suppresses(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check reads the lifecycle's outcome: with suppression disabled it must say so."""
    import langmem_plus.learning.lifecycle as lifecycle

    real = lifecycle.decide_status

    def never_suppress(lesson: Any, *args: Any, **kwargs: Any) -> tuple[str, str]:
        new, reason = real(lesson, *args, **kwargs)
        return (lesson.status, "") if new == "suppressed" else (new, reason)

    monkeypatch.setattr(lifecycle, "decide_status", never_suppress)
    assert protocol.stress_suppression(0, runs=2, tasks=4) is False


def test_cli_json_has_exactly_the_issue_shape(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    asked: list[int] = []

    def stress_check(seed: int, progress: Any = None, **kwargs: Any) -> bool:
        asked.append(seed)
        return False  # the CLI must report the check's answer, not a constant

    monkeypatch.setattr(protocol, "stress_suppression", stress_check)
    assert main(["bench", "protocol", "--json", "--seed", "2", "--per-family", "2", "--repeats", "1", "--runs-a", "1", "--runs-b", "2"]) == 0
    out, err = capsys.readouterr()
    result = json.loads(out)
    assert set(result) == {"acceptance", "designs", "phases"}
    assert list(result["designs"]) == ["no_memory", "trajectory_retrieval", "flat_vector", "vote_memory", "langmem_plus"]
    assert all(isinstance(v, bool) for v in result["acceptance"].values())
    assert asked == [2] and result["acceptance"]["suppression_in_stress"] is False
    for d in result["designs"].values():
        assert isinstance(d["pass_rate"], float) and isinstance(d["tool_errors"], int)
        assert isinstance(d["steps"], int) and isinstance(d["context_tokens_per_task"], float)
    assert "[protocol] phase A" in err and "[designs]" in err  # progress on stderr
    assert [p["phase"] for p in result["phases"]] == ["A", "B", "B", "C", "D", "D"]
    assert main(["bench", "protocol", "--runs-b", "1"]) == 2
