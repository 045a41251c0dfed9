"""``textgames.learners.revision``: a stored avoidance is rewritten once memory knows its verb is a directive."""

from __future__ import annotations

from text_learning_cases import FATAL, SCORED, learned, rules

TWO = "Ingredients:\n  red apple\n\nDirections:\n  {} the red apple\n  roast the red apple"


def test_an_avoidance_learned_in_a_situation_becomes_undirected_once_its_verb_is_seen_directed() -> None:
    runs = [("a", TWO.format("chop"), "slice red apple", FATAL, "x"), ("b", TWO.format("slice"), "slice red apple", SCORED, "x")]
    revised = learned(runs)
    (new,) = [l for l in revised.values() if l.wrong == "slice <X>" and l.supersedes]
    assert new.applies_when == ["!slice <X>"] and set(new.provenance.run_ids) >= {"a"}  # it keeps the old rule's runs
    assert ("AVOID", "slice <X>", ("!slice <X>",)) in rules(revised)
    assert not any(l.supersedes for l in learned(runs, off={"revision"}).values())
