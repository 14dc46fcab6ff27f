"""The list_style factor of site variants (simweb.runtime.variant_lists, docs/variants.md
"Result lists"): an app's declared result lists shown as rows (today), cards (a region of
articles), a table (rows of cells) or, held out, a summary list (terms and definitions),
by a rewrite of the templates' source. The AX tree's roles change, every element keeps
its bid, every template's oracle still solves the site, and Chromium shows the same tree."""
from __future__ import annotations

import json
import re
from typing import Any

import pytest
from conftest import APPS, assert_every_oracle_solves, assert_walks_agree, served_browser

import simweb
from simweb.runtime import template_tokens, variant_lists
from simweb.runtime.variants import VariantError, _site_of, _template_sources, catalogue

#: A page of each app with a declared result list, and the bids of that list's items.
PAGES = {
    "shopping": ("/search?q=a", r"product-\d+"),
    "booking": ("/search?city=Amsterdam", r"hotel-\d+"),
    "forum": ("/", r"post-\d+"),
    "issues": ("/projects/acme/billing-service/issues", r"issue-\d+-\d+"),
    "cms": ("/", r"post-\d+"),
}
#: The roles above an item's link, innermost first, in each style (cms's items are
#: articles today, without a container).
ROLES = {
    "rows": ("listitem", "list"),
    "cards": ("article", "region"),
    "table": ("cell", "row", "rowgroup", "table"),
    "summary": ("term", "list"),
}


def _with(app: str, **want: str) -> int:
    """The first variant whose factors take these values (by label), with today's policies,
    the top bar shown, and a start signed in, unless asked."""
    cat = catalogue(app)
    want.setdefault("menu", "bar")
    want.setdefault("url_scheme", next(f for f in cat.factors if f.name == "url_scheme").options[0].label)
    if "sign_in" in {f.name for f in cat.factors}:
        want.setdefault("sign_in", "signed-in")
    return next(k for k in range(1, cat.count) if all(cat.values(k)[f] == v for f, v in want.items())
                and cat.policies(k) == cat.policy_defaults)


def _env(app: str, variant: int) -> Any:
    env = simweb.make(app, variant=variant, max_steps=100_000)
    env.reset(seed=0, options={"task": None})
    return env.unwrapped


def _page(app: str, variant: int) -> tuple[Any, str]:
    env = _env(app, variant)
    obs, *_ = env.step(f"goto('{PAGES[app][0]}')")
    assert not obs["last_action_error"], obs["last_action_error"]
    return env, obs["axtree"]


def _ancestors(axtree: str, bid: str) -> list[str]:
    """The roles of the lines above ``bid``'s line, innermost first."""
    lines = axtree.splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.lstrip("\t").startswith(f"[{bid}] "))
    depth = len(lines[at]) - len(lines[at].lstrip("\t"))
    out = []
    for ln in reversed(lines[:at]):
        d = len(ln) - len(ln.lstrip("\t"))
        if d < depth:
            depth = d
            body = re.sub(r"^\[[^\]]*\] ", "", ln.lstrip("\t"))
            out.append(body.split(" ", 1)[0])
    return out


def _item_bids(env: Any, app: str) -> list[str]:
    pattern = re.compile(PAGES[app][1])
    return [b for b in env.browser.page().elements if pattern.fullmatch(b)]


# ----------------------------------------------------------------------------- the factor
def test_the_factor_and_its_split() -> None:
    for app in APPS:
        cat = catalogue(app)
        names = [f.name for f in cat.factors]
        assert names.index("list_style") == names.index("menu") + 1
        factor = cat.factors[names.index("list_style")]
        assert [o.label for o in factor.options] == list(variant_lists.OPTIONS)
        assert factor.held_out == {variant_lists.HELD_OUT}
        assert cat.values(0)["list_style"] == "rows"
        assert cat.lists, app   # every app declares its result lists
        seen = {cat.values(k)["list_style"] for k in range(40)}
        assert seen == set(variant_lists.OPTIONS), app
        assert all(cat.split(k) == "test" for k in range(200) if cat.values(k)["list_style"] == "summary")


