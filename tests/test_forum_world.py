"""Behaviour of the forum's generated world data (apps/forum/world.py).

Worlds are small (a few thousand posts) and built in a temporary ``SIMWEB_CACHE`` so
the suite stays fast and never touches the user's cache.
"""
from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simweb.apps.forum import world as W
from simweb.apps.forum.world import (
    MAX_DEPTH,
    WINDOWS,
    ForumWorld,
    hot_score,
    match_expression,
)
from simweb.core.worlddb import forget_open_worlds

SIZE = 2000
TABLES = ("users", "communities", "moderators", "posts", "comments", "votes", "subscriptions", "saved", "messages",
          "bans", "mod_log")


def _load_in(cache: Path, seed: int, size: int) -> ForumWorld:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SIMWEB_CACHE", str(cache))
        return ForumWorld.load(seed, size)


@pytest.fixture(scope="session")
def world(tmp_path_factory: pytest.TempPathFactory) -> ForumWorld:
    return _load_in(tmp_path_factory.mktemp("forum-cache"), 0, SIZE)


def _dump(path: str) -> dict[str, list[tuple]]:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return {t: con.execute(f"SELECT * FROM {t} ORDER BY 1, 2").fetchall() for t in TABLES}
    finally:
        con.close()


# ----------------------------------------------------------------------------- determinism and caching

def test_same_seed_same_hash_and_rows(tmp_path: Path, world: ForumWorld) -> None:
    other = _load_in(tmp_path, 0, SIZE)
    assert other.path != world.path
    assert other.hash == world.hash
    assert _dump(other.path) == _dump(world.path)


def test_different_seed_different_world(tmp_path: Path, world: ForumWorld) -> None:
    other = _load_in(tmp_path, 1, SIZE)
    assert other.hash != world.hash
    assert other.post(1)["title"] != world.post(1)["title"] or other.post(2)["title"] != world.post(2)["title"]


def test_hash_stable_across_processes_and_hash_seeds(tmp_path: Path, world: ForumWorld) -> None:
    code = textwrap.dedent(f"""
        from simweb.apps.forum.world import ForumWorld
        print(ForumWorld.load(0, {SIZE}).hash)
    """)
    for hash_seed in ("1", "12345"):
        env = dict(os.environ, SIMWEB_CACHE=str(tmp_path / hash_seed), PYTHONHASHSEED=hash_seed)
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        assert out.stdout.strip() == world.hash


def test_load_is_memoized_and_read_only(world: ForumWorld) -> None:
    assert _load_in(Path(world.path).parent, 0, SIZE) is world
    assert Path(world.path).name == f"forum-v{W.GENERATOR_VERSION}-seed0-n{SIZE}.sqlite"
    con = world._conn()
    with pytest.raises(sqlite3.OperationalError):
        con.execute("DELETE FROM posts")


def test_stale_cache_file_is_rebuilt(tmp_path: Path) -> None:
    w = _load_in(tmp_path, 3, 300)
    path = Path(w.path)
    forget_open_worlds()
    con = sqlite3.connect(path)
    con.execute("UPDATE meta SET value = 'stale' WHERE key = 'schema'")
    con.commit()
    con.close()
    again = _load_in(tmp_path, 3, 300)
    assert again.hash == w.hash and again.built


def test_tiny_world_builds(tmp_path: Path) -> None:
    w = _load_in(tmp_path, 0, 1)
    assert w.counts["posts"] == 1 and w.counts["communities"] >= 50


# ----------------------------------------------------------------------------- shape

def test_counts_scale_with_size(world: ForumWorld) -> None:
    c = world.counts
    assert c["posts"] == SIZE
    assert c["comments"] >= 4 * SIZE
    assert c["communities"] == W.n_communities_for(SIZE) >= 50
    assert c["users"] == W.n_users_for(SIZE)
    assert c["votes"] > 0 and c["subscriptions"] > c["users"] * 3 and c["messages"] > 0 and c["bans"] > 0
    assert W.n_users_for(20_000) >= 2000 and W.n_communities_for(200_000) <= 8 * len(W._TOPICS)


