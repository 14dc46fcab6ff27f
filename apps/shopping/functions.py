"""Simshop's pure functions: what the spec's expressions and the templates may call.

Every function takes the evaluation context first (world + state) and declares what it
reads. World rows are merged with the runtime overlay (inserted, updated and deleted
entities) so pages always show the current backend state.
"""
from __future__ import annotations

import re
from typing import Any

from simweb.core.functions import Ctx, FunctionTable, new_rows, overlay
from simweb.core.kits.auth import add_auth_functions
from simweb.core.kits.cards import add_card_functions
from simweb.core.text import plural
from simweb.core.worlddb import day_to_date

from .world import FILTERABLE_ATTRS, SHIPPING_METHODS, category_ancestors, coupon_discount_cents, shipping_cents

FUNCTIONS = FunctionTable()
fn = FUNCTIONS.function

CART = ("runtime.carts.*",)
PRODUCTS = ("world.products", "runtime.entities.products.*")
FREE_SHIPPING_CENTS = SHIPPING_METHODS["standard"]["free_over_cents"]


# ----------------------------------------------------------------------------- entities

@FUNCTIONS.entity("products")
def _load_product(world: Any, pid: int) -> dict | None:
    return world.product(pid)


@FUNCTIONS.entity("users")
def _load_user(world: Any, uid: int) -> dict | None:
    return world.user(uid)


@FUNCTIONS.entity("orders")
def _load_order(world: Any, oid: int) -> dict | None:
    return world.order(oid)


@FUNCTIONS.entity("addresses")
def _load_address(world: Any, aid: int) -> dict | None:
    return world.address(aid)


def _overlay(ctx: Ctx, table: str) -> dict:
    return overlay(ctx.state, table)


_entity = FUNCTIONS.row


def _new_rows(ctx: Ctx, table: str) -> list[dict]:
    return new_rows(ctx.world, ctx.state, table)


@fn(reads=PRODUCTS)
def product(ctx: Ctx, pid: Any) -> dict | None:
    """A product as the shop currently has it (stock after orders), or None."""
    return _entity(ctx, "products", pid)


current_user, find_login = add_auth_functions(FUNCTIONS)   # the auth kit's (simweb/kits/auth.py)
add_card_functions(FUNCTIONS)                               # luhn_ok, card_expired, card_brand (simweb/kits/cards.py)


@fn(reads=("world.users", "runtime.entities.users.*"))
def login_taken(ctx: Ctx, username: str | None, email: str | None, except_id: int | None = None) -> str | None:
    """'username' or 'email' when another account already uses it, else None."""
    for field, value in (("username", username), ("email", email)):
        if value:
            other = find_login(ctx, value)
            if other is not None and other["id"] != except_id and other[field].casefold() == str(value).casefold():
                return field
    return None


# ----------------------------------------------------------------------------- catalogue

@fn(reads=("world.categories",))
def departments(ctx: Ctx) -> list[dict]:
    """Top-level categories, each with its subcategories under 'children'."""
    cats = ctx.world.categories()
    tops = [dict(c, children=[]) for c in cats if c["parent_id"] is None]
    by_id = {c["id"]: c for c in tops}
    for c in cats:
        if c["parent_id"] is not None and c["parent_id"] in by_id:
            by_id[c["parent_id"]]["children"].append(c)
    return tops


@fn(reads=("world.categories",))
def category(ctx: Ctx, cid: Any) -> dict | None:
    return ctx.world.category(int(cid)) if cid not in (None, "") else None


@fn(reads=("world.categories",))
def category_by_slug(ctx: Ctx, slug: str) -> dict | None:
    return ctx.world.category_by_slug(slug)


@fn(reads=("world.brands",))
def brand(ctx: Ctx, bid: Any) -> dict | None:
    return ctx.world.brand(int(bid)) if bid not in (None, "") else None


SORTS = [("relevance", "Best match"), ("price_asc", "Price: low to high"), ("price_desc", "Price: high to low"),
         ("rating", "Customer rating"), ("reviews", "Most rated"), ("newest", "Newest")]


@fn()
def sort_options(ctx: Ctx) -> list[list[str]]:
    return [list(s) for s in SORTS]


