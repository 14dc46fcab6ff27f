"""Simshop served by Flask (``simweb.server.create_app``), as a browser sees it.

Each Flask test client is one browser (one cookie, one simulated session). The tests
check the HTTP contract (post/redirect/get, status codes, cookies), session isolation,
the ``/_simweb`` state and reset endpoints, and that a served run and an in-process run
of the same actions end in the same state.

"""
from __future__ import annotations

import copy
import html as html_lib
import re

import orjson
import pytest

import simweb
from simweb.runtime.app import App
from simweb.serving.server import COOKIE, create_app

#: The control token of the test servers (harnesses send it; page visitors cannot).
TOKEN = "test-control-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


# ----------------------------------------------------------------------------- fixtures

@pytest.fixture(scope="module")
def env():
    return simweb.make("shopping", seed=0)


@pytest.fixture(scope="module")
def server(env):
    flask_app = create_app("shopping", control_token=TOKEN)
    # The served app and the env share one App (one world, one spec).
    assert flask_app.extensions["simweb"].app is env.app
    return flask_app


@pytest.fixture
def browser(server):
    return server.test_client()


@pytest.fixture(scope="module")
def world(env):
    return env.app.world


@pytest.fixture(scope="module")
def product(world):
    """An in-stock product without options (one click adds it)."""
    for pid in range(1, world.max_id("products") + 1):
        p = world.product(pid)
        if p and p["stock"] >= 5 and not p["options"].get("size") and not p["options"].get("color"):
            return p
    pytest.fail("no plain in-stock product")


@pytest.fixture(scope="module")
def sized(world):
    """An in-stock product that needs a size."""
    for pid in range(1, world.max_id("products") + 1):
        p = world.product(pid)
        if p and p["stock"] >= 5 and p["options"].get("size"):
            return p
    pytest.fail("no sized product")


def state_of(client) -> dict:
    r = client.get("/_simweb/state", headers=AUTH)
    assert r.status_code == 200 and r.mimetype == "application/json"
    return r.get_json()


def flash(html: str) -> tuple[str, str] | None:
    m = re.search(r'<div class="flash (\w+)" role="(\w+)">(.*?)</div>', html, re.S)
    return (m.group(1), html_lib.unescape(m.group(3)).strip()) if m else None


def sign_in(client, user: dict) -> None:
    assert client.get("/login").status_code == 200
    r = client.post("/login", data={"login": user["username"], "password": user["password"], "next": "/"})
    assert r.status_code == 303 and r.headers["Location"] == "/"
    r = client.get("/")
    assert flash(r.text) == ("success", f"Welcome back, {user['full_name']}!")


def add_to_cart(client, p: dict, qty: int = 1, **options) -> None:
    assert client.get(f"/p/{p['id']}").status_code == 200
    r = client.post("/cart/add", data={"product_id": str(p["id"]), "qty": str(qty), **options})
    assert r.status_code == 303 and r.headers["Location"] == "/cart"
    r = client.get("/cart")
    assert flash(r.text) == ("success", f"Added {qty} × {p['name']} to your cart.")


def assert_one_line_json_error(resp) -> str:
    assert resp.status_code == 400
    assert resp.mimetype == "application/json"
    body = orjson.loads(resp.data)
    assert set(body) == {"error"} and isinstance(body["error"], str) and body["error"]
    assert b"\n" not in resp.data.strip() and "\n" not in body["error"]
    return body["error"]


# ============================================================================= pages and sessions

def test_home_page_and_a_session_cookie_per_browser(server):
    a, b = server.test_client(), server.test_client()
    r = a.get("/")
    assert r.status_code == 200 and r.mimetype == "text/html"
    assert "<title>Simshop — Online shopping</title>" in r.text and 'bid="home-title"' in r.text
    assert r.headers["Cache-Control"] == "no-store"
    cookie = r.headers["Set-Cookie"]
    assert cookie.startswith(f"{COOKIE}=") and "HttpOnly" in cookie and "SameSite=Lax" in cookie
    b.get("/")
    sid_a, sid_b = a.get_cookie(COOKIE).value, b.get_cookie(COOKIE).value
    assert sid_a != sid_b and len(sid_a) >= 24
    a.get("/search?q=jacket")
    assert a.get_cookie(COOKIE).value == sid_a       # the session sticks
    assert state_of(a)["browser"]["tabs"][0]["url"] == "/search?q=jacket"
    assert state_of(b)["browser"]["tabs"][0]["url"] == "/"


