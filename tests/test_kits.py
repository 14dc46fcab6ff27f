"""The auth kit (simweb/kits): one sign-in, sign-out and registration for every app,
included by the spec with options, extended or overridden by the spec's own entries, its
template found after the app's own."""
from __future__ import annotations

import copy
from pathlib import Path

import pytest
from tinyapp import APP as TINY

import simweb
from simweb.core.kits import expand_kit, merge, resolve_kits
from simweb.core.spec import SpecError, compile_spec
from simweb.runtime.app import App

ROOT = Path(__file__).resolve().parents[1]
APPS = ("booking", "cms", "forum", "issues", "shopping")


@pytest.fixture(scope="module")
def tiny() -> App:
    return App(TINY, 0, 3)


def _compile(app: App, doc: dict):
    fns = app.function_table.merged_with_builtins()
    return compile_spec(doc, "tiny.yaml", app.callables, {n: f.reads for n, f in fns.items()})


def _with_auth(app: App, options: dict) -> dict:
    doc = copy.deepcopy(app.spec.raw)
    doc["kits"] = {"auth": options}
    return doc


# ----------------------------------------------------------------------------- filling in

def test_options_fill_the_kit_and_a_list_option_is_spliced():
    sections, options = expand_kit("auth", {"field": "username", "account": "user_by_name(params.username)",
                                            "guards": [{"if": "account.active", "error": "Deactivated."}]})
    sign_in = sections["events"]["sign_in"]
    assert list(sign_in["params"]) == ["username", "password", "next"]
    assert sign_in["let"] == {"account": "user_by_name(params.username)"}
    assert [g["if"] for g in sign_in["guards"]] == ["account is not None and account.password == params.password",
                                                   "account.active"]
    assert sign_in["params"]["username"]["max_length"] == 120          # a whole-string option keeps its type
    assert "register" not in sections["pages"] and "register" not in sections["events"]
    assert options["register"] is False


def test_register_fields_are_declared_once_for_the_form_and_the_event():
    sections, options = expand_kit("auth", {"register": {"fields": [
        {"name": "full_name", "bid": "reg-name", "param": {"type": "str", "label": "Full name", "max_length": 80}},
        {"name": "email", "input": "email", "param": {"type": "str", "label": "Email"}}]}})
    event = sections["events"]["register"]
    assert list(event["params"]) == ["full_name", "email", "password", "confirm"]
    assert event["updates"][0]["value"] == {"password": "params.password"}
    assert [(f["bid"], f["input"], f["max_length"]) for f in options["register"]["fields"]] == [
        ("reg-name", "text", 80), ("reg-email", "email", None)]
    assert sections["pages"]["register"]["route"] == "/register"


@pytest.mark.parametrize("kits, needle", [
    ({"auht": {}}, "unknown kit 'auht' (did you mean 'auth'?)"),
    ({"auth": {"feild": "x"}}, "unknown option 'feild' (did you mean 'field'?)"),
    ({"auth": {"register": {"feilds": []}}}, "unknown option 'register.feilds' (did you mean 'register.fields'?)"),
    ({"auth": {"register": "yes"}}, "option 'register' must be true, false or a mapping"),
    ({"auth": {"register": {"fields": [{"bid": "x"}]}}}, "'register.fields' must be a list"),
    ({"auth": ["heading"]}, "the options must be a mapping"),
    (["auth"], "'kits' must be a mapping"),
])
def test_a_bad_kit_or_option_is_a_spec_error_naming_it(tiny, kits, needle):
    doc = copy.deepcopy(tiny.spec.raw)
    doc["kits"] = kits
    with pytest.raises(SpecError) as exc:
        _compile(tiny, doc)
    assert str(exc.value).startswith("tiny.yaml: top level: field 'kits': ")
    assert needle in str(exc.value)


def test_a_spec_extends_overrides_and_removes_kit_entries(tiny):
    doc = _with_auth(tiny, {"account": "card(1)", "register": {"row": {"name": "params.username"},
                                                               "fields": [{"name": "username", "param": {"type": "str"}}]}})
    doc["events"]["sign_in"] = {"flash": "Hello.", "params": {"remember": {"type": "bool"}}}
    doc["pages"]["register"] = None
    doc["events"]["register"] = None
    spec = _compile(tiny, doc)
    sign_in = spec.raw["events"]["sign_in"]
    assert sign_in["flash"] == "Hello."                               # overridden
    assert list(sign_in["params"]) == ["login", "password", "next", "remember"]   # extended
    assert sign_in["route"] == "/login"                               # the rest is the kit's
    assert "register" not in spec.pages and "register" not in spec.events    # removed
    assert spec.kits["auth"]["account"] == "card(1)"


