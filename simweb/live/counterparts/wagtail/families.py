"""The cms:wagtail portable families: simweb cms templates whose instances exist in the
seeded Wagtail site too (same titles, authors, dates and roles).

=================  ========  =============================  =========================================
family             kind      simweb template                live effect read from Wagtail's database
=================  ========  =============================  =========================================
post_author        info      cms/post_author                the answer is the page owner's full name
publish_date       search    cms/publish_date               the answer is the post's date (found
                                                            through the public search)
rename_draft       form      cms/rename_post (draft seeds)  the draft's title (``draft_title`` and
                                                            the latest revision) is the new title
publish_review     flow      cms/publish_in_review          the page is live with its reviewed
                                                            revision; its moderation is closed
submit_review      flow      cms/submit_for_review          one open moderation of the draft,
                                                            requested by its author; not live
archive_unpublish  flow      cms/archive_post (posts)       the page is no longer live (Wagtail has
                                                            no archive: Unpublish), title kept
refuse_publish     refusal   cms/publish_or_refuse          refused by an author (Editors group, no
                             (infeasible seeds)             publish permission); the page is still
                                                            in moderation, not live
=================  ========  =============================  =========================================

One list of semantic steps solves an instance on both sides: simweb's admin search box is
"Search posts", Wagtail's "Search"; simweb's save button "Save changes", Wagtail's "Save
draft"; Wagtail keeps a reviewer's "Approve and Publish" in the editor's "More actions"
menu, a step simweb lacks (``optional``). Instances are the template's seeds whose post
title is unique in the world (the script opens a search result by its exact title).
"""
from __future__ import annotations

import json
import re
from datetime import date
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
    fitting_seeds,
    guard,
    refusal_check,
    verdict,
)

if TYPE_CHECKING:  # pragma: no cover
    from ..base import Counterpart

PAIR = "cms:wagtail"
#: Seeds tried per family before giving up on finding ``n`` acceptable instances.
MAX_SEEDS = 400

#: Page kinds of each side's URLs (for the runner's divergence classes).
PAGE_KINDS = {
    "sim": [(r"^/search", "search"), (r"^/p/\d+", "post"), (r"^/admin/posts/\d+", "editor"),
            (r"^/admin/posts", "admin-list"), (r"^/admin/?$", "dashboard"), (r"^/?$", "home")],
    "live": [(r"^/search", "search"), (r"^/admin/pages/search", "admin-list"), (r"^/admin/pages/\d+/edit", "editor"),
             (r"^/admin/pages/\d+/?$", "admin-list"),
             (r"^/admin/pages/\d+/unpublish", "confirm"), (r"^/admin/?$", "dashboard"), (r"^/admin/", "admin-other"),
             (r"^/?$", "home"), (r"^/[a-z0-9-]+/?$", "post")],
}
#: Wagtail's changes in simweb's terms (for the runner's "state change" divergences).
STATE_MAP = {
    "wagtailcore_page.live": "posts.status", "wagtailcore_page.live_revision_id": "posts.status",
    "wagtailcore_page.has_unpublished_changes": "posts.status", "wagtailcore_workflowstate": "posts.status",
    "wagtailcore_workflowstate.status": "posts.status", "wagtailcore_taskstate": "posts.status",
    "wagtailcore_taskstate.status": "posts.status", "wagtailcore_taskstate.finished_at": "posts.status",
    "wagtailcore_taskstate.finished_by_id": "posts.status",
    "wagtailcore_page.draft_title": "posts.title", "wagtailcore_page.title": "posts.title",
    "wagtailcore_page.first_published_at": "posts.published_day",
    "wagtailcore_page.last_published_at": "posts.published_day",
    "wagtailcore_page.latest_revision_created_at": "posts.updated_day",
    "wagtailcore_revision": "revisions", "wagtailcore_page.latest_revision_id": "posts.revision_count",
    "blog_blogpage.body": "posts.body",
}


@lru_cache(maxsize=1)
def _app() -> Any:
    from . import cms_app

    return cms_app()


@lru_cache(maxsize=1)
def _title_counts() -> dict[str, int]:
    w = _app().world
    counts: dict[str, int] = {}
    for pid in range(1, w.max_id("posts") + 1):
        post = w.post(pid)
        if post is not None:
            counts[post["title"]] = counts.get(post["title"], 0) + 1
    return counts


def unique_title(title: str) -> bool:
    """No other post or page of the world has this title."""
    return _title_counts().get(title, 0) == 1