_STRUCTURE = frozenset({"listitem", "list", "article", "region", "cell", "row", "rowgroup", "table", "term",
                        "definition"})


@pytest.mark.parametrize("app", APPS)
@pytest.mark.parametrize("style", variant_lists.OPTIONS)
def test_the_list_takes_the_style_roles_and_keeps_its_bids(app: str, style: str) -> None:
    """The items' links sit under the style's roles (list and listitem today; a region of
    articles; a table's cells and rows; terms of a list), and the page has the same items
    with the same bids, in the same order, as today's site."""
    env, ax = _page(app, _with(app, list_style=style))
    today, today_ax = _page(app, 0)
    bids = _item_bids(env, app)
    assert bids and bids == _item_bids(today, app)
    want = ("article",) if app == "cms" and style == "rows" else ROLES[style]
    for bid in bids[:3]:
        roles = [r for r in _ancestors(ax, bid) if r in _STRUCTURE]
        assert tuple(roles[:len(want)]) == want, (bid, roles)
        today_roles = [r for r in _ancestors(today_ax, bid) if r in _STRUCTURE]
        assert today_roles[:1] == (["article"] if app == "cms" else ["listitem"]), today_roles
    if style != "rows":
        assert ax != today_ax


def test_an_item_keeps_every_control_and_its_form() -> None:
    """Forum's post rows as table rows: the vote form is one cell of the row, whole, and
    an upvote clicked in the table changes the state as the same click in today's list."""
    k = _with("forum", list_style="table")
    runtimes = []
    for variant in (0, k):
        env = simweb.make("forum", variant=variant, max_steps=100_000)
        env.reset(seed=0, options={"task": "forum/upvote_post"})   # a start signed in
        obs, *_ = env.step("goto('/')")
        bid = _item_bids(env.unwrapped, "forum")[0]
        if variant:
            assert _ancestors(obs["axtree"], f"{bid}-up")[:3] == ["form", "cell", "row"], obs["axtree"][:3000]
        before = json.dumps(env.unwrapped.state["runtime"], sort_keys=True)
        obs, *_ = env.step(f"click('{bid}-up')")
        assert not obs["last_action_error"] and json.dumps(env.unwrapped.state["runtime"], sort_keys=True) != before
        runtimes.append(json.dumps(env.unwrapped.state["runtime"], sort_keys=True))
    assert runtimes[0] == runtimes[1]


