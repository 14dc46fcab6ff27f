"""Simshop's programmatic verifiers.

Each function is pure: it reads the start and final states (and the read-only world) and
returns a verdict ``{success, progress, clean, checks}`` (see simweb.verify). They read
the runtime layer directly, not the app's page logic, so a bug in a page cannot make a
task look solved. ``clean`` compares start and final runtime against the paths the task
may change: buying one item while also buying another, or emptying the wishlist, is
collateral damage.
"""
from __future__ import annotations

from datetime import date
from typing import Any, Iterable

from simweb.functions import entity_row, new_rows
from simweb.verify import (
    answer_check,
    changed_paths,
    check,
    match_exact,
    refusal_check,
    unexpected,
    verdict,
)

Item = tuple[int, int, "str | None", "str | None"]   # product_id, qty, size, color


def _rt(state: dict) -> dict:
    return state["runtime"]


def _diff(start: dict, final: dict, allowed: Iterable[str]) -> list[str]:
    return unexpected(changed_paths(_rt(start), _rt(final)), allowed)


def _entity(app: Any, state: dict, table: str, eid: Any) -> dict | None:
    return entity_row(app.world, state, app.function_table.entity_loaders, table, eid)


def _new_rows(app: Any, state: dict, table: str) -> list[dict]:
    return new_rows(app.world, state, table)


def _cart_items(state: dict, user_id: int) -> list[dict]:
    return (_rt(state)["carts"].get(str(user_id)) or {}).get("items", [])


# ----------------------------------------------------------------------------- answers

def verify_money_answer(start: dict, final: dict, answer: str | None, cents: int, label: str) -> dict:
    return verdict([answer_check("money", answer, cents, label)], _diff(start, final, []))


def verify_number_answer(start: dict, final: dict, answer: str | None, n: float, label: str) -> dict:
    return verdict([answer_check("number", answer, n, label)], _diff(start, final, []))


def verify_text_answer(start: dict, final: dict, answer: str | None, text: str, label: str) -> dict:
    return verdict([answer_check("text", answer, text, label)], _diff(start, final, []))


def verify_date_answer(start: dict, final: dict, answer: str | None, day: date, label: str) -> dict:
    return verdict([answer_check("date", answer, day, label)], _diff(start, final, []))


def verify_set_answer(start: dict, final: dict, answer: str | None, items: list[str], label: str) -> dict:
    """Every expected item and nothing else, in any order."""
    return verdict([answer_check("set", answer, items, label)], _diff(start, final, []))


def verify_infeasible(start: dict, final: dict) -> dict:
    """The agent reported the task as infeasible (and changed nothing)."""
    return verdict([refusal_check(final)], _diff(start, final, []))


# ----------------------------------------------------------------------------- cart

def _item_checks(items: list[dict], want: Item, where: str) -> list[dict]:
    pid, qty, size, color = want
    line = next((i for i in items if i["product_id"] == pid and (size is None or i.get("size") == size)
                 and (color is None or i.get("color") == color)), None)
    any_line = next((i for i in items if i["product_id"] == pid), None)
    out = [check(f"product {pid} in the {where}", any_line is not None, 1.0)]
    if size is not None:
        out.append(check(f"size {size}", line is not None, 1.0,
                         f"found size {any_line.get('size') if any_line else None!r}"))
    if color is not None:
        out.append(check(f"color {color}", line is not None, 1.0,
                         f"found color {any_line.get('color') if any_line else None!r}"))
    out.append(check(f"quantity {qty}", line is not None and line["qty"] == qty, 1.0,
                     f"found quantity {line['qty'] if line else 0}"))
    return out


def verify_cart_removal(app: Any, start: dict, final: dict, user_id: int, removed: int, keep: list[Item],
                        allowed: list[str]) -> dict:
    """``removed`` left the cart; losing any of the ``keep`` items is collateral damage."""
    items = _cart_items(final, user_id)
    checks = [check(f"product {removed} removed from the cart", all(i["product_id"] != removed for i in items), 1.0)]
    have = {(i["product_id"], i["qty"], i.get("size"), i.get("color")) for i in items}
    lost = [f"runtime.carts.{user_id}: product {k[0]} lost" for k in keep if tuple(k) not in have]
    return verdict(checks, _diff(start, final, allowed) + lost)


def verify_cart(app: Any, start: dict, final: dict, user_id: int, want: list[Item], allowed: list[str]) -> dict:
    """The user's cart holds each wanted item; other items added to it are collateral damage."""
    items = _cart_items(final, user_id)
    checks = []
    for w in want:
        checks += _item_checks(items, w, "cart")
    unexpected_changes = _diff(start, final, allowed)
    wanted_lines = {(w[0], w[2], w[3]) for w in want}
    start_lines = {(i["product_id"], i.get("size"), i.get("color")) for i in _cart_items(start, user_id)}
    extra = [i for i in items if (i["product_id"], i.get("size"), i.get("color")) not in wanted_lines]
    added = [i for i in extra if (i["product_id"], i.get("size"), i.get("color")) not in start_lines]
    unexpected_changes += [f"runtime.carts.{user_id}: added product {i['product_id']}" for i in added]
    return verdict(checks, unexpected_changes)


