"""Simtracker as a user (or an agent) experiences it, in process.

Tests drive the tracker through BrowserGym actions on one shared env (module fixture,
reset per test) and check both what changed in the state and what the page shows.
Forbidden actions whose controls a page hides are posted directly, as a crafted form
would be. Test data is picked from the world by property, never by hard-coded id.
"""
from __future__ import annotations

import copy
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sitedriver import Site

import simweb
from simweb.apps.issues.world import ROLES, sort_key, text_matches

ORIGIN = "http://issues.simweb.localhost"
RANK = {r: i for i, r in enumerate(ROLES)}


# ----------------------------------------------------------------------------- fixtures

@pytest.fixture(scope="module")
def env():
    return simweb.make("issues", seed=0)


@pytest.fixture(scope="module")
def world(env):
    return env.app.world


class Tracker(Site):
    """The shared driver, plus the tracker's page readers."""

    def issue_iids(self, pid: int) -> list[int]:
        return [int(b.rsplit("-", 1)[1]) for b in self.bids() if re.fullmatch(rf"issue-{pid}-\d+", b)]

    def issue(self, issue_id: int) -> dict:
        row = self.rt["entities"].get("issues", {}).get(str(issue_id))
        return row if row is not None else self.env.app.world.issue(issue_id)


@pytest.fixture
def t(env):
    s = Tracker(env)
    s.obs, s.info = env.reset(seed=0, options={"task": None})
    assert s.path == "/" and s.state["browser"]["user"] is None
    return s


# ----------------------------------------------------------------------------- world picks

def project_with(world, pred=lambda p: True):
    for p in world.projects():
        if pred(p):
            return p
    pytest.fail("no project satisfies the test's needs")


def member_of(world, pid, role=None, min_role=None, max_role=None, exclude=()):
    for m in world.members(pid):
        if m["user_id"] in exclude:
            continue
        if role and m["role"] != role:
            continue
        if min_role and RANK[m["role"]] < RANK[min_role]:
            continue
        if max_role and RANK[m["role"]] > RANK[max_role]:
            continue
        return m
    return None


def outsider(world, pid):
    inside = {m["user_id"] for m in world.members(pid)}
    return next(u for u in range(1, world.max_id("users") + 1) if u not in inside)


def issues_of(world, pid, **filters):
    f = {"project_id": pid, "state": None, "labels": [], "assignee": None, "author": None, "milestone": None,
         "terms": []}
    f.update(filters)
    return world.issues(world.issue_ids(limit=100_000, **f))


def issue_with(world, pid, pred):
    for i in issues_of(world, pid):
        if pred(i):
            return i
    return None


def blockers(world, issue_id):
    return [world.issue(ln["source_id"]) for ln in world.links(issue_id)
            if ln["kind"] == "blocks" and ln["target_id"] == issue_id]


def setup(world, need_role="developer", pred=lambda i: i["state"] == "opened"):
    """(project, issue, member) with a member of at least ``need_role`` and a matching issue."""
    for p in world.projects():
        m = member_of(world, p["id"], min_role=need_role)
        i = issue_with(world, p["id"], pred)
        if m and i:
            return p, i, m
    pytest.fail("no project/issue/member for the test")


def url_of(p, i=None, suffix=""):
    base = f"/projects/{p['path']}"
    return base + (f"/issues/{i['iid']}" if i else "") + suffix


# ============================================================================= session and errors

def test_sign_in_with_a_wrong_password_is_refused(t, world):
    u = world.user(1)
    t.goto("/login").fill("login-user", u["username"]).fill("login-password", "nope").click("login-submit")
    assert t.state["browser"]["user"] is None
    assert t.error() == "Invalid username or password."


def test_sign_in_with_email_goes_back_and_sign_out(t, world):
    u = world.user(2)
    p = world.projects()[0]
    t.goto(f"/login?next=/projects/{p['path']}").fill("login-user", u["email"].upper())
    t.fill("login-password", u["password"]).click("login-submit")
    assert t.state["browser"]["user"] == 2 and t.path == f"/projects/{p['path']}"
    assert t.success() == f"Signed in as @{u['username']}."
    t.click("nav-logout")
    assert t.state["browser"]["user"] is None and t.path == "/"


def test_sign_in_never_redirects_off_site(t, world):
    u = world.user(3)
    t.goto("/login?next=//evil.example.com/x").fill("login-user", u["username"])
    t.fill("login-password", u["password"]).click("login-submit")
    assert t.path == "/"


@pytest.mark.parametrize("url", ["/projects/nope/nothing", "/projects/nope/nothing/issues"])
def test_unknown_project_is_404(t, url):
    t.goto(url)
    assert t.status == 404 and "does not exist" in t.text_of("error-message")


def test_unknown_issue_and_foreign_milestone_are_404(t, world):
    p, q = world.projects()[0], world.projects()[1]
    t.goto(url_of(p) + f"/issues/{p['issue_count'] + 1}")
    assert t.status == 404 and t.text_of("error-message") == f"Issue #{p['issue_count'] + 1} does not exist in {p['path']}."
    t.goto(url_of(p) + f"/milestones/{world.milestones(q['id'])[0]['id']}")
    assert t.status == 404


def test_member_only_pages_are_403_for_outsiders_and_ask_guests_to_sign_in(t, world):
    p = world.projects()[0]
    t.goto(url_of(p, suffix="/members"))
    assert t.path.startswith("/login?next=")
    t.sign_in(outsider(world, p["id"]), url_of(p, suffix="/members"))
    assert t.status == 403 and t.text_of("error-message") == f"Only members of {p['path']} can see its members."
    t.goto(url_of(p, suffix="/issues/new"))
    assert t.status == 403
    t.goto(url_of(p, world.issue(world.issue_id_by_iid(p["id"], 1))))
    assert t.status == 200 and not t.has("comment-body") and not t.has("close-issue")


# ============================================================================= issue list

def test_state_tabs_count_the_world(t, world):
    p = world.projects()[0]
    t.goto(url_of(p, suffix="/issues"))
    opened = len(issues_of(world, p["id"], state="opened"))
    closed = len(issues_of(world, p["id"], state="closed"))
    assert t.text_of("state-opened") == f"Open {opened}" and t.text_of("state-closed") == f"Closed {closed}"
    assert t.text_of("state-all") == f"All {opened + closed}" and opened + closed == p["issue_count"]
    assert len(t.issue_iids(p["id"])) == min(20, opened)


