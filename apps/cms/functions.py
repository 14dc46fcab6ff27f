"""Simpress's pure functions: what the spec's expressions and the templates may call.

Every function takes the evaluation context first (world + state) and declares what it
reads. World rows are merged with the runtime overlay (inserted, updated and deleted
entities), so every page shows the site as it is now.
"""
from __future__ import annotations

import difflib
import re
from datetime import date as _date
from functools import lru_cache
from typing import Any

from simweb.core.functions import Ctx, FunctionTable, merged_rows, overlay, paged
from simweb.core.functions import to_int as _int
from simweb.core.kits.auth import add_auth_functions
from simweb.core.worlddb import date_to_day, day_to_date

from .world import COUNT_CAP, PER_PAGE, ROLES, STATUSES, post_matches, search_terms

FUNCTIONS = FunctionTable()
fn = FUNCTIONS.function

POSTS = ("world.posts", "runtime.entities.posts.*")
USERS = ("world.users", "runtime.entities.users.*")
COMMENTS = ("world.comments", "runtime.entities.comments.*")
REVISIONS = ("world.revisions", "runtime.entities.revisions.*")
TAXONOMY = ("world.categories", "runtime.entities.categories.*", "world.tags", "runtime.entities.tags.*")
MEDIA = ("world.media", "runtime.entities.media.*")
MENUS = ("world.menus", "world.menu_items", "runtime.entities.menu_items.*")
ME = USERS + ("browser.user",)


# ----------------------------------------------------------------------------- entities

@FUNCTIONS.entity("users")
def _load_user(world: Any, uid: int) -> dict | None:
    return world.user(uid)


@FUNCTIONS.entity("categories")
def _load_category(world: Any, cid: int) -> dict | None:
    return world.category(cid)


@FUNCTIONS.entity("tags")
def _load_tag(world: Any, tid: int) -> dict | None:
    return world.tag(tid)


@FUNCTIONS.entity("posts")
def _load_post(world: Any, pid: int) -> dict | None:
    return world.post(pid)


@FUNCTIONS.entity("revisions")
def _load_revision(world: Any, rid: int) -> dict | None:
    return world.revision(rid)


@FUNCTIONS.entity("comments")
def _load_comment(world: Any, cid: int) -> dict | None:
    return world.comment(cid)


@FUNCTIONS.entity("media")
def _load_media(world: Any, mid: int) -> dict | None:
    return world.media_item(mid)


@FUNCTIONS.entity("menus")
def _load_menu(world: Any, mid: int) -> dict | None:
    return world.menu(mid)


@FUNCTIONS.entity("menu_items")
def _load_menu_item(world: Any, iid: int) -> dict | None:
    return world.menu_item(iid)


_entity = FUNCTIONS.row



# ----------------------------------------------------------------------------- users and sessions

@fn(reads=USERS)
def user_by_id(ctx: Ctx, uid: Any) -> dict | None:
    """A user by id, or None."""
    return _entity(ctx, "users", uid) if _int(uid) is not None else None


current_user, find_login = add_auth_functions(FUNCTIONS)   # the auth kit's (simweb/kits/auth.py)


@fn(reads=ME)
def my_role(ctx: Ctx) -> str | None:
    """The signed-in user's role, or None (signed out, or the account is deactivated)."""
    me = current_user(ctx)
    return me["role"] if me is not None and me["active"] else None


@fn(reads=USERS)
def user_by_username(ctx: Ctx, username: str | None) -> dict | None:
    """A user by exact username (case-insensitive, a leading @ ignored), or None."""
    name = str(username or "").strip().lstrip("@").lower()
    if not name:
        return None
    u = find_login(ctx, name)
    return u if u is not None and u["username"] == name else None


@fn(reads=USERS)
def email_taken(ctx: Ctx, email: str | None) -> bool:
    key = str(email or "").strip().lower()
    return any(u["email"] == key for u in all_users(ctx))


@fn(reads=USERS)
def all_users(ctx: Ctx, role: str = "", q: str = "") -> list[dict]:
    """Every staff account as it is now (filtered by role and a name fragment), by username."""
    rows = merged_rows(ctx.world, ctx.state, "users", ctx.world.users(), include=lambda r: True)
    key = str(q or "").strip().lower()
    out = [u for u in rows if (not role or u["role"] == role)
           and (not key or key in u["username"] or key in u["display_name"].lower())]
    return sorted(out, key=lambda u: (u["username"], u["id"]))


@fn(reads=USERS)
def users_page(ctx: Ctx, role: str = "", q: str = "", page: Any = 1) -> dict:
    """One page of 50 staff accounts (filtered by role and a name fragment), by username."""
    return paged(all_users(ctx, role, q), page, 50)


