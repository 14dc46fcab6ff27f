"""Random walks in-process and in Chromium make the same transitions (simweb.walks): for
hypothesis-drawn walk seeds on every app, the URL, the runtime/meta state and the error
class agree after every step. CI-sized: a few short walks per app, one Chromium for the
module. A divergence of a declared class (simweb.walks.DECLARED) is allowed, by name."""
from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

pytest.importorskip("playwright.sync_api")
from conftest import ACTION_TIMEOUT_MS, APPS, QUICK_TIMEOUT_MS, action_timeout
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import simweb
from simweb.serving.browser import BrowserEnv, ServedApp
from simweb.tools.walks import declared, error_class, run_walk, start_state

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def envs(chromium: Any) -> Iterator[Any]:
    made: dict[str, tuple[Any, BrowserEnv, ServedApp]] = {}

    def get(app: str) -> tuple[Any, BrowserEnv]:
        if app not in made:
            served = ServedApp(app, world_seed=0)
            web = BrowserEnv(app, 0, server=served, browser=chromium, screenshots=False, timeout_ms=ACTION_TIMEOUT_MS,
                             max_steps=100_000)
            made[app] = (simweb.make(app, seed=0, max_steps=100_000), web, served)
        sim, web, _ = made[app]
        return sim, web

    yield get
    for _, web, served in made.values():
        web.close()
        served.close()


def _where(obs: dict) -> tuple[str, str]:
    """Where a step left the tab (path and query; Chromium's error page by its URL) and the
    class of its error."""
    url = obs["url"]
    if not url.startswith("chrome-error:"):
        parts = urlsplit(url)
        url = parts.path + (f"?{parts.query}" if parts.query else "")
    return url, error_class(obs["last_action_error"])


def run_both(envs: Any, app: str, actions: list[str] | tuple[str, ...], *, before: tuple[str, ...] = (),
             per_step: Callable[[dict], Any] = _where, final: Callable[[Any], Any] | None = None) -> list[Any]:
    """The same actions in-process and in Chromium: each env of ``app`` reset (seed 0), the
    ``before`` actions run, then ``actions``, each step recorded by ``per_step`` (by default
    where it left the tab and its error class), and ``final(env)`` after the last. Asserts
    the two records are equal and returns the in-process one."""
    seen = []
    for env in envs(app):
        env.reset(seed=0)
        for action in before:
            env.step(action)
        got = [per_step(env.step(action)[0]) for action in actions]
        if final is not None:
            got.append(final(env))
        seen.append(got)
    assert seen[0] == seen[1], seen
    return seen[0]


def _fields(env: Any) -> dict[str, Any]:
    """The active tab's fields that hold a value."""
    b = env.snapshot()["browser"]
    return {k: v for k, v in b["tabs"][b["active"]]["fields"].items() if v != ""}


def _meta(env: Any) -> dict[str, Any]:
    return env.snapshot()["meta"]


