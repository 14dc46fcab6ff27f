"""Simstay's pure functions: what the spec's expressions and the templates may call.

Every function takes the evaluation context first (world + state) and declares what it
reads. World rows are merged with the runtime overlay, so availability, bookings and
loyalty points are always as the site has them now: a new booking or an active hold
takes a room off the nights it covers, a cancelled one gives it back.
"""
from __future__ import annotations

import re
from datetime import date as _date
from functools import lru_cache
from typing import Any

from simweb.core.functions import Ctx, FunctionTable, overlay, paged
from simweb.core.functions import to_int as _int
from simweb.core.kits.auth import add_auth_functions
from simweb.core.kits.cards import add_card_functions
from simweb.core.worlddb import date_to_day, day_to_date

from .world import MAX_NIGHTS, YEAR_DAYS, is_weekend_night, night_cents

FUNCTIONS = FunctionTable()
fn = FUNCTIONS.function

USERS = ("world.users", "runtime.entities.users.*")
BOOKINGS = ("world.bookings", "runtime.entities.bookings.*")
ROOMS = ("world.properties", "world.room_types")
HOLDS = ("runtime.holds.*",)
ME = ("browser.user",)
SITE = ("meta.variant",)       # the site variant's policies (simweb.runtime.variants)
PER_PAGE = 20
msg = FUNCTIONS.message   # the sentences these functions write (simweb.core.functions.AppMessage)
POINTS_PER_DOLLAR = 1          # points earned per whole dollar paid
POINT_CENTS = 1                # 100 points are worth $1
SORTS = ("price", "rating", "stars", "name")


# ----------------------------------------------------------------------------- entities

@FUNCTIONS.entity("users")
def _load_user(world: Any, uid: int) -> dict | None:
    return world.user(uid)


@FUNCTIONS.entity("bookings")
def _load_booking(world: Any, bid: int) -> dict | None:
    return world.booking(bid)


@FUNCTIONS.entity("properties")
def _load_property(world: Any, pid: int) -> dict | None:
    return world.property(pid)


@FUNCTIONS.entity("room_types")
def _load_room(world: Any, rid: int) -> dict | None:
    return world.room_type(rid)


_entity = FUNCTIONS.row


# ----------------------------------------------------------------------------- users and sessions

current_user, find_login = add_auth_functions(FUNCTIONS)   # the auth kit's (simweb/kits/auth.py)
add_card_functions(FUNCTIONS)                               # luhn_ok, card_expired, card_brand (simweb/kits/cards.py)


def _contribution(b: dict | None) -> int:
    if b is None or b.get("status") == "cancelled":
        return 0
    return int(b.get("points_earned") or 0) - int(b.get("points_used") or 0)


@fn(reads=USERS + ME)
def my_tier(ctx: Ctx) -> str | None:
    """The signed-in user's loyalty tier (a role on the spec's ladder), or None."""
    me = current_user(ctx)
    return None if me is None else me["tier"]


@fn(reads=USERS + BOOKINGS + ME)
def points_balance(ctx: Ctx, uid: Any = None) -> int:
    """A user's loyalty points now: the account's points plus what bookings made, changed or
    cancelled at run time earned and spent (a cancelled booking earns nothing and gives
    spent points back)."""
    uid = _int(uid if uid is not None else ctx.user)
    u = _entity(ctx, "users", uid) if uid is not None else None
    if u is None:
        return 0
    total = int(u["points"])
    top = ctx.world.max_id("bookings")
    for key, row in overlay(ctx.state, "bookings").items():
        base = ctx.world.booking(int(key)) if int(key) <= top else None
        owner = (row or base or {}).get("user_id")
        if owner == uid:
            total += _contribution(row) - _contribution(base)
    return total


# ----------------------------------------------------------------------------- dates

@fn()
def parse_day(ctx: Ctx, text: Any) -> int | None:
    """A 'YYYY-MM-DD' date as a day number, or None if it is not a date."""
    s = str(text or "").strip()
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", s):
        return None
    try:
        return date_to_day(_date.fromisoformat(s))
    except ValueError:
        return None


@fn()
def iso_day(ctx: Ctx, day: Any) -> str:
    """Day number as 'YYYY-MM-DD' (the value of a date input)."""
    return day_to_date(int(day)).isoformat() if day is not None else ""