def test_label_filter_lists_only_issues_with_every_label(t, world):
    p = world.projects()[1]
    labs = world.labels(p["id"])[:2]
    t.goto(url_of(p, suffix="/issues?state=all"))
    t.check(f"f-label-{labs[0]['id']}").click("f-apply")
    for iid in t.issue_iids(p["id"]):
        i = world.issue(world.issue_id_by_iid(p["id"], iid))
        assert labs[0]["id"] in i["labels"]
    total = len(issues_of(world, p["id"], labels=[labs[0]["id"]]))
    assert t.text_of("results-count") == f"{total} issue{'s' if total != 1 else ''}"


def test_search_results_contain_every_term_and_match_fts(t, world):
    p = world.projects()[2]
    words = [w.lower() for w in world.issue(world.issue_id_by_iid(p["id"], 5))["title"].split()[-2:]]
    t.goto(url_of(p, suffix="/issues?state=all")).fill("f-q", " ".join(words).upper()).click("f-apply")
    iids = t.issue_iids(p["id"])
    assert 5 in iids or len(iids) == 20
    for iid in iids:
        i = world.issue(world.issue_id_by_iid(p["id"], iid))
        assert text_matches(i, words)
    want = sum(text_matches(i, words) for i in issues_of(world, p["id"]))
    assert t.text_of("results-count") == f"{want} issue{'s' if want != 1 else ''}"


def test_search_by_number_finds_that_issue_within_the_filters(t, world):
    p = world.projects()[2]
    closed = issue_with(world, p["id"], lambda i: i["state"] == "closed")
    t.goto(url_of(p, suffix="/issues")).fill("f-q", f"#{closed['iid']}").click("f-apply")
    # the open tab finds nothing, but its state tabs count the closed one
    assert t.has("no-results") and t.issue_iids(p["id"]) == []
    assert t.text_of("state-closed") == "Closed 1" and t.text_of("state-all") == "All 1"
    t.click("state-all")
    assert t.issue_iids(p["id"]) == [closed["iid"]] and t.text_of("results-count") == "1 issue"
    # other filters still apply; a number the project does not have matches nothing
    other = next(lab for lab in world.labels(p["id"]) if lab["id"] not in closed["labels"])
    t.goto(url_of(p, suffix=f"/issues?state=all&q=%23{closed['iid']}&label={other['name']}"))
    assert t.has("no-results")
    t.goto(url_of(p, suffix=f"/issues?state=all&q=%23{p['issue_count'] + 1}"))
    assert t.has("no-results") and t.text_of("results-count") == "0 issues"
    # "12" without the # is a word search, as before
    t.goto(url_of(p, suffix=f"/issues?state=all&q={closed['iid']}"))
    assert all(text_matches(world.issue(world.issue_id_by_iid(p["id"], n)), [str(closed["iid"])])
               for n in t.issue_iids(p["id"]))


@pytest.mark.parametrize("sort", ["created", "oldest", "updated", "due", "weight", "comments"])
def test_sorts_order_the_list(t, world, sort):
    p = world.projects()[3]
    t.goto(url_of(p, suffix=f"/issues?state=all&sort={sort}"))
    rows = [world.issue(world.issue_id_by_iid(p["id"], n)) for n in t.issue_iids(p["id"])]
    assert len(rows) == 20
    assert rows == sorted(rows, key=sort_key(sort))
    everything = sorted(issues_of(world, p["id"]), key=sort_key(sort))
    assert [r["id"] for r in rows] == [r["id"] for r in everything[:20]]


def test_pagination_keeps_the_filters(t, world):
    p = project_with(world, lambda p: len(issues_of(world, p["id"], state="closed")) > 40)
    t.goto(url_of(p, suffix="/issues?state=closed&sort=oldest"))
    first = t.issue_iids(p["id"])
    t.click("page-next")
    assert "state=closed" in t.path and "sort=oldest" in t.path and "page=2" in t.path
    second = t.issue_iids(p["id"])
    assert not set(first) & set(second)
    want = [r["iid"] for r in sorted(issues_of(world, p["id"], state="closed"), key=sort_key("oldest"))[20:40]]
    assert second == want


def test_unknown_filter_values_match_nothing(t, world):
    p = world.projects()[0]
    t.goto(url_of(p, suffix="/issues?label=no-such-label"))
    assert t.has("no-results") and t.text_of("results-count") == "0 issues"
    t.goto(url_of(p, suffix="/issues?author=nobody.at.all"))
    assert t.has("no-results")


def test_assigned_to_me_lists_every_project(t, world):
    uid = next(u for u in range(1, 200) if len({i["project_id"] for i in world.issues(
        world.issue_ids(project_id=None, state="opened", labels=[], assignee=u, author=None, milestone=None,
                        terms=[], limit=1000))}) >= 2)
    t.sign_in(uid, "/dashboard/issues")
    n = len(world.issue_ids(project_id=None, state="opened", labels=[], assignee=uid, author=None, milestone=None,
                            terms=[], limit=100_000))
    assert t.text_of("state-opened") == f"Open {n}"


# ============================================================================= create issue

def test_create_issue_with_everything(t, world):
    p, _, m = setup(world, "reporter")
    labs = world.labels(p["id"])[:2]
    ms = next(x for x in world.milestones(p["id"]) if x["state"] == "active")
    dev = member_of(world, p["id"], min_role="developer")
    t.sign_in(m["user_id"], url_of(p, suffix="/issues")).click("new-issue")
    t.fill("issue-title", "Crash on <save>").fill("issue-description", "It breaks & burns")
    for x in labs:
        t.check(f"new-label-{x['id']}")
    t.check(f"new-assignee-{dev['user_id']}").select("issue-milestone", ms["title"])
    t.fill("issue-due", "2026-03-01").fill("issue-weight", "4").click("issue-submit")
    n = p["issue_count"] + 1
    assert t.path == url_of(p, suffix=f"/issues/{n}") and t.success() == f"Issue #{n} was created."
    assert "Crash on &lt;save&gt;" in t.html
    row = next(r for r in t.rt["entities"]["issues"].values())
    assert row["iid"] == n and row["labels"] == sorted(x["id"] for x in labs) and row["assignees"] == [dev["user_id"]]
    assert row["milestone_id"] == ms["id"] and row["due_day"] == 59 and row["weight"] == 4 and row["state"] == "opened"
    assert [x["key"] for x in t.rt["timers"]["pending"]] == [f"due:{row['id']}"]
    # it is the newest issue of the list, and the open count grew by one
    t.goto(url_of(p, suffix="/issues"))
    assert t.issue_iids(p["id"])[0] == n
    assert t.text_of("state-opened") == f"Open {len(issues_of(world, p['id'], state='opened')) + 1}"


