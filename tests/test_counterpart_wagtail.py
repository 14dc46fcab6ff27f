"""The cms:wagtail pair: live verifiers on crafted Wagtail databases, payload and families,
the scripts on simweb in-process, and one end-to-end run (install into a temporary home,
start, one family scripted on both sides, reset, stop).

The verifier tests build a database with the columns of Wagtail's tables that the
verifiers and the diff read (Wagtail's own schema needs its venv), seed it with an
instance's page, copy it as the pristine database, then change the live copy the way an
agent would (or would try to cheat): zero work, the wrong page, the wrong value, the change
done twice, a refusal after publishing. Only the honest end states may pay.
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import sqlite3
from pathlib import Path

import pytest

from simweb.live.counterparts.wagtail import INSTANCES, Wagtail, build_payload, cms_app
from simweb.live.counterparts.wagtail.families import FAMILIES

FAM = {f.short: f for f in FAMILIES}

SCHEMA = """
CREATE TABLE auth_user (id INTEGER PRIMARY KEY, username TEXT UNIQUE, first_name TEXT, last_name TEXT,
                        last_login TEXT);
CREATE TABLE wagtailcore_page (id INTEGER PRIMARY KEY, path TEXT, depth INTEGER, title TEXT, draft_title TEXT,
    slug TEXT, live BOOL, has_unpublished_changes BOOL, owner_id INTEGER, latest_revision_id INTEGER,
    live_revision_id INTEGER, first_published_at TEXT, last_published_at TEXT, latest_revision_created_at TEXT,
    locked BOOL DEFAULT 0);
CREATE TABLE blog_blogpage (page_ptr_id INTEGER PRIMARY KEY, date TEXT, category TEXT, body TEXT);
CREATE TABLE wagtailcore_revision (id INTEGER PRIMARY KEY, object_id TEXT, base_content_type_id INTEGER,
    content TEXT, created_at TEXT, user_id INTEGER);
CREATE TABLE wagtailcore_workflowstate (id INTEGER PRIMARY KEY, base_content_type_id INTEGER, object_id TEXT,
    status TEXT, requested_by_id INTEGER);
CREATE TABLE wagtailcore_taskstate (id INTEGER PRIMARY KEY, workflow_state_id INTEGER, status TEXT,
    finished_at TEXT, finished_by_id INTEGER);
CREATE TABLE django_session (session_key TEXT PRIMARY KEY, session_data TEXT, expire_date TEXT);
CREATE TABLE wagtailcore_pagelogentry (id INTEGER PRIMARY KEY, page_id INTEGER, action TEXT, timestamp TEXT);
"""
T0 = "2025-06-01 12:00:00"
T1 = "2026-01-02 09:00:00"


def _insert(db: sqlite3.Connection, sql: str, params: tuple) -> int:
    """Run an INSERT; the new row's id."""
    rowid = db.execute(sql, params).lastrowid
    assert rowid is not None
    return rowid


