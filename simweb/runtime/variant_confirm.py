"""Flow options of site variants (:mod:`simweb.runtime.variants`): a confirmation step.

Many real sites do not commit an order, a cancellation, a publication or a deletion when
its form is sent: they show a *review and confirm* page first. The ``confirm_step`` engine
factor gives a variant that page. An app declares, as data in ``apps/<app>/variants.yaml``,
which events (form posts) a real site would confirm and how the page sums them up::

    confirm:
      place_order: {summary: "Place your order"}
      cancel_order: {summary: "Cancel order #{oid}"}
      ban_user: {summary: "Ban {params.username} from c/{name}", fields: {days: Days}}

A summary is a message of the spec language evaluated as the event would be: ``{expr}``
reads the event's URL arguments, its form (``params``, as parsed; a field that does not
parse is None) and its ``let`` names (``Publish “{p.title}”`` where the event lets ``p`` be
the post), so the page names the thing by what the site shows of it, not by its id;
``fields`` lists the form fields the page shows, with their labels; ``base`` names the
template the page extends (``base.html`` by default).

On a variant that takes the factor, a POST to a declared event (one that the site would
accept: it is tried on a copy of the state first, and a refused form is refused as today)
changes nothing but the browser's ``confirm`` entry, the *pending submission* (the event's
URL, the form as read, the page it was posted from and its address, the signed-in user and
a token), and redirects to ``/confirm-request/<token>``. That page is rendered from the
state alone (so snapshot, fork, restore, served mode and Chromium all show it): a summary
of what will happen, a Confirm button (``confirm-submit``) and a Cancel button
(``confirm-cancel``). Confirm posts to the page's own address and runs the pending
submission exactly as the original POST would have run (the same guards, updates, flash
and redirect, posted from the same page), and removes it; Cancel removes it and returns to
the form's page. With the ``inline`` style there is no page of its own: the browser is
sent back to the form's page, which shows the same summary and buttons in a confirmation
panel (a dialog in the page, :func:`panel`). Both are accepted only from the confirmation
page (inline: the form's page) with the pending token,
for the user who sent the form: a second Confirm (a double click, a resubmitted POST after
going back) finds nothing pending and changes nothing. The token is the request counter at
the time of the form (deterministic, unique within a history).

The pending submission lives in the browser layer (``browser.confirm``, absent when none,
so variant 0's states are byte-for-byte today's), never in the runtime: the verdicts read
the runtime, so a pending or cancelled submission is no change to the site.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ..core.expr import ExprRuntimeError
from ..core.functions import using
from ..core.spec import ExprErrorAtRuntime, ParamError, SpecError, compile_message
from ..core.specmodel import BASE_NAMES, Message

#: Option labels of the ``confirm_step`` factor ("" = no confirmation, today's site) and
#: the words of each option's page: (heading, confirm button, cancel button).
STYLES: dict[str, tuple[str, str, str]] = {
    "review": ("Review and confirm", "Confirm", "Cancel"),
    "check": ("Check your request", "Yes, continue", "Go back"),
    "are-you-sure": ("Are you sure?", "Yes, I am sure", "No, take me back"),
    "inline": ("Please confirm", "Confirm", "Cancel"),
}
OPTIONS = ("none", *STYLES)
#: The style that confirms in a panel of the form's own page instead of a page of its own.
INLINE = "inline"
#: The option index only test variants take.
HELD_OUT = 3

#: The confirmation page's address prefix, its page (control state) name, its template and
#: the bids of its two buttons.
PREFIX = "/confirm-request/"
PAGE = "confirm-step"
TEMPLATE = "variant_confirm.html"
CONFIRM_BID = "confirm-step-yes"
CANCEL_BID = "confirm-step-no"
#: The plan action that confirms (what the oracle's plan gets after a confirmable form).
CONFIRM_ACTION = f"click('{CONFIRM_BID}')"

_PATH = re.compile(r"^/confirm-request/([0-9]{1,18})(/cancel)?$")


class ConfirmError(ValueError):
    """A malformed ``confirm`` section of a variants file."""


@dataclass(frozen=True)
class Confirmable:
    """One event a confirming variant asks to confirm: the summary, the fields shown."""

    event: str
    summary: str
    fields: tuple[tuple[str, str], ...] = ()
    base: str = "base.html"


def parse(app: str, raw: Any) -> dict[str, Confirmable]:
    """The ``confirm`` section of an app's variants file (event name -> declaration)."""
    if raw is None:
        return {}
    if not isinstance(raw, dict) or not raw:
        raise ConfirmError(f"{app} variants: confirm maps event names to {{summary, fields, base}}")
    out: dict[str, Confirmable] = {}
    for name, decl in raw.items():
        if not isinstance(name, str) or not isinstance(decl, dict) or not isinstance(decl.get("summary"), str) \
                or not decl["summary"] or set(decl) - {"summary", "fields", "base"}:
            raise ConfirmError(f"{app} variants: confirm.{name} needs a summary (and may name fields and a base)")
        fields = decl.get("fields") or {}
        if not isinstance(fields, dict) or not all(isinstance(k, str) and isinstance(v, str) and k and v
                                                   for k, v in fields.items()):
            raise ConfirmError(f"{app} variants: confirm.{name}.fields maps form field names to labels")
        base = decl.get("base", "base.html")
        if not isinstance(base, str) or not base.endswith(".html"):
            raise ConfirmError(f"{app} variants: confirm.{name}.base names a template (.html)")
        out[name] = Confirmable(name, decl["summary"], tuple(fields.items()), base)
    return out


