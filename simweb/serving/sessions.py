"""Served sessions in a database: one row per browser session, written after every
state-changing request, so a server killed with ``kill -9`` and started again carries on.

Rows live in one table (``simweb_sessions``) reached through SQLAlchemy: a SQLite file by
default, any SQLAlchemy URL otherwise. Each row holds the state document (canonical
JSON), the app's spec and world hashes (a row of another world is never loaded), and two
wall-clock times that only drive expiry (they never reach a state).

Two budgets keep cookie-less traffic from pushing anyone out:

    new          a session whose cookie has not come back yet (a crawler, a health
                 check, a first page view). At most ``max_new`` of them; the oldest is
                 dropped first (without a tombstone), and only ever for another new one.
    established  a session whose cookie came back, or one a control client created.
                 At most ``max_sessions``; over the cap the least recently seen one goes.

A session idle for longer than ``idle_lifetime`` seconds is expired. A session that
expired or was evicted leaves a tombstone (the state is dropped, the reason kept), so a
returning cookie can be told exactly what happened; tombstones are purged after another
``idle_lifetime``.

Locks: one of a fixed set of stripes per session id (chosen by crc32 of the id), so a
lock always exists and can never be dropped while a request holds it. A write is an
UPDATE of a live row: a session evicted while a request on it was running is not brought
back by that request's write (:meth:`SessionStore.save` returns False).
"""
from __future__ import annotations

import os
import secrets
import threading
import time
import zlib
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import orjson
from sqlalchemy import (
    Boolean,
    Column,
    Float,
    Index,
    LargeBinary,
    MetaData,
    String,
    Table,
    bindparam,
    create_engine,
    delete,
    event,
    func,
    select,
    update,
)
from sqlalchemy.engine import Engine
from sqlalchemy.pool import StaticPool

#: Documented defaults (``simweb serve --help`` shows them too).
MAX_SESSIONS = 10_000
MAX_NEW_SESSIONS = 1_000
IDLE_LIFETIME = 24 * 3600
CACHE_SIZE = 256
#: The response header that says what became of the request's session (the server and the
#: start route of simweb.omnibox.start both set it).
SESSION_HEADER = "X-Simweb-Session"
_STRIPES = 1024

_metadata = MetaData()
SESSIONS = Table(
    "simweb_sessions", _metadata,
    Column("id", String(64), primary_key=True),
    Column("app", String(64), nullable=False),
    Column("spec_hash", String(64), nullable=False),
    Column("world_hash", String(64), nullable=False),
    Column("state", LargeBinary, nullable=True),        # NULL: a tombstone
    Column("established", Boolean, nullable=False, default=False),
    Column("created", Float, nullable=False),
    Column("seen", Float, nullable=False),
    Column("gone", String(16), nullable=True),          # 'expired' | 'evicted' | 'closed' for a tombstone
)
Index("simweb_sessions_budget", SESSIONS.c.app, SESSIONS.c.established, SESSIONS.c.seen)


@dataclass(frozen=True)
class Lookup:
    """What a session id names: a live state, or why there is none."""

    state: dict | None
    status: str          # 'live' | 'unknown' | 'expired' | 'evicted' | 'closed' | 'incompatible'
    established: bool = False


class SessionDBError(ValueError):
    """A session database that cannot be used: damaged, holding a ``simweb_sessions``
    table of another layout, a SQLite file holding other tables, or one whose driver is
    not installed (one line, naming the database and what to do)."""


#: Python module of a database driver -> the package that installs it.
_DRIVER_PACKAGES = {"psycopg": "psycopg", "psycopg2": "psycopg2-binary", "MySQLdb": "mysqlclient",
                    "pymysql": "PyMySQL", "asyncpg": "asyncpg", "oracledb": "oracledb", "pyodbc": "pyodbc",
                    "pymssql": "pymssql", "mysql": "mysql-connector-python", "mariadb": "mariadb"}


def _shown(url: str) -> str:
    """``url`` without its password, for messages."""
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:   # an unparseable URL is refused later, by create_engine
        return url


def _is_memory(url: str) -> bool:
    """A SQLite URL of an in-memory database: no file (``sqlite://``, ``sqlite:///``),
    ``:memory:``, or a ``mode=memory`` URI."""
    from sqlalchemy.engine import make_url

    if not url.startswith("sqlite"):
        return False
    try:
        parsed = make_url(url)
    except Exception:
        return False
    name = parsed.database or ""
    return name in ("", ":memory:") or name.startswith("file::memory:") or parsed.query.get("mode") == "memory"


