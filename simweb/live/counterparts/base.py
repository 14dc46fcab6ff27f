"""A real web app on loopback: its own venv, a seeded pristine database, start/reset/stop by pid.

A :class:`Counterpart` subclass names its pinned requirements and fills a few hooks (setup,
payload, seed, data files, server command, sign-in); this base does the rest:

* ``install``: ``python -m venv`` under ``home``, ``pip install`` of the requirements with a
  progress line, the ``setup`` and ``seed`` hooks, then a pristine copy of ``data_files()``.
  Idempotent: a marker records the requirements it was built from.
* ``start``: the server in the background in its own session (so its own process group),
  stdout/stderr to ``home/server.log``, ``home/server.pid`` holding the pid, port and the
  process start time (so a recycled pid is never signalled); returns once ``ready_path``
  answers 200-399.
* ``reset``: stop, copy the pristine files back, start again on the same port.
* ``stop``: TERM to its own process group, KILL after a grace period; never by name.

``run_as``: when simweb runs as root and the counterpart refuses root (Roundup), its hooks
and its server run as that user, its data directory belongs to it, and its home lies where
that user can reach it.

Every failure a user can cause or meet (a busy port, a failed pip install, a server that
dies on start) is a :class:`CounterpartError` with a one-line message naming the log.
"""
from __future__ import annotations

import hashlib
import inspect
import json
import os
import pwd
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:  # pragma: no cover
    from ..web import WebEnv

#: Bumped when what ``install`` produces changes shape, so old installs are rebuilt.
INSTALL_FORMAT = 1
#: Where counterparts live when simweb runs as root and the default cache is unreachable
#: for the ``run_as`` user (``/root`` is mode 700).
SHARED_ROOT = Path("/var/lib/simweb/counterparts")
STOP_GRACE_S = 10.0


class CounterpartError(RuntimeError):
    """A one-line, user-facing failure of a counterpart operation."""


def counterparts_root() -> Path:
    """``$SIMWEB_COUNTERPARTS`` or ``~/.cache/simweb/counterparts``."""
    env = os.environ.get("SIMWEB_COUNTERPARTS")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "simweb" / "counterparts"


def reachable_by_others(path: Path) -> bool:
    """Whether every existing ancestor of ``path`` is searchable by any user (o+x)."""
    p = path.resolve()
    for d in [p, *p.parents]:
        if d.exists():
            if not d.stat().st_mode & 0o001:
                return False
    return True


def _start_time(pid: int) -> int | None:
    """The start time of a live (non-zombie) process, in clock ticks since boot."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw.rpartition(")")[2].split()
    if fields[0] == "Z":
        return None
    return int(fields[19])


def group_members(pgid: int) -> list[int]:
    """Pids of the live (non-zombie) processes in process group ``pgid``."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:
            out.append(int(entry.name))
    return sorted(out)


