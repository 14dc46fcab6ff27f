"""Intended effects: a task says what may change and to what; the engine judges the rest.

A task declares its intended effect as data (:class:`Effect`): the entity rows it may
change (by id, :class:`Row`), the rows it must create (matched by content, :class:`NewRow`),
rows it must delete (:class:`Gone`), other runtime values (:class:`Value`), a typed answer
(:class:`Answer`) or a refusal with the page that shows why (:class:`Refusal`). Every field
named in a target carries an expectation (:func:`eq`, :func:`text`, :func:`same_set`,
:func:`where`, or :data:`ANY` for "may change, no goal").

From the effect, the start state and the final state the engine derives, field by field:

* the goal facts: one per expected field of a :class:`Row`, one per row a :class:`NewRow`
  asks for (a created row counts only when *all* its content matches, and only while it
  still exists that way at the end), one per :class:`Gone` and :class:`Value`, the answer
  or the refusal. ``success`` is every fact passing, ``progress`` the weighted share.
* ``clean``: every changed field of the runtime that no target claims and that the app's
  declared bookkeeping (:class:`Bookkeeping`, from the spec) does not tolerate is
  collateral damage, reported as its own check naming the path, before and after.

Verifiers no longer keep allowed lists; what is left in ``verifiers/`` builds effects and
the few checks this model cannot express (:class:`Check`, e.g. an ordering).
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..core.specmodel import (  # the spec's bookkeeping, re-exported: simweb.effects' names before
    Bookkeeping,
    Change,
    Fill,
    Involved,
    ParamError,
    RowRule,
    _pattern_match,
)
from .verify import answer_check, answer_of, check, final_message, normalise_text

#: Collateral checks listed one by one; past this many, one summary check stands for the rest.
MAX_COLLATERAL_CHECKS = 40


# ----------------------------------------------------------------------------- expectations

@dataclass(frozen=True)
class Expect:
    """What one field must become: ``test(value)`` must hold. ``test`` None: the field may
    change freely (no goal fact, no collateral)."""

    describe: str
    test: Callable[[Any], bool] | None

    @property
    def is_goal(self) -> bool:
        return self.test is not None

    def holds(self, value: Any) -> bool:
        return self.test is None or bool(self.test(value))


ANY = Expect("any value", None)


def eq(value: Any) -> Expect:
    """Exactly ``value``."""
    return Expect(f"= {value!r}", lambda v: v == value)


def text(value: str) -> Expect:
    """The same text, ignoring case, runs of white space and a trailing full stop."""
    want = normalise_text(value)
    return Expect(f"≈ {value!r}", lambda v: isinstance(v, str) and normalise_text(v) == want)


def same_set(items: Iterable[Any]) -> Expect:
    """A list holding exactly these items once each, in any order (no more, no fewer)."""
    want = sorted({repr(i): i for i in items})
    return Expect("= {" + ", ".join(want) + "}", lambda v: isinstance(v, list) and sorted(map(repr, v)) == want)


def one_of(values: Iterable[Any]) -> Expect:
    allowed = list(values)
    return Expect(f"one of {allowed!r}", lambda v: v in allowed)


def where(test: Callable[[Any], bool], describe: str) -> Expect:
    """Any value for which ``test`` holds (``describe`` says which, for the check's detail)."""
    return Expect(describe, test)


# ----------------------------------------------------------------------------- targets

@dataclass(frozen=True)
class Row:
    """An existing entity row that may change: only the named fields, each as expected."""

    table: str
    id: int
    fields: Mapping[str, Expect]
    label: str = ""
    weight: float = 1.0


@dataclass(frozen=True)
class NewRow:
    """``count`` rows the task must create in ``table``, each matching every expectation in
    ``where`` (content, target, status). A field not named must be what the site fills in
    by itself (the app's ``bookkeeping.defaults``, :class:`Fill`): the site's own value, the
    form's default, the user's own contact details; anything else written there is
    collateral damage, field by field, as are matching rows beyond ``count`` and new rows
    that match nothing."""

    table: str
    where: Mapping[str, Expect]
    label: str = ""
    count: int = 1
    weight: float = 1.0


@dataclass(frozen=True)
class Gone:
    """An entity row the task must delete (or, with ``fields``, tombstone: the row stays
    and the fields become as expected; use a :class:`Row` for that)."""

    table: str
    id: int
    label: str = ""
    weight: float = 1.0


@dataclass(frozen=True)
class Value:
    """A runtime value outside the entity tables (``path`` dotted below ``runtime``, e.g.
    ``carts.34.lines``) that must end as expected; every change below it is claimed."""

    path: str
    expect: Expect
    label: str = ""
    weight: float = 1.0
    #: the leaves below ``path`` (relative, dotted: ``guest.name``) whose value the goal
    #: fixes and ``expect`` judges; any other leaf the app declares a default for
    #: (``bookkeeping.value_defaults``) must hold it (:class:`Fill`)
    names: tuple[str, ...] = ()


@dataclass(frozen=True)
class Answer:
    """A typed answer (kind: number, percent, money, text, date, set, sequence, numbers; see
    verify.answer_check)."""

    kind: str
    expected: Any
    label: str


#: Words that deny what follows them ("it has not shipped", "never delivered").
_NEGATIONS = frozenset({"not", "no", "never", "nor", "without", "cannot", "hardly"})
_REASON_WORD = re.compile(r"[\w'’]+")
_REASON_QUOTED = re.compile(r"“[^“”]*”|‘[^‘’]*’|«[^«»]*»|\"[^\"]*\"|`[^`]*`|(?<!\w)'[^']*'(?!\w)")
_REF = re.compile(r"#(\d+)\b")
_CLAUSE = re.compile(r"[.,;:!?()—–]|\s-\s|\b(?:and|but|so|because)\b")


@dataclass(frozen=True)
class Reason:
    """Why an infeasible request cannot be done, as the refusal must say it: the reason is
    part of the answer, so a refusal that names a false reason, or none, is not paid.

    ``says``: phrases naming the true reason; at least one must be in the refusal.
    ``wrong``: phrases naming the other candidate reasons, false for this instance; none
    may be in it (so a refusal listing every reason fails). A phrase matches whole words,
    case aside; a trailing ``*`` matches any ending (``block*``: blocked, blockers). A
    plain phrase is a claim that a negation just before it cancels ("it has *not* been
    delivered" does not claim a delivery); a phrase with a leading ``~`` names a lack and
    counts however it is put ("~permission": "I have no permission"). Quoted text (a title,
    a name) is no claim and is not read. ``amounts`` (cents): every amount written as
    money must be one of these (a wrong fee is a false reason); ``refs``: every ``#n``
    named must be one of these (an issue that is no blocker)."""

    label: str
    says: tuple[str, ...]
    wrong: tuple[str, ...] = ()
    amounts: tuple[int, ...] | None = None
    refs: tuple[int, ...] | None = None

    def judge(self, message: str) -> tuple[bool, str]:
        """Whether a refusal's message gives this reason, and what it got wrong."""
        from .verify import _numbers

        text = _REASON_QUOTED.sub(" ", str(message or "")).casefold().replace("’", "'")
        lies = [w.lstrip("~") for w in self.wrong if _claims(text, w)]
        if lies:
            return False, f"names a false reason: {', '.join(lies)}"
        if self.amounts is not None:
            bad = sorted({n.value for n in _numbers(text) if n.money and n.value * 100 not in self.amounts})
            if bad:
                return False, f"names a wrong amount: {', '.join(f'${v}' for v in bad)}"
        if self.refs is not None:
            bad_refs = sorted({int(r) for r in _REF.findall(text) if int(r) not in self.refs})
            if bad_refs:
                return False, f"names {', '.join(f'#{r}' for r in bad_refs)}, which is not why"
        if not any(_claims(text, w) for w in self.says):
            return False, f"does not say why ({self.label})"
        return True, f"says why ({self.label})"


def _claims(text: str, phrase: str) -> bool:
    """Whether ``text`` (lower case) makes the claim ``phrase`` (see :class:`Reason`)."""
    lack = phrase.startswith("~")
    body = phrase.lstrip("~").casefold()
    stem = body.endswith("*")
    pattern = r"(?<!\w)" + re.escape(body.rstrip("*")).replace(r"\ ", r"\s+") + (r"" if stem else r"(?!\w)")
    for m in re.finditer(pattern, text):
        if lack:
            return True
        # the three words before it, in its own clause ("I cannot do this: it shipped" claims it)
        clause = _CLAUSE.split(text[max(0, m.start() - 40):m.start()])[-1]
        before = _REASON_WORD.findall(clause)[-3:]
        if not any(w in _NEGATIONS or w.endswith("n't") for w in before):
            return True
    return False


def reason_phrase(phrase: str) -> str:
    """A phrase of a :class:`Reason` as plain words (what the red team writes)."""
    return phrase.lstrip("~").rstrip("*")


@dataclass(frozen=True)
class Refusal:
    """The request must be refused (report_infeasible) after viewing a page that shows why:
    some URL in the browser history is one of ``evidence`` (the same path, any query
    string; an item ending in ``*`` is a prefix: ``/account/orders*``), with the true
    ``reason`` in the refusal's message (see :class:`Reason`)."""

    evidence: tuple[str, ...]
    label: str = "the page that shows why it cannot be done"
    reason: Reason | None = None


@dataclass(frozen=True)
class Check:
    """A goal fact the model cannot express as data (an ordering, a cross-row relation):
    ``test(app, start, final, answer) -> (passed, detail)``.

    With ``collateral`` the check is no goal but a limit: it earns nothing, and when it
    fails the verdict is not clean (reported as ``collateral: <name>``), as a change no
    target claims would be. A sub-task uses it for what its parent asks beyond the part
    that leaves no trace in the runtime (the parent's answer, given anyway)."""

    name: str
    test: Callable[[Any, dict, dict, str | None], tuple[bool, str]]
    weight: float = 1.0
    collateral: bool = False
    #: the test reads the final browser state beyond the answer and the history (the page
    #: shown: :func:`shows`), so a verdict cannot be reused across navigations
    browser: bool = False


Target = Row | NewRow | Gone | Value


def _last_message(final: dict) -> tuple[bool, str]:
    """Whether the agent's last message reports the request infeasible, and that message
    as a check's detail."""
    said = [m for m in final["browser"]["chat"] if m["role"] in ("assistant", "infeasible")]
    return bool(said) and said[-1]["role"] == "infeasible", f"last message: {said[-1] if said else None!r}"


def _not_refused(app: Any, start: dict, final: dict, answer: str | None) -> tuple[bool, str]:
    refused, detail = _last_message(final)
    return not refused, detail


#: The feasible twin of a refusal template: doing it and then calling it impossible is a
#: limit, not a goal: a collateral check, so the verdict is not clean, the sparse reward is
#: 0 and the progress potential is 0 too (a weight-0 fact took success away but left
#: progress, and a progress-mode policy that always acts and always refuses was paid in
#: full on both twins). The engine adds it to every task that is not a refusal
#: (``TaskTemplate.effect_for``): a policy must tell the twins apart, and no task is paid
#: when its work is followed by a refusal (the red team's ``refusal-channel`` family).
NOT_REFUSED = Check("not reported as infeasible", _not_refused, weight=0.0, collateral=True)


@dataclass(frozen=True)
class Effect:
    """A task instance's intended effect. An empty effect (an information task) allows no
    change at all beyond the app's bookkeeping."""

    targets: tuple[Target, ...] = ()
    answer: Answer | None = None
    refusal: Refusal | None = None
    checks: tuple[Check, ...] = ()

    def __post_init__(self) -> None:
        if not (self.targets or self.answer or self.refusal or self.checks):
            raise ValueError("an effect needs at least one target, answer, refusal or check")

    def __add__(self, other: Effect) -> Effect:
        return Effect(self.targets + other.targets, self.answer or other.answer, self.refusal or other.refusal,
                      self.checks + other.checks)


# ----------------------------------------------------------------------------- views

def page_view(app: Any, url: str) -> tuple[str, dict[str, Any], dict[str, Any]] | None:
    """What a URL shows, as the site reads it: (page name, path arguments, query), with
    every query parameter the page declares parsed to its type (absent, empty or malformed:
    the page's default, as the site does) and lists without blanks, sorted. Two URLs that
    show the same listing (parameters in another order, empty fields left in by a form,
    a default written out or left off, ``56`` or ``56.00`` for money) give the same view;
    None for a URL that is no page of the app."""
    from urllib.parse import parse_qs, urlsplit

    parts = urlsplit(url)
    hit = app.spec.match_page(parts.path)
    if hit is None:
        return None
    page, args = hit
    raw = parse_qs(parts.query, keep_blank_values=True)
    query: dict[str, Any] = {}
    for name, param in page.query.items():
        try:
            value = param.parse(raw.get(name))
        except ParamError:
            value = param.default
        query[name] = sorted(v for v in value if v.strip()) if isinstance(value, list) else value
    return page.name, dict(args), query


def shows(url: str, *, free: Sequence[str] = (), name: str = "") -> Check:
    """A goal fact on the final browser state: its active tab shows the page that ``url``
    names, with exactly that URL's filters (:func:`page_view`; every declared query
    parameter counts, so a page with one filter more or one fewer does not pass). Keys in
    ``free`` (a sort order the task does not ask for, the page of results) may take any
    value. The tab must have loaded (status 200) as that page kind, not as the result of a
    form posted to its address, and it is the page the agent ends on that counts: a later
    navigation away, or another tab in front, does not pass."""
    free_keys = frozenset(free)

    def test(app: Any, start: dict, final: dict, answer: str | None) -> tuple[bool, str]:
        want = page_view(app, url)
        if want is None:
            raise ValueError(f"{url!r} is no page of {app.name}")
        browser = final["browser"]
        tab = browser["tabs"][browser["active"]]
        got = page_view(app, tab["url"]) if tab["status"] == 200 else None
        if got is None or tab["page"] != got[0]:
            return False, f"the active tab is on {tab['url']!r} (status {tab['status']}, page {tab['page']!r})"
        wrong = ([f"page {got[0]!r}"] if got[0] != want[0] else []) + [
            f"{k} {got[1].get(k)!r}" for k in sorted(want[1].keys() | got[1].keys()) if got[1].get(k) != want[1].get(k)]
        if not wrong:
            wrong = [f"{k} {got[2].get(k)!r} (want {want[2][k]!r})" for k in sorted(want[2])
                     if k not in free_keys and got[2].get(k) != want[2][k]]
        return not wrong, f"the active tab shows {tab['url']!r}" + (f": {', '.join(wrong)}" if wrong else "")

    return Check(name or f"the browser shows {url}", test, browser=True)


# ----------------------------------------------------------------------------- the diff

_ABSENT = object()


def runtime_changes(app: Any, start: dict, final: dict) -> list[Change]:
    """Every change of the runtime layer from ``start`` to ``final``, field by field, with
    world rows as the baseline of rows the overlay first writes."""
    a, b = start["runtime"], final["runtime"]
    overlays = app.function_table.overlays
    out: list[Change] = []
    for key in sorted(a.keys() | b.keys()):
        if key == "entities":
            out.extend(_entity_changes(app, a.get(key) or {}, b.get(key) or {}))
        elif a.get(key, _ABSENT) != b.get(key, _ABSENT):
            base = overlays.get(key)
            baseline = (lambda segs, fn=base: fn(app.world, *segs)) if base is not None else None
            out.extend(_value_changes(a.get(key, _ABSENT), b.get(key, _ABSENT), key, baseline, ()))
    return out


def _entity_changes(app: Any, before: dict, after: dict) -> Iterator[Change]:
    loaders = app.function_table.entity_loaders
    for table in sorted(before.keys() | after.keys()):
        rows_a, rows_b = before.get(table) or {}, after.get(table) or {}
        top = app.world.max_id(table) if table in loaders else 0
        for key in sorted(rows_a.keys() | rows_b.keys(), key=lambda k: (len(k), k)):
            old, new = rows_a.get(key, _ABSENT), rows_b.get(key, _ABSENT)
            if old == new:
                continue
            world = None
            if (old is _ABSENT or new is _ABSENT) and table in loaders and int(key) <= top:
                world = loaders[table](app.world, int(key))
            old = world if old is _ABSENT else old
            new = world if new is _ABSENT else new
            if old == new:
                continue
            eid = int(key)
            base = f"entities.{table}.{key}"
            if old is None:
                yield Change("new", base, None, new, table, eid)
            elif new is None:
                yield Change("gone", base, old, None, table, eid)
            else:
                for f in sorted(old.keys() | new.keys()):
                    if old.get(f) != new.get(f):
                        yield Change("field", f"{base}.{f}", old.get(f), new.get(f), table, eid, f)


def _value_changes(a: Any, b: Any, path: str, baseline: Callable[[tuple[str, ...]], Any] | None = None,
                   segs: tuple[str, ...] = ()) -> Iterator[Change]:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(a.keys() | b.keys()):
            va, vb = a.get(k, _ABSENT), b.get(k, _ABSENT)
            if va != vb:
                yield from _value_changes(va, vb, f"{path}.{k}", baseline, (*segs, str(k)))
        return
    if baseline is not None and (a is _ABSENT) != (b is _ABSENT):
        # A leaf of a world overlay: where one side has none, the world's value stands in.
        if isinstance(a, dict) or isinstance(b, dict):
            yield from _value_changes({} if a is _ABSENT else a, {} if b is _ABSENT else b, path, baseline, segs)
            return
        if a is _ABSENT:
            a = baseline(segs)
        else:
            b = baseline(segs)
        if a == b:
            return
    # An empty container or a null appearing or vanishing is no change.
    if (a is _ABSENT and (b is None or b in ({}, []))) or (b is _ABSENT and (a is None or a in ({}, []))):
        return
    if a is _ABSENT and isinstance(b, dict):
        yield from _value_changes({}, b, path)
        return
    if b is _ABSENT and isinstance(a, dict):
        yield from _value_changes(a, {}, path)
        return
    yield Change("value", path, None if a is _ABSENT else a, None if b is _ABSENT else b)


def value_at(runtime: dict, path: str) -> Any:
    """The runtime value at a dotted path (None where absent)."""
    cur: Any = runtime
    for seg in path.split("."):
        if isinstance(cur, dict):
            cur = cur.get(seg)
        elif isinstance(cur, list) and seg.isdigit() and int(seg) < len(cur):
            cur = cur[int(seg)]
        else:
            return None
    return cur


def runtime_value(app: Any, state: dict, path: str) -> Any:
    """The runtime value at a dotted path as the site reads it: where the runtime has none
    below a world overlay (forum's ``bans``), the world's value (:func:`value_at` else)."""
    cur: Any = state["runtime"]
    segs = path.split(".")
    for seg in segs:
        if not isinstance(cur, dict) or seg not in cur:
            base = app.function_table.overlays.get(segs[0])
            return base(app.world, *segs[1:]) if base is not None and len(segs) > 1 else None
        cur = cur[seg]
    return cur


# ----------------------------------------------------------------------------- judging

def entity(app: Any, state: dict, table: str, eid: int) -> dict | None:
    """A row as the backend has it in ``state`` (overlay first, then the world)."""
    from ..core.functions import entity_row

    return entity_row(app.world, state, app.function_table.entity_loaders, table, eid)


def evaluate(app: Any, effect: Effect, start: dict, final: dict, answer: str | None = None) -> dict:
    """The verdict ``{success, progress, clean, checks}`` of ``final`` against the effect."""
    if answer is None:
        answer = answer_of(final)
    changes = runtime_changes(app, start, final)
    claimed: set[str] = set()
    checks: list[dict] = []
    created: list[tuple[NewRow, Change]] = []
    for target in effect.targets:
        checks.extend(_judge(app, target, start, final, changes, claimed, created))
    if effect.answer is not None:
        a = effect.answer
        checks.append(answer_check(a.kind, answer, a.expected, a.label))
    if effect.refusal is not None:
        checks.extend(_refusal_checks(effect.refusal, final))
    overdone: list[dict] = []
    for c in effect.checks:
        passed, detail = c.test(app, start, final, answer)
        if not c.collateral:
            checks.append(check(c.name, passed, c.weight, detail))
        elif not passed:
            overdone.append({"name": f"collateral: {c.name}", "passed": False, "weight": 0.0, "detail": detail})
    bookkeeping: Bookkeeping = getattr(app.spec, "bookkeeping", None) or Bookkeeping()
    involved = (Involved.of(claimed, changes, bookkeeping.references, lambda t, i: entity(app, final, t, i),
                            [t.path for t in effect.targets if isinstance(t, Value)],
                            lambda t, i: entity(app, start, t, i), lambda p: runtime_value(app, start, p),
                            lambda p: runtime_value(app, final, p))
                if bookkeeping.echoes else None)
    overdone.extend(_as_somebody_else(app, start, final, changes, claimed))
    damage = [c for c in changes if c.path not in claimed and not _claimed_row(c, claimed)
              and not bookkeeping.tolerates(c, involved)]
    damage.extend(_unasked(app, effect, bookkeeping, start, changes, created))
    return _verdict(checks, damage, overdone)


def _unasked(app: Any, effect: Effect, bookkeeping: Bookkeeping, start: dict, changes: list[Change],
             created: list[tuple[NewRow, Change]]) -> list[Change]:
    """What a task wrote that its goal did not ask for, inside what it claims whole: each
    field of a created row that its :class:`NewRow` does not name and that does not hold
    what the site fills in by itself (:class:`Fill`; an undeclared field never does), and
    each leaf below a :class:`Value` that the value does not name and that the app
    declares a default for. Each is a change from that default to what was written."""
    user_id = goal_user(start)
    read: dict[str, dict | None] = {}     # the goal user's row, read once when a rule needs it

    def own() -> dict | None:
        if "user" not in read:
            read["user"] = entity(app, start, "users", user_id) if user_id is not None else None
        return read["user"]

    out: list[Change] = []
    for t, c in created:
        fills = bookkeeping.defaults.get(t.table, {})
        for f in sorted(c.after or {}):
            if f == "id" or f in t.where:
                continue
            rule = fills.get(f)
            got = c.after[f]
            if rule is None:
                out.append(Change("field", f"{c.path}.{f}", "(no default declared)", got, c.table, c.id, f))
            elif not rule.holds(got, own()):
                out.append(Change("field", f"{c.path}.{f}", rule.expected(own()), got, c.table, c.id, f))
    if bookkeeping.value_defaults:
        for v in effect.targets:
            if not isinstance(v, Value):
                continue
            for c in changes:
                if not c.path.startswith(v.path + ".") or c.kind != "value" or c.path[len(v.path) + 1:] in v.names:
                    continue
                rule = next((r for p, r in bookkeeping.value_defaults if _pattern_match(p, c.path)
                             and len(p.split(".")) == len(c.path.split("."))), None)
                if rule is not None and not rule.holds(c.after, own()):
                    out.append(Change("value", c.path, rule.expected(own()), c.after))
    return out


#: The runtime path of the site's sign-in log (the auth kit's sign-in event appends the
#: account of each sign-in). The engine judges it, not the effect: a task is done by the
#: user the goal speaks for.
SIGN_IN_LOG = "signins"
#: The parameter of an instance drawn on a site where the task starts signed out
#: (simweb.runtime.variant_login): the account its goal states, ``{username, password}``.
SIGN_IN_AS = "sign_in_as"


def goal_user(start: dict) -> Any:
    """The user the goal speaks for: the user the task starts signed in as, or, where the
    task starts signed out and signs in itself (its parameters carry ``sign_in_as``), the
    task's ``user_id``; None for a task of an anonymous visitor."""
    own = start["browser"].get("user")
    if own is None:
        params = (start["meta"].get("task") or {}).get("params") or {}
        if isinstance(params.get(SIGN_IN_AS), dict) and params.get("user_id") is not None:
            return int(params["user_id"])
    return own


def _as_somebody_else(app: Any, start: dict, final: dict, changes: list[Change], claimed: set[str]) -> list[dict]:
    """Collateral checks for work done as another account than the goal's user (the user
    the task starts signed in as, or signs in as: :func:`goal_user`; none for a task of an
    anonymous visitor): each sign-in of the run as another account, and a session that
    ends signed in as one. Signing in again as oneself, signing out, and the account a
    task registers are the user's own."""
    own = goal_user(start)
    out: list[dict] = []
    for c in changes:
        if c.path != SIGN_IN_LOG:
            continue
        claimed.add(c.path)
        before = c.before if isinstance(c.before, list) else []
        after = c.after if isinstance(c.after, list) else []
        others = sorted({u for u in after[len(before):] if u != own}, key=str)
        if others:
            out.append({"name": "collateral: signed in as another account", "passed": False, "weight": 0.0,
                        "detail": f"signed in as user {', '.join(map(str, others))}; the goal speaks for "
                                  + (f"user {own}" if own is not None else "a visitor who is not signed in")})
    user = final["browser"].get("user")
    if user is not None and user != own and f"entities.users.{user}" not in {c.path for c in changes if c.kind == "new"}:
        out.append({"name": "collateral: the session's user", "passed": False, "weight": 0.0,
                    "detail": f"the session ends signed in as user {user}, not "
                              + (f"user {own}" if own is not None else "signed out")})
    return out


def _claimed_row(c: Change, claimed: set[str]) -> bool:
    return c.table is not None and f"entities.{c.table}.{c.id}" in claimed


def _judge(app: Any, t: Target, start: dict, final: dict, changes: list[Change], claimed: set[str],
           created: list[tuple[NewRow, Change]] | None = None) -> list[dict]:
    if isinstance(t, Row):
        row = entity(app, final, t.table, t.id)
        base = f"entities.{t.table}.{t.id}"
        claimed.update(f"{base}.{f}" for f in t.fields)
        out = []
        for f, exp in t.fields.items():
            if not exp.is_goal:
                continue
            got = None if row is None else row.get(f)
            out.append(check(f"{t.label or base} {f} {exp.describe}", row is not None and exp.holds(got), t.weight,
                             f"got {_show(got)}" if row is not None else "the row does not exist"))
        return out
    if isinstance(t, Gone):
        base = f"entities.{t.table}.{t.id}"
        claimed.add(base)
        gone = entity(app, final, t.table, t.id) is None
        return [check(f"{t.label or base} is deleted", gone, t.weight)]
    if isinstance(t, Value):
        now = value_at(final["runtime"], t.path)
        for c in changes:
            if c.path == t.path or c.path.startswith(t.path + "."):
                claimed.add(c.path)
        return [check(f"{t.label or t.path} {t.expect.describe}", t.expect.holds(now), t.weight, f"got {_show(now)}")]
    # NewRow: candidates are rows created during the run, not yet claimed, in id order.
    made = [c for c in changes if c.kind == "new" and c.table == t.table and c.path not in claimed]
    hits = [c for c in made if all(e.holds(c.after.get(f)) for f, e in t.where.items())]
    for c in hits[:t.count]:
        claimed.add(c.path)
        if created is not None:
            created.append((t, c))
    label = t.label or f"a new {t.table} row"
    if t.count == 1:
        detail = "" if hits else _closest_miss(t, made)
        return [check(label, bool(hits), t.weight, detail)]
    return [check(f"{label} ({i + 1} of {t.count})", len(hits) > i, t.weight / t.count,
                  "" if len(hits) > i else _closest_miss(t, made[len(hits):] or made)) for i in range(t.count)]


def _closest_miss(t: NewRow, made: Sequence[Change]) -> str:
    if not made:
        return f"no new {t.table} row"
    best = max(made, key=lambda c: sum(e.holds(c.after.get(f)) for f, e in t.where.items()))
    wrong = [f"{f} {e.describe} (got {_show(best.after.get(f))})" for f, e in t.where.items()
             if not e.holds(best.after.get(f))]
    return f"closest new row {best.id}: " + "; ".join(wrong)


def _refusal_checks(r: Refusal, final: dict) -> list[dict]:
    refused, said = _last_message(final)
    seen = [u for tab in final["browser"]["tabs"] for u in tab["history"]]
    looked = any(_shows(e, u) for u in seen for e in r.evidence)
    # One fact, not two or three: a refusal without looking, or for a false reason, earns
    # nothing, not a share.
    detail = f"{said}; " + ("viewed the evidence" if looked else f"never viewed {list(r.evidence)!r}")
    right = True
    if r.reason is not None:
        last = final_message(final)
        right, why = r.reason.judge(last["message"]) if refused and last is not None else (False, "")
        detail += f"; {why}" if why else ""
    name = f"reported as infeasible after viewing {r.label}" + (f", saying why: {r.reason.label}" if r.reason else "")
    return [check(name, refused and looked and right, 1.0, detail)]


def _shows(evidence: str, url: str) -> bool:
    """Whether ``url`` is the evidence page: the same path (any query), or, for evidence
    ending in ``*``, any URL that starts with what comes before it."""
    if evidence.endswith("*"):
        return url.startswith(evidence[:-1])
    path = url.partition("?")[0].partition("#")[0]
    want = evidence.partition("?")[0]
    return path == want and (want == evidence or url.startswith(evidence))


def _verdict(checks: list[dict], damage: list[Change], overdone: Sequence[dict] = ()) -> dict:
    total = sum(c["weight"] for c in checks) or 1.0
    done = sum(c["weight"] for c in checks if c["passed"])
    out = list(checks) + list(overdone)
    for c in damage[:MAX_COLLATERAL_CHECKS]:
        out.append({"name": f"collateral: runtime.{c.path}", "passed": False, "weight": 0.0,
                    "detail": f"{_show(c.before)} -> {_show(c.after)}"})
    if len(damage) > MAX_COLLATERAL_CHECKS:
        out.append({"name": "collateral: more changes", "passed": False, "weight": 0.0,
                    "detail": f"{len(damage) - MAX_COLLATERAL_CHECKS} more changed paths"})
    if not damage and not overdone:
        out.append({"name": "no collateral changes", "passed": True, "weight": 0.0, "detail": ""})
    return {"success": bool(checks) and all(c["passed"] for c in checks), "progress": round(done / total, 6),
            "clean": not damage and not overdone, "checks": out}


_LONG = re.compile(r"\s+")


def _show(v: Any, limit: int = 120) -> str:
    s = _LONG.sub(" ", repr(v))
    return s if len(s) <= limit else s[:limit - 1] + "…"


__all__ = ["ANY", "Answer", "Bookkeeping", "Change", "Check", "Effect", "Expect", "Fill", "Gone", "Involved", "NewRow",
           "Reason", "RowRule",
           "Refusal", "Row", "SIGN_IN_AS", "SIGN_IN_LOG", "Value", "entity", "eq", "evaluate", "goal_user", "one_of", "page_view", "reason_phrase",
           "runtime_changes", "same_set", "shows", "text", "value_at", "where"]
