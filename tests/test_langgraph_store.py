"""LangGraphChromaStore behaves like LangGraph's InMemoryStore, persists, and serves real agents.

The conformance tests drive LangGraph's own ``InMemoryStore`` (the oracle) and ours
through the same operations and compare every result. Two InMemoryStore quirks are
stepped around rather than copied: a ``get`` or ``delete`` in a namespace that was
never written creates it there (so it would be listed and ordered from then on), and
``list_namespaces`` lists namespaces whose items were all deleted. The driver keeps
those operations from the oracle (their answer, None, is known) and keeps only
namespaces that hold items from the oracle's listing. A third is avoided: InMemoryStore
(langgraph 1.2.22) raises when one batch embeds the same text twice, so random texts
are unique.
"""

from __future__ import annotations

import asyncio
import math
import random
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langchain.agents import create_agent
from langchain.tools import ToolRuntime, tool
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.config import get_store
from langgraph.graph import START, StateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import (
    GetOp,
    IndexConfig,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    SearchItem,
    SearchOp,
)
from langgraph.store.memory import InMemoryStore

from langmem_plus.embeddings import HashingEmbeddings
from langmem_plus.errors import InvalidRecord, StoreUnavailable
from langmem_plus.integrations import LangGraphChromaStore

DIM = 64
BIG = 10**6
Namespace = tuple[str, ...]


def _index() -> IndexConfig:
    return {"dims": DIM, "embed": HashingEmbeddings(dim=DIM), "fields": ["text", "notes[*]"]}


@pytest.fixture(params=["plain", "indexed"])
def index(request: pytest.FixtureRequest) -> IndexConfig | None:
    return _index() if request.param == "indexed" else None


# --------------------------------------------------------------------------- the twin driver


class Twin:
    """Runs each batch on our store and on InMemoryStore and asserts the results agree."""

    def __init__(self, ours: LangGraphChromaStore, index: IndexConfig | None, *, use_async: bool = False) -> None:
        self.ours = ours
        self.oracle = InMemoryStore(index=index)
        self.use_async = use_async
        self.written: set[Namespace] = set()
        self.compared = 0

    def _phantom(self, op: Op, batch_writes: set[Namespace]) -> bool:
        """A get or delete in a namespace never written (InMemoryStore would create it).

        A get reads the state before the batch; a delete also counts the batch's own puts.
        """
        if isinstance(op, GetOp):
            return op.namespace not in self.written
        return isinstance(op, PutOp) and op.value is None and op.namespace not in self.written | batch_writes

    def _expected_namespaces(self, op: ListNamespacesOp) -> list[Namespace]:
        """The oracle's listing, keeping namespaces that hold items, then depth, sort, page."""
        matching: list[Namespace] = self.oracle.batch([ListNamespacesOp(op.match_conditions, None, BIG, 0)])[0]  # type: ignore[assignment]
        held = [ns for ns in matching if any(i.namespace == ns for i in self.oracle.search(ns, limit=BIG))]
        cut = {ns[: op.max_depth] if op.max_depth is not None else ns for ns in held}
        return sorted(cut)[op.offset : op.offset + op.limit]

    def run(self, ops: Sequence[Op]) -> list[Any]:
        expected_lists = {i: self._expected_namespaces(op) for i, op in enumerate(ops) if isinstance(op, ListNamespacesOp)}
        got = asyncio.run(self.ours.abatch(ops)) if self.use_async else self.ours.batch(ops)
        batch_writes = {tuple(op.namespace) for op in ops if isinstance(op, PutOp) and op.value is not None}
        phantom = [self._phantom(op, batch_writes) for op in ops]
        want_iter = iter(self.oracle.batch([op for op, skip in zip(ops, phantom) if not skip]))
        for i, (op, result) in enumerate(zip(ops, got, strict=True)):
            want = None if phantom[i] else next(want_iter)
            if isinstance(op, ListNamespacesOp):
                want = expected_lists[i]
            self._compare(op, result, want)
        self.written |= batch_writes
        return got

    def _compare(self, op: Op, got: Any, want: Any) -> None:
        self.compared += 1
        if isinstance(op, GetOp):
            assert _plain(got) == _plain(want), op
        elif isinstance(op, SearchOp):
            assert [_plain(i) for i in got] == [_plain(i) for i in want], op
            for g, w in zip(got, want):
                if w.score is None:
                    assert g.score is None, op
                else:  # Chroma keeps float32 vectors: scores agree to float32 precision
                    assert g.score is not None and math.isclose(g.score, w.score, abs_tol=1e-5), op
        elif isinstance(op, ListNamespacesOp):
            assert got == want, op
        else:
            assert got is None


