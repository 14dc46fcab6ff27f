"""The section_order factor of site variants (simweb.runtime.variant_sections, docs/variants.md
"Section order"): the sections of the pages an app declares in today's order, reversed,
rotated (the first moves last) or, held out, interleaved, by a rewrite of the templates'
source. The AX tree shows the sections in the option's order with the same bids as
today's page, every template's oracle still solves the site, malformed declarations are
refused, and Chromium shows the same tree."""
from __future__ import annotations

import re
from typing import Any

import pytest
from conftest import APPS, assert_every_oracle_solves, assert_walks_agree, served_browser

import simweb
from simweb.runtime import variant_sections
from simweb.runtime.variant_sections import OPTIONS, SectionsError, order
from simweb.runtime.variants import catalogue

#: A page of each app with declared sections, and its groups: each section's bids (a
#: pattern; the section is where the first line of any of them is in the AX tree), or
#: ("~...") a pattern of the line itself (a section whose elements have no bid on a line).
PAGES: dict[str, tuple[str, list[list[str]]]] = {
    "issues": ("/projects/acme/billing-service/issues/1", [
        ["issue-title", "assignees|labels|issue-milestone|issue-due|issue-weight", "links", "notes"],
        ["assignees", "labels", "issue-milestone", "issue-due", "issue-weight"]]),
    "shopping": ("/p/{id}", [
        ["product-price", "product-rating", "product-stock", "add-to-cart|add-to-wishlist|remove-from-wishlist"],
        ["crumb-home", "product-title", "reviews-heading"]]),
    "booking": ("/hotels/{id}", [[r"~StaticText '\d stars", "hotel-policy", "dates-form", "rooms"]]),
    "forum": ("/p/{id}", [
        ["crumb-community", "post-title", "csort-top"],
        ["comment-form|login-to-comment|locked-note|pending-note|banned-note", "csort-top", r"no-comments|comment-\d+"]]),
    "cms": ("/admin/posts/{id}", [["edit-form", "~region 'Workflow'", "post-comments"]]),
}
#: What a page must show for its groups' every section to be there (the {id} tried from 1).
SHOWS = {"shopping": "add-to-cart", "booking": "hotel-policy", "forum": "post-author", "cms": "post-comments"}
#: Bids a variant's chrome adds to a page (its banner, trail, menu, filters' frame, pager).
_CHROME = re.compile(r"promo-.*|site-crumb.*|site-menu.*|filters-.*|page-\d+|site-policies|policy-.*")


def _with(app: str, **want: str) -> int:
    """The first variant whose factors take these values (by label), with today's policies
    and URLs, the top bar shown and a start signed in, unless asked."""
    cat = catalogue(app)
    names = {f.name for f in cat.factors}
    want.setdefault("sign_in", "signed-in")
    want.setdefault("menu", "bar")
    want.setdefault("url_scheme", next(f for f in cat.factors if f.name == "url_scheme").options[0].label)
    want = {f: v for f, v in want.items() if f in names}
    return next(k for k in range(1, cat.count) if all(cat.values(k)[f] == v for f, v in want.items())
                and cat.policies(k) == cat.policy_defaults)


_URLS: dict[str, str] = {}


def _url(app: str) -> str:
    """The app's page (PAGES) of the first id that shows every section (SHOWS)."""
    if app not in _URLS:
        url = PAGES[app][0]
        if "{id}" in url:
            env = _env(app, 0)
            for i in range(1, 60):
                env.step(f"goto({url.format(id=i)!r})")
                if SHOWS[app] in env.browser.page().elements:
                    url = url.format(id=i)
                    break
            else:
                raise AssertionError(f"no {app} page shows {SHOWS[app]}")
        _URLS[app] = url
    return _URLS[app]


