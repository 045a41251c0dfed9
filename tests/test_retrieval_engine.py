"""The retrieval engine end to end on a small store: episodes and skills beside lessons,
the avoidance reminder, the token cap and its report, the failing-action candidate source."""

from __future__ import annotations

from pathlib import Path

import pytest

from langmem_plus.config import MemoryConfig, nest
from langmem_plus.learning.hints import HINTS_HEADER
from langmem_plus.memory import LearningMemory
from langmem_plus.records import (
    Episode,
    ErrorEvent,
    Lesson,
    LessonScope,
    ScoredItem,
    Skill,
    TaskSpec,
)
from langmem_plus.retrieval.support import choose_support
from langmem_plus.tokens import count_tokens

NS = ("acme", "engine")
GOAL = "list the names of people older than 40 sorted by age"


def _mem(tmp_path: Path, **cfg: object) -> LearningMemory:
    return LearningMemory.open(tmp_path / "s", namespace=NS, config=MemoryConfig(**nest(cfg)), clock=lambda: 1_000.0)  # type: ignore[arg-type]


def _lesson(i: str, wrong: str, correct: str, fp: str, tool: str = "gridtool") -> Lesson:
    return Lesson(
        id=i, namespace=NS, rule_text=f"WRONG: {wrong} -> CORRECT: {correct}", wrong=wrong, correct=correct,
        triggers=[fp], fingerprints=[f"unknown command <str> ({fp})"], tags=["unknown_command"],
        scope=LessonScope(tool=tool, domain="tables"), updated_at=900.0,
    )


def _episode(i: str, kind: str, goal: str, summary: str) -> Episode:
    return Episode(
        episode_id=i, namespace=NS, kind=kind, goal_signature=goal, summary=summary,  # type: ignore[arg-type]
        action_seq=["load people.csv", "keep age > 40"], created_at=900.0, last_seen_at=900.0,
    )


def test_episodes_come_beside_lessons_with_their_own_score_and_one_reminder(tmp_path: Path) -> None:
    mem = _mem(tmp_path)
    mem.add_lessons([_lesson("l1", "pick", "SELECT", "fp1")])
    mem.store.upsert("episodes", [
        _episode("e_ok", "success", GOAL, "names of people older than 40 sorted by age"),
        _episode("e_avoid", "avoidance", GOAL, "sorting people by age before filtering older than 40 lost rows"),
        _episode("e_far", "success", "compress the nightly backup archive", "tar czf backup"),
    ])
    task = TaskSpec(task_id="t1", goal=GOAL, tool="gridtool", domain="tables")
    chosen = mem.retrieve_pre_run(task)
    by_id = {c.item_id: c for c in chosen}
    assert "e_ok" in by_id and by_id["e_ok"].kind == "episode"
    assert set(by_id["e_ok"].components) == {"cos", "goal_overlap", "success_prior", "recency"}
    assert "e_avoid" in by_id and any("avoidance reminder" in r for r in by_id["e_avoid"].reasons)
    assert "e_far" not in by_id  # below episode_min_cos
    # episode_budget = 0: no plain episode, the reminder is still the +1.
    mem2 = LearningMemory(
        store=mem.store, audit=mem.audit, namespace=NS, config=MemoryConfig(retrieval={"episode_budget": 0}), clock=mem.clock
    )
    ids = [c.item_id for c in mem2.retrieve_pre_run(task)]
    assert "e_ok" not in ids and "e_avoid" in ids


def test_skills_are_read_when_present(tmp_path: Path) -> None:
    mem = _mem(tmp_path)
    mem.write("skills", [Skill(id="s1", namespace=NS, name="filter then sort", goal_templates=[GOAL], steps=["keep age > 40"])])
    chosen = mem.retrieve_pre_run(TaskSpec(task_id="t", goal=GOAL, tool="gridtool"))
    assert [c.kind for c in chosen] == ["skill"] and chosen[0].item_id == "s1"
    assert mem.render(chosen).count("[skill:s1]") == 1


def test_choose_support_drops_weak_episodes() -> None:
    weak = _episode("w", "success", GOAL, "x").model_copy(update={"strength": 0.01})
    item = ScoredItem(kind="episode", item=weak, score=2.0, components={"cos": 0.9})
    assert choose_support([item]) == []
    strong = item.model_copy(update={"item": weak.model_copy(update={"strength": 1.0})})
    assert [c.item_id for c in choose_support([strong])] == ["w"]


