"""Building blocks of verdicts: named checks, a plain runtime diff, and typed answers.

A verdict is ``{success, progress, clean, checks: [{name, passed, weight, detail}]}``; the
engine derives it from a task's intended effect (simweb.effects). Answers are read by type
(number, money, text, date, set, sequence, numbers), never by an LLM: the value the question
asks for, inside ordinary prose and in every format the apps display, and never more than
one candidate (see the section "answers" below and docs/effects.md#answers). An answer is
the agent's final ``send_msg_to_user``; a final ``report_infeasible`` is none.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import Any

from ..core.text import normalise_text

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
#
# An answer is read the way a person reads it: the value the question asks for, found in
# ordinary prose and in every form the apps display (dates "Mar 5, 2026", "March 5, 2026",
# "2026-03-05", "Joined March 5, 2024"; money "$1,234.50"; a name in the goal's quotes).
# Reading follows what the question asks for (one number, one amount, one date, a list),
# and an answer that offers more than one candidate is no answer: "12 or 13", "1 2 3 ...
# 100", two dates, a list with an extra item. Lenient prose reading never lets an answer
# name a second value.

_WS = re.compile(r"\s+")
#: Quotes and markup an answer may wrap a value in ("“Foo”", "**Foo**", "`Foo`").
_WRAPPERS = "\"'“”‘’«»„`*_[]()"


def match_exact(answer: str | None, expected: str) -> bool:
    """Case- and space-insensitive equality, ignoring a trailing full stop."""
    return normalise_text(answer) == normalise_text(expected)


def _bare(s: Any) -> str:
    """Normalised text without the quotes, markup and end punctuation around it."""
    t = normalise_text(s)
    while True:
        u = t.strip(_WRAPPERS + " ").rstrip(".!?;:,").strip()
        if u == t:
            return t
        t = u


# -- numbers

#: A run of digits with its optional sign, currency sign, thousands commas and decimals.
#: A sign counts only when it touches the number and follows a space, an opening bracket,
#: a colon or the start ("-3", "score: -3", "(-3)"), never as a separator ("Total - 382")
#: nor between two numbers ("5-3"); digits glued to letters are names, not numbers ("v2",
#: "web2", "2nd", "c/foo2").
_NUM_RUN = re.compile(r"(?:(?<![^\s(\[:=])(?P<sign>[-+−]))?(?P<cur>\$)?(?<![\w.])(?<!\d,)(?P<digits>\d[\d,]*)(?P<frac>\.\d+)?"
                      r"(?![\w]|\.\d)")
_GROUPED = re.compile(r"\d{1,3}(?:,\d{3})+")
_CURRENCY_AFTER = re.compile(r"\s*(?:usd|dollars?|bucks)\b", re.I)
_PERCENT_AFTER = re.compile(r"\s*(?:%|per\s?cent\b|pct\b)", re.I)
_AFTER_WORDS = re.compile(r"[a-z]+|\d+|[^\sa-z\d]")
_SCALE_AFTER = re.compile(r"\s*(thousand|million|billion)\b", re.I)
_SCALES = {"thousand": Decimal(1000), "million": Decimal(10**6), "billion": Decimal(10**9)}
_CURRENCY_BEFORE = re.compile(r"(?:usd|us\$)\s*$", re.I)
_NUMBER_WORDS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split())}


@dataclass(frozen=True)
class _Num:
    value: Decimal
    money: bool      # written with a currency sign or word ("$12", "12 USD", "12 dollars")
    percent: bool = False   # written as a percentage ("45%", "45 percent")
    words: tuple[str, ...] = ()   # the two words after it ("382 open issues": open, issues)


def _numbers(text: str | None, split_groups: bool = False) -> list[_Num]:
    """Every number written in ``text``, in order. Commas between digits are thousands
    separators where they group by three ("1,234"); else (and always with
    ``split_groups``) they separate numbers ("3,4,5"). Number words (zero to twenty) count
    only in a text without digits ("twelve")."""
    t = str(text or "")
    out: list[_Num] = []
    for m in _NUM_RUN.finditer(t):
        digits = m.group("digits").rstrip(",")
        money = bool(m.group("cur")) or bool(_CURRENCY_AFTER.match(t, m.end())) or bool(
            _CURRENCY_BEFORE.search(t, 0, m.start()))
        negative = m.group("sign") in ("-", "−")
        scale = _SCALE_AFTER.match(t, m.end())
        percent = bool(_PERCENT_AFTER.match(t, m.end()))
        if split_groups or not _GROUPED.fullmatch(digits):
            parts = [d for d in digits.split(",") if d]
        else:
            parts = [digits.replace(",", "")]
        for i, part in enumerate(parts):
            frac = m.group("frac") or "" if i == len(parts) - 1 else ""
            value = Decimal(part + frac)
            if scale and i == len(parts) - 1:
                value *= _SCALES[scale.group(1).casefold()]
            last = i == len(parts) - 1
            out.append(_Num(-value if negative and i == 0 else value, money, percent and last,
                            _words_after(t, m.end()) if last else ()))
    if not out:
        for w in re.findall(r"[a-z]+", t.casefold()):
            if w in _NUMBER_WORDS:
                out.append(_Num(Decimal(_NUMBER_WORDS[w]), False))
    return out


def _words_after(text: str, end: int) -> tuple[str, ...]:
    """Up to two words right after a number, stopping at a number or a sign ("12 reviews")."""
    out: list[str] = []
    for tok in _AFTER_WORDS.findall(text[end:end + 40].casefold())[:2]:
        if not tok.isalpha():
            break
        out.append(tok)
    return tuple(out)


def numbers_in(text: str | None) -> list[float]:
    """Every number in a text ('$1,234.50' -> 1234.5; 'Total - 382' -> 382; '3,4,5' -> 3, 4, 5)."""
    return [float(n.value) for n in _numbers(text)]


def _without_dates(text: str | None) -> str:
    """The text with its calendar dates cut out, so "as of Mar 5, 2026: 12" reads one number."""
    return _DATE.sub(" ", str(text or ""))


#: Words of an answer's label that name no unit ("number of open issues": issues, open).
_NOT_UNITS = frozenset("number of the a an count total most between two best gap in on for with".split())
#: What a page writes after a number of this label word ("382 points" is a score).
_UNIT_SYNONYMS = {"score": ("points", "point"), "balance": ("points", "point")}


def _units(label: str) -> frozenset[str]:
    words = [w for w in re.findall(r"[a-z]+", label.casefold()) if w not in _NOT_UNITS]
    out = set(words) | {w + "s" for w in words} | {w[:-1] for w in words if w.endswith("s")}
    for w in words:
        out.update(_UNIT_SYNONYMS.get(w, ()))
    return frozenset(out)


def match_number(answer: str | None, expected: float, tolerance: float = 1e-6, label: str = "") -> bool:
    """The answer names one number (written once or more) and it is within ``tolerance``.

    "$0.00" and "0" both match 0; "Total - 382" is 382; an answer listing several numbers
    ("12 or 13", "1 2 3 ... 100") does not match. Where several are written, a number the
    label's own word follows wins, as the page writes it ("12 reviews · 4.5 out of 5" is
    12 for a review count; "12 reviews, 13 reviews" is still two)."""
    nums = _numbers(_without_dates(answer))
    values = {n.value for n in nums}
    if len(values) > 1 and label:
        units = _units(label)
        named = {n.value for n in nums if units & set(n.words)}
        values = named or values
    return len(values) == 1 and abs(float(next(iter(values))) - float(expected)) <= tolerance


def match_money(answer: str | None, expected_cents: int) -> bool:
    """The answer names one amount and it is this amount to the cent: "$1,234.50", "1234.5",
    "1,234.50 USD" and "It costs $1,234.50 for 3 nights" (the amount written as money wins
    over the bare numbers around it) match 123450 cents; "1234.505" (between two cents) and
    "$12.34 or $12.35" match none."""
    nums = _numbers(_without_dates(answer))
    marked = {n.value for n in nums if n.money}
    values = marked or {n.value for n in nums}
    return len(values) == 1 and next(iter(values)) * 100 == expected_cents


def match_percent(answer: str | None, expected: float, tolerance: float = 1e-6) -> bool:
    """The answer names one percentage and it is this one: "45", "45%", "45 percent", and
    the tracker's own line "45% complete · 9 of 20 issues closed · 11 open" (a number
    written as a percentage wins over the bare numbers around it, as money does)."""
    nums = _numbers(_without_dates(answer))
    marked = {n.value for n in nums if n.percent}
    values = marked or {n.value for n in nums}
    return len(values) == 1 and abs(float(next(iter(values))) - float(expected)) <= tolerance


def match_numbers(answer: str | None, expected: Sequence[float], ordered: bool = True) -> bool:
    """The answer lists exactly these numbers (in this order when ``ordered``): "3, 4, 5",
    "3,4,5", "3; 4 and 5". Commas are read as the list needs: "1,234" is one number when one
    is asked for and two when two are (no reading can fit two counts at once)."""
    want = [Decimal(str(e)) for e in expected]
    text = _without_dates(answer)
    for split in (False, True):
        got = [n.value for n in _numbers(text, split_groups=split)]
        if len(got) == len(want) and (got == want if ordered else sorted(got) == sorted(want)):
            return True
    return False


# -- dates

_MONTHS = {m: i + 1 for i, m in enumerate(("january", "february", "march", "april", "may", "june", "july",
                                          "august", "september", "october", "november", "december"))}
_MONTH_ABBR = {**{m[:3]: n for m, n in _MONTHS.items()}, "sept": 9}
_MONTH = r"(?:" + "|".join(sorted([*_MONTHS, *_MONTH_ABBR], key=len, reverse=True)) + r")"
_WEEKDAY = r"(?:(?:mon|tues?|wed(?:nes)?|thu(?:rs?)?|fri|sat(?:ur)?|sun)(?:day)?\.?,?\s+)?"
_ORD = r"(?:st|nd|rd|th)?"
_DATE = re.compile(
    r"(?<![\w/-])(?:"
    rf"(?P<iy>\d{{4}})[-/.](?P<im>\d{{1,2}})[-/.](?P<id>\d{{1,2}})(?:t[\d:.]+z?)?"                  # 2026-03-05
    rf"|{_WEEKDAY}(?P<am>{_MONTH})\.?\s+(?P<ad>\d{{1,2}}){_ORD}(?:(?:,\s*|\s+)(?P<ay>\d{{4}}))?"   # Mar 5, 2026
    rf"|{_WEEKDAY}(?:the\s+)?(?P<bd>\d{{1,2}}){_ORD}\s+(?:of\s+)?(?P<bm>{_MONTH})\.?(?:,?\s+(?P<by>\d{{4}}))?"  # 5 March 2026
    r"|(?P<um>\d{1,2})/(?P<ud>\d{1,2})/(?P<uy>\d{4})"                                               # 3/5/2026
    r")(?![\w/])", re.I)


def _date_of(m: re.Match) -> date | None | str:
    """The date a match names; "yearless" for a day without a year, None for no valid date."""
    g = m.groupdict()
    try:
        if g["iy"]:
            return date(int(g["iy"]), int(g["im"]), int(g["id"]))
        if g["um"]:
            a, b, y = int(g["um"]), int(g["ud"]), int(g["uy"])
            # The sites write US English: month first; a first part over 12 can only be a day.
            return date(y, a, b) if a <= 12 else date(y, b, a)
        month = (g["am"] or g["bm"]).casefold()
        n = _MONTHS.get(month) or _MONTH_ABBR[month[:4] if month.startswith("sept") else month[:3]]
        day = int(g["ad"] or g["bd"])
        year = g["ay"] or g["by"]
        if year is None:
            return "yearless" if 1 <= day <= 31 else None
        return date(int(year), n, day)
    except (ValueError, KeyError):
        return None


def dates_in(text: str | None) -> list[date | str]:
    """Every calendar date written in a text, in order ("yearless" for "March 5")."""
    return [d for d in (_date_of(m) for m in _DATE.finditer(str(text or ""))) if d is not None]


def parse_date(text: str | None) -> date | None:
    """The one date a text names (the same date written twice is one), else None."""
    found = set(dates_in(text))
    if len(found) != 1:
        return None
    only = found.pop()
    return only if isinstance(only, date) else None


def match_date(answer: str | None, expected: date) -> bool:
    """The answer names one date, with its year, and it is this one: "2026-03-05", "Mar 5,
    2026", "Joined March 5, 2026", "Thursday, 5th March 2026", "3/5/2026"."""
    return parse_date(answer) == expected


