"""Pure functions that spec expressions and templates may call.

An app registers its functions with :class:`FunctionTable`; each takes the evaluation
context (:class:`Ctx`: world data plus the current state) as its first argument and
declares the state paths it reads, so the engine can compute each event's read set.
Expressions call them without the context: ``cart_total()`` in a guard becomes
``cart_total(ctx)``. The context is passed through a ContextVar, set for the duration of
one request, so compiled expressions stay plain closures.

A sentence a function writes for the user to read (a refusal's reason, a field's error)
is declared once at module level as an :class:`AppMessage` (``FUNCTIONS.message("The code
{code} is not valid.")``) and written with ``.format(code=...)``: the text is today's, and
the app knows its shape (fixed words, a gap per value), so a site variant shows its fixed
words in the variant's phrases and its values as they are (simweb.runtime.variant_messages).
"""
from __future__ import annotations

import contextvars
import string
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from .urls import qs, query_pairs, safe_next


@dataclass
class Ctx:
    """What a function may look at: the app's world, the state and the request."""

    world: Any
    state: dict
    app: Any = None
    url: str = "/"

    @property
    def runtime(self) -> dict:
        return self.state["runtime"]

    @property
    def browser(self) -> dict:
        return self.state["browser"]

    @property
    def user(self) -> int | None:
        return self.state["browser"]["user"]

    @property
    def now(self) -> int:
        return self.state["meta"]["clock"]

    @property
    def today(self) -> int:
        return self.state["meta"]["clock"] // 86400


_CURRENT: contextvars.ContextVar[Ctx] = contextvars.ContextVar("simweb_ctx")


@contextmanager
def using(ctx: Ctx) -> Iterator[Ctx]:
    """Make ``ctx`` the context of every function call inside the block."""
    token = _CURRENT.set(ctx)
    try:
        yield ctx
    finally:
        _CURRENT.reset(token)


def current() -> Ctx:
    return _CURRENT.get()


@dataclass(frozen=True)
class AppFunction:
    name: str
    fn: Callable[..., Any]
    reads: tuple[str, ...]
    doc: str

    def bound(self) -> Callable[..., Any]:
        """The callable that expressions see: the context is supplied implicitly."""
        fn = self.fn
        get = _CURRENT.get

        def call(*args: Any, **kwargs: Any) -> Any:
            return fn(get(), *args, **kwargs)

        call.__name__ = self.name
        return call


@dataclass(frozen=True)
class AppMessage:
    """A message an app's function writes, declared once: ``source`` is its text with a
    ``{name}`` gap per value (``{{``/``}}`` for a literal brace). :meth:`format` gives the
    text kept in the state; the source is read as the message's shape where a page shows
    it (the fixed words are the app's, the gaps' values are not)."""

    source: str

    def __post_init__(self) -> None:
        for _, name, spec, conversion in string.Formatter().parse(self.source):
            if name is not None and (not name.isidentifier() or spec or conversion):
                raise ValueError(f"message {self.source!r}: a gap is a plain name ({{{name}}} is not)")

    @property
    def gaps(self) -> tuple[str, ...]:
        """The names of the message's gaps, in order."""
        return tuple(name for _, name, _, _ in string.Formatter().parse(self.source) if name is not None)

    def format(self, **values: Any) -> str:
        """The message's text with ``values`` in its gaps (each written with ``str``)."""
        missing = set(self.gaps) - set(values)
        if missing:
            raise TypeError(f"message {self.source!r}: no value for {', '.join(sorted(missing))}")
        return self.source.format(**values)


