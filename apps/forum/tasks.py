"""Simforum's task templates.

Each template draws its parameters from the world by seed (thousands of instances per
template), states a goal, lists WebGym-style fact groups (their fact count sets the
difficulty), gives an oracle plan of BrowserGym actions and verifies with the functions
in verifiers/forum.py.
"""
from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlencode

from simweb.core.worlddb import day_to_date
from simweb.judging.decompose import Part, view_part
from simweb.judging.effects import Answer, Effect, Reason, Row, eq, text
from simweb.judging.tasks import FactGroup, Rng, TaskTemplate, site_policy, world_memo
from simweb.verifiers import forum as V

from .functions import PER_PAGE, date_label, plural
from .world import DAY, hot_score  # noqa: F401  (hot_score documents the listing order)

START = 32400            # the spec clock's first second (day 0, 09:00)
WEEK = 7 * DAY
YEAR = 365 * DAY

_TEXTS = ("Thanks for sharing this, it made my day.", "I tried this last weekend and it worked for me too.",
          "Could you share a few more details about your setup?", "This is the most useful thread I have read here.",
          "Great question, I was wondering the same thing.", "Welcome aboard, glad you found this community.",
          "I respectfully disagree, but thanks for the write-up.", "Following this thread for updates.")
_TITLES = ("My weekend project turned out better than expected", "Looking for beginner recommendations",
           "What I learned after one year in this hobby", "Quick tip that saved me hours",
           "Show and tell: my latest attempt", "Question about getting started on a budget",
           "The best advice I ever got here", "A small milestone I wanted to share")
_BODIES = ("I have been working on this for a few weeks and wanted to hear your thoughts.",
           "Any pointers are welcome, I am completely new to this.",
           "Long time lurker, first time poster. Be gentle!",
           "Sharing in case it helps someone else with the same problem.")
_REASONS = ("Spam", "Harassment", "Repeated off-topic posts", "Self-promotion", "Breaking rule 3")
_DOMAINS = ("https://example.com/articles/", "https://news.example.org/story/", "https://blog.example.net/post/")


def fg(id_: str, description: str, *facts: str) -> FactGroup:
    return FactGroup(id_, description, tuple(facts))


def answer(kind: str, expected: Any, label: str) -> Effect:
    """An information task's effect: the typed answer, and no change at all."""
    return Effect(answer=Answer(kind, expected, label))


# ----------------------------------------------------------------------------- sampling

def pick_user(app: Any, rng: Rng, need: Any = None, tries: int = 2000, step: int = 1) -> dict:
    top = app.world.max_id("users")
    for _ in range(tries):
        uid = rng.randint(1, top)
        uid -= (uid - 1) % step
        u = app.world.user(uid)
        if u is not None and (need is None or need(u)):
            return u
    raise RuntimeError("no world user satisfies the task's needs; is the world too small?")


def pick_post(app: Any, rng: Rng, need: Any = None, tries: int = 3000) -> dict:
    top = app.world.max_id("posts")
    for _ in range(tries):
        p = app.world.post(rng.randint(1, top))
        if p is not None and p["status"] == "live" and unique_title(app, p) and (need is None or need(p)):
            return p
    raise RuntimeError("no world post satisfies the task's needs; is the world too small?")


def unique_title(app: Any, p: dict) -> bool:
    return _title_count(app, p["community_id"], p["title"]) == 1


@world_memo
def _title_count(app: Any, community_id: int, title: str) -> int:
    """World posts of a community with this title."""
    return int(app.world.query("SELECT count(*) FROM posts WHERE community_id = ? AND title = ?",
                               (community_id, title))[0][0])


def cname(app: Any, cid: int) -> str:
    return app.world.community(cid)["name"]


def uname(app: Any, uid: int) -> str:
    return app.world.user(uid)["username"]


def live_comments(app: Any, pid: int) -> list[dict]:
    return [c for c in app.world.comments_of(pid) if c["status"] == "live"]


def unique_comment(app: Any, c: dict) -> bool:
    """No other comment on the post has the same author and text."""
    return _same_comments(app, c["post_id"], c["user_id"], c["body"]) == 1


@world_memo
def _same_comments(app: Any, post_id: int, user_id: int, body: str) -> int:
    """World comments on the post by this author with this text."""
    return sum(1 for o in app.world.comments_of(post_id) if o["user_id"] == user_id and o["body"] == body)


#: Numbers a policy would answer without looking; no counting task has one of them as its answer.
GUESSABLE = (0, 1, 2, 3, 5, 10)


@world_memo
def live_posts_by_comment_count(app: Any) -> dict[int, list[int]]:
    """The ids of the live posts with more than 3 comments, by comment count, in id order:
    one read of the posts table (there is no index on the count, and asking count by count
    scanned the table for each new count a sampler drew)."""
    out: dict[int, list[int]] = {}
    for n, pid in app.world.query("SELECT comment_count, id FROM posts WHERE status = 'live' AND comment_count > 3"
                                  " ORDER BY id"):
        out.setdefault(n, []).append(pid)
    return out


#: Every digit run of a title, inside words too ("v2", "2nd"): a sampler that avoids answers
#: the goal gives away counts them all (an answer reader does not).
_DIGITS = re.compile(r"[-+]?\$?\s*\d[\d,]*(?:\.\d+)?")


def guessable(text: str, n: float) -> bool:
    """``n`` is a number anyone would guess, or the text holds it (a title like "3 tips"
    would give away an answer of 3)."""
    if n in GUESSABLE:
        return True
    for m in _DIGITS.finditer(text):
        try:
            if float(m.group(0).replace("$", "").replace(",", "").replace(" ", "")) == n:
                return True
        except ValueError:
            continue
    return False


def post_params(app: Any, p: dict) -> dict:
    return {"post_id": p["id"], "title": p["title"], "community": cname(app, p["community_id"]),
            "community_id": p["community_id"]}


def search_url(**filters: Any) -> str:
    """The address of the search page with these filters (a sub-task's view)."""
    return "/search?" + urlencode(filters)


def results_part(group: FactGroup, plan: list[str], what: str, **filters: Any) -> Part:
    """The first step of a search-then-answer template: its search results shown."""
    return view_part((FactGroup(group.id, "The right search results are shown", group.facts),), search_url(**filters),
                     plan, f"{what} Leave the results open; nothing else is needed yet.")


# ----------------------------------------------------------------------------- plan pieces

def open_post(app: Any, pid: int) -> list[str]:
    """Search for the post's title and open it (or search its title within its community)."""
    p = app.world.post(pid)
    hits = app.world.search(p["title"], limit=PER_PAGE)["items"]
    if any(h["id"] == pid for h in hits):
        return [f"fill('search-q', {p['title']!r})", "click('search-go')", f"click('post-{pid}')"]
    return ["click('search-go')", f"fill('s-q', {p['title']!r})",
            f"fill('s-community', {cname(app, p['community_id'])!r})", "click('s-go')", f"click('post-{pid}')"]


def open_community(name: str) -> list[str]:
    """The community's page, from the list of communities in the header."""
    return ["click('nav-communities')", f"click('community-{name}')"]


def compose(to: str, subject: str, body: str) -> list[str]:
    """Write a private message from the inbox's compose page."""
    return ["click('nav-inbox')", "click('compose')", f"fill('msg-to', {to!r})", f"fill('msg-subject', {subject!r})",
            f"fill('msg-body', {body!r})", "click('msg-send')"]


# ============================================================================= info tasks

class TopPostThisWeek(TaskTemplate):
    id = "forum/top_post_week"
    kind = "info"
    title = "Name the top post of a community in the past week"

    def sample(self, app, rng):
        comms = app.world.communities()
        for _ in range(300):
            c = rng.choice(comms)
            answers = []
            for now in (START, START + 1200):
                rows = app.world.list_posts([c["id"]], "top", now - WEEK, 2)
                answers.append(rows)
            a, b = answers
            if (len(a) == 2 and len(b) == 2 and a[0]["id"] == b[0]["id"] and a[0]["score"] > a[1]["score"]
                    and b[0]["score"] > b[1]["score"]):
                return {"user_id": pick_user(app, rng)["id"], "community": c["name"], "post_id": a[0]["id"],
                        "answer": a[0]["title"]}
        raise RuntimeError("no community with a clear top post this week")

    def goal(self, app, p):
        return (f"What is the title of the top-scoring post of the past week in c/{p['community']}? "
                f"Answer with the exact title.")

    def facts(self, app, p):
        return [fg("answer", "The week's top post is named", f"community c/{p['community']}",
                   "sorted by top, past week", f"the answer is {p['answer']}")]

    def oracle(self, app, p):
        return open_community(p["community"]) + ["click('sort-top')", "click('t-week')",
                                                 f"send_msg_to_user({p['answer']!r})"]

    def effect(self, app, p, start):
        return answer("text", p["answer"], "title of the week's top post")


