"""The ``errors`` blueprint: errors and limits, for every request of a served app.

A body is read once, within the limit, before any handler runs; an HTTP error, a limit, a
session database that cannot be used and a bug are each answered with one line (JSON on
``/_simweb``, text elsewhere; never a traceback); every response says ``nosniff`` and
carries ``X-Simweb-Session``; every stylesheet of the app ends with the hit rule
(:data:`simweb.serving.site.wire.HIT_CSS`)."""
from __future__ import annotations

import io

from flask import Blueprint, Response, current_app, request
from sqlalchemy.exc import SQLAlchemyError
from werkzeug.exceptions import HTTPException

from ...core.limits import LimitError, read_body
from ..sessions import SESSION_HEADER
from .responses import error, served
from .wire import hit_stylesheet

errors = Blueprint("errors", __name__)


@errors.after_app_request
def every_response(resp: Response) -> Response:
    if (resp.status_code == 200 and resp.mimetype == "text/css" and request.method == "GET"
            and request.path.startswith("/static/")):
        # Every stylesheet of the app ends with the engine's hit rule (HIT_CSS).
        resp.direct_passthrough = False
        resp.set_data(resp.get_data() + hit_stylesheet(served().bid_attribute).encode("utf-8"))
    # Errors included: a text/plain 400 that quotes what it refused (a task id holding
    # a script) is never sniffed into HTML; a response that did not involve a session
    # (a refusal before any, a static file) says so.
    resp.headers["X-Content-Type-Options"] = "nosniff"
    resp.headers.setdefault(SESSION_HEADER, "none")
    return resp


@errors.app_errorhandler(HTTPException)
def http_error(exc: HTTPException) -> Response:
    return error(f"{exc.code} {exc.name}: {exc.description}", exc.code or 400)


@errors.app_errorhandler(Exception)
def internal_error(exc: Exception) -> Response:
    # A bug, not bad input: logged in full, answered with one line (never a traceback).
    current_app.logger.error("internal error on %s %s", request.method, request.path, exc_info=exc)
    return error(f"internal error: {type(exc).__name__}", 500)


@errors.app_errorhandler(SQLAlchemyError)
def database_error(exc: SQLAlchemyError) -> Response:
    # The session database refused a read or write (disk full, a locked or read-only
    # file, a server gone): nothing was committed, and the store dropped any cached
    # copy the request had changed. Not the client's fault, and worth a retry.
    reason = " ".join(str(getattr(exc, "orig", None) or exc).split())[:200]
    current_app.logger.error("session database error on %s %s: %s", request.method, request.path, reason)
    resp = error(f"the session database cannot be used right now ({reason}); nothing was changed, "
                 f"try again", 503)
    resp.headers["Retry-After"] = "5"
    return resp


@errors.app_errorhandler(LimitError)
def limit_error(exc: LimitError) -> Response:
    return error(str(exc), exc.status)


@errors.before_app_request
def bounded_body() -> Response | None:
    """Read a body once, within the limit (a chunked body over it is a 413, never a
    truncated one), and hand it on from memory."""
    environ = request.environ
    if request.method in ("GET", "HEAD", "OPTIONS"):
        return None
    data = read_body(environ["wsgi.input"], request.content_length, served().limits.max_body)
    environ["wsgi.input"] = io.BytesIO(data)
    environ["CONTENT_LENGTH"] = str(len(data))
    environ.pop("wsgi.input_terminated", None)
    environ.pop("HTTP_TRANSFER_ENCODING", None)
    return None
