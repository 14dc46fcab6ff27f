"""A live backend on any URL: a real site in real Chromium behind simweb's env interface.

    env = WebEnv()
    obs, info = env.reset(options={"url": "https://example.org/", "goal": "Find the contact page"})
    obs["axtree"]          # BrowserGym's flattened AX-tree lines, with bids
    env.step("click('12')")
    env.step("send_msg_to_user('It is at /contact')")   # ends the episode
    env.close()

:class:`WebEnv` is :class:`simweb.browser.BrowserEnv` without a simweb server: the same
observation keys (``url``, ``goal``, ``html``, ``axtree``, ``screenshot``, ``last_action``,
``last_action_error``, ``open_pages_urls``, ``active_page_index``,
``focused_element_bid``, ``chat_messages``, ``step``), the same BrowserGym action strings
performed the same way (element actions, coordinates, keyboard, tabs, ``goto`` to any
http(s) URL) and the same waits for the navigations an action starts.

Sites move on by themselves after an action, and the observation of that action shows
where they got to (BrowserEnv's settle window): a tab the site opens (``target="_blank"``,
``window.open``) is the active tab, as in BrowserGym; a form posted by ``fetch`` or XHR
that then sets ``location``, a background task polled until it redirects, a redirect by
script are waited for until the page has been idle for ``settle_quiet_ms`` (100 ms),
never longer than ``settle_cap_ms`` (default: ``timeout_ms``, 10 s). A page that polls
for ever is observed at the cap with no error (``env.last_settle == "cap"``).

A site has no simweb bids, so before every observation the env stamps a ``bid``
attribute on every element that has none, as BrowserGym does: ``"0"``, ``"1"``... in
document order, counted per document, so an element keeps its bid until the page
navigates; a ``bid`` the site itself uses twice is replaced on its second element.

There is no state and no verifier: the reward is 0, ``info["verdict"]`` is None, an
episode ends when the agent answers (``send_msg_to_user`` / ``report_infeasible``) or
runs out of steps (a step after that runs nothing), and snapshot / restore / fork raise
:class:`LiveStateError`.
"""
from __future__ import annotations

from typing import Any
from urllib.parse import urljoin, urlsplit

from ..episodes.episode import Episode, observation_space
from ..judging.taskmodel import bucket_for, episode_budget
from ..serving.browser import SETTLE_QUIET_MS, BrowserEnv, ChromiumBackend, _Fail, _safe, launch_chromium
from ..web.spaces import JsonValue, Unicode

#: An ad-hoc goal has no fact groups: the budget rule gives WebGym's easy test budget (30).
DEFAULT_MAX_STEPS = episode_budget(bucket_for(0), cap=None)

#: Gives every element without a bid the next number of the document's counter.
_STAMP_BIDS_JS = r"""
() => {
  if (window.__simwebBidCounter === undefined) window.__simwebBidCounter = 0;
  const seen = new Set();
  const all = [];
  const walk = (root) => {
    for (const el of root.querySelectorAll('*')) {
      all.push(el);
      if (el.shadowRoot) walk(el.shadowRoot);
    }
  };
  walk(document);
  for (const el of all) {
    let bid = el.getAttribute('bid');
    if (bid === null || bid === '' || seen.has(bid)) {
      do { bid = String(window.__simwebBidCounter++); } while (document.querySelector('[bid="' + bid + '"]'));
      el.setAttribute('bid', bid);
    }
    seen.add(bid);
  }
  return all.length;
}
"""


class LiveStateError(RuntimeError):
    """A live site has no simweb state to snapshot, restore or fork."""


class SiteBackend(ChromiumBackend):
    """WebEnv's backend: Chromium on any site. There is no simweb state: what the episode
    reads is the chat (the agent's answer), kept by the env."""

    env: WebEnv

    def execute(self, action: str) -> str | None:
        self.env._stamp()   # bids of a page that changed since the last observation
        return self.env.execute(action)

    def state(self) -> dict:
        return {"browser": {"chat": self.env._chat_log}}

    def observe(self, state: dict) -> dict[str, Any]:
        self.env._stamp()
        return self.env._observe_page()

    def page_info(self, state: dict) -> dict[str, Any]:
        return {"url": self.env.page.url, "goal": self.env.episode.goal}


