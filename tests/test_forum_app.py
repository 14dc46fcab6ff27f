"""Simforum as a user (or an agent) experiences it, in process.

Every test drives the forum through BrowserGym actions on one shared env (module
fixture, reset per test) and checks both what changed in the state and what the
rendered page shows. Test data (posts, users, moderators) is picked from the world by
property, never by hard-coded id, so the tests hold for any world seed.
"""
from __future__ import annotations

import html as html_lib
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sitedriver import Site

import simweb
from simweb.apps.forum.functions import PER_PAGE
from simweb.apps.forum.world import DAY, WINDOWS, hot_score
from simweb.judging.verify import changed_paths

ORIGIN = "http://forum.simweb.localhost"
START = 32400


# ----------------------------------------------------------------------------- fixtures

@pytest.fixture(scope="module")
def env():
    return simweb.make("forum", seed=0)


@pytest.fixture(scope="module")
def world(env):
    return env.app.world


class Forum(Site):
    """The shared driver, plus the forum's page readers."""

    def has(self, bid: str) -> bool:
        return f'bid="{bid}"' in self.html

    def text(self, bid: str) -> str:
        m = re.search(rf'bid="{re.escape(bid)}"[^>]*>(.*?)</', self.html, re.DOTALL)
        assert m, f"no element {bid} on {self.path}"
        return html_lib.unescape(re.sub(r"<[^>]+>", "", m.group(1))).strip()

    def post_ids(self) -> list[int]:
        return [int(x) for x in re.findall(r'bid="post-(\d+)" class="title"', self.html)]


@pytest.fixture
def f(env):
    env.reset(seed=0, options={"task": None})
    return Forum(env)


def points(text: str) -> int:
    m = re.search(r"-?\d+", text.replace(",", ""))
    assert m is not None, text
    return int(m.group(0))


def a_post(world, need=lambda p: True, start: int = 1) -> dict:
    for pid in range(start, world.max_id("posts") + 1):
        p = world.post(pid)
        if p["status"] == "live" and need(p):
            return p
    raise AssertionError("no post")


def plain_user(world, need=lambda u: True) -> dict:
    """A user with no world votes (so their votes start from zero)."""
    for uid in range(2, world.max_id("users") + 1):
        if uid % 10 == 1:
            continue
        u = world.user(uid)
        if need(u):
            return u
    raise AssertionError("no user")


def not_mod(world, cid: int) -> dict:
    return plain_user(world, lambda u: u["id"] not in world.moderators(cid) and world.ban(cid, u["id"]) is None)


# ----------------------------------------------------------------------------- session

def test_sign_in_wrong_password_and_sign_out(f, world):
    u = world.user(3)
    f.goto("/login").fill("login-user", u["username"]).fill("login-password", "wrong").click("login-submit")
    assert f.error() == "Incorrect username or password." and f.env.state["browser"]["user"] is None
    f.fill("login-user", u["username"].upper()).fill("login-password", u["password"]).click("login-submit")
    assert f.env.state["browser"]["user"] == 3 and f.success() == f"Welcome back, u/{u['username']}!"
    assert f.text("nav-profile") == f"u/{u['username']}"
    f.click("nav-logout")
    assert f.env.state["browser"]["user"] is None and f.has("nav-login")


def test_login_redirects_back_and_rejects_open_redirects(f, world):
    u = world.user(4)
    f.goto("/saved")
    assert f.path == "/login?next=/saved"
    f.fill("login-user", u["username"]).fill("login-password", u["password"]).click("login-submit")
    assert f.path == "/saved"
    f.env.state["browser"]["user"] = None
    f.goto("/login?next=//evil.example.com").fill("login-user", u["username"])
    f.fill("login-password", u["password"]).click("login-submit")
    assert f.path == "/"


def test_register_validates_and_signs_in(f, world):
    taken = world.user(5)["username"]
    f.goto("/register").fill("reg-username", taken).fill("reg-password", "longenough1")
    f.fill("reg-confirm", "longenough1").click("reg-submit")
    assert f.error() == f"The username {taken} is already taken."
    f.fill("reg-username", "bad name!").fill("reg-password", "longenough1").fill("reg-confirm", "longenough1")
    f.click("reg-submit")
    assert "only letters" in f.error()
    f.fill("reg-username", "new_member").fill("reg-password", "short").fill("reg-confirm", "short").click("reg-submit")
    assert f.error() == "Password must be at least 8 characters."
    f.fill("reg-username", "new_member").fill("reg-password", "longenough1").fill("reg-confirm", "other123")
    f.click("reg-submit")
    assert f.error() == "The passwords do not match."
    f.fill("reg-username", "new_member").fill("reg-password", "longenough1").fill("reg-confirm", "longenough1")
    f.click("reg-submit")
    uid = f.env.state["browser"]["user"]
    assert uid > world.max_id("users") and f.text("nav-profile") == "u/new_member"
    f.goto("/u/new_member")
    assert f.text("profile-joined") == "Joined January 1, 2026" and "0 karma" in f.text("profile-karma")
    # The new account can sign in again.
    f.click("nav-logout").goto("/login").fill("login-user", "NEW_member").fill("login-password", "longenough1")
    f.click("login-submit")
    assert f.env.state["browser"]["user"] == uid


# ----------------------------------------------------------------------------- listings

def test_front_page_shows_subscriptions_when_signed_in(f, world):
    f.goto("/")
    assert f.text("listing-title") == "All posts"
    u = plain_user(world, lambda u: len(world.subscriptions(u["id"])) >= 2)
    f.sign_in(u["id"], "/?sort=new")
    assert f.text("listing-title") == "Your front page"
    mine = set(world.subscriptions(u["id"]))
    ids = f.post_ids()
    assert len(ids) == PER_PAGE and all(world.post(i)["community_id"] in mine for i in ids)
    created = [world.post(i)["created"] for i in ids]
    assert created == sorted(created, reverse=True)


