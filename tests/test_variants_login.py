"""The ``sign_in`` flow factor of site variants (simweb.runtime.variant_login): a task that
starts signed in today starts signed out on ``late`` and ``early`` sites, its goal states
its account, the oracle signs in first through the page's sign-in link (or on the sign-in
page a login wall shows), and the verdict still holds the run to the goal's account.

Variant ids are asked of the catalogue (``variant()``), never hard-coded."""
from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from conftest import APPS, run_plan, served_browser

import simweb
from simweb.core.state import deep_copy
from simweb.episodes.episode import final_plan
from simweb.judging.tasks import SIGN_IN_AS, goal_sentence, starts_signed_out
from simweb.runtime import variant_login
from simweb.runtime.variants import FILTER_DISCLOSED, catalogue

SUBMIT = f"click('{variant_login.SUBMIT_BID}')"


def variant(app: str, login: str) -> int:
    """The first variant id of ``app`` whose ``sign_in`` is ``login``, with today's policies
    (so a template draws today's instance there) and no confirmation step or multi-step
    forms or menu or filters to open (so the oracle's plan is today's after its sign-in)."""
    cat = catalogue(app)
    return next(k for k in range(1, cat.count)
                if cat.values(k)["sign_in"] == login and cat.policies(k) == cat.policy_defaults
                and cat.values(k)["confirm_step"] == "none" and cat.values(k)["form_steps"] == "one-step"
                and cat.values(k)["menu"] == "bar" and cat.values(k)["filters"] not in FILTER_DISCLOSED)


def _state(env: Any) -> dict:
    return env.unwrapped.snapshot()


def _tab(state: dict) -> dict:
    return state["browser"]["tabs"][state["browser"]["active"]]


def _signs_in(app: Any, template: Any, params: dict) -> bool:
    return bool(template.sign_in and params.get("user_id") is not None)


def _sign_in(account: dict) -> list[str]:
    return variant_login.sign_in_actions(account)


# ----------------------------------------------------------------------------- the factor
@pytest.mark.parametrize("app", APPS)
def test_every_app_has_the_factor_and_early_is_held_out(app: str) -> None:
    cat = catalogue(app)
    factor = next(f for f in cat.factors if f.name == "sign_in")
    assert [o.label for o in factor.options] == ["signed-in", "late", "early"]
    assert factor.held_out == frozenset({2})
    assert cat.values(0)["sign_in"] == "signed-in"
    assert {cat.values(k)["sign_in"] for k in range(40)} == {"signed-in", "late", "early"}
    assert all(r["factors"]["sign_in"] != "early" for r in cat.listing("train", 200))
    assert any(r["factors"]["sign_in"] == "early" for r in cat.listing("test", 200))


def test_the_sign_in_section_is_checked() -> None:
    from simweb.runtime.variant_login import LoginError, check_pages, parse

    assert parse("x", None) is None and parse("x", {"open": ["home"]}) == frozenset({"home"})
    bads: list[Any] = [{"open": "home"}, {"open": [1]}, {"wall": []}, ["home"]]
    for bad in bads:
        with pytest.raises(LoginError):
            parse("x", bad)
    env = simweb.make("cms")
    with pytest.raises(LoginError, match="nowhere"):
        check_pages(env.unwrapped.app, frozenset({"home", "nowhere"}))
    check_pages(env.unwrapped.app, catalogue("cms").login_open or frozenset())


