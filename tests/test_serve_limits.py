"""Bounded cost for any input in served mode: body, state, list and depth limits answered
with a 4xx and one line; uniqueness checked in one pass; browser history capped; HEAD
changes nothing; a chunked body over the cap is a 413 through the real server."""
from __future__ import annotations

import copy
import http.client
import io
from typing import Any

import orjson
import pytest
from test_server import AUTH, TOKEN, state_of
from werkzeug.test import EnvironBuilder

import simweb
from simweb.core.limits import LimitError, Limits, check_shape, read_body
from simweb.core.state import MAX_STATE_DEPTH, StateError
from simweb.runtime.app import MAX_HISTORY
from simweb.serving.browser import ServedApp
from simweb.serving.server import SESSION_HEADER, create_app


@pytest.fixture(scope="module")
def server():
    return create_app("shopping", control_token=TOKEN)


@pytest.fixture
def client(server):
    c = server.test_client()
    c.get("/")
    return c


@pytest.fixture(scope="module")
def snapshot():
    env = simweb.make("shopping", seed=0)
    env.reset(seed=0, options={"task": None})
    env.state["browser"]["user"] = 1
    env.step("goto('/account')")
    return env.snapshot()


def one_line(resp, status: int) -> str:
    assert resp.status_code == status, (resp.status_code, resp.data[:200])
    text = resp.get_json()["error"] if resp.mimetype == "application/json" else resp.text.strip()
    assert text and "\n" not in text and "Traceback" not in text
    return text


def restore(client, state) -> Any:   # the test client's response
    body = state if isinstance(state, bytes) else orjson.dumps(state)
    return client.post("/_simweb/state", headers=AUTH, data=body, content_type="application/json")


def nested(depth: int) -> dict:
    value: dict = {}
    for _ in range(depth - 1):
        value = {"x": value}
    return value


# ============================================================================= restore limits

@pytest.mark.parametrize("depth", [60, 300, 990, 5000])
def test_deeply_nested_states_are_refused_and_later_reads_work(client, snapshot, depth):
    s = copy.deepcopy(snapshot)
    s["runtime"]["prefs"] = nested(depth)
    try:
        body = orjson.dumps(s)
    except orjson.JSONEncodeError:    # deeper than the encoder goes: send it as text
        body = orjson.dumps(snapshot).replace(b'"prefs":{}', b'"prefs":' + b'{"x":' * (depth - 1) + b"{}"
                                              + b"}" * (depth - 1), 1)
    before = state_of(client)
    message = one_line(restore(client, body), 400)
    assert "deeper than" in message or "not valid JSON" in message
    assert state_of(client) == before


def test_a_state_nested_within_the_engine_limit_is_still_bounded_by_the_server(snapshot):
    assert Limits().max_depth < MAX_STATE_DEPTH
    check_shape(nested(Limits().max_depth))
    with pytest.raises(LimitError, match="deeper than"):
        check_shape(nested(Limits().max_depth + 1))


def test_the_engine_refuses_states_deeper_than_its_limit(snapshot):
    env = simweb.make("shopping", seed=0)
    s = copy.deepcopy(snapshot)
    s["runtime"]["prefs"] = nested(MAX_STATE_DEPTH + 5)
    with pytest.raises(StateError, match="deeper than"):
        env.restore(s)


def test_a_long_list_is_refused_with_one_line(client, snapshot):
    s = copy.deepcopy(snapshot)
    s["runtime"]["wishlists"]["1"] = list(range(Limits().max_items + 1))
    assert "over the limit of" in one_line(restore(client, s), 400)


def test_a_big_state_is_refused_before_it_is_parsed():
    small = create_app("shopping", control_token=TOKEN, limits=Limits(max_state=50_000, max_body=60_000))
    c = small.test_client()
    c.get("/")
    body = b'{"pad": "' + b"x" * 55_000 + b'"}'
    assert "over the limit" in one_line(restore(c, body), 413)
    body = b"x" * 70_000
    assert "over the limit" in one_line(restore(c, body), 413)


