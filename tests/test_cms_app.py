"""Simpress as a visitor, an author, an editor and an administrator experience it, in process.

Tests drive the CMS through BrowserGym actions on one shared env (module fixture, reset
per test) and check both what changed in the state and what the page shows. Forbidden
actions whose controls a page hides are posted directly, as a crafted form would be.
Test data is picked from the world by property, never by hard-coded id.
"""
from __future__ import annotations

import pytest
from sitedriver import Site

import simweb
from simweb.apps.cms.world import search_terms


@pytest.fixture(scope="module")
def env():
    return simweb.make("cms", seed=0)


@pytest.fixture(scope="module")
def world(env):
    return env.app.world


class Cms(Site):
    def post_row(self, pid: int) -> dict:
        row = self.rt["entities"].get("posts", {}).get(str(pid))
        return row if row is not None else self.env.app.world.post(pid)

    def comment(self, cid: int) -> dict:
        row = self.rt["entities"].get("comments", {}).get(str(cid))
        return row if row is not None else self.env.app.world.comment(cid)

    @property
    def status(self) -> int:
        return self.state["browser"]["tabs"][self.state["browser"]["active"]]["status"]


@pytest.fixture
def s(env):
    site = Cms(env)
    site.obs, site.info = env.reset(seed=0, options={"task": None})
    assert site.path == "/" and site.state["browser"]["user"] is None
    return site


def first_post(world, **need):
    for pid in range(1, world.max_id("posts") + 1):
        p = world.post(pid)
        if all(p[k] == v for k, v in need.items()):
            return p
    raise AssertionError(f"no post with {need}")


def user_with(world, role, active=True):
    return next(u for u in world.users() if u["role"] == role and u["active"] == active)


# ----------------------------------------------------------------------------- the public site

def test_public_site_shows_only_published_posts(s, world):
    draft = first_post(world, status="draft", kind="post")
    live = first_post(world, status="published", kind="post")
    s.goto(f"/p/{live['id']}")
    assert s.status == 200 and live["title"] in s.axtree
    s.goto(f"/p/{draft['id']}")
    assert s.status == 404 and "no published post" in s.axtree
    s.goto("/search?q=" + "+".join(search_terms(draft["title"])))
    assert f"post-{draft['id']}" not in s.bids()


def test_search_counts_match_the_world(s, world):
    n = world.post_count(status="published", terms=["caching"])
    s.goto("/search?q=caching")
    assert f"{n} results for" in s.axtree
    ids = world.post_ids(status="published", terms=["caching"], limit=20)
    shown = [b for b in s.bids() if b.startswith("post-")]
    assert shown == [f"post-{i}" for i in ids]


def test_search_escapes_user_text(s):
    s.goto("/search?q=%3Cscript%3Ealert(1)%3C%2Fscript%3E")
    assert "<script>alert(1)" not in s.html and "&lt;script&gt;" in s.html


def test_category_page_counts_published_posts(s, world):
    s.goto("/category/news")
    n = world.post_count(kind="post", status="published", category=1)
    assert f"{n} published posts" in s.axtree
    s.goto("/category/no-such-thing")
    assert s.status == 404


def test_a_visitor_comment_waits_for_moderation(s, world):
    live = first_post(world, status="published", kind="post")
    s.goto(f"/p/{live['id']}")
    s.fill("comment-name", "Dana Visitor").fill("comment-email", "dana@mail.test").fill("comment-body", "Nice <b>one</b>")
    s.click("comment-submit")
    assert "awaiting moderation" in s.axtree
    new = [c for c in s.rt["entities"]["comments"].values()]
    assert len(new) == 1 and new[0]["status"] == "pending" and new[0]["body"] == "Nice <b>one</b>"
    assert "Nice <b>one</b>" not in s.html          # pending: not shown (and escaped when shown)


def test_comment_form_validates_the_email(s, world):
    live = first_post(world, status="published", kind="post")
    s.goto(f"/p/{live['id']}")
    s.fill("comment-name", "X").fill("comment-email", "not-an-email").fill("comment-body", "hello")
    # type="email": the browser does not send it, as Chromium does not ...
    s.blocked("comment-submit", invalid="comment-email")
    # ... and the server refuses it from a client that does not validate
    s.submit_unvalidated("comment-submit")
    assert "valid email" in s.axtree and not s.rt["entities"].get("comments")


