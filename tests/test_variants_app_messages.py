"""Site variants: the messages an app's Python functions write and the values in a page's
title, in the variant's words (docs/variants.md, "Messages the spec writes").

A function's message is declared once (``FUNCTIONS.message(...)``, an AppMessage) and is a
shape like the spec's own: its fixed words go through the variant's phrases, the values in
its gaps (a typed code, a name) do not. A page title's values (world data, typed text) are
kept the same way. Variants are asked of the catalogue by factor value."""
from __future__ import annotations

import ast
import html as html_lib
import re
from pathlib import Path
from typing import Any

import pytest

import simweb
from simweb.core.functions import AppMessage, FunctionTable
from simweb.runtime.variants import catalogue
from simweb.runtime.variants import message_shapes as shapes_of

APPS_DIR = Path(__file__).resolve().parent.parent / "apps"


def _variant(app: str, **want: str | tuple[str, ...]) -> int:
    """The first variant (id >= 1) with the factor values ``want`` (a value, or a tuple of
    the values that will do)."""
    cat = catalogue(app)
    for k in range(1, 20000):
        values = cat.values(k)
        if all(values[f] == v if isinstance(v, str) else values[f] in v for f, v in want.items()):
            return k
    raise AssertionError(f"{app}: no variant with {want}")


#: One-step forms, no confirmation step, tasks start signed in: the plain flows.
PLAIN = {"confirm_step": "none", "form_steps": "one-step", "sign_in": "signed-in"}


def _tab(env: Any) -> dict:
    u = env.unwrapped
    return u.state["browser"]["tabs"][u.state["browser"]["active"]]


def _title(page: str) -> str:
    m = re.search(r"<title>(.*?)</title>", page, re.S)
    assert m is not None
    return html_lib.unescape(m.group(1))


# ----------------------------------------------------------------------------- the helper
def test_an_app_message_is_written_once_and_is_a_shape_of_its_app() -> None:
    """``FunctionTable.message`` gives today's text through ``format`` and registers the
    source, whose gaps split a written text into the app's words and the values."""
    table = FunctionTable()
    m = table.message("The code {code} is not valid.")
    assert m.format(code="X1") == "The code X1 is not valid."
    assert table.messages == [m] and m.gaps == ("code",)
    with pytest.raises(ValueError):
        AppMessage("The {code.upper} is not valid.")
    with pytest.raises(TypeError):
        m.format()
    shopping = simweb.make("shopping", seed=0).unwrapped.app
    assert shapes_of(shopping).segments("Coupon code 'Coupon code 10' is not valid.") == (
        (True, "Coupon code '"), (False, "Coupon code 10"), (True, "' is not valid."))


# ----------------------------------------------------------------------------- on the page
def test_a_function_s_refusal_in_the_variant_words_with_the_typed_code_as_typed() -> None:
    """shopping where "Coupon code" is "Promo code": a code that is not valid is refused
    with the function's "Coupon code '...' is not valid."; the page and
    ``info["site_error"]`` say "Promo code '...'", the typed code (which holds the replaced
    phrase) stays as typed, and the state keeps today's text."""
    k = _variant("shopping", checkout_words="formal", **PLAIN)
    env = simweb.make("shopping", variant=k)
    env.reset(seed=2, options={"task": "shopping/add_to_cart"})
    u = env.unwrapped
    for a in u.oracle_plan()[:-1]:   # (its last step ends the episode)
        env.step(a)
    env.step("goto('/cart')")
    env.step("fill('coupon-code', 'Coupon code 10')")
    _, _, _, _, info = env.step("click('apply-coupon')")
    assert _tab(env)["flash"]["message"] == "Coupon code 'Coupon code 10' is not valid."
    assert info["site_error"] == "Promo code 'Coupon code 10' is not valid."
    assert "Promo code &#39;Coupon code 10&#39; is not valid." in u.app.render(u.state)


def test_a_function_s_message_a_template_shows_in_the_variant_words() -> None:
    """forum where communities are boards: a search filtered by a community that does not
    exist shows the function's "No community called ..." (through the ``site_message``
    filter) as "No board called ...", the typed name as typed; today's site as today."""
    k = _variant("forum", nav_words="boards", **PLAIN)
    for variant, want in ((k, "No board called the community."), (0, "No community called the community.")):
        env = simweb.make("forum", variant=variant)
        env.reset(seed=1, options={"task": "forum/upvote_post"})
        env.step("goto('/search?q=cats&community=the+community')")
        u = env.unwrapped
        page = u.app.render(u.state)
        m = re.search(r'bid="search-problem"[^>]*>(.*?)</p>', page)
        assert m is not None and m.group(1) == want, (variant, m and m.group(1))


# ----------------------------------------------------------------------------- titles
def test_a_typed_query_in_a_title_is_kept_as_typed() -> None:
    """shopping where the cart is a basket ("Shopping cart" is "Your basket"): a search for
    "Shopping cart" is titled with the query as typed; the title's own words and the site's
    name follow the variant."""
    k = _variant("shopping", cart_words="basket", site_name="Cartwheel", title_format="page-site", **PLAIN)
    env = simweb.make("shopping", variant=k)
    env.reset(seed=2, options={"task": "shopping/add_to_cart"})
    env.step("goto('/search?q=Shopping+cart')")
    u = env.unwrapped
    assert _title(u.app.render(u.state)) == "Results for “Shopping cart” — Cartwheel"
    env.step("goto('/cart')")
    assert _title(u.app.render(u.state)) == "Your basket — Cartwheel"


