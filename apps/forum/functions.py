"""Simforum's pure functions: what the spec's expressions and the templates may call.

Every function takes the evaluation context first (world + state) and declares what it
reads. World rows are merged with the runtime overlay (new, edited, removed and deleted
posts and comments; new users and messages), and run-time votes, subscriptions, saved
items and bans are layered over the world's, so every page reflects every change.

Run-time layers (see specs/forum.yaml):
  rt.votes[user]["p<id>" | "c<id>"]  = 1 | -1 | 0   the user's current vote (overrides the world's)
  rt.subs[user][community_id]        = true | false (overrides the world's subscription)
  rt.saved[user]["p<id>" | "c<id>"]  = time saved, 0 = unsaved (overrides the world's)
  rt.bans[community_id][user_id]     = {until, reason, by, created} | null (null = lifted)
"""
from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from simweb.core.functions import (
    Ctx,
    FunctionTable,
    merged_rows,
    new_rows,
    overlay,
    thread,
)
from simweb.core.functions import to_int as _int
from simweb.core.text import plural
from simweb.core.worlddb import day_to_date

from .world import DAY, WINDOWS, hot_score

FUNCTIONS = FunctionTable()
fn = FUNCTIONS.function

PER_PAGE = 20
POSTS = ("world.posts", "runtime.entities.posts.*")
COMMENTS = ("world.comments", "runtime.entities.comments.*")
USERS = ("world.users", "runtime.entities.users.*")
VOTES = ("world.votes", "runtime.votes.*")
SUBS = ("world.subscriptions", "runtime.subs.*")
SAVED = ("world.saved", "runtime.saved.*")
BANS = ("world.bans", "runtime.bans.*")
MESSAGES = ("world.messages", "runtime.entities.messages.*")


# ----------------------------------------------------------------------------- entities

@FUNCTIONS.entity("posts")
def _load_post(world: Any, pid: int) -> dict | None:
    return world.post(pid)


@FUNCTIONS.entity("comments")
def _load_comment(world: Any, cid: int) -> dict | None:
    return world.comment(cid)


@FUNCTIONS.entity("users")
def _load_user(world: Any, uid: int) -> dict | None:
    return world.user(uid)


@FUNCTIONS.entity("messages")
def _load_message(world: Any, mid: int) -> dict | None:
    return world.message(mid)


@FUNCTIONS.entity("mod_log")
def _load_log(world: Any, lid: int) -> dict | None:
    return world.mod_log_entry(lid)


@FUNCTIONS.overlay("votes")
def _world_vote(world: Any, uid: str, key: str) -> int:
    """The world's vote of user ``uid`` on ``key`` ('p12' a post, 'c7' a comment): 1, -1 or 0."""
    return world.vote(int(uid), "post" if key[0] == "p" else "comment", int(key[1:]))


@FUNCTIONS.overlay("subs")
def _world_subscription(world: Any, uid: str, cid: str) -> bool:
    """Whether user ``uid`` is subscribed to community ``cid`` in the world."""
    return int(uid) <= world.max_id("users") and int(cid) in world.subscriptions(int(uid))


@FUNCTIONS.overlay("bans")
def _world_ban(world: Any, cid: str, uid: str, *field: str) -> Any:
    """The world's ban of user ``uid`` from community ``cid`` as the runtime keeps a ban
    (``{until, reason, by, created}``; None if the world has none), or one of its fields:
    lifting a world ban is a change, placing and lifting a new one is not."""
    try:
        b = world.ban(int(cid), int(uid))
    except (TypeError, ValueError):
        return None
    if b is None:
        return None
    ban = {"until": b["until"], "reason": b["reason"], "by": b["moderator_id"], "created": b["created"]}
    return ban.get(field[0]) if field else ban


_entity = FUNCTIONS.row


def _rt(ctx: Ctx, key: str) -> dict:
    return ctx.state["runtime"].get(key) or {}


# ----------------------------------------------------------------------------- users

@fn(reads=USERS + ("browser.user",))
def current_user(ctx: Ctx) -> dict | None:
    """The signed-in user's record, or None."""
    return _entity(ctx, "users", ctx.user)


@fn(reads=USERS)
def user(ctx: Ctx, uid: Any) -> dict | None:
    return _entity(ctx, "users", _int(uid))


