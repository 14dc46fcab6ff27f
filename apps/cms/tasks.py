"""Simpress's task templates.

Each template draws its parameters from the world by seed, states a goal, lists WebGym
fact groups (their fact count sets the difficulty), gives an oracle plan of BrowserGym
actions that acts only on what the pages show, and declares its intended effect (see
simweb.effects); verifiers/cms.py holds the effect builders the templates share.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

from simweb.core.worlddb import day_to_date
from simweb.judging.decompose import Part, view_part
from simweb.judging.effects import Answer, Check, Effect, NewRow, Reason, Refusal, Row, eq, same_set, text
from simweb.judging.tasks import FactGroup, Rng, TaskTemplate, site_policy, world_memo
from simweb.judging.verify import match_numbers
from simweb.verifiers import cms as V

from .world import CATEGORIES, TAGS, search_terms


def fg(id_: str, description: str, *facts: str) -> FactGroup:
    return FactGroup(id_, description, tuple(facts))


# ----------------------------------------------------------------------------- sampling

def pick_post(app: Any, rng: Rng, need: Callable[[dict], bool], tries: int = 4000) -> dict:
    """A world post or page that satisfies ``need`` (drawn by id)."""
    top = app.world.max_id("posts")
    for _ in range(tries):
        p = app.world.post(rng.randint(1, top))
        if p is not None and need(p):
            return p
    raise RuntimeError("no post satisfies the task's needs")


@world_memo
def users_with(app: Any, *roles: str) -> list[dict]:
    return [u for u in app.world.users() if u["role"] in roles and u["active"]]


def pick_user(app: Any, rng: Rng, *roles: str) -> dict:
    return rng.choice(users_with(app, *roles))


def found_by_public_search(app: Any, p: dict) -> bool:
    """The post is on the first page of the public search for its title."""
    return p["id"] in _first_ids(app, None, p["title"])


def found_by_admin_search(app: Any, p: dict) -> bool:
    """The post is on the first page of the admin's post list searched by its title."""
    return p["id"] in _first_ids(app, p["kind"], p["title"])


@world_memo
def _first_ids(app: Any, kind: str | None, title: str) -> list[int]:
    """The first 20 world post ids searching ``title`` finds: among published posts and
    pages (``kind`` None, the public search) or among posts of ``kind`` (the admin list)."""
    if kind is None:
        return app.world.post_ids(status="published", terms=search_terms(title), limit=20)
    return app.world.post_ids(kind=kind, terms=search_terms(title), limit=20)


def public_search(title: str) -> str:
    return "/search?" + urlencode({"q": title})


def admin_search(title: str) -> str:
    return "/admin/posts?" + urlencode({"q": title})


def open_public(p: dict) -> list[str]:
    return [f"goto({public_search(p['title'])!r})", f"click('post-{p['id']}')"]


def open_admin(p: dict) -> list[str]:
    return [f"goto({admin_search(p['title'])!r})", f"click('edit-{p['id']}')"]


def display(app: Any, uid: int) -> str:
    return app.world.user(uid)["display_name"]


def unique_commenters(app: Any, pid: int, status: str) -> list[dict]:
    """Comments of a status on a post whose author name appears once on the post."""
    rows = app.world.comments_of(pid)
    names = [c["author_name"] for c in rows]
    return [c for c in rows if c["status"] == status and names.count(c["author_name"]) == 1]


_NEW_TITLES = ("Five lessons from our spring launch", "A quiet week in the newsroom", "How we test our checkout",
               "Notes from the design review", "Our new accessibility checklist", "What readers asked us in March",
               "Behind the scenes of the redesign", "A short history of our style guide",
               "Planning the autumn conference", "Why we moved our docs to plain text")
_NEW_BODIES = ("We wrote down what worked and what did not.", "This is a short update for our readers.",
               "Here is the plan, with dates and owners.", "Thanks to everyone who sent feedback.",
               "The full checklist is at the end of this post.")
_RENAMES = ("An updated guide", "The complete checklist", "Revised and expanded", "A second look",
            "What changed this year", "The short version")


# ============================================================================= information

class PostAuthor(TaskTemplate):
    id = "cms/post_author"
    kind = "info"
    title = "Find who wrote a published post"
    sign_in = False

    def sample(self, app, rng):
        p = pick_post(app, rng, lambda p: p["kind"] == "post" and p["status"] == "published"
                      and found_by_public_search(app, p))
        return {"post_id": p["id"], "post": p["title"], "author": display(app, p["author_id"])}

    def goal(self, app, p):
        return f"Who wrote the blog post “{p['post']}”? Answer with the author's name."

    def facts(self, app, p):
        return [fg("author", "The post is found and its author named", "the post is found",
                   f"the author is {p['author']}")]

    def oracle(self, app, p):
        post = app.world.post(p["post_id"])
        return open_public(post) + [f"send_msg_to_user({p['author']!r})"]

    def effect(self, app, p, start):
        return Effect(answer=Answer("text", p["author"], "post's author"))


class PublishDate(TaskTemplate):
    id = "cms/publish_date"
    kind = "info"
    title = "Look up when a post was published"
    sign_in = False

    def sample(self, app, rng):
        p = pick_post(app, rng, lambda p: p["kind"] == "post" and p["status"] == "published"
                      and found_by_public_search(app, p))
        return {"post_id": p["id"], "post": p["title"], "date": day_to_date(p["published_day"]).isoformat()}

    def goal(self, app, p):
        return f"On what date was the post “{p['post']}” published? Answer with the date."

    def facts(self, app, p):
        return [fg("date", "The publication date is read", f"published on {p['date']}")]

    def oracle(self, app, p):
        return open_public(app.world.post(p["post_id"])) + [f"send_msg_to_user({p['date']!r})"]

    def effect(self, app, p, start):
        from datetime import date
        return Effect(answer=Answer("date", date.fromisoformat(p["date"]), "publication date"))


class PostTags(TaskTemplate):
    id = "cms/post_tags"
    kind = "info"
    title = "List the tags of a post"
    sign_in = False

    def sample(self, app, rng):
        p = pick_post(app, rng, lambda p: p["kind"] == "post" and p["status"] == "published" and len(p["tags"]) >= 2
                      and found_by_public_search(app, p))
        return {"post_id": p["id"], "post": p["title"], "tags": sorted(TAGS[t - 1] for t in p["tags"])}

    def goal(self, app, p):
        return f"Which tags does the post “{p['post']}” have? List them all, separated by commas."

    def facts(self, app, p):
        return [fg("tags", "Every tag is listed", *[f"tag {t}" for t in p["tags"]])]

    def oracle(self, app, p):
        return open_public(app.world.post(p["post_id"])) + [f"send_msg_to_user({', '.join(p['tags'])!r})"]

    def effect(self, app, p, start):
        return Effect(answer=Answer("set", p["tags"], "post's tags"))


