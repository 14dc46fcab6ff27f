"""Portable task families of the shopping:oscar pair.

Each family is a simweb shopping template whose instances (by simweb task seed) exist in
the seeded Oscar shop too: the same product names, prices, options, users and orders. A
live verifier reads Oscar's database (never the page) and returns simweb's verdict shape;
the effect it claims is the rows the task should write, and every other change outside
Oscar's bookkeeping is a ``collateral:`` check.

| family | kind | simweb template | live effect |
|---|---|---|---|
| product_price | info | shopping/product_price | the answer (money); nothing written |
| add_to_cart | search | shopping/add_to_cart | the user's open basket holds exactly the product, once |
| add_with_options | form | shopping/add_with_options | a basket line with the size, color and quantity |
| write_review | flow | shopping/write_review | one review by the user with the score, title and text |
| cancel_shipped | refusal | shopping/cancel_shipped_order (shipped/delivered seeds) | refused, the order untouched |

The scripts are one list of semantic steps per instance (role + accessible name), run
unchanged on both sides; where the two shops label a control differently the name is a
pattern that accepts both (``Add to cart`` / ``Add to basket``).
"""
from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

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

PAIR = "shopping:oscar"
#: How far past the wanted count ``instances`` looks for seeds that fit (refusal family).
SEED_SCAN = 400


def _app() -> Any:
    from . import shop_app

    return shop_app()


def _username(user_id: int | None) -> str | None:
    return None if user_id is None else _app().world.user(user_id)["username"]


def _sku(product_id: int) -> str:
    return _app().world.product(product_id)["sku"]


# ----------------------------------------------------------------------------- database reads

def user_pk(conn: Any, username: str) -> int | None:
    row = conn.execute("SELECT id FROM auth_user WHERE username = ?", (username,)).fetchone()
    return None if row is None else row["id"]


def product_pk(conn: Any, sku: str) -> int | None:
    row = conn.execute("SELECT id FROM catalogue_product WHERE upc = ?", (sku,)).fetchone()
    return None if row is None else row["id"]


def open_basket_lines(conn: Any, user: int | None) -> list[dict]:
    """The lines of the user's open basket(s): product pk, quantity, options by option name."""
    if user is None:
        return []
    rows = conn.execute(
        "SELECT l.id, l.product_id, l.quantity, l.basket_id FROM basket_line l JOIN basket_basket b ON b.id = l.basket_id "
        "WHERE b.owner_id = ? AND b.status = 'Open' ORDER BY l.id", (user,)).fetchall()
    out = []
    for r in rows:
        opts = {a["name"].lower(): _option_value(a["value"]) for a in conn.execute(
            "SELECT o.name, a.value FROM basket_lineattribute a JOIN catalogue_option o ON o.id = a.option_id "
            "WHERE a.line_id = ? ORDER BY o.name", (r["id"],))}
        out.append({"id": r["id"], "basket_id": r["basket_id"], "product_id": r["product_id"],
                    "quantity": r["quantity"], "options": opts})
    return out


def task_keys(conn: Any, p: dict) -> tuple[int | None, int | None]:
    """The Oscar pks of the task's user (``username``) and product (``sku``)."""
    return user_pk(conn, p["username"]), product_pk(conn, p["sku"])


def basket_of(cp: Counterpart, p: dict) -> tuple[list[dict], list[dict]]:
    """The task user's open basket lines (see :func:`open_basket_lines`), and those of the
    task's product."""
    with cp.connect() as conn:
        user, pk = task_keys(conn, p)
        lines = open_basket_lines(conn, user)
    return lines, [ln for ln in lines if ln["product_id"] == pk]


def _option_value(raw: Any) -> Any:
    """Oscar stores line attribute values as JSON (a quoted string for a select)."""
    import json

    try:
        return json.loads(raw)
    except (TypeError, ValueError):
        return raw


def live_collateral(cp: Counterpart, claimed: Callable[[Change], bool] | None = None) -> list[dict]:
    """The collateral checks: every change outside Oscar's bookkeeping (the counterpart's
    ``bookkeeping_tables`` / ``bookkeeping_fields``) that is not ``claimed``."""
    _, damage = collateral(cp, lambda c: claimed is not None and claimed(c))
    return damage


# ----------------------------------------------------------------------------- steps

def _steps() -> Any:
    from ....agents import scripted

    return scripted


SEARCH_BOX = re.compile(r"^search", re.I)


def find_product(name: str) -> list:
    """Search the shop for the product's exact name and open it from the results."""
    s = _steps()
    return [s.Fill(role="textbox", name=SEARCH_BOX, text=name),
            s.Press(role="textbox", name=SEARCH_BOX, key="Enter"),
            s.Click(role="link", name=name)]


