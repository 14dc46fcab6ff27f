"""Policies of site variants (simweb.runtime.variants, docs/variants.md "Policies"): named
values a factor option sets (option 0: today's), read by the spec, the app's functions and
the task templates through one accessor, stated on the site's pages. Each policy changes
what the site does on a variant that takes it and nothing on variant 0; every template's
oracle reaches a clean success under every value; a goal whose outcome a policy changes
states it; a goal that states none has the same success condition under every value; and
the red team pays nothing there. Variants are asked of the catalogue, never hard-coded."""
from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

import pytest
from sitedriver import Site

import simweb
from simweb.apps.booking.tasks import iso, left
from simweb.runtime.variants import Catalogue, VariantError, _parse_factor, catalogue, policy, shown_url
from simweb.tools.redteam import redteam

#: The apps that declare policies, and each policy's values (option 0's first).
POLICIES: dict[str, dict[str, tuple[Any, ...]]] = {"booking": {"min_stay_nights": (1, 2, 3), "free_cancel_days": (None, 3, 10)},
            "cms": {"comment_moderation": (True, False)}, "forum": {"post_approval": (False, True)},
            "shopping": {"guest_cart": (False, True), "guest_checkout": (False, True)}}


def with_policies(app: str, **want: Any) -> int:
    """The first variant id >= 1 whose policies have the values ``want`` (the others any)
    and that has no confirmation step, one-step forms and its messages where today's are
    (these tests post forms and read their effect and message at once; the other flows are
    tests/test_variants_confirm.py's, test_variants_steps.py's and test_variants_fields.py's)."""
    cat = catalogue(app)
    return next(k for k in range(1, cat.count) if all(cat.policies(k)[n] == v for n, v in want.items())
                and not cat.site(k).confirm and not cat.site(k).steps and "field_errors" not in cat.site(k).flow
                and not cat.site(k).login)   # tasks start signed in (tests/test_variants_login.py)


def go(site: Site, url: str) -> Site:
    """Open today's ``url`` in the form the site's variant shows it (its URL scheme)."""
    return site.goto(shown_url(site.env.app, site.state, url))


def shows(site: Site, bid: str) -> bool:
    return f'bid="{bid}"' in site.html


def run_oracle(env: Any, task: str, seed: int, params: dict | None = None) -> dict:
    options: dict[str, Any] = {"task": task}
    if params is not None:
        options["params"] = params
    env.reset(seed=seed, options=options)
    info: dict = {}
    for a in env.oracle_plan():
        _, _, _, _, info = env.step(a)
    return info["verdict"]


# ----------------------------------------------------------------------------- the engine

@pytest.mark.parametrize("app", sorted(POLICIES))
def test_the_catalogue_declares_each_policy_with_todays_value_first(app: str) -> None:
    cat = catalogue(app)
    assert cat.policy_defaults == {n: vals[0] for n, vals in POLICIES[app].items()}
    assert cat.policies(0) == cat.policy_defaults
    for name, values in POLICIES[app].items():
        seen = {cat.policies(k)[name] for k in range(50)}
        assert seen == set(values), (name, seen)          # demo --variants 0-49 meets every value
        for v in values:
            k = with_policies(app, **{name: v})
            assert policy(app, k, name) == v
            env = simweb.make(app, variant=k)
            assert env.app.policy(env.state, name) == v    # the spec's and the functions' accessor


def test_apps_without_policies_and_unknown_names() -> None:
    assert catalogue("issues").policy_defaults == {}
    with pytest.raises(VariantError, match="no policy 'min_stay'"):
        policy("booking", 1, "min_stay")


def test_a_malformed_policy_declaration_is_one_error() -> None:
    with pytest.raises(VariantError, match="every option sets the same policies"):
        _parse_factor("x", "f", {"options": [{"label": "a", "policies": {"n": 1}}, {"label": "b"}]})
    with pytest.raises(VariantError, match="policies maps names"):
        _parse_factor("x", "f", {"options": [{"label": "a", "policies": {"n": [1]}}, {"label": "b", "policies": {"n": 2}}]})
    twice = _parse_factor("x", "f", {"options": [{"label": "a", "policies": {"n": 1}}, {"label": "b", "policies": {"n": 2}}]})
    with pytest.raises(VariantError, match="set by two factors"):
        Catalogue("x", [twice, twice])