class CategoryTrioCount(TaskTemplate):
    id = "cms/category_trio_count"
    kind = "info"
    title = "Add up the published posts of three categories"
    sign_in = False

    def sample(self, app, rng):
        cats = sorted(rng.sample(range(1, len(CATEGORIES) + 1), 3))
        counts = [app.world.post_count(kind="post", status="published", category=c) for c in cats]
        return {"cats": cats, "names": [CATEGORIES[c - 1][0] for c in cats], "counts": counts, "total": sum(counts)}

    def goal(self, app, p):
        a, b, c = p["names"]
        return (f"How many published posts are there in the categories “{a}”, “{b}” and “{c}” together? "
                f"Answer with one number.")

    def facts(self, app, p):
        return [fg("counts", "Each category is counted", *[f"{n} in {name}" for n, name in zip(p["counts"], p["names"])]),
                fg("total", "The sum is given", f"{p['total']} in all")]

    def oracle(self, app, p):
        return [f"click('cat-{V.slug_of(name)}')" for name in p["names"]] + [f"send_msg_to_user('{p['total']}')"]

    def parts(self, app, p):
        # The smaller question: each category's count, before adding them up.
        a, b, c = p["names"]
        def each(app, start, final, answer):
            # read as a list of three ("3,4,5" is three numbers here, not 345)
            return match_numbers(answer, p["counts"]), f"expected {p['counts']} in that order, got {answer!r}"

        plan = [f"click('cat-{V.slug_of(name)}')" for name in p["names"]]
        return [Part(("counts",), (), tuple(plan + [f"send_msg_to_user({', '.join(map(str, p['counts']))!r})"]),
                     f"How many published posts are there in each of the categories “{a}”, “{b}” and “{c}”? Answer "
                     f"with the three numbers, in that order (no total yet).",
                     extra=lambda start: Effect(checks=(Check("the answer gives each category's count", each),)),
                     kind="info")]

    def effect(self, app, p, start):
        return Effect(answer=Answer("number", p["total"], "number of published posts"))


_SEARCH_WORDS = ("caching", "ranking", "dark", "uploads", "onboarding", "planning", "release", "palettes",
                 "indexes", "versioning", "budgets", "testing", "review", "programming", "navigation", "readers",
                 "layouts", "newsletter", "interviews", "pricing", "coffee", "sourdough", "walks", "trains",
                 "photography", "clubs", "meetings", "offices", "talks", "funding", "password", "login",
                 "backup", "static", "fonts", "validation", "flags", "pipelines", "privacy")
class NthSearchResult(TaskTemplate):
    id = "cms/nth_search_result"
    kind = "info"
    title = "Search the site and page through the results"
    sign_in = False

    def sample(self, app, rng):
        for _ in range(200):
            q = rng.choice(_SEARCH_WORDS)
            n = app.world.post_count(status="published", terms=search_terms(q))
            if n >= 21:
                k = rng.randint(2, min(n, 100))     # at most five pages of paging, on any world size
                ids = app.world.post_ids(status="published", terms=search_terms(q), limit=k)
                return {"q": q, "count": n, "k": k, "post_id": ids[-1], "answer": app.world.post(ids[-1])["title"]}
        raise RuntimeError("no search with several pages of results")

    def goal(self, app, p):
        return (f"Search the public site for “{p['q']}”. Counting from the top of the results (newest first), what "
                f"is the title of result number {p['k']}?")

    def facts(self, app, p):
        return [fg("search", "The search is run and paged", f"search for {p['q']}",
                   f"page {(p['k'] - 1) // 20 + 1} of the results"), fg("answer", "The result is named", p["answer"])]

    def oracle(self, app, p):
        return [f"goto({public_search(p['q'])!r})"] + ["click('page-next')"] * ((p["k"] - 1) // 20) + [
            f"send_msg_to_user({p['answer']!r})"]

    def effect(self, app, p, start):
        return Effect(answer=Answer("text", p["answer"], "result's title"))


class FirstRevisionTitle(TaskTemplate):
    id = "cms/first_revision_title"
    kind = "info"
    title = "Read a post's working title from its revision history"
    start_url = "/admin"

    def sample(self, app, rng):
        u = pick_user(app, rng, "author", "editor", "admin")
        p = pick_post(app, rng, lambda p: p["kind"] == "post" and p["revision_count"] >= 2
                      and found_by_admin_search(app, p))
        first = app.world.revisions(p["id"])[0]
        return {"user_id": u["id"], "post_id": p["id"], "post": p["title"], "rev_id": first["id"],
                "first": first["title"]}

    def goal(self, app, p):
        return (f"The post “{p['post']}” had a different working title when it was first saved. "
                f"What was the title in its first revision?")

    def facts(self, app, p):
        return [fg("find", "The revision history is opened", "the post is found in the admin",
                   "its revisions are listed", "revision 1 is opened"),
                fg("answer", "The first title is given", f"the first title was {p['first']}")]

    def oracle(self, app, p):
        post = app.world.post(p["post_id"])
        return open_admin(post) + ["click('revisions-link')", f"click('rev-{p['rev_id']}')",
                                   f"send_msg_to_user({p['first']!r})"]

    def parts(self, app, p):
        find = self.facts(app, p)[0]
        return [view_part((FactGroup(find.id, "The first revision is open", find.facts),),
                          f"/admin/posts/{p['post_id']}/revisions/{p['rev_id']}", self.oracle(app, p)[:-1],
                          f"In the admin, open the first revision of the post “{p['post']}” from its revision "
                          f"history. Leave it open; nothing else is needed yet.")]

    def effect(self, app, p, start):
        return Effect(answer=Answer("text", p["first"], "first revision's title"))