@pytest.mark.parametrize("form,message", [
    ({"title": ""}, "Title is required."),
    ({"title": "x" * 256}, "Title must be at most 255 characters."),
    ({"title": "ok", "due": "tomorrow"}, "Due date must look like YYYY-MM-DD."),
    ({"title": "ok", "due": "2026-02-30"}, "2026-02-30 is not a valid date."),
    ({"title": "ok", "labels": ["abc"]}, None),
])
def test_create_issue_validation(t, world, form, message):
    p, _, m = setup(world, "reporter")
    t.sign_in(m["user_id"], url_of(p, suffix="/issues/new"))
    before = copy.deepcopy(t.rt)
    r = t.post(url_of(p, suffix="/issues/new"), form)
    assert r.status == 400 and (message is None or r.error == message)
    assert t.rt == before


def test_create_issue_cross_project_checks(t, world):
    p, _, m = setup(world, "reporter")
    other = next(q for q in world.projects() if q["id"] != p["id"])
    closed = next((x for x in world.milestones(p["id"]) if x["state"] == "closed"), None)
    t.sign_in(m["user_id"], url_of(p, suffix="/issues/new"))
    r = t.post(url_of(p, suffix="/issues/new"), {"title": "x", "labels": [str(world.labels(other["id"])[0]["id"])]})
    assert r.error == f"Labels must belong to {p['path']}."
    r = t.post(url_of(p, suffix="/issues/new"), {"title": "x", "assignees": [str(outsider(world, p["id"]))]})
    assert r.error == f"Assignees must be members of {p['path']}."
    r = t.post(url_of(p, suffix="/issues/new"), {"title": "x", "milestone_id": str(world.milestones(other["id"])[0]["id"])})
    assert r.error == f"That milestone does not belong to {p['path']}."
    if closed:
        r = t.post(url_of(p, suffix="/issues/new"), {"title": "x", "milestone_id": str(closed["id"])})
        assert r.error == f"Milestone {closed['title']} is closed and takes no new issues."
    assert "issues" not in t.rt["entities"]


def test_guests_open_plain_issues_but_cannot_triage_them(t, world):
    for p in world.projects():
        g = member_of(world, p["id"], role="guest")
        if g:
            break
    t.sign_in(g["user_id"], url_of(p, suffix="/issues/new"))
    assert not t.has(f"new-label-{world.labels(p['id'])[0]['id']}")
    r = t.post(url_of(p, suffix="/issues/new"), {"title": "x", "labels": [str(world.labels(p["id"])[0]["id"])]})
    assert r.status == 403 and "Guests cannot" in r.error
    t.fill("issue-title", "Plain issue").click("issue-submit")
    assert t.success() == f"Issue #{p['issue_count'] + 1} was created."


# ============================================================================= close / reopen / blockers

def test_developer_closes_and_reopens_with_notes_and_notifications(t, world):
    p, i, m = setup(world, "developer", lambda i: i["state"] == "opened" and not any(
        b["state"] == "opened" for b in blockers(world, i["id"])) and i["assignees"])
    t.sign_in(m["user_id"], url_of(p, i)).click("close-issue")
    assert t.success() == f"Issue #{i['iid']} was closed." and t.text_of("issue-state") == "Closed"
    row = t.issue(i["id"])
    assert row["state"] == "closed" and row["closed_day"] == 0
    notes = [c for c in t.rt["entities"]["comments"].values() if c["system"]]
    assert [c["body"] for c in notes] == ["closed"]
    told = {n["user_id"] for n in t.rt["entities"]["notifications"].values() if n["kind"] == "closed"}
    assert told == ({i["author_id"], *i["assignees"]} | {c["author_id"] for c in world.comments(i["id"])
                                                         if not c["system"]}) - {m["user_id"]}
    t.click("reopen-issue")
    assert t.issue(i["id"])["state"] == "opened" and t.text_of("issue-state") == "Open"
    r = t.post(url_of(p, i, "/reopen"))
    assert r.status == 409 and r.error == f"Issue #{i['iid']} is already open."


def test_reporter_closes_only_own_issues(t, world):
    for p in world.projects():
        rep = member_of(world, p["id"], role="reporter")
        if not rep:
            continue
        theirs = issue_with(world, p["id"], lambda i, uid=rep["user_id"]: i["author_id"] == uid and i["state"] == "opened"
                            and not any(b["state"] == "opened" for b in blockers(world, i["id"])))
        others = issue_with(world, p["id"], lambda i, uid=rep["user_id"]: i["author_id"] != uid and i["state"] == "opened")
        if theirs and others:
            break
    else:
        pytest.fail("no reporter with an own open issue")
    t.sign_in(rep["user_id"], url_of(p, others))
    assert not t.has("close-issue")
    r = t.post(url_of(p, others, "/close"))
    assert r.status == 403 and "Developer role" in r.error and "issues" not in t.rt["entities"]
    t.goto(url_of(p, theirs)).click("close-issue")
    assert t.issue(theirs["id"])["state"] == "closed"


def test_open_blockers_prevent_closing(t, world):
    p, i, m = setup(world, "developer", lambda i: i["state"] == "opened" and any(
        b["state"] == "opened" for b in blockers(world, i["id"])))
    open_b = sorted(b["iid"] for b in blockers(world, i["id"]) if b["state"] == "opened")
    t.sign_in(m["user_id"], url_of(p, i)).click("close-issue")
    assert t.error() == "This issue is blocked by " + ", ".join(f"#{n} (open)" for n in open_b) + \
        ". Close the blocking issues first."
    assert "issues" not in t.rt["entities"]


def test_links_show_from_both_sides_and_can_be_removed(t, world):
    p, i, m = setup(world, "reporter", lambda i: not world.links(i["id"]) and i["state"] == "opened")
    other = issue_with(world, p["id"], lambda o: o["id"] != i["id"] and not world.links(o["id"])
                       and o["state"] == "opened")
    t.sign_in(m["user_id"], url_of(p, i)).select("link-kind", "is_blocked_by").fill("link-target", str(other["iid"]))
    t.click("link-submit")
    assert "Is blocked by" in t.html and f"#{other['iid']} {other['title']}" in t.html
    t.goto(url_of(p, other))
    assert "Blocks" in t.html
    # the blocked issue cannot close now (for a developer)
    dev = member_of(world, p["id"], min_role="developer")
    t.sign_in(dev["user_id"], url_of(p, i)).click("close-issue")
    assert t.error().startswith(f"This issue is blocked by #{other['iid']} (open)")
    link_id = int(next(iter(t.rt["entities"]["links"])))
    r = t.post(url_of(p, i, "/links/add"), {"kind": "relates_to", "target": str(other["iid"])})
    assert r.error == f"#{i['iid']} and #{other['iid']} are already linked."
    r = t.post(url_of(p, i, "/links/add"), {"kind": "relates_to", "target": str(i["iid"])})
    assert r.error == "An issue cannot be linked to itself."
    t.goto(url_of(p, i)).click(f"link-remove-{link_id}")
    assert t.rt["entities"]["links"][str(link_id)] is None and "No linked issues." in t.html
    t.click("close-issue")
    assert t.issue(i["id"])["state"] == "closed"