def check_events(app: Any, confirmables: dict[str, Confirmable]) -> None:
    """Refuse (ConfirmError) a declaration of an event the spec does not have, or of one
    with a secret field (a pending submission is kept in the state in clear)."""
    for name in confirmables:
        event = app.spec.events.get(name)
        if event is None:
            raise ConfirmError(f"{app.name} variants: confirm names event {name!r}, which the spec does not have")
        if any(p.secret for p in event.params.values()):
            raise ConfirmError(f"{app.name} variants: confirm.{name}: the event has a secret field")
        compiled_summary(app, confirmables[name], event)


def compiled_summary(app: Any, decl: Confirmable, event: Any) -> Message:
    """The declaration's summary compiled against ``event`` (its URL arguments, ``params``
    and its ``let`` names) and the app's functions, once per app (ConfirmError if it does
    not compile)."""
    cache: dict[tuple[str, str], Message] = app.__dict__.setdefault("_confirm_summaries", {})
    hit = cache.get((decl.event, decl.summary))
    if hit is None:
        names = set(BASE_NAMES) | set(event.converters) | {"params"} | {n for n, _ in event.lets}
        try:
            hit = cache[decl.event, decl.summary] = compile_message(decl.summary, f"{app.name} variants: confirm.{decl.event}.summary",
                                                      app.callables, names)
        except SpecError as exc:
            raise ConfirmError(str(exc)) from None
    return hit


def page_url(token: int) -> str:
    """The confirmation page of the pending submission ``token``."""
    return f"{PREFIX}{token}"


def parse_path(path: str) -> tuple[int, bool] | None:
    """(token, cancel) of a confirmation page's address or its cancel action; None otherwise."""
    m = _PATH.match(path)
    return (int(m.group(1)), bool(m.group(2))) if m else None


def is_page(url: str) -> bool:
    """Whether ``url`` is a confirmation page's address (not its cancel action)."""
    hit = parse_path(urlsplit(url).path)
    return hit is not None and not hit[1]


def hold(state: dict, token: int, url: str, form: dict[str, Any], back: str, source: str) -> str:
    """Keep a submission pending (replacing any other) and return its page's address."""
    state["browser"]["confirm"] = {"token": token, "url": url, "form": form, "back": back, "source": source,
                                   "user": state["browser"]["user"]}
    return page_url(token)