# -- text and lists

#: Words a sentence around an answer may use without naming anything ("The cheapest one is
#: “X”.", "X is the answer."); never a negation. The label's own words count too.
_FILLER = frozenset("""
a an the it it's its this that these those is are was were be been being has have had i i'm i'd my me we our you
your they their answer answers final think believe guess found find see says say said reads shows shown page site
one ones item items of on in at for to from with as so here there which who whose what called named titled
name names title titles by wrote written posted author post posts product products hotel hotels issue issues user
users result results list listed following all both only just exactly simply according current currently
tag tags label labels color colors colour colours community communities category categories available comes come
""".split())
#: What a lead-in ends with, before the value: "... is X", "...: X", "... called X".
_LEAD_ENDS = frozenset("is are was were called named titled by : - – —".split())
#: What a tail starts with, after the value: "X is ...", "X, ...", "X (...)".
_TAIL_STARTS = frozenset("is are was were , ( – — -".split())
_WORD = re.compile(r"[\w'’]+|[:,(–—-]")


def _tokens(s: str) -> list[str]:
    return [w.replace("’", "'") for w in _WORD.findall(s)]


def _filler(tokens: list[str], label: str) -> bool:
    extra = set(_tokens(normalise_text(label)))
    for w in tokens:
        base = w[:-2] if w.endswith("'s") else w
        if not (w in _FILLER or base in _FILLER or w in extra or base in extra or w in _LEAD_ENDS | _TAIL_STARTS):
            return False
    return True


