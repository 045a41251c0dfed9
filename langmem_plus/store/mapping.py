"""How each record kind maps to a Chroma entry: document, scalar metadata, collection names (design.md §4).

Split from ``store.chroma`` (the connection and the store) so the mapping can be read
and tested on its own. A record is stored as the embedded ``document`` (the text
retrieval should match on), the full model as JSON under ``metadata["record"]``, and a
few scalar keys for optional filters. Metadata is scalar only: list-valued metadata
leaks across recreated collections in chromadb 1.5.9 (chroma-core/chroma#7594).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Union

from pydantic import BaseModel

from langmem_plus._text import stable_hash
from langmem_plus.records import (
    CognitiveRecord,
    Entity,
    Episode,
    ErrorEvent,
    Fact,
    Lesson,
    Link,
    Namespace,
    RunRecord,
    Skill,
)

Scalar = Union[str, int, float, bool]


@dataclass(frozen=True)
class KindSpec:
    """How one record kind maps to a Chroma collection entry."""

    model: type[BaseModel]
    """The pydantic model stored in this kind's collection."""
    id_of: Callable[[Any], str]
    """The Chroma id of a record."""
    document: Callable[[Any], str]
    """The text that is embedded and stored as the Chroma document."""
    scalars: Callable[[Any], dict[str, Scalar | None]]
    """Scalar, filterable metadata keys; ``None`` values are dropped."""


def _join(*parts: str | None) -> str:
    return "\n".join(p for p in parts if p)


def _lesson_doc(r: Lesson) -> str:
    return _join(r.rule_text, " ".join(r.fingerprints), " ".join(r.tags))


def _lesson_scalars(r: Lesson) -> dict[str, Scalar | None]:
    return {
        "status": r.status,
        "kind": r.scope.level,
        "fp": r.triggers[0] if r.triggers else None,
        "tool": r.scope.tool,
        "domain": r.scope.domain,
        "task": r.scope.task,
    }


def _event_scalars(r: ErrorEvent) -> dict[str, Scalar | None]:
    return {
        "kind": r.channel,
        "fp": r.fingerprint_id,
        "tool": r.tool,
        "domain": r.domain,
        "task": r.task,
        "run": r.run_id,
        "seq": r.step,
    }


def _run_scalars(r: RunRecord) -> dict[str, Scalar | None]:
    return {
        "task": r.task_id,
        "tool": r.tool,
        "domain": r.domain,
        "run": r.run_id,
        "seq": r.seq,
        "passed": r.passed,
    }


KIND_SPECS: dict[str, KindSpec] = {
    "lessons": KindSpec(Lesson, lambda r: r.id, _lesson_doc, _lesson_scalars),
    "episodes": KindSpec(
        Episode,
        lambda r: r.episode_id,
        lambda r: _join(r.goal_signature, r.summary),
        lambda r: {"kind": r.kind, "run": r.run_id},
    ),
    "skills": KindSpec(
        Skill, lambda r: r.id, lambda r: _join(r.name, *r.goal_templates), lambda r: {}
    ),
    "events": KindSpec(
        ErrorEvent, lambda r: r.id, lambda r: _join(r.fingerprint, r.action), _event_scalars
    ),
    "links": KindSpec(
        Link, lambda r: r.id, lambda r: f"{r.a} {r.b} {r.kind}", lambda r: {"kind": r.kind}
    ),
    "runs": KindSpec(
        RunRecord, lambda r: r.run_id, lambda r: _join(r.task_id, r.family), _run_scalars
    ),
    "cognitive": KindSpec(
        CognitiveRecord, lambda r: r.id, lambda r: f"cognitive memory of {r.agent_id}", lambda r: {"kind": "cognitive"}
    ),
    "facts": KindSpec(
        Fact, lambda r: r.id, lambda r: r.text, lambda r: {"status": r.state, "kind": r.relation}
    ),
    "entities": KindSpec(
        Entity, lambda r: r.id, lambda r: _join(r.label, *r.aliases), lambda r: {"kind": r.kind}
    ),
}
"""Record kinds and their Chroma mapping."""

KINDS: tuple[str, ...] = tuple(KIND_SPECS)
"""The record kinds, one collection each per namespace."""


def namespace_key(namespace: Namespace) -> str:
    """The namespace as the JSON string stored under ``metadata["ns"]``."""
    return json.dumps(list(namespace), ensure_ascii=False, separators=(",", ":"))


def collection_name(namespace: Namespace, kind: str) -> str:
    """Valid Chroma collection name of a namespace's kind, e.g. ``lmp_3f2a..._lessons``."""
    return f"lmp_{stable_hash(*namespace)}_{kind}"



__all__ = ["KINDS", "KIND_SPECS", "KindSpec", "Scalar", "collection_name", "namespace_key"]
