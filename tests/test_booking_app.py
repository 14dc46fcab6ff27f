"""Simstay as a guest (or an agent) experiences it, in process.

Tests drive the site through BrowserGym actions on one shared env (module fixture, reset
per test) and check both what changed in the state and what the page shows: search with
date validation, date-dependent prices, holds that expire on the simulated clock, the
three booking steps with their card and code checks, confirmation codes, changes and
cancellations under each property's policy, loyalty points and the error pages. Test
data is picked from the world by property, never by hard-coded id.
"""
from __future__ import annotations

import re
from urllib.parse import urlencode

import pytest
from sitedriver import Site

import simweb
from simweb.apps.booking.tasks import (
    CARD,
    CVV,
    EXPIRY,
    fee_now,
    free_until,
    iso,
    left,
    price,
)
from simweb.apps.booking.world import CODE_ALPHABET, is_weekend_night
from simweb.core.worlddb import day_to_date


@pytest.fixture(scope="module")
def env():
    return simweb.make("booking", seed=0, end_on_success=False)


@pytest.fixture(scope="module")
def world(env):
    return env.app.world


@pytest.fixture
def s(env):
    site = Site(env)
    site.obs, site.info = env.reset(seed=0, options={"task": None})
    assert site.path == "/" and site.state["browser"]["user"] is None
    return site


# ----------------------------------------------------------------------------- world picks

def a_stay(world, need=lambda p, rt, d, n: True, nights=3, guests=1):
    """(property, room type, checkin) bookable in the world for ``nights``."""
    for pid in world.property_ids():
        p = world.property(pid)
        for rt in world.room_types_of(pid):
            if rt["min_nights"] > nights or rt["capacity"] < guests:
                continue
            for d in range(10, 300, 7):
                if left(rt, d, nights) > 0 and need(p, rt, d, nights):
                    return p, rt, d
    raise AssertionError("no stay")


def a_booking(world, need):
    for b in world.bookings_arriving("confirmed", 1, 330, limit=5000):
        p = world.property(b["property_id"])
        if need(b, p):
            return b, p
    raise AssertionError("no booking")


def hotel_url(p, d, n, guests=1):
    return f"/hotels/{p['id']}?" + urlencode({"checkin": iso(d), "checkout": iso(d + n), "guests": guests})


def hold(s, p, rt, d, n, guests=1, uid=1):
    s.sign_in(uid, hotel_url(p, d, n, guests))
    s.click(f"reserve-{rt['id']}")
    assert s.path == "/book/guest", (s.path, s.error())


def pay(s, card=CARD, expiry=EXPIRY, code="", points=None, invalid=None):
    """Fill the payment form and send it. With ``invalid`` (the field the browser's
    constraint validation stops at), the browser must not send it, as Chromium does not;
    it then goes to the server as from a client that does not validate."""
    s.fill("card-name", "Ada Lovelace").fill("card-number", card).fill("card-expiry", expiry).fill("card-cvv", CVV)
    if code:
        s.fill("pay-code", code)
    if points is not None:
        s.fill("pay-points", str(points))
    if invalid is not None:
        return s.blocked("pay-submit", invalid).submit_unvalidated("pay-submit")
    return s.click("pay-submit")


def new_bookings(s):
    top = s.env.app.world.max_id("bookings")
    return [r for k, r in s.rt["entities"].get("bookings", {}).items() if int(k) > top and r]


def balance(s, uid):
    from simweb.apps.booking import functions as F
    from simweb.core.functions import Ctx, using
    with using(Ctx(s.env.app.world, s.state, s.env.app)) as ctx:
        return F.points_balance(ctx, uid)


# ----------------------------------------------------------------------------- search and dates

