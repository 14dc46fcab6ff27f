"""Served sessions that hold up: persistence across a real kill -9, explicit answers for
ended sessions, two budgets (cookie-less traffic never pushes anyone out), idle expiry,
and no resurrection of a session evicted while a request on it was running."""
from __future__ import annotations

import hashlib
import http.client
import importlib.util
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson
import pytest
from test_server import AUTH, TOKEN, state_of

from simweb.serving.omnibox.start import start_url
from simweb.serving.server import COOKIE, SESSION_HEADER, create_app
from simweb.serving.sessions import SessionDBError, SessionStore


@pytest.fixture(scope="module")
def shop_user():
    import simweb

    return simweb.make("shopping", seed=0).app.world.user(1)


def cookie(client: Any) -> str:
    """The session cookie the client holds (it must hold one)."""
    jar = client.get_cookie(COOKIE)
    assert jar is not None
    return jar.value


def sign_in(client, user: dict) -> None:
    client.get("/login")
    r = client.post("/login", data={"login": user["username"], "password": user["password"], "next": "/"})
    assert r.status_code == 303 and r.headers["Location"] == "/"
    assert state_of(client)["browser"]["user"] == user["id"]


class Clock:
    """A settable clock for idle expiry (never the wall clock in a test)."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


# ============================================================================= budgets and expiry

def test_cookie_less_requests_never_evict_a_signed_in_session(shop_user):
    server = create_app("shopping", control_token=TOKEN, max_sessions=3, max_new_sessions=5)
    store = server.extensions["simweb"].sessions
    shopper = server.test_client()
    sign_in(shopper, shop_user)
    shopper.get("/search?q=jacket")
    before = state_of(shopper)
    assert store.count(established=True) == 1
    # 200 health checks and crawler hits: each is a new session, within their own budget.
    for i in range(200):
        r = server.test_client().get(f"/search?q=crawl{i}")
        assert r.status_code == 200 and r.headers[SESSION_HEADER] == "new"
    assert store.count(established=False) == 5
    assert store.count(established=True) == 1
    r = shopper.get("/")
    assert r.status_code == 200 and r.headers[SESSION_HEADER] == "live"
    after = state_of(shopper)
    assert after["browser"]["user"] == shop_user["id"]
    assert after["runtime"] == before["runtime"]


def test_a_new_session_is_established_when_its_cookie_comes_back():
    server = create_app("shopping", control_token=TOKEN, max_sessions=10, max_new_sessions=2)
    store = server.extensions["simweb"].sessions
    c = server.test_client()
    assert c.get("/").headers[SESSION_HEADER] == "new"
    assert (store.count(established=False), store.count(established=True)) == (1, 0)
    assert c.get("/search?q=a").headers[SESSION_HEADER] == "live"
    assert (store.count(established=False), store.count(established=True)) == (0, 1)
    # A harness's control write makes an established session at once.
    h = server.test_client()
    assert h.post("/_simweb/reset", headers=AUTH, json={"seed": 0}).status_code == 200
    assert store.count(established=True) == 2


def test_cookie_less_start_urls_never_evict_a_signed_in_session(shop_user):
    """A crawler following task start links gets new sessions, in their own budget."""
    server = create_app("shopping", control_token=TOKEN, max_sessions=2, max_new_sessions=5)
    store = server.extensions["simweb"].sessions
    shopper = server.test_client()
    sign_in(shopper, shop_user)
    before = state_of(shopper)
    for i in range(12):
        r = server.test_client().get(start_url("shopping/buy_product", i))
        assert r.status_code == 200 and r.headers[SESSION_HEADER] == "new"
        assert r.headers["Set-Cookie"].startswith(f"{COOKIE}=")
    assert (store.count(established=False), store.count(established=True)) == (5, 1)
    r = shopper.get("/")
    assert r.status_code == 200 and r.headers[SESSION_HEADER] == "live"
    assert state_of(shopper)["runtime"] == before["runtime"]


def test_a_start_url_session_is_established_when_its_cookie_comes_back():
    server = create_app("shopping", control_token=TOKEN, max_sessions=10, max_new_sessions=10)
    store = server.extensions["simweb"].sessions
    c = server.test_client()
    r = c.get(start_url("shopping/buy_product", 3))
    assert r.headers[SESSION_HEADER] == "new" and (store.count(established=False), store.count(established=True)) == (1, 0)
    sid = cookie(c)
    r = c.get(start_url("shopping/product_price", 4))     # the same browser starts another task
    assert r.status_code == 200 and r.headers[SESSION_HEADER] == "live" and "Set-Cookie" not in r.headers
    assert (store.count(established=False), store.count(established=True)) == (0, 1)
    assert cookie(c) == sid
    assert state_of(c)["meta"]["task"]["id"] == "shopping/product_price"
    # A cookie naming no live session: the start URL starts a new session (it is what was asked).
    c.set_cookie(COOKIE, "a-cookie-this-server-never-made")
    r = c.get(start_url("shopping/buy_product", 3))
    assert r.status_code == 200 and r.headers[SESSION_HEADER] == "new"
    assert cookie(c) not in (sid, "a-cookie-this-server-never-made")
    assert (store.count(established=False), store.count(established=True)) == (1, 1)


def test_over_the_cap_the_least_recently_seen_session_is_evicted_and_told():
    server = create_app("shopping", control_token=TOKEN, max_sessions=2, max_new_sessions=10)
    clients = []
    for _ in range(3):
        c = server.test_client()
        c.get("/")
        c.get("/")            # established
        clients.append(c)
    oldest = clients[0]
    r = oldest.get("/search?q=x")
    assert r.status_code == 410 and r.headers[SESSION_HEADER] == "evicted"
    assert "to make room for newer ones" in r.text
    r = oldest.get("/_simweb/state", headers=AUTH)   # the cookie was cleared with the 410
    assert r.status_code == 200 and r.headers[SESSION_HEADER] == "none"
    for c in clients[1:]:
        assert c.get("/").headers[SESSION_HEADER] == "live"


def test_an_idle_session_expires_with_an_explicit_answer():
    clock = Clock()
    server = create_app("shopping", control_token=TOKEN, idle_lifetime=600, clock=clock)
    c = server.test_client()
    c.get("/")
    clock.now += 599
    assert c.get("/").status_code == 200          # a request renews the lifetime
    clock.now += 599
    assert c.get("/search?q=a").status_code == 200
    clock.now += 601
    r = c.get("/cart")
    assert r.status_code == 410 and r.headers[SESSION_HEADER] == "expired"
    assert r.mimetype == "text/html" and "idle for too long" in r.text
    assert c.get_cookie(COOKIE) is None


def test_control_endpoints_on_an_ended_session_answer_410_json():
    clock = Clock()
    server = create_app("shopping", control_token=TOKEN, idle_lifetime=60, clock=clock)
    c = server.test_client()
    c.get("/")
    sid = cookie(c)
    clock.now += 61
    for method, path in (("GET", "/_simweb/state"), ("POST", "/_simweb/reset")):
        c.set_cookie(COOKIE, sid)
        r = c.open(path, method=method, headers=AUTH, json={} if method == "POST" else None)
        assert r.status_code == 410 and r.headers[SESSION_HEADER] == "expired"
        assert r.mimetype == "application/json" and "session expired" in r.get_json()["error"]


@pytest.mark.parametrize("blob", [b"{{{", b"{}", b"[]", b'"x"', b'{"meta": {}}', b"\xff"],
                         ids=["not-json", "empty-object", "list", "string", "no-state", "not-utf8"])
def test_a_session_row_that_cannot_be_read_back_is_incompatible_not_a_500(blob):
    server = create_app("shopping", control_token=TOKEN)
    store = server.extensions["simweb"].sessions
    c = server.test_client()
    c.get("/")
    c.get("/search?q=a")
    sid = cookie(c)
    with store._writing() as conn:   # the row as a damaged or hand-edited database holds it
        conn.exec_driver_sql("UPDATE simweb_sessions SET state = ? WHERE id = ?", (blob, sid))
    store.forget(sid)
    cases: tuple[tuple[str, str, dict[str, Any]], ...] = (("GET", "/", {}), ("GET", "/_simweb/state", {"headers": AUTH}),
                             ("POST", "/search", {"data": {"q": "x"}}), ("HEAD", "/", {}),
                             ("POST", "/_simweb/reset", {"headers": AUTH, "json": {}}))
    for method, path, kw in cases:
        c.set_cookie(COOKIE, sid)
        r = c.open(path, method=method, **kw)
        assert r.status_code == 410 and r.headers[SESSION_HEADER] == "incompatible", (method, path, r.status_code)
        assert c.get_cookie(COOKIE) is None          # cleared: the next request starts afresh
    # The harness's reset, its cookie now cleared, starts a working session.
    r = c.post("/_simweb/reset", headers=AUTH, json={"task": "shopping/buy_product", "seed": 1})
    assert r.status_code == 200 and r.headers[SESSION_HEADER] == "new"
    assert c.get("/").status_code == 200 and state_of(c)["meta"]["task"]["id"] == "shopping/buy_product"


# ============================================================================= the put race

@contextmanager
def instead(obj, name: str, fn):
    """``obj.name`` is ``fn`` inside the block; afterwards the class's method shows
    through again (the App is shared by every server of its world, and other tests
    patch the class)."""
    assert name not in vars(obj)
    setattr(obj, name, fn)
    try:
        yield
    finally:
        delattr(obj, name)


def test_a_session_evicted_while_its_restore_validates_is_not_brought_back():
    server = create_app("shopping", control_token=TOKEN, max_sessions=5)
    served = server.extensions["simweb"]
    store = served.sessions
    c = server.test_client()
    c.get("/")
    c.get("/")
    sid = cookie(c)
    snapshot = state_of(c)
    real_check = served.app.check_state

    def evict_meanwhile(state):
        real_check(state)
        store.close_session(sid)    # another thread ended it while this one validated

    with instead(served.app, "check_state", evict_meanwhile):
        r = c.post("/_simweb/state", headers=AUTH, data=orjson.dumps(snapshot), content_type="application/json")
    assert r.status_code == 410 and r.headers[SESSION_HEADER] == "closed"
    # Not put back: every later request is told the same, none is a 500.
    c.set_cookie(COOKIE, sid)
    assert store.load(sid).state is None
    r = c.get("/")
    assert r.status_code == 410 and r.headers[SESSION_HEADER] == "closed"


def test_a_write_after_eviction_fails_instead_of_resurrecting():
    store = SessionStore("sqlite://", app="a", spec_hash="s", world_hash="w", max_sessions=1)
    first = store.create({"n": 1}, established=True)
    with store.lock(first):
        found = store.load(first)
        assert found.status == "live"
        store.create({"n": 2}, established=True)      # pushes `first` out meanwhile
        assert store.save(first, {"n": 3}) is False
    assert store.load(first).status == "evicted"
    assert store.count() == 1


def test_a_request_that_fails_half_way_leaves_the_committed_state():
    server = create_app("shopping", control_token=TOKEN)
    served = server.extensions["simweb"]
    c = server.test_client()
    c.get("/")
    before = state_of(c)

    def boom(state, url, **kw):
        state["meta"]["requests"] += 1000
        raise RuntimeError("a bug in the middle of a transition")

    server.config["PROPAGATE_EXCEPTIONS"] = False
    with instead(served.app, "navigate", boom):
        r = c.get("/search?q=x")
    assert r.status_code == 500 and r.text.strip() == "internal error: RuntimeError"
    assert state_of(c) == before


def test_python_api_creates_and_reads_sessions():
    server = create_app("shopping", control_token=TOKEN)
    served = server.extensions["simweb"]
    sid = served.new_session(task="shopping/add_to_cart", seed=2)
    state = served.state(sid)
    assert state["meta"]["task"]["id"] == "shopping/add_to_cart"
    c = server.test_client()
    c.set_cookie(COOKIE, sid)
    assert c.get("/").headers[SESSION_HEADER] == "live"
    assert served.state(sid)["meta"]["requests"] == state["meta"]["requests"] + 1
    assert served.set_state(sid, state) is True
    assert served.state(sid) == state
    with pytest.raises(ValueError):
        served.new_session({"meta": {}})
    assert served.state("no-such-session") is None


# ============================================================================= kill -9 and restart

def _free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _start(db: str, port: int, *extra: str) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-m", "simweb.cli", "serve", "shopping", "--port", str(port),
                             "--session-db", db, *(extra or ("--control-token", TOKEN))],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    for _ in range(300):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return proc
        except OSError:
            if proc.poll() is not None:
                assert proc.stderr is not None
                raise AssertionError(f"server exited: {proc.stderr.read().decode()[-300:]}") from None
            time.sleep(0.1)
    proc.kill()
    raise AssertionError("server did not start")


def _request(port: int, method: str, path: str, cookie: str | None = None, body: bytes | None = None,
             headers: dict | None = None) -> tuple[int, dict, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    h = dict(headers or {})
    if cookie:
        h["Cookie"] = f"{COOKIE}={cookie}"
    conn.request(method, path, body=body, headers=h)
    r = conn.getresponse()
    data = r.read()
    out = (r.status, {k.lower(): v for k, v in r.getheaders()}, data)
    conn.close()
    return out


def _cookie_of(headers: dict) -> str:
    return headers["set-cookie"].split(";")[0].split("=", 1)[1]


def test_sessions_survive_kill_9_and_restart(tmp_path: Path, shop_user):
    if not hasattr(signal, "SIGKILL"):
        pytest.fail("this test needs SIGKILL")
    db = f"sqlite:///{tmp_path / 'sessions.sqlite'}"
    port = _free_port()
    proc = _start(db, port)
    try:
        status, headers, _ = _request(port, "GET", "/login")
        assert status == 200
        sid = _cookie_of(headers)
        form = f"login={shop_user['username']}&password={shop_user['password']}&next=/".encode()
        status, headers, _ = _request(port, "POST", "/login", sid, form,
                                      {"Content-Type": "application/x-www-form-urlencoded"})
        assert status == 303
        status, _, _ = _request(port, "GET", "/search?q=jacket", sid)
        assert status == 200
        status, _, body = _request(port, "GET", "/_simweb/state", sid, headers=AUTH)
        before = orjson.loads(body)
        assert before["browser"]["user"] == shop_user["id"]
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    assert proc.returncode == -signal.SIGKILL
    proc = _start(db, port)
    try:
        status, headers, body = _request(port, "GET", "/_simweb/state", sid, headers=AUTH)
        assert status == 200 and headers[SESSION_HEADER.lower()] == "live"
        assert orjson.loads(body) == before
        status, headers, page = _request(port, "GET", "/account", sid)
        assert status == 200 and shop_user["full_name"].encode() in page
        assert "set-cookie" not in headers                      # the same session carries on
        status, headers, _ = _request(port, "GET", "/", "a-cookie-this-server-never-made")
        assert status == 410 and headers[SESSION_HEADER.lower()] == "unknown"
    finally:
        proc.terminate()
        proc.wait(10)


def test_serve_with_no_control_answers_404_on_every_control_endpoint(tmp_path: Path):
    port = _free_port()
    proc = _start(f"sqlite:///{tmp_path / 's.sqlite'}", port, "--no-control")
    try:
        assert _request(port, "GET", "/")[0] == 200
        for method, path in (("GET", "/_simweb/state"), ("POST", "/_simweb/reset"), ("POST", "/_simweb/state"),
                             ("GET", start_url("shopping/buy_product", 1))):
            status, headers, body = _request(port, method, path, body=b"{}", headers={"Content-Type": "application/json"})
            assert status == 404 and b"switched off" in body and "set-cookie" not in headers
    finally:
        proc.terminate()
        proc.wait(10)


def test_serve_prints_a_fresh_control_token_and_enforces_it(tmp_path: Path):
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "simweb.cli", "serve", "shopping", "--port", str(port),
                             "--session-db", f"sqlite:///{tmp_path / 's.sqlite'}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        token = None
        assert proc.stderr is not None
        for line in proc.stderr:
            if "control token" in line:
                token = line.split("control token ", 1)[1].split()[0]
                break
        assert token and len(token) >= 32
        for _ in range(300):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        assert _request(port, "POST", "/_simweb/reset", body=b"{}", headers={"Content-Type": "application/json"})[0] == 401
        status, headers, _ = _request(port, "POST", "/_simweb/reset", body=b"{}",
                                      headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"})
        assert status == 200 and headers[SESSION_HEADER.lower()] == "new"
    finally:
        proc.terminate()
        proc.wait(10)


def test_a_session_of_another_spec_or_world_is_incompatible(tmp_path: Path):
    url = f"sqlite:///{tmp_path / 's.sqlite'}"
    old = SessionStore(url, app="shopping", spec_hash="a" * 64, world_hash="w" * 64)
    sid = old.create({"n": 1}, established=True)
    old.dispose()
    new = SessionStore(url, app="shopping", spec_hash="b" * 64, world_hash="w" * 64)
    assert new.load(sid).status == "incompatible"
    assert new.load("never-made").status == "unknown"


@pytest.mark.parametrize("lifetime", [0, -1, float("nan"), float("inf")])
def test_an_idle_lifetime_that_is_not_a_positive_finite_number_is_refused(lifetime):
    with pytest.raises(ValueError, match="positive finite number"):
        SessionStore("sqlite://", app="a", spec_hash="s", world_hash="w", idle_lifetime=lifetime)


def test_evicted_new_sessions_leave_no_rows():
    store = SessionStore("sqlite://", app="a", spec_hash="s", world_hash="w", max_new=3)
    first = store.create({"n": 0})
    for i in range(50):
        store.create({"n": i})
    with store._reading() as conn:
        rows = conn.exec_driver_sql("SELECT count(*) FROM simweb_sessions").scalar_one()
    assert rows == 3
    assert store.load(first).status == "unknown"


# ============================================================================= unusable session databases

def _damaged(db: Path) -> Path:
    """A session database with a valid header whose table's root page is damaged."""
    store = SessionStore(f"sqlite:///{db}", app="shopping", spec_hash="s", world_hash="w")
    for i in range(40):
        store.create({"n": i, "pad": "x" * 2000}, established=True)
    store.dispose()
    data = bytearray(db.read_bytes())
    assert len(data) > 8 * 4096 and not Path(f"{db}-wal").exists()
    data[4096] ^= 0xFF    # page 2's b-tree page type (page 1, the header and schema, stays valid)
    db.write_bytes(data)
    return db