class PostScore(TaskTemplate):
    id = "forum/post_score"
    kind = "info"
    title = "Look up a post's score"

    def sample(self, app, rng):
        p = pick_post(app, rng, lambda x: not guessable(x["title"], x["score"]))
        return {"user_id": pick_user(app, rng)["id"], **post_params(app, p), "score": p["score"]}

    def goal(self, app, p):
        return f"How many points does the post “{p['title']}” in c/{p['community']} have? Answer with the number."

    def facts(self, app, p):
        return [fg("score", "The answer is the post's score", f"the score is {p['score']}")]

    def oracle(self, app, p):
        return open_post(app, p["post_id"]) + [f"send_msg_to_user('{p['score']}')"]

    def effect(self, app, p, start):
        return answer("number", p["score"], "post's score")


class CommentCount(TaskTemplate):
    id = "forum/comment_count"
    kind = "info"
    title = "Count a post's comments"

    def sample(self, app, rng):
        # The count is drawn first, evenly over the counts posts have (past the small ones
        # anyone would guess), so that no number is the answer of many instances: most posts
        # have few comments, and "1" would otherwise be right often.
        by_count = live_posts_by_comment_count(app)
        counts = [n for n in sorted(by_count) if n not in GUESSABLE]
        for _ in range(200):
            n = rng.choice(counts)
            ids = by_count[n][:400]
            rng.shuffle(ids)
            for pid in ids[:20]:
                p = app.world.post(pid)
                if unique_title(app, p) and not guessable(p["title"], n):
                    return {"user_id": pick_user(app, rng)["id"], **post_params(app, p), "count": p["comment_count"]}
        raise RuntimeError("no post with comments")

    def goal(self, app, p):
        return f"How many comments does the post “{p['title']}” in c/{p['community']} have? Answer with the number."

    def facts(self, app, p):
        return [fg("count", "The answer is the comment count", f"{p['count']} comments")]

    def oracle(self, app, p):
        return open_post(app, p["post_id"]) + [f"send_msg_to_user('{p['count']}')"]

    def effect(self, app, p, start):
        return answer("number", p["count"], "comment count")


class UserJoined(TaskTemplate):
    id = "forum/user_joined"
    kind = "info"
    title = "Find when a member joined"

    def sample(self, app, rng):
        # Many members joined in the site's launch weeks; an author who joined on a day few
        # others did keeps any one date from being the answer of many instances.
        def rare_day(x: dict) -> bool:
            day = app.world.user(x["user_id"])["created_day"]
            return app.world.query("SELECT count(*) FROM users WHERE created_day = ?", (day,))[0][0] <= 8
        p = pick_post(app, rng, rare_day)
        u = app.world.user(p["user_id"])
        return {"user_id": pick_user(app, rng, lambda x: x["id"] != u["id"])["id"], **post_params(app, p),
                "author": u["username"], "day": u["created_day"]}

    def goal(self, app, p):
        return (f"On what date did u/{p['author']} (who wrote “{p['title']}” in c/{p['community']}) join Simforum? "
                f"Answer with the date, for example January 5, 2010.")

    def facts(self, app, p):
        return [fg("date", "The join date is given", f"joined {date_label(day_to_date(p['day']))}")]

    def oracle(self, app, p):
        return open_post(app, p["post_id"]) + ["click('post-author')",
                                               f"send_msg_to_user({date_label(day_to_date(p['day']))!r})"]

    def effect(self, app, p, start):
        return answer("date", day_to_date(p["day"]), "join date")


class UserModerates(TaskTemplate):
    id = "forum/user_moderates"
    kind = "info"
    title = "List the communities a member moderates"

    def sample(self, app, rng):
        # The goal names only the member (naming a community they moderate would give away
        # the answer, most moderate just one); the oracle finds them through the search.
        for _ in range(300):
            c = rng.choice(app.world.communities())
            m = rng.choice(app.world.moderators(c["id"]))
            hits = app.world.search("", author=m, limit=1)["items"]
            if hits:
                names = [cname(app, x) for x in app.world.moderated_by(m)]
                return {"user_id": pick_user(app, rng, lambda x, m=m: x["id"] != m)["id"], "community": c["name"],
                        "moderator": uname(app, m), "communities": names, "via_post": hits[0]["id"]}
        raise RuntimeError("no moderator with a post")

    def goal(self, app, p):
        return (f"Which communities does u/{p['moderator']} moderate? Answer with the community names (without c/), "
                f"separated by commas.")

    def facts(self, app, p):
        return [fg("set", "Every moderated community is listed",
                   f"{len(p['communities'])} communities", f"they are {', '.join(p['communities'])}")]

    def oracle(self, app, p):
        return ["click('search-go')", f"fill('s-author', {p['moderator']!r})", "click('s-go')",
                f"click('post-{p['via_post']}')", "click('post-author')",
                f"send_msg_to_user({', '.join(p['communities'])!r})"]

    def effect(self, app, p, start):
        return answer("set", p["communities"], "moderated communities")


class AuthorMostComments(TaskTemplate):
    id = "forum/author_most_comments"
    kind = "info"
    title = "Search with author and community filters and sort by comments"

    def sample(self, app, rng):
        for _ in range(500):
            p = pick_post(app, rng)
            res = app.world.search("", community=p["community_id"], author=p["user_id"], sort="comments", limit=2)
            items = res["items"]
            if res["total"] >= 2 and items[0]["comment_count"] > items[1]["comment_count"] \
                    and unique_title(app, items[0]):
                return {"user_id": pick_user(app, rng)["id"], "community": cname(app, p["community_id"]),
                        "author": uname(app, p["user_id"]), "answer": items[0]["title"], "post_id": items[0]["id"]}
        raise RuntimeError("no author with several posts in one community")

    def goal(self, app, p):
        return (f"Of all posts by u/{p['author']} in c/{p['community']}, which one has the most comments? "
                f"Answer with its exact title.")

    def facts(self, app, p):
        return [fg("filters", "The right posts are considered", f"author u/{p['author']}",
                   f"community c/{p['community']}", "sorted by number of comments"),
                fg("answer", "The post is named", f"the answer is {p['answer']}")]

    def oracle(self, app, p):
        return ["click('search-go')", f"fill('s-author', {p['author']!r})",
                f"fill('s-community', {p['community']!r})", "select_option('s-sort', 'comments')",
                "click('s-go')", f"send_msg_to_user({p['answer']!r})"]

    def parts(self, app, p):
        return [results_part(self.facts(app, p)[0], self.oracle(app, p)[:-1],
                             f"Search for the posts by u/{p['author']} in c/{p['community']}, most commented first.",
                             author=p["author"], community=p["community"], sort="comments")]

    def effect(self, app, p, start):
        return answer("text", p["answer"], "most-commented post")


class KeywordTopYear(TaskTemplate):
    id = "forum/keyword_top_year"
    kind = "info"
    title = "Full-text search with community, time window and sort"

    def sample(self, app, rng):
        for _ in range(500):
            p = pick_post(app, rng, lambda x: x["created"] > -300 * DAY)
            words = [w for w in p["title"].replace("?", " ").replace(":", " ").split() if len(w) >= 5
                     and w.isalpha()]
            if not words:
                continue
            word = rng.choice(words).lower()
            outs = []
            for now in (START, START + 1200):
                outs.append(app.world.search(word, community=p["community_id"], since=now - YEAR, sort="top",
                                             limit=2))
            a, b = outs
            if a["total"] >= 2 and a["items"][0]["id"] == b["items"][0]["id"] \
                    and a["items"][0]["score"] > a["items"][1]["score"] and unique_title(app, a["items"][0]):
                top = a["items"][0]
                return {"user_id": pick_user(app, rng)["id"], "community": cname(app, p["community_id"]),
                        "word": word, "answer": top["title"], "post_id": top["id"]}
        raise RuntimeError("no keyword with a clear top post")

    def goal(self, app, p):
        return (f"Search c/{p['community']} for posts from the past year mentioning “{p['word']}”. Which of them "
                f"has the highest score? Answer with its exact title.")

    def facts(self, app, p):
        return [fg("filters", "The right posts are considered", f"keyword {p['word']}",
                   f"community c/{p['community']}", "past year", "sorted by top score"),
                fg("answer", "The post is named", f"the answer is {p['answer']}")]

    def oracle(self, app, p):
        return [f"fill('search-q', {p['word']!r})", "click('search-go')",
                f"fill('s-community', {p['community']!r})", "select_option('s-t', 'year')",
                "select_option('s-sort', 'top')", "click('s-go')", f"send_msg_to_user({p['answer']!r})"]

    def parts(self, app, p):
        return [results_part(self.facts(app, p)[0], self.oracle(app, p)[:-1],
                             f"Search c/{p['community']} for posts from the past year mentioning “{p['word']}”, "
                             f"highest score first.", q=p["word"], community=p["community"], t="year", sort="top")]

    def effect(self, app, p, start):
        return answer("text", p["answer"], "top matching post")


