"""Simstay's task templates.

Each template draws its parameters from the world by seed (thousands of instances per
template), states a goal, lists WebGym-style fact groups (their fact count sets the
difficulty), gives an oracle plan of BrowserGym actions on what the pages show, and
declares its intended effect (simweb.effects); the engine derives the verdict.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

from simweb.core.kits.cards import card_record
from simweb.core.worlddb import day_to_date
from simweb.judging.decompose import Part, view_part
from simweb.judging.effects import ANY, Answer, Effect, Reason, Refusal, Value, eq, same_set, text, where
from simweb.judging.tasks import FactGroup, Rng, TaskTemplate, site_policy
from simweb.verifiers import booking as V

from .world import YEAR_DAYS, n_users_for, night_cents

CARD = "4111 1111 1111 1111"
EXPIRY = "12/29"
CVV = "123"
#: What a booking keeps of the goal's card (simweb/kits/cards.py), and what the verifier checks.
PAID_WITH = card_record(CARD, EXPIRY)
_GUEST_FIRST = ("Maya", "Theo", "Ines", "Noah", "Alma", "Luca", "Zoe", "Arjun", "Elif", "Mina", "Hugo", "Vera")
_GUEST_LAST = ("Fischer", "Moreno", "Andersen", "Costa", "Nakamura", "Dubois", "Kowalski", "Bianchi", "Olsen")


def fg(id_: str, description: str, *facts: str) -> FactGroup:
    return FactGroup(id_, description, tuple(facts))


def iso(day: int) -> str:
    return day_to_date(day).isoformat()


def label(day: int) -> str:
    d = day_to_date(day)
    return f"{d:%B} {d.day}, {d.year}"


# ----------------------------------------------------------------------------- world reads

def left(rt: dict, checkin: int, nights: int) -> int:
    """Rooms left over a stay in the world (before any run-time booking)."""
    return min(int(rt["avail"][d]) if 0 <= d < YEAR_DAYS else 0 for d in range(checkin, checkin + nights))


def price(app: Any, rt: dict, checkin: int, nights: int) -> int:
    p = app.world.property(rt["property_id"])
    return sum(night_cents(rt, p["season"], d) for d in range(checkin, checkin + nights))


def bookable(rt: dict, checkin: int, nights: int, guests: int) -> bool:
    return guests <= rt["capacity"] and nights >= rt["min_nights"] and left(rt, checkin, nights) > 0


def pick_user(app: Any, rng: Rng, need: Callable[[dict], bool] | None = None) -> dict:
    for _ in range(500):
        u = app.world.user(rng.randint(1, n_users_for(app.world.size)))
        if u is not None and (need is None or need(u)):
            return u
    raise RuntimeError("no user satisfies the task's needs")


def pick_stay(app: Any, rng: Rng, need: Callable[[dict, dict, int, int, int], bool] | None = None,
              lo: int = 3, hi: int = 330, min_stay: int = 1) -> dict:
    """A property, room type and stay (checkin, nights, guests) that is bookable in the world,
    of at least ``min_stay`` nights (the site's minimum stay, a policy: such a stay is
    bookable, and priced and ranked alike, under every minimum up to it)."""
    ids = app.world.property_ids()
    for _ in range(2000):
        p = app.world.property(rng.choice(ids))
        rt = rng.choice(app.world.room_types_of(p["id"]))
        least = max(min_stay, rt["min_nights"])
        nights = rng.randint(least, max(least, 5))
        checkin = rng.randint(lo, min(hi, YEAR_DAYS - nights))
        guests = rng.randint(1, rt["capacity"])
        if need is None and not bookable(rt, checkin, nights, guests):
            continue
        if need is not None and not need(p, rt, checkin, nights, guests):
            continue
        return {"property_id": p["id"], "hotel": p["name"], "city": p["city"], "room_type_id": rt["id"],
                "room": rt["name"], "checkin": checkin, "nights": nights, "guests": guests,
                "subtotal": price(app, rt, checkin, nights)}
    raise RuntimeError("no stay satisfies the task's needs")


def guest_name(rng: Rng) -> str:
    return f"{rng.choice(_GUEST_FIRST)} {rng.choice(_GUEST_LAST)}"


def search_url(s: dict, with_name: bool = True) -> str:
    q = {"city": s["city"], "q": s["hotel"] if with_name else "", "checkin": iso(s["checkin"]),
         "checkout": iso(s["checkin"] + s["nights"]), "guests": s["guests"]}
    return "/search?" + urlencode({k: v for k, v in q.items() if v != ""})


def stay_text(s: dict) -> str:
    g = s["guests"]
    return (f"the {s['room']} at {s['hotel']} in {s['city']} from {label(s['checkin'])} to "
            f"{label(s['checkin'] + s['nights'])} for {g} guest{'s' if g > 1 else ''}")


def stay_facts(s: dict) -> FactGroup:
    return fg("stay", "The right room and stay are booked", f"hotel {s['hotel']}", f"room {s['room']}",
              f"check-in {iso(s['checkin'])}", f"check-out {iso(s['checkin'] + s['nights'])}",
              f"{s['guests']} guests")


def book_plan(s: dict, guest: str | None = None, code: str | None = None, points: int = 0,
              card_name: str = "") -> list[str]:
    """Search the hotel for the dates, reserve the room, fill the three steps and confirm."""
    acts = [f"goto({search_url(s)!r})", f"click('hotel-{s['property_id']}')", f"click('reserve-{s['room_type_id']}')"]
    if guest:
        acts.append(f"fill('guest-name', {guest!r})")
    acts += ["click('guest-submit')", f"fill('card-name', {card_name or 'Card Holder'!r})",
             f"fill('card-number', {CARD!r})", f"fill('card-expiry', {EXPIRY!r})", f"fill('card-cvv', {CVV!r})"]
    if code:
        acts.append(f"fill('pay-code', {code!r})")
    if points:
        acts.append(f"fill('pay-points', '{points}')")
    acts += ["click('pay-submit')", "click('confirm-booking')"]
    return acts


def held(s: dict) -> Value:
    """The user's hold on the stay's room (the reserve step's runtime row, which the
    booking consumes): that room, those dates, that party."""
    want = {k: s[k] for k in ("property_id", "room_type_id", "checkin", "nights", "guests")}
    return Value(f"holds.{s['user_id']}", where(lambda h: isinstance(h, dict) and all(h.get(k) == v for k, v in want.items()),
                                                f"holds room {s['room_type_id']} from day {s['checkin']} for "
                                                f"{s['nights']} nights, {s['guests']} guests"), label="the room on hold")


def hold_part(s: dict) -> Part:
    """The first step of every booking form: the room reserved (on hold) for the stay,
    before any guest details, payment or confirmation."""
    stay = stay_facts(s)
    return Part((FactGroup(stay.id, "The right room is on hold for the stay", stay.facts),), (),
                tuple(book_plan(s)[:3]),
                f"Reserve {stay_text(s)} so that it is on hold for me, and stop there: no guest details, payment "
                f"or booking yet.", extra=lambda start: Effect((held(s),)))


#: The leaves of the booking form's draft a review part's goal fixes (the rest: what the
#: form fills in by itself, the spec's value_defaults: the user's e-mail, no requests).
FORM_NAMES = ("guest.name", "code", "points", *(f"payment.{k}" for k in PAID_WITH))


def review_part(s: dict, group: FactGroup, plan: list[str], what: str, guest: str, code: str | None = None,
                points: int = 0) -> Part:
    """The booking form filled up to its review step, not confirmed: the hold, and the
    checkout holding what the parent's booking would record (main guest, code, points,
    the goal's card); every other step the form needs is part of it."""
    def checkout(co: Any) -> bool:
        if not isinstance(co, dict) or not isinstance(co.get("guest"), dict) or not isinstance(co.get("payment"), dict):
            return False
        name, card = co["guest"].get("name"), co["payment"]
        return (isinstance(name, str) and name.strip().casefold() == guest.casefold()
                and str(co.get("code") or "").strip().upper() == (code or "").upper()
                and int(co.get("points") or 0) == points
                and all(card.get(k) == v for k, v in PAID_WITH.items()))

    describe = (f"guest {guest}, code {code or 'none'}, {points} points, the goal's {PAID_WITH['brand']} card "
                f"(fingerprint {PAID_WITH['fingerprint']}, expiry {PAID_WITH['expiry']}, security code check passed)")
    return Part(("stay", group), (), tuple(plan[:-1]),
                f"{what} Fill in the booking form up to its review step, but do not confirm the booking yet.",
                extra=lambda start: Effect((held(s), Value(f"checkout.{s['user_id']}", where(checkout, describe),
                                                           label="the booking form", names=FORM_NAMES))))