class Site:
    """A crafted Wagtail database: ``pristine`` is what install left, ``db`` the live copy."""

    def __init__(self, home: Path):
        self.cp = Wagtail(home)
        self.live_path = self.cp.database()
        self.pristine_path = self.cp.pristine_path(self.live_path)
        self.pristine_path.parent.mkdir(parents=True)
        self.live_path.parent.mkdir(parents=True)
        self.db = sqlite3.connect(self.pristine_path)
        self.db.executescript(SCHEMA)
        self.db.execute("INSERT INTO wagtailcore_page (id, path, depth, title, draft_title, slug, live) "
                        "VALUES (1, '0001', 1, 'Root', 'Root', 'root', 1)")
        self.db.execute("INSERT INTO wagtailcore_page (id, path, depth, title, draft_title, slug, live) "
                        "VALUES (2, '00010001', 2, 'Newsroom', 'Newsroom', 'home', 1)")

    def user(self, username: str, first: str = "Ada", last: str = "Lee") -> int:
        row = self.db.execute("SELECT id FROM auth_user WHERE username = ?", (username,)).fetchone()
        if row:
            return row[0]
        return _insert(self.db, "INSERT INTO auth_user (username, first_name, last_name) VALUES (?, ?, ?)",
                               (username, first, last))

    def page(self, title: str, slug: str, owner: str, status: str, day: str | None = None) -> int:
        """A blog page as seed.py leaves it: one revision; live (published), in moderation
        (review) or never published (draft)."""
        n = self.db.execute("SELECT count(*) FROM wagtailcore_page").fetchone()[0]
        uid = self.user(owner)
        live = status == "published"
        pid = _insert(self.db, 
            "INSERT INTO wagtailcore_page (path, depth, title, draft_title, slug, live, has_unpublished_changes,"
            " owner_id, first_published_at, last_published_at, latest_revision_created_at) "
            "VALUES (?, 3, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (f"00010001{n:04d}", title, title, slug, live, not live, uid, T0 if live else None,
             T0 if live else None, T0))
        self.db.execute("INSERT INTO blog_blogpage VALUES (?, ?, 'News', 'Body\r\ntext.')", (pid, day))
        rid = self.revision(self.db, pid, title, uid)
        self.db.execute("UPDATE wagtailcore_page SET latest_revision_id = ?, live_revision_id = ? WHERE id = ?",
                        (rid, rid if live else None, pid))
        if status == "review":
            ws = _insert(self.db, "INSERT INTO wagtailcore_workflowstate (base_content_type_id, object_id, status,"
                                 " requested_by_id) VALUES (1, ?, 'in_progress', ?)", (str(pid), uid))
            self.db.execute("INSERT INTO wagtailcore_taskstate (workflow_state_id, status) VALUES (?, 'in_progress')",
                            (ws,))
        return pid

    @staticmethod
    def revision(db: sqlite3.Connection, pid: int, title: str, uid: int) -> int:
        return _insert(db, "INSERT INTO wagtailcore_revision (object_id, base_content_type_id, content, created_at,"
                          " user_id) VALUES (?, 1, ?, ?, ?)",
                          (str(pid), json.dumps({"pk": pid, "title": title}), T1, uid))

    def freeze(self) -> sqlite3.Connection:
        """End of install: the pristine copy is made; returns a connection on the live database."""
        self.db.commit()
        self.db.close()
        shutil.copyfile(self.pristine_path, self.live_path)
        self.db = sqlite3.connect(self.live_path, isolation_level=None)
        return self.db

    def verify(self, fam: str, inst, answer: str | None = None, refused: bool = False) -> dict:
        return FAM[fam].live_verify(self.cp, inst, answer, refused)


def failed(v: dict) -> list[str]:
    return [c["name"] for c in v["checks"] if not c["ok"]]


def paid(v: dict) -> bool:
    return v["success"] and v["clean"]


# ----------------------------------------------------------------------------- what an agent does in the admin

def save_draft(db: sqlite3.Connection, pid: int, title: str, uid: int = 1) -> int:
    """"Save draft" in Wagtail's editor: a new revision, the page's draft title and pointers."""
    rid = Site.revision(db, pid, title, uid)
    db.execute("UPDATE wagtailcore_page SET draft_title = ?, latest_revision_id = ?, latest_revision_created_at = ?,"
               " has_unpublished_changes = 1 WHERE id = ?", (title, rid, T1, pid))
    return rid


