"""Simstay's read-only *world data*: guests (users), properties, room types with a year of
availability, discount codes and bookings.

A world is generated deterministically from ``(seed, size)`` into a SQLite file (see
:mod:`simweb.worlddb`) and shared, read-only, by every environment of the booking app.
``size`` is the number of properties; the other tables scale with it:

=================  =========================================================
users              ``300 + 2 * size``; loyalty tier member / silver / gold
properties         ``size`` hotels in ``min(40, max(12, size // 6))`` cities
room_types         2-5 per property: capacity, weekday and weekend rates,
                   minimum stay, rooms, and a year of availability (rooms
                   left per night, one character per day of 2026)
discount_codes     ``20 + size // 10``: percent or amount off, with conditions
                   (minimum nights, minimum total, arrival window, one hotel,
                   Gold members only)
bookings           ``8 * size`` bookings of the users: completed stays in the
                   past, confirmed and cancelled ones ahead
=================  =========================================================

Days are integer day numbers with day 0 = 2026-01-01; bookings are taken for nights of
days 0 to 364. A night's price is the room type's weekday or weekend rate (Friday and
Saturday nights) times the property's seasonal factor for the month.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson
from sqlalchemy import Index, Integer, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from simweb.core.world import MetaTable, RowCache, RowMap, json_column
from simweb.core.worlddb import (
    BuildProgress,
    Rng,
    WorldBuilder,
    WorldFile,
    day_to_date,
    schema_fingerprint,
    seeded_password,
)

APP = "booking"
#: Bump whenever generated content or schema changes.
GENERATOR_VERSION = 3

#: nights bookable: days 0 .. YEAR_DAYS - 1
YEAR_DAYS = 365
TIERS = ("member", "silver", "gold")
MAX_NIGHTS = 30
CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"


# ----------------------------------------------------------------------------- schema

class Base(DeclarativeBase):
    pass


class Meta(MetaTable, Base):
    pass


class User(Base):
    __tablename__ = "users"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    username: Mapped[str] = mapped_column(String, unique=True)
    email: Mapped[str] = mapped_column(String, unique=True)
    full_name: Mapped[str] = mapped_column(String)
    password: Mapped[str] = mapped_column(String)
    tier: Mapped[str] = mapped_column(String)
    points: Mapped[int] = mapped_column(Integer)
    created_day: Mapped[int] = mapped_column(Integer)


class Property(Base):
    __tablename__ = "properties"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String)
    city: Mapped[str] = mapped_column(String, index=True)
    country: Mapped[str] = mapped_column(String)
    stars: Mapped[int] = mapped_column(Integer)
    rating: Mapped[int] = mapped_column(Integer)          # tenths: 87 = 8.7
    address: Mapped[str] = mapped_column(String)
    description: Mapped[str] = mapped_column(Text)
    free_cancel_days: Mapped[int] = mapped_column(Integer)  # free to cancel or change until N days before
    cancel_fee_pct: Mapped[int] = mapped_column(Integer)    # of the total, after that
    season: Mapped[str] = json_column()                     # 12 monthly factors in percent


class RoomType(Base):
    __tablename__ = "room_types"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    property_id: Mapped[int] = mapped_column(Integer, index=True)
    name: Mapped[str] = mapped_column(String)
    capacity: Mapped[int] = mapped_column(Integer)
    base_cents: Mapped[int] = mapped_column(Integer)
    weekend_cents: Mapped[int] = mapped_column(Integer)
    min_nights: Mapped[int] = mapped_column(Integer)
    rooms: Mapped[int] = mapped_column(Integer)
    avail: Mapped[str] = mapped_column(Text)   # rooms left per night of the year, one digit a day


class DiscountCode(Base):
    __tablename__ = "discount_codes"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    code: Mapped[str] = mapped_column(String, unique=True)
    description: Mapped[str] = mapped_column(String)
    kind: Mapped[str] = mapped_column(String)           # percent | amount
    value: Mapped[int] = mapped_column(Integer)         # percent, or cents
    min_nights: Mapped[int] = mapped_column(Integer)
    min_total_cents: Mapped[int] = mapped_column(Integer)
    from_day: Mapped[int] = mapped_column(Integer)      # arrival window, inclusive
    to_day: Mapped[int] = mapped_column(Integer)
    property_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    tier: Mapped[str] = mapped_column(String)           # any | gold


class Booking(Base):
    __tablename__ = "bookings"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(Integer)
    property_id: Mapped[int] = mapped_column(Integer)
    room_type_id: Mapped[int] = mapped_column(Integer)
    checkin_day: Mapped[int] = mapped_column(Integer)
    nights: Mapped[int] = mapped_column(Integer)
    guests: Mapped[int] = mapped_column(Integer)
    guest_name: Mapped[str] = mapped_column(String)
    guest_email: Mapped[str] = mapped_column(String)
    total_cents: Mapped[int] = mapped_column(Integer)
    discount_code: Mapped[str | None] = mapped_column(String, nullable=True)
    points_earned: Mapped[int] = mapped_column(Integer)
    points_used: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String)          # confirmed | cancelled | completed
    code: Mapped[str] = mapped_column(String, unique=True)
    created_day: Mapped[int] = mapped_column(Integer)
    cancel_fee_cents: Mapped[int] = mapped_column(Integer)
    cancelled_day: Mapped[int | None] = mapped_column(Integer, nullable=True)
    __table_args__ = (Index("ix_bookings_user_checkin", "user_id", "checkin_day"),
                      Index("ix_bookings_status_checkin", "status", "checkin_day"),
                      Index("ix_bookings_room_checkin", "room_type_id", "checkin_day"))


_TABLES = ("users", "properties", "room_types", "discount_codes", "bookings")


# ----------------------------------------------------------------------------- content pools

_FIRST = ("Ada", "Alan", "Grace", "Linus", "Margaret", "Ken", "Dennis", "Barbara", "Edsger", "Donald",
          "Frances", "John", "Radia", "Tim", "Sophie", "Guido", "Anita", "Katherine", "Hedy", "Mary", "Jean",
          "Leslie", "Carol", "Erik", "Priya", "Omar", "Yuki", "Chen", "Lena", "Mateo", "Amara", "Kofi",
          "Ingrid", "Ravi", "Sara", "Tomas", "Nadia", "Felix", "Hana", "Ivan", "Jonas", "Keiko", "Lucia")
_LAST = ("Lovelace", "Turing", "Hopper", "Hamilton", "Thompson", "Ritchie", "Liskov", "Knuth", "Allen",
         "Perlman", "Wilson", "Borg", "Johnson", "Lamarr", "Keller", "Wirth", "Lamport", "Shaw", "Patel",
         "Haddad", "Tanaka", "Wei", "Novak", "Garcia", "Okafor", "Mensah", "Larsen", "Kumar", "Cohen", "Silva",
         "Petrova", "Weber", "Sato", "Ivanov", "Berg", "Mori", "Rossi", "Khan", "Dahl", "Lind", "Moreau")
_CITIES = (("Lisbon", "Portugal"), ("Porto", "Portugal"), ("Madrid", "Spain"), ("Barcelona", "Spain"),
           ("Seville", "Spain"), ("Paris", "France"), ("Lyon", "France"), ("Nice", "France"),
           ("Rome", "Italy"), ("Florence", "Italy"), ("Venice", "Italy"), ("Milan", "Italy"),
           ("Berlin", "Germany"), ("Munich", "Germany"), ("Hamburg", "Germany"), ("Vienna", "Austria"),
           ("Zurich", "Switzerland"), ("Amsterdam", "Netherlands"), ("Brussels", "Belgium"),
           ("Copenhagen", "Denmark"), ("Stockholm", "Sweden"), ("Oslo", "Norway"), ("Helsinki", "Finland"),
           ("Dublin", "Ireland"), ("London", "United Kingdom"), ("Edinburgh", "United Kingdom"),
           ("Prague", "Czechia"), ("Budapest", "Hungary"), ("Krakow", "Poland"), ("Warsaw", "Poland"),
           ("Athens", "Greece"), ("Istanbul", "Turkey"), ("Split", "Croatia"), ("Ljubljana", "Slovenia"),
           ("Tallinn", "Estonia"), ("Riga", "Latvia"), ("Vilnius", "Lithuania"), ("Reykjavik", "Iceland"),
           ("Valletta", "Malta"), ("Bruges", "Belgium"))
_PREFIX = ("Grand", "Royal", "Harbor", "Old Town", "Riverside", "Park", "Central", "Garden", "Sunset",
           "Azure", "Golden", "Silver", "Maple", "Cedar", "Ivy", "Lantern", "Compass", "Atlas", "Beacon",
           "Meridian", "Aurora", "Juniper", "Willow", "Orchid", "Granite", "Coral", "Velvet", "Summit")
_SUFFIX = ("Hotel", "Inn", "Suites", "Residence", "Lodge", "Boutique Hotel", "Palace", "House", "Hostel",
           "Apartments")
_STREETS = ("Main Street", "Harbor Road", "Market Square", "Station Avenue", "Church Lane", "River Walk",
            "Castle Hill", "Garden Row", "Bridge Street", "Park Lane")
_BLURBS = ("A short walk from the old town, with a rooftop terrace.",
           "Quiet rooms, a generous breakfast and friendly staff.",
           "Right next to the main station, ideal for a city break.",
           "A family-run place with a garden courtyard.",
           "Modern design, a small gym and fast Wi-Fi throughout.",
           "Views over the water from most rooms.",
           "Close to museums, restaurants and the evening market.",
           "A restored historic building with high ceilings.")
_ROOMS = (("Single Room", 1), ("Standard Double", 2), ("Twin Room", 2), ("Deluxe King", 2),
          ("Junior Suite", 3), ("Family Room", 4), ("Family Suite", 5), ("Penthouse Suite", 6))
_CODE_WORDS = ("SPRING", "SUMMER", "AUTUMN", "WINTER", "CITY", "STAY", "WEEKEND", "EARLY", "LONGSTAY",
               "ESCAPE", "GETAWAY", "FLASH", "WELCOME", "LOYAL", "GOLD", "EXTRA", "BREAK", "TRIP")


def n_users_for(size: int) -> int:
    return 300 + 2 * size


def n_cities_for(size: int) -> int:
    return min(len(_CITIES), max(12, size // 6))


#: Calendar facts of the days around the bookable year, looked up instead of computed:
#: prices are summed night by night on every search page.
_CAL_FIRST, _CAL_LAST = -400, 800
_WEEKEND = tuple(day_to_date(d).weekday() in (4, 5) for d in range(_CAL_FIRST, _CAL_LAST))
_MONTH = tuple(day_to_date(d).month - 1 for d in range(_CAL_FIRST, _CAL_LAST))


def is_weekend_night(day: int) -> bool:
    """Friday and Saturday nights (day 0, 2026-01-01, is a Thursday)."""
    if _CAL_FIRST <= day < _CAL_LAST:
        return _WEEKEND[day - _CAL_FIRST]
    return day_to_date(day).weekday() in (4, 5)


def night_cents(room: dict, season: Sequence[int], day: int) -> int:
    """The price of one night ``day`` of a room type: its weekday or weekend rate times the
    month's seasonal factor, rounded to whole dollars."""
    rate = room["weekend_cents"] if is_weekend_night(day) else room["base_cents"]
    month = _MONTH[day - _CAL_FIRST] if _CAL_FIRST <= day < _CAL_LAST else day_to_date(day).month - 1
    return (rate * season[month] // 100 + 50) // 100 * 100


def _jl(items: Any) -> str:
    return orjson.dumps(items).decode()


def make_code(r: Rng, length: int = 8) -> str:
    return "".join(CODE_ALPHABET[r.below(len(CODE_ALPHABET))] for _ in range(length))


# ----------------------------------------------------------------------------- builder

class _Builder(WorldBuilder):
    """Generates one world into an empty SQLite file, feeding every row to the hasher."""

    def __init__(self, path: Path, seed: int, size: int, progress: BuildProgress) -> None:
        super().__init__(path, APP, GENERATOR_VERSION, seed, size, progress, Base.metadata)

    def _rng(self, stream: str, index: int = 0) -> Rng:
        return Rng.sub(Rng.derive(APP, self.seed, stream).next64(), index)

    def run(self) -> str:
        self.begin()
        self.p.stage("users", 1)
        self._users()
        self.p.stage("properties", self.size)
        self._properties()
        self.p.stage("codes & bookings", 2)
        self._codes()
        self._bookings()
        self.create_indexes()
        return self.finish(SCHEMA_FINGERPRINT)

    def _users(self) -> None:
        n = n_users_for(self.size)
        rows, seen = [], set()
        for uid in range(1, n + 1):
            r = self._rng("users", uid)
            first, last = r.choice(_FIRST), r.choice(_LAST)
            base = f"{first}.{last}".lower()
            username = base if base not in seen else f"{base}{uid}"
            seen.add(username)
            tier = TIERS[r.weighted_index((55, 85, 100))]
            points = r.randint(0, 1500) + {"member": 0, "silver": 2000, "gold": 6000}[tier] + r.randint(0, 99)
            rows.append((uid, username, f"{username}@example.com", f"{first} {last}", seeded_password(APP, self.seed, uid), tier,
                         points, -r.randint(100, 2000)))
        self.n_users = n
        self.users = rows     # inserted after the bookings, whose points the balances include

    def _properties(self) -> None:
        cities = _CITIES[:n_cities_for(self.size)]
        prows, rrows = [], []
        self.rooms: list[tuple[int, int, int, int, list[int], int]] = []   # (rt id, pid, capacity, min, season)
        self.props: list[tuple] = []
        rid = 0
        names: set[str] = set()
        for pid in range(1, self.size + 1):
            r = self._rng("property", pid)
            city, country = cities[(pid - 1) % len(cities)] if pid <= len(cities) else r.choice(cities)
            for _ in range(50):
                name = f"{r.choice(_PREFIX)} {r.choice(_SUFFIX)} {city}"
                if name not in names:
                    break
            else:
                name = f"{r.choice(_PREFIX)} {r.choice(_SUFFIX)} {city} {pid}"
            names.add(name)
            stars = r.randint(2, 5)
            rating = r.randint(62, 97)
            free_days = r.choice((1, 2, 3, 5, 7, 14))
            fee = r.choice((20, 30, 50, 100))
            peak = r.randint(5, 7)
            season = [min(160, max(70, 100 + (30 - 12 * abs(m + 1 - peak)) + r.randint(-8, 8))) for m in range(12)]
            address = f"{r.randint(1, 180)} {r.choice(_STREETS)}, {city}"
            prows.append((pid, name, city, country, stars, rating, address, r.choice(_BLURBS), free_days, fee,
                          _jl(season)))
            self.props.append((pid, free_days, fee, season))
            kinds = sorted(r.sample_indices(len(_ROOMS), r.randint(2, 5)))
            for k in kinds:
                rid += 1
                rname, cap = _ROOMS[k]
                base = (4000 + 1500 * stars + 1800 * cap + r.randint(0, 40) * 100) // 100 * 100
                weekend = base + r.choice((0, 1000, 2000, 3000, 4000))
                min_nights = r.choice((1, 1, 1, 2, 2, 3))
                rooms = r.randint(1, 9)
                left = []
                busy = r.randint(20, 75)
                for d in range(YEAR_DAYS):
                    pct = busy + (25 if is_weekend_night(d) else 0) + (season[day_to_date(d).month - 1] - 100) // 2
                    taken = sum(1 for _ in range(rooms) if r.below(100) < pct)
                    left.append(rooms - taken)
                rrows.append((rid, pid, rname, cap, base, weekend, min_nights, rooms, "".join(map(str, left))))
                self.rooms.append((rid, pid, cap, min_nights, season, base))
            self.p.advance()
        self.insert("properties", prows)
        self.insert("room_types", rrows)
        self.room_rows = {row[0]: row for row in rrows}

    def _codes(self) -> None:
        n = 20 + self.size // 10
        r = self._rng("codes")
        rows, seen = [], set()
        for cid in range(1, n + 1):
            for _ in range(100):
                code = f"{r.choice(_CODE_WORDS)}{r.randint(5, 40)}"
                if code not in seen:
                    break
            seen.add(code)
            kind = "percent" if r.chance(0.6) else "amount"
            value = r.choice((5, 10, 15, 20, 25)) if kind == "percent" else r.choice((1000, 1500, 2000, 2500, 5000))
            min_nights = r.choice((1, 1, 2, 3, 4, 5))
            min_total = r.choice((0, 0, 10000, 20000, 30000))
            start = r.randint(0, 240)
            end = min(YEAR_DAYS - 1, start + r.randint(30, 200))
            prop = r.randint(1, self.size) if r.chance(0.25) else None
            tier = "gold" if r.chance(0.25) else "any"
            parts = [f"{value}% off" if kind == "percent" else f"${value // 100} off"]
            parts.append(f"stays of {min_nights}+ nights" if min_nights > 1 else "any stay")
            desc = " ".join(parts)
            rows.append((cid, code, desc, kind, value, min_nights, min_total, start, end, prop, tier))
        self.insert("discount_codes", rows)

    def _bookings(self) -> None:
        n = 8 * self.size
        rows = []
        codes: set[str] = set()
        props = {p[0]: p for p in self.props}
        for bid in range(1, n + 1):
            r = self._rng("booking", bid)
            uid = r.randint(1, self.n_users)
            rid, pid, cap, min_n, season, _ = r.choice(self.rooms)
            nights = max(min_n, r.randint(1, 6))
            checkin = r.randint(-330, YEAR_DAYS - 1 - nights)
            if checkin >= 0 and r.chance(0.3):
                checkin = r.randint(0, 20)         # many stays are coming up soon
            room = {"base_cents": self.room_rows[rid][4], "weekend_cents": self.room_rows[rid][5]}
            # Nights before day 0 are priced with the same calendar, shifted by a year.
            total = sum(night_cents(room, season, d % YEAR_DAYS) for d in range(checkin, checkin + nights))
            guests = r.randint(1, cap)
            u = self.users[uid - 1]
            if checkin + nights <= 0:
                status = "completed" if r.chance(0.9) else "cancelled"
            else:
                status = "confirmed" if r.chance(0.85) else "cancelled"
            created = min(-1, checkin - r.randint(3, 120))
            for _ in range(100):
                code = make_code(r)
                if code not in codes:
                    break
            codes.add(code)
            earned = total // 100 if status != "cancelled" else 0
            fee = 0
            cancelled = None
            if status == "cancelled":
                cancelled = min(-1, checkin - r.randint(1, 30))
                if checkin - cancelled < props[pid][1]:
                    fee = total * props[pid][2] // 100
            name = u[3] if r.chance(0.8) else f"{r.choice(_FIRST)} {u[3].split(' ')[-1]}"
            rows.append((bid, uid, pid, rid, checkin, nights, guests, name, u[2], total, None, earned, 0, status,
                         code, created, fee, cancelled))
        self.insert("bookings", rows)
        earned_by: dict[int, int] = {}   # user id -> points earned by their bookings
        for b in rows:
            earned_by[b[1]] = earned_by.get(b[1], 0) + b[11] - b[12]
        self.insert("users", [u[:6] + (u[6] + earned_by.get(u[0], 0),) + u[7:] for u in self.users])


SCHEMA_FINGERPRINT = schema_fingerprint(GENERATOR_VERSION, Base.metadata)


def _build_world(path: Path, seed: int, size: int, progress: bool) -> str:
    with BuildProgress(progress, title=f"booking world seed={seed} size={size}:") as bar:
        return _Builder(path, seed, size, bar).run()


# ----------------------------------------------------------------------------- read API

BOOKING_ROWS = RowMap(Booking)
USER_ROWS = RowMap(User)
ROOM_ROWS = RowMap(RoomType)
CODE_ROWS = RowMap(DiscountCode)
PROPERTY_ROWS = RowMap(Property)


class BookingWorld(WorldFile):
    """Read-only access to one generated booking world; plain JSON-able values only.

    Properties and room types are held in memory (a few thousand rows even at ten times
    the default size); users, bookings and codes are read by indexed queries."""

    APP = APP
    GENERATOR_VERSION = GENERATOR_VERSION
    SCHEMA_FINGERPRINT = SCHEMA_FINGERPRINT
    DEFAULT_SIZE = 240
    MIN_SIZE = 20
    ID_TABLES = _TABLES
    #: how rows of each table read (the runtime schema's ``required: columns`` lists their keys)
    ROW_MAPS = {m.table: m for m in (BOOKING_ROWS, USER_ROWS, ROOM_ROWS, CODE_ROWS, PROPERTY_ROWS)}
    build = staticmethod(_build_world)

    def __init__(self, path: Path | str, *, built: bool = False) -> None:
        super().__init__(path, built=built)
        conn = self._db.conn()
        self._props: dict[int, dict] = {}
        self._by_city: dict[str, list[int]] = {}
        for p in PROPERTY_ROWS.rows(conn):
            self._props[p["id"]] = p
            self._by_city.setdefault(p["city"], []).append(p["id"])
        self._rooms: dict[int, dict] = {}
        self._rooms_of: dict[int, list[int]] = {}
        for rt in ROOM_ROWS.rows(conn):
            self._rooms[rt["id"]] = rt
            self._rooms_of.setdefault(rt["property_id"], []).append(rt["id"])
        self._cities = sorted(self._by_city)
        self._booking_rows = RowCache(BOOKING_ROWS, 8192)
        self._arriving: dict[tuple[str, int, int], list[int]] = {}
        self._codes: list[dict] | None = None
        self._user_rows = RowCache(USER_ROWS, 4096)

    # -- users ----------------------------------------------------------------------

    def user(self, uid: int) -> dict | None:
        return self._user_rows.get(self._conn, int(uid))

    def user_by_login(self, login: str) -> dict | None:
        key = (login or "").strip().lower()
        row = self._conn().execute(
            f"{USER_ROWS.select('username = ?')} UNION ALL {USER_ROWS.select('email = ?')} LIMIT 1",
            (key, key)).fetchone()
        return None if row is None else USER_ROWS(row)

    # -- properties and rooms ------------------------------------------------------------

    def cities(self) -> list[str]:
        return list(self._cities)

    def property(self, pid: int) -> dict | None:
        p = self._props.get(int(pid))
        return None if p is None else dict(p)

    def property_ids(self) -> list[int]:
        return list(self._props)

    def properties_in(self, city: str) -> list[dict]:
        """A city's properties, by id."""
        return [dict(self._props[i]) for i in self._by_city.get(city, ())]

    def room_type(self, rid: int) -> dict | None:
        rt = self._rooms.get(int(rid))
        return None if rt is None else dict(rt)

    def room_types_of(self, pid: int) -> list[dict]:
        return [dict(self._rooms[i]) for i in self._rooms_of.get(int(pid), ())]

    # -- codes -----------------------------------------------------------------------

    def code(self, cid: int) -> dict | None:
        return CODE_ROWS.one(self._conn(), "id = ?", (int(cid),))

    def code_named(self, code: str) -> dict | None:
        return CODE_ROWS.one(self._conn(), "code = ?", (str(code or "").strip().upper(),))

    def all_codes(self) -> list[dict]:
        """Every discount code by code (a few hundred at ten times the default size; kept)."""
        if self._codes is None:
            self._codes = self.codes_page(0, self.counts.get("discount_codes", 0) + 1)
        return [dict(c) for c in self._codes]

    def codes_page(self, offset: int, limit: int) -> list[dict]:
        return CODE_ROWS.rows(self._conn(), order="code", limit=limit, offset=offset)

    # -- bookings --------------------------------------------------------------------

    def booking(self, bid: int) -> dict | None:
        return self._booking_rows.get(self._conn, int(bid))

    def bookings_of(self, uid: int, limit: int = 200) -> list[dict]:
        """A user's bookings, latest arrival first."""
        return BOOKING_ROWS.rows(self._conn(), "user_id = ?", (int(uid),), order="checkin_day DESC, id DESC",
                                 limit=limit)

    def booking_by_code(self, code: str) -> dict | None:
        return BOOKING_ROWS.one(self._conn(), "code = ?", (str(code or "").strip().upper(),))

    def arriving_ids(self, status: str, lo: int, hi: int) -> list[int]:
        """Ids of the bookings in ``status`` arriving on days ``lo`` .. ``hi``, by arrival
        (for task sampling; each range is read once per process)."""
        key = (status, int(lo), int(hi))
        ids = self._arriving.get(key)
        if ids is None:
            ids = self._arriving[key] = [r[0] for r in self._conn().execute(
                "SELECT id FROM bookings WHERE status = ? AND checkin_day BETWEEN ? AND ? ORDER BY checkin_day, id",
                key)]
        return list(ids)

    def bookings_arriving(self, status: str, lo: int, hi: int, limit: int = 500) -> list[dict]:
        """Bookings in ``status`` arriving on days ``lo`` .. ``hi`` (for task sampling)."""
        return BOOKING_ROWS.rows(self._conn(), "status = ? AND checkin_day BETWEEN ? AND ?",
                                 (status, int(lo), int(hi)), order="checkin_day, id", limit=limit)