@fn(reads=USERS)
def user_by_name(ctx: Ctx, name: Any) -> dict | None:
    """A user by username (case-insensitive), world or registered at run time."""
    key = str(name or "").strip().lower().removeprefix("u/")
    if not key:
        return None
    for row in new_rows(ctx.world, ctx.state, "users"):
        if row["username"].lower() == key:
            return row
    hit = ctx.world.user_by_name(key)
    return _entity(ctx, "users", hit["id"]) if hit else None


def _names(ctx: Ctx, uids: list[int]) -> dict[int, str]:
    """{user id: username} for many users: world names in one query (run-time users and
    edited rows through the entity overlay)."""
    top = ctx.world.max_id("users")
    edited = overlay(ctx.state, "users")
    world = ctx.world.usernames([u for u in uids if u <= top and str(u) not in edited])
    return {u: world[u] if u in world else username(ctx, u) for u in uids}


@fn(reads=USERS)
def username(ctx: Ctx, uid: Any) -> str:
    u = _entity(ctx, "users", _int(uid)) if uid is not None else None
    return u["username"] if u else "[deleted]"


@fn(reads=USERS + POSTS + COMMENTS + VOTES)
def karma(ctx: Ctx, uid: Any) -> dict:
    """{post, comment, total}: the world's karma plus run-time votes on the user's content."""
    u = _entity(ctx, "users", _int(uid))
    if u is None:
        return {"post": 0, "comment": 0, "total": 0}
    pk, ck = u.get("post_karma", 0), u.get("comment_karma", 0)
    for voter, votes in sorted(_rt(ctx, "votes").items()):
        for key, value in sorted(votes.items()):
            kind, tid = key[0], int(key[1:])
            row = _entity(ctx, "posts" if kind == "p" else "comments", tid)
            if row is None or row["user_id"] != u["id"]:
                continue
            delta = value - ctx.world.vote(int(voter), "post" if kind == "p" else "comment", tid)
            if kind == "p":
                pk += delta
            else:
                ck += delta
    return {"post": pk, "comment": ck, "total": pk + ck}


# ----------------------------------------------------------------------------- communities

@fn(reads=("world.communities",))
def community(ctx: Ctx, cid: Any) -> dict | None:
    c = _int(cid)
    return ctx.world.community(c) if c is not None else None


@fn(reads=("world.communities",))
def community_by_name(ctx: Ctx, name: Any) -> dict | None:
    return ctx.world.community_by_name(str(name or "").strip().removeprefix("c/"))


def _sub_deltas(ctx: Ctx) -> dict[int, int]:
    """How run-time (un)subscriptions changed each community's subscriber count."""
    out: dict[int, int] = {}
    for uid, subs in sorted(_rt(ctx, "subs").items()):
        if not subs:
            continue
        world = set(ctx.world.subscriptions(int(uid))) if int(uid) <= ctx.world.max_id("users") else set()
        for cid, on in subs.items():
            d = int(bool(on)) - int(int(cid) in world)
            if d:
                out[int(cid)] = out.get(int(cid), 0) + d
    return out


@fn(reads=SUBS)
def subscribers(ctx: Ctx, cid: Any) -> int:
    """A community's subscriber count now: the world's plus run-time (un)subscriptions."""
    c = ctx.world.community(int(cid))
    if c is None:
        return 0
    return c["subscribers"] + _sub_deltas(ctx).get(c["id"], 0)


@fn(reads=SUBS + ("world.communities",))
def communities_list(ctx: Ctx, sort: str = "subscribers") -> list[dict]:
    """Every community with its current subscriber count and whether I am subscribed."""
    mine = set(my_subscriptions(ctx))
    deltas = _sub_deltas(ctx)
    out = ctx.world.communities()
    for c in out:
        c["subscribers"] += deltas.get(c["id"], 0)
        c["subscribed"] = c["id"] in mine
    if sort == "name":
        out.sort(key=lambda c: c["name"])
    else:
        out.sort(key=lambda c: (-c["subscribers"], c["name"]))
    return out


