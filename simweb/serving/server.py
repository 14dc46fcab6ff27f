"""Served mode: an app over HTTP for real browsers, one simulated session per cookie.

Every request drives the same spec transitions as the in-process browser
(``App.navigate`` for GET, ``App.submit`` for POST, then a 303 redirect, as the apps work
without JavaScript). No session can read or change another's.

Sessions (:mod:`simweb.sessions`) live in a database through SQLAlchemy (an in-memory
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

Bounded cost (:mod:`simweb.limits`): request bodies, state size, list lengths, nesting
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
"""
from __future__ import annotations

import functools
import hmac
import io
import re
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from typing import Any
from urllib.parse import quote, unquote_to_bytes, urlsplit

import orjson
from flask import Flask, Response, make_response, request
from sqlalchemy.exc import SQLAlchemyError
from werkzeug.exceptions import HTTPException

from ..core.limits import DEFAULT_LIMITS, LimitError, Limits, check_shape, read_body
from ..core.state import StateError, canonical, deep_copy
from ..core.urls import local_path
from ..runtime.app import App, load_app
from ..runtime.registry import definition
from .omnibox.start import install_start_route
from .sessions import CACHE_SIZE, IDLE_LIFETIME, MAX_NEW_SESSIONS, MAX_SESSIONS, SESSION_HEADER, Lookup, SessionStore

COOKIE = "simweb_session"
REDACTED_HEADER = "X-Simweb-Redacted"
#: The status of a request whose session ended (RFC 9110: "no longer available").
GONE = 410
REDACTED = "redacted"

_GONE_TEXT = {
    "expired": "Your session has expired (it was idle for too long).",
    "evicted": "Your session was closed to make room for newer ones.",
    "closed": "Your session was closed.",
    "unknown": "This server has no session for your cookie (it may have been reset).",
    "incompatible": "Your session was made for another version of this site.",
}
_UNSAFE_URL_CHARS = re.compile(r"[\x00-\x20\x7f-\U0010ffff\\]")
#: In a request target (a WSGI string: its bytes as Latin-1): what a browser would have
#: percent-encoded before sending (control characters, space, non-ASCII bytes).
_UNSENT_BYTES = re.compile(r"[\x00-\x20\x7f-\U0010ffff]")


#: Appended to every stylesheet an app serves: the centre of an element that carries a bid
#: but is not itself a link, control or label (a nav, a list, a form, a row, a heading...)
#: is covered by a small box of that element's own (its ``::before``: a nested container's
#: box comes later in tree order, so it paints above its ancestors'), so a click on the
#: element -- Playwright clicks the centre of its box -- lands on the element itself, not on
#: whatever child happens to sit at the centre, and does what the DOM's click does: bubbles
#: up to a link, button or label around it, if any (the in-process browser does the same).
#: Links, buttons and labels have such a box at their own centre, one level higher, and form
#: controls sit above both, so a click on one is never intercepted by a container around
#: it. A container also gets 12 px of right and bottom padding, which moves its centre 6 px
#: right of and below the centre of its content: the child at the middle of a symmetric
#: layout (an only child, the middle one of an odd stack or row, centred content), whose
#: centre would otherwise be the container's, is then off it.
#: ``{bid}`` is the bid attribute of the served pages.
HIT_CSS = """
/* simweb: a click at the centre of an element with a bid lands on that element */
:where([{bid}]):not(a, button, input, select, textarea, option, optgroup, label, summary, img, svg, iframe,
  video, audio, canvas, embed, object, area, hr, br, progress, meter) {{
  position: relative; padding-right: 12px; padding-bottom: 12px;
}}
:where([{bid}]):not(a, button, input, select, textarea, option, optgroup, label, summary, img, svg, iframe,
  video, audio, canvas, embed, object, area, hr, br, progress, meter)::before {{
  content: ""; position: absolute; left: calc(50% - 2px); top: calc(50% - 2px); width: 4px; height: 4px;
  z-index: 2147483646; pointer-events: auto;
}}
:where(a[href], button, label) {{ position: relative; }}
:where(a[href], button, label)::after {{
  content: ""; position: absolute; left: calc(50% - 2px); top: calc(50% - 2px); width: 4px; height: 4px;
  z-index: 2147483647; pointer-events: auto;
}}
:where(input, select, textarea) {{ position: relative; z-index: 2147483647; }}
"""


