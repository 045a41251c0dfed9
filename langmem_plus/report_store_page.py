"""The page of a memory you can look at: ``langmem-plus report --store PATH --out DIR``.

Draws what ``report_store.read_page`` read and writes ``DIR/index.html``, one
self-contained page (plots embedded as data URIs, no script or style fetched; it opens
offline from the file), and each plot beside it as a PNG:

- ``store_lessons_by_tool.png``: lessons per tool, stacked by status;
- ``store_utility.png``: each of the most measured lessons' utility in the runs that
  measured it, and the reliability it had after each;
- ``store_timeline.png``: promotions, suppressions, archives, merges and new lessons by run.

Every text a tool, a model or a user wrote (rules, errors, actions, ids) is data: it is
HTML-escaped on the page and kept out of plot labels, where matplotlib would read ``$``
as mathematics. Like ``report``, figures use matplotlib's object API and the Agg canvas.

Example:
    >>> from langmem_plus.report_store import StorePage
    >>> page = StorePage(namespace=("ns",), lessons=[], by_status={}, by_tool={}, folds={}, timeline=[], runs=[],
    ...                  mistakes=[])
    >>> "<h1>" in render_store_html(page, {})
    True
"""

from __future__ import annotations

import base64
import html
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from langmem_plus.records import LESSON_STATUSES
from langmem_plus.report import _CHECK_SCRIPT, _STYLE, figure_png
from langmem_plus.report_store import TIMELINE_KINDS, FoldPoint, Progress, StorePage

PLOTTED_LESSONS = 8
"""Lessons drawn in the utility plot (the most measured first)."""
PLOTTED_TOOLS = 15
"""Tools drawn in the lessons-by-tool plot (the ones with most lessons)."""
LESSONS_SHOWN = 2000
"""Rows of the lessons table; the counts above it cover every lesson."""
RUNS_SHOWN = 300
"""Rows of the runs table (the newest runs)."""
TIMELINE_SHOWN = 500
"""Rows of the timeline table (the newest events); the plot draws every event."""
EVIDENCE_ROWS = 40
"""Fold points shown per lesson (the newest)."""
RULE_CHARS = 240
"""Characters of a rule, an error or an action a table cell shows."""
STATUS_COLORS = {"candidate": "#4C72B0", "promoted": "#55A868", "suppressed": "#C44E52", "archived": "#8C8C8C"}
"""One colour per lesson status."""
TIMELINE_MARKERS = {"lesson_created": "o", "lesson_imported": "o", "merge": "s", "conflict": "x", "promoted": "^",
                    "suppressed": "v", "archived": "D", "lifecycle": "P"}
"""One marker per timeline kind."""
_PAGE_STYLE = _STYLE + (
    "td.rule{max-width:520px;word-break:break-word;font-family:monospace;font-size:12px}"
    "details{margin:.4em 0}summary{cursor:pointer}.note{color:#555}"
    ".s-promoted{color:#1a7f37}.s-suppressed{color:#b42318}.s-archived{color:#666}"
)


def _plain(text: str) -> str:
    """``text`` safe in a matplotlib label: ``$`` would start mathematics."""
    return text.replace("$", r"\$")


def _cut(text: str, n: int = RULE_CHARS) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def plot_lessons_by_tool(page: StorePage, top: int = PLOTTED_TOOLS) -> Figure:
    """Lessons per tool (the ``top`` with most lessons), stacked by status."""
    tools = list(page.by_tool)[:top][::-1]  # the largest at the top
    fig = Figure(figsize=(8, 0.8 + 0.35 * max(len(tools), 3)))
    ax = fig.subplots()
    left = [0.0] * len(tools)
    for status in LESSON_STATUSES:
        vals = [float(page.by_tool[t].get(status, 0)) for t in tools]
        ax.barh(range(len(tools)), vals, left=left, label=status, color=STATUS_COLORS[status])
        left = [a + b for a, b in zip(left, vals)]
    ax.set_yticks(range(len(tools)), [_plain(_cut(t, 40)) for t in tools], fontsize=8)
    ax.set_xlabel("lessons")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    shown = f" (the {len(tools)} of {len(page.by_tool)} tools with most lessons)" if len(page.by_tool) > len(tools) else ""
    ax.set_title(f"Lessons by tool and status{shown}", fontsize=9)
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)  # beside the bars, not on them
    fig.tight_layout()
    return fig


def _measured(points: Sequence[FoldPoint]) -> list[FoldPoint]:
    return [p for p in points if p.utility is not None]


