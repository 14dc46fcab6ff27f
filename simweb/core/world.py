"""The world contract every app's read-only data keeps, and what its SQLAlchemy models give.

An app's world (``AppDefinition.world``) is a class with

=====================================  ==================================================
``load(seed=0, size=None, *,           the world for ``(seed, size)`` (``None``: the app's
progress=False)`` (classmethod)        default size), the same data for the same arguments
``hash``                               the sha256 hex digest of its content: states carry it,
                                       and a state of another world is refused
``seed``, ``size``                     which world it is (the state's ``world`` reference)
``max_id(table)``                      the largest id of a world table; rows created at run
                                       time get ids above it (every table an event inserts
                                       into must answer)
=====================================  ==================================================

and the read methods its functions need. :func:`check_world` checks the contract (it is
part of ``simweb.check_app``). A world in SQLite is a :class:`simweb.worlddb.WorldFile`,
which keeps it for you; its models declare the tables once, and :class:`RowMap` derives
from a model how a row reads as a dict, so no app writes a SELECT-to-dict mapper by hand.
"""
from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import orjson
from sqlalchemy import JSON, Boolean, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from .state import deep_copy
from .worlddb import LRU

_HEX64 = re.compile(r"^[0-9a-f]{64}$")


class MetaTable:
    """The ``meta`` table every world file has (seed, size, hash, counts, schema): mix it
    into the app's declarative base, ``class Meta(MetaTable, Base): pass``."""

    __tablename__ = "meta"
    key: Mapped[str] = mapped_column(String, primary_key=True)
    value: Mapped[str] = mapped_column(Text)


def json_column(**kw: Any) -> Any:
    """A column holding JSON text (a list of ids, a mapping of options): :class:`RowMap`
    decodes it. In SQLite it is plain TEXT, so declaring it changes no world file."""
    return mapped_column(Text, info={"json": True}, **kw)


def _decoder(column: Any) -> Callable[[Any], Any] | None:
    if column.info.get("json") or isinstance(column.type, JSON):
        return orjson.loads
    if isinstance(column.type, Boolean):
        return bool   # SQLite stores 0/1
    return None


class RowMap:
    """How rows of one model's table read as plain dicts, derived from its columns.

    ``RowMap(User)`` reads every column in declaration order; ``only=`` picks some (in that
    order), ``drop=`` leaves some out. Booleans become ``bool`` and :func:`json_column`
    columns are decoded; ``extra`` adds derived keys to each dict (it gets the dict and
    changes it). ``cols`` is the SELECT list, so queries name columns only through the map:

        USERS = RowMap(User)
        USERS.one(conn, "id = ?", (uid,))
        USERS.rows(conn, "project_id = ?", (pid,), order="id")
        conn.execute(f"SELECT {USERS.cols} FROM users WHERE ...")   # then USERS(row)
    """

    __slots__ = ("model", "table", "names", "cols", "_decoders", "_extra")

    def __init__(self, model: Any, *, only: Sequence[str] | None = None, drop: Iterable[str] = (),
                 extra: Callable[[dict], None] | None = None) -> None:
        table = model.__table__
        by_name = {c.name: c for c in table.columns}
        if only is not None:
            unknown = [n for n in only if n not in by_name]
            if unknown:
                raise ValueError(f"{table.name} has no column {', '.join(unknown)}")
            columns = [by_name[n] for n in only]
        else:
            dropped = set(drop)
            columns = [c for c in table.columns if c.name not in dropped]
        self.model = model
        self.table: str = table.name
        self.names: tuple[str, ...] = tuple(c.name for c in columns)
        self.cols: str = ", ".join(self.names)
        self._decoders = tuple((i, d) for i, c in enumerate(columns) if (d := _decoder(c)) is not None)
        self._extra = extra

    def __call__(self, row: Sequence[Any]) -> dict:
        """The dict of one fetched row (a tuple in :attr:`cols` order)."""
        out = dict(zip(self.names, row))
        for i, decode in self._decoders:
            value = row[i]
            if value is not None:
                out[self.names[i]] = decode(value)
        if self._extra is not None:
            self._extra(out)
        return out

    def select(self, where: str = "", order: str = "") -> str:
        """``SELECT <cols> FROM <table> [WHERE where] [ORDER BY order]``."""
        sql = f"SELECT {self.cols} FROM {self.table}"
        if where:
            sql += f" WHERE {where}"
        if order:
            sql += f" ORDER BY {order}"
        return sql

    def one(self, conn: sqlite3.Connection, where: str, params: Sequence[Any] = ()) -> dict | None:
        """The first row matching ``where``, or None."""
        row = conn.execute(self.select(where), params).fetchone()
        return None if row is None else self(row)

    def rows(self, conn: sqlite3.Connection, where: str = "", params: Sequence[Any] = (), *,
             order: str = "id", limit: int | None = None, offset: int = 0) -> list[dict]:
        """The rows matching ``where`` in ``order`` (``limit`` of them from ``offset``)."""
        sql = self.select(where, order)
        if limit is not None:
            sql += " LIMIT ? OFFSET ?"
            params = [*params, int(limit), int(offset)]
        return [self(r) for r in conn.execute(sql, params)]

    def by_ids(self, conn: sqlite3.Connection, ids: Sequence[int]) -> list[dict]:
        """Rows by id, in the order given (unknown ids skipped)."""
        ids = [int(i) for i in ids]
        if not ids:
            return []
        found = {r[0]: r for r in conn.execute(self.select(f"id IN ({','.join('?' * len(ids))})"), ids)}
        return [self(found[i]) for i in ids if i in found]