class NewestTagged(TaskTemplate):
    id = "cms/newest_tagged"
    kind = "info"
    title = "Find the newest published post of a category with a tag (admin filters)"
    start_url = "/admin"

    def sample(self, app, rng):
        for _ in range(400):
            c = rng.randint(1, len(CATEGORIES))
            t = rng.randint(1, len(TAGS))
            ids = app.world.post_ids(kind="post", status="published", category=c, tag=t, limit=2)
            if len(ids) >= 2:
                p = app.world.post(ids[0])
                return {"user_id": pick_user(app, rng, "author", "editor", "admin")["id"], "category_id": c,
                        "category": CATEGORIES[c - 1][0], "tag_id": t, "tag": TAGS[t - 1], "post_id": p["id"],
                        "answer": p["title"]}
        raise RuntimeError("no category and tag with two posts")

    def goal(self, app, p):
        return (f"Among the published posts in the category “{p['category']}” that have the tag “{p['tag']}”, "
                f"which one was published most recently? Answer with its title.")

    def facts(self, app, p):
        return [fg("filters", "The right posts are considered", f"category {p['category']}", f"tag {p['tag']}",
                   "published only"), fg("answer", "The newest is named", f"the answer is {p['answer']}")]

    def oracle(self, app, p):
        q = urlencode({"kind": "post", "status": "published", "category": p["category_id"], "tag": p["tag_id"]})
        return ["click('nav-posts')", f"goto('/admin/posts?{q}')", f"send_msg_to_user({p['answer']!r})"]

    def parts(self, app, p):
        q = urlencode({"kind": "post", "status": "published", "category": p["category_id"], "tag": p["tag_id"]})
        group = self.facts(app, p)[0]
        return [view_part((FactGroup(group.id, "The filtered post list is shown", group.facts),), f"/admin/posts?{q}",
                          self.oracle(app, p)[:-1],
                          f"In the admin's post list, show only the published posts in the category "
                          f"“{p['category']}” that have the tag “{p['tag']}”. Leave that list open; nothing else is "
                          f"needed yet.")]

    def effect(self, app, p, start):
        return Effect(answer=Answer("text", p["answer"], "newest post's title"))


# ============================================================================= single changes

def sample_pending_comment(app: Any, rng: Rng) -> dict:
    """An editor or admin and a pending comment by a unique commenter on a published post
    (the parameters ApproveComment and SpamComment share)."""
    u = pick_user(app, rng, "editor", "admin")
    for _ in range(2000):
        p = pick_post(app, rng, lambda p: p["kind"] == "post" and p["status"] == "published"
                      and found_by_admin_search(app, p))
        cands = unique_commenters(app, p["id"], "pending")
        if cands:
            c = rng.choice(cands)
            return {"user_id": u["id"], "post_id": p["id"], "post": p["title"], "comment_id": c["id"],
                    "name": c["author_name"]}
    raise RuntimeError("no pending comment")


class ApproveComment(TaskTemplate):
    id = "cms/approve_comment"
    title = "Approve a pending comment"
    start_url = "/admin"

    def sample(self, app, rng):
        return sample_pending_comment(app, rng)

    def goal(self, app, p):
        return f"Approve the comment that {p['name']} left on the post “{p['post']}”."

    def facts(self, app, p):
        return [fg("approved", "The comment is approved", f"{p['name']}'s comment is approved")]

    def oracle(self, app, p):
        return open_admin(app.world.post(p["post_id"])) + [f"click('approve-{p['comment_id']}')"]

    def effect(self, app, p, start):
        return V.comment_statuses({p["comment_id"]: "approved"})


class SpamComment(TaskTemplate):
    id = "cms/spam_comment"
    title = "Mark a pending comment as spam"
    start_url = "/admin"

    def sample(self, app, rng):
        return sample_pending_comment(app, rng)

    def goal(self, app, p):
        return f"The comment by {p['name']} on “{p['post']}” is spam. Mark it as spam."

    def facts(self, app, p):
        return [fg("spam", "The comment is marked as spam", f"{p['name']}'s comment is spam")]

    def oracle(self, app, p):
        return open_admin(app.world.post(p["post_id"])) + [f"click('spam-{p['comment_id']}')"]

    def effect(self, app, p, start):
        return V.comment_statuses({p["comment_id"]: "spam"})


# ----------------------------------------------------------------------------- public comments

_COMMENTERS = (("Rin Okabe", "rin.okabe@mail.test"), ("Noor Haddad", "noor.h@mail.test"),
               ("Jonas Weber", "jweber@mail.test"), ("Ama Mensah", "ama.mensah@mail.test"),
               ("Lucia Ortiz", "lucia.ortiz@mail.test"))
_COMMENTS = ("Thanks for writing this up, it answered my question.", "Could you share the slides from the talk?",
             "I tried the checklist on our own site and found two problems.", "Looking forward to the next part.",
             "A clear and useful summary, thank you.")


def commentable_post(app: Any, rng: Rng) -> dict:
    """A published post (not a page: pages take no comments) the public search finds."""
    return pick_post(app, rng, lambda p: p["kind"] == "post" and p["status"] == "published"
                     and found_by_public_search(app, p))


def queued(app: Any, p: dict) -> bool:
    """Whether a visitor's comment waits for moderation on the instance's site."""
    return bool(site_policy(app, p, "comment_moderation"))


def comment_plan(p: dict) -> list[str]:
    """Leave the instance's comment from the post's public page."""
    return [f"fill('comment-name', {p['name']!r})", f"fill('comment-email', {p['email']!r})",
            f"fill('comment-body', {p['body']!r})", "click('comment-submit')"]


def new_comment(p: dict, status: str) -> NewRow:
    return NewRow("comments", {"post_id": eq(p["post_id"]), "author_name": text(p["name"]),
                               "author_email": eq(p["email"].lower()), "body": text(p["body"]), "status": eq(status)},
                  label=f"{p['name']}'s comment on post {p['post_id']}, {status}")


class LeaveComment(TaskTemplate):
    """A visitor comments on a published post. Whether it waits for moderation or is
    published at once is the site's comment_moderation policy: the goal says which, and
    the comment must end in that status (pending, or approved and counted)."""

    id = "cms/leave_comment"
    title = "Leave a comment on a published post as a visitor"
    sign_in = False
    policies = ("comment_moderation",)

    def sample_with(self, app, rng, policy):
        post = commentable_post(app, rng)
        name, email = rng.choice(_COMMENTERS)
        return {"post_id": post["id"], "post": post["title"], "name": name, "email": email,
                "body": rng.choice(_COMMENTS)}

    def goal(self, app, p):
        site = ("Comments on this site wait for a moderator's approval before they appear: that is expected."
                if queued(app, p) else "Comments on this site are published at once.")
        return (f"Leave a comment on the post “{p['post']}” as {p['name']} (e-mail {p['email']}) saying: {p['body']} "
                f"({site})")

    def facts(self, app, p):
        return [fg("comment", "The comment is left as asked", f"on “{p['post']}”", f"by {p['name']}",
                   f"e-mail {p['email']}", f"text {p['body']}",
                   "awaiting moderation" if queued(app, p) else "published")]

    def oracle(self, app, p):
        return open_public({"id": p["post_id"], "title": p["post"]}) + comment_plan(p)

    def effect(self, app, p, start):
        return Effect((new_comment(p, "pending" if queued(app, p) else "approved"),))


