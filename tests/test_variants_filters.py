"""The filters factor of site variants (simweb.runtime.variants, docs/variants.md "The
filters"): a results page's filter form (``<form class="filters">``, every app has one)
above the results (today), in a sidebar left of them (a complementary landmark "Filters"),
above them behind a closed "Filters" disclosure, below them, or (held out) in a sidebar
right of them named "Refine" behind a "Refine results" disclosure. The same elements and
bids, the same data submitted; the oracle opens the disclosure where a plan needs it; the
in-process AX tree (both walks) and Chromium's agree."""
from __future__ import annotations

import re
from typing import Any

import pytest
from conftest import APPS, assert_walks_agree, run_plan

import simweb
from simweb.runtime.variants import FILTER_PLACES, _siblings_end, catalogue
from simweb.web import axtree

#: A results page with each app's filter form, the form's bid, its submit button, the bid
#: that opens its results, and an action on one of its fields.
PAGES = {"shopping": "/search?q=lamp", "booking": "/search?city=Lyon", "issues": "/projects/acme/billing-service/issues",
         "cms": "/admin/posts", "forum": "/search?q=the"}
FORM = {"forum": "search-filters"}
APPLY = {"forum": "s-go"}
RESULTS = {"cms": "[posts-count]", "forum": "[result-count]", "shopping": "region 'Results'"}
FIELD = {"shopping": "fill('f-max', '50')", "booking": "select_option('f-sort', 'Guest rating')",
         "issues": "fill('f-q', 'error')", "cms": "fill('f-q', 'the')", "forum": "fill('s-author', 'ann')"}
#: What each place adds to the page: its new elements' bids.
ADDED = {"above": set(), "sidebar": {"filters-side"}, "collapsed": {"filters-box", "filters-toggle"}, "below": set(),
         "refine": {"filters-side", "filters-box", "filters-toggle"}}


def _with(app: str, **want: str) -> int:
    """The first variant whose factors take these values (by label), with today's policies,
    URLs and a start signed in, and the top bar's navigation shown, unless asked."""
    cat = catalogue(app)
    names = {f.name for f in cat.factors}
    want.setdefault("sign_in", "signed-in")
    want.setdefault("menu", "bar")
    want.setdefault("pagination", "pager")   # (numbered pagers add page links)
    want.setdefault("url_scheme", next(f for f in cat.factors if f.name == "url_scheme").options[0].label)
    want = {f: v for f, v in want.items() if f in names}
    return next(k for k in range(1, cat.count) if all(cat.values(k)[f] == v for f, v in want.items())
                and cat.policies(k) == cat.policy_defaults)


def _on_page(app: str, variant: int) -> Any:
    """An env of ``variant`` on the app's results page with its filter form: the start of
    the first task (in the app's order) signed in that shows it, then a goto."""
    env = simweb.make(app, variant=variant, max_steps=100_000).unwrapped
    for tid in env.app.tasks:
        env.reset(seed=0, options={"task": tid})
        if env.state["browser"]["user"] is None:
            continue
        obs, *_ = env.step(f"goto({PAGES[app]!r})")
        assert not obs["last_action_error"], obs["last_action_error"]
        if FORM.get(app, "filters") in env.browser.page().elements:
            return env
    raise AssertionError(f"no {app} start shows {PAGES[app]}")


def _line(text: str, bid: str) -> tuple[int, str]:
    """The index and the line of ``bid`` (or of a line with ``[bid]`` or ``name '...'``
    in it) in an AX tree (-1, "" when absent)."""
    needle = bid if bid.startswith("[") or "'" in bid else f"[{bid}]"
    lines = text.splitlines()
    return next(((i, ln) for i, ln in enumerate(lines) if needle in ln), (-1, ""))


def _depth(line: str) -> int:
    return len(line) - len(line.lstrip("\t"))


# ----------------------------------------------------------------------------- the catalogue
def test_the_factor_its_options_and_its_held_out_place() -> None:
    for app in APPS:
        cat = catalogue(app)
        factor = next(f for f in cat.factors if f.name == "filters")
        assert [o.label for o in factor.options] == ["above", *FILTER_PLACES]
        assert [o.label for o in factor.options] == ["above", "sidebar", "collapsed", "below", "refine"]
        assert factor.held_out == {4}
        assert all(cat.values(r["variant"])["filters"] != "refine" for r in cat.listing("train", 200))
        assert {cat.values(k)["filters"] for k in range(40)} == set(ADDED)   # every place among the first ids
        assert cat.values(0)["filters"] == "above"


