"""The pagination factor of site variants (simweb.runtime.variant_pages, docs/variants.md
"Pagination"): every app's paged lists through the kit's pager, as today's Previous / Next,
numbered page links, a "Load more" link or the held-out "Show more results" button, the
last two listing pages 1..n together on ``?page=n``; the next page's control keeps bid
``page-next`` in every style, so plans that page solve every variant; the state and the
verdicts are today's; Chromium shows the same AX tree."""
from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

import pytest
from conftest import APPS, run_plan, served_browser

import simweb
from simweb.runtime import variant_pages
from simweb.runtime.variants import catalogue

POST = re.compile(r"\[(post-\d+)\] link")


def _with(app: str, **want: str) -> int:
    """The first variant whose factors take these values (by label), signed in at the start,
    with the top bar shown and today's policies."""
    cat = catalogue(app)
    if "sign_in" in {f.name for f in cat.factors}:
        want.setdefault("sign_in", "signed-in")
    want.setdefault("menu", "bar")
    return next(k for k in range(1, cat.count) if all(cat.values(k)[f] == v for f, v in want.items())
                and cat.policies(k) == cat.policy_defaults)


def _env(app: str, style: str, **want: str) -> Any:
    env = simweb.make(app, variant=_with(app, pagination=style, **want) if style != "today" else 0,
                      max_steps=100_000)
    env.reset(seed=0, options={"task": None})
    return env.unwrapped


def _goto(env: Any, url: str) -> str:
    obs, *_ = env.step(f"goto({url!r})")
    assert not obs["last_action_error"], obs["last_action_error"]
    return obs["axtree"]


def _posts(axtree: str) -> list[str]:
    """The bids of the posts a cms page lists, in order (each post's title link once)."""
    return list(dict.fromkeys(POST.findall(axtree)))


def _link_name(line: str) -> str:
    """The name of the link an AX-tree line shows."""
    return re.findall(r"link '([^']*)'", line)[0]


def _pager_lines(axtree: str) -> list[str]:
    """The AX-tree lines of the pager (the navigation "Pages", or the "More results" nav or
    form), without indentation."""
    lines = axtree.splitlines()
    at = next(i for i, ln in enumerate(lines) if re.search(r"\] (navigation|form) '(Pages|More results)'", ln))
    depth = len(lines[at]) - len(lines[at].lstrip("\t"))
    out = [lines[at].strip()]
    for ln in lines[at + 1:]:
        if len(ln) - len(ln.lstrip("\t")) <= depth:
            break
        out.append(ln.strip())
    return out


# ----------------------------------------------------------------------------- the factor
@pytest.mark.parametrize("app", APPS)
def test_every_app_has_the_factor_with_show_more_held_out(app: str) -> None:
    cat = catalogue(app)
    factor = next(f for f in cat.factors if f.name == "pagination")
    assert [o.label for o in factor.options] == list(variant_pages.OPTIONS)
    assert factor.held_out == frozenset({variant_pages.OPTIONS.index("show-more")})
    assert cat.values(0)["pagination"] == "pager"
    seen = {cat.values(k)["pagination"] for k in range(40)}
    assert seen == set(variant_pages.OPTIONS)   # demo --variants 0-49 meets every style
    assert all(cat.split(k) == "test" for k in range(200) if cat.values(k)["pagination"] == "show-more")


def test_today_keeps_previous_and_next() -> None:
    env = _env("cms", "today")
    lines = _pager_lines(_goto(env, "/?page=3"))
    assert lines[0] == "[page-nav] navigation 'Pages'"
    assert any(ln.startswith("[page-prev] link 'Previous'") for ln in lines)
    assert any(ln.startswith("[page-next] link 'Next'") for ln in lines)
    assert any(re.fullmatch(r"StaticText 'Page 3 of \d+'", ln) for ln in lines)
    assert len(_posts(_goto(env, "/?page=3"))) == 20