# ----------------------------------------------------------------------------- booking: minimum stay

@pytest.fixture(scope="module")
def world() -> Any:
    return simweb.make("booking").app.world


def one_night(world: Any) -> tuple[dict, dict, int]:
    """A property, a room type with no minimum of its own and a day it has a room for one night and for three."""
    for pid in world.property_ids():
        p = world.property(pid)
        for rt in world.room_types_of(pid):
            if rt["min_nights"] == 1:
                for d in range(10, 300, 7):
                    if left(rt, d, 3) > 0:
                        return p, rt, d
    raise AssertionError("no stay")


def hotel_url(p: dict, d: int, n: int) -> str:
    return f"/hotels/{p['id']}?" + urlencode({"checkin": iso(d), "checkout": iso(d + n), "guests": 1})


def test_the_minimum_stay_refuses_shorter_stays_only_on_a_variant_that_sets_it(world: Any) -> None:
    p, rt, d = one_night(world)
    today = Site(simweb.make("booking", end_on_success=False))
    today.obs, today.info = today.env.reset(seed=0, options={"task": None})
    today.sign_in(1, hotel_url(p, d, 1)).click(f"reserve-{rt['id']}")
    assert today.path == "/book/guest" and today.rt["holds"]["1"]["nights"] == 1
    assert not shows(today, "site-policies")

    k = with_policies("booking", min_stay_nights=3, free_cancel_days=None)
    site = Site(simweb.make("booking", variant=k, end_on_success=False))
    site.obs, site.info = site.env.reset(seed=0, options={"task": None})
    site.env.state["browser"]["user"] = 1
    go(site, hotel_url(p, d, 1))
    assert "minimum stay on this site is 3 nights" in site.text_of("dates-error")
    assert not shows(site, f"reserve-{rt['id']}")
    assert site.text_of("policy-min-stay") == "Minimum stay: 3 nights on every booking."   # the page states it
    site.post("/hold", {"room_type_id": rt["id"], "checkin": iso(d), "checkout": iso(d + 1), "guests": 1})
    assert site.rt["holds"] == {}                                   # a crafted reservation is refused too
    go(site, "/search?" + urlencode({"city": p["city"], "checkin": iso(d), "checkout": iso(d + 2)}))
    assert "minimum stay on this site is 3 nights" in site.text_of("search-error")
    go(site, hotel_url(p, d, 3)).click(f"reserve-{rt['id']}")       # three nights: as today
    assert site.path == "/book/guest" and site.rt["holds"]["1"]["nights"] == 3


def test_a_refused_short_reservation_is_no_progress() -> None:
    k = with_policies("booking", min_stay_nights=3)
    env = simweb.make("booking", variant=k, end_on_success=False)
    _, info = env.reset(seed=1, options={"task": "booking/book_room"})
    p = info["task"]["params"]
    assert p["nights"] >= 3 and p["site_policy"]["min_stay_nights"] == 3
    v = env.app.submit(env.state, "/hold", {"room_type_id": p["room_type_id"], "checkin": iso(p["checkin"]),
                                           "checkout": iso(p["checkin"] + 1), "guests": p["guests"]})
    assert v is not None and env.state["runtime"]["holds"] == {}
    _, _, _, _, info = env.step("noop()")
    assert not info["verdict"]["success"] and info["verdict"]["progress"] == 0


# ----------------------------------------------------------------------------- booking: cancellation window

def late_under(world: Any, days: int) -> tuple[dict, dict]:
    """A confirmed booking that is free to cancel under its property's window and late under a ``days`` window."""
    for b in world.bookings_arriving("confirmed", 1, 330, limit=5000):
        p = world.property(b["property_id"])
        if p["free_cancel_days"] < b["checkin_day"] < days and b["total_cents"] * p["cancel_fee_pct"] // 100 > 0:
            return b, p
    raise AssertionError("no booking")


