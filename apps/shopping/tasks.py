"""Simshop's task templates.

Each template draws its parameters from the world by seed (thousands of instances per
template), states a goal, lists WebGym-style fact groups (their fact count sets the
difficulty), gives an oracle plan of BrowserGym actions, and verifies with the functions
in verifiers/shopping.py.
"""
from __future__ import annotations

from typing import Any

from simweb.tasks import FactGroup, Rng, TaskTemplate
from simweb.worlddb import day_to_date
from simweb.verifiers import shopping as V

from .functions import money

CARD = {"name": "Alex Morgan", "number": "4111 1111 1111 1111", "expiry": "12/29", "cvv": "123"}
SIGNED_IN_PATHS = ()


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


def pick_product(app: Any, rng: Rng, need: Any = None, tries: int = 2000) -> dict:
    """A world product (satisfying ``need(product)`` when given)."""
    top = app.world.max_id("products")
    for _ in range(tries):
        p = app.world.product(rng.randint(1, top))
        if p is not None and (need is None or need(p)):
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
    res = app.world.search(p["name"], per_page=24)
    return any(i["id"] == p["id"] for i in res["items"])


# ----------------------------------------------------------------------------- plan pieces

def open_product(app: Any, p: dict) -> list[str]:
    """Search for the product by name and open it (or type its URL if search can't find it)."""
    if findable(app, p):
        return [f"fill('search-q', {p['name']!r})", "click('search-go')", f"click('product-{p['id']}')"]
    return [f"goto('/p/{p['id']}')"]


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


def cart_setup(state: dict, user_id: int, items: list[tuple[int, int, str | None, str | None]]) -> None:
    """Put items (product_id, qty, size, color) in the user's cart before the task starts."""
    state["runtime"]["carts"][str(user_id)] = {
        "coupon": None,
        "items": [{"line": f"{pid}|{s or ''}|{c or ''}", "product_id": pid, "qty": q, "size": s, "color": c}
                  for pid, q, s, c in items]}


# ============================================================================= info tasks

class ProductPrice(TaskTemplate):
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

    def verify(self, app, p, start, final, answer):
        return V.verify_money_answer(start, final, answer, p["price_cents"], "price")


class ProductRating(TaskTemplate):
    id = "shopping/product_rating"
    kind = "info"
    title = "Look up a product's rating and review count"

    def sample(self, app, rng):
        p = pick_product(app, rng, lambda x: x["review_count"] > 0)
        return {"user_id": pick_user(app, rng)["id"], "product_id": p["id"], "name": p["name"],
                "rating": p["rating"], "reviews": p["review_count"]}

    def goal(self, app, p):
        return (f"How many customer reviews does the “{p['name']}” have? Answer with the number only.")

    def facts(self, app, p):
        return [fg("reviews", "The answer gives the review count", f"{p['reviews']} reviews")]

    def oracle(self, app, p):
        prod = app.world.product(p["product_id"])
        return open_product(app, prod) + [f"send_msg_to_user('{p['reviews']}')"]

    def verify(self, app, p, start, final, answer):
        return V.verify_number_answer(start, final, answer, p["reviews"], "review count")


class OrderTotal(TaskTemplate):
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

    def verify(self, app, p, start, final, answer):
        return V.verify_money_answer(start, final, answer, p["total_cents"], "order total")


class LatestOrderStatus(TaskTemplate):
    id = "shopping/latest_order_status"
    kind = "info"
    title = "Report the status and date of the most recent order"

    def sample(self, app, rng):
        u = pick_user(app, rng, lambda u: len(app.world.orders(u["id"])) > 0)
        latest = sorted(app.world.orders(u["id"]), key=lambda o: (-o["day"], -o["id"]))[0]
        return {"user_id": u["id"], "order_id": latest["id"], "status": latest["status"].replace("_", " ")}

    def goal(self, app, p):
        return "What is the status of my most recent order? Answer with the status only (for example: shipped)."

    def facts(self, app, p):
        return [fg("status", "The answer is the newest order's status", f"the status is {p['status']}")]

    def oracle(self, app, p):
        return ["click('nav-orders')", f"send_msg_to_user({p['status']!r})"]

    def verify(self, app, p, start, final, answer):
        return V.verify_text_answer(start, final, answer, p["status"], "status")


