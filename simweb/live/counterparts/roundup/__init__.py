"""Roundup 2.6.0 (classic template, sqlite backend) as the counterpart of the issues app.

One Roundup tracker stands for one simweb project (:data:`PROJECT`): its issues are
created in ``iid`` order so Roundup's ``issue<N>`` is the project's ``#N``, its labels are
keywords, its members are users, each issue's first comment is the description message
and the other user comments follow as messages (system notes are simweb's own and are
not seeded). States map to the classic statuses: opened -> ``chatting``, closed ->
``resolved``; the first assignee is ``assignedto`` (Roundup has one).

Permissions follow simweb's roles, set in the tracker's own schema: guests and reporters
are Roundup ``User``s who may view, create, comment on, label and assign issues but not
change an issue's status, except the status of an issue they opened; developers and
maintainers also hold a ``Developer`` role that may edit every issue property.

Roundup refuses to run as root, so its hooks and server run as ``nobody`` (``run_as``).
"""
from __future__ import annotations

import configparser
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..base import Counterpart, CounterpartError

if TYPE_CHECKING:  # pragma: no cover
    from ...web import WebEnv

#: The simweb project the tracker holds (world seed 0, default size).
PROJECT = "aperture/website"
STATUS = {"opened": "chatting", "closed": "resolved"}
CLOSED = ("resolved", "done-cbb")
ROLE = {"guest": "User", "reporter": "User", "developer": "User,Developer", "maintainer": "User,Developer"}
TRACKER = "tracker"      # the URL path: http://127.0.0.1:PORT/tracker/

#: Appended to the classic schema: simweb's role rules on issues (see the module doc).
_SCHEMA_PATCH = '''

# --- simweb: issue permissions by role (guest/reporter -> User, developer+ -> Developer)
# Developers hold both roles ("User,Developer"): Developer adds the full edit.
db.security.addRole(name='Developer', description='May edit every property of an issue')
db.security.addPermissionToRole('Developer', 'Edit', 'issue')
db.security.addPermissionToRole('User', 'View', 'issue')
db.security.addPermissionToRole('User', 'Create', 'issue')
_p = db.security.addPermission(name='Edit', klass='issue',
    properties=('title', 'messages', 'files', 'nosy', 'keyword', 'priority', 'superseder', 'assignedto'),
    description='Comment on, label, assign and retitle issues')
db.security.addPermissionToRole('User', _p)

def _opened_it(db, userid, itemid):
    return db.issue.get(itemid, 'creator') == userid

_p = db.security.addPermission(name='Edit', klass='issue', properties=('status',), check=_opened_it,
    description='Change the status of an issue one opened')
db.security.addPermissionToRole('User', _p)
'''