def _plain(item: Item | None) -> tuple[Namespace, str, dict[str, Any]] | None:
    return None if item is None else (item.namespace, item.key, item.value)


def _search(ns: Namespace, **kwargs: Any) -> SearchOp:
    return SearchOp(ns, kwargs.pop("filter", None), kwargs.pop("limit", 10), kwargs.pop("offset", 0), kwargs.pop("query", None))


def _list(prefix: Namespace | None = None, suffix: Namespace | None = None, **kwargs: Any) -> ListNamespacesOp:
    conditions = []
    if prefix:
        conditions.append(MatchCondition("prefix", prefix))
    if suffix:
        conditions.append(MatchCondition("suffix", suffix))
    return ListNamespacesOp(tuple(conditions), kwargs.get("max_depth"), kwargs.get("limit", 100), kwargs.get("offset", 0))


def _value(n: int, text: str, **extra: Any) -> dict[str, Any]:
    return {"n": n, "text": text, **extra}


U1, U1P, U2, DOCS, DEEP = ("users", "u1"), ("users", "u1", "prefs"), ("users", "u2"), ("docs",), ("docs", "a", "b", "c")

SCENARIO: list[list[Op]] = [
    [PutOp(U1, "k1", _value(1, "likes dark mode", tag="ui", meta={"color": "blue"}))],
    [PutOp(U1, "k2", _value(5, "prefers tea over coffee", tag="food", notes=["green tea", "no sugar"]))],
    [PutOp(U1P, "p1", _value(3, "font size large", tag="ui", meta={"color": "red"}))],
    [PutOp(U2, "k1", _value(7, "dark chocolate lover", tag="food"))],
    [PutOp(DOCS, "d1", _value(2, "python tutorial", tags=["py", "intro"])), PutOp(DEEP, "d2", _value(9, "deep nested doc"))],
    [GetOp(U1, "k1"), GetOp(U1, "nope"), GetOp(U1P, "p1"), GetOp(("users",), "k1")],
    [_search(("users",)), _search(U1), _search(U1P), _search(DOCS), _search(("nobody",))],
    [_search(("users",), filter={"tag": "ui"}), _search(("users",), filter={"tag": {"$eq": "food"}})],
    [_search(("users",), filter={"tag": {"$ne": "ui"}}), _search(("users",), filter={"n": {"$gt": 3}})],
    [_search(("users",), filter={"n": {"$gte": 5}}), _search(("users",), filter={"n": {"$lt": 5}})],
    [_search(("users",), filter={"n": {"$lte": 3, "$gt": 1}}), _search(("users",), filter={"meta": {"color": "red"}})],
    [_search((), filter={"tags": ["py", "intro"]}), _search((), filter={"tags": ["py"]})],
    [_search((), limit=2), _search((), limit=2, offset=2), _search((), limit=3, offset=4), _search((), limit=0)],
    [_search((), query="dark"), _search(("users",), query="tea", limit=2), _search((), query="doc", offset=1, limit=2)],
    [_search((), query="dark", filter={"tag": "food"}), _search(U1, query="sugar")],
    [_list(), _list(prefix=("users",)), _list(suffix=("prefs",)), _list(prefix=("*", "u1"))],
    [_list(max_depth=1), _list(max_depth=2), _list(prefix=("docs",), max_depth=3), _list(limit=2, offset=1)],
    [_list(prefix=("users", "*"), suffix=("*",)), _list(suffix=("u1", "*")), _list(prefix=("a",))],
    [PutOp(U1, "k1", _value(11, "now likes light mode", tag="ui")), GetOp(U1, "k1")],
    [GetOp(U1, "k1"), _search(U1, filter={"n": 11})],
    [PutOp(U1, "k2", None), PutOp(U1P, "p1", None), PutOp(DEEP, "missing", None)],
    [GetOp(U1, "k2"), _search(("users",)), _list(), _list(prefix=("users",), max_depth=3)],
    [PutOp(U1, "k2", _value(4, "back again")), PutOp(U1, "k2", _value(6, "last write wins")), _search(U1)],
    [_search(U1), PutOp(U2, "k9", _value(1, "unindexed text"), index=False), PutOp(U2, "k8", _value(1, "x", title="by title"), index=["title"])],
    [_search(U2, query="unindexed text"), _search(U2, query="title", limit=1, offset=3), _search(U2, query="lover")],
    [PutOp(("ghost",), "g", None), GetOp(("ghost",), "g"), _list(prefix=("ghost",))],
    [ListNamespacesOp((MatchCondition("prefix", ("users",)), MatchCondition("prefix", ("*", "u1"))), None, 100, 0)],
    [ListNamespacesOp((MatchCondition("suffix", ("u1",)), MatchCondition("suffix", ("*",))), 1, 100, 0)],
]