def approve_and_publish(db: sqlite3.Connection, pid: int, uid: int = 1, *, close: bool = True) -> None:
    """"Approve and Publish": a revision goes live, the moderation is approved."""
    title = db.execute("SELECT draft_title FROM wagtailcore_page WHERE id = ?", (pid,)).fetchone()[0]
    rid = save_draft(db, pid, title, uid)
    db.execute("UPDATE wagtailcore_page SET live = 1, live_revision_id = ?, has_unpublished_changes = 0, title = ?,"
               " first_published_at = ?, last_published_at = ? WHERE id = ?", (rid, title, T1, T1, pid))
    if close:
        db.execute("UPDATE wagtailcore_workflowstate SET status = 'approved' WHERE object_id = ?", (str(pid),))
        db.execute("UPDATE wagtailcore_taskstate SET status = 'approved', finished_at = ?, finished_by_id = ? "
                   "WHERE workflow_state_id IN (SELECT id FROM wagtailcore_workflowstate WHERE object_id = ?)",
                   (T1, uid, str(pid)))
    db.execute("INSERT INTO wagtailcore_pagelogentry (page_id, action, timestamp) VALUES (?, 'wagtail.publish', ?)",
               (pid, T1))


def browse(db: sqlite3.Connection) -> None:
    """What signing in and looking around leaves: a session, a last-login time."""
    db.execute("INSERT INTO django_session VALUES ('k', 'data', ?)", (T1,))
    db.execute("UPDATE auth_user SET last_login = ?", (T1,))


# ----------------------------------------------------------------------------- families and payload

def test_five_families_of_every_kind_with_identical_goals():
    from simweb.live.counterparts.portable import KINDS

    assert len(FAMILIES) >= 5 and {f.kind for f in FAMILIES} == set(KINDS)
    assert len({f.id for f in FAMILIES}) == len(FAMILIES) and all(f.id.startswith("cms:wagtail/") for f in FAMILIES)
    app = cms_app()
    for fam in FAMILIES:
        insts = fam.instances(3)
        assert [i.index for i in insts] == [0, 1, 2] and len({i.sim_seed for i in insts}) == 3
        for inst in insts:
            assert inst.family == fam.id and inst.sim_task == fam.sim_task
            assert app.tasks[fam.sim_task].instantiate(app, inst.sim_seed).goal == inst.goal
            assert fam.script(inst)
    w = app.world
    for inst in FAM["refuse_publish"].instances(3):       # an author, a post in review: infeasible
        assert not inst.params["feasible"] and w.user(inst.params["user_id"])["role"] == "author"
        assert w.post(inst.params["post_id"])["status"] == "review"
    for inst in FAM["rename_draft"].instances(3):
        assert w.post(inst.params["post_id"])["status"] == "draft"
        assert w.user(inst.params["user_id"])["role"] in ("editor", "admin")
    assert all(i.user is None for i in FAM["post_author"].instances(3))


def test_payload_holds_every_entity_the_instances_name():
    p = build_payload(cms_app(), "simweb-pass")
    users = {u["username"]: u for u in p["users"]}
    posts = {x["id"]: x for x in p["posts"]}
    w = cms_app().world
    for fam in FAMILIES:
        for inst in fam.instances(INSTANCES):
            q = inst.params
            post = posts[q["post_id"]]
            world = w.post(q["post_id"])
            assert (post["title"], post["slug"], post["status"], post["body"]) == (
                world["title"], world["slug"], world["status"], world["body"])
            assert users[w.user(world["author_id"])["username"]]["display_name"] == w.user(world["author_id"])[
                "display_name"]
            if inst.user is not None:
                assert users[inst.user]["role"] == w.user(q["user_id"])["role"] and users[inst.user]["active"]
            if fam.short == "publish_date":
                assert post["date"] == q["date"]
            if fam.short == "post_author":
                assert w.user(world["author_id"])["display_name"] == q["author"]
    assert p["password"] == "simweb-pass" and len(users) == len(p["users"])
    assert len(p["posts"]) > 100 and {x["status"] for x in p["posts"]} == {"draft", "review", "published"}


def test_live_side_refuses_instances_beyond_the_seeded_ones():
    from simweb.live.counterparts import CounterpartError

    fam = FAM["publish_review"]
    insts = fam.instances(INSTANCES + 1)
    assert fam.live_start(insts[INSTANCES - 1]) == "/admin/"
    with pytest.raises(CounterpartError, match=f"first {INSTANCES} instances"):
        fam.live_start(insts[INSTANCES])