class CommentAndPublish(TaskTemplate):
    """An editor comments on a published post under their own name and sees it published.
    The success condition is the same under both values of the comment_moderation policy
    (the comment approved, counted on the post), so the goal states none: where comments
    wait for moderation, the editor approves their own in the admin; where they do not,
    posting it is enough."""

    id = "cms/comment_and_publish"
    title = "As an editor, comment on a post and make sure the comment is published"
    policies = ("comment_moderation",)

    def sample_with(self, app, rng, policy):
        u = pick_user(app, rng, "editor", "admin")
        post = commentable_post(app, rng)
        return {"user_id": u["id"], "post_id": post["id"], "post": post["title"], "name": u["display_name"],
                "email": u["email"], "body": rng.choice(_COMMENTS)}

    def goal(self, app, p):
        return (f"Comment on the post “{p['post']}” under my name, {p['name']} (e-mail {p['email']}), saying: "
                f"{p['body']} Make sure the comment is published on the post's page, and change nothing else.")

    def facts(self, app, p):
        # one group: one comment row, left and published (its status is no separate piece of work to split off)
        return [fg("comment", "The comment is published as asked", f"on “{p['post']}”", f"by {p['name']}",
                   f"text {p['body']}", "published")]

    def oracle(self, app, p):
        plan = open_public({"id": p["post_id"], "title": p["post"]}) + comment_plan(p)
        if queued(app, p):
            # the visitor's form holds it; the editor approves it from the post's admin page,
            # reached through the site's admin link and its search (the new comment's id: the
            # first run-time comment's)
            cid = app.world.max_id("comments") + 1
            plan += ["click('nav-admin')"] + open_admin(app.world.post(p["post_id"])) + [f"click('approve-{cid}')"]
        return plan

    def effect(self, app, p, start):
        return Effect((new_comment(p, "approved"),))


class PublishInReview(TaskTemplate):
    id = "cms/publish_in_review"
    title = "Publish a post that is waiting in review"
    start_url = "/admin"

    def sample(self, app, rng):
        u = pick_user(app, rng, "editor", "admin")
        p = pick_post(app, rng, lambda p: p["kind"] == "post" and p["status"] == "review"
                      and found_by_admin_search(app, p))
        return {"user_id": u["id"], "post_id": p["id"], "post": p["title"]}

    def goal(self, app, p):
        return f"The post “{p['post']}” has been reviewed. Publish it now."

    def facts(self, app, p):
        return [fg("published", "The post is live", "status published")]

    def oracle(self, app, p):
        return open_admin(app.world.post(p["post_id"])) + ["click('publish')"]

    def effect(self, app, p, start):
        return V.post_fields(p["post_id"], status=eq("published"))


class SubmitForReview(TaskTemplate):
    id = "cms/submit_for_review"
    title = "Submit your own draft for review"
    start_url = "/admin"

    def sample(self, app, rng):
        p = pick_post(app, rng, lambda p: p["kind"] == "post" and p["status"] == "draft"
                      and app.world.user(p["author_id"])["role"] == "author"
                      and app.world.user(p["author_id"])["active"] and found_by_admin_search(app, p))
        return {"user_id": p["author_id"], "post_id": p["id"], "post": p["title"]}

    def goal(self, app, p):
        return f"Your draft “{p['post']}” is finished. Submit it for review."

    def facts(self, app, p):
        return [fg("review", "The draft is waiting in review", "status in review")]

    def oracle(self, app, p):
        return open_admin(app.world.post(p["post_id"])) + ["click('submit-review')"]

    def effect(self, app, p, start):
        return V.post_fields(p["post_id"], status=eq("review"))


class ArchivePost(TaskTemplate):
    id = "cms/archive_post"
    title = "Archive a published post"
    start_url = "/admin"

    def sample(self, app, rng):
        u = pick_user(app, rng, "editor", "admin")
        p = pick_post(app, rng, lambda p: p["status"] == "published" and found_by_admin_search(app, p))
        return {"user_id": u["id"], "post_id": p["id"], "post": p["title"], "kind_": p["kind"]}

    def goal(self, app, p):
        return f"The {p['kind_']} “{p['post']}” is out of date. Archive it."

    def facts(self, app, p):
        return [fg("archived", "It is archived", "status archived", "gone from the public site")]

    def oracle(self, app, p):
        post = app.world.post(p["post_id"])
        plan = open_admin(post)
        if post["kind"] == "page":
            plan = ["click('nav-pages')", f"goto('/admin/posts?{urlencode({'kind': 'page', 'q': post['title']})}')",
                    f"click('edit-{post['id']}')"]
        return plan + ["click('archive')"]

    def effect(self, app, p, start):
        return V.post_fields(p["post_id"], status=eq("archived"))


class RenamePost(TaskTemplate):
    id = "cms/rename_post"
    title = "Change a post's title"
    start_url = "/admin"

    def sample(self, app, rng):
        u = pick_user(app, rng, "editor", "admin")
        p = pick_post(app, rng, lambda p: p["kind"] == "post" and found_by_admin_search(app, p))
        new = f"{rng.choice(_RENAMES)}: {p['title'].split(':')[0].split(',')[0]}"
        return {"user_id": u["id"], "post_id": p["id"], "post": p["title"], "new": new}

    def goal(self, app, p):
        return f"Change the title of the post “{p['post']}” to “{p['new']}”."

    def facts(self, app, p):
        return [fg("title", "The title is changed", f"title {p['new']}")]

    def oracle(self, app, p):
        return open_admin(app.world.post(p["post_id"])) + [f"fill('title-input', {p['new']!r})", "click('save-post')"]

    def effect(self, app, p, start):
        return V.post_fields(p["post_id"], title=text(p["new"]))


