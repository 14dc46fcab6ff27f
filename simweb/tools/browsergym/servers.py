"""The served simweb apps BrowserGym's tasks open: one per app per process.

A task's browser must reach the app over HTTP, and its verdict needs the session's state,
which only the control token may read. :func:`server_for` gives the task its app's server:

- ``$SIMWEB_<APP>_URL`` set (``SIMWEB_SHOPPING_URL=http://10.0.0.5:8000``): an existing
  ``simweb serve`` there, as WebArena's BrowserGym suite takes its sites from
  ``WA_SHOPPING`` and the like. Its control token is ``$SIMWEB_<APP>_TOKEN``, else
  ``$SIMWEB_CONTROL_TOKEN`` (what ``simweb serve`` itself reads). The server is asked once
  for the state a new session starts from: it must answer, accept the token, and serve
  the app, spec and world installed here (the verdict is computed here, on its states).
- otherwise: the app served by waitress on a free loopback port in a daemon thread of this
  process (:class:`simweb.browser.ServedApp`), started on first use and kept for the
  process's life, its element ids as ``data-simweb-bid`` (BrowserGym stamps its own
  ``bid`` attributes and refuses pages that already carry them).

Each BrowserGym episode has its own browser context, hence its own cookie and session;
the :class:`Server` reads and closes a session by that cookie's value. Every failure is a
:class:`ServerError` with one line naming the server and what went wrong.
"""
from __future__ import annotations

import os
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import orjson

from ...core.state import StateError
from ...runtime.app import App, load_app
from ...runtime.registry import definition
from ...serving.server import COOKIE

#: The element-id attribute of the pages BrowserGym sees (``simweb serve``'s default).
BID_ATTRIBUTE = "data-simweb-bid"
#: Seconds a control request may take (a verdict read, a close).
HTTP_TIMEOUT = 30.0
_LOOPBACK = ("127.0.0.1", "localhost", "::1")


class ServerError(RuntimeError):
    """A simweb server that cannot be used (it does not answer, refuses the token, serves
    another app or world, or the session ended): one line."""


def url_variable(app: str) -> str:
    """The environment variable naming an existing server of ``app``: ``SIMWEB_<APP>_URL``."""
    return f"SIMWEB_{app.upper()}_URL"


def token_variable(app: str) -> str:
    """The environment variable holding that server's control token: ``SIMWEB_<APP>_TOKEN``."""
    return f"SIMWEB_{app.upper()}_TOKEN"


@dataclass
class Server:
    """A served simweb app: its base URL, control token and the in-process :class:`App`
    that judges its sessions. ``served`` is the :class:`~simweb.browser.ServedApp` when this
    process started it (None: an existing server named by ``source``)."""

    app: App
    base_url: str
    token: str | None
    source: str
    served: Any = None
    _opener: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        host = urlsplit(self.base_url).hostname or ""
        # Loopback traffic never goes through a proxy from the environment.
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({})) if host in _LOOPBACK else \
            urllib.request.build_opener()

    def _request(self, method: str, path: str, sid: str | None) -> tuple[int, Any]:
        headers = {"Accept": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        if sid is not None:
            headers["Cookie"] = f"{COOKIE}={sid}"
        data = None
        if method == "POST":
            headers["Content-Type"] = "application/json"
            data = b"{}"
        req = urllib.request.Request(self.base_url + path, data=data, headers=headers, method=method)
        try:
            with self._opener.open(req, timeout=HTTP_TIMEOUT) as resp:
                return resp.status, orjson.loads(resp.read())
        except urllib.error.HTTPError as exc:
            body = exc.read()
            try:
                message = orjson.loads(body).get("error", "")
            except (orjson.JSONDecodeError, AttributeError):
                message = body[:200].decode("utf-8", "replace")
            return exc.code, {"error": " ".join(str(message).split())}
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ServerError(f"no simweb server answers at {self.base_url} ({self.source}): {reason}") from None

    def _refusal(self, status: int, payload: Any, what: str) -> ServerError:
        message = payload.get("error", "") if isinstance(payload, dict) else ""
        if status == 401:
            return ServerError(f"the simweb server at {self.base_url} refuses the control token ({message}); set "
                               f"{token_variable(self.app.name)} or SIMWEB_CONTROL_TOKEN to the token it printed")
        if status == 404:
            return ServerError(f"the server at {self.base_url} has no simweb control endpoints (404 on {what}): "
                               f"is it `simweb serve {self.app.name}` without --no-control?")
        return ServerError(f"{what} on {self.base_url}: HTTP {status}: {message}")

    def state(self, sid: str | None) -> dict:
        """The whole state of session ``sid`` (the cookie's value; None: the state a new
        session starts from)."""
        status, payload = self._request("GET", "/_simweb/state", sid)
        if status != 200:
            raise self._refusal(status, payload, "GET /_simweb/state")
        return payload

    def close_session(self, sid: str) -> None:
        """End session ``sid`` (``POST /_simweb/close``); a session already gone is fine."""
        status, payload = self._request("POST", "/_simweb/close", sid)
        if status not in (200, 410):
            raise self._refusal(status, payload, "POST /_simweb/close")

    def check(self) -> None:
        """Ask the server once: it must answer, take the token and serve this app's spec;
        the app judging its states here is then loaded on the server's world (seed and
        size as its states say), and must be that very world."""
        state = self.state(None)
        world = state.get("world") if isinstance(state, dict) else None
        seed, size = (world.get("seed"), world.get("size")) if isinstance(world, dict) else (None, None)
        if isinstance(seed, int) and isinstance(size, int) and (seed, size) != (self.app.seed, self.app.size):
            self.app = load_app(self.app.definition, seed, size, progress=True)
        try:
            self.app.check_state(state)
        except StateError as exc:
            raise ServerError(f"the server at {self.base_url} ({self.source}) cannot be judged here: {exc}") from None


_SERVERS: dict[tuple[int, str], Server] = {}
_LOCK = threading.Lock()


def server_for(app_name: str) -> Server:
    """The server of ``app_name`` for this process (see the module docstring): started or
    checked on first use, the same object afterwards. A forked child starts its own."""
    name = definition(app_name).name
    key = (os.getpid(), name)
    with _LOCK:
        server = _SERVERS.get(key)
        if server is None:
            server = _SERVERS[key] = _open(name)
    return server


def _open(name: str) -> Server:
    url = os.environ.get(url_variable(name), "").strip()
    app = load_app(definition(name))   # the default world, as `simweb serve <app>` serves it
    if url:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ServerError(f"{url_variable(name)}={url!r} is not an http(s) URL")
        token = os.environ.get(token_variable(name)) or os.environ.get("SIMWEB_CONTROL_TOKEN") or None
        server = Server(app, url.rstrip("/"), token, url_variable(name))
        server.check()
        return server
    from ...serving.browser import ServedApp

    served = ServedApp(name, bid_attribute=BID_ATTRIBUTE)
    return Server(app, served.base_url, served.control_token, "started by this process", served)


def close_servers() -> None:
    """Stop the servers this process started (tests; a process's own end stops them too)."""
    with _LOCK:
        for key in [k for k in _SERVERS if k[0] == os.getpid()]:
            server = _SERVERS.pop(key)
            if server.served is not None:
                server.served.close()


__all__ = ["BID_ATTRIBUTE", "Server", "ServerError", "close_servers", "server_for", "token_variable", "url_variable"]
