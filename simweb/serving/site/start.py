"""The ``start`` blueprint: ``GET /_simweb/start?task=<id>&seed=<n>``, the start URL of a
task instance (WebGym's ``website``), as :mod:`simweb.serving.omnibox.start` describes it:
the visiting browser's own session is reset to the start of the instance, exactly as
``env.reset(seed, options={"task": id})`` does, and the start page is answered, with a
small script that puts the start page's URL in the address bar. A control endpoint: off
(404) with ``control=False``; a HEAD changes nothing and makes no session."""
from __future__ import annotations

from typing import Any

import orjson
from flask import Blueprint, Response, redirect, request

from ...runtime.variants import url_scheme
from ..omnibox.start import START_PATH, parse_seed
from ..served import COOKIE
from ..sessions import SESSION_HEADER
from .responses import served

start = Blueprint("start", __name__)


def plain(message: str, status: int) -> Response:
    """A refusal of the start URL: one line of text (JSON is for the API endpoints)."""
    resp = Response(message + "\n", status=status, mimetype="text/plain")
    resp.headers["Cache-Control"] = "no-store"
    resp.headers[SESSION_HEADER] = "none"
    return resp


@start.get(START_PATH)
def start_instance() -> Response:
    if not served().control:   # it resets sessions and signs visitors in: a control endpoint
        return plain("control endpoints are switched off on this server", 404)
    instance = _instance()
    if isinstance(instance, Response):
        return instance
    state = served().fresh_state(*instance)
    resp = _start_page(state)
    sid = request.cookies.get(COOKIE)
    if request.method == "HEAD":   # HEAD never changes a state, nor makes a session
        live = False
        if sid is not None:
            with served().sessions.lock(sid):
                live = served().sessions.load(sid).state is not None
        status = "live" if live else "none"
    else:
        new_sid, status = served().start_session(sid, state)
        if new_sid is not None:
            resp.set_cookie(COOKIE, new_sid, httponly=True, samesite="Lax")
    resp.headers["Cache-Control"] = "no-store"
    resp.headers[SESSION_HEADER] = status
    return resp


def _instance() -> tuple[str | None, int, int | None] | Response:
    """The task, seed and site variant the query asks for, or its refusal."""
    sim = served().app
    task = request.args.get("task") or None
    seed_text = request.args.get("seed", "0")
    if task is not None and task not in sim.tasks:
        return plain(f"unknown task '{task}' (see `simweb tasks {sim.name}`)", 400)
    seed = parse_seed(seed_text)
    if seed is None:
        shown = seed_text.strip()
        shown = repr(shown) if len(shown) <= 40 else f"{shown[:40]!r}... ({len(shown)} characters)"
        return plain(f"seed must be a 64-bit integer (from -2**63 to 2**63-1), not {shown}", 400)
    variant = None
    if "variant" in request.args:   # a site variant (simweb.variants); else the server's
        from ...runtime.variants import VariantError, catalogue

        try:
            variant = catalogue(sim).check(request.args["variant"])
        except VariantError as exc:
            return plain(str(exc), 400)
    return task, seed, variant


def _start_page(state: dict) -> Response:
    """The answer to the start URL for the start ``state``: its page, rendered from the
    state (the reset already went through the page's GET), with the address script."""
    tab = state["browser"]["tabs"][state["browser"]["active"]]
    resp: Any
    if tab["url"] == "about:blank":
        resp = redirect("/", code=303)
    else:
        html = served().app.render(state, tab)   # a pure function of the state
        bid_attribute = served().bid_attribute
        if bid_attribute != "bid":
            html = html.replace(' bid="', f' {bid_attribute}="')
        variant = state["meta"].get("variant", 0)
        scheme = url_scheme(served().app, variant) if variant else None   # the address bar: the variant's URL
        shown = tab["url"] if scheme is None else scheme.to_wire(tab["url"])
        resp = Response(_with_script(html, _address_script(shown)), status=int(tab["status"] or 200),
                        mimetype="text/html")
    return resp


def _address_script(url: str) -> str:
    target = orjson.dumps(url).decode("utf-8").replace("</", "<\\/")
    return f"<script>history.replaceState(null, '', {target});document.currentScript.remove();</script>"


def _with_script(html: str, script: str) -> str:
    at = html.find("<head>")
    if at >= 0:
        at += len("<head>")
        return html[:at] + script + html[at:]
    return script + html
