"""Browser mode against the in-process engine: the same actions must make the same
transitions whether the in-process browser or a real headless Chromium performs them.

One Chromium and one server per app are shared by the whole module; each test resets its
env through ``POST /_simweb/reset``, which is all the isolation an episode needs.
"""
from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

pytest.importorskip("playwright.sync_api")

from conftest import APPS

from simweb.episodes.env import SimEnv
from simweb.episodes.episode import TaskError
from simweb.runtime.app import _import
from simweb.runtime.registry import app_of_task, definition
from simweb.serving.browser import BrowserEnv, ServedApp, chromium_executable, launch_chromium
from simweb.tools import check

pytestmark = pytest.mark.browser

#: The browser-only tests below drive shopping's pages (its search form, its links, its
#: select and check steps): a SIMWEB_TEST_APPS selection without shopping deselects them.
SHOPPING = pytest.mark.apps("shopping")

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
SEEDS = (0, 1)


def _task_ids() -> list[str]:
    """Every task template of every registered app (read without loading any world)."""
    ids: list[str] = []
    for name in APPS:
        ids += [t.id for t in _import(definition(name).tasks)]
    return ids


TASKS = _task_ids()


# ----------------------------------------------------------------------------- fixtures

@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    """One headless Chromium for the module."""
    if not os.access(chromium_executable(), os.X_OK):
        # A missing browser is a missing install step, never a silently skipped test.
        pytest.fail(f"Chromium not found at {chromium_executable()} (apt-get install -y chromium)")
    from playwright.sync_api import sync_playwright

    pw = sync_playwright().start()
    try:
        browser = launch_chromium(pw, headless=True)
    except Exception:
        pw.stop()
        raise
    yield browser
    browser.close()
    pw.stop()


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, ServedApp]]:
    """One server per app (world seed 0), started on first use."""
    started: dict[str, ServedApp] = {}
    yield started
    for served in started.values():
        served.close()


@pytest.fixture(scope="module")
def browser_env(chromium: Any, servers: dict[str, ServedApp]) -> Iterator[Any]:
    """``browser_env(app)``: the module's BrowserEnv of that app (screenshots off: the
    parity runs only need the transitions)."""
    envs: dict[str, BrowserEnv] = {}

    def get(app: str) -> BrowserEnv:
        if app not in envs:
            if app not in servers:
                servers[app] = ServedApp(app, world_seed=0)
            envs[app] = BrowserEnv(app, 0, server=servers[app], browser=chromium, screenshots=False)
        return envs[app]

    yield get
    for env in envs.values():
        env.close()


@pytest.fixture()
def shop(chromium: Any, servers: dict[str, ServedApp]) -> Iterator[BrowserEnv]:
    """A fresh shopping BrowserEnv (own context, screenshots on) on the shared server."""
    if "shopping" not in servers:
        servers["shopping"] = ServedApp("shopping", world_seed=0)
    env = BrowserEnv("shopping", 0, server=servers["shopping"], browser=chromium)
    yield env
    env.close()


def _first_task(app: str = "shopping") -> str:
    return next(t for t in TASKS if app_of_task(t) == app)


# ----------------------------------------------------------------------------- parity

def _path(url: str) -> str:
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("task_id", TASKS)
def test_oracle_parity(task_id: str, seed: int, browser_env: Any) -> None:
    """The oracle plan run in-process and in Chromium makes the same transitions (the
    contract's browser parity, :func:`simweb.check.check_browser_parity`): the same pages,
    AX trees and chat at every step, the same runtime and meta (requests, simulated clock)
    after every step, and the browser run's verdict is the same clean success."""
    app = app_of_task(task_id)
    assert check.check_browser_parity(app, task_id, seed, web=browser_env(app)) == []


