"""A client for WebGym's browser server ("Omniboxes" master), using only the standard library.

The protocol facts this client relies on are in ``docs/webgym.md``; in short:

- every request carries ``x-api-key``; every endpoint naming an instance needs both
  ``instance_id`` and ``node`` (a missing one is FastAPI's 422);
- ``POST /get`` -> ``{"instance_id", "node"}``, 503 while no instance is free (for
  several seconds after a release, while the node relaunches Chromium);
- ``GET /screenshot`` -> PNG bytes; in ``set_of_marks`` mode the server also records
  the screenshot's numbering, which ``get_screenshot_info`` returns and every ``*_id``
  command is translated through (:class:`ScreenshotInfo`);
- ``POST /execute`` with ``{"instance_id", "node", "<command>": {args}}``; a failed
  command is HTTP 500 ``{"status": "error", "message": ...}`` (never retried: it ran);
- ``GET /metadata`` -> ``{"width", "height"}`` (served as ``image/png``: read as JSON
  whatever the content type).
"""

from __future__ import annotations

import http.client
import ipaddress
import json
import re
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ACTION_COMMANDS",
    "PNG_SIGNATURE",
    "QUERY_COMMANDS",
    "Element",
    "Instance",
    "OmniboxClient",
    "OmniboxError",
    "PageInfo",
    "Rect",
    "Region",
    "ScreenshotInfo",
    "parse_page_metadata",
    "parse_regions",
    "parse_screenshot_info",
    "parse_text",
    "point_on_rects",
    "role_of",
]

#: Commands that act on the page.
ACTION_COMMANDS = frozenset({
    "visit_page", "back", "click_coords", "click_id", "fill_coords", "fill_id", "select_option",
    "hover_id", "hover_coords", "hover_and_scroll_coords", "keypress", "page_down", "page_up",
    "scroll_id", "sleep", "tab_and_enter",
})
#: Read-only commands (``screenshot`` records the set-of-marks numbering but returns no image).
QUERY_COMMANDS = frozenset({
    "get_page_metadata", "get_screenshot_info", "get_webpage_text", "get_interactive_rects", "screenshot",
})
#: Commands that may be sent twice without harm (a timed-out request is retried).
_IDEMPOTENT = QUERY_COMMANDS | {"visit_page", "hover_id", "hover_coords", "sleep"}

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
NO_SCREENSHOT_INFO = "No screenshot info available"


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
    """A box in viewport pixels."""

    x: float
    y: float
    width: float
    height: float

    def center(self) -> tuple[float, float]:
        """The box centre (what the server clicks for an id command)."""
        return self.x + self.width / 2, self.y + self.height / 2

    @property
    def area(self) -> float:
        return self.width * self.height


@dataclass(frozen=True)
class Region:
    """One interactive region as the server describes it, keyed by its page id."""

    page_id: str
    tag_name: str
    role: str
    aria_name: str
    v_scrollable: bool
    rects: tuple[Rect, ...]

    @property
    def rect(self) -> Rect | None:
        """The first box with an area, if any."""
        return next((r for r in self.rects if r.area > 0), None)


@dataclass(frozen=True)
class Element:
    """One interactive element of a live page, as :class:`~simweb.live.env.LiveEnv` names it.

    ``id`` is the bid shown to the agent; ``page_id`` the server's page id; ``send_id``
    the id an ``*_id`` command must carry to reach this element under the server's
    current id mapping (None when no id reaches it: then only its centre does).
    """

    id: str
    role: str
    name: str = ""
    tag: str = ""
    rect: Rect | None = None
    visible: bool | None = None
    page_id: str = ""
    send_id: str | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False, repr=False)
    #: every box the server reported for the element (``rect`` is the first with an area)
    rects: tuple[Rect, ...] = field(default=(), compare=False, repr=False)

    @property
    def value(self) -> None:
        """The protocol reports no values."""
        return None


