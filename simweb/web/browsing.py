"""The in-process browser: executes BrowserGym actions against an app's pages.

It does what Chromium does with a server-rendered, JavaScript-free page: a link click is
a GET, a submit is a form POST built from the form's controls (the same entry list a real
browser sends), fill/select/check change only the page's UI state (kept in the state's
browser layer), history is a list with a cursor. Every mistake an agent can make comes
back as an error string (``last_action_error``), never an exception.
"""
from __future__ import annotations

import re
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal, InvalidOperation
from functools import lru_cache
from html import escape as html_escape
from html import unescape as html_unescape
from typing import Any
from urllib.parse import urlencode, urljoin, urlsplit

from ..core.state import new_tab
from ..runtime.app import MAX_HISTORY, App, Response
from ..runtime.history import seal, secret_fields
from ..runtime.url_schemes import UrlScheme
from ..runtime.variants import shown_message, url_scheme
from .actions import ActionError, parse_action
from .axtree import Element, Form, Page, parse_page

TEXT_INPUTS = {"text", "email", "password", "search", "tel", "url", "number", "textarea", "date", "time",
               "datetime-local", "month", "week"}
#: Controls whose text the keyboard edits at a caret (the date and time types edit by part).
EDITABLE_TEXT = {"text", "email", "password", "search", "tel", "url", "number", "textarea"}
#: Input types with a selection API (setSelectionRange throws on the others).
_SELECTABLE = {"text", "search", "password", "tel", "url"}
_PICKER_INPUTS = {"date", "time", "datetime-local", "month", "week"}
_EDIT_KEYS = {"Backspace", "Space", " ", "Enter", "Escape", "ArrowLeft", "ArrowRight", "ArrowUp", "ArrowDown"}
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


#: The URL Chromium shows for its network-error page (a host that does not resolve).
NET_ERROR_URL = "chrome-error://chromewebdata/"


def net_error_html(url: str) -> str:
    """The page the tab shows for an entry at another host: Chromium's network-error page
    (no element with a bid; its title is the host)."""
    host = html_escape(urlsplit(url).hostname or url)
    return (f"<!DOCTYPE html><html><head><title>{host}</title></head><body><h1>This site can\u2019t be "
            f"reached</h1><p>{host}\u2019s server IP address could not be found.</p>"
            f"<p>ERR_NAME_NOT_RESOLVED</p></body></html>")