def verify_multi_cart(app: Any, start: dict, final: dict, user_id: int, qty: tuple[int, int], removed: int,
                      wished: int, allowed: list[str]) -> dict:
    items = _cart_items(final, user_id)
    by_pid = {i["product_id"]: i for i in items}
    wl = _rt(final)["wishlists"].get(str(user_id), [])
    start_wl = _rt(start)["wishlists"].get(str(user_id), [])
    checks = [
        check(f"quantity of {qty[0]} is {qty[1]}", by_pid.get(qty[0], {}).get("qty") == qty[1], 1.0),
        check(f"product {removed} removed", removed not in by_pid, 1.0),
        check(f"product {wished} in the wishlist", wished in wl, 1.0),
    ]
    # Keeping the saved product in the cart is a constraint, not progress: losing it is damage.
    before = {i["product_id"] for i in _cart_items(start, user_id)}
    extra = [f"runtime.carts.{user_id}: added product {p}" for p in by_pid if p not in before]
    if by_pid.get(wished, {}).get("qty") != 1:
        extra.append(f"runtime.carts.{user_id}: product {wished} left the cart")
    extra += [f"runtime.wishlists.{user_id}: product {p}" for p in set(wl) ^ set(start_wl) if p != wished]
    return verdict(checks, _diff(start, final, allowed) + extra)


# ----------------------------------------------------------------------------- orders

def verify_order(app: Any, start: dict, final: dict, user_id: int, want: list[Item], method: str,
                 address_id: int, coupon: str | None, allowed: list[str]) -> dict:
    """A new order of the user contains exactly the wanted items, shipped as asked."""
    orders = [o for o in _new_rows(app, final, "orders") if o["user_id"] == user_id]
    # The best candidate: the new order that contains the most wanted products.
    def score(o: dict) -> int:
        return sum(1 for w in want for i in o["items"] if i["product_id"] == w[0])
    order = max(orders, key=lambda o: (score(o), o["id"]), default=None)
    if order is not None:
        items = [{"product_id": i["product_id"], "qty": i["qty"], "size": (i.get("options") or {}).get("size"),
                  "color": (i.get("options") or {}).get("color")} for i in order["items"]]
        where = "order"
    else:
        items = _cart_items(final, user_id)   # partial credit: the right items at least in the cart
        where = "cart"
    checks = []
    for w in want:
        checks += _item_checks(items, w, where)
    co = _rt(final)["checkout"].get(str(user_id)) or {}
    got_method = order["shipping_method"] if order else co.get("shipping")
    got_addr = order["address_id"] if order else co.get("address_id")
    checks.append(check(f"{method} shipping", got_method == method, 1.0, f"found {got_method!r}"))
    checks.append(check(f"ships to address {address_id}", got_addr == address_id, 1.0, f"found {got_addr!r}"))
    if coupon is not None:
        got = order.get("coupon") if order else (_rt(final)["carts"].get(str(user_id)) or {}).get("coupon")
        checks.append(check(f"coupon {coupon} applied", got == coupon and (not order or order["discount_cents"] > 0),
                            1.0, f"found {got!r}"))
    checks.append(check("order placed", order is not None, 2.0))
    extra: list[str] = []
    if order is not None:
        wanted = {w[0] for w in want}
        extra += [f"order {order['id']}: unrequested product {i['product_id']}" for i in order["items"]
                  if i["product_id"] not in wanted]
        extra += [f"runtime.entities.orders.{o['id']}: a second order" for o in orders if o["id"] != order["id"]]
    return verdict(checks, _diff(start, final, allowed) + extra)


def verify_order_status(app: Any, start: dict, final: dict, order_id: int, fields: dict[str, Any],
                        allowed: list[str]) -> dict:
    o = _entity(app, final, "orders", order_id) or {}
    checks = [check(f"{k} is {v!r}", o.get(k) == v, 1.0, f"found {o.get(k)!r}") for k, v in fields.items()]
    # Restocking the cancelled order's products is expected; other products are not.
    before = _entity(app, start, "orders", order_id) or {"items": []}
    ok_products = {f"runtime.entities.products.{i['product_id']}" for i in before["items"]}
    changes = [c for c in _diff(start, final, [a for a in allowed if a != "runtime.entities.products"])
               if not any(c == p or c.startswith(p + ".") for p in ok_products)]
    return verdict(checks, changes)


def usable_coupon(app: Any, rng: Any, products: list[dict]) -> str | None:
    """A coupon code that applies to a cart of ``products`` (one each) today, if any."""
    today = app.spec.clock["start_day"]
    codes = [c for c in app.world.coupons() if c["active"] and (c["expires_day"] is None or c["expires_day"] >= today)
             and not c["one_per_user"]]
    subtotal = sum(p["price_cents"] for p in products)
    ok = []
    for c in codes:
        if c["category_id"] is not None:
            continue
        if subtotal >= c["min_subtotal_cents"]:
            ok.append(c["code"])
    return rng.choice(sorted(ok)) if ok else None


