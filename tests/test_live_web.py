"""simweb.live.web.WebEnv: simweb's env interface on a site that is not a simweb app
(a static site served by the standard library on loopback)."""
from __future__ import annotations

import functools
import http.server

import pytest

pytest.importorskip("playwright.sync_api")

from loopback import bid_of, serving

from simweb.episodes.episode import EPISODE_OVER
from simweb.live.web import LiveStateError, WebEnv

pytestmark = pytest.mark.browser

PAGES = {
    "index.html": """<!DOCTYPE html><html><head><title>Tiny site</title></head><body>
<nav><a href="/about.html">About us</a> <a href="/contact.html">Contact</a></nav>
<h1>Welcome</h1>
<form action="/results.html" method="get">
  <label for="q">Search</label><input id="q" name="q">
  <label for="sort">Sort</label><select id="sort" name="sort"><option value="new">Newest</option><option value="old">Oldest</option></select>
  <label><input type="checkbox" name="stock" value="1"> In stock</label>
  <button type="submit">Go</button>
</form>
<p bid="x">A site that uses bid itself</p><p bid="x">twice</p>
</body></html>""",
    "about.html": "<!DOCTYPE html><html><head><title>About</title></head><body><h1>About us</h1><p>Since 1999.</p></body></html>",
    "results.html": "<!DOCTYPE html><html><head><title>Results</title></head><body><h1>Results</h1></body></html>",
}


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("site")
    for name, html in PAGES.items():
        (root / name).write_text(html, encoding="utf-8")

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    with serving(functools.partial(Quiet, directory=str(root))) as origin:
        yield origin


@pytest.fixture(scope="module")
def env():
    e = WebEnv(max_steps=12)
    yield e
    e.close()


def test_axtree_with_bids_actions_and_screenshots(env, site):
    obs, info = env.reset(options={"url": site + "/", "goal": "Search for lamps"})
    assert obs["url"] == site + "/" and obs["goal"] == "Search for lamps" and info["verdict"] is None
    assert obs["axtree"].startswith("RootWebArea 'Tiny site'")
    assert obs["screenshot"][:8] == b"\x89PNG\r\n\x1a\n" and obs["last_action_error"] == ""
    box = bid_of(obs["axtree"], "textbox 'Search'")
    sort = bid_of(obs["axtree"], "combobox 'Sort'")
    # A bid the site uses twice is kept once and replaced on the second element.
    assert obs["html"].count('bid="x"') == 1

    obs, reward, terminated, truncated, _ = env.step(f"fill('{box}', 'lamp')")
    assert obs["last_action_error"] == "" and f"[{box}] textbox 'Search' value='lamp'" in obs["axtree"]
    assert bid_of(obs["axtree"], "textbox 'Search'") == box          # bids are kept within a document
    obs, *_ = env.step(f"select_option('{sort}', 'Oldest')")
    assert "value='Oldest'" in obs["axtree"]
    check = bid_of(obs["axtree"], "checkbox 'In stock'")
    obs, *_ = env.step(f"check('{check}')")
    obs, *_ = env.step(f"click('{bid_of(obs['axtree'], 'button')}')")
    assert obs["url"] == site + "/results.html?q=lamp&sort=old&stock=1"
    assert "heading 'Results'" in obs["axtree"]

    obs, *_ = env.step("go_back()")
    assert obs["url"] == site + "/"
    obs, *_ = env.step("goto('/about.html')")
    assert obs["url"] == site + "/about.html" and "StaticText 'Since 1999.'" in obs["axtree"]
    obs, *_ = env.step("click('no-such-bid')")
    assert "Could not find element with bid 'no-such-bid'" in obs["last_action_error"]
    obs, *_ = env.step("goto('ftp://example.org/')")
    assert "only http and https" in obs["last_action_error"]
    obs, *_ = env.step("goto('http://[::1')")
    assert obs["last_action_error"] == "net::ERR_INVALID_URL at http://[::1" and obs["url"] == site + "/about.html"
    obs, reward, terminated, truncated, _ = env.step("send_msg_to_user('Since 1999')")
    assert terminated and not truncated and reward == 0.0
    assert obs["chat_messages"] == [{"role": "assistant", "message": "Since 1999"}]
    obs, _, terminated, _, info = env.step("goto('/')")
    assert terminated and info["episode_over"] and obs["url"] == site + "/about.html"
    assert obs["last_action_error"] == EPISODE_OVER   # the rule and message every backend shares


def test_coordinates_and_budget(env, site):
    obs, _ = env.reset(options={"url": site + "/"})
    assert obs["chat_messages"] == [] and obs["step"] == 0
    point = env.page.locator("a[href='/about.html']").bounding_box()
    obs, *_ = env.step(f"mouse_click({point['x'] + 5}, {point['y'] + point['height'] / 2})")
    assert obs["url"] == site + "/about.html"
    truncated = False
    for _ in range(env.max_steps - 1):
        obs, _, terminated, truncated, _ = env.step("noop()")
    assert truncated and not terminated


def test_no_simweb_state(env):
    with pytest.raises(LiveStateError):
        env.snapshot()
    with pytest.raises(LiveStateError):
        env.fork()
