"""Simshop's effect builders: what a task may change in the shop, and to what.

The engine (simweb.effects) judges the rest field by field: an order, address or review
counts only when all of its content matches and it still exists that way at the end;
every other changed order, address, cart line or wishlist entry is collateral damage.
What is left here is the shop's vocabulary (cart lines, orders, the default address)
and the two typed answers the generic answer kinds cannot read (a status with a date,
a product name with its rating).
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import date
from typing import Any

from simweb.judging.effects import ANY, Check, Expect, NewRow, Row, Value, eq, text, where
from simweb.judging.verify import dates_in, normalise_text, numbers_in

Item = tuple[int, int, "str | None", "str | None"]   # product_id, qty, size, color


def cart_lines_of(items: Iterable[Item]) -> dict[tuple, int]:
    """Items as {(product_id, size, color): units}."""
    out: dict[tuple, int] = {}
    for pid, qty, size, color in items:
        out[(pid, size, color)] = out.get((pid, size, color), 0) + qty
    return out


def cart_lines(value: Any) -> dict[tuple, int] | None:
    """A cart's items (the runtime list) as {(product_id, size, color): qty}."""
    if value is None:
        return {}
    if not isinstance(value, list):
        return None
    return cart_lines_of((i["product_id"], i["qty"], i.get("size"), i.get("color")) for i in value)


def cart_items(state: dict, user_id: int) -> list[Item]:
    """The items of a user's cart in ``state``."""
    items = (state["runtime"]["carts"].get(str(user_id)) or {}).get("items") or []
    return [(i["product_id"], i["qty"], i.get("size"), i.get("color")) for i in items]


def _show(lines: dict[tuple, int]) -> str:
    return "{" + ", ".join(f"{qty} × {pid}{'/' + s if s else ''}{'/' + c if c else ''}"
                           for (pid, s, c), qty in sorted(lines.items(), key=repr)) + "}"


def cart_is(user_id: int | str, want: Iterable[Item], label: str = "the cart", weight: float = 1.0) -> Value:
    """The user's cart (``user_id``: the user's id, or the key of a visitor's session
    cart) ends holding exactly ``want`` (units per product and options): another product,
    another size or one more unit fails it."""
    lines = cart_lines_of(want)
    return Value(f"carts.{user_id}.items", where(lambda v: cart_lines(v) == lines, f"holds exactly {_show(lines)}"),
                 label, weight)


def cart_where(user_id: int, test: Any, describe: str, label: str, weight: float = 1.0) -> Value:
    """A fact about the user's cart lines: ``test({(pid, size, color): qty})``."""
    return Value(f"carts.{user_id}.items", where(lambda v: (ls := cart_lines(v)) is not None and test(ls), describe),
                 label, weight)


def wishlist_is(user_id: int, want: Iterable[int], label: str = "the wishlist") -> Value:
    want = sorted(set(want))
    return Value(f"wishlists.{user_id}", where(lambda v: isinstance(v, list) and sorted(v) == want
                                               and len(v) == len(want), f"= {want}"), label)


def _order_items(want: Iterable[Item]) -> Any:
    lines = cart_lines_of(want)

    def test(items: Any) -> bool:
        if not isinstance(items, list):
            return False
        got = cart_lines_of((i["product_id"], i["qty"], (i.get("options") or {}).get("size"),
                      (i.get("options") or {}).get("color")) for i in items)
        return got == lines
    return where(test, f"exactly {_show(lines)}")


def payment_fields(card: Mapping[str, str]) -> dict[str, Expect]:
    """The payment columns of a row paid with ``card`` (a :func:`simweb.kits.cards.card_record`),
    every one judged: ``payment_<key>``, the name on the card as text."""
    return {f"payment_{k}": text(v) if k == "name" else eq(v) for k, v in card.items()}


def order_placed(user_id: int, want: Iterable[Item], method: str, address_id: int, card: Mapping[str, str],
                 coupon: str | None = None, label: str = "the order") -> NewRow:
    """One new processing order of the user with exactly ``want``, shipped and paid as
    asked: with the card the goal names (``card``: what the order keeps of it,
    :func:`simweb.kits.cards.card_record`: the number's fingerprint, the security code
    check passed, expiry and name; brand and last four alone are shared by other cards). Extra units, lines or a second order make it (or the second)
    not count."""
    fields = {"user_id": eq(user_id), "status": eq("processing"), "items": _order_items(want),
              "shipping_method": eq(method), "address_id": eq(address_id), **payment_fields(card),
              "coupon": eq(coupon)}
    if coupon is not None:
        fields["discount_cents"] = where(lambda v: isinstance(v, int) and v > 0, "> 0")
    return NewRow("orders", fields, label, weight=2.0)


def shipped_to(address: Mapping[str, str]) -> Any:
    """A guest order's ``ship_to`` (the guest_checkout policy): the address as given, name,
    street, city and state as text (case and spacing aside), postal code and country exact,
    and nothing else in it."""
    def test(v: Any) -> bool:
        if not isinstance(v, dict) or set(v) != set(address):
            return False
        return all((normalise_text(str(v[k])) == normalise_text(str(want)) if k in ("full_name", "street", "city", "state")
                    else str(v[k]).strip() == want) for k, want in address.items())
    return where(test, "shipped to " + ", ".join(f"{k}={v}" for k, v in address.items()))


