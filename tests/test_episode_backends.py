"""Every env class steps through :meth:`simweb.episode.Episode.step`: one episode rule
(the step budget and the episode-over rule) observed identically through each backend.

The in-process SimEnv, Chromium's BrowserEnv, WebEnv on a local page, LiveEnv on the fake
Omniboxes server and OmniboxSimEnv on a ``simweb omnibox`` server each get a budget of two
steps: the second step truncates, and a third runs nothing and says so, with the same
flags, reward, message and ``info['episode_over']`` everywhere.
"""
from __future__ import annotations

import contextlib
import functools
import http.server
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from loopback import serving

from simweb.episodes.episode import EPISODE_OVER, Episode

pytestmark = [pytest.mark.browser, pytest.mark.apps("shopping")]

TASK = "shopping/product_price"
BUDGET = 2


@contextlib.contextmanager
def _sim() -> Iterator[tuple[Any, dict]]:
    from simweb.episodes.env import SimEnv

    yield SimEnv("shopping", 0, max_steps=BUDGET), {"task": TASK}


@contextlib.contextmanager
def _browser() -> Iterator[tuple[Any, dict]]:
    from simweb.serving.browser import BrowserEnv

    env = BrowserEnv("shopping", 0, max_steps=BUDGET, screenshots=False)
    try:
        yield env, {"task": TASK}
    finally:
        env.close()


@contextlib.contextmanager
def _local_site() -> Iterator[str]:
    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b"<!DOCTYPE html><html><head><title>Hi</title></head><body><a href='/'>Home</a></body></html>"
            self.send_response(200)
            self.send_header("content-type", "text/html")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    with serving(Page) as origin:
        yield origin + "/"


@contextlib.contextmanager
def _web() -> Iterator[tuple[Any, dict]]:
    from simweb.live.web import WebEnv

    with _local_site() as url:
        env = WebEnv(max_steps=BUDGET, screenshots=False)
        try:
            yield env, {"url": url, "goal": "look around"}
        finally:
            env.close()


@contextlib.contextmanager
def _live() -> Iterator[tuple[Any, dict]]:
    from simweb.live.env import LiveEnv
    from simweb.live.fake_server import SITE, FakeOmnibox
    from simweb.live.omnibox import OmniboxClient
    from simweb.live.tasks import to_webgym

    task = to_webgym(1, "What does Item 02 cost?", SITE + "/products", ["the answer says $10.99"], "$10.99")
    with FakeOmnibox("k") as fake:
        client = OmniboxClient(fake.url, "k", retries=1, backoff=0.01, sleep=lambda s: None)
        env = LiveEnv(client, [task], max_steps=BUDGET, screenshots=False)
        try:
            yield env, {"task": 1}
        finally:
            env.close()


@contextlib.contextmanager
def _omnibox() -> Iterator[tuple[Any, dict]]:
    from simweb.serving.omnibox.env import OmniboxSimEnv
    from simweb.serving.omnibox.server import OmniboxServer

    with OmniboxServer(["shopping"], port=0, browsers=1, status_interval=3600) as server:
        env = OmniboxSimEnv(server.base_url, max_steps=BUDGET, screenshots=False)
        try:
            yield env, {"task": TASK}
        finally:
            env.close()


ENVS: dict[str, Callable[[], contextlib.AbstractContextManager[tuple[Any, dict]]]] = {
    "SimEnv": _sim, "BrowserEnv": _browser, "WebEnv": _web, "LiveEnv": _live, "OmniboxSimEnv": _omnibox,
}


@pytest.mark.parametrize("kind", list(ENVS))
def test_every_env_steps_through_the_episode_and_keeps_its_budget_rule(kind, monkeypatch):
    through: list[str] = []
    step = Episode.step

    @functools.wraps(step)
    def spy(self: Episode, backend: Any, action: Any) -> tuple[dict, float, bool, bool, dict]:
        through.append(type(backend).__name__)
        return step(self, backend, action)

    monkeypatch.setattr(Episode, "step", spy)
    with ENVS[kind]() as (env, options):
        env.reset(seed=3, options=options)
        assert env.episode.max_steps == BUDGET
        outcomes = []
        for _ in range(BUDGET):
            obs, reward, terminated, truncated, info = env.step("noop()")
            outcomes.append((reward, terminated, truncated, obs["last_action_error"], "episode_over" in info))
        assert outcomes == [(0.0, False, False, "", False), (0.0, False, True, "", False)]
        assert obs["step"] == BUDGET and env.episode.ended == (False, True)

        obs, reward, terminated, truncated, info = env.step("send_msg_to_user('late')")
        assert (reward, terminated, truncated) == (0.0, False, True)
        assert obs["last_action_error"] == EPISODE_OVER and info["episode_over"] is True
        assert obs["last_action"] == "send_msg_to_user('late')" and obs["step"] == BUDGET
        assert obs["chat_messages"] == []   # the answer was not run
    # Every step went through Episode.step, on the env's own backend (never an env of its own).
    assert len(through) == BUDGET + 1 and len(set(through)) == 1
    assert through[0] == type(env.backend).__name__
