"""The compiled AX-tree walk (simweb/_axwalk.pyx) against the Python walk it ports.

Every test here parses the same HTML both ways through ``axtree._parse_page`` and
requires the same Page: AX text (with and without overlays), title, every element's
fields, forms and their controls, selects, radio groups, line records, or the same
DuplicateBidError.
"""

from __future__ import annotations

import html as html_lib
import importlib
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import simweb
from simweb.web import axtree
from simweb.web.axtree import DuplicateBidError, Page, _fingerprint, _parse_page


def _compiled_module() -> Any:
    """The extension, set up even when this process runs the Python walk."""
    if axtree._compiled_walk is not None:
        return axtree._compiled_walk
    try:
        _axwalk = importlib.import_module("simweb._axwalk")   # compiled; absent without a C compiler
    except ImportError:
        return None
    import selectolax.lexbor

    if not _axwalk.load(selectolax.lexbor.__file__):
        return None
    _axwalk.configure(vars(axtree), axtree._tag_ids())
    return _axwalk


FAST = _compiled_module()
needs_ext = pytest.mark.skipif(FAST is None, reason="simweb._axwalk is not built")


def _outcome(html: str, walk: Any) -> tuple:
    try:
        page = _parse_page(html, walk)
    except DuplicateBidError as e:
        return ("DuplicateBidError", str(e))
    except Exception as e:   # noqa: BLE001 - a walk that fails must fail the same way in both
        return ("error", type(e).__name__)
    return ("page", _fingerprint(page), _overlaid(page))


def _overlaid(page: Page) -> tuple:
    """The AX text under overlays touching every kind of line."""
    bids = list(page.elements)
    values = {b: "typed 'x'" for b in bids[::2]}
    checked = {b: i % 2 == 0 for i, b in enumerate(bids[1::2])}
    return tuple(page.axtree(focused=b) for b in bids[:5]) + (
        page.axtree(values=values, checked=checked, focused=bids[-1] if bids else None),)


def assert_same(html: str) -> None:
    compiled, python = _outcome(html, FAST), _outcome(html, None)
    assert compiled == python, html[:2000]


# --------------------------------------------------------------------------
# Which walk runs
# --------------------------------------------------------------------------


def test_the_walk_in_use_is_the_one_this_install_should_run() -> None:
    """CI sets SIMWEB_REQUIRE_COMPILED=1 (.ci/run) so that it cannot pass on the fallback;
    without it, the compiled walk runs exactly when it is built and not turned off."""
    if os.environ.get("SIMWEB_REQUIRE_COMPILED") == "1":
        assert FAST is not None, "SIMWEB_REQUIRE_COMPILED=1 but simweb._axwalk is not built"
        assert axtree.COMPILED_WALK
    else:
        expected = FAST is not None and os.environ.get("SIMWEB_PURE_PARSE") != "1"
        assert axtree.COMPILED_WALK is expected
    assert (axtree._compiled_walk is not None) is axtree.COMPILED_WALK


def _flag_in_subprocess(env_extra: dict[str, str]) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SIMWEB_")}
    env.update(env_extra)
    out = subprocess.run([sys.executable, "-c", "import simweb.axtree as a; print(a.COMPILED_WALK)"],
                         capture_output=True, text=True, env=env, check=True)
    return out.stdout.strip()


def test_pure_parse_forces_the_python_walk() -> None:
    assert _flag_in_subprocess({"SIMWEB_PURE_PARSE": "1"}) == "False"


@needs_ext
def test_extension_is_used_by_default() -> None:
    assert _flag_in_subprocess({}) == "True"


def test_missing_extension_falls_back_with_one_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SIMWEB_PURE_PARSE", raising=False)
    monkeypatch.setitem(sys.modules, "simweb._axwalk", None)   # import raises ImportError
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert axtree._load_compiled() is None
    assert len(caught) == 1 and "Python walk" in str(caught[0].message)


