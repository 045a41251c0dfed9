"""Typed conditions (``langmem_plus.conditions``): the stored form's codec, and the precondition reader as the exact
inverse of the one renderer, over generated conditions and actions."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from langmem_plus.conditions import (
    After,
    Condition,
    Listed,
    NotNamed,
    NotSaid,
    Says,
    canonical,
    encode,
    parse,
    read_precondition,
    render_precondition,
)
from langmem_plus.learning.hints import hint_from_item
from langmem_plus.learning.textmatch import Pattern
from langmem_plus.records import Lesson, ScoredItem
from langmem_plus.textgames.executor import read_hint

WORDS = st.sampled_from(["roast", "red", "apple", "in", "oven", "says", "not", "name", "after", "unless", "the", "task",
                         "so", "and", "or", "does", "say", "when", "chop", "take", "knife", "2", "it's"])
SLOTS = st.sampled_from("XYZ")
TOKEN = st.one_of(WORDS, SLOTS.map(lambda s: f"<{s}>"))
WORDED = st.tuples(WORDS, st.lists(TOKEN, max_size=5)).map(lambda t: " ".join([t[0], *t[1]]))
"""A line that opens with a word: never a bare placeholder, never a prefix."""

CONDITION: st.SearchStrategy[Condition] = st.one_of(
    WORDED.map(Says), SLOTS.map(Listed), SLOTS.map(NotNamed), WORDED.map(NotSaid), WORDED.map(After))


@given(CONDITION)
def test_the_stored_form_is_read_back_as_the_condition_it_encodes(condition: Condition) -> None:
    assert parse(encode(condition)) == condition
    assert encode(parse(encode(condition))) == encode(condition)


@settings(max_examples=300)
@given(st.lists(CONDITION, max_size=6), st.one_of(st.none(), WORDED), st.booleans())
def test_reading_a_rendered_precondition_gives_back_its_conditions(conditions: list[Condition], avoided: str | None,
                                                                  own: bool) -> None:
    if own and avoided is not None:  # the avoidance's own pattern: said "unless the task says so"
        conditions = [c for c in conditions if isinstance(c, After)] + [NotSaid(avoided)]
    text = render_precondition(conditions, avoided=avoided)
    assert (text is None) == (not conditions)
    read = read_precondition(text)
    assert read.of(avoided or "") == canonical(conditions) if read.said_so else read.conditions == canonical(conditions)


@settings(max_examples=200)
@given(st.lists(CONDITION, max_size=5), WORDED.filter(lambda p: Pattern.parse(f"{p} <X>") is not None))
def test_the_reference_executor_reads_what_a_lesson_shows(conditions: list[Condition], pattern: str) -> None:
    """Any pattern an action can match (not articles alone, which ``textmatch.norm`` drops)."""
    lesson = Lesson(id="l", namespace=("ns",), rule_text="r", wrong=f"{pattern} <X>", applies_when=[encode(c) for c in conditions])
    assert lesson.conditions == tuple(conditions)
    hint = hint_from_item(ScoredItem(kind="lesson", item=lesson, score=1.0))
    read = read_hint(hint)
    assert read is not None and len(read.patterns) == 1
    assert tuple(map(parse, read.conditions_of(read.patterns[0]))) == canonical(conditions)


def test_a_condition_it_cannot_read_is_refused_when_a_lesson_is_made() -> None:
    for bad in ("", "  ", "!", "^ "):
        with pytest.raises(ValueError):
            parse(bad)
        with pytest.raises(ValueError, match="condition"):
            Lesson(id="l", namespace=("ns",), rule_text="r", wrong="eat <X>", applies_when=[bad])
