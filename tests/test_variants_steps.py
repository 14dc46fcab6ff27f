"""Flow options of site variants that change what a form takes (docs/variants.md):

* multi-step forms (the ``form_steps`` factor, simweb.runtime.variant_steps): a declared
  form's first page asks for its first fields and Continue; nothing changes until its
  second page is sent, which runs the event exactly once with every field;
* the inline confirm (the ``confirm_step`` option ``inline``, simweb.runtime.variant_confirm):
  the form's own page again, with a confirmation panel, the same held entry.

Variants are asked of the catalogue by factor value, never by id."""
from __future__ import annotations

from typing import Any

import pytest
from conftest import APPS, run_plan, served_browser

import simweb
from simweb.core.state import StateError, deep_copy
from simweb.episodes.episode import final_plan
from simweb.episodes.replay import check_history
from simweb.runtime import variant_confirm, variant_steps
from simweb.runtime.variants import FILTER_DISCLOSED, catalogue

CONTINUE = variant_steps.CONTINUE_ACTION
YES = variant_confirm.CONFIRM_ACTION
NO = f"click('{variant_confirm.CANCEL_BID}')"


def variant(app: str, steps: str | None = None, confirm: str | None = None) -> int:
    """The first variant id of ``app`` with these flow values (None: any), tasks that start
    signed in and today's policies (so a template draws today's instance there)."""
    cat = catalogue(app)
    return next(k for k in range(1, cat.count)
                if steps in (None, cat.values(k)["form_steps"]) and confirm in (None, cat.values(k)["confirm_step"])
                and cat.values(k)["sign_in"] == "signed-in"   # (a plan with no sign-in: tests/test_variants_login.py)
                and cat.values(k)["menu"] == "bar"   # (a plan with no menu to open: tests/test_variants_menu.py)
                and cat.values(k)["filters"] not in FILTER_DISCLOSED   # (nor filters: tests/test_variants_filters.py)
                and cat.policies(k) == cat.policy_defaults)


def at_second_page(app: str, k: int) -> tuple[Any, list[str], int]:
    """An env of variant ``k`` on the second page of the first template whose oracle meets
    a multi-step form: (env, plan, index of the plan's Continue)."""
    env = simweb.make(app, variant=k, max_steps=100_000)
    for tid in env.unwrapped.app.tasks:
        env.reset(seed=0, options={"task": tid})
        plan = env.unwrapped.oracle_plan()
        if CONTINUE in plan:
            i = plan.index(CONTINUE)
            for a in plan[:i + 1]:
                env.step(a)
            return env, plan, i
    raise AssertionError(f"{app} variant {k}: no oracle meets a multi-step form")


def at_inline_confirm(app: str, k: int) -> tuple[Any, list[str], int]:
    """An env of variant ``k`` stopped before the first Confirm of an oracle's plan."""
    env = simweb.make(app, variant=k, max_steps=100_000)
    for tid in env.unwrapped.app.tasks:
        env.reset(seed=0, options={"task": tid})
        plan = env.unwrapped.oracle_plan()
        if YES in plan:
            i = plan.index(YES)
            for a in plan[:i]:
                env.step(a)
            return env, plan, i
    raise AssertionError(f"{app} variant {k}: no oracle meets a confirmation")


def _state(env: Any) -> dict:
    return env.unwrapped.snapshot()


def _tab(state: dict) -> dict:
    return state["browser"]["tabs"][state["browser"]["active"]]


def _before(app: str, k: int, tid: str, actions: list[str]) -> dict:
    env = simweb.make(app, variant=k, max_steps=100_000)
    env.reset(seed=0, options={"task": tid})
    for a in actions:
        env.step(a)
    return _state(env)


