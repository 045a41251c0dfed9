"""Choosing what to show: guards, MMR and the difficulty budget (design.md §5.4-5.6).

Candidates arrive scored (``scoring.py``). Selection then

1. applies the guards of design.md §5.4: never a suppressed or archived lesson, at
   most ``tag_bucket_cap`` items per tag bucket, at most ``per_run_cap`` items from
   any one earlier run, and one winner per conflict cluster;
2. runs MMR (``mmr.py``) over the survivors for diversity (design.md §5.5);
3. keeps the first K', where K' comes from the difficulty of the moment (design.md §5.6),
   plus, when one is relevant, one avoidance reminder (``avoidance_reminder``).

Every function is pure: items in, items out, each kept item with a reason.

Example:
    >>> from langmem_plus.records import Lesson, ScoredItem, WorkingContext
    >>> mk = lambda i, s: ScoredItem(kind="lesson", score=s,
    ...     item=Lesson(id=i, namespace=("ns",), rule_text=i, tags=["unknown_command"]))
    >>> items = [mk("a", 0.9), mk("b", 0.8), mk("c", 0.7)]
    >>> [it.item_id for it in select(items, vectors=None, k=3, config=DEFAULT_CONFIG)]
    ['a', 'b']
    >>> budget(difficulty(WorkingContext(stalls=0, recent_failures=0), DEFAULT_CONFIG), DEFAULT_CONFIG)
    3
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from langmem_plus.config import DEFAULT_CONFIG, MemoryConfig
from langmem_plus.records import RETRIEVABLE_STATUSES, Episode, Lesson, ScoredItem, WorkingContext
from langmem_plus.retrieval.mmr import mmr_select, mmr_select_reference, similarity_matrix
from langmem_plus.rewrite import apply_rewrite

Selector = Callable[[Sequence[float], npt.ArrayLike, int, float], list[int]]


# --------------------------------------------------------------------------- budget


def difficulty(ctx: WorkingContext, config: MemoryConfig = DEFAULT_CONFIG) -> float:
    """Difficulty of the current moment in [0, 1] (design.md §5.6).

    An explicit ``ctx.difficulty`` wins (clipped to [0, 1]). Otherwise it is
    ``1 - exp(-(stalls / stall_steps + recent_failures / repeat_window))``: each
    term is "how far into trouble" on the scale on which capture already calls it
    trouble (``stall_steps`` steps without progress raise a no_progress event;
    ``repeat_window`` is the window over which failures count as repeated). The sum
    is 0 for a fresh run, 1 when either signal alone reaches its threshold, and the
    saturating exponential maps it to [0, 1) so more trouble always means more
    difficulty without ever leaving the range. With the default thresholds (0.3 /
    0.7) a fresh run is easy (3 items), a stall of ``stall_steps`` alone is medium
    (0.63, 5 items), and a stall plus two recent failures is hard (0.75, 7 items).

    Args:
        ctx: The working context (stalls, recent failures, optional explicit difficulty).
        config: Supplies ``stall_steps`` and ``repeat_window``.

    Returns:
        Difficulty in [0, 1].
    """
    if ctx.difficulty is not None and math.isfinite(ctx.difficulty):
        return min(1.0, max(0.0, float(ctx.difficulty)))
    trouble = max(ctx.stalls, 0) / config.capture.stall_steps + max(ctx.recent_failures, 0) / config.capture.repeat_window
    return 1.0 - math.exp(-trouble)


def budget(difficulty: float, config: MemoryConfig = DEFAULT_CONFIG) -> int:
    """K', the number of items to show at a difficulty: 3 / 5 / 7 by default (design.md §5.6)."""
    d = difficulty if math.isfinite(difficulty) else 0.0
    return config.budget_for(min(1.0, max(0.0, d)))


# --------------------------------------------------------------------------- guards


def default_run_of(item: ScoredItem) -> str | None:
    """The earlier run an item came from: a single-run lesson's run, an episode's run.

    The per-run cap (design.md §5.4) guards against one anomalous session flooding the
    context. A lesson learned again in a second run is corroborated, so it no longer
    counts against its first run's cap (measured: with the cap on first runs, a
    gridtool task lost the fourth of the four fixes its first run had taught).
    """
    it = item.item
    if isinstance(it, Lesson):
        return it.provenance.run_ids[0] if len(it.provenance.run_ids) == 1 else None
    if isinstance(it, Episode):
        return it.run_id
    return None


