"""The shop's customers: users and addresses, coupons and past orders, the store's rules for
shipping and coupon discounts, and their generation (a builder mixin that :mod:`.build`
combines with the catalog's)."""
from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import orjson

from simweb.core.worlddb import Rng, WorldBuilder, seeded_password, stable_hash64

from .catalog import (
    _CATEGORY_ROWS,
    _DEPT_IDS,
    _FIRST_NAMES,
    _JSON,
    _LAST_NAMES,
    _LEAVES,
    _PRODUCT_BATCH,
    category_ancestors,
)
from .schema import APP, WORLD_DAY

#: Shipping options (insertion order = display order).  Standard shipping is
#: free when the merchandise total after discounts reaches ``free_over_cents``.
SHIPPING_METHODS: dict[str, dict[str, Any]] = {
    "standard": {"id": "standard", "name": "Standard shipping", "price_cents": 599,
                 "days_min": 5, "days_max": 7, "free_over_cents": 5000},
    "express": {"id": "express", "name": "Express shipping", "price_cents": 1499,
                "days_min": 2, "days_max": 3, "free_over_cents": None},
    "overnight": {"id": "overnight", "name": "Overnight shipping", "price_cents": 2999,
                  "days_min": 1, "days_max": 1, "free_over_cents": None},
}
FREE_SHIPPING_THRESHOLD_CENTS = 5000
#: Prices are tax-inclusive: no tax line is added at checkout.
TAX_RATE = 0.0

_STREETS = (
    "Maple", "Oak", "Cedar", "Elm", "Pine", "Willow", "Lake", "Hill", "Park", "Washington",
    "Lincoln", "Jefferson", "Madison", "Franklin", "Highland", "Sunset", "Riverside", "Meadow",
    "Chestnut", "Walnut", "Spruce", "Birch", "Aspen", "Magnolia", "Cherry", "Dogwood",
    "Laurel", "Hawthorn", "Juniper", "Sycamore", "Church", "Mill", "Main", "Orchard", "Prospect",
)
_STREET_SUFFIXES = ("St", "Ave", "Rd", "Ln", "Dr", "Ct", "Blvd", "Way", "Pl", "Ter")
_CITIES = (
    ("Portland", "OR", "972", "503"), ("Seattle", "WA", "981", "206"),
    ("Austin", "TX", "787", "512"), ("Denver", "CO", "802", "303"),
    ("Boston", "MA", "021", "617"), ("Chicago", "IL", "606", "312"),
    ("Atlanta", "GA", "303", "404"), ("Phoenix", "AZ", "850", "602"),
    ("Minneapolis", "MN", "554", "612"), ("Nashville", "TN", "372", "615"),
    ("San Diego", "CA", "921", "619"), ("Sacramento", "CA", "958", "916"),
    ("Columbus", "OH", "432", "614"), ("Madison", "WI", "537", "608"),
    ("Raleigh", "NC", "276", "919"), ("Richmond", "VA", "232", "804"),
    ("Salt Lake City", "UT", "841", "801"), ("Albuquerque", "NM", "871", "505"),
    ("Pittsburgh", "PA", "152", "412"), ("Kansas City", "MO", "641", "816"),
    ("Omaha", "NE", "681", "402"), ("Tucson", "AZ", "857", "520"),
    ("Boise", "ID", "837", "208"), ("Burlington", "VT", "054", "802"),
    ("Charleston", "SC", "294", "843"), ("Milwaukee", "WI", "532", "414"),
    ("Louisville", "KY", "402", "502"), ("New Orleans", "LA", "701", "504"),
    ("Anchorage", "AK", "995", "907"), ("Honolulu", "HI", "968", "808"),
    ("Spokane", "WA", "992", "509"), ("Providence", "RI", "029", "401"),
    ("Des Moines", "IA", "503", "515"), ("Tampa", "FL", "336", "813"),
    ("Orlando", "FL", "328", "407"), ("Savannah", "GA", "314", "912"),
    ("Ann Arbor", "MI", "481", "734"), ("Buffalo", "NY", "142", "716"),
    ("Eugene", "OR", "974", "541"), ("Fort Collins", "CO", "805", "970"),
)
_EMAIL_DOMAINS = ("example.com", "example.net", "example.org", "mail.example.com")

_COUPON_WORDS = (
    "HELLO", "SAVE", "TAKE", "EXTRA", "BONUS", "SPRING", "SUMMER", "AUTUMN", "WINTER",
    "HOLIDAY", "FLASH", "WEEKEND", "VIP", "THANKS", "LOYAL", "FRESH", "BIG", "SUPER", "MEGA",
    "TREAT", "CHEER", "SPARK", "READY", "JOY", "SNAP", "HAPPY", "SWEET", "LUCKY", "PERK",
    "GIFT", "DEAL", "SCORE",
)
_DEPT_COUPON_WORDS = ("STYLE", "KICKS", "TECH", "NEST", "READ", "TRAIL", "GLOW", "PLAY")


def shipping_cents(method: str, merchandise_cents: int) -> int:
    """Shipping cost of ``method`` for a merchandise total (after discounts)."""
    m = SHIPPING_METHODS[method]
    free_over = m["free_over_cents"]
    if free_over is not None and merchandise_cents >= free_over:
        return 0
    return int(m["price_cents"])