def take(state: dict, token: int) -> dict | None:
    """The pending submission ``token`` of the signed-in user, removed from the state; None
    (and nothing removed) when it is not the one pending, or another user sent it."""
    pending = state["browser"].get("confirm")
    if pending is None or pending["token"] != token or pending["user"] != state["browser"]["user"]:
        return None
    del state["browser"]["confirm"]
    return pending


def awaiting(state: dict, inline: bool = False) -> bool:
    """Whether the active tab shows the Confirm of the submission now pending: its
    confirmation page, or (``inline``: a variant of the inline style) the form's own page,
    where the confirmation panel is."""
    browser = state["browser"]
    pending = browser.get("confirm")
    if pending is None:
        return False
    tab = browser["tabs"][browser["active"]]
    if inline:
        return tab["url"].partition("#")[0] == pending["back"] and pending["user"] == browser["user"]
    return tab["page"] == PAGE and tab["url"] == page_url(pending["token"])


def panel(heading: str, yes: str, no: str, summary_text: str, fields: list[tuple[str, str]], token: int) -> str:
    """The inline style's confirmation panel (HTML, every value escaped): a dialog on the
    form's own page with the summary, the fields and the Confirm and Cancel buttons, which
    post to the pending submission's address as the confirmation page's do."""
    from markupsafe import escape

    action = page_url(token)
    details = "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in fields)
    return (f'<section bid="confirm-step" class="confirm-step confirm-inline" role="dialog" aria-modal="false" '
            f'aria-labelledby="confirm-step-title" style="border:2px solid #888;padding:.5rem 1rem;margin:.5rem 0">'
            f'<h2 bid="confirm-step-title" id="confirm-step-title">{escape(heading)}</h2>'
            f'<p bid="confirm-step-summary">You are about to: <strong>{escape(summary_text)}</strong></p>'
            + (f'<dl bid="confirm-step-details" aria-label="Details">{details}</dl>' if fields else "")
            + '<p>Nothing has been changed yet.</p>'
            f'<form bid="confirm-step-form" class="inline" action="{action}" method="post">'
            f'<button bid="{CONFIRM_BID}" type="submit">{escape(yes)}</button></form> '
            f'<form bid="confirm-step-cancel-form" class="inline" action="{action}/cancel" method="post">'
            f'<button bid="{CANCEL_BID}" type="submit">{escape(no)}</button></form></section>')


def summary(app: Any, state: dict, decl: Confirmable, event: Any, args: dict[str, Any], pending: dict) -> str:
    """The declaration's summary of the ``pending`` submission, evaluated as the event would
    be on ``state`` (URL arguments ``args``, the form as parsed, the event's ``let`` names).
    Where that fails (what it names is gone since the form was sent), the words without
    their values: the page still says what Confirm does."""
    msg = compiled_summary(app, decl, event)
    env = app._env(state, pending["back"], {})
    env.update(args)
    params: dict[str, Any] = {}
    for name, p in event.params.items():
        try:
            params[name] = p.parse(pending["form"].get(name))
        except ParamError:
            params[name] = None
    env["params"] = params
    with using(app._ctx(state, pending["back"])):
        try:
            for name, expr in event.lets:
                env[name] = expr(env)
            return msg(env)
        except (ExprRuntimeError, ExprErrorAtRuntime):
            return " ".join("".join(p for p in msg.parts if isinstance(p, str)).split())


def shown_fields(decl: Confirmable, form: dict[str, Any]) -> list[tuple[str, str]]:
    """(label, value) of the declared fields the form sent (a list's values joined)."""
    out = []
    for name, label in decl.fields:
        value = form.get(name)
        if isinstance(value, list):
            value = ", ".join(str(v) for v in value)
        if value not in (None, ""):
            out.append((label, str(value)))
    return out


__all__ = ["CANCEL_BID", "CONFIRM_ACTION", "CONFIRM_BID", "ConfirmError", "Confirmable", "INLINE", "OPTIONS", "PAGE",
           "PREFIX", "STYLES", "TEMPLATE", "awaiting", "check_events", "hold", "is_page", "page_url", "panel", "parse",
           "parse_path", "shown_fields", "summary", "take"]
