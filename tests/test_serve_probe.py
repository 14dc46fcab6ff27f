"""Served mode under a hostile client and an operator who breaks things: the URL a
request names is the one the in-process browser would be given (percent-escapes kept),
a session database that cannot be written never leaves a state in memory that the
database does not hold, a database the server could never write to is refused at start,
and two servers never share one database's sessions."""
from __future__ import annotations

import os
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlalchemy.exc import OperationalError
from test_server import AUTH, TOKEN, state_of

from simweb.core.state import deep_copy
from simweb.serving.server import COOKIE, SESSION_HEADER, create_app
from simweb.serving.sessions import SessionDBError, SessionStore


@pytest.fixture(scope="module")
def server():
    return create_app("shopping", control_token=TOKEN)


def _tab_url(client) -> str:
    state = state_of(client)
    return state["browser"]["tabs"][state["browser"]["active"]]["url"]


# ============================================================================= the URL as sent

@pytest.mark.parametrize("url", ["/search%3Fq%3Djacket", "/p/%31", "/search%23frag", "/%7Eabc", "/p/1%2F..",
                                 "/search?q=%C3%A9t%C3%A9", "/search?q=a%23b"])
def test_a_served_request_names_the_url_as_sent_as_the_in_process_browser_sees_it(server, url):
    """The path was percent-decoded before the app saw it: '/search%3Fq%3Djacket' (a path
    with an escaped '?') showed the results of a search for 'jacket', '/p/%31' product 1;
    the in-process browser, given the same URL, answers 404 for both."""
    sim = server.extensions["simweb"].app
    start = server.extensions["simweb"].fresh_state()
    mine = deep_copy(start)
    expected = sim.navigate(mine, url, follow=False)
    browser = server.test_client()
    r = browser.get(url)
    assert r.status_code == expected.status
    assert _tab_url(browser) == mine["browser"]["tabs"][0]["url"] == url


def test_raw_non_ascii_in_a_request_target_is_percent_encoded_not_mojibake(server):
    """A client that sends raw UTF-8 (curl, not a browser) gets the URL a browser would
    have sent: 'café' is '%C3%A9', not 'Ã©'."""
    browser = server.test_client()
    assert browser.get("/search?q=caf\u00e9").status_code == 200
    assert _tab_url(browser) == "/search?q=caf%C3%A9"
    assert "caf\u00e9".encode() in browser.get("/search?q=caf%C3%A9").data


def test_a_cookie_less_post_to_an_escaped_event_path_is_a_405_as_in_process(server):
    """'/logi%6E' is not the sign-in route for the in-process browser: no form posts there."""
    r = server.test_client().post("/logi%6E", data={"login": "x", "password": "y"})
    assert r.status_code == 405 and r.headers[SESSION_HEADER] == "none"


def test_the_target_of_a_proxy_request_or_a_rewritten_path_is_read_safely():
    from simweb.serving.server import request_target

    # The absolute form (a proxy request): its path and query.
    assert request_target({"REQUEST_URI": "http://evil.example/p/%31?x=1", "PATH_INFO": "/p/1",
                           "QUERY_STRING": "x=1"}) == ("/p/%31", "x=1")
    # A target that does not decode to PATH_INFO (middleware rewrote it): PATH_INFO, encoded.
    assert request_target({"REQUEST_URI": "/other", "PATH_INFO": "/a b", "QUERY_STRING": ""}) == ("/a%20b", "")
    # No REQUEST_URI at all (another WSGI server).
    assert request_target({"PATH_INFO": "/caf\u00c3\u00a9", "QUERY_STRING": "q=\u00c3\u00a9"}) == \
        ("/caf%C3%A9", "q=%C3%A9")


# ============================================================================= a database that fails

def _disk_full(*_args, **_kwargs):
    raise OperationalError("UPDATE simweb_sessions", {}, Exception("database or disk is full"))


@contextmanager
def _full_disk_writes():
    """SessionStore._writing on a full disk: every write fails (reads still work)."""
    _disk_full()
    yield


@pytest.mark.parametrize("method,url,data", [("GET", "/search?q=shoes", None),
                                             ("POST", "/cart/add", {"product_id": "1", "quantity": "1"})])
def test_a_write_the_database_refuses_leaves_the_session_at_its_last_committed_state(method, url, data):
    """The request changed the cached state in place, then the write failed (disk full, a
    locked or read-only file): the client got a 500 yet the next request saw the state it
    was told had failed, and a restart lost it again. Now: a 503 with one line, and the
    session is where the database has it."""
    flask_app = create_app("shopping", control_token=TOKEN)
    store = flask_app.extensions["simweb"].sessions
    browser = flask_app.test_client()
    browser.get("/")
    browser.get("/search?q=jacket")
    before = state_of(browser)
    store._writing = _full_disk_writes
    try:
        r = browser.open(url, method=method, data=data)
    finally:
        del store._writing
    assert r.status_code == 503
    assert r.mimetype == "text/plain" and r.text.count("\n") == 1 and "session database" in r.text
    assert state_of(browser) == before


