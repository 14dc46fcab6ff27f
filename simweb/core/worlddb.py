"""App-independent machinery for simweb's read-only *world databases*.

Every simulated app (shop, forum, issue tracker, ...) ships a generator that
turns ``(seed, size)`` into a SQLite file of read-only world data.  This module
holds the parts those generators share:

* the day-number convention (:data:`DAY0`, :func:`day_to_date`);
* :class:`Rng`, a tiny SplitMix64 PRNG whose output never depends on the
  Python version, ``PYTHONHASHSEED`` or anything global;
* :class:`ContentHasher`, a sha256 over generated rows that is identical across
  processes and machines;
* :func:`cache_dir` / :func:`world_file` / :func:`build_once`: where world files
  live and how they are built exactly once, atomically, under a file lock, even
  when many rollout processes ask for the same world at the same time;
* :class:`ReadOnlyDB`: a read-only SQLAlchemy engine plus one raw SQLite
  connection per thread (and per process, so forking after opening is safe);
* :class:`BuildProgress`: an optional rich progress bar for long builds.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import fcntl
import hashlib
import itertools
import json
import os
import re
import sqlite3
import sys
import tempfile
import threading
import weakref
from collections.abc import Callable, Iterator, MutableSequence, Sequence
from pathlib import Path
from typing import Any, ClassVar, TypeVar
from urllib.parse import quote

from sqlalchemy import Engine, create_engine
from sqlalchemy.pool import NullPool

__all__ = [
    "DAY0",
    "day_to_date",
    "date_to_day",
    "M64",
    "mix64",
    "stable_hash64",
    "Rng",
    "seeded_password",
    "ContentHasher",
    "cache_dir",
    "world_file",
    "build_once",
    "ReadOnlyDB",
    "BuildProgress",
]

T = TypeVar("T")

# ---------------------------------------------------------------------------
# Days
# ---------------------------------------------------------------------------

#: Day 0 of every simweb world.  Worlds store dates as integer day numbers
#: relative to this date (negative = before it); the simulator's clock uses the
#: same convention, so a world's history lies at days < 0 and a simulated
#: session starts on day 0 (or later).  Integers keep rows hashable and free of
#: time zones.
DAY0: _dt.date = _dt.date(2026, 1, 1)


def day_to_date(day: int) -> _dt.date:
    """Return the calendar date of day number ``day`` (day 0 = :data:`DAY0`)."""
    return DAY0 + _dt.timedelta(days=int(day))


def date_to_day(date: _dt.date) -> int:
    """Return the day number of ``date`` (inverse of :func:`day_to_date`)."""
    return (date - DAY0).days


# ---------------------------------------------------------------------------
# Deterministic randomness
# ---------------------------------------------------------------------------

M64 = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15


def mix64(x: int) -> int:
    """SplitMix64's finalizer: a bijective 64-bit integer mix."""
    x &= M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & M64
    return x ^ (x >> 31)


def stable_hash64(*parts: object) -> int:
    """A 64-bit hash of ``parts`` (by their ``str``) that is the same in every process.

    Python's ``hash()`` is salted per process for strings, so it must never feed
    a generator; blake2b is fixed by its spec.
    """
    text = "\x1f".join(str(p) for p in parts).encode("utf-8")
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "little")


#: The alphabet of seeded passwords (no look-alikes: 0/O, 1/l/I).
_PASSWORD_ALPHABET = "abcdefghjkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"


def _world_secret(app: str, seed: int) -> bytes:
    """The secret a world generator keeps for world (``app``, ``seed``): a key derived under
    a label no page, world row or task parameter carries. It never leaves the generator;
    only the passwords keyed by it are stored (in the users table, which no page shows)."""
    return hashlib.blake2b(f"simweb world secret\x1f{app}\x1f{seed}".encode(), digest_size=32,
                           person=b"simweb-accounts").digest()


def seeded_password(app: str, seed: int, uid: int) -> str:
    """The password of seeded account ``uid`` in world (``app``, ``seed``): a keyed hash
    (HMAC-SHA256) of the user id under the world's secret, written as three groups of four
    letters and digits (``kT7q-M2xf-9LpR``). Nothing a page shows (user name, id, email,
    join date) gives it away, so no agent can sign in as another member; a task's own user
    starts signed in, and a goal that needs the password states it."""
    import hmac

    digest = hmac.new(_world_secret(app, seed), f"user\x1f{uid}".encode(), hashlib.sha256).digest()
    chars = [_PASSWORD_ALPHABET[b % len(_PASSWORD_ALPHABET)] for b in digest[:12]]
    return "-".join("".join(chars[i:i + 4]) for i in (0, 4, 8))


