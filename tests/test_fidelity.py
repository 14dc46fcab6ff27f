"""The in-process browser decides what an action does as Chromium (through Playwright, as
BrowserGym drives it) does, for any element the AX tree offers: container clicks, typed
inputs' value rules, keys, constraint validation, history entries and the errors of
actions Chromium cannot perform. Each rule here was measured in Chromium
(tests/test_walk_parity.py checks them there on random walks)."""
from __future__ import annotations

import json

import pytest

import simweb
from simweb.tools.walks import declared, error_class, redeclare
from simweb.web.browsing import _js_number, sanitize_value, step_date, step_number

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
    from simweb.serving.server import create_app, hit_stylesheet

    client = create_app("shopping", bid_attribute=attribute).test_client()
    resp = client.get("/static/shop.css")
    assert resp.status_code == 200
    body = resp.get_data(as_text=True)
    assert body.endswith(hit_stylesheet(attribute)) and f"[{attribute}]" in hit_stylesheet(attribute)
    assert body.startswith("body {")   # the app's own rules come first, unchanged


def _divergence(chromium_error: str, moved: bool, differs: list[str] | None = None) -> dict:
    url = "/projects/p/issues?label=feature"
    return {"differs": differs or ["error"], "chromium_moved": moved,
            "sim": {"url": url, "error": "", "error_class": "none"},
            "chromium": {"url": url, "error": chromium_error, "error_class": error_class(chromium_error)}}


def test_a_timeout_after_chromium_acted_is_the_declared_late_timeout_class() -> None:
    """Chromium's tab moved to the same URL with the same state, and Playwright's wait after
    the click outlasted the timeout: a timing artifact (late-timeout), allowed by name. The
    same timeout where Chromium did not move, or with the state differing, stays a failure."""
    late = "Locator.click: Timeout 1000ms exceeded."
    assert declared(_divergence(late, moved=True)) == "late-timeout"
    assert declared(_divergence(late, moved=False)) is None
    assert declared(_divergence(late, moved=True, differs=["error", "state"])) is None
    assert declared(_divergence("Element with bid 'x' is disabled", moved=True)) is None


def test_redeclare_classifies_a_walk_recorded_before_the_class() -> None:
    """A walk logged without ``chromium_moved``: it is derived from the steps (the tab's URL
    before the step), so an older run's log reports with today's declared classes."""
    d = _divergence("Locator.click: Timeout 1000ms exceeded.", moved=True)
    del d["chromium_moved"]
    d["class"] = "click link: error differ (none in-process, not-actionable in Chromium)"
    before = {"chromium": {"url": "/projects/p/labels"}}
    result = redeclare({"steps": [before, d], "divergence": d})
    assert result["divergence"]["class"].startswith("declared late-timeout: ")
    stayed = _divergence("Locator.click: Timeout 1000ms exceeded.", moved=True)
    del stayed["chromium_moved"]
    stayed["class"] = "click link: error differ"
    result = redeclare({"steps": [{"chromium": {"url": stayed["chromium"]["url"]}}, stayed], "divergence": stayed})
    assert result["divergence"]["class"] == "click link: error differ"


def test_a_form_sent_from_a_url_with_a_fragment_comes_from_the_page_without_it(shop) -> None:
    """Chromium's Referer never carries the fragment, so the server (and the state's
    recorded history) sees the page a form came from without it; the in-process tab keeps
    its URL's fragment, and used to pass it on (found by the walks: a go_back to an entry
    that a redirect had given a fragment, then a form posted from it)."""
    shop.reset(seed=0)
    pid = next(i for i in range(1, 500) if (p := shop.app.world.product(i)) is not None and p["stock"] > 5
               and not p["options"].get("size") and not p["options"].get("color"))
    shop.step(f"goto('/p/{pid}')")
    shop.browser.tab["url"] += "#reviews"   # as a redirect to a Location with a fragment leaves it
    shop.step("click('add-to-cart')")
    post = next(e for e in reversed(shop.snapshot()["meta"]["history"]["log"]) if e.startswith('["post"'))
    assert json.loads(post)[3] == f"/p/{pid}"


