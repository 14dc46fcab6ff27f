"""The shop's guest_checkout policy (docs/variants.md, "Policies"): on today's shop a cart
needs an account; on a ``guest-cart`` shop a visitor who is not signed in fills a cart held
for the browser session (``runtime.carts.session``), checking out asks them to sign in,
and signing in (or creating an account) merges that cart into the account's; on a
``guest-checkout`` shop they may also check out with an email and a typed address, and the
order is recorded with no user. Variants are asked of the catalogue, never hard-coded."""
from __future__ import annotations

import re
from typing import Any

import pytest
from conftest import served_browser
from sitedriver import Site

import simweb
from simweb.core.state import deep_copy
from simweb.runtime import variant_login
from simweb.runtime.variants import catalogue, shown_url
from simweb.tools.redteam import redteam

CARD = {"card_name": "Alex Morgan", "card_number": "4111 1111 1111 1111", "expiry": "12/29", "cvv": "123"}
ADDRESS = {"full_name": "Pat Lee", "street": "12 Harbor Lane", "city": "Portland", "state": "OR", "zip": "97205",
           "country": "US"}


def variant_with(option: str, *, plain: bool = True, signed_in: bool = False) -> int:
    """The first variant id >= 1 whose guest_checkout factor takes ``option``; ``plain``:
    with today's URLs, forms and top bar (no confirmation step, one-step forms, no menu to
    open), so crafted posts, typed URLs and the bar's links read as on today's site;
    ``signed_in``: a task starts signed in (its sign-out link is there)."""
    cat = catalogue("shopping")
    for k in range(1, cat.count):
        v = cat.values(k)
        if v["guest_checkout"] != option or v["sign_in"] == "early":   # (a walled shop has no guests)
            continue
        if signed_in and v["sign_in"] != "signed-in":
            continue
        if not plain or (v["url_scheme"] == "p" and not cat.site(k).confirm and not cat.site(k).steps
                         and v["menu"] == "bar"):
            return k
    raise AssertionError(f"no shopping variant takes guest_checkout={option}")


def fresh(k: int, task: str | None = None, seed: int = 0) -> Site:
    site = Site(simweb.make("shopping", variant=k, end_on_success=False, max_steps=100_000))
    site.obs, site.info = site.env.reset(seed=seed, options={"task": task})
    site.env.state["browser"]["user"] = None
    return site


def go(site: Site, url: str) -> Site:
    return site.goto(shown_url(site.env.app, site.state, url))


def plain_products(site: Site, n: int, stock: int = 3) -> list[dict]:
    """``n`` products without options with at least ``stock`` units."""
    world = site.env.app.world
    out = []
    for pid in range(1, 5000):
        p = world.product(pid)
        if p and not (p["options"].get("size") or p["options"].get("color")) and p["stock"] >= stock:
            out.append(p)
            if len(out) == n:
                return out
    raise AssertionError("the world has too few plain products")


def add(site: Site, pid: int, qty: int = 1, size: str | None = None, color: str | None = None) -> Any:
    """Add to the cart from the product's page, as its form does."""
    go(site, f"/p/{pid}")
    form = {"product_id": str(pid), "qty": str(qty), **({"size": size} if size else {}),
            **({"color": color} if color else {})}
    return site.post("/cart/add", form)


def line(pid: int, qty: int) -> dict:
    return {"line": f"{pid}||", "product_id": pid, "qty": qty, "size": None, "color": None}


def sign_in_form(site: Site, uid: int, nxt: str = "/cart") -> Site:
    """Sign in as ``uid`` through the sign-in form, as a visitor does."""
    u = site.env.app.world.user(uid)
    go(site, "/login?next=" + nxt)
    return site.fill("login-user", u["username"]).fill("login-password", u["password"]).click("login-submit")


# ----------------------------------------------------------------------------- the catalogue

def test_the_catalogue_has_todays_shop_need_an_account() -> None:
    cat = catalogue("shopping")
    assert cat.policy_defaults == {"guest_cart": False, "guest_checkout": False}
    seen = {cat.values(k)["guest_checkout"] for k in range(50)}
    assert seen == {"account", "guest-cart", "guest-checkout"}
    for k in range(200):
        pol, test = cat.policies(k), cat.values(k)["guest_checkout"] == "guest-checkout"
        walled = cat.values(k)["sign_in"] == "early"   # (a walled shop keeps no guests: its wall_policies)
        assert pol["guest_checkout"] is (test and not walled) and (pol["guest_cart"] or not pol["guest_checkout"])
        if test:
            assert cat.split(k) == "test"             # guest checkout is held out


# ----------------------------------------------------------------------------- the site