class Rng:
    """SplitMix64 pseudo-random generator on plain Python ints.

    Small and fully specified, so its streams are stable across Python versions
    (unlike :mod:`random`, whose algorithms for ``choice``/``shuffle``/``sample``
    are not part of any compatibility promise).  Use :meth:`derive` for a
    stream keyed by labels and :meth:`sub` for cheap per-entity streams, so one
    entity's data does not shift when another's generation changes.
    """

    __slots__ = ("_s",)

    def __init__(self, seed: int) -> None:
        self._s = seed & M64

    @classmethod
    def derive(cls, *key: object) -> Rng:
        """A generator seeded from ``key`` (e.g. ``("shopping", seed, "products")``)."""
        return cls(stable_hash64(*key))

    @classmethod
    def sub(cls, base: int, index: int) -> Rng:
        """A generator for entity ``index`` of a stream whose base seed is ``base``."""
        return cls(mix64((base + (index + 1) * _GOLDEN) & M64))

    def next64(self) -> int:
        """The next raw 64-bit output."""
        self._s = s = (self._s + _GOLDEN) & M64
        s = ((s ^ (s >> 30)) * 0xBF58476D1CE4E5B9) & M64
        s = ((s ^ (s >> 27)) * 0x94D049BB133111EB) & M64
        return s ^ (s >> 31)

    def below(self, n: int) -> int:
        """A uniform-ish int in ``[0, n)`` (multiply-shift; bias < n / 2**64)."""
        if n <= 0:
            raise ValueError("below() needs n >= 1")
        # next64() inlined: this is the generators' innermost call.
        self._s = s = (self._s + _GOLDEN) & M64
        s = ((s ^ (s >> 30)) * 0xBF58476D1CE4E5B9) & M64
        s = ((s ^ (s >> 27)) * 0x94D049BB133111EB) & M64
        return ((s ^ (s >> 31)) * n) >> 64

    def randint(self, lo: int, hi: int) -> int:
        """An int in ``[lo, hi]`` (both inclusive)."""
        return lo + self.below(hi - lo + 1)

    def random(self) -> float:
        """A float in ``[0, 1)`` with 53 random bits."""
        return (self.next64() >> 11) * (1.0 / 9007199254740992.0)

    def chance(self, p: float) -> bool:
        """True with probability ``p``."""
        return self.random() < p

    def choice(self, seq: Sequence[T]) -> T:
        """A uniformly chosen element of a non-empty sequence."""
        n = len(seq)
        if n <= 0:
            raise IndexError("choice() from an empty sequence")
        self._s = s = (self._s + _GOLDEN) & M64
        s = ((s ^ (s >> 30)) * 0xBF58476D1CE4E5B9) & M64
        s = ((s ^ (s >> 27)) * 0x94D049BB133111EB) & M64
        return seq[((s ^ (s >> 31)) * n) >> 64]

    def weighted_index(self, cum_weights: Sequence[int]) -> int:
        """Index drawn with integer cumulative weights ``cum_weights``.

        Integer weights keep the draw exact (no float rounding differences).
        """
        x = self.below(cum_weights[-1])
        lo, hi = 0, len(cum_weights) - 1
        while lo < hi:  # first index whose cumulative weight exceeds x
            mid = (lo + hi) // 2
            if cum_weights[mid] > x:
                hi = mid
            else:
                lo = mid + 1
        return lo

    def shuffle(self, items: MutableSequence[Any]) -> None:
        """Fisher-Yates shuffle in place."""
        for i in range(len(items) - 1, 0, -1):
            j = self.below(i + 1)
            items[i], items[j] = items[j], items[i]

    def sample(self, seq: Sequence[T], k: int) -> list[T]:
        """``min(k, len(seq))`` distinct elements in draw order (partial Fisher-Yates)."""
        pool = list(seq)
        k = max(0, min(k, len(pool)))
        for i in range(k):
            j = i + self.below(len(pool) - i)
            pool[i], pool[j] = pool[j], pool[i]
        return pool[:k]

    def sample_indices(self, n: int, k: int) -> list[int]:
        """``min(k, n)`` distinct indices of ``range(n)`` in draw order.

        Robert Floyd's algorithm: O(k) memory, so sampling from a million ids
        does not build a million-element list.
        """
        k = max(0, min(k, n))
        chosen: dict[int, None] = {}  # insertion-ordered, no hash-order iteration
        for j in range(n - k, n):
            t = self.below(j + 1)
            chosen[j if t in chosen else t] = None
        out = list(chosen)
        self.shuffle(out)  # Floyd's output order is biased; shuffle makes it uniform
        return out


