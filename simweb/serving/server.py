"""Served mode: an app over HTTP for real browsers, one simulated session per cookie.

Every request drives the same spec transitions as the in-process browser
(``App.navigate`` for GET, ``App.submit`` for POST, then a 303 redirect, as the apps work
without JavaScript). No session can read or change another's.

Sessions (:mod:`simweb.serving.sessions`) live in a database through SQLAlchemy (an in-memory
SQLite database by default here; ``simweb serve`` uses a SQLite file) and are written at
the end of every state-changing request, so a server killed and started again on the same
database carries on. A cookie-less request gets a *new* session, which only counts
against a budget of new sessions until its cookie comes back: health checks and crawlers
never push out anyone's signed-in session. A cookie naming no live session is told so,
never silently given a fresh one:

    status 410 Gone, header ``X-Simweb-Session: expired | evicted | closed | unknown |
    incompatible``, a page saying the session ended (JSON ``{"error": ...}`` on
    ``/_simweb``), and the cookie cleared so the next request starts a new session.

Every response carries ``X-Simweb-Session`` (``new``, ``live``, ``none`` or one of the
above). HEAD requests never change a state.

Control endpoints (off with ``control=False`` / ``simweb serve --no-control``: then 404)::

    GET  /_simweb/state    the session's state. With the control token: the whole state.
                           Without: the state with ``meta.task`` and ``meta.rng`` replaced
                           by "redacted" (header ``X-Simweb-Redacted``), so nothing a page
                           visitor (the agent's own browser) can fetch holds the task's
                           parameters or answer. Without a cookie: the state a new
                           session starts from (no session is made).
    POST /_simweb/state    restore a state (fork in the browser); token required
    POST /_simweb/reset    {"task": id, "seed": n}: start a task instance exactly as
                           ``env.reset`` does; token required
    POST /_simweb/close    end the session of the request's cookie (told ``closed``
                           from then on); token required
    GET  /_simweb/start    ?task=&seed=: the same for the requesting browser's own session,
                           no token (WebGym's start URL, :mod:`simweb.omnibox.start`)

The token goes in ``Authorization: Bearer <token>``; ``simweb serve`` prints it (or takes
``--control-token`` / ``$SIMWEB_CONTROL_TOKEN``), :class:`simweb.browser.ServedApp` makes
one and :class:`simweb.browser.BrowserEnv` sends it. Writes must be ``application/json``
and are refused from a foreign ``Origin`` (or ``Sec-Fetch-Site: cross-site``), so a page
elsewhere cannot drive them.

Bounded cost (:mod:`simweb.core.limits`): request bodies, state size, list lengths, nesting
depth and URL length have limits, each refused with a 4xx and one line; a request whose
transitions would grow the state over the limit is refused (413) and leaves the state as
it was. :func:`serve` runs the app under waitress (bounded threads, idle timeouts).

Python API, for servers built on these sessions::

    flask_app = create_app("shopping", session_db="sqlite:///sessions.db")
    served = flask_app.extensions["simweb"]           # a Served
    sid = served.new_session(state)                   # or new_session(task=..., seed=...)
    served.state(sid)                                 # a copy of its state, None if gone
    served.set_state(sid, state)                      # validated; False if gone
    client.set_cookie(COOKIE, sid)                    # a browser now drives that session

Where the code is: :func:`create_app` builds the app and registers the blueprints of
:mod:`simweb.serving.site` (``errors``: errors and limits; ``control``: the ``/_simweb``
endpoints; ``start``: a task instance's start URL; ``pages``: the site), whose handlers
read the app's :class:`Served` (:mod:`simweb.serving.served`) from
``flask_app.extensions["simweb"]``; this module also runs an app under waitress
(:func:`make_server`, :func:`serve`).
"""
from __future__ import annotations

import functools
import re
import secrets
import threading
import time
from collections.abc import Callable
from importlib import resources
from typing import Any

from flask import Flask