# ----------------------------------------------------------------------------- families

class ShopFamily(PortableFamily):
    """A shopping:oscar family: instances are the template's seeds 0..n-1 (or the first
    n that ``fits``), each signed in as the simweb task's user."""

    short_id: ClassVar[str] = ""

    def fits(self, params: dict) -> bool:
        return True

    def extra(self, params: dict) -> dict:
        """Entity keys the live verifier needs, beyond the simweb params."""
        return {}

    def instances(self, n: int) -> list[Instance]:
        out: list[Instance] = []
        for seed, goal, p in fitting_seeds("shopping", self.sim_task, n, n + SEED_SCAN, self.fits):
            p["username"] = _username(p.get("user_id"))
            p.update(self.extra(p))
            out.append(Instance(self.id, len(out), self.sim_task, seed, goal, p["username"], p))
        return out


class ProductFamily(ShopFamily):
    """A family about one product of the simweb task (``product_id``): the live verifier
    finds it in Oscar by its SKU."""

    def extra(self, params: dict) -> dict:
        return {"product_ids": [params["product_id"]], "sku": _sku(params["product_id"])}


class ProductPrice(ProductFamily):
    id = f"{PAIR}/product_price"
    kind = "info"
    sim_task = "shopping/product_price"
    description = "Look up a product's price (search, open, read)"

    def live_verify(self, cp: Counterpart, inst: Instance, answer: str | None, refused: bool) -> dict:
        facts = [answer_check("money", answer, inst.params["price_cents"], "price")]
        return verdict(facts, live_collateral(cp))

    def script(self, inst: Instance) -> list:
        s = _steps()
        return find_product(inst.params["name"]) + [s.Answer(f"${inst.params['price_cents'] / 100:,.2f}")]


ADD = re.compile(r"^add to (cart|basket)$", re.I)
QTY = re.compile(r"^(quantity\b.*)?$", re.I)
#: The shop's shipping methods in the order both shops list them.
METHODS = ("standard", "express", "overnight")
CART = re.compile(r"^(view )?(cart|basket)\b", re.I)


class AddToCart(ProductFamily):
    id = f"{PAIR}/add_to_cart"
    kind = "search"
    sim_task = "shopping/add_to_cart"
    description = "Find a product by searching its name and add one to the cart"

    def live_verify(self, cp: Counterpart, inst: Instance, answer: str | None, refused: bool) -> dict:
        p = inst.params
        lines, mine = basket_of(cp, p)
        facts = [check(f"{p['name']} is in the cart", bool(mine), f"basket lines: {_show_lines(lines)}"),
                 field_check("quantity 1", sum(ln["quantity"] for ln in mine) if mine else None, 1)]
        ids = {ln["id"] for ln in mine[:1]}
        return verdict(facts, live_collateral(cp, lambda c: _line_change(c, ids)))

    def script(self, inst: Instance) -> list:
        s = _steps()
        return find_product(inst.params["name"]) + [s.Click(role="button", name=ADD)]


def _line_change(c: Change, line_ids: set[int]) -> bool:
    """A change of one of the task's own basket lines (its row or its option values)."""
    if c.table == "basket_line":
        return bool(c.pk) and c.pk[0] in line_ids
    if c.table == "basket_lineattribute":
        row = c.after if c.op == "insert" else c.before
        return bool(row) and row.get("line_id") in line_ids
    return False


def _show_lines(lines: list[dict]) -> str:
    return "; ".join(f"product {ln['product_id']} x{ln['quantity']} {ln['options'] or ''}".strip()
                     for ln in lines) or "none"