@pytest.mark.parametrize("checkin,checkout,message", [
    ("2025-12-30", "2026-01-02", "Check-in cannot be in the past."),
    ("2026-03-10", "2026-03-10", "Check-out must be after check-in."),
    ("2026-03-10", "2026-03-08", "Check-out must be after check-in."),
    ("2026-12-30", "2027-01-03", "We take bookings for stays until Jan 1, 2027."),
    ("2026-02-30", "2026-03-02", "Enter valid check-in and check-out dates."),
    ("2026-03-01", "2026-04-15", "Stays are limited to 30 nights."),
])
def test_search_rejects_impossible_dates_with_the_sites_message(s, world, checkin, checkout, message):
    city = world.cities()[0]
    s.goto("/search?" + urlencode({"city": city, "checkin": checkin, "checkout": checkout, "guests": 2}))
    assert s.status == 200
    assert s.text_of("search-error") == message
    assert not any(b.startswith("price-") for b in s.bids())


def test_search_lists_the_citys_hotels_cheapest_first_with_the_stay_total(s, world):
    p, _, d = a_stay(world)
    s.goto("/search?" + urlencode({"city": p["city"], "checkin": iso(d), "checkout": iso(d + 3), "guests": 1}))
    ids = [int(b.split("-")[1]) for b in s.bids() if re.fullmatch(r"hotel-\d+", b)]
    assert set(ids) == {q["id"] for q in world.properties_in(p["city"])}
    prices = [int(re.sub(r"[^\d]", "", s.text_of(f"price-{i}").split(" for ")[0])) for i in ids if s.has(f"price-{i}")]
    assert prices == sorted(prices) and prices
    want = min(price(s.env.app, r, d, 3) for r in world.room_types_of(p["id"]) if left(r, d, 3) > 0
               and r["min_nights"] <= 3)
    assert f"${want / 100:,.2f}" in s.text_of(f"price-{p['id']}")


def test_prices_depend_on_the_night(world):
    """Friday and Saturday nights use the weekend rate; the month's factor applies to both."""
    from simweb.apps.booking.world import night_cents
    rt = next(r for r in (world.room_type(i) for i in range(1, 200)) if r["weekend_cents"] > r["base_cents"])
    p = world.property(rt["property_id"])
    fri = next(d for d in range(70, 80) if is_weekend_night(d))
    wed = next(d for d in range(70, 80) if not is_weekend_night(d))
    assert night_cents(rt, p["season"], fri) > night_cents(rt, p["season"], wed)
    assert night_cents(rt, p["season"], fri) % 100 == 0


def test_the_hotel_page_says_why_a_room_cannot_be_booked(s, world):
    p, rt, d = a_stay(world, lambda p, rt, d, n: rt["min_nights"] >= 2 and rt["capacity"] < 6, nights=3)
    s.goto(hotel_url(p, d, 1, guests=1))
    assert "requires a minimum stay of" in s.text_of(f"unavailable-{rt['id']}")
    assert not s.has(f"reserve-{rt['id']}")
    s.goto(hotel_url(p, d, 3, guests=rt["capacity"] + 1))
    assert f"sleeps at most {rt['capacity']}" in s.text_of(f"unavailable-{rt['id']}")


def test_a_sold_out_room_shows_sold_out_and_cannot_be_held(s, world):
    for rt in (world.room_type(i) for i in range(1, world.max_id("room_types") + 1)):
        d = next((d for d in range(5, 300) if rt["avail"][d] == "0" and rt["min_nights"] == 1), None)
        if d is not None:
            break
    assert d is not None
    p = world.property(rt["property_id"])
    s.sign_in(1, hotel_url(p, d, 1))
    assert "Sold out" in s.text_of(f"unavailable-{rt['id']}")
    s.post("/hold", {"room_type_id": rt["id"], "checkin": iso(d), "checkout": iso(d + 1), "guests": 1})
    s.goto("/book/guest")
    assert s.status == 409 and s.rt["holds"] == {}


# ----------------------------------------------------------------------------- holds