def test_browser_parity_reports_a_divergence(browser_env: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The parity check can fail: a Chromium run whose AX tree differs is named."""
    app = APPS[0]
    task_id = next(t for t in TASKS if app_of_task(t) == app)
    env = browser_env(app)
    real = env.backend.observe
    monkeypatch.setattr(env.backend, "observe", lambda state: dict(real(state), axtree="RootWebArea 'elsewhere'"))
    assert check.check_browser_parity(app, task_id, 0, web=env) == [
        f"{task_id} seed 0 step 0: the AX tree differs in Chromium"]


def test_an_unknown_task_gets_a_did_you_mean(browser_env: Any) -> None:
    """Task lookup is the episode's, the same as in-process (nothing reaches the server)."""
    app = APPS[0]
    task_id = next(t for t in TASKS if app_of_task(t) == app)
    with pytest.raises(TaskError, match=f"did you mean '{task_id}'"):
        browser_env(app).reset(seed=0, options={"task": task_id + "x"})


# ----------------------------------------------------------------------------- browser-only

@SHOPPING
def test_reset_gives_a_png_screenshot(shop: BrowserEnv) -> None:
    obs, info = shop.reset(seed=0, options={"task": _first_task()})
    png = obs["screenshot"]
    assert isinstance(png, bytes)
    assert png.startswith(PNG_SIGNATURE)
    assert len(png) > 1000
    assert obs["url"].startswith(shop.base_url)
    assert obs["goal"] and obs["axtree"].startswith("RootWebArea")
    assert info["verdict"] is not None and info["verdict"]["success"] is False


def _first_link(env: BrowserEnv) -> tuple[str, str]:
    """(bid, href) of the first visible same-site link with a bid on the page."""
    found = env.page.evaluate("""() => {
        for (const a of document.querySelectorAll('a[bid][href]')) {
            const r = a.getBoundingClientRect();
            const h = a.getAttribute('href');
            if (r.width > 2 && r.height > 2 && r.top >= 0 && r.bottom <= innerHeight
                && h.startsWith('/') && h !== location.pathname + location.search)
                return [a.getAttribute('bid'), a.href];
        }
        return null;
    }""")
    assert found, "no visible link with a bid on the page"
    return found[0], found[1]


@SHOPPING
def test_mouse_click_on_a_link_navigates_like_click(shop: BrowserEnv) -> None:
    task = _first_task()
    shop.reset(seed=0, options={"task": task})
    bid, href = _first_link(shop)
    obs, _, _, _, _ = shop.step(f"click({bid!r})")
    assert obs["last_action_error"] == ""
    by_bid_url, by_bid_state = obs["url"], shop.snapshot()

    shop.reset(seed=0, options={"task": task})
    box = shop.page.locator(f'[bid="{bid}"]').bounding_box()
    assert box is not None
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    obs, _, _, _, _ = shop.step(f"mouse_click({x:.1f}, {y:.1f})")
    assert obs["last_action_error"] == ""
    assert obs["url"] == by_bid_url == href
    state = shop.snapshot()
    assert state["runtime"] == by_bid_state["runtime"]
    assert state["meta"] == by_bid_state["meta"]
    assert state["browser"]["tabs"][state["browser"]["active"]]["url"] == \
        by_bid_state["browser"]["tabs"][by_bid_state["browser"]["active"]]["url"]


@SHOPPING
def test_served_pages_end_the_settle_window_at_once(shop: BrowserEnv) -> None:
    """Served simweb pages carry no script, so the settle window after an action looks once
    and ends (no quiet period): the step is what it was before the window existed."""
    from simweb.serving.browser import _page_activity

    shop.reset(seed=0, options={"task": _first_task()})
    bid, href = _first_link(shop)
    obs, _, _, _, _ = shop.step(f"click({bid!r})")
    assert obs["url"] == href and shop.last_settle == "quiet"
    assert _page_activity(shop.page) == {"busy": False, "scripted": False, "popups": 0}
    shop.step("send_msg_to_user('done')")
    assert shop.last_settle == ""            # an action that touches no page opens no window


@SHOPPING
@pytest.mark.parametrize("action, needle", [
    ("click('no-such-bid-anywhere')", "no-such-bid-anywhere"),
    ("fill('no-such-bid-anywhere', 'x')", "no-such-bid-anywhere"),
    ("fly_to('moon')", "Unknown action"),
    ("click(", "syntax"),
    ("tab_focus(7)", "No tab at index 7"),
    ("goto('https://example.com/')", "ERR_NAME_NOT_RESOLVED"),
    ("goto('http://[::1')", "ERR_INVALID_URL"),
])
def test_bad_actions_give_last_action_error(shop: BrowserEnv, action: str, needle: str) -> None:
    obs0, _ = shop.reset(seed=0, options={"task": _first_task()})
    before = shop.snapshot()
    obs, reward, terminated, truncated, info = shop.step(action)
    assert needle.lower() in obs["last_action_error"].lower()
    assert obs["last_action"] == action
    assert obs["url"] == obs0["url"]
    assert reward == 0.0 and not terminated
    after = shop.snapshot()
    assert after["runtime"] == before["runtime"]
    assert after["meta"]["requests"] == before["meta"]["requests"]


@SHOPPING
def test_a_failed_form_input_is_an_error_not_an_exception(shop: BrowserEnv) -> None:
    shop.reset(seed=0, options={"task": _first_task()})
    search = shop.page.locator("form input[bid][type=search], form input[bid][type=text]").first
    bid = search.get_attribute("bid")
    obs, *_ = shop.step(f"select_option({bid!r}, 'x')")
    assert "not a <select>" in obs["last_action_error"]
    obs, *_ = shop.step(f"fill({bid!r}, 'desk lamp')")
    assert obs["last_action_error"] == ""
    assert "value='desk lamp'" in obs["axtree"]   # typed text reaches the AX tree
    assert obs["focused_element_bid"] == bid


@SHOPPING
def test_keyboard_actions_match_the_simulator(shop: BrowserEnv) -> None:
    """focus + keyboard_type + keyboard_press('Enter') submits the search form in both."""
    task = _first_task()
    obs, _ = shop.reset(seed=0, options={"task": task})
    assert obs in shop.observation_space
    bid = shop.page.locator("form input[bid][type=search], form input[bid][type=text]").first.get_attribute("bid")
    sim = SimEnv("shopping", 0)
    sim.reset(seed=0, options={"task": task})
    for action in [f"focus({bid!r})", "keyboard_type('desk')", "keyboard_type(' lamp')", "keyboard_press('Enter')"]:
        sim_obs, *_ = sim.step(action)
        obs, *_ = shop.step(action)
        assert obs["last_action_error"] == sim_obs["last_action_error"] == ""
        assert _path(obs["url"]) == _path(sim_obs["url"]), action
        assert obs["axtree"] == sim_obs["axtree"], action
    assert "desk+lamp" in obs["url"]
    state, sim_state = shop.snapshot(), sim.snapshot()
    assert state["runtime"] == sim_state["runtime"]
    assert state["meta"] == sim_state["meta"]
    assert obs in shop.observation_space


@SHOPPING
def test_send_msg_to_user_is_recorded_in_the_session(shop: BrowserEnv) -> None:
    shop.reset(seed=0, options={"task": _first_task()})
    obs, _, terminated, _, _ = shop.step("send_msg_to_user('forty-two')")
    assert obs["last_action_error"] == ""
    assert obs["chat_messages"][-1] == {"role": "assistant", "message": "forty-two"}
    assert shop.served_state()["browser"]["chat"][-1]["message"] == "forty-two"
    assert terminated


@SHOPPING
def test_two_contexts_have_independent_sessions(chromium: Any, servers: dict[str, ServedApp]) -> None:
    if "shopping" not in servers:
        servers["shopping"] = ServedApp("shopping", world_seed=0)
    served = servers["shopping"]
    task = "shopping/add_to_cart" if "shopping/add_to_cart" in TASKS else _first_task()
    a = BrowserEnv("shopping", 0, server=served, browser=chromium, screenshots=False)
    b = BrowserEnv("shopping", 0, server=served, browser=chromium, screenshots=False)
    try:
        a.reset(seed=0, options={"task": task})
        b.reset(seed=0, options={"task": task})
        b_before = b.served_state()
        assert a.served_state()["runtime"] == b_before["runtime"]
        for action in a.oracle_plan():
            obs, *_ = a.step(action)
            assert obs["last_action_error"] == ""
        a_after = a.served_state()
        assert a_after["runtime"] != b_before["runtime"], "the plan changed nothing"
        b_after = b.served_state()
        assert b_after == b_before
        a.step("send_msg_to_user('only in a')")
        assert b.served_state()["browser"]["chat"] == []
        cookies_a = {c["name"]: c["value"] for c in a.context.cookies()}
        cookies_b = {c["name"]: c["value"] for c in b.context.cookies()}
        assert cookies_a and cookies_a != cookies_b
    finally:
        a.close()
        b.close()
    assert served.running   # envs given a server leave it running


@SHOPPING
def test_snapshot_restore_round_trip(shop: BrowserEnv) -> None:
    task = "shopping/add_to_cart" if "shopping/add_to_cart" in TASKS else _first_task()
    shop.reset(seed=0, options={"task": task})
    plan = shop.oracle_plan()
    fill = next((i for i, a in enumerate(plan) if a.startswith("fill(")), None)
    stop = (fill + 1) if fill is not None else 0
    for action in plan[:stop]:
        shop.step(action)
    saved = shop.snapshot()
    rest = plan[stop:]
    for action in rest:
        shop.step(action)
    done = shop.snapshot()
    shop.restore(saved)
    assert shop.snapshot() == saved          # session, page and typed values are back
    for action in rest:
        obs, _, _, _, info = shop.step(action)
        assert obs["last_action_error"] == ""
    again = shop.snapshot()
    assert again["runtime"] == done["runtime"]
    assert again["meta"] == done["meta"]


@SHOPPING
def test_tabs(shop: BrowserEnv) -> None:
    obs, _ = shop.reset(seed=0, options={"task": _first_task()})
    start_url = obs["url"]
    obs, *_ = shop.step("new_tab()")
    assert obs["open_pages_urls"] == [start_url, "about:blank"] and obs["active_page_index"] == 1
    obs, *_ = shop.step(f"goto({start_url!r})")
    assert obs["url"] == start_url and obs["last_action_error"] == ""
    obs, *_ = shop.step("tab_focus(0)")
    assert obs["active_page_index"] == 0
    obs, *_ = shop.step("tab_close()")
    assert obs["open_pages_urls"] == [start_url] and obs["active_page_index"] == 0
    obs, *_ = shop.step("tab_close()")
    assert obs["open_pages_urls"] == ["about:blank"]


@SHOPPING
def test_go_back_and_forward(shop: BrowserEnv) -> None:
    obs0, _ = shop.reset(seed=0, options={"task": _first_task()})
    bid, href = _first_link(shop)
    obs, *_ = shop.step(f"click({bid!r})")
    assert obs["url"] == href
    obs, *_ = shop.step("go_back()")
    assert obs["url"] == obs0["url"] and obs["last_action_error"] == ""
    obs, *_ = shop.step("go_forward()")
    assert obs["url"] == href and obs["last_action_error"] == ""


def _plan_step(prefix: str) -> tuple[str, int, int] | None:
    """(task, seed, index) of the first oracle step starting with ``prefix``."""
    for task in TASKS:
        if app_of_task(task) != "shopping":
            continue
        sim = SimEnv("shopping", 0)
        sim.reset(seed=0, options={"task": task})
        for i, action in enumerate(sim.oracle_plan()):
            if action.startswith(prefix):
                return task, 0, i
    return None


@SHOPPING
@pytest.mark.parametrize("prefix", ["select_option(", "check("])
def test_focus_follows_the_browser(prefix: str, browser_env: Any) -> None:
    """After select_option / check, the in-process focus is the one Chromium reports."""
    found = _plan_step(prefix)
    assert found is not None, f"no oracle plan uses {prefix}...)"
    task, seed, stop = found
    sim = SimEnv("shopping", 0)
    sim.reset(seed=seed, options={"task": task})
    env = browser_env("shopping")
    env.reset(seed=seed, options={"task": task})
    for action in sim.oracle_plan()[: stop + 1]:
        sim_obs, *_ = sim.step(action)
        obs, *_ = env.step(action)
    assert sim_obs["focused_element_bid"] == obs["focused_element_bid"]
    assert sim_obs["axtree"] == obs["axtree"]


@SHOPPING
def test_a_browser_run_state_verifies_offline(shop: BrowserEnv) -> None:
    """A state a Chromium run made on the served app (its session's own history) passes
    offline verification, as the same run in-process does; the same state with the
    target edited into its start is refused."""
    from simweb.core.state import StateError
    from simweb.episodes.replay import verify_state

    tid = next(t for t in sorted(shop.app.tasks) if shop.app.tasks[t].kind == "state")
    shop.reset(seed=2, options={"task": tid})
    for action in shop.oracle_plan():
        shop.step(action)
    final = shop.snapshot()
    verdict = verify_state(shop.app, tid, 2, final)
    assert verdict["success"] and verdict["clean"]
    forged = shop.start_state()
    assert forged is not None
    forged["runtime"] = final["runtime"]
    with pytest.raises(StateError, match="recorded history"):
        verify_state(shop.app, tid, 2, forged)