@fn()
def role_list(ctx: Ctx) -> list[str]:
    return list(ROLES)


# ----------------------------------------------------------------------------- taxonomy

@fn(reads=TAXONOMY)
def categories_all(ctx: Ctx) -> list[dict]:
    """Every category as it is now, by name."""
    rows = merged_rows(ctx.world, ctx.state, "categories", ctx.world.categories(), include=lambda r: True)
    return sorted(rows, key=lambda c: (c["name"].lower(), c["id"]))


@fn(reads=TAXONOMY)
def category(ctx: Ctx, cid: Any) -> dict | None:
    return _entity(ctx, "categories", cid) if _int(cid) is not None else None


@fn(reads=TAXONOMY)
def category_by_slug(ctx: Ctx, slug: str | None) -> dict | None:
    return next((c for c in categories_all(ctx) if c["slug"] == str(slug or "")), None)


@fn(reads=TAXONOMY)
def category_named(ctx: Ctx, name: str | None) -> dict | None:
    key = str(name or "").strip().lower()
    return next((c for c in categories_all(ctx) if c["name"].lower() == key or c["slug"] == slug(ctx, key)), None)


@fn(reads=TAXONOMY)
def tags_all(ctx: Ctx) -> list[dict]:
    """Every tag as it is now, by name."""
    rows = merged_rows(ctx.world, ctx.state, "tags", ctx.world.tags(), include=lambda r: True)
    return sorted(rows, key=lambda t: (t["name"].lower(), t["id"]))


@fn(reads=TAXONOMY)
def tag(ctx: Ctx, tid: Any) -> dict | None:
    return _entity(ctx, "tags", tid) if _int(tid) is not None else None


@fn(reads=TAXONOMY)
def tag_by_slug(ctx: Ctx, slug_: str | None) -> dict | None:
    return next((t for t in tags_all(ctx) if t["slug"] == str(slug_ or "")), None)


@fn(reads=TAXONOMY)
def tag_named(ctx: Ctx, name: str | None) -> dict | None:
    key = str(name or "").strip().lower()
    return next((t for t in tags_all(ctx) if t["name"].lower() == key or t["slug"] == slug(ctx, key)), None)


@fn(reads=TAXONOMY)
def tags_by_ids(ctx: Ctx, ids: Any) -> list[dict]:
    """Tags by id, sorted by name."""
    out = [tag(ctx, i) for i in (ids or [])]
    return sorted((t for t in out if t is not None), key=lambda t: (t["name"].lower(), t["id"]))


@fn()
def slug(ctx: Ctx, text: Any) -> str:
    """The URL slug of a name ('Case studies' -> 'case-studies')."""
    return re.sub(r"[^a-z0-9]+", "-", str(text or "").lower()).strip("-")[:80]


# ----------------------------------------------------------------------------- posts

def _filters(kind: str | None = None, status: str | None = None, category: int | None = None,
             tag: int | None = None, author: int | None = None, terms: list[str] | None = None) -> dict:
    return {"kind": kind, "status": status, "category": category, "tag": tag, "author": author,
            "terms": terms or []}


def _matches(row: dict, f: dict) -> bool:
    if f["kind"] and row["kind"] != f["kind"]:
        return False
    if f["status"] in STATUSES and row["status"] != f["status"]:
        return False
    if f["category"] is not None and row["category_id"] != f["category"]:
        return False
    if f["tag"] is not None and f["tag"] not in row["tags"]:
        return False
    if f["author"] is not None and row["author_id"] != f["author"]:
        return False
    return post_matches(row, f["terms"])


def _touched(ctx: Ctx) -> tuple[list[int], list[dict]]:
    """(ids of world posts the runtime changed or deleted, current runtime rows)."""
    top = ctx.world.max_id("posts")
    rows = overlay(ctx.state, "posts")
    touched = sorted(int(k) for k in rows if int(k) <= top)
    live = [r for _, r in sorted(rows.items(), key=lambda kv: int(kv[0])) if r is not None]
    return touched, live


def _count(ctx: Ctx, f: dict, cap: int | None = None) -> int:
    touched, live = _touched(ctx)
    return ctx.world.post_count(exclude=touched, cap=cap, **f) + sum(1 for r in live if _matches(r, f))


def _newest(r: dict) -> tuple:
    return (-(r["published_day"] if r["published_day"] is not None else -10 ** 6), -r["id"])


