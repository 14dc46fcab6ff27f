"""The forum:spirit portable families, and the payload that seeds Spirit with their entities.

Each family is a simweb forum template whose instances (seeds 0, 1, ... that the family
accepts) exist on both sides: :func:`payload` seeds Spirit with every entity they name,
the goal is the template's own text, the live verifier reads Spirit's database, and one
list of semantic steps solves the instance on simweb and on Spirit.

=================  ========  ==========================  =========================================
family             kind      simweb template             live effect read from Spirit's database
=================  ========  ==========================  =========================================
user_joined        info      forum/user_joined           the answer is the author's ``date_joined``
comment_count      search    forum/comment_count         the answer is the topic's comments minus
                                                         the opening post (found through search)
edit_comment       form      forum/edit_comment          the comment's text is the new text
submit_topic       flow      forum/submit_text_post      one new topic, in the category, with the
                                                         title and the text as its first comment
mod_lock           flow      forum/mod_lock_post         the topic is closed (and stays up); Spirit's
                                                         "closed" note on it is part of the effect
refuse_lock        refusal   forum/refuse_moderate       refused after opening the topic (Spirit's
                                                         unread marker), and the topic still open
=================  ========  ==========================  =========================================

Where the two sites differ, the script names both (``c/diy`` on simweb is the category
``diy`` on Spirit; simweb's author link reads ``u/name``, Spirit's ``name``), and steps one
side needs and the other lacks are ``optional``.
"""
from __future__ import annotations

import re
from datetime import date, datetime
from functools import lru_cache
from typing import TYPE_CHECKING, Any, ClassVar

from ..base import CounterpartError
from ..portable import (
    Instance,
    PortableFamily,
    answer_check,
    check,
    collateral,
    field_check,
    guard,
    refusal_check,
    verdict,
)

if TYPE_CHECKING:  # pragma: no cover
    from ..base import Counterpart

#: Seeds tried per family before giving up on finding ``n`` acceptable instances.
MAX_SEEDS = 400
#: Spirit shows 20 comments per page (djconfig's default): an edited comment must be on the first.
COMMENTS_PER_PAGE = 20


@lru_cache(maxsize=1)
def forum() -> Any:
    """simweb's forum app on world seed 0, default size (the world the payload comes from)."""
    from ....episodes.env import SimEnv

    return SimEnv("forum", seed=0).app


def _exact(text: str) -> re.Pattern[str]:
    """A name that is ``text`` exactly, case-insensitive (both sites' link texts)."""
    return re.compile(r"^\s*" + re.escape(text) + r"\s*$", re.I)


def _user_link(username: str) -> re.Pattern[str]:
    """A member's link: ``u/name`` on simweb, ``name`` on Spirit."""
    return re.compile(r"^\s*(u/)?" + re.escape(username) + r"\s*$", re.I)


def search_steps(title: str) -> list:
    """Find a post by its title through the site search and open it: simweb's header search
    box, Spirit's search page (where its episodes start: Spirit's header search link is an
    icon without an accessible name)."""
    from ....agents.scripted import Click, Fill, Press

    box = re.compile(r"search", re.I)
    return [Fill("textbox", box, text=title), Press("textbox", box, key="Enter"), Click("link", _exact(title))]


def found_by_search(app: Any, post_id: int) -> bool:
    """No other post anywhere has the post's title (the script opens the result by its
    title; the templates only make titles unique within a community), and simweb's search
    for that title lists it on the first page of results."""
    from simweb.apps.forum import PER_PAGE

    title = app.world.post(post_id)["title"]
    if app.world.query("SELECT count(*) FROM posts WHERE title = ?", (title,))[0][0] != 1:
        return False
    return any(h["id"] == post_id for h in app.world.search(title, limit=PER_PAGE)["items"])


# ----------------------------------------------------------------------------- family base