# ----------------------------------------------------------------------------- sign-in and roles

def test_sign_in_and_deactivated_accounts(s, world):
    u = user_with(world, "editor")
    s.goto("/login").fill("login-user", u["username"]).fill("login-password", u["password"]).click("login-submit")
    assert s.path == "/admin" and s.state["browser"]["user"] == u["id"]
    s.click("nav-logout")
    gone = user_with(world, "author", active=False)
    s.goto("/login").fill("login-user", gone["username"]).fill("login-password", gone["password"]).click("login-submit")
    assert s.state["browser"]["user"] is None and "deactivated" in s.axtree


def test_sign_in_never_redirects_off_site(s, world):
    u = user_with(world, "editor")
    s.goto("/login?next=//evil.example/x").fill("login-user", u["username"])
    s.fill("login-password", u["password"]).click("login-submit")
    assert s.path == "/"   # the engine's one safe_next: an off-site next goes home, never away


def test_admin_needs_sign_in(s):
    s.goto("/admin/posts")
    assert s.path.startswith("/login?next=")


def test_an_author_cannot_publish_or_moderate(s, world):
    author = user_with(world, "author")
    review = first_post(world, status="review", kind="post")
    s.sign_in(author["id"], f"/admin/posts/{review['id']}")
    assert "publish" not in s.bids() and "Only editors and administrators can publish" in s.axtree
    r = s.post(f"/admin/posts/{review['id']}/publish", {})
    assert r.status == 403 and s.post_row(review["id"])["status"] == "review"
    s.goto("/admin/comments")
    assert s.status == 403
    s.goto("/admin/users")
    assert s.status == 403 and "Only administrators" in s.axtree


def test_author_edits_own_drafts_only(s, world):
    author = next(u for u in world.users() if u["role"] == "author" and u["active"]
                  and any(world.post(i)["author_id"] == u["id"] and world.post(i)["status"] == "draft"
                          for i in range(1, 400)))
    draft = next(world.post(i) for i in range(1, 400)
                 if world.post(i)["author_id"] == author["id"] and world.post(i)["status"] == "draft")
    s.sign_in(author["id"], f"/admin/posts/{draft['id']}")
    s.fill("title-input", "My better title").click("save-post")
    assert s.post_row(draft["id"])["title"] == "My better title"
    s.click("submit-review")
    assert s.post_row(draft["id"])["status"] == "review"
    s.goto(f"/admin/posts/{draft['id']}")
    assert "save-post" not in s.bids() and "authors can only edit their own drafts" in s.axtree
    r = s.post(f"/admin/posts/{draft['id']}/save", {"title": "sneaky", "body": "x"})
    assert r.status == 403 and s.post_row(draft["id"])["title"] == "My better title"


# ----------------------------------------------------------------------------- workflow, revisions, schedule

def test_editor_workflow_and_public_visibility(s, world):
    editor = user_with(world, "editor")
    review = first_post(world, status="review", kind="post")
    s.sign_in(editor["id"], f"/admin/posts/{review['id']}")
    s.click("publish")
    p = s.post_row(review["id"])
    assert p["status"] == "published" and p["published_day"] == 0
    s.goto(f"/p/{review['id']}")
    assert s.status == 200
    s.goto("/")
    assert s.bids()[s.bids().index(f"post-{review['id']}")]    # newest on the home page
    assert [b for b in s.bids() if b.startswith("post-")][0] == f"post-{review['id']}"
    s.goto(f"/admin/posts/{review['id']}").click("archive")
    assert s.post_row(review["id"])["status"] == "archived"
    s.goto(f"/p/{review['id']}")
    assert s.status == 404
    s.goto(f"/admin/posts/{review['id']}").click("restore")
    assert s.post_row(review["id"])["status"] == "draft"