def _foreign(url: str) -> bool:
    """Whether a tab or history URL is at another host (this app's are paths)."""
    return "://" in url


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
        self._dom: tuple[str, Any] | None = None   # (html, selectolax tree) for hit tests
        #: (rendered HTML, toggled details, the HTML with their open state): see :meth:`html`
        self._shown: tuple[str, tuple[tuple[str, bool], ...], str] | None = None

    # ------------------------------------------------------------------ page cache
    def invalidate(self) -> None:
        self._html = None
        self._page = None

    @property
    def tab(self) -> dict:
        b = self.state["browser"]
        return b["tabs"][b["active"]]

    def _rendered(self) -> str:
        """The page's HTML as the site rendered it (no UI state applied)."""
        if self._html is None:
            url = self.tab["url"]
            self._html = net_error_html(url) if _foreign(url) else self.app.render(self.state)
        return self._html

    def html(self) -> str:
        """The page's HTML as the browser's DOM has it: the rendered page, with the
        ``<details>`` the tab's UI state opened or closed (a ``bool`` in ``tab["fields"]``
        under the details' bid) carrying ``open`` or not, as Chromium's DOM reflects a
        toggled details in its ``open`` attribute."""
        html = self._rendered()
        fields = self.tab["fields"]
        if not any(v.__class__ is bool for v in fields.values()):
            return html   # no checkbox or details state: the common case
        toggled = tuple(sorted(self._toggled_details(html, fields).items()))
        if not toggled:
            return html
        shown = self._shown
        if shown is None or shown[0] is not html or shown[1] != toggled:
            shown = self._shown = (html, toggled, with_details_open(html, dict(toggled)))
        return shown[2]

    @staticmethod
    def _toggled_details(html: str, fields: dict) -> dict[str, bool]:
        """The details of the rendered page whose open state the UI state changes: bid ->
        open."""
        elements = parse_cached(html).elements
        out = {}
        for bid, v in fields.items():
            if v.__class__ is bool:
                el = elements.get(bid)
                if el is not None and el.tag == "details" and ("open" in el.attrs) != v:
                    out[bid] = v
        return out

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
    def _navigate(self, url: str, push: bool = True, *, form: bool = False, left: int | None = None) -> None:
        """GET ``url`` in the active tab. With ``push``, the tab's history gets an entry as
        Chromium's: a new one, except that a navigation that is not a form submission to
        the URL the tab shows replaces the current entry (a link to the page itself), and
        keeps the entries after it;
        a form submission, or a redirect that lands on the same URL, adds one. Without
        ``push`` (go_back, go_forward), the current entry takes the URL the GET ended at.

        Form state, as Chromium keeps it per history entry: the fields of the page a
        navigation leaves (entry ``left``, the cursor's for a push) are saved with that
        entry, and a history traversal (``left`` given) fills the page it lands on back
        in from its entry's saved fields (:meth:`_save_fields`, :meth:`_restore_fields`)."""
        tab = self.tab
        if push:
            self._save_fields(tab, tab["cursor"])
        elif left is not None:
            self._save_fields(tab, left)
        # The URL as Chromium's history entry has it: an empty query ('page?', from a link
        # to '?' or a GET form without fields) is another URL than 'page' there, so going
        # to it adds an entry; the request (and the tab's URL) is the page's.
        shown = url
        if url.endswith("?") and url.count("?") == 1:
            url = url[:-1]
        kept = tab["history"][: tab["cursor"] + 1]
        current = kept[-1] if kept and kept[-1] in (tab["url"], tab["url"] + "?") else tab["url"]
        replace = not form and shown == current
        resp = self._net_error(url) if _foreign(url) else self.app.navigate(self.state, url, push=False)
        if push:
            entry = shown if tab["url"] == url else tab["url"]
            saved = tab.get("saved_fields") or {}
            if replace:
                # Chromium replaces the current entry and keeps those after it (go_forward
                # still works); the replaced document's form state goes with it.
                tab["history"] = kept[:-1] + [entry] + tab["history"][len(kept):]
                tab["cursor"] = len(kept) - 1
                saved.pop(str(tab["cursor"]), None)
            else:
                hist = kept + [entry]
                dropped = max(0, len(hist) - MAX_HISTORY)
                del hist[:dropped]   # the oldest entries go, as in a real browser
                tab["history"] = hist
                tab["cursor"] = len(hist) - 1
                # the entries after the one left are gone, with their form state
                saved = {str(int(k) - dropped): v for k, v in saved.items() if dropped <= int(k) < len(kept)}
            if saved:
                tab["saved_fields"] = saved
            else:
                tab.pop("saved_fields", None)
        elif tab["history"] and 0 <= tab["cursor"] < len(tab["history"]):
            # A history entry that redirects (a page that now asks to sign in) takes the URL
            # it ends at, as Chromium's entry does; the document it ends at is another one
            # than the entry's, so the form state kept with the entry is not restored there
            # (Chromium shows the sign-in page empty)
            tab["history"][tab["cursor"]] = shown if tab["url"] == url else tab["url"]
            if tab["url"] != url:
                self._drop_fields(tab, tab["cursor"])
        self._html = resp.html
        self._page = None
        self.last_response = resp
        if resp.error:
            self.site_error = shown_message(self.app, self.state, resp.error)   # an error page (404, empty cart, ...)
        if left is not None:
            self._restore_fields(tab)

    def _net_error(self, url: str) -> Response:
        """Show ``url`` (at another host) as Chromium does when the host does not resolve:
        its network-error page, with no request to this app; the tab's UI state starts
        afresh as on any new document."""
        tab = self.tab
        tab.update(url=url, page="net-error", status=0, fields={}, focus=None, scroll=[0, 0], flash=None)
        tab.pop("caret", None)
        tab.pop("parts", None)
        return Response(status=0, url=url, page="net-error", html=net_error_html(url))

    def _save_fields(self, tab: dict, index: int) -> None:
        """Keep the fields of history entry ``index``'s page (what was typed, chosen and
        checked there) with the entry, as Chromium saves a document's form state when the
        document is left; an entry left with no fields changed keeps none. A details' open
        state is not form state: Chromium shows the page again with its details as served
        (measured: a menu opened, a link in it followed, go_back shows the menu closed). A field its
        form's event declares secret (a card number, a security code) is kept sealed, as
        the request history keeps it: no state shows one in clear text
        (:mod:`simweb.runtime.history`)."""
        saved = tab.get("saved_fields") or {}
        fields = {k: seal(v) if isinstance(v, str) and self._secret(k) else v for k, v in tab["fields"].items()
                  if v.__class__ is not bool or not self._is_details(k)}
        if fields:
            saved[str(index)] = fields
        else:
            saved.pop(str(index), None)
        if saved:
            tab["saved_fields"] = saved
        else:
            tab.pop("saved_fields", None)

    def _drop_fields(self, tab: dict, index: int) -> None:
        """Forget the form state kept with history entry ``index``."""
        saved = tab.get("saved_fields") or {}
        saved.pop(str(index), None)
        if not saved:
            tab.pop("saved_fields", None)

    def _is_details(self, bid: str) -> bool:
        """Whether ``bid`` is a ``<details>`` of the page shown."""
        el = self.page().elements.get(bid)
        return el is not None and el.tag == "details"

    def _secret(self, bid: str) -> bool:
        """Whether the control ``bid`` of the page shown is a field its form's event
        declares secret."""
        page = self.page()
        el = page.elements.get(bid)
        if el is None or el.form is None or not el.field_name:
            return False
        target = self._absolute_path(page.form(el.form).action or self._wire(self.tab["url"]))
        return target is not None and bool(secret_fields(self.app, target, {el.field_name: ""}))

    def _restore_fields(self, tab: dict) -> None:
        """After go_back/go_forward, fill the page back in from the entry's saved fields, as
        Chromium restores form state: each saved value goes to the control with that bid
        on the page now shown, if it has one of that kind (text for fields and selects, a
        checked state for checkboxes and radios), but for passwords and autocomplete=off."""
        saved = (tab.get("saved_fields") or {}).get(str(tab["cursor"]))
        if not saved:
            return
        elements = self.page().elements
        fields = {}
        for bid, value in saved.items():
            el = elements.get(bid)
            if el is None or el.input_type == "password" or el.attrs.get("autocomplete") == "off":
                continue   # Chromium saves no state for these
            checkable = el.input_type in ("checkbox", "radio")
            if checkable == isinstance(value, bool) and (checkable or el.tag in ("input", "textarea", "select")):
                fields[bid] = seal(value, unseal=True) if isinstance(value, str) and self._secret(bid) else value
        tab["fields"] = fields

    # ------------------------------------------------------------------ URL schemes
    def _scheme(self) -> UrlScheme | None:
        """The site variant's URL scheme (None: today's URLs; simweb.runtime.url_schemes).
        The state keeps today's URLs; the browser shows and resolves the variant's."""
        variant = self.state["meta"].get("variant", 0)
        return url_scheme(self.app, variant) if variant else None

    def _wire(self, url: str) -> str:
        """A URL of the state as the browser shows it (the variant's form)."""
        scheme = self._scheme()
        return url if scheme is None else scheme.to_wire(url)

    def _absolute_path(self, href: str) -> str | None:
        """Resolve a link or typed URL (the variant's form, against the page's URL as the
        browser shows it) to a path on this app as the state keeps it; None for foreign
        hosts."""
        scheme = self._scheme()
        path = self._resolve_path(href, self._wire(self.tab["url"]) if scheme is not None else self.tab["url"])
        return path if scheme is None or path is None else scheme.to_canonical(path)

    def _resolve_path(self, href: str, tab_url: str) -> str | None:
        if href == "about:blank":
            return href
        if href.startswith("?"):
            # A query-only reference keeps the page's path and replaces its query, even with
            # an empty one ("?" is the page without query); urljoin would keep the old query.
            href = (tab_url if tab_url.startswith("/") else "/").partition("?")[0].partition("#")[0] + href
        # An absolute path (or this origin's URL of one) of plain URL characters without dot
        # segments or fragment: what urljoin and urlsplit below would make of it, without
        # them (most links).
        rest = href[len(self.origin):] if href.startswith(self.origin) else href
        if _PLAIN_PATH.match(rest) and "/." not in rest.partition("?")[0]:
            return rest[:-1] if rest.endswith("?") and rest.count("?") == 1 else rest
        base = self.origin + (tab_url if tab_url.startswith("/") else "/")
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

    def _external_url(self, href: str) -> str | None:
        """The absolute http(s) URL at another host that ``href`` leads to, or None."""
        tab_url = self._wire(self.tab["url"])
        base = self.origin + (tab_url if tab_url.startswith("/") else "/")
        try:
            full = urljoin(base, href)
            parts = urlsplit(full)
        except ValueError:
            return None
        return full.partition("#")[0] if parts.scheme in ("http", "https") and parts.hostname else None

    def display_url(self, url: str) -> str:
        if _foreign(url):
            return NET_ERROR_URL
        return url if url == "about:blank" else self.origin + self._wire(url)

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

    def _do_go_back(self) -> str | None:
        tab = self.tab
        if tab["cursor"] > 0:
            tab["cursor"] -= 1
            return self._traverse(tab["history"][tab["cursor"]], tab["cursor"] + 1)
        return None

    def _do_go_forward(self) -> str | None:
        tab = self.tab
        if tab["cursor"] < len(tab["history"]) - 1:
            tab["cursor"] += 1
            return self._traverse(tab["history"][tab["cursor"]], tab["cursor"] - 1)
        return None

    def _traverse(self, url: str, left: int) -> str | None:
        """Show history entry ``url`` (the cursor's), leaving entry ``left``. An entry at
        another host shows the network-error page again, and Playwright's go_back or
        go_forward reports the error."""
        self._navigate(url, push=False, left=left)
        return f"net::ERR_NAME_NOT_RESOLVED at {url}" if _foreign(url) else None

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

    # An element Chromium cannot act on: Playwright waits for it to become visible,
    # enabled or editable until the action's timeout, and BrowserGym reports the timeout.
    def _actionable(self, el: Element, action: str, *, enabled: bool = True, editable: bool = False) -> None:
        if el.hidden:
            raise _Fail(f"Timeout exceeded: {action} waited for element with bid '{el.bid}' to be visible")
        if enabled and el.disabled:
            raise _Fail(f"Element with bid '{el.bid}' is disabled")
        if editable and "readonly" in el.attrs:
            raise _Fail(f"Element with bid '{el.bid}' is not editable")

    def _do_hover(self, bid: str) -> str | None:
        self._actionable(self._element(bid), "hover", enabled=False)
        return None

    def _do_focus(self, bid: str) -> None:
        el = self._element(bid)
        if _focusable(el):   # focus() on anything else leaves the focus where it was
            if self.tab["focus"] != el.bid:
                self._cached_caret(el)
            if el.input_type == "date" and (self.tab["focus"] != el.bid or self._date_part(el) == DATE_PARTS):
                # focus() puts a date field's focus on its first part, and takes it back there
                # from its calendar button (a part keeps it)
                self._set_date_part(el, 0)
            self.tab["focus"] = el.bid

    def _do_click(self, bid: str, button: str = "left", modifiers: Any = ()) -> str | None:
        el = self._element(bid)
        self._actionable(el, "click")
        if button != "left" or modifiers:
            return None   # a middle/right or modified click opens no page of this site in-process
        # Playwright clicks the centre of the element's box. The served pages are built so
        # that the centre of an element with a bid is that element itself (the engine's
        # stylesheet, simweb.server.HIT_CSS), so what is hit is the element or, for text
        # and inline content, what it sits in: the click goes to the nearest activatable
        # element among it and its ancestors (a link, a button, a label), as the DOM's
        # click event does when it bubbles.
        target = el if _activatable(el) else self._activatable_ancestor(el)
        focus = el if _focusable(el) else (target if target is not None and _focusable(target) else None)
        if focus is not None and focus.input_type == "date":
            # The click focuses the part under the box's centre, wherever the focus was in
            # the field: the year at the width Chromium gives a date field (DATE_CLICK_PART).
            self._set_date_part(focus, DATE_CLICK_PART)
        self.tab["focus"] = focus.bid if focus is not None else None
        if focus is not None and focus.input_type in EDITABLE_TEXT:
            self._set_caret(focus, None)   # the click lands past the end of a value that fills half the box or less
        if target is None:
            return None
        return self._activate(target)

    _do_dblclick = _do_click

    def _activate(self, el: Element) -> str | None:
        """What a click on ``el`` (an activatable element) does."""
        if el.disabled:
            return None
        if el.tag == "a" and el.href is not None:
            path = self._absolute_path(el.href)
            if path is None:
                external = self._external_url(el.href)
                if external is None:
                    return f"net::ERR_NAME_NOT_RESOLVED at {el.href}"
                # Chromium follows the link to its network-error page (no host but this
                # app's resolves), without an action error.
                self._navigate(external)
                return None
            if "?" not in path and el.href.partition("#")[0].endswith("?"):
                path += "?"   # an empty query: another history entry in Chromium (_navigate)
            self._navigate(path)
            return None
        if el.input_type == "checkbox":
            self.tab["fields"][el.bid] = not self._checked(el)
            return None
        if el.tag == "summary":
            self._toggle_details(el)
            return None
        if el.input_type == "radio":
            self._set_radio(el)
            return None
        if el.form is not None and self._is_submitter(el):
            return self._submit(self.page().form(el.form), el)
        if el.tag == "label":
            control = self._label_control(el)
            if control is not None and not control.hidden:
                if _focusable(control):
                    self.tab["focus"] = control.bid
                if control.input_type in ("checkbox", "radio") or self._is_submitter(control):
                    return self._activate(control)
        return None

    def _toggle_details(self, summary: Element) -> None:
        """A click on a ``<summary>``: when it is the first summary child of a ``<details>``,
        that details opens or closes, as Chromium's summary activation does (no navigation,
        no submission). The open state is the tab's UI state (``tab["fields"]``, a bool
        under the details' bid, as a checkbox's): it forks, snapshots and restores with
        the state and goes with the page (not kept with the history entry: going back
        shows the details as served, as in Chromium); a details without a bid has none.
        Opening a details with a ``name`` closes the others of that name that are open
        (:meth:`_exclusive_closes`: the HTML standard's exclusive accordion)."""
        node = self._dom_node(summary.bid) if summary.bid else None
        parent = node.parent if node is not None else None
        if parent is None or parent.tag != "details":
            return
        first = next((c for c in parent.iter() if c.tag == "summary"), None)
        bid = parent.attributes.get("bid")
        if first is None or first.attributes.get("bid") != summary.bid or not bid:
            return
        details = self.page().elements.get(bid)
        if details is None:
            return
        fields = self.tab["fields"]
        opening = not self._is_open(details)
        if opening:   # the others of its name group close: back to their served state when closed
            served = parse_cached(self._rendered()).elements   # (Chromium reports a details against it)
            for other in self._exclusive_closes(details):
                if "open" in served[other].attrs:
                    fields[other] = False
                else:
                    fields.pop(other, None)
        fields[bid] = opening
        self._page = None   # the page shows the details' content, or hides it again

    def _exclusive_closes(self, details: Element, opened: dict[str, bool] | None = None) -> list[str]:
        """The bids of the other ``<details>`` of the page that opening ``details`` closes:
        those of its *name group* (the same non-empty ``name``, compared exactly, anywhere in
        the document) open now, as the HTML standard's exclusive accordion does whatever
        opens it (Chromium: a click on the summary, Enter and Space, a script). ``opened``:
        details (bid -> open) to take as toggled already (the summary clicks
        :meth:`summaries_to_show` plans). A details without a bid has no UI state here, so
        it is not closed (the apps' named details all have one)."""
        name = details.attrs.get("name")
        if not name:
            return []
        opened = opened or {}
        return [b for b, el in self.page().elements.items()
                if el.tag == "details" and b != details.bid and el.attrs.get("name") == name
                and opened.get(b, self._is_open(el))]

    def summaries_to_show(self, bid: str) -> list[str] | None:
        """The summary clicks that show element ``bid`` of the page: none when it is shown;
        the first summary of every closed ``<details>`` around it, outermost first, when
        only those hide it; None when it is not on the page, hidden otherwise, or behind a
        details that cannot be opened by bid."""
        page = self.page()
        el = page.elements.get(bid)
        if el is None:
            return None
        if not el.hidden:
            return []
        node = self._dom_node(bid)
        closed: list[str] = []   # the closed details around it, innermost first
        out: list[str] = []
        n = node.parent if node is not None else None
        while n is not None and n.tag not in ("html", None):
            if n.tag == "details":
                dbid = n.attributes.get("bid")
                details = page.elements.get(dbid) if dbid else None
                if details is None or dbid is None:
                    return None
                if not self._is_open(details):
                    first = next((c for c in n.iter() if c.tag == "summary"), None)
                    sbid = first.attributes.get("bid") if first is not None else None
                    if not sbid:
                        return None
                    out.append(sbid)
                    closed.append(dbid)
            n = n.parent
        if not out:
            return None
        opened: dict[str, bool] = {}
        for dbid in closed[::-1]:   # opened outermost first, each closing its name group's others
            opened.update(dict.fromkeys(self._exclusive_closes(page.elements[dbid], opened), False))
            opened[dbid] = True
        html = self._rendered()
        toggled = {**self._toggled_details(html, self.tab["fields"]), **opened}
        shown = parse_cached(with_details_open(html, toggled)).elements.get(bid)
        return out[::-1] if shown is not None and not shown.hidden else None

    def _is_open(self, details: Element) -> bool:
        """Whether ``details`` is open now (its UI state, else its ``open`` attribute)."""
        v = self.tab["fields"].get(details.bid) if details.bid else None
        return "open" in details.attrs if v is None else bool(v)

    def _dom_node(self, bid: str) -> Any:
        """The selectolax node of the element with this bid in the page's HTML (parsed on
        demand: only clicks on containers and labels need the tree)."""
        from selectolax.lexbor import LexborHTMLParser

        html = self._rendered()   # (the tree's shape: a details' open state does not change it)
        if self._dom is None or self._dom[0] is not html:
            self._dom = (html, LexborHTMLParser(html))
        bid_css = bid.replace("\\", "\\\\").replace('"', '\\"')
        return self._dom[1].css_first(f'[bid="{bid_css}"]')

    def _activatable_ancestor(self, el: Element) -> Element | None:
        if el.bid is None:
            return None
        node = self._dom_node(el.bid)
        node = node.parent if node is not None else None
        while node is not None and node.tag not in ("body", "html", None):
            tag = node.tag
            if tag in ("a", "button", "label", "input", "select", "textarea", "summary"):
                bid = node.attributes.get("bid")
                found = self.page().elements.get(bid) if bid else None
                if found is not None and _activatable(found):
                    return found
                if tag != "a" or "href" in node.attributes:
                    return None   # an activatable element without a bid: nothing this browser can act on
            node = node.parent
        return None

    def _label_control(self, label: Element) -> Element | None:
        if label.bid is None:
            return None
        node = self._dom_node(label.bid)
        if node is None:
            return None
        target = label.attrs.get("for")
        if target:
            hit = node.root.css_first(f'[id="{target}"]') if '"' not in target and "\\" not in target else None
        else:
            hit = next((n for n in node.traverse(include_text=False)
                        if n.tag in ("input", "select", "textarea", "button") and n is not node), None)
        bid = hit.attributes.get("bid") if hit is not None else None
        return self.page().elements.get(bid) if bid else None

    def _do_fill(self, bid: str, value: str) -> str | None:
        el = self._element(bid)
        # Playwright waits for any element to be visible and enabled, and a form control to
        # be editable, before it looks at its kind: a disabled checkbox or select times
        # out rather than "cannot be filled".
        self._actionable(el, "fill", editable=el.tag in ("input", "textarea", "select"))
        if el.input_type not in TEXT_INPUTS:
            if el.tag == "input":
                return f"Input of type \"{el.input_type}\" cannot be filled (bid '{bid}')"
            return f"Element with bid '{bid}' is not an <input>, <textarea> or [contenteditable] element"
        self._actionable(el, "fill", editable=True)
        value = str(value)
        kind = el.input_type or "text"
        if kind == "number":
            if not _js_number(value):
                return f"Cannot type text into input[type=number] (bid '{bid}')"
        value = sanitize_value(kind, value)
        max_len = el.attrs.get("maxlength")
        if max_len and max_len.isdigit():
            value = value[: int(max_len)]   # a browser silently truncates to maxlength
        self.tab["fields"][el.bid] = value
        if el.input_type == "date":
            self._set_date_parts(el, date_parts(value))   # the filled value's parts, none held
        self.tab["focus"] = el.bid
        self._set_caret(el, None)   # Playwright selects the field's text and types over it
        return None

    def _do_clear(self, bid: str) -> str | None:
        return self._do_fill(bid, "")

    def _do_select_option(self, bid: str, options: Any) -> str | None:
        el = self._element(bid)
        if el.tag != "select":
            return f"Element with bid '{bid}' is not a <select> element"
        self._actionable(el, "select_option")
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
        # Playwright reads the box's state first and is done, without waiting for the box
        # to be visible or enabled, when it is already in the wanted state.
        if not self._checked(el):
            self._actionable(el, "check")
            # Checking clicks the box (focusing it) only when its state changes.
            self.tab["focus"] = el.bid
            if el.input_type == "radio":
                self._set_radio(el)
            else:
                self.tab["fields"][el.bid] = True
        return None

    def _do_uncheck(self, bid: str) -> str | None:
        el = self._element(bid)
        if el.input_type not in ("checkbox", "radio"):
            return f"Element with bid '{bid}' is not a checkbox"
        if self._checked(el):   # as check: a box already unchecked is done, even disabled
            self._actionable(el, "uncheck")
            if el.input_type == "radio":
                return f"Cannot uncheck radio button (bid '{bid}')"
            self.tab["focus"] = el.bid
            self.tab["fields"][el.bid] = False
        return None

    def _do_press(self, bid: str, key_comb: str) -> str | None:
        # Playwright focuses the element (a no-op for one that cannot take focus) and sends
        # the key to whatever has the focus then. An input it focuses afresh gets its caret
        # at the start (Playwright's setSelectionRange(0, 0), which the types without a
        # selection API refuse); Enter goes through focus() first in the Chromium backend
        # (simweb.serving.browser.ChromiumBackend._do_press), which leaves the caret alone.
        el = self._element(bid)
        fresh = _focusable(el) and self.tab["focus"] != el.bid
        self._do_focus(bid)
        if fresh and el.tag == "input" and el.input_type in _SELECTABLE and str(key_comb).split("+")[-1] != "Enter":
            self._set_caret(el, (0, 0))
        return self._do_keyboard_press(key_comb)

    def _do_keyboard_press(self, key: str) -> str | None:
        focus = self.tab["focus"]
        el = self.page().elements.get(focus) if focus else None
        if el is None and key in ("Tab", "Shift+Tab"):
            # With the focus on the document's body, Chromium's Tab goes to the first
            # element that takes the focus, Shift+Tab to the last.
            order = [e for e in self.page().elements.values()
                     if _focusable(e) and not e.attrs.get("tabindex", "0").strip().startswith("-")]
            if order:
                first = order[0] if key == "Tab" else order[-1]
                self.tab["focus"] = first.bid
                self._keyboard_focused(first, backward=key != "Tab")
            return None
        return self._key(el, key) if el is not None else None

    def _do_keyboard_type(self, text: str) -> str | None:
        focus = self.tab["focus"]
        el = self.page().elements.get(focus) if focus else None
        if focus is None or el is None or el.input_type not in TEXT_INPUTS:
            return None   # typing with nothing editable focused does nothing
        current = self._field_value(el)
        start, end = self._caret(el)
        error = self._do_fill(focus, current[:start] + str(text) + current[end:])
        if error is None and el.input_type != "number":   # typed at the caret, which stays after the text
            self._set_caret(el, (start + len(str(text)),) * 2)
        return error

    def _key(self, el: Element, key_comb: str) -> str | None:
        """A key pressed on the focused element ``el``: what its default action is in
        Chromium (Enter submits a field's form, follows a link or presses a button; Space
        presses a button or toggles a box; arrows move a radio group's or a select's
        choice, and ArrowUp/ArrowDown step a number; Tab moves the focus)."""
        parts = str(key_comb).split("+")
        key, mods = parts[-1], set(parts[:-1])
        if mods - {"Shift"}:
            return None
        if key == "Tab":
            step = -1 if "Shift" in mods else 1
            if el.input_type == "date" and 0 <= self._date_part(el) + step <= DATE_PARTS:
                self._set_date_part(el, self._date_part(el) + step)   # Tab goes through a date's parts first
                return None
            self._tab_focus(el, step)
            return None
        if mods:
            return None
        if el.input_type in EDITABLE_TEXT and "readonly" not in el.attrs and key in _EDIT_KEYS and \
                (key != "Enter" or el.input_type == "textarea") and \
                not (key in ("ArrowUp", "ArrowDown") and el.input_type == "number"):
            self._edit(el, key)
            return None
        if key == "Backspace" and el.input_type in _PICKER_INPUTS and "readonly" not in el.attrs:
            if el.input_type == "date" and self._date_part(el) < DATE_PARTS:
                cleared = self._date_parts(el)
                cleared[self._date_part(el)] = None
                self._set_date_parts(el, cleared)
            else:
                self.tab["fields"][el.bid] = ""   # clears the focused part of the field: the value is empty
            return None
        if key in ("Enter", "Space", " ") and el.tag == "summary":
            return self._activate(el)   # Chromium: Enter and Space on a summary toggle its details
        if key == "Enter":
            if el.tag == "a" and el.href is not None:
                return self._activate(el)
            if el.tag == "button" or el.input_type in ("submit", "image", "button", "reset"):
                return self._activate(el) if self._is_submitter(el) else None
            if el.form is not None and (el.input_type in TEXT_INPUTS - {"textarea"}
                                        or el.input_type in ("checkbox", "radio")):
                form = self.page().form(el.form)
                # Implicit submission: the form's first submit button is the submitter
                # (a disabled one blocks it).
                submitter = next((c for c in form.controls if self._is_submitter(c)), None)
                if submitter is not None and submitter.disabled:
                    return None
                return self._submit(form, submitter)
            return None
        if key in ("Space", " "):
            if el.tag == "button" or el.input_type in ("submit", "image", "button", "reset", "checkbox", "radio"):
                return self._activate(el)
            return None
        if key in ("ArrowDown", "ArrowUp", "ArrowLeft", "ArrowRight"):
            step = 1 if key in ("ArrowDown", "ArrowRight") else -1
            if el.input_type == "date" and "readonly" not in el.attrs:
                self._date_key(el, key)
            elif el.input_type == "radio":
                self._radio_step(el, step)
            elif el.tag == "select" and not el.multiple:   # a closed select: every arrow steps its choice
                self._select_step(el, step)
            elif el.input_type == "number" and key in ("ArrowUp", "ArrowDown") and "readonly" not in el.attrs:
                self.tab["fields"][el.bid] = step_number(self._field_value(el), el.attrs, -step)
        return None

    def _tab_focus(self, el: Element, step: int) -> None:
        order = [e for e in self.page().elements.values() if _focusable(e)]
        i = next((k for k, e in enumerate(order) if e.bid == el.bid), None)
        if i is None:
            return
        j = i + step
        self.tab["focus"] = order[j].bid if 0 <= j < len(order) else None
        if 0 <= j < len(order):
            self._keyboard_focused(order[j], backward=step < 0)

    def _keyboard_focused(self, el: Element, *, backward: bool = False) -> None:
        """The caret of a control that Tab focused: an input's text is all selected, a
        textarea's caret is where it was left; a date field's focus is on its first part,
        or on its calendar button when Shift+Tab came to it from behind."""
        if el.input_type == "date":
            self._set_date_part(el, DATE_PARTS if backward else 0)
        elif el.input_type in EDITABLE_TEXT and el.tag == "input":
            self._set_caret(el, (0, len(self._field_value(el))))
        elif el.input_type in EDITABLE_TEXT:
            self._cached_caret(el)

    # ------------------------------------------------------------------ text editing
    # The caret (the selection) of a text control, as Chromium keeps it per element: the
    # tab's "caret" holds [bid, start, end] for the control whose caret is not at the end
    # of its value (a fill, a click or typing leave it at the end); the other controls'
    # carets are at the end of their value once it was changed, at the start before.

    def _caret(self, el: Element) -> tuple[int, int]:
        """The selection (start, end) in text control ``el``."""
        n = len(self._field_value(el))
        rec = self.tab.get("caret")
        if rec and rec[0] == el.bid:
            return min(rec[1], n), min(rec[2], n)
        return n, n

    def _set_caret(self, el: Element, sel: tuple[int, int] | None) -> None:
        """Put ``el``'s selection at ``sel`` (None: the end of its value)."""
        n = len(self._field_value(el))
        if sel is None or sel[0] == sel[1] == n:
            rec = self.tab.get("caret")
            if rec is not None:
                del self.tab["caret"]
        elif el.bid is not None:
            self.tab["caret"] = [el.bid, sel[0], sel[1]]

    # A date field's focused part (0 month, 1 day, 2 year, DATE_PARTS its calendar button)
    # is kept in the same record, as [bid, part, part]; no record is the first part.
    def _date_part(self, el: Element) -> int:
        rec = self.tab.get("caret")
        return int(rec[1]) if rec and rec[0] == el.bid else 0

    def _set_date_part(self, el: Element, part: int) -> None:
        rec = self.tab.get("caret")
        if part:
            self.tab["caret"] = [el.bid, part, part]
        elif rec is not None and rec[0] == el.bid:
            del self.tab["caret"]

    def _date_key(self, el: Element, key: str) -> None:
        """An arrow key in a date field, as Chromium's: Left and Right move between its
        three parts (stopping at either end), Up and Down step the focused part
        (:func:`step_date`); on the calendar button the arrows do nothing."""
        part = self._date_part(el)
        if part == DATE_PARTS:
            return
        if key in ("ArrowLeft", "ArrowRight"):
            self._set_date_part(el, max(0, min(DATE_PARTS - 1, part + (-1 if key == "ArrowLeft" else 1))))
        else:
            self._set_date_parts(el, step_date_part(self._date_parts(el), el.attrs, part, 1 if key == "ArrowUp" else -1))

    def _date_parts(self, el: Element) -> list[int | None]:
        """A date field's parts: those held while they make no value, else its value's."""
        held = self.tab.get("parts", {}).get(el.bid)
        return list(held) if held is not None else date_parts(self._field_value(el))

    def _set_date_parts(self, el: Element, parts: list[int | None]) -> None:
        """Set a date field's parts: its value is theirs (empty unless they make a date);
        parts that make no value are held in the tab (Chromium keeps them on the page)."""
        value = date_value(parts)
        self.tab["fields"][el.bid] = value
        held = self.tab.setdefault("parts", {})
        if value or parts == [None, None, None]:
            held.pop(el.bid, None)
        else:
            held[el.bid] = parts
        if not held:
            del self.tab["parts"]

    def _cached_caret(self, el: Element) -> None:
        """focus() on a text control: Chromium puts back the selection the control had when
        it lost the focus; one never edited has its caret at the start."""
        if el.input_type not in EDITABLE_TEXT or el.bid is None:
            return
        rec = self.tab.get("caret")
        if rec and rec[0] == el.bid:
            return
        self._set_caret(el, None if el.bid in self.tab["fields"] else (0, 0))

    def _edit(self, el: Element, key: str) -> None:
        """An editing key in a text control, at its caret: Backspace deletes the selection
        or the character before the caret, Space types a space over the selection (Enter a
        line break in a textarea), the arrows move the caret (Up and Down to the start and
        the end of a one-line field, a line up or down in a textarea), Escape empties a
        search field. A typed character the field would not hold (past its maxlength, a
        space in a number) is not typed."""
        value = self._field_value(el)
        kind = el.input_type or "text"
        start, end = self._caret(el)
        if key == "Backspace":
            if start == end == 0:
                return
            start = start - 1 if start == end else start
            new = value[:start] + value[end:]
        elif key in ("Space", " ", "Enter"):
            text = "\n" if key == "Enter" else " "
            if kind == "number":
                return
            new = value[:start] + text + value[end:]
            max_len = el.attrs.get("maxlength")
            if max_len and max_len.isdigit() and len(new) > int(max_len) and len(new) > len(value):
                return
            start += len(text)
        elif key == "Escape":
            if kind != "search":
                return
            new, start = "", 0
        else:
            new = value
            if key == "ArrowLeft":
                start = start - 1 if start == end and start > 0 else start
            elif key == "ArrowRight":
                start = end + 1 if start == end and end < len(value) else end
            elif kind != "textarea":
                start = 0 if key == "ArrowUp" else len(value)
            else:
                start = _line_step(value, start if key == "ArrowUp" else end, -1 if key == "ArrowUp" else 1)
        if new != value:
            self.tab["fields"][el.bid] = sanitize_value(kind, new)
        self._set_caret(el, (start, start))

    def _radio_step(self, el: Element, step: int) -> None:
        peers = [c for c in (self.page().form(el.form).controls if el.form is not None
                             else self.page().elements.values())
                 if c.input_type == "radio" and c.field_name == el.field_name and not c.disabled and not c.hidden]
        i = next((k for k, c in enumerate(peers) if c.bid == el.bid), None)
        if i is None or not peers:
            return
        nxt = peers[(i + step) % len(peers)]
        if nxt.bid is not None:
            self._set_radio(nxt)
            self.tab["focus"] = nxt.bid

    def _select_step(self, el: Element, step: int) -> None:
        current = self.tab["fields"].get(el.bid) if el.bid else None
        values = [v for v, _, _ in el.options]
        if current is None:
            current = next((v for v, _, sel in el.options if sel), values[0] if values else None)
        if current not in values or el.bid is None:
            return
        j = values.index(current) + step
        if 0 <= j < len(values):
            self.tab["fields"][el.bid] = values[j]

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

    def _field_value(self, c: Element) -> str:
        v = self.tab["fields"].get(c.bid) if c.bid else None
        return str(v) if v is not None else (c.value or "")

    def first_invalid(self, form: Form) -> Element | None:
        """The first control of ``form`` that fails Chromium's constraint validation (a
        required field left empty, an email that is not one, a number or date outside its
        min/max or off its step, a date field whose parts make no date), or None. A
        submission with one is not sent."""
        for c in form.controls:
            if c.disabled or c.hidden or "readonly" in c.attrs or c.tag in ("button", "output"):
                continue
            t = c.input_type or "text"
            if t in ("submit", "image", "reset", "button", "hidden", "file"):
                continue
            required = "required" in c.attrs
            if t == "checkbox":
                if required and not self._checked(c):
                    return c
                continue
            if t == "radio":
                if required and not any(o.input_type == "radio" and o.field_name == c.field_name
                                        and self._checked(o) for o in form.controls):
                    return c
                continue
            value = self._field_value(c)
            if value == "":
                # a date field holding parts that make no date (tab["parts"]) is badInput:
                # Chromium blocks the submission whether or not the field is required
                if required or (t == "date" and c.bid in self.tab.get("parts", {})):
                    return c
                continue
            if t == "email" and not all(_EMAIL.fullmatch(part) for part in
                                        (value.split(",") if "multiple" in c.attrs else [value])):
                return c
            if t == "url" and not _URL.match(value):
                return c
            if t == "number" and _number_invalid(value, c.attrs):
                return c
            if t in ("date", "month", "week", "time", "datetime-local"):
                low, high = c.attrs.get("min"), c.attrs.get("max")
                if (low and sanitize_value(t, low) and value < low) or (high and sanitize_value(t, high) and value > high):
                    return c
        return None

    def submit_unvalidated(self, bid: str) -> str | None:
        """Send the form of the control ``bid`` (its submitter when it is a submit button)
        with the values its controls hold, without constraint validation: the request a
        client that does not validate (a script, curl, a form marked novalidate) sends.
        Not a BrowserGym action: tests of a server's own validation use it, since a click
        would not send an invalid form. Returns the error message, or None."""
        try:
            el = self._element(bid)
        except _Fail as exc:
            return str(exc)
        if el.form is None:
            return f"Element with bid '{bid}' is not in a form"
        return self._submit(self.page().form(el.form), el if self._is_submitter(el) else None, validate=False)

    def _submit(self, form: Form, submitter: Element | None, *, validate: bool = True) -> str | None:
        form_el = self.page().elements.get(form.bid) if form.bid else None
        novalidate = not validate or (form_el is not None and "novalidate" in form_el.attrs) or (
            submitter is not None and "formnovalidate" in submitter.attrs)
        if not novalidate:
            invalid = self.first_invalid(form)
            if invalid is not None:
                # Chromium shows its validation bubble on the field and sends nothing.
                self.tab["focus"] = invalid.bid
                return None
        action = form.action
        method = form.method
        if submitter is not None:
            action = submitter.attrs.get("formaction", action)
            method = submitter.attrs.get("formmethod", method).lower()
        scheme = self._scheme()
        if scheme is None:
            target = self._absolute_path(action or self.tab["url"])
        else:   # the action as the page has it (the variant's form), then as the state keeps it
            shown = self._wire(self.tab["url"])
            target = self._resolve_path(action or shown, shown)
        if target is None:
            return f"net::ERR_NAME_NOT_RESOLVED at {action}"
        entries = self.form_entries(form, submitter)
        if method == "get":
            # the form's fields replace the action's query, as a browser sends them (a
            # query-form URL's id goes with it)
            path = target.partition("?")[0] + "?" + urlencode(entries)
            self._navigate(path if scheme is None else scheme.to_canonical(path), form=True)
            return None
        if scheme is not None:
            target = scheme.to_canonical(target)
        data: dict[str, Any] = {}
        for k, v in entries:
            if k in data:
                data[k] = data[k] + [v] if isinstance(data[k], list) else [data[k], v]
            else:
                data[k] = v
        resp = self.app.submit(self.state, target, data)
        if resp.location is not None:
            # the site's redirect as a browser gets it (the variant's form), then requested
            location = resp.location if scheme is None else scheme.to_canonical(scheme.to_wire(resp.location))
            self._navigate(location, form=True)
        else:
            self._navigate_error(resp)
        if resp.error:
            self.site_error = shown_message(self.app, self.state, resp.error)   # what the site showed; the redirect's page follows
        return None

    def _navigate_error(self, resp: Response) -> None:
        self._navigate(self.tab["url"], push=False)