class CheapestInCategory(TaskTemplate):
    id = "shopping/cheapest_in_category"
    kind = "info"
    title = "Find the cheapest in-stock product of a brand in a category (filters and sort)"

    def sample(self, app, rng):
        for _ in range(200):
            p = pick_product(app, rng)
            cat = app.world.category(p["category_id"])
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
        return [f"goto('/c/{p['category_slug']}')", f"check('f-brand-{p['brand_id']}')", "check('f-stock')",
                "select_option('f-sort', 'price_asc')", "click('f-apply')",
                f"send_msg_to_user({p['answer']!r})"]

    def verify(self, app, p, start, final, answer):
        return V.verify_text_answer(start, final, answer, p["answer"], "cheapest product")


class CompareProducts(TaskTemplate):
    id = "shopping/compare_ratings"
    kind = "info"
    title = "Compare two products and name the better-rated one"

    def sample(self, app, rng):
        for _ in range(50):
            a = pick_product(app, rng, lambda x: x["review_count"] > 0)
            # A rival from the same category with a different rating (small categories
            # may have none within a few draws: then start again with another product).
            peers = app.world.search("", category=a["category_id"], sort="reviews", per_page=100)["items"]
            peers = [x for x in peers if x["id"] != a["id"] and x["review_count"] > 0 and x["rating"] != a["rating"]]
            if not peers:
                continue
            b = rng.choice(peers)
            best = a if a["rating"] > b["rating"] else b
            return {"user_id": pick_user(app, rng)["id"], "a": a["id"], "b": b["id"], "a_name": a["name"],
                    "b_name": b["name"], "answer": best["name"], "rating": best["rating"]}
        raise RuntimeError("no pair of comparable products")

    def goal(self, app, p):
        return (f"Which has the higher customer rating: the “{p['a_name']}” or the “{p['b_name']}”? "
                f"Answer with the product's full name.")

    def facts(self, app, p):
        return [fg("ratings", "Both ratings are read", f"rating of {p['a_name']}", f"rating of {p['b_name']}"),
                fg("answer", "The better one is named", f"the answer is {p['answer']}")]

    def oracle(self, app, p):
        a, b = app.world.product(p["a"]), app.world.product(p["b"])
        return open_product(app, a) + open_product(app, b) + [f"send_msg_to_user({p['answer']!r})"]

    def verify(self, app, p, start, final, answer):
        return V.verify_text_answer(start, final, answer, p["answer"], "better-rated product")


# ============================================================================= state tasks

class AddToCart(TaskTemplate):
    id = "shopping/add_to_cart"
    title = "Add a product to the cart"

    def sample(self, app, rng):
        p = pick_product(app, rng, lambda x: plain(x) and in_stock(x))
        return {"user_id": pick_user(app, rng)["id"], "product_id": p["id"], "name": p["name"]}

    def goal(self, app, p):
        return f"Add one “{p['name']}” to my shopping cart."

    def facts(self, app, p):
        return [fg("cart", "The cart holds the product", f"{p['name']} is in the cart", "quantity 1")]

    allowed = ("runtime.carts.{user_id}",)

    def oracle(self, app, p):
        return open_product(app, app.world.product(p["product_id"])) + add_to_cart(app.world.product(p["product_id"]))

    def verify(self, app, p, start, final, answer):
        return V.verify_cart(app, start, final, p["user_id"], [(p["product_id"], 1, None, None)],
                             self.allowed_paths(app, p))


class AddWithOptions(TaskTemplate):
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

    allowed = ("runtime.carts.{user_id}",)

    def oracle(self, app, p):
        prod = app.world.product(p["product_id"])
        return open_product(app, prod) + add_to_cart(prod, p["qty"], p["size"], p["color"])

    def verify(self, app, p, start, final, answer):
        return V.verify_cart(app, start, final, p["user_id"], [(p["product_id"], p["qty"], p["size"], p["color"])],
                             self.allowed_paths(app, p))


