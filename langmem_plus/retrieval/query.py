"""The block query text of design.md §5.1, built from a run's working memory.

Retrieval embeds one query string. Writing it in labelled blocks
(``[GOAL]``, ``[CONTEXT]``, ...) keeps the parts apart for the embedder and makes
the audit log readable. Empty blocks are left out, so a pre-run query is just the
goal and context, and an on-error query adds the last failure.

Example:
    >>> from langmem_plus.records import WorkingContext
    >>> print(build_query(WorkingContext(goal="names over 30", inventory=["people.csv", "ages"],
    ...                                  last_fail="unknown command 'filter'")))
    [GOAL] names over 30
    [INVENTORY] people.csv; ages
    [LAST_FAIL] unknown command 'filter'
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from langmem_plus.records import WorkingContext

LIST_SEPARATOR = "; "
"""Joins list-valued blocks (inventory, preconditions), as in the AMM spec's query builder."""

_WS = re.compile(r"\s+")


def _one_line(text: str) -> str:
    """Collapse all whitespace (newlines included) so each block stays on its own line."""
    return _WS.sub(" ", text).strip()


def _join(items: Sequence[str]) -> str:
    return LIST_SEPARATOR.join(p for p in (_one_line(i) for i in items) if p)


def build_query(ctx: WorkingContext) -> str:
    """The retrieval query for a working context (design.md §5.1).

    Blocks, in this order, each on its own line and omitted when empty:
    ``[GOAL] [CONTEXT] [INVENTORY] [OBS] [PRECONDS_SAT] [PRECONDS_MISS] [LAST_FAIL]``.
    List fields are joined with ``"; "``; newlines inside a field become spaces.

    Args:
        ctx: The run's working memory.

    Returns:
        The query text; an empty string when every block is empty.
    """
    blocks = (
        ("GOAL", _one_line(ctx.goal)),
        ("CONTEXT", _one_line(ctx.context)),
        ("INVENTORY", _join(ctx.inventory)),
        ("OBS", _one_line(ctx.obs)),
        ("PRECONDS_SAT", _join(ctx.preconds_sat)),
        ("PRECONDS_MISS", _join(ctx.preconds_miss)),
        ("LAST_FAIL", _one_line(ctx.last_fail)),
    )
    return "\n".join(f"[{name}] {text}" for name, text in blocks if text)


__all__ = ["LIST_SEPARATOR", "build_query"]