@pytest.mark.parametrize("use_async", [False, True], ids=["batch", "abatch"])
def test_scenario_matches_in_memory_store(tmp_path: Path, index: IndexConfig | None, use_async: bool) -> None:
    twin = Twin(LangGraphChromaStore.open(path=tmp_path, index=index), index, use_async=use_async)
    for ops in SCENARIO:
        twin.run(ops)
    assert twin.compared == sum(len(ops) for ops in SCENARIO)
    scored = twin.ours.search(("users",), query="dark")
    assert any(i.score is not None for i in scored) == (index is not None)


# --------------------------------------------------------------------------- seeded random sequences

LABELS = ["a", "b"]
KEY_INDEX: dict[str, Any] = {"k1": None, "k2": False, "k3": ["text"]}
WORDS = ["apple", "banana", "cherry", "delta", "echo", "fox", "golf"]


def _random_ns(rng: random.Random) -> Namespace:
    return tuple(rng.choice(LABELS) for _ in range(rng.randint(1, 3)))


def _random_op(rng: random.Random) -> Op:
    roll = rng.random()
    ns, key = _random_ns(rng), rng.choice(["k1", "k2", "k3"])
    if roll < 0.35:
        # Every text is unique (InMemoryStore fails a batch that embeds one text twice), and
        # a key always embeds the same fields (InMemoryStore keeps the vectors of fields an
        # overwrite no longer embeds; test_overwrite_drops_vectors_of_fields_gone covers ours).
        uid = rng.getrandbits(32)
        text = f"{' '.join(rng.sample(WORDS, 2))} t{uid}"
        notes = [f"{word} n{uid}{j}" for j, word in enumerate(rng.sample(WORDS, 2))]
        value = {"n": rng.randint(0, 9), "text": text, "tag": rng.choice(["x", "y"]), "notes": notes}
        return PutOp(ns, key, value, index=KEY_INDEX[key])
    if roll < 0.45:
        return PutOp(ns, key, None)
    if roll < 0.6:
        return GetOp(ns, key)
    if roll < 0.9:
        op, bound = rng.choice(["$eq", "$ne", "$gt", "$gte", "$lt", "$lte"]), rng.randint(0, 9)
        filters = [None, {"tag": rng.choice(["x", "y"])}, {"n": {op: bound if op not in ("$eq", "$ne") else bound}}]
        prefix = ns[: rng.randint(0, len(ns))]
        query = rng.choice([None, rng.choice(WORDS)])
        return _search(prefix, filter=rng.choice(filters), limit=rng.randint(0, 5), offset=rng.randint(0, 3), query=query)
    pattern = tuple(rng.choice(LABELS + ["*"]) for _ in range(rng.randint(0, 2)))
    at_start = rng.random() < 0.5
    return _list(pattern if at_start else None, None if at_start else pattern, max_depth=rng.choice([None, 1, 2]), limit=rng.randint(1, 6), offset=rng.randint(0, 2))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_sequences_match_in_memory_store(tmp_path: Path, index: IndexConfig | None, seed: int) -> None:
    rng = random.Random(seed)
    twin = Twin(LangGraphChromaStore.open(path=tmp_path, index=index), index)
    batches = [[_random_op(rng) for _ in range(rng.randint(1, 4))] for _ in range(50)]
    for ops in batches:
        twin.run(ops)
    listed = twin.ours.list_namespaces(limit=BIG)
    assert listed and all(twin.ours.search(ns, limit=BIG) for ns in listed)


# --------------------------------------------------------------------------- async, persistence, timestamps