class RestoreRevision(TaskTemplate):
    id = "cms/restore_revision"
    title = "Restore an earlier revision of a post"
    start_url = "/admin"

    def sample(self, app, rng):
        u = pick_user(app, rng, "editor", "admin")
        # An earlier revision whose title and content both differ from the post's now: one
        # that shares either would hold a fact at the start and pay progress for nothing.
        def differing(p: dict) -> list[dict]:
            return [r for r in app.world.revisions(p["id"])[:-1] if r["title"] != p["title"] and r["body"] != p["body"]]

        p = pick_post(app, rng, lambda p: p["kind"] == "post" and p["revision_count"] >= 2
                      and found_by_admin_search(app, p) and bool(differing(p)))
        r = rng.choice(differing(p))
        return {"user_id": u["id"], "post_id": p["id"], "post": p["title"], "rev_id": r["id"], "number": r["number"]}

    def goal(self, app, p):
        return f"Restore revision {p['number']} of the post “{p['post']}”."

    def facts(self, app, p):
        return [fg("find", "The right revision is chosen", "the revision history is opened",
                   f"revision {p['number']} is picked"),
                fg("restored", "The post is back to that revision", "its title is restored", "its content is restored")]

    def oracle(self, app, p):
        return open_admin(app.world.post(p["post_id"])) + ["click('revisions-link')", f"click('rev-{p['rev_id']}')",
                                                           "click('restore-revision')"]

    def effect(self, app, p, start):
        r = app.world.revision(p["rev_id"])
        return V.post_fields(p["post_id"], title=eq(r["title"]), body=eq(r["body"]))


class SchedulePost(TaskTemplate):
    id = "cms/schedule_post"
    title = "Schedule a post for publication"
    start_url = "/admin"

    def sample(self, app, rng):
        u = pick_user(app, rng, "editor", "admin")
        p = pick_post(app, rng, lambda p: p["kind"] == "post" and p["status"] in ("draft", "review")
                      and found_by_admin_search(app, p))
        day = rng.randint(2, 60)
        hour, minute = rng.randint(6, 20), rng.choice((0, 15, 30, 45))
        return {"user_id": u["id"], "post_id": p["id"], "post": p["title"], "date": day_to_date(day).isoformat(),
                "time": f"{hour:02d}:{minute:02d}", "at": day * 86400 + hour * 3600 + minute * 60,
                "status": p["status"]}

    def goal(self, app, p):
        return f"Schedule the post “{p['post']}” to be published automatically on {p['date']} at {p['time']}."

    def facts(self, app, p):
        return [fg("schedule", "The publication is scheduled", f"date {p['date']}", f"time {p['time']}",
                   "the post is not published before then", "the site will publish it by itself")]

    def oracle(self, app, p):
        return open_admin(app.world.post(p["post_id"])) + [
            f"fill('schedule-date', {p['date']!r})", f"fill('schedule-time', {p['time']!r})", "click('schedule-submit')"]

    def effect(self, app, p, start):
        return V.post_fields(p["post_id"], scheduled_at=eq(p["at"]))


class AddCategory(TaskTemplate):
    id = "cms/add_category"
    title = "Create a category"
    start_url = "/admin"

    _NAMES = ("Interviews", "Releases", "How-to", "Field notes", "Data", "Podcasts", "Reviews", "Research",
              "Events", "Careers", "Open source", "Accessibility")

    def sample(self, app, rng):
        u = pick_user(app, rng, "editor", "admin")
        return {"user_id": u["id"], "name": rng.choice(self._NAMES), "description": rng.choice(_NEW_BODIES)}

    def goal(self, app, p):
        return f"Add a new category called “{p['name']}” with the description “{p['description']}”."

    def facts(self, app, p):
        return [fg("category", "The category exists", f"name {p['name']}", f"description {p['description']}")]

    def oracle(self, app, p):
        return ["click('nav-categories')", f"fill('cat-name', {p['name']!r})",
                f"fill('cat-description', {p['description']!r})", "click('cat-submit')"]

    def effect(self, app, p, start):
        return Effect((NewRow("categories", {"name": text(p["name"]), "description": text(p["description"])},
                              label=f"category {p['name']}"),))


class AddMenuItem(TaskTemplate):
    id = "cms/add_menu_item"
    title = "Link a page from a menu"
    start_url = "/admin"

    def sample(self, app, rng):
        u = pick_user(app, rng, "editor", "admin")
        menu = rng.choice(app.world.menus())
        linked = {it["url"] for it in app.world.menu_items(menu["id"])}
        p = pick_post(app, rng, lambda p: p["kind"] == "page" and p["status"] == "published"
                      and f"/p/{p['id']}" not in linked and found_by_public_search(app, p))
        label = p["title"].split(":")[0][:30]
        return {"user_id": u["id"], "menu_id": menu["id"], "menu": menu["name"], "post_id": p["id"],
                "page": p["title"], "label": label}

    def goal(self, app, p):
        return f"Add an item labelled “{p['label']}” to the {p['menu']} menu that links to the page “{p['page']}”."

    def facts(self, app, p):
        return [fg("page", "The page's address is found", "the page is found on the site"),
                fg("item", "The menu item is added", f"in the {p['menu']} menu", f"label {p['label']}",
                   f"links to /p/{p['post_id']}")]

    def oracle(self, app, p):
        return ["click('nav-site')", f"goto({public_search(p['page'])!r})", "click('nav-admin')", "click('nav-menus')",
                f"click('menu-{p['menu_id']}')", f"fill('item-label', {p['label']!r})",
                f"fill('item-url', '/p/{p['post_id']}')", "click('item-add')"]

    def parts(self, app, p):
        # Finding the page's address is opening the page (its address is then in the bar).
        return [view_part(("page",), f"/p/{p['post_id']}",
                          ["click('nav-site')", f"goto({public_search(p['page'])!r})", f"click('post-{p['post_id']}')"],
                          f"Find the page “{p['page']}” on the public site and open it. Leave it open; do not "
                          f"change any menu yet.")]

    def effect(self, app, p, start):
        return Effect((NewRow("menu_items", {"menu_id": eq(p["menu_id"]), "label": text(p["label"]),
                                             "url": V.links_to(f"/p/{p['post_id']}")}, label="the menu item"),))


