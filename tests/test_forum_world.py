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
    ForumWorld._memo.clear()
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


@given(st.text(max_size=60))
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_match_expression_quotes_every_word(q: str) -> None:
    expr = match_expression(q)
    if expr is not None:
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