def test_an_unknown_cookie_is_told_its_session_ended(server, env):
    c = server.test_client()
    c.set_cookie(COOKIE, "not-a-session-id")
    r = c.get("/")
    assert r.status_code == 410 and r.headers["X-Simweb-Session"] == "unknown"
    assert 'bid="session-title">Your session has ended<' in r.text
    # The cookie is cleared: the next request starts a new session, knowingly.
    assert c.get_cookie(COOKIE) is None
    r = c.get("/")
    assert r.status_code == 200 and r.headers["X-Simweb-Session"] == "new"
    assert state_of(c)["runtime"] == env.app.spec.runtime_initial


def test_sessions_are_isolated(server, world, product):
    a, b = server.test_client(), server.test_client()
    a.get("/")
    b.get("/")
    b_before = state_of(b)
    user = world.user(1)
    sign_in(a, user)
    add_to_cart(a, product, 2)
    sa = state_of(a)
    assert sa["browser"]["user"] == 1
    assert sa["runtime"]["carts"]["1"]["items"] == [
        {"line": f"{product['id']}||", "product_id": product["id"], "qty": 2, "size": None, "color": None}]
    assert ">Cart (2)<" in a.get("/").text
    # Nothing of it reaches the other browser.
    assert state_of(b) == b_before
    assert b_before["browser"]["user"] is None and b_before["runtime"]["carts"] == {}
    r = b.get("/")
    assert ">Cart (0)<" in r.text and "Hello," not in r.text and user["full_name"] not in r.text
    r = b.get("/cart")
    assert r.status_code == 303 and r.headers["Location"] == "/login?next=/cart"
    # A POST in the other browser acts on its own (signed-out) session only.
    b.get(f"/p/{product['id']}")
    r = b.post("/cart/add", data={"product_id": str(product["id"])})
    assert r.status_code == 303 and r.headers["Location"] == f"/login?next=/p/{product['id']}"
    assert state_of(a)["runtime"] == sa["runtime"]


def test_post_redirect_get(browser, world, product):
    sign_in(browser, world.user(1))
    browser.get(f"/p/{product['id']}")
    r = browser.post("/cart/add", data={"product_id": str(product["id"]), "qty": "1"})
    assert r.status_code == 303 and r.headers["Location"] == "/cart"
    r = browser.get("/cart")
    assert r.status_code == 200
    assert flash(r.text) == ("success", f"Added 1 × {product['name']} to your cart.")
    # The flash is shown once.
    assert flash(browser.get("/cart").text) is None
    # follow_redirects behaves as a browser: one GET of the Location.
    r = browser.post("/cart/update", data={"line": f"{product['id']}||", "qty": "3"}, follow_redirects=True)
    assert r.status_code == 200 and r.request.path == "/cart"
    assert flash(r.text) == ("success", f"Updated the quantity of {product['name']} to 3.")
    assert [h.status_code for h in r.history] == [303]


def test_guard_failure_redirects_back_with_its_message(browser, world, sized):
    sign_in(browser, world.user(1))
    before = state_of(browser)["runtime"]
    browser.get(f"/p/{sized['id']}")
    r = browser.post("/cart/add", data={"product_id": str(sized["id"]), "qty": "1", "size": ""})
    assert r.status_code == 303 and r.headers["Location"] == f"/p/{sized['id']}"
    r = browser.get(r.headers["Location"])
    assert r.status_code == 200
    assert flash(r.text) == ("error", "Please choose a size.")
    assert 'role="alert"' in r.text
    assert state_of(browser)["runtime"] == before
    # A malformed field is refused the same way.
    r = browser.post("/cart/add", data={"product_id": str(sized["id"]), "qty": "lots"}, follow_redirects=True)
    assert r.request.path == f"/p/{sized['id']}"
    assert flash(r.text) == ("error", "Quantity must be a whole number.")
    # So is an event that is not available from the current page.
    r = browser.post("/checkout/place", follow_redirects=True)
    assert flash(r.text) == ("error", "This action is not available on this page.")
    assert state_of(browser)["runtime"] == before


def test_sign_in_required_pages_redirect_to_login(browser):
    for url in ("/cart", "/account", "/account/orders", "/checkout/shipping"):
        r = browser.get(url)
        assert r.status_code == 303 and r.headers["Location"] == f"/login?next={url}", url
    r = browser.get("/account/orders", follow_redirects=True)
    assert r.request.path == "/login" and 'name="next" value="/account/orders"' in r.text


def test_unknown_path_is_a_404_page(browser):
    r = browser.get("/no/such/page")
    assert r.status_code == 404 and r.mimetype == "text/html"
    assert 'bid="error-title">Page not found<' in r.text
    r = browser.get("/p/99999999")
    assert r.status_code == 404 and "This product is no longer available." in r.text
    assert state_of(browser)["browser"]["tabs"][0]["status"] == 404


