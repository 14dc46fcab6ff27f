"""Simshop as a user (or an agent) experiences it, in process.

Every test drives the shop through BrowserGym actions on one shared env (module
fixture, reset per test) and checks both what changed in the state and what the
rendered page shows. Test data (products, users, orders, coupons) is picked from the
world by property, never by hard-coded id, so the tests hold for any world seed.
"""
from __future__ import annotations

import collections
import html as html_lib
import re
from importlib import resources
from urllib.parse import parse_qs, urlencode, urlsplit

import markupsafe
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sitedriver import Site

import simweb
from simweb.apps.shopping.functions import money
from simweb.apps.shopping.world import category_ancestors
from simweb.core.kits.cards import fingerprint
from simweb.core.worlddb import day_to_date

# A Luhn-valid test card (the expiry is years after the simulated today).
CARD = {"card-name": "Alex Morgan", "card-number": "4111 1111 1111 1111", "card-expiry": "12/29",
        "card-cvv": "123"}
ORIGIN = "http://shopping.simweb.localhost"
# The simulated day the shop's clock starts on (5 s per request: tests never reach the next day).
TODAY = yaml.safe_load((resources.files("simweb.specs") / "shopping.yaml").read_text())["clock"]["start_day"]


# ----------------------------------------------------------------------------- fixtures

@pytest.fixture(scope="module")
def env():
    return simweb.make("shopping", seed=0)


@pytest.fixture(scope="module")
def world(env):
    return env.app.world


@pytest.fixture(scope="module")
def catalog(world):
    """The first few thousand products of the world (enough for every predicate)."""
    top = min(world.max_id("products"), 4000)
    return [p for p in (world.product(i) for i in range(1, top + 1)) if p is not None]


@pytest.fixture(scope="module")
def world_orders(world):
    """Every world order, by user."""
    return {uid: world.orders(uid) for uid in range(1, world.max_id("users") + 1)}


class Shop(Site):
    """The shared driver, plus the shop's page readers."""

    def line(self, bid: str) -> str:
        """The axtree line of ``bid`` followed by its first child line."""
        m = re.search(r"^\t*\[" + re.escape(bid) + r"\][^\n]*(\n[^\n]*)?", self.axtree, re.M)
        assert m, f"no element {bid!r} on {self.path}"
        return m.group(0)

    def product_ids(self) -> list[int]:
        return [int(b[len("product-"):]) for b in self.bids() if re.fullmatch(r"product-\d+", b)]

    def message(self) -> str:
        """The message of an error page."""
        m = re.search(r'<section class="error"[^>]*>.*?<p>(.*?)</p>', self.html, re.S)
        assert m, f"{self.path} is not an error page"
        return html_lib.unescape(m.group(1))

    def cart_items(self, uid: int) -> list[dict]:
        return (self.rt["carts"].get(str(uid)) or {}).get("items", [])


@pytest.fixture
def shop(env):
    """A fresh episode without a task: signed out, on the home page."""
    s = Shop(env)
    s.obs, s.info = env.reset(seed=0, options={"task": None})
    assert s.path == "/" and s.state["browser"]["user"] is None
    return s


# ----------------------------------------------------------------------------- world picks

def plain(p: dict) -> bool:
    return not p["options"].get("size") and not p["options"].get("color")


def pick(catalog, pred, what="product"):
    for p in catalog:
        if pred(p):
            return p
    pytest.fail(f"no {what} in this world satisfies the test's needs")


def first_options(p: dict) -> tuple[str | None, str | None]:
    return ((p["options"].get("size") or [None])[0], (p["options"].get("color") or [None])[0])


def line_bid(pid: int, size: str | None = None, color: str | None = None) -> str:
    return f"{pid}|{size or ''}|{color or ''}".replace("|", "-").replace(" ", "_")


def stock_now(env, pid: int) -> int:
    row = env.state["runtime"]["entities"].get("products", {}).get(str(pid))
    return (row if row is not None else env.app.world.product(pid))["stock"]


def user_with(world, pred):
    for uid in range(1, world.max_id("users") + 1):
        if pred(uid):
            return uid
    pytest.fail("no user in this world satisfies the test's needs")


def order_with(world_orders, pred):
    for orders in world_orders.values():
        for o in orders:
            if pred(o):
                return o
    pytest.fail("no order in this world satisfies the test's needs")


def add_to_cart(shop: Shop, p: dict, qty: int = 1, size=None, color=None, invalid: str | None = None) -> Shop:
    shop.goto(f"/p/{p['id']}")
    if size:
        shop.select("opt-size", size)
    if color:
        shop.select("opt-color", color)
    if qty != 1:
        shop.fill("qty", str(qty))
    return submit(shop, "add-to-cart", invalid)


def submit(shop: Shop, bid: str, invalid: str | None = None) -> Shop:
    """Click the submit button ``bid``. With ``invalid`` (the field the browser's constraint
    validation stops at), the browser must not send the form, as Chromium does not; the
    request then goes to the server as from a client that does not validate, whose answer
    the caller checks (the server's own validation)."""
    if invalid is None:
        return shop.click(bid)
    return shop.blocked(bid, invalid).submit_unvalidated(bid)


def to_payment(shop: Shop, address_id: int, method: str = "standard") -> Shop:
    shop.goto("/cart").click("checkout")
    assert shop.path == "/checkout/shipping"
    shop.click(f"addr-{address_id}").click(f"ship-{method}").click("continue-payment")
    assert shop.path == "/checkout/payment", shop.error()
    return shop


def pay(shop: Shop, invalid: str | None = None, **fields) -> Shop:
    shop.goto("/checkout/payment")
    for bid, value in {**CARD, **fields}.items():
        if value is not None:
            shop.fill(bid, value)
    return submit(shop, "continue-review", invalid)


# ============================================================================= search

def test_search_results_contain_every_query_word(shop, world):
    for q, words in (("jacket", ["jacket"]), ("leather boot", ["leather", "boot"])):
        shop.goto("/search?" + urlencode({"q": q}))
        assert shop.page == "search" and shop.status == 200
        ids = shop.product_ids()
        assert ids, f"no results for {q!r}"
        assert shop.text_of("results-title") == f"Results for “{q}”"
        total = world.search(q)["total"]
        assert shop.text_of("results-count") == f"{total} product{'s' if total != 1 else ''}"
        for pid in ids:
            p = world.product(pid)
            cat = world.category(p["category_id"])
            dept = world.category(cat["parent_id"]) if cat["parent_id"] else None
            text = " ".join([p["name"], p["brand_name"], cat["name"], dept["name"] if dept else "",
                             p["description"]]).lower()
            for word in words:
                assert word in text, (q, pid, p["name"])


def test_search_box_submits_the_query(shop):
    shop.fill("search-q", "jacket").click("search-go")
    assert urlsplit(shop.path).path == "/search"
    assert parse_qs(urlsplit(shop.path).query)["q"] == ["jacket"]
    assert shop.product_ids()
    assert "value='jacket'" in shop.line("search-q")


def _brands(shop: Shop) -> list[tuple[int, str, int]]:
    return [(int(b), name, int(n)) for b, name, n in
            re.findall(r"\[f-brand-(\d+)\] checkbox '(.*?) \((\d+)\)'", shop.axtree)]


def test_search_brand_filter_constrains_results_and_matches_facet_count(shop, world):
    shop.goto("/search?q=jacket")
    brands = _brands(shop)
    assert brands
    bid, name, count = max(brands, key=lambda b: (b[2], -b[0]))
    shop.click(f"f-brand-{bid}").click("f-apply")
    assert parse_qs(urlsplit(shop.path).query)["brand"] == [str(bid)]
    ids = shop.product_ids()
    assert ids and len(ids) == min(count, 24)
    assert all(world.product(i)["brand_id"] == bid for i in ids)
    assert shop.text_of("results-count").startswith(f"{count} product")
    assert "checked='true'" in shop.line(f"f-brand-{bid}")


def test_search_price_rating_stock_filters_constrain_every_listed_product(shop, world):
    shop.goto("/search?q=jacket")
    shop.fill("f-min", "20").fill("f-max", "60.50")
    shop.click("f-apply")
    ids = shop.product_ids()
    assert ids
    assert all(2000 <= world.product(i)["price_cents"] <= 6050 for i in ids)
    # The inputs keep the chosen bounds.
    assert 'value="20.00"' in shop.html and 'value="60.50"' in shop.html

    shop.goto("/search?q=jacket")
    shop.select("f-rating", "4").click("f-apply")
    ids = shop.product_ids()
    assert ids and all(world.product(i)["rating"] >= 4 for i in ids)

    shop.goto("/search?q=jacket")
    shop.ok("check('f-stock')").click("f-apply")
    assert parse_qs(urlsplit(shop.path).query).get("stock") == ["1"]
    ids = shop.product_ids()
    assert ids and all(world.product(i)["stock"] > 0 for i in ids)

    # All at once, through the form, with a sort.
    shop.goto("/search?q=jacket")
    brands = [b for b, _, _ in _brands(shop)][:3]
    for b in brands:
        shop.click(f"f-brand-{b}")
    shop.fill("f-min", "10").fill("f-max", "200").select("f-rating", "3").ok("check('f-stock')")
    shop.select("f-sort", "price_asc").click("f-apply")
    ids = shop.product_ids()
    assert ids
    rows = [world.product(i) for i in ids]
    for p in rows:
        assert p["brand_id"] in brands and 1000 <= p["price_cents"] <= 20000
        assert p["rating"] >= 3 and p["stock"] > 0
    prices = [p["price_cents"] for p in rows]
    assert prices == sorted(prices)