# ----------------------------------------------------------------------------- multi-step forms
@pytest.mark.parametrize("app", APPS)
def test_the_first_page_holds_and_the_second_sends_once(app: str) -> None:
    k = variant(app, steps="two-step")
    env, plan, i = at_second_page(app, k)
    u = env.unwrapped
    tid = u.task.id
    s = _state(env)
    decl = catalogue(app).steppables
    entry = s["browser"]["steps"]
    event = u.app.spec.match_event(entry["url"].partition("?")[0])[0].name
    assert event in decl and set(entry["form"]) <= set(decl[event].first)
    assert _tab(s)["page"] == variant_steps.PAGE and _tab(s)["url"] == variant_steps.page_url(entry["token"])
    # nothing changed in the runtime: it is the state's before the first page was sent
    assert _before(app, k, tid, plan[:i])["runtime"] == s["runtime"]
    assert not u.verdict()["success"]
    # the second page: the other fields, a Back link, the held values; no first field
    obs, *_ = env.step("noop()")
    page = u.app.render(s)
    assert f'bid="{variant_steps.BACK_BID}"' in page and 'bid="form-step-held"' in page
    assert f'action="{variant_steps.page_url(entry["token"])}"' in page
    for name in decl[event].first:
        assert f'name="{name}"' not in page or f'type="hidden" name="{name}"' in page, name
    # the first page (the form's own page): the first fields and Continue, no second-page field
    first_page = _before(app, k, tid, plan[:i])
    html = u.app.render(first_page)
    assert f'bid="{variant_steps.CONTINUE_BID}"' in html
    for a in plan[i + 1:]:
        env.step(a)
        if "steps" not in _state(env)["browser"]:
            break
    done = _state(env)
    assert done["runtime"] != s["runtime"] and "steps" not in done["browser"]
    check_history(u.app, done)   # the recorded requests replay to the same state
    # the second page's POST again (a double click, a resubmit): nothing more changes
    again = deep_copy(done)
    url = variant_steps.page_url(entry["token"])
    r = u.app.submit(again, url, {}, referrer=url)
    assert r.status == 409 and "Nothing is waiting" in (r.error or "") and again["runtime"] == done["runtime"]


def test_a_post_to_the_event_is_always_a_first_page() -> None:
    """The whole form (first and second fields) posted to the event's own address holds
    it again: it never skips the second page; a first field forged into the second page's
    POST is ignored (the held value is sent)."""
    app = "issues"
    k = variant(app, steps="two-step")
    env, plan, i = at_second_page(app, k)
    u = env.unwrapped
    s = _state(env)
    entry = s["browser"]["steps"]
    whole = {**entry["form"], "labels": [], "weight": "2"}
    t = deep_copy(s)
    r = u.app.submit(t, entry["url"], whole, referrer=entry["back"])
    assert r.status == 303 and variant_steps.is_page(r.location or "")
    assert t["runtime"] == s["runtime"] and t["browser"]["steps"]["token"] != entry["token"]
    # the right second page, with another title forged in: the held title is created
    url = variant_steps.page_url(entry["token"])
    u.app.submit(s, url, {"title": "Forged title", "description": "x"}, referrer=url)
    created = str(s["runtime"]["entities"])
    assert s["runtime"] != t["runtime"] and entry["form"]["title"] in created and "Forged title" not in created


def test_back_returns_to_the_first_page_and_the_held_form_stays() -> None:
    app = "cms"
    k = variant(app, steps="two-step-numbered")
    env, plan, i = at_second_page(app, k)
    s = _state(env)
    obs, *_ = env.step(f"click('{variant_steps.BACK_BID}')")
    back = _state(env)
    assert _tab(back)["url"] == s["browser"]["steps"]["back"]
    assert f"[{variant_steps.CONTINUE_BID}] button 'Next'" in obs["axtree"] and "Step 1 of 2" in obs["axtree"]
    assert back["browser"]["steps"] == s["browser"]["steps"] and back["runtime"] == s["runtime"]
    obs, *_ = env.step("go_back()")   # (Back is a link: the second page is one entry back)
    assert "Step 2 of 2" in obs["axtree"]
    for a in plan[i + 1:]:
        env.step(a)
    v = env.unwrapped.verdict()
    assert v["success"] and v["clean"], v