def test_favicon_and_static_files_do_not_advance_the_clock(browser):
    browser.get("/")
    meta = state_of(browser)["meta"]
    r = browser.get("/favicon.ico")
    assert r.status_code == 204 and r.data == b""
    r = browser.get("/static/shop.css")
    assert r.status_code == 200 and r.mimetype == "text/css"
    r.close()
    after = state_of(browser)["meta"]
    assert (after["requests"], after["clock"], after["step"]) == (meta["requests"], meta["clock"], meta["step"])
    browser.get("/")
    assert state_of(browser)["meta"]["requests"] == meta["requests"] + 1


# ============================================================================= state endpoints

def test_state_endpoint_returns_a_valid_state(browser, env, world, product):
    browser.get("/")
    s = state_of(browser)
    assert env.app.check_state(s) is None
    assert s["meta"]["app"] == "shopping" and s["world"]["hash"] == world.hash
    sign_in(browser, world.user(1))
    add_to_cart(browser, product)
    s = state_of(browser)
    assert env.app.check_state(s) is None
    assert s["browser"]["tabs"][s["browser"]["active"]]["url"] == "/cart"
    # Reading the state is not a request of the simulated site.
    assert state_of(browser)["meta"] == s["meta"]


@pytest.fixture(scope="module")
def snapshot(env, world, product):
    """An in-process state a few steps in: user 1 signed in with the product in the cart."""
    env.reset(seed=0, options={"task": None})
    env.state["browser"]["user"] = 1
    for action in (f"goto('/p/{product['id']}')", "fill('qty', '3')", "click('add-to-cart')",
                   "click('nav-account')"):
        obs, *_ = env.step(action)
        assert obs["last_action_error"] == ""
    assert env.state["runtime"]["carts"]["1"]["items"][0]["qty"] == 3
    return env.snapshot()


def test_restore_a_state_from_an_in_process_snapshot(browser, snapshot, product):
    browser.get("/")
    r = browser.post("/_simweb/state", headers=AUTH, data=orjson.dumps(snapshot), content_type="application/json")
    assert r.status_code == 200 and r.get_json() == {"ok": True}
    assert state_of(browser) == snapshot
    r = browser.get("/cart")
    assert r.status_code == 200
    assert product["name"] in r.text and ">Cart (3)<" in r.text
    s = state_of(browser)
    assert s["runtime"] == snapshot["runtime"]
    assert s["meta"]["requests"] == snapshot["meta"]["requests"] + 1
    assert s["browser"]["tabs"][0]["url"] == "/cart"


def _tampered(snapshot: dict, how: str) -> bytes:
    s = copy.deepcopy(snapshot)
    if how == "malformed":
        return b'{"world": {"app": "shopping",'
    if how == "empty":
        return b""
    if how == "not an object":
        return b"[1, 2, 3]"
    if how == "no meta":
        del s["meta"]
    elif how == "other world":
        s["world"]["hash"] = s["meta"]["world_hash"] = "0" * 64
    elif how == "other world (state only)":
        s["world"]["hash"] = "1" * 64
    elif how == "other spec":
        s["meta"]["spec_hash"] = "f" * 64
    elif how == "other app":
        s["meta"]["app"] = "forum"
    elif how == "off schema":
        s["runtime"]["carts"]["1"]["items"][0]["qty"] = 0
    elif how == "unknown layer":
        s["extra"] = {}
    return orjson.dumps(s)


@pytest.mark.parametrize("how,expect", [
    ("malformed", "not valid JSON"), ("empty", "not valid JSON"), ("not an object", "not a simweb state"),
    ("no meta", "not a simweb state"), ("other world", "another world"), ("other world (state only)", "another world"),
    ("other spec", "another shopping spec"), ("other app", "not 'shopping'"), ("off schema", "invalid state"),
    ("unknown layer", "invalid state")])
def test_restoring_a_bad_state_is_refused(browser, snapshot, how, expect):
    browser.get("/search?q=jacket")
    before = state_of(browser)
    r = browser.post("/_simweb/state", headers=AUTH, data=_tampered(snapshot, how), content_type="application/json")
    message = assert_one_line_json_error(r)
    assert expect in message, message
    assert state_of(browser) == before
    assert browser.get("/").status_code == 200


def test_restoring_a_state_with_a_dangling_tab_index_is_refused(browser, snapshot):
    browser.get("/")
    s = copy.deepcopy(snapshot)
    s["browser"]["active"] = 3
    r = browser.post("/_simweb/state", headers=AUTH, data=orjson.dumps(s), content_type="application/json")
    assert r.status_code == 400
    assert browser.get("/").status_code == 200


