"""A thin test driver over an env, shared by every app's behaviour tests: BrowserGym
actions (asserting they were possible), page reading and state shortcuts."""
from __future__ import annotations

import html as html_lib
import re
from typing import Any, Self

from simweb.web.browsing import origin

_FLASH = re.compile(r'<div[^>]*\bclass="flash (\w+)" role="(\w+)">(.*?)</div>', re.S)


class Site:
    def __init__(self, env: Any) -> None:
        self.env = env
        self.origin = origin(env.app.name)
        self.obs: dict = {}     # the last step's observation and info (empty before the first action)
        self.info: dict = {}

    # actions ---------------------------------------------------------------------
    def do(self, action: str) -> Self:
        self.obs, _, _, _, self.info = self.env.step(action)
        return self

    def ok(self, action: str) -> Self:
        """Run an action that must be possible (the element exists, the value fits)."""
        self.do(action)
        assert self.obs["last_action_error"] == "", f"{action}: {self.obs['last_action_error']}"
        return self

    def goto(self, url: str) -> Self:
        return self.ok(f"goto({url!r})")

    def click(self, bid: str) -> Self:
        return self.ok(f"click({bid!r})")

    def fill(self, bid: str, text: str) -> Self:
        return self.ok(f"fill({bid!r}, {text!r})")

    def select(self, bid: str, value: str) -> Self:
        return self.ok(f"select_option({bid!r}, {value!r})")

    def check(self, bid: str) -> Self:
        return self.ok(f"check({bid!r})")

    def blocked(self, bid: str, invalid: str | None = None) -> Self:
        """Click the submit button ``bid`` of a form that fails the browser's constraint
        validation and assert that nothing was sent, as in Chromium: no request reached the
        server, the state and the page are as they were, and the focus went to the first
        invalid field (``invalid``, when given)."""
        before = (self.state["meta"]["requests"], repr(self.state["runtime"]), self.env.browser.tab["url"])
        self.click(bid)
        assert (self.state["meta"]["requests"], repr(self.state["runtime"]), self.env.browser.tab["url"]) == before, \
            f"the form of {bid!r} was sent"
        if invalid is not None:
            assert self.obs["focused_element_bid"] == invalid
        return self

    def submit_unvalidated(self, bid: str) -> Self:
        """Send the form of ``bid`` as a client that does not validate would (a script,
        curl: the browser itself blocks an invalid form, see :meth:`blocked`), with the
        values its fields hold, and show the page the server answers with. For tests of the
        server's own validation."""
        err = self.env.browser.submit_unvalidated(bid)
        assert err is None, err
        self.obs, self.info = self.env.observe()
        return self

    def sign_in(self, uid: int, url: str = "/") -> Self:
        self.env.state["browser"]["user"] = uid
        return self.goto(url)

    def post(self, url: str, form: dict | None = None, referrer: str | None = None) -> Any:
        """A crafted form post, as if sent from ``referrer`` (default: the current page),
        for controls a page does not show."""
        return self.env.app.submit(self.env.state, url, form or {}, referrer=referrer)

    # reading -----------------------------------------------------------------------
    @property
    def state(self) -> dict:
        return self.env.state

    @property
    def rt(self) -> dict:
        return self.env.state["runtime"]

    @property
    def html(self) -> str:
        return self.obs["html"]

    @property
    def axtree(self) -> str:
        return self.obs["axtree"]

    @property
    def path(self) -> str:
        url = self.obs["url"]
        assert url.startswith(self.origin), url
        return url[len(self.origin):]

    @property
    def page(self) -> str:
        return self.info["page"]

    @property
    def status(self) -> int:
        return self.info["status"]

    def flash(self) -> tuple[str, str] | None:
        """(level, message) of the page's flash message, or None."""
        m = _FLASH.search(self.html)
        if m is None:
            return None
        assert m.group(2) == ("alert" if m.group(1) == "error" else "status")
        return m.group(1), html_lib.unescape(m.group(3)).strip()

    def error(self) -> str | None:
        f = self.flash()
        return f[1] if f and f[0] == "error" else None

    def success(self) -> str | None:
        f = self.flash()
        return f[1] if f and f[0] == "success" else None

    def bids(self) -> list[str]:
        """The bids of the AX tree, in order."""
        return re.findall(r"^\t*\[([^\]]+)\]", self.axtree, re.M)

    def has(self, bid: str) -> bool:
        return bid in self.bids()

    def text_of(self, bid: str) -> str:
        """The text content of the element carrying ``bid`` in the HTML."""
        m = re.search(r'<(\w+)[^>]*\bbid="' + re.escape(bid) + r'"[^>]*>(.*?)</\1>', self.html, re.S)
        assert m, f"no element {bid!r} on {self.path}"
        return html_lib.unescape(re.sub(r"<[^>]+>", "", m.group(2))).strip()
