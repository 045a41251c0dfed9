"""Records repair untrusted input with a logged warning; MemoryConfig validates its numbers."""

import logging
import math

import pytest
from pydantic import ValidationError

from langmem_plus import InvalidNamespace, MemoryConfig
from langmem_plus.capture import detect_failure
from langmem_plus.config import DEFAULT_CONFIG, ERROR_TEXT_CEILING_CHARS, SCAN_CEILING_CHARS
from langmem_plus.records import ErrorEvent, Feedback, Step, validate_namespace


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf"), "abc"])
def test_non_finite_progress_becomes_unknown_with_a_warning(bad: object, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="langmem_plus"):
        fb = Feedback(progress=bad, reward=bad, efficiency={"seconds": bad, "cost": bad})
    assert fb.progress is None
    assert fb.reward == 0.0 and fb.efficiency.seconds == 0.0 and fb.efficiency.cost == 0.0
    assert any("progress" in r.message for r in caplog.records)


def test_progress_is_clipped() -> None:
    assert Feedback(progress=3.0).progress == 1.0
    assert Feedback(progress=-1).progress == 0.0


def test_binary_and_non_utf8_error_text_is_decoded_and_cleaned() -> None:
    fb = Feedback(error_text=b"\xff\xfeboom\x00\x01 at line 3")
    assert "boom" in fb.error_text and "\x00" not in fb.error_text and "\ufffd" in fb.error_text


def test_huge_text_is_cut_keeping_head_and_tail() -> None:
    text = "HEAD " + "x" * 1_000_000 + " TAIL: KeyError: 'k'"
    fb = Feedback(error_text=text)
    assert len(fb.error_text) <= SCAN_CEILING_CHARS
    assert fb.error_text.startswith("HEAD") and fb.error_text.endswith("KeyError: 'k'")
    step = Step(index=0, action="y" * 2_000_000)
    assert len(step.action) <= SCAN_CEILING_CHARS


def test_error_event_text_is_cut_to_the_ceiling_and_capture_to_the_design_limit() -> None:
    ev = ErrorEvent(
        id="e", namespace=("a",), run_id="r", step=0, fingerprint="f", fingerprint_id="x", channel="hard",
        error_text="z" * 100_000,
    )
    assert len(ev.error_text) <= ERROR_TEXT_CEILING_CHARS  # a record never holds more than any config may keep
    captured = detect_failure(
        Step(index=0, action="a", feedback=Feedback(hard_failure=True, error_text="error: " + "z" * 10_000)),
        [], namespace=("a",), run_id="r",
    )
    assert captured is not None and len(captured.error_text) <= 2000  # design.md §2, the default config


@pytest.mark.parametrize("bad", [(), ("",), ("a", " "), ("a\nb",), "", None, 5, ("x" * 200,)])
def test_bad_namespaces_are_refused(bad: object) -> None:
    with pytest.raises(InvalidNamespace):
        validate_namespace(bad)


def test_namespace_string_becomes_one_part_tuple() -> None:
    assert validate_namespace("acme") == ("acme",)
    assert validate_namespace(["acme", "agent-7"]) == ("acme", "agent-7")


def test_config_defaults_match_design_and_budget() -> None:
    cfg = MemoryConfig()
    assert (cfg.retrieval.candidates_k, cfg.retrieval.mmr_lambda, cfg.retrieval.recency_tau_hours) == (20, 0.4, 72.0)
    assert math.isclose(cfg.retrieval.w_fingerprint + cfg.retrieval.w_tags + cfg.retrieval.w_text + cfg.retrieval.w_reliability + cfg.retrieval.w_recency, 1.0)
    assert [cfg.budget_for(d) for d in (0.0, 0.3, 0.31, 0.7, 0.71, 1.0)] == [3, 3, 5, 5, 7, 7]


def test_config_rejects_inconsistent_numbers_and_unknown_fields() -> None:
    with pytest.raises(ValidationError):
        MemoryConfig(retrieval={"difficulty_easy_max": 0.9, "difficulty_medium_max": 0.5})
    with pytest.raises(ValidationError):
        MemoryConfig(mmr_lamda=0.3)  # a typo is an error, not silently ignored
    with pytest.raises(ValidationError):
        MemoryConfig(retrieval={"candidates_k": 0})