def _line_step(value: str, pos: int, step: int) -> int:
    """The caret a line up (``step`` -1) or down (+1) from ``pos`` in a textarea's
    ``value``, at the same column or the line's end; past the first or the last line, the
    start or the end of the text."""
    line_start = value.rfind("\n", 0, pos) + 1
    col = pos - line_start
    if step < 0:
        if line_start == 0:
            return 0
        prev = value.rfind("\n", 0, line_start - 1) + 1
        return min(prev + col, line_start - 1)
    nl = value.find("\n", pos)
    if nl < 0:
        return len(value)
    nxt_end = value.find("\n", nl + 1)
    return min(nl + 1 + col, len(value) if nxt_end < 0 else nxt_end)


# A <details> start tag (attribute values may hold '>') and one attribute of a start tag.
_DETAILS_TAG = re.compile(r"""<details\b((?:[^>"']|"[^"]*"|'[^']*')*)>""", re.I)
_ATTR = re.compile(r"""(\s*)([^\s"'>/=]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+)))?""")


def with_details_open(html: str, toggled: dict[str, bool]) -> str:
    """``html`` with the ``<details>`` named in ``toggled`` (bid -> open) opened (an
    ``open`` attribute added) or closed (theirs removed)."""
    def one(m: re.Match[str]) -> str:
        attrs = list(_ATTR.finditer(m.group(1)))
        bid = next((html_unescape(next((g for g in a.group(3, 4, 5) if g is not None), ""))
                    for a in attrs if a.group(2).lower() == "bid"), None)
        want = toggled.get(bid) if bid is not None else None
        if want is None:
            return m.group(0)
        kept = "".join(a.group(0) for a in attrs if a.group(2).lower() != "open").rstrip("/ \t\n")
        return f"<details{kept} open>" if want else f"<details{kept}>"

    return _DETAILS_TAG.sub(one, html)