def test_the_scan_stops_where_the_forms_parent_ends() -> None:
    src = '<div><form class="filters"><input name="a"></form>\n<p>x</p>{% if y %}<ul><li>{{ a > b }}</li></ul>{% endif %}\n</div>'
    at = src.index("</form>") + len("</form>")
    assert src[_siblings_end(src, at):] == "</div>"
    src2 = '{% if c %}<form class="filters"></form><p>r</p>{% else %}<p>none</p>{% endif %}'
    at = src2.index("</form>") + len("</form>")
    assert src2[:_siblings_end(src2, at)].endswith("<p>r</p>")
    src3 = '{% block main %}<form class="filters"></form><br><img src="x"/><p>{% set n = 1 %}{{ n }}</p>{% endblock %}'
    at = src3.index("</form>") + len("</form>")
    assert src3[_siblings_end(src3, at):] == "{% endblock %}"
    assert _siblings_end("<p>a</p>", 0) == len("<p>a</p>")


# ----------------------------------------------------------------------------- the pages
@pytest.mark.parametrize("place", list(ADDED))
@pytest.mark.parametrize("app", APPS)
def test_the_form_moves_with_its_elements(app: str, place: str) -> None:
    today = _on_page(app, 0)
    env = _on_page(app, _with(app, filters=place, banner="none", breadcrumbs="none"))
    form, results = FORM.get(app, "filters"), RESULTS.get(app, "[results-count]")
    assert set(env.browser.page().elements) == set(today.browser.page().elements) | ADDED[place]
    text = env.browser.axtree()
    i_form, form_line = _line(text, form)
    i_res, _ = _line(text, results)
    assert i_res >= 0
    if place in ("above", "sidebar"):
        assert 0 <= i_form < i_res, place
    if place == "below":
        assert i_res < i_form, "the form follows the results"
    if place in ("sidebar", "refine"):
        i_side, side = _line(text, "filters-side")
        assert side.strip() == f"[filters-side] complementary '{'Filters' if place == 'sidebar' else 'Refine'}'"
        assert (i_side < i_res) == (place == "sidebar"), "a left sidebar before the results, a right one after"
    else:
        assert "complementary 'Filters'" not in text and "[filters-side]" not in text
    if place in ("collapsed", "refine"):
        i_toggle, toggle = _line(text, "filters-toggle")
        name = "Filters" if place == "collapsed" else "Refine results"
        assert toggle.strip() == f"[filters-toggle] DisclosureTriangle '{name}', expanded=False"
        assert i_form == -1, "a closed disclosure hides the form"
        assert (i_toggle < i_res) == (place == "collapsed")
        obs, *_ = env.step("click('filters-toggle')")
        assert not obs["last_action_error"] and env.browser.tab["fields"] == {"filters-box": True}
        text = env.browser.axtree()
        assert re.search(rf"\[filters-toggle\] DisclosureTriangle '{name}'(, focused)?, expanded=True", text)
        i_form, form_line = _line(text, form)
        assert i_form > _line(text, "filters-toggle")[0]
    if place == "sidebar":
        assert _depth(form_line) == _depth(_line(text, "filters-side")[1]) + 1, "the form is in the landmark"
    # every control of today's form is in the page, and only in the form
    assert _line(text, APPLY.get(app, "f-apply"))[0] > i_form


@pytest.mark.parametrize("app", APPS)
def test_a_closed_form_refuses_a_click_and_submits_todays_data_once_opened(app: str) -> None:
    """The form's fields are not clickable behind the closed disclosure (an action error,
    as in Chromium); opened, the same actions submit the same query as today's form."""
    apply = f"click({APPLY.get(app, 'f-apply')!r})"
    today = _on_page(app, 0)
    for a in (FIELD[app], apply):
        obs, *_ = today.step(a)
        assert not obs["last_action_error"], obs["last_action_error"]
    for place in ("collapsed", "refine", "sidebar", "below"):
        env = _on_page(app, _with(app, filters=place))
        url = env.browser.tab["url"]
        if place in ("collapsed", "refine"):
            obs, *_ = env.step(apply)
            assert "to be visible" in obs["last_action_error"] and env.browser.tab["url"] == url
            env.step("click('filters-toggle')")
        for a in (FIELD[app], apply):
            obs, *_ = env.step(a)
            assert not obs["last_action_error"], (place, a, obs["last_action_error"])
        assert env.browser.tab["url"] == today.browser.tab["url"] != url, place
        if place in ("collapsed", "refine"):   # the results page starts with its disclosure closed
            assert "expanded=False" in _line(env.browser.axtree(), "filters-toggle")[1]