# ============================================================================= votes

class UpvotePost(TaskTemplate):
    id = "forum/upvote_post"
    title = "Upvote a post"

    def sample(self, app, rng):
        p = pick_post(app, rng)
        u = pick_user(app, rng, lambda x: app.world.vote(x["id"], "post", p["id"]) == 0)
        return {"user_id": u["id"], **post_params(app, p)}

    def goal(self, app, p):
        return f"Upvote the post “{p['title']}” in c/{p['community']}."

    def facts(self, app, p):
        return [fg("vote", "The post is upvoted", f"post “{p['title']}” upvoted")]

    def oracle(self, app, p):
        return open_post(app, p["post_id"]) + ["click('post-up')"]

    def effect(self, app, p, start):
        return Effect((V.vote(p["user_id"], f"p{p['post_id']}", 1),))


class DownvoteComment(TaskTemplate):
    id = "forum/downvote_comment"
    title = "Downvote a specific comment"

    def sample(self, app, rng):
        for _ in range(500):
            p = pick_post(app, rng, lambda x: 0 < x["comment_count"] <= 40)
            cs = [c for c in live_comments(app, p["id"]) if unique_comment(app, c)]
            if not cs:
                continue
            c = rng.choice(cs)
            u = pick_user(app, rng, lambda x, c=c: app.world.vote(x["id"], "comment", c["id"]) == 0
                          and x["id"] != c["user_id"])
            return {"user_id": u["id"], **post_params(app, p), "comment_id": c["id"], "author": uname(app, c["user_id"]),
                    "text": c["body"]}
        raise RuntimeError("no comment to downvote")

    def goal(self, app, p):
        return (f"On the post “{p['title']}” in c/{p['community']}, downvote the comment by u/{p['author']} "
                f"that says “{p['text']}”.")

    def facts(self, app, p):
        return [fg("vote", "The right comment is downvoted", f"comment by u/{p['author']}", "downvoted")]

    def oracle(self, app, p):
        return open_post(app, p["post_id"]) + [f"click('comment-{p['comment_id']}-down')"]

    def effect(self, app, p, start):
        return Effect((V.vote(p["user_id"], f"c{p['comment_id']}", -1),))


class RemoveVote(TaskTemplate):
    id = "forum/remove_vote"
    title = "Take back an earlier upvote"

    def sample(self, app, rng):
        for _ in range(500):
            u = pick_user(app, rng, step=10)
            ups = [t for k, t, v in app.world.votes_of(u["id"]) if k == "post" and v == 1]
            ups = [t for t in ups if unique_title(app, app.world.post(t))]
            if ups:
                p = app.world.post(rng.choice(ups))
                return {"user_id": u["id"], **post_params(app, p)}
        raise RuntimeError("no user with an upvote")

    def goal(self, app, p):
        return f"I upvoted the post “{p['title']}” in c/{p['community']} by mistake. Remove my vote (do not downvote it)."

    def facts(self, app, p):
        return [fg("vote", "The upvote is gone", "no vote on the post")]

    def oracle(self, app, p):
        return open_post(app, p["post_id"]) + ["click('post-up')"]

    def effect(self, app, p, start):
        return Effect((V.vote(p["user_id"], f"p{p['post_id']}", 0),))


# ============================================================================= subscriptions and saved

class SubscribeMany(TaskTemplate):
    id = "forum/subscribe_many"
    title = "Subscribe to several communities"

    def sample(self, app, rng):
        u = pick_user(app, rng)
        mine = set(app.world.subscriptions(u["id"]))
        free = [c["name"] for c in app.world.communities() if c["id"] not in mine]
        names = sorted(rng.sample(free, 4))
        return {"user_id": u["id"], "communities": names,
                "community_ids": [app.world.community_by_name(n)["id"] for n in names]}

    def goal(self, app, p):
        return f"Subscribe me to these communities: {', '.join('c/' + n for n in p['communities'])}."

    def facts(self, app, p):
        return [fg("subs", "Each community is subscribed", *[f"subscribed to c/{n}" for n in p["communities"]])]

    def oracle(self, app, p):
        return ["click('nav-communities')"] + [f"click('subscribe-{n}')" for n in p["communities"]]

    def effect(self, app, p, start):
        return Effect(tuple(V.subscription(p["user_id"], c, n, True)
                            for c, n in zip(p["community_ids"], p["communities"])))


class Unsubscribe(TaskTemplate):
    id = "forum/unsubscribe"
    title = "Leave a community"

    def sample(self, app, rng):
        u = pick_user(app, rng, lambda x: len(app.world.subscriptions(x["id"])) >= 2)
        cid = rng.choice(app.world.subscriptions(u["id"]))
        return {"user_id": u["id"], "community_id": cid, "community": cname(app, cid)}

    def goal(self, app, p):
        return f"Unsubscribe me from c/{p['community']}. Keep my other subscriptions."

    def facts(self, app, p):
        return [fg("subs", "The community is left", f"unsubscribed from c/{p['community']}")]

    def oracle(self, app, p):
        return open_community(p["community"]) + ["click('unsubscribe')"]

    def effect(self, app, p, start):
        return Effect((V.subscription(p["user_id"], p["community_id"], p["community"], False),))


class SavePost(TaskTemplate):
    id = "forum/save_post"
    title = "Save a post for later"

    def sample(self, app, rng):
        p = pick_post(app, rng)
        u = pick_user(app, rng, lambda x: all(not (k == "post" and t == p["id"]) for k, t, _ in app.world.saved(x["id"])))
        return {"user_id": u["id"], **post_params(app, p)}

    def goal(self, app, p):
        return f"Save the post “{p['title']}” from c/{p['community']} so I can read it later."

    def facts(self, app, p):
        return [fg("saved", "The post is saved", "post saved")]

    def oracle(self, app, p):
        return open_post(app, p["post_id"]) + ["click('post-save')"]

    def effect(self, app, p, start):
        return Effect((V.saved(p["user_id"], f"p{p['post_id']}"),))


# ============================================================================= posting

def may_post(app: Any, c: dict, policy: Any) -> Any:
    """Who may be drawn to post in community ``c`` on a site with policies ``policy``: not
    banned there, and, where the post_approval policy holds new posts, not one of its
    moderators (whose posts skip the queue), so every instance's post waits for approval."""
    if not policy["post_approval"]:
        return lambda x: app.world.ban(c["id"], x["id"]) is None
    mods = set(app.world.moderators(c["id"]))
    return lambda x: app.world.ban(c["id"], x["id"]) is None and x["id"] not in mods


def held(app: Any, p: dict) -> bool:
    """Whether the instance's new post waits for a moderator's approval (post_approval)."""
    return bool(site_policy(app, p, "post_approval"))


def new_post_status(app: Any, p: dict) -> str:
    return "pending" if held(app, p) else "live"


def approval_note(app: Any, p: dict) -> str:
    """What the goal says of the site's approval queue (nothing on today's site)."""
    return (" (On this site a new post waits for a moderator's approval before it is listed in the community: "
            "that is expected.)" if held(app, p) else "")


class SubmitTextPost(TaskTemplate):
    id = "forum/submit_text_post"
    title = "Submit a text post"
    policies = ("post_approval",)

    def sample_with(self, app, rng, policy):
        c = rng.choice(app.world.communities())
        u = pick_user(app, rng, may_post(app, c, policy))
        return {"user_id": u["id"], "community": c["name"], "community_id": c["id"], "kind": "text",
                "title": rng.choice(_TITLES), "body": rng.choice(_BODIES)}

    def goal(self, app, p):
        return (f"Post a text post in c/{p['community']} with the title “{p['title']}” and the text "
                f"“{p['body']}”.{approval_note(app, p)}")

    def facts(self, app, p):
        return [fg("post", "The post exists as asked", f"in c/{p['community']}", "a text post",
                   f"title {p['title']}", f"text {p['body']}")]

    def oracle(self, app, p):
        return ["click('nav-submit')", f"select_option('submit-community', {p['community']!r})",
                f"fill('submit-title-input', {p['title']!r})", f"fill('submit-body', {p['body']!r})",
                "click('submit-go')"]

    def effect(self, app, p, start):
        return Effect((V.new_post(p["user_id"], p["community_id"], "text", p["title"], body=p["body"],
                                  status=new_post_status(app, p)),))