@pytest.mark.parametrize("app", APPS)
def test_back_shows_the_held_answers_and_continue_keeps_them(app: str) -> None:
    """The second page's Back shows the first page filled as it was sent (as a site keeping
    the wizard in its session does); Continue there without typing holds the same answers,
    and the form completes clean."""
    k = variant(app, steps="two-step")
    env, plan, i = at_second_page(app, k)
    held = dict(_state(env)["browser"]["steps"]["form"])
    assert held
    obs, *_ = env.step(f"click('{variant_steps.BACK_BID}')")
    texts = [v for v in held.values() if isinstance(v, str) and len(v) > 8]   # what text boxes hold
    assert texts and all(f"value='{v}'" in obs["axtree"] for v in texts), (app, held, obs["axtree"])
    obs, *_ = env.step(CONTINUE)
    assert not obs["last_action_error"] and variant_steps.is_page(obs["url"])
    assert _state(env)["browser"]["steps"]["form"] == held
    for a in plan[i + 1:]:
        env.step(a)
    v = env.unwrapped.verdict()
    assert v["success"] and v["clean"], v


def test_a_refused_page_shows_todays_message_and_changes_nothing() -> None:
    """A bad first field is refused on the first page (today's message, nothing held); a
    bad second field leaves the form held and shows its second page again."""
    app = "booking"
    k = variant(app, steps="two-step")
    env, plan, i = at_second_page(app, k)
    u = env.unwrapped
    s = _state(env)
    entry = s["browser"]["steps"]
    t = deep_copy(s)
    t["browser"].pop("steps")
    r = u.app.submit(t, entry["url"], {**entry["form"], "guest_email": "not an email"}, referrer=entry["back"])
    assert r.status == 400 and r.error == "Enter a valid email address." and "steps" not in t["browser"]
    url = variant_steps.page_url(entry["token"])
    t = deep_copy(s)
    r = u.app.submit(t, url, {"requests": "x" * 600}, referrer=url)
    assert r.error and r.location == url and t["browser"]["steps"] == entry and t["runtime"] == s["runtime"]


def test_bad_and_stale_tokens_are_observations_not_exceptions() -> None:
    app = "forum"
    k = variant(app, steps="two-step")
    env, plan, i = at_second_page(app, k)
    s = _state(env)
    token = s["browser"]["steps"]["token"]
    obs, _, _, _, info = env.step(f"goto('{variant_steps.page_url(token + 7)}')")
    assert obs["last_action_error"] == "" and "form-step-none" in obs["axtree"]
    assert _state(env)["runtime"] == s["runtime"]
    # a stale second page: another form took its place in another tab; the old tab's
    # button is sent and the site says nothing was waiting
    env.step("go_back()")
    env.step("new_tab()")
    env.step(f"goto('{s['browser']['steps']['back']}')")
    for a in plan[:i + 1]:
        if a.startswith(("fill(", "select_option(", "check(", "click('submit-kind")) or a == CONTINUE:
            env.step(a)
    newer = _state(env)["browser"]["steps"]["token"]
    assert newer != token
    u = env.unwrapped
    old = deep_copy(_state(env))
    r = u.app.submit(old, variant_steps.page_url(token), {}, referrer=variant_steps.page_url(token))
    assert r.status == 409 and old["runtime"] == s["runtime"] and old["browser"]["steps"]["token"] == newer
    # on a site without the factor the address is no page (404) and takes no POST (405)
    other = simweb.make(app, variant=variant(app, steps="one-step"), max_steps=100)
    other.reset(seed=0)
    st = other.unwrapped.snapshot()
    assert other.unwrapped.app.navigate(st, variant_steps.page_url(1)).status == 404
    assert other.unwrapped.app.submit(st, variant_steps.page_url(1), {}).status == 405


def test_the_held_form_is_schema_checked() -> None:
    app = "shopping"
    env, plan, i = at_second_page(app, variant(app, steps="two-step"))
    u = env.unwrapped
    s = _state(env)
    u.app.check_state(s)
    bad = deep_copy(s)
    bad["meta"]["variant"] = variant(app, steps="one-step")
    with pytest.raises(StateError, match="browser.steps"):
        u.app.check_state(bad)
    bad = deep_copy(s)
    del bad["browser"]["steps"]["token"]
    with pytest.raises(StateError):
        u.app.check_state(bad)
    bad = deep_copy(s)
    bad["browser"]["steps"]["url"] = "/cart/add"
    with pytest.raises(StateError, match="multi-step"):
        u.app.check_state(bad)


