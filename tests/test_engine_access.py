"""The engine's access and clock concepts, on a tiny app (tests/tinyapp): roles and
permissions (one rule for guards, page requirements and templates), workflows (a
status field that only moves along declared edges) and timers (server-side events the
simulated clock fires)."""
from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tinyapp import APP as TINY

from simweb.core.spec import SpecError, compile_spec
from simweb.core.state import StateValidator
from simweb.runtime.app import App


@pytest.fixture(scope="module")
def app() -> App:
    return App(TINY, 0, 3)


def state_for(app: App, user: int | None) -> dict:
    s = app.initial_state()
    s["browser"]["user"] = user
    return s


def post(app: App, state: dict, page_url: str, url: str, form: dict | None = None):
    app.navigate(state, page_url)
    return app.submit(state, url, form or {})


# ----------------------------------------------------------------------------- permissions

def test_permission_guard_allows_by_role_and_by_ownership(app):
    # user 2 is a developer; user 3 a guest who owns card 2 (owner = 1 + id % 3)
    for user, cid in ((2, 1), (3, 2)):
        s = state_for(app, user)
        r = post(app, s, f"/card/{cid}", f"/card/{cid}/finish")
        assert r.error is None and r.status == 303
        assert s["runtime"]["entities"]["cards"][str(cid)]["state"] == "done"


def test_permission_guard_refuses_with_its_own_message_and_status(app):
    s = state_for(app, 3)   # a guest, not the owner of card 1
    before = copy.deepcopy(s["runtime"])
    r = post(app, s, "/card/1", "/card/1/finish")
    assert r.status == 403 and r.error == "Only developers may change Card 1."
    assert s["runtime"] == before


def test_permission_guard_overrides_message_and_status(app):
    s = state_for(app, 3)
    r = post(app, s, "/card/1", "/card/1/force", {"to": "done"})
    assert (r.status, r.error) == (409, "Nope: Card 1")


def test_page_requirement_by_permission(app):
    s = state_for(app, 2)
    r = app.navigate(s, "/admin")
    assert r.status == 403 and r.error == "Maintainers only."
    s = state_for(app, 1)
    assert app.navigate(s, "/admin").status == 200


def test_templates_ask_the_same_rule(app):
    s = state_for(app, 3)
    assert 'bid="finish"' not in app.navigate(s, "/card/1").html
    assert 'bid="finish"' in app.navigate(s, "/card/2").html
    assert ">member<" in app.navigate(s, "/").html
    s = state_for(app, 1)
    assert ">admin<" in app.navigate(s, "/").html


def test_roles_change_at_run_time(app):
    s = state_for(app, 1)
    assert post(app, s, "/", "/promote", {"uid": "3", "role": "developer"}).error is None
    s["browser"]["user"] = 3
    assert app.can(s, "work_on", app.world.card(1)) is True
    assert post(app, s, "/card/1", "/card/1/finish").error is None


def test_can_rejects_unknown_permission_and_wrong_arity(app):
    s = state_for(app, 1)
    with pytest.raises(KeyError, match="unknown permission"):
        app.can(s, "nope")
    with pytest.raises(TypeError, match="takes 1 arguments"):
        app.can(s, "work_on")


def test_event_lists_its_permissions_and_reads_through_them(app):
    ev = app.spec.events["finish"]
    assert ev.permissions == ["work_on"]
    assert "runtime.roles" in ev.reads


# ----------------------------------------------------------------------------- workflows

def test_workflow_allows_declared_edges_only(app):
    s = state_for(app, 2)
    assert post(app, s, "/card/1", "/card/1/force", {"to": "archived"}).error is None
    before = copy.deepcopy(s["runtime"])
    r = post(app, s, "/card/1", "/card/1/force", {"to": "done"})   # archived -> done: not declared
    assert r.status == 500 and "card_state" in r.error and "'archived' to 'done'" in r.error
    assert s["runtime"] == before   # rolled back


def test_workflow_insert_starts_in_initial_state(app):
    s = state_for(app, 2)
    assert post(app, s, "/", "/add", {"title": "New"}).error is None
    new = [r for r in s["runtime"]["entities"]["cards"].values()][0]
    assert new["state"] == "open"
    r = post(app, s, "/", "/add", {"title": "Sneaky", "state": "done"})
    assert r.status == 500 and "starts in 'open'" in r.error


def test_workflow_next_states_and_moves(app):
    s = state_for(app, 1)
    assert ">done,archived<" in app.navigate(s, "/card/1").html
    assert app.spec.events["finish"].moves == ["card_state → done"]
    assert app.spec.events["force"].moves == ["card_state → (computed)"]
    assert app.spec.events["add"].moves == ["card_state → open (new)"]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([1, 2, 3]), st.sampled_from(["open", "done", "archived", "lost"])),
                max_size=12))
