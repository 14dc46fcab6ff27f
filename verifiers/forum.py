"""Simforum's programmatic verifiers.

Each function is pure: it reads the start and final states (and the read-only world) and
returns a verdict ``{success, progress, clean, checks}`` (see simweb.verify). They read
the runtime layer directly, not the app's page logic, so a bug in a page cannot make a
task look solved.

``clean`` compares the *effective* start and final runtime against the paths the task
may change: a vote, subscription or saved flag that was changed and then changed back
(or set to what the world already had) is no change; voting on another post, leaving
another community or deleting a comment the task did not name is collateral damage.
"""
from __future__ import annotations

import copy
from collections.abc import Iterable
from datetime import date
from typing import Any

from simweb.functions import entity_row, new_rows
from simweb.verify import (
    answer_check,
    changed_paths,
    check,
    match_exact,
    refusal_check,
    stray_rows,
    unexpected,
    verdict,
)

DAY = 86400


def _rt(state: dict) -> dict:
    return state["runtime"]


def _entity(app: Any, state: dict, table: str, eid: Any) -> dict | None:
    return entity_row(app.world, state, app.function_table.entity_loaders, table, eid)


def effective_runtime(app: Any, state: dict) -> dict:
    """The runtime with no-op overrides dropped: votes equal to the world's vote,
    subscriptions equal to the world's, saved flags equal to the world's (the time an
    item was saved is not part of the comparison), lifted bans of nobody."""
    rt = copy.deepcopy(_rt(state))
    w = app.world
    top_user = w.max_id("users")
    for uid, votes in list(rt.get("votes", {}).items()):
        for k, v in list(votes.items()):
            wv = w.vote(int(uid), "post" if k[0] == "p" else "comment", int(k[1:])) if int(uid) <= top_user else 0
            if v == wv:
                del votes[k]
        if not votes:
            del rt["votes"][uid]
    for uid, subs in list(rt.get("subs", {}).items()):
        world = set(w.subscriptions(int(uid))) if int(uid) <= top_user else set()
        for cid, on in list(subs.items()):
            if bool(on) == (int(cid) in world):
                del subs[cid]
        if not subs:
            del rt["subs"][uid]
    for uid, saved in list(rt.get("saved", {}).items()):
        world = {("p" if k == "post" else "c") + str(t) for k, t, _ in w.saved(int(uid))} if int(uid) <= top_user \
            else set()
        for key, at in list(saved.items()):
            if bool(at) == (key in world):
                del saved[key]
            else:
                saved[key] = bool(at)
        if not saved:
            del rt["saved"][uid]
    for cid, bans in list(rt.get("bans", {}).items()):
        for uid, b in list(bans.items()):
            if b is None and w.ban(int(cid), int(uid)) is None:
                del bans[uid]
        if not bans:
            del rt["bans"][cid]
    return rt


def collateral(app: Any, start: dict, final: dict, allowed: Iterable[str]) -> list[str]:
    """Changes outside ``allowed``. A whole entity table in ``allowed``
    (``runtime.entities.comments``) admits *new* rows only: editing or deleting a row that
    existed at the start (deleting a comment the task did not name) stays collateral
    unless that row is allowed by its own path."""
    allowed = list(allowed)
    out = unexpected(changed_paths(effective_runtime(app, start), effective_runtime(app, final)), allowed)
    for pattern in allowed:
        parts = pattern.split(".")
        if len(parts) != 3 or parts[:2] != ["runtime", "entities"]:
            continue
        table = parts[2]
        top = app.world.max_id(table)
        existed = set(((_rt(start).get("entities") or {}).get(table) or {}))
        touched = stray_rows(start, final, table, lambda r: r["id"] > top and str(r["id"]) not in existed)
        named = [a for a in allowed if a != pattern]
        out += unexpected(touched, named)
    return sorted(set(out))


# ----------------------------------------------------------------------------- answers

def verify_number_answer(app: Any, start: dict, final: dict, answer: str | None, n: float, label: str) -> dict:
    return verdict([answer_check("number", answer, n, label)], collateral(app, start, final, []))