class SubmitLinkPost(TaskTemplate):
    id = "forum/submit_link_post"
    title = "Share a link"
    policies = ("post_approval",)

    def sample_with(self, app, rng, policy):
        c = rng.choice(app.world.communities())
        u = pick_user(app, rng, may_post(app, c, policy))
        title = rng.choice(_TITLES)
        url = rng.choice(_DOMAINS) + str(rng.randint(1000, 99999))
        return {"user_id": u["id"], "community": c["name"], "community_id": c["id"], "kind": "link", "title": title,
                "url": url}

    def goal(self, app, p):
        return f"Share the link {p['url']} in c/{p['community']} with the title “{p['title']}”.{approval_note(app, p)}"

    def facts(self, app, p):
        return [fg("post", "The link post exists as asked", f"in c/{p['community']}", "a link post",
                   f"title {p['title']}", f"URL {p['url']}")]

    def oracle(self, app, p):
        return ["click('nav-submit')", f"select_option('submit-community', {p['community']!r})",
                "click('submit-kind-link')", f"fill('submit-title-input', {p['title']!r})",
                f"fill('submit-url', {p['url']!r})", "click('submit-go')"]

    def effect(self, app, p, start):
        return Effect((V.new_post(p["user_id"], p["community_id"], "link", p["title"], url=p["url"],
                                  status=new_post_status(app, p)),))


def _commentable(app: Any, p: dict) -> bool:
    return not p["locked"] and 0 < p["comment_count"] <= 40


class ReplyToComment(TaskTemplate):
    id = "forum/reply_comment"
    title = "Reply to a specific comment"

    def sample(self, app, rng):
        for _ in range(500):
            p = pick_post(app, rng, lambda x: _commentable(app, x))
            cs = [c for c in live_comments(app, p["id"]) if unique_comment(app, c)]
            if not cs:
                continue
            c = rng.choice(cs)
            u = pick_user(app, rng, lambda x, c=c, p=p: x["id"] != c["user_id"]
                          and app.world.ban(p["community_id"], x["id"]) is None)
            return {"user_id": u["id"], **post_params(app, p), "comment_id": c["id"],
                    "author": uname(app, c["user_id"]), "text": c["body"], "reply": rng.choice(_TEXTS)}
        raise RuntimeError("no comment to reply to")

    def goal(self, app, p):
        return (f"On the post “{p['title']}” in c/{p['community']}, reply to u/{p['author']}'s comment "
                f"“{p['text']}” with: {p['reply']}")

    def facts(self, app, p):
        return [fg("reply", "The reply is posted", f"a reply to u/{p['author']}'s comment", f"text {p['reply']}")]

    def oracle(self, app, p):
        return open_post(app, p["post_id"]) + [f"click('comment-{p['comment_id']}-reply')",
                                               f"fill('reply-body', {p['reply']!r})", "click('reply-submit')"]

    def effect(self, app, p, start):
        return Effect((V.new_comment(p["user_id"], p["post_id"], p["reply"], p["comment_id"]),))


def _own_comment(app: Any, rng: Rng) -> tuple[dict, dict]:
    """A user and one of their live comments on their profile's first page (unique text)."""
    for _ in range(2000):
        u = pick_user(app, rng)
        cs = [c for c in app.world.user_comments(u["id"], PER_PAGE) if c["status"] == "live"]
        cs = [c for c in cs if sum(1 for o in cs if o["body"] == c["body"]) == 1]
        if cs:
            return u, rng.choice(cs)
    raise RuntimeError("no user with a comment")


class EditComment(TaskTemplate):
    id = "forum/edit_comment"
    title = "Edit one of my comments"

    def sample(self, app, rng):
        u, c = _own_comment(app, rng)
        new = rng.choice([t for t in _TEXTS if t != c["body"]])
        return {"user_id": u["id"], "comment_id": c["id"], "post_id": c["post_id"], "old": c["body"], "new": new}

    def goal(self, app, p):
        return f"Edit my comment that says “{p['old']}” so that it says: {p['new']}"

    def facts(self, app, p):
        return [fg("edit", "The comment now has the new text", f"comment text is {p['new']}")]

    def oracle(self, app, p):
        return ["click('nav-profile')", "click('tab-comments')", f"click('ucomment-{p['comment_id']}-post')",
                f"click('comment-{p['comment_id']}-edit')", f"fill('edit-body', {p['new']!r})", "click('edit-submit')"]

    def effect(self, app, p, start):
        return Effect((Row("comments", p["comment_id"], {"body": text(p["new"])},
                           label=f"comment {p['comment_id']}"),))


class DeleteOwnPost(TaskTemplate):
    id = "forum/delete_own_post"
    title = "Delete one of my posts"

    def sample(self, app, rng):
        for _ in range(2000):
            u = pick_user(app, rng)
            ps = [x for x in app.world.user_posts(u["id"], PER_PAGE) if x["status"] == "live" and not x["pinned"]]
            ps = [x for x in ps if sum(1 for o in ps if o["title"] == x["title"]) == 1]
            if ps:
                x = rng.choice(ps)
                return {"user_id": u["id"], **post_params(app, x)}
        raise RuntimeError("no user with a post")

    def goal(self, app, p):
        return f"Delete my post “{p['title']}” in c/{p['community']}."

    def facts(self, app, p):
        return [fg("delete", "The post is deleted", "post status deleted")]

    def oracle(self, app, p):
        return ["click('nav-profile')", f"click('post-{p['post_id']}')", "click('post-delete')"]

    def effect(self, app, p, start):
        return Effect((Row("posts", p["post_id"], {"status": eq("deleted")}, label=f"post {p['post_id']}"),))


class SendMessage(TaskTemplate):
    id = "forum/send_message"
    title = "Send a private message"

    def sample(self, app, rng):
        p = pick_post(app, rng)
        u = pick_user(app, rng, lambda x: x["id"] != p["user_id"])
        return {"user_id": u["id"], **post_params(app, p), "to": uname(app, p["user_id"]),
                "to_id": p["user_id"], "subject": f"About your post in c/{cname(app, p['community_id'])}",
                "body": rng.choice(_TEXTS)}

    def goal(self, app, p):
        return (f"Send a private message to u/{p['to']} with the subject “{p['subject']}” and the message: "
                f"{p['body']}")

    def facts(self, app, p):
        return [fg("message", "The message is sent", f"to u/{p['to']}", f"subject {p['subject']}",
                   f"text {p['body']}")]

    def oracle(self, app, p):
        return compose(p["to"], p["subject"], p["body"])

    def effect(self, app, p, start):
        return Effect((V.new_message(p["user_id"], p["to_id"], p["to"], p["subject"], p["body"]),))


# ============================================================================= moderation

def _mod_post(app: Any, rng: Rng, need: Any = None) -> tuple[dict, dict]:
    """A post and a moderator of its community."""
    p = pick_post(app, rng, need)
    m = app.world.user(rng.choice(app.world.moderators(p["community_id"])))
    return p, m


class ModLockPost(TaskTemplate):
    id = "forum/mod_lock_post"
    title = "As a moderator, lock a post"

    def sample(self, app, rng):
        p, m = _mod_post(app, rng, lambda x: not x["locked"])
        return {"user_id": m["id"], **post_params(app, p)}

    def goal(self, app, p):
        return f"I moderate c/{p['community']}. Lock the post “{p['title']}” so nobody can add new comments."

    def facts(self, app, p):
        return [fg("lock", "The post is locked (and stays up)", "post locked")]

    def oracle(self, app, p):
        return open_post(app, p["post_id"]) + ["click('mod-lock')"]

    def effect(self, app, p, start):
        return Effect((Row("posts", p["post_id"], {"locked": eq(True)}, label=f"post {p['post_id']}"),))


class ModPinPost(TaskTemplate):
    id = "forum/mod_pin_post"
    title = "As a moderator, pin a post to the top of the community"

    def sample(self, app, rng):
        p, m = _mod_post(app, rng, lambda x: not x["pinned"] and len(app.world.pinned_posts(x["community_id"])) < 2)
        return {"user_id": m["id"], **post_params(app, p)}

    def goal(self, app, p):
        return f"I moderate c/{p['community']}. Pin the post “{p['title']}” to the top of the community."

    def facts(self, app, p):
        return [fg("pin", "The post is pinned", "post pinned")]

    def oracle(self, app, p):
        return open_post(app, p["post_id"]) + ["click('mod-pin')"]

    def effect(self, app, p, start):
        return Effect((Row("posts", p["post_id"], {"pinned": eq(True)}, label=f"post {p['post_id']}"),))


