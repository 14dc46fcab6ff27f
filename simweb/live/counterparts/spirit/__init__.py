"""Spirit 0.14.3, the forum app's counterpart: a Django forum on 127.0.0.1 with SQLite.

The project (``files/project``: settings, urls, manage.py) is copied into the home; the
database (``data/spirit.sqlite3``) and the Whoosh search index (``data/search_index``) are
what a reset restores.  Django's development server serves it (``--insecure`` so the
static files are served with DEBUG off; ``--noreload`` so the pid is the server's).

Mapping from simweb's forum: a community is a category titled with its name, a post a
topic whose first comment is the post's text, a comment a (flat) comment; moderators are
site-wide in Spirit (a simweb moderator of any community is a Spirit moderator).
"""
from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from ..base import Counterpart, CounterpartError, port_free

if TYPE_CHECKING:  # pragma: no cover
    from ...web import WebEnv

#: Every community's newest live posts seeded besides the families' own (a browsable forum).
POSTS_PER_COMMUNITY = 6
#: Instances per family the payload covers (seeds of the families' first N instances).
INSTANCES = 25
#: How long start waits for its port when it is still held (a server stopped a moment ago).
PORT_WAIT_S = 10.0
#: Bumped whenever what is seeded changes (payload, seed.py, settings): older installs rebuild.
SEED_VERSION = 3


class Spirit(Counterpart):
    """The Spirit forum (django-spirit) standing in for simweb's forum."""

    name: ClassVar[str] = "spirit"
    app: ClassVar[str] = "forum"
    requirements: ClassVar[list[str]] = ["django-spirit==0.14.3", "Django==5.2.19", "django-haystack==3.4.0",
                                         "Whoosh==2.7.4"]
    default_port: ClassVar[int] = 8602
    #: What Spirit writes by itself while someone browses (sessions, visit markers and
    #: counters, the scroll bookmark its JavaScript posts, last-seen times, search reindex
    #: times) and the counters and guards it derives from a post (comment and topic counts,
    #: last activity, the duplicate-post hash): never an effect of a task on its own, so
    #: never collateral (simweb's own counters are left out of its diffs the same way).
    bookkeeping_tables: ClassVar[tuple[str, ...]] = (
        "django_session", "spirit_topic_unread_topicunread", "spirit_comment_bookmark_commentbookmark")
    bookkeeping_fields: ClassVar[tuple[str, ...]] = (
        "auth_user.last_login", "spirit_user_userprofile.last_seen", "spirit_user_userprofile.last_ip",
        "spirit_user_userprofile.topic_count", "spirit_user_userprofile.comment_count",
        "spirit_user_userprofile.last_post_hash", "spirit_user_userprofile.last_post_on",
        "spirit_topic_topic.view_count", "spirit_topic_topic.reindex_at", "spirit_topic_topic.comment_count",
        "spirit_topic_topic.last_active", "spirit_category_category.reindex_at",
        "spirit_topic_notification_topicnotification.is_read")

    # ------------------------------------------------------------------ layout

    @property
    def project_dir(self) -> Path:
        return self.home / "project"

    def database(self) -> Path:
        return self.data_dir / "spirit.sqlite3"

    def search_index(self) -> Path:
        return self.data_dir / "search_index"

    def data_files(self) -> list[Path]:
        return [self.database(), self.search_index()]

    def server_env(self) -> dict[str, str]:
        return {"DJANGO_SETTINGS_MODULE": "simweb_spirit.settings", "SIMWEB_SPIRIT_DATA": str(self.data_dir),
                "PYTHONPATH": str(self.project_dir)}

    def manage(self, *args: str) -> Any:
        """Run a Django management command of the project in the counterpart's venv."""
        return self.run([str(self.python), str(self.project_dir / "manage.py"), *args])

    # ------------------------------------------------------------------ hooks

    def setup(self) -> None:
        """Copy the project, migrate (Spirit's migrations create the private-topics category)."""
        shutil.rmtree(self.project_dir, ignore_errors=True)
        shutil.copytree(self.files_dir / "project", self.project_dir)
        self.manage("migrate", "--noinput", "-v", "0")

    def payload(self) -> dict:
        from .families import payload

        return payload(self.password)

    @property
    def seed_marker(self) -> Path:
        return self.home / "seed_version"

    def installed(self) -> bool:
        """Installed by this version of the seeding, too (the base checks the requirements)."""
        try:
            seeded = self.seed_marker.read_text().strip() == str(SEED_VERSION)
        except OSError:
            seeded = False
        return seeded and super().installed()

    def seed(self, payload_file: Path) -> None:
        script = self.home / "seed.py"
        shutil.copyfile(self.package_dir / "seed.py", script)
        self.run([str(self.python), str(script), str(payload_file)])
        self.seed_marker.write_text(f"{SEED_VERSION}\n")

    def start(self, port: int | None = None, timeout: float = 60) -> str:
        """The base's start, after waiting a little for the port if it is still held (a reset
        right after a busy episode found it taken once; the base fails at once)."""
        want = self.default_port if port is None else port
        deadline = time.monotonic() + PORT_WAIT_S
        while not self.status()["running"] and not port_free(want) and time.monotonic() < deadline:
            time.sleep(0.25)
        return super().start(port, timeout)

    def server_command(self, port: int) -> list[str]:
        return [str(self.python), str(self.project_dir / "manage.py"), "runserver", f"127.0.0.1:{port}",
                "--insecure", "--noreload", "--skip-checks"]

    def ready_path(self) -> str:
        return "/"

    def sign_in(self, env: WebEnv, username: str) -> None:
        """Log in through Spirit's own login form in the env's page."""
        base = self.url
        if base is None:
            raise CounterpartError("spirit is not running; start it before signing in")
        page = env.page
        back = page.url
        page.goto(f"{base}/user/login/")
        page.fill("#id_username", username)
        page.fill("#id_password", self.password)
        with page.expect_navigation():
            page.click("#id_password >> xpath=ancestor::form//input[@type='submit']")
        if "/user/login/" in page.url:
            raise CounterpartError(f"spirit: signing in as {username!r} failed (still on the login page)")
        if back.startswith(base):      # back where the episode starts, now signed in
            page.goto(back)