def _activatable(el: Element) -> bool:
    """Whether a click on ``el`` does something of its own: a link, a button or a form
    control, a label (which passes the click to its control), or a summary (which opens or
    closes its details)."""
    if el.tag == "a":
        return el.href is not None
    return el.tag in ("button", "label", "select", "textarea", "summary") or (el.tag == "input" and el.input_type != "hidden")


def _focusable(el: Element) -> bool:
    """Whether ``el`` can take the focus (a click, focus() or press() focuses it)."""
    if el.hidden or el.disabled:
        return False
    if "tabindex" in el.attrs:
        return True
    if el.tag == "a":
        return el.href is not None
    return el.tag in ("button", "select", "textarea", "summary") or (el.tag == "input" and el.input_type != "hidden")


_JS_NUMBER = re.compile(r"[+-]?(?:Infinity|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)|0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+")
_FLOAT = re.compile(r"-?(?:\d+(?:\.\d+)?|\.\d+)(?:[eE][+-]?\d+)?")
_NEWLINES = re.compile(r"[\r\n]")


def _js_number(text: str) -> bool:
    """Whether JavaScript's ``Number(text.trim())`` is a number (not NaN): Playwright's fill
    refuses any other text for a number input."""
    t = text.strip(" \t\n\r\f\v\u00a0\ufeff\u2028\u2029")
    return t == "" or _JS_NUMBER.fullmatch(t) is not None