def test_workflow_refuses_a_wrong_transition(s, world):
    editor = user_with(world, "editor")
    archived = first_post(world, status="archived", kind="post")
    s.sign_in(editor["id"], f"/admin/posts/{archived['id']}")
    r = s.post(f"/admin/posts/{archived['id']}/publish", {})
    assert r.status == 409 and s.post_row(archived["id"])["status"] == "archived"


def test_edit_makes_a_revision_and_restore_brings_it_back(s, world):
    editor = user_with(world, "editor")
    p = first_post(world, status="published", kind="post")
    s.sign_in(editor["id"], f"/admin/posts/{p['id']}")
    s.fill("title-input", "A changed title").click("save-post")
    revs = list(s.rt["entities"]["revisions"].values())
    assert len(revs) == 1 and revs[0]["title"] == "A changed title"
    assert s.post_row(p["id"])["revision_count"] == p["revision_count"] + 1
    s.click("save-post")     # saving unchanged text writes no revision
    assert len(s.rt["entities"]["revisions"]) == 1
    old = world.revisions(p["id"])[-1]
    s.click("revisions-link").click(f"rev-{old['id']}")
    assert f"Removed: {p['title']}" in s.axtree and "Added: A changed title" in s.axtree
    s.click("restore-revision")
    assert s.post_row(p["id"])["title"] == p["title"] and len(s.rt["entities"]["revisions"]) == 2


def test_scheduled_post_publishes_itself_on_the_clock(s, world):
    editor = user_with(world, "editor")
    draft = first_post(world, status="draft", kind="post")
    s.sign_in(editor["id"], f"/admin/posts/{draft['id']}")
    s.fill("schedule-date", "2026-01-01").fill("schedule-time", "08:00").click("schedule-submit")
    assert "must be in the future" in s.axtree and s.post_row(draft["id"])["scheduled_at"] is None
    s.fill("schedule-date", "2026-01-01").fill("schedule-time", "09:02").click("schedule-submit")
    assert s.post_row(draft["id"])["scheduled_at"] == 9 * 3600 + 120 and s.post_row(draft["id"])["status"] == "draft"
    assert [t["timer"] for t in s.rt["timers"]["pending"]] == ["publish_scheduled"]
    for _ in range(30):       # 5 simulated seconds per request
        s.goto("/")
    p = s.post_row(draft["id"])
    assert p["status"] == "published" and p["scheduled_at"] is None and not s.rt["timers"]["pending"]


def test_schedule_validates_the_date(s, world):
    editor = user_with(world, "editor")
    draft = first_post(world, status="draft", kind="post")
    s.sign_in(editor["id"], f"/admin/posts/{draft['id']}")
    s.fill("schedule-date", "2026-02-30").click("schedule-submit")
    assert "YYYY-MM-DD" in s.axtree


# ----------------------------------------------------------------------------- moderation, taxonomy, media, menus, users

def test_moderation_queues_and_comment_counts(s, world):
    editor = user_with(world, "editor")
    s.sign_in(editor["id"], "/admin/comments")
    pending = world.comment_count("pending")
    assert f"Pending ({pending})" in s.axtree
    cid = int(next(b for b in s.bids() if b.startswith("approve-")).split("-")[1])
    c = world.comment(cid)
    before = world.post(c["post_id"])["comment_count"]
    s.click(f"approve-{cid}")
    assert s.comment(cid)["status"] == "approved" and s.post_row(c["post_id"])["comment_count"] == before + 1
    assert f"Pending ({pending - 1})" in s.axtree
    s.goto("/admin/comments?status=approved").click(f"spam-{cid}")
    assert s.comment(cid)["status"] == "spam" and s.post_row(c["post_id"])["comment_count"] == before


def test_categories_and_tags_reject_duplicates(s, world):
    editor = user_with(world, "editor")
    s.sign_in(editor["id"], "/admin/categories")
    s.fill("cat-name", "news").click("cat-submit")
    assert "already exists" in s.axtree and not s.rt["entities"].get("categories")
    s.fill("cat-name", "Field notes").click("cat-submit")
    assert [c["slug"] for c in s.rt["entities"]["categories"].values()] == ["field-notes"]
    s.goto("/category/field-notes")
    assert s.status == 200 and "0 published posts" in s.axtree