def default_bucket_of(item: ScoredItem) -> str | None:
    """An item's tag bucket: a lesson's primary tag, refined by its WRONG pattern.

    Rewrite lessons with different WRONG patterns are different facts even under one
    tag (``filter -> KEEP`` and ``select -> PICK`` are both unknown_command), and a
    task may need all of them; the cap of design.md §5.4 then bounds lessons that fix
    the same thing. Episodes and skills have no bucket.
    """
    it = item.item
    if isinstance(it, Lesson) and it.tags:
        return f"{it.tags[0]}|{it.wrong}" if it.wrong else it.tags[0]
    return None


def _conflict_winners(items: Sequence[ScoredItem], order: Sequence[int]) -> dict[int, int]:
    """Map each lesson position in a conflict cluster to its cluster winner's position.

    Clusters are the connected components of ``conflicts_with`` links (in either
    direction) among the candidate lessons. The winner is a direct fix before a detour (a
    rewrite whose result another candidate lesson rewrites again: ``select`` -> ``project``
    beside ``project`` -> ``PICK`` is a detour of ``select`` -> ``PICK``), then has the highest
    reliability, then the newest evidence (``updated_at``), then the higher score.
    """
    lessons: dict[int, Lesson] = {}
    pos_of: dict[str, int] = {}
    for i in order:
        it = items[i].item
        if isinstance(it, Lesson) and it.id not in pos_of:
            pos_of[it.id] = i
            lessons[i] = it
    parent = {i: i for i in lessons}

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for i, lesson in lessons.items():
        for other in lesson.conflicts_with:
            j = pos_of.get(other)
            if j is not None:
                parent[find(i)] = find(j)
    clusters: dict[int, list[int]] = {}
    for i in lessons:
        clusters.setdefault(find(i), []).append(i)
    rank = {i: r for r, i in enumerate(order)}
    winners: dict[int, int] = {}
    for members in clusters.values():
        if len(members) > 1:
            others = [l for i, l in lessons.items() if i not in members and l.wrong and l.correct is not None]
            best = max(members, key=lambda i: (not _detour(lessons[i], others), lessons[i].reliability,
                                               lessons[i].updated_at, -rank[i]))
            winners.update({i: best for i in members})
    return winners


def _detour(lesson: Lesson, others: Sequence[Lesson]) -> bool:
    """Whether ``lesson``'s CORRECT side is what one of ``others`` rewrites again (its fix is not the last one)."""
    if not lesson.correct:
        return False
    return any(apply_rewrite(lesson.correct, o.wrong or "", o.correct or "") is not None for o in others)