@needs_ext
def test_a_disagreeing_probe_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """An extension whose walk differs on the probe page (say, another lexbor layout) is
    not used."""
    monkeypatch.delenv("SIMWEB_PURE_PARSE", raising=False)
    real = axtree._parse_page

    def skewed(html: str, compiled: Any) -> Page:
        page = real(html, compiled)
        if compiled is not None:
            page.title += " (skewed)"
        return page

    monkeypatch.setattr(axtree, "_parse_page", skewed)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert axtree._load_compiled() is None
    assert any("disagrees" in str(w.message) for w in caught)
    monkeypatch.setattr(axtree, "_parse_page", real)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert axtree._load_compiled() is not None
    assert not caught


# --------------------------------------------------------------------------
# Parity: real pages
# --------------------------------------------------------------------------


def _oracle_pages(app: str, seeds: int) -> list[str]:
    """The distinct HTML of every step of every task's oracle plan (default world)."""
    env = simweb.make(app, seed=0)
    seen: dict[str, None] = {}
    for seed in range(seeds):
        for tid in sorted(env.app.tasks):
            try:
                obs, _ = env.reset(seed=seed, options={"task": tid})
            except Exception:   # a template that cannot draw parameters at this seed
                continue
            seen.setdefault(obs["html"], None)
            for action in env.oracle_plan():
                seen.setdefault(env.step(action)[0]["html"], None)
    return list(seen)


@needs_ext
@pytest.mark.parametrize("app", simweb.app_names())
def test_same_pages_on_every_oracle_step(app: str) -> None:
    pages = _oracle_pages(app, seeds=2)
    assert len(pages) >= 20, app
    for html in pages:
        assert_same(html)


@needs_ext
def test_same_pages_for_the_axtree_samples() -> None:
    """The recorded AX trees of real apps, as page text and as attribute values: quotes,
    non-ASCII text, long lines."""
    for path in sorted((Path(__file__).parent / "axtree_samples").glob("*.txt")):
        lines = path.read_text().splitlines()
        body = "".join(f"<p bid='l{i}' title='{html_lib.escape(line, quote=True)}'>{html_lib.escape(line)}</p>"
                       f"<a href='/{i}'>{html_lib.escape(line.strip())}</a>"
                       for i, line in enumerate(lines))
        assert_same(f"<title>{html_lib.escape(path.stem)}</title><body><main>{body}</main></body>")


def test_probe_page_covers_each_construct() -> None:
    page = _parse_page(axtree._PROBE_HTML, None)
    text = page.axtree()
    for needle in ("[svg] image 'Icon'", "DisclosureTriangle", "combobox", "listbox", "checkbox",
                   "radio", "LabelText", "rowheader", "columnheader", "region", "disabled=True",
                   "hasPopup='listbox'", "pressed='true'", "checked='mixed'", "selected=True",
                   "url=''", "url=None"):
        assert needle in text, needle
    assert page.elements["hid"].hidden and page.elements["dp"].hidden and page.elements["src"].hidden


@needs_ext
def test_same_pages_for_the_probe_and_its_duplicate() -> None:
    assert_same(axtree._PROBE_HTML)
    assert _outcome(axtree._PROBE_DUPLICATE, FAST)[0] == "DuplicateBidError"
    assert_same(axtree._PROBE_DUPLICATE)


# --------------------------------------------------------------------------
# Parity: generated pages from the walk's vocabulary
# --------------------------------------------------------------------------

_WORDS = st.text(alphabet="ab cX'\"<>&é\u00a0\u2003\n\t\x1fñ€", min_size=0, max_size=8)
_ATTR_VALUES = st.sampled_from(["", "x", " true ", "true", "false", "mixed", "menu", "row", "3", "b1",
                                "display: none", "visibility:hidden", "post", "lbl", "f1", "hidden"])
