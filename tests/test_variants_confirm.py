"""The confirmation step of site variants (simweb.runtime.variant_confirm, docs/variants.md):
on a variant that takes it, a form the app declares confirmable changes nothing until its
review-and-confirm page's Confirm; Cancel is clean; Confirm applies exactly once; the page
is rendered from the state (snapshot, fork, restore, replay, served mode); every template's
oracle plan passes it (one engine rewrite) and reaches a clean success; variant 0 and the
variants without the step are today's site."""
from __future__ import annotations

from typing import Any

import pytest
from conftest import APPS

import simweb
from simweb.core.state import StateError, deep_copy
from simweb.episodes.replay import check_history
from simweb.runtime import variant_confirm
from simweb.runtime.variants import FILTER_DISCLOSED, VariantError, catalogue

YES = variant_confirm.CONFIRM_ACTION
NO = f"click('{variant_confirm.CANCEL_BID}')"


def confirming(app: str, style: str | None = None) -> int:
    """The first variant id of ``app`` with a confirmation page (of ``style``; any but the
    inline panel, tests/test_variants_steps.py, when None) and today's site policies (so a
    template draws today's instance there)."""
    cat = catalogue(app)
    return next(k for k in range(1, cat.count)
                if cat.values(k)["confirm_step"] != "none" and style in (None, cat.values(k)["confirm_step"])
                and (style is not None or cat.values(k)["confirm_step"] != variant_confirm.INLINE)
                and cat.values(k).get("form_steps", "one-step") == "one-step"   # (a plan with no Continue)
                and cat.values(k)["sign_in"] == "signed-in"   # (a plan with no sign-in)
                and cat.values(k)["menu"] == "bar"   # (a plan with no menu to open)
                and cat.values(k)["filters"] not in FILTER_DISCLOSED   # (nor filters to open)
                and cat.policies(k) == cat.policy_defaults)


def without(app: str) -> int:
    cat = catalogue(app)
    return next(k for k in range(1, cat.count) if cat.values(k)["confirm_step"] == "none"
                and cat.values(k).get("form_steps", "one-step") == "one-step" and cat.values(k)["sign_in"] == "signed-in"
                and cat.values(k)["menu"] == "bar" and cat.values(k)["filters"] not in FILTER_DISCLOSED
                and cat.policies(k) == cat.policy_defaults)


def at_confirmation(app: str, k: int) -> tuple[Any, list[str], int]:
    """An env of variant ``k`` stopped on the confirmation page of the first template whose
    oracle meets one: (env, the plan, the index of the plan's Confirm click)."""
    env = simweb.make(app, variant=k, max_steps=100_000)
    for tid in env.unwrapped.app.tasks:
        env.reset(seed=0, options={"task": tid})
        plan = env.unwrapped.oracle_plan()
        if YES in plan:
            i = plan.index(YES)
            for a in plan[:i]:
                env.step(a)
            return env, plan, i
    raise AssertionError(f"{app} variant {k}: no oracle meets a confirmation page")


def _state(env: Any) -> dict:
    return env.unwrapped.snapshot()


@pytest.mark.parametrize("app", APPS)
def test_the_page_holds_the_form_and_confirm_applies_it(app: str) -> None:
    k = confirming(app)
    env, plan, i = at_confirmation(app, k)
    s = _state(env)
    tab = s["browser"]["tabs"][s["browser"]["active"]]
    assert tab["page"] == variant_confirm.PAGE and variant_confirm.is_page(tab["url"])
    assert s["browser"]["confirm"]["token"] == int(tab["url"].rsplit("/", 1)[1])
    # nothing changed before Confirm: the runtime is the state's before the form was sent
    before = simweb.make(app, variant=k, max_steps=100_000)
    before.reset(seed=0, options={"task": s["meta"]["task"]["id"]})
    for a in plan[:i - 1]:
        before.step(a)
    assert _state(before)["runtime"] == s["runtime"]
    obs, *_ = env.step("noop()")
    heading = variant_confirm.STYLES[catalogue(app).values(k)["confirm_step"]][0]
    assert f"[{variant_confirm.CONFIRM_BID}] button" in obs["axtree"] and heading in obs["axtree"]
    assert env.unwrapped.verdict()["success"] is False
    obs, *_ = env.step(YES)
    after = _state(env)
    assert after["runtime"] != s["runtime"] and "confirm" not in after["browser"]
    check_history(env.unwrapped.app, after)   # the recorded requests replay to the same state


