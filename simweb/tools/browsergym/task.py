"""simweb's task templates as BrowserGym tasks (browsergym-core's ``AbstractBrowserTask``).

One :class:`SimwebTask` subclass per simweb task id (:func:`task_class`), registered as
``browsergym/simweb.<app>.<template>`` (sub-tasks ``...<template>.<n>``). An episode:

- ``setup``: the app's server for this process (:func:`simweb.browsergym.servers.server_for`)
  and the task instance's start URL ``/_simweb/start?task=&seed=`` opened in BrowserGym's
  page, which puts the page's session (its own browser context, hence its own cookie) at
  the start of the instance exactly as ``env.reset`` does. The goal is simweb's goal.
- ``validate``: after every BrowserGym step, the session's state read with the control
  token, the agent's messages of BrowserGym's chat put in its chat, and the step scored by
  :meth:`simweb.episode.Episode.step`, the one rule every simweb env uses: the verdict,
  the reward (sparse by default, ``reward="progress"``: the change of clean progress),
  when the episode ends, the step budget. The reward is BrowserGym's reward, the episode's
  end its ``done``, and ``info`` (BrowserGym's ``info["task_info"]``) holds the verdict with
  its checks (``collateral: runtime.<path>`` for each field changed outside the task),
  the page, the task, ``terminated``, ``truncated`` and ``step``.
- ``cheat``: the task's oracle plan run on the page with Playwright (call it right after
  reset; the next step's ``validate`` pays it).
- ``teardown``: the session closed on the server (``POST /_simweb/close``).

BrowserGym launches Chromium itself through its process-wide Playwright. Where Playwright
has no browser of its own (it could not download one, as here) or ``$SIMWEB_CHROMIUM`` is
set, the tasks make that Playwright launch Debian's Chromium (``/usr/bin/chromium``) with
simweb's flags; elsewhere BrowserGym runs as it always does.
"""
from __future__ import annotations

import os
from typing import Any, ClassVar

from browsergym.core.task import AbstractBrowserTask

from ...core.state import deep_copy
from ...episodes.episode import Episode, TaskError, find_task, plan_budget
from ...runtime.registry import app_of_task, step_cap
from ...runtime.variants import shown_message
from ...serving.browser import CHROMIUM_ARGS, DEFAULT_TIMEOUT_MS, BrowserError, chromium_executable
from ...serving.omnibox.start import start_url
from ...serving.server import COOKIE
from .actions import perform
from .servers import BID_ATTRIBUTE, Server, ServerError, server_for

#: BrowserGym task names are ``simweb.<app>.<template>``; gymnasium ids add ``browsergym/``.
PREFIX = "simweb."


def browsergym_name(task_id: str) -> str:
    """simweb's task id as BrowserGym's task name: ``shopping/buy_product.1`` ->
    ``simweb.shopping.buy_product.1``."""
    app, _, rest = str(task_id).partition("/")
    return f"{PREFIX}{app}.{rest}"


def simweb_id(name: str) -> str:
    """BrowserGym's task name (or gymnasium id) as simweb's task id (:func:`browsergym_name`
    reversed); TaskError for a name that is not one of simweb's."""
    text = str(name).removeprefix("browsergym/")
    if not text.startswith(PREFIX) or "." not in text[len(PREFIX):]:
        raise TaskError(f"'{name}' is not a simweb task name (simweb.<app>.<template>, e.g. "
                        f"simweb.shopping.buy_product)")
    app, _, rest = text[len(PREFIX):].partition(".")
    return f"{app}/{rest}"


def _use_debian_chromium() -> None:
    """Make BrowserGym's process-wide Playwright launch Debian's Chromium when it has no
    browser of its own (see the module docstring). BrowserGym launches two browsers per
    reset (the page's, with its own launch options, and the chat's, with none), so the
    launch itself is wrapped rather than BrowserGym's options; it is done once."""
    import browsergym.core

    chromium = browsergym.core._get_global_playwright().chromium
    if getattr(chromium.launch, "_simweb", False):
        return
    if os.path.exists(chromium.executable_path) and not os.environ.get("SIMWEB_CHROMIUM"):
        return
    path = chromium_executable()
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        raise BrowserError(f"Playwright has no browser of its own and Chromium is not at {path}: install it "
                           f"(apt-get install -y chromium) or point SIMWEB_CHROMIUM at a Chromium binary")
    original = chromium.launch

    def launch(**kwargs: Any) -> Any:
        kwargs.setdefault("executable_path", path)
        given = list(kwargs.get("args") or [])
        kwargs["args"] = given + [a for a in CHROMIUM_ARGS if a not in given]
        return original(**kwargs)

    launch._simweb = True  # type: ignore[attr-defined]
    chromium.launch = launch