# ----------------------------------------------------------------------------- starts and goals
@pytest.mark.parametrize("app", APPS)
@pytest.mark.parametrize("login", ["late", "early"])
def test_a_signed_out_start_states_its_account(app: str, login: str) -> None:
    """Every template that starts signed in today starts signed out here, with the account
    in its parameters and its goal ("Sign in as USER (password PW) first."); the others
    (a visitor's task, registration) start as today; the start page is the start URL, or
    the sign-in page that returns to it (a page that needs an account, the login wall)."""
    k = variant(app, login)
    env = simweb.make(app, variant=k)
    u = env.unwrapped
    open_pages = catalogue(app).login_open
    n = 0
    for tid, template in u.app.tasks.items():
        obs, info = env.reset(seed=3, options={"task": tid})
        p = u.task.params
        s = _state(env)
        tab = _tab(s)
        if not _signs_in(u.app, template, p):
            assert SIGN_IN_AS not in p and "Sign in as" not in info["task"]["goal"], (app, tid)
            continue
        n += 1
        row = u.app.world.user(p["user_id"])
        assert p[SIGN_IN_AS] == {"username": row["username"], "password": row["password"]}, (app, tid)
        assert info["task"]["goal"].endswith(" " + goal_sentence(p[SIGN_IN_AS])), (app, tid)
        assert s["browser"]["user"] is None, (app, tid)
        if tab["page"] == "login":
            assert parse_qs(urlsplit(tab["url"]).query)["next"] == [u.task.start_url], (app, tid, tab["url"])
        else:
            assert tab["url"] == u.task.start_url, (app, tid)
            if login == "early":
                assert open_pages is not None and tab["page"].partition(":")[0] in open_pages, (app, tid, tab["page"])
    assert n > 0


def test_a_goal_that_gives_a_password_agrees_with_the_account() -> None:
    """shopping/change_password's goal names the current password: the sentence the site
    adds names the same one."""
    env = simweb.make("shopping", variant=variant("shopping", "late"))
    _, info = env.reset(seed=5, options={"task": "shopping/change_password"})
    p = env.unwrapped.task.params
    assert p["old"] == p[SIGN_IN_AS]["password"]
    assert info["task"]["goal"].count(p["old"]) == 2


@pytest.mark.parametrize("app", APPS)
def test_variant_0_and_signed_in_sites_are_unchanged(app: str) -> None:
    """Variant 0 and a variant that takes ``signed-in`` start signed in as today, with
    today's parameters and goal; their pages' sign-in links are today's."""
    signed_in = variant(app, "signed-in")
    today = simweb.make(app)
    other = simweb.make(app, variant=signed_in)
    for tid, template in today.unwrapped.app.tasks.items():
        _, info0 = today.reset(seed=2, options={"task": tid})
        _, info1 = other.reset(seed=2, options={"task": tid})
        p = today.unwrapped.task.params
        assert SIGN_IN_AS not in p and SIGN_IN_AS not in other.unwrapped.task.params
        assert info0["task"]["goal"] == template.goal(today.unwrapped.app, p) == info1["task"]["goal"], (app, tid)
        if _signs_in(today.unwrapped.app, template, p):
            assert _state(today)["browser"]["user"] == p["user_id"] == _state(other)["browser"]["user"]
    for k in (0, signed_in):   # a visitor's page: today's plain sign-in link
        a = today.unwrapped.app
        assert 'bid="nav-login" href="/login"' in (a.navigate(a.initial_state(0, k), "/").html or "")


# ----------------------------------------------------------------------------- the pages
@pytest.mark.parametrize("app", APPS)
def test_the_login_wall_redirects_with_next(app: str) -> None:
    """Behind the wall every page but sign-in, registration and the app's open pages sends
    a signed-out visitor to the sign-in page with next= the page asked for (its query
    kept); signing in returns there; a path that names no page is still a 404."""
    k = variant(app, "early")
    env = simweb.make(app, variant=k)
    env.reset(seed=0)
    u = env.unwrapped
    pages = u.app.spec.pages
    walled = next(n for n in ("account", "admin", "projects", "communities", "bookings", "orders") if n in pages
                  and not pages[n].route.count("<"))
    route = pages[walled].route
    obs, *_ = env.step(f"goto({route + '?a=1&b=x%20y'!r})")
    tab = _tab(_state(env))
    assert tab["page"] == "login" and tab["url"] == variant_login.login_url(route + "?a=1&b=x%20y"), tab["url"]
    assert not obs["last_action_error"]
    obs, *_ = env.step("goto('/no/such/page')")
    assert _tab(_state(env))["status"] == 404
    if "register" in pages:
        env.step("goto('/register')")
        assert _tab(_state(env))["page"] == "register"
    for name in sorted(catalogue(app).login_open or ()):
        if "<" not in pages[name].route:
            env.step(f"goto({pages[name].route!r})")
            assert _tab(_state(env))["page"].partition(":")[0] == name, (app, name)
    # sign in from the wall: back on the page asked for, query and all
    env.step(f"goto({route + '?a=1&b=x%20y'!r})")
    uid = next(i for i in range(1, 50) if u.app.world.user(i).get("active", True)
               and u.app.world.user(i).get("role", "admin") == "admin")
    row = u.app.world.user(uid)
    for a in _sign_in({"username": row["username"], "password": row["password"]}):
        obs, *_ = env.step(a)
        assert not obs["last_action_error"], (app, a, obs["last_action_error"])
    s = _state(env)
    assert s["browser"]["user"] == uid
    assert urlsplit(_tab(s)["url"]).path == route and parse_qs(urlsplit(_tab(s)["url"]).query) == {
        "a": ["1"], "b": ["x y"]}, _tab(s)["url"]