def _guard_positions(
    items: Sequence[ScoredItem],
    config: MemoryConfig,
    run_of: Callable[[ScoredItem], str | None],
    bucket_of: Callable[[ScoredItem], str | None],
) -> tuple[list[tuple[int, str]], list[tuple[str, str]]]:
    """Positions of the items that pass the guards (with a reason), in score order, and the drops.

    Each item's id and negated score are read once (``item_id`` is a property, and an on-error
    retrieval guards ~25 candidates); ``_guard_positions_reference`` is the plain loop it equals.
    """
    ids = [it.item_id for it in items]
    neg = [-it.score for it in items]
    order = sorted(range(len(items)), key=neg.__getitem__)  # stable: ties keep input order
    dropped: list[tuple[str, str]] = []
    seen: set[str] = set()
    live: list[int] = []
    linked = False
    for i in order:
        item_id = ids[i]
        if item_id in seen:
            dropped.append((item_id, "duplicate"))
            continue
        seen.add(item_id)
        it = items[i].item
        if isinstance(it, Lesson):
            if it.status not in RETRIEVABLE_STATUSES:
                dropped.append((item_id, f"status:{it.status}"))
                continue
            linked = linked or bool(it.conflicts_with)
        live.append(i)
    winners = _conflict_winners(items, live) if linked else {}  # no link, no cluster of two
    bucket_cap, run_cap = config.retrieval.tag_bucket_cap, config.retrieval.per_run_cap
    per_bucket: dict[str, int] = {}
    per_run: dict[str, int] = {}
    kept: list[tuple[int, str]] = []
    plain = bucket_of is default_bucket_of and run_of is default_run_of
    for i in live:
        item = items[i]
        won = winners.get(i)
        if won is not None and won != i:
            dropped.append((ids[i], f"conflict_loss:{ids[won]}"))
            continue
        it = item.item
        if plain and isinstance(it, Lesson):  # ``default_bucket_of`` and ``default_run_of``, one isinstance
            tags, runs = it.tags, it.provenance.run_ids
            bucket = (f"{tags[0]}|{it.wrong}" if it.wrong else tags[0]) if tags else None
            run = runs[0] if len(runs) == 1 else None
        else:
            bucket, run = bucket_of(item), run_of(item)
        if bucket is not None and per_bucket.get(bucket, 0) >= bucket_cap:
            dropped.append((ids[i], f"tag_bucket_cap:{bucket}"))
            continue
        if run is not None and per_run.get(run, 0) >= run_cap:
            dropped.append((ids[i], f"per_run_cap:{run}"))
            continue
        why = "guards:passed"
        if bucket is not None:
            per_bucket[bucket] = n = per_bucket.get(bucket, 0) + 1
            why += f", bucket {bucket} {n}/{bucket_cap}"
        if run is not None:
            per_run[run] = n = per_run.get(run, 0) + 1
            why += f", run {run} {n}/{run_cap}"
        if won is not None:
            why += ", won conflict cluster"
        kept.append((i, why))
    return kept, dropped


def _guard_positions_reference(
    items: Sequence[ScoredItem],
    config: MemoryConfig,
    run_of: Callable[[ScoredItem], str | None],
    bucket_of: Callable[[ScoredItem], str | None],
) -> tuple[list[tuple[int, str]], list[tuple[str, str]]]:
    """``_guard_positions`` as the obvious loop (the reference it is tested against)."""
    order = sorted(range(len(items)), key=lambda i: -items[i].score)  # stable: ties keep input order
    dropped: list[tuple[str, str]] = []
    seen: set[str] = set()
    live: list[int] = []
    for i in order:
        item = items[i]
        if item.item_id in seen:
            dropped.append((item.item_id, "duplicate"))
            continue
        seen.add(item.item_id)
        if isinstance(item.item, Lesson) and not item.item.retrievable:
            dropped.append((item.item_id, f"status:{item.item.status}"))
            continue
        live.append(i)
    winners = _conflict_winners(items, live)
    per_bucket: Counter[str] = Counter()
    per_run: Counter[str] = Counter()
    kept: list[tuple[int, str]] = []
    for i in live:
        item = items[i]
        if i in winners and winners[i] != i:
            dropped.append((item.item_id, f"conflict_loss:{items[winners[i]].item_id}"))
            continue
        bucket, run = bucket_of(item), run_of(item)
        if bucket is not None and per_bucket[bucket] >= config.retrieval.tag_bucket_cap:
            dropped.append((item.item_id, f"tag_bucket_cap:{bucket}"))
            continue
        if run is not None and per_run[run] >= config.retrieval.per_run_cap:
            dropped.append((item.item_id, f"per_run_cap:{run}"))
            continue
        parts = ["guards:passed"]
        if bucket is not None:
            per_bucket[bucket] += 1
            parts.append(f"bucket {bucket} {per_bucket[bucket]}/{config.retrieval.tag_bucket_cap}")
        if run is not None:
            per_run[run] += 1
            parts.append(f"run {run} {per_run[run]}/{config.retrieval.per_run_cap}")
        if i in winners:
            parts.append("won conflict cluster")
        kept.append((i, ", ".join(parts)))
    return kept, dropped


_PLAIN_COPY = (
    not ScoredItem.__pydantic_post_init__
    and not ScoredItem.__pydantic_root_model__
    and ScoredItem.model_config.get("extra") != "allow"
    and not ScoredItem.__private_attributes__
)
"""Whether ``_with_reason`` may copy the instance state itself; else it calls ``model_copy``."""