class EditMediaAlt(TaskTemplate):
    id = "cms/edit_media_alt"
    title = "Set the alternative text of an image"
    start_url = "/admin"

    _ALTS = ("Two people at a whiteboard", "A laptop on a wooden desk", "The city skyline at dusk",
             "A cup of coffee next to a notebook", "The team at the spring meetup", "A bar chart of monthly visits")

    def sample(self, app, rng):
        u = pick_user(app, rng, "editor", "admin")
        for _ in range(500):
            m = app.world.media_item(rng.randint(1, app.world.max_id("media")))
            if m["mime"].startswith("image/"):
                return {"user_id": u["id"], "media_id": m["id"], "filename": m["filename"], "alt": rng.choice(self._ALTS)}
        raise RuntimeError("no image")

    def goal(self, app, p):
        return f"Set the alternative text of the image {p['filename']} to “{p['alt']}”."

    def facts(self, app, p):
        return [fg("alt", "The alternative text is saved", f"alt text {p['alt']}")]

    def oracle(self, app, p):
        return ["click('nav-media')", f"goto('/admin/media?{urlencode({'q': p['filename']})}')",
                f"click('media-{p['media_id']}')", f"fill('media-alt-input', {p['alt']!r})", "click('media-save')"]

    def effect(self, app, p, start):
        return Effect((Row("media", p["media_id"], {"alt_text": text(p["alt"])}, label=p["filename"]),))


class ChangeUserRole(TaskTemplate):
    id = "cms/change_user_role"
    title = "Change a user's role"
    start_url = "/admin"

    def sample(self, app, rng):
        admin = pick_user(app, rng, "admin")
        u = rng.choice([x for x in users_with(app, "author", "editor") if x["id"] != admin["id"]])
        new = "editor" if u["role"] == "author" else rng.choice(["author", "admin"])
        return {"user_id": admin["id"], "target_id": u["id"], "username": u["username"], "role": new}

    def goal(self, app, p):
        word = {"editor": "an Editor", "author": "an Author", "admin": "an Administrator"}[p["role"]]
        return f"Make the user {p['username']} {word}."

    def facts(self, app, p):
        return [fg("role", "The role is changed", f"{p['username']} has the {p['role']} role")]

    def oracle(self, app, p):
        return ["click('nav-users')", f"goto('/admin/users?{urlencode({'q': p['username']})}')",
                f"click('user-{p['target_id']}')", f"select_option('role-select', {p['role']!r})", "click('role-submit')"]

    def effect(self, app, p, start):
        return Effect((Row("users", p["target_id"], {"role": eq(p["role"])}, label=p["username"]),))


class CreateUser(TaskTemplate):
    id = "cms/create_user"
    title = "Add a staff account"
    start_url = "/admin"

    _PEOPLE = (("Mira", "Castell"), ("Tobias", "Ferne"), ("Ines", "Okoro"), ("Pavel", "Lund"), ("June", "Arden"),
               ("Rafael", "Quinto"), ("Elif", "Saran"), ("Noah", "Vance"))

    def sample(self, app, rng):
        admin = pick_user(app, rng, "admin")
        first, last = rng.choice(self._PEOPLE)
        n = rng.randint(10, 99)
        username = f"{first.lower()}.{last.lower()}{n}"
        return {"user_id": admin["id"], "username": username, "email": f"{first.lower()}{n}@newsroom.test",
                "name": f"{first} {last}", "role": rng.choice(["author", "editor"]),
                "password": f"Welcome-{rng.randint(1000, 9999)}"}

    def goal(self, app, p):
        return (f"Create an account for {p['name']}: username {p['username']}, email {p['email']}, "
                f"role {p['role']}, initial password {p['password']}.")

    def facts(self, app, p):
        return [fg("account", "The account exists as asked", f"username {p['username']}", f"email {p['email']}",
                   f"name {p['name']}", f"role {p['role']}", "the given password")]

    def oracle(self, app, p):
        return ["click('nav-users')", "click('new-user')", f"fill('nu-username', {p['username']!r})",
                f"fill('nu-email', {p['email']!r})", f"fill('nu-name', {p['name']!r})",
                f"select_option('nu-role', {p['role']!r})", f"fill('nu-password', {p['password']!r})",
                "click('nu-submit')"]

    def effect(self, app, p, start):
        return Effect((NewRow("users", {"username": eq(p["username"]), "email": eq(p["email"]),
                                        "display_name": text(p["name"]), "role": eq(p["role"]),
                                        "password": eq(p["password"]), "active": eq(True)},
                              label=f"account {p['username']}"),))


class WritePost(TaskTemplate):
    id = "cms/write_post"
    title = "Write a post with a category and tags and submit it for review"
    start_url = "/admin"

    def sample(self, app, rng):
        u = pick_user(app, rng, "author")
        c = rng.randint(1, len(CATEGORIES))
        tags = sorted(rng.sample(range(1, len(TAGS) + 1), 2))
        return {"user_id": u["id"], "title": rng.choice(_NEW_TITLES), "body": rng.choice(_NEW_BODIES),
                "category_id": c, "category": CATEGORIES[c - 1][0], "tag_ids": tags, "tags": [TAGS[t - 1] for t in tags]}

    def goal(self, app, p):
        return (f"Write a new post titled “{p['title']}” with the text “{p['body']}”, file it under "
                f"“{p['category']}”, tag it “{p['tags'][0]}” and “{p['tags'][1]}”, and submit it for review.")

    def facts(self, app, p):
        return [fg("content", "The post has the asked content", f"title {p['title']}", f"text {p['body']}"),
                fg("taxonomy", "It is filed and tagged", f"category {p['category']}", f"tags {', '.join(p['tags'])}"),
                fg("review", "It is waiting in review", "status in review")]

    def oracle(self, app, p):
        return ["click('nav-new-post')", f"fill('title-input', {p['title']!r})", f"fill('body-input', {p['body']!r})",
                f"select_option('category-select', {p['category']!r})"] + [
            f"check('tag-box-{t}')" for t in p["tag_ids"]] + ["click('save-draft')", "click('submit-review')"]

    def effect(self, app, p, start):
        return Effect((NewRow("posts", {"kind": eq("post"), "title": text(p["title"]), "body": text(p["body"]),
                                        "category_id": eq(p["category_id"]), "tags": same_set(p["tag_ids"]),
                                        "status": eq("review"), "author_id": eq(p["user_id"])},
                              label="the new post"),))


# ============================================================================= refusals with feasible twins

