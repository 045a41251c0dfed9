"""What ``add_lessons`` stores: imported lessons with their SimHash and their conflict links (design.md §6)."""

from __future__ import annotations

from collections.abc import Sequence

from langmem_plus.learning.dedup import find_conflicts, lesson_hashes
from langmem_plus.memory.view import MemoryView
from langmem_plus.records import Lesson


def with_simhash(lessons: Sequence[Lesson], bits: int) -> list[Lesson]:
    """Imports carry their SimHash (computed in one batch when missing), so no dedup hashes them again."""
    hashes = iter(lesson_hashes([l for l in lessons if not l.simhash], bits))
    width = (bits + 3) // 4
    return [l if l.simhash else l.model_copy(update={"simhash": format(next(hashes), f"0{width}x")}) for l in lessons]


def link_imported(lessons: Sequence[Lesson], view: MemoryView) -> dict[str, Lesson]:
    """Imported lessons with conflict links to the stored ones and to each other, both ways; every lesson to write.

    A conflict shares a trigger (``find_conflicts``), so only lessons the fingerprint
    index names are compared: linear in the import, not in the store. Stored lessons
    that gain a link come back as records (``MemoryView.as_record``): their evidence stays
    in the log.
    """
    changed: dict[str, Lesson] = {}
    batch_fp: dict[str, set[str]] = {}

    def current(lesson_id: str) -> Lesson | None:
        return changed.get(lesson_id) or view.lessons.get(lesson_id)

    for lesson in lessons:
        near: set[str] = set()
        for fp in lesson.triggers:
            near |= view.graph.lessons_for_fingerprint(fp) | batch_fp.get(fp, set())
        near.discard(lesson.id)
        pool = [l for l in map(current, sorted(near)) if l is not None]
        rivals = find_conflicts(lesson, pool)
        lesson = lesson.model_copy(update={"conflicts_with": sorted({*lesson.conflicts_with, *rivals})})
        for rid in rivals:
            rival = current(rid)
            if rival is not None and lesson.id not in rival.conflicts_with:
                changed[rid] = rival.model_copy(update={"conflicts_with": sorted({*rival.conflicts_with, lesson.id})})
        changed[lesson.id] = lesson
        for fp in lesson.triggers:
            batch_fp.setdefault(fp, set()).add(lesson.id)
    return {i: view.as_record(l) for i, l in changed.items()}


__all__ = ["link_imported", "with_simhash"]
