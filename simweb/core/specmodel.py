"""The spec's data model: what a compiled app spec (specs/<app>.yaml) is made of.

Pages, events with typed parameters, guards, messages and updates, permissions,
workflows and timers (:class:`Spec` holds them all), and the site's bookkeeping
(:class:`Bookkeeping`: what the site maintains by itself, which every task's verdict
tolerates). :mod:`simweb.core.spec` loads, validates and compiles a spec into these; the
judging wing (:mod:`simweb.judging.effects`) reads the bookkeeping when it judges a run.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from .expr import Expr
from .text import normalise_text

#: Names every page/event expression may use.
BASE_NAMES = ("rt", "browser", "meta", "user", "now", "today", "url", "query")
WRITABLE_ROOTS = {"rt": "runtime", "browser": "browser"}


class SpecError(ValueError):
    """A spec that cannot be loaded; the message names file, page/event and field."""


# ---------------------------------------------------------------------------------------
# Parameters
# ---------------------------------------------------------------------------------------

class ParamError(ValueError):
    """A form or query value that does not fit its declared type (shown to the user)."""


_INT_RE = re.compile(r"^[+-]?\d{1,15}$")
_FLOAT_RE = re.compile(r"^[+-]?(\d{1,15}(\.\d*)?|\.\d+)$")
_MONEY_RE = re.compile(r"^\$?\s*(\d{1,9})(?:\.(\d{1,2}))?$")


#: The kinds of refusal of :meth:`ParamSpec.parse` (:meth:`ParamSpec.message`).
PARAM_REFUSALS = ("required", "min_length", "max_length", "pattern", "values", "int", "money", "float", "min", "max")


@dataclass(frozen=True)
class ParamSpec:
    """A typed parameter of an event (form field) or a page (query string)."""

    name: str
    type: str
    label: str
    required: bool
    default: Any
    min: float | None = None
    max: float | None = None
    min_length: int | None = None
    max_length: int | None = None
    pattern: re.Pattern | None = None
    pattern_error: str | None = None
    values: tuple[str, ...] = ()
    strip: bool = True
    #: a value the site must not keep (a card number, a security code): the request
    #: history records it sealed (simweb.history.seal)
    secret: bool = False

    def message(self, kind: str) -> str:
        """The message :meth:`parse` refuses a value with, for each ``kind`` of refusal
        (:data:`PARAM_REFUSALS`): written from the parameter's declaration alone (its
        label, bounds, values, pattern message), never from the value sent."""
        label = self.label
        if kind == "required":
            return f"{label} is required."
        if kind == "min_length":
            return f"{label} must be at least {self.min_length} characters."
        if kind == "max_length":
            return f"{label} must be at most {self.max_length} characters."
        if kind == "pattern":
            return self.pattern_error or f"{label} is not valid."
        if kind == "values":
            return f"{label} must be one of: {', '.join(self.values)}."
        if kind == "int":
            return f"{label} must be a whole number."
        if kind == "money":
            return f"{label} must be an amount like 12.50."
        if kind == "float":
            return f"{label} must be a number."
        if kind == "min":
            return f"{label} must be at least {_num(self.min) if self.min is not None else ''}."
        if kind == "max":
            return f"{label} must be at most {_num(self.max) if self.max is not None else ''}."
        raise ValueError(f"no refusal {kind!r} (one of: {', '.join(PARAM_REFUSALS)})")

    def messages(self) -> list[str]:
        """Every message :meth:`parse` can refuse a value of this parameter with."""
        kinds = ["required"]
        if self.type == "str":
            kinds += [k for k, on in (("min_length", self.min_length is not None),
                                      ("max_length", self.max_length is not None),
                                      ("pattern", self.pattern is not None)) if on]
        elif self.type == "enum":
            kinds.append("values")
        elif self.type in ("int", "money", "float"):
            kinds.append(self.type)
            kinds += [k for k, on in (("min", self.min is not None), ("max", self.max is not None)) if on]
        return [self.message(k) for k in kinds]

    def parse(self, raw: Any) -> Any:
        """Convert a submitted value (str, list of str, or None) to the declared type."""
        if self.type == "list":
            items = raw if isinstance(raw, list) else ([] if raw in (None, "") else [raw])
            return [str(x) for x in items]
        if isinstance(raw, list):
            raw = raw[0] if raw else None
        if self.type == "bool":
            # An unchecked checkbox is simply absent from a form post.
            return raw not in (None, "", "0", "false", "off")
        text = None if raw is None else str(raw)
        if text is not None and self.strip:
            text = text.strip()
        if text is None or text == "":
            if self.required:
                raise ParamError(self.message("required"))
            return self.default
        if self.type == "str":
            if self.min_length is not None and len(text) < self.min_length:
                raise ParamError(self.message("min_length"))
            if self.max_length is not None and len(text) > self.max_length:
                raise ParamError(self.message("max_length"))
            if self.pattern is not None and not self.pattern.fullmatch(text):
                raise ParamError(self.message("pattern"))
            return text
        if self.type == "enum":
            if text not in self.values:
                raise ParamError(self.message("values"))
            return text
        if self.type == "int":
            if not _INT_RE.match(text):
                raise ParamError(self.message("int"))
            value: Any = int(text)
        elif self.type == "money":
            m = _MONEY_RE.match(text)
            if not m:
                raise ParamError(self.message("money"))
            value = int(m.group(1)) * 100 + int((m.group(2) or "0").ljust(2, "0"))
        else:  # float
            if not _FLOAT_RE.match(text):
                raise ParamError(self.message("float"))
            value = float(text)
        if self.min is not None and value < self.min:
            raise ParamError(self.message("min"))
        if self.max is not None and value > self.max:
            raise ParamError(self.message("max"))
        return value


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


# ---------------------------------------------------------------------------------------
# Compiled pieces
# ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Guard:
    """A guard (events) or requirement (pages): when ``cond`` is false the site shows
    ``error`` with ``status``, or redirects to ``redirect``."""

    cond: Expr
    error: Message | None
    status: int
    redirect: Expr | None
    #: the form field the refusal is about (an event's parameter), or None
    field: str | None = None


def split_message(text: str) -> list[tuple[str, str]]:
    """Split 'Only {p.stock} left' into text and expression parts.

    Braces inside an expression (dict literals) and inside its string literals are
    matched, so '{ {'a': 1}['a'] }' is one expression; '{{' and '}}' are literal braces."""
    out: list[tuple[str, str]] = []
    buf = ""
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in "{}" and text[i:i + 2] in ("{{", "}}"):
            buf += ch
            i += 2
            continue
        if ch == "}":
            raise ValueError(f"unmatched '}}' at column {i + 1} in message {text!r}")
        if ch != "{":
            buf += ch
            i += 1
            continue
        depth, j, quote = 1, i + 1, ""
        while j < n and depth:
            c = text[j]
            if quote:
                if c == "\\":
                    j += 1
                elif c == quote:
                    quote = ""
            elif c in "'\"":
                quote = c
            elif c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
            j += 1
        if depth:
            raise ValueError(f"unclosed '{{' at column {i + 1} in message {text!r}")
        if buf:
            out.append(("text", buf))
            buf = ""
        expr = text[i + 1:j - 1].strip()
        if not expr:
            raise ValueError(f"empty {{}} at column {i + 1} in message {text!r}")
        out.append(("expr", expr))
        i = j
    if buf:
        out.append(("text", buf))
    return out


class Message:
    """A compiled message: literal text and expressions, joined with str()."""

    __slots__ = ("source", "parts", "reads", "calls")

    def __init__(self, source: str, parts: tuple[Any, ...], reads: frozenset[str], calls: frozenset[str]):
        self.source = source
        self.parts = parts
        self.reads = reads
        self.calls = calls

    def __call__(self, env: Mapping[str, Any]) -> str:
        return "".join(p if isinstance(p, str) else _text(p(env)) for p in self.parts)


def _text(v: Any) -> str:
    return "" if v is None else str(v)


class CompiledValue:
    """A YAML value whose strings are expressions, compiled; lists/dicts recursively."""

    __slots__ = ("fn", "reads")

    def __init__(self, fn: Callable[[Mapping[str, Any]], Any], reads: frozenset[str]):
        self.fn = fn
        self.reads = reads

    def __call__(self, env: Mapping[str, Any]) -> Any:
        return self.fn(env)


@dataclass(frozen=True)
class StatePath:
    """A writable location such as ``rt.carts[user].items``: root plus key segments.

    Segments are str literals or expressions (evaluated, then turned into str keys so the
    runtime stays canonical JSON)."""

    root: str                    # "runtime" or "browser"
    segments: tuple[Any, ...]    # str or Expr
    static: str                  # e.g. "runtime.carts.*.items"
    text: str

    def keys(self, env: Mapping[str, Any]) -> list[str]:
        out = []
        for seg in self.segments:
            if isinstance(seg, str):
                out.append(seg)
            else:
                key = seg(env)
                if key is None:
                    raise ExprErrorAtRuntime(f"path {self.text!r}: key {seg.source!r} is None")
                out.append(str(key))
        return out


class ExprErrorAtRuntime(RuntimeError):
    """An update could not be applied (a None key, a non-container on the path)."""


@dataclass(frozen=True, kw_only=True)
class Update:
    """A compiled update operation: the common part (``when``, ``for``, the ``as`` binding
    and the read and write sets). Each operation of the spec language is one small subclass
    below; ``simweb.updates.OPERATIONS`` maps each type to the function that applies it."""

    op: ClassVar[str]
    when: Expr | None = None
    loop_var: str | None = None
    loop_iter: Expr | None = None
    bind: str | None = None
    writes: str
    reads: frozenset[str]


@dataclass(frozen=True, kw_only=True)
class PathUpdate(Update):
    """An operation on a state path (``path: rt.carts[user]``)."""

    path: StatePath


@dataclass(frozen=True, kw_only=True)
class SetOp(PathUpdate):
    op: ClassVar[str] = "set"
    value: CompiledValue


@dataclass(frozen=True, kw_only=True)
class IncOp(PathUpdate):
    op: ClassVar[str] = "inc"
    value: CompiledValue          # the step (``by``, default 1)


@dataclass(frozen=True, kw_only=True)
class AppendOp(PathUpdate):
    op: ClassVar[str] = "append"
    value: CompiledValue


@dataclass(frozen=True, kw_only=True)
class MergeOp(PathUpdate):
    op: ClassVar[str] = "merge"
    value: CompiledValue


@dataclass(frozen=True, kw_only=True)
class RemoveOp(PathUpdate):
    op: ClassVar[str] = "remove"
    where: Expr                   # drops the list items for which it holds (``it``)


@dataclass(frozen=True, kw_only=True)
class DeleteOp(PathUpdate):
    op: ClassVar[str] = "delete"


@dataclass(frozen=True, kw_only=True)
class TokenOp(PathUpdate):
    op: ClassVar[str] = "token"
    length: int = 10
    alphabet: str = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"


@dataclass(frozen=True, kw_only=True)
class RowUpdate(Update):
    """An operation on an entity row (the runtime overlay over the world's table)."""

    table: str
    workflows: tuple[Workflow, ...] = ()   # the workflows guarding this table's status fields


@dataclass(frozen=True, kw_only=True)
class InsertOp(RowUpdate):
    op: ClassVar[str] = "insert"
    id: CompiledValue | None      # None: a new id above the world's largest
    value: CompiledValue


@dataclass(frozen=True, kw_only=True)
class UpdateRowOp(RowUpdate):
    op: ClassVar[str] = "update"
    id: CompiledValue
    fields: tuple[tuple[str, CompiledValue], ...]


@dataclass(frozen=True, kw_only=True)
class TombstoneOp(RowUpdate):
    op: ClassVar[str] = "tombstone"
    id: CompiledValue


@dataclass(frozen=True, kw_only=True)
class ScheduleOp(Update):
    op: ClassVar[str] = "schedule"
    timer: str
    at: Expr                      # when it falls due (seconds on the simulated clock)
    args: tuple[tuple[str, CompiledValue], ...]
    key: Expr | None = None       # a pending timer with the same key is replaced


@dataclass(frozen=True, kw_only=True)
class CancelOp(Update):
    op: ClassVar[str] = "cancel"
    timer: str | None             # None: any timer with the key
    key: Expr | None


@dataclass(frozen=True)
class Permission:
    """A named rule of who may do what: one definition, used by page requirements, event
    guards (``{permission: name}``) and templates (``can('name', ...)``)."""

    name: str
    args: tuple[str, ...]
    cond: Expr
    error: Message | None
    status: int
    description: str = ""

    def bind(self, env: Mapping[str, Any], values: Mapping[str, Any]) -> dict[str, Any]:
        """The environment the rule is evaluated in: the caller's, plus its arguments."""
        penv = dict(env)
        penv.update(values)
        return penv


class PermissionCheck:
    """The condition of a ``{permission: name, args: {...}}`` guard: evaluates the
    argument expressions in the caller's environment, then the permission's rule.
    Carries ``reads`` and ``calls`` like an :class:`Expr`, so read sets see through it."""

    __slots__ = ("permission", "args", "source", "reads", "calls")

    def __init__(self, permission: Permission, args: tuple[tuple[str, Expr], ...]):
        self.permission = permission
        self.args = args
        self.source = f"permission {permission.name}"
        reads = {r for r in permission.cond.reads if r.split(".")[0] not in permission.args}
        calls = set(permission.cond.calls)
        for _, e in args:
            reads |= e.reads
            calls |= e.calls
        self.reads = frozenset(reads)
        self.calls = frozenset(calls)

    def env(self, env: Mapping[str, Any]) -> dict[str, Any]:
        return self.permission.bind(env, {name: e(env) for name, e in self.args})

    def __call__(self, env: Mapping[str, Any]) -> bool:
        return bool(self.permission.cond(self.env(env)))


class _PermissionMessage:
    """A permission's own error message, evaluated with the guard's arguments bound."""

    __slots__ = ("check", "message")

    def __init__(self, check: PermissionCheck, message: Message):
        self.check = check
        self.message = message

    def __call__(self, env: Mapping[str, Any]) -> str:
        return self.message(self.check.env(env))


@dataclass(frozen=True)
class Workflow:
    """A status field of an entity table that may only move along declared edges
    (``opened -> closed``); enforced on every insert and update of the table."""

    name: str
    table: str
    field: str
    initial: str
    states: tuple[str, ...]
    edges: tuple[tuple[str, str, str], ...]   # (from, to, name)

    def allows(self, old: Any, new: Any) -> bool:
        return old == new or any(a == old and b == new for a, b, _ in self.edges)

    def next_states(self, current: Any) -> list[str]:
        return [b for a, b, _ in self.edges if a == current]


@dataclass(frozen=True)
class Timer:
    """A clock-driven server-side event: scheduled by an update, it fires at the first
    request whose simulated clock has reached its time."""

    name: str
    args: tuple[str, ...]
    cond: Expr | None
    updates: list[Update]
    description: str = ""


@dataclass
class PageSpec:
    name: str
    route: str
    regex: re.Pattern
    converters: dict[str, Callable[[str], Any]]
    template: str
    title: Message | None
    query: dict[str, ParamSpec]
    load: list[tuple[str, Expr]]
    require: list[Guard]
    on_view: list[Update]
    substates: list[tuple[str, Expr]]


@dataclass
class Event:
    name: str
    description: str
    route: str
    regex: re.Pattern
    converters: dict[str, Callable[[str], Any]]
    sources: list[str]
    target: str | None
    params: dict[str, ParamSpec]
    lets: list[tuple[str, Expr]]
    guards: list[Guard]
    updates: list[Update]
    redirect: Expr | None
    flash: Message | None
    reads: list[str] = field(default_factory=list)
    writes: list[str] = field(default_factory=list)
    effect: str = "none"
    derived_effect: str = "none"
    permissions: list[str] = field(default_factory=list)
    moves: list[str] = field(default_factory=list)   # workflow edges it may take ("issue_state → closed")


# ----------------------------------------------------------------------------- bookkeeping

@dataclass(frozen=True)
class RowRule:
    """A side-effect row the site writes: its fields must have the ``where`` values and, with
    ``echo_of`` (field -> table, or table.field), each such field must name a row of that
    table the task's effect judges (a claimed row, or one a claimed new row names, see
    ``Bookkeeping.references``), with ``table.field`` a row whose that field the effect
    claims (``table.a|b``: one of these fields), and with ``table.field=value`` one whose
    that field also ends with ``value``: the notifications of a close are tolerated on the
    judged issue, not on another, only when the task judges its state (a comment task that
    closes and reopens its issue on the way leaves them as damage), and only when the issue
    ends closed (a reopen task that closes and reopens again leaves the close's).

    A ``where`` value is the value the field must have, or ``{startswith: prefix}`` (or a
    list of prefixes) for a text the site composes ("added ~bug label"). ``same_as``
    (field -> fields) asks that the row records what the row named by that ``echo_of``
    field ends with: a revision of a post is its text's echo only with the title and text
    the post has at the end (a junk title saved and undone leaves a revision that does not).
    ``echo_value`` is a runtime path with ``{field}`` holes filled from the row
    (``bans.{community_id}.{user_id}``): the row echoes a change only when the effect judges
    that value (a :class:`Value` target at, above or below the path): a ban's log row.

    ``net`` (``echo_of`` field -> {row field: ``added`` or ``removed``}) asks that the row
    records part of the *net* change of the judged field that ``echo_of`` names for it
    (``issues.labels``), from the start of the episode to its end: the row's field must be
    an item that field gained (``added``: in its final value, not in its start value) or
    lost (``removed``). A list is its items, a null no item, any other value one item (so a
    scalar gains its final value when it changed, and loses its start value), and a row
    created during the run starts with none. A note "added ~wontfix label" whose ``about``
    is the label's id then echoes the label only if the issue ends with it and did not
    start with it: a label added and removed again, a second assignee assigned and
    unassigned again, or a milestone set on the way to the asked one, on the very issue a
    task judges, leaves its notes as damage."""

    where: Mapping[str, Any] = field(default_factory=dict)
    echo_of: Mapping[str, str] = field(default_factory=dict)
    same_as: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    echo_value: str = ""
    net: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    #: with ``echo_value``: ``added`` or ``removed``, the part of that value's net change the
    #: row records (as for ``net``, a null is nothing and any other value one item: a ban's
    #: log row echoes the ban only if the user ends banned so and did not start so, an
    #: unban's only if a ban the user started with is gone at the end)
    value_net: str = ""

    def applies(self, row: Mapping[str, Any]) -> bool:
        """Whether the row has the ``where`` values (the first rule that applies decides)."""
        return all(_has(row.get(k), v) for k, v in self.where.items())

    def echoes(self, row: Mapping[str, Any], involved: Involved | None) -> bool:
        """Whether the row is about what the effect judges (always, without ``involved``)."""
        if involved is None:
            return True
        for key, target in self.echo_of.items():
            table, _, rest = target.partition(".")
            columns, eq_sign, ends = rest.partition("=")
            names = columns.split("|") if columns else [None]
            if not any(involved.names(table, row.get(key), c, ends if eq_sign else None) for c in names):
                return False
            fields = self.same_as.get(key)
            if fields:
                value = row.get(key)
                other = involved.final_row(table, value) if involved.final_row is not None and value is not None else None
                if other is None or any(row.get(f) != other.get(f) for f in fields):
                    return False
            kinds = self.net.get(key)
            if kinds and not _in_net_change(row, kinds, table, columns, row.get(key), involved):
                return False
        if self.echo_value:
            try:
                path = self.echo_value.format_map({k: row.get(k) for k in _holes(self.echo_value)})
            except (KeyError, ValueError):
                return False
            if not any(v == path or v.startswith(path + ".") or path.startswith(v + ".") for v in involved.values):
                return False
            if self.value_net:
                if involved.start_value is None or involved.final_value is None:
                    return False
                if not _net_change(involved.start_value(path), involved.final_value(path))[self.value_net]:
                    return False
        return True


#: the kinds of a ``net`` rule: the items a judged field gained, or lost, over the episode
NET_KINDS = ("added", "removed")


def _in_net_change(row: Mapping[str, Any], kinds: Mapping[str, str], table: str, column: str, value: Any,
                   involved: Involved) -> bool:
    """Whether each field of ``row`` named in ``kinds`` is an item that ``column`` of the
    row ``value`` names gained (``added``) or lost (``removed``) from start to final."""
    if involved.start_row is None or involved.final_row is None or value is None:
        return False
    before, after = involved.start_row(table, value), involved.final_row(table, value)
    change = _net_change(before.get(column) if before is not None else None,
                         after.get(column) if after is not None else None)
    return all(row.get(f) is not None and _among(row.get(f), change[kind]) for f, kind in kinds.items())


def _net_change(start: Any, final: Any) -> dict[str, list[Any]]:
    """The items a value gained (``added``: in ``final``, not in ``start``) and lost
    (``removed``) over the episode, as ``net`` and ``value_net`` rules read them."""
    was, now = _items(start), _items(final)
    return {"added": [x for x in now if not _among(x, was)], "removed": [x for x in was if not _among(x, now)]}


def _items(v: Any) -> list[Any]:
    """A field's value as the items a ``net`` rule compares: a list's items, none for a
    null, else the value itself."""
    if v is None:
        return []
    return list(v) if isinstance(v, (list, tuple)) else [v]


def _among(value: Any, items: Sequence[Any]) -> bool:
    """Whether ``value`` is one of ``items``, of the same type (``True`` is not ``1``)."""
    return any(type(x) is type(value) and x == value for x in items)


def _has(value: Any, want: Any) -> bool:
    """Whether a field has the ``where`` value: equal, or ``{startswith: prefix(es)}``."""
    if isinstance(want, Mapping) and set(want) == {"startswith"}:
        prefixes = want["startswith"]
        prefixes = (prefixes,) if isinstance(prefixes, str) else tuple(prefixes)
        return isinstance(value, str) and value.startswith(prefixes)
    return bool(value == want)


_HOLE = re.compile(r"\{([a-z_][a-z0-9_]*)\}")


def _holes(template: str) -> list[str]:
    return _HOLE.findall(template)


@dataclass(frozen=True)
class Involved:
    """The rows a verdict's effect judges: claimed entity rows, and the rows that claimed
    new rows point at (through the spec's ``bookkeeping.references``: a new link row names
    both its issues)."""

    rows: frozenset[tuple[str, int]]
    #: the claimed paths (``entities.<table>.<id>[.<field>]``), for ``table.field`` echoes
    claimed: frozenset[str] = frozenset()
    #: (table, id) -> the row in the final state, for ``table.field=value``, ``same_as`` and ``net`` echoes
    final_row: Callable[[str, int], dict | None] | None = field(default=None, compare=False)
    #: the paths of the effect's :class:`Value` targets, for ``echo_value`` rules
    values: frozenset[str] = frozenset()
    #: (table, id) -> the row in the start state (None: created during the run), for ``net`` echoes
    start_row: Callable[[str, int], dict | None] | None = field(default=None, compare=False)
    #: a runtime path -> its value in the start (final) state, a world overlay's baseline
    #: where the runtime has none, for ``value_net`` echoes
    start_value: Callable[[str], Any] | None = field(default=None, compare=False)
    final_value: Callable[[str], Any] | None = field(default=None, compare=False)

    @classmethod
    def of(cls, claimed: set[str], changes: Sequence[Change], references: Mapping[str, Mapping[str, str]],
           final_row: Callable[[str, int], dict | None] | None = None, values: Iterable[str] = (),
           start_row: Callable[[str, int], dict | None] | None = None,
           start_value: Callable[[str], Any] | None = None, final_value: Callable[[str], Any] | None = None
           ) -> Involved:
        rows: set[tuple[str, Any]] = set()
        for path in claimed:
            parts = path.split(".")
            if len(parts) >= 3 and parts[0] == "entities" and parts[2].isdigit():
                rows.add((parts[1], int(parts[2])))
        for c in changes:
            if c.kind == "new" and c.table is not None and c.after and (
                    c.path in claimed or f"entities.{c.table}.{c.id}" in claimed):
                for key, table in references.get(c.table, {}).items():
                    if c.after.get(key) is not None:
                        rows.add((table, c.after[key]))
        return cls(frozenset(rows), frozenset(claimed), final_row, frozenset(values), start_row, start_value,
                   final_value)

    def names(self, table: str, value: Any, column: str | None = None, ends: str | None = None) -> bool:
        """Whether ``value`` is the id of a judged row of ``table`` (with ``column``: a row
        whose that field, or the whole row, the effect claims; with ``ends``: and whose that
        field ends with this value, so a close note echoes a judged close, not a close
        undone again)."""
        if value is None or (table, value) not in self.rows:
            return False
        if column is None:
            return True
        if f"entities.{table}.{value}.{column}" not in self.claimed and f"entities.{table}.{value}" not in self.claimed:
            return False
        if ends is None:
            return True
        row = self.final_row(table, value) if self.final_row is not None else None
        return row is not None and row.get(column) == ends


@dataclass(frozen=True)
class Fill:
    """What the site fills in by itself in a field of a row a task creates (or a leaf of a
    runtime value a task claims whole) when the goal does not name it; declared per app in
    the spec (``bookkeeping.defaults``: table -> field -> rule; ``value_defaults``: runtime
    path pattern -> rule):

    * ``site``: the site computes it (an id, a day, a total, a token); no form sets it.
    * ``{value: v}``: the form's default, which an agent that leaves the field alone keeps
      (an empty notes box, a default weight).
    * ``{user: column}``: the goal user's own detail, which the form fills in (their e-mail
      on their booking, their name on their card): the ``column`` of the user the task
      starts signed in as, compared as text (case and spacing aside).

    A field a task's new row leaves unnamed and undeclared is collateral too: what the site
    fills in must be declared before a task may create the row."""

    kind: str                     # "site", "value" or "user"
    value: Any = None             # the default (value), or the users column (user)

    @classmethod
    def parse(cls, rule: Any, where: str) -> Fill:
        if rule == "site":
            return cls("site")
        if isinstance(rule, Mapping) and len(rule) == 1:
            (kind, value), = rule.items()
            if kind == "value" or (kind == "user" and isinstance(value, str)):
                return cls(str(kind), value)
        raise ValueError(f"bookkeeping.{where}: a default is 'site', {{value: v}} or {{user: column}}, got {rule!r}")

    def expected(self, user: Mapping[str, Any] | None) -> Any:
        """The value the site fills in (None for ``site``)."""
        if self.kind == "user":
            return None if user is None else user.get(str(self.value))
        return self.value

    def holds(self, got: Any, user: Mapping[str, Any] | None) -> bool:
        if self.kind == "site":
            return True
        want = self.expected(user)
        if self.kind == "user" and isinstance(want, str):
            return isinstance(got, str) and normalise_text(got) == normalise_text(want)
        return type(got) is type(want) and got == want


@dataclass(frozen=True)
class Bookkeeping:
    """What the site itself maintains as a consequence of other changes, tolerated in every
    task: runtime keys (``paths``, patterns with ``*``), derived entity fields (``fields``:
    on any row; ``judged_row_fields``: only on a row the effect judges, see
    :class:`Involved`, or only where it claims a given field of that row, as a post's
    publication day where its status is judged: a publish and an unpublish would move it
    while the status ends where it was), and rows the site writes
    as a side effect (``new_rows``: table -> the field values they must have, or a list of
    :class:`RowRule` ``{where, echo_of}``: the first rule whose ``where`` the row has
    decides).

    Declare only what cannot change on its own: each tolerated change must be the echo
    of a change that is judged (a system note of a close, the stock of an order)."""

    paths: tuple[str, ...] = ("counters", "timers")
    fields: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    new_rows: Mapping[str, tuple[RowRule, ...]] = field(default_factory=dict)
    #: table -> {field: the table it names}: which rows a new row is about (for ``echo_of``)
    references: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    #: table -> {field: "" (tolerated on any row the effect judges) or the field of that
    #: row the effect must claim (a publication day only where the status is judged)}
    judged_row_fields: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    #: table -> {field: what the site fills in by itself} on a row a task creates (:class:`Fill`)
    defaults: Mapping[str, Mapping[str, Fill]] = field(default_factory=dict)
    #: (runtime path pattern with ``*``, what the site fills in there) for the leaves of a
    #: value a task claims whole (a booking form's draft: the guest's e-mail)
    value_defaults: tuple[tuple[str, Fill], ...] = ()

    @classmethod
    def from_spec(cls, doc: Mapping[str, Any] | None) -> Bookkeeping:
        doc = doc or {}
        paths = tuple(dict.fromkeys(("counters", "timers", *doc.get("paths", ()))))
        rules: dict[str, tuple[RowRule, ...]] = {}
        for table, v in (doc.get("new_rows") or {}).items():
            if isinstance(v, list):
                rules[table] = tuple(RowRule(dict(r.get("where") or {}), dict(r.get("echo_of") or {}),
                                             {k: tuple(f) for k, f in (r.get("same_as") or {}).items()},
                                             str(r.get("echo_value") or ""),
                                             {k: dict(f or {}) for k, f in (r.get("net") or {}).items()},
                                             str(r.get("value_net") or "")) for r in v)
            else:
                rules[table] = (RowRule(dict(v or {})),)
        for table, rs in rules.items():
            for r in rs:
                for option in ("same_as", "net"):
                    extra = sorted(set(getattr(r, option)) - set(r.echo_of))
                    if extra:
                        raise ValueError(f"bookkeeping.new_rows.{table}: {option} names {extra}, which echo_of does not")
                if r.value_net and (not r.echo_value or r.value_net not in NET_KINDS):
                    raise ValueError(f"bookkeeping.new_rows.{table}: value_net needs an echo_value and one of "
                                     f"{list(NET_KINDS)}, got {r.value_net!r}")
                for key, kinds in r.net.items():
                    column = r.echo_of[key].partition(".")[2].partition("=")[0]
                    if not column or "|" in column:
                        raise ValueError(f"bookkeeping.new_rows.{table}: net {key}: echo_of {r.echo_of[key]!r} must "
                                         f"name one field (table.field) whose net change the row records")
                    bad = sorted(k for k in kinds.values() if k not in NET_KINDS)
                    if not kinds or bad:
                        raise ValueError(f"bookkeeping.new_rows.{table}: net {key}: each field needs one of "
                                         f"{list(NET_KINDS)}, got {dict(kinds)!r}")
        refs = {t: dict(v or {}) for t, v in (doc.get("references") or {}).items()}
        judged = {t: dict(f) if isinstance(f, Mapping) else dict.fromkeys(f, "")
                  for t, f in (doc.get("judged_row_fields") or {}).items()}
        defaults = {t: {f: Fill.parse(r, f"defaults.{t}.{f}") for f, r in (fs or {}).items()}
                    for t, fs in (doc.get("defaults") or {}).items()}
        value_defaults = tuple((p, Fill.parse(r, f"value_defaults.{p}"))
                               for p, r in (doc.get("value_defaults") or {}).items())
        return cls(paths, {t: tuple(f) for t, f in (doc.get("fields") or {}).items()}, rules, refs, judged,
                   defaults, value_defaults)

    _heads: frozenset[str] = field(init=False, repr=False, compare=False)
    _patterns: tuple[str, ...] = field(init=False, repr=False, compare=False)
    #: whether any side-effect rule is tied to judged rows (only then is Involved needed)
    echoes: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Most tolerated paths are whole top-level keys (counters, timers): one set lookup.
        object.__setattr__(self, "_heads", frozenset(p for p in self.paths if "." not in p and "*" not in p))
        object.__setattr__(self, "_patterns", tuple(p for p in self.paths if p not in self._heads))
        object.__setattr__(self, "echoes", bool(any(r.echo_of or r.echo_value for rules in self.new_rows.values()
                                                    for r in rules)
                                                or any(self.judged_row_fields.values())))

    def tolerates(self, change: Change, involved: Involved | None = None) -> bool:
        """Whether ``change`` is bookkeeping. Without ``involved`` (no effect at hand, as
        when the red team asks whether an attack changed anything), ``echo_of`` and
        ``judged_row_fields`` are not checked."""
        path = change.path
        if path.partition(".")[0] in self._heads:
            return True
        for p in self._patterns:
            if path == p or path.startswith(p + ".") or ("*" in p and _pattern_match(p, path)):
                return True
        if change.table is None:
            return False
        if change.kind == "field":
            if change.field in self.fields.get(change.table, ()):
                return True
            judged = self.judged_row_fields.get(change.table, {})
            column = judged.get(change.field or "")
            if column is None:
                return False
            return involved is None or involved.names(change.table, change.id, column or None)
        if change.kind == "new" and change.table in self.new_rows:
            rule = next((r for r in self.new_rows[change.table] if r.applies(change.after)), None)
            return rule is not None and rule.echoes(change.after, involved)
        return False


def _pattern_match(pattern: str, path: str) -> bool:
    p, s = pattern.split("."), path.split(".")
    return len(s) >= len(p) and all(a == "*" or a == b for a, b in zip(p, s))


# the diff: one change of the runtime (simweb.effects.runtime_changes finds them)

@dataclass(frozen=True)
class Change:
    """One change of the runtime between two states.

    kind: ``field`` (an entity field), ``new`` (a row that did not exist), ``gone`` (a row
    deleted), ``value`` (a leaf outside the entity tables; lists compare whole)."""

    kind: str
    path: str                    # dotted, below runtime: entities.issues.12.title, carts.3.lines
    before: Any
    after: Any
    table: str | None = None
    id: int | None = None
    field: str | None = None


@dataclass
class Spec:
    """A compiled app spec. Build it with :func:`load_spec`."""

    app: str
    version: int
    title: str
    description: str
    start_url: str
    clock: dict[str, int]
    runtime_initial: dict
    runtime_schema: dict
    globals: list[tuple[str, Expr]]
    pages: dict[str, PageSpec]
    events: dict[str, Event]
    hash: str
    path: str
    raw: dict
    roles: tuple[str, ...] = ()
    permissions: dict[str, Permission] = field(default_factory=dict)
    workflows: dict[str, Workflow] = field(default_factory=dict)
    timers: dict[str, Timer] = field(default_factory=dict)
    #: what the site maintains as a side effect of judged changes (simweb.effects)
    bookkeeping: Bookkeeping = field(default_factory=Bookkeeping)
    #: the options of each kit the spec includes (simweb.kits), as templates see them
    kits: dict[str, dict] = field(default_factory=dict)

    def match_page(self, path: str) -> tuple[PageSpec, dict[str, Any]] | None:
        return _match(self.pages.values(), path)

    def match_event(self, path: str) -> tuple[Event, dict[str, Any]] | None:
        return _match(self.events.values(), path)

    def start_page(self) -> str:
        """The page the start URL shows."""
        hit = self.match_page(self.start_url.partition("?")[0])
        return hit[0].name if hit else "blank"

    def control_states(self) -> list[str]:
        """Every control state: pages, their UI sub-states, and the engine's own."""
        out = ["blank", "error"]
        for page in self.pages.values():
            out.append(page.name)
            out.extend(f"{page.name}:{sub}" for sub, _ in page.substates)
        return out


def _match(items: Any, path: str) -> Any:
    for item in items:
        m = item.regex.fullmatch(path)
        if m:
            try:
                args = {k: item.converters[k](v) for k, v in m.groupdict().items()}
            except ValueError:
                continue
            return item, args
    return None