@pytest.mark.parametrize("app", APPS)
def test_the_sign_in_page_speaks_the_sites_words(app: str) -> None:
    """The auth kit's words (heading, button, labels: the kit's options, not template text)
    take the variant's phrases: the sign-in page a signed-out task starts on names the
    variant's site, never today's."""
    cat = catalogue(app)
    today = cat.values(0)["site_name"]
    k = next(k for k in range(1, cat.count)
             if cat.values(k)["site_name"] != today and cat.values(k)["sign_in"] == "early")
    env = simweb.make(app, variant=k, max_steps=100_000)
    env.reset(seed=0, options={"task": None})
    obs, *_ = env.step("goto('/login')")
    assert "[login-title]" in obs["axtree"] and today not in obs["axtree"], obs["axtree"]
    site = cat.site(k)
    heading = next(ln for ln in obs["axtree"].splitlines() if "[login-title]" in ln)
    submit = next(ln for ln in obs["axtree"].splitlines() if "[login-submit]" in ln)
    kit = env.unwrapped.app.spec.kits["auth"]   # (every app shows the kit's own sign-in page)
    assert heading.endswith(f"heading {site.words(kit['heading'])!r}") and f"button {site.words(kit['action'])!r}" in submit


def test_the_late_site_browses_freely_and_asks_at_the_action() -> None:
    """On a late site the visitor browses (search, a product page) signed out; the first
    action that needs an account sends them to sign in, and next= brings them back."""
    app = "shopping"
    env = simweb.make(app, variant=variant(app, "late"))
    env.reset(seed=1, options={"task": "shopping/add_to_cart"})
    u = env.unwrapped
    plan = u.app.tasks["shopping/add_to_cart"].oracle(u.app, u.task.params)
    for a in plan[:-1]:   # search and open the product, signed out
        obs, *_ = env.step(a)
        assert not obs["last_action_error"], a
    product = _tab(_state(env))["url"]
    assert _tab(_state(env))["page"].startswith("product")
    env.step(plan[-1])    # add to cart: the site asks to sign in
    tab = _tab(_state(env))
    assert tab["page"] == "login" and parse_qs(urlsplit(tab["url"]).query)["next"] == [product], tab["url"]
    for a in _sign_in(u.task.params[SIGN_IN_AS]):
        env.step(a)
    assert _tab(_state(env))["url"] == product and _state(env)["browser"]["user"] == u.task.params["user_id"]
    *_, info = env.step(plan[-1])
    _, _, _, _, info = env.step("send_msg_to_user('Done.')")
    assert info["verdict"]["success"] and info["verdict"]["clean"]


@pytest.mark.parametrize("login", ["late", "early"])
def test_sign_in_links_return_to_their_page(login: str) -> None:
    """On a signed-out site the sign-in links carry next= the page they are on (in the
    variant's URL form); on the sign-in page itself the link is today's."""
    app = "forum"
    k = variant(app, login)
    env = simweb.make(app, variant=k)
    env.reset(seed=0)
    u = env.unwrapped
    page = "/" if login == "late" else "/register"
    env.step(f"goto({page!r})")
    if login == "late":
        assert 'bid="nav-login" href="/login?next=/"' in u.app.render(u.state)
        env.step("click('nav-login')")
        tab = _tab(_state(env))
        assert tab["page"] == "login" and tab["url"] == "/login?next=/"
    assert _tab(_state(env))["page"] in ("login", "register")
    assert 'bid="nav-login" href="/login"' in u.app.render(u.state)   # (the sign-in and sign-up pages: today's)


