"""The ``pages`` blueprint: the simulated site itself.

Every request drives the same spec transitions as the in-process browser (``App.navigate``
for GET, ``App.submit`` for POST, then a 303 redirect) on the state of the request's own
session: a cookie-less request runs on a fresh start state and gets a *new* session, a
cookie naming no live session is told so (410), a HEAD never changes a state, and a
request whose transitions would make a state over the limits is refused (413) and leaves
the state as it was."""
from __future__ import annotations

import time
from urllib.parse import urlsplit

import orjson
from flask import Blueprint, Response, make_response, request

from ...core.limits import LimitError, check_shape
from ...core.state import deep_copy
from ...core.urls import local_path
from ...runtime.url_schemes import UrlScheme
from ...runtime.variants import SHEETS_PATH, catalogue, url_scheme
from ..served import COOKIE
from ..sessions import Lookup
from .responses import error, finish, gone, page_html, served
from .wire import _encode_unsafe, request_target

pages = Blueprint("pages", __name__)


@pages.get("/favicon.ico")
def favicon() -> Response:
    return Response(status=204)


@pages.get(SHEETS_PATH + "<name>.css")
def variant_stylesheet(name: str) -> Response:
    """A site variant's stylesheet (its pages link it: simweb.runtime.variants.SHEETS_PATH),
    the same for every session: named by its content, so a browser may keep it."""
    css = catalogue(served().app).stylesheet(request.path)
    if css is None:
        return error(f"404 Not Found: no stylesheet {request.path}", 404)
    resp = Response(css, mimetype="text/css")
    resp.headers["Cache-Control"] = "public, max-age=86400"
    return resp


@pages.route("/", defaults={"path": ""}, methods=["GET", "POST"])
@pages.route("/<path:path>", methods=["GET", "POST"])
def page(path: str) -> Response:
    t0 = time.perf_counter()
    resp = handle_page()
    # How long the site took (session load, transitions, render, save): standard
    # Server-Timing, so a client can tell serving cost from network cost.
    resp.headers["Server-Timing"] = f"app;dur={(time.perf_counter() - t0) * 1e3:.3f}"
    return resp


def handle_page() -> Response:
    limits = served().limits
    path, query = request_target(request.environ)
    url = path + (f"?{query}" if query else "")
    if len(url) > limits.max_url:
        return error(f"URL of {len(url)} characters is over the limit of {limits.max_url}", 414)
    sid = request.cookies.get(COOKIE)
    scheme = url_scheme(served().app, served().variant) if served().variant else None
    if sid is None and request.method == "POST" and served().app.spec.match_event(
            path if scheme is None else scheme.to_canonical(path).partition("?")[0]) is None:
        # No form of this site posts here, and a browser with no session has no page to
        # show again: a short 405, and no session for it.
        resp = error(f"405 Method Not Allowed: {path} takes no form posts", 405)
        resp.headers["Allow"] = "GET, HEAD"
        return finish(resp, None, "none")
    if sid is None:
        return _without_session(url)
    return _in_session(sid, url)


def _without_session(url: str) -> Response:
    """A request with no cookie: run on a fresh start state, kept as a new session."""
    state = served().fresh_state(served().task, served().seed)
    resp = run(state, url)
    if request.method == "HEAD":   # HEAD never changes a state, nor makes a session
        return finish(resp, None, "none")
    blob = orjson.dumps(state)
    refusal = over_limits(state, blob)
    if refusal is not None:
        return refusal
    return finish(resp, served().sessions.create(state, established=False), "new")