def _patch(ctx: Ctx, items: list[dict]) -> list[dict]:
    ov = _overlay(ctx, "products")
    out = []
    for p in items:
        key = str(p["id"])
        if key in ov:
            if ov[key] is None:
                continue
            p = ov[key]
        out.append(p)
    return out


def parse_attrs(selected: Any) -> dict[str, str]:
    """['material:cotton', 'fit:slim', ''] -> {'material': 'cotton', 'fit': 'slim'}; unknown
    attribute names and malformed entries are ignored, as a shop ignores junk in a URL."""
    out: dict[str, str] = {}
    for item in selected or []:
        name, sep, value = str(item).partition(":")
        if sep and value.strip() and name in FILTERABLE_ATTRS:
            out[name] = value.strip()
    return out


@fn(reads=PRODUCTS)
def search(ctx: Ctx, q: str | None = "", category: Any = None, brand: Any = None, price_min: Any = None,
           price_max: Any = None, rating: Any = None, in_stock: bool = False, sort: str | None = None,
           page: int = 1, per_page: int = 24, attrs: Any = None) -> dict:
    """Full-text search with filters (``attrs``: 'name:value' strings), sort and
    pagination (items reflect current stock)."""
    sort = sort or "relevance"
    if sort not in dict(SORTS):
        sort = "relevance"
    # Ids beyond SQLite's 64-bit range cannot name a brand: they are ignored, never a 500.
    brands = [int(b) for b in brand if str(b).isdigit() and len(str(b)) <= 18] if brand else None
    res = ctx.world.search(
        q or "", category=int(category) if category else None, brand=brands or None,
        price_min_cents=int(price_min) if price_min is not None else None,
        price_max_cents=int(price_max) if price_max is not None else None,
        rating_min=float(rating) if rating else None, in_stock=bool(in_stock), sort=sort,
        page=max(1, int(page or 1)), per_page=per_page, attrs=parse_attrs(attrs) or None)
    res = dict(res)
    items = _patch(ctx, res["items"])
    if in_stock:
        # The search index holds the world's stock; rows sold out at run time drop out
        # here (the way a shop's index lags its inventory).
        kept = [p for p in items if p["stock"] > 0]
        res["total"] = max(0, res["total"] - (len(items) - len(kept)))
        items = kept
    res["items"] = items
    return res


@fn(reads=("world.products",))
def attribute_filters(ctx: Ctx, category: Any) -> dict:
    """The attribute filters of a category's department: {name: [{value, count}]}."""
    return ctx.world.attribute_values(int(category)) if category else {}


@fn(reads=("world.products",))
def facets(ctx: Ctx, q: str | None = "", category: Any = None) -> dict:
    """Filter sidebar data: brands with counts, price ranges, ratings."""
    return ctx.world.facets(q or "", category=int(category) if category else None)


@fn(reads=PRODUCTS)
def featured(ctx: Ctx, n: int = 8) -> list[dict]:
    """Best-reviewed products across the shop (the home page's shelf)."""
    return search(ctx, "", sort="reviews", per_page=n)["items"]


