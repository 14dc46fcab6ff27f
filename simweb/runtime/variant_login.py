"""Flow options of site variants (:mod:`simweb.runtime.variants`): when a site asks to sign in.

Real sites differ in *when* they ask a visitor for an account. Some let anyone browse and
ask only when an action needs one ("late": the add-to-cart, the vote, the comment sends
the visitor to the sign-in page and ``next=`` brings them back); others show nothing but
the sign-in page to a visitor who is not signed in ("early": a login wall). The
``sign_in`` engine factor is that difference, for every app whose variants file has a
``sign_in`` section (the auth kit's sign-in page is ``/login``)::

    sign_in:
      open: [home, public_post, search]   # pages a login wall leaves open (beside sign-in
                                          # and registration); [] for a members-only site
      wall_policies: {guest_cart: false}  # policies a walled site cannot offer (optional)

Options: ``signed-in`` (option 0, today: a task starts signed in as its user), ``late``
(the task starts signed out at its start URL: today's site as a signed-out visitor meets
it) and ``early`` (held out: signed out, behind the wall). On both signed-out options the
site's sign-in links (``href="/login"``) carry ``next=`` the page they are on, so signing
in from a page returns to it, and a task that starts signed in today instead states its
account in its goal ("Sign in as USER (password PW) first.": simweb.judging.tasks keeps
the account in the instance's parameters, ``sign_in_as``, and the oracle's plan signs in
first: simweb.episodes.episode). The wall is a redirect of a GET, decided in the
engine's page resolution from the state alone (:func:`walled`): any page of the spec
except the sign-in page, the registration page and the app's ``open`` pages sends a
visitor who is not signed in to ``/login?next=<the page asked for>``. Events keep their
own guards (every event that needs an account already has one), static files and the
engine's confirmation pages are not pages of the spec, and a path that names no page is
a 404 as before (the wall tells nothing about which paths exist). A site behind a wall
cannot offer what a visitor would do without an account (the shop's guest cart and guest
checkout): ``wall_policies`` gives those policies their values on the ``early`` option,
whatever the policy's own factor says, so a goal drawn there never asks for them.
"""
from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

#: Option labels of the ``sign_in`` factor (option 0: today's site, the task starts signed in).
OPTIONS = ("signed-in", "late", "early")
#: The option with a login wall, and the option index only test variants take.
WALL = "early"
HELD_OUT = 2
#: The auth kit's sign-in route and page names a wall always leaves open.
LOGIN_ROUTE = "/login"
ALWAYS_OPEN = frozenset({"login", "register"})
#: The sign-in form's controls (the auth kit's login.html) and the plan's actions on it.
USER_BID, PASSWORD_BID, SUBMIT_BID = "login-user", "login-password", "login-submit"
#: The template variable a signed-out variant's sign-in links take their address from.
HREF_VAR = "variant_login_href"

_LOGIN_HREF = re.compile(r'\bhref="/login"')


class LoginError(ValueError):
    """A malformed ``sign_in`` section of a variants file, or an open page the spec lacks."""


def parse(app: str, raw: Any) -> frozenset[str] | None:
    """The ``sign_in`` section of a variants file: the page names a wall leaves open (None:
    the app has no ``sign_in`` section, so no ``sign_in`` factor)."""
    if raw is None:
        return None
    pages = raw.get("open", []) if isinstance(raw, dict) else None
    if not isinstance(raw, dict) or set(raw) - {"open", "wall_policies"} or not isinstance(pages, list) or not all(
            isinstance(p, str) and p for p in pages):
        raise LoginError(f"{app} variants: sign_in is a mapping with 'open', a list of page names "
                         "(and 'wall_policies')")
    return frozenset(pages)


def parse_wall_policies(app: str, raw: Any, known: dict[str, Any]) -> dict[str, Any]:
    """The ``sign_in`` section's ``wall_policies``: policy name -> its value behind the
    login wall; each one a policy the app declares (``known``), of the same type."""
    wall = (raw or {}).get("wall_policies") if isinstance(raw, dict) else None
    if wall is None:
        return {}
    if not isinstance(wall, dict) or not all(
            isinstance(k, str) and k in known and type(v) is type(known[k]) for k, v in wall.items()):
        raise LoginError(f"{app} variants: sign_in.wall_policies maps the app's policies ({', '.join(sorted(known))}) "
                         "to values of their type")
    return dict(wall)


def check_pages(app: Any, open_pages: frozenset[str]) -> None:
    """The declared open pages are pages of the app's spec, and the spec has the auth kit's
    sign-in page at :data:`LOGIN_ROUTE` (LoginError otherwise)."""
    login = app.spec.pages.get("login")
    if login is None or login.route != LOGIN_ROUTE:
        raise LoginError(f"{app.name} variants: sign_in needs the auth kit's sign-in page at {LOGIN_ROUTE}")
    missing = sorted(open_pages - set(app.spec.pages))
    if missing:
        raise LoginError(f"{app.name} variants: sign_in opens pages the spec does not have: {', '.join(missing)}")


def walled(page: str, user: Any, open_pages: frozenset[str]) -> bool:
    """Whether the login wall sends a GET of ``page`` to the sign-in page."""
    return user is None and page not in ALWAYS_OPEN and page not in open_pages


def login_url(url: str) -> str:
    """The sign-in page's address that returns to ``url`` (a canonical local URL) after
    signing in (the whole URL, its query included, percent-encoded in ``next``)."""
    return f"{LOGIN_ROUTE}?next={quote(url.partition('#')[0], safe='/')}"


def link_target(page: str, url: str) -> str:
    """Where a signed-out variant's sign-in link points on ``page`` at ``url``: back to the
    page (the sign-in and registration pages keep today's plain link)."""
    return LOGIN_ROUTE if page.partition(":")[0] in ALWAYS_OPEN or page == "blank" else login_url(url)


def rewrite_links(source: str) -> str:
    """A template's source with its plain sign-in links (``href="/login"``) taking their
    address from the render (:data:`HREF_VAR`: back to the page they are on)."""
    if 'href="/login"' not in source:
        return source
    return _LOGIN_HREF.sub('href="{{ ' + HREF_VAR + ' }}"', source)


def sign_in_actions(account: dict[str, Any]) -> list[str]:
    """The plan's actions on the sign-in form (the auth kit's bids)."""
    return [f"fill('{USER_BID}', {account['username']!r})", f"fill('{PASSWORD_BID}', {account['password']!r})",
            f"click('{SUBMIT_BID}')"]


__all__ = ["ALWAYS_OPEN", "HELD_OUT", "HREF_VAR", "LoginError", "OPTIONS", "WALL", "check_pages", "link_target", "login_url", "parse", "parse_wall_policies", "rewrite_links", "sign_in_actions", "walled"]