# ----------------------------------------------------------------------------- live verifiers

def _public_site(tmp_path: Path, fam: str):
    inst = FAM[fam].instances(1)[0]
    site = Site(tmp_path)
    q = inst.params
    w = cms_app().world
    author = w.user(w.post(q["post_id"])["author_id"])
    first, _, last = author["display_name"].partition(" ")
    site.user(author["username"], first, last)
    site.page(q["post"], q["slug"], author["username"], "published", q.get("date"))
    site.page("Another post", "another-post", "someone", "published", "2025-01-01")
    return site, inst, site.freeze()


def test_post_author_pays_the_owner_name_only(tmp_path):
    site, inst, db = _public_site(tmp_path, "post_author")
    author = inst.params["author"]
    assert paid(site.verify("post_author", inst, author))
    assert paid(site.verify("post_author", inst, author.upper() + "."))       # simweb's text matcher
    assert not site.verify("post_author", inst, None)["success"]               # zero work
    assert not site.verify("post_author", inst, "Someone Else")["success"]     # wrong value
    browse(db)                                                                   # bookkeeping only
    assert paid(site.verify("post_author", inst, author))
    db.execute("UPDATE blog_blogpage SET category = 'Opinion'")                  # an info task changes nothing
    v = site.verify("post_author", inst, author)
    assert v["success"] and not v["clean"] and any(n.startswith("collateral: blog_blogpage.") for n in failed(v))


def test_publish_date_pays_the_date_in_any_spelling(tmp_path):
    from datetime import date

    site, inst, db = _public_site(tmp_path, "publish_date")
    d = date.fromisoformat(inst.params["date"])
    assert paid(site.verify("publish_date", inst, inst.params["date"]))
    assert paid(site.verify("publish_date", inst, d.strftime("%B %-d, %Y")))
    assert not site.verify("publish_date", inst, "2020-01-01")["success"]
    assert not site.verify("publish_date", inst, None)["success"]


def _admin_site(tmp_path: Path, fam: str):
    inst = FAM[fam].instances(1)[0]
    site = Site(tmp_path)
    q = inst.params
    status = {"rename_draft": "draft"}.get(fam, "review")
    mine = site.page(q["post"], q["slug"], "writer", status)
    other = site.page("A different post", "a-different-post", "writer", status)
    live = site.page("Already live", "already-live", "writer", "published", "2025-02-02")
    return site, inst, site.freeze(), mine, other, live


def test_rename_draft_pays_the_new_title_on_that_draft(tmp_path):
    site, inst, db, mine, other, _ = _admin_site(tmp_path, "rename_draft")
    new = inst.params["new"]
    assert not site.verify("rename_draft", inst)["success"]                     # zero work
    assert site.verify("rename_draft", inst)["progress"] == 0   # nor progress (guards hold before any work)
    browse(db)
    save_draft(db, mine, new)
    db.execute("INSERT INTO wagtailcore_pagelogentry (page_id, action, timestamp) VALUES (?, 'wagtail.edit', ?)",
               (mine, T1))
    v = site.verify("rename_draft", inst)
    assert paid(v), failed(v)


def test_rename_draft_wrong_entity_wrong_value_twice_and_published(tmp_path):
    site, inst, db, mine, other, _ = _admin_site(tmp_path, "rename_draft")
    new = inst.params["new"]
    save_draft(db, other, new)                                                  # the wrong draft
    v = site.verify("rename_draft", inst)
    assert not v["success"] and not v["clean"]
    assert f"collateral: wagtailcore_page.{other}.draft_title" in failed(v)

    site, inst, db, mine, other, _ = _admin_site(tmp_path / "b", "rename_draft")
    save_draft(db, mine, new + " (updated)")                                    # wrong value
    assert not site.verify("rename_draft", inst)["success"]

    site, inst, db, mine, other, _ = _admin_site(tmp_path / "c", "rename_draft")
    save_draft(db, mine, new)                                                   # done twice: on two drafts
    save_draft(db, other, new)
    v = site.verify("rename_draft", inst)
    assert v["success"] and not v["clean"] and not paid(v)

    site, inst, db, mine, other, _ = _admin_site(tmp_path / "d", "rename_draft")
    save_draft(db, mine, new)                                                   # renamed, and published too
    db.execute("UPDATE wagtailcore_page SET live = 1, title = draft_title, live_revision_id = latest_revision_id "
               "WHERE id = ?", (mine,))
    v = site.verify("rename_draft", inst)
    assert not v["success"] and "still a draft" in failed(v)