# ---------------------------------------------------------------------------
# Content hash
# ---------------------------------------------------------------------------


class ContentHasher:
    """sha256 over generated rows, grouped per table, in generation order.

    Each row is JSON-encoded (lists, ints, strings, floats via ``repr``, None);
    the hash of a table equals the hash of the JSON rows joined by commas, no
    matter how the generator batched them.  Table digests are combined in the
    order the tables were first fed, together with a caller-supplied header
    (app, generator version, ...), into :meth:`hexdigest`.
    """

    def __init__(self, header: str) -> None:
        self._header = header
        self._tables: dict[str, Any] = {}  # insertion order = first-fed order
        self._counts: dict[str, int] = {}

    def add_rows(self, table: str, rows: Sequence[Sequence[Any]]) -> None:
        """Feed a batch of rows of ``table`` (row values must be JSON scalars)."""
        if not rows:
            return
        h = self._tables.get(table)
        if h is None:
            h = self._tables[table] = hashlib.sha256()
            self._counts[table] = 0
        elif self._counts[table]:
            h.update(b",")
        # One C-level dumps per batch is far faster than one per row; stripping
        # the outer brackets keeps the digest independent of batch boundaries.
        text = json.dumps(rows, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        h.update(text[1:-1].encode("utf-8"))
        self._counts[table] += len(rows)

    def counts(self) -> dict[str, int]:
        """Rows fed per table so far."""
        return dict(self._counts)

    def hexdigest(self) -> str:
        """The combined sha256 hex digest."""
        top = hashlib.sha256(self._header.encode("utf-8"))
        for name, h in self._tables.items():
            top.update(f"\n{name}:{self._counts[name]}:{h.hexdigest()}".encode())
        return top.hexdigest()


# ---------------------------------------------------------------------------
# Cache files and the build-once protocol
# ---------------------------------------------------------------------------


def cache_dir() -> Path:
    """Directory holding world files: ``$SIMWEB_CACHE`` or ``~/.cache/simweb/worlds``."""
    env = os.environ.get("SIMWEB_CACHE")
    path = Path(env).expanduser() if env else Path.home() / ".cache" / "simweb" / "worlds"
    path.mkdir(parents=True, exist_ok=True)
    return path


def world_file(app: str, version: int, seed: int, size: int, directory: Path | None = None) -> Path:
    """Path of the world file for ``app`` at generator ``version``, ``seed`` and ``size``."""
    d = cache_dir() if directory is None else directory
    return d / f"{app}-v{version}-seed{seed}-n{size}.sqlite"


def build_once(
    path: Path,
    build: Callable[[Path], object],
    *,
    on_wait: Callable[[], None] | None = None,
    is_valid: Callable[[Path], bool] | None = None,
) -> bool:
    """Make sure ``path`` exists, building it with ``build(tmp_path)`` if needed.

    Safe under concurrency: builders serialize on an ``fcntl`` lock file next to
    ``path``; the first one builds into a temporary file in the same directory
    and ``os.replace``-s it into place (atomic on POSIX), the others block on the
    lock and then find the file.  Readers never see a half-written file.  Returns
    True if this call did the build.  ``on_wait`` is called once if another
    process holds the lock (e.g. to print "waiting for ...").  ``is_valid``
    lets an existing file be judged stale (e.g. an older schema); a stale file
    is rebuilt and replaced (processes that have it open keep reading the old
    inode).
    """

    def usable() -> bool:
        return path.exists() and (is_valid is None or is_valid(path))

    if usable():
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    lock_path = path.with_name(path.name + ".lock")
    with open(lock_path, "a+b") as lock:
        try:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if on_wait is not None:
                on_wait()
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        try:
            if usable():  # someone built it while we waited
                return False
            # Whoever left temp files behind is dead: live builders hold the lock.
            for stale in path.parent.glob(f".{path.name}.*.tmp*"):
                with contextlib.suppress(OSError):
                    stale.unlink()
            fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
            os.close(fd)
            tmp = Path(tmp_name)
            try:
                build(tmp)
                with open(tmp, "rb") as f:
                    os.fsync(f.fileno())
                os.chmod(tmp, 0o444)  # world files are read-only by contract
                os.replace(tmp, path)
            except BaseException:
                with contextlib.suppress(OSError):
                    tmp.unlink()
                raise
            with contextlib.suppress(OSError):  # make the rename itself durable
                dfd = os.open(path.parent, os.O_RDONLY)
                try:
                    os.fsync(dfd)
                finally:
                    os.close(dfd)
            return True
        finally:
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)