class ModUnban(TaskTemplate):
    id = "forum/mod_unban_user"
    title = "As a moderator, lift a ban"

    def sample(self, app, rng):
        rows = app.world.query("SELECT community_id, user_id FROM bans WHERE until IS NULL OR until > ?"
                               " ORDER BY community_id, user_id", (START + 3600,))
        cid, uid = rng.choice(rows)
        m = rng.choice(app.world.moderators(cid))
        return {"user_id": m, "community": cname(app, cid), "community_id": cid, "target": uname(app, uid),
                "target_id": uid}

    def goal(self, app, p):
        return f"I moderate c/{p['community']}. Lift the ban of u/{p['target']} there."

    def facts(self, app, p):
        return [fg("unban", "The ban is lifted", f"u/{p['target']} no longer banned from c/{p['community']}")]

    def oracle(self, app, p):
        return open_community(p["community"]) + ["click('mod-tools')", f"click('unban-{p['target_id']}')"]

    def effect(self, app, p, start):
        return V.unban(p["community_id"], p["target_id"], p["target"])


class ModRemoveComment(TaskTemplate):
    id = "forum/mod_remove_comment"
    title = "As a moderator, remove a comment"

    def sample(self, app, rng):
        for _ in range(500):
            p, m = _mod_post(app, rng, lambda x: 0 < x["comment_count"] <= 40)
            cs = [c for c in live_comments(app, p["id"]) if unique_comment(app, c) and c["user_id"] != m["id"]]
            if cs:
                c = rng.choice(cs)
                return {"user_id": m["id"], **post_params(app, p), "comment_id": c["id"],
                        "author": uname(app, c["user_id"]), "text": c["body"]}
        raise RuntimeError("no comment to remove")

    def goal(self, app, p):
        return (f"I moderate c/{p['community']}. On the post “{p['title']}”, remove the comment by "
                f"u/{p['author']} that says “{p['text']}”.")

    def facts(self, app, p):
        return [fg("remove", "The comment is removed", f"comment by u/{p['author']}", "status removed")]

    def oracle(self, app, p):
        return open_post(app, p["post_id"]) + [f"click('comment-{p['comment_id']}-remove')"]

    def effect(self, app, p, start):
        return Effect((Row("comments", p["comment_id"], {"status": eq("removed")},
                           label=f"comment {p['comment_id']}"),))


class ModBanUser(TaskTemplate):
    id = "forum/mod_ban_user"
    title = "As a moderator, ban a user for some days"

    def sample(self, app, rng):
        c = rng.choice(app.world.communities())
        m = app.world.user(rng.choice(app.world.moderators(c["id"])))
        mods = set(app.world.moderators(c["id"]))
        t = pick_user(app, rng, lambda x: x["id"] not in mods and app.world.ban(c["id"], x["id"]) is None)
        return {"user_id": m["id"], "community": c["name"], "community_id": c["id"], "target": t["username"],
                "target_id": t["id"], "days": rng.choice((1, 3, 7, 14, 30)), "reason": rng.choice(_REASONS)}

    def goal(self, app, p):
        return (f"I moderate c/{p['community']}. Ban u/{p['target']} from it for {plural(p['days'], 'day')} with the reason "
                f"“{p['reason']}”.")

    def facts(self, app, p):
        return [fg("ban", "The ban is in place as asked", f"u/{p['target']} banned from c/{p['community']}",
                   f"for {plural(p['days'], 'day')}", f"reason {p['reason']}")]

    def oracle(self, app, p):
        return open_community(p["community"]) + ["click('mod-tools')", f"fill('ban-username', {p['target']!r})",
                f"fill('ban-days', '{p['days']}')", f"fill('ban-reason', {p['reason']!r})", "click('ban-submit')"]

    def effect(self, app, p, start):
        return Effect(V.ban(p["user_id"], p["community_id"], p["target_id"], p["target"], p["days"], p["reason"]))


class ModCleanup(TaskTemplate):
    id = "forum/mod_cleanup"
    title = "As a moderator, deal with a rule-breaking comment (remove, lock, ban)"

    def sample(self, app, rng):
        for _ in range(500):
            p, m = _mod_post(app, rng, lambda x: not x["locked"] and 0 < x["comment_count"] <= 40)
            mods = set(app.world.moderators(p["community_id"]))
            cs = [c for c in live_comments(app, p["id"]) if unique_comment(app, c) and c["user_id"] not in mods
                  and app.world.ban(p["community_id"], c["user_id"]) is None]
            if cs:
                c = rng.choice(cs)
                return {"user_id": m["id"], **post_params(app, p), "comment_id": c["id"],
                        "author": uname(app, c["user_id"]), "author_id": c["user_id"], "text": c["body"],
                        "days": rng.choice((3, 7, 14)), "reason": rng.choice(_REASONS)}
        raise RuntimeError("no comment to clean up")

    def goal(self, app, p):
        return (f"I moderate c/{p['community']}. On the post “{p['title']}”, the comment by u/{p['author']} that "
                f"says “{p['text']}” breaks the rules. Remove that comment, lock the post (but keep it up), ban "
                f"u/{p['author']} from c/{p['community']} for {p['days']} days with the reason “{p['reason']}”, and "
                f"send u/{p['author']} a private message with the subject “{self.subject(p)}” and the message: "
                f"{self.note(p)}")

    @staticmethod
    def subject(p):
        return f"Your comment in c/{p['community']}"

    @staticmethod
    def note(p):
        return f"Your comment was removed and you are banned for {p['days']} days. Reason: {p['reason']}."

    def facts(self, app, p):
        return [fg("comment", "The comment is removed", f"comment by u/{p['author']} removed"),
                fg("post", "The post is locked but stays up", "post locked"),
                fg("ban", "The author is banned as asked", f"u/{p['author']} banned from c/{p['community']}",
                   f"for {p['days']} days", f"reason {p['reason']}"),
                fg("message", "The author is told", f"a message to u/{p['author']}", f"subject {self.subject(p)}",
                   f"text {self.note(p)}")]

    def oracle(self, app, p):
        return open_post(app, p["post_id"]) + [
            f"click('comment-{p['comment_id']}-remove')", "click('mod-lock')", "click('crumb-community')",
            "click('mod-tools')", f"fill('ban-username', {p['author']!r})", f"fill('ban-days', '{p['days']}')",
            f"fill('ban-reason', {p['reason']!r})", "click('ban-submit')"] + compose(p["author"], self.subject(p),
                                                                                      self.note(p))

    def parts(self, app, p):
        mod = f"I moderate c/{p['community']}."
        ban = ["click('mod-tools')", f"fill('ban-username', {p['author']!r})", f"fill('ban-days', '{p['days']}')",
               f"fill('ban-reason', {p['reason']!r})", "click('ban-submit')"]
        return [
            Part(("comment", "post"), ("comments", "posts"),
                 tuple(open_post(app, p["post_id"]) + [f"click('comment-{p['comment_id']}-remove')", "click('mod-lock')"]),
                 f"{mod} On the post “{p['title']}”, the comment by u/{p['author']} that says “{p['text']}” breaks "
                 f"the rules. Remove that comment and lock the post (but keep it up). Do nothing else."),
            Part(("ban",), ("bans",), tuple(open_community(p["community"]) + ban),
                 f"{mod} Ban u/{p['author']} from c/{p['community']} for {p['days']} days with the reason "
                 f"“{p['reason']}”. Do nothing else."),
            Part(("message",), ("messages",), tuple(compose(p["author"], self.subject(p), self.note(p))),
                 f"Send u/{p['author']} a private message with the subject “{self.subject(p)}” and the message: "
                 f"{self.note(p)}"),
        ]

    def effect(self, app, p, start):
        return Effect((Row("comments", p["comment_id"], {"status": eq("removed")}, label=f"comment {p['comment_id']}"),
                       Row("posts", p["post_id"], {"locked": eq(True)}, label=f"post {p['post_id']}"),
                       *V.ban(p["user_id"], p["community_id"], p["author_id"], p["author"], p["days"], p["reason"]),
                       V.new_message(p["user_id"], p["author_id"], p["author"], self.subject(p), self.note(p))))


# ============================================================================= refusals

#: Reasons a post or comment could not be acted on that the refusal templates never sample.
_GONE = ("already deleted", "already been deleted", "already removed", "already been removed", "locked", "banned",
         "archived", "~not found", "~doesn't exist", "~does not exist", "~can't find", "~cannot find",
         "~couldn't find", "~no longer exists")