def city_search_part(s: dict, group: FactGroup, plan: list[str], what: str, stars: int = 0) -> Part:
    """The first step of a search-then-answer template: the results for the city, dates and
    party (and star filter) shown, in any sort order."""
    url = search_url(s, with_name=False) + (f"&stars={stars}" if stars else "")
    return view_part((FactGroup(group.id, "The search results are shown", group.facts),), url, plan,
                     f"{what} Leave the results open; nothing else is needed yet.", free=("sort",))


def payment_text() -> str:
    return f"Pay with the card {CARD} (expiry {EXPIRY}, security code {CVV})"


def booking_list_plan(b: dict, today: int = 0) -> list[str]:
    """Open My bookings (the right tab) and the booking."""
    over = b["checkin_day"] + b["nights"] <= today
    tab = "show-cancelled" if b["status"] == "cancelled" else ("show-past" if over or b["status"] == "completed"
                                                              else None)
    acts = ["click('nav-bookings')"]
    if tab:
        acts.append(f"click('{tab}')")
    return acts + [f"click('booking-{b['id']}')"]


def unique_upcoming(app: Any, b: dict) -> bool:
    """The user has no other upcoming booking at the same hotel arriving the same day."""
    return not any(o["id"] != b["id"] and o["property_id"] == b["property_id"] and o["checkin_day"] == b["checkin_day"]
                   for o in app.world.bookings_of(b["user_id"]))


def pick_booking(app: Any, rng: Rng, need: Callable[[dict, dict], bool], lo: int = 1, hi: int = 330,
                 status: str = "confirmed") -> tuple[dict, dict]:
    """A world booking (status, arriving lo..hi) and its property that satisfy ``need``."""
    pool = app.world.arriving_ids(status, lo, hi)
    for _ in range(3000):
        b = app.world.booking(rng.choice(pool))
        p = app.world.property(b["property_id"])
        if need(b, p) and unique_upcoming(app, b):
            return b, p
    raise RuntimeError("no booking satisfies the task's needs")


def window(p: dict, pol: Any = None) -> int:
    """The days before arrival a stay at ``p`` is free to cancel or change until: the
    site's window (the ``free_cancel_days`` policy, ``pol``) if it has one, else the
    property's (what functions.free_cancel_days gives the site)."""
    return int(pol) if pol is not None else int(p["free_cancel_days"])


def free_until(b: dict, p: dict, pol: Any = None) -> int:
    return b["checkin_day"] - window(p, pol)


def fee_now(b: dict, p: dict, today: int = 0, pol: Any = None) -> int:
    return 0 if today <= free_until(b, p, pol) else b["total_cents"] * p["cancel_fee_pct"] // 100


def free_under(b: dict, p: dict, policy: Any, free: bool = True) -> bool:
    """Free to cancel today (``free``; else: costs a fee) under the site's cancellation
    policy ``policy`` (the policies an instance is drawn under) and under today's (each
    property's own window): an instance whose goal does not state the window then needs
    the same on every site that has either."""
    fees = [fee_now(b, p, pol=w) for w in dict.fromkeys((None, policy["free_cancel_days"]))]
    return all(f == 0 for f in fees) if free else all(f > 0 for f in fees)


