"""Reports of a ``bench env`` result: the curves and the design table.

``langmem-plus report --from RESULT.json --out DIR`` on what ``langmem-plus bench env --json``
printed writes ``DIR/index.html`` (plots embedded, self-contained) and each plot as PNG:

- ``env_fatal_curves.png``: cumulative fatal failures (games lost) over the episodes of the
  whole sequence, collection then deployment, one line per design (mean over repeats), the
  end of collection marked;
- ``env_repeated_curves.png``: the same for repeated fatal failures, games lost to a mistake
  memory had been shown losing an earlier game (``bench.mistakes``); a result without them
  (an older one) draws no lines;
- ``env_success.png``: deployment success per design, mean and standard error over repeats,
  with its context tokens per task written under each bar.

Like ``report``, figures use matplotlib's object API and the Agg canvas only.

Example:
    >>> result = {"env": "twx-cooking", "setting": "easy", "fold": "test", "mode": "static", "collect_seeds": "0-1",
    ...           "designs": {"no_memory": {"success": 0.5, "success_se": 0.1, "context_tokens_per_task": 0}},
    ...           "curves": {"no_memory": {"cumulative_fatal_failures": [0, 1, 1, 2], "success": [1, 0, 1, 0]}}}
    >>> len(plot_env_fatal_curves(result).axes), len(plot_env_success(result).axes)
    (1, 1)
"""

from __future__ import annotations

import base64
import html
from collections.abc import Callable
from typing import Any

from matplotlib.figure import Figure

ENV_RESULT_KEYS = ("env", "designs", "curves")
"""Top-level keys of a ``bench env`` result."""
LINESTYLES = ("-", "--", ":", "-.", (0, (5, 1)), (0, (1, 2)))
"""Line styles of the other designs' curves, in turn."""


def is_env_result(result: Any) -> bool:
    """Whether ``result`` is what ``bench env --json`` prints."""
    return isinstance(result, dict) and all(k in result for k in ENV_RESULT_KEYS)


def _title(result: dict[str, Any]) -> str:
    return (f"{result['env']}:{result.get('setting', 'default')}, fold {result.get('fold', '?')}, "
            f"{result.get('mode', 'static')} mode, executor {result.get('executor', 'text')}")


def _collection_episodes(result: dict[str, Any]) -> int | None:
    lo, _, hi = str(result.get("collect_seeds", "")).partition("-")
    try:
        return int(hi or lo) - int(lo) + 1
    except ValueError:
        return None


def plot_env_fatal_curves(result: dict[str, Any]) -> Figure:
    """Cumulative fatal failures per episode, one line per design; a dashed line where deployment starts."""
    return _plot_cumulative(result, "cumulative_fatal_failures", "cumulative fatal failures (games lost)")


def plot_env_repeated_curves(result: dict[str, Any]) -> Figure:
    """Cumulative repeated fatal failures (games lost to a mistake memory had been shown) per episode and design."""
    return _plot_cumulative(result, "cumulative_repeated_fatal_failures", "cumulative repeated fatal failures")


def _plot_cumulative(result: dict[str, Any], key: str, ylabel: str) -> Figure:
    fig = Figure(figsize=(8, 4.2))
    ax = fig.subplots()
    for i, (name, curve) in enumerate(result["curves"].items()):
        ys = curve.get(key)
        if not ys:  # an older result without this curve
            continue
        ours = name == "langmem_plus"  # drawn last-on-top in black; the others dashed differently, so equal curves stay visible
        ax.plot(range(1, len(ys) + 1), ys, label=name, linewidth=2.2 if ours else 1.2, color="black" if ours else None,
                linestyle="-" if ours else LINESTYLES[i % len(LINESTYLES)], zorder=3 if ours else 2)
    split = _collection_episodes(result)
    if split:
        ax.axvline(split + 0.5, color="grey", linestyle="--", linewidth=1)
        ax.text(split + 0.7, ax.get_ylim()[1] * 0.95, "deployment", color="grey", fontsize=8, va="top")
    ax.set_xlabel("episode (collection, then deployment)")
    ax.set_ylabel(ylabel)
    ax.set_title(_title(result), fontsize=10)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_env_success(result: dict[str, Any]) -> Figure:
    """Deployment success per design with its standard error; tokens per task under each bar."""
    names = list(result["designs"])
    figs = [result["designs"][n] for n in names]
    fig = Figure(figsize=(8, 4.2))
    ax = fig.subplots()
    ax.bar(range(len(names)), [d.get("success", 0.0) for d in figs], yerr=[d.get("success_se", 0.0) for d in figs],
           color=["#C44E52" if n == "langmem_plus" else "#4C72B0" for n in names], capsize=4)
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels([f"{n}\n{d.get('context_tokens_per_task', 0):.0f} tok" for n, d in zip(names, figs)], fontsize=8)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("success (deployment)")
    ax.set_title(_title(result), fontsize=10)
    fig.tight_layout()
    return fig


ENV_PLOTS: dict[str, Callable[[dict[str, Any]], Figure]] = {
    "env_fatal_curves": plot_env_fatal_curves,
    "env_repeated_curves": plot_env_repeated_curves,
    "env_success": plot_env_success,
}
"""Plot name -> function, in page order."""

_COLUMNS = (("success", "success"), ("success_se", "± SE"), ("score", "score"), ("steps", "steps"),
            ("fatal_failures", "fatal failures"), ("repeated_fatal_failures", "repeated fatal failures"),
            ("invalid_actions", "invalid actions"),
            ("context_tokens_per_task", "context tokens / task"), ("seconds", "seconds / task"))


def render_env_html(result: dict[str, Any], images: dict[str, bytes], *, style: str = "", check_script: str = "") -> str:
    """The page: the design table and the plots as data URIs."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in ("design", *(label for _, label in _COLUMNS)))
    rows = "".join(
        "<tr><td>" + html.escape(name) + "</td>"
        + "".join(f"<td>{d.get(key, '-') if not isinstance(d.get(key), float) else round(d[key], 3)}</td>" for key, _ in _COLUMNS)
        + "</tr>"
        for name, d in result["designs"].items()
    )
    imgs = "".join(
        f"<h3>{html.escape(name.replace('_', ' '))}</h3>"
        f"<img class='plot' alt='{html.escape(name)}' src='data:image/png;base64,{base64.b64encode(png).decode()}'>"
        for name, png in images.items()
    )
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>langmem_plus bench env report</title>"
        f"<style>{style}</style></head><body><h1>langmem_plus: {html.escape(_title(result))}</h1>"
        "<p id='render-check' data-loaded='0'>plots not yet rendered</p>"
        f"<p>Collection seeds {html.escape(str(result.get('collect_seeds', '?')))} (train fold), deployment seeds "
        f"{html.escape(str(result.get('seeds', '?')))}; figures are deployment means over repeats.</p>"
        f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table><h2>Plots</h2>{imgs}{check_script}</body></html>"
    )


__all__ = ["ENV_PLOTS", "ENV_RESULT_KEYS", "is_env_result", "plot_env_fatal_curves", "plot_env_repeated_curves", "plot_env_success",
           "render_env_html"]
