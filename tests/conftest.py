"""Shared fixtures: every test family runs over every registered app."""
from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

import pytest

import simweb


def selected_apps() -> list[str]:
    """Every registered app, or the comma-separated subset in SIMWEB_TEST_APPS (a
    convenience for working on one app: the families stay parametrized over all)."""
    names = simweb.app_names()
    wanted = [a.strip() for a in os.environ.get("SIMWEB_TEST_APPS", "").split(",") if a.strip()]
    unknown = sorted(set(wanted) - set(names))
    if unknown:
        raise pytest.UsageError(f"SIMWEB_TEST_APPS names unknown apps: {', '.join(unknown)} (known: {', '.join(names)})")
    return [a for a in names if a in wanted] if wanted else names


APPS = selected_apps()


def run_plan(env: Any, plan: list[str], where: tuple[Any, ...]) -> dict:
    """Run ``plan`` on ``env``, no action failing (``where`` names the run in the
    message), and return the verdict after the last action."""
    info: dict = {}
    for a in plan:
        obs, _, _, _, info = env.step(a)
        assert not obs["last_action_error"], (*where, a, obs["last_action_error"])
    return info["verdict"]


def assert_every_oracle_solves(app: str, variant: int) -> None:
    """Every task template's oracle plan on ``variant`` of ``app`` (one seed each) runs
    without a failing action and ends in a clean success."""
    env = simweb.make(app, variant=variant, max_steps=100_000)
    for i, name in enumerate(env.app.tasks):
        env.reset(seed=variant + i, options={"task": name})
        verdict = run_plan(env, env.oracle_plan(), (app, variant, name))
        assert verdict["success"] and verdict["clean"], (app, variant, name, verdict)


def site_bar_lines(axtree: str) -> list[str]:
    """The AX-tree lines inside a moved top bar (the landmark "navigation 'Site'" at the
    top level of the page)."""
    lines = axtree.splitlines()
    at = next(i for i, ln in enumerate(lines) if ln == "\tnavigation 'Site'")
    inside = []
    for ln in lines[at + 1:]:
        if not ln.startswith("\t\t"):
            break
        inside.append(ln)
    return inside


def assert_walks_agree(html: str) -> None:
    """The Python AX walk and the compiled one read ``html`` as the same page."""
    from simweb.web import axtree

    py = axtree._fingerprint(axtree._parse_page(html, None))
    assert py == axtree._fingerprint(axtree._parse_page(html, axtree._compiled_walk))


@pytest.fixture(scope="session", params=APPS)
def app_name(request) -> str:
    return request.param


@pytest.fixture(scope="session")
def env_of():
    """One env per app for the whole session (worlds are shared anyway)."""
    envs: dict[str, object] = {}

    def get(name: str):
        if name not in envs:
            envs[name] = simweb.make(name, seed=0)
        return envs[name]

    return get


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    """A headless Chromium (the project's launch flags) for one test module. A missing
    Chromium fails the test rather than skipping it: the browser tests' modules skip only
    when Playwright is not installed (their ``pytest.importorskip``)."""
    from simweb.serving.browser import chromium_executable, launch_chromium

    if not os.access(chromium_executable(), os.X_OK):
        pytest.fail(f"Chromium not found at {chromium_executable()} (apt-get install -y chromium)")
    from playwright.sync_api import sync_playwright

    pw = sync_playwright().start()
    browser = launch_chromium(pw, headless=True)
    yield browser
    browser.close()
    pw.stop()


#: Chromium's action timeout for actions expected to complete: the time a loaded machine may
#: take (a navigation to another host waits for the DNS lookup to fail, which has outlasted
#: 1 s under CI's load).
ACTION_TIMEOUT_MS = 10_000


@contextlib.contextmanager
def served_browser(app: str, chromium: Any, timeout_ms: int = ACTION_TIMEOUT_MS) -> Iterator[Any]:
    """The Chromium twin of an in-process env: APP served from this process (world seed 0)
    and a ``BrowserEnv`` driving CHROMIUM on it, without a step limit; both closed on exit.
    The parity tests restore a sim's state into it and compare the two observations step by
    step."""
    pytest.importorskip("playwright.sync_api")
    from simweb.serving.browser import BrowserEnv, ServedApp

    served = ServedApp(app, world_seed=0)
    web = BrowserEnv(app, 0, server=served, browser=chromium, screenshots=False, timeout_ms=timeout_ms,
                     max_steps=100_000)
    try:
        yield web
    finally:
        web.close()
        served.close()


#: Chromium's action timeout for actions expected to fail: a random walk's (simweb.tools.walks
#: tries many that cannot be done; a done action that outlasts it is the declared
#: "late-timeout" class) and a targeted test's action the in-process browser refused.
#: Playwright reports those by its timeout, so a short one keeps the tests quick. Actions
#: expected to complete keep ACTION_TIMEOUT_MS.
QUICK_TIMEOUT_MS = 1000


@contextlib.contextmanager
def action_timeout(env: Any, timeout_ms: int) -> Iterator[None]:
    """A ``BrowserEnv``'s action timeout (and its settle window's cap, which defaults to it)
    set to ``timeout_ms`` for a block, then put back."""
    old, old_cap = env.timeout_ms, env.settle_cap_ms
    env.timeout_ms = env.settle_cap_ms = timeout_ms
    env._context.set_default_timeout(timeout_ms)
    env._context.set_default_navigation_timeout(timeout_ms)
    try:
        yield
    finally:
        env.timeout_ms, env.settle_cap_ms = old, old_cap
        env._context.set_default_timeout(old)
        env._context.set_default_navigation_timeout(old)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "apps(*names): the test drives these apps; a SIMWEB_TEST_APPS selection "
                                       "without all of them deselects it")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """SIMWEB_TEST_APPS narrows every family: a test marked ``apps(...)`` whose apps are not
    all selected is deselected (not skipped: it is not part of this selection)."""
    selected = set(APPS)
    keep: list[pytest.Item] = []
    drop: list[pytest.Item] = []
    for item in items:
        marker = item.get_closest_marker("apps")
        (drop if marker is not None and not set(marker.args) <= selected else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
