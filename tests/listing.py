"""Test-only: ``StepDelivery`` with the guard off, so a test reads every other rule off what one step lists."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langmem_plus.config import DEFAULT_CONFIG, MemoryConfig
from langmem_plus.records import Lesson, RunRecord
from langmem_plus.textgames.delivery import StepDelivery


def listing(rules: Sequence[Lesson], runs: Sequence[RunRecord], config: MemoryConfig = DEFAULT_CONFIG, **kw: Any) -> StepDelivery:
    """Every rule standing at a step listed before the agent chooses (``text_guard="off"``), with ``config`` otherwise."""
    return StepDelivery(rules, runs, config.replace(textgames={"text_guard": "off"}), **kw)