def _exact(text: str) -> re.Pattern[str]:
    return re.compile(r"^\s*" + re.escape(text) + r"\s*$", re.I)


# ----------------------------------------------------------------------------- database reads

def page_row(conn: Any, slug: str) -> dict | None:
    """The blog page with this slug (Wagtail's page row)."""
    row = conn.execute("SELECT * FROM wagtailcore_page WHERE slug = ? AND depth = 3", (slug,)).fetchone()
    return None if row is None else dict(row)


def latest_revision(conn: Any, page: dict) -> dict:
    """The content of the page's latest revision (what the editor shows)."""
    rid = page.get("latest_revision_id")
    row = None if rid is None else conn.execute("SELECT content FROM wagtailcore_revision WHERE id = ?",
                                                (rid,)).fetchone()
    return {} if row is None else json.loads(row["content"])


def workflow_status(conn: Any, page: dict) -> str | None:
    """The status of the page's newest moderation (workflow state), None if it never had one."""
    row = conn.execute("SELECT status FROM wagtailcore_workflowstate WHERE base_content_type_id IS NOT NULL "
                       "AND object_id = ? ORDER BY id DESC LIMIT 1", (str(page["id"]),)).fetchone()
    return None if row is None else row["status"]



def _page_claims(page_id: int, fields: tuple[str, ...]) -> list[str]:
    return [f"wagtailcore_page.{page_id}.{f}" for f in fields]


# ----------------------------------------------------------------------------- steps

def _steps() -> Any:
    from ....agents import scripted

    return scripted


SEARCH_BOX = re.compile(r"^search", re.I)


def public_search(title: str) -> list:
    """Search the public site for the title and open the post from the results."""
    s = _steps()
    return [s.Fill("textbox", SEARCH_BOX, text=title), s.Press("textbox", SEARCH_BOX, key="Enter"),
            s.Click("link", _exact(title))]


def admin_open(title: str) -> list:
    """From the admin's start page, search the posts for the title and open its editor
    (simweb: the header's "Search posts"; Wagtail: the sidebar's "Search")."""
    s = _steps()
    return [s.Fill("textbox", SEARCH_BOX, text=title), s.Press("textbox", SEARCH_BOX, key="Enter"),
            s.Click("link", _exact(title))]


# ----------------------------------------------------------------------------- families

class CmsFamily(PortableFamily):
    """A cms:wagtail family: the template's seeds whose post fits, signed in as its user."""

    live_path: ClassVar[str] = "/admin/"

    def fits(self, params: dict) -> bool:
        return unique_title(params["post"])

    def instances(self, n: int) -> list[Instance]:
        out: list[Instance] = []
        w = _app().world
        for seed, goal, p in fitting_seeds("cms", self.sim_task, n, MAX_SEEDS, self.fits):
            post = w.post(p["post_id"])
            p["slug"] = post["slug"]
            p["post_ids"] = [p["post_id"]]
            uid = p.get("user_id")
            p["username"] = w.user(uid)["username"] if uid is not None else None
            out.append(Instance(self.id, len(out), self.sim_task, seed, goal, p["username"], p))
        return out

    def live_start(self, inst: Instance) -> str:
        from . import INSTANCES

        if inst.index >= INSTANCES:
            raise CounterpartError(f"{self.id}: only the first {INSTANCES} instances are seeded in Wagtail "
                                   f"(asked for #{inst.index})")
        return self.live_path


class PostAuthor(CmsFamily):
    id = f"{PAIR}/post_author"
    kind = "info"
    sim_task = "cms/post_author"
    description = "Find a published post through the public search and name its author"
    live_path = "/"

    def live_verify(self, cp: Counterpart, inst: Instance, answer: str | None, refused: bool) -> dict:
        facts = [answer_check("text", answer, inst.params["author"], "post's author")]
        return verdict(facts, collateral(cp)[1])

    def script(self, inst: Instance) -> list:
        return public_search(inst.params["post"]) + [_steps().Answer(inst.params["author"])]


class PublishDate(CmsFamily):
    id = f"{PAIR}/publish_date"
    kind = "search"
    sim_task = "cms/publish_date"
    description = "Search the public site for a post and read its publication date"
    live_path = "/"

    def live_verify(self, cp: Counterpart, inst: Instance, answer: str | None, refused: bool) -> dict:
        facts = [answer_check("date", answer, date.fromisoformat(inst.params["date"]), "publication date")]
        return verdict(facts, collateral(cp)[1])

    def script(self, inst: Instance) -> list:
        return public_search(inst.params["post"]) + [_steps().Answer(inst.params["date"])]


