"""Simstay's world generator and read API: determinism, sizes, and the invariants the site
and its tasks rely on (a year of availability per room type, consistent bookings and
policies, loyalty balances that cover every booking's points)."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from simweb.apps.booking.world import (
    CODE_ALPHABET,
    GENERATOR_VERSION,
    YEAR_DAYS,
    BookingWorld,
    n_cities_for,
    n_users_for,
)
from simweb.core.worlddb import world_file

SMALL = 60


@pytest.fixture(scope="module")
def world():
    return BookingWorld.load(0, SMALL)


@pytest.fixture(scope="module")
def bookings(world):
    return [world.booking(i) for i in range(1, world.max_id("bookings") + 1)]


def test_sizes_scale_with_the_property_count(world):
    assert world.counts["properties"] == SMALL == len(world.property_ids())
    assert world.counts["users"] == n_users_for(SMALL)
    assert world.counts["bookings"] == 8 * SMALL
    assert world.counts["discount_codes"] == 20 + SMALL // 10
    assert len(world.cities()) == n_cities_for(SMALL) == 12
    assert n_cities_for(240) == 40 and n_cities_for(2400) == 40
    assert BookingWorld.DEFAULT_SIZE >= 200


def test_same_seed_same_hash_other_seed_other_hash(world, tmp_path):
    env = dict(os.environ, SIMWEB_CACHE=str(tmp_path))
    code = ("from simweb.apps.booking.world import BookingWorld;"
            f"w = BookingWorld.load({{}}, {SMALL}); print(w.hash, w.built)")
    out0 = subprocess.run([sys.executable, "-c", code.format(0)], env=env, capture_output=True, text=True, check=True)
    h0, built = out0.stdout.split()
    assert h0 == world.hash and built == "True"
    out1 = subprocess.run([sys.executable, "-c", code.format(1)], env=env, capture_output=True, text=True, check=True)
    assert out1.stdout.split()[0] != world.hash
    assert world_file("booking", GENERATOR_VERSION, 0, SMALL, tmp_path).exists()


def test_every_room_type_has_a_year_of_availability(world):
    for pid in world.property_ids():
        rooms = world.room_types_of(pid)
        assert 2 <= len(rooms) <= 5
        for rt in rooms:
            assert len(rt["avail"]) == YEAR_DAYS and rt["avail"].isdigit()
            assert max(int(c) for c in rt["avail"]) <= rt["rooms"] <= 9
            assert rt["weekend_cents"] >= rt["base_cents"] > 0 and rt["min_nights"] in (1, 2, 3)
    sold_out = sum(rt["avail"].count("0") for pid in world.property_ids() for rt in world.room_types_of(pid))
    assert sold_out > 0   # some nights are sold out: the site has to say so


def test_properties_are_unique_and_grouped_by_city(world):
    names = [world.property(i)["name"] for i in world.property_ids()]
    assert len(set(names)) == len(names)
    for city in world.cities():
        ps = world.properties_in(city)
        assert ps and all(p["city"] == city for p in ps)
    assert sum(len(world.properties_in(c)) for c in world.cities()) == SMALL


def test_bookings_are_consistent_with_rooms_and_policies(world, bookings):
    codes = set()
    for b in bookings:
        rt = world.room_type(b["room_type_id"])
        p = world.property(b["property_id"])
        assert rt["property_id"] == p["id"]
        assert b["nights"] >= rt["min_nights"] and 1 <= b["guests"] <= rt["capacity"]
        assert b["checkin_day"] + b["nights"] <= YEAR_DAYS
        assert len(b["code"]) == 8 and set(b["code"]) <= set(CODE_ALPHABET)
        codes.add(b["code"])
        if b["status"] == "completed":
            assert b["checkin_day"] + b["nights"] <= 0
        if b["status"] == "cancelled":
            assert b["cancelled_day"] < 0 and b["points_earned"] == 0
            late = b["checkin_day"] - b["cancelled_day"] < p["free_cancel_days"]
            assert b["cancel_fee_cents"] == (b["total_cents"] * p["cancel_fee_pct"] // 100 if late else 0)
        else:
            assert b["points_earned"] == b["total_cents"] // 100
    assert len(codes) == len(bookings)
    assert world.booking_by_code(bookings[0]["code"].lower()) == bookings[0]


def test_loyalty_balances_cover_every_bookings_points(world, bookings):
    """Cancelling any booking takes its points back: no balance may go below zero."""
    earned: dict[int, int] = {}
    for b in bookings:
        earned[b["user_id"]] = earned.get(b["user_id"], 0) + b["points_earned"] - b["points_used"]
    for uid, n in earned.items():
        u = world.user(uid)
        assert u["points"] >= n >= 0
        assert u["tier"] in ("member", "silver", "gold")


def test_user_bookings_come_latest_arrival_first(world, bookings):
    uid = bookings[0]["user_id"]
    mine = world.bookings_of(uid)
    assert {b["id"] for b in mine} == {b["id"] for b in bookings if b["user_id"] == uid}
    assert [b["checkin_day"] for b in mine] == sorted((b["checkin_day"] for b in mine), reverse=True)


def test_codes_page_in_code_order(world):
    rows = world.codes_page(0, 1000)
    assert len(rows) == world.counts["discount_codes"]
    assert [r["code"] for r in rows] == sorted(r["code"] for r in rows)
    assert world.code_named(rows[0]["code"].lower()) == rows[0]
    assert world.code_named("NO-SUCH") is None