def _with_reason(item: ScoredItem, reason: str) -> ScoredItem:
    """``item.model_copy(update={"reasons": [*item.reasons, reason]})``: the same instance state (a shallow copy
    of ``__dict__`` with the new list, ``reasons`` added to the fields set), written without ``model_copy``'s
    generic path (a retrieval copies 3-7 items twice)."""
    if not _PLAIN_COPY:
        return item.model_copy(update={"reasons": [*item.reasons, reason]})
    copy = ScoredItem.__new__(ScoredItem)
    state = dict(item.__dict__)
    state["reasons"] = [*item.reasons, reason]
    object.__setattr__(copy, "__dict__", state)
    object.__setattr__(copy, "__pydantic_fields_set__", item.__pydantic_fields_set__ | {"reasons"})
    object.__setattr__(copy, "__pydantic_extra__", None)
    object.__setattr__(copy, "__pydantic_private__", None)
    return copy


def apply_guards(
    items: Sequence[ScoredItem],
    config: MemoryConfig = DEFAULT_CONFIG,
    *,
    run_of: Callable[[ScoredItem], str | None] = default_run_of,
    bucket_of: Callable[[ScoredItem], str | None] = default_bucket_of,
) -> tuple[list[ScoredItem], list[tuple[str, str]]]:
    """Apply the retrieval guards of design.md §5.4, in score order.

    - Suppressed and archived lessons are dropped (``"status:<status>"``).
    - A repeated item id keeps only its best-scored copy (``"duplicate"``).
    - Conflict clusters (lessons linked by ``conflicts_with``, transitively, among
      these candidates) keep one lesson: the highest reliability, then the newest
      evidence (``updated_at``). Losers are reported as ``"conflict_loss:<winner id>"``
      so the caller can count conflict losses (design.md §6 suppression).
    - At most ``tag_bucket_cap`` items per bucket (``"tag_bucket_cap:<bucket>"``) and
      at most ``per_run_cap`` from any one earlier run (``"per_run_cap:<run>"``).
      Items whose bucket or run is None are not capped.

    Args:
        items: Scored candidates, in any order.
        config: Supplies the caps.
        run_of: The earlier run an item came from (default: ``default_run_of``).
        bucket_of: An item's tag bucket (default: ``default_bucket_of``).

    Returns:
        The kept items in score order, each a copy with a reason appended, and the
        ``(item id, why)`` pairs of the dropped ones.
    """
    kept, dropped = _guard_positions(items, config, run_of, bucket_of)
    return [_with_reason(items[i], why) for i, why in kept], dropped


# --------------------------------------------------------------------------- selection


def _select(
    items: Sequence[ScoredItem],
    vectors: npt.ArrayLike | None,
    k: int,
    config: MemoryConfig,
    selector: Selector,
    run_of: Callable[[ScoredItem], str | None],
    bucket_of: Callable[[ScoredItem], str | None],
    vectors_of: Callable[[list[ScoredItem]], npt.ArrayLike] | None = None,
) -> tuple[list[ScoredItem], list[tuple[str, str]]]:
    matrix = None if vectors is None else np.asarray(vectors, dtype=np.float64)
    if matrix is not None and (matrix.ndim != 2 or matrix.shape[0] != len(items)):
        raise ValueError(f"vectors must have one row per item ({len(items)}), got shape {matrix.shape}")
    kept, dropped = _guard_positions(items, config, run_of, bucket_of)
    if not kept or k <= 0:
        return [], dropped
    positions = [i for i, _ in kept]
    if matrix is None and vectors_of is not None:
        # Vectors only for the survivors: the guards usually drop most candidates.
        survivors = np.asarray(vectors_of([items[i] for i in positions]), dtype=np.float64)
        if survivors.ndim != 2 or survivors.shape[0] != len(positions):
            raise ValueError(f"vectors_of must return one row per survivor ({len(positions)}), got {survivors.shape}")
        sim = similarity_matrix(survivors)
    else:
        # No vectors: identity similarity, so MMR's diversity term is 0 and score order is kept.
        sim = np.eye(len(positions)) if matrix is None else similarity_matrix(matrix[positions])
    picks = selector([items[i].score for i in positions], sim, k, config.retrieval.mmr_lambda)
    out = []
    for rank, p in enumerate(picks, start=1):
        i, why = kept[p]
        out.append(_with_reason(items[i], f"{why}; mmr rank {rank}"))
    return out, dropped