# ============================================================================= triage

def test_guests_cannot_label_or_assign(t, world):
    for p in world.projects():
        g = member_of(world, p["id"], role="guest")
        if g:
            break
    i = world.issue(world.issue_id_by_iid(p["id"], 1))
    t.sign_in(g["user_id"], url_of(p, i))
    assert not t.has("label-select") and not t.has("assign-user") and t.has("comment-body")
    lab = next(x for x in world.labels(p["id"]) if x["id"] not in i["labels"])
    for url, form in ((url_of(p, i, "/labels/add"), {"label_id": str(lab["id"])}),
                      (url_of(p, i, "/assign"), {"user_id": str(g["user_id"])}),
                      (url_of(p, i, "/due"), {"due": "2026-05-01"})):
        r = t.post(url, form)
        assert r.status == 403 and "Reporter role" in r.error
    assert "issues" not in t.rt["entities"]


def test_labels_add_and_remove_update_the_filtered_list(t, world):
    p, i, m = setup(world, "reporter", lambda i: i["state"] == "opened")
    lab = next(x for x in world.labels(p["id"]) if x["id"] not in i["labels"])
    t.sign_in(m["user_id"], url_of(p, i)).select("label-select", lab["name"]).click("label-submit")
    assert t.issue(i["id"])["labels"] == sorted(i["labels"] + [lab["id"]])
    assert f"added ~{lab['name']} label" in t.html
    t.goto(url_of(p, suffix=f"/issues?label={lab['name'].replace(' ', '+')}&sort=updated"))
    assert t.issue_iids(p["id"])[0] == i["iid"]
    t.goto(url_of(p, i)).click(f"label-remove-{lab['id']}")
    assert t.issue(i["id"])["labels"] == i["labels"]
    r = t.post(url_of(p, i, "/labels/remove"), {"label_id": str(lab["id"])})
    assert r.error == f"#{i['iid']} does not have that label."


def test_assign_only_members_and_notify(t, world):
    p, i, m = setup(world, "reporter", lambda i: len(i["assignees"]) < 3)
    who = member_of(world, p["id"], exclude=set(i["assignees"]) | {m["user_id"]})
    t.sign_in(m["user_id"], url_of(p, i)).select("assign-user", str(who["user_id"])).click("assign-submit")
    assert who["user_id"] in t.issue(i["id"])["assignees"]
    assert any(n["user_id"] == who["user_id"] and n["kind"] == "assigned"
               for n in t.rt["entities"]["notifications"].values())
    r = t.post(url_of(p, i, "/assign"), {"user_id": str(outsider(world, p["id"]))})
    assert r.error == f"Only members of {p['path']} can be assigned."
    t.goto(url_of(p, i)).click(f"unassign-{who['user_id']}")
    assert who["user_id"] not in t.issue(i["id"])["assignees"]


def test_milestone_progress_follows_closing(t, world):
    for p in world.projects():
        dev = member_of(world, p["id"], min_role="developer")
        ms = next((x for x in world.milestones(p["id"]) if x["state"] == "active"
                   and len(issues_of(world, p["id"], milestone=x["id"])) >= 2), None)
        if dev and ms:
            i = issue_with(world, p["id"], lambda i, mid=ms["id"]: i["milestone_id"] == mid and i["state"] == "opened"
                           and not any(b["state"] == "opened" for b in blockers(world, i["id"])))
            if i:
                break
    assert dev and ms and i
    total = len(issues_of(world, p["id"], milestone=ms["id"]))
    closed = len(issues_of(world, p["id"], milestone=ms["id"], state="closed"))
    t.sign_in(dev["user_id"], url_of(p, suffix=f"/milestones/{ms['id']}"))
    assert f"{100 * closed // total}% complete · {closed} of {total} issues closed" in t.text_of("milestone-progress")
    t.goto(url_of(p, i)).click("close-issue").goto(url_of(p, suffix=f"/milestones/{ms['id']}"))
    assert f"{100 * (closed + 1) // total}% complete · {closed + 1} of {total}" in t.text_of("milestone-progress")


def test_closed_milestone_takes_no_issues_and_only_maintainers_close_milestones(t, world):
    p, i, m = setup(world, "maintainer", lambda i: i["state"] == "opened")
    ms = next(x for x in world.milestones(p["id"]) if x["state"] == "active" and x["id"] != i["milestone_id"])
    dev = member_of(world, p["id"], max_role="developer")
    if dev:
        t.sign_in(dev["user_id"], url_of(p, suffix=f"/milestones/{ms['id']}"))
        assert not t.has("close-milestone")
        r = t.post(url_of(p, suffix=f"/milestones/{ms['id']}/close"))
        assert r.status == 403 and "milestones" not in t.rt["entities"]
    t.sign_in(m["user_id"], url_of(p, suffix=f"/milestones/{ms['id']}")).click("close-milestone")
    assert t.text_of("milestone-state") == "Closed"
    t.goto(url_of(p, i))
    r = t.post(url_of(p, i, "/milestone"), {"milestone_id": str(ms["id"])})
    assert r.error == f"Milestone {ms['title']} is closed and takes no new issues."
    t.goto(url_of(p, suffix=f"/milestones/{ms['id']}")).click("reopen-milestone")
    assert t.text_of("milestone-state") == "Active"
    t.goto(url_of(p, i)).select("milestone-select", ms["title"]).click("milestone-submit")
    assert t.issue(i["id"])["milestone_id"] == ms["id"]


def test_maintainer_creates_a_milestone_that_takes_issues(t, world):
    p, i, m = setup(world, "maintainer", lambda i: i["state"] == "opened")
    existing = world.milestones(p["id"])[0]["title"]
    t.sign_in(m["user_id"], url_of(p, suffix="/milestones"))
    r = t.post(url_of(p, suffix="/milestones/new"), {"title": existing.upper(), "due": "2026-06-01"})
    assert r.error == f"A milestone called “{existing.upper()}” already exists in {p['path']}."
    r = t.post(url_of(p, suffix="/milestones/new"), {"title": "Q9", "due": "2025-06-01"})
    assert r.error == "The due date must not be in the past."
    t.fill("ms-title", "Hardening week").fill("ms-due", "2026-03-15").click("ms-submit")
    assert t.text_of("milestone-title") == "Hardening week" and t.text_of("milestone-state") == "Active"
    assert "0% complete · 0 of 0 issues closed" in t.text_of("milestone-progress")
    t.goto(url_of(p, i)).select("milestone-select", "Hardening week").click("milestone-submit")
    t.goto(url_of(p, suffix="/issues?milestone=Hardening+week"))
    assert t.issue_iids(p["id"]) == [i["iid"]]
    dev = member_of(world, p["id"], max_role="developer")
    if dev:
        t.sign_in(dev["user_id"], url_of(p, suffix="/milestones"))
        assert not t.has("new-milestone-form")


