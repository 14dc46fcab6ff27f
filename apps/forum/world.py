"""Simforum's read-only *world data*: communities, users, posts, threaded comments.

A world is generated deterministically from ``(seed, size)`` into a SQLite file (see
:mod:`simweb.worlddb` for the cache, atomic build, content hash and PRNG) and shared,
read-only, by every environment of the forum app.  ``size`` is the number of posts;
everything else scales with it:

=================  =========================================================
communities        ``min(50 + size // 1000, 300)``, 1-4 moderators each
users              ``min(1000 + size // 10, 60000)``
posts              ``size`` (ids 1..size; text and link posts; ~4% locked;
                   up to one pinned post per community)
comments           ~5.5 per post, threaded (``parent_id``, depth <= 5)
votes              the per-user votes of every 10th user (40 each)
subscriptions      3-12 per user; ``communities.subscribers`` counts them
saved              0-6 saved posts/comments for every 4th user
messages           ~2 private messages per user
bans, mod_log      a few per community (temporary, permanent, expired)
=================  =========================================================

Times are integer seconds relative to day 0 (2026-01-01 00:00); all world history is
before 0.  ``posts.score`` is the world's vote total (ups - downs); the simulator adds
run-time vote changes on top.  ``posts.hot0`` is the hot rank at time 0, used only to
pick candidates (the app re-ranks candidates with the real ``now``).

Search (``ForumWorld.search``) runs on contentless FTS5 indexes over post titles and bodies
whose rowids are sort positions (``posts.top_rank``/``new_rank``/``cmt_rank``), so a query
walks its matches in the requested order and stops after one page; community, author and
kind filters are extra index tokens (``_c<id>``, ``_u<id>``, ``_k<kind>``), and a time
window is a bound on ``new_rank``.  Exact semantics (tested in tests/test_forum_world.py):

* ``total`` counts every match exactly up to ``COUNT_CAP`` (1000; then ``capped``).
* ``new``/``top``/``comments`` order all matches exactly (ties by id desc).
* ``relevance`` is bm25 (title weighted 5:1) over a bounded pool: when more than
  ``RELEVANCE_POOL`` (500) posts match, the pool is the ``RELEVANCE_POOL`` highest-scoring
  matches (score desc, id desc) ranked by bm25, and the other matches follow by score; with
  at most that many matches, every match is ranked by bm25.  bm25 ties go to the higher
  score, then the higher id.
* The last query word matches as a prefix (``word*``) unless that word alone is in
  ``PREFIX_COMMON_DF`` (1000) or more posts: then it matches as typed (porter-stemmed),
  since expanding a common prefix means merging the postings of every word it starts.
* Without words, the filters alone list posts (relevance = newest first).
"""
from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sqlalchemy import Boolean, Float, Index, Integer, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from simweb.core import fulltext
from simweb.core.text import tidy_generated
from simweb.core.world import MetaTable, RowCache, RowMap
from simweb.core.worlddb import (
    DAY0,
    BuildProgress,
    Rng,
    WorldBuilder,
    WorldFile,
    day_to_date,
    schema_fingerprint,
    seeded_password,
    stable_hash64,
)

__all__ = [
    "APP",
    "DAY0",
    "GENERATOR_VERSION",
    "COUNT_CAP",
    "MAX_DEPTH",
    "PREFIX_COMMON_DF",
    "RELEVANCE_POOL",
    "WINDOWS",
    "ForumWorld",
    "day_to_date",
    "hot_score",
    "match_expression",
]

APP = "forum"
GENERATOR_VERSION = 6
DAY = 86400
MAX_DEPTH = 5
#: Time windows of "top" listings and search, in seconds.
WINDOWS = {"day": DAY, "week": 7 * DAY, "month": 30 * DAY, "year": 365 * DAY, "all": None}


def hot_score(score: int, created: int, now: int) -> float:
    """The hot rank: score decayed by age (hours) relative to ``now``; deterministic."""
    age_h = max(0.0, (now - created) / 3600.0)
    s = float(score)
    return round((s + 1.0 if s >= 0 else s) / ((age_h + 2.0) ** 1.5), 9)


# ===========================================================================
# Vocabulary
# ===========================================================================

# (name, title, nouns, adjectives)
_TOPICS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("photography", "Photography", ("camera", "lens", "tripod", "sunset shot", "portrait", "film roll", "prime lens", "light meter")),
    ("cooking", "Home Cooking", ("sourdough", "cast iron pan", "risotto", "curry", "knife", "stock pot", "dumpling", "braise")),
    ("gardening", "Gardening", ("tomato plant", "raised bed", "compost pile", "seedling", "rose bush", "greenhouse", "hydrangea", "mulch")),
    ("cycling", "Cycling", ("road bike", "gravel bike", "chain", "saddle", "climb", "derailleur", "commute", "tubeless tire")),
    ("running", "Running", ("marathon", "5k", "trail run", "running shoe", "tempo run", "half marathon", "long run", "recovery week")),
    ("woodworking", "Woodworking", ("workbench", "dovetail joint", "table saw", "walnut slab", "hand plane", "chisel set", "cutting board", "bookshelf")),
    ("programming", "Programming", ("side project", "code review", "compiler", "unit test", "refactor", "memory leak", "build system", "API design")),
    ("python", "Python", ("type hint", "virtualenv", "async loop", "decorator", "dataclass", "generator", "package", "pytest fixture")),
    ("linux", "Linux", ("kernel", "window manager", "dotfile", "distro", "package manager", "boot loader", "shell script", "file system")),
    ("gaming", "Gaming", ("boss fight", "speedrun", "open world game", "controller", "save file", "indie game", "co-op campaign", "patch")),
    ("boardgames", "Board Games", ("deck builder", "game night", "expansion", "dice tower", "worker placement game", "rulebook", "campaign box", "meeple")),
    ("books", "Books", ("novel", "reading list", "audiobook", "book club", "series", "short story", "memoir", "library haul")),
    ("movies", "Movies", ("director's cut", "soundtrack", "sequel", "film festival", "cinematography", "plot twist", "remake", "trailer")),
    ("music", "Music", ("album", "vinyl record", "live show", "playlist", "bass line", "cover song", "mixtape", "chord progression")),
    ("guitar", "Guitar", ("fretboard", "pedalboard", "acoustic guitar", "amp", "string gauge", "capo", "solo", "barre chord")),
    ("fitness", "Fitness", ("deadlift", "home gym", "workout plan", "squat rack", "protein shake", "rest day", "kettlebell", "pull-up")),
    ("travel", "Travel", ("backpack", "train pass", "layover", "road trip", "hostel", "itinerary", "carry-on", "night train")),
    ("hiking", "Hiking", ("trailhead", "summit", "day pack", "switchback", "hiking boot", "ridge walk", "water filter", "trail map")),
    ("camping", "Camping", ("tent", "sleeping bag", "campfire", "camp stove", "hammock", "tarp", "cooler", "headlamp")),
    ("science", "Science", ("experiment", "telescope", "paper", "lab result", "particle", "fossil", "microscope", "dataset")),
    ("space", "Space", ("rocket launch", "rover", "nebula", "space station", "eclipse", "exoplanet", "orbit", "satellite")),
    ("history", "History", ("archive", "old map", "castle", "empire", "manuscript", "battle", "trade route", "artifact")),
    ("personalfinance", "Personal Finance", ("budget", "emergency fund", "retirement account", "credit card", "mortgage", "index fund", "tax return", "savings goal")),
    ("homeimprovement", "Home Improvement", ("drywall", "deck", "kitchen remodel", "tile job", "paint color", "leaky faucet", "insulation", "fence")),
    ("cars", "Cars", ("engine", "oil change", "road trip car", "brake pad", "manual gearbox", "used car", "tire rotation", "dashboard")),
    ("pets", "Pets", ("rescue dog", "cat tree", "aquarium", "puppy", "vet visit", "litter box", "dog park", "parrot")),
    ("coffee", "Coffee", ("espresso machine", "pour-over", "grinder", "latte art", "cold brew", "roast", "moka pot", "bean subscription")),
    ("baking", "Baking", ("croissant", "pie crust", "layer cake", "bread loaf", "stand mixer", "cookie batch", "proofing basket", "bagel")),
    ("knitting", "Knitting", ("sweater", "yarn stash", "cable pattern", "sock", "scarf", "needle set", "shawl", "swatch")),
    ("art", "Art", ("sketchbook", "oil painting", "watercolor", "charcoal study", "canvas", "commission", "palette", "mural")),
    ("design", "Design", ("logo", "typeface", "color palette", "portfolio", "wireframe", "mockup", "grid system", "icon set")),
    ("chess", "Chess", ("opening", "endgame", "blitz game", "rating climb", "tactic puzzle", "gambit", "tournament", "chess clock")),
    ("astronomy", "Astronomy", ("star chart", "meteor shower", "dobsonian", "planet", "dark sky site", "galaxy", "moon photo", "eyepiece")),
    ("aquariums", "Aquariums", ("planted tank", "filter", "shrimp colony", "water test", "reef tank", "betta", "CO2 setup", "driftwood")),
    ("mechanicalkeyboards", "Mechanical Keyboards", ("keycap set", "switch", "split keyboard", "stabilizer", "custom build", "lube job", "layout", "keyboard case")),
    ("languagelearning", "Language Learning", ("vocabulary deck", "grammar book", "tutor", "immersion trip", "pronunciation", "exchange partner", "podcast", "flashcard")),
    ("parenting", "Parenting", ("toddler", "bedtime routine", "school lunch", "stroller", "playground", "car seat", "homework", "family trip")),
    ("diy", "DIY", ("workbench", "shelf", "lamp", "planter box", "soldering project", "repair", "spice rack", "garage organizer")),
    ("anime", "Anime", ("series", "studio", "manga", "season finale", "opening theme", "character arc", "adaptation", "art style")),
    ("soccer", "Soccer", ("transfer", "derby", "clean sheet", "penalty", "league table", "striker", "formation", "cup run")),
    ("basketball", "Basketball", ("three-pointer", "rookie", "playoff run", "trade deadline", "buzzer beater", "defense", "draft pick", "dunk")),
    ("weather", "Weather", ("storm", "heat wave", "forecast", "snowfall", "rain gauge", "thunderstorm", "cold front", "weather station")),
    ("architecture", "Architecture", ("facade", "floor plan", "brutalist building", "bridge", "courtyard", "staircase", "skyscraper", "timber frame")),
    ("crafts", "Crafts", ("embroidery hoop", "clay pot", "resin piece", "quilt", "paper model", "leather wallet", "candle", "sticker sheet")),
)
_SUFFIXES = ("", "talk", "help", "pics", "news", "beginners", "meta", "uk")
_SUFFIX_TITLES = {"": "{t}", "talk": "{t} Talk", "help": "{t} Help", "pics": "{t} Pictures", "news": "{t} News",
                  "beginners": "{t} for Beginners", "meta": "{t} Meta", "uk": "{t} UK"}