@dataclass(frozen=True)
class PageInfo:
    """URL and title of the page, from ``get_page_metadata``."""

    url: str
    title: str
    raw: Any = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class ScreenshotInfo:
    """What the last set-of-marks screenshot recorded (``get_screenshot_info``)."""

    visible: tuple[str, ...]
    above: tuple[str, ...]
    below: tuple[str, ...]
    regions: Mapping[str, Region]
    id_mapping: Mapping[str, str]

    @classmethod
    def empty(cls) -> ScreenshotInfo:
        """No set-of-marks screenshot yet: ids go to the page unchanged."""
        return cls((), (), (), {}, {})

    def resolve(self, sent_id: str) -> str:
        """The page id the server acts on when a command carries ``sent_id``."""
        return self.id_mapping.get(str(sent_id), str(sent_id))

    def numbering(self, viewport: Sequence[int] = (1280, 768)) -> dict[str, str]:
        """``{display id: page id}`` as drawn on the screenshot.

        The mapping itself loses a display id when an off-screen element's page id
        equals it (the identity is written last); the drawn numbering is then rebuilt
        from the regions in page-id order with the annotator's visibility rule.
        """
        drawn = {d: self.id_mapping[d] for d in self.visible if d in self.id_mapping}
        offscreen = set(self.above) | set(self.below)
        if not any(d in offscreen for d in drawn):
            return drawn
        order = [pid for pid, region in self.regions.items() if _counts_visible(region, viewport)]
        if len(order) != len(self.visible):
            return {d: p for d, p in drawn.items() if d not in offscreen}
        return dict(zip(self.visible, order))

    def display_id(self, page_id: str, viewport: Sequence[int] = (1280, 768)) -> str | None:
        """The number the screenshot drew on ``page_id`` (it may not resolve back to it)."""
        for display, pid in self.numbering(viewport).items():
            if pid == page_id:
                return display
        return None

    def send_id(self, page_id: str, viewport: Sequence[int] = (1280, 768)) -> str | None:
        """An id the server resolves to ``page_id``: its display id, else the page id
        itself when the mapping leaves it alone, else None."""
        page_id = str(page_id)
        display = self.display_id(page_id, viewport)
        if display is not None and self.resolve(display) == page_id:
            return display
        if self.resolve(page_id) == page_id:
            return page_id
        return None


def _counts_visible(region: Region, viewport: Sequence[int]) -> bool:
    """The annotator's rule: options and file inputs always; else a box of some area,
    at most 90 % of the screen, whose centre is in the viewport."""
    if region.tag_name in ("option", "input, type=file"):
        return True
    limit = 0.9 * viewport[0] * viewport[1]
    for r in region.rects:
        if r.area <= 0 or r.area > limit:
            continue
        cx, cy = r.center()
        if 0 <= cx < viewport[0]:
            return 0 <= cy < viewport[1]
    return False


def _one_line(text: str, limit: int = 200) -> str:
    text = re.sub(r"\s+", " ", str(text)).strip()
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ----------------------------------------------------------------------------- parsing

#: The page script's tag -> role table (tags it does not list get an empty role).
_TAG_ROLES = {
    "a": "link", "area": "link", "button": "button", "input, type=button": "button",
    "input, type=checkbox": "checkbox", "input, type=email": "textbox", "input, type=number": "spinbutton",
    "input, type=radio": "radio", "input, type=range": "slider", "input, type=reset": "button",
    "input, type=search": "searchbox", "input, type=submit": "button", "input, type=tel": "textbox",
    "input, type=text": "textbox", "input, type=url": "textbox", "search": "search", "select": "combobox",
    "option": "option", "textarea": "textbox",
}
#: Roles for tags the page script leaves without one (as Chromium's accessibility tree names them).
_FALLBACK_ROLES = {
    "input": "textbox", "input, type=password": "textbox", "input, type=date": "textbox",
    "input, type=time": "textbox", "input, type=datetime-local": "textbox", "input, type=month": "textbox",
    "input, type=week": "textbox", "input, type=image": "button", "input, type=file": "button",
    "input, type=color": "button", "summary": "button", "img": "img", "label": "LabelText",
}


def role_of(role: str, tag_name: str) -> str:
    """A region's role: its own, else the page script's tag table, else what the
    accessibility tree calls that tag (``input, type=password`` is a textbox)."""
    role = (role or "").strip()
    if role:
        return role.split()[0]
    tag = (tag_name or "").strip().lower()
    return _TAG_ROLES.get(tag) or _FALLBACK_ROLES.get(tag) or (tag.split(",")[0] if tag else "generic")


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError
    return float(value)


def _rect(d: Any) -> Rect | None:
    if not isinstance(d, Mapping):
        return None
    try:
        x = _number(d.get("x", d.get("left")))
        y = _number(d.get("y", d.get("top")))
        w = _number(d["width"])
        h = _number(d["height"])
    except (KeyError, ValueError, TypeError):
        return None
    return Rect(x, y, w, h)


