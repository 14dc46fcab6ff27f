"""The menu factor of site variants (simweb.runtime.variants, docs/variants.md "The menu"):
the top bar's navigation collapsed behind a ``<details class="vmenu">`` whose summary opens
it. The in-process browser toggles a details on a click on its summary, keeps the open
state in the tab's form state (forks, snapshots, history), hides a closed details' content
in the AX tree (both walks), refuses a click on a hidden link; the oracle opens the menu
where a plan needs it; Chromium shows the same AX tree."""
from __future__ import annotations

import re
from typing import Any

import pytest
from conftest import (
    APPS,
    QUICK_TIMEOUT_MS,
    action_timeout,
    assert_walks_agree,
    run_plan,
    served_browser,
    site_bar_lines,
)

import simweb
from simweb.agents import RandomAgent
from simweb.runtime.variants import catalogue
from simweb.web import axtree

MENU_LINE = re.compile(r"\[site-menu\] DisclosureTriangle '(.*?)'(, focused)?, expanded=(True|False)")


def _with(app: str, **want: str) -> int:
    """The first variant whose factors take these values (by label), with today's policies
    and a start signed in (no login wall) unless asked."""
    cat = catalogue(app)
    if "sign_in" in {f.name for f in cat.factors}:
        want.setdefault("sign_in", "signed-in")
    return next(k for k in range(1, cat.count) if all(cat.values(k)[f] == v for f, v in want.items())
                and cat.policies(k) == cat.policy_defaults)


def _menu_env(app: str = "shopping", menu: str = "menu", **want: str) -> Any:
    want.setdefault("nav_position", "top")
    env = simweb.make(app, variant=_with(app, menu=menu, **want), max_steps=100_000)
    env.reset(seed=0, options={"task": None})
    return env.unwrapped


def _menu(axtree_text: str) -> tuple[str, bool]:
    m = MENU_LINE.search(axtree_text)
    assert m is not None, axtree_text[:2000]
    return m.group(1), m.group(3) == "True"


def _menu_bid(env: Any) -> str:
    """A link of the collapsed menu (the first in the page's order)."""
    page = env.browser.page()
    return next(b for b, el in page.elements.items() if el.tag == "a" and el.hidden and b.startswith("nav-"))


# ----------------------------------------------------------------------------- the browser
def test_a_summary_click_opens_and_closes_the_menu() -> None:
    env = _menu_env()
    link = _menu_bid(env)
    before = env.browser.axtree()
    assert _menu(before) == ("Menu", False) and f"[{link}]" not in before
    assert "[search-q]" in before and "[nav-home]" in before   # the logo and the search stay
    env.step("click('site-menu')")
    opened = env.browser.axtree()
    assert _menu(opened) == ("Menu", True) and f"[{link}]" in opened
    assert env.state["browser"]["tabs"][0]["fields"] == {"site-menu-box": True}
    assert env.browser.tab["url"] == "/"   # no navigation
    env.step("click('site-menu')")
    assert _menu(env.browser.axtree()) == ("Menu", False)
    assert env.state["browser"]["tabs"][0]["fields"] == {"site-menu-box": False}
    env.step("press('site-menu', 'Enter')")   # the keyboard toggles it too, as in Chromium
    assert _menu(env.browser.axtree())[1]


def test_a_click_on_a_link_of_the_closed_menu_is_an_action_error() -> None:
    env = _menu_env()
    link = _menu_bid(env)
    obs, *_ = env.step(f"click('{link}')")
    assert "to be visible" in obs["last_action_error"] and env.browser.tab["url"] == "/"
    env.step("click('site-menu')")
    obs, *_ = env.step(f"click('{link}')")
    assert not obs["last_action_error"] and env.browser.tab["url"] != "/"


def test_the_open_state_forks_snapshots_and_restores() -> None:
    env = _menu_env()
    env.step("click('site-menu')")
    child = env.fork()
    snap = env.snapshot()
    assert _menu(child.browser.axtree())[1]
    child.step("click('site-menu')")
    assert not _menu(child.browser.axtree())[1] and _menu(env.browser.axtree())[1]
    other = _menu_env()
    other.restore(snap)
    assert _menu(other.browser.axtree())[1]
    assert other.browser.axtree() == env.browser.axtree()


def test_navigation_closes_the_menu_and_history_shows_it_as_served() -> None:
    """A details' open state goes with the page; it is not form state kept with the history
    entry (Chromium shows the page again with its menu closed: the Chromium test below),
    while a field's value on the same page is."""
    env = _menu_env()
    link = _menu_bid(env)
    env.step("fill('search-q', 'lamp')")
    env.step("click('site-menu')")
    env.step(f"click('{link}')")
    assert not _menu(env.browser.axtree())[1], "a new page starts with its menu closed"
    assert env.browser.tab["fields"] == {}
    assert list(env.browser.tab["saved_fields"].values()) == [{"search-q": "lamp"}]
    env.step("go_back()")
    assert env.browser.tab["url"] == "/" and not _menu(env.browser.axtree())[1]
    assert env.browser.tab["fields"] == {"search-q": "lamp"}


def test_both_walks_agree_on_a_menu_page_closed_and_open() -> None:
    if axtree._compiled_walk is None:
        pytest.skip("the compiled walk is not built")
    env = _menu_env()
    closed = env.browser.html()
    env.step("click('site-menu')")
    opened = env.browser.html()
    assert "<details" in opened and closed != opened
    for html in (closed, opened):
        assert_walks_agree(html)


