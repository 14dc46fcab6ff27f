"""Registering simweb's tasks with BrowserGym (``browsergym.core.registration.register_task``).

Every task template of every registered simweb app, and every sub-task of it
(``simweb tasks <app> --decomposed``), becomes ``browsergym/simweb.<app>.<template>[.<n>]``.
Listing them loads each app's default world (built into the simweb cache on first use).
The gymnasium spec's ``max_episode_steps`` is the app's step budget, as for
``simweb/<app>-v0``; within it, a task ends its episode by simweb's own rule. The env's
``pre_observation_delay`` defaults to 0: simweb's pages run no script, so BrowserGym's
half-second wait for one to finish would only slow every step (``gym.make(...,
pre_observation_delay=0.5)`` restores it).
"""
from __future__ import annotations

from typing import Any

import gymnasium as gym
from browsergym.core.registration import register_task

from ...runtime.app import load_app
from ...runtime.registry import definition, names, step_cap
from .task import browsergym_name, task_class


def task_ids(apps: list[str] | None = None) -> list[str]:
    """simweb's task ids of ``apps`` (default: every registered app): each template, then
    its sub-tasks."""
    out: list[str] = []
    for name in apps if apps is not None else names():
        tasks: Any = load_app(definition(name)).tasks   # a TaskTable: parents, then their sub-tasks
        for template, subs in tasks.with_sub_tasks():
            out.append(template.id)
            out.extend(s.id for s in subs)
    return out


def gym_id(task_id: str) -> str:
    """The gymnasium id of simweb task ``task_id``: ``browsergym/simweb.<app>.<template>``."""
    return "browsergym/" + browsergym_name(task_id)


_REGISTERED: list[str] = []


def register_all() -> list[str]:
    """Register every simweb task with BrowserGym (once); the BrowserGym task names."""
    if _REGISTERED:
        return list(_REGISTERED)
    for task_id in task_ids():
        name = browsergym_name(task_id)
        if "browsergym/" + name not in gym.registry:
            register_task(name, task_class(task_id), nondeterministic=False,
                          max_episode_steps=step_cap(task_id.split("/", 1)[0]),
                          kwargs={"pre_observation_delay": 0.0})
        _REGISTERED.append(name)
    return list(_REGISTERED)


def registered() -> list[str]:
    """The BrowserGym task names simweb registered (``simweb.<app>.<template>``)."""
    return list(_REGISTERED)


__all__ = ["gym_id", "register_all", "registered", "task_ids"]