def _env(app: str, variant: int) -> Any:
    """An env of ``variant`` at the start of no task, or (cms: its page is the admin's) of
    the app's first task that starts signed in."""
    env = simweb.make(app, variant=variant, max_steps=100_000).unwrapped
    for task in ([None] if app != "cms" else list(env.app.tasks)):
        env.reset(seed=0, options={"task": task})
        if app != "cms" or env.state["browser"]["user"] is not None:
            return env
    raise AssertionError(f"no {app} task starts signed in")


def _page(app: str, variant: int) -> tuple[Any, str]:
    env = _env(app, variant)
    obs, *_ = env.step(f"goto({_url(app)!r})")
    assert not obs["last_action_error"], obs["last_action_error"]
    return env, obs["axtree"]


def _positions(axtree: str, group: list[str]) -> list[int]:
    """Where each section of ``group`` is in ``axtree`` (the line of its first bid; -1:
    not on the page)."""
    lines = axtree.splitlines()
    out = []
    for pattern in group:
        rx = re.compile(pattern[1:] if pattern.startswith("~") else rf"^\t*\[(?:{pattern})\] ")
        out.append(next((i for i, ln in enumerate(lines) if rx.search(ln)), -1))
    return out


def _order(axtree: str, group: list[str]) -> list[int]:
    """The sections of ``group`` on the page, by today's index, in the page's order."""
    pos = _positions(axtree, group)
    return sorted((i for i, p in enumerate(pos) if p >= 0), key=lambda i: pos[i])


# ----------------------------------------------------------------------------- the factor
def test_the_factor_and_its_split() -> None:
    for app in APPS:
        cat = catalogue(app)
        factor = next(f for f in cat.factors if f.name == "section_order")
        assert [o.label for o in factor.options] == list(OPTIONS) == ["standard", "reversed", "rotated", "interleaved"]
        assert factor.held_out == {variant_sections.HELD_OUT} and OPTIONS[variant_sections.HELD_OUT] == "interleaved"
        assert cat.values(0)["section_order"] == "standard"
        assert len(cat.sections) >= 3, app   # every app declares its groups
        assert {cat.values(k)["section_order"] for k in range(40)} == set(OPTIONS), app
        assert all(r["factors"]["section_order"] != "interleaved" for r in cat.listing("train", 200))


def test_the_held_out_order_is_one_no_train_option_gives() -> None:
    for k in range(3, 10):
        train = {tuple(order(o, k)) for o in OPTIONS[:variant_sections.HELD_OUT]}
        held = tuple(order("interleaved", k))
        assert held not in train and sorted(held) == list(range(k)), k
        assert len(train) == 3, k
    assert order("reversed", 4) == [3, 2, 1, 0] and order("rotated", 4) == [1, 2, 3, 0]
    assert order("interleaved", 5) == [1, 3, 0, 2, 4] and order("standard", 3) == [0, 1, 2]


# ----------------------------------------------------------------------------- the rewrite
_SRC = ('{% block main %}\n<h1>T</h1>\n<p bid="a">A</p>\n{% set n = f(x) %}\n<p class="b">B {{ n }}</p>\n'
        '{% if c %}<form bid="c"><input name="q"></form>{% else %}<p>none</p>{% endif %}\n'
        '<p>more of c</p>\n{# note #}\n<section aria-label="D d"><h2>D</h2>{% set m = 1 %}{{ m }}</section>\n'
        '{% endblock %}\n')
_GROUP = [{"template": "t.html", "sections": ["p[bid=a]", "p.b", "form[bid=c]", 'section[aria-label="D d"]']}]


