"""The counterpart framework on a tiny counterpart: a stdlib WSGI app over one SQLite file.

Covers install (venv, setup, seed, pristine copy, idempotence), start in the background
with a pid file, readiness, reset by copy, stop by pid (no process left in its group, an
unrelated pid never signalled), run_as (a server running as nobody that can still write
its database), the registry, the CLI's one-line errors, dbdiff and the verdict helpers.
"""
from __future__ import annotations

import json
import os
import pwd
import sqlite3
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path
from typing import ClassVar

import pytest
from click.testing import CliRunner

from simweb.live.counterparts import CounterpartError, families, get, names, pair
from simweb.live.counterparts.base import Counterpart, group_members, http_status, port_free
from simweb.live.counterparts.dbdiff import Change, diff, summarize
from simweb.live.counterparts.portable import answer_check, check, collateral, field_check, refusal_check, verdict
from simweb.tools.cli import main

SERVER = r'''
import sqlite3, sys
from wsgiref.simple_server import make_server, WSGIRequestHandler

DB = sys.argv[2]

class Quiet(WSGIRequestHandler):
    def log_message(self, *a):
        pass

def app(environ, start):
    conn = sqlite3.connect(DB)
    if environ["REQUEST_METHOD"] == "POST":
        n = int(environ.get("CONTENT_LENGTH") or 0)
        title = environ["wsgi.input"].read(n).decode()
        conn.execute("INSERT INTO item (title, price) VALUES (?, 0)", (title,))
        conn.commit()
    rows = conn.execute("SELECT title FROM item ORDER BY id").fetchall()
    conn.close()
    start("200 OK", [("Content-Type", "text/plain")])
    return ["\n".join(r[0] for r in rows).encode()]

make_server("127.0.0.1", int(sys.argv[1]), app, handler_class=Quiet).serve_forever()
'''

SEED = r'''
import json, sqlite3, sys
payload = json.load(open(sys.argv[1]))
conn = sqlite3.connect(sys.argv[2])
conn.executemany("INSERT INTO item (title, price) VALUES (?, ?)", [(i["title"], i["price"]) for i in payload["items"]])
conn.commit()
'''


class Tiny(Counterpart):
    """A counterpart with no requirements: setup makes the schema, seed fills it."""

    name = "tiny"
    app = "shopping"
    requirements: ClassVar[list[str]] = []
    default_port = 0  # set per test

    def setup(self) -> None:
        (self.home / "server.py").write_text(SERVER)
        (self.home / "seed.py").write_text(SEED)
        for f in ("server.py", "seed.py"):
            (self.home / f).chmod(0o644)
        self.run([str(self.python), "-c",
                  "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
                  "c.execute('CREATE TABLE item (id INTEGER PRIMARY KEY, title TEXT, price INTEGER)'); c.commit()",
                  str(self.database())])

    def payload(self) -> dict:
        return {"items": [{"title": "Merino sweater", "price": 4900}, {"title": "Wool cap", "price": 1500}]}

    def seed(self, payload_file: Path) -> None:
        self.run([str(self.python), str(self.home / "seed.py"), str(payload_file), str(self.database())])

    def database(self) -> Path:
        return self.data_dir / "shop.sqlite"

    def server_command(self, port: int) -> list[str]:
        return [str(self.python), str(self.home / "server.py"), str(port), str(self.database())]


