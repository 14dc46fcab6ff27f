"""Site variants in Chromium (simweb.variants, docs/variants.md): a variant's page is the
same AX tree in the in-process browser and in Chromium (the moved top bar, the breadcrumb
trail, the banner, the title's format, the variant's words), and random walks on it make
the same transitions. CI-sized: one variant per top-bar position per app, two start
states and one short walk each; one Chromium for the module."""
from __future__ import annotations

import random
from typing import Any

import pytest

pytest.importorskip("playwright.sync_api")
from conftest import APPS, QUICK_TIMEOUT_MS, action_timeout, served_browser

import simweb
from simweb.runtime.variants import catalogue
from simweb.serving.browser import BrowserEnv
from simweb.tools.walks import declared, run_walk, start_state

pytestmark = pytest.mark.browser


def layout_variants(app: str) -> list[int]:
    """One variant per top-bar position other than today's, each with a breadcrumb trail,
    a banner, a title format and price and date formats (where the app writes them) of
    its own."""
    cat = catalogue(app)
    out = []
    for nav in ("left", "right", "bottom"):
        out.append(next(k for k in range(1, cat.count) if cat.site(k).nav == nav and cat.site(k).crumbs
                        and cat.site(k).banner and cat.site(k).title[0]
                        and (cat.site(k).money or "money" not in cat.formats) and cat.site(k).date))
    return out


@pytest.mark.parametrize("app", APPS)
def test_a_variants_pages_are_the_same_in_chromium(app: str, chromium: Any) -> None:
    with served_browser(app, chromium) as web:
        for k in layout_variants(app):
            sim = simweb.make(app, seed=0, variant=k, max_steps=100_000)
            rng = random.Random(k)
            for _ in range(2):
                state = start_state(sim, rng)
                sim.restore(state)
                web.restore(state)
                so, *_ = sim.step("noop()")
                wo, *_ = web.step("noop()")
                assert so["axtree"] == wo["axtree"], (app, k, state["browser"]["tabs"][0]["url"])
                assert "navigation 'Site'" in so["axtree"] and "[site-crumbs] navigation" in so["axtree"]
            with action_timeout(web, QUICK_TIMEOUT_MS):
                walk = run_walk(sim, web, start_state(sim, rng), rng, steps=8)
            d = walk["divergence"]
            assert d is None or declared(d) is not None, f"{app} variant {k}: {d}"


def scheme_variant(app: str) -> int:
    """A variant whose URL scheme moves the app's main entity, a query-form one where the
    app has one (its URLs differ most from today's)."""
    cat = catalogue(app)
    factor = next(f for f in cat.factors if f.name == "url_scheme")
    label = next((o.label for o in factor.options if any("?" in w for _, w in o.urls)), factor.options[1].label)
    return next(k for k in range(1, cat.count) if cat.values(k)["url_scheme"] == label)


@pytest.mark.parametrize("app", APPS)
def test_a_url_scheme_is_the_same_in_chromium(app: str, chromium: Any) -> None:
    """On a variant with its own URL scheme, Chromium (through the served site) and the
    in-process browser show the same URL and AX tree, random walks make the same
    transitions, and today's form of a moved URL is the same 404 in both."""
    from simweb.runtime.variants import url_scheme

    k = scheme_variant(app)
    scheme = url_scheme(app, k)
    assert scheme is not None
    with served_browser(app, chromium) as web:
        sim = simweb.make(app, seed=0, variant=k, max_steps=100_000)
        rng = random.Random(k)
        moved = None
        state: dict = {}
        for i in range(40):   # four with walks, then until a start state is on a moved URL
            if i >= 4 and moved:
                break
            state = start_state(sim, rng)
            sim.restore(state)
            web.restore(state)
            so, *_ = sim.step("noop()")
            wo, *_ = web.step("noop()")
            assert so["url"].split("/", 3)[3] == wo["url"].split("/", 3)[3], (app, k, so["url"], wo["url"])
            assert so["axtree"] == wo["axtree"], (app, k, so["url"])
            url = state["browser"]["tabs"][0]["url"]
            moved = moved or (url if scheme.to_wire(url) != url else None)
            if i >= 4:
                continue
            with action_timeout(web, QUICK_TIMEOUT_MS):
                walk = run_walk(sim, web, start_state(sim, rng), rng, steps=8)
            d = walk["divergence"]
            assert d is None or declared(d) is not None, f"{app} variant {k}: {d}"
        assert moved, f"{app}: no start state on a moved URL"
        if moved:   # a goto of today's form: the same 404 in both
            sim.restore(state)
            web.restore(state)
            so, *_ = sim.step(f"goto({moved!r})")
            wo, *_ = web.step(f"goto({moved!r})")
            assert so["url"].split("/", 3)[3] == wo["url"].split("/", 3)[3] == moved.lstrip("/")
            assert so["axtree"] == wo["axtree"] and sim.state["browser"]["tabs"][0]["status"] == 404


