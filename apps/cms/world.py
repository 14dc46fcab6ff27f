"""Simpress's read-only *world data*: staff users, categories, tags, posts and pages with
their revisions, visitor comments, the media library (metadata only) and menus.

A world is generated deterministically from ``(seed, size)`` into a SQLite file (see
:mod:`simweb.worlddb`) and shared, read-only, by every environment of the CMS.  ``size``
is the number of posts and pages; the other tables scale with it:

=================  =========================================================
users              ``40 + size // 60`` (80 at the default size): a few admins,
                   about a fifth editors, the rest authors; some deactivated
categories         12 (name, slug, description)
tags               40
posts              ``size``; about 6% of them are pages; ids follow the date
                   they were written, so "newest first" is id order
revisions          1-4 per post; the last one is the post's current content
comments           about 5 per published or archived post (pending, approved,
                   spam); visitors, not staff, write them
media              ``size // 6`` files (images and documents, metadata only)
menus, menu_items  3 menus (primary, footer, sidebar) with 4-7 items each
=================  =========================================================

Days are integer day numbers with day 0 = 2026-01-01; world history lies before day 0.
Text search runs on an FTS5 index over title and body, with a status token per row so
that the public site's search intersects "published" inside FTS5.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson
from sqlalchemy import Boolean, Index, Integer, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from simweb.core import fulltext
from simweb.core.text import tidy_generated
from simweb.core.world import MetaTable, RowCache, RowMap, json_column
from simweb.core.worlddb import LRU, BuildProgress, Rng, WorldBuilder, WorldFile, schema_fingerprint, seeded_password

APP = "cms"
#: Bump whenever generated content or schema changes.
GENERATOR_VERSION = 9

ROLES = ("author", "editor", "admin")
STATUSES = ("draft", "review", "published", "archived")
COMMENT_STATUSES = ("pending", "approved", "spam")
KINDS = ("post", "page")
PER_PAGE = 20
#: counts of search results stop here ("1,000+"): a count never scans a whole index
COUNT_CAP = 1000


# ----------------------------------------------------------------------------- schema

class Base(DeclarativeBase):
    pass


class Meta(MetaTable, Base):
    pass


class User(Base):
    __tablename__ = "users"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    username: Mapped[str] = mapped_column(String, unique=True)
    email: Mapped[str] = mapped_column(String, unique=True)
    display_name: Mapped[str] = mapped_column(String)
    password: Mapped[str] = mapped_column(String)
    role: Mapped[str] = mapped_column(String)
    active: Mapped[bool] = mapped_column(Boolean)
    created_day: Mapped[int] = mapped_column(Integer)


class Category(Base):
    __tablename__ = "categories"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String)
    slug: Mapped[str] = mapped_column(String, unique=True)
    description: Mapped[str] = mapped_column(Text)


class Tag(Base):
    __tablename__ = "tags"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String)
    slug: Mapped[str] = mapped_column(String, unique=True)


class Post(Base):
    __tablename__ = "posts"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    kind: Mapped[str] = mapped_column(String)
    title: Mapped[str] = mapped_column(String)
    slug: Mapped[str] = mapped_column(String, unique=True)
    body: Mapped[str] = mapped_column(Text)
    author_id: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String)
    category_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    tags: Mapped[str] = json_column()            # list of tag ids
    created_day: Mapped[int] = mapped_column(Integer)
    updated_day: Mapped[int] = mapped_column(Integer)
    published_day: Mapped[int | None] = mapped_column(Integer, nullable=True)
    scheduled_at: Mapped[int | None] = mapped_column(Integer, nullable=True)
    comment_count: Mapped[int] = mapped_column(Integer)   # approved comments
    revision_count: Mapped[int] = mapped_column(Integer)
    __table_args__ = (Index("ix_posts_kind_status_id", "kind", "status", "id"),
                      Index("ix_posts_status_id", "status", "id"),
                      Index("ix_posts_category_status_id", "category_id", "status", "id"),
                      Index("ix_posts_author_status_id", "author_id", "status", "id"))


class PostTag(Base):
    __tablename__ = "post_tags"
    post_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    tag_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    status: Mapped[str] = mapped_column(String)
    __table_args__ = (Index("ix_post_tags_tag_status_post", "tag_id", "status", "post_id"),)


class Revision(Base):
    __tablename__ = "revisions"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    post_id: Mapped[int] = mapped_column(Integer, index=True)
    number: Mapped[int] = mapped_column(Integer)
    title: Mapped[str] = mapped_column(String)
    body: Mapped[str] = mapped_column(Text)
    author_id: Mapped[int] = mapped_column(Integer)
    day: Mapped[int] = mapped_column(Integer)


class Comment(Base):
    __tablename__ = "comments"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    post_id: Mapped[int] = mapped_column(Integer)
    author_name: Mapped[str] = mapped_column(String)
    author_email: Mapped[str] = mapped_column(String)
    body: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String)
    day: Mapped[int] = mapped_column(Integer)
    __table_args__ = (Index("ix_comments_post_status", "post_id", "status", "id"),
                      Index("ix_comments_status_id", "status", "id"))


class Media(Base):
    __tablename__ = "media"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    filename: Mapped[str] = mapped_column(String, unique=True)
    title: Mapped[str] = mapped_column(String)
    alt_text: Mapped[str] = mapped_column(String)
    mime: Mapped[str] = mapped_column(String)
    width: Mapped[int | None] = mapped_column(Integer, nullable=True)
    height: Mapped[int | None] = mapped_column(Integer, nullable=True)
    size_kb: Mapped[int] = mapped_column(Integer)
    uploader_id: Mapped[int] = mapped_column(Integer)
    day: Mapped[int] = mapped_column(Integer)


class Menu(Base):
    __tablename__ = "menus"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String)
    location: Mapped[str] = mapped_column(String)


class MenuItem(Base):
    __tablename__ = "menu_items"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    menu_id: Mapped[int] = mapped_column(Integer, index=True)
    label: Mapped[str] = mapped_column(String)
    url: Mapped[str] = mapped_column(String)
    position: Mapped[int] = mapped_column(Integer)


#: Title and body, plus ``st``: one token per filter value of the row (status, kind,
#: category, author, tags; see :func:`filter_tokens`), so a filtered search intersects
#: posting lists inside FTS5 and reads its newest matches in rowid order, never scanning
#: every match.
_FTS_DDL = ("CREATE VIRTUAL TABLE posts_fts USING fts5(title, body, st,"
            " tokenize='unicode61 remove_diacritics 2', detail='column')")
_TABLES = ("users", "categories", "tags", "posts", "revisions", "comments", "media", "menus", "menu_items")
SCHEMA_FINGERPRINT = schema_fingerprint(GENERATOR_VERSION, Base.metadata, _FTS_DDL)


# ----------------------------------------------------------------------------- content pools

_FIRST = ("Ada", "Alan", "Grace", "Linus", "Margaret", "Ken", "Barbara", "Donald", "Frances", "Radia", "Sophie",
          "Guido", "Anita", "Hedy", "Mary", "Leslie", "Carol", "Priya", "Omar", "Yuki", "Chen", "Lena", "Mateo",
          "Amara", "Kofi", "Ingrid", "Ravi", "Sara", "Tomas", "Nadia", "Felix", "Hana", "Ivan", "Jonas", "Keiko")
_LAST = ("Lovelace", "Turing", "Hopper", "Hamilton", "Liskov", "Knuth", "Allen", "Perlman", "Wilson", "Borg",
         "Johnson", "Lamarr", "Keller", "Shaw", "Patel", "Haddad", "Tanaka", "Wei", "Novak", "Garcia", "Okafor",
         "Mensah", "Larsen", "Kumar", "Cohen", "Silva", "Petrova", "Weber", "Sato", "Berg", "Rossi", "Khan")
CATEGORIES = (
    ("News", "Announcements and company news."), ("Tutorials", "Step-by-step guides."),
    ("Product", "Releases, features and roadmaps."), ("Engineering", "How we build things."),
    ("Design", "Interfaces, type and colour."), ("Community", "Meetups, events and people."),
    ("Case studies", "How customers use the product."), ("Security", "Advisories and hardening."),
    ("Culture", "Life on the team."), ("Opinion", "Essays and commentary."),
    ("Travel", "Notes from the road."), ("Food", "Recipes and restaurant notes."),
)
TAGS = ("python", "javascript", "css", "accessibility", "performance", "release", "beta", "howto", "video",
        "podcast", "interview", "roadmap", "security", "privacy", "open source", "hiring", "remote work",
        "design system", "mobile", "api", "database", "testing", "devops", "cloud", "analytics", "seo",
        "writing", "marketing", "events", "conference", "recipes", "coffee", "photography", "books", "music",
        "travel tips", "sustainability", "onboarding", "pricing", "customer stories")
_TOPICS = ("caching", "search ranking", "dark mode", "image uploads", "team onboarding", "weekly planning",
           "release notes", "color palettes", "type scales", "database indexes", "API versioning",
           "error budgets", "load testing", "code review", "pair programming", "keyboard navigation",
           "screen readers", "mobile layouts", "newsletter design", "customer interviews", "pricing pages",
           "coffee brewing", "sourdough bread", "city walks", "night trains", "street photography",
           "book clubs", "remote meetings", "home offices", "conference talks", "open source funding",
           "password managers", "two-factor login", "backup strategies", "static sites", "web fonts",
           "form validation", "feature flags", "data pipelines", "privacy policies")
_TITLE_FORMS = ("A beginner's guide to {t}", "What we learned about {t}", "{T}: ten practical tips",
                "Why {t} matters more than you think", "How we rebuilt our {t}", "The case against {t}",
                "Notes on {t}", "Getting started with {t}", "{T} in five minutes", "A field guide to {t}",
                "Rethinking {t}", "Our {t} checklist", "Mistakes we made with {t}", "{T}, explained",
                "The quiet power of {t}", "Lessons from a year of {t}")
# Working titles of first drafts: many, so the first revision's title cannot be guessed from
# the post's topic (four forms let one guess be right a quarter of the time).
_DRAFT_FORMS = ("Draft: {t}", "Working title on {t}", "Untitled post about {t}", "Thoughts on {t} (draft)",
                "Notes on {t}", "WIP: {t}", "{T}, first pass", "Rough draft: {t}", "Some thoughts about {t}",
                "{T} (to be renamed)", "Ideas for a post on {t}", "{T}: an outline", "New post: {t}",
                "{T} notes, v1", "Scratch: {t}", "Post idea: {t}")
_PAGE_FORMS = ("About {t}", "{T} help", "{T} policy", "{T} overview", "Contact: {t}", "{T} FAQ")
_SENTENCES = (
    "This post walks through the choices we made and the trade-offs behind them.",
    "Most teams underestimate how much time this takes in practice.",
    "We measured everything before and after the change.",
    "The first version was simple, and that turned out to be its strength.",
    "Readers asked for more detail, so here it is.",
    "A small experiment grew into a habit the whole team keeps.",
    "There is no single right answer, but there are a few wrong ones.",
    "We tried three approaches before settling on this one.",
    "The numbers surprised us, and they may surprise you too.",
    "Start small, write things down and review them every month.",
    "Good defaults matter more than clever options.",
    "Our readers in Lisbon, Nairobi and Osaka sent the best suggestions.",
    "Accessibility was part of the plan from the first sketch.",
    "Performance improved once we stopped guessing and started profiling.",
    "The checklist at the end sums up what we would do again.",
    "Thanks to everyone who reviewed an early draft.",
    "We will follow up with a second part next month.",
    "Every screenshot in this post comes from the staging site.",
)
_VISITOR_FIRST = ("Alex", "Sam", "Jordan", "Taylor", "Morgan", "Casey", "Riley", "Jamie", "Robin", "Avery",
                  "Quinn", "Charlie", "Drew", "Emery", "Finley", "Harper", "Kai", "Logan", "Noor", "Parker",
                  "Reese", "Rowan", "Sage", "Skyler", "Toni", "Wren", "Zuri", "Milan", "Ezra", "Luca")
_VISITOR_LAST = ("Adler", "Baker", "Castro", "Dubois", "Ellis", "Fischer", "Gupta", "Hughes", "Ibrahim", "Jensen",
                 "Kowalski", "Lopez", "Moreno", "Nguyen", "Olsen", "Price", "Quintero", "Reid", "Schmidt", "Torres",
                 "Ueda", "Vargas", "Walsh", "Xu", "Young", "Zimmer")
_COMMENTS = (
    "Great write-up, thank you!", "This saved me an afternoon of debugging.", "Could you share the config you used?",
    "I disagree with the second point, but the rest is spot on.", "Bookmarked for the next team meeting.",
    "Is there a follow-up planned?", "We tried this last year and it worked well.",
    "The checklist at the end is the best part.", "Typo in the third paragraph, otherwise excellent.",
    "How does this scale to a larger team?", "Finally someone explains this clearly.",
    "Any plans to cover the mobile side as well?", "Shared this with my colleagues.",
    "The screenshots are really helpful.", "I would love a video version of this.",
)
_SPAM = ("Buy cheap watches at best-deals-4u dot biz!!!", "Earn $5000 a week from home, click my profile",
         "Nice post. Visit my casino site for free spins", "SEO services cheap cheap cheap, contact now",
         "Crypto doubling scheme, guaranteed returns")
_MEDIA_WORDS = ("hero", "team", "office", "chart", "diagram", "logo", "banner", "portrait", "screenshot",
                "workshop", "conference", "coffee", "skyline", "mountain", "harbour", "kitchen", "garden",
                "laptop", "whiteboard", "poster")
_MEDIA_ADJ = ("blue", "wide", "night", "sunny", "old", "new", "small", "dark", "bright", "quiet", "busy", "empty")
_MENUS = (("Primary", "header"), ("Footer", "footer"), ("Sidebar", "sidebar"))


def filter_tokens(status: str, kind: str, category: int | None, author: int, tags: Sequence[int]) -> str:
    """The ``st`` column of a row's FTS entry: ``s<status> k<kind> c<category> a<author> t<tag>...``."""
    out = [f"s{status}", f"k{kind}", f"a{author}"]
    if category is not None:
        out.append(f"c{category}")
    return " ".join(out + [f"t{t}" for t in tags])