class TinyAsNobody(Tiny):
    name = "tiny-nobody"
    run_as = "nobody"


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get_text(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as r:
        return r.read().decode()


def post(url: str, body: str) -> str:
    with urllib.request.urlopen(urllib.request.Request(url, data=body.encode(), method="POST"), timeout=5) as r:
        return r.read().decode()


@pytest.fixture()
def home():
    # Not pytest's tmp_path: its parents are mode 700, unreachable for the run_as user.
    d = Path(tempfile.mkdtemp(prefix="simweb-cp-"))
    d.chmod(0o755)
    yield d
    subprocess.run(["rm", "-rf", str(d)], check=False)


@pytest.fixture()
def tiny(home):
    cp = Tiny(home / "tiny")
    cp.default_port = free_port()  # type: ignore[misc]  # this test's own port, on this instance only
    yield cp
    cp.stop()


# ----------------------------------------------------------------------------- lifecycle

def test_install_seeds_and_keeps_a_pristine_copy(tiny):
    assert not tiny.installed()
    tiny.install(progress=False)
    assert tiny.installed() and tiny.python.exists()
    rows = tiny.connect().execute("SELECT title, price FROM item ORDER BY id").fetchall()
    assert [tuple(r) for r in rows] == [("Merino sweater", 4900), ("Wool cap", 1500)]
    assert tiny.pristine_path(tiny.database()).exists()
    assert [tuple(r) for r in tiny.pristine_connect().execute("SELECT title FROM item")] == [("Merino sweater",), ("Wool cap",)]
    # Idempotent: a second install does not re-seed (the seed would duplicate the rows).
    tiny.install(progress=False)
    assert tiny.connect().execute("SELECT count(*) FROM item").fetchone()[0] == 2
    assert "seed.py" in (tiny.home / "commands.log").read_text()


def test_start_reset_stop_by_pid(tiny):
    tiny.install(progress=False)
    url = tiny.start()
    st = tiny.status()
    assert st["running"] and st["url"] == url and st["port"] == tiny.default_port
    pid = st["pid"]
    assert group_members(pid) == [pid]  # its own process group
    assert os.getpgid(pid) == pid and os.getsid(pid) == pid
    assert get_text(url + "/").splitlines() == ["Merino sweater", "Wool cap"]
    post(url + "/", "Silk scarf")
    assert tiny.connect().execute("SELECT count(*) FROM item").fetchone()[0] == 3
    assert tiny.start() == url  # already running: same URL, no second server

    tiny.reset()
    st2 = tiny.status()
    assert st2["running"] and st2["port"] == tiny.default_port and st2["pid"] != pid
    assert not Path(f"/proc/{pid}").exists() or not group_members(pid)
    assert get_text(url + "/").splitlines() == ["Merino sweater", "Wool cap"]

    tiny.stop()
    assert not group_members(st2["pid"])
    assert not tiny.pid_path.exists()
    assert tiny.status() | {"home": None} == {"name": "tiny", "app": "shopping", "installed": True, "running": False,
                                              "pid": None, "port": None, "url": None, "home": None}
    assert http_status(url + "/") is None and port_free(tiny.default_port)
    tiny.stop()  # no-op when stopped


def test_stop_never_signals_a_recycled_pid(tiny):
    tiny.install(progress=False)
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        # A stale pid file naming a live process that is not the server (other start time).
        tiny.pid_path.write_text(json.dumps({"pid": other.pid, "port": tiny.default_port, "start_time": 1}))
        assert not tiny.status()["running"]
        tiny.stop()
        assert other.poll() is None
        assert not tiny.pid_path.exists()
    finally:
        other.kill()
        other.wait()


def test_start_errors_are_one_line(tiny, home):
    with pytest.raises(CounterpartError, match="not installed"):
        tiny.start()
    tiny.install(progress=False)
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", tiny.default_port))
        s.listen()
        with pytest.raises(CounterpartError, match=f"port {tiny.default_port} on 127.0.0.1 is in use"):
            tiny.start()

    class Broken(Tiny):
        def server_command(self, port: int) -> list[str]:
            return [str(self.python), "-c", "import sys; print('boom: no settings'); sys.exit(3)"]

    b = Broken(tiny.home)
    b.default_port = tiny.default_port  # type: ignore[misc]  # the same port, on this instance only
    with pytest.raises(CounterpartError) as exc:
        b.start()
    assert "exited with code 3" in str(exc.value) and "boom: no settings" in str(exc.value)
    assert "\n" not in str(exc.value)
    assert not b.pid_path.exists()


def test_failed_command_is_one_line(tiny):
    tiny.home.mkdir(parents=True)
    with pytest.raises(CounterpartError) as exc:
        tiny.run([sys.executable, "-c", "import sys; print('first'); print('the real reason'); sys.exit(4)"])
    msg = str(exc.value)
    assert "exit 4" in msg and "the real reason" in msg and "\n" not in msg


@pytest.mark.skipif(os.geteuid() != 0, reason="run_as switches users only when run as root")
def test_run_as_nobody(home):
    cp = TinyAsNobody(home / "nobody")
    cp.default_port = free_port()  # type: ignore[misc]  # this test's own port, on this instance only
    try:
        cp.install(progress=False)
        nobody = pwd.getpwnam("nobody").pw_uid
        assert cp.database().stat().st_uid == nobody
        url = cp.start()
        pid = cp.status()["pid"]
        uid_line = [ln for ln in Path(f"/proc/{pid}/status").read_text().splitlines() if ln.startswith("Uid:")][0]
        assert int(uid_line.split()[1]) == nobody
        post(url + "/", "written by nobody")  # the server can write its own database
        assert "written by nobody" in get_text(url + "/")
        cp.reset()
        assert "written by nobody" not in get_text(url + "/")
        assert cp.database().stat().st_uid == nobody
    finally:
        cp.stop()
    assert not group_members(pid)


# ----------------------------------------------------------------------------- registry and CLI

def test_registry_names_pairs_and_did_you_mean():
    assert names() == ["oscar", "pretix", "roundup", "spirit", "wagtail"]
    assert pair("issues:roundup") == ("issues", "roundup")
    with pytest.raises(CounterpartError, match="did you mean 'roundup'"):
        get("rondup")
    with pytest.raises(CounterpartError, match="did you mean 'issues:roundup'"):
        pair("issue:roundup")
    with pytest.raises(CounterpartError, match="unknown counterpart"):
        families("nosuch")


def test_cli_errors_are_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("SIMWEB_COUNTERPARTS", str(tmp_path))
    r = CliRunner().invoke(main, ["counterpart", "start", "rondup"])
    assert r.exit_code == 2
    assert r.output.strip() == "simweb: error: unknown counterpart 'rondup'; did you mean 'roundup'?"
    r = CliRunner().invoke(main, ["counterpart", "status", "--json"])
    assert r.exit_code == 0, r.output
    rows = json.loads(r.output)
    assert [x["name"] for x in rows] == names() and not any(x["running"] for x in rows)


# ----------------------------------------------------------------------------- dbdiff

def make_db(path: Path, script: str) -> Path:
    conn = sqlite3.connect(path)
    conn.executescript(script)
    conn.commit()
    conn.close()
    return path


BASE = """
CREATE TABLE issue (id INTEGER PRIMARY KEY, title TEXT, status TEXT, activity TEXT);
CREATE TABLE link (a INTEGER, b INTEGER, note TEXT, PRIMARY KEY (b, a));
CREATE TABLE log (line TEXT);
CREATE TABLE sessions (k TEXT PRIMARY KEY, v TEXT);
INSERT INTO issue VALUES (1, 'Crash on save', 'open', 't0'), (2, 'Typo', 'open', 't0'), (3, 'Slow', 'closed', 't0');
INSERT INTO link VALUES (1, 2, 'dup'), (2, 3, NULL);
INSERT INTO log VALUES ('a');
INSERT INTO sessions VALUES ('s1', 'x');
"""


def test_dbdiff_field_level_changes(tmp_path):
    a = make_db(tmp_path / "a.db", BASE)
    b = make_db(tmp_path / "b.db", BASE + """
UPDATE issue SET status = 'closed', activity = 't1' WHERE id = 1;
UPDATE issue SET activity = 't1' WHERE id = 2;
DELETE FROM issue WHERE id = 3;
INSERT INTO issue VALUES (4, 'New one', 'open', 't1');
UPDATE link SET note = 'related' WHERE a = 2 AND b = 3;
INSERT INTO log VALUES ('b');
INSERT INTO sessions VALUES ('s2', 'y');
CREATE TABLE extra (id INTEGER PRIMARY KEY, v TEXT);
INSERT INTO extra VALUES (7, 'z');
""")
    got = diff(a, b, ignore_tables=["sess*"], ignore_fields=["*.activity"])
    assert [(c.key, c.op, c.before, c.after) for c in got] == [
        ("extra.7", "insert", None, {"id": 7, "v": "z"}),
        ("issue.1.status", "update", "open", "closed"),
        ("issue.3", "delete", {"id": 3, "title": "Slow", "status": "closed"}, None),
        ("issue.4", "insert", None, {"id": 4, "title": "New one", "status": "open"}),
        ("link.3/2.note", "update", None, "related"),
        ("log.2", "insert", None, {"rowid": 2, "line": "b"}),
    ]
    assert summarize(got)["issue"] == {"delete": 1, "insert": 1, "update": 1}
    # Without the ignore lists the bookkeeping shows up too.
    keys = {c.key for c in diff(a, b)}
    assert {"issue.2.activity", "issue.1.activity", "sessions.s2"} <= keys
    assert diff(a, a) == []
    # Connections work as well as paths; the reverse diff swaps insert and delete.
    rev = diff(sqlite3.connect(b), sqlite3.connect(a), tables=["issue"], ignore_fields=["*.activity"])
    assert [(c.key, c.op) for c in rev] == [("issue.1.status", "update"), ("issue.3", "insert"), ("issue.4", "delete")]
    assert Change("t", (1,), "update", "f", 1, 2).to_json()["pk"] == [1]


# ----------------------------------------------------------------------------- verdict helpers

def test_verdict_and_answer_checks():
    v = verdict([check("status is closed", True), check("assignee is ann", False)])
    assert v["success"] is False and v["progress"] == 0.5 and v["clean"] is True
    assert v["checks"][-1]["name"] == "no collateral changes"
    assert verdict([])["success"] is False
    v = verdict([check("x", True)], [check("collateral: issue.2.title", False)])
    assert v["success"] is True and v["clean"] is False
    assert answer_check("money", "It costs $49.00", 4900, "price")["ok"]
    assert not answer_check("money", "49 or 15", 4900, "price")["ok"]
    assert answer_check("set", "ann, bob", ["Bob", "Ann"], "assignees")["ok"]
    assert field_check("title", "Crash on save.", "crash on save", text=True)["ok"]
    assert not field_check("status", "open", "closed")["ok"]
    assert refusal_check(True)["ok"] and not refusal_check(False, "done")["ok"]


def test_collateral_claims_by_pattern(tiny):
    tiny.install(progress=False)
    conn = sqlite3.connect(tiny.database())
    conn.execute("UPDATE item SET price = 5100 WHERE id = 1")
    conn.execute("UPDATE item SET title = 'Wool hat' WHERE id = 2")
    conn.execute("INSERT INTO item (title, price) VALUES ('Scarf', 900)")
    conn.commit()
    conn.close()
    changes, damage = collateral(tiny, ["item.1.price", "item.3"])
    assert [c.key for c in changes] == ["item.1.price", "item.2.title", "item.3"]
    assert [d["name"] for d in damage] == ["collateral: item.2.title"]
    assert damage[0]["detail"] == "'Wool cap' -> 'Wool hat'"
    assert collateral(tiny, ["item.*"])[1] == []
    _, damage = collateral(tiny, lambda c: c.op == "update")
    assert [d["name"] for d in damage] == ["collateral: item.3"]
    _, damage = collateral(tiny, [])
    assert len(damage) == 3


# ----------------------------------------------------------------------------- every pair's scripts on simweb

@pytest.mark.parametrize("pair_name", ["booking:pretix", "cms:wagtail", "shopping:oscar"])
def test_each_script_solves_its_simweb_task_in_process(pair_name):
    """The steps a family's script takes on the counterpart solve its simweb task in
    process, through sim2live's own simweb side: success and a clean verdict, the agent
    never stuck, the goal the instance's (run_sim refuses a different one)."""
    import simweb
    from simweb.live.sim2live import make_agent, run_sim, select_families

    app_name, _ = pair(pair_name)
    env = simweb.make(app_name, seed=0)
    for fam in select_families(pair_name, None):
        for inst in fam.instances(2):
            agent = make_agent("scripted", fam, inst)
            side = run_sim(inst, agent, (), 40, env)
            assert not agent.stuck, (inst.id, agent.log)
            assert side.verdict["success"] and side.verdict["clean"], (inst.id, side.verdict)