@fn(reads=("world.communities",))
def community_names(ctx: Ctx) -> list[dict]:
    """Every community as {name, key (lowercase name)}, alphabetically (for pickers: no
    per-community counts)."""
    return [{"name": n, "key": n.lower()} for n in ctx.world.community_names()]


@fn(reads=SUBS + ("browser.user",))
def my_subscriptions(ctx: Ctx, uid: Any = None) -> list[int]:
    """Ids of the communities a user (default: me) is subscribed to, by id."""
    uid = _int(uid) if uid is not None else ctx.user
    if uid is None:
        return []
    subs = set(ctx.world.subscriptions(uid)) if uid <= ctx.world.max_id("users") else set()
    for cid, on in (_rt(ctx, "subs").get(str(uid)) or {}).items():
        if on:
            subs.add(int(cid))
        else:
            subs.discard(int(cid))
    return sorted(subs)


@fn(reads=SUBS + ("browser.user",))
def is_subscribed(ctx: Ctx, cid: Any) -> bool:
    return ctx.user is not None and _int(cid) in my_subscriptions(ctx)


@fn(reads=("world.moderators",))
def moderator_ids(ctx: Ctx, cid: Any) -> list[int]:
    return ctx.world.moderators(int(cid)) if _int(cid) is not None else []


@fn(reads=("world.moderators",))
def is_mod(ctx: Ctx, cid: Any, uid: Any = None) -> bool:
    """Whether a user (default: me) moderates a community."""
    uid = _int(uid) if uid is not None else ctx.user
    return uid is not None and _int(cid) is not None and uid in ctx.world.moderators(int(cid))


@fn(reads=("world.moderators", "world.communities"))
def moderated_communities(ctx: Ctx, uid: Any) -> list[dict]:
    return [ctx.world.community(c) for c in ctx.world.moderated_by(int(uid))] if _int(uid) else []


@fn(reads=BANS)
def ban_of(ctx: Ctx, cid: Any, uid: Any) -> dict | None:
    """The user's ban from the community if it is in force now, else None."""
    c, u = _int(cid), _int(uid)
    if c is None or u is None:
        return None
    rt = _rt(ctx, "bans").get(str(c)) or {}
    if str(u) in rt:
        b = rt[str(u)]
        if b is None:
            return None
        b = dict(b, community_id=c, user_id=u)
    else:
        b = ctx.world.ban(c, u)
        if b is None:
            return None
        b = {"until": b["until"], "reason": b["reason"], "by": b["moderator_id"], "created": b["created"],
             "community_id": c, "user_id": u}
    if b["until"] is not None and b["until"] <= ctx.now:
        return None
    return b


@fn(reads=BANS)
def is_banned(ctx: Ctx, cid: Any, uid: Any = None) -> bool:
    uid = uid if uid is not None else ctx.user
    return ban_of(ctx, cid, uid) is not None


@fn(reads=BANS + USERS)
def bans_list(ctx: Ctx, cid: Any) -> list[dict]:
    """The community's bans in force now, newest first."""
    c = int(cid)
    uids = [b["user_id"] for b in ctx.world.bans(c)]
    uids += [int(u) for u in sorted((_rt(ctx, "bans").get(str(c)) or {}), key=int) if int(u) not in uids]
    out = []
    for u in uids:
        b = ban_of(ctx, c, u)
        if b is not None:
            out.append(dict(b, username=username(ctx, u)))
    out.sort(key=lambda b: (-b["created"], b["user_id"]))
    return out


@fn(reads=("world.mod_log", "runtime.entities.mod_log.*") + USERS)
def mod_log(ctx: Ctx, cid: Any, limit: int = 50) -> list[dict]:
    c = int(cid)
    new = [r for r in new_rows(ctx.world, ctx.state, "mod_log") if r["community_id"] == c]
    rows = sorted(new + ctx.world.mod_log(c, limit), key=lambda r: (-r["created"], -r["id"]))[:limit]
    names = _names(ctx, [r["moderator_id"] for r in rows])
    return [dict(r, moderator=names[r["moderator_id"]]) for r in rows]


# ----------------------------------------------------------------------------- votes and scores

def _key(kind: str, tid: Any) -> str:
    return ("p" if kind in ("post", "p") else "c") + str(int(tid))