@pytest.mark.parametrize("position", ["sidebar", "bottom"])
def test_the_menu_moves_with_the_top_bar(position: str) -> None:
    env = _menu_env("issues", nav_position=position)
    inside = site_bar_lines(env.browser.axtree())
    assert any("[site-menu]" in ln for ln in inside) and any("[nav-home]" in ln for ln in inside)
    assert "[nav-projects]" not in env.browser.axtree()
    env.step("click('site-menu')")
    assert "[nav-projects]" in env.browser.axtree()


@pytest.mark.parametrize("menu,name", [("icon", "Open menu"), ("icon-menu", "\u2630 Menu"), ("browse", "Browse")])
def test_each_summary_has_its_name(menu: str, name: str) -> None:
    env = _menu_env(menu=menu)
    text = env.browser.axtree()
    assert _menu(text) == (name, False)
    assert ("StaticText '\u2630'" in text) == (menu == "icon")   # the label names the icon; its text stays below


def test_the_menu_option_is_held_out_and_today_has_none() -> None:
    for app in APPS:
        cat = catalogue(app)
        factor = next(f for f in cat.factors if f.name == "menu")
        assert [o.label for o in factor.options] == ["bar", "menu", "icon-menu", "browse", "icon"]
        assert factor.held_out == {4}
        assert all(cat.values(r["variant"])["menu"] != "icon" for r in cat.listing("train", 100))
    env = simweb.make("shopping", max_steps=100_000)
    env.reset(seed=0, options={"task": None})
    assert "site-menu" not in env.unwrapped.browser.axtree()


# ----------------------------------------------------------------------------- the oracle
@pytest.mark.parametrize("app", APPS)
def test_the_oracle_solves_every_template_on_a_menu_variant(app: str) -> None:
    opened = 0
    for menu, position, sign_in in (("menu", "top", "signed-in"), ("icon", "sidebar", "late")):
        want = {"sign_in": sign_in} if "sign_in" in {f.name for f in catalogue(app).factors} else {}
        k = _with(app, menu=menu, nav_position=position, **want)
        env = simweb.make(app, variant=k)
        for i, tid in enumerate(env.app.tasks):
            env.reset(seed=k + i, options={"task": tid})
            plan = env.oracle_plan()
            opened += "click('site-menu')" in plan
            v = run_plan(env, plan, (app, k, tid))
            assert v["success"] and v["clean"], (app, k, tid, v)
    assert opened, f"no {app} plan went through the menu"


@pytest.mark.parametrize("app", APPS)
def test_a_random_agent_stays_at_zero_on_a_menu_variant(app: str) -> None:
    k = _with(app, menu="menu", nav_position="top")
    env = simweb.make(app, variant=k)
    agent = RandomAgent(0)
    wins = 0
    for i, tid in enumerate(list(env.app.tasks)[:8]):
        obs, _ = env.reset(seed=i, options={"task": tid})
        agent.reset(env, seed=i)
        for _ in range(15):
            obs, reward, term, trunc, info = env.step(agent.act(obs))
            if term or trunc:
                break
        wins += bool(info["verdict"]["success"])
    assert wins == 0


# ----------------------------------------------------------------------------- Chromium
@pytest.mark.browser
@pytest.mark.parametrize("app,menu,position", [("shopping", "menu", "top"), ("forum", "icon", "bottom"),
                                              ("cms", "icon-menu", "sidebar")])
def test_the_menu_is_the_same_in_chromium(app: str, menu: str, position: str, chromium: Any) -> None:
    """On a menu variant, the AX tree in Chromium (the served site) and in-process are the
    same line for line before and after clicking the summary, and after closing it; a
    click on a link of the closed menu fails in both; the open state is the same state;
    going back to a page whose menu was open shows it closed in both."""
    pytest.importorskip("playwright.sync_api")

    sim = _menu_env(app, menu=menu, nav_position=position)
    link = _menu_bid(sim)
    with served_browser(app, chromium) as web:
        web.restore(sim.snapshot())
        so, *_ = sim.step("noop()")
        wo, *_ = web.step("noop()")
        assert so["axtree"] == wo["axtree"] and not _menu(so["axtree"])[1]
        so, *_ = sim.step(f"click('{link}')")
        with action_timeout(web, QUICK_TIMEOUT_MS):   # a link of the closed menu: refused
            wo, *_ = web.step(f"click('{link}')")
        assert so["last_action_error"] and wo["last_action_error"], (so["last_action_error"], wo["last_action_error"])
        assert so["axtree"] == wo["axtree"]
        for _ in range(2):
            so, *_ = sim.step("click('site-menu')")
            wo, *_ = web.step("click('site-menu')")
            assert not so["last_action_error"] and not wo["last_action_error"]
            assert so["axtree"] == wo["axtree"]
            if _menu(so["axtree"])[1]:
                assert f"[{link}]" in so["axtree"]
                assert web.snapshot()["browser"]["tabs"][0]["fields"] == sim.snapshot()["browser"]["tabs"][0]["fields"]
                # a state with the menu open shows it open in Chromium too
                web.restore(sim.snapshot())
                wo, *_ = web.step("noop()")
                so, *_ = sim.step("noop()")
                assert so["axtree"] == wo["axtree"]
        assert not _menu(so["axtree"])[1]
        # a link of the open menu, then back: the page as served (the menu closed) in both
        for a in ["click('site-menu')", f"click('{link}')", "go_back()"]:
            so, *_ = sim.step(a)
            wo, *_ = web.step(a)
            assert so["axtree"] == wo["axtree"], a
        assert not _menu(so["axtree"])[1]
