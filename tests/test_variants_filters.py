"""The filters factor of site variants (simweb.runtime.variants, docs/variants.md "The
filters"): a results page's filter form (``<form class="filters">``, every app has one)
above the results (today), in a sidebar left of them (a complementary landmark "Filters"),
above them behind a closed "Filters" disclosure, below them, or (held out) in a sidebar
right of them named "Refine" behind a "Refine results" disclosure, or above them as a bar of
closed dropdowns, one per field group of the form. The same elements and
bids, the same data submitted; the oracle opens the disclosure where a plan needs it; the
in-process AX tree (both walks) and Chromium's agree."""
from __future__ import annotations

import contextlib
import re
from typing import Any

import pytest
from conftest import (
    APPS,
    QUICK_TIMEOUT_MS,
    action_timeout,
    assert_every_oracle_solves,
    assert_walks_agree,
    run_plan,
    served_browser,
)

import simweb
from simweb.runtime import variant_filters
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
         "refine": {"filters-side", "filters-box", "filters-toggle"},
         "dropdowns": set()}   # (and its dropdowns: filters-drop-N, filters-drop-N-box)


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
        assert [o.label for o in factor.options] == ["above", "sidebar", "collapsed", "below", "dropdowns", "refine"]
        assert factor.held_out == {5}
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
    added = set(env.browser.page().elements) - set(today.browser.page().elements)
    assert set(env.browser.page().elements) == set(today.browser.page().elements) | added
    if place == "dropdowns":
        assert added and all(b.startswith(variant_filters.DROP) for b in added), added
    else:
        assert added == ADDED[place]
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
    if place == "dropdowns":   # above the results, every dropdown closed in the form, its field hidden
        assert 0 <= i_form < i_res and _line(text, FIELD[app].split("'")[1])[0] == -1
        drops = [ln.strip() for ln in text.splitlines() if f"[{variant_filters.DROP}" in ln and "DisclosureTriangle" in ln]
        assert drops and all(d.endswith("expanded=False") for d in drops), drops
        assert all(_depth(_line(text, d.split("]")[0][1:])[1]) == _depth(form_line) + 2 for d in drops)
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
    field = FIELD[app].split("'")[1]
    for place in ("collapsed", "refine", "sidebar", "below", "dropdowns"):
        env = _on_page(app, _with(app, filters=place))
        url = env.browser.tab["url"]
        if place in ("collapsed", "refine"):
            obs, *_ = env.step(apply)
            assert "to be visible" in obs["last_action_error"] and env.browser.tab["url"] == url
            env.step("click('filters-toggle')")
        if place == "dropdowns":   # the button stays in the bar; the field is in its closed dropdown
            fields = dict(env.browser.tab["fields"])
            obs, *_ = env.step(FIELD[app])
            assert "to be visible" in obs["last_action_error"] and env.browser.tab["fields"] == fields
            summaries = env.browser.summaries_to_show(field)
            assert summaries is not None and len(summaries) == 1 and summaries[0].startswith(variant_filters.DROP)
            obs, *_ = env.step(f"click({summaries[0]!r})")
            assert not obs["last_action_error"] and env.browser.tab["fields"] == {f"{summaries[0]}-box": True}
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