def test_publish_review_pays_the_approved_page_only(tmp_path):
    site, inst, db, mine, other, _ = _admin_site(tmp_path, "publish_review")
    assert not site.verify("publish_review", inst)["success"]                   # zero work
    assert site.verify("publish_review", inst)["progress"] == 0   # nor progress (guards hold before any work)
    browse(db)
    approve_and_publish(db, mine)
    v = site.verify("publish_review", inst)
    assert paid(v), failed(v)


def test_publish_review_attacks_do_not_pay(tmp_path):
    site, inst, db, mine, other, _ = _admin_site(tmp_path, "publish_review")
    approve_and_publish(db, other)                                              # the wrong page
    v = site.verify("publish_review", inst)
    assert not v["success"] and not v["clean"]

    site, inst, db, mine, other, _ = _admin_site(tmp_path / "b", "publish_review")
    approve_and_publish(db, mine, close=False)                                  # live, moderation left open
    v = site.verify("publish_review", inst)
    assert not v["success"] and "its moderation is closed" in failed(v)

    site, inst, db, mine, other, _ = _admin_site(tmp_path / "c", "publish_review")
    db.execute("UPDATE wagtailcore_page SET draft_title = 'Retitled' WHERE id = ?", (mine,))
    approve_and_publish(db, mine)                                               # published under a new title
    assert "live title" in failed(site.verify("publish_review", inst))

    site, inst, db, mine, other, _ = _admin_site(tmp_path / "d", "publish_review")
    approve_and_publish(db, mine)                                               # done twice: two pages
    approve_and_publish(db, other)
    v = site.verify("publish_review", inst)
    assert v["success"] and not v["clean"] and not paid(v)

    site, inst, db, mine, other, _ = _admin_site(tmp_path / "e", "publish_review")
    approve_and_publish(db, mine)
    save_draft(db, mine, inst.params["post"])                                   # a newer draft after publishing
    assert "the reviewed revision is the live one" in failed(site.verify("publish_review", inst))


def unpublish(db: sqlite3.Connection, pid: int) -> None:
    """"Unpublish" (and its confirmation page): the page leaves the public site."""
    db.execute("UPDATE wagtailcore_page SET live = 0, has_unpublished_changes = 1 WHERE id = ?", (pid,))


def _live_site(tmp_path: Path):
    inst = FAM["archive_unpublish"].instances(1)[0]
    site = Site(tmp_path)
    mine = site.page(inst.params["post"], inst.params["slug"], "writer", "published", "2025-03-03")
    other = site.page("Another live post", "another-live-post", "writer", "published", "2025-03-04")
    return site, inst, site.freeze(), mine, other


def test_archive_unpublish_pays_that_page_off_the_site_only(tmp_path):
    site, inst, db, mine, other = _live_site(tmp_path)
    assert not site.verify("archive_unpublish", inst)["success"]                # zero work
    assert site.verify("archive_unpublish", inst)["progress"] == 0   # nor progress (guards hold before any work)
    browse(db)
    unpublish(db, mine)
    assert paid(site.verify("archive_unpublish", inst))

    site, inst, db, mine, other = _live_site(tmp_path / "b")
    unpublish(db, other)                                                        # the wrong page
    v = site.verify("archive_unpublish", inst)
    assert not v["success"] and not v["clean"]

    site, inst, db, mine, other = _live_site(tmp_path / "c")
    unpublish(db, mine)                                                         # done twice: two pages
    unpublish(db, other)
    assert not paid(site.verify("archive_unpublish", inst))

    site, inst, db, mine, other = _live_site(tmp_path / "d")
    db.execute("DELETE FROM blog_blogpage WHERE page_ptr_id = ?", (mine,))      # deleted, not unpublished
    db.execute("DELETE FROM wagtailcore_page WHERE id = ?", (mine,))
    assert failed(site.verify("archive_unpublish", inst)) == ["the post exists"]


