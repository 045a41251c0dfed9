"""Reports of a protocol result: PNG plots and one self-contained HTML page; ``bench env`` results
are drawn by ``report_env`` through the same command.

``langmem-plus report --from RESULT.json --out DIR`` reads what ``langmem-plus bench
protocol --json`` printed and writes ``DIR/index.html`` with the plots embedded as
data URIs (the page needs nothing beside it), plus each plot as a PNG file:

- ``learning_curves.png``: steps and tool errors per protocol run, phase by phase, and
  cumulative tool errors over the deployment tasks per memory design;
- ``designs.png``: tool errors and steps per design, static and dynamic deployment,
  mean and standard error over repeats;
- ``lessons_by_status.png``: lessons by status after each protocol run;
- ``recurrence.png``: occurrences of each fingerprint per protocol run.

The plot functions return matplotlib Figures, so a notebook can draw them too.
Needs the ``report`` extra (matplotlib). Figures are built with the object API and
saved through matplotlib's Agg canvas; pyplot and its display backend are never
touched, so this is safe on servers and inside notebooks.

Example:
    >>> fig = plot_lessons_by_status({"phases": [{"phase": "A", "run": 1, "tool": "gridtool",
    ...     "lessons_by_status": {"candidate": 2, "promoted": 1}}]})
    >>> len(fig.axes)
    1
"""

from __future__ import annotations

import base64
import html
import io
import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from langmem_plus.report_env import ENV_PLOTS, is_env_result, render_env_html

STATUSES = ("candidate", "promoted", "suppressed", "archived")
"""Lesson statuses, in stacking order."""
TOP_FINGERPRINTS = 12
"""Fingerprints shown in the recurrence plot (the most frequent ones)."""
DPI = 110
"""Resolution of the PNG plots."""
PHASE_COLORS = {"A": "#4C72B0", "B": "#DD8452", "C": "#55A868", "D": "#8172B3"}
"""One colour per protocol phase."""
RESULT_KEYS = ("acceptance", "designs", "phases")
"""Top-level keys a protocol result must have."""


def _run_labels(phases: list[dict[str, Any]]) -> list[str]:
    return [f"{p['phase']}{p['run']}\n{str(p['tool'])[:4]}" for p in phases]


