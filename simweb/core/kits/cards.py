"""Card checks every app with a payment form needs, registered once per app:

    add_card_functions(FUNCTIONS)     # luhn_ok(number), card_expired(mmyy), card_brand(number),
                                      # card_fingerprint(number), cvc_check(number, mmyy, code)

They take what the spec's payment form already validated (digits without spaces, an expiry
matching ``MM/YY``) and judge it as a real checkout does. What a site keeps of a card is
what real sites and their payment processors keep: its brand, last four digits, expiry and
the name on it, a *fingerprint* of the full number (a keyed hash: the same card always
gives the same one, and no other card does, yet the number cannot be read back from it),
and the result of the issuer's *security code check* (``pass`` or ``fail``); never the
number or the code. A task's verifier judges the card the goal names by all of it
(:func:`card_record`): brand, last four and expiry are a summary that another card shares.
"""
from __future__ import annotations

import hashlib
import hmac

from ..functions import Ctx, FunctionTable
from ..worlddb import day_to_date

#: The processor's key for card fingerprints (shown on no page, stored in no state).
_FINGERPRINT_KEY = b"simweb payment processor: card fingerprint key v1"
#: The issuer's key for the security codes of the cards it has on record only by derivation.
_ISSUER_KEY = b"simweb card issuer: security code key v1"
#: Cards the issuer has issued with a known code: the test cards tasks hand out
#: (number -> (expiry, security code)). Every other number's code is the issuer's secret.
ISSUED = {"4111111111111111": ("12/29", "123")}


def _digits(number: object) -> str:
    return "".join(ch for ch in str(number or "") if ch.isdigit())


def fingerprint(number: str) -> str:
    """The processor's fingerprint of a card number (spaces ignored): 24 hex digits of a
    keyed hash, the same for the same number and different for any other."""
    return hmac.new(_FINGERPRINT_KEY, _digits(number).encode(), hashlib.sha256).hexdigest()[:24]


def issuer_code(number: str, mmyy: str) -> str:
    """The security code the issuer has on record for a card and expiry (four digits for
    American Express, three for the rest)."""
    digits = _digits(number)
    issued = ISSUED.get(digits)
    if issued is not None and issued[0] == mmyy:
        return issued[1]
    n = 4 if digits[:2] in ("34", "37") else 3
    h = int.from_bytes(hmac.new(_ISSUER_KEY, f"{digits}/{mmyy}".encode(), hashlib.sha256).digest()[:8], "big")
    return f"{h % 10 ** n:0{n}d}"


def security_code_check(number: str, mmyy: str, code: str) -> str:
    """The issuer's answer to a security code: ``pass`` when it is the card's (for that
    expiry), ``fail`` otherwise. The payment goes through either way, as with a merchant
    that records the check; the result is kept with the payment."""
    return "pass" if hmac.compare_digest(str(code or "").strip(), issuer_code(number, mmyy)) else "fail"


def card_record(number: str, mmyy: str, **also: str) -> dict[str, str]:
    """What a site keeps of a card paid with its right security code, by the keys of its
    checkout draft: brand, last four, expiry, fingerprint, ``cvc_check: pass`` (and
    ``also``: the name on the card, where the goal gives it). A verifier judges every key."""
    digits = _digits(number)
    return {"brand": _brand(digits), "last4": digits[-4:], "expiry": mmyy, "fingerprint": fingerprint(digits),
            "cvc_check": "pass", **also}


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
    return _brand(str(number or ""))


def card_fingerprint(ctx: Ctx, number: str | None) -> str:
    """:func:`fingerprint` for a spec: what the payment keeps instead of the number."""
    return fingerprint(str(number or ""))


def cvc_check(ctx: Ctx, number: str | None, mmyy: str | None, code: str | None) -> str:
    """:func:`security_code_check` for a spec: ``pass`` or ``fail``, kept with the payment."""
    return security_code_check(str(number or ""), str(mmyy or ""), str(code or ""))


def _brand(s: str) -> str:
    if s.startswith("4"):
        return "Visa"
    if s[:2] in ("51", "52", "53", "54", "55"):
        return "Mastercard"
    if s[:2] in ("34", "37"):
        return "American Express"
    return "Card"


def add_card_functions(table: FunctionTable) -> None:
    """Register :func:`luhn_ok`, :func:`card_expired`, :func:`card_brand`,
    :func:`card_fingerprint` and :func:`cvc_check` in the app's ``table``."""
    for f in (luhn_ok, card_expired, card_brand, card_fingerprint, cvc_check):
        table.function()(f)
