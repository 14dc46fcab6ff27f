"""``GET /_simweb/start?task=<id>&seed=<n>``: a start URL for a task instance.

A WebGym task names its first page in ``website`` and the client simply opens it
(``visit_page``). On a served simweb app, that URL is this route: it resets the visiting
browser's session to the start of the task instance exactly as ``env.reset(seed,
options={"task": id})`` does (signed in, set up, at the task's start page) and answers
with that page. The page is rendered from the session's state, because the reset already
went through the start page's GET, and a small inline script replaces the address with
the start page's URL (``history.replaceState``, no request), so the browser shows the
same URL and history as the in-process env. Without ``task`` the session restarts on
the app's home page. A bad task or seed is a 400 with one line of text.

Sessions follow the server's rules: a live session of the request's cookie is restarted
(``X-Simweb-Session: live``; it is established, as its cookie came back); without one
(no cookie, or one naming no live session) a *new* session starts (``new``, with its
cookie), in the budget of sessions whose cookie has not come back, so a crawler
following start links never pushes out a signed-in session. A HEAD changes nothing and
makes no session. The route is a control endpoint: off (404) with ``control=False``.
It is the ``start`` blueprint of the served site (:mod:`simweb.serving.site.start`); this
module holds what a start URL is (its path, its seed, the instance it starts).
"""
from __future__ import annotations

import re
from typing import Any

START_PATH = "/_simweb/start"
#: A seed as the start URL writes it: ASCII digits (``\d`` would take any script's), at
#: most 19 of them, so a 5,000-digit seed is refused before ``int`` is asked to read it.
_INT = re.compile(r"[+-]?[0-9]{1,19}")


def parse_seed(text: str) -> int | None:
    """The seed ``text`` names (surrounding blanks ignored), None unless it is a 64-bit
    integer: every seed ``/_simweb/reset``, ``simweb serve --seed`` and ``env.reset`` take."""
    text = text.strip()
    if not _INT.fullmatch(text):
        return None
    seed = int(text)
    return seed if -2**63 <= seed < 2**63 else None


def start_url(task: str | None, seed: int, variant: int = 0) -> str:
    """The path of the start URL of ``task`` with episode ``seed`` (``website`` of an export:
    see simweb.live.tasks.start_url, which puts a site's base URL before it), on site
    ``variant`` when not 0 (simweb.variants)."""
    from urllib.parse import urlencode

    query: dict[str, Any] = {"task": task, "seed": int(seed)} if task else {"seed": int(seed)}
    if variant:
        query["variant"] = int(variant)
    return f"{START_PATH}?{urlencode(query, safe='/')}"


def episode_of(url: str) -> tuple[str | None, int] | None:
    """The (task, seed) a start URL starts (None for any other URL, or a malformed one)."""
    from urllib.parse import parse_qs, urlsplit

    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if parts.path != START_PATH:
        return None
    q = parse_qs(parts.query)
    seed = parse_seed((q.get("seed") or ["0"])[0])   # read as the route reads it
    if seed is None:
        return None
    tasks = q.get("task")
    return (tasks[0] if tasks else None, seed)
