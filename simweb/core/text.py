"""Text compared as people read it: case, runs of spaces and a trailing full stop aside.

One normalisation for the whole engine: answers (:mod:`simweb.judging.verify`) and the
values a site fills in by itself (:class:`simweb.core.specmodel.Fill`) compare through it.
"""
from __future__ import annotations

import re
from typing import Any

_WS = re.compile(r"\s+")


def normalise_text(s: Any) -> str:
    """``s`` as text, spaces collapsed, stripped, without a trailing full stop, casefolded."""
    return _WS.sub(" ", str(s or "")).strip().strip(".").casefold()


def plural(n: int, word: str) -> str:
    """``n`` and ``word``, in the plural unless ``n`` is 1 ("1 rating", "3 ratings"): the apps'
    ``plural`` template filter and their world text share it."""
    return f"{n} {word}" + ("" if n == 1 else "s")


# "a" before a word that starts with a vowel letter, unless the word starts with a consonant
# sound ("a USB port", "a unique", "a user", "a one-off", "a euro")
_A_VOWEL = re.compile(r"\b([Aa]) (?!(?i:u[nrst]i|use|usu|uti|ura|uro|eu|one\b|once\b|ufo\b)|U[A-Z])(?=[aeiouAEIOU])")
# a word written twice where one part ended and the next began with it ("my old old map",
# "The the Lighthouse Affair"), not a hyphenated word's last part ("a quick-dry dry bag")
_DOUBLED = re.compile(r"(?<![\w-])(\w+) (?i:\1)\b(?!-)")


def tidy_generated(text: str) -> str:
    """Text a world generator assembled from parts, as a person writes it: "a" becomes "an"
    before a vowel sound ("an underrated lens", "an API", but "a USB-C port", "a user"),
    and a word written twice where two parts meet ("my old old map", "The the Lighthouse
    Affair") once. Pure and deterministic (a world's text is part of its generated data)."""
    return _A_VOWEL.sub(r"\1n ", _DOUBLED.sub(r"\1", text))


__all__ = ["normalise_text", "plural", "tidy_generated"]