class RemoveFromCart(TaskTemplate):
    id = "shopping/remove_from_cart"
    title = "Remove one item from a cart, keeping the others"

    def sample(self, app, rng):
        ps = []
        while len(ps) < 3:
            p = pick_product(app, rng, lambda x: plain(x) and in_stock(x) and x["id"] not in [q["id"] for q in ps])
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

    allowed = ("runtime.carts.{user_id}",)

    def oracle(self, app, p):
        return ["click('nav-cart')", f"click('remove-{line_bid(p['remove'], None, None)}')"]

    def verify(self, app, p, start, final, answer):
        keep = [(pid, 1, None, None) for pid in p["products"] if pid != p["remove"]]
        return V.verify_cart_removal(app, start, final, p["user_id"], p["remove"], keep, self.allowed_paths(app, p))


class BuyProduct(TaskTemplate):
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

    allowed = ("runtime.carts.{user_id}", "runtime.checkout.{user_id}", "runtime.entities.orders",
               "runtime.counters.orders", "runtime.entities.products.{product_id}")

    def oracle(self, app, p):
        prod = app.world.product(p["product_id"])
        return (open_product(app, prod) + add_to_cart(prod, p["qty"], p["size"], p["color"])
                + checkout(p["address_id"], p["method"]))

    def verify(self, app, p, start, final, answer):
        return V.verify_order(app, start, final, p["user_id"], [(p["product_id"], p["qty"], p["size"], p["color"])],
                              method=p["method"], address_id=p["address_id"], coupon=None,
                              allowed=self.allowed_paths(app, p))


class BuyWithCoupon(TaskTemplate):
    id = "shopping/buy_with_coupon"
    title = "Buy two products using a coupon code"

    def sample(self, app, rng):
        u = pick_user(app, rng, lambda u: len(app.world.addresses(u["id"])) >= 1)
        for _ in range(400):
            a = pick_product(app, rng, lambda x: plain(x) and in_stock(x))
            b = pick_product(app, rng, lambda x: plain(x) and in_stock(x) and x["id"] != a["id"])
            code = V.usable_coupon(app, rng, [a, b])
            if code:
                addr = app.world.addresses(u["id"])[0]
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

    allowed = ("runtime.carts.{user_id}", "runtime.checkout.{user_id}", "runtime.entities.orders",
               "runtime.counters.orders", "runtime.entities.products.{a}", "runtime.entities.products.{b}",
               "runtime.coupon_uses.{user_id}")

    def oracle(self, app, p):
        a, b = app.world.product(p["a"]), app.world.product(p["b"])
        return (open_product(app, a) + add_to_cart(a) + open_product(app, b) + add_to_cart(b)
                + checkout(p["address_id"], "standard", p["coupon"]))

    def verify(self, app, p, start, final, answer):
        return V.verify_order(app, start, final, p["user_id"], [(p["a"], 1, None, None), (p["b"], 1, None, None)],
                              method="standard", address_id=p["address_id"], coupon=p["coupon"],
                              allowed=self.allowed_paths(app, p))


class CancelOrder(TaskTemplate):
    id = "shopping/cancel_order"
    title = "Cancel an order that has not shipped"

    def sample(self, app, rng):
        u = pick_user(app, rng, lambda u: any(o["status"] == "processing" for o in app.world.orders(u["id"])))
        o = rng.choice([o for o in app.world.orders(u["id"]) if o["status"] == "processing"])
        return {"user_id": u["id"], "order_id": o["id"]}

    def goal(self, app, p):
        return f"Cancel my order #{p['order_id']}."

    def facts(self, app, p):
        return [fg("cancel", "The order is cancelled", f"order #{p['order_id']} is cancelled")]

    allowed = ("runtime.entities.orders.{order_id}", "runtime.entities.products")

    def oracle(self, app, p):
        return ["click('nav-orders')", f"click('order-{p['order_id']}')", "click('cancel-order')",
                "click('confirm-cancel')"]

    def verify(self, app, p, start, final, answer):
        return V.verify_order_status(app, start, final, p["order_id"], {"status": "cancelled"},
                                     self.allowed_paths(app, p))