@pytest.mark.parametrize("app", APPS)
def test_a_moved_message_is_the_same_in_chromium(app: str, chromium: Any) -> None:
    """A refused sign-in's error, moved to the end of the page's content or above the
    site's header (the message_position flow option): the same AX tree in Chromium."""
    cat = catalogue(app)
    with served_browser(app, chromium) as web:
        for pos in ("bottom", "header"):
            k = next(k for k in range(1, cat.count) if cat.values(k)["message_position"] == pos)
            sim = simweb.make(app, seed=0, variant=k, max_steps=100_000)
            sim.reset(seed=0, options={"task": None})
            for a in ("goto('/login')", "fill('login-user', 'nobody-at-all')", "fill('login-password', 'wrong')",
                      "click('login-submit')"):
                so, *_ = sim.step(a)
            assert " alert " in so["axtree"] or "\talert" in so["axtree"] or "alert ''" in so["axtree"], (app, pos)
            web.restore(sim.snapshot())
            wo, *_ = web.step("noop()")
            so, *_ = sim.step("noop()")
            assert so["axtree"] == wo["axtree"], (app, k, pos)


def test_check_app_runs_the_oracles_in_chromium_on_a_variant(chromium: Any, monkeypatch: Any) -> None:
    """check_browser_parity (check_app's browser=True) on a variant with its own URLs and
    layout: every step agrees in Chromium; and it does read the variant: a Chromium handed
    today's site instead (the start state without its variant) fails the check."""
    from simweb.tools.check import check_browser_parity

    app = "shopping"
    k = scheme_variant(app)
    with served_browser(app, chromium) as web:
        tid = "shopping/buy_product"
        assert check_browser_parity(app, tid, 0, web=web, variant=k) == []
        restore = BrowserEnv.restore

        def as_todays_site(self: Any, state: dict) -> None:
            state = {**state, "meta": {kk: v for kk, v in state["meta"].items() if kk != "variant"}}
            restore(self, state)

        monkeypatch.setattr(BrowserEnv, "restore", as_todays_site)
        problems = check_browser_parity(app, tid, 0, web=web, variant=k)
        assert problems and ("differs" in problems[0] or "Chromium is on" in problems[0]), problems