def test_a_control_write_the_database_refuses_is_a_503_in_json():
    flask_app = create_app("shopping", control_token=TOKEN)
    store = flask_app.extensions["simweb"].sessions
    browser = flask_app.test_client()
    browser.get("/")
    before = state_of(browser)
    store._writing = _full_disk_writes
    r = browser.post("/_simweb/reset", json={"task": None, "seed": 3}, headers=AUTH)
    assert r.status_code == 503 and "session database" in r.get_json()["error"]
    del store._writing
    assert state_of(browser) == before


def test_a_new_session_the_database_cannot_store_is_a_503_and_no_cookie():
    flask_app = create_app("shopping", control_token=TOKEN)
    store = flask_app.extensions["simweb"].sessions
    store._writing = _full_disk_writes
    r = flask_app.test_client().get("/")
    assert r.status_code == 503 and "set-cookie" not in r.headers


def test_a_read_only_session_database_is_refused_at_start_and_left_as_it_was(tmp_path: Path):
    """A database the server can read but never write (a read-only file or mount) was
    accepted, and every request then failed with 'internal error: OperationalError'."""
    db = tmp_path / "s.sqlite"
    store = SessionStore(f"sqlite:///{db}", app="shopping", spec_hash="s", world_hash="w")
    store.create({"n": 1}, established=True)
    store.dispose()
    before = db.read_bytes()
    with pytest.raises(SessionDBError, match="cannot be written") as exc:
        SessionStore(f"sqlite:///file:{db}?mode=ro&uri=true", app="shopping", spec_hash="s", world_hash="w")
    assert "\n" not in str(exc.value)
    assert db.read_bytes() == before


def test_serve_refuses_a_read_only_session_database_in_one_line(tmp_path: Path):
    from test_serve_sessions import _serve_fails

    db = tmp_path / "s.sqlite"
    SessionStore(f"sqlite:///{db}", app="shopping", spec_hash="s", world_hash="w").dispose()
    assert "cannot be written" in _serve_fails("--session-db", f"sqlite:///file:{db}?mode=ro&uri=true")


# ============================================================================= one server per database

def test_a_second_store_of_the_same_app_on_one_database_is_refused(tmp_path: Path):
    """Two servers on one database each cache sessions in memory: a request on one was
    never seen by the other, which then served (and wrote back) its stale copy. The second
    is refused; another app may share the file; once the first is gone, a new one starts."""
    url = f"sqlite:///{tmp_path / 's.sqlite'}"
    first = SessionStore(url, app="shopping", spec_hash="s", world_hash="w")
    with pytest.raises(SessionDBError, match="in use by another simweb server") as exc:
        SessionStore(url, app="shopping", spec_hash="s", world_hash="w")
    assert "\n" not in str(exc.value) and str(os.getpid()) in str(exc.value)
    SessionStore(url, app="forum", spec_hash="s", world_hash="w").dispose()   # apps may share a file
    first.dispose()
    SessionStore(url, app="shopping", spec_hash="s", world_hash="w").dispose()


