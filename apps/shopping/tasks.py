"""Simshop's task templates.

Each template draws its parameters from the world by seed (thousands of instances per
template), states a goal, lists WebGym-style fact groups (their fact count sets the
difficulty), gives an oracle plan of BrowserGym actions, and declares its intended effect
(simweb.effects) with the shop's builders in verifiers/shopping.py: the engine derives
success, progress and collateral damage from it field by field.

Oracle plans use only what the agent sees: products are opened through the site's search
(templates only sample products that searching their name finds on the first page),
categories through the home page's links, orders through the orders list.
"""
from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from simweb.core.kits.cards import card_record
from simweb.core.worlddb import day_to_date
from simweb.judging.decompose import Part, view_part
from simweb.judging.effects import Answer, Effect, NewRow, Reason, Refusal, Row, Value, eq, text, where
from simweb.judging.tasks import FactGroup, Rng, TaskTemplate, site_policy, world_memo
from simweb.verifiers import shopping as V

from .functions import SESSION_CART, date_label, money

CARD = {"name": "Alex Morgan", "number": "4111 1111 1111 1111", "expiry": "12/29", "cvv": "123"}
#: What an order keeps of the goal's card (simweb/kits/cards.py), and what the verifier checks.
PAID_WITH = card_record(CARD["number"], CARD["expiry"], name=CARD["name"])


# ----------------------------------------------------------------------------- sampling

def _users(app: Any) -> int:
    return app.world.max_id("users")


def pick_user(app: Any, rng: Rng, need: Any = None, tries: int = 400) -> dict:
    """A world user (satisfying ``need(user)`` when given)."""
    for _ in range(tries):
        u = app.world.user(rng.randint(1, _users(app)))
        if u is not None and (need is None or need(u)):
            return u
    raise RuntimeError("no world user satisfies the task's needs; is the world too small?")


def pick_product(app: Any, rng: Rng, need: Any = None, tries: int = 2000, searchable: bool = True) -> dict:
    """A world product (satisfying ``need(product)`` when given) that, when ``searchable``,
    searching its exact name lists on the first results page (so a plan can open it as a
    shopper would, without typing its URL)."""
    top = app.world.max_id("products")
    for _ in range(tries):
        p = app.world.product(rng.randint(1, top))
        if p is not None and (need is None or need(p)) and (not searchable or findable(app, p)):
            return p
    raise RuntimeError("no world product satisfies the task's needs; is the world too small?")


def in_stock(p: dict, n: int = 3) -> bool:
    return p["stock"] >= n


def plain(p: dict) -> bool:
    """A product with no options to choose (one click adds it)."""
    return not (p["options"].get("size") or p["options"].get("color"))


def with_options(p: dict) -> bool:
    return bool(p["options"].get("size")) and bool(p["options"].get("color"))


def findable(app: Any, p: dict) -> bool:
    """Whether searching the product's exact name lists it on the first results page."""
    return _name_finds(app, p["name"], p["id"])


@world_memo
def _name_finds(app: Any, name: str, product_id: int) -> bool:
    """Whether searching ``name`` lists product ``product_id`` on the first page (a world fact)."""
    return app.world.on_first_page(name, product_id, per_page=24)


# ----------------------------------------------------------------------------- plan pieces

def open_product(app: Any, p: dict) -> list[str]:
    """Search for the product by name and open it from the results."""
    if not findable(app, p):
        raise RuntimeError(f"product {p['id']} is not found by searching its name; sample searchable products")
    return [f"fill('search-q', {p['name']!r})", "click('search-go')", f"click('product-{p['id']}')"]


def open_category(app: Any, category_id: int) -> list[str]:
    """Open a category from the home page's department list (the plan starts at /)."""
    cat = app.world.category(category_id)
    return [f"click('home-{'dept' if cat['parent_id'] is None else 'cat'}-{cat['slug']}')"]


def add_to_cart(p: dict, qty: int = 1, size: str | None = None, color: str | None = None) -> list[str]:
    acts = []
    if size:
        acts.append(f"select_option('opt-size', {size!r})")
    if color:
        acts.append(f"select_option('opt-color', {color!r})")
    if qty != 1:
        acts.append(f"fill('qty', '{qty}')")
    acts.append("click('add-to-cart')")
    return acts


def checkout(address_id: int, method: str, coupon: str | None = None) -> list[str]:
    acts = ["click('nav-cart')", "click('checkout')", f"click('addr-{address_id}')", f"click('ship-{method}')",
            "click('continue-payment')", f"fill('card-name', {CARD['name']!r})",
            f"fill('card-number', {CARD['number']!r})", f"fill('card-expiry', {CARD['expiry']!r})",
            f"fill('card-cvv', {CARD['cvv']!r})", "click('continue-review')"]
    if coupon:
        acts += [f"fill('coupon-code', {coupon!r})", "click('apply-coupon')"]
    return acts + ["click('place-order')"]


def line_bid(pid: int, size: str | None, color: str | None) -> str:
    return f"{pid}|{size or ''}|{color or ''}".replace("|", "-").replace(" ", "_")


def fg(id_: str, description: str, *facts: str) -> FactGroup:
    return FactGroup(id_, description, tuple(facts))


def category_url(slug: str, **filters: Any) -> str:
    """The address of a category's product list with these filters (a sub-task's view)."""
    return f"/c/{slug}" + (f"?{urlencode(filters)}" if filters else "")


def filtered_part(group: FactGroup, url: str, plan: list[str], what: str, *, sort_free: bool = True) -> Part:
    """The first step of a filter-then-answer (or act) template: its filtered list shown."""
    return view_part((FactGroup(group.id, "The filtered list is shown", group.facts),), url, plan,
                     f"{what} Leave that list open; nothing else is needed yet.",
                     free=("sort",) if sort_free else ())


def cart_setup(state: dict, user_id: int, items: list[tuple[int, int, str | None, str | None]]) -> None:
    """Put items (product_id, qty, size, color) in the user's cart before the task starts."""
    state["runtime"]["carts"][str(user_id)] = {
        "coupon": None,
        "items": [{"line": f"{pid}|{s or ''}|{c or ''}", "product_id": pid, "qty": q, "size": s, "color": c}
                  for pid, q, s, c in items]}


class ShopTask(TaskTemplate):
    """A Simshop template. Every signed-in task starts with the user's (empty) cart in
    the runtime, as the site writes it after an order (``{'items': [], 'coupon': None}``):
    an order that empties the cart again is then no change of the cart at all, and an
    item left behind in it is."""

    def setup(self, app, state, p):
        if self.sign_in and p.get("user_id") is not None:
            state["runtime"]["carts"].setdefault(str(p["user_id"]), {"coupon": None, "items": []})


# ============================================================================= info tasks