def test_fill_on_a_disabled_checkbox_waits_as_playwright_does(shop) -> None:
    """Playwright's fill waits for an input to be enabled and editable before it checks the
    input's type: on a disabled checkbox it times out (not-actionable), on an enabled one it
    says the type cannot be filled (wrong-element). Found by the walks on cms (a post's tag
    boxes, disabled for a user who cannot edit it)."""
    shop.reset(seed=0)
    shop.step("goto('/search?q=lamp')")
    obs, *_ = shop.step("fill('f-stock', 'x')")
    assert error_class(obs["last_action_error"]) == "wrong-element"
    html = shop.browser.html().replace('bid="f-stock"', 'bid="f-stock" disabled', 1)
    shop.browser._html, shop.browser._page = html, None   # the same page with the box disabled
    obs, *_ = shop.step("fill('f-stock', 'x')")
    assert error_class(obs["last_action_error"]) == "not-actionable"


def test_check_or_uncheck_already_in_state_is_done_even_disabled(shop) -> None:
    """Playwright's check/uncheck reads the box's state first and returns at once when it
    is already the wanted one, before waiting for the box to be visible or enabled: an
    uncheck on a disabled, unchecked box succeeds and changes nothing; a change of state on
    it times out (not-actionable). Found by the walks on cms (uncheck on a disabled tag box)."""
    shop.reset(seed=0)
    shop.step("goto('/search?q=lamp')")
    html = shop.browser.html().replace('bid="f-stock"', 'bid="f-stock" disabled', 1)
    shop.browser._html, shop.browser._page = html, None   # the same page with the box disabled
    before = _requests(shop)
    obs, *_ = shop.step("uncheck('f-stock')")
    assert obs["last_action_error"] == "" and _requests(shop) == before
    obs, *_ = shop.step("check('f-stock')")
    assert error_class(obs["last_action_error"]) == "not-actionable"
    assert obs["last_action_error"] and _requests(shop) == before


@pytest.mark.parametrize("bid", ["f-sort", "f-apply"])
def test_fill_on_any_disabled_element_waits_before_its_kind_is_checked(shop, bid: str) -> None:
    """Playwright's fill waits for the element to be visible and enabled (and a form
    control to be editable) before it looks at its kind, for every element, not only an
    input: a disabled select or button times out (not-actionable); an enabled one is the
    wrong kind of element. Found by the walks on cms (a fill on a post's category select,
    disabled for a user who cannot edit the post)."""
    shop.reset(seed=0)
    shop.step("goto('/search?q=lamp')")
    obs, *_ = shop.step(f"fill({bid!r}, 'x')")
    assert error_class(obs["last_action_error"]) == "wrong-element"
    html = shop.browser.html().replace(f'bid="{bid}"', f'bid="{bid}" disabled', 1)
    shop.browser._html, shop.browser._page = html, None   # the same page with it disabled
    obs, *_ = shop.step(f"fill({bid!r}, 'x')")
    assert error_class(obs["last_action_error"]) == "not-actionable"


