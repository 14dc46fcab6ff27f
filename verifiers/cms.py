"""Simpress's verifiers: the effect builders its task templates share.

Every verdict comes from the engine's effect model (simweb.effects): a template says
which fields of which rows must become what, and everything else that changes is
collateral damage (beyond the bookkeeping the spec declares: a post's updated day,
publication day, revision and comment counts, and the revision rows a text change
writes). What is left here is what the templates would otherwise repeat.
"""
from __future__ import annotations

import re
from collections.abc import Mapping

from simweb.judging.effects import Effect, Expect, Row, eq, where

#: the public origin an agent may paste in front of a path
ORIGIN = "http://cms.simweb.localhost"


def post_fields(post_id: int, **fields: Expect) -> Effect:
    """The post ``post_id`` with exactly these fields changed as expected."""
    return Effect((Row("posts", post_id, dict(fields), label=f"post {post_id}"),))


def comment_statuses(wanted: Mapping[int, str]) -> Effect:
    """Each comment id ends with the given moderation status (nothing else of it changes)."""
    return Effect(tuple(Row("comments", cid, {"status": eq(status)}, label=f"comment {cid}")
                        for cid, status in sorted(wanted.items())))


def links_to(path: str) -> Expect:
    """A link to ``path`` on this site, written as a path or as a full address."""
    ok = {path, ORIGIN + path, "http://127.0.0.1" + path}
    return where(lambda v: isinstance(v, str) and (v in ok or v.rstrip("/") == path.rstrip("/")),
                 f"links to {path}")


def slug_of(name: str) -> str:
    """The slug the site gives a category or tag name."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
