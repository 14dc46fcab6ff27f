"""Clicking a link that wraps over two lines, whose bounding box's centre is on neither of
its line boxes (client rects): the clients click inside one of the rects.

WebGym's ``click_id`` clicks the centre of the bounding box, and ``simweb omnibox``
answers as it does (the miss is pinned here); LiveEnv, simweb's client of the protocol,
asks a `simweb omnibox` for a point on the element instead, and WebEnv (Playwright's
click) reaches it by itself."""
from __future__ import annotations

import http.server

import pytest

pytest.importorskip("playwright.sync_api")

from loopback import bid_of, serving
from omnibox_client import Master, call

from simweb.live.env import LiveEnv
from simweb.live.omnibox import OmniboxClient, Rect, point_on_rects
from simweb.live.web import WebEnv
from simweb.serving.omnibox.server import OmniboxServer

pytestmark = pytest.mark.browser

LINK = "the offer that wraps"
# 16 px monospace with 48 px lines: the link starts near the right end of the first line
# and ends near the left of the second, so the centre of its bounding box falls between
# the lines, left of the first part and right of the second.
WRAP_PAGE = f"""<!DOCTYPE html><html><head><title>Wrap</title><style>
body {{ margin: 0; font: 16px/48px monospace; }}
p {{ width: 400px; margin: 40px; }}
</style></head><body>
<p>Some words to fill the line then <a id="offer" href="/target">{LINK}</a> over.</p>
</body></html>"""
TARGET_PAGE = "<!DOCTYPE html><html><head><title>Target</title></head><body><h1>The offer</h1></body></html>"

_GEOMETRY_JS = """(sel) => { const el = document.querySelector(sel); const r = el.getBoundingClientRect();
  const cx = r.left + r.width / 2, cy = r.top + r.height / 2;
  const rects = [...el.getClientRects()].map(q => [q.left, q.top, q.right, q.bottom]);
  return {rects, centre: [cx, cy], id: el.getAttribute('__elementId')}; }"""


def _inside(point, rects) -> bool:
    x, y = point
    return any(left <= x < right and top <= y < bottom for left, top, right, bottom in rects)


@pytest.fixture(scope="module")
def site():
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's naming
            body = (TARGET_PAGE if self.path.startswith("/target") else WRAP_PAGE).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    with serving(Handler) as origin:
        yield origin


@pytest.fixture(scope="module")
def server():
    with OmniboxServer(["shopping"], port=0, browsers=1, status_interval=0) as srv:
        yield srv


def _geometry(server: OmniboxServer, lease: dict) -> dict:
    (inst,) = [i for i in server.pool.instances if i.instance_id == lease["instance_id"]]
    return inst.call(lambda: inst.page.evaluate(_GEOMETRY_JS, "#offer"))


def test_point_on_rects_only_where_the_centre_misses():
    first, second = Rect(358, 54, 29, 19), Rect(40, 102, 154, 19)
    assert point_on_rects((first, second), (1280, 768)) == first.center()
    assert point_on_rects((Rect(40, 54, 347, 67),), (1280, 768)) is None          # a bounding box alone
    assert point_on_rects((Rect(40, 54, 300, 19), Rect(40, 73, 200, 19)), (1280, 768)) is None   # centre on one
    below = Rect(358, 900, 29, 19)
    assert point_on_rects((below, second), (1280, 768)) == second.center()        # the one in the viewport


def test_the_server_click_id_misses_a_wrapped_link_and_locate_gives_a_point_on_it(server, site):
    master = Master(server.base_url)
    lease = master.get_instance(10)
    try:
        assert master.execute(lease, {"visit_page": {"url": site + "/"}}).status_code == 200
        assert master.execute(lease, {"get_interactive_rects": {}}).status_code == 200   # numbers the page
        shape = _geometry(server, lease)
        assert len(shape["rects"]) == 2 and not _inside(shape["centre"], shape["rects"])
        found = call(server.base_url, "GET", "/simweb/locate", dict(lease, element_id=shape["id"])).json()
        assert found["on_center"] is False and found["element_id"] == shape["id"]
        assert _inside(found["point"], shape["rects"])
        # As WebGym's instance: click_id clicks the bounding box's centre, which is off the link.
        assert master.execute(lease, {"click_id": {"id": shape["id"]}}).status_code == 200
        assert master.execute(lease, {"get_page_metadata": {}}).json()["url"] == site + "/"
        x, y = found["point"]
        assert master.execute(lease, {"click_coords": {"x": x, "y": y}}).status_code == 200
        assert master.execute(lease, {"get_page_metadata": {}}).json()["url"] == site + "/target"
    finally:
        master.reset_instance(lease)


def test_live_env_clicks_inside_a_wrapped_links_line_box(server, site):
    env = LiveEnv(OmniboxClient(server.base_url, "default_key"), max_steps=5)
    try:
        obs, _ = env.reset(options={"url": site + "/", "goal": "Open the offer"})
        bid = bid_of(obs["axtree"], f"link '{LINK}'")
        obs, _, _, _, info = env.step(f"click('{bid}')")
        assert obs["last_action_error"] == ""
        assert obs["url"] == site + "/target"
        (command,) = info["commands"]
        assert list(command) == ["click_coords"]
    finally:
        env.close()


def test_web_env_clicks_a_wrapped_link(site):
    env = WebEnv(max_steps=5)
    try:
        obs, _ = env.reset(options={"url": site + "/", "goal": "Open the offer"})
        bid = bid_of(obs["axtree"], f"link '{LINK}'")
        obs, *_ = env.step(f"click('{bid}')")
        assert obs["last_action_error"] == "" and obs["url"] == site + "/target"
    finally:
        env.close()
