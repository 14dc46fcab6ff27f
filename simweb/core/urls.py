"""URL policy for every app: where a site may redirect to, and which links it may render.

``local_path`` is the one test of "a path on this site": a redirect target that passes
it cannot leave the site in any browser. ``safe_next`` (an engine function every spec
can call, e.g. after signing in) and the server's own check of every ``Location`` use
it; ``safe_href`` is the template filter for URLs that come from user content or a
restored state (a link post's target), so no page renders ``javascript:`` or another
scheme a click would run. ``query_string`` (the engine function ``qs``) writes the query
of a filter or pagination link, the same way in every app.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote, urlencode, urlsplit

#: Schemes a rendered link may use.
LINK_SCHEMES = ("http", "https", "mailto")
#: How many layers of percent-encoding are looked through.
_DECODE_ROUNDS = 3


def _clean(text: str) -> bool:
    """No whitespace, no control characters, no backslash (browsers strip tabs and
    newlines from URLs and read '\\' as '/', which turns '/\\t/x' and '/\\\\x' into '//x')."""
    return all(" " < ch != "\x7f" and ch != "\\" and not ch.isspace() for ch in text)


def local_path(target: object) -> str | None:
    """``target`` if it is a path on this site ('/...', not '//host', no scheme), else None.

    Whitespace, control characters and backslashes anywhere are refused, and so is a
    target whose path, percent-decoded (up to three layers, tabs and newlines dropped as
    browsers drop them), would start '//' or '/\\': '/%2F/evil.example' is refused as
    '//evil.example' is."""
    if not isinstance(target, str) or not target.startswith("/") or not _clean(target):
        return None
    if target.startswith("//") or urlsplit(target).netloc:
        return None
    path = target.split("?", 1)[0].split("#", 1)[0]
    for _ in range(_DECODE_ROUNDS):
        decoded = unquote(path)
        if decoded == path:
            return target
        path = decoded.replace("\t", "").replace("\n", "").replace("\r", "")
        if path.startswith("//") or path.startswith("/\\"):
            return None
    return target if unquote(path) == path else None


def safe_next(ctx: object, target: str | None) -> str:
    """Where to go after signing in: ``target`` if it is a path on this site, else '/'
    (an off-site or malformed ``next`` is never followed: no open redirect)."""
    return local_path(target) or "/"


def safe_href(url: object) -> str:
    """A URL from user content, fit for ``href``: a local path, or an absolute URL with
    an http(s)/mailto scheme and no control characters; anything else becomes '#'."""
    if not isinstance(url, str) or not url:
        return "#"
    if url.startswith("/"):
        return url if local_path(url) is not None else "#"
    if any(ch < " " or ch == "\x7f" for ch in url):
        return "#"
    try:
        parts = urlsplit(url)
    except ValueError:
        return "#"
    if parts.scheme.lower() not in LINK_SCHEMES:
        return "#"
    if parts.scheme.lower() != "mailto" and not parts.netloc:
        return "#"
    return url


def query_string(base: Mapping[str, Any] | None = None, **changes: Any) -> str:
    """The query of a link that keeps ``base`` (the page's current query values) with
    ``changes`` applied: ``'?k=v&...'``, or ``''`` when nothing is left.

    - a value None, '', False or [] leaves its key out (how a change removes a filter);
    - ``page`` 1 is left out (the first page is the listing itself, one URL for both);
    - a list gives its key once per item, in order, its None and '' items left out;
    - True is written ``1``, any other value with ``str``;
    - keys come in sorted order, so a link's URL does not depend on how its query was put
      together (the same filters, the same URL).

    It is a suffix for a path (``'/search' + qs(...)``); a link to the current path with no
    query at all is ``qs(...) or '?'`` (an empty ``href`` would keep the current query)."""
    pairs = query_pairs(None, base, **changes)
    return "?" + urlencode(pairs) if pairs else ""


def query_pairs(ctx: object, base: Mapping[str, Any] | None = None, **changes: Any) -> list[tuple[str, str]]:
    """The (key, value) pairs of :func:`query_string`'s query, in its order: the hidden
    fields of a GET form that goes where that link goes (a "Show more results" button)."""
    merged = dict(base or {})
    merged.update(changes)
    pairs: list[tuple[str, str]] = []
    for key in sorted(merged):
        value = merged[key]
        if value is None or value is False or value == "" or value == [] or (key == "page" and value == 1):
            continue
        for item in value if isinstance(value, (list, tuple)) else [value]:
            if item is None or item == "":
                continue
            pairs.append((key, "1" if item is True else str(item)))
    return pairs


def qs(ctx: object, base: Mapping[str, Any] | None = None, **changes: Any) -> str:
    """A link's query: ``base`` with ``changes`` (see :func:`query_string`)."""
    return query_string(base, **changes)
