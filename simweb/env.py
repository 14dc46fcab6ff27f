"""The gymnasium env: one app, one world, in-process.

    env = simweb.make("shopping", seed=0)
    obs, info = env.reset(seed=3, options={"task": "shopping/buy_product"})
    obs, reward, terminated, truncated, info = env.step("click('add-to-cart')")
    s = env.snapshot(); child = env.fork(); env.restore(s)

The whole episode state is one JSON document (``snapshot()``); the world data is shared
by reference, so a fork copies only the small runtime, browser and meta layers.
"""
from __future__ import annotations

import weakref
from collections import OrderedDict
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from .app import App, load_app
from .axtree import Page
from .browsing import SimBrowser, parse_cached
from .episode import EPISODE_OVER, Episode, EpisodeEnv, TaskError, find_task, observation_space, plan_budget, potential
from .history import begin as begin_history
from .registry import RegistryError, definition, step_cap
from .spaces import Unicode
from .state import StateError, canonical, deep_copy, state_hash
from .tasks import TaskInstance


class InProcessBackend:
    """SimEnv's backend: the in-process browser (:class:`SimBrowser`) on the env's state."""

    viewport: tuple[int, int] | None = None   # no layout: WebGym's coordinate actions report an error in-process

    def __init__(self, env: SimEnv):
        # A weak reference: env -> backend -> env would make every env (and every fork,
        # with its state's dicts) garbage that only the cycle collector frees, and a fork
        # thrown away at once would then cost collections instead of a free.
        self._env = weakref.ref(env)

    @property
    def env(self) -> SimEnv:
        """The env this backend acts for."""
        env = self._env()
        if env is None:
            raise ReferenceError("the env of this backend no longer exists")
        return env

    def execute(self, action: str) -> str | None:
        return self.env.browser.execute(action)

    def state(self) -> dict:
        # The step counter lives in the state's meta (snapshots carry it).
        state = self.env.state
        state["meta"]["step"] = self.env.episode.step_count
        return state

    def observe(self, state: dict) -> dict[str, Any]:
        browser = self.env.browser
        b = state["browser"]
        tab = browser.tab
        return {
            "url": browser.display_url(tab["url"]),
            "html": browser.html(),
            "axtree": browser.axtree(),
            "open_pages_urls": [browser.display_url(t["url"]) for t in b["tabs"]],
            "active_page_index": b["active"],
            "focused_element_bid": tab["focus"] or "",
        }

    def page_info(self, state: dict) -> dict[str, Any]:
        browser = self.env.browser
        info: dict[str, Any] = {"page": browser.tab["page"], "status": browser.tab["status"]}
        if browser.site_error:
            info["site_error"] = browser.site_error
        return info


