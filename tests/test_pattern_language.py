"""One pattern language for lesson actions: a tool lesson's forms and a text rule's patterns are read by one parser
(``forms.parse_form``) and matched by one matcher, ``<X>`` a phrase of words in both."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from langmem_plus.forms import occurs, parse_form, rewrite, tokenize, whole_match
from langmem_plus.learning.textmatch import ARTICLES, Pattern, bind, norm

WORDS = st.sampled_from(["cook", "in", "oven", "take", "from", "red", "apple", "door", "open", "2nd", "kitchen"])
PHRASE_WORDS = st.sampled_from(["red", "apple", "yellow", "bell", "pepper", "box", "3", "knife"])
SLOTS = st.sampled_from(["<X>", "<Y>"])


@st.composite
def patterns(draw: st.DrawFn) -> str:
    """A pattern of literal words and phrase placeholders, with at least one word."""
    parts = draw(st.lists(st.one_of(WORDS, SLOTS), min_size=1, max_size=6))
    if all(p.startswith("<") for p in parts):
        parts.insert(draw(st.integers(0, len(parts))), draw(WORDS))
    return " ".join(parts)


@st.composite
def bound_actions(draw: st.DrawFn) -> tuple[str, str]:
    """A pattern and an action made from it by binding each placeholder to a phrase."""
    pattern = draw(patterns())
    binding = {s: " ".join(draw(st.lists(PHRASE_WORDS, min_size=1, max_size=3))) for s in "XY"}
    action = bind(pattern, binding)
    assert action is not None
    return pattern, action


@settings(max_examples=300, deadline=None)
@given(bound_actions())
def test_a_bound_pattern_matches_and_its_binding_gives_the_action_back(case: tuple[str, str]) -> None:
    pattern, action = case
    p = Pattern.parse(pattern)
    assert p is not None
    found = p.match(action)
    assert found is not None
    assert bind(pattern, found) == norm(action)
    assert occurs(action, " ".join(w if w.startswith("<") else norm(w) for w in pattern.split()))


@settings(max_examples=200, deadline=None)
@given(patterns(), st.lists(WORDS, min_size=1, max_size=6))
def test_a_match_is_always_the_action_rebound(pattern: str, words: list[str]) -> None:
    action = " ".join(words)
    p = Pattern.parse(pattern)
    assert p is not None
    found = p.match(action)
    if found is not None:
        assert bind(pattern, found) == norm(action)
        assert all(found[s] and not set(found[s].split()) & ARTICLES for s in p.slots)


def test_an_action_is_compared_normalised_and_whole() -> None:
    cook = Pattern.parse("cook <X> in oven")
    assert cook is not None
    assert cook.match("Cook the Red Apple in oven") == {"X": "red apple"}
    assert cook.match("cook red apple in oven now") is None
    assert cook.match("cook in oven") is None
    same = Pattern.parse("take <X> from <X>")
    assert same is not None
    assert same.match("take box from box") == {"X": "box"}
    assert same.match("take box from shelf") is None
    assert Pattern.parse("<X> <Y>") is None


def test_a_phrase_placeholder_serves_a_tool_lesson_too() -> None:
    assert rewrite("SELECT first name FROM pets", "SELECT <X> FROM", "SELECT <X> AS n FROM") == \
        "SELECT first name AS n FROM pets"
    # a one-value placeholder binds one token; a phrase binds a run of words, never punctuation or strings
    assert not occurs("f(a b)", "f(<n>)")
    assert occurs("f(a b)", "f(<X>)")
    assert not occurs("f(a, b)", "f(<X>)")
    assert not occurs("f('a')", "f(<X>)")
    assert whole_match(parse_form("open <X>"), tokenize("open 2nd door")) is not None