def test_media_library_metadata(s, world):
    editor = user_with(world, "editor")
    s.sign_in(editor["id"], "/admin/media")
    s.fill("media-filename", "report.exe").fill("media-title", "Bad").click("media-add")
    assert "must end in" in s.axtree and not s.rt["entities"].get("media")
    s.fill("media-filename", "team-photo.png").fill("media-title", "Team").fill("media-alt", "Our team").click("media-add")
    m = list(s.rt["entities"]["media"].values())[0]
    assert m["mime"] == "image/png" and s.path == f"/admin/media/{m['id']}"
    s.goto("/admin/media?q=team-photo")
    assert f"media-{m['id']}" in s.bids()


def test_menu_items_show_on_the_public_site(s, world):
    editor = user_with(world, "editor")
    s.sign_in(editor["id"], "/admin/menus/1")
    s.fill("item-label", "Contact us").fill("item-url", "javascript:alert(1)").click("item-add")
    assert "must be a path" in s.axtree
    s.fill("item-label", "Contact us").fill("item-url", "/p/1").click("item-add")
    item = list(s.rt["entities"]["menu_items"].values())[0]
    s.goto("/")
    assert f"menu-item-{item['id']}" in s.bids()


def test_admin_manages_users(s, world):
    admin = user_with(world, "admin")
    author = user_with(world, "author")
    s.sign_in(admin["id"], f"/admin/users/{author['id']}")
    s.select("role-select", "editor").click("role-submit")
    assert s.rt["entities"]["users"][str(author["id"])]["role"] == "editor"
    s.click("deactivate")
    assert s.rt["entities"]["users"][str(author["id"])]["active"] is False
    r = s.post(f"/admin/users/{admin['id']}/role", {"role": "author"})
    assert r.status == 409
    s.goto("/admin/users/new")
    s.fill("nu-username", author["username"]).fill("nu-email", "x@y.test").fill("nu-name", "X")
    s.fill("nu-password", "longenough").click("nu-submit")
    assert "is taken" in s.axtree


def test_re_dating_another_published_post_is_collateral(env, world):
    """Unpublishing and publishing again a post the task does not name leaves its status as
    it was but moves its publication day to today (it heads the public site): the days are
    bookkeeping on the judged post only."""
    env.reset(seed=0, options={"task": "cms/publish_in_review"})
    plan, pid = env.oracle_plan(), env.task.params["post_id"]
    other = next(p for p in (world.post(i) for i in range(1, 400))
                 if p["status"] == "published" and p["kind"] == "post" and p["id"] != pid)
    for a in [f"goto('/admin/posts/{other['id']}')", "click('unpublish')", "click('publish')", *plan]:
        obs, reward, terminated, truncated, info = env.step(a)
    v = info["verdict"]
    assert v["success"] and not v["clean"] and reward == 0
    assert sorted(c["name"] for c in v["checks"] if not c["passed"]) == [
        f"collateral: runtime.entities.posts.{other['id']}.published_day",
        f"collateral: runtime.entities.posts.{other['id']}.updated_day"]
    env.reset(seed=0, options={"task": "cms/publish_in_review"})
    for a in plan:
        obs, reward, terminated, truncated, info = env.step(a)
    assert info["verdict"]["success"] and info["verdict"]["clean"] and reward == 1.0   # the judged post's own days


def test_re_dating_the_renamed_post_is_collateral(env):
    """A rename judges the post's title, not its status: an unpublish and a publish of the
    renamed post itself move its publication day, and that is damage too."""
    env.reset(seed=0, options={"task": "cms/rename_post"})
    plan, pid = env.oracle_plan(), env.task.params["post_id"]
    for a in [f"goto('/admin/posts/{pid}')", "click('unpublish')", "click('publish')", *plan]:
        obs, reward, terminated, truncated, info = env.step(a)
    v = info["verdict"]
    assert v["success"] and not v["clean"] and reward == 0
    assert [c["name"] for c in v["checks"] if not c["passed"]] == [f"collateral: runtime.entities.posts.{pid}.published_day"]
