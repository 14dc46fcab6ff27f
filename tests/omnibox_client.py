"""A minimal client of the Omniboxes master protocol for the tests (standard library only).

It calls the server the way WebGym's ``pickleable_http_functions`` does: ``POST /get``
with ``lifetime_mins``, commands as ``POST /execute`` with the instance merged into the
body, screenshots from ``GET /screenshot``, ``POST /reset`` to release.
"""
from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

KEY = "default_key"


class Reply:
    def __init__(self, status: int, body: bytes, content_type: str, headers: Any = None):
        self.status_code = status
        self.content = body
        self.content_type = content_type
        self.headers = headers if headers is not None else {}

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")

    def json(self) -> Any:
        return json.loads(self.content)


def call(base: str, method: str, path: str, params: dict | None = None, body: Any = None,
         key: str | None = KEY, raw: bytes | None = None) -> Reply:
    url = base + path + ("?" + urllib.parse.urlencode(params) if params else "")
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    req = urllib.request.Request(url, data=data, method=method)
    if key is not None:
        req.add_header("x-api-key", key)
    if data is not None:
        req.add_header("content-type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=120) as resp:
            return Reply(resp.status, resp.read(), resp.headers.get("content-type", ""), resp.headers)
    except urllib.error.HTTPError as exc:
        return Reply(exc.code, exc.read(), exc.headers.get("content-type", ""), exc.headers)


class Master:
    """``MasterClient`` of WebGym, reduced to what an episode needs."""

    def __init__(self, base: str):
        self.base = base

    def get_instance(self, lifetime_mins: int = 45) -> dict:
        reply = call(self.base, "POST", "/get", {"lifetime_mins": lifetime_mins})
        assert reply.status_code == 200, reply.text
        return reply.json()

    def reset_instance(self, instance: dict) -> Reply:
        return call(self.base, "POST", "/reset", instance)

    def execute(self, instance: dict, command: dict) -> Reply:
        return call(self.base, "POST", "/execute", body=dict(command, **instance))

    def screenshot(self, instance: dict, interaction_mode: str = "set_of_marks") -> Reply:
        return call(self.base, "GET", "/screenshot", dict(instance, interaction_mode=interaction_mode))

    def ext(self, method: str, path: str, instance: dict, body: Any = None, **params: Any) -> Reply:
        return call(self.base, method, "/simweb/" + path, dict(instance, **params), body=body)
