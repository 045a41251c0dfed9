"""Belief management, pure: label normalisation, evidence strength, and settling rival facts (seed 002).

Seed 002 ("Belief Management") weighs a new claim against a held one by the strength
of its evidence kind (observed 0.95, computed 0.9, reported 0.4 + 0.3 x trust, ...):
a claim stronger by more than 0.3 supersedes the old one, one weaker by more than 0.3
is noted and rejected, and claims in between are *contested*. We apply that rule as a
deterministic fold over every piece of evidence ever given for each position, so a
later observation can settle a contested belief, nothing is lost, and the outcome does
not depend on the order evidence arrived in:

- a position's *support* is the summed strength of its distinct pieces of evidence
  (one per kind and source) minus the summed strength of the evidence against it;
- alone, a position is ``held`` with positive support, ``retracted`` when evidence
  against outweighs it, ``unknown`` with no evidence of any strength;
- among rivals (facts that contradict each other), the strongest is ``held`` when it
  leads every other by more than ``semantic_contradiction_margin`` (the others
  ``retracted``); otherwise every position within the margin of the strongest is
  ``contested`` and the ones further behind are ``retracted``.

Example:
    >>> from langmem_plus.records import Evidence
    >>> old = [Evidence(kind="observed", source="run-1")]
    >>> new = [Evidence(kind="observed", source="run-2")]
    >>> sorted((k, s) for k, (s, _) in settle({"a": old, "b": new}).items())
    [('a', 'contested'), ('b', 'contested')]
    >>> old.append(Evidence(kind="observed", source="run-3"))
    >>> sorted((k, s) for k, (s, _) in settle({"a": old, "b": new}).items())
    [('a', 'held'), ('b', 'retracted')]
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence

from langmem_plus._text import stable_hash
from langmem_plus.config import DEFAULT_CONFIG, MemoryConfig
from langmem_plus.records import EntityEvidence, Entity, EpistemicState, Evidence, Fact, FactEvidence

UNLISTED_KIND_STRENGTH = 0.5
"""Strength of an evidence kind the config does not list (seed 002 ``epistemic_strength``: ``_ => 0.5``)."""

CASE_SENSITIVE_KINDS = frozenset({"token"})
"""Entity kinds whose labels keep their case: tool syntax, where ``sum`` and ``SUM`` differ."""

_ARTICLES = re.compile(r"^(?:the|a|an|some)\s+", re.IGNORECASE)
_EDGE_PUNCT = re.compile(r"^[\s\"'`.,;:!?()\[\]]+|[\s\"'`.,;:!?()\[\]]+$")
_SPACES = re.compile(r"\s+")
_NON_WORD = re.compile(r"[^0-9a-z]+")


def display_label(text: str, *, kind: str = "thing") -> str:
    """A label as shown: spaces collapsed, leading articles and edge punctuation dropped, case kept.

    Example:
        >>> display_label("The Fridge.")
        'Fridge'
    """
    text = _SPACES.sub(" ", text).strip()
    if kind in CASE_SENSITIVE_KINDS:
        return text
    text = _EDGE_PUNCT.sub("", text)
    while (stripped := _ARTICLES.sub("", text)) != text:
        text = stripped
    return text


def normalize_label(text: str, *, kind: str = "thing") -> str:
    """The key a node is found by: ``display_label`` case-folded (``CASE_SENSITIVE_KINDS`` keep their case).

    Example:
        >>> normalize_label("  The Fridge. ")
        'fridge'
        >>> normalize_label("SUM", kind="token")
        'SUM'
    """
    label = display_label(text, kind=kind)
    return label if kind in CASE_SENSITIVE_KINDS else label.casefold()


def normalize_relation(text: str) -> str:
    """A relation as a lower-case identifier: ``"Located In"`` -> ``located_in``."""
    return _NON_WORD.sub("_", text.casefold()).strip("_")


def evidence_strength(evidence: Evidence, config: MemoryConfig = DEFAULT_CONFIG) -> float:
    """Strength in [0, 1] of one piece of evidence (seed 002 ``epistemic_strength``).

    Example:
        >>> evidence_strength(Evidence(kind="reported", source="user", level=1.0))
        0.7
    """
    base = dict(config.semantic.semantic_evidence_base).get(evidence.kind, UNLISTED_KIND_STRENGTH)
    slope = dict(config.semantic.semantic_evidence_slope).get(evidence.kind, 0.0)
    return min(1.0, max(0.0, round(base + slope * evidence.level, 12)))


def distinct(evidence: Iterable[Evidence]) -> list[Evidence]:
    """The first piece of evidence per (kind, source, direction): a source repeating itself adds nothing."""
    seen: set[tuple[str, str, bool]] = set()
    out: list[Evidence] = []
    for ev in evidence:
        key = (ev.kind, ev.source, ev.against)
        if key not in seen:
            seen.add(key)
            out.append(ev)
    return out


def evidence_key(evidence: Evidence) -> tuple[str, str, bool, str]:
    """What makes two pieces of a fact's evidence the same piece: kind, source, direction and text."""
    return (evidence.kind, evidence.source, evidence.against, evidence.detail)