def policy_text(app: Any, p: dict) -> str:
    """The site's cancellation window as a goal states it (nothing on a site whose window
    is each property's own)."""
    days = site_policy(app, p, "free_cancel_days")
    return "" if days is None else (f" (This site lets every booking be cancelled free of charge up to {days} days "
                                    f"before arrival.)")


def cheapest_in_city(app: Any, city: str, checkin: int, nights: int, guests: int, stars: int = 0
                     ) -> list[tuple[int, int, str]]:
    """(price, property id, name) of every property of ``city`` bookable for the stay, cheapest first."""
    out = []
    for p in app.world.properties_in(city):
        if p["stars"] < stars:
            continue
        best = None
        for rt in app.world.room_types_of(p["id"]):
            if bookable(rt, checkin, nights, guests):
                c = price(app, rt, checkin, nights)
                best = c if best is None else min(best, c)
        if best is not None:
            out.append((best, p["id"], p["name"]))
    return sorted(out)


# ============================================================================= information

class StayPrice(TaskTemplate):
    id = "booking/stay_price"
    kind = "info"
    title = "Find the total price of a stay"
    policies = ("min_stay_nights",)

    def sample_with(self, app, rng, policy):
        s = pick_stay(app, rng, min_stay=policy["min_stay_nights"])
        return dict(s, user_id=pick_user(app, rng)["id"])

    def goal(self, app, p):
        return (f"How much would {stay_text(p)} cost in total? Answer with the price.")

    def facts(self, app, p):
        return [fg("price", "The stay's total is read for the right dates",
                   f"total {p['subtotal'] / 100:.2f}")]

    def oracle(self, app, p):
        return [f"goto({search_url(p)!r})", f"click('hotel-{p['property_id']}')",
                f"send_msg_to_user('${p['subtotal'] / 100:,.2f}')"]

    def effect(self, app, p, start):
        return Effect(answer=Answer("money", p["subtotal"], "total price of the stay"))


class PointsBalance(TaskTemplate):
    id = "booking/points_balance"
    kind = "info"
    title = "Read the loyalty points balance"

    def sample(self, app, rng):
        u = pick_user(app, rng)
        return {"user_id": u["id"], "points": u["points"]}

    def goal(self, app, p):
        return "How many Simstay Rewards points do I have right now? Answer with the number."

    def facts(self, app, p):
        return [fg("points", "The balance is read", f"{p['points']} points")]

    def oracle(self, app, p):
        return ["click('nav-loyalty')", f"send_msg_to_user('{p['points']}')"]

    def effect(self, app, p, start):
        return Effect(answer=Answer("number", p["points"], "points balance"))


class ConfirmationCode(TaskTemplate):
    id = "booking/confirmation_code"
    kind = "info"
    title = "Look up a booking's confirmation code"

    def sample(self, app, rng):
        b, p = pick_booking(app, rng, lambda b, p: True)
        return {"user_id": b["user_id"], "booking_id": b["id"], "hotel": p["name"], "checkin": b["checkin_day"],
                "code": b["code"]}

    def goal(self, app, p):
        return (f"What is the confirmation code of my booking at {p['hotel']} arriving on {label(p['checkin'])}? "
                f"Answer with the code.")

    def facts(self, app, p):
        return [fg("code", "The booking's code is read", f"code {p['code']}")]

    def oracle(self, app, p):
        b = app.world.booking(p["booking_id"])
        return booking_list_plan(b) + [f"send_msg_to_user({p['code']!r})"]

    def effect(self, app, p, start):
        return Effect(answer=Answer("text", p["code"], "confirmation code"))


class FreeCancellationUntil(TaskTemplate):
    id = "booking/free_cancellation_until"
    kind = "info"
    title = "Find the last day of free cancellation"
    # The answer is the site's window when it has one: the goal then states it.
    policies = ("free_cancel_days",)

    def sample_with(self, app, rng, policy):
        days = policy["free_cancel_days"]
        b, p = pick_booking(app, rng, lambda b, p: free_until(b, p, days) >= 0, lo=5)
        return {"user_id": b["user_id"], "booking_id": b["id"], "hotel": p["name"], "code": b["code"],
                "until": free_until(b, p, days)}

    def goal(self, app, p):
        # The booking goes by its confirmation code: a goal naming the arrival date would let
        # "that date minus a week" be right whenever the hotel's window is a week (1 in 6).
        return (f"Until which date can I cancel my booking {p['code']} at {p['hotel']} free of charge?"
                f"{policy_text(app, p)} Answer with the date.")

    def facts(self, app, p):
        return [fg("until", "The policy's last free day is read", f"free until {iso(p['until'])}")]

    def oracle(self, app, p):
        b = app.world.booking(p["booking_id"])
        return booking_list_plan(b) + [f"send_msg_to_user({label(p['until'])!r})"]

    def effect(self, app, p, start):
        return Effect(answer=Answer("date", day_to_date(p["until"]), "last day of free cancellation"))


class CancellationFee(TaskTemplate):
    id = "booking/cancellation_fee"
    kind = "info"
    title = "Find what cancelling a booking today would cost"
    # Whether there is a fee is the site's window when it has one: the goal then states it.
    policies = ("free_cancel_days",)

    def sample_with(self, app, rng, policy):
        days = policy["free_cancel_days"]
        b, p = pick_booking(app, rng, lambda b, p: fee_now(b, p, pol=days) > 0, lo=1, hi=15)
        return {"user_id": b["user_id"], "booking_id": b["id"], "hotel": p["name"], "checkin": b["checkin_day"],
                "fee": fee_now(b, p, pol=days)}

    def goal(self, app, p):
        return (f"If I cancelled {'my booking at ' + p['hotel']} arriving on {label(p['checkin'])} today, how much "
                f"would the cancellation fee be?{policy_text(app, p)} Do not cancel it; answer with the amount.")

    def facts(self, app, p):
        return [fg("fee", "The fee is read from the booking's policy", f"fee {p['fee'] / 100:.2f}", "not cancelled")]

    def oracle(self, app, p):
        b = app.world.booking(p["booking_id"])
        return booking_list_plan(b) + [f"send_msg_to_user('${p['fee'] / 100:,.2f}')"]

    def effect(self, app, p, start):
        return Effect(answer=Answer("money", p["fee"], "cancellation fee"))


