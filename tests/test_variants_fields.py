"""Form flow options of site variants (simweb.runtime.variant_flows, docs/variants.md):
required/optional markers in a form's labels (``field_markers``) and a refused form's
message beside the field it is about (``field_errors``). Presentation only: the markers are
text of the label (so of the field's accessible name, as Chromium computes it), the inline
message is the site's message in another place with the ARIA real sites use, and every
template's oracle solves such variants. Variants are asked of the catalogue by value."""
from __future__ import annotations

import re
from typing import Any

import pytest
from conftest import APPS, served_browser

import simweb
from simweb.runtime import variant_flows
from simweb.runtime.variants import catalogue

QUIET = {"nav_position": "top", "banner": "none", "breadcrumbs": "none", "message_position": "top",
         "form_steps": "one-step", "sign_in": "signed-in"}


def _with(app: str, **want: str) -> int:
    cat = catalogue(app)
    return next(k for k in range(1, cat.count) if all(cat.values(k)[f] == v for f, v in want.items()))


def _lines(obs: dict, *bids: str) -> dict[str, str]:
    """The AX tree line of each bid."""
    out = {}
    for ln in obs["axtree"].splitlines():
        m = re.match(r"\s*\[([^\]]+)\] ", ln)
        if m and m.group(1) in bids:
            out[m.group(1)] = ln.strip()
    return out


def _page(app: str, k: int, url: str) -> tuple[Any, dict]:
    env = simweb.make(app, variant=k)
    env.reset(seed=0, options={"task": None})
    obs, *_ = env.step(f"goto('{url}')")
    return env, obs


REGISTER = ("reg-name", "reg-username", "reg-email", "reg-password", "reg-confirm")


@pytest.mark.parametrize("style,mark", [("none", ""), ("asterisk", " *"), ("required", " (required)"),
                                        ("optional", "")])
def test_required_fields_are_marked_in_the_label_and_the_name(style: str, mark: str) -> None:
    """Shopping's sign-up form (every field has the ``required`` attribute): each label ends
    with the marker, and the field's accessible name with it; "(optional)" marks none."""
    k = _with("shopping", field_markers=style, **QUIET)
    _, obs = _page("shopping", k, "/register")
    lines = _lines(obs, *REGISTER)
    assert lines["reg-name"] == f"[reg-name] textbox 'Full name{mark}', required"
    assert lines["reg-confirm"] == f"[reg-confirm] textbox 'Confirm password{mark}', required"
    assert all(ln.endswith(f"{mark}', required") and "* " not in ln for ln in lines.values())
    assert ("(optional)" in obs["axtree"]) is False
    assert ('class="field-marker"' in obs["html"]) == bool(mark)


def test_the_spec_says_which_fields_without_the_attribute_are_required() -> None:
    """The sign-in form has no ``required`` attribute: its event's params are required, so
    both fields (the user field's name is an expression: the one param left) are marked;
    a search form (GET) never is."""
    k = _with("shopping", field_markers="asterisk", **QUIET)
    _, obs = _page("shopping", k, "/login")
    lines = _lines(obs, "login-user", "login-password", "search-q")
    assert lines["login-user"].endswith("'Username or email *'")
    assert lines["login-password"].endswith("'Password *'")
    assert "*" not in lines["search-q"]


@pytest.mark.parametrize("style", ["asterisk", "optional"])
def test_a_conditionally_required_field_is_marked_by_its_condition(style: str) -> None:
    """Shopping's address form (a macro whose ``required`` is a Jinja condition): the
    required fields get the asterisk, the optional ones (State, Phone) "(optional)"."""
    k = _with("shopping", field_markers=style, **QUIET)
    env = simweb.make("shopping", variant=k)
    env.reset(seed=0, options={"task": "shopping/add_address"})
    obs, *_ = env.step("goto('/account/addresses')")
    lines = _lines(obs, "addr-name", "addr-state", "addr-phone", "addr-city")
    if style == "asterisk":
        assert lines["addr-name"].endswith("*', required") and lines["addr-city"].endswith("*', required")
        assert "*" not in lines["addr-state"] and "*" not in lines["addr-phone"]
    else:
        assert lines["addr-state"].endswith("(optional)'") and lines["addr-phone"].endswith("(optional)'")
        assert "(optional)" not in lines["addr-name"] + lines["addr-city"]