#: A refusal that blames the account's rights ("I am not allowed", "my role cannot").
_LACKS_ROLE = ("~permission", "~not allowed", "~allowed to", "~rights", "~privilege*", "~access", "~my role",
               "~your role", "~role does not", "~role doesn't", "~role cannot", "~role can't", "~role only")


class PublishOrRefuse(TaskTemplate):
    id = "cms/publish_or_refuse"
    kind = "mixed"
    may_refuse = True
    title = "Publish a reviewed post, or say that your role cannot"
    start_url = "/admin"

    def sample(self, app, rng):
        feasible = rng.chance(0.5)
        p = pick_post(app, rng, lambda p: p["kind"] == "post" and p["status"] == "review"
                      and found_by_admin_search(app, p))
        u = pick_user(app, rng, "editor", "admin") if feasible else pick_user(app, rng, "author")
        return {"user_id": u["id"], "post_id": p["id"], "post": p["title"], "feasible": feasible}

    def goal(self, app, p):
        return (f"Publish the post “{p['post']}”, which is waiting in review. If your account is not allowed "
                f"to publish, tell me why instead of changing anything.")

    def facts(self, app, p):
        if p["feasible"]:
            return [fg("published", "The post is published", "status published")]
        return [fg("refusal", "The agent sees the role limit and refuses", "authors cannot publish", "nothing changes")]

    def oracle(self, app, p):
        plan = open_admin(app.world.post(p["post_id"]))
        if p["feasible"]:
            return plan + ["click('publish')"]
        return plan + ["report_infeasible('My role is Author; only editors and administrators can publish.')"]

    def effect(self, app, p, start):
        if p["feasible"]:
            return V.post_fields(p["post_id"], status=eq("published"))
        why = Reason("authors cannot publish", _LACKS_ROLE + ("author", "editor*", "admin*"),
                     ("draft", "already published", "~not in review", "~not ready", "scheduled", "~not found",
                      "~doesn't exist", "~does not exist", "locked", "archived", "deleted", "trash*"))
        return Effect(refusal=Refusal(evidence=(f"/admin/posts/{p['post_id']}",), reason=why))


class RetitleOwnOrRefuse(TaskTemplate):
    id = "cms/retitle_own_or_refuse"
    kind = "mixed"
    may_refuse = True
    title = "Retitle your own post, or say that authors cannot edit it any more"
    start_url = "/admin"

    def sample(self, app, rng):
        feasible = rng.chance(0.5)
        want = ("draft",) if feasible else ("review", "published")
        p = pick_post(app, rng, lambda p: p["kind"] == "post" and p["status"] in want
                      and app.world.user(p["author_id"])["role"] == "author"
                      and app.world.user(p["author_id"])["active"] and found_by_admin_search(app, p))
        new = f"{rng.choice(_RENAMES)}: {p['title'].split(':')[0].split(',')[0]}"
        return {"user_id": p["author_id"], "post_id": p["id"], "post": p["title"], "new": new, "feasible": feasible}

    def goal(self, app, p):
        return (f"Rename your post “{p['post']}” to “{p['new']}”. If the site does not let you edit it, tell me "
                f"why instead of changing anything.")

    def facts(self, app, p):
        if p["feasible"]:
            return [fg("title", "The title is changed", f"title {p['new']}")]
        return [fg("refusal", "The agent sees the post is locked for authors", "only drafts are editable",
                   "nothing changes")]

    def oracle(self, app, p):
        plan = open_admin(app.world.post(p["post_id"]))
        if p["feasible"]:
            return plan + [f"fill('title-input', {p['new']!r})", "click('save-post')"]
        return plan + ["report_infeasible('Authors can only edit their own drafts, and this post is no longer a draft.')"]

    def effect(self, app, p, start):
        if p["feasible"]:
            return V.post_fields(p["post_id"], title=text(p["new"]))
        status = app.world.post(p["post_id"])["status"]
        now = {"review": ("review", "pending", "submitted"), "published": ("published", "live")}[status]
        then = {"review": ("published", "live"), "published": ("review", "pending", "submitted")}[status]
        why = Reason(f"the post is no longer a draft ({status})", ("~draft*", "locked") + now,
                     then + ("~not your", "~isn't yours", "~not mine", "someone else", "another author", "belongs to",
                             "written by", "~not found", "~doesn't exist", "~does not exist", "too long", "archived",
                             "deleted", "trash*"))
        return Effect(refusal=Refusal(evidence=(f"/admin/posts/{p['post_id']}",), reason=why))


class PromoteOrRefuse(TaskTemplate):
    id = "cms/promote_or_refuse"
    kind = "mixed"
    may_refuse = True
    title = "Make a user an editor, or say that only administrators can"
    start_url = "/admin"

    def sample(self, app, rng):
        feasible = rng.chance(0.5)
        me = pick_user(app, rng, "admin") if feasible else pick_user(app, rng, "editor")
        u = rng.choice([x for x in users_with(app, "author") if x["id"] != me["id"]])
        return {"user_id": me["id"], "target_id": u["id"], "username": u["username"], "feasible": feasible}

    def goal(self, app, p):
        return (f"Give the user {p['username']} the Editor role. If you do not have the rights to manage users, "
                f"tell me why instead.")

    def facts(self, app, p):
        if p["feasible"]:
            return [fg("role", "The role is changed", f"{p['username']} is an editor")]
        return [fg("refusal", "The agent finds it cannot manage users", "only administrators manage users",
                   "nothing changes")]

    def oracle(self, app, p):
        if p["feasible"]:
            return ["click('nav-users')", f"goto('/admin/users?{urlencode({'q': p['username']})}')",
                    f"click('user-{p['target_id']}')", "select_option('role-select', 'editor')", "click('role-submit')"]
        return ["click('nav-users')", "report_infeasible('Only administrators can manage users; I am an editor.')"]

    def effect(self, app, p, start):
        if p["feasible"]:
            return Effect((Row("users", p["target_id"], {"role": eq("editor")}, label=p["username"]),))
        why = Reason("only administrators manage users", _LACKS_ROLE + ("admin*", "~editor"),
                     ("already an editor", "already has", "already is", "~not found", "~doesn't exist",
                      "~does not exist", "~no such user", "inactive", "deactivated", "disabled", "suspended", "banned",
                      "locked"))
        return Effect(refusal=Refusal(evidence=("/admin/users",), reason=why))


# ============================================================================= multi-goal

