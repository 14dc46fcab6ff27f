"""How the in-process browser resolves a link or a typed URL to a path on the app: the
fast path for plain absolute paths gives what urljoin and urlsplit give, for any href."""
from __future__ import annotations

from urllib.parse import urljoin, urlsplit

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import simweb
from simweb.web.browsing import _Fail


def reference(origin: str, tab_url: str, href: str) -> str | None:
    """The resolution by the standard library alone (what the browser did before it had a
    fast path)."""
    if href == "about:blank":
        return href
    if href.startswith("?"):   # urljoin keeps the base's query for an empty one; a browser does not
        href = (tab_url if tab_url.startswith("/") else "/").partition("?")[0] + href
    full = urljoin(origin + (tab_url if tab_url.startswith("/") else "/"), href)
    parts = urlsplit(full)
    host = parts.hostname or ""
    if parts.scheme not in ("http", "https"):
        return None
    if full.startswith(origin) or host in ("localhost", "127.0.0.1", "::1") or host.endswith(".localhost"):
        return parts.path + (f"?{parts.query}" if parts.query else "")
    return None


@pytest.fixture(scope="module")
def browser():
    env = simweb.make("shopping", seed=0)
    env.reset(seed=0, options={"task": None})
    return env.browser


# Characters a plain path may hold, and those that make urljoin or urlsplit rewrite it.
PIECES = st.sampled_from(["/", "/", "a", "Z", "9", "-", "_", "~", ".", "..", "?", "??", "#", "%", "%2e", "=", "&",
                          "+", ",", ";", ":", "@", "!", "$", "'", "(", "*", " ", "\t", "\n", "\\", "[", "]", "//",
                          "é", "\x00", "\x7f", "./", "/.", "/..", "/./"])
PREFIXES = st.sampled_from(["", "/", "//", "http://shopping.localhost", "http://shopping.localhost/",
                            "http://shopping.localhost.evil.test/", "http://shopping.localhost:80/",
                            "https://shopping.localhost/", "http://localhost/", "http://example.com/", "?", "#",
                            "javascript:", " /", "HTTP://shopping.localhost/"])


@given(PREFIXES, st.lists(PIECES, max_size=12), st.sampled_from(["/", "/cart", "/a/b/c?x=1", "about:blank"]))
@settings(max_examples=3000, deadline=None)
def test_any_href_resolves_as_the_standard_library_resolves_it(browser, prefix, pieces, tab_url):
    href = prefix + "".join(pieces)
    saved = browser.tab["url"]
    browser.tab["url"] = tab_url
    try:
        try:
            want = reference(browser.origin, tab_url, href)
        except ValueError:   # urllib refuses it (an unclosed IPv6 bracket): an invalid URL
            with pytest.raises(_Fail, match="ERR_INVALID_URL"):
                browser._absolute_path(href)
        else:
            assert browser._absolute_path(href) == want, href
    finally:
        browser.tab["url"] = saved


@pytest.mark.parametrize("href, path", [
    ("/search?q=lamp&page=2", "/search?q=lamp&page=2"),
    ("/a/../b", "/b"),                      # dot segments: the slow path removes them
    ("/cart?", "/cart"),                    # an empty query is dropped
    ("/cart#top", "/cart"),                 # so is a fragment
    ("?", "/"),                             # a query-only reference replaces the page's query
    ("?page=2", "/?page=2"),
    ("http://shopping.localhost/orders/3", "/orders/3"),
    ("//example.com/x", None),              # a network path is another host
    ("http://shopping.localhost.evil.test/x", None),
])
def test_known_hrefs(browser, href, path):
    assert browser._absolute_path(href) == path


@pytest.mark.parametrize("url", ["//[", "http://[::1", "http://shopping.localhost]/x", "https://[bad/"])
def test_an_invalid_url_is_an_action_error_not_an_exception(url):
    env = simweb.make("shopping", seed=0)
    env.reset(seed=0, options={"task": None})
    before = env.snapshot()
    obs, reward, terminated, truncated, info = env.step(f"goto({url!r})")
    assert obs["last_action_error"] == f"net::ERR_INVALID_URL at {url}"
    assert env.state["browser"]["tabs"] == before["browser"]["tabs"]   # no navigation