def _engine(url: str) -> Engine:
    try:
        if _is_memory(url):
            # One shared connection: an in-memory database exists per connection.
            engine = create_engine(url, poolclass=StaticPool, connect_args={"check_same_thread": False})
        elif url.startswith("sqlite"):
            engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30}, pool_size=8,
                                   max_overflow=16)
        else:
            engine = create_engine(url, pool_pre_ping=True)
    except ImportError as exc:   # the dialect's driver (SQLAlchemy imports it here)
        module = (exc.name or "").split(".")[0]
        package = _DRIVER_PACKAGES.get(module, module or "its driver")
        raise SessionDBError(f"session database {_shown(url)}: its driver (Python module '{module}') is not "
                             f"installed; pip install {package}") from None
    _check_database(engine, url)
    if url.startswith("sqlite"):
        @event.listens_for(engine, "connect")
        def _pragmas(conn: Any, _record: Any) -> None:
            cur = conn.cursor()
            # WAL: readers never wait for the writer. synchronous=NORMAL: a commit reaches
            # the OS before the response is sent, which is what surviving kill -9 needs.
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.close()
    return engine


def _check_database(engine: Engine, url: str) -> None:
    """Refuse a database the store cannot use, before anything writes to it: a damaged
    SQLite file (``PRAGMA quick_check``), a SQLite file holding other tables (not a
    session database: another program's file given by mistake), or a ``simweb_sessions``
    table whose columns are not this store's. A server database may hold other tables."""
    from sqlalchemy import inspect
    from sqlalchemy.exc import DBAPIError

    where = _shown(url)
    sqlite = url.startswith("sqlite")
    try:
        with engine.connect() as conn:
            if sqlite and not _is_memory(url):
                problems = [" ".join(str(r[0]).split()) for r in conn.exec_driver_sql("PRAGMA quick_check(5)")]
                if problems != ["ok"]:
                    found = "; ".join(problems).replace("*** in database main *** ", "")
                    raise SessionDBError(f"session database {where} is damaged (PRAGMA quick_check: "
                                         f"{found[:100]}); move it away or pass another --session-db")
            tables = inspect(conn).get_table_names()
            others = sorted(t for t in tables if t != SESSIONS.name)
            if sqlite and others:
                raise SessionDBError(f"session database {where} holds other tables ({', '.join(others[:5])}"
                                     f"{', ...' if len(others) > 5 else ''}): not a simweb session database; "
                                     f"pass a file of its own")
            if SESSIONS.name in tables:
                have = [c["name"] for c in inspect(conn).get_columns(SESSIONS.name)]
                want = list(SESSIONS.columns.keys())
                if sorted(have) != sorted(want):
                    missing = [c for c in want if c not in have]
                    extra = [c for c in have if c not in want]
                    detail = "; ".join(part for part in (
                        f"missing {', '.join(missing)}" if missing else "",
                        f"unknown {', '.join(extra)}" if extra else "") if part)
                    raise SessionDBError(f"session database {where} has a {SESSIONS.name} table of another layout "
                                         f"({detail}): not one this simweb made; pass another --session-db")
            if sqlite and not _is_memory(url):
                _check_writable(conn, where)
    except DBAPIError as exc:
        if not sqlite:
            raise
        import sqlite3

        reason = " ".join(str(exc.orig).split())
        if isinstance(exc.orig, sqlite3.DatabaseError) and not isinstance(exc.orig, sqlite3.OperationalError):
            raise SessionDBError(f"session database {where} is damaged or not a SQLite database ({reason}); "
                                 f"move it away or pass another --session-db") from None
        raise SessionDBError(f"session database {where} cannot be used ({reason})") from None
    finally:
        engine.dispose()   # the connections the pragmas of a SQLite file are set on come after


def _check_writable(conn: Any, where: str) -> None:
    """Refuse a SQLite file the server can read but not write (a read-only file, mount or
    ``mode=ro`` URL): every request would fail on its write. The probe is a write in a
    transaction rolled back, so the file is left as it was."""
    import sqlite3

    raw = conn.connection.dbapi_connection
    cur = raw.cursor()
    try:
        if not raw.in_transaction:
            cur.execute("BEGIN")
        version = cur.execute("PRAGMA user_version").fetchone()[0]
        cur.execute(f"PRAGMA user_version = {int(version)}")
    except sqlite3.Error as exc:
        reason = " ".join(str(exc).split())
        raise SessionDBError(f"session database {where} cannot be written ({reason}): make it writable or pass "
                             f"another --session-db") from None
    finally:
        if raw.in_transaction:
            raw.rollback()
        cur.close()


