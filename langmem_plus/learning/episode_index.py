"""Episode planning that reads what concerns the run, not every stored episode.

``plan_episode_writes`` and ``consolidate`` (design.md §6) ask three questions of the stored
episodes, and a scan answers each by reading all of them:

* which stored episode of the same kind lies within ``episode_dedup_max_hamming`` SimHash
  bits of a new one (dedup);
* which near-misses a (subgoal template, context) holds (the near-miss cap), and which
  episodes of any kind it holds (the run's skill);
* which avoidances can still lose TTL (the TTL pass), and which failure fingerprints
  have enough unconsolidated avoidances to become an avoid lesson.

``EpisodeIndex`` answers them from a few maps kept in step with every write of the view
(``MemoryView.apply``, the other writers' announced records, evidence folded in):
SimHash bands (``store.lesson_index.plan_bands``: hashes within the radius share a band,
by pigeonhole), ids by (kind, template, context), the avoidances not known to be spent,
and per fingerprint the unconsolidated avoidances with their summed counts.
``plan_indexed_writes`` is ``plan_episode_writes`` reading the index: it takes every
decision in the order the scan would (stored order, then the run's new episodes), so the
result is the same (tested against the scan, ``MemoryConfig.lifecycle.end_run_indexes=False``).

Example:
    >>> from langmem_plus.records import Episode
    >>> idx = EpisodeIndex(bits=64, max_distance=3, bands=4, min_cluster=3)
    >>> idx.put(Episode(episode_id="a", namespace=("n",), kind="success", goal_signature="g", simhash="f0"))
    >>> idx.put(Episode(episode_id="b", namespace=("n",), kind="success", goal_signature="g", simhash="f" * 16))
    >>> idx.near("success", 0xF1), idx.near("success", 0xFFF), idx.near("avoidance", 0xF0), idx.group("", "")
    (['a'], [], [], ['a', 'b'])
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple, TypeVar, get_args

from langmem_plus.config import DEFAULT_CONFIG, MemoryConfig
from langmem_plus.learning.consolidate import FP_PREFIX
from langmem_plus.learning.dedup import hamming
from langmem_plus.learning.episodes import (
    EpisodeWrites,
    add_sighting,
    episode_hash,
    apply_episode_evidence,
    sighting,
    write_new,
)
from langmem_plus.records import Episode, EpisodeKind
from langmem_plus.store.lesson_index import plan_bands

_K = TypeVar("_K")
_KIND_CODES = {kind: code for code, kind in enumerate(get_args(EpisodeKind))}
"""Two bits below a band's value in its key: one bucket map per band serves every kind."""
_ALL_KINDS: tuple[str, ...] = get_args(EpisodeKind)


def avoidance_fp(ep: Episode) -> str | None:
    """The failure fingerprint an unconsolidated avoidance clusters under in ``consolidate``, else None."""
    if ep.kind != "avoidance" or ep.consolidated_into is not None:
        return None
    return next((s[len(FP_PREFIX) :] for s in ep.state_fingerprint if s.startswith(FP_PREFIX)), None)


class _Entry(NamedTuple):
    """What the index keeps of one stored record."""

    pos: int
    kind: str
    simhash: int
    template: str
    context: str
    fp: str | None
    record_count: int
    """The record's own count (its sightings add to it when folded)."""
    ttl: int | None
    seen: int | None
    """The record's own ``ttl_episodes`` and ``seen_run_seq`` (for ``MemoryView.avoidance_spent``)."""


