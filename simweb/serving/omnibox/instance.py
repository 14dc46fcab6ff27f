"""One browser instance of the omnibox pool: a Chromium of its own, driven from one thread.

Playwright's sync API belongs to the thread that started it, so every instance runs a
worker thread that owns its Playwright, its Chromium, one browser context and one page
(single-tab mode, as WebGym's instances run). Other threads hand it work with
:meth:`BrowserInstance.call`. :class:`PageDriver` holds the page operations that the
protocol's commands are made of (:mod:`simweb.omnibox.protocol`); they follow what the
real instance does (which element a click lands on, what a fill types, which regions a
screenshot numbers) but wait for the navigations an action starts instead of sleeping a
fixed ten seconds after each click.

A release restores a clean state without relaunching Chromium: the context is closed and
a new one opened (new cookies, so a new simweb session), which costs tens of
milliseconds where a relaunch costs most of a second (``benchmarks/bench_omnibox.py``).
"""
from __future__ import annotations

import queue
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from ..browser import (
    _APPLY_STATE_JS,
    _EXPECTS_NAVIGATION_JS,
    _LIVE_STATE_JS,
    _NavWatch,
    _safe,
    launch_chromium,
    load_rendered,
)
from .marks import classify, overlay
from .pagescript import CLEAR_MARKS_JS, DRAW_MARKS_JS, METADATA_JS, PAGE_SCRIPT, REGIONS_JS

VIEWPORT = (1280, 768)
#: How long an element command waits for its element (the real server waits 1 to 30 s;
#: simweb pages never add elements after they load).
ELEMENT_WAIT_MS = 1000
NAVIGATION_TIMEOUT_MS = 30_000
#: How long input the DOM does not expect to navigate gets for a navigation to begin anyway
#: (simweb pages have no scripts: links and submit buttons are all that navigate).
UNEXPECTED_NAVIGATION_GRACE_MS = 100
#: Chromium resolves no host name but loopback ones: a simulated web has no outside.
LOOPBACK_ONLY_ARGS = ("--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1",)

#: Key names of computer-use models mapped to Playwright's, as WebGym's controller maps them.
KEY_NAMES = {
    "/": "Divide", "\\": "Backslash", "alt": "Alt", "arrowdown": "ArrowDown", "arrowleft": "ArrowLeft",
    "arrowright": "ArrowRight", "arrowup": "ArrowUp", "backspace": "Backspace", "capslock": "CapsLock",
    "cmd": "Meta", "ctrl": "Control", "delete": "Delete", "end": "End", "enter": "Enter", "esc": "Escape",
    "home": "Home", "insert": "Insert", "option": "Alt", "pagedown": "PageDown", "pageup": "PageUp",
    "shift": "Shift", "space": " ", "super": "Meta", "tab": "Tab", "win": "Meta",
}

