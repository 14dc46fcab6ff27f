"""A fake Omniboxes master for offline tests of live clients, answering as the real one does.

It serves a small in-memory site, ``http://shop.example`` (a home page, a long product
list, product pages, a contact form with a select, a sign-in form with a password
field), on a pool of fake browser instances, and reproduces the real server's shapes
(``docs/webgym.md``) so that a client test fails where the real server would fail it:

- ``/get`` -> ``{"instance_id": "<uuid>:<port>", "node": "<hash>"}``; 503 ``{"detail"}``
  when the pool is empty and, after a release, for the next ``relaunch_gets`` calls
  (the node relaunching Chromium);
- ``/reset``, ``/probe``, ``/metadata``, ``/screenshot``: ``instance_id`` and ``node``
  required (FastAPI's 422 without them, 400 for an unknown node); ``/metadata`` is JSON
  labelled ``image/png``; a release keeps the instance's set-of-marks numbering;
- ``/execute``: exactly one command; a failure is HTTP 500 ``{"status": "error",
  "message": "Failed to execute command: {\\"detail\\":\\"Error executing command:
  ..."}``; the ``screenshot`` command answers ``{"status": "screenshot_taken"}``;
- regions ``{tag_name, role, aria_name, v_scrollable, rects}`` keyed by page ids from
  10 up (per page load), tags such as ``input, type=password`` with the page script's
  (possibly empty) role, no ``href``/``value``/parent; options listed only while their
  select is focused, with an all-zero box;
- set-of-marks numbering as the annotator does it (display ids 1..N, off-screen
  identities written last, so a display id equal to an off-screen page id is
  re-mapped), used by every ``*_id`` command; ``get_screenshot_info`` before any
  set-of-marks screenshot is 200 ``{"error": "No screenshot info available"}``;
- ``select_option`` reads only ``{"id"}``; ``fill_*`` press Enter by default;
  ``get_webpage_text`` takes ``n_lines`` (100), keeps that many lines, drops blank ones.

    with FakeOmnibox(api_key="k") as server:
        env = LiveEnv(OmniboxClient(server.url, "k"))

``FakeOmnibox(app="shopping")`` serves a simweb app instead (run in-process, one env per
instance, at ``http://shopping.simweb.localhost``; ``/_simweb/start?task=<id>&seed=<n>``
starts a task), so a sim run and a run through the protocol can be compared.

Or from a shell: ``python -m simweb.live.fake_server --port 8765 --api-key k``.
:attr:`FakeOmnibox.requests` logs every request; :meth:`FakeOmnibox.fail_next` makes
the next requests fail with a given HTTP status.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import struct
import threading
import urllib.parse
import zlib
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .omnibox import ACTION_COMMANDS, PNG_SIGNATURE, QUERY_COMMANDS

__all__ = ["PRODUCTS", "SITE", "FakeOmnibox", "tiny_png"]

SITE = "http://shop.example"
VIEWPORT = (1280, 768)
_COMMANDS = ACTION_COMMANDS | QUERY_COMMANDS
_ROW_Y, _ROW_H, _TOP = 40, 30, 60     # the fake layout: one element a row
#: The product list (long enough to scroll and to overlap display ids with page ids).
PRODUCTS = tuple(f"Item {i:02d}" for i in range(1, 31))
_ROLES = {  # the page script's tag -> role table (password and untyped inputs are absent)
    "a": "link", "button": "button", "input, type=text": "textbox", "input, type=search": "searchbox",
    "select": "combobox", "option": "option", "textarea": "textbox",
}


def tiny_png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    """A valid PNG of one colour, built with zlib and struct."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    row = b"\x00" + bytes(rgb) * width
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (PNG_SIGNATURE + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(row * height, 1)) + chunk(b"IEND", b""))


class _Fail(Exception):
    """An error the real server answers with ``status`` and a FastAPI ``detail``."""

    def __init__(self, status: int, detail: Any) -> None:
        super().__init__(str(detail))
        self.status = status
        self.detail = detail