def test_variant_0_has_no_marker_and_no_field_in_its_messages() -> None:
    env = simweb.make("shopping")
    env.reset(seed=0, options={"task": None})
    obs, *_ = env.step("goto('/register')")
    assert "field-marker" not in obs["html"] and "*'" not in obs["axtree"]
    _refuse_short_username(env)
    assert env.snapshot()["browser"]["tabs"][0]["flash"] == {
        "level": "error", "message": "Username must be at least 3 characters."}


def _refuse_short_username(env: Any) -> dict:
    env.step("goto('/register')")
    for bid, v in zip(REGISTER, ("Ann Lee", "ab", "ann@example.com", "secret123", "secret123")):
        env.step(f"fill('{bid}', '{v}')")
    obs, *_ = env.step("click('reg-submit')")
    return obs


@pytest.mark.parametrize("mode", ["message", "inline", "inline-summary"])
def test_a_refusal_about_a_field_is_shown_beside_it(mode: str) -> None:
    """A param that does not parse (the username's min length): inline, the message
    follows the field, which is invalid and described by it, and is no longer on top;
    inline-summary keeps it on top too; "message" is today's place."""
    k = _with("shopping", field_errors=mode, **QUIET)
    env = simweb.make("shopping", variant=k)
    env.reset(seed=0, options={"task": None})
    obs = _refuse_short_username(env)
    msg = "Username must be at least 3 characters."
    flash = env.snapshot()["browser"]["tabs"][0]["flash"]
    html = obs["html"]
    lines = obs["axtree"].splitlines()
    top = re.search(r'class="flash error"[^>]*>' + re.escape(msg), html) is not None
    if mode == "message":
        assert "field" not in flash and 'aria-invalid="true"' not in html and top
        return
    assert flash["field"] == "username" and flash["form"] == "/register"
    assert re.search(r'<input bid="reg-username"[^>]* aria-invalid="true" aria-describedby="field-error-username"', html)
    assert f'<span bid="field-error" id="field-error-username" class="field-error" role="alert">{msg}</span>' in html
    i = next(i for i, ln in enumerate(lines) if "[reg-username]" in ln)
    assert lines[i + 1].strip() == "[field-error] alert '', live='assertive', atomic, relevant='additions text'"
    assert lines[i + 2].strip() == f"StaticText '{msg}'"
    assert top is (mode == "inline-summary")


def test_a_guard_names_its_field_and_a_refusal_without_one_stays_on_top() -> None:
    """A guard's ``field`` (the username is taken) goes beside the username; a refusal about
    no field (a wrong password) stays where the site's messages go, without ARIA."""
    k = _with("shopping", field_errors="inline", **QUIET)
    env = simweb.make("shopping", variant=k)
    env.reset(seed=0, options={"task": None})
    taken = env.unwrapped.app.world.column_value("users", "username", 1)
    env.step("goto('/register')")
    for bid, v in zip(REGISTER, ("Ann Lee", taken, "ann-new@example.com", "secret123", "secret123")):
        env.step(f"fill('{bid}', '{v}')")
    obs, *_ = env.step("click('reg-submit')")
    assert 'aria-describedby="field-error-username"' in obs["html"] and "is already taken" in obs["html"]
    assert 'class="flash error"' not in obs["html"]
    env.step("goto('/login')")
    env.step("fill('login-user', 'nobody-at-all')")
    env.step("fill('login-password', 'wrong')")
    obs, *_ = env.step("click('login-submit')")
    assert "field" not in env.snapshot()["browser"]["tabs"][0]["flash"]
    assert 'class="flash error"' in obs["html"] and 'aria-invalid="true"' not in obs["html"]