def test_the_rewrite_splits_an_item_into_its_parts() -> None:
    """Parts are top-level elements, Jinja blocks and runs of shown text; a conditional or
    a loop is one part, a statement alone is none."""
    decl = variant_lists.parse("t", [{"list": "ul.r", "name": "Results"}])
    src = ('<ul class="r">{% for x in xs %}<li bid="i-{{ x }}" class="a">{% set y = x %}<a href="/">{{ x }}</a> '
           '<span>s</span>{% if y %}<p>1</p>{% else %}<p>2</p>{% endif %}{{ y }} tail</li>'
           '{% else %}<li bid="none">Nothing.</li>{% endfor %}</ul><ul class="other"><li>x</li></ul>')
    table = variant_lists.rewrite(src, "table", decl)
    assert table == ('<table role="table" class="r vlist vlist-table" aria-label="Results"><tbody>{% for x in xs %}'
                     '<tr bid="i-{{ x }}" class="a vitem">{% set y = x %}<td><a href="/">{{ x }}</a></td> '
                     '<td><span>s</span></td><td>{% if y %}<p>1</p>{% else %}<p>2</p>{% endif %}</td>'
                     '<td>{{ y }} tail</td></tr>{% else %}<tr class="vitem" bid="none"><td>Nothing.</td></tr>'
                     '{% endfor %}</tbody></table><ul class="other"><li>x</li></ul>')
    summary = variant_lists.rewrite(src, "summary", decl)
    assert ('{% for x in xs %}{% set y = x %} <dt bid="i-{{ x }}" class="a vitem"><a href="/">{{ x }}</a></dt>'
            '<dd><span>s</span> {% if y %}<p>1</p>{% else %}<p>2</p>{% endif %} {{ y }} tail</dd>') in summary
    assert '<dt class="vitem" bid="none">Nothing.</dt>' in summary and summary.startswith('<dl class="r vlist')
    cards = variant_lists.rewrite(src, "cards", decl)
    assert cards.startswith('<section class="r vlist vlist-cards" aria-label="Results">') and cards.count("<article") == 2
    assert variant_lists.rewrite(src, "rows", decl) == src and variant_lists.rewrite(src, "", decl) == src
    # items without a container: their loop is wrapped in one
    loose = variant_lists.parse("t", [{"item": "article.card", "name": "Posts"}])
    src = '<h1>x</h1>{% for p in ps %}<article class="card"><h2>{{ p }}</h2><p>s</p></article>{% endfor %}<p>end</p>'
    assert variant_lists.rewrite(src, "table", loose) == (
        '<h1>x</h1><table role="table" class="vlist vlist-table" aria-label="Posts"><tbody>{% for p in ps %}'
        '<tr class="card vitem"><td><h2>{{ p }}</h2></td><td><p>s</p></td></tr>{% endfor %}</tbody></table><p>end</p>')


def test_the_layout_walks_share_one_reading_of_the_tokens() -> None:
    """simweb.runtime.template_tokens: what each token of a template does to the nesting
    of elements and Jinja blocks, the reading the parts, the sections' parent and the
    filter form's siblings all walk."""
    src = ('<div a="{{ x > 1 }}">{# c #}<!-- h --><br><img src="x"/>{% if y %}{{ y }}{% elif z %}'
           '{% set n = 1 %}{% set block %}b{% endset %}{% else %}</br>{% endif %}</div>')
    got = [(t.kind, t.name, t.match.group(0)) for t in template_tokens.tokens(src)]
    tt = template_tokens
    assert got == [(tt.OPEN, "div", '<div a="{{ x > 1 }}">'), (tt.COMMENT, "", "{# c #}"), (tt.COMMENT, "", "<!-- h -->"),
                   (tt.LEAF, "br", "<br>"), (tt.LEAF, "img", '<img src="x"/>'), (tt.OPEN, tt.JINJA, "{% if y %}"),
                   (tt.EXPRESSION, "", "{{ y }}"), (tt.BRANCH, tt.JINJA, "{% elif z %}"),
                   (tt.STATEMENT, tt.JINJA, "{% set n = 1 %}"), (tt.OPEN, tt.JINJA, "{% set block %}"),
                   (tt.CLOSE, tt.JINJA, "{% endset %}"), (tt.BRANCH, tt.JINJA, "{% else %}"),
                   (tt.LEAF, "br", "</br>"), (tt.CLOSE, tt.JINJA, "{% endif %}"), (tt.CLOSE, "div", "</div>")]
    between = template_tokens.tokens(src, src.index("{#"), src.index("<img"))
    assert [t.match.group(0) for t in between] == ["{# c #}", "<!-- h -->", "<br>"]