# ----------------------------------------------------------------------------- numbered
def test_numbered_pages_link_their_neighbours_as_previous_and_next() -> None:
    env = _env("cms", "numbered")
    today = _env("cms", "today")
    ax = _goto(env, "/?page=5")
    lines = _pager_lines(ax)
    last = int(re.findall(r"Page 5 of (\d+)", _goto(today, "/?page=5"))[0])
    links = [ln for ln in lines if "link" in ln]
    assert [_link_name(ln) for ln in links] == \
        ["Page 1", "Page 3", "Page 4", "Page 6", "Page 7", f"Page {last}"]
    assert links[2].startswith("[page-prev]") and links[3].startswith("[page-next]")
    assert links[0].startswith("[page-1]") and links[-1].startswith(f"[page-{last}]")
    assert "StaticText '5'" in lines and lines.count("StaticText '…'") == 2   # the current page is no link
    assert "Previous" not in " ".join(lines) and "Next" not in " ".join(lines)
    # the same posts as today's page 5, and the neighbours' links go where today's go
    assert _posts(ax) == _posts(_goto(today, "/?page=5"))
    env.step("click('page-next')")
    assert env.browser.tab["url"] == "/?page=6"
    env.step("click('page-1')")
    assert env.browser.tab["url"] == "/"


def test_numbered_pages_of_a_list_without_a_count() -> None:
    """Forum's listings know whether a next page exists, not how many there are: the numbers
    run to the current page and the next."""
    env = _env("forum", "numbered")
    lines = _pager_lines(_goto(env, "/all?page=4"))
    names = [_link_name(ln) for ln in lines if "link" in ln]
    assert names == ["Page 1", "Page 2", "Page 3", "Page 5"]


# ----------------------------------------------------------------------------- load more
@pytest.mark.parametrize("style", ["load-more", "show-more"])
def test_page_n_lists_pages_one_to_n_and_the_state_is_todays(style: str) -> None:
    env = _env("cms", style)
    today = _env("cms", "today")
    first = _posts(_goto(today, "/"))
    second = _posts(_goto(today, "/?page=2"))
    third = _posts(_goto(today, "/?page=3"))
    assert len(first) == len(second) == 20
    ax = _goto(env, "/")
    assert _posts(ax) == first
    for want in (first + second, first + second + third):
        obs, *_ = env.step("click('page-next')")
        assert not obs["last_action_error"]
        assert _posts(obs["axtree"]) == want
    assert env.browser.tab["url"] == "/?page=3"   # the URL and the state as today's
    lines = _pager_lines(obs["axtree"])
    if style == "load-more":
        assert lines == ["[page-nav] navigation 'More results'", "[page-next] link 'Load more', url='?page=4'"]
    else:
        assert lines == ["[page-nav] form 'More results'", "[page-next] button 'Show more results'"]
    assert "[page-prev]" not in obs["axtree"]
    # the same requests as today's site: the history keeps ?page=n, nothing else moved
    fresh = _env("cms", "today")
    fresh.step("goto('/')")
    for _ in range(2):
        fresh.step("click('page-next')")
    mine, theirs = env.snapshot(), fresh.snapshot()
    for part in ("runtime", "browser"):
        assert mine[part] == theirs[part], part


def test_show_more_keeps_the_lists_query() -> None:
    env = _env("cms", "show-more")
    today = _env("cms", "today")
    ax = _goto(env, "/search?q=backup")
    assert _posts(ax) == _posts(_goto(today, "/search?q=backup"))
    obs, *_ = env.step("click('page-next')")
    assert not obs["last_action_error"]
    assert env.browser.tab["url"] == "/search?page=2&q=backup"   # the link's URL, as a GET form sends it
    assert _posts(obs["axtree"]) == _posts(_goto(today, "/search?q=backup")) + _posts(
        _goto(today, "/search?q=backup&page=2"))


