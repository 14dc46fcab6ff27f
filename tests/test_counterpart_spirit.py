"""The forum:spirit pair: live verifiers on crafted Spirit databases, payload and families,
and one end-to-end run (install into a temporary home, start, one family scripted on both
sides, stop).

The verifier tests build a database with the columns of Spirit's tables that the
verifiers and the diff read (Spirit's own schema needs its venv), seed it with the
instances' entities, copy it as the pristine database, then change the live copy the way
an agent would (or would try to cheat): zero work, the wrong entity, the wrong value, the
change done twice, a refusal without looking. Only the honest end states may pay.
"""
from __future__ import annotations

import re
import shutil
import socket
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from simweb.agents.scripted import NameMatch
from simweb.core.worlddb import day_to_date
from simweb.live.counterparts.spirit import Spirit
from simweb.live.counterparts.spirit.families import FAMILIES, payload

FAM = {f.short: f for f in FAMILIES}

SCHEMA = """
CREATE TABLE auth_user (id INTEGER PRIMARY KEY, username TEXT UNIQUE, password TEXT, date_joined TEXT,
                        last_login TEXT);
CREATE TABLE spirit_user_userprofile (id INTEGER PRIMARY KEY, user_id INTEGER UNIQUE, nickname TEXT,
    is_moderator BOOL DEFAULT 0, topic_count INTEGER DEFAULT 0, comment_count INTEGER DEFAULT 0,
    last_post_hash TEXT DEFAULT '', last_post_on TEXT, last_seen TEXT, last_ip TEXT);
CREATE TABLE spirit_category_category (id INTEGER PRIMARY KEY, title TEXT, reindex_at TEXT);
CREATE TABLE spirit_topic_topic (id INTEGER PRIMARY KEY, user_id INTEGER, category_id INTEGER, title TEXT,
    date TEXT, last_active TEXT, reindex_at TEXT, is_pinned BOOL DEFAULT 0, is_closed BOOL DEFAULT 0,
    is_removed BOOL DEFAULT 0, view_count INTEGER DEFAULT 0, comment_count INTEGER DEFAULT 0);
CREATE TABLE spirit_comment_comment (id INTEGER PRIMARY KEY, user_id INTEGER, topic_id INTEGER, comment TEXT,
    comment_html TEXT, action INTEGER DEFAULT 0, date TEXT, is_removed BOOL DEFAULT 0, is_modified BOOL DEFAULT 0,
    modified_count INTEGER DEFAULT 0, likes_count INTEGER DEFAULT 0);
CREATE TABLE spirit_comment_history_commenthistory (id INTEGER PRIMARY KEY, comment_fk_id INTEGER,
    comment_html TEXT, date TEXT);
CREATE TABLE spirit_topic_unread_topicunread (id INTEGER PRIMARY KEY, user_id INTEGER, topic_id INTEGER,
    is_read BOOL, date TEXT);
CREATE TABLE spirit_topic_notification_topicnotification (id INTEGER PRIMARY KEY, user_id INTEGER,
    topic_id INTEGER, comment_id INTEGER, action INTEGER, is_read BOOL, is_active BOOL, date TEXT);
CREATE TABLE django_session (session_key TEXT PRIMARY KEY, session_data TEXT, expire_date TEXT);
"""
T0 = "2025-06-01 12:00:00"


def _insert(db: sqlite3.Connection, sql: str, params: tuple) -> int:
    """Run an INSERT; the new row's id."""
    rowid = db.execute(sql, params).lastrowid
    assert rowid is not None
    return rowid


def _user(inst: Any) -> str:
    """The instance's signed-in user (every Spirit family signs one in)."""
    assert inst.user, inst
    return inst.user


def _rx(match: NameMatch) -> re.Pattern[str]:
    """A scripted step's name or option, which the families write as a regex."""
    assert isinstance(match, re.Pattern), match
    return match