#: HTML's valid e-mail address (the spec's own expression) and an absolute URL's scheme.
_EMAIL = re.compile(r"[a-zA-Z0-9.!#$%&'*+/=?^_`{|}~-]+@[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?"
                    r"(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*")
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:\S")


def _number_invalid(value: str, attrs: dict[str, str]) -> bool:
    """Range underflow/overflow or step mismatch of a number input's (sanitized) value."""
    try:
        v = float(value)
    except ValueError:
        return False
    def num(name: str) -> float | None:
        try:
            return float(attrs.get(name) or "")
        except ValueError:
            return None
    low, high = num("min"), num("max")
    if (low is not None and v < low) or (high is not None and v > high):
        return True
    step_attr = (attrs.get("step") or "").strip().lower()
    if step_attr == "any":
        return False
    step = num("step")
    step = step if step is not None and step > 0 else 1.0
    base = low if low is not None else 0.0
    q = (v - base) / step
    return abs(q - round(q)) > 1e-9 * max(1.0, abs(q))


def _decimal(text: str | None) -> Decimal | None:
    """A finite decimal of a number input's value or attribute, or None."""
    try:
        d = Decimal((text or "").strip())
    except InvalidOperation:
        return None
    return d if d.is_finite() else None


def step_number(value: str, attrs: dict[str, str], n: int) -> str:
    """The value of a number input after ArrowUp (``n`` = 1) or ArrowDown (-1), as
    Chromium steps it from the keyboard (its StepUpFromLayoutObject): an empty value counts
    as 0, or becomes the minimum (maximum) when 0 is below (above) the range; a value below
    the range goes to the minimum on ArrowUp, above it to the maximum on ArrowDown, and
    stays otherwise; a value off the step grid goes to the grid point on the key's side; a
    step out of range from 0 leaves 0; a step past the range stops at its last grid point.
    Decimal arithmetic, as Chromium's, so 7 + 0.01 is 7.01."""
    low, high = _decimal(attrs.get("min")), _decimal(attrs.get("max"))
    step = _decimal(attrs.get("step"))
    step = step if step is not None and step > 0 else Decimal(1)   # "any" steps by the default, 1
    base = low if low is not None else (_decimal(attrs.get("value")) or Decimal(0))
    current = _decimal(value)

    def out(d: Decimal) -> str:
        return format(d.normalize(), "f") if d else "0"

    def grid(d: Decimal, up: bool) -> Decimal:   # the grid point at or beyond d on the key's side
        q = (d - base) / step
        k = q.to_integral_value(rounding=ROUND_CEILING if up else ROUND_FLOOR)
        return base + k * step

    if current is None:
        if low is not None and low > 0:
            return out(low)
        if high is not None and high < 0:
            return out(high)
        new = grid(Decimal(0), n > 0) if (Decimal(0) - base) % step else n * step
        if (low is not None and new < low) or (high is not None and new > high):
            return "0"
        return out(new)
    if low is not None and current < low:
        return out(low) if n > 0 else value
    if high is not None and current > high:
        return out(high) if n < 0 else value
    new = grid(current, n > 0) if (current - base) % step else current + n * step
    if high is not None and new > high:
        new = grid(high, False)
    if low is not None and new < low:
        new = grid(low, True)
    return out(new)