def test_a_ranking_that_repeats_a_row_lists_it_once() -> None:
    """Forum's hot listing can list a row at the end of one page and the start of the next
    (its window moves with the offset): the cumulative page lists it once (one bid)."""
    env = _env("forum", "load-more")
    ax = _goto(env, "/all?page=3")
    rows = re.findall(r"\[(post-\d+)\] link", ax)
    assert len(rows) == len(set(rows)) and len(rows) >= 50


def test_a_far_page_accumulates_a_bounded_number_of_pages() -> None:
    env = _env("cms", "load-more")
    today = _env("cms", "today")
    n = variant_pages.MAX_PAGES + 5
    posts = _posts(_goto(env, f"/?page={n}"))
    assert len(posts) == 20 * variant_pages.MAX_PAGES
    assert posts[:20] == _posts(_goto(today, f"/?page={n - variant_pages.MAX_PAGES + 1}"))
    assert posts[-20:] == _posts(_goto(today, f"/?page={n}"))


# ----------------------------------------------------------------------------- the oracle
@pytest.mark.parametrize("style", variant_pages.OPTIONS)
def test_the_oracle_pages_through_every_style(style: str) -> None:
    """cms/nth_search_result clicks page-next to the k-th result's page and reads its
    title: every style, a clean success; the random agent's answer to a cumulative page
    is not free (the goal's count still has to be read off the list)."""
    k = _with("cms", pagination=style)
    env = simweb.make("cms", variant=k, max_steps=100_000)
    paged = 0
    for seed in range(12):
        env.reset(seed=seed, options={"task": "cms/nth_search_result"})
        plan = env.oracle_plan()
        paged += plan.count("click('page-next')") >= 2
        v = run_plan(env, plan, ("cms", k, seed))
        assert v["success"] and v["clean"], (k, seed, v)
    assert paged, "no plan paged twice"


@pytest.mark.parametrize("app", [a for a in APPS if a != "cms"])   # (cms: the tests above)
def test_every_app_pages_its_lists_in_the_variants_style(app: str) -> None:
    url = {"booking": "/deals", "forum": "/all", "issues": "/projects", "shopping": "/search?q=shirt"}[app]
    for style, control in (("numbered", "link 'Page 2'"), ("load-more", "link 'Load more'"),
                           ("show-more", "button 'Show more results'")):
        env = _env(app, style)
        ax = _goto(env, url)
        assert f"[page-next] {control}" in ax, (app, style)
        obs, *_ = env.step("click('page-next')")
        assert not obs["last_action_error"], (app, style, obs["last_action_error"])
        assert "page=2" in env.browser.tab["url"], (app, style)


# ----------------------------------------------------------------------------- Chromium
@pytest.mark.browser
@pytest.mark.parametrize("app,style,url", [("cms", "numbered", "/?page=4"), ("forum", "load-more", "/all"),
                                           ("cms", "show-more", "/search?q=guide")])
def test_the_pager_is_the_same_in_chromium(app: str, style: str, url: str, chromium: Any) -> None:
    """On each style, the AX tree in Chromium (the served site) and in-process are the same
    line for line on a paged list and after two clicks on its next page's control, which
    lead to the same URL."""
    pytest.importorskip("playwright.sync_api")

    sim = _env(app, style)
    _goto(sim, url)
    with served_browser(app, chromium) as web:
        web.restore(sim.snapshot())
        so, *_ = sim.step("noop()")
        wo, *_ = web.step("noop()")
        assert so["axtree"] == wo["axtree"]
        for _ in range(2):
            so, *_ = sim.step("click('page-next')")
            wo, *_ = web.step("click('page-next')")
            assert not so["last_action_error"] and not wo["last_action_error"], (so["last_action_error"],
                                                                                 wo["last_action_error"])
            assert urlsplit(so["url"])[2:] == urlsplit(wo["url"])[2:]   # (the served site's host is its own)
            assert so["axtree"] == wo["axtree"]
        assert so["url"].endswith(("?page=6", "/all?page=3", "/search?page=3&q=guide"))