DATES_INVALID = msg("Enter valid check-in and check-out dates.")
CHECKIN_PAST = msg("Check-in cannot be in the past.")
CHECKOUT_BEFORE = msg("Check-out must be after check-in.")
STAY_TOO_LATE = msg("We take bookings for stays until {last}.")
STAY_TOO_LONG = msg("Stays are limited to {most} nights.")
STAY_TOO_SHORT = msg("The minimum stay on this site is {least} nights: choose a later check-out date.")


@fn(reads=SITE)
def stay(ctx: Ctx, checkin: Any, checkout: Any) -> dict:
    """A stay from two date inputs: ``{checkin, checkout, nights, error}``; ``error`` is the
    message a booking site shows for missing, malformed or impossible dates, or a stay
    shorter than the site's minimum (its ``min_stay_nights`` policy) (None if fine)."""
    out: dict[str, Any] = {"checkin": None, "checkout": None, "nights": 0, "error": None, "given": False}
    a_txt, b_txt = str(checkin or "").strip(), str(checkout or "").strip()
    if not a_txt and not b_txt:
        return out
    out["given"] = True
    a, b = parse_day(ctx, a_txt), parse_day(ctx, b_txt)
    if a is None or b is None:
        out["error"] = DATES_INVALID.format()
    elif a < ctx.today:
        out["error"] = CHECKIN_PAST.format()
    elif b <= a:
        out["error"] = CHECKOUT_BEFORE.format()
    elif b > YEAR_DAYS:
        out["error"] = STAY_TOO_LATE.format(last=date_label(day_to_date(YEAR_DAYS)))
    elif b - a > MAX_NIGHTS:
        out["error"] = STAY_TOO_LONG.format(most=MAX_NIGHTS)
    elif b - a < (least := ctx.app.policy(ctx.state, "min_stay_nights")):
        out["error"] = STAY_TOO_SHORT.format(least=least)
    else:
        out.update(checkin=a, checkout=b, nights=b - a)
    return out


@fn()
def day_label(ctx: Ctx, day: Any) -> str:
    return date_label(day_to_date(int(day))) if day is not None else ""


def date_label(d: Any) -> str:
    return f"{d:%b} {d.day}, {d.year}"


@FUNCTIONS.filter
def day(value: Any) -> str:
    return _day_label(int(value)) if value is not None else ""


@lru_cache(maxsize=4096)
def _day_label(n: int) -> str:
    return date_label(day_to_date(n))


@FUNCTIONS.filter
def weekday_day(value: Any) -> str:
    """The day with its weekday ("Wed May 6, 2026"), written at once: a site variant's date
    format rewrites the two together (one weekday in every format)."""
    return f"{day_to_date(int(value)):%a} {_day_label(int(value))}" if value is not None else ""


@FUNCTIONS.filter
def money(cents: Any) -> str:
    return f"${int(cents or 0) / 100:,.2f}"


@FUNCTIONS.filter
def rating(value: Any) -> str:
    return f"{int(value) / 10:.1f}"


# ----------------------------------------------------------------------------- availability

def _held_and_booked(ctx: Ctx, rid: int, skip_booking: int | None = None, skip_hold_of: int | None = None
                     ) -> dict[int, int]:
    """Run-time change of the rooms left per night of room type ``rid``: run-time bookings
    take rooms, world bookings cancelled or moved at run time give theirs back, and active
    holds take one each. ``skip_*`` leaves out one booking or one user's hold."""
    delta: dict[int, int] = {}
    top = ctx.world.max_id("bookings")

    def take(b: dict | None, n: int) -> None:
        if b is None or b.get("status") != "confirmed" or b.get("room_type_id") != rid:
            return
        for d in range(b["checkin_day"], b["checkin_day"] + b["nights"]):
            delta[d] = delta.get(d, 0) + n

    for key, row in overlay(ctx.state, "bookings").items():
        if skip_booking is not None and int(key) == skip_booking:
            row = None
        base = ctx.world.booking(int(key)) if int(key) <= top else None
        take(base, 1)     # the world's availability already counts it: give it back
        take(row, -1)
    for owner, h in (ctx.runtime.get("holds") or {}).items():
        if skip_hold_of is not None and str(owner) == str(skip_hold_of):
            continue
        if h and h.get("room_type_id") == rid and h.get("expires", 0) > ctx.now:
            for d in range(h["checkin"], h["checkin"] + h["nights"]):
                delta[d] = delta.get(d, 0) - 1
    return delta