_ATTR_NAMES = st.sampled_from(
    ["bid", "bid", "bid", "id", "for", "form", "name", "value", "type", "role", "aria-label",
     "aria-labelledby", "aria-hidden", "hidden", "style", "title", "alt", "href", "open", "disabled",
     "checked", "selected", "multiple", "size", "label", "placeholder", "required", "aria-checked",
     "aria-selected", "aria-expanded", "aria-pressed", "aria-haspopup", "aria-disabled", "aria-required",
     "scope", "action", "method", "class", "xlink:href", "data-x"])
_TAGS = st.sampled_from(
    ["div", "span", "p", "a", "button", "input", "select", "option", "optgroup", "textarea", "label",
     "form", "fieldset", "legend", "details", "summary", "dialog", "img", "svg", "title", "table",
     "caption", "tr", "td", "th", "thead", "ul", "li", "nav", "main", "section", "article", "header",
     "footer", "h1", "h3", "b", "em", "br", "iframe", "video", "template", "script", "my-tag",
     "strong", "code", "pre", "dl", "dt", "dd", "hr", "meter", "output", "figure", "figcaption"])
_INPUT_TYPES = st.sampled_from(["text", "hidden", "checkbox", "radio", "submit", "reset", "image",
                                "button", "password", "search", "number", "range", "date", "email", ""])


@st.composite
def _element(draw: Any, depth: int) -> str:
    tag = draw(_TAGS)
    attrs = []
    for _ in range(draw(st.integers(0, 4))):
        name = draw(_ATTR_NAMES)
        if draw(st.booleans()):
            attrs.append(name)   # bare attribute (value None)
        else:
            attrs.append(f'{name}="{html_lib.escape(draw(_ATTR_VALUES), quote=True)}"')
    if tag == "input":
        attrs.append(f'type="{draw(_INPUT_TYPES)}"')
    attr_text = "".join(" " + a for a in attrs)
    if tag in ("input", "br", "hr", "img"):
        return f"<{tag}{attr_text}>"
    children = []
    if depth > 0:
        for _ in range(draw(st.integers(0, 4))):
            if draw(st.integers(0, 3)) == 0:
                children.append(html_lib.escape(draw(_WORDS)))
            elif draw(st.integers(0, 9)) == 0:
                children.append(draw(st.sampled_from(["<!-- c -->", "&amp;", "&nbsp;", "&#x1F600;", "</b>",
                                                      "<p>", "</div>", "<td>"])))
            else:
                children.append(draw(_element(depth - 1)))
    else:
        children.append(html_lib.escape(draw(_WORDS)))
    close = "" if draw(st.integers(0, 12)) == 0 else f"</{tag}>"   # sometimes unclosed
    return f"<{tag}{attr_text}>{''.join(children)}{close}"


@needs_ext
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(parts=st.lists(_element(4), min_size=1, max_size=5), title=_WORDS)
def test_same_pages_for_generated_html(parts: list[str], title: str) -> None:
    assert_same(f"<html><head><title>{html_lib.escape(title)}</title></head><body>{''.join(parts)}</body></html>")