def test_workflow_state_is_always_reachable(app, moves):
    """Whatever is attempted, every card's state stays one the workflow can reach along
    its edges from the card's previous state."""
    wf = app.spec.workflows["card_state"]
    s = state_for(app, 1)
    for cid, to in moves:
        old = (s["runtime"]["entities"].get("cards", {}).get(str(cid)) or app.world.card(cid))["state"]
        post(app, s, f"/card/{cid}", f"/card/{cid}/force", {"to": to})
        new = (s["runtime"]["entities"].get("cards", {}).get(str(cid)) or app.world.card(cid))["state"]
        assert new == old or (old, new) in {(a, b) for a, b, _ in wf.edges}


# ----------------------------------------------------------------------------- timers

def test_timer_fires_when_the_clock_reaches_it(app):
    s = state_for(app, 2)
    post(app, s, "/card/1", "/card/1/remind", {"after": "12", "text": "ping"})
    queue = s["runtime"]["timers"]
    assert [t["timer"] for t in queue["pending"]] == ["remind"]
    due = queue["pending"][0]["at"]
    assert s["runtime"]["inbox"] == []
    while s["meta"]["clock"] < due:
        app.navigate(s, "/")
    assert s["runtime"]["inbox"] == [{"card": 1, "text": "ping", "at": due}]
    assert s["runtime"]["timers"]["pending"] == []


def test_rescheduling_by_key_replaces_and_cancel_drops(app):
    s = state_for(app, 2)
    post(app, s, "/card/1", "/card/1/remind", {"after": "100", "text": "a"})
    post(app, s, "/card/1", "/card/1/remind", {"after": "200", "text": "b"})
    pending = s["runtime"]["timers"]["pending"]
    assert len(pending) == 1 and pending[0]["args"]["text"] == "b"
    post(app, s, "/card/1", "/card/1/finish")   # finishing cancels the reminder
    assert s["runtime"]["timers"]["pending"] == []


def test_timer_condition_false_drops_it(app):
    s = state_for(app, 2)
    post(app, s, "/card/1", "/card/1/remind", {"after": "6", "text": "x"})
    # Finish through another key's path: set the card done directly, leaving the timer
    s["runtime"]["entities"].setdefault("cards", {})["1"] = dict(app.world.card(1), state="done")
    for _ in range(3):
        app.navigate(s, "/")
    assert s["runtime"]["inbox"] == [] and s["runtime"]["timers"]["pending"] == []


def test_timers_fire_in_time_then_id_order(app):
    s = state_for(app, 2)
    for cid, after in ((2, 30), (3, 10), (1, 30)):
        post(app, s, f"/card/{cid}", f"/card/{cid}/remind", {"after": str(after), "text": str(cid)})
    for _ in range(12):
        app.navigate(s, "/")
    assert [m["text"] for m in s["runtime"]["inbox"]] == ["3", "2", "1"]


def test_timer_queue_is_part_of_the_runtime_schema(app):
    s = state_for(app, 2)
    post(app, s, "/card/1", "/card/1/remind", {"after": "100", "text": "a"})
    StateValidator(app.spec.runtime_schema).check(s)
    bad = copy.deepcopy(s)
    bad["runtime"]["timers"]["pending"][0]["at"] = "soon"
    with pytest.raises(Exception, match="timers"):
        StateValidator(app.spec.runtime_schema).check(bad)


# ----------------------------------------------------------------------------- spec errors

def _doc(app: App) -> dict:
    return copy.deepcopy(app.spec.raw)


@pytest.mark.parametrize("mutate, needle", [
    (lambda d: d["events"]["finish"]["guards"].__setitem__(0, {"permission": "work_onn"}),
     "unknown permission 'work_onn' (did you mean 'work_on'?)"),
    (lambda d: d["events"]["finish"]["guards"].__setitem__(0, {"permission": "work_on", "args": {"x": "1"}}),
     "takes no argument 'x'"),
    (lambda d: d["events"]["finish"]["guards"].__setitem__(0, {"permission": "admin", "if": "True"}),
     "guards"),
    (lambda d: d["events"]["remind"]["updates"][0].__setitem__("timer", "remnd"),
     "unknown timer 'remnd' (did you mean 'remind'?)"),
    (lambda d: d["events"]["remind"]["updates"][0]["args"].pop("text"), "takes args ['card_id', 'text']"),
    (lambda d: d["workflows"]["card_state"]["transitions"].append({"from": "open", "to": "open"}),
     "must change the state"),
    (lambda d: d["workflows"].__setitem__("again", dict(d["workflows"]["card_state"])), "already has workflow"),
    (lambda d: d["permissions"]["admin"].__setitem__("args", ["user"]), "shadows a built-in name"),
])
def test_spec_errors_name_the_problem(app, mutate, needle):
    doc = _doc(app)
    mutate(doc)
    fns = app.function_table.merged_with_builtins()
    with pytest.raises(SpecError, match=None) as exc:
        compile_spec(doc, "tiny.yaml", app.callables, {n: f.reads for n, f in fns.items()})
    assert needle in str(exc.value)