def test_due_date_schedules_replaces_and_cancels_the_reminder(t, world):
    p, i, m = setup(world, "developer", lambda i: i["state"] == "opened" and i["assignees"] and not any(
        b["state"] == "opened" for b in blockers(world, i["id"])))
    t.sign_in(m["user_id"], url_of(p, i)).fill("due-input", "2026-01-20").click("due-submit")
    pending = t.rt["timers"]["pending"]
    assert [(x["key"], x["at"]) for x in pending] == [(f"due:{i['id']}", 19 * 86400 + 32400)]
    t.fill("due-input", "2026-01-25").click("due-submit")
    assert [x["at"] for x in t.rt["timers"]["pending"]] == [24 * 86400 + 32400]
    assert t.text_of("issue-due") == "Jan 25, 2026"
    t.click("close-issue")
    assert t.rt["timers"]["pending"] == []


def test_reminder_fires_for_the_assignees_when_the_clock_reaches_it(t, world):
    p, i, m = setup(world, "reporter", lambda i: i["state"] == "opened" and i["assignees"])
    t.sign_in(m["user_id"], url_of(p, i)).fill("due-input", "2026-01-02").click("due-submit")
    t.state["meta"]["clock"] = 1 * 86400 + 32400 - 5   # the next request reaches the due time
    t.goto(url_of(p, i))
    due = [n for n in t.rt["entities"]["notifications"].values() if n["kind"] == "due"]
    assert sorted(n["user_id"] for n in due) == sorted(i["assignees"]) and t.rt["timers"]["pending"] == []
    t.sign_in(i["assignees"][0], "/notifications")
    assert "Reminder: due today:" in t.html


def test_edit_title_by_author_only(t, world):
    for p in world.projects():
        g = member_of(world, p["id"], max_role="reporter")
        if not g:
            continue
        own = issue_with(world, p["id"], lambda i, uid=g["user_id"]: i["author_id"] == uid)
        other = issue_with(world, p["id"], lambda i, uid=g["user_id"]: i["author_id"] != uid)
        if own and other:
            break
    t.sign_in(g["user_id"], url_of(p, other, "/edit"))
    assert t.status == 403
    t.goto(url_of(p, own)).click("edit-issue").fill("edit-title", "A better title").click("edit-submit")
    assert t.issue(own["id"])["title"] == "A better title"
    assert f"changed title from “{own['title']}” to “A better title”" in t.html


# ============================================================================= comments and notifications

def test_comment_is_escaped_counted_and_notifies_participants(t, world):
    p, i, m = setup(world, "guest", lambda i: True)
    t.sign_in(m["user_id"], url_of(p, i)).fill("comment-body", "<script>alert(1)</script>").click("comment-submit")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in t.html and "<script>alert" not in t.html
    assert t.issue(i["id"])["comment_count"] == i["comment_count"] + 1
    people = ({i["author_id"], *i["assignees"]} | {c["author_id"] for c in world.comments(i["id"])
                                                   if not c["system"]}) - {m["user_id"]}
    told = sorted(n["user_id"] for n in t.rt["entities"]["notifications"].values())
    assert told == sorted(people)
    r = t.post(url_of(p, i, "/comment"), {"body": "   "})
    assert r.status == 400 and r.error == "Comment is required."


def test_outsiders_cannot_comment(t, world):
    p = world.projects()[0]
    i = world.issue(world.issue_id_by_iid(p["id"], 2))
    t.sign_in(outsider(world, p["id"]), url_of(p, i))
    r = t.post(url_of(p, i, "/comment"), {"body": "hi"})
    assert r.status == 403 and r.error == f"Only members of {p['path']} can comment."


def test_notifications_badge_mark_read_and_mark_all(t, world):
    uid = next(u for u in range(1, world.max_id("users")) if len(world.unread_notification_ids(u)) >= 3)
    unread = world.unread_notification_ids(uid)
    t.sign_in(uid, "/notifications")
    assert t.text_of("unread-count") == f"{len(unread)} unread"
    assert f"{len(unread)} unread" in t.html  # header badge
    first = next(b for b in t.bids() if b.startswith("mark-read-"))
    assert int(first[len("mark-read-"):]) in unread
    t.click(first)
    assert t.text_of("unread-count") == f"{len(unread) - 1} unread"
    t.click("mark-all-read")
    assert t.text_of("unread-count") == "0 unread" and not t.has("mark-all-read")
    r = t.post("/notifications/read-all")
    assert r.error == "You have no unread notifications."


# ============================================================================= members

def test_maintainer_adds_changes_and_removes_a_member(t, world):
    p = project_with(world, lambda p: member_of(world, p["id"], role="maintainer"))
    maint = member_of(world, p["id"], role="maintainer")
    new = outsider(world, p["id"])
    name = world.user(new)["username"]
    t.sign_in(maint["user_id"], url_of(p, suffix="/members"))
    t.fill("member-username", "@" + name.upper()).select("member-role", "reporter").click("member-submit")
    assert t.success() == f"@{name} was added to {p['path']} as reporter."
    assert t.text_of(f"member-role-{new}") == "Reporter"
    t.select(f"role-select-{new}", "developer").click(f"role-submit-{new}")
    assert t.text_of(f"member-role-{new}") == "Developer"
    # the new member can now act on the project
    t.sign_in(new, url_of(p, world.issue(world.issue_id_by_iid(p["id"], 1))))
    assert t.has("comment-body") and t.has("label-select")
    t.sign_in(maint["user_id"], url_of(p, suffix="/members")).click(f"remove-member-{new}")
    assert not t.has(f"member-{new}")
    r = t.post(url_of(p, suffix="/members/add"), {"username": "no.such.user", "role": "guest"})
    assert r.error == "There is no user called “no.such.user”."