def agent_messages(chat_messages: list[dict[str, Any]]) -> list[dict[str, str]]:
    """The agent's messages in BrowserGym's chat, as simweb's chat holds them. BrowserGym
    opens its chat with its own greeting (an assistant message) and then the goal (the
    user's first message); what the agent says comes after: ``send_msg_to_user`` as an
    assistant message, ``report_infeasible`` as an infeasible one."""
    out: list[dict[str, str]] = []
    seen_goal = False
    for m in chat_messages:
        role = m.get("role")
        if role == "user":
            seen_goal = True
        elif seen_goal and role in ("assistant", "infeasible"):
            out.append({"role": str(role), "message": str(m.get("message", ""))})
    return out


class _Served:
    """The :class:`simweb.episode.Backend` of a BrowserGym step: BrowserGym has already
    performed the action; this reads the state it left on the server (the session of the
    page's cookie) with the agent's chat messages, and what the page shows."""

    viewport = None

    def __init__(self, task: SimwebTask, page: Any, chat_messages: list[dict[str, Any]]):
        self.task = task
        self.page = page
        self.chat = agent_messages(chat_messages)
        self._state: dict | None = None

    def perform(self, action: Any) -> tuple[str, str | None]:
        return "", None   # BrowserGym ran it (its obs['last_action'] says what it was)

    def execute(self, action: str) -> str | None:
        return None

    def state(self) -> dict:
        if self._state is None:
            server = self.task.server
            assert server is not None   # validate() runs after setup()
            state = server.state(self.task.session(self.page))
            state["browser"]["chat"] = self.chat
            self._state = state
        return self._state

    def verdict(self, state: dict) -> dict | None:
        """The episode's verdict on ``state``, unless the page's session no longer holds
        the task it started: a start URL (``/_simweb/start``, which needs no token) can put
        it at another task's start, which no step of this task can make, so nothing is
        paid until the agent is back on its own task."""
        episode = self.task.episode
        assert episode is not None and episode.start is not None
        held, started = state["meta"].get("task"), episode.start["meta"].get("task")
        if held != started:
            shown = held.get("id") if isinstance(held, dict) else held
            return {"success": False, "progress": 0.0, "clean": False,
                    "checks": [{"name": "the session holds the task it started", "passed": False, "weight": 0.0,
                                "detail": f"the session was restarted on {shown!r}"}]}
        return episode.verdict(state)

    def observe(self, state: dict) -> dict[str, Any]:
        return {}   # BrowserGym makes its own observation

    def page_info(self, state: dict) -> dict[str, Any]:
        tab = state["browser"]["tabs"][state["browser"]["active"]]
        info: dict[str, Any] = {"page": tab["page"], "status": tab["status"]}
        flash = tab.get("flash")
        if flash and flash.get("level") == "error":
            server = self.task.server
            info["site_error"] = (flash["message"] if server is None
                                  else shown_message(server.app, state, flash["message"]))
        return info