def test_go_back_and_forward_restore_the_entrys_form_state(shop) -> None:
    """Chromium saves a page's form state with its history entry when the page is left
    (by a link, a submission or a history step) and fills the page back in when go_back or
    go_forward returns to the entry; a new navigation starts with the server's values.
    Found by the walks on issues (a sort chosen, the filters applied, go_back, then the
    filters applied again: Chromium sent the restored sort) and every app."""
    shop.reset(seed=0)
    shop.step("goto('/search?q=lamp')")
    shop.step("select_option('f-sort', 'Newest')")
    shop.step("fill('f-min', '5')")
    chosen = dict(shop.browser.tab["fields"])
    shop.step("click('f-apply')")               # a GET submission: a new entry
    assert "sort=newest" in shop.browser.tab["url"] and shop.browser.tab["fields"] == {}
    shop.step("fill('f-max', '90')")
    shop.step("go_back()")
    assert shop.browser.tab["fields"] == chosen
    obs, *_ = shop.step("click('f-apply')")     # the restored values are what is sent
    assert "sort=newest" in obs["url"] and "min=5" in obs["url"]
    shop.step("go_back()")                      # entry 2 (new: f-max's entry went) left unchanged
    shop.step("go_forward()")
    assert shop.browser.tab["fields"] == {}    # nothing to restore there
    shop.step("fill('f-max', '90')")
    shop.step("go_back()")
    assert shop.browser.tab["fields"] == chosen
    shop.step("go_forward()")
    assert shop.browser.tab["fields"] == {"f-max": "90"}   # each entry its own state
    shop.step("go_back()")
    shop.step("goto('/')")
    shop.step("goto('/search?q=lamp')")         # a navigation, not a traversal: the server's values
    assert shop.browser.tab["fields"] == {}
    state = shop.snapshot()
    assert state["browser"]["tabs"][0]["history"] == ["about:blank", "/", "/search?q=lamp", "/", "/search?q=lamp"]
    assert state["browser"]["tabs"][0]["saved_fields"] == {"2": chosen}   # the entries after it went
    shop.app.validator.check(state)


def test_a_navigation_to_the_page_itself_keeps_the_entries_after_it(shop) -> None:
    """A link (or goto) to the URL the tab shows replaces the current entry, and Chromium
    keeps the entries after it: go_forward still reaches them. Found by the walks on forum
    (go_back, then the comment sort link of the page itself, then go_forward)."""
    shop.reset(seed=0)
    shop.step("goto('/search?q=lamp')")
    shop.step("goto('/cart')")
    shop.step("go_back()")
    before = list(shop.browser.tab["history"])
    obs, *_ = shop.step("goto('/search?q=lamp')")
    assert shop.browser.tab["history"] == before and shop.browser.tab["cursor"] == len(before) - 2
    obs, *_ = shop.step("go_forward()")
    assert obs["url"].endswith("/cart")


def test_a_link_to_another_host_shows_the_network_error_page(shop) -> None:
    """No host but the app's resolves: Chromium follows a link to another host to its
    network-error page (chrome-error://chromewebdata/, no bids) without an action error
    and without a request to the app, as a new history entry; go_back returns to the
    page, go_forward shows the error page again and reports the error; a goto there fails
    and stays. Found by the walks on forum (a post's external link)."""
    import re

    shop.reset(seed=0)
    shop.step("goto('/search?q=lamp')")
    m = re.search(r'<a bid="([^"]+)" href="(/[^"]*)"', shop.browser.html())
    assert m is not None
    html = shop.browser.html().replace(m.group(0), f'<a bid="{m.group(1)}" href="https://news.example.net/a?b=1#c"', 1)
    shop.browser._html, shop.browser._page = html, None   # the same page, the link leading elsewhere
    before, entries = _requests(shop), len(shop.browser.tab["history"])
    obs, *_ = shop.step(f"click({m.group(1)!r})")
    assert obs["last_action_error"] == "" and obs["url"] == "chrome-error://chromewebdata/"
    assert _requests(shop) == before and len(shop.browser.tab["history"]) == entries + 1
    assert "[" not in obs["axtree"] and shop.browser.tab["history"][-1] == "https://news.example.net/a?b=1"
    obs, *_ = shop.step("go_back()")
    assert obs["url"].endswith("/search?q=lamp") and obs["last_action_error"] == ""
    obs, *_ = shop.step("go_forward()")
    assert obs["url"] == "chrome-error://chromewebdata/" and error_class(obs["last_action_error"]) == "navigation"
    assert _requests(shop) == before + 1   # the go_back's GET only
    obs, *_ = shop.step("go_back()")
    obs, *_ = shop.step("goto('https://news.example.net/a')")
    assert error_class(obs["last_action_error"]) == "navigation" and obs["url"].endswith("/search?q=lamp")


