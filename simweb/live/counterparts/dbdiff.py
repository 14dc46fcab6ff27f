"""Row- and field-level differences between two SQLite databases (pristine vs live).

Every table is keyed by its primary key (``rowid`` when it declares none). The result is a
sorted list of :class:`Change`: an ``insert`` or ``delete`` of a whole row (``field`` None,
the row's fields in ``after`` or ``before``) or an ``update`` of one field with its before
and after values. Bookkeeping (sessions, caches, ``last_login``) is dropped with
``ignore_tables`` / ``ignore_fields`` patterns (``fnmatch``: ``"django_session"``,
``"*.last_login"``, ``"_issue.__activity*"``).

Large tables are compared inside SQLite (``EXCEPT`` over both attached files), so only the
rows that differ are read into Python.
"""
from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Change:
    """One difference: a row inserted or deleted, or one field of a row updated."""

    table: str
    pk: tuple
    op: str                    # "insert" | "delete" | "update"
    field: str | None = None   # the updated field; None for a whole-row insert/delete
    before: Any = None         # the old value (update) or the deleted row (dict)
    after: Any = None          # the new value (update) or the inserted row (dict)

    @property
    def key(self) -> str:
        """``table.pk`` or ``table.pk.field`` (composite keys joined by ``/``)."""
        pk = "/".join(str(v) for v in self.pk)
        return f"{self.table}.{pk}" + (f".{self.field}" if self.field else "")

    def row(self) -> dict | None:
        """The row as it is now (insert) or was (delete); None for an update."""
        return self.after if self.op == "insert" else self.before if self.op == "delete" else None

    def to_json(self) -> dict:
        return {"table": self.table, "pk": list(self.pk), "op": self.op, "field": self.field,
                "before": _jsonable(self.before), "after": _jsonable(self.after)}


def _jsonable(v: Any) -> Any:
    if isinstance(v, bytes):
        return v.hex()
    if isinstance(v, dict):
        return {k: _jsonable(x) for k, x in v.items()}
    return v


def _path_of(src: Any) -> str:
    if isinstance(src, sqlite3.Connection):
        row = src.execute("PRAGMA database_list").fetchone()
        if not row or not row[2]:
            raise ValueError("dbdiff needs file-backed databases")
        return row[2]
    return str(Path(src).absolute())


def _tables(conn: sqlite3.Connection, schema: str) -> dict[str, list[str]]:
    names = [r[0] for r in conn.execute(
        f"SELECT name FROM {schema}.sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' ORDER BY name")]
    return {n: [r[1] for r in conn.execute(f"PRAGMA {schema}.table_info({_q(n)})")] for n in names}


def primary_key(conn: sqlite3.Connection, table: str, schema: str = "main") -> list[str]:
    """The primary-key columns of ``table`` in declaration order; ``["rowid"]`` if none."""
    cols = sorted((r[5], r[1]) for r in conn.execute(f"PRAGMA {schema}.table_info({_q(table)})") if r[5])
    return [c for _, c in cols] or ["rowid"]


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _matches(name: str, patterns: Iterable[str]) -> bool:
    return any(fnmatchcase(name, p) for p in patterns)


def diff(before: Any, after: Any, *, ignore_tables: Sequence[str] = (), ignore_fields: Sequence[str] = (),
         tables: Sequence[str] | None = None) -> list[Change]:
    """The changes that turn database ``before`` into ``after`` (files or connections on files).

    ``ignore_tables`` patterns drop whole tables; ``ignore_fields`` patterns (``table.field``)
    drop fields, and an update whose only changed fields are ignored is no change at all.
    ``tables`` limits the comparison to those tables. Sorted by table, key, field."""
    conn = sqlite3.connect(":memory:", uri=True)
    try:
        conn.execute("ATTACH DATABASE ? AS a", (f"file:{_path_of(before)}?mode=ro",))
        conn.execute("ATTACH DATABASE ? AS b", (f"file:{_path_of(after)}?mode=ro",))
        ta, tb = _tables(conn, "a"), _tables(conn, "b")
        names = sorted(set(ta) | set(tb))
        if tables is not None:
            names = [n for n in names if n in set(tables)]
        out: list[Change] = []
        for t in names:
            if _matches(t, ignore_tables):
                continue
            ignored = {c for c in set(ta.get(t, [])) | set(tb.get(t, [])) if _matches(f"{t}.{c}", ignore_fields)}
            out.extend(_diff_table(conn, t, ta.get(t), tb.get(t), ignored))
        return sorted(out, key=_order)
    finally:
        conn.close()


