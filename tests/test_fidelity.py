"""The in-process browser decides what an action does as Chromium (through Playwright, as
BrowserGym drives it) does, for any element the AX tree offers: container clicks, typed
inputs' value rules, keys, constraint validation, history entries and the errors of
actions Chromium cannot perform. Each rule here was measured in Chromium
(tests/test_walk_parity.py checks them there on random walks)."""
from __future__ import annotations

import pytest

import simweb
from simweb.browsing import _js_number, sanitize_value
from simweb.walks import error_class

pytestmark = pytest.mark.apps("shopping")


@pytest.fixture(scope="module")
def shop() -> simweb.env.SimEnv:
    return simweb.make("shopping", seed=0, max_steps=10_000)


def _requests(env: simweb.env.SimEnv) -> int:
    return env.snapshot()["meta"]["requests"]


@pytest.mark.parametrize("kind,text,stored", [
    ("date", "10", ""), ("date", "2026-12-24", "2026-12-24"), ("date", " 2026-12-24 ", "2026-12-24"),
    ("date", "2026-02-30", ""), ("date", "24/12/2026", ""), ("time", "25:00", ""), ("time", "10:30", "10:30"),
    ("month", "2026-12", "2026-12"), ("week", "x", ""), ("datetime-local", "2026-12-24T10:30", "2026-12-24T10:30"),
    ("number", " 7 ", "7"), ("number", "1e3", "1e3"), ("number", "Infinity", ""), ("email", " a@b.c ", "a@b.c"),
    ("text", "two\nlines", "twolines"), ("textarea", "two\nlines", "two\nlines"),
])
def test_fill_stores_what_chromium_keeps(kind: str, text: str, stored: str) -> None:
    """Chromium's value sanitization: an invalid date or time becomes empty, without an
    error (Playwright's fill does not refuse it); surrounding spaces go from numbers,
    emails and dates; line breaks from one-line fields."""
    assert sanitize_value(kind, text) == stored


@pytest.mark.parametrize("text,ok", [("42", True), ("-3.5", True), ("", True), ("0x10", True), (" 4 ", True),
                                     ("abc", False), ("1,5", False), ("2026-12-24", False), ("1_0", False)])
def test_number_fill_refused_as_playwright_refuses(text: str, ok: bool) -> None:
    """Playwright refuses a number input's fill when JavaScript's Number(text) is NaN."""
    assert _js_number(text) is ok


def test_click_on_a_container_does_not_follow_a_child(shop) -> None:
    """The departments nav: its centre is the nav's own (HIT_CSS), so nothing happens;
    before, Chromium followed the link at the centre."""
    shop.reset(seed=0)
    shop.step("goto('/')")
    before = _requests(shop)
    obs, *_ = shop.step("click('nav-departments')")
    assert obs["last_action_error"] == "" and obs["url"].endswith("/") and _requests(shop) == before


def test_hidden_and_wrong_targets_fail_with_chromium_error_classes(shop) -> None:
    shop.reset(seed=0)
    shop.step("goto('/p/2990')")
    obs, *_ = shop.step("fill('qty', 'abc')")
    assert error_class(obs["last_action_error"]) == "wrong-element"
    obs, *_ = shop.step("fill('nav-home', 'x')")
    assert error_class(obs["last_action_error"]) == "wrong-element"
    obs, *_ = shop.step("select_option('qty', 'x')")
    assert error_class(obs["last_action_error"]) == "wrong-element"
    obs, *_ = shop.step("uncheck('nav-home')")
    assert error_class(obs["last_action_error"]) == "wrong-element"


def test_constraint_validation_blocks_a_submission(shop) -> None:
    """A number over its max: Chromium shows its bubble and sends nothing."""
    shop.reset(seed=0)
    shop.step("goto('/p/2990')")
    obs, *_ = shop.step("fill('qty', '42')")
    assert obs["last_action_error"] == ""
    before = _requests(shop)
    obs, *_ = shop.step("click('add-to-cart')")
    assert _requests(shop) == before and obs["focused_element_bid"] == "qty"
    shop.step("fill('qty', '2')")
    shop.step("click('add-to-cart')")
    assert _requests(shop) > before


def test_press_goes_to_what_can_take_focus(shop) -> None:
    """press() on a container leaves the focus where it was and the key acts there: Enter
    in the search field submits its form."""
    shop.reset(seed=0)
    shop.step("goto('/')")
    shop.step("fill('search-q', 'lamp')")
    obs, *_ = shop.step("press('nav-departments', 'Enter')")
    assert "/search?q=lamp" in obs["url"]


def test_history_entries_as_chromium_makes_them(shop) -> None:
    """A link to the page itself replaces its entry; a form submission to the same URL adds one."""
    shop.reset(seed=0)
    shop.step("goto('/')")
    shop.step("goto('/search?q=lamp')")
    shop.step("fill('search-q', 'lamp')")
    shop.step("click('search-go')")
    obs, *_ = shop.step("go_back()")
    assert obs["url"].endswith("/search?q=lamp")
    shop.step("click('nav-home')")
    shop.step("click('nav-home')")
    obs, *_ = shop.step("go_back()")
    assert obs["url"].endswith("/search?q=lamp")


def test_a_history_entry_that_redirects_takes_the_url_it_ends_at(shop) -> None:
    """Back to a page that now redirects (to sign in): Chromium's entry becomes the sign-in
    URL, so going back to it later asks for that URL only (one request, not two)."""
    shop.reset(seed=0)
    shop.step("goto('/account')")       # signed in: the account page
    shop.step("click('nav-logout')")    # signed out, on /
    obs, *_ = shop.step("go_back()")    # /account now sends to /login?next=/account
    tab = shop.snapshot()["browser"]["tabs"][0]
    assert tab["url"] == "/login?next=/account"
    assert tab["history"][tab["cursor"]] == "/login?next=/account" and "/account" not in tab["history"]


def test_arrows_step_a_closed_select(shop) -> None:
    """Any arrow key on a focused, closed select moves its choice (Linux Chromium)."""
    shop.reset(seed=0)
    shop.step("goto('/search?q=lamp')")
    obs, *_ = shop.step("press('f-sort', 'ArrowRight')")
    fields = shop.snapshot()["browser"]["tabs"][0]["fields"]
    assert fields.get("f-sort") not in (None, "relevance")


def test_a_query_only_link_replaces_the_query(shop) -> None:
    """href="?" on /search?q=lamp is /search (Chromium); urljoin kept ?q=lamp."""
    shop.reset(seed=0)
    shop.step("goto('/search?q=lamp')")
    assert shop.browser._absolute_path("?") == "/search"
    assert shop.browser._absolute_path("?page=2") == "/search?page=2"


@pytest.mark.parametrize("attribute", ["bid", "data-simweb-bid"])
def test_every_served_stylesheet_ends_with_the_hit_rule(attribute: str) -> None:
    """The hit rule (simweb.server.HIT_CSS) rides on each app stylesheet, for the pages' bid
    attribute: BrowserEnv's ``bid`` and `simweb serve`'s ``data-simweb-bid``."""
    from simweb.server import create_app, hit_stylesheet

    client = create_app("shopping", bid_attribute=attribute).test_client()
    resp = client.get("/static/shop.css")
    assert resp.status_code == 200
    body = resp.get_data(as_text=True)
    assert body.endswith(hit_stylesheet(attribute)) and f"[{attribute}]" in hit_stylesheet(attribute)
    assert body.startswith("body {")   # the app's own rules come first, unchanged