def test_fork_and_restore_mid_flow() -> None:
    app = "issues"
    env, plan, i = at_second_page(app, variant(app, steps="two-step-numbered"))
    u = env.unwrapped
    snap = u.snapshot()
    fork = u.fork()
    for a in plan[i + 1:]:
        fork.step(a)
    assert fork.verdict()["success"]
    assert not u.verdict()["success"] and "steps" in u.snapshot()["browser"]   # the parent still holds it
    other = simweb.make(app, max_steps=100_000)   # an env of today's site: the state decides
    other.reset(seed=0, options={"task": u.task.id})
    other.unwrapped.restore(deep_copy(snap))
    obs, *_ = other.step("noop()")
    assert "Step 2 of 2" in obs["axtree"] and u.app.render(snap) == other.unwrapped.app.render(snap)
    for a in plan[i + 1:]:
        other.step(a)
    v = other.unwrapped.verdict()
    assert v["success"] and v["clean"]
    assert other.unwrapped.snapshot()["runtime"] == fork.snapshot()["runtime"]


@pytest.mark.parametrize("app", APPS)
def test_every_oracle_solves_the_new_flows(app: str) -> None:
    """Every template's oracle reaches a clean success within its budget on a variant of
    each multi-step style (one of them with the inline confirm); the plan is the
    template's with Continue and Confirm clicks added and second-page actions moved after
    Continue, nothing else."""
    seen = {"continue": 0, "confirm": 0}
    for k in (variant(app, steps="two-step", confirm="inline"), variant(app, steps="two-step-numbered")):
        env = simweb.make(app, variant=k)
        for n, tid in enumerate(env.unwrapped.app.tasks):
            env.reset(seed=k + n, options={"task": tid})
            plan = env.unwrapped.oracle_plan()
            today = env.unwrapped.app.tasks[tid].oracle(env.unwrapped.app, env.unwrapped.task.params)
            assert sorted(a for a in plan if a not in (CONTINUE, YES)) == sorted(final_plan(list(today))), (app, tid)
            seen["continue"] += plan.count(CONTINUE)
            seen["confirm"] += plan.count(YES)
            assert len(plan) * 2 <= env.unwrapped.max_steps, (app, tid)
            v = run_plan(env, plan, (app, k, tid))
            assert v["success"] and v["clean"], (app, k, tid, v)
    assert seen["continue"] > 0 and seen["confirm"] > 0, seen


def test_served_mode_continues_and_sends_once() -> None:
    from simweb.serving.server import create_app

    app = "shopping"
    env, plan, i = at_second_page(app, variant(app, steps="two-step"))
    held = _state(env)
    entry = held["browser"]["steps"]
    k = held["meta"]["variant"]
    before = _before(app, k, held["meta"]["task"]["id"], plan[:i])
    client = create_app(app, variant=k, control_token="t" * 32).test_client()
    auth = {"Authorization": "Bearer " + "t" * 32}
    assert client.post("/_simweb/state", json=before, headers=auth).status_code == 200
    html = client.get(entry["back"]).get_data(as_text=True)
    assert f'bid="{variant_steps.CONTINUE_BID}"' in html and 'name="phone"' not in html
    r = client.post(entry["url"], data=entry["form"], headers={"Referer": f"http://localhost{entry['back']}"})
    assert r.status_code == 303 and variant_steps.is_page(r.headers["Location"])
    page = r.headers["Location"]
    html = client.get(page).get_data(as_text=True)
    assert 'name="phone"' in html and 'name="street"' not in html
    runtime = client.get("/_simweb/state", headers=auth).get_json()["runtime"]
    assert runtime == before["runtime"]
    # a second page the site refuses (a US ZIP code for a Canadian address): held still, shown again
    r = client.post(page, data={"country": "CA"}, headers={"Referer": f"http://localhost{page}"})
    assert r.status_code == 303 and r.headers["Location"].endswith(page)
    assert client.get("/_simweb/state", headers=auth).get_json()["runtime"] == runtime
    r = client.post(page, data={"country": "US", "phone": ""}, headers={"Referer": f"http://localhost{page}"})
    assert r.status_code == 303 and not variant_steps.is_page(r.headers["Location"])
    done = client.get("/_simweb/state", headers=auth).get_json()["runtime"]
    assert done != runtime
    client.post(page, data={"country": "CA"}, headers={"Referer": f"http://localhost{page}"})   # resubmitted
    assert client.get("/_simweb/state", headers=auth).get_json()["runtime"] == done