def test_async_methods_answer_like_sync(tmp_path: Path) -> None:
    sync = LangGraphChromaStore.open(path=tmp_path / "s", index=_index())
    asyn = LangGraphChromaStore.open(path=tmp_path / "a", index=_index())

    async def drive() -> tuple[Any, ...]:
        await asyn.aput(U1, "k1", _value(1, "likes dark mode"))
        await asyn.aput(U1, "k2", _value(2, "tea please"))
        await asyn.adelete(U1, "k2")
        await asyn.aput(U2, "k3", _value(3, "dark roast coffee"))
        return (
            await asyn.aget(U1, "k1"),
            await asyn.asearch(("users",), query="dark", limit=5),
            await asyn.alist_namespaces(prefix=("users",)),
        )

    got = asyncio.run(drive())
    sync.put(U1, "k1", _value(1, "likes dark mode"))
    sync.put(U1, "k2", _value(2, "tea please"))
    sync.delete(U1, "k2")
    sync.put(U2, "k3", _value(3, "dark roast coffee"))
    want = (sync.get(U1, "k1"), sync.search(("users",), query="dark", limit=5), sync.list_namespaces(prefix=("users",)))
    assert _plain(got[0]) == _plain(want[0])
    assert [(_plain(i), round(i.score or 0, 5)) for i in got[1]] == [(_plain(i), round(i.score or 0, 5)) for i in want[1]]
    assert got[2] == want[2] == [U1, U2]


def test_concurrent_writers_lose_nothing(tmp_path: Path) -> None:
    first = LangGraphChromaStore.open(path=tmp_path, index=_index())
    handles = [first] + [LangGraphChromaStore(first.client, index=_index()) for _ in range(3)]

    def write(worker: int) -> None:
        for i in range(10):
            handles[worker].put(("shared",), f"w{worker}-{i}", _value(i, f"worker {worker} note {i}"))

    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(write, range(4)))

    async def gathered() -> None:
        await asyncio.gather(*(first.aput(("shared",), f"a{i}", _value(i, f"async note {i}")) for i in range(10)))

    asyncio.run(gathered())
    keys = {i.key for i in first.search(("shared",), limit=BIG)}
    assert keys == {f"w{w}-{i}" for w in range(4) for i in range(10)} | {f"a{i}" for i in range(10)}
    assert first.list_namespaces() == [("shared",)]


def test_index_embed_may_be_a_plain_function(tmp_path: Path) -> None:
    hashing = HashingEmbeddings(dim=DIM)
    calls: list[int] = []

    def embed(texts: Sequence[str]) -> list[list[float]]:
        calls.append(len(texts))
        return hashing.embed_documents(list(texts))

    ours = LangGraphChromaStore.open(path=tmp_path, index={"dims": DIM, "embed": embed, "fields": ["text"]})
    ours.batch([PutOp(U1, f"k{i}", _value(i, text)) for i, text in enumerate(["green tea", "black coffee", "tea cakes"])])
    assert calls == [3]  # one embedding call for the whole batch
    hits = asyncio.run(ours.asearch(U1, query="tea", limit=2))
    assert {h.key for h in hits} == {"k0", "k2"} and all(h.score is not None for h in hits)


def test_reopen_reads_back_and_keeps_created_at(tmp_path: Path) -> None:
    store = LangGraphChromaStore.open(path=tmp_path, index=_index())
    store.put(U1, "k1", _value(1, "likes dark mode"))
    store.put(DEEP, "d", _value(2, "deep nested doc"))
    first = store.get(U1, "k1")
    store.put(U1, "k1", _value(3, "likes light mode"))
    store.close()

    again = LangGraphChromaStore.open(path=tmp_path, index=_index())
    item = again.get(U1, "k1")
    assert item is not None and first is not None
    assert item.value == _value(3, "likes light mode")
    assert item.created_at == first.created_at and item.updated_at > first.updated_at
    assert again.list_namespaces() == [DEEP, U1]
    hits = again.search((), query="light mode", limit=1)
    assert [(h.key, h.score is not None) for h in hits] == [("k1", True)]
    again.put(U2, "k", _value(4, "later"))  # a namespace created after reopening comes after older ones
    assert [i.namespace for i in again.search(())] == [U1, DEEP, U2]


