"""``langmem-plus bench peers`` on a small memory: the three paths answer the same labelled queries."""

from __future__ import annotations

import json

import pytest

from langmem_plus.bench import peers
from langmem_plus.cli import main


@pytest.mark.slow
def test_three_paths_on_the_same_queries() -> None:
    pytest.importorskip("langmem")
    said: list[str] = []
    row = peers.bench_size(600, queries=30, langmem_queries=10, warmup=4, seed=1, progress=said.append)
    for name, n in (("ours", 30), ("chroma_retriever", 30), ("langmem", 10)):
        path = row[name]
        assert path["queries"] == n and path["p50_ms"] > 0 and path["p95_ms"] >= path["p50_ms"]
        assert path["hit3"] > 0.5, (name, path)  # each path really retrieves the labelled lessons
    assert row["speedup_vs_langmem"] == pytest.approx(row["langmem"]["p50_ms"] / row["ours"]["p50_ms"], rel=0.06)
    assert set(row["targets_met"]) == {
        "hit3>=chroma_retriever", "ratio_vs_chroma_retriever<=1.5", "speedup_vs_langmem>=20", "hit3>=langmem+0.2",
    }
    assert len(said) == 3
    json.dumps(row)


def test_a_peer_is_asked_with_the_error_and_the_action() -> None:
    from langmem_plus.bench.synthetic import build_memory

    q = build_memory(50, ("b",), queries=1, seed=0).queries[0]
    assert peers.peer_query(q) == f"{q.event.error_text}\n{q.event.action}"


def test_cli_refuses_bad_sizes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "peers", "--lessons", "10"]) == 2
    assert "--lessons must be >= 100" in capsys.readouterr().err


def test_langmem_batches_never_repeat_a_text_and_keep_every_lesson() -> None:
    """langgraph's InMemoryStore.batch fails on two items with one text in a batch; the bench splits them."""
    from langmem_plus.bench.peers import unique_text_batches
    from langmem_plus.records import Lesson

    lessons = [Lesson(id=f"l{i}", namespace=("n",), rule_text=f"rule {i % 7}") for i in range(40)]
    batches = unique_text_batches(lessons, 5)
    assert all(len(b) <= 5 and len({l.rule_text for l in b}) == len(b) for b in batches)
    assert sorted(l.id for b in batches for l in b) == sorted(l.id for l in lessons)


def test_paths_are_timed_in_alternating_rounds_and_hits_stay_in_query_order() -> None:
    """``_interleaved``: every path answers every query once, ``ROUND`` in a row, the first path of a round
    rotating; each path's hits line up with the queries (a path that answers only odd queries scores them)."""
    from langmem_plus.bench.synthetic import build_memory

    queries = build_memory(60, ("b",), queries=25, seed=0).queries
    calls: list[tuple[str, int]] = []

    def asker(name: str, right: set[int]) -> peers.Ask:
        def ask(q: object) -> list[str]:
            i = next(n for n, x in enumerate(queries) if x is q)
            calls.append((name, i))
            return [queries[i].target] if i in right else ["nothing"]
        return ask

    odd = {i for i in range(len(queries)) if i % 2}
    out = peers._interleaved(queries, {"a": asker("a", odd), "b": asker("b", set(range(len(queries))))}, [])
    expected: list[tuple[str, int]] = []
    for r, start in enumerate(range(0, len(queries), peers.ROUND)):
        block = range(start, min(len(queries), start + peers.ROUND))
        for name in (["a", "b"] if r % 2 == 0 else ["b", "a"]):
            expected += [(name, i) for i in block]
    assert calls == expected
    assert out["a"]["hits"] == [i in odd for i in range(len(queries))] and out["b"]["hit3"] == 1.0
    assert out["a"]["queries"] == out["b"]["queries"] == len(queries)
