"""A client for WebGym's browser server ("Omniboxes"), using only the standard library.

Protocol (master endpoints, every request carries the header ``x-api-key``):

- ``POST /get?lifetime_mins=N`` -> ``{"instance_id", "node"}``
- ``POST /reset?instance_id&node`` releases the instance
- ``GET /screenshot?instance_id&node&interaction_mode`` -> PNG bytes
- ``POST /execute`` with the JSON body ``{"node", "instance_id", "<command>": {args}}``
  holding exactly one command of :data:`ACTION_COMMANDS` or :data:`QUERY_COMMANDS`
- ``GET /metadata`` -> ``{"width": 1280, "height": 768}``; ``GET /probe``; ``GET /info``

The shapes of the query results are not fully specified; the parsers here are tolerant
and assume the following (everything else raises nothing and yields empty values):

- any JSON result may be wrapped in a one-key object ``{"result"|"output"|"data"|"response": ...}``;
  a JSON object with a non-empty ``error``, ``success: false`` or ``status: "error"|"failed"``
  is a failed command;
- ``get_page_metadata``: an object with the page ``url`` (or ``page_url``, ``href``,
  ``location``) and ``title`` (or ``page_title``, or ``meta_tags["og:title"]``);
- ``get_interactive_rects``: either an object mapping element id to a description, or a
  list of descriptions carrying their id (``id``, ``element_id``, ``__elementId``,
  ``bid``); a description has ``role`` and/or ``tag_name``/``tag``, a name (``aria_name``,
  ``aria-name``, ``name``, ``text``, ``label``), optionally ``value``, and a box as
  ``rects: [{x, y, width, height}]``, ``rect``/``bbox`` (object or ``[x, y, w, h]``) or
  top-level ``x, y, width, height``;
- ``get_screenshot_info``: ``{"visible_rects": [ids], "interactive_regions": {id: ...}}``
  (the form WebGym reads), parsed by :func:`parse_elements` as well;
- ``get_webpage_text``: a string, or an object with ``text``/``content``/``webpage_text``;
- the ``screenshot`` query and ``GET /screenshot``: PNG bytes, or JSON carrying a base64 PNG.
"""

from __future__ import annotations

import base64
import http.client
import ipaddress
import json
import re
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ACTION_COMMANDS",
    "QUERY_COMMANDS",
    "Element",
    "Instance",
    "OmniboxClient",
    "OmniboxError",
    "PageInfo",
    "Rect",
    "parse_elements",
    "parse_page_metadata",
    "parse_text",
]

#: Commands that act on the page (not retried after a request may have reached the node).
ACTION_COMMANDS = frozenset({
    "visit_page", "back", "click_coords", "click_id", "fill_coords", "fill_id", "select_option",
    "hover_id", "hover_coords", "hover_and_scroll_coords", "keypress", "page_down", "page_up",
    "scroll_id", "sleep", "tab_and_enter",
})
#: Read-only commands.
QUERY_COMMANDS = frozenset({
    "get_page_metadata", "get_screenshot_info", "get_webpage_text", "get_interactive_rects", "screenshot",
})
# Commands that are safe to send twice.
_IDEMPOTENT = QUERY_COMMANDS | {"visit_page", "hover_id", "hover_coords", "sleep"}

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


class OmniboxError(RuntimeError):
    """A failed Omniboxes call (one-line message); ``status`` is the HTTP status if any."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Instance:
    """A browser instance handed out by ``POST /get``."""

    instance_id: str
    node: str

    def params(self) -> dict[str, str]:
        """The query parameters naming this instance."""
        return {"instance_id": self.instance_id, "node": self.node}


@dataclass(frozen=True)
class Rect:
    """An element's box in viewport pixels."""

    x: float
    y: float
    width: float
    height: float

    def center(self) -> tuple[int, int]:
        """The box centre, rounded to whole pixels."""
        return round(self.x + self.width / 2), round(self.y + self.height / 2)


@dataclass(frozen=True)
class Element:
    """One interactive element of a live page."""

    id: str
    role: str
    name: str = ""
    tag: str = ""
    value: str | None = None
    rect: Rect | None = None
    visible: bool | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False, repr=False)


@dataclass(frozen=True)
class PageInfo:
    """URL and title of the page, from ``get_page_metadata``."""

    url: str
    title: str
    raw: Any = field(default=None, compare=False, repr=False)


def _one_line(text: str, limit: int = 200) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _unwrap(value: Any) -> Any:
    while isinstance(value, Mapping) and len(value) == 1:
        key = next(iter(value))
        if key not in ("result", "output", "data", "response"):
            break
        value = value[key]
    if isinstance(value, str) and value[:1] in "{[":
        try:
            return _unwrap(json.loads(value))
        except ValueError:
            pass
    return value