@pytest.mark.parametrize("app", ["shopping", "booking", "cms"])
def test_slug_urls_are_the_same_in_chromium(app: str, chromium: Any) -> None:
    """A slug URL scheme (``/product/grey-scarf-12``): Chromium through the served site and
    the in-process browser show the same URL and AX tree on a slug page, a wrong or absent
    slug lands on the page's own URL in both (the served site's 301; the in-process
    browser's mapping), and a random walk makes the same transitions."""
    from simweb.runtime.url_schemes import Rule
    from simweb.runtime.variants import url_scheme

    cat = catalogue(app)
    factor = next(f for f in cat.factors if f.name == "url_scheme")
    label, canon_rule = next((o.label, Rule.parse(c, w)) for o in factor.options for c, w in o.urls
                             if Rule.parse(c, w).slugs)
    k = next(k for k in range(1, cat.count) if cat.values(k)["url_scheme"] == label)
    with served_browser(app, chromium) as web:
        sim = simweb.make(app, seed=0, variant=k, max_steps=100_000)
        sim.reset(seed=0, options={"task": None})
        scheme = url_scheme(sim.unwrapped.app, k)
        assert scheme is not None
        canon = "/" + "/".join("3" if p else lit for lit, p in canon_rule.canon)
        wire = scheme.to_wire(canon)
        _i, _n, table, column, _f = canon_rule.slugs[0]
        from simweb.runtime.url_schemes import slugify
        slug = slugify(sim.unwrapped.app.world.column_value(table, column, 3))
        assert slug and slug in wire
        state = sim.unwrapped.snapshot()
        web.restore(state)
        for typed in (wire, wire.replace(slug, "not-the-name"), wire.replace(slug + "-", "").replace("-" + slug, "")):
            # from another page: typed on the page itself, Chromium adds a history entry
            # where the served session's state replaces it (docs/variants.md, Slug URLs)
            sim.step("goto('/')")
            web.step("goto('/')")
            so, *_ = sim.step(f"goto({typed!r})")
            wo, *_ = web.step(f"goto({typed!r})")
            assert so["url"].split("/", 3)[3] == wo["url"].split("/", 3)[3] == wire.lstrip("/"), (app, typed, wo["url"])
            assert so["axtree"] == wo["axtree"], (app, typed)
            assert sim.unwrapped.state["browser"]["tabs"][0]["url"] == canon
        rng = random.Random(k)
        for _ in range(2):   # walks from start states (a restore does not replay the history in Chromium)
            with action_timeout(web, QUICK_TIMEOUT_MS):
                walk = run_walk(sim, web, start_state(sim, rng), rng, steps=8)
            d = walk["divergence"]
            assert d is None or declared(d) is not None, f"{app} variant {k}: {d}"


@pytest.mark.parametrize("app", APPS)
def test_a_confirmation_page_is_the_same_in_chromium(app: str, chromium: Any) -> None:
    """A form held on a variant's confirmation page (the confirm_step flow option): the
    page's AX tree is the same in Chromium, and its Confirm makes the same transition (the
    same page after it, the same runtime); a second POST of it changes nothing."""
    from test_variants_confirm import YES, at_confirmation, confirming

    with served_browser(app, chromium) as web:
        sim, plan, i = at_confirmation(app, confirming(app))
        held = sim.unwrapped.snapshot()
        web.restore(held)
        wo, *_ = web.step("noop()")
        so, *_ = sim.step("noop()")
        assert so["axtree"] == wo["axtree"], (app, so["url"])
        so, *_ = sim.step(YES)
        wo, *_ = web.step(YES)
        assert so["url"].split("/", 3)[3] == wo["url"].split("/", 3)[3], (app, so["url"], wo["url"])
        done = web.snapshot()
        assert done["runtime"] == sim.unwrapped.snapshot()["runtime"] != held["runtime"]
        assert "confirm" not in done["browser"]
        wo, *_ = web.step("go_back()")   # the page again: nothing is waiting, no Confirm
        assert "confirm-step-none" in wo["axtree"] and "confirm-step-yes" not in wo["axtree"]
        assert web.snapshot()["runtime"] == done["runtime"]


@pytest.mark.parametrize("app", APPS)
def test_a_moved_top_bar_leaves_the_page_its_width_in_chromium(app: str, chromium: Any) -> None:
    """Wherever the top bar goes, Chromium lays the main landmark out at a usable width and
    the breadcrumb trail can take a click: a bar below a main landmark that is a flex item
    (cms's public pages) once took the whole row and left the main landmark 0 px wide, so
    the trail was not clickable in Chromium while the in-process browser clicked it."""
    with served_browser(app, chromium) as web:
        for k in layout_variants(app):
            sim = simweb.make(app, seed=0, variant=k, max_steps=100_000)
            rng = random.Random(k)
            for goto in (None, "goto('/')"):
                state = start_state(sim, rng)
                web.restore(state)
                obs, *_ = web.step(goto or "noop()")
                assert obs["last_action_error"] == "", (app, k, goto, obs["last_action_error"])
                widths = web.page.evaluate(
                    "() => [document.querySelector('main').getBoundingClientRect().width,"
                    " document.querySelector('[bid=site-crumbs]').getBoundingClientRect().width, innerWidth]")
                main, crumbs, _ = widths
                assert main >= 200 and crumbs > 0, (app, k, obs["url"], widths)   # a usable column
