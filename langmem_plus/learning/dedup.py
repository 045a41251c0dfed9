"""Near-duplicate and conflicting lessons (design.md §6 "Dedup").

The same rule is learned again and again, from other runs and with other literals.
SimHash (Charikar, STOC 2002) of the normalised rule text and triggers puts near
duplicates a few bits apart, so they can be merged (union of triggers, sum of
counts, the older id kept). Lessons that share a trigger but would rewrite the
same text differently are conflicts: they are linked, not merged, and the
retrieval guards show only the better one.

Hashing uses blake2b, never Python's salted ``hash()``, so a SimHash is the same
in every process and can be stored.

Example:
    >>> a = simhash("wrong: filter -> correct: keep when unknown command at stage")
    >>> b = simhash("wrong: filter -> correct: keep when unknown command at stage <num>")
    >>> c = simhash("avoid: rm -rf fails with permission denied on path")
    >>> hamming(a, b) < hamming(a, c)
    True
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

import numpy as np

from langmem_plus._text import action_tokens
from langmem_plus.config import DEFAULT_CONFIG, MemoryConfig
from langmem_plus.learning.utility import reliability
from langmem_plus.records import Lesson, LessonStats, Provenance
from langmem_plus.rewrite import apply_rewrite

SIMHASH_BLOCK = 4096
"""Features voted in one matrix product (bounds ``simhash``'s memory on a huge text to ~2 MB)."""
SIMHASH_NGRAM = 2
"""Token n-grams hashed as SimHash features besides single tokens: word order then counts a little."""

FEATURE_MEMO = 1 << 18
"""Feature hashes ``simhash_many`` keeps between calls; cleared when full, so memory stays bounded."""

_WS = re.compile(r"\s+")
_T = TypeVar("_T")


def normalize_rule(text: str) -> str:
    """Lowercase, unify quotes, collapse whitespace and drop trailing punctuation.

    Example:
        >>> normalize_rule('  WRONG: "filter"  ->\\n CORRECT: keep. ')
        "wrong: 'filter' -> correct: keep"
    """
    t = (text or "").lower().replace('"', "'").replace("`", "'")
    return _WS.sub(" ", t).strip().rstrip(".;,")


def _feature_hash(feature: str) -> int:
    return int.from_bytes(hashlib.blake2b(feature.encode("utf-8", "replace"), digest_size=8).digest(), "big")


def _features(text: str) -> Counter[str]:
    """SimHash features of a text with their counts: tokens and token bigrams."""
    toks = action_tokens(text)
    feats: Counter[str] = Counter(toks)
    feats.update(" ".join(toks[i : i + SIMHASH_NGRAM]) for i in range(len(toks) - SIMHASH_NGRAM + 1))
    return feats


def simhash(text: str, bits: int = 64) -> int:
    """SimHash of a text over token and token-bigram features, ``bits`` wide (at most 64).

    Each feature (a token of ``action_tokens``, or two adjacent tokens) is hashed
    with blake2b; each bit of the result is the sign of the count-weighted vote of
    the features on that bit. Similar texts share most features, so most votes, so
    most bits. An empty text hashes to 0. The votes are one integer matrix product
    (``simhash_reference`` counts them bit by bit: the same integers, 5x slower).
    """
    if not 1 <= bits <= 64:
        raise ValueError(f"simhash bits must be in 1..64, got {bits}")
    feats = _features(text)
    if not feats:
        return 0
    hashes = np.fromiter((_feature_hash(f) for f in feats), dtype=np.uint64, count=len(feats))
    weights = np.fromiter(feats.values(), dtype=np.int64, count=len(feats))
    shifts = np.arange(bits, dtype=np.uint64)
    votes = np.zeros(bits, dtype=np.int64)
    for lo in range(0, len(hashes), SIMHASH_BLOCK):  # bounded memory for a huge text
        on = ((hashes[lo : lo + SIMHASH_BLOCK, None] >> shifts) & np.uint64(1)).astype(np.int64)
        votes += weights[lo : lo + SIMHASH_BLOCK] @ (2 * on - 1)
    return sum(1 << b for b in np.flatnonzero(votes > 0).tolist())


def simhash_many(texts: Sequence[str], bits: int = 64) -> list[int]:
    """``simhash`` of many texts: equal to ``[simhash(t, bits) for t in texts]``, and faster.

    A feature's hash is memoised (``FEATURE_MEMO`` entries at most) as its bits spread
    into 32-bit lanes of one Python integer, so a text's per-bit counts of set bits are a
    weighted sum of integers; bit ``b`` of the SimHash is set when twice that count beats
    the text's total weight (the same vote ``simhash`` takes, ``2 * set - total > 0``).
    Indexing a store whose lessons were written without their hash (imports, direct store
    writes) uses it.
    """
    if not 1 <= bits <= 64:
        raise ValueError(f"simhash bits must be in 1..64, got {bits}")
    totals: list[int] = []
    weights: list[int] = []
    spread = _SPREAD
    for text in texts:
        feats = _features(text)
        total = sum(feats.values())
        if total >= 1 << (_LANE - 1):  # lanes could overflow: never for a lesson, but stay exact
            totals.append(-1)
            weights.append(0)
            continue
        totals.append(sum(w * spread[f] for f, w in feats.items()))
        weights.append(total)
    if not texts:
        return []
    width = 64 * _LANE // 8
    packed = b"".join(t.to_bytes(width, "little") if t >= 0 else bytes(width) for t in totals)
    counts = np.frombuffer(packed, dtype="<u4").reshape(len(texts), 64)[:, :bits].astype(np.int64)
    on = 2 * counts > np.asarray(weights, dtype=np.int64)[:, None]
    values = (on.astype(np.uint64) << np.arange(bits, dtype=np.uint64)).sum(axis=1, dtype=np.uint64).tolist()
    return [simhash(t, bits) if n < 0 else int(v) for t, n, v in zip(texts, totals, values)]


_LANE = 32
"""Bits per counter in a spread feature hash (``simhash_many``)."""


class _Spread(dict[str, int]):
    """Feature -> its 64-bit hash with bit ``b`` moved to bit ``32 * b`` (memoised, bounded)."""

    def __missing__(self, feature: str) -> int:
        if len(self) >= FEATURE_MEMO:
            self.clear()
        h = _feature_hash(feature)
        value = sum(_BYTE_SPREAD[(h >> (8 * k)) & 0xFF] << (8 * _LANE * k) for k in range(8))
        self[feature] = value
        return value


_BYTE_SPREAD = [sum(1 << (_LANE * b) for b in range(8) if (v >> b) & 1) for v in range(256)]
_SPREAD = _Spread()


def simhash_reference(text: str, bits: int = 64) -> int:
    """``simhash`` the obvious way, a vote per feature per bit; for tests."""
    if not 1 <= bits <= 64:
        raise ValueError(f"simhash bits must be in 1..64, got {bits}")
    votes = [0] * bits
    for feat, weight in _features(text).items():
        h = _feature_hash(feat)
        for b in range(bits):
            votes[b] += weight if (h >> b) & 1 else -weight
    return sum(1 << b for b in range(bits) if votes[b] > 0)


def hamming(a: int, b: int) -> int:
    """Number of differing bits of two hashes."""
    return (a ^ b).bit_count()


def lesson_simhash(lesson: Lesson, bits: int = DEFAULT_CONFIG.lifecycle.simhash_bits) -> str:
    """Hex SimHash of a lesson's normalised rule text plus its sorted triggers (design.md §6)."""
    return format(_rule_hash(lesson.rule_text, tuple(sorted(lesson.triggers)), bits), f"0{(bits + 3) // 4}x")


@functools.lru_cache(maxsize=1 << 18)
def _rule_hash(rule_text: str, triggers: tuple[str, ...], bits: int) -> int:
    """``simhash`` of a rule and its sorted triggers, memoised: a lesson stored without its hash
    (an import, a direct store write) is otherwise hashed again by every deduplication that
    meets it, which at scale dominates ``end_run``."""
    return simhash(" ".join([normalize_rule(rule_text), *triggers]), bits)


def lesson_hashes(lessons: Sequence[Lesson], bits: int = DEFAULT_CONFIG.lifecycle.simhash_bits) -> list[int]:
    """Each lesson's SimHash as dedup reads it: the stored ``simhash``, else computed (``simhash_many``).

    Equal to the hash ``find_duplicate`` uses for each lesson; the index of a store
    (``store.lesson_index``) keeps these, so a dedup never hashes a stored lesson again.
    """
    out: list[int | None] = []
    missing: list[int] = []
    for n, lesson in enumerate(lessons):
        try:
            out.append(int(lesson.simhash, 16) if lesson.simhash else None)
        except ValueError:  # a corrupt stored hash: recompute, as ``_hash_of`` does
            out.append(None)
        if out[-1] is None:
            missing.append(n)
    texts = [" ".join([normalize_rule(lessons[n].rule_text), *sorted(lessons[n].triggers)]) for n in missing]
    for n, value in zip(missing, simhash_many(texts, bits)):
        out[n] = value
    return [int(v or 0) for v in out]


def _hash_of(lesson: Lesson, bits: int) -> int:
    try:
        return int(lesson.simhash, 16) if lesson.simhash else int(lesson_simhash(lesson, bits), 16)
    except ValueError:  # a corrupt stored hash: recompute rather than fail
        return int(lesson_simhash(lesson, bits), 16)


def _norm(x: str | None) -> str | None:
    return None if x is None else normalize_rule(x)


def _fields_disagree(a: Lesson, b: Lesson) -> bool:
    """Both lessons set ``wrong`` (or ``correct``) and the values differ."""
    return any(
        x is not None and y is not None and x != y
        for x, y in ((_norm(a.wrong), _norm(b.wrong)), (_norm(a.correct), _norm(b.correct)))
    )


def find_duplicate(
    lesson: Lesson,
    existing: Sequence[Lesson],
    config: MemoryConfig = DEFAULT_CONFIG,
    *,
    hash_of: Callable[[Lesson], int] | None = None,
) -> Lesson | None:
    """The existing lesson ``lesson`` duplicates, or None (design.md §6).

    A duplicate is in the same namespace and either has the same id, or has the
    same normalised ``wrong`` and ``correct`` and shares a trigger, or shares a
    trigger and is the same rule over other literals (``subsumes``, either way), or
    is within ``dedup_max_hamming`` SimHash bits. Refinement: a SimHash near duplicate whose
    ``wrong`` or ``correct`` differs (both set) is not merged, since two rules that
    differ in one token are usually a conflict ("use keep" vs "use where"), and
    merging would hide it. Among several duplicates the closest (fewest differing
    bits, then the oldest) wins. ``hash_of`` gives an existing lesson's hash when the
    caller has it indexed (the same value ``lesson_hashes`` computes).
    """
    bits = config.lifecycle.simhash_bits
    hash_of = hash_of or functools.partial(_hash_of, bits=bits)
    mine = _hash_of(lesson, bits)
    triggers = set(lesson.triggers)
    rule = (_norm(lesson.wrong), _norm(lesson.correct))
    best: tuple[int, float, Lesson] | None = None
    for other in existing:
        if other.namespace != lesson.namespace:
            continue
        if other.id == lesson.id:
            return other
        dist = hamming(mine, hash_of(other))
        # The cheap tests first: most of a large store shares no trigger and is many bits away.
        sharing = not triggers.isdisjoint(other.triggers)
        same_rule = sharing and (_norm(other.wrong), _norm(other.correct)) == rule
        near = dist <= config.lifecycle.dedup_max_hamming and not _fields_disagree(lesson, other)
        variant = sharing and (subsumes(lesson, other) or subsumes(other, lesson))
        if (same_rule or near or variant) and (best is None or (dist, other.created_at) < best[:2]):
            best = (dist, other.created_at, other)
    return None if best is None else best[2]


def subsumes(general: Lesson, literal: Lesson) -> bool:
    """Whether ``general``'s rewrite turns ``literal``'s WRONG text into its CORRECT text: the same rule, stated over
    more values (``master`` -> ``main`` subsumes ``master...fix-typo`` -> ``main...fix-typo``).

    Example:
        >>> g = Lesson(id="g", namespace=("n",), rule_text="r", wrong="TOP <n> <...>", correct="<...> LIMIT <n>")
        >>> l = Lesson(id="l", namespace=("n",), rule_text="r", wrong="TOP 3 a FROM t", correct="a FROM t LIMIT 3")
        >>> subsumes(g, l), subsumes(l, g)
        (True, False)
    """
    if not (general.wrong and general.correct is not None and literal.wrong and literal.correct is not None):
        return False
    if (general.wrong, general.correct) == (literal.wrong, literal.correct):
        return False
    out = apply_rewrite(literal.wrong, general.wrong, general.correct)
    return out is not None and normalize_rule(out) == normalize_rule(literal.correct)


def generalised(kept: Lesson, general: Lesson, bits: int = DEFAULT_CONFIG.lifecycle.simhash_bits) -> Lesson:
    """``kept`` (a merge, evidence and ids together) stating ``general``'s rule: its forms and rule text."""
    out = kept.model_copy(update={"wrong": general.wrong, "correct": general.correct, "rule_text": general.rule_text})
    return out.model_copy(update={"simhash": lesson_simhash(out, bits)})


def _union(*lists: Iterable[_T]) -> list[_T]:
    """Order-preserving union."""
    return list(dict.fromkeys(x for lst in lists for x in lst))


def _merge_stats(a: LessonStats, b: LessonStats, window: int) -> LessonStats:
    n = a.evidence_runs + b.evidence_runs
    if a.pass_rate_with is None or b.pass_rate_with is None or n == 0:
        pass_with = a.pass_rate_with if a.pass_rate_with is not None else b.pass_rate_with
    else:
        pass_with = (a.pass_rate_with * a.evidence_runs + b.pass_rate_with * b.evidence_runs) / n
    last = [s for s in (a.last_activated_run_seq, b.last_activated_run_seq) if s is not None]
    return LessonStats(
        activations=a.activations + b.activations,
        runs_activated=a.runs_activated + b.runs_activated,
        evidence_runs=n,
        helped=a.helped + b.helped,
        harmed=a.harmed + b.harmed,
        utility_window=[*a.utility_window, *b.utility_window][-window:],
        conflict_losses=a.conflict_losses + b.conflict_losses,
        pass_rate_with=pass_with,
        pass_rate_baseline=a.pass_rate_baseline if a.pass_rate_baseline is not None else b.pass_rate_baseline,
        created_run_seq=min(a.created_run_seq, b.created_run_seq),
        last_activated_run_seq=max(last) if last else None,
    )


def merge(
    keep: Lesson,
    other: Lesson,
    now: float,
    *,
    bits: int = DEFAULT_CONFIG.lifecycle.simhash_bits,
    window: int = DEFAULT_CONFIG.lifecycle.utility_window,
) -> Lesson:
    """Merge two duplicate lessons into one (design.md §6).

    The older lesson (earlier ``created_at``; ``keep`` on a tie) gives the id, rule,
    status and scope; triggers, fingerprints, tags, provenance and conflict links
    are unioned; counts are added; reliability is recomputed from the summed
    helped/harmed counts; ``supersedes`` records the absorbed id.

    Args:
        keep: The lesson the caller would keep.
        other: Its duplicate.
        now: Current time, epoch seconds; becomes ``updated_at``.
        bits: SimHash width of the recomputed ``simhash`` (``MemoryConfig.lifecycle.simhash_bits``).
        window: Utilities kept of the concatenated windows (``MemoryConfig.lifecycle.utility_window``).
    """
    old, new = (other, keep) if other.created_at < keep.created_at else (keep, other)
    stats = _merge_stats(old.stats, new.stats, window)
    ids = {old.id, new.id}
    last = [t for t in (old.last_activated_at, new.last_activated_at) if t is not None]
    merged = old.model_copy(
        deep=True,
        update={
            "triggers": _union(old.triggers, new.triggers),
            "fingerprints": _union(old.fingerprints, new.fingerprints),
            "tags": _union(old.tags, new.tags),
            "provenance": Provenance(
                run_ids=_union(old.provenance.run_ids, new.provenance.run_ids),
                event_ids=_union(old.provenance.event_ids, new.provenance.event_ids),
            ),
            "conflicts_with": [c for c in _union(old.conflicts_with, new.conflicts_with) if c not in ids],
            "supersedes": [s for s in _union(old.supersedes, new.supersedes, [new.id]) if s != old.id],
            "stats": stats,
            "reliability": reliability(stats.helped, stats.harmed),
            "created_at": min(old.created_at, new.created_at),
            "updated_at": now,
            "last_activated_at": max(last) if last else None,
        },
    )
    return merged.model_copy(update={"simhash": lesson_simhash(merged, bits)})


def _rewrites_clash(a: Lesson, b: Lesson) -> bool:
    """Both are rewrites and they would turn the same offending text into different text."""
    if a.wrong is None or a.correct is None or b.wrong is None or b.correct is None:
        return False
    ra, rb = (a.wrong, a.correct), (b.wrong, b.correct)
    if normalize_rule(ra[0]) == normalize_rule(rb[0]):
        return normalize_rule(ra[1]) != normalize_rule(rb[1])
    for (x_wrong, x_correct), (y_wrong, y_correct) in ((ra, rb), (rb, ra)):
        out = apply_rewrite(y_wrong, x_wrong, x_correct)  # x's pattern also fires on y's offending text
        if out is not None and normalize_rule(out) != normalize_rule(y_correct):
            return True
    return False


def find_conflicts(lesson: Lesson, existing: Sequence[Lesson]) -> list[str]:
    """Ids of existing lessons that conflict with ``lesson`` (design.md §6).

    A conflict shares at least one trigger and proposes a different fix for the
    same offending text: the same normalised ``wrong`` with a different ``correct``
    (an avoid lesson, with no ``correct``, never conflicts), or one rewrite's
    ``wrong`` pattern also matching the other's offending text and producing a
    different result (``filter`` -> ``keep`` against ``filter *`` -> ``where *``).

    Refinement: two rewrites for one trigger that touch different text
    (``filter`` -> ``keep`` and ``select`` -> ``pick``, both answering
    "unknown command <str>") are not conflicts; they complement each other, and
    linking them would let the guards hide one of two needed fixes.
    """
    trig = set(lesson.triggers)
    return [
        other.id
        for other in existing
        if other.id != lesson.id
        and other.namespace == lesson.namespace
        and trig & set(other.triggers)
        and _rewrites_clash(lesson, other)
    ]


__all__ = [
    "SIMHASH_NGRAM",
    "find_conflicts",
    "find_duplicate",
    "generalised",
    "hamming",
    "lesson_hashes",
    "lesson_simhash",
    "merge",
    "normalize_rule",
    "simhash",
    "simhash_many",
    "simhash_reference",
    "subsumes",
]