@needs_ext
@pytest.mark.parametrize("html", [
    "",
    "<p>no body tag</p>",
    "<body></body>",
    "<html><body><form><form><input bid='a'></form></form></body></html>",
    "<select bid='s'><optgroup label='G'><option bid='o' selected>1</option><option>2</option></optgroup>"
    "<option disabled>3</option></select><select><option disabled>x</option><option>y</option></select>",
    "<label for='i'>A</label><label for='i'>B</label><input id='i' bid='i'>"
    "<label>C <input bid='j'> <input bid='k'></label>",
    "<input type=radio name=r bid=r1 checked><input type=radio name=r bid=r2 checked>"
    "<form id=f><input type=radio name=r bid=r3 checked></form><input form=f type=radio name=r bid=r4>",
    "<fieldset disabled><legend><input bid='in-legend'></legend><button bid='b'>B</button></fieldset>",
    "<details><summary bid='s1'>one</summary><summary bid='s2'>two</summary><p bid='p'>x</p></details>",
    "<svg bid='s'><g><title>deep <b>title</b></title></g><a bid='in-svg'>x</a></svg>",
    "<table bid='t'><caption>C<b>ap</b></caption><tr><th scope=ROW>r</th></tr></table>",
    "<div bid='x'></div><b><span bid='x'>dup</span></b>",
    "<a bid='a1' href='/x'><b>one<a bid='a2' href='/y'>two</b></a>",   # adoption agency clones
    "<p>text\u00a0with\u2003unicode\x1fspaces and\ttabs\n\n</p><p>caf\u00e9 \U0001F600</p>",
    "<button bid='b' aria-label='L'>x</button><button bid='c' title='T'></button>"
    "<input type=image alt='Go' bid='i'><input type=submit value='  S  ' bid='s'>",
    "<span aria-labelledby='a b' bid='sp' role='button'>x</span><p id='a'>A</p><p id='b' aria-label='B'>b</p>",
    "<label role='region' for='q'>x</label><input id='q'>",
    "<div " + " ".join(f"data-a{i}='{i}'" for i in range(700)) + " bid='many'>many attributes</div>",
    "<my-Widget bid='w' ROLE='Button'>Custom</my-Widget><svg><foreignObject><p bid='fo'>in</p></foreignObject></svg>",
])
def test_same_pages_for_edge_cases(html: str) -> None:
    assert_same(html)


# Quoting without repr(): every way a name, text, value, url or title can need more than
# single quotes, in every place a line prints one.
_QUOTING = ["plain", "", "it's", 'say "hi"', "it's \"both\"", "back\\slash", "tab\there", "del\x7fchar",
            "bell\x07", "café", "☃ snow", "emoji \U0001F600", "it’s curly", "'", '"', "\\", "x'y\\z"]


@needs_ext
@pytest.mark.parametrize("text", _QUOTING)
def test_names_are_quoted_as_repr_quotes_them(text: str) -> None:
    esc = html_lib.escape(text, quote=True)
    page = _parse_page(f"<title>{esc}</title><body><button bid='b'>{esc}</button><h2>{esc}</h2>"
                       f"<p>{esc} tail</p><input bid='i' value='{esc}'><a href='{esc}'>l</a>"
                       f"<select><option>{esc}</option></select></body>", FAST)
    name = " ".join(text.split())   # names and texts are collapsed, values and urls are not
    lines = page.axtree().split("\n")
    assert lines[0] == f"RootWebArea {name!r}, focused"
    assert f"\t[b] button {name!r}" in lines
    assert f"\theading {name!r}" in lines
    assert f"\t\tStaticText {(name + ' tail').strip()!r}" in lines
    assert any(ln.startswith("\t[i] textbox") and f" value={text!r}" in ln for ln in lines) is bool(text)
    assert f"\tlink 'l', url={text!r}" in lines
    assert_same(f"<title>{esc}</title><body><button bid='b'>{esc}</button><p>{esc}</p>"
                f"<input bid='i' value='{esc}'><a bid='a' href='{esc}'>{esc}</a></body>")


# Collapsing non-ASCII text in C: the result must equal " ".join(s.split()) and be a canonical
# str (an ASCII result of a wide input compares unequal to the same text otherwise).
_SPACES = ["a\u3000b", "\u00a0lead", "trail\u2003", "\u2028only\u2029", "\u3000\u00a0 \t", "é\u00a0\u00a0ñ",
           "mixed \u2003\t\n wide☃ words", "\x1c\x1dsep\x1e\x1f", "\u0085next", "\U0001F600\u3000x"]


@needs_ext
@pytest.mark.parametrize("text", _SPACES)
def test_unicode_text_collapses_like_split_and_join(text: str) -> None:
    esc = html_lib.escape(text)
    page = _parse_page(f"<title>{esc}</title><body><button bid='b' aria-label='{esc}'>x</button>"
                       f"<h1 bid='h'>{esc}<b>{esc}</b></h1><p>{esc}</p></body>", FAST)
    want = " ".join(text.split())
    assert page.title == want and page.title.isascii() is want.isascii()
    assert page.elements["b"].name == (want or "x")   # a blank aria-label does not name it
    assert page.elements["h"].name == " ".join((text + text).split())
    assert (f"\t\tStaticText {want!r}" in page.axtree().split("\n")) is bool(want)
    assert_same(f"<title>{esc}</title><body><h1 bid='h'>{esc}</h1><p>{esc}</p>"
                f"<input bid='i' placeholder='{esc}'></body>")