class SimwebTask(AbstractBrowserTask):
    """A simweb task instance in BrowserGym (see the module docstring). Subclasses made by
    :func:`task_class` set ``simweb_task``.

    ``seed``: the instance (BrowserGym's ``reset(seed=...)``; None: drawn from the task's
    own ``random``). ``reward``: ``"sparse"`` (1 for a clean success at the end) or
    ``"progress"`` (the change of clean progress each step). ``max_steps`` replaces simweb's
    step budget for the instance."""

    simweb_task: ClassVar[str] = ""

    @classmethod
    def get_task_id(cls) -> str:
        if not cls.simweb_task:
            raise NotImplementedError("SimwebTask is the base of the per-task classes (task_class(id))")
        return browsergym_name(cls.simweb_task)

    def __init__(self, seed: int | None, reward: str = "sparse", max_steps: int | None = None) -> None:
        super().__init__(seed)
        if reward not in ("sparse", "progress"):
            raise ValueError(f"reward must be 'sparse' or 'progress', not {reward!r}")
        if seed is not None and not (isinstance(seed, int) and -2**63 <= int(seed) < 2**63):
            raise ValueError(f"the seed must be a 64-bit integer, not {seed!r}")
        # simweb's pages have no script or animation: BrowserGym's default of 1 s per
        # Playwright call buys nothing; actions time out as simweb's own browser env's do.
        self.slow_mo = 0
        self.timeout = DEFAULT_TIMEOUT_MS
        self.seed = int(seed) if seed is not None else int(self.random.randint(0, 2**31 - 1))
        self.reward = reward
        self.max_steps = max_steps
        self.app_name = app_of_task(self.simweb_task)
        self.server: Server | None = None
        self.episode: Episode | None = None
        self._sid: str | None = None
        _use_debian_chromium()

    # ------------------------------------------------------------------ session
    def session(self, page: Any) -> str:
        """The session id of the page's cookie (the one the verdict reads)."""
        assert self.server is not None
        for cookie in page.context.cookies(self.server.base_url):
            if cookie["name"] == COOKIE:
                self._sid = cookie["value"]
                return self._sid
        raise ServerError(f"the browser has no simweb session cookie for {self.server.base_url}: "
                          f"its session ended or its cookies were cleared")

    # ------------------------------------------------------------------ BrowserGym's task API
    def setup(self, page: Any) -> tuple[str, dict]:
        server = self.server = server_for(self.app_name)
        app = server.app
        template = find_task(app, self.simweb_task)
        url = server.base_url + start_url(self.simweb_task, self.seed)
        resp = page.goto(url, timeout=max(self.timeout, 10_000))
        if resp is None or resp.status >= 400:
            text = " ".join((page.inner_text("body") if resp is not None else "").split())[:300]
            raise ServerError(f"GET {url}: HTTP {resp.status if resp is not None else '?'}: {text}")
        if page.locator("[bid]").count():
            raise ServerError(f"the server at {server.base_url} writes simweb's ids as 'bid', which BrowserGym "
                              f"refuses: serve it with --bid-attribute {BID_ATTRIBUTE} (simweb serve's default)")
        state = server.state(self.session(page))
        meta = state["meta"].get("task")
        if not isinstance(meta, dict) or meta.get("id") != self.simweb_task:
            raise ServerError(f"{url} did not start {self.simweb_task} (the session holds {meta!r})")
        instance = template.instantiate(app, self.seed, meta["params"])
        episode = self.episode = Episode(app, reward=self.reward, max_steps=self.max_steps, cap=step_cap(app.name))
        episode.begin(instance, deep_copy(state), None, budget=lambda: plan_budget(app, instance, state))
        verdict = episode.verdict(state)
        episode.rebase(verdict)
        return instance.goal, {"task": instance.to_json(), "seed": self.seed, "verdict": verdict,
                               "max_steps": episode.max_steps, "base_url": server.base_url}

    def validate(self, page: Any, chat_messages: list[dict[str, Any]]) -> tuple[float, bool, str, dict]:
        if self.episode is None:
            raise RuntimeError("validate() before setup()")
        _, reward, terminated, truncated, info = self.episode.step(_Served(self, page, chat_messages), "")
        info.update(terminated=terminated, truncated=truncated, step=self.episode.step_count,
                    max_steps=self.episode.max_steps)
        return reward, bool(terminated or truncated), "", info

    def cheat(self, page: Any, chat_messages: list[dict[str, Any]]) -> None:
        """Solve the task: its oracle plan run on the page (from the episode's start)."""
        if self.episode is None:
            raise RuntimeError("cheat() before setup()")
        for action in self.episode.oracle_plan():
            perform(page, action, chat_messages)

    def teardown(self) -> None:
        if self.server is not None and self._sid is not None:
            try:
                self.server.close_session(self._sid)
            except ServerError:
                pass   # a server already gone has nothing left to close
        self._sid = None


_CLASSES: dict[str, type[SimwebTask]] = {}


def task_class(task_id: str) -> type[SimwebTask]:
    """The :class:`SimwebTask` subclass of simweb task ``task_id`` (one per id, so
    ``get_task_id()`` names it)."""
    cls = _CLASSES.get(task_id)
    if cls is None:
        name = "SimwebTask_" + "".join(c if c.isalnum() else "_" for c in task_id)
        cls = _CLASSES[task_id] = type(name, (SimwebTask,), {"simweb_task": task_id, "__module__": __name__})
    return cls


__all__ = ["PREFIX", "SimwebTask", "agent_messages", "browsergym_name", "simweb_id", "task_class"]