class ReturnOrder(TaskTemplate):
    id = "shopping/return_order"
    title = "Request a return for a delivered order with a reason"

    REASONS = {"damaged": "it arrived damaged", "wrong_item": "it is the wrong item",
               "not_as_described": "it is not as described", "no_longer_needed": "I no longer need it"}

    def sample(self, app, rng):
        today = app.spec.clock["start_day"]
        ok = lambda o: o["status"] == "delivered" and today - o["day"] <= 30
        u = pick_user(app, rng, lambda u: any(ok(o) for o in app.world.orders(u["id"])), tries=3000)
        o = rng.choice([o for o in app.world.orders(u["id"]) if ok(o)])
        return {"user_id": u["id"], "order_id": o["id"], "reason": rng.choice(sorted(self.REASONS))}

    def goal(self, app, p):
        return f"Return order #{p['order_id']} because {self.REASONS[p['reason']]}."

    def facts(self, app, p):
        return [fg("return", "A return is requested as asked", f"return requested for #{p['order_id']}",
                   f"reason: {p['reason'].replace('_', ' ')}")]

    allowed = ("runtime.entities.orders.{order_id}",)

    def oracle(self, app, p):
        return ["click('nav-orders')", f"click('order-{p['order_id']}')", "click('return-order')",
                f"select_option('return-reason', {p['reason']!r})", "click('confirm-return')"]

    def verify(self, app, p, start, final, answer):
        return V.verify_order_status(app, start, final, p["order_id"],
                                     {"status": "return_requested", "return_reason": p["reason"]},
                                     self.allowed_paths(app, p))


STREETS = ["12 Harbor Lane", "480 Maple Avenue", "77 Quarry Road", "5 Juniper Court", "301 Bayview Drive"]
CITIES = [("Portland", "97205"), ("Madison", "53703"), ("Savannah", "31401"), ("Boulder", "80302"), ("Tucson", "85701")]


class AddAddress(TaskTemplate):
    id = "shopping/add_address"
    title = "Add a new shipping address (form filling)"

    def sample(self, app, rng):
        u = pick_user(app, rng)
        city, zip_ = rng.choice(CITIES)
        return {"user_id": u["id"], "full_name": u["full_name"], "street": rng.choice(STREETS), "city": city,
                "zip": zip_, "default": rng.below(2) == 1}

    def goal(self, app, p):
        extra = " and make it my default address" if p["default"] else ""
        return (f"Add a new address to my account: {p['full_name']}, {p['street']}, {p['city']}, "
                f"ZIP {p['zip']}, United States{extra}.")

    def facts(self, app, p):
        facts = [f"name {p['full_name']}", f"street {p['street']}", f"city {p['city']}", f"ZIP {p['zip']}",
                 "country US"]
        if p["default"]:
            facts.append("it is the default address")
        return [fg("address", "The address is saved as given", *facts)]

    allowed = ("runtime.entities.addresses", "runtime.counters.addresses", "runtime.prefs.{user_id}")

    def oracle(self, app, p):
        acts = ["click('nav-account')", "click('acct-addresses')", f"fill('addr-name', {p['full_name']!r})",
                f"fill('addr-street', {p['street']!r})", f"fill('addr-city', {p['city']!r})",
                f"fill('addr-zip', {p['zip']!r})", "select_option('addr-country', 'US')"]
        if p["default"]:
            acts.append("check('addr-make-default')")
        return acts + ["click('addr-submit')"]

    def verify(self, app, p, start, final, answer):
        return V.verify_new_address(app, start, final, p, self.allowed_paths(app, p))


class UpdateProfile(TaskTemplate):
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

    allowed = ("runtime.entities.users.{user_id}", "runtime.prefs.{user_id}")

    def oracle(self, app, p):
        return ["click('nav-account')", "click('acct-settings')", f"fill('set-email', {p['email']!r})",
                "check('set-newsletter')", "click('set-profile-save')"]

    def verify(self, app, p, start, final, answer):
        return V.verify_profile(app, start, final, p, self.allowed_paths(app, p))


class ChangePassword(TaskTemplate):
    id = "shopping/change_password"
    title = "Change the account password"

    def sample(self, app, rng):
        u = pick_user(app, rng)
        return {"user_id": u["id"], "old": u["password"], "new": f"Sunrise-{rng.randint(1000, 9999)}!"}

    def goal(self, app, p):
        return f"My password is {p['old']}. Change it to {p['new']}."

    def facts(self, app, p):
        return [fg("password", "The password is changed", f"new password {p['new']}")]

    allowed = ("runtime.entities.users.{user_id}",)

    def oracle(self, app, p):
        return ["click('nav-account')", "click('acct-settings')", f"fill('pw-current', {p['old']!r})",
                f"fill('pw-new', {p['new']!r})", f"fill('pw-confirm', {p['new']!r})", "click('pw-save')"]

    def verify(self, app, p, start, final, answer):
        return V.verify_password(app, start, final, p, self.allowed_paths(app, p))


