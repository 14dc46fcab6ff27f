"""Control endpoints the agent cannot use against the task, one redirect policy for every
app, and user URLs that cannot run script when rendered."""
from __future__ import annotations

import copy

import orjson
import pytest
from conftest import APPS
from test_serve_sessions import instead
from test_server import AUTH, TOKEN, state_of

import simweb
from simweb.core.urls import local_path, safe_href, safe_next
from simweb.serving.omnibox.start import start_url
from simweb.serving.server import REDACTED_HEADER, SESSION_HEADER, create_app


@pytest.fixture(scope="module")
def server():
    return create_app("shopping", control_token=TOKEN)


def info_task_with_answer(app) -> tuple[str, dict]:
    """An information task instance whose params hold its answer."""
    for tid in sorted(app.tasks):
        t = app.tasks[tid]
        if t.kind == "info":
            inst = t.instantiate(app, 0)
            if inst.params:
                return tid, inst.params
    pytest.fail("no information task with params")


# ============================================================================= token and Origin

def test_a_page_visitor_reads_a_redacted_state_without_the_task(server):
    app = server.extensions["simweb"].app
    tid, params = info_task_with_answer(app)
    c = server.test_client()
    assert c.post("/_simweb/reset", headers=AUTH, json={"task": tid, "seed": 0}).status_code == 200
    full = state_of(c)
    assert full["meta"]["task"] == {"id": tid, "params": params}
    r = c.get("/_simweb/state")        # what the agent's own browser can fetch
    assert r.status_code == 200 and r.headers[REDACTED_HEADER] == "meta.task, meta.rng"
    view = r.get_json()
    assert view["meta"]["task"] == "redacted" and view["meta"]["rng"] == "redacted"
    assert view["runtime"] == full["runtime"] and view["browser"] == full["browser"]
    assert b'"params"' not in r.data and tid.encode() not in r.data
    # The redacted view cannot be restored (nor passed off as a state).
    r = c.post("/_simweb/state", headers=AUTH, data=orjson.dumps(view), content_type="application/json")
    assert r.status_code == 400


def test_without_a_cookie_the_state_endpoint_shows_the_start_state_and_makes_no_session(server):
    store = server.extensions["simweb"].sessions
    n = store.count()
    r = server.test_client().get("/_simweb/state")
    assert r.status_code == 200 and r.headers[SESSION_HEADER] == "none" and "Set-Cookie" not in r.headers
    assert "runtime" in r.get_json()
    assert store.count() == n


@pytest.mark.parametrize("path,body", [("/_simweb/state", None), ("/_simweb/reset", {"seed": 0})])
@pytest.mark.parametrize("headers,status", [
    ({}, 401), ({"Authorization": "Bearer wrong-token-0123456789"}, 401), ({"Authorization": f"Basic {TOKEN}"}, 401),
    ({**AUTH, "Origin": "http://evil.example"}, 403), ({**AUTH, "Origin": "null"}, 403),
    ({**AUTH, "Sec-Fetch-Site": "cross-site"}, 403), ({**AUTH, "Sec-Fetch-Site": "same-site"}, 403)])
def test_writes_need_the_token_and_the_same_origin(server, path, body, headers, status):
    c = server.test_client()
    c.get("/")
    c.get("/search?q=jacket")
    before = state_of(c)
    data = orjson.dumps(body if body is not None else before)
    r = c.post(path, headers=headers, data=data, content_type="application/json")
    assert r.status_code == status
    assert r.mimetype == "application/json" and "\n" not in r.get_json()["error"]
    if status == 401:
        assert r.headers["WWW-Authenticate"].startswith("Bearer")
    assert state_of(c) == before


def test_a_text_plain_write_is_refused_even_with_the_token(server):
    c = server.test_client()
    c.get("/")
    before = state_of(c)
    r = c.post("/_simweb/reset", headers=AUTH, data=b'{"seed": 1}', content_type="text/plain")
    assert r.status_code == 415
    assert state_of(c) == before


def test_a_same_origin_write_with_the_token_is_accepted(server):
    c = server.test_client()
    r = c.post("/_simweb/reset", headers={**AUTH, "Origin": "http://localhost", "Sec-Fetch-Site": "same-origin"},
               json={"seed": 0})
    assert r.status_code == 200


def test_a_wrong_token_cannot_read_either(server):
    c = server.test_client()
    c.get("/")
    r = c.get("/_simweb/state", headers={"Authorization": "Bearer not-the-token-at-all"})
    assert r.status_code == 401


