"""``langmem-plus report`` on a ``bench env --json`` result: the curves, the success plot and the design table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("matplotlib")

from langmem_plus.cli import main  # noqa: E402
from langmem_plus.report import load_result, write_report  # noqa: E402
from langmem_plus.report_env import ENV_PLOTS, is_env_result, plot_env_fatal_curves, plot_env_repeated_curves  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _design(success: float, tokens: float) -> dict[str, Any]:
    return {"success": success, "success_se": 0.05, "score": success, "steps": 12.0, "fatal_failures": 3.0,
            "invalid_actions": 0.0, "context_tokens_per_task": tokens, "seconds": 0.2, "repeats": 3}


RESULT: dict[str, Any] = {
    "env": "twx-cooking", "setting": "easy", "fold": "test", "mode": "static", "executor": "text", "delivery": "triggered",
    "max_steps": 50, "collect_seeds": "0-2", "seeds": "0-2",
    "designs": {"no_memory": _design(0.31, 0.0), "langmem_plus": _design(0.87, 113.0)},
    "curves": {"no_memory": {"cumulative_fatal_failures": [0, 1, 1, 2, 3, 4], "success": [1, 0, 1, 0, 0, 0],
                             "cumulative_repeated_fatal_failures": [0, 0, 0, 1, 2, 3]},
               "langmem_plus": {"cumulative_fatal_failures": [0, 1, 1, 1, 1, 1], "success": [1, 0, 1, 1, 1, 1],
                                "cumulative_repeated_fatal_failures": [0, 0, 0, 0, 0, 0]}},
}


def test_an_env_result_gets_its_own_plots_and_table(tmp_path: Path) -> None:
    src = tmp_path / "env.json"
    src.write_text(json.dumps(RESULT))
    result = load_result(src)
    assert is_env_result(result) and not is_env_result({"phases": [], "designs": {}, "acceptance": {}})
    page = write_report(result, tmp_path / "out")
    for name in ENV_PLOTS:
        assert (tmp_path / "out" / f"{name}.png").read_bytes().startswith(PNG_MAGIC)
    text = page.read_text()
    assert text.count("data:image/png;base64,") == len(ENV_PLOTS)
    assert "<td>langmem_plus</td><td>0.87</td>" in text and "<td>113.0</td>" in text
    assert "twx-cooking:easy" in text


def test_the_fatal_curve_plots_each_designs_sequence_and_marks_deployment() -> None:
    fig = plot_env_fatal_curves(RESULT)
    ax = fig.axes[0]
    lines = {ln.get_label(): list(ln.get_ydata()) for ln in ax.get_lines() if not ln.get_label().startswith("_")}
    assert lines == {name: c["cumulative_fatal_failures"] for name, c in RESULT["curves"].items()}
    marks = [ln for ln in ax.get_lines() if ln.get_label().startswith("_")]  # the axvline at the end of collection
    assert any(list(ln.get_xdata()) == [3.5, 3.5] for ln in marks)


def _labelled(fig: Any) -> dict[str, list[float]]:
    return {ln.get_label(): list(ln.get_ydata()) for ln in fig.axes[0].get_lines() if not ln.get_label().startswith("_")}


def test_the_repeated_curve_plots_its_own_figures_and_an_older_result_draws_none() -> None:
    assert _labelled(plot_env_repeated_curves(RESULT)) == {
        name: c["cumulative_repeated_fatal_failures"] for name, c in RESULT["curves"].items()}
    older = {**RESULT, "curves": {n: {k: v for k, v in c.items() if "repeated" not in k} for n, c in RESULT["curves"].items()}}
    assert _labelled(plot_env_repeated_curves(older)) == {}
    assert _labelled(plot_env_fatal_curves(older)) == _labelled(plot_env_fatal_curves(RESULT))


def test_cli_report_reads_an_env_result(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "env.json"
    src.write_text(json.dumps(RESULT))
    assert main(["report", "--from", str(src), "--out", str(tmp_path / "r")]) == 0
    assert capsys.readouterr().out.strip().endswith("index.html")