def _other_layout(db: Path) -> Path:
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE simweb_sessions(id text primary key, foo text)")
        conn.execute("INSERT INTO simweb_sessions VALUES ('abc', 'x')")
    return db


def _other_tables(db: Path) -> Path:
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE users(id int, name text)")
        conn.execute("INSERT INTO users VALUES (1, 'x')")
    return db


UNUSABLE = [(_damaged, "is damaged"), (_other_layout, "simweb_sessions table of another layout"),
            (_other_tables, "holds other tables (users)")]


def _md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("make,needle", UNUSABLE, ids=["damaged", "other-layout", "other-tables"])
def test_an_unusable_session_database_is_refused_and_left_as_it_was(tmp_path: Path, make, needle):
    db = make(tmp_path / "s.sqlite")
    before = _md5(db)
    with pytest.raises(SessionDBError, match=re.escape(needle)) as exc:
        SessionStore(f"sqlite:///{db}", app="shopping", spec_hash="s", world_hash="w")
    assert "\n" not in str(exc.value)
    assert _md5(db) == before


def test_a_session_database_of_this_layout_is_accepted(tmp_path: Path):
    url = f"sqlite:///{tmp_path / 's.sqlite'}"
    store = SessionStore(url, app="shopping", spec_hash="s", world_hash="w")
    sid = store.create({"n": 1})
    store.dispose()
    again = SessionStore(url, app="forum", spec_hash="s", world_hash="w")   # apps may share a file
    again.dispose()
    again = SessionStore(url, app="shopping", spec_hash="s", world_hash="w")
    assert again.load(sid).state == {"n": 1}
    again.dispose()