def plot_utility(page: StorePage, top: int = PLOTTED_LESSONS) -> Figure:
    """Utility per measuring run (left) and reliability after each (right) of the ``top`` most measured lessons."""
    ranked = sorted(page.folds.items(), key=lambda kv: (-len(_measured(kv[1])), kv[0]))[:top]
    fig = Figure(figsize=(12, 4.2))
    ax1, ax2 = fig.subplots(1, 2)
    for lesson_id, points in ranked:
        measured = _measured(points)
        if not measured:
            continue
        label = _plain(lesson_id)
        ax1.plot([p.run_seq for p in measured], [p.utility for p in measured], marker="o", ms=3, lw=1, label=label)
        ax2.plot([p.run_seq for p in measured], [p.reliability for p in measured], marker=".", lw=1, label=label)
    ax1.axhline(0.0, color="grey", lw=0.8)
    ax1.set_ylim(-1.05, 1.05)
    ax1.set_title("Utility in each run that measured the lesson", fontsize=9)
    ax2.set_ylim(0, 1.02)
    ax2.set_title("Reliability after each measured run", fontsize=9)
    for ax in (ax1, ax2):
        ax.set_xlabel("run (sequence number)")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def plot_timeline(page: StorePage) -> Figure:
    """Each timeline event at its run, one row per kind (events without a run at run 0)."""
    fig = Figure(figsize=(12, 3.4))
    ax = fig.subplots()
    kinds = [k for k in TIMELINE_KINDS if any(e.kind == k for e in page.timeline)]
    for row, kind in enumerate(kinds):
        xs = [e.run_seq or 0 for e in page.timeline if e.kind == kind]
        ax.scatter(xs, [row] * len(xs), marker=TIMELINE_MARKERS.get(kind, "o"), s=22, alpha=0.7,
                   color=STATUS_COLORS.get(kind, "#333333"))
    ax.set_yticks(range(len(kinds)), [k.replace("_", " ") for k in kinds], fontsize=8)
    ax.set_ylim(-0.7, max(len(kinds), 1) - 0.3)
    ax.set_xlabel("run (sequence number)")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title("Timeline: lessons created, merged, promoted, suppressed, archived", fontsize=9)
    fig.tight_layout()
    return fig


STORE_PLOTS: dict[str, Callable[[StorePage], Figure]] = {
    "store_lessons_by_tool": plot_lessons_by_tool,
    "store_utility": plot_utility,
    "store_timeline": plot_timeline,
}
"""Plot name (the PNG file stem) -> plot function, in page order."""


def _num(x: float | None, places: int = 2) -> str:
    return "-" if x is None else f"{x:.{places}f}"


def _table(head: Sequence[str], rows: Sequence[Sequence[Any]], *, rule_cols: Sequence[int] = (), empty: str = "None yet.") -> str:
    """An HTML table, every cell escaped; ``rule_cols`` get the wrapping monospace style; ``empty`` when no rows."""
    if not rows:
        return f"<p class='note'>{html.escape(empty)}</p>"
    th = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    body = "".join(
        "<tr>" + "".join(
            f"<td class='rule'>{html.escape(str(c))}</td>" if i in rule_cols else f"<td>{html.escape(str(c))}</td>"
            for i, c in enumerate(r)
        ) + "</tr>"
        for r in rows
    )
    return f"<table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


def _left_out(shown: int, total: int, what: str, which: str = "newest") -> str:
    return f"<p class='note'>The {which} {shown} of {total} {html.escape(what)}.</p>" if total > shown else ""


def _shown(ids: Sequence[str], first: int = 6) -> str:
    """The lessons a run showed: how many, and the first ids."""
    if not ids:
        return "-"
    return f"{len(ids)}: {', '.join(ids[:first])}" + (" …" if len(ids) > first else "")


def _img(name: str, png: bytes) -> str:
    return (f"<img class='plot' alt='{html.escape(name)}' "
            f"src='data:image/png;base64,{base64.b64encode(png).decode()}'>")


def _folds_html(page: StorePage) -> str:
    rules = {l.id: l.rule for l in page.lessons}
    blocks: list[str] = []
    for lesson_id, points in page.folds.items():
        shown = points[-EVIDENCE_ROWS:]
        last = points[-1]
        summary = (f"{lesson_id} ({last.status}, reliability {last.reliability:.2f}, {len(_measured(points))} measured "
                   f"of {len(points)} entries): {_cut(rules.get(lesson_id, ''), 120)}")
        table = _table(
            ["run seq", "run", "shown", "utility", "passed", "also", "status after", "reliability after", "mean utility after"],
            [[p.run_seq, p.run_id, p.shown, _num(p.utility), "yes" if p.passed else "no", p.note, p.status,
              _num(p.reliability), _num(p.mean_utility)] for p in shown],
        )
        blocks.append(f"<details id='fold-{html.escape(lesson_id)}'><summary>{html.escape(summary)}</summary>"
                      f"{_left_out(len(shown), len(points), 'entries')}{table}</details>")
    return "".join(blocks) or "<p>No lesson has evidence yet.</p>"


