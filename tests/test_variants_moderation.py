"""Moderation policies of site variants (docs/variants.md, "Policies"): forum's
post_approval (a member's new post waits in the community's approval queue until a
moderator approves or removes it) and the cms templates that post a comment under
comment_moderation. The site follows the policy on a variant that takes it and not on
variant 0, its pages say so, the templates' goals are achievable as written under each
value, and wrong or extra work is not paid. Variants are asked of the catalogue."""
from __future__ import annotations

from typing import Any

import pytest
from conftest import served_browser
from sitedriver import Site

import simweb
from simweb.core.state import deep_copy
from simweb.runtime.variants import catalogue, shown_url, words
from simweb.tools.redteam import redteam

FORUM_POSTING = ("forum/submit_text_post", "forum/submit_link_post", "forum/join_post_engage", "forum/mod_review_queue")
CMS_COMMENTING = ("cms/leave_comment", "cms/comment_and_publish")


def variant_with(app: str, confirm: bool = False, steps: bool = False, **want: Any) -> int:
    """The first variant id >= 1 with these policy values, with (or without) a confirmation
    step, with (or without) multi-step forms."""
    cat = catalogue(app)
    return next(k for k in range(1, cat.count) if all(cat.policies(k)[n] == v for n, v in want.items())
                and bool(cat.site(k).confirm) is confirm and bool(cat.site(k).steps) is steps
                and not cat.site(k).login)   # tasks start signed in (tests/test_variants_login.py)


def fresh(app: str, k: int) -> Site:
    site = Site(simweb.make(app, variant=k, end_on_success=False, max_steps=100_000))
    site.obs, site.info = site.env.reset(seed=0, options={"task": None})
    return site


def go(site: Site, url: str) -> Site:
    return site.goto(shown_url(site.env.app, site.state, url))


def shows(site: Site, bid: str) -> bool:
    return f'bid="{bid}"' in site.html


def member_and_mod(world: Any) -> tuple[dict, int, int]:
    """A community, a member who neither moderates it nor is banned there, and a moderator."""
    c = world.communities()[0]
    mods = world.moderators(c["id"])
    u = next(i for i in range(1, 500) if i not in mods and world.ban(c["id"], i) is None)
    return c, u, mods[0]


def submit(site: Site, uid: int, community: str, title: str) -> int:
    """Submit a text post as ``uid``; the new post's id."""
    site.env.state["browser"]["user"] = uid
    go(site, "/submit?community=" + community)
    site.fill("submit-title-input", title).fill("submit-body", "Some text.").click("submit-go")
    top = site.env.app.world.max_id("posts")
    return max(int(k) for k in site.rt["entities"]["posts"] if int(k) > top)


def status(site: Site, pid: int) -> str:
    return site.rt["entities"]["posts"][str(pid)]["status"]


def listed(site: Site, url: str, pid: int) -> bool:
    go(site, url)
    return shows(site, f"post-{pid}")


# ----------------------------------------------------------------------------- the forum's behaviour

def test_the_catalogue_has_post_approval_off_today() -> None:
    cat = catalogue("forum")
    assert cat.policy_defaults == {"post_approval": False} and cat.policies(0) == {"post_approval": False}
    assert {cat.policies(k)["post_approval"] for k in range(50)} == {False, True}


def todays_site_lists_a_members_post_at_once() -> None:
    """Variant 0 (post_approval off): the post is live and listed, nothing states a queue,
    and there is no queue page."""
    site = fresh("forum", 0)
    c, u, _ = member_and_mod(site.env.app.world)
    pid = submit(site, u, c["name"], "Straight to the front page")
    assert status(site, pid) == "live" and "moderator approves" not in (site.success() or "")
    assert not shows(site, "site-policies") and not shows(site, "post-pending")
    assert listed(site, f"/c/{c['name']}?sort=new", pid) and not shows(site, "community-policy")
    site.env.state["browser"]["user"] = member_and_mod(site.env.app.world)[2]
    go(site, f"/c/{c['name']}/mod")
    assert not shows(site, "mod-queue")
    go(site, f"/c/{c['name']}/queue")
    assert site.status == 404