@pytest.mark.parametrize("app", APPS)
def test_random_walks_agree_in_process_and_in_chromium(app: str, envs: Any) -> None:
    sim, web = envs(app)

    @settings(max_examples=3, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(seed=st.integers(min_value=0, max_value=2**31))
    def walk(seed: int) -> None:
        rng = random.Random(seed)
        result = run_walk(sim, web, start_state(sim, rng), rng, steps=8)
        d = result["divergence"]
        assert d is None or declared(d) is not None, f"{app} walk seed {seed}: {d}"

    with action_timeout(web, QUICK_TIMEOUT_MS):
        walk()


@pytest.mark.apps("shopping")
def test_a_container_click_in_chromium_lands_on_the_container(envs: Any) -> None:
    """The departments nav and the account menu are rows of links; Playwright clicks their
    centre, which HIT_CSS makes the container's own: nothing is followed, in Chromium as
    in-process (before it, Chromium followed whichever link sat at the centre)."""
    sim, web = envs("shopping")
    for env in (sim, web):
        for bid in ("nav-departments", "nav-account-menu"):
            env.reset(seed=0)
            env.step("goto('/')")
            obs, *_ = env.step(f"click({bid!r})")
            assert obs["last_action_error"] == "" and obs["url"].endswith("/"), (type(env).__name__, bid, obs["url"])


def _stay_payment(sim: Any) -> list[str]:
    """Signed in as a member, at the booking's payment page; the fills of a card."""
    from simweb.apps.booking.tasks import iso, left

    w = sim.app.world
    member = next(u for u in (w.user(i) for i in range(1, 200)) if u["tier"] == "member")
    sim.state["browser"]["user"] = member["id"]
    p, rt, d = next((pid, rt, d) for pid in w.property_ids() for rt in w.room_types_of(pid)
                    if rt["min_nights"] <= 3 for d in range(10, 300, 7) if left(rt, d, 3) > 0)
    sim.step(f"goto('/hotels/{p}?checkin={iso(d)}&checkout={iso(d + 3)}&guests=1')")
    sim.step(f"click('reserve-{rt['id']}')")
    sim.step("click('guest-submit')")
    assert sim.browser.tab["url"] == "/book/payment", sim.browser.tab["url"]
    return ["fill('card-name', 'Ada Lovelace')", "fill('card-number', '4111 1111 1111 1111')",
            "fill('card-expiry', '12/29')", "fill('card-cvv', '123')"]


def _shop_product(sim: Any) -> list[str]:
    w = sim.app.world
    p = next(p for p in (w.product(i) for i in range(1, 4000)) if p is not None and p["stock"] >= 30
             and not p["options"].get("size") and not p["options"].get("color"))
    sim.step(f"goto('/p/{p['id']}')")
    return []


def _cms_post(sim: Any) -> list[str]:
    w = sim.app.world
    post = next(p for p in (w.post(i) for i in range(1, w.max_id("posts") + 1))
                if p["status"] == "published" and p["kind"] == "post")
    sim.step(f"goto('/p/{post['id']}')")
    return ["fill('comment-name', 'X')", "fill('comment-body', 'hello')"]


def _shop_register(sim: Any) -> list[str]:
    sim.step("goto('/register')")
    return ["fill('reg-name', 'Robin Example')", "fill('reg-username', 'robin_example')",
            "fill('reg-email', 'robin@example.com')", "fill('reg-password', 'correct horse')",
            "fill('reg-confirm', 'correct horse')"]


# The invalid forms the apps' tests send unvalidated to prove the server's own checks
# (tests/sitedriver.py, Site.blocked / Site.submit_unvalidated): (app, page setup, fills,
# submit button, the field Chromium's constraint validation stops at).
BLOCKED_FORMS = [
    ("booking", _stay_payment, ["fill('pay-points', '150')"], "pay-submit", "pay-points"),   # step="100"
    ("shopping", _shop_product, ["fill('qty', '11')"], "add-to-cart", "qty"),                # max="10"
    ("shopping", _shop_product, ["fill('qty', '0')"], "add-to-cart", "qty"),                 # min="1"
    ("shopping", _shop_register, ["fill('reg-email', 'robin example.com')"], "reg-submit", "reg-email"),
    ("shopping", _shop_register, ["fill('reg-name', '')"], "reg-submit", "reg-name"),       # required
    ("cms", _cms_post, ["fill('comment-email', 'not-an-email')"], "comment-submit", "comment-email"),
]


@pytest.mark.parametrize("app,setup,fills,submit,invalid", BLOCKED_FORMS,
                         ids=[f"{a}-{f[-1]}" for a, _, f, _, _ in BLOCKED_FORMS])
def test_chromium_blocks_the_invalid_forms_the_server_tests_send(app: str, setup: Any, fills: list[str],
                                                                 submit: str, invalid: str, envs: Any) -> None:
    """Chromium does not send a form that fails constraint validation, and focuses the first
    invalid field; the in-process browser does the same (so the apps' server-side
    validation tests post those forms as a client that does not validate)."""
    if app not in APPS:
        pytest.skip(f"{app} not selected")
    sim, web = envs(app)
    sim.reset(seed=0, options={"task": None})
    base = setup(sim)
    state = sim.snapshot()
    for env in (sim, web):
        env.restore(state)
        for action in base + fills:
            obs, *_ = env.step(action)
            assert obs["last_action_error"] == "", (type(env).__name__, action, obs["last_action_error"])
        before = env.snapshot()
        obs, *_ = env.step(f"click({submit!r})")
        after = env.snapshot()
        name = type(env).__name__
        assert obs["last_action_error"] == "", (name, obs["last_action_error"])
        assert after["meta"]["requests"] == before["meta"]["requests"], f"{name} sent the form"
        assert after["runtime"] == before["runtime"] and obs["url"].endswith(state["browser"]["tabs"][0]["url"]), name
        assert obs["focused_element_bid"] == invalid, name


@pytest.mark.apps("issues")
def test_a_chromium_snapshot_reads_the_fields_of_a_page_whose_url_ends_in_an_empty_query(envs: Any) -> None:
    """Chromium shows a link to ``?`` (the issue list's "Open" tab) as ``page?``, the served
    tab as ``page``: the snapshot still reads the page's fields (it skipped them, so a
    select Chromium restored after go_back went unseen and the walks could not name the
    form-restoration class)."""
    sim, web = envs("issues")
    web.reset(seed=0)
    web.step("goto('/projects/soylent/docs/issues?state=all')")
    obs, *_ = web.step("click('state-opened')")
    assert obs["last_action_error"] == "" and web.page.url.endswith("/issues?"), web.page.url
    web.step("fill('f-author', 'someone')")
    tab = web.snapshot()["browser"]["tabs"][0]
    assert tab["fields"].get("f-author") == "someone"


@pytest.mark.apps("booking")
def test_tab_from_the_body_focuses_the_first_element_as_chromium_does(envs: Any) -> None:
    """After a navigation nothing has the focus; press() on an element that cannot take it
    sends the key to the body, where Chromium's Tab focuses the first focusable element
    (Shift+Tab the last) and a later Enter follows it. Found by the walks (booking: Tab on a
    booking's definition list, then Enter on a date shown there, went to '/' in Chromium)."""
    for key in ("Tab", "Shift+Tab"):
        got = run_both(envs, "booking", [f"press('nav-main', {key!r})", "press('nav-main', 'Enter')"],
                       before=("goto('/deals')",), per_step=lambda obs: (obs["focused_element_bid"], _where(obs)))
        assert got[0][0] != "", (key, got)


@pytest.mark.apps("issues")
def test_a_link_to_an_empty_query_adds_a_history_entry_as_in_chromium(envs: Any) -> None:
    """'page?' (a link to '?', the active milestone tab) is another URL than 'page' to
    Chromium: following it from 'page' adds a history entry, following it again from
    'page?' replaces it. Found by the walks (issues: go_back after a click on the active
    tab went back one page further in-process)."""
    got = run_both(envs, "issues", ["click('project-milestones')", "click('ms-active')", "click('ms-active')",
                                    "go_back()", "go_back()", "go_forward()"],
                   before=("goto('/projects/aperture/search-engine')",))
    assert got[3][0].endswith("/milestones") and got[4][0] == "/projects/aperture/search-engine", got


@pytest.mark.apps("issues")
def test_go_back_restores_the_form_state_and_a_self_link_keeps_forward_entries(envs: Any) -> None:
    """Chromium fills a page back in from its history entry's form state after go_back and
    go_forward (a sort chosen, the filters applied, go_back, apply again: the chosen sort
    is sent), and a link to the page itself replaces its entry but keeps those after it.
    Found by the walks (issues: the filters' sort; forum: a comment sort link, go_forward)."""
    got = run_both(envs, "issues", ["select_option('f-sort', 'Weight')", "fill('f-author', 'a@b.c')",
                                    "click('f-apply')", "go_back()", "click('f-apply')", "go_back()",
                                    "click('state-closed')", "go_back()", "click('state-opened')", "go_forward()"],
                   before=("goto('/projects/soylent/docs/issues')",), final=lambda env: _meta(env)["requests"])
    assert "sort=weight" in got[4][0] and "author=a%40b.c" in got[4][0], got


@pytest.mark.apps("forum")
def test_a_link_to_another_host_shows_chromiums_network_error_page(envs: Any) -> None:
    """A post's external link: Chromium goes to its network-error page without an action
    error or a request to the app; go_back returns, go_forward fails there again."""
    got = run_both(envs, "forum", ["click('post-url')", "go_back()", "go_forward()", "go_back()"],
                   before=("goto('/p/12542')",), final=lambda env: _meta(env)["requests"])
    assert got[0] == ("chrome-error://chromewebdata/", "none") and got[2][1] == "navigation", got
    sim, web = envs("forum")
    sim.step("go_forward()")   # a state whose tab is at the other host, shown in Chromium
    web.restore(sim.snapshot())
    obs, *_ = web.step("noop()")
    assert obs["url"] == "chrome-error://chromewebdata/" and obs["last_action_error"] == ""


@pytest.mark.apps("booking")
def test_space_on_a_date_field_opens_chromiums_picker_counted_from_today(envs: Any) -> None:
    """The premise of the declared date-picker class: in Chromium, Space on an empty date
    field opens its picker and ArrowDown then sets a date (a week after the machine's
    today, within min/max); in-process there is no picker and the field stays empty."""
    sim, web = envs("booking")
    values = []
    for env in (sim, web):
        env.reset(seed=0)
        env.step("goto('/hotels/101')")
        env.step("press('h-checkout', 'Space')")
        env.step("press('dates-form', 'ArrowDown')")   # the key goes to the focused field
        values.append(env.snapshot()["browser"]["tabs"][0]["fields"].get("h-checkout", ""))
    assert values[0] == "" and re.fullmatch(r"\d{4}-\d\d-\d\d", values[1]), values


@pytest.mark.apps("shopping")
def test_arrow_keys_step_a_number_field_as_chromium_does(envs: Any) -> None:
    """ArrowUp/ArrowDown on a number field step its value as Chromium's keyboard does: from
    empty, below or above the range, off the step grid, past the range. Measured on the
    search filters' minimum price (min=0, step=0.01)."""
    seqs = [["ArrowUp"], ["ArrowDown"], ["7", "ArrowUp"], ["-3.5", "ArrowUp"], ["-3.5", "ArrowDown"],
            ["1e3", "ArrowDown"], ["2.005", "ArrowUp"], ["2.005", "ArrowDown"], ["0", "ArrowDown"],
            ["ArrowUp", "ArrowUp", "ArrowDown", "ArrowUp"]]
    values = [run_both(envs, "shopping", [f"press('f-min', {k!r})" if k.startswith("Arrow") else f"fill('f-min', {k!r})"
                                          for k in seq], before=("goto('/search?q=lamp')",),
                       final=lambda env: _fields(env).get("f-min", ""))[-1] for seq in seqs]
    assert values[:3] == ["0.01", "0", "7.01"], values


@pytest.mark.apps("forum")
def test_go_back_onto_an_entry_that_now_redirects_restores_no_form_state(envs: Any) -> None:
    """A page left with text typed in (the search box on the compose page), then a sign-out,
    then go_back: the entry now redirects to the sign-in page, another document, and
    Chromium fills nothing back in there; the search sent next is empty on both sides.
    Found by the walks (forum and issues, seed 1)."""
    got = run_both(envs, "forum", ["goto('/messages/compose')", "fill('search-q', 'abc')", "click('nav-logout')",
                                   "go_back()", "click('search-go')"])
    assert got[3][0].startswith("/login?") and got[4][0] == "/search?q=", got


@pytest.mark.apps("issues")
def test_a_key_pressed_on_a_container_edits_the_focused_field(envs: Any) -> None:
    """press() on an element that cannot take the focus (the main nav) sends the key to the
    field that has it: Backspace after a fill deletes the password's last character, and
    the sign-in posts what is left. Found by the walks (issues, seed 1, walk 15: the
    sign-in posted the whole password in-process)."""
    got = run_both(envs, "issues", ["click('nav-logout')", "goto('/login')", "fill('login-password', 'secret')",
                                    "press('nav-main', 'Backspace')", "click('login-submit')"], final=_meta)
    assert all(error == "none" for _, error in got[:-1]), got[:-1]
    posted = [e for e in got[-1]["history"]["log"] if e.startswith('["post","/login"')]
    assert posted and '"password":"secre"' in posted[-1].replace(" ", ""), got[-1]["history"]["log"]


# Editing keys in text fields at their caret (forum's compose page: a search box, two
# one-line fields, a textarea; 'nav-account-menu' is a nav, which cannot take the focus):
# the sequence and the fields it leaves, as Chromium leaves them.
TEXT_KEYS = [
    (["fill('msg-subject', 'abc')", "press('nav-account-menu', 'Backspace')"], {"msg-subject": "ab"}),
    (["fill('msg-subject', 'abc')", "press('msg-subject', 'ArrowLeft')", "press('msg-subject', 'Space')",
      "press('msg-subject', 'ArrowUp')", "press('msg-subject', 'Backspace')"], {"msg-subject": "ab c"}),
    # press() focusing a field afresh puts its caret at the start
    (["fill('msg-subject', 'abc')", "focus('msg-to')", "press('msg-subject', 'Backspace')",
      "press('msg-subject', 'Space')"], {"msg-subject": " abc"}),
    (["fill('search-q', 'abc')", "press('search-q', 'Escape')", "press('search-q', 'ArrowRight')"], {}),
    # Tab into a field selects its text
    (["fill('msg-subject', 'xyz')", "focus('msg-to')", "press('nav-account-menu', 'Tab')",
      "press('nav-account-menu', 'Space')"], {"msg-subject": " "}),
    (["fill('msg-body', 'ab')", "press('msg-body', 'Enter')", "press('msg-body', 'ArrowUp')",
      "press('msg-body', 'Space')", "press('msg-body', 'ArrowDown')", "press('msg-body', 'Backspace')"],
     {"msg-body": " ab"}),
]


@pytest.mark.apps("forum")
def test_editing_keys_change_a_text_field_at_its_caret_as_in_chromium(envs: Any) -> None:
    """Backspace, Space, Enter (in a textarea), the arrows and Escape (in a search box) edit
    a text field at its caret as Chromium's keyboard does, the caret kept per field: at the
    end after a fill, at the start when press() focuses a field afresh, the whole text
    selected when Tab focuses it."""
    for actions, want in TEXT_KEYS:
        got = run_both(envs, "forum", actions, before=("goto('/messages/compose')",), final=_fields)
        assert got[:-1] == [("/messages/compose", "none")] * len(actions) and got[-1] == want, (actions, got)


@pytest.mark.apps("booking")
def test_backspace_empties_a_date_field_as_in_chromium(envs: Any) -> None:
    """Backspace in a date field clears the part of the date that has the focus, which
    leaves the field without a value (whatever part it was, and however it got the focus)."""
    for how in ("fill('h-checkout', '2027-01-03')", "click('h-checkout')"):
        got = run_both(envs, "booking", [how, "press('h-checkout', 'Backspace')"],
                       before=("goto('/hotels/101')", "fill('h-checkin', '2026-12-24')",
                               "fill('h-checkout', '2027-01-03')"), final=_fields)
        assert got[-1] == {"h-checkin": "2026-12-24"}, (how, got)


@pytest.mark.apps("booking")
def test_arrow_keys_and_tab_step_a_date_fields_parts_as_chromium_does(envs: Any) -> None:
    """In a date field, ArrowUp/ArrowDown step the part that has the focus (month, day or
    year), ArrowLeft/ArrowRight and Tab move between the parts, within the ranges min and
    max give each part (check-in's year is fixed at 2026, check-out's runs to 2027), wrapping
    at their ends; a day past the new month's end empties the value."""
    seqs = [
        ("h-checkin", ["ArrowDown", "ArrowDown", "ArrowUp"]),
        ("h-checkin", ["ArrowRight", "ArrowDown", "ArrowDown"]),
        ("h-checkin", ["Tab", "ArrowUp", "Tab", "ArrowUp", "Shift+Tab", "ArrowUp"]),
        ("h-checkin", ["ArrowRight", "ArrowRight", "ArrowRight", "ArrowUp"]),            # the year: fixed
        ("h-checkout", ["ArrowRight", "ArrowRight", "ArrowUp", "ArrowUp"]),              # 2026 -> 2027 -> 2026
        ("h-checkout", ["Tab", "Tab", "Tab", "ArrowUp", "ArrowLeft", "ArrowUp"]),        # the calendar button, then the year
        ("h-checkout", ["ArrowDown"] * 13),                                              # through the months, wrapping
        ("h-checkin", ["ArrowRight"] + ["ArrowUp"] * 16),                                # the 16th past the 31st, wrapping
    ]
    for bid, keys in seqs:
        got = run_both(envs, "booking", [f"press({bid!r}, {k!r})" for k in keys],
                       before=("goto('/hotels/101')", "fill('h-checkin', '2026-05-16')",
                               "fill('h-checkout', '2026-03-31')"),
                       per_step=lambda obs: _where(obs)[1], final=_fields)
        assert all(cls == "none" for cls in got[:-1]), (bid, keys, got)
    stepped = run_both(envs, "booking", ["press('h-checkout', 'ArrowDown')"],
                       before=("goto('/hotels/101')", "fill('h-checkout', '2026-03-31')"), final=_fields)
    assert stepped[-1] == {}, stepped   # February 31st: no value
    stepped = run_both(envs, "booking", ["press('h-checkin', 'ArrowDown')", "press('h-checkin', 'Tab')",
                                         "press('h-checkin', 'ArrowUp')"],
                       before=("goto('/hotels/101')", "fill('h-checkin', '2026-05-16')"), final=_fields)
    assert stepped[-1] == {"h-checkin": "2026-04-17"}, stepped


def _variant_with(app: str, **want: str) -> int:
    """The first variant of ``app`` whose factors take these values (by label), started
    signed in, with the top bar's navigation shown and today's URLs."""
    from simweb.runtime.variants import catalogue

    cat = catalogue(app)
    want = {"sign_in": "signed-in", "menu": "bar",
            "url_scheme": next(f for f in cat.factors if f.name == "url_scheme").options[0].label} | want
    return next(k for k in range(1, cat.count) if all(cat.values(k)[f] == v for f, v in want.items()))


def _date_twins(envs: Any, state: dict, actions: list[str]) -> list[Any]:
    """``actions`` from ``state`` in-process and in Chromium (restored there): after each
    step, the error class, the focused bid and the fields holding a value, then the AX tree
    after the last. Asserts both records are equal and returns the in-process one."""
    sim, web = envs("booking")
    seen = []
    for env in (sim, web):
        env.restore(state)
        got: list[Any] = []
        obs: dict = {}
        for action in actions:
            obs, *_ = env.step(action)
            got.append((error_class(obs["last_action_error"]), obs["focused_element_bid"], _fields(env)))
        seen.append(got + [obs["axtree"]])
    assert seen[0] == seen[1], (actions, seen[0][:-1], seen[1][:-1])
    return seen[0]


#: Key sequences after a click on a date field (keys, the field's value after them, None for
#: none), its value 2026-03-31 (check-out: min 2026-01-02, max 2027-01-01, so its year steps).
CLICKED = [
    (["ArrowUp"], "2027-03-31"),                          # the year
    (["ArrowLeft", "ArrowUp"], "2026-03-01"),             # the day, wrapping past the 31st
    (["Shift+Tab", "ArrowDown"], "2026-03-30"),           # the day
    (["ArrowLeft", "ArrowLeft", "ArrowDown"], None),      # the month: February 31st, no value
]


@pytest.mark.apps("booking")
def test_a_click_on_a_date_field_focuses_its_year_as_in_chromium(envs: Any) -> None:
    """Playwright clicks the centre of a date field's box, which Chromium sizes to the
    field's text and calendar button: the click focuses the year (wherever the focus was in
    the field), so the next ArrowUp steps the year. On variant 0 and on variants whose
    skin and layout differ (the catalogue's), on the hotel page and the search page."""
    sim, _ = envs("booking")
    variants = [0, _variant_with("booking", skin="night", nav_position="sidebar"),
                _variant_with("booking", skin="slate", filters="sidebar", section_order="reversed")]
    for variant in variants:
        env = simweb.make("booking", seed=0, variant=variant, max_steps=100_000).unwrapped
        env.reset(seed=0)
        for page, bid in (("/hotels/101", "h-checkout"), ("/search?city=Lyon", "s-checkout")):
            env.step(f"goto({page!r})")
            env.step(f"fill({bid!r}, '2026-03-31')")
            state = env.snapshot()
            for keys, value in CLICKED:
                actions = [f"click({bid!r})"] + [f"press({bid!r}, {k!r})" for k in keys]
                got = _date_twins(envs, state, actions)
                want = {bid: value} if value is not None else {}
                assert got[-2][2] == want and got[-2][1] == bid, (variant, page, keys, got[:-1])
    # a click on a field focused on its month, and on an empty field: the year either way
    env = sim
    env.reset(seed=0)
    env.step("goto('/hotels/101')")
    env.step("fill('h-checkout', '2026-03-31')")
    env.step("press('h-checkout', 'ArrowDown')")
    got = _date_twins(envs, env.snapshot(), ["click('h-checkout')", "press('h-checkout', 'ArrowUp')"])
    assert got[-2][2] == {}, got[:-1]    # February 31st, then 2027: the day is still past February's end
    env.reset(seed=0)
    env.step("goto('/hotels/101')")
    got = _date_twins(envs, env.snapshot(), ["click('h-checkout')", "press('h-checkout', 'ArrowUp')",
                                             "press('h-checkout', 'ArrowLeft')", "press('h-checkout', 'ArrowUp')",
                                             "press('h-checkout', 'ArrowLeft')", "press('h-checkout', 'ArrowUp')"])
    assert got[-2][2] == {"h-checkout": "2026-01-01"}, got[:-1]   # the year (min's), the day, the month


@pytest.mark.apps("booking")
def test_a_date_field_holding_parts_blocks_its_form_as_in_chromium(envs: Any) -> None:
    """A date field whose parts make no date (an ArrowUp on an empty field sets its month
    only) fails validation (badInput), required or not: the form is not sent, the URL stays
    and the field is focused, in-process as in Chromium; once its parts make a date again,
    the form goes."""
    sim, web = envs("booking")
    sim.reset(seed=0)
    sim.step("goto('/hotels/101')")
    state = sim.snapshot()
    got = _date_twins(envs, state, ["press('h-checkout', 'ArrowUp')", "click('h-submit')"])
    assert got[0][2] == {} and got[1][1] == "h-checkout", got[:-1]
    assert sim.snapshot()["browser"]["tabs"][0]["url"] == "/hotels/101"
    assert web.snapshot()["browser"]["tabs"][0]["url"] == "/hotels/101"
    # the parts cleared again (Backspace on the month): an empty date, and the form is sent
    got = _date_twins(envs, state, ["press('h-checkout', 'ArrowUp')", "press('h-checkout', 'Backspace')",
                                    "click('h-submit')"])
    assert sim.snapshot()["browser"]["tabs"][0]["url"].startswith("/hotels/101?"), got[:-1]


@pytest.mark.apps("booking")
def test_restore_puts_a_date_fields_focused_part_and_held_parts_back_into_chromium(envs: Any) -> None:
    """A state whose focus is on a date's day, year or calendar button, or whose date field
    holds parts that make no date (February 31st, a part cleared), restored into Chromium:
    the next key gives the same value, focus and AX tree as in-process."""
    sim, _ = envs("booking")
    cases = [   # (actions making the state, the next actions, the check-out field's value after them)
        (["press('h-checkout', 'ArrowRight')"], ["press('h-checkout', 'ArrowUp')"], "2026-03-01"),
        (["press('h-checkout', 'Tab')", "press('h-checkout', 'Tab')"], ["press('h-checkout', 'ArrowUp')"], "2027-03-31"),
        # the calendar button (keyboard_press: press() would focus() the field, its month),
        # where the arrows do nothing, and Shift+Tab goes back to the year
        (["press('h-checkout', 'Tab')"] * 3, ["keyboard_press('ArrowLeft')", "keyboard_press('ArrowUp')"],
         "2026-03-31"),
        (["press('h-checkout', 'Tab')"] * 3, ["keyboard_press('Shift+Tab')", "keyboard_press('ArrowUp')"],
         "2027-03-31"),
        # February 31st held, the focus on the day: the 31st wraps to the 1st
        (["press('h-checkout', 'ArrowDown')", "press('h-checkout', 'ArrowRight')"], ["press('h-checkout', 'ArrowUp')"],
         "2026-02-01"),
        # February 31st held in a field that lost the focus: press() focuses its month afresh
        (["press('h-checkout', 'ArrowDown')", "press('h-checkin', 'ArrowRight')"], ["press('h-checkout', 'ArrowUp')"],
         "2026-03-31"),
        # the month cleared (held: its day and year), the focus on the year
        (["press('h-checkout', 'Backspace')", "press('h-checkout', 'ArrowRight')", "press('h-checkout', 'ArrowRight')"],
         ["press('h-checkout', 'ArrowLeft')", "press('h-checkout', 'ArrowLeft')", "press('h-checkout', 'ArrowDown')"],
         "2026-12-31"),
    ]
    for making, next_actions, value in cases:
        sim.reset(seed=0)
        for action in ["goto('/hotels/101')", "fill('h-checkin', '2026-03-20')", "fill('h-checkout', '2026-03-31')",
                       *making]:
            sim.step(action)
        state = sim.snapshot()
        tab = state["browser"]["tabs"][0]
        assert tab.get("parts") or (tab.get("caret") or [None, 0])[1], making   # a state the restore must rebuild
        got = _date_twins(envs, state, next_actions)
        assert got[-2][2].get("h-checkout", "") == value, (making, got[:-1])