def test_hot_ranks_by_current_score_and_age(f, world):
    f.goto("/all")
    ids = f.post_ids()
    assert len(ids) == PER_PAGE
    hots = [hot_score(world.post(i)["score"], world.post(i)["created"], START + 5) for i in ids]
    assert hots == sorted(hots, reverse=True)
    # Nothing among the world's next best candidates outranks the page's last post.
    cands = world.list_posts(None, "hot", None, 200)
    assert max(hot_score(p["score"], p["created"], START + 5) for p in cands if p["id"] not in ids) <= hots[-1]


def test_top_with_time_windows_and_pagination(f, world):
    c = world.communities()[1]
    f.goto(f"/c/{c['name']}").click("sort-top").click("t-week")
    assert f.path == f"/c/{c['name']}?sort=top&t=week"
    ids = f.post_ids()
    since = START - WINDOWS["week"]
    assert ids and all(world.post(i)["created"] >= since for i in ids)
    scores = [world.post(i)["score"] for i in ids]
    assert scores == sorted(scores, reverse=True)
    f.click("t-all")
    first = f.post_ids()
    assert first == [p["id"] for p in world.list_posts([c["id"]], "top", None, PER_PAGE)]
    f.click("page-next")
    assert f.post_ids() == [p["id"] for p in world.list_posts([c["id"]], "top", None, PER_PAGE, PER_PAGE)]
    f.click("page-prev")
    assert f.post_ids() == first


def test_unknown_pages_are_404(f):
    for url in ("/c/no-such-community", "/p/99999999", "/u/nobody_at_all", "/messages/99999999", "/nope"):
        f.env.state["browser"]["user"] = 2
        f.goto(url)
        assert f.status == 404, url
        assert f.has("error-title")


def test_pinned_posts_lead_the_hot_page(f, world):
    row = world.query("SELECT id, community_id FROM posts WHERE pinned = 1 LIMIT 1")[0]
    f.goto(f"/c/{world.community(row[1])['name']}")
    html = f.html
    assert html.index(f'bid="post-{row[0]}"') < html.index("<ol class=\"posts\">", html.index("Pinned") + 1)
    assert f.html.count(f'bid="post-{row[0]}"') == 1


# ----------------------------------------------------------------------------- votes and karma

def test_vote_toggle_switch_and_karma(f, world):
    p = a_post(world)
    u = plain_user(world, lambda u: u["id"] != p["user_id"])
    author = world.user(p["user_id"])
    base_karma = author["post_karma"] + author["comment_karma"]
    f.sign_in(u["id"], f"/p/{p['id']}")
    assert points(f.text("post-score")) == p["score"]
    f.click("post-up")
    assert points(f.text("post-score")) == p["score"] + 1 and f.rt["votes"][str(u["id"])][f"p{p['id']}"] == 1
    f.click("post-down")
    assert points(f.text("post-score")) == p["score"] - 1
    f.click("post-down")
    assert points(f.text("post-score")) == p["score"] and f.rt["votes"][str(u["id"])][f"p{p['id']}"] == 0
    f.click("post-up").goto(f"/u/{author['username']}")
    assert f.text("profile-karma").startswith(f"{base_karma + 1:,} karma")


def test_world_votes_show_and_toggle_off(f, world):
    uid, tid, value = world.query("SELECT user_id, target_id, value FROM votes WHERE kind = 'post' AND value = 1"
                                  " LIMIT 1")[0]
    p = world.post(tid)
    f.sign_in(uid, f"/p/{tid}")
    assert 'bid="post-up" type="submit" name="dir" value="up" class="on"' in f.html
    f.click("post-up")
    assert points(f.text("post-score")) == p["score"] - 1
    assert f.rt["votes"][str(uid)][f"p{tid}"] == 0


def test_votes_need_a_live_target_and_a_user(f, world):
    p = a_post(world)
    f.goto(f"/p/{p['id']}").click("post-up")
    assert f.path.startswith("/login") and f.rt["votes"] == {}
    c = world.query("SELECT id, post_id FROM comments WHERE status = 'deleted' LIMIT 1")[0]
    f.sign_in(2, f"/p/{c[1]}")
    assert not f.has(f"comment-{c[0]}-up")
    resp = f.env.app.submit(f.env.state, f"/comment/{c[0]}/vote", {"dir": "up"})
    assert resp.status == 404 and "removed" in resp.error


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seq=st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2), st.sampled_from(["up", "down"])),
                    min_size=1, max_size=12))
def test_score_is_world_score_plus_vote_deltas(env, world, seq):
    """After any vote sequence by several users, every score shown = world score + the
    sum over users of (current vote - world vote)."""
    env.reset(seed=0, options={"task": None})
    f = Forum(env)
    users = [1, 11, plain_user(world)["id"]]           # 1 and 11 have world votes
    posts = [world.votes_of(1)[0][1], world.votes_of(11)[0][1], a_post(world)["id"]]
    posts = [p for p in posts if world.post(p)["status"] == "live"]
    state = {(u, p): world.vote(u, "post", p) for u in users for p in posts}
    for ui, pi, d in seq:
        u, p = users[ui], posts[pi % len(posts)]
        env.state["browser"]["user"] = u
        f.goto(f"/p/{p}").click(f"post-{d}")
        want = 1 if d == "up" else -1
        state[(u, p)] = 0 if state[(u, p)] == want else want
    for p in posts:
        f.goto(f"/p/{p}")
        expected = world.post(p)["score"] + sum(state[(u, p)] - world.vote(u, "post", p) for u in users)
        assert points(f.text("post-score")) == expected


# ----------------------------------------------------------------------------- subscriptions and saved

def test_subscribe_and_unsubscribe_change_counts(f, world):
    u = plain_user(world)
    mine = set(world.subscriptions(u["id"]))
    c = next(c for c in world.communities() if c["id"] not in mine)
    f.sign_in(u["id"], f"/c/{c['name']}")
    before = c["subscribers"]
    f.click("subscribe")
    assert f.success() == f"Subscribed to c/{c['name']}." and f.text("community-subscribers") == f"{before + 1:,} subscribers"
    f.goto("/?sort=new")
    assert f.text("listing-title") == "Your front page"
    f.goto(f"/c/{c['name']}").click("unsubscribe")
    assert f.text("community-subscribers") == f"{before:,} subscribers"
    # Unsubscribing again (a stale form) is refused.
    resp = f.env.app.submit(f.env.state, f"/c/{c['name']}/unsubscribe", {})
    assert resp.error == f"You are not subscribed to c/{c['name']}."