class ProductPrice(ShopTask):
    id = "shopping/product_price"
    kind = "info"
    title = "Look up a product's price"

    def sample(self, app, rng):
        p = pick_product(app, rng)
        return {"user_id": pick_user(app, rng)["id"], "product_id": p["id"], "name": p["name"],
                "price_cents": p["price_cents"]}

    def goal(self, app, p):
        return f"What is the current price of the “{p['name']}”? Answer with the amount in dollars."

    def facts(self, app, p):
        return [fg("price", "The answer states the product's price", f"the price is {money(p['price_cents'])}")]

    def oracle(self, app, p):
        prod = app.world.product(p["product_id"])
        return open_product(app, prod) + [f"send_msg_to_user({money(p['price_cents'])!r})"]

    def effect(self, app, p, start):
        return Effect(answer=Answer("money", p["price_cents"], "price"))


class ProductRating(ShopTask):
    id = "shopping/product_rating"
    kind = "info"
    title = "Look up how many ratings a product has"

    def sample(self, app, rng):
        # At least six reviews: most reviewed products have a handful, which would make
        # a small number ("1", "2", "5") right far too often without looking.
        p = pick_product(app, rng, lambda x: x["review_count"] >= 6)
        return {"user_id": pick_user(app, rng)["id"], "product_id": p["id"], "name": p["name"],
                "rating": p["rating"], "reviews": p["review_count"]}

    def goal(self, app, p):
        return (f"How many customer ratings does the “{p['name']}” have? Answer with the number only.")

    def facts(self, app, p):
        return [fg("reviews", "The answer gives the rating count", f"{p['reviews']} ratings")]

    def oracle(self, app, p):
        prod = app.world.product(p["product_id"])
        return open_product(app, prod) + [f"send_msg_to_user('{p['reviews']}')"]

    def effect(self, app, p, start):
        return Effect(answer=Answer("number", p["reviews"], "rating count"))


class OrderTotal(ShopTask):
    id = "shopping/order_total"
    kind = "info"
    title = "Find how much an earlier order cost"

    def sample(self, app, rng):
        u = pick_user(app, rng, lambda u: len(app.world.orders(u["id"])) > 0)
        o = rng.choice(app.world.orders(u["id"]))
        return {"user_id": u["id"], "order_id": o["id"], "total_cents": o["total_cents"]}

    def goal(self, app, p):
        return f"How much did I pay in total for order #{p['order_id']}? Answer with the dollar amount."

    def facts(self, app, p):
        return [fg("total", "The answer is the order's total", f"the total is {money(p['total_cents'])}")]

    def oracle(self, app, p):
        return ["click('nav-orders')", f"click('order-{p['order_id']}')",
                f"send_msg_to_user({money(p['total_cents'])!r})"]

    def effect(self, app, p, start):
        return Effect(answer=Answer("money", p["total_cents"], "order total"))


class LatestOrderStatus(ShopTask):
    id = "shopping/latest_order_status"
    kind = "info"
    title = "Report the status and date of the most recent order"

    def sample(self, app, rng):
        def latest_unique(u: dict) -> bool:
            days = sorted((o["day"] for o in app.world.orders(u["id"])), reverse=True)
            return bool(days) and (len(days) == 1 or days[0] != days[1])

        # Nine in ten latest orders are delivered: the status alone would be guessable,
        # so the answer also carries the date (which the orders list prints).
        u = pick_user(app, rng, latest_unique)
        latest = max(app.world.orders(u["id"]), key=lambda o: (o["day"], o["id"]))
        return {"user_id": u["id"], "order_id": latest["id"], "status": latest["status"].replace("_", " "),
                "day": latest["day"]}

    def goal(self, app, p):
        return ("What is the status of my most recent order, and on what date did I place it? "
                "Answer with the status and the date.")

    def facts(self, app, p):
        return [fg("status", "The answer is the newest order's status and date", f"the status is {p['status']}",
                   f"placed on {day_to_date(p['day']).isoformat()}")]

    def oracle(self, app, p):
        return ["click('nav-orders')", f"send_msg_to_user({p['status'] + ', ' + date_label(day_to_date(p['day']))!r})"]

    def effect(self, app, p, start):
        return Effect(checks=(V.status_and_date(p["status"], day_to_date(p["day"])),))


class CheapestInCategory(ShopTask):
    id = "shopping/cheapest_in_category"
    kind = "info"
    title = "Find the cheapest in-stock product of a brand in a category (filters and sort)"

    def sample(self, app, rng):
        for _ in range(200):
            p = pick_product(app, rng, searchable=False)
            cat = app.world.category(p["category_id"])
            # The brand must be one the category page offers as a filter (its top brands).
            if p["brand_id"] not in {b["id"] for b in app.world.facets("", category=cat["id"])["brands"]}:
                continue
            res = app.world.search("", category=cat["id"], brand=[p["brand_id"]], in_stock=True,
                                   sort="price_asc", per_page=2)
            items = res["items"]
            if res["total"] >= 2 and items[0]["price_cents"] < items[1]["price_cents"]:
                brand = app.world.brand(p["brand_id"])
                return {"user_id": pick_user(app, rng)["id"], "category_id": cat["id"], "category": cat["name"],
                        "category_slug": cat["slug"], "brand_id": brand["id"], "brand": brand["name"],
                        "product_id": items[0]["id"], "answer": items[0]["name"]}
        raise RuntimeError("no category/brand pair with a unique cheapest product")

    def goal(self, app, p):
        return (f"In the {p['category']} category, which in-stock {p['brand']} product is the cheapest? "
                f"Answer with the product's full name.")

    def facts(self, app, p):
        return [fg("filters", "The right products are considered",
                   f"category {p['category']}", f"brand {p['brand']}", "in stock only"),
                fg("answer", "The cheapest one is named", f"the answer is {p['answer']}")]

    def oracle(self, app, p):
        return open_category(app, p["category_id"]) + [
            f"check('f-brand-{p['brand_id']}')", "check('f-stock')", "select_option('f-sort', 'price_asc')",
            "click('f-apply')", f"send_msg_to_user({p['answer']!r})"]

    def parts(self, app, p):
        return [filtered_part(self.facts(app, p)[0], category_url(p["category_slug"], brand=p["brand_id"], stock=1),
                              self.oracle(app, p)[:-1],
                              f"In the {p['category']} category, show only the in-stock {p['brand']} products.")]

    def effect(self, app, p, start):
        return Effect(answer=Answer("text", p["answer"], "cheapest product"))


