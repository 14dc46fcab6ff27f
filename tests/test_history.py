"""A state's recorded history: every state a run makes (in-process, forked, restored,
served) replays to itself, and a state no run made is refused (simweb.history)."""
from __future__ import annotations

import copy

import orjson
import pytest
from conftest import APPS
from test_server import AUTH, TOKEN, state_of

import simweb
from simweb.core.state import StateError
from simweb.episodes.replay import check_history
from simweb.runtime.history import sealed, secret_fields
from simweb.serving.server import create_app
from simweb.web.actions import parse_action


def first_state_task(app) -> str:
    return next(t for t in sorted(app.tasks) if app.tasks[t].kind == "state")


def finished(app_name: str, seed: int = 1) -> simweb.SimEnv:
    """An env whose oracle has just done the app's first state task."""
    env = simweb.make(app_name, seed=0)
    env.reset(seed=seed, options={"task": first_state_task(env.app)})
    for action in env.oracle_plan():
        env.step(action)
    return env


@pytest.mark.parametrize("app_name", APPS)
def test_states_runs_make_replay_to_themselves(app_name):
    env = finished(app_name)
    assert env.verdict()["success"]
    final = env.snapshot()
    assert final["meta"]["history"]["log"], "a run records its requests"
    assert check_history(env.app, final) == env.start_state()
    # a fork that goes its own way, and a restore of the start that then takes other steps
    child = env.fork()
    child.step("go_back()")
    child.step("go_back()")
    check_history(env.app, child.snapshot())
    env.restore(env.start_state())
    env.step(env.oracle_plan()[0])
    check_history(env.app, env.snapshot())
    # free browsing (no task) too
    free = simweb.make(app_name, seed=0)
    free.reset(seed=4)
    free.step("go_back()")
    check_history(free.app, free.snapshot())


def refused(app, state: dict, needle: str) -> None:
    app.check_state(state)   # a valid state by the schema: only its history gives it away
    with pytest.raises(StateError, match=needle):
        check_history(app, state)


@pytest.mark.parametrize("app_name", APPS)
def test_states_no_run_made_are_refused(app_name):
    env = finished(app_name)
    app, final = env.app, env.snapshot()
    start = env.start_state()
    edited = copy.deepcopy(start)
    edited["runtime"] = final["runtime"]                    # the target edited into the start
    refused(app, edited, "differs at runtime")
    untasked = copy.deepcopy(final)
    untasked["meta"]["task"] = None                          # another start: nothing set up
    refused(app, untasked, "differs at")
    dropped = copy.deepcopy(final)
    del dropped["meta"]["history"]["log"][1]                 # a request left out
    refused(app, dropped, "differs at")
    chained = copy.deepcopy(final)
    chained["meta"]["history"]["digest"] = "0" * 64          # the digest chain does not match
    refused(app, chained, "differs at meta.history.digest")
    clock = copy.deepcopy(final)
    clock["meta"]["clock"] += 60                             # time that never passed
    refused(app, clock, "differs at meta.clock")
    user = copy.deepcopy(final)
    user["browser"]["user"] = None if user["browser"]["user"] is not None else 1
    refused(app, user, "differs at browser.user")
    seen = copy.deepcopy(final)
    seen["browser"]["tabs"][0]["history"].append("/no-request-loaded-this")   # a page never loaded
    refused(app, seen, "no request in its history loaded")
    junk = copy.deepcopy(final)
    junk["meta"]["history"]["log"].append("[\"post\"]")
    refused(app, junk, "not a request simweb records")


