"""The HTML report: plots written, page self-contained, rendered by a real headless Chromium."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from langmem_plus.cli import main
from langmem_plus.report import PLOTS, load_result, write_report

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
CHROMIUM_TIMEOUT_S = 90
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


def _phase(phase: str, run: int, tool: str, steps: int, errors: int, fps: dict[str, int]) -> dict[str, Any]:
    return {
        "phase": phase, "run": run, "tool": tool, "label": "memory", "tasks": 3, "pass_rate": 1.0, "score": 1.0,
        "steps": steps, "tool_errors": errors, "recurrence": errors // 2, "lesson_activations": 4, "promoted": 1,
        "suppressed": 0, "precision": 0.75, "fingerprint_counts": fps,
        "lessons_by_status": {"candidate": run, "promoted": 2, "suppressed": 1, "archived": 0},
    }


def _design(errors: int) -> dict[str, Any]:
    stat = {k: {"mean": float(v), "se": 0.5} for k, v in (("tool_errors", errors), ("steps", 2 * errors), ("pass_rate", 1.0))}
    return {
        "pass_rate": 1.0, "tool_errors": errors, "steps": 2 * errors, "context_tokens_per_task": 12.5,
        "static": stat, "dynamic": stat, "collection": stat, "dynamic_cumulative_errors": [1.0, 2.0, float(errors)],
    }


@pytest.fixture()
def result() -> dict[str, Any]:
    return {
        "acceptance": {"key_error_recurrence_drops_50pct": True, "suppression_in_stress": False},
        "designs": {"no_memory": _design(9), "langmem_plus": _design(3)},
        "phases": [
            _phase("A", 1, "gridtool", 20, 8, {"fp1": 5, "fp2": 3}),
            _phase("B", 1, "fluxtool", 25, 9, {"fp3": 9}),
            _phase("C", 1, "gridtool", 10, 1, {"fp1": 1}),
        ],
    }


def test_write_report_is_self_contained(tmp_path: Path, result: dict[str, Any]) -> None:
    page = write_report(result, tmp_path / "out")
    assert page == tmp_path / "out" / "index.html"
    for name in PLOTS:
        assert (tmp_path / "out" / f"{name}.png").read_bytes().startswith(PNG_MAGIC)
    text = page.read_text()
    assert len(re.findall(r"<img class='plot'[^>]*src='data:image/png;base64,", text)) == len(PLOTS)
    assert not re.search(r"""(src|href)=['"](https?:|//)""", text)  # nothing fetched from elsewhere
    assert "langmem_plus" in text and "suppression_in_stress: no" in text


def test_load_result_rejects_other_json(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"runs": []}))
    with pytest.raises(ValueError, match="missing acceptance, designs, phases"):
        load_result(bad)


def test_report_cli(tmp_path: Path, result: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "result.json"
    src.write_text(json.dumps(result))
    assert main(["report", "--from", str(src), "--out", str(tmp_path / "rep")]) == 0
    assert capsys.readouterr().out.strip().endswith("index.html")
    assert main(["report", "--from", str(tmp_path / "missing.json"), "--out", str(tmp_path / "x")]) == 2
    assert "cannot read" in capsys.readouterr().err


def _chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed; .ci/run installs it with apt-get")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    return exe


def test_report_renders_in_headless_chromium(tmp_path: Path, result: dict[str, Any]) -> None:
    exe = _chromium()
    page = write_report(result, tmp_path / "out")
    url = page.resolve().as_uri()
    dom = subprocess.run(
        [exe, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile1'}", "--virtual-time-budget=10000", "--dump-dom", url],
        capture_output=True, text=True, timeout=CHROMIUM_TIMEOUT_S, check=True,
    ).stdout
    # The page's inline script counts images with naturalWidth > 0 once they have loaded.
    match = re.search(r'id="render-check" data-loaded="(\d+)"', dom)
    assert match is not None, dom[:2000]
    assert int(match.group(1)) == len(PLOTS)
    assert dom.count('class="plot"') == len(PLOTS)

    shot = tmp_path / "shot.png"
    subprocess.run(
        [exe, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile2'}", "--window-size=1200,2400", f"--screenshot={shot}", url],
        capture_output=True, timeout=CHROMIUM_TIMEOUT_S, check=True,
    )
    from PIL import Image

    with Image.open(shot) as img:
        colors = img.convert("RGB").getcolors(maxcolors=1 << 20)
    assert colors is None or len(colors) > 50  # a blank page has one or two colours