class EpisodeIndex:
    """SimHash bands, (kind, template, context) groups, live avoidances and fingerprint clusters of stored episodes.

    Args:
        bits: SimHash width (``MemoryConfig.lifecycle.simhash_bits``).
        max_distance: Dedup radius in bits (``MemoryConfig.lifecycle.episode_dedup_max_hamming``).
        bands: Bands wanted (``MemoryConfig.lifecycle.dedup_simhash_bands``); ``plan_bands`` raises it to
            ``max_distance + 1`` and returns None when no banding is exact (then ``near`` lists the kind).
        min_cluster: Summed count at which a fingerprint's avoidances consolidate
            (``MemoryConfig.lifecycle.consolidate_min_episodes``).
    """

    def __init__(self, *, bits: int, max_distance: int, bands: int, min_cluster: int) -> None:
        self.plan = plan_bands(bits, max_distance, bands)
        self.bits, self.max_distance, self.min_cluster = bits, max_distance, min_cluster
        self._entries: dict[str, _Entry] = {}
        """Id -> entry, in the table's order (an update keeps its place, as a dict does)."""
        self._next = 0
        self._bands: list[dict[int, str | list[str]]] = [{} for _ in self.plan or ()]
        """Per band: ``_band_key`` -> the id there, or the ids when several (a set per bucket would cost
        ~4x the memory, and most buckets hold one id)."""
        self._wide: set[str] = set()
        """Ids whose hash is wider than ``bits`` (a corrupt or foreign record): always candidates."""
        self._groups: dict[tuple[str, str, str], set[str]] = {}
        self._live: set[str] = set()
        """Avoidances whose TTL may still count down: every avoidance until a plan finds it spent."""
        self._members: dict[str, set[str]] = {}
        """Fingerprint -> unconsolidated avoidances under it."""
        self._counted: dict[str, int] = {}
        """Member id -> max(count, 1) as last counted; ``_totals`` sums them per fingerprint."""
        self._totals: dict[str, int] = {}
        self._ripe: set[str] = set()
        """Fingerprints whose total reaches ``min_cluster``."""
        self._dirty: set[str] = set()
        """Members whose count may have changed since last counted (a record or a sighting arrived)."""

    # ---- writes ---------------------------------------------------------------

    def put(self, record: Episode) -> None:
        """Add or update a stored record (its content; its counters are folded when read)."""
        i = record.episode_id
        old = self._entries.get(i)
        if old is not None:
            self._unlink(i, old)
        entry = _Entry(old.pos if old is not None else self._next, record.kind, episode_hash(record, self.bits),
                       record.subgoal_template, record.context, avoidance_fp(record), record.count,
                       record.ttl_episodes, record.seen_run_seq)
        if old is None:
            self._next += 1
        self._entries[i] = entry
        if self.plan is not None and entry.simhash >> self.bits == 0:
            for band, key in zip(self._bands, self._band_keys(entry.kind, entry.simhash)):
                held = band.get(key)
                if held is None:
                    band[key] = i
                elif isinstance(held, str):
                    band[key] = [held, i]
                else:
                    held.append(i)
        else:
            self._wide.add(i)
        self._groups.setdefault((entry.kind, entry.template, entry.context), set()).add(i)
        if entry.kind == "avoidance":
            self._live.add(i)
        if entry.fp is not None:
            self._members.setdefault(entry.fp, set()).add(i)
            self._dirty.add(i)

    def _unlink(self, i: str, entry: _Entry) -> None:
        if self.plan is not None and entry.simhash >> self.bits == 0:
            for band, key in zip(self._bands, self._band_keys(entry.kind, entry.simhash)):
                held = band.get(key)
                if isinstance(held, list):
                    held.remove(i)
                    if len(held) == 1:
                        band[key] = held[0]
                elif held == i:
                    del band[key]
        self._wide.discard(i)
        _discard(self._groups, (entry.kind, entry.template, entry.context), i)
        self._live.discard(i)
        if entry.fp is not None:
            _discard(self._members, entry.fp, i)
            self._dirty.discard(i)
            self._recount(entry.fp, -self._counted.pop(i, 0))

    def touch(self, ids: Iterable[str]) -> None:
        """Sightings of ``ids`` were folded in: their counts changed, an avoidance's TTL restarted."""
        for i in ids:
            entry = self._entries.get(i)
            if entry is None:
                continue  # its record has not arrived: ``put`` counts it then
            if entry.kind == "avoidance":
                self._live.add(i)
            if entry.fp is not None:
                self._dirty.add(i)

    def revive_avoidances(self) -> None:
        """Every avoidance may count down again (a stored run was replaced: the ages are no longer monotone)."""
        self._live = {i for i, e in self._entries.items() if e.kind == "avoidance"}

    def spent(self, ids: Iterable[str]) -> None:
        """Avoidances whose TTL is over or never counts: later runs only age them further (until ``touch``/``put``)."""
        self._live.difference_update(ids)

    # ---- reads ----------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, episode_id: object) -> bool:
        return episode_id in self._entries

    def position(self, episode_id: str) -> int | None:
        """The record's place in the table's order (what a scan meets first is lower)."""
        entry = self._entries.get(episode_id)
        return None if entry is None else entry.pos

    def ttl_of(self, episode_id: str) -> tuple[int | None, int | None]:
        """A stored record's own (``ttl_episodes``, ``seen_run_seq``), before its sightings."""
        entry = self._entries[episode_id]
        return entry.ttl, entry.seen

    def first(self) -> str | None:
        """The id a scan meets first."""
        return next(iter(self._entries), None)

    def ordered(self, ids: Iterable[str]) -> list[str]:
        """Stored ``ids`` in the table's order."""
        return sorted(ids, key=lambda i: self._entries[i].pos)

    def near(self, kind: str, simhash: int) -> list[str]:
        """Stored ``kind`` episodes within ``max_distance`` bits of ``simhash`` (by their stored hash), in order.

        The band lookups find every one (pigeonhole) and some farther, which the exact
        distance then drops; without a plan every ``kind`` episode is measured.
        """
        entries, radius = self._entries, self.max_distance
        if self.plan is None or simhash >> self.bits:
            found: set[str] = {i for i, e in entries.items() if e.kind == kind}
        else:
            found = {i for i in self._wide if entries[i].kind == kind}
            for band, key in zip(self._bands, self._band_keys(kind, simhash)):
                held = band.get(key)
                if isinstance(held, str):
                    found.add(held)
                elif held is not None:
                    found.update(held)
        return self.ordered(i for i in found if hamming(simhash, entries[i].simhash) <= radius)

    def _band_keys(self, kind: str, simhash: int) -> list[int]:
        """Each band's key for a hash of ``kind``: the band's value with the kind's code below it."""
        code = _KIND_CODES[kind]
        return [((simhash >> shift) & ((1 << width) - 1)) << 2 | code for shift, width in self.plan or ()]

    def group(self, template: str, context: str, kinds: Sequence[str] = _ALL_KINDS) -> list[str]:
        """Stored episodes of ``kinds`` with this (subgoal template, context), in order."""
        return self.ordered(i for k in kinds for i in self._groups.get((k, template, context), ()))

    def live_avoidances(self) -> list[str]:
        """Stored avoidances not known to be spent, in order (a superset of those whose TTL counts down)."""
        return self.ordered(self._live)

    def members(self, fp: str) -> list[str]:
        """Stored unconsolidated avoidances under fingerprint ``fp``, in order."""
        return self.ordered(self._members.get(fp, ()))

    def ripe(self, sighted: Callable[[str], int]) -> set[str]:
        """Fingerprints whose unconsolidated avoidances sum to ``min_cluster`` or more (``max(count, 1)`` each).

        A member's count as folded now is its record's plus ``sighted(id)``, what its folded
        sightings add (``MemoryView.episode_sighted``), so no record is parsed for it; only
        members changed since the last call are counted again.
        """
        dirty, self._dirty = self._dirty, set()
        for i in dirty:
            entry = self._entries[i]
            if entry.fp is not None:
                n = max(entry.record_count + sighted(i), 1)
                self._recount(entry.fp, n - self._counted.get(i, 0))
                self._counted[i] = n
        return set(self._ripe)

    def _recount(self, fp: str, delta: int) -> None:
        total = self._totals.get(fp, 0) + delta
        if total:
            self._totals[fp] = total
        else:
            self._totals.pop(fp, None)
        if total >= self.min_cluster:
            self._ripe.add(fp)
        else:
            self._ripe.discard(fp)