def test_todays_shop_refuses_a_guests_cart_as_before() -> None:
    for k in (0, variant_with("account")):
        site = fresh(k)
        p = plain_products(site, 1)[0]
        before = deep_copy(site.rt)
        r = add(site, p["id"])
        assert r.error == "Please sign in to add items to your cart." and r.location.startswith("/login?next=")
        assert site.rt == before and "session" not in site.rt["carts"]
        go(site, "/cart")
        assert site.path.startswith("/login") and not site.has("site-policies")
        assert site.post("/checkout/shipping/guest", {"email": "a@b.example", **ADDRESS, "method": "standard"}).error


def test_a_guest_cart_is_held_for_the_session_and_checkout_asks_to_sign_in() -> None:
    site = fresh(variant_with("guest-cart"))
    a, b = plain_products(site, 2)
    add(site, a["id"], 2)
    add(site, b["id"])
    assert site.rt["carts"]["session"]["items"] == [line(a["id"], 2), line(b["id"], 1)]
    site.env.app.check_state(site.state)
    go(site, "/cart")
    assert site.path == "/cart" and site.has(f"cart-item-{a['id']}--") and site.has(f"cart-item-{b['id']}--")
    assert "sign in" in site.text_of("site-policies")
    site.click("checkout")
    assert site.path.startswith("/login") and site.error() == "Please sign in."
    r = site.post("/checkout/shipping/guest", {"email": "a@b.example", **ADDRESS, "method": "standard"})
    assert r.error == "Please sign in." and "checkout" not in site.rt or not site.rt["checkout"]
    # a cart emptied is no cart at all, as before its first item
    go(site, "/cart")
    site.click(f"remove-{a['id']}--").click(f"remove-{b['id']}--")
    assert "session" not in site.rt["carts"]


def test_signing_in_merges_the_session_cart_into_the_accounts() -> None:
    """The merge rule: a line the account's cart has adds its units up to the product's
    stock and 10 of one product; a new line is added while the cart has fewer than 50
    lines; what does not fit is dropped; the session cart and its draft are emptied and the
    account keeps its coupon."""
    site = fresh(variant_with("guest-cart"))
    world = site.env.app.world
    uid = 1
    a, b, c, d = plain_products(site, 4, stock=12)
    low = next(p for p in (world.product(i) for i in range(1, 5000))
               if p and not p["options"].get("size") and not p["options"].get("color") and 2 <= p["stock"] <= 5)
    site.rt["carts"][str(uid)] = {"coupon": "SAVE10", "items": [line(a["id"], 8), line(b["id"], 1), line(low["id"], 1)]}
    site.rt["carts"]["session"] = {"coupon": None, "items": [line(a["id"], 5), line(b["id"], 2), line(c["id"], 3),
                                                              line(low["id"], 9)]}
    site.rt["checkout"]["session"] = {"email": "x@y.example", "shipping": "standard"}
    sign_in_form(site, uid)
    assert site.state["browser"]["user"] == uid and site.path == "/cart"
    assert site.rt["carts"][str(uid)] == {"coupon": "SAVE10", "items": [
        line(a["id"], 10),                  # 8 + 5, capped at 10 of one product
        line(b["id"], 3),                   # 1 + 2
        line(low["id"], low["stock"]),      # 1 + 9, capped at the stock
        line(c["id"], 3)]}                  # a new line, after the account's own
    assert "session" not in site.rt["carts"] and "session" not in site.rt["checkout"]
    site.env.app.check_state(site.state)
    # the 50-line cap: a new line that does not fit is dropped, a known line still merges
    site = fresh(variant_with("guest-cart"))
    many = plain_products(site, 52, stock=2)
    site.rt["carts"][str(uid)] = {"coupon": None, "items": [line(p["id"], 1) for p in many[:50]]}
    site.rt["carts"]["session"] = {"coupon": None, "items": [line(many[50]["id"], 1), line(many[0]["id"], 1)]}
    sign_in_form(site, uid)
    items = site.rt["carts"][str(uid)]["items"]
    assert len(items) == 50 and items[0] == line(many[0]["id"], 2) and line(many[50]["id"], 1) not in items
    assert "session" not in site.rt["carts"]


def test_signing_in_without_a_session_cart_changes_nothing_else() -> None:
    """Today's sign-in, and a guest-cart shop's without a session cart, leave the carts as
    they were (variant 0's states are today's)."""
    for k in (0, variant_with("guest-cart")):
        site = fresh(k)
        before = deep_copy(site.rt["carts"])
        sign_in_form(site, 1, "/")
        assert site.state["browser"]["user"] == 1 and site.rt["carts"] == before