def render_store_html(page: StorePage, images: dict[str, bytes]) -> str:
    """The page: counts, the lessons table, plots, the timeline, the folds, the runs and the unanswered mistakes."""
    ns = "/".join(page.namespace)
    plots = {name: _img(name, png) for name, png in images.items()}
    status = "".join(f"<li class='s-{html.escape(s)}'>{html.escape(s)}: {n}</li>" for s, n in page.by_status.items())
    by_tool = _table(["tool", *LESSON_STATUSES], [[t, *(c.get(s, 0) for s in LESSON_STATUSES)] for t, c in page.by_tool.items()])
    lessons = _table(
        ["id", "status", "tool", "rule", "reliability", "mean utility", "evidence runs", "activations", "source"],
        [[l.id, l.status, l.tool, _cut(l.rule), _num(l.reliability), _num(l.mean_utility), l.evidence_runs, l.activations,
          l.source] for l in page.lessons[:LESSONS_SHOWN]],
        rule_cols=(3,), empty="No lessons yet.",
    )
    events = page.timeline[-TIMELINE_SHOWN:]
    timeline = _table(["run seq", "run", "event", "lesson", "what"],
                      [[e.run_seq if e.run_seq is not None else "-", e.run_id or "-", e.kind.replace("_", " "), e.lesson_id,
                        _cut(e.what)] for e in events], rule_cols=(4,), empty="No events yet.")
    runs = page.runs[-RUNS_SHOWN:]
    run_table = _table(
        ["seq", "run", "task", "tool", "passed", "score", "steps", "tool errors", "errors", "lessons shown"],
        [[r.seq, r.run_id, r.task_id, r.tool, "yes" if r.passed else "no", _num(r.score), r.steps, r.tool_errors,
          " | ".join(_cut(e, 120) for e in r.errors), _shown(r.activated)] for r in runs],
        rule_cols=(8,), empty="No runs yet.",
    )
    mistakes = _table(
        ["fingerprint", "runs", "occurrences", "last run seq", "tools", "example action", "example error", "lessons dropped"],
        [[_cut(m.fingerprint), m.runs, m.occurrences, m.last_seq, ", ".join(m.tools), _cut(m.example_action),
          _cut(m.example_error), ", ".join(m.dropped) or "-"] for m in page.mistakes],
        rule_cols=(0, 5, 6), empty="Every mistake seen in two runs or more has a live lesson.",
    )
    notes = "".join(f"<p class='note'>{html.escape(n)}</p>" for n in page.notes)
    total = sum(page.by_status.values())
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>langmem_plus memory {html.escape(ns)}</title><style>{_PAGE_STYLE}</style></head><body>"
        f"<h1>langmem_plus: memory {html.escape(ns)}</h1>"
        "<p id='render-check' data-loaded='0'>plots not yet rendered</p>"
        f"<p>{total} lessons, {len(page.runs)} runs, {len(page.timeline)} timeline events"
        f"{' (audit log ' + html.escape(page.audit_path) + ')' if page.audit_path else ''}.</p>{notes}"
        f"<h2>Lessons by status and tool</h2><ul>{status}</ul>{by_tool}{plots.get('store_lessons_by_tool', '')}"
        f"<h2>Lessons</h2>{_left_out(min(len(page.lessons), LESSONS_SHOWN), len(page.lessons), 'lessons', 'first')}"
        f"{lessons}"
        "<h2>Utility over runs</h2><p>Each point is one run that measured a lesson (design.md §6: error reduction and "
        "step gain against comparable runs without it); reliability is the posterior mean of helped / (helped + harmed).</p>"
        f"{plots.get('store_utility', '')}"
        f"<h2>Timeline</h2>{plots.get('store_timeline', '')}{_left_out(len(events), len(page.timeline), 'events')}{timeline}"
        "<h2>What each lesson's figures fold from</h2><p>Each run's evidence about the lesson, in the order its stats and "
        f"status fold from, with the lesson as it stood after each.</p>{_folds_html(page)}"
        f"<h2>Runs</h2>{_left_out(len(runs), len(page.runs), 'runs')}{run_table}"
        f"<h2>Repeated mistakes no lesson answers</h2><p>Fingerprints seen in two runs or more that no candidate or "
        f"promoted lesson is triggered by, in most runs first.</p>{mistakes}"
        f"{_CHECK_SCRIPT}</body></html>"
    )


def write_store_report(page: StorePage, out_dir: str | Path, *, progress: Progress | None = None) -> Path:
    """Write each plot as PNG and ``index.html`` into ``out_dir``; returns the page's path."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    images: dict[str, bytes] = {}
    for i, (name, plot) in enumerate(STORE_PLOTS.items(), 1):
        images[name] = figure_png(plot(page))
        (out / f"{name}.png").write_bytes(images[name])
        if progress is not None:
            progress("plots", i, len(STORE_PLOTS))
    path = out / "index.html"
    path.write_text(render_store_html(page, images), encoding="utf-8")
    return path


__all__ = ["STORE_PLOTS", "plot_lessons_by_tool", "plot_timeline", "plot_utility", "render_store_html", "write_store_report"]