def _failure(value: Any) -> str | None:
    """The error message of a failed command result, else None."""
    if not isinstance(value, Mapping):
        return None
    err = value.get("error")
    if err:
        return _one_line(err if isinstance(err, str) else json.dumps(err))
    if value.get("success") is False or str(value.get("status", "")).lower() in ("error", "failed", "failure"):
        msg = value.get("message") or value.get("detail") or value.get("output") or "command failed"
        return _one_line(str(msg))
    return None


# ----------------------------------------------------------------------------- parsing

_TAG_ROLES = {
    "a": "link", "button": "button", "select": "combobox", "textarea": "textbox", "option": "option",
    "img": "img", "summary": "button", "details": "group",
}
_INPUT_ROLES = {
    "submit": "button", "button": "button", "reset": "button", "image": "button",
    "checkbox": "checkbox", "radio": "radio", "range": "slider", "search": "searchbox",
    "number": "spinbutton",
}


def _first(d: Mapping[str, Any], *keys: str) -> Any:
    for key in keys:
        value = d.get(key)
        if value not in (None, ""):
            return value
    return None


def _rect_of(d: Mapping[str, Any]) -> Rect | None:
    box: Any = None
    rects = d.get("rects")
    if isinstance(rects, list) and rects:
        box = rects[0]
    box = box if box is not None else _first(d, "rect", "bbox", "bounding_box", "box")
    if box is None and "x" in d and "y" in d:
        box = d
    try:
        if isinstance(box, (list, tuple)) and len(box) == 4:
            return Rect(*(float(v) for v in box))
        if isinstance(box, Mapping):
            x = box.get("x", box.get("left"))
            y = box.get("y", box.get("top"))
            w = box.get("width")
            h = box.get("height")
            if w is None and "right" in box and x is not None:
                w = float(box["right"]) - float(x)
            if h is None and "bottom" in box and y is not None:
                h = float(box["bottom"]) - float(y)
            if None not in (x, y, w, h):
                return Rect(float(x), float(y), float(w), float(h))
    except (TypeError, ValueError):
        return None
    return None


def _element_of(eid: Any, d: Mapping[str, Any], visible: set[str] | None) -> Element | None:
    if eid is None:
        eid = _first(d, "id", "element_id", "__elementId", "bid")
    if eid is None:
        return None
    eid = str(eid)
    tag = str(_first(d, "tag_name", "tag", "tagName") or "").lower()
    role = _first(d, "role")
    if isinstance(role, list):
        role = role[0] if role else None
    if isinstance(role, str) and role.strip():
        role = role.split()[0]
    elif tag == "input":
        role = _INPUT_ROLES.get(str(d.get("type", "")).lower(), "textbox")
    else:
        role = _TAG_ROLES.get(tag, tag or "generic")
    name = _first(d, "aria_name", "aria-name", "name", "text", "label", "innerText", "title")
    value = d.get("value")
    return Element(
        id=eid,
        role=str(role),
        name=_one_line(str(name), 500) if name is not None else "",
        tag=tag,
        value=None if value is None else str(value),
        rect=_rect_of(d),
        visible=None if visible is None else eid in visible,
        raw=d,
    )


def parse_elements(result: Any) -> list[Element]:
    """Elements from a ``get_interactive_rects`` or ``get_screenshot_info`` result.

    Accepts an object keyed by element id, a list of element objects, or WebGym's
    ``{"visible_rects", "interactive_regions"}`` form (then :attr:`Element.visible`
    tells whether the element was in the viewport).  Unreadable entries are skipped.
    """
    result = _unwrap(result)
    visible: set[str] | None = None
    if isinstance(result, Mapping):
        for key in ("interactive_regions", "interactive_rects", "elements", "rects"):
            if key in result and isinstance(result[key], (Mapping, list)):
                if isinstance(result.get("visible_rects"), list):
                    visible = {str(v) for v in result["visible_rects"]}
                result = result[key]
                break
    elements: list[Element] = []
    if isinstance(result, Mapping):
        items = [(k, v) for k, v in result.items() if isinstance(v, Mapping)]
    elif isinstance(result, list):
        items = [(None, v) for v in result if isinstance(v, Mapping)]
    else:
        return elements
    for eid, d in items:
        element = _element_of(eid, d, visible)
        if element is not None:
            elements.append(element)
    return elements


def parse_page_metadata(result: Any) -> PageInfo:
    """URL and title from a ``get_page_metadata`` result (empty strings when absent)."""
    result = _unwrap(result)
    if not isinstance(result, Mapping):
        return PageInfo("", "", result)
    url = _first(result, "url", "page_url", "href", "location") or ""
    title = _first(result, "title", "page_title")
    if title is None and isinstance(result.get("meta_tags"), Mapping):
        title = result["meta_tags"].get("og:title")
    return PageInfo(str(url), str(title or ""), result)