#: A date field's stops for the keyboard in Chromium's en-US layout: month, day, year (its
#: editable parts, in that order), then the calendar button, which Tab reaches but arrows skip.
DATE_PARTS = 3
#: The part a click on a date field focuses. Playwright clicks the centre of the field's
#: box, and Chromium sizes a date field to its text (the widest value of each part, the
#: separators) and its calendar button: at the font Chromium gives form controls the
#: centre falls in the year, whether the field is empty or not and with min/max (a
#: four-digit year) or without (room for six). Another font size or width can move it; no
#: app's or variant's stylesheet sets a date field's font, width or alignment (measured:
#: docs/serving.md, "Date fields by part").
DATE_CLICK_PART = 2


def date_parts(value: str) -> list[int | None]:
    """A date value's parts in the order Chromium's en-US date field shows them: month,
    day, year (all None for an empty or malformed value)."""
    m = _DATE.fullmatch(value or "")
    return [int(m[2]), int(m[3]), int(m[1])] if m else [None, None, None]


def date_value(parts: list[int | None]) -> str:
    """The value a date field's parts make: empty while a part is cleared or the day is
    past the month's end (February 31)."""
    month, day, year = parts
    if month is None or day is None or year is None or not _valid_date(year, month, day):
        return ""
    return f"{year:04d}-{month:02d}-{day:02d}"