def select(
    items: Sequence[ScoredItem],
    *,
    vectors: npt.ArrayLike | None,
    k: int,
    config: MemoryConfig = DEFAULT_CONFIG,
    run_of: Callable[[ScoredItem], str | None] = default_run_of,
    bucket_of: Callable[[ScoredItem], str | None] = default_bucket_of,
) -> list[ScoredItem]:
    """Guards, then MMR over the survivors, then the first ``k`` (design.md §5.4-5.5).

    Args:
        items: Scored candidates.
        vectors: One embedding row per item of ``items`` (same order), for MMR's
            similarity; None means no similarity is known (identity), so MMR keeps
            score order.
        k: The budget K' (see ``budget``).
        config: Supplies the caps and ``mmr_lambda``.
        run_of: As in ``apply_guards``.
        bucket_of: As in ``apply_guards``.

    Returns:
        Up to ``k`` items in MMR pick order, each a copy with its reasons.
    """
    return _select(items, vectors, k, config, mmr_select, run_of, bucket_of)[0]


def select_with_drops(
    items: Sequence[ScoredItem],
    *,
    vectors: npt.ArrayLike | None,
    k: int,
    config: MemoryConfig = DEFAULT_CONFIG,
    run_of: Callable[[ScoredItem], str | None] = default_run_of,
    bucket_of: Callable[[ScoredItem], str | None] = default_bucket_of,
    vectors_of: Callable[[list[ScoredItem]], npt.ArrayLike] | None = None,
) -> tuple[list[ScoredItem], list[tuple[str, str]]]:
    """``select`` that also returns what the guards dropped, as ``(id, why)`` pairs.

    With ``vectors=None`` and ``vectors_of`` given, MMR's vectors are computed only for
    the items that pass the guards (``vectors_of(survivors)``, one row each, in order).
    """
    return _select(items, vectors, k, config, mmr_select, run_of, bucket_of, vectors_of)


def select_reference(
    items: Sequence[ScoredItem],
    *,
    vectors: npt.ArrayLike | None,
    k: int,
    config: MemoryConfig = DEFAULT_CONFIG,
    run_of: Callable[[ScoredItem], str | None] = default_run_of,
    bucket_of: Callable[[ScoredItem], str | None] = default_bucket_of,
) -> list[ScoredItem]:
    """``select`` with the slow reference MMR; for tests."""
    return _select(items, vectors, k, config, mmr_select_reference, run_of, bucket_of)[0]


# --------------------------------------------------------------------------- tool sheet (pre-run)


def sheet_eligible(lesson: Lesson, tool: str | None) -> bool:
    """True for a lesson that may join the tool sheet: a live rewrite scoped to ``tool``, not net harmful.

    A rewrite (WRONG -> CORRECT) comes from a failure and the retry the tool accepted,
    so it is a verified fact about the tool's dialect; a text rule (``applies_when`` set) is an
    observed outcome of an enumerated action, equally a fact about the tool; one measured to harm more often
    than it helped (``harmed > helped``) earns no place beyond the K' relevant lessons.
    Task-scoped lessons stay with their task.

    Example:
        >>> from langmem_plus.records import LessonScope
        >>> l = Lesson(id="l", namespace=("ns",), rule_text="r", wrong="==", correct="=",
        ...            scope=LessonScope(tool="gridtool"))
        >>> sheet_eligible(l, "gridtool"), sheet_eligible(l, "fluxtool")
        (True, False)
    """
    return (
        tool is not None
        and lesson.retrievable
        and lesson.scope.tool == tool
        and lesson.scope.level != "task"
        and ((bool(lesson.wrong) and lesson.correct is not None) or lesson.applies_when is not None)
        and lesson.stats.harmed <= lesson.stats.helped
    )