def test_todays_site_and_the_above_place_have_no_frame() -> None:
    for app in APPS:
        for k in (0, _with(app, filters="above")):
            env = _on_page(app, k)
            assert "vfilters" not in env.browser.html() and "filters-" not in env.browser.axtree()


@pytest.mark.parametrize("place", ["collapsed", "refine"])
def test_both_walks_agree_on_a_filters_page_closed_and_open(place: str) -> None:
    if axtree._compiled_walk is None:
        pytest.skip("the compiled walk is not built")
    for app in APPS:
        env = _on_page(app, _with(app, filters=place))
        closed = env.browser.html()
        env.step("click('filters-toggle')")
        opened = env.browser.html()
        assert "<details" in opened and closed != opened
        for html in (closed, opened):
            assert_walks_agree(html)


# ----------------------------------------------------------------------------- the oracle
@pytest.mark.parametrize("app", APPS)
def test_the_oracle_solves_every_template_behind_a_closed_form(app: str) -> None:
    """Every template's oracle is a clean success on a collapsed variant and a refine one;
    a plan that acts on the filter form opens it first (apps whose oracles use the form)."""
    apply = f"click({APPLY.get(app, 'f-apply')!r})"
    today = simweb.make(app)
    uses = 0
    for i, tid in enumerate(today.app.tasks):
        today.reset(seed=i, options={"task": tid})
        uses += apply in today.oracle_plan()
    for place in ("collapsed", "refine"):
        # no confirmation step or multi-step form: the disclosure alone makes the plan change
        k = _with(app, filters=place, confirm_step="none", form_steps="one-step")
        env = simweb.make(app, variant=k)
        opened = 0
        for i, tid in enumerate(env.app.tasks):
            env.reset(seed=k + i, options={"task": tid})
            plan = env.oracle_plan()
            if apply in plan:
                assert "click('filters-toggle')" in plan[:plan.index(apply)], (app, place, tid, plan)
            opened += "click('filters-toggle')" in plan
            v = run_plan(env, plan, (app, k, tid))
            assert v["success"] and v["clean"], (app, k, tid, v)
        assert (opened > 0) == (uses > 0), (app, place, opened, uses)


# ----------------------------------------------------------------------------- Chromium
@pytest.mark.browser
@pytest.mark.parametrize("app,place", [("shopping", "collapsed"), ("issues", "refine"), ("forum", "sidebar"),
                                       ("booking", "below"), ("cms", "collapsed")])
def test_the_filters_are_the_same_in_chromium(app: str, place: str, chromium: Any) -> None:
    """On a filters variant, the AX tree in Chromium (the served site) and in-process are
    the same line for line: the page as served, a click on the closed form's button failing
    in both, the disclosure opened and closed, a field set and the form applied."""
    pytest.importorskip("playwright.sync_api")
    from simweb.serving.browser import BrowserEnv, ServedApp

    sim = _on_page(app, _with(app, filters=place))
    served = ServedApp(app, world_seed=0)
    web = BrowserEnv(app, 0, server=served, browser=chromium, screenshots=False, timeout_ms=1000,
                     max_steps=100_000)
    apply = f"click({APPLY.get(app, 'f-apply')!r})"
    closed = place in ("collapsed", "refine")
    try:
        web.restore(sim.snapshot())
        so, *_ = sim.step("noop()")
        wo, *_ = web.step("noop()")
        assert so["axtree"] == wo["axtree"]
        assert re.search(r"complementary '(Filters|Refine)'", so["axtree"]) is not None or place not in ("sidebar", "refine")
        actions = [apply, "click('filters-toggle')", "click('filters-toggle')", "click('filters-toggle')"] if closed else []
        for a in [*actions, FIELD[app], apply]:
            so, *_ = sim.step(a)
            wo, *_ = web.step(a)
            assert bool(so["last_action_error"]) == bool(wo["last_action_error"]), (a, so["last_action_error"],
                                                                                    wo["last_action_error"])
            assert so["axtree"] == wo["axtree"], a
            wt, st = web.snapshot()["browser"]["tabs"][0], sim.snapshot()["browser"]["tabs"][0]
            assert wt["url"] == st["url"], a
            if st["fields"].get("filters-box"):   # the open state is the same state (as the menu's: a details
                assert wt["fields"] == st["fields"], a   # closed again is its served default in Chromium)
        assert sim.snapshot()["browser"]["tabs"][0]["url"] != PAGES[app], "the form was applied"
    finally:
        web.close()
        served.close()