def test_save_unsave_and_saved_page(f, world):
    p = a_post(world, start=50)
    u = plain_user(world, lambda u: not world.saved(u["id"]))
    f.sign_in(u["id"], f"/p/{p['id']}").click("post-save")
    assert f.has("post-unsave")
    f.click("nav-saved")
    assert f.post_ids() == [p["id"]]
    f.click(f"post-{p['id']}-unsave")
    assert f.has("no-saved")
    c = world.query("SELECT id, post_id FROM comments WHERE status = 'live' LIMIT 1")[0]
    f.goto(f"/p/{c[1]}").click(f"comment-{c[0]}-save").goto("/saved")
    assert f.has(f"saved-comment-{c[0]}")


# ----------------------------------------------------------------------------- posting

def test_submit_validation(f, world):
    c = world.communities()[2]
    u = not_mod(world, c["id"])
    f.sign_in(u["id"], "/submit")
    f.click("submit-go")
    assert f.error() == "Community is required."
    f.select("submit-community", c["name"]).click("submit-go")
    assert f.error() == "Title is required."
    # The field stops at 300 characters (as a browser's maxlength does); the server checks too.
    resp = f.env.app.submit(f.env.state, "/submit", {"community": c["name"], "title": "x" * 301, "kind": "text"})
    assert resp.status == 400 and resp.error == "Title must be at most 300 characters."
    f.goto("/submit")
    f.select("submit-community", c["name"]).click("submit-kind-link").fill("submit-title-input", "A link")
    f.fill("submit-url", "ftp://example.com/file").click("submit-go")
    assert f.error() == "A link post needs a valid http:// or https:// URL."
    f.goto("/submit")
    f.select("submit-community", c["name"]).click("submit-kind-link").fill("submit-title-input", "A link")
    f.fill("submit-url", "http://[::1/").click("submit-go")   # urllib refuses it: still the form's message
    assert f.error() == "A link post needs a valid http:// or https:// URL."
    resp = f.post("/submit", {"community": c["name"], "title": "Long", "kind": "text", "body": "y" * 10001})
    assert resp.error == "Text must be at most 10000 characters."
    resp = f.env.app.submit(f.env.state, "/submit", {"community": "no_such_place", "title": "Hi", "kind": "text"})
    assert resp.error == "There is no community called no_such_place."
    assert "posts" not in f.rt["entities"]
    f.select("submit-community", c["name"]).click("submit-kind-link").fill("submit-title-input", "Good link")
    f.fill("submit-url", "https://example.org/a").click("submit-go")
    pid = int(f.path.split("/")[-1])
    assert f.text("post-title") == "Good link" and f.text("post-url") == "https://example.org/a"
    f.goto(f"/c/{c['name']}?sort=new")
    assert f.post_ids()[0] == pid
    f.goto("/search?q=good+link")
    assert pid in f.post_ids()


def test_edit_and_delete_own_post_but_not_others(f, world):
    c = world.communities()[3]
    u = not_mod(world, c["id"])
    f.sign_in(u["id"], f"/submit?community={c['name']}")
    f.fill("submit-title-input", "My own thoughts").fill("submit-body", "First version").click("submit-go")
    pid = int(f.path.split("/")[-1])
    f.click("post-edit").fill("edit-body", "Second version").click("edit-submit")
    assert f.text("post-body") == "Second version" and "edited" in f.html
    other = a_post(world, lambda p: p["user_id"] != u["id"] and p["kind"] == "text")
    f.goto(f"/p/{other['id']}/edit")
    assert f.status == 403 and f.text("error-message") == "You can only edit your own posts."
    resp = f.post(f"/p/{other['id']}/delete", {}, f"/p/{other['id']}")
    assert resp.status == 403 and str(other["id"]) not in f.rt["entities"].get("posts", {})
    f.goto(f"/p/{pid}").click("post-delete")
    assert f.text("post-title") == "[deleted]" and f.text("post-body") == "[deleted]"
    assert not f.has("post-delete") and not f.has("comment-form")
    f.goto(f"/c/{c['name']}?sort=new")
    assert pid not in f.post_ids()
    # Nothing leaves "deleted": the delete and edit events refuse.
    for url in (f"/p/{pid}/delete", f"/p/{pid}/edit"):
        assert f.post(url, {"body": "x"}, f"/p/{pid}/edit" if url.endswith("edit") else f"/p/{pid}").status == 404


# ----------------------------------------------------------------------------- comments

def _thread_post(world):
    """A live, unlocked post with a live top-level comment that has a live reply."""
    row = world.query(
        "SELECT c.post_id, c.id, r.id FROM comments c JOIN comments r ON r.parent_id = c.id"
        " JOIN posts p ON p.id = c.post_id WHERE c.status = 'live' AND r.status = 'live' AND NOT p.locked"
        " AND p.comment_count < 40 ORDER BY c.id LIMIT 1")[0]
    return row