def _discard(table: dict[_K, set[str]], key: _K, i: str) -> None:
    found = table.get(key)
    if found is not None:
        found.discard(i)
        if not found:
            del table[key]


def plan_indexed_writes(
    new: Sequence[Episode],
    index: EpisodeIndex,
    known: Callable[[str], Episode],
    config: MemoryConfig = DEFAULT_CONFIG,
    *,
    now: float,
    spent: Callable[[str], bool] | None = None,
) -> EpisodeWrites:
    """``plan_episode_writes`` reading ``index`` instead of scanning every stored episode; the same result.

    ``known(id)`` is a stored episode as folded and aged before this run (what the scan's
    ``stored`` holds). The run's pool is the stored episodes with this run's changes over
    them, the new ones after the stored in the order first sighted, and each decision
    visits its candidates in that order. ``EpisodeWrites.spent`` lists the avoidances the
    TTL pass found over, for ``EpisodeIndex.spent``; ``spent(id)``, when given, says so of a
    stored avoidance without ``known`` (exactly: ``MemoryView.avoidance_spent``), so the
    first plan after a build does not fold every avoidance.
    """
    out = EpisodeWrites()
    changed: dict[str, Episode] = {}
    """Pool entries this run changed or added (over ``known``)."""
    added: dict[str, int] = {}
    """The run's new ids, in the order first sighted (after every stored one in the pool)."""
    seen: set[str] = set()
    bits = config.lifecycle.simhash_bits

    def pool(i: str) -> Episode:
        return changed[i] if i in changed else known(i)

    def order(i: str) -> tuple[int, int]:
        pos = index.position(i)
        return (0, pos) if pos is not None else (1, added[i])

    def with_changed(ids: Iterable[str], keep: Callable[[Episode], bool]) -> list[Episode]:
        """``ids`` (stored) and the run's changed entries ``keep`` holds for, as the pool holds them, in pool order."""
        found = set(ids) | {i for i, e in changed.items() if keep(e)}
        return [pool(i) for i in sorted(found, key=order)]

    def find_duplicate(ep: Episode) -> Episode | None:
        """``episodes._find_duplicate`` over the band candidates: the same id, else the nearest, oldest, first met."""
        ns = tuple(ep.namespace)
        if ep.episode_id in index or ep.episode_id in changed:
            same_id = pool(ep.episode_id)
            if same_id.kind == ep.kind and tuple(same_id.namespace) == ns:
                return same_id
        mine = episode_hash(ep, bits)
        best: tuple[int, float, Episode] | None = None
        for other in with_changed(index.near(ep.kind, mine), lambda e: e.kind == ep.kind):
            if other.kind != ep.kind or tuple(other.namespace) != ns:
                continue
            dist = hamming(mine, episode_hash(other, bits))
            if dist <= config.lifecycle.episode_dedup_max_hamming and (best is None or (dist, other.created_at) < best[:2]):
                best = (dist, other.created_at, other)
        return None if best is None else best[2]

    def sight(kept: Episode, ep: Episode) -> Episode:
        ev = sighting(kept, ep, now)
        add_sighting(out, kept, ev)
        folded = apply_episode_evidence(kept, ev, config)
        if folded.episode_id not in index and folded.episode_id not in added:
            added[folded.episode_id] = len(added)
        changed[folded.episode_id] = out.folded[folded.episode_id] = folded
        seen.add(folded.episode_id)
        return folded

    for ep in new:
        dup = find_duplicate(ep)
        if dup is not None:
            sight(dup, ep)
            out.merged.append((dup.episode_id, ep.episode_id))
            continue
        same = None
        if ep.kind == "nearmiss":
            key = (ep.subgoal_template, ep.context)
            same = [e for e in with_changed(index.group(*key, kinds=("nearmiss",)), lambda e: e.kind == "nearmiss")
                    if e.kind == "nearmiss" and (e.subgoal_template, e.context) == key]
        write_new(ep, out, same, index, config, sight)
    for i in index.live_avoidances():
        if i in seen:
            continue
        if spent is not None and spent(i):
            out.spent.append(i)
            continue
        stored = known(i)
        if stored.kind != "avoidance" or stored.ttl_episodes is None or stored.ttl_episodes <= 0:
            out.spent.append(i)
            continue
        ttl = stored.ttl_episodes - 1
        out.folded[i] = stored.model_copy(update={"ttl_episodes": ttl})
        if ttl == 0:
            out.expired.append(i)
    return out