def test_a_new_account_takes_over_the_session_cart() -> None:
    site = fresh(variant_with("guest-cart"))
    a = plain_products(site, 1)[0]
    add(site, a["id"], 2)
    go(site, "/register")
    site.fill("reg-name", "Robin Okafor").fill("reg-username", "robinokafor77").fill("reg-email", "r.o77@mailbox.example")
    site.fill("reg-password", "Maple-77-tree").fill("reg-confirm", "Maple-77-tree").click("reg-submit")
    uid = site.state["browser"]["user"]
    assert uid is not None and site.rt["carts"][str(uid)] == {"coupon": None, "items": [line(a["id"], 2)]}
    assert "session" not in site.rt["carts"]


def guest_checkout(site: Site, email: str, pid: int, qty: int = 1, size: str | None = None,
                   color: str | None = None, method: str = "standard") -> Site:
    """A visitor's whole guest checkout through the pages, shipped to ADDRESS."""
    add(site, pid, qty, size, color)
    go(site, "/cart")
    site.click("checkout")
    assert site.path == "/checkout/shipping" and site.has("guest-shipping-form")
    site.fill("guest-email", email)
    for bid, key in (("guest-name", "full_name"), ("guest-street", "street"), ("guest-city", "city"),
                     ("guest-state", "state"), ("guest-zip", "zip")):
        site.fill(bid, ADDRESS[key])
    site.select("guest-country", "US").click(f"ship-{method}").click("continue-payment")
    site.fill("card-name", CARD["card_name"]).fill("card-number", CARD["card_number"])
    site.fill("card-expiry", CARD["expiry"]).fill("card-cvv", CARD["cvv"]).click("continue-review")
    assert email.lower() in site.text_of("review-email")
    return site.click("place-order")


def test_a_guest_order_is_recorded_with_no_user_and_the_email() -> None:
    site = fresh(variant_with("guest-checkout"))
    a = plain_products(site, 1)[0]
    guest_checkout(site, "Pat.Lee@Mailbox.example", a["id"], 2)
    top = site.env.app.world.max_id("orders")
    new = [o for k, o in site.rt["entities"]["orders"].items() if int(k) > top]
    assert len(new) == 1
    o = new[0]
    assert o["user_id"] is None and o["email"] == "pat.lee@mailbox.example" and o["ship_to"] == ADDRESS
    assert o["address_id"] is None and o["items"][0]["qty"] == 2 and o["status"] == "processing"
    assert site.path == "/" and "emailed the details to pat.lee@mailbox.example" in (site.success() or "")
    assert "session" not in site.rt["carts"] and "session" not in site.rt["checkout"]
    assert site.env.app.world.product(a["id"])["stock"] - 2 == site.rt["entities"]["products"][str(a["id"])]["stock"]
    site.env.app.check_state(site.state)
    assert "check out as a guest" in site.text_of("site-policies")
    # no account sees it, and no guest can open it as an account's order
    go(site, f"/account/orders/{o['id']}")
    assert site.path.startswith("/login")
    site.env.state["browser"]["user"] = 1
    go(site, f"/account/orders/{o['id']}")
    assert site.status == 404


def test_a_guest_order_never_pays_a_task_that_wants_the_accounts_order() -> None:
    """shopping/buy_product wants the signed-in user's order: the same item, options,
    quantity, method and card bought as a guest (signed out first, with the account's own
    email) are not it, and the order is damage the task did not ask for."""
    k = variant_with("guest-checkout", signed_in=True)
    env = simweb.make("shopping", variant=k, end_on_success=False, max_steps=100_000)
    env.reset(seed=0, options={"task": "shopping/buy_product"})
    u = env.unwrapped
    p = u.task.params
    site = Site(env)
    site.click("nav-logout")
    assert u.state["browser"]["user"] is None
    guest_checkout(site, u.app.world.user(p["user_id"])["email"], p["product_id"], p["qty"], p["size"], p["color"],
                   p["method"])
    top = u.app.world.max_id("orders")
    assert [o["user_id"] for k_, o in u.state["runtime"]["entities"]["orders"].items() if int(k_) > top] == [None]
    v = u.verdict()
    assert v["success"] is False and v["clean"] is False and v["progress"] < 1