class CompareProducts(ShopTask):
    id = "shopping/compare_ratings"
    kind = "info"
    title = "Compare two products and name the better-rated one with its rating"
    #: the better product's rating is drawn evenly from these (the shop's ratings bunch
    #: at 4.9 and 5.0, which would make one rating a good guess)
    RATINGS = tuple(round(3.0 + i / 10, 1) for i in range(21))

    def sample(self, app, rng):
        for _ in range(200):
            r = rng.choice(self.RATINGS)
            try:
                a = pick_product(app, rng, lambda x, r=r: x["rating"] == r and x["review_count"] >= 2, tries=3000)
            except RuntimeError:
                continue
            peers = app.world.search("", category=a["category_id"], sort="reviews", per_page=100)["items"]
            peers = [x for x in peers if x["id"] != a["id"] and x["review_count"] > 0 and x["rating"] < r
                     and x["name"] != a["name"]]
            peers = [x for x in peers if findable(app, x)]
            if not peers:
                continue
            b = rng.choice(peers)
            first, second = (a, b) if rng.below(2) else (b, a)
            return {"user_id": pick_user(app, rng)["id"], "a": first["id"], "b": second["id"],
                    "a_name": first["name"], "b_name": second["name"], "answer": a["name"], "other": b["name"],
                    "rating": a["rating"]}
        raise RuntimeError("no pair of comparable products")

    def goal(self, app, p):
        return (f"Which has the higher customer rating: the “{p['a_name']}” or the “{p['b_name']}”? "
                f"Answer with the product's full name followed by its rating out of 5.")

    def facts(self, app, p):
        return [fg("ratings", "Both ratings are read", f"rating of {p['a_name']}", f"rating of {p['b_name']}"),
                fg("answer", "The better one is named", f"the answer is {p['answer']}, {p['rating']:.1f}")]

    def oracle(self, app, p):
        a, b = app.world.product(p["a"]), app.world.product(p["b"])
        return open_product(app, a) + open_product(app, b) + [
            f"send_msg_to_user({p['answer'] + ', ' + format(p['rating'], '.1f')!r})"]

    def effect(self, app, p, start):
        return Effect(checks=(V.name_and_rating(p["answer"], p["other"], p["rating"]),))


# ============================================================================= state tasks

class AddToCart(ShopTask):
    id = "shopping/add_to_cart"
    title = "Add a product to the cart"

    def sample(self, app, rng):
        p = pick_product(app, rng, lambda x: plain(x) and in_stock(x))
        return {"user_id": pick_user(app, rng)["id"], "product_id": p["id"], "name": p["name"]}

    def goal(self, app, p):
        return f"Add one “{p['name']}” to my shopping cart."

    def facts(self, app, p):
        return [fg("cart", "The cart holds the product", f"{p['name']} is in the cart", "quantity 1")]

    def oracle(self, app, p):
        return open_product(app, app.world.product(p["product_id"])) + add_to_cart(app.world.product(p["product_id"]))

    def effect(self, app, p, start):
        return Effect((V.cart_is(p["user_id"], V.cart_items(start, p["user_id"]) + [(p["product_id"], 1, None, None)]),))


class AddWithOptions(ShopTask):
    id = "shopping/add_with_options"
    title = "Add a product with a chosen size, color and quantity"

    def sample(self, app, rng):
        p = pick_product(app, rng, lambda x: with_options(x) and in_stock(x, 4))
        return {"user_id": pick_user(app, rng)["id"], "product_id": p["id"], "name": p["name"],
                "size": rng.choice(p["options"]["size"]), "color": rng.choice(p["options"]["color"]),
                "qty": rng.randint(2, 3)}

    def goal(self, app, p):
        return f"Add {p['qty']} of the “{p['name']}” in size {p['size']} and color {p['color']} to my cart."

    def facts(self, app, p):
        return [fg("item", "The right item is in the cart", f"{p['name']} in the cart", f"size {p['size']}",
                   f"color {p['color']}", f"quantity {p['qty']}")]

    def oracle(self, app, p):
        prod = app.world.product(p["product_id"])
        return open_product(app, prod) + add_to_cart(prod, p["qty"], p["size"], p["color"])

    def effect(self, app, p, start):
        want = V.cart_items(start, p["user_id"]) + [(p["product_id"], p["qty"], p["size"], p["color"])]
        return Effect((V.cart_is(p["user_id"], want),))


class RemoveFromCart(ShopTask):
    id = "shopping/remove_from_cart"
    title = "Remove one item from a cart, keeping the others"

    def sample(self, app, rng):
        ps: list[dict] = []
        while len(ps) < 3:
            p = pick_product(app, rng, lambda x: plain(x) and in_stock(x) and x["id"] not in [q["id"] for q in ps],
                             searchable=False)
            ps.append(p)
        return {"user_id": pick_user(app, rng)["id"], "products": [p["id"] for p in ps],
                "remove": ps[1]["id"], "name": ps[1]["name"]}

    def setup(self, app, state, p):
        cart_setup(state, p["user_id"], [(pid, 1, None, None) for pid in p["products"]])

    def goal(self, app, p):
        return f"Remove the “{p['name']}” from my cart. Keep everything else."

    def facts(self, app, p):
        return [fg("cart", "Only that item is gone", f"{p['name']} is not in the cart",
                   "the other items are still there")]

    def oracle(self, app, p):
        return ["click('nav-cart')", f"click('remove-{line_bid(p['remove'], None, None)}')"]

    def effect(self, app, p, start):
        keep = [i for i in V.cart_items(start, p["user_id"]) if i[0] != p["remove"]]
        return Effect((V.cart_is(p["user_id"], keep, f"the cart without {p['name']}"),))


class BuyProduct(ShopTask):
    id = "shopping/buy_product"
    title = "Buy a product with options, a shipping method and an address"

    def sample(self, app, rng):
        u = pick_user(app, rng, lambda u: len(app.world.addresses(u["id"])) >= 1)
        prod = pick_product(app, rng, lambda x: with_options(x) and in_stock(x, 4))
        addr = rng.choice(app.world.addresses(u["id"]))
        return {"user_id": u["id"], "product_id": prod["id"], "name": prod["name"],
                "size": rng.choice(prod["options"]["size"]), "color": rng.choice(prod["options"]["color"]),
                "qty": rng.randint(1, 2), "method": rng.choice(["standard", "express", "overnight"]),
                "address_id": addr["id"], "address": f"{addr['street']}, {addr['city']}"}

    def goal(self, app, p):
        n = "one" if p["qty"] == 1 else str(p["qty"])
        return (f"Buy {n} “{p['name']}” in size {p['size']} and color {p['color']}. Ship it {p['method']} "
                f"to my address at {p['address']}. Pay with the card {CARD['number']} "
                f"(expires {CARD['expiry']}, security code {CARD['cvv']}, name {CARD['name']}).")

    def facts(self, app, p):
        return [fg("item", "The right item is ordered", f"{p['name']}", f"size {p['size']}",
                   f"color {p['color']}", f"quantity {p['qty']}"),
                fg("delivery", "Delivery is as asked", f"{p['method']} shipping", f"to {p['address']}"),
                fg("order", "The order is placed", "an order is placed")]

    def oracle(self, app, p):
        prod = app.world.product(p["product_id"])
        return (open_product(app, prod) + add_to_cart(prod, p["qty"], p["size"], p["color"])
                + checkout(p["address_id"], p["method"]))

    def parts(self, app, p):
        # Checkout consumes the cart, so the first part's cart is an effect of its own.
        prod = app.world.product(p["product_id"])
        line = (p["product_id"], p["qty"], p["size"], p["color"])
        n = "one" if p["qty"] == 1 else str(p["qty"])
        item = self.facts(app, p)[0]
        cart = FactGroup(item.id, "The right item is in the cart", item.facts)
        return [Part((cart,), (), tuple(open_product(app, prod) + add_to_cart(prod, p["qty"], p["size"], p["color"])),
                     f"Put {n} “{p['name']}” in size {p['size']} and color {p['color']} in my cart. Do not check "
                     f"out yet.",
                     extra=lambda start: Effect((V.cart_is(p["user_id"], V.cart_items(start, p["user_id"]) + [line]),)))]

    def effect(self, app, p, start):
        want = [(p["product_id"], p["qty"], p["size"], p["color"])]
        return Effect((V.order_placed(p["user_id"], want, p["method"], p["address_id"], PAID_WITH),))


