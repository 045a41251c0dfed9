"""Outside executors: chat models written to memory's public text only, to judge it fairly.

``careless`` (a careless cook: word overlap with the recipe, 30 % impulse, notes read loosely) and
``literal`` (no game knowledge, methodical exploration, notes followed to the letter) play a text game
as the model of a ``create_agent`` agent whose one tool is ``env_tool(env)``. Each reads memory only
from the text it is sent (system-message notes and guard answers), with its own reader.
"""

from __future__ import annotations

from collections.abc import Callable

from langchain_core.language_models import BaseChatModel

from langmem_plus.bench.outside.careless import make_careless
from langmem_plus.bench.outside.literal import make_literal

OUTSIDE_EXECUTORS: dict[str, Callable[..., BaseChatModel]] = {"careless": make_careless, "literal": make_literal}
"""The outside executors by name; each factory is ``make_x(*, seed, max_steps)``."""

__all__ = ["OUTSIDE_EXECUTORS", "make_careless", "make_literal"]