_TITLE_PATTERNS = (
    "What's your favorite {noun}?",
    "Finally finished my {adj} {noun}",
    "Is a {adj} {noun} worth it in {year}?",
    "Help: my {noun} keeps failing after {n} weeks",
    "{noun_c} vs {noun2}: which would you pick?",
    "My first {noun} after {n} months of practice",
    "Unpopular opinion: the {noun} is overrated",
    "PSA: check your {noun} before the weekend",
    "Looking for advice on a {adj} {noun}",
    "I spent {n} hours on this {noun}",
    "Does anyone else struggle with the {noun}?",
    "Weekly thread: show off your {noun}",
    "Beginner question about my {noun}",
    "{n} lessons I learned from my {adj} {noun}",
    "Just upgraded from a {noun2} to a {adj} {noun}",
    "Why is nobody talking about the {adj} {noun}?",
    "Best budget {noun} under ${price}?",
    "The {noun} my grandfather left me",
    "Rate my {adj} {noun} setup",
    "Can we talk about how good the {noun} is?",
)
_ADJS = ("cheap", "vintage", "tiny", "huge", "homemade", "secondhand", "minimalist", "beginner", "professional",
         "weird", "perfect", "broken", "custom", "classic", "lightweight", "noisy", "budget", "fancy", "rare",
         "underrated")
_SENTENCES = (
    "I have been thinking about the {noun} for a while now.",
    "Any advice would be really appreciated.",
    "Honestly the {adj} {noun} surprised me.",
    "It took me {n} tries to get it right.",
    "My friend recommended a {noun2} instead, but I am not convinced.",
    "Here is what I tried so far: reading the manual, asking around and watching videos.",
    "Edit: thanks everyone for the helpful replies!",
    "The whole thing cost me about ${price}.",
    "I would love to hear how others handle the {noun}.",
    "Not sure if this is the right place to ask.",
    "Compared to my old {noun2}, this one is much better.",
    "After {n} weeks it still works great.",
    "The community here has been amazing.",
    "Would you do anything differently?",
    "Pictures do not do it justice.",
)
_COMMENTS = (
    "Great post, thanks for sharing!",
    "I had the same problem with my {noun}.",
    "Have you tried a {adj} {noun2}?",
    "This is exactly what I needed today.",
    "Hard disagree, the {noun} is fine.",
    "Looks amazing, how long did it take?",
    "Same here, {n} years and counting.",
    "Came here to say this.",
    "Source? I have never heard that about the {noun}.",
    "The {adj} one is always the better choice.",
    "Underrated comment.",
    "I would return it and get a {noun2}.",
    "Thanks, this helped a lot!",
    "Could you post an update in a few weeks?",
    "That {noun} is beautiful.",
    "Check the sidebar, there is a guide about the {noun}.",
    "Saving this for later.",
    "This thread is gold.",
    "Welcome to the hobby!",
    "Mine lasted {n} months before it broke.",
)
_DOMAINS = ("example.com", "news.example.org", "blog.example.net", "video.example.com", "photos.example.org",
            "wiki.example.org", "magazine.example.net", "research.example.edu")
_USER_A = ("quiet", "happy", "lazy", "brave", "clever", "cosmic", "dusty", "eager", "fuzzy", "gentle", "hidden",
           "icy", "jolly", "kind", "lucky", "mellow", "nimble", "odd", "plain", "rapid", "sunny", "tidy", "urban",
           "vivid", "witty", "young", "zesty", "amber", "bold", "calm", "dizzy", "early", "fancy", "grumpy")
_USER_N = ("otter", "falcon", "badger", "panda", "walrus", "heron", "lynx", "moose", "gecko", "koala", "raven",
           "squid", "tiger", "bison", "coyote", "dingo", "ferret", "goose", "hedgehog", "ibis", "jackal", "lemur",
           "marmot", "newt", "ocelot", "puffin", "quokka", "robin", "salmon", "toucan", "vole", "wombat", "yak")
_BIOS = ("Just here for the {t} threads.", "Lurker since forever.", "I like {t} and long walks.",
         "Opinions are my own.", "Weekend {t} enthusiast.", "")
_BAN_REASONS = ("Spam", "Harassment", "Repeated off-topic posts", "Self-promotion", "Rule 3: be civil",
                "Ban evasion")
_SUBJECTS = ("Quick question", "About your post", "Thanks!", "Meetup this weekend?", "Your comment",
             "Trade offer", "Hello from {t}", "Re: your {noun}", "Collaboration idea", "Following up")