@pytest.mark.parametrize("app", APPS)
def test_every_field_group_is_a_dropdown_named_by_its_label(app: str) -> None:
    """On a dropdowns variant every visible control of today's form is in exactly one closed
    dropdown of the bar, whose summary is named by the group's label or legend as the page
    shows it; opening it shows the control (both AX walks agree, closed and open); the
    form's button and links stay shown."""
    today = _on_page(app, 0)
    env = _on_page(app, _with(app, filters="dropdowns"))
    tree = today.browser._dom_node(FORM.get(app, "filters"))
    controls = [n.attributes["bid"] for n in tree.css("input, select, textarea")
                if n.attributes.get("type") != "hidden" and n.attributes.get("bid")]
    assert controls
    assert_walks_agree(env.browser.html())
    for ctl in controls:
        env = _on_page(app, _with(app, filters="dropdowns"))
        assert ctl not in env.browser.axtree() and ctl in today.browser.axtree()
        summaries = env.browser.summaries_to_show(ctl)
        assert summaries is not None and len(summaries) == 1, (ctl, summaries)
        drop = summaries[0]
        assert re.fullmatch(rf"{variant_filters.DROP}\d+(-\d+)?", drop), drop
        name = _line(env.browser.axtree(), drop)[1].strip()
        group = env.browser._dom_node(f"{drop}-box")
        label = group.css_first("legend") or group.css_first("label")
        assert name == f"[{drop}] DisclosureTriangle '{' '.join(label.text().split())}', expanded=False", name
        obs, *_ = env.step(f"click({drop!r})")
        assert not obs["last_action_error"]
        assert f"[{ctl}]" in obs["axtree"] and f"[{drop}] DisclosureTriangle" in obs["axtree"]
        assert_walks_agree(env.browser.html())
    assert f"[{APPLY.get(app, 'f-apply')}]" in env.browser.axtree()


def test_the_dropdowns_rewrite_groups_fields_labels_and_loops() -> None:
    """A fieldset, a paragraph with a control, a label and the controls after it, groups
    in a block and in a loop (the loop's index in their bids); hidden fields, the button
    and a link stay in the bar."""
    form = ('<form class="filters" action="/s"><input type="hidden" name="q" value="{{ q }}">'
            '<fieldset><legend>Brand</legend><label><input type="checkbox" name="b"> A</label></fieldset>'
            '{% for n in ns %}<p><label for="a-{{ n }}">{{ n|capitalize }}</label><select name="a"></select></p>{% endfor %}'
            '{% if x %}<label for="t">Tag</label><select id="t" name="t"></select>{% endif %}'
            '<p><label><input type="checkbox" name="s"> In stock</label></p><p>note</p>'
            '<button type="submit">Go</button><a href="/s">Clear</a></form>')
    assert variant_filters.dropdowns(form) == (
        '<form class="filters" action="/s"><input type="hidden" name="q" value="{{ q }}">'
        '<details bid="filters-drop-1-box" class="vdrop" name="filters-drops"><summary bid="filters-drop-1">Brand</summary>'
        '<fieldset><legend>Brand</legend><label><input type="checkbox" name="b"> A</label></fieldset></details>'
        '{% for n in ns %}<details bid="filters-drop-2-{{ loop.index }}-box" class="vdrop" name="filters-drops">'
        '<summary bid="filters-drop-2-{{ loop.index }}">{{ n|capitalize }}</summary>'
        '<p><label for="a-{{ n }}">{{ n|capitalize }}</label><select name="a"></select></p></details>{% endfor %}'
        '{% if x %}<details bid="filters-drop-3-box" class="vdrop" name="filters-drops"><summary bid="filters-drop-3">Tag</summary>'
        '<label for="t">Tag</label><select id="t" name="t"></select></details>{% endif %}'
        '<details bid="filters-drop-4-box" class="vdrop" name="filters-drops"><summary bid="filters-drop-4">In stock</summary>'
        '<p><label><input type="checkbox" name="s"> In stock</label></p></details><p>note</p>'
        '<button type="submit">Go</button><a href="/s">Clear</a></form>')


def _drops(text: str) -> list[str]:
    """The dropdowns' summary bids in an AX tree, in its order."""
    return re.findall(rf"\[({variant_filters.DROP}[\d-]+)\] DisclosureTriangle", text)


def _expanded(text: str) -> dict[str, bool]:
    """Each dropdown's summary bid -> whether the AX tree shows it expanded."""
    return {m.group(1): m.group(2) == "True"
            for m in re.finditer(rf"\[({variant_filters.DROP}[\d-]+)\] DisclosureTriangle .*expanded=(True|False)", text)}


