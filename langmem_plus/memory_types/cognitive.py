"""CognitiveMemory: a working FIFO and an importance-routed episodic store (seed 004, design.md §10).

Events arrive with an importance in [0, 1]. ``add_experience`` routes an item of at least
``cognitive_routing_threshold`` (0.7) to the episodic store and anything else to the
working store; ``consolidate`` (at year end) moves important working items over.
``retrieve`` returns working items first (most recent first), then episodic items by
their decayed score ``importance x decay ** (current_year - year)`` (``decayed_score``).

The working store keeps the newest ``cognitive_working_capacity`` (10) items; the episodic
store keeps the ``cognitive_episodic_capacity`` (50) items of highest decayed score. As
``decay ** current_year`` is a common factor, that ranking does not depend on the year it
is computed at, so eviction and retrieval always agree.

Scoring and ordering are pure functions of plain items (STYLE 4). The class holds the
state as immutable tuples, swapped only after the optional ``persist`` callback has
stored the new state, and writes an audit record for every update, consolidation and
retrieval when given an audit sink (``LearningMemory.cognitive`` wires both).

Example:
    >>> mem = CognitiveMemory("H001", clock=lambda: 0.0)
    >>> _ = mem.add_experience("Year 3: A flood caused $50,000 in damages", 0.9, year=3)
    >>> _ = mem.add_experience("Year 4: I decided to do_nothing", 0.3, year=4)
    >>> mem.retrieve(top_k=2, current_year=4)
    ['Year 4: I decided to do_nothing', 'Year 3: A flood caused $50,000 in damages']
"""

from __future__ import annotations

import enum
import math
import numbers
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol

from pydantic import ValidationError

from langmem_plus.config import DEFAULT_CONFIG, MemoryConfig
from langmem_plus.errors import InvalidArgument, InvalidRecord
from langmem_plus.records import CognitiveItem, validate_namespace

if TYPE_CHECKING:
    from langchain_core.tools import BaseTool

StoreName = Literal["working", "episodic"]


class _Default(enum.Enum):
    DEFAULT = "default"


DEFAULT: Final = _Default.DEFAULT
"""Sentinel: use the config's value (``cognitive_top_k``)."""


class AuditSink(Protocol):
    """Where audit records go: ``AuditLog`` (a memory's ``audit``) fits."""

    def write(self, kind: str, **payload: Any) -> Any:
        """Append one record of ``kind``."""
        ...


Persist = Callable[[dict[str, Any]], None]
"""Stores a memory's whole state (``CognitiveMemory.to_dict`` form) before it becomes current."""


# --------------------------------------------------------------------------- pure scoring


def decayed_score(importance: float, year: int, current_year: int, decay: float) -> float:
    """An episodic item's retrieval score: ``importance * decay ** (current_year - year)`` (seed 004 §3.1).

    Not clamped: an item dated after ``current_year`` scores above its importance, as the
    seed's formula gives, which keeps the ranking independent of ``current_year``.

    >>> round(decayed_score(0.9, 1, 10, 0.95), 3)
    0.567
    >>> decayed_score(0.5, 10, 10, 0.95)
    0.5
    """
    return importance * decay ** (current_year - year)


def order_working(items: Iterable[CognitiveItem]) -> list[CognitiveItem]:
    """Working items most recent first: by timestamp, then importance, then insertion (seed 004 §3.1)."""
    return sorted(items, key=lambda it: (it.timestamp, it.importance, it.seq), reverse=True)


def rank_episodic(items: Iterable[CognitiveItem], current_year: int, decay: float) -> list[tuple[CognitiveItem, float]]:
    """Episodic items with their ``decayed_score``, best first; ties go to the newer item."""
    scored = [(it, decayed_score(it.importance, it.year, current_year, decay)) for it in items]
    return sorted(scored, key=lambda pair: (pair[1], pair[0].seq), reverse=True)


def keep_best(
    items: Sequence[CognitiveItem], capacity: int, decay: float
) -> tuple[tuple[CognitiveItem, ...], tuple[CognitiveItem, ...]]:
    """``(kept, evicted)``: the ``capacity`` items of highest decayed score, in their original order.

    Scores are taken at the latest year among the items; any year gives the same order.
    """
    if len(items) <= capacity:
        return tuple(items), ()
    now = max(it.year for it in items)
    ranked = rank_episodic(items, now, decay)
    dropped = {id(it) for it, _ in ranked[capacity:]}
    kept = tuple(it for it in items if id(it) not in dropped)
    return kept, tuple(it for it in items if id(it) in dropped)