@pytest.mark.parametrize("app", APPS)
def test_variant_0_and_variants_without_the_step_are_todays_site(app: str) -> None:
    """The same template's plan has no Confirm click, its form applies at once, and the
    confirmation page's address is a 404 (a POST to it a 405) on variant 0 and on a
    variant without the step."""
    env, plan, i = at_confirmation(app, confirming(app))
    tid = env.unwrapped.task.id
    for k in (0, without(app)):
        other = simweb.make(app, variant=k, max_steps=100_000)
        other.reset(seed=0, options={"task": tid})
        today = other.unwrapped.oracle_plan()
        assert today == [a for a in plan if a != YES], (app, k)
        for a in today:
            other.step(a)
        s = _state(other)
        assert "confirm" not in s["browser"]
        assert other.unwrapped.verdict()["success"]
        app_ = other.unwrapped.app
        st = _state(other)   # (the episode is over: the site is asked directly)
        assert app_.navigate(st, "/confirm-request/1").status == 404
        assert app_.submit(st, "/confirm-request/1", {}).status == 405


def test_cancel_is_clean_and_leaves_nothing_to_confirm() -> None:
    for app in ("shopping", "issues"):
        env, plan, i = at_confirmation(app, confirming(app))
        held = _state(env)
        waiting = env.unwrapped.verdict()
        obs, *_ = env.step(NO)
        s = _state(env)
        assert s["runtime"] == held["runtime"] and "confirm" not in s["browser"]
        assert s["browser"]["tabs"][0]["url"] == held["browser"]["confirm"]["back"]
        v = env.unwrapped.verdict()
        assert not v["success"] and v == waiting   # no change the verdict sees
        # back on the confirmation page: nothing is waiting, no Confirm button
        obs, *_ = env.step("go_back()")
        assert "confirm-step-none" in obs["axtree"] and variant_confirm.CONFIRM_BID not in obs["axtree"]
        # and the task can still be done from the form's page (the oracle's last steps)
        obs, *_ = env.step("go_back()")
        for a in plan[i - 1:]:
            env.step(a)
        v = env.unwrapped.verdict()
        assert v["success"] and v["clean"], (app, v)


@pytest.mark.parametrize("app", ["shopping", "booking", "forum"])
def test_confirm_applies_exactly_once(app: str) -> None:
    """A double submit (the same POST twice) and a resubmit after going back apply the
    pending form once: the second finds nothing pending, changes no runtime and says so."""
    env, plan, i = at_confirmation(app, confirming(app))
    u = env.unwrapped
    held = _state(env)
    url = held["browser"]["tabs"][0]["url"]
    once = deep_copy(held)
    r1 = u.app.submit(once, url, {})
    assert r1.status == 303 and r1.error is None
    applied = deep_copy(once["runtime"])
    assert applied != held["runtime"]
    r2 = u.app.submit(once, url, {}, referrer=url)     # the same POST again (a double click)
    assert r2.status == 409 and once["runtime"] == applied
    assert "Nothing is waiting" in (r2.error or "")
    # back + resubmit in the browser: the page shows no Confirm any more
    env.step(YES)
    obs, *_ = env.step("go_back()")
    assert variant_confirm.CONFIRM_BID not in obs["axtree"]
    assert _state(env)["runtime"] == applied
    # the token of another submission, or another page, confirms nothing
    stale = deep_copy(held)
    assert u.app.submit(stale, variant_confirm.page_url(held["browser"]["confirm"]["token"] + 1), {},
                        referrer=variant_confirm.page_url(held["browser"]["confirm"]["token"] + 1)).status == 409
    assert stale["runtime"] == held["runtime"] and "confirm" in stale["browser"]
    other_page = deep_copy(held)
    other_page["browser"]["tabs"][0].update(url="/", page=u.app.spec.start_page())
    assert u.app.submit(other_page, url, {}).status == 409 and other_page["runtime"] == held["runtime"]


def test_another_user_cannot_confirm_a_held_form() -> None:
    env, plan, i = at_confirmation("shopping", confirming("shopping"))
    u = env.unwrapped
    s = _state(env)
    user = s["browser"]["user"]
    s["browser"]["user"] = user + 1
    url = s["browser"]["tabs"][0]["url"]
    assert u.app.submit(s, url, {}).status == 409 and s["runtime"] == _state(env)["runtime"]
    assert "confirm-step-none" in u.app.render(s)


