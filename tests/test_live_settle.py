"""The live env observes the page an action leads to, even when the site gets there by
script: a new tab (``target="_blank"``, ``window.open``), a form posted by ``fetch`` that
moves the page a little later, a JavaScript redirect chain. Each test takes ONE action and
asserts the observation already shows the new page (URL, AX-tree content, active tab).
A page that never stops polling is observed once the settle window's cap is reached.

The site is a tiny handler of the standard library on loopback.
"""
from __future__ import annotations

import http.server
import time

import pytest

pytest.importorskip("playwright.sync_api")

from loopback import bid_of, serving

from simweb.live.web import WebEnv

pytestmark = pytest.mark.browser

_HEAD = "<!DOCTYPE html><html><head><title>{title}</title></head><body>"

PAGES: dict[str, str] = {
    "/": _HEAD.format(title="Start") + """
<h1>Start</h1>
<a href="/tab" target="_blank">Open the offer in a new tab</a>
<button type="button" onclick="window.open('/popup')">Open a popup</button>
<button type="button" onclick="window.open('/selfclose')">Sign in with a popup</button>
<form id="order" action="/nojs" method="post">
  <label for="qty">Quantity</label><input id="qty" name="qty" value="2">
  <button type="submit">Add to cart</button>
</form>
<button type="button" id="poll" onclick="startPolling()">Check status</button>
<a href="/hop1">Continue</a>
<a href="/checkout">Checkout</a>
<p id="status">idle</p>
<script>
document.getElementById('order').addEventListener('submit', (ev) => {
  ev.preventDefault();
  fetch('/api/order', {method: 'POST', body: new FormData(ev.target)})
    .then((r) => r.json())
    .then((data) => { setTimeout(() => { location.href = data.next; }, 300); });
});
function startPolling() {
  document.getElementById('status').textContent = 'polling';
  const poll = () => fetch('/api/status').then(() => setTimeout(poll, 40));
  poll();
}
</script></body></html>""",
    "/tab": _HEAD.format(title="Offer") + "<h1>The offer</h1><p>Two nights for one</p></body></html>",
    "/popup": _HEAD.format(title="Popup") + "<h1>Popup window</h1></body></html>",
    "/selfclose": _HEAD.format(title="Signing in") + """<p>One moment</p>
<script>setTimeout(() => window.close(), 150);</script></body></html>""",
    "/cart": _HEAD.format(title="Cart") + "<h1>Your cart</h1><p>2 rooms</p></body></html>",
    "/nojs": _HEAD.format(title="No script") + "<h1>Posted without script</h1></body></html>",
    # A timer that sets the timer that redirects (not a loop: another callback).
    "/hop1": _HEAD.format(title="Hop 1") + """<p>Redirecting...</p>
<script>setTimeout(() => { document.querySelector('p').textContent = 'Almost there';
  setTimeout(() => location.replace('/hop2'), 150); }, 100);</script></body></html>""",
    "/hop2": _HEAD.format(title="Hop 2") + """<p>Still redirecting...</p>
<script>window.addEventListener('load', () => { location.href = '/final'; });</script></body></html>""",
    "/final": _HEAD.format(title="Final") + "<h1>Arrived</h1></body></html>",
    # A cart with a reservation countdown that redraws itself forever (pretix has one).
    "/checkout": _HEAD.format(title="Checkout") + """<h1>Checkout</h1><p id="left">15:00</p>
<script>
let left = 900;
const draw = () => { left -= 1; document.getElementById('left').textContent = String(left); setTimeout(draw, 200); };
setTimeout(draw, 200);
</script></body></html>""",
}


#: Pages answered after a delay, as a real shop's order page often is.
SLOW = ("/tab", "/popup")
SLOW_S = 0.6


