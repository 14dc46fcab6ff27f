"""The ``control`` blueprint: the ``/_simweb`` control endpoints of a served app
(documented in :mod:`simweb.serving.server`): read and restore the state of the request's
session, reset it to a task instance, close it.

Writes need the control token (``Authorization: Bearer``), a same-origin request and a
JSON body; reads without the token see the state redacted. Every endpoint works on the
session of the request's own cookie, and only on it. Off (404) with ``control=False``."""
from __future__ import annotations

import hmac
from typing import Any

import orjson
from flask import Blueprint, Response, request

from ...core.limits import LimitError
from ...core.state import StateError
from ..served import COOKIE, REDACTED_HEADER, redacted
from ..sessions import SESSION_HEADER, Lookup
from .responses import error, finish, gone, json_response, served

control = Blueprint("control", __name__)


def authorized() -> bool | None:
    """True: the right token; False: a wrong one; None: none sent."""
    token = served().control_token
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
    """The refusal of a control request (switched off, cross-origin, no or a wrong token,
    not JSON), None if it may go on."""
    if not served().control:
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
    store = served().sessions
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


@control.get("/_simweb/state")
def get_state() -> Response:
    refused = control_gate(write=False)
    if refused is not None:
        return refused
    full = authorized() is True
    sid = request.cookies.get(COOKIE)
    if sid is None:
        return _state_response(served().fresh_state(served().task, served().seed), full, "none")
    store = served().sessions
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


def _state_response(state: dict, full: bool, status: str) -> Response:
    """``state`` as ``GET /_simweb/state`` answers it: whole with the token, else redacted."""
    resp = json_response(state if full else redacted(state))
    if not full:
        resp.headers[REDACTED_HEADER] = "meta.task, meta.rng"
    return finish(resp, None, status)


@control.post("/_simweb/state")
def put_state() -> Response:
    refused = control_gate(write=True)
    if refused is not None:
        return refused
    state = json_body(served().limits.max_state)
    try:
        served().check(state)   # validated before any lock is taken: other sessions never wait
    except StateError as exc:
        return error(str(exc), 400)
    return write_session(state)


@control.post("/_simweb/close")
def close() -> Response:
    """End the session of the request's cookie (a harness's teardown): its cookie is
    told ``closed`` from now on."""
    refused = control_gate(write=True)
    if refused is not None:
        return refused
    sid = request.cookies.get(COOKIE)
    if sid is None:
        return error("no session cookie: there is no session to close", 400)
    store = served().sessions
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


@control.post("/_simweb/reset")
def reset() -> Response:
    refused = control_gate(write=True)
    if refused is not None:
        return refused
    body = json_body(64 * 1024) if request.get_data() else {}
    start = _reset_instance(body)
    if isinstance(start, Response):
        return start
    state = served().fresh_state(*start)
    resp = write_session(state)
    if resp.status_code == 200:
        tab = state["browser"]["tabs"][state["browser"]["active"]]
        resp.set_data(orjson.dumps({"ok": True, "url": tab["url"] if tab["url"] != "about:blank" else "/"}))
    return resp


def _reset_instance(body: Any) -> tuple[str | None, int, int | None] | Response:
    """The task, seed and site variant a reset's ``body`` asks for, or its refusal."""
    sim = served().app
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
        from ...runtime.variants import VariantError, catalogue

        try:
            v = catalogue(sim).check(v)
        except VariantError as exc:
            return error(str(exc), 400)
    return t, s, v