def hit_stylesheet(bid_attribute: str = "bid") -> str:
    """:data:`HIT_CSS` for pages whose bid attribute is ``bid_attribute``."""
    return HIT_CSS.format(bid=bid_attribute)


def _encode_unsafe(url: str) -> str:
    """Percent-encode what a browser would encode (or strip) in a Location: whitespace,
    control characters, backslashes and non-ASCII (as UTF-8; a header is Latin-1). The
    result is then checked as a local path."""
    return _UNSAFE_URL_CHARS.sub(lambda m: "".join(f"%{b:02X}" for b in m.group().encode("utf-8", "surrogatepass")),
                                 url)


def request_target(environ: dict) -> tuple[str, str]:
    """The path and query of a request as the client sent them: percent-escapes kept, as
    the in-process browser keeps a URL (``PATH_INFO`` is percent-decoded: with it,
    '/search%3Fq%3Dx' was a search and '/p/%31' product 1, both 404 in process). A byte a
    browser would have encoded (raw UTF-8 from curl) is percent-encoded, never read as
    Latin-1. The path is that of ``REQUEST_URI`` (waitress, Werkzeug) or ``RAW_URI``
    (gunicorn) when it decodes to ``SCRIPT_NAME + PATH_INFO`` (else ``PATH_INFO`` encoded
    again); the query is ``QUERY_STRING``, which WSGI never decodes."""
    decoded = environ.get("SCRIPT_NAME", "") + environ.get("PATH_INFO", "")
    path = None
    raw = environ.get("REQUEST_URI") or environ.get("RAW_URI") or ""
    if not raw.startswith("/") and "://" in raw:   # the absolute form (a proxy request)
        raw = "/" + raw.split("://", 1)[1].partition("/")[2]
    if raw.startswith("/"):
        candidate = raw.partition("#")[0].partition("?")[0]
        if unquote_to_bytes(candidate.encode("latin-1", "replace")) == decoded.encode("latin-1", "replace"):
            path = candidate
    if path is None:
        path = quote(decoded.encode("latin-1", "replace") or b"/", safe="/:@!$&'()*+,;=~")

    def byte(ch: str) -> str:   # a WSGI string's character is a byte; past 0xFF (not WSGI), UTF-8
        n = ord(ch)
        return f"%{n:02X}" if n <= 0xFF else "".join(f"%{b:02X}" for b in ch.encode("utf-8", "surrogatepass"))

    def encode(text: str) -> str:
        return _UNSENT_BYTES.sub(lambda m: byte(m.group()), text)

    return encode(path), encode(environ.get("QUERY_STRING", ""))


def redacted(state: dict) -> dict:
    """The state a page visitor may read: ``meta.task`` (its parameters hold the answer
    of information tasks) and ``meta.rng`` (the task can be derived from its seed) are
    replaced by "redacted". A redacted state does not validate, so it cannot be restored
    by mistake."""
    meta = dict(state["meta"])
    if meta.get("task") is not None:
        meta["task"] = REDACTED
    meta["rng"] = REDACTED
    return {**state, "meta": meta}