def test_a_table_has_a_header_row_of_its_columns() -> None:
    """Declared columns: a ``<thead>`` row with a ``<th scope="col">`` per name, before the
    body; an item of one part (the empty list's message) is one cell spanning them; the
    other styles have no header."""
    decl = variant_lists.parse("t", [{"list": "ul.r", "name": "Results", "columns": ["Title", "Size", "When"]}])
    src = ('<ul class="r">{% for x in xs %}<li><a href="/">{{ x }}</a> <span>s</span> <p>w</p></li>'
           '{% else %}<li bid="none">Nothing.</li>{% endfor %}</ul>')
    assert variant_lists.rewrite(src, "table", decl) == (
        '<table role="table" class="r vlist vlist-table" aria-label="Results"><thead><tr><th scope="col">Title</th>'
        '<th scope="col">Size</th><th scope="col">When</th></tr></thead><tbody>{% for x in xs %}<tr class="vitem">'
        '<td><a href="/">{{ x }}</a></td> <td><span>s</span></td> <td><p>w</p></td></tr>{% else %}'
        '<tr class="vitem" bid="none"><td colspan="3">Nothing.</td></tr>{% endfor %}</tbody></table>')
    for style in ("cards", "summary"):
        assert "<th" not in variant_lists.rewrite(src, style, decl) and "colspan" not in variant_lists.rewrite(
            src, style, decl)
    loose = variant_lists.parse("t", [{"item": "article.card", "name": "Posts", "columns": ["Title", "Text"]}])
    src = '{% for p in ps %}<article class="card"><h2>{{ p }}</h2><p>s</p></article>{% endfor %}'
    assert variant_lists.rewrite(src, "table", loose).startswith(
        '<table role="table" class="vlist vlist-table" aria-label="Posts"><thead><tr><th scope="col">Title</th>'
        '<th scope="col">Text</th></tr></thead><tbody>{% for p in ps %}')


def test_columns_that_do_not_match_an_items_parts_are_refused() -> None:
    """The column count is checked against every item the declaration finds in the app's
    templates (one-part items excepted): a mismatch is one line naming the template."""
    decl = variant_lists.parse("t", [{"list": "ul.r", "name": "Results", "columns": ["A", "B"]}])
    ok = {"a.html": '<ul class="r"><li><a href="/">x</a> <p>y</p></li><li>Nothing.</li></ul>'}
    variant_lists.check_columns("t", decl, ok)
    bad = {**ok, "b.html": '<ul class="r"><li><a href="/">x</a> <p>y</p> <p>z</p></li></ul>'}
    with pytest.raises(variant_lists.ListsError) as err:
        variant_lists.check_columns("t", decl, bad)
    assert str(err.value) == "t variants: lists[0] has 2 columns (A, B) but an item in b.html has 3 parts"
    # the forum's posts: two parts a row (the vote form, the post), saved comments included
    from importlib import resources

    from simweb.runtime.registry import definition
    sources = _template_sources(resources.files(definition("forum").package) / "templates")
    assert "saved.html" in sources and "macros.html" in sources
    forum = catalogue("forum").lists
    variant_lists.check_columns("forum", forum, sources)
    three = tuple(variant_lists.ListDecl(d.tag, d.cls, d.item_tag, d.item_cls, d.name, ("A", "B", "C")) for d in forum)
    with pytest.raises(variant_lists.ListsError, match="has 3 columns .* but an item in .* has 2 parts"):
        variant_lists.check_columns("forum", three, sources)


@pytest.mark.parametrize("app", APPS)
def test_the_table_shows_its_column_headers(app: str) -> None:
    """On a table variant the list's first row group is one row of columnheaders named by the
    declared columns in the variant's words, as many as an item's cells; both AX walks read
    the page alike; no other style has a header."""
    variant = _with(app, list_style="table")
    env, ax = _page(app, variant)
    assert_walks_agree(env.browser.html())
    lines = ax.splitlines()
    at = next(i for i, ln in enumerate(lines) if re.match(r"\t*table '", ln))
    depth = len(lines[at]) - len(lines[at].lstrip("\t"))
    below = [ln[depth + 1:] for ln in lines[at + 1:at + 40]]
    words = _site_of(env.app, variant).words
    columns = [words(c) for c in catalogue(app).lists[0].columns]
    assert below[:2 + len(columns)] == ["rowgroup ''", "\trow ''", *(f"\t\tcolumnheader '{c}'" for c in columns)], below
    assert below[2 + len(columns)] == "rowgroup ''"
    row = 2 + len(columns) + 1
    cells = [ln for ln in below[row + 1:] if re.fullmatch(r"\t\tcell ''", ln)]
    end = next(i for i, ln in enumerate(below[row + 1:]) if not ln.startswith("\t\t"))
    assert len([ln for ln in below[row + 1:row + 1 + end] if ln == "\t\tcell ''"]) == len(columns), cells
    for style in ("rows", "cards", "summary"):
        _, other = _page(app, _with(app, list_style=style))
        assert "columnheader" not in other


