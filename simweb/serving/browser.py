"""Browser mode: a simweb app served by Flask and driven by a real Chromium.

    with ServedApp("shopping") as served:          # the app on http://127.0.0.1:<port>
        print(served.base_url)

    env = make_browser_env("shopping", seed=0)     # its own server and headless Chromium
    obs, info = env.reset(seed=3, options={"task": "shopping/buy_product"})
    obs, reward, terminated, truncated, info = env.step("click('nav-cart')")
    obs["screenshot"]                              # PNG bytes
    env.step("mouse_click(640, 200)")              # coordinate actions work here only
    env.close()

:class:`BrowserEnv` has the surface of :class:`simweb.env.SimEnv` (reset / step /
snapshot / restore / fork / oracle_plan, the same observation keys plus ``screenshot``),
but every action is performed by Chromium through Playwright against the served app, so
each link is a real GET and each submit a real form POST. The session's state lives on the
server (one session per browser-context cookie); the env reads it through
``GET /_simweb/state`` to run the task's verifier after every step.

Two details keep the served session's state identical to ``SimEnv``'s for the same
actions: the page shown after :meth:`BrowserEnv.reset` and :meth:`BrowserEnv.restore` is
rendered from the state itself (the server already performed that page's GET, so the
browser must not request it a second time), and ``send_msg_to_user`` /
``report_infeasible`` are written into the session's ``browser.chat`` so the verifier
sees the answer.

Chromium is Debian's (``/usr/bin/chromium`` or ``$SIMWEB_CHROMIUM``); Playwright's own
browser downloads are never used.
"""
from __future__ import annotations

import functools
import os
import threading
import time
from collections.abc import Callable
from typing import Any, Literal
from urllib.parse import urljoin, urlsplit

import orjson

from ..core.state import StateError, deep_copy, state_hash
from ..episodes.episode import Episode, EpisodeEnv, observation_space, plan_budget
from ..runtime.app import App
from ..runtime.registry import definition, step_cap
from ..runtime.variants import shown_message, shown_url
from ..web.actions import ActionError, _css_bid, parse_action
from ..web.axtree import parse_page
from ..web.spaces import JsonValue, Unicode
from .server import create_app, make_server, stop_server

#: Command-line flags for Chromium in a sandbox-less container with only loopback networking.
CHROMIUM_ARGS: tuple[str, ...] = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
)
DEFAULT_CHROMIUM = "/usr/bin/chromium"
#: Playwright timeout of one action (and of the page load it starts), in milliseconds.
DEFAULT_TIMEOUT_MS = 3000
#: How long a raw mouse/keyboard action may take to start a navigation, in milliseconds.
RAW_INPUT_GRACE_MS = 250
#: The settle window after every action (see ``BrowserEnv._settle_window``): the page must
#: show no activity for this long before it is observed, in milliseconds. A page with no
#: script (every served simweb app) is observed at once instead.
SETTLE_QUIET_MS = 100
#: A ``setTimeout`` due within this many milliseconds counts as pending activity (a site
#: that waits a moment and then moves the page); longer timers, ``setInterval`` and a
#: callback that re-arms itself without a request (a countdown) do not.
SETTLE_TIMER_MS = 1000
#: How long a tab the site opened may stay at ``about:blank`` before it is taken as loaded.
POPUP_GRACE_MS = 1000
#: How often the settle window looks at the pages, in milliseconds.
_SETTLE_POLL_MS = 20
LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1", "[::1]")


class BrowserError(RuntimeError):
    """Browser mode cannot run (no Chromium, the server did not start...)."""


# ============================================================================ Chromium

def chromium_executable() -> str:
    """The Chromium binary browser mode launches: ``$SIMWEB_CHROMIUM`` or /usr/bin/chromium."""
    return os.environ.get("SIMWEB_CHROMIUM") or DEFAULT_CHROMIUM


def launch_chromium(playwright: Any, headless: bool = True, **kwargs: Any) -> Any:
    """Launch Debian's Chromium through ``playwright`` (a started sync Playwright).

    Extra keyword arguments go to ``playwright.chromium.launch``. Raises
    :class:`BrowserError` with a one-line hint when the executable is missing."""
    path = chromium_executable()
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        raise BrowserError(f"Chromium not found at {path}: install it (apt-get install -y chromium) "
                           f"or point SIMWEB_CHROMIUM at a Chromium binary")
    args = list(CHROMIUM_ARGS) + [a for a in kwargs.pop("args", []) if a not in CHROMIUM_ARGS]
    return playwright.chromium.launch(executable_path=path, headless=headless, args=args, **kwargs)


# ============================================================================ server