def test_the_rewrite_moves_whole_parts() -> None:
    """A section runs from its named part to the next section's; a conditional (both of
    its branches) is one part; the heading before the first section stays; statements
    between sections go first, in their order; nothing inside a part changes."""
    groups = variant_sections.parse("t", _GROUP)
    assert variant_sections.rewrite(_SRC, "t.html", "reversed", groups) == (
        '{% block main %}\n<h1>T</h1>\n{% set n = f(x) %}\n{# note #}\n'
        '<section aria-label="D d"><h2>D</h2>{% set m = 1 %}{{ m }}</section>\n'
        '{% if c %}<form bid="c"><input name="q"></form>{% else %}<p>none</p>{% endif %}\n<p>more of c</p>\n'
        '<p class="b">B {{ n }}</p>\n<p bid="a">A</p>\n{% endblock %}\n')
    rotated = variant_sections.rewrite(_SRC, "t.html", "rotated", groups)
    assert rotated.index('<p class="b">') < rotated.index("{% if c %}") < rotated.index("<section") < rotated.index(
        '<p bid="a">')
    inter = variant_sections.rewrite(_SRC, "t.html", "interleaved", groups)
    assert inter.index('<p class="b">') < inter.index("<section") < inter.index('<p bid="a">') < inter.index("{% if c %}")
    for out in (rotated, inter):   # the same pieces, whole
        for piece in ('{% if c %}<form bid="c"><input name="q"></form>{% else %}<p>none</p>{% endif %}\n<p>more of c</p>',
                      '<section aria-label="D d"><h2>D</h2>{% set m = 1 %}{{ m }}</section>', "{% set n = f(x) %}"):
            assert piece in out
    assert variant_sections.rewrite(_SRC, "t.html", "standard", groups) == _SRC
    assert variant_sections.rewrite(_SRC, "t.html", "", groups) == _SRC
    assert variant_sections.rewrite(_SRC, "other.html", "reversed", groups) == _SRC


def test_a_group_inside_another_moves_with_it() -> None:
    src = ('<main><div class="x"><p bid="1">1</p><p bid="2">2</p><p bid="3">3</p></div>\n<p bid="y">y</p>\n'
           '<p bid="z">z</p></main>')
    groups = variant_sections.parse("t", [{"template": "t.html", "sections": ["div.x", "p[bid=y]", "p[bid=z]"]},
                                          {"template": "t.html", "sections": ["p[bid=1]", "p[bid=2]", "p[bid=3]"]}])
    assert variant_sections.rewrite(src, "t.html", "reversed", groups) == (
        '<main><p bid="z">z</p>\n<p bid="y">y</p>\n<div class="x"><p bid="3">3</p>\n<p bid="2">2</p>\n'
        '<p bid="1">1</p></div></main>')


@pytest.mark.parametrize("sections,why", [
    (["p[bid=a]", "p.b", "form[bid=nothing]"], "matches no element"),
    (["p[bid=a]", "p", "form[bid=c]"], "elements"),                       # several <p>
    (["p[bid=a]", "form[bid=c]", "input"], "one part"),                   # the form and its input
    (["p.b", "p[bid=a]", "form[bid=c]"], "not in the page's order"),
    (["p[bid=a]", "p.b", "p[bid=split]"], "split"),                       # a part across a Jinja block
])
def test_a_section_the_template_does_not_hold_is_refused(sections: list[str], why: str) -> None:
    src = _SRC.replace("<p>more of c</p>", '{% if d %}<div>{% endif %}<p bid="split">s</p>{% if d %}</div>{% endif %}') \
        if "split" in why else _SRC
    groups = variant_sections.parse("t", [{"template": "t.html", "sections": sections}])
    with pytest.raises(SectionsError, match=why) as err:
        variant_sections.check("t", groups, {"t.html": src}.get)
    assert "\n" not in str(err.value) and str(err.value).startswith("t variants: sections of t.html")


@pytest.mark.parametrize("raw", [3, [{"template": "t.html"}], [{"template": "t.html", "sections": ["p.a", "p.b"]}],
                                 [{"template": "t.html", "sections": ["p.a", "p b", "p.c"]}],
                                 [{"template": "../t.html", "sections": ["p.a", "p.b", "p.c"]}],
                                 [{"template": "t.html", "sections": ["p.a", "p.b", "p.c"], "order": 1}],
                                 [{"template": "t.html", "sections": ["p.a", "p.b", 'p[bid="{{ x }}"]']}]])