def test_a_hold_takes_a_room_and_expires_on_the_simulated_clock(s, world):
    p, rt, d = a_stay(world, lambda p, rt, d, n: left(rt, d, n) == 1)
    hold(s, p, rt, d, 3)
    h = s.rt["holds"]["1"]
    assert 0 < h["expires"] - s.state["meta"]["clock"] <= 900
    assert s.has("hold-banner")
    # The last room is held: to anyone else it is sold out.
    s.state["browser"]["user"] = 2
    s.goto(hotel_url(p, d, 3))
    assert "Sold out" in s.text_of(f"unavailable-{rt['id']}")
    # Fifteen simulated minutes later the timer has released it.
    s.state["browser"]["user"] = 1
    s.state["meta"]["clock"] = h["expires"]
    s.goto("/book/guest")
    assert s.status == 409 and "hold has expired" in s.text_of("error-message")
    assert s.rt["holds"] == {} and s.rt["checkout"] == {}
    s.goto(hotel_url(p, d, 3))
    assert s.has(f"reserve-{rt['id']}")


def test_releasing_a_hold_cancels_its_timer(s, world):
    p, rt, d = a_stay(world)
    hold(s, p, rt, d, 3)
    assert s.rt["timers"]["pending"]
    s.click("release-hold")
    assert s.rt["holds"] == {} and s.rt["timers"]["pending"] == []


# ----------------------------------------------------------------------------- the booking form

def test_guest_details_are_validated(s, world):
    p, rt, d = a_stay(world)
    hold(s, p, rt, d, 3)
    s.fill("guest-name", "A").click("guest-submit")
    assert s.error() == "Full name must be at least 2 characters."
    s.fill("guest-name", "Grace Hopper").fill("guest-email", "grace@nowhere").click("guest-submit")
    assert s.error() == "Enter a valid email address."
    s.fill("guest-name", "Grace Hopper").fill("guest-email", "grace@example.com").click("guest-submit")
    assert s.path == "/book/payment"
    assert s.rt["checkout"]["1"]["guest"] == {"name": "Grace Hopper", "email": "grace@example.com", "requests": ""}


@pytest.mark.parametrize("card,expiry,message", [
    ("4111 1111 1111 1112", EXPIRY, "That card number is not valid. Check it and try again."),
    ("4111 1111", EXPIRY, "Card number must be 13 to 19 digits."),
    (CARD, "12/25", "That card has expired."),
    (CARD, "13/29", "Expiry date must look like MM/YY."),
])
def test_card_checks(s, world, card, expiry, message):
    p, rt, d = a_stay(world)
    hold(s, p, rt, d, 3)
    s.click("guest-submit")
    pay(s, card=card, expiry=expiry)
    assert s.path == "/book/payment" and s.error() == message
    assert "payment" not in s.rt["checkout"]["1"]