def test_with_post_approval_a_members_post_waits_and_a_moderator_approves_it() -> None:
    todays_site_lists_a_members_post_at_once()
    k = variant_with("forum", post_approval=True)
    site = fresh("forum", k)
    world = site.env.app.world
    c, u, mod = member_and_mod(world)
    site.env.state["browser"]["user"] = u
    go(site, "/submit")
    # (in the variant's words: a site whose communities are "groups" says so)
    assert words("forum", k, "once a moderator of the community approves it") in site.text_of("submit-policy")
    pid = submit(site, u, c["name"], "Waiting for the mods")
    assert status(site, pid) == "pending"
    assert "It will appear there once a moderator approves it." in (site.success() or "")
    assert "Awaiting a moderator's approval" in site.text_of("post-pending")       # its author sees it marked
    assert "moderator's approval" in site.text_of("site-policies")
    assert "cannot get comments yet" in site.text_of("pending-note")
    assert not listed(site, f"/c/{c['name']}?sort=new", pid)                       # not listed anywhere
    assert "appear once a moderator approves them" in site.text_of("community-policy")
    assert not listed(site, "/all?sort=new", pid)
    assert not listed(site, "/search?q=Waiting+for+the+mods", pid)
    assert listed(site, f"/u/{world.user(u)['username']}", pid)                   # the author's profile keeps it
    # the forms refuse a comment and a vote on it, whatever the page shows
    go(site, f"/p/{pid}")
    before = deep_copy(site.rt)
    assert "cannot get comments yet" in (site.post(f"/p/{pid}/comment", {"body": "first!"}).error or "")
    assert site.post(f"/p/{pid}/vote", {"dir": "up"}).error
    assert site.rt.get("entities") == before.get("entities") and site.rt.get("votes") == before.get("votes")
    # someone else sees no title, and cannot approve it
    other = next(i for i in range(u + 1, 900) if i not in world.moderators(c["id"]))
    site.env.state["browser"]["user"] = other
    go(site, f"/p/{pid}")
    assert site.text_of("post-title") == "[awaiting approval]" and not shows(site, "mod-approve")
    assert "Only moderators" in (site.post(f"/p/{pid}/approve", {}).error or "")
    assert "Only moderators" in (site.post(f"/p/{pid}/reject", {}).error or "")
    go(site, f"/c/{c['name']}/queue")
    assert status(site, pid) == "pending" and site.status == 403
    # the moderator's queue
    site.env.state["browser"]["user"] = mod
    go(site, f"/c/{c['name']}")
    assert site.text_of("mod-queue") == "Approval queue (1)"
    site.click("mod-queue")
    assert shows(site, f"approve-{pid}") and shows(site, f"reject-{pid}")
    site.click(f"approve-{pid}")
    assert status(site, pid) == "live" and "queue" in site.path and shows(site, "queue-empty")
    log = [r for r in site.rt["entities"]["mod_log"].values() if r["post_id"] == pid]
    assert [(r["action"], r["moderator_id"], r["about"]) for r in log] == [("approve_post", mod, "live")]
    assert listed(site, f"/c/{c['name']}?sort=new", pid)
    go(site, f"/p/{pid}")
    r = site.post(f"/p/{pid}/approve", {})                                          # a live post is not pending
    assert "not waiting for approval" in (r.error or "") and status(site, pid) == "live"
    # a moderator's own post skips the queue; a rejected one is removed
    own = submit(site, mod, c["name"], "From the mod team")
    assert status(site, own) == "live"
    pid2 = submit(site, u, c["name"], "Spam spam spam")
    site.env.state["browser"]["user"] = mod
    go(site, f"/p/{pid2}")
    site.click("mod-reject")
    assert status(site, pid2) == "removed" and not listed(site, f"/c/{c['name']}?sort=new", pid2)


def test_a_pending_post_forks_restores_and_fits_the_schema() -> None:
    k = variant_with("forum", post_approval=True)
    env = simweb.make("forum", variant=k, max_steps=100_000)
    env.reset(seed=3, options={"task": "forum/mod_review_queue"})
    u = env.unwrapped
    snap = u.snapshot()
    u.app.check_state(snap)                                   # the set-up's pending rows fit the schema
    assert sorted({r["status"] for r in snap["runtime"]["entities"]["posts"].values()}) == ["pending"]
    plan = u.oracle_plan()
    fork = u.fork()
    for a in plan:
        fork.step(a)
    assert fork.verdict()["success"] and fork.verdict()["clean"]
    u.app.check_state(fork.snapshot())
    assert u.verdict()["success"] is False                    # the parent's queue is still full
    other = simweb.make("forum", max_steps=100_000)           # today's site: the state's variant decides
    other.reset(seed=3, options={"task": "forum/mod_review_queue"})
    other.unwrapped.restore(deep_copy(snap))
    for a in plan:
        other.step(a)
    assert other.unwrapped.verdict()["success"] and other.unwrapped.verdict()["clean"]
    assert other.unwrapped.snapshot()["runtime"] == fork.snapshot()["runtime"]
    bad = deep_copy(snap)
    next(iter(bad["runtime"]["entities"]["posts"].values()))["status"] = "waiting"
    with pytest.raises(Exception, match="status"):
        u.app.check_state(bad)


# ----------------------------------------------------------------------------- templates

