"""What a text-game run keeps for later runs (``RunRecord.extras["textgames"]``), read back typed."""

from __future__ import annotations

from typing import Any

from langmem_plus.records import RunRecord

NAME = "textgames"
"""The plugin's key in ``RunRecord.extras``."""


def _extra(run: RunRecord, key: str) -> list[Any]:
    return list(run.extras.get(NAME, {}).get(key, ()))


def run_commands(run: RunRecord) -> list[str]:
    """Verbs the game offered as valid actions in the run (``rules.offered_verbs``): the tool's commands."""
    return [str(v) for v in _extra(run, "commands")]


def run_directed(run: RunRecord) -> list[str]:
    """Verbs that open lines of the run's task text (``rules.directed_verbs``: ``chop the red apple``)."""
    return [str(v) for v in _extra(run, "directed")]


def run_undone(run: RunRecord) -> list[tuple[str, str]]:
    """``(undo, done)`` pattern pairs: steps of the run that only reversed an earlier one (``undo``)."""
    return [(str(u), str(d)) for u, d in _extra(run, "undone")]


def run_consumed(run: RunRecord) -> list[str]:
    """Commands whose step used up the thing it acted on (``consume``: after ``eat carrot`` no action names it)."""
    return [str(v) for v in _extra(run, "consumed")]


__all__ = ["NAME", "run_commands", "run_consumed", "run_directed", "run_undone"]
