"""``GET /_simweb/start?task=<id>&seed=<n>``: a start URL for a task instance.

A WebGym task names its first page in ``website`` and the client simply opens it
(``visit_page``). On a served simweb app, that URL is this route: it resets the visiting
browser's session to the start of the task instance exactly as ``env.reset(seed,
options={"task": id})`` does (signed in, set up, at the task's start page) and answers
with that page. The page is rendered from the session's state, because the reset already
went through the start page's GET, and a small inline script replaces the address with
the start page's URL (``history.replaceState``, no request), so the browser shows the
same URL and history as the in-process env. Without ``task`` the session restarts on
the app's home page. A bad task or seed is a 400 with one line of text.
"""
from __future__ import annotations

import re
from typing import Any

import orjson
from flask import Flask, Response, redirect, request

START_PATH = "/_simweb/start"
_INT = re.compile(r"[+-]?\d{1,18}")


def start_url(task: str | None, seed: int) -> str:
    """The path of the start URL of ``task`` with episode ``seed`` (``website`` of an export:
    see simweb.live.tasks.start_url, which puts a site's base URL before it)."""
    from urllib.parse import urlencode

    query = {"task": task, "seed": int(seed)} if task else {"seed": int(seed)}
    return f"{START_PATH}?{urlencode(query, safe='/')}"


def _address_script(url: str) -> str:
    target = orjson.dumps(url).decode("utf-8").replace("</", "<\\/")
    return f"<script>history.replaceState(null, '', {target});document.currentScript.remove();</script>"


def _with_script(html: str, script: str) -> str:
    at = html.find("<head>")
    if at >= 0:
        at += len("<head>")
        return html[:at] + script + html[at:]
    return script + html


def _restart(sessions: Any, sid: str | None, task: str | None, seed: int) -> tuple[str, dict]:
    """Put session ``sid`` (a new one if it has none) at the start of (task, seed)."""
    state = sessions.fresh_state(task, seed)
    if hasattr(sessions, "set_state"):   # a store with set_state / new_session
        if sid is None or not sessions.set_state(sid, state):
            sid = sessions.new_session(state)
        return sid, state
    sid, _, lock = sessions.get(sid)     # a store with get / put
    with lock:
        sessions.put(sid, state)
    return sid, state


def install_start_route(flask_app: Flask, sessions: Any, cookie: str, bid_attribute: str = "bid") -> None:
    """Add ``GET /_simweb/start`` to a served app built by ``simweb.server.create_app``.

    ``sessions`` is the app's session store (``flask_app.extensions["simweb"]``: its
    ``app``, ``fresh_state(task, seed)``, and either ``set_state`` / ``new_session`` or
    ``get`` / ``put``), ``cookie`` the name of its session cookie."""
    sim = sessions.app

    def plain(message: str, status: int) -> Response:
        return Response(message + "\n", status=status, mimetype="text/plain")

    def start() -> Response:
        task = request.args.get("task") or None
        seed_text = request.args.get("seed", "0").strip()
        if task is not None and task not in sim.tasks:
            return plain(f"unknown task '{task}' (see `simweb tasks {sim.name}`)", 400)
        if not _INT.fullmatch(seed_text):
            return plain(f"seed must be an integer, not {seed_text!r}", 400)
        seed = int(seed_text)
        sid, state = _restart(sessions, request.cookies.get(cookie), task, seed)
        tab = state["browser"]["tabs"][state["browser"]["active"]]
        resp: Any
        if tab["url"] == "about:blank":
            resp = redirect("/", code=303)
        else:
            html = sim.render(state, tab)
            if bid_attribute != "bid":
                html = html.replace(' bid="', f' {bid_attribute}="')
            resp = Response(_with_script(html, _address_script(tab["url"])), status=int(tab["status"] or 200),
                            mimetype="text/html")
        resp.set_cookie(cookie, sid, httponly=True, samesite="Lax")
        resp.headers["Cache-Control"] = "no-store"
        return resp

    flask_app.add_url_rule(START_PATH, "simweb_start", start, methods=["GET"])