def coupon_discount_cents(coupon: dict[str, Any], lines: Sequence[tuple[int, int]],
                          *, day: int = WORLD_DAY) -> int:
    """Discount a coupon gives on ``lines`` = ``[(category_id, line_total_cents), ...]``.

    Returns 0 when the coupon does not apply: disabled, expired (``expires_day
    < day``), merchandise subtotal below ``min_subtotal_cents``, or no line in
    its category (a category coupon applies to that category and its
    descendants, and only to those lines).  Percent coupons round down;
    fixed ones never exceed the eligible amount.  ``one_per_user`` is the
    caller's to enforce (it needs the user's order history).
    """
    if not coupon.get("active") or coupon["expires_day"] < day:
        return 0
    subtotal = sum(total for _, total in lines)
    if subtotal < coupon["min_subtotal_cents"]:
        return 0
    cat = coupon.get("category_id")
    if cat is None:
        eligible = subtotal
    else:
        eligible = sum(total for cid, total in lines if cat in category_ancestors(cid))
    if eligible <= 0:
        return 0
    if coupon["kind"] == "percent":
        return eligible * int(coupon["value"]) // 100
    return min(int(coupon["value"]), eligible)


_ITEMS_CUM = (50, 80, 95, 100)  # 1..4 items per order
_QTY_CUM = (80, 95, 100)  # qty 1..3
_SHIP_CUM = (70, 92, 100)  # standard / express / overnight
_ADDR_CUM = (70, 92, 100)  # 1..3 addresses per user