from ..core.limits import DEFAULT_LIMITS, Limits, check_shape
from ..runtime.app import load_app
from ..runtime.registry import definition
from .served import COOKIE, GONE, REDACTED, REDACTED_HEADER, Served, redacted
from .sessions import CACHE_SIZE, IDLE_LIFETIME, MAX_NEW_SESSIONS, MAX_SESSIONS, SESSION_HEADER, SessionStore
from .site.control import control as control_blueprint
from .site.errors import errors as errors_blueprint
from .site.pages import pages as pages_blueprint
from .site.start import start as start_blueprint
from .site.wire import HIT_CSS, hit_stylesheet, request_target

__all__ = ["COOKIE", "GONE", "HIT_CSS", "REDACTED", "REDACTED_HEADER", "SESSION_HEADER", "Served", "create_app",
           "hit_stylesheet", "make_server", "redacted", "request_target", "serve", "stop_server"]


def create_app(app_name: str, *, world_seed: int = 0, size: int | None = None, task: str | None = None,
               seed: int = 0, bid_attribute: str = "bid", session_db: str = "sqlite://",
               max_sessions: int = MAX_SESSIONS, max_new_sessions: int = MAX_NEW_SESSIONS,
               idle_lifetime: float = IDLE_LIFETIME, cache_size: int = CACHE_SIZE, control: bool = True,
               control_token: str | None = None, limits: Limits = DEFAULT_LIMITS,
               clock: Callable[[], float] = time.time, variant: int = 0) -> Flask:
    """The Flask application serving ``app_name`` (app factory).

    ``session_db``: a SQLAlchemy URL (default: an in-memory SQLite database).
    ``control_token``: the token of the ``/_simweb`` writes (default: a new random one,
    at ``flask_app.extensions["simweb"].control_token``). ``bid_attribute`` renames the
    element-id attribute in served pages: BrowserGym marks every page with its own
    ``bid`` attributes and refuses pages that already carry them, so BrowserGym agents
    want e.g. ``data-simweb-bid``."""
    if not re.fullmatch(r"[a-z][a-z0-9\-]*", bid_attribute):
        raise ValueError(f"bid attribute {bid_attribute!r} is not a valid attribute name")
    if isinstance(seed, bool) or not isinstance(seed, int) or not -2**63 <= seed < 2**63:
        raise ValueError(f"the seed must be a 64-bit integer, not {seed!r}")   # as /_simweb/reset's
    if control_token is not None and len(control_token) < 16:
        raise ValueError("the control token must be at least 16 characters")
    sim = load_app(definition(app_name), world_seed, size, progress=True)
    if task is not None:
        from ..episodes.episode import find_task

        find_task(sim, task)   # an unknown task is a TaskError naming the closest known one

    def readable(state: Any) -> None:
        """A state read back from the database must still be one of this app (a row can be
        damaged or edited by hand): else its session is 'incompatible'."""
        check_shape(state, limits)
        sim.check_state(state)

    store = SessionStore(session_db, app=sim.name, spec_hash=sim.spec.hash, world_hash=sim.world.hash,
                         max_sessions=max_sessions, max_new=max_new_sessions, idle_lifetime=idle_lifetime,
                         cache_size=cache_size, clock=clock, check=readable)
    token = (control_token or secrets.token_urlsafe(32)) if control else None
    from ..runtime.variants import catalogue

    served = Served(sim, store, task, seed, limits, control, token, catalogue(sim).check(variant), bid_attribute)
    static = resources.files(sim.definition.package) / "static"
    flask_app = Flask(f"simweb.{sim.name}", static_folder=str(static), static_url_path="/static")
    flask_app.config["MAX_CONTENT_LENGTH"] = limits.max_body
    flask_app.extensions["simweb"] = served
    # The site: errors and limits for every request, the control endpoints, the start URL
    # of a task instance (WebGym's `website`, GET /_simweb/start?task=&seed=), the pages.
    flask_app.register_blueprint(errors_blueprint)
    flask_app.register_blueprint(control_blueprint)
    flask_app.register_blueprint(start_blueprint)
    flask_app.register_blueprint(pages_blueprint)
    return flask_app