_UNTARGET_AT_JS = r"""
([x, y]) => {
  for (let el = document.elementFromPoint(x, y); el; el = el.parentElement) el.removeAttribute('target');
  document.querySelectorAll('a[target=_blank], form[target=_blank]').forEach(e => e.removeAttribute('target'));
}
"""
_UNTARGET_EL_JS = r"""
(el) => {
  el.removeAttribute('target');
  document.querySelectorAll('a[target=_blank], form[target=_blank]').forEach(e => e.removeAttribute('target'));
}
"""
_SELECT_PROGRAMMATIC_JS = r"""
(selector) => {
  const found = Array.from(document.querySelectorAll(selector));
  const option = found.find(el => el.tagName.toLowerCase() === 'option');
  if (option) {
    const select = option.closest('select');
    if (select) {
      option.selected = true;
      select.dispatchEvent(new Event('change', {bubbles: true}));
      select.blur();
    }
    return;
  }
  const el = found[0];
  if (!el) throw new Error('Element not found');
  for (const type of ['mousedown', 'mouseup', 'click', 'change']) el.dispatchEvent(new Event(type, {bubbles: true}));
  if (el.hasAttribute('aria-selected')) el.setAttribute('aria-selected', 'true');
  const value = el.getAttribute('data-value');
  if (value) {
    const parent = el.closest('[role="listbox"], [role="combobox"]');
    if (parent) parent.setAttribute('data-value', value);
  }
}
"""
_SCROLL_ELEMENT_JS = r"""
([selector, direction]) => {
  const el = document.querySelector(selector);
  if (!el) return;
  if (direction == 'up') el.scrollTop = Math.max(0, el.scrollTop - el.clientHeight);
  else if (direction == 'down') el.scrollTop = Math.min(el.scrollHeight - el.clientHeight, el.scrollTop + el.clientHeight);
  else if (direction == 'left') el.scrollLeft = Math.max(0, el.scrollLeft - el.clientWidth);
  else if (direction == 'right') el.scrollLeft = Math.min(el.scrollWidth - el.clientWidth, el.scrollLeft + el.clientWidth);
}
"""
_SCROLL_AT_JS = r"""
([x, y, delta]) => {
  const hit = document.elementFromPoint(x, y);
  if (!hit) return false;
  let box = hit;
  while (box && box !== document.documentElement) {
    const style = getComputedStyle(box);
    if (box.scrollHeight > box.clientHeight && (style.overflowY === 'scroll' || style.overflowY === 'auto')
        && style.pointerEvents !== 'none') break;
    box = box.parentElement;
  }
  if (box && box !== document.documentElement) {
    const before = box.scrollTop, step = Math.floor(box.clientHeight * 0.8);
    box.scrollTop += delta > 0 ? step : -step;
    return box.scrollTop !== before;
  }
  if (hit !== document.documentElement && hit !== document.body) {
    const before = hit.scrollTop;
    hit.scrollTop += delta;
    return hit.scrollTop !== before;
  }
  return false;
}
"""
_LOCATE_JS = r"""
([attr, bid, scroll]) => {
  const el = document.querySelector('[' + attr + '="' + CSS.escape(bid) + '"]');
  if (!el) return null;
  if (scroll) el.scrollIntoView({block: 'center', inline: 'center'});
  const r = el.getBoundingClientRect();
  const on = (x, y) => { const hit = document.elementFromPoint(x, y); return !!hit && (hit === el || el.contains(hit)); };
  // A point on the element itself: the centre of its first uncovered line box (the centre
  // of the bounding box misses a link that wraps onto two lines).
  let point = null;
  for (const q of el.getClientRects()) {
    const x = q.left + q.width / 2, y = q.top + q.height / 2;
    if (on(x, y)) { point = [x, y]; break; }
  }
  const cx = r.left + r.width / 2, cy = r.top + r.height / 2;
  return {element_id: el.getAttribute('__elementId'), center: [cx, cy], on_center: on(cx, cy),
          point: point, rect: JSON.parse(JSON.stringify(r))};
}
"""


def element_selector(identifier: Any) -> str:
    """The CSS selector of the element whose ``__elementId`` is ``identifier``."""
    text = str(identifier).replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\a ")
    return f"[__elementId='{text}']"


