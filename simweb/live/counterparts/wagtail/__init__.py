"""Wagtail 8.0.1: the live counterpart of simweb's cms app.

The home holds the counterpart's venv, a minimal Wagtail project (``project/``: the
package's ``files/project``: settings, urls, the ``blog`` app with its page types,
templates and migration) and ``data/wagtail.sqlite3``, the one file a reset restores:
Wagtail's database search backend keeps its index in the same database. Django's
development server serves it on 127.0.0.1 (``--insecure`` so the admin's static files are
served with DEBUG off; ``--noreload`` so the pid is the server's); mail goes to Django's
in-memory backend and nothing leaves loopback.

Mapping from simweb's cms: a post is a blog page (child of the home page) owned by its
author; simweb's roles are Wagtail's groups (author -> Editors: add and edit, no publish;
editor -> Moderators: publish and review; admin -> superuser); ``review`` is a page in
Wagtail's "Moderators approval" workflow, submitted by its author; ``draft`` a page never
published; ``published`` a live page.
"""
from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from ..base import Counterpart, CounterpartError, port_free
from ..portable import sim_app

if TYPE_CHECKING:  # pragma: no cover
    from ...web import WebEnv

#: Posts always seeded (the newest N posts of kind ``post`` that are drafts, in review or
#: published), besides the families' own, so listings and searches list more than one.
FIXED_POSTS = 120
#: Instances per family the payload covers.
INSTANCES = 5
#: How long start waits for its port when it is still held (a server stopped a moment ago).
PORT_WAIT_S = 10.0
#: How long ``start`` waits for the first answer (Wagtail imports its admin on first use).
START_TIMEOUT_S = 180.0
SITE_TITLE = "Newsroom"
SEEDED_STATUSES = ("draft", "review", "published")


def cms_app() -> Any:
    """simweb's cms app on world seed 0, default size (the world the payload comes from)."""
    return sim_app("cms")


