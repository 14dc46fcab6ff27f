"""Random walks in-process and in Chromium make the same transitions (simweb.walks): for
hypothesis-drawn walk seeds on every app, the URL, the runtime/meta state and the error
class agree after every step. CI-sized: a few short walks per app, one Chromium for the
module. A divergence of a declared class (simweb.walks.DECLARED) is allowed, by name."""
from __future__ import annotations

import os
import random
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("playwright.sync_api")
from conftest import APPS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import simweb
from simweb.browser import BrowserEnv, ServedApp, chromium_executable, launch_chromium
from simweb.walks import declared, run_walk, start_state

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    if not os.access(chromium_executable(), os.X_OK):
        pytest.fail(f"Chromium not found at {chromium_executable()} (apt-get install -y chromium)")
    from playwright.sync_api import sync_playwright

    pw = sync_playwright().start()
    browser = launch_chromium(pw, headless=True)
    yield browser
    browser.close()
    pw.stop()


@pytest.fixture(scope="module")
def envs(chromium: Any) -> Iterator[Any]:
    made: dict[str, tuple[Any, BrowserEnv, ServedApp]] = {}

    def get(app: str) -> tuple[Any, BrowserEnv]:
        if app not in made:
            served = ServedApp(app, world_seed=0)
            web = BrowserEnv(app, 0, server=served, browser=chromium, screenshots=False, timeout_ms=1000,
                             max_steps=100_000)
            made[app] = (simweb.make(app, seed=0, max_steps=100_000), web, served)
        sim, web, _ = made[app]
        return sim, web

    yield get
    for _, web, served in made.values():
        web.close()
        served.close()


@pytest.mark.parametrize("app", APPS)
def test_random_walks_agree_in_process_and_in_chromium(app: str, envs: Any) -> None:
    sim, web = envs(app)

    @settings(max_examples=3, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(seed=st.integers(min_value=0, max_value=2**31))
    def walk(seed: int) -> None:
        rng = random.Random(seed)
        result = run_walk(sim, web, start_state(sim, rng), rng, steps=8)
        d = result["divergence"]
        assert d is None or declared(d) is not None, f"{app} walk seed {seed}: {d}"

    walk()


@pytest.mark.apps("shopping")
def test_a_container_click_in_chromium_lands_on_the_container(envs: Any) -> None:
    """The departments nav and the account menu are rows of links; Playwright clicks their
    centre, which HIT_CSS makes the container's own: nothing is followed, in Chromium as
    in-process (before it, Chromium followed whichever link sat at the centre)."""
    sim, web = envs("shopping")
    for env in (sim, web):
        for bid in ("nav-departments", "nav-account-menu"):
            env.reset(seed=0)
            env.step("goto('/')")
            obs, *_ = env.step(f"click({bid!r})")
            assert obs["last_action_error"] == "" and obs["url"].endswith("/"), (type(env).__name__, bid, obs["url"])