# ---------------------------------------------------------------------------
# Read-only access
# ---------------------------------------------------------------------------


#: This process's id, kept current across os.fork() by the hook below: a connection made
#: before a fork must not be used after it, and conn() is on every query's path, where a
#: getpid() system call per query costs about as much as the query's own Python overhead.
_pid = os.getpid()


def _after_fork_in_child() -> None:
    global _pid
    _pid = os.getpid()
    # A fork taken while another thread held a cache's lock would leave it held for ever
    # in the child (only the forking thread survives): every query cache gets a new one.
    for cache in list(_QUERY_CACHES):
        cache._lock = threading.Lock()


#: Every QueryCache of this process (weakly), for the fork hook above.
_QUERY_CACHES: weakref.WeakSet[QueryCache] = weakref.WeakSet()


os.register_at_fork(after_in_child=_after_fork_in_child)


class _Slot:
    """One thread's connection; closed when the thread's locals are dropped."""

    __slots__ = ("conn", "pid", "cached")

    def __init__(self, pid: int, conn: sqlite3.Connection) -> None:
        self.pid = pid
        self.conn = conn
        self.cached: CachedConnection | None = None

    def __del__(self) -> None:
        if self.pid == _pid:  # never touch a connection inherited over fork
            with contextlib.suppress(Exception):
                self.conn.close()


class _Rows:
    """The rows of one query, read like a ``sqlite3.Cursor`` (fetchone, fetchmany,
    fetchall, iteration): a cached result, or the first rows of a large one followed by
    the live cursor (``rest``)."""

    __slots__ = ("_rows", "_pos", "_rest")

    def __init__(self, rows: list, rest: sqlite3.Cursor | None = None) -> None:
        self._rows = rows
        self._pos = 0
        self._rest = rest

    def fetchone(self) -> Any:
        pos = self._pos
        if pos < len(self._rows):
            self._pos = pos + 1
            return self._rows[pos]
        return self._rest.fetchone() if self._rest is not None else None

    def fetchmany(self, size: int = 1) -> list:
        out = self._rows[self._pos:self._pos + size]
        self._pos += len(out)
        if len(out) < size and self._rest is not None:
            out += self._rest.fetchmany(size - len(out))
        return out

    def fetchall(self) -> list:
        out = self._rows[self._pos:]
        self._pos = len(self._rows)
        if self._rest is not None:
            out += self._rest.fetchall()
        return out

    def __iter__(self) -> Iterator[Any]:
        # The remaining rows at C speed (callers iterate, or fetch, not both).
        rows = self._rows if self._pos == 0 else self._rows[self._pos:]
        self._pos = len(self._rows)
        if self._rest is None:
            return iter(rows)
        rest, self._rest = self._rest, None
        return itertools.chain(rows, rest)


class QueryCache:
    """Results of read-only queries by (SQL, parameters and their types), least recently
    used first out.

    A world file never changes once built, so the same query always returns the same rows;
    pages and task samplers repeat many (a user by id, a project's members, a count), and
    a step's page runs ten of them. Rows are tuples (immutable); a result over
    ``max_rows`` rows is not kept, and the whole cache holds at most ``budget`` rows.
    Thread-safe; shared by the threads of one process (a forked child inherits it, which
    is sound for the same reason)."""

    def __init__(self, max_rows: int = 512, budget: int = 50_000) -> None:
        from collections import OrderedDict

        self.max_rows = max_rows
        self.budget = budget
        self._data: OrderedDict[tuple, list] = OrderedDict()
        self._held = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        _QUERY_CACHES.add(self)

    def get(self, key: tuple) -> list | None:
        with self._lock:
            rows = self._data.get(key)
            if rows is not None:
                self._data.move_to_end(key)
                self.hits += 1
            else:
                self.misses += 1
            return rows

    def put(self, key: tuple, rows: list) -> None:
        with self._lock:
            if key in self._data:
                return
            self._data[key] = rows
            self._held += len(rows) + 1
            while self._held > self.budget and self._data:
                _, old = self._data.popitem(last=False)
                self._held -= len(old) + 1

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
            self._held = 0