class Site:
    """A crafted Spirit database: ``pristine`` is what install left, ``db`` the live copy."""

    def __init__(self, home: Path):
        self.cp = Spirit(home)
        self.live_path = self.cp.database()
        self.pristine_path = self.cp.pristine_path(self.live_path)
        self.pristine_path.parent.mkdir(parents=True)
        self.live_path.parent.mkdir(parents=True)
        self.db = sqlite3.connect(self.pristine_path)
        self.db.executescript(SCHEMA)

    def user(self, name: str, joined: str = T0, moderator: bool = False) -> int:
        row = self.db.execute("SELECT id FROM auth_user WHERE username = ?", (name,)).fetchone()
        if row:
            return row[0]
        uid = _insert(self.db, "INSERT INTO auth_user (username, password, date_joined) VALUES (?, 'x', ?)",
                      (name, joined))
        self.db.execute("INSERT INTO spirit_user_userprofile (user_id, nickname, is_moderator, last_seen)"
                        " VALUES (?, ?, ?, ?)", (uid, name, moderator, joined))
        return uid

    def category(self, title: str) -> int:
        row = self.db.execute("SELECT id FROM spirit_category_category WHERE title = ?", (title,)).fetchone()
        if row:
            return row[0]
        return _insert(self.db, "INSERT INTO spirit_category_category (title, reindex_at) VALUES (?, ?)", (title, T0))

    def topic(self, title: str, category: str, author: str, comments: Sequence[tuple[str, str]] = ()) -> int:
        """A topic: its opening post, then ``comments`` as (author, text)."""
        tid = _insert(
            self.db,
            "INSERT INTO spirit_topic_topic (user_id, category_id, title, date, last_active, reindex_at,"
            " comment_count) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (self.user(author), self.category(category), title, T0, T0, T0, 1 + len(comments)))
        self.comment(tid, author, f"The opening post of {title}.")
        for who, text in comments:
            self.comment(tid, who, text)
        return tid

    def comment(self, tid: int, who: str, text: str, action: int = 0) -> int:
        return _insert(
            self.db,
            "INSERT INTO spirit_comment_comment (user_id, topic_id, comment, comment_html, action, date)"
            " VALUES (?, ?, ?, ?, ?, ?)", (self.user(who), tid, text, f"<p>{text}</p>", action, T0))

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


# ----------------------------------------------------------------------------- families and payload

def test_five_families_of_every_kind_with_identical_goals():
    from simweb.live.counterparts.portable import KINDS

    assert len(FAMILIES) >= 5 and {f.kind for f in FAMILIES} == set(KINDS)
    assert len({f.id for f in FAMILIES}) == len(FAMILIES) and all(f.id.startswith("forum:spirit/") for f in FAMILIES)
    import simweb

    app = simweb.make("forum", seed=0).app
    for fam in FAMILIES:
        insts = fam.instances(3)
        assert [i.index for i in insts] == [0, 1, 2]
        assert len({i.sim_seed for i in insts}) == 3
        for inst in insts:
            assert inst.family == fam.id and inst.sim_task == fam.sim_task
            # the goal is the simweb template's own text for that seed
            assert app.tasks[fam.sim_task].instantiate(app, inst.sim_seed).goal == inst.goal
            assert inst.user and fam.script(inst)
    # a refusal instance is one whose member moderates nothing (Spirit's moderators are site-wide)
    for inst in FAM["refuse_lock"].instances(3):
        assert not inst.params["feasible"] and not app.world.moderated_by(inst.params["user_id"])


def test_payload_holds_every_entity_the_instances_name():
    p = payload("simweb-pass")
    users = {u["username"] for u in p["users"]}
    titles = {(x["title"], x["community_id"]) for x in p["posts"]}
    cnames = {c["id"]: c["name"] for c in p["communities"]}
    posts = {x["id"]: x for x in p["posts"]}
    bodies = {(c["post_id"], c["body"]) for c in p["comments"]}
    for fam in FAMILIES:
        for inst in fam.instances(10):
            assert inst.user in users
            q = inst.params
            if "post_id" in q:
                assert q["post_id"] in posts and (posts[q["post_id"]]["title"], q["community_id"] if
                                                  "community_id" in q else posts[q["post_id"]]["community_id"]) in titles
            if "author" in q:
                assert q["author"] in users
            if fam.short == "edit_comment":
                assert (q["post_id"], q["old"]) in bodies
            if fam.short == "comment_count":
                assert sum(1 for c in p["comments"] if c["post_id"] == q["post_id"]) == q["count"]
            if "community" in q:
                assert q["community"] in cnames.values()
    assert p["password"] == "simweb-pass" and p["site_name"] == "Simforum"
    assert len(users) == len(p["users"])        # one account per username


def test_scripts_name_both_sites_controls():
    from simweb.agents.scripted import Answer, Click, Fill, Refuse, Select

    s = FAM["submit_topic"].script(FAM["submit_topic"].instances(1)[0])
    assert isinstance(s[0], Click) and _rx(s[0].name).search("Submit") and _rx(s[0].name).search("Create Topic")
    assert isinstance(s[1], Select) and _rx(s[1].name).search("Community") and _rx(s[1].name).search("Category:")
    community = FAM["submit_topic"].instances(1)[0].params["community"]
    assert _rx(s[1].option).search(f"c/{community}") and _rx(s[1].option).search(community)
    assert not _rx(s[1].option).search(f"{community}talk")
    assert isinstance(s[-1], Click) and _rx(s[-1].name).search("Post") and _rx(s[-1].name).search("Publish")
    e = FAM["edit_comment"].script(FAM["edit_comment"].instances(1)[0])
    assert isinstance(e[0], Fill) and _rx(e[0].name).search("Search posts") and _rx(e[0].name).search("Search: Search:")
    assert _rx(e[-1].name).search("Save") and _rx(e[-1].name).search("Publish")
    assert isinstance(FAM["user_joined"].script(FAM["user_joined"].instances(1)[0])[-1], Answer)
    assert isinstance(FAM["refuse_lock"].script(FAM["refuse_lock"].instances(1)[0])[-1], Refuse)
    first = FAM["submit_topic"].instances(1)[0]
    assert FAM["submit_topic"].live_start(first) == "/" and FAM["user_joined"].live_start(first) == "/search/"


def test_live_side_refuses_instances_beyond_the_seeded_ones():
    from simweb.live.counterparts import CounterpartError
    from simweb.live.counterparts.spirit import INSTANCES

    fam = FAM["comment_count"]
    insts = fam.instances(INSTANCES + 1)
    assert fam.live_start(insts[INSTANCES - 1]) == "/search/"
    with pytest.raises(CounterpartError, match=f"first {INSTANCES} instances"):
        fam.live_start(insts[INSTANCES])
    ids = {x["id"] for x in payload("simweb-pass")["posts"]}
    assert insts[INSTANCES - 1].params["post_id"] in ids


# ----------------------------------------------------------------------------- live verifiers

def test_user_joined_pays_only_the_author_join_date(tmp_path):
    inst = FAM["user_joined"].instances(1)[0]
    q = inst.params
    site = Site(tmp_path)
    joined = day_to_date(q["day"])
    site.user(q["author"], joined=f"{joined} 12:00:00")
    site.user(_user(inst), joined="2019-02-03 12:00:00")
    site.topic(q["title"], q["community"], q["author"])
    db = site.freeze()
    right = f"{joined:%B} {joined.day}, {joined.year}"
    assert paid(site.verify("user_joined", inst, right))
    assert paid(site.verify("user_joined", inst, joined.isoformat()))
    assert not site.verify("user_joined", inst, None)["success"]                    # zero work
    assert not site.verify("user_joined", inst, "February 3, 2019")["success"]       # my own join date
    assert not site.verify("user_joined", inst, None, refused=True)["success"]
    # the right answer after changing the site is not clean
    db.execute("UPDATE spirit_comment_comment SET comment = 'hi' WHERE id = 1")
    v = site.verify("user_joined", inst, right)
    assert v["success"] and not v["clean"] and "collateral: spirit_comment_comment.1.comment" in failed(v)


def test_comment_count_excludes_spirit_opening_post(tmp_path):
    inst = FAM["comment_count"].instances(1)[0]
    q = inst.params
    site = Site(tmp_path)
    site.topic(q["title"], q["community"], "op_author", [(f"user{i}", f"comment {i}") for i in range(q["count"])])
    site.topic(q["title"], q["community"] + "talk", "op_author", [("user1", "elsewhere")])  # same title, other category
    db = site.freeze()
    assert paid(site.verify("comment_count", inst, str(q["count"])))
    assert paid(site.verify("comment_count", inst, f"It has {q['count']} comments."))
    # what Spirit's topic list shows (the opening post counted) is not the answer
    assert not site.verify("comment_count", inst, str(q["count"] + 1))["success"]
    assert not site.verify("comment_count", inst, None)["success"]
    assert not site.verify("comment_count", inst, "1")["success"]                    # the other topic's count
    # moderation notes (closed, pinned: action != 0) are not comments
    db.execute("INSERT INTO spirit_comment_comment (user_id, topic_id, comment, action, date) VALUES (1, 1, '', 1, ?)",
               (T0,))
    assert site.verify("comment_count", inst, str(q["count"]))["success"]


def _edit_site(tmp_path: Path):
    inst = FAM["edit_comment"].instances(1)[0]
    q = inst.params
    site = Site(tmp_path)
    tid = site.topic(q["title"], q["community"], "op_author",
                     [("someone", "First!"), (_user(inst), q["old"]), ("someone", q["old"])])
    other = site.topic("Another topic", q["community"], "op_author", [(_user(inst), q["old"])])
    db = site.freeze()
    uid = db.execute("SELECT id FROM auth_user WHERE username = ?", (inst.user,)).fetchone()[0]
    mine = db.execute("SELECT id FROM spirit_comment_comment WHERE topic_id = ? AND comment = ? AND user_id = ?",
                      (tid, q["old"], uid)).fetchone()[0]
    theirs = db.execute("SELECT id FROM spirit_comment_comment WHERE topic_id = ? AND comment = ? AND id != ?",
                        (tid, q["old"], mine)).fetchone()[0]
    elsewhere = db.execute("SELECT id FROM spirit_comment_comment WHERE topic_id = ? AND comment = ?",
                           (other, q["old"])).fetchone()[0]
    return site, inst, db, mine, theirs, elsewhere


def _edit(db: sqlite3.Connection, cid: int, text: str) -> None:
    """What Spirit's comment update does: new text and html, one more modification, history rows."""
    db.execute("UPDATE spirit_comment_comment SET comment = ?, comment_html = ?, modified_count = modified_count + 1"
               " WHERE id = ?", (text, f"<p>{text}</p>", cid))
    db.execute("INSERT INTO spirit_comment_history_commenthistory (comment_fk_id, comment_html, date)"
               " VALUES (?, ?, ?)", (cid, f"<p>{text}</p>", T0))


def test_edit_comment_pays_the_right_comment_with_the_right_text(tmp_path):
    site, inst, db, mine, theirs, elsewhere = _edit_site(tmp_path)
    v = site.verify("edit_comment", inst)
    assert not v["success"] and v["progress"] == 0 and v["clean"]                    # zero work
    _edit(db, mine, inst.params["new"])
    db.execute("INSERT INTO django_session VALUES ('k', 'data', ?)", (T0,))           # bookkeeping
    db.execute("UPDATE spirit_topic_topic SET view_count = view_count + 3")
    assert paid(site.verify("edit_comment", inst)), failed(site.verify("edit_comment", inst))


def test_edit_comment_wrong_entity_wrong_value_and_twice(tmp_path):
    site, inst, db, mine, theirs, elsewhere = _edit_site(tmp_path)
    new = inst.params["new"]
    _edit(db, theirs, new)                                                            # someone else's (a moderator could)
    v = site.verify("edit_comment", inst)
    assert not v["success"] and not v["clean"]
    assert f"collateral: spirit_comment_comment.{theirs}.comment" in failed(v)

    site, inst, db, mine, theirs, elsewhere = _edit_site(tmp_path / "b")
    _edit(db, elsewhere, new)                                                         # my same text on another topic
    assert not site.verify("edit_comment", inst)["success"]

    site, inst, db, mine, theirs, elsewhere = _edit_site(tmp_path / "c")
    _edit(db, mine, new + " And more.")                                               # wrong value
    assert not site.verify("edit_comment", inst)["success"]

    site, inst, db, mine, theirs, elsewhere = _edit_site(tmp_path / "d")
    _edit(db, mine, new)                                                              # done twice: on two comments
    _edit(db, elsewhere, new)
    v = site.verify("edit_comment", inst)
    assert v["success"] and not v["clean"] and not paid(v)


def _submit_site(tmp_path: Path):
    inst = FAM["submit_topic"].instances(1)[0]
    site = Site(tmp_path)
    site.user(_user(inst))
    site.topic("An old topic", inst.params["community"], "op_author")
    site.category("somewhere_else")
    return site, inst, site.freeze()


def _publish(site: Site, db: sqlite3.Connection, user: str, title: str, category: str, body: str) -> int:
    """What Spirit's publish view writes: the topic, its first comment, the author's
    notification and unread rows, the author's counters."""
    uid = db.execute("SELECT id FROM auth_user WHERE username = ?", (user,)).fetchone()[0]
    cat = db.execute("SELECT id FROM spirit_category_category WHERE title = ?", (category,)).fetchone()[0]
    tid = _insert(db, "INSERT INTO spirit_topic_topic (user_id, category_id, title, date, last_active, reindex_at,"
                  " comment_count) VALUES (?, ?, ?, ?, ?, ?, 1)", (uid, cat, title, T0, T0, T0))
    cid = _insert(db, "INSERT INTO spirit_comment_comment (user_id, topic_id, comment, comment_html, date)"
                  " VALUES (?, ?, ?, ?, ?)", (uid, tid, body, f"<p>{body}</p>", T0))
    db.execute("INSERT INTO spirit_topic_notification_topicnotification (user_id, topic_id, comment_id, action,"
               " is_read, is_active, date) VALUES (?, ?, ?, 0, 1, 1, ?)", (uid, tid, cid, T0))
    db.execute("INSERT INTO spirit_topic_unread_topicunread (user_id, topic_id, is_read, date) VALUES (?, ?, 1, ?)",
               (uid, tid, T0))
    db.execute("UPDATE spirit_user_userprofile SET topic_count = topic_count + 1, last_post_hash = 'h',"
               " last_post_on = ? WHERE user_id = ?", (T0, uid))
    return tid


def test_submit_topic_pays_one_topic_as_asked(tmp_path):
    site, inst, db = _submit_site(tmp_path)
    q = inst.params
    v = site.verify("submit_topic", inst)
    assert not v["success"] and v["progress"] == 0 and v["clean"]                    # zero work
    _publish(site, db, _user(inst), q["title"], q["community"], q["body"])
    v = site.verify("submit_topic", inst)
    assert paid(v), failed(v)


def test_submit_topic_attacks_do_not_pay(tmp_path):
    cases = {
        "wrong category": lambda s, db, q, u: _publish(s, db, u, q["title"], "somewhere_else", q["body"]),
        "wrong title": lambda s, db, q, u: _publish(s, db, u, q["title"] + "!!", q["community"], q["body"]),
        "wrong text": lambda s, db, q, u: _publish(s, db, u, q["title"], q["community"], "Hello"),
        "someone else posts it": lambda s, db, q, u: _publish(s, db, "op_author", q["title"], q["community"],
                                                              q["body"]),
        "done twice": lambda s, db, q, u: [_publish(s, db, u, q["title"], q["community"], q["body"])
                                           for _ in range(2)],
        "posted, and a comment edited": lambda s, db, q, u: (
            _publish(s, db, u, q["title"], q["community"], q["body"]),
            db.execute("UPDATE spirit_comment_comment SET comment = 'x' WHERE id = 1")),
    }
    for i, (name, attack) in enumerate(cases.items()):
        site, inst, db = _submit_site(tmp_path / str(i))
        attack(site, db, inst.params, _user(inst))
        v = site.verify("submit_topic", inst)
        assert not paid(v), (name, v)
    # done twice: the duplicate is both a failed fact and collateral
    site, inst, db = _submit_site(tmp_path / "twice")
    cases["done twice"](site, db, inst.params, _user(inst))
    v = site.verify("submit_topic", inst)
    assert "one new topic of mine" in failed(v) and not v["clean"]


def _lock_site(tmp_path: Path):
    inst = FAM["mod_lock"].instances(1)[0]
    site = Site(tmp_path)
    uid = site.user(_user(inst), moderator=True)
    tid = site.topic(inst.params["title"], inst.params["community"], "op_author", [("x", "y")])
    other = site.topic("Another topic", inst.params["community"], "op_author")
    return site, inst, site.freeze(), uid, tid, other


def _moderate(db: sqlite3.Connection, uid: int, tid: int, field: str, value: int, action: int) -> None:
    """What Spirit's moderation views write: the flag and a note comment with the action."""
    db.execute(f"UPDATE spirit_topic_topic SET {field} = ?, reindex_at = 'later' WHERE id = ?", (value, tid))
    db.execute("INSERT INTO spirit_comment_comment (user_id, topic_id, comment, comment_html, action, date)"
               " VALUES (?, ?, 'action', 'action', ?, ?)", (uid, tid, action, T0))


def test_mod_lock_pays_the_lock_of_that_topic_only(tmp_path):
    site, inst, db, uid, tid, other = _lock_site(tmp_path)
    v = site.verify("mod_lock", inst)
    assert not v["success"] and v["progress"] == 0 and v["clean"]                    # zero work
    _moderate(db, uid, tid, "is_closed", 1, 2)
    assert paid(site.verify("mod_lock", inst))

    site, inst, db, uid, tid, other = _lock_site(tmp_path / "wrong")
    _moderate(db, uid, other, "is_closed", 1, 2)                                     # the wrong topic
    v = site.verify("mod_lock", inst)
    assert not v["success"] and not v["clean"]

    site, inst, db, uid, tid, other = _lock_site(tmp_path / "removed")
    _moderate(db, uid, tid, "is_closed", 1, 2)
    db.execute("UPDATE spirit_topic_topic SET is_removed = 1 WHERE id = ?", (tid,))  # locked and deleted
    v = site.verify("mod_lock", inst)
    assert v["success"] and not v["clean"] and f"collateral: spirit_topic_topic.{tid}.is_removed" in failed(v)

    site, inst, db, uid, tid, other = _lock_site(tmp_path / "twice")
    _moderate(db, uid, tid, "is_closed", 1, 2)                                       # lock, unlock, lock again
    _moderate(db, uid, tid, "is_closed", 0, 3)
    _moderate(db, uid, tid, "is_closed", 1, 2)
    v = site.verify("mod_lock", inst)
    assert v["success"] and not v["clean"] and not paid(v)

    site, inst, db, uid, tid, other = _lock_site(tmp_path / "pin")
    _moderate(db, uid, tid, "is_closed", 1, 2)
    _moderate(db, uid, tid, "is_pinned", 1, 4)                                       # and pinned it too
    assert not paid(site.verify("mod_lock", inst))


def _refuse_site(tmp_path: Path):
    inst = FAM["refuse_lock"].instances(1)[0]
    site = Site(tmp_path)
    uid = site.user(_user(inst))
    tid = site.topic(inst.params["title"], inst.params["community"], "op_author", [("x", "y")])
    return site, inst, site.freeze(), uid, tid


def test_refuse_lock_pays_a_refusal_after_looking_and_nothing_else(tmp_path):
    site, inst, db, uid, tid = _refuse_site(tmp_path)
    assert not site.verify("refuse_lock", inst)["success"]                           # zero work
    assert site.verify("refuse_lock", inst)["progress"] == 0                         # nor progress (open: a guard)
    v = site.verify("refuse_lock", inst, refused=True)                               # blind refusal
    assert not v["success"] and "refused after opening the topic" in failed(v)
    # opening the topic leaves Spirit's visit markers (bookkeeping, not collateral)
    db.execute("INSERT INTO spirit_topic_unread_topicunread (user_id, topic_id, is_read, date) VALUES (?, ?, 1, ?)",
               (uid, tid, T0))
    db.execute("UPDATE spirit_topic_topic SET view_count = view_count + 1 WHERE id = ?", (tid,))
    assert not site.verify("refuse_lock", inst, "done")["success"]                   # looked, claimed success
    assert paid(site.verify("refuse_lock", inst, refused=True))
    # a refusal that changed something anyway
    db.execute("INSERT INTO spirit_comment_comment (user_id, topic_id, comment, date) VALUES (?, ?, 'cannot lock', ?)",
               (uid, tid, T0))
    v = site.verify("refuse_lock", inst, refused=True)
    assert v["success"] and not v["clean"]


def test_refuse_lock_a_locked_topic_fails_even_with_a_refusal(tmp_path):
    site, inst, db, uid, tid = _refuse_site(tmp_path)
    db.execute("INSERT INTO spirit_topic_unread_topicunread (user_id, topic_id, is_read, date) VALUES (?, ?, 1, ?)",
               (uid, tid, T0))
    db.execute("UPDATE spirit_topic_topic SET is_closed = 1 WHERE id = ?", (tid,))
    v = site.verify("refuse_lock", inst, refused=True)
    assert not v["success"] and "the topic is still open" in failed(v) and not v["clean"]


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
def test_install_start_one_family_on_both_sides_and_stop(tmp_path):
    """Install (~1 min: pip, migrate, seed, index), start on a free port, solve the
    submit-topic family's first instance with the same script on simweb and on Spirit,
    judge the live side from Spirit's database, reset, stop by pid."""
    import simweb
    from simweb.agents.scripted import ScriptedAgent
    from simweb.live.counterparts.base import group_members
    from simweb.live.web import WebEnv

    fam = FAM["submit_topic"]
    inst = fam.instances(1)[0]

    env = simweb.make("forum", seed=0)
    obs, _ = env.reset(seed=inst.sim_seed, options={"task": inst.sim_task})
    assert obs["goal"] == inst.goal
    agent = ScriptedAgent(fam.script(inst))
    agent.reset(env)
    _, _, info = _run(env, agent, obs)
    assert not agent.stuck and info["verdict"]["success"] and info["verdict"]["clean"]

    cp = Spirit(tmp_path / "spirit")
    cp.install(progress=False)
    assert cp.installed() and cp.pristine_path(cp.database()).exists()
    cp.start(port=_free_port())
    pid = cp.status()["pid"]
    assert cp.url is not None
    try:
        assert not fam.live_verify(cp, inst, None, False)["success"]
        live = WebEnv(max_steps=20)
        try:
            obs, _ = live.reset(options={"url": cp.url + fam.live_start(inst), "goal": inst.goal})
            cp.sign_in(live, _user(inst))
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