def test_the_last_maintainer_can_be_neither_demoted_nor_removed(t, world):
    p = project_with(world, lambda p: sum(m["role"] == "maintainer" for m in world.members(p["id"])) == 1)
    maint = member_of(world, p["id"], role="maintainer")
    name = world.user(maint["user_id"])["username"]
    t.sign_in(maint["user_id"], url_of(p, suffix="/members"))
    r = t.post(url_of(p, suffix=f"/members/{maint['id']}/role"), {"role": "developer"})
    assert r.status == 409 and r.error == f"@{name} is the last maintainer of {p['path']} and cannot be demoted."
    r = t.post(url_of(p, suffix=f"/members/{maint['id']}/remove"))
    assert r.status == 409 and "cannot be removed" in r.error
    assert "members" not in t.rt["entities"]


def test_non_maintainers_cannot_manage_members(t, world):
    p = project_with(world, lambda p: member_of(world, p["id"], role="developer"))
    dev = member_of(world, p["id"], role="developer")
    t.sign_in(dev["user_id"], url_of(p, suffix="/members"))
    assert t.status == 200 and not t.has("add-member-form")
    r = t.post(url_of(p, suffix="/members/add"), {"username": world.user(outsider(world, p["id"]))["username"],
                                                  "role": "maintainer"})
    assert r.status == 403 and r.error == f"Only maintainers of {p['path']} can add members."


# ============================================================================= properties

ACTIONS = ["comment", "close", "reopen", "label", "assign", "due", "member_add", "milestone_close"]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(role=st.sampled_from([None, *ROLES]), action=st.sampled_from(ACTIONS), k=st.integers(0, 30))
def test_permissions_never_let_a_lower_role_act(env, role, action, k):
    """Whatever the role (None = outsider), an action succeeds only if the role allows it;
    a refused action changes nothing."""
    world = env.app.world
    t = Tracker(env)
    t.obs, t.info = env.reset(seed=0, options={"task": None})
    p = world.projects()[k % len(world.projects())]
    uid = outsider(world, p["id"]) if role is None else (member_of(world, p["id"], role=role) or {}).get("user_id")
    if uid is None:
        return
    i = issue_with(world, p["id"], lambda i: i["state"] == "opened" and i["author_id"] != uid and not any(
        b["state"] == "opened" for b in blockers(world, i["id"])))
    t.sign_in(uid, url_of(p, i))
    lab = next(x for x in world.labels(p["id"]) if x["id"] not in i["labels"])
    ms = world.milestones(p["id"])[-1]
    need, url, form = {
        "comment": ("guest", url_of(p, i, "/comment"), {"body": "hello"}),
        "close": ("developer", url_of(p, i, "/close"), {}),
        "reopen": ("developer", url_of(p, i, "/reopen"), {}),
        "label": ("reporter", url_of(p, i, "/labels/add"), {"label_id": str(lab["id"])}),
        "assign": ("reporter", url_of(p, i, "/assign"), {"user_id": str(uid)}),
        "due": ("reporter", url_of(p, i, "/due"), {"due": "2026-04-01"}),
        "member_add": ("maintainer", url_of(p, suffix="/members/add"),
                       {"username": world.user(outsider(world, p["id"]))["username"], "role": "guest"}),
        "milestone_close": ("maintainer", url_of(p, suffix=f"/milestones/{ms['id']}/close"), {}),
    }[action]
    if action in ("member_add",):
        t.goto(url_of(p, suffix="/members"))
    elif action == "milestone_close":
        t.goto(url_of(p, suffix=f"/milestones/{ms['id']}"))
    before = copy.deepcopy(t.rt)
    r = t.post(url, form)
    allowed = role is not None and RANK[role] >= RANK[need]
    if not allowed:
        assert r.status in (403, 409), (role, action, r.error)   # 409: the page itself is forbidden
        assert t.rt == before
    elif r.status == 303:
        assert t.rt != before
    else:  # allowed but refused for a state reason (already open, closed milestone, ...)
        assert r.status in (400, 409) and t.rt == before


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(st.tuples(st.booleans(), st.integers(0, 13)), min_size=1, max_size=12))
def test_label_sequences_match_a_set_model_and_the_filtered_counts(env, ops):
    world = env.app.world
    t = Tracker(env)
    t.obs, t.info = env.reset(seed=0, options={"task": None})
    p, i, m = setup(world, "reporter", lambda i: True)
    labs = world.labels(p["id"])
    model = set(i["labels"])
    t.sign_in(m["user_id"], url_of(p, i))
    for add, k in ops:
        lab = labs[k % len(labs)]
        r = t.post(url_of(p, i, "/labels/add" if add else "/labels/remove"), {"label_id": str(lab["id"])})
        ok = (lab["id"] not in model) if add else (lab["id"] in model)
        assert (r.status == 303) == ok
        if ok:
            (model.add if add else model.discard)(lab["id"])
    assert t.issue(i["id"])["labels"] == sorted(model)
    for lab in labs[:4]:
        want = len(issues_of(world, p["id"], labels=[lab["id"]])) - (lab["id"] in i["labels"]) + (lab["id"] in model)
        res = env.app.callables["issue_list"]
        from simweb.core.functions import Ctx, using
        with using(Ctx(world=world, state=t.state, app=env.app)):
            got = res(p["id"], "all", [lab["name"]])["total"]
        assert got == want


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(closes=st.lists(st.integers(0, 40), min_size=1, max_size=6), sort=st.sampled_from(
    ["created", "oldest", "updated", "due", "weight", "comments"]))
def test_runtime_changes_merge_into_lists_in_sort_order(env, closes, sort):
    """After closing some issues, the open list equals a model computed over the merged rows."""
    world = env.app.world
    t = Tracker(env)
    t.obs, t.info = env.reset(seed=0, options={"task": None})
    p = world.projects()[4]
    dev = member_of(world, p["id"], min_role="developer")
    t.sign_in(dev["user_id"])
    rows = issues_of(world, p["id"], state="opened")
    for k in closes:
        i = rows[k % len(rows)]
        t.goto(url_of(p, i))
        t.post(url_of(p, i, "/close"))
    current = [t.issue(r["id"]) for r in issues_of(world, p["id"])]
    want = [r["iid"] for r in sorted((r for r in current if r["state"] == "opened"), key=sort_key(sort))[:20]]
    t.goto(url_of(p, suffix=f"/issues?sort={sort}"))
    assert t.issue_iids(p["id"]) == want
    n_open = sum(r["state"] == "opened" for r in current)
    assert t.text_of("state-opened") == f"Open {n_open}"


# ============================================================================= tasks

def test_every_template_samples_on_seeds_0_to_50(env):
    for tid, tpl in env.app.tasks.items():
        seen = set()
        for seed in range(51):
            inst = tpl.instantiate(env.app, seed)
            assert inst.goal and inst.fact_groups and inst.difficulty in ("easy", "medium", "hard")
            seen.add(repr(sorted(inst.params.items())))
        assert len(seen) >= 20, tid


