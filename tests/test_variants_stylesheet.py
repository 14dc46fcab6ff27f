"""A site variant's CSS is a stylesheet its pages link (simweb.runtime.variants.SHEETS_PATH),
as a real site's theme is: the page carries one ``<link>``, the served site answers it with
the variant's options' CSS, and Chromium draws the page with it."""
from __future__ import annotations

from typing import Any

import pytest
from conftest import APPS, served_browser

import simweb
from simweb.runtime.variants import SHEETS_PATH, catalogue, stylesheet_name
from simweb.serving.server import create_app, hit_stylesheet


def _styled(app: str) -> int:
    """A variant with a skin and at least four other options that carry CSS."""
    cat = catalogue(app)
    skin = next(i for i, f in enumerate(cat.factors) if f.name == "skin")
    for k in range(1, cat.count):
        opts = [f.options[i] for f, i in zip(cat.factors, cat.choice(k))]
        if opts[skin].css and sum(1 for o in opts if o.css) >= 5:
            return k
    raise AssertionError(f"{app}: no variant with a skin and four other styled options")


def _page(app: str, variant: int) -> str:
    env = simweb.make(app, variant=variant)
    env.reset(seed=0, options={"task": None})
    return env.browser.html()


@pytest.mark.parametrize("app", APPS)
def test_a_variant_page_links_its_options_css(app: str) -> None:
    """The page has no style element, one link in its head; the served site answers that
    link with the options' CSS in factor order (and the hit rule every stylesheet ends with),
    the same for every session; variant 0 links nothing."""
    k = _styled(app)
    cat = catalogue(app)
    html = _page(app, k)
    head = html.partition("</head>")[0]
    assert "<style" not in html
    href = cat.site(k).stylesheet
    assert head.count(f'<link rel="stylesheet" id="variant-skin" href="{href}">') == 1, head
    opts = [f.options[i] for f, i in zip(cat.factors, cat.choice(k))]
    want = "".join(o.css for o in opts)
    assert href == SHEETS_PATH + "-".join(stylesheet_name(o.css) for o in opts if o.css) + ".css"
    client = create_app(app).test_client()
    resp = client.get(href)
    assert resp.status_code == 200 and resp.mimetype == "text/css"
    assert resp.get_data(as_text=True) == want + hit_stylesheet()
    assert 'id="variant-skin"' not in _page(app, 0) and cat.site(0).stylesheet == ""


def test_a_stylesheet_no_variant_links_is_a_404() -> None:
    """A malformed name, a name of no option's CSS, or one piece unknown among known ones:
    a one-line 404, never a partial sheet."""
    k = _styled("forum")
    client = create_app("forum").test_client()
    good = catalogue("forum").site(k).stylesheet
    for path in (SHEETS_PATH + "0123456789.css", SHEETS_PATH + "zz.css", good.replace(".css", "-0123456789.css"),
                 SHEETS_PATH + ".css", SHEETS_PATH + "0123456789.css.css"):
        resp = client.get(path)
        assert resp.status_code == 404, path
        assert resp.get_data(as_text=True).count("\n") == 1 and "Traceback" not in resp.get_data(as_text=True)


def test_the_named_sheets_are_every_options_css() -> None:
    """Every option of every factor that carries CSS is served under its name, and no
    two names collide (checked when the catalogue lists them)."""
    for app in APPS:
        cat = catalogue(app)
        css = {o.css for f in cat.factors for o in f.options if o.css}
        assert set(cat.stylesheets.values()) == css and len(cat.stylesheets) == len(css)


@pytest.mark.browser
def test_chromium_draws_the_variant_with_its_stylesheet(chromium: Any) -> None:
    """The served variant page in Chromium: its body has the skin's background and font
    (the linked sheet loaded), and the AX tree is the in-process one."""
    pytest.importorskip("playwright.sync_api")
    cat = catalogue("shopping")
    skin = next(i for i, f in enumerate(cat.factors) if f.name == "skin")
    k = next(k for k in range(1, cat.count) if cat.values(k)["skin"] == "night"
             and cat.policies(k) == cat.policy_defaults and cat.values(k).get("menu") == "bar")
    assert "#16181d" in cat.factors[skin].options[cat.choice(k)[skin]].css
    sim = simweb.make("shopping", variant=k)
    sim.reset(seed=0, options={"task": None})
    with served_browser("shopping", chromium) as web:
        web.restore(sim.snapshot())
        so, *_ = sim.step("noop()")
        wo, *_ = web.step("noop()")
        assert so["axtree"] == wo["axtree"]
        style = web.page.evaluate("() => { const s = getComputedStyle(document.body);"
                                  " return [s.backgroundColor, s.fontFamily]; }")
        assert style == ["rgb(22, 24, 29)", "Georgia, serif"], style