@pytest.mark.parametrize("app", APPS)
def test_opening_a_dropdown_closes_the_one_open(app: str) -> None:
    """The bar's dropdowns share a name (HTML's exclusive accordion): opening one closes the
    one open, whether a click or Enter on its summary opens it; its fields hide again and
    the tab's UI state keeps only the open one (as Chromium reports it); a field of the
    closed dropdown is refused until its summary, which the oracle's planning finds, opens
    it again (closing the other)."""
    env = _on_page(app, _with(app, filters="dropdowns"))
    assert 'name="filters-drops"' in env.browser.html()
    a, b = _drops(env.browser.axtree())[:2]
    inside = {d: next(bid for bid, el in env.browser.page().elements.items()
                      if el.tag in ("input", "select", "textarea") and el.input_type != "hidden"
                      and env.browser.summaries_to_show(bid) == [d]) for d in (a, b)}
    for action, want in ((f"click({a!r})", {a: True}), (f"click({b!r})", {b: True}),
                         (f"press({a!r}, 'Enter')", {a: True}), (f"click({a!r})", {})):
        obs, *_ = env.step(action)
        assert not obs["last_action_error"], (action, obs["last_action_error"])
        text = obs["axtree"]
        assert _expanded(text) == {d: d in want for d in _drops(text)}, (action, _expanded(text))
        assert {k: v for k, v in env.browser.tab["fields"].items() if v} == {f"{d}-box": True for d in want}
        for d, field in inside.items():
            assert (f"[{field}]" in text) == (d in want), (action, field)
    env.step(f"click({b!r})")
    obs, *_ = env.step(f"click({inside[a]!r})")
    assert "to be visible" in obs["last_action_error"]
    assert env.browser.summaries_to_show(inside[a]) == [a]
    env.step(f"click({a!r})")
    assert _expanded(env.browser.axtree())[b] is False and f"[{inside[a]}]" in env.browser.axtree()
    assert env.browser.tab["fields"] == {f"{a}-box": True}, "b, served closed, is back to its served state"


def test_a_fork_keeps_the_page_with_its_dropdown_open_and_stays_independent() -> None:
    """A fork taken with a dropdown open starts from the parent's page as shown (the HTML
    with the details opened, not rebuilt), and what either then opens or closes is its own."""
    env = _on_page("shopping", _with("shopping", filters="dropdowns"))
    a, b = _drops(env.browser.axtree())[:2]
    env.step(f"click({a!r})")
    shown = env.browser.html()
    child = env.fork()
    assert child.browser.html() is shown
    assert child.browser.axtree() == env.browser.axtree()
    child.step(f"click({b!r})")
    assert _expanded(child.browser.axtree())[a] is False and _expanded(child.browser.axtree())[b] is True
    assert env.browser.html() is shown
    assert {d for d, open_ in _expanded(env.browser.axtree()).items() if open_} == {a}