class ServedApp:
    """An app served by waitress on a loopback port in a daemon thread (started at once).

        with ServedApp("shopping", world_seed=0) as served:
            requests.get(served.base_url + "/")
            requests.get(served.base_url + "/_simweb/state", headers=served.control_headers)

    ``port=0`` picks a free port. ``bid_attribute`` is the element-id attribute of the
    served pages (``bid``, which simweb's own browser backend addresses; ``simweb serve``
    uses ``data-simweb-bid`` for BrowserGym). The control token of ``/_simweb`` is made here
    (``control_token``; :class:`BrowserEnv` sends it). :meth:`close` (or leaving the
    ``with`` block) shuts the server down and joins its thread."""

    def __init__(self, app_name: str, world_seed: int = 0, size: int | None = None, *,
                 host: str = "127.0.0.1", port: int = 0, task: str | None = None, seed: int = 0,
                 threads: int = 8, bid_attribute: str = "bid", **options: Any):
        self.app_name = app_name
        self.world_seed = world_seed
        # simweb's own drivers address elements by ``bid`` (BrowserEnv's selectors and scripts).
        self.bid_attribute = bid_attribute
        self.flask_app = create_app(app_name, world_seed=world_seed, size=size, task=task, seed=seed,
                                    bid_attribute=bid_attribute, **options)
        self._server = make_server(self.flask_app, host, port, threads=threads)
        self.host = host
        self.port: int = self._server.effective_port
        self._thread = threading.Thread(target=self._server.run, name=f"simweb-serve-{app_name}-{self.port}",
                                        daemon=True)
        self._thread.start()
        self._closed = False

    @property
    def control_token(self) -> str | None:
        """The token ``/_simweb`` writes (and full state reads) need."""
        return self.flask_app.extensions["simweb"].control_token

    @property
    def control_headers(self) -> dict[str, str]:
        """``{"Authorization": "Bearer <token>"}`` for requests to ``/_simweb``."""
        token = self.control_token
        return {"Authorization": f"Bearer {token}"} if token else {}

    @property
    def base_url(self) -> str:
        """``http://host:port`` (no trailing slash)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def app(self) -> App:
        """The in-process :class:`simweb.app.App` the server drives (shared with envs)."""
        return self.flask_app.extensions["simweb"].app

    @property
    def running(self) -> bool:
        return not self._closed and self._thread.is_alive()

    def close(self) -> None:
        """Stop serving and release the port (idempotent)."""
        if self._closed:
            return
        self._closed = True
        stop_server(self._server, self._thread)
        self._thread.join(timeout=5)

    def __enter__(self) -> ServedApp:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ServedApp({self.app_name!r}, base_url={self.base_url!r}, running={self.running})"


# ============================================================================ page scripts

#: Reads the live UI state of a page in one round trip: the values of text fields and
#: selects that differ from their HTML defaults (so typed text shows up in the AX tree),
#: checkboxes/radios and details (open) that differ from their default, the focused bid,
#: the scroll offset.
_LIVE_STATE_JS = r"""
() => {
  const values = {}, multi = {}, checked = {};
  const SKIP = new Set(['hidden', 'submit', 'button', 'reset', 'image', 'file']);
  for (const el of document.querySelectorAll('input[bid], textarea[bid], select[bid]')) {
    const bid = el.getAttribute('bid');
    if (el.tagName === 'SELECT') {
      const opts = Array.from(el.options);
      const now = opts.filter(o => o.selected).map(o => o.value);
      let dflt;
      if (el.multiple) {
        dflt = opts.filter(o => o.defaultSelected).map(o => o.value);
      } else {
        let i = -1;
        opts.forEach((o, k) => { if (o.defaultSelected) i = k; });
        if (i < 0 && el.size <= 1) i = opts.findIndex(o => !o.disabled);
        dflt = i < 0 ? [] : [opts[i].value];
      }
      if (now.join('\u001f') !== dflt.join('\u001f')) {
        if (el.multiple) multi[bid] = now; else values[bid] = now.length ? now[0] : '';
      }
    } else if (el.tagName === 'INPUT' && (el.type === 'checkbox' || el.type === 'radio')) {
      if (el.checked !== el.defaultChecked) checked[bid] = el.checked;
    } else if (el.tagName === 'TEXTAREA' || !SKIP.has(el.type)) {
      if (el.value !== el.defaultValue) values[bid] = el.value;
    }
  }
  for (const d of document.querySelectorAll('details[bid]')) {
    if (d.__simwebOpen0 !== undefined && d.open !== d.__simwebOpen0) checked[d.getAttribute('bid')] = d.open;
  }
  let a = document.activeElement;
  while (a && a.shadowRoot && a.shadowRoot.activeElement) a = a.shadowRoot.activeElement;
  const focused = (a && a !== document.body && a !== document.documentElement && a.getAttribute)
    ? a.getAttribute('bid') : null;
  return {values, multi, checked, focused,
          scroll: [Math.round(window.scrollX || 0), Math.round(window.scrollY || 0)]};
}
"""

#: Applies a tab's saved UI state (fields, focus, scroll) to the page (for restore).
_APPLY_STATE_JS = r"""
([fields, focus, scroll, caret]) => {
  const find = (bid) => document.querySelector('[bid="' + CSS.escape(bid) + '"]');
  for (const [bid, v] of Object.entries(fields)) {
    const el = find(bid);
    if (!el) continue;
    if (typeof v === 'boolean') { if (el.tagName === 'DETAILS') el.open = v; else el.checked = v; continue; }
    if (el.tagName === 'SELECT' && el.multiple) {
      const want = new Set(v.split('\u001f'));
      for (const o of el.options) o.selected = want.has(o.value);
    } else {
      el.value = v;
    }
  }
  if (focus) { const el = find(focus); if (el && el.focus) el.focus(); }
  if (caret && caret[0] === focus) {   // the focused control's caret, where the state has it
    try { find(focus).setSelectionRange(caret[1], caret[2]); } catch (e) {}
  }
  window.scrollTo(scroll[0] || 0, scroll[1] || 0);
}
"""

#: Focus the date field of bid ``bid`` afresh (blurred, then focused: its first part), or,
#: with null, say whether the focused element is a date field; false when it is not, or
#: when it cannot take the focus (hidden, disabled): no key may go elsewhere.
_FOCUS_DATE_JS = r"""
(bid) => {
  const el = bid === null ? document.activeElement : document.querySelector('[bid="' + CSS.escape(bid) + '"]');
  if (!el || el.tagName !== 'INPUT' || el.type !== 'date') return false;
  if (bid !== null) { el.blur(); el.focus(); }
  return document.activeElement === el;
}
"""

#: (tag, type, disabled, options) of one element, for actions that check before acting.
_DESCRIBE_JS = r"""
(el) => ({
  tag: el.tagName.toLowerCase(),
  type: (el.getAttribute('type') || '').toLowerCase(),
  disabled: !!el.disabled,
  multiple: !!el.multiple,
  options: el.tagName === 'SELECT' ? Array.from(el.options).map(o => [o.value, o.label || o.textContent || '']) : [],
})
"""


#: Whether activating what is at (x, y) -- or, without a point, pressing Enter on the focused
#: element -- starts a navigation (a link, a submit button, implicit form submission).
_EXPECTS_NAVIGATION_JS = r"""
(point) => {
  let el = point ? document.elementFromPoint(point[0], point[1]) : document.activeElement;
  if (!el || !el.closest) return false;
  const a = el.closest('a[href], area[href]');
  if (a) {
    const href = a.getAttribute('href') || '';
    const target = (a.getAttribute('target') || '').toLowerCase();
    return !(href.startsWith('#') || href.toLowerCase().startsWith('javascript:') || (target && target !== '_self'));
  }
  const b = el.closest('button, input');
  if (!b || b.disabled || !b.form) return false;
  const type = (b.getAttribute('type') || (b.tagName === 'BUTTON' ? 'submit' : 'text')).toLowerCase();
  if (b.tagName === 'BUTTON' || type === 'submit' || type === 'image') return type === 'submit' || type === 'image';
  return !point && !['checkbox', 'radio', 'file', 'button', 'reset', 'hidden'].includes(type);
}
"""


#: Installed in every document before the site's own scripts (``add_init_script``):
#: counts the site's work in flight that may still move the page -- fetch and XHR requests
#: and ``setTimeout`` callbacks due within ``SETTLE_TIMER_MS`` (but not a timer that keeps
#: re-arming itself without a request: a countdown never settles) -- and the tabs it asked
#: for (a ``target="_blank"`` link or form, a modified or middle click on a link,
#: ``window.open`` of an unnamed window), for the settle window.
#: A request counts until a task after it ends, so the callbacks its response runs
#: (which may set the next timer or ``location``) are counted before it stops.
_ACTIVITY_JS = r"""
(() => {
  if (window.__simwebActivity) return;
  const HORIZON = %(timer_ms)d;
  const setT = window.setTimeout.bind(window), clearT = window.clearTimeout.bind(window);
  const timers = new Set();
  let requests = 0;
  // The timer callback running now, if any, and how many requests it has started: a
  // callback that re-arms itself without fetching anything is a UI loop (a countdown, a
  // clock), not work that may still move the page, so the timer it sets is not counted. A
  // poll (a request, then a timer set when the answer comes) is counted every round.
  let current = null;
  const done = () => { setT(() => { requests -= 1; }, 0); };
  const started = () => { requests += 1; if (current) current.requests += 1; };
  window.setTimeout = function (fn, delay, ...args) {
    if (typeof fn !== 'function') return setT(fn, delay, ...args);
    let id;
    const run = function () {
      timers.delete(id);
      const outer = current;
      current = {requests: 0, fn};
      try { return fn.apply(this, arguments); } finally { current = outer; }
    };
    id = setT(run, delay, ...args);
    if ((Number(delay) || 0) <= HORIZON && !(current && current.fn === fn && current.requests === 0)) timers.add(id);
    return id;
  };
  window.clearTimeout = function (id) { timers.delete(id); return clearT(id); };
  if (window.fetch) {
    const fetch0 = window.fetch;
    window.fetch = function () {
      started();
      let p;
      try { p = fetch0.apply(this, arguments); } catch (e) { done(); throw e; }
      p.then(done, done);
      return p;
    };
  }
  if (window.XMLHttpRequest) {
    const send0 = XMLHttpRequest.prototype.send;
    XMLHttpRequest.prototype.send = function () {
      started();
      this.addEventListener('loadend', done, {once: true});
      try { return send0.apply(this, arguments); } catch (e) { done(); throw e; }
    };
  }
  // Tabs this document asked for: Chromium reports a tab only once its first response is
  // in, which on a slow site comes well after the click.
  let popups = 0;
  const counted = (ev) => { popups += 1; setT(() => { if (ev.defaultPrevented) popups -= 1; }, 0); };
  const onLink = (ev) => {
    const a = ev.target && ev.target.closest ? ev.target.closest('a[href], area[href]') : null;
    if (!a) return;
    const href = a.getAttribute('href') || '';
    if (href.startsWith('#') || /^\s*javascript:/i.test(href)) return;
    const base = document.querySelector('base[target]');
    const target = (a.getAttribute('target') || (base ? base.getAttribute('target') : '') || '').toLowerCase();
    if (target === '_blank' || ev.ctrlKey || ev.metaKey || ev.shiftKey || ev.button === 1) counted(ev);
  };
  window.addEventListener('click', onLink, true);
  window.addEventListener('auxclick', (ev) => { if (ev.button === 1) onLink(ev); }, true);
  window.addEventListener('submit', (ev) => {
    if (ev.target && (ev.target.getAttribute('target') || '').toLowerCase() === '_blank') counted(ev);
  }, true);
  if (window.open) {
    const open0 = window.open;
    window.open = function (url, name, features) {
      const w = open0.apply(this, arguments);
      const n = name === undefined || name === null ? '' : String(name).toLowerCase();
      const detached = /noopener|noreferrer/i.test(String(features || ''));
      if ((w !== null || detached) && (n === '' || n === '_blank')) popups += 1;
      return w;
    };
  }
  // Each details' open state as the page was served: its form-state default (the live UI
  // state reports a details opened or closed since, as a checkbox against its default).
  document.addEventListener('DOMContentLoaded', () => {
    for (const d of document.querySelectorAll('details')) d.__simwebOpen0 = d.open;
  }, true);
  Object.defineProperty(window, '__simwebActivity', {configurable: false, enumerable: false, value: () => {
    let refresh = false;
    const meta = document.querySelector('meta[http-equiv="refresh" i]');
    if (meta) {
      const wait = parseFloat(meta.getAttribute('content') || '0') * 1000;
      refresh = wait <= HORIZON && performance.now() < wait + HORIZON;
    }
    const scripted = document.scripts.length > 0 || window.frames.length > 0 || requests > 0 || timers.size > 0
      || document.querySelector('[onload], [onclick], [onsubmit], [onchange], [oninput], [onfocus], [onblur]') !== null;
    return {busy: document.readyState !== 'complete' || requests > 0 || timers.size > 0 || refresh, scripted, popups};
  }});
})();
"""


def _error_text(exc: BaseException) -> str:
    """A one-paragraph message for ``last_action_error`` (Playwright's call log dropped)."""
    msg = getattr(exc, "message", None) or str(exc)
    msg = msg.split("\nCall log:")[0].split("=========================== logs")[0].strip()
    return msg or type(exc).__name__


class _Fail(Exception):
    """An action that cannot be performed; its message becomes last_action_error."""


# ============================================================================ navigation tracking

class _NavWatch:
    """Counts main-frame navigation requests and loads of one page, so the env can wait
    for the navigations an action started (links, form posts, redirects) to finish."""

    def __init__(self, page: Any):
        self.page = page
        self.requests = 0
        self.pending = False
        # When the env started watching, and whether the site opened the tab (one it opens
        # may sit at about:blank for a moment before its navigation starts).
        self.opened = time.monotonic()
        self.by_site = False
        # Tabs the current document opened (its requests are in ``_ACTIVITY_JS``'s count).
        self.popups = 0
        page.on("request", self._on_request)
        page.on("requestfailed", self._on_failed)
        page.on("load", self._on_load)
        page.on("domcontentloaded", self._on_document)
        page.on("popup", self._on_popup)
        page.on("dialog", lambda d: _safe(d.dismiss))

    def _on_request(self, request: Any) -> None:
        try:
            if request.is_navigation_request() and request.frame == self.page.main_frame:
                self.requests += 1
                self.pending = True
        except Exception:   # a frame that is already gone
            pass

    def _on_failed(self, request: Any) -> None:
        try:
            if request.is_navigation_request() and request.frame == self.page.main_frame:
                self.pending = False
        except Exception:
            pass

    def _on_load(self, _page: Any) -> None:
        self.pending = False

    def _on_document(self, _page: Any) -> None:
        self.popups = 0   # a new document: its own count of requested tabs starts at 0

    def _on_popup(self, _popup: Any) -> None:
        self.popups += 1


#: Actions that never touch a page: no settle window after them.
_NO_PAGE_ACTIONS = frozenset({"send_msg_to_user", "report_infeasible"})


class _Closed(Exception):
    """The page went away while the settle window looked at it."""


def _page_activity(page: Any) -> dict[str, Any]:
    """``{"busy", "scripted", "popups"}`` of ``page``'s document (see ``_ACTIVITY_JS``); a
    document that cannot be read (mid-navigation) counts as busy."""
    try:
        got = page.evaluate("() => window.__simwebActivity ? window.__simwebActivity() : null")
    except Exception as exc:
        if page.is_closed():
            raise _Closed() from exc
        return {"busy": True, "scripted": True, "popups": 0}
    if not isinstance(got, dict):   # about:blank before the tracker ran
        return {"busy": False, "scripted": True, "popups": 0}
    return {"busy": bool(got.get("busy")), "scripted": bool(got.get("scripted")), "popups": int(got.get("popups") or 0)}


def _safe(fn: Callable[[], Any]) -> None:
    try:
        fn()
    except Exception:
        pass


def load_rendered(page: Any, target: str, html: str, status: int, timeout_ms: int = 10_000) -> None:
    """Navigate ``page`` to ``target`` with ``html`` as the response, without a request
    reaching the server (the page of a state whose GET the server already performed)."""
    body = html.encode("utf-8")
    headers = {"content-type": "text/html; charset=utf-8", "cache-control": "no-store"}
    requested = target.partition("#")[0]   # a fragment never reaches the network

    def matches(url: str) -> bool:
        return url == requested

    def fulfil(route: Any) -> None:
        req = route.request
        if req.is_navigation_request() and req.method == "GET" and req.url == requested:
            route.fulfill(status=status, body=body, headers=headers)
        else:
            route.fallback()

    page.route(matches, fulfil)
    try:
        page.goto(target, wait_until="load", timeout=timeout_ms)
    finally:
        _safe(lambda: page.unroute(matches, fulfil))


# ============================================================================ env

class ChromiumBackend:
    """BrowserEnv's backend: actions performed by Chromium, state read from the served
    session (``GET /_simweb/state``, once per step: only an action makes it stale)."""

    def __init__(self, env: BrowserEnv):
        self.env = env
        self._stale = True

    @property
    def viewport(self) -> tuple[int, int]:
        return self.env.viewport

    def execute(self, action: str) -> str | None:
        self._stale = True
        return self.env.execute(action)

    def state(self) -> dict:
        env = self.env
        if self._stale or env._state is None:
            env._state = env.served_state()
            self._stale = False
        return env._state

    def fresh(self, state: dict) -> None:
        """``state`` is the session's state now (after reset or restore)."""
        self.env._state = state
        self._stale = False

    def observe(self, state: dict) -> dict[str, Any]:
        return self.env._observe_page()

    def page_info(self, state: dict) -> dict[str, Any]:
        b = state["browser"]
        tab = b["tabs"][b["active"]]
        info: dict[str, Any] = {"page": tab["page"], "status": tab["status"]}
        flash = tab.get("flash")
        if flash and flash.get("level") == "error":
            info["site_error"] = shown_message(self.env.app, state, flash["message"])
        return info


def _request_url(url: str) -> str:
    """``url`` as the server saw its request: without the fragment, and without an empty
    query (Chromium shows a link to ``?`` as ``page?``; the server's tab has ``page``)."""
    return url.partition("#")[0].removesuffix("?")


class BrowserEnv(EpisodeEnv):
    """A simweb app as a gymnasium env whose actions run in a real Chromium.

    ``BrowserEnv(app, seed)`` starts its own server (:class:`ServedApp`) and headless
    Chromium; pass ``server=`` and/or ``browser=`` (a Playwright sync ``Browser``) to
    share them between envs (they are then not closed by :meth:`close`). Each env uses
    its own browser context, hence its own cookie and server-side session.

    Observations have SimEnv's keys (url, goal, html, axtree, last_action,
    last_action_error, open_pages_urls, active_page_index, focused_element_bid,
    chat_messages, step) plus ``screenshot`` (PNG bytes of the active page's viewport);
    ``url`` is the page's real URL on the served origin. ``html`` is the live DOM
    serialised by Chromium and ``axtree`` is built from it with the live values of the
    form fields. Bad actions never raise: they come back as ``last_action_error``.
    ``info`` holds the verdict, the session's page name and status, the task, and
    ``site_error`` when the page shows an error message. ``noop()`` returns at once (the
    served pages have no timers).

    After every action a settle window (:meth:`_settle_window`) lets what the action set
    going come to rest before the observation: a tab the page opened becomes the active
    tab, and a navigation the page starts by script (a form posted by ``fetch`` that then
    sets ``location``, a redirect by script) is waited for. ``settle_quiet_ms`` (default
    ``SETTLE_QUIET_MS``, 100) is how long the page must stay idle, ``settle_cap_ms``
    (default: ``timeout_ms``) the most the window ever takes; ``last_settle`` tells how
    the last one ended. A page without script, as every served simweb page is, ends the
    window at once, so the transitions and their timing are those without it.
    """

    metadata = {"render_modes": ["html"]}
    backend: ChromiumBackend

    def __init__(self, app: str, seed: int = 0, *, size: int | None = None, headless: bool = True,
                 viewport: tuple[int, int] = (1280, 768), task: str | None = None, max_steps: int | None = None,
                 reward: str = "sparse", timeout_ms: int = DEFAULT_TIMEOUT_MS, screenshots: bool = True,
                 server: ServedApp | None = None, browser: Any = None, progress: bool = False,
                 settle_quiet_ms: int = SETTLE_QUIET_MS, settle_cap_ms: int | None = None):
        # ``progress`` is accepted for SimEnv compatibility: a world is built (with a progress
        # bar) by the server that loads it.
        if reward not in ("sparse", "progress"):
            raise ValueError(f"reward must be 'sparse' or 'progress', not {reward!r}")
        self.world_seed = seed
        self.default_task = task
        self.timeout_ms = int(timeout_ms)
        self._settle_params(settle_quiet_ms, settle_cap_ms)
        self.viewport = (int(viewport[0]), int(viewport[1]))
        self.headless = headless
        self.screenshots = screenshots
        self.action_space = Unicode()
        self.observation_space = observation_space(screenshot=JsonValue(bytes))
        self._playwright: Any = None
        self._owns_server = server is None
        self._owns_browser = browser is None
        self._context: Any = None
        self._closed = False
        try:
            self.server = server if server is not None else ServedApp(app, world_seed=seed, size=size)
            if server is not None:
                served = server.app
                if served.name != definition(app).name or served.seed != seed or (size and served.size != size):
                    raise ValueError(f"server serves {served.name!r} world seed {served.seed} size {served.size}, "
                                     f"not {app!r} world seed {seed}" + (f" size {size}" if size else ""))
            self.app: App = self.server.app
            if browser is None:
                from playwright.sync_api import sync_playwright

                self._playwright = sync_playwright().start()
                browser = launch_chromium(self._playwright, headless=headless)
            self._browser = browser
            self._new_context()
        except BaseException:
            self.close()
            raise
        self.base_url = self.server.base_url
        self._state: dict | None = None
        self.episode = Episode(self.app, reward=reward, max_steps=max_steps, cap=step_cap(self.app.name))
        self.backend = ChromiumBackend(self)

    # ------------------------------------------------------------------ browser plumbing
    def _settle_params(self, quiet_ms: int, cap_ms: int | None) -> None:
        """Check and keep the settle window's quiet period and cap (the cap defaults to the
        action timeout)."""
        cap = self.timeout_ms if cap_ms is None else int(cap_ms)
        if int(quiet_ms) < 0 or cap < 0:
            raise ValueError(f"settle_quiet_ms and settle_cap_ms must be >= 0, not {quiet_ms} and {cap}")
        self.settle_quiet_ms = int(quiet_ms)
        self.settle_cap_ms = cap
        #: How the last action's settle window ended: "quiet" (nothing left in flight),
        #: "cap" (observed at the cap with the site still busy) or "" (no window ran).
        self.last_settle = ""

    def _new_context(self) -> None:
        if self._context is not None:
            _safe(self._context.close)
        self._context = self._browser.new_context(
            viewport={"width": self.viewport[0], "height": self.viewport[1]},
            java_script_enabled=True, service_workers="block")
        self._context.add_init_script(_ACTIVITY_JS % {"timer_ms": SETTLE_TIMER_MS})
        self._context.set_default_timeout(self.timeout_ms)
        self._context.set_default_navigation_timeout(self.timeout_ms)
        self._pages: list[Any] = []
        self._watch: dict[int, _NavWatch] = {}
        self._opening = False   # True while the env itself opens a tab
        self._active = 0
        self._context.on("page", self._on_new_page)
        self._open_page()

    def _on_new_page(self, page: Any) -> None:
        """A page opened by the site (target=_blank, window.open) becomes the active tab."""
        if any(p is page for p in self._pages):
            return
        self._track(page)
        self._watch[id(page)].by_site = not self._opening
        self._pages.append(page)
        self._active = len(self._pages) - 1

    def _track(self, page: Any) -> None:
        if id(page) not in self._watch:
            self._watch[id(page)] = _NavWatch(page)
        page.on("close", self._on_page_closed)

    def _on_page_closed(self, page: Any) -> None:
        for i, p in enumerate(self._pages):
            if p is page:
                self._pages.pop(i)
                if self._active >= i and self._active > 0:
                    self._active -= 1
                break
        self._watch.pop(id(page), None)

    def _open_page(self) -> Any:
        self._opening = True
        try:
            page = self._context.new_page()
        finally:
            self._opening = False
        self._on_new_page(page)
        return page

    @property
    def page(self) -> Any:
        """The active Playwright ``Page`` (open one if every tab was closed)."""
        if not self._pages:
            self._open_page()
        self._active = min(max(self._active, 0), len(self._pages) - 1)
        return self._pages[self._active]

    @property
    def context(self) -> Any:
        """The env's Playwright ``BrowserContext`` (its cookie is the session)."""
        return self._context

    def _url(self, path: str) -> str:
        return self.base_url + (path if path.startswith("/") else "/" + path)

    def _fresh_tabs(self) -> None:
        """One blank tab with an empty history (as a reset SimEnv has)."""
        old = list(self._pages)
        self._open_page()
        for p in old:
            _safe(p.close)
        self._active = len(self._pages) - 1

    # ------------------------------------------------------------------ served state
    def _api(self, method: str, path: str, body: Any = None) -> Any:
        req = self._context.request
        url = self._url(path)
        # The control token rides on these requests only: pages in the browser never see it.
        headers = dict(self.server.control_headers)
        if method == "GET":
            resp = req.get(url, headers=headers, timeout=max(self.timeout_ms, 10_000))
        else:
            headers["content-type"] = "application/json"
            resp = req.post(url, data=orjson.dumps(body if body is not None else {}), headers=headers,
                            timeout=max(self.timeout_ms, 10_000))
        try:
            payload = orjson.loads(resp.body())
        except orjson.JSONDecodeError:
            raise BrowserError(f"{method} {path}: HTTP {resp.status}, not JSON") from None
        if resp.status != 200:
            raise BrowserError(f"{method} {path}: HTTP {resp.status}: {payload.get('error', payload)}")
        return payload

    def served_state(self) -> dict:
        """The session's state as the server holds it (``GET /_simweb/state``)."""
        return self._api("GET", "/_simweb/state")

    def _put_state(self, state: dict) -> None:
        self._api("POST", "/_simweb/state", state)

    # ------------------------------------------------------------------ episode
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[dict, dict]:
        """Start an episode (``POST /_simweb/reset``). ``options``: task (id; ``None``: free
        browsing), params. Which instance and task: as :meth:`simweb.env.SimEnv.reset`."""
        super().reset(seed=seed)
        options = options or {}
        # the in-process env's rule: a seed drawn from np_random when none is given, a task
        # drawn from every template when none is given ({"task": None}: free browsing)
        from ..episodes.env import TaskPool

        pool = self.__dict__.get("_task_pool") or self.__dict__.setdefault("_task_pool", TaskPool(self.app, None))
        task_id, episode_seed = pool.choose(self.np_random, seed, options, self.default_task)
        if task_id is not None:
            self.episode.lookup(task_id)   # an unknown task is a TaskError, as in SimEnv
        if options.get("params") is not None:
            from ..episodes.env import episode_start

            self._put_state(deep_copy(episode_start(self.app, task_id, episode_seed, options["params"]).state))
        else:
            body: dict[str, Any] = {"seed": episode_seed}
            if task_id is not None:
                body["task"] = task_id
            self._api("POST", "/_simweb/reset", body)
        state = self.served_state()
        task = None
        if state["meta"]["task"] is not None:
            t = state["meta"]["task"]
            task = self.episode.lookup(t["id"]).instantiate(self.app, episode_seed, t["params"])
        self._show(state)
        self.backend.fresh(state)
        self.episode.begin(task, deep_copy(state), None, budget=lambda: plan_budget(self.app, task, state))
        verdict = self.episode.verdict(state)
        self.episode.rebase(verdict)
        return self.episode.observation(self.backend, state), self.episode.info(self.backend, state, verdict)

    def _show(self, state: dict) -> None:
        """Make the browser show the state's tabs without asking the server for the pages
        again (the server's state already went through those GETs): each tab's page is
        rendered from the state and handed to Chromium at its real URL, then the tab's
        UI state (field values, focus, scroll) is applied."""
        browser = state["browser"]
        tabs = browser["tabs"]
        self._fresh_tabs()
        for i, tab in enumerate(tabs):
            page = self._pages[-1] if i == 0 else self._open_page()
            if tab["url"] == "about:blank":
                continue
            if "://" in tab["url"]:   # a page at another host: Chromium's network-error page
                _safe(functools.partial(page.goto, tab["url"], timeout=max(self.timeout_ms, 10_000)))
                self._forget_history(page)
                continue
            html = self.app.render(state, tab)
            self._load_rendered(page, self._url(shown_url(self.app, state, tab["url"])), html, int(tab["status"] or 200))
            self._forget_history(page)
            held = tab.get("parts") or {}
            if held:   # the fields first, then the held parts typed in, then the focus
                page.evaluate(_APPLY_STATE_JS, [tab["fields"], None, tab["scroll"], None])
                self._type_date_parts(page, held)
            if tab["fields"] or tab["focus"] or tab["scroll"] != [0, 0] or held:
                page.evaluate(_APPLY_STATE_JS, [{} if held else tab["fields"], tab["focus"], tab["scroll"],
                                                tab.get("caret")])
                self._focus_date_part(page, tab)
        self._active = min(int(browser["active"]), len(self._pages) - 1)
        _safe(self.page.bring_to_front)

    # A date field's parts live in Chromium's shadow tree, out of a script's reach: a state
    # whose date field holds parts that make no date (the tab's ``parts``) or whose focus is
    # on a date's later part (its ``caret``, [bid, part, part]) is put back with the keyboard,
    # in the order of parts simweb.web.browsing defines (month, day, year, calendar button):
    # focus() puts the focus on the month, and Tab goes to the next part.
    def _focus_date_start(self, page: Any, bid: str) -> bool:
        """Focus date field ``bid`` afresh (its month); False when it is not a date field or
        cannot take the focus."""
        return bool(page.evaluate(_FOCUS_DATE_JS, bid))

    def _type_date_parts(self, page: Any, held: dict[str, list[int | None]]) -> None:
        """Type each held part's digits into its part (a cleared part is left empty): in
        Chromium a typed part stays on the page while the parts make no date."""
        for bid in sorted(held):
            for part, number in enumerate(held[bid]):
                if number is None or not self._focus_date_start(page, bid):
                    continue
                for _ in range(part):
                    page.keyboard.press("Tab")
                # the year at least four digits, as the field shows it (typed "1" is year 1 too)
                page.keyboard.type(str(number).zfill(4 if part == 2 else 2))
        # nothing keeps the focus: the state's own focus is put back after (a fresh focus())
        page.evaluate("() => { if (document.activeElement) document.activeElement.blur(); }")

    def _focus_date_part(self, page: Any, tab: dict) -> None:
        """Move the focus from a focused date field's month (where the state's focus() put
        it) to the part the tab's ``caret`` holds, with as many Tabs; then the tab's scroll
        again (the keys may have scrolled the field into view)."""
        caret = tab.get("caret")
        if not tab["focus"] or not caret or caret[0] != tab["focus"] or not 0 < int(caret[1]) <= 3:
            return
        if not page.evaluate(_FOCUS_DATE_JS, None):   # the focus is in a date field, on its month
            return
        for _ in range(int(caret[1])):
            page.keyboard.press("Tab")
        page.evaluate("([x, y]) => window.scrollTo(x || 0, y || 0)", tab["scroll"])

    def _forget_history(self, page: Any) -> None:
        """Drop the tab's earlier history entries (the about:blank it was opened on): a
        shown state's tab starts at its page, as the in-process tab whose history the
        state gives (entries before it are not replayed)."""
        try:
            cdp = self._context.new_cdp_session(page)
            try:
                cdp.send("Page.resetNavigationHistory")
            finally:
                cdp.detach()
        except Exception:   # a page that is gone: nothing to forget
            pass

    def _load_rendered(self, page: Any, target: str, html: str, status: int) -> None:
        load_rendered(page, target, html, status, max(self.timeout_ms, 10_000))

    # ------------------------------------------------------------------ actions
    def execute(self, text: str) -> str | None:
        """Run one action string; return the error message, or None on success."""
        try:
            action = parse_action(text)
        except ActionError as exc:
            return str(exc)
        handler = getattr(self, f"_do_{action.name}", None)
        if handler is None:
            return f"Unknown action {action.name}()"
        error: str | None = None
        try:
            handler(*action.args)   # args hold every parameter, defaults filled in
        except _Fail as exc:
            error = str(exc)
        except TypeError as exc:   # wrong number or names of arguments
            error = f"Invalid arguments for {action.name}(): {exc}"
        except Exception as exc:   # Playwright's TimeoutError / Error, a closed page...
            error = _error_text(exc)
        if action.name in _NO_PAGE_ACTIONS:
            self.last_settle = ""
        else:
            self._settle_window()
        return error

    def _settle_window(self) -> None:
        """Wait until what the action set going has come to rest, then return.

        The action's own wait covers the navigation it starts; a site often goes on by
        itself: it opens a tab (``target="_blank"``, ``window.open``), posts a form with
        ``fetch`` and sets ``location`` when the answer comes, or redirects by script. The
        window ends once, for ``settle_quiet_ms`` in a row, no tab has a navigation
        pending, every tab the page asked for is open and has left ``about:blank`` (or had
        ``POPUP_GRACE_MS``), and the active document is loaded with no fetch/XHR in flight
        and no ``setTimeout`` due within ``SETTLE_TIMER_MS`` (see ``_ACTIVITY_JS``); a page
        with no script at all ends it at once. It never
        runs longer than ``settle_cap_ms``: a page that keeps polling is observed then, with
        no error (``last_settle`` says "cap"). A tab the site opened is already the active
        one (``_on_new_page``), as in BrowserGym."""
        start = time.monotonic()
        end = start + self.settle_cap_ms / 1000
        quiet = self.settle_quiet_ms / 1000
        quiet_since: float | None = None
        while True:
            try:
                busy, scripted = self._activity()
            except _Closed:   # the page closed itself (window.close): look at what is active now
                for page in [p for p in self._pages if p.is_closed()]:
                    self._on_page_closed(page)
                busy, scripted = True, True
            now = time.monotonic()
            if busy:
                quiet_since = None
            else:
                if not scripted:
                    self.last_settle = "quiet"
                    return
                quiet_since = now if quiet_since is None else quiet_since
                if now - quiet_since >= quiet:
                    self.last_settle = "quiet"
                    return
            if now >= end:
                self.last_settle = "cap"
                return
            try:
                # Sleeping in Playwright lets its events (a new tab, a load) reach the env.
                self.page.wait_for_timeout(_SETTLE_POLL_MS)
            except Exception:
                time.sleep(_SETTLE_POLL_MS / 1000)

    def _activity(self) -> tuple[bool, bool]:
        """(busy, scripted) of the tabs now: busy while any tab has a navigation pending, a
        tab the site opened is still blank, the active document asked for a tab that is not
        open yet, or the active document is busy (``_page_activity``)."""
        now = time.monotonic()
        for page in list(self._pages):
            watch = self._watch.get(id(page))
            if watch is None:
                continue
            if watch.pending:
                return True, True
            if (watch.by_site and watch.requests == 0 and page.url == "about:blank"
                    and now - watch.opened < POPUP_GRACE_MS / 1000):
                return True, True
        page = self.page
        got = _page_activity(page)
        watch = self._watch.get(id(page))
        if watch is not None and got["popups"] > watch.popups:
            return True, True   # a tab it asked for is not there yet
        return got["busy"], got["scripted"]

    def _locator(self, bid: Any) -> Any:
        loc = self.page.locator(_css_bid(str(bid)))
        if loc.count() == 0:
            raise _Fail(f"Could not find element with bid '{bid}' on the page")
        return loc.first

    def _nav_count(self) -> int:
        watch = self._watch.get(id(self.page))
        return watch.requests if watch is not None else 0

    def _expects_navigation(self, point: tuple[float, float] | None = None) -> bool:
        """Whether clicking at ``point`` (or pressing Enter on the focused element, when
        ``point`` is None) should start a navigation, judged from the DOM."""
        try:
            return bool(self.page.evaluate(_EXPECTS_NAVIGATION_JS, list(point) if point else None))
        except Exception:
            return False

    def _raw(self, perform: Callable[[], Any], expect: bool = False) -> None:
        """Perform raw input (mouse, keyboard) that may start a navigation, then settle.

        Raw input does not wait for the navigation it starts; the env gives it a short
        grace period to begin, or the whole action timeout when the DOM says one is due
        (a link or a submit button under the pointer, Enter in a form field)."""
        before = self._nav_count()
        pages = len(self._pages)
        perform()
        self._settle(self.timeout_ms if expect else RAW_INPUT_GRACE_MS, before, pages)

    def _settle(self, grace_ms: int = 0, before: int | None = None, pages: int | None = None) -> None:
        """Wait for the navigation an action started (if any) to load.

        Locator actions already wait for the navigations they start to commit; raw
        mouse/keyboard input does not, so it gets ``grace_ms`` for one to begin (unless
        one began since the ``before`` count of navigation requests)."""
        page = self.page
        watch = self._watch.get(id(page))
        if watch is None:
            return
        if grace_ms:
            start = watch.requests if before is None else before
            end = time.monotonic() + grace_ms / 1000
            while watch.requests == start and time.monotonic() < end:
                if pages is not None and len(self._pages) != pages:
                    return   # the input opened (or closed) a tab instead
                page.wait_for_timeout(20)
        end = time.monotonic() + self.timeout_ms / 1000
        while watch.pending and time.monotonic() < end:
            page.wait_for_timeout(15)
        if watch.pending:
            raise _Fail(f"Timeout {self.timeout_ms}ms exceeded waiting for the page to load")
        page.wait_for_load_state("load")

    def _describe(self, loc: Any) -> dict[str, Any]:
        return loc.evaluate(_DESCRIBE_JS)

    def _do_noop(self, wait_ms: float = 1000) -> None:
        return None

    def _do_send_msg_to_user(self, text: str) -> None:
        self._chat("assistant", str(text))

    def _do_report_infeasible(self, reason: str) -> None:
        self._chat("infeasible", str(reason))

    def _chat(self, role: str, message: str) -> None:
        state = self.served_state()
        state["browser"]["chat"].append({"role": role, "message": message})
        self._put_state(state)

    def _do_click(self, bid: str, button: str = "left", modifiers: Any = ()) -> None:
        loc = self._locator(bid)
        if self._describe(loc)["disabled"]:
            raise _Fail(f"Element with bid '{bid}' is disabled")
        loc.click(button=button, modifiers=list(modifiers) or None)
        self._settle()

    def _do_dblclick(self, bid: str, button: str = "left", modifiers: Any = ()) -> None:
        loc = self._locator(bid)
        if self._describe(loc)["disabled"]:
            raise _Fail(f"Element with bid '{bid}' is disabled")
        loc.dblclick(button=button, modifiers=list(modifiers) or None)
        self._settle()

    def _do_hover(self, bid: str) -> None:
        self._locator(bid).hover()
        self._settle()

    def _do_focus(self, bid: str) -> None:
        self._locator(bid).focus()

    def _do_fill(self, bid: str, value: str) -> None:
        self._locator(bid).fill(str(value))
        self._settle()

    def _do_clear(self, bid: str) -> None:
        self._locator(bid).clear()

    def _do_select_option(self, bid: str, options: Any) -> None:
        loc = self._locator(bid)
        info = self._describe(loc)
        if info["tag"] != "select":
            raise _Fail(f"Element with bid '{bid}' is not a <select> element")
        wanted = [options] if isinstance(options, str) else list(options)
        chosen: list[str] = []
        for w in wanted:
            hit = next((v for v, _ in info["options"] if v == w), None)
            if hit is None:
                hit = next((v for v, label in info["options"] if label.strip() == str(w).strip()), None)
            if hit is None:
                labels = ", ".join(repr(label) for _, label in info["options"][:10])
                raise _Fail(f"Option {w!r} not found in select '{bid}' (options: {labels})")
            chosen.append(hit)
        loc.select_option(value=chosen)
        self._settle()

    def _do_check(self, bid: str) -> None:
        self._locator(bid).check()
        self._settle()

    def _do_uncheck(self, bid: str) -> None:
        self._locator(bid).uncheck()
        self._settle()

    def _do_press(self, bid: str, key_comb: str) -> None:
        loc = self._locator(bid)
        enter = str(key_comb).split("+")[-1] == "Enter"

        def press() -> None:
            loc.press(str(key_comb))

        if enter:
            loc.focus()
        self._raw(press, expect=enter and self._expects_navigation())

    def _do_drag_and_drop(self, from_bid: str, to_bid: str) -> None:
        self._locator(from_bid).drag_to(self._locator(to_bid))
        self._settle()

    def _do_upload_file(self, bid: str, file: Any) -> None:
        self._locator(bid).set_input_files(file)
        self._settle()

    def _do_scroll(self, delta_x: float, delta_y: float) -> None:
        self.page.mouse.wheel(float(delta_x), float(delta_y))
        self.page.wait_for_timeout(30)   # let the compositor apply the scroll

    # -- coordinates and raw input (browser mode only)
    def _do_mouse_click(self, x: float, y: float, button: str = "left") -> None:
        expect = button == "left" and self._expects_navigation((float(x), float(y)))
        self._raw(lambda: self.page.mouse.click(float(x), float(y), button=button), expect)

    def _do_mouse_dblclick(self, x: float, y: float, button: str = "left") -> None:
        expect = button == "left" and self._expects_navigation((float(x), float(y)))
        self._raw(lambda: self.page.mouse.dblclick(float(x), float(y), button=button), expect)

    def _do_mouse_move(self, x: float, y: float) -> None:
        self.page.mouse.move(float(x), float(y))

    def _do_mouse_down(self, x: float, y: float, button: str = "left") -> None:
        self.page.mouse.move(float(x), float(y))
        self.page.mouse.down(button=button)

    def _do_mouse_up(self, x: float, y: float, button: str = "left") -> None:
        def up() -> None:
            self.page.mouse.move(float(x), float(y))
            self.page.mouse.up(button=button)

        self._raw(up)

    def _do_mouse_drag_and_drop(self, from_x: float, from_y: float, to_x: float, to_y: float) -> None:
        def drag() -> None:
            m = self.page.mouse
            m.move(float(from_x), float(from_y))
            m.down()
            m.move(float(to_x), float(to_y))
            m.up()

        self._raw(drag)

    def _do_keyboard_type(self, text: str) -> None:
        self.page.keyboard.type(str(text))

    def _do_keyboard_insert_text(self, text: str) -> None:
        self.page.keyboard.insert_text(str(text))

    def _do_keyboard_press(self, key: str) -> None:
        expect = str(key).split("+")[-1] == "Enter" and self._expects_navigation()
        self._raw(lambda: self.page.keyboard.press(str(key)), expect)

    def _do_keyboard_down(self, key: str) -> None:
        self.page.keyboard.down(str(key))

    def _do_keyboard_up(self, key: str) -> None:
        self._raw(lambda: self.page.keyboard.up(str(key)))

    # -- navigation and tabs
    def _resolve_url(self, url: str) -> str:
        """A goto target on the served origin: relative paths and this app's local URLs
        (localhost, 127.0.0.1, *.localhost, e.g. the in-process origin) map onto it."""
        url = str(url).strip()
        if url == "about:blank":
            return url
        current = self.page.url if self.page.url.startswith(self.base_url) else self.base_url + "/"
        try:
            full = urljoin(current, url)
            parts = urlsplit(full)
        except ValueError:   # an unclosed IPv6 bracket, say: the in-process browser says the same
            raise _Fail(f"net::ERR_INVALID_URL at {url}") from None
        if parts.scheme not in ("http", "https"):
            raise _Fail(f"net::ERR_ABORTED at {url} (only this app's pages can be opened)")
        host = parts.hostname or ""
        if full.startswith(self.base_url) or host in LOCAL_HOSTS or host.endswith(".localhost"):
            return self.base_url + (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        raise _Fail(f"net::ERR_NAME_NOT_RESOLVED at {url} (only this app's pages exist in the simulator)")

    def _do_goto(self, url: str) -> None:
        self.page.goto(self._resolve_url(url), wait_until="load")

    def _do_go_back(self) -> None:
        self.page.go_back(wait_until="load")
        self._settle()

    def _do_go_forward(self) -> None:
        self.page.go_forward(wait_until="load")
        self._settle()

    def _do_new_tab(self) -> None:
        self._open_page()
        self._active = len(self._pages) - 1

    def _do_tab_focus(self, index: int) -> None:
        if not 0 <= int(index) < len(self._pages):
            raise _Fail(f"No tab at index {index} ({len(self._pages)} open)")
        self._active = int(index)
        self.page.bring_to_front()

    def _do_tab_close(self) -> None:
        page = self.page
        if len(self._pages) == 1:
            self._open_page()   # closing the last tab leaves an empty one, as BrowserGym does
        page.close()
        self._active = min(self._active, len(self._pages) - 1)
        self.page.bring_to_front()

    # ------------------------------------------------------------------ observations
    def live_ui_state(self) -> dict[str, Any]:
        """The active page's UI state read from the DOM: ``values`` (changed text fields
        and single selects), ``multi`` (changed multiple selects), ``checked``,
        ``focused`` (bid or None) and ``scroll``."""
        try:
            return self.page.evaluate(_LIVE_STATE_JS)
        except Exception:
            return {"values": {}, "multi": {}, "checked": {}, "focused": None, "scroll": [0, 0]}

    def _content(self) -> str:
        for _ in range(3):
            try:
                return self.page.content()
            except Exception:   # caught mid-navigation: wait for the new document
                _safe(lambda: self.page.wait_for_load_state("load", timeout=self.timeout_ms))
        return ""

    def _observe_page(self) -> dict[str, Any]:
        """The page's part of an observation: url, html, axtree (with the live values of
        the form fields), tabs, focus and the screenshot."""
        page = self.page
        html = self._content()
        live = self.live_ui_state()
        values: dict[str, Any] = dict(live["values"])
        values.update(live["multi"])
        try:
            axtree = parse_page(html).axtree(values=values, checked=live["checked"], focused=live["focused"])
        except Exception as exc:   # e.g. a page with duplicate bids
            axtree = f"RootWebArea '' (AX tree unavailable: {exc})"
        screenshot = b""
        if self.screenshots:
            try:
                screenshot = page.screenshot(type="png", timeout=max(self.timeout_ms, 10_000))
            except Exception:
                screenshot = b""
        return {
            "url": page.url,
            "html": html,
            "axtree": axtree,
            "open_pages_urls": [p.url for p in self._pages],
            "active_page_index": self._active,
            "focused_element_bid": live["focused"] or "",
            "screenshot": screenshot,
        }

    def render(self) -> Any:
        """The active page's HTML (the live DOM)."""
        return self._content()

    def screenshot(self, full_page: bool = False) -> bytes:
        """A PNG of the active page."""
        return self.page.screenshot(type="png", full_page=full_page)

    # ------------------------------------------------------------------ state
    def snapshot(self) -> dict:
        """The session's state (``GET /_simweb/state``) with the active tab's live UI state
        (changed field values, focus, scroll) and the env's step counter filled in."""
        state = self.served_state()
        live = self.live_ui_state()
        b = state["browser"]
        tab = b["tabs"][b["active"]]
        fields: dict[str, Any] = dict(live["values"])
        fields.update({k: "\x1f".join(v) for k, v in live["multi"].items()})
        fields.update(live["checked"])
        if tab["url"] != "about:blank" and _request_url(self.page.url) == _request_url(
                self._url(shown_url(self.app, state, tab["url"]))):
            tab["fields"] = fields
            tab["focus"] = live["focused"]
            tab["scroll"] = [max(0, int(v)) for v in live["scroll"]]
        state["meta"]["step"] = self.episode.step_count
        return state

    def state_hash(self) -> str:
        """sha256 of the canonical JSON of :meth:`snapshot`."""
        return state_hash(self.snapshot())

    def restore(self, state: dict) -> None:
        """Continue from ``state``: the session takes it (``POST /_simweb/state``) and the
        browser shows its tabs (current pages and their UI state; earlier history entries
        are not replayed). Refuses, with StateError, a state of another app, world or spec."""
        self.app.check_state(state)
        state = deep_copy(state)
        self._put_state(state)
        task = state["meta"]["task"]
        ep = self.episode
        if task is None:
            ep.begin(None, None, None)
        elif ep.task is None or ep.task.id != task["id"] or ep.task.params != task["params"]:
            self._attach_task(task["id"], task["params"], state["meta"]["rng"]["seed"], state["meta"].get("variant", 0))
        self._show(state)
        self.backend.fresh(state)
        ep.step_count = int(state["meta"]["step"])
        ep.last_action = ep.last_error = ""
        ep.rebase(ep.verdict(state))

    def _attach_task(self, task_id: str, params: dict, seed: int, variant: int = 0) -> None:
        """Rebuild the task and its start state from (id, params): both are deterministic."""
        from ..episodes.env import episode_start

        self.episode.lookup(task_id)
        start = episode_start(self.app, task_id, seed, params, variant)
        self.episode.begin(start.task, deep_copy(start.state), None, budget=lambda: start.budget)

    def fork(self) -> BrowserEnv:
        """An independent env (its own browser context and session) at this env's state.
        It shares this env's server and browser, so it must be closed before this one."""
        child = BrowserEnv(self.app.name, self.world_seed, size=self.app.size, headless=self.headless,
                           viewport=self.viewport, task=self.default_task, max_steps=self.max_steps_override,
                           reward=self.reward_mode, timeout_ms=self.timeout_ms, screenshots=self.screenshots,
                           server=self.server, browser=self._browser, settle_quiet_ms=self.settle_quiet_ms,
                           settle_cap_ms=self.settle_cap_ms)
        child.episode = self.episode.copy()
        child.restore(self.snapshot())
        child.episode._potential, child.episode.ended = self.episode._potential, self.episode.ended
        return child

    # ------------------------------------------------------------------ teardown
    def close(self) -> None:
        """Close the browser context, and the browser and server if this env started them."""
        if getattr(self, "_closed", False):
            return
        self._closed = True
        if self._context is not None:
            _safe(self._context.close)
            self._context = None
        if self._owns_browser and getattr(self, "_browser", None) is not None:
            _safe(self._browser.close)
        if self._playwright is not None:
            _safe(self._playwright.stop)
            self._playwright = None
        if self._owns_server and getattr(self, "server", None) is not None:
            _safe(self.server.close)
        super().close()

    def __enter__(self) -> BrowserEnv:
        return self

    def __exit__(self, *exc: Any) -> Literal[False]:
        self.close()
        return False   # never swallow the exception


def make_browser_env(app: str, seed: int = 0, **kwargs: Any) -> BrowserEnv:
    """A :class:`BrowserEnv` for ``app`` on the world generated from ``seed``
    (keyword arguments as for BrowserEnv: size, headless, viewport, task, server, browser...)."""
    return BrowserEnv(app, seed, **kwargs)


__all__ = ["BrowserEnv", "BrowserError", "ServedApp", "launch_chromium", "chromium_executable", "load_rendered",
           "make_browser_env", "CHROMIUM_ARGS", "StateError"]
