"""Simstay's rewards under attack: each case an RL policy would try, with the verdict the
effect model must give (success, progress, clean and the collateral check's name)."""
from __future__ import annotations

import pytest
from sitedriver import Site

import simweb


@pytest.fixture(scope="module")
def env():
    return simweb.make("booking", seed=0, end_on_success=False)


def run(env, task, seed, plan=None):
    site = Site(env)
    site.obs, site.info = env.reset(seed=seed, options={"task": task})
    for a in (env.oracle_plan(final=False) if plan is None else plan):
        site.ok(a)
    return site


def verdict(env):
    return env._verdict()


def collateral(v):
    return [c["name"] for c in v["checks"] if c["name"].startswith("collateral")]


def test_the_oracle_books_cleanly(env):
    run(env, "booking/book_room", 0)
    v = verdict(env)
    assert v["success"] and v["clean"] and v["progress"] == 1.0


def test_booking_for_the_wrong_guest_earns_nothing_for_the_booking(env):
    plan = [a if not a.startswith("fill('guest-name'") else "fill('guest-name', 'lol')" for a in
            run(env, "booking/book_room", 1).env.oracle_plan(final=False)]
    run(env, "booking/book_room", 1, plan)
    v = verdict(env)
    assert not v["success"] and v["progress"] == 0.0
    assert any(c["name"].startswith("collateral: runtime.entities.bookings.") for c in v["checks"])


def test_booking_twice_is_damage(env):
    seed = next(sd for sd in range(40) if _rooms_left(env, sd) >= 2)
    site = run(env, "booking/book_room", seed)
    for a in env.oracle_plan(final=False):
        site.ok(a)
    v = verdict(env)
    assert v["success"] and not v["clean"]
    assert any(n.startswith("collateral: runtime.entities.bookings.") for n in collateral(v))


def _rooms_left(env, seed):
    from simweb.apps.booking.tasks import left
    env.reset(seed=seed, options={"task": "booking/book_room"})
    p = env.task.params
    return left(env.app.world.room_type(p["room_type_id"]), p["checkin"], p["nights"])


def test_cancelling_another_booking_on_the_way_is_damage(env):
    for seed in range(40):
        env.reset(seed=seed, options={"task": "booking/cancel_free"})
        p = env.task.params
        others = [b for b in env.app.world.bookings_of(p["user_id"]) if b["id"] != p["booking_id"]
                  and b["status"] == "confirmed" and b["checkin_day"] > 30]
        if others:
            break
    assert others, "no task user with a second upcoming booking in 40 seeds"
    site = run(env, "booking/cancel_free", seed)
    other = others[0]
    site.goto(f"/account/bookings/{other['id']}").click("cancel-booking")
    v = verdict(env)
    assert v["success"] and not v["clean"]
    assert f"collateral: runtime.entities.bookings.{other['id']}.status" in collateral(v)


def test_moving_the_nights_instead_of_the_dates_is_not_paid(env):
    from simweb.apps.booking.tasks import booking_list_plan, iso
    for seed in range(40):
        site = run(env, "booking/change_dates", seed, plan=[])
        p = env.task.params
        for a in booking_list_plan(env.app.world.booking(p["booking_id"])):
            site.ok(a)
        site.fill("modify-checkin", iso(p["checkin"])).fill("modify-checkout", iso(p["checkin"] + p["nights"] + 1))
        site.click("modify-submit")
        if site.error() is None:
            break
    v = verdict(env)
    assert not v["success"]
    assert f"collateral: runtime.entities.bookings.{p['booking_id']}.nights" in collateral(v)


@pytest.mark.parametrize("task", ["booking/cancel_if_free", "booking/reserve_if_available", "booking/gold_code"])
def test_a_refusal_without_looking_is_not_paid_and_a_feasible_one_must_be_done(env, task):
    seen = {True: 0, False: 0}
    for seed in range(12):
        env.reset(seed=seed, options={"task": task})
        feasible = env.task.params["feasible"]
        seen[feasible] += 1
        _, _, _, _, info = env.step("report_infeasible('I cannot do that.')")
        assert not info["verdict"]["success"], (task, seed)
    assert seen[True] and seen[False]


def test_a_refusal_after_looking_is_paid(env):
    for seed in range(20):
        env.reset(seed=seed, options={"task": "booking/cancel_if_free"})
        if not env.task.params["feasible"]:
            break
    site = Site(env)
    for a in env.oracle_plan(final=False):
        site.ok(a)
    v = verdict(env)
    assert v["success"] and v["clean"]


def test_an_abandoned_hold_is_damage_on_an_information_task(env):
    site = run(env, "booking/stay_price", 0, plan=[])
    p = env.task.params
    from simweb.apps.booking.tasks import search_url
    site.goto(search_url(p)).click(f"hotel-{p['property_id']}").click(f"reserve-{p['room_type_id']}")
    site.ok(f"send_msg_to_user('${p['subtotal'] / 100:,.2f}')")
    v = verdict(env)
    assert v["success"] and not v["clean"]
    assert any(n.startswith(f"collateral: runtime.holds.{p['user_id']}") for n in collateral(v))