class Roundup(Counterpart):
    """Roundup on 127.0.0.1:8603, tracker at ``/tracker/``; see the module docstring."""

    name = "roundup"
    app = "issues"
    requirements = ["roundup==2.6.0"]
    default_port = 8603
    run_as = "nobody"
    install_version = 1   # bump when setup() or the payload changes

    #: Roundup's own bookkeeping: journals, sessions, one-time keys, the text indexes, id
    #: counters, activity/actor stamps, and the nosy list and mail recipients its
    #: reactors maintain themselves.
    bookkeeping_tables = ("*__journal", "sessions", "otks", "__words", "__textids", "__fts*", "ids", "schema",
                          "issue_nosy", "msg_recipients")
    bookkeeping_fields = ("*._activity", "*._actor")

    @property
    def tracker_dir(self) -> Path:
        return self.home / "tracker"

    @property
    def db_dir(self) -> Path:
        return self.data_dir / "db"

    def database(self) -> Path:
        return self.db_dir / "db"

    def data_files(self) -> list[Path]:
        return [self.db_dir]

    def message_file(self, msg_id: str | int, pristine: bool = False) -> Path:
        """Where Roundup keeps a message's content (FileClass content lives on disk)."""
        n = int(msg_id)
        base = self.pristine_path(self.db_dir) if pristine else self.db_dir
        return base / "files" / "msg" / str(n // 1000) / f"msg{n}"

    def message_text(self, msg_id: str | int) -> str | None:
        try:
            return self.message_file(msg_id).read_text(errors="replace")
        except OSError:
            return None

    # ------------------------------------------------------------------ hooks

    def setup(self) -> None:
        admin = str(self.python.parent / "roundup-admin")
        shutil.rmtree(self.tracker_dir, ignore_errors=True)   # a rebuild starts from the template
        self.tracker_dir.mkdir()
        self.give(self.tracker_dir)
        self.run([admin, "-i", str(self.tracker_dir), "install", "classic", "sqlite"])
        schema = self.tracker_dir / "schema.py"
        text = schema.read_text()
        loop = "for cl in 'issue', 'file', 'msg', 'keyword':"
        if loop not in text:
            raise CounterpartError("roundup: the classic schema changed shape; cannot apply the role permissions")
        schema.write_text(text.replace(loop, "for cl in 'file', 'msg', 'keyword':") + _SCHEMA_PATCH)
        self.configure(self.default_port)
        self.db_dir.mkdir(parents=True, exist_ok=True)
        self.give(self.data_dir)
        self.run([admin, "-i", str(self.tracker_dir), "initialise", self.password])

    def configure(self, port: int) -> None:
        """Point config.ini at the data directory, the port and a mail file (no SMTP)."""
        path = self.tracker_dir / "config.ini"
        cfg = configparser.ConfigParser(interpolation=None)
        cfg.read(path)
        cfg["main"]["database"] = str(self.db_dir)
        # A loopback test instance with one shared password: a sign-in should not cost a
        # second of PBKDF2 (Roundup's default is 250000 rounds).
        cfg["main"]["password_pbkdf2_default_rounds"] = "10000"
        cfg["tracker"]["name"] = PROJECT
        cfg["tracker"]["web"] = f"http://127.0.0.1:{port}/{TRACKER}/"
        cfg["rdbms"]["backend"] = "sqlite"
        cfg["mail"]["domain"] = "example.com"
        cfg["mail"]["debug"] = str(self.home / "data" / "mail.log")
        cfg["nosy"]["messages_to_author"] = "no"
        cfg["logging"]["level"] = "ERROR"
        with open(path, "w") as fh:
            cfg.write(fh)
        self.give(path)

    def payload(self) -> dict:
        from .families import payload

        return payload()

    def seed(self, payload_file: Path) -> None:
        script = self.home / "seed.py"
        script.write_text((self.package_dir / "seed.py").read_text())
        script.chmod(0o644)
        self.run([str(self.python), str(script), str(self.tracker_dir), str(payload_file)])

    def server_command(self, port: int) -> list[str]:
        self.configure(port)
        return [str(self.python.parent / "roundup-server"), "-n", "127.0.0.1", "-p", str(port),
                f"{TRACKER}={self.tracker_dir}"]

    def ready_path(self) -> str:
        return f"/{TRACKER}/"

    def start_path(self, path: str = "") -> str:
        """A path inside the tracker (``issue12`` -> ``/tracker/issue12``)."""
        return f"/{TRACKER}/{path}"

    def sign_in(self, env: WebEnv, username: str) -> None:
        """Log in through the sidebar form of the classic template."""
        page = env.page
        url = self.url or f"http://127.0.0.1:{self.default_port}"
        page.goto(f"{url}/{TRACKER}/", wait_until="load")
        page.fill("input[name=__login_name]", username)
        page.fill("input[name=__login_password]", self.password)
        with page.expect_navigation(wait_until="load"):
            page.click("form input[type=submit][value=Login]")
        if page.locator("input[name=__login_name]").count():
            raise CounterpartError(f"roundup: could not sign in as {username!r}")

    # ------------------------------------------------------------------ reading the database

    def issue(self, conn: Any, number: int) -> dict | None:
        """Issue ``number`` as plain values: title, status name, assignee username,
        keyword names (sorted), message ids (sorted), creator username."""
        row = conn.execute("SELECT _title, _status, _assignedto, _creator FROM _issue WHERE id = ? AND __retired__ = 0",
                           (number,)).fetchone()
        if row is None:
            return None
        name = lambda table, key: (conn.execute(f"SELECT _name FROM _{table} WHERE id = ?", (key,)).fetchone() or [None])[0]  # noqa: E731
        user = lambda key: (conn.execute("SELECT _username FROM _user WHERE id = ?", (key,)).fetchone() or [None])[0]  # noqa: E731
        kws = sorted(r[0] for r in conn.execute(
            "SELECT k._name FROM issue_keyword ik JOIN _keyword k ON k.id = ik.linkid WHERE ik.nodeid = ?", (number,)))
        msgs = sorted(int(r[0]) for r in conn.execute("SELECT linkid FROM issue_messages WHERE nodeid = ?", (number,)))
        return {"id": number, "title": row[0], "status": name("status", row[1]) if row[1] else None,
                "assignee": user(row[2]) if row[2] else None, "creator": user(row[3]) if row[3] else None,
                "keywords": kws, "messages": msgs}

    def user_id(self, conn: Any, username: str) -> int | None:
        row = conn.execute("SELECT id FROM _user WHERE _username = ? AND __retired__ = 0", (username,)).fetchone()
        return int(row[0]) if row else None