class BuyWithCoupon(ShopTask):
    id = "shopping/buy_with_coupon"
    title = "Buy two products using a coupon code"

    def sample(self, app, rng):
        u = pick_user(app, rng, lambda u: len(app.world.addresses(u["id"])) >= 1)
        for _ in range(400):
            a = pick_product(app, rng, lambda x: plain(x) and in_stock(x))
            b = pick_product(app, rng, lambda x, a=a: plain(x) and in_stock(x) and x["id"] != a["id"])
            code = V.usable_coupon(app, rng, [a, b])
            if code:
                addr = app.world.addresses(u["id"])[0]      # the default comes first
                return {"user_id": u["id"], "a": a["id"], "b": b["id"], "a_name": a["name"], "b_name": b["name"],
                        "coupon": code, "address_id": addr["id"], "method": "standard"}
        raise RuntimeError("no coupon applies to any sampled pair of products")

    def goal(self, app, p):
        return (f"Order one “{p['a_name']}” and one “{p['b_name']}” with standard shipping to my default "
                f"address, using coupon code {p['coupon']}. Pay with the card {CARD['number']} "
                f"(expires {CARD['expiry']}, security code {CARD['cvv']}, name {CARD['name']}).")

    def facts(self, app, p):
        return [fg("items", "Both items are ordered", p["a_name"], p["b_name"], "one of each"),
                fg("checkout", "Checkout as asked", f"coupon {p['coupon']} applied", "standard shipping",
                   "default address"),
                fg("order", "The order is placed", "an order is placed")]

    def oracle(self, app, p):
        a, b = app.world.product(p["a"]), app.world.product(p["b"])
        return (open_product(app, a) + add_to_cart(a) + open_product(app, b) + add_to_cart(b)
                + checkout(p["address_id"], "standard", p["coupon"]))

    def parts(self, app, p):
        a, b = app.world.product(p["a"]), app.world.product(p["b"])
        lines = [(p["a"], 1, None, None), (p["b"], 1, None, None)]
        items = self.facts(app, p)[0]
        cart = FactGroup(items.id, "Both items are in the cart", items.facts)
        return [Part((cart,), (), tuple(open_product(app, a) + add_to_cart(a) + open_product(app, b) + add_to_cart(b)),
                     f"Put one “{p['a_name']}” and one “{p['b_name']}” in my cart. Do not check out yet.",
                     extra=lambda start: Effect((V.cart_is(p["user_id"], V.cart_items(start, p["user_id"]) + lines),)))]

    def effect(self, app, p, start):
        want = [(p["a"], 1, None, None), (p["b"], 1, None, None)]
        return Effect((V.order_placed(p["user_id"], want, "standard", p["address_id"], PAID_WITH, p["coupon"]),))


class CancelOrder(ShopTask):
    id = "shopping/cancel_order"
    title = "Cancel an order that has not shipped"

    def sample(self, app, rng):
        u = pick_user(app, rng, lambda u: any(o["status"] == "processing" for o in app.world.orders(u["id"])),
                      tries=3000)
        o = rng.choice([o for o in app.world.orders(u["id"]) if o["status"] == "processing"])
        return {"user_id": u["id"], "order_id": o["id"]}

    def goal(self, app, p):
        return f"Cancel my order #{p['order_id']}."

    def facts(self, app, p):
        return [fg("cancel", "The order is cancelled", f"order #{p['order_id']} is cancelled")]

    def oracle(self, app, p):
        return ["click('nav-orders')", f"click('order-{p['order_id']}')", "click('cancel-order')",
                "click('confirm-cancel')"]

    def effect(self, app, p, start):
        return Effect((V.order_status(p["order_id"], "cancelled", f"order #{p['order_id']}"),))


class ReturnOrder(ShopTask):
    id = "shopping/return_order"
    title = "Request a return for a delivered order with a reason"

    REASONS = {"damaged": "it arrived damaged", "wrong_item": "it is the wrong item",
               "not_as_described": "it is not as described", "no_longer_needed": "I no longer need it"}

    def sample(self, app, rng):
        today = app.spec.clock["start_day"]
        def ok(o):
            return o["status"] == "delivered" and today - o["day"] <= 30
        u = pick_user(app, rng, lambda u: any(ok(o) for o in app.world.orders(u["id"])), tries=3000)
        o = rng.choice([o for o in app.world.orders(u["id"]) if ok(o)])
        return {"user_id": u["id"], "order_id": o["id"], "reason": rng.choice(sorted(self.REASONS))}

    def goal(self, app, p):
        return f"Return order #{p['order_id']} because {self.REASONS[p['reason']]}."

    def facts(self, app, p):
        return [fg("return", "A return is requested as asked", f"return requested for #{p['order_id']}",
                   f"reason: {p['reason'].replace('_', ' ')}")]

    def oracle(self, app, p):
        return ["click('nav-orders')", f"click('order-{p['order_id']}')", "click('return-order')",
                f"select_option('return-reason', {p['reason']!r})", "click('confirm-return')"]

    def effect(self, app, p, start):
        return Effect((V.order_status(p["order_id"], "return_requested", f"order #{p['order_id']}",
                                      return_reason=p["reason"]),), checks=(V.no_return_comment(p["order_id"]),))


STREETS = ["12 Harbor Lane", "480 Maple Avenue", "77 Quarry Road", "5 Juniper Court", "301 Bayview Drive"]
CITIES = [("Portland", "OR", "97205"), ("Madison", "WI", "53703"), ("Savannah", "GA", "31401"),
          ("Boulder", "CO", "80302"), ("Tucson", "AZ", "85701")]


class AddAddress(ShopTask):
    id = "shopping/add_address"
    title = "Add a new shipping address (form filling)"

    def sample(self, app, rng):
        u = pick_user(app, rng, lambda u: len(app.world.addresses(u["id"])) < 10)
        city, state, zip_ = rng.choice(CITIES)
        return {"user_id": u["id"], "full_name": u["full_name"], "street": rng.choice(STREETS), "city": city,
                "state": state, "zip": zip_, "default": rng.below(2) == 1}

    def goal(self, app, p):
        extra = " and make it my default address" if p["default"] else ""
        return (f"Add a new address to my account: {p['full_name']}, {p['street']}, {p['city']}, "
                f"{p['state']} {p['zip']}, United States{extra}.")

    def facts(self, app, p):
        facts = [f"name {p['full_name']}", f"street {p['street']}", f"city {p['city']}", f"state {p['state']}",
                 f"ZIP {p['zip']}", "country US"]
        if p["default"]:
            facts.append("it is the default address")
        return [fg("address", "The address is saved as given", *facts)]

    def oracle(self, app, p):
        acts = ["click('nav-account')", "click('acct-addresses')", f"fill('addr-name', {p['full_name']!r})",
                f"fill('addr-street', {p['street']!r})", f"fill('addr-city', {p['city']!r})",
                f"fill('addr-state', {p['state']!r})", f"fill('addr-zip', {p['zip']!r})",
                "select_option('addr-country', 'US')"]
        if p["default"]:
            acts.append("check('addr-make-default')")
        return acts + ["click('addr-submit')"]

    def effect(self, app, p, start):
        targets: tuple = (V.new_address(p["user_id"], p),)
        if p["default"]:
            targets += (V.default_is_new_address(app, p["user_id"], start),)
        return Effect(targets)