class SimEnv(EpisodeEnv):
    """A simweb app as a gymnasium env with snapshot / restore / fork.

    The episode (task, budget, verdict, rewards, observation) is an
    :class:`simweb.episode.Episode`; this env performs its actions in-process."""

    metadata = {"render_modes": ["html", "ansi"]}
    backend: InProcessBackend

    def __init__(self, app: str, seed: int = 0, *, size: int | None = None, task: str | None = None,
                 max_steps: int | None = None, reward: str = "sparse", progress: bool = False,
                 end_on_success: bool = False, _app: App | None = None):
        if reward not in ("sparse", "progress"):
            raise ValueError(f"reward must be 'sparse' or 'progress', not {reward!r}")
        self.app: App = _app or load_app(definition(app), seed, size, progress=progress)
        self.world_seed = seed
        self.default_task = task
        self.episode = Episode(self.app, reward=reward, end_on_success=end_on_success, max_steps=max_steps,
                               cap=step_cap(self.app.name))
        self.backend = InProcessBackend(self)
        self.action_space = Unicode()
        self.observation_space = observation_space()
        self.state: dict = self.app.initial_state()
        self.browser = SimBrowser(self.app, self.state)

    # ------------------------------------------------------------------ episode
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[dict, dict]:
        """Start an episode. ``options``: task (id), params (explicit task parameters).

        The same (task, seed, params) always gives the same start state; it is built once
        per process and copied afterwards, so a reset costs about as much as a fork."""
        super().reset(seed=seed)
        options = options or {}
        task_id = options.get("task", self.default_task)
        if task_id is not None:
            self.app_task(task_id)   # a clear error for an unknown id
        start = episode_start(self.app, task_id, 0 if seed is None else int(seed), options.get("params"))
        self.state = deep_copy(start.state)
        self.browser = SimBrowser(self.app, self.state)
        self.browser._html = start.html
        self.browser._page = start.page
        verdict = deep_copy(start.verdict) if start.verdict is not None else None
        self.episode.begin(start.task, start.state, verdict, budget=lambda: start.budget,
                           step=self.state["meta"]["step"])
        return self.episode.observation(self.backend, self.state), self.episode.info(self.backend, self.state, verdict)

    def app_task(self, task_id: str) -> Any:
        """The app's template ``task_id`` (a TaskError with a "did you mean" otherwise)."""
        return find_task(self.app, task_id)

    def render(self) -> str:
        return self.browser.html()

    # ------------------------------------------------------------------ state
    def snapshot(self) -> dict:
        """The whole state as a JSON-serialisable dict (a deep copy)."""
        return deep_copy(self.state)

    def state_hash(self) -> str:
        return state_hash(self.state)

    def restore(self, state: dict) -> None:
        """Continue from ``state`` (from snapshot(), a file, or a served session).

        Refuses, with StateError, a state from another app, world or spec version."""
        self.app.check_state(state)
        self.state = deep_copy(state)
        self.browser = SimBrowser(self.app, self.state)
        task = self.state["meta"]["task"]
        if task is not None and (self.task is None or self.task.id != task["id"] or self.task.params != task["params"]):
            self._attach_task(task["id"], task["params"])
        ep = self.episode
        ep.step_count = int(self.state["meta"]["step"])
        ep.last_action = ep.last_error = ""
        ep.rebase(ep.verdict(self.state))

    def _attach_task(self, task_id: str, params: dict) -> None:
        """Rebuild the task and its start state from (id, params): both are deterministic."""
        self.app_task(task_id)
        start = episode_start(self.app, task_id, self.state["meta"]["rng"]["seed"], params)
        self.episode.begin(start.task, start.state, None, budget=lambda: start.budget)

    def fork(self) -> SimEnv:
        """An independent env at the same state, sharing the world data."""
        child = SimEnv.__new__(SimEnv)
        attrs = child.__dict__
        attrs.update(self.__dict__)   # then replace what the child must own
        attrs["episode"] = self.episode.copy()
        attrs["backend"] = InProcessBackend(child)
        attrs["state"] = state = deep_copy(self.state)
        attrs["browser"] = browser = SimBrowser(self.app, state)
        browser._html = self.browser._html
        browser._page = self.browser._page
        attrs["_np_random"] = None
        return child


@dataclass(frozen=True)
class EpisodeStart:
    """Everything a reset produces, computed once per (task, seed, params)."""

    app: App
    task: TaskInstance | None
    state: dict            # shared and never mutated: envs work on copies
    html: str
    page: Page             # the parsed start page (immutable, shared)
    verdict: dict | None

    @cached_property
    def budget(self) -> int:
        """The budget rule (:func:`simweb.taskmodel.episode_budget`) for this start: WebGym's
        test step budget for the difficulty, at least twice the oracle's plan (before
        the app's cap, which the env applies)."""
        return plan_budget(self.app, self.task)


_START_CACHE_SIZE = 4096


def episode_start(app: App, task_id: str | None, seed: int, params: dict | None = None) -> EpisodeStart:
    """The start of an episode: task instance, start state (signed in, set up, at the
    start URL), its page, step budget and verdict. Memoised per app."""
    cache: OrderedDict = app.__dict__.setdefault("_episode_starts", OrderedDict())
    key = (task_id, seed, canonical(params) if params is not None else None)
    hit = cache.get(key)
    if hit is not None:
        cache.move_to_end(key)
        return hit
    state = app.initial_state(seed)
    task = None
    if task_id:
        template = app.tasks[task_id]
        task = template.instantiate(app, seed, params)
        state["meta"]["task"] = {"id": task.id, "params": task.params}
        if template.sign_in and task.params.get("user_id") is not None:
            state["browser"]["user"] = int(task.params["user_id"])
        template.setup(app, state, task.params)
        start_url = task.start_url
    else:
        start_url = app.spec.start_url
    html = app.navigate(state, start_url).html or ""
    begin_history(state)   # the set-up and the start page are rebuilt from (task, seed), not replayed
    verdict = None
    if task is not None and task_id:
        verdict = app.tasks[task_id].verify(app, task.params, state, state, None)
    # Start pages repeat across tasks and seeds (a home page, a signed-in dashboard): the
    # browser's parse cache serves them, and the first step finds the page there too.
    start = EpisodeStart(app, task, state, html, parse_cached(html), verdict)
    cache[key] = start
    while len(cache) > _START_CACHE_SIZE:
        cache.popitem(last=False)
    return start


__all__ = ["EPISODE_OVER", "Episode", "EpisodeStart", "InProcessBackend", "SimEnv", "TaskError", "StateError",
           "RegistryError", "episode_start", "observation_space", "potential"]