def test_world_history_is_before_day_zero(world: ForumWorld) -> None:
    assert world.query("SELECT max(created) FROM posts")[0][0] < 0
    assert world.query("SELECT max(created) FROM comments")[0][0] < 0
    assert world.query("SELECT max(created) FROM messages")[0][0] < 0
    assert world.query("SELECT max(created_day) FROM users")[0][0] < 0


def test_users_joined_before_their_content(world: ForumWorld) -> None:
    bad = world.query("SELECT count(*) FROM posts p JOIN users u ON u.id = p.user_id"
                      " WHERE p.created < u.created_day * 86400")[0][0]
    bad += world.query("SELECT count(*) FROM comments c JOIN users u ON u.id = c.user_id"
                       " WHERE c.created < u.created_day * 86400")[0][0]
    assert bad == 0


def test_comment_threads_are_well_formed(world: ForumWorld) -> None:
    # A parent is an earlier comment of the same post; depth = parent depth + 1, bounded.
    assert world.query("SELECT max(depth) FROM comments")[0][0] <= MAX_DEPTH
    bad = world.query("SELECT count(*) FROM comments c JOIN comments p ON p.id = c.parent_id"
                      " WHERE p.post_id != c.post_id OR p.id >= c.id OR c.depth != p.depth + 1")[0][0]
    assert bad == 0
    assert world.query("SELECT count(*) FROM comments WHERE parent_id IS NULL AND depth != 0")[0][0] == 0
    # The stored comment count is the number of stored comments.
    assert world.query("SELECT count(*) FROM posts p WHERE comment_count !="
                       " (SELECT count(*) FROM comments c WHERE c.post_id = p.id)")[0][0] == 0


def test_scores_and_counts_are_consistent(world: ForumWorld) -> None:
    assert world.query("SELECT count(*) FROM posts WHERE score != ups - downs OR ups < 1")[0][0] == 0
    assert world.query("SELECT count(*) FROM comments WHERE score != ups - downs")[0][0] == 0
    for c in world.communities():
        n = world.query("SELECT count(*) FROM subscriptions WHERE community_id = ?", (c["id"],))[0][0]
        assert c["subscribers"] == n
        assert c["post_count"] == world.query("SELECT count(*) FROM posts WHERE community_id = ?", (c["id"],))[0][0]
    k = world.query("SELECT u.post_karma, (SELECT coalesce(sum(score), 0) FROM posts WHERE user_id = u.id)"
                    " FROM users u WHERE u.id <= 50")
    assert all(a == b for a, b in k)


def test_kinds_statuses_and_moderators(world: ForumWorld) -> None:
    kinds = dict(world.query("SELECT kind, count(*) FROM posts GROUP BY kind"))
    assert kinds["text"] > kinds["link"] > 0
    assert world.query("SELECT count(*) FROM posts WHERE kind = 'link' AND url NOT LIKE 'https://%'")[0][0] == 0
    statuses = dict(world.query("SELECT status, count(*) FROM comments GROUP BY status"))
    assert set(statuses) == {"live", "removed", "deleted"}
    for c in world.communities():
        mods = world.moderators(c["id"])
        assert mods and mods[0] == c["creator_id"]
        for m in mods:
            assert c["id"] in world.moderated_by(m)
    assert world.query("SELECT count(*) FROM bans b JOIN moderators m ON m.community_id = b.community_id"
                       " AND m.user_id = b.user_id")[0][0] == 0


def test_recent_posts_exist_in_every_window(world: ForumWorld) -> None:
    for t in ("day", "week", "month"):
        assert world.list_posts(None, "top", 32400 - WINDOWS[t], 5), t


# ----------------------------------------------------------------------------- read API

