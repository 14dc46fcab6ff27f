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

Sessions follow the server's rules: a live session of the request's cookie is restarted
(``X-Simweb-Session: live``; it is established, as its cookie came back); without one
(no cookie, or one naming no live session) a *new* session starts (``new``, with its
cookie), in the budget of sessions whose cookie has not come back, so a crawler
following start links never pushes out a signed-in session. A HEAD changes nothing and
makes no session. The route is a control endpoint: off (404) with ``control=False``.
"""
from __future__ import annotations

import re
from typing import Any

import orjson
from flask import Flask, Response, redirect, request

START_PATH = "/_simweb/start"
#: A seed as the start URL writes it: ASCII digits (``\d`` would take any script's), at
#: most 19 of them, so a 5,000-digit seed is refused before ``int`` is asked to read it.
_INT = re.compile(r"[+-]?[0-9]{1,19}")


def parse_seed(text: str) -> int | None:
    """The seed ``text`` names (surrounding blanks ignored), None unless it is a 64-bit
    integer: every seed ``/_simweb/reset``, ``simweb serve --seed`` and ``env.reset`` take."""
    text = text.strip()
    if not _INT.fullmatch(text):
        return None
    seed = int(text)
    return seed if -2**63 <= seed < 2**63 else None


def start_url(task: str | None, seed: int, variant: int = 0) -> str:
    """The path of the start URL of ``task`` with episode ``seed`` (``website`` of an export:
    see simweb.live.tasks.start_url, which puts a site's base URL before it), on site
    ``variant`` when not 0 (simweb.variants)."""
    from urllib.parse import urlencode

    query: dict[str, Any] = {"task": task, "seed": int(seed)} if task else {"seed": int(seed)}
    if variant:
        query["variant"] = int(variant)
    return f"{START_PATH}?{urlencode(query, safe='/')}"


def episode_of(url: str) -> tuple[str | None, int] | None:
    """The (task, seed) a start URL starts (None for any other URL, or a malformed one)."""
    from urllib.parse import parse_qs, urlsplit

    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if parts.path != START_PATH:
        return None
    q = parse_qs(parts.query)
    seed = parse_seed((q.get("seed") or ["0"])[0])   # read as the route reads it
    if seed is None:
        return None
    tasks = q.get("task")
    return (tasks[0] if tasks else None, seed)


def _address_script(url: str) -> str:
    target = orjson.dumps(url).decode("utf-8").replace("</", "<\\/")
    return f"<script>history.replaceState(null, '', {target});document.currentScript.remove();</script>"


def _with_script(html: str, script: str) -> str:
    at = html.find("<head>")
    if at >= 0:
        at += len("<head>")
        return html[:at] + script + html[at:]
    return script + html


def install_start_route(flask_app: Flask, served: Any, cookie: str, bid_attribute: str = "bid") -> None:
    """Add ``GET /_simweb/start`` to a served app built by ``simweb.server.create_app``.

    ``served`` is the app's :class:`simweb.server.Served` (``flask_app.extensions["simweb"]``:
    its ``app``, ``control``, ``sessions``, ``fresh_state`` and ``start_session``), ``cookie``
    the name of its session cookie."""
    from ..sessions import SESSION_HEADER

    sim = served.app

    def plain(message: str, status: int) -> Response:
        resp = Response(message + "\n", status=status, mimetype="text/plain")
        resp.headers["Cache-Control"] = "no-store"
        resp.headers[SESSION_HEADER] = "none"
        return resp

    def start() -> Response:
        if not served.control:   # it resets sessions and signs visitors in: a control endpoint
            return plain("control endpoints are switched off on this server", 404)
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
        state = served.fresh_state(task, seed, variant)
        tab = state["browser"]["tabs"][state["browser"]["active"]]
        resp: Any
        if tab["url"] == "about:blank":
            resp = redirect("/", code=303)
        else:
            html = sim.render(state, tab)   # a pure function of the state
            if bid_attribute != "bid":
                html = html.replace(' bid="', f' {bid_attribute}="')
            resp = Response(_with_script(html, _address_script(tab["url"])), status=int(tab["status"] or 200),
                            mimetype="text/html")
        sid = request.cookies.get(cookie)
        if request.method == "HEAD":   # HEAD never changes a state, nor makes a session
            live = False
            if sid is not None:
                with served.sessions.lock(sid):
                    live = served.sessions.load(sid).state is not None
            status = "live" if live else "none"
        else:
            new_sid, status = served.start_session(sid, state)
            if new_sid is not None:
                resp.set_cookie(cookie, new_sid, httponly=True, samesite="Lax")
        resp.headers["Cache-Control"] = "no-store"
        resp.headers[SESSION_HEADER] = status
        return resp

    flask_app.add_url_rule(START_PATH, "simweb_start", start, methods=["GET"])