def _city_stay(app: Any, rng: Rng, stars_choices=(0,), min_stay: int = 1) -> dict:
    for _ in range(500):
        s = pick_stay(app, rng, lo=3, hi=300, min_stay=min_stay)
        stars = rng.choice(stars_choices)
        ranked = cheapest_in_city(app, s["city"], s["checkin"], s["nights"], s["guests"], stars)
        if len(ranked) >= 3 and ranked[0][0] != ranked[1][0]:
            return dict(s, stars=stars, best_price=ranked[0][0], best_id=ranked[0][1], best_name=ranked[0][2],
                        n_available=len(ranked))
    raise RuntimeError("no city with a unique cheapest hotel")


def _city_text(p: dict) -> str:
    g = p["guests"]
    stars = f" with at least {p['stars']} stars" if p["stars"] else ""
    return (f"hotel in {p['city']}{stars} that has a room for {g} guest{'s' if g > 1 else ''} from "
            f"{label(p['checkin'])} to {label(p['checkin'] + p['nights'])}")


class CheapestHotel(TaskTemplate):
    id = "booking/cheapest_hotel"
    kind = "info"
    title = "Find the cheapest available hotel in a city for a stay"
    policies = ("min_stay_nights",)

    def sample_with(self, app, rng, policy):
        s = _city_stay(app, rng, (0, 3, 4), policy["min_stay_nights"])
        return dict(s, user_id=pick_user(app, rng)["id"])

    def goal(self, app, p):
        return f"Which is the cheapest {_city_text(p)}? Answer with the hotel's name."

    def facts(self, app, p):
        return [fg("search", "The search is for the right city, dates and party", f"city {p['city']}",
                   f"check-in {iso(p['checkin'])}", f"check-out {iso(p['checkin'] + p['nights'])}",
                   f"{p['guests']} guests"),
                fg("answer", "The cheapest bookable hotel is named", p["best_name"])]

    def oracle(self, app, p):
        acts = [f"goto({search_url(p, with_name=False)!r})"]
        if p["stars"]:
            acts += [f"select_option('f-stars', {STAR_OPTIONS[p['stars']]!r})", "click('f-apply')"]
        return acts + [f"send_msg_to_user({p['best_name']!r})"]

    def parts(self, app, p):
        return [city_search_part(p, self.facts(app, p)[0], self.oracle(app, p)[:-1],
                                 f"Search for every {_city_text(p)}.", p["stars"])]

    def effect(self, app, p, start):
        return Effect(answer=Answer("text", p["best_name"], "cheapest hotel"))


STAR_OPTIONS = {3: "3 stars and up", 4: "4 stars and up", 5: "5 stars"}


class CheapestPriceInCity(TaskTemplate):
    id = "booking/cheapest_price_in_city"
    kind = "info"
    title = "Find the lowest total price for a stay in a city"
    policies = ("min_stay_nights",)

    def sample_with(self, app, rng, policy):
        s = _city_stay(app, rng, (0,), policy["min_stay_nights"])
        return dict(s, user_id=pick_user(app, rng)["id"])

    def goal(self, app, p):
        return (f"What is the lowest total price of any {_city_text(p)}? Answer with the price.")

    def facts(self, app, p):
        return [fg("search", "The search is for the right city, dates and party", f"city {p['city']}",
                   f"check-in {iso(p['checkin'])}", f"check-out {iso(p['checkin'] + p['nights'])}",
                   f"{p['guests']} guests"),
                fg("answer", "The lowest total is given", f"{p['best_price'] / 100:.2f}")]

    def oracle(self, app, p):
        return [f"goto({search_url(p, with_name=False)!r})", f"send_msg_to_user('${p['best_price'] / 100:,.2f}')"]

    def parts(self, app, p):
        return [city_search_part(p, self.facts(app, p)[0], self.oracle(app, p)[:-1], f"Search for every {_city_text(p)}.")]

    def effect(self, app, p, start):
        return Effect(answer=Answer("money", p["best_price"], "lowest total price"))


class TopRatedHotel(TaskTemplate):
    id = "booking/top_rated_hotel"
    kind = "info"
    title = "Find the best-rated hotel in a city"

    def sample(self, app, rng):
        for _ in range(300):
            city = rng.choice(app.world.cities())
            stars = rng.choice((0, 3, 4))
            ps = sorted((p for p in app.world.properties_in(city) if p["stars"] >= stars),
                        key=lambda p: (-p["rating"], p["id"]))
            if len(ps) >= 2 and ps[0]["rating"] != ps[1]["rating"]:
                return {"user_id": pick_user(app, rng)["id"], "city": city, "stars": stars, "name": ps[0]["name"],
                        "property_id": ps[0]["id"]}
        raise RuntimeError("no city with a unique top-rated hotel")

    def goal(self, app, p):
        stars = f" with at least {p['stars']} stars" if p["stars"] else ""
        return f"Which hotel in {p['city']}{stars} has the best guest rating? Answer with its name."

    def facts(self, app, p):
        return [fg("answer", "The top-rated hotel is named", f"city {p['city']}", p["name"])]

    def oracle(self, app, p):
        acts = [f"goto({'/search?' + urlencode({'city': p['city']})!r})", "select_option('f-sort', 'Guest rating')"]
        if p["stars"]:
            acts.append(f"select_option('f-stars', {STAR_OPTIONS[p['stars']]!r})")
        return acts + ["click('f-apply')", f"send_msg_to_user({p['name']!r})"]

    def effect(self, app, p, start):
        return Effect(answer=Answer("text", p["name"], "best-rated hotel"))


# ============================================================================= bookings