_QUOTED = re.compile(r"“([^“”]+)”|‘([^‘’]+)’|«([^«»]+)»|\"([^\"]+)\"|`([^`]+)`|\*\*([^*]+)\*\*"
                     r"|(?<![\w])'([^']+)'(?![\w])")


def match_text(answer: str | None, expected: str, label: str = "") -> bool:
    """The answer is ``expected`` (case, spaces, end punctuation, quotes and markup aside),
    alone, as the one quoted value in a sentence ('The cheapest is “X”.'), or inside a
    sentence that says nothing else: a lead-in of filler words (and the label's) ending in
    "is", ":" or "called" ("The newest issue's title is X"), a tail of filler words
    starting with "is", a comma or a bracket ("X is the cheapest")."""
    want = _bare(expected)
    if not want:
        return False
    if _bare(answer) == want:
        return True
    raw = normalise_text(answer)
    quoted = {_bare(next(g for g in m.groups() if g is not None)) for m in _QUOTED.finditer(raw)}
    if quoted:
        # one value quoted, and nothing but filler around it ("not “X”" names no answer)
        return quoted == {want} and _filler(_tokens(_QUOTED.sub(" ", raw)), label)
    a = _bare(answer)
    for m in re.finditer(rf"(?<![\w]){re.escape(want)}(?![\w])", a):
        head, tail = _tokens(a[:m.start()]), _tokens(a[m.end():])
        if head and (head[-1] not in _LEAD_ENDS or not _filler(head, label)):
            continue
        if tail and (tail[0] not in _TAIL_STARTS or not _filler(tail, label)):
            continue
        return True
    return False