def test_comment_reply_edit_and_delete_keeps_replies(f, world):
    pid, cid, rid = _thread_post(world)
    p = world.post(pid)
    u = not_mod(world, p["community_id"])
    f.sign_in(u["id"], f"/p/{pid}")
    count = p["comment_count"]
    assert f.text("post-comment-count") == f"{count} comments"
    f.click("comment-submit")
    assert f.error() == "Comment is required."
    f.fill("comment-body", "Top level words").click("comment-submit")
    mine = max(int(k) for k in f.rt["entities"]["comments"])
    assert f.text(f"comment-{mine}-body") == "Top level words"
    assert f.text("post-comment-count") == f"{count + 1} comments"
    f.click(f"comment-{cid}-reply").fill("reply-body", "A reply").click("reply-submit")
    reply = max(int(k) for k in f.rt["entities"]["comments"])
    row = f.rt["entities"]["comments"][str(reply)]
    assert row["parent_id"] == cid and row["depth"] == world.comment(cid)["depth"] + 1
    html = f.html
    assert html.index(f'bid="comment-{cid}"') < html.index(f'bid="comment-{reply}"')
    f.click(f"comment-{mine}-edit").fill("edit-body", "Edited words").click("edit-submit")
    assert f.text(f"comment-{mine}-body") == "Edited words"
    # Someone else's comment: no edit or delete controls, and the events refuse with 403.
    assert not f.has(f"comment-{cid}-edit") and not f.has(f"comment-{cid}-delete")
    assert f.env.app.submit(f.env.state, f"/comment/{cid}/delete", {}).status == 403
    assert f.post(f"/comment/{cid}/edit", {"body": "hacked"}, f"/comment/{mine}/edit").status == 403
    f.goto(f"/comment/{cid}/edit")
    assert f.status == 403
    # Deleting my comment that has a reply keeps the reply under "[deleted]".
    f.goto(f"/p/{pid}").click(f"comment-{mine}-reply").fill("reply-body", "Reply to myself").click("reply-submit")
    child = max(int(k) for k in f.rt["entities"]["comments"])
    f.click(f"comment-{mine}-delete")
    assert f.text(f"comment-{mine}-body") == "[deleted]" and f.text(f"comment-{child}-body") == "Reply to myself"
    assert f.html.index(f'bid="comment-{mine}"') < f.html.index(f'bid="comment-{child}"')
    resp = f.env.app.submit(f.env.state, f"/p/{pid}/comment", {"body": "x", "parent_id": str(mine)})
    assert resp.error == "You cannot reply to a deleted or removed comment."


def test_comment_sorts(f, world):
    pid = world.query("SELECT id FROM posts WHERE comment_count BETWEEN 8 AND 20 LIMIT 1")[0][0]
    f.sign_in(2, f"/p/{pid}").click("csort-old")
    ids = [int(x) for x in re.findall(r'class="comment" bid="comment-(\d+)"', f.html)]
    roots = [world.comment(i) for i in ids if world.comment(i)["parent_id"] is None]
    assert roots == sorted(roots, key=lambda r: (r["created"], r["id"]))
    f.click("csort-top")
    ids = [int(x) for x in re.findall(r'class="comment" bid="comment-(\d+)"', f.html)]
    roots = [world.comment(i) for i in ids if world.comment(i)["parent_id"] is None]
    assert [r["score"] for r in roots] == sorted((r["score"] for r in roots), reverse=True)


def test_locked_post_refuses_comments(f, world):
    p = a_post(world, lambda p: p["locked"])
    u = not_mod(world, p["community_id"])
    f.sign_in(u["id"], f"/p/{p['id']}")
    assert f.has("locked-note") and not f.has("comment-form")
    resp = f.env.app.submit(f.env.state, f"/p/{p['id']}/comment", {"body": "hello"})
    assert resp.status == 403 and resp.error == "This post is locked. New comments cannot be posted."
    assert "comments" not in f.rt["entities"]


# ----------------------------------------------------------------------------- moderation

def test_non_moderators_get_403(f, world):
    c = world.communities()[0]
    u = not_mod(world, c["id"])
    f.sign_in(u["id"], f"/c/{c['name']}/mod")
    assert f.status == 403 and f.text("error-message") == f"Only moderators of c/{c['name']} can do that."
    p = a_post(world, lambda p: p["community_id"] == c["id"])
    f.goto(f"/p/{p['id']}")
    assert not f.has("modbar") and not f.has("mod-tools")
    for url, form in ((f"/p/{p['id']}/remove", {}), (f"/p/{p['id']}/lock", {"locked": "1"}),
                      (f"/p/{p['id']}/pin", {"pinned": "1"}), (f"/c/{c['name']}/ban", {"username": "x"})):
        resp = f.post(url, form, f"/c/{c['name']}/mod" if url.endswith("/ban") else None)
        assert resp.status == 403, url
    assert f.rt["entities"] == {} and f.rt["bans"] == {}


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ci=st.integers(0, 49), ui=st.integers(2, 2999), action=st.sampled_from(
    ["remove", "restore", "lock", "pin", "ban", "unban", "remove_comment", "restore_comment"]))
def test_permission_checks_never_let_a_non_moderator_act(env, world, ci, ui, action):
    env.reset(seed=0, options={"task": None})
    c = world.communities()[ci % len(world.communities())]
    if ui in world.moderators(c["id"]):
        ui = not_mod(world, c["id"])["id"]
    env.state["browser"]["user"] = ui
    p = world.list_posts([c["id"]], "new", None, 1)[0]
    cm = world.query("SELECT id FROM comments WHERE post_id IN (SELECT id FROM posts WHERE community_id = ?)"
                     " AND status = 'live' LIMIT 1", (c["id"],))[0][0]
    url, form = {"remove": (f"/p/{p['id']}/remove", {}), "restore": (f"/p/{p['id']}/restore", {}),
                 "lock": (f"/p/{p['id']}/lock", {"locked": "1"}), "pin": (f"/p/{p['id']}/pin", {"pinned": "1"}),
                 "ban": (f"/c/{c['name']}/ban", {"username": world.user(2)["username"], "days": "3"}),
                 "unban": (f"/c/{c['name']}/unban", {"username": world.user(2)["username"]}),
                 "remove_comment": (f"/comment/{cm}/remove", {}),
                 "restore_comment": (f"/comment/{cm}/restore", {})}[action]
    before = changed_paths({}, env.state["runtime"])
    env.step(f"goto('/p/{p['id']}')")
    ref = f"/c/{c['name']}/mod" if action in ("ban", "unban") else None
    resp = env.app.submit(env.state, url, form, referrer=ref)
    assert resp.status == 403, (resp.error, action)
    assert changed_paths({}, env.state["runtime"]) == before