def test_the_steps_section_is_checked() -> None:
    from simweb.runtime.variant_steps import StepsError, check_events, parse

    with pytest.raises(StepsError):
        parse("x", {"add_address": {"first": []}})
    with pytest.raises(StepsError):
        parse("x", {"add_address": {"first": ["street"], "extra": 1}})
    app = simweb.make("shopping").unwrapped.app
    with pytest.raises(StepsError, match="does not have"):
        check_events(app, parse("shopping", {"no_such_event": {"first": ["a"]}}), {})
    with pytest.raises(StepsError, match="not fields"):
        check_events(app, parse("shopping", {"add_address": {"first": ["nope"]}}), {})
    with pytest.raises(StepsError, match="every field"):
        check_events(app, parse("shopping", {"sign_in": {"first": ["login", "password", "next"]}}), {})
    with pytest.raises(StepsError, match="secret"):
        check_events(app, parse("shopping", {"set_payment": {"first": ["card_name"]}}), {})
    with pytest.raises(StepsError, match="both"):
        check_events(app, parse("shopping", {"request_return": {"first": ["reason"]}}),
                     catalogue("shopping").confirmables)


def test_held_out_values_are_test_only() -> None:
    for app in APPS:
        cat = catalogue(app)
        assert cat.values(0)["form_steps"] == "one-step" and cat.values(0)["confirm_step"] == "none"
        train = cat.listing("train", 200)
        assert all(r["factors"]["form_steps"] != "two-step-numbered" for r in train)
        assert {r["factors"]["form_steps"] for r in train} >= {"one-step", "two-step"}
        assert any(r["factors"]["confirm_step"] == "inline" for r in train)
        assert any(r["factors"]["form_steps"] == "two-step-numbered" for r in cat.listing("test", 200))


def test_the_red_team_finds_no_way_around_the_second_page(monkeypatch: pytest.MonkeyPatch) -> None:
    """The form-steps family pays nothing; a site that sent any token's second page (a
    broken held-entry rule) is caught."""
    from simweb.tools.redteam import attack_instance

    env, plan, i = at_second_page("cms", variant("cms", steps="two-step"))
    u = env.unwrapped
    tid = u.task.id
    attacks = [a for a in attack_instance(u, tid, 0, events=False) if a.family == "form-steps"]
    assert len(attacks) == 5 and not any(a.paid or a.false_negative for a in attacks), attacks

    def any_token(state: dict, token: int) -> dict | None:
        return state["browser"].get("steps")

    monkeypatch.setattr(variant_steps, "held", any_token)
    attacks = [a for a in attack_instance(u, tid, 0, events=False) if a.family == "form-steps"]
    assert any(a.paid for a in attacks), attacks