def test_the_cancellation_window_charges_a_fee_only_on_a_variant_that_sets_it(world: Any) -> None:
    b, p = late_under(world, 10)
    url = f"/account/bookings/{b['id']}"
    today = Site(simweb.make("booking", end_on_success=False))
    today.obs, today.info = today.env.reset(seed=0, options={"task": None})
    today.sign_in(b["user_id"], url)
    assert shows(today, "policy-free")
    today.click("cancel-booking")
    row = today.rt["entities"]["bookings"][str(b["id"])]
    assert row["status"] == "cancelled" and row["cancel_fee_cents"] == 0

    k = with_policies("booking", free_cancel_days=10)
    site = Site(simweb.make("booking", variant=k, end_on_success=False))
    site.obs, site.info = site.env.reset(seed=0, options={"task": None})
    site.env.state["browser"]["user"] = b["user_id"]
    go(site, url)
    fee = b["total_cents"] * p["cancel_fee_pct"] // 100
    assert shows(site, "policy-fee") and not shows(site, "modify-form")
    assert site.text_of("policy-cancellation").startswith("Free cancellation and changes up to 10 days before arrival")
    site.click("cancel-booking")                                    # without accepting the fee: refused
    assert "Tick the box to accept the fee" in (site.error() or "")
    assert str(b["id"]) not in site.rt["entities"].get("bookings", {})
    site.check("cancel-accept-fee").click("cancel-booking")
    row = site.rt["entities"]["bookings"][str(b["id"])]
    assert row["status"] == "cancelled" and row["cancel_fee_cents"] == fee
    go(site, f"/hotels/{p['id']}")
    assert "until 10 days before arrival" in site.text_of("hotel-policy")


# ----------------------------------------------------------------------------- cms: comment moderation

@pytest.mark.parametrize("queued", [True, False])
def test_comment_moderation_decides_whether_a_comment_waits(queued: bool) -> None:
    k = 0 if queued else with_policies("cms", comment_moderation=False)
    env = simweb.make("cms", variant=k, end_on_success=False)
    site = Site(env)
    site.obs, site.info = env.reset(seed=0, options={"task": None})
    post = next(p for p in (env.app.world.post(i) for i in range(1, 200))
                if p and p["kind"] == "post" and p["status"] == "published")
    before = post["comment_count"]
    go(site, f"/p/{post['id']}")
    assert shows(site, "comment-policy") is not queued                 # the page states an open site
    site.fill("comment-name", "Rin Okabe").fill("comment-email", "rin@example.org").fill("comment-body", "Thanks!")
    site.click("comment-submit")
    top = env.app.world.max_id("comments")
    new = [r for key, r in site.rt["entities"]["comments"].items() if int(key) > top]
    assert [r["status"] for r in new] == ["pending" if queued else "approved"]
    count = site.rt["entities"].get("posts", {}).get(str(post["id"]), post)["comment_count"]
    assert count == before + (0 if queued else 1)
    assert ("awaiting moderation" if queued else "is published") in (site.success() or "")
    assert ("Thanks!" in site.text_of("comment-list")) is not queued


# ----------------------------------------------------------------------------- tasks

def policy_variants(app: str) -> list[int]:
    """One variant for every value of every policy of ``app`` (today's values: variant 0)."""
    return [0] + [with_policies(app, **{n: v}) for n, vals in POLICIES[app].items() for v in vals[1:]]


@pytest.mark.parametrize("app", sorted(POLICIES))
def test_every_oracle_reaches_a_clean_success_under_each_policy_value(app: str) -> None:
    for k in policy_variants(app)[1:]:
        env = simweb.make(app, variant=k)
        for i, tid in enumerate(env.app.tasks):
            v = run_oracle(env, tid, k + i)
            assert v["success"] and v["clean"], (app, k, tid, v)