def test_list_posts_orders(world: ForumWorld) -> None:
    cid = world.communities()[0]["id"]
    new = world.list_posts([cid], "new", None, 30)
    assert [p["created"] for p in new] == sorted((p["created"] for p in new), reverse=True)
    top = world.list_posts([cid], "top", None, 30)
    assert [p["score"] for p in top] == sorted((p["score"] for p in top), reverse=True)
    assert all(p["community_id"] == cid and p["status"] == "live" for p in new + top)
    since = 32400 - WINDOWS["week"]
    assert all(p["created"] >= since for p in world.list_posts(None, "top", since, 50))
    page2 = world.list_posts([cid], "new", None, 10, offset=10)
    assert page2 == new[10:20]


def test_search_filters_and_sorts(world: ForumWorld) -> None:
    p = world.post(17)
    word = max((w for w in p["title"].replace("?", " ").split() if w.isalpha()), key=len)
    res = world.search(word, sort="top", limit=20)
    assert res["total"] >= 1
    assert [r["score"] for r in res["items"]] == sorted((r["score"] for r in res["items"]), reverse=True)
    exact = world.search(p["title"], community=p["community_id"])
    assert any(r["id"] == p["id"] for r in exact["items"])
    by_author = world.search("", author=p["user_id"], sort="new")
    assert by_author["total"] >= 1 and all(r["user_id"] == p["user_id"] for r in by_author["items"])
    links = world.search("", kind="link", limit=10)["items"]
    assert links and all(r["kind"] == "link" for r in links)
    assert world.search("zzzqqqxxx")["total"] == 0


def test_search_survives_fts_syntax(world: ForumWorld) -> None:
    for q in ('"', "AND OR NOT", "title:foo*", "(((", "NEAR(a b)", "-", "^"):
        res = world.search(q)
        assert isinstance(res["total"], int)


def test_user_lookups(world: ForumWorld) -> None:
    u = world.user(9)
    assert world.user_by_name(u["username"].upper())["id"] == 9
    assert world.user_by_name("no such user") is None and world.user(10**9) is None
    assert world.usernames([9, 9, 10]) == {9: u["username"], 10: world.user(10)["username"]}
    top = world.max_id("users")
    ids = [top + 5, 3, top, 9, 3, 1200, 10**9]   # unknown ids, repeats, names read before and not
    want = {i: world.user(i)["username"] for i in sorted(set(ids)) if i <= top}
    assert world.usernames(ids) == want and list(world.usernames(ids)) == sorted(want)
    assert world.usernames(range(1, 1200)) == {i: world.user(i)["username"] for i in range(1, 1200)}   # > 500


@given(st.text(max_size=60))
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_match_expression_quotes_every_word(q: str) -> None:
    expr = match_expression(q)
    if expr is not None:
        assert "_" not in expr  # user words can never name a filter token
        for part in expr.split(" AND "):
            assert part.startswith('"') and (part.endswith('"') or part.endswith('"*'))
            assert part.count('"') == 2


@given(st.integers(-500, 5000), st.integers(0, 10**7), st.integers(1, 10**6))
def test_hot_score_prefers_higher_scores_and_newer_posts(score: int, age: int, more: int) -> None:
    now = 32400
    created = now - age
    assert hot_score(score + more, created, now) >= hot_score(score, created, now)
    if score >= 0:
        assert hot_score(score, created, now) >= hot_score(score, created - more, now)


# ----------------------------------------------------------------------------- search semantics (bounded)

