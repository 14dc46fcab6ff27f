"""Slug URLs of site variants (simweb.runtime.url_schemes, docs/variants.md "URL schemes"):
a scheme whose segment carries a slug of world data beside the id (``/product/grey-scarf-12``,
``/hotel/7-harbor-inn``). Links carry the world row's slug, a typed slug URL opens the
page, a wrong or absent slug lands on the page's own URL (a permanent redirect on the
served site), today's URL stays a 404, and the state keeps today's URLs."""
from __future__ import annotations

import re
from urllib.parse import urlsplit

import pytest

import simweb
from simweb.runtime.url_schemes import SLUG_MAX, UNMAPPED, Rule, UrlScheme, UrlSchemeError, scheme, slugify
from simweb.runtime.variants import VariantError, catalogue, url_scheme

#: The apps whose url_scheme factor offers a slug option.
SLUG_APPS = ("shopping", "booking", "cms")


def _slug_option(app: str) -> tuple[str, Rule]:
    """(label, rule) of the app's url_scheme option whose rule writes a slug."""
    factor = next(f for f in catalogue(app).factors if f.name == "url_scheme")
    for opt in factor.options:
        for canon, wire in opt.urls:
            rule = Rule.parse(canon, wire)
            if rule.slugs:
                return opt.label, rule
    raise AssertionError(f"{app}: no slug option")


def _slug_variant(app: str) -> int:
    """The first variant of the app's slug scheme (asked of the catalogue)."""
    label, _ = _slug_option(app)
    cat = catalogue(app)
    return next(k for k in range(1, cat.count) if cat.values(k)["url_scheme"] == label)