@pytest.mark.parametrize("sort,key,reverse", [
    ("price_asc", "price_cents", False), ("price_desc", "price_cents", True),
    ("rating", "rating", True), ("newest", "created_day", True), ("reviews", "review_count", True)])
@pytest.mark.parametrize("q", ["", "jacket"])
def test_search_sort_orders_results(shop, world, q, sort, key, reverse):
    shop.goto("/search?" + urlencode({"q": q, "sort": sort}))
    values = [world.product(i)[key] for i in shop.product_ids()]
    assert len(values) == 24
    assert values == sorted(values, reverse=reverse)
    assert "value='" in shop.line("f-sort")
    assert re.search(r'<option value="' + sort + r'" selected>', shop.html)


def test_search_pagination_next_and_prev_keep_filters(shop, world):
    shop.goto("/search?q=jacket&sort=price_asc&min=5")
    first = shop.product_ids()
    total = world.search("jacket", price_min_cents=500, sort="price_asc")["total"]
    pages = -(-total // 24)
    assert pages >= 2 and len(first) == 24
    assert f"Page 1 of {pages}" in shop.html and not shop.has("page-prev")
    shop.click("page-next")
    query = parse_qs(urlsplit(shop.path).query)
    assert query["page"] == ["2"] and query["q"] == ["jacket"] and query["sort"] == ["price_asc"]
    assert float(query["min"][0]) == 5
    second = shop.product_ids()
    assert second and not set(first) & set(second)
    assert f"Page 2 of {pages}" in shop.html
    assert world.product(second[0])["price_cents"] >= world.product(first[-1])["price_cents"]
    expected = world.search("jacket", price_min_cents=500, sort="price_asc", page=2)["items"]
    assert second == [p["id"] for p in expected]
    shop.click("page-prev")
    assert "page" not in parse_qs(urlsplit(shop.path).query)
    assert shop.product_ids() == first


@pytest.mark.parametrize("q", ['"', '"wool socks', "jacket*", "(jacket", "jacket)", "(jacket)", "NEAR(jacket boot)",
                               "jacket OR boot", "jacket AND", "-jacket", "^jacket", "name:jacket", "***", "'",
                               "' OR 1=1 --", '""""', "{jacket}", "jacket;", "\\", "%", "_", "[jacket]"])
def test_search_with_fts_syntax_never_errors(shop, q):
    shop.goto("/search?" + urlencode({"q": q}))
    assert shop.status == 200 and shop.page == "search"
    assert shop.error() is None
    assert re.fullmatch(r"\d+ products?", shop.text_of("results-count"))
    # The query is shown back as typed (escaped, never interpreted).
    assert str(markupsafe.escape(q)) in shop.html


def test_search_special_characters_are_word_separators(shop):
    shop.goto("/search?q=jacket")
    plain_ids, plain_count = shop.product_ids(), shop.text_of("results-count")
    for q in ("(jacket)", "jacket*", '"jacket"', "^jacket"):
        shop.goto("/search?" + urlencode({"q": q}))
        assert shop.text_of("results-count") == plain_count
        assert shop.product_ids() == plain_ids


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(q=st.lists(st.sampled_from(list('ab "*()-^:+~.,;\'\\{}[]%_éß') + ["NEAR", "OR", "AND", "NOT", "jacket"]),
                 max_size=12).map("".join))
def test_search_never_fails_on_arbitrary_text(env, q):
    env.reset(seed=0, options={"task": None})
    resp = env.app.navigate(env.state, "/search?" + urlencode({"q": q}))
    assert resp.status == 200 and resp.page == "search", (q, resp.error)


def test_search_without_results_says_so(shop):
    shop.goto("/search?q=zqxjvkwyy")
    assert shop.has("no-results")
    assert "No products match your search" in shop.text_of("no-results")
    assert shop.text_of("results-count") == "0 products"
    assert shop.product_ids() == []
    assert not shop.has("page-next")


# ============================================================================= product page

def test_product_options_are_required(shop, catalog):
    p = pick(catalog, lambda p: p["options"].get("size") and p["options"].get("color") and p["stock"] >= 5)
    uid = 1
    shop.sign_in(uid, f"/p/{p['id']}")
    shop.click("add-to-cart")
    assert shop.error() == "Please choose a size."
    assert shop.path == f"/p/{p['id']}" and shop.cart_items(uid) == []
    shop.select("opt-size", p["options"]["size"][0]).click("add-to-cart")
    assert shop.error() == "Please choose a color."
    assert shop.cart_items(uid) == []
    # A value the product does not offer is refused the same way (crafted POST).
    resp = shop.env.app.submit(shop.state, "/cart/add", {"product_id": str(p["id"]), "size": "XXXXL",
                                                         "color": p["options"]["color"][0]})
    assert resp.error == "Please choose a size." and shop.cart_items(uid) == []
    size, color = p["options"]["size"][-1], p["options"]["color"][-1]
    add_to_cart(shop, p, 1, size, color)
    assert shop.path == "/cart"
    assert shop.success() == f"Added 1 × {p['name']} to your cart."
    assert shop.cart_items(uid) == [{"line": f"{p['id']}|{size}|{color}", "product_id": p["id"], "qty": 1,
                                     "size": size, "color": color}]


def test_quantity_over_stock_is_refused_with_the_stock(shop, catalog):
    p = pick(catalog, lambda p: plain(p) and 2 <= p["stock"] <= 8)
    s = p["stock"]
    shop.sign_in(1)
    add_to_cart(shop, p, s + 1)
    assert shop.error() == f"Only {s} of {p['name']} in stock (you have 0 in your cart)."
    assert shop.path == f"/p/{p['id']}" and shop.cart_items(1) == []
    add_to_cart(shop, p, s - 1)
    assert shop.cart_items(1)[0]["qty"] == s - 1
    add_to_cart(shop, p, 2)
    assert shop.error() == f"Only {s} of {p['name']} in stock (you have {s - 1} in your cart)."
    assert shop.cart_items(1)[0]["qty"] == s - 1


def test_quantity_limits(shop, catalog):
    p = pick(catalog, lambda p: plain(p) and p["stock"] >= 30)
    shop.sign_in(1)
    add_to_cart(shop, p, 11, invalid="qty")   # max="10": Chromium does not send it
    assert shop.error() == "Quantity must be at most 10."
    add_to_cart(shop, p, 0, invalid="qty")    # min="1"
    assert shop.error() == "Quantity must be at least 1."
    add_to_cart(shop, p, 7)
    add_to_cart(shop, p, 4)
    assert shop.error() == "You can buy at most 10 of one product."
    assert shop.cart_items(1)[0]["qty"] == 7


def test_out_of_stock_product_cannot_be_added(shop, catalog):
    p = pick(catalog, lambda p: p["stock"] == 0, "out-of-stock product")
    shop.sign_in(1, f"/p/{p['id']}")
    assert shop.status == 200
    assert shop.text_of("product-stock") == "Out of stock"
    assert not shop.has("add-to-cart") and not shop.has("add-form") and not shop.has("qty")
    before = shop.env.snapshot()["runtime"]
    resp = shop.env.app.submit(shop.state, "/cart/add", {"product_id": str(p["id"]), "qty": "1"})
    assert resp.status == 400 and resp.location == f"/p/{p['id']}"
    assert resp.error == f"Sorry, {p['name']} is out of stock."
    assert "out of stock" in resp.error
    assert shop.rt == before
    shop.goto(f"/p/{p['id']}")
    assert shop.error() == f"Sorry, {p['name']} is out of stock."


def test_adding_a_missing_product_is_refused(shop, catalog):
    p = pick(catalog, lambda p: plain(p) and p["stock"] > 0)
    shop.sign_in(1, f"/p/{p['id']}")
    resp = shop.env.app.submit(shop.state, "/cart/add", {"product_id": "99999999"})
    assert resp.error == "This product is no longer available."
    assert shop.cart_items(1) == []


def test_add_to_cart_signed_out_asks_to_sign_in_and_comes_back(shop, world, catalog):
    p = pick(catalog, lambda p: plain(p) and p["stock"] >= 2)
    u = world.user(1)
    shop.goto(f"/p/{p['id']}").click("add-to-cart")
    assert shop.path == f"/login?next=/p/{p['id']}"
    assert shop.error() == "Please sign in to add items to your cart."
    assert shop.rt["carts"] == {}
    shop.fill("login-user", u["username"]).fill("login-password", u["password"]).click("login-submit")
    assert shop.path == f"/p/{p['id']}"
    assert shop.success() == f"Welcome back, {u['full_name']}!"


# ============================================================================= cart

def test_cart_add_update_and_remove(shop, catalog):
    p = pick(catalog, lambda p: plain(p) and 5 <= p["stock"] <= 9)
    k = line_bid(p["id"])
    shop.sign_in(1)
    add_to_cart(shop, p, 2)
    assert shop.path == "/cart" and shop.success() == f"Added 2 × {p['name']} to your cart."
    assert shop.cart_items(1) == [{"line": f"{p['id']}||", "product_id": p["id"], "qty": 2, "size": None,
                                   "color": None}]
    assert "'Cart (2)'" in shop.line("nav-cart")
    assert "value='2'" in shop.line(f"qty-{k}")
    assert shop.text_of("cart-subtotal") == f"Subtotal: {money(2 * p['price_cents'])}"

    # A second add of the same line adds to its quantity.
    add_to_cart(shop, p, 1)
    assert len(shop.cart_items(1)) == 1 and shop.cart_items(1)[0]["qty"] == 3
    assert "'Cart (3)'" in shop.line("nav-cart")

    shop.fill(f"qty-{k}", "1").click(f"update-{k}")
    assert shop.success() == f"Updated the quantity of {p['name']} to 1."
    assert shop.cart_items(1)[0]["qty"] == 1 and "'Cart (1)'" in shop.line("nav-cart")

    shop.fill(f"qty-{k}", str(p["stock"] + 1)).click(f"update-{k}")
    assert shop.error() == f"Only {p['stock']} of {p['name']} in stock."
    assert shop.cart_items(1)[0]["qty"] == 1

    shop.fill(f"qty-{k}", "0").click(f"update-{k}")
    assert shop.success() == f"Removed {p['name']} from your cart."
    assert shop.cart_items(1) == []
    assert shop.has("cart-empty") and "'Cart (0)'" in shop.line("nav-cart")

    add_to_cart(shop, p, 2)
    shop.click(f"remove-{k}")
    assert shop.success() == f"Removed {p['name']} from your cart."
    assert shop.cart_items(1) == [] and shop.has("cart-empty")
    # Removing a line that is gone (e.g. from a stale page) is refused with a message.
    resp = shop.env.app.submit(shop.state, "/cart/remove", {"line": f"{p['id']}||"})
    assert resp.error == "That item is no longer in your cart."


def test_different_options_are_separate_lines(shop, catalog):
    p = pick(catalog, lambda p: len(p["options"].get("size") or []) >= 2 and p["options"].get("color")
             and p["stock"] >= 6)
    (s1, s2), c = p["options"]["size"][:2], p["options"]["color"][0]
    shop.sign_in(1)
    add_to_cart(shop, p, 2, s1, c)
    add_to_cart(shop, p, 1, s2, c)
    add_to_cart(shop, p, 1, s1, c)
    items = shop.cart_items(1)
    assert [(i["size"], i["color"], i["qty"]) for i in items] == [(s1, c, 3), (s2, c, 1)]
    assert len({i["line"] for i in items}) == 2
    assert "'Cart (4)'" in shop.line("nav-cart")
    assert shop.has(f"cart-item-{line_bid(p['id'], s1, c)}") and shop.has(f"cart-item-{line_bid(p['id'], s2, c)}")
    assert f"Size {s1} · {c}" in shop.html and f"Size {s2} · {c}" in shop.html


def test_cart_badge_counts_units_on_every_page(shop, catalog):
    a = pick(catalog, lambda p: plain(p) and p["stock"] >= 5)
    b = pick(catalog, lambda p: plain(p) and p["stock"] >= 5 and p["id"] != a["id"])
    shop.sign_in(1)
    add_to_cart(shop, a, 3)
    add_to_cart(shop, b, 2)
    for url in ("/", "/search?q=jacket", f"/p/{a['id']}", "/account"):
        shop.goto(url)
        assert "'Cart (5)'" in shop.line("nav-cart"), url


# ============================================================================= coupons

@pytest.fixture
def coupon_cart(shop, catalog):
    """User 1 with one cheap item ($10-$25) in the cart: (shop, product)."""
    p = pick(catalog, lambda p: plain(p) and p["stock"] >= 5 and 1000 <= p["price_cents"] <= 2500)
    shop.sign_in(1)
    add_to_cart(shop, p, 1)
    return shop, p


def _coupon(world, pred):
    for c in world.coupons():
        if pred(c):
            return c
    pytest.fail("no coupon of that kind in this world")


def test_coupon_refusals_show_their_message_and_change_nothing(coupon_cart, world):
    shop, p = coupon_cart
    subtotal = p["price_cents"]
    inactive = _coupon(world, lambda c: not c["active"])
    expired = _coupon(world, lambda c: c["active"] and c["expires_day"] < TODAY)
    too_small = _coupon(world, lambda c: c["active"] and c["expires_day"] >= TODAY and c["category_id"] is None
                        and c["min_subtotal_cents"] > subtotal)
    other_cat = _coupon(world, lambda c: c["active"] and c["expires_day"] >= TODAY and c["category_id"] is not None
                        and c["category_id"] not in category_ancestors(p["category_id"])
                        and c["min_subtotal_cents"] <= subtotal)
    cat_name = world.category(other_cat["category_id"])["name"]
    exp_date = day_to_date(expired["expires_day"])
    cases = [
        ("NOSUCHCODE1", "Coupon code 'NOSUCHCODE1' is not valid."),
        (inactive["code"], f"Coupon code '{inactive['code']}' is no longer active."),
        (expired["code"].lower(), f"Coupon code '{expired['code']}' expired on {exp_date:%b} {exp_date.day}, "
                                  f"{exp_date.year}."),
        (too_small["code"], f"Coupon code '{too_small['code']}' needs a subtotal of at least "
                            f"{money(too_small['min_subtotal_cents'])}."),
        (other_cat["code"], f"Coupon code '{other_cat['code']}' only applies to {cat_name} items."),
    ]
    for code, message in cases:
        shop.goto("/cart")
        before = shop.env.snapshot()["runtime"]
        shop.fill("coupon-code", code).click("apply-coupon")
        assert shop.path == "/cart"
        assert shop.error() == message
        assert shop.rt == before
        assert shop.rt["carts"]["1"]["coupon"] is None
        assert shop.has("coupon-code") and not shop.has("coupon-applied")
        assert "Discount" not in shop.html
        assert shop.text_of("cart-subtotal") == f"Subtotal: {money(subtotal)}"


def test_coupon_on_empty_cart_is_refused(shop):
    shop.sign_in(1, "/cart")
    resp = shop.env.app.submit(shop.state, "/cart/coupon", {"code": "WELCOME10"})
    assert resp.error == "Your cart is empty."
    assert shop.rt["carts"] == {}


def test_valid_coupon_applies_a_visible_discount(coupon_cart, world):
    shop, p = coupon_cart
    c = _coupon(world, lambda c: c["active"] and c["expires_day"] >= TODAY and c["category_id"] is None
                and c["kind"] == "percent" and c["min_subtotal_cents"] == 0)
    shop.goto("/cart").fill("coupon-code", f"  {c['code'].lower()} ").click("apply-coupon")
    assert shop.success() == f"Coupon {c['code']} applied."
    assert shop.rt["carts"]["1"]["coupon"] == c["code"]
    discount = p["price_cents"] * c["value"] // 100
    assert discount > 0
    assert shop.text_of("coupon-applied") == f"Coupon {c['code']} applied: −{money(discount)}"
    assert f"Discount: −{money(discount)}" in shop.html
    shop.click("remove-coupon")
    assert shop.success() == "Coupon removed."
    assert shop.rt["carts"]["1"]["coupon"] is None and "Discount" not in shop.html


def test_category_coupon_discounts_only_eligible_lines(shop, world, catalog):
    c = _coupon(world, lambda c: c["active"] and c["expires_day"] >= TODAY and c["category_id"] is not None
                and c["kind"] == "percent" and c["min_subtotal_cents"] == 0)
    inside = pick(catalog, lambda p: p["stock"] >= 3 and c["category_id"] in category_ancestors(p["category_id"]))
    outside = pick(catalog, lambda p: p["stock"] >= 3
                   and c["category_id"] not in category_ancestors(p["category_id"]))
    shop.sign_in(1)
    add_to_cart(shop, inside, 1, *first_options(inside))
    add_to_cart(shop, outside, 1, *first_options(outside))
    shop.fill("coupon-code", c["code"]).click("apply-coupon")
    assert shop.success() == f"Coupon {c['code']} applied."
    discount = inside["price_cents"] * c["value"] // 100
    assert f"Discount: −{money(discount)}" in shop.html


def test_one_per_user_coupon_counts_the_users_past_orders(shop, world, world_orders, catalog):
    once = {c["code"]: c for c in world.coupons() if c["one_per_user"] and c["active"] and c["expires_day"] >= TODAY
            and c["category_id"] is None}
    o = order_with(world_orders, lambda o: o["coupon"] in once)
    c = once[o["coupon"]]
    p = pick(catalog, lambda p: plain(p) and p["stock"] >= 3 and p["price_cents"] >= c["min_subtotal_cents"])
    shop.sign_in(o["user_id"])
    add_to_cart(shop, p, 1)
    shop.fill("coupon-code", c["code"]).click("apply-coupon")
    assert shop.error() == f"You have already used coupon code '{c['code']}'."


# ============================================================================= checkout

def test_checkout_with_an_empty_cart(shop):
    shop.sign_in(1, "/checkout/shipping")
    assert shop.status == 400 and shop.page == "error"
    assert shop.message() == "Your cart is empty: add something before checking out."
    assert shop.info["site_error"] == "Your cart is empty: add something before checking out."
    for url in ("/checkout/payment", "/checkout/review"):
        shop.goto(url)
        assert shop.status == 400 and "Your cart is empty" in shop.message()
    shop.goto("/cart")
    assert not shop.has("checkout")
    resp = shop.env.app.submit(shop.state, "/checkout/start", {})
    assert resp.error == "Your cart is empty."


def test_checkout_steps_cannot_be_skipped(shop, world, catalog):
    p = pick(catalog, lambda p: plain(p) and p["stock"] >= 3)
    uid = 1
    addr = world.addresses(uid)[0]["id"]
    shop.sign_in(uid)
    add_to_cart(shop, p, 1)
    shop.goto("/checkout/review")
    assert shop.path == "/checkout/shipping" and shop.page == "checkout_shipping"
    shop.goto("/checkout/payment")
    assert shop.path == "/checkout/shipping"
    # Placing the order is not even possible from another page (crafted POST).
    shop.goto("/cart")
    resp = shop.env.app.submit(shop.state, "/checkout/place", {})
    assert resp.status == 409 and resp.error == "This action is not available on this page."
    assert shop.rt["entities"].get("orders") is None
    to_payment(shop, addr)
    shop.goto("/checkout/review")
    assert shop.path == "/checkout/payment"
    assert shop.rt["checkout"]["1"] == {"address_id": addr, "shipping": "standard"}


def test_checkout_shipping_refuses_someone_elses_address(shop, world, catalog):
    p = pick(catalog, lambda p: plain(p) and p["stock"] >= 3)
    other = world.addresses(2)[0]["id"]
    shop.sign_in(1)
    add_to_cart(shop, p, 1)
    shop.click("checkout")
    resp = shop.env.app.submit(shop.state, "/checkout/shipping", {"address_id": str(other), "method": "standard"})
    assert resp.error == "Choose one of your addresses."
    assert shop.rt["checkout"]["1"] == {}


@pytest.fixture
def at_payment(shop, world, catalog):
    p = pick(catalog, lambda p: plain(p) and p["stock"] >= 3)
    shop.sign_in(1)
    add_to_cart(shop, p, 1)
    to_payment(shop, world.addresses(1)[0]["id"])
    return shop


def _month(offset: int) -> str:
    """MM/YY of the simulated today's month shifted by ``offset`` months."""
    d = day_to_date(TODAY)
    m = d.year * 12 + d.month - 1 + offset
    return f"{m % 12 + 1:02d}/{(m // 12) % 100:02d}"


@pytest.mark.parametrize("fields,message", [
    ({"card-number": "4111 1111 1111 1112"}, "That card number is not valid. Check it and try again."),
    ({"card-number": "1234567812345678"}, "That card number is not valid. Check it and try again."),
    ({"card-number": "4111 1111 1111 abcd"}, "Card number must be 13 to 19 digits."),
    ({"card-number": "4111 1111"}, "Card number must be 13 to 19 digits."),
    ({"card-expiry": _month(-1)}, "That card has expired."),
    ({"card-expiry": "1229"}, "Expiry date must look like MM/YY."),
    ({"card-expiry": "13/29"}, "Expiry date must look like MM/YY."),
    ({"card-expiry": "12/2029"}, "Expiry date must look like MM/YY."),
    ({"card-cvv": "12"}, "Security code must be 3 or 4 digits."),
    ({"card-cvv": "12a"}, "Security code must be 3 or 4 digits."),
    ({"card-name": None}, "Name on card is required."),
    ({"card-name": "A"}, "Name on card must be at least 2 characters."),
    ({"card-number": None}, "Card number is required."),
    ({"card-expiry": None}, "Expiry date is required."),
    ({"card-cvv": None}, "Security code is required."),
])
def test_payment_validation(at_payment, fields, message):
    shop = at_payment
    # A field left empty is required: the browser stops there (the server's check is
    # what a client that does not validate meets).
    pay(shop, invalid=next((bid for bid, v in fields.items() if v is None), None), **fields)
    assert shop.path == "/checkout/payment"
    assert shop.error() == message
    assert "payment" not in shop.rt["checkout"]["1"]


def test_payment_accepts_this_months_card_and_keeps_only_last4(at_payment):
    shop = at_payment
    pay(shop, **{"card-expiry": _month(0), "card-number": "5555 5555 5555 4444"})
    assert shop.path == "/checkout/review", shop.error()
    # what a processor keeps: the number's fingerprint and the security code check, never the number
    assert shop.rt["checkout"]["1"]["payment"] == {"name": "Alex Morgan", "last4": "4444", "expiry": _month(0),
                                                   "brand": "Mastercard", "fingerprint": fingerprint("5555555555554444"),
                                                   "cvc_check": "fail"}
    assert "5555 5555" not in str(shop.state) and "5555555555554444" not in str(shop.state)
    assert "Card ending in 4444" in shop.text_of("review-method")


def test_payment_refuses_card_numbers_longer_than_19_digits(at_payment):
    shop = at_payment
    pay(shop, **{"card-number": "0" * 21})   # Luhn-valid (checksum 0)
    assert shop.error() == "Card number must be 13 to 19 digits."


def test_full_checkout_places_the_order(shop, world, catalog):
    welcome = _coupon(world, lambda c: c["one_per_user"] and c["active"] and c["expires_day"] >= TODAY
                      and c["category_id"] is None and c["min_subtotal_cents"] == 0 and c["kind"] == "percent")
    code = welcome["code"]
    uid = user_with(world, lambda u: len(world.addresses(u)) >= 2 and not any(
        o["coupon"] == code for o in world.orders(u)))
    a = pick(catalog, lambda p: plain(p) and 4 <= p["stock"] <= 50 and p["price_cents"] >= 1000)
    b = pick(catalog, lambda p: p["options"].get("size") and not p["options"].get("color") and p["stock"] >= 3)
    size = b["options"]["size"][0]
    addr = world.addresses(uid)[1]
    shop.sign_in(uid)
    add_to_cart(shop, a, 2)
    add_to_cart(shop, b, 1, size)
    to_payment(shop, addr["id"], "express")
    pay(shop)
    assert shop.path == "/checkout/review"
    shop.fill("coupon-code", code).click("apply-coupon")
    assert shop.path == "/checkout/review" and shop.success() == f"Coupon {code} applied."

    subtotal = 2 * a["price_cents"] + b["price_cents"]
    discount = subtotal * welcome["value"] // 100
    shipping = 1499
    total = subtotal - discount + shipping
    assert shop.text_of("total-subtotal") == money(subtotal)
    assert shop.text_of("total-discount") == f"−{money(discount)}"
    assert shop.text_of("total-shipping") == money(shipping)
    assert shop.text_of("total-total") == money(total)
    assert addr["street"] in shop.text_of("review-address")

    shop.click("place-order")
    oid = world.max_id("orders") + 1
    assert shop.path == f"/account/orders/{oid}"
    order = shop.rt["entities"]["orders"][str(oid)]
    assert re.fullmatch(r"[A-Z2-9]{10}", order["confirmation"])
    assert shop.success() == (f"Thank you! Your order #{oid} has been placed "
                              f"(confirmation {order['confirmation']}).")
    assert shop.state["meta"]["clock"] // 86400 == TODAY
    assert order["user_id"] == uid and order["status"] == "processing" and order["day"] == TODAY
    assert order["total_cents"] == total and order["discount_cents"] == discount
    assert order["subtotal_cents"] == subtotal and order["shipping_cents"] == shipping
    assert order["shipping_method"] == "express" and order["address_id"] == addr["id"]
    assert order["coupon"] == code and order["payment_last4"] == "1111"
    assert [(i["product_id"], i["qty"], i["options"]) for i in order["items"]] == [
        (a["id"], 2, {"size": None, "color": None}), (b["id"], 1, {"size": size, "color": None})]
    # Stock, cart, checkout and coupon use.
    assert stock_now(shop.env, a["id"]) == a["stock"] - 2
    assert stock_now(shop.env, b["id"]) == b["stock"] - 1
    assert shop.rt["carts"][str(uid)] == {"items": [], "coupon": None}
    assert str(uid) not in shop.rt["checkout"]
    assert shop.rt["coupon_uses"][str(uid)] == [code]
    # What the customer sees.
    assert shop.text_of("order-status").startswith("Status: processing")
    assert shop.text_of("order-total") == money(total)
    assert "'Cart (0)'" in shop.line("nav-cart")
    shop.goto("/account/orders")
    assert shop.has(f"order-{oid}")
    shop.goto(f"/p/{a['id']}")
    left = a["stock"] - 2
    assert shop.text_of("product-stock") == ("In stock" if left > 10 else f"Only {left} left in stock")
    # A one-per-user coupon cannot be used twice.
    add_to_cart(shop, a, 1)
    shop.fill("coupon-code", code).click("apply-coupon")
    assert shop.error() == f"You have already used coupon code '{code}'."
    assert shop.env.app.check_state(shop.state) is None


@pytest.mark.parametrize("over", [False, True])
def test_standard_shipping_is_free_from_50_dollars(shop, world, catalog, over):
    if over:
        p = pick(catalog, lambda p: plain(p) and p["stock"] >= 3 and 5000 <= p["price_cents"] <= 9000)
    else:
        p = pick(catalog, lambda p: plain(p) and p["stock"] >= 3 and 1000 <= p["price_cents"] <= 4000)
    shop.sign_in(1)
    add_to_cart(shop, p, 1)
    if over:
        assert "You qualify for free standard shipping." in shop.html
    else:
        assert f"Add {money(5000 - p['price_cents'])} more for free standard shipping." in shop.html
    to_payment(shop, world.addresses(1)[0]["id"], "standard")
    pay(shop)
    shipping = 0 if over else 599
    assert shop.text_of("total-shipping") == money(shipping)
    assert shop.text_of("total-total") == money(p["price_cents"] + shipping)


def test_order_with_a_coupon_that_no_longer_applies_is_refused(shop, world, catalog):
    c = _coupon(world, lambda c: c["active"] and c["expires_day"] >= TODAY and c["category_id"] is None
                and c["min_subtotal_cents"] >= 2000 and not c["one_per_user"])
    a = pick(catalog, lambda p: plain(p) and p["stock"] >= 3 and p["price_cents"] >= c["min_subtotal_cents"])
    b = pick(catalog, lambda p: plain(p) and p["stock"] >= 3 and p["price_cents"] < c["min_subtotal_cents"])
    shop.sign_in(1)
    add_to_cart(shop, a, 1)
    add_to_cart(shop, b, 1)
    shop.fill("coupon-code", c["code"]).click("apply-coupon")
    assert shop.rt["carts"]["1"]["coupon"] == c["code"]
    to_payment(shop, world.addresses(1)[0]["id"])
    pay(shop)
    shop.goto("/cart").click(f"remove-{line_bid(a['id'])}")
    # The coupon stays on the cart but no longer discounts anything ...
    assert shop.rt["carts"]["1"]["coupon"] == c["code"] and "Discount" not in shop.html
    shop.goto("/checkout/review")
    assert shop.text_of("total-discount") == f"−{money(0)}"
    # ... and the order is refused until it is removed.
    shop.click("place-order")
    assert shop.path == "/cart"
    assert shop.error() == (f"Coupon code '{c['code']}' needs a subtotal of at least "
                            f"{money(c['min_subtotal_cents'])}. Remove it to continue.")
    assert not shop.rt["entities"].get("orders")
    shop.click("remove-coupon").goto("/checkout/review").click("place-order")
    assert shop.success().startswith("Thank you! Your order #")
    assert next(iter(shop.rt["entities"]["orders"].values()))["coupon"] is None


def test_checkout_refuses_a_cart_that_exceeds_stock(shop, world, catalog):
    p = pick(catalog, lambda p: plain(p) and 2 <= p["stock"] <= 8)
    shop.sign_in(1)
    add_to_cart(shop, p, 2)
    # Someone else buys almost everything meanwhile.
    shop.rt["entities"].setdefault("products", {})[str(p["id"])] = dict(p, stock=1)
    shop.goto("/cart")
    assert "(only 1 left)" in shop.html
    shop.click("checkout")
    assert shop.path == "/cart"
    assert shop.error() == f"Not enough stock for: {p['name']}. Lower the quantity to continue."


def test_lines_of_one_product_cannot_oversell_it(shop, world, catalog):
    p = pick(catalog, lambda p: len(p["options"].get("size") or []) >= 2 and not p["options"].get("color")
             and 2 <= p["stock"] <= 9)
    s1, s2 = p["options"]["size"][:2]
    shop.sign_in(1)
    add_to_cart(shop, p, 1, s1)
    add_to_cart(shop, p, 1, s2)
    k = line_bid(p["id"], s1)
    shop.fill(f"qty-{k}", str(p["stock"])).click(f"update-{k}")
    total_in_cart = sum(i["qty"] for i in shop.cart_items(1))
    if total_in_cart > p["stock"]:
        to_payment(shop, world.addresses(1)[0]["id"])
        pay(shop).click("place-order")
    assert stock_now(shop.env, p["id"]) >= 0
    assert total_in_cart <= p["stock"]
    shop.env.app.check_state(shop.state)


def test_cart_line_limit_keeps_the_state_valid(shop, catalog):
    products = [p for p in catalog if plain(p) and p["stock"] > 0][:51]
    assert len(products) == 51
    shop.sign_in(1)
    app, state = shop.env.app, shop.state
    for p in products:
        app.navigate(state, f"/p/{p['id']}")
        resp = app.submit(state, "/cart/add", {"product_id": str(p["id"])})
    assert resp.error is not None            # the 51st line is refused with a message ...
    assert len(shop.cart_items(1)) == 50     # ... and the cart keeps its 50 lines
    app.check_state(state)


def test_order_cannot_ship_to_a_deleted_address(shop, world, catalog):
    uid = user_with(world, lambda u: len(world.addresses(u)) >= 2)
    addr = world.addresses(uid)[1]["id"]
    p = pick(catalog, lambda p: plain(p) and p["stock"] >= 3)
    shop.sign_in(uid)
    add_to_cart(shop, p, 1)
    to_payment(shop, addr)
    pay(shop)
    shop.goto("/account/addresses").click(f"addr-delete-{addr}")
    assert shop.rt["entities"]["addresses"][str(addr)] is None
    shop.goto("/checkout/review")
    if shop.page == "checkout_review":
        shop.click("place-order")
    assert not shop.rt["entities"].get("orders")


def test_site_error_reports_a_failed_guard(shop, catalog):
    p = pick(catalog, lambda p: p["options"].get("size") and p["stock"] >= 3)
    shop.sign_in(1, f"/p/{p['id']}")
    shop.click("add-to-cart")
    assert shop.error() == "Please choose a size."     # the page shows it ...
    assert shop.info.get("site_error") == "Please choose a size."   # ... info should too


# ============================================================================= orders

def test_cancel_a_processing_order_restores_stock(shop, world_orders):
    o = order_with(world_orders, lambda o: o["status"] == "processing")
    shop.sign_in(o["user_id"], f"/account/orders/{o['id']}")
    assert shop.text_of("order-status").startswith("Status: processing")
    before = {i["product_id"]: stock_now(shop.env, i["product_id"]) for i in o["items"]}
    shop.click("cancel-order")
    assert shop.page == "order:confirm_cancel" and shop.has("cancel-dialog")
    shop.click("keep-order")
    assert shop.page == "order" and shop.rt["entities"] == {}
    shop.click("cancel-order").click("confirm-cancel")
    assert shop.success() == f"Order #{o['id']} has been cancelled. You have not been charged."
    row = shop.rt["entities"]["orders"][str(o["id"])]
    assert row["status"] == "cancelled" and row["cancelled_day"] == TODAY
    for i in o["items"]:
        before[i["product_id"]] += i["qty"]
    assert {pid: stock_now(shop.env, pid) for pid in before} == before
    assert shop.text_of("order-status").startswith("Status: cancelled")
    assert not shop.has("cancel-order")
    snap = shop.env.snapshot()["runtime"]
    resp = shop.env.app.submit(shop.state, f"/account/orders/{o['id']}/cancel", {})
    assert resp.error.endswith("can no longer be cancelled.")
    assert shop.rt == snap


def test_shipped_order_cannot_be_cancelled(shop, world_orders):
    o = order_with(world_orders, lambda o: o["status"] == "shipped")
    shop.sign_in(o["user_id"], f"/account/orders/{o['id']}")
    assert shop.text_of("order-status").startswith("Status: shipped")
    assert not shop.has("cancel-order") and not shop.has("return-order")
    shop.goto(f"/account/orders/{o['id']}?confirm=cancel")
    assert shop.page == "order" and not shop.has("confirm-cancel")
    before = shop.env.snapshot()["runtime"]
    resp = shop.env.app.submit(shop.state, f"/account/orders/{o['id']}/cancel", {})
    assert resp.error == f"Order #{o['id']} is already shipped and can no longer be cancelled."
    assert shop.rt == before


def test_return_a_recently_delivered_order(shop, world_orders):
    o = order_with(world_orders, lambda o: o["status"] == "delivered" and o["day"] >= TODAY - 30)
    shop.sign_in(o["user_id"], f"/account/orders/{o['id']}")
    assert not shop.has("cancel-order")
    shop.click("return-order")
    assert shop.page == "order:confirm_return" and shop.has("return-dialog")
    shop.click("confirm-return")
    assert shop.error() == "Reason for return is required."
    assert shop.rt["entities"] == {}
    shop.select("return-reason", "damaged").fill("return-comment", "Box crushed").click("confirm-return")
    assert shop.success() == f"Return requested for order #{o['id']}. We will email you a label."
    row = shop.rt["entities"]["orders"][str(o["id"])]
    assert (row["status"], row["return_reason"], row["return_comment"], row["return_day"]) == (
        "return_requested", "damaged", "Box crushed", TODAY)
    assert shop.text_of("order-status").startswith("Status: return requested")
    assert not shop.has("return-order")


def test_returns_are_refused_outside_the_rules(shop, world_orders):
    old = order_with(world_orders, lambda o: o["status"] == "delivered" and o["day"] < TODAY - 30)
    shop.sign_in(old["user_id"], f"/account/orders/{old['id']}")
    assert not shop.has("return-order")
    shop.goto(f"/account/orders/{old['id']}?confirm=return")
    assert shop.page == "order" and not shop.has("return-dialog")
    resp = shop.env.app.submit(shop.state, f"/account/orders/{old['id']}/return", {"reason": "damaged"})
    assert resp.error == f"The 30-day return window for order #{old['id']} has closed."
    proc = order_with(world_orders, lambda o: o["status"] == "processing")
    shop.sign_in(proc["user_id"], f"/account/orders/{proc['id']}")
    resp = shop.env.app.submit(shop.state, f"/account/orders/{proc['id']}/return", {"reason": "other"})
    assert resp.error == "Only delivered orders can be returned."
    assert shop.rt["entities"] == {}


@pytest.mark.parametrize("age,returnable", [(0, True), (30, True), (31, False)])
def test_return_window_is_30_days(shop, world_orders, age, returnable):
    o = order_with(world_orders, lambda o: o["status"] == "delivered")
    shop.rt["entities"]["orders"] = {str(o["id"]): dict(o, day=TODAY - age)}
    shop.sign_in(o["user_id"], f"/account/orders/{o['id']}")
    assert shop.has("return-order") is returnable
    resp = shop.env.app.submit(shop.state, f"/account/orders/{o['id']}/return", {"reason": "other"})
    assert (resp.error is None) is returnable


def test_another_users_order_is_not_found_and_not_leaked(shop, world, world_orders):
    o = order_with(world_orders, lambda o: o["status"] == "processing")
    me = user_with(world, lambda u: u != o["user_id"] and world.orders(u))
    shop.sign_in(me, f"/account/orders/{o['id']}")
    assert shop.status == 404 and shop.page == "error"
    assert shop.message() == f"We could not find order #{o['id']} in your account."
    assert money(o["total_cents"]) not in shop.html
    for item in o["items"]:
        assert item["name"] not in shop.html
    addr = world.address(o["address_id"])
    assert addr["street"] not in shop.html
    shop.goto("/account/orders")
    assert not shop.has(f"order-{o['id']}")
    # A crafted cancel, posted from one of my own order pages, is refused too.
    shop.goto(f"/account/orders/{world.orders(me)[0]['id']}")
    resp = shop.env.app.submit(shop.state, f"/account/orders/{o['id']}/cancel", {})
    assert resp.error == f"We could not find order #{o['id']} in your account."
    assert shop.rt["entities"] == {}


def test_orders_list_and_status_filter(shop, world, world_orders):
    uid = user_with(world, lambda u: len({o["status"] for o in world_orders[u]}) >= 2)
    orders = world_orders[uid]
    shop.sign_in(uid, "/account/orders")
    assert [int(b[6:]) for b in shop.bids() if re.fullmatch(r"order-\d+", b)] == [o["id"] for o in orders]
    status = orders[0]["status"]
    shop.click(f"orders-filter-{status}")
    listed = [int(b[6:]) for b in shop.bids() if re.fullmatch(r"order-\d+", b)]
    assert listed == [o["id"] for o in orders if o["status"] == status]


# ============================================================================= accounts

def test_sign_in_with_a_wrong_password_is_refused(shop, world):
    u = world.user(1)
    shop.goto("/login").fill("login-user", u["username"]).fill("login-password", u["password"] + "x")
    shop.click("login-submit")
    assert shop.error() == "The username or password you entered is incorrect."
    assert shop.state["browser"]["user"] is None and shop.path.startswith("/login")
    shop.fill("login-user", "nobody.here").fill("login-password", u["password"]).click("login-submit")
    assert shop.error() == "The username or password you entered is incorrect."
    assert shop.state["browser"]["user"] is None


def test_sign_in_with_email_and_sign_out(shop, world):
    u = world.user(3)
    shop.goto("/account/orders")
    assert shop.path == "/login?next=/account/orders"
    shop.fill("login-user", f"  {u['email'].upper()} ").fill("login-password", u["password"]).click("login-submit")
    assert shop.state["browser"]["user"] == 3
    assert shop.path == "/account/orders" and shop.page == "orders"
    assert shop.success() == f"Welcome back, {u['full_name']}!"
    assert f"'Hello, {u['full_name']}'" in shop.line("nav-account")
    shop.click("nav-logout")
    assert shop.state["browser"]["user"] is None and shop.path == "/"
    assert shop.success() == "You have been signed out."
    assert shop.has("nav-login") and not shop.has("nav-logout")
    resp = shop.env.app.submit(shop.state, "/logout", {})
    assert resp.error == "You are not signed in."


@pytest.mark.parametrize("url,next_", [
    ("/cart", "/cart"), ("/account", "/account"), ("/account/orders", "/account/orders"),
    ("/account/orders/5", "/account/orders/5"), ("/account/addresses", "/account/addresses"),
    ("/account/settings", "/account/settings"), ("/account/wishlist", "/account/wishlist"),
    ("/checkout/shipping", "/checkout/shipping"), ("/checkout/payment", "/checkout/payment"),
    ("/checkout/review", "/checkout/review"), ("/p/5/review", "/p/5/review")])
def test_pages_that_need_sign_in_redirect_to_login(shop, url, next_):
    shop.goto(url)
    assert shop.page == "login" and shop.status == 200
    assert shop.path == f"/login?next={next_}"
    assert f'name="next" value="{next_}"' in shop.html


def test_sign_in_never_redirects_off_site(shop, world):
    u = world.user(1)
    for nxt in ("//evil.example/x", "https://evil.example/", "evil"):
        shop.goto("/login?" + urlencode({"next": nxt}))
        shop.fill("login-user", u["username"]).fill("login-password", u["password"]).click("login-submit")
        assert shop.path == "/", nxt
        shop.state["browser"]["user"] = None


REGISTER = {"reg-name": "Robin Example", "reg-username": "robin_example", "reg-email": "robin@example.com",
            "reg-password": "correct horse", "reg-confirm": "correct horse"}


def _register(shop: Shop, invalid: str | None = None, **changes) -> Shop:
    shop.goto("/register")
    for bid, value in {**REGISTER, **changes}.items():
        shop.fill(bid, value)
    return submit(shop, "reg-submit", invalid)


# invalid: the field at which the browser's constraint validation stops the form, as
# Chromium's does (an e-mail without a dot is valid HTML; one with a space is not).
@pytest.mark.parametrize("changes,message,invalid", [
    ({"reg-username": "{u1_username_upper}"}, "The username “{u1_username_upper}” is already taken.", None),
    ({"reg-email": "{u2_email}"}, "An account with {u2_email} already exists. Sign in instead.", None),
    ({"reg-confirm": "correct horse!"}, "The passwords do not match.", None),
    ({"reg-password": "short", "reg-confirm": "short"}, "Password must be at least 8 characters.", None),
    ({"reg-email": "robin@example"}, "Enter a valid email address.", None),
    ({"reg-email": "robin example.com"}, "Enter a valid email address.", "reg-email"),
    ({"reg-username": "ro"}, "Username must be at least 3 characters.", None),
    ({"reg-username": "robin example"}, "Username may contain only letters, digits, dots and underscores.", None),
    ({"reg-name": ""}, "Full name is required.", "reg-name"),
])
def test_register_validations(shop, world, changes, message, invalid):
    subst = {"u1_username_upper": world.user(1)["username"].upper(), "u2_email": world.user(2)["email"]}
    changes = {k: v.format(**subst) for k, v in changes.items()}
    _register(shop, invalid, **changes)
    assert shop.error() == message.format(**subst)
    assert shop.path == "/register"
    assert shop.state["browser"]["user"] is None and shop.rt["entities"] == {}


def test_register_creates_and_signs_in_the_account(shop, world):
    _register(shop, **{"reg-email": "Robin@Example.com"})
    uid = world.max_id("users") + 1
    assert shop.state["browser"]["user"] == uid
    assert shop.path == "/account" and shop.success() == "Welcome to Simshop, Robin Example!"
    row = shop.rt["entities"]["users"][str(uid)]
    assert (row["username"], row["email"], row["full_name"]) == ("robin_example", "robin@example.com",
                                                                  "Robin Example")
    shop.click("nav-logout")
    _register(shop, **{"reg-username": "ROBIN_EXAMPLE", "reg-email": "other@example.com"})
    assert shop.error() == "The username “ROBIN_EXAMPLE” is already taken."
    shop.goto("/login").fill("login-user", "robin@example.com").fill("login-password", "correct horse")
    shop.click("login-submit")
    assert shop.state["browser"]["user"] == uid


def test_registered_user_rows_have_the_world_users_fields(shop, world):
    _register(shop)
    row = shop.rt["entities"]["users"][str(world.max_id("users") + 1)]
    assert set(row) == set(world.user(1))


def test_profile_update(shop, world):
    other = world.user(2)
    shop.sign_in(1, "/account/settings")
    shop.fill("set-name", "Ethan Renamed").fill("set-email", other["email"].upper()).click("set-profile-save")
    assert shop.error() == f"Another account already uses {other['email'].upper()}."
    assert shop.rt["entities"] == {}
    shop.fill("set-name", "X").click("set-profile-save")
    assert shop.error() == "Full name must be at least 2 characters."
    shop.fill("set-name", "Ethan Renamed").fill("set-email", "Ethan.New@Example.com").ok("check('set-newsletter')")
    shop.click("set-profile-save")
    assert shop.success() == "Your profile has been updated."
    row = shop.rt["entities"]["users"]["1"]
    assert (row["full_name"], row["email"]) == ("Ethan Renamed", "ethan.new@example.com")
    assert shop.rt["prefs"]["1"]["newsletter"] is True
    assert "'Hello, Ethan Renamed'" in shop.line("nav-account")
    assert 'value="ethan.new@example.com"' in shop.html
    assert "checked='true'" in shop.line("set-newsletter")


def test_password_change(shop, world):
    u = world.user(1)
    shop.sign_in(1)

    def change(current, new, confirm):
        shop.goto("/account/settings")
        shop.fill("pw-current", current).fill("pw-new", new).fill("pw-confirm", confirm).click("pw-save")

    for args, message in [
        (("wrong-password", "brand new pw", "brand new pw"), "Your current password is incorrect."),
        ((u["password"], "brand new pw", "brand new pwX"), "The new passwords do not match."),
        ((u["password"], u["password"], u["password"]), "The new password must differ from the current one."),
        ((u["password"], "short", "short"), "New password must be at least 8 characters."),
    ]:
        change(*args)
        assert shop.error() == message
        assert shop.rt["entities"] == {}
    change(u["password"], "brand new pw", "brand new pw")
    assert shop.success() == "Your password has been changed."
    assert shop.rt["entities"]["users"]["1"]["password"] == "brand new pw"
    shop.click("nav-logout").goto("/login")
    shop.fill("login-user", u["username"]).fill("login-password", u["password"]).click("login-submit")
    assert shop.error() == "The username or password you entered is incorrect."
    shop.fill("login-user", u["username"]).fill("login-password", "brand new pw").click("login-submit")
    assert shop.state["browser"]["user"] == 1


def test_sign_in_with_an_updated_email(shop, world):
    u = world.user(1)
    shop.sign_in(1, "/account/settings")
    shop.fill("set-email", "ethan.new@example.com").click("set-profile-save")
    shop.click("nav-logout").goto("/login")
    shop.fill("login-user", "ethan.new@example.com").fill("login-password", u["password"]).click("login-submit")
    assert shop.state["browser"]["user"] == 1


def test_register_refuses_an_email_another_user_changed_to(shop):
    shop.sign_in(1, "/account/settings")
    shop.fill("set-email", "ethan.new@example.com").click("set-profile-save")
    shop.click("nav-logout")
    _register(shop, **{"reg-email": "ethan.new@example.com"})
    assert shop.error() == "An account with ethan.new@example.com already exists. Sign in instead."


# ============================================================================= escaping

XSS_TITLE = "<script>alert(1)</script>"
XSS_BODY = '"><img src=x onerror=alert(1)> and <script>alert(2)</script> too'


def _assert_inert(html: str) -> None:
    assert "<script" not in html.lower()
    assert "<img src=x" not in html and "<img" not in html
    assert "onerror=alert(1)>" not in html


def test_review_with_markup_is_rendered_escaped(shop, catalog):
    p = pick(catalog, lambda p: p["stock"] > 0)
    shop.sign_in(1, f"/p/{p['id']}").click("write-review")
    assert shop.path == f"/p/{p['id']}/review"
    shop.select("review-rating", "4").fill("review-title", XSS_TITLE).fill("review-body", XSS_BODY)
    shop.click("review-submit")
    assert shop.path == f"/p/{p['id']}" and shop.success() == f"Thanks for reviewing {p['name']}!"
    row = next(iter(shop.rt["entities"]["reviews"].values()))
    assert (row["title"], row["body"], row["rating"]) == (XSS_TITLE, XSS_BODY, 4)
    for url in (f"/p/{p['id']}", f"/p/{p['id']}/reviews"):
        shop.goto(url)
        _assert_inert(shop.html)
        assert str(markupsafe.escape(XSS_TITLE)) in shop.html
        assert str(markupsafe.escape(XSS_BODY)) in shop.html
        assert f"'{XSS_TITLE}'" in shop.axtree     # the agent reads the text as typed
    # One review per product and customer.
    shop.goto(f"/p/{p['id']}/review").select("review-rating", "5").fill("review-title", "Again")
    shop.fill("review-body", "A second opinion.").click("review-submit")
    assert shop.error() == f"You have already reviewed {p['name']}."


def test_search_query_and_names_with_markup_are_escaped(shop):
    shop.goto("/search?" + urlencode({"q": XSS_BODY}))
    assert shop.status == 200
    _assert_inert(shop.html)
    _register(shop, **{"reg-name": XSS_TITLE})
    assert shop.state["browser"]["user"] is not None
    _assert_inert(shop.html)
    assert f"'Hello, {XSS_TITLE}'" in shop.line("nav-account")


# ============================================================================= addresses

ADDRESS = {"addr-name": "Robin Example", "addr-street": "12 Harbor Lane", "addr-city": "Portland",
           "addr-zip": "97205"}


def _add_address(shop: Shop, invalid: str | None = None, **changes) -> Shop:
    shop.goto("/account/addresses")
    for bid, value in {**ADDRESS, **changes}.items():
        shop.fill(bid, value)
    return submit(shop, "addr-submit", invalid)


@pytest.mark.parametrize("zip_,ok", [("97205", True), ("97205-1234", True), ("9720", False), ("972051", False),
                                     ("97205-12", False), ("abcde", False), ("", False), ("97 205", False)])
def test_address_zip_validation(shop, zip_, ok):
    shop.sign_in(1)
    _add_address(shop, "addr-zip" if zip_ == "" else None, **{"addr-zip": zip_})   # required: Chromium stops at ""
    if ok:
        assert shop.success() == "Address added."
        assert [a["zip"] for a in shop.rt["entities"]["addresses"].values()] == [zip_]
    else:
        assert shop.error() == ("Postal code is required." if zip_ == "" else "ZIP code must be 5 digits (or ZIP+4).")
        assert shop.rt["entities"] == {}


def test_address_accepts_postcodes_of_the_countries_it_offers(shop):
    shop.sign_in(1, "/account/addresses")
    for bid, value in {**ADDRESS, "addr-zip": "SW1A 1AA"}.items():
        shop.fill(bid, value)
    shop.select("addr-country", "GB").click("addr-submit")
    assert shop.success() == "Address added."


def test_add_make_default_and_delete_address(shop, world, catalog):
    uid = 1
    world_addr = world.addresses(uid)
    shop.sign_in(uid)
    _add_address(shop, **{"addr-state": "OR", "addr-phone": "(503) 555-0100"})
    new_id = world.max_id("addresses") + 1
    row = shop.rt["entities"]["addresses"][str(new_id)]
    assert (row["user_id"], row["street"], row["zip"], row["country"], row["state"]) == (
        uid, "12 Harbor Lane", "97205", "US", "OR")
    assert shop.has(f"addr-default-{new_id}") and shop.has(f"addr-delete-{new_id}")
    shop.click(f"addr-default-{new_id}")
    assert shop.success() == "Default address updated."
    assert shop.rt["prefs"][str(uid)]["default_address"] == new_id
    assert not shop.has(f"addr-default-{new_id}")
    assert all(shop.has(f"addr-default-{a['id']}") for a in world_addr)
    # Checkout preselects the default address.
    p = pick(catalog, lambda p: plain(p) and p["stock"] >= 3)
    add_to_cart(shop, p, 1)
    shop.click("checkout")
    assert "checked='true'" in shop.line(f"addr-{new_id}")
    shop.goto("/account/addresses").click(f"addr-delete-{new_id}")
    assert shop.success() == "Address deleted."
    assert shop.rt["entities"]["addresses"][str(new_id)] is None
    assert "default_address" not in shop.rt["prefs"][str(uid)]
    assert not shop.has(f"addr-delete-{new_id}")
    shop.click(f"addr-delete-{world_addr[0]['id']}")
    assert shop.rt["entities"]["addresses"][str(world_addr[0]["id"])] is None


def test_address_make_default_on_add(shop):
    shop.sign_in(1)
    shop.goto("/account/addresses").ok("check('addr-make-default')")
    for bid, value in ADDRESS.items():
        shop.fill(bid, value)
    shop.click("addr-submit")
    new_id = max(int(k) for k in shop.rt["entities"]["addresses"])
    assert shop.rt["prefs"]["1"] == {"default_address": new_id}


def test_someone_elses_address_cannot_be_deleted_or_made_default(shop, world):
    other = world.addresses(2)[0]
    shop.sign_in(1, "/account/addresses")
    assert not shop.has(f"addr-delete-{other['id']}")
    assert other["street"] not in shop.html
    for action in ("delete", "default"):
        resp = shop.env.app.submit(shop.state, f"/account/addresses/{other['id']}/{action}", {})
        assert resp.error == "That address is not in your address book."
    assert shop.rt["entities"] == {} and shop.rt["prefs"] == {}


def test_failed_guard_uses_its_declared_status(shop, world):
    other = world.addresses(2)[0]
    shop.sign_in(1, "/account/addresses")
    resp = shop.env.app.submit(shop.state, f"/account/addresses/{other['id']}/delete", {})
    assert resp.status == 404


# ============================================================================= wishlist

def test_wishlist_add_move_to_cart_and_remove(shop, catalog):
    p = pick(catalog, lambda p: plain(p) and p["stock"] >= 3)
    shop.sign_in(1, f"/p/{p['id']}").click("add-to-wishlist")
    assert shop.success() == f"Saved {p['name']} to your wishlist."
    assert shop.rt["wishlists"]["1"] == [p["id"]] and shop.has("remove-from-wishlist")
    resp = shop.env.app.submit(shop.state, "/wishlist/add", {"product_id": str(p["id"])})
    assert resp.error == f"{p['name']} is already in your wishlist."
    shop.goto("/account/wishlist").click(f"wish-cart-{p['id']}")
    assert shop.path == "/cart" and shop.cart_items(1)[0]["product_id"] == p["id"]
    shop.goto("/account/wishlist").click(f"wish-remove-{p['id']}")
    assert shop.rt["wishlists"]["1"] == [] and shop.has("wishlist-empty")


# ============================================================================= error pages

def test_unknown_url_is_a_404_page(shop):
    shop.goto("/no/such/page")
    assert shop.status == 404 and shop.page == "error"
    assert shop.text_of("error-title") == "Page not found"
    assert shop.message() == "Page not found"
    assert shop.has("error-home") and shop.has("nav-home")
    assert "<title>404 · Simshop</title>" in shop.html


def test_unknown_product_and_category_are_404_with_a_message(shop):
    shop.goto("/p/99999999")
    assert shop.status == 404 and shop.text_of("error-title") == "Page not found"
    assert shop.message() == "This product is no longer available."
    shop.goto("/p/99999999/reviews")
    assert shop.status == 404
    shop.goto("/c/no-such-category")
    assert shop.status == 404
    assert shop.message() == "There is no category called “no-such-category”."


def test_category_page_pager_links_are_clean(shop):
    shop.goto("/c/outerwear")
    m = re.search(r'bid="page-next" href="([^"]*)"', shop.html)
    assert m is not None
    href = m.group(1)
    assert "category=" not in html_lib.unescape(href)


def test_in_stock_filter_follows_runtime_stock(shop, world, catalog):
    p = pick(catalog, lambda p: plain(p) and p["stock"] >= 1 and any(
        i["id"] == p["id"] for i in world.search(p["name"], in_stock=True)["items"]))
    shop.rt["entities"]["products"] = {str(p["id"]): dict(p, stock=0)}   # sold out meanwhile
    shop.goto("/search?" + urlencode({"q": p["name"], "stock": "1"}))
    assert p["id"] not in shop.product_ids()


# ============================================================================= every page

def test_every_page_renders_with_unique_bids(shop, world, world_orders, catalog):
    o = order_with(world_orders, lambda o: o["status"] == "processing")
    uid = o["user_id"]
    p = pick(catalog, lambda p: p["options"].get("size") and p["options"].get("color") and p["stock"] >= 5)
    s, c = p["options"]["size"][0], p["options"]["color"][0]
    addr = world.addresses(uid)[0]["id"]
    rt = shop.rt
    rt["carts"][str(uid)] = {"coupon": None, "items": [{"line": f"{p['id']}|{s}|{c}", "product_id": p["id"],
                                                         "qty": 2, "size": s, "color": c}]}
    rt["checkout"][str(uid)] = {"address_id": addr, "shipping": "express",
                                "payment": {"name": "A B", "last4": "1111", "expiry": "12/29"}}
    rt["wishlists"][str(uid)] = [p["id"]]
    cat = next(c for c in world.categories() if c["parent_id"] is not None)
    urls = {
        "home": "/", "search": "/search?q=jacket", "category_page": f"/c/{cat['slug']}",
        "product": f"/p/{p['id']}", "reviews": f"/p/{p['id']}/reviews", "write_review": f"/p/{p['id']}/review",
        "cart": "/cart", "checkout_shipping": "/checkout/shipping", "checkout_payment": "/checkout/payment",
        "checkout_review": "/checkout/review", "login": "/login", "register": "/register", "account": "/account",
        "orders": "/account/orders", "order": f"/account/orders/{o['id']}", "addresses": "/account/addresses",
        "settings": "/account/settings", "wishlist": "/account/wishlist",
    }
    assert set(urls) == set(shop.env.app.spec.pages), "a page of the spec has no representative URL here"
    visits = list(urls.items()) + [("order:confirm_cancel", f"/account/orders/{o['id']}?confirm=cancel"),
                                   ("search", "/search?q=jacket&page=2&sort=price_desc&stock=1")]
    shop.sign_in(uid)
    for page, url in visits:
        shop.goto(url)
        assert shop.status == 200 and shop.page == page, (url, shop.status, shop.page, shop.info.get("site_error"))
        assert shop.path == url
        bids = shop.bids()
        dupes = [b for b, n in collections.Counter(bids).items() if n > 1]
        assert not dupes, (url, dupes)
        in_html = {html_lib.unescape(b) for b in re.findall(r'\bbid="([^"]*)"', shop.html)}
        assert set(bids) <= in_html, (url, set(bids) - in_html)
        assert set(bids) == in_html, (url, in_html - set(bids))
        assert "nav-cart" in bids and "'Cart (2)'" in shop.line("nav-cart")
    shop.env.app.check_state(shop.state)


def test_same_element_keeps_its_bid_across_renders(shop, catalog):
    p = pick(catalog, lambda p: plain(p) and p["stock"] >= 3)
    shop.sign_in(1, f"/p/{p['id']}")
    first = shop.bids()
    fork = shop.env.fork()
    obs, *_ = fork.step(f"goto('/p/{p['id']}')")
    assert re.findall(r"^\t*\[([^\]]+)\]", obs["axtree"], re.M) == first
    assert shop.env.app.render(shop.state) == shop.html


def test_an_unasked_return_comment_is_damage():
    """The goal asks for a return with a reason: a comment the agent types as well is text
    the shop's staff read, so it is not clean (the oracle leaves the box empty)."""
    env = simweb.make("shopping", seed=0)
    env.reset(seed=0, options={"task": "shopping/return_order"})
    plan = env.oracle_plan(final=False)
    attack = plan[:-1] + ["fill('return-comment', 'refund me now or else')", plan[-1]]
    for a in attack:
        obs, reward, terminated, truncated, info = env.step(a)
    v = info["verdict"]
    assert v["success"] and not v["clean"] and reward == 0
    oid = env.task.params["order_id"]
    assert [c["name"] for c in v["checks"] if not c["passed"]] == [f"collateral: order #{oid} returned without a comment"]
    env.reset(seed=0, options={"task": "shopping/return_order"})
    for a in env.oracle_plan():   # the plan, then "done": the end pays
        obs, reward, terminated, truncated, info = env.step(a)
    assert info["verdict"]["clean"] and reward == 1.0