def guest_order_placed(email: str, address: Mapping[str, str], want: Iterable[Item], method: str,
                       card: Mapping[str, str], label: str = "the guest order") -> NewRow:
    """One new processing order placed without an account (the guest_checkout policy):
    no user, the goal's email and address, exactly ``want``, shipped and paid as asked. An
    order of a signed-in account (a user id) never is one, and a guest order never is the
    order :func:`order_placed` wants (its user id is the account's)."""
    fields = {"user_id": eq(None), "email": eq(email.lower()), "ship_to": shipped_to(address),
              "address_id": eq(None), "status": eq("processing"), "items": _order_items(want),
              "shipping_method": eq(method), **payment_fields(card), "coupon": eq(None)}
    return NewRow("orders", fields, label, weight=2.0)


def no_return_comment(order_id: int) -> Check:
    """A limit on a return the goal asks for without a comment: the comment box is left as
    it is (empty). Text the agent wrote there unasked is damage (the shop's staff read it)."""
    def test(app: Any, start: dict, final: dict, answer: str | None) -> tuple[bool, str]:
        row = (final["runtime"].get("entities", {}).get("orders") or {}).get(str(order_id)) or {}
        comment = row.get("return_comment")
        return not comment, f"return comment {comment!r}"

    return Check(f"order #{order_id} returned without a comment", test, weight=0.0, collateral=True)


def order_status(order_id: int, status: str, label: str, **also: Any) -> Row:
    """An order moved to ``status``; the day fields its event stamps may change with it."""
    stamps = {"cancelled": ("cancelled_day",), "return_requested": ("return_day", "return_comment")}
    fields = {"status": eq(status), **{f: ANY for f in stamps.get(status, ())},
              **{k: eq(v) for k, v in also.items()}}
    return Row("orders", order_id, fields, label)


def new_address(user_id: int, p: dict) -> NewRow:
    """The address as given (name, street, city and state as text); the phone, which the
    goal does not give, stays as the form leaves it (the spec's ``bookkeeping.defaults``)."""
    return NewRow("addresses", {"user_id": eq(user_id), "full_name": text(p["full_name"]), "street": text(p["street"]),
                                "city": text(p["city"]), "state": text(p["state"]), "zip": eq(p["zip"]),
                                "country": eq("US")}, "the new address")


def default_is_new_address(app: Any, user_id: int, start: dict) -> Value:
    """The default address is one created during the run (an id past every address of
    the start): together with the one new address allowed, that is the new one."""
    top = app.world.max_id("addresses") + int(start["runtime"]["counters"].get("addresses", 0))
    top = max([top, *(int(k) for k in (start["runtime"]["entities"].get("addresses") or {}))])
    return Value(f"prefs.{user_id}.default_address", where(lambda v: isinstance(v, int) and v > top,
                                                           f"a new address (id > {top})"), "the default address")


def usable_coupon(app: Any, rng: Any, products: list[dict]) -> str | None:
    """A coupon code that applies to a cart of ``products`` (one each) today, if any."""
    today = app.spec.clock["start_day"]
    subtotal = sum(p["price_cents"] for p in products)
    ok = [c["code"] for c in app.world.coupons()
          if c["active"] and (c["expires_day"] is None or c["expires_day"] >= today) and not c["one_per_user"]
          and c["category_id"] is None and subtotal >= c["min_subtotal_cents"]]
    return rng.choice(sorted(ok)) if ok else None




# ----------------------------------------------------------------------------- typed answers

def _without(answer: str, phrase: str) -> str | None:
    """The answer with ``phrase`` (normalised) cut out once, or None if it is not there."""
    a, p = normalise_text(answer), normalise_text(phrase)
    i = a.find(p)
    return None if not p or i < 0 else a[:i] + " " + a[i + len(p):]


_STATUSES = ("processing", "shipped", "delivered", "cancelled", "return requested")


def status_and_date(status: str, day: date) -> Check:
    """The answer names the status (as the orders page prints it, 'return requested'
    or 'return_requested') and no other, and exactly one date (in any form
    simweb.verify.dates_in reads, e.g. the page's 'Mar 5, 2026'), in any order and
    wording ('Delivered, placed on Mar 5, 2026')."""
    want = status.replace("_", " ")

    def test(app: Any, start: dict, final: dict, answer: str | None) -> tuple[bool, str]:
        a = normalise_text(answer).replace("_", " ")
        said = [s for s in _STATUSES if re.search(rf"\b{s}\b", a)]
        dates = set(dates_in(answer))
        return said == [want] and dates == {day}, f"expected {want} and {day.isoformat()}, got {answer!r}"
    return Check(f"answer gives the status ({want}) and the date", test)


def name_and_rating(name: str, other: str, rating: float) -> Check:
    """The answer names ``name`` (not ``other``) and gives its rating as the page shows
    it ('4.5', '4.5 out of 5', '4.5 stars')."""

    def test(app: Any, start: dict, final: dict, answer: str | None) -> tuple[bool, str]:
        a, mine, theirs = normalise_text(answer), normalise_text(name), normalise_text(other)
        rest = _without(a, name)
        ok = False
        if rest is not None and (theirs not in a or theirs in mine):
            rest = re.sub(r"\bout of 5\b|/\s*5\b|\bstars?\b", " ", rest)
            nums = numbers_in(rest)
            ok = len(nums) == 1 and abs(nums[0] - rating) < 1e-6
        return ok, f"expected {name!r} rated {rating:.1f}, got {answer!r}"
    return Check("answer names the better-rated product and its rating", test)