def consolidation_input(
    index: EpisodeIndex,
    pool: Callable[[str], Episode],
    changed: Sequence[str],
    *,
    template: str,
    context: str,
    sighted: Callable[[str], int],
    covered: Callable[[str], bool] | None,
) -> list[str]:
    """The pool ids ``consolidate`` needs after a run of (``template``, ``context``), in pool order.

    The run's (template, context) group of every kind (its skill), and every member of each
    fingerprint cluster that may reach ``min_cluster`` now: those the index counts ripe and
    those this run sighted or created; ``covered`` ones are left out (``consolidate`` skips
    them). Any other cluster sums below the threshold, so the part of it the group holds
    does too, and ``consolidate`` decides as it would over every episode.

    Args:
        index: The stored episodes, before this run's writes.
        pool: An id's episode as the run's pool holds it (its changes over the stored fold).
        changed: Ids the run's plan wrote or sighted, stored or new; the new ones in pool order.
        template: The run's subgoal template.
        context: The run's context.
        sighted: What a stored member's folded sightings add to its record's count (``EpisodeIndex.ripe``).
        covered: Whether some lesson triggers on a fingerprint; None: unknown (no cluster is left out).
    """
    ids = set(index.group(template, context))
    fps = index.ripe(sighted)
    for i in changed:
        ep = pool(i)
        if (ep.subgoal_template, ep.context) == (template, context):
            ids.add(i)
        fp = avoidance_fp(ep)
        if fp is not None:
            fps.add(fp)
    for fp in fps:
        if covered is None or not covered(fp):
            ids.update(index.members(fp))
            ids.update(i for i in changed if avoidance_fp(pool(i)) == fp)
    new = [i for i in changed if i not in index]
    return [*index.ordered(i for i in ids if i in index), *(i for i in new if i in ids)]


__all__ = ["EpisodeIndex", "avoidance_fp", "consolidation_input", "plan_indexed_writes"]