class PageDriver:
    """The page operations of one instance (called on the instance's thread only)."""

    def __init__(self, instance: BrowserInstance):
        self.instance = instance

    # ------------------------------------------------------------------ plumbing
    @property
    def page(self) -> Any:
        return self.instance.page

    def ready(self) -> None:
        """Wait for the current document to load (every command starts with this)."""
        _safe(lambda: self.page.wait_for_load_state("load", timeout=NAVIGATION_TIMEOUT_MS))

    def _perform(self, action: Callable[[], Any], expect: bool) -> None:
        """Run raw input, then wait for the navigation it started, if any: the whole
        navigation timeout when the DOM says one is due (a link, a submit button, Enter in
        a form field), a short grace period otherwise."""
        watch = self.instance.watch
        before = watch.requests
        action()
        page = self.page
        grace = NAVIGATION_TIMEOUT_MS if expect else UNEXPECTED_NAVIGATION_GRACE_MS
        end = time.monotonic() + grace / 1000
        while watch.requests == before and time.monotonic() < end:
            page.wait_for_timeout(15)
        end = time.monotonic() + NAVIGATION_TIMEOUT_MS / 1000
        while watch.pending and time.monotonic() < end:
            page.wait_for_timeout(15)
        _safe(lambda: page.wait_for_load_state("load", timeout=NAVIGATION_TIMEOUT_MS))

    def _expects_navigation(self, point: tuple[float, float] | None = None) -> bool:
        try:
            return bool(self.page.evaluate(_EXPECTS_NAVIGATION_JS, list(point) if point else None))
        except Exception:
            return False

    def _wait_visible(self, identifier: Any, timeout_ms: int = ELEMENT_WAIT_MS) -> Any:
        from playwright.sync_api import TimeoutError as PlaywrightTimeout

        selector = element_selector(identifier)
        try:
            self.page.wait_for_selector(selector, state="visible", timeout=timeout_ms)
        except PlaywrightTimeout:
            return None
        return self.page.locator(selector).first

    def _centre_of(self, target: Any) -> tuple[float, float] | None:
        target.scroll_into_view_if_needed()
        box = target.bounding_box()
        if not box:
            return None
        return box["x"] + box["width"] / 2, box["y"] + box["height"] / 2

    # ------------------------------------------------------------------ navigation
    def visit_page(self, url: str) -> None:
        self.ready()
        self.page.goto(url, wait_until="load", timeout=NAVIGATION_TIMEOUT_MS)

    def back(self) -> None:
        self.ready()
        self.page.go_back(wait_until="load", timeout=NAVIGATION_TIMEOUT_MS)

    # ------------------------------------------------------------------ pointer
    def click_coords(self, x: float, y: float) -> None:
        self.ready()
        self.page.evaluate(_UNTARGET_AT_JS, [x, y])
        expect = self._expects_navigation((x, y))
        self._perform(lambda: self.page.mouse.click(x, y, delay=10), expect)

    def click_id(self, identifier: Any) -> None:
        self.ready()
        target = self._wait_visible(identifier)
        if target is None:
            raise ValueError(f"Element with identifier {identifier} not found or not visible")
        centre = self._centre_of(target)
        if centre is None:
            raise ValueError(f"Element with identifier {identifier} is not visible on the page.")
        target.evaluate(_UNTARGET_EL_JS)
        x, y = centre
        expect = self._expects_navigation((x, y))

        def click() -> None:
            self.page.mouse.move(x, y, steps=1)
            self.page.mouse.click(x, y)

        self._perform(click, expect)

    def hover_id(self, identifier: Any) -> None:
        self.ready()
        target = self._wait_visible(identifier)
        if target is None:
            raise RuntimeError(f"Tool use response is invalid: no such element to hover: {identifier}")
        centre = self._centre_of(target)
        if centre is None:
            raise RuntimeError(f"Tool use response is invalid: no such element to hover: {identifier}")
        self.page.mouse.move(*centre)

    def hover_coords(self, x: float, y: float) -> None:
        self.ready()
        self.page.mouse.move(x, y)

    def hover_and_scroll_coords(self, x: float, y: float, direction: str) -> None:
        self.ready()
        self.page.mouse.move(x, y)
        delta = -100 if direction == "up" else 100
        if not self.page.evaluate(_SCROLL_AT_JS, [x, y, delta]):
            self.page.mouse.wheel(0, delta)
        self.page.wait_for_timeout(30)   # let the compositor apply the scroll

    def page_scroll(self, pixels: float) -> None:
        self.ready()
        self.page.mouse.move(10, 10)   # off any scrollable element
        self.page.mouse.wheel(0, pixels)
        self.page.wait_for_timeout(30)

    def scroll_id(self, identifier: Any, direction: str) -> None:
        self.ready()
        self.page.evaluate(_SCROLL_ELEMENT_JS, [element_selector(identifier), direction])

    # ------------------------------------------------------------------ keyboard
    def fill_coords(self, x: float, y: float, value: str, press_enter: bool, delete_existing: bool) -> None:
        self.ready()
        page = self.page
        self._perform(lambda: page.mouse.click(x, y), self._expects_navigation((x, y)))
        if delete_existing:
            page.keyboard.press("ControlOrMeta+A")
            page.keyboard.press("Backspace")
        page.keyboard.type(value)
        if press_enter:
            self._perform(lambda: page.keyboard.press("Enter"), self._expects_navigation())

    def fill_id(self, identifier: Any, value: str, press_enter: bool, delete_existing: bool) -> None:
        self.ready()
        target = self._wait_visible(identifier)
        if target is None:
            raise RuntimeError(f"Tool use response is invalid: No such element to fill input_text into: {identifier}")
        centre = self._centre_of(target)
        if centre is None:
            raise ValueError(f"Element with identifier {identifier} is not visible on the page.")
        target.evaluate(_UNTARGET_EL_JS)
        self.fill_coords(centre[0], centre[1], value, press_enter, delete_existing)

    def keypress(self, keys: Any) -> None:
        self.ready()
        mapped = [KEY_NAMES.get(key.lower(), key) for key in keys]
        enter = bool(mapped) and mapped[-1] == "Enter"
        expect = enter and self._expects_navigation()

        def press() -> None:
            for key in mapped:
                self.page.keyboard.down(key)
            for key in reversed(mapped):
                self.page.keyboard.up(key)

        try:
            self._perform(press, expect)
        except Exception as exc:
            raise RuntimeError(f"I tried to keypress(keys={keys}), but I got an error: {exc}") from None

    def tab_and_enter(self) -> None:
        self.ready()
        self.page.keyboard.press("Tab")
        self._perform(lambda: self.page.keyboard.press("Enter"), self._expects_navigation())

    def select_option(self, identifier: Any) -> None:
        from playwright.sync_api import Error as PlaywrightError
        from playwright.sync_api import TimeoutError as PlaywrightTimeout

        self.ready()
        selector = element_selector(identifier)
        try:
            self.page.wait_for_selector(selector, state="attached", timeout=ELEMENT_WAIT_MS)
        except PlaywrightTimeout:
            raise ValueError(f"No option found with identifier '{identifier}' within 1 seconds.") from None
        try:
            box = self.page.locator(selector).first.bounding_box()
        except PlaywrightError:
            box = None
        if box and box["width"] > 0 and box["height"] > 0:
            self.click_id(identifier)
            return
        # Options of a closed <select> have no box: select programmatically, as WebGym does.
        self.page.evaluate(_SELECT_PROGRAMMATIC_JS, selector)

    def sleep(self, seconds: float) -> None:
        limit = self.instance.max_sleep_s
        if not 0 <= seconds <= limit:
            raise ValueError(f"sleep duration must be between 0 and {limit:g} seconds, not {seconds:g}")
        self.page.wait_for_timeout(seconds * 1000)

    # ------------------------------------------------------------------ queries
    def _script(self) -> None:
        try:
            if not self.page.evaluate("() => !!window.__simwebMarks"):
                self.page.evaluate(PAGE_SCRIPT)
        except Exception:
            pass

    def interactive_regions(self) -> dict[str, Any]:
        self.ready()
        self._script()
        return self.page.evaluate(REGIONS_JS)

    def page_metadata(self) -> dict[str, Any]:
        result: dict[str, Any] = {"title": "Unknown Page", "url": "about:blank"}
        try:
            title = self.page.title()
            if title and title.strip():
                result["title"] = title.strip()
        except Exception:
            pass
        url = self.page.url
        if url and url.strip():
            result["url"] = url.strip()
        for _ in range(3):
            try:
                self.ready()
                self._script()
                extra = self.page.evaluate(METADATA_JS)
            except Exception:
                self.page.wait_for_timeout(500)
                continue
            if isinstance(extra, dict):
                for key, value in extra.items():
                    result.setdefault(key, value)
            break
        return result

    def webpage_text(self, n_lines: Any) -> str:
        self.ready()
        try:
            text = self.page.evaluate("() => document.body.innerText")
            head = "\n".join(text.split("\n")[:n_lines])
            return "\n".join(line for line in head.split("\n") if line.strip())
        except Exception:
            return ""

    def _png(self) -> bytes:
        try:
            return self.page.screenshot(type="png", timeout=15_000)
        except Exception:
            _safe(lambda: self.page.evaluate("window.stop()"))
            return self.page.screenshot(type="png", timeout=15_000)

    def screenshot(self, interaction_mode: str) -> bytes:
        """The viewport as PNG; in ``set_of_marks`` mode annotated, and its regions kept
        for ``get_screenshot_info`` and the id commands (a page without regions gives a
        plain screenshot and keeps the previous info, as the real server does)."""
        self.ready()
        if interaction_mode != "set_of_marks":
            return self._png()
        regions = self.interactive_regions()
        if not regions:
            return self._png()
        visible, above, below, mapping = classify(regions, VIEWPORT)
        try:
            self.page.evaluate(DRAW_MARKS_JS, overlay(regions, VIEWPORT))
        except Exception:   # the real server also falls back to a plain screenshot
            _safe(lambda: self.page.evaluate(CLEAR_MARKS_JS))
            return self._png()
        try:
            marked = self._png()
        finally:
            _safe(lambda: self.page.evaluate(CLEAR_MARKS_JS))
        self.instance.screenshot_info = {
            "visible_rects": visible,
            "rects_above": above,
            "rects_below": below,
            "interactive_regions": regions,
            "id_mapping": mapping,
        }
        return marked

    # ------------------------------------------------------------------ simweb extensions
    def locate(self, attribute: str, bid: str, scroll: bool = False) -> dict[str, Any] | None:
        """Where the element whose ``attribute`` is ``bid`` (a simweb id, or a page id with
        ``__elementId``) is: its page id, its display id in the last set-of-marks screenshot
        (or None), ``center``, the centre of its bounding box (where ``click_id`` clicks),
        ``on_center``, whether a click there reaches it, and ``point``, a point on the
        element itself, inside one of its client rects (None when it is covered or outside
        the viewport). ``scroll`` first scrolls it to the middle of the viewport."""
        self.interactive_regions()   # numbers the page's elements if nothing did yet
        found = self.page.evaluate(_LOCATE_JS, [attribute, bid, scroll])
        if found is None:
            return None
        info = self.instance.screenshot_info or {}
        display = next((d for d, e in (info.get("id_mapping") or {}).items()
                        if e == found["element_id"] and d in (info.get("visible_rects") or [])), None)
        found["display_id"] = display
        return found

    def live_ui_state(self) -> dict[str, Any]:
        try:
            return self.page.evaluate(_LIVE_STATE_JS)
        except Exception:
            return {"values": {}, "multi": {}, "checked": {}, "focused": None, "scroll": [0, 0]}

    def show(self, base_url: str, html: str, tab: dict) -> None:
        """Show a state's tab without asking the server for it again (see BrowserEnv._show)."""
        target = base_url + tab["url"]
        load_rendered(self.page, target, html, int(tab["status"] or 200), NAVIGATION_TIMEOUT_MS)
        if tab["fields"] or tab["focus"] or tab["scroll"] != [0, 0]:
            self.page.evaluate(_APPLY_STATE_JS, [tab["fields"], tab["focus"], tab["scroll"]])