class RefuseDeleteOthersComment(TaskTemplate):
    """Delete a comment: about half the instances name one of my own comments (done by
    deleting it), the rest someone else's (refused, after opening the post, where the
    comment shows its author and no delete button)."""

    id = "forum/refuse_delete_comment"
    kind = "mixed"
    may_refuse = True
    title = "Delete a comment, or refuse when it is someone else's"

    def sample(self, app, rng):
        feasible = rng.random() < 0.5
        for _ in range(500):
            p = pick_post(app, rng, lambda x: 0 < x["comment_count"] <= 40)
            mods = set(app.world.moderators(p["community_id"]))
            cs = [c for c in live_comments(app, p["id"]) if unique_comment(app, c)]
            if cs:
                c = rng.choice(cs)
                if feasible:
                    uid = c["user_id"]
                else:
                    uid = pick_user(app, rng, lambda x, c=c, mods=mods: x["id"] != c["user_id"]
                                    and x["id"] not in mods)["id"]
                return {"user_id": uid, **post_params(app, p), "comment_id": c["id"],
                        "author": uname(app, c["user_id"]), "text": c["body"], "feasible": feasible}
        raise RuntimeError("no comment")

    def goal(self, app, p):
        return (f"Delete the comment by u/{p['author']} that says “{p['text']}” on the post “{p['title']}” in "
                f"c/{p['community']}. If that is not possible, tell me why (use report_infeasible) and change "
                f"nothing.")

    def facts(self, app, p):
        if p["feasible"]:
            return [fg("delete", "My comment is deleted", f"the comment is mine (u/{p['author']})",
                       "comment status deleted")]
        return [fg("refusal", "The request is recognised as impossible",
                   f"the comment belongs to u/{p['author']}", "it is reported as infeasible")]

    def oracle(self, app, p):
        if p["feasible"]:
            return open_post(app, p["post_id"]) + [f"click('comment-{p['comment_id']}-delete')"]
        return open_post(app, p["post_id"]) + [
            f"report_infeasible('Only u/{p['author']} or a moderator can delete that comment; I can only delete my own.')"]

    def effect(self, app, p, start):
        if p["feasible"]:
            return Effect((Row("comments", p["comment_id"], {"status": eq("deleted")},
                               label=f"comment {p['comment_id']}"),))
        why = Reason(f"the comment is u/{p['author']}'s, not mine",
                     ("~not mine", "~not my", "~isn't mine", "~someone else", "~another user", "~belongs to",
                      "~written by", "~posted by", "~only the author", "~own comment*", "~my own", "~their own",
                      "~permission", "~not allowed", "~allowed to", "moderator*", "author", f"~{p['author']}"),
                     _GONE)
        return Effect(refusal=V.refusal(f"/p/{p['post_id']}", label="the post, where the comment shows its author",
                                        reason=why))


class RefuseModerate(TaskTemplate):
    """Lock a post: about half the instances are in a community I moderate (done by
    locking it), the rest are refused after a page that shows I am no moderator there
    (the post without moderator tools, or the community's moderator list)."""

    id = "forum/refuse_moderate"
    kind = "mixed"
    may_refuse = True
    title = "Lock a post, or refuse when I do not moderate its community"

    def sample(self, app, rng):
        feasible = rng.random() < 0.5
        p = pick_post(app, rng, lambda x: not x["locked"])
        mods = sorted(app.world.moderators(p["community_id"]))
        uid = rng.choice(mods) if feasible else pick_user(app, rng, lambda x: x["id"] not in mods)["id"]
        return {"user_id": uid, **post_params(app, p), "feasible": feasible}

    def goal(self, app, p):
        return (f"Lock the post “{p['title']}” in c/{p['community']}. If I am not allowed to, tell me why "
                f"(use report_infeasible) and change nothing.")

    def facts(self, app, p):
        if p["feasible"]:
            return [fg("lock", "The post is locked", f"I moderate c/{p['community']}", "post locked")]
        return [fg("refusal", "The request is recognised as impossible",
                   f"I am not a moderator of c/{p['community']}", "it is reported as infeasible")]

    def oracle(self, app, p):
        if p["feasible"]:
            return open_post(app, p["post_id"]) + ["click('mod-lock')"]
        return open_post(app, p["post_id"]) + [
            f"report_infeasible('You are not a moderator of c/{p['community']}, so you cannot lock its posts.')"]

    def effect(self, app, p, start):
        if p["feasible"]:
            return Effect((Row("posts", p["post_id"], {"locked": eq(True)}, label=f"post {p['post_id']}"),))
        why = Reason(f"I do not moderate c/{p['community']}",
                     ("~moderator*", "~moderate*", "~mod", "~mods", "~permission", "~not allowed", "~allowed to",
                      "~rights", "~privilege*"),
                     _GONE + ("already locked", "~not your post", "someone else's post"))
        return Effect(refusal=V.refusal(f"/p/{p['post_id']}", f"/c/{p['community']}",
                                        label="the post or the community, which show I am no moderator there",
                                        reason=why))


# ============================================================================= multi-goal

class JoinPostAndEngage(TaskTemplate):
    id = "forum/join_post_engage"
    title = "Join a community, post in it, upvote and comment on a post there"
    policies = ("post_approval",)

    def sample_with(self, app, rng, policy):
        for _ in range(500):
            p = pick_post(app, rng, lambda x: not x["locked"])
            ok = may_post(app, app.world.community(p["community_id"]), policy)
            u = pick_user(app, rng, lambda x, p=p, ok=ok: p["community_id"] not in app.world.subscriptions(x["id"])
                          and app.world.vote(x["id"], "post", p["id"]) == 0 and ok(x))
            return {"user_id": u["id"], **post_params(app, p), "kind": "text", "new_title": rng.choice(_TITLES),
                    "body": rng.choice(_BODIES), "comment": rng.choice(_TEXTS)}
        raise RuntimeError("no post")

    def goal(self, app, p):
        return (f"Join c/{p['community']}, then post a text post there titled “{p['new_title']}” with the text "
                f"“{p['body']}”. Also upvote the post “{p['title']}” in c/{p['community']} and comment on it: "
                f"{p['comment']}{approval_note(app, p)}")

    def facts(self, app, p):
        return [fg("sub", "The community is joined", f"subscribed to c/{p['community']}"),
                fg("post", "The new post is as asked", f"in c/{p['community']}", f"title {p['new_title']}",
                   f"text {p['body']}"),
                fg("engage", "The named post gets the vote and the comment", "upvoted", "commented on",
                   f"comment text {p['comment']}")]

    def oracle(self, app, p):
        return (open_community(p["community"]) + ["click('subscribe')", "click('community-submit')",
                 f"fill('submit-title-input', {p['new_title']!r})", f"fill('submit-body', {p['body']!r})",
                 "click('submit-go')"] + open_post(app, p["post_id"])
                + ["click('post-up')", f"fill('comment-body', {p['comment']!r})", "click('comment-submit')"])

    def parts(self, app, p):
        return [
            Part(("sub", "post"), ("subs", "posts"),
                 tuple(open_community(p["community"]) + ["click('subscribe')", "click('community-submit')",
                       f"fill('submit-title-input', {p['new_title']!r})", f"fill('submit-body', {p['body']!r})",
                       "click('submit-go')"]),
                 f"Join c/{p['community']}, then post a text post there titled “{p['new_title']}” with the text "
                 f"“{p['body']}”. Do nothing else.{approval_note(app, p)}"),
            Part(("engage",), ("votes", "comments"),
                 tuple(open_post(app, p["post_id"]) + ["click('post-up')", f"fill('comment-body', {p['comment']!r})",
                                                       "click('comment-submit')"]),
                 f"Upvote the post “{p['title']}” in c/{p['community']} and comment on it: {p['comment']}"),
        ]

    def effect(self, app, p, start):
        return Effect((V.subscription(p["user_id"], p["community_id"], p["community"], True),
                       V.new_post(p["user_id"], p["community_id"], "text", p["new_title"], body=p["body"],
                                  status=new_post_status(app, p)),
                       V.vote(p["user_id"], f"p{p['post_id']}", 1),
                       V.new_comment(p["user_id"], p["post_id"], p["comment"])))


# ============================================================================= multi-step (medium, hard)

