"""`simweb view` in real Chromium (Debian's, through Playwright, as the other browser
tests launch it): open a run, filter the list, follow an episode and a step, read a
collateral check; markup in a goal and in page text shows as text and runs nothing."""
from __future__ import annotations

import threading
from typing import Any

import pytest

pytest.importorskip("playwright.sync_api")

from playwright.sync_api import sync_playwright
from test_viewer import INFO_TASK, XSS_GOAL, Vandal, cli, markup_file

from simweb.episodes.env import SimEnv
from simweb.episodes.rollout import run_episode
from simweb.episodes.trajectory import write_trajectory
from simweb.serving.browser import launch_chromium
from simweb.serving.server import make_server, stop_server
from simweb.tools.viewer.app import create_app

pytestmark = [pytest.mark.browser, pytest.mark.apps("forum")]


@pytest.fixture(scope="module")
def viewer(tmp_path_factory):
    d = tmp_path_factory.mktemp("run")
    assert cli("run", "forum", "--task", "forum/upvote_post", "--seed", "1", "--out", str(d / "oracle.jsonl")).exit_code == 0
    write_trajectory(d / "vandal.jsonl", run_episode(SimEnv("forum", 0), Vandal(), task=INFO_TASK, seed=2))
    markup_file(d / "markup.jsonl")
    server = make_server(create_app([str(d)]), "127.0.0.1", 0, threads=2)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.effective_port}"
    stop_server(server, thread)
    thread.join(timeout=10)


@pytest.fixture(scope="module")
def browser_page():
    with sync_playwright() as p:
        browser = launch_chromium(p)
        pg = browser.new_page()
        dialogs: list[str] = []

        def seen(d: Any) -> None:
            dialogs.append(d.message)
            d.dismiss()

        pg.on("dialog", seen)
        yield pg, dialogs, browser
        browser.close()


def test_open_filter_follow_a_step_and_read_a_collateral_check(viewer, browser_page):
    page, _, _ = browser_page
    page.goto(viewer + "/")
    assert page.locator("#count").inner_text().startswith("3 episode(s)")
    page.select_option("select[name=agent]", "vandal")
    page.select_option("select[name=clean]", "no")
    page.click("#apply")
    assert page.locator("#count").inner_text().startswith("1 episode(s)")
    assert page.locator("tr.episode").count() == 1
    page.locator("tr.episode td a").first.click()
    assert page.locator("#goal").inner_text().startswith("Of all posts")
    page.click("#step-1 td a")
    assert "step=1" in page.url
    action = page.locator("#action").inner_text()
    bid = action.split("'")[1]
    assert page.locator("#axtree-hit").inner_text().strip().startswith(f"[{bid}]")
    row = page.locator("#checks tr.collateral").first
    assert row.locator("td").first.inner_text().startswith("collateral: runtime.votes.")
    assert row.locator(".before").inner_text() == "0" and row.locator(".after").inner_text() == "-1"
    assert "the verdict changed here" in page.locator("#step-title").inner_text()


def test_markup_in_a_trajectory_is_text(viewer, browser_page):
    page, dialogs, _ = browser_page
    page.goto(viewer + "/?agent=%3Ci%3Eme%3C%2Fi%3E")
    page.locator("tr.episode td a").first.click()
    page.click("#step-1 td a")
    assert page.locator("#goal").inner_text() == XSS_GOAL
    assert "<img src=x onerror=alert(1)>" in page.locator("#axtree").inner_text()
    assert page.locator("#site-error").inner_text() == "The site said: <b>site</b>"
    assert page.locator("script").count() == 0 and page.locator("main img").count() == 0
    assert dialogs == []


def test_a_browser_backends_screenshots_are_written_and_shown(tmp_path, browser_page):
    """A rollout on the Chromium backend keeps its screenshots beside the trajectory; the
    viewer shows the page the agent saw, with the acted-on element boxed, and the page after."""
    from simweb.agents import OracleAgent
    from simweb.serving.browser import make_browser_env

    env = make_browser_env("forum", 0, browser=browser_page[2])   # one Playwright per process
    try:
        traj = run_episode(env, OracleAgent(), task="forum/upvote_post", seed=1, max_steps=2)
    finally:
        env.close()
    write_trajectory(tmp_path / "b.jsonl", traj)
    shots = sorted(p.name for p in (tmp_path / "b.screenshots").iterdir())
    assert shots == ["step-0000.png", "step-0001.png", "step-0002.png"]
    c = create_app([str(tmp_path)]).test_client()
    page = c.get("/episode/0?step=1").get_data(as_text=True)
    assert 'src="/episode/0/screenshot/0"' in page and 'src="/episode/0/screenshot/1"' in page
    # the acted-on element's box, read before the action, is drawn on the page the agent saw
    assert traj.steps[0]["action"].startswith(("click", "fill"))
    box = traj.steps[0]["target_box"]
    assert box["width"] > 0 and box["height"] > 0
    from simweb.tools.viewer.app import png_size

    w, h = png_size(str(tmp_path / "b.screenshots" / "step-0000.png")) or (0, 0)
    left, top = round(100 * box["x"] / w, 3), round(100 * box["y"] / h, 3)
    assert f'id="target-box" style="left: {left}%; top: {top}%' in page
    assert c.get("/episode/0/screenshot/0").data[:8] == b"\x89PNG\r\n\x1a\n"
