"""The gymnasium env: one app, one world, in-process.

    env = simweb.make("shopping", seed=0)
    obs, info = env.reset(seed=3, options={"task": "shopping/buy_product"})
    obs, reward, terminated, truncated, info = env.step("click('add-to-cart')")
    s = env.snapshot(); child = env.fork(); env.restore(s)

The whole episode state is one JSON document (``snapshot()``); the world data is shared
by reference, so a fork copies only the small runtime, browser and meta layers.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Callable

import gymnasium as gym
import orjson

from .app import App, load_app
from .axtree import Page
from .browsing import SimBrowser, parse_cached
from .registry import RegistryError, app_of_task, definition
from .spaces import JsonValue, Unicode
from .state import StateError, canonical, deep_copy, state_hash
from .tasks import STEP_BUDGETS, TaskInstance
from .verify import answer_of
from .webgym_actions import is_webgym_action, to_browsergym


def potential(verdict: dict | None) -> float:
    """What the progress reward pays for: partial credit, and nothing while any
    collateral damage stands."""
    if not verdict or not verdict["clean"]:
        return 0.0
    return float(verdict["progress"])


#: The message of a step taken after the episode ended (the action is not run).
EPISODE_OVER = "the episode is over: call reset() (the action was not run)"


def observation_space(**extra: gym.spaces.Space) -> gym.spaces.Dict:
    """The observation space of simweb envs (``extra`` adds backend-specific keys)."""
    return gym.spaces.Dict({
        **{k: Unicode() for k in ("url", "goal", "axtree", "html", "last_action", "last_action_error",
                                  "focused_element_bid")},
        "open_pages_urls": JsonValue(list),
        "active_page_index": gym.spaces.Discrete(1 << 20),
        "chat_messages": JsonValue(list),
        "step": gym.spaces.Discrete(1 << 30),
        **extra,
    })


class TaskError(ValueError):
    """An unknown task id or bad task parameters."""


class TaskEpisode:
    """What every simweb env offers about its current task (in-process or in a browser)."""

    app: App
    task: TaskInstance | None
    _start: dict | None

    reward_mode: str
    #: a state-changing task's episode ends at its first success (False: only an answer,
    #: a refusal or the step budget ends it, so what an agent does after success counts)
    end_on_success: bool = True
    _potential: float
    _ended: tuple[bool, bool] | None    # (terminated, truncated) once the episode is over

    def _score(self, verdict: dict | None, state: dict, out_of_steps: Callable[[], bool]) -> tuple[float, bool, bool]:
        """(reward, terminated, truncated) of a step. An episode ends when the agent
        answers, or when a state-changing (or mixed) task succeeds; ``out_of_steps`` is asked only
        if it has not ended.

        Sparse reward: 1 for a clean success at the end, else 0. Progress reward: the
        change of the potential ``progress if clean else 0`` (see :func:`potential`), so
        an episode's rewards add up to its final clean progress: a fact done, undone and
        done again pays once, and collateral damage takes back all progress until it is
        repaired."""
        success = bool(verdict and verdict["success"])
        terminated = answer_of(state) is not None or (
            self.end_on_success and success and self.task is not None and self.task.kind in ("state", "mixed"))
        truncated = not terminated and out_of_steps()
        if self.reward_mode == "progress":
            now = potential(verdict)
            reward = now - self._potential
            self._potential = now
        else:
            reward = 1.0 if (terminated and success and verdict["clean"]) else 0.0
        if terminated or truncated:
            self._ended = (bool(terminated), bool(truncated))
        return float(reward), bool(terminated), bool(truncated)

    def _begin(self, verdict: dict | None) -> None:
        """Measure rewards from here on against ``verdict`` (after reset or restore)."""
        self._potential = potential(verdict)
        self._ended = None

    def oracle_plan(self) -> list[str]:
        """Actions that solve the current task from its reset state."""
        if self.task is None:
            raise TaskError("no task: reset with options={'task': ...} first")
        return list(self.app.tasks[self.task.id].oracle(self.app, self.task.params))

    def start_state(self) -> dict | None:
        """The state right after reset (what the verifier compares against)."""
        return deep_copy(self._start) if self._start is not None else None


class SimEnv(TaskEpisode, gym.Env):
    """A simweb app as a gymnasium env with snapshot / restore / fork."""

    metadata = {"render_modes": ["html", "ansi"]}

    def __init__(self, app: str, seed: int = 0, *, size: int | None = None, task: str | None = None,
                 max_steps: int | None = None, reward: str = "sparse", progress: bool = False,
                 end_on_success: bool = True, _app: App | None = None):
        if reward not in ("sparse", "progress"):
            raise ValueError(f"reward must be 'sparse' or 'progress', not {reward!r}")
        self.app: App = _app or load_app(definition(app), seed, size, progress=progress)
        self.world_seed = seed
        self.default_task = task
        self.max_steps_override = max_steps
        self.reward_mode = reward
        self.end_on_success = end_on_success
        self.action_space = Unicode()
        self.observation_space = observation_space()
        self.state: dict = self.app.initial_state()
        self.browser = SimBrowser(self.app, self.state)
        self.task: TaskInstance | None = None
        self._start: dict | None = None
        self._last_action = ""
        self._last_error = ""
        self._potential = 0.0
        self._ended = None
        self._episode: EpisodeStart | None = None

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
        self.task = start.task
        self._start = start.state
        self.state = deep_copy(start.state)
        self.browser = SimBrowser(self.app, self.state)
        self.browser._html = start.html
        self.browser._page = start.page
        self._last_action = ""
        self._last_error = ""
        self._episode = start
        verdict = deep_copy(start.verdict) if start.verdict is not None else None
        self._begin(verdict)
        return self._obs(), self._info(verdict)

    @property
    def max_steps(self) -> int:
        """The episode's step budget: WebGym's test budget for its difficulty, and at
        least twice the oracle's plan (or the ``max_steps`` given to the constructor)."""
        if self.max_steps_override:
            return self.max_steps_override
        return self._episode.budget if self._episode is not None else 50

    def _budget_floor(self) -> int:
        if self.max_steps_override:
            return self.max_steps_override
        if self.task is None:
            return 50
        return STEP_BUDGETS[self.task.difficulty][1]

    def app_task(self, task_id: str) -> Any:
        tasks = self.app.tasks
        if task_id not in tasks:
            import difflib

            if "/" in str(task_id) and app_of_task(task_id) != self.app.name:
                raise TaskError(f"task '{task_id}' belongs to app '{app_of_task(task_id)}', not '{self.app.name}'")
            close = difflib.get_close_matches(str(task_id), list(tasks), n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            raise TaskError(f"unknown task '{task_id}' (see `simweb tasks {self.app.name}`){hint}")
        return tasks[task_id]

    def step(self, action: str) -> tuple[dict, float, bool, bool, dict]:
        """Run one BrowserGym action string. Bad actions never raise: they come back as
        ``obs['last_action_error']``. WebGym's action forms (tool calls, internal dicts) are
        accepted too; coordinate actions need a layout and report an error in-process.

        After the episode ended (terminated or truncated) a step runs nothing: it returns
        reward 0 with the same flags and ``info['episode_over']``; call reset()."""
        if self._ended is not None:
            self._last_action, self._last_error = str(action), EPISODE_OVER
            info = self._info(self._verdict())
            info["episode_over"] = True
            return self._obs(), 0.0, self._ended[0], self._ended[1], info
        error = None
        if is_webgym_action(action):   # WebGym's tool calls / {"key", "arguments"}: coordinates need a layout
            lead, action, error = to_browsergym(action)
            error = error or next(filter(None, map(self.browser.execute, lead)), None)
        elif not isinstance(action, str):
            action = str(action)
        self._last_action = action
        self._last_error = error or self.browser.execute(action) or ""
        self.state["meta"]["step"] += 1
        verdict = self._verdict()
        step = self.state["meta"]["step"]
        # The exact budget needs the oracle's plan: only look it up once it can matter.
        reward, terminated, truncated = self._score(
            verdict, self.state, lambda: step >= self._budget_floor() and step >= self.max_steps)
        return self._obs(), reward, terminated, truncated, self._info(verdict)

    def _verdict(self) -> dict | None:
        if self.task is None or self._start is None:
            return None
        # A verdict is a function of the runtime, the answer and (for refusals) the history:
        # most steps only browse, so the last verdict is reused when none of them changed.
        answer = answer_of(self.state)
        key = (orjson.dumps(self.state["runtime"]), answer,
               orjson.dumps([t["history"] for t in self.state["browser"]["tabs"]]) if answer is not None else b"")
        last = self.__dict__.get("_last_verdict")
        if last is not None and last[0] == key and last[1] is self._start:
            return deep_copy(last[2])
        template = self.app.tasks[self.task.id]
        verdict = template.verify(self.app, self.task.params, self._start, self.state, answer)
        self._last_verdict = (key, self._start, verdict)
        return deep_copy(verdict)

    # ------------------------------------------------------------------ observations
    def _obs(self) -> dict[str, Any]:
        b = self.state["browser"]
        tab = self.browser.tab
        return {
            "url": self.browser.display_url(tab["url"]),
            "goal": self.task.goal if self.task else "",
            "html": self.browser.html(),
            "axtree": self.browser.axtree(),
            "last_action": self._last_action,
            "last_action_error": self._last_error,
            "open_pages_urls": [self.browser.display_url(t["url"]) for t in b["tabs"]],
            "active_page_index": b["active"],
            "focused_element_bid": tab["focus"] or "",
            "chat_messages": [dict(m) for m in b["chat"]],
            "step": self.state["meta"]["step"],
        }

    def _info(self, verdict: dict | None) -> dict[str, Any]:
        info: dict[str, Any] = {"verdict": verdict, "page": self.browser.tab["page"],
                                "status": self.browser.tab["status"]}
        if self.task is not None:
            info["task"] = self.task.to_json()
        if self.browser.site_error:
            info["site_error"] = self.browser.site_error
        return info

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
        self._last_action = self._last_error = ""
        self._begin(self._verdict())

    def _attach_task(self, task_id: str, params: dict) -> None:
        """Rebuild the task and its start state from (id, params): both are deterministic."""
        self.app_task(task_id)
        start = episode_start(self.app, task_id, self.state["meta"]["rng"]["seed"], params)
        self.task = start.task
        self._start = start.state
        self._episode = start

    def fork(self) -> "SimEnv":
        """An independent env at the same state, sharing the world data."""
        child = SimEnv.__new__(SimEnv)
        child.__dict__.update({k: v for k, v in self.__dict__.items() if k not in ("state", "browser")})
        child.state = orjson.loads(orjson.dumps(self.state))
        child.browser = SimBrowser(self.app, child.state)
        child.browser._html = self.browser._html
        child.browser._page = self.browser._page
        child._np_random = None
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
        """WebGym's test step budget for the difficulty, at least twice the oracle's plan."""
        if self.task is None:
            return 50
        plan = self.app.tasks[self.task.id].oracle(self.app, self.task.params)
        return max(STEP_BUDGETS[self.task.difficulty][1], 2 * len(plan))


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
    verdict = None
    if task is not None:
        verdict = app.tasks[task_id].verify(app, task.params, state, state, None)
    # Start pages repeat across tasks and seeds (a home page, a signed-in dashboard): the
    # browser's parse cache serves them, and the first step finds the page there too.
    start = EpisodeStart(app, task, state, html, parse_cached(html), verdict)
    cache[key] = start
    while len(cache) > _START_CACHE_SIZE:
        cache.popitem(last=False)
    return start


__all__ = ["EPISODE_OVER", "SimEnv", "TaskEpisode", "TaskError", "StateError", "RegistryError", "episode_start",
           "potential"]