def verify_text_answer(app: Any, start: dict, final: dict, answer: str | None, text: str, label: str) -> dict:
    return verdict([answer_check("text", answer, text, label)], collateral(app, start, final, []))


def verify_date_answer(app: Any, start: dict, final: dict, answer: str | None, day: date, label: str) -> dict:
    return verdict([answer_check("date", answer, day, label)], collateral(app, start, final, []))


def verify_set_answer(app: Any, start: dict, final: dict, answer: str | None, items: list[str], label: str) -> dict:
    return verdict([answer_check("set", answer, items, label)], collateral(app, start, final, []))


def verify_infeasible(app: Any, start: dict, final: dict) -> dict:
    """The agent reported the task as infeasible (and changed nothing)."""
    return verdict([refusal_check(final)], collateral(app, start, final, []))


# ----------------------------------------------------------------------------- goal checks

def vote_checks(app: Any, final: dict, user_id: int, want: dict[str, int]) -> list[dict]:
    """Checks that the user's effective vote on each item key ('p12', 'c34') is as wanted."""
    votes = _rt(final).get("votes", {}).get(str(user_id), {})
    out = []
    for key, value in want.items():
        got = votes.get(key)
        if got is None:
            got = app.world.vote(user_id, "post" if key[0] == "p" else "comment", int(key[1:]))
        word = {1: "upvoted", -1: "downvoted", 0: "not voted on"}[value]
        out.append(check(f"{'post' if key[0] == 'p' else 'comment'} {key[1:]} is {word}", got == value, 1.0,
                         f"vote is {got}"))
    return out


def subscription_checks(app: Any, final: dict, user_id: int, want: dict[int, bool]) -> list[dict]:
    subs = _rt(final).get("subs", {}).get(str(user_id), {})
    world = set(app.world.subscriptions(user_id))
    out = []
    for cid, on in want.items():
        got = subs.get(str(cid), cid in world)
        name = app.world.community(cid)["name"]
        out.append(check(f"{'subscribed to' if on else 'unsubscribed from'} c/{name}", bool(got) == on, 1.0))
    return out


def saved_checks(app: Any, final: dict, user_id: int, want: dict[str, bool]) -> list[dict]:
    saved = _rt(final).get("saved", {}).get(str(user_id), {})
    world = {("p" if k == "post" else "c") + str(t) for k, t, _ in app.world.saved(user_id)}
    out = []
    for key, on in want.items():
        got = bool(saved[key]) if key in saved else key in world
        out.append(check(f"{key} is {'saved' if on else 'not saved'}", got == on, 1.0))
    return out


def field_checks(app: Any, final: dict, table: str, eid: int, fields: dict[str, Any]) -> list[dict]:
    row = _entity(app, final, table, eid) or {}
    return [check(f"{table[:-1]} {eid}: {k} is {v!r}", row.get(k) == v, 1.0, f"found {row.get(k)!r}")
            for k, v in fields.items()]


def status_kept(app: Any, final: dict, table: str, eid: int) -> list[str]:
    """Collateral damage when an item the task only had to change was removed or deleted."""
    row = _entity(app, final, table, eid) or {}
    return [] if row.get("status") == "live" else [f"runtime.entities.{table}.{eid}: status {row.get('status')}"]