class BookRoom(TaskTemplate):
    id = "booking/book_room"
    kind = "state"
    title = "Book a room for someone else"
    policies = ("min_stay_nights",)

    def sample_with(self, app, rng, policy):
        s = pick_stay(app, rng, min_stay=policy["min_stay_nights"])
        u = pick_user(app, rng)
        return dict(s, user_id=u["id"], guest=guest_name(rng), card_name=u["full_name"])

    def goal(self, app, p):
        return (f"Book {stay_text(p)}, with {p['guest']} as the main guest. {payment_text()}.")

    def facts(self, app, p):
        return [stay_facts(p), fg("guest", "The main guest is named", f"guest {p['guest']}"),
                fg("paid", "The booking is confirmed", "status confirmed")]

    def oracle(self, app, p):
        return book_plan(p, guest=p["guest"], card_name=p["card_name"])

    def parts(self, app, p):
        guest = self.facts(app, p)[1]
        return [hold_part(p),
                review_part(p, guest, self.oracle(app, p), f"Start booking {stay_text(p)}, with {p['guest']} as the "
                            f"main guest. {payment_text()}.", p["guest"])]

    def effect(self, app, p, start):
        rt = app.world.room_type(p["room_type_id"])
        return Effect((V.new_booking(p["user_id"], rt, p["checkin"], p["nights"], p["guests"], p["guest"],
                                     p["subtotal"], card=PAID_WITH),))


def _valid_code(app: Any, s: dict, want_gold: bool) -> dict | None:
    """The first code (by code) that applies to the stay, Gold-only or not as asked."""
    for c in app.world.all_codes():
        if (c["tier"] == "gold") != want_gold:
            continue
        if c["property_id"] not in (None, s["property_id"]):
            continue
        if not (c["from_day"] <= s["checkin"] <= c["to_day"]) or s["nights"] < c["min_nights"]:
            continue
        if s["subtotal"] < c["min_total_cents"]:
            continue
        return c
    return None


def _discount(c: dict, sub: int) -> int:
    return sub * c["value"] // 100 if c["kind"] == "percent" else min(sub, c["value"])


class BookWithCode(TaskTemplate):
    id = "booking/book_with_code"
    kind = "state"
    title = "Book a room with a discount code"
    policies = ("min_stay_nights",)

    def sample_with(self, app, rng, policy):
        for _ in range(300):
            s = pick_stay(app, rng, min_stay=policy["min_stay_nights"])
            c = _valid_code(app, s, False)
            if c is not None:
                u = pick_user(app, rng)
                return dict(s, user_id=u["id"], code=c["code"], total=s["subtotal"] - _discount(c, s["subtotal"]),
                            card_name=u["full_name"], me=u["full_name"])
        raise RuntimeError("no stay with a usable code")

    def goal(self, app, p):
        return f"Book {stay_text(p)} for me, using the discount code {p['code']}. {payment_text()}."

    def facts(self, app, p):
        return [stay_facts(p), fg("code", "The code is applied", f"code {p['code']}",
                                  f"total {p['total'] / 100:.2f}"), fg("paid", "The booking is confirmed", "confirmed")]

    def oracle(self, app, p):
        return book_plan(p, code=p["code"], card_name=p["card_name"])

    def parts(self, app, p):
        code = self.facts(app, p)[1]
        return [hold_part(p),
                review_part(p, code, self.oracle(app, p), f"Start booking {stay_text(p)} for me, using the discount "
                            f"code {p['code']}. {payment_text()}.", p["me"], code=p["code"])]

    def effect(self, app, p, start):
        rt = app.world.room_type(p["room_type_id"])
        return Effect((V.new_booking(p["user_id"], rt, p["checkin"], p["nights"], p["guests"], p["me"], p["total"],
                                     code=p["code"], card=PAID_WITH),))


class BookWithPoints(TaskTemplate):
    id = "booking/book_with_points"
    kind = "state"
    title = "Book a room paying partly with loyalty points"
    policies = ("min_stay_nights",)

    def sample_with(self, app, rng, policy):
        for _ in range(300):
            s = pick_stay(app, rng, min_stay=policy["min_stay_nights"])
            u = pick_user(app, rng, lambda u: u["points"] >= 300)
            most = min(u["points"], s["subtotal"]) // 100
            if most >= 2:
                pts = rng.randint(1, most) * 100
                return dict(s, user_id=u["id"], points=pts, total=s["subtotal"] - pts, card_name=u["full_name"],
                            me=u["full_name"])
        raise RuntimeError("no stay for points")

    def goal(self, app, p):
        return (f"Book {stay_text(p)} for me and use {p['points']} of my loyalty points towards it. "
                f"{payment_text()} for the rest.")

    def facts(self, app, p):
        return [stay_facts(p), fg("points", "The points are used", f"{p['points']} points used",
                                  f"total {p['total'] / 100:.2f}"), fg("paid", "The booking is confirmed", "confirmed")]

    def oracle(self, app, p):
        return book_plan(p, points=p["points"], card_name=p["card_name"])

    def parts(self, app, p):
        points = self.facts(app, p)[1]
        return [hold_part(p),
                review_part(p, points, self.oracle(app, p), f"Start booking {stay_text(p)} for me and use "
                            f"{p['points']} of my loyalty points towards it. {payment_text()} for the rest.", p["me"],
                            points=p["points"])]

    def effect(self, app, p, start):
        rt = app.world.room_type(p["room_type_id"])
        return Effect((V.new_booking(p["user_id"], rt, p["checkin"], p["nights"], p["guests"], p["me"], p["total"],
                                     points_used=p["points"], card=PAID_WITH),))


