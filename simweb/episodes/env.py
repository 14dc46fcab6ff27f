"""The gymnasium env: one app, one world, in-process.

    env = simweb.make("shopping", seed=0)
    obs, info = env.reset(seed=3, options={"task": "shopping/buy_product"})
    obs, reward, terminated, truncated, info = env.step("click('add-to-cart')")
    s = env.snapshot(); child = env.fork(); env.restore(s)

The whole episode state is one JSON document (``snapshot()``); the world data is shared
by reference, so a fork copies only the small runtime, browser and meta layers.
"""
from __future__ import annotations

import fnmatch
import weakref
from collections import OrderedDict
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from ..core.state import StateError, canonical, deep_copy, state_hash
from ..judging.tasks import TaskInstance, starts_signed_out
from ..runtime.app import App, load_app
from ..runtime.history import begin as begin_history
from ..runtime.registry import RegistryError, definition, step_cap
from ..runtime.variants import catalogue
from ..web.axtree import Page
from ..web.browsing import SimBrowser, parse_cached
from ..web.spaces import Unicode
from .episode import EPISODE_OVER, Episode, EpisodeEnv, TaskError, find_task, observation_space, plan_budget, potential


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

    # html: the page's HTML; ansi: the BrowserGym AX-tree text (what a text agent reads).
    # render_fps only quiets gymnasium's checker: a page is a document, not a frame stream.
    metadata = {"render_modes": ["html", "ansi"], "render_fps": 1}
    backend: InProcessBackend

    def __init__(self, app: str, seed: int = 0, *, size: int | None = None, task: str | None = None,
                 tasks: str | list[str] | tuple[str, ...] | None = None, max_steps: int | None = None,
                 reward: str = "sparse", progress: bool = False, end_on_success: bool = False,
                 render_mode: str | None = None, variant: int = 0, _app: App | None = None):
        if reward not in ("sparse", "progress"):
            raise ValueError(f"reward must be 'sparse' or 'progress', not {reward!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']} or None, not {render_mode!r}")
        self.render_mode = render_mode
        self.app: App = _app or load_app(definition(app), seed, size, progress=progress)
        self.world_seed = seed
        self.default_task = task
        # simweb.variants: which site of the app (0: today's); every state it starts carries it
        self.variant = catalogue(self.app).check(variant)
        # what pickling needs to rebuild this env in another process (the app by reference)
        self._init_args = {"app": self.app.name, "seed": seed, "size": size, "task": task, "tasks": tasks,
                           "max_steps": max_steps, "reward": reward, "progress": progress,
                           "end_on_success": end_on_success, "render_mode": render_mode}
        if self.variant:
            self._init_args["variant"] = self.variant
        self.task_pool = TaskPool(self.app, tasks)
        self.episode = Episode(self.app, reward=reward, end_on_success=end_on_success, max_steps=max_steps,
                               cap=step_cap(self.app.name))
        self.backend = InProcessBackend(self)
        self.action_space = Unicode()
        self.observation_space = observation_space()
        self.state: dict = self.app.initial_state(variant=self.variant)
        self.browser = SimBrowser(self.app, self.state)

    # ------------------------------------------------------------------ episode
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[dict, dict]:
        """Start an episode. ``options``: task (id; ``None`` explicitly: free browsing, no
        task), params (explicit task parameters).

        Which instance: ``seed`` given, the instance seed is ``seed``; without it, the next
        one drawn from the env's ``np_random`` (seeded by the last ``reset(seed=...)``, as
        gymnasium does). Which task: ``options['task']``, else the constructor's ``task``,
        else a template drawn from ``np_random`` out of the constructor's ``tasks``
        distribution (every template by default; see :class:`TaskPool`).

        The same (task, seed, params) always gives the same start state; it is built once
        per process and copied afterwards, so a reset costs about as much as a fork."""
        super().reset(seed=seed)
        options = options or {}
        task_id, instance_seed = self.task_pool.choose(self.np_random, seed, options, self.default_task)
        if task_id is not None:
            self.app_task(task_id)   # a clear error for an unknown id
        start = episode_start(self.app, task_id, instance_seed, options.get("params"), self.variant)
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
        """The page shown: its HTML (``render_mode`` html or None) or its AX-tree text (ansi)."""
        if self.render_mode == "ansi":
            return self.browser.axtree()
        return self.browser.html()

    @property
    def spec(self) -> Any:
        """The gymnasium spec: the one ``gymnasium.make`` set, else the app's registered
        spec with this env's arguments (so ``env.spec.make(...)``, which gymnasium's
        checker uses for the other render modes, builds the same env)."""
        own = self.__dict__.get("_spec")
        if own is not None:
            return own
        import dataclasses

        import gymnasium

        from ..runtime.registry import resolve

        try:
            reg = resolve(self.app.name)
        except RegistryError:
            return None
        base = gymnasium.spec(f"simweb/{reg.name}-v{reg.version}")
        kwargs = {k: v for k, v in self._init_args.items() if v is not None and k != "render_mode"}
        return dataclasses.replace(base, kwargs=kwargs)

    @spec.setter
    def spec(self, value: Any) -> None:
        self.__dict__["_spec"] = value

    # ------------------------------------------------------------------ pickling
    def __reduce__(self) -> tuple[Any, tuple]:
        """Pickle by reference: the constructor's arguments (the app by name, its world
        opened again, or found already open, in the receiving process) and the current
        state; never the app's compiled spec, templates or world. So Ray and
        multiprocessing can ship an env, a fork included."""
        ep = self.episode
        rng_state = self._np_random.bit_generator.state if self._np_random is not None else None
        return (_unpickle_env, (self._init_args, self.snapshot(), ep.ended, ep.last_action, ep.last_error, rng_state))

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
        start = episode_start(self.app, task_id, self.state["meta"]["rng"]["seed"], params,
                              self.state["meta"].get("variant", 0))
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
        browser._shown = self.browser._shown   # the page with its details opened: checked on use
        attrs["_np_random"] = None
        return child


