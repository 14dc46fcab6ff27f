"""The answers the served site's blueprints share: the app being served, a page's HTML
with the server's bid attribute, the session cookie and headers, one-line errors, and the
410 of a session that ended."""
from __future__ import annotations

from typing import Any

import orjson
from flask import Response, current_app, make_response, request

from ..served import COOKIE, GONE, Served
from ..sessions import SESSION_HEADER, Lookup

_GONE_TEXT = {
    "expired": "Your session has expired (it was idle for too long).",
    "evicted": "Your session was closed to make room for newer ones.",
    "closed": "Your session was closed.",
    "unknown": "This server has no session for your cookie (it may have been reset).",
    "incompatible": "Your session was made for another version of this site.",
}


def served() -> Served:
    """The app the current request is served by (``flask_app.extensions["simweb"]``)."""
    ext: Served = current_app.extensions["simweb"]
    return ext


def page_html(html: str | None) -> str:
    # Only templates write ` bid="`: user text is escaped (a quote becomes &#34;).
    bid_attribute = served().bid_attribute
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
            "<!DOCTYPE html><html><head><title>Session ended · " + served().app.spec.title + "</title></head><body>"
            '<main><h1 bid="session-title">Your session has ended</h1>'
            f'<p bid="session-reason">{text}</p>'
            '<p><a bid="session-restart" href="/">Start a new session</a></p></main></body></html>'), GONE)
    resp.delete_cookie(COOKIE, httponly=True, samesite="Lax")
    resp.headers["Cache-Control"] = "no-store"
    resp.headers[SESSION_HEADER] = found.status
    return resp