@fn(reads=("world.reviews", "runtime.entities.reviews.*"))
def reviews_of(ctx: Ctx, pid: int, page: int = 1, per_page: int = 10) -> dict:
    """A product's reviews, newest first: runtime-written ones before the world's."""
    new = [r for r in reversed(_new_rows(ctx, "reviews")) if r["product_id"] == pid]
    if not new:
        return ctx.world.reviews(pid, page=page, per_page=per_page)
    page = max(1, int(page))
    start = (page - 1) * per_page
    world_total = ctx.world.reviews(pid, page=1, per_page=1)["total"]
    need = min(world_total, max(0, start + per_page - len(new)))
    fetched: list[dict] = []
    wp = 1
    while len(fetched) < need:
        chunk = ctx.world.reviews(pid, page=wp, per_page=100)["items"]
        if not chunk:
            break
        fetched += chunk
        wp += 1
    items = (new + fetched)[start:start + per_page]
    total = len(new) + world_total
    return {"total": total, "page": page, "pages": max(1, -(-total // per_page)), "items": items}


@fn(reads=("runtime.entities.reviews.*",))
def ratings(ctx: Ctx, p: dict) -> dict:
    """A product's ratings summary, ``{count, rating}``: every star rating it has (the
    catalog's count and average, which take in more ratings than the written reviews it
    stores) with the reviews written at run time added, so a review posted shows in both
    the written reviews and the summary, and no page shows a count the others contradict."""
    new = [int(r["rating"]) for r in _new_rows(ctx, "reviews") if r["product_id"] == p["id"]]
    count = int(p["review_count"])
    if not new:
        return {"count": count, "rating": p["rating"]}
    total = count + len(new)
    tenths = (round(float(p["rating"]) * 10) * count + 10 * sum(new)) * 2 + total
    return {"count": total, "rating": (tenths // (2 * total)) / 10}


@fn(reads=("world.reviews", "runtime.entities.reviews.*"))
def has_reviewed(ctx: Ctx, pid: int) -> bool:
    return ctx.user is not None and any(
        r["product_id"] == pid and r["user_id"] == ctx.user for r in _new_rows(ctx, "reviews"))


@fn(reads=("world.users", "runtime.entities.users.*"))
def user_name(ctx: Ctx, uid: Any) -> str:
    u = _entity(ctx, "users", uid)
    return u["username"] if u else "former customer"


# ----------------------------------------------------------------------------- cart

#: The key of ``runtime.carts`` under which a visitor who is not signed in keeps a cart
#: (the guest_cart policy): a state holds one browser session, so there is at most one
#: such cart, and signing in merges it into the account's (specs/shopping.yaml, sign_in).
SESSION_CART = "session"


@fn(reads=("browser.user",))
def cart_key(ctx: Ctx) -> str:
    """The key of the visitor's cart and checkout draft in the runtime: the signed-in
    user's id, or the browser session's key (``"session"``) for a visitor who is not."""
    return str(ctx.user) if ctx.user is not None else SESSION_CART


def _cart(ctx: Ctx) -> dict:
    c = ctx.state["runtime"]["carts"].get(cart_key(ctx))
    return c or {"items": [], "coupon": None}


@fn(reads=CART)
def cart(ctx: Ctx) -> dict:
    """The visitor's cart (the signed-in user's, or the session's where the site keeps
    one for visitors): {items: [{line, product_id, qty, size, color}], coupon}."""
    return _cart(ctx)


@fn(reads=CART)
def cart_count(ctx: Ctx) -> int:
    return sum(i["qty"] for i in _cart(ctx)["items"])


@fn()
def line_key(ctx: Ctx, pid: Any, size: str | None, color: str | None) -> str:
    """The cart line of a product with chosen options (same options -> same line)."""
    return f"{int(pid)}|{size or ''}|{color or ''}"


@fn(reads=CART + PRODUCTS)
def cart_lines(ctx: Ctx) -> list[dict]:
    """Cart lines with product name, unit price, line total and current stock."""
    out = []
    for item in _cart(ctx)["items"]:
        p = product(ctx, item["product_id"])
        if p is None:
            continue
        out.append({**item, "name": p["name"], "price_cents": p["price_cents"],
                    "line_cents": p["price_cents"] * item["qty"], "stock": p["stock"],
                    "category_id": p["category_id"]})
    return out


@fn(reads=CART + PRODUCTS)
def overstocked(ctx: Ctx) -> list[str]:
    """Names of products whose cart lines together ask for more than the stock."""
    want: dict[int, int] = {}
    for item in _cart(ctx)["items"]:
        want[item["product_id"]] = want.get(item["product_id"], 0) + item["qty"]
    out = []
    for pid, qty in sorted(want.items()):
        p = product(ctx, pid)
        if p is None or qty > p["stock"]:
            out.append(p["name"] if p else f"product {pid}")
    return out


@fn(reads=CART)
def cart_qty_of(ctx: Ctx, pid: Any, except_line: str | None = None) -> int:
    """Units of product ``pid`` in the cart (optionally not counting one line)."""
    return sum(i["qty"] for i in _cart(ctx)["items"] if i["product_id"] == pid and i["line"] != except_line)


msg = FUNCTIONS.message   # the sentences these functions write (simweb.core.functions.AppMessage)
COUPON_INVALID = msg("Coupon code '{code}' is not valid.")
COUPON_INACTIVE = msg("Coupon code '{code}' is no longer active.")
COUPON_EXPIRED = msg("Coupon code '{code}' expired on {day}.")
COUPON_CATEGORY = msg("Coupon code '{code}' only applies to {category} items.")
COUPON_OTHER_ITEMS = msg("Coupon code '{code}' only applies to other items.")
COUPON_MIN_SUBTOTAL = msg("Coupon code '{code}' needs a subtotal of at least {subtotal}.")
COUPON_USED = msg("You have already used coupon code '{code}'.")


@fn(reads=("world.coupons", "world.orders") + CART + PRODUCTS + ("runtime.coupon_uses.*",))
def coupon_error(ctx: Ctx, code: str | None) -> str | None:
    """Why ``code`` cannot be applied to the current cart, or None when it can."""
    if not code:
        return None
    c = ctx.world.coupon(code)
    if c is None:
        return COUPON_INVALID.format(code=code)
    if not c["active"]:
        return COUPON_INACTIVE.format(code=c["code"])
    if c["expires_day"] < ctx.today:
        return COUPON_EXPIRED.format(code=c["code"], day=day_label(ctx, c["expires_day"]))
    lines = cart_lines(ctx)
    if c["category_id"] is not None and not any(c["category_id"] in category_ancestors(line["category_id"])
                                                for line in lines):
        cat = ctx.world.category(c["category_id"])
        return COUPON_CATEGORY.format(code=c["code"], category=cat["name"]) if cat else COUPON_OTHER_ITEMS.format(code=c["code"])
    if sum(line["line_cents"] for line in lines) < c["min_subtotal_cents"]:
        return COUPON_MIN_SUBTOTAL.format(code=c["code"], subtotal=money(c["min_subtotal_cents"]))
    if c["one_per_user"] and ctx.user is not None and (
            c["code"] in ctx.state["runtime"].get("coupon_uses", {}).get(str(ctx.user), [])
            or any(o.get("coupon") == c["code"] and o["status"] != "cancelled" for o in ctx.world.orders(ctx.user))):
        return COUPON_USED.format(code=c["code"])
    return None


@fn()
def shipping_methods(ctx: Ctx) -> list[dict]:
    """The shipping options, in display order."""
    return [dict(m, days=(f"{m['days_min']} day" if m["days_min"] == m["days_max"] else
                          f"{m['days_min']}-{m['days_max']} days")) for m in SHIPPING_METHODS.values()]


@fn(reads=CART + PRODUCTS + ("world.coupons", "runtime.checkout.*"))
def cart_totals(ctx: Ctx) -> dict:
    """subtotal, discount, shipping, total (cents) of the cart with its coupon and the
    checkout's shipping method."""
    lines = cart_lines(ctx)
    subtotal = sum(line["line_cents"] for line in lines)
    code = _cart(ctx).get("coupon")
    discount = 0
    if code and coupon_error(ctx, code) is None:
        discount = coupon_discount_cents(ctx.world.coupon(code), [(line["category_id"], line["line_cents"]) for line in lines],
                                         day=ctx.today)
    co = ctx.state["runtime"]["checkout"].get(cart_key(ctx)) or {}
    method = co.get("shipping")
    shipping = shipping_cents(method, subtotal - discount) if method in SHIPPING_METHODS else 0
    return {"subtotal": subtotal, "discount": discount, "shipping": shipping,
            "total": subtotal - discount + shipping, "free_shipping_from": FREE_SHIPPING_CENTS}


# ----------------------------------------------------------------------------- account

@fn(reads=("world.addresses", "runtime.entities.addresses.*"))
def my_addresses(ctx: Ctx) -> list[dict]:
    """The signed-in user's addresses (world ones not deleted, then added ones)."""
    if ctx.user is None:
        return []
    ov = _overlay(ctx, "addresses")
    out = []
    for a in ctx.world.addresses(ctx.user):
        key = str(a["id"])
        if key in ov:
            if ov[key] is None:
                continue
            a = ov[key]
        out.append(a)
    out += [a for a in _new_rows(ctx, "addresses") if a["user_id"] == ctx.user]
    return out


@fn(reads=("world.addresses", "runtime.entities.addresses.*"))
def my_address(ctx: Ctx, aid: Any) -> dict | None:
    """One of the signed-in user's addresses (None if it is someone else's)."""
    a = _entity(ctx, "addresses", aid)
    return a if a is not None and a["user_id"] == ctx.user else None


@fn(reads=("world.orders", "runtime.entities.orders.*"))
def my_orders(ctx: Ctx) -> list[dict]:
    """The signed-in user's orders, newest first."""
    if ctx.user is None:
        return []
    ov = _overlay(ctx, "orders")
    rows = [ov.get(str(o["id"]), o) for o in ctx.world.orders(ctx.user)]
    rows += [o for o in _new_rows(ctx, "orders") if o["user_id"] == ctx.user]
    return sorted((o for o in rows if o is not None), key=lambda o: (-o["day"], -o["id"]))


@fn(reads=("world.orders", "runtime.entities.orders.*"))
def my_order(ctx: Ctx, oid: Any) -> dict | None:
    """An order of the signed-in user (None if it is someone else's: no leaking)."""
    o = _entity(ctx, "orders", oid)
    return o if o is not None and ctx.user is not None and o["user_id"] == ctx.user else None


RETURN_WINDOW_DAYS = 30


@fn()
def can_return(ctx: Ctx, order: dict | None) -> bool:
    if not order:
        return False
    return order["status"] == "delivered" and ctx.today - order["day"] <= RETURN_WINDOW_DAYS


@fn(reads=("runtime.wishlists.*",) + PRODUCTS)
def wishlist_items(ctx: Ctx) -> list[dict]:
    ids = ctx.state["runtime"]["wishlists"].get(str(ctx.user), []) if ctx.user is not None else []
    return [p for p in (product(ctx, i) for i in ids) if p is not None]


@fn(reads=("runtime.wishlists.*",))
def in_wishlist(ctx: Ctx, pid: int) -> bool:
    return ctx.user is not None and pid in ctx.state["runtime"]["wishlists"].get(str(ctx.user), [])


POSTAL_CODES = {
    "US": (r"[0-9]{5}(-[0-9]{4})?", msg("ZIP code must be 5 digits (or ZIP+4).")),
    "CA": (r"[A-Za-z][0-9][A-Za-z] ?[0-9][A-Za-z][0-9]", msg("Postal code must look like K1A 0B1.")),
    "GB": (r"[A-Za-z]{1,2}[0-9][A-Za-z0-9]? ?[0-9][A-Za-z]{2}", msg("Postcode must look like SW1A 1AA.")),
    "DE": (r"[0-9]{5}", msg("Postleitzahl must be 5 digits.")),
    "FR": (r"[0-9]{5}", msg("Code postal must be 5 digits.")),
}
NO_SHIPPING = msg("We do not ship to that country.")


@fn()
def postal_code_error(ctx: Ctx, country: str | None, code: str | None) -> str | None:
    """Why ``code`` is not a postal code of ``country``, or None when it is."""
    rule = POSTAL_CODES.get(str(country))
    if rule is None:
        return NO_SHIPPING.format()
    if not re.fullmatch(rule[0], str(code or "").strip()):
        return rule[1].format()
    return None


@fn()
def day_label(ctx: Ctx, day: Any) -> str:
    return date_label(day_to_date(int(day))) if day is not None else ""



# ----------------------------------------------------------------------------- filters

@FUNCTIONS.filter
def money(cents: Any) -> str:
    """1234 -> '$12.34'."""
    cents = int(cents or 0)
    sign = "-" if cents < 0 else ""
    return f"{sign}${abs(cents) // 100:,}.{abs(cents) % 100:02d}"


@FUNCTIONS.filter
def stars(rating: Any) -> str:
    r = float(rating or 0)
    return f"{r:.1f} out of 5"


def date_label(d: Any) -> str:
    return f"{d:%b} {d.day}, {d.year}"


FUNCTIONS.filter(plural)