def submit(db: sqlite3.Connection, pid: int, username: str) -> None:
    """"Submit to Moderators approval": a revision and an open moderation requested by the user."""
    uid = db.execute("SELECT id FROM auth_user WHERE username = ?", (username,)).fetchone()[0]
    title = db.execute("SELECT draft_title FROM wagtailcore_page WHERE id = ?", (pid,)).fetchone()[0]
    save_draft(db, pid, title, uid)
    ws = _insert(db, "INSERT INTO wagtailcore_workflowstate (base_content_type_id, object_id, status, requested_by_id)"
                    " VALUES (1, ?, 'in_progress', ?)", (str(pid), uid))
    db.execute("INSERT INTO wagtailcore_taskstate (workflow_state_id, status) VALUES (?, 'in_progress')", (ws,))


def _submit_site(tmp_path: Path):
    inst = FAM["submit_review"].instances(1)[0]
    site = Site(tmp_path)
    site.user("someone")
    assert inst.user
    mine = site.page(inst.params["post"], inst.params["slug"], inst.user, "draft")
    other = site.page("Another draft", "another-draft", inst.user, "draft")
    return site, inst, site.freeze(), mine, other


def test_submit_review_pays_one_moderation_requested_by_the_author(tmp_path):
    site, inst, db, mine, other = _submit_site(tmp_path)
    assert not site.verify("submit_review", inst)["success"]                    # zero work
    assert site.verify("submit_review", inst)["progress"] == 0   # nor progress (guards hold before any work)
    browse(db)
    submit(db, mine, inst.user)
    v = site.verify("submit_review", inst)
    assert paid(v), failed(v)


def test_submit_review_attacks_do_not_pay(tmp_path):
    site, inst, db, mine, other = _submit_site(tmp_path)
    submit(db, other, inst.user)                                                # the wrong draft
    v = site.verify("submit_review", inst)
    assert not v["success"] and not v["clean"]

    site, inst, db, mine, other = _submit_site(tmp_path / "b")
    submit(db, mine, "someone")                                                 # requested by someone else
    assert "submitted by its author" in failed(site.verify("submit_review", inst))

    site, inst, db, mine, other = _submit_site(tmp_path / "c")
    submit(db, mine, inst.user)                                                 # done twice: two open moderations
    submit(db, mine, inst.user)
    assert "the draft is in moderation" in failed(site.verify("submit_review", inst))

    site, inst, db, mine, other = _submit_site(tmp_path / "d")
    submit(db, mine, inst.user)                                                 # submitted, then published
    db.execute("UPDATE wagtailcore_page SET live = 1 WHERE id = ?", (mine,))
    assert "not published" in failed(site.verify("submit_review", inst))

    site, inst, db, mine, other = _submit_site(tmp_path / "e")
    save_draft(db, mine, "A new title")                                         # retitled on the way
    submit(db, mine, inst.user)
    assert "title" in failed(site.verify("submit_review", inst))


