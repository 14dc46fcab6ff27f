"""A fake Omniboxes server for offline tests of live agents.

It speaks the Omniboxes master protocol (see :mod:`simweb.live.omnibox`) over HTTP on
127.0.0.1 and serves a tiny in-memory site, ``http://shop.example``: a home page, a
product list and a product page, and a contact form (name textbox, topic select with
option elements, send button) whose submission leads to a thank-you page.  Other hosts
fail like an unresolvable name; unknown paths give a "Not Found" page.

    with FakeOmnibox(api_key="k") as server:
        env = LiveEnv(OmniboxClient(server.url, "k"))

Or from a shell: ``python -m simweb.live.fake_server --port 8765 --api-key k``.

For tests, :attr:`FakeOmnibox.requests` logs every request and
:meth:`FakeOmnibox.fail_next` makes the next requests fail with a given HTTP status.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import struct
import threading
import urllib.parse
import zlib
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .omnibox import ACTION_COMMANDS, PNG_SIGNATURE, QUERY_COMMANDS

__all__ = ["SITE", "FakeOmnibox", "tiny_png"]

SITE = "http://shop.example"
VIEWPORT = (1280, 768)
_PAGE_HEIGHT = 2000
_COMMANDS = ACTION_COMMANDS | QUERY_COMMANDS


def tiny_png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    """A valid PNG of one colour, built with zlib and struct."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    row = b"\x00" + bytes(rgb) * width
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (PNG_SIGNATURE + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(row * height)) + chunk(b"IEND", b""))