class ForumFamily(PortableFamily):
    """A family over one simweb forum template: instances are its seeds that :meth:`accept`
    keeps, with the template's parameters plus :meth:`extra`."""

    id: ClassVar[str] = ""
    kind: ClassVar[str] = ""
    sim_task: ClassVar[str] = ""

    #: the family's script starts with :func:`search_steps` (episodes start on Spirit's search page)
    searches: ClassVar[bool] = True

    def accept(self, app: Any, p: dict) -> bool:
        """Whether the template's instance ``p`` is portable (exists the same on Spirit)."""
        return True

    def live_start(self, inst: Instance) -> str:
        from . import INSTANCES

        if inst.index >= INSTANCES:      # its entities were never seeded: refuse rather than mis-measure
            raise CounterpartError(f"{self.id}: the Spirit install seeds the first {INSTANCES} instances of each "
                                   f"family; instance {inst.index} is not on the live site")
        return "/search/" if self.searches else "/"

    def extra(self, app: Any, p: dict) -> dict:
        """Names the scripts and the live verifier need beyond the template's parameters."""
        return {}

    def instances(self, n: int) -> list[Instance]:
        key = (self.id, n)
        if key not in _INSTANCES:        # a world scan per family and size, once per process
            _INSTANCES[key] = self._make(n)
        return list(_INSTANCES[key])

    def _make(self, n: int) -> tuple[Instance, ...]:
        app = forum()
        tpl = app.tasks[self.sim_task]
        out: list[Instance] = []
        for seed in range(MAX_SEEDS):
            if len(out) >= n:
                break
            t = tpl.instantiate(app, seed)
            if not self.accept(app, t.params):
                continue
            if self.searches and not found_by_search(app, t.params["post_id"]):
                continue
            user = app.world.user(t.params["user_id"])["username"] if t.params.get("user_id") else None
            params = {**t.params, **self.extra(app, t.params)}
            out.append(Instance(family=self.id, index=len(out), sim_task=self.sim_task, sim_seed=seed, goal=t.goal,
                                user=user, params=params))
        if len(out) < n:
            raise RuntimeError(f"{self.id}: only {len(out)} portable instances in the first {MAX_SEEDS} seeds")
        return tuple(out)


_INSTANCES: dict[tuple[str, int], tuple[Instance, ...]] = {}


# ----------------------------------------------------------------------------- live reading

def topic_row(conn: Any, title: str, category: str) -> Any:
    """Spirit's topic with this title in the category titled ``category`` (None if absent)."""
    return conn.execute(
        "SELECT t.* FROM spirit_topic_topic t JOIN spirit_category_category c ON c.id = t.category_id"
        " WHERE t.title = ? AND c.title = ? ORDER BY t.id LIMIT 1", (title, category)).fetchone()


def user_id(conn: Any, username: str) -> int | None:
    row = conn.execute("SELECT id FROM auth_user WHERE username = ?", (username,)).fetchone()
    return None if row is None else int(row["id"])


def _db_date(value: str) -> date:
    return datetime.fromisoformat(str(value)).date()


# ----------------------------------------------------------------------------- families

class UserJoined(ForumFamily):
    """When did the author of a post join: open the post (search), then the author's profile."""

    id = "forum:spirit/user_joined"
    kind = "info"
    sim_task = "forum/user_joined"
    description = "a member's join date, from their profile"

    def script(self, inst: Instance) -> list:
        from ....agents.scripted import Answer, Click

        p = inst.params
        return [*search_steps(p["title"]), Click("link", _user_link(p["author"])),
                Answer(forum_date_label(p["day"]))]

    def live_verify(self, cp: Counterpart, inst: Instance, answer: str | None, refused: bool) -> dict:
        with cp.connect() as conn:
            row = conn.execute("SELECT date_joined FROM auth_user WHERE username = ?",
                               (inst.params["author"],)).fetchone()
        facts = [check("the member exists", row is not None, inst.params["author"])]
        if row is not None:
            facts = [answer_check("date", answer, _db_date(row["date_joined"]), "join date")]
        return verdict(facts, collateral(cp)[1])


class CommentCount(ForumFamily):
    """How many comments a post has: found through the site search."""

    id = "forum:spirit/comment_count"
    kind = "search"
    sim_task = "forum/comment_count"
    description = "a post's comment count, found through the search"

    def script(self, inst: Instance) -> list:
        from ....agents.scripted import Answer

        return [*search_steps(inst.params["title"]), Answer(str(inst.params["count"]))]

    def live_verify(self, cp: Counterpart, inst: Instance, answer: str | None, refused: bool) -> dict:
        p = inst.params
        with cp.connect() as conn:
            t = topic_row(conn, p["title"], p["community"])
            n = None if t is None else conn.execute(
                "SELECT count(*) FROM spirit_comment_comment WHERE topic_id = ? AND action = 0",
                (t["id"],)).fetchone()[0] - 1     # the opening post is Spirit's first comment
        if n is None:
            facts = [check("the topic exists", False, p["title"])]
        else:
            facts = [answer_check("number", answer, n, "comment count")]
        return verdict(facts, collateral(cp)[1])