def make_server(flask_app: Flask, host: str = "127.0.0.1", port: int = 0, *, threads: int = 8,
                channel_timeout: int = 30, connection_limit: int = 1000) -> Any:
    """A waitress server for ``flask_app`` (not started: call ``.run()``, stop it with
    :func:`stop_server`). ``threads`` worker threads; connections idle for
    ``channel_timeout`` seconds are closed, and so are those whose request has not arrived
    whole ``channel_timeout`` seconds after its first byte; at most ``connection_limit`` open at once;
    request bodies over the limit are refused with 413 before they reach the app, and
    waitress buffers bodies and headers, so a slow client never holds a worker."""
    from waitress.server import BaseWSGIServer, create_server

    if threads < 1 or channel_timeout < 1 or connection_limit < 1:
        raise ValueError("threads, channel timeout and connection limit must be at least 1")
    # A simweb app carries its own limits; any other Flask app (the omnibox master) gets the defaults.
    ext = flask_app.extensions.get("simweb")
    limits: Limits = ext.limits if ext is not None else Limits()
    channels: dict = {}
    server = create_server(flask_app, channels, host=host, port=port, threads=threads,
                           channel_timeout=channel_timeout, cleanup_interval=min(30, channel_timeout),
                           connection_limit=connection_limit,
                           max_request_body_size=limits.max_body,
                           max_request_header_size=limits.max_url + 32 * 1024, ident="simweb",
                           clear_untrusted_proxy_headers=True, expose_tracebacks=False)
    for listener in [server, *channels.values()]:   # one per listening socket
        if isinstance(listener, BaseWSGIServer):
            listener.channel_class = _channel_class()
    return server


@functools.cache
def _channel_class() -> type:
    """waitress's connection class, whose own error responses (a malformed request, a body
    over the limit: answered before the app sees them) say ``nosniff`` as the app's do."""
    from waitress.channel import HTTPChannel
    from waitress.task import ErrorTask

    class NoSniffErrorTask(ErrorTask):
        def execute(self) -> None:
            self.response_headers.append(("X-Content-Type-Options", "nosniff"))
            super().execute()

    class Channel(HTTPChannel):
        error_task_class = NoSniffErrorTask
        request_began: float | None = None

        def handle_read(self) -> None:
            # waitress closes a connection idle for channel_timeout seconds, idle meaning no
            # byte came: one byte now and then kept a half-sent request open for ever (and
            # enough of them, the connection limit full). A request still incomplete keeps
            # the time of its first byte, so it must arrive whole within the timeout.
            before = self.request
            super().handle_read()
            if self.request is None:
                self.request_began = None
            elif self.request is not before or self.request_began is None:
                self.request_began = time.time()   # a request began with these bytes
            else:
                self.last_activity = self.request_began

    return Channel


def stop_server(server: Any, thread: threading.Thread | None = None) -> None:
    """Stop a :func:`make_server` server: its worker threads, listening socket and open
    connections. ``thread`` is the thread running ``server.run()``, None if no other thread
    runs it (never started, or it ran here and returned).

    A running loop closes the sockets itself, and its ``run()`` then returns: a socket
    closed from another thread while the loop waits on it in ``select`` fails the wait with
    EBADF, and the loop thread dies with that error."""
    server.task_dispatcher.shutdown()
    closed = threading.Event()

    def close_all() -> None:
        for channel in list(server._map.values()):
            if channel is server or channel is server.trigger:
                continue
            try:
                channel.close()
            except OSError:
                pass
        try:
            server.close()  # the listening socket, then the trigger: the loop's map is empty and run() returns
        except OSError:
            pass
        closed.set()

    if thread is not None and thread.is_alive():
        try:
            server.trigger.pull_trigger(close_all)
        except OSError:   # the trigger is already closed: nothing is left to wake
            pass
        if closed.wait(5):
            return
    close_all()


def serve(flask_app: Flask, host: str = "127.0.0.1", port: int = 8000, **options: Any) -> None:
    """Serve ``flask_app`` with waitress until interrupted (options: :func:`make_server`)."""
    make_server(flask_app, host, port, **options).run()