def _unpickle_env(args: dict, state: dict, ended: tuple[bool, bool] | None, last_action: str, last_error: str,
                  rng_state: dict | None) -> SimEnv:
    import numpy as np

    env = SimEnv(**args)
    env.restore(state)
    ep = env.episode
    ep.ended, ep.last_action, ep.last_error = ended, last_action, last_error
    if rng_state is not None:
        rng = np.random.Generator(np.random.PCG64())
        rng.bit_generator.state = rng_state
        env._np_random = rng
    return env


DIFFICULTIES = ("easy", "medium", "hard")


class TaskPool:
    """The distribution ``reset()`` draws a task from when none is given.

    ``tasks``: None (every template of the app), or ids, globs (``forum/*vote*``) and
    difficulties (``easy``, ``medium``, ``hard``), as a list or one comma-separated
    string. Ids and globs select templates (none given: all); difficulties keep only the
    instances of those buckets (a template's difficulty depends on its parameters, so an
    instance is drawn until one fits). A draw is a function of the generator alone."""

    #: instances drawn for one reset before a difficulty filter gives up
    MAX_DRAWS = 64

    def __init__(self, app: App, tasks: str | list[str] | tuple[str, ...] | None):
        items = [t.strip() for t in tasks.split(",")] if isinstance(tasks, str) else list(tasks or [])
        items = [t for t in items if t]
        self.difficulties = tuple(t for t in items if t in DIFFICULTIES)
        patterns = [t for t in items if t not in DIFFICULTIES]
        ids = sorted(app.tasks)
        chosen: list[str] = []
        for p in patterns:
            if any(c in p for c in "*?["):
                hits = [t for t in ids if fnmatch.fnmatchcase(t, p)]
                if not hits:
                    raise TaskError(f"no task of {app.name} matches {p!r} (see `simweb tasks {app.name}`)")
            else:
                find_task(app, p)
                hits = [p]
            chosen += [t for t in hits if t not in chosen]
        self.app = app
        self.ids: list[str] = chosen or ids
        if not self.ids:
            raise TaskError(f"{app.name} has no task templates")

    def choose(self, rng: Any, seed: int | None, options: dict[str, Any], default_task: str | None
               ) -> tuple[str | None, int]:
        """The (task id, instance seed) a ``reset(seed=seed, options=options)`` starts: the
        rule of every simweb env with an app (see :meth:`SimEnv.reset`)."""
        instance_seed = int(seed) if seed is not None else int(rng.integers(0, 2**31 - 1))
        if "task" in options:
            return options["task"], instance_seed
        if default_task is not None:
            return default_task, instance_seed
        return self.draw(rng, instance_seed, fixed=seed is not None)

    def draw(self, rng: Any, seed: int, *, fixed: bool = True) -> tuple[str, int]:
        """(template id, instance seed) drawn from ``rng``; the seed stays ``seed`` if
        ``fixed``, else a difficulty filter draws a new one with each new template."""
        for i in range(self.MAX_DRAWS if self.difficulties else 1):
            if i and not fixed:
                seed = int(rng.integers(0, 2**31 - 1))
            tid = self.ids[int(rng.integers(0, len(self.ids)))]
            if not self.difficulties or self.app.tasks[tid].instantiate(self.app, seed).difficulty in self.difficulties:
                return tid, seed
        raise TaskError(f"no {'/'.join(self.difficulties)} instance of {', '.join(self.ids[:5])}"
                        f"{'...' if len(self.ids) > 5 else ''} in {self.MAX_DRAWS} draws")


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
        return plan_budget(self.app, self.task, self.state)


_START_CACHE_SIZE = 4096


def episode_start(app: App, task_id: str | None, seed: int, params: dict | None = None,
                  variant: int = 0) -> EpisodeStart:
    """The start of an episode: task instance, start state (signed in, set up, at the
    start URL), its page, step budget and verdict, on site ``variant``. Memoised per app."""
    cache: OrderedDict = app.__dict__.setdefault("_episode_starts", OrderedDict())
    key: tuple = (task_id, seed, canonical(params) if params is not None else None)
    if variant:
        key += (variant,)
    hit = cache.get(key)
    if hit is not None:
        cache.move_to_end(key)
        return hit
    state = app.initial_state(seed, variant)
    task = None
    if task_id:
        template = app.tasks[task_id]
        task = template.instantiate(app, seed, params, variant)
        state["meta"]["task"] = {"id": task.id, "params": task.params}
        # signed in as the task's user, unless the site has the task sign in itself
        # (simweb.runtime.variant_login: the instance's goal states the account)
        if template.sign_in and task.params.get("user_id") is not None and not starts_signed_out(task.params):
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


__all__ = ["EPISODE_OVER", "Episode", "EpisodeStart", "InProcessBackend", "SimEnv", "TaskError", "TaskPool", "StateError",
           "RegistryError", "episode_start", "observation_space", "potential"]