def _region(page_id: str, d: Mapping[str, Any]) -> Region:
    rects = d.get("rects")
    boxes = tuple(r for r in (_rect(b) for b in (rects if isinstance(rects, list) else [])) if r is not None)
    name = d.get("aria_name", d.get("aria-name", ""))
    return Region(
        page_id=str(page_id),
        tag_name=str(d.get("tag_name") or ""),
        role=str(d.get("role") or ""),
        aria_name=_one_line(name, 500) if isinstance(name, str) else "",
        v_scrollable=bool(d.get("v_scrollable", d.get("v-scrollable", False))),
        rects=boxes,
    )


def parse_regions(result: Any) -> dict[str, Region]:
    """``{page id: Region}`` from a ``get_interactive_rects`` result (or the
    ``interactive_regions`` of a screenshot info).  Unreadable entries are skipped."""
    if not isinstance(result, Mapping):
        raise OmniboxError(f"get_interactive_rects: expected an object keyed by element id, got {type(result).__name__}")
    return {str(k): _region(str(k), v) for k, v in result.items() if isinstance(v, Mapping)}


def parse_screenshot_info(result: Any) -> ScreenshotInfo | None:
    """A ``get_screenshot_info`` result; None for "No screenshot info available"."""
    if isinstance(result, Mapping) and "error" in result and "visible_rects" not in result:
        if str(result["error"]) == NO_SCREENSHOT_INFO:
            return None
        raise OmniboxError(f"get_screenshot_info: {_one_line(result['error'])}")
    if not isinstance(result, Mapping) or not isinstance(result.get("visible_rects"), list):
        raise OmniboxError("get_screenshot_info: expected {visible_rects, rects_above, rects_below, "
                           "interactive_regions, id_mapping}")
    mapping = result.get("id_mapping") or {}
    if not isinstance(mapping, Mapping):
        raise OmniboxError("get_screenshot_info: id_mapping must be an object")
    return ScreenshotInfo(
        visible=tuple(str(v) for v in result.get("visible_rects") or []),
        above=tuple(str(v) for v in result.get("rects_above") or []),
        below=tuple(str(v) for v in result.get("rects_below") or []),
        regions=parse_regions(result.get("interactive_regions") or {}),
        id_mapping={str(k): str(v) for k, v in mapping.items()},
    )


def parse_page_metadata(result: Any) -> PageInfo:
    """URL and title from a ``get_page_metadata`` result (empty strings when absent)."""
    if not isinstance(result, Mapping):
        return PageInfo("", "", result)
    url = result.get("url") or ""
    title = result.get("title") or ""
    if title == "Unknown Page":   # the server's placeholder for a page without a title
        title = ""
    return PageInfo(str(url), str(title), result)


def parse_text(result: Any) -> str:
    """The page text from a ``get_webpage_text`` result ``{"text": ...}``."""
    if isinstance(result, Mapping) and isinstance(result.get("text"), str):
        return result["text"]
    raise OmniboxError("get_webpage_text: expected {\"text\": ...}")


# ----------------------------------------------------------------------------- client

def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _detail(raw: bytes) -> str:
    """The one-line reason in an error body, unwrapping the master's nested text."""
    try:
        value: Any = json.loads(raw)
    except ValueError:
        return _one_line(raw.decode("utf-8", "replace"))
    for _ in range(4):   # {"status","message": "Failed ...: {\"detail\": \"Error executing command: ...\"}"}
        if isinstance(value, Mapping):
            msg = value.get("message", value.get("detail", value.get("error")))
            if isinstance(msg, list):   # FastAPI validation errors
                parts = []
                for item in msg:
                    if isinstance(item, Mapping):
                        loc = ".".join(str(p) for p in item.get("loc", []) if p not in ("query", "body"))
                        parts.append(f"{loc}: {item.get('msg', '')}".strip(": "))
                return _one_line("; ".join(parts) or json.dumps(msg))
            if msg is None:
                return _one_line(json.dumps(value))
            value = msg
        if isinstance(value, str):
            head, sep, tail = value.partition(": ")
            inner = tail if sep and tail[:1] in "{[" else value
            if inner[:1] in "{[":
                try:
                    value = json.loads(inner)
                    continue
                except ValueError:
                    pass
            return _one_line(value.removeprefix("Error executing command: "))
    return _one_line(str(value))