@pytest.mark.parametrize("url,module,package", [("postgresql://u@db/simweb", "psycopg", "psycopg"),
                                                ("postgresql+psycopg2://u@db/simweb", "psycopg2", "psycopg2-binary"),
                                                ("mysql://u@db/simweb", "MySQLdb", "mysqlclient")])
def test_a_session_database_whose_driver_is_missing_names_the_package(monkeypatch, url, module, package):
    monkeypatch.setitem(sys.modules, module, None)   # importing it fails, installed or not
    with pytest.raises(SessionDBError, match=re.escape(f"pip install {package}")) as exc:
        SessionStore(url, app="shopping", spec_hash="s", world_hash="w")
    assert "\n" not in str(exc.value)


def _serve_fails(*args: str) -> str:
    res = subprocess.run([sys.executable, "-m", "simweb.cli", "serve", "shopping", "--port", "0",
                          "--control-token", TOKEN, *args], capture_output=True, text=True, timeout=60)
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert res.returncode == 2 and len(lines) == 1 and "Traceback" not in res.stderr, (res.returncode, res.stderr)
    assert lines[0].startswith("simweb: error: ")
    return lines[0]


@pytest.mark.parametrize("make,needle", UNUSABLE, ids=["damaged", "other-layout", "other-tables"])
def test_serve_refuses_an_unusable_session_database_in_one_line(tmp_path: Path, make, needle):
    db = make(tmp_path / "s.sqlite")
    assert needle in _serve_fails("--session-db", f"sqlite:///{db}")


