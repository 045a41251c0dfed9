"""WRONG -> CORRECT rewrites: derived from a contrastive pair, they must generalise over literals."""

from hypothesis import given
from hypothesis import strategies as st

from langmem_plus.rewrite import apply_rewrite, derive_rewrite, derive_rewrites

ident = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True).filter(lambda s: s not in {"sort", "desc", "order", "down"})


@given(learned=ident, other=ident)
def test_rule_learned_on_one_column_fixes_another(learned: str, other: str) -> None:
    rule = derive_rewrite(f"sort {learned} desc | take 3", f"order {learned} down | take 3")
    assert rule == ("sort * desc", "order * down")
    assert apply_rewrite(f"keep x > 1 | sort {other} desc", *rule) == f"keep x > 1 | order {other} down"


def test_single_keyword_replacement_and_error_hint_choice() -> None:
    rules = derive_rewrites("filter age > 30 | select name", "keep age > 30 | pick name")
    assert [(r.wrong, r.correct) for r in rules] == [("filter", "keep"), ("select", "pick")]
    # the error text names 'select', so that rule is preferred over the first
    assert derive_rewrite("filter age > 30 | select name", "keep age > 30 | pick name", "unknown command 'select'") == (
        "select",
        "pick",
    )


def test_quote_style_generalises_to_other_strings() -> None:
    rule = derive_rewrite('keep city = "Oslo"', "keep city = 'Oslo'")
    assert rule == ('"*"', "'*'")
    assert apply_rewrite('keep town = "Paris" | pick a', *rule) == "keep town = 'Paris' | pick a"


def test_unquoting_rule() -> None:
    rule = derive_rewrite('pick "name"', "pick name")
    assert rule == ('"*"', "*")
    assert apply_rewrite('pick "age"', *rule) == "pick age"


def test_no_match_and_no_difference_give_none() -> None:
    assert apply_rewrite("nothing here", "sort * desc", "order * down") is None
    assert derive_rewrite("a b c", "a b c") is None


def test_text_outside_the_match_is_kept_exactly() -> None:
    action = "LOAD  people |  sort age desc  | TAKE 3"
    assert apply_rewrite(action, "sort * desc", "order * down") == "LOAD  people |  order age down  | TAKE 3"


def test_every_occurrence_is_rewritten() -> None:
    assert apply_rewrite("filter a > 1 | filter b < 2", "filter", "keep") == "keep a > 1 | keep b < 2"


def test_too_wide_change_is_not_a_rule() -> None:
    failed = "a b c d e f g h"
    fixed = "p q r s t u v w"
    assert derive_rewrite(failed, fixed) is None


def test_error_names_fix_sees_bare_tokens_and_quoted_pieces() -> None:
    from langmem_plus.rewrite import error_names_fix

    assert error_names_fix("|>", "stage #1: unexpected token '|>' (fluxtool does not chain stages with it)")
    assert error_names_fix("descending", "direction must be lo-hi or hi-lo, got 'descending'")
    assert error_names_fix("order * down", "unknown verb 'order' at stage 2")
    assert not error_names_fix("->", "stage #2: unknown verb 'filter'")
    assert not error_names_fix("*", "anything at all")