def _reference_search(world: ForumWorld, q: str, community: int | None = None, author: int | None = None,
                      kind: str | None = None, since: int | None = None, sort: str = "relevance", limit: int = 20,
                      offset: int = 0) -> tuple[int, list[int]]:
    """Brute force over every match of the bm25 index: (capped total, page of ids)."""
    expr = world._expression(world._conn(), q)
    rows = world.query("SELECT p.id, p.community_id, p.user_id, p.kind, p.created, p.score, p.comment_count, f.rank"
                       " FROM posts_fts f JOIN posts p ON p.top_rank = f.rowid WHERE posts_fts MATCH ?", (expr,))
    rows = [r for r in rows if (community is None or r[1] == community) and (author is None or r[2] == author)
            and (kind is None or r[3] == kind) and (since is None or r[4] >= since)]
    top = sorted(rows, key=lambda r: (-r[5], -r[0]))
    if sort == "new":
        ordered = sorted(rows, key=lambda r: (-r[4], -r[0]))
    elif sort == "top":
        ordered = top
    elif sort == "comments":
        ordered = sorted(rows, key=lambda r: (-r[6], -r[0]))
    else:  # the pool (highest scores) by bm25, ties by score then id; then the rest by score
        pool = top[:W.RELEVANCE_POOL]
        ordered = sorted(pool, key=lambda r: (r[7], -r[5], -r[0])) + top[W.RELEVANCE_POOL:]
    return min(len(rows), W.COUNT_CAP), [r[0] for r in ordered[offset:offset + limit]]


@pytest.fixture
def small_bounds(world: ForumWorld, monkeypatch: pytest.MonkeyPatch):
    """Tiny pool / cap / common-word bounds so a 2,000-post world exercises every branch."""
    monkeypatch.setattr(W, "RELEVANCE_POOL", 25)
    monkeypatch.setattr(W, "COUNT_CAP", 60)
    monkeypatch.setattr(W, "PREFIX_COMMON_DF", 40)
    monkeypatch.setattr(world._prefix, "threshold", 40)
    world._prefix.forget()
    yield
    world._prefix.forget()


def test_rank_columns_follow_their_orders(world: ForumWorld) -> None:
    n = world.max_id("posts")
    for col, order in (("top_rank", "score DESC, id DESC"), ("new_rank", "created DESC, id DESC"),
                       ("cmt_rank", "comment_count DESC, id DESC")):
        ranks = [r[0] for r in world.query(f"SELECT {col} FROM posts ORDER BY {order}")]
        assert ranks == list(range(1, n + 1)), col
    # World posts are all live (run-time removals come from the overlay), as search assumes,
    # and their text has no "_", so words never collide with the "_c<id>"-style filter tokens.
    assert world.query("SELECT count(*) FROM posts WHERE status != 'live'") == [(0,)]
    assert world.query("SELECT count(*) FROM posts WHERE instr(title, '_') OR instr(body, '_')") == [(0,)]
    for table in ("posts_fts", "posts_fts_top", "posts_fts_new", "posts_fts_cmt"):
        assert world.query(f"SELECT count(*) FROM {table}") == [(n,)], table


_QUERIES = ("camera", "weeks", "budget lens", "finally finished", "question about", "worth", "help my",
            "rate setup", "zzzqqq", "vintage")


@pytest.mark.parametrize("sort", ["relevance", "new", "top", "comments"])
def test_search_matches_brute_force(world: ForumWorld, small_bounds: None, sort: str) -> None:
    p = world.post(17)
    filters: tuple[dict[str, Any], ...] = ({}, {"community": p["community_id"]}, {"author": 1}, {"kind": "link"},
               {"since": 32400 - 30 * DAY_S}, {"since": 32400 - 365 * DAY_S, "kind": "text"},
               {"community": p["community_id"], "since": 32400 - 365 * DAY_S})
    checked = 0
    for q in _QUERIES:
        for kw in filters:
            for offset in (0, 20, 40, 80):
                got = world.search(q, sort=sort, limit=20, offset=offset, **kw)
                total, ids = _reference_search(world, q, sort=sort, limit=20, offset=offset, **kw)
                assert got["total"] == total and got["capped"] == (total >= W.COUNT_CAP), (q, kw, offset)
                assert [r["id"] for r in got["items"]] == ids, (q, kw, sort, offset)
                checked += bool(ids)
    assert checked > 40


