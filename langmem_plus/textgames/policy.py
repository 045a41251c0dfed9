"""ExecutorPolicy: the reference executor's own numbers, apart from the memory's config.

How ``TextGameExecutor`` weighs its options is a player's choice, not the memory's: another agent reading the
same notes weighs them its own way. So these numbers live with the executor (``TextGameExecutor(policy=...)``),
and ``MemoryConfig`` holds only what the memory itself does.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class ExecutorPolicy(BaseModel):
    """How ``TextGameExecutor`` scores a valid action (``docs/text-games.md``, the executor's policy)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    prefer_bonus: float = Field(100.0, ge=0.0)
    """Added to a valid action a prefer hint matches; far above any word overlap (a few words), so a remembered
    rule outranks a lexical guess."""
    condition_bonus: float = Field(10.0, ge=0.0)
    """Added per precondition a matching prefer hint checked, so the more specific of two recommendations wins."""
    sequence_bonus: float = Field(50.0, ge=0.0)
    """Added to the next step of a remembered procedure (episode or skill) right after the attempt took the step
    before it; below a prefer hint, above word overlap."""
    short_line_words: int = Field(6, ge=1)
    """A placeholder binds only a phrase found in a line of an observation with at most this many words (a recipe
    step, a listed item), never one found only in a description of everything in a room."""
    paragraph_weight: float = Field(0.2, ge=0.0, le=1.0)
    """Weight of a word seen only outside the task's text (descriptions that name everything in a room), relative
    to a word of the goal or of what the goal points at."""
    new_verb_bonus: float = Field(0.1, ge=0.0)
    """Added to an action whose verb has not succeeded yet in the attempt, so every kind of command gets tried."""
    explore_bonus: float = Field(0.3, ge=0.0)
    """Added to a move not yet taken from the current location once nothing the task's text names is left to do
    there, so the agent leaves a room it has looked through rather than rearranging it."""


DEFAULT_POLICY = ExecutorPolicy()
"""The policy the bench's executor plays with."""

__all__ = ["DEFAULT_POLICY", "ExecutorPolicy"]