def _touched_rooms(ctx: Ctx) -> set[int]:
    """Room types whose availability the run has changed (bookings made, moved or
    cancelled, active holds): every other room type reads the world's as it is."""
    out: set[int] = set()
    top = ctx.world.max_id("bookings")
    for key, row in overlay(ctx.state, "bookings").items():
        base = ctx.world.booking(int(key)) if int(key) <= top else None
        out.update(b["room_type_id"] for b in (row, base) if b is not None)
    out.update(h["room_type_id"] for h in (ctx.runtime.get("holds") or {}).values() if h)
    return out


ROOM_SLEEPS_ONE = msg("The {room} sleeps at most {capacity} guest.")
ROOM_SLEEPS = msg("The {room} sleeps at most {capacity} guests.")
ROOM_MIN_STAY = msg("The {room} requires a minimum stay of {nights} nights.")
ROOM_SOLD_OUT = msg("Sold out: the {room} has no rooms left for your dates.")


def _offer(ctx: Ctx, rt: dict, prop: dict, checkin: int, nights: int, guests: int,
           touched: set[int] | None = None, **skip: Any) -> dict:
    if touched is None or rt["id"] in touched:
        delta = _held_and_booked(ctx, rt["id"], **skip)
    else:
        delta = {}
    avail = rt["avail"]
    if delta:
        left = min(max(0, int(avail[d]) + delta.get(d, 0)) if 0 <= d < YEAR_DAYS else 0
                   for d in range(checkin, checkin + nights))
    else:
        left = min(int(c) for c in avail[checkin:checkin + nights]) if checkin + nights <= YEAR_DAYS else 0
    prices = [night_cents(rt, prop["season"], d) for d in range(checkin, checkin + nights)]
    reason = None
    if guests > rt["capacity"]:
        reason = (ROOM_SLEEPS if rt["capacity"] > 1 else ROOM_SLEEPS_ONE).format(room=rt["name"], capacity=rt["capacity"])
    elif nights < rt["min_nights"]:
        reason = ROOM_MIN_STAY.format(room=rt["name"], nights=rt["min_nights"])
    elif left <= 0:
        reason = ROOM_SOLD_OUT.format(room=rt["name"])
    weekend = sum(1 for d in range(checkin, checkin + nights) if is_weekend_night(d))
    return {"room": rt, "left": left, "total_cents": sum(prices), "nightly": prices, "ok": reason is None,
            "reason": reason, "sold_out": left <= 0, "weekend_nights": weekend, "nights": nights}


@fn(reads=ROOMS + BOOKINGS + HOLDS)
def offers(ctx: Ctx, pid: Any, checkin: Any, nights: Any, guests: Any) -> list[dict]:
    """Every room type of a property for a stay: price, rooms left and why it cannot be
    booked (too many guests, minimum stay, sold out), in the property's order."""
    p = ctx.world.property(_int(pid) or 0)
    if p is None or checkin is None:
        return []
    return [_offer(ctx, rt, p, int(checkin), int(nights), int(guests or 1), skip_hold_of=ctx.user)
            for rt in ctx.world.room_types_of(p["id"])]


@fn(reads=ROOMS + BOOKINGS + HOLDS)
def room_offer(ctx: Ctx, rid: Any, checkin: Any, nights: Any, guests: Any, skip_booking: Any = None) -> dict | None:
    """One room type's offer for a stay (None for an unknown room type); the signed-in
    user's own hold does not count against it."""
    rt = ctx.world.room_type(_int(rid) or 0)
    if rt is None or checkin is None:
        return None
    p = ctx.world.property(rt["property_id"])
    return _offer(ctx, rt, p, int(checkin), int(nights), int(guests or 1), skip_booking=_int(skip_booking),
                  skip_hold_of=ctx.user)


@fn(reads=ROOMS)
def cities(ctx: Ctx) -> list[str]:
    return ctx.world.cities()


@fn(reads=ROOMS)
def hotel(ctx: Ctx, pid: Any) -> dict | None:
    """A property by id, with its room types, or None."""
    p = ctx.world.property(_int(pid) or 0) if _int(pid) is not None else None
    if p is None:
        return None
    p["rooms"] = ctx.world.room_types_of(p["id"])
    return p