class RegisterAccount(TaskTemplate):
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

    allowed = ("runtime.entities.users", "runtime.counters.users")

    def oracle(self, app, p):
        return ["click('nav-register')", f"fill('reg-name', {p['full_name']!r})",
                f"fill('reg-username', {p['username']!r})", f"fill('reg-email', {p['email']!r})",
                f"fill('reg-password', {p['password']!r})", f"fill('reg-confirm', {p['password']!r})",
                "click('reg-submit')"]

    def verify(self, app, p, start, final, answer):
        return V.verify_registration(app, start, final, p, self.allowed_paths(app, p))


class WishlistAdd(TaskTemplate):
    id = "shopping/wishlist_add"
    title = "Save a product to the wishlist"

    def sample(self, app, rng):
        p = pick_product(app, rng)
        return {"user_id": pick_user(app, rng)["id"], "product_id": p["id"], "name": p["name"]}

    def goal(self, app, p):
        return f"Save the “{p['name']}” to my wishlist."

    def facts(self, app, p):
        return [fg("wishlist", "The product is in the wishlist", f"{p['name']} in the wishlist")]

    allowed = ("runtime.wishlists.{user_id}",)

    def oracle(self, app, p):
        return open_product(app, app.world.product(p["product_id"])) + ["click('add-to-wishlist')"]

    def verify(self, app, p, start, final, answer):
        return V.verify_wishlist(app, start, final, p["user_id"], add=[p["product_id"]], remove=[],
                                 allowed=self.allowed_paths(app, p))


class WriteReview(TaskTemplate):
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

    allowed = ("runtime.entities.reviews", "runtime.counters.reviews")

    def oracle(self, app, p):
        return open_product(app, app.world.product(p["product_id"])) + [
            "click('write-review')", f"select_option('review-rating', '{p['rating']}')",
            f"fill('review-title', {p['title']!r})", f"fill('review-body', {p['body']!r})", "click('review-submit')"]

    def verify(self, app, p, start, final, answer):
        return V.verify_review(app, start, final, p, self.allowed_paths(app, p))


