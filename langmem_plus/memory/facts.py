"""SharedFacts: a semantic memory's facts' evidence and entities' aliases on the namespace's shared log.

A fact's sources are a grow-only set. Each piece of evidence a writer gives a fact is
appended to the shared log as ``FactEvidence`` beside the fact's record; every memory
folds what the log holds over the fact records it reads (``learning.ledger``), so a
source is never lost to another writer's record write, and a memory sees the facts
other writers learned once it has read their entries (``refresh``, every ``end_run``).
Aliases work the same way (``EntityEvidence``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from langmem_plus.memory.sync import StoreSync
from langmem_plus.memory.view import MemoryView
from langmem_plus.memory_types.beliefs import fact_evidence_key
from langmem_plus.records import Entity, EntityEvidence, Evidence, Fact, FactEvidence


class SharedFacts:
    """``memory_types.semantic.FactLog`` over a memory's view and shared log; call it under the memory's lock."""

    def __init__(self, view: MemoryView, sync: StoreSync) -> None:
        self.view, self.sync = view, sync

    def fold(self, fact: Fact) -> Fact:
        """``fact`` with every logged piece of its evidence among its sources."""
        ledger = self.view.fact_ledger
        return ledger.set_record(fact) if fact.id in ledger else fact

    def fold_entity(self, entity: Entity) -> Entity:
        """``entity`` with every logged alias among its aliases."""
        ledger = self.view.entity_ledger
        return ledger.set_record(entity) if entity.id in ledger else entity

    def append(self, given: Sequence[tuple[str, Evidence]]) -> None:
        """Append evidence just given; numbered after the newest run known, like a run's evidence."""
        self.sync.publish_evidence([
            FactEvidence(fact_id=fid, run_id=fact_evidence_key(fid, ev), run_seq=self.view.last_seq, source=ev,
                         at=ev.ts if math.isfinite(ev.ts) else 0.0)  # a NaN stamp is the caller's; the log's must order
            for fid, ev in given
        ])

    def append_aliases(self, aliases: Sequence[tuple[str, str]]) -> None:
        """Append aliases just added, keyed by the alias (the same alias twice is one entry)."""
        seq, at = self.view.last_seq, self.sync.clock()
        self.sync.publish_evidence([
            EntityEvidence(entity_id=eid, run_id=f"alias:{alias}", run_seq=seq, at=at, alias=alias) for eid, alias in aliases
        ])

    def take_changed(self) -> tuple[set[str], set[str]]:
        """Facts and entities whose logged additions changed since the last call."""
        view = self.view
        facts, entities = view.facts_touched, view.entities_touched
        view.facts_touched, view.entities_touched = set(), set()
        return facts, entities


__all__ = ["SharedFacts"]