# ----------------------------------------------------------------------------- account

def verify_new_address(app: Any, start: dict, final: dict, p: dict, allowed: list[str]) -> dict:
    new = [a for a in _new_rows(app, final, "addresses") if a["user_id"] == p["user_id"]]
    def score(a: dict) -> int:
        return sum(a.get(k) == p[k] for k in ("full_name", "street", "city", "zip"))
    a = max(new, key=lambda a: (score(a), a["id"]), default=None) or {}
    checks = [check("an address was added", bool(a), 1.0)]
    checks += [check(f"{k} is {p[k]!r}", a.get(k) == p[k], 1.0, f"found {a.get(k)!r}")
               for k in ("full_name", "street", "city", "zip")]
    checks.append(check("country is US", a.get("country") == "US", 1.0, f"found {a.get('country')!r}"))
    if p["default"]:
        got = (_rt(final)["prefs"].get(str(p["user_id"])) or {}).get("default_address")
        checks.append(check("it is the default address", bool(a) and got == a.get("id"), 1.0))
    extra = [f"runtime.entities.addresses.{x['id']}: an extra address" for x in new if x is not a and a]
    return verdict(checks, _diff(start, final, allowed) + extra)


def verify_profile(app: Any, start: dict, final: dict, p: dict, allowed: list[str]) -> dict:
    u = _entity(app, final, "users", p["user_id"]) or {}
    before = _entity(app, start, "users", p["user_id"]) or {}
    prefs = _rt(final)["prefs"].get(str(p["user_id"])) or {}
    checks = [check(f"email is {p['email']}", u.get("email") == p["email"], 1.0, f"found {u.get('email')!r}"),
              check("newsletter on", prefs.get("newsletter") is True, 1.0)]
    extra = [] if u.get("full_name") == before.get("full_name") else ["runtime.entities.users: full_name changed"]
    extra += [] if u.get("password") == before.get("password") else ["runtime.entities.users: password changed"]
    return verdict(checks, _diff(start, final, allowed) + extra)


def verify_password(app: Any, start: dict, final: dict, p: dict, allowed: list[str]) -> dict:
    u = _entity(app, final, "users", p["user_id"]) or {}
    before = _entity(app, start, "users", p["user_id"]) or {}
    checks = [check("password changed to the new one", u.get("password") == p["new"], 1.0)]
    extra = [f"runtime.entities.users.{p['user_id']}.{k} changed" for k in ("email", "full_name", "username")
             if u.get(k) != before.get(k)]
    return verdict(checks, _diff(start, final, allowed) + extra)


def verify_registration(app: Any, start: dict, final: dict, p: dict, allowed: list[str]) -> dict:
    new = _new_rows(app, final, "users")
    u = next((x for x in new if x["username"] == p["username"]), None) or {}
    checks = [check(f"account {p['username']} exists", bool(u), 1.0),
              check(f"name {p['full_name']}", u.get("full_name") == p["full_name"], 1.0),
              check(f"email {p['email']}", u.get("email") == p["email"].lower(), 1.0),
              check("password as given", u.get("password") == p["password"], 1.0)]
    extra = [f"runtime.entities.users.{x['id']}: an extra account" for x in new if x.get("username") != p["username"]]
    return verdict(checks, _diff(start, final, allowed) + extra)


def verify_wishlist(app: Any, start: dict, final: dict, user_id: int, add: list[int], remove: list[int],
                    allowed: list[str]) -> dict:
    wl = _rt(final)["wishlists"].get(str(user_id), [])
    before = _rt(start)["wishlists"].get(str(user_id), [])
    checks = [check(f"product {pid} in the wishlist", pid in wl, 1.0) for pid in add]
    checks += [check(f"product {pid} not in the wishlist", pid not in wl, 1.0) for pid in remove]
    extra = [f"runtime.wishlists.{user_id}: product {pid}" for pid in set(wl) ^ set(before)
             if pid not in add and pid not in remove]
    return verdict(checks, _diff(start, final, allowed) + extra)


def verify_review(app: Any, start: dict, final: dict, p: dict, allowed: list[str]) -> dict:
    new = [r for r in _new_rows(app, final, "reviews") if r["user_id"] == p["user_id"]]
    r = next((x for x in new if x["product_id"] == p["product_id"]), None) or {}
    checks = [check(f"a review of product {p['product_id']}", bool(r), 1.0),
              check(f"{p['rating']} stars", r.get("rating") == p["rating"], 1.0, f"found {r.get('rating')!r}"),
              check("title as given", match_exact(r.get("title"), p["title"]), 1.0),
              check("text as given", match_exact(r.get("body"), p["body"]), 1.0)]
    extra = [f"runtime.entities.reviews.{x['id']}: another review" for x in new if x is not r]
    return verdict(checks, _diff(start, final, allowed) + extra)