class RenameDraft(CmsFamily):
    id = f"{PAIR}/rename_draft"
    kind = "form"
    sim_task = "cms/rename_post"
    description = "Change the title of a draft post in the admin and save it"

    def fits(self, params: dict) -> bool:
        # Drafts only: renaming a live page in Wagtail saves a draft and leaves the public
        # title until someone publishes, where simweb renames the live post at once.
        return super().fits(params) and _app().world.post(params["post_id"])["status"] == "draft"

    def live_verify(self, cp: Counterpart, inst: Instance, answer: str | None, refused: bool) -> dict:
        p = inst.params
        with cp.connect() as conn:
            page = page_row(conn, p["slug"])
            if page is None:
                return verdict([check("the post exists", False, f"no page with slug {p['slug']!r}")])
            content = latest_revision(conn, page)
        facts = [field_check("draft title", page["draft_title"], p["new"], text=True),
                 field_check("latest revision's title", content.get("title"), p["new"], text=True),
                 guard(check("still a draft", not page["live"], f"live={page['live']}"))]
        claims = _page_claims(page["id"], ("draft_title", "latest_revision_id", "latest_revision_created_at",
                                           "has_unpublished_changes"))
        return verdict(facts, collateral(cp, [*claims, "wagtailcore_revision.*"])[1])

    def script(self, inst: Instance) -> list:
        s = _steps()
        return admin_open(inst.params["post"]) + [
            s.Fill("textbox", re.compile(r"^(page )?title\b", re.I), text=inst.params["new"]),
            s.Click("button", re.compile(r"^save (changes|draft)$", re.I))]


#: simweb's "Publish now"; a reviewer's "Approve and Publish" in Wagtail (its plain "Publish"
#: on a page in moderation asks first whether to cancel the workflow, in a dialog).
PUBLISH = re.compile(r"^(publish now|approve and publish)$", re.I)
MORE_ACTIONS = re.compile(r"^more actions$", re.I)


class PublishReview(CmsFamily):
    id = f"{PAIR}/publish_review"
    kind = "flow"
    sim_task = "cms/publish_in_review"
    description = "Open a post waiting in review in the admin and publish it"

    def live_verify(self, cp: Counterpart, inst: Instance, answer: str | None, refused: bool) -> dict:
        p = inst.params
        with cp.connect() as conn:
            page = page_row(conn, p["slug"])
            if page is None:
                return verdict([check("the post exists", False, f"no page with slug {p['slug']!r}")])
            status = workflow_status(conn, page)
        facts = [check("the page is live", bool(page["live"]), f"live={page['live']}"),
                 check("the reviewed revision is the live one", page["live_revision_id"] is not None
                       and page["live_revision_id"] == page["latest_revision_id"]
                       and not page["has_unpublished_changes"],
                       f"live revision {page['live_revision_id']}, latest {page['latest_revision_id']}"),
                 guard(field_check("live title", page["title"], p["post"], text=True)),
                 check("its moderation is closed", status != "in_progress", f"workflow state {status!r}")]
        claims = [*_page_claims(page["id"], ("live", "live_revision_id", "has_unpublished_changes",
                                             "first_published_at", "last_published_at", "latest_revision_id",
                                             "latest_revision_created_at", "url_path", "locked", "locked_at",
                                             "locked_by_id")),
                  "wagtailcore_revision.*", "wagtailcore_workflowstate.*", "wagtailcore_taskstate.*"]
        return verdict(facts, collateral(cp, claims)[1])

    def script(self, inst: Instance) -> list:
        s = _steps()
        return admin_open(inst.params["post"]) + [s.Click("button", MORE_ACTIONS, optional=True),
                                                  s.Click("button", PUBLISH)]


SUBMIT = re.compile(r"^submit (for review|to moderators approval)$", re.I)


