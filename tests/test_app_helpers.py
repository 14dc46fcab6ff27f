"""The engine helpers every app uses instead of a copy of its own: the query string of a
link (``qs`` in specs and templates), a page of rows, an entity as it is now."""
from __future__ import annotations

import html
import re

import pytest
from conftest import APPS

import simweb
from simweb.core.functions import Ctx, FunctionTable, paged
from simweb.core.urls import query_string


@pytest.mark.parametrize("base, changes, expected", [
    ({"q": "red shoes", "sort": "new"}, {"page": 3}, "?page=3&q=red+shoes&sort=new"),
    ({"sort": "new", "q": "x"}, {}, "?q=x&sort=new"),             # sorted: one URL for the same filters
    ({"q": "x", "sort": "new"}, {"sort": None}, "?q=x"),           # a change to None removes the key
    ({"q": "x"}, {"q": ""}, ""),                                    # nothing left: no query at all
    ({"q": "x"}, {"page": 1}, "?q=x"),                              # page 1 is the listing itself
    ({"label": ["bug", None, "", "ui"]}, {}, "?label=bug&label=ui"),  # a list repeats its key
    ({"stock": True, "sale": False, "tags": []}, {}, "?stock=1"),
    (None, {"a": 0}, "?a=0"),                                       # 0 is a value, not an absence
    ({"q": "a&b=c"}, {}, "?q=a%26b%3Dc"),
])
def test_query_string(base, changes, expected):
    assert query_string(base, **changes) == expected


def test_every_app_gets_qs_from_the_engine_and_none_defines_its_own():
    table = FunctionTable()
    assert "qs" in table.merged_with_builtins()

    @table.function()
    def qs(ctx, base=None):   # an app's own copy shadows the engine's: refused
        return ""

    with pytest.raises(ValueError, match="shadows an engine function"):
        table.merged_with_builtins()


@pytest.mark.parametrize("app", [a for a in ("forum", "booking") if a in APPS])
def test_paged_links_keep_the_query_and_the_first_page_is_the_bare_listing(app):
    env = simweb.make(app, seed=0)
    url = {"forum": "/search?q=the&page=2", "booking": "/deals?page=2"}[app]
    obs, *_ = env.step(f"goto('{url}')")
    prev = re.search(r'bid="page-prev" href="([^"]*)"', obs["html"])
    nxt = re.search(r'bid="page-next" href="([^"]*)"', obs["html"])
    assert prev and nxt, obs["url"]
    back, on = html.unescape(prev.group(1)), html.unescape(nxt.group(1))
    assert "page=" not in back and back.startswith("?") and "page=3" in on
    if app == "forum":
        assert (back, on) == ("?q=the", "?page=3&q=the")


@pytest.mark.parametrize("page, expected", [(None, 1), ("2", 2), (9, 3), (0, 1), ("x", 1)])
def test_paged_clamps_the_page_and_slices_the_rows(page, expected):
    out = paged(list(range(25)), page, 10)
    assert (out["total"], out["pages"], out["page"]) == (25, 3, expected)
    assert out["items"] == list(range(25))[(expected - 1) * 10: expected * 10]
    assert paged([], 4, 10) == {"total": 0, "page": 1, "pages": 1, "items": []}


def test_a_row_is_the_overlays_version_else_the_worlds():
    table = FunctionTable()

    @table.entity("notes")
    def _note(world, nid):
        return {"id": nid, "text": "world"} if nid < 5 else None

    state = {"runtime": {"entities": {"notes": {"2": {"id": 2, "text": "edited"}, "3": None}}}}
    ctx = Ctx(world=None, state=state)
    assert table.row(ctx, "notes", 1) == {"id": 1, "text": "world"}
    assert table.row(ctx, "notes", "2") == {"id": 2, "text": "edited"}
    assert table.row(ctx, "notes", 3) is None and table.row(ctx, "notes", 7) is None   # deleted; never was
    assert table.row(ctx, "notes", None) is None and table.row(ctx, "tags", 1) is None