@pytest.mark.server
def test_http_client_store(chroma_server: str) -> None:
    store = LangGraphChromaStore.open(url=chroma_server, index=_index(), root=("http-test",))
    store.put(U1, "k1", _value(1, "served by chroma run"))
    assert _plain(store.get(U1, "k1")) == (U1, "k1", _value(1, "served by chroma run"))
    assert [h.key for h in store.search(U1, query="chroma")] == ["k1"]
    store.close()


@pytest.mark.server
def test_server_death_is_store_unavailable(tmp_path: Path, spawn_chroma_server: Any) -> None:
    with spawn_chroma_server(tmp_path / "data") as (url, proc):
        store = LangGraphChromaStore.open(url=url, index=_index())
        store.put(U1, "k1", _value(1, "before the crash"))
        proc.kill()
        proc.wait()
        with pytest.raises(StoreUnavailable, match=url.removeprefix("http://")):
            store.get(U1, "k1")
        with pytest.raises(StoreUnavailable):
            asyncio.run(store.asearch(("users",), query="crash"))
    store.close()


# --------------------------------------------------------------------------- isolation and bad input


def test_namespaces_and_roots_never_mix(tmp_path: Path) -> None:
    store = LangGraphChromaStore.open(path=tmp_path, index=_index())
    store.put(("a",), "k", _value(1, "secret of a"))
    store.put(("a", "b"), "k", _value(2, "nested under a"))
    store.put(("ab",), "k", _value(3, "a lookalike label"))
    store.put(("b",), "k", _value(4, "public b"))
    assert {i.namespace for i in store.search(("b",), query="secret of a", limit=BIG)} == {("b",)}
    assert {i.namespace for i in store.search(("a",), limit=BIG)} == {("a",), ("a", "b")}
    assert store.get(("b",), "k") is not None and store.get(("b",), "k").value["n"] == 4  # type: ignore[union-attr]
    other = LangGraphChromaStore(store.client, index=_index(), root=("tenant-2",))
    assert other.get(("a",), "k") is None and other.search((), limit=BIG) == [] and other.list_namespaces() == []
    other.put(("a",), "k", _value(9, "tenant two"))
    assert store.get(("a",), "k").value["n"] == 1  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("call", "in_memory_too"),
    [
        (lambda s: s.put((), "k", {"n": 1}), True),
        (lambda s: s.put(("a.b",), "k", {"n": 1}), True),
        (lambda s: s.put(("a", ""), "k", {"n": 1}), True),
        (lambda s: s.put(("langgraph",), "k", {"n": 1}), True),
        (lambda s: s.search(("a.b",)), True),
        (lambda s: s.list_namespaces(prefix=("x.y",)), True),
        (lambda s: s.batch([PutOp((), "k", {"n": 1})]), False),  # InMemoryStore's batch checks nothing
        (lambda s: s.batch([GetOp(("a.b",), "k")]), False),
    ],
    ids=["empty", "dot", "empty-label", "reserved-root", "search-dot", "list-dot", "batch-empty", "batch-get-dot"],
)
def test_bad_namespaces_raise_like_langgraph(tmp_path: Path, call: Any, in_memory_too: bool) -> None:
    ours = LangGraphChromaStore.open(path=tmp_path)
    with pytest.raises(InvalidNamespaceError):
        call(ours)
    if in_memory_too:
        with pytest.raises(InvalidNamespaceError):
            call(InMemoryStore())
    assert ours.list_namespaces() == []


@pytest.mark.parametrize("value", [["not", "a", "dict"], 42, {"x": float("nan")}, {"x": float("inf")}, {"x": object()}])
def test_bad_values_raise_and_write_nothing(tmp_path: Path, value: Any) -> None:
    ours = LangGraphChromaStore.open(path=tmp_path)
    with pytest.raises(InvalidRecord):
        ours.batch([PutOp(("a",), "ok", {"n": 1}), PutOp(("a",), "bad", value)])
    assert ours.get(("a",), "ok") is None  # the batch is validated before any write


