"""What every handler of the omnibox server (:mod:`simweb.serving.omnibox.server`) shares:
its replies in the real master's formats, the ``x-api-key`` check, query parameters read
as FastAPI reads them (422 when missing), the node's reading of an instance id, and the
error handlers of the ``errors`` blueprint.

A handler finds its :class:`~simweb.serving.omnibox.server.OmniboxServer` with
:func:`omnibox` and stops early by raising :class:`Reply` with the response to send."""
from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from flask import Blueprint, Response, current_app, request
from werkzeug.exceptions import HTTPException as WerkzeugHTTPException

from .instance import BrowserInstance

if TYPE_CHECKING:
    from .server import OmniboxServer

NO_CAPACITY = "No available nodes with capacity to create new instance"


def dumps(obj: Any) -> bytes:
    # Starlette's JSONResponse rendering (compact, UTF-8, no NaN), which clients may embed.
    return json.dumps(obj, ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":")).encode("utf-8")


def json_reply(obj: Any, status: int = 200) -> Response:
    return Response(dumps(obj), status=status, mimetype="application/json")


def detail(message: Any, status: int) -> Response:
    """The master's (FastAPI's) error body: ``{"detail": ...}``."""
    return json_reply({"detail": message}, status)


def failure(message: str, status: int) -> Response:
    """The relayed error body of a node or an extension: ``{"status": "error", "message"}``."""
    return json_reply({"status": "error", "message": message}, status)


def internal() -> Response:
    return Response(b"Internal Server Error", status=500, mimetype="text/plain")


class Reply(Exception):
    """Stop handling a request and send ``response``."""

    def __init__(self, response: Response):
        self.response = response


def missing(name: str, where: str = "query") -> dict[str, Any]:
    return {"type": "missing", "loc": [where, name], "msg": "Field required", "input": None}


def omnibox() -> OmniboxServer:
    """The omnibox server of the current request (``flask_app.extensions["omnibox"]``)."""
    server: OmniboxServer = current_app.extensions["omnibox"]
    return server


def route(blueprint: Blueprint, rule: str, methods: list[str], key: bool = True) -> Callable:
    """Add the decorated handler at ``rule``: the API key is checked first (unless ``key``
    is False), and a :class:`Reply` raised on the way is the response."""
    def wrap(fn: Callable[[], Response]) -> Callable[[], Response]:
        def handler() -> Response:
            try:
                if key:
                    check_key()
                return fn()
            except Reply as reply:
                return reply.response

        blueprint.add_url_rule(rule, fn.__name__, handler, methods=methods)
        return fn

    return wrap


def check_key() -> None:
    key = request.headers.get("x-api-key")
    if not key:
        raise Reply(detail("API Key is missing", 401))
    if key != omnibox().api_key:
        raise Reply(detail("Invalid API Key.", 401))


def query(*names: str) -> list[str]:
    errors = [missing(n) for n in names if n not in request.args]
    if errors:
        raise Reply(detail(errors, 422))
    return [request.args[n] for n in names]


def node_known(node: Any) -> None:
    if node != omnibox().node:
        raise Reply(detail(f"Node {node} is not found", 400))


def at_port(instance_id: Any) -> BrowserInstance | None:
    """The node's reading of ``<uuid>:<port>``: None when no instance is on that port;
    a malformed id is the node's unhandled error (a plain 500)."""
    if not isinstance(instance_id, str) or instance_id.count(":") != 1:
        raise Reply(internal())
    port = instance_id.split(":")[1]
    if not port.isdigit():
        raise Reply(internal())
    return omnibox().pool.instance_at(int(port))


def json_body() -> Any:
    data = request.get_data()
    if not data:
        raise Reply(detail([{"type": "missing", "loc": ["body"], "msg": "Field required", "input": None}], 422))
    try:
        return json.loads(data)
    except ValueError as exc:
        raise Reply(detail([{"type": "json_invalid", "loc": ["body", getattr(exc, "pos", 0)],
                             "msg": "JSON decode error", "input": {},
                             "ctx": {"error": getattr(exc, "msg", str(exc))}}], 422)) from None


errors = Blueprint("errors", __name__)


@errors.app_errorhandler(WerkzeugHTTPException)
def http_error(exc: WerkzeugHTTPException) -> Response:
    names = {404: "Not Found", 405: "Method Not Allowed", 413: "Request Entity Too Large"}
    return detail(names.get(exc.code or 500, exc.name), exc.code or 500)


@errors.app_errorhandler(Exception)
def unexpected(exc: Exception) -> Response:
    return internal()