def test_a_malformed_sections_entry_is_refused(raw: Any) -> None:
    with pytest.raises(SectionsError) as err:
        variant_sections.parse("t", raw)
    assert "\n" not in str(err.value)


def test_a_template_the_app_does_not_have_is_refused() -> None:
    groups = variant_sections.parse("t", [{"template": "gone.html", "sections": ["p.a", "p.b", "p.c"]}])
    with pytest.raises(SectionsError, match="gone.html, a template the app does not have"):
        variant_sections.check("t", groups, lambda name: None)


@pytest.mark.parametrize("app", APPS)
def test_every_declared_group_is_on_a_page(app: str) -> None:
    """Each declaration matches its template (the catalogue refuses one that does not): a
    non-default option reorders every group, and the sections' elements are all kept."""
    jinja = simweb.make(app).unwrapped.app.jinja
    for group in catalogue(app).sections:
        src = jinja.loader.get_source(jinja, group.template)[0]
        found = variant_sections.resolve(src, group)
        assert len(found.starts) == len(group.sections) >= variant_sections.MIN_SECTIONS
        for option in OPTIONS[1:]:
            out = variant_sections.rewrite(src, group.template, option, (group,))
            assert out != src and sorted("".join(out.split())) == sorted("".join(src.split())), (group, option)


# ----------------------------------------------------------------------------- the pages
@pytest.mark.parametrize("app", APPS)
@pytest.mark.parametrize("option", OPTIONS)
def test_the_sections_are_in_the_options_order_with_todays_bids(app: str, option: str) -> None:
    variant = _with(app, section_order=option)
    env, ax = _page(app, variant)
    today, today_ax = _page(app, 0)
    for group in PAGES[app][1]:
        want = _order(today_ax, group)
        assert want == list(range(len(group))), (group, want)   # every section, in today's order
        k = len(group)
        expected = [i for i in order(option, k) if i in want]
        assert _order(ax, group) == expected, (app, option, group)
    bids = {b for b in env.browser.page().elements if not _CHROME.fullmatch(b)}
    assert bids == {b for b in today.browser.page().elements if not _CHROME.fullmatch(b)}
    if option != "standard":
        assert_walks_agree(env.browser.html())


# ----------------------------------------------------------------------------- oracles
@pytest.mark.parametrize("app", APPS)
@pytest.mark.parametrize("option", OPTIONS[1:])
def test_every_template_oracle_solves_a_section_variant(app: str, option: str) -> None:
    assert_every_oracle_solves(app, _with(app, section_order=option))


# ----------------------------------------------------------------------------- Chromium
@pytest.mark.browser
@pytest.mark.parametrize("app,option,click", [("issues", "interleaved", "issue-milestone-link"),
                                              ("shopping", "reversed", "write-review"),
                                              ("forum", "rotated", "post-author")])
def test_the_sections_are_the_same_in_chromium(app: str, option: str, click: str, chromium: Any) -> None:
    """The page's AX tree in Chromium (the served site) and in-process are the same line
    for line, the sections in the option's order, and a link of a moved section leads to
    the same page in both."""
    pytest.importorskip("playwright.sync_api")

    sim, ax = _page(app, _with(app, section_order=option))
    with served_browser(app, chromium) as web:
        web.restore(sim.snapshot())
        so, *_ = sim.step("noop()")
        wo, *_ = web.step("noop()")
        assert so["axtree"] == wo["axtree"]
        group = PAGES[app][1][0]
        assert _order(wo["axtree"], group) == [i for i in order(option, len(group)) if i in _order(ax, group)]
        so, *_ = sim.step(f"click('{click}')")
        wo, *_ = web.step(f"click('{click}')")
        assert not so["last_action_error"] and not wo["last_action_error"]
        assert so["axtree"] == wo["axtree"] and web.snapshot()["browser"]["tabs"] == sim.snapshot()["browser"]["tabs"]