class CancelFree(TaskTemplate):
    id = "booking/cancel_free"
    kind = "state"
    title = "Cancel a booking inside its free cancellation period"
    policies = ("free_cancel_days",)

    def sample_with(self, app, rng, policy):
        b, p = pick_booking(app, rng, lambda b, p: free_under(b, p, policy))
        return {"user_id": b["user_id"], "booking_id": b["id"], "hotel": p["name"], "checkin": b["checkin_day"]}

    def goal(self, app, p):
        return f"Cancel {'my booking at ' + p['hotel']} arriving on {label(p['checkin'])}."

    def facts(self, app, p):
        return [fg("cancelled", "The booking is cancelled free of charge", "status cancelled", "no fee")]

    def oracle(self, app, p):
        return booking_list_plan(app.world.booking(p["booking_id"])) + ["click('cancel-booking')"]

    def effect(self, app, p, start):
        return Effect((V.cancelled(p["booking_id"], "the booking", 0),))


class CancelWithFee(TaskTemplate):
    id = "booking/cancel_with_fee"
    kind = "state"
    title = "Cancel a booking and accept the late cancellation fee"
    policies = ("free_cancel_days",)

    def sample_with(self, app, rng, policy):
        # late under the site's window and each property's: the fee (the property's share) is the same
        b, p = pick_booking(app, rng, lambda b, p: free_under(b, p, policy, free=False), lo=1, hi=15)
        return {"user_id": b["user_id"], "booking_id": b["id"], "hotel": p["name"], "checkin": b["checkin_day"],
                "fee": fee_now(b, p)}

    def goal(self, app, p):
        return (f"Cancel {'my booking at ' + p['hotel']} arriving on {label(p['checkin'])}. I know it is late: "
                f"accept the cancellation fee.")

    def facts(self, app, p):
        return [fg("cancelled", "The booking is cancelled with the policy's fee", "status cancelled",
                   f"fee {p['fee'] / 100:.2f}")]

    def oracle(self, app, p):
        return booking_list_plan(app.world.booking(p["booking_id"])) + ["check('cancel-accept-fee')",
                                                                          "click('cancel-booking')"]

    def effect(self, app, p, start):
        return Effect((V.cancelled(p["booking_id"], "the booking", p["fee"]),))


class ChangeDates(TaskTemplate):
    id = "booking/change_dates"
    kind = "state"
    title = "Move a booking to other dates"
    policies = ("min_stay_nights", "free_cancel_days")

    def sample_with(self, app, rng, policy):
        least = policy["min_stay_nights"]
        for _ in range(500):
            b, p = pick_booking(app, rng, lambda b, p: free_under(b, p, policy) and b["nights"] >= least, lo=5, hi=300)
            shift = rng.choice((-3, -2, -1, 1, 2, 3, 7, 14))
            new = b["checkin_day"] + shift
            rt = app.world.room_type(b["room_type_id"])
            if new < 1 or new + b["nights"] > YEAR_DAYS or left(rt, new, b["nights"]) <= 0:
                continue
            if price(app, rt, new, b["nights"]) == b["total_cents"]:
                continue      # the new total must be a fact the start state does not already satisfy
            return {"user_id": b["user_id"], "booking_id": b["id"], "hotel": p["name"], "checkin": b["checkin_day"],
                    "new_checkin": new, "nights": b["nights"], "total": price(app, rt, new, b["nights"])}
        raise RuntimeError("no booking to move")

    def goal(self, app, p):
        return (f"Change {'my booking at ' + p['hotel']} arriving on {label(p['checkin'])} so that I arrive on "
                f"{label(p['new_checkin'])} and leave on {label(p['new_checkin'] + p['nights'])}.")

    def facts(self, app, p):
        return [fg("dates", "The booking has the new dates and price", f"check-in {iso(p['new_checkin'])}",
                   f"check-out {iso(p['new_checkin'] + p['nights'])}", f"new total {p['total'] / 100:.2f}",
                   "still confirmed")]

    def oracle(self, app, p):
        return booking_list_plan(app.world.booking(p["booking_id"])) + [
            f"fill('modify-checkin', {iso(p['new_checkin'])!r})",
            f"fill('modify-checkout', {iso(p['new_checkin'] + p['nights'])!r})", "click('modify-submit')"]

    def effect(self, app, p, start):
        # The nights stay as they are (any change is damage); the points follow the new total.
        return Effect((V.booking(p["booking_id"], "the booking", checkin_day=eq(p["new_checkin"]),
                                 total_cents=eq(p["total"]), points_earned=ANY),))


class ChangeGuest(TaskTemplate):
    id = "booking/change_guest"
    kind = "state"
    title = "Change the main guest of a booking"

    def sample(self, app, rng):
        b, p = pick_booking(app, rng, lambda b, p: True)
        for _ in range(20):
            g = guest_name(rng)
            if g != b["guest_name"]:
                break
        return {"user_id": b["user_id"], "booking_id": b["id"], "hotel": p["name"], "checkin": b["checkin_day"],
                "guest": g}

    def goal(self, app, p):
        return (f"{p['guest']} will stay instead of me: make them the main guest of "
                f"{'my booking at ' + p['hotel']} arriving on {label(p['checkin'])} (keep the email).")

    def facts(self, app, p):
        return [fg("guest", "The main guest is changed", f"guest {p['guest']}")]

    def oracle(self, app, p):
        return booking_list_plan(app.world.booking(p["booking_id"])) + [
            f"fill('edit-guest-name', {p['guest']!r})", "click('edit-guest-submit')"]

    def effect(self, app, p, start):
        return Effect((V.booking(p["booking_id"], "the booking", guest_name=text(p["guest"])),))


class SaveTopRated(TaskTemplate):
    id = "booking/save_top_rated"
    kind = "state"
    title = "Save a city's best-rated hotel"

    def sample(self, app, rng):
        p = TopRatedHotel().sample(app, rng)
        return p

    def goal(self, app, p):
        stars = f" with at least {p['stars']} stars" if p["stars"] else ""
        return f"Save the hotel in {p['city']}{stars} with the best guest rating to my saved hotels."

    def facts(self, app, p):
        return [fg("saved", "The top-rated hotel is saved", f"city {p['city']}", f"{p['name']} saved")]

    def oracle(self, app, p):
        acts = TopRatedHotel().oracle(app, p)[:-1]
        return acts + [f"click('hotel-{p['property_id']}')", "click('save-hotel')"]

    def effect(self, app, p, start):
        return Effect((Value(V.favorites_path(p["user_id"]), same_set([p["property_id"]]), "saved hotels"),))