def test_many_distinct_objects_in_a_unique_list_are_refused_in_one_pass(client, snapshot):
    s = copy.deepcopy(snapshot)
    s["runtime"]["wishlists"]["1"] = [{"id": i} for i in range(8000)]
    assert "is not of type 'integer'" in one_line(restore(client, s), 400)
    s["runtime"]["wishlists"]["1"] = list(range(8000)) + [17]
    assert "non-unique elements (item 8000 repeats an earlier one)" in one_line(restore(client, s), 400)


@pytest.mark.parametrize("items,unique", [
    ([1, 2, 3], True), ([1, 2, 1], False), ([1, 1.0], False), ([True, 1], True), ([0, False], True),
    ([{"a": 1, "b": 2}, {"b": 2, "a": 1}], False), ([{"a": [1, 2]}, {"a": [2, 1]}], True),
    (["1", 1], True), ([None, None], False), ([[1, {"x": None}], [1, {"x": None}]], False)])
def test_unique_items_follows_json_schema_equality(items, unique):
    from simweb.core.state import _Validator

    errors = list(_Validator({"type": "array", "uniqueItems": True}).iter_errors(items))
    assert (not errors) is unique


# ============================================================================= request limits

def test_a_form_body_over_the_cap_is_a_413():
    small = create_app("shopping", control_token=TOKEN, limits=Limits(max_body=10_000))
    c = small.test_client()
    c.get("/")
    before = state_of(c)
    r = c.post("/search", data={"q": "x" * 20_000})
    assert "over the limit" in one_line(r, 413)
    assert state_of(c) == before


def test_a_chunked_body_over_the_cap_is_a_413_not_a_truncated_body():
    stream = io.BytesIO(b"y" * 5000)
    with pytest.raises(LimitError) as exc:
        read_body(stream, None, 4096)
    assert exc.value.status == 413
    assert read_body(io.BytesIO(b"z" * 4096), None, 4096) == b"z" * 4096
    with pytest.raises(LimitError):
        read_body(io.BytesIO(b""), 10_000, 4096)   # a declared length over the cap: not even read


