"""Simtracker's pure functions: what the spec's expressions and the templates may call.

Every function takes the evaluation context first (world + state) and declares what it
reads. World rows are merged with the runtime overlay (inserted, updated and deleted
entities), so every page shows the tracker as it is now.
"""
from __future__ import annotations

import re
from datetime import date as _date
from functools import lru_cache
from typing import Any

from simweb.core.functions import Ctx, FunctionTable, merged_rows, new_rows, overlay, paged
from simweb.core.functions import to_int as _int
from simweb.core.kits.auth import add_auth_functions
from simweb.core.worlddb import date_to_day, day_to_date

from .world import ROLES, SORTS, sort_key, text_matches, tokens

FUNCTIONS = FunctionTable()
fn = FUNCTIONS.function

ISSUES = ("world.issues", "runtime.entities.issues.*")
MEMBERS = ("world.members", "runtime.entities.members.*")
MILESTONES = ("world.milestones", "runtime.entities.milestones.*")
COMMENTS = ("world.comments", "runtime.entities.comments.*")
LINKS = ("world.links", "runtime.entities.links.*")
NOTIFS = ("world.notifications", "runtime.entities.notifications.*", "browser.user")
USERS = ("world.users", "runtime.entities.users.*")
PER_PAGE = 20


# ----------------------------------------------------------------------------- entities

@FUNCTIONS.entity("users")
def _load_user(world: Any, uid: int) -> dict | None:
    return world.user(uid)


@FUNCTIONS.entity("issues")
def _load_issue(world: Any, iid: int) -> dict | None:
    return world.issue(iid)


@FUNCTIONS.entity("members")
def _load_member(world: Any, mid: int) -> dict | None:
    return world.member(mid)


@FUNCTIONS.entity("milestones")
def _load_milestone(world: Any, mid: int) -> dict | None:
    return world.milestone(mid)


@FUNCTIONS.entity("comments")
def _load_comment(world: Any, cid: int) -> dict | None:
    return world.comment(cid)


@FUNCTIONS.entity("links")
def _load_link(world: Any, lid: int) -> dict | None:
    return world.link(lid)


@FUNCTIONS.entity("notifications")
def _load_notification(world: Any, nid: int) -> dict | None:
    return world.notification(nid)


_entity = FUNCTIONS.row


# ----------------------------------------------------------------------------- users and sessions

@fn(reads=USERS)
def user_by_id(ctx: Ctx, uid: Any) -> dict | None:
    """A user by id, or None."""
    return _entity(ctx, "users", uid) if _int(uid) is not None else None


current_user, find_login = add_auth_functions(FUNCTIONS)   # the auth kit's (simweb/kits/auth.py)


@fn(reads=USERS)
def user_by_username(ctx: Ctx, username: str | None) -> dict | None:
    """A user by exact username (case-insensitive, a leading @ ignored), or None."""
    name = str(username or "").strip().lstrip("@").lower()
    if not name:
        return None
    hit = ctx.world.user_by_login(name)
    return hit if hit is not None and hit["username"] == name else None


# ----------------------------------------------------------------------------- projects and members

@fn(reads=("world.projects",))
def project_at(ctx: Ctx, namespace: str, name: str) -> dict | None:
    """The project at ``namespace/name``, or None."""
    return ctx.world.project_by_path(f"{namespace}/{name}")


@fn(reads=("world.projects",))
def project_by_id(ctx: Ctx, pid: Any) -> dict | None:
    return ctx.world.project(pid) if _int(pid) is not None else None


@fn(reads=("world.projects",))
def all_projects(ctx: Ctx, q: str = "", page: int = 1, per_page: int = PER_PAGE) -> dict:
    """Projects whose path contains ``q``, by path, one page."""
    key = str(q or "").strip().lower()
    rows = [p for p in ctx.world.projects() if key in p["path"] or key in p["description"].lower()]
    rows.sort(key=lambda p: (p["path"], p["id"]))
    return paged(rows, page, per_page)




def _membership(ctx: Ctx, pid: int, uid: int) -> dict | None:
    w = ctx.world.membership(pid, uid)
    if w is not None:
        return _entity(ctx, "members", w["id"])
    for row in new_rows(ctx.world, ctx.state, "members"):
        if row["project_id"] == pid and row["user_id"] == uid:
            return row
    return None


