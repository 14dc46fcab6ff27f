"""The ``pagination`` factor of site variants: how a site's paged lists go from page to page.

Every paged list of every app is drawn by the engine kit's pager macro (``pager.html``;
booking's and forum's macros call it with their own bid and words), which reads the
variant's style (a global ``pagination`` of the variant's templates, undefined on today's
site):

* ``pager`` (today's): "Previous", "Page 2 of 9", "Next";
* ``numbered``: the page numbers (the first, the last and two either side of the current
  one, a gap "…" between), the current one not a link;
* ``load-more``: a "Load more" link, and ``?page=n`` lists the items of pages 1 to n
  together, as a real site without scripts does;
* ``show-more`` (held out): the same cumulative list, with a "Show more results" button of
  a GET form (hidden fields for the list's query) instead of a link.

In every style the control that opens the next page has bid ``page-next`` and the one that
opens the previous page ``page-prev`` (a numbered pager's neighbouring numbers), so plans
that page through a list (``click('page-next')``) solve every variant.

The cumulative styles change no function of any app: the engine evaluates the page's
``load`` expressions once more for each earlier page (:func:`accumulate`) and joins the
items of every paged result (a dict with ``items`` and ``page``, what ``paged()`` and the
apps' own paging functions return) in page order. Rendering is a pure function of the
state: the state, the URL (``?page=n``), every task's effect and verdict are the same as
on today's site. A list accumulates at most :data:`MAX_PAGES` pages (the last ones up to
``n``), so a typed ``?page=100000`` costs a bounded render.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

#: The factor's options, today's first; the last is held out.
OPTIONS = ("pager", "numbered", "load-more", "show-more")
HELD_OUT = 3
#: Styles whose ``?page=n`` lists pages 1..n together.
CUMULATIVE = frozenset({"load-more", "show-more"})
#: The query parameter of the page number (every app's paged pages use it).
PARAM = "page"
#: The most pages a cumulative list shows (the last ones, up to the requested page).
MAX_PAGES = 40


def is_paged(value: Any, number: int) -> bool:
    """Whether ``value`` is page ``number`` of a paged result (``items`` and ``page``)."""
    return isinstance(value, dict) and isinstance(value.get("items"), list) and value.get("page") == number


def _once(items: list[Any]) -> list[Any]:
    """``items`` with a row that an earlier page listed too left out (a page's window over a
    ranking that moves with the offset, as forum's "hot" does, can repeat a row at a page's
    edge: one row, one bid)."""
    seen: set[Any] = set()
    out = []
    for item in items:
        key = item.get("id") if isinstance(item, dict) else None
        if key is not None:
            if key in seen:
                continue
            seen.add(key)
        out.append(item)
    return out


def later_page(env: dict[str, Any]) -> bool:
    """Whether ``env``'s query asks for a page after the first (a cumulative list's page
    that lists earlier pages too: :func:`accumulate` has work to do)."""
    query = env.get("query")
    n = query.get(PARAM) if isinstance(query, dict) else None
    return type(n) is int and n > 1


def accumulate(load: Sequence[tuple[str, Callable[[dict], Any]]], base: dict[str, Any], env: dict[str, Any]) -> None:
    """Page n's resolved ``env`` (``env["query"]["page"] == n``) as a cumulative list:
    every paged result in it gets the items of pages 1..n (at most :data:`MAX_PAGES`)
    before its own, by evaluating ``load`` (the page's load expressions, in order) on
    ``base`` (the env before them) with the page number of each earlier page; the other
    loaded values are the first page's (what the top of the list shows). A row listed by
    an earlier page is not listed again. Nothing when
    page n is the first or the page has no paged result."""
    if not later_page(env):
        return
    query = env["query"]
    n = query[PARAM]
    names = [name for name, _ in load if is_paged(env.get(name), n)]
    if not names:
        return
    earlier: dict[str, list[Any]] = {name: [] for name in names}
    first: dict[str, Any] | None = None
    for k in range(max(1, n - MAX_PAGES + 1), n):
        sub = dict(base)
        sub["query"] = dict(query, **{PARAM: k})
        for name, expr in load:
            sub[name] = expr(sub)
        if first is None:
            first = sub
        for name in names:
            if is_paged(sub.get(name), k):
                earlier[name].extend(sub[name]["items"])
    for name, _ in load:
        if name in earlier:
            env[name] = dict(env[name], items=_once(earlier[name] + env[name]["items"]))
        elif first is not None:
            env[name] = first[name]