class WrapUpPost(TaskTemplate):
    id = "cms/wrap_up_post"
    title = "Moderate a post's comments, retag and refile it, then archive it"
    start_url = "/admin"

    def sample(self, app, rng):
        u = pick_user(app, rng, "editor", "admin")
        for _ in range(3000):
            p = pick_post(app, rng, lambda p: p["kind"] == "post" and p["status"] == "published"
                          and found_by_admin_search(app, p))
            pending = [c for c in app.world.comments_of(p["id"]) if c["status"] == "pending"]
            names = [c["author_name"] for c in app.world.comments_of(p["id"])]
            if len(pending) >= 2 and all(names.count(c["author_name"]) == 1 for c in pending):
                tag = rng.choice([t for t in range(1, len(TAGS) + 1) if t not in p["tags"]])
                cat = rng.choice([c for c in range(1, len(CATEGORIES) + 1) if c != p["category_id"]])
                return {"user_id": u["id"], "post_id": p["id"], "post": p["title"],
                        "comment_ids": [c["id"] for c in pending], "names": [c["author_name"] for c in pending],
                        "tag_id": tag, "tag": TAGS[tag - 1], "category_id": cat, "category": CATEGORIES[cat - 1][0]}
        raise RuntimeError("no post with two pending comments")

    def goal(self, app, p):
        return (f"Wrap up the post “{p['post']}”: approve all of its pending comments, add the tag “{p['tag']}”, "
                f"move it to the category “{p['category']}”, and then archive it.")

    def facts(self, app, p):
        return [fg("comments", "Every pending comment is approved", *[f"{n}'s comment approved" for n in p["names"]]),
                fg("taxonomy", "It is retagged and refiled", f"tag {p['tag']} added", "its other tags kept",
                   f"category {p['category']}"),
                fg("archived", "It is archived", "status archived", "gone from the public site")]

    def oracle(self, app, p):
        return open_admin(app.world.post(p["post_id"])) + [f"click('approve-{c}')" for c in p["comment_ids"]] + [
            f"check('tag-box-{p['tag_id']}')", f"select_option('category-select', {p['category']!r})",
            "click('save-post')", "click('archive')"]

    def parts(self, app, p):
        there = open_admin(app.world.post(p["post_id"]))
        return [
            Part(("comments",), ("comments",), tuple(there + [f"click('approve-{c}')" for c in p["comment_ids"]]),
                 f"Approve all of the pending comments of the post “{p['post']}”. Change nothing else."),
            Part(("taxonomy",), ("posts.tags", "posts.category_id"),
                 tuple(there + [f"check('tag-box-{p['tag_id']}')",
                                f"select_option('category-select', {p['category']!r})", "click('save-post')"]),
                 f"Add the tag “{p['tag']}” to the post “{p['post']}” and move it to the category "
                 f"“{p['category']}”. Keep it published and change nothing else."),
            Part(("archived",), ("posts.status",), tuple(there + ["click('archive')"]),
                 f"Archive the post “{p['post']}”. Change nothing else."),
        ]

    def effect(self, app, p, start):
        post = app.world.post(p["post_id"])
        return V.comment_statuses({c: "approved" for c in p["comment_ids"]}) + V.post_fields(
            p["post_id"], tags=same_set(post["tags"] + [p["tag_id"]]), category_id=eq(p["category_id"]),
            status=eq("archived"))


class RescueDraft(TaskTemplate):
    id = "cms/rescue_draft"
    title = "Restore a draft's first revision, tag it and publish it"
    start_url = "/admin"

    def sample(self, app, rng):
        u = pick_user(app, rng, "editor", "admin")
        p = pick_post(app, rng, lambda p: p["kind"] == "post" and p["status"] in ("draft", "review")
                      and p["revision_count"] >= 2 and found_by_admin_search(app, p))
        r = app.world.revisions(p["id"])[0]
        tag = rng.choice([t for t in range(1, len(TAGS) + 1) if t not in p["tags"]])
        return {"user_id": u["id"], "post_id": p["id"], "post": p["title"], "rev_id": r["id"], "tag_id": tag,
                "tag": TAGS[tag - 1]}

    def goal(self, app, p):
        return (f"The post “{p['post']}” went wrong after its first save. Restore its first revision, add the tag "
                f"“{p['tag']}”, and publish it.")

    def facts(self, app, p):
        return [fg("revision", "The first revision is back", "the revision history is opened", "revision 1 is picked",
                   "its title is restored", "its content is restored"),
                fg("tag", "The tag is added", f"tag {p['tag']}", "its other tags kept"),
                fg("published", "It is live", "status published")]

    def oracle(self, app, p):
        return open_admin(app.world.post(p["post_id"])) + [
            "click('revisions-link')", f"click('rev-{p['rev_id']}')", "click('restore-revision')",
            f"check('tag-box-{p['tag_id']}')", "click('save-post')", "click('publish')"]

    def parts(self, app, p):
        there = open_admin(app.world.post(p["post_id"]))
        return [
            Part(("revision",), ("posts.title", "posts.body"),
                 tuple(there + ["click('revisions-link')", f"click('rev-{p['rev_id']}')", "click('restore-revision')"]),
                 f"The post “{p['post']}” went wrong after its first save. Restore its first revision; do not "
                 f"publish it and change nothing else."),
            Part(("tag",), ("posts.tags",), tuple(there + [f"check('tag-box-{p['tag_id']}')", "click('save-post')"]),
                 f"Add the tag “{p['tag']}” to the post “{p['post']}”. Do not publish it and change nothing else."),
        ]

    def effect(self, app, p, start):
        post = app.world.post(p["post_id"])
        r = app.world.revision(p["rev_id"])
        return V.post_fields(p["post_id"], title=eq(r["title"]), body=eq(r["body"]),
                             tags=same_set(post["tags"] + [p["tag_id"]]), status=eq("published"))


TASKS: list[TaskTemplate] = [
    PostAuthor(), PublishDate(), PostTags(), CategoryTrioCount(), NthSearchResult(), FirstRevisionTitle(), NewestTagged(),
    ApproveComment(), SpamComment(), LeaveComment(), CommentAndPublish(), PublishInReview(), SubmitForReview(), ArchivePost(), RenamePost(),
    RestoreRevision(), SchedulePost(), AddCategory(), AddMenuItem(), EditMediaAlt(), ChangeUserRole(), CreateUser(),
    WritePost(), PublishOrRefuse(), RetitleOwnOrRefuse(), PromoteOrRefuse(), WrapUpPost(), RescueDraft(),
]