def test_moderator_remove_restore_lock_pin_and_log(f, world):
    c = world.communities()[4]
    m = world.moderators(c["id"])[0]
    p = a_post(world, lambda p: p["community_id"] == c["id"] and not p["locked"] and not p["pinned"])
    f.sign_in(m, f"/p/{p['id']}").click("mod-remove")
    assert f.text("post-removed") == "Removed by the moderators"
    # Others see "[removed]"; it drops out of listings.
    other = not_mod(world, c["id"])
    f.sign_in(other["id"], f"/p/{p['id']}")
    assert f.text("post-title") == "[removed]" and f.text("post-body") == "[removed]"
    f.sign_in(m, f"/p/{p['id']}").click("mod-restore").click("mod-lock")
    assert f.has("post-locked") and f.has("mod-unlock")
    f.click("mod-pin")
    f.goto(f"/c/{c['name']}")
    assert p["id"] in f.post_ids()
    f.goto(f"/c/{c['name']}/mod")
    log = f.html[f.html.index("Moderation log"):]
    for action in ("pin post", "lock post", "restore post", "remove post"):
        assert action in log
    assert f.post(f"/p/{p['id']}/lock", {"locked": "1"}, f"/p/{p['id']}").error == "That post is already locked."


def test_moderator_removes_a_comment_which_keeps_its_replies(f, world):
    pid, cid, rid = _thread_post(world)
    c = world.post(pid)["community_id"]
    f.sign_in(world.moderators(c)[0], f"/p/{pid}").click(f"comment-{cid}-remove")
    assert f.rt["entities"]["comments"][str(cid)]["status"] == "removed"
    assert f.has(f"comment-{cid}-restore") and f.has(f"comment-{rid}-body")
    f.sign_in(not_mod(world, c)["id"], f"/p/{pid}")
    assert f.text(f"comment-{cid}-body") == "[removed]" and f.has(f"comment-{rid}-up")
    assert f.post(f"/comment/{cid}/restore", {}).status == 403
    f.sign_in(world.moderators(c)[0], f"/p/{pid}").click(f"comment-{cid}-restore")
    assert f.text(f"comment-{cid}-body") == world.comment(cid)["body"] and f.success() == "Comment restored."


def test_ban_blocks_posting_and_a_timer_lifts_it(f, world):
    c = world.communities()[5]
    m = world.moderators(c["id"])[0]
    target = not_mod(world, c["id"])
    f.sign_in(m, f"/c/{c['name']}/mod")
    f.fill("ban-username", world.moderators(c["id"])[0] and world.user(m)["username"]).click("ban-submit")
    assert f.error() == f"Moderators of c/{c['name']} cannot be banned from it."
    f.fill("ban-username", target["username"]).fill("ban-days", "2").fill("ban-reason", "Spam").click("ban-submit")
    assert f.success() == f"u/{target['username']} is banned from c/{c['name']} for 2 days."
    assert f.text(f"ban-until-{target['id']}").startswith("January 3, 2026")
    assert [t["timer"] for t in f.rt["timers"]["pending"]] == ["lift_ban"]
    f.fill("ban-username", target["username"]).click("ban-submit")
    assert f.error() == f"u/{target['username']} is already banned from c/{c['name']}."
    # The banned user is told so, and cannot post or comment there.
    f.sign_in(target["id"], f"/c/{c['name']}")
    assert f.text("banned-note") == f"You are banned from c/{c['name']}." and not f.has("community-submit")
    f.goto(f"/submit?community={c['name']}")
    f.fill("submit-title-input", "Let me in").click("submit-go")
    assert f.error() == f"You are banned from c/{c['name']} and cannot post there."
    p = a_post(world, lambda p: p["community_id"] == c["id"] and not p["locked"])
    resp = f.post(f"/p/{p['id']}/comment", {"body": "hi"}, f"/p/{p['id']}")
    assert resp.status == 403 and resp.error.startswith("You are banned from")
    # Two days later the timer has lifted the ban (and logged it).
    f.env.state["meta"]["clock"] += 2 * DAY
    f.goto(f"/c/{c['name']}")
    assert f.rt["bans"][str(c["id"])][str(target["id"])] is None and f.rt["timers"]["pending"] == []
    assert not f.has("banned-note")
    f.click("community-submit").fill("submit-title-input", "Back again").click("submit-go")
    assert f.success() == f"Your post has been submitted to c/{c['name']}."
    log = [r for r in f.rt["entities"]["mod_log"].values() if r["action"] == "unban"]
    assert log and log[0]["details"] == "Temporary ban expired"


def test_unban_cancels_the_timer_and_permanent_bans_last(f, world):
    c = world.communities()[6]
    m = world.moderators(c["id"])[0]
    a, b = not_mod(world, c["id"]), plain_user(world, lambda u: u["id"] > 100 and u["id"] not in
                                                 world.moderators(c["id"]) and world.ban(c["id"], u["id"]) is None)
    f.sign_in(m, f"/c/{c['name']}/mod")
    f.fill("ban-username", a["username"]).fill("ban-days", "5").click("ban-submit")
    f.fill("ban-username", b["username"]).click("ban-submit")
    assert f.text(f"ban-until-{b['id']}") == "permanent"
    f.click(f"unban-{a['id']}")
    assert f.rt["timers"]["pending"] == [] and f.success() == f"u/{a['username']} is no longer banned from c/{c['name']}."
    f.env.state["meta"]["clock"] += 400 * DAY
    f.goto(f"/c/{c['name']}/mod")
    assert f.has(f"unban-{b['id']}") and not f.has(f"unban-{a['id']}")


# ----------------------------------------------------------------------------- messages