class CachedConnection:
    """A read-only ``sqlite3`` connection whose ``execute`` of a SELECT answers from a
    :class:`QueryCache` when it can. Anything else (other statements, other methods,
    parameters that cannot be a key) goes to the connection itself, errors included."""

    __slots__ = ("raw", "_cache")

    def __init__(self, raw: sqlite3.Connection, cache: QueryCache) -> None:
        self.raw = raw
        self._cache = cache

    def execute(self, sql: str, params: Any = ()) -> Any:
        t = type(params)
        if t is tuple or t is list:
            # Types are part of the key: 1, 1.0 and True are equal in Python, not in SQL.
            key: tuple | None = (sql, tuple(params), tuple(map(type, params)))
            try:
                rows = self._cache.get(key)   # type: ignore[arg-type]
            except TypeError:   # an unhashable parameter: SQLite will say what it thinks of it
                key = rows = None
            if rows is not None:
                return _Rows(rows)
        else:
            key = None
        cur = self.raw.execute(sql, params)
        if key is None or not sql.lstrip()[:6].upper() == "SELECT":
            return cur
        cache = self._cache
        rows = cur.fetchmany(cache.max_rows + 1)
        if len(rows) > cache.max_rows:
            return _Rows(rows, cur)
        cache.put(key, rows)
        return _Rows(rows)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.raw, name)


class ReadOnlyDB:
    """Read-only access to an immutable SQLite world file.

    Connections use a ``file:...?mode=ro`` URI (``immutable=1`` too: world
    files never change after the atomic rename, and it lets SQLite skip file
    locking).  :attr:`engine` is a SQLAlchemy engine on it for ORM use; hot
    paths use :meth:`conn`, a raw ``sqlite3`` connection per thread made by the
    same factory, which avoids both a global lock and SQLAlchemy's
    per-statement overhead.  A connection is never shared across ``fork``: a
    child process opens its own on first use.
    """

    def __init__(self, path: Path | str, pragmas: Sequence[str] = ()) -> None:
        self.path = str(Path(path).resolve())
        self._pragmas = tuple(pragmas)
        # Percent-encode the path: '?', '#' or '%' in a directory name would
        # otherwise be parsed as part of the URI.
        self.uri = f"file:{quote(self.path)}?mode=ro&immutable=1"
        # NullPool: ORM sessions are occasional; pooling would only add state.
        self.engine: Engine = create_engine("sqlite+pysqlite://", creator=self._connect,
                                            poolclass=NullPool)
        self._local = threading.local()
        #: SELECT results of :meth:`conn` (the file is immutable: see :class:`QueryCache`)
        self.cache = QueryCache()

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.uri, uri=True, check_same_thread=False)
        for pragma in self._pragmas:
            conn.execute(pragma)
        return conn

    def conn(self) -> sqlite3.Connection:
        """This thread's read-only ``sqlite3`` connection, its SELECTs answered from
        :attr:`cache` when repeated (a :class:`CachedConnection`, typed as the
        connection it wraps)."""
        slot: _Slot | None = getattr(self._local, "slot", None)
        if slot is None or slot.pid != _pid:
            slot = _Slot(_pid, self._connect())
            slot.cached = CachedConnection(slot.conn, self.cache)
            self._local.slot = slot
        return slot.cached   # type: ignore[return-value]

    def close(self) -> None:
        """Close this thread's connection and dispose of the engine."""
        slot = getattr(self._local, "slot", None)
        if slot is not None:
            self._local.slot = None
            del slot
        self.engine.dispose()


# ---------------------------------------------------------------------------
# Progress
# ---------------------------------------------------------------------------


class BuildProgress:
    """A rich progress bar on stderr for world builds, or a no-op.

    Enabled when ``enabled`` is true; with ``tty_only`` it additionally requires
    stderr to be a terminal (so logs of batch jobs stay clean).
    """

    def __init__(self, enabled: bool, *, title: str = "", tty_only: bool = False) -> None:
        self.enabled = bool(enabled) and (not tty_only or sys.stderr.isatty())
        self._title = title
        self._progress: Any = None
        self._task: Any = None

    def __enter__(self) -> BuildProgress:
        if self.enabled:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )

            self._progress = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=Console(stderr=True),
                transient=False,
            )
            self._progress.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.__exit__(*exc)
            self._progress = None

    def stage(self, description: str, total: int | None = None) -> None:
        """Start a new stage (closing the previous one)."""
        if self._progress is None:
            return
        if self._task is not None:
            t = self._progress.tasks[-1]
            if t.total is not None:
                self._progress.update(self._task, completed=t.total)
            else:
                self._progress.update(self._task, total=1, completed=1)
        label = f"{self._title} {description}".strip()
        self._task = self._progress.add_task(label, total=total)

    def advance(self, n: int = 1) -> None:
        """Advance the current stage by ``n``."""
        if self._progress is not None and self._task is not None:
            self._progress.advance(self._task, n)

    def log(self, message: str) -> None:
        """Print a line above the bar (no-op when disabled)."""
        if self._progress is not None:
            self._progress.console.print(message)