@pytest.mark.parametrize("seed", [3, 7, 11])
def test_oracles_succeed_on_more_seeds(env, seed):
    for tid in env.app.tasks:
        env.reset(seed=seed, options={"task": tid})
        info: dict = {}
        for a in env.oracle_plan(final=False):
            obs, _, term, trunc, info = env.step(a)
            assert obs["last_action_error"] == "", (tid, a, obs["last_action_error"])
            if term or trunc:
                break
        assert info["verdict"]["success"] and info["verdict"]["clean"], (tid, seed, info["verdict"]["checks"])


def _run(env, tid, seed, actions):
    env.reset(seed=seed, options={"task": tid})
    info: dict = {}
    for a in actions:
        _, _, _, _, info = env.step(a)
    return info["verdict"]


def test_closing_an_extra_issue_is_collateral_damage(env):
    tid = "issues/close_issue"
    env.reset(seed=4, options={"task": tid})
    p = env.task.params
    proj = env.app.world.project(p["project_id"])
    world = env.app.world
    other = issue_with(world, p["project_id"], lambda i: i["state"] == "opened" and i["iid"] != p["iid"] and not any(
        b["state"] == "opened" for b in blockers(world, i["id"])))
    extra = [f"goto('/projects/{proj['path']}/issues/{other['iid']}')", "click('close-issue')"]
    v = _run(env, tid, 4, extra + env.oracle_plan(final=False))   # the oracle's last step ends the episode
    assert v["success"] and not v["clean"]
    damage = {c["name"]: c["detail"] for c in v["checks"] if c["name"].startswith("collateral:")}
    assert damage[f"collateral: runtime.entities.issues.{other['id']}.state"] == "'opened' -> 'closed'"


def test_removing_an_unnamed_label_is_collateral_damage(env):
    tid = "issues/add_label"
    for seed in range(20):
        env.reset(seed=seed, options={"task": tid})
        if env.task.params["before"]:
            break
    p = env.task.params
    plan = env.oracle_plan(final=False)
    for a in plan[:-2] + [f"click('label-remove-{p['before'][0]}')"] + plan[-2:]:
        _, _, _, _, info = env.step(a)
    v = info["verdict"]
    assert not v["success"]   # the labels are not the old ones plus the new one
    assert v["progress"] < 1.0


def test_infeasible_tasks_fail_when_the_agent_acts_anyway(env):
    tid = "issues/add_to_milestone"
    seed = next(s for s in range(40) if not env.app.tasks[tid].instantiate(env.app, s).params["feasible"])
    env.reset(seed=seed, options={"task": tid})
    p = env.task.params
    proj = env.app.world.project(p["project_id"])
    env.step(f"goto('/projects/{proj['path']}/issues/{p['iid']}')")
    _, _, _, _, info = env.step("send_msg_to_user('Done, it is in the milestone.')")
    assert not info["verdict"]["success"]


def test_a_comment_on_another_issue_is_collateral_damage(env):
    """Comments are a side effect the comment task may write, but only on its issue:
    the same comment posted on a second issue makes the run unclean."""
    env.reset(seed=4, options={"task": "issues/comment"})
    p = env.task.params
    for a in env.oracle_plan(final=False):
        _, _, _, _, info = env.step(a)
    assert info["verdict"]["success"] and info["verdict"]["clean"]
    world = env.app.world
    other = next(i for i in (world.issue(k) for k in range(1, 200))
                 if i and i["project_id"] == p["project_id"] and i["iid"] != p["iid"])
    proj = world.project(p["project_id"])
    # the episode ended with the success: post on the other issue first, then solve
    stray = [f"goto('/projects/{proj['path']}/issues/{other['iid']}')", "fill('comment-body', 'Also here.')",
             "click('comment-submit')"]
    env.reset(seed=4, options={"task": "issues/comment"})
    for a in stray + env.oracle_plan(final=False):
        _, _, _, _, info = env.step(a)
    assert info["verdict"]["success"] and not info["verdict"]["clean"]
    damage = [c["name"] for c in info["verdict"]["checks"] if c["name"].startswith("collateral:")]
    assert any(n.startswith("collateral: runtime.entities.comments.") for n in damage), damage
    # the other issue's modification day is claimed only on the task's own issue
    assert f"collateral: runtime.entities.issues.{other['id']}.updated_day" in damage, damage


# ============================================================================= multi-step templates

def _iurl(proj, iid):
    return f"/projects/{proj['path']}/issues/{iid}"


def _plan_until(env, tid, seed, stop):
    """The oracle plan of an instance up to (not including) the first action containing ``stop``."""
    env.reset(seed=seed, options={"task": tid})
    plan = env.oracle_plan(final=False)
    return plan[:next(k for k, a in enumerate(plan) if stop in a)]


def test_most_commented_open_rejects_the_runner_up_and_a_list_of_numbers(env):
    tid = "issues/most_commented_open"
    env.reset(seed=5, options={"task": tid})
    p = env.task.params
    world = env.app.world
    rows = issues_of(world, p["project_id"], state="opened", labels=[p["label_id"]],
                     milestone=next(m["id"] for m in world.milestones(p["project_id"]) if m["title"] == p["milestone"]))
    ranked = sorted(rows, key=sort_key("comments"))
    assert ranked[0]["iid"] == p["iid"] and ranked[0]["comment_count"] > ranked[1]["comment_count"]
    plan = env.oracle_plan(final=False)[:-1]
    v = _run(env, tid, 5, plan + [f"send_msg_to_user('#{ranked[1]['iid']}')"])
    assert not v["success"] and v["progress"] == 0.0 and v["clean"]
    v = _run(env, tid, 5, plan + [f"send_msg_to_user('#{ranked[0]['iid']} or #{ranked[1]['iid']}')"])
    assert not v["success"]
    v = _run(env, tid, 5, plan + [f"send_msg_to_user('It is #{p['iid']}.')"])
    assert v["success"] and v["clean"]


def test_unblock_and_close_gives_partial_credit_and_refuses_the_wrong_order(env):
    tid = "issues/unblock_and_close"
    env.reset(seed=3, options={"task": tid})
    p = env.task.params
    proj = env.app.world.project(p["project_id"])
    # closing the blocked issue first is refused by the site: nothing changes
    v = _run(env, tid, 3, [f"goto('{_iurl(proj, p['iid'])}')", "click('close-issue')"])
    assert env.state["runtime"]["entities"].get("issues", {}).get(str(p["issue_id"])) is None
    assert v["progress"] == 0.0 and not v["success"]
    # closing only the blockers is partial progress: blockers done, the issue and the comment not
    acts = []
    for n in p["blocker_iids"]:
        acts += [f"goto('{_iurl(proj, n)}')", "click('close-issue')"]
    v = _run(env, tid, 3, acts)
    k = len(p["blocker_iids"])
    assert not v["success"] and v["clean"] and v["progress"] == round(k / (k + 2), 6)
    # closing an unrelated issue on the way is collateral damage
    world = env.app.world
    other = issue_with(world, p["project_id"], lambda i: i["state"] == "opened" and i["id"] != p["issue_id"]
                       and i["id"] not in p["blocker_ids"] and not any(b["state"] == "opened"
                                                                        for b in blockers(world, i["id"])))
    v = _run(env, tid, 3, [f"goto('{_iurl(proj, other['iid'])}')", "click('close-issue')"] + env.oracle_plan(final=False))
    assert v["success"] and not v["clean"]