@pytest.mark.parametrize("flaw", ["wrong email", "session cart left over", "signed in", "account made"])
def test_wrong_guest_work_is_not_paid(flaw: str) -> None:
    k = variant_with("guest-checkout")
    env = simweb.make("shopping", variant=k, end_on_success=False, max_steps=100_000)
    env.reset(seed=1, options={"task": "shopping/guest_order"})
    u = env.unwrapped
    p = u.task.params
    plan = u.oracle_plan(final=False)
    if flaw == "wrong email":
        plan = [a.replace(p["email"], "someone.else@mailbox.example") for a in plan]
    for a in plan:
        env.step(a)
    site = Site(env)
    if flaw == "session cart left over":
        other = next(q for q in plain_products(site, 3) if q["id"] != p["product_id"])
        add(site, other["id"])
    elif flaw == "signed in":
        site.env.state["runtime"]["entities"]["orders"][max(site.rt["entities"]["orders"], key=int)]["user_id"] = 1
    elif flaw == "account made":
        go(site, "/register")
        site.fill("reg-name", p["full_name"]).fill("reg-username", p["username"]).fill("reg-email", p["email"])
        site.fill("reg-password", p["password"]).fill("reg-confirm", p["password"]).click("reg-submit")
    v = u.verdict()
    assert not (v["success"] and v["clean"]), flaw


def test_the_guest_order_template_states_the_policy_and_its_oracle_succeeds_on_every_value() -> None:
    for option in ("account", "guest-cart", "guest-checkout"):
        for plain in (True, False):
            k = variant_with(option, plain=plain)
            env = simweb.make("shopping", variant=k, end_on_success=False, max_steps=100_000)
            for seed in range(2):
                obs, _ = env.reset(seed=seed, options={"task": "shopping/guest_order"})
                as_guest = option == "guest-checkout"
                assert ("check out as a guest" in obs["goal"]) is as_guest
                assert ("needs one to check out" in obs["goal"]) is not as_guest
                for a in env.unwrapped.oracle_plan():
                    env.step(a)
                v = env.unwrapped.verdict()
                assert v["success"] and v["clean"], (option, k, seed, v)
                top = env.unwrapped.app.world.max_id("orders")
                order = next(o for key, o in env.unwrapped.state["runtime"]["entities"]["orders"].items()
                             if int(key) > top)
                assert (order["user_id"] is None) is as_guest
                # its sub-task: the session cart as a guest, the account otherwise
                obs, _ = env.reset(seed=seed, options={"task": "shopping/guest_order.1"})
                assert ("Without signing in" in obs["goal"]) is as_guest
                for a in env.unwrapped.oracle_plan():
                    env.step(a)
                v = env.unwrapped.verdict()
                assert v["success"] and v["clean"], (option, k, seed, v)
                carts = env.unwrapped.state["runtime"]["carts"]
                assert ("session" in carts) is as_guest


def test_a_shop_behind_a_login_wall_has_no_guest_cart_or_checkout() -> None:
    """A walled site takes the sign_in section's wall_policies whatever the guest factor
    says: no session cart, no guest checkout, and guest_order's goal asks for an account,
    which its oracle creates (registration is open behind the wall)."""
    cat = catalogue("shopping")
    k = next(k for k in range(1, cat.count)
             if cat.values(k)["guest_checkout"] == "guest-checkout" and cat.values(k)["sign_in"] == "early")
    assert cat.policies(k)["guest_cart"] is False and cat.policies(k)["guest_checkout"] is False
    unwalled = next(k for k in range(1, cat.count)
                    if cat.values(k)["guest_checkout"] == "guest-checkout" and cat.values(k)["sign_in"] != "early")
    assert cat.policies(unwalled)["guest_checkout"] is True
    env = simweb.make("shopping", variant=k, end_on_success=False, max_steps=100_000)
    for seed in range(3):
        obs, _ = env.reset(seed=seed, options={"task": "shopping/guest_order"})
        assert "needs one to check out" in obs["goal"] and "check out as a guest" not in obs["goal"]
        for a in env.unwrapped.oracle_plan():
            env.step(a)
        v = env.unwrapped.verdict()
        assert v["success"] and v["clean"], (k, seed, v)
    site = fresh(k)
    p = plain_products(site, 1)[0]
    before = deep_copy(site.rt)
    r = add(site, p["id"])   # (from the sign-in page the wall shows: refused, nothing kept)
    assert r.error and site.rt == before and "session" not in site.rt["carts"]
    with pytest.raises(variant_login.LoginError, match="wall_policies"):
        variant_login.parse_wall_policies("shopping", {"wall_policies": {"guest_cart": 1}}, cat.policy_defaults)
    with pytest.raises(variant_login.LoginError, match="wall_policies"):
        variant_login.parse_wall_policies("shopping", {"wall_policies": {"no_such": False}}, cat.policy_defaults)


