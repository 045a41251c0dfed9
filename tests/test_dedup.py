"""SimHash dedup, merging and conflict detection (design.md §6)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from langmem_plus.config import DEFAULT_CONFIG, MemoryConfig
from langmem_plus.learning.dedup import (
    find_conflicts,
    find_duplicate,
    hamming,
    lesson_simhash,
    merge,
    normalize_rule,
    simhash,
    simhash_reference,
)
from langmem_plus.learning.utility import reliability
from langmem_plus.records import Lesson, LessonStats, Provenance

RULE = "WRONG: sort * desc -> CORRECT: order * down (when: unknown keyword <str> in sort stage <num>) fp_1a2b3c4d"
UNRELATED = [
    "AVOID: rm -rf <str> (fails with: permission denied on path <path>) fp_777",
    "WRONG: filter -> CORRECT: keep (when: unknown command <str> at stage <num>) fp_abc",
    "use pick instead of select for columns",
]


def rule_lesson(id: str, wrong: str | None, correct: str | None, triggers: list[str], **kw: object) -> Lesson:
    text = f"WRONG: {wrong} -> CORRECT: {correct}" if wrong else f"AVOID: {id}"
    base: dict[str, object] = dict(
        id=id, namespace=("ns",), rule_text=text, wrong=wrong, correct=correct, triggers=triggers
    )
    base.update(kw)
    les = Lesson.model_validate(base)
    return les.model_copy(update={"simhash": lesson_simhash(les)})


def h(text: str) -> int:
    return simhash(normalize_rule(text))


# --------------------------------------------------------------------------- simhash


def test_normalize_rule() -> None:
    assert normalize_rule('  WRONG: "filter"  ->\n CORRECT: `keep`. ') == "wrong: 'filter' -> correct: 'keep'"


def test_simhash_near_duplicates_close_unrelated_far() -> None:
    variant = (
        "wrong:  sort * desc -> correct: order * down  (when: unknown keyword <str> in sort stage <num>) fp_1a2b3c4d."
    )
    assert hamming(h(RULE), h(variant)) == 0
    one_more_trigger = hamming(h(RULE), h(RULE + " fp_9z"))
    far = [hamming(h(RULE), h(u)) for u in UNRELATED]
    assert one_more_trigger <= DEFAULT_CONFIG.lifecycle.dedup_max_hamming
    assert min(far) > 3 * DEFAULT_CONFIG.lifecycle.dedup_max_hamming


def test_simhash_is_stable_across_processes() -> None:
    code = f"from langmem_plus.learning.dedup import simhash; print(simhash({RULE!r}))"
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert int(out.stdout) == simhash(RULE)


@given(st.text(max_size=60), st.sampled_from([16, 32, 64]))
def test_simhash_width_and_determinism(text: str, bits: int) -> None:
    v = simhash(text, bits)
    assert 0 <= v < 2**bits and v == simhash(text, bits)


@given(st.text(max_size=200), st.sampled_from([1, 16, 33, 64]))
def test_simhash_equals_the_bit_by_bit_reference(text: str, bits: int) -> None:
    assert simhash(text, bits) == simhash_reference(text, bits)
    assert simhash(RULE + " " + text, bits) == simhash_reference(RULE + " " + text, bits)


def test_simhash_of_a_huge_text_is_voted_in_blocks_and_equals_the_reference() -> None:
    huge = " ".join(f"tok{i % 7000}" for i in range(20_000))  # more features than one block
    assert simhash(huge) == simhash_reference(huge)


def test_simhash_edges() -> None:
    assert simhash("") == 0
    with pytest.raises(ValueError):
        simhash("x", 65)
    assert len(lesson_simhash(rule_lesson("a", "x", "y", ["fp"]))) == 16


# --------------------------------------------------------------------------- find_duplicate


def test_find_duplicate_by_same_id() -> None:
    a = rule_lesson("les_1", "filter", "keep", ["fp1"])
    assert find_duplicate(a, [rule_lesson("les_1", "x", "y", ["fp9"])]) is not None


def test_find_duplicate_by_simhash_near_text() -> None:
    a = rule_lesson("les_1", "filter", "keep", ["fp1"], rule_text="WRONG: filter -> CORRECT: keep")
    b = rule_lesson("les_2", None, None, ["fp1"], rule_text="wrong:   FILTER -> correct: keep.")
    found = find_duplicate(b, [a])
    assert found is not None and found.id == "les_1"


def test_find_duplicate_by_same_rule_and_shared_trigger() -> None:
    a = rule_lesson("les_1", "filter", "keep", ["fp1", "fp2"], rule_text="learned in run 1: filter is keep")
    b = rule_lesson("les_2", "Filter", "keep", ["fp2"], rule_text="totally different wording of the same rule")
    assert find_duplicate(b, [a]) is not None
    c = rule_lesson("les_3", "filter", "keep", ["fp7"], rule_text="totally different wording of the same rule")
    assert find_duplicate(c, [a]) is None  # no shared trigger, far text


def test_find_duplicate_ignores_unrelated_and_other_namespaces() -> None:
    a = rule_lesson("les_1", "filter", "keep", ["fp1"])
    other_ns = a.model_copy(update={"id": "les_2", "namespace": ("other",)})
    assert find_duplicate(a, [other_ns]) is None
    assert find_duplicate(a, [rule_lesson("les_3", "sort * desc", "order * down", ["fp5"])]) is None


def test_near_simhash_with_a_different_fix_is_not_a_duplicate() -> None:
    loose = MemoryConfig(lifecycle={"dedup_max_hamming": 64})  # everything is "near"
    a = rule_lesson("les_1", "filter", "keep", ["fp1"])
    b = rule_lesson("les_2", "filter", "where", ["fp1"])
    assert find_duplicate(b, [a], loose) is None
    c = rule_lesson("les_3", None, None, ["fp1"])
    assert find_duplicate(c, [a], loose) is not None


# --------------------------------------------------------------------------- merge


def test_merge_keeps_older_id_and_unions() -> None:
    old = rule_lesson(
        "les_old",
        "filter",
        "keep",
        ["fp1"],
        tags=["unknown_command"],
        created_at=100.0,
        stats=LessonStats(activations=2, helped=2, harmed=0, evidence_runs=2, utility_window=[0.5, 0.4]),
        provenance=Provenance(run_ids=["r1"], event_ids=["e1"]),
        status="promoted",
    )
    new = rule_lesson(
        "les_new",
        "filter",
        "keep",
        ["fp2", "fp1"],
        tags=["syntax_structure"],
        created_at=200.0,
        stats=LessonStats(activations=1, helped=0, harmed=1, evidence_runs=1, utility_window=[-0.1]),
        provenance=Provenance(run_ids=["r2"], event_ids=["e2"]),
        conflicts_with=["les_old", "les_x"],
    )
    for merged in (merge(old, new, now=999.0), merge(new, old, now=999.0)):
        assert merged.id == "les_old" and merged.status == "promoted"
        assert merged.triggers == ["fp1", "fp2"]
        assert merged.tags == ["unknown_command", "syntax_structure"]
        assert merged.provenance.run_ids == ["r1", "r2"] and merged.provenance.event_ids == ["e1", "e2"]
        assert (merged.stats.activations, merged.stats.helped, merged.stats.harmed) == (3, 2, 1)
        assert merged.stats.utility_window == [0.5, 0.4, -0.1]
        assert merged.reliability == pytest.approx(reliability(2, 1))
        assert merged.conflicts_with == ["les_x"]
        assert merged.supersedes == ["les_new"]
        assert merged.created_at == 100.0 and merged.updated_at == 999.0
        assert merged.simhash == lesson_simhash(merged)


# --------------------------------------------------------------------------- conflicts


def test_conflicts_same_wrong_different_correct() -> None:
    keep = rule_lesson("les_keep", "filter", "keep", ["fp1"])
    where = rule_lesson("les_where", "filter", "where", ["fp1", "fp2"])
    same = rule_lesson("les_same", "filter", "keep", ["fp1"])
    elsewhere = rule_lesson("les_far", "filter", "where", ["fp9"])
    assert find_conflicts(keep, [keep, where, same, elsewhere]) == ["les_where"]


def test_conflicts_through_wildcard_patterns() -> None:
    keep = rule_lesson("les_keep", "filter", "keep", ["fp1"])
    where_star = rule_lesson("les_ws", "filter *", "where *", ["fp1"])
    keep_star = rule_lesson("les_ks", "filter *", "keep *", ["fp1"])
    assert find_conflicts(keep, [where_star, keep_star]) == ["les_ws"]


def test_complementary_fixes_for_one_trigger_do_not_conflict() -> None:
    filter_keep = rule_lesson("les_1", "filter", "keep", ["fp_unknown_command"])
    select_pick = rule_lesson("les_2", "select", "pick", ["fp_unknown_command"])
    avoid = rule_lesson("les_3", None, None, ["fp_unknown_command"])
    assert find_conflicts(filter_keep, [select_pick, avoid]) == []
    assert find_conflicts(avoid, [filter_keep]) == []
