"""django-oscar 4.2.1: the live counterpart of simweb's shopping app.

The home holds the counterpart's venv, a minimal Django project (``project/``: the
package's ``files/`` settings, urls and manage.py), and ``data/`` with the SQLite database
and the Whoosh search index (Oscar's search lists nothing without a real backend). The
server is Django's development server on 127.0.0.1 with ``--insecure`` so Oscar's static
files are served with DEBUG off; nothing is sent by mail and nothing leaves loopback.

Seeding (``seed.py``, in the counterpart's venv) loads a subset of the simweb shopping
world (seed 0, default size) through Oscar's models: a fixed slice of the catalogue plus
every product, user, address and order the portable families' instances refer to, then
builds the search index. Every seeded user's password is :attr:`Counterpart.password`.
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

#: Products always seeded (ids 1..N of the world) besides the families' own entities, so
#: searches and category pages list more than the task's product.
FIXED_PRODUCTS = 60
#: Users always seeded (ids 1..N), with their addresses and orders.
FIXED_USERS = 4
#: How long ``start`` waits for the first answer (the base's 60 s is short for Oscar
#: on a loaded two-core machine).
START_TIMEOUT_S = 240.0
#: How long ``stop`` waits for the port to be released.
PORT_WAIT_S = 15.0
#: Instances per family the payload covers (the runner's default asks for fewer).
INSTANCES = 5


def shop_app() -> Any:
    """The simweb shopping app on world seed 0 (default size), built once per process."""
    return sim_app("shopping")


class Oscar(Counterpart):
    """django-oscar on loopback, seeded from the simweb shopping world."""

    name: ClassVar[str] = "oscar"
    app: ClassVar[str] = "shopping"
    default_port: ClassVar[int] = 8601
    requirements: ClassVar[list[str]] = [
        "django-oscar==4.2.1", "Django==5.2.19", "django-haystack==3.4.0", "Whoosh==2.7.4",
        "sorl-thumbnail==13.4.0", "asgiref==3.13.0", "babel==2.19.0", "django-extra-views==0.16.0",
        "django-phonenumber-field==8.5.0", "django-tables2==2.7.0", "django-treebeard==7.0.3",
        "django-widget-tweaks==1.5.1", "factory_boy==3.3.3", "Faker==40.63.0", "phonenumbers==9.0.43",
        "pillow==13.0.0", "purl==1.6", "sqlparse==0.6.1",
    ]
    #: Oscar's bookkeeping: sessions, the analytics counters every product view and search
    #: bumps, sorl's thumbnail store, notifications, and the basket header rows (the basket
    #: middleware makes an empty open basket for every signed-in visitor; what a basket
    #: holds is in basket_line, which is judged). Never an effect, never collateral.
    bookkeeping_tables: ClassVar[tuple[str, ...]] = (
        "django_session", "analytics_*", "thumbnail_kvstore", "communication_notification", "django_admin_log",
        "basket_basket")
    bookkeeping_fields: ClassVar[tuple[str, ...]] = ("auth_user.last_login",)

    # ------------------------------------------------------------------ layout

    @property
    def project_dir(self) -> Path:
        return self.home / "project"

    def database(self) -> Path:
        return self.data_dir / "db.sqlite3"

    def index_dir(self) -> Path:
        """The Whoosh index (restored with the database on reset)."""
        return self.data_dir / "whoosh_index"

    def data_files(self) -> list[Path]:
        return [self.database(), self.index_dir()]

    def server_env(self) -> dict[str, str]:
        return {"SIMWEB_OSCAR_HOME": str(self.home), "DJANGO_SETTINGS_MODULE": "simshop.settings",
                "PYTHONPATH": str(self.project_dir)}

    def manage(self, *args: str, **kw: Any) -> Any:
        """Run ``manage.py ARGS`` in the counterpart's venv."""
        return self.run([str(self.python), str(self.project_dir / "manage.py"), *args], **kw)

    # ------------------------------------------------------------------ install hooks

    def setup(self) -> None:
        """Write the project from ``files/`` (settings, urls, the forked shipping app) and
        migrate (about 17 s)."""
        shutil.rmtree(self.project_dir, ignore_errors=True)
        pkg = self.project_dir / "simshop"
        pkg.mkdir(parents=True)
        shutil.copyfile(self.files_dir / "manage.py", self.project_dir / "manage.py")
        for name in ("settings.py", "urls.py"):
            shutil.copyfile(self.files_dir / name, pkg / name)
        (pkg / "__init__.py").write_text("")
        shutil.copytree(self.files_dir / "shipping", pkg / "shipping",
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        (pkg / "shipping" / "__init__.py").write_text("")
        self.manage("migrate", "--noinput", "-v", "0")

    def seed(self, payload_file: Path) -> None:
        """Create the payload through Oscar's models, then build the search index."""
        super().seed(payload_file)
        self.manage("update_index", "-v", "0")

    def payload(self) -> dict:
        return build_payload(shop_app(), self.password, self.default_port)

    # ------------------------------------------------------------------ server

    def server_command(self, port: int) -> list[str]:
        return [str(self.python), str(self.project_dir / "manage.py"), "runserver", f"127.0.0.1:{port}",
                "--noreload", "--insecure", "--skip-checks"]

    def ready_path(self) -> str:
        # A view with no template and no search (it redirects): answering it means the URL
        # tree is imported. A page such as /catalogue/ can take longer than the readiness
        # probe's 2 s under load, and each retry then starts another slow render.
        return "/i18n/setlang/"

    def start(self, port: int | None = None, timeout: float = START_TIMEOUT_S) -> str:
        """Start as the base does, with a longer readiness wait: Oscar's first request
        imports its whole URL tree, which takes over a minute on a loaded machine. Ready
        means the cheap ``ready_path`` answers; then one catalogue page is rendered with a
        long timeout so the first page an episode opens does not pay for template loading."""
        url = super().start(port, timeout)
        http_status(url + "/catalogue/", timeout=timeout)
        return url

    def stop(self) -> None:
        """Stop by pid (the base), then wait until the port is free again, so that a reset's
        start never races the old server's socket (bounded: ``PORT_WAIT_S``)."""
        info = self._read_pid()
        super().stop()
        if info is None:
            return
        deadline = time.monotonic() + PORT_WAIT_S
        while not port_free(info["port"]) and time.monotonic() < deadline:
            time.sleep(0.1)

    def email_of(self, username: str) -> str:
        """The seeded user's email (Oscar signs in by email)."""
        with self.connect() as conn:
            row = conn.execute("SELECT email FROM auth_user WHERE username = ?", (username,)).fetchone()
        if row is None:
            raise CounterpartError(f"oscar: no seeded user {username!r}")
        return row["email"]

    def sign_in(self, env: WebEnv, username: str) -> None:
        """Log in through Oscar's own login form in the env's browser."""
        base = self.url
        if base is None:
            raise CounterpartError("oscar is not running; start it first")
        page = env.page   # the active Playwright page
        page.goto(f"{base}/accounts/login/")
        page.fill("#id_login-username", self.email_of(username))
        page.fill("#id_login-password", self.password)
        page.click("button[name=login_submit]")
        page.wait_for_load_state()
        if "/accounts/login" in page.url:
            raise CounterpartError(f"oscar: signing in as {username!r} failed")


def build_payload(app: Any, password: str, port: int = 8601) -> dict:
    """The entities to seed: the fixed slice plus everything the families' instances use."""
    from simweb.core.worlddb import day_to_date

    from .families import FAMILIES

    w = app.world
    product_ids = set(range(1, FIXED_PRODUCTS + 1))
    user_ids = set(range(1, FIXED_USERS + 1))
    for fam in FAMILIES:
        for inst in fam.instances(INSTANCES):
            product_ids.update(inst.params.get("product_ids", ()))
            if inst.params.get("user_id") is not None:
                user_ids.add(inst.params["user_id"])
    products = []
    for pid in sorted(product_ids):
        p = w.product(pid)
        products.append({"id": p["id"], "sku": p["sku"], "name": p["name"], "description": p["description"],
                         "price_cents": p["price_cents"], "stock": p["stock"], "category": p["category_name"],
                         "department": w.category(p["department_id"])["name"],
                         "options": {k: list(v) for k, v in sorted(p["options"].items())}})
    users, addresses, orders = [], [], []
    for uid in sorted(user_ids):
        u = w.user(uid)
        users.append({"id": u["id"], "username": u["username"], "email": u["email"], "full_name": u["full_name"]})
        addrs = {a["id"]: a for a in w.addresses(uid)}
        addresses += [dict(a) for a in addrs.values()]
        for o in w.orders(uid):
            a = addrs.get(o["address_id"]) or w.address(o["address_id"])
            orders.append({"id": o["id"], "user_id": uid, "status": o["status"],
                           "date": day_to_date(o["day"]).isoformat(), "items": o["items"],
                           "shipping_cents": o["shipping_cents"], "total_cents": o["total_cents"],
                           "shipping_method": o["shipping_method"], "address": dict(a)})
    return {"password": password, "domain": f"127.0.0.1:{port}", "products": products, "users": users,
            "addresses": addresses, "orders": sorted(orders, key=lambda o: o["id"])}