class _CommandError(Exception):
    """A command that raised on the instance: the master answers 500 with the wrapped text."""


@dataclass(frozen=True)
class _El:
    tag: str                 # the page script's tag_name ("input, type=password")
    name: str
    href: str | None = None  # a link's target (never reported: regions carry no href)
    select: int | None = None  # an option's select (index in the page's element list)
    action: str | None = None  # what a button submits


@dataclass
class _Page:
    title: str
    text: str
    elements: list[_El]
    meta: dict[str, str] = field(default_factory=dict)


def _page(url: str) -> _Page:
    parts = urllib.parse.urlsplit(url)
    path = parts.path or "/"
    home = _El("a", "Home", "/")
    if path == "/":
        return _Page("Fake Shop", "Welcome to Fake Shop\n\nEverything here is fake.\n   \nProducts\nContact\nSign in",
                     [_El("a", "Products", "/products"), _El("a", "Contact", "/contact"),
                      _El("a", "Sign in", "/signin")], {"description": "A fake shop"})
    if path == "/products":
        lines = ["Products", ""] + [f"{name} - ${9 + i}.99" for i, name in enumerate(PRODUCTS)]
        lines += [f"Footnote {i}" for i in range(1, 101)]
        return _Page("Products - Fake Shop", "\n".join(lines),
                     [home, _El("a", "Contact", "/contact")]
                     + [_El("a", name, f"/products/{i + 1}") for i, name in enumerate(PRODUCTS)])
    if path.startswith("/products/"):
        try:
            i = int(path.rsplit("/", 1)[1]) - 1
            name = PRODUCTS[i]
        except (ValueError, IndexError):
            return _Page("Not Found", "404 Not Found", [home])
        return _Page(f"{name} - Fake Shop", f"{name}\n\nPrice: ${9 + i}.99\nIn stock: {40 + i}",
                     [home, _El("a", "Products", "/products")])
    if path == "/contact":
        return _Page("Contact - Fake Shop", "Contact us\nWe answer within a day.", [
            home,
            _El("input, type=text", "Name"),
            _El("select", "Topic"),
            _El("button", "Send", action="contact"),
            _El("option", "Sales", select=2),      # options are labelled after every other element
            _El("option", "Support", select=2),
        ])
    if path == "/contact/sent":
        query = urllib.parse.parse_qs(parts.query)
        name = query.get("name", [""])[0]
        topic = query.get("topic", [""])[0]
        return _Page("Sent - Fake Shop", f"Message sent\nThanks, {name}!\nTopic: {topic}", [home])
    if path == "/signin":
        return _Page("Sign in - Fake Shop", "Sign in\nUse your shop account.", [
            home, _El("input, type=text", "Username"), _El("input, type=password", "Password"),
            _El("button", "Sign in", action="signin"),
        ])
    if path == "/account":
        user = urllib.parse.parse_qs(parts.query).get("user", [""])[0]
        return _Page("Account - Fake Shop", f"Signed in as {user}", [home])
    return _Page("Not Found", "404 Not Found", [home])


def _region(el: _El, rect: dict[str, float]) -> dict[str, Any]:
    return {"tag_name": el.tag, "role": _ROLES.get(el.tag, ""), "aria_name": el.name, "v_scrollable": False,
            "rects": [rect]}


def _box(x: float, y: float, w: float, h: float) -> dict[str, float]:
    return {"x": x, "y": y, "width": w, "height": h, "top": y, "right": x + w, "bottom": y + h, "left": x}