def _sqlite_file(url: str) -> str | None:
    """The file a SQLite URL names (resolved: one file named two ways is one file), None
    for an in-memory database or a URL of another database."""
    from sqlalchemy.engine import make_url

    if not url.startswith("sqlite") or _is_memory(url):
        return None
    try:
        parsed = make_url(url)
    except Exception:
        return None
    name = parsed.database or ""
    if str(parsed.query.get("uri", "")).lower() in ("true", "1") or name.startswith("file:"):
        from urllib.parse import unquote, urlsplit

        if name.startswith("file:"):
            name = unquote(urlsplit(name).path) if name.startswith("file://") else unquote(name[5:].split("?")[0])
    if not name or name == ":memory:":
        return None
    return os.path.realpath(name)


class _Hold:
    """This process's claim on one app's sessions in a SQLite file: an exclusive ``flock``
    on a lock file beside it (``<file>-simweb-<app>.lock``, holding the owner's pid). The
    OS drops it when the process ends, ``kill -9`` included, so a restart is never refused
    by a dead server; a second live server of the same app is (its cache would go stale)."""

    def __init__(self, path: str, app: str, where: str):
        import fcntl

        self.path = f"{path}-simweb-{app}.lock"
        try:
            self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise SessionDBError(f"session database {where}: cannot create its lock file {self.path} "
                                 f"({exc.strerror})") from None
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            try:
                owner = os.pread(self.fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
            finally:
                os.close(self.fd)
            raise SessionDBError(f"session database {where} is in use by another simweb server of {app} (pid "
                                 f"{owner}): one server owns a database's sessions; stop it or pass another "
                                 f"--session-db") from None
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, f"{os.getpid()}\n".encode(), 0)

    def release(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)   # closing it drops the flock
            self.fd = -1


@dataclass
class _Entry:
    state: dict
    seen: float
    established: bool