# ----------------------------------------------------------------------------- the inline confirm
@pytest.mark.parametrize("app", APPS)
def test_the_inline_confirm_holds_on_the_forms_page(app: str) -> None:
    k = variant(app, confirm="inline")
    env, plan, i = at_inline_confirm(app, k)
    u = env.unwrapped
    s = _state(env)
    pending = s["browser"]["confirm"]
    assert _tab(s)["url"] == pending["back"] and _tab(s)["page"] != variant_confirm.PAGE
    assert _before(app, k, u.task.id, plan[:i - 1])["runtime"] == s["runtime"]
    obs, *_ = env.step("noop()")
    assert "dialog 'Please confirm'" in obs["axtree"] and f"[{variant_confirm.CONFIRM_BID}] button" in obs["axtree"]
    assert not u.verdict()["success"]
    # the confirmation page of its own is no page on this site
    assert u.app.navigate(deep_copy(s), variant_confirm.page_url(pending["token"])).status == 404
    # a Confirm posted from another page changes nothing
    t = deep_copy(s)
    other = "/" if pending["back"] != "/" else "/?x=1"
    assert u.app.submit(t, variant_confirm.page_url(pending["token"]), {}, referrer=other).status == 409
    assert t["runtime"] == s["runtime"] and t["browser"]["confirm"] == pending
    obs, *_ = env.step(YES)
    done = _state(env)
    assert done["runtime"] != s["runtime"] and "confirm" not in done["browser"]
    assert "dialog 'Please confirm'" not in obs["axtree"]
    again = deep_copy(done)
    again["browser"]["tabs"][again["browser"]["active"]]["url"] = pending["back"]
    r = u.app.submit(again, variant_confirm.page_url(pending["token"]), {}, referrer=pending["back"])
    assert r.status == 409 and again["runtime"] == done["runtime"]   # exactly once
    check_history(u.app, done)


def test_the_inline_cancel_is_clean() -> None:
    app = "shopping"
    env, plan, i = at_inline_confirm(app, variant(app, confirm="inline"))
    held = _state(env)
    waiting = env.unwrapped.verdict()
    obs, *_ = env.step(NO)
    s = _state(env)
    assert s["runtime"] == held["runtime"] and "confirm" not in s["browser"]
    assert env.unwrapped.verdict() == waiting and "dialog 'Please confirm'" not in obs["axtree"]
    assert f"[{variant_confirm.CONFIRM_BID}]" not in obs["axtree"] and "Cancelled: nothing was changed." in obs["axtree"]
    for a in plan[i - 1:]:   # the form sent again, and confirmed
        env.step(a)
    v = env.unwrapped.verdict()
    assert v["success"] and v["clean"], v


# ----------------------------------------------------------------------------- Chromium parity
@pytest.mark.browser
@pytest.mark.parametrize("app", APPS)
def test_a_multi_step_form_is_the_same_in_chromium(app: str, chromium: Any) -> None:
    """A multi-step form's first page, its Continue, its second page and its final submit
    make the same pages (AX tree, URL) and the same runtime in Chromium; the second page
    again after it shows nothing held and changes nothing."""
    with served_browser(app, chromium) as web:
        k = variant(app, steps="two-step-numbered")
        sim, plan, i = at_second_page(app, k)
        first = _before(app, k, sim.unwrapped.task.id, plan[:i])
        sim.unwrapped.restore(deep_copy(first))
        web.restore(first)
        so, *_ = sim.step("noop()")
        wo, *_ = web.step("noop()")
        assert so["axtree"] == wo["axtree"] and "Step 1 of 2" in so["axtree"], (app, so["url"])
        for a in plan[i:]:
            so, *_ = sim.step(a)
            wo, *_ = web.step(a)
            assert so["url"].split("/", 3)[3] == wo["url"].split("/", 3)[3], (app, a, so["url"], wo["url"])
            assert so["axtree"] == wo["axtree"], (app, a, so["url"])
            if "steps" not in sim.unwrapped.snapshot()["browser"]:
                break
        done = web.snapshot()
        assert done["runtime"] == sim.unwrapped.snapshot()["runtime"] != first["runtime"]
        assert "steps" not in done["browser"]
        wo, *_ = web.step("go_back()")   # the second page again: nothing held, no form
        assert "form-step-none" in wo["axtree"] and web.snapshot()["runtime"] == done["runtime"]


@pytest.mark.browser
@pytest.mark.parametrize("app", APPS)
def test_back_to_a_filled_first_page_is_the_same_in_chromium(app: str, chromium: Any) -> None:
    """The second page's Back makes the same filled first page in Chromium, and Continue
    from it sends the same held answers."""
    with served_browser(app, chromium) as web:
        k = variant(app, steps="two-step")
        sim, plan, i = at_second_page(app, k)
        second = deep_copy(_state(sim))
        web.restore(second)
        for a in (f"click('{variant_steps.BACK_BID}')", CONTINUE):
            so, *_ = sim.step(a)
            wo, *_ = web.step(a)
            assert so["axtree"] == wo["axtree"], (app, a, so["url"])
        assert web.snapshot()["browser"]["steps"]["form"] == second["browser"]["steps"]["form"]