def test_relevance_pool_is_the_highest_scoring_matches(world: ForumWorld, small_bounds: None) -> None:
    res = world.search("weeks", limit=W.RELEVANCE_POOL)
    assert res["capped"]  # more matches than the pool and the cap
    pool = res["items"]
    rest = world.search("weeks", limit=20, offset=W.RELEVANCE_POOL)["items"]
    # Everything after the pool scores lower (then by id) than every pool member, in top order.
    assert min((p["score"], p["id"]) for p in pool) > max((p["score"], p["id"]) for p in rest)
    assert [(p["score"], p["id"]) for p in rest] == sorted(((p["score"], p["id"]) for p in rest), reverse=True)
    # The pool is exactly the RELEVANCE_POOL highest-scoring matches.
    top = world.search("weeks", sort="top", limit=W.RELEVANCE_POOL)["items"]
    assert {p["id"] for p in pool} == {p["id"] for p in top}


def test_common_last_word_is_not_a_prefix(world: ForumWorld, small_bounds: None) -> None:
    conn = world._conn()
    assert world._expression(conn, "weeks") == '"weeks"'  # common: matched as typed (stemmed)
    assert world._expression(conn, "grandf") == '"grandf"*'  # no post has "grandf": prefix kept
    assert world.search("grandf")["total"] == world.search("grandfather")["total"] > 0
    assert W.match_expression("weeks") == '"weeks"*'


def test_list_posts_merges_communities_exactly(world: ForumWorld) -> None:
    comms = [c["id"] for c in world.communities()[:7]]
    ids = ",".join(map(str, comms))
    rows = world.query(f"SELECT id, hot0, created, score FROM posts WHERE community_id IN ({ids})")
    keys = {"hot": lambda r: (-r[1], -r[0]), "new": lambda r: (-r[2], -r[0]), "top": lambda r: (-r[3], -r[0])}
    for sort, key in keys.items():
        for since in (None, 32400 - 365 * DAY_S, 32400 - 7 * DAY_S):
            if since is not None and sort == "hot":
                continue
            ref = [r[0] for r in sorted((r for r in rows if since is None or r[2] >= since), key=key)]
            for offset in (0, 25):
                got = [p["id"] for p in world.list_posts(comms, sort, since, 25, offset)]
                assert got == ref[offset:offset + 25], (sort, since, offset)


@pytest.mark.parametrize("kept", [W._TOP_KEPT, 3, 40])
@given(data=st.data())
@settings(max_examples=40, deadline=None)
def test_merged_listings_from_kept_lists_equal_the_full_order(world: ForumWorld, kept: int, data) -> None:
    """A listing of several communities merges each one's kept best posts; a page deeper
    than a community's kept list (and not all of it) is answered by the query instead."""
    all_ids = [c["id"] for c in world.communities()]
    comms = data.draw(st.lists(st.sampled_from(all_ids), min_size=2, max_size=12, unique=True))
    sort = data.draw(st.sampled_from(["hot", "new", "top"]))
    offset = data.draw(st.integers(0, 60))
    limit = data.draw(st.integers(1, 30))
    ids = ",".join(map(str, comms))
    rows = world.query(f"SELECT id, hot0, created, score FROM posts WHERE community_id IN ({ids})")
    col = {"hot": 1, "new": 2, "top": 3}[sort]
    ref = [r[0] for r in sorted(rows, key=lambda r: (-r[col], -r[0]))][offset:offset + limit]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(W, "_TOP_KEPT", kept)
        mp.setattr(world, "_tops", {})
        assert [p["id"] for p in world.list_posts(comms, sort, None, limit, offset)] == ref
        assert [p["id"] for p in world.list_posts(comms, sort, None, limit, offset)] == ref   # kept lists reused