def test_the_exclusive_accordion_follows_the_standard() -> None:
    """A name group is the details of one non-empty ``name``, compared exactly, anywhere in
    the page (Chromium 156, measured: the same opens and closes): opening one closes the
    others of its group only, a details served open included (its state then says closed);
    opening a details inside another of its own name closes the outer one, so the planned
    clicks that would show what the inner one holds do not."""
    env = _on_page("shopping", 0)
    br = env.browser
    br._html = ('<html><body><main>'
                '<details bid="a" name="g"><summary bid="sa">A</summary><p bid="pa">a</p></details>'
                '<details bid="b" name="g" open><summary bid="sb">B</summary><p bid="pb">b</p></details>'
                '<details bid="c" name="G"><summary bid="sc">C</summary>'
                '<details bid="e" name="g"><summary bid="se">E</summary><p bid="pe">e</p></details></details>'
                '<details bid="d"><summary bid="sd">D</summary><p bid="pd">d</p></details>'
                '<details bid="f" name="k"><summary bid="sf">F</summary>'
                '<details bid="h" name="k"><summary bid="sh">H</summary><p bid="ph">h</p></details></details>'
                '</main></body></html>')
    br._page = None
    br.tab["fields"] = {}

    def opened() -> set[str]:
        return {bid for bid, el in br.page().elements.items() if el.tag == "details" and br._is_open(el)}

    assert opened() == {"b"}
    assert br.summaries_to_show("pe") == ["sc", "se"]   # E opens (closing B) inside C, another name
    assert br.summaries_to_show("ph") is None   # H would close F, which holds it
    for summary, want in (("sa", {"a"}), ("sd", {"a", "d"}), ("sc", {"a", "c", "d"}), ("se", {"c", "d", "e"}),
                          ("sb", {"b", "c", "d"}), ("sb", {"c", "d"})):
        assert br.execute(f"click({summary!r})") is None, summary
        assert opened() == want, (summary, opened())
    assert br.tab["fields"]["b"] is False and "a" not in br.tab["fields"]


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
    """Every template's oracle is a clean success on a collapsed variant, a refine one and
    a dropdowns one; a plan that acts on the filter form opens it (or its dropdowns) first
    (apps whose oracles use the form)."""
    apply = f"click({APPLY.get(app, 'f-apply')!r})"
    today = simweb.make(app)
    uses = 0
    for i, tid in enumerate(today.app.tasks):
        today.reset(seed=i, options={"task": tid})
        uses += apply in today.oracle_plan()
    for place in ("collapsed", "refine", "dropdowns"):
        # no confirmation step or multi-step form: the disclosure alone makes the plan change
        k = _with(app, filters=place, confirm_step="none", form_steps="one-step")
        env = simweb.make(app, variant=k)
        opened = 0
        toggle = "click('filters-toggle')" if place != "dropdowns" else f"click('{variant_filters.DROP}"
        for i, tid in enumerate(env.app.tasks):
            env.reset(seed=k + i, options={"task": tid})
            plan = env.oracle_plan()
            if apply in plan and place != "dropdowns":
                assert toggle in plan[:plan.index(apply)], (app, place, tid, plan)
            opened += any(a.startswith(toggle) for a in plan)
            v = run_plan(env, plan, (app, k, tid))
            assert v["success"] and v["clean"], (app, k, tid, v)
        assert (opened > 0) == (uses > 0), (app, place, opened, uses)


@pytest.mark.parametrize("app", APPS)
def test_every_oracle_solves_the_first_dropdowns_variants(app: str) -> None:
    """Every template's oracle is a clean success on the app's first dropdowns variants of
    each split, whatever their other factors (a confirmation step, two-page forms, a login
    wall): a plan that sets fields of two dropdowns reopens the first after the second
    closed it."""
    cat = catalogue(app)
    for split in ("train", "test"):
        k = next(k for k in range(1, cat.count) if cat.values(k)["filters"] == "dropdowns" and cat.split(k) == split)
        assert_every_oracle_solves(app, k)


# ----------------------------------------------------------------------------- Chromium
@pytest.mark.browser
@pytest.mark.parametrize("app,place", [("shopping", "collapsed"), ("issues", "refine"), ("forum", "sidebar"),
                                       ("booking", "below"), ("cms", "collapsed"), ("forum", "dropdowns"),
                                       ("issues", "dropdowns"), ("shopping", "dropdowns")])
