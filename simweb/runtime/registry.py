"""The app registry: names to lazy app definitions, and gymnasium ids.

Apps register by name with a lazy 'module:attribute' reference, so listing apps imports
nothing. Registering a name twice is an error; an unknown name gets a "did you mean".
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from ..judging.taskmodel import MAX_EPISODE_STEPS
from .definition import AppDefinition, _import

_ID_RE = re.compile(r"^(?:simweb/)?(?P<name>[a-z_][a-z0-9_]*)(?:-v(?P<version>\d+))?$")


class RegistryError(KeyError):
    """An unknown or duplicate app name."""

    def __str__(self) -> str:  # KeyError quotes its message; show it plainly
        return str(self.args[0]) if self.args else ""


@dataclass(frozen=True)
class Registration:
    name: str
    entry_point: str
    version: int = 0
    #: the app's step budget: no episode of it runs longer (unless an env is given max_steps)
    max_episode_steps: int = MAX_EPISODE_STEPS


_REGISTRY: dict[str, Registration] = {}


def register(name: str, entry_point: str, version: int = 0, *, max_episode_steps: int = MAX_EPISODE_STEPS) -> None:
    """Register app ``name`` (gymnasium id ``simweb/<name>-v<version>``, whose spec's
    ``max_episode_steps`` is the app's step budget)."""
    if name in _REGISTRY:
        raise RegistryError(f"app {name!r} is already registered (as {_REGISTRY[name].entry_point})")
    if int(max_episode_steps) < 1:
        raise ValueError(f"max_episode_steps must be a positive int, not {max_episode_steps!r}")
    _REGISTRY[name] = Registration(name, entry_point, version, int(max_episode_steps))
    _register_gym(name, version, int(max_episode_steps))


def _register_gym(name: str, version: int, max_episode_steps: int) -> None:
    import gymnasium

    env_id = f"simweb/{name}-v{version}"
    if env_id not in gymnasium.registry:
        # gymnasium.make wraps the env in TimeLimit(max_episode_steps); the env's own budget
        # never exceeds it (see step_cap), so both end an episode at the same step.
        gymnasium.register(id=env_id, entry_point="simweb.env:SimEnv", kwargs={"app": name},
                           max_episode_steps=max_episode_steps)


def step_cap(name: str) -> int:
    """The step budget of app ``name`` (its gymnasium spec's ``max_episode_steps``); the
    default for an app that is not registered (an App built by hand)."""
    reg = _REGISTRY.get(name)
    return reg.max_episode_steps if reg is not None else MAX_EPISODE_STEPS


def names() -> list[str]:
    return sorted(_REGISTRY)


def resolve(name_or_id: str) -> Registration:
    """Find an app by name or gymnasium id ('shopping', 'simweb/shopping-v0')."""
    m = _ID_RE.match(str(name_or_id))
    name = m.group("name") if m else str(name_or_id)
    reg = _REGISTRY.get(name)
    if reg is None:
        close = difflib.get_close_matches(str(name_or_id), names(), n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        raise RegistryError(f"unknown app '{name_or_id}' (known: {', '.join(names())}){hint}")
    if m and m.group("version") is not None and int(m.group("version")) != reg.version:
        raise RegistryError(f"app '{name}' has version v{reg.version}, not v{m.group('version')}")
    return reg


def definition(name_or_id: str) -> AppDefinition:
    """The app's definition (importing its package, not its world)."""
    reg = resolve(name_or_id)
    try:
        d = _import(reg.entry_point)
    except (ImportError, AttributeError) as exc:
        raise RegistryError(f"app '{reg.name}' cannot be loaded from {reg.entry_point}: "
                            f"{type(exc).__name__}: {exc}") from None
    if not isinstance(d, AppDefinition):
        raise RegistryError(f"app '{reg.name}': {reg.entry_point} is a {type(d).__name__}, not an AppDefinition")
    return d


def app_of_task(task_id: str) -> str:
    """'shopping/buy_product' -> 'shopping' (with a clear error for a malformed id)."""
    if "/" not in str(task_id):
        raise RegistryError(f"task id '{task_id}' is not of the form <app>/<template>")
    return str(task_id).split("/", 1)[0]


def builtin_apps() -> dict[str, str]:
    """The apps shipped with simweb: every package folder under ``simweb.apps`` (the repo's
    ``apps/``), found without importing any of them. The folder name is the app's name."""
    import importlib.util
    import pkgutil

    spec = importlib.util.find_spec("simweb.apps")
    if spec is None or not spec.submodule_search_locations:
        return {}
    found = sorted(m.name for m in pkgutil.iter_modules(spec.submodule_search_locations) if m.ispkg)
    return {name: f"simweb.apps.{name}:APP" for name in found if _ID_RE.match(name)}


def plugin_apps() -> dict[str, str]:
    """Apps other distributions declare in the ``simweb.apps`` entry-point group
    (``name = "package.module:APP"``)."""
    from importlib.metadata import entry_points

    return {ep.name: ep.value for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name)}


ENTRY_POINT_GROUP = "simweb.apps"

for _name, _ref in builtin_apps().items():
    register(_name, _ref)
for _name, _ref in plugin_apps().items():   # a plugin may not reuse a built-in name: register raises
    register(_name, _ref)