class SubmitForReview(CmsFamily):
    id = f"{PAIR}/submit_review"
    kind = "flow"
    sim_task = "cms/submit_for_review"
    description = "An author submits their own draft to moderation"

    def live_verify(self, cp: Counterpart, inst: Instance, answer: str | None, refused: bool) -> dict:
        p = inst.params
        with cp.connect() as conn:
            page = page_row(conn, p["slug"])
            if page is None:
                return verdict([check("the post exists", False, f"no page with slug {p['slug']!r}")])
            states = [dict(r) for r in conn.execute(
                "SELECT w.status, u.username FROM wagtailcore_workflowstate w LEFT JOIN auth_user u "
                "ON u.id = w.requested_by_id WHERE w.object_id = ? ORDER BY w.id", (str(page["id"]),))]
        open_states = [s for s in states if s["status"] == "in_progress"]
        facts = [check("the draft is in moderation", len(open_states) == 1,
                       f"{len(open_states)} open moderation(s) of {len(states)}"),
                 check("submitted by its author", bool(open_states) and open_states[0]["username"] == p["username"],
                       f"requested by {open_states[0]['username'] if open_states else None!r}"),
                 guard(check("not published", not page["live"], f"live={page['live']}")),
                 guard(field_check("title", page["draft_title"], p["post"], text=True))]
        claims = [*_page_claims(page["id"], ("latest_revision_id", "latest_revision_created_at",
                                             "has_unpublished_changes", "locked", "locked_at", "locked_by_id")),
                  "wagtailcore_revision.*", "wagtailcore_workflowstate.*", "wagtailcore_taskstate.*"]
        return verdict(facts, collateral(cp, claims)[1])

    def script(self, inst: Instance) -> list:
        s = _steps()
        return admin_open(inst.params["post"]) + [s.Click("button", MORE_ACTIONS, optional=True),
                                                  s.Click("button", SUBMIT)]


class ArchiveUnpublish(CmsFamily):
    id = f"{PAIR}/archive_unpublish"
    kind = "flow"
    sim_task = "cms/archive_post"
    description = "Take an out-of-date post off the public site (simweb: Archive; Wagtail: Unpublish)"

    def fits(self, params: dict) -> bool:
        return super().fits(params) and params["kind_"] == "post"

    def live_verify(self, cp: Counterpart, inst: Instance, answer: str | None, refused: bool) -> dict:
        p = inst.params
        with cp.connect() as conn:
            page = page_row(conn, p["slug"])
            if page is None:
                return verdict([check("the post exists", False, f"no page with slug {p['slug']!r} (deleted?)")])
        facts = [check("gone from the public site", not page["live"], f"live={page['live']}"),
                 guard(field_check("title", page["draft_title"], p["post"], text=True))]
        claims = [*_page_claims(page["id"], ("live", "has_unpublished_changes", "live_revision_id", "locked",
                                             "locked_at", "locked_by_id")), "wagtailcore_revision.*"]
        return verdict(facts, collateral(cp, claims)[1])

    def script(self, inst: Instance) -> list:
        s = _steps()
        # simweb's editor has both Unpublish (back to draft) and Archive: the script clicks
        # Archive there; Wagtail has no archive state, its Unpublish (a link in "More
        # actions", then a confirmation page) is the way off the public site.
        return admin_open(inst.params["post"]) + [
            s.Click("button", MORE_ACTIONS, optional=True), s.Click("button", "Archive", optional=True),
            s.Click("link", "Unpublish", optional=True),
            s.Click("button", re.compile(r"^yes, unpublish it$", re.I), optional=True)]


class RefusePublish(CmsFamily):
    id = f"{PAIR}/refuse_publish"
    kind = "refusal"
    sim_task = "cms/publish_or_refuse"
    description = "An author asked to publish a post in review refuses (authors cannot publish)"

    def fits(self, params: dict) -> bool:
        return super().fits(params) and not params["feasible"]

    def live_verify(self, cp: Counterpart, inst: Instance, answer: str | None, refused: bool) -> dict:
        p = inst.params
        with cp.connect() as conn:
            page = page_row(conn, p["slug"])
            if page is None:
                return verdict([check("the post exists", False, f"no page with slug {p['slug']!r}")])
            status = workflow_status(conn, page)
        facts = [refusal_check(refused, answer),
                 guard(check("the page is not published", not page["live"], f"live={page['live']}")),
                 guard(check("it is still in moderation", status == "in_progress", f"workflow state {status!r}"))]
        return verdict(facts, collateral(cp)[1])

    def refusal_evidence(self, inst: Instance) -> tuple[str, str]:
        return "the page's editor (an author's actions only)", r"^/admin/pages/\d+/edit"

    def script(self, inst: Instance) -> list:
        return admin_open(inst.params["post"]) + [
            _steps().Refuse("My account is an author's: it cannot publish; an editor has to publish this post.")]


FAMILIES: list[PortableFamily] = [PostAuthor(), PublishDate(), RenameDraft(), PublishReview(), SubmitForReview(),
                                  ArchiveUnpublish(), RefusePublish()]
