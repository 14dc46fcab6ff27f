"""Simstay's effect builders: the targets its templates declare (see simweb.effects).

Everything else, success, progress and collateral damage, the engine derives from them."""
from __future__ import annotations

from collections.abc import Mapping

from simweb.judging.effects import ANY, Expect, NewRow, Row, eq, text


def booking(bid: int, label: str, **fields: Expect) -> Row:
    """An existing booking of which only ``fields`` may change, each as expected."""
    return Row("bookings", bid, fields, label=label)


def cancelled(bid: int, label: str, fee_cents: int) -> Row:
    """A booking cancelled under its policy: the status, and the fee the policy charges (a
    fact only when there is one: a free cancellation leaves the fee at 0, which it already
    was); the day of cancelling is the site's."""
    return booking(bid, label, status=eq("cancelled"), cancel_fee_cents=eq(fee_cents) if fee_cents else ANY,
                   cancelled_day=ANY)


def new_booking(user_id: int, room: dict, checkin: int, nights: int, guests: int, guest_name: str,
                total_cents: int, card: Mapping[str, str], code: str | None = None, points_used: int = 0,
                label: str = "") -> NewRow:
    """A confirmed booking made at run time with exactly this content, paid with the card the
    goal names (``card``: what the booking keeps of it, :func:`simweb.kits.cards.card_record`:
    brand, last four, expiry, the number's fingerprint and the security code check, every
    key judged)."""
    return NewRow("bookings", {
        "user_id": eq(user_id), "property_id": eq(room["property_id"]), "room_type_id": eq(room["id"]),
        "checkin_day": eq(checkin), "nights": eq(nights), "guests": eq(guests), "guest_name": text(guest_name),
        "status": eq("confirmed"), "discount_code": eq(code), "points_used": eq(points_used),
        "total_cents": eq(total_cents), **{f"payment_{k}": text(v) if k == "name" else eq(v) for k, v in card.items()}},
        label=label or f"a confirmed booking of the {room['name']}")


def favorites_path(user_id: int) -> str:
    return f"favorites.{user_id}"


__all__ = ["booking", "cancelled", "favorites_path", "new_booking"]


