"""Episodes and skills beside lessons, and the token cap on what one retrieval hands over.

Episodes and skills are scored on their own scale (design.md §5.3: ``1.0 cos + 0.5
goal_overlap + 0.3 log(1 + w) + 0.2 recency``, up to about 2.2, while a lesson
scores at most 1), so they are not mixed into the lesson MMR: ``choose_support``
keeps the best ``episode_budget`` relevant episodes or skills beside the K' lessons,
plus the avoidance reminder of design.md §5.6 (+1) when one is relevant.

``cap_tokens`` then enforces ``MemoryConfig.context.max_context_tokens`` on the rendered
hints, in priority order. Both are pure; ``cap_tokens_reference`` is the obvious
version the fast one is tested against.

Example:
    >>> cap_tokens(["a", "b", "c"], [300, 600, 200], cap=800)
    (['a', 'c'], ['b'], 500)
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from typing import TypeVar

from langmem_plus.config import DEFAULT_CONFIG, MemoryConfig
from langmem_plus.records import Episode, ScoredItem, Skill
from langmem_plus.retrieval.scoring import _clip, _finite_or, goal_overlap
from langmem_plus.retrieval.select import avoidance_reminder

T = TypeVar("T")


def skill_components(skill: Skill, *, cos: float, goal: str) -> dict[str, float]:
    """A skill's score components on the episode scale (design.md §5.3).

    ``cos`` (query vs the skill's name and goal templates), ``goal_overlap`` (best
    over its goal templates), ``success_prior`` = log(1 + successes). Skills carry no
    last-seen time, so there is no recency term.

    Example:
        >>> s = Skill(id="s", namespace=("ns",), name="sort", goal_templates=["sort rows by age"])
        >>> skill_components(s, cos=0.5, goal="sort rows by name")["goal_overlap"]
        0.6
    """
    templates = skill.goal_templates or [skill.name]
    return {
        "cos": _clip(_finite_or(cos, 0.0), -1.0, 1.0),
        "goal_overlap": max(goal_overlap(goal, t) for t in templates),
        "success_prior": math.log1p(max(0, skill.stats.successes)),
    }


def recallable(item: ScoredItem, config: MemoryConfig = DEFAULT_CONFIG) -> bool:
    """An episode strong enough to recall (``episode_recall_min_strength``), or a skill; never a retired one."""
    it = item.item
    if isinstance(it, (Episode, Skill)) and it.retired is not None:
        return False
    return not isinstance(it, Episode) or it.strength >= config.lifecycle.episode_recall_min_strength


def choose_support(
    items: Sequence[ScoredItem],
    config: MemoryConfig = DEFAULT_CONFIG,
    *,
    taken: Collection[str] = (),
) -> list[ScoredItem]:
    """The episodes and skills shown beside the lessons (design.md §5.3, §5.6).

    Relevant means ``components["cos"] >= episode_min_cos`` and recallable. The best
    ``episode_budget`` relevant non-avoidance items are kept (score order, ties by
    input order), then one avoidance reminder (``select.avoidance_reminder``) when a
    relevant avoidance episode remains.

    Args:
        items: Scored episodes and skills (lessons are ignored).
        config: Supplies ``episode_budget``, ``episode_min_cos``, ``episode_recall_min_strength``.
        taken: Item ids already chosen elsewhere.

    Returns:
        The chosen items, each a copy with a reason.
    """
    relevant = [
        it for it in items
        if it.kind in ("episode", "skill")
        and it.item_id not in taken
        and it.components.get("cos", 0.0) >= config.retrieval.episode_min_cos
        and recallable(it, config)
    ]
    plain = [it for it in relevant if not (isinstance(it.item, Episode) and it.item.kind == "avoidance")]
    plain.sort(key=lambda it: -it.score)
    chosen = [
        it.model_copy(update={"reasons": [*it.reasons, f"{it.kind} beside lessons, rank {r}"]})
        for r, it in enumerate(plain[: config.retrieval.episode_budget], start=1)
    ]
    reminder = avoidance_reminder(relevant, chosen)
    return chosen + ([reminder] if reminder is not None else [])


def cap_tokens(items: Sequence[T], costs: Sequence[int], cap: int) -> tuple[list[T], list[T], int]:
    """Keep items in priority order while their token costs fit under ``cap``.

    An item that does not fit is skipped and later, cheaper ones may still fit
    (greedy by priority, never reordering).

    Args:
        items: Items, most important first.
        costs: Tokens each item adds to the context, same order.
        cap: Token budget (``MemoryConfig.context.max_context_tokens``).

    Returns:
        ``(kept, skipped, tokens used)``.
    """
    if len(items) != len(costs):
        raise ValueError(f"one cost per item: {len(items)} items, {len(costs)} costs")
    kept: list[T] = []
    skipped: list[T] = []
    used = 0
    for item, cost in zip(items, costs):
        if used + max(0, int(cost)) <= cap:
            kept.append(item)
            used += max(0, int(cost))
        else:
            skipped.append(item)
    return kept, skipped, used


def cap_tokens_reference(items: Sequence[T], costs: Sequence[int], cap: int) -> tuple[list[T], list[T], int]:
    """``cap_tokens`` written as "item i is kept iff it fits beside the kept items before it"."""
    keep_flags: list[bool] = []
    for i in range(len(items)):
        before = sum(max(0, int(costs[j])) for j in range(i) if keep_flags[j])
        keep_flags.append(before + max(0, int(costs[i])) <= cap)
    kept = [items[i] for i in range(len(items)) if keep_flags[i]]
    skipped = [items[i] for i in range(len(items)) if not keep_flags[i]]
    return kept, skipped, sum(max(0, int(costs[i])) for i in range(len(items)) if keep_flags[i])


__all__ = ["cap_tokens", "cap_tokens_reference", "choose_support", "recallable", "skill_components"]
