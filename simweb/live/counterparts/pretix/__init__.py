"""pretix 2026.8.0: the live counterpart of simweb's booking app.

The home holds the counterpart's venv, pretix's own configuration (``pretix.cfg``: SQLite
under ``data/``, no redis, no celery broker, so pretix runs its tasks eagerly in the
request; no outgoing mail; DEBUG off), a one-module project (``project/``: the package's
``files/simpretix_settings.py``) and ``data/`` with the database. pretix's templates are
its own: the live env follows the new tab an order link opens and the page moves pretix's
script-posted forms make. pretix ships its
compiled static files in the wheel; Django's development server serves them with
``--insecure``. ``migrate`` takes minutes (about 96 s on an idle machine): it runs once, at
install; a reset only copies the pristine database back.

The clock: pretix runs with simweb's "today" (the booking world's day 0, 2026-01-01) as
its start time (see ``files/simpretix_settings.py``), so presale windows, the dates shown
as upcoming and the cancellation deadlines read as they do in simweb.

Mapping (approximate where pretix has no such notion): a property is an event series, a
night a date of the series, a room type an item with a quota per date (the rooms left),
a booking an order (the confirmation code is the order code), the main guest the
attendee name, a simweb user a customer account of the organizer. See ``seed.py``.
"""
from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from ..base import Counterpart, CounterpartError, http_status, port_free
from ..portable import sim_app

if TYPE_CHECKING:  # pragma: no cover
    from ...web import WebEnv

#: The organizer every event belongs to (its slug is the first path segment of the shop).
ORGANIZER = {"name": "Simstay", "slug": "simstay"}
#: Properties always seeded (ids 1..N) besides the families' own, so the shop lists more
#: than the task's hotel.
FIXED_PROPERTIES = 4
#: Nights seeded around every night a family's instance refers to (its neighbours, so the
#: date must be chosen), and the nights of every fixed property (days 1..N).
NIGHT_WINDOW = 2
FIXED_NIGHTS = 7
#: Instances per family the payload covers (the runner's default asks for fewer).
INSTANCES = 5
#: How long ``start`` waits for the first answer (pretix imports a large URL tree).
START_TIMEOUT_S = 240.0
#: How long ``stop`` waits for the port to be released.
PORT_WAIT_S = 15.0
#: How long signing in may take (the account page is slow on a loaded machine; the
#: browser's default of 10 s is not always enough).
SIGN_IN_TIMEOUT_S = 120
def booking_app() -> Any:
    """The simweb booking app on world seed 0 (default size), built once per process."""
    return sim_app("booking")