def set_of_marks(regions: dict[str, dict[str, Any]], viewport: tuple[int, int] = VIEWPORT) -> dict[str, Any]:
    """The annotator's numbering of ``regions`` (page id -> region, in page-id order)."""
    visible: list[str] = []
    above: list[str] = []
    below: list[str] = []
    limit = viewport[0] * viewport[1] * 0.9
    for pid, roi in regions.items():
        if roi["tag_name"] in ("option", "input, type=file"):
            visible.append(pid)
            continue
        for r in roi["rects"]:
            area = r["width"] * r["height"]
            if area == 0 or area > limit:
                continue
            mx, my = (r["right"] + r["left"]) / 2, (r["top"] + r["bottom"]) / 2
            if 0 <= mx < viewport[0]:
                (above if my < 0 else below if my >= viewport[1] else visible).append(pid)
                break
    mapping: dict[str, str] = {}
    shown = []
    for n, pid in enumerate(visible, start=1):
        mapping[str(n)] = pid
        shown.append(str(n))
    for pid in above + below:   # written last: an equal display id is overwritten
        mapping[pid] = pid
    return {"visible_rects": shown, "rects_above": above, "rects_below": below,
            "interactive_regions": regions, "id_mapping": mapping}


@dataclass
class _Browser:
    """One fake instance: a single tab, its history, the page's form state and focus, and
    the last set-of-marks numbering (kept across releases, as the real instance keeps it)."""

    port: int
    uuid: str = ""
    leased: bool = False
    url: str = "about:blank"
    history: list[str] = field(default_factory=list)
    values: dict[int, str] = field(default_factory=dict)
    topic: str = ""
    focus: int | None = None
    scroll_y: int = 0
    som: dict[str, Any] | None = None

    @property
    def instance_id(self) -> str:
        return f"{self.uuid}:{self.port}"

    def relaunch(self, uuid: str) -> None:
        """What a release does: a new browser on about:blank (the numbering stays)."""
        self.uuid, self.leased = uuid, False
        self.url, self.history, self.values, self.topic, self.focus, self.scroll_y = "about:blank", [], {}, "", None, 0

    def page(self) -> _Page:
        return _Page("", "", []) if self.url == "about:blank" else _page(self.url)

    def rect(self, index: int) -> dict[str, float]:
        return _box(40, _TOP + _ROW_Y * index - self.scroll_y, 240, _ROW_H)

    def listed(self) -> list[int]:
        """Indexes of the elements the page script lists (options only while their select has focus)."""
        return [i for i, e in enumerate(self.page().elements) if e.tag != "option" or e.select == self.focus]

    def regions(self) -> dict[str, dict[str, Any]]:
        els = self.page().elements
        return {str(10 + i): _region(els[i], _box(0, 0, 0, 0) if els[i].tag == "option" else self.rect(i))
                for i in self.listed()}

    def by_id(self, sent: Any, what: str) -> int:
        """The element an ``*_id`` command reaches: through the numbering, then by page id."""
        pid = str(sent)
        if self.som is not None:
            pid = self.som["id_mapping"].get(pid, pid)
        try:
            index = int(pid) - 10
        except ValueError:
            index = -1
        if index not in self.listed():
            raise _CommandError(f"Element with identifier {pid} not found or not visible")
        if self.page().elements[index].tag == "option" and what != "select":
            raise _CommandError(f"Element with identifier {pid} not found or not visible")
        return index

    def at(self, x: Any, y: Any) -> int | None:
        for i in self.listed():
            if self.page().elements[i].tag == "option":
                continue
            r = self.rect(i)
            if r["left"] <= float(x) < r["right"] and r["top"] <= float(y) < r["bottom"]:
                return i
        return None

    def visit(self, url: str) -> None:
        """``visit_page``: only the fake shop's host resolves."""
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or parts.netloc != urllib.parse.urlsplit(SITE).netloc:
            raise _CommandError(f"Page.goto: net::ERR_NAME_NOT_RESOLVED at {url}")
        self.go(url)

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

    def submit(self, action: str | None = None) -> None:
        path = urllib.parse.urlsplit(self.url).path
        if path == "/contact" and action in (None, "contact"):
            query = urllib.parse.urlencode({"name": self.values.get(1, ""), "topic": self.topic})
            self.go(f"{SITE}/contact/sent?{query}")
        elif path == "/signin" and action in (None, "signin"):
            self.go(f"{SITE}/account?{urllib.parse.urlencode({'user': self.values.get(1, '')})}")

    def click(self, index: int | None) -> None:
        self.focus = index
        if index is None:
            return
        e = self.page().elements[index]
        if e.tag == "a" and e.href:
            self.go(urllib.parse.urljoin(self.url, e.href))
        elif e.tag == "button":
            self.submit(e.action)

    def type_into(self, index: int | None, value: str, press_enter: bool, delete_existing: bool) -> None:
        self.click(index)   # filling clicks the field's centre first
        if index is None or self.focus != index or not self.page().elements[index].tag.startswith("input"):
            return          # the keystrokes go nowhere
        self.values[index] = value if delete_existing else self.values.get(index, "") + value
        if press_enter:
            self.submit()

    def choose(self, index: int) -> None:
        """Select an option (by its element index)."""
        self.topic = self.page().elements[index].name

    def enter(self) -> None:
        """Enter on the focused element: a field submits its form, a link or button activates."""
        assert self.focus is not None
        e = self.page().elements[self.focus]
        if e.tag.startswith("input"):
            self.submit()
        elif e.tag in ("a", "button"):
            self.click(self.focus)

    def scroll(self, amount: float) -> None:
        height = _TOP + _ROW_Y * len(self.page().elements) + 200
        self.scroll_y = int(min(max(self.scroll_y + amount, 0), max(height - VIEWPORT[1], 0)))

    def screenshot(self, mode: str) -> bytes:
        """The viewport; in set-of-marks mode the numbering is recorded (not when the page
        has no interactive element: the previous numbering then stays)."""
        if mode == "set_of_marks":
            regions = self.regions()
            if regions:
                self.som = set_of_marks(regions)
        digest = hashlib.sha1(f"{self.url}|{self.scroll_y}|{sorted(self.values.items())}|{self.topic}|{mode}"
                              .encode()).digest()
        return tiny_png(320, 192, (digest[0], digest[1], digest[2]))

    # -- commands, as the Playwright instance runs them

    def run(self, command: str, args: dict[str, Any]) -> Any:
        if command == "visit_page":
            self.visit(str(args["url"]))
        elif command == "back":
            self.back()
        elif command == "click_id":
            self.click(self.by_id(args["id"], "click"))
        elif command == "click_coords":
            self.click(self.at(float(args["x"]), float(args["y"])))
        elif command in ("fill_id", "fill_coords"):
            index = (self.by_id(args["id"], "fill") if command == "fill_id"
                     else self.at(float(args["x"]), float(args["y"])))
            self.type_into(index, str(args["value"]), bool(args.get("press_enter", True)),
                           bool(args.get("delete_existing", False)))
        elif command == "select_option":
            index = self.by_id(args["id"], "select")
            e = self.page().elements[index]
            if e.tag == "option":   # no box: selected programmatically, then the select is blurred
                self.choose(index)
                self.focus = None
            else:                   # it has a box: clicked, which only focuses a select
                self.click(index)
        elif command in ("hover_id", "scroll_id"):
            self.by_id(args["id"], "hover")
            if command == "scroll_id":
                str(args["direction"]).lower()
        elif command in ("hover_coords",):
            float(args["x"]), float(args["y"])
        elif command == "hover_and_scroll_coords":
            float(args["x"]), float(args["y"])
            self.scroll(-100 if str(args.get("direction", "down")).lower() == "up" else 100)
        elif command in ("page_down", "page_up"):
            amount = VIEWPORT[1] - 50 if args.get("full_page", False) else float(args.get("amount", 200))
            self.scroll(amount if command == "page_down" else -amount)
        elif command == "keypress":
            keys = [str(k) for k in args["keys"]]
            if keys and keys[-1].lower() == "enter" and self.focus is not None:
                self.enter()
        elif command == "tab_and_enter":
            listed = [i for i in self.listed() if self.page().elements[i].tag != "option"]
            after = [i for i in listed if self.focus is None or i > self.focus]
            self.focus = after[0] if after else listed[0] if listed else None
            if self.focus is not None:
                self.enter()
        elif command == "sleep":
            float(args["duration"])
        elif command == "get_page_metadata":
            page = self.page()
            out: dict[str, Any] = {"title": page.title or "Unknown Page", "url": self.url}
            if page.meta:
                out["meta_tags"] = dict(page.meta)
            return out
        elif command == "get_interactive_rects":
            return self.regions()
        elif command == "get_screenshot_info":
            return self.som if self.som is not None else {"error": "No screenshot info available"}
        elif command == "get_webpage_text":
            lines = self.page().text.split("\n")[: int(args.get("n_lines", 100))]
            return {"text": "\n".join(line for line in lines if line.strip())}
        elif command == "screenshot":
            self.screenshot(str(args.get("interaction_mode", "set_of_marks")))
            return {"status": "screenshot_taken"}
        else:
            raise _CommandError(f"Unsupported command: {command}")
        return {"status": "success"}