class InstanceStopped(RuntimeError):
    """The instance's worker is gone (the server is shutting down)."""


class BrowserInstance:
    """A pool slot: a worker thread with its own Playwright and Chromium.

    ``port`` only names the instance (ids are ``<uuid>:<port>``, as the real node's
    instance servers are one port each); nothing listens on it."""

    def __init__(self, index: int, port: int, *, allow_external: bool = False, max_sleep_s: float = 60.0,
                 headless: bool = True):
        self.index = index
        self.port = port
        self.allow_external = allow_external
        self.max_sleep_s = max_sleep_s
        self.headless = headless
        self.uuid = str(uuid.uuid4())
        self.screenshot_info: dict[str, Any] | None = None
        #: the (task, seed) this lease's episode was started with: the first start URL the
        #: instance visits, /simweb/start or a restored state; the verdict holds the session
        #: to it (an agent's own visit to another start URL must not change what is judged)
        self.episode: tuple[str | None, int] | None = None
        self.driver = PageDriver(self)
        self.page: Any = None
        self.context: Any = None
        self.watch: Any = None
        self.browser: Any = None
        self.launches = 0
        self._jobs: queue.Queue[tuple[Callable[[], Any], Future] | None] = queue.Queue()
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=f"simweb-omnibox-{port}", daemon=True)

    @property
    def instance_id(self) -> str:
        """The id the protocol hands out: ``<uuid>:<port>``."""
        return f"{self.uuid}:{self.port}"

    # ------------------------------------------------------------------ worker
    def start(self, timeout: float = 60.0) -> None:
        """Start the worker and launch Chromium (raises what the launch raised)."""
        self._thread.start()
        if not self._ready.wait(timeout):
            raise RuntimeError(f"instance {self.port}: Chromium did not start within {timeout:g} s")
        if self._error is not None:
            raise self._error

    def _run(self) -> None:
        from playwright.sync_api import sync_playwright

        try:
            playwright = sync_playwright().start()
        except BaseException as exc:
            self._error = exc
            self._ready.set()
            return
        try:
            try:
                self._launch(playwright)
                self._new_context()
            except BaseException as exc:
                self._error = exc
                return
            finally:
                self._ready.set()
            while True:
                job = self._jobs.get()
                if job is None:
                    break
                fn, fut = job
                if not fut.set_running_or_notify_cancel():
                    continue
                try:
                    fut.set_result(fn())
                except BaseException as exc:
                    fut.set_exception(exc)
        finally:
            _safe(lambda: self.context.close() if self.context is not None else None)
            _safe(lambda: self.browser.close() if self.browser is not None else None)
            _safe(playwright.stop)
            while True:   # anything queued after the stop
                try:
                    job = self._jobs.get_nowait()
                except queue.Empty:
                    break
                if job is not None:
                    job[1].set_exception(InstanceStopped("the server is shutting down"))

    def _launch(self, playwright: Any) -> None:
        args = [] if self.allow_external else list(LOOPBACK_ONLY_ARGS)
        self._playwright = playwright
        self.browser = launch_chromium(playwright, headless=self.headless, args=args)
        self.launches += 1

    def _new_context(self) -> None:
        if self.context is not None:
            _safe(self.context.close)
        self.context = self.browser.new_context(viewport={"width": VIEWPORT[0], "height": VIEWPORT[1]},
                                                service_workers="block")
        self.context.set_default_timeout(NAVIGATION_TIMEOUT_MS)
        self.context.add_init_script(PAGE_SCRIPT)
        self.page = self.context.new_page()
        self.watch = _NavWatch(self.page)
        # Single-tab mode: a page the site opens anyway (window.open) is closed at once.
        self.context.on("page", lambda p: _safe(p.close) if p is not self.page else None)

    def call(self, fn: Callable[[], Any], timeout: float | None = 120.0) -> Any:
        """Run ``fn`` on the worker thread and return its result (or raise its error)."""
        if not self._thread.is_alive():
            raise InstanceStopped("the server is shutting down")
        fut: Future = Future()
        self._jobs.put((fn, fut))
        return fut.result(timeout)

    # ------------------------------------------------------------------ lifecycle (worker thread)
    def restore_clean(self) -> None:
        """A release: a fresh context (no cookies, no history) and a new uuid; Chromium is
        relaunched only if it died. The last set-of-marks info survives, as on the real
        server (a client that asks for it before its first screenshot gets the old one)."""
        self.uuid = str(uuid.uuid4())
        self.episode = None
        if self.browser is None or not self.browser.is_connected():
            self._relaunch()
            return
        try:
            self._new_context()
        except Exception:
            self._relaunch()

    def relaunch(self) -> None:
        """Close Chromium and start a new one (what a release costs without the pool)."""
        self.uuid = str(uuid.uuid4())
        self._relaunch()

    def _relaunch(self) -> None:
        _safe(lambda: self.context.close() if self.context is not None else None)
        self.context = None
        _safe(lambda: self.browser.close() if self.browser is not None else None)
        self._launch(self._playwright)
        self._new_context()

    def stop(self, timeout: float = 20.0) -> None:
        """Close Chromium and end the worker thread."""
        if self._thread.is_alive():
            self._jobs.put(None)
            self._thread.join(timeout)

    def alive(self) -> bool:
        return self._thread.is_alive()