@fn(reads=ROOMS)
def room_type(ctx: Ctx, rid: Any) -> dict | None:
    return ctx.world.room_type(_int(rid) or 0) if _int(rid) is not None else None


@fn(reads=ROOMS + BOOKINGS + HOLDS)
def search(ctx: Ctx, city: str, q: str, st: dict, guests: Any, stars: Any, sort: str, page: Any) -> dict:
    """Properties in ``city`` whose name contains ``q``, with at least ``stars`` stars; with a
    valid stay each carries its cheapest bookable offer (or ``sold_out``), and properties
    that can host nobody of the party are kept but marked. Sorted by ``sort``, one page."""
    key = str(q or "").strip().lower()
    min_stars = _int(stars) or 0
    g = max(1, min(8, _int(guests) or 1))
    rows = []
    touched = _touched_rooms(ctx)
    for p in ctx.world.properties_in(str(city or "")):
        if key and key not in p["name"].lower():
            continue
        if p["stars"] < min_stars:
            continue
        best = None
        if st and st.get("checkin") is not None:
            a, n = st["checkin"], st["nights"]
            for rt in ctx.world.room_types_of(p["id"]):
                if rt["capacity"] < g or rt["min_nights"] > n:
                    continue      # cannot be booked for this party or stay: no need to price it
                if rt["id"] in touched:
                    o = _offer(ctx, rt, p, a, n, g, touched, skip_hold_of=ctx.user)
                    if not o["ok"]:
                        continue
                    total = o["total_cents"]
                elif "0" in rt["avail"][a:a + n]:
                    continue      # sold out on some night (the world's availability, untouched)
                else:
                    total = sum(night_cents(rt, p["season"], d) for d in range(a, a + n))
                if best is None or total < best["total_cents"]:
                    best = {"room": rt, "total_cents": total}
        rows.append({"p": p, "best": best})
    dated = bool(st and st.get("checkin") is not None)
    if sort == "rating":
        rows.sort(key=lambda r: (-r["p"]["rating"], r["p"]["id"]))
    elif sort == "stars":
        rows.sort(key=lambda r: (-r["p"]["stars"], -r["p"]["rating"], r["p"]["id"]))
    elif sort == "name":
        rows.sort(key=lambda r: (r["p"]["name"], r["p"]["id"]))
    elif dated:
        rows.sort(key=lambda r: (r["best"] is None, r["best"]["total_cents"] if r["best"] else 0, r["p"]["id"]))
    available = sum(1 for r in rows if r["best"] is not None)
    out = paged(rows, page, PER_PAGE)
    out["available"] = available
    return out




# ----------------------------------------------------------------------------- holds and checkout

