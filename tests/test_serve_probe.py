"""Served mode under a hostile client and an operator who breaks things: the URL a
request names is the one the in-process browser would be given (percent-escapes kept),
a session database that cannot be written never leaves a state in memory that the
database does not hold, a database the server could never write to is refused at start,
and two servers never share one database's sessions."""
from __future__ import annotations

import pytest
from test_server import TOKEN, state_of

from simweb.server import SESSION_HEADER, create_app
from simweb.state import deep_copy


@pytest.fixture(scope="module")
def server():
    return create_app("shopping", control_token=TOKEN)


def _tab_url(client) -> str:
    state = state_of(client)
    return state["browser"]["tabs"][state["browser"]["active"]]["url"]


# ============================================================================= the URL as sent

@pytest.mark.parametrize("url", ["/search%3Fq%3Djacket", "/p/%31", "/search%23frag", "/%7Eabc", "/p/1%2F..",
                                 "/search?q=%C3%A9t%C3%A9", "/search?q=a%23b"])
def test_a_served_request_names_the_url_as_sent_as_the_in_process_browser_sees_it(server, url):
    """The path was percent-decoded before the app saw it: '/search%3Fq%3Djacket' (a path
    with an escaped '?') showed the results of a search for 'jacket', '/p/%31' product 1;
    the in-process browser, given the same URL, answers 404 for both."""
    sim = server.extensions["simweb"].app
    start = server.extensions["simweb"].fresh_state()
    mine = deep_copy(start)
    expected = sim.navigate(mine, url, follow=False)
    browser = server.test_client()
    r = browser.get(url)
    assert r.status_code == expected.status
    assert _tab_url(browser) == mine["browser"]["tabs"][0]["url"] == url


def test_raw_non_ascii_in_a_request_target_is_percent_encoded_not_mojibake(server):
    """A client that sends raw UTF-8 (curl, not a browser) gets the URL a browser would
    have sent: 'café' is '%C3%A9', not 'Ã©'."""
    browser = server.test_client()
    assert browser.get("/search?q=caf\u00e9").status_code == 200
    assert _tab_url(browser) == "/search?q=caf%C3%A9"
    assert "caf\u00e9".encode() in browser.get("/search?q=caf%C3%A9").data


def test_a_cookie_less_post_to_an_escaped_event_path_is_a_405_as_in_process(server):
    """'/logi%6E' is not the sign-in route for the in-process browser: no form posts there."""
    r = server.test_client().post("/logi%6E", data={"login": "x", "password": "y"})
    assert r.status_code == 405 and r.headers[SESSION_HEADER] == "none"


def test_the_target_of_a_proxy_request_or_a_rewritten_path_is_read_safely():
    from simweb.server import request_target

    # The absolute form (a proxy request): its path and query.
    assert request_target({"REQUEST_URI": "http://evil.example/p/%31?x=1", "PATH_INFO": "/p/1",
                           "QUERY_STRING": "x=1"}) == ("/p/%31", "x=1")
    # A target that does not decode to PATH_INFO (middleware rewrote it): PATH_INFO, encoded.
    assert request_target({"REQUEST_URI": "/other", "PATH_INFO": "/a b", "QUERY_STRING": ""}) == ("/a%20b", "")
    # No REQUEST_URI at all (another WSGI server).
    assert request_target({"PATH_INFO": "/caf\u00c3\u00a9", "QUERY_STRING": "q=\u00c3\u00a9"}) == \
        ("/caf%C3%A9", "q=%C3%A9")