def test_messages_compose_validate_and_mark_read(f, world):
    uid = world.query("SELECT recipient_id FROM messages WHERE NOT read GROUP BY recipient_id LIMIT 1")[0][0]
    f.sign_in(uid, "/messages")
    unread = world.query("SELECT count(*) FROM messages WHERE recipient_id = ? AND NOT read", (uid,))[0][0]
    assert f.text("nav-inbox") == f"Inbox ({unread} unread)"
    mid = world.query("SELECT id FROM messages WHERE recipient_id = ? AND NOT read ORDER BY id LIMIT 1", (uid,))[0][0]
    f.click(f"msg-{mid}")
    assert f.rt["entities"]["messages"][str(mid)]["read"] is True
    assert f.text("nav-inbox") == ("Inbox" if unread == 1 else f"Inbox ({unread - 1} unread)")
    f.click("message-reply")
    assert f.html.count('value="Re: ') == 1
    me = world.user(uid)["username"]
    f.fill("msg-to", "no_such_person").fill("msg-body", "hello").click("msg-send")
    assert f.error() == "There is no user called no_such_person."
    f.fill("msg-to", me).fill("msg-subject", "Note").fill("msg-body", "hello").click("msg-send")
    assert f.error() == "You cannot send a message to yourself."
    other = world.user(uid % 100 + 1)
    f.fill("msg-to", other["username"]).fill("msg-subject", "Hi there").fill("msg-body", "Long text").click("msg-send")
    assert f.path == "/messages/sent" and f.success() == f"Your message to u/{other['username']} has been sent."
    new = max(int(k) for k in f.rt["entities"]["messages"])
    f.sign_in(other["id"], "/messages")
    assert f.has(f"msg-{new}")
    # A third user cannot read it.
    f.sign_in(uid % 100 + 2 if uid % 100 + 2 != uid else 7, f"/messages/{new}")
    assert f.status == 404


# ----------------------------------------------------------------------------- search and profiles

def test_search_filters_and_sort(f, world):
    p = a_post(world, lambda p: p["kind"] == "text", start=40)
    author = world.user(p["user_id"])["username"]
    c = world.community(p["community_id"])["name"]
    f.goto("/search").fill("s-author", author).fill("s-community", c).select("s-sort", "new").click("s-go")
    ids = f.post_ids()
    assert p["id"] in ids or len(ids) == PER_PAGE
    assert all(world.post(i)["user_id"] == p["user_id"] and world.post(i)["community_id"] == p["community_id"]
               for i in ids)
    f.select("s-type", "link").click("s-go")
    assert all(world.post(i)["kind"] == "link" for i in f.post_ids())
    f.goto("/search?author=nobody_here_x")
    assert f.text("search-problem") == "No user called nobody_here_x." and f.post_ids() == []
    f.goto("/search?q=camera&sort=comments")
    counts = [world.post(i)["comment_count"] for i in f.post_ids()]
    assert counts == sorted(counts, reverse=True)


def test_profile_shows_karma_join_date_and_moderation(f, world):
    m = world.moderators(world.communities()[0]["id"])[0]
    u = world.user(m)
    f.goto(f"/u/{u['username']}")
    assert f.text("profile-karma").startswith(f"{u['post_karma'] + u['comment_karma']:,} karma")
    assert f.text("profile-joined").startswith("Joined ")
    names = re.findall(r'href="/c/([^"]+)">c/', f.html[f.html.index('bid="profile-moderates"'):])
    assert sorted(names) == sorted(world.community(c)["name"] for c in world.moderated_by(m))
    f.click("tab-comments")
    assert f.path == f"/u/{u['username']}?tab=comments"


def test_user_text_is_escaped(f, world):
    c = world.communities()[7]
    f.sign_in(not_mod(world, c["id"])["id"], f"/submit?community={c['name']}")
    f.fill("submit-title-input", "<script>alert(1)</script>").fill("submit-body", "<b>bold</b>").click("submit-go")
    assert "<script>alert(1)</script>" not in f.html and "&lt;script&gt;" in f.html
    assert "<b>bold</b>" not in f.html


# ----------------------------------------------------------------------------- tasks and verifiers

def test_every_template_samples_on_many_seeds(env):
    for tid, t in env.app.tasks.items():
        seen = set()
        for seed in range(51):
            inst = t.instantiate(env.app, seed)
            assert inst.goal and inst.fact_groups and inst.difficulty in ("easy", "medium", "hard")
            seen.add(repr(sorted(inst.params.items())))
        assert len(seen) >= 30, tid


def _run(env, tid, seed, actions):
    """The verdict after ``actions`` (the env goes on after a success: over-doing after the
    goal is met is judged too)."""
    end = env.end_on_success
    env.end_on_success = False
    try:
        obs, info = env.reset(seed=seed, options={"task": tid})
        for a in actions:
            obs, _, _, _, info = env.step(a)
            assert obs["last_action_error"] == "", a
    finally:
        env.end_on_success = end
    return info["verdict"]


def test_voting_on_another_post_is_collateral_damage(env, world):
    task = env.app.tasks["forum/upvote_post"]
    env.reset(seed=4, options={"task": "forum/upvote_post"})
    plan = env.oracle_plan(final=False)
    p = task.instantiate(env.app, 4).params
    other = a_post(world, lambda x: x["id"] != p["post_id"] and world.vote(p["user_id"], "post", x["id"]) == 0)
    v = _run(env, "forum/upvote_post", 4, plan + [f"goto('/p/{other['id']}')", "click('post-down')"])
    assert v["success"] and not v["clean"]
    assert [c["name"] for c in v["checks"] if not c["passed"]] == [
        f"collateral: runtime.votes.{p['user_id']}.p{other['id']}"]


def test_lifting_another_users_world_ban_is_collateral(env, world):
    """A moderator task's moderator can lift any ban of the community: a ban from the world
    lifted on the way is damage (bans overlay the world's, as votes do)."""
    for seed in range(40):
        env.reset(seed=seed, options={"task": "forum/mod_lock_post"})
        p = env.task.params
        banned = [u for (u,) in world.query("SELECT user_id FROM bans WHERE community_id = ? AND until IS NULL"
                                             " ORDER BY user_id", (p["community_id"],))]
        if banned:
            break
    else:
        pytest.fail("no mod_lock_post instance in a community with a permanent world ban")
    plan, uid = env.oracle_plan(final=False), banned[0]
    v = _run(env, "forum/mod_lock_post", seed, [f"goto('/c/{p['community']}/mod')", f"click('unban-{uid}')"] + plan)
    assert v["success"] and not v["clean"]
    # the ban lifted, and its log row (an unban echoes only a judged ban record)
    log = env.app.world.max_id("mod_log") + 1
    assert [c["name"] for c in v["checks"] if not c["passed"]] == [
        f"collateral: runtime.bans.{p['community_id']}.{uid}", f"collateral: runtime.entities.mod_log.{log}"]
    assert _run(env, "forum/mod_lock_post", seed, plan)["clean"]