def plot_learning_curves(result: dict[str, Any]) -> Figure:
    """Steps and tool errors per protocol run (left); cumulative errors per design (right)."""
    phases = result.get("phases", [])
    designs = result.get("designs", {})
    fig = Figure(figsize=(12, 4.2))
    ax1, ax2 = fig.subplots(1, 2)
    xs = list(range(len(phases)))
    ax1.plot(xs, [p["steps"] for p in phases], marker="o", label="steps", color="#333333")
    ax1.plot(xs, [p["tool_errors"] for p in phases], marker="s", label="tool errors", color="#C44E52")
    for x, p in zip(xs, phases):
        ax1.axvspan(x - 0.5, x + 0.5, color=PHASE_COLORS.get(p["phase"], "#cccccc"), alpha=0.12, lw=0)
    ax1.set_xticks(xs, _run_labels(phases), fontsize=8)
    ax1.set_title("Protocol: runs by phase (A bootstrap, B new tool, C retention, D held-out)", fontsize=9)
    ax1.set_ylabel("per run (all tasks)")
    ax1.legend(fontsize=8)
    for name, d in designs.items():
        curve = d.get("dynamic_cumulative_errors", [])
        ax2.plot(range(1, len(curve) + 1), curve, label=name, lw=2 if name == "langmem_plus" else 1.2)
    ax2.set_title("Designs: cumulative tool errors, dynamic deployment (mean of repeats)", fontsize=9)
    ax2.set_xlabel("deployment task")
    ax2.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_designs(result: dict[str, Any]) -> Figure:
    """Tool errors and steps per design, static and dynamic deployment, mean with SE bars."""
    designs = result.get("designs", {})
    names = list(designs)
    fig = Figure(figsize=(12, 4.2))
    axes = fig.subplots(1, 2)
    width = 0.38
    for ax, metric in zip(axes, ("tool_errors", "steps")):
        for k, mode in enumerate(("static", "dynamic")):
            means = [designs[n].get(mode, {}).get(metric, {}).get("mean", 0.0) for n in names]
            ses = [designs[n].get(mode, {}).get(metric, {}).get("se", 0.0) for n in names]
            ax.bar([i + (k - 0.5) * width for i in range(len(names))], means, width, yerr=ses, capsize=3, label=mode)
        ax.set_xticks(range(len(names)), names, rotation=20, fontsize=8)
        ax.set_title(f"{metric.replace('_', ' ')} per deployment pass (mean ± SE)", fontsize=9)
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_lessons_by_status(result: dict[str, Any]) -> Figure:
    """Lessons by status after each protocol run, stacked."""
    phases = result.get("phases", [])
    fig = Figure(figsize=(8, 3.8))
    ax = fig.subplots()
    xs = list(range(len(phases)))
    bottom = [0.0] * len(phases)
    for status in STATUSES:
        vals = [float(p.get("lessons_by_status", {}).get(status, 0)) for p in phases]
        ax.bar(xs, vals, bottom=bottom, label=status)
        bottom = [b + v for b, v in zip(bottom, vals)]
    ax.set_xticks(xs, _run_labels(phases), fontsize=8)
    ax.set_ylabel("lessons")
    ax.set_title("Lessons by status over protocol runs", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_recurrence(result: dict[str, Any], top: int = TOP_FINGERPRINTS) -> Figure:
    """Occurrences of the most frequent fingerprints in each protocol run (a heat map)."""
    phases = result.get("phases", [])
    totals: Counter[str] = Counter()
    for p in phases:
        totals.update(p.get("fingerprint_counts", {}))
    fps = [fp for fp, _ in totals.most_common(top)]
    grid = [[p.get("fingerprint_counts", {}).get(fp, 0) for p in phases] for fp in fps] or [[0] * max(len(phases), 1)]
    fig = Figure(figsize=(8, 0.5 + 0.32 * max(len(fps), 4)))
    ax = fig.subplots()
    im = ax.imshow(grid, aspect="auto", cmap="Reds")
    ax.set_xticks(range(len(phases)), _run_labels(phases), fontsize=8)
    ax.set_yticks(range(len(fps)), fps, fontsize=7)
    ax.set_title("Recurrence per fingerprint (occurrences per run)", fontsize=9)
    fig.colorbar(im, ax=ax, fraction=0.03)
    fig.tight_layout()
    return fig


PLOTS: dict[str, Callable[[dict[str, Any]], Figure]] = {
    "learning_curves": plot_learning_curves,
    "designs": plot_designs,
    "lessons_by_status": plot_lessons_by_status,
    "recurrence": plot_recurrence,
}
"""Plot name (the PNG file stem) -> plot function."""


def figure_png(fig: Figure) -> bytes:
    """The figure as PNG bytes (Agg canvas, ``DPI``)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI)
    return buf.getvalue()


def _table(head: list[str], rows: list[list[Any]]) -> str:
    th = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


_CHECK_SCRIPT = """<script>
window.addEventListener('load', function () {
  var imgs = document.querySelectorAll('img.plot'), ok = 0;
  imgs.forEach(function (i) { if (i.complete && i.naturalWidth > 0) ok++; });
  var p = document.getElementById('render-check');
  p.setAttribute('data-loaded', String(ok));
  p.textContent = ok + ' of ' + imgs.length + ' plots rendered';
});
</script>"""

_STYLE = (
    "body{font-family:sans-serif;max-width:1150px;margin:2em auto;color:#222}"
    "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px}"
    "img{max-width:100%;display:block;margin:1em 0}.ok{color:#1a7f37}.no{color:#b42318}"
)


def _mean_se(design: dict[str, Any], mode: str, metric: str = "tool_errors") -> str:
    cell = design.get(mode, {}).get(metric)
    return f"{cell['mean']:.1f} ± {cell['se']:.1f}" if isinstance(cell, dict) else "-"


def render_html(result: dict[str, Any], images: dict[str, bytes]) -> str:
    """The report page: acceptance, designs and phases tables, plots embedded as data URIs."""
    acc = "".join(
        f"<li class='{'ok' if v else 'no'}'>{html.escape(k)}: {'yes' if v else 'no'}</li>" for k, v in result["acceptance"].items()
    )
    designs = _table(
        ["design", "pass rate", "tool errors", "steps", "context tokens / task", "errors static (mean ± SE)", "errors dynamic (mean ± SE)"],
        [
            [n, d["pass_rate"], d["tool_errors"], d["steps"], d["context_tokens_per_task"], _mean_se(d, "static"), _mean_se(d, "dynamic")]
            for n, d in result["designs"].items()
        ],
    )
    phases = _table(
        ["run", "tool", "pass", "steps", "tool errors", "recurrence", "activations", "promoted", "suppressed", "precision"],
        [
            [f"{p['phase']}{p['run']} ({p['label']})", p["tool"], p["pass_rate"], p["steps"], p["tool_errors"], p["recurrence"],
             p["lesson_activations"], p["promoted"], p["suppressed"], p["precision"]]
            for p in result["phases"]
        ],
    )
    imgs = "".join(
        f"<h3>{html.escape(name.replace('_', ' '))}</h3>"
        f"<img class='plot' alt='{html.escape(name)}' src='data:image/png;base64,{base64.b64encode(png).decode()}'>"
        for name, png in images.items()
    )
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>langmem_plus protocol report</title>"
        f"<style>{_STYLE}</style></head><body><h1>langmem_plus: protocol report</h1>"
        f"<p id='render-check' data-loaded='0'>plots not yet rendered</p>"
        f"<h2>Acceptance</h2><ul>{acc}</ul><h2>Memory designs</h2><p>Tool errors and steps: totals of the dynamic deployment phase over all repeats; mean ± SE per deployment pass.</p>{designs}"
        f"<h2>Protocol runs</h2>{phases}<h2>Plots</h2>{imgs}{_CHECK_SCRIPT}</body></html>"
    )


def load_result(path: str | Path) -> dict[str, Any]:
    """Read a ``bench protocol --json`` or ``bench env --json`` result file.

    Raises:
        ValueError: the file is neither (a missing top-level key).
    """
    data = json.loads(Path(path).read_text())
    if is_env_result(data):
        return data  # type: ignore[no-any-return]
    missing = [k for k in RESULT_KEYS if not isinstance(data, dict) or k not in data]
    if missing:
        raise ValueError(f"{path} is not a protocol or bench env result: missing {', '.join(missing)}")
    return data  # type: ignore[no-any-return]


def write_report(result: dict[str, Any], out_dir: str | Path) -> Path:
    """Write every plot as PNG and ``index.html`` into ``out_dir``; returns the page's path.

    A ``bench env`` result gets its own plots and page (``report_env``).
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    env = is_env_result(result)
    images: dict[str, bytes] = {}
    for name, plot in (ENV_PLOTS if env else PLOTS).items():
        images[name] = figure_png(plot(result))
        (out / f"{name}.png").write_bytes(images[name])
    page = out / "index.html"
    text = render_env_html(result, images, style=_STYLE, check_script=_CHECK_SCRIPT) if env else render_html(result, images)
    page.write_text(text, encoding="utf-8")
    return page


__all__ = [
    "PLOTS",
    "figure_png",
    "load_result",
    "plot_designs",
    "plot_learning_curves",
    "plot_lessons_by_status",
    "plot_recurrence",
    "render_html",
    "write_report",
]