# ============================================================================= reset

@pytest.mark.parametrize("task,seed", [("shopping/add_to_cart", 3), ("shopping/cancel_order", 0),
                                       ("shopping/register", 1)])
def test_reset_starts_the_task_exactly_as_env_reset(browser, env, task, seed):
    browser.get("/")
    r = browser.post("/_simweb/reset", headers=AUTH, json={"task": task, "seed": seed})
    assert r.status_code == 200
    body = r.get_json()
    served = state_of(browser)
    env.reset(seed=seed, options={"task": task})
    local = env.snapshot()
    assert served["runtime"] == local["runtime"]
    assert served["browser"]["user"] == local["browser"]["user"]
    assert served["meta"]["task"] == local["meta"]["task"] == {"id": task, "params": env.task.params}
    assert served == local
    assert body == {"ok": True, "url": env.task.start_url}
    if env.task.params.get("user_id") is not None and task != "shopping/register":
        assert served["browser"]["user"] == env.task.params["user_id"]
    r = browser.get(body["url"])
    assert r.status_code == 200


def test_reset_replaces_the_sessions_state(browser, world, product):
    sign_in(browser, world.user(1))
    add_to_cart(browser, product)
    r = browser.post("/_simweb/reset", headers=AUTH, json={"task": "shopping/add_to_cart", "seed": 0})
    assert r.status_code == 200
    s = state_of(browser)
    assert "1" not in s["runtime"]["carts"] or not s["runtime"]["carts"]["1"]["items"]


@pytest.mark.parametrize("body,expect", [
    ({"task": "shopping/no_such_task", "seed": 0}, "unknown task 'shopping/no_such_task'"),
    ({"task": "forum/new_thread", "seed": 0}, "unknown task"),
    ({"task": "shopping/add_to_cart", "seed": "3"}, "seed must be an integer"),
    ({"task": [], "seed": 0}, "task must be a task id (a string)"),
    ({"task": {}, "seed": 0}, "task must be a task id (a string)"),
    ({"task": 5, "seed": 0}, "task must be a task id (a string)"),
    ({"task": ["shopping/add_to_cart"]}, "task must be a task id (a string)"),
])
def test_reset_refuses_bad_requests(browser, world, body, expect):
    sign_in(browser, world.user(1))
    before = state_of(browser)
    r = browser.post("/_simweb/reset", headers=AUTH, json=body)
    assert expect in assert_one_line_json_error(r)
    assert state_of(browser) == before


def test_reset_refuses_malformed_json(browser):
    browser.get("/")
    before = state_of(browser)
    r = browser.post("/_simweb/reset", headers=AUTH, data=b"{task:", content_type="application/json")
    assert "not valid JSON" in assert_one_line_json_error(r)
    assert state_of(browser) == before


def test_reset_refuses_a_non_object_body(browser):
    browser.get("/")
    r = browser.post("/_simweb/reset", headers=AUTH, data=b"[1]", content_type="application/json")
    assert_one_line_json_error(r)


# ============================================================================= served == in-process

def _record(env, monkeypatch, actions) -> list[tuple]:
    """Run ``actions`` in process, recording every request the in-process browser makes."""
    log: list[tuple] = []
    submit, navigate = App.submit, App.navigate

    def rec_submit(self, state, url, form, **kw):
        log.append(("POST", url, copy.deepcopy(form)))
        return submit(self, state, url, form, **kw)

    def rec_navigate(self, state, url, **kw):
        log.append(("GET", url, None))
        return navigate(self, state, url, **kw)

    with monkeypatch.context() as m:
        m.setattr(App, "submit", rec_submit)
        m.setattr(App, "navigate", rec_navigate)
        for a in actions:
            obs, reward, terminated, truncated, info = env.step(a)
            assert obs["last_action_error"] == "", (a, obs["last_action_error"])
    return log


@pytest.mark.parametrize("task,seed", [("shopping/buy_with_coupon", 1), ("shopping/best_rated_under", 0),
                                       ("shopping/cart_and_wishlist", 2), ("shopping/return_order", 0),
                                       ("shopping/register", 0)])