# ----------------------------------------------------------------------------- oracles
@pytest.mark.parametrize("app", APPS)
@pytest.mark.parametrize("login", ["late", "early"])
def test_every_oracle_signs_in_and_solves(app: str, login: str) -> None:
    """Every template's oracle reaches a clean success within its budget: on a start that
    signs in itself, its plan is the sign-in (the page's sign-in link, unless the start
    page is the sign-in page, then the form) followed by today's plan."""
    k = variant(app, login)
    env = simweb.make(app, variant=k)
    u = env.unwrapped
    signed = 0
    for n, (tid, template) in enumerate(u.app.tasks.items()):
        env.reset(seed=k + n, options={"task": tid})
        plan = u.oracle_plan()
        today = final_plan(list(template.oracle(u.app, u.task.params)))
        if starts_signed_out(u.task.params):
            signed += 1
            i = plan.index(SUBMIT)
            assert plan[i - 2:i + 1] == _sign_in(u.task.params[SIGN_IN_AS]) and i in (2, 3), (app, tid, plan)
            assert plan[i + 1:] == today, (app, tid)
        else:
            assert plan == today, (app, tid)
        assert len(plan) * 2 <= u.max_steps, (app, tid)
        v = run_plan(env, plan, (app, k, tid))
        assert v["success"] and v["clean"], (app, k, tid, v)
    assert signed > 0


def test_a_sub_task_signs_in_too() -> None:
    """A sub-task of a signed-out start (the parent's parameters) states the account and
    its oracle signs in first."""
    app = "shopping"
    k = variant(app, "late")
    env = simweb.make(app, variant=k)
    u = env.unwrapped
    tid = next(sub.id for t in u.app.tasks for sub in u.app.tasks.sub_tasks(t) if sub.sign_in)
    _, info = env.reset(seed=0, options={"task": tid})
    assert starts_signed_out(u.task.params) and "Sign in as" in info["task"]["goal"]
    for a in u.oracle_plan():
        *_, info = env.step(a)
    assert info["verdict"]["success"] and info["verdict"]["clean"], info["verdict"]


# ----------------------------------------------------------------------------- verdicts
@pytest.mark.parametrize("login", ["late", "early"])
def test_signing_in_as_another_account_is_caught(login: str) -> None:
    """The goal's account signing in costs nothing; the same work signed in as another
    account is not clean, and neither is the work followed by a sign-in as another."""
    app = "shopping"
    env = simweb.make(app, variant=variant(app, login))
    env.reset(seed=4, options={"task": "shopping/add_to_cart"})
    u = env.unwrapped
    plan = u.oracle_plan()
    i = plan.index(SUBMIT)
    other = u.app.world.user(u.task.params["user_id"] % 50 + 1)
    as_other = _sign_in({"username": other["username"], "password": other["password"]})
    start = u.start_state()

    def verdict(actions: list[str]) -> dict:
        child = env.fork() if hasattr(env, "fork") else u.fork()
        info: dict = {}
        for a in actions:
            *_, info = child.step(a)
        return info["verdict"]

    ok = verdict(plan)
    assert ok["success"] and ok["clean"]
    wrong = verdict([*plan[:i - 2], *as_other, *plan[i + 1:]])
    assert not wrong["clean"] and any("another account" in c["name"] for c in wrong["checks"] if not c["passed"])
    after = verdict([*plan[:-1], "goto('/login')", *as_other, plan[-1]])
    assert not (after["success"] and after["clean"])
    assert u.start_state() == start


def test_the_red_team_pays_nothing_on_signed_out_starts() -> None:
    """The sign-in family (the work without signing in, the session left to another
    account) and the as-another-user family pay nothing on a late and an early site."""
    from simweb.tools.redteam import attack_instance

    for login in ("late", "early"):
        env = simweb.make("shopping", variant=variant("shopping", login))
        u = env.unwrapped
        attacks = [a for tid in ("shopping/add_to_cart", "shopping/order_total")
                   for a in attack_instance(u, tid, 0, events=False)]
        fams = {a.family for a in attacks}
        assert "sign-in" in fams and "as-another-user" in fams, fams
        assert not [a for a in attacks if a.paid or a.false_negative], [a for a in attacks if a.paid or a.false_negative]