def step_date_part(parts: list[int | None], attrs: dict[str, str], part: int, n: int) -> list[int | None]:
    """A date field's parts after ArrowUp (``n`` = 1) or ArrowDown (-1) on ``part`` (0
    month, 1 day, 2 year), as Chromium steps a date field's part: within the part's range,
    wrapping past either end. The year's range is min's year to max's (1 to 275760 without
    them), the month's is min's month to max's when both are in the same year (else 1-12),
    the day's min's day to max's when both are in the same month (else 1-31). A cleared
    part starts at its range's low end (ArrowUp) or high end (ArrowDown). Nothing else is
    checked against min and max: a date past max is still the value (the form's validation
    refuses it)."""
    lo = _DATE.fullmatch(attrs.get("min") or "")
    hi = _DATE.fullmatch(attrs.get("max") or "")
    ranges = [(1, 12), (1, 31), (int(lo[1]) if lo else 1, int(hi[1]) if hi else 275760)]
    if lo and hi and lo[1] == hi[1]:
        ranges[0] = (int(lo[2]), int(hi[2]))
        if lo[2] == hi[2]:
            ranges[1] = (int(lo[3]), int(hi[3]))
    low, high = ranges[part]
    current = parts[part]
    if current is None:
        new = low if n > 0 else high
    else:
        new = current + n
        new = low if new > high else high if new < low else new
    return [new if i == part else p for i, p in enumerate(parts)]