def test_discount_codes_and_points_are_checked(s, world):
    gold = next(c for c in world.codes_page(0, 1000) if c["tier"] == "gold")
    member = next(u for u in (world.user(i) for i in range(1, 200)) if u["tier"] == "member" and u["points"] < 5000)
    p, rt, d = a_stay(world)
    hold(s, p, rt, d, 3, uid=member["id"])
    s.click("guest-submit")
    pay(s, code="NOSUCHCODE")
    assert s.error() == "The code NOSUCHCODE is not valid."
    pay(s, code=gold["code"])
    assert s.error() == f"The code {gold['code']} is for Gold members only."
    # pay-points is <input type="number" min="0" step="100">: 150 is a step mismatch, so
    # the browser does not send the form (Chromium neither) and the page would still show
    # the code's error; the server's own check is what a client that does not validate meets.
    pay(s, points=150, invalid="pay-points")
    assert s.error() == "Points are used in steps of 100."
    pay(s, points=(member["points"] // 100 + 1) * 100 + 10_000)
    assert s.error().startswith("You only have")


def test_confirming_books_the_room_with_a_code_from_the_state_generator(s, world):
    p, rt, d = a_stay(world)
    rooms_before = left(rt, d, 3)
    before = balance(s, 1)
    counter = s.state["meta"]["rng"]["counter"]
    hold(s, p, rt, d, 3)
    s.fill("guest-name", "Grace <b>Hopper</b>").click("guest-submit")
    pay(s)
    total = price(s.env.app, rt, d, 3)
    assert s.text_of("review-total") == f"${total / 100:,.2f}"
    s.click("confirm-booking")
    [b] = new_bookings(s)
    assert re.fullmatch(f"[{CODE_ALPHABET}]{{8}}", b["code"])
    assert s.state["meta"]["rng"]["counter"] == counter + 1
    assert s.path == f"/account/bookings/{b['id']}" and b["code"] in s.success()
    assert (b["status"], b["checkin_day"], b["nights"], b["total_cents"]) == ("confirmed", d, 3, total)
    assert "&lt;b&gt;Hopper&lt;/b&gt;" in s.html and "<b>Hopper</b>" not in s.html
    assert s.rt["holds"] == {} and s.rt["checkout"] == {} and s.rt["timers"]["pending"] == []
    assert balance(s, 1) == before + total // 100
    s.state["browser"]["user"] = 2
    s.goto(hotel_url(p, d, 3))
    if rooms_before == 1:
        assert "Sold out" in s.text_of(f"unavailable-{rt['id']}")
    else:
        assert s.has(f"reserve-{rt['id']}")


def test_the_same_run_draws_the_same_code(env, world):
    codes = []
    for _ in range(2):
        site = Site(env)
        site.obs, site.info = env.reset(seed=4, options={"task": "booking/book_room"})
        for a in env.oracle_plan(final=False):
            site.ok(a)
        codes.append(new_bookings(site)[0]["code"])
    assert codes[0] == codes[1]


def test_points_pay_part_of_the_total(s, world):
    u = next(u for u in (world.user(i) for i in range(1, 300)) if u["points"] >= 1000)
    p, rt, d = a_stay(world, lambda p, rt, d, n: price(_App(world), rt, d, n) > 1000)
    hold(s, p, rt, d, 3, uid=u["id"])
    s.click("guest-submit")
    pay(s, points=500)
    s.click("confirm-booking")
    [b] = new_bookings(s)
    sub = price(_App(world), rt, d, 3)
    assert b["points_used"] == 500 and b["total_cents"] == sub - 500
    assert balance(s, u["id"]) == u["points"] - 500 + (sub - 500) // 100


class _App:
    def __init__(self, world):
        self.world = world


# ----------------------------------------------------------------------------- changes and cancellations

def test_free_cancellation_gives_the_room_and_the_points_back(s, world):
    b, _ = a_booking(world, lambda b, p: free_until(b, p) >= 0)
    before = balance(s, b["user_id"])
    s.sign_in(b["user_id"], f"/account/bookings/{b['id']}")
    assert "Free cancellation" in s.text_of("policy-free")
    s.click("cancel-booking")
    row = s.rt["entities"]["bookings"][str(b["id"])]
    assert (row["status"], row["cancel_fee_cents"], row["cancelled_day"]) == ("cancelled", 0, 0)
    assert s.success() == f"Booking {b['code']} has been cancelled. You have not been charged."
    assert balance(s, b["user_id"]) == before - b["points_earned"]


def test_late_cancellation_costs_the_policy_fee_and_needs_consent(s, world):
    b, p = a_booking(world, lambda b, p: fee_now(b, p) > 0)
    fee = fee_now(b, p)
    s.sign_in(b["user_id"], f"/account/bookings/{b['id']}")
    assert s.text_of("cancel-fee") == f"${fee / 100:,.2f}"
    assert not s.has("modify-submit")
    s.click("cancel-booking")
    assert s.error() == f"Cancelling now costs ${fee / 100:,.2f}. Tick the box to accept the fee."
    assert str(b["id"]) not in s.rt["entities"].get("bookings", {})
    s.check("cancel-accept-fee").click("cancel-booking")
    row = s.rt["entities"]["bookings"][str(b["id"])]
    assert row["status"] == "cancelled" and row["cancel_fee_cents"] == fee == b["total_cents"] * p["cancel_fee_pct"] // 100


def test_changes_are_refused_after_the_free_period(s, world):
    b, _ = a_booking(world, lambda b, p: fee_now(b, p) > 0)
    s.sign_in(b["user_id"], f"/account/bookings/{b['id']}")
    r = s.post(f"/account/bookings/{b['id']}/modify", {"checkin": iso(b["checkin_day"] + 1),
                                                        "checkout": iso(b["checkin_day"] + 1 + b["nights"])})
    assert r.status == 409 and r.error.startswith("Changes are no longer possible: this property allows changes")
    assert str(b["id"]) not in s.rt["entities"].get("bookings", {})


def test_moving_a_booking_reprices_it(s, world):
    def movable(b, p):
        rt = world.room_type(b["room_type_id"])
        return (free_until(b, p) >= 0 and b["checkin_day"] + 7 + b["nights"] <= 365
                and left(rt, b["checkin_day"] + 7, b["nights"]) > 0)
    b, _ = a_booking(world, movable)
    rt = world.room_type(b["room_type_id"])
    new = b["checkin_day"] + 7
    s.sign_in(b["user_id"], f"/account/bookings/{b['id']}")
    s.fill("modify-checkin", iso(new)).fill("modify-checkout", iso(new + b["nights"])).click("modify-submit")
    row = s.rt["entities"]["bookings"][str(b["id"])]
    total = price(_App(world), rt, new, b["nights"])
    assert (row["checkin_day"], row["nights"], row["total_cents"], row["points_earned"]) == (
        new, b["nights"], total, total // 100)
    shown = day_to_date(new)
    assert s.text_of("booking-checkin") == f"{shown:%b} {shown.day}, {shown.year}"
    s.fill("modify-checkin", iso(new)).fill("modify-checkout", iso(new)).click("modify-submit")
    assert s.error() == "Check-out must be after check-in."


def test_someone_elses_booking_is_not_found(s, world):
    b, _ = a_booking(world, lambda b, p: True)
    other = 1 if b["user_id"] != 1 else 2
    s.sign_in(other, f"/account/bookings/{b['id']}")
    assert s.status == 404 and s.text_of("error-message") == "We could not find that booking in your account."
    s.post(f"/account/bookings/{b['id']}/cancel", {"accept_fee": "1"})
    assert str(b["id"]) not in s.rt["entities"].get("bookings", {})


def test_account_pages_need_a_sign_in_and_next_stays_on_the_site(s, world):
    s.goto("/account/bookings")
    assert s.path == "/login?next=%2Faccount%2Fbookings" or s.path.startswith("/login?next=")
    user = world.user(3)
    s.fill("login-user", user["username"]).fill("login-password", "wrong").click("login-submit")
    assert s.error() == "Invalid username or password." and s.state["browser"]["user"] is None
    s.fill("login-user", user["username"]).fill("login-password", user["password"]).click("login-submit")
    assert s.path == "/account/bookings" and s.state["browser"]["user"] == 3
    s.click("nav-logout")
    r = s.post("/login", {"login": user["username"], "password": user["password"], "next": "//evil.example/"},
               referrer="/login")
    assert r.location == "/"


def test_unknown_pages_and_properties_are_404(s):
    s.goto("/hotels/999999")
    assert s.status == 404 and s.text_of("error-message") == "We could not find that property."
    s.goto("/no/such/page")
    assert s.status == 404


def test_saving_a_hotel_twice_is_refused(s, world):
    p = world.property(5)
    s.sign_in(1, f"/hotels/{p['id']}")
    s.click("save-hotel")
    assert s.rt["favorites"]["1"] == [p["id"]]
    s.post("/favorites/add", {"property_id": p["id"]})
    assert s.rt["favorites"]["1"] == [p["id"]]
    s.goto("/account/favorites")
    assert s.has(f"fav-{p['id']}")
    s.click(f"fav-remove-{p['id']}")
    assert s.rt["favorites"]["1"] == []


def test_deals_page_lists_every_code_with_its_conditions(s, world):
    seen = []
    s.goto("/deals")
    while True:
        seen += [b for b in s.bids() if re.fullmatch(r"deal-\d+", b)]
        if not s.has("page-next"):
            break
        s.click("page-next")
    assert len(seen) == world.counts["discount_codes"] == len(set(seen))