class UpdateProfile(ShopTask):
    id = "shopping/update_profile"
    title = "Change the account email and newsletter preference"

    def sample(self, app, rng):
        u = pick_user(app, rng)
        return {"user_id": u["id"], "email": f"{u['username'].lower()}.{rng.randint(10, 99)}@mailbox.example",
                "newsletter": True}

    def goal(self, app, p):
        return f"Change my account email to {p['email']} and subscribe me to the deals newsletter."

    def facts(self, app, p):
        return [fg("profile", "The settings are saved", f"email is {p['email']}", "newsletter on")]

    def oracle(self, app, p):
        return ["click('nav-account')", "click('acct-settings')", f"fill('set-email', {p['email']!r})",
                "check('set-newsletter')", "click('set-profile-save')"]

    def effect(self, app, p, start):
        return Effect((Row("users", p["user_id"], {"email": eq(p["email"].lower())}, "my account"),
                       Value(f"prefs.{p['user_id']}.newsletter", eq(True), "the newsletter preference")))


class ChangePassword(ShopTask):
    id = "shopping/change_password"
    title = "Change the account password"

    def sample(self, app, rng):
        u = pick_user(app, rng)
        return {"user_id": u["id"], "old": u["password"], "new": f"Sunrise-{rng.randint(1000, 9999)}!"}

    def goal(self, app, p):
        return f"My password is {p['old']}. Change it to {p['new']}."

    def facts(self, app, p):
        return [fg("password", "The password is changed", f"new password {p['new']}")]

    def oracle(self, app, p):
        return ["click('nav-account')", "click('acct-settings')", f"fill('pw-current', {p['old']!r})",
                f"fill('pw-new', {p['new']!r})", f"fill('pw-confirm', {p['new']!r})", "click('pw-save')"]

    def effect(self, app, p, start):
        return Effect((Row("users", p["user_id"], {"password": eq(p["new"])}, "my account"),))


class RegisterAccount(ShopTask):
    id = "shopping/register"
    title = "Create a new account"
    sign_in = False
    FIRST = ["Robin", "Casey", "Jordan", "Avery", "Quinn", "Rowan", "Emerson", "Sage"]
    LAST = ["Okafor", "Lindqvist", "Marchetti", "Haddad", "Nakamura", "Delacroix", "Brennan", "Ivanova"]

    def sample(self, app, rng):
        first, last = rng.choice(self.FIRST), rng.choice(self.LAST)
        n = rng.randint(100, 999)
        return {"user_id": None, "full_name": f"{first} {last}", "username": f"{first.lower()}{last.lower()}{n}",
                "email": f"{first.lower()}.{last.lower()}{n}@mailbox.example", "password": f"Maple-{n}-tree"}

    def goal(self, app, p):
        return (f"Create a Simshop account for {p['full_name']} with username {p['username']}, "
                f"email {p['email']} and password {p['password']}.")

    def facts(self, app, p):
        return [fg("account", "The account exists as asked", f"name {p['full_name']}", f"username {p['username']}",
                   f"email {p['email']}", "the given password")]

    def oracle(self, app, p):
        return ["click('nav-register')", f"fill('reg-name', {p['full_name']!r})",
                f"fill('reg-username', {p['username']!r})", f"fill('reg-email', {p['email']!r})",
                f"fill('reg-password', {p['password']!r})", f"fill('reg-confirm', {p['password']!r})",
                "click('reg-submit')"]

    def effect(self, app, p, start):
        return Effect((NewRow("users", {"username": eq(p["username"]), "full_name": text(p["full_name"]),
                                        "email": eq(p["email"].lower()), "password": eq(p["password"])},
                              f"the account {p['username']}"),))


class WishlistAdd(ShopTask):
    id = "shopping/wishlist_add"
    title = "Save a product to the wishlist"

    def sample(self, app, rng):
        p = pick_product(app, rng)
        return {"user_id": pick_user(app, rng)["id"], "product_id": p["id"], "name": p["name"]}

    def goal(self, app, p):
        return f"Save the “{p['name']}” to my wishlist."

    def facts(self, app, p):
        return [fg("wishlist", "The product is in the wishlist", f"{p['name']} in the wishlist")]

    def oracle(self, app, p):
        return open_product(app, app.world.product(p["product_id"])) + ["click('add-to-wishlist')"]

    def effect(self, app, p, start):
        have = start["runtime"]["wishlists"].get(str(p["user_id"])) or []
        return Effect((V.wishlist_is(p["user_id"], [*have, p["product_id"]]),))


class WriteReview(ShopTask):
    id = "shopping/write_review"
    title = "Write a product review (form with validation)"
    TITLES = ["Does the job", "Better than expected", "Solid value", "Not quite right", "Would buy again"]

    def sample(self, app, rng):
        p = pick_product(app, rng)
        rating = rng.randint(1, 5)
        return {"user_id": pick_user(app, rng)["id"], "product_id": p["id"], "name": p["name"], "rating": rating,
                "title": rng.choice(self.TITLES), "body": f"I have used it for {rng.randint(2, 9)} weeks now and "
                f"it holds up well for everyday use."}

    def goal(self, app, p):
        return (f"Write a {p['rating']}-star review of the “{p['name']}” titled “{p['title']}” with the text: "
                f"{p['body']}")

    def facts(self, app, p):
        return [fg("review", "The review is posted as asked", f"{p['rating']} stars", f"title {p['title']}",
                   "the given text", f"about {p['name']}")]

    def oracle(self, app, p):
        return open_product(app, app.world.product(p["product_id"])) + [
            "click('write-review')", f"select_option('review-rating', '{p['rating']}')",
            f"fill('review-title', {p['title']!r})", f"fill('review-body', {p['body']!r})", "click('review-submit')"]

    def effect(self, app, p, start):
        return Effect((NewRow("reviews", {"product_id": eq(p["product_id"]), "user_id": eq(p["user_id"]),
                                          "rating": eq(p["rating"]), "title": text(p["title"]),
                                          "body": text(p["body"])}, "the review"),))