# --------------------------------------------------------------------------- validation


def check_importance(value: object) -> float:
    """``value`` as a float in [0, 1], or InvalidRecord (NaN, infinities, bools and text refused)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidRecord(f"importance must be a number in [0, 1], got {value!r}")
    number = float(value)
    if not math.isfinite(number) or not 0.0 <= number <= 1.0:
        raise InvalidRecord(f"importance must be a finite number in [0, 1], got {value!r}")
    return number


def check_year(value: object, name: str = "year", error: type[ValueError] = InvalidRecord) -> int:
    """``value`` as an int, or ``error`` (floats and bools refused: a year is a count)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise error(f"{name} must be an int, got {value!r}")
    return int(value)


def _check_content(value: object) -> str:
    if not isinstance(value, str):
        raise InvalidRecord(f"content must be a str, got {type(value).__name__}")
    if not value.strip():
        raise InvalidRecord("content must not be empty")
    return value


def _check_tags(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise InvalidRecord(f"tags must be a list of str, got {value!r}")
    tags = tuple(value)
    if not all(isinstance(t, str) for t in tags):
        raise InvalidRecord(f"tags must be a list of str, got {tags!r}")
    return tags


def _item_from_dict(raw: object) -> CognitiveItem:
    """An item from ``to_dict`` form, checked like a new one."""
    if not isinstance(raw, Mapping):
        raise InvalidRecord(f"a memory item must be a mapping, got {raw!r}")
    check_year(raw.get("year", 0))
    fields = dict(raw, content=_check_content(raw.get("content")), importance=check_importance(raw.get("importance")),
                  tags=_check_tags(raw.get("tags", ())))
    try:
        return CognitiveItem.model_validate(fields)
    except ValidationError as exc:
        raise InvalidRecord(f"bad memory item {dict(raw)!r}: {exc}") from exc


# --------------------------------------------------------------------------- the memory


@dataclass(frozen=True)
class Recalled:
    """One retrieved item, the store it came from, and its score (None for working items)."""

    item: CognitiveItem
    store: StoreName
    score: float | None


def _item_log(item: CognitiveItem, **extra: Any) -> dict[str, Any]:
    return {"content": item.content, "importance": item.importance, "year": item.year,
            "tags": list(item.tags), "seq": item.seq, **extra}


class CognitiveMemory:
    """An agent's working and episodic memory, routed by importance (seed 004).

    Args:
        agent_id: Whose memory this is (recorded in every audit record).
        config: Capacities, thresholds, decay and ``top_k`` (the ``cognitive_*`` fields).
        clock: Source of items' timestamps, epoch seconds.
        audit: Where update, consolidation and retrieval records go; None writes none.
        persist: Called with the new state (``to_dict`` form) before every change takes
            effect; if it raises, the memory is unchanged.

    Example:
        >>> mem = CognitiveMemory("H001")
        >>> mem.add_working("Low importance", 0.3).importance
        0.3
        >>> _ = mem.add_working("High importance", 0.8)
        >>> mem.consolidate(), [i.content for i in mem.episodic]
        (1, ['High importance'])
    """

    def __init__(
        self,
        agent_id: str,
        *,
        config: MemoryConfig = DEFAULT_CONFIG,
        clock: Callable[[], float] = time.time,
        audit: AuditSink | None = None,
        persist: Persist | None = None,
    ) -> None:
        self._agent_id = validate_namespace((agent_id,))[0]
        self.config = config
        self.clock = clock
        self.audit = audit
        self._persist = persist
        self._lock = threading.RLock()
        self._working: tuple[CognitiveItem, ...] = ()
        self._episodic: tuple[CognitiveItem, ...] = ()
        self._next_seq = 0

    def __repr__(self) -> str:
        return f"CognitiveMemory(agent_id={self._agent_id!r}, working={len(self._working)}, episodic={len(self._episodic)})"

    @property
    def agent_id(self) -> str:
        """Whose memory this is."""
        return self._agent_id

    @property
    def working(self) -> tuple[CognitiveItem, ...]:
        """The working store, oldest first (read-only)."""
        return self._working

    @property
    def episodic(self) -> tuple[CognitiveItem, ...]:
        """The episodic store, in insertion order (read-only)."""
        return self._episodic

    # ------------------------------------------------------------------ updates
    def add_working(self, content: str, importance: float, year: int = 0, tags: Iterable[str] | None = None) -> CognitiveItem:
        """Add to the working store; beyond capacity the oldest item is evicted (seed 004 §4.1).

        Raises:
            InvalidRecord: empty or non-str content, importance not a finite number in [0, 1],
                a year that is not an int, tags that are not a list of str.
        """
        return self._add("working", "add_working", content, importance, year, tags)

    def add_episodic(self, content: str, importance: float, year: int = 0, tags: Iterable[str] | None = None) -> CognitiveItem:
        """Add to the episodic store; beyond capacity the lowest decayed score is evicted (seed 004 §4.1).

        Raises:
            InvalidRecord: as ``add_working``.
        """
        return self._add("episodic", "add_episodic", content, importance, year, tags)

    def add_experience(self, content: str, importance: float, year: int = 0, tags: Iterable[str] | None = None) -> CognitiveItem:
        """Add to episodic when ``importance >= cognitive_routing_threshold`` (0.7), else to working (seed 004 §2.3).

        Raises:
            InvalidRecord: as ``add_working``.
        """
        store: StoreName = "episodic" if check_importance(importance) >= self.config.cognitive.cognitive_routing_threshold else "working"
        return self._add(store, "add_experience", content, importance, year, tags)

    def _add(self, store: StoreName, via: str, content: object, importance: object, year: object, tags: object) -> CognitiveItem:
        text, weight, when, labels = _check_content(content), check_importance(importance), check_year(year), _check_tags(tags)
        with self._lock:
            item = CognitiveItem(content=text, importance=weight, year=when, timestamp=self.clock(), tags=labels,
                                 seq=self._next_seq)
            working, episodic = self._working, self._episodic
            if store == "working":
                working, evicted = _keep_newest(working + (item,), self.config.cognitive.cognitive_working_capacity)
            else:
                episodic, evicted = keep_best(episodic + (item,), self.config.cognitive.cognitive_episodic_capacity, self.config.cognitive.cognitive_decay)
            self._commit(working, episodic, self._next_seq + 1)
            self._write_audit(
                "cognitive_update", via=via, store=store, item=_item_log(item),
                evicted=[_item_log(e, store=store) for e in evicted],
                working_count=len(working), episodic_count=len(episodic),
            )
        return item

    def consolidate(self) -> int:
        """Year end: move working items of importance >= ``cognitive_consolidation_threshold`` to episodic.

        Returns the number moved. The seed's sketch (§4.3) copies them and leaves working
        intact; here they move, as its diagram and docstring say, so a second
        consolidation does not store them twice and ``retrieve`` never returns them twice.
        """
        with self._lock:
            moving = tuple(it for it in self._working if it.importance >= self.config.cognitive.cognitive_consolidation_threshold)
            working = tuple(it for it in self._working if it.importance < self.config.cognitive.cognitive_consolidation_threshold)
            episodic, evicted = keep_best(self._episodic + moving, self.config.cognitive.cognitive_episodic_capacity, self.config.cognitive.cognitive_decay)
            if moving:
                self._commit(working, episodic, self._next_seq)
            self._write_audit(
                "cognitive_consolidation", transferred_count=len(moving), transferred=[_item_log(it) for it in moving],
                evicted=[_item_log(e, store="episodic") for e in evicted],
                working_after=len(working), episodic_after=len(episodic),
            )
            return len(moving)

    def _commit(self, working: tuple[CognitiveItem, ...], episodic: tuple[CognitiveItem, ...], next_seq: int) -> None:
        """Persist the new state, then make it current (nothing changes if persisting fails)."""
        if self._persist is not None:
            self._persist(_state(self._agent_id, working, episodic, next_seq))
        self._working, self._episodic, self._next_seq = working, episodic, next_seq

    def _write_audit(self, kind: str, **payload: Any) -> None:
        if self.audit is not None:
            self.audit.write(kind, agent_id=self._agent_id, **payload)

    # ------------------------------------------------------------------ retrieval
    def retrieve(self, top_k: int | _Default = DEFAULT, current_year: int = 0) -> list[str]:
        """Up to ``top_k`` memories: working items first (most recent first), then episodic by decayed score.

        The seed's ``test_memory_retrieval_decay`` says a year-10 item of importance 0.5
        should outrank a year-1 item of 0.9 at year 10, but its own formula gives
        0.9 x 0.95^9 = 0.567 > 0.5 x 0.95^0 = 0.5: the formula is followed here.

        Args:
            top_k: Most memories returned; ``cognitive_top_k`` (5) by default.
            current_year: The year decay is counted to.

        Raises:
            InvalidArgument: ``top_k`` not an int >= 0, or ``current_year`` not an int.
        """
        return [r.item.content for r in self.retrieve_scored(top_k, current_year)]

    def retrieve_scored(self, top_k: int | _Default = DEFAULT, current_year: int = 0) -> list[Recalled]:
        """``retrieve`` with each item, its store and its score (seed 004 §11 ``retrieval_scores``)."""
        return self._retrieve(top_k, current_year, tool=None)

    def _retrieve(self, top_k: int | _Default, current_year: object, *, tool: str | None) -> list[Recalled]:
        k = self.config.cognitive.cognitive_top_k if isinstance(top_k, _Default) else top_k
        if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 0:
            raise InvalidArgument(f"top_k must be an int >= 0, got {top_k!r}")
        year = check_year(current_year, "current_year", InvalidArgument)
        with self._lock:
            working, episodic = self._working, self._episodic
            out = [Recalled(it, "working", None) for it in order_working(working)][: int(k)]
            room = int(k) - len(out)
            out += [Recalled(it, "episodic", s) for it, s in rank_episodic(episodic, year, self.config.cognitive.cognitive_decay)[:room]]
            self._write_audit(
                "cognitive_retrieval", tool=tool, parameters={"top_k": int(k), "current_year": year},
                results=[r.item.content for r in out], result_count=len(out),
                scores=[_item_log(r.item, store=r.store, score=r.score) for r in out],
                working_count=len(working), episodic_count=len(episodic),
            )
        return out

    def as_tool(self) -> BaseTool:
        """A LangChain tool ``retrieve_memory(top_k, current_year)`` returning memories as quoted data (seed 004 §8)."""
        from langmem_plus.memory_types.cognitive_tool import retrieve_memory_tool

        return retrieve_memory_tool(self)

    # ------------------------------------------------------------------ serialization
    def to_dict(self) -> dict[str, Any]:
        """The whole state as JSON-able data (seed 004 §6.3); ``from_dict`` restores it."""
        with self._lock:
            return _state(self._agent_id, self._working, self._episodic, self._next_seq)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], **kwargs: Any) -> CognitiveMemory:
        """A memory restored from ``to_dict`` data; ``kwargs`` as for the constructor.

        Items are checked like new ones; a store holding more than the config's capacity
        keeps what its eviction rule keeps.

        Raises:
            InvalidRecord: malformed data.
        """
        if not isinstance(data, Mapping) or not isinstance(data.get("agent_id"), str):
            raise InvalidRecord("cognitive memory data needs an 'agent_id' str")
        mem = cls(data["agent_id"], **kwargs)
        working = tuple(_item_from_dict(r) for r in _list(data, "working"))
        episodic = tuple(_item_from_dict(r) for r in _list(data, "episodic"))
        seqs = [it.seq for it in working + episodic]
        if len(set(seqs)) != len(seqs):
            raise InvalidRecord("cognitive memory items must have distinct seq numbers")
        next_seq = data.get("next_seq", 0)
        if isinstance(next_seq, bool) or not isinstance(next_seq, int):
            raise InvalidRecord(f"next_seq must be an int, got {next_seq!r}")
        cfg = mem.config
        mem._working = _keep_newest(working, cfg.cognitive.cognitive_working_capacity)[0]
        mem._episodic = keep_best(episodic, cfg.cognitive.cognitive_episodic_capacity, cfg.cognitive.cognitive_decay)[0]
        mem._next_seq = max([next_seq, *(s + 1 for s in seqs)])
        return mem


def _keep_newest(items: tuple[CognitiveItem, ...], capacity: int) -> tuple[tuple[CognitiveItem, ...], tuple[CognitiveItem, ...]]:
    """``(kept, evicted)``: the last ``capacity`` items (FIFO, seed 004 §2.1)."""
    cut = max(len(items) - capacity, 0)
    return items[cut:], items[:cut]


def _list(data: Mapping[str, Any], key: str) -> list[Any]:
    value = data.get(key, [])
    if not isinstance(value, (list, tuple)):
        raise InvalidRecord(f"{key!r} must be a list of items, got {type(value).__name__}")
    return list(value)


def _state(agent_id: str, working: Sequence[CognitiveItem], episodic: Sequence[CognitiveItem], next_seq: int) -> dict[str, Any]:
    return {
        "agent_id": agent_id,
        "working": [it.model_dump(mode="json") for it in working],
        "episodic": [it.model_dump(mode="json") for it in episodic],
        "next_seq": next_seq,
    }


__all__ = [
    "DEFAULT",
    "AuditSink",
    "CognitiveMemory",
    "Persist",
    "Recalled",
    "check_importance",
    "decayed_score",
    "keep_best",
    "order_working",
    "rank_episodic",
]