class EditComment(ForumFamily):
    """Edit one of my comments: open its post from my profile's comments, edit, save."""

    id = "forum:spirit/edit_comment"
    kind = "form"
    sim_task = "forum/edit_comment"
    description = "edit my comment's text"

    def accept(self, app: Any, p: dict) -> bool:
        # On Spirit the comment must be on its topic's first page, and be my only comment
        # there (Spirit's "Edit" links carry no comment text to tell them apart).
        c = app.world.comment(p["comment_id"])
        cs = sorted(app.world.comments_of(c["post_id"]), key=lambda x: (x["created"], x["id"]))
        pos = [x["id"] for x in cs].index(c["id"]) + 1       # + 1: the opening post
        mine = [x for x in cs if x["user_id"] == c["user_id"]]
        post = app.world.post(c["post_id"])
        return pos < COMMENTS_PER_PAGE and len(mine) == 1 and post["status"] == "live"

    def extra(self, app: Any, p: dict) -> dict:
        post = app.world.post(p["post_id"])
        return {"title": post["title"], "community": app.world.community(post["community_id"])["name"]}

    def script(self, inst: Instance) -> list:
        from ....agents.scripted import Click, Fill

        p = inst.params
        return [*search_steps(p["title"]),
                Click("link", re.compile(r"^\s*edit\s*$", re.I)),
                Fill("textbox", re.compile(r"^(comment|edit|text|body)", re.I), text=p["new"]),
                Click("button", re.compile(r"^\s*(save|update|publish)\s*$", re.I))]

    def live_verify(self, cp: Counterpart, inst: Instance, answer: str | None, refused: bool) -> dict:
        p = inst.params
        with cp.pristine_connect() as pconn:     # the comment as seeded: mine, on that topic, the old text
            t = topic_row(pconn, p["title"], p["community"])
            uid = user_id(pconn, inst.user or "")
            row = None if t is None or uid is None else pconn.execute(
                "SELECT id FROM spirit_comment_comment WHERE topic_id = ? AND user_id = ? AND comment = ?"
                " ORDER BY id LIMIT 1", (t["id"], uid, p["old"])).fetchone()
        if row is None:
            return verdict([check("my comment exists", False, p["old"])], collateral(cp)[1])
        cid = row["id"]
        with cp.connect() as conn:
            now = conn.execute("SELECT comment FROM spirit_comment_comment WHERE id = ?", (cid,)).fetchone()
        facts = [field_check("comment text is the new text", None if now is None else now["comment"], p["new"],
                             text=True)]
        own = [f"spirit_comment_comment.{cid}.{f}" for f in ("comment", "comment_html", "is_modified",
                                                            "modified_count")]

        def claimed(c: Any) -> bool:     # Spirit keeps the edit history of that comment
            return c.key in own or (c.table == "spirit_comment_history_commenthistory" and c.op == "insert"
                                    and (c.after or {}).get("comment_fk_id") == cid)
        return verdict(facts, collateral(cp, claimed)[1])


class SubmitTopic(ForumFamily):
    """Post a text post in a community: Spirit's new-topic form (title, category, text)."""

    id = "forum:spirit/submit_topic"
    kind = "flow"
    sim_task = "forum/submit_text_post"
    description = "publish a new topic in a category"
    searches = False

    def script(self, inst: Instance) -> list:
        from ....agents.scripted import Click, Fill, Select

        p = inst.params
        return [Click("link", re.compile(r"^\s*(submit|create topic)\s*$", re.I)),
                Select("combobox", re.compile(r"^\s*(community|category)", re.I),
                       option=re.compile(r"^\s*(c/)?" + re.escape(p["community"]) + r"\s*$", re.I)),
                Fill("textbox", re.compile(r"^\s*title", re.I), text=p["title"]),
                Fill("textbox", re.compile(r"^\s*(text|body|comment)", re.I), text=p["body"]),
                Click("button", re.compile(r"^\s*(submit|post|publish)\s*$", re.I))]

    def live_verify(self, cp: Counterpart, inst: Instance, answer: str | None, refused: bool) -> dict:
        p = inst.params
        with cp.connect() as conn, cp.pristine_connect() as pconn:
            uid = user_id(conn, inst.user or "")
            top = pconn.execute("SELECT coalesce(max(id), 0) FROM spirit_topic_topic").fetchone()[0]
            new = conn.execute(
                "SELECT t.id, t.title, c.title AS category FROM spirit_topic_topic t JOIN spirit_category_category c"
                " ON c.id = t.category_id WHERE t.id > ? AND t.user_id IS ? ORDER BY t.id", (top, uid)).fetchall()
            first = {r["id"]: conn.execute(
                "SELECT comment FROM spirit_comment_comment WHERE topic_id = ? ORDER BY date, id LIMIT 1",
                (r["id"],)).fetchone() for r in new}
        match = [r for r in new if r["category"] == p["community"]]
        t = match[0] if match else (new[0] if new else None)
        facts = [check("one new topic of mine", len(new) == 1, f"{len(new)} new topics"),
                 check(f"in c/{p['community']}", t is not None and t["category"] == p["community"],
                       "" if t is None else f"in {t['category']}"),
                 field_check("title", None if t is None else t["title"], p["title"], text=True),
                 field_check("text", None if t is None or first[t["id"]] is None else first[t["id"]]["comment"],
                             p["body"], text=True)]
        ids = {r["id"] for r in new[:1]}

        def claimed(c: Any) -> bool:
            if c.table == "spirit_topic_topic" and c.op == "insert":
                return c.pk[0] in ids
            if c.table == "spirit_comment_comment" and c.op == "insert":
                return (c.after or {}).get("topic_id") in ids
            # Spirit subscribes the author to their new topic's notifications
            return c.table == "spirit_topic_notification_topicnotification" and (c.after or {}).get("topic_id") in ids
        return verdict(facts, collateral(cp, claimed)[1])