def step_date(value: str, attrs: dict[str, str], part: int, n: int) -> str:
    """The value of a date input after an arrow key on ``part`` (:func:`step_date_part`)."""
    return date_value(step_date_part(date_parts(value), attrs, part, n))


def _valid_date(y: int, m: int, d: int) -> bool:
    if y < 1 or not 1 <= m <= 12:
        return False
    days = (31, 29 if (y % 4 == 0 and y % 100 != 0) or y % 400 == 0 else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
    return 1 <= d <= days[m - 1]


_DATE = re.compile(r"(\d{4,})-(\d\d)-(\d\d)")
_TIME = re.compile(r"([01]\d|2[0-3]):([0-5]\d)(?::([0-5]\d)(?:\.\d{1,3})?)?")
_MONTH = re.compile(r"(\d{4,})-(\d\d)")
_WEEK = re.compile(r"(\d{4,})-W(\d\d)")


def sanitize_value(kind: str, value: str) -> str:
    """The value an input of type ``kind`` holds after Playwright's fill with ``value``, as
    Chromium's value sanitization leaves it: line breaks dropped from one-line fields,
    surrounding whitespace dropped from email, url, number and the date and time types,
    and a number, date or time that is not valid becomes empty (without an error)."""
    if kind == "textarea":
        return value
    value = _NEWLINES.sub("", value)
    if kind in ("email", "url"):
        return value.strip(" \t\n\f\r")
    if kind == "number":
        value = value.strip()
        return value if _FLOAT.fullmatch(value) else ""
    if kind in ("date", "time", "datetime-local", "month", "week"):
        value = value.strip()
        ok = False
        if kind == "date":
            m = _DATE.fullmatch(value)
            ok = m is not None and _valid_date(int(m[1]), int(m[2]), int(m[3]))
        elif kind == "time":
            ok = _TIME.fullmatch(value) is not None
        elif kind == "month":
            m = _MONTH.fullmatch(value)
            ok = m is not None and int(m[1]) > 0 and 1 <= int(m[2]) <= 12
        elif kind == "week":
            m = _WEEK.fullmatch(value)
            ok = m is not None and int(m[1]) > 0 and 1 <= int(m[2]) <= 53
        else:
            date, sep, time = value.partition("T") if "T" in value else value.partition(" ")
            m = _DATE.fullmatch(date)
            ok = bool(sep) and m is not None and _valid_date(int(m[1]), int(m[2]), int(m[3])) \
                and _TIME.fullmatch(time) is not None
        return value if ok else ""
    return value


class _Fail(Exception):
    """An action that cannot be performed; its message becomes last_action_error."""