@pytest.mark.parametrize("url,module", [("postgresql://u@db/simweb", "psycopg"), ("mysql://u@db/simweb", "MySQLdb")])
def test_serve_names_a_missing_database_driver_in_one_line(url, module):
    if importlib.util.find_spec(module) is not None:
        pytest.skip(f"{module} is installed here")
    line = _serve_fails("--session-db", url)
    assert "pip install" in line and module in line


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_serve_stops_cleanly_on_a_signal_even_started_as_a_background_job(tmp_path: Path, sig: int):
    """A shell starts a background job with SIGINT ignored, and Python keeps an inherited
    ignored SIGINT ignored: `simweb serve &` then `kill -INT` did nothing. SIGTERM's default
    skipped the cleanup. Both now end the server as Ctrl-C does, exit status 0."""
    port = _free_port()
    db = tmp_path / "s.sqlite"
    proc = subprocess.Popen([sys.executable, "-m", "simweb.cli", "serve", "shopping", "--port", str(port),
                             "--session-db", f"sqlite:///{db}", "--control-token", TOKEN],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    try:
        for _ in range(300):
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                time.sleep(0.1)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.request("GET", "/")
        assert conn.getresponse().status == 200
        conn.close()
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0 and "Traceback" not in err
    assert db.exists()


def test_stopping_a_server_running_in_a_thread_never_kills_its_loop_with_ebadf(monkeypatch):
    """stop_server closes the sockets on the server's loop thread. Closed from the caller's
    thread, a socket the loop had just put in its select list failed the select with EBADF
    and the loop thread died with that error (a few stops in a hundred)."""
    import threading

    from flask import Flask

    from simweb.serving.server import make_server, stop_server

    died: list[BaseException | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: died.append(args.exc_value))
    flask_app = Flask("tiny")
    flask_app.get("/")(lambda: "ok")
    for _ in range(150):
        server = make_server(flask_app, threads=2)
        port = server.effective_port
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        clients = [socket.create_connection(("127.0.0.1", port)) for _ in range(3)]
        for c in clients:   # keep-alive connections: open channels in the loop's map
            c.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            assert c.recv(4096).startswith(b"HTTP/1.1 200")
        stop_server(server, thread)
        thread.join(5)
        assert not thread.is_alive()
        assert not server._map   # every channel, the listener and the trigger are closed
        for c in clients:
            c.close()
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
    assert died == []