def test_another_embedding_size_on_reopen_is_a_clear_error(tmp_path: Path) -> None:
    LangGraphChromaStore.open(path=tmp_path, index=_index()).put(U1, "k", _value(1, "sixty-four dims"))
    small: IndexConfig = {"dims": 32, "embed": HashingEmbeddings(dim=32), "fields": ["text"]}
    reopened = LangGraphChromaStore.open(path=tmp_path, index=small)
    with pytest.raises(InvalidRecord, match="another embedder or dimension"):
        reopened.put(U1, "k2", _value(2, "thirty-two dims"))
    with pytest.raises(InvalidRecord, match="another embedder or dimension"):
        reopened.search(U1, query="dims")
    assert reopened.get(U1, "k2") is None and reopened.get(U1, "k") is not None
    lying: IndexConfig = {"dims": 16, "embed": HashingEmbeddings(dim=32)}
    with pytest.raises(InvalidRecord, match="dims=16"):
        LangGraphChromaStore.open(path=tmp_path / "other", index=lying).put(U1, "k", _value(1, "x"))


def test_unsupported_operations_raise(tmp_path: Path) -> None:
    ours = LangGraphChromaStore.open(path=tmp_path)
    assert ours.supports_ttl is False
    with pytest.raises(NotImplementedError):
        ours.put(("a",), "k", {"n": 1}, ttl=5)
    with pytest.raises(NotImplementedError):
        ours.batch([PutOp(("a",), "k", {"n": 1}, ttl=5)])
    ours.put(("a",), "k", {"n": 1})
    with pytest.raises(ValueError, match="Unsupported operator"):
        ours.search(("a",), filter={"n": {"$in": [1]}})
    with pytest.raises(ValueError, match="Unknown operation"):
        ours.batch(["not an op"])  # type: ignore[list-item]


def test_overwrite_drops_vectors_of_fields_gone(tmp_path: Path) -> None:
    ours = LangGraphChromaStore.open(path=tmp_path, index=_index())
    ours.put(U1, "k", _value(1, "fox", notes=["fox den", "fox tail"]))
    assert ours.search(U1, query="fox")[0].score is not None
    ours.put(U1, "k", _value(1, "fox"), index=False)  # InMemoryStore would still score it by the old vectors
    assert [(h.key, h.score) for h in ours.search(U1, query="fox")] == [("k", None)]
    ours.put(U1, "k", _value(1, "cherry", notes=["fox"]))
    ours.put(U1, "k", _value(1, "cherry", notes=[]))
    (hit,) = ours.search(U1, query="fox")
    assert hit.score is not None and hit.score < 0.5  # only the "cherry" text is left
    assert _stored_vectors(ours) == 1  # the replaced vectors are gone from Chroma, not just unused
    ours.delete(U1, "k")
    assert _stored_vectors(ours) == 0


def _stored_vectors(store: LangGraphChromaStore) -> int:
    """Entries in the store's field-vector collections (the layout its module docstring draws)."""
    return sum(c.count() for c in store.client.list_collections() if (c.metadata or {}).get("lmp_kind") == "lgvectors")


def test_unfiltered_query_reads_only_the_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from langmem_plus.integrations._store_layout import Collections

    ours = LangGraphChromaStore.open(path=tmp_path, index=_index())
    oracle = InMemoryStore(index=_index())
    ops: list[Op] = [PutOp(("docs",), f"d{i}", _value(i, f"{WORDS[i % 7]} {WORDS[i % 5]} doc {i}")) for i in range(200)]
    ops += [PutOp(("docs", "raw"), f"r{i}", _value(i, f"raw {i}"), index=False) for i in range(10)]
    ours.batch(ops)
    oracle.batch(ops)
    reads: list[int | None] = []
    entries = Collections.entries

    def counted(self: Collections, space: Any, keys: Sequence[str] | None = None) -> Any:
        reads.append(None if keys is None else len(keys))
        return entries(self, space, keys)

    monkeypatch.setattr(Collections, "entries", counted)

    def same(**kwargs: Any) -> None:
        got, want = ours.search(("docs",), **kwargs), oracle.search(("docs",), **kwargs)
        assert [(_plain(g), round(g.score or -9, 4)) for g in got] == [(_plain(w), round(w.score or -9, 4)) for w in want]

    same(query="apple doc", limit=5)
    same(query="fox golf", limit=4, offset=6)
    assert None not in reads and sum(r or 0 for r in reads) <= 5 + 10  # never a full scan, at most offset+limit read
    reads.clear()
    same(query="echo", limit=10, offset=195)  # the page needs the unscored raw items: the reference path answers
    assert None in reads
    reads.clear()
    same(query="echo", filter={"n": {"$lt": 50}}, limit=3)  # filters take the reference path
    assert None in reads


