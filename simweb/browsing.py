"""The in-process browser: executes BrowserGym actions against an app's pages.

It does what Chromium does with a server-rendered, JavaScript-free page: a link click is
a GET, a submit is a form POST built from the form's controls (the same entry list a real
browser sends), fill/select/check change only the page's UI state (kept in the state's
browser layer), history is a list with a cursor. Every mistake an agent can make comes
back as an error string (``last_action_error``), never an exception.
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Any
from urllib.parse import urlencode, urljoin, urlsplit

from .actions import ActionError, parse_action
from .app import App, Response
from .axtree import Element, Form, Page, parse_page
from .state import new_tab

TEXT_INPUTS = {"text", "email", "password", "search", "tel", "url", "number", "textarea", "date", "time",
               "datetime-local", "month", "week"}
LOCAL_HOSTS = ("localhost", "127.0.0.1", "[::1]")
COORDINATE_ACTIONS = {"mouse_click", "mouse_move", "mouse_dblclick", "drag_and_drop", "upload_file"}


@lru_cache(maxsize=512)
def parse_cached(html: str) -> Page:
    """Parsed pages by their HTML: rollouts revisit the same pages (home, cart, a product)
    again and again, and a Page is immutable, so one parse serves every visit."""
    return parse_page(html)


@lru_cache(maxsize=4096)
def _parse_action(text: str) -> Any:
    """parse_action by the action's text: agents repeat the same strings (an oracle plan's
    clicks, a policy's favourite actions), an Action is immutable, and parsing one costs an
    ast.parse under a warnings filter (about 50 us). Errors are not cached (they raise)."""
    return parse_action(text)


def origin(app_name: str) -> str:
    """The origin shown in in-process URLs ('.localhost' names are reserved for loopback)."""
    return f"http://{app_name}.simweb.localhost"


#: An absolute path (not a network path) of unreserved, sub-delimiter (but ``;``: urljoin
#: splits path parameters off and drops an empty one), ``%``, ``:``, ``@``, ``/`` and ``?``
#: characters: nothing urljoin or urlsplit would rewrite or split off.
_PLAIN_PATH = re.compile(r"/(?!/)[A-Za-z0-9\-._~%!$&'()*+,=:@/?]*\Z")


class SimBrowser:
    """Executes actions on one state. Keeps a parse cache of the active page's HTML."""

    def __init__(self, app: App, state: dict):
        self.app = app
        self.state = state
        self.origin = origin(app.name)
        self._html: str | None = None
        self._page: Page | None = None
        self.last_response: Response | None = None
        self.site_error: str | None = None   # the site's error message after the last action

    # ------------------------------------------------------------------ page cache
    def invalidate(self) -> None:
        self._html = None
        self._page = None

    @property
    def tab(self) -> dict:
        b = self.state["browser"]
        return b["tabs"][b["active"]]

    def html(self) -> str:
        if self._html is None:
            self._html = self.app.render(self.state)
        return self._html

    def page(self) -> Page:
        if self._page is None:
            self._page = parse_cached(self.html())
        return self._page

    def axtree(self) -> str:
        tab = self.tab
        fields = tab["fields"]
        values = {k: v for k, v in fields.items() if isinstance(v, str)}
        checked = {k: v for k, v in fields.items() if isinstance(v, bool)}
        return self.page().axtree(values=values, checked=checked, focused=tab["focus"])

    # ------------------------------------------------------------------ navigation
    def _navigate(self, url: str, push: bool = True) -> None:
        resp = self.app.navigate(self.state, url, push=push)
        self._html = resp.html
        self._page = None
        self.last_response = resp
        if resp.error:
            self.site_error = resp.error   # an error page (404, empty cart, ...)

    def _absolute_path(self, href: str) -> str | None:
        """Resolve a link or typed URL to a path on this app; None for foreign hosts."""
        if href == "about:blank":
            return href
        # An absolute path (or this origin's URL of one) of plain URL characters without dot
        # segments or fragment: what urljoin and urlsplit below would make of it, without
        # them (most links).
        rest = href[len(self.origin):] if href.startswith(self.origin) else href
        if _PLAIN_PATH.match(rest) and "/." not in rest.partition("?")[0]:
            return rest[:-1] if rest.endswith("?") and rest.count("?") == 1 else rest
        base = self.origin + (self.tab["url"] if self.tab["url"].startswith("/") else "/")
        try:
            full = urljoin(base, href)
            parts = urlsplit(full)
        except ValueError:   # an unclosed IPv6 bracket, say: no request is made, as in a browser
            raise _Fail(f"net::ERR_INVALID_URL at {href}") from None
        host = parts.hostname or ""
        if parts.scheme not in ("http", "https"):
            return None
        if full.startswith(self.origin) or host in ("localhost", "127.0.0.1", "::1") or host.endswith(".localhost"):
            return parts.path + (f"?{parts.query}" if parts.query else "")
        return None

    def display_url(self, url: str) -> str:
        return url if url == "about:blank" else self.origin + url

    # ------------------------------------------------------------------ actions
    def execute(self, text: str) -> str | None:
        """Run one action string; return the error message, or None on success."""
        self.site_error = None
        try:
            action = _parse_action(text) if type(text) is str else parse_action(text)
        except ActionError as exc:
            return str(exc)
        handler = getattr(self, f"_do_{action.name}", None)
        if action.name in COORDINATE_ACTIONS or handler is None:
            return (f"{action.name}() needs coordinates on a rendered page: use the browser backend "
                    f"(simweb.make(..., backend='browser'))")
        try:
            return handler(*action.args)   # args hold every parameter, defaults filled in
        except _Fail as exc:
            return str(exc)

    def _element(self, bid: str) -> Element:
        el = self.page().elements.get(str(bid))
        if el is None:
            raise _Fail(f"Could not find element with bid '{bid}' on the page")
        return el

    def _do_noop(self, wait_ms: float = 1000) -> None:
        return None

    def _do_send_msg_to_user(self, text: str) -> None:
        self.state["browser"]["chat"].append({"role": "assistant", "message": str(text)})

    def _do_report_infeasible(self, reason: str) -> None:
        self.state["browser"]["chat"].append({"role": "infeasible", "message": str(reason)})

    def _do_goto(self, url: str) -> str | None:
        path = self._absolute_path(str(url))
        if path is None:
            return f"net::ERR_NAME_NOT_RESOLVED at {url} (only this app's pages exist in the simulator)"
        self._navigate(path)
        return None

    def _do_go_back(self) -> None:
        tab = self.tab
        if tab["cursor"] > 0:
            tab["cursor"] -= 1
            self._navigate(tab["history"][tab["cursor"]], push=False)

    def _do_go_forward(self) -> None:
        tab = self.tab
        if tab["cursor"] < len(tab["history"]) - 1:
            tab["cursor"] += 1
            self._navigate(tab["history"][tab["cursor"]], push=False)

    def _do_new_tab(self) -> None:
        b = self.state["browser"]
        b["tabs"].append(new_tab())
        b["active"] = len(b["tabs"]) - 1
        self.invalidate()

    def _do_tab_focus(self, index: int) -> str | None:
        b = self.state["browser"]
        if not 0 <= int(index) < len(b["tabs"]):
            return f"No tab at index {index} ({len(b['tabs'])} open)"
        b["active"] = int(index)
        self.invalidate()
        return None

    def _do_tab_close(self) -> None:
        b = self.state["browser"]
        if len(b["tabs"]) == 1:
            b["tabs"][0] = new_tab()   # closing the last tab leaves an empty one, as BrowserGym does
        else:
            b["tabs"].pop(b["active"])
            b["active"] = max(0, b["active"] - 1)
        self.invalidate()

    def _do_scroll(self, delta_x: float, delta_y: float) -> None:
        sx, sy = self.tab["scroll"]
        self.tab["scroll"] = [max(0, int(sx + delta_x)), max(0, int(sy + delta_y))]

    def _do_hover(self, bid: str) -> None:
        self._element(bid)

    def _do_focus(self, bid: str) -> None:
        self._element(bid)
        self.tab["focus"] = str(bid)

    def _do_click(self, bid: str, button: str = "left", modifiers: Any = ()) -> str | None:
        el = self._element(bid)
        if el.disabled:
            return f"Element with bid '{bid}' is disabled"
        self.tab["focus"] = el.bid
        if el.tag == "a" and el.href is not None:
            path = self._absolute_path(el.href)
            if path is None:
                return f"net::ERR_NAME_NOT_RESOLVED at {el.href}"
            self._navigate(path)
            return None
        if el.input_type in ("checkbox",):
            self.tab["fields"][el.bid] = not self._checked(el)
            return None
        if el.input_type == "radio":
            self._set_radio(el)
            return None
        if el.form is not None and self._is_submitter(el):
            return self._submit(self.page().form(el.form), el)
        if el.tag == "option":
            return None
        return None

    _do_dblclick = _do_click

    def _do_fill(self, bid: str, value: str) -> str | None:
        el = self._element(bid)
        if el.input_type not in TEXT_INPUTS:
            return f"Element with bid '{bid}' is not an <input>, <textarea> or [contenteditable] element"
        if el.disabled or "readonly" in el.attrs:
            return f"Element with bid '{bid}' is not editable"
        value = str(value)
        if el.input_type == "number" and value.strip() not in ("",):
            try:
                float(value)
            except ValueError:
                return f"Cannot type text into input[type=number] (bid '{bid}')"
        max_len = el.attrs.get("maxlength")
        if max_len and max_len.isdigit():
            value = value[: int(max_len)]   # a browser silently truncates to maxlength
        self.tab["fields"][el.bid] = value
        self.tab["focus"] = el.bid
        return None

    def _do_clear(self, bid: str) -> str | None:
        return self._do_fill(bid, "")

    def _do_select_option(self, bid: str, options: Any) -> str | None:
        el = self._element(bid)
        if el.tag != "select":
            return f"Element with bid '{bid}' is not a <select> element"
        wanted = [options] if isinstance(options, str) else list(options)
        chosen = []
        for w in wanted:
            hit = next((v for v, label, _ in el.options if v == w), None)
            if hit is None:
                hit = next((v for v, label, _ in el.options if label.strip() == str(w).strip()), None)
            if hit is None:
                labels = ", ".join(repr(label) for _, label, _ in el.options[:10])
                return f"Option {w!r} not found in select '{bid}' (options: {labels})"
            chosen.append(hit)
        # Choosing an option programmatically does not move focus in a real browser.
        self.tab["fields"][el.bid] = chosen[0] if not el.multiple else "\x1f".join(chosen)
        return None

    def _do_check(self, bid: str) -> str | None:
        el = self._element(bid)
        if el.input_type not in ("checkbox", "radio"):
            return f"Element with bid '{bid}' is not a checkbox or radio button"
        if not self._checked(el):
            # Checking clicks the box (focusing it) only when its state changes.
            self.tab["focus"] = el.bid
            if el.input_type == "radio":
                self._set_radio(el)
            else:
                self.tab["fields"][el.bid] = True
        return None

    def _do_uncheck(self, bid: str) -> str | None:
        el = self._element(bid)
        if el.input_type != "checkbox":
            return f"Element with bid '{bid}' is not a checkbox"
        if self._checked(el):
            self.tab["focus"] = el.bid
            self.tab["fields"][el.bid] = False
        return None

    def _do_press(self, bid: str, key_comb: str) -> str | None:
        el = self._element(bid)
        self.tab["focus"] = el.bid
        return self._key(el, key_comb)

    def _do_keyboard_press(self, key: str) -> str | None:
        focus = self.tab["focus"]
        el = self.page().elements.get(focus) if focus else None
        return self._key(el, key) if el is not None else None

    def _do_keyboard_type(self, text: str) -> str | None:
        focus = self.tab["focus"]
        el = self.page().elements.get(focus) if focus else None
        if focus is None or el is None or el.input_type not in TEXT_INPUTS:
            return None   # typing with nothing editable focused does nothing
        current = self.tab["fields"].get(focus, el.value or "")
        return self._do_fill(focus, str(current) + str(text))

    def _key(self, el: Element, key: str) -> str | None:
        if key == "Enter" and el.form is not None and el.input_type in TEXT_INPUTS - {"textarea"}:
            form = self.page().form(el.form)
            # Implicit submission: the form's first submit button is the submitter.
            submitter = next((c for c in form.controls if self._is_submitter(c)), None)
            return self._submit(form, submitter)
        if key == "Enter" and el.tag == "a" and el.href is not None and el.bid is not None:
            return self._do_click(el.bid)
        return None

    # ------------------------------------------------------------------ forms
    @staticmethod
    def _is_submitter(el: Element) -> bool:
        if el.form is None:
            return False
        if el.tag == "button":
            return el.attrs.get("type", "submit").lower() == "submit"
        return el.tag == "input" and el.input_type in ("submit", "image")

    def _checked(self, el: Element) -> bool:
        v = self.tab["fields"].get(el.bid) if el.bid else None
        return el.checked if v is None else bool(v)

    def _set_radio(self, el: Element) -> None:
        form = self.page().form(el.form) if el.form is not None else None
        peers = form.controls if form else [e for e in self.page().elements.values()]
        for other in peers:
            if other.input_type == "radio" and other.field_name == el.field_name and other.bid:
                self.tab["fields"][other.bid] = other.bid == el.bid

    def form_entries(self, form: Form, submitter: Element | None) -> list[tuple[str, str]]:
        """The (name, value) pairs a browser would submit, in document order."""
        fields = self.tab["fields"]
        out: list[tuple[str, str]] = []
        for c in form.controls:
            if c.disabled or not c.field_name:
                continue
            t = c.input_type
            if c.tag == "button" or t in ("submit", "image", "reset", "button"):
                if c is submitter or (submitter is not None and c.bid is not None and c.bid == submitter.bid):
                    out.append((c.field_name, c.value or ""))
                continue
            if t in ("checkbox", "radio"):
                if self._checked(c):
                    out.append((c.field_name, c.value if c.value is not None else "on"))
                continue
            if t == "file":
                continue
            if c.tag == "select":
                v = fields.get(c.bid) if c.bid else None
                if v is None:
                    if c.multiple:
                        for val, _, sel in c.options:
                            if sel:
                                out.append((c.field_name, val))
                        continue
                    v = c.value or ""
                for part in str(v).split("\x1f"):
                    out.append((c.field_name, part))
                continue
            v = fields.get(c.bid) if c.bid else None
            out.append((c.field_name, str(v) if v is not None else (c.value or "")))
        return out

    def _submit(self, form: Form, submitter: Element | None) -> str | None:
        action = form.action
        method = form.method
        if submitter is not None:
            action = submitter.attrs.get("formaction", action)
            method = submitter.attrs.get("formmethod", method).lower()
        target = self._absolute_path(action or self.tab["url"])
        if target is None:
            return f"net::ERR_NAME_NOT_RESOLVED at {action}"
        entries = self.form_entries(form, submitter)
        if method == "get":
            path = target.partition("?")[0]
            self._navigate(path + ("?" + urlencode(entries) if entries else ""))
            return None
        data: dict[str, Any] = {}
        for k, v in entries:
            if k in data:
                data[k] = data[k] + [v] if isinstance(data[k], list) else [data[k], v]
            else:
                data[k] = v
        resp = self.app.submit(self.state, target, data)
        if resp.location is not None:
            self._navigate(resp.location)
        else:
            self._navigate_error(resp)
        if resp.error:
            self.site_error = resp.error   # what the site showed; the redirect's page follows
        return None

    def _navigate_error(self, resp: Response) -> None:
        self._navigate(self.tab["url"], push=False)


class _Fail(Exception):
    """An action that cannot be performed; its message becomes last_action_error."""
