"""The caches a step goes through: repeated world queries (worlddb.QueryCache behind
ReadOnlyDB.conn) and repeated action strings (browsing._parse_action) answer exactly as
the uncached path does."""
from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from simweb.core.worlddb import CachedConnection, QueryCache, ReadOnlyDB
from simweb.web import browsing
from simweb.web.actions import ActionError, parse_action


@pytest.fixture()
def db(tmp_path: Path) -> ReadOnlyDB:
    path = tmp_path / "w.sqlite"
    c = sqlite3.connect(path)
    c.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, n REAL)")
    c.executemany("INSERT INTO t VALUES (?, ?, ?)", [(i, f"n{i}", i / 2) for i in range(1, 1201)])
    c.commit()
    c.close()
    return ReadOnlyDB(path)


def test_repeated_select_is_answered_from_the_cache_with_the_same_rows(db: ReadOnlyDB) -> None:
    conn = db.conn()
    assert isinstance(conn, CachedConnection)
    sql = "SELECT id, name FROM t WHERE id <= ? ORDER BY id"
    first = conn.execute(sql, (3,)).fetchall()
    misses = db.cache.misses
    again = conn.execute(sql, (3,))
    assert db.cache.hits == 1 and db.cache.misses == misses
    assert again.fetchone() == (1, "n1")
    assert again.fetchall() == first[1:] == [(2, "n2"), (3, "n3")]
    assert again.fetchone() is None
    assert list(conn.execute(sql, [3])) == first          # a list of parameters is the same key
    assert dict(conn.execute("SELECT id, name FROM t WHERE id < ?", (3,))) == {1: "n1", 2: "n2"}
    assert conn.execute(sql, (2,)).fetchall() == first[:2]  # other parameters, other entry


def test_iteration_takes_the_rows_not_yet_fetched(db: ReadOnlyDB) -> None:
    conn = db.conn()
    sql = "SELECT id FROM t WHERE id <= 4 ORDER BY id"
    conn.execute(sql).fetchall()
    cur = conn.execute(sql)                      # from the cache
    assert cur.fetchone() == (1,)
    assert list(cur) == [(2,), (3,), (4,)]
    assert cur.fetchone() is None and list(cur) == []
    big = conn.execute("SELECT id FROM t ORDER BY id")   # over max_rows: the live cursor follows
    assert big.fetchmany(600)[-1] == (600,)
    assert next(iter(big)) == (601,)


def test_fetchall_returns_a_fresh_list_each_time(db: ReadOnlyDB) -> None:
    conn = db.conn()
    sql = "SELECT id FROM t WHERE id <= 2"
    conn.execute(sql).fetchall().append("junk")
    assert conn.execute(sql).fetchall() == [(1,), (2,)]


def test_parameter_types_are_part_of_the_key(db: ReadOnlyDB) -> None:
    conn = db.conn()
    assert conn.execute("SELECT ?", (1,)).fetchone() == (1,)
    got = conn.execute("SELECT ?", (1.0,)).fetchone()
    assert got == (1.0,) and type(got[0]) is float
    assert type(conn.execute("SELECT ?", (True,)).fetchone()[0]) is int   # SQLite's bool


def test_a_large_result_is_read_whole_and_not_kept(db: ReadOnlyDB) -> None:
    conn = db.conn()
    sql = "SELECT id FROM t ORDER BY id"
    cur = conn.execute(sql)
    assert cur.fetchone() == (1,)
    assert cur.fetchmany(2) == [(2,), (3,)]
    assert len(cur.fetchall()) == 1197
    rows = list(conn.execute(sql))
    assert len(rows) == 1200 and rows[-1] == (1200,)
    assert db.cache.hits == 0