@fn(reads=HOLDS + ME + ROOMS)
def my_hold(ctx: Ctx) -> dict | None:
    """The signed-in user's room on hold (with its property and room type), if it has not
    expired."""
    if ctx.user is None:
        return None
    h = (ctx.runtime.get("holds") or {}).get(str(ctx.user))
    if not h or h.get("expires", 0) <= ctx.now:
        return None
    rt = ctx.world.room_type(h["room_type_id"])
    return dict(h, room=rt, property=ctx.world.property(rt["property_id"]), minutes_left=(h["expires"] - ctx.now + 59) // 60)


@fn(reads=("world.discount_codes",))
def discount_code(ctx: Ctx, code: Any) -> dict | None:
    """A discount code by its text (case-insensitive), or None."""
    return ctx.world.code_named(str(code or "")) if str(code or "").strip() else None


CODE_INVALID = msg("The code {code} is not valid.")
CODE_OTHER_HOTEL = msg("The code {code} is only valid at {hotel}.")
CODE_OTHER_PROPERTY = msg("The code {code} is only valid at another property.")
CODE_ARRIVALS = msg("The code {code} is valid for arrivals from {first} to {last}.")
CODE_MIN_STAY = msg("The code {code} needs a stay of at least {nights} nights.")
CODE_MIN_TOTAL = msg("The code {code} needs a booking total of at least {total}.")


@fn(reads=("world.discount_codes",) + USERS + ME)
def code_error(ctx: Ctx, code: Any, prop_id: Any, checkin: Any, nights: Any, subtotal: Any) -> str | None:
    """Why a discount code cannot be used for this stay (the site's message), or None."""
    text = str(code or "").strip().upper()
    if not text:
        return None
    c = ctx.world.code_named(text)
    if c is None:
        return CODE_INVALID.format(code=text)
    # Gold-only codes are the spec's ``use_code`` permission, checked before this.
    if c["property_id"] is not None and c["property_id"] != _int(prop_id):
        p = ctx.world.property(c["property_id"])
        return CODE_OTHER_HOTEL.format(code=c["code"], hotel=p["name"]) if p else CODE_OTHER_PROPERTY.format(code=c["code"])
    if not (c["from_day"] <= int(checkin) <= c["to_day"]):
        return CODE_ARRIVALS.format(code=c["code"], first=day_label(ctx, c["from_day"]), last=day_label(ctx, c["to_day"]))
    if int(nights) < c["min_nights"]:
        return CODE_MIN_STAY.format(code=c["code"], nights=c["min_nights"])
    if int(subtotal) < c["min_total_cents"]:
        return CODE_MIN_TOTAL.format(code=c["code"], total=money(c["min_total_cents"]))
    return None


def discount_cents(c: dict | None, subtotal: int) -> int:
    if c is None:
        return 0
    if c["kind"] == "percent":
        return subtotal * c["value"] // 100
    return min(subtotal, c["value"])


@fn(reads=("world.discount_codes",) + HOLDS + ME + ROOMS + ("runtime.checkout.*",))
def quote(ctx: Ctx) -> dict | None:
    """The price of the held stay with the checkout's discount code and points:
    ``{subtotal, discount, points, points_cents, total, code}``."""
    h = my_hold(ctx)
    if h is None:
        return None
    co = (ctx.runtime.get("checkout") or {}).get(str(ctx.user)) or {}
    sub = int(h["subtotal_cents"])
    code = co.get("code")
    c = ctx.world.code_named(code) if code else None
    disc = discount_cents(c, sub)
    pts = int(co.get("points") or 0)
    return {"subtotal": sub, "discount": disc, "code": c["code"] if c else None, "points": pts,
            "points_cents": pts * POINT_CENTS, "total": max(0, sub - disc - pts * POINT_CENTS)}


# ----------------------------------------------------------------------------- bookings

@fn(reads=BOOKINGS + ME)
def my_booking(ctx: Ctx, bid: Any) -> dict | None:
    """The signed-in user's booking ``bid`` as it is now, or None (someone else's too)."""
    b = _entity(ctx, "bookings", _int(bid)) if _int(bid) is not None else None
    return b if b is not None and ctx.user is not None and b["user_id"] == ctx.user else None


@fn(reads=BOOKINGS + ME)
def my_bookings(ctx: Ctx, which: str = "upcoming") -> list[dict]:
    """The user's bookings: ``upcoming`` (confirmed, not yet over), ``past`` (over) or
    ``cancelled``, soonest arrival first (past: latest first)."""
    if ctx.user is None:
        return []
    uid = ctx.user
    rows = {b["id"]: b for b in ctx.world.bookings_of(uid)}
    for key, row in overlay(ctx.state, "bookings").items():
        k = int(key)
        if row is None:
            rows.pop(k, None)
        elif row["user_id"] == uid:
            rows[k] = row
    today = ctx.today
    out = []
    for b in rows.values():
        over = b["checkin_day"] + b["nights"] <= today
        kind = "cancelled" if b["status"] == "cancelled" else ("past" if over or b["status"] == "completed"
                                                                else "upcoming")
        if kind == which:
            out.append(b)
    if which == "upcoming":
        out.sort(key=lambda b: (b["checkin_day"], b["id"]))
    else:
        out.sort(key=lambda b: (-b["checkin_day"], -b["id"]))
    return out


@fn(reads=ROOMS + SITE)
def free_cancel_days(ctx: Ctx, p: Any) -> int:
    """Until how many days before arrival a stay at property ``p`` can be cancelled or
    changed free of charge: the site's window (its ``free_cancel_days`` policy) when it has
    one for every booking, else the property's own."""
    site = ctx.app.policy(ctx.state, "free_cancel_days")
    return int(site) if site is not None else int(p["free_cancel_days"])


@fn(reads=ROOMS + SITE)
def policy(ctx: Ctx, b: Any) -> dict:
    """A booking's cancellation and change policy now: the last free day, whether changes
    and free cancellation are still possible and the fee if cancelled today (the window is
    :func:`free_cancel_days`'s; the fee is the property's share of the total)."""
    p = ctx.world.property(b["property_id"])
    days = free_cancel_days(ctx, p)
    free_until = b["checkin_day"] - days
    free = ctx.today <= free_until
    fee = 0 if free else b["total_cents"] * p["cancel_fee_pct"] // 100
    return {"free_until": free_until, "free": free, "fee": fee, "days": days,
            "pct": p["cancel_fee_pct"], "started": ctx.today >= b["checkin_day"],
            "site_wide": ctx.app.policy(ctx.state, "free_cancel_days") is not None}


@fn(reads=BOOKINGS + ROOMS + ("world.discount_codes",))
def reprice(ctx: Ctx, b: Any, checkin: Any, nights: Any) -> dict:
    """A booking's price for new dates: the room's nightly rates, its discount code if it
    still applies to the new stay, and the points it used."""
    rt = ctx.world.room_type(b["room_type_id"])
    p = ctx.world.property(rt["property_id"])
    sub = sum(night_cents(rt, p["season"], d) for d in range(int(checkin), int(checkin) + int(nights)))
    c = ctx.world.code_named(b["discount_code"]) if b.get("discount_code") else None
    if c is not None and code_error(ctx, c["code"], p["id"], checkin, nights, sub) is not None:
        c = None
    disc = discount_cents(c, sub)
    total = max(0, sub - disc - int(b.get("points_used") or 0) * POINT_CENTS)
    return {"subtotal": sub, "discount": disc, "total": total, "earned": total // 100 * POINTS_PER_DOLLAR}


@fn(reads=ROOMS)
def points_for(ctx: Ctx, total_cents: Any) -> int:
    """Points a payment earns."""
    return int(total_cents or 0) // 100 * POINTS_PER_DOLLAR


@fn(reads=BOOKINGS + USERS + ME)
def points_history(ctx: Ctx) -> list[dict]:
    """The user's bookings that earned or used points, latest first."""
    rows = my_bookings(ctx, "upcoming") + my_bookings(ctx, "past")
    rows = [b for b in rows if b["points_earned"] or b["points_used"]]
    rows.sort(key=lambda b: (-b["created_day"], -b["id"]))
    return rows[:50]


# ----------------------------------------------------------------------------- favourites and deals

@fn(reads=("runtime.favorites.*",) + ME + ROOMS)
def my_favorites(ctx: Ctx) -> list[dict]:
    ids = (ctx.runtime.get("favorites") or {}).get(str(ctx.user)) or []
    return [p for p in (ctx.world.property(i) for i in ids) if p is not None]


@fn(reads=("runtime.favorites.*",) + ME)
def is_favorite(ctx: Ctx, pid: Any) -> bool:
    ids = (ctx.runtime.get("favorites") or {}).get(str(ctx.user)) or []
    return _int(pid) in ids


@fn(reads=("world.discount_codes", "world.properties"))
def deals(ctx: Ctx, page: Any) -> dict:
    """The published discount codes, by code, one page (with the hotel a code is limited to)."""
    total = ctx.world.counts.get("discount_codes", 0)
    pages = max(1, -(-total // PER_PAGE))
    n = min(max(1, _int(page) or 1), pages)
    items = ctx.world.codes_page((n - 1) * PER_PAGE, PER_PAGE)
    for c in items:
        c["property"] = ctx.world.property(c["property_id"]) if c["property_id"] else None
    return {"total": total, "page": n, "pages": pages, "items": items}



@fn()
def guest_options(ctx: Ctx) -> list[int]:
    return list(range(1, 7))


@fn(reads=("world.discount_codes",))
def discount_cents_of(ctx: Ctx, code: Any, subtotal: Any) -> int:
    """What a discount code takes off a subtotal (0 without a code)."""
    return discount_cents(discount_code(ctx, code), int(subtotal or 0))


@fn()
def dollars(ctx: Ctx, cents: Any) -> str:
    """Cents as the site prints money ('$1,234.00')."""
    return money(cents)
