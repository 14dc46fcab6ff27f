"""Layout factors of site variants (simweb.variants, docs/variants.md): where the top bar
sits, a breadcrumb trail, the page title's format. One engine mechanism for every app:
the same elements and bids in a new place, the same transitions, every oracle solves."""
from __future__ import annotations

import re

import pytest
from conftest import APPS, site_bar_lines

import simweb
from simweb.runtime.variants import catalogue, jinja_for


def _with(app: str, **want: str) -> int:
    """The first variant whose factors take these values (by label)."""
    cat = catalogue(app)
    # with today's policies: these tests replay today's plan on the variant (a policy changes
    # what the site does and which instance a task draws; tests/test_variants_policies.py)
    # and no login wall or menu (these tests compare a visitor's pages with today's)
    want.setdefault("sign_in", "signed-in")
    want.setdefault("menu", "bar")   # (the menu adds its summary: tests/test_variants_menu.py)
    return next(k for k in range(1, cat.count) if all(cat.values(k)[f] == v for f, v in want.items())
                and cat.policies(k) == cat.policy_defaults)


def _landmarks(axtree: str) -> list[str]:
    """The top-level lines of the page (depth 1), bids and names as written."""
    return [ln.strip() for ln in axtree.splitlines() if re.match(r"^\t[^\t]", ln)]


@pytest.mark.parametrize("position,before_main", [("sidebar", True), ("right-sidebar", False), ("bottom", False)])
def test_the_top_bar_moves_with_its_elements(app_name, env_of, position, before_main):
    base = env_of(app_name)
    base.reset(seed=0, options={"task": None})
    # paged as today: a numbered pager adds page links (tests/test_variants_pagination.py)
    k = _with(app_name, nav_position=position, breadcrumbs="none", banner="none", pagination="pager")
    env = simweb.make(app_name, variant=k)
    env.reset(seed=0, options={"task": None})
    tops = _landmarks(env.browser.axtree())
    site = next(i for i, ln in enumerate(tops) if ln == "navigation 'Site'")
    main = next(i for i, ln in enumerate(tops) if ln.startswith("main"))
    assert (site < main) == before_main, tops
    assert not any(ln.startswith("banner") for ln in tops), "the top bar is a navigation landmark now"
    assert any(ln.startswith("banner") for ln in _landmarks(base.browser.axtree()))
    assert set(env.browser.page().elements) == set(base.browser.page().elements)
    # the bar's elements are inside the moved landmark
    assert any("[nav-home]" in ln for ln in site_bar_lines(env.browser.axtree()))


@pytest.mark.parametrize("fmt,expect", [("site-page", "{site} | {page}"), ("page-pipe", "{page} | {site}"),
                                        ("page-only", "{page}"), ("site-colon", "{site}: {page}")])
def test_title_formats(fmt, expect):
    k = _with("shopping", title_format=fmt, site_name="Simshop", account_words="account")
    env = simweb.make("shopping", variant=k)
    env.reset(seed=0, options={"task": None})
    env.step("goto('/login')")
    title = env.browser.axtree().splitlines()[0]
    want = expect.replace("{site}", "Simshop").replace("{page}", "Sign in")
    assert title.startswith(f"RootWebArea '{want}'"), title
    # the variant's words apply to the formatted title too
    k2 = _with("shopping", title_format=fmt, site_name="Cartwheel", cart_words="basket")
    env2 = simweb.make("shopping", variant=k2)
    env2.reset(seed=0, options={"task": None})
    env2.step("goto('/login')")
    assert "Simshop" not in env2.browser.axtree().splitlines()[0]
    assert "Cartwheel" in env2.browser.axtree().splitlines()[0] or fmt == "page-only"


def test_breadcrumbs_follow_the_title_most_general_first():
    k = _with("issues", breadcrumbs="chevron", title_format="page-site", nav_position="top", item_words="issues",
              url_scheme="projects")   # today's URLs: the test opens one
    env = simweb.make("issues", variant=k)
    env.reset(seed=0, options={"task": None})
    path = env.app.world.projects()[0]["path"]
    env.step(f"goto('/projects/{path}/issues')")
    tree = env.browser.axtree()
    lines = tree.splitlines()
    at = next(i for i, ln in enumerate(lines) if "[site-crumbs] navigation 'You are here'" in ln)
    trail = [ln.strip() for ln in lines[at + 1:at + 4]]
    assert trail[0].startswith("[site-crumb-home] link 'Home'")
    assert trail[1:] == [f"StaticText '{path}'", "StaticText 'Issues'"]
    # none on today's site, none without the factor
    k0 = _with("issues", breadcrumbs="none")
    env0 = simweb.make("issues", variant=k0)
    env0.reset(seed=0, options={"task": None})
    assert "site-crumbs" not in env0.browser.axtree()


def test_layout_is_built_once_per_process_and_variant():
    k = _with("forum", nav_position="bottom", breadcrumbs="slash")
    env = simweb.make("forum", variant=k)
    env.reset(seed=0, options={"task": None})
    jinja = jinja_for(env.app, k)
    assert jinja_for(env.app, k) is jinja
    assert jinja.get_template("base.html") is jinja.get_template("base.html")
    assert "vnav-bottom" in jinja.loader.get_source(jinja, "base.html")[0]


@pytest.mark.parametrize("app", APPS)
def test_every_oracle_solves_every_layout_option(app):
    """Variants that between them take every option of the layout factors: every template's
    oracle succeeds cleanly through what each variant's page shows."""
    cat = catalogue(app)
    layout = [f for f in cat.factors if f.name in ("nav_position", "breadcrumbs", "title_format")]
    ks = []
    for i in range(max(len(f.options) for f in layout)):
        want = {f.name: f.options[min(i, len(f.options) - 1)].label for f in layout}
        ks.append(_with(app, **want))
    for k in ks:
        env = simweb.make(app, variant=k)
        for j, tid in enumerate(env.app.tasks):
            env.reset(seed=k + j, options={"task": tid})
            for a in env.oracle_plan():
                _, _, term, trunc, info = env.step(a)
            v = info["verdict"]
            assert v["success"] and v["clean"], (app, k, tid, v)


def test_the_first_ids_take_every_option_of_every_factor(app_name):
    """`simweb demo --variants 0-49` meets every factor value: the id -> combination
    multiplier is chosen so that ids 0-39 take every option (the last factors too)."""
    cat = catalogue(app_name)
    for i, f in enumerate(cat.factors):
        assert {cat.choice(k)[i] for k in range(40)} == set(range(len(f.options))), f.name
