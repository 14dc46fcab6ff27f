"""Portable task families of the booking:pretix pair.

Each family is a simweb booking template whose instances (by simweb task seed) exist in
the seeded pretix shop too: the same hotels (events), rooms (items), nights (dates of the
series) with the same prices and rooms left, the same users (customers) and bookings
(orders whose code is the confirmation code). A live verifier reads pretix's database
(never the page) and returns simweb's verdict shape; the effect it claims is the rows the
task should write, and every other change outside pretix's bookkeeping is a
``collateral:`` check.

| family | kind | simweb template | live effect |
|---|---|---|---|
| stay_price | info | booking/stay_price (one-night stays) | the answer (money); nothing written |
| confirmation_code | search | booking/confirmation_code | the answer (the order code, found among the account's orders); nothing written |
| change_guest | form | booking/change_guest | the order's attendee name is the new guest; nothing else |
| book_room | flow | booking/book_room (one-night stays) | one new order of the customer: the room on that date, the guest as attendee |
| cancel_free | flow | booking/cancel_free | the order is cancelled, nothing else |
| sold_out | refusal | booking/reserve_if_available (sold-out one-night seeds) | refused; no order placed |
| cancel_too_late | refusal | booking/cancel_if_free (seeds past the free period) | refused; the order still pending |

Where the mapping is approximate: a stay is one night (one date of the series) on the
booking families, since pretix sells a date, not a range; the guest count has no field in
pretix (a room is an item for up to N guests, said in its description); simweb's card
payment is pretix's bank transfer (the order stays pending payment, which is what a
confirmed, unpaid booking is there); simweb's late-cancellation fee is pretix's deadline
after which the customer cannot cancel at all.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ..portable import (
    Instance,
    PortableFamily,
    answer_check,
    check,
    collateral,
    field_check,
    fitting_seeds,
    guard,
    refusal_check,
    verdict,
)

if TYPE_CHECKING:  # pragma: no cover
    from ..base import Counterpart
    from ..dbdiff import Change

PAIR = "booking:pretix"
ORG = "simstay"
#: How far past the wanted count ``instances`` looks for seeds that fit.
SEED_SCAN = 400


def _app() -> Any:
    from . import booking_app

    return booking_app()


def _username(user_id: int | None) -> str | None:
    return None if user_id is None else _app().world.user(user_id)["username"]


def _steps() -> Any:
    from ....agents import scripted

    return scripted


def label(day: int) -> str:
    """A day as simweb's goals write it (``March 3, 2026``)."""
    from simweb.core.worlddb import day_to_date

    d = day_to_date(day)
    return f"{d:%B} {d.day}, {d.year}"


def iso(day: int) -> str:
    from simweb.core.worlddb import day_to_date

    return day_to_date(day).isoformat()


def money_text(cents: int) -> str:
    return f"${cents / 100:,.2f}"


# ----------------------------------------------------------------------------- database reads

def customer_pk(conn: Any, username: str | None) -> int | None:
    if username is None:
        return None
    row = conn.execute("SELECT id FROM pretixbase_customer WHERE external_identifier = ?", (username,)).fetchone()
    return None if row is None else row["id"]


def event_pk(conn: Any, property_id: int) -> int | None:
    row = conn.execute("SELECT id FROM pretixbase_event WHERE slug = ?", (f"h{property_id}",)).fetchone()
    return None if row is None else row["id"]


def order_row(conn: Any, code: str) -> dict | None:
    row = conn.execute("SELECT id, code, status, event_id, customer_id, total FROM pretixbase_order WHERE code = ?",
                       (code,)).fetchone()
    return None if row is None else dict(row)