def test_every_config_field_is_documented() -> None:
    sections = [type(getattr(MemoryConfig(), name)) for name in MemoryConfig.model_fields]
    missing = [f"{s.__name__}.{n}" for s in sections for n, f in s.model_fields.items() if not f.description]
    assert sections and missing == []


def test_scored_item_id_of_each_kind() -> None:
    """``ScoredItem.item_id``: a lesson's (and a lesson subclass's) ``id``, an episode's ``episode_id``, a skill's ``id``."""
    from langmem_plus.records import Episode, Lesson, ScoredItem, Skill

    class Special(Lesson):
        pass

    ns = ("acme",)
    lesson = Lesson(id="l1", namespace=ns, rule_text="r")
    special = Special(id="l2", namespace=ns, rule_text="r")
    episode = Episode(episode_id="e1", namespace=ns, kind="success", goal_signature="g")
    skill = Skill.model_construct(id="s1")
    got = [ScoredItem.model_construct(kind=k, item=i, score=0.0).item_id
           for k, i in (("lesson", lesson), ("lesson", special), ("episode", episode), ("skill", skill))]
    assert got == ["l1", "l2", "e1", "s1"]


def test_the_config_is_nested_by_concern_and_the_flat_keywords_still_work_with_a_warning() -> None:
    import warnings

    from langmem_plus.config import SECTION_OF, SECTIONS

    nested = MemoryConfig(retrieval={"mmr_lambda": 0.5}, context={"max_context_tokens": 99})
    assert (nested.retrieval.mmr_lambda, nested.context.max_context_tokens) == (0.5, 99)
    assert set(SECTION_OF.values()) == set(SECTIONS) and len(SECTION_OF) > 100
    assert SECTIONS == tuple(MemoryConfig.model_fields)  # every section is a field of the config, in order
    with pytest.warns(DeprecationWarning, match="mmr_lambda -> retrieval.mmr_lambda"):
        flat = MemoryConfig(mmr_lambda=0.5, max_context_tokens=99)
    assert flat == nested
    with pytest.warns(DeprecationWarning):
        assert flat.mmr_lambda == 0.5  # a flat read, through its section
    with pytest.warns(DeprecationWarning):
        copied = DEFAULT_CONFIG.model_copy(update={"max_context_tokens": 99, "mmr_lambda": 0.5})
    assert copied == nested == DEFAULT_CONFIG.replace(retrieval={"mmr_lambda": 0.5}, context={"max_context_tokens": 99})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert DEFAULT_CONFIG.replace(storage={"snapshot": False}).storage.snapshot is False  # no warning
    with pytest.raises(ValidationError):
        DEFAULT_CONFIG.replace(retrieval={"mmr_lambda": 2.0})  # bounds are checked in the section
    with pytest.raises(ValidationError):
        MemoryConfig(retrieval={"no_such_field": 1})
    with pytest.raises(AttributeError):
        DEFAULT_CONFIG.no_such_field  # noqa: B018


def test_executor_policy_keywords_of_earlier_releases_are_accepted_warned_of_and_dropped() -> None:
    from langmem_plus.config import SECTION_OF
    from langmem_plus.textgames.policy import ExecutorPolicy

    assert not any(name.endswith("_bonus") for name in SECTION_OF)  # no player's policy in the memory's config
    with pytest.warns(DeprecationWarning, match=r"text_prefer_bonus -> textgames\.policy\.ExecutorPolicy\.prefer_bonus"):
        flat = MemoryConfig(text_prefer_bonus=5.0, retrieval={"mmr_lambda": 0.5})
    with pytest.warns(DeprecationWarning, match="explore_bonus"):
        sectioned = MemoryConfig(textgames={"text_explore_bonus": 1.0, "text_guard": "off"})
    assert flat.retrieval.mmr_lambda == 0.5 and sectioned.textgames.text_guard == "off"
    with pytest.warns(DeprecationWarning, match="sequence_bonus"):
        assert DEFAULT_CONFIG.model_copy(update={"text_sequence_bonus": 1.0}) == DEFAULT_CONFIG
    assert set(ExecutorPolicy.model_fields) >= {"prefer_bonus", "condition_bonus", "sequence_bonus", "explore_bonus"}
    with pytest.raises(ValidationError):
        ExecutorPolicy(paragraph_weight=2.0)