# The page's UTF-8 for lexbor: exactly what selectolax makes of a str (``encode("utf-8",
# "ignore")``) for every kind of str: ASCII, Latin-1, two-byte (ASCII runs of every length
# and alignment around the wide characters, the one- two- and three-byte UTF-8 boundaries),
# four-byte, and lone surrogates (which "ignore" drops).
_UTF8_CHARS = st.sampled_from(["a", "<", "\x7f", "\x80", "\u00e9", "\u00ff", "\u0100", "\u07ff", "\u0800",
                               "\u2014", "\u203a", "\ud7ff", "\ud800", "\udbff", "\udc00", "\udfff", "\ue000",
                               "\ufffd", "\uffff", "\U0001F600"])


@needs_ext
@settings(max_examples=600, deadline=None)
@given(parts=st.lists(st.tuples(st.integers(0, 9), _UTF8_CHARS), max_size=12))
def test_utf8_is_what_selectolax_feeds_lexbor(parts: list[tuple[int, str]]) -> None:
    text = "".join("x" * n + c for n, c in parts)
    assert FAST.utf8(text) == text.encode("utf-8", "ignore")
    wide = text + "\u203a"   # the same text held as two-byte characters (unless it has four-byte ones)
    assert FAST.utf8(wide) == wide.encode("utf-8", "ignore")


@needs_ext
def test_utf8_of_pages_and_of_a_long_page_after_a_short_one() -> None:
    short, long = "\u2014" + "ab" * 3, "<p>" + "caf\u00e9 \u203a x " * 5000 + "</p>"
    for text in (short, long, short, "", "\u0100"):   # the scratch buffer grows and is reused
        assert FAST.utf8(text) == text.encode("utf-8", "ignore")
    assert type(FAST.utf8(long)) is bytes


@needs_ext
def test_the_compiled_parse_feeds_lexbor_the_utf8_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    fed: list[Any] = []
    real = axtree.LexborHTMLParser

    def recording(html: Any) -> Any:
        fed.append(html)
        return real(html)

    monkeypatch.setattr(axtree, "LexborHTMLParser", recording)
    page_html = "<title>A \u2014 B</title><body><nav><a bid='h' href='/'>Home</a> <span>\u203a</span> \ud800x</nav></body>"
    compiled, python = _parse_page(page_html, FAST), _parse_page(page_html, None)
    assert fed == [page_html.encode("utf-8", "ignore"), page_html]   # bytes for the compiled walk, the str for Python's
    assert _fingerprint(compiled) == _fingerprint(python)
    assert compiled.title == "A \u2014 B" and "\t\tStaticText 'x'" in compiled.axtree().split("\n")


@needs_ext
@pytest.mark.parametrize("html", [
    "<input bid='a' type=' SUBMIT '><input bid='b' type='Hidden'><input bid='c' type='checkBox' checked>",
    "<form method=' POST ' bid='f'><button bid='x'>x</button></form><form method='Post'></form>",
    "<div aria-hidden=' TRUE '><a bid='h' href='/h'>h</a></div><div aria-hidden='True'><p bid='p'>x</p></div>",
    "<span role='BUTTON' bid='r'>r</span><span role=' Link\tbanner' bid='l'>l</span>",
    "<span role='checkbox' aria-checked=' TRUE ' bid='c'>c</span><span role='switch' aria-checked='Mixed'>s</span>",
    "<button aria-haspopup=' Dialog ' bid='d'>d</button><button aria-haspopup='TRUE'>t</button>",
    "<input type='\u00a0text\u00a0' bid='n'><input type='texT\u3000' bid='m'>",
])
def test_attribute_tokens_are_normalised_like_strip_and_lower(html: str) -> None:
    assert_same(html)