def positions(conn: Any, order_id: int) -> list[dict]:
    """An order's positions: item name, date of the series (ISO day), attendee name, price."""
    import json

    out = []
    for r in conn.execute(
            "SELECT p.id, p.item_id, p.subevent_id, p.attendee_name_parts, p.price, p.canceled, i.name AS item, "
            "s.date_from FROM pretixbase_orderposition p JOIN pretixbase_item i ON i.id = p.item_id "
            "LEFT JOIN pretixbase_subevent s ON s.id = p.subevent_id WHERE p.order_id = ? ORDER BY p.positionid",
            (order_id,)):
        try:
            parts = json.loads(r["attendee_name_parts"] or "{}")
        except ValueError:
            parts = {}
        out.append({"id": r["id"], "item": _i18n(r["item"]), "date": (r["date_from"] or "")[:10],
                    "attendee": parts.get("full_name"), "price": r["price"], "canceled": bool(r["canceled"])})
    return out


def _i18n(raw: Any) -> str:
    """pretix stores translatable names as JSON ``{"en": ...}`` (or a plain string)."""
    import json

    try:
        v = json.loads(raw)
    except (TypeError, ValueError):
        return str(raw)
    if isinstance(v, dict):
        return str(v.get("en") or next(iter(v.values()), ""))
    return str(v)


def new_orders(cp: Counterpart) -> list[dict]:
    """Orders created since pristine, each with its positions."""
    with cp.connect() as conn, cp.pristine_connect() as old:
        before = {r["id"] for r in old.execute("SELECT id FROM pretixbase_order")}
        rows = [dict(r) for r in conn.execute(
            "SELECT id, code, status, event_id, customer_id, email, total FROM pretixbase_order ORDER BY id")
            if r["id"] not in before]
        for o in rows:
            o["positions"] = positions(conn, o["id"])
    return rows


def live_collateral(cp: Counterpart, claimed: Any = None) -> list[dict]:
    """Every change outside pretix's bookkeeping that ``claimed`` does not claim."""
    _, damage = collateral(cp, lambda c: claimed is not None and claimed(c))
    return damage


# ----------------------------------------------------------------------------- shared steps

#: The hotel's page: simweb's dates form then "Check availability"; pretix lists the dates
#: of the series (each a link "Book now" / the date) instead. Optional: the other side lacks it.
def open_stay(city: str, hotel: str, checkin: int, nights: int, guests: int) -> list:
    s = _steps()
    return [
        # Both sides filter the hotels by destination: simweb's search form (then the
        # hotel's name, optional), pretix's filter of its list of events.
        s.Select(role="combobox", name="Destination", option=city),
        s.Fill(role="textbox", name=re.compile(r"^hotel name", re.I), text=hotel, optional=True),
        s.Click(role="button", name=re.compile(r"^(search|filter|apply)$", re.I)),
        s.Click(role="link", name=hotel),
        s.Fill(role="textbox", name="Check-in", text=iso(checkin), optional=True),
        s.Fill(role="textbox", name="Check-out", text=iso(checkin + nights), optional=True),
        s.Select(role="combobox", name="Guests", option=str(guests), optional=True),
        s.Click(role="button", name="Check availability", optional=True),
        # pretix: the date of the series, a link whose name holds the date.
        s.Click(role="link", name=date_link(checkin), optional=True),
    ]


def date_link(day: int) -> re.Pattern:
    """pretix names a date of the series by its weekday and date (``Tue, March 3rd, 2026``…)."""
    from simweb.core.worlddb import day_to_date

    d = day_to_date(day)
    return re.compile(rf"\b{d:%B} {d.day}(st|nd|rd|th)?,? {d.year}", re.I)


#: The guest's name field: simweb "Full name" (booking) / "Full name of the main guest"
#: (checkout); pretix "Name" (the attendee name, one field with the "full" name scheme).
GUEST_NAME = re.compile(r"^(full name|attendee name|name)( of the main guest)?$", re.I)
MY_BOOKINGS = re.compile(r"^(my bookings|your account|orders|my orders)$", re.I)


def open_booking(hotel: str, checkin: int, code: str) -> list:
    """Open one booking from the account's list (simweb: My bookings; pretix: the account's orders)."""
    s = _steps()
    return [s.Click(role="link", name=MY_BOOKINGS, optional=True),
            # simweb links a booking by its hotel's name; pretix by its order code.
            s.Click(role="link", name=re.compile(rf"^({re.escape(hotel)}|{code})$"))]


