"""Building blocks of verdicts: named checks, a plain runtime diff, and typed answers.

A verdict is ``{success, progress, clean, checks: [{name, passed, weight, detail}]}``; the
engine derives it from a task's intended effect (simweb.effects). Answers are matched by
type (number, money, text, date, set), never by an LLM.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from datetime import date, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

Verdict = dict[str, Any]


def check(name: str, passed: bool, weight: float = 1.0, detail: str = "") -> dict[str, Any]:
    """One named goal check."""
    return {"name": name, "passed": bool(passed), "weight": float(weight), "detail": detail}


# ----------------------------------------------------------------------------- state diff

def changed_paths(before: Any, after: Any, prefix: str = "runtime") -> list[str]:
    """Dotted paths of every leaf that differs between two JSON values (sorted).

    Lists compare as values: a changed list is reported at the list's own path."""
    out: list[str] = []
    _diff(before, after, prefix, out)
    return sorted(out)


def _diff(a: Any, b: Any, path: str, out: list[str]) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(a.keys() | b.keys()):
            if k in a and k in b:
                if a[k] != b[k]:
                    _diff(a[k], b[k], f"{path}.{k}", out)
                continue
            # A key present on one side only: an empty container appearing or vanishing is
            # no change; a new object is compared with an empty one, down to its leaves.
            v = a[k] if k in a else b[k]
            if v in ({}, []):
                continue
            if isinstance(v, dict):
                _diff(v if k in a else {}, v if k in b else {}, f"{path}.{k}", out)
            else:
                out.append(f"{path}.{k}")
    elif a != b:
        out.append(path)


# ----------------------------------------------------------------------------- answers

_WS = re.compile(r"\s+")


def normalise_text(s: Any) -> str:
    return _WS.sub(" ", str(s or "")).strip().strip(".").casefold()


def match_exact(answer: str | None, expected: str) -> bool:
    """Case- and space-insensitive equality, ignoring a trailing full stop."""
    return normalise_text(answer) == normalise_text(expected)


_NUM = re.compile(r"[-+]?\$?\s*\d[\d,]*(?:\.\d+)?")


def _number_texts(text: str | None) -> list[str]:
    """Every number in a text as written, without currency sign, separators or spaces."""
    return [m.group(0).replace("$", "").replace(",", "").replace(" ", "") for m in _NUM.finditer(str(text or ""))]


def numbers_in(text: str | None) -> list[float]:
    """Every number in a text ('$1,234.50' -> 1234.5)."""
    out = []
    for raw in _number_texts(text):
        try:
            out.append(float(raw))
        except ValueError:
            continue
    return out


def match_number(answer: str | None, expected: float, tolerance: float = 1e-6) -> bool:
    """The answer contains exactly one number and it is within ``tolerance`` (absolute).

    "$0.00" and "0" both match 0; an answer listing several numbers does not match."""
    nums = numbers_in(answer)
    return len(nums) == 1 and abs(nums[0] - expected) <= tolerance


def match_money(answer: str | None, expected_cents: int) -> bool:
    """The answer contains exactly one number and it is this amount to the cent: "$1,234.50",
    "1234.5" and "1234.500" match 123450 cents; "1234.505" (between two cents) matches none."""
    nums = _number_texts(answer)
    if len(nums) != 1:
        return False
    try:
        amount = Decimal(nums[0])
    except InvalidOperation:
        return False
    return amount * 100 == expected_cents


_DATE_FORMATS = ("%Y-%m-%d", "%B %d, %Y", "%b %d, %Y", "%d %B %Y", "%d %b %Y", "%m/%d/%Y", "%B %d %Y", "%b %d %Y")


def parse_date(text: str | None) -> date | None:
    t = _WS.sub(" ", str(text or "")).strip().rstrip(".")
    for fmt in _DATE_FORMATS:
        try:
            return datetime.strptime(t, fmt).date()
        except ValueError:
            continue
    m = re.search(r"\d{4}-\d{2}-\d{2}", t)
    if m:
        try:
            return datetime.strptime(m.group(0), "%Y-%m-%d").date()
        except ValueError:
            return None
    return None


def match_date(answer: str | None, expected: date) -> bool:
    return parse_date(answer) == expected


def split_items(answer: str | None) -> list[str]:
    """Items of a list answer separated by commas, semicolons, newlines or ' and '."""
    parts = re.split(r"[;,\n]|\band\b", str(answer or ""))
    return [normalise_text(p) for p in parts if normalise_text(p)]


def match_set(answer: str | None, expected: Iterable[str]) -> bool:
    return set(split_items(answer)) == {normalise_text(e) for e in expected}


def match_sequence(answer: str | None, expected: Sequence[str]) -> bool:
    return split_items(answer) == [normalise_text(e) for e in expected]


def answer_of(state: dict) -> str | None:
    """The agent's final message to the user in a state, if any."""
    for msg in reversed(state["browser"]["chat"]):
        if msg["role"] in ("assistant", "infeasible"):
            return msg["message"]
    return None


# ----------------------------------------------------------------------------- answer checks

_ANSWER_KINDS: dict[str, tuple[str, Callable[[Any, Any], bool], Callable[[Any], str]]] = {
    "number": ("is", lambda a, e: match_number(a, e), lambda e: f"{e}"),
    "money": ("is", lambda a, e: match_money(a, e), lambda e: f"${e / 100:,.2f}"),
    "text": ("is", lambda a, e: match_exact(a, e), lambda e: f"{e!r}"),
    "date": ("is", lambda a, e: match_date(a, e), lambda e: e.isoformat()),
    "set": ("lists", lambda a, e: match_set(a, e), lambda e: f"{sorted(e)}"),
}


def answer_check(kind: str, answer: str | None, expected: Any, label: str) -> dict[str, Any]:
    """The check of an information task's typed answer: ``kind`` is number, money (cents),
    text, date or set; the detail says what was expected and what came."""
    verb, matches, show = _ANSWER_KINDS[kind]
    return check(f"answer {verb} the {label}", matches(answer, expected), 1.0,
                 f"expected {show(expected)}, got {answer!r}")