def test_a_post_s_title_keeps_its_name_in_the_page_title_and_trail() -> None:
    """forum where communities are boards: a post its author titles "A community garden"
    (created through the site's own form) keeps that name in its page's title and in the
    breadcrumb trail, as on the page, while the site's words around it are the variant's."""
    k = _variant("forum", nav_words="boards", breadcrumbs=("slash", "chevron", "arrow"), post_approval="off",
                 title_format=("page-site", "site-page", "page-pipe", "site-colon"), sign_in="signed-in",
                 form_steps="one-step")
    env = simweb.make("forum", variant=k)
    env.reset(seed=1, options={"task": "forum/upvote_post"})
    u = env.unwrapped
    env.step("goto('/submit')")
    community = re.findall(r'<option value="([^"]+)"', u.app.render(u.state))[0]
    env.step(f"select_option('submit-community', {community!r})")
    env.step("fill('submit-title-input', 'A community garden')")
    env.step("fill('submit-body', 'Tomatoes and beans.')")
    env.step("click('submit-go')")
    assert _tab(env)["page"] == "post", _tab(env)
    page = u.app.render(u.state)
    title = _title(page)
    site = catalogue("forum").site(k).words("Simforum")
    assert title in (f"A community garden — {site}", f"{site} | A community garden", f"A community garden | {site}",
                     f"{site}: A community garden"), title
    crumbs = re.search(r'<nav bid="site-crumbs".*?</nav>', page, re.S)
    assert crumbs is not None and ">A community garden</span>" in crumbs.group(0)
    assert "board garden" not in page


# ----------------------------------------------------------------------------- no literal left
#: A sentence: a capital, words, a full stop / question / exclamation mark at the end.
_SENTENCE = re.compile(r"[A-Z][\w'’-]*( \S+)+[.!?]")
#: Names a function's message is returned or kept under.
_MESSAGE_KEYS = {"error", "reason", "problem", "message"}


def _text(node: ast.AST) -> str | None:
    """A string literal's text (an f-string's values as "X"), None for anything else."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(str(v.value) if isinstance(v, ast.Constant) else "X" for v in node.values)
    return None


def bare_messages(source: str) -> list[tuple[int, str]]:
    """The message literals of an app's functions module that do not go through
    ``FUNCTIONS.message``: a sentence anywhere (docstrings aside), and any literal returned
    by a ``*_error``/``*_problem`` function or kept under an error/reason/problem key or
    name."""
    tree = ast.parse(source)
    declared: set[int] = set()   # literals that are a message's declaration, and docstrings
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and n.args and (
                (isinstance(n.func, ast.Attribute) and n.func.attr == "message")
                or (isinstance(n.func, ast.Name) and n.func.id in ("message", "msg"))):
            declared.add(id(n.args[0]))
        if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef)) and n.body and isinstance(n.body[0], ast.Expr):
            declared.add(id(n.body[0].value))
        if isinstance(n, ast.JoinedStr):
            declared.update(id(v) for v in n.values)
    suspects: set[int] = set()   # literals in a message's place
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef) and fn.name.endswith(("_error", "_problem")):
            suspects.update(id(r.value) for r in ast.walk(fn) if isinstance(r, ast.Return) and r.value is not None)
    for n in ast.walk(tree):
        if isinstance(n, ast.Dict):
            suspects.update(id(v) for k, v in zip(n.keys, n.values)
                            if isinstance(k, ast.Constant) and k.value in _MESSAGE_KEYS)
        if isinstance(n, ast.Assign):
            for t in n.targets:
                name = t.id if isinstance(t, ast.Name) else (
                    t.slice.value if isinstance(t, ast.Subscript) and isinstance(t.slice, ast.Constant) else None)
                if name in _MESSAGE_KEYS:
                    suspects.add(id(n.value))
    for n in ast.walk(tree):   # a conditional's, an operator's and an ``or``'s parts too
        if id(n) in suspects:
            if isinstance(n, ast.IfExp):
                suspects.update((id(n.body), id(n.orelse)))
            elif isinstance(n, ast.BinOp):
                suspects.update((id(n.left), id(n.right)))
            elif isinstance(n, ast.BoolOp):
                suspects.update(id(v) for v in n.values)
    found = []
    for n in ast.walk(tree):
        text = _text(n)
        if text is None or id(n) in declared:
            continue
        if _SENTENCE.fullmatch(text) or (id(n) in suspects and text.strip()):
            found.append((getattr(n, "lineno", 0), text))
    return found


def test_the_scan_finds_a_bare_message() -> None:
    """The scan below catches a sentence, a literal a ``*_error`` function returns (through
    a conditional) and one kept under an ``error`` key; a declared message passes."""
    src = '''
"""Doc."""
M = FUNCTIONS.message("Coupon code '{code}' is not valid.")
def coupon_error(ctx, code):
    """Why."""
    if not code:
        return None
    return ("No code called " + code) if code else M.format(code=code)
def stay(ctx):
    out = {"error": "Dates are wrong"}
    out["reason"] = f"Sold out: the {code} is gone"
    return "Check-out must be after check-in."
'''
    assert sorted(t for _, t in bare_messages(src)) == [
        "Check-out must be after check-in.", "Dates are wrong", "No code called ", "Sold out: the X is gone"]


@pytest.mark.parametrize("path", sorted(APPS_DIR.glob("*/functions.py")), ids=lambda p: p.parent.name)
def test_every_message_of_an_app_s_functions_is_declared(path: Path) -> None:
    """No sentence an app's function writes for the user is a bare literal: each is an
    AppMessage (``FUNCTIONS.message``), so a variant shows it in its words."""
    assert bare_messages(path.read_text()) == []