@pytest.mark.parametrize("key", ["", "a/b c", "ключ-🔑", "k" * 2000, '["x", "$"]'])
def test_any_string_key_round_trips(tmp_path: Path, key: str) -> None:
    ours = LangGraphChromaStore.open(path=tmp_path, index=_index())
    ours.put(("a", "ns with spaces/and-slash"), key, {"text": "odd key", "nested": {"list": [1, 2.5, None, True]}})
    assert _plain(ours.get(("a", "ns with spaces/and-slash"), key)) == (
        ("a", "ns with spaces/and-slash"), key, {"text": "odd key", "nested": {"list": [1, 2.5, None, True]}}
    )
    assert [h.key for h in ours.search(("a",), query="odd key")] == [key]
    ours.delete(("a", "ns with spaces/and-slash"), key)
    assert ours.search(("a",)) == []


def test_search_items_carry_timestamps(tmp_path: Path) -> None:
    ours = LangGraphChromaStore.open(path=tmp_path)
    ours.put(("a",), "k", {"n": 1})
    (hit,) = ours.search(("a",))
    assert isinstance(hit, SearchItem) and hit.score is None
    assert hit.created_at == hit.updated_at and hit.created_at.tzinfo is not None


# --------------------------------------------------------------------------- real use: agents, graphs, LangMem