def _in_session(sid: str, url: str) -> Response:
    """A request of session ``sid``: run on its state, saved only if the run succeeded
    within the limits (else the session keeps its last committed state)."""
    store = served().sessions
    with store.lock(sid):
        found = store.load(sid)
        if found.state is None:
            return gone(found)
        if request.method == "HEAD":
            return finish(run(deep_copy(found.state), url), None, "live")
        try:
            resp = run(found.state, url)
            blob = orjson.dumps(found.state)
        except BaseException:
            store.forget(sid)   # the next request starts from the last committed state
            raise
        refusal = over_limits(found.state, blob)
        if refusal is not None:
            store.forget(sid)   # the state stays as it was
            return refusal
        if not store.save(sid, found.state, blob=blob, establish=not found.established):
            return gone(Lookup(None, "evicted"))
    return finish(resp, None, "live")


def run(state: dict, url: str) -> Response:
    """One request of the simulated site on ``state`` (changes it). On a site variant
    with its own URL scheme the request (and its Referer) is mapped to today's URL, which
    the state keeps, and a redirect's target to the variant's (simweb.runtime.url_schemes);
    a page's URL with a wrong or absent slug is a permanent redirect to its own, which
    changes nothing (the in-process browser opens that page at its own URL alike)."""
    sim = served().app
    variant = state["meta"].get("variant", 0)
    scheme = url_scheme(sim, variant) if variant else None
    referrer = _referrer_path()
    if scheme is not None and request.method in ("GET", "HEAD"):
        slug_fix = _slug_redirect(scheme, url)
        if slug_fix is not None:
            return slug_fix
    if scheme is not None:
        url = scheme.to_canonical(url)
        referrer = referrer if referrer is None else scheme.to_canonical(referrer)
    if request.method == "POST":
        form = {k: (v if len(v) > 1 else v[0]) for k, v in request.form.lists()}
        resp = sim.submit(state, url, form, referrer=referrer)
        if resp.location is None:
            # The page shown again, as the in-process browser shows it.
            html = sim.navigate(state, state["browser"]["tabs"][state["browser"]["active"]]["url"],
                                push=False).html
            out = make_response(page_html(html), resp.status)
            if resp.status == 405:   # no form of this site posts here
                out.headers["Allow"] = "GET, HEAD"
            return out
    else:
        resp = sim.navigate(state, url, follow=False)
        if resp.location is None:
            return make_response(page_html(resp.html), resp.status)
    location = local_path(_encode_unsafe(resp.location if scheme is None else scheme.to_wire(resp.location)))
    if location is None:
        return error("refused a redirect off this site", 400)
    out = Response(status=303)
    out.headers["Location"] = location
    return out


def _slug_redirect(scheme: UrlScheme, url: str) -> Response | None:
    """The permanent redirect of a page's URL with a wrong or absent slug to its own URL
    (None when ``url`` is not such a URL)."""
    moved = scheme.redirect(url)
    target = local_path(_encode_unsafe(moved)) if moved is not None else None
    if target is None:
        return None
    out = Response(status=301)
    out.headers["Location"] = target
    return out


def _referrer_path() -> str | None:
    """The path of the page a form was posted from, if it is of this site: a page opened
    in another window of the same session posts from there."""
    referrer = request.referrer
    if not referrer:
        return None
    try:
        parts = urlsplit(referrer)
    except ValueError:   # unparseable (an unclosed IPv6 bracket): as a foreign Referer
        return None
    if parts.netloc != request.host:
        return None
    return parts.path + (f"?{parts.query}" if parts.query else "")


def size_refusal(n: int) -> Response:
    return error(f"this request would grow the session's state to {n} bytes, over the limit of "
                 f"{served().limits.max_state} bytes", 413)


def over_limits(state: dict, blob: bytes) -> Response | None:
    """The refusal of a request whose transitions made a state the server would itself
    refuse (too large, a list or object with too many entries, too deep), so every
    session's state can be posted back and read back after a restart; None if fine."""
    limits = served().limits
    if len(blob) > limits.max_state:
        return size_refusal(len(blob))
    try:
        check_shape(state, limits)   # one linear pass, as the size above
    except LimitError as exc:
        return error(f"this request would grow the session's state past a limit: {exc}", 413)
    return None
