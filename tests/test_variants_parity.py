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
from conftest import APPS

import simweb
from simweb.runtime.variants import catalogue
from simweb.serving.browser import BrowserEnv, ServedApp
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
    served = ServedApp(app, world_seed=0)
    web = BrowserEnv(app, 0, server=served, browser=chromium, screenshots=False, timeout_ms=1000, max_steps=100_000)
    try:
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
            walk = run_walk(sim, web, start_state(sim, rng), rng, steps=8)
            d = walk["divergence"]
            assert d is None or declared(d) is not None, f"{app} variant {k}: {d}"
    finally:
        web.close()
        served.close()