class WebEnv(BrowserEnv):
    """simweb's env interface on any website, in Debian's Chromium (see the module doc).

    ``reset(options={"url": ..., "goal": ...})`` opens the URL in a fresh browser context
    (``url`` defaults to the constructor's ``start_url``). ``browser=`` shares a started
    Playwright ``Browser`` (then not closed by :meth:`close`). ``settle_quiet_ms`` and
    ``settle_cap_ms`` shape the settle window after each action (see the module doc)."""

    def __init__(self, start_url: str | None = None, *, headless: bool = True, viewport: tuple[int, int] = (1280, 768),
                 max_steps: int = DEFAULT_MAX_STEPS, timeout_ms: int = 10_000, screenshots: bool = True,
                 browser: Any = None, settle_quiet_ms: int = SETTLE_QUIET_MS, settle_cap_ms: int | None = None):
        # BrowserEnv's browser plumbing, without its served app.
        self.start_url = start_url
        self.world_seed = 0
        self.default_task = None
        self.episode = Episode(None, max_steps=max_steps)
        self.backend = SiteBackend(self)
        self.timeout_ms = int(timeout_ms)
        self._settle_params(settle_quiet_ms, settle_cap_ms)
        self.viewport = (int(viewport[0]), int(viewport[1]))
        self.headless = headless
        self.screenshots = screenshots
        self.action_space = Unicode()
        self.observation_space = observation_space(screenshot=JsonValue(bytes))
        self._playwright: Any = None
        self._owns_server = False
        self._owns_browser = browser is None
        self._context: Any = None
        self._closed = False
        self.server = None   # type: ignore[assignment]  # no simweb server: the paths that use it are overridden
        self.app = None   # type: ignore[assignment]
        self.base_url = ""
        self._state = None
        self._chat_log: list[dict[str, str]] = []
        try:
            if browser is None:
                from playwright.sync_api import sync_playwright

                self._playwright = sync_playwright().start()
                browser = launch_chromium(self._playwright, headless=headless)
            self._browser = browser
            self._new_context()
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ episode
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[dict, dict]:
        """Open ``options["url"]`` (or ``start_url``) in a fresh context; ``options["goal"]``
        is the goal shown in observations."""
        options = options or {}
        url = options.get("url") or self.start_url
        if not url:
            raise ValueError("WebEnv.reset needs options={'url': ...} (or WebEnv(start_url))")
        self._new_context()
        self._chat_log = []
        self.episode.begin(None, None, None, goal=str(options.get("goal", "")))
        self.episode.last_error = self.execute(f"goto({str(url)!r})") or ""
        state = self.backend.state()
        return self.episode.observation(self.backend, state), self.episode.info(self.backend, state, None)

    @property
    def goal(self) -> str:
        """The goal of the current episode (``options["goal"]`` of reset)."""
        return self.episode.goal

    def _stamp(self) -> None:
        for _ in range(3):
            try:
                self.page.evaluate(_STAMP_BIDS_JS)
                return
            except Exception:   # caught mid-navigation: wait for the new document
                _safe(lambda: self.page.wait_for_load_state("load", timeout=self.timeout_ms))

    # ------------------------------------------------------------------ actions that differ
    def _resolve_url(self, url: str) -> str:
        url = str(url).strip()
        if url == "about:blank":
            return url
        current = self.page.url if self.page.url.startswith(("http://", "https://")) else ""
        try:
            full = urljoin(current, url) if current else url
            if "://" not in full:
                full = "https://" + full
            scheme = urlsplit(full).scheme
        except ValueError:   # an unclosed IPv6 bracket, say
            raise _Fail(f"net::ERR_INVALID_URL at {url}") from None
        if scheme not in ("http", "https"):
            raise _Fail(f"net::ERR_ABORTED at {url} (only http and https pages can be opened)")
        return full

    def _do_send_msg_to_user(self, text: str) -> None:
        self._chat_log.append({"role": "assistant", "message": str(text)})

    def _do_report_infeasible(self, reason: str) -> None:
        self._chat_log.append({"role": "infeasible", "message": str(reason)})

    # ------------------------------------------------------------------ no simweb state
    def served_state(self) -> dict:
        raise LiveStateError("a live site has no simweb state")

    def snapshot(self) -> dict:
        raise LiveStateError("a live site has no simweb state to snapshot")

    def restore(self, state: dict) -> None:
        raise LiveStateError("a live site has no simweb state to restore")

    def fork(self) -> WebEnv:
        raise LiveStateError("a live site cannot be forked (it has no simweb state)")

    def state_hash(self) -> str:
        raise LiveStateError("a live site has no simweb state")


def make_web_env(start_url: str | None = None, **kwargs: Any) -> WebEnv:
    """A :class:`WebEnv` (keyword arguments as for WebEnv)."""
    return WebEnv(start_url, **kwargs)


__all__ = ["WebEnv", "LiveStateError", "make_web_env"]