def _chunked(port: int, path: str, payload: bytes, headers: dict) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.putrequest("POST", path)
    for k, v in headers.items():
        conn.putheader(k, v)
    conn.putheader("Transfer-Encoding", "chunked")
    conn.endheaders()
    for i in range(0, len(payload), 8192):
        piece = payload[i:i + 8192]
        conn.send(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
    conn.send(b"0\r\n\r\n")
    r = conn.getresponse()
    out = (r.status, r.read())
    conn.close()
    return out


def _chunk_to_the_cap(port: int, cap: int) -> tuple[int, bytes]:
    n = cap
    while True:
        head = f"{n:x}\r\n".encode()
        if len(head) + n + 2 == cap:
            break
        n = cap - len(head) - 2
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.putrequest("POST", "/_simweb/state")
    for k, v in {"Content-Type": "application/json", "Transfer-Encoding": "chunked", **AUTH}.items():
        conn.putheader(k, v)
    conn.endheaders()
    conn.send(head + b"x" * n + b"\r\n")
    r = conn.getresponse()
    out = (r.status, r.read())
    conn.close()
    return out


def test_a_chunked_restore_over_the_cap_is_a_413_through_the_real_server(snapshot):
    with ServedApp("shopping", control_token=TOKEN, limits=Limits(max_body=100_000, max_state=90_000)) as served:
        ok = orjson.dumps(snapshot)
        status, body = _chunked(served.port, "/_simweb/state", ok,
                                {"Content-Type": "application/json", **AUTH})
        assert status == 200, body
        # Over the body cap: the server refuses it before the app sees it. The chunk is
        # sized so the cap is reached on its last byte (nothing is left unread, so the
        # server's close cannot reset the connection before the answer is read).
        status, body = _chunk_to_the_cap(served.port, 100_000)
        assert status == 413, body
        # Within the body cap but over the state cap: the app refuses it, whole.
        over_state = orjson.dumps({**snapshot, "pad": "x" * 92_000})
        status, body = _chunked(served.port, "/_simweb/state", over_state,
                                {"Content-Type": "application/json", **AUTH})
        assert status == 413 and b"over the limit" in body, body


def test_a_url_over_the_limit_is_a_414(client):
    before = state_of(client)
    r = client.get("/search?q=" + "x" * 9000)
    assert "over the limit" in one_line(r, 414)
    assert state_of(client) == before


def test_a_request_that_would_grow_the_state_over_the_cap_is_refused_and_undone(snapshot):
    size = len(orjson.dumps(snapshot))
    tight = create_app("shopping", control_token=TOKEN, limits=Limits(max_state=size + 2000))
    c = tight.test_client()
    assert restore(c, snapshot).status_code == 200
    before = state_of(c)
    r = c.get("/search?q=" + "y" * 3000)
    assert "over the limit" in one_line(r, 413)
    assert state_of(c) == before
    assert c.get("/account").status_code == 200        # the session carries on


# ============================================================================= history and HEAD

def test_history_is_capped_as_browsers_cap_it(client):
    for i in range(300):
        assert client.get(f"/search?q=item{i}").status_code == 200
    tab = state_of(client)["browser"]["tabs"][0]
    assert len(tab["history"]) == MAX_HISTORY == 50
    assert tab["history"][-1] == "/search?q=item299" and tab["history"][0] == "/search?q=item250"
    assert tab["cursor"] == MAX_HISTORY - 1


def test_in_process_history_is_capped_too():
    env = simweb.make("shopping", seed=0, max_steps=1000)   # past the 50-step budget of a task-less episode
    env.reset(seed=0, options={"task": None})
    for i in range(60):
        env.step(f"goto('/search?q=a{i}')")
    assert len(env.state["browser"]["tabs"][0]["history"]) == MAX_HISTORY
    env.step("go_back()")
    assert env.state["browser"]["tabs"][0]["url"] == "/search?q=a58"


def test_head_never_changes_a_state_nor_makes_a_session(server, client):
    store = server.extensions["simweb"].sessions
    before = state_of(client)
    for path in ("/", "/search?q=shoe", "/cart", "/p/1", "/no/such/page"):
        r = client.head(path)
        assert r.status_code in (200, 303, 404) and r.data == b""
    assert state_of(client) == before
    n = store.count()
    r = server.test_client().head("/")
    assert r.status_code == 200 and "Set-Cookie" not in r.headers and r.headers[SESSION_HEADER] == "none"
    assert store.count() == n


def test_unsupported_methods_are_one_line_4xx(client):
    r = client.put("/cart", data=b"x")
    one_line(r, 405)
    r = client.delete("/_simweb/state", headers=AUTH)
    one_line(r, 405)


def test_every_response_says_nosniff_and_its_session_status(server, client):
    """A text/plain 400 echoes what it refuses (a task id with a script in it): no browser
    may sniff it into HTML. Every response the app makes says so."""
    other = server.test_client()
    other.set_cookie("simweb_session", "a-cookie-this-server-never-made")
    responses = {
        "page": client.get("/"), "404": client.get("/no/such/page"), "redirect": client.get("/account"),
        "state": client.get("/_simweb/state"), "401": client.post("/_simweb/reset", json={}),
        "start 400": client.get("/_simweb/start?task=%3Cscript%3Ealert(1)%3C/script%3E"),
        "static": client.get("/static/shop.css"), "favicon": client.get("/favicon.ico"),
        "410": other.get("/"), "405 method": client.put("/cart", data=b"x"), "414": client.get("/?" + "q" * 9000),
        "head": client.head("/"),
    }
    assert responses["start 400"].status_code == 400 and b"<script>" in responses["start 400"].data
    missing = {name: r.status_code for name, r in responses.items() if r.headers.get("X-Content-Type-Options") != "nosniff"}
    assert missing == {}
    # ... and, as documented, its session's status (none: no session was involved).
    unsaid = {name: r.status_code for name, r in responses.items()
              if r.headers.get(SESSION_HEADER) not in ("new", "live", "none", "unknown")}
    assert unsaid == {}
    assert responses["401"].headers[SESSION_HEADER] == responses["static"].headers[SESSION_HEADER] == "none"


def test_the_http_servers_own_error_responses_say_nosniff_too():
    import socket
    import threading

    from simweb.serving.server import make_server, stop_server

    server = make_server(create_app("shopping", control_token=TOKEN), threads=1)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        with socket.create_connection(("127.0.0.1", server.effective_port), timeout=10) as s:
            s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: <script>\r\n\r\n")   # waitress's 400
            reply = b""
            while b"\r\n\r\n" not in reply:
                chunk = s.recv(4096)
                if not chunk:
                    break
                reply += chunk
    finally:
        stop_server(server, thread)
    head = reply.split(b"\r\n\r\n", 1)[0].lower()
    assert head.startswith(b"http/1.1 400") and b"\r\nx-content-type-options: nosniff" in head


@pytest.mark.parametrize("start", [b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ",
                                   b"POST /search HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\nq="],
                         ids=["headers", "body"])
def test_a_request_trickled_in_is_cut_off_at_the_timeout(start):
    """One byte now and then kept a half-sent request open forever (waitress's idle timeout
    counts from the last byte); a request must now arrive whole within the timeout of its
    first byte. A request sent at once on the same server is answered."""
    import socket
    import threading
    import time

    from flask import Flask

    from simweb.serving.server import make_server, stop_server

    tiny = Flask("tiny")
    tiny.get("/")(lambda: "ok")
    server = make_server(tiny, threads=1, channel_timeout=1)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    port = server.effective_port
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(start)
        t0 = time.monotonic()
        closed = None
        while time.monotonic() - t0 < 4.5:
            time.sleep(0.2)
            try:
                s.sendall(b"a")
                s.setblocking(False)
                try:
                    if s.recv(4096) == b"":
                        closed = time.monotonic() - t0
                        break
                except BlockingIOError:
                    pass
                finally:
                    s.setblocking(True)
            except OSError:   # reset by the server
                closed = time.monotonic() - t0
                break
        s.close()
        assert closed is not None and closed < 4.5
        with socket.create_connection(("127.0.0.1", port), timeout=5) as ok:
            ok.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            assert ok.recv(4096).startswith(b"HTTP/1.1 200")
    finally:
        stop_server(server, thread)


def test_a_cookie_less_post_to_a_page_without_a_form_is_a_short_405_and_makes_no_session(server):
    store = server.extensions["simweb"].sessions
    n = store.count()
    for path in ("/", "/search?q=x", "/no/such/page"):
        r = server.test_client().post(path, data={"a": "b"})
        assert r.status_code == 405 and r.headers["Allow"] == "GET, HEAD"
        assert "Set-Cookie" not in r.headers and r.headers[SESSION_HEADER] == "none"
        assert "405 Method Not Allowed" in one_line(r, 405) and b"<html" not in r.data.lower()
    assert store.count() == n


def test_a_post_to_a_page_without_a_form_in_a_session_still_shows_its_page(client):
    """As the in-process browser does (it re-renders the tab): the served and in-process
    runs stay equal."""
    r = client.post("/", data={"a": "b"})
    assert r.status_code == 405 and r.headers["Allow"] == "GET, HEAD" and b"<html" in r.data.lower()
    assert r.headers[SESSION_HEADER] == "live"


def test_a_chunked_body_over_the_cap_reaching_the_app_is_a_413():
    # Servers that pass a chunked body on as a stream (no Content-Length) meet the same cap.
    small = create_app("shopping", control_token=TOKEN, limits=Limits(max_body=10_000))
    c = small.test_client()
    c.get("/")
    before = state_of(c)
    environ = EnvironBuilder(path="/search", method="POST", input_stream=io.BytesIO(b"q=" + b"x" * 20_000),
                             content_type="application/x-www-form-urlencoded",
                             headers=[("Transfer-Encoding", "chunked")],
                             environ_overrides={"wsgi.input_terminated": True}).get_environ()
    del environ["CONTENT_LENGTH"]
    r = c.open(environ)
    assert "body is over the limit of 10000 bytes" in one_line(r, 413)
    assert state_of(c) == before


def test_slow_clients_do_not_hold_the_worker_threads():
    import socket

    with ServedApp("shopping", control_token=TOKEN, threads=2) as served:
        assert served._server.adj.threads == 2 and served._server.adj.channel_timeout == 30
        stalled = []
        for _ in range(10):   # five times as many half-sent requests as there are threads
            s = socket.create_connection(("127.0.0.1", served.port), timeout=30)
            s.sendall(b"POST /search HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nq=")
            stalled.append(s)
        try:
            conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=30)
            conn.request("GET", "/")
            r = conn.getresponse()
            assert r.status == 200 and b"<title>" in r.read()
            conn.close()
        finally:
            for s in stalled:
                s.close()