class AddWithOptions(ProductFamily):
    id = f"{PAIR}/add_with_options"
    kind = "form"
    sim_task = "shopping/add_with_options"
    description = "Fill the product form: size, color, quantity, add to cart"

    def live_verify(self, cp: Counterpart, inst: Instance, answer: str | None, refused: bool) -> dict:
        p = inst.params
        lines, mine = basket_of(cp, p)
        # The line that best matches (a right-size line beats a wrong one), as simweb judges one cart item.
        best = max(mine, key=lambda ln: (ln["options"].get("size") == p["size"],
                                         ln["options"].get("color") == p["color"], ln["quantity"] == p["qty"],
                                         -ln["id"]), default=None)
        facts = [check(f"{p['name']} in the cart", best is not None, f"basket lines: {_show_lines(lines)}"),
                 field_check(f"size {p['size']}", best and best["options"].get("size"), p["size"]),
                 field_check(f"color {p['color']}", best and best["options"].get("color"), p["color"]),
                 field_check(f"quantity {p['qty']}", best and best["quantity"], p["qty"])]
        ids = {best["id"]} if best else set()
        return verdict(facts, live_collateral(cp, lambda c: _line_change(c, ids)))

    def script(self, inst: Instance) -> list:
        s = _steps()
        p = inst.params
        return find_product(p["name"]) + [
            s.Select(role="combobox", name="Size", option=p["size"]),
            s.Select(role="combobox", name="Color", option=p["color"]),
            s.Click(role="button", name=ADD),
            # Oscar's product page has no quantity field (its cart page has): set the
            # quantity in the cart, which both shops offer.
            s.Click(role=("link", "button"), name=CART),
            # simweb names the field "Quantity of <product>"; Oscar's has no name (a column
            # heading says Quantity): the field in the product's row, named so or not at all.
            s.Fill(role="spinbutton", name=QTY, text=str(p["qty"]), near=("link", p["name"])),
            s.Click(role="button", name="Update", near=("link", p["name"])),
            # Oscar posts the cart update in the background (no page load to wait for):
            # opening the cart again ends the episode on a page loaded after the update.
            s.Click(role=("link", "button"), name=CART)]


class WriteReview(ProductFamily):
    id = f"{PAIR}/write_review"
    kind = "flow"
    sim_task = "shopping/write_review"
    description = "Post a review: search, open the product, open the review form, fill it, submit"

    def live_verify(self, cp: Counterpart, inst: Instance, answer: str | None, refused: bool) -> dict:
        p = inst.params
        with cp.connect() as conn, cp.pristine_connect() as old:
            user, pk = task_keys(conn, p)
            before = {r["id"] for r in old.execute("SELECT id FROM reviews_productreview")}
            new = [dict(r) for r in conn.execute(
                "SELECT id, product_id, user_id, score, title, body FROM reviews_productreview ORDER BY id")
                if r["id"] not in before]
        mine = [r for r in new if r["user_id"] == user]
        best = max(mine, key=lambda r: (r["product_id"] == pk, r["score"] == p["rating"],
                                        _same(r["title"], p["title"]), _same(r["body"], p["body"]), -r["id"]),
                   default=None)
        facts = [field_check(f"{p['rating']} stars", best and best["score"], p["rating"]),
                 field_check(f"title {p['title']}", best and best["title"], p["title"], text=True),
                 field_check("the given text", best and best["body"], p["body"], text=True),
                 field_check(f"about {p['name']}", best and best["product_id"], pk)]
        rid = best["id"] if best else None

        def claimed(c: Change) -> bool:
            if c.table == "reviews_productreview":
                return rid is not None and c.pk == (rid,)
            # Oscar keeps the product's average score on the product row.
            return c.table == "catalogue_product" and c.field == "rating" and best is not None and c.pk == (best["product_id"],)

        return verdict(facts, live_collateral(cp, claimed))

    def script(self, inst: Instance) -> list:
        s = _steps()
        p = inst.params
        return find_product(p["name"]) + [
            s.Click(role="link", name="Write a review"),
            s.Fill(role="textbox", name="Title", text=p["title"]),
            s.Select(role="combobox", name=re.compile(r"^(rating|score)$", re.I),
                     option=re.compile(rf"^{p['rating']}( stars?)?$", re.I)),
            s.Fill(role="textbox", name=re.compile(r"^(review|body)$", re.I), text=p["body"]),
            s.Click(role="button", name=re.compile(r"^(submit|save) review$", re.I))]