# ----------------------------------------------------------------------------- families

class BookingFamily(PortableFamily):
    """A booking:pretix family: instances are the template's first n seeds that ``fits``,
    each signed in as the simweb task's user."""

    def fits(self, params: dict) -> bool:
        return True

    def extra(self, params: dict) -> dict:
        """Entity keys the live verifier needs, beyond the simweb params."""
        return {}

    def instances(self, n: int) -> list[Instance]:
        out: list[Instance] = []
        for seed, goal, p in fitting_seeds("booking", self.sim_task, n, n + SEED_SCAN, self.fits):
            p["username"] = _username(p.get("user_id"))
            p.update(self.extra(p))
            out.append(Instance(self.id, len(out), self.sim_task, seed, goal, p["username"], p))
        if len(out) < n:
            raise RuntimeError(f"{self.id}: only {len(out)} of {n} instances in the first {n + SEED_SCAN} seeds")
        return out

    def live_start(self, inst: Instance) -> str:
        return f"/{ORG}/"


def _booking_extra(p: dict) -> dict:
    b = _app().world.booking(p["booking_id"])
    return {"code": b["code"], "room_type_id": b["room_type_id"], "property_id_of_booking": b["property_id"]}


class StayPrice(BookingFamily):
    id = f"{PAIR}/stay_price"
    kind = "info"
    sim_task = "booking/stay_price"
    description = "Look up what one night in a room costs on a date (hotel, date, read the price)"

    def fits(self, params: dict) -> bool:
        return params["nights"] == 1

    def live_verify(self, cp: Counterpart, inst: Instance, answer: str | None, refused: bool) -> dict:
        facts = [answer_check("money", answer, inst.params["subtotal"], "total price of the stay")]
        return verdict(facts, live_collateral(cp))

    def script(self, inst: Instance) -> list:
        p = inst.params
        return open_stay(p["city"], p["hotel"], p["checkin"], p["nights"], p["guests"]) + [_steps().Answer(money_text(p["subtotal"]))]


class ConfirmationCode(BookingFamily):
    id = f"{PAIR}/confirmation_code"
    kind = "search"
    sim_task = "booking/confirmation_code"
    description = "Find one booking among the account's bookings (hotel and arrival day) and read its code"

    def live_start(self, inst: Instance) -> str:
        return f"/{ORG}/account/"

    def live_verify(self, cp: Counterpart, inst: Instance, answer: str | None, refused: bool) -> dict:
        facts = [answer_check("text", answer, inst.params["code"], "confirmation code")]
        return verdict(facts, live_collateral(cp))

    def script(self, inst: Instance) -> list:
        p = inst.params
        return open_booking(p["hotel"], p["checkin"], p["code"]) + [_steps().Answer(p["code"])]


class ChangeGuest(BookingFamily):
    id = f"{PAIR}/change_guest"
    kind = "form"
    sim_task = "booking/change_guest"
    description = "Edit a booking's main guest (open the booking, change the name, save)"

    def extra(self, p: dict) -> dict:
        return _booking_extra(p)

    def live_start(self, inst: Instance) -> str:
        return f"/{ORG}/account/"

    def live_verify(self, cp: Counterpart, inst: Instance, answer: str | None, refused: bool) -> dict:
        p = inst.params
        with cp.connect() as conn:
            o = order_row(conn, p["code"])
            pos = positions(conn, o["id"]) if o else []
        names = [x["attendee"] for x in pos if not x["canceled"]]
        facts = [field_check(f"guest {p['guest']}", names[0] if len(names) == 1 else names, p["guest"], text=True)]
        pids = {x["id"] for x in pos}

        def claimed(c: Change) -> bool:
            # The name, and the position's meta data pretix rewrites on every save of it.
            return c.table == "pretixbase_orderposition" and bool(c.pk) and c.pk[0] in pids and \
                c.field in ("attendee_name_parts", "meta_info")

        return verdict(facts, live_collateral(cp, claimed))

    def script(self, inst: Instance) -> list:
        s = _steps()
        p = inst.params
        return open_booking(p["hotel"], p["checkin"], p["code"]) + [
            # pretix: the order page links to its "Change details" form.
            s.Click(role="link", name=re.compile(r"^change (ordered items|(your )?(details|information))", re.I), optional=True),
            s.Fill(role="textbox", name=GUEST_NAME, text=p["guest"]),
            s.Click(role="button", name=re.compile(r"^(save guest details|save changes|save)$", re.I))]