# ---------------------------------------------------------------------------------------
# Cached world files: layout fingerprint, staleness check, open once per process
# ---------------------------------------------------------------------------------------

def schema_fingerprint(generator_version: int, metadata: Any, *extra_ddl: str) -> str:
    """A short digest of a world file's storage layout: the generator version, any extra
    DDL (FTS virtual tables, ranking functions) and every table and index of the
    SQLAlchemy ``metadata`` as SQLite DDL.

    A world stores it in its ``meta`` table and :func:`open_world` checks it, so a cached
    file written with an older layout is rebuilt instead of failing at query time.
    (Changes to generated *content* must bump the generator version.)
    """
    from sqlalchemy.dialects import sqlite as sqlite_dialect
    from sqlalchemy.schema import CreateIndex, CreateTable

    dialect = sqlite_dialect.dialect()
    parts = [f"v{generator_version}", *extra_ddl]
    for table in metadata.sorted_tables:
        parts.append(str(CreateTable(table).compile(dialect=dialect)).strip())
        parts += sorted(str(CreateIndex(ix).compile(dialect=dialect)) for ix in table.indexes)
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def has_fingerprint(path: Path, fingerprint: str) -> bool:
    """True if ``path`` is a complete world file whose ``meta`` schema is ``fingerprint``."""
    try:
        con = sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True)
        try:
            row = con.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        finally:
            con.close()
    except sqlite3.Error:
        return False
    return row is not None and row[0] == fingerprint


class LRU:
    """A small thread-safe least-recently-used map, for caching immutable world rows.
    (``None`` values are not cached: a miss and a cached ``None`` look the same.)

    A read takes no lock (it is on every page's path, and the lock cost four times the
    lookup): each OrderedDict call is atomic under the GIL, and the one race, another
    thread evicting the key between the lookup and the move, leaves nothing to move."""

    def __init__(self, maxsize: int) -> None:
        from collections import OrderedDict

        self._data: OrderedDict[Any, Any] = OrderedDict()
        self._max = maxsize
        self._lock = threading.Lock()

    def get(self, key: Any) -> Any:
        value = self._data.get(key)
        if value is not None:
            try:
                self._data.move_to_end(key)
            except KeyError:
                pass
        return value

    def put(self, key: Any, value: Any) -> None:
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            if len(self._data) > self._max:
                self._data.popitem(last=False)


_OPEN_WORLDS: dict[str, Any] = {}
_OPEN_LOCK = threading.Lock()


def open_world(cls: Any, app: str, version: int, seed: int, size: int, *, fingerprint: str,
               build: Callable[[Path, int, int, bool], str], progress: bool = False, min_size: int = 1) -> Any:
    """The world of ``app`` for ``(seed, size)``, as ``cls(path, built=...)``.

    The file is built into the cache if missing or stale (``build(tmp_path, seed, size,
    progress)``), once, whichever thread or process gets there first (the others wait,
    with a note on stderr when ``progress`` is on); then it is opened. Worlds are
    memoized per process and cache directory, so every env of a world shares one.
    """
    seed, size = int(seed), int(size)
    if size < min_size:
        raise ValueError(f"size must be >= {min_size}")
    path = world_file(app, version, seed, size)
    key = str(path)
    with _OPEN_LOCK:
        world = _OPEN_WORLDS.get(key)
        if world is not None and Path(world.path).exists():
            return world
        built = build_once(
            path, lambda tmp: build(tmp, seed, size, progress),
            is_valid=lambda p: has_fingerprint(p, fingerprint),
            on_wait=(lambda: print(f"waiting for another process to build {path.name} ...", file=sys.stderr))
            if progress else None,
        )
        world = _OPEN_WORLDS[key] = cls(path, built=built)
        return world


def forget_open_worlds() -> None:
    """Drop the per-process memo of open worlds (as if in a new process)."""
    with _OPEN_LOCK:
        _OPEN_WORLDS.clear()


#: A table or column name a world query may name (never user text).
_IDENT = re.compile(r"[a-z_][a-z0-9_]*")