@fn(reads=MEMBERS + ("browser.user",))
def membership(ctx: Ctx, project_id: Any, user_id: Any = None) -> dict | None:
    """The membership row of a user (default: the signed-in one) in a project, or None."""
    pid = _int(project_id)
    uid = _int(user_id if user_id is not None else ctx.user)
    if pid is None or uid is None:
        return None
    return _membership(ctx, pid, uid)


@fn(reads=MEMBERS + ("browser.user",))
def member_role(ctx: Ctx, project_id: Any, user_id: Any = None) -> str | None:
    """The role of a user (default: the signed-in one) in a project, or None for non-members."""
    m = membership(ctx, project_id, user_id)
    return None if m is None else m["role"]


@fn(reads=MEMBERS + USERS)
def members_of(ctx: Ctx, project_id: Any) -> list[dict]:
    """A project's members as they are now, highest role first, then by name; each row
    carries its ``user``."""
    pid = _int(project_id)
    if pid is None:
        return []
    rows = merged_rows(ctx.world, ctx.state, "members", ctx.world.members(pid),
                       include=lambda r: r["project_id"] == pid)
    out = []
    for r in rows:
        u = _entity(ctx, "users", r["user_id"])
        if u is not None:
            out.append(dict(r, user=u))
    out.sort(key=lambda r: (-ROLES.index(r["role"]), r["user"]["full_name"], r["id"]))
    return out


@fn(reads=MEMBERS)
def maintainer_count(ctx: Ctx, project_id: Any) -> int:
    return sum(1 for m in members_of(ctx, project_id) if m["role"] == "maintainer")


@fn(reads=MEMBERS + USERS)
def assignable(ctx: Ctx, project_id: Any) -> list[dict]:
    """Members an issue may be assigned to (every member), by name."""
    return sorted(members_of(ctx, project_id), key=lambda m: (m["user"]["username"], m["id"]))


@fn(reads=MEMBERS + ("world.projects", "browser.user"))
def my_projects(ctx: Ctx) -> list[dict]:
    """The signed-in user's projects with their role, by path."""
    if ctx.user is None:
        return []
    uid = int(ctx.user)
    rows = merged_rows(ctx.world, ctx.state, "members", ctx.world.memberships_of(uid),
                       include=lambda r: r["user_id"] == uid)
    out = []
    for m in rows:
        if m["user_id"] != uid:
            continue
        p = ctx.world.project(m["project_id"])
        if p is not None:
            out.append(dict(p, role=m["role"]))
    out.sort(key=lambda p: (p["path"], p["id"]))
    return out


@fn()
def role_list(ctx: Ctx) -> list[str]:
    return list(ROLES)


# ----------------------------------------------------------------------------- labels and milestones

@fn(reads=("world.labels",))
def labels_of(ctx: Ctx, project_id: Any) -> list[dict]:
    """A project's labels by name."""
    pid = _int(project_id)
    return [] if pid is None else ctx.world.labels(pid)


@fn(reads=("world.labels",))
def label(ctx: Ctx, lid: Any) -> dict | None:
    return ctx.world.label(lid) if _int(lid) is not None else None


@fn(reads=("world.labels",))
def label_named(ctx: Ctx, project_id: Any, name: str | None) -> dict | None:
    """A project's label by name (case-insensitive), or None."""
    key = str(name or "").strip().lower()
    return next((x for x in labels_of(ctx, project_id) if x["name"].lower() == key), None)


@fn(reads=("world.labels",))
def labels_by_ids(ctx: Ctx, ids: Any) -> list[dict]:
    """Labels by id, sorted by name."""
    out = [ctx.world.label(i) for i in (ids or []) if _int(i) is not None]
    return sorted((x for x in out if x is not None), key=lambda x: (x["name"], x["id"]))


@fn(reads=MILESTONES)
def milestone(ctx: Ctx, mid: Any) -> dict | None:
    """A milestone as it is now, or None."""
    return _entity(ctx, "milestones", mid) if _int(mid) is not None else None