@pytest.mark.parametrize("token", ["\xe9", f"{TOKEN}\xe9", "\u00ff" * len(TOKEN)], ids=["e-acute", "suffix", "same-length"])
@pytest.mark.parametrize("method,path", [("GET", "/_simweb/state"), ("POST", "/_simweb/reset")])
def test_a_non_ascii_token_is_a_wrong_token_not_a_500(server, token, method, path):
    c = server.test_client()
    c.get("/")
    before = state_of(c)
    r = c.open(path, method=method, headers={"Authorization": f"Bearer {token}"}, json={"seed": 1})
    assert r.status_code == 401 and r.headers["WWW-Authenticate"].startswith("Bearer")
    assert "control token is required" in r.get_json()["error"]
    assert state_of(c) == before


def test_control_can_be_switched_off():
    off = create_app("shopping", control=False)
    assert off.extensions["simweb"].control_token is None
    c = off.test_client()
    assert c.get("/").status_code == 200
    for method, path in (("GET", "/_simweb/state"), ("POST", "/_simweb/state"), ("POST", "/_simweb/reset")):
        r = c.open(path, method=method, json={})
        assert r.status_code == 404 and "switched off" in r.get_json()["error"]
    # The start URL resets a session and signs its visitor in: off as well, and no session made.
    store = off.extensions["simweb"].sessions
    n = store.count()
    for method in ("GET", "HEAD"):
        r = off.test_client().open(start_url("shopping/buy_product", 3), method=method)
        assert r.status_code == 404 and "Set-Cookie" not in r.headers
    r = c.get(start_url("shopping/buy_product", 3))
    assert r.status_code == 404 and "switched off" in r.text and "Set-Cookie" not in r.headers
    assert store.count() == n


def test_head_on_the_start_url_changes_no_state_and_makes_no_session(server):
    store = server.extensions["simweb"].sessions
    c = server.test_client()
    c.get("/search?q=merino+sweater")
    before = state_of(c)
    r = c.head(start_url("shopping/buy_product", 7))
    assert r.status_code == 200 and r.data == b"" and r.mimetype == "text/html"
    assert "Set-Cookie" not in r.headers and r.headers[SESSION_HEADER] == "live"
    assert state_of(c) == before
    n = store.count()
    r = server.test_client().head(start_url("shopping/buy_product", 7))
    assert r.status_code == 200 and "Set-Cookie" not in r.headers and r.headers[SESSION_HEADER] == "none"
    assert server.test_client().head("/_simweb/start?task=nope").status_code == 400
    assert store.count() == n


def test_a_short_control_token_is_refused():
    with pytest.raises(ValueError, match="at least 16"):
        create_app("shopping", control_token="short")


@pytest.mark.parametrize("seed", [2**63, -2**63 - 1, 10**30])
def test_a_seed_outside_64_bits_is_refused_when_the_app_is_made(seed):
    with pytest.raises(ValueError, match="64-bit"):
        create_app("shopping", seed=seed)


def test_no_page_carries_the_token(server):
    c = server.test_client()
    for path in ("/", "/login", "/search?q=x", "/no/such/page"):
        assert TOKEN.encode() not in c.get(path).data


# ============================================================================= redirects

OFF_SITE = ["//evil.example/", "/\t/evil.example/", "/%09/evil.example/", "/\\evil.example", "/%5Cevil.example",
            "\\\\evil.example", "/%2F/evil.example", "/%252F%252Fevil.example", "https://evil.example/",
            "HTTPS://evil.example", "javascript:alert(1)", "evil.example", " /evil", "/\r\nX-Injected: 1",
            "/\x00/evil", "/\u3000/evil", "/\u2028/evil", "", None, 42]


@pytest.mark.parametrize("target", OFF_SITE)
def test_safe_next_refuses_every_off_site_form(target):
    assert local_path(target) is None
    assert safe_next(None, target) == "/"


@pytest.mark.parametrize("target", ["/", "/account/orders", "/search?q=red%20shoes&page=2", "/p/12#reviews",
                                    "/login?next=/cart", "/a%2Fb", "/%0d%0aX:1"])
def test_safe_next_keeps_local_paths(target):
    assert safe_next(None, target) == target


def _login_form(app, user: dict, nxt: str) -> dict:
    event = next(e for e in app.spec.events.values() if e.route == "/login")
    form = {}
    for name in event.params:
        if name in ("login", "username"):
            form[name] = user["username"]
        elif name == "password":
            form[name] = user["password"]
        elif name == "next":
            form[name] = nxt
    return form


@pytest.fixture(scope="module")
def served_apps():
    return {a: create_app(a, control_token=TOKEN) for a in APPS}


@pytest.mark.parametrize("app_name", APPS)
@pytest.mark.parametrize("nxt", ["/\t/evil.example/", "//evil.example", "/\\evil.example", "https://evil.example",
                                 "/%2F/evil.example", "/\r\nX:1", "javascript:alert(1)"])