def run(env: Any, tid: str, seed: int, plan: list[str] | None = None) -> dict:
    env.reset(seed=seed, options={"task": tid})
    info: dict = {}
    for a in plan if plan is not None else env.unwrapped.oracle_plan():
        _, _, _, _, info = env.step(a)
    return info["verdict"] if info else env.unwrapped.verdict()


@pytest.mark.parametrize("app,tids,name", [("forum", FORUM_POSTING, "post_approval"),
                                           ("cms", CMS_COMMENTING, "comment_moderation")])
def test_the_templates_oracles_succeed_cleanly_under_both_values(app: str, tids: tuple, name: str) -> None:
    for value in (True, False):
        for confirm, steps in ((False, False), (True, False), (False, True)):
            k = variant_with(app, confirm=confirm, steps=steps, **{name: value})
            env = simweb.make(app, variant=k, max_steps=100_000)
            for tid in tids:
                for seed in range(2):
                    v = run(env, tid, seed)
                    assert v["success"] and v["clean"] and v["progress"] == 1.0, (k, tid, seed, v)


def test_goals_state_the_queue_where_the_outcome_depends_on_it() -> None:
    app = simweb.make("forum").app
    on = variant_with("forum", post_approval=True)
    for tid in FORUM_POSTING:
        t = app.tasks[tid]
        assert t.policies == ("post_approval",)
        today, held = t.instantiate(app, 0), t.instantiate(app, 0, variant=on)
        assert "site_policy" not in today.params and held.params["site_policy"] == {"post_approval": True}
        assert "approval" not in today.goal.replace("without approval", "") and "approval" in held.goal
        if tid != "forum/mod_review_queue":                   # the poster never moderates the community
            cid = held.params["community_id"]
            assert held.params["user_id"] not in app.world.moderators(cid)
    capp = simweb.make("cms").app
    open_ = variant_with("cms", comment_moderation=False)
    t = capp.tasks["cms/leave_comment"]
    assert "wait for a moderator's approval" in t.instantiate(capp, 1).goal
    assert "published at once" in t.instantiate(capp, 1, variant=open_).goal
    t = capp.tasks["cms/comment_and_publish"]                 # the same success condition: no statement
    assert t.instantiate(capp, 1).goal == t.instantiate(capp, 1, variant=open_).goal


def queue_instance(k: int, seed: int = 0) -> tuple[Any, dict]:
    env = simweb.make("forum", variant=k, max_steps=100_000, end_on_success=False)
    env.reset(seed=seed, options={"task": "forum/mod_review_queue"})
    return env, env.unwrapped.task.params


def work(env: Any) -> list[str]:
    """The oracle's plan without its closing message (which ends the episode)."""
    plan = env.unwrapped.oracle_plan()
    return plan[:-1] if plan and plan[-1].startswith("send_msg_to_user(") else plan


def to(env: Any, url: str) -> str:
    """A goto action to today's ``url`` as the env's variant shows it."""
    return f"goto({shown_url(env.unwrapped.app, env.unwrapped.state, url)!r})"


def test_wrong_work_on_the_queue_is_not_paid() -> None:
    k = variant_with("forum", post_approval=True)
    env, p = queue_instance(k)
    to_queue = ["click('nav-communities')", f"click('community-{p['community']}')", "click('mod-queue')"]
    ids = [x["id"] for x in p["posts"]]
    spam = [x["id"] for x in p["posts"] if x["spam"]]
    attacks = {
        "approve everything": [f"click('approve-{i}')" for i in ids],
        "remove everything": [f"click('reject-{i}')" for i in ids],
        "only the spam removed": [f"click('reject-{i}')" for i in spam],
        "the good ones approved, the spam left waiting": [f"click('approve-{i}')" for i in ids if i not in spam],
    }
    for name, clicks in attacks.items():
        v = run(env, "forum/mod_review_queue", 0, to_queue + clicks)
        assert not v["success"], name
        assert v["progress"] < 1.0, name
    # the right work plus a post removed that the goal did not ask about: not clean
    world_post = next(r for r in env.unwrapped.app.world.list_posts([p["community_id"]], "new", None, 5)
                      if r["status"] == "live")
    v = run(env, "forum/mod_review_queue", 0, work(env)
            + [to(env, f"/p/{world_post['id']}"), "click('mod-remove')"])
    assert v["success"] and not v["clean"]
    # without the queue: removing the good new posts too is damage; approving is impossible
    off = variant_with("forum", post_approval=False)
    env, p = queue_instance(off)
    plan = work(env)
    good = [x["id"] for x in p["posts"] if not x["spam"]]
    v = run(env, "forum/mod_review_queue", 0, plan + [to(env, f"/p/{good[0]}"), "click('mod-remove')"])
    assert v["success"] and not v["clean"]
    v = run(env, "forum/mod_review_queue", 0, [to(env, f"/p/{good[0]}"), "click('mod-remove')"])
    assert not v["success"] and v["progress"] == 0