def test_snapshot_fork_restore_mid_confirmation() -> None:
    app = "cms"
    k = confirming(app)
    env, plan, i = at_confirmation(app, k)
    u = env.unwrapped
    snap = u.snapshot()
    u.app.check_state(snap)
    fork = u.fork()
    fork.step(YES)
    assert fork.verdict()["success"]
    assert u.verdict()["success"] is False and "confirm" in u.snapshot()["browser"]   # the parent still waits
    other = simweb.make(app, max_steps=100_000)   # an env of today's site: the state decides
    other.reset(seed=0, options={"task": u.task.id})
    other.unwrapped.restore(deep_copy(snap))
    obs, *_ = other.step("noop()")
    assert variant_confirm.CONFIRM_BID in obs["axtree"]
    assert u.app.render(snap) == other.unwrapped.app.render(snap)
    for a in plan[i:]:
        other.step(a)
    v = other.unwrapped.verdict()
    assert v["success"] and v["clean"]
    assert other.unwrapped.snapshot()["runtime"] == fork.snapshot()["runtime"]


def test_a_pending_form_on_a_site_without_the_step_is_refused() -> None:
    env, plan, i = at_confirmation("issues", confirming("issues"))
    s = _state(env)
    s["meta"]["variant"] = without("issues")
    with pytest.raises(StateError, match="browser.confirm"):
        env.unwrapped.app.check_state(s)


@pytest.mark.parametrize("app", APPS)
def test_every_oracle_solves_a_confirming_variant(app: str) -> None:
    """Every template's oracle (and every sub-task's) reaches a clean success on a variant
    of each style, within the budget; the plan is the template's with a Confirm click after
    each held form and nothing else."""
    cat = catalogue(app)
    clicks = 0
    for style in variant_confirm.STYLES:
        k = confirming(app, style)
        env = simweb.make(app, variant=k)
        tasks = list(env.unwrapped.app.tasks)
        if style == "review":
            tasks += [s.id for t in tasks for s in env.unwrapped.app.tasks.sub_tasks(t)]
        for n, tid in enumerate(tasks):
            env.reset(seed=k + n, options={"task": tid})
            plan = env.unwrapped.oracle_plan()
            today = env.unwrapped.app.tasks[tid].oracle(env.unwrapped.app, env.unwrapped.task.params)
            assert [a for a in plan if a != YES][:len(today)] == list(today)
            clicks += plan.count(YES)
            assert len(plan) * 2 <= env.unwrapped.max_steps, (app, tid)
            info: dict = {}
            for a in plan:
                _, _, _, _, info = env.step(a)
            v = info["verdict"]
            assert v["success"] and v["clean"], (app, k, tid, v)
    assert clicks > 0 and cat.values(confirming(app))["confirm_step"] in variant_confirm.STYLES


def test_served_mode_shows_the_page_and_confirms_once() -> None:
    from simweb.serving.server import create_app

    env, plan, i = at_confirmation("shopping", confirming("shopping"))
    held = _state(env)
    form_page = held["browser"]["confirm"]["back"]
    action = held["browser"]["confirm"]["url"]
    k = held["meta"]["variant"]
    client = create_app("shopping", variant=k, control_token="t" * 32).test_client()
    auth = {"Authorization": "Bearer " + "t" * 32}
    before = simweb.make("shopping", variant=k, max_steps=100_000)
    before.reset(seed=0, options={"task": held["meta"]["task"]["id"]})
    for a in plan[:i - 1]:   # the state before the form is sent
        before.step(a)
    before_state = before.unwrapped.snapshot()
    r = client.post("/_simweb/state", json=before_state, headers=auth)
    assert r.status_code == 200, r.get_data(as_text=True)
    assert client.get(form_page).status_code == 200
    r = client.post(action, data={}, headers={"Referer": f"http://localhost{form_page}"})
    assert r.status_code == 303 and variant_confirm.is_page(r.headers["Location"])
    page = r.headers["Location"]
    html = client.get(page).get_data(as_text=True)
    assert f'bid="{variant_confirm.CONFIRM_BID}"' in html
    runtime = client.get("/_simweb/state", headers=auth).get_json()["runtime"]
    assert runtime == before_state["runtime"]
    r = client.post(page, data={}, headers={"Referer": f"http://localhost{page}"})
    assert r.status_code == 303 and not variant_confirm.is_page(r.headers["Location"])
    done = client.get("/_simweb/state", headers=auth).get_json()["runtime"]
    assert done != runtime
    r = client.post(page, data={}, headers={"Referer": f"http://localhost{page}"})   # resubmitted
    assert client.get("/_simweb/state", headers=auth).get_json()["runtime"] == done