@needs_ext
def test_the_title_is_the_first_title_child_of_head_else_the_first_anywhere() -> None:
    for html, want in [("<head><meta charset=utf-8><title> A  &amp; B </title><title>2</title></head>", "A & B"),
                       ("<head><link rel=x></head><body><svg><title>Icon</title></svg><title>T</title></body>",
                        "Icon"),
                       ("<body><p>no title</p></body>", ""),
                       ("<head><title></title></head><body><title>later</title></body>", "")]:
        assert _parse_page(html, FAST).title == _parse_page(html, None).title == want


@pytest.mark.parametrize("walk", [pytest.param(FAST, marks=needs_ext, id="compiled"), pytest.param(None, id="python")])
def test_a_page_keeps_only_the_records_an_overlay_can_reach(walk: Any) -> None:
    page = _parse_page("<body><nav><a href='/a'>A</a><a bid='b' href='/b'>B</a></nav><p>text</p>"
                       "<input name='q'><select bid='s'><option>1</option><option bid='o2'>2</option></select>"
                       "<select><option>x</option></select><input type=checkbox bid='c'></body>", walk)
    kept = [(r[axtree._R_BID], r[axtree._R_ROLE]) for r in page._recs]
    assert kept == [("b", "link"), ("s", "combobox"), (None, "option"), ("o2", "option"), (None, "option"),
                    ("c", "checkbox")]
    assert all(page._recs[i][axtree._R_BID] == bid for bid, i in page._bid_line.items())
    text = page.axtree(values={"s": "2"}, checked={"c": True}, focused="b")
    assert "[b] link 'B', focused, url='/b'" in text and "[o2] option '2', selected=True" in text
    assert "[c] checkbox '', checked='true'" in text and "\tlink 'A', url='/a'" in text


@needs_ext
def test_compiled_pending_elements_are_not_tracked_by_the_collector() -> None:
    import gc

    page = _parse_page("<form><input bid='i' name='q'><select bid='s'><option bid='o'>1</option></select>"
                       "</form><div bid='d' aria-label='D'>x</div>", FAST)
    pending = page.elements._pending   # type: ignore[attr-defined]
    assert type(pending["i"]).__name__ == "Pending" and not gc.is_tracked(pending["i"])
    assert not any(gc.is_tracked(p) for p in page._controls)
    assert page.elements["i"] == _parse_page("<form><input bid='i' name='q'></form>", None).elements["i"]
    assert page.forms[0].controls[0] is page.elements["i"]


@pytest.mark.slow
def test_the_wheel_ships_the_compiled_walk(tmp_path: Path) -> None:
    """A wheel built from a clean copy of the source compiles the extension and ships it."""
    import importlib.util
    import shutil
    import zipfile

    assert importlib.util.find_spec("Cython"), "the test extras install Cython, which this build needs"
    root = Path(__file__).resolve().parent.parent
    src = tmp_path / "src"
    shutil.copytree(root, src, ignore=shutil.ignore_patterns(
        ".git", "build", "dist", "*.egg-info", "__pycache__", ".hypothesis", ".pytest_cache",
        "_axwalk.c", "_axwalk*.so", "out"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w",
                    str(tmp_path), str(src)], check=True, capture_output=True)
    (wheel,) = tmp_path.glob("simweb-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert [n for n in names if n.startswith("simweb/_axwalk") and n.endswith(".so")], names[:20]


@needs_ext
def test_threads_parsing_at_once_get_the_same_pages() -> None:
    """Served mode parses in several threads: each walk has its own attribute cache."""
    from concurrent.futures import ThreadPoolExecutor

    pages = _oracle_pages("forum", seeds=1)[:60]
    want = [_fingerprint(_parse_page(h, None)) for h in pages]
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)   # switch threads as often as the interpreter allows
    try:
        with ThreadPoolExecutor(4) as pool:
            got = list(pool.map(lambda h: _fingerprint(_parse_page(h, FAST)), pages * 4))
    finally:
        sys.setswitchinterval(old)
    assert got == want * 4