class FilteredPurchase(TaskTemplate):
    id = "shopping/best_rated_under"
    title = "Search with filters and sort, then add the best-rated match to the cart"

    def sample(self, app, rng):
        for _ in range(300):
            seed_p = pick_product(app, rng, lambda x: plain(x) and in_stock(x))
            cap = ((seed_p["price_cents"] * 3 // 2) // 100 + 1) * 100
            cat = app.world.category(seed_p["category_id"])
            res = app.world.search("", category=cat["id"], price_max_cents=cap, in_stock=True, sort="rating",
                                   per_page=2)
            items = res["items"]
            top = items[0] if items else None
            if (len(items) == 2 and plain(top) and in_stock(top)
                    and (top["rating"], top["review_count"]) > (items[1]["rating"], items[1]["review_count"])):
                return {"user_id": pick_user(app, rng)["id"], "category_id": cat["id"], "category": cat["name"],
                        "category_slug": cat["slug"], "max_cents": cap, "product_id": items[0]["id"],
                        "name": items[0]["name"]}
        raise RuntimeError("no category with a unique best-rated plain product under a price cap")

    def goal(self, app, p):
        return (f"Find the highest-rated in-stock product in the {p['category']} category that costs at most "
                f"{money(p['max_cents'])} (if several share the top rating, the one with the most reviews), "
                f"and add one to my cart.")

    def facts(self, app, p):
        return [fg("search", "The right products are compared", f"category {p['category']}",
                   f"price at most {money(p['max_cents'])}", "in stock", "highest rating"),
                fg("cart", "It is added to the cart", "that product is in the cart", "quantity 1")]

    allowed = ("runtime.carts.{user_id}",)

    def oracle(self, app, p):
        return [f"goto('/c/{p['category_slug']}')", f"fill('f-max', '{p['max_cents'] // 100}')", "check('f-stock')",
                "select_option('f-sort', 'rating')", "click('f-apply')", f"click('product-{p['product_id']}')",
                "click('add-to-cart')"]

    def verify(self, app, p, start, final, answer):
        return V.verify_cart(app, start, final, p["user_id"], [(p["product_id"], 1, None, None)],
                             self.allowed_paths(app, p))


class CartCleanup(TaskTemplate):
    id = "shopping/cart_and_wishlist"
    title = "Several goals: change a quantity, remove an item, save another to the wishlist"

    def sample(self, app, rng):
        ps = []
        while len(ps) < 3:
            ps.append(pick_product(app, rng, lambda x: plain(x) and in_stock(x, 5) and x["id"] not in [q["id"] for q in ps]))
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

    allowed = ("runtime.carts.{user_id}", "runtime.wishlists.{user_id}")

    def oracle(self, app, p):
        a, b, c = p["products"]
        return ["click('nav-cart')", f"fill('qty-{line_bid(a, None, None)}', '{p['qty']}')",
                f"click('update-{line_bid(a, None, None)}')", f"click('remove-{line_bid(b, None, None)}')",
                f"click('cart-item-{line_bid(c, None, None)}')", "click('add-to-wishlist')"]

    def verify(self, app, p, start, final, answer):
        a, b, c = p["products"]
        return V.verify_multi_cart(app, start, final, p["user_id"], qty=(a, p["qty"]), removed=b, wished=c,
                                   allowed=self.allowed_paths(app, p))


class OrderDate(TaskTemplate):
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

    def verify(self, app, p, start, final, answer):
        return V.verify_date_answer(start, final, answer, day_to_date(p["day"]), "order date")


class AvailableColors(TaskTemplate):
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

    def verify(self, app, p, start, final, answer):
        return V.verify_set_answer(start, final, answer, p["colors"], "colors")


class InfeasibleCancel(TaskTemplate):
    id = "shopping/cancel_shipped_order"
    kind = "info"
    title = "A request the shop must refuse: cancel an order that has already shipped"

    def sample(self, app, rng):
        ok = lambda o: o["status"] in ("shipped", "delivered")
        u = pick_user(app, rng, lambda u: any(ok(o) for o in app.world.orders(u["id"])))
        o = rng.choice([o for o in app.world.orders(u["id"]) if ok(o)])
        return {"user_id": u["id"], "order_id": o["id"], "status": o["status"]}

    def goal(self, app, p):
        return (f"Cancel my order #{p['order_id']}. If it cannot be cancelled any more, tell me why "
                f"(use report_infeasible) and change nothing.")

    def facts(self, app, p):
        return [fg("refusal", "The request is recognised as impossible",
                   f"order #{p['order_id']} is already {p['status']}", "it is reported as infeasible")]

    def oracle(self, app, p):
        return ["click('nav-orders')", f"click('order-{p['order_id']}')",
                f"report_infeasible('Order #{p['order_id']} has already been {p['status']}; it can no longer be cancelled.')"]

    def verify(self, app, p, start, final, answer):
        return V.verify_infeasible(start, final)


class CheapestWithAttribute(TaskTemplate):
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
                        "attr": name, "value": value, "product_id": items[0]["id"], "answer": items[0]["name"]}
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
        return [f"goto('/c/{p['category_slug']}')", f"select_option('f-attr-{p['attr']}', '{p['attr']}:{p['value']}')",
                "check('f-stock')", "select_option('f-sort', 'price_asc')", "click('f-apply')",
                f"send_msg_to_user({p['answer']!r})"]

    def verify(self, app, p, start, final, answer):
        return V.verify_text_answer(start, final, answer, p["answer"], "cheapest matching product")


TASKS: list[TaskTemplate] = [
    ProductPrice(), ProductRating(), OrderTotal(), LatestOrderStatus(), CheapestInCategory(), CompareProducts(),
    AddToCart(), AddWithOptions(), RemoveFromCart(), BuyProduct(), BuyWithCoupon(), CancelOrder(), ReturnOrder(),
    AddAddress(), UpdateProfile(), ChangePassword(), RegisterAccount(), WishlistAdd(), WriteReview(),
    FilteredPurchase(), CartCleanup(), OrderDate(), AvailableColors(), InfeasibleCancel(),
    CheapestWithAttribute(),
]