class CancelAndRebook(TaskTemplate):
    id = "booking/cancel_and_rebook"
    kind = "state"
    title = "Cancel a booking and book another hotel for the same dates"
    policies = ("min_stay_nights", "free_cancel_days")

    def sample_with(self, app, rng, policy):
        least = policy["min_stay_nights"]
        for _ in range(500):
            b, old = pick_booking(app, rng, lambda b, p: free_under(b, p, policy) and b["nights"] >= least, lo=5,
                                  hi=320)
            others = [q for q in app.world.properties_in(old["city"]) if q["id"] != old["id"]]
            q = rng.choice(others) if others else None
            if q is None:
                continue
            rooms = [rt for rt in app.world.room_types_of(q["id"]) if bookable(rt, b["checkin_day"], b["nights"],
                                                                               b["guests"])]
            if not rooms:
                continue
            rt = rng.choice(rooms)
            u = app.world.user(b["user_id"])
            return {"user_id": b["user_id"], "booking_id": b["id"], "old_hotel": old["name"], "property_id": q["id"],
                    "hotel": q["name"], "city": q["city"], "room_type_id": rt["id"], "room": rt["name"],
                    "checkin": b["checkin_day"], "nights": b["nights"], "guests": b["guests"],
                    "subtotal": price(app, rt, b["checkin_day"], b["nights"]), "card_name": u["full_name"],
                    "me": u["full_name"]}
        raise RuntimeError("no booking to replace")

    def goal(self, app, p):
        return (f"I want to switch hotels: cancel my booking at {p['old_hotel']} arriving on {label(p['checkin'])}, "
                f"and book {stay_text(p)} instead, for me. {payment_text()}.")

    def facts(self, app, p):
        return [fg("cancel", "The old booking is cancelled free of charge", "old booking cancelled", "no fee"),
                stay_facts(p), fg("paid", "The new booking is confirmed", "confirmed")]

    def oracle(self, app, p):
        b = app.world.booking(p["booking_id"])
        return booking_list_plan(b) + ["click('cancel-booking')", "click('nav-home')"] + book_plan(p, card_name=p["card_name"])

    def parts(self, app, p):
        b = app.world.booking(p["booking_id"])
        rt = app.world.room_type(p["room_type_id"])
        return [
            Part(("cancel",), ("the old booking",), tuple(booking_list_plan(b) + ["click('cancel-booking')"]),
                 f"Cancel my booking at {p['old_hotel']} arriving on {label(p['checkin'])}. Do not book anything."),
            Part(("stay", "paid"), (f"a confirmed booking of the {rt['name']}",),
                 tuple(["click('nav-home')"] + book_plan(p, card_name=p["card_name"])),
                 f"Book {stay_text(p)}, for me. {payment_text()}. Keep my other bookings as they are."),
        ]

    def effect(self, app, p, start):
        rt = app.world.room_type(p["room_type_id"])
        return Effect((V.cancelled(p["booking_id"], "the old booking", 0),
                       V.new_booking(p["user_id"], rt, p["checkin"], p["nights"], p["guests"], p["me"],
                                     p["subtotal"], card=PAID_WITH)))


# ============================================================================= refusals with feasible twins

class CancelIfFree(TaskTemplate):
    id = "booking/cancel_if_free"
    kind = "mixed"
    may_refuse = True
    title = "Cancel a booking only if that is still free, else refuse"
    # Which twin an instance is depends on the site's window when it has one: the goal then states it.
    policies = ("free_cancel_days",)

    def sample_with(self, app, rng, policy):
        feasible = rng.chance(0.5)
        days = policy["free_cancel_days"]
        b, p = pick_booking(app, rng, lambda b, p: (fee_now(b, p, pol=days) == 0) == feasible, lo=1, hi=25)
        return {"user_id": b["user_id"], "booking_id": b["id"], "hotel": p["name"], "checkin": b["checkin_day"],
                "fee": fee_now(b, p, pol=days), "feasible": feasible}

    def goal(self, app, p):
        return (f"Cancel {'my booking at ' + p['hotel']} arriving on {label(p['checkin'])}, but only if it is still "
                f"free of charge.{policy_text(app, p)} If cancelling would cost a fee, leave it as it is and tell me "
                f"why.")

    def facts(self, app, p):
        if p["feasible"]:
            return [fg("cancelled", "The booking is cancelled free of charge", "status cancelled", "no fee")]
        return [fg("refusal", "The agent finds the fee and refuses", f"fee {p['fee'] / 100:.2f}",
                   "report infeasible")]

    def oracle(self, app, p):
        plan = booking_list_plan(app.world.booking(p["booking_id"]))
        if p["feasible"]:
            return plan + ["click('cancel-booking')"]
        return plan + [f"report_infeasible('Cancelling now would cost ${p['fee'] / 100:,.2f}, so I left it.')"]

    def effect(self, app, p, start):
        if p["feasible"]:
            return Effect((V.cancelled(p["booking_id"], "the booking", 0),))
        why = Reason(f"cancelling costs a fee of ${p['fee'] / 100:,.2f}",
                     ("fee*", "cost*", "charge*", "penalty", "~non-refundable", "~not free", "~no longer free",
                      "~not be free", "~isn't free", "pay*", "free cancellation period ended",
                      "free cancellation period has ended", "free cancellation ended", "free cancellation has ended",
                      "~past the free", "~after the free", "~outside the free", "~free cancellation is over"),
                     ("already cancelled", "already been cancelled", "~not found", "~no such booking", "~permission",
                      "sold out", "checked in", "already started", "tier"),
                     amounts=(p["fee"], app.world.booking(p["booking_id"])["total_cents"]))
        return Effect(refusal=Refusal((f"/account/bookings/{p['booking_id']}",), label="the booking's policy",
                                      reason=why))