#: The page script's full tag -> role table (used for simweb app pages).
_SCRIPT_ROLES = {
    "a": "link", "area": "link", "button": "button", "input, type=button": "button",
    "input, type=checkbox": "checkbox", "input, type=email": "textbox", "input, type=number": "spinbutton",
    "input, type=radio": "radio", "input, type=range": "slider", "input, type=reset": "button",
    "input, type=search": "searchbox", "input, type=submit": "button", "input, type=tel": "textbox",
    "input, type=text": "textbox", "input, type=url": "textbox", "select": "combobox", "option": "option",
    "textarea": "textbox",
}
_TEXT_TYPES = {None, "text", "search", "email", "tel", "url", "number", "password", "date", "time"}


class _AppBrowser(_Browser):
    """A fake instance whose pages are a simweb app's, run by an in-process env.

    The regions are what the page script would list on the served page: links, buttons,
    inputs (not hidden), selects and text areas in document order, then every select's
    options (labelled last, listed while their select has focus); names approximate the
    page script's (``aria-label``, else the accessible name simweb computes).  Actions
    become the env's BrowserGym actions on the elements' bids.  ``/_simweb/start?task=
    &seed=`` starts that task (signed in and set up), as a served app's start URL does.
    """

    def __init__(self, port: int, uuid: str, app: str, world_seed: int, size: int | None) -> None:
        super().__init__(port=port, uuid=uuid)
        from simweb.web.browsing import origin

        from ..episodes.env import SimEnv

        self.env = SimEnv(app, seed=world_seed, size=size) if size else SimEnv(app, seed=world_seed)
        self.origin = origin(app)
        self.env.reset(seed=0, options={"task": None})
        self._cache: tuple[str, _Page, list[Any]] | None = None

    def _elements(self) -> tuple[_Page, list[Any]]:
        """The page as the fake lists it, and per element (simweb element, option value)."""
        html = self.env.browser.html()
        if self._cache is not None and self._cache[0] == html:
            return self._cache[1], self._cache[2]
        page = self.env.browser.page()
        els: list[_El] = []
        refs: list[Any] = []
        selects: list[tuple[int, Any]] = []
        for e in page.elements.values():
            if e.disabled or e.hidden or not e.bid:
                continue
            if e.tag == "input" and (e.input_type or e.attrs.get("type")) == "hidden":
                continue
            if not (e.tag in ("button", "select", "textarea", "input") or (e.tag == "a" and e.href is not None)):
                continue
            tag = f"input, type={e.attrs['type']}" if e.tag == "input" and "type" in e.attrs else e.tag
            els.append(_El(tag, e.attrs.get("aria-label") or e.name))
            refs.append((e, None))
            if e.tag == "select":
                selects.append((len(els) - 1, e))
        for index, e in selects:      # options are labelled after every other element
            for value, label, _selected in e.options:
                els.append(_El("option", label, select=index))
                refs.append((e, value))
        text = []
        for line in self.env.observe()[0]["axtree"].splitlines()[1:]:
            m = re.search(r"'((?:[^'\\]|\\.)*)'|\"((?:[^\"\\]|\\.)*)\"", line)
            if m and (m.group(1) or m.group(2)):
                text.append(m.group(1) or m.group(2))
        out = _Page(page.title, "\n".join(text), els)
        self._cache = (html, out, refs)
        return out, refs

    def page(self) -> _Page:
        return _Page("", "", []) if self.url == "about:blank" else self._elements()[0]

    def _bid(self, index: int) -> str:
        return self._elements()[1][index][0].bid

    def _act(self, action: str, loads: bool = True) -> None:
        """Run one env action; when ``loads`` and the page changed, a new document is
        shown (nothing has focus, scrolled to the top), as after a link or a form post."""
        before = self.env.browser.html()
        obs, *_ = self.env.step(action)
        self.url = obs["url"]
        if loads and self.env.browser.html() != before:
            self.focus, self.scroll_y = None, 0
        if obs["last_action_error"]:
            raise _CommandError(obs["last_action_error"])

    def relaunch(self, uuid: str) -> None:
        super().relaunch(uuid)
        self.env.reset(seed=0, options={"task": None})
        self._cache = None

    def visit(self, url: str) -> None:
        parts = urllib.parse.urlsplit(url)
        if f"{parts.scheme}://{parts.netloc}" != self.origin:
            raise _CommandError(f"Page.goto: net::ERR_NAME_NOT_RESOLVED at {url}")
        self.focus, self.scroll_y, self.values = None, 0, {}
        if parts.path == "/_simweb/start":
            query = urllib.parse.parse_qs(parts.query)
            try:
                task, seed = query["task"][0], int(query.get("seed", ["0"])[0])
                obs, _ = self.env.reset(seed=seed, options={"task": task})
            except (KeyError, ValueError) as exc:
                raise _CommandError(f"the start URL needs ?task=<id>&seed=<n>: {exc}") from None
            self.url = obs["url"]
            return
        self._act(f"goto({url!r})")

    def back(self) -> None:
        self.focus, self.scroll_y = None, 0
        self._act("go_back()")

    def click(self, index: int | None) -> None:
        self.focus = index
        if index is None:
            return
        e = self.page().elements[index]
        typed = e.tag.partition("type=")[2] or None
        if e.tag in ("select", "textarea") or (e.tag.startswith("input") and typed in _TEXT_TYPES):
            return                      # a click focuses a field or opens a select
        self._act(f"click({self._bid(index)!r})")

    def type_into(self, index: int | None, value: str, press_enter: bool, delete_existing: bool) -> None:
        self.click(index)
        if index is None or self.focus != index:
            return
        e = self.page().elements[index]
        if not (e.tag == "textarea" or e.tag.startswith("input")):
            return
        bid = self._bid(index)
        self._act(f"fill({bid!r}, {value!r})", loads=False)   # select all + type (appending is not modelled)
        if press_enter:
            self._act(f"press({bid!r}, 'Enter')")

    def choose(self, index: int) -> None:
        select, value = self._elements()[1][index]
        self._act(f"select_option({select.bid!r}, {value!r})", loads=False)

    def enter(self) -> None:
        assert self.focus is not None
        e = self.page().elements[self.focus]
        if e.tag == "a" or e.tag == "button" or "submit" in e.tag:
            self.click(self.focus)
        elif e.tag.startswith("input"):
            self._act(f"press({self._bid(self.focus)!r}, 'Enter')")


