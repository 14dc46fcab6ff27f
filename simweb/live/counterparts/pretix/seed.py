"""Seed pretix from a simweb booking payload (runs inside the counterpart's own venv).

    python seed.py payload.json

Everything is created through pretix's own models (in the pretix Django project):

* one organizer, ``Simstay`` (slug ``simstay``), its list of hotels filterable by
  city ("Destination", an event meta property), with customer accounts: every seeded
  simweb user is a verified customer (email, full name, the shared password; the simweb
  username kept as the customer's external identifier);
* a property is an event series (slug ``h<property id>``) whose front page text holds the
  city, address, rating and cancellation policy; a room type is an item (a ticket type)
  priced at its weekday rate; a night is a date of the series (named by its day as simweb writes it; check-in 15:00, check-out
  11:00 the next day) on which each item has that night's price and a quota of the rooms
  left that night;
* the policy: customers may cancel an unpaid order until ``free_cancel_days`` days before
  the date (end of that day), as in simweb; names are one "full name" field;
* a simweb booking is an order with the booking's confirmation code as its order code,
  one position on the check-in night priced at the booking's total, the main guest as the
  attendee name: confirmed -> pending payment (bank transfer), completed -> paid,
  cancelled -> cancelled. A quota counts the seeded orders on it, so its size is the
  world's rooms left plus those orders.

No mail is sent and nothing leaves the process.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import sys
from decimal import Decimal

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "simpretix_settings")
django.setup()

from django.db import transaction  # noqa: E402
from django_scopes import scopes_disabled  # noqa: E402
from i18nfield.strings import LazyI18nString  # noqa: E402
from pretix.base.models import (  # noqa: E402
    Customer,
    Event,
    EventMetaProperty,
    EventMetaValue,
    Item,
    Order,
    OrderPosition,
    Organizer,
    Quota,
    SubEvent,
    SubEventItem,
    User,
)
from pretix.base.reldate import RelativeDate, RelativeDateWrapper  # noqa: E402

UTC = dt.UTC
DAY0 = dt.date(2026, 1, 1)
STATUS = {"confirmed": Order.STATUS_PENDING, "completed": Order.STATUS_PAID, "cancelled": Order.STATUS_CANCELED}


def day(d: int) -> dt.date:
    return DAY0 + dt.timedelta(days=d)


def at(d: int, hour: int, minute: int = 0) -> dt.datetime:
    x = day(d)
    return dt.datetime(x.year, x.month, x.day, hour, minute, tzinfo=UTC)


def label(d: int) -> str:
    """A night as simweb writes its dates (``March 3, 2026``): the name of that date of the series."""
    x = day(d)
    return f"{x:%B} {x.day}, {x.year}"


def money(cents: int) -> Decimal:
    return Decimal(cents) / 100


def frontpage(p: dict) -> str:
    stars = "★" * p["stars"]
    return (f"{p['description']}\n\n{stars} · Guest rating {p['rating'] / 10:.1f} · {p['address']}, {p['country']}\n\n"
            f"Free cancellation until {p['free_cancel_days']} day{'s' if p['free_cancel_days'] != 1 else ''} "
            f"before arrival; after that, cancelling costs {p['cancel_fee_pct']}% of the total.")


def seed(payload: dict) -> None:
    password = payload["password"]
    User.objects.create_superuser("admin@simstay.example", password)   # pretix's own admin (staff)
    org = Organizer.objects.create(name=payload["organizer"]["name"], slug=payload["organizer"]["slug"])
    org.plugins = "pretix.plugins.banktransfer"   # a payment plugin is enabled on both levels
    org.save()
    org.settings.customer_accounts = True
    org.settings.customer_accounts_native = True
    org.settings.event_list_type = "list"
    org.settings.locales = ["en"]
    org.settings.locale = "en"
    org.settings.timezone = "UTC"
    web = org.sales_channels.get(identifier="web")
    # The shop's list of hotels can be filtered by city (an event meta property shown to
    # customers), as simweb's search form filters by destination.
    cities = sorted({p["city"] for p in payload["properties"]})
    city = EventMetaProperty.objects.create(
        organizer=org, name="city", public_label=LazyI18nString({"en": "Destination"}), filter_public=True,
        choices=[{"key": c, "label": {"en": c}} for c in cities])

    customers = {}
    for u in payload["users"]:
        c = Customer(organizer=org, email=u["email"], name_parts={"_scheme": "full", "full_name": u["full_name"]},
                     is_active=True, is_verified=True, external_identifier=u["username"], locale="en")
        c.set_password(password)
        c.save()
        customers[u["id"]] = c

    # Orders per (property, room type, night): they occupy quota on top of the world's rooms left.
    held: dict[tuple[int, int, int], int] = {}
    for b in payload["bookings"]:
        if b["status"] != "cancelled":
            key = (b["property_id"], b["room_type_id"], b["checkin_day"])
            held[key] = held.get(key, 0) + 1

    items: dict[int, Item] = {}
    subevents: dict[tuple[int, int], SubEvent] = {}
    events: dict[int, Event] = {}
    for p in payload["properties"]:
        nights = sorted(int(d) for d in p["nights"])
        ev = Event.objects.create(
            organizer=org, name=LazyI18nString({"en": p["name"]}), slug=f"h{p['id']}", currency="USD",
            date_from=at(nights[0], 15), has_subevents=True, live=True,
            location=LazyI18nString({"en": f"{p['address']}, {p['country']}"}),
            plugins="pretix.plugins.banktransfer,pretix.plugins.ticketoutputpdf")
        events[p["id"]] = ev
        EventMetaValue.objects.create(event=ev, property=city, value=p["city"])
        s = ev.settings
        s.locales = ["en"]
        s.locale = "en"
        s.timezone = "UTC"
        s.frontpage_text = LazyI18nString({"en": frontpage(p)})
        s.name_scheme = "full"
        s.attendee_names_asked = True
        s.attendee_names_required = True
        s.invoice_address_asked = False
        s.show_quota_left = True
        s.show_times = True
        s.show_date_to = True
        s.subevent_list_type = "list"
        s.payment_term_days = 300
        s.payment_term_expire_automatically = False
        s.cancel_allow_user = True
        s.cancel_allow_user_until = RelativeDateWrapper(RelativeDate(
            days=p["free_cancel_days"], time=dt.time(23, 59, 59), base_date_name="date_from", minutes=None))
        s.allow_modifications = "order"
        s.set("payment_banktransfer__enabled", True)
        s.set("payment_banktransfer_bank_details_type", "other")
        s.set("payment_banktransfer_bank_details", LazyI18nString({"en": "Simstay Hotels, IBAN XX00 0000 0000 0000"}))
        ev.get_payment_providers()   # pretix stores the providers' defaults the first time they are read
        for rt in p["rooms"]:
            items[rt["id"]] = Item.objects.create(
                event=ev, name=LazyI18nString({"en": rt["name"]}), default_price=money(rt["base_cents"]),
                admission=True, personalized=True, active=True, position=len(items),
                description=LazyI18nString({"en": f"Sleeps {rt['capacity']}. Minimum stay "
                                                  f"{rt['min_nights']} night{'s' if rt['min_nights'] != 1 else ''}."}))
        for d in nights:
            se = SubEvent.objects.create(event=ev, name=LazyI18nString({"en": label(d)}), active=True,
                                         date_from=at(d, 15), date_to=at(d + 1, 11))
            subevents[(p["id"], d)] = se
            for rid, night in sorted(p["nights"][str(d)].items(), key=lambda kv: int(kv[0])):
                item = items[int(rid)]
                SubEventItem.objects.create(subevent=se, item=item, price=money(night["price_cents"]))
                q = Quota.objects.create(event=ev, subevent=se, name=f"{item.name} {day(d).isoformat()}",
                                         size=night["left"] + held.get((p["id"], int(rid), d), 0))
                q.items.add(item)

    for b in payload["bookings"]:
        ev = events[b["property_id"]]
        created = at(min(b["created_day"], -1), 10)
        o = Order(event=ev, code=b["code"], status=STATUS[b["status"]], email=b["guest_email"],
                  customer=customers.get(b["user_id"]), datetime=created, expires=at(330, 23),
                  total=money(b["total_cents"]), locale="en", sales_channel=web)
        o.save()
        OrderPosition.objects.create(
            order=o, item=items[b["room_type_id"]], subevent=subevents[(b["property_id"], b["checkin_day"])],
            price=money(b["total_cents"]), positionid=1,
            attendee_name_parts={"_scheme": "full", "full_name": b["guest_name"]})
        if b["status"] == "completed":
            o.payments.create(amount=o.total, provider="banktransfer", state="confirmed", payment_date=created)
        elif b["status"] == "confirmed":
            o.payments.create(amount=o.total, provider="banktransfer", state="created", process_initiated=True)
        o.create_transactions(is_new=True)   # pretix's ledger of what an order holds


def main() -> None:
    if len(sys.argv) != 2:
        print("usage: seed.py PAYLOAD.json", file=sys.stderr)
        raise SystemExit(2)
    with open(sys.argv[1]) as f:
        payload = json.load(f)
    with scopes_disabled(), transaction.atomic():
        seed(payload)


if __name__ == "__main__":
    main()