def parse_text(result: Any) -> str:
    """The page text from a ``get_webpage_text`` result."""
    result = _unwrap(result)
    if isinstance(result, str):
        return result
    if isinstance(result, Mapping):
        value = _first(result, "text", "content", "webpage_text", "page_text")
        return value if isinstance(value, str) else ""
    return ""


def _png_of(content_type: str, raw: bytes, what: str) -> bytes:
    if raw.startswith(PNG_SIGNATURE):
        return raw
    if content_type.endswith("json") or raw[:1] in (b"{", b"["):
        try:
            value = _unwrap(json.loads(raw))
        except ValueError:
            value = None
        if isinstance(value, Mapping):
            value = _first(value, "screenshot", "image", "png", "base64")
        if isinstance(value, str):
            value = value.split(",", 1)[1] if value.startswith("data:") else value
            try:
                data = base64.b64decode(value, validate=False)
            except ValueError:
                data = b""
            if data.startswith(PNG_SIGNATURE):
                return data
    raise OmniboxError(f"{what}: the response is not a PNG image ({content_type or 'no content type'}, {len(raw)} bytes)")


# ----------------------------------------------------------------------------- client

def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class OmniboxClient:
    """HTTP client of an Omniboxes master.

    Connection errors, timeouts and 5xx answers are retried up to ``retries`` times with
    exponential backoff (``backoff * 2**attempt`` seconds, at most ``max_backoff``).
    Requests that change the page (clicks, fills, ``/get``...) are retried only when the
    request cannot have run (connection refused, 429, 502, 503), so an action is never
    performed twice.  Every failure raises :class:`OmniboxError` with a one-line
    message.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        timeout: float = 60.0,
        retries: int = 3,
        backoff: float = 0.5,
        max_backoff: float = 8.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        parsed = urllib.parse.urlsplit(base_url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ValueError(f"Omniboxes base URL must be http(s)://host[:port], not {base_url!r}")
        if retries < 0:
            raise ValueError("retries must be >= 0")
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self._sleep = sleep
        # A proxy from the environment must not capture a server on this machine.
        handlers = [urllib.request.ProxyHandler({})] if _is_loopback(parsed.hostname or "") else []
        self._opener = urllib.request.build_opener(*handlers)

    def __repr__(self) -> str:
        return f"OmniboxClient({self.base_url!r})"

    # -- transport

    def _request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        body: Any = None,
        idempotent: bool = True,
        what: str | None = None,
    ) -> tuple[str, bytes]:
        """Send one request with retries; returns (content type, body bytes)."""
        what = what or f"{method} {path}"
        url = self.base_url + path
        if params:
            url += "?" + urllib.parse.urlencode({k: v for k, v in params.items() if v is not None})
        data = json.dumps(body).encode() if body is not None else (b"" if method == "POST" else None)
        headers = {"Accept": "application/json, image/png;q=0.9, */*;q=0.1"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        if self.api_key is not None:
            headers["x-api-key"] = self.api_key
        attempts = self.retries + 1
        for attempt in range(attempts):
            last = attempt == attempts - 1
            request = urllib.request.Request(url, data=data, headers=headers, method=method)
            try:
                with self._opener.open(request, timeout=self.timeout) as resp:
                    return resp.headers.get_content_type(), resp.read()
            except urllib.error.HTTPError as exc:
                status = exc.code
                detail = self._error_detail(exc)
                # 429/502/503: the request was turned away before it ran; other 5xx may have run.
                retry = status in (429, 502, 503) or (idempotent and status >= 500)
                if status in (401, 403):
                    raise OmniboxError(f"{what}: HTTP {status}: {detail or 'unauthorized'} (check the API key)", status) from None
                if not retry or last:
                    tries = f" after {attempt + 1} attempts" if attempt else ""
                    raise OmniboxError(f"{what}: HTTP {status}: {detail or exc.reason}{tries}", status) from None
            except (urllib.error.URLError, http.client.HTTPException, OSError) as exc:
                reason = getattr(exc, "reason", exc)
                refused = isinstance(reason, ConnectionRefusedError)
                if not (idempotent or refused) or last:
                    if isinstance(reason, (socket.timeout, TimeoutError)):
                        reason = f"timed out after {self.timeout:g} s"
                    tries = f" after {attempt + 1} attempts" if attempt else ""
                    raise OmniboxError(f"{what}: cannot reach {self.base_url}: {_one_line(str(reason))}{tries}") from None
            self._sleep(min(self.max_backoff, self.backoff * (2 ** attempt)))
        raise AssertionError("unreachable")  # pragma: no cover

    @staticmethod
    def _error_detail(exc: urllib.error.HTTPError) -> str:
        try:
            raw = exc.read()
        except OSError:
            return ""
        try:
            value = json.loads(raw)
        except ValueError:
            return _one_line(raw.decode("utf-8", "replace"))
        if isinstance(value, Mapping):
            msg = _first(value, "error", "detail", "message")
            if msg is not None:
                return _one_line(msg if isinstance(msg, str) else json.dumps(msg))
        return _one_line(json.dumps(value))

    def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        what = kwargs.get("what") or f"{method} {path}"
        content_type, raw = self._request(method, path, **kwargs)
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            if content_type.startswith("text/"):
                return raw.decode("utf-8", "replace")
            raise OmniboxError(f"{what}: the response is not JSON ({content_type}, {len(raw)} bytes)") from None

    # -- master endpoints

    def acquire(self, lifetime_mins: int = 60) -> Instance:
        """Get a browser instance (``POST /get``)."""
        value = self._json("POST", "/get", params={"lifetime_mins": lifetime_mins}, idempotent=False)
        value = _unwrap(value)
        if not isinstance(value, Mapping) or not value.get("instance_id"):
            raise OmniboxError(f"POST /get: no browser instance available ({_one_line(json.dumps(value))})")
        return Instance(str(value["instance_id"]), str(value.get("node", "")))

    def release(self, instance: Instance) -> Any:
        """Release an instance (``POST /reset``; the server relaunches its browser)."""
        return self._json("POST", "/reset", params=instance.params())

    def screenshot(self, instance: Instance, interaction_mode: str = "coordinates") -> bytes:
        """The current viewport as PNG bytes (``GET /screenshot``)."""
        params = dict(instance.params(), interaction_mode=interaction_mode)
        content_type, raw = self._request("GET", "/screenshot", params=params)
        return _png_of(content_type, raw, "GET /screenshot")

    def metadata(self, instance: Instance | None = None) -> dict[str, Any]:
        """Viewport metadata, e.g. ``{"width": 1280, "height": 768}`` (``GET /metadata``)."""
        value = _unwrap(self._json("GET", "/metadata", params=instance.params() if instance else None))
        if not isinstance(value, Mapping):
            raise OmniboxError("GET /metadata: expected a JSON object")
        return dict(value)

    def viewport(self, instance: Instance | None = None) -> tuple[int, int]:
        """``(width, height)`` from :meth:`metadata`."""
        meta = self.metadata(instance)
        try:
            return int(meta["width"]), int(meta["height"])
        except (KeyError, TypeError, ValueError):
            raise OmniboxError(f"GET /metadata: no width/height in {_one_line(json.dumps(meta))}") from None

    def probe(self, instance: Instance | None = None) -> Any:
        """``GET /probe`` (instance liveness when an instance is given)."""
        return self._json("GET", "/probe", params=instance.params() if instance else None)

    def info(self) -> Any:
        """``GET /info``: the master's view of nodes and instances."""
        return self._json("GET", "/info")

    # -- execute

    def execute(self, instance: Instance, command: str, args: Mapping[str, Any] | None = None) -> Any:
        """Run one command on an instance (``POST /execute``) and return its decoded result.

        JSON results are unwrapped (see the module docstring); an image result is
        returned as bytes.  A result that reports failure raises :class:`OmniboxError`.
        """
        if command not in ACTION_COMMANDS and command not in QUERY_COMMANDS:
            raise ValueError(f"unknown Omniboxes command {command!r}")
        body = {"node": instance.node, "instance_id": instance.instance_id, command: dict(args or {})}
        what = f"execute {command}"
        content_type, raw = self._request("POST", "/execute", body=body, idempotent=command in _IDEMPOTENT, what=what)
        if content_type.startswith("image/") or raw.startswith(PNG_SIGNATURE):
            return raw
        if not raw:
            return None
        try:
            value: Any = json.loads(raw)
        except ValueError:
            value = raw.decode("utf-8", "replace")
        error = _failure(value)
        if error:
            raise OmniboxError(f"{what}: {error}")
        return _unwrap(value)

    def page_metadata(self, instance: Instance) -> PageInfo:
        """URL and title of the current page."""
        return parse_page_metadata(self.execute(instance, "get_page_metadata"))

    def interactive_rects(self, instance: Instance) -> list[Element]:
        """The interactive elements of the current page."""
        return parse_elements(self.execute(instance, "get_interactive_rects"))

    def webpage_text(self, instance: Instance) -> str:
        """The visible text of the current page."""
        return parse_text(self.execute(instance, "get_webpage_text"))