_MSG_BODIES = ("Hi! I saw your post about the {noun} and wanted to ask where you got it.",
               "Thanks for the advice in the thread, it really helped.",
               "Would you be up for a {t} meetup sometime next month?",
               "Just wanted to say I enjoyed your comment about the {noun}.",
               "Do you still have the {adj} {noun} for sale?",
               "Sorry for the late reply, I have been busy with the {noun}.")


def _topic(ci: int) -> tuple[str, str, tuple[str, ...]]:
    return _TOPICS[ci % len(_TOPICS)]


def n_communities_for(size: int) -> int:
    return min(50 + size // 1000, len(_TOPICS) * len(_SUFFIXES))


def n_users_for(size: int) -> int:
    return min(1000 + size // 10, 60_000)


# ===========================================================================
# Schema
# ===========================================================================


class Base(DeclarativeBase):
    pass


class Meta(MetaTable, Base):
    pass


class User(Base):
    """A member (plain-text synthetic password: tasks sign in as them)."""

    __tablename__ = "users"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    username: Mapped[str] = mapped_column(String)
    name_key: Mapped[str] = mapped_column(String)
    password: Mapped[str] = mapped_column(String)
    created_day: Mapped[int] = mapped_column(Integer)
    bio: Mapped[str] = mapped_column(String)
    post_karma: Mapped[int] = mapped_column(Integer)
    comment_karma: Mapped[int] = mapped_column(Integer)
    __table_args__ = (Index("ix_users_name_key", "name_key", unique=True),)


class Community(Base):
    __tablename__ = "communities"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    name: Mapped[str] = mapped_column(String)
    title: Mapped[str] = mapped_column(String)
    description: Mapped[str] = mapped_column(Text)
    created_day: Mapped[int] = mapped_column(Integer)
    creator_id: Mapped[int] = mapped_column(Integer)
    subscribers: Mapped[int] = mapped_column(Integer)
    post_count: Mapped[int] = mapped_column(Integer)
    __table_args__ = (Index("ix_communities_name", "name", unique=True),)


class Moderator(Base):
    __tablename__ = "moderators"
    community_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    since_day: Mapped[int] = mapped_column(Integer)
    __table_args__ = (Index("ix_moderators_user", "user_id"),)


class Post(Base):
    __tablename__ = "posts"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    community_id: Mapped[int] = mapped_column(Integer)
    user_id: Mapped[int] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(String)
    title: Mapped[str] = mapped_column(String)
    body: Mapped[str] = mapped_column(Text)
    url: Mapped[str | None] = mapped_column(String)
    created: Mapped[int] = mapped_column(Integer)
    ups: Mapped[int] = mapped_column(Integer)
    downs: Mapped[int] = mapped_column(Integer)
    score: Mapped[int] = mapped_column(Integer)
    comment_count: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String)
    locked: Mapped[bool] = mapped_column(Boolean)
    pinned: Mapped[bool] = mapped_column(Boolean)
    hot0: Mapped[float] = mapped_column(Float)
    #: Positions (1 = first) in the "top" (score desc, id desc), "new" (created desc, id
    #: desc) and "comments" (comment_count desc, id desc) orders: the rowids of the search
    #: indexes, so a search walks matches in its sort order and stops after one page.
    top_rank: Mapped[int | None] = mapped_column(Integer)
    new_rank: Mapped[int | None] = mapped_column(Integer)
    cmt_rank: Mapped[int | None] = mapped_column(Integer)
    __table_args__ = (
        Index("ix_posts_comm_hot", "community_id", "hot0"),
        Index("ix_posts_comm_created", "community_id", "created"),
        Index("ix_posts_comm_score", "community_id", "score"),
        Index("ix_posts_hot", "hot0"),
        Index("ix_posts_created", "created"),
        Index("ix_posts_score", "score"),
        Index("ix_posts_user", "user_id", "created"),
        Index("ix_posts_pinned", "pinned", "community_id"),
        Index("ix_posts_comm_title", "community_id", "title"),
        Index("ix_posts_top_rank", "top_rank", unique=True),
        Index("ix_posts_new_rank", "new_rank", unique=True),
        Index("ix_posts_cmt_rank", "cmt_rank", unique=True),
    )


class Comment(Base):
    __tablename__ = "comments"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    post_id: Mapped[int] = mapped_column(Integer)
    parent_id: Mapped[int | None] = mapped_column(Integer)
    user_id: Mapped[int] = mapped_column(Integer)
    body: Mapped[str] = mapped_column(Text)
    created: Mapped[int] = mapped_column(Integer)
    ups: Mapped[int] = mapped_column(Integer)
    downs: Mapped[int] = mapped_column(Integer)
    score: Mapped[int] = mapped_column(Integer)
    depth: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String)
    __table_args__ = (Index("ix_comments_post", "post_id"), Index("ix_comments_user", "user_id", "created"))


class Vote(Base):
    __tablename__ = "votes"
    user_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    kind: Mapped[str] = mapped_column(String, primary_key=True)
    target_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    value: Mapped[int] = mapped_column(Integer)


class Subscription(Base):
    __tablename__ = "subscriptions"
    user_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    community_id: Mapped[int] = mapped_column(Integer, primary_key=True)


class Saved(Base):
    __tablename__ = "saved"
    user_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    kind: Mapped[str] = mapped_column(String, primary_key=True)
    target_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    at: Mapped[int] = mapped_column(Integer)


class Message(Base):
    __tablename__ = "messages"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    sender_id: Mapped[int] = mapped_column(Integer)
    recipient_id: Mapped[int] = mapped_column(Integer)
    subject: Mapped[str] = mapped_column(String)
    body: Mapped[str] = mapped_column(Text)
    created: Mapped[int] = mapped_column(Integer)
    read: Mapped[bool] = mapped_column(Boolean)
    __table_args__ = (Index("ix_messages_to", "recipient_id", "created"),
                      Index("ix_messages_from", "sender_id", "created"))


class Ban(Base):
    __tablename__ = "bans"
    community_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    moderator_id: Mapped[int] = mapped_column(Integer)
    reason: Mapped[str] = mapped_column(String)
    created: Mapped[int] = mapped_column(Integer)
    until: Mapped[int | None] = mapped_column(Integer)


class ModLog(Base):
    __tablename__ = "mod_log"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    community_id: Mapped[int] = mapped_column(Integer)
    moderator_id: Mapped[int] = mapped_column(Integer)
    action: Mapped[str] = mapped_column(String)
    target: Mapped[str] = mapped_column(String)
    details: Mapped[str] = mapped_column(String)
    created: Mapped[int] = mapped_column(Integer)
    __table_args__ = (Index("ix_mod_log_comm", "community_id", "created"),)


#: Search indexes (contentless; world post text has no "_", so "_" joins filter tokens):
#: ``posts_fts`` (full detail, for bm25) has rowid = ``top_rank``; the ``detail=none``
#: ones (cheap: rowid lists only) hold the text plus filter tokens ``_c<community>``,
#: ``_u<author>`` and ``_k<kind>``, with rowid = the rank of their sort order.
_TOKENIZE = "tokenize=\"porter unicode61 remove_diacritics 2 tokenchars '_'\""
_FTS_DDL = (f"CREATE VIRTUAL TABLE posts_fts USING fts5(title, body, content='', {_TOKENIZE})",
            f"CREATE VIRTUAL TABLE posts_fts_top USING fts5(title, body, tags, content='', detail=none, {_TOKENIZE})",
            f"CREATE VIRTUAL TABLE posts_fts_new USING fts5(title, body, tags, content='', detail=none, {_TOKENIZE})",
            f"CREATE VIRTUAL TABLE posts_fts_cmt USING fts5(title, body, tags, content='', detail=none, {_TOKENIZE})")
#: (index, rank column) walked by each search sort.
_SORT_INDEX = {"relevance": ("posts_fts_top", "top_rank"), "top": ("posts_fts_top", "top_rank"),
               "new": ("posts_fts_new", "new_rank"), "comments": ("posts_fts_cmt", "cmt_rank")}