def split_items(answer: str | None) -> list[str]:
    """Items of a list answer separated by commas, semicolons, newlines or ' and ', each
    without the quotes or markup around it ("“bug”, `ui`" is bug and ui)."""
    parts = re.split(r"[;,\n]|\band\b", str(answer or ""))
    return [b for b in (_bare(p) for p in parts) if b]


#: What may stand between the items of a list: separators, bullets, numbering, quotes.
_LIST_GLUE = re.compile(r"(?:[\s,;/&+|•·*\-–—.:()\[\]\"“”‘«»`]|(?<!\w)['’]|['’](?!\w)|\band\b|\bor\b|\d+[.)])+",
                        re.I)


def _list_rest(answer: str | None, items: Iterable[str]) -> tuple[list[int], str] | None:
    """The first position of each item in the answer (longest items cut out first, so an
    item inside another is not found there) and the text left over, or None when an item
    is missing."""
    text = " " + normalise_text(answer).replace("’", "'") + " "
    want = [normalise_text(i) for i in items]
    where: dict[int, int] = {}
    for i in sorted(range(len(want)), key=lambda k: -len(want[k])):
        pat = re.compile(rf"(?<![\w]){re.escape(want[i])}(?![\w])")
        hit = pat.search(text)
        if hit is None or not want[i]:
            return None
        where[i] = hit.start()
        text = pat.sub(lambda m: "\x00" * len(m.group(0)), text)
    return [where[i] for i in range(len(want))], text.replace("\x00", " ")