def test_the_confirm_section_is_checked() -> None:
    from simweb.runtime.variant_confirm import ConfirmError, check_events, parse

    with pytest.raises(ConfirmError):
        parse("x", {"place_order": {"fields": {"a": "A"}}})
    with pytest.raises(ConfirmError):
        parse("x", {"place_order": {"summary": "s", "extra": 1}})
    app = simweb.make("shopping").unwrapped.app
    with pytest.raises(ConfirmError, match="does not have"):
        check_events(app, parse("shopping", {"no_such_event": {"summary": "s"}}))
    with pytest.raises(ConfirmError, match="secret"):
        check_events(app, parse("shopping", {"set_payment": {"summary": "s"}}))
    assert issubclass(ConfirmError, ValueError) and not issubclass(ConfirmError, VariantError)
    with pytest.raises(ConfirmError, match=r"confirm\.cancel_order\.summary"):   # a name the event does not have
        check_events(app, parse("shopping", {"cancel_order": {"summary": "Cancel {order.total}"}}))
    with pytest.raises(ConfirmError, match=r"confirm\.cancel_order\.summary"):   # not an expression
        check_events(app, parse("shopping", {"cancel_order": {"summary": "Cancel {oid +}"}}))
    decl = parse("x", {"ban_user": {"summary": "Ban {params.username} from c/{name}", "fields": {"days": "Days"}}})
    assert variant_confirm.shown_fields(decl["ban_user"], {"days": "3"}) == [("Days", "3")]


def test_the_summary_names_the_thing_as_the_site_shows_it() -> None:
    """A summary reads the event's ``let`` names: cms's publication names the post by its
    title (escaped: a title is user text), in the confirmation page and the inline panel;
    where what it names is gone since the form was sent, the page keeps the words."""
    for style in ("review", variant_confirm.INLINE):
        k = confirming("cms", style)
        env = simweb.make("cms", variant=k, max_steps=100_000)
        for tid in env.unwrapped.app.tasks:
            env.reset(seed=0, options={"task": tid})
            plan = env.unwrapped.oracle_plan()
            if YES not in plan:
                continue
            i = plan.index(YES)
            for a in plan[:i]:
                obs, *_ = env.step(a)
            s = _state(env)
            if "/publish" not in s["browser"]["confirm"]["url"]:
                continue
            pid = int(s["browser"]["confirm"]["url"].split("/")[3])
            title = env.unwrapped.app.world.post(pid)["title"]
            assert f"Publish “{title}” on the public site" in obs["axtree"], (style, title)
            break
        else:
            raise AssertionError(f"cms variant {k}: no oracle publishes through a confirmation")
    app = env.unwrapped.app
    decl = variant_confirm.Confirmable("publish", "Publish “{p.title}” now")
    event = app.spec.events["publish"]
    pending = {"url": "/admin/posts/1/publish", "form": {}, "back": "/admin/posts/1"}
    shown = variant_confirm.summary(app, s, decl, event, {"pid": 1}, pending)
    assert shown.startswith("Publish “") and shown.endswith("” now") and len(shown) > len("Publish “” now")
    evil = variant_confirm.Confirmable("publish", "Publish “{p.title.upper()}”")   # no such post: the words stay
    assert variant_confirm.summary(app, s, evil, event, {"pid": 10**9}, pending) == "Publish “”"


def test_every_held_out_style_is_test_only() -> None:
    for app in APPS:
        cat = catalogue(app)
        assert "confirm_step" in cat.values(0) and cat.values(0)["confirm_step"] == "none"
        for row in cat.listing("train", 200):
            assert row["factors"]["confirm_step"] != "are-you-sure"


def test_the_red_team_finds_no_way_around_the_page(monkeypatch: pytest.MonkeyPatch) -> None:
    """The confirm-step family: the plan without its Confirms, with Cancel for them, the
    held Confirm posted from another page and a Confirm posted to another token's address
    pay nothing; a site that confirmed any
    token (a broken exactly-once rule) is caught."""
    from simweb.tools.redteam import attack_instance

    env, plan, i = at_confirmation("shopping", confirming("shopping"))
    u = env.unwrapped
    tid = u.task.id
    attacks = [a for a in attack_instance(u, tid, 0, events=False) if a.family == "confirm-step"]
    assert len(attacks) == 4 and not any(a.paid for a in attacks)
    assert any("held Confirm posted from" in a.name for a in attacks)   # its own token, from another page

    def any_token(state: dict, token: int) -> dict | None:
        return state["browser"].pop("confirm", None)

    monkeypatch.setattr(variant_confirm, "take", any_token)
    attacks = [a for a in attack_instance(u, tid, 0, events=False) if a.family == "confirm-step"]
    assert any(a.paid and "without its page" in a.name for a in attacks)