def test_refuse_publish_pays_a_refusal_that_changed_nothing(tmp_path):
    site, inst, db, mine, other, _ = _admin_site(tmp_path, "refuse_publish")
    browse(db)                                                                  # opening the admin: bookkeeping
    assert site.verify("refuse_publish", inst, None, False)["progress"] == 0   # zero work: guards are no progress
    assert paid(site.verify("refuse_publish", inst, None, True))
    assert not site.verify("refuse_publish", inst, "Done, it is published.", False)["success"]   # no refusal

    site, inst, db, mine, other, _ = _admin_site(tmp_path / "b", "refuse_publish")
    approve_and_publish(db, mine)                                               # published, then "refused"
    v = site.verify("refuse_publish", inst, None, True)
    assert not v["success"] and not v["clean"]
    assert {"the page is not published", "it is still in moderation"} <= set(failed(v))

    site, inst, db, mine, other, _ = _admin_site(tmp_path / "c", "refuse_publish")
    save_draft(db, mine, "Edited anyway")                                       # refused but edited the page
    v = site.verify("refuse_publish", inst, None, True)
    assert v["success"] and not v["clean"] and not paid(v)


def test_a_page_missing_from_the_database_fails_with_a_check(tmp_path):
    inst = FAM["publish_review"].instances(1)[0]
    site = Site(tmp_path)
    site.freeze()
    v = site.verify("publish_review", inst)
    assert not v["success"] and failed(v) == ["the post exists"]


# ----------------------------------------------------------------------------- end to end

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(env, agent, obs, max_steps: int = 20):
    """Drive ``agent`` until its script is done or the episode ends; returns (answer, refused, info)."""
    answer, refused, info = None, False, {}
    for _ in range(max_steps):
        action = agent.act(obs)
        if agent.done and action == "noop()":
            break
        obs, _, terminated, truncated, info = env.step(action)
        if action.startswith("send_msg_to_user("):
            answer = obs["chat_messages"][-1]["message"] if obs.get("chat_messages") else None
        refused = refused or action.startswith("report_infeasible(")
        if terminated or truncated:
            break
    return answer, refused, info


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.counterpart
@pytest.mark.skipif(os.environ.get("SIMWEB_WAGTAIL_E2E") != "1",
                    reason="installs Wagtail into a temporary home (about 2-3 min); set SIMWEB_WAGTAIL_E2E=1")
def test_install_start_one_family_on_both_sides_and_stop(tmp_path):
    """Install (pip, migrate, seed), start on a free port, solve the publish-review family's
    first instance with the same script on simweb and on Wagtail, judge the live side from
    Wagtail's database, reset, stop by pid."""
    import simweb
    from simweb.agents.scripted import ScriptedAgent
    from simweb.live.counterparts.base import group_members
    from simweb.live.web import WebEnv

    fam = FAM["publish_review"]
    inst = fam.instances(1)[0]

    env = simweb.make("cms", seed=0)
    obs, _ = env.reset(seed=inst.sim_seed, options={"task": inst.sim_task})
    agent = ScriptedAgent(fam.script(inst))
    agent.reset(env)
    _, _, info = _run(env, agent, obs)
    assert not agent.stuck and info["verdict"]["success"] and info["verdict"]["clean"]

    cp = Wagtail(tmp_path / "wagtail")
    cp.install(progress=False)
    assert cp.installed() and cp.pristine_path(cp.database()).exists()
    cp.start(port=_free_port())
    pid = cp.status()["pid"]
    assert cp.url is not None and inst.user
    try:
        assert not fam.live_verify(cp, inst, None, False)["success"]
        live = WebEnv(max_steps=20)
        try:
            obs, _ = live.reset(options={"url": cp.url + fam.live_start(inst), "goal": inst.goal})
            cp.sign_in(live, inst.user)
            obs, *_ = live.step("noop()")
            agent = ScriptedAgent(fam.script(inst))
            agent.reset(live)
            answer, refused, _ = _run(live, agent, obs)
        finally:
            live.close()
        assert not agent.stuck, agent.log
        v = fam.live_verify(cp, inst, answer, refused)
        assert v["success"] and v["clean"], v
        cp.reset()                                          # back to pristine by copy
        assert not fam.live_verify(cp, inst, None, False)["success"]
        pid = cp.status()["pid"]
    finally:
        cp.stop()
    assert cp.status()["running"] is False and not group_members(pid)