@dataclass
class FunctionTable:
    """The functions one app exposes to its spec and templates, plus template filters."""

    functions: dict[str, AppFunction] = field(default_factory=dict)
    filters: dict[str, Callable[..., Any]] = field(default_factory=dict)
    entity_loaders: dict[str, Callable[[Any, int], dict | None]] = field(default_factory=dict)
    overlays: dict[str, Callable[..., Any]] = field(default_factory=dict)
    messages: list[AppMessage] = field(default_factory=list)

    def message(self, source: str) -> AppMessage:
        """Declare a message the app's functions write (:class:`AppMessage`): its text
        once, with a ``{name}`` gap per value. The app reads every declared message as a
        shape of the messages its pages show."""
        m = AppMessage(source)
        self.messages.append(m)
        return m

    def function(self, *, reads: tuple[str, ...] | list[str] = ()) -> Callable:
        """Decorator: register ``fn(ctx, ...)`` under its own name. Duplicates raise."""

        def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
            if fn.__name__ in self.functions:
                raise ValueError(f"function {fn.__name__!r} is registered twice")
            self.functions[fn.__name__] = AppFunction(fn.__name__, fn, tuple(reads), (fn.__doc__ or "").strip())
            return fn

        return deco

    def filter(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """Decorator: register a pure template filter (no context)."""
        self.filters[fn.__name__] = fn
        return fn

    def entity(self, table: str) -> Callable:
        """Decorator: register the world loader of ``table`` rows, ``loader(world, id)``."""

        def deco(fn: Callable[[Any, int], dict | None]) -> Callable:
            self.entity_loaders[table] = fn
            return fn

        return deco

    def overlay(self, key: str) -> Callable:
        """Decorator: ``runtime[key]`` is a map that overlays world data (a user's votes or
        subscriptions over the world's), and ``baseline(world, *segments)`` gives the world's
        value of one of its leaves (``segments``: the keys below ``key``, as strings). The
        runtime diff compares a leaf the runtime writes for the first time with that value,
        so undoing a world vote, or voting and then taking it back, is no change."""

        def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
            if key in self.overlays:
                raise ValueError(f"overlay {key!r} is registered twice")
            self.overlays[key] = fn
            return fn

        return deco

    def row(self, ctx: Ctx, table: str, eid: Any) -> dict | None:
        """A row of ``table`` as the backend has it now (:func:`entity_row` with this
        table's entity loaders): what an app's functions read entities with."""
        return entity_row(ctx.world, ctx.state, self.entity_loaders, table, eid)

    def merged_with_builtins(self) -> dict[str, AppFunction]:
        """App functions plus the engine's own (entity access), as one mapping."""
        table = dict(self.functions)
        for name, f in _builtins(self.entity_loaders).items():
            if name in table:
                raise ValueError(f"function {name!r} shadows an engine function")
            table[name] = f
        return table

    def callables(self) -> Mapping[str, Callable[..., Any]]:
        return {name: f.bound() for name, f in self.merged_with_builtins().items()}


def to_int(x: Any) -> int | None:
    """``x`` as an int, or None when it is not one (a route or form value, a missing id)."""
    try:
        return int(x)
    except (TypeError, ValueError):
        return None


def overlay(state: dict, table: str) -> dict:
    """The runtime overlay of ``table``: id (as text) -> row, or None for a deleted row."""
    return state["runtime"].get("entities", {}).get(table, {})


def entity_row(world: Any, state: dict, loaders: Mapping[str, Callable[[Any, int], dict | None]], table: str,
               eid: Any) -> dict | None:
    """A row of ``table`` as the backend has it now: the overlay's version if any (None if
    deleted), else the world's."""
    if eid is None:
        return None
    rows = overlay(state, table)
    key = str(eid)
    if key in rows:
        return rows[key]
    loader = loaders.get(table)
    if loader is None:
        return None
    try:
        return loader(world, int(eid))
    except (TypeError, ValueError):
        return None


def new_rows(world: Any, state: dict, table: str) -> list[dict]:
    """Rows that exist only at run time (ids above the world's largest), not deleted, by id."""
    top = world.max_id(table)
    return [row for key, row in sorted(overlay(state, table).items(), key=lambda kv: int(kv[0]))
            if row is not None and int(key) > top]


def _builtins(loaders: Mapping[str, Callable[[Any, int], dict | None]]) -> dict[str, AppFunction]:
    def entity(ctx: Ctx, table: str, eid: Any) -> dict | None:
        """A row of ``table``: the runtime overlay's version if any (None if deleted), else the world's."""
        return entity_row(ctx.world, ctx.state, loaders, table, eid)

    def inserted(ctx: Ctx, table: str) -> list[dict]:
        """Rows of ``table`` that exist only in the runtime overlay (not deleted), by id."""
        return new_rows(ctx.world, ctx.state, table)

    def can(ctx: Ctx, name: str, *args: Any) -> bool:
        """Whether the spec's permission ``name`` holds for ``args`` (same rule as the guards)."""
        return ctx.app.can(ctx.state, name, *args, url=ctx.url)

    def at_least(ctx: Ctx, role: str | None, minimum: str) -> bool:
        """Whether ``role`` ranks at or above ``minimum`` on the spec's role ladder (None: never)."""
        ladder = ctx.app.spec.roles
        if minimum not in ladder:
            raise ValueError(f"unknown role {minimum!r} (roles: {', '.join(ladder)})")
        return role in ladder and ladder.index(role) >= ladder.index(minimum)

    def site_policy(ctx: Ctx, name: str) -> Any:
        """The value of the site's policy ``name`` on the state's site variant (today's on
        variant 0; simweb.runtime.variants, "Policies")."""
        return ctx.app.policy(ctx.state, name)

    def next_states(ctx: Ctx, workflow: str, current: str | None) -> list[str]:
        """The states workflow ``workflow`` may move to from ``current``, in declared order."""
        wf = ctx.app.spec.workflows.get(workflow)
        if wf is None:
            raise ValueError(f"unknown workflow {workflow!r}")
        return wf.next_states(current)

    return {
        "entity": AppFunction("entity", entity, ("runtime.entities.*", "world.*"), entity.__doc__ or ""),
        "inserted": AppFunction("inserted", inserted, ("runtime.entities.*",), inserted.__doc__ or ""),
        "can": AppFunction("can", can, ("runtime.*", "world.*", "browser.user"), can.__doc__ or ""),
        "at_least": AppFunction("at_least", at_least, (), at_least.__doc__ or ""),
        "next_states": AppFunction("next_states", next_states, (), next_states.__doc__ or ""),
        "site_policy": AppFunction("site_policy", site_policy, ("meta.variant",), site_policy.__doc__ or ""),
        "safe_next": AppFunction("safe_next", safe_next, (), safe_next.__doc__ or ""),
        "qs": AppFunction("qs", qs, (), qs.__doc__ or ""),
        "query_pairs": AppFunction("query_pairs", query_pairs, (), query_pairs.__doc__ or ""),
    }


def merged_rows(world: Any, state: dict, table: str, world_rows: list[dict], *,
                include: Callable[[dict], bool] | None = None) -> list[dict]:
    """The backend's current version of a world query's result.

    ``world_rows`` (rows a world query returned) are replaced by their runtime versions
    and dropped when deleted; rows that exist only at run time are added when
    ``include(row)`` is true (with no ``include``, none are added). The order is the
    world's, then the new rows by id: callers that sort re-sort.
    """
    rows = overlay(state, table)
    out: list[dict] = []
    for row in world_rows:
        key = str(row["id"])
        if key in rows:
            row = rows[key]
            if row is None:
                continue
        out.append(row)
    if include is not None:
        out.extend(r for r in new_rows(world, state, table) if include(r))
    return out


def paged(rows: list, page: Any, per_page: int) -> dict:
    """Page ``page`` (a route or form value; clamped to 1..pages) of ``rows``:
    ``{total, page, pages, items}``, what the engine's pager template reads."""
    total = len(rows)
    pages = max(1, -(-total // per_page))
    number = min(max(1, to_int(page) or 1), pages)
    return {"total": total, "page": number, "pages": pages, "items": rows[(number - 1) * per_page: number * per_page]}


def thread(rows: list[dict], *, parent: str = "parent_id", key: Callable[[dict], Any] | None = None
           ) -> list[tuple[int, dict]]:
    """Threaded data as a flat list of ``(depth, row)`` in reading order.

    Each row's children follow it, one level deeper, ordered by ``key`` (default: id);
    a row whose parent is not in ``rows`` (deleted, or not loaded) starts a thread of
    its own. Cycles cannot hang it: every row is emitted once.
    """
    order = key or (lambda r: r["id"])
    by_id = {r["id"]: r for r in rows}
    children: dict[Any, list[dict]] = {}
    roots: list[dict] = []
    for r in rows:
        p = r.get(parent)
        if p is not None and p in by_id and p != r["id"]:
            children.setdefault(p, []).append(r)
        else:
            roots.append(r)
    out: list[tuple[int, dict]] = []
    seen: set[Any] = set()
    stack: list[tuple[int, dict]] = [(0, r) for r in sorted(roots, key=order, reverse=True)]
    while stack:
        depth, r = stack.pop()
        if r["id"] in seen:
            continue
        seen.add(r["id"])
        out.append((depth, r))
        for c in sorted(children.get(r["id"], ()), key=order, reverse=True):
            stack.append((depth + 1, c))
    # Rows only reachable through a cycle (no root) still appear, in id order.
    for r in sorted(rows, key=order):
        if r["id"] not in seen:
            seen.add(r["id"])
            out.append((0, r))
    return out
