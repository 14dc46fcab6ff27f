"""Simforum's effect builders (see simweb.effects).

A forum task's intended effect is data: a user's vote, subscription or saved flag is a
:class:`Value` of the runtime (``votes.<user>.p<post>``), a ban is the ban record
``bans.<community>.<user>``, created posts, comments and messages are :class:`NewRow`
matched by their whole content (right place, right author, the text asked for, still
live), and moderation edits one field of one row. Everything else that changes is
collateral damage, judged by the engine. The one custom check is a lifted ban, where an
explicit ``None`` over the world's ban differs from an absent key (which keeps the ban)
and a value test sees ``None`` for both.
"""
from __future__ import annotations

from typing import Any

from simweb.judging.effects import ANY, Check, Effect, NewRow, Reason, Refusal, Value, eq, text, where
from simweb.judging.verify import normalise_text

DAY = 86400


def vote(user_id: int, key: str, value: int) -> Value:
    """The user's vote on item ``key`` ('p12' a post, 'c34' a comment) ends as ``value``."""
    word = {1: "upvoted", -1: "downvoted", 0: "not voted on"}[value]
    item = "post" if key[0] == "p" else "comment"
    return Value(f"votes.{user_id}.{key}", eq(value), label=f"{item} {key[1:]} {word}")


def subscription(user_id: int, community_id: int, name: str, on: bool) -> Value:
    return Value(f"subs.{user_id}.{community_id}", eq(on),
                 label=f"{'subscribed to' if on else 'unsubscribed from'} c/{name}")


def saved(user_id: int, key: str) -> Value:
    """The item is in the user's saved items (the runtime keeps the time it was saved; 0 is unsaved)."""
    return Value(f"saved.{user_id}.{key}", where(lambda v: isinstance(v, int) and v > 0, "saved (a save time)"),
                 label=f"{key} saved")


def ban(user_id: int, community_id: int, target_id: int, target: str, days: int, reason: str) -> tuple[Value, ...]:
    """Three facts of one ban record: in place (by this moderator), its length, its reason.
    ``days`` 0 is a permanent ban (``until`` None)."""
    path = f"bans.{community_id}.{target_id}"

    def lasts(b: Any) -> bool:
        if not isinstance(b, dict):
            return False
        return b["until"] is None if days == 0 else b["until"] is not None and b["until"] - b["created"] == days * DAY
    want = normalise_text(reason)
    return (Value(path, where(lambda b: isinstance(b, dict) and b.get("by") == user_id, "a ban by me"),
                  label=f"u/{target} banned from community {community_id}"),
            Value(path, where(lasts, "permanent" if days == 0 else f"until = created + {days} days"),
                  label="the ban is permanent" if days == 0 else f"the ban lasts {days} day{'s' if days != 1 else ''}"),
            Value(path, where(lambda b: isinstance(b, dict) and normalise_text(b.get("reason")) == want,
                              f"reason ≈ {reason!r}"), label="the ban reason"))


def unban(community_id: int, target_id: int, target: str) -> Effect:
    """A lifted ban is an explicit ``None`` over the world's ban; an absent key keeps the world's
    ban, and the value test cannot tell absent from None, so the fact is a check of the community's
    ban map and the target only claims this user's entry (banning anyone else stays collateral)."""
    def lifted(app: Any, start: dict, final: dict, answer: str | None) -> tuple[bool, str]:
        bans = (final["runtime"].get("bans") or {}).get(str(community_id)) or {}
        got = bans.get(str(target_id), "absent (the world's ban stands)")
        return str(target_id) in bans and got is None, f"got {got!r}"
    return Effect((Value(f"bans.{community_id}.{target_id}", ANY, label="the ban record", weight=0.0),),
                  checks=(Check(f"u/{target}'s ban is lifted", lifted),))


def new_post(user_id: int, community_id: int, kind: str, title: str, body: str = "", url: str = "",
             status: str = "live") -> NewRow:
    """One post by the user in the community with exactly this title and text (or URL), in
    ``status``: live, or pending where the site's post_approval policy holds it."""
    fields = {"user_id": eq(user_id), "community_id": eq(community_id), "kind": eq(kind), "title": text(title),
              "status": eq(status)}
    if kind == "text":
        fields["body"] = text(body)
    else:
        fields["url"] = where(lambda v: isinstance(v, str) and v.strip() == url, f"= {url!r}")
    return NewRow("posts", fields, label=f"a {status} {kind} post “{title}” in community {community_id}")


def new_comment(user_id: int, post_id: int, body: str, parent_id: int | None = None) -> NewRow:
    """One live comment by the user on the post (replying to ``parent_id``) with this text."""
    where_ = f" replying to comment {parent_id}" if parent_id else ""
    return NewRow("comments", {"user_id": eq(user_id), "post_id": eq(post_id), "parent_id": eq(parent_id),
                               "body": text(body), "status": eq("live")}, label=f"a live comment on post {post_id}{where_}")


def new_message(sender_id: int, recipient_id: int, to: str, subject: str, body: str) -> NewRow:
    return NewRow("messages", {"sender_id": eq(sender_id), "recipient_id": eq(recipient_id), "subject": text(subject),
                               "body": text(body)}, label=f"a message to u/{to} with the subject and text asked for")


def refusal(*evidence: str, label: str, reason: Reason | None = None) -> Refusal:
    return Refusal(tuple(evidence), label, reason)


__all__ = ["ANY", "ban", "new_comment", "new_message", "new_post", "refusal", "saved", "subscription", "unban",
           "vote"]