class WorldFile:
    """What every app's read-only world shares: the cached file, its identity and ids.

    A subclass sets the class attributes and implements :meth:`build`; its own
    ``__init__`` calls ``super().__init__(path, built=built)`` and then reads what it keeps
    in memory. This class opens the file read-only, refuses one of another app or layout,
    and reads the seed, size, content hash and row counts from its ``meta`` table.
    """

    APP: ClassVar[str]
    GENERATOR_VERSION: ClassVar[int]
    SCHEMA_FINGERPRINT: ClassVar[str]
    DEFAULT_SIZE: ClassVar[int]
    MIN_SIZE: ClassVar[int] = 1
    #: how every connection to the file is set up: read-only; the file mapped into memory,
    #: so a page read is no system call and no copy into SQLite's own cache (the 10x worlds
    #: are larger than that cache: steps there read pages on every first visit); a modest
    #: page cache on top; temporary B-trees (a sort, a GROUP BY) in memory. A world may
    #: override it.
    READ_PRAGMAS: ClassVar[Sequence[str]] = ("PRAGMA query_only=ON", "PRAGMA mmap_size=8589934592",
                                              "PRAGMA cache_size=-32768", "PRAGMA temp_store=MEMORY")
    #: tables with integer ids: run-time rows get ids above :meth:`max_id`
    ID_TABLES: ClassVar[Sequence[str]] = ()

    #: True if this process generated the file (False: it was cached, or another process built it)
    built: bool

    def __init__(self, path: Path | str, *, built: bool = False) -> None:
        self._db = ReadOnlyDB(path, self.READ_PRAGMAS)
        self.path = self._db.path
        self.built = built
        conn = self._db.conn()
        meta = dict(conn.execute("SELECT key, value FROM meta"))
        if meta.get("app") != self.APP or meta.get("schema") != self.SCHEMA_FINGERPRINT:
            raise ValueError(f"{path} is not a {self.APP} world of generator v{self.GENERATOR_VERSION}"
                             f" (schema {self.SCHEMA_FINGERPRINT})")
        self.seed = int(meta["seed"])
        self.size = int(meta["size"])
        self.hash: str = meta["hash"]
        self.counts: dict[str, int] = json.loads(meta["counts"])
        self._max_ids = {t: int(conn.execute(f"SELECT coalesce(max(id), 0) FROM {t}").fetchone()[0])
                         for t in self.ID_TABLES}

    @classmethod
    def build(cls, path: Path, seed: int, size: int, progress: bool) -> str:
        """Generate the world into the new file ``path``; return its content hash."""
        raise NotImplementedError

    @classmethod
    def load(cls, seed: int = 0, size: int | None = None, *, progress: bool = False) -> Any:
        """The world for ``(seed, size)`` (default: the app's default size): built into the
        cache if missing, then opened. Memoized per process; concurrent callers, in threads
        or processes, build the file once. ``progress`` shows a bar while building."""
        return open_world(cls, cls.APP, cls.GENERATOR_VERSION, seed, cls.DEFAULT_SIZE if size is None else size,
                          fingerprint=cls.SCHEMA_FINGERPRINT, build=cls.build, progress=progress,
                          min_size=cls.MIN_SIZE)

    @property
    def engine(self) -> Engine:
        """A read-only SQLAlchemy engine on the world file (for ORM use)."""
        return self._db.engine

    def _conn(self) -> sqlite3.Connection:
        return self._db.conn()

    def column_value(self, table: str, column: str, rid: int) -> Any:
        """Column ``column`` of the row with id ``rid`` of world table ``table`` (None when
        the world has no such row: a row created at run time). ``table`` and ``column`` are
        identifiers the app declares (a site variant's slug source); anything else, or a
        table or column this world does not have, is a ValueError."""
        self._check_column(table, column)
        row = self._conn().execute(f"SELECT {column} FROM {table} WHERE id = ?", (rid,)).fetchone()
        return None if row is None else row[0]

    def column_values(self, table: str, column: str) -> dict[int, Any]:
        """Column ``column`` of every row of world table ``table``, by id: one query, once
        per world and column (the world is read-only: kept on the world; shared by every
        site variant whose slugs read it). ValueError as :meth:`column_value`."""
        kept: dict[tuple[str, str], dict[int, Any]] = self.__dict__.setdefault("_column_values", {})
        values = kept.get((table, column))
        if values is None:
            self._check_column(table, column)
            values = kept[(table, column)] = dict(self._conn().execute(f"SELECT id, {column} FROM {table}").fetchall())
        return values

    def _check_column(self, table: str, column: str) -> None:
        """ValueError unless ``table.column`` is an identifier pair this world has."""
        columns = self.__dict__.setdefault("_columns", {})
        known = columns.get(table)
        if known is None:
            if not _IDENT.fullmatch(table):
                raise ValueError(f"not a table name: {table!r}")
            known = columns[table] = frozenset(r[1] for r in self._conn().execute(f"PRAGMA table_info({table})"))
        if column not in known or not _IDENT.fullmatch(column):
            raise ValueError(f"the {self.APP} world has no column {table}.{column}")

    def max_id(self, table: str) -> int:
        """Largest id in ``table`` (new simulator rows get ids above it)."""
        if table not in self._max_ids:
            raise ValueError(f"unknown table {table!r}; expected one of {tuple(self.ID_TABLES)}")
        return self._max_ids[table]

    def close(self) -> None:
        self._db.close()

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(seed={self.seed}, size={self.size}, hash={self.hash[:12]}..., "
                f"path={self.path!r})")