@dataclass
class Served:
    """An app in served mode: the in-process :class:`App`, its session store, limits and
    control settings (``flask_app.extensions["simweb"]``)."""

    app: App
    sessions: SessionStore
    task: str | None
    seed: int
    limits: Limits = DEFAULT_LIMITS
    control: bool = True
    control_token: str | None = None
    variant: int = 0   # the site variant new sessions start on (simweb.variants)

    def fresh_state(self, task: str | None = None, seed: int = 0, variant: int | None = None) -> dict:
        """The state ``env.reset(seed, options={"task": task})`` starts from (same cache),
        on the server's site variant unless ``variant`` is given."""
        from ..episodes.env import episode_start

        return deep_copy(episode_start(self.app, task, seed, None, self.variant if variant is None else variant).state)

    def new_session(self, state: dict | None = None, *, task: str | None = None, seed: int = 0) -> str:
        """A new (established) session holding ``state`` (validated: StateError if it
        cannot be used here), or the start state of ``task`` / ``seed``; its id."""
        if state is None:
            state = self.fresh_state(task, seed)
        else:
            self.check(state)
            state = deep_copy(state)
        return self.sessions.create(state, established=True)

    def start_session(self, sid: str | None, state: dict) -> tuple[str | None, str]:
        """Put the session of cookie ``sid`` at ``state`` (a task instance's start, as
        ``GET /_simweb/start`` asks). A live session is replaced, and established (its
        cookie came back); without one, a *new* session holds ``state``, in the budget of
        sessions whose cookie has not come back yet. Returns the id of the new session
        (None if the cookie's session was reused) and the ``X-Simweb-Session`` status."""
        if sid is not None:
            with self.sessions.lock(sid):
                found = self.sessions.load(sid)
                if found.state is not None and self.sessions.save(sid, state, establish=not found.established):
                    return None, "live"
        return self.sessions.create(state, established=False), "new"

    def state(self, sid: str) -> dict | None:
        """A copy of session ``sid``'s state, None if it has none (ended, unknown)."""
        with self.sessions.lock(sid):
            found = self.sessions.load(sid)
            return deep_copy(found.state) if found.state is not None else None

    def set_state(self, sid: str, state: dict) -> bool:
        """Replace session ``sid``'s state with ``state`` (validated); False if it ended."""
        self.check(state)
        with self.sessions.lock(sid):
            return self.sessions.load(sid).state is not None and self.sessions.save(sid, deep_copy(state))

    def check(self, state: Any, size: int | None = None) -> None:
        """Refuse a state over the limits (LimitError) or unusable here (StateError)."""
        check_shape(state, self.limits)   # first: it bounds the depth the encoder below meets
        if size is None:
            size = len(canonical(state))
        if size > self.limits.max_state:
            raise LimitError(f"state of {size} bytes is over the limit of {self.limits.max_state} bytes")
        self.app.check_state(state)


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

    served = Served(sim, store, task, seed, limits, control, token, catalogue(sim).check(variant))
    static = resources.files(sim.definition.package) / "static"
    flask_app = Flask(f"simweb.{sim.name}", static_folder=str(static), static_url_path="/static")
    flask_app.config["MAX_CONTENT_LENGTH"] = limits.max_body
    flask_app.extensions["simweb"] = served

    # ------------------------------------------------------------------ responses
    def page_html(html: str | None) -> str:
        # Only templates write ` bid="`: user text is escaped (a quote becomes &#34;).
        html = html or ""
        return html if bid_attribute == "bid" else html.replace(' bid="', f' {bid_attribute}="')

    def finish(resp: Response, sid: str | None, status: str) -> Response:
        if sid is not None:
            resp.set_cookie(COOKIE, sid, httponly=True, samesite="Lax")
        resp.headers["Cache-Control"] = "no-store"
        resp.headers[SESSION_HEADER] = status
        return resp

    def json_response(obj: Any, status: int = 200) -> Response:
        return Response(orjson.dumps(obj), status=status, mimetype="application/json")

    def error(message: str, status: int) -> Response:
        """A 4xx with one line: JSON on /_simweb, text elsewhere."""
        message = " ".join(str(message).split())
        if request.path.startswith("/_simweb/"):
            resp = json_response({"error": message}, status)
        else:
            resp = Response(message + "\n", status=status, mimetype="text/plain")
        resp.headers["Cache-Control"] = "no-store"
        return resp

    def gone(found: Lookup) -> Response:
        text = _GONE_TEXT.get(found.status, _GONE_TEXT["unknown"])
        if request.path.startswith("/_simweb/"):
            resp = json_response({"error": f"session {found.status}: {text}"}, GONE)
        else:
            resp = make_response(page_html(
                "<!DOCTYPE html><html><head><title>Session ended · " + sim.spec.title + "</title></head><body>"
                '<main><h1 bid="session-title">Your session has ended</h1>'
                f'<p bid="session-reason">{text}</p>'
                '<p><a bid="session-restart" href="/">Start a new session</a></p></main></body></html>'), GONE)
        resp.delete_cookie(COOKIE, httponly=True, samesite="Lax")
        resp.headers["Cache-Control"] = "no-store"
        resp.headers[SESSION_HEADER] = found.status
        return resp

    hit_css = hit_stylesheet(bid_attribute).encode("utf-8")

    @flask_app.after_request
    def every_response(resp: Response) -> Response:
        if (resp.status_code == 200 and resp.mimetype == "text/css" and request.method == "GET"
                and request.path.startswith("/static/")):
            # Every stylesheet of the app ends with the engine's hit rule (HIT_CSS).
            resp.direct_passthrough = False
            resp.set_data(resp.get_data() + hit_css)
        # Errors included: a text/plain 400 that quotes what it refused (a task id holding
        # a script) is never sniffed into HTML; a response that did not involve a session
        # (a refusal before any, a static file) says so.
        resp.headers["X-Content-Type-Options"] = "nosniff"
        resp.headers.setdefault(SESSION_HEADER, "none")
        return resp

    @flask_app.errorhandler(HTTPException)
    def http_error(exc: HTTPException) -> Response:
        return error(f"{exc.code} {exc.name}: {exc.description}", exc.code or 400)

    @flask_app.errorhandler(Exception)
    def internal_error(exc: Exception) -> Response:
        # A bug, not bad input: logged in full, answered with one line (never a traceback).
        flask_app.logger.error("internal error on %s %s", request.method, request.path, exc_info=exc)
        return error(f"internal error: {type(exc).__name__}", 500)

    @flask_app.errorhandler(SQLAlchemyError)
    def database_error(exc: SQLAlchemyError) -> Response:
        # The session database refused a read or write (disk full, a locked or read-only
        # file, a server gone): nothing was committed, and the store dropped any cached
        # copy the request had changed. Not the client's fault, and worth a retry.
        reason = " ".join(str(getattr(exc, "orig", None) or exc).split())[:200]
        flask_app.logger.error("session database error on %s %s: %s", request.method, request.path, reason)
        resp = error(f"the session database cannot be used right now ({reason}); nothing was changed, "
                     f"try again", 503)
        resp.headers["Retry-After"] = "5"
        return resp

    @flask_app.errorhandler(LimitError)
    def limit_error(exc: LimitError) -> Response:
        return error(str(exc), exc.status)

    @flask_app.before_request
    def bounded_body() -> Response | None:
        """Read a body once, within the limit (a chunked body over it is a 413, never a
        truncated one), and hand it on from memory."""
        environ = request.environ
        if request.method in ("GET", "HEAD", "OPTIONS"):
            return None
        data = read_body(environ["wsgi.input"], request.content_length, limits.max_body)
        environ["wsgi.input"] = io.BytesIO(data)
        environ["CONTENT_LENGTH"] = str(len(data))
        environ.pop("wsgi.input_terminated", None)
        environ.pop("HTTP_TRANSFER_ENCODING", None)
        return None

    # ------------------------------------------------------------------ control
    def authorized() -> bool | None:
        """True: the right token; False: a wrong one; None: none sent."""
        header = request.headers.get("Authorization")
        if header is None:
            return None
        scheme, _, given = header.partition(" ")
        if scheme.lower() != "bearer" or token is None:
            return False
        try:   # compared as bytes: compare_digest refuses non-ASCII str
            sent = given.strip().encode("latin-1")   # a WSGI header is its bytes as Latin-1
        except UnicodeEncodeError:
            return False
        return hmac.compare_digest(sent, token.encode("utf-8"))

    def control_gate(write: bool) -> Response | None:
        if not control:
            return error("control endpoints are switched off on this server", 404)
        if write:
            origin = request.headers.get("Origin")
            if origin is not None and origin != f"{request.scheme}://{request.host}":
                return error(f"cross-origin write from {origin} refused", 403)
            if request.headers.get("Sec-Fetch-Site", "same-origin") not in ("same-origin", "none"):
                return error("cross-site write refused", 403)
        auth = authorized()
        if auth is False or (write and not auth):
            resp = error("a valid control token is required (Authorization: Bearer <token>)", 401)
            resp.headers["WWW-Authenticate"] = 'Bearer realm="simweb"'
            return resp
        if write and request.mimetype != "application/json":
            return error("the body must be application/json", 415)
        return None

    def json_body(limit: int) -> Any:
        data = request.get_data()
        if len(data) > limit:
            raise LimitError(f"request body of {len(data)} bytes is over the limit of {limit} bytes")
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise LimitError(f"not valid JSON: {exc}", 400) from None

    def write_session(state: dict) -> Response:
        """Store a validated ``state`` as the session of the request's cookie (a new
        established session when there is no cookie)."""
        sid = request.cookies.get(COOKIE)
        if sid is None:
            return finish(json_response({"ok": True}), store.create(state, established=True), "new")
        with store.lock(sid):
            found = store.load(sid)
            if found.state is None:
                return gone(found)
            if not store.save(sid, state, establish=not found.established):
                return gone(Lookup(None, "evicted"))
        return finish(json_response({"ok": True}), None, "live")

    @flask_app.get("/_simweb/state")
    def get_state() -> Response:
        refused = control_gate(write=False)
        if refused is not None:
            return refused
        full = authorized() is True
        sid = request.cookies.get(COOKIE)
        if sid is None:
            state, status = served.fresh_state(task, seed), "none"
        else:
            with store.lock(sid):
                found = store.load(sid)
                if found.state is None:
                    return gone(found)
                body = orjson.dumps(found.state if full else redacted(found.state))
                if not found.established and request.method == "GET":   # a HEAD changes nothing
                    store.touch(sid, establish=True)
            resp = Response(body, mimetype="application/json")
            if not full:
                resp.headers[REDACTED_HEADER] = "meta.task, meta.rng"
            return finish(resp, None, "live")
        resp = json_response(state if full else redacted(state))
        if not full:
            resp.headers[REDACTED_HEADER] = "meta.task, meta.rng"
        return finish(resp, None, status)

    @flask_app.post("/_simweb/state")
    def put_state() -> Response:
        refused = control_gate(write=True)
        if refused is not None:
            return refused
        state = json_body(limits.max_state)
        try:
            served.check(state)   # validated before any lock is taken: other sessions never wait
        except StateError as exc:
            return error(str(exc), 400)
        return write_session(state)

    @flask_app.post("/_simweb/close")
    def close() -> Response:
        """End the session of the request's cookie (a harness's teardown): its cookie is
        told ``closed`` from now on."""
        refused = control_gate(write=True)
        if refused is not None:
            return refused
        sid = request.cookies.get(COOKIE)
        if sid is None:
            return error("no session cookie: there is no session to close", 400)
        with store.lock(sid):
            found = store.load(sid)
            if found.state is None:
                return gone(found)
            store.close_session(sid)
        resp = json_response({"ok": True})
        resp.delete_cookie(COOKIE, httponly=True, samesite="Lax")
        resp.headers["Cache-Control"] = "no-store"
        resp.headers[SESSION_HEADER] = "closed"
        return resp

    @flask_app.post("/_simweb/reset")
    def reset() -> Response:
        refused = control_gate(write=True)
        if refused is not None:
            return refused
        body = json_body(64 * 1024) if request.get_data() else {}
        if not isinstance(body, dict):
            return error("the body must be a JSON object", 400)
        t, s = body.get("task"), body.get("seed", 0)
        if t is not None and not isinstance(t, str):
            return error(f"task must be a task id (a string), not {type(t).__name__}", 400)
        if t is not None and t not in sim.tasks:
            return error(f"unknown task '{t}'", 400)
        if not isinstance(s, int) or isinstance(s, bool) or not -2**63 <= s < 2**63:
            return error("seed must be an integer (64-bit)", 400)
        v = body.get("variant")
        if v is not None:
            from ..runtime.variants import VariantError, catalogue

            try:
                v = catalogue(sim).check(v)
            except VariantError as exc:
                return error(str(exc), 400)
        state = served.fresh_state(t, s, v)
        resp = write_session(state)
        if resp.status_code == 200:
            tab = state["browser"]["tabs"][state["browser"]["active"]]
            resp.set_data(orjson.dumps({"ok": True, "url": tab["url"] if tab["url"] != "about:blank" else "/"}))
        return resp

    # ------------------------------------------------------------------ pages
    # GET /_simweb/start?task=&seed=: the start URL of a task instance (WebGym's `website`).
    install_start_route(flask_app, served, COOKIE, bid_attribute)

    @flask_app.get("/favicon.ico")
    def favicon() -> Response:
        return Response(status=204)

    def run(state: dict, url: str) -> Response:
        """One request of the simulated site on ``state`` (changes it)."""
        if request.method == "POST":
            form = {k: (v if len(v) > 1 else v[0]) for k, v in request.form.lists()}
            # A page opened in another window of the same session posts from there.
            referrer = request.referrer
            ref_path = None
            if referrer:
                try:
                    parts = urlsplit(referrer)
                except ValueError:   # unparseable (an unclosed IPv6 bracket): as a foreign Referer
                    parts = None
                if parts is not None and parts.netloc == request.host:
                    ref_path = parts.path + (f"?{parts.query}" if parts.query else "")
            resp = sim.submit(state, url, form, referrer=ref_path)
            if resp.location is None:
                # The page shown again, as the in-process browser shows it.
                html = sim.navigate(state, state["browser"]["tabs"][state["browser"]["active"]]["url"],
                                    push=False).html
                out = make_response(page_html(html), resp.status)
                if resp.status == 405:   # no form of this site posts here
                    out.headers["Allow"] = "GET, HEAD"
                return out
        else:
            resp = sim.navigate(state, url, follow=False)
            if resp.location is None:
                return make_response(page_html(resp.html), resp.status)
        location = local_path(_encode_unsafe(resp.location))
        if location is None:
            return error("refused a redirect off this site", 400)
        out = Response(status=303)
        out.headers["Location"] = location
        return out

    def size_refusal(n: int) -> Response:
        return error(f"this request would grow the session's state to {n} bytes, over the limit of "
                     f"{limits.max_state} bytes", 413)

    def over_limits(state: dict, blob: bytes) -> Response | None:
        """The refusal of a request whose transitions made a state the server would itself
        refuse (too large, a list or object with too many entries, too deep), so every
        session's state can be posted back and read back after a restart; None if fine."""
        if len(blob) > limits.max_state:
            return size_refusal(len(blob))
        try:
            check_shape(state, limits)   # one linear pass, as the size above
        except LimitError as exc:
            return error(f"this request would grow the session's state past a limit: {exc}", 413)
        return None

    @flask_app.route("/", defaults={"path": ""}, methods=["GET", "POST"])
    @flask_app.route("/<path:path>", methods=["GET", "POST"])
    def page(path: str) -> Response:
        t0 = time.perf_counter()
        resp = handle_page()
        # How long the site took (session load, transitions, render, save): standard
        # Server-Timing, so a client can tell serving cost from network cost.
        resp.headers["Server-Timing"] = f"app;dur={(time.perf_counter() - t0) * 1e3:.3f}"
        return resp

    def handle_page() -> Response:
        path, query = request_target(request.environ)
        url = path + (f"?{query}" if query else "")
        if len(url) > limits.max_url:
            return error(f"URL of {len(url)} characters is over the limit of {limits.max_url}", 414)
        head = request.method == "HEAD"
        sid = request.cookies.get(COOKIE)
        if sid is None and request.method == "POST" and sim.spec.match_event(path) is None:
            # No form of this site posts here, and a browser with no session has no page to
            # show again: a short 405, and no session for it.
            resp = error(f"405 Method Not Allowed: {path} takes no form posts", 405)
            resp.headers["Allow"] = "GET, HEAD"
            return finish(resp, None, "none")
        if sid is None:
            state = served.fresh_state(task, seed)
            resp = run(state, url)
            if head:   # HEAD never changes a state, nor makes a session
                return finish(resp, None, "none")
            blob = orjson.dumps(state)
            refusal = over_limits(state, blob)
            if refusal is not None:
                return refusal
            return finish(resp, store.create(state, established=False), "new")
        with store.lock(sid):
            found = store.load(sid)
            if found.state is None:
                return gone(found)
            if head:
                return finish(run(deep_copy(found.state), url), None, "live")
            try:
                resp = run(found.state, url)
                blob = orjson.dumps(found.state)
            except BaseException:
                store.forget(sid)   # the next request starts from the last committed state
                raise
            refusal = over_limits(found.state, blob)
            if refusal is not None:
                store.forget(sid)   # the state stays as it was
                return refusal
            if not store.save(sid, found.state, blob=blob, establish=not found.established):
                return gone(Lookup(None, "evicted"))
        return finish(resp, None, "live")

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