def _order(c: Change) -> tuple:
    return (c.table, tuple((0, v) if isinstance(v, (int, float)) else (1, str(v)) for v in c.pk), c.field or "")


def _rows(conn: sqlite3.Connection, sql: str, cols: list[str]) -> list[dict]:
    return [dict(zip(cols, r)) for r in conn.execute(sql)]


def _diff_table(conn: sqlite3.Connection, t: str, cols_a: list[str] | None, cols_b: list[str] | None,
                ignored: set[str]) -> list[Change]:
    side = "b" if cols_a is None else "a"
    pk = primary_key(conn, t, side)
    if cols_a is None or cols_b is None:
        cols = cols_b if cols_a is None else cols_a
        assert cols is not None
        sel = ", ".join(_q(c) for c in [*pk, *cols] if c not in ignored)
        names = [c for c in [*pk, *cols] if c not in ignored]
        op = "insert" if cols_a is None else "delete"
        whole = []
        for r in _rows(conn, f"SELECT {sel} FROM {side}.{_q(t)}", names):
            key = tuple(r[k] for k in pk)
            row = {k: v for k, v in r.items() if k in cols}
            whole.append(Change(t, key, op, None, row if op == "delete" else None, row if op == "insert" else None))
        return whole
    shared = [c for c in cols_a if c in cols_b]
    keep = [c for c in shared if c not in ignored or c in pk]
    sel_cols = list(dict.fromkeys([*pk, *keep]))
    sel = ", ".join(_q(c) for c in sel_cols)
    # Rows that differ on a kept field, from either side (SQLite does the bulk comparison).
    changed_a = _rows(conn, f"SELECT {sel} FROM a.{_q(t)} EXCEPT SELECT {sel} FROM b.{_q(t)}", sel_cols)
    changed_b = _rows(conn, f"SELECT {sel} FROM b.{_q(t)} EXCEPT SELECT {sel} FROM a.{_q(t)}", sel_cols)
    by_a = {tuple(r[k] for k in pk): r for r in changed_a}
    by_b = {tuple(r[k] for k in pk): r for r in changed_b}
    # A row that moved out of the EXCEPT only on one side may still exist on the other.
    present_a = _existing(conn, "a", t, pk, [k for k in by_b if k not in by_a])
    present_b = _existing(conn, "b", t, pk, [k for k in by_a if k not in by_b])
    out: list[Change] = []
    for key in by_a.keys() | by_b.keys():
        ra, rb = by_a.get(key), by_b.get(key)
        if ra is not None and rb is not None:
            for c in keep:
                if c not in pk and ra[c] != rb[c]:
                    out.append(Change(t, key, "update", c, ra[c], rb[c]))
        elif ra is not None and key not in present_b:
            out.append(Change(t, key, "delete", None, dict(ra), None))
        elif rb is not None and key not in present_a:
            out.append(Change(t, key, "insert", None, None, dict(rb)))
    return out


def _existing(conn: sqlite3.Connection, schema: str, t: str, pk: list[str], keys: list[tuple]) -> set[tuple]:
    """Which of ``keys`` exist in ``schema.t`` (rows identical on both sides drop out of EXCEPT)."""
    found: set[tuple] = set()
    where = " AND ".join(f"{_q(c)} IS ?" for c in pk)
    for key in keys:
        if conn.execute(f"SELECT 1 FROM {schema}.{_q(t)} WHERE {where}", key).fetchone():
            found.add(key)
    return found


def summarize(changes: Iterable[Change]) -> dict[str, dict[str, int]]:
    """Counts per table and op: ``{"_issue": {"insert": 1, "update": 3}}`` (sorted)."""
    out: dict[str, dict[str, int]] = {}
    for c in changes:
        out.setdefault(c.table, {}).setdefault(c.op, 0)
        out[c.table][c.op] += 1
    return {t: dict(sorted(v.items())) for t, v in sorted(out.items())}