LIVE_PAGE = """<html><head><title>t</title></head><body>
<div role="alert">Bad thing</div><div role="status">Saved</div><p role="alert" aria-label="Err">x</p>
<div role="log">l1</div><div aria-live="polite">pol</div>
<div aria-live="assertive" aria-atomic="true" aria-relevant="all">ass</div><div aria-live="off">off</div>
<div role="status" aria-live="off">statoff</div><div role="alert" aria-atomic="false">alnoatomic</div>
<div role="timer">t</div><output>out</output><p aria-live="polite">para</p>
<div role="status" aria-disabled="true">dis</div><div role="alert"><a href="/x">link in alert</a></div>
<section aria-live="polite" aria-label="S">sec</section><span bid="e" role="alert">inline</span>
</body></html>"""

#: What BrowserGym prints from Chromium's own tree (CDP Accessibility.getFullAXTree) for
#: LIVE_PAGE's elements, in order, without their text (measured with Chromium 1xx).
LIVE_LINES = [
    "alert '', live='assertive', atomic, relevant='additions text'",
    "status '', live='polite', atomic, relevant='additions text'",
    "alert 'Err', live='assertive', atomic, relevant='additions text'",
    "log '', live='polite', relevant='additions text'",
    "generic '', live='polite', relevant='additions text'",
    "generic '', live='assertive', atomic, relevant='all'",
    "status ''",
    "alert '', live='assertive', relevant='additions text'",
    "timer ''",
    "status '', live='polite', atomic, relevant='additions text'",
    "paragraph '', live='polite', relevant='additions text'",
    "status '', live='polite', atomic, relevant='additions text', disabled=True",
    "alert '', live='assertive', atomic, relevant='additions text'",
    "link 'link in alert', url='/x'",
    "region 'S', live='polite', relevant='additions text'",
    "[e] alert '', live='assertive', atomic, relevant='additions text'",
]


def test_live_regions_have_chromiums_properties_in_both_walks() -> None:
    """A live region's own line carries ``live``, ``atomic`` and ``relevant`` first, as
    Chromium gives them (the role's defaults, aria-live/-atomic/-relevant as written; none
    when off) and BrowserGym prints them; its descendants have none; a generic container
    with aria-live gets a line. Both walks write the same tree."""
    from simweb.web import axtree

    trees = {walk: axtree._parse_page(LIVE_PAGE, walk).axtree() for walk in {axtree._compiled_walk, None}}
    assert len(set(trees.values())) == 1
    lines = [ln.strip() for ln in next(iter(trees.values())).splitlines()[1:] if "StaticText" not in ln]
    assert lines == LIVE_LINES


@pytest.mark.browser
def test_live_region_lines_are_chromiums(chromium: Any) -> None:
    """LIVE_LINES are what BrowserGym writes from Chromium's accessibility tree for LIVE_PAGE
    (its links aside: Chromium's url is absolute)."""
    pytest.importorskip("playwright.sync_api")
    from test_variants_fields import _browsergym_line

    page = chromium.new_page()
    try:
        page.set_content(LIVE_PAGE)
        cdp = page.context.new_cdp_session(page)
        nodes = cdp.send("Accessibility.getFullAXTree")["nodes"]
        cdp.detach()
    finally:
        page.close()
    got = [_browsergym_line(n) for n in nodes if not n.get("ignored") and n["role"]["value"] not in
           ("RootWebArea", "StaticText", "InlineTextBox", "LineBreak", "link")
           and not (n["role"]["value"] == "generic" and not any(
               "value" in p.get("value", {}) for p in n.get("properties", [])))]
    want = [re.sub(r"^\[[^\]]+\] ", "", ln) for ln in LIVE_LINES if not ln.startswith("link ")]
    assert sorted(got) == sorted(want)   # (CDP lists a node's children after its siblings)