def _query(ctx: Ctx, f: dict, page: Any, public: bool, cap: int | None = None) -> dict:
    touched, live = _touched(ctx)
    total = ctx.world.post_count(exclude=touched, cap=cap, **f) + sum(1 for r in live if _matches(r, f))
    pages = max(1, -(-total // PER_PAGE))
    page = min(max(1, _int(page) or 1), pages)
    offset = (page - 1) * PER_PAGE
    mine = [r for r in live if _matches(r, f)]
    ids = ctx.world.post_ids(limit=offset + PER_PAGE, exclude=touched, **f)
    if mine:
        rows = ctx.world.posts(ids) + mine
        rows.sort(key=_newest if public else (lambda r: -r["id"]))
        items = rows[offset: offset + PER_PAGE]
    else:
        items = ctx.world.posts(ids[offset: offset + PER_PAGE])
    return {"total": total, "capped": cap is not None and total >= cap, "page": page, "pages": pages,
            "items": items}


@fn(reads=POSTS)
def post(ctx: Ctx, pid: Any) -> dict | None:
    """A post or page by id as it is now (any status), or None."""
    return _entity(ctx, "posts", pid) if _int(pid) is not None else None


@fn(reads=POSTS)
def public_post(ctx: Ctx, pid: Any) -> dict | None:
    """A post or page the public may read: published only."""
    p = post(ctx, pid)
    return p if p is not None and p["status"] == "published" else None


@fn(reads=POSTS + TAXONOMY)
def public_list(ctx: Ctx, kind: str | None = "post", category_id: Any = None, tag_id: Any = None, q: str = "",
                page: Any = 1) -> dict:
    """Published posts (newest first), by category, tag or search words."""
    terms = search_terms(q)
    f = _filters(kind or None, "published", _int(category_id), _int(tag_id), None, terms)
    return _query(ctx, f, page, True, COUNT_CAP if terms else None)


@fn(reads=POSTS + USERS + TAXONOMY)
def admin_posts(ctx: Ctx, kind: str = "post", status: str = "", category_id: Any = None, tag_id: Any = None,
                author: str = "", q: str = "", page: Any = 1) -> dict:
    """The admin's post list: filters by kind, status, category, tag, author (username) and
    words; newest first; with a count per status."""
    terms = search_terms(q)
    who = None
    if author:
        u = user_by_username(ctx, author)
        if u is None:
            return {"total": 0, "capped": False, "page": 1, "pages": 1, "items": [],
                    "counts": {s: 0 for s in ("all",) + STATUSES}}
        who = u["id"]
    k = kind if kind in ("post", "page") else None
    base = _filters(k, None, _int(category_id), _int(tag_id), who, terms)
    cap = COUNT_CAP if terms else None
    counts = {s: _count(ctx, dict(base, status=s), cap) for s in STATUSES}
    counts["all"] = sum(counts.values())
    out = _query(ctx, dict(base, status=status if status in STATUSES else None), page, False, cap)
    out["counts"] = counts
    return out


@fn(reads=POSTS + USERS + TAXONOMY)
def cards(ctx: Ctx, items: Any) -> list[dict]:
    """Post rows for a list, each with what its line shows: ``author_name``, ``author_login``,
    ``category_name``, ``summary`` (one call per page instead of several per row)."""
    out = []
    for p in items or []:
        a = _entity(ctx, "users", p["author_id"])
        c = _entity(ctx, "categories", p["category_id"]) if p["category_id"] else None
        out.append(dict(p, author_name=a["display_name"] if a else "Unknown", author_login=a["username"] if a else "",
                        category_name=c["name"] if c else None, summary=excerpt(p["body"])))
    return out


@fn(reads=POSTS)
def published_count(ctx: Ctx, category_id: Any = None, tag_id: Any = None) -> int:
    """How many published posts a category or tag has."""
    return _count(ctx, _filters("post", "published", _int(category_id), _int(tag_id)))


@fn(reads=POSTS)
def status_counts(ctx: Ctx) -> dict:
    """Posts and pages per status (the dashboard)."""
    return {s: _count(ctx, _filters(None, s)) for s in STATUSES}


@fn(reads=POSTS)
def slug_taken(ctx: Ctx, text: Any, except_id: Any = None) -> bool:
    s = slug(ctx, text)
    hit = ctx.world.post_by_slug(s)
    if hit is not None:
        cur = post(ctx, hit["id"])
        if cur is not None and cur["slug"] == s and cur["id"] != _int(except_id):
            return True
    return any(r["slug"] == s and r["id"] != _int(except_id) for r in overlay(ctx.state, "posts").values()
               if r is not None)


@fn(reads=POSTS)
def unique_slug(ctx: Ctx, text: Any) -> str:
    """A slug for a new post's title that no other post has."""
    base = slug(ctx, text) or "post"
    s, n = base, 2
    while slug_taken(ctx, s):
        s, n = f"{base}-{n}", n + 1
    return s


# ----------------------------------------------------------------------------- revisions

@fn(reads=REVISIONS)
def revisions_of(ctx: Ctx, pid: Any) -> list[dict]:
    """A post's revisions, newest first."""
    i = _int(pid)
    if i is None:
        return []
    world = ctx.world.revisions(i) if i <= ctx.world.max_id("posts") else []
    rows = merged_rows(ctx.world, ctx.state, "revisions", world, include=lambda r: r["post_id"] == i)
    return sorted(rows, key=lambda r: -r["number"])


@fn(reads=REVISIONS)
def revision(ctx: Ctx, rid: Any) -> dict | None:
    return _entity(ctx, "revisions", rid) if _int(rid) is not None else None


@fn(reads=REVISIONS)
def next_revision(ctx: Ctx, pid: Any) -> int:
    revs = revisions_of(ctx, pid)
    return (revs[0]["number"] + 1) if revs else 1


@fn()
def diff_lines(ctx: Ctx, old: Any, new: Any) -> list[dict]:
    """A line diff from ``old`` to ``new``: ``{op: ' ' | '-' | '+', text}`` per line
    (sentences count as lines, so a changed paragraph shows what changed)."""
    a = _lines(str(old or ""))
    b = _lines(str(new or ""))
    out = []
    for line in difflib.ndiff(a, b):
        op = line[:1]
        if op in (" ", "-", "+"):
            out.append({"op": op, "text": line[2:]})
    return out


def _lines(text: str) -> list[str]:
    return [s for p in text.split("\n") for s in re.split(r"(?<=[.!?])\s+", p.strip()) if s]


# ----------------------------------------------------------------------------- comments

@fn(reads=COMMENTS)
def comments_of(ctx: Ctx, pid: Any, status: str = "") -> list[dict]:
    """A post's comments as they are now (of one status, or all), oldest first (by day, then id)."""
    i = _int(pid)
    if i is None:
        return []
    world = ctx.world.comments_of(i) if i <= ctx.world.max_id("posts") else []
    rows = merged_rows(ctx.world, ctx.state, "comments", world, include=lambda r: r["post_id"] == i)
    return sorted((c for c in rows if not status or c["status"] == status), key=lambda c: (c["day"], c["id"]))


@fn(reads=COMMENTS)
def comment(ctx: Ctx, cid: Any) -> dict | None:
    return _entity(ctx, "comments", cid) if _int(cid) is not None else None


@fn(reads=COMMENTS)
def comment_queue(ctx: Ctx, status: str = "pending", page: Any = 1) -> dict:
    """One page of a moderation queue (newest first) and the count of every queue."""
    ov = overlay(ctx.state, "comments")
    top = ctx.world.max_id("comments")
    touched = sorted(int(k) for k in ov if int(k) <= top)
    live = [r for _, r in sorted(ov.items(), key=lambda kv: -int(kv[0])) if r is not None]
    counts = {s: ctx.world.comment_count(s, touched) + sum(1 for r in live if r["status"] == s)
              for s in ("pending", "approved", "spam")}
    st = status if status in counts else "pending"
    total = counts[st]
    pages = max(1, -(-total // PER_PAGE))
    page = min(max(1, _int(page) or 1), pages)
    offset = (page - 1) * PER_PAGE
    mine = [r for r in live if r["status"] == st]
    rows = ctx.world.comments(ctx.world.comment_ids(st, offset + PER_PAGE, touched)) + mine
    rows.sort(key=lambda r: -r["id"])
    return {"total": total, "page": page, "pages": pages, "items": rows[offset: offset + PER_PAGE],
            "counts": counts, "status": st}


# ----------------------------------------------------------------------------- media

@fn(reads=MEDIA)
def media_library(ctx: Ctx, q: str = "", page: Any = 1) -> dict:
    """One page of the media library whose filename or title contains ``q``, newest first
    (world rows and run-time changes merged; two bounded queries)."""
    key = str(q or "").strip().lower()
    ov = overlay(ctx.state, "media")
    top = ctx.world.max_id("media")
    touched = sorted(int(k) for k in ov if int(k) <= top)
    live = [r for r in ov.values() if r is not None and (key in r["filename"].lower() or key in r["title"].lower())]
    count, _ = ctx.world.media_page(key, 0, 0, touched)
    total = count + len(live)
    pages = max(1, -(-total // PER_PAGE))
    p = min(max(1, _int(page) or 1), pages)
    offset = (p - 1) * PER_PAGE
    _, rows = ctx.world.media_page(key, offset + PER_PAGE, 0, touched)
    rows = sorted(rows + live, key=lambda r: -r["id"])[offset: offset + PER_PAGE]
    return {"total": total, "page": p, "pages": pages, "items": rows}


@fn(reads=MEDIA)
def media(ctx: Ctx, mid: Any) -> dict | None:
    return _entity(ctx, "media", mid) if _int(mid) is not None else None


# ----------------------------------------------------------------------------- menus

@fn(reads=MENUS)
def menus_all(ctx: Ctx) -> list[dict]:
    return ctx.world.menus()


@fn(reads=MENUS)
def menu(ctx: Ctx, mid: Any) -> dict | None:
    return ctx.world.menu(mid) if _int(mid) is not None else None


@fn(reads=MENUS)
def menu_items_of(ctx: Ctx, mid: Any) -> list[dict]:
    """A menu's items as they are now, by position."""
    i = _int(mid)
    if i is None:
        return []
    rows = merged_rows(ctx.world, ctx.state, "menu_items", ctx.world.menu_items(i),
                       include=lambda r: r["menu_id"] == i)
    return sorted(rows, key=lambda r: (r["position"], r["id"]))


@fn(reads=MENUS)
def menu_at(ctx: Ctx, location: str) -> list[dict]:
    """The items of the menu shown at a location of the public site."""
    m = next((m for m in ctx.world.menus() if m["location"] == location), None)
    return [] if m is None else menu_items_of(ctx, m["id"])


# ----------------------------------------------------------------------------- dates, urls, text

_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_TIME_RE = re.compile(r"^([01]?\d|2[0-3]):([0-5]\d)$")


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


@fn()
def parse_moment(ctx: Ctx, day_text: Any, time_text: Any) -> int | None:
    """Seconds since day 0 for a 'YYYY-MM-DD' date and an 'HH:MM' time, or None."""
    d = parse_day(ctx, day_text)
    m = _TIME_RE.match(str(time_text or "").strip())
    if d is None or m is None:
        return None
    return d * 86400 + int(m.group(1)) * 3600 + int(m.group(2)) * 60



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
def with_item(ctx: Ctx, items: Any, value: Any) -> list:
    return sorted(set(list(items or []) + [value]))


@fn()
def without(ctx: Ctx, items: Any, value: Any) -> list:
    return [x for x in (items or []) if x != value]


@FUNCTIONS.filter
def day(value: Any) -> str:
    """'Jan 5, 2026' for a day number ('' for None)."""
    if value is None or value == "":
        return ""
    return _day_label(int(value))


@lru_cache(maxsize=4096)
def _day_label(n: int) -> str:
    d = day_to_date(n)
    return f"{d:%B} {d.day}, {d.year}"


@FUNCTIONS.filter
def moment(value: Any) -> str:
    """'January 5, 2026 at 14:30' for seconds since day 0."""
    if value is None or value == "":
        return ""
    s = int(value)
    return f"{_day_label(s // 86400)} at {s % 86400 // 3600:02d}:{s % 3600 // 60:02d}"


@FUNCTIONS.filter
def iso(value: Any) -> str:
    return "" if value is None or value == "" else day_to_date(int(value)).isoformat()


@FUNCTIONS.filter
def status_name(value: Any) -> str:
    return {"draft": "Draft", "review": "In review", "published": "Published", "archived": "Archived",
            "pending": "Pending", "approved": "Approved", "spam": "Spam"}.get(str(value), str(value))


@FUNCTIONS.filter
def role_name(value: Any) -> str:
    return {"admin": "Administrator", "editor": "Editor", "author": "Author"}.get(str(value), str(value))


@FUNCTIONS.filter
def excerpt(value: Any, n: int = 160) -> str:
    text = " ".join(str(value or "").split())
    return text if len(text) <= n else text[: n - 1].rsplit(" ", 1)[0] + "…"


@FUNCTIONS.filter
def paragraphs(value: Any) -> list[str]:
    return [p for p in str(value or "").split("\n\n") if p.strip()]


@fn()
def status_label(ctx: Ctx, value: Any) -> str:
    """'In review' for 'review' (for messages)."""
    return status_name(value)


@fn()
def role_label(ctx: Ctx, value: Any) -> str:
    return role_name(value)


@fn()
def moment_label(ctx: Ctx, value: Any) -> str:
    return moment(value)


@fn()
def text_lines(ctx: Ctx, value: Any) -> str:
    """A textarea's text with the line breaks browsers send (CRLF) as plain newlines."""
    return str(value or "").replace("\r\n", "\n").replace("\r", "\n")