def _only_glue(rest: str, label: str) -> bool:
    """Whether what is left of a list answer is separators and a lead-in ("The tags are")."""
    rest = _LIST_GLUE.sub(" ", rest)
    return _filler(_tokens(rest), label)


def match_set(answer: str | None, expected: Iterable[str], label: str = "") -> bool:
    """The answer lists exactly these items, in any order, with any separators (commas,
    "and", new lines, bullets), in quotes or not, after a lead-in ("The tags are ..."):
    every item is there, and nothing else is ("red, blue, navy blue" is not "red, blue")."""
    items = list(dict.fromkeys(normalise_text(e) for e in expected))
    found = _list_rest(answer, items)
    return found is not None and _only_glue(found[1], label)


def match_sequence(answer: str | None, expected: Sequence[str], label: str = "") -> bool:
    """:func:`match_set`, with the items in this order."""
    items = [normalise_text(e) for e in expected]
    if len(set(items)) != len(items):
        return split_items(answer) == items
    found = _list_rest(answer, items)
    return found is not None and found[0] == sorted(found[0]) and _only_glue(found[1], label)


def final_message(state: dict) -> dict | None:
    """The agent's last word to the user: its answer (role ``assistant``) or its report that
    the task cannot be done (role ``infeasible``); None before either. An episode ends here."""
    for msg in reversed(state["browser"]["chat"]):
        if msg["role"] in ("assistant", "infeasible"):
            return msg
    return None


def answer_of(state: dict) -> str | None:
    """The agent's answer in a state: its final message when that is a message to the user
    (``send_msg_to_user``). A final ``report_infeasible`` is no answer, whatever it says:
    BrowserGym and WebArena read it as "N/A, it cannot be done", so an information task
    refused with the right value in the reason is not answered."""
    msg = final_message(state)
    return msg["message"] if msg is not None and msg["role"] == "assistant" else None


# ----------------------------------------------------------------------------- answer checks

_ANSWER_KINDS: dict[str, tuple[str, Callable[[Any, Any, str], bool], Callable[[Any], str]]] = {
    "number": ("is", lambda a, e, label: match_number(a, e, label=label), lambda e: f"{e}"),
    "percent": ("is", lambda a, e, _: match_percent(a, e), lambda e: f"{e}%"),
    "money": ("is", lambda a, e, _: match_money(a, e), lambda e: f"${e / 100:,.2f}"),
    "text": ("is", lambda a, e, label: match_text(a, e, label), lambda e: f"{e!r}"),
    "date": ("is", lambda a, e, _: match_date(a, e), lambda e: e.isoformat()),
    "set": ("lists", lambda a, e, label: match_set(a, e, label), lambda e: f"{sorted(e)}"),
    "sequence": ("lists", lambda a, e, label: match_sequence(a, e, label), lambda e: f"{list(e)} in that order"),
    "numbers": ("lists", lambda a, e, _: match_numbers(a, e), lambda e: f"{list(e)} in that order"),
}


def answer_check(kind: str, answer: str | None, expected: Any, label: str) -> dict[str, Any]:
    """The check of an information task's typed answer: ``kind`` is number, money (cents),
    percent, text, date, set, sequence or numbers (a list of numbers in order); the detail
    says what was expected and what came."""
    verb, matches, show = _ANSWER_KINDS[kind]
    return check(f"answer {verb} the {label}", matches(answer, expected, label), 1.0,
                 f"expected {show(expected)}, got {answer!r}")