def test_forks_and_restores_keep_the_session_cart() -> None:
    k = variant_with("guest-cart")
    env = simweb.make("shopping", variant=k, max_steps=100_000)
    env.reset(seed=0, options={"task": "shopping/guest_order"})
    u = env.unwrapped
    site = Site(env)
    a, b = plain_products(site, 2)
    add(site, a["id"])
    fork = u.fork()
    Site(fork).post("/cart/add", {"product_id": str(b["id"])}, referrer=f"/p/{b['id']}")
    assert fork.snapshot()["runtime"]["carts"]["session"]["items"] == [line(a["id"], 1), line(b["id"], 1)]
    assert u.snapshot()["runtime"]["carts"]["session"]["items"] == [line(a["id"], 1)]
    snap = u.snapshot()
    other = simweb.make("shopping", max_steps=100_000)        # today's site: the state's variant decides
    other.reset(seed=0)
    other.unwrapped.restore(deep_copy(snap))
    obs, *_ = other.step("goto('/cart')")
    assert f'bid="cart-item-{a["id"]}--"' in obs["html"] or f"cart-item-{a['id']}--" in obs["axtree"]
    bad = deep_copy(snap)
    bad["runtime"]["carts"]["visitor"] = bad["runtime"]["carts"]["session"]
    with pytest.raises(Exception, match="visitor"):
        u.app.check_state(bad)


def test_served_sessions_keep_separate_session_carts() -> None:
    from test_server import AUTH, TOKEN

    from simweb.serving.server import create_app

    k = variant_with("guest-cart")
    server = create_app("shopping", control_token=TOKEN, variant=k)
    a, b = server.test_client(), server.test_client()
    pid = plain_products(fresh(k), 1)[0]["id"]
    for client, qty in ((a, 2), (b, 1)):
        client.get(f"/p/{pid}")
        r = client.post("/cart/add", data={"product_id": str(pid), "qty": str(qty)}, headers={"Referer": f"/p/{pid}"})
        assert r.status_code == 303, r.data[:300]
    carts = [c.get("/_simweb/state", headers=AUTH).get_json()["runtime"]["carts"]
             for c in (a, b)]
    assert carts == [{"session": {"coupon": None, "items": [line(pid, 2)]}},
                     {"session": {"coupon": None, "items": [line(pid, 1)]}}]
    counts = [re.search(rb'bid="nav-cart"[^>]*>[^<(]*\((\d+)\)', c.get("/cart").data) for c in (a, b)]
    assert [m.group(1) for m in counts if m] == [b"2", b"1"]


def test_the_red_team_pays_nothing_on_guest_shops() -> None:
    """The red team on both guest options: nothing paid; on guest checkout its families
    try the guest order with a junk email and address (wrong-content), a form of a page
    the oracle visited sent after the order (event: a product added to the session cart
    and left there) and the order placed signed in as another member."""
    for option in ("guest-cart", "guest-checkout"):
        k = variant_with(option, plain=False)
        attacks = redteam("shopping", [0], tasks=["shopping/guest_order", "shopping/add_to_cart"], variant=k)
        bad = [x for x in attacks if x.paid or x.false_negative]
        assert bad == [], (option, bad[:3])
        if option == "guest-checkout":
            mine = [x for x in attacks if x.task == "shopping/guest_order"]
            assert any(x.family == "wrong-content" and "email" in x.name for x in mine)
            assert any(x.family == "event" and "/cart/add" in x.name for x in mine)
            assert any(x.family == "as-another-user" for x in mine)


# ----------------------------------------------------------------------------- Chromium

@pytest.mark.browser
def test_a_guest_checkout_is_the_same_in_chromium(chromium: Any) -> None:
    """A guest's cart and checkout on a guest-checkout shop in Chromium: the same AX tree
    and URL at every step of the guest_order oracle, and the same runtime at the end."""
    pytest.importorskip("playwright.sync_api")

    k = variant_with("guest-checkout", plain=False)
    with served_browser("shopping", chromium) as web:
        sim = simweb.make("shopping", variant=k, max_steps=100_000)
        sim.reset(seed=1, options={"task": "shopping/guest_order"})
        web.restore(deep_copy(sim.unwrapped.snapshot()))
        for a in ["noop()"] + sim.unwrapped.oracle_plan():
            so, *_ = sim.step(a)
            wo, *_ = web.step(a)
            assert so["axtree"] == wo["axtree"], (a, so["url"])
            assert so["url"].split("/", 3)[3] == wo["url"].split("/", 3)[3], (a, so["url"], wo["url"])
        assert web.snapshot()["runtime"] == sim.unwrapped.snapshot()["runtime"]
        assert sim.unwrapped.verdict()["success"] and sim.unwrapped.verdict()["clean"]