class Pretix(Counterpart):
    """pretix on loopback, seeded from the simweb booking world."""

    name: ClassVar[str] = "pretix"
    app: ClassVar[str] = "booking"
    default_port: ClassVar[int] = 8605
    # 2: no template overrides any more (an install of 1 still has them in project/templates).
    install_version: ClassVar[int] = 2
    requirements: ClassVar[list[str]] = ["pretix==2026.8.0", "Django==5.2.19", "time-machine==3.6.0"]
    #: pretix's bookkeeping: sessions, the activity log every action writes, the settings
    #: stores (pretix writes a payment provider's defaults the first time it is shown;
    #: nothing a customer does changes a setting), the mail queue (never sent), cached files and the cart rows a checkout leaves behind (what an order holds is in
    #: orderposition, which is judged); the order's own housekeeping fields.
    bookkeeping_tables: ClassVar[tuple[str, ...]] = (
        "django_session", "pretixbase_logentry", "pretixbase_event_settingsstore",
        "pretixbase_organizer_settingsstore", "pretixbase_globalsettingsobject_settingsstore", "pretixbase_cartposition", "pretixbase_invoiceaddress",
        "pretixbase_cachedfile", "pretixbase_cachedticket", "pretixbase_cachedcombinedticket",
        "pretixbase_questionanswer", "pretixbase_notificationsetting", "pretixbase_eventlock",
        "pretixbase_transaction", "pretixbase_checkoutsession", "pretixbase_outgoingmail", "pretixbase_scheduledeventexport", "pretixbase_scheduledorganizerexport")
    bookkeeping_fields: ClassVar[tuple[str, ...]] = (
        "pretixbase_customer.last_login", "pretixbase_customer.last_modified", "pretixbase_order.last_modified",
        "pretixbase_user.last_login", "pretixbase_order.email_known_to_work",
        "pretixbase_orderposition.attendee_name_cached", "pretixbase_orderposition.web_secret")

    # ------------------------------------------------------------------ layout

    @property
    def project_dir(self) -> Path:
        return self.home / "project"

    @property
    def config_file(self) -> Path:
        return self.home / "pretix.cfg"

    def database(self) -> Path:
        return self.data_dir / "db.sqlite3"

    def data_files(self) -> list[Path]:
        return [self.database()]

    def server_env(self) -> dict[str, str]:
        return {"PRETIX_CONFIG_FILE": str(self.config_file), "DJANGO_SETTINGS_MODULE": "simpretix_settings",
                "PYTHONPATH": str(self.project_dir)}

    def manage(self, *args: str, **kw: Any) -> Any:
        """Run ``python -m pretix ARGS`` (pretix's manage.py) in the counterpart's venv."""
        return self.run([str(self.python), "-m", "pretix", *args], **kw)

    # ------------------------------------------------------------------ install hooks

    def write_config(self, port: int) -> None:
        """``pretix.cfg`` from the package template, for a server on ``port`` (pretix builds
        absolute links and checks the CSRF origin from its URL)."""
        text = (self.files_dir / "pretix.cfg").read_text()
        self.config_file.write_text(text.replace("@HOME@", str(self.home)).replace("@PORT@", str(port)))

    def setup(self) -> None:
        """Write the configuration and the settings module, then migrate (minutes)."""
        self.write_config(self.default_port)
        shutil.rmtree(self.project_dir, ignore_errors=True)
        self.project_dir.mkdir(parents=True)
        shutil.copyfile(self.files_dir / "simpretix_settings.py", self.project_dir / "simpretix_settings.py")
        self.manage("migrate", "--noinput", "-v", "0", timeout=1800)

    def payload(self) -> dict:
        return build_payload(booking_app(), self.password)

    # ------------------------------------------------------------------ server

    def server_command(self, port: int) -> list[str]:
        return [str(self.python), "-m", "pretix", "runserver", f"127.0.0.1:{port}", "--noreload", "--insecure",
                "--skip-checks"]

    def ready_path(self) -> str:
        # A view with no template and no query (robots.txt): answering it means the URL
        # tree is imported. The organizer page can take longer than the readiness probe's
        # 2 s on a loaded machine, and each retry then starts another slow render.
        return "/robots.txt"

    def start(self, port: int | None = None, timeout: float = START_TIMEOUT_S) -> str:
        """Start as the base does, with pretix's URL in its configuration set to the port
        (its CSRF check compares the origin with it), a cheap readiness probe with a longer
        wait and one warm-up render; waits a little for the port when a server stopped a
        moment ago still holds it."""
        want = self.default_port if port is None else port
        if not self.status()["running"]:
            self.write_config(want)
            deadline = time.monotonic() + PORT_WAIT_S
            while not port_free(want) and time.monotonic() < deadline:
                time.sleep(0.2)
        url = super().start(port, timeout)
        # One render of the shop's front page with a long timeout, so the first page an
        # episode opens does not pay for template loading.
        http_status(f"{url}/{ORGANIZER['slug']}/", timeout=timeout)
        return url

    def stop(self) -> None:
        """Stop by pid (the base), then wait until the port is free again (bounded)."""
        info = self._read_pid()
        super().stop()
        if info is None:
            return
        deadline = time.monotonic() + PORT_WAIT_S
        while not port_free(info["port"]) and time.monotonic() < deadline:
            time.sleep(0.1)

    def email_of(self, username: str) -> str:
        """The email of the customer seeded for simweb user ``username`` (pretix signs in by email)."""
        with self.connect() as conn:
            row = conn.execute("SELECT email FROM pretixbase_customer WHERE external_identifier = ?",
                               (username,)).fetchone()
        if row is None:
            raise CounterpartError(f"pretix: no seeded customer {username!r}")
        return row["email"]

    def sign_in(self, env: WebEnv, username: str) -> None:
        """Log in through the organizer's customer login form in the env's browser."""
        base = self.url
        if base is None:
            raise CounterpartError("pretix is not running; start it first")
        page = env.page
        email = self.email_of(username)
        try:
            page.goto(f"{base}/{ORGANIZER['slug']}/account/login", timeout=SIGN_IN_TIMEOUT_S * 1000)
            page.fill("#id_email", email)
            page.fill("#id_password", self.password)
            with page.expect_navigation(wait_until="domcontentloaded", timeout=SIGN_IN_TIMEOUT_S * 1000):
                page.click("#id_password >> xpath=ancestor::form//button[@type='submit']")
        except Exception as exc:    # Playwright's timeouts and navigation errors
            raise CounterpartError(f"pretix: signing in as {username!r} failed: {str(exc).splitlines()[0]}") from None
        if "/account/login" in page.url:
            raise CounterpartError(f"pretix: signing in as {username!r} failed (still on the login page)")