class KeywordScoreGap(TaskTemplate):
    id = "forum/keyword_score_gap"
    kind = "info"
    title = "Search a community, sort by score and compare the two best posts"

    def sample(self, app, rng):
        for _ in range(500):
            p = pick_post(app, rng)
            words = [w for w in p["title"].replace("?", " ").replace(":", " ").split() if len(w) >= 5
                     and w.isalpha()]
            if not words:
                continue
            word = rng.choice(words).lower()
            res = app.world.search(word, community=p["community_id"], sort="top", limit=2)
            items = res["items"]
            if res["total"] >= 3 and items[0]["score"] > items[1]["score"] and unique_title(app, items[0]) \
                    and not guessable(cname(app, p["community_id"]), items[0]["score"] - items[1]["score"]) \
                    and unique_title(app, items[1]):
                a, b = items
                return {"user_id": pick_user(app, rng)["id"], "community": cname(app, p["community_id"]),
                        "community_id": p["community_id"], "word": word, "first": a["title"], "first_id": a["id"],
                        "first_score": a["score"], "second": b["title"], "second_id": b["id"],
                        "second_score": b["score"], "answer": a["score"] - b["score"]}
        raise RuntimeError("no keyword with two clearly ranked posts")

    def goal(self, app, p):
        return (f"Search c/{p['community']} for posts mentioning “{p['word']}”. How many more points does the "
                f"highest-scoring of them have than the second-highest? Answer with the number.")

    def facts(self, app, p):
        return [fg("filters", "The right posts are compared", f"keyword {p['word']}", f"community c/{p['community']}",
                   "sorted by top score"),
                fg("answer", "The gap between the two best posts is given",
                   f"the best two are {p['first']} ({plural(p['first_score'], 'point')}) and {p['second']} "
                   f"({plural(p['second_score'], 'point')})", f"the answer is {p['answer']}")]

    def oracle(self, app, p):
        return [f"fill('search-q', {p['word']!r})", "click('search-go')", f"fill('s-community', {p['community']!r})",
                "select_option('s-sort', 'top')", "click('s-go')", f"send_msg_to_user('{p['answer']}')"]

    def parts(self, app, p):
        return [results_part(self.facts(app, p)[0], self.oracle(app, p)[:-1],
                             f"Search c/{p['community']} for posts mentioning “{p['word']}”, highest score first.",
                             q=p["word"], community=p["community"], sort="top")]

    def effect(self, app, p, start):
        return answer("number", p["answer"], "score gap between the two best posts")


class MessagePostStats(TaskTemplate):
    id = "forum/message_post_stats"
    title = "Look up a post's numbers and quote them in a message to its author"

    def sample(self, app, rng):
        p = pick_post(app, rng, lambda x: x["score"] >= 2 and x["comment_count"] >= 2)
        u = pick_user(app, rng, lambda x: x["id"] != p["user_id"])
        return {"user_id": u["id"], **post_params(app, p), "to": uname(app, p["user_id"]), "to_id": p["user_id"],
                "score": p["score"], "count": p["comment_count"]}

    @staticmethod
    def subject(p):
        return f"Your post in c/{p['community']}"

    @staticmethod
    def note(p, score="N", count="M"):
        return f"Congratulations! Your post has {score} points and {count} comments."

    def goal(self, app, p):
        return (f"Find the post “{p['title']}” in c/{p['community']} and send its author a private message with "
                f"the subject “{self.subject(p)}” and the text: {self.note(p)} (put the post's current score for N "
                f"and its number of comments for M).")

    def facts(self, app, p):
        return [fg("lookup", "The post's numbers are found", f"author u/{p['to']}", f"score {p['score']}",
                   f"{p['count']} comments"),
                fg("message", "The message is sent", f"to u/{p['to']}", f"subject {self.subject(p)}",
                   f"text {self.note(p, p['score'], p['count'])}")]

    def oracle(self, app, p):
        return open_post(app, p["post_id"]) + [
            "click('post-author')", "click('profile-message')", f"fill('msg-subject', {self.subject(p)!r})",
            f"fill('msg-body', {self.note(p, p['score'], p['count'])!r})", "click('msg-send')"]

    def parts(self, app, p):
        # Looking the numbers up is opening the post (its page shows author, score and
        # comments, in any comment order); the message is the rest.
        lookup = self.facts(app, p)[0]
        return [view_part((FactGroup(lookup.id, "The post's page is open", lookup.facts),), f"/p/{p['post_id']}",
                          open_post(app, p["post_id"]),
                          f"Open the post “{p['title']}” in c/{p['community']}, where its author, score and number "
                          f"of comments show. Leave it open; send nothing yet.", free=("sort",))]

    def effect(self, app, p, start):
        return Effect((V.new_message(p["user_id"], p["to_id"], p["to"], self.subject(p),
                                     self.note(p, p["score"], p["count"])),))


class SaveWeekTopUpvote(TaskTemplate):
    id = "forum/save_week_top"
    title = "Join a community, save its top 3 posts of the week and upvote the most-commented one"

    def sample(self, app, rng):
        comms = app.world.communities()
        for _ in range(300):
            c = rng.choice(comms)
            tops = [app.world.list_posts([c["id"]], "top", now - WEEK, 4) for now in (START, START + 1200)]
            a, b = tops
            if len(a) < 3 or [x["id"] for x in a[:3]] != [x["id"] for x in b[:3]]:
                continue
            if any(len(t) == 4 and t[2]["score"] <= t[3]["score"] for t in tops):
                continue
            three = a[:3]
            counts = sorted((x["comment_count"] for x in three), reverse=True)
            if counts[0] == counts[1] or not all(unique_title(app, x) for x in three):
                continue
            best = max(three, key=lambda x: x["comment_count"])
            ids = [x["id"] for x in three]
            u = pick_user(app, rng, lambda x, c=c, best=best, ids=ids: c["id"] not in app.world.subscriptions(x["id"])
                          and app.world.vote(x["id"], "post", best["id"]) == 0
                          and not any(k == "post" and t in ids for k, t, _ in app.world.saved(x["id"])))
            return {"user_id": u["id"], "community": c["name"], "community_id": c["id"], "post_ids": ids,
                    "titles": [x["title"] for x in three], "best_id": best["id"], "best": best["title"]}
        raise RuntimeError("no community with a clear top 3 this week")

    def goal(self, app, p):
        return (f"Join c/{p['community']}, save the 3 top-scoring posts of the past week there, and upvote the one "
                f"of those 3 that has the most comments.")

    def facts(self, app, p):
        return [fg("find", "The week's top posts are found", f"community c/{p['community']}",
                   "sorted by top, past week", "the first 3"),
                fg("saved", "Each of the 3 is saved", *[f"“{t}” saved" for t in p["titles"]]),
                fg("vote", "The most-commented of them is upvoted", f"“{p['best']}” upvoted"),
                fg("sub", "The community is joined", f"subscribed to c/{p['community']}")]

    def oracle(self, app, p):
        return (open_community(p["community"]) + ["click('subscribe')", "click('sort-top')", "click('t-week')"]
                + [f"click('post-{i}-save')" for i in p["post_ids"]] + [f"click('post-{p['best_id']}-up')"])

    def parts(self, app, p):
        top = open_community(p["community"]) + ["click('sort-top')", "click('t-week')"]
        return [
            Part(("find", "saved"), ("saved",), tuple(top + [f"click('post-{i}-save')" for i in p["post_ids"]]),
                 f"Save the 3 top-scoring posts of the past week in c/{p['community']}. Do not vote and do not "
                 f"join the community."),
            Part(("find", "vote"), ("votes",), tuple(top + [f"click('post-{p['best_id']}-up')"]),
                 f"Of the 3 top-scoring posts of the past week in c/{p['community']}, upvote the one that has the "
                 f"most comments. Do not save anything and do not join the community."),
            Part(("sub",), ("subs",), tuple(open_community(p["community"]) + ["click('subscribe')"]),
                 f"Join c/{p['community']}."),
        ]

    def effect(self, app, p, start):
        return Effect((*(V.saved(p["user_id"], f"p{i}") for i in p["post_ids"]),
                       V.vote(p["user_id"], f"p{p['best_id']}", 1),
                       V.subscription(p["user_id"], p["community_id"], p["community"], True)))