class FilteredPurchase(ShopTask):
    id = "shopping/best_rated_under"
    title = "Search with filters and sort, then add the best-rated match to the cart"

    def sample(self, app, rng):
        for _ in range(300):
            seed_p = pick_product(app, rng, lambda x: plain(x) and in_stock(x), searchable=False)
            cap = ((seed_p["price_cents"] * 3 // 2) // 100 + 1) * 100
            cat = app.world.category(seed_p["category_id"])
            res = app.world.search("", category=cat["id"], price_max_cents=cap, in_stock=True, sort="rating",
                                   per_page=2)
            items = res["items"]
            top = items[0] if items else None
            if (top is not None and len(items) == 2 and plain(top) and in_stock(top)
                    and (top["rating"], top["review_count"]) > (items[1]["rating"], items[1]["review_count"])):
                return {"user_id": pick_user(app, rng)["id"], "category_id": cat["id"], "category": cat["name"],
                        "category_slug": cat["slug"], "max_cents": cap, "product_id": items[0]["id"],
                        "name": items[0]["name"]}
        raise RuntimeError("no category with a unique best-rated plain product under a price cap")

    def goal(self, app, p):
        return (f"Find the highest-rated in-stock product in the {p['category']} category that costs at most "
                f"{money(p['max_cents'])} (if several share the top rating, the one with the most ratings), "
                f"and add one to my cart.")

    def facts(self, app, p):
        return [fg("search", "The right products are compared", f"category {p['category']}",
                   f"price at most {money(p['max_cents'])}", "in stock", "highest rating"),
                fg("cart", "It is added to the cart", "that product is in the cart", "quantity 1")]

    def oracle(self, app, p):
        return open_category(app, p["category_id"]) + [
            f"fill('f-max', '{p['max_cents'] // 100}')", "check('f-stock')", "select_option('f-sort', 'rating')",
            "click('f-apply')", f"click('product-{p['product_id']}')", "click('add-to-cart')"]

    def parts(self, app, p):
        cap = p["max_cents"]
        return [filtered_part(self.facts(app, p)[0],
                              category_url(p["category_slug"], max=f"{cap // 100}.{cap % 100:02d}", stock=1, sort="rating"),
                              self.oracle(app, p)[:-2],
                              f"In the {p['category']} category, list the in-stock products that cost at most "
                              f"{money(cap)}, highest rated first.", sort_free=False)]

    def effect(self, app, p, start):
        want = V.cart_items(start, p["user_id"]) + [(p["product_id"], 1, None, None)]
        return Effect((V.cart_is(p["user_id"], want, f"the cart with one {p['name']}"),))


class CartCleanup(ShopTask):
    id = "shopping/cart_and_wishlist"
    title = "Several goals: change a quantity, remove an item, save another to the wishlist"

    def sample(self, app, rng):
        ps: list[dict] = []
        while len(ps) < 3:
            ps.append(pick_product(app, rng, lambda x: plain(x) and in_stock(x, 5) and x["id"] not in [q["id"] for q in ps],
                                   searchable=False))
        return {"user_id": pick_user(app, rng)["id"], "products": [p["id"] for p in ps],
                "names": [p["name"] for p in ps], "qty": rng.randint(2, 4)}

    def setup(self, app, state, p):
        cart_setup(state, p["user_id"], [(pid, 1, None, None) for pid in p["products"]])

    def goal(self, app, p):
        a, b, c = p["names"]
        return (f"In my cart, change the quantity of “{a}” to {p['qty']} and remove “{b}”. Also save “{c}” to my "
                f"wishlist but keep it in the cart.")

    def facts(self, app, p):
        a, b, c = p["names"]
        return [fg("quantity", "Quantity changed", f"{a} quantity {p['qty']}"),
                fg("remove", "Item removed", f"{b} not in the cart"),
                fg("wishlist", "Saved for later", f"{c} in the wishlist", f"{c} still in the cart")]

    def oracle(self, app, p):
        a, b, c = p["products"]
        return ["click('nav-cart')", f"fill('qty-{line_bid(a, None, None)}', '{p['qty']}')",
                f"click('update-{line_bid(a, None, None)}')", f"click('remove-{line_bid(b, None, None)}')",
                f"click('cart-item-{line_bid(c, None, None)}')", "click('add-to-wishlist')"]

    def effect(self, app, p, start):
        # Two facts on the one cart, each false at the start and each holding only while
        # every line it does not name is as it was: another product or more units of
        # one fail both.
        a, b = ((pid, None, None) for pid in p["products"][:2])
        uid = p["user_id"]
        others = {k: q for k, q in V.cart_lines_of(V.cart_items(start, uid)).items() if k not in (a, b)}
        def rest(ls):
            return {k: q for k, q in ls.items() if k not in (a, b)}
        wl = start["runtime"]["wishlists"].get(str(uid)) or []
        return Effect((
            V.cart_where(uid, lambda ls: ls.get(a) == p["qty"] and rest(ls) == others,
                         f"holds {p['qty']} of {a[0]}, the rest as it was", f"the quantity of {p['names'][0]}"),
            V.cart_where(uid, lambda ls: b not in ls and rest(ls) == others,
                         f"holds no {b[0]}, the rest as it was", f"{p['names'][1]} removed from the cart"),
            V.wishlist_is(uid, [*wl, p["products"][2]])))


class OrderDate(ShopTask):
    id = "shopping/order_date"
    kind = "info"
    title = "Find when an order containing a given product was placed (date answer)"

    def sample(self, app, rng):
        def unique_items(u: dict) -> list[tuple[dict, dict]]:
            """(order, item) pairs whose product appears in no other order of the user."""
            orders = app.world.orders(u["id"])
            count: dict[str, int] = {}
            for o in orders:
                for name in {i["name"] for i in o["items"]}:
                    count[name] = count.get(name, 0) + 1
            return [(o, i) for o in orders for i in o["items"] if count[i["name"]] == 1]

        u = pick_user(app, rng, lambda u: bool(unique_items(u)))
        o, item = rng.choice(unique_items(u))
        return {"user_id": u["id"], "order_id": o["id"], "product": item["name"], "day": o["day"]}

    def goal(self, app, p):
        return (f"On what date did I place the order that included the “{p['product']}”? "
                f"Answer with the date, e.g. March 5, 2026.")

    def facts(self, app, p):
        return [fg("order", "The right order is found", f"order #{p['order_id']}"),
                fg("date", "Its date is given", f"placed on {day_to_date(p['day']).isoformat()}")]

    def oracle(self, app, p):
        d = day_to_date(p["day"])
        return ["click('nav-orders')", f"click('order-{p['order_id']}')",
                f"send_msg_to_user('{d:%B} {d.day}, {d.year}')"]

    def effect(self, app, p, start):
        return Effect(answer=Answer("date", day_to_date(p["day"]), "order date"))


class AvailableColors(ShopTask):
    id = "shopping/available_colors"
    kind = "info"
    title = "List the colors a product comes in (set answer)"

    def sample(self, app, rng):
        p = pick_product(app, rng, lambda x: len(x["options"].get("color") or []) >= 2)
        return {"user_id": pick_user(app, rng)["id"], "product_id": p["id"], "name": p["name"],
                "colors": list(p["options"]["color"])}

    def goal(self, app, p):
        return f"Which colors is the “{p['name']}” available in? List them all, separated by commas."

    def facts(self, app, p):
        return [fg("colors", "Every color is listed, nothing else", *(f"color {c}" for c in p["colors"]))]

    def oracle(self, app, p):
        return open_product(app, app.world.product(p["product_id"])) + [
            f"send_msg_to_user({', '.join(p['colors'])!r})"]

    def effect(self, app, p, start):
        return Effect(answer=Answer("set", p["colors"], "colors"))


_GONE = ("shipped", "dispatched", "sent out", "left the warehouse")
_NOT_THAT = ("still processing", "already cancelled", "already been cancelled", "return requested", "out of stock",
             "~not found", "~no such order", "~permission", "~not allowed to cancel")
#: Why an order cannot be cancelled any more, by its status: a delivered order has shipped
#: too, but a shipped one has not arrived.
_CANCEL_REASONS = {
    "shipped": Reason("the order has shipped", _GONE + ("in transit", "on its way", "out for delivery"),
                      _NOT_THAT + ("delivered", "arrived", "received")),
    "delivered": Reason("the order has been delivered", _GONE + ("delivered", "arrived", "received"),
                        _NOT_THAT + ("in transit", "on its way", "out for delivery")),
}


class CancelIfPossible(ShopTask):
    """Cancel an order if the shop still allows it. About half the instances name an
    order that is still processing (cancel it); the others one that has shipped or been
    delivered (refuse, after viewing the order's status). The goal reads the same."""

    id = "shopping/cancel_shipped_order"
    kind = "mixed"
    may_refuse = True
    title = "Cancel an order, or refuse when it has already shipped"

    def sample(self, app, rng):
        feasible = rng.below(2) == 1
        ok = (lambda o: o["status"] == "processing") if feasible else (lambda o: o["status"] in ("shipped", "delivered"))
        # Processing orders are few (the newest of some users): look further for them.
        u = pick_user(app, rng, lambda u: any(ok(o) for o in app.world.orders(u["id"])), tries=3000)
        o = rng.choice([o for o in app.world.orders(u["id"]) if ok(o)])
        return {"user_id": u["id"], "order_id": o["id"], "status": o["status"], "feasible": feasible}

    def goal(self, app, p):
        return (f"Cancel my order #{p['order_id']}. If it cannot be cancelled any more, tell me why "
                f"(use report_infeasible) and change nothing.")

    def facts(self, app, p):
        if p["feasible"]:
            return [fg("cancel", "The order is cancelled", f"order #{p['order_id']} is cancelled")]
        return [fg("refusal", "The request is recognised as impossible",
                   f"order #{p['order_id']} is already {p['status']}", "it is reported as infeasible")]

    def oracle(self, app, p):
        acts = ["click('nav-orders')", f"click('order-{p['order_id']}')"]
        if p["feasible"]:
            return acts + ["click('cancel-order')", "click('confirm-cancel')"]   # the episode ends at success
        return acts + [f"report_infeasible('Order #{p['order_id']} has already been {p['status']}; "
                       f"it can no longer be cancelled.')"]

    def effect(self, app, p, start):
        if p["feasible"]:
            return Effect((V.order_status(p["order_id"], "cancelled", f"order #{p['order_id']}"),))
        # The orders list and the order's own page both print its status.
        return Effect(refusal=Refusal(("/account/orders*",), "the order's status (orders list or order page)",
                                      reason=_CANCEL_REASONS[p["status"]]))


class CheapestWithAttribute(ShopTask):
    id = "shopping/cheapest_with_attribute"
    kind = "info"
    title = "Find the cheapest in-stock product with a given attribute (attribute filter, sort)"

    def sample(self, app, rng):
        leaves = [c for c in app.world.categories() if c["parent_id"] is not None]
        for _ in range(300):
            cat = rng.choice(leaves)
            attrs = app.world.attribute_values(cat["id"])
            if not attrs:
                continue
            name = rng.choice(sorted(attrs))
            value = rng.choice(attrs[name])["value"]
            res = app.world.search("", category=cat["id"], attrs={name: value}, in_stock=True, sort="price_asc",
                                   per_page=2)
            items = res["items"]
            if len(items) == 2 and items[0]["price_cents"] < items[1]["price_cents"]:
                return {"user_id": pick_user(app, rng)["id"], "category": cat["name"], "category_slug": cat["slug"],
                        "category_id": cat["id"], "attr": name, "value": value, "product_id": items[0]["id"],
                        "answer": items[0]["name"]}
        raise RuntimeError("no category/attribute value with a unique cheapest in-stock product")

    def goal(self, app, p):
        what = p["attr"].replace("_", " ")
        return (f"Among the in-stock products in the {p['category']} category whose {what} is "
                f"“{p['value']}”, which one is the cheapest? Answer with its full name.")

    def facts(self, app, p):
        return [fg("filters", "The right products are considered", f"category {p['category']}",
                   f"{p['attr']} {p['value']}", "in stock only"),
                fg("answer", "The cheapest is named", f"the answer is {p['answer']}")]

    def oracle(self, app, p):
        return open_category(app, p["category_id"]) + [
            f"select_option('f-attr-{p['attr']}', '{p['attr']}:{p['value']}')", "check('f-stock')",
            "select_option('f-sort', 'price_asc')", "click('f-apply')", f"send_msg_to_user({p['answer']!r})"]

    def parts(self, app, p):
        what = p["attr"].replace("_", " ")
        return [filtered_part(self.facts(app, p)[0],
                              category_url(p["category_slug"], attr=f"{p['attr']}:{p['value']}", stock=1),
                              self.oracle(app, p)[:-1],
                              f"In the {p['category']} category, show only the in-stock products whose {what} is "
                              f"“{p['value']}”.")]

    def effect(self, app, p, start):
        return Effect(answer=Answer("text", p["answer"], "cheapest matching product"))


class GuestOrder(ShopTask):
    """An order by a shopper who has no account. The shop's ``guest_checkout`` policy
    (docs/variants.md, "Policies") decides how: where it allows checking out as a guest, the
    goal asks for exactly that (no account created: an order with no user, the goal's email
    and the address typed at checkout); on a shop that needs an account to check out
    (today's, and one that only keeps a guest's cart), the goal says so and asks to create
    the account first and order under it, to the address saved in it. Either way the goal
    is achievable as written and states what the site asks for."""

    id = "shopping/guest_order"
    title = "Order a product without an account (as a guest where the shop allows it)"
    sign_in = False
    policies = ("guest_checkout",)

    def sample_with(self, app, rng, policy):
        prod = pick_product(app, rng, lambda x: plain(x) and in_stock(x))
        first, last = rng.choice(RegisterAccount.FIRST), rng.choice(RegisterAccount.LAST)
        n = rng.randint(100, 999)
        city, state, zip_ = rng.choice(CITIES)
        return {"user_id": None, "product_id": prod["id"], "name": prod["name"],
                "method": rng.choice(["standard", "express", "overnight"]),
                "full_name": f"{first} {last}", "username": f"{first.lower()}{last.lower()}{n}",
                "email": f"{first.lower()}.{last.lower()}{n}@mailbox.example", "password": f"Maple-{n}-tree",
                "street": rng.choice(STREETS), "city": city, "state": state, "zip": zip_}

    @staticmethod
    def as_guest(app: Any, p: dict) -> bool:
        """Whether the instance's shop lets a visitor check out without an account."""
        return bool(site_policy(app, p, "guest_checkout"))

    @staticmethod
    def address(p: dict) -> dict[str, str]:
        return {"full_name": p["full_name"], "street": p["street"], "city": p["city"], "state": p["state"],
                "zip": p["zip"], "country": "US"}

    def goal(self, app, p):
        to = f"{p['full_name']}, {p['street']}, {p['city']}, {p['state']} {p['zip']}, United States"
        pay = (f"Pay with the card {CARD['number']} (expires {CARD['expiry']}, security code {CARD['cvv']}, "
               f"name {CARD['name']}).")
        if self.as_guest(app, p):
            return (f"I have no account on this shop and do not want one: it lets you check out as a guest, so "
                    f"buy one “{p['name']}” as a guest, without signing in or creating an account. Give the "
                    f"email {p['email']} and ship it {p['method']} to {to}. {pay}")
        return (f"I have no account on this shop, and it needs one to check out. Create an account for "
                f"{p['full_name']} with username {p['username']}, email {p['email']} and password "
                f"{p['password']}, save the address {to} in it, then buy one “{p['name']}” shipped "
                f"{p['method']} to that address. {pay}")

    def facts(self, app, p):
        delivery = fg("delivery", "Delivery is as asked", f"{p['method']} shipping",
                      f"to {p['street']}, {p['city']}")
        item = fg("item", "The right item is ordered", p["name"], "quantity 1")
        if self.as_guest(app, p):
            return [item, fg("guest", "Checked out as a guest as asked", f"email {p['email']}", f"{p['method']} shipping",
                             f"to {p['street']}, {p['city']}", "no account created")]
        return [fg("account", "The account exists as asked", f"username {p['username']}", f"email {p['email']}",
                   "the given password"), item, delivery, fg("order", "The order is placed", "an order is placed")]

    def oracle(self, app, p):
        prod = app.world.product(p["product_id"])
        pay = ["click('continue-payment')", f"fill('card-name', {CARD['name']!r})",
               f"fill('card-number', {CARD['number']!r})", f"fill('card-expiry', {CARD['expiry']!r})",
               f"fill('card-cvv', {CARD['cvv']!r})", "click('continue-review')", "click('place-order')"]
        if self.as_guest(app, p):
            return (open_product(app, prod) + add_to_cart(prod)
                    + ["click('nav-cart')", "click('checkout')", f"fill('guest-email', {p['email']!r})",
                       f"fill('guest-name', {p['full_name']!r})", f"fill('guest-street', {p['street']!r})",
                       f"fill('guest-city', {p['city']!r})", f"fill('guest-state', {p['state']!r})",
                       f"fill('guest-zip', {p['zip']!r})", "select_option('guest-country', 'US')",
                       f"click('ship-{p['method']}')"] + pay)
        # the account's one address is the one the shipping page has chosen
        return (["click('nav-register')", f"fill('reg-name', {p['full_name']!r})",
                 f"fill('reg-username', {p['username']!r})", f"fill('reg-email', {p['email']!r})",
                 f"fill('reg-password', {p['password']!r})", f"fill('reg-confirm', {p['password']!r})",
                 "click('reg-submit')", "click('acct-addresses')", f"fill('addr-name', {p['full_name']!r})",
                 f"fill('addr-street', {p['street']!r})", f"fill('addr-city', {p['city']!r})",
                 f"fill('addr-state', {p['state']!r})", f"fill('addr-zip', {p['zip']!r})",
                 "select_option('addr-country', 'US')", "click('addr-submit')"]
                + open_product(app, prod) + add_to_cart(prod)
                + ["click('nav-cart')", "click('checkout')", f"click('ship-{p['method']}')"] + pay)

    def parts(self, app, p):
        # As a guest: the session cart first (checkout consumes it, so it is an effect of
        # its own). Otherwise: the account first, the one step no later one undoes.
        plan = self.oracle(app, p)
        if self.as_guest(app, p):
            prod = app.world.product(p["product_id"])
            line = (p["product_id"], 1, None, None)
            item = self.facts(app, p)[0]
            cart = FactGroup(item.id, "The product is in the cart", item.facts)
            return [Part((cart,), (), tuple(open_product(app, prod) + add_to_cart(prod)),
                         f"Without signing in or creating an account, put one “{p['name']}” in the cart of this "
                         f"shop. Do not check out yet.",
                         extra=lambda start: Effect((V.cart_is(SESSION_CART, [line], "the session cart"),)))]
        return [Part(("account",), ("users",), tuple(plan[:plan.index("click('reg-submit')") + 1]),
                     f"Create an account on this shop for {p['full_name']} with username {p['username']}, email "
                     f"{p['email']} and password {p['password']}. Do not buy anything yet.")]

    def effect(self, app, p, start):
        want = [(p["product_id"], 1, None, None)]
        if self.as_guest(app, p):
            return Effect((V.guest_order_placed(p["email"], self.address(p), want, p["method"], PAID_WITH),))
        # The account the goal asks for is the one new user (another is collateral), so
        # the order and the address must be that account's: the first id past the start's.
        uid = app.world.max_id("users") + int(start["runtime"]["counters"].get("users", 0)) + 1
        account = NewRow("users", {"username": eq(p["username"]), "full_name": text(p["full_name"]),
                                   "email": eq(p["email"].lower()), "password": eq(p["password"])},
                         f"the account {p['username']}")
        addr = {**V.new_address(uid, p).where, "country": eq("US")}
        top = app.world.max_id("addresses") + int(start["runtime"]["counters"].get("addresses", 0))
        order = V.order_placed(uid, want, p["method"], 0, PAID_WITH)
        fields = {**order.where, "address_id": where(lambda v: isinstance(v, int) and v > top,
                                                     f"the account's new address (id > {top})")}
        # What the order leaves of the new account's cart: empty, as the site writes it.
        cart = Value(f"carts.{uid}", where(lambda v: v is None or v == {"items": [], "coupon": None},
                                           "empty after the order"), "the new account's cart", weight=0.0)
        return Effect((account, NewRow("addresses", addr, "the account's address"),
                       NewRow("orders", fields, order.label, weight=order.weight), cart))


TASKS: list[TaskTemplate] = [
    ProductPrice(), ProductRating(), OrderTotal(), LatestOrderStatus(), CheapestInCategory(), CompareProducts(),
    AddToCart(), AddWithOptions(), RemoveFromCart(), BuyProduct(), BuyWithCoupon(), CancelOrder(), ReturnOrder(),
    AddAddress(), UpdateProfile(), ChangePassword(), RegisterAccount(), WishlistAdd(), WriteReview(),
    FilteredPurchase(), CartCleanup(), OrderDate(), AvailableColors(), CancelIfPossible(),
    CheapestWithAttribute(), GuestOrder(),
]
