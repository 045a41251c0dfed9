"""SemanticMemory: facts as a small knowledge graph with belief states (seed 002 "Semantic Memory").

A namespace's facts are (subject, relation, object) edges between entities. Both live
in the memory's Chroma, in the namespace's ``facts`` and ``entities`` collections
(embedded by the fact's text and the entity's labels), and a NetworkX multigraph of
entities beside the lesson graph is rebuilt from them on open. Each fact has a
belief state (``held``, ``contested``, ``retracted``, ``unknown``), a confidence and
every piece of evidence ever given for or against it (``memory_types.beliefs``).

Contradictions are reconciled, never overwritten: a claim on a *functional* relation
(one object per subject, e.g. ``located_in``) with a different object, or the
*opposite* relation on the same pair (``accepts`` against ``rejects``), joins a group
of rival positions that ``beliefs.settle`` resolves into held / contested / retracted
by the seed's evidence strengths and its 0.3 margin.

One handle per namespace sees its own writes at once; writes by another process are
seen after reopening (the facts are not part of the lesson snapshot).

Example:
    >>> import tempfile
    >>> from langmem_plus import LearningMemory
    >>> memory = LearningMemory.open(tempfile.mkdtemp(), namespace=("demo",))
    >>> facts = memory.semantic()
    >>> facts.learn(("The fridge", "contains", "milk")).state
    'held'
    >>> [hit.fact.text for hit in facts.query("what is in the fridge", limit=1)]
    ['fridge contains milk']
    >>> memory.close()
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import networkx as nx
import numpy as np

from langmem_plus._text import stable_id
from langmem_plus.config import DEFAULT_CONFIG, MemoryConfig
from langmem_plus.errors import InvalidRecord
from langmem_plus.memory_types.beliefs import (
    confidence,
    display_label,
    evidence_key,
    normalize_label,
    normalize_relation,
    settle,
)
from langmem_plus.memory_types.fact_sources import Claim, claims_from_lesson, facts_from_observation, lesson_evidence
from langmem_plus.records import BeliefChange, Entity, Evidence, Fact, Lesson, Namespace
from langmem_plus.store.audit import AuditLog
from langmem_plus.store.chroma import ChromaStore

DEFAULT_FUNCTIONAL_RELATIONS: tuple[str, ...] = (
    "corrected_to", "has_state", "instance_of", "located_in", "located_on", "owned_by"
)
"""Relations with one object per subject: a different object contradicts (a thing is in one place,
in one state; a wrong pattern has one fix). ``contains``, ``is_a``, ``accepts`` ... may have many."""

DEFAULT_OPPOSITE_RELATIONS: tuple[tuple[str, str], ...] = (("accepts", "rejects"), ("enables", "prevents"))
"""Relation pairs that contradict on the same subject and object: a tool cannot accept and reject ``keep``."""

ALL_STATES: tuple[str, ...] = ("held", "contested", "retracted", "unknown")
"""Every belief state."""

Triple = tuple[str, str, str]


@dataclass(frozen=True)
class FactHit:
    """A fact found by ``query``: its relevance to the query, its score, and how it was reached."""

    fact: Fact
    relevance: float
    """Cosine of the fact's text to the query, or the hop share of the hit it was reached from."""
    score: float
    """relevance x max(confidence, ``semantic_confidence_floor``) (seed 002 ``query``)."""
    hop: int = 0
    """0: a vector hit; 1: reached through the graph from ``via``."""
    via: str | None = None
    """Id of the fact whose entity led here, for hop 1."""


@dataclass(frozen=True)
class Traversal:
    """Where a ``traverse`` path ended and the facts it went along."""

    entity: Entity
    path: list[Fact] = field(default_factory=list)


