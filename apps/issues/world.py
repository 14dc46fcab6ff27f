"""Simtracker's read-only *world data*: users, projects, members, labels, milestones,
issues, comments (with system notes), issue links and notifications.

A world is generated deterministically from ``(seed, size)`` into a SQLite file (see
:mod:`simweb.worlddb` for the cache, atomic build, content hash and PRNG) and shared,
read-only, by every environment of the issues app.  ``size`` is the number of issues;
the other tables scale with it:

=================  =========================================================
users              ``300 + size // 20`` (800 at the default size)
projects           ``max(30, size // 250)``; namespace/name paths are unique
members            8-40 per project, roles guest < reporter < developer <
                   maintainer; every project has 1-3 maintainers
labels             8-14 per project (name, color, description)
milestones         3-7 per project (active or closed, due day)
issues             ``size``; iid per project (1..n), opened or closed
comments           ~3.5 per issue, user comments plus system notes
links              ~0.2 per issue (blocks / relates_to), within a project
notifications      ~0.3 per issue, to the issue's author
=================  =========================================================

Days are integer day numbers with day 0 = :data:`DAY0` (2026-01-01); world history lies
strictly before day 0 (due days of open work may lie after it).  Text search runs on an
FTS5 index over title and description.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson
from sqlalchemy import Boolean, Index, Integer, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from simweb.core.world import MetaTable, RowCache, RowMap, json_column
from simweb.core.worlddb import (
    BuildProgress,
    Rng,
    WorldBuilder,
    WorldFile,
    schema_fingerprint,
    seeded_password,
)

APP = "issues"
#: Bump whenever generated content or schema changes.
GENERATOR_VERSION = 4

ROLES = ("guest", "reporter", "developer", "maintainer")
SORTS = ("created", "oldest", "updated", "due", "weight", "comments")
MAX_PER_PAGE = 100


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
    full_name: Mapped[str] = mapped_column(String)
    password: Mapped[str] = mapped_column(String)
    created_day: Mapped[int] = mapped_column(Integer)


class Project(Base):
    __tablename__ = "projects"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    namespace: Mapped[str] = mapped_column(String)
    name: Mapped[str] = mapped_column(String)
    path: Mapped[str] = mapped_column(String, unique=True)
    description: Mapped[str] = mapped_column(Text)
    visibility: Mapped[str] = mapped_column(String)
    created_day: Mapped[int] = mapped_column(Integer)
    issue_count: Mapped[int] = mapped_column(Integer)   # largest iid


class Member(Base):
    __tablename__ = "members"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    project_id: Mapped[int] = mapped_column(Integer)
    user_id: Mapped[int] = mapped_column(Integer)
    role: Mapped[str] = mapped_column(String)
    since_day: Mapped[int] = mapped_column(Integer)
    __table_args__ = (Index("ix_members_project_user", "project_id", "user_id", unique=True),
                      Index("ix_members_user", "user_id"))


class Label(Base):
    __tablename__ = "labels"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    project_id: Mapped[int] = mapped_column(Integer, index=True)
    name: Mapped[str] = mapped_column(String)
    color: Mapped[str] = mapped_column(String)
    description: Mapped[str] = mapped_column(Text)


class Milestone(Base):
    __tablename__ = "milestones"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    project_id: Mapped[int] = mapped_column(Integer, index=True)
    title: Mapped[str] = mapped_column(String)
    description: Mapped[str] = mapped_column(Text)
    start_day: Mapped[int] = mapped_column(Integer)
    due_day: Mapped[int] = mapped_column(Integer)
    state: Mapped[str] = mapped_column(String)


class Issue(Base):
    __tablename__ = "issues"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    project_id: Mapped[int] = mapped_column(Integer)
    iid: Mapped[int] = mapped_column(Integer)
    title: Mapped[str] = mapped_column(String)
    description: Mapped[str] = mapped_column(Text)
    author_id: Mapped[int] = mapped_column(Integer, index=True)
    state: Mapped[str] = mapped_column(String)
    created_day: Mapped[int] = mapped_column(Integer)
    updated_day: Mapped[int] = mapped_column(Integer)
    closed_day: Mapped[int | None] = mapped_column(Integer, nullable=True)
    milestone_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    due_day: Mapped[int | None] = mapped_column(Integer, nullable=True)
    weight: Mapped[int | None] = mapped_column(Integer, nullable=True)
    labels: Mapped[str] = json_column()       # list of label ids
    assignees: Mapped[str] = json_column()    # list of user ids
    comment_count: Mapped[int] = mapped_column(Integer)
    __table_args__ = (Index("ix_issues_project_iid", "project_id", "iid", unique=True),
                      Index("ix_issues_project_state_created", "project_id", "state", "created_day"),
                      Index("ix_issues_milestone_state", "milestone_id", "state"))


class IssueLabel(Base):
    __tablename__ = "issue_labels"
    issue_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    label_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    state: Mapped[str] = mapped_column(String)
    __table_args__ = (Index("ix_issue_labels_label_state", "label_id", "state", "issue_id"),)


class IssueAssignee(Base):
    __tablename__ = "issue_assignees"
    issue_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    state: Mapped[str] = mapped_column(String)
    __table_args__ = (Index("ix_issue_assignees_user_state", "user_id", "state", "issue_id"),)


class Comment(Base):
    __tablename__ = "comments"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    issue_id: Mapped[int] = mapped_column(Integer, index=True)
    author_id: Mapped[int] = mapped_column(Integer)
    body: Mapped[str] = mapped_column(Text)
    day: Mapped[int] = mapped_column(Integer)
    system: Mapped[bool] = mapped_column(Boolean)


class Link(Base):
    __tablename__ = "links"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    source_id: Mapped[int] = mapped_column(Integer, index=True)
    target_id: Mapped[int] = mapped_column(Integer, index=True)
    kind: Mapped[str] = mapped_column(String)
    day: Mapped[int] = mapped_column(Integer)


class Notification(Base):
    __tablename__ = "notifications"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(Integer)
    issue_id: Mapped[int] = mapped_column(Integer)
    actor_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    kind: Mapped[str] = mapped_column(String)
    day: Mapped[int] = mapped_column(Integer)
    read: Mapped[bool] = mapped_column(Boolean)
    __table_args__ = (Index("ix_notifications_user_read", "user_id", "read", "id"),)


#: Title and description, plus a ``proj`` column holding the token ``p<project id>`` so that
#: a project's search intersects posting lists inside FTS5 instead of filtering every match.
_FTS_DDL = ("CREATE VIRTUAL TABLE issues_fts USING fts5(title, description, proj,"
            " tokenize='unicode61 remove_diacritics 2', detail='column')")
_TABLES = ("users", "projects", "members", "labels", "milestones", "issues", "comments", "links",
           "notifications")


# ----------------------------------------------------------------------------- content pools

_FIRST = ("Ada", "Alan", "Grace", "Linus", "Margaret", "Ken", "Dennis", "Barbara", "Edsger", "Donald",
          "Frances", "John", "Radia", "Tim", "Sophie", "Guido", "Bjarne", "Anita", "Katherine", "Hedy",
          "Mary", "Jean", "Niklaus", "Leslie", "Carol", "Erik", "Priya", "Omar", "Yuki", "Chen", "Lena",
          "Mateo", "Amara", "Kofi", "Ingrid", "Ravi", "Sara", "Tomas", "Nadia", "Felix", "Hana", "Ivan",
          "Jonas", "Keiko", "Lucia", "Malik", "Nora", "Oscar", "Paula", "Quinn", "Rosa", "Samir", "Tara")
_LAST = ("Lovelace", "Turing", "Hopper", "Torvalds", "Hamilton", "Thompson", "Ritchie", "Liskov", "Dijkstra",
         "Knuth", "Allen", "McCarthy", "Perlman", "Berners", "Wilson", "Rossum", "Stroustrup", "Borg",
         "Johnson", "Lamarr", "Keller", "Sammet", "Wirth", "Lamport", "Shaw", "Meijer", "Patel", "Haddad",
         "Tanaka", "Wei", "Novak", "Garcia", "Okafor", "Mensah", "Larsen", "Kumar", "Cohen", "Silva",
         "Petrova", "Weber", "Sato", "Ivanov", "Berg", "Mori", "Rossi", "Khan", "Dahl", "Lind", "Moreau",
         "Brooks", "Reyes", "Nasser", "Quist")
_NAMESPACES = ("acme", "globex", "initech", "umbrella", "hooli", "piedpiper", "wayne-labs", "stark-ind",
               "cyberdyne", "tyrell", "soylent", "wonka", "aperture", "blackmesa", "oscorp", "vandelay")
_PROJECT_NAMES = ("web-frontend", "api-gateway", "billing-service", "mobile-app", "docs", "infrastructure",
                  "auth-service", "search-engine", "data-pipeline", "design-system", "cli", "notifications",
                  "analytics", "payments", "admin-portal", "sdk-python", "sdk-js", "monitoring", "scheduler",
                  "chat-service", "media-storage", "inventory", "reporting", "website", "support-desk")
_PROJECT_BLURBS = ("The customer-facing {what}.", "Core {what} used by every team.",
                   "Internal {what} maintained by the platform group.", "Open-source {what} for our partners.")
_LABEL_POOL = (
    ("bug", "#d9534f", "Something is not working as expected"),
    ("feature", "#5cb85c", "A new capability"),
    ("enhancement", "#5bc0de", "An improvement to an existing feature"),
    ("documentation", "#0275d8", "Docs, guides and examples"),
    ("good first issue", "#7f5af0", "A gentle start for new contributors"),
    ("help wanted", "#f0ad4e", "Extra attention is needed"),
    ("question", "#cc317c", "Further information is requested"),
    ("security", "#b30000", "A vulnerability or hardening task"),
    ("performance", "#ff8c00", "Speed, memory or efficiency"),
    ("regression", "#8b0000", "Used to work, broken by a change"),
    ("ui", "#9370db", "User interface and styling"),
    ("backend", "#2f4f4f", "Server-side code"),
    ("frontend", "#20b2aa", "Client-side code"),
    ("needs triage", "#808080", "Not yet reviewed by a maintainer"),
    ("wontfix", "#ffffff", "This will not be worked on"),
    ("duplicate", "#cfd3d7", "This issue already exists"),
    ("tests", "#6b8e23", "Test coverage and flaky tests"),
    ("ci", "#4682b4", "Build pipeline and automation"),
    ("accessibility", "#008080", "Usable by everyone"),
    ("tech debt", "#a0522d", "Clean-up and refactoring"),
)
_AREAS = ("login page", "settings page", "search results", "export to CSV", "dashboard", "API client",
          "password reset", "file upload", "user profile", "notification emails", "billing page", "audit log",
          "webhooks", "REST endpoint", "mobile layout", "dark mode", "date picker", "onboarding flow",
          "admin panel", "pagination", "sidebar", "cache layer", "rate limiter", "import wizard", "activity feed",
          "session handling", "invoice PDF", "report builder", "access tokens", "team invitations")
_BUG_TITLES = ("{area} crashes when the name contains unicode", "{area} shows a blank screen on Safari",
               "{area} times out for large accounts", "Wrong totals in the {area}",
               "{area} ignores the time zone setting", "Broken layout of the {area} on small screens",
               "{area} returns 500 after the last deploy", "Memory leak in the {area}",
               "Typo in the {area} error message", "{area} loses unsaved changes on refresh")
_FEATURE_TITLES = ("Add keyboard shortcuts to the {area}", "Support bulk actions in the {area}",
                   "Allow filtering the {area} by date", "Add an API for the {area}",
                   "Improve the performance of the {area}", "Document the {area}",
                   "Add tests for the {area}", "Redesign the {area}", "Make the {area} accessible to screen readers",
                   "Translate the {area} into German")
_SENTENCES = (
    "Steps to reproduce are in the attached log.", "This happens on both staging and production.",
    "Several customers reported it this week.", "It started after the upgrade to the new release.",
    "The expected behaviour is described in the design document.", "We should also add a regression test.",
    "A workaround is to reload the page twice.", "The fix probably belongs in the shared helpers.",
    "Please check the browser console for warnings.", "This blocks the next release for some teams.",
    "The current implementation does not scale beyond a few thousand rows.",
    "Product asked for this in the last planning meeting.", "See the linked issues for background.",
    "Mobile users are affected the most.", "Low priority, but easy to do.",
)
_ENVIRONMENTS = ("Chrome", "Firefox", "Safari", "Edge", "Android", "iOS", "Linux", "Windows", "macOS",
                 "the staging cluster", "production", "the self-hosted edition")
_COMMENTS = (
    "I can reproduce this on the latest main.", "Thanks for the report! Looking into it.",
    "Could you share the exact steps?", "This looks related to the caching change.",
    "I have a fix ready, opening a merge request soon.", "Confirmed, this also happens for me.",
    "Can we get this into the next milestone?", "The logs point at a timeout in the database layer.",
    "Please add screenshots if you can.", "I think we should split this into two issues.",
    "Works for me after clearing the cache.", "Bumping: customers keep asking about this.",
    "Reviewed the proposal, looks good to me.", "Let's discuss this in the weekly sync.",
    "The tests pass locally but fail on CI.", "Assigning to myself.",
)
_MILESTONE_KINDS = ("v{a}.{b}", "Sprint {n}", "{year} Q{q}", "Release {a}.{b}")


def n_users_for(size: int) -> int:
    return 300 + size // 20


def n_projects_for(size: int) -> int:
    return max(30, size // 250)


_JSON = orjson.dumps


def _jl(items: list[int]) -> str:
    return _JSON(items).decode()


# ----------------------------------------------------------------------------- builder

class _Builder(WorldBuilder):
    """Generates one world into an empty SQLite file, feeding every row to the hasher."""

    def __init__(self, path: Path, seed: int, size: int, progress: BuildProgress) -> None:
        super().__init__(path, APP, GENERATOR_VERSION, seed, size, progress, Base.metadata)
        self.base = Rng.derive(APP, seed, size).next64()

    def _rng(self, stream: str, index: int = 0) -> Rng:
        return Rng.sub(Rng.derive(APP, self.seed, stream).next64(), index)

    def run(self) -> str:
        self.begin()
        self.p.stage("users & projects", 3)
        self._users()
        self._projects()
        self.p.stage("issues", self.size)
        self._issues()
        self.p.stage("indexes", 2)
        self.create_indexes()
        self.db.execute(_FTS_DDL)
        self.db.execute("INSERT INTO issues_fts(rowid, title, description, proj)"
                        " SELECT id, title, description, 'p' || project_id FROM issues ORDER BY id")
        self.db.execute("INSERT INTO issues_fts(issues_fts) VALUES ('optimize')")
        return self.finish(SCHEMA_FINGERPRINT)

    # -- people and projects -----------------------------------------------------

    def _users(self) -> None:
        n = n_users_for(self.size)
        rows, seen = [], set()
        self.usernames = [""]
        for uid in range(1, n + 1):
            r = self._rng("users", uid)
            first, last = r.choice(_FIRST), r.choice(_LAST)
            base = f"{first}.{last}".lower()
            username = base if base not in seen else f"{base}{uid}"
            seen.add(username)
            self.usernames.append(username)
            rows.append((uid, username, f"{username}@example.com", f"{first} {last}", seeded_password(APP, self.seed, uid),
                         -r.randint(200, 2000)))
        self.n_users = n
        self.insert("users", rows)

    def _projects(self) -> None:
        n = n_projects_for(self.size)
        r = self._rng("projects")
        paths: list[tuple[str, str]] = []
        seen: set[str] = set()
        while len(paths) < n:
            ns, name = r.choice(_NAMESPACES), r.choice(_PROJECT_NAMES)
            if len(seen) >= len(_NAMESPACES) * len(_PROJECT_NAMES) - 5:
                name = f"{name}-{len(paths)}"
            if f"{ns}/{name}" in seen:
                continue
            seen.add(f"{ns}/{name}")
            paths.append((ns, name))
        # Issue counts per project: skewed but every project has some.
        weights = [r.randint(1, 10) + (8 if i % 7 == 0 else 0) for i in range(n)]
        total_w = sum(weights)
        counts = [max(3, self.size * w // total_w) for w in weights]
        # Make the total exactly ``size`` when it can be (the largest project absorbs it).
        big = max(range(n), key=lambda i: (counts[i], -i))
        counts[big] = max(3, counts[big] + self.size - sum(counts))
        self.project_issue_counts = counts
        self.project_members: list[list[tuple[int, str]]] = []
        self.project_labels: list[list[tuple[int, str]]] = []
        self.project_milestones: list[list[tuple[int, int, str, str]]] = []  # (id, due, state, title)
        prows, mrows, lrows, msrows = [], [], [], []
        mid = lid = msid = 0
        for k, (ns, name) in enumerate(paths):
            pid = k + 1
            pr = self._rng("project", pid)
            what = name.replace("-", " ")
            desc = pr.choice(_PROJECT_BLURBS).format(what=what) + " " + pr.choice(_SENTENCES)
            prows.append((pid, ns, name, f"{ns}/{name}", desc, "public", -pr.randint(400, 1500), counts[k]))
            # members
            nm = min(self.n_users, pr.randint(8, 40))
            users = [i + 1 for i in pr.sample_indices(self.n_users, nm)]
            n_maint = pr.randint(1, 3)
            members = []
            for j, uid in enumerate(users):
                if j < n_maint:
                    role = "maintainer"
                else:
                    role = ROLES[pr.weighted_index((2, 5, 10))]  # guest / reporter / developer
                mid += 1
                members.append((uid, role))
                mrows.append((mid, pid, uid, role, -pr.randint(30, 400)))
            self.project_members.append(members)
            # labels
            picks = sorted(pr.sample_indices(len(_LABEL_POOL), pr.randint(8, 14)))
            ids = []
            for li in picks:
                lid += 1
                name_, color, ldesc = _LABEL_POOL[li]
                lrows.append((lid, pid, name_, color, ldesc))
                ids.append((lid, name_))
            self.project_labels.append(ids)
            # milestones: the older ones closed, the newer ones active
            nms = pr.randint(3, 7)
            kind = pr.choice(_MILESTONE_KINDS)
            a, b, sprint, year, q = pr.randint(0, 3), pr.randint(0, 5), pr.randint(1, 30), 2024, pr.randint(1, 4)
            mss = []
            n_closed = pr.randint(1, nms - 2)
            for j in range(nms):
                msid += 1
                title = kind.format(a=a, b=b + j, n=sprint + j, year=year + (q + j - 1) // 4, q=(q + j - 1) % 4 + 1)
                due = -40 * (n_closed - j) + pr.randint(-10, 10) if j < n_closed else 14 + 30 * (j - n_closed) + pr.randint(0, 10)
                state = "closed" if j < n_closed else "active"
                msrows.append((msid, pid, title, f"Work planned for {title}. " + pr.choice(_SENTENCES),
                               due - 42, due, state))
                mss.append((msid, due, state, title))
            self.project_milestones.append(mss)
        self.insert("projects", prows)
        self.insert("members", mrows)
        self.insert("labels", lrows)
        self.insert("milestones", msrows)

    # -- issues and their history ----------------------------------------------------

    def _issues(self) -> None:
        issue_rows: list[tuple] = []
        il_rows: list[tuple] = []
        ia_rows: list[tuple] = []
        l_rows: list[tuple] = []
        n_rows: list[tuple] = []
        iid_global = 0
        cid = linkid = nid = 0

        def flush(final: bool = False) -> None:
            if final or len(issue_rows) >= 5000:
                self.insert("issues", issue_rows)
                self.insert("issue_labels", il_rows)
                self.insert("issue_assignees", ia_rows)
                self.p.advance(len(issue_rows))
                issue_rows.clear()
                il_rows.clear()
                ia_rows.clear()

        all_comments: list[tuple] = []
        for k, count in enumerate(self.project_issue_counts):
            pid = k + 1
            members = self.project_members[k]
            devs = [u for u, role in members if role in ("developer", "maintainer")]
            everyone = [u for u, _ in members]
            labels = self.project_labels[k]
            milestones = self.project_milestones[k]
            first_id = iid_global + 1
            states: list[str] = []
            for iid in range(1, count + 1):
                iid_global += 1
                iss = iid_global
                r = self._rng("issue", iss)
                created = -700 + (iid * 690) // count - r.randint(0, 6)
                area = r.choice(_AREAS)
                is_bug = r.chance(0.5)
                title = r.choice(_BUG_TITLES if is_bug else _FEATURE_TITLES).format(area=area)
                title = title[0].upper() + title[1:]
                parts = [_SENTENCES[k] for k in r.sample_indices(len(_SENTENCES), r.randint(1, 3))]
                if r.chance(0.5):
                    parts.append(f"Affects version {r.randint(1, 4)}.{r.randint(0, 12)}.{r.randint(0, 9)} on "
                                 f"{r.choice(_ENVIRONMENTS)}.")
                desc = " ".join(parts)
                author = r.choice(everyone)
                ms = None
                if r.chance(0.55):
                    ms = r.choice(milestones)
                if ms is not None and ms[2] == "closed":
                    state = "closed" if r.chance(0.9) else "opened"
                else:
                    state = "closed" if r.chance(0.35 if created > -120 else 0.6) else "opened"
                closed = None
                if state == "closed":
                    closed = min(-1, created + r.randint(1, 90))
                n_lab = r.weighted_index((20, 55, 85, 100))
                labs = sorted(labels[i][0] for i in r.sample_indices(len(labels), n_lab))
                lab_name = dict(labels)
                n_as = r.weighted_index((30, 85, 100))
                assg = sorted(devs[i] for i in r.sample_indices(len(devs), n_as))
                due = None
                if r.chance(0.3):
                    due = (ms[1] if ms is not None and r.chance(0.5) else created + r.randint(7, 120))
                    if state == "opened" and due < 0 and r.chance(0.5):
                        due = r.randint(3, 90)
                weight = r.randint(0, 9) if r.chance(0.6) else None
                # comments: user comments and system notes, in day order
                day = created
                notes: list[tuple[int, int, str, bool]] = []
                for lab in labs:
                    if r.chance(0.5):
                        notes.append((author, day, f"added ~{lab_name[lab]} label", True))
                for a in assg:
                    notes.append((r.choice(devs), day + r.randint(0, 3), f"assigned to @{self.usernames[a]}", True))
                if ms is not None:
                    notes.append((r.choice(devs), day + r.randint(0, 5), f"changed milestone to %{ms[3]}", True))
                last = closed if closed is not None else -1
                for _ in range(r.weighted_index((10, 25, 45, 62, 76, 86, 93, 100))):
                    notes.append((r.choice(everyone), r.randint(min(day, last), last),
                                  r.choice(_COMMENTS), False))
                if closed is not None:   # exactly when state == "closed"
                    notes.append((r.choice(devs), closed, "closed", True))
                notes.sort(key=lambda x: x[1])
                for who, d, body, system in notes:
                    cid += 1
                    all_comments.append((cid, iss, who, body, d, system))
                user_comments = sum(1 for x in notes if not x[3])
                updated = max([created] + [x[1] for x in notes])
                issue_rows.append((iss, pid, iid, title, desc, author, state, created, updated, closed,
                                   ms[0] if ms else None, due, weight, _jl(labs), _jl(assg), user_comments))
                il_rows.extend((iss, lab, state) for lab in labs)
                ia_rows.extend((iss, a, state) for a in assg)
                states.append(state)
                # a notification to the author about the latest comment by someone else
                others = [x for x in notes if not x[3] and x[0] != author]
                if others and r.chance(0.6):
                    nid += 1
                    n_rows.append((nid, author, iss, others[-1][0], "comment", others[-1][1],
                                   r.chance(0.7)))
                if state == "closed" and r.chance(0.3):
                    nid += 1
                    n_rows.append((nid, author, iss, notes[-1][0], "closed", closed, r.chance(0.6)))
                flush()
            # links within the project: a source issue blocks (or relates to) an earlier one
            r = self._rng("links", pid)
            for _ in range(count // 5):
                a = first_id + r.below(count)
                b = first_id + r.below(count)
                if a == b:
                    continue
                linkid += 1
                kind = "blocks" if r.chance(0.6) else "relates_to"
                l_rows.append((linkid, a, b, kind, -r.randint(1, 300)))
        flush(True)
        # De-duplicate links (same pair and kind) keeping the first.
        seen: set[tuple[int, int]] = set()
        links = []
        for row in l_rows:
            key = (min(row[1], row[2]), max(row[1], row[2]))
            if key in seen:
                continue
            seen.add(key)
            links.append(row)
        for i in range(0, len(all_comments), 20000):
            self.insert("comments", all_comments[i:i + 20000])
        self.insert("links", links)
        self.insert("notifications", n_rows)




SCHEMA_FINGERPRINT = schema_fingerprint(GENERATOR_VERSION, Base.metadata, _FTS_DDL)



def _build_world(path: Path, seed: int, size: int, progress: bool) -> str:
    with BuildProgress(progress, title=f"issues world seed={seed} size={size}:") as bar:
        return _Builder(path, seed, size, bar).run()


# ----------------------------------------------------------------------------- read API

_TOKEN_RE = re.compile(r"[^\W_]+")
PROJECT_ROWS = RowMap(Project)
LABEL_ROWS = RowMap(Label, extra=lambda x: x.__setitem__("fg", _text_color(x["color"])))
MILESTONE_ROWS = RowMap(Milestone)
USER_ROWS = RowMap(User)
MEMBER_ROWS = RowMap(Member)
ISSUE_ROWS = RowMap(Issue)
COMMENT_ROWS = RowMap(Comment)
LINK_ROWS = RowMap(Link)
NOTIFICATION_ROWS = RowMap(Notification)
_ORDER = {
    "created": "created_day DESC, id DESC",
    "oldest": "created_day ASC, id ASC",
    "updated": "updated_day DESC, id DESC",
    "due": "due_day IS NULL, due_day ASC, id DESC",
    "weight": "weight IS NULL, weight DESC, id DESC",
    "comments": "comment_count DESC, id DESC",
}


def sort_key(sort: str):
    """The Python twin of ``_ORDER``: the same order for rows held in memory."""
    if sort == "oldest":
        return lambda r: (r["created_day"], r["id"])
    if sort == "updated":
        return lambda r: (-r["updated_day"], -r["id"])
    if sort == "due":
        return lambda r: (r["due_day"] is None, r["due_day"] or 0, -r["id"])
    if sort == "weight":
        return lambda r: (r["weight"] is None, -(r["weight"] or 0), -r["id"])
    if sort == "comments":
        return lambda r: (-r["comment_count"], -r["id"])
    return lambda r: (-r["created_day"], -r["id"])


def tokens(text: str) -> list[str]:
    """Search terms of a query (lower case, at most 8)."""
    return _TOKEN_RE.findall((text or "").lower())[:8]


def text_matches(row: dict, terms: Sequence[str]) -> bool:
    """Whether every term is a word of the issue's title or description (as FTS5 matches)."""
    if not terms:
        return True
    words = set(_TOKEN_RE.findall((row["title"] + " " + row["description"]).lower()))
    return all(t in words for t in terms)