CARD = [("Name on card", None), ("Card number", "4111 1111 1111 1111"), ("Expiry date (MM/YY)", "12/29"),
        ("Security code", "123")]


class BookRoom(BookingFamily):
    id = f"{PAIR}/book_room"
    kind = "flow"
    sim_task = "booking/book_room"
    description = "Book a room for one night for a named guest: date, room, guest details, payment, confirm"

    def fits(self, params: dict) -> bool:
        return params["nights"] == 1

    def live_verify(self, cp: Counterpart, inst: Instance, answer: str | None, refused: bool) -> dict:
        p = inst.params
        orders = new_orders(cp)
        with cp.connect() as conn:
            me = customer_pk(conn, p["username"])
            ev = event_pk(conn, p["property_id"])
        mine = [o for o in orders if o["customer_id"] == me]
        order = mine[0] if len(mine) == 1 else None
        pos = order["positions"][0] if order and len(order["positions"]) == 1 else None
        facts = [check("one booking is placed", len(mine) == 1, f"{len(mine)} new orders of the customer"),
                 field_check(f"hotel {p['hotel']}", order and order["event_id"], ev),
                 field_check(f"room {p['room']}", pos and pos["item"], p["room"]),
                 field_check(f"check-in {iso(p['checkin'])}", pos and pos["date"], iso(p["checkin"])),
                 field_check(f"guest {p['guest']}", pos and pos["attendee"], p["guest"], text=True),
                 check("status confirmed (pending payment or paid)",
                       order is not None and order["status"] in ("n", "p"), f"status {order and order['status']!r}")]
        ids = {o["id"] for o in mine}

        def claimed(c: Change) -> bool:
            # Placing an order writes the order, its position and payment, and the
            # customer's order count.
            if c.table in ("pretixbase_order", "pretixbase_orderposition", "pretixbase_orderpayment",
                           "pretixbase_orderfee") and c.op == "insert":
                return True
            return c.table == "pretixbase_order" and bool(c.pk) and c.pk[0] in ids

        return verdict(facts, live_collateral(cp, claimed))

    def script(self, inst: Instance) -> list:
        s = _steps()
        p = inst.params
        card = [(lbl, val or p["card_name"]) for lbl, val in CARD]
        return open_stay(p["city"], p["hotel"], p["checkin"], p["nights"], p["guests"]) + [
            # simweb: a Reserve button per room; pretix: a quantity per item, then "Add to cart".
            s.Click(role="button", name="Reserve", near=("StaticText", p["room"]), optional=True),
            s.Fill(role="spinbutton", name=re.compile(rf"{re.escape(p['room'])}", re.I), text="1", optional=True),
            s.Click(role="button", name=re.compile(r"^add to cart$", re.I), optional=True),
            s.Click(role=("link", "button"), name=re.compile(r"^(proceed with checkout|checkout)$", re.I),
                    optional=True),
            # pretix: its first checkout step asks how to order (the signed-in account is chosen).
            s.Click(role="button", name="Continue", optional=True),
            s.Fill(role="textbox", name=GUEST_NAME, text=p["guest"]),
            s.Click(role="button", name=re.compile(r"^(continue to payment|continue)$", re.I)),
            s.Click(role="radio", name=re.compile(r"bank transfer", re.I), optional=True),
            *[s.Fill(role="textbox", name=lbl, text=val, optional=True) for lbl, val in card],
            s.Click(role="button", name=re.compile(r"^(review booking|continue)$", re.I)),
            s.Click(role="button", name=re.compile(r"^(confirm and pay|place binding order)", re.I))]