@fn(reads=VOTES + ("browser.user",))
def my_vote(ctx: Ctx, kind: str, tid: Any, uid: Any = None) -> int:
    """A user's (default: my) current vote on a post or comment: 1, -1 or 0."""
    uid = _int(uid) if uid is not None else ctx.user
    if uid is None or _int(tid) is None:
        return 0
    votes = _rt(ctx, "votes").get(str(uid)) or {}
    k = _key(kind, tid)
    if k in votes:
        return votes[k]
    return ctx.world.vote(uid, "post" if k[0] == "p" else "comment", int(tid))


def _my_votes(ctx: Ctx, kind: str, ids: list[int]) -> dict[int, int]:
    """My current votes on many posts or comments at once: {id: 1 | -1 | 0} (one query)."""
    if ctx.user is None:
        return {i: 0 for i in ids}
    world = ctx.world.votes_on(ctx.user, kind, ids) if ctx.user <= ctx.world.max_id("users") else {}
    rt = _rt(ctx, "votes").get(str(ctx.user)) or {}
    prefix = "p" if kind == "post" else "c"
    out = {}
    for i in ids:
        k = prefix + str(i)
        out[i] = rt[k] if k in rt else world.get(i, 0)
    return out


@fn(reads=VOTES)
def vote_delta(ctx: Ctx, kind: str, tid: Any) -> int:
    """How much run-time voting changed a post's or comment's score."""
    rt = _rt(ctx, "votes")
    if not rt:   # nobody voted at run time (every start state): listings ask this for each row
        return 0
    k = _key(kind, tid)
    wk = "post" if k[0] == "p" else "comment"
    d = 0
    for uid, votes in sorted(rt.items()):
        if k in votes:
            d += votes[k] - ctx.world.vote(int(uid), wk, int(tid))
    return d


@fn(reads=VOTES)
def score_of(ctx: Ctx, kind: str, row: dict | None) -> int:
    """The score shown: the world's vote total plus run-time vote changes."""
    if row is None:
        return 0
    return row["score"] + vote_delta(ctx, kind, row["id"])


@fn()
def vote_value(ctx: Ctx, current: int, direction: int) -> int:
    """Voting again in the same direction removes the vote; the other direction switches."""
    return 0 if current == direction else direction


# ----------------------------------------------------------------------------- posts

@fn(reads=POSTS)
def post(ctx: Ctx, pid: Any) -> dict | None:
    """A post as the site has it now (edited, removed, deleted...), or None."""
    return _entity(ctx, "posts", _int(pid))


@fn(reads=COMMENTS)
def comment(ctx: Ctx, cid: Any) -> dict | None:
    return _entity(ctx, "comments", _int(cid))


def _new_comment_counts(ctx: Ctx) -> dict[int, int]:
    counts: dict[int, int] = {}
    for c in new_rows(ctx.world, ctx.state, "comments"):
        counts[c["post_id"]] = counts.get(c["post_id"], 0) + 1
    return counts


def _decorate(ctx: Ctx, posts: list[dict], extra: dict[int, int] | None = None) -> list[dict]:
    extra = extra if extra is not None else _new_comment_counts(ctx)
    names = ctx.world.usernames([p["user_id"] for p in posts if p["user_id"] <= ctx.world.max_id("users")])
    saved = _saved_keys(ctx)
    votes = _my_votes(ctx, "post", [p["id"] for p in posts])
    out = []
    for p in posts:
        c = ctx.world.community(p["community_id"]) or {"name": "?"}
        out.append(dict(p, score_now=score_of(ctx, "post", p), my_vote=votes[p["id"]],
                        author=names.get(p["user_id"]) or username(ctx, p["user_id"]), community=c["name"],
                        comments_now=p["comment_count"] + extra.get(p["id"], 0),
                        saved=("p" + str(p["id"])) in saved))
    return out


@fn(reads=POSTS + VOTES + USERS + SAVED + COMMENTS)
def post_view(ctx: Ctx, p: dict | None) -> dict | None:
    """A post with its current score, my vote, author name, community and comment count."""
    return _decorate(ctx, [p])[0] if p else None


