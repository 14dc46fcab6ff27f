"""Served mode: an app under Flask for a real browser.

Each browser gets its own simulated session (a state document) keyed by an unguessable
cookie; every request drives the same spec transitions as the in-process browser
(``App.navigate`` for GET, ``App.submit`` for POST, then a 303 redirect, as the apps work
without JavaScript). ``GET /_simweb/state`` returns the session's state and
``POST /_simweb/state`` restores one (fork in the browser); ``POST /_simweb/reset`` starts a
task instance exactly as ``env.reset`` does. No session can read or change another's.
"""
from __future__ import annotations

import re
import secrets
import threading
from collections import OrderedDict
from importlib import resources
from typing import Any
from urllib.parse import urlsplit

import orjson
from flask import Flask, Response, make_response, redirect, request

from .app import App, load_app
from .omnibox.start import install_start_route
from .registry import definition
from .state import StateError

COOKIE = "simweb_session"
MAX_SESSIONS = 2000


class Sessions:
    """Session id -> state, bounded (least recently used dropped first), one lock each."""

    def __init__(self, app: App, task: str | None, seed: int, max_sessions: int = MAX_SESSIONS):
        self.app = app
        self.task = task
        self.seed = seed
        self.max = max_sessions
        self._states: OrderedDict[str, dict] = OrderedDict()
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def fresh_state(self, task: str | None, seed: int) -> dict:
        """The state ``env.reset(seed, options={"task": task})`` starts from (same cache)."""
        from .env import episode_start
        from .state import deep_copy

        return deep_copy(episode_start(self.app, task, seed).state)

    def get(self, sid: str | None) -> tuple[str, dict, threading.Lock]:
        with self._guard:
            if sid is None or sid not in self._states:
                sid = secrets.token_urlsafe(24)
                self._states[sid] = self.fresh_state(self.task, self.seed)
                self._locks[sid] = threading.Lock()
                while len(self._states) > self.max:
                    old, _ = self._states.popitem(last=False)
                    self._locks.pop(old, None)
            self._states.move_to_end(sid)
            return sid, self._states[sid], self._locks[sid]

    def put(self, sid: str, state: dict) -> None:
        with self._guard:
            self._states[sid] = state


def create_app(app_name: str, *, world_seed: int = 0, size: int | None = None, task: str | None = None,
               seed: int = 0, bid_attribute: str = "bid") -> Flask:
    """The Flask application serving ``app_name`` (app factory).

    ``bid_attribute`` renames the element-id attribute in served pages: BrowserGym marks
    every page with its own ``bid`` attributes and refuses pages that already carry them,
    so BrowserGym agents want e.g. ``data-simweb-bid``."""
    if not re.fullmatch(r"[a-z][a-z0-9\-]*", bid_attribute):
        raise ValueError(f"bid attribute {bid_attribute!r} is not a valid attribute name")
    sim = load_app(definition(app_name), world_seed, size, progress=True)
    if task is not None and task not in sim.tasks:
        from .env import TaskError

        raise TaskError(f"unknown task '{task}' (see `simweb tasks {sim.name}`)")
    static = resources.files(sim.definition.package) / "static"
    flask_app = Flask(f"simweb.{sim.name}", static_folder=str(static), static_url_path="/static")
    flask_app.config["MAX_CONTENT_LENGTH"] = 8 * 1024 * 1024
    sessions = Sessions(sim, task, seed)
    flask_app.extensions["simweb"] = sessions

    def session() -> tuple[str, dict, threading.Lock]:
        return sessions.get(request.cookies.get(COOKIE))

    def page_html(html: str | None) -> str:
        # Only templates write ` bid="`: user text is escaped (a quote becomes &#34;).
        html = html or ""
        return html if bid_attribute == "bid" else html.replace(' bid="', f' {bid_attribute}="')

    def finish(resp: Response, sid: str) -> Response:
        resp.set_cookie(COOKIE, sid, httponly=True, samesite="Lax")
        resp.headers["Cache-Control"] = "no-store"
        return resp

    def json_response(obj: Any, status: int = 200) -> Response:
        return Response(orjson.dumps(obj), status=status, mimetype="application/json")

    # GET /_simweb/start?task=&seed=: the start URL of a task instance (WebGym's `website`).
    install_start_route(flask_app, sessions, COOKIE, bid_attribute)

    @flask_app.get("/favicon.ico")
    def favicon() -> Response:
        return Response(status=204)

    @flask_app.get("/_simweb/state")
    def get_state() -> Response:
        sid, state, lock = session()
        with lock:
            return finish(json_response(state), sid)

    @flask_app.post("/_simweb/state")
    def put_state() -> Response:
        sid, _, lock = session()
        try:
            state = orjson.loads(request.get_data())
            sim.check_state(state)
        except orjson.JSONDecodeError as exc:
            return finish(json_response({"error": f"not valid JSON: {exc}"}, 400), sid)
        except StateError as exc:
            return finish(json_response({"error": str(exc)}, 400), sid)
        with lock:
            sessions.put(sid, state)
        return finish(json_response({"ok": True}), sid)

    @flask_app.post("/_simweb/reset")
    def reset() -> Response:
        sid, _, lock = session()
        try:
            body = orjson.loads(request.get_data() or b"{}")
        except orjson.JSONDecodeError as exc:
            return finish(json_response({"error": f"not valid JSON: {exc}"}, 400), sid)
        if not isinstance(body, dict):
            return finish(json_response({"error": "the body must be a JSON object"}, 400), sid)
        t, s = body.get("task"), body.get("seed", 0)
        if t is not None and t not in sim.tasks:
            return finish(json_response({"error": f"unknown task '{t}'"}, 400), sid)
        if not isinstance(s, int):
            return finish(json_response({"error": "seed must be an integer"}, 400), sid)
        state = sessions.fresh_state(t, s)
        with lock:
            sessions.put(sid, state)
        tab = state["browser"]["tabs"][state["browser"]["active"]]
        return finish(json_response({"ok": True, "url": tab["url"] if tab["url"] != "about:blank" else "/"}), sid)

    @flask_app.route("/", defaults={"path": ""}, methods=["GET", "POST"])
    @flask_app.route("/<path:path>", methods=["GET", "POST"])
    def page(path: str) -> Response:
        sid, state, lock = session()
        url = request.path + (f"?{request.query_string.decode('latin-1')}" if request.query_string else "")
        with lock:
            if request.method == "POST":
                form = {k: (v if len(v) > 1 else v[0]) for k, v in request.form.lists()}
                # A page opened in another window of the same session posts from there.
                referrer = request.referrer
                ref_path = None
                if referrer:
                    parts = urlsplit(referrer)
                    if parts.netloc == request.host:
                        ref_path = parts.path + (f"?{parts.query}" if parts.query else "")
                resp = sim.submit(state, url, form, referrer=ref_path)
                if resp.location is None:
                    html = sim.navigate(state, state["browser"]["tabs"][state["browser"]["active"]]["url"],
                                        push=False).html
                    return finish(make_response(page_html(html), resp.status), sid)
                return finish(redirect(resp.location, code=303), sid)
            resp = sim.navigate(state, url, follow=False)
            if resp.location is not None:
                return finish(redirect(resp.location, code=303), sid)
            return finish(make_response(page_html(resp.html), resp.status), sid)

    return flask_app