def test_every_app_signs_in_without_leaving_the_site(served_apps, app_name, nxt):
    server = served_apps[app_name]
    app = server.extensions["simweb"].app
    c = server.test_client()
    assert c.get("/login?next=" + nxt.replace("\t", "%09").replace("\r", "%0d").replace("\n", "%0a")).status_code == 200
    r = c.post("/login", data=_login_form(app, app.world.user(1), nxt))
    assert r.status_code == 303 and r.headers["Location"] == "/", r.headers.get("Location")
    assert state_of(c)["browser"]["user"] == 1


@pytest.mark.parametrize("app_name", APPS)
@pytest.mark.parametrize("query", ["next=/%09/evil.example/", "next=/%0d%0aX:1", "next=%2F%2Fevil.example",
                                   "next=/%5Cevil"])
def test_login_page_with_a_hostile_next_is_never_a_500(served_apps, app_name, query):
    c = served_apps[app_name].test_client()
    r = c.get("/login?" + query)
    assert r.status_code < 500
    assert b"X:1\r\n" not in r.data and "X" not in {k for k, _ in r.headers}


def test_the_apps_share_the_engine_safe_next():
    for name in APPS:
        env = simweb.make(name, seed=0)
        assert env.app.function_table.functions.get("safe_next") is None      # no app copy
        assert "safe_next" in env.app.callables


@pytest.mark.parametrize("app_name", APPS)
def test_a_redirect_off_the_site_is_refused_by_the_server(served_apps, app_name):
    server = served_apps[app_name]
    app = server.extensions["simweb"].app
    c = server.test_client()
    c.get("/")
    real = app.navigate

    def hostile(state, url, **kw):
        resp = real(state, url, **kw)
        resp.location = "/\t/evil.example/"
        return resp

    with instead(app, "navigate", hostile):
        r = c.get("/")
    assert r.status_code == 400 and "refused a redirect off this site" in r.text
    assert "Location" not in r.headers


# ============================================================================= user URLs

@pytest.mark.parametrize("url,href", [
    ("javascript:alert(1)", "#"), ("JavaScript:alert(1)", "#"), (" javascript:alert(1)", "#"),
    ("java\tscript:alert(1)", "#"), ("data:text/html,<script>", "#"), ("vbscript:x", "#"), ("//evil.example", "#"),
    ("https://ok.example/a?b=1", "https://ok.example/a?b=1"), ("http://ok.example", "http://ok.example"),
    ("/p/3", "/p/3"), ("mailto:a@b.example", "mailto:a@b.example"), ("", "#"), (None, "#")])
def test_safe_href(url, href):
    assert safe_href(url) == href


@pytest.mark.skipif("forum" not in APPS, reason="the forum app is not selected (SIMWEB_TEST_APPS)")
def test_a_restored_link_post_never_renders_a_script_href():
    server = create_app("forum", control_token=TOKEN)
    app = server.extensions["simweb"].app
    post = next(app.world.post(i) for i in range(1, 500) if app.world.post(i) and app.world.post(i)["kind"] == "link")
    c = server.test_client()
    c.get("/")
    s = state_of(c)
    evil = copy.deepcopy(post)
    evil["url"] = "javascript:alert(document.cookie)"
    s["runtime"]["entities"]["posts"] = {str(post["id"]): evil}
    r = c.post("/_simweb/state", headers=AUTH, data=orjson.dumps(s), content_type="application/json")
    assert r.status_code == 200, r.data
    page = c.get(f"/p/{post['id']}").text
    assert 'bid="post-url" href="#"' in page and 'href="javascript:' not in page
    # The text is still shown (escaped), so a person sees what was posted.
    assert "javascript:alert(document.cookie)" in page
    # The world's own link keeps its href.
    other = server.test_client()
    assert f'bid="post-url" href="{post["url"]}"' in other.get(f"/p/{post['id']}").text


@pytest.mark.parametrize("app_name", APPS)
def test_a_redirect_with_non_ascii_is_percent_encoded_not_a_500(served_apps, app_name):
    server = served_apps[app_name]
    app = server.extensions["simweb"].app
    c = server.test_client()
    c.get("/")
    real = app.navigate

    def unicode_redirect(state, url, **kw):
        resp = real(state, url, **kw)
        resp.location = "/login?next=/s\u00f6k/\u4e2d"
        return resp

    with instead(app, "navigate", unicode_redirect):
        r = c.get("/")
    assert r.status_code == 303 and r.headers["Location"] == "/login?next=/s%C3%B6k/%E4%B8%AD"