def _touched_posts(ctx: Ctx) -> list[dict]:
    """Current rows of every post the run time changed or voted on (not deleted)."""
    ids = {int(k) for k in overlay(ctx.state, "posts")}
    for votes in _rt(ctx, "votes").values():
        ids.update(int(k[1:]) for k in votes if k[0] == "p")
    rows = []
    for i in sorted(ids):
        r = _entity(ctx, "posts", i)
        if r is not None:
            rows.append(r)
    return rows


@fn(reads=POSTS + VOTES + USERS + SAVED + COMMENTS + SUBS)
def listing(ctx: Ctx, scope: Any, sort: str = "hot", t: str = "all", page: int = 1,
            per_page: int = PER_PAGE) -> dict:
    """A page of live posts: scope 'all', 'home' (my subscriptions; all when I have none)
    or a community id; sort hot/new/top (top within window ``t``).

    Candidates are the world's best rows by the sort's index (hot: by the hot rank at
    time 0) plus every post changed at run time; they are ranked with their current
    score and, for hot, their age relative to ``now``.
    """
    sort = sort if sort in ("hot", "new", "top") else "hot"
    t = t if t in WINDOWS else "all"
    page = max(1, int(page or 1))
    now = ctx.now
    if scope == "home":
        comms = my_subscriptions(ctx) or None
    elif scope == "all":
        comms = None
    else:
        comms = [int(scope)]
    exclude_pinned = sort == "hot" and comms is not None and len(comms) == 1
    window = WINDOWS[t] if sort == "top" else None
    since = now - window if window else None
    offset = (page - 1) * per_page
    touched = _touched_posts(ctx)
    need = offset + per_page + 1 + len(touched) + (20 if sort == "hot" else 0)
    world_rows = ctx.world.list_posts(comms, sort, since, need)
    seen = {r["id"] for r in world_rows}
    rows = merged_rows(ctx.world, ctx.state, "posts", world_rows)
    rows += [r for r in touched if r["id"] not in seen]
    comm_set = set(comms) if comms is not None else None

    def keep(r: dict) -> bool:
        return (r["status"] == "live" and (comm_set is None or r["community_id"] in comm_set)
                and (since is None or r["created"] >= since) and not (exclude_pinned and r.get("pinned")))

    rows = [r for r in rows if keep(r)]
    scored = [(score_of(ctx, "post", r), r) for r in rows]
    if sort == "new":
        scored.sort(key=lambda sr: (-sr[1]["created"], -sr[1]["id"]))
    elif sort == "top":
        scored.sort(key=lambda sr: (-sr[0], -sr[1]["id"]))
    else:
        scored.sort(key=lambda sr: (-hot_score(sr[0], sr[1]["created"], now), -sr[1]["id"]))
    chunk = [r for _, r in scored[offset:offset + per_page]]
    return {"items": _decorate(ctx, chunk), "page": page, "has_next": len(scored) > offset + per_page,
            "sort": sort, "t": t}


@fn(reads=POSTS + VOTES + USERS + SAVED + COMMENTS)
def pinned(ctx: Ctx, cid: Any) -> list[dict]:
    """The community's pinned live posts (world pins plus run-time pin changes)."""
    c = int(cid)
    rows = merged_rows(ctx.world, ctx.state, "posts", ctx.world.pinned_posts(c))
    seen = {r["id"] for r in rows}
    rows += [r for r in _touched_posts(ctx) if r["id"] not in seen]
    rows = [r for r in rows if r["community_id"] == c and r.get("pinned") and r["status"] == "live"]
    rows.sort(key=lambda r: r["id"])
    return _decorate(ctx, rows)


@fn(reads=POSTS + VOTES + USERS + SAVED + COMMENTS)
def pending_posts(ctx: Ctx, cid: Any) -> list[dict]:
    """The community's posts waiting for a moderator's approval (the post_approval policy),
    oldest first. Only posts made at run time can wait: the world has none."""
    c = _int(cid)
    rows = [r for r in (_entity(ctx, "posts", int(k)) for k in sorted(overlay(ctx.state, "posts"), key=int))
            if r is not None and r["community_id"] == c and r["status"] == "pending"]
    rows.sort(key=lambda r: (r["created"], r["id"]))
    return _decorate(ctx, rows)


NO_COMMUNITY = FUNCTIONS.message("No community called {name}")   # (the page adds the full stop)
NO_USER = FUNCTIONS.message("No user called {name}")