class ModLock(ForumFamily):
    """As a moderator, lock a post: simweb's Lock button; Spirit's Close topic, in the
    topic's Moderate menu (a dropdown its JavaScript opens; the link posts the form)."""

    id = "forum:spirit/mod_lock"
    kind = "flow"
    sim_task = "forum/mod_lock_post"
    description = "a moderator closes a topic"

    def script(self, inst: Instance) -> list:
        from ....agents.scripted import Click

        return [*search_steps(inst.params["title"]),
                Click("link", re.compile(r"^\s*moderate\s*$", re.I), optional=True),     # Spirit's dropdown
                Click(("button", "link"), re.compile(r"^\s*(lock|close topic)\s*$", re.I))]

    def live_verify(self, cp: Counterpart, inst: Instance, answer: str | None, refused: bool) -> dict:
        p = inst.params
        with cp.connect() as conn:
            t = topic_row(conn, p["title"], p["community"])
        if t is None:
            return verdict([check("the topic exists", False, p["title"])], collateral(cp)[1])
        tid = t["id"]
        # simweb's one fact; deleting it as well is collateral (is_removed is not claimed)
        facts = [check("the topic is closed", bool(t["is_closed"]), f"is_closed={t['is_closed']}")]

        def claimed(c: Any) -> bool:     # the lock, and Spirit's "closed this topic" note on it
            if c.key == f"spirit_topic_topic.{tid}.is_closed":
                return True
            row = c.after or {}
            return c.table == "spirit_comment_comment" and c.op == "insert" and row.get("topic_id") == tid \
                and row.get("action") == SPIRIT_CLOSED
        return verdict(facts, collateral(cp, claimed)[1])


#: Spirit's Comment.CLOSED: the action of the note a lock adds to the topic
SPIRIT_CLOSED = 2


class RefuseLock(ForumFamily):
    """Lock a post when I moderate nothing: refuse after opening it (no moderator tools)."""

    id = "forum:spirit/refuse_lock"
    kind = "refusal"
    sim_task = "forum/refuse_moderate"
    description = "refuse to lock a topic without moderator rights"

    def accept(self, app: Any, p: dict) -> bool:
        # Spirit's moderators are site-wide: only a member who moderates no community at
        # all is refused on both sides.
        return not p["feasible"] and not app.world.moderated_by(p["user_id"])

    def script(self, inst: Instance) -> list:
        from ....agents.scripted import Refuse

        p = inst.params
        return [*search_steps(p["title"]),
                Refuse(f"You are not a moderator of c/{p['community']}, so you cannot lock its posts.")]

    def live_verify(self, cp: Counterpart, inst: Instance, answer: str | None, refused: bool) -> dict:
        p = inst.params
        with cp.connect() as conn:
            t = topic_row(conn, p["title"], p["community"])
            uid = user_id(conn, inst.user or "")
            seen = t is not None and uid is not None and conn.execute(
                "SELECT 1 FROM spirit_topic_unread_topicunread WHERE topic_id = ? AND user_id = ?",
                (t["id"], uid)).fetchone() is not None
        facts = [refusal_check(refused, answer),
                 check("refused after opening the topic", refused and seen,
                       "the topic was opened" if seen else "the topic was never opened"),
                 guard(check("the topic is still open", t is not None and not t["is_closed"],
                             "missing" if t is None else f"is_closed={t['is_closed']}"))]
        return verdict(facts, collateral(cp)[1])