def test_a_template_can_name_the_columns_otherwise() -> None:
    """``template_columns``: the templates it names draw the table's header row with their
    own names (as many as ``columns``), every other template with ``columns``; a template
    the app does not have is refused when the catalogue checks the columns."""
    decl = variant_lists.parse("t", [{"list": "ul.r", "name": "Results", "columns": ["Title", "Price"],
                                      "template_columns": {"saved.html": ["Title", "Actions"]}}])
    src = '<ul class="r">{% for x in xs %}<li><a href="/">{{ x }}</a> <span>s</span></li>{% endfor %}</ul>'
    head = '<thead><tr><th scope="col">Title</th><th scope="col">{}</th></tr></thead>'
    assert head.format("Actions") in variant_lists.rewrite(src, "table", decl, "saved.html")
    for template in ("search.html", ""):
        assert head.format("Price") in variant_lists.rewrite(src, "table", decl, template)
    assert decl[0].columns_in("saved.html") == ("Title", "Actions") and decl[0].columns_in("x.html") == ("Title", "Price")
    variant_lists.check_columns("t", decl, {"saved.html": src, "search.html": src})
    with pytest.raises(variant_lists.ListsError, match="template_columns name saved.html, a template the app does not"):
        variant_lists.check_columns("t", decl, {"search.html": src})


def test_bookings_saved_hotels_table_names_its_button_column() -> None:
    """Booking's saved hotels as a table: the third column, whose cells hold a Remove
    button, is "Actions" (the search results' is "Options", a price or availability)."""
    variant = _with("booking", list_style="table")
    env = simweb.make("booking", variant=variant, max_steps=100_000).unwrapped
    for tid in env.app.tasks:   # a start signed in: the saved hotels are an account's
        env.reset(seed=0, options={"task": tid})
        if env.state["browser"]["user"] is not None:
            break
    words = _site_of(env.app, variant).words
    for url, third in (("/account/favorites", "Actions"), (PAGES["booking"][0], "Options")):
        obs, *_ = env.step(f"goto({url!r})")
        assert not obs["last_action_error"], obs["last_action_error"]
        headers = re.findall(r"columnheader '([^']*)'", obs["axtree"])
        assert headers == [words(c) for c in ("Hotel", "Details", third)], (url, headers)


@pytest.mark.parametrize("raw", [{"lists": 3}, [{"name": "x"}], [{"list": "div.x", "name": "x"}], [{"list": "ul"}],
                                 [{"list": "ul.x", "name": "x", "rows": 2}], [{"item": "li x", "name": "x"}],
                                 [{"list": "ul.x", "name": "{{ secret }}"}], [{"list": "ul.x", "name": 'a" onclick="x'}],
                                 [{"list": "ul.x", "name": "x", "columns": "A, B"}],
                                 [{"list": "ul.x", "name": "x", "columns": ["A", "<b>B</b>"]}],
                                 [{"list": "ul.x", "name": "x", "columns": ["A", ""]}],
                                 [{"list": "ul.x", "name": "x", "columns": ["A"], "template_columns": ["B"]}],
                                 [{"list": "ul.x", "name": "x", "columns": ["A"], "template_columns": {}}],
                                 [{"list": "ul.x", "name": "x", "columns": ["A"], "template_columns": {"a": ["B"]}}],
                                 [{"list": "ul.x", "name": "x", "columns": ["A"], "template_columns": {"a.html": "B"}}],
                                 [{"list": "ul.x", "name": "x", "columns": ["A"],
                                   "template_columns": {"a.html": ["{{ b }}"]}}],
                                 [{"list": "ul.x", "name": "x", "columns": ["A"],
                                   "template_columns": {"a.html": ["B", "C"]}}],
                                 [{"list": "ul.x", "name": "x", "template_columns": {"a.html": ["B"]}}]])