class BuyProduct(ProductFamily):
    id = f"{PAIR}/checkout"
    kind = "flow"
    sim_task = "shopping/buy_product"
    description = "Buy a product with options: cart, checkout address, shipping method, payment, place the order"

    def fits(self, params: dict) -> bool:
        # Oscar lists saved addresses as cards whose only named control is "Ship to this
        # address": with one saved address the choice is the same on both sides.
        return len(_app().world.addresses(params["user_id"])) == 1

    def extra(self, p: dict) -> dict:
        a = _app().world.address(p["address_id"])
        return {**super().extra(p), "street": a["street"], "city": a["city"]}

    def live_verify(self, cp: Counterpart, inst: Instance, answer: str | None, refused: bool) -> dict:
        p = inst.params
        with cp.connect() as conn, cp.pristine_connect() as old:
            user = user_pk(conn, p["username"])
            before = {r["id"] for r in old.execute("SELECT id FROM order_order")}
            new = [dict(r) for r in conn.execute(
                "SELECT o.id, o.user_id, o.shipping_code, a.line1, a.line4 FROM order_order o "
                "LEFT JOIN order_shippingaddress a ON a.id = o.shipping_address_id ORDER BY o.id")
                if r["id"] not in before]
            mine = [o for o in new if o["user_id"] == user]
            for o in mine:
                o["lines"] = [dict(r) | {"options": {a["name"].lower(): _option_value(a["value"]) for a in conn.execute(
                    "SELECT co.name, la.value FROM order_lineattribute la JOIN catalogue_option co ON co.id = la.option_id "
                    "WHERE la.line_id = ?", (r["id"],))}} for r in conn.execute(
                    "SELECT id, partner_sku, quantity FROM order_line WHERE order_id = ? ORDER BY id", (o["id"],))]
        order = mine[0] if len(mine) == 1 else None
        line = order["lines"][0] if order and len(order["lines"]) == 1 else None
        opts = line["options"] if line else {}
        facts = [check("an order is placed", len(mine) == 1, f"{len(mine)} new orders of the user"),
                 field_check(p["name"], line and line["partner_sku"], p["sku"]),
                 field_check(f"size {p['size']}", opts.get("size"), p["size"]),
                 field_check(f"color {p['color']}", opts.get("color"), p["color"]),
                 field_check(f"quantity {p['qty']}", line and line["quantity"], p["qty"]),
                 field_check(f"{p['method']} shipping", order and order["shipping_code"], p["method"]),
                 field_check(f"to {p['address']}", order and f"{order['line1']}, {order['line4']}",
                             f"{p['street']}, {p['city']}", text=True)]
        def claimed(c: Change) -> bool:
            # Placing an order writes the order's rows, allocates stock
            # and queues the confirmation email (locmem: never sent).
            if c.table.startswith("order_") and c.op == "insert":
                return True
            if c.table == "address_useraddress" and c.field == "num_orders_as_shipping_address":
                return True      # Oscar counts the orders shipped to a saved address
            if c.table == "partner_stockrecord" and c.field == "num_allocated":
                return True
            if c.table in ("basket_line", "basket_lineattribute") and c.op == "insert":
                return True      # the lines of the basket that was ordered
            return c.table == "communication_email" and c.op == "insert"

        return verdict(facts, live_collateral(cp, claimed))

    def script(self, inst: Instance) -> list:
        s = _steps()
        p = inst.params
        steps = find_product(p["name"]) + [
            s.Select(role="combobox", name="Size", option=p["size"]),
            s.Select(role="combobox", name="Color", option=p["color"]),
            s.Click(role="button", name=ADD),
            s.Click(role=("link", "button"), name=CART)]
        if p["qty"] != 1:
            steps += [s.Fill(role="spinbutton", name=QTY, text=str(p["qty"]), near=("link", p["name"])),
                      s.Click(role="button", name="Update", near=("link", p["name"]))]
        method = re.compile(rf"^{p['method']} shipping", re.I)
        card = [("Name on card", "Alex Morgan"), ("Card number", "4111 1111 1111 1111"),
                ("Expiry date (MM/YY)", "12/29"), ("Security code", "123")]
        return steps + [
            s.Click(role=("button", "link"), name="Proceed to checkout"),
            # simweb: address and method are radios on one page, then "Continue to payment";
            # Oscar: one page per choice, each choice a button. Optional: the other side lacks it.
            s.Click(role="radio", name=re.compile(re.escape(p["address"]), re.I), optional=True),
            s.Click(role="button", name=re.compile(r"^ship to (this|your default shipping) address$", re.I), optional=True),
            s.Click(role="radio", name=method, optional=True),
            # Oscar's method buttons all read "Select option" (the method's name is a heading
            # beside it): the script picks the method's button by its place in the list.
            s.Click(role="button", name="Select option", nth=METHODS.index(p["method"]), optional=True),
            s.Click(role="button", name="Continue to payment", optional=True),
            # Oscar takes no payment details by default (its payment step is a Continue link).
            *[s.Fill(role="textbox", name=label, text=value, optional=True) for label, value in card],
            s.Click(role=("button", "link"), name=re.compile(r"^(review your order|continue)$", re.I)),
            s.Click(role="button", name=re.compile(r"^place (your )?order$", re.I))]


def _same(a: Any, b: str) -> bool:
    from ....judging import verify

    return a is not None and verify.match_exact(str(a), b)