def test_the_same_database_named_two_ways_is_one_database(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    first = SessionStore(f"sqlite:///{tmp_path / 's.sqlite'}", app="shopping", spec_hash="s", world_hash="w")
    try:
        with pytest.raises(SessionDBError, match="in use"):
            SessionStore("sqlite:///s.sqlite", app="shopping", spec_hash="s", world_hash="w")
        with pytest.raises(SessionDBError, match="in use"):
            SessionStore(f"sqlite:///file:{tmp_path / 's.sqlite'}?uri=true", app="shopping", spec_hash="s",
                         world_hash="w")
    finally:
        first.dispose()


def test_serve_refuses_a_session_database_another_server_holds(tmp_path: Path):
    from test_serve_sessions import _free_port, _serve_fails, _start

    db = f"sqlite:///{tmp_path / 's.sqlite'}"
    proc = _start(db, _free_port())
    try:
        line = _serve_fails("--session-db", db)
        assert "in use by another simweb server" in line and str(proc.pid) in line
    finally:
        proc.terminate()
        proc.wait(10)


def test_a_server_killed_with_kill_9_does_not_hold_its_database(tmp_path: Path):
    """The hold is an OS lock: it ends with the process, however it ends."""
    db = tmp_path / "s.sqlite"
    code = (f"from simweb.sessions import SessionStore; import os; "
            f"SessionStore('sqlite:///{db}', app='shopping', spec_hash='s', world_hash='w'); "
            f"print('held', flush=True); os.kill(os.getpid(), 9)")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "held" in res.stdout and res.returncode == -9
    SessionStore(f"sqlite:///{db}", app="shopping", spec_hash="s", world_hash="w").dispose()


@pytest.mark.parametrize("url", ["sqlite://", "sqlite:///", "sqlite:///:memory:",
                                 "sqlite:///file:mem1?mode=memory&uri=true"])
def test_every_spelling_of_an_in_memory_session_database_works(url):
    """`sqlite:///` (no file: SQLAlchemy's in-memory database) was a TypeError traceback from
    `simweb serve --session-db sqlite:///` (a file's pool options on a memory database)."""
    store = SessionStore(url, app="shopping", spec_hash="s", world_hash="w")
    try:
        sid = store.create({"n": 1}, established=True)
        store.forget(sid)
        assert store.load(sid).state == {"n": 1}
        assert store._hold is None   # no file, so no lock file beside one
    finally:
        store.dispose()


# ============================================================================= 64-bit seeds on the start URL

@pytest.mark.parametrize("seed", [2**63 - 1, -2**63, 4611686018427387904, 1234567890123456789])
def test_the_start_url_takes_every_64_bit_seed_as_reset_does(server, seed):
    """The start route read at most 18 digits, so a 19-digit seed (any seed of
    random.getrandbits(63) from 10**18 up: most of them) was a 400 'seed must be an
    integer', though /_simweb/reset, `simweb serve --seed` and env.reset take it."""
    from simweb.serving.omnibox.start import episode_of, start_url

    url = start_url(None, seed)
    browser = server.test_client()
    r = browser.get(url)
    assert r.status_code in (200, 303), r.text
    by_url = state_of(browser)
    control = server.test_client()
    assert control.post("/_simweb/reset", json={"seed": seed}, headers=AUTH).status_code == 200
    assert by_url["meta"]["rng"] == state_of(control)["meta"]["rng"]
    assert episode_of(url) == (None, seed)


@pytest.mark.parametrize("text", [str(2**63), str(-2**63 - 1), "9" * 25, "9" * 5000])
def test_a_start_url_seed_past_64_bits_is_a_400_in_one_line(server, text):
    from simweb.serving.omnibox.start import episode_of

    r = server.test_client().get(f"/_simweb/start?seed={text}")
    assert r.status_code == 400 and r.text.count("\n") == 1 and "64-bit" in r.text
    assert len(r.text) < 200
    assert episode_of(f"/_simweb/start?seed={text}") is None


@pytest.mark.parametrize("text", [str(2**63), "9" * 5000])
def test_omnibox_start_refuses_a_seed_past_64_bits_with_its_4xx(text):
    """`POST /simweb/start?seed=` took any number of digits: past 4,300 `int` raised (a bare
    500), and a seed past 64 bits bound the lease to an episode the app's start URL refuses."""
    import time as _time

    from simweb.serving.omnibox.pool import Lease
    from simweb.serving.omnibox.server import OmniboxServer

    server = OmniboxServer(["shopping"], port=0, browsers=1)   # not started: no browser needed
    inst = server.pool.instances[0]
    server.pool._leases[inst.port] = Lease(inst, inst.instance_id, _time.monotonic() + 60)
    r = server.flask_app.test_client().post(
        "/simweb/start", query_string={"instance_id": inst.instance_id, "node": server.node,
                                       "task": "shopping/buy_product", "seed": text},
        headers={"x-api-key": server.api_key})
    assert r.status_code == 422 and r.get_json()["status"] == "error"
    assert "64-bit" in r.get_json()["message"] and len(r.get_json()["message"]) < 200
    assert inst.episode is None


# ============================================================================= a state the server itself would refuse

def test_a_request_that_would_grow_a_list_past_the_item_limit_is_refused_and_changes_nothing():
    """Only the state's size was checked after a request: votes on more posts than
    `max_items` made a state the server itself refuses. Its export could not be posted
    back (400), and once the session left the memory cache (a restart) it was unreadable,
    answered 410 `incompatible` for good."""
    import simweb
    from simweb.core.limits import Limits

    env = simweb.make("forum", seed=0).unwrapped
    start = next(s for t in sorted(env.app.tasks)
                 if (env.reset(seed=0, options={"task": t}) and (s := env.snapshot())["browser"].get("user")))
    flask_app = create_app("forum", control_token=TOKEN, limits=Limits(max_items=60))
    browser = flask_app.test_client()
    assert browser.post("/_simweb/state", json=start, headers=AUTH).status_code == 200
    refused = []
    for pid in range(1, 80):
        browser.get(f"/p/{pid}")
        before = state_of(browser)
        r = browser.post(f"/p/{pid}/vote", data={"dir": "up"})
        if r.status_code == 413:
            assert r.text.count("\n") == 1 and "limit of 60" in r.text
            assert state_of(browser) == before          # nothing of the request was kept
            refused.append(pid)
        else:
            assert r.status_code == 303
    assert refused and refused == list(range(refused[0], 80))
    state = state_of(browser)
    assert browser.post("/_simweb/state", json=state, headers=AUTH).status_code == 200   # it posts back
    jar = browser.get_cookie(COOKIE)
    assert jar is not None
    flask_app.extensions["simweb"].sessions.forget(jar.value)     # as after a restart
    r = browser.get("/")
    assert r.status_code == 200 and r.headers[SESSION_HEADER] == "live"
