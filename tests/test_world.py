"""The world contract (simweb.world): every app's world keeps it, check_world names what a
broken one breaks, and RowMap reads rows as the models declare them."""
from __future__ import annotations

import sqlite3

import pytest
from sqlalchemy import JSON, Boolean, Integer, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

import simweb
from simweb.core.world import MetaTable, RowCache, RowMap, check_world, inserted_tables, json_column
from simweb.core.worlddb import schema_fingerprint


class _Base(DeclarativeBase):
    pass


class _Meta(MetaTable, _Base):
    pass


class _Thing(_Base):
    __tablename__ = "things"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String)
    done: Mapped[bool] = mapped_column(Boolean)
    tags: Mapped[str] = json_column()
    extra: Mapped[dict] = mapped_column(JSON)
    secret: Mapped[str] = mapped_column(String)


@pytest.fixture()
def conn():
    c = sqlite3.connect(":memory:")
    c.execute("CREATE TABLE things (id INTEGER PRIMARY KEY, name TEXT, done INTEGER, tags TEXT, extra TEXT, secret TEXT)")
    c.executemany("INSERT INTO things VALUES (?, ?, ?, ?, ?, ?)",
                  [(1, "a", 1, "[1,2]", '{"k":1}', "x"), (2, "b", 0, "[]", "null", "y"), (3, "c", 0, "[3]", "{}", "z")])
    return c


def test_row_map_reads_columns_as_the_model_declares_them(conn):
    things = RowMap(_Thing, drop=("secret",), extra=lambda r: r.__setitem__("label", r["name"].upper()))
    assert things.cols == "id, name, done, tags, extra"
    assert things.one(conn, "id = ?", (1,)) == {"id": 1, "name": "a", "done": True, "tags": [1, 2],
                                               "extra": {"k": 1}, "label": "A"}
    one = things.one(conn, "id = ?", (1,))
    assert one is not None and list(one) == ["id", "name", "done", "tags", "extra", "label"]
    assert things.one(conn, "id = ?", (9,)) is None
    assert [r["id"] for r in things.rows(conn, "done = ?", (0,), order="id DESC")] == [3, 2]
    assert [r["id"] for r in things.rows(conn, limit=1, offset=1)] == [2]
    assert [r["id"] for r in things.by_ids(conn, [3, 9, 1])] == [3, 1]
    assert things.by_ids(conn, []) == []
    assert RowMap(_Thing, only=("name", "id")).one(conn, "id = 2") == {"name": "b", "id": 2}
    with pytest.raises(ValueError, match="things has no column nme"):
        RowMap(_Thing, only=("nme",))


def test_row_cache_reads_what_the_row_map_reads_and_hands_out_copies(conn):
    things = RowMap(_Thing, drop=("secret",))
    queries: list[str] = []
    conn.set_trace_callback(queries.append)
    cache = RowCache(things, 2)
    first = cache.get(lambda: conn, 1)
    assert first is not None and first == things.one(conn, "id = ?", (1,))
    queries.clear()
    first["tags"].append(99)     # a caller edits what it got, nested list included
    first["name"] = "edited"
    again = cache.get(lambda: conn, 1)
    assert again is not None and again == {"id": 1, "name": "a", "done": True, "tags": [1, 2], "extra": {"k": 1}}
    assert queries == []         # served from the cache
    assert again["tags"] is not first["tags"]
    assert cache.get(lambda: conn, 9) is None
    got = cache.many(lambda: conn, [3, 9, 1, 3])
    assert got == {3: things.one(conn, "id = 3"), 1: things.one(conn, "id = 1")}
    got[3]["tags"].clear()
    third = cache.get(lambda: conn, 3)
    assert third is not None and third["tags"] == [3]
    assert cache.many(lambda: conn, []) == {}
    rows = cache.in_order(lambda: conn, [2, 9, 1, 2])
    assert [r["id"] for r in rows] == [2, 1, 2] and rows[0] == rows[2] and rows[0] is not rows[2]
    conn.set_trace_callback(None)


def test_the_meta_mixin_and_json_columns_change_no_world_layout():
    """Worlds moved onto MetaTable and json_column keep their schema fingerprint (no rebuild)."""
    class OldBase(DeclarativeBase):
        pass

    class OldMeta(OldBase):
        __tablename__ = "meta"
        key: Mapped[str] = mapped_column(String, primary_key=True)
        value: Mapped[str] = mapped_column(Text)

    class OldThing(OldBase):
        __tablename__ = "things"
        id: Mapped[int] = mapped_column(Integer, primary_key=True)
        tags: Mapped[str] = mapped_column(Text)

    class NewBase(DeclarativeBase):
        pass

    class NewMeta(MetaTable, NewBase):
        pass

    class NewThing(NewBase):
        __tablename__ = "things"
        id: Mapped[int] = mapped_column(Integer, primary_key=True)
        tags: Mapped[str] = json_column()

    assert schema_fingerprint(1, OldBase.metadata) == schema_fingerprint(1, NewBase.metadata)


@pytest.mark.parametrize("name", ["booking", "cms", "forum", "issues", "shopping"])
def test_every_app_world_keeps_the_contract(name):
    app = simweb.make(name, seed=0).app
    assert check_world(app) == []
    assert inserted_tables(app.spec), "every app creates rows at run time"


class _Broken:
    hash = "not-a-digest"
    seed = 0
    size = 7

    @classmethod
    def load(cls, seed=0, size=None, *, progress=False):
        return cls()

    def max_id(self, table):
        raise KeyError(table)


def test_check_world_names_what_a_broken_world_breaks():
    app = simweb.make("issues", seed=0).app

    class Fake:
        world = _Broken()
        seed, size, spec = app.seed, app.size, app.spec

    problems = check_world(Fake())
    assert any(p.startswith("world.hash must be a sha256 hex digest") for p in problems)
    assert any(p.startswith("world.size is 7") for p in problems)
    assert any(p.startswith("world.max_id('issues') failed: KeyError") for p in problems)


def test_the_runtime_schema_takes_required_columns_from_the_models():
    import yaml

    from simweb.core.spec import SpecError, compile_spec

    app = simweb.make("booking", seed=0).app
    row = app.spec.runtime_schema["properties"]["entities"]["properties"]["bookings"]["additionalProperties"]
    assert row["required"] == list(type(app.world).ROW_MAPS["bookings"].names)
    text = open(app.definition.spec_path(), encoding="utf-8").read()
    assert "required: columns" in text
    fns = app.function_table.merged_with_builtins()
    with pytest.raises(SpecError, match="entities.bookings requires 'columns', but the world declares no model"):
        compile_spec(yaml.safe_load(text), "booking.yaml", app.callables, {n: f.reads for n, f in fns.items()},
                     columns={})
    bad = app.initial_state(0)
    bad["runtime"]["entities"]["bookings"] = {"999999": {"id": 999999}}
    with pytest.raises(Exception, match="required"):
        app.check_state(bad)