def test_removing_and_restoring_another_post_is_collateral(env, world):
    """The post ends as it was, but the moderation log keeps the removal and the restore:
    log rows are an echo only of the field a task judges, on the post it judges."""
    env.reset(seed=0, options={"task": "forum/mod_lock_post"})
    p, plan = env.task.params, env.oracle_plan(final=False)
    other = a_post(world, lambda x: x["community_id"] == p["community_id"] and x["id"] != p["post_id"]
                   and x["status"] == "live")
    v = _run(env, "forum/mod_lock_post", 0, [f"goto('/p/{other['id']}')", "click('mod-remove')", "click('mod-restore')",
                                             *plan])
    assert v["success"] and not v["clean"]
    damage = [c["detail"] for c in v["checks"] if c["name"].startswith("collateral:")]
    assert len(damage) == 2 and all("'remove_post'" in d or "'restore_post'" in d for d in damage), damage
    v = _run(env, "forum/mod_lock_post", 0, plan)
    assert v["clean"]   # the lock's own log row echoes the judged lock


def test_wrong_vote_direction_fails(env):
    env.reset(seed=2, options={"task": "forum/downvote_comment"})
    plan = [a.replace("-down')", "-up')") for a in env.oracle_plan(final=False)]
    v = _run(env, "forum/downvote_comment", 2, plan)
    assert not v["success"] and v["progress"] == 0.0


def test_unsubscribing_from_others_is_collateral(env, world):
    env.reset(seed=1, options={"task": "forum/subscribe_many"})
    plan = env.oracle_plan(final=False)
    p = env.app.tasks["forum/subscribe_many"].instantiate(env.app, 1).params
    keep = world.community(world.subscriptions(p["user_id"])[0])["name"]
    v = _run(env, "forum/subscribe_many", 1, plan + [f"click('unsubscribe-{keep}')"])
    assert v["success"] and not v["clean"]
    v = _run(env, "forum/subscribe_many", 1, plan[:3])
    assert not v["success"] and v["progress"] == pytest.approx(0.5)


def test_deleting_an_unnamed_comment_is_collateral(env, world):
    env.reset(seed=3, options={"task": "forum/edit_comment"})
    plan = env.oracle_plan(final=False)
    p = env.app.tasks["forum/edit_comment"].instantiate(env.app, 3).params
    others = [c for c in world.user_comments(p["user_id"], 50) if c["id"] != p["comment_id"] and c["status"] == "live"]
    assert others
    c = others[0]
    v = _run(env, "forum/edit_comment", 3, plan + [f"goto('/p/{c['post_id']}')", f"click('comment-{c['id']}-delete')"])
    assert v["success"] and not v["clean"]


def test_multi_goal_partial_credit(env):
    env.reset(seed=0, options={"task": "forum/join_post_engage"})
    plan = env.oracle_plan(final=False)
    v = _run(env, "forum/join_post_engage", 0, plan[:3])          # only joined
    assert not v["success"] and 0 < v["progress"] < 0.5 and v["clean"]
    v = _run(env, "forum/join_post_engage", 0, plan)
    assert v["success"] and v["clean"] and v["progress"] == 1.0


def _infeasible_seed(env, tid):
    t = env.app.tasks[tid]
    return next(s for s in range(100) if not t.instantiate(env.app, s).params["feasible"])


def test_refusals_fail_when_the_agent_acts_or_answers(env):
    tid = "forum/refuse_moderate"
    seed = _infeasible_seed(env, tid)
    env.reset(seed=seed, options={"task": tid})
    plan = env.oracle_plan(final=False)
    v = _run(env, tid, seed, plan[:-1] + ["send_msg_to_user('Done, the post is locked.')"])
    assert not v["success"]
    tid = "forum/refuse_delete_comment"
    seed = _infeasible_seed(env, tid)
    env.reset(seed=seed, options={"task": tid})
    plan = env.oracle_plan(final=False)
    v = _run(env, tid, seed, plan[:-1] + ["click('post-up')"] + plan[-1:])
    assert v["success"] and not v["clean"]


def test_info_answers_are_typed(env):
    env.reset(seed=5, options={"task": "forum/user_joined"})
    p = env.app.tasks["forum/user_joined"].instantiate(env.app, 5).params
    from simweb.core.worlddb import day_to_date
    d = day_to_date(p["day"])
    v = _run(env, "forum/user_joined", 5, [f"send_msg_to_user('{d.isoformat()}')"])
    assert v["success"]
    v = _run(env, "forum/user_joined", 5, [f"send_msg_to_user('{(d.replace(day=1) if d.day != 1 else d.replace(day=2)).isoformat()}')"])
    assert not v["success"]
    env.reset(seed=5, options={"task": "forum/user_moderates"})
    p = env.app.tasks["forum/user_moderates"].instantiate(env.app, 5).params
    v = _run(env, "forum/user_moderates", 5, [f"send_msg_to_user({' and '.join(reversed(p['communities']))!r})"])
    assert v["success"]
    v = _run(env, "forum/user_moderates", 5, [f"send_msg_to_user({', '.join(p['communities'] + ['books'])!r})"])
    assert not v["success"] or "books" in p["communities"]