@pytest.mark.parametrize("app_name", APPS)
def test_served_states_verify(app_name):
    """The requests of an in-process run sent to the served app (GETs, form POSTs with
    their Referer; a redirect is the log's next GET, as a browser follows it) leave a
    session whose exported state replays to itself and records the same history, runtime,
    clock and verdict as the in-process run."""
    env = finished(app_name)
    final = env.snapshot()
    server = create_app(app_name, control_token=TOKEN)
    c = server.test_client()
    task = final["meta"]["task"]
    assert c.post("/_simweb/reset", headers=AUTH, json={"task": task["id"], "seed": 1}).status_code == 200
    for text in final["meta"]["history"]["log"]:
        entry = orjson.loads(text)
        if entry[0] == "get":
            c.get(entry[1])
        else:
            form = sealed(entry[2], secret_fields(env.app, entry[1], entry[2]), unseal=True)   # as typed
            c.post(entry[1], data=form, headers={"Referer": "http://localhost" + entry[3]})
    served = state_of(c)
    app = server.extensions["simweb"].app
    start = check_history(app, served)
    assert served["runtime"] == final["runtime"]
    for key in ("history", "clock", "requests", "rng"):
        assert served["meta"][key] == final["meta"][key], key
    verdict = app.tasks[task["id"]].verify(app, task["params"], start, served, None)
    assert verdict["success"] and verdict["clean"]


@pytest.mark.parametrize("app_name, tid", [("shopping", "shopping/buy_product"), ("booking", "booking/book_room")])
def test_a_paid_run_keeps_no_card_number_and_still_replays(app_name, tid):
    """Card numbers and security codes (parameters declared secret) go into the history
    sealed, so no state shows a card number or a code in clear text, and the runs that paid
    (judged by the card's fingerprint and security code check) still replay to themselves."""
    env = simweb.make(app_name, seed=0)
    env.reset(seed=3, options={"task": tid})
    plan = env.oracle_plan()
    numbers = [parse_action(a).args[1] for a in plan if a.startswith("fill('card-number'")]
    typed_codes = {parse_action(a).args[1] for a in plan if a.startswith("fill('card-cvv'")}
    assert numbers and typed_codes, plan
    for a in plan:
        env.step(a)
    final = env.snapshot()
    assert env.verdict()["success"]
    text = orjson.dumps(final).decode()
    for number in numbers:
        assert number not in text and number.replace(" ", "") not in text, number
    forms = [orjson.loads(t)[2] for t in final["meta"]["history"]["log"] if t.startswith('["post"')]
    codes = [f["cvv"] for f in forms if "cvv" in f]
    assert codes and not typed_codes & set(codes), codes   # the security code is never kept as typed
    check_history(env.app, final)


def test_a_card_number_left_on_a_page_is_kept_sealed_and_comes_back_on_go_back():
    """Leaving the payment page keeps its fields with its history entry (Chromium's form
    state): the card number is kept sealed, so the state never shows it in clear text, and
    go_back fills it back in as typed."""
    env = simweb.make("shopping", seed=0)
    env.reset(seed=3, options={"task": "shopping/buy_product"})
    plan = env.oracle_plan()
    last = max(i for i, a in enumerate(plan) if a.startswith("fill('card-number'"))
    for a in plan[: last + 1]:
        env.step(a)
    number = parse_action(plan[last]).args[1]
    typed = env.browser.tab["fields"]["card-number"]
    env.step("goto('/')")
    text = orjson.dumps(env.snapshot()).decode()
    assert number not in text and typed not in text and number.replace(" ", "") not in text
    env.step("go_back()")
    assert env.browser.tab["fields"]["card-number"] == typed


@pytest.mark.apps("issues")
def test_a_state_showing_an_empty_query_verifies_offline():
    """A GET form without fields leaves the tab at 'page?' (its own history entry, as in
    Chromium), and the request it made was for the page: the oracle's final state of such a
    run still verifies offline (the red team's forged-state check refused it as unmade)."""
    from simweb.episodes.env import SimEnv
    from simweb.episodes.replay import verify_state

    env = SimEnv("issues")
    env.reset(seed=1, options={"task": "issues/filtered_count"})
    for action in env.oracle_plan():
        env.step(action)
    final = env.snapshot()
    shown = [final["browser"]["tabs"][0]["url"], *final["browser"]["tabs"][0]["history"]]
    assert any(u.endswith("?") for u in shown)          # the case: an empty query on the tab
    verdict = verify_state(env.app, "issues/filtered_count", 1, final)   # the answer is in the state
    assert verdict["success"] and verdict["clean"]