def fact_evidence_key(fact_id: str, evidence: Evidence) -> str:
    """The shared log's key of one piece of a fact's evidence (the ``run_id`` of its ``FactEvidence``)."""
    kind, source, against, detail = evidence_key(evidence)
    return "ev_" + stable_hash(fact_id, kind, source, str(against), detail)


def add_fact_evidence(fact: Fact, ev: FactEvidence, config: MemoryConfig = DEFAULT_CONFIG) -> Fact:
    """The facts' fold (``learning.ledger``): ``fact`` with a logged piece of evidence among its sources, once.

    Sources are a grow-only set, so a writer's evidence survives another writer's record
    write that did not hold it; the states settle from the sources (``settle``) whatever
    order they arrived in.
    """
    key = evidence_key(ev.source)
    if any(evidence_key(e) == key for e in fact.sources):
        return fact
    return fact.model_copy(update={"sources": [*fact.sources, ev.source]})


def add_entity_alias(entity: Entity, ev: EntityEvidence, config: MemoryConfig = DEFAULT_CONFIG) -> Entity:
    """The entities' fold (``learning.ledger``): ``entity`` with a logged alias among its aliases, once."""
    if ev.alias == entity.key or ev.alias in entity.aliases:
        return entity
    return entity.model_copy(update={"aliases": [*entity.aliases, ev.alias]})


def support(evidence: Sequence[Evidence], config: MemoryConfig = DEFAULT_CONFIG) -> float:
    """Summed strength of the distinct evidence for a fact minus that of the evidence against it.

    ``math.fsum`` is exactly rounded, so the support does not depend on the order the
    evidence arrived in (a plain float sum did, by an ulp, which flips a comparison
    with the contradiction margin when two positions lead by exactly the margin).
    """
    return math.fsum(
        -evidence_strength(ev, config) if ev.against else evidence_strength(ev, config) for ev in distinct(evidence)
    )


def confidence(evidence: Sequence[Evidence], config: MemoryConfig = DEFAULT_CONFIG) -> float:
    """Combined probability-like confidence: 1 - prod(1 - s) of the support, times that of no counter-evidence."""
    pro = con = 1.0
    for ev in distinct(evidence):
        s = evidence_strength(ev, config)
        if ev.against:
            con *= 1.0 - s
        else:
            pro *= 1.0 - s
    return round((1.0 - pro) * con, 12)


def _alone(evidence: Sequence[Evidence], config: MemoryConfig) -> tuple[EpistemicState, str]:
    net = support(evidence, config)
    if not any(evidence_strength(ev, config) > 0.0 for ev in evidence):
        return "unknown", "no evidence of any strength"
    if net <= 0.0:
        return "retracted", "evidence against outweighs evidence for"
    return "held", "supported by evidence"


def settle(
    positions: Mapping[str, Sequence[Evidence]], config: MemoryConfig = DEFAULT_CONFIG
) -> dict[str, tuple[EpistemicState, str]]:
    """The state and reason of each of a group of mutually contradicting positions (seed 002).

    Args:
        positions: Fact id -> all its evidence. One id: an uncontested fact.
        config: ``semantic_contradiction_margin`` and the evidence strengths.

    Returns:
        Fact id -> (state, reason).
    """
    if len(positions) <= 1:
        return {fid: _alone(ev, config) for fid, ev in positions.items()}
    out: dict[str, tuple[EpistemicState, str]] = {}
    nets = {fid: support(ev, config) for fid, ev in positions.items()}
    live = {fid: net for fid, net in nets.items() if net > 0.0}
    for fid in positions:
        if fid not in live:
            out[fid] = _alone(positions[fid], config)  # unknown or retracted: its support is not positive
    if not live:
        return out
    margin = config.semantic.semantic_contradiction_margin
    best = max(live, key=lambda fid: (live[fid], fid))
    runner_up = max((net for fid, net in live.items() if fid != best), default=-math.inf)
    if live[best] > runner_up + margin:
        out[best] = ("held", "stronger than every rival by more than the margin")
        for fid in live:
            if fid != best:
                out[fid] = ("retracted", "superseded by stronger evidence")
        return out
    for fid, net in live.items():
        if net >= live[best] - margin:
            out[fid] = ("contested", "rivals of similar strength")
        else:
            out[fid] = ("retracted", "weaker than a rival by more than the margin")
    return out


__all__ = [
    "CASE_SENSITIVE_KINDS",
    "UNLISTED_KIND_STRENGTH",
    "add_entity_alias",
    "add_fact_evidence",
    "confidence",
    "display_label",
    "distinct",
    "evidence_key",
    "evidence_strength",
    "fact_evidence_key",
    "normalize_label",
    "normalize_relation",
    "settle",
    "support",
]