@pytest.mark.browser
@pytest.mark.parametrize("app", APPS)
def test_an_inline_confirm_is_the_same_in_chromium(app: str, chromium: Any) -> None:
    """The inline confirmation panel on the form's page is the same AX tree in Chromium,
    and its Confirm makes the same transition (page, runtime); nothing is left to confirm."""
    with served_browser(app, chromium) as web:
        sim, plan, i = at_inline_confirm(app, variant(app, confirm="inline"))
        held = sim.unwrapped.snapshot()
        web.restore(held)
        wo, *_ = web.step("noop()")
        so, *_ = sim.step("noop()")
        assert so["axtree"] == wo["axtree"] and "dialog 'Please confirm'" in so["axtree"], (app, so["url"])
        so, *_ = sim.step(YES)
        wo, *_ = web.step(YES)
        assert so["url"].split("/", 3)[3] == wo["url"].split("/", 3)[3], (app, so["url"], wo["url"])
        assert so["axtree"] == wo["axtree"]
        done = web.snapshot()
        assert done["runtime"] == sim.unwrapped.snapshot()["runtime"] != held["runtime"]
        assert "confirm" not in done["browser"]


@pytest.mark.parametrize("app", APPS)
def test_a_forms_first_page_is_split_once_and_the_same_as_a_fresh_split(app: str) -> None:
    """The split of a form's first page is kept by the form's markup (the same empty form
    on every instance is split once): the page drawn from the kept split is the one a fresh
    split gives, and two forms' markups never share an entry."""
    k = variant(app, steps="two-step")
    env = simweb.make(app, variant=k, max_steps=100_000)
    u = env.unwrapped
    for tid in u.app.tasks:
        env.reset(seed=0, options={"task": tid})
        plan = u.oracle_plan()
        if CONTINUE in plan:
            for a in plan[:plan.index(CONTINUE)]:
                env.step(a)
            break
    variant_steps._FIRST_PAGES.clear()
    fresh = u.browser.app.render(u.state)
    kept = dict(variant_steps._FIRST_PAGES)
    assert kept and all(form.startswith("<form") and page.startswith(form[:form.index(">") + 1])
                        for (form, _first, _style), page in kept.items())
    again = u.browser.app.render(u.state)   # from the kept split
    assert again == fresh and variant_steps._FIRST_PAGES == kept
    assert f'bid="{variant_steps.CONTINUE_BID}"' in fresh


def test_a_second_page_s_title_is_split_by_its_own_page_s_title() -> None:
    """Every form's second page has the engine's one page name: the title of cms's
    new-post form's second page ("New post", the spec's words) is rewritten in the
    variant's words after an edit form's second page ("{the post's title} · ...", a
    value) was shown in the same process, and reads as the new-post page's own title."""
    from simweb.runtime import variants

    k = 1
    app = simweb.make("cms", variant=k).unwrapped.app
    assert catalogue("cms").site(k).words("New post") == "New article"
    app.__dict__.pop("_title_shapes", None)   # (what earlier tests in this process kept)
    variants._site_of(app, k).__dict__.pop("_context_memo", None)
    pages = app.spec.pages
    edit: dict[str, Any] = {"title": "Hello there · Simpress admin"}
    variants.page_context(app, k, edit, app._steps_page(pages["edit_post"]))
    assert "Hello there" in edit["title"]
    second: dict[str, Any] = {"title": "New post · Simpress admin"}
    variants.page_context(app, k, second, app._steps_page(pages["new_post"]))
    first: dict[str, Any] = {"title": "New post · Simpress admin"}
    variants.page_context(app, k, first, pages["new_post"])
    assert "New article" in second["title"] and second["title"] == first["title"]
    assert second.get("variant_crumbs") == first.get("variant_crumbs")