class CancelFree(BookingFamily):
    id = f"{PAIR}/cancel_free"
    kind = "flow"
    sim_task = "booking/cancel_free"
    description = "Cancel a booking inside its free period (open it, cancel, confirm where asked)"

    def extra(self, p: dict) -> dict:
        return _booking_extra(p)

    def live_start(self, inst: Instance) -> str:
        return f"/{ORG}/account/"

    def live_verify(self, cp: Counterpart, inst: Instance, answer: str | None, refused: bool) -> dict:
        p = inst.params
        with cp.connect() as conn:
            o = order_row(conn, p["code"])
        facts = [field_check("status cancelled", o and o["status"], "c"),
                 # Only a cancelled order can be cancelled free of charge (zero work earns nothing).
                 check("no fee", o is not None and o["status"] == "c" and _fee_free(cp, o["id"]),
                       "cancelled without a cancellation fee" if o and o["status"] == "c" else "not cancelled")]
        oid = o["id"] if o else None

        def claimed(c: Change) -> bool:
            if c.table == "pretixbase_order" and c.pk == (oid,):
                return c.field in ("status", "total", "cancellation_date")
            if c.table == "pretixbase_orderposition" and c.field == "canceled":
                return True
            return c.table == "pretixbase_orderpayment" and c.field == "state"

        return verdict(facts, live_collateral(cp, claimed))

    def script(self, inst: Instance) -> list:
        s = _steps()
        p = inst.params
        return open_booking(p["hotel"], p["checkin"], p["code"]) + [
            s.Click(role=("button", "link"), name=re.compile(r"^cancel (booking|order)$", re.I)),
            # pretix asks again on its own page.
            s.Click(role="button", name=re.compile(r"^(yes, )?cancel order$", re.I), optional=True)]


def _fee_free(cp: Counterpart, order_id: int) -> bool:
    with cp.connect() as conn:
        rows = conn.execute("SELECT fee_type, value, canceled FROM pretixbase_orderfee WHERE order_id = ?",
                            (order_id,)).fetchall()
    return not any(r["fee_type"] == "cancellation" and not r["canceled"] and float(r["value"]) > 0 for r in rows)


class SoldOut(BookingFamily):
    id = f"{PAIR}/sold_out"
    kind = "refusal"
    sim_task = "booking/reserve_if_available"
    description = "Asked to book a room that is sold out that night: look, book nothing, say so"

    def fits(self, params: dict) -> bool:
        return not params["feasible"] and params["nights"] == 1

    def live_verify(self, cp: Counterpart, inst: Instance, answer: str | None, refused: bool) -> dict:
        orders = new_orders(cp)
        facts = [guard(check(f"{inst.params['room']} sold out: nothing booked", not orders, f"{len(orders)} new orders")),
                 refusal_check(refused, answer)]
        return verdict(facts, live_collateral(cp))

    def script(self, inst: Instance) -> list:
        p = inst.params
        return open_stay(p["city"], p["hotel"], p["checkin"], p["nights"], p["guests"]) + [
            _steps().Refuse(f"The {p['room']} is sold out for those dates.")]

    def refusal_evidence(self, inst: Instance) -> tuple[str, str]:
        return f"the {inst.params['hotel']}'s dates and rooms", rf"^/{ORG}/h{inst.params['property_id']}/"


