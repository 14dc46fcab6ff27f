"""URL schemes of site variants (simweb.runtime.url_schemes, docs/variants.md): the browser
shows and requests a variant's URLs (links, form actions, redirects and their ``next=``,
the observation's URL), the state keeps today's, a URL in today's form is a 404 on a
variant that moves it, and every template's oracle solves a variant of every scheme."""
from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from conftest import APPS

import simweb
from simweb.judging.effects import entity
from simweb.runtime.url_schemes import UNMAPPED, Rule, UrlScheme, UrlSchemeError, scheme
from simweb.runtime.variants import catalogue, url_scheme


def _scheme(app: str, k: int) -> UrlScheme:
    s = url_scheme(app, k)
    assert s is not None
    return s


def _scheme_variants(app: str) -> list[int]:
    """The first variant of every URL scheme other than today's, without a login wall (a
    walled page opened by its URL redirects to the sign-in form)."""
    cat = catalogue(app)
    factor = next(f for f in cat.factors if f.name == "url_scheme")
    return [next(k for k in range(1, cat.count) if cat.values(k)["url_scheme"] == o.label
                 and cat.values(k).get("sign_in") != "early") for o in factor.options[1:]]


def _path(obs_url: str) -> str:
    parts = urlsplit(obs_url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


# ----------------------------------------------------------------------------- the mapping
def test_rules_map_both_ways() -> None:
    s = scheme((("/p/<int:pid>", "/item?id=<pid>"), ("/account/orders/<int:oid>", "/orders/<oid>")))
    assert s is not None
    assert s.to_wire("/p/12") == "/item?id=12"
    assert s.to_wire("/p/12/reviews?page=2#top") == "/item/reviews?id=12&page=2#top"
    assert s.to_wire("/account/orders/7/cancel") == "/orders/7/cancel"
    assert s.to_wire("/p/new") == "/p/new"                       # <int:> takes digits only
    assert s.to_wire("/cart?x=1") == "/cart?x=1"                 # routes no rule moves
    assert s.to_wire("/login?next=/account/orders/7") == "/login?next=/orders/7"          # a next= the spec builds
    assert s.to_wire("/login?next=%2Faccount%2Forders%2F7") == "/login?next=%2Forders%2F7"
    for canon in ("/p/12", "/p/12/reviews?page=2#top", "/account/orders/7/cancel", "/cart?x=1", "/login?next=/p/3"):
        assert s.to_canonical(s.to_wire(canon)) == canon
    assert s.to_canonical("/item/reviews?page=2&id=12") == "/p/12/reviews?page=2"
    # today's form of a moved route is no page of this site; the browser shows what was typed
    assert s.to_canonical("/p/12") == UNMAPPED + "/p/12"
    assert s.to_wire(UNMAPPED + "/p/12") == "/p/12"
    assert s.to_canonical("/item?id=abc") == "/item?id=abc"       # not a product id: a 404 as it is
    for bad in (("/p/<pid>", "/<pid>"), ("/p/<pid>", "/x"), ("p", "/x"), ("/p/<pid>", "/x?id=3")):
        with pytest.raises(UrlSchemeError):
            Rule.parse(*bad)


def test_template_source_is_rewritten_once() -> None:
    s = UrlScheme([Rule.parse("/p/<int:pid>", "/product/<pid>"), Rule.parse("/hotels/<int:h>", "/stay?id=<h>")])
    src = ('<a href="/p/{{ p.id }}/reviews">x</a><form action="/p/{{ p.id }}/review">'
           '<a href="/hotels/{{ h.id }}{% if d %}?guests=2{% endif %}">h</a>'
           '<a href="{{ it.url }}">m</a><a href="/{{ k }}/{{ i }}/vote">v</a><a href="/c/{{ c }}">c</a>'
           '<a href="/p/12">lit</a><a href="{{ qs(base, page=2) }}">n</a>')
    out = s.rewrite_source(src)
    assert 'href="/product/{{ p.id }}/reviews"' in out and 'action="/product/{{ p.id }}/review"' in out
    # a query-form rule with a query written at render: the rendered value is mapped
    assert 'href="{% filter variant_url %}/hotels/{{ h.id }}{% if d %}?guests=2{% endif %}{% endfilter %}"' in out
    assert 'href="{{ (it.url)|variant_url }}"' in out                 # a data link (a menu item's)
    assert 'href="{% filter variant_url %}/{{ k }}/{{ i }}/vote{% endfilter %}"' in out
    assert 'href="/c/{{ c }}"' in out and 'href="/product/12"' in out
    assert 'href="{{ qs(base, page=2) }}"' in out                       # a query of this page: nothing to map
    more = UrlScheme([Rule.parse("/p/<int:pid>", "/thread?id=<pid>")]).rewrite_source(
        '<a href="/p/{{ p.id }}/reply/{{ c.id }}">r</a><a href="/{{ \'unsave\' if s else \'save\' }}">s</a>'
        '<a href="/p/{{ p.id }}{{ \'?sort=\' ~ s }}">o</a><a href="{{ \'/p/1\' if a else \'/x\' }}">c</a>')
    assert 'href="/thread/reply/{{ c.id }}?id={{ p.id }}"' in more     # path parameters: written in the source
    assert 'href="/{{ \'unsave\' if s else \'save\' }}"' in more      # no alternative moves: left as it is
    assert 'href="{% filter variant_url %}/p/{{ p.id }}{{ \'?sort=\' ~ s }}{% endfilter %}"' in more
    assert 'href="{{ (\'/p/1\' if a else \'/x\')|variant_url }}"' in more


def test_scheme_urls_are_no_routes_of_today(app_name: str, env_of) -> None:
    """Every option's canonical prefixes are routes of the app; its own form matches no
    route of today's site (so the two forms never mean two pages), and the 404 prefix
    matches none."""
    spec = env_of(app_name).unwrapped.app.spec
    factor = next(f for f in catalogue(app_name).factors if f.name == "url_scheme")
    assert factor.held_out and factor.options[0].urls == ()
    for opt in factor.options[1:]:
        s = scheme(opt.urls)
        assert s is not None
        for canon, _ in opt.urls:
            sample = "/".join("7" if seg.startswith("<") else seg for seg in canon.split("/"))
            assert spec.match_page(sample) or spec.match_event(sample), (app_name, canon)
            wire = s.to_wire(sample)
            assert wire != sample
            assert spec.match_page(wire.partition("?")[0]) is None and spec.match_event(wire.partition("?")[0]) is None
            assert spec.match_page(UNMAPPED + sample) is None and spec.match_event(UNMAPPED + sample) is None


# ----------------------------------------------------------------------------- the browser
@pytest.mark.parametrize("app", APPS)
def test_every_oracle_solves_each_url_scheme(app: str) -> None:
    """A variant of every URL scheme: every template's oracle is a clean success; along the
    way no link or form action is in today's form, and the observation's URL is the
    variant's form of the URL the state keeps."""
    moved = 0
    for k in _scheme_variants(app):
        s = url_scheme(app, k)
        assert s is not None
        env = simweb.make(app, variant=k)
        u = env.unwrapped
        for i, tid in enumerate(u.app.tasks):
            obs, _ = env.reset(seed=k + i, options={"task": tid})
            info: dict = {}
            for a in [None, *u.oracle_plan()]:
                if a is not None:
                    obs, _, _, _, info = env.step(a)
                tab = u.state["browser"]["tabs"][u.state["browser"]["active"]]
                assert s.to_canonical(_path(obs["url"])) == tab["url"].partition("#")[0], (app, k, tid, obs["url"])
                moved += s.to_wire(tab["url"]) != tab["url"]
                page = u.browser.page()
                targets = [el.href for el in page.elements.values() if el.href] + [f.action for f in page.forms if f.action]
                stale = [t for t in targets if t.startswith("/") and s.to_canonical(t).startswith(UNMAPPED)]
                assert not stale, (app, k, tid, stale[:3])
            v = info["verdict"]
            assert v["success"] and v["clean"], (app, k, tid, v)
    assert moved, f"{app}: no oracle run went through a page whose URL a scheme moves"


@pytest.mark.parametrize("app", APPS)
def test_the_way_back_a_link_remembers_is_the_computed_one(app: str) -> None:
    """Mapping a URL to the variant's form remembers the way back (the link a page shows is
    the URL the browser requests next): on every scheme, for every link, form action and
    page URL of every template's oracle run, and for edge forms (percent-escapes, local
    paths in the query, fragments), the remembered canonical URL is the one a scheme that
    never mapped it computes."""
    checked = 0
    for k in _scheme_variants(app):
        env = simweb.make(app, variant=k)
        u = env.unwrapped
        bound = url_scheme(u.app, k)
        assert bound is not None

        def fresh(bound: UrlScheme = bound) -> UrlScheme:
            """The variant's scheme as a process first builds it: nothing mapped yet."""
            return bound.bind(bound.world) if bound.world is not None else UrlScheme(list(bound.rules))

        canon: set[str] = set()
        for i, tid in enumerate(sorted(u.app.tasks)):
            env.reset(seed=k + i, options={"task": tid})
            for a in [None, *u.oracle_plan()]:
                if a is not None:
                    env.step(a)
                page = u.browser.page()
                shown = [el.href for el in page.elements.values() if el.href] + [f.action for f in page.forms if f.action]
                computing = fresh()
                canon.update(computing.to_canonical(t) for t in shown if t.startswith("/"))
                canon.add(u.state["browser"]["tabs"][u.state["browser"]["active"]]["url"])
        canon |= {c + suffix for c in list(canon)[:50] for suffix in ("#top", "?next=/p/3", "?q=a%20b", "%20x")}
        for c in sorted(canon):
            if c.startswith(UNMAPPED):
                continue
            remembering, computing = fresh(), fresh()
            wire = remembering.to_wire(c)
            assert remembering.to_canonical(wire) == computing.to_canonical(wire), (app, k, c, wire)
            checked += wire != c
    assert checked > 20, f"{app}: only {checked} moved URLs checked"


def _moved_url(env) -> tuple[str, str]:
    """(a task, a URL as the state keeps it) that the env's variant shows in another form:
    the first one an oracle run of the app's templates goes through."""
    u = env.unwrapped
    s = _scheme(u.app.name, u.variant)
    for tid in sorted(u.app.tasks):
        env.reset(seed=0, options={"task": tid})
        for a in u.oracle_plan():
            env.step(a)
            url = u.state["browser"]["tabs"][u.state["browser"]["active"]]["url"]
            if s.to_wire(url) != url and u.state["browser"]["tabs"][0]["status"] == 200:
                return tid, url
    raise AssertionError("no moved URL")


@pytest.mark.parametrize("app", APPS)
def test_a_url_in_todays_form_is_a_404_on_a_variant(app: str) -> None:
    """goto() of today's URL on a variant whose scheme moves it: 404, the address bar
    shows what was typed; the variant's URL opens the page; back goes back."""
    k = _scheme_variants(app)[0]
    env = simweb.make(app, variant=k)
    tid, canon = _moved_url(env)
    wire = _scheme(app, k).to_wire(canon)
    env.reset(seed=0, options={"task": tid})   # its start state (signed in where the task is)
    obs, *_ = env.step(f"goto({wire!r})")
    tab = env.unwrapped.state["browser"]["tabs"][0]
    assert _path(obs["url"]) == wire and tab["url"] == canon and tab["status"] == 200
    obs, *_ = env.step(f"goto({canon!r})")
    tab = env.unwrapped.state["browser"]["tabs"][0]
    assert tab["status"] == 404 and tab["url"] == UNMAPPED + canon and _path(obs["url"]) == canon
    obs, *_ = env.step("go_back()")
    assert _path(obs["url"]) == wire and env.unwrapped.state["browser"]["tabs"][0]["status"] == 200


def test_sign_in_redirect_and_next_in_the_variants_form() -> None:
    """A page that asks to sign in redirects with ``next=`` in the variant's form, and
    signing in lands on the variant's URL."""
    cat = catalogue("shopping")
    k = next(k for k in range(1, cat.count) if cat.values(k)["url_scheme"] == "product")
    env = simweb.make("shopping", variant=k)
    env.reset(seed=0, options={"task": None})
    u = env.unwrapped
    assert u.state["browser"]["user"] is None
    obs, *_ = env.step("goto('/account/order/3')")
    assert _path(obs["url"]) == "/login?next=/account/order/3"
    assert u.state["browser"]["tabs"][0]["url"] == "/login?next=/account/orders/3"   # the state: today's form
    row = entity(u.app, u.state, "users", 1)
    assert row is not None
    env.step(f"fill('login-user', {row['username']!r})")
    env.step(f"fill('login-password', {row['password']!r})")
    obs, *_ = env.step("click('login-submit')")
    assert u.state["browser"]["user"] == 1
    assert _path(obs["url"]) == "/account/order/3" and u.state["browser"]["tabs"][0]["url"] == "/account/orders/3"


def test_snapshot_fork_restore_carry_the_scheme() -> None:
    k = _scheme_variants("forum")[0]
    env = simweb.make("forum", variant=k)
    tid, canon = _moved_url(env)
    wire = _scheme("forum", k).to_wire(canon)
    env.reset(seed=0, options={"task": tid})
    env.step(f"goto({wire!r})")
    state = env.unwrapped.snapshot()
    assert state["browser"]["tabs"][0]["url"] == canon and state["meta"]["variant"] == k
    fork = env.unwrapped.fork()
    assert _path(fork.step("noop()")[0]["url"]) == wire
    other = simweb.make("forum")                      # an env of today's site: the state decides
    other.reset(seed=0)
    other.unwrapped.restore(state)
    assert _path(other.step("noop()")[0]["url"]) == wire


def test_served_mode_maps_requests_and_redirects() -> None:
    """The served site answers the variant's URLs, 404s today's form of a moved route,
    and writes redirects (with their next=) in the variant's form."""
    from simweb.serving.server import create_app

    cat = catalogue("shopping")
    k = next(k for k in range(1, cat.count) if cat.values(k)["url_scheme"] == "item-query")
    env = simweb.make("shopping", variant=k)
    _, canon = _moved_url(env)
    wire = _scheme("shopping", k).to_wire(canon)
    assert wire.startswith("/item?id=")
    client = create_app("shopping", variant=k).test_client()
    assert client.get(wire).status_code == 200
    home = client.get("/").get_data(as_text=True)
    assert 'href="/item?id=' in home and 'href="/p/' not in home
    assert client.get(canon).status_code == 404
    k2 = next(k for k in range(1, cat.count) if cat.values(k)["url_scheme"] == "dp")
    client = create_app("shopping", variant=k2).test_client()
    r = client.get("/orders/3")
    assert r.status_code == 303 and r.headers["Location"].endswith("/login?next=/orders/3")


def test_red_team_opens_the_urls_a_state_keeps_in_the_variants_form() -> None:
    """The red team's page attacks goto the URLs of a state's history: on a variant with a
    URL scheme they open the variant's form (today's would be a 404 and test nothing), and
    the pages they find linked are kept as the state keeps URLs."""
    from simweb.tools.redteam import _goto, _linked
    from simweb.web.browsing import SimBrowser

    cat = catalogue("shopping")
    k = next(k for k in range(1, cat.count) if cat.values(k)["url_scheme"] == "item-query")
    env = simweb.make("shopping", variant=k)
    u = env.unwrapped
    _, canon = _moved_url(env)
    state = u.snapshot()
    action = _goto(u, state, canon)
    assert action == f"goto({_scheme('shopping', k).to_wire(canon)!r})"
    b = SimBrowser(u.app, state)
    assert b.execute(action) is None and state["browser"]["tabs"][0]["status"] == 200
    linked = _linked(u, u.snapshot(), [canon])
    assert linked and not any(url.startswith(UNMAPPED) or url.startswith("/item") for url in linked)