def test_merge_lays_mappings_over_mappings_and_replaces_the_rest():
    base = {"a": {"b": 1, "c": [1, 2]}, "d": 1}
    assert merge(base, {"a": {"c": [3]}, "d": None, "e": 2}) == {"a": {"b": 1, "c": [3]}, "e": 2}
    assert base == {"a": {"b": 1, "c": [1, 2]}, "d": 1}               # never changed in place


def test_a_document_without_kits_is_left_as_it_is(tiny):
    assert resolve_kits(tiny.spec.raw) == (tiny.spec.raw, {})


def test_the_tiny_app_gets_a_working_sign_in_from_the_kit(tiny):
    doc = _with_auth(tiny, {"account": "card(1)", "heading": "Tiny sign-in"})
    spec = _compile(tiny, doc)
    assert set(spec.pages) >= {"login"} and set(spec.events) >= {"sign_in", "sign_out"}
    # a sign-in is logged by the site (runtime.signins, judged by the verdict): it cannot be undone
    assert spec.events["sign_in"].effect == "irreversible" and "browser.user" in spec.events["sign_in"].writes
    assert "runtime.signins" in spec.events["sign_in"].writes
    assert spec.kits["auth"]["heading"] == "Tiny sign-in"


# ----------------------------------------------------------------------------- every app

@pytest.mark.parametrize("name", APPS)
def test_every_app_signs_in_through_the_kit_as_an_episode_start_does(name):
    env = simweb.make(name, seed=0)
    app = env.app
    assert "auth" in app.spec.kits
    assert not (ROOT / "apps" / name / "templates" / "login.html").exists()
    # A task's start (env reset, and so the served /_simweb/start) signs its user in: the
    # kit's sign-in with that user's password must leave the very same browser.user.
    task = next(t for t in app.tasks.values() if t.sign_in and t.instantiate(app, 0).params.get("user_id"))
    env.reset(seed=0, options={"task": task.id})
    started = env.state["browser"]["user"]
    account = app.world.user(started)
    auth = app.spec.kits["auth"]
    state = app.initial_state(0)
    page = app.navigate(state, "/login?next=//evil.example/x")
    assert page.status == 200 and 'bid="login-user"' in page.html and auth["heading"] in page.html
    form = {auth["field"]: account["username"], "password": account["password"], "next": "//evil.example/x"}
    resp = app.submit(state, "/login", form)
    assert resp.location == "/" and resp.event == "sign_in"          # safe_next: never off the site
    assert state["browser"]["user"] == started and type(state["browser"]["user"]) is type(started)
    resp = app.submit(state, "/login", dict(form, password=account["password"] + "x", next="/"))
    assert resp.status == 400 and resp.error == app.spec.raw["events"]["sign_in"]["guards"][0]["error"]
    app.navigate(state, "/")
    assert app.submit(state, "/logout", {}).event == "sign_out" and state["browser"]["user"] is None


@pytest.mark.parametrize("name, register", [("booking", False), ("cms", False), ("issues", False),
                                            ("forum", True), ("shopping", True)])
def test_register_exists_where_the_spec_asks_for_it(name, register):
    app = simweb.make(name, seed=0).app
    state = app.initial_state(0)
    login = app.navigate(state, "/login").html
    page = app.navigate(state, "/register")
    assert ("register" in app.spec.events) is register
    assert ('bid="register-link"' in login) is register
    assert (page.status == 200 and 'bid="reg-submit"' in page.html) is register


def test_an_app_template_takes_the_place_of_the_kits(tmp_path):
    env = simweb.make("issues", seed=0)
    app = env.app
    assert app.jinja.get_template("login.html").filename.endswith("simweb/core/kits/templates/login.html")
    assert app.jinja.get_template("base.html").filename.endswith("issues/templates/base.html")


def test_the_kit_finds_accounts_as_they_are_now():
    env = simweb.make("shopping", seed=0)
    app = env.app
    state = app.initial_state(0)
    app.navigate(state, "/register")
    form = {"full_name": "Robin Example", "username": "robin_ex", "email": "Robin@Example.com",
            "password": "correct horse", "confirm": "correct horse"}
    assert app.submit(state, "/register", form).event == "register"
    new_id = state["browser"]["user"]
    assert new_id > app.world.max_id("users")
    app.navigate(state, "/")
    app.submit(state, "/logout", {})
    app.navigate(state, "/login")
    resp = app.submit(state, "/login", {"login": "  ROBIN@example.COM ", "password": "correct horse"})
    assert resp.event == "sign_in" and resp.location == "/" and state["browser"]["user"] == new_id
    # A world account whose email changed signs in with the new one, not the old.
    old = app.world.user(2)
    state["runtime"]["entities"]["users"]["2"] = dict(old, email="moved@example.org")
    for login, found in ((old["email"], None), ("MOVED@example.org", 2), (old["username"], 2)):
        state["browser"]["user"] = None
        app.navigate(state, "/login")
        app.submit(state, "/login", {"login": login, "password": old["password"]})
        assert state["browser"]["user"] == found, login