def build_payload(app: Any, password: str) -> dict:
    """The entities to seed: the fixed slice plus everything the families' instances use."""
    from simweb.apps.booking import night_cents

    from .families import FAMILIES

    w = app.world
    nights: dict[int, set[int]] = {pid: set(range(1, FIXED_NIGHTS + 1)) for pid in range(1, FIXED_PROPERTIES + 1)}
    user_ids: set[int] = set()
    booking_ids: set[int] = set()
    for fam in FAMILIES:
        for inst in fam.instances(INSTANCES):
            p = inst.params
            if p.get("user_id") is not None:
                user_ids.add(p["user_id"])
            if p.get("booking_id") is not None:
                booking_ids.add(p["booking_id"])
            if p.get("property_id") is not None and p.get("checkin") is not None and "booking_id" not in p:
                around = range(p["checkin"] - NIGHT_WINDOW, p["checkin"] + p.get("nights", 1) + NIGHT_WINDOW)
                nights.setdefault(p["property_id"], set()).update(d for d in around if 0 <= d < 365)
    bookings = []
    for uid in sorted(user_ids):
        for b in w.bookings_of(uid):
            booking_ids.add(b["id"])
    for bid in sorted(booking_ids):
        b = w.booking(bid)
        nights.setdefault(b["property_id"], set()).add(b["checkin_day"])
        user_ids.add(b["user_id"])
        bookings.append({k: b[k] for k in ("id", "user_id", "property_id", "room_type_id", "checkin_day", "nights",
                                           "guest_name", "guest_email", "total_cents", "status", "code",
                                           "created_day")})
    properties = []
    for pid in sorted(nights):
        p = w.property(pid)
        rooms = w.room_types_of(pid)
        per_night = {}
        for d in sorted(nights[pid]):
            per_night[str(d)] = {str(rt["id"]): {"price_cents": night_cents(rt, p["season"], d % 365),
                                                 "left": int(rt["avail"][d]) if 0 <= d < 365 else 0}
                                 for rt in rooms}
        properties.append({k: p[k] for k in ("id", "name", "city", "country", "stars", "rating", "address",
                                              "description", "free_cancel_days", "cancel_fee_pct")}
                          | {"rooms": [{k: rt[k] for k in ("id", "name", "capacity", "base_cents", "min_nights")}
                                       for rt in rooms],
                             "nights": per_night})
    users = []
    for uid in sorted(user_ids):
        u = w.user(uid)
        users.append({"id": u["id"], "username": u["username"], "email": u["email"], "full_name": u["full_name"]})
    return {"password": password, "organizer": dict(ORGANIZER), "properties": properties, "users": users,
            "bookings": bookings}