def _text_color(color: str) -> str:
    """Black or white text for a label background color '#rrggbb'."""
    v = color.lstrip("#")
    r, g, b = int(v[0:2], 16), int(v[2:4], 16), int(v[4:6], 16)
    return "#000" if (r * 299 + g * 587 + b * 114) / 1000 > 140 else "#fff"



class IssuesWorld(WorldFile):
    """Read-only access to one generated tracker world; plain JSON-able values only."""

    APP = APP
    GENERATOR_VERSION = GENERATOR_VERSION
    SCHEMA_FINGERPRINT = SCHEMA_FINGERPRINT
    DEFAULT_SIZE = 10_000
    MIN_SIZE = 100
    ID_TABLES = _TABLES
    #: how rows of each table read (the runtime schema's ``required: columns`` lists their keys)
    ROW_MAPS = {m.table: m for m in (PROJECT_ROWS, LABEL_ROWS, MILESTONE_ROWS, USER_ROWS,
                                     MEMBER_ROWS, ISSUE_ROWS, COMMENT_ROWS, LINK_ROWS, NOTIFICATION_ROWS)}
    build = staticmethod(_build_world)

    def __init__(self, path: Path | str, *, built: bool = False) -> None:
        super().__init__(path, built=built)
        conn = self._db.conn()
        self._projects = PROJECT_ROWS.rows(conn)
        self._project_by_id = {p["id"]: p for p in self._projects}
        self._project_ids = tuple(p["id"] for p in self._projects)
        self._project_by_path = {p["path"]: p for p in self._projects}
        self._labels = LABEL_ROWS.rows(conn)
        self._label_by_id = {x["id"]: x for x in self._labels}
        self._labels_of: dict[int, list[dict]] = {}
        for x in self._labels:
            self._labels_of.setdefault(x["project_id"], []).append(x)
        self._milestones = MILESTONE_ROWS.rows(conn)
        self._milestone_by_id = {m["id"]: m for m in self._milestones}
        # A project's milestones by due day, built once: the issue page asks on every visit.
        self._milestones_of: dict[int, list[dict]] = {}
        for m in sorted(self._milestones, key=lambda m: (m["due_day"], m["id"])):
            self._milestones_of.setdefault(m["project_id"], []).append(m)
        self._issue_rows = RowCache(ISSUE_ROWS, 8_192)
        self._user_rows = RowCache(USER_ROWS, 8_192)

    # -- users ----------------------------------------------------------------------

    def user(self, uid: int) -> dict | None:
        return self._user_rows.get(self._conn, int(uid))

    def user_by_login(self, login: str) -> dict | None:
        key = (login or "").strip().lower()
        row = self._conn().execute(
            f"{USER_ROWS.select('username = ?')} UNION ALL {USER_ROWS.select('email = ?')} LIMIT 1",
            (key, key)).fetchone()
        return None if row is None else USER_ROWS(row)

    # -- projects, labels, milestones, members -------------------------------------------

    def projects(self) -> list[dict]:
        return [dict(p) for p in self._projects]

    def project_ids(self) -> tuple[int, ...]:
        """Every project's id, in :meth:`projects` order (a sampler draws from these
        without copying every project row)."""
        return self._project_ids

    def project(self, pid: int) -> dict | None:
        p = self._project_by_id.get(int(pid))
        return None if p is None else dict(p)

    def project_by_path(self, path: str) -> dict | None:
        p = self._project_by_path.get(path)
        return None if p is None else dict(p)

    def labels(self, pid: int) -> list[dict]:
        """A project's labels by name."""
        return sorted((dict(x) for x in self._labels_of.get(int(pid), [])), key=lambda x: (x["name"], x["id"]))

    def label(self, lid: int) -> dict | None:
        x = self._label_by_id.get(int(lid))
        return None if x is None else dict(x)

    def milestones(self, pid: int) -> list[dict]:
        """A project's milestones by due day."""
        return [dict(m) for m in self._milestones_of.get(int(pid), ())]

    def milestone(self, mid: int) -> dict | None:
        m = self._milestone_by_id.get(int(mid))
        return None if m is None else dict(m)

    def members(self, pid: int) -> list[dict]:
        """A project's members by id."""
        return MEMBER_ROWS.rows(self._conn(), "project_id = ?", (int(pid),))

    def member(self, mid: int) -> dict | None:
        return MEMBER_ROWS.one(self._conn(), "id = ?", (int(mid),))

    def membership(self, pid: int, uid: int) -> dict | None:
        return MEMBER_ROWS.one(self._conn(), "project_id = ? AND user_id = ?", (int(pid), int(uid)))

    def memberships_of(self, uid: int) -> list[dict]:
        return MEMBER_ROWS.rows(self._conn(), "user_id = ?", (int(uid),), order="project_id")

    # -- issues ------------------------------------------------------------------------

    def issue(self, iid_global: int) -> dict | None:
        return self._issue_rows.get(self._conn, int(iid_global))

    def issues(self, ids: Sequence[int]) -> list[dict]:
        """Issues by id, in the order given (unknown ids skipped)."""
        return ISSUE_ROWS.by_ids(self._conn(), ids)

    def issue_id_by_iid(self, pid: int, iid: int) -> int | None:
        r = self._conn().execute("SELECT id FROM issues WHERE project_id = ? AND iid = ?",
                                 (int(pid), int(iid))).fetchone()
        return None if r is None else r[0]

    @staticmethod
    def _where(project_id: int | None, state: str | None, labels: Sequence[int], assignee: int | None,
               author: int | None, milestone: int | None, terms: Sequence[str]) -> tuple[str, list]:
        conds: list[str] = []
        params: list[Any] = []
        if project_id is not None:
            conds.append("project_id = ?")
            params.append(int(project_id))
        if state in ("opened", "closed"):
            conds.append("state = ?")
            params.append(state)
        for lab in labels:
            conds.append("id IN (SELECT issue_id FROM issue_labels WHERE label_id = ?)")
            params.append(int(lab))
        if assignee is not None:
            conds.append("id IN (SELECT issue_id FROM issue_assignees WHERE user_id = ?)")
            params.append(int(assignee))
        if author is not None:
            conds.append("author_id = ?")
            params.append(int(author))
        if milestone is not None:
            conds.append("milestone_id = ?")
            params.append(int(milestone))
        if terms:
            phrase = " ".join('"' + t.replace('"', "") + '"' for t in terms)
            scope = f"proj : p{int(project_id)} AND " if project_id is not None else ""
            conds.append("id IN (SELECT rowid FROM issues_fts WHERE issues_fts MATCH ?)")
            params.append(f"{scope}{{title description}} : ({phrase})")
        return " AND ".join(conds) or "1", params

    def issue_count(self, *, exclude: Sequence[int] = (), include_only: Sequence[int] | None = None,
                    **filters: Any) -> int:
        """How many world issues match the filters (excluding ``exclude`` ids, or only among
        ``include_only`` ids)."""
        where, params = self._where(**filters)
        if include_only is not None:
            if not include_only:
                return 0
            where += f" AND id IN ({','.join('?' * len(include_only))})"
            params = params + [int(i) for i in include_only]
        elif exclude:
            where += f" AND id NOT IN ({','.join('?' * len(exclude))})"
            params = params + [int(i) for i in exclude]
        return self._conn().execute(f"SELECT count(*) FROM issues WHERE {where}", params).fetchone()[0]

    def issue_counts_by_milestone(self, project_id: int, by_label: bool = False) -> list[tuple]:
        """A project's world issue counts by milestone and state, as (milestone_id, state,
        count) rows; with ``by_label``, by milestone, label and state, as (milestone_id,
        label_id, state, count). Each count is what :meth:`issue_count` gives for those
        filters. Combinations without issues are left out."""
        if by_label:
            sql = ("SELECT i.milestone_id, l.label_id, i.state, count(DISTINCT i.id) FROM issues i"
                   " JOIN issue_labels l ON l.issue_id = i.id WHERE i.project_id = ? AND i.milestone_id IS NOT NULL"
                   " GROUP BY i.milestone_id, l.label_id, i.state ORDER BY 1, 2, 3")
        else:
            sql = ("SELECT milestone_id, state, count(*) FROM issues WHERE project_id = ?"
                   " AND milestone_id IS NOT NULL GROUP BY milestone_id, state ORDER BY 1, 2")
        return [tuple(r) for r in self._conn().execute(sql, (int(project_id),))]

    def issue_ids(self, *, sort: str = "created", limit: int = 20, exclude: Sequence[int] = (),
                  **filters: Any) -> list[int]:
        """The first ``limit`` world issue ids matching the filters in ``sort`` order."""
        where, params = self._where(**filters)
        if exclude:
            where += f" AND id NOT IN ({','.join('?' * len(exclude))})"
            params = params + [int(i) for i in exclude]
        order = _ORDER.get(sort, _ORDER["created"])
        return [r[0] for r in self._conn().execute(
            f"SELECT id FROM issues WHERE {where} ORDER BY {order} LIMIT ?", params + [int(limit)])]

    # -- comments, links, notifications -------------------------------------------------

    def comments(self, issue_id: int) -> list[dict]:
        return COMMENT_ROWS.rows(self._conn(), "issue_id = ?", (int(issue_id),), order="day, id")

    def comment(self, cid: int) -> dict | None:
        return COMMENT_ROWS.one(self._conn(), "id = ?", (int(cid),))

    def links(self, issue_id: int) -> list[dict]:
        """Links from or to an issue, by id."""
        i = int(issue_id)
        return [LINK_ROWS(r) for r in self._conn().execute(
            f"{LINK_ROWS.select('source_id = ?')} UNION {LINK_ROWS.select('target_id = ?', 'id')}", (i, i))]

    def link(self, lid: int) -> dict | None:
        return LINK_ROWS.one(self._conn(), "id = ?", (int(lid),))

    def notifications(self, uid: int, limit: int = 200) -> list[dict]:
        """A user's notifications, newest first (day desc, id desc)."""
        return NOTIFICATION_ROWS.rows(self._conn(), "user_id = ?", (int(uid),), order="day DESC, id DESC",
                                      limit=limit)

    def notification(self, nid: int) -> dict | None:
        return NOTIFICATION_ROWS.one(self._conn(), "id = ?", (int(nid),))

    def unread_notification_ids(self, uid: int) -> list[int]:
        return [r[0] for r in self._conn().execute(
            "SELECT id FROM notifications WHERE user_id = ? AND read = 0 ORDER BY id", (int(uid),))]