def new_post_checks(app: Any, final: dict, user_id: int, p: dict) -> tuple[list[dict], list[str]]:
    """Checks for one new post of the user with p's community_id, kind, title and body/url;
    extra new posts are reported as collateral."""
    new = [r for r in new_rows(app.world, final, "posts") if r["user_id"] == user_id]

    def score(r: dict) -> int:
        return (2 * match_exact(r["title"], p["title"]) + (r["community_id"] == p["community_id"])
                + (r["kind"] == p["kind"]))
    best = max(new, key=lambda r: (score(r), r["id"]), default=None) or {}
    checks = [check("a post was submitted", bool(best), 1.0),
              check(f"in c/{p['community']}", best.get("community_id") == p["community_id"], 1.0,
                    f"found community {best.get('community_id')!r}"),
              check(f"it is a {p['kind']} post", best.get("kind") == p["kind"], 1.0, f"found {best.get('kind')!r}"),
              check("the title is as given", match_exact(best.get("title"), p["title"]), 1.0,
                    f"found {best.get('title')!r}")]
    if p["kind"] == "text":
        checks.append(check("the text is as given", match_exact(best.get("body"), p["body"]), 1.0,
                            f"found {best.get('body')!r}"))
    else:
        checks.append(check("the URL is as given", (best.get("url") or "").strip() == p["url"], 1.0,
                            f"found {best.get('url')!r}"))
    extra = [f"runtime.entities.posts.{r['id']}: an extra post" for r in new if best and r["id"] != best["id"]]
    return checks, extra


def new_comment_checks(app: Any, final: dict, user_id: int, post_id: int, parent_id: int | None,
                       body: str) -> tuple[list[dict], list[str]]:
    new = [r for r in new_rows(app.world, final, "comments") if r["user_id"] == user_id]

    def score(r: dict) -> int:
        return 2 * match_exact(r["body"], body) + (r["post_id"] == post_id) + (r.get("parent_id") == parent_id)
    best = max(new, key=lambda r: (score(r), r["id"]), default=None) or {}
    checks = [check(f"a comment on post {post_id}", best.get("post_id") == post_id, 1.0)]
    if parent_id is not None:
        checks.append(check(f"it replies to comment {parent_id}", best.get("parent_id") == parent_id, 1.0,
                            f"found parent {best.get('parent_id')!r}"))
    checks.append(check("the text is as given", match_exact(best.get("body"), body), 1.0,
                        f"found {best.get('body')!r}"))
    extra = [f"runtime.entities.comments.{r['id']}: an extra comment" for r in new if best and r["id"] != best["id"]]
    return checks, extra


def message_checks(app: Any, final: dict, sender: int, to_id: int, to: str, subject: str,
                   body: str) -> tuple[list[dict], list[str]]:
    """Checks for one new message from ``sender`` to ``to_id``; extra messages are collateral."""
    new = [m for m in new_rows(app.world, final, "messages") if m["sender_id"] == sender]
    m = max(new, key=lambda m: (m["recipient_id"] == to_id, match_exact(m["body"], body), m["id"]), default={})
    checks = [check(f"a message to u/{to}", m.get("recipient_id") == to_id, 1.0),
              check("the subject is as given", match_exact(m.get("subject"), subject), 1.0,
                    f"found {m.get('subject')!r}"),
              check("the text is as given", match_exact(m.get("body"), body), 1.0, f"found {m.get('body')!r}")]
    extra = [f"runtime.entities.messages.{x['id']}: an extra message" for x in new if m and x["id"] != m["id"]]
    return checks, extra


def ban_checks(app: Any, final: dict, community_id: int, user_id: int, days: int, reason: str) -> list[dict]:
    b = (_rt(final).get("bans", {}).get(str(community_id)) or {}).get(str(user_id))
    name = app.world.user(user_id)["username"]
    checks = [check(f"u/{name} is banned from community {community_id}", b is not None, 1.0)]
    length = None if b is None or b["until"] is None else (b["until"] - b["created"]) // DAY
    want = None if days == 0 else days
    checks.append(check(f"the ban lasts {days} day{'s' if days != 1 else ''}" if days else "the ban is permanent",
                        b is not None and length == want, 1.0, f"found {length!r} days"))
    checks.append(check("the reason is as given", b is not None and match_exact(b["reason"], reason), 1.0,
                        f"found {(b or {}).get('reason')!r}"))
    return checks


def combine(checks: list[dict], app: Any, start: dict, final: dict, allowed: Iterable[str],
            extra: Iterable[str] = ()) -> dict:
    return verdict(checks, collateral(app, start, final, allowed) + list(extra))