class WorldBuilder:
    """The write side every world generator shares.

    It opens the new file for one fast exclusive build (no journal, no fsync: a failed
    build is thrown away whole), creates the tables of the SQLAlchemy ``metadata``, feeds
    every inserted row to a :class:`ContentHasher` (the world's identity), creates the
    indexes after the bulk load, and finally writes the ``meta`` table that
    :class:`WorldFile` reads. A subclass generates the rows between :meth:`begin` and
    :meth:`finish`.
    """

    def __init__(self, path: Path, app: str, version: int, seed: int, size: int, progress: BuildProgress,
                 metadata: Any) -> None:
        self.path = path
        self.app = app
        self.version = version
        self.seed = seed
        self.size = size
        self.p = progress
        self.metadata = metadata
        self.hasher = ContentHasher(f"simweb-world/{app}/v{version}/seed={seed}/size={size}")
        # A creator, not a URL: '?' or '#' in the cache path must not be parsed.
        self.engine = create_engine("sqlite+pysqlite://", poolclass=NullPool,
                                    creator=lambda: sqlite3.connect(str(path)))
        self.raw = self.engine.raw_connection()
        driver = self.raw.driver_connection
        if not isinstance(driver, sqlite3.Connection):  # the creator above makes one; typed Optional
            raise RuntimeError(f"no sqlite3 connection for {path}")
        self.db: sqlite3.Connection = driver
        self.db.isolation_level = None  # explicit BEGIN / COMMIT
        for pragma in ("PRAGMA journal_mode=OFF", "PRAGMA synchronous=OFF", "PRAGMA locking_mode=EXCLUSIVE",
                       "PRAGMA temp_store=MEMORY", "PRAGMA cache_size=-262144"):
            self.db.execute(pragma)

    def insert(self, table: str, rows: Sequence[Sequence[Any]], hashed: bool = True) -> None:
        """Insert ``rows`` (full tuples, in table column order); hashed rows make the
        world's content hash."""
        if not rows:
            return
        marks = ",".join("?" * len(rows[0]))
        self.db.executemany(f"INSERT INTO {table} VALUES ({marks})", rows)
        if hashed:
            self.hasher.add_rows(table, rows)

    def begin(self) -> None:
        """Open the build's transaction and create every table (no indexes yet)."""
        from sqlalchemy.schema import CreateTable

        self.db.execute("BEGIN")
        for table in self.metadata.sorted_tables:
            self.db.execute(str(CreateTable(table).compile(dialect=self.engine.dialect)))

    def create_indexes(self, advance: bool = False) -> None:
        """Create every index of the metadata (after the bulk load: much faster)."""
        from sqlalchemy.schema import CreateIndex

        for table in self.metadata.sorted_tables:
            for index in sorted(table.indexes, key=lambda ix: ix.name or ""):
                self.db.execute(str(CreateIndex(index).compile(dialect=self.engine.dialect)))
            if advance:
                self.p.advance()

    def finish(self, fingerprint: str, **extra_meta: str) -> str:
        """Write the meta table, gather planner statistics, commit and close; return the
        content hash."""
        digest = self.hasher.hexdigest()
        meta = {"app": self.app, "generator_version": str(self.version), "seed": str(self.seed),
                "size": str(self.size), "hash": digest,
                "counts": json.dumps(self.hasher.counts(), separators=(",", ":"), ensure_ascii=False),
                "day0": DAY0.isoformat(), "schema": fingerprint, **extra_meta}
        self.insert("meta", sorted(meta.items()), hashed=False)
        self.db.execute("PRAGMA analysis_limit=4000")
        self.db.execute("ANALYZE")  # the planner needs row counts to pick indexes well
        self.db.execute("COMMIT")
        self.raw.close()
        self.engine.dispose()
        return digest