class OmniboxClient:
    """HTTP client of an Omniboxes master.

    Retries: a request turned away before it ran (connection refused, HTTP 429, 502,
    503) is retried up to ``retries`` times with exponential backoff (``backoff *
    2**attempt`` s, at most ``max_backoff``); a timeout or a dropped connection is
    retried only for commands that are safe to repeat; a 500 is a command that ran and
    failed and is never retried.  :meth:`acquire` additionally waits out 503 for up to
    ``acquire_wait_s`` seconds (the node relaunches Chromium after a release).  Every
    failure raises :class:`OmniboxError` with a one-line message.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        timeout: float = 120.0,
        retries: int = 3,
        backoff: float = 0.5,
        max_backoff: float = 8.0,
        acquire_wait_s: float = 30.0,
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
        self.acquire_wait_s = acquire_wait_s
        self._sleep = sleep
        self._simweb: bool | None = None   # whether the server has simweb's extensions (asked once)
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
        retries: int | None = None,
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
        attempts = (self.retries if retries is None else retries) + 1
        for attempt in range(attempts):
            last = attempt == attempts - 1
            request = urllib.request.Request(url, data=data, headers=headers, method=method)
            try:
                with self._opener.open(request, timeout=self.timeout) as resp:
                    return resp.headers.get_content_type(), resp.read()
            except urllib.error.HTTPError as exc:
                status = exc.code
                try:
                    detail = _detail(exc.read())
                except OSError:
                    detail = ""
                if status in (401, 403):
                    raise OmniboxError(f"{what}: HTTP {status}: {detail or 'unauthorized'} (check the API key)", status) from None
                if status not in (429, 502, 503) or last:
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

    def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        """A request whose body is JSON, whatever its content type says."""
        what = kwargs.get("what") or f"{method} {path}"
        content_type, raw = self._request(method, path, **kwargs)
        try:
            return json.loads(raw)
        except ValueError:
            raise OmniboxError(f"{what}: the response is not JSON ({content_type}, {len(raw)} bytes)") from None

    # -- master endpoints

    def acquire(self, lifetime_mins: int = 60) -> Instance:
        """Get a browser instance (``POST /get``), waiting out 503 for up to ``acquire_wait_s``."""
        waited = 0.0
        attempt = 0
        while True:
            try:
                value = self._json("POST", "/get", params={"lifetime_mins": lifetime_mins}, idempotent=False, retries=0)
                break
            except OmniboxError as exc:
                if exc.status != 503 or waited >= self.acquire_wait_s:
                    if exc.status == 503:
                        raise OmniboxError(f"{exc} (waited {waited:g} s)", 503) from None
                    raise
            pause = min(self.max_backoff, self.backoff * (2 ** attempt), max(self.acquire_wait_s - waited, 0.0))
            self._sleep(pause)
            waited += pause
            attempt += 1
        if not isinstance(value, Mapping) or not value.get("instance_id") or not value.get("node"):
            raise OmniboxError(f"POST /get: expected {{instance_id, node}}, got {_one_line(json.dumps(value))}")
        return Instance(str(value["instance_id"]), str(value["node"]))

    def release(self, instance: Instance) -> Any:
        """Release an instance (``POST /reset``)."""
        return self._json("POST", "/reset", params=instance.params())

    def screenshot(self, instance: Instance, interaction_mode: str = "set_of_marks") -> bytes:
        """The viewport as PNG bytes (``GET /screenshot``); ``set_of_marks`` also makes the
        server record the numbering that ``*_id`` commands then go through."""
        params = dict(instance.params(), interaction_mode=interaction_mode)
        content_type, raw = self._request("GET", "/screenshot", params=params)
        if not raw.startswith(PNG_SIGNATURE):
            raise OmniboxError(f"GET /screenshot: the response is not a PNG image ({content_type}, {len(raw)} bytes)")
        return raw

    def metadata(self, instance: Instance) -> dict[str, Any]:
        """Viewport metadata ``{"width", "height"}`` (``GET /metadata``)."""
        value = self._json("GET", "/metadata", params=instance.params())
        if not isinstance(value, Mapping):
            raise OmniboxError("GET /metadata: expected a JSON object")
        return dict(value)

    def viewport(self, instance: Instance) -> tuple[int, int]:
        """``(width, height)`` from :meth:`metadata`."""
        meta = self.metadata(instance)
        try:
            return int(meta["width"]), int(meta["height"])
        except (KeyError, TypeError, ValueError):
            raise OmniboxError(f"GET /metadata: no width/height in {_one_line(json.dumps(meta))}") from None

    def probe(self, instance: Instance) -> bool:
        """Whether the instance answers (``GET /probe``)."""
        value = self._json("GET", "/probe", params=instance.params())
        return isinstance(value, Mapping) and value.get("status") == "success"

    def info(self) -> Any:
        """``GET /info``: the master's view of nodes and instances."""
        return self._json("GET", "/info")

    # -- execute

    def execute(self, instance: Instance, command: str, args: Mapping[str, Any] | None = None) -> Any:
        """Run one command on an instance (``POST /execute``) and return its JSON result.

        A failed command (HTTP 500) raises :class:`OmniboxError` with the server's reason.
        """
        if command not in ACTION_COMMANDS and command not in QUERY_COMMANDS:
            raise ValueError(f"unknown Omniboxes command {command!r}")
        body = {"instance_id": instance.instance_id, "node": instance.node, command: dict(args or {})}
        return self._json("POST", "/execute", body=body, idempotent=command in _IDEMPOTENT, what=f"execute {command}")

    def take_screenshot(self, instance: Instance, interaction_mode: str = "set_of_marks") -> None:
        """The ``screenshot`` command: records the set-of-marks numbering, returns no image."""
        value = self.execute(instance, "screenshot", {"interaction_mode": interaction_mode})
        if not (isinstance(value, Mapping) and value.get("status") == "screenshot_taken"):
            raise OmniboxError(f"execute screenshot: expected {{\"status\": \"screenshot_taken\"}}, got "
                               f"{_one_line(json.dumps(value))}")

    def page_metadata(self, instance: Instance) -> PageInfo:
        """URL and title of the current page."""
        return parse_page_metadata(self.execute(instance, "get_page_metadata"))

    def interactive_rects(self, instance: Instance) -> dict[str, Region]:
        """The interactive regions of the current page, by page id."""
        return parse_regions(self.execute(instance, "get_interactive_rects"))

    def screenshot_info(self, instance: Instance) -> ScreenshotInfo | None:
        """The last set-of-marks screenshot's numbering; None before any."""
        return parse_screenshot_info(self.execute(instance, "get_screenshot_info"))

    def webpage_text(self, instance: Instance, n_lines: int = 100) -> str:
        """The first ``n_lines`` lines of the page's text, blank lines dropped."""
        return parse_text(self.execute(instance, "get_webpage_text", {"n_lines": int(n_lines)}))

    # -- simweb's extensions (a `simweb omnibox` server; WebGym's answers them 404)

    def has_simweb_extensions(self) -> bool:
        """Whether the server answers simweb's ``/simweb/`` extensions (asked once: an
        HTTP answer is remembered, a transport failure is asked again next time)."""
        if self._simweb is None:
            try:
                self._json("GET", "/simweb/apps", retries=0)
                self._simweb = True
            except OmniboxError as exc:
                if exc.status is None:
                    return False
                self._simweb = False
        return self._simweb

    def locate(self, instance: Instance, page_id: str, scroll: bool = False) -> dict[str, Any] | None:
        """Where the element with page id ``page_id`` is (``GET /simweb/locate``):
        ``{"center", "on_center", "point", ...}``, ``point`` inside one of its client rects
        (None if covered or off-screen); ``scroll`` first brings it to the middle of the
        viewport. None when the server has no such extension or no such element."""
        if not self.has_simweb_extensions():
            return None
        params = dict(instance.params(), element_id=str(page_id), scroll=int(bool(scroll)))
        try:
            found = self._json("GET", "/simweb/locate", params=params, retries=0)
        except OmniboxError:
            return None
        return dict(found) if isinstance(found, Mapping) else None