def test_the_filters_are_the_same_in_chromium(app: str, place: str, chromium: Any) -> None:
    """On a filters variant, the AX tree in Chromium (the served site) and in-process are
    the same line for line: the page as served, a click on the closed form's button failing
    in both, the disclosure opened and closed, a field set and the form applied."""
    pytest.importorskip("playwright.sync_api")

    sim = _on_page(app, _with(app, filters=place))
    apply = f"click({APPLY.get(app, 'f-apply')!r})"
    closed = place in ("collapsed", "refine")
    field = FIELD[app].split("'")[1]
    drop = (sim.browser.summaries_to_show(field) or ["?"])[0]
    with served_browser(app, chromium) as web:
        web.restore(sim.snapshot())
        so, *_ = sim.step("noop()")
        wo, *_ = web.step("noop()")
        assert so["axtree"] == wo["axtree"]
        assert re.search(r"complementary '(Filters|Refine)'", so["axtree"]) is not None or place not in ("sidebar", "refine")
        actions = [apply, "click('filters-toggle')", "click('filters-toggle')", "click('filters-toggle')"] if closed else []
        if place == "dropdowns":   # a refused field, its dropdown opened, closed and opened again
            assert drop.startswith(variant_filters.DROP) and f"[{drop}] DisclosureTriangle" in wo["axtree"]
            actions = [FIELD[app], *[f"click({drop!r})"] * 3]
        for a in [*actions, FIELD[app], apply]:
            so, *_ = sim.step(a)
            # (an action the in-process browser refused: Chromium's refusal is its timeout)
            with action_timeout(web, QUICK_TIMEOUT_MS) if so["last_action_error"] else contextlib.nullcontext():
                wo, *_ = web.step(a)
            assert bool(so["last_action_error"]) == bool(wo["last_action_error"]), (a, so["last_action_error"],
                                                                                    wo["last_action_error"])
            assert so["axtree"] == wo["axtree"], a
            wt, st = web.snapshot()["browser"]["tabs"][0], sim.snapshot()["browser"]["tabs"][0]
            assert wt["url"] == st["url"], a
            if st["fields"].get("filters-box") or st["fields"].get(f"{drop}-box"):   # the open state is the
                assert wt["fields"] == st["fields"], a   # same state (as the menu's: a details closed again is its
                #                                          served default in Chromium)
        assert sim.snapshot()["browser"]["tabs"][0]["url"] != PAGES[app], "the form was applied"


@pytest.mark.browser
@pytest.mark.parametrize("app", ["forum", "shopping", "cms"])
def test_a_dropdown_closes_the_one_open_in_chromium(app: str, chromium: Any) -> None:
    """Chromium's exclusive accordion and the in-process one: after the same clicks on the
    dropdowns' summaries (A, then B, Enter on A, B again), a field set in the open one and
    the form applied, the AX tree is the same line for line and the tab's UI state the
    same (the dropdown closed by another's opening is back to its served state in both)."""
    pytest.importorskip("playwright.sync_api")

    sim = _on_page(app, _with(app, filters="dropdowns"))
    a, b = _drops(sim.browser.axtree())[:2]
    field = next(bid for bid, el in sim.browser.page().elements.items()
                 if el.tag in ("input", "select", "textarea") and el.input_type not in ("hidden", "checkbox", "radio")
                 and sim.browser.summaries_to_show(bid) == [b])
    el = sim.browser.page().elements[field]
    set_field = (f"select_option({field!r}, {el.options[-1][1]!r})" if el.tag == "select"
                 else f"fill({field!r}, '3')")
    actions = [f"click({a!r})", f"click({b!r})", f"press({a!r}, 'Enter')", f"click({b!r})", set_field,
               f"click({APPLY.get(app, 'f-apply')!r})"]
    with served_browser(app, chromium) as web:
        web.restore(sim.snapshot())
        so, *_ = sim.step("noop()")
        wo, *_ = web.step("noop()")
        assert so["axtree"] == wo["axtree"]
        for action in actions:
            so, *_ = sim.step(action)
            wo, *_ = web.step(action)
            assert not so["last_action_error"] and not wo["last_action_error"], (action, so["last_action_error"],
                                                                                wo["last_action_error"])
            assert so["axtree"] == wo["axtree"], action
            wt, st = web.snapshot()["browser"]["tabs"][0], sim.snapshot()["browser"]["tabs"][0]
            assert (wt["url"], wt["fields"]) == (st["url"], st["fields"]), action
            if action != actions[-1]:
                shown = _expanded(so["axtree"])
                assert [d for d, v in shown.items() if v] == [a if "'Enter'" in action or action.endswith(f"({a!r})")
                                                              else b], (action, shown)
        assert st["url"] != PAGES[app], "the form was applied"