def test_a_page_one_past_a_kept_list_is_answered_by_the_query(world: ForumWorld) -> None:
    """Two communities whose best ``kept + 1`` posts are all in the first: the kept list of
    ``kept`` posts is one short, so the merge must not answer."""
    kept = 3
    comms = [c["id"] for c in world.communities()]
    rows = {c: sorted(world.query("SELECT score, id FROM posts WHERE community_id = ?", (c,)),
                      key=lambda r: (-r[0], -r[1])) for c in comms}
    pair = next((a, b) for a in comms for b in comms
                if a != b and len(rows[a]) > kept and (rows[a][kept][0], rows[a][kept][1]) > rows[b][0])
    ref = [r[1] for r in sorted(rows[pair[0]] + rows[pair[1]], key=lambda r: (-r[0], -r[1]))][:kept + 1]
    assert all(i in {r[1] for r in rows[pair[0]]} for i in ref)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(W, "_TOP_KEPT", kept)
        mp.setattr(world, "_tops", {})
        assert [p["id"] for p in world.list_posts(list(pair), "top", None, kept + 1)] == ref


@given(st.integers(1, 2000), st.integers(0, 3), st.sampled_from(["relevance", "new", "top", "comments"]),
       st.sampled_from([None, "community", "author", "kind", "since"]), st.integers(0, 4))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_search_equals_brute_force_for_title_words(world: ForumWorld, small_bounds: None, pid: int, nwords: int,
                                                   sort: str, filt: str | None, page: int) -> None:
    p = world.post(pid)
    words = [w for w in p["title"].lower().replace("?", " ").replace(":", " ").split() if w.isalpha()]
    q = " ".join(words[:nwords + 1])[:-1]  # the last word cut short: a prefix
    kw = {None: {}, "community": {"community": p["community_id"]}, "author": {"author": p["user_id"]},
          "kind": {"kind": p["kind"]}, "since": {"since": p["created"]}}[filt]
    if W.match_expression(q) is None:
        return
    got = world.search(q, sort=sort, limit=20, offset=20 * page, **kw)
    total, ids = _reference_search(world, q, sort=sort, limit=20, offset=20 * page, **kw)
    assert got["total"] == total and [r["id"] for r in got["items"]] == ids


@pytest.mark.parametrize("sort", ["relevance", "new", "top", "comments"])
def test_search_without_words_lists_the_filtered_posts(world: ForumWorld, small_bounds: None, sort: str) -> None:
    p = world.post(23)
    order = {"top": "score DESC, id DESC", "comments": "comment_count DESC, id DESC"}.get(sort, "created DESC, id DESC")
    for kw, where, args in (({}, "1", []), ({"community": p["community_id"]}, "community_id = ?", [p["community_id"]]),
                            ({"author": 1, "kind": "text"}, "user_id = 1 AND kind = 'text'", []),
                            ({"since": 32400 - 30 * DAY_S}, "created >= ?", [32400 - 30 * DAY_S]),
                            ({"since": 32400 - 300 * DAY_S, "kind": "link"}, "created >= ? AND kind = 'link'",
                             [32400 - 300 * DAY_S])):
        ids = [r[0] for r in world.query(f"SELECT id FROM posts WHERE {where} ORDER BY {order}", args)]
        for offset in (0, 40):
            got = world.search("the", sort=sort, limit=20, offset=offset, **kw)  # only a stopword: no words
            assert got["total"] == min(len(ids), W.COUNT_CAP), kw
            assert [r["id"] for r in got["items"]] == ids[offset:offset + 20], (kw, offset)


DAY_S = 86400


def test_posts_by_comment_count_match_the_per_count_query(world: ForumWorld) -> None:
    """forum/comment_count draws its post from this map: for each count, the same ids in the
    same order as asking the posts table for that count."""
    from types import SimpleNamespace

    from simweb.apps.forum.tasks import live_posts_by_comment_count

    by_count = live_posts_by_comment_count(SimpleNamespace(world=world))
    counts = [r[0] for r in world.query("SELECT DISTINCT comment_count FROM posts WHERE status = 'live'"
                                        " AND comment_count > 3")]
    assert counts and sorted(by_count) == sorted(counts)
    for n in counts:
        ids = [r[0] for r in world.query("SELECT id FROM posts WHERE status = 'live' AND comment_count = ?"
                                         " ORDER BY id", (n,))]
        assert by_count[n] == ids
