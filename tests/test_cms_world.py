"""Simpress's world generator and read API: determinism, the sizes issue 8 asks for,
invariants of the generated data, and agreement between the SQL queries and their Python
twins (FTS matching, newest-first order) that the runtime merge of changed posts relies on."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simweb.apps.cms.world import (
    CATEGORIES,
    COMMENT_STATUSES,
    GENERATOR_VERSION,
    STATUSES,
    TAGS,
    CmsWorld,
    n_users_for,
    post_matches,
    search_terms,
)
from simweb.core.worlddb import world_file

SMALL = 600


@pytest.fixture(scope="module")
def world():
    return CmsWorld.load(0)


@pytest.fixture(scope="module")
def small():
    return CmsWorld.load(3, SMALL)


@pytest.fixture(scope="module")
def posts(world):
    return world.posts(range(1, world.max_id("posts") + 1))


def test_default_world_is_as_large_as_issue_8_asks(world):
    assert world.counts["posts"] == world.size == 2400 >= 2000
    assert world.counts["comments"] >= 10_000
    assert world.counts["users"] == n_users_for(2400) >= 50
    assert world.counts["categories"] == len(CATEGORIES) and world.counts["tags"] == len(TAGS)
    assert world.counts["media"] == 400 and world.counts["menus"] == 3


def test_every_status_role_and_kind_occurs(world, posts):
    assert {p["status"] for p in posts} == set(STATUSES)
    assert {p["kind"] for p in posts} == {"post", "page"}
    assert {u["role"] for u in world.users()} == {"author", "editor", "admin"}
    assert any(not u["active"] for u in world.users())


def test_same_seed_same_world_in_another_process(small):
    code = ("from simweb.apps.cms.world import CmsWorld; from simweb.worlddb import forget_open_worlds;"
            f"print(CmsWorld.load(3, {SMALL}).hash)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONHASHSEED": "123"}, check=True)
    assert out.stdout.strip() == small.hash
    assert CmsWorld.load(4, SMALL).hash != small.hash
    assert world_file("cms", GENERATOR_VERSION, 3, SMALL).exists()


def test_titles_and_slugs_are_unique(posts):
    assert len({p["title"] for p in posts}) == len(posts)
    assert len({p["slug"] for p in posts}) == len(posts)


def test_ids_follow_publication(posts):
    live = [p for p in posts if p["published_day"] is not None]
    assert all(a["published_day"] <= b["published_day"] for a, b in zip(live, live[1:]))
    assert all(p["published_day"] < 0 and p["created_day"] < 0 for p in live)
    assert all(p["published_day"] is None for p in posts if p["status"] in ("draft", "review"))


def test_last_revision_is_the_current_content(world, posts):
    for p in posts[::37]:
        revs = world.revisions(p["id"])
        assert [r["number"] for r in revs] == list(range(1, p["revision_count"] + 1))
        assert (revs[-1]["title"], revs[-1]["body"]) == (p["title"], p["body"])
        if len(revs) >= 2:
            assert revs[0]["title"] != p["title"] or revs[0]["body"] != p["body"]


def test_comments_belong_to_published_or_archived_posts(world, posts):
    for p in posts[::11]:
        cs = world.comments_of(p["id"])
        if p["status"] in ("draft", "review"):
            assert cs == []
        assert {c["status"] for c in cs} <= set(COMMENT_STATUSES)
        assert p["comment_count"] == sum(c["status"] == "approved" for c in cs)


def test_pages_have_no_taxonomy(posts):
    assert all(p["category_id"] is None and p["tags"] == [] for p in posts if p["kind"] == "page")


def test_counts_agree_with_a_scan(world, posts):
    for c in (1, 5, 12):
        assert world.post_count(kind="post", status="published", category=c) == sum(
            1 for p in posts if p["kind"] == "post" and p["status"] == "published" and p["category_id"] == c)
    assert world.post_count(tag=3, status="draft") == sum(1 for p in posts if 3 in p["tags"] and p["status"] == "draft")
    assert world.comment_count("pending") == sum(
        sum(c["status"] == "pending" for c in world.comments_of(p["id"])) for p in posts)


@settings(max_examples=30, deadline=None)
@given(q=st.sampled_from(["caching", "cach", "dark mode", "sourdough bread", "profiling numbers", "fonts",
                          "the privacy", "kitchen", "re", "team onboarding checklist"]),
       status=st.sampled_from([None, "published", "draft"]), category=st.sampled_from([None, 3]),
       tag=st.sampled_from([None, 7]), kind=st.sampled_from([None, "post", "page"]))
def test_fts_matches_its_python_twin(world, posts, q, status, category, tag, kind):
    """A search with filters (FTS5 tokens) finds what a scan finds, newest first."""
    terms = search_terms(q)
    want = [p["id"] for p in reversed(posts) if post_matches(p, terms) and (status is None or p["status"] == status)
            and (category is None or p["category_id"] == category) and (tag is None or tag in p["tags"])
            and (kind is None or p["kind"] == kind)]
    f = {"status": status, "category": category, "tag": tag, "kind": kind, "terms": terms}
    assert world.post_ids(limit=10_000, **f) == want
    assert world.post_count(**f) == len(want)
    assert world.post_count(cap=3, **f) == min(3, len(want))


def test_media_search(world):
    total, rows = world.media_page("harbour", 5, 0)
    assert rows and all("harbour" in r["filename"] or "harbour" in r["title"].lower() for r in rows)
    assert total >= len(rows) and [r["id"] for r in rows] == sorted((r["id"] for r in rows), reverse=True)


def test_size_scales_every_table(small):
    assert small.counts["posts"] == SMALL and small.counts["users"] == n_users_for(SMALL)
    assert small.counts["media"] == SMALL // 6
