"""Served mode as blueprints (simweb/serving/site/, the omnibox's master and extensions):
one blueprint object serves every app built in the process, so each request must reach
its own app's sessions, token, limits and bid attribute, and nothing else; and every
handler stays small enough to read on one screen."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest
from conftest import APPS
from test_server import AUTH, TOKEN, state_of

from simweb.core.limits import Limits
from simweb.serving.server import COOKIE, SESSION_HEADER, create_app

ROOT = Path(__file__).resolve().parents[1]
OTHER_TOKEN = "another-control-token-987654321"


@pytest.fixture(scope="module")
def two_sites():
    """Two servers of the same app in one process, set up differently."""
    app = APPS[0]
    first = create_app(app, control_token=TOKEN)
    second = create_app(app, control_token=OTHER_TOKEN, bid_attribute="data-simweb-bid",
                        limits=Limits(max_url=100))
    return first, second


def test_a_cookie_of_one_server_is_no_session_of_another(two_sites):
    first, second = two_sites
    a = first.test_client()
    a.get("/")
    sid = a.get_cookie(COOKIE).value
    before = state_of(a)
    b = second.test_client()
    b.set_cookie(COOKIE, sid)
    r = b.get("/")
    assert r.status_code == 410 and r.headers[SESSION_HEADER] == "unknown"
    assert second.extensions["simweb"].state(sid) is None
    assert state_of(a) == before    # untouched by the other server's request


def test_each_server_keeps_its_own_token_limits_and_bid_attribute(two_sites):
    first, second = two_sites
    assert first.test_client().get("/_simweb/state", headers=AUTH).headers.get("X-Simweb-Redacted") is None
    # The first server's token is a wrong token on the second.
    assert second.test_client().get("/_simweb/state", headers=AUTH).status_code == 401
    assert second.test_client().get("/_simweb/state",
                                    headers={"Authorization": f"Bearer {OTHER_TOKEN}"}).status_code == 200
    long_url = "/?" + "x" * 200
    assert first.test_client().get(long_url).status_code != 414
    assert second.test_client().get(long_url).status_code == 414
    assert ' bid="' in first.test_client().get("/").text
    page = second.test_client().get("/").text
    assert ' data-simweb-bid="' in page and ' bid="' not in page


def test_a_session_reset_on_one_server_leaves_the_other_servers_sessions(two_sites):
    first, _ = two_sites
    a, b = first.test_client(), first.test_client()
    a.get("/")
    b.get("/")
    state_b = state_of(b)
    task = sorted(first.extensions["simweb"].app.tasks)[0]
    assert a.post("/_simweb/reset", headers=AUTH, json={"task": task, "seed": 5}).status_code == 200
    assert state_of(a)["meta"]["task"]["id"] == task
    assert state_of(b) == state_b


HANDLER_MODULES = ["simweb/serving/site/control.py", "simweb/serving/site/errors.py", "simweb/serving/site/pages.py",
                   "simweb/serving/site/start.py", "simweb/serving/site/responses.py",
                   "simweb/serving/omnibox/master.py", "simweb/serving/omnibox/extensions.py",
                   "simweb/serving/omnibox/handling.py"]
#: A screen: the longest function body one reads without scrolling.
SCREEN = 40


@pytest.mark.parametrize("module", HANDLER_MODULES)
def test_every_handler_fits_on_one_screen(module):
    tree = ast.parse((ROOT / module).read_text(encoding="utf-8"))
    long = [f"{node.name}: {node.end_lineno - node.lineno + 1} lines" for node in tree.body
            if isinstance(node, ast.FunctionDef) and node.end_lineno is not None
            and node.end_lineno - node.lineno + 1 > SCREEN]
    assert not long, long
