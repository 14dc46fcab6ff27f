"""simweb's action strings on a page BrowserGym drives.

simweb's agents and oracle plans name elements by simweb's ids (``click('nav-cart')``) and
may ``goto`` a path of the site. On a page served to BrowserGym those ids are the
``data-simweb-bid`` attributes, and BrowserGym addresses elements by the ``bid``
attributes it stamps itself when it makes an observation. Two ways to run such an action:

- :func:`perform` runs it with Playwright on the page, as a task's ``cheat`` does (no
  BrowserGym action is involved, so every simweb action works);
- :func:`to_browsergym` rewrites it as the BrowserGym action an agent would send on this
  page: simweb ids become the ``bid`` BrowserGym gave the element, a path becomes an
  absolute URL, and ``check``/``uncheck`` (not in BrowserGym's high-level action set)
  become the click that sets the box, or ``noop(0)`` when it already is.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urljoin

from ...web.actions import ActionError, parse_action
from .servers import BID_ATTRIBUTE

#: BrowserGym's element-id attribute (browsergym.core.constants.BROWSERGYM_ID_ATTRIBUTE).
BROWSERGYM_BID = "bid"
#: Actions that name an element: their parameters that are simweb ids.
_BID_PARAMS = ("bid", "from_bid", "to_bid")


def _css_string(value: str) -> str:
    """``value`` as a CSS string literal (quotes and backslashes escaped)."""
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\a ") + '"'


def locator(page: Any, simweb_bid: str) -> Any:
    """The Playwright locator of the element whose simweb id is ``simweb_bid``."""
    return page.locator(f"[{BID_ATTRIBUTE}={_css_string(simweb_bid)}]")


def chat_message(role: str, message: str) -> dict[str, Any]:
    """A message as BrowserGym's chat keeps it (its own timestamp convention)."""
    return {"role": role, "timestamp": time.time(), "message": message}


def perform(page: Any, action: str, chat_messages: list[dict[str, Any]]) -> None:
    """Run one simweb action string on ``page`` with Playwright; the agent's messages go
    into ``chat_messages`` (BrowserGym's chat, which its tasks read). Raises
    :class:`simweb.actions.ActionError` for an action this cannot run, and Playwright's
    errors as they come."""
    a = parse_action(action)
    args = a.arguments
    name = a.name
    if name == "send_msg_to_user":
        chat_messages.append(chat_message("assistant", args["text"]))
        return
    if name == "report_infeasible":
        chat_messages.append(chat_message("infeasible", args["reason"]))
        return
    if name == "noop":
        return
    if name == "goto":
        page.goto(urljoin(page.url, args["url"]))
    elif name in ("go_back", "go_forward"):
        getattr(page, name)()
    elif name == "scroll":
        page.mouse.wheel(args["delta_x"], args["delta_y"])
    elif name in ("click", "dblclick"):
        getattr(locator(page, args["bid"]), name)(button=args["button"], modifiers=list(args["modifiers"]))
    elif name == "fill":
        locator(page, args["bid"]).fill(args["value"])
    elif name == "select_option":
        opts = args["options"]
        locator(page, args["bid"]).select_option(list(opts) if isinstance(opts, tuple) else opts)
    elif name in ("check", "uncheck", "hover", "focus", "clear"):
        getattr(locator(page, args["bid"]), name)()
    elif name == "press":
        locator(page, args["bid"]).press(args["key_comb"])
    else:
        raise ActionError(f"{name}() is not run on a BrowserGym page by simweb (oracle plans never use it)")
    page.wait_for_load_state("load")


def _literal(value: Any) -> str:
    return repr(list(value) if isinstance(value, tuple) else value)


def rewrite(action: str, bid_of: Callable[[str], str | None], checked: Callable[[str], bool | None],
            url: str) -> str:
    """``action`` (simweb's ids) as a BrowserGym action string: ``bid_of`` gives the
    BrowserGym ``bid`` of the element with a simweb id (None: no such element; the id is
    then left as it is, so BrowserGym reports the missing element as it would any other),
    ``checked`` whether that element is checked (None: unknown), ``url`` the page's address
    (a path is joined to it). Text that is not an action is returned unchanged, for
    BrowserGym to refuse."""
    try:
        a = parse_action(action)
    except ActionError:
        return action
    name, args = a.name, dict(a.arguments)
    if name in ("check", "uncheck"):
        if checked(args["bid"]) == (name == "check"):
            return "noop(0)"
        name, args = "click", {"bid": args["bid"]}
    for key in _BID_PARAMS:
        if key in args:
            args[key] = bid_of(args[key]) or args[key]
    if name == "goto":
        args["url"] = urljoin(url, args["url"])
    return f"{name}({', '.join(_literal(v) for v in args.values())})"


def to_browsergym(page: Any, action: str) -> str:
    """``action`` (simweb's ids) as the BrowserGym action for ``page`` as BrowserGym last
    observed it (:func:`rewrite`, reading the page's elements)."""

    def bid_of(simweb_bid: str) -> str | None:
        loc = locator(page, simweb_bid)
        return loc.first.get_attribute(BROWSERGYM_BID) if loc.count() else None

    def checked(simweb_bid: str) -> bool | None:
        loc = locator(page, simweb_bid)
        return bool(loc.first.is_checked()) if loc.count() else None

    return rewrite(action, bid_of, checked, page.url)


def elements_of(dom_snapshot: dict[str, Any]) -> dict[str, tuple[str, bool]]:
    """From a BrowserGym observation's ``dom_object`` (Chromium's DOMSnapshot, taken after
    BrowserGym stamped its ids): simweb id -> (BrowserGym ``bid``, checked), for every
    element that carries both (the first one, where an id repeats)."""
    strings = dom_snapshot["strings"]
    out: dict[str, tuple[str, bool]] = {}
    for doc in dom_snapshot["documents"]:
        nodes = doc["nodes"]
        on = set((nodes.get("inputChecked") or {}).get("index", []))
        for i, attrs in enumerate(nodes.get("attributes") or []):
            found: dict[str, str] = {}
            for k in range(0, len(attrs) - 1, 2):
                key = strings[attrs[k]]
                if key in (BID_ATTRIBUTE, BROWSERGYM_BID):
                    found[key] = strings[attrs[k + 1]]
            if BID_ATTRIBUTE in found and BROWSERGYM_BID in found and found[BID_ATTRIBUTE] not in out:
                out[found[BID_ATTRIBUTE]] = (found[BROWSERGYM_BID], i in on)
    return out


def from_observation(obs: dict[str, Any], action: str) -> str:
    """``action`` (simweb's ids) as the BrowserGym action for the page of ``obs`` (a raw
    BrowserGym observation, with its ``dom_object``): what an agent that only sees
    observations sends (:func:`rewrite`)."""
    elements = elements_of(obs["dom_object"])
    return rewrite(action, lambda b: elements[b][0] if b in elements else None,
                   lambda b: elements[b][1] if b in elements else None, obs["url"])


__all__ = ["chat_message", "elements_of", "from_observation", "locator", "perform", "rewrite", "to_browsergym"]