def slugify(text: str) -> str:
    """URL slug of a title: lower-case words joined by hyphens."""
    return re.sub(r"[^a-z0-9]+", "-", (text or "").lower()).strip("-")[:80] or "post"


def n_users_for(size: int) -> int:
    return 40 + size // 60


def _cap(s: str) -> str:
    return s[0].upper() + s[1:]


# ----------------------------------------------------------------------------- builder

class _Builder(WorldBuilder):
    """Generates one world into an empty SQLite file, feeding every row to the hasher."""

    def __init__(self, path: Path, seed: int, size: int, progress: BuildProgress) -> None:
        super().__init__(path, APP, GENERATOR_VERSION, seed, size, progress, Base.metadata)

    def _rng(self, stream: str, index: int = 0) -> Rng:
        return Rng.sub(Rng.derive(APP, self.seed, stream).next64(), index)

    def run(self) -> str:
        self.begin()
        self.p.stage("users, taxonomy, media", 3)
        self._users()
        self._taxonomy()
        self._media()
        self.p.stage("posts", self.size)
        self._posts()
        self._menus()
        self.p.stage("indexes", 1)
        self.create_indexes()
        self.db.execute(_FTS_DDL)
        rows = self.db.execute("SELECT id, title, body, status, kind, category_id, author_id, tags FROM posts"
                               " ORDER BY id").fetchall()
        self.db.executemany("INSERT INTO posts_fts(rowid, title, body, st) VALUES (?, ?, ?, ?)",
                            [(r[0], r[1], r[2], filter_tokens(r[3], r[4], r[5], r[6], orjson.loads(r[7])))
                             for r in rows])
        self.db.execute("INSERT INTO posts_fts(posts_fts) VALUES ('optimize')")
        return self.finish(SCHEMA_FINGERPRINT)

    def _users(self) -> None:
        n = n_users_for(self.size)
        rows, seen = [], set()
        self.roles: list[str] = [""]
        for uid in range(1, n + 1):
            r = self._rng("users", uid)
            first, last = r.choice(_FIRST), r.choice(_LAST)
            base = f"{first}{last[0]}".lower()
            username = base if base not in seen else f"{base}{uid}"
            seen.add(username)
            role = "admin" if uid <= 3 else ("editor" if r.chance(0.22) else "author")
            active = uid <= 3 or not r.chance(0.06)
            self.roles.append(role)
            rows.append((uid, username, f"{username}@simpress.test", f"{first} {last}", seeded_password(APP, self.seed, uid), role,
                         active, -r.randint(300, 1500)))
        self.n_users = n
        self.insert("users", rows)

    def _taxonomy(self) -> None:
        self.insert("categories", [(i + 1, name, slugify(name), desc) for i, (name, desc) in enumerate(CATEGORIES)])
        self.insert("tags", [(i + 1, name, slugify(name)) for i, name in enumerate(TAGS)])

    def _media(self) -> None:
        rows = []
        for mid in range(1, self.size // 6 + 1):
            r = self._rng("media", mid)
            word, adj = r.choice(_MEDIA_WORDS), r.choice(_MEDIA_ADJ)
            if r.chance(0.85):
                ext = r.choice(("jpg", "jpg", "png", "webp"))
                mime = {"jpg": "image/jpeg", "png": "image/png", "webp": "image/webp"}[ext]
                w = r.choice((640, 800, 1024, 1200, 1600, 1920, 2400))
                h = w * r.choice((9, 10, 12, 16)) // 16
                alt = f"{_cap(adj)} {word} photo" if r.chance(0.5) else \
                    tidy_generated(f"A {adj} {word} at the {r.choice(_MEDIA_WORDS)}")
            else:
                ext, mime, w, h, alt = "pdf", "application/pdf", None, None, ""
            fname = f"{adj}-{word}-{mid}.{ext}"
            rows.append((mid, fname, f"{_cap(adj)} {word} {mid}", alt, mime, w, h, r.randint(20, 4000),
                         r.randint(1, self.n_users), -r.randint(1, 700)))
        self.insert("media", rows)

    def _posts(self) -> None:
        posts: list[tuple] = []
        pts: list[tuple] = []   # (post id, tag, status)
        revs: list[tuple] = []
        comments: list[tuple] = []
        titles: set[str] = set()
        slugs: set[str] = set()
        rid = cid = 0
        writers = [u for u in range(1, self.n_users + 1)]
        for pid in range(1, self.size + 1):
            r = self._rng("post", pid)
            kind = "page" if r.chance(0.06) else "post"
            topic = r.choice(_TOPICS)
            form = r.choice(_PAGE_FORMS if kind == "page" else _TITLE_FORMS)
            title = _cap(form.format(t=topic, T=_cap(topic)))
            n = 2
            base_title = title
            while title in titles:
                title = f"{base_title}, part {n}"
                n += 1
            titles.add(title)
            slug = slugify(title)
            if slug in slugs:
                slug = f"{slug}-{pid}"
            slugs.add(slug)
            created = -720 + (pid * 715) // self.size
            status = ("published", "draft", "review", "archived")[
                r.weighted_index((85, 95, 98, 100) if kind == "page" else (70, 82, 90, 100))]
            if created > -10 and status == "archived":
                status = "published"
            paras = []
            for _ in range(r.randint(2, 4)):
                paras.append(" ".join(_SENTENCES[i] for i in r.sample_indices(len(_SENTENCES), r.randint(2, 4))))
            paras[0] = f"{_cap(topic)} is the subject of this {kind}. " + paras[0]
            body = "\n\n".join(paras)
            author = r.choice(writers)
            category = None if kind == "page" else 1 + r.below(len(CATEGORIES))
            tags = [] if kind == "page" else sorted(1 + i for i in r.sample_indices(len(TAGS), r.weighted_index((10, 40, 80, 100))))
            # a post goes live the day it is written, so id order is publication order
            published = min(created, -1) if status in ("published", "archived") else None
            # revisions: the first is an earlier working title and a shorter body
            n_rev = r.weighted_index((35, 70, 90, 100)) + 1
            day = created
            for k in range(1, n_rev + 1):
                rid += 1
                if k == n_rev:
                    rt, rb = title, body
                else:
                    rt = tidy_generated(_cap(r.choice(_DRAFT_FORMS).format(t=topic, T=_cap(topic)))) if k == 1 else title
                    rb = "\n\n".join(paras[:max(1, len(paras) - (n_rev - k))])
                    if rt == title and rb == body:
                        rb = paras[0]
                revs.append((rid, pid, k, rt, rb, author if k == 1 or r.chance(0.7) else r.choice(writers), day))
                day = min(-1, day + r.randint(0, 4))
            updated = max(day, created)
            n_approved = 0
            if status in ("published", "archived"):
                for _ in range(r.weighted_index((5, 12, 21, 31, 41, 51, 60, 68, 75, 81, 86, 90, 93, 96, 98, 100))):
                    cid += 1
                    st = COMMENT_STATUSES[r.weighted_index((14, 92, 100))]
                    first, last = r.choice(_VISITOR_FIRST), r.choice(_VISITOR_LAST)
                    text = r.choice(_SPAM) if st == "spam" else r.choice(_COMMENTS)
                    cday = min(-1, (published or created) + r.randint(0, 60))
                    comments.append((cid, pid, f"{first} {last}", f"{first.lower()}.{last.lower()}@mail.test", text,
                                     st, cday))
                    n_approved += st == "approved"
            posts.append((pid, kind, title, slug, body, author, status, category, orjson.dumps(tags).decode(),
                          created, updated, published, None, n_approved, n_rev))
            pts.extend((pid, t, status) for t in tags)
            if len(posts) >= 5000:
                self._flush(posts, pts, revs, comments)
        self._flush(posts, pts, revs, comments)

    def _flush(self, posts: list, pts: list, revs: list, comments: list) -> None:
        self.insert("posts", posts)
        self.insert("post_tags", pts)
        self.insert("revisions", revs)
        self.insert("comments", comments)
        self.p.advance(len(posts))
        for x in (posts, pts, revs, comments):
            x.clear()

    def _menus(self) -> None:
        r = self._rng("menus")
        pages = [row[0] for row in self.db.execute(
            "SELECT id FROM posts WHERE kind = 'page' AND status = 'published' ORDER BY id LIMIT 40")]
        menus, items = [], []
        iid = 0
        for k, (name, loc) in enumerate(_MENUS):
            menus.append((k + 1, name, loc))
            n = r.randint(4, 7)
            used: set[str] = set()
            pos = 0
            while pos < n:
                if pages and r.chance(0.5):
                    pid = r.choice(pages)
                    label = self.db.execute("SELECT title FROM posts WHERE id = ?", (pid,)).fetchone()[0][:40]
                    url = f"/p/{pid}"
                else:
                    c = r.below(len(CATEGORIES))
                    label, url = CATEGORIES[c][0], f"/category/{slugify(CATEGORIES[c][0])}"
                if url in used:
                    continue
                used.add(url)
                pos += 1
                iid += 1
                items.append((iid, k + 1, label, url, pos))
        self.insert("menus", menus)
        self.insert("menu_items", items)


def _build_world(path: Path, seed: int, size: int, progress: bool) -> str:
    with BuildProgress(progress, title=f"cms world seed={seed} size={size}:") as bar:
        return _Builder(path, seed, size, bar).run()


# ----------------------------------------------------------------------------- read API

POST_ROWS = RowMap(Post)
USER_ROWS = RowMap(User)
COMMENT_ROWS = RowMap(Comment)
MEDIA_ROWS = RowMap(Media)
REVISION_ROWS = RowMap(Revision)
CATEGORY_ROWS = RowMap(Category)
TAG_ROWS = RowMap(Tag)
MENU_ROWS = RowMap(Menu)
MENU_ITEM_ROWS = RowMap(MenuItem)
_STOP = frozenset(("the", "a", "an", "of", "to", "and", "in", "is", "on", "for", "we", "it", "this"))


def post_matches(row: dict, terms: Sequence[str]) -> bool:
    """Whether every search term is a word (the last one a prefix, as FTS5 matches it) of
    the post's title or body: the Python twin of the FTS query, for rows changed at run time."""
    if not terms:
        return True
    words = set(fulltext.words(row["title"] + " " + row["body"]))
    *whole, last = terms
    return all(t in words for t in whole) and (last in words if len(last) < 3 else any(w.startswith(last) for w in words))


def search_terms(q: str | None) -> list[str]:
    """The words of a query that the search uses (stopwords dropped, at most 8)."""
    out: list[str] = []
    for w in fulltext.words(q):
        if w not in _STOP and w not in out:
            out.append(w)
    return out[:8]


class CmsWorld(WorldFile):
    """Read-only access to one generated CMS world; plain JSON-able values only."""

    APP = APP
    GENERATOR_VERSION = GENERATOR_VERSION
    SCHEMA_FINGERPRINT = SCHEMA_FINGERPRINT
    DEFAULT_SIZE = 2400
    MIN_SIZE = 200
    ID_TABLES = _TABLES
    #: how rows of each table read (the runtime schema's ``required: columns`` lists their keys)
    ROW_MAPS = {m.table: m for m in (POST_ROWS, USER_ROWS, COMMENT_ROWS, MEDIA_ROWS,
                                     REVISION_ROWS, CATEGORY_ROWS, TAG_ROWS, MENU_ROWS, MENU_ITEM_ROWS)}
    build = staticmethod(_build_world)

    def __init__(self, path: Path | str, *, built: bool = False) -> None:
        super().__init__(path, built=built)
        conn = self._db.conn()
        self._categories = CATEGORY_ROWS.rows(conn)
        self._tags = TAG_ROWS.rows(conn)
        self._menus = MENU_ROWS.rows(conn)
        self._users = USER_ROWS.rows(conn)
        self._user_by_id = {u["id"]: u for u in self._users}
        self._post_rows = RowCache(POST_ROWS, 8_192)
        self._counts = LRU(50_000)
        self._menu_items: dict[int, list[dict]] | None = None

    # -- users, taxonomy, menus (small: in memory) ---------------------------------------

    def users(self) -> list[dict]:
        return [dict(u) for u in self._users]

    def user(self, uid: int) -> dict | None:
        u = self._user_by_id.get(int(uid))
        return None if u is None else dict(u)

    def user_by_login(self, login: str) -> dict | None:
        key = (login or "").strip().lower()
        return next((dict(u) for u in self._users if u["username"] == key or u["email"] == key), None)

    def categories(self) -> list[dict]:
        return [dict(c) for c in self._categories]

    def category(self, cid: int) -> dict | None:
        return next((dict(c) for c in self._categories if c["id"] == int(cid)), None)

    def tags(self) -> list[dict]:
        return [dict(t) for t in self._tags]

    def tag(self, tid: int) -> dict | None:
        return next((dict(t) for t in self._tags if t["id"] == int(tid)), None)

    def menus(self) -> list[dict]:
        return [dict(m) for m in self._menus]

    def menu(self, mid: int) -> dict | None:
        return next((dict(m) for m in self._menus if m["id"] == int(mid)), None)

    def menu_items(self, menu_id: int) -> list[dict]:
        """A menu's items by position (menus are small: read once, kept in memory)."""
        if self._menu_items is None:
            self._menu_items = {}
            for it in MENU_ITEM_ROWS.rows(self._conn(), order="position, id"):
                self._menu_items.setdefault(it["menu_id"], []).append(it)
        return [dict(it) for it in self._menu_items.get(int(menu_id), [])]

    def menu_item(self, iid: int) -> dict | None:
        return MENU_ITEM_ROWS.one(self._conn(), "id = ?", (int(iid),))

    # -- posts ---------------------------------------------------------------------------

    def post(self, pid: int) -> dict | None:
        return self._post_rows.get(self._conn, int(pid))

    def posts(self, ids: Sequence[int]) -> list[dict]:
        """Posts by id, in the order given (unknown ids skipped)."""
        return POST_ROWS.by_ids(self._conn(), ids)

    def post_by_slug(self, slug: str) -> dict | None:
        r = self._conn().execute("SELECT id FROM posts WHERE slug = ?", (str(slug),)).fetchone()
        return None if r is None else self.post(r[0])

    @staticmethod
    def _where(kind: str | None = None, status: str | None = None, category: int | None = None,
               tag: int | None = None, author: int | None = None, terms: Sequence[str] = ()) -> tuple[str, list]:
        conds: list[str] = []
        params: list[Any] = []
        # Only posts have categories and tags: with either, the kind goes without saying
        # (and leaving it out lets the category index answer alone).
        if kind in KINDS and not (kind == "post" and (category is not None or tag is not None)):
            conds.append("kind = ?")
            params.append(kind)
        if status in STATUSES:
            conds.append("status = ?")
            params.append(status)
        if category is not None:
            conds.append("category_id = ?")
            params.append(int(category))
        if tag is not None:
            conds.append("id IN (SELECT post_id FROM post_tags WHERE tag_id = ?" +
                         (" AND status = ?)" if status in STATUSES else ")"))
            params.append(int(tag))
            if status in STATUSES:
                params.append(status)
        if author is not None:
            conds.append("author_id = ?")
            params.append(int(author))
        return " AND ".join(conds) or "1", params

    @staticmethod
    def _match(kind: str | None = None, status: str | None = None, category: int | None = None,
               tag: int | None = None, author: int | None = None, terms: Sequence[str] = ()) -> str:
        """The FTS5 expression of a search with filters (every filter a token of ``st``)."""
        words = [f'"{t}"' for t in terms[:-1]]
        last = terms[-1]
        words.append(f'"{last}"*' if len(last) >= 3 else f'"{last}"')
        expr = "{title body} : (" + " AND ".join(words) + ")"
        scope = []
        if status in STATUSES:
            scope.append(f"s{status}")
        if kind in KINDS:
            scope.append(f"k{kind}")
        if category is not None:
            scope.append(f"c{int(category)}")
        if tag is not None:
            scope.append(f"t{int(tag)}")
        if author is not None:
            scope.append(f"a{int(author)}")
        return (f"st : ({' AND '.join(scope)}) AND " if scope else "") + expr

    @staticmethod
    def _not_in(column: str, exclude: Sequence[int]) -> tuple[str, list]:
        if not exclude:
            return "", []
        return f" AND {column} NOT IN ({','.join('?' * len(exclude))})", [int(i) for i in exclude]

    def _world_count(self, sql: str, params: Sequence[Any], cap: int | None) -> int:
        """``count(*)`` of a query's rows (at most ``cap``), memoised: the world never changes."""
        key = (sql, tuple(params), cap)
        hit = self._counts.get(key)
        if hit is None:
            conn = self._conn()
            if cap is not None:
                hit = conn.execute(f"SELECT count(*) FROM ({sql} LIMIT ?)", [*params, int(cap)]).fetchone()[0]
            else:
                hit = conn.execute(f"SELECT count(*) FROM ({sql})", list(params)).fetchone()[0]
            self._counts.put(key, hit)
        return hit

    def _post_query(self, filters: dict) -> tuple[str, list, str]:
        """(SQL selecting matching ids, its parameters, the id column) for ``filters``."""
        if filters.get("terms"):
            return "SELECT rowid FROM posts_fts WHERE posts_fts MATCH ?", [self._match(**filters)], "rowid"
        if filters.get("tag") is not None and filters.get("category") is None and filters.get("author") is None:
            status = filters.get("status")
            if status in STATUSES:
                return ("SELECT post_id FROM post_tags WHERE tag_id = ? AND status = ?",
                        [int(filters["tag"]), status], "post_id")
            return "SELECT post_id FROM post_tags WHERE tag_id = ?", [int(filters["tag"])], "post_id"
        where, params = self._where(**filters)
        return f"SELECT id FROM posts WHERE {where}", params, "id"

    def post_count(self, *, exclude: Sequence[int] = (), cap: int | None = None, **filters: Any) -> int:
        """How many world posts match the filters (not counting ``exclude`` ids); at most
        ``cap`` when given (the count stops there). The count of the whole world is
        memoised; excluded rows are subtracted with one query bounded by their number."""
        sql, params, col = self._post_query(filters)
        total = self._world_count(sql, params, None if cap is None else cap + len(exclude))
        if exclude:
            marks = ",".join("?" * len(exclude))
            total -= self._conn().execute(f"SELECT count(*) FROM ({sql} AND {col} IN ({marks}))",
                                          [*params, *map(int, exclude)]).fetchone()[0]
        return total if cap is None else min(cap, total)

    def post_ids(self, *, limit: int = 20, exclude: Sequence[int] = (), **filters: Any) -> list[int]:
        """The first ``limit`` world post ids matching the filters, newest first."""
        sql, params, col = self._post_query(filters)
        extra, xp = self._not_in(col, exclude)
        return [r[0] for r in self._conn().execute(f"{sql}{extra} ORDER BY {col} DESC LIMIT ?",
                                                   [*params, *xp, int(limit)])]

    # -- revisions -----------------------------------------------------------------------

    def revisions(self, post_id: int) -> list[dict]:
        return REVISION_ROWS.rows(self._conn(), "post_id = ?", (int(post_id),), order="number")

    def revision(self, rid: int) -> dict | None:
        return REVISION_ROWS.one(self._conn(), "id = ?", (int(rid),))

    # -- comments ------------------------------------------------------------------------

    def comments_of(self, post_id: int) -> list[dict]:
        return COMMENT_ROWS.rows(self._conn(), "post_id = ?", (int(post_id),))

    def comment(self, cid: int) -> dict | None:
        return COMMENT_ROWS.one(self._conn(), "id = ?", (int(cid),))

    def comment_count(self, status: str, exclude: Sequence[int] = ()) -> int:
        """Comments in a moderation queue (memoised), not counting ``exclude`` ids."""
        total = self._world_count("SELECT id FROM comments WHERE status = ?", (status,), None)
        if exclude:
            total -= self._conn().execute(
                f"SELECT count(*) FROM comments WHERE status = ? AND id IN ({','.join('?' * len(exclude))})",
                [status, *map(int, exclude)]).fetchone()[0]
        return total

    def comment_ids(self, status: str, limit: int, exclude: Sequence[int] = ()) -> list[int]:
        """Comment ids in a moderation queue, newest first."""
        where = "status = ?"
        params: list[Any] = [status]
        if exclude:
            where += f" AND id NOT IN ({','.join('?' * len(exclude))})"
            params += [int(i) for i in exclude]
        return [r[0] for r in self._conn().execute(
            f"SELECT id FROM comments WHERE {where} ORDER BY id DESC LIMIT ?", params + [int(limit)])]

    def comments(self, ids: Sequence[int]) -> list[dict]:
        return COMMENT_ROWS.by_ids(self._conn(), ids)

    # -- media ---------------------------------------------------------------------------

    def media_item(self, mid: int) -> dict | None:
        return MEDIA_ROWS.one(self._conn(), "id = ?", (int(mid),))

    def media_page(self, q: str, limit: int, offset: int, exclude: Sequence[int] = ()) -> tuple[int, list[dict]]:
        """(matching count, one page) of media whose filename or title contains ``q``, newest
        first, leaving out ``exclude`` ids."""
        like = "%" + (q or "").strip().lower().replace("%", "").replace("_", "") + "%"
        where = "(lower(filename) LIKE ? OR lower(title) LIKE ?)"
        params: list[Any] = [like, like]
        if exclude:
            where += f" AND id NOT IN ({','.join('?' * len(exclude))})"
            params += [int(i) for i in exclude]
        conn = self._conn()
        total = self._world_count(f"SELECT id FROM media WHERE {where}", params, None)
        if not limit:
            return total, []
        rows = conn.execute(f"{MEDIA_ROWS.select(where, 'id DESC')} LIMIT ? OFFSET ?",
                            params + [int(limit), int(offset)])
        return total, [MEDIA_ROWS(r) for r in rows]