def test_triage_my_issues_counts_each_issue_and_flags_an_unassigned_one(env):
    tid = "issues/triage_my_issues"
    env.reset(seed=2, options={"task": tid})
    p = env.task.params
    # only the first issue triaged: half of the checks for two issues, a third for three
    acts = _plan_until(env, tid, 2, f"click('issue-{p['project_id']}-{p['iids'][1]}')")
    v = _run(env, tid, 2, acts)
    assert not v["success"] and v["clean"] and v["progress"] == round(2 / (2 * len(p["iids"])), 6)
    # milestone set everywhere but no comment: partial
    v = _run(env, tid, 2, [a for a in env.oracle_plan(final=False) if "comment-" not in a])
    assert not v["success"] and v["progress"] == 0.5
    # the same triage on an issue not assigned to me is collateral damage
    world = env.app.world
    proj = world.project(p["project_id"])
    other = issue_with(world, p["project_id"], lambda i: i["state"] == "opened" and p["user_id"] not in i["assignees"]
                       and i["milestone_id"] != p["milestone_id"])
    extra = [f"goto('{_iurl(proj, other['iid'])}')", f"select_option('milestone-select', {p['milestone']!r})",
             "click('milestone-submit')"]
    v = _run(env, tid, 2, extra + env.oracle_plan(final=False))
    assert v["success"] and not v["clean"]
    damage = {c["name"] for c in v["checks"] if c["name"].startswith("collateral:")}
    assert f"collateral: runtime.entities.issues.{other['id']}.milestone_id" in damage


def test_wrap_up_milestone_needs_the_right_roles_the_moves_and_the_close(env):
    tid = "issues/wrap_up_milestone"
    env.reset(seed=1, options={"task": tid})
    p = env.task.params
    plan = env.oracle_plan(final=False)
    # roles swapped: both users are members, but neither role is right, and a membership
    # the task did not ask for is collateral damage
    r0, r1 = (r.capitalize() for r in p["roles"])
    swapped = [a.replace(f"'{r0}')", "'@A@')").replace(f"'{r1}')", f"'{r0}')").replace("'@A@')", f"'{r1}')")
               if a.startswith("select_option('member-role'") else a for a in plan]
    v = _run(env, tid, 1, swapped)
    assert not v["success"] and not v["clean"]
    failed = {c["name"] for c in v["checks"] if not c["passed"] and not c["name"].startswith("collateral:")}
    assert failed == {f"@{p['usernames'][0]} is {p['roles'][0]}", f"@{p['usernames'][1]} is {p['roles'][1]}"}
    assert sum(c["name"].startswith("collateral: runtime.entities.members.") for c in v["checks"]) == 2
    # closing the milestone without moving its open issues: the moves are missing
    start = len(plan) - 1 - plan[::-1].index("click('project-milestones')")
    v = _run(env, tid, 1, [f"click('my-project-{p['project_id']}')"] + plan[start:])
    n = len(p["iids"])
    assert not v["success"] and v["clean"] and v["progress"] == round(3 / (3 + n), 6)
    # a closed milestone takes no issues back: moving one into it is refused
    proj = env.app.world.project(p["project_id"])
    env.step(f"goto('{_iurl(proj, p['iids'][0])}')")
    ms = env.app.submit(env.state, f"/projects/{proj['path']}/issues/{p['iids'][0]}/milestone",
                        {"milestone_id": str(p["milestone_id"])})
    assert ms.error == f"Milestone {p['milestone']} is closed and takes no new issues."


def test_closing_and_reopening_the_commented_issue_is_collateral_damage(env):
    """The comment task judges the new comment, not the issue's state: closing and reopening
    the issue on the way leaves the state as it was, but its 'closed'/'reopened' notes and
    the participants' notifications are damage (a close task judges the state: its own
    close notes are bookkeeping there)."""
    for seed in range(40):
        env.reset(seed=seed, options={"task": "issues/comment"})
        plan = env.oracle_plan(final=False)
        for a in plan[:-2]:
            obs, *_ = env.step(a)
        if "close-issue" in obs["axtree"]:
            break
    else:
        pytest.fail("no comment task on an open issue the user may close")
    for a in ["click('close-issue')", "click('reopen-issue')", *plan[-2:]]:
        _, reward, _, _, info = env.step(a)
    v = info["verdict"]
    assert v["success"] and not v["clean"] and reward == 0
    damage = [c["detail"] for c in v["checks"] if c["name"].startswith("collateral:")]
    assert any("'body': 'closed'" in d for d in damage) and any("'body': 'reopened'" in d for d in damage)
    assert all("'system': True" in d or "'kind': 'closed'" in d or "'kind': 'reopened'" in d for d in damage)
    assert _run(env, "issues/comment", seed, plan)["clean"]
    env.reset(seed=0, options={"task": "issues/close_issue"})
    assert _run(env, "issues/close_issue", 0, env.oracle_plan(final=False))["clean"]   # its close notes echo its state


def test_closing_again_the_reopened_issue_leaves_damage(env):
    """A reopen task judges the state: closing the reopened issue and reopening it again
    ends where the task asks, but the extra close's note and notifications echo no close
    that stands."""
    env.reset(seed=0, options={"task": "issues/reopen_issue"})
    plan = env.oracle_plan(final=False)
    v = _run(env, "issues/reopen_issue", 0, plan)
    assert v["success"] and v["clean"]
    env.reset(seed=0, options={"task": "issues/reopen_issue"})
    env.episode.end_on_success = False
    for a in [*plan, "click('close-issue')", "click('reopen-issue')"]:
        _, reward, _, _, info = env.step(a)
    env.episode.end_on_success = True
    v = info["verdict"]
    assert v["success"] and not v["clean"]
    damage = [c["detail"] for c in v["checks"] if c["name"].startswith("collateral:")]
    assert any("'body': 'closed'" in d for d in damage) and not any("'body': 'reopened'" in d for d in damage)