def test_instances_follow_the_variants_policies_and_today_is_unchanged() -> None:
    app = simweb.make("booking").app
    k = with_policies("booking", min_stay_nights=3, free_cancel_days=10)
    same = with_policies("booking", min_stay_nights=1, free_cancel_days=None)   # policies as today's
    for tid, t in app.tasks.items():
        for seed in range(4):
            base = t.instantiate(app, seed)
            assert "site_policy" not in base.params
            assert t.instantiate(app, seed, variant=same).params == base.params   # other factors: same instance
            inst = t.instantiate(app, seed, variant=k)
            p = inst.params
            if not t.policies:
                assert p == base.params, tid
                continue
            assert p["site_policy"] == {n: catalogue("booking").policies(k)[n] for n in t.policies}
            if "nights" in p:
                assert p["nights"] >= 3, (tid, p)
    cancel = app.tasks["booking/cancel_free"]
    for seed in range(6):
        p = cancel.instantiate(app, seed, variant=k).params
        b = app.world.booking(p["booking_id"])
        assert b["checkin_day"] >= 10 and b["checkin_day"] >= app.world.property(b["property_id"])["free_cancel_days"]


def test_a_goal_states_the_cancellation_window_where_the_answer_depends_on_it() -> None:
    app = simweb.make("booking").app
    for days in (3, 10):
        k = with_policies("booking", free_cancel_days=days)
        for tid in ("booking/free_cancellation_until", "booking/cancellation_fee", "booking/cancel_if_free"):
            for seed in range(3):
                assert f"free of charge up to {days} days before arrival" in app.tasks[tid].instantiate(
                    app, seed, variant=k).goal, (tid, days)
                assert "days before arrival" not in app.tasks[tid].instantiate(app, seed).goal


def test_a_goal_that_states_no_policy_needs_the_same_on_every_policy_value() -> None:
    """An instance drawn under a variant's policies whose goal does not state them is
    solved cleanly, by the same plan, on today's site too (same success condition)."""
    today = simweb.make("booking")
    for k in policy_variants("booking")[1:]:
        env = simweb.make("booking", variant=k)
        for tid, t in env.app.tasks.items():
            if not t.policies:
                continue
            inst = t.instantiate(env.app, 0, variant=k)
            bare = {n: v for n, v in inst.params.items() if n != "site_policy"}
            if t.goal(env.app, bare) != inst.goal:
                continue                                            # the goal states the policy
            for e, params in ((env, inst.params), (today, bare)):
                v = run_oracle(e, tid, 0, params)
                assert v["success"] and v["clean"], (k, tid, e.variant, v)


def test_the_red_team_pays_nothing_on_policy_variants() -> None:
    k = with_policies("booking", min_stay_nights=3, free_cancel_days=10)
    tasks = ["booking/book_room", "booking/cancel_free", "booking/cancel_if_free", "booking/change_dates"]
    bad = [a for a in redteam("booking", [0], tasks=tasks, variant=k) if a.paid or a.false_negative]
    assert bad == [], bad[:3]
    k = with_policies("cms", comment_moderation=False)
    bad = [a for a in redteam("cms", [0], tasks=["cms/approve_comment"], variant=k) if a.paid or a.false_negative]
    assert bad == [], bad[:3]


def test_the_factor_listing_names_each_options_policies() -> None:
    from click.testing import CliRunner

    from simweb.tools.cli import main

    out = CliRunner().invoke(main, ["variants", "booking", "--factors"]).output
    assert "minimum_stay: any-stay (min_stay_nights=1), two-nights (min_stay_nights=2)" in out
    assert "cancellation: per-property (free_cancel_days=none), three-days (free_cancel_days=3)" in out
    out = CliRunner().invoke(main, ["variants", "cms", "--factors"]).output
    assert "comment_moderation: queue (comment_moderation=true), open (comment_moderation=false)" in out
    out = CliRunner().invoke(main, ["variants", "forum", "--factors"]).output
    assert "post_approval: off (post_approval=false), on (post_approval=true)" in out


def test_a_webgym_export_of_a_policy_variant_gives_that_variants_goal_and_answer() -> None:
    from simweb.live.tasks import export_task

    app = simweb.make("booking").app
    k = with_policies("booking", free_cancel_days=10)
    tid = "booking/free_cancellation_until"
    task = export_task(app, tid, 0, "http://sim", 1, variant=k)
    inst = app.tasks[tid].instantiate(app, 0, variant=k)
    assert task.task_name == inst.goal and "up to 10 days before arrival" in task.task_name
    assert task.definite_answer == app.tasks[tid].oracle(app, inst.params)[-1].split("'")[1]
    assert task.extra["simweb_variant"] == k and task.website.endswith(f"variant={k}")