class FakeOmnibox:
    """A fake Omniboxes master on ``host`` (127.0.0.1) and ``port`` (0: a free one).

    ``max_instances`` browsers form the pool; a release relaunches one and makes the
    next ``relaunch_gets`` calls of ``/get`` answer 503.  With ``app``, the instances
    browse that simweb app (``http://<app>.simweb.localhost``) instead of the fake shop.  ``api_key`` None accepts any
    request; otherwise a missing or wrong ``x-api-key`` gets 401.
    """

    NODE = hashlib.sha1(b"http://127.0.0.1:8000").hexdigest()[:16]

    def __init__(self, api_key: str | None = "test-key", *, max_instances: int = 4, relaunch_gets: int = 2,
                 app: str | None = None, world_seed: int = 0, size: int | None = None,
                 host: str = "127.0.0.1", port: int = 0) -> None:
        self.api_key = api_key
        self.relaunch_gets = relaunch_gets
        self._uuids = 0
        if app is None:
            self.pool: list[_Browser] = [_Browser(port=9100 + i, uuid=self._uuid()) for i in range(max_instances)]
        else:
            self.pool = [_AppBrowser(9100 + i, self._uuid(), app, world_seed, size) for i in range(max_instances)]
        self.requests: list[dict[str, Any]] = []
        self._failures: list[tuple[int, str | None]] = []
        self._busy = 0
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer((host, port), self._handler_class())
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    def _uuid(self) -> str:
        self._uuids += 1
        return f"{self._uuids:08x}-0000-4000-8000-{self._uuids:012x}"

    @property
    def instances(self) -> dict[str, _Browser]:
        """The leased instances by instance id."""
        return {b.instance_id: b for b in self.pool if b.leased}

    @property
    def url(self) -> str:
        """The base URL, e.g. ``http://127.0.0.1:40123``."""
        host, port = self._server.server_address[:2]
        if isinstance(host, bytes):  # typed for AF_UNIX too; this is a TCP server
            host = host.decode()
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
        given) with HTTP ``status`` in the real server's error shape, after the auth check."""
        with self._lock:
            self._failures.extend([(status, command)] * count)

    def commands(self, name: str | None = None) -> list[dict[str, Any]]:
        """The logged ``/execute`` requests, optionally only those of command ``name``."""
        return [r for r in self.requests if r["path"] == "/execute" and (name is None or r.get("command") == name)]

    # -- request handling

    def _handle(self, method: str, path: str, params: dict[str, str], headers: Any, raw: bytes) -> tuple[int, str, bytes]:
        if self.api_key is not None:
            key = headers.get("x-api-key")
            if key != self.api_key:
                return _json(401, {"detail": "API Key is missing" if not key else "Invalid API Key."})
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
                    if status >= 500 and path == "/execute":
                        return _json(status, _wrapped("injected failure"))
                    return _json(status, {"detail": f"injected failure {status}"})
            try:
                return self._route(method, path, params, raw)
            except _Fail as exc:
                return _json(exc.status, {"detail": exc.detail})

    @staticmethod
    def _require(params: dict[str, Any], *names: str) -> None:
        missing = [n for n in names if n not in params]
        if missing:
            raise _Fail(422, [{"type": "missing", "loc": ["query", n], "msg": "Field required", "input": None}
                              for n in missing])

    def _browser(self, params: dict[str, Any], leased: bool = True) -> _Browser:
        if params.get("node") != self.NODE:
            raise _Fail(400, f"Node {params.get('node')} is not found")
        for b in self.pool:
            if b.instance_id == str(params.get("instance_id")) and (b.leased or not leased):
                return b
        raise _Fail(400, f"Invalid instance UUID: {params.get('instance_id')}")

    def _route(self, method: str, path: str, params: dict[str, str], raw: bytes) -> tuple[int, str, bytes]:
        route = (method, path)
        if route == ("POST", "/get"):
            try:
                int(params.get("lifetime_mins", "60"))
            except ValueError:
                raise _Fail(422, [{"type": "int_parsing", "loc": ["query", "lifetime_mins"],
                                   "msg": "Input should be a valid integer"}]) from None
            free = [b for b in self.pool if not b.leased]
            if self._busy > 0 or not free:
                self._busy = max(self._busy - 1, 0)
                raise _Fail(503, "No available nodes with capacity to create new instance")
            free[0].leased = True
            return _json(200, {"instance_id": free[0].instance_id, "node": self.NODE})
        if route == ("POST", "/reset"):
            self._require(params, "instance_id", "node")
            if params["node"] != self.NODE:
                raise _Fail(400, f"Node {params['node']} is not found")
            browser = next((b for b in self.pool if b.leased and b.instance_id == params["instance_id"]), None)
            if browser is None:
                raise _Fail(400, "Instance not in use or already released")
            browser.relaunch(self._uuid())
            self._busy = self.relaunch_gets
            return _json(200, {"status": "success"})
        if route == ("GET", "/screenshot"):
            self._require(params, "instance_id", "node")
            png = self._browser(params).screenshot(params.get("interaction_mode", "set_of_marks"))
            return 200, "image/png", png
        if route == ("GET", "/metadata"):
            self._require(params, "instance_id", "node")
            self._browser(params, leased=False)
            return 200, "image/png", json.dumps({"width": VIEWPORT[0], "height": VIEWPORT[1]}).encode()
        if route == ("GET", "/probe"):
            self._require(params, "instance_id", "node")
            self._browser(params)
            return _json(200, {"status": "success", "message": "Probe successful"})
        if route == ("GET", "/info"):
            leased = sorted(self.instances)
            return _json(200, {"nodes": [{"url": "http://127.0.0.1:8000", "hash": self.NODE, "healthy": True,
                                          "capacity": len(self.pool), "available": len(self.pool) - len(leased),
                                          "instances": leased}]})
        if route == ("POST", "/execute"):
            try:
                body = json.loads(raw or b"null")
            except ValueError:
                raise _Fail(422, [{"type": "json_invalid", "loc": ["body"], "msg": "JSON decode error"}]) from None
            if not isinstance(body, dict):
                raise _Fail(422, [{"type": "dict_type", "loc": ["body"], "msg": "Input should be a valid dictionary"}])
            if "node" not in body or "instance_id" not in body:
                return 500, "text/plain", b"Internal Server Error"
            browser = self._browser(body)
            commands = {k: v for k, v in body.items() if k not in ("node", "instance_id")}
            try:
                if len(commands) != 1:
                    raise _CommandError("Only one command per request is supported")
                command, args = next(iter(commands.items()))
                if not isinstance(args, dict):
                    raise _CommandError(f"'{type(args).__name__}' object has no attribute 'get'")
                result = browser.run(command, args)
            except _CommandError as exc:
                return _json(500, _wrapped(str(exc)))
            except KeyError as exc:          # a missing argument, as Python words it
                return _json(500, _wrapped(repr(exc.args[0]) if exc.args else "KeyError"))
            except (TypeError, ValueError) as exc:
                return _json(500, _wrapped(str(exc)))
            return _json(200, result)
        raise _Fail(404, "Not Found")

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


def _wrapped(reason: str) -> dict[str, str]:
    """The master's 500 body for a command that raised on the instance."""
    inner = json.dumps({"detail": f"Error executing command: {reason}"}, separators=(",", ":"))
    return {"status": "error", "message": f"Failed to execute command: {inner}"}


def _json(status: int, value: Any) -> tuple[int, str, bytes]:
    return status, "application/json", json.dumps(value).encode()


def main(argv: list[str] | None = None) -> None:
    """Serve the fake site until interrupted."""
    parser = argparse.ArgumentParser(description="Serve a fake Omniboxes browser server on 127.0.0.1.")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--api-key", default="test-key")
    parser.add_argument("--max-instances", type=int, default=4)
    parser.add_argument("--app", default=None, help="serve this simweb app instead of the fake shop")
    args = parser.parse_args(argv)
    server = FakeOmnibox(args.api_key, max_instances=args.max_instances, port=args.port, app=args.app)
    site = f"http://{args.app}.simweb.localhost" if args.app else SITE
    print(f"fake Omniboxes at {server.url} (site {site}); Ctrl-C stops", flush=True)
    try:
        server._server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server._server.server_close()


if __name__ == "__main__":
    main()
