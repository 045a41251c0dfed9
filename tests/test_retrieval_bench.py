"""``langmem-plus bench retrieval`` at a tiny size: the issue's JSON shape, labelled queries, targets."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from langmem_plus.bench.retrieval import targets_met
from langmem_plus.bench.synthetic import build_memory

KEYS = {
    "lessons", "ours_p50_ms", "ours_p95_ms", "raw_chroma_p50_ms", "ratio_p50", "graph_p95_ms",
    "open_s", "writes_per_s", "hit1", "hit3", "mrr", "vector_only",
}


def test_synthetic_memory_is_varied_and_labelled() -> None:
    mem = build_memory(600, ("b",), queries=40, seed=3)
    assert len(mem.lessons) == 600 and mem.links
    assert {l.status for l in mem.lessons} == {"candidate", "promoted", "suppressed", "archived"}
    assert any(l.conflicts_with for l in mem.lessons)
    by_id = {l.id: l for l in mem.lessons}
    assert all(by_id[q.target].retrievable for q in mem.queries)
    para = [q for q in mem.queries if q.paraphrased]
    assert para and all(q.event.fingerprint_id not in by_id[q.target].triggers for q in para)
    assert all(by_id[q.target].wrong in q.event.action for q in mem.queries)
    assert build_memory(600, ("b",), queries=40, seed=3).queries[5].target == mem.queries[5].target


def test_only_conflict_twins_share_a_wrong_pattern_within_a_tool() -> None:
    """Each query has one right answer: a tool's lessons share a WRONG only as linked conflict twins."""
    mem = build_memory(20_000, ("b",), queries=10, seed=0)  # 500 lessons a tool: 3-syllable words collide
    seen: dict[tuple[str | None, str | None], str] = {}
    for lesson in mem.lessons:
        key = (lesson.scope.tool, lesson.wrong)
        if key in seen:
            assert lesson.conflicts_with == [seen[key]]
        else:
            seen[key] = lesson.id


def test_bench_retrieval_json_shape() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "langmem_plus.cli", "bench", "retrieval", "--lessons", "400", "--queries", "20", "--warmup", "10", "--json"],
        capture_output=True, text=True, timeout=300, check=True,
    )
    rows = json.loads(out.stdout)["sizes"]
    assert len(rows) == 1 and KEYS <= set(rows[0])
    row = rows[0]
    assert row["lessons"] == 400 and set(row["vector_only"]) == {"hit1", "hit3", "mrr"}
    assert 0.0 <= row["hit1"] <= row["hit3"] <= 1.0 and row["ratio_p50"] > 0
    assert "wrote 400/400" in out.stderr  # progress while building
    assert set(targets_met(row)) == {
        "ratio_p50<=1.5", "ratio_p50<=1.3", "ratio_sequential_p50<=1.5", "hit3>=vector+0.15", "open_s<=3", "graph_p95_ms<=5",
    }
    assert row["sequential_p50_ms"] > 0 and row["ratio_sequential_p50"] > 0
    assert row["raw_chroma_ids_p50_ms"] > 0 and row["ratio_ids_p50"] > 0 and row["ratio_sequential_ids_p50"] > 0


def _bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "langmem_plus.cli", "bench", "retrieval", "--queries", "10", "--warmup", "5", "--json", *args],
        capture_output=True, text=True, timeout=300,
    )


def test_bench_retrieval_reuses_a_kept_store(tmp_path: Path) -> None:
    """``--store`` builds once; a second run opens the same store without writing, with the same labelled queries."""
    store = tmp_path / "kept"
    first = _bench("--lessons", "300", "--store", str(store), "--no-chroma-open")
    assert first.returncode == 0, first.stderr
    built = json.loads(first.stdout)["sizes"][0]
    assert "wrote 300/300" in first.stderr and built["fresh_process"] is False and built["open_chroma_s"] is None
    assert built["hnsw_ef_construction"] == 100  # MemoryConfig's default, read back from the collection
    again = _bench("--lessons", "300", "--store", str(store))
    assert again.returncode == 0, again.stderr
    reused = json.loads(again.stdout)["sizes"][0]
    assert "wrote" not in again.stderr and reused["fresh_process"] is True
    assert reused["lessons"] == built["lessons"] == 300 and reused["build_s"] == built["build_s"]
    assert (reused["hit3"], reused["vector_only"]) == (built["hit3"], built["vector_only"])  # same store, same queries
    assert reused["rss_mb"] > 0 and reused["open_chroma_s"] is not None
    if Path("/proc/self/status").exists():
        assert reused["memory_mb"]["VmHWM"] >= reused["memory_mb"]["VmRSS"] == reused["rss_mb"]
    other = _bench("--lessons", "400", "--store", str(store))
    assert other.returncode != 0 and "--lessons 300" in other.stderr  # another size is refused, not overwritten