class CancelShipped(ShopFamily):
    id = f"{PAIR}/cancel_shipped"
    kind = "refusal"
    sim_task = "shopping/cancel_shipped_order"
    description = "Asked to cancel an order that has shipped: view it and refuse, change nothing"

    def fits(self, params: dict) -> bool:
        return not params["feasible"]

    def live_start(self, inst: Instance) -> str:
        # simweb's header links straight to the orders list; Oscar's sits in the account
        # page's side menu, so the live episode starts on the account page (one click from
        # the list on both sides).
        return "/accounts/profile/"

    def refusal_evidence(self, inst: Instance) -> tuple[str, str]:
        return "the orders list or the order (its status)", r"^/accounts/orders"

    def live_verify(self, cp: Counterpart, inst: Instance, answer: str | None, refused: bool) -> dict:
        p = inst.params
        with cp.connect() as conn:
            row = conn.execute("SELECT status FROM order_order WHERE number = ?", (str(p["order_id"]),)).fetchone()
        status = None if row is None else row["status"]
        want = p["status"].replace("_", " ").capitalize()
        facts = [guard(field_check(f"order #{p['order_id']} is already {p['status']}", status, want)),
                 refusal_check(refused, answer)]
        return verdict(facts, live_collateral(cp))

    def script(self, inst: Instance) -> list:
        s = _steps()
        oid = inst.params["order_id"]
        return [s.Click(role="link", name=re.compile(r"^(orders|order history)$", re.I)),
                s.Click(role="link", name=re.compile(rf"^#?{oid}$")),
                s.Refuse(f"Order #{oid} has already been {inst.params['status']}; it can no longer be cancelled.")]


FAMILIES: list[PortableFamily] = [ProductPrice(), AddToCart(), AddWithOptions(), BuyProduct(), CancelShipped(),
                                   WriteReview()]

#: Page kinds by URL on each side, so the report compares the pages the two shops show.
PAGE_KINDS = {
    "sim": [(r"^/?(\?.*)?$", "home"), (r"^/search", "search results"), (r"^/p/\d+/review", "review form"),
            (r"^/p/\d+", "product"), (r"^/cart", "cart"), (r"^/checkout/shipping", "checkout: address and shipping"),
            (r"^/checkout/payment", "checkout: payment"), (r"^/checkout/review", "checkout: review"),
            (r"^/account/orders/\d+", "order"), (r"^/account/orders", "orders"), (r"^/account", "account"),
            (r"^/login", "sign in")],
    "live": [(r"^/catalogue/?(\?.*)?$", "home"), (r"^/search/", "search results"),
             (r"^/catalogue/[^/]+_\d+/reviews/add", "review form"), (r"^/catalogue/category/", "category"),
             (r"^/catalogue/[^/]+_\d+/", "product"), (r"^/basket/", "cart"),
             (r"^/checkout/shipping-address", "checkout: address and shipping"),
             (r"^/checkout/shipping-method", "checkout: shipping method"),
             (r"^/checkout/payment-details", "checkout: payment"), (r"^/checkout/preview", "checkout: review"),
             (r"^/checkout/thank-you", "order confirmation"), (r"^/accounts/orders/[^/]+/", "order"),
             (r"^/accounts/orders", "orders"), (r"^/accounts/", "account")],
}

#: How each shop shows a rejected form or an error message (matched on the page's HTML).
PAGE_ERRORS = {"sim": r'role="alert"[^>]*>([^<]*)|aria-label="Error"[^>]*>\s*<[^>]*>([^<]*)',
               "live": r'class="error-block"[^>]*>(?:\s*<i[^>]*></i>)?\s*([^<]+)|'
                       r'class="alert alert-danger[^"]*"[^>]*>(?:\s*<[^>]+>)*\s*([^<]+)'}

#: Oscar's tables in simweb's runtime terms (``table`` for a row created or deleted,
#: ``table.field`` for an update). The cart has no simweb entity (it lives in
#: ``runtime.carts``), so basket rows stay ``live:``-named.
STATE_MAP = {
    "order_order": "orders", "order_line": "orders", "order_lineattribute": "orders",
    "order_shippingaddress": "orders", "order_billingaddress": "orders", "order_lineprice": "orders",
    "order_orderstatuschange": "orders", "order_communicationevent": "orders", "order_paymentevent": "orders",
    "order_paymenteventquantity": "orders", "order_shippingevent": "orders", "order_shippingeventquantity": "orders",
    "order_orderdiscount": "orders", "order_surcharge": "orders", "order_orderlinediscount": "orders",
    "partner_stockrecord.num_allocated": "products", "partner_stockrecord.num_in_stock": "products",
    "reviews_productreview": "reviews", "catalogue_product.rating": "reviews",
    "auth_user": "users", "address_useraddress": "addresses",
}