class Wagtail(Counterpart):
    """A Wagtail site on loopback, seeded from the simweb cms world."""

    name: ClassVar[str] = "wagtail"
    app: ClassVar[str] = "cms"
    default_port: ClassVar[int] = 8604
    requirements: ClassVar[list[str]] = [
        "wagtail==8.0.1", "Django==5.2.19", "anyascii==0.3.3", "asgiref==3.13.0", "beautifulsoup4==4.15.0",
        "django-filter==26.2", "django-modelcluster==6.5", "django-permissionedforms==0.1",
        "django-taggit==6.1.0", "django-tasks==0.12.0", "django-treebeard==5.3.1", "djangorestframework==3.18.3",
        "draftjs_exporter==7.3.1", "laces==0.1.2", "modelsearch==1.3.2", "openpyxl==3.1.5", "pillow==13.0.0",
        "requests==2.34.2", "sqlparse==0.6.1", "telepath==0.3.1", "Willow==1.12.0",
    ]
    #: Bumped whenever what is seeded changes (payload, families, settings): older installs rebuild.
    install_version: ClassVar[int] = 4
    #: What Wagtail writes by itself while someone signs in and browses the admin: sessions,
    #: last-login times, the admin's per-user preferences and "recently edited" bookkeeping,
    #: the audit log, edit locks taken by opening an editor, the reference index it keeps
    #: up to date on every save, and the search index rows (derived from the page). Never
    #: an effect of a task on its own, so never collateral.
    bookkeeping_tables: ClassVar[tuple[str, ...]] = (
        "django_session", "wagtailusers_userprofile", "wagtailcore_pagelogentry", "wagtailcore_modellogentry",
        "wagtailcore_referenceindex", "wagtailsearch_indexentry", "wagtailsearch_indexentry_fts*",
        "wagtailcore_pagesubscription", "wagtailadmin_editingsession")
    bookkeeping_fields: ClassVar[tuple[str, ...]] = ("auth_user.last_login",)

    # ------------------------------------------------------------------ layout

    @property
    def project_dir(self) -> Path:
        return self.home / "project"

    def database(self) -> Path:
        return self.data_dir / "wagtail.sqlite3"

    def data_files(self) -> list[Path]:
        return [self.database()]

    def server_env(self) -> dict[str, str]:
        return {"DJANGO_SETTINGS_MODULE": "simcms.settings", "SIMWEB_WAGTAIL_DATA": str(self.data_dir),
                "PYTHONPATH": str(self.project_dir)}

    def manage(self, *args: str, **kw: Any) -> Any:
        """Run a management command of the project in the counterpart's venv."""
        return self.run([str(self.python), str(self.project_dir / "manage.py"), *args], **kw)

    # ------------------------------------------------------------------ install hooks

    def setup(self) -> None:
        """Copy the project, migrate (Wagtail's migrations make the Editors and Moderators
        groups and the "Moderators approval" workflow on the root page). Static files are
        served from the installed apps by ``runserver --insecure``: nothing to collect."""
        shutil.rmtree(self.project_dir, ignore_errors=True)
        shutil.copytree(self.files_dir / "project", self.project_dir,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        self.manage("migrate", "--noinput", "-v", "0")

    def payload(self) -> dict:
        return build_payload(cms_app(), self.password, self.default_port)

    def seed(self, payload_file: Path) -> None:
        script = self.home / "seed.py"
        shutil.copyfile(self.package_dir / "seed.py", script)
        self.run([str(self.python), str(script), str(payload_file)])

    # ------------------------------------------------------------------ server

    def server_command(self, port: int) -> list[str]:
        return [str(self.python), str(self.project_dir / "manage.py"), "runserver", f"127.0.0.1:{port}",
                "--insecure", "--noreload", "--skip-checks"]

    def ready_path(self) -> str:
        return "/admin/login/"

    def start(self, port: int | None = None, timeout: float = START_TIMEOUT_S) -> str:
        """The base's start, after waiting a little for the port if it is still held (a
        server stopped a moment ago), with a longer readiness wait for a loaded machine."""
        want = self.default_port if port is None else port
        deadline = time.monotonic() + PORT_WAIT_S
        while not self.status()["running"] and not port_free(want) and time.monotonic() < deadline:
            time.sleep(0.25)
        return super().start(port, timeout)

    def sign_in(self, env: WebEnv, username: str) -> None:
        """Log in through Wagtail's admin login form in the env's page."""
        base = self.url
        if base is None:
            raise CounterpartError("wagtail is not running; start it before signing in")
        page = env.page
        back = page.url
        page.goto(f"{base}/admin/login/")
        page.fill("#id_username", username)
        page.fill("#id_password", self.password)
        with page.expect_navigation():
            page.click("form button[type=submit]")
        if "/admin/login/" in page.url:
            raise CounterpartError(f"wagtail: signing in as {username!r} failed (still on the login page)")
        if back.startswith(base):
            page.goto(back)


def build_payload(app: Any, password: str, port: int = 8604) -> dict:
    """The entities to seed: every user, the fixed slice of posts and every post the
    families' instances (seeds of their first :data:`INSTANCES`) name."""
    from simweb.core.worlddb import day_to_date

    from .families import FAMILIES

    w = app.world
    post_ids: set[int] = set()
    for fam in FAMILIES:
        for inst in fam.instances(INSTANCES):
            post_ids.update(inst.params.get("post_ids", ()))
    pid = w.max_id("posts")
    fixed = 0
    while fixed < FIXED_POSTS and pid > 0:
        p = w.post(pid)
        if p is not None and p["kind"] == "post" and p["status"] in SEEDED_STATUSES:
            post_ids.add(pid)
            fixed += 1
        pid -= 1
    cats = {c["id"]: c["name"] for c in w.categories()}
    posts = []
    for pid in sorted(post_ids):
        p = w.post(pid)
        day = p["published_day"] if p["status"] == "published" else None
        posts.append({"id": p["id"], "title": p["title"], "slug": p["slug"], "body": p["body"],
                      "author_id": p["author_id"], "status": p["status"],
                      "category": cats.get(p["category_id"], "") if p["category_id"] else "",
                      "date": day_to_date(day).isoformat() if day is not None else None})
    users = [{"id": u["id"], "username": u["username"], "email": u["email"], "display_name": u["display_name"],
              "role": u["role"], "active": bool(u["active"])} for u in w.users()]
    return {"password": password, "port": port, "site_title": SITE_TITLE, "users": users, "posts": posts}