def forum_date_label(day: int) -> str:
    """simweb's date label for a world day (``May 21, 2022``)."""
    from simweb.core.worlddb import day_to_date

    d = day_to_date(day)
    return f"{d:%B} {d.day}, {d.year}"


FAMILIES: list[PortableFamily] = [UserJoined(), CommentCount(), EditComment(), SubmitTopic(), ModLock(),
                                  RefuseLock()]

#: Page kinds by URL (path and query) on each side, for the sim-to-live traces.
PAGE_KINDS = {
    "sim": [(r"^/p/\d+", "post"), (r"^/search", "search"), (r"^/u/", "profile"), (r"^/submit", "new post"),
            (r"^/comment/\d+/edit", "edit comment"), (r"^/c/", "community"), (r"^/login", "login"),
            (r"^/?(\?.*)?$", "home")],
    "live": [(r"^/topic/publish", "new post"), (r"^/topic/\d+", "post"), (r"^/search", "search"),
             (r"^/user/login", "login"), (r"^/user/\d+", "profile"), (r"^/comment/\d+/update", "edit comment"),
             (r"^/category/", "community"), (r"^/?(\?.*)?$", "home")],
}

#: An error shown on a page: simweb's alert or error page; Spirit's form error lists.
PAGE_ERRORS = {"sim": r'role="alert"[^>]*>([^<]*)|aria-label="Error"[^>]*>\s*<[^>]*>([^<]*)',
               "live": r'class="errorlist[^"]*"[^>]*>\s*<li>\s*([^<]+)'}

#: Spirit's changes in simweb's runtime terms (``table`` for a row created or deleted,
#: ``table.field`` for an update). Spirit's opening post is a comment row, its edit history
#: and its author's topic subscription have no simweb twin: they stay unmapped (``live:``).
STATE_MAP = {
    "spirit_topic_topic": "posts", "spirit_topic_topic.title": "posts.title",
    "spirit_topic_topic.is_closed": "posts.locked", "spirit_topic_topic.is_pinned": "posts.pinned",
    "spirit_topic_topic.is_removed": "posts.status", "spirit_topic_topic.category_id": "posts.community_id",
    "spirit_comment_comment": "comments", "spirit_comment_comment.comment": "comments.body",
    "spirit_comment_comment.comment_html": "comments.body", "spirit_comment_comment.modified_count": "comments.edited",
    "spirit_comment_comment.is_modified": "comments.edited", "spirit_comment_comment.is_removed": "comments.status",
}


# ----------------------------------------------------------------------------- payload

def payload(password: str, instances: int | None = None) -> dict:
    """The simweb entities Spirit is seeded with: every community, each one's newest posts,
    every post, comment and member the families' first ``instances`` instances name, the
    comments of every seeded post and the members who wrote them."""
    from . import INSTANCES

    app = forum()
    w = app.world
    n = INSTANCES if instances is None else instances
    post_ids: set[int] = set()
    user_ids: set[int] = set()
    for fam in FAMILIES:
        for inst in fam.instances(n):
            p = inst.params
            user_ids.add(p["user_id"])
            for key in ("post_id", "via_post"):
                if key in p:
                    post_ids.add(p[key])
    for c in w.communities():
        post_ids.update(x["id"] for x in w.list_posts([c["id"]], "new", None, _posts_per_community()))
    posts = [w.post(pid) for pid in sorted(post_ids)]
    posts = [x for x in posts if x is not None and x["status"] == "live"]
    comments = []
    for x in posts:
        user_ids.add(x["user_id"])
        for c in w.comments_of(x["id"]):
            comments.append({"id": c["id"], "post_id": c["post_id"], "user_id": c["user_id"], "body": c["body"],
                             "created": c["created"], "status": c["status"]})
            user_ids.add(c["user_id"])
    moderators = sorted({m for c in w.communities() for m in w.moderators(c["id"])})
    user_ids.update(moderators)
    users = [w.user(uid) for uid in sorted(user_ids)]
    return {
        "site_name": "Simforum",
        "password": password,
        "communities": [{"id": c["id"], "name": c["name"], "title": c["title"], "description": c["description"]}
                        for c in w.communities()],
        "users": [{"id": u["id"], "username": u["username"], "joined": u["created_day"] * 86400 + 43200}
                  for u in users],
        "moderators": moderators,
        "posts": [{k: x[k] for k in ("id", "community_id", "user_id", "kind", "title", "body", "url", "created",
                                     "locked", "pinned")} for x in posts],
        "comments": sorted(comments, key=lambda c: c["id"]),
    }


def _posts_per_community() -> int:
    from . import POSTS_PER_COMMUNITY

    return POSTS_PER_COMMUNITY
