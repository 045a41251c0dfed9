"""Episodic recall in time and sequence, pure (seed 002 "Recall by Time", design.md §10).

Three ways to recall episodes besides similarity, over a plain list of episodes and an
explicit ``now`` (no clock reads, no I/O):

- ``recall_at``: episodes that happened within ``window`` seconds of a time,
  most significant first;
- ``recall_before``: episodes that happened before a time, most significant first;
- ``recall_sequence``: from one episode along its first ``leads_to`` (forward) or
  ``caused_by`` (backward) link until a link is missing or loops.

An episode "happened" at its ``created_at``. Faded episodes are skipped everywhere:
those ``episode_recallable`` rejects at ``now`` (strength decayed below
``episode_recall_min_strength``, or an expired avoidance), the seed's
``strength > 0.1`` filter. A sequence walks *through* a faded episode (its links still
hold) but does not return it. Ties in significance go to the newer episode.

Example:
    >>> from langmem_plus.records import Episode
    >>> eps = [Episode(episode_id=f"e{i}", namespace=("n",), kind="success", goal_signature="g",
    ...                created_at=100.0 * i, last_seen_at=100.0 * i, significance=0.1 * i) for i in range(5)]
    >>> [e.episode_id for e in recall_at(eps, 200.0, window=100.0, now=400.0)]
    ['e3', 'e2', 'e1']
    >>> [e.episode_id for e in recall_before(eps, 200.0, limit=5, now=400.0)]
    ['e1', 'e0']
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal

from langmem_plus.config import DEFAULT_CONFIG, MemoryConfig
from langmem_plus.learning.episodes import apply_episode_evidence, episode_recallable, link_evidence
from langmem_plus.records import Episode

Direction = Literal["forward", "backward"]
"""``forward`` follows ``leads_to``, ``backward`` follows ``caused_by``."""


def _by_significance(episodes: Iterable[Episode]) -> list[Episode]:
    return sorted(episodes, key=lambda e: (-e.significance, -e.created_at, e.episode_id))


def recall_at(
    episodes: Sequence[Episode], time: float, window: float, *, now: float, config: MemoryConfig = DEFAULT_CONFIG
) -> list[Episode]:
    """Recallable episodes that happened in [time - window, time + window], most significant first.

    Raises:
        ValueError: A negative window.
    """
    if window < 0:
        raise ValueError(f"window must be >= 0 seconds, got {window}")
    return _by_significance(
        e for e in episodes if time - window <= e.created_at <= time + window and episode_recallable(e, now, config)
    )


def recall_before(
    episodes: Sequence[Episode], time: float, limit: int, *, now: float, config: MemoryConfig = DEFAULT_CONFIG
) -> list[Episode]:
    """At most ``limit`` recallable episodes that happened strictly before ``time``, most significant first."""
    if limit <= 0:
        return []
    return _by_significance(e for e in episodes if e.created_at < time and episode_recallable(e, now, config))[:limit]


def recall_sequence(
    episodes: Sequence[Episode],
    start: str,
    direction: Direction = "forward",
    *,
    now: float,
    config: MemoryConfig = DEFAULT_CONFIG,
) -> list[Episode]:
    """The chain of episodes from ``start`` along first links, ``start`` included, faded ones left out.

    Stops at a missing episode or a link back into the chain (a loop). An unknown
    ``start`` gives an empty list.

    Raises:
        ValueError: An unknown direction.
    """
    if direction not in ("forward", "backward"):
        raise ValueError(f"direction must be 'forward' or 'backward', got {direction!r}")
    by_id = {e.episode_id: e for e in episodes}
    chain: list[Episode] = []
    seen: set[str] = set()
    current = by_id.get(start)
    while current is not None and current.episode_id not in seen:
        seen.add(current.episode_id)
        chain.append(current)
        links = current.leads_to if direction == "forward" else current.caused_by
        current = by_id.get(links[0]) if links else None
    return [e for e in chain if episode_recallable(e, now, config)]


def link_episodes(cause: Episode, effect: Episode) -> tuple[Episode, Episode]:
    """Copies of two episodes linked as cause -> effect (``leads_to`` / ``caused_by``), each link once.

    The fold of the link's evidence (``link_evidence``), as a memory folds it from the shared log.
    """
    to_cause, to_effect = link_evidence(cause.episode_id, effect.episode_id, run_seq=0, at=0.0)
    return apply_episode_evidence(cause, to_cause), apply_episode_evidence(effect, to_effect)


__all__ = ["Direction", "link_episodes", "recall_at", "recall_before", "recall_sequence"]