@fn(reads=POSTS + VOTES + USERS + SAVED + COMMENTS)
def search_posts(ctx: Ctx, q: str = "", community: Any = None, author: Any = None, kind: str = "any",
                 t: str = "all", sort: str = "relevance", page: int = 1) -> dict:
    """Full-text search over post titles and bodies with filters and sort (20 per page);
    run-time posts whose words match come first for relevance."""
    sort = sort if sort in ("relevance", "new", "top", "comments") else "relevance"
    c = community_by_name(ctx, community) if community else None
    a = user_by_name(ctx, author) if author else None
    if (community and c is None) or (author and a is None):
        return {"total": 0, "items": [], "page": 1, "pages": 1, "capped": False,
                "problem": NO_COMMUNITY.format(name=community) if community and c is None
                else NO_USER.format(name=author)}
    window = WINDOWS.get(t)
    since = ctx.now - window if window else None
    page = max(1, int(page or 1))
    res = ctx.world.search(q or "", community=c["id"] if c else None, author=a["id"] if a else None,
                           kind=kind if kind in ("text", "link") else None, since=since, sort=sort,
                           limit=PER_PAGE, offset=(page - 1) * PER_PAGE)
    items = merged_rows(ctx.world, ctx.state, "posts", res["items"])
    items = [r for r in items if r["status"] == "live"]
    words = [w for w in re.findall(r"[^\W_]+", (q or "").lower())]

    def matches(r: dict) -> bool:
        text = (r["title"] + " " + (r.get("body") or "")).lower()
        return (r["status"] == "live" and (c is None or r["community_id"] == c["id"])
                and (a is None or r["user_id"] == a["id"]) and (kind not in ("text", "link") or r["kind"] == kind)
                and (since is None or r["created"] >= since) and all(w in text for w in words))

    fresh = [r for r in new_rows(ctx.world, ctx.state, "posts") if matches(r)] if page == 1 else []
    total = res["total"] + len(fresh)
    items = (sorted(fresh, key=lambda r: -r["id"]) + items)[:PER_PAGE]
    return {"total": total, "capped": res["capped"], "items": _decorate(ctx, items), "page": page,
            "pages": max(1, -(-total // PER_PAGE)), "problem": None}


@fn(reads=COMMENTS + VOTES + USERS + SAVED)
def comment_tree(ctx: Ctx, pid: Any, sort: str = "top") -> list[dict]:
    """The post's comments threaded, as dicts with 'depth', current score and my vote;
    deleted and removed comments keep their place (and their replies)."""
    p = int(pid)
    world = ctx.world.comments_of(p) if p <= ctx.world.max_id("posts") else []
    rows = merged_rows(ctx.world, ctx.state, "comments", world, include=lambda r: r["post_id"] == p)
    scores = {r["id"]: score_of(ctx, "comment", r) for r in rows}
    def key(r: dict) -> tuple:
        if sort == "new":
            return (-r["created"], -r["id"])
        if sort == "old":
            return (r["created"], r["id"])
        return (-scores[r["id"]], r["id"])
    names = ctx.world.usernames([r["user_id"] for r in rows if r["user_id"] <= ctx.world.max_id("users")])
    saved = _saved_keys(ctx)
    votes = _my_votes(ctx, "comment", [r["id"] for r in rows])
    out = []
    for depth, r in thread(rows, key=key):
        out.append(dict(r, depth=min(depth, 8), score_now=scores[r["id"]], my_vote=votes[r["id"]],
                        author=names.get(r["user_id"]) or username(ctx, r["user_id"]),
                        saved=("c" + str(r["id"])) in saved))
    return out


@fn(reads=POSTS + COMMENTS)
def comment_count(ctx: Ctx, p: dict | None) -> int:
    if p is None:
        return 0
    return p["comment_count"] + sum(1 for c in new_rows(ctx.world, ctx.state, "comments") if c["post_id"] == p["id"])


# ----------------------------------------------------------------------------- profiles

@fn(reads=POSTS + VOTES + USERS + SAVED + COMMENTS)
def user_posts(ctx: Ctx, uid: Any, page: int = 1) -> dict:
    """A user's posts, newest first (deleted ones hidden), 20 per page."""
    u = int(uid)
    page = max(1, int(page or 1))
    offset = (page - 1) * PER_PAGE
    new = [r for r in reversed(new_rows(ctx.world, ctx.state, "posts")) if r["user_id"] == u]
    world = ctx.world.user_posts(u, offset + PER_PAGE + 1) if u <= ctx.world.max_id("users") else []
    rows = new + merged_rows(ctx.world, ctx.state, "posts", world)
    # Deleted posts are gone; removed ones, and ones waiting for approval, only show to their
    # author and the community's moderators.
    rows = [r for r in rows if r["status"] == "live" or (r["status"] in ("removed", "pending") and (
        ctx.user == u or is_mod(ctx, r["community_id"])))]
    return {"items": _decorate(ctx, rows[offset:offset + PER_PAGE]), "page": page,
            "has_next": len(rows) > offset + PER_PAGE}


@fn(reads=COMMENTS + POSTS + VOTES + USERS)
def user_comments(ctx: Ctx, uid: Any, page: int = 1) -> dict:
    """A user's comments, newest first (deleted ones hidden), with their post's title."""
    u = int(uid)
    page = max(1, int(page or 1))
    offset = (page - 1) * PER_PAGE
    new = [r for r in reversed(new_rows(ctx.world, ctx.state, "comments")) if r["user_id"] == u]
    world = ctx.world.user_comments(u, offset + PER_PAGE + 1) if u <= ctx.world.max_id("users") else []
    rows = new + merged_rows(ctx.world, ctx.state, "comments", world)
    rows = [r for r in rows if r["status"] != "deleted"]
    items = []
    chunk = rows[offset:offset + PER_PAGE]
    edited = overlay(ctx.state, "posts")
    known = {p["id"]: p for p in ctx.world.posts(sorted({r["post_id"] for r in chunk if str(r["post_id"]) not in edited}))}
    for r in chunk:
        p = known.get(r["post_id"]) or post(ctx, r["post_id"]) or {"title": "[deleted]", "community_id": 0}
        c = ctx.world.community(p["community_id"]) or {"name": "?"}
        items.append(dict(r, score_now=score_of(ctx, "comment", r), post_title=p["title"], community=c["name"]))
    return {"items": items, "page": page, "has_next": len(rows) > offset + PER_PAGE}


# ----------------------------------------------------------------------------- saved

def _saved_map(ctx: Ctx, uid: int | None) -> dict[str, int]:
    if uid is None:
        return {}
    out = {}
    if uid <= ctx.world.max_id("users"):
        out = {("p" if k == "post" else "c") + str(t): at for k, t, at in ctx.world.saved(uid)}
    for k, at in (_rt(ctx, "saved").get(str(uid)) or {}).items():
        if at:
            out[k] = at
        else:
            out.pop(k, None)
    return out


def _saved_keys(ctx: Ctx) -> set[str]:
    return set(_saved_map(ctx, ctx.user))


@fn(reads=SAVED + ("browser.user",))
def is_saved(ctx: Ctx, kind: str, tid: Any) -> bool:
    return _int(tid) is not None and _key(kind, tid) in _saved_keys(ctx)


@fn(reads=SAVED + POSTS + COMMENTS + VOTES + USERS)
def saved_items(ctx: Ctx) -> list[dict]:
    """My saved posts and comments, most recently saved first."""
    m = _saved_map(ctx, ctx.user)
    out = []
    for k, at in sorted(m.items(), key=lambda kv: (-kv[1], kv[0])):
        if k[0] == "p":
            p = post(ctx, int(k[1:]))
            if p is not None:
                out.append({"kind": "post", "key": k, "at": at, "post": _decorate(ctx, [p])[0]})
        else:
            c = comment(ctx, int(k[1:]))
            if c is not None:
                p = post(ctx, c["post_id"]) or {"title": "[deleted]"}
                out.append({"kind": "comment", "key": k, "at": at, "comment": dict(
                    c, author=username(ctx, c["user_id"]), post_title=p["title"])})
    return out


# ----------------------------------------------------------------------------- messages

@fn(reads=MESSAGES + ("browser.user",))
def inbox(ctx: Ctx) -> list[dict]:
    """Messages to me, newest first."""
    if ctx.user is None:
        return []
    world = ctx.world.inbox(ctx.user) if ctx.user <= ctx.world.max_id("users") else []
    rows = merged_rows(ctx.world, ctx.state, "messages", world, include=lambda r: r["recipient_id"] == ctx.user)
    rows.sort(key=lambda r: (-r["created"], -r["id"]))
    names = _names(ctx, [r["sender_id"] for r in rows])
    return [dict(r, sender=names[r["sender_id"]]) for r in rows]


@fn(reads=MESSAGES + ("browser.user",))
def outbox(ctx: Ctx) -> list[dict]:
    if ctx.user is None:
        return []
    world = ctx.world.outbox(ctx.user) if ctx.user <= ctx.world.max_id("users") else []
    rows = merged_rows(ctx.world, ctx.state, "messages", world, include=lambda r: r["sender_id"] == ctx.user)
    rows.sort(key=lambda r: (-r["created"], -r["id"]))
    names = _names(ctx, [r["recipient_id"] for r in rows])
    return [dict(r, recipient=names[r["recipient_id"]]) for r in rows]


@fn(reads=MESSAGES + ("browser.user",))
def unread_count(ctx: Ctx) -> int:
    """How many of my inbox messages are unread (the inbox without sender names)."""
    if ctx.user is None:
        return 0
    world = ctx.world.inbox(ctx.user) if ctx.user <= ctx.world.max_id("users") else []
    rows = merged_rows(ctx.world, ctx.state, "messages", world, include=lambda r: r["recipient_id"] == ctx.user)
    return sum(1 for m in rows if not m["read"])


@fn(reads=MESSAGES + ("browser.user",))
def my_message(ctx: Ctx, mid: Any) -> dict | None:
    """A message I sent or received (None for anyone else's: no leaking)."""
    m = _entity(ctx, "messages", _int(mid))
    if m is None or ctx.user not in (m["sender_id"], m["recipient_id"]):
        return None
    return m


# ----------------------------------------------------------------------------- validation and helpers

@fn()
def url_ok(ctx: Ctx, url: Any) -> bool:
    """An absolute http(s) URL with a host name."""
    s = str(url or "").strip()
    if len(s) > 2000 or any(ch.isspace() for ch in s):
        return False
    try:
        parts = urlsplit(s)
    except ValueError:   # an unclosed IPv6 bracket: not a URL a link post can have
        return False
    return parts.scheme in ("http", "https") and bool(parts.netloc) and "." in parts.netloc


@fn()
def window_options(ctx: Ctx) -> list[list[str]]:
    return [["day", "Past 24 hours"], ["week", "Past week"], ["month", "Past month"], ["year", "Past year"],
            ["all", "All time"]]



@fn()
def ban_until(ctx: Ctx, days: Any) -> int | None:
    """When a ban of ``days`` days given now ends (None = permanent for 0)."""
    d = _int(days) or 0
    return None if d <= 0 else ctx.now + d * DAY


# ----------------------------------------------------------------------------- filters

@FUNCTIONS.filter
def ago(seconds: Any, now: Any = 0) -> str:
    """'3 hours ago' for a time in seconds relative to ``now``."""
    d = int(now or 0) - int(seconds or 0)
    if d < 60:
        return "just now"
    for size, word in ((365 * DAY, "year"), (30 * DAY, "month"), (DAY, "day"), (3600, "hour"), (60, "minute")):
        if d >= size:
            n = d // size
            return f"{n} {word}{'s' if n != 1 else ''} ago"
    return "just now"


def date_label(d: Any) -> str:
    return f"{d:%B} {d.day}, {d.year}"


@FUNCTIONS.filter
def day_date(day: Any) -> str:
    """Day number -> 'March 5, 2024'."""
    return date_label(day_to_date(int(day)))


@FUNCTIONS.filter
def time_date(seconds: Any) -> str:
    """Seconds -> 'March 5, 2024 14:05'."""
    s = int(seconds)
    d = day_to_date(s // DAY)
    rest = s % DAY
    return f"{date_label(d)} {rest // 3600:02d}:{rest % 3600 // 60:02d}"


FUNCTIONS.filter(plural)


@FUNCTIONS.filter
def signed(n: int) -> str:
    return f"{n:,}"
