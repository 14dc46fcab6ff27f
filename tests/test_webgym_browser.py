"""WebGym's action forms in the browser backend: coordinates execute in Chromium."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("playwright.sync_api")

from simweb.episodes.env import SimEnv
from simweb.serving.browser import BrowserEnv, ServedApp

pytestmark = pytest.mark.browser
TASK = "shopping/buy_product"


@pytest.fixture(scope="module")
def shop(chromium: Any) -> Iterator[BrowserEnv]:
    served = ServedApp("shopping", world_seed=0)
    env = BrowserEnv("shopping", 0, server=served, browser=chromium)
    yield env
    env.close()
    served.close()


def normalised(env: BrowserEnv, bid: str) -> list[int]:
    """The 0-1000 point of an element's centre, as a Qwen model would point at it."""
    box: Any = env.page.locator(f"[bid='{bid}']").first.bounding_box()
    width, height = env.viewport
    return [round((box["x"] + box["width"] / 2) * 1000 / width), round((box["y"] + box["height"] / 2) * 1000 / height)]


def test_qwen_type_at_a_coordinate_clicks_selects_all_types_and_presses_enter(shop):
    shop.reset(seed=3, options={"task": TASK})
    shop.step("fill('search-q', 'something else')")     # select all must replace this
    point = normalised(shop, "search-q")
    text = ('Action: search\n<tool_call>{"name": "computer_use", "arguments": {"action": "type", '
            f'"coordinate": {point}, "text": "merino sweater"}}}}</tool_call>')
    obs, *_ = shop.step(text)
    assert obs["last_action_error"] == "" and obs["last_action"] == "keyboard_press('Enter')"
    assert obs["url"].endswith("/search?q=merino+sweater")
    sim = SimEnv("shopping", 0)
    sim.reset(seed=3, options={"task": TASK})
    sim.step("fill('search-q', 'merino sweater')")
    want, *_ = sim.step("press('search-q', 'Enter')")
    assert obs["axtree"] == want["axtree"]


def test_qwen_click_scroll_and_answer(shop):
    shop.reset(seed=3, options={"task": TASK})
    point = normalised(shop, "nav-cart")
    obs, *_ = shop.step({"name": "computer_use", "arguments": {"action": "left_click", "coordinate": point}})
    assert obs["last_action_error"] == "" and obs["url"].endswith("/cart")
    shop.step("go_back()")
    obs, *_ = shop.step({"key": "scroll", "arguments": {"direction": "down"}})
    assert obs["last_action"] == "scroll(0, 718)" and shop.page.evaluate("window.scrollY") > 0
    obs, _, terminated, _, _ = shop.step({"name": "web_interaction", "arguments": {"action": "answer", "text": "ok"}})
    assert terminated and obs["chat_messages"][-1] == {"role": "assistant", "message": "ok"}


def test_set_of_marks_ids_are_bids_in_the_browser(shop):
    shop.reset(seed=3, options={"task": TASK})
    obs, *_ = shop.step({"name": "web_interaction", "arguments": {"action": "type", "element_id": "search-q",
                                                                  "text": "merino"}})
    assert obs["last_action_error"] == "" and obs["url"].endswith("/search?q=merino")
    obs, *_ = shop.step({"key": "click", "arguments": {"element_id": "no-such-bid"}})
    assert "no-such-bid" in obs["last_action_error"]