def port_free(port: int) -> bool:
    """Whether 127.0.0.1:``port`` can be bound right now (as a server binds it: connections
    in TIME_WAIT from a stopped server do not count)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_opener = urllib.request.build_opener(_NoRedirect, urllib.request.ProxyHandler({}))


def http_status(url: str, timeout: float = 5.0) -> int | None:
    """The status of a GET on ``url`` (redirects not followed), None when nothing answers."""
    try:
        with _opener.open(url, timeout=timeout) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except (urllib.error.URLError, OSError, ValueError):
        return None


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1][:300] if lines else "(no output)"


class Counterpart:
    """A self-hostable web app standing in for a simweb app; see the module docstring."""

    name: ClassVar[str] = ""
    app: ClassVar[str] = ""
    requirements: ClassVar[list[str]] = []
    default_port: ClassVar[int] = 8600
    run_as: ClassVar[str | None] = None
    password: ClassVar[str] = "simweb-pass"

    def __init__(self, home: Path | str | None = None) -> None:
        if home is None:
            root = counterparts_root()
            if self._switch_user() and not os.environ.get("SIMWEB_COUNTERPARTS") and not reachable_by_others(root):
                root = SHARED_ROOT
            home = root / self.name
        self.home = Path(home).absolute()
        self.python = self.home / "venv" / "bin" / "python"
        self._proc: subprocess.Popen | None = None

    # ------------------------------------------------------------------ layout

    @property
    def data_dir(self) -> Path:
        """Where the live data (database, indexes, media) lives; owned by ``run_as``."""
        return self.home / "data"

    @property
    def pristine_dir(self) -> Path:
        return self.home / "pristine"

    @property
    def package_dir(self) -> Path:
        """The folder of the subclass's package (``seed.py``, ``files/``)."""
        return Path(inspect.getfile(type(self))).parent

    @property
    def files_dir(self) -> Path:
        return self.package_dir / "files"

    @property
    def log_path(self) -> Path:
        return self.home / "server.log"

    @property
    def pid_path(self) -> Path:
        return self.home / "server.pid"

    @property
    def marker_path(self) -> Path:
        return self.home / "installed.json"

    def pristine_path(self, live: Path) -> Path:
        """The pristine copy of a live data file."""
        return self.pristine_dir / Path(live).absolute().relative_to(self.home)

    # ------------------------------------------------------------------ hooks

    def setup(self) -> None:
        """Create the project (settings, config), migrate, create the admin. Runs after pip."""

    def payload(self) -> dict:
        """The entities to seed, taken from the simweb world (JSON-serialisable)."""
        return {}

    def seed(self, payload_file: Path) -> None:
        """Create the payload's entities through the counterpart's own API.

        Default: run the package's ``seed.py`` with the venv's python."""
        script = self.home / "seed.py"
        shutil.copyfile(self.package_dir / "seed.py", script)
        script.chmod(0o644)
        self.run([str(self.python), str(script), str(payload_file)])

    def data_files(self) -> list[Path]:
        """The files and directories ``reset`` restores (absolute paths inside ``home``)."""
        return [self.database()]

    def database(self) -> Path:
        """The live SQLite file the live verifiers read."""
        raise NotImplementedError(f"{type(self).__name__} must define database()")

    def server_command(self, port: int) -> list[str]:
        """The command that serves the app on 127.0.0.1:``port`` in the foreground."""
        raise NotImplementedError(f"{type(self).__name__} must define server_command()")

    def server_env(self) -> dict[str, str]:
        """Extra environment for the server and for hooks run with :meth:`run`."""
        return {}

    def ready_path(self) -> str:
        """A path that answers 200 or a redirect once the server is up."""
        return "/"

    def sign_in(self, env: WebEnv, username: str) -> None:
        """Log ``username`` in, in the env's browser (not counted as episode steps)."""
        raise NotImplementedError(f"{type(self).__name__} must define sign_in()")

    # ------------------------------------------------------------------ users and commands

    def _switch_user(self) -> bool:
        return bool(self.run_as) and os.geteuid() == 0

    def _ids(self) -> tuple[int, int] | None:
        if not self._switch_user():
            return None
        try:
            pw = pwd.getpwnam(self.run_as or "")
        except KeyError:
            raise CounterpartError(f"{self.name}: user {self.run_as!r} (run_as) does not exist") from None
        return pw.pw_uid, pw.pw_gid

    def _popen_user(self) -> dict[str, Any]:
        ids = self._ids()
        return {} if ids is None else {"user": ids[0], "group": ids[1], "extra_groups": []}

    def give(self, path: Path) -> None:
        """Make ``path`` (recursively) belong to the ``run_as`` user, if there is one."""
        ids = self._ids()
        if ids is None or not path.exists():
            return
        paths: Iterable[Path] = [path, *path.rglob("*")] if path.is_dir() else [path]
        for p in paths:
            os.lchown(p, *ids)

    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
        env["PATH"] = f"{self.python.parent}{os.pathsep}{env.get('PATH', '/usr/bin:/bin')}"
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        if self._switch_user():
            env["HOME"] = str(self.home)
        env.update(self.server_env())
        return env

    def run(self, args: list[str], *, as_root: bool = False, check: bool = True, input: str | None = None,
            timeout: float | None = 1800, **kw: Any) -> subprocess.CompletedProcess:
        """Run a command for this counterpart (cwd ``home``, its venv first on PATH, as
        ``run_as`` unless ``as_root``), appending command and output to ``home/commands.log``.

        A non-zero exit raises :class:`CounterpartError` with the last line of output."""
        self.home.mkdir(parents=True, exist_ok=True)
        user = {} if as_root else self._popen_user()
        t0 = time.monotonic()
        try:
            proc = subprocess.run(args, cwd=self.home, env=self._env(), input=input, text=True,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout, **user, **kw)
        except FileNotFoundError:
            raise CounterpartError(f"{self.name}: command not found: {args[0]}") from None
        except subprocess.TimeoutExpired:
            raise CounterpartError(f"{self.name}: `{Path(args[0]).name}` timed out after {timeout:.0f} s") from None
        with open(self.home / "commands.log", "a") as log:
            log.write(f"$ {' '.join(args)}\n{proc.stdout}\n[exit {proc.returncode}, {time.monotonic() - t0:.1f} s]\n")
        if check and proc.returncode != 0:
            shown = " ".join(Path(a).name if i == 0 else a for i, a in enumerate(args[:3]))
            raise CounterpartError(f"{self.name}: `{shown}` failed (exit {proc.returncode}): "
                                   f"{_last_line(proc.stdout)} (log: {self.home / 'commands.log'})")
        return proc

    # ------------------------------------------------------------------ install

    #: Bump in a subclass when its setup or payload changes, so installs are rebuilt.
    install_version: ClassVar[int] = 0

    def _fingerprint(self) -> str:
        seed = self.package_dir / "seed.py"
        text = json.dumps({"format": INSTALL_FORMAT, "requirements": list(self.requirements), "name": self.name,
                           "version": self.install_version,
                           "seed": hashlib.sha256(seed.read_bytes()).hexdigest() if seed.exists() else None},
                          sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def installed(self) -> bool:
        """Whether a complete install built from the current requirements is in ``home``."""
        try:
            marker = json.loads(self.marker_path.read_text())
        except (OSError, ValueError):
            return False
        return marker.get("fingerprint") == self._fingerprint() and self.python.exists()

    def _base_python(self) -> str:
        exe = getattr(sys, "_base_executable", None) or sys.executable
        if not self._switch_user() or reachable_by_others(Path(exe)):
            return exe
        for candidate in ("/usr/bin/python3", "/usr/local/bin/python3"):
            if Path(candidate).exists() and reachable_by_others(Path(candidate)):
                return candidate
        raise CounterpartError(f"{self.name}: no python interpreter that user {self.run_as!r} can run")

    def install(self, *, force: bool = False, progress: bool = True) -> None:
        """Venv, pip install, setup, seed, pristine copy. A no-op when already installed."""
        if self.installed() and not force:
            return
        self.stop()
        for sub in ("data", "pristine"):
            shutil.rmtree(self.home / sub, ignore_errors=True)
        self.marker_path.unlink(missing_ok=True)
        if force:
            shutil.rmtree(self.home / "venv", ignore_errors=True)
        self.home.mkdir(parents=True, exist_ok=True)
        if self._switch_user():
            self.home.chmod(0o755)
        if not self.reachable():
            raise CounterpartError(f"{self.name}: {self.home} is not reachable by user {self.run_as!r}; "
                                   "set SIMWEB_COUNTERPARTS to a directory it can reach")
        if not self.python.exists():
            self._say(progress, f"{self.name}: creating venv")
            bare = [] if self.requirements else ["--without-pip"]
            self.run([self._base_python(), "-m", "venv", *bare, str(self.home / "venv")], as_root=True)
        self._pip_install(progress)
        self.data_dir.mkdir(exist_ok=True)
        self.give(self.data_dir)
        self._say(progress, f"{self.name}: setup")
        self.setup()
        payload_file = self.home / "payload.json"
        payload_file.write_text(json.dumps(self.payload(), indent=1, sort_keys=True))
        payload_file.chmod(0o644)
        self._say(progress, f"{self.name}: seeding")
        self.seed(payload_file)
        self.snapshot_pristine()
        self.marker_path.write_text(json.dumps({"fingerprint": self._fingerprint(),
                                                "requirements": list(self.requirements)}, indent=1))
        self._say(progress, f"{self.name}: installed in {self.home}")

    def reachable(self) -> bool:
        """Whether the ``run_as`` user (if any) can reach ``home``."""
        return not self._switch_user() or reachable_by_others(self.home)

    @staticmethod
    def _say(progress: bool, text: str) -> None:
        if progress:
            print(text, file=sys.stderr, flush=True)

    def _pip_install(self, progress: bool) -> None:
        if not self.requirements:
            return
        args = [str(self.python), "-m", "pip", "install", "--disable-pip-version-check",
                "--no-input", "--progress-bar", "off", *self.requirements]
        log_path = self.home / "install.log"
        with open(log_path, "a") as log:
            log.write(f"$ {' '.join(args)}\n")
            log.flush()
            proc = subprocess.Popen(args, cwd=self.home, env=self._env(), text=True,
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            assert proc.stdout is not None
            tail: list[str] = []
            status = None
            if progress:
                from rich.console import Console

                status = Console(stderr=True).status(f"{self.name}: pip install", spinner="dots")
                status.start()
            try:
                n = 0
                for line in proc.stdout:
                    log.write(line)
                    tail = (tail + [line])[-20:]
                    if line.startswith(("Collecting", "Downloading", "Installing", "Building")):
                        n += line.startswith("Collecting")
                        if status is not None:
                            status.update(f"{self.name}: pip install [{n} collected] {line.strip()[:90]}")
                rc = proc.wait()
            finally:
                if status is not None:
                    status.stop()
        if rc != 0:
            raise CounterpartError(f"{self.name}: pip install failed (exit {rc}): {_last_line(''.join(tail))} "
                                   f"(log: {log_path})")

    def snapshot_pristine(self) -> None:
        """Copy every data file to ``pristine/`` (the state ``reset`` returns to)."""
        shutil.rmtree(self.pristine_dir, ignore_errors=True)
        for live in self.data_files():
            live = Path(live)
            if not live.exists():
                raise CounterpartError(f"{self.name}: data file {live} was not created by setup/seed")
            dst = self.pristine_path(live)
            dst.parent.mkdir(parents=True, exist_ok=True)
            if live.is_dir():
                shutil.copytree(live, dst, symlinks=True)
            else:
                _checkpoint(live)
                shutil.copy2(live, dst)

    def restore_pristine(self) -> None:
        """Replace every live data file with its pristine copy (the server must be stopped)."""
        for live in self.data_files():
            live = Path(live)
            src = self.pristine_path(live)
            if not src.exists():
                raise CounterpartError(f"{self.name}: no pristine copy of {live}; run `simweb counterpart install {self.name}`")
            if live.is_dir():
                shutil.rmtree(live)
            elif live.exists():
                live.unlink()
            for suffix in ("-wal", "-shm", "-journal"):
                Path(f"{live}{suffix}").unlink(missing_ok=True)
            if src.is_dir():
                shutil.copytree(src, live, symlinks=True)
            else:
                shutil.copy2(src, live)
            self.give(live)

    # ------------------------------------------------------------------ server

    def _read_pid(self) -> dict | None:
        try:
            info = json.loads(self.pid_path.read_text())
        except (OSError, ValueError):
            return None
        return info if isinstance(info, dict) and isinstance(info.get("pid"), int) else None

    def _alive(self, info: dict | None) -> bool:
        if info is None:
            return False
        if self._proc is not None and self._proc.pid == info["pid"]:
            self._proc.poll()
        return _start_time(info["pid"]) == info.get("start_time") or bool(group_members(info["pid"]))

    @property
    def port(self) -> int | None:
        info = self._read_pid()
        return info["port"] if info is not None and self._alive(info) else None

    @property
    def url(self) -> str | None:
        """The base URL while running (``http://127.0.0.1:PORT``), else None."""
        port = self.port
        return None if port is None else f"http://127.0.0.1:{port}"

    def start(self, port: int | None = None, timeout: float = 60) -> str:
        """Start the server in the background and wait until it answers; returns its base URL."""
        info = self._read_pid()
        if self._alive(info):
            assert info is not None
            if port is not None and port != info["port"]:
                raise CounterpartError(f"{self.name} is already running on port {info['port']} (pid {info['pid']})")
            return f"http://127.0.0.1:{info['port']}"
        if not self.installed():
            raise CounterpartError(f"{self.name} is not installed; run `simweb counterpart install {self.name}`")
        port = self.default_port if port is None else port
        if not port_free(port):
            raise CounterpartError(f"{self.name}: port {port} on 127.0.0.1 is in use")
        cmd = self.server_command(port)
        log = open(self.log_path, "ab")
        log.write(f"--- start on port {port}: {' '.join(cmd)}\n".encode())
        log.flush()
        try:
            proc = subprocess.Popen(cmd, cwd=self.home, env=self._env(), stdin=subprocess.DEVNULL, stdout=log,
                                    stderr=subprocess.STDOUT, start_new_session=True, **self._popen_user())
        except FileNotFoundError:
            raise CounterpartError(f"{self.name}: command not found: {cmd[0]}") from None
        finally:
            log.close()
        self._proc = proc
        started = _start_time(proc.pid)
        self.pid_path.write_text(json.dumps({"pid": proc.pid, "port": port, "start_time": started, "command": cmd}))
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + timeout
        while True:
            code = http_status(url + self.ready_path(), timeout=2)
            if code is not None and 200 <= code < 400:
                return url
            if proc.poll() is not None:
                self.pid_path.unlink(missing_ok=True)
                raise CounterpartError(f"{self.name}: the server exited with code {proc.returncode} on start: "
                                       f"{self._log_tail()} (log: {self.log_path})")
            if time.monotonic() > deadline:
                self.stop()
                raise CounterpartError(f"{self.name}: not ready after {timeout:.0f} s (last status {code}; "
                                       f"log: {self.log_path})")
            time.sleep(0.2)

    def _log_tail(self) -> str:
        try:
            return _last_line(self.log_path.read_text(errors="replace")[-4000:])
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        """Stop the server by its own pid: TERM to its process group, then KILL. No-op if stopped."""
        info = self._read_pid()
        if info is None:
            return
        pid = info["pid"]
        leader_ok = _start_time(pid) == info.get("start_time")
        if leader_ok or group_members(pid):
            self._signal_group(pid, signal.SIGTERM)
            deadline = time.monotonic() + STOP_GRACE_S
            while self._group_alive(pid) and time.monotonic() < deadline:
                time.sleep(0.05)
            if self._group_alive(pid):
                self._signal_group(pid, signal.SIGKILL)
                deadline = time.monotonic() + 5
                while self._group_alive(pid) and time.monotonic() < deadline:
                    time.sleep(0.05)
        self.pid_path.unlink(missing_ok=True)
        self._proc = None

    def _group_alive(self, pgid: int) -> bool:
        if self._proc is not None and self._proc.pid == pgid:
            self._proc.poll()
        return bool(group_members(pgid))

    @staticmethod
    def _signal_group(pgid: int, sig: int) -> None:
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            pass

    def reset(self) -> None:
        """Stop, copy the pristine data back, start again on the same port (or the default)."""
        info = self._read_pid()
        port = info["port"] if self._alive(info) and info else None
        self.stop()
        self.restore_pristine()
        self.start(port)

    def status(self) -> dict:
        """``{name, app, installed, running, pid, port, url, home}``."""
        info = self._read_pid()
        running = self._alive(info)
        return {"name": self.name, "app": self.app, "installed": self.installed(), "running": running,
                "pid": info["pid"] if running and info else None, "port": info["port"] if running and info else None,
                "url": f"http://127.0.0.1:{info['port']}" if running and info else None, "home": str(self.home)}

    # ------------------------------------------------------------------ database

    def connect(self) -> sqlite3.Connection:
        """A read-only connection on the live database."""
        return _connect_ro(self.database())

    def pristine_connect(self) -> sqlite3.Connection:
        """A read-only connection on the pristine copy of the database."""
        return _connect_ro(self.pristine_path(self.database()))


def _connect_ro(path: Path) -> sqlite3.Connection:
    if not Path(path).exists():
        raise CounterpartError(f"no database at {path}")
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    return conn


def _checkpoint(db: Path) -> None:
    """Fold a WAL file back into an SQLite database before it is copied."""
    if not Path(f"{db}-wal").exists():
        return
    try:
        conn = sqlite3.connect(str(db))
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()
    except sqlite3.Error:
        pass