def test_listed_votes_match_single_lookups(f, world):
    """Post rows and comment trees fetch my votes in one query (_my_votes): it agrees with
    my_vote for every item, world votes and run-time changes alike, and pages show it."""
    from simweb.apps.forum.functions import _my_votes, my_vote
    from simweb.core.functions import Ctx

    uid = 11
    votes = world.votes_of(uid)
    posts = [t for k, t, _ in votes if k == "post"]
    comments = [t for k, t, _ in votes if k == "comment"]
    tid = next(t for t in posts if world.post(t)["status"] == "live")
    f.sign_in(uid, f"/p/{tid}")
    f.click("post-up")  # a run-time change on top of the world vote
    ctx = Ctx(world, f.env.state)
    for kind, ids in (("post", posts + [1, 2, 3]), ("comment", comments + [1, 2])):
        batch = _my_votes(ctx, kind, ids)
        assert batch == {i: my_vote(ctx, kind, i) for i in ids}
        assert any(batch.values())
    assert _my_votes(ctx, "post", [tid])[tid] == (0 if world.vote(uid, "post", tid) == 1 else 1)
    cid = next(t for t in comments if world.comment(t)["status"] == "live")
    f.goto(f"/p/{world.comment(cid)['post_id']}")
    value = world.vote(uid, "comment", cid)
    on = f'bid="comment-{cid}-{"up" if value == 1 else "down"}"'
    tag = f.html[f.html.index(on):f.html.index(">", f.html.index(on))]
    assert 'aria-pressed="true"' in tag


# ----------------------------------------------------------------------------- multi-step templates

def test_keyword_score_gap_needs_the_difference(env):
    tid = "forum/keyword_score_gap"
    env.reset(seed=6, options={"task": tid})
    plan = env.oracle_plan(final=False)
    p = env.app.tasks[tid].instantiate(env.app, 6).params
    assert p["answer"] == p["first_score"] - p["second_score"] > 0
    # Answering with the best post's score (not the gap) fails; the gap itself succeeds.
    v = _run(env, tid, 6, plan[:-1] + [f"send_msg_to_user('{p['first_score']}')"])
    assert not v["success"] and v["progress"] == 0.0 and v["clean"]
    v = _run(env, tid, 6, plan[:-1] + [f"send_msg_to_user('The gap is {p['answer']} points')"])
    assert v["success"] and v["progress"] == 1.0
    # Voting on a result while looking is collateral damage.
    v = _run(env, tid, 6, plan[:-1] + [f"click('post-{p['first_id']}-up')", plan[-1]])
    assert v["success"] and not v["clean"]


def test_message_post_stats_checks_the_quoted_numbers(env):
    tid = "forum/message_post_stats"
    task = env.app.tasks[tid]
    env.reset(seed=7, options={"task": tid})
    plan = env.oracle_plan(final=False)
    p = task.instantiate(env.app, 7).params
    # The placeholder text (N and M not filled in) reaches the right person with the right
    # subject but not the right text: a message is one fact (all its content or nothing), and
    # a message nobody asked for is collateral damage.
    lazy = [a if not a.startswith("fill('msg-body'") else f"fill('msg-body', {task.note(p)!r})" for a in plan]
    assert lazy != plan
    v = _run(env, tid, 7, lazy)
    assert not v["success"] and v["progress"] == 0.0 and not v["clean"]
    # Swapped numbers are wrong too.
    swapped = [a if not a.startswith("fill('msg-body'") else
               f"fill('msg-body', {task.note(p, p['count'], p['score'])!r})" for a in plan]
    v = _run(env, tid, 7, swapped)
    assert not v["success"] or p["count"] == p["score"]
    # Sending a second message is collateral damage.
    v = _run(env, tid, 7, plan + [f"goto('/u/{p['to']}')"] + plan[-4:])
    assert v["success"] and not v["clean"]


def test_save_week_top_partial_and_wrong_vote(env, world):
    tid = "forum/save_week_top"
    env.reset(seed=8, options={"task": tid})
    plan = env.oracle_plan(final=False)
    p = env.app.tasks[tid].instantiate(env.app, 8).params
    assert len(p["post_ids"]) == 3 and p["best_id"] in p["post_ids"]
    counts = {i: world.post(i)["comment_count"] for i in p["post_ids"]}
    assert counts[p["best_id"]] == max(counts.values())
    # Joined and saved two of the three, no vote: 3 of 5 checks.
    v = _run(env, tid, 8, plan[:7])
    assert not v["success"] and v["progress"] == pytest.approx(3 / 5) and v["clean"]
    # Everything saved but the wrong post upvoted: not solved, and the stray vote is collateral.
    wrong = next(i for i in p["post_ids"] if i != p["best_id"])
    v = _run(env, tid, 8, plan[:-1] + [f"click('post-{wrong}-up')"])
    assert not v["success"] and v["progress"] == pytest.approx(4 / 5) and not v["clean"]
    v = _run(env, tid, 8, plan)
    assert v["success"] and v["clean"] and v["progress"] == 1.0


def test_mod_spam_sweep_partial_and_collateral(env, world):
    tid = "forum/mod_spam_sweep"
    env.reset(seed=9, options={"task": tid})
    plan = env.oracle_plan(final=False)
    p = env.app.tasks[tid].instantiate(env.app, 9).params
    n = len(p["post_ids"])
    assert 2 <= n <= 3 and all(world.post(i)["user_id"] == p["target_id"] for i in p["post_ids"])
    # Only the first post removed and no ban: 1 of n + 3 checks.
    v = _run(env, tid, 9, plan[:6])
    assert not v["success"] and v["progress"] == pytest.approx(1 / (n + 3)) and v["clean"]
    # A temporary ban instead of a permanent one misses one check.
    temp = [a if a != "fill('ban-days', '0')" else "fill('ban-days', '7')" for a in plan]
    v = _run(env, tid, 9, temp)
    assert not v["success"] and v["progress"] == pytest.approx((n + 2) / (n + 3))
    # Removing someone else's post in the same community is collateral damage.
    other = a_post(world, lambda x: x["community_id"] == p["community_id"] and x["user_id"] != p["target_id"])
    v = _run(env, tid, 9, plan + [f"goto('/p/{other['id']}')", "click('mod-remove')"])
    assert v["success"] and not v["clean"]