def _event(fp_id: str, action: str) -> ErrorEvent:
    return ErrorEvent(
        id="ev", namespace=NS, run_id="r", step=1, fingerprint="command not recognised", fingerprint_id=fp_id,
        tags=["unknown_command"], channel="hard", action=action, error_text="gridtool: the command is not recognised",
        tool="gridtool",
    )


def test_tokens_are_reported_and_capped(tmp_path: Path) -> None:
    mem = _mem(tmp_path)
    mem.add_lessons([_lesson(f"l{i}", f"cmd{i}", f"CMD{i}", "fp1") for i in range(4)])
    event = _event("fp1", "cmd0 | cmd1 | cmd2 | cmd3")
    full = mem.retrieve_on_error(event)
    result = mem.last_retrieval
    assert result is not None and len(full) == 3 and result.tokens > 0
    assert result.tokens <= mem.config.context.max_context_tokens
    record = [r for r in mem.audit.read() if r["kind"] == "retrieval"][-1]
    assert record["tokens"] == result.tokens
    header = count_tokens(HINTS_HEADER).n
    # Room for the header and one compressed hint (instant memory compresses before it leaves a hint out).
    one_line = header + (result.tokens - header) // 3
    capped_mem = LearningMemory(store=mem.store, audit=mem.audit, namespace=NS, config=MemoryConfig(context={"max_context_tokens": one_line}))
    capped = capped_mem.retrieve_on_error(event)
    assert 0 < len(capped) < len(full)
    assert capped_mem.last_retrieval is not None and capped_mem.last_retrieval.tokens <= one_line
    assert any(why.startswith("token_cap:") for _, why in capped_mem.last_retrieval.dropped)
    none_mem = LearningMemory(store=mem.store, audit=mem.audit, namespace=NS, config=MemoryConfig(context={"max_context_tokens": 0}))
    assert none_mem.retrieve_on_error(event) == []


def test_failing_action_finds_the_fix_behind_a_new_fingerprint(tmp_path: Path) -> None:
    mem = _mem(tmp_path)
    mem.add_lessons([
        _lesson("fix", "zorbify", "ZORB", "fp_old"),
        _lesson("other", "plonk", "PLONK", "fp_old"),
        _lesson("elsewhere", "zorbify", "ZB", "fp_x", tool="fluxtool"),
    ])
    chosen = mem.retrieve_on_error(_event("fp_never_seen", "load t.csv | zorbify name"))
    assert chosen and chosen[0].item_id == "fix"
    assert "source:action" in chosen[0].reasons and chosen[0].components["fingerprint_match"] == mem.config.retrieval.action_match_credit
    others = {c.item_id: c for c in mem.last_retrieval.candidates} if mem.last_retrieval else {}
    assert others["other"].components["fingerprint_match"] == 0.0  # its WRONG is not in the action


def test_text_similarity_survives_a_failing_vector_read(tmp_path: Path) -> None:
    mp = pytest.MonkeyPatch()
    mem = _mem(tmp_path)
    mem.add_lessons([_lesson("fix", "zorbify", "ZORB", "fp_old"), _lesson("other", "plonk", "PLONK", "fp_old")])

    def broken(kind: str, ids: object) -> dict[str, object]:
        raise RuntimeError("Error getting embedding")

    mp.setattr(mem.store, "stored_embeddings", broken)
    mp.setattr(mem.engine.sources, "vector", lambda qvec, n: {})  # every candidate needs a stored vector
    try:
        chosen = mem.retrieve_on_error(_event("fp_old", "zorbify name"))
    finally:
        mp.undo()
    assert {c.item_id for c in chosen} == {"fix", "other"}
    assert all(c.components["text_similarity"] > 0 for c in chosen)


def test_the_audit_record_lists_the_candidates_as_retrieved(tmp_path: Path) -> None:
    """The retrieval's audit record (its candidates built on the writer's thread) holds each of the first
    ``candidates_k`` candidates' id, score to 4 places and components, and the chosen ids, as the retrieval returned them."""
    mem = _mem(tmp_path)
    mem.add_lessons([_lesson(f"l{i}", f"cmd{i}", f"CMD{i}", "fp1") for i in range(4)])
    chosen = mem.retrieve_on_error(_event("fp1", "cmd0 | cmd2"))
    result = mem.last_retrieval
    assert result is not None
    record = [r for r in mem.audit.read() if r["kind"] == "retrieval"][-1]
    assert record["candidates"] == [
        {"id": c.item_id, "score": round(c.score, 4), "components": dict(c.components)}
        for c in result.candidates[: mem.config.retrieval.candidates_k]
    ]
    assert record["chosen"] == [c.item_id for c in chosen] and len(record["candidates"]) == 4