def sheet_prior(lesson: Lesson) -> tuple[int, int, int, float]:
    """How proven a lesson is across its tool, larger first: promoted, net helped runs, breadth, reliability.

    Pure evidence, no relevance: it ranks the lessons a task's own history says nothing about.
    Breadth counts the runs that taught a text rule (``applies_when`` set): an outcome seen in
    many runs is better established than one seen once; it is 0 for every other lesson.
    """
    breadth = len(lesson.provenance.run_ids) if lesson.applies_when is not None else 0
    return (int(lesson.status == "promoted"), lesson.stats.helped - lesson.stats.harmed, breadth, lesson.reliability)


def sheet_fill(
    items: Sequence[ScoredItem],
    chosen: Sequence[ScoredItem],
    *,
    tool: str | None,
    config: MemoryConfig = DEFAULT_CONFIG,
    run_of: Callable[[ScoredItem], str | None] = default_run_of,
    bucket_of: Callable[[ScoredItem], str | None] = default_bucket_of,
) -> list[ScoredItem]:
    """The tool sheet: lessons shown before a run beyond the K' chosen ones (refinement of design.md §5.6).

    K' is a floor picked by relevance to the task's own history. A task whose family never
    showed a mistake (an ``==`` in an aggregate task) has nothing pointing at the lesson
    that fixes it, yet a tool's rewrite rules are one short line each: past K', the other
    candidates (vector neighbours in scope, graph neighbours of the task's tool and
    domain, fingerprint matches) that pass the guards and are ``sheet_eligible`` for
    ``tool`` follow, most proven first (``sheet_prior``), then by score, at most
    ``config.context.pre_run_sheet_max``. The caller caps the whole list at ``max_context_tokens``
    in this order, so the sheet only spends what the budget leaves.

    Args:
        items: All scored candidates of the retrieval (as given to ``select``).
        chosen: What ``select`` chose (and anything else already shown).
        tool: The task's tool; None gives no sheet.
        config: Supplies the guards' caps and ``pre_run_sheet_max``.
        run_of: As in ``apply_guards``.
        bucket_of: As in ``apply_guards``.

    Returns:
        The extra lessons in sheet order, each a copy with its reasons.
    """
    if tool is None or config.context.pre_run_sheet_max <= 0:
        return []
    kept, _ = _guard_positions(items, config, run_of, bucket_of)  # guards hold for chosen + sheet together
    taken = {c.item_id for c in chosen}
    pool: list[tuple[int, str]] = []
    for i, why in kept:
        lesson = items[i].item
        if items[i].item_id not in taken and isinstance(lesson, Lesson) and sheet_eligible(lesson, tool):
            pool.append((i, why))

    def key(p: tuple[int, str]) -> tuple[int, int, int, float, float]:
        lesson = items[p[0]].item
        assert isinstance(lesson, Lesson)
        promoted, net, breadth, rel = sheet_prior(lesson)
        return (-promoted, -net, -breadth, -rel, -items[p[0]].score)

    pool.sort(key=key)  # stable: ties keep score order
    return [
        _with_reason(items[i], f"{why}; tool sheet rank {r}")
        for r, (i, why) in enumerate(pool[: config.context.pre_run_sheet_max], start=1)
    ]


def avoidance_reminder(items: Sequence[ScoredItem], chosen: Sequence[ScoredItem]) -> ScoredItem | None:
    """The best-scored avoidance episode not already chosen: the "+1" of design.md §5.6.

    Args:
        items: All scored candidates of the retrieval (the relevant ones).
        chosen: What ``select`` chose.

    Returns:
        A copy of the reminder with a reason appended, or None when no avoidance
        episode is among the candidates beyond those chosen.
    """
    taken = {c.item_id for c in chosen}
    best: ScoredItem | None = None
    for item in items:
        it = item.item
        is_reminder = isinstance(it, Episode) and it.kind == "avoidance" and item.item_id not in taken
        if is_reminder and (best is None or item.score > best.score):
            best = item
    return None if best is None else _with_reason(best, "avoidance reminder (+1, design.md §5.6)")


__all__ = [
    "apply_guards",
    "avoidance_reminder",
    "budget",
    "default_bucket_of",
    "default_run_of",
    "difficulty",
    "select",
    "select_reference",
    "select_with_drops",
    "sheet_eligible",
    "sheet_fill",
    "sheet_prior",
]