class _Site(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def _send(self, body: bytes, ctype: str, status: int = 200) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path in SLOW:
            # A slow first response: Chromium reports the new tab only once it is in.
            time.sleep(SLOW_S)
        if self.path == "/api/status":
            self._send(b'{"ready": false}', "application/json")
        elif self.path in PAGES:
            self._send(PAGES[self.path].encode(), "text/html; charset=utf-8")
        else:
            self._send(b"not found", "text/plain", 404)

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path == "/api/order":
            self._send(b'{"next": "/cart"}', "application/json")
        else:
            self._send(PAGES["/nojs"].encode(), "text/html; charset=utf-8")


@pytest.fixture(scope="module")
def site():
    with serving(_Site) as origin:
        yield origin


@pytest.fixture(scope="module")
def env():
    # A short cap keeps the never-settling page's test quick; the quiet period is the default.
    e = WebEnv(max_steps=20, screenshots=False, settle_cap_ms=2500)
    yield e
    e.close()


def _start(env, site):
    obs, _ = env.reset(options={"url": site + "/"})
    assert obs["url"] == site + "/" and "heading 'Start'" in obs["axtree"]
    return obs


def test_target_blank_link_opens_the_active_tab(env, site):
    obs = _start(env, site)
    obs, *_ = env.step(f"click('{bid_of(obs['axtree'], 'link .Open the offer in a new tab.')}')")
    assert obs["last_action_error"] == ""
    assert obs["open_pages_urls"] == [site + "/", site + "/tab"]
    assert obs["active_page_index"] == 1
    assert obs["url"] == site + "/tab" and "StaticText 'Two nights for one'" in obs["axtree"]
    assert obs["axtree"].startswith("RootWebArea 'Offer'")
    # The old tab is still there and tab_focus goes back to it.
    obs, *_ = env.step("tab_focus(0)")
    assert obs["url"] == site + "/" and obs["active_page_index"] == 0


def test_window_open_button_opens_the_active_tab(env, site):
    obs = _start(env, site)
    obs, *_ = env.step(f"click('{bid_of(obs['axtree'], 'button .Open a popup.')}')")
    assert obs["last_action_error"] == ""
    assert obs["open_pages_urls"] == [site + "/", site + "/popup"] and obs["active_page_index"] == 1
    assert obs["url"] == site + "/popup" and "heading 'Popup window'" in obs["axtree"]
    # Closing the popup makes the opener active again.
    obs, *_ = env.step("tab_close()")
    assert obs["open_pages_urls"] == [site + "/"] and obs["url"] == site + "/"


def test_a_popup_that_closes_itself_leaves_the_opener_active(env, site):
    obs = _start(env, site)
    obs, *_ = env.step(f"click('{bid_of(obs['axtree'], 'button .Sign in with a popup.')}')")
    assert obs["last_action_error"] == ""
    assert obs["open_pages_urls"] == [site + "/"] and obs["active_page_index"] == 0
    assert obs["url"] == site + "/" and "heading 'Start'" in obs["axtree"]


def test_fetch_submit_then_location_is_seen_on_the_same_step(env, site):
    obs = _start(env, site)
    obs, *_ = env.step(f"click('{bid_of(obs['axtree'], 'button .Add to cart.')}')")
    assert obs["last_action_error"] == ""
    assert obs["url"] == site + "/cart" and "heading 'Your cart'" in obs["axtree"]
    assert obs["open_pages_urls"] == [site + "/cart"] and obs["active_page_index"] == 0
    assert env.last_settle == "quiet"


def test_enter_in_a_scripted_form_is_seen_on_the_same_step(env, site):
    obs = _start(env, site)
    obs, *_ = env.step(f"press('{bid_of(obs['axtree'], 'textbox .Quantity.')}', 'Enter')")
    assert obs["last_action_error"] == ""
    assert obs["url"] == site + "/cart" and "StaticText '2 rooms'" in obs["axtree"]


def test_javascript_redirect_chain_of_two_hops(env, site):
    obs = _start(env, site)
    obs, *_ = env.step(f"click('{bid_of(obs['axtree'], 'link .Continue.')}')")
    assert obs["last_action_error"] == ""
    assert obs["url"] == site + "/final" and obs["axtree"].startswith("RootWebArea 'Final'")
    assert "heading 'Arrived'" in obs["axtree"]


def test_a_page_that_polls_forever_is_observed_at_the_cap(env, site):
    obs = _start(env, site)
    obs, reward, terminated, truncated, _ = env.step(f"click('{bid_of(obs['axtree'], 'button .Check status.')}')")
    assert obs["last_action_error"] == "" and not terminated and not truncated
    assert obs["url"] == site + "/" and "StaticText 'polling'" in obs["axtree"]
    assert env.last_settle == "cap"
    # The next action still runs and observes normally (the poll goes on in the background).
    obs, *_ = env.step(f"click('{bid_of(obs['axtree'], 'link .Continue.')}')")
    assert obs["last_action_error"] == "" and obs["url"] == site + "/final"


def test_a_countdown_that_redraws_forever_does_not_hold_the_step(env, site):
    obs = _start(env, site)
    obs, *_ = env.step(f"click('{bid_of(obs['axtree'], 'link .Checkout.')}')")
    assert obs["last_action_error"] == "" and obs["url"] == site + "/checkout"
    assert "heading 'Checkout'" in obs["axtree"]
    assert env.last_settle == "quiet"      # its timer re-arms itself without a request


def test_goto_of_a_page_that_redirects_by_script(env, site):
    env.reset(options={"url": site + "/tab"})
    obs, *_ = env.step(f"goto('{site}/hop1')")
    assert obs["last_action_error"] == "" and obs["url"] == site + "/final"


def test_reset_on_a_page_that_redirects_by_script(env, site):
    obs, _ = env.reset(options={"url": site + "/hop2"})
    assert obs["url"] == site + "/final" and "heading 'Arrived'" in obs["axtree"]


def test_settle_parameters_are_checked():
    with pytest.raises(ValueError, match="settle_quiet_ms and settle_cap_ms must be >= 0"):
        WebEnv(settle_cap_ms=-1)