class SessionStore:
    """Session id -> state document, persisted through SQLAlchemy.

    Python API (what other servers build on)::

        store = SessionStore("sqlite:///sessions.db", app="shopping", spec_hash=..., world_hash=...)
        sid = store.create(state, established=True)   # a new session holding ``state``
        with store.lock(sid):
            found = store.load(sid)                    # Lookup(state, 'live') or why not
            found.state["meta"]["step"] += 1
            store.save(sid, found.state)               # False if it was evicted meanwhile

    One server process owns a database: live sessions are cached in memory (at most
    ``cache_size`` states), the database is the copy that survives the process.
    ``clock`` (seconds, default ``time.time``) only drives idle expiry. ``check`` validates
    a state read back from the database (raising if it cannot be used): a row that is not
    a JSON object, or fails it, is 'incompatible'.
    """

    def __init__(self, url: str, *, app: str, spec_hash: str, world_hash: str, max_sessions: int = MAX_SESSIONS,
                 max_new: int = MAX_NEW_SESSIONS, idle_lifetime: float = IDLE_LIFETIME,
                 cache_size: int = CACHE_SIZE, clock: Callable[[], float] = time.time,
                 check: Callable[[Any], None] | None = None):
        if max_sessions < 1 or max_new < 1:
            raise ValueError("session caps must be at least 1")
        if not 0 < idle_lifetime < float("inf"):   # NaN too: it would never expire anything
            raise ValueError(f"the idle lifetime must be a positive finite number of seconds, not {idle_lifetime}")
        self.url = url
        self.app = app
        self.spec_hash = spec_hash
        self.world_hash = world_hash
        self.max_sessions = max_sessions
        self.max_new = max_new
        self.idle_lifetime = float(idle_lifetime)
        self.clock = clock
        self.check = check
        self.engine = _engine(url)
        path = _sqlite_file(url)
        self._hold = _Hold(path, app, _shown(url)) if path is not None else None
        try:
            _metadata.create_all(self.engine)
        except BaseException:
            if self._hold is not None:
                self._hold.release()
            raise
        self._stripes = [threading.Lock() for _ in range(_STRIPES)]
        self._guard = threading.Lock()            # the memory cache
        self._write = threading.Lock()            # one writer at a time (SQLite has one anyway)
        self._cache: OrderedDict[str, _Entry] = OrderedDict()
        self._cache_size = max(0, cache_size)
        self._last_sweep = -1.0e18
        # The per-request write, built once (SQLAlchemy then reuses its compiled form)
        # and run on one connection kept for writes: a request pays for the UPDATE only.
        live_sid = (SESSIONS.c.id == bindparam("sid")) & (SESSIONS.c.app == app) & SESSIONS.c.state.is_not(None)
        self._save = update(SESSIONS).where(live_sid).values(state=bindparam("blob"), seen=bindparam("now"))
        self._wconn = self.engine.connect()
        self._shared = isinstance(self.engine.pool, StaticPool)

    # ------------------------------------------------------------------ locks and cache
    def lock(self, sid: str) -> threading.Lock:
        """The lock that serialises requests on ``sid`` (always the same one for an id)."""
        return self._stripes[zlib.crc32(sid.encode()) % _STRIPES]

    def _cache_put(self, sid: str, entry: _Entry) -> None:
        if not self._cache_size:
            return
        with self._guard:
            self._cache[sid] = entry
            self._cache.move_to_end(sid)
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)

    def _uncache(self, sids: list[str]) -> None:
        with self._guard:
            for sid in sids:
                self._cache.pop(sid, None)

    def forget(self, sid: str) -> None:
        """Drop ``sid`` from the memory cache: the next load reads the last committed state
        (used after a request failed half-way through changing it)."""
        self._uncache([sid])

    # ------------------------------------------------------------------ connections
    @contextmanager
    def _writing(self) -> Iterator[Any]:
        """The write connection, one writer at a time; committed at the end."""
        with self._write:
            conn = self._wconn
            try:
                yield conn
                conn.commit()
            except BaseException:
                conn.rollback()
                raise

    @contextmanager
    def _reading(self) -> Iterator[Any]:
        """A connection to read with. An in-memory database is one connection, shared
        with the writer, so reading it takes the writer's turn."""
        if self._shared:
            with self._write:
                try:
                    yield self._wconn
                finally:
                    self._wconn.rollback()
        else:
            with self.engine.connect() as conn:
                yield conn

    # ------------------------------------------------------------------ rows
    def _where(self, sid: str) -> Any:
        return (SESSIONS.c.id == sid) & (SESSIONS.c.app == self.app)

    def _live(self, sid: str) -> Any:
        return self._where(sid) & SESSIONS.c.state.is_not(None)

    def create(self, state: dict, *, established: bool = False) -> str:
        """Store ``state`` as a new session and return its id (unguessable, 32 characters).
        Makes room first: the oldest session of the same budget goes (new sessions only
        ever push out new sessions)."""
        sid = secrets.token_urlsafe(24)
        now = self.clock()
        blob = orjson.dumps(state)
        with self._writing() as conn:
            self._sweep(conn, now)
            self._make_room(conn, established)
            conn.execute(SESSIONS.insert().values(
                id=sid, app=self.app, spec_hash=self.spec_hash, world_hash=self.world_hash, state=blob,
                established=established, created=now, seen=now, gone=None))
        self._cache_put(sid, _Entry(state, now, established))
        return sid

    def _make_room(self, conn: Any, established: bool) -> None:
        """Evict the least recently seen sessions of one budget until one more fits."""
        cap = self.max_sessions if established else self.max_new
        live = ((SESSIONS.c.app == self.app) & (SESSIONS.c.established == established)
                & SESSIONS.c.state.is_not(None))
        n = conn.execute(select(func.count()).select_from(SESSIONS).where(live)).scalar_one()
        over = n + 1 - cap
        if over <= 0:
            return
        victims = [r[0] for r in conn.execute(
            select(SESSIONS.c.id).where(live).order_by(SESSIONS.c.seen, SESSIONS.c.id).limit(over))]
        if established:
            conn.execute(update(SESSIONS).where(SESSIONS.c.id.in_(victims)).values(state=None, gone="evicted"))
        else:
            # A new session's cookie never came back: no tombstone (a crawler flood would
            # otherwise fill the table with them); a late return is 'unknown'.
            conn.execute(delete(SESSIONS).where(SESSIONS.c.id.in_(victims)))
        self._uncache(victims)

    def _sweep(self, conn: Any, now: float) -> None:
        """Expire idle sessions and purge old tombstones (at most once a minute)."""
        if now - self._last_sweep < 60:
            return
        self._last_sweep = now
        idle = ((SESSIONS.c.app == self.app) & SESSIONS.c.state.is_not(None)
                & (SESSIONS.c.seen < now - self.idle_lifetime))
        expired = [r[0] for r in conn.execute(select(SESSIONS.c.id).where(idle))]
        if expired:
            conn.execute(update(SESSIONS).where(SESSIONS.c.id.in_(expired)).values(state=None, gone="expired"))
            self._uncache(expired)
        conn.execute(delete(SESSIONS).where((SESSIONS.c.app == self.app) & SESSIONS.c.state.is_(None)
                                            & (SESSIONS.c.seen < now - 2 * self.idle_lifetime)))

    def _expire(self, sid: str) -> None:
        with self._writing() as conn:
            conn.execute(update(SESSIONS).where(self._live(sid)).values(state=None, gone="expired"))
        self.forget(sid)

    def load(self, sid: str | None) -> Lookup:
        """The state of session ``sid`` (hold :meth:`lock` while using it), or why there is
        none: 'unknown' (never existed here), 'expired', 'evicted', 'closed', 'incompatible'
        (made by another spec or world, or a row that cannot be read back as a state)."""
        if not sid or len(sid) > 64:
            return Lookup(None, "unknown")
        now = self.clock()
        with self._guard:
            entry = self._cache.get(sid)
            if entry is not None:
                self._cache.move_to_end(sid)
        if entry is not None:
            if now - entry.seen > self.idle_lifetime:
                self._expire(sid)
                return Lookup(None, "expired")
            return Lookup(entry.state, "live", entry.established)
        with self._reading() as conn:
            row = conn.execute(select(SESSIONS.c.spec_hash, SESSIONS.c.world_hash, SESSIONS.c.established,
                                      SESSIONS.c.seen, SESSIONS.c.gone, SESSIONS.c.state)
                               .where(self._where(sid))).first()
        if row is None:
            return Lookup(None, "unknown")
        if row.state is None:
            return Lookup(None, row.gone or "expired")
        if row.spec_hash != self.spec_hash or row.world_hash != self.world_hash:
            return Lookup(None, "incompatible")
        if now - row.seen > self.idle_lifetime:
            self._expire(sid)
            return Lookup(None, "expired")
        try:
            state = orjson.loads(row.state)
            if not isinstance(state, dict):
                raise ValueError("not an object")
            if self.check is not None:
                self.check(state)
        except Exception:   # a row damaged or edited by hand: unusable here, as another spec's is
            return Lookup(None, "incompatible")
        self._cache_put(sid, _Entry(state, row.seen, bool(row.established)))
        return Lookup(state, "live", bool(row.established))

    def save(self, sid: str, state: dict, *, blob: bytes | None = None, establish: bool = False) -> bool:
        """Write ``state`` as session ``sid``'s (``blob``: its JSON when already encoded).
        False when the session no longer exists (evicted or expired meanwhile): it is not
        brought back. ``establish`` moves a new session into the established budget."""
        now = self.clock()
        data = blob if blob is not None else orjson.dumps(state)
        try:
            with self._writing() as conn:
                if establish:
                    self._make_room(conn, True)
                    conn.execute(update(SESSIONS).where(self._live(sid)).values(established=True))
                done = conn.execute(self._save, {"sid": sid, "blob": data, "now": now}).rowcount == 1
        except BaseException:
            # Not written (disk full, a locked file): the cached copy, which the request may
            # have changed in place, goes too; the next load reads the last committed state.
            self.forget(sid)
            raise
        if done:
            with self._guard:
                old = self._cache.get(sid)
            self._cache_put(sid, _Entry(state, now, establish or (old.established if old else False)))
        else:
            self.forget(sid)
        return done

    def touch(self, sid: str, *, establish: bool = False) -> None:
        """Mark ``sid`` as seen now (a request that read but did not change its state)."""
        now = self.clock()
        values: dict[str, Any] = {"seen": now}
        with self._writing() as conn:
            if establish:
                self._make_room(conn, True)
                values["established"] = True
            done = conn.execute(update(SESSIONS).where(self._live(sid)).values(**values)).rowcount == 1
        with self._guard:
            entry = self._cache.get(sid)
            if entry is not None and done:
                entry.seen = now
                entry.established = entry.established or establish
        if not done:
            self.forget(sid)

    def close_session(self, sid: str) -> None:
        """End ``sid`` (its cookie will be told 'closed')."""
        with self._writing() as conn:
            conn.execute(update(SESSIONS).where(self._where(sid)).values(state=None, gone="closed"))
        self.forget(sid)

    def count(self, *, established: bool | None = None) -> int:
        """Live sessions (of one budget, or all)."""
        cond = (SESSIONS.c.app == self.app) & SESSIONS.c.state.is_not(None)
        if established is not None:
            cond = cond & (SESSIONS.c.established == established)
        with self._reading() as conn:
            return conn.execute(select(func.count()).select_from(SESSIONS).where(cond)).scalar_one()

    def dispose(self) -> None:
        """Close the database connections."""
        with self._write:
            self._wconn.close()
        self.engine.dispose()
        if self._hold is not None:
            self._hold.release()