@fn(reads=MILESTONES)
def milestones_of(ctx: Ctx, project_id: Any, state: str = "all") -> list[dict]:
    """A project's milestones as they are now (active first, then by due day)."""
    pid = _int(project_id)
    if pid is None:
        return []
    rows = merged_rows(ctx.world, ctx.state, "milestones", ctx.world.milestones(pid),
                       include=lambda r: r["project_id"] == pid)
    rows = [m for m in rows if state == "all" or m["state"] == state]
    return sorted(rows, key=lambda m: (m["state"] != "active", m["due_day"], m["id"]))


@fn(reads=MILESTONES)
def milestone_titled(ctx: Ctx, project_id: Any, title: str | None) -> dict | None:
    key = str(title or "").strip().lower()
    return next((m for m in milestones_of(ctx, project_id) if m["title"].lower() == key), None)


@fn(reads=ISSUES + MILESTONES)
def milestone_progress(ctx: Ctx, mid: Any) -> dict:
    """``{total, closed, opened, percent}`` of a milestone's issues (percent rounded down)."""
    m = milestone(ctx, mid)
    if m is None:
        return {"total": 0, "closed": 0, "opened": 0, "percent": 0}
    opened = _count(ctx, {"project_id": m["project_id"], "milestone": m["id"], "state": "opened"})
    closed = _count(ctx, {"project_id": m["project_id"], "milestone": m["id"], "state": "closed"})
    total = opened + closed
    return {"total": total, "closed": closed, "opened": opened, "percent": (100 * closed // total) if total else 0}


# ----------------------------------------------------------------------------- issues

def _filters(project_id: int | None = None, state: str | None = None, labels: list[int] | None = None,
             assignee: int | None = None, author: int | None = None, milestone: int | None = None,
             terms: list[str] | None = None) -> dict:
    return {"project_id": project_id, "state": state, "labels": labels or [], "assignee": assignee,
            "author": author, "milestone": milestone, "terms": terms or []}


def _matches(row: dict, f: dict) -> bool:
    if f.get("project_id") is not None and row["project_id"] != f["project_id"]:
        return False
    if f.get("state") in ("opened", "closed") and row["state"] != f["state"]:
        return False
    if any(lab not in row["labels"] for lab in f.get("labels") or []):
        return False
    if f.get("assignee") is not None and f["assignee"] not in row["assignees"]:
        return False
    if f.get("author") is not None and row["author_id"] != f["author"]:
        return False
    if f.get("milestone") is not None and row["milestone_id"] != f["milestone"]:
        return False
    return text_matches(row, f.get("terms") or [])


def _overlay_issues(ctx: Ctx) -> tuple[list[int], list[dict]]:
    """(ids of world issues the runtime changed or deleted, current runtime rows)."""
    top = ctx.world.max_id("issues")
    rows = overlay(ctx.state, "issues")
    touched = sorted(int(k) for k in rows if int(k) <= top)
    live = [r for _, r in sorted(rows.items(), key=lambda kv: int(kv[0])) if r is not None]
    return touched, live


def _count(ctx: Ctx, f: dict) -> int:
    f = _filters(**f) if "terms" not in f else f
    touched, live = _overlay_issues(ctx)
    return ctx.world.issue_count(exclude=touched, **f) + sum(1 for r in live if _matches(r, f))


def _query(ctx: Ctx, f: dict, sort: str, page: int, per_page: int) -> dict:
    """One page of issues matching ``f`` (world and runtime merged), plus state counts."""
    touched, live = _overlay_issues(ctx)
    counts = {}
    for s in ("opened", "closed"):
        fs = dict(f, state=s)
        counts[s] = ctx.world.issue_count(exclude=touched, **fs) + sum(1 for r in live if _matches(r, fs))
    counts["all"] = counts["opened"] + counts["closed"]
    total = counts[f["state"]] if f["state"] in ("opened", "closed") else counts["all"]
    pages = max(1, -(-total // per_page))
    page = min(max(1, page), pages)
    offset = (page - 1) * per_page
    mine = [r for r in live if _matches(r, f)]
    ids = ctx.world.issue_ids(sort=sort, limit=offset + per_page, exclude=touched, **f)
    if mine:
        rows = ctx.world.issues(ids) + mine
        rows.sort(key=sort_key(sort))
        items = rows[offset: offset + per_page]
    else:
        items = ctx.world.issues(ids[offset: offset + per_page])
    return {"total": total, "counts": counts, "page": page, "pages": pages, "items": items}


@fn(reads=ISSUES + ("world.labels", "world.users", "world.milestones"))
def issue_list(ctx: Ctx, project_id: Any, state: str = "opened", label_names: Any = None, assignee: Any = None,
               author: Any = None, milestone_title: Any = None, q: str = "", sort: str = "created",
               page: Any = 1) -> dict:
    """A project's issue list page: filters by state, labels (all named ones), assignee and
    author (usernames), milestone (title) and text; sorted; with per-state counts."""
    pid = _int(project_id)
    labs: list[int] = []
    unknown = False
    for name in label_names or []:
        if not str(name).strip():
            continue
        x = label_named(ctx, pid, name)
        if x is None:
            unknown = True
        else:
            labs.append(x["id"])
    people: dict[str, int | None] = {}
    for key, val in (("assignee", assignee), ("author", author)):
        people[key] = None
        if val:
            u = user_by_username(ctx, val)
            if u is None:
                unknown = True
            else:
                people[key] = u["id"]
    ms = None
    if milestone_title:
        m = milestone_titled(ctx, pid, milestone_title)
        if m is None:
            unknown = True
        else:
            ms = m["id"]
    if unknown:  # a filter value that does not exist matches nothing
        return {"total": 0, "counts": {"opened": 0, "closed": 0, "all": 0}, "page": 1, "pages": 1, "items": []}
    f = _filters(pid, state, labs, people["assignee"], people["author"], ms, tokens(q))
    number = _ISSUE_NUMBER.fullmatch(str(q or ""))
    if number:
        return _by_number(ctx, f, int(number.group(1)))
    return _query(ctx, f, sort if sort in SORTS else "created", _int(page) or 1, PER_PAGE)


#: A search for "#12" finds issue #12 of the project (as GitLab's issue search does).
_ISSUE_NUMBER = re.compile(r"\s*#(\d{1,9})\s*")


def _by_number(ctx: Ctx, f: dict, iid: int) -> dict:
    """The list page of a search by issue number: that issue, if it passes the other filters."""
    row = issue_at(ctx, f["project_id"], iid)
    f = dict(f, terms=[])
    counts = {s: int(row is not None and _matches(row, dict(f, state=s))) for s in ("opened", "closed")}
    counts["all"] = counts["opened"] + counts["closed"]
    hit = row is not None and _matches(row, f)
    return {"total": int(hit), "counts": counts, "page": 1, "pages": 1, "items": [row] if hit else []}


@fn(reads=ISSUES + ("browser.user",))
def assigned_to_me(ctx: Ctx, state: str = "opened", sort: str = "created", page: Any = 1, per_page: int = PER_PAGE
                   ) -> dict:
    """Issues assigned to the signed-in user in every project."""
    if ctx.user is None:
        return {"total": 0, "counts": {"opened": 0, "closed": 0, "all": 0}, "page": 1, "pages": 1, "items": []}
    f = _filters(None, state, None, int(ctx.user))
    return _query(ctx, f, sort if sort in SORTS else "created", _int(page) or 1, per_page)


@fn(reads=ISSUES)
def issue(ctx: Ctx, issue_id: Any) -> dict | None:
    """An issue by global id as it is now, or None."""
    return _entity(ctx, "issues", issue_id) if _int(issue_id) is not None else None


@fn(reads=ISSUES)
def issue_at(ctx: Ctx, project_id: Any, iid: Any) -> dict | None:
    """The issue ``#iid`` of a project as it is now, or None."""
    pid, n = _int(project_id), _int(iid)
    if pid is None or n is None:
        return None
    wid = ctx.world.issue_id_by_iid(pid, n)
    if wid is not None:
        return _entity(ctx, "issues", wid)
    for row in new_rows(ctx.world, ctx.state, "issues"):
        if row["project_id"] == pid and row["iid"] == n:
            return row
    return None


@fn(reads=ISSUES + ("world.projects",))
def next_iid(ctx: Ctx, project_id: Any) -> int:
    """The iid a new issue of the project gets."""
    pid = _int(project_id)
    p = ctx.world.project(pid)
    top = p["issue_count"] if p else 0
    for row in new_rows(ctx.world, ctx.state, "issues"):
        if row["project_id"] == pid:
            top = max(top, row["iid"])
    return top + 1


@fn(reads=ISSUES + ("world.labels",))
def open_count_with_label(ctx: Ctx, label_id: Any) -> int:
    x = label(ctx, label_id)
    if x is None:
        return 0
    return _count(ctx, {"project_id": x["project_id"], "state": "opened", "labels": [x["id"]]})


@fn(reads=COMMENTS + USERS)
def comments_of(ctx: Ctx, issue_id: Any) -> list[dict]:
    """An issue's notes (comments and system notes) in order, each with its ``author``."""
    i = _int(issue_id)
    if i is None:
        return []
    rows = merged_rows(ctx.world, ctx.state, "comments", ctx.world.comments(i) if i <= ctx.world.max_id("issues")
                       else [], include=lambda r: r["issue_id"] == i)
    rows.sort(key=lambda r: (r["day"], r["id"]))
    return [dict(r, author=_entity(ctx, "users", r["author_id"])) for r in rows]


@fn(reads=LINKS + ISSUES + ("world.projects",))
def links_of(ctx: Ctx, issue_id: Any) -> list[dict]:
    """An issue's links as seen from it: ``{id, kind, relation ('blocks' | 'is blocked by' |
    'relates to'), other (the issue), project}``, by relation then the other's iid."""
    i = _int(issue_id)
    if i is None:
        return []
    rows = merged_rows(ctx.world, ctx.state, "links", ctx.world.links(i) if i <= ctx.world.max_id("issues") else [],
                       include=lambda r: i in (r["source_id"], r["target_id"]))
    out = []
    for r in rows:
        if i not in (r["source_id"], r["target_id"]):
            continue
        other_id = r["target_id"] if r["source_id"] == i else r["source_id"]
        other = _entity(ctx, "issues", other_id)
        if other is None:
            continue
        if r["kind"] == "blocks":
            relation = "blocks" if r["source_id"] == i else "is blocked by"
        else:
            relation = "relates to"
        out.append({"id": r["id"], "kind": r["kind"], "relation": relation, "other": other,
                    "project": ctx.world.project(other["project_id"])})
    order = {"blocks": 0, "is blocked by": 1, "relates to": 2}
    out.sort(key=lambda x: (order[x["relation"]], x["other"]["project_id"], x["other"]["iid"], x["id"]))
    return out


@fn(reads=LINKS + ISSUES)
def open_blockers(ctx: Ctx, issue_id: Any) -> list[dict]:
    """Open issues that block this one."""
    return [x["other"] for x in links_of(ctx, issue_id)
            if x["relation"] == "is blocked by" and x["other"]["state"] == "opened"]


@fn(reads=LINKS + ISSUES)
def blocker_text(ctx: Ctx, issue_id: Any) -> str:
    """'#12 (open)' / '#12 (open), #15 (open)' for the open blockers of an issue."""
    return ", ".join(f"#{b['iid']} (open)" for b in open_blockers(ctx, issue_id))


@fn(reads=LINKS + ISSUES)
def linked_with(ctx: Ctx, issue_id: Any, other_id: Any) -> bool:
    """Whether two issues are linked already (either direction, any kind)."""
    o = _int(other_id)
    return any(x["other"]["id"] == o for x in links_of(ctx, issue_id))


@fn(reads=COMMENTS + ISSUES)
def participants(ctx: Ctx, issue_id: Any, extra: Any = None) -> list[int]:
    """Who hears about an issue: its author, assignees, commenters (and ``extra`` user ids),
    except the signed-in user; by id."""
    i = issue(ctx, issue_id)
    if i is None:
        return []
    people = {i["author_id"], *i["assignees"], *(extra or [])}
    for c in comments_of(ctx, i["id"]):
        if not c["system"]:
            people.add(c["author_id"])
    people.discard(ctx.user)
    return sorted(p for p in people if isinstance(p, int))


@fn()
def added(ctx: Ctx, new: Any, old: Any) -> list:
    """Items of ``new`` that are not in ``old``, in ``new``'s order."""
    return [x for x in (new or []) if x not in (old or [])]


# ----------------------------------------------------------------------------- notifications

@fn(reads=NOTIFS)
def my_notifications(ctx: Ctx, page: Any = 1) -> dict:
    """The signed-in user's notifications, newest first, one page of 20."""
    if ctx.user is None:
        return paged([], 1, PER_PAGE)
    uid = int(ctx.user)
    rows = merged_rows(ctx.world, ctx.state, "notifications", ctx.world.notifications(uid),
                       include=lambda r: r["user_id"] == uid)
    rows.sort(key=lambda r: (-r["day"], -r["id"]))
    return paged(rows, page, PER_PAGE)


@fn(reads=NOTIFS)
def unread_ids(ctx: Ctx) -> list[int]:
    """Ids of the signed-in user's unread notifications."""
    if ctx.user is None:
        return []
    uid = int(ctx.user)
    world = [{"id": i} for i in ctx.world.unread_notification_ids(uid)]
    ov = overlay(ctx.state, "notifications")
    out = []
    for r in world:
        cur = ov.get(str(r["id"]), r) if str(r["id"]) in ov else r
        if cur is not None and ("read" not in cur or not cur["read"]):
            out.append(r["id"])
    for r in new_rows(ctx.world, ctx.state, "notifications"):
        if r["user_id"] == uid and not r["read"]:
            out.append(r["id"])
    return sorted(out)


@fn(reads=NOTIFS)
def unread_count(ctx: Ctx) -> int:
    return len(unread_ids(ctx))


@fn(reads=NOTIFS)
def notification(ctx: Ctx, nid: Any) -> dict | None:
    return _entity(ctx, "notifications", nid) if _int(nid) is not None else None


# ----------------------------------------------------------------------------- dates, urls, text

_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


@fn()
def parse_day(ctx: Ctx, text: Any) -> int | None:
    """The day number of a 'YYYY-MM-DD' date, or None when it is not a valid date."""
    t = str(text or "").strip()
    if not _DATE_RE.match(t):
        return None
    try:
        return date_to_day(_date.fromisoformat(t))
    except ValueError:
        return None



@FUNCTIONS.filter
def day(value: Any) -> str:
    """'Jan 5, 2026' for a day number ('' for None)."""
    if value is None or value == "":
        return ""
    return _day_label(int(value))


@lru_cache(maxsize=4096)
def _day_label(n: int) -> str:
    d = day_to_date(n)
    return f"{d:%b} {d.day}, {d.year}"


@fn(reads=ISSUES + USERS + MILESTONES + ("world.projects", "world.labels"))
def cards(ctx: Ctx, items: Any) -> list[dict]:
    """Issue rows for a list, each with what its line shows: ``path`` (project), ``label_rows``,
    ``author_name``, ``milestone_title``, ``assignee_names``, ``created``, ``updated``, ``due``."""
    out = []
    for i in items or []:
        proj = ctx.world.project(i["project_id"])
        author = _entity(ctx, "users", i["author_id"])
        ms = _entity(ctx, "milestones", i["milestone_id"]) if i["milestone_id"] else None
        names = []
        for a in i["assignees"]:
            u = _entity(ctx, "users", a)
            if u is not None:
                names.append(u["username"])
        out.append(dict(i, path=proj["path"] if proj else "", label_rows=labels_by_ids(ctx, i["labels"]),
                        author_name=author["full_name"] if author else "", assignee_names=names,
                        milestone_title=ms["title"] if ms else None, created=day(i["created_day"]),
                        updated=day(i["updated_day"]), due=day(i["due_day"])))
    return out


@FUNCTIONS.filter
def iso(value: Any) -> str:
    return "" if value is None or value == "" else day_to_date(int(value)).isoformat()


@FUNCTIONS.filter
def role_name(value: Any) -> str:
    return str(value or "").capitalize()


@fn()
def int_ids(ctx: Ctx, values: Any) -> list[int]:
    """Form values as sorted distinct ints (a value that is not a number becomes -1, which
    matches nothing, so validation reports it)."""
    out = set()
    for v in values or []:
        if str(v).strip() == "":
            continue
        n = _int(v)
        out.add(n if n is not None else -1)
    return sorted(out)


@fn()
def without(ctx: Ctx, items: Any, value: Any) -> list:
    """``items`` without ``value`` (order kept)."""
    return [x for x in (items or []) if x != value]


@fn()
def with_item(ctx: Ctx, items: Any, value: Any) -> list:
    """``items`` plus ``value``, sorted and distinct."""
    return sorted(set(list(items or []) + [value]))