def test_a_malformed_lists_section_is_refused(raw: Any) -> None:
    with pytest.raises(variant_lists.ListsError):
        variant_lists.parse("t", raw)
    assert issubclass(VariantError, ValueError)


@pytest.mark.parametrize("app", APPS)
def test_every_declared_list_is_on_a_page(app: str) -> None:
    """Each declaration matches some template of the app (a renamed class would leave
    the factor doing nothing there)."""
    env = simweb.make(app)
    jinja = env.unwrapped.app.jinja
    sources = [jinja.loader.get_source(jinja, n)[0] for n in jinja.list_templates(extensions=["html"])]
    for decl in catalogue(app).lists:
        assert any(variant_lists.rewrite(s, "table", (decl,)) != s for s in sources), decl


# ----------------------------------------------------------------------------- oracles
@pytest.mark.parametrize("app", APPS)
@pytest.mark.parametrize("style", ["table", "summary"])
def test_every_template_oracle_solves_a_list_variant(app: str, style: str) -> None:
    assert_every_oracle_solves(app, _with(app, list_style=style))


# ----------------------------------------------------------------------------- Chromium
@pytest.mark.browser
@pytest.mark.parametrize("app,style", [("shopping", "table"), ("shopping", "cards"), ("forum", "table"),
                                       ("forum", "summary"), ("booking", "cards"), ("booking", "summary"), ("issues", "table"),
                                       ("issues", "summary"), ("cms", "table"), ("cms", "cards")])
def test_the_list_is_the_same_in_chromium(app: str, style: str, chromium: Any) -> None:
    """The list page's AX tree in Chromium (the served site) and in-process are the same
    line for line, and following an item's link leads to the same page in both."""
    pytest.importorskip("playwright.sync_api")

    sim, ax = _page(app, _with(app, list_style=style))
    with served_browser(app, chromium) as web:
        web.restore(sim.snapshot())
        so, *_ = sim.step("noop()")
        wo, *_ = web.step("noop()")
        assert so["axtree"] == wo["axtree"]
        bid = _item_bids(sim, app)[1]
        roles = [r for r in _ancestors(wo["axtree"], bid) if r in _STRUCTURE]
        assert tuple(roles[:len(ROLES[style])]) == ROLES[style], roles
        headers = [ln.strip() for ln in wo["axtree"].splitlines() if "columnheader" in ln]
        assert len(headers) == (len(catalogue(app).lists[0].columns) if style == "table" else 0), headers
        so, *_ = sim.step(f"click('{bid}')")
        wo, *_ = web.step(f"click('{bid}')")
        assert not so["last_action_error"] and not wo["last_action_error"]
        assert so["url"].partition("localhost")[2] == wo["url"].split("/", 3)[3].join(["/", ""])
        assert so["axtree"] == wo["axtree"] and web.snapshot()["browser"]["tabs"] == sim.snapshot()["browser"]["tabs"]


@pytest.mark.browser
def test_an_empty_table_is_the_same_in_chromium(chromium: Any) -> None:
    """Booking's search without results as a table: the header row and the message's one
    cell spanning the columns, the same AX tree in Chromium as in-process."""
    pytest.importorskip("playwright.sync_api")

    sim = _env("booking", _with("booking", list_style="table"))
    so, *_ = sim.step("goto('/search?city=Atlantis')")
    assert "columnheader" in so["axtree"] and 'colspan="3"' in sim.browser.html(), so["axtree"]
    assert_walks_agree(sim.browser.html())
    with served_browser("booking", chromium) as web:
        web.restore(sim.snapshot())
        so, *_ = sim.step("noop()")
        wo, *_ = web.step("noop()")
        assert so["axtree"] == wo["axtree"]
