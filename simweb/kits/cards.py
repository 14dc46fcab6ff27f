"""Card checks every app with a payment form needs, registered once per app:

    add_card_functions(FUNCTIONS)     # luhn_ok(number), card_expired(mmyy), card_brand(number)

They take what the spec's payment form already validated (digits without spaces, an expiry
matching ``MM/YY``) and judge it as a real checkout does. What a site keeps of a card is
what real sites keep: its brand, last four digits, expiry and the name on it (never the
number or the security code), and that is what a task's verifier can check.
"""
from __future__ import annotations

from ..functions import Ctx, FunctionTable
from ..worlddb import day_to_date


def luhn_ok(ctx: Ctx, number: str | None) -> bool:
    """The Luhn checksum every real card number satisfies (13 digits or more, digits only)."""
    text = str(number or "")
    digits = [int(d) for d in text if d.isdigit()]
    if len(digits) < 13 or len(digits) != len(text):
        return False
    total = 0
    for i, d in enumerate(reversed(digits)):
        if i % 2:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def card_expired(ctx: Ctx, mmyy: str | None) -> bool:
    """Whether a card expiry 'MM/YY' lies before the simulated today's month (an unreadable
    one counts as expired)."""
    mm, _, yy = str(mmyy or "").partition("/")
    try:
        when = (2000 + int(yy), int(mm))
    except ValueError:
        return True
    d = day_to_date(ctx.today)
    return when < (d.year, d.month)


def card_brand(ctx: Ctx, number: str | None) -> str:
    """The card network of a card number, by its leading digits (Visa, Mastercard, American
    Express), or "Card" for any other."""
    s = str(number or "")
    if s.startswith("4"):
        return "Visa"
    if s[:2] in ("51", "52", "53", "54", "55"):
        return "Mastercard"
    if s[:2] in ("34", "37"):
        return "American Express"
    return "Card"


def add_card_functions(table: FunctionTable) -> None:
    """Register :func:`luhn_ok`, :func:`card_expired` and :func:`card_brand` in the app's ``table``."""
    for f in (luhn_ok, card_expired, card_brand):
        table.function()(f)