class _Html:
    def __html__(self) -> str:
        return "<b>kept</b>"


class _IntLike(int):
    def __str__(self) -> str:
        return "<i>"


@pytest.mark.parametrize("value", [0, -7, 12345, 10**30, True, False, None, 1.5, float("nan"), "", "a<b>&'\"",
                                   "plain", "é→\x00", ["<x>"], {"k": "<v>"}, _Html(), _IntLike(3)])
def test_the_template_escaper_is_markupsafes(value):
    """``{{ x }}`` goes through simweb.app._escape_output (fast paths for str and int); it
    must emit exactly what markupsafe.escape would for every kind of value, an int
    subclass with its own __str__ and an object with __html__ included."""
    import markupsafe

    from simweb.runtime.app import _escape_output

    assert _escape_output(value) == str(markupsafe.escape(value))
    assert type(_escape_output(value)) is str


class _Obj:
    name = "attr"

    def __getitem__(self, key: str) -> str:
        return f"item:{key}"


_KEY_LOOKUPS = [
    # (template, variables, what Jinja's dict-first lookup gives)
    ("{{ d.name }}|{{ d['name'] }}", {"d": {"name": "<k>"}}, "&lt;k&gt;|&lt;k&gt;"),
    ("{{ d.items }}", {"d": {"items": 3}}, "3"),                                 # the key, not the method
    ("{{ d.get('a') }}|{{ d.keys()|list|length }}", {"d": {"a": 1}}, "1|1"),    # methods still resolve
    ("{{ o.name }}|{{ o['k'] }}", {"o": _Obj()}, "attr|item:k"),                  # not a dict
    ("{{ d.missing is undefined }}|{{ d['missing'] is undefined }}", {"d": {}}, "True|True"),
    ("{% for r in [none, 1, 'ab'] %}{{ r.real }},{% endfor %}", {}, ",1,,"),        # not dicts, in a loop
    ("{% for r in rows %}{{ r.v }}{{ r['w'] }},{% endfor %}", {"rows": [{"v": 1, "w": 2}, {"v": "<"}]},
     "12,&lt;,"),
    ("{% macro m(x) %}{{ x.a.b }}{% endmacro %}{{ m({'a': {'b': 5}}) }}", {}, "5"),  # a chain
    ("{% set k = 'v' %}{{ d[k] }}", {"d": {"v": 7}}, "7"),                          # a variable key
]


@pytest.mark.parametrize("source,variables,expected", _KEY_LOOKUPS)
def test_inline_key_lookups_give_what_the_environment_gives(source, variables, expected):
    """Templates compile ``x.key`` and ``x['key']`` on a variable to an inline dict read
    (simweb.app._CodeGenerator); the output must be what the environment's own
    getattr/getitem gives, for dicts, other objects, missing keys and undefined names."""
    import jinja2

    from simweb.runtime.app import _TemplateEnvironment

    ours = _TemplateEnvironment(autoescape=True, undefined=jinja2.Undefined)

    class Reference(_TemplateEnvironment):
        code_generator_class = jinja2.compiler.CodeGenerator  # type: ignore[assignment]  # jinja's own, on purpose

    reference = Reference(autoescape=True, undefined=jinja2.Undefined)
    got = ours.from_string(source).render(**variables)
    assert got == reference.from_string(source).render(**variables) == expected


def test_loop_variables_and_macro_arguments_read_keys_inline():
    """The inline read applies where pages spend their lookups: loop variables and macro
    arguments (a top-level variable may be undefined, and keeps Jinja's own code)."""
    from simweb.runtime.app import _TemplateEnvironment

    code = _TemplateEnvironment(autoescape=True).compile(
        "{% for r in rows %}{{ r.v }}{{ r['w'] }}{% endfor %}{% macro m(x) %}{{ x.a }}{% endmacro %}", raw=True)
    assert "type(l_1_r) is dict and 'v' in l_1_r" in code and "type(l_1_r) is dict and 'w' in l_1_r" in code
    assert "type(l_1_x) is dict and 'a' in l_1_x" in code