_RANK_ORDER = {"top_rank": "score DESC, id DESC", "new_rank": "created DESC, id DESC",
               "cmt_rank": "comment_count DESC, id DESC"}
_FTS_RANK = "bm25(5.0, 1.0)"




SCHEMA_FINGERPRINT = schema_fingerprint(GENERATOR_VERSION, Base.metadata, *_FTS_DDL, _FTS_RANK)
_JSON = __import__("json").JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


# ===========================================================================
# Generation
# ===========================================================================

_BATCH = 20_000


def _fill(text: str, r: Rng, nouns: Sequence[str]) -> str:
    noun = r.choice(nouns)
    noun2 = r.choice(nouns)
    if noun2 == noun:
        noun2 = nouns[(nouns.index(noun) + 1) % len(nouns)]
    # ("a underrated lens", "get a API design": the article as a person writes it)
    return tidy_generated(text.format(noun=noun, noun_c=noun[:1].upper() + noun[1:], noun2=noun2, adj=r.choice(_ADJS),
                                      n=r.randint(2, 40), year=2020 + r.below(6),
                                      price=r.choice((50, 100, 200, 300, 500, 1000)), t=""))


class _Builder(WorldBuilder):
    def __init__(self, path: Path, seed: int, size: int, progress: BuildProgress) -> None:
        super().__init__(path, APP, GENERATOR_VERSION, seed, size, progress, Base.metadata)
        self.n_users = n_users_for(size)
        self.n_comms = n_communities_for(size)

    def run(self) -> str:
        self.begin()
        self.p.stage("users & communities", 2)
        self._people()
        self.p.stage("posts & comments", self.size)
        self._content()
        self.p.stage("votes, subscriptions, messages", 3)
        self._social()
        self.p.stage("search index & indexes", 2)
        self._search_indexes()
        self.create_indexes()
        return self.finish(SCHEMA_FINGERPRINT)

    def _search_indexes(self) -> None:
        for col, order in _RANK_ORDER.items():
            self.db.execute(f"UPDATE posts SET {col} = r.k FROM (SELECT id, row_number() OVER (ORDER BY {order}) AS k"
                            f" FROM posts) AS r WHERE posts.id = r.id")
        for ddl in _FTS_DDL:
            self.db.execute(ddl)
        self.db.execute("INSERT INTO posts_fts(rowid, title, body) SELECT top_rank, title, body FROM posts"
                        " ORDER BY top_rank")
        tags = "'_c' || community_id || ' _u' || user_id || ' _k' || kind"
        for table, col in sorted(set(_SORT_INDEX.values())):
            self.db.execute(f"INSERT INTO {table}(rowid, title, body, tags) SELECT {col}, title, body, {tags}"
                            f" FROM posts ORDER BY {col}")
        for table in ("posts_fts", *sorted({t for t, _ in _SORT_INDEX.values()})):
            self.db.execute(f"INSERT INTO {table}({table}) VALUES('optimize')")
        self.db.execute(f"INSERT INTO posts_fts(posts_fts, rank) VALUES('rank', '{_FTS_RANK}')")

    # -- users and communities ---------------------------------------------------------

    def _people(self) -> None:
        r = Rng.derive(APP, self.seed, "users")
        seen: set[str] = set()
        self.users: list[list[Any]] = [[]]  # index = id: [username, password, created_day, bio]
        for uid in range(1, self.n_users + 1):
            stem = f"{r.choice(_USER_A)}_{r.choice(_USER_N)}"
            name = stem + (str(r.randint(1, 99)) if r.below(100) < 70 else "")
            while name.lower() in seen:
                name = stem + str(r.randint(100, 9999))
            seen.add(name.lower())
            bio = r.choice(_BIOS).format(t=_topic(r.below(len(_TOPICS)))[1].lower())
            self.users.append([name, seeded_password(APP, self.seed, uid), -r.randint(30, 1500), bio])
        self.p.advance()
        # Communities: topic i with suffix (i // len(topics)).
        rc = Rng.derive(APP, self.seed, "communities")
        self.comms: list[dict[str, Any]] = [{}]
        self.mods: dict[int, list[int]] = {}
        for cid in range(1, self.n_comms + 1):
            ti = (cid - 1) % len(_TOPICS)
            suffix = _SUFFIXES[(cid - 1) // len(_TOPICS)]
            tname, ttitle, nouns = _TOPICS[ti]
            name = tname + suffix
            title = _SUFFIX_TITLES[suffix].format(t=ttitle)
            creator = 1 + rc.below(self.n_users)
            created_day = -rc.randint(800, 3000)
            desc = (f"A community for everything about {ttitle.lower()}: share your {nouns[0]}s, ask about "
                    f"{nouns[1]}s and talk {nouns[2]}s. Be civil, stay on topic and search before posting.")
            mods = [creator]
            for _ in range(rc.randint(0, 3)):
                m = 1 + rc.below(self.n_users)
                if m not in mods:
                    mods.append(m)
            self.mods[cid] = mods
            self.comms.append({"name": name, "title": title, "nouns": nouns, "desc": desc, "created_day": created_day,
                               "creator": creator, "weight": 1 + rc.below(20) + (20 if suffix == "" else 0)})
        self.p.advance()
        self.comm_cum = []
        total = 0
        for c in self.comms[1:]:
            total += c["weight"]
            self.comm_cum.append(total)

    # -- posts and comments ----------------------------------------------------------------

    def _author(self, r: Rng) -> int:
        # Activity is skewed: low ids post much more often.
        return 1 + int(self.n_users * (r.random() ** 2.2))

    def _content(self) -> None:
        base = stable_hash64(APP, self.seed, "posts")
        n_users = self.n_users
        post_karma = [0] * (n_users + 1)
        comment_karma = [0] * (n_users + 1)
        first_seen = [0] * (n_users + 1)
        self.post_comm: list[int] = [0]
        self.post_created: list[int] = [0]
        comm_posts = [0] * (self.n_comms + 1)
        pinned_done: set[int] = set()
        post_rows: list[tuple] = []
        comment_rows: list[tuple] = []
        cid_next = 0
        self.comment_post: list[int] = [0]
        for pid in range(1, self.size + 1):
            r = Rng.sub(base, pid)
            ci = 1 + r.weighted_index(self.comm_cum)
            comm = self.comms[ci]
            nouns = comm["nouns"]
            author = self._author(r)
            band = r.below(100)
            if band < 22:
                age = r.randint(600, 14 * DAY)
            elif band < 45:
                age = r.randint(14 * DAY, 90 * DAY)
            else:
                age = r.randint(90 * DAY, 730 * DAY)
            created = -age - r.below(3600)
            title = _fill(r.choice(_TITLE_PATTERNS), r, nouns)
            is_link = r.below(100) < 25
            if is_link:
                slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:60]
                url = f"https://{r.choice(_DOMAINS)}/{slug}-{r.randint(1000, 99999)}"
                body = ""
                kind = "link"
            else:
                url = None
                kind = "text"
                body = " ".join(_fill(r.choice(_SENTENCES), r, nouns) for _ in range(r.randint(1, 4)))
            u = r.random()
            n_comments = int(u * u * u * 24)
            if r.below(250) == 0:
                n_comments += r.randint(30, 90)
            ups = 1 + int((r.random() ** 4) * 2500) + n_comments * r.randint(1, 4)
            downs = int(ups * r.random() * 0.3)
            score = ups - downs
            locked = r.below(100) < 4
            pinned = False
            if ci not in pinned_done and r.below(100) < 3 and age < 60 * DAY:
                pinned = True
                pinned_done.add(ci)
            # comments
            depth_of: list[tuple[int, int]] = []  # (comment id, depth)
            span = max(120, min(3 * DAY, age - 60))
            for _ in range(n_comments):
                cid_next += 1
                if not depth_of or r.below(100) < 40:
                    parent, depth = None, 0
                else:
                    pc, pd = depth_of[r.below(len(depth_of))]
                    if pd >= MAX_DEPTH:
                        parent, depth = None, 0
                    else:
                        parent, depth = pc, pd + 1
                depth_of.append((cid_next, depth))
                c_created = min(created + 60 + r.below(span), -1)
                c_author = self._author(r)
                c_body = _fill(r.choice(_COMMENTS), r, nouns)
                if r.below(100) < 30:
                    c_body += " " + _fill(r.choice(_SENTENCES), r, nouns)
                c_ups = 1 + int((r.random() ** 5) * 400)
                c_downs = int(c_ups * r.random() * 0.4)
                st = r.below(100)
                status = "deleted" if st < 3 else ("removed" if st < 4 else "live")
                c_score = c_ups - c_downs
                comment_karma[c_author] += c_score
                first_seen[c_author] = min(first_seen[c_author], c_created // DAY)
                comment_rows.append((cid_next, pid, parent, c_author, c_body, c_created, c_ups, c_downs, c_score,
                                     depth, status))
                self.comment_post.append(pid)
            post_karma[author] += score
            first_seen[author] = min(first_seen[author], created // DAY)
            comm_posts[ci] += 1
            hot0 = hot_score(score, created, 0)
            post_rows.append((pid, ci, author, kind, title, body, url, created, ups, downs, score, n_comments,
                              "live", locked, pinned, hot0, None, None, None))
            self.post_comm.append(ci)
            self.post_created.append(created)
            if len(post_rows) >= _BATCH:
                self.insert("posts", post_rows)
                self.insert("comments", comment_rows)
                self.p.advance(len(post_rows))
                post_rows, comment_rows = [], []
        self.insert("posts", post_rows)
        self.insert("comments", comment_rows)
        self.p.advance(len(post_rows))
        self.n_comments = cid_next
        for cid in range(1, self.n_comms + 1):  # a community's creator joined before creating it
            c = self.comms[cid]
            first_seen[c["creator"]] = min(first_seen[c["creator"]], c["created_day"])
        user_rows = []
        for uid in range(1, n_users + 1):
            name, pw, created_day, bio = self.users[uid]
            created_day = min(created_day, first_seen[uid] - 1)
            self.users[uid][2] = created_day
            user_rows.append((uid, name, name.lower(), pw, created_day, bio, post_karma[uid], comment_karma[uid]))
        self.insert("users", user_rows)
        self.comm_posts = comm_posts

    # -- social ------------------------------------------------------------------------------

    def _social(self) -> None:
        r = Rng.derive(APP, self.seed, "social")
        n_users, n_comms = self.n_users, self.n_comms
        # subscriptions
        subs_count = [0] * (n_comms + 1)
        sub_rows = []
        for uid in range(1, n_users + 1):
            chosen: list[int] = []
            for _ in range(r.randint(3, 12)):
                c = 1 + r.weighted_index(self.comm_cum)
                if c not in chosen:
                    chosen.append(c)
            for c in sorted(chosen):
                sub_rows.append((uid, c))
                subs_count[c] += 1
        self.insert("subscriptions", sub_rows)
        # communities (now that subscriber counts are known) and moderators
        rows, mod_rows = [], []
        for cid in range(1, n_comms + 1):
            comm = self.comms[cid]
            rows.append((cid, comm["name"], comm["title"], comm["desc"], comm["created_day"], comm["creator"],
                         subs_count[cid], self.comm_posts[cid]))
            for k, m in enumerate(self.mods[cid]):
                since = comm["created_day"] + (0 if k == 0 else r.randint(10, 700))
                mod_rows.append((cid, m, max(since, self.users[m][2])))
        self.insert("communities", rows)
        self.insert("moderators", sorted(mod_rows))
        self.p.advance()
        # votes of every 10th user
        vote_rows = []
        for uid in range(1, n_users + 1, 10):
            seen: set[tuple[str, int]] = set()
            for _ in range(25):
                key = ("post", 1 + r.below(self.size))
                if key not in seen:
                    seen.add(key)
                    vote_rows.append((uid, key[0], key[1], 1 if r.below(100) < 80 else -1))
            for _ in range(15):
                if self.n_comments == 0:
                    break
                key = ("comment", 1 + r.below(self.n_comments))
                if key not in seen:
                    seen.add(key)
                    vote_rows.append((uid, key[0], key[1], 1 if r.below(100) < 75 else -1))
        vote_rows.sort()
        self.insert("votes", vote_rows)
        # saved items of every 4th user
        saved_rows = []
        for uid in range(1, n_users + 1, 4):
            seen2: set[tuple[str, int]] = set()
            for _ in range(r.randint(0, 6)):
                if r.below(100) < 75 or self.n_comments == 0:
                    key = ("post", 1 + r.below(self.size))
                else:
                    key = ("comment", 1 + r.below(self.n_comments))
                if key not in seen2:
                    seen2.add(key)
                    saved_rows.append((uid, key[0], key[1], -r.randint(60, 200 * DAY)))
        saved_rows.sort()
        self.insert("saved", saved_rows)
        # private messages
        msg_rows = []
        n_msgs = n_users * 2
        draws = []
        for _ in range(n_msgs):
            sender = self._author(r)
            recipient = 1 + r.below(n_users)
            if recipient == sender:
                recipient = recipient % n_users + 1
            created = -r.randint(300, 365 * DAY)
            nouns = _topic(r.below(len(_TOPICS)))[2]
            tname = _topic(r.below(len(_TOPICS)))[1]
            subject = tidy_generated(r.choice(_SUBJECTS).format(t=tname, noun=r.choice(nouns)))
            body = tidy_generated(r.choice(_MSG_BODIES).format(t=tname.lower(), noun=r.choice(nouns), adj=r.choice(_ADJS)))
            read = created < -14 * DAY or r.below(100) < 40
            draws.append((created, sender, recipient, subject, body, read))
        draws.sort(key=lambda d: (d[0], d[1], d[2]))
        for i, (created, sender, recipient, subject, body, read) in enumerate(draws, 1):
            msg_rows.append((i, sender, recipient, subject, body, created, read))
        self.insert("messages", msg_rows)
        self.p.advance()
        # bans and the moderation log
        ban_rows, log = [], []
        for cid in range(1, n_comms + 1):
            mods = self.mods[cid]
            banned: set[int] = set()
            for _ in range(r.randint(0, 4)):
                uid = 1 + r.below(n_users)
                if uid in mods or uid in banned:
                    continue
                banned.add(uid)
                created = -r.randint(DAY, 300 * DAY)
                kind = r.below(3)
                until = None if kind == 0 else created + r.choice((3, 7, 30, 90, 365)) * DAY
                mod = r.choice(mods)
                reason = r.choice(_BAN_REASONS)
                ban_rows.append((cid, uid, mod, reason, created, until))
                days = "permanently" if until is None else f"for {(until - created) // DAY} days"
                log.append((created, cid, mod, "ban", f"u/{self.users[uid][0]}", f"{reason} ({days})"))
        self.insert("bans", sorted(ban_rows))
        for row in self.db.execute("SELECT c.id, c.post_id, c.user_id, c.created, p.community_id FROM comments c"
                                   " JOIN posts p ON p.id = c.post_id WHERE c.status = 'removed' ORDER BY c.id"):
            mods = self.mods[row[4]]
            log.append((row[3] + 600, row[4], mods[row[0] % len(mods)], "remove_comment", f"comment {row[0]}",
                        "Rule 2: stay on topic"))
        for row in self.db.execute("SELECT id, community_id, created FROM posts WHERE pinned ORDER BY id"):
            mods = self.mods[row[1]]
            log.append((row[2] + 900, row[1], mods[0], "pin_post", f"post {row[0]}", ""))
        log.sort(key=lambda x: (x[0], x[1], x[4]))
        self.insert("mod_log", [(i, cid, mod, action, target, details, min(created, -1))
                                 for i, (created, cid, mod, action, target, details) in enumerate(log, 1)])
        self.p.advance()



def _build_world(path: Path, seed: int, size: int, progress: bool) -> str:
    with BuildProgress(progress, title=f"forum world seed={seed} size={size}:") as bar:
        return _Builder(path, seed, size, bar).run()


# ===========================================================================
# Read API
# ===========================================================================

_STOPWORDS = frozenset(["a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "has", "have", "i", "in", "is", "it", "its", "of", "on", "or", "that", "the", "this", "to", "was", "with", "my", "your", "you"])


def _unedited(row: dict[str, Any]) -> None:
    row["edited"] = None   # the world has no edits; an edit at run time sets the day


#: World rows as dicts (the sort and search columns of posts stay in the file).
POST_ROWS = RowMap(Post, drop=("hot0", "top_rank", "new_rank", "cmt_rank"), extra=_unedited)
COMMENT_ROWS = RowMap(Comment, extra=_unedited)
USER_ROWS = RowMap(User, drop=("name_key",))
MESSAGE_ROWS = RowMap(Message)
COMMUNITY_ROWS = RowMap(Community)
_TABLES = ("posts", "comments", "users", "communities", "messages", "mod_log")
_SORT_SQL = {"hot": "hot0 DESC, id DESC", "new": "created DESC, id DESC", "top": "score DESC, id DESC",
             "comments": "comment_count DESC, id DESC"}
MAX_PER_PAGE = 100
#: list_posts sorts merged per community: the sort column of the (community_id, column) index.
_MERGE_KEY = {"hot": "hot0", "new": "created", "top": "score"}
#: Posts kept in memory per (community, sort): the first four pages of a listing of many
#: communities merge these instead of querying each community's index again.
_TOP_KEPT = 128
#: ``search()`` totals are exact up to this many matches, then capped.
COUNT_CAP = 1000
#: With more matches than this, relevance ranks (bm25) only the this-many highest-scoring
#: matches and lists the rest after them by score (bounds the ranking cost).
RELEVANCE_POOL = 500
#: The last query word matches as a prefix unless it alone is in this many posts.
PREFIX_COMMON_DF = 1000


def match_expression(query: str) -> str | None:
    """The FTS5 MATCH expression for a query (see :func:`simweb.fulltext.match_expression`):
    quoted words ANDed, at most 10, the last word a prefix."""
    return fulltext.match_expression(query, _STOPWORDS, 10)


class ForumWorld(WorldFile):
    """Read-only access to one generated forum world (plain JSON-able values only)."""

    APP = APP
    GENERATOR_VERSION = GENERATOR_VERSION
    SCHEMA_FINGERPRINT = SCHEMA_FINGERPRINT
    DEFAULT_SIZE = 20_000
    MIN_SIZE = 1
    ID_TABLES = _TABLES
    #: how rows of each table read (the runtime schema's ``required: columns`` lists their keys)
    ROW_MAPS = {m.table: m for m in (POST_ROWS, COMMENT_ROWS, USER_ROWS, MESSAGE_ROWS, COMMUNITY_ROWS)}
    build = staticmethod(_build_world)

    def __init__(self, path: Path | str, *, built: bool = False) -> None:
        super().__init__(path, built=built)
        conn = self._db.conn()
        self._communities = COMMUNITY_ROWS.rows(conn)
        self._post_rows = RowCache(POST_ROWS, 8_192)
        self._user_rows = RowCache(USER_ROWS, 8_192)
        self._comm_by_id = {c["id"]: c for c in self._communities}
        self._comm_by_name = {c["name"].lower(): c for c in self._communities}
        self._names = sorted(c["name"] for c in self._communities)
        self._mods: dict[int, list[int]] = {}
        self._moderates: dict[int, list[int]] = {}
        for cid, uid in conn.execute("SELECT community_id, user_id FROM moderators ORDER BY since_day, community_id,"
                                     " user_id"):
            self._mods.setdefault(cid, []).append(uid)
            self._moderates.setdefault(uid, []).append(cid)
        for v in self._moderates.values():
            v.sort()
        self._prefix = fulltext.PrefixPolicy("posts_fts", PREFIX_COMMON_DF)
        # (community, sort column) -> its best posts as (-value, -id), best first, and
        # whether that is all of the community's posts; filled on first use.
        self._tops: dict[tuple[int, str], tuple[list[tuple[Any, int]], bool]] = {}
        self._usernames: dict[int, str] = {}   # at most one entry per world user

    # -- communities ----------------------------------------------------------------

    def communities(self) -> list[dict[str, Any]]:
        return [dict(c) for c in self._communities]

    def community_names(self) -> list[str]:
        """Every community's name, alphabetically."""
        return list(self._names)

    def community(self, cid: int) -> dict[str, Any] | None:
        c = self._comm_by_id.get(int(cid))
        return dict(c) if c else None

    def community_by_name(self, name: str) -> dict[str, Any] | None:
        c = self._comm_by_name.get(str(name or "").strip().lower())
        return dict(c) if c else None

    def moderators(self, cid: int) -> list[int]:
        """User ids of a community's moderators, senior first."""
        return list(self._mods.get(int(cid), []))

    def moderated_by(self, uid: int) -> list[int]:
        """Ids of the communities a user moderates."""
        return list(self._moderates.get(int(uid), []))

    # -- users ------------------------------------------------------------------------

    def user(self, uid: int) -> dict[str, Any] | None:
        return self._user_rows.get(self._conn, int(uid))

    def user_by_name(self, name: str) -> dict[str, Any] | None:
        return USER_ROWS.one(self._conn(), "name_key = ?", (str(name or "").strip().lower(),))

    def usernames(self, ids: Sequence[int]) -> dict[int, str]:
        """{id: username} of the world users among ``ids``, in id order (names never change:
        each is read from the file once)."""
        ids = sorted({int(i) for i in ids})
        known = self._usernames
        missing = [i for i in ids if i not in known]
        for at in range(0, len(missing), 500):
            chunk = missing[at:at + 500]
            q = ",".join("?" * len(chunk))
            known.update(self._conn().execute(f"SELECT id, username FROM users WHERE id IN ({q})", chunk))
        return {i: known[i] for i in ids if i in known}

    # -- posts ------------------------------------------------------------------------

    def post(self, pid: int) -> dict[str, Any] | None:
        return self._post_rows.get(self._conn, int(pid))

    def posts(self, ids: Sequence[int]) -> list[dict[str, Any]]:
        return self._post_rows.in_order(self._conn, [int(i) for i in ids])

    def list_posts(self, communities: Sequence[int] | None, sort: str, since: int | None, limit: int,
                   offset: int = 0) -> list[dict[str, Any]]:
        """Live world posts of some communities (None = all), ``sort`` in hot/new/top/comments,
        created at or after ``since`` (None = any time); bounded by ``limit``."""
        order = _SORT_SQL.get(sort, _SORT_SQL["hot"])
        conds, params = ["status = 'live'"], []
        if communities is not None:
            ids = sorted({int(c) for c in communities})
            if not ids:
                return []
            conds.append(f"community_id IN ({','.join('?' * len(ids))})")
            params += ids
        if since is not None:
            conds.append("created >= ?")
            params.append(int(since))
        limit = max(0, min(int(limit), 1000))
        offset = max(0, int(offset))
        if (communities is not None and 1 < len(ids) <= 400 and sort in _MERGE_KEY
                and (since is None or sort == "new" or since < -60 * DAY)):
            # Several communities: the best (offset + limit) of each from its (community, sort)
            # index (covering: no row reads), merged; then the page's rows.  Sorting every
            # post of the communities would grow with the world.  (World posts are all live.)
            key = _MERGE_KEY[sort]
            if since is None:
                best = self._merged_best(ids, key, offset + limit)
                if best is not None:
                    return self.posts([-i for _, i in best[offset:offset + limit]])
            where = "community_id = ?" + ("" if since is None else " AND created >= ?")
            one = f"SELECT * FROM (SELECT id, {key} FROM posts WHERE {where} ORDER BY {key} DESC, id DESC LIMIT ?)"
            sql = " UNION ALL ".join([one] * len(ids)) + f" ORDER BY {key} DESC, id DESC LIMIT ? OFFSET ?"
            args = [a for cid in ids for a in ((cid, offset + limit) if since is None else (cid, since, offset + limit))]
            return self.posts([r[0] for r in self._conn().execute(sql, args + [limit, offset])])
        return POST_ROWS.rows(self._conn(), " AND ".join(conds), params, order=order, limit=limit, offset=offset)

    def _community_best(self, cid: int, key: str) -> tuple[list[tuple[Any, int]], bool]:
        """The community's ``_TOP_KEPT`` best posts by ``key`` as (-value, -id) in ascending
        order (the ``key DESC, id DESC`` order), and whether that is all of its posts."""
        hit = self._tops.get((cid, key))
        if hit is None:
            rows = self._conn().execute(f"SELECT {key}, id FROM posts WHERE community_id = ? ORDER BY {key} DESC,"
                                        " id DESC LIMIT ?", (cid, _TOP_KEPT + 1)).fetchall()
            hit = ([(-v, -i) for v, i in rows[:_TOP_KEPT]], len(rows) <= _TOP_KEPT)
            self._tops[(cid, key)] = hit
        return hit

    def _merged_best(self, ids: Sequence[int], key: str, n: int) -> list[tuple[Any, int]] | None:
        """The ``n`` best posts of the communities ``ids`` by ``key`` as (-value, -id), best
        first, from the kept per-community lists; None when a list is too short to tell."""
        merged: list[tuple[Any, int]] = []
        for cid in ids:
            best, complete = self._community_best(cid, key)
            if n > len(best) and not complete:
                return None
            merged += best[:n]
        merged.sort()
        return merged[:n]

    def pinned_posts(self, cid: int) -> list[dict[str, Any]]:
        return POST_ROWS.rows(self._conn(), "pinned = 1 AND community_id = ?", (int(cid),))

    def user_posts(self, uid: int, limit: int, offset: int = 0) -> list[dict[str, Any]]:
        return POST_ROWS.rows(self._conn(), "user_id = ?", (int(uid),), order="created DESC, id DESC", limit=limit,
                              offset=offset)

    def search(self, q: str, *, community: int | None = None, author: int | None = None, kind: str | None = None,
               since: int | None = None, sort: str = "relevance", limit: int = 25,
               offset: int = 0) -> dict[str, Any]:
        """Live posts matching ``q`` (FTS5 over title and body; see :func:`match_expression`)
        with filters (community, author, kind, created at or after ``since``).

        ``total`` is exact up to :data:`COUNT_CAP` (then ``capped`` is True).  Sorts:

        * ``new`` (created desc), ``top`` (score desc), ``comments`` (comment_count desc),
          ties by id desc: exact over every match (the index is walked in sort order).
        * ``relevance``: bm25 (title weighted), ties by score desc then id desc.  Exact when
          at most :data:`RELEVANCE_POOL` posts match; with more, the pool is the
          ``RELEVANCE_POOL`` matches first in ``top`` order (highest scores), ranked by
          bm25, followed by the remaining matches in ``top`` order.

        The last word is a prefix unless it alone is in :data:`PREFIX_COMMON_DF`+ posts (see
        :meth:`_expression`).  Without words, the filters alone list posts (newest first for
        relevance).  Cost: unfiltered searches and community/author/kind filters walk only
        about one page of index entries (relevance: bm25 over at most the pool).  Bounded
        less tightly: a time window with a ``top``/``comments``/``relevance`` sort when
        ``COUNT_CAP``+ posts match (the sort's index is walked skipping older posts), and
        relevance with filters (the bm25 pass visits the unfiltered matches between the
        pool's first and last rank) -- both at most the cost of scanning every match.
        """
        conn = self._conn()
        expr = self._expression(conn, q)
        limit = max(1, min(int(limit), MAX_PER_PAGE))
        offset = max(0, int(offset))
        sort = sort if sort in _SORT_INDEX else "relevance"
        if expr is None and sort == "relevance":
            sort = "new"
        terms = [] if expr is None else [expr]
        pconds: list[str] = []  # the same filters on posts (for bm25 ranking of a filtered pool)
        pparams: list[Any] = []
        if community is not None:
            terms.append(f'"_c{int(community)}"')
            pconds.append("p.community_id = ?")
            pparams.append(int(community))
        if author is not None:
            terms.append(f'"_u{int(author)}"')
            pconds.append("p.user_id = ?")
            pparams.append(int(author))
        if kind in ("text", "link"):
            terms.append(f'"_k{kind}"')
            pconds.append("p.kind = ?")
            pparams.append(kind)
        # Without words, the filter tokens alone select (every post has one kind token).
        full = " AND ".join(terms) if terms else '("_ktext" OR "_klink")'
        empty = {"total": 0, "capped": False, "items": []}
        k = None  # the posts created at or after ``since`` are exactly new_rank <= k
        if since is not None:
            row = conn.execute("SELECT new_rank FROM posts WHERE created >= ? ORDER BY created, id LIMIT 1",
                               (int(since),)).fetchone()
            if row is None:
                return empty
            k = row[0]
            pconds.append("p.new_rank <= ?")
            pparams.append(k)
        try:
            kb, kp = ("", []) if k is None else (" AND rowid <= ?", [k])
            total = conn.execute(f"SELECT count(*) FROM (SELECT 1 FROM posts_fts_new WHERE posts_fts_new MATCH ?{kb}"
                                 f" LIMIT {COUNT_CAP})", [full, *kp]).fetchone()[0]
            if total == 0 or (offset >= total and total < COUNT_CAP):
                return {"total": total, "capped": total >= COUNT_CAP, "items": []}
            col, ranks = self._search_ranks(conn, expr, full, (pconds, pparams), k, total, sort, limit, offset)
        except sqlite3.OperationalError as exc:
            if "fts5" not in str(exc):
                raise
            return empty
        if not ranks:
            items = []
        else:
            got = {r[-1]: POST_ROWS(r[:-1]) for r in conn.execute(
                f"SELECT {POST_ROWS.cols}, {col} FROM posts WHERE {col} IN ({','.join('?' * len(ranks))})", ranks)}
            items = [got[r] for r in ranks]
        return {"total": total, "capped": total >= COUNT_CAP, "items": items}

    def _expression(self, conn: sqlite3.Connection, q: str) -> str | None:
        """:func:`match_expression`, minus the last word's prefix if that word alone is in
        :data:`PREFIX_COMMON_DF` or more posts (the user almost surely typed it whole, and
        merging the postings of every word it starts would dominate the query's cost)."""
        return self._prefix.apply(conn, match_expression(q))

    def _search_ranks(self, conn: sqlite3.Connection, expr: str | None, full: str, filters: tuple[list[str], list[Any]],
                      k: int | None, total: int, sort: str, limit: int, offset: int) -> tuple[str, list[int]]:
        """(rank column, the page's ranks in order) for a text search; see :meth:`search`."""
        table, col = _SORT_INDEX[sort]
        if k is None or sort == "new":
            kb, kp = ("", []) if k is None else (" AND rowid <= ?", [k])

            def walk(lim: int, off: int, after: int | None = None) -> list[int]:
                ab, ap = ("", []) if after is None else (" AND rowid > ?", [after])
                return [r[0] for r in conn.execute(
                    f"SELECT rowid FROM {table} WHERE {table} MATCH ?{kb}{ab} ORDER BY rowid LIMIT ? OFFSET ?",
                    [full, *kp, *ap, lim, off])]
        elif total < COUNT_CAP:
            # Few posts in the window: take them all from the "new" index and sort them.
            def walk(lim: int, off: int, after: int | None = None) -> list[int]:
                ab, ap = ("", []) if after is None else (f" AND p.{col} > ?", [after])
                return [r[0] for r in conn.execute(
                    f"SELECT p.{col} FROM posts_fts_new f CROSS JOIN posts p ON p.new_rank = f.rowid"
                    f" WHERE posts_fts_new MATCH ? AND f.rowid <= ?{ab} ORDER BY p.{col} LIMIT ? OFFSET ?",
                    [full, k, *ap, lim, off])]
        else:
            # Many posts in the window: walk the sort's index, skipping older posts.
            def walk(lim: int, off: int, after: int | None = None) -> list[int]:
                ab, ap = ("", []) if after is None else (" AND f.rowid > ?", [after])
                return [r[0] for r in conn.execute(
                    f"SELECT f.rowid FROM {table} f CROSS JOIN posts p ON p.{col} = f.rowid"
                    f" WHERE {table} MATCH ? AND p.new_rank <= ?{ab} ORDER BY f.rowid LIMIT ? OFFSET ?",
                    [full, k, *ap, lim, off])]
        if sort != "relevance":
            return col, walk(limit, offset)
        end = offset + limit
        pconds, pparams = filters
        if not pconds:  # no filters: the pool is bounded by its last rank alone
            pool = None
            cut = None if total <= RELEVANCE_POOL and total < COUNT_CAP else walk(1, RELEVANCE_POOL - 1)[0]
        else:
            pool = walk(RELEVANCE_POOL, 0)
            cut = None if total <= RELEVANCE_POOL and total < COUNT_CAP else pool[-1]
        out: list[int] = []
        if offset < RELEVANCE_POOL:
            n = min(end, RELEVANCE_POOL) - offset
            cb, cp = ("", []) if cut is None else (" AND f.rowid <= ?", [cut])
            if pool is None:  # bm25 straight from the index (below the cut)
                out = [r[0] for r in conn.execute(
                    f"SELECT f.rowid FROM posts_fts f WHERE posts_fts MATCH ?{cb} ORDER BY f.rank, f.rowid"
                    f" LIMIT ? OFFSET ?", [expr, *cp, n, offset])]
            elif pool:
                # bm25 of the pool's posts: the matches between its first and last rank that pass
                # the filters (one query, so bm25's per-query statistics are computed once).
                out = [r[0] for r in conn.execute(
                    f"SELECT f.rowid FROM posts_fts f CROSS JOIN posts p ON p.top_rank = f.rowid"
                    f" WHERE posts_fts MATCH ? AND f.rowid BETWEEN ? AND ? AND {' AND '.join(pconds)}"
                    f" ORDER BY f.rank, f.rowid LIMIT ? OFFSET ?", [expr, pool[0], pool[-1], *pparams, n, offset])]
        if end > RELEVANCE_POOL and cut is not None:
            start = max(offset, RELEVANCE_POOL)
            out += walk(end - start, start - RELEVANCE_POOL, after=cut)
        return col, out

    # -- comments ---------------------------------------------------------------------

    def comment(self, cid: int) -> dict[str, Any] | None:
        return COMMENT_ROWS.one(self._conn(), "id = ?", (int(cid),))

    def comments_of(self, pid: int) -> list[dict[str, Any]]:
        return COMMENT_ROWS.rows(self._conn(), "post_id = ?", (int(pid),))

    def user_comments(self, uid: int, limit: int, offset: int = 0) -> list[dict[str, Any]]:
        return COMMENT_ROWS.rows(self._conn(), "user_id = ?", (int(uid),), order="created DESC, id DESC",
                                 limit=limit, offset=offset)

    # -- votes, subscriptions, saved ------------------------------------------------------

    def vote(self, uid: int, kind: str, tid: int) -> int:
        row = self._conn().execute("SELECT value FROM votes WHERE user_id = ? AND kind = ? AND target_id = ?",
                                   (int(uid), kind, int(tid))).fetchone()
        return row[0] if row else 0

    def votes_on(self, uid: int, kind: str, ids: Sequence[int]) -> dict[int, int]:
        """A user's world votes on some posts or comments: {target id: value} (one query)."""
        ids = sorted({int(i) for i in ids})
        if not ids:
            return {}
        return dict(self._conn().execute(
            f"SELECT target_id, value FROM votes WHERE user_id = ? AND kind = ? AND target_id IN"
            f" ({','.join('?' * len(ids))})", [int(uid), kind, *ids]).fetchall())

    def votes_of(self, uid: int) -> list[tuple[str, int, int]]:
        return [tuple(r) for r in self._conn().execute(
            "SELECT kind, target_id, value FROM votes WHERE user_id = ? ORDER BY kind, target_id", (int(uid),))]

    def subscriptions(self, uid: int) -> list[int]:
        return [r[0] for r in self._conn().execute(
            "SELECT community_id FROM subscriptions WHERE user_id = ? ORDER BY community_id", (int(uid),))]

    def saved(self, uid: int) -> list[tuple[str, int, int]]:
        return [tuple(r) for r in self._conn().execute(
            "SELECT kind, target_id, at FROM saved WHERE user_id = ? ORDER BY at DESC, kind, target_id", (int(uid),))]

    # -- messages -------------------------------------------------------------------------

    def message(self, mid: int) -> dict[str, Any] | None:
        return MESSAGE_ROWS.one(self._conn(), "id = ?", (int(mid),))

    def inbox(self, uid: int) -> list[dict[str, Any]]:
        return MESSAGE_ROWS.rows(self._conn(), "recipient_id = ?", (int(uid),), order="created DESC, id DESC",
                                 limit=200)

    def outbox(self, uid: int) -> list[dict[str, Any]]:
        return MESSAGE_ROWS.rows(self._conn(), "sender_id = ?", (int(uid),), order="created DESC, id DESC", limit=200)

    # -- moderation ---------------------------------------------------------------------

    def bans(self, cid: int) -> list[dict[str, Any]]:
        keys = ("community_id", "user_id", "moderator_id", "reason", "created", "until")
        return [dict(zip(keys, r)) for r in self._conn().execute(
            "SELECT community_id, user_id, moderator_id, reason, created, until FROM bans WHERE community_id = ?"
            " ORDER BY created DESC, user_id", (int(cid),))]

    def ban(self, cid: int, uid: int) -> dict[str, Any] | None:
        keys = ("community_id", "user_id", "moderator_id", "reason", "created", "until")
        row = self._conn().execute(
            "SELECT community_id, user_id, moderator_id, reason, created, until FROM bans WHERE community_id = ?"
            " AND user_id = ?", (int(cid), int(uid))).fetchone()
        return None if row is None else dict(zip(keys, row))

    def mod_log(self, cid: int, limit: int = 50) -> list[dict[str, Any]]:
        keys = ("id", "community_id", "moderator_id", "action", "target", "details", "created")
        return [dict(zip(keys, r)) for r in self._conn().execute(
            "SELECT id, community_id, moderator_id, action, target, details, created FROM mod_log"
            " WHERE community_id = ? ORDER BY created DESC, id DESC LIMIT ?", (int(cid), int(limit)))]

    def mod_log_entry(self, lid: int) -> dict[str, Any] | None:
        keys = ("id", "community_id", "moderator_id", "action", "target", "details", "created")
        row = self._conn().execute("SELECT id, community_id, moderator_id, action, target, details, created"
                                   " FROM mod_log WHERE id = ?", (int(lid),)).fetchone()
        return None if row is None else dict(zip(keys, row))

    # -- ids --------------------------------------------------------------------------------

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        """A read-only SQL query (for task samplers and tests)."""
        return [tuple(r) for r in self._conn().execute(sql, list(params))]