def test_errors_and_other_statements_reach_sqlite(db: ReadOnlyDB) -> None:
    conn = db.conn()
    with pytest.raises(sqlite3.OperationalError):
        conn.execute("DELETE FROM t")
    with pytest.raises(sqlite3.OperationalError):
        conn.execute("SELECT nope FROM t")
    with pytest.raises(sqlite3.OperationalError):   # a failed query is not remembered
        conn.execute("SELECT nope FROM t")
    with pytest.raises(sqlite3.ProgrammingError):   # unhashable parameter: SQLite's own error
        conn.execute("SELECT ?", ([1],))
    assert conn.execute("PRAGMA query_only").fetchone() is not None
    assert conn.total_changes == 0                  # other attributes are the connection's


def test_the_cache_keeps_at_most_its_budget_of_rows() -> None:
    cache = QueryCache(max_rows=10, budget=25)
    for i in range(10):
        cache.put(("q", (i,), (int,)), [(i,)] * 5)
    held = sum(len(v) + 1 for v in cache._data.values())
    assert held <= 25 and len(cache._data) == 4
    assert cache.get(("q", (9,), (int,))) == [(9,)] * 5   # the newest stay
    assert cache.get(("q", (0,), (int,))) is None


def test_parsed_actions_are_reused_and_errors_still_raise() -> None:
    text = "click('a12')"
    assert browsing._parse_action(text) is browsing._parse_action(text)
    assert browsing._parse_action(text) == parse_action(text)
    for _ in range(2):
        with pytest.raises(ActionError, match="Unknown action|unknown action"):
            browsing._parse_action("klick('a12')")


_FORMS = """<html><body>
<form bid="f1" action="/a" method="post"><input bid="x" name="x" value="1"><button bid="b1">Go</button></form>
<form bid="f2" action="/b"><input type="hidden" name="h" value="2"><select bid="s" name="s">
<option value="p">P</option><option value="q" selected>Q</option></select><button bid="b2">Send</button></form>
<input bid="far" name="far" form="f2-id" value="3">
</body></html>""".replace('<form bid="f2"', '<form bid="f2" id="f2-id"')


def test_one_form_is_built_alone_and_matches_the_forms_list() -> None:
    from simweb.web.axtree import parse_page

    page = parse_page(_FORMS)
    second = page.form(1)
    assert (second.bid, second.action, second.method) == ("f2", "/b", "get")
    assert [c.field_name for c in second.controls] == ["h", "s", None, "far"]
    assert second.controls[1].value == "q"
    assert page.forms[1] is second                 # the list reuses what form() built
    assert page.form(0) is page.forms[0]
    assert [c.bid for c in page.forms[0].controls] == ["x", "b1"]
    fresh = parse_page(_FORMS)
    assert [(f.bid, [c.bid for c in f.controls]) for f in fresh.forms] == \
        [(f.bid, [c.bid for c in f.controls]) for f in page.forms]
    assert fresh.form(1) is fresh.forms[1]


def test_a_fork_taken_while_the_cache_is_locked_leaves_the_child_a_usable_cache() -> None:
    import os

    cache = QueryCache()
    cache.put(("q", (), ()), [(1,)])
    with cache._lock:   # as if another thread were inside get() when this one forks
        pid = os.fork()
        if pid == 0:   # pragma: no cover - the child reports through its exit code
            free = cache._lock.acquire(timeout=5)   # a held lock would time out, not hang
            if free:
                cache._lock.release()
            os._exit(0 if free and cache.get(("q", (), ())) == [(1,)] else 3)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


@pytest.mark.parametrize("app", ["forum", "cms"])
def test_no_template_compiles_inside_a_step(app: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every template is compiled when the app is built, so a page's first visit costs
    a render, not Jinja's compile: after make(), compiling anything is an error."""
    import jinja2

    import simweb

    env = simweb.make(app, seed=0)
    app_templates = set(env.app.jinja.list_templates(extensions=["html"]))
    assert app_templates, "the app lists its templates"

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a template was compiled during an episode")

    monkeypatch.setattr(jinja2.Environment, "compile", refuse)
    steps = 0
    for tid in sorted(env.app.tasks)[:6]:
        env.reset(seed=3, options={"task": tid})
        for action in env.oracle_plan():
            env.step(action)
            steps += 1
    assert steps > 10