class RowCache:
    """One table's rows by id, decoded once: what a world reads page after page (a
    product, an issue, a user) is built into its dict on the first read and kept in an
    LRU of ``maxsize`` rows. Every read returns a fresh copy, so a caller owns what it
    gets, nested lists included: a shallow copy whose containers (the decoded JSON
    columns) are copied too, which costs a fraction of decoding the row again.

        self._issues = RowCache(ISSUE_ROWS, 8_192)
        self._issues.get(self._conn, issue_id)          # dict or None
        self._issues.many(self._conn, ids)              # {id: dict} of the ids that exist
        self._issues.in_order(self._conn, ids)          # [dict] in the order of ids

    ``decode`` turns a fetched row (in ``rows.cols`` order) into the dict; by default the
    RowMap itself. ``conn`` is called only on a miss."""

    __slots__ = ("_decode", "_one", "_many", "_lru")

    def __init__(self, rows: RowMap, maxsize: int, decode: Callable[[Sequence[Any]], dict] | None = None) -> None:
        self._decode = decode or rows
        self._one = rows.select("id = ?")
        self._many = rows.select("id IN ({})")
        self._lru = LRU(maxsize)

    def _keep(self, row: Sequence[Any]) -> tuple[dict, tuple[str, ...]]:
        d = self._decode(row)
        entry = (d, tuple(k for k, v in d.items() if type(v) is dict or type(v) is list))
        self._lru.put(d["id"], entry)
        return entry

    @staticmethod
    def _copy(entry: tuple[dict, tuple[str, ...]]) -> dict:
        d, nested = entry
        out = dict(d)
        for k in nested:
            out[k] = deep_copy(out[k])
        return out

    def get(self, conn: Callable[[], sqlite3.Connection], key: int) -> dict | None:
        """The row with id ``key`` (a fresh dict), or None."""
        entry = self._lru.get(key)
        if entry is None:
            row = conn().execute(self._one, (key,)).fetchone()
            if row is None:
                return None
            entry = self._keep(row)
        return self._copy(entry)

    def many(self, conn: Callable[[], sqlite3.Connection], ids: Iterable[int]) -> dict[int, dict]:
        """Fresh dicts of the rows among ``ids`` that exist, by id (one query for the misses,
        in chunks of 500)."""
        out: dict[int, dict] = {}
        missing: list[int] = []
        for key in dict.fromkeys(ids):   # each id once: a repeated id is looked up and copied once
            entry = self._lru.get(key)
            if entry is None:
                missing.append(key)
            else:
                out[key] = self._copy(entry)
        missing.sort()
        for i in range(0, len(missing), 500):
            chunk = missing[i:i + 500]
            for row in conn().execute(self._many.format(",".join("?" * len(chunk))), chunk):
                entry = self._keep(row)
                out[entry[0]["id"]] = self._copy(entry)
        return out

    def in_order(self, conn: Callable[[], sqlite3.Connection], ids: Iterable[int]) -> list[dict]:
        """Fresh dicts of the rows for ``ids`` in the order given (unknown ids skipped; a
        repeated id gets a dict of its own)."""
        wanted = list(ids)
        got = self.many(conn, wanted)
        out: list[dict] = []
        taken: set[int] = set()
        for key in wanted:
            row = got.get(key)
            if row is not None:
                out.append(deep_copy(row) if key in taken else row)
                taken.add(key)
        return out


def inserted_tables(spec: Any) -> list[str]:
    """Tables a spec's events and timers insert rows into (their ids come after ``max_id``)."""
    lists = [e.updates for e in spec.events.values()] + [t.updates for t in spec.timers.values()]
    lists += [p.on_view for p in spec.pages.values()]
    return sorted({u.table for updates in lists for u in updates if u.op == "insert" and u.table})


def check_world(app: Any) -> list[str]:
    """Problems with an app's world against the contract above (empty: it keeps it)."""
    world = app.world
    problems: list[str] = []
    digest = getattr(world, "hash", None)
    if not isinstance(digest, str) or not _HEX64.match(digest):
        problems.append(f"world.hash must be a sha256 hex digest, not {digest!r}")
    for attr, want in (("seed", app.seed), ("size", app.size)):
        got = getattr(world, attr, None)
        if got != want:
            problems.append(f"world.{attr} is {got!r}, but the world was loaded for {attr} {want}")
    again = type(world).load(seed=app.seed, size=app.size)
    if getattr(again, "hash", None) != digest:
        problems.append("loading the same (seed, size) again gives another hash")
    for table in inserted_tables(app.spec):
        try:
            top = world.max_id(table)
        except Exception as exc:   # the contract says it answers: report what it did instead
            problems.append(f"world.max_id({table!r}) failed: {type(exc).__name__}: {exc}")
            continue
        if not isinstance(top, int) or isinstance(top, bool) or top < 0:
            problems.append(f"world.max_id({table!r}) is {top!r}, not an id (an int >= 0)")
    return problems


__all__ = ["MetaTable", "RowCache", "RowMap", "check_world", "inserted_tables", "json_column"]