def test_a_field_the_page_does_not_show_falls_back_to_the_message() -> None:
    page = ('<div bid="flash" class="flash error" role="alert">Bad &#39;x&#39;</div>\n'
            '<form action="/a" method="post"><input name="q"></form>')
    assert variant_flows.inline_error(page, "Bad 'x'", "zip", "/a", False) == page   # no such field
    assert variant_flows.inline_error(page, "Bad 'x'", "q", "/b", False) == page     # another form
    out = variant_flows.inline_error(page, "Bad 'x'", "q", "/a", False)
    assert out == ('<form action="/a" method="post"><input name="q" aria-invalid="true" '
                   'aria-describedby="field-error-q"><span bid="field-error" id="field-error-q" '
                   'class="field-error" role="alert">Bad &#39;x&#39;</span></form>')
    wrapped = '<form action="/a" method="post"><label>Q <textarea name="q">t</textarea></label></form>'
    assert variant_flows.inline_error(wrapped, "m", "q", "/a", True).endswith(
        '</textarea></label><span bid="field-error" id="field-error-q" class="field-error" role="alert">m</span></form>')


def test_a_guard_field_must_be_a_param_of_its_event(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from simweb.core.specmodel import SpecError
    from simweb.runtime.app import load_app_spec
    from simweb.runtime.definition import AppDefinition, _import
    from simweb.runtime.registry import definition

    d = definition("shopping")
    text = open(d.spec_path()).read()
    bad = text.replace("field: card_number}", "field: no_such_field}", 1)
    assert bad != text
    (tmp_path / "shopping.yaml").write_text(bad)
    monkeypatch.setattr(AppDefinition, "spec_path", lambda self: str(tmp_path / "shopping.yaml"))
    with pytest.raises(SpecError, match="'no_such_field' is not a param of this event"):
        load_app_spec(d, _import(d.functions))


def test_held_out_options_are_test_only() -> None:
    for app in APPS:
        cat = catalogue(app)
        for row in cat.listing("train", 200):
            assert row["factors"]["field_markers"] != "required" and row["factors"]["field_errors"] != "inline-summary"
        assert any(cat.values(k)["field_markers"] == "required" for k in range(40))
        assert any(cat.values(k)["field_errors"] == "inline-summary" for k in range(40))


@pytest.mark.parametrize("app", APPS)
def test_every_oracle_solves_variants_with_markers_and_inline_messages(app: str) -> None:
    for markers, errors in (("asterisk", "inline"), ("optional", "inline-summary")):
        k = _with(app, field_markers=markers, field_errors=errors)
        env = simweb.make(app, variant=k)
        for i, tid in enumerate(env.app.tasks):
            env.reset(seed=k + i, options={"task": tid})
            info: dict = {}
            for a in env.oracle_plan():
                _, _, _, _, info = env.step(a)
            v = info["verdict"]
            assert v["success"] and v["clean"], (app, k, tid, v)


# ----------------------------------------------------------------------------- Chromium
#: Properties BrowserGym's flatten_axtree_to_str leaves out (browsergym.utils.obs).
_BG_IGNORED = ("editable", "readonly", "level", "settable", "multiline", "invalid", "focusable")


def _browsergym_line(node: dict) -> str:
    """A CDP AX node as BrowserGym's flattened text writes it (without its bid)."""
    out = f"{node['role']['value']} {node.get('name', {}).get('value', '')!r}"
    for prop in node.get("properties", []):
        if "value" not in prop.get("value", {}) or prop["name"] in _BG_IGNORED:
            continue
        v = prop["value"]["value"]
        if prop["name"] in ("required", "focused", "atomic"):
            out += f", {prop['name']}" if v else ""
        else:
            out += f", {prop['name']}={v!r}"
    return out


@pytest.mark.browser
@pytest.mark.parametrize("markers,errors", [("asterisk", "inline"), ("required", "inline-summary"),
                                            ("optional", "inline")])
def test_markers_and_inline_messages_are_the_same_in_chromium(markers: str, errors: str, chromium: Any) -> None:
    """The sign-up page and its refusal on a variant with each marker style and inline
    option: the same AX tree in Chromium (the served site) and in-process, after the same
    fills and click (Chromium sends the form itself); and each form field's line is the one
    BrowserGym writes from Chromium's own accessibility tree (CDP): the marker in the name
    as Chromium computes it, ``describedby`` on the refused field."""
    pytest.importorskip("playwright.sync_api")

    k = _with("shopping", field_markers=markers, field_errors=errors)
    with served_browser("shopping", chromium, timeout_ms=2000) as web:
        sim = simweb.make("shopping", seed=0, variant=k, max_steps=100_000)
        sim.reset(seed=0, options={"task": None})
        sim.step("goto('/register')")
        web.restore(sim.unwrapped.snapshot())
        acts = [f"fill('{b}', '{v}')" for b, v in zip(REGISTER, ("Ann Lee", "ab", "ann@example.com", "secret123",
                                                               "secret123"))]
        so, *_ = sim.step("noop()")
        wo, *_ = web.step("noop()")
        assert so["axtree"] == wo["axtree"]
        for a in [*acts, "click('reg-submit')"]:
            so, *_ = sim.step(a)
            wo, *_ = web.step(a)
        assert so["axtree"] == wo["axtree"]
        assert web.snapshot()["browser"]["tabs"][0]["flash"] == sim.unwrapped.snapshot()["browser"]["tabs"][0]["flash"]
        assert "describedby='field-error-username'" in so["axtree"]
        cdp = web.context.new_cdp_session(web.page)
        try:
            nodes = cdp.send("Accessibility.getFullAXTree")["nodes"]
        finally:
            cdp.detach()
        ours = {re.sub(r"^\[[^\]]+\] ", "", ln.strip()) for ln in so["axtree"].splitlines()}
        fields = [_browsergym_line(n) for n in nodes if n.get("role", {}).get("value") == "textbox"]
        assert len(fields) == 5 and all(f in ours for f in fields), (fields, sorted(ours))
        if markers != "optional":
            assert all(f.split("'")[1].endswith(" *" if markers == "asterisk" else " (required)") for f in fields)


def test_the_ax_tree_writes_a_controls_describedby_as_chromium_gives_it() -> None:
    """``aria-describedby`` on a form control: BrowserGym prints Chromium's ``describedby``
    (the attribute as written) after the other properties; ``aria-invalid`` is a property
    it leaves out. Both walks (compiled and pure Python) write the same line."""
    from simweb.web import axtree

    page = ('<html><head><title>t</title></head><body><form><label for="u">User</label>'
            '<input bid="u" id="u" name="u" required aria-invalid="true" aria-describedby="e1 e2">'
            '<span id="e1" role="alert">Too short</span><button bid="b" aria-describedby="e1">Go</button></form></body></html>')
    for walk in {axtree._compiled_walk, None}:
        tree = axtree._parse_page(page, walk).axtree()
        assert "[u] textbox 'User', required, describedby='e1 e2'" in tree
        assert "[b] button 'Go', describedby='e1'" in tree
        assert "invalid" not in tree


@pytest.mark.parametrize("scheme", ["product-slug", "item-query"])
def test_an_inline_message_finds_its_form_under_the_variants_urls(scheme: str) -> None:
    """The message keeps the URL its form posted to in today's form; the page writes the
    form's action in the variant's (a slug, a query), and the message still finds it."""
    k = _with("shopping", url_scheme=scheme, field_errors="inline", confirm_step="none")
    env = simweb.make("shopping", variant=k)
    env.reset(seed=0, options={"task": "shopping/write_review"})
    for a in env.oracle_plan():
        obs, *_ = env.step(a)
        if "[review-rating]" in obs["axtree"]:
            break
    env.step("select_option('review-rating', '5')")
    obs, *_ = env.step("click('review-submit')")
    flash = env.snapshot()["browser"]["tabs"][0]["flash"]
    assert flash["field"] == "title" and flash["form"].startswith("/p/")
    assert re.search(r'<form[^>]*action="/(product|item)/[^"]*review', obs["html"])
    assert 'aria-describedby="field-error-title"' in obs["html"] and 'class="flash error"' not in obs["html"]