# ----------------------------------------------------------------------------- state, determinism
def test_the_same_variant_and_seed_give_the_same_start() -> None:
    app = "issues"
    k = variant(app, "early")
    a, b = simweb.make(app, variant=k), simweb.make(app, variant=k)
    tid = next(iter(a.unwrapped.app.tasks))
    _, ia = a.reset(seed=7, options={"task": tid})
    _, ib = b.reset(seed=7, options={"task": tid})
    assert ia["task"]["goal"] == ib["task"]["goal"] and a.unwrapped.state_hash() == b.unwrapped.state_hash()
    # a recorded instance (its parameters) keeps its signed-out start and its goal
    c = simweb.make(app, variant=k)
    _, ic = c.reset(seed=7, options={"task": tid, "params": deep_copy(a.unwrapped.task.params)})
    assert ic["task"]["goal"] == ia["task"]["goal"] and _state(c)["browser"]["user"] is None
    assert _state(a)["meta"]["variant"] == k


# ----------------------------------------------------------------------------- served mode
def test_served_mode_has_the_same_wall() -> None:
    """The served site answers a walled page with a 303 to the sign-in page (next= the page),
    leaves sign-in and registration open, and signing in returns to the page."""
    from simweb.serving.server import create_app

    app = "shopping"
    k = variant(app, "early")
    client = create_app(app, variant=k, control_token="t" * 32).test_client()
    r = client.get("/search?q=wool&sort=price")   # a page any visitor sees on today's site
    assert r.status_code == 303 and r.headers["Location"].endswith(
        "/login?next=/search%3Fq%3Dwool%26sort%3Dprice"), r.headers.get("Location")
    assert client.get(r.headers["Location"]).status_code == 200
    assert client.get("/register").status_code == 200
    env = simweb.make(app)
    row = env.unwrapped.app.world.user(1)
    r = client.post("/login", data={"login": row["username"], "password": row["password"],
                                     "next": "/search?q=wool&sort=price"},
                    headers={"Referer": "http://localhost/login"})
    assert r.status_code == 303 and r.headers["Location"].endswith("/search?q=wool&sort=price"), r.headers["Location"]
    assert client.get("/search?q=wool&sort=price").status_code == 200


# ----------------------------------------------------------------------------- Chromium parity
@pytest.mark.browser
@pytest.mark.parametrize("login", ["late", "early"])
def test_the_sign_in_is_the_same_in_chromium(login: str, chromium: Any) -> None:
    """A signed-out start, the oracle's sign-in and the page it returns to are the same
    pages (URL, AX tree) and the same state in Chromium."""
    pytest.importorskip("playwright.sync_api")

    app = "issues"
    with served_browser(app, chromium) as web:
        k = variant(app, login)
        sim = simweb.make(app, variant=k, max_steps=100_000)
        tid = next(t for t, tpl in sim.unwrapped.app.tasks.items() if tpl.sign_in and "." not in t)
        sim.reset(seed=1, options={"task": tid})
        plan = sim.unwrapped.oracle_plan()
        start = sim.unwrapped.start_state()
        web.restore(deep_copy(start))
        so, *_ = sim.step("noop()")
        wo, *_ = web.step("noop()")
        assert so["axtree"] == wo["axtree"]
        for a in plan[:plan.index(SUBMIT) + 2]:
            so, *_ = sim.step(a)
            wo, *_ = web.step(a)
            assert so["url"].split("/", 3)[3] == wo["url"].split("/", 3)[3], (a, so["url"], wo["url"])
            assert so["axtree"] == wo["axtree"], (a, so["url"])
        assert web.snapshot()["browser"]["user"] == sim.unwrapped.task.params["user_id"]
        assert web.snapshot()["runtime"] == sim.unwrapped.snapshot()["runtime"]
        if login == "early":   # a walled page typed in a signed-out Chromium: the same redirect
            s = deep_copy(start)
            web.restore(s)
            sim.unwrapped.restore(deep_copy(start))
            so, *_ = sim.step("goto('/projects')")
            wo, *_ = web.step("goto('/projects')")
            assert so["url"].split("/", 3)[3] == wo["url"].split("/", 3)[3] and "next=" in so["url"]