def test_a_post_that_skips_or_misses_the_queue_is_not_paid() -> None:
    on = variant_with("forum", post_approval=True)
    env = simweb.make("forum", variant=on, max_steps=100_000, end_on_success=False)
    env.reset(seed=0, options={"task": "forum/submit_text_post"})
    u = env.unwrapped
    p = u.task.params
    plan = work(env)
    mod = u.app.world.moderators(p["community_id"])[0]
    # the same post made by a moderator (live at once): not the user's post
    env.reset(seed=0, options={"task": "forum/submit_text_post"})
    u.state["browser"]["user"] = mod
    for a in plan:
        env.step(a)
    v = u.verdict()
    assert not v["success"] and v["progress"] == 0
    # the user's post, then approved by a moderator: live is not what the goal says happens
    env.reset(seed=0, options={"task": "forum/submit_text_post"})
    for a in plan:
        env.step(a)
    pid = max(int(i) for i in u.state["runtime"]["entities"]["posts"])
    u.state["browser"]["user"] = mod
    env.step(to(env, f"/p/{pid}"))
    env.step("click('mod-approve')")
    v = u.verdict()
    assert u.state["runtime"]["entities"]["posts"][str(pid)]["status"] == "live"
    assert not v["success"]


def test_a_comment_on_the_wrong_post_or_left_waiting_is_not_paid() -> None:
    for value in (True, False):
        k = variant_with("cms", comment_moderation=value)
        env = simweb.make("cms", variant=k, max_steps=100_000, end_on_success=False)
        env.reset(seed=0, options={"task": "cms/leave_comment"})
        p = env.unwrapped.task.params
        plan = env.unwrapped.oracle_plan()
        other = next(i for i in range(1, 400) if i != p["post_id"] and (q := env.unwrapped.app.world.post(i))
                     and q["kind"] == "post" and q["status"] == "published")
        v = run(env, "cms/leave_comment", 0, [to(env, f"/p/{other}")] + plan[2:])
        assert not v["success"] and v["progress"] == 0, value
    # the editor's comment left waiting where comments are moderated: not published
    env = simweb.make("cms", variant=0, max_steps=100_000, end_on_success=False)
    env.reset(seed=0, options={"task": "cms/comment_and_publish"})
    plan = env.unwrapped.oracle_plan()
    assert any(a.startswith("click('approve-") for a in plan)
    v = run(env, "cms/comment_and_publish", 0, [a for a in plan if not a.startswith("click('approve-")])
    assert not v["success"]
    # and approving another pending comment on the way costs clean
    world = env.unwrapped.app.world
    p = env.unwrapped.task.params
    extra = next((c for c in world.comments_of(p["post_id"]) if c["status"] == "pending"), None)
    if extra is not None:
        v = run(env, "cms/comment_and_publish", 0, work(env) + [f"click('approve-{extra['id']}')"])
        assert v["success"] and not v["clean"]


def test_the_red_team_pays_nothing_under_either_value() -> None:
    for value in (True, False):
        k = variant_with("forum", post_approval=value)
        bad = [a for a in redteam("forum", [0], tasks=["forum/mod_review_queue", "forum/submit_text_post"], variant=k)
               if a.paid or a.false_negative]
        assert bad == [], (value, bad[:3])
        k = variant_with("cms", comment_moderation=value)
        bad = [a for a in redteam("cms", [0], tasks=list(CMS_COMMENTING), variant=k) if a.paid or a.false_negative]
        assert bad == [], (value, bad[:3])


# ----------------------------------------------------------------------------- Chromium

@pytest.mark.browser
def test_the_queue_is_the_same_in_chromium(chromium: Any) -> None:
    """The approval queue's pages (community, queue, each approve and remove) in Chromium:
    the same AX tree and URL at every step of the oracle, and the same runtime at the end."""
    pytest.importorskip("playwright.sync_api")

    k = variant_with("forum", post_approval=True)
    with served_browser("forum", chromium) as web:
        sim = simweb.make("forum", variant=k, max_steps=100_000)
        sim.reset(seed=1, options={"task": "forum/mod_review_queue"})
        web.restore(deep_copy(sim.unwrapped.snapshot()))
        for a in ["noop()"] + sim.unwrapped.oracle_plan():
            so, *_ = sim.step(a)
            wo, *_ = web.step(a)
            assert so["axtree"] == wo["axtree"], (a, so["url"])
            assert so["url"].split("/", 3)[3] == wo["url"].split("/", 3)[3], (a, so["url"], wo["url"])
        assert "Approval queue" in so["axtree"] or "approval" in so["axtree"]
        assert web.snapshot()["runtime"] == sim.unwrapped.snapshot()["runtime"]
        assert sim.unwrapped.verdict()["success"]