def test_a_date_chromium_picked_after_space_on_a_date_field_is_the_declared_date_picker_class() -> None:
    """Space on a date field opens Chromium's picker, whose arrows pick a date counted from
    the machine's real today (tests/test_walk_parity.py shows it): a divergence after it,
    with a date only Chromium has, is declared; without such a date, or on an action's
    error, it stays a failure. Found by the walks on booking (Space on the hotel page's
    check-out, then ArrowDown, then Enter sent check-out=today+7 in Chromium)."""
    d = {"differs": ["url", "state"], "after_date_picker": True, "chromium_only_dates": True,
         "sim": {"url": "/hotels/101?checkout=", "error": "", "error_class": "none"},
         "chromium": {"url": "/hotels/101?checkout=2026-12-12", "error": "", "error_class": "none"}}
    assert declared(d) == "date-picker"
    assert declared(d | {"chromium_only_dates": False}) is None
    assert declared(d | {"after_date_picker": False}) is None
    assert declared(d | {"differs": ["url", "error"]}) is None


@pytest.mark.parametrize("value,attrs,n,stepped", [
    ("", {"min": "0", "step": "0.01"}, 1, "0.01"), ("", {"min": "0", "step": "0.01"}, -1, "0"),
    ("7", {"min": "0", "step": "0.01"}, 1, "7.01"), ("-3.5", {"min": "0", "step": "0.01"}, 1, "0"),
    ("-3.5", {"min": "0", "step": "0.01"}, -1, "-3.5"), ("1e3", {"min": "0", "step": "0.01"}, -1, "999.99"),
    ("", {"min": "-100", "step": "3"}, 1, "2"), ("", {"min": "-100", "step": "3"}, -1, "-1"),
    ("", {"min": "1", "max": "10"}, -1, "1"), ("10", {"min": "1", "max": "10"}, 1, "10"),
    ("2.5", {}, 1, "3"), ("2.5", {}, -1, "2"), ("", {"step": "any"}, 1, "1"),
])
def test_arrows_step_a_number_as_chromium(value: str, attrs: dict, n: int, stepped: str) -> None:
    """Chromium's keyboard stepping of a number input (the first six measured in
    tests/test_walk_parity.py, the min=-100 step=3 pair from Chromium's own comment)."""
    assert step_number(value, attrs, n) == stepped


def test_arrow_up_on_a_number_field_steps_it(shop) -> None:
    shop.reset(seed=0)
    shop.step("goto('/search?q=lamp')")
    shop.step("press('f-min', 'ArrowUp')")
    shop.step("press('f-min', 'ArrowUp')")
    assert shop.browser.tab["fields"]["f-min"] == "0.02"
    obs, *_ = shop.step("press('f-min', 'Enter')")
    assert "min=0.02" in obs["url"]


@pytest.mark.parametrize("value,attrs,part,n,stepped", [
    ("2026-05-16", {}, 0, -1, "2026-04-16"), ("2026-05-16", {}, 1, -1, "2026-05-15"),
    ("2026-05-16", {}, 2, 1, "2027-05-16"), ("2026-01-10", {}, 0, -1, "2026-12-10"),
    ("2026-03-31", {}, 0, -1, ""), ("2026-12-31", {}, 1, 1, "2026-12-01"), ("", {}, 0, 1, ""),
    ("2026-05-16", {"min": "2026-01-01", "max": "2026-12-31"}, 2, 1, "2026-05-16"),
    ("2026-12-31", {"min": "2026-01-02", "max": "2027-01-01"}, 2, 1, "2027-12-31"),
    ("2026-05-16", {"min": "2026-05-10", "max": "2026-05-20"}, 0, -1, "2026-05-16"),
    ("2026-05-20", {"min": "2026-05-10", "max": "2026-05-20"}, 1, 1, "2026-05-10"),
])
def test_arrows_step_a_date_part_as_chromium(value: str, attrs: dict, part: int, n: int, stepped: str) -> None:
    """Chromium's keyboard stepping of a date field's part (month 0, day 1, year 2), each
    case measured in Chromium: wrapping within the part's range, the ranges min and max
    give, a day past the month's end leaving no value."""
    assert step_date(value, attrs, part, n) == stepped
