"""Readable audit history of one lesson: "why was this lesson suppressed?" in one command.

``langmem-plus inspect lesson ID`` prints the lesson, then ``explain_history`` of its
audit records: when it was created or imported, merged, linked as a conflict, shown,
and every lifecycle transition with the rule that fired and the evidence behind it
(runs, activations, utilities, reliability, conflict losses). The last line answers
why the lesson has its current status. Pure: records in, lines out.

Example:
    >>> rec = {"ts": 5, "kind": "suppressed", "old": "promoted", "new": "suppressed",
    ...        "reason": "suppress: promoted lesson fell to mean utility <= 0.0 (...)",
    ...        "evidence": {"run_id": "r1", "utility_this_run": -0.65, "activations": 1,
    ...                     "evidence_runs": 1, "utility_window": [-0.65], "helped": 0,
    ...                     "harmed": 1, "reliability": 0.33, "conflict_losses": 0}}
    >>> print("\\n".join(explain_history([rec], lesson_id="l")))
    5 promoted -> suppressed
        why: suppress: promoted lesson fell to mean utility <= 0.0 (...)
        evidence: run r1, utility this run -0.65, activations 1, evidence runs 1, utility window [-0.65], helped 0 / harmed 1, reliability 0.33, conflict losses 0
    => suppressed because: suppress: promoted lesson fell to mean utility <= 0.0 (...)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

TRANSITION_KINDS = frozenset({"promoted", "suppressed", "archived", "lifecycle"})
"""Audit kinds written for lifecycle transitions (``LearningMemory._audit_run``)."""


def _num(x: Any) -> str:
    return f"{x:.4g}" if isinstance(x, float) else str(x)


def describe_evidence(ev: Mapping[str, Any]) -> str:
    """The evidence of a transition as one readable line."""
    parts: list[str] = []
    if ev.get("run_id"):
        parts.append(f"run {ev['run_id']}")
    if ev.get("shown_this_run") is not None:
        parts.append(f"shown {ev['shown_this_run']}x this run")
    if "utility_this_run" in ev:
        u = ev["utility_this_run"]
        parts.append("no evidence this run" if u is None else f"utility this run {_num(u)}")
    if ev.get("lost_to"):
        wins = ev.get("winner_utilities") or {}
        parts.append("lost its conflict cluster to " + ", ".join(f"{w} (utility {_num(wins.get(w, '?'))})" for w in ev["lost_to"]))
    if "runs_since_activation" in ev:
        parts.append(f"unused for {ev['runs_since_activation']} runs")
    for key, label in (("activations", "activations"), ("evidence_runs", "evidence runs")):
        if key in ev:
            parts.append(f"{label} {ev[key]}")
    if "utility_window" in ev:
        parts.append("utility window [" + ", ".join(_num(u) for u in ev["utility_window"]) + "]")
    if "helped" in ev or "harmed" in ev:
        parts.append(f"helped {ev.get('helped', 0)} / harmed {ev.get('harmed', 0)}")
    if "reliability" in ev:
        parts.append(f"reliability {_num(ev['reliability'])}")
    if "conflict_losses" in ev:
        parts.append(f"conflict losses {ev['conflict_losses']}")
    return ", ".join(parts)


def explain_record(rec: Mapping[str, Any], lesson_id: str) -> list[str]:
    """One audit record about ``lesson_id`` as readable lines."""
    ts = f"{rec.get('ts', 0):.0f}"
    kind = rec.get("kind")
    if kind == "retrieval":
        return [f"{ts} shown ({rec.get('moment')}) in run {rec.get('run_id')}"]
    if kind in TRANSITION_KINDS:
        lines = [f"{ts} {rec.get('old')} -> {rec.get('new')}", f"    why: {rec.get('reason', '')}"]
        if rec.get("evidence"):
            lines.append(f"    evidence: {describe_evidence(rec['evidence'])}")
        return lines
    if kind == "conflict":
        other = rec.get("other") if rec.get("lesson_id") == lesson_id else rec.get("lesson_id")
        return [f"{ts} conflict linked with {other} (same trigger, different fix)"]
    if kind == "merge":
        return [f"{ts} merged duplicate {rec.get('merged')} in run {rec.get('run_id')}"]
    if kind in ("lesson_created", "lesson_imported"):
        return [f"{ts} {kind}: {rec.get('rule', '')}"]
    if kind == "consolidation":
        return [f"{ts} consolidated from episodes {', '.join(rec.get('episodes', []))}"]
    extra = rec.get("reason") or rec.get("rule") or rec.get("other") or ""
    return [f"{ts} {kind} {extra}".rstrip()]


def explain_history(records: Sequence[Mapping[str, Any]], *, lesson_id: str) -> list[str]:
    """Every record as readable lines, then one line saying why the lesson has its latest status."""
    lines = [line for rec in records for line in explain_record(rec, lesson_id)]
    last = next((r for r in reversed(records) if r.get("kind") in TRANSITION_KINDS), None)
    if last is not None:
        lines.append(f"=> {last.get('new')} because: {last.get('reason', '')}")
    return lines


__all__ = ["describe_evidence", "explain_history", "explain_record"]