class FactLog(Protocol):
    """Where a semantic memory shares its facts' evidence and entities' aliases with the other writers.

    A fact's sources and an entity's aliases are grow-only sets: each piece a writer adds
    is appended to the shared log, and every memory folds the log over the records it
    reads, so nothing a writer added is lost to another's record write
    (``memory.facts.SharedFacts``).
    """

    def fold(self, fact: Fact) -> Fact:
        """``fact`` with every logged piece of its evidence among its sources."""
        ...

    def fold_entity(self, entity: Entity) -> Entity:
        """``entity`` with every logged alias among its aliases."""
        ...

    def append(self, given: Sequence[tuple[str, Evidence]]) -> None:
        """Share evidence just given, as (fact id, evidence) pairs."""
        ...

    def append_aliases(self, aliases: Sequence[tuple[str, str]]) -> None:
        """Share aliases just added, as (entity id, normalised alias) pairs."""
        ...

    def take_changed(self) -> tuple[set[str], set[str]]:
        """Ids of the facts and of the entities whose logged additions changed since the last call."""
        ...


class SemanticMemory:
    """A namespace's facts and entities with belief states (seed 002). Get one with ``LearningMemory.semantic()``.

    Args:
        store: The namespace's ChromaStore (facts never leave its namespace).
        config: Evidence strengths, the contradiction margin and the query numbers.
        functional: Relations with one object per subject.
        opposites: Relation pairs that contradict on the same subject and object.
        audit: Where belief changes are logged (the memory's audit log), if anywhere.
        clock: Source of "now" in epoch seconds.
    """

    def __init__(
        self,
        store: ChromaStore,
        *,
        config: MemoryConfig = DEFAULT_CONFIG,
        functional: Iterable[str] = DEFAULT_FUNCTIONAL_RELATIONS,
        opposites: Iterable[tuple[str, str]] = DEFAULT_OPPOSITE_RELATIONS,
        audit: AuditLog | None = None,
        clock: Callable[[], float] = time.time,
        log: FactLog | None = None,
        lock: threading.RLock | None = None,
    ) -> None:
        self.store, self.config, self.audit, self.clock, self.log = store, config, audit, clock, log
        self._lock = lock if lock is not None else threading.RLock()
        self.functional = frozenset(normalize_relation(r) for r in functional)
        self.opposites: dict[str, str] = {}
        for a, b in opposites:
            self.opposites[normalize_relation(a)] = normalize_relation(b)
            self.opposites[normalize_relation(b)] = normalize_relation(a)
        self.graph: nx.MultiDiGraph = nx.MultiDiGraph()
        """Entity ids as nodes, one edge per fact (key: fact id, attribute ``relation``)."""
        self._entities: dict[str, Entity] = {}
        self._facts: dict[str, Fact] = {}
        self._by_key: dict[tuple[str, str], str] = {}
        """(scope, normalised label or alias) -> entity id."""
        for entity in store.all("entities"):
            if isinstance(entity, Entity):
                self._index_entity(log.fold_entity(entity) if log is not None else entity)
        for fact in store.all("facts"):
            if isinstance(fact, Fact):
                self._index_fact(fact)
        if log is not None:
            with self._lock:
                facts, entities = log.take_changed()
                self._absorb(set(self._facts) | facts, entities)

    @property
    def namespace(self) -> Namespace:
        """The namespace every fact and entity belongs to."""
        return self.store.namespace

    def __len__(self) -> int:
        return len(self._facts)

    # ------------------------------------------------------------------ other writers
    def _sync(self) -> None:
        """Fold in the evidence and aliases other writers logged since the last look (``FactLog``)."""
        if self.log is not None:
            with self._lock:
                self._absorb(*self.log.take_changed())

    def _absorb(self, fact_ids: set[str], entity_ids: set[str]) -> None:
        """Entities and facts with what was logged for them folded in; the facts' groups settled again (in memory)."""
        if self.log is None or not (fact_ids or entity_ids):
            return
        missing = sorted(i for i in fact_ids if i not in self._facts)
        fetched = {f.id: f for f in self.store.get("facts", missing) if isinstance(f, Fact)} if missing else {}
        wanted = entity_ids | ({e for f in fetched.values() for e in (f.subject_id, f.object_id)} - set(self._entities))
        unknown = sorted(wanted - set(self._entities))
        read = {e.id: e for e in self.store.get("entities", unknown) if isinstance(e, Entity)} if unknown else {}
        for eid in sorted(wanted):
            entity = self._entities.get(eid) or read.get(eid)
            if entity is not None:
                self._index_entity(self.log.fold_entity(entity))
        changed: list[str] = []
        for fid in sorted(fact_ids):
            fact = self._facts.get(fid) or fetched.get(fid)
            if fact is None:  # a record is written before its evidence is logged: this cannot be, but never fail
                continue
            folded = self.log.fold(fact)
            if fid not in self._facts or folded.sources != self._facts[fid].sources:
                self._index_fact(folded)
                changed.append(fid)
        now = self.clock()
        for fid in changed:
            self._reconcile(self._facts[fid], now)

    # ------------------------------------------------------------------ indexes
    def _index_entity(self, entity: Entity) -> None:
        self._entities[entity.id] = entity
        self.graph.add_node(entity.id)
        for key in (entity.key, *entity.aliases):
            self._by_key.setdefault((entity.scope, key), entity.id)

    def _index_fact(self, fact: Fact) -> None:
        if fact.id in self._facts:
            self.graph.remove_edge(self._facts[fact.id].subject_id, self._facts[fact.id].object_id, key=fact.id)
        self._facts[fact.id] = fact
        self.graph.add_edge(fact.subject_id, fact.object_id, key=fact.id, relation=fact.relation)

    # ------------------------------------------------------------------ entities
    def entity(self, label: str, *, kind: str = "thing", scope: str = "") -> Entity | None:
        """The entity found by this label or one of its aliases, or None."""
        self._sync()
        eid = self._by_key.get((scope, normalize_label(label, kind=kind)))
        return self._entities.get(eid) if eid else None

    def _get_or_create(self, label: str, kind: str, scope: str, new: dict[str, Entity]) -> Entity:
        """Seed 002 ``get_or_create_node``: by normalised label, then alias; else a new node."""
        key = normalize_label(label, kind=kind)
        if not key:
            raise InvalidRecord(f"an entity label must have a word in it, got {label!r}")
        scope = scope if kind == "token" else ""
        found = self.entity(label, kind=kind, scope=scope)
        if found is not None:
            return found
        entity = Entity(
            id=stable_id("ent", *self.namespace, scope, key), namespace=self.namespace, label=display_label(label, kind=kind),
            key=key, kind=kind, scope=scope, created_at=self.clock(),
        )
        self._index_entity(entity)
        new[entity.id] = entity
        return entity

    def add_alias(self, label: str, alias: str, *, kind: str = "thing", scope: str = "") -> Entity:
        """Make ``alias`` find the entity labelled ``label`` (created if missing); returns the entity.

        Raises:
            InvalidRecord: The alias already names another entity.
        """
        with self._lock:
            return self._add_alias(label, alias, kind, scope)

    def _add_alias(self, label: str, alias: str, kind: str, scope: str) -> Entity:
        self._sync()
        new: dict[str, Entity] = {}
        entity = self._get_or_create(label, kind, scope, new)
        key = normalize_label(alias, kind=kind)
        owner = self._by_key.get((entity.scope, key))
        if owner is not None and owner != entity.id:
            raise InvalidRecord(f"alias {alias!r} already names {self._entities[owner].label!r}")
        added = key != entity.key and key not in entity.aliases
        if added:
            entity = entity.model_copy(update={"aliases": [*entity.aliases, key]})
            self._index_entity(entity)
            new[entity.id] = entity
        self.store.upsert("entities", list(new.values()))
        if added and self.log is not None:
            self.log.append_aliases([(entity.id, key)])
        return entity

    # ------------------------------------------------------------------ learning
    def learn(self, fact: Claim | Triple, evidence: Evidence | Sequence[Evidence] = ()) -> Fact:
        """Learn a fact with its evidence and reconcile it with its rivals (seed 002 ``learn``).

        Args:
            fact: A ``Claim`` or a (subject, relation, object) triple.
            evidence: More evidence; with none at all, the fact is ``observed`` by ``"user"``.

        Returns:
            The fact as stored after reconciliation (its rivals may have changed too).
        """
        return self.learn_many([fact], evidence)[0]

    def learn_many(self, facts: Sequence[Claim | Triple], evidence: Evidence | Sequence[Evidence] = ()) -> list[Fact]:
        """``learn`` for several facts with one write of the facts and entities touched (one writer at a time)."""
        with self._lock:
            return self._learn_many(facts, evidence)

    def _learn_many(self, facts: Sequence[Claim | Triple], evidence: Evidence | Sequence[Evidence]) -> list[Fact]:
        self._sync()
        extra = (evidence,) if isinstance(evidence, Evidence) else tuple(evidence)
        given: list[tuple[str, Evidence]] = []
        new_entities: dict[str, Entity] = {}
        touched: dict[str, Fact] = {}
        learned: list[str] = []
        now = self.clock()
        for item in facts:
            claim = item if isinstance(item, Claim) else Claim(*item)
            claim_evidence = (*claim.evidence, *extra) or (Evidence(kind="observed", source="user", ts=now),)
            subject = self._get_or_create(claim.subject, claim.subject_kind, claim.scope, new_entities)
            obj = self._get_or_create(claim.object, claim.object_kind, claim.scope, new_entities)
            relation = normalize_relation(claim.relation)
            if not relation:
                raise InvalidRecord(f"a relation must have a word in it, got {claim.relation!r}")
            fid = stable_id("fact", *self.namespace, subject.id, relation, obj.id)
            old = self._facts.get(fid)
            base = old or Fact(
                id=fid, namespace=self.namespace, subject=subject.label, relation=relation, object=obj.label,
                subject_id=subject.id, object_id=obj.id, created_at=now, updated_at=now,
            )
            kept = {evidence_key(e) for e in base.sources}
            fresh = [e for e in claim_evidence if evidence_key(e) not in kept]
            learned.append(fid)
            if old is not None and not fresh:
                continue  # nothing new: no write
            given += [(fid, e) for e in fresh]
            updated = base.model_copy(update={"sources": [*base.sources, *fresh], "updated_at": now})
            self._index_fact(updated)
            touched.update(self._reconcile(updated, now))
        self.store.upsert("entities", list(new_entities.values()))
        self.store.upsert("facts", list(touched.values()))
        if self.log is not None and given:
            self.log.append(given)  # after the records: a reader that sees the evidence finds its fact
        return [self._facts[fid] for fid in learned]

    def retract(self, fact: Claim | Triple, *, reason: str, source: str = "user", kind: str = "observed") -> Fact:
        """Give evidence against a fact (kept with the rest); it is retracted once that outweighs its support."""
        ev = Evidence(kind=kind, source=source, detail=reason, against=True, ts=self.clock())  # type: ignore[arg-type]
        return self.learn(fact, ev)

    def _rivals(self, fact: Fact) -> list[Fact]:
        """Facts contradicting ``fact``: same subject and functional relation with another object, or the opposite relation."""
        out: list[Fact] = []
        opposite = self.opposites.get(fact.relation)
        for _, target, fid in self.graph.out_edges(fact.subject_id, keys=True):
            other = self._facts[fid]
            if fid == fact.id:
                continue
            if fact.relation in self.functional and other.relation == fact.relation and target != fact.object_id:
                out.append(other)
            elif opposite is not None and other.relation == opposite and target == fact.object_id:
                out.append(other)
        return out

    def _group(self, fact: Fact) -> dict[str, Fact]:
        """The connected group of mutually contradicting facts around ``fact``."""
        group = {fact.id: fact}
        frontier = [fact]
        while frontier:
            for rival in self._rivals(frontier.pop()):
                if rival.id not in group:
                    group[rival.id] = rival
                    frontier.append(rival)
        return group

    def _reconcile(self, fact: Fact, now: float) -> dict[str, Fact]:
        """Settle the group around ``fact`` (seed 002 ``reconcile``); returns every fact written."""
        group = self._group(fact)
        outcome = settle({fid: f.sources for fid, f in group.items()}, self.config)
        written: dict[str, Fact] = {fact.id: fact}
        for fid, (state, reason) in outcome.items():
            current = group[fid]
            rivals = sorted(set(group) - {fid})
            conf = confidence(current.sources, self.config)
            if state == current.state and rivals == current.rivals and conf == current.confidence and fid != fact.id:
                continue
            update: dict[str, Any] = {"state": state, "rivals": rivals, "confidence": conf, "reason": reason}
            if state != current.state:
                change = BeliefChange(old=current.state, new=state, reason=reason, ts=now)
                update["history"] = [*current.history, change]
                update["updated_at"] = now
                if self.audit is not None and current.state != "unknown":  # revisions, not every new fact
                    self.audit.write("belief", fact_id=fid, fact=current.text, old=current.state, new=state, reason=reason)
            revised = current.model_copy(update=update)
            self._index_fact(revised)
            written[fid] = revised
        return written

    def learn_from_lessons(
        self, lessons: Iterable[Lesson], *, promoted: Iterable[str] = (), utilities: dict[str, float] | None = None,
        run_id: str | None = None,
    ) -> list[Fact]:
        """Facts stated by lessons whose fix was verified in a run: promoted, or helped with positive utility."""
        promoted_ids, utilities = set(promoted), utilities or {}
        claims: list[Claim] = []
        for lesson in lessons:
            ev = lesson_evidence(
                lesson, promoted=lesson.id in promoted_ids, utility=utilities.get(lesson.id), run_id=run_id,
                config=self.config,
            )
            if ev is not None:
                claims += claims_from_lesson(lesson, ev)
        return self.learn_many(claims) if claims else []

    def learn_from_observation(self, text: str, *, source: str | None = None, run_id: str | None = None) -> list[Fact]:
        """Facts a text observation states (``facts_from_observation``, heuristic), as ``observed`` evidence.

        A newer observation of a functional relation (the fridge is open now) supersedes the
        older one: it is given evidence against the rivals it contradicts, kept beside theirs.
        """
        triples = facts_from_observation(text)
        now = self.clock()
        source = source or stable_id("obs", text, repr(now))
        seen = Evidence(kind="observed", source=source, detail=text, run_id=run_id, ts=now)
        out = self.learn_many(triples, seen)
        against = Evidence(kind="observed", source=source, detail=text, against=True, run_id=run_id, ts=now)
        stale = {r.id: r for f in out if f.relation in self.functional for r in self._rivals(f) if r.state != "retracted"}
        if stale:
            self.learn_many([(r.subject, r.relation, r.object) for r in stale.values()], against)
        return [self._facts[f.id] for f in out]

    # ------------------------------------------------------------------ reading
    def facts(
        self, subject: str | None = None, relation: str | None = None, *, states: Iterable[str] = ALL_STATES
    ) -> list[Fact]:
        """Facts, optionally of one subject (label or alias) and relation, in the given states, oldest first."""
        self._sync()
        wanted = frozenset(states)
        subject_ids: set[str] | None = None
        if subject is not None:
            keys = {normalize_label(subject), normalize_label(subject, kind="token")}
            subject_ids = {eid for (_, key), eid in self._by_key.items() if key in keys}
        rel = normalize_relation(relation) if relation is not None else None
        return sorted(
            (
                f for f in self._facts.values()
                if f.state in wanted and (rel is None or f.relation == rel)
                and (subject_ids is None or f.subject_id in subject_ids)
            ),
            key=lambda f: (f.created_at, f.id),
        )

    def get(self, fact_id: str) -> Fact | None:
        """The fact with this id, or None."""
        self._sync()
        return self._facts.get(fact_id)

    def query(
        self,
        text: str,
        limit: int = 5,
        *,
        expand: bool = True,
        states: Iterable[str] = ("held", "contested", "unknown"),
        vector: Sequence[float] | None = None,
    ) -> list[FactHit]:
        """Facts nearest to ``text`` by meaning, with a one-hop expansion through the graph (seed 002 ``query``).

        Candidates are the ``limit x semantic_candidates_factor`` nearest facts by the
        embedding of their text; with ``expand`` the facts touching their subjects and
        objects join, relevant at least ``semantic_hop_decay`` x their hit's relevance.
        Kept: confidence above ``semantic_min_confidence``, or uncertain (contested; and
        retracted, which appear only when ``states`` names them); ranked by relevance x
        max(confidence, ``semantic_confidence_floor``). ``vector``: ``text``'s embedding when the
        caller has it (a retrieval's query vector), so it is not embedded twice.
        """
        self._sync()
        if limit <= 0 or not self._facts:
            return []
        wanted = frozenset(states)
        vector = list(vector) if vector is not None else self.store.embed_query(text)
        k = min(len(self._facts), limit * self.config.semantic.semantic_candidates_factor)
        hits: dict[str, FactHit] = {}
        for fid, cos in self.store.query_ids("facts", vector, n=k):
            if fid in self._facts:
                hits[fid] = self._hit(self._facts[fid], cos, 0, None)
        if expand:
            self._expand(hits, np.asarray(vector, dtype=np.float32))
        kept = [
            h for h in hits.values()
            if h.fact.state in wanted and h.relevance > 0.0
            and (h.fact.confidence > self.config.semantic.semantic_min_confidence or h.fact.state in ("contested", "retracted"))
        ]
        kept.sort(key=lambda h: (-h.score, h.hop, h.fact.id))
        return kept[:limit]

    def _hit(self, fact: Fact, relevance: float, hop: int, via: str | None) -> FactHit:
        score = relevance * max(fact.confidence, self.config.semantic.semantic_confidence_floor)
        return FactHit(fact=fact, relevance=relevance, score=score, hop=hop, via=via)

    def _expand(self, hits: dict[str, FactHit], vector: np.ndarray) -> None:
        """Add the facts one hop from each hit's subject and object (seed 002 ``expand_neighborhood``)."""
        reached: dict[str, tuple[float, str]] = {}
        for hit in list(hits.values()):
            for node in (hit.fact.subject_id, hit.fact.object_id):
                for fid in self._incident(node):
                    share = self.config.semantic.semantic_hop_decay * hit.relevance
                    if fid not in hits and share > reached.get(fid, (-np.inf, ""))[0]:
                        reached[fid] = (share, hit.fact.id)
        if not reached:
            return
        stored = self.store.stored_embeddings("facts", sorted(reached))
        norm = float(np.linalg.norm(vector)) or 1.0
        for fid, (share, via) in reached.items():
            vec = stored.get(fid)
            own = float(vec @ vector) / ((float(np.linalg.norm(vec)) or 1.0) * norm) if vec is not None else 0.0
            hits[fid] = self._hit(self._facts[fid], max(own, share), 1, via)

    def _incident(self, node: str) -> list[str]:
        if node not in self.graph:
            return []
        out = [k for _, _, k in self.graph.out_edges(node, keys=True)]
        return out + [k for _, _, k in self.graph.in_edges(node, keys=True)]

    def traverse(
        self, start: str, path: Sequence[str | tuple[str, str]], *, states: Iterable[str] = ("held",), scope: str = ""
    ) -> list[Traversal]:
        """Follow relations from an entity (seed 002 ``traverse``).

        Args:
            start: Label or alias of the first entity (a ``token`` needs its ``scope``).
            path: Relations to follow in order; ``"rel"`` or ``("rel", "out")`` follows
                subject -> object, ``("rel", "in")`` or ``"~rel"`` object -> subject.
            states: Belief states of the facts that may be followed (held only, by default).
            scope: Scope of a ``token`` start.

        Returns:
            Every entity reached at the end of the path, with the facts followed.
        """
        self._sync()
        wanted = frozenset(states)
        first = self.entity(start) or self.entity(start, kind="token", scope=scope)
        if first is None:
            return []
        current: list[tuple[str, list[Fact]]] = [(first.id, [])]
        for step in path:
            relation, direction = (step[1:], "in") if isinstance(step, str) and step.startswith("~") else (
                (step, "out") if isinstance(step, str) else step
            )
            relation = normalize_relation(relation)
            nxt: list[tuple[str, list[Fact]]] = []
            for node, facts in current:
                edges = self.graph.out_edges(node, keys=True) if direction == "out" else self.graph.in_edges(node, keys=True)
                for src, dst, fid in edges:
                    fact = self._facts[fid]
                    if fact.relation == relation and fact.state in wanted:
                        nxt.append((dst if direction == "out" else src, [*facts, fact]))
            current = nxt
        return [Traversal(entity=self._entities[node], path=facts) for node, facts in current]


__all__ = [
    "ALL_STATES",
    "DEFAULT_FUNCTIONAL_RELATIONS",
    "DEFAULT_OPPOSITE_RELATIONS",
    "FactHit",
    "FactLog",
    "SemanticMemory",
    "Traversal",
]