def n_users_for(size: int) -> int:
    """Number of users in a world of ``size`` products."""
    return min(500 + size // 100, 20_000)


class CustomerBuilder(WorldBuilder):
    """The people half of the world's generation: users with addresses, coupons, and the
    order history of each user."""

    # Set by the world's builder (build.py) before generation starts.
    n_users: int
    user_created: list[int]
    user_addresses: list[list[int]]
    coupons: list[dict[str, Any]]

    # -- people -------------------------------------------------------------------

    def _users(self) -> None:
        base = stable_hash64(APP, self.seed, "users")
        seen: set[str] = set()
        user_rows: list[tuple] = []
        address_rows: list[tuple] = []
        address_id = 0
        for uid in range(1, self.n_users + 1):
            r = Rng.sub(base, uid)
            first, last = r.choice(_FIRST_NAMES), r.choice(_LAST_NAMES)
            stem = re.sub(r"[^a-z]", "", first.lower()) + "." + re.sub(r"[^a-z]", "", last.lower())
            username = stem + (str(r.randint(1, 99)) if r.below(100) < 60 else "")
            while username in seen:
                username = stem + str(r.randint(100, 9999))
            seen.add(username)
            email = f"{username}@{r.choice(_EMAIL_DOMAINS)}"
            full_name = f"{first} {last}"
            created_day = -r.randint(30, 1460)
            n_addr = 1 + r.weighted_index(_ADDR_CUM)
            ids = []
            for k in range(n_addr):
                address_id += 1
                ids.append(address_id)
                city, state, zip3, area = r.choice(_CITIES)
                street = f"{r.randint(1, 9899)} {r.choice(_STREETS)} {r.choice(_STREET_SUFFIXES)}"
                if r.below(100) < 25:
                    street += f", Apt {r.randint(1, 40)}{'ABCD'[r.below(4)]}"
                recipient = full_name
                if k > 0 and r.below(100) < 35:  # e.g. a relative's or office address
                    recipient = f"{r.choice(_FIRST_NAMES)} {last if r.below(2) else r.choice(_LAST_NAMES)}"
                address_rows.append((
                    address_id, uid, recipient, street, city, state, f"{zip3}{r.below(100):02d}",
                    "US", f"({area}) 555-01{r.below(100):02d}", k == 0,
                ))
            self.user_created.append(created_day)
            self.user_addresses.append(ids)
            user_rows.append((uid, username, email, full_name, seeded_password(APP, self.seed, uid), ids[0], created_day))
            if len(user_rows) >= _PRODUCT_BATCH:
                self.insert("users", user_rows)
                self.p.advance(len(user_rows))
                user_rows = []
        self.insert("users", user_rows)
        self.p.advance(len(user_rows))
        self.insert("addresses", address_rows)

    # -- coupons and orders ---------------------------------------------------------

    def _coupons(self) -> None:
        r = Rng.derive(APP, self.seed, "coupons")
        dept_ids = _DEPT_IDS
        names = {c[0]: c[1] for c in _CATEGORY_ROWS}
        # (word, kind, value, min_subtotal_cents, status, category_id, one_per_user)
        specs: list[tuple[str | None, str, int, int, str, int | None, bool]] = [
            ("WELCOME", "percent", 10, 0, "active", None, True),
            (None, "percent", 15, 5000, "active", None, False),
            (None, "percent", 20, 10000, "active", None, False),
            (None, "percent", 25, 20000, "active", None, True),
            (None, "fixed", 500, 3000, "active", None, False),
            (None, "fixed", 1000, 5000, "active", None, False),
            (None, "fixed", 2000, 10000, "active", None, True),
            (None, "fixed", 5000, 25000, "active", None, False),
            (None, "percent", 30, 0, "active", None, True),
            (None, "fixed", 300, 1500, "active", None, False),
            (None, "fixed", 1500, 7500, "active", None, False),
        ]
        for i, dept_id in enumerate(dept_ids):
            specs.append((_DEPT_COUPON_WORDS[i], "percent", (15, 20, 25)[r.below(3)],
                          (0, 2500)[r.below(2)], "active", dept_id, False))
        for leaf in r.sample(_LEAVES, 2):
            specs.append((None, "percent", 20, 0, "active", leaf.id, False))
        specs += [
            (None, "percent", 20, 0, "expired", None, False),
            (None, "fixed", 1000, 4000, "expired", None, False),
            (None, "percent", 40, 0, "expired", None, True),
            (None, "percent", 15, 0, "expired", r.choice(dept_ids), False),
            (None, "percent", 35, 5000, "expired", None, False),
            (None, "percent", 25, 0, "disabled", None, False),
            (None, "fixed", 1500, 5000, "disabled", None, False),
            (None, "percent", 50, 0, "disabled", None, True),
            (None, "percent", 20, 0, "disabled", r.choice(dept_ids), False),
        ]
        words = r.sample(_COUPON_WORDS, sum(1 for s in specs if s[0] is None))
        rows: list[tuple] = []
        for cid, (word, kind, value, min_sub, status, cat, once) in enumerate(specs, start=1):
            if word is None:
                word = words.pop(0)
            code = f"{word}{value if kind == 'percent' else value // 100}"
            expires = -r.randint(3, 400) if status == "expired" else r.randint(14, 365)
            what = f"{value}% off" if kind == "percent" else f"${value // 100} off"
            if cat is not None:
                what += f" {names[cat]}"
            if min_sub:
                what += f" on orders of ${min_sub // 100} or more"
            if once:
                what += " (once per customer)"
            coupon = {"id": cid, "code": code, "kind": kind, "value": value,
                      "min_subtotal_cents": min_sub, "expires_day": expires,
                      "active": status != "disabled", "category_id": cat,
                      "one_per_user": once, "description": what}
            self.coupons.append(coupon)
            rows.append(tuple(coupon.values()))
        self.insert("coupons", rows)

    def _orders(self) -> None:
        base = stable_hash64(APP, self.seed, "orders")
        pending: list[tuple[int, int, int, tuple]] = []
        methods = list(SHIPPING_METHODS)
        for uid in range(1, self.n_users + 1):
            r = Rng.sub(base, uid)
            n_orders = r.below(7)
            plans = []
            for _ in range(n_orders):
                k = 1 + r.weighted_index(_ITEMS_CUM)
                pids: list[int] = []
                while len(pids) < min(k, self.size):
                    pid = 1 + r.below(self.size)
                    if pid not in pids:
                        pids.append(pid)
                plans.append(pids)
            wanted = sorted({pid for pids in plans for pid in pids})
            info: dict[int, tuple] = {}
            if wanted:
                marks = ",".join("?" * len(wanted))
                q = f"SELECT id, name, price_cents, options, category_id FROM products WHERE id IN ({marks})"
                for row in self.db.execute(q, wanted):
                    info[row[0]] = row
            used: set[str] = set()
            for seq, pids in enumerate(plans):
                day = r.randint(self.user_created[uid] + 1, -1)
                items, lines = [], []
                subtotal = 0
                for pid in pids:
                    _, name, price, options_json, cat = info[pid]
                    opts = {kind: r.choice(vals) for kind, vals in orjson.loads(options_json).items()}
                    qty = 1 + r.weighted_index(_QTY_CUM)
                    items.append({"product_id": pid, "name": name, "options": opts, "qty": qty,
                                  "price_cents": price})
                    subtotal += price * qty
                    lines.append((cat, price * qty))
                code, discount = None, 0
                if r.below(100) < 18:
                    usable = [c for c in self.coupons
                              if not (c["one_per_user"] and c["code"] in used)
                              and coupon_discount_cents(c, lines, day=day) > 0]
                    if usable:
                        c = r.choice(usable)
                        code, discount = c["code"], coupon_discount_cents(c, lines, day=day)
                        used.add(code)
                method = methods[r.weighted_index(_SHIP_CUM)]
                shipping = shipping_cents(method, subtotal - discount)
                if r.below(100) < 4:
                    status = "cancelled"
                elif day >= -2:
                    status = "processing"
                elif day >= -7:
                    status = "shipped"
                else:
                    status = "delivered"
                row = (uid, day, status, _JSON(items), subtotal, shipping, discount,
                       subtotal - discount + shipping, method, r.choice(self.user_addresses[uid]), code)
                pending.append((day, uid, seq, row))
            self.p.advance()
        pending.sort(key=lambda t: (t[0], t[1], t[2]))  # chronological ids
        rows = [(oid, *row) for oid, (_, _, _, row) in enumerate(pending, start=1)]
        self.insert("orders", rows)