class ReserveIfAvailable(TaskTemplate):
    id = "booking/reserve_if_available"
    kind = "mixed"
    may_refuse = True
    title = "Book a room if it is available for the dates, else refuse"
    policies = ("min_stay_nights",)

    def sample_with(self, app, rng, policy):
        feasible = rng.chance(0.5)

        def need(p, rt, checkin, nights, guests):
            ok = guests <= rt["capacity"] and nights >= rt["min_nights"]
            return ok and ((left(rt, checkin, nights) > 0) == feasible)

        # (a stay of at least the site's minimum: sold out is then the only reason to refuse)
        s = pick_stay(app, rng, need, min_stay=policy["min_stay_nights"])
        u = pick_user(app, rng)
        return dict(s, user_id=u["id"], feasible=feasible, card_name=u["full_name"], me=u["full_name"])

    def goal(self, app, p):
        return (f"Book {stay_text(p)} for me. {payment_text()}. If that room is not available for those dates, "
                f"book nothing and tell me why.")

    def facts(self, app, p):
        if p["feasible"]:
            return [stay_facts(p), fg("paid", "The booking is confirmed", "confirmed")]
        return [fg("refusal", "The agent finds the room sold out and refuses", f"{p['room']} sold out",
                   "report infeasible")]

    def oracle(self, app, p):
        if p["feasible"]:
            return book_plan(p, card_name=p["card_name"])
        return [f"goto({search_url(p)!r})", f"click('hotel-{p['property_id']}')",
                f"report_infeasible('The {p['room']} is sold out for those dates.')"]

    def parts(self, app, p):
        return [hold_part(p)] if p["feasible"] else []

    def effect(self, app, p, start):
        if p["feasible"]:
            rt = app.world.room_type(p["room_type_id"])
            return Effect((V.new_booking(p["user_id"], rt, p["checkin"], p["nights"], p["guests"], p["me"],
                                         p["subtotal"], card=PAID_WITH),))
        dates = urlencode({"checkin": iso(p["checkin"]), "checkout": iso(p["checkin"] + p["nights"])})
        why = Reason(f"the {p['room']} is sold out for those dates",
                     ("sold out", "~not available", "~unavailable", "~no availability", "~no rooms", "~none left",
                      "~no more rooms", "fully booked", "booked up", "~isn't available", "~no longer available",
                      "~no vacancy", "~nothing available", "0 left"),
                     ("too many guests", "~not enough beds", "minimum stay", "minimum of", "min stay",
                      "nights minimum", "maximum stay", "declined", "code", "tier", "~permission", "closed",
                      "in the past"))
        return Effect(refusal=Refusal((f"/hotels/{p['property_id']}?{dates}",),
                                      label="the hotel's rooms for those dates", reason=why))


class GoldCode(TaskTemplate):
    id = "booking/gold_code"
    kind = "mixed"
    may_refuse = True
    title = "Book with a Gold-members code if the account may use it, else refuse"
    policies = ("min_stay_nights",)

    def sample_with(self, app, rng, policy):
        feasible = rng.chance(0.5)
        for _ in range(400):
            s = pick_stay(app, rng, min_stay=policy["min_stay_nights"])
            c = _valid_code(app, s, True)
            if c is None:
                continue
            u = pick_user(app, rng, lambda u: (u["tier"] == "gold") == feasible)
            return dict(s, user_id=u["id"], code=c["code"], total=s["subtotal"] - _discount(c, s["subtotal"]),
                        feasible=feasible, card_name=u["full_name"], me=u["full_name"], tier=u["tier"])
        raise RuntimeError("no stay with a Gold code")

    def goal(self, app, p):
        return (f"Book {stay_text(p)} for me with the discount code {p['code']}. {payment_text()}. If my account "
                f"cannot use that code, book nothing and tell me why.")

    def facts(self, app, p):
        if p["feasible"]:
            return [stay_facts(p), fg("code", "The code is applied", f"code {p['code']}",
                                      f"total {p['total'] / 100:.2f}")]
        return [fg("refusal", "The agent finds the code is Gold-only and refuses", f"tier {p['tier']}",
                   "report infeasible")]

    def oracle(self, app, p):
        if p["feasible"]:
            return book_plan(p, code=p["code"], card_name=p["card_name"])
        return ["click('nav-loyalty')",
                f"report_infeasible('The code {p['code']} is for Gold members only and my tier is {p['tier']}.')"]

    def parts(self, app, p):
        return [hold_part(p)] if p["feasible"] else []

    def effect(self, app, p, start):
        if p["feasible"]:
            rt = app.world.room_type(p["room_type_id"])
            return Effect((V.new_booking(p["user_id"], rt, p["checkin"], p["nights"], p["guests"], p["me"],
                                         p["total"], code=p["code"], card=PAID_WITH),))
        other = {"member": ("silver",), "silver": ("member tier", "basic member")}.get(p["tier"], ())
        why = Reason(f"the code is for Gold members and the account is {p['tier']}", ("gold",),
                     other + ("expired", "minimum stay", "minimum total", "minimum spend", "sold out", "wrong dates",
                              "~too many guests", "~does not exist", "~doesn't exist", "~not found", "~typo",
                              "~another hotel", "~other hotels"))
        return Effect(refusal=Refusal(("/account/loyalty", "/book/payment"), label="the account's tier", reason=why))


TASKS: list[TaskTemplate] = [
    StayPrice(), PointsBalance(), ConfirmationCode(), FreeCancellationUntil(), CancellationFee(), CheapestHotel(),
    CheapestPriceInCity(), TopRatedHotel(), BookRoom(), BookWithCode(), BookWithPoints(), CancelFree(),
    CancelWithFee(), ChangeDates(), ChangeGuest(), SaveTopRated(), CancelAndRebook(), CancelIfFree(),
    ReserveIfAvailable(), GoldCode(),
]
