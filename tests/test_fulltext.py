"""The shared full-text helpers: user text never becomes FTS5 syntax, and a common last
word is matched whole."""
from __future__ import annotations

import sqlite3

from hypothesis import given, settings
from hypothesis import strategies as st

from simweb.core.fulltext import PrefixPolicy, match_expression, words
from simweb.core.worlddb import LRU


def test_match_expression_quotes_ands_and_prefixes():
    assert match_expression('Wool "socks" OR (boots*)', {"or"}) == '"wool" AND "socks" AND "boots"*'
    assert match_expression("the a", {"the", "a"}) is None
    assert match_expression("tv", ()) == '"tv"'                       # too short for a prefix
    assert match_expression("one two three", (), max_terms=2) == '"one" AND "two"*'
    assert match_expression("Lamp lamp LAMP", ()) == '"lamp"*'


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60))
def test_any_text_is_a_valid_fts5_query(text):
    con = sqlite3.connect(":memory:")
    con.execute("CREATE VIRTUAL TABLE t USING fts5(body)")
    con.execute("INSERT INTO t VALUES ('wool socks and boots')")
    expr = match_expression(text, ())
    if expr is not None:
        con.execute("SELECT count(*) FROM t WHERE t MATCH ?", (expr,)).fetchone()
    assert all(w.isalnum() for w in words(text))


def test_prefix_policy_drops_the_prefix_of_a_common_word():
    con = sqlite3.connect(":memory:")
    con.execute("CREATE VIRTUAL TABLE docs USING fts5(body)")
    con.executemany("INSERT INTO docs VALUES (?)", [("lamp",)] * 5 + [("lampshade",)])
    policy = PrefixPolicy("docs", threshold=5)
    assert policy.apply(con, '"lamp"*') == '"lamp"'                  # 5 rows: typed whole
    assert policy.apply(con, '"lampsh"*') == '"lampsh"*'
    assert policy.apply(con, '"red" AND "lamp"*') == '"red" AND "lamp"'
    policy.threshold = 10
    policy.forget()
    assert policy.apply(con, '"lamp"*') == '"lamp"*'
    assert policy.apply(con, None) is None


def test_lru_evicts_the_least_recently_used():
    c = LRU(2)
    c.put("a", 1)
    c.put("b", 2)
    assert c.get("a") == 1
    c.put("c", 3)
    assert c.get("b") is None and c.get("a") == 1 and c.get("c") == 3
