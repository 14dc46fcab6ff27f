"""simweb: a transition-faithful web simulator for training and evaluating web agents.

    import simweb
    env = simweb.make("shopping", seed=0)
    obs, info = env.reset(seed=3, options={"task": "shopping/buy_product"})
    obs, reward, terminated, truncated, info = env.step("click('nav-cart')")

Every app is also a gymnasium env: ``gymnasium.make("simweb/shopping-v0")``.

The engine lives in wings (``simweb.core``, ``.judging``, ``.runtime``, ``.web``, ``.agents``,
``.episodes``, ``.serving``, ``.live``, ``.tools``; docs/architecture.md); the old flat module
paths (``simweb.env``, ``simweb.spec``, ...) are the same modules (simweb._layout.MOVED).
"""
from __future__ import annotations

from typing import Any

# Set before any import: modules on every floor read it (trajectory headers).
__version__ = "0.1.0"

from . import _aliases  # noqa: E402  (old module paths: simweb._layout.MOVED)

_aliases.install()

from .runtime.registry import RegistryError, register  # noqa: E402
from .runtime.registry import names as app_names  # noqa: E402


def make(app: str, seed: int = 0, *, backend: str = "sim", **kwargs: Any) -> Any:
    """Create an env for ``app`` on the world generated from ``seed``.

    ``backend="sim"`` (the default) runs in-process (:class:`simweb.env.SimEnv`: size,
    task, max_steps, reward); ``backend="browser"`` serves the same app to headless
    Chromium through Playwright (:class:`simweb.browser.BrowserEnv`: screenshots and
    coordinate actions)."""
    if backend == "sim":
        from .episodes.env import SimEnv

        return SimEnv(app=app, seed=seed, **kwargs)
    if backend == "browser":
        from .serving.browser import make_browser_env

        return make_browser_env(app, seed, **kwargs)
    raise ValueError(f"backend must be 'sim' or 'browser', not {backend!r}")


def check_app(name: str, **kwargs: Any) -> Any:
    """Check an app's whole contract, as gymnasium's check_env does for an env (see
    :mod:`simweb.check`); raises :class:`simweb.check.AppCheckError` naming what broke."""
    from .tools.check import check_app as run

    return run(name, **kwargs)


def __getattr__(name: str) -> Any:
    if name == "SimEnv":
        from .episodes.env import SimEnv

        return SimEnv
    raise AttributeError(name)


__all__ = ["make", "app_names", "check_app", "register", "RegistryError", "SimEnv", "__version__"]