class ModSpamSweep(TaskTemplate):
    id = "forum/mod_spam_sweep"
    title = "As a moderator, remove all of a spammer's posts in the community and ban them for good"

    def sample(self, app, rng):
        comms = app.world.communities()
        for _ in range(300):
            c = rng.choice(comms)
            mods = set(app.world.moderators(c["id"]))
            rows = app.world.query("SELECT user_id FROM posts WHERE community_id = ? GROUP BY user_id"
                                   " HAVING count(*) BETWEEN 2 AND 3 AND sum(status = 'live') = count(*)"
                                   " ORDER BY user_id", (c["id"],))
            cands = [r[0] for r in rows if r[0] not in mods and app.world.ban(c["id"], r[0]) is None]
            if not cands:
                continue
            uid = rng.choice(cands)
            posts = [r[0] for r in app.world.query("SELECT id FROM posts WHERE community_id = ? AND user_id = ?"
                                                   " ORDER BY id", (c["id"], uid))]
            return {"user_id": rng.choice(sorted(mods)), "community": c["name"], "community_id": c["id"],
                    "target": uname(app, uid), "target_id": uid, "post_ids": posts,
                    "titles": [app.world.post(i)["title"] for i in posts],
                    "reason": rng.choice(("Spam", "Self-promotion"))}
        raise RuntimeError("no user with a few posts in a community")

    def goal(self, app, p):
        return (f"I moderate c/{p['community']}. u/{p['target']} has been spamming it: remove every post "
                f"u/{p['target']} has made in c/{p['community']} (leave everyone else's posts alone), then ban "
                f"u/{p['target']} from c/{p['community']} permanently with the reason “{p['reason']}”.")

    def facts(self, app, p):
        return [fg("find", "The spammer's posts are found", f"author u/{p['target']}", f"community c/{p['community']}",
                   f"{len(p['post_ids'])} posts"),
                fg("remove", "Each of them is removed", *[f"“{t}” removed" for t in p["titles"]]),
                fg("ban", "The ban is in place as asked", f"u/{p['target']} banned from c/{p['community']}",
                   "permanent", f"reason {p['reason']}")]

    def oracle(self, app, p):
        # Removed posts leave the search results, so the search is run again for each one.
        plan: list[str] = []
        for i in p["post_ids"]:
            plan += ["click('search-go')", f"fill('s-author', {p['target']!r})",
                     f"fill('s-community', {p['community']!r})", "click('s-go')", f"click('post-{i}')",
                     "click('mod-remove')"]
        return plan + ["click('crumb-community')", "click('mod-tools')", f"fill('ban-username', {p['target']!r})",
                       "fill('ban-days', '0')", f"fill('ban-reason', {p['reason']!r})", "click('ban-submit')"]

    def parts(self, app, p):
        plan: list[str] = []
        for i in p["post_ids"]:
            plan += ["click('search-go')", f"fill('s-author', {p['target']!r})",
                     f"fill('s-community', {p['community']!r})", "click('s-go')", f"click('post-{i}')",
                     "click('mod-remove')"]
        ban = ["click('mod-tools')", f"fill('ban-username', {p['target']!r})", "fill('ban-days', '0')",
               f"fill('ban-reason', {p['reason']!r})", "click('ban-submit')"]
        return [
            Part(("find", "remove"), ("posts",), tuple(plan),
                 f"I moderate c/{p['community']}. u/{p['target']} has been spamming it: remove every post "
                 f"u/{p['target']} has made in c/{p['community']} (leave everyone else's posts alone). Do not ban "
                 f"anyone yet."),
            Part(("ban",), ("bans",), tuple(open_community(p["community"]) + ban),
                 f"I moderate c/{p['community']}. Ban u/{p['target']} from c/{p['community']} permanently with the "
                 f"reason “{p['reason']}”. Do not remove any post."),
        ]

    def effect(self, app, p, start):
        return Effect((*(Row("posts", i, {"status": eq("removed")}, label=f"post {i}") for i in p["post_ids"]),
                       *V.ban(p["user_id"], p["community_id"], p["target_id"], p["target"], 0, p["reason"])))


#: The spam that reaches a community's newest posts in the queue template: link posts to one
#: domain the goal names (titles no world post has).
SPAM_DOMAIN = "deals.example.biz"
_SPAM_TITLES = ("Cheap designer watches, 90% off today only", "Make $500 a day from home, click here",
                "Free gift cards for the first 100 visitors", "Lose 10 kilos in a week with this one trick")


class ModReviewQueue(TaskTemplate):
    """Members have just posted in a community the user moderates, some of it spam (links
    to one domain the goal names). Where the site's post_approval policy holds new posts,
    they wait in the community's approval queue: approve the others, remove the spam. Where
    it does not (today's site), they are listed already: remove the spam, leave the rest.
    The goal states which site it is; the posts are set up in the start state."""

    id = "forum/mod_review_queue"
    title = "As a moderator, deal with the community's new posts: approve the good ones, remove the spam"
    policies = ("post_approval",)

    def sample_with(self, app, rng, policy):
        c = rng.choice(app.world.communities())
        mods = set(app.world.moderators(c["id"]))
        m = rng.choice(sorted(mods))
        n_spam = rng.choice((1, 2))
        spam_titles = rng.sample(_SPAM_TITLES, n_spam)
        good_titles = rng.sample(_TITLES, 4 - n_spam)
        authors: list[int] = []
        while len(authors) < 4:
            u = pick_user(app, rng, lambda x: x["id"] not in mods and x["id"] not in authors
                          and app.world.ban(c["id"], x["id"]) is None)
            authors.append(u["id"])
        posts = [{"kind": "link", "title": t, "body": "", "url": f"https://{SPAM_DOMAIN}/offer/{rng.randint(100, 9999)}",
                  "spam": True} for t in spam_titles]
        for i, t in enumerate(good_titles):
            if i == 0:   # one good post is a link too: the rule is the domain, not the kind
                posts.append({"kind": "link", "title": t, "body": "",
                              "url": rng.choice(_DOMAINS) + str(rng.randint(1000, 99999)), "spam": False})
            else:
                posts.append({"kind": "text", "title": t, "body": rng.choice(_BODIES), "url": None, "spam": False})
        rng.shuffle(posts)
        top = app.world.max_id("posts")
        for i, (row, a) in enumerate(zip(posts, authors)):
            row.update(id=top + 1 + i, author_id=a, author=uname(app, a))
        return {"user_id": m, "community": c["name"], "community_id": c["id"], "posts": posts}

    def setup(self, app, state, p):
        """The members' posts, made in the hour before the episode starts: pending where the
        site holds new posts, live where it does not (as submit_post leaves them)."""
        rt = state["runtime"]
        status = "pending" if held(app, p) else "live"
        for i, x in enumerate(p["posts"]):
            rt["entities"].setdefault("posts", {})[str(x["id"])] = {
                "id": x["id"], "community_id": p["community_id"], "user_id": x["author_id"], "kind": x["kind"],
                "title": x["title"], "body": x["body"], "url": x["url"], "created": START - 600 * (len(p["posts"]) - i),
                "ups": 0, "downs": 0, "score": 0, "comment_count": 0, "locked": False, "pinned": False,
                "edited": None, "status": status}
        rt.setdefault("counters", {})["posts"] = rt.get("counters", {}).get("posts", 0) + len(p["posts"])

    def goal(self, app, p):
        if held(app, p):
            return (f"I moderate c/{p['community']}. On this site a member's new post waits in the community's "
                    f"approval queue until a moderator approves it. Go through the approval queue of "
                    f"c/{p['community']}: the posts linking to {SPAM_DOMAIN} are spam, remove them; approve every "
                    f"other post waiting there.")
        return (f"I moderate c/{p['community']}. On this site new posts are listed at once, without approval. "
                f"Among the newest posts in c/{p['community']}, the ones linking to {SPAM_DOMAIN} are spam: remove "
                f"them and leave the other posts up.")

    def facts(self, app, p):
        # One group: each waiting post's verdict is one decision of the same sweep (no part of
        # it is a task on its own to split off).
        if not held(app, p):
            return [fg("remove", "The spam posts are removed",
                       *[f"“{x['title']}” removed" for x in p["posts"] if x["spam"]])]
        return [fg("queue", "Each waiting post is approved, or removed as spam",
                   *[f"“{x['title']}” {'removed' if x['spam'] else 'approved'}" for x in p["posts"]])]

    def oracle(self, app, p):
        if held(app, p):
            return open_community(p["community"]) + ["click('mod-queue')"] + [
                f"click('{'reject' if x['spam'] else 'approve'}-{x['id']}')" for x in p["posts"]]
        plan: list[str] = []
        for x in p["posts"]:
            if x["spam"]:
                plan += open_community(p["community"]) + ["click('sort-new')", f"click('post-{x['id']}')",
                                                          "click('mod-remove')"]
        return plan

    def effect(self, app, p, start):
        keep = "live" if held(app, p) else None
        return Effect(tuple(Row("posts", x["id"], {"status": eq("removed" if x["spam"] else keep)},
                                label=f"post {x['id']}") for x in p["posts"] if x["spam"] or keep))


TASKS: list[TaskTemplate] = [
    TopPostThisWeek(), PostScore(), CommentCount(), UserJoined(), UserModerates(), AuthorMostComments(),
    KeywordTopYear(), UpvotePost(), DownvoteComment(), RemoveVote(), SubscribeMany(), Unsubscribe(), SavePost(),
    SubmitTextPost(), SubmitLinkPost(), ReplyToComment(), EditComment(), DeleteOwnPost(), SendMessage(),
    ModLockPost(), ModPinPost(), ModUnban(), ModRemoveComment(), ModBanUser(), ModCleanup(), RefuseDeleteOthersComment(), RefuseModerate(),
    JoinPostAndEngage(), KeywordScoreGap(), MessagePostStats(), SaveWeekTopUpvote(), ModSpamSweep(),
    ModReviewQueue(),
]