class _Fail(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class _El:
    id: str
    tag: str
    role: str
    name: str
    href: str | None = None
    parent: str | None = None


@dataclass
class _Page:
    title: str
    text: str
    elements: list[_El]


def _page(url: str) -> _Page:
    parts = urllib.parse.urlsplit(url)
    path = parts.path or "/"
    home = _El("1", "a", "link", "Home", "/")
    if path == "/":
        return _Page("Fake Shop", "Welcome to Fake Shop\nEverything here is fake.",
                     [_El("1", "a", "link", "Products", "/products"), _El("2", "a", "link", "Contact", "/contact")])
    if path == "/products":
        return _Page("Products - Fake Shop", "Products\nWidget - $9.99\nGadget - $19.99",
                     [home, _El("2", "a", "link", "Widget", "/products/widget"), _El("3", "a", "link", "Contact", "/contact")])
    if path == "/products/widget":
        return _Page("Widget - Fake Shop", "Widget\nPrice: $9.99\nIn stock: 42",
                     [home, _El("2", "a", "link", "Products", "/products")])
    if path == "/contact":
        return _Page("Contact - Fake Shop", "Contact us\nWe answer within a day.", [
            home,
            _El("2", "input", "textbox", "Name"),
            _El("3", "select", "combobox", "Topic"),
            _El("4", "option", "option", "Sales", parent="3"),
            _El("5", "option", "option", "Support", parent="3"),
            _El("6", "button", "button", "Send"),
        ])
    if path == "/contact/sent":
        query = urllib.parse.parse_qs(parts.query)
        name = query.get("name", [""])[0]
        topic = query.get("topic", [""])[0]
        return _Page("Sent - Fake Shop", f"Message sent\nThanks, {name}!\nTopic: {topic}", [home])
    return _Page("Not Found", "404 Not Found", [home])


@dataclass
class _Browser:
    """One fake instance: a single tab with history and the current page's form state."""

    node: str
    lifetime_mins: int
    url: str = "about:blank"
    history: list[str] = field(default_factory=list)
    values: dict[str, str] = field(default_factory=dict)
    topic: str = ""
    focus: str | None = None
    scroll_y: int = 0

    def page(self) -> _Page:
        if self.url == "about:blank":
            return _Page("", "", [])
        return _page(self.url)

    def rect(self, index: int) -> dict[str, float]:
        x, y, w, h = 40, 80 + 48 * index - self.scroll_y, 240, 32
        return {"x": x, "y": y, "width": w, "height": h, "left": x, "top": y, "right": x + w, "bottom": y + h}

    def element(self, eid: Any) -> _El:
        for e in self.page().elements:
            if e.id == str(eid):
                return e
        raise _Fail(400, f"no element with id {eid!r} on {self.url}")

    def at(self, x: Any, y: Any) -> _El | None:
        for i, e in enumerate(self.page().elements):
            r = self.rect(i)
            if r["left"] <= float(x) < r["right"] and r["top"] <= float(y) < r["bottom"]:
                return e
        return None

    def go(self, url: str) -> None:
        self.history.append(url)
        self._load(url)

    def _load(self, url: str) -> None:
        self.url = url
        self.values, self.topic, self.focus, self.scroll_y = {}, "", None, 0

    def back(self) -> None:
        if len(self.history) > 1:
            self.history.pop()
            self._load(self.history[-1])

    def submit(self) -> None:
        if urllib.parse.urlsplit(self.url).path != "/contact":
            return
        query = urllib.parse.urlencode({"name": self.values.get("2", ""), "topic": self.topic})
        self.go(f"{SITE}/contact/sent?{query}")

    def activate(self, e: _El) -> None:
        if e.role == "link" and e.href:
            self.go(urllib.parse.urljoin(self.url, e.href))
        elif e.role == "option":
            self.topic = e.name
        elif e.role == "button":
            self.submit()
        else:
            self.focus = e.id

    def fill(self, e: _El, value: str, press_enter: bool, delete_existing: bool) -> None:
        if e.role != "textbox":
            raise _Fail(400, f"element {e.id!r} ({e.role}) is not editable")
        self.values[e.id] = value if delete_existing else self.values.get(e.id, "") + value
        self.focus = e.id
        if press_enter:
            self.submit()

    def scroll(self, amount: float) -> None:
        self.scroll_y = int(min(max(self.scroll_y + amount, 0), max(_PAGE_HEIGHT - VIEWPORT[1], 0)))

    # -- commands

    def run(self, command: str, args: dict[str, Any]) -> Any:
        if command == "visit_page":
            url = str(args.get("url", ""))
            parts = urllib.parse.urlsplit(url)
            if parts.scheme not in ("http", "https") or parts.netloc != urllib.parse.urlsplit(SITE).netloc:
                raise _Fail(500, f"net::ERR_NAME_NOT_RESOLVED at {url}")
            self.go(url)
        elif command == "back":
            self.back()
        elif command == "click_id":
            self.activate(self.element(args.get("id")))
        elif command == "click_coords":
            hit = self.at(args.get("x", -1), args.get("y", -1))
            if hit is not None:
                self.activate(hit)
        elif command in ("fill_id", "fill_coords"):
            e = self.element(args.get("id")) if command == "fill_id" else self.at(args.get("x", -1), args.get("y", -1))
            if e is None:
                raise _Fail(400, "no editable element at that point")
            self.fill(e, str(args.get("value", "")), bool(args.get("press_enter", False)),
                      bool(args.get("delete_existing", True)))
        elif command == "select_option":
            e = self.element(args.get("id"))
            wanted = args.get("value", args.get("option", args.get("label")))
            if e.role == "option":
                self.topic = e.name
            elif e.role == "combobox" and wanted is not None:
                names = [o.name for o in self.page().elements if o.parent == e.id]
                if wanted not in names:
                    raise _Fail(400, f"no option {wanted!r} in select {e.id!r}")
                self.topic = str(wanted)
            else:
                raise _Fail(400, f"element {e.id!r} is not an option")
        elif command in ("hover_id", "scroll_id"):
            self.element(args.get("id"))
        elif command == "hover_and_scroll_coords":
            self.scroll((VIEWPORT[1] - 50) * (-1 if args.get("direction") == "up" else 1))
        elif command in ("page_down", "page_up"):
            amount = _PAGE_HEIGHT if args.get("full_page") else float(args.get("amount", VIEWPORT[1] - 50))
            self.scroll(amount if command == "page_down" else -amount)
        elif command == "keypress":
            keys = args.get("keys", [])
            keys = [keys] if isinstance(keys, str) else list(keys)
            if "Enter" in keys and self.focus is not None and self.element(self.focus).role == "textbox":
                self.submit()
        elif command == "tab_and_enter":
            if self.focus is not None:
                self.submit()
        elif command == "get_page_metadata":
            page = self.page()
            return {"url": self.url, "title": page.title, "meta_tags": {"og:title": page.title}}
        elif command in ("get_interactive_rects", "get_screenshot_info"):
            regions = self.regions()
            if command == "get_interactive_rects":
                return regions
            visible = [k for k, v in regions.items() if v["rects"][0]["bottom"] > 0 and v["rects"][0]["top"] < VIEWPORT[1]]
            return {"visible_rects": visible, "id_mapping": {}, "interactive_regions": regions}
        elif command == "get_webpage_text":
            return {"text": self.page().text}
        elif command == "screenshot":
            return self.png()
        # hover_coords, sleep: nothing visible changes
        return {"status": "success"}

    def regions(self) -> dict[str, dict[str, Any]]:
        out = {}
        for i, e in enumerate(self.page().elements):
            region: dict[str, Any] = {"tag_name": e.tag, "role": e.role, "aria_name": e.name,
                                      "v_scrollable": False, "h_scrollable": False, "rects": [self.rect(i)]}
            if e.href:
                region["href"] = urllib.parse.urljoin(self.url, e.href)
            if e.parent:
                region["parent_id"] = e.parent
            out[e.id] = region
        return out

    def png(self) -> bytes:
        digest = hashlib.sha1(f"{self.url}|{self.scroll_y}|{sorted(self.values.items())}|{self.topic}".encode()).digest()
        return tiny_png(16, 10, (digest[0], digest[1], digest[2]))


class FakeOmnibox:
    """A fake Omniboxes master bound to ``host`` (127.0.0.1) on ``port`` (0: a free one).

    Use as a context manager or call :meth:`start` / :meth:`stop`.  ``api_key`` None
    accepts any request; otherwise a missing or wrong ``x-api-key`` gets 401.
    """

    def __init__(self, api_key: str | None = "test-key", *, max_instances: int = 4,
                 host: str = "127.0.0.1", port: int = 0) -> None:
        self.api_key = api_key
        self.max_instances = max_instances
        self.instances: dict[str, _Browser] = {}
        self.requests: list[dict[str, Any]] = []
        self._failures: list[tuple[int, str | None]] = []
        self._next_id = 0
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer((host, port), self._handler_class())
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The base URL, e.g. ``http://127.0.0.1:40123``."""
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> FakeOmnibox:
        """Serve in a daemon thread."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02},
                                            name="fake-omnibox", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(5)
            self._thread = None
        self._server.server_close()

    def __enter__(self) -> FakeOmnibox:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def fail_next(self, count: int = 1, status: int = 503, command: str | None = None) -> None:
        """Answer the next ``count`` requests (those of ``/execute`` ``command`` only, if
        given) with HTTP ``status``, after the auth check."""
        with self._lock:
            self._failures.extend([(status, command)] * count)

    def commands(self, name: str | None = None) -> list[dict[str, Any]]:
        """The logged ``/execute`` requests, optionally only those of command ``name``."""
        return [r for r in self.requests if r["path"] == "/execute" and (name is None or r.get("command") == name)]

    # -- request handling

    def _handle(self, method: str, path: str, params: dict[str, str], headers: Any, raw: bytes) -> tuple[int, str, bytes]:
        if self.api_key is not None and headers.get("x-api-key") != self.api_key:
            return _json(401, {"error": "invalid or missing x-api-key"})
        record: dict[str, Any] = {"method": method, "path": path, "params": params}
        if path == "/execute":  # logged even when the request is made to fail
            try:
                body = json.loads(raw)
                record["command"] = next(k for k in body if k not in ("node", "instance_id"))
                record["args"] = body[record["command"]]
            except (ValueError, TypeError, StopIteration, AttributeError):
                pass
        with self._lock:
            self.requests.append(record)
            for i, (status, command) in enumerate(self._failures):
                if command is None or command == record.get("command"):
                    del self._failures[i]
                    return _json(status, {"error": f"injected failure {status}"})
            try:
                return self._route(method, path, params, raw, record)
            except _Fail as exc:
                return _json(exc.status, {"error": str(exc)})

    def _instance(self, params: dict[str, Any]) -> _Browser:
        browser = self.instances.get(str(params.get("instance_id")))
        if browser is None or browser.node != params.get("node", browser.node):
            raise _Fail(404, f"unknown instance {params.get('instance_id')!r}")
        return browser

    def _route(self, method: str, path: str, params: dict[str, str], raw: bytes, record: dict[str, Any]) -> tuple[int, str, bytes]:
        route = (method, path)
        if route == ("POST", "/get"):
            try:
                lifetime = int(params.get("lifetime_mins", "60"))
            except ValueError:
                raise _Fail(400, "lifetime_mins must be an int") from None
            if len(self.instances) >= self.max_instances:
                raise _Fail(503, "no instance available")
            self._next_id += 1
            iid = f"inst-{self._next_id}"
            self.instances[iid] = _Browser(node="node-0", lifetime_mins=lifetime)
            return _json(200, {"instance_id": iid, "node": "node-0"})
        if route == ("POST", "/reset"):
            self._instance(params)
            del self.instances[params["instance_id"]]
            return _json(200, {"status": "ok"})
        if route == ("GET", "/screenshot"):
            return 200, "image/png", self._instance(params).png()
        if route == ("GET", "/metadata"):
            if "instance_id" in params:
                self._instance(params)
            return _json(200, {"width": VIEWPORT[0], "height": VIEWPORT[1]})
        if route == ("GET", "/probe"):
            if "instance_id" in params:
                return _json(200, {"alive": str(params["instance_id"]) in self.instances})
            return _json(200, {"status": "ok"})
        if route == ("GET", "/info"):
            ids = sorted(self.instances)
            return _json(200, {"nodes": [{"hash": "node-0", "instances": ids, "capacity": self.max_instances}],
                               "in_use": ids})
        if route == ("POST", "/execute"):
            try:
                body = json.loads(raw or b"null")
            except ValueError:
                raise _Fail(400, "the body is not JSON") from None
            if not isinstance(body, dict):
                raise _Fail(400, "the body must be a JSON object")
            commands = [k for k in body if k not in ("node", "instance_id")]
            if len(commands) != 1 or commands[0] not in _COMMANDS:
                raise _Fail(400, f"expected exactly one known command, got {commands}")
            command = commands[0]
            args = body[command] if isinstance(body[command], dict) else {}
            result = self._instance(body).run(command, args)
            if isinstance(result, bytes):
                return 200, "image/png", result
            return _json(200, result)
        raise _Fail(404, f"no route {method} {path}")

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _serve(self, method: str) -> None:
                parts = urllib.parse.urlsplit(self.path)
                params = dict(urllib.parse.parse_qsl(parts.query))
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                status, content_type, payload = fake._handle(method, parts.path, params, self.headers, raw)
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                self._serve("GET")

            def do_POST(self) -> None:  # noqa: N802
                self._serve("POST")

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

        return Handler


def _json(status: int, value: Any) -> tuple[int, str, bytes]:
    return status, "application/json", json.dumps(value).encode()


def main(argv: list[str] | None = None) -> None:
    """Serve the fake site until interrupted."""
    parser = argparse.ArgumentParser(description="Serve a fake Omniboxes browser server on 127.0.0.1.")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--api-key", default="test-key")
    parser.add_argument("--max-instances", type=int, default=4)
    args = parser.parse_args(argv)
    server = FakeOmnibox(args.api_key, max_instances=args.max_instances, port=args.port)
    print(f"fake Omniboxes at {server.url} (site {SITE}); Ctrl-C stops", flush=True)
    try:
        server._server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server._server.server_close()


if __name__ == "__main__":
    main()