class _ToolCallingFake(GenericFakeChatModel):
    """GenericFakeChatModel that accepts ``bind_tools`` (create_agent binds the tools)."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self


def _calls(*calls: tuple[str, dict[str, Any]]) -> Any:
    """Scripted model turns: one tool call per turn, then a final answer."""
    turns = [AIMessage(content="", tool_calls=[{"name": n, "args": a, "id": f"call-{i}"}]) for i, (n, a) in enumerate(calls)]
    return iter([*turns, AIMessage(content="done")])


@dataclass
class _Ctx:
    user_id: str


@tool
def remember(fact: str, runtime: ToolRuntime[_Ctx]) -> str:
    """Save a fact about the current user."""
    assert runtime.store is not None
    namespace = ("facts", runtime.context.user_id)
    runtime.store.put(namespace, "fact-1", {"text": fact})
    item = runtime.store.get(namespace, "fact-1")
    return f"saved: {item.value['text'] if item else 'nothing'}"


@tool
def recall(query: str) -> str:
    """Recall facts about user u1."""
    return "; ".join(h.value["text"] for h in get_store().search(("facts", "u1"), query=query))


def _tool_outputs(result: dict[str, Any]) -> list[str]:
    return [str(m.content) for m in result["messages"] if isinstance(m, ToolMessage)]


def test_create_agent_tools_reach_the_store(tmp_path: Path) -> None:
    store = LangGraphChromaStore.open(path=tmp_path, index=_index())
    model = _ToolCallingFake(messages=_calls(("remember", {"fact": "likes green tea"}), ("recall", {"query": "tea"})))
    agent = create_agent(model, tools=[remember, recall], store=store, context_schema=_Ctx)
    result = agent.invoke({"messages": [HumanMessage("remember that I like green tea")]}, context=_Ctx(user_id="u1"))
    assert _tool_outputs(result) == ["saved: likes green tea", "likes green tea"]
    assert result["messages"][-1].content == "done"
    store.close()
    reopened = LangGraphChromaStore.open(path=tmp_path, index=_index())
    assert _plain(reopened.get(("facts", "u1"), "fact-1")) == (("facts", "u1"), "fact-1", {"text": "likes green tea"})


class _Visits(TypedDict):
    visits: int


def _count(state: _Visits, runtime: Runtime[None]) -> dict[str, int]:
    assert runtime.store is not None
    item = runtime.store.get(("counters",), "visits")
    visits = (item.value["n"] if item else 0) + 1
    runtime.store.put(("counters",), "visits", {"n": visits})
    return {"visits": visits}


async def _acount(state: _Visits, runtime: Runtime[None]) -> dict[str, int]:
    assert runtime.store is not None
    item = await runtime.store.aget(("counters",), "visits")
    visits = (item.value["n"] if item else 0) + 1
    await runtime.store.aput(("counters",), "visits", {"n": visits})
    return {"visits": visits}


def test_compiled_graph_nodes_read_and_write_the_store(tmp_path: Path) -> None:
    store = LangGraphChromaStore.open(path=tmp_path)
    sync_graph = StateGraph(_Visits).add_node("count", _count).add_edge(START, "count").compile(store=store)
    async_graph = StateGraph(_Visits).add_node("count", _acount).add_edge(START, "count").compile(store=store)
    assert sync_graph.invoke({"visits": 0}) == {"visits": 1}
    assert sync_graph.invoke({"visits": 0}) == {"visits": 2}
    assert asyncio.run(async_graph.ainvoke({"visits": 0})) == {"visits": 3}
    item = LangGraphChromaStore.open(path=tmp_path).get(("counters",), "visits")
    assert item is not None and item.value == {"n": 3}


def test_learning_memory_as_store_keeps_to_its_namespace(tmp_path: Path) -> None:
    from langmem_plus import LearningMemory

    mem = LearningMemory.open(tmp_path, namespace=("acme", "agent-7"))
    other = LearningMemory.open(tmp_path, namespace=("acme", "agent-8"))
    store = mem.as_store(index={"dims": mem.config.storage.embedding_dim, "embed": mem.store.embeddings})
    store.put(("prefs",), "theme", {"text": "dark mode"})
    assert [h.key for h in store.search(("prefs",), query="dark")] == ["theme"]
    assert other.as_store().search((), limit=BIG) == [] and other.as_store().list_namespaces() == []
    assert mem.store.count("lessons") == 0  # the LangGraph items live in collections of their own
    mem.close()
    other.close()
    again = LearningMemory.open(tmp_path, namespace=("acme", "agent-7"))
    assert _plain(again.as_store().get(("prefs",), "theme")) == (("prefs",), "theme", {"text": "dark mode"})
    again.close()


def test_langmem_tools_in_an_agent_on_our_store(tmp_path: Path) -> None:
    langmem = pytest.importorskip("langmem")
    store = LangGraphChromaStore.open(path=tmp_path, index=_index())
    manage = langmem.create_manage_memory_tool(namespace=("memories", "{user_id}"))
    search = langmem.create_search_memory_tool(namespace=("memories", "{user_id}"))
    model = _ToolCallingFake(
        messages=_calls(
            ("manage_memory", {"content": "User prefers green tea", "action": "create"}),
            ("search_memory", {"query": "tea"}),
        )
    )
    agent = create_agent(model, tools=[manage, search], store=store)
    result = agent.invoke({"messages": [HumanMessage("I like green tea")]}, {"configurable": {"user_id": "u1"}})
    created, found = _tool_outputs(result)
    assert created.startswith("created memory ")
    (item,) = store.search(("memories", "u1"))
    assert item.key == created.removeprefix("created memory ") and item.value == {"content": "User prefers green tea"}
    assert "User prefers green tea" in found and item.key in found
    assert store.search(("memories", "u2")) == []


def test_langmem_tools_with_the_store_passed_in(tmp_path: Path) -> None:
    langmem = pytest.importorskip("langmem")
    store = LangGraphChromaStore.open(path=tmp_path, index=_index())
    manage = langmem.create_manage_memory_tool(namespace=("memories", "team"), store=store)
    search = langmem.create_search_memory_tool(namespace=("memories", "team"), store=store, response_format="content_and_artifact")
    memory_id = manage.invoke({"content": "deploys happen on Fridays", "action": "create"}).removeprefix("created memory ")
    assert manage.invoke({"content": "deploys happen on Tuesdays", "action": "update", "id": memory_id}) == f"updated memory {memory_id}"
    hits = search.invoke({"type": "tool_call", "id": "s1", "name": search.name, "args": {"query": "when are deploys"}}).artifact
    assert [(h.key, h.value["content"]) for h in hits] == [(memory_id, "deploys happen on Tuesdays")]
    assert asyncio.run(manage.ainvoke({"action": "delete", "id": memory_id})) == f"Deleted memory {memory_id}"
    assert store.get(("memories", "team"), memory_id) is None


def test_module_examples_run() -> None:
    import doctest

    from langmem_plus import integrations
    from langmem_plus.integrations import _store_rules, store

    for module in (integrations, store, _store_rules):
        result = doctest.testmod(module)
        assert result.attempted > 0 and result.failed == 0, module.__name__