class CancelTooLate(BookingFamily):
    id = f"{PAIR}/cancel_too_late"
    kind = "refusal"
    sim_task = "booking/cancel_if_free"
    description = "Asked to cancel only if free, past the free period: open it, cancel nothing, say so"

    def fits(self, params: dict) -> bool:
        return not params["feasible"]

    def extra(self, p: dict) -> dict:
        return _booking_extra(p)

    def live_start(self, inst: Instance) -> str:
        return f"/{ORG}/account/"

    def live_verify(self, cp: Counterpart, inst: Instance, answer: str | None, refused: bool) -> dict:
        p = inst.params
        with cp.connect() as conn:
            o = order_row(conn, p["code"])
        facts = [guard(field_check("the booking is left as it is (pending)", o and o["status"], "n")),
                 refusal_check(refused, answer)]
        return verdict(facts, live_collateral(cp))

    def script(self, inst: Instance) -> list:
        p = inst.params
        return open_booking(p["hotel"], p["checkin"], p["code"]) + [
            _steps().Refuse(f"The free cancellation period is over; cancelling now would cost "
                            f"{money_text(p['fee'])}, so I left it.")]

    def refusal_evidence(self, inst: Instance) -> tuple[str, str]:
        return f"booking {inst.params['code']} (its cancellation terms)", rf"^/{ORG}/h\d+/order/{inst.params['code']}/"


FAMILIES: list[PortableFamily] = [StayPrice(), ConfirmationCode(), ChangeGuest(), BookRoom(), CancelFree(),
                                   SoldOut(), CancelTooLate()]

#: Page kinds by URL on each side, so the report compares the pages the two shops show.
PAGE_KINDS = {
    "sim": [(r"^/?(\?.*)?$", "home"), (r"^/search", "hotel list"), (r"^/hotels/\d+", "hotel: rooms"),
            (r"^/book/guest", "checkout: guest"), (r"^/book/payment", "checkout: payment"),
            (r"^/book/review", "checkout: review"), (r"^/account/bookings/\d+", "booking"),
            (r"^/account/bookings", "bookings"), (r"^/account", "account"), (r"^/login", "sign in")],
    "live": [(r"^/simstay/?(\?.*)?$", "hotel list"), (r"^/simstay/account/?(\?.*)?$", "bookings"),
             (r"^/simstay/account/login", "sign in"), (r"^/simstay/account", "account"),
             (r"^/simstay/h\d+/order/[^/]+/[^/]+/modify", "booking: edit"),
             (r"^/simstay/h\d+/order/[^/]+/[^/]+/cancel", "booking: cancel"),
             (r"^/simstay/h\d+/order/", "booking"), (r"^/simstay/h\d+/checkout/customer", "checkout: account"),
             (r"^/simstay/h\d+/checkout/questions", "checkout: guest"),
             (r"^/simstay/h\d+/checkout/payment", "checkout: payment"),
             (r"^/simstay/h\d+/checkout/confirm", "checkout: review"),
             (r"^/simstay/h\d+/\d+/", "hotel: rooms"), (r"^/simstay/h\d+/?(\?.*)?$", "hotel: dates")],
}

#: How each side shows a rejected form or an error message (matched on the page's HTML).
PAGE_ERRORS = {"sim": r'role="alert"[^>]*>([^<]*)|aria-label="Error"[^>]*>\s*<[^>]*>([^<]*)',
               "live": r'class="alert alert-danger[^"]*"[^>]*>(?:\s*<[^>]+>)*\s*([^<]+)|'
                       r'class="help-block"[^>]*>\s*<strong>([^<]+)'}

#: pretix's tables in simweb's runtime terms (``table`` for a row created or deleted,
#: ``table.field`` for an update).
STATE_MAP = {
    "pretixbase_order": "bookings", "pretixbase_orderposition": "bookings", "pretixbase_orderpayment": "bookings",
    "pretixbase_orderfee": "bookings",
    "pretixbase_order.status": "bookings.status", "pretixbase_order.cancellation_date": "bookings.cancelled_day",
    "pretixbase_orderposition.canceled": "bookings.status",
    "pretixbase_orderpayment.state": "bookings.status", "pretixbase_order.total": "bookings.total_cents",
    "pretixbase_orderposition.attendee_name_parts": "bookings.guest_name",
    "pretixbase_orderposition.meta_info": "bookings.guest_name",
    "pretixbase_customer": "users",
}