def _contains(rect: Rect, x: float, y: float) -> bool:
    return rect.x <= x < rect.x + rect.width and rect.y <= y < rect.y + rect.height


def point_on_rects(rects: Sequence[Rect], viewport: Sequence[int]) -> tuple[float, float] | None:
    """A point inside one of an element's client rects, where the centre of their bounding
    box lies in none of them (a link wrapped over two lines): the centre of the first rect
    whose centre is in the viewport. None when the bounding box's centre is on a rect (a
    click there reaches the element), or for a single box: WebGym's page script reports the
    bounding box alone, and then its centre is all the protocol says."""
    boxes = [r for r in rects if r.area > 0]
    if len(boxes) < 2:
        return None
    left, top = min(r.x for r in boxes), min(r.y for r in boxes)
    right, bottom = max(r.x + r.width for r in boxes), max(r.y + r.height for r in boxes)
    cx, cy = (left + right) / 2, (top + bottom) / 2
    if any(_contains(r, cx, cy) for r in boxes):
        return None
    for r in boxes:
        x, y = r.center()
        if 0 <= x < viewport[0] and 0 <= y < viewport[1]:
            return x, y
    return None


def centre_in_viewport(rect: Rect | None, viewport: Sequence[int]) -> bool:
    """Whether a box's centre lies in the viewport (the set-of-marks visibility rule)."""
    if rect is None or rect.area <= 0:
        return False
    cx, cy = rect.center()
    return 0 <= cx < viewport[0] and 0 <= cy < viewport[1]