def _path(obs_url: str) -> str:
    parts = urlsplit(obs_url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


def _canon_url(rule: Rule, rid: int) -> str:
    return "/" + "/".join(str(rid) if param else lit for lit, param in rule.canon)


def _world_slug(env, rule: Rule, rid: int) -> str:
    _i, _name, table, column, _first = rule.slugs[0]
    value = env.unwrapped.app.world.column_value(table, column, rid)
    return slugify(value)


# ----------------------------------------------------------------------------- the mapping
def test_slugify_is_ascii_lowercase_hyphens() -> None:
    assert slugify("The Grey Wool Scarf (2-pack)") == "the-grey-wool-scarf-2-pack"
    assert slugify("  Café Zürich — Hôtel & Spa!  ") == "cafe-zurich-hotel-spa"
    assert slugify("A beginner's guide") == "a-beginner-s-guide"
    assert slugify("日本語") == "" and slugify("") == "" and slugify("---") == ""
    long = slugify(" ".join(["word"] * 40))
    assert len(long) <= SLUG_MAX and not long.endswith("-") and long.startswith("word-word")
    assert slugify("x" * 100) == "x" * SLUG_MAX
    for s in ("Grey Scarf", "Hôtel Ïle", "Part 7: Why?"):
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", slugify(s)) and slugify(slugify(s)) == slugify(s)


class _World:
    """A world of two products (the column_values contract)."""

    def column_values(self, table: str, column: str) -> dict[int, object]:
        if (table, column) != ("products", "name"):
            raise ValueError(f"no column {table}.{column}")
        return {12: "Grey Wool Scarf", 7: "Été Hat"}


def test_slug_rules_map_both_ways() -> None:
    unbound = scheme((("/p/<int:pid>", "/product/<slug:products.name>-<pid>"),))
    assert unbound is not None and unbound.slugged
    s = unbound.bind(_World())
    assert s.to_wire("/p/12") == "/product/grey-wool-scarf-12"
    assert s.to_wire("/p/12/reviews?page=2") == "/product/grey-wool-scarf-12/reviews?page=2"
    assert s.to_wire("/p/7") == "/product/ete-hat-7"
    assert s.to_wire("/p/99") == "/product/99"                  # no world row (made at run time): the id alone
    assert s.to_wire("/login?next=/p/12") == "/login?next=/product/grey-wool-scarf-12"
    assert s.to_canonical("/product/grey-wool-scarf-12/reviews?page=2") == "/p/12/reviews?page=2"
    # a wrong or absent slug names the same page; redirect() gives its own URL
    for wrong in ("/product/red-hat-12", "/product/12", "/product/GREY-wool-12"):
        assert s.to_canonical(wrong) == "/p/12"
        assert s.redirect(wrong) == "/product/grey-wool-scarf-12"
    assert s.redirect("/product/wrong-12/reviews") == "/product/grey-wool-scarf-12/reviews"
    assert s.redirect("/product/grey-wool-scarf-12") is None and s.redirect("/product/99") is None
    assert s.redirect("/cart") is None and s.redirect("/p/12") is None
    assert s.to_canonical("/p/12") == UNMAPPED + "/p/12"        # today's form: a 404 as on every scheme
    assert s.to_canonical("/product/grey-wool-scarf") == "/product/grey-wool-scarf"   # no id: no page
    # the id first
    t = UrlScheme([Rule.parse("/hotels/<int:h>", "/hotel/<h>-<slug:products.name>")], _World())
    assert t.to_wire("/hotels/12") == "/hotel/12-grey-wool-scarf" and t.to_canonical("/hotel/12-x") == "/hotels/12"
    assert t.redirect("/hotel/12") == "/hotel/12-grey-wool-scarf"
    # an unbound scheme (an app's name) knows no slug
    assert unbound.to_wire("/p/12") == "/product/12" and unbound.to_canonical("/product/any-12") == "/p/12"
    for bad in (("/p/<pid>", "/product/<slug:products.name>-<pid>"),          # a slug goes with an id
                ("/p/<int:pid>", "/product/<slug:products>-<pid>"),           # table.column
                ("/p/<int:pid>", "/product/<slug:products.name><pid>")):
        with pytest.raises(UrlSchemeError):
            Rule.parse(*bad)
    with pytest.raises(UrlSchemeError):
        scheme((("/p/<int:pid>", "/product/<slug:products.nope>-<pid>"),)).bind(_World())  # type: ignore[union-attr]


def test_slug_links_in_templates_are_written_at_render() -> None:
    s = UrlScheme([Rule.parse("/p/<int:pid>", "/product/<slug:products.name>-<pid>")])
    out = s.rewrite_source('<a href="/p/{{ p.id }}/reviews">x</a><a href="/p/12">l</a><a href="/cart">c</a>'
                           '<a href="{{ it.url }}">m</a>')
    # the id's segment through a per-id filter, written in the source; a literal or a data link at render
    assert 'href="/product/{{ (p.id)|variant_slug_0 }}/reviews"' in out
    assert 'href="{% filter variant_url %}/p/12{% endfilter %}"' in out and 'href="/cart"' in out
    assert 'href="{{ (it.url)|variant_url }}"' in out
    import jinja2

    from simweb.runtime.url_schemes import template_filters
    env = jinja2.Environment(autoescape=True)
    env.filters.update(template_filters(s.bind(_World())))
    html = env.from_string(out).render(p={"id": 12}, it={"url": "/p/7"})
    assert 'href="/product/grey-wool-scarf-12/reviews"' in html and 'href="/product/ete-hat-7"' in html
    for value, seg in ((12, "grey-wool-scarf-12"), ("12", "grey-wool-scarf-12"), (99, "99"), ("new", "new"), (None, "None")):
        assert env.from_string("{{ x|variant_slug_0 }}").render(x=value) == seg   # as to_wire writes the id's segment
    assert 'href="/product/grey-wool-scarf-12"' in html


@pytest.mark.parametrize("app", SLUG_APPS)
def test_world_slug_sources_exist(app: str, env_of) -> None:
    """Every slug rule of every option names a world column that holds text; the world
    refuses other names."""
    world = env_of(app).unwrapped.app.world
    factor = next(f for f in catalogue(app).factors if f.name == "url_scheme")
    for opt in factor.options:
        for canon, wire in opt.urls:
            for _i, _name, table, column, _first in Rule.parse(canon, wire).slugs:
                assert isinstance(world.column_value(table, column, 1), str), (app, table, column)
                assert world.column_value(table, column, world.max_id(table) + 1) is None
    for table, column in (("products; drop", "name"), ("nope", "name"), ("users", "nope")):
        with pytest.raises(ValueError):
            world.column_value(table, column, 1)
        with pytest.raises(ValueError):
            world.column_values(table, column)


@pytest.mark.parametrize("app", SLUG_APPS)
def test_slugs_are_read_once_per_world_column(app: str, env_of, monkeypatch: pytest.MonkeyPatch) -> None:
    """A bound scheme reads each slug column whole, once, and keeps it by (table, column):
    every row's slug is its own row's, a column never answers for another, and rendering
    a slug link queries the world no more (a step makes no slug query)."""
    world = env_of(app).unwrapped.app.world
    factor = next(f for f in catalogue(app).factors if f.name == "url_scheme")
    rules = [r for opt in factor.options for r in opt.urls if "<slug:" in r[1]]
    bound = [scheme((r,)).bind(world) for r in rules]   # type: ignore[union-attr]
    sources = {(t, c) for s in bound for t, c, _f in s.slug_sources}
    for table, column in sources:
        values = world.column_values(table, column)
        assert world.column_values(table, column) is values   # kept on the world: one read
        top = world.max_id(table)
        for rid in (1, 2, top // 2, top):
            assert values[rid] == world.column_value(table, column, rid)
        assert top + 1 not in values
    monkeypatch.setattr(type(world), "column_value", lambda *a: pytest.fail("a slug read the world per row"))
    for s in bound:
        for table, column, _first in s.slug_sources:
            top = world.max_id(table)
            for rid in (1, 3, top):
                assert s.slug(table, column, str(rid)) == slugify(world.column_values(table, column)[rid])
            assert s.slug(table, column, str(top + 1)) == ""   # a row made at run time: no slug


# ----------------------------------------------------------------------------- the browser
@pytest.mark.parametrize("app", SLUG_APPS)
def test_links_carry_slugs_and_every_oracle_solves_a_slug_variant(app: str) -> None:
    """On a slug variant every template's oracle is a clean success; every link and form
    action to an entity page carries that row's slug from the world; the observation's URL
    is the variant's form (with the slug) of the URL the state keeps, which is today's."""
    k = _slug_variant(app)
    _, rule = _slug_option(app)
    env = simweb.make(app, variant=k)
    u = env.unwrapped
    s = url_scheme(u.app, k)
    assert s is not None and s.slugged
    head = rule.wire_path[0][0]
    slugged = 0
    for i, tid in enumerate(sorted(u.app.tasks)):
        obs, _ = env.reset(seed=k + i, options={"task": tid})
        info: dict = {}
        for a in [None, *u.oracle_plan()]:
            if a is not None:
                obs, _, _, _, info = env.step(a)
            tab = u.state["browser"]["tabs"][u.state["browser"]["active"]]
            assert not tab["url"].startswith("/" + head + "/"), (app, tid, tab["url"])   # the state: today's form
            assert _path(obs["url"]) == s.to_wire(tab["url"]).partition("#")[0], (app, tid, obs["url"])
            page = u.browser.page()
            for t in [el.href for el in page.elements.values() if el.href] + [f.action for f in page.forms if f.action]:
                if not t.startswith("/" + head + "/"):
                    continue
                canon = s.to_canonical(t)
                assert not canon.startswith(UNMAPPED) and s.redirect(t) is None, (app, tid, t)
                rid = int(canon.partition("?")[0].partition("#")[0].split("/")[len(rule.canon)])
                want = _world_slug(env, rule, rid)
                if want:
                    assert want in t, (app, tid, t, want)
                    slugged += 1
        v = info["verdict"]
        assert v["success"] and v["clean"], (app, k, tid, v)
    assert slugged, f"{app}: no oracle run went through a link with a slug"


@pytest.mark.parametrize("app", SLUG_APPS)
def test_typed_slug_urls_and_wrong_slugs(app: str) -> None:
    """goto() of a slug URL opens the page; a wrong or absent slug opens the same page at
    its own URL (as a browser shows a redirect's target); today's URL is a 404; back and a
    fork keep today's URLs in the state."""
    k = _slug_variant(app)
    _, rule = _slug_option(app)
    env = simweb.make(app, variant=k)
    u = env.unwrapped
    env.reset(seed=0, options={"task": None})
    s = url_scheme(u.app, k)
    assert s is not None
    rid = 3
    canon = _canon_url(rule, rid)
    wire = s.to_wire(canon)
    slug = _world_slug(env, rule, rid)
    assert slug and slug in wire and wire != canon
    obs, *_ = env.step(f"goto({wire!r})")
    tab = u.state["browser"]["tabs"][0]
    assert _path(obs["url"]) == wire and tab["url"] == canon and tab["status"] == 200
    ax = obs["axtree"]
    for typed in (wire.replace(slug, "not-the-name"), wire.replace(slug + "-", "").replace("-" + slug, "")):
        assert typed != wire
        obs, *_ = env.step(f"goto({typed!r})")
        tab = u.state["browser"]["tabs"][0]
        assert _path(obs["url"]) == wire and tab["url"] == canon and tab["status"] == 200, (app, typed)
        assert obs["axtree"] == ax
    obs, *_ = env.step(f"goto({canon!r})")
    tab = u.state["browser"]["tabs"][0]
    assert tab["status"] == 404 and tab["url"] == UNMAPPED + canon and _path(obs["url"]) == canon
    # typed on the page itself, the redirected URL replaces its entry (as the served
    # session's state records it; docs/variants.md: Chromium itself adds one)
    assert u.state["browser"]["tabs"][0]["history"][-2:] == [canon, UNMAPPED + canon]
    obs, *_ = env.step("go_back()")
    assert _path(obs["url"]) == wire
    state = u.snapshot()
    urls = [e if isinstance(e, str) else e.get("url", "") for t in state["browser"]["tabs"]
            for e in [t["url"], *t.get("history", [])]]
    assert urls and not any(slug in str(x) for x in urls), urls
    with pytest.raises(VariantError):
        url_scheme(u.app, catalogue(app).count)


def test_served_site_redirects_a_wrong_slug() -> None:
    """The served site: the slug URL is the page, a wrong or absent slug a 301 to it (no
    change to the session), today's URL a 404, links carry slugs."""
    from simweb.serving.server import create_app

    app = "shopping"
    k = _slug_variant(app)
    _, rule = _slug_option(app)
    env = simweb.make(app, variant=k)
    env.reset(seed=0, options={"task": None})
    s = url_scheme(env.unwrapped.app, k)
    assert s is not None
    canon = _canon_url(rule, 12)
    wire = s.to_wire(canon)
    slug = _world_slug(env, rule, 12)
    client = create_app(app, variant=k).test_client()
    page = client.get(wire)
    assert page.status_code == 200
    for typed in (wire.replace(slug, "wrong"), wire.replace(slug + "-", "")):
        r = client.get(typed)
        assert r.status_code == 301 and r.headers["Location"].endswith(wire), (typed, r.headers.get("Location"))
    assert client.get(canon).status_code == 404
    home = client.get("/").get_data(as_text=True)
    links = re.findall(r'href="(/' + rule.wire_path[0][0] + r'/[^"]+)"', home)
    assert links and all(re.fullmatch(r"/[a-z]+/[a-z0-9-]+-\d+", x) for x in links), links[:3]


def test_one_bounded_memo() -> None:
    """simweb.runtime.memo.memoised: computed once per key, emptied at its bound."""
    from simweb.runtime.memo import memoised

    calls: list[int] = []

    def double(x: int) -> int:
        calls.append(x)
        return 2 * x

    memo: dict[int, int] = {}
    assert [memoised(memo, x, double, 3) for x in (1, 2, 1, 2)] == [2, 4, 2, 4] and calls == [1, 2]
    memoised(memo, 3, double, 3)
    assert len(memo) == 3
    assert memoised(memo, 4, double, 3) == 8 and memo == {4: 8}   # at the bound: emptied first
    assert memoised(memo, 1, double, 3) == 2 and calls == [1, 2, 3, 4, 1]