def test_served_and_in_process_runs_agree(server, env, monkeypatch, task, seed):
    env.reset(seed=seed, options={"task": task})
    plan = env.oracle_plan()
    log = _record(env, monkeypatch, plan)
    assert any(method == "POST" for method, _, _ in log)
    verdict = env._verdict()
    assert verdict["success"], verdict
    local = env.snapshot()
    local_html = env.render()

    client = server.test_client()
    assert client.post("/_simweb/reset", headers=AUTH, json={"task": task, "seed": seed}).status_code == 200
    last = None
    for i, (method, url, form) in enumerate(log):
        if method == "POST":
            r = client.post(url, data=form)
            assert r.status_code == 303, (url, r.status_code)
            # The browser's next request is the redirect's target.
            assert log[i + 1] == ("GET", r.headers["Location"], None)
        else:
            r = client.get(url)
            assert r.status_code in (200, 303), (url, r.status_code)
            last = r
    served = state_of(client)
    assert served["runtime"] == local["runtime"]
    assert served["browser"]["user"] == local["browser"]["user"]
    assert served["meta"]["clock"] == local["meta"]["clock"]
    assert served["meta"]["requests"] == local["meta"]["requests"]
    assert served["browser"]["tabs"][0]["url"] == local["browser"]["tabs"][0]["url"]
    assert last is not None and last.text == local_html


# ============================================================================= more real-browser behaviour

def test_sign_in_redirect_with_a_tab_stays_on_site(browser, world):
    u = world.user(1)
    browser.get("/login")
    r = browser.post("/login", data={"login": u["username"], "password": u["password"], "next": "/\t/evil.example"})
    assert r.status_code == 303
    assert not r.headers["Location"].startswith("//"), r.headers["Location"]


def test_sign_in_with_a_newline_in_next_is_not_a_server_error(browser, world):
    u = world.user(1)
    browser.get("/login")
    r = browser.post("/login", data={"login": u["username"], "password": u["password"],
                                     "next": "/account\r\nSet-Cookie: x=1"})
    assert r.status_code == 303 and "Set-Cookie: x" not in str(r.headers)


def test_sign_in_redirect_refuses_other_hosts(browser, world):
    u = world.user(1)
    for nxt in ("//evil.example", "https://evil.example/", "javascript:alert(1)", "evil.example"):
        browser.get("/login")
        r = browser.post("/login", data={"login": u["username"], "password": u["password"], "next": nxt})
        assert r.status_code == 303 and r.headers["Location"] == "/", nxt
        browser.post("/logout")
    # Some browsers read a backslash as '/': a next path with one is not followed at all.
    browser.get("/login")
    r = browser.post("/login", data={"login": u["username"], "password": u["password"], "next": "/\\evil.example"})
    assert r.headers["Location"] == "/"
    browser.post("/logout")
    # A local next is followed.
    browser.get("/login?next=/account/orders")
    r = browser.post("/login", data={"login": u["username"], "password": u["password"], "next": "/account/orders"})
    assert r.headers["Location"] == "/account/orders"


def test_form_from_another_browser_tab_is_accepted(browser, world, product):
    sign_in(browser, world.user(1))
    browser.get(f"/p/{product['id']}")        # tab 1: the product page
    browser.get("/account/orders")            # tab 2: the orders page, opened later
    r = browser.post("/cart/add", data={"product_id": str(product["id"])},
                     headers={"Referer": f"http://localhost/p/{product['id']}"})
    assert r.headers["Location"] == "/cart"
    assert state_of(browser)["runtime"]["carts"]["1"]["items"]


@pytest.mark.parametrize("referer", ["http://[::1", "http://[::1]:x/", "http://[vv]/p/1"])
def test_an_unparseable_referer_counts_as_a_foreign_one_not_a_500(server, world, product, referer):
    """The form's page is looked up from a same-site Referer; one urlsplit cannot parse is
    treated like a foreign Referer: the session's active tab is the form's page."""
    outcomes = []
    for ref in (referer, "http://evil.example/p/1"):
        c = server.test_client()
        sign_in(c, world.user(1))
        c.get(f"/p/{product['id']}")
        r = c.post("/cart/add", data={"product_id": str(product["id"])}, headers={"Referer": ref})
        assert r.status_code == 303, (r.status_code, r.data[:200])
        state = state_of(c)
        outcomes.append((r.headers["Location"], state["runtime"], state["browser"]["tabs"]))
    assert outcomes[0] == outcomes[1]


def test_bid_attribute_can_be_renamed_for_browsergym_agents():
    from simweb.serving.server import create_app

    client = create_app("shopping", bid_attribute="data-simweb-bid", control_token=TOKEN).test_client()
    html = client.get("/").get_data(as_text=True)
    assert 'data-simweb-bid="nav-home"' in html and ' bid="' not in html
    with pytest.raises(ValueError, match="not a valid attribute name"):
        create_app("shopping", bid_attribute='x" onload="alert(1)')
