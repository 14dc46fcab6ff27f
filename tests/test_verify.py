"""Verdict building blocks: typed answer matching and collateral-damage diffs."""
from __future__ import annotations

from datetime import date

from hypothesis import given
from hypothesis import strategies as st

from simweb.judging.verify import (
    changed_paths,
    match_date,
    match_exact,
    match_money,
    match_number,
    match_sequence,
    match_set,
)


def test_money_and_numbers_match_by_value_not_text():
    assert match_money("$0.00", 0) and match_money("0", 0)
    assert match_money("It costs $1,234.50.", 123450)
    assert not match_money("$12.34 or $12.35", 1234)       # two numbers: ambiguous
    assert match_number("42 reviews", 42) and not match_number("41", 42)


@given(st.integers(0, 10**9))
def test_money_matches_one_amount_to_the_cent(cents):
    """Every way of writing the amount matches it; its neighbours and any amount between
    two cents ("$292.005") match nothing."""
    dollars, rest = divmod(cents, 100)
    for written in (f"${dollars:,}.{rest:02d}", f"{dollars}.{rest:02d}", f"USD {dollars}.{rest:02d}0"):
        assert match_money(written, cents), written
        assert not match_money(written, cents + 1) and not match_money(written, cents - 1), written
    half = f"{dollars}.{rest:02d}5"
    assert not any(match_money(half, c) for c in (cents - 1, cents, cents + 1)), half


def test_text_date_set_sequence():
    assert match_exact("  Shipped. ", "shipped")
    assert match_date("March 3, 2026", date(2026, 3, 3)) and match_date("2026-03-03", date(2026, 3, 3))
    assert match_set("b, a and c", ["a", "b", "c"])
    assert not match_sequence("b, a", ["a", "b"]) and match_sequence("a; b", ["a", "b"])


def test_diff_names_changed_leaves():
    a = {"carts": {"1": {"items": [1]}}, "wishlists": {"1": [5]}, "entities": {}}
    b = {"carts": {"1": {"items": [1, 2]}}, "wishlists": {"1": []}, "entities": {"orders": {}}}
    assert changed_paths(a, b) == ["runtime.carts.1.items", "runtime.wishlists.1"]


json_leaf = st.one_of(st.integers(-5, 5), st.text(max_size=3), st.booleans(), st.none())
json_doc = st.recursive(json_leaf, lambda c: st.dictionaries(st.text("abc", min_size=1, max_size=2), c, max_size=3),
                        max_leaves=10)


@given(json_doc, json_doc)
def test_diff_is_empty_exactly_when_equal_modulo_empty_keys(a, b):
    if a == b:
        assert changed_paths(a, b) == []
    if changed_paths(a, b) == []:
        assert changed_paths(b, a) == []


def test_answer_checks_name_what_was_expected():
    from datetime import date

    from simweb.judging.verify import answer_check

    assert answer_check("money", "It costs $12.50.", 1250, "price") == {
        "name": "answer is the price", "passed": True, "weight": 1.0, "detail": "expected $12.50, got 'It costs $12.50.'"}
    assert not answer_check("number", "7", 8, "count")["passed"]
    assert answer_check("date", "March 3, 2026", date(2026, 3, 3), "day")["detail"].startswith("expected 2026-03-03")
    c = answer_check("set", "b, a", ["a", "b"], "tags")
    assert c["name"] == "answer lists the tags" and c["passed"]

