"""One episode, whatever performs its actions.

Every simweb env (in-process :class:`simweb.env.SimEnv`, Chromium's
:class:`simweb.browser.BrowserEnv`, any website's :class:`simweb.live.web.WebEnv`, and
the Omniboxes protocol clients :class:`simweb.live.env.LiveEnv` and
:class:`simweb.omnibox.env.OmniboxSimEnv`) runs its episodes through an :class:`Episode`:

- task lookup (an unknown id gets the registry's "did you mean");
- the step budget (:func:`simweb.taskmodel.episode_budget`, one rule for every backend);
- the verdict and the reward modes (sparse, or progress as a potential; a restore
  re-bases the potential);
- the episode-over rule: the agent's final action (an answer, "done", a refusal) or the
  step budget ends an episode (``end_on_success`` also ends it at success: an oracle,
  off by default); a step after the end runs nothing and says so;
- observation assembly (the shared keys, :func:`observation_space`) and ``info``.

A backend only performs actions and reads state: the small :class:`Backend` protocol.
Every env's ``step`` is :meth:`Episode.step` on its backend.

    episode = Episode(app, reward="progress")
    episode.begin(task, start_state, verdict, budget=start.budget)
    obs, reward, terminated, truncated, info = episode.step(backend, "click('nav-cart')")
"""
from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import gymnasium as gym
import orjson

from ..core.state import deep_copy
from ..judging.taskmodel import MAX_EPISODE_STEPS, episode_budget
from ..judging.tasks import SIGN_IN_AS, starts_signed_out
from ..judging.verify import answer_of, final_message
from ..runtime import variant_confirm, variant_login, variant_steps
from ..runtime.registry import app_of_task
from ..runtime.variants import collapsed_filters, collapsed_menu, confirm_step, form_steps
from ..web.spaces import JsonValue, Unicode
from ..web.webgym_actions import is_webgym_action, to_browsergym

if TYPE_CHECKING:
    from ..judging.tasks import TaskInstance, TaskTemplate
    from ..runtime.app import App

#: The message of a step taken after the episode ended (the action is not run).
EPISODE_OVER = "the episode is over: call reset() (the action was not run)"

#: The actions that end an episode: the agent's final message (an answer, or "done" after
#: changing the site) or its refusal. BrowserGym's convention: the task is over when the
#: agent tells the user so, not when the environment sees it succeed (docs/rewards.md).
FINAL_ACTIONS = ("send_msg_to_user", "report_infeasible")
#: What a plan that changes the site ends with: the agent says it is done.
DONE_ACTION = "send_msg_to_user('Done.')"

#: The observation keys every backend fills in (a backend may add its own, e.g. ``screenshot``).
OBSERVATION_KEYS = ("url", "goal", "axtree", "html", "last_action", "last_action_error", "open_pages_urls",
                    "active_page_index", "focused_element_bid", "chat_messages", "step")


class TaskError(ValueError):
    """An unknown task id or bad task parameters."""


def _reads_view(template: Any, app: Any, params: dict, start: dict) -> bool:
    """Whether the instance's effect has a check on the page the browser ends on."""
    try:
        effect = template.effect_for(app, params, start)
    except NotImplementedError:
        return False
    return any(c.browser for c in effect.checks)


def potential(verdict: dict | None) -> float:
    """What the progress reward pays for: partial credit, and nothing while any
    collateral damage stands."""
    if not verdict or not verdict["clean"]:
        return 0.0
    return float(verdict["progress"])


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


def find_task(app: App, task_id: str) -> TaskTemplate:
    """The app's template ``task_id``, or a :class:`TaskError` that names the app a foreign
    id belongs to, or the closest known id."""
    tasks = app.tasks
    if task_id in tasks:
        return tasks[task_id]
    if "/" in str(task_id) and app_of_task(task_id) != app.name:
        raise TaskError(f"task '{task_id}' belongs to app '{app_of_task(task_id)}', not '{app.name}'")
    close = difflib.get_close_matches(str(task_id), list(tasks), n=1)
    hint = f"; did you mean '{close[0]}'?" if close else ""
    raise TaskError(f"unknown task '{task_id}' (see `simweb tasks {app.name}`){hint}")


def final_plan(plan: list[str]) -> list[str]:
    """``plan`` ending with the agent's final action: a template's oracle that only changes
    the site (its last action a click) gets :data:`DONE_ACTION`; an answer or a refusal
    already ends it."""
    if plan and str(plan[-1]).lstrip().startswith(FINAL_ACTIONS):
        return list(plan)
    return [*plan, DONE_ACTION]


def flow_rewrites(app: App, start: dict) -> bool:
    """Whether the start's site variant has a flow that a plan written for today's site
    meets (a confirmation step, multi-step forms, navigation behind a menu to open, a
    filter form behind a disclosure): then :func:`confirmed_plan` runs it."""
    return bool(confirm_step(app, start) or form_steps(app, start) or collapsed_menu(app, start)
                or collapsed_filters(app, start))


#: The actions whose first argument is the bid of the element they act on.
_ELEMENT_ACTIONS = frozenset({"click", "dblclick", "hover", "focus", "fill", "clear", "select_option", "check",
                              "uncheck", "press"})


def _target(action: str) -> str | None:
    """The bid ``action`` acts on (None: an action on no element, or not an action)."""
    from ..web.actions import ActionError, parse_action

    try:
        parsed = parse_action(action)
    except ActionError:
        return None
    return str(parsed.args[0]) if parsed.name in _ELEMENT_ACTIONS and parsed.args else None


#: The most actions :func:`signed_in_plan` puts before a plan (a sign-in link, the form).
SIGN_IN_STEPS = 4


def signed_in_plan(app: App, start: dict, plan: list[str]) -> list[str]:
    """``plan`` (written for a start signed in as the task's user) preceded by signing in, for
    a start where the task signs in itself (simweb.runtime.variant_login: its parameters
    carry the account its goal states): on the sign-in page (a login wall's, or a start page
    that needs an account), the form; on any other page, first the page's sign-in link that
    returns to it (the first, in the page's order). Unchanged for every other start."""
    task = start["meta"].get("task") or {}
    params = task.get("params") or {}
    if not starts_signed_out(params) or start["browser"]["user"] is not None:
        return list(plan)
    from urllib.parse import parse_qs, urlsplit

    from ..web.browsing import SimBrowser

    browser = SimBrowser(app, deep_copy(start))
    prefix: list[str] = []
    if browser.tab["page"].partition(":")[0] != "login":
        for el in browser.page().elements.values():
            if el.tag != "a" or not el.bid or not el.href or (el.hidden and browser.summaries_to_show(el.bid) is None):
                continue   # (a link in a closed menu counts: confirmed_plan opens the menu first)
            parts = urlsplit(el.href)
            if parts.path == variant_login.LOGIN_ROUTE and parse_qs(parts.query).get("next"):
                prefix.append(f"click({el.bid!r})")
                break
    return [*prefix, *variant_login.sign_in_actions(params[SIGN_IN_AS]), *plan]


def confirmed_plan(app: App, start: dict, plan: list[str]) -> list[str]:
    """``plan`` as it runs from ``start`` on the start's site variant, found by running it on
    a copy of ``start`` in the in-process browser, after signing in where the task starts
    signed out (:func:`signed_in_plan`):

    * a confirmation step (simweb.runtime.variant_confirm): each action whose form the site
      holds for confirmation is followed by the Confirm click (on the confirmation page, or
      in the inline panel of the form's own page);
    * a closed ``<details>`` (the menu factor's collapsed navigation, the filters factor's
      collapsed filter form, or any other): an
      action on an element that only closed details hide is preceded by the clicks on
      their summaries that show it (outermost first), as a user opens a menu;
    * multi-step forms (simweb.runtime.variant_steps): an action that fails on a form's
      first page (a field or button of its second page) waits; when a click of that page
      fails and the first page's Continue leads to the second page where it works, the plan
      gets Continue, then the actions that waited, then the click.

    Unchanged on every other site (no run). A template's plan is written for today's site;
    this is the one place every consumer of an oracle plan (the oracle agent, check_app,
    the red team, sub-tasks, budgets) gets it for such a variant."""
    plan = signed_in_plan(app, start, plan)
    if not flow_rewrites(app, start):
        return plan
    from ..web.browsing import SimBrowser

    inline = confirm_step(app, start) == variant_confirm.INLINE
    steps = bool(form_steps(app, start))
    state = deep_copy(start)
    browser = SimBrowser(app, state)
    out: list[str] = []
    waiting: list[str] = []

    def show(action: str) -> None:
        """Open the closed details that hide ``action``'s element on the page shown."""
        bid = _target(action)
        for summary in (browser.summaries_to_show(bid) or []) if bid is not None else []:
            run(f"click({summary!r})")

    def run(action: str) -> None:
        before = state["browser"].get("confirm")
        out.append(action)
        browser.execute(action)
        after = state["browser"].get("confirm")
        if after is not None and after is not before and variant_confirm.awaiting(state, inline):
            out.append(variant_confirm.CONFIRM_ACTION)
            browser.execute(variant_confirm.CONFIRM_ACTION)

    def restore(saved: dict) -> None:
        nonlocal browser
        state.clear()
        state.update(saved)
        browser = SimBrowser(app, state)

    def continues(saved: dict, action: str) -> bool:
        """Whether ``action`` works on the second page that Continue leads to from ``saved``."""
        if not action.lstrip().startswith("click("):
            return False
        trial = deep_copy(saved)
        tb = SimBrowser(app, trial)
        if tb.execute(variant_steps.CONTINUE_ACTION) or not variant_steps.awaiting(trial):
            return False
        for a in waiting:
            tb.execute(a)
        return not tb.execute(action)

    for action in plan:
        show(action)
        if not (steps and variant_steps.CONTINUE_BID in browser.page().elements):
            run(action)
            continue
        saved = deep_copy(state)
        failed = browser.execute(action)
        restore(saved)
        if not failed:
            run(action)
        elif continues(saved, action):
            for a in [variant_steps.CONTINUE_ACTION, *waiting, action]:
                run(a)
            waiting = []
        else:   # a field or button of the second page: it waits for Continue
            waiting.append(action)
    for a in waiting:   # (never on a second page: they fail as they did)
        run(a)
    return out


def plan_budget(app: App, task: TaskInstance | None, start: dict | None = None) -> int:
    """The budget rule for ``task`` (None: free browsing) before any cap: WebGym's test
    budget for its difficulty, at least twice its oracle's plan (final action included;
    from ``start``, the plan as :func:`confirmed_plan` runs it on the start's variant)."""
    if task is None:
        return episode_budget(None, cap=None)
    plan = list(app.tasks[task.id].oracle(app, task.params))
    n = len(final_plan(plan)) + (SIGN_IN_STEPS if starts_signed_out(task.params) else 0)
    # at most one Confirm click and one menu opened an action (and a sign-in link's menu): run
    # the plan only when those clicks can move the budget
    if start is not None and episode_budget(task.difficulty, n + 2 * len(plan) + 1, cap=None) != episode_budget(
            task.difficulty, n, cap=None) and flow_rewrites(app, start):
        n = len(final_plan(confirmed_plan(app, start, plan)))
    return episode_budget(task.difficulty, n, cap=None)


class Backend(Protocol):
    """What performs an episode's actions and reads its state."""

    @property
    def viewport(self) -> tuple[int, int] | None:
        """The viewport WebGym's coordinate actions are scaled to (None: no layout)."""

    def execute(self, action: str) -> str | None:
        """Perform one BrowserGym action string; the error message, or None."""

    def state(self) -> dict:
        """The state after the last action (what the verifier reads; at least
        ``browser.chat``, where the agent's answer is)."""

    def observe(self, state: dict) -> dict[str, Any]:
        """The backend's observation keys: url, html, axtree, open_pages_urls,
        active_page_index, focused_element_bid, and any of its own (screenshot...)."""

    def page_info(self, state: dict) -> dict[str, Any]:
        """What ``info`` says about the page shown (page, status, site_error)."""

    # Two optional methods, for the clients of a remote protocol (an Omniboxes server),
    # which translate actions into its commands and are judged by the server:
    #
    #   perform(action) -> (label, error): take ``action`` in any form the backend accepts
    #       (it replaces intake + execute); ``label`` is the observation's ``last_action``.
    #   verdict(state) -> dict | None: the verdict, made by the backend instead of the app.


class Episode:
    """The bookkeeping of one env's current episode (see the module docstring).

    ``app`` None is an episode without a simweb app (a live site): no task lookup, no
    verdict, reward 0; it ends when the agent answers or runs out of steps.
    ``max_steps`` replaces the budget rule; ``cap`` bounds the rule (the app's
    ``gymnasium.spec(...).max_episode_steps``)."""

    def __init__(self, app: App | None, *, reward: str = "sparse", end_on_success: bool = False,
                 max_steps: int | None = None, cap: int | None = MAX_EPISODE_STEPS):
        if reward not in ("sparse", "progress"):
            raise ValueError(f"reward must be 'sparse' or 'progress', not {reward!r}")
        self.app = app
        self.reward_mode = reward
        #: True: a state-changing task's episode also ends at its first success. Off by
        #: default: the stop would tell a policy which of its tries succeeded (try each
        #: candidate, undo it while the episode goes on), so only the agent's final action
        #: (an answer, "done", a refusal) or the step budget ends an episode (docs/rewards.md)
        self.end_on_success = end_on_success
        self.max_steps_override = max_steps
        self.cap = cap
        self.task: TaskInstance | None = None
        self.goal = ""
        self.kind: str | None = None
        self.start: dict | None = None
        self.step_count = 0
        self.last_action = ""
        self.last_error = ""
        self._budget: int | Callable[[], int] = episode_budget(None, cap=None)
        self._potential = 0.0
        #: (terminated, truncated) once the episode is over
        self.ended: tuple[bool, bool] | None = None
        self._last_verdict: tuple[Any, Any, dict] | None = None
        #: (start, whether the task's effect reads the page the browser shows)
        self._views: tuple[Any, bool] | None = None
        #: (start, template plan, the plan through the start's confirmation pages)
        self._confirmed: tuple[Any, list[str], list[str]] | None = None

    def copy(self) -> Episode:
        """An independent copy (for a fork: the task and start are shared, never mutated)."""
        new = object.__new__(type(self))   # a shallow copy without copy.copy's reduce protocol (it is on the fork path)
        new.__dict__.update(self.__dict__)
        return new

    # ------------------------------------------------------------------ task and budget
    def lookup(self, task_id: str) -> TaskTemplate:
        """The template of ``task_id`` (see :func:`find_task`)."""
        if self.app is None:
            raise TaskError("this env has no simweb app, hence no task templates")
        return find_task(self.app, task_id)

    def begin(self, task: TaskInstance | None, start: dict | None, verdict: dict | None, *,
              budget: int | Callable[[], int] | None = None, goal: str | None = None, kind: str | None = None,
              step: int = 0) -> None:
        """Start an episode on ``task`` from ``start`` (the verifier's reference state).
        ``budget`` is the rule's budget before the cap (or a function computing it when
        first needed); None applies :func:`episode_budget` without an oracle plan."""
        self.task = task
        self.start = start
        self.goal = goal if goal is not None else (task.goal if task is not None else "")
        self.kind = kind if kind is not None else (task.kind if task is not None else None)
        self._budget = budget if budget is not None else episode_budget(
            task.difficulty if task is not None else None, cap=None)
        self.step_count = step
        self.last_action = self.last_error = ""
        self.rebase(verdict)   # the verdict cache is kept: it is keyed by the start it was made from
        if verdict is not None and start is not None:
            self.remember(start, verdict)

    def rebase(self, verdict: dict | None) -> None:
        """Measure rewards from here on against ``verdict`` (after reset or restore)."""
        self._potential = potential(verdict)
        self.ended = None

    @property
    def max_steps(self) -> int:
        """The episode's step budget: ``max_steps`` if given, else WebGym's test budget
        for the task's difficulty and at least twice the oracle's plan, within the cap."""
        if self.max_steps_override:
            return int(self.max_steps_override)
        if callable(self._budget):
            self._budget = int(self._budget())
        return min(int(self._budget), self.cap) if self.cap else int(self._budget)

    def _floor(self) -> int:
        """A lower bound of :attr:`max_steps` that needs no oracle plan."""
        if self.max_steps_override or not callable(self._budget):
            return self.max_steps
        floor = episode_budget(self.task.difficulty if self.task is not None else None, cap=None)
        return min(floor, self.cap) if self.cap else floor

    def out_of_steps(self) -> bool:
        """Whether the budget is spent (the oracle's plan is looked up only once it can matter)."""
        return self.step_count >= self._floor() and self.step_count >= self.max_steps

    def oracle_plan(self, final: bool = True) -> list[str]:
        """Actions that solve the current task from its reset state, ending with the agent's
        final action (:func:`final_plan`: the episode ends when the agent says it is done).
        ``final=False``: the template's plan as it is (the work; an information task's
        answer is part of it), to study what happens after the work."""
        if self.task is None or self.app is None:
            raise TaskError("no task: reset with options={'task': ...} first")
        plan = list(self.app.tasks[self.task.id].oracle(self.app, self.task.params))
        if self.start is not None and ("variant" in self.start["meta"] or starts_signed_out(self.task.params)):
            # the plan through a variant's sign-in and confirmation pages (run once per start)
            hit = self._confirmed
            if hit is None or hit[0] is not self.start or hit[1] != plan:
                hit = self._confirmed = (self.start, plan, confirmed_plan(self.app, self.start, plan))
            plan = list(hit[2])
        return final_plan(plan) if final else plan

    def start_state(self) -> dict | None:
        """The state right after reset (what the verifier compares against)."""
        return deep_copy(self.start) if self.start is not None else None

    # ------------------------------------------------------------------ verdict and reward
    def verdict(self, state: dict) -> dict | None:
        """The task's verdict on ``state`` (None without a task). A verdict is a function of
        the runtime, the answer and (for refusals) the history: most steps only browse, so
        the last verdict is reused when none of them changed."""
        if self.task is None or self.start is None or self.app is None:
            return None
        key = self._verdict_key(state)
        last = self._last_verdict
        if last is not None and last[0] == key and last[1] is self.start:
            return deep_copy(last[2])
        verdict = self.app.tasks[self.task.id].verify(self.app, self.task.params, self.start, state, answer_of(state))
        self._last_verdict = (key, self.start, verdict)
        return deep_copy(verdict)

    def _verdict_key(self, state: dict) -> tuple[bytes, ...]:
        """What a verdict on ``state`` depends on beside the start (see :meth:`verdict`)."""
        assert self.task is not None and self.app is not None and self.start is not None
        said = final_message(state)
        views = self._views
        if views is None or views[0] is not self.start:
            template = self.app.tasks[self.task.id]
            views = self._views = (self.start, _reads_view(template, self.app, self.task.params, self.start))
        browser = state["browser"]
        # the final message, answer or refusal (its role and text), and with one the history
        return (orjson.dumps(state["runtime"]), orjson.dumps(said),
                orjson.dumps([t["history"] for t in browser["tabs"]]) if said is not None else b"",
                # a task that asks for a page shown (effects.shows) is judged on the active tab too
                orjson.dumps([browser["active"], {k: browser["tabs"][browser["active"]][k] for k in ("url", "status", "page")}])
                if views[1] else b"")

    def remember(self, state: dict, verdict: dict) -> None:
        """Seed the verdict cache with ``verdict``, already known to be the verdict on
        ``state``. :meth:`begin` does it with the start's verdict (reset's, computed once per
        start), so the first observation after a reset and every fork of that start (a GRPO
        group's children) reuse it instead of verifying again."""
        if self.task is not None and self.start is not None and self.app is not None:
            self._last_verdict = (self._verdict_key(state), self.start, deep_copy(verdict))

    def score(self, verdict: dict | None, answered: bool) -> tuple[float, bool, bool]:
        """(reward, terminated, truncated) of the step just counted. An episode ends when
        the agent's final action (an answer, "done", a refusal: ``answered``) is taken, or
        with ``end_on_success`` when a state-changing (or mixed) task succeeds; the budget
        is asked only if it has not ended (running out of steps is a truncation).

        Sparse reward: 1 for a clean success when the agent ends the episode, else 0 (a
        success the agent never reports, cut off by the budget, is not paid, and no step
        before the end says anything about success). Progress reward: the
        change of the potential ``progress if clean else 0`` (see :func:`potential`), so
        an episode's rewards add up to its final clean progress: a fact done, undone and
        done again pays once, and collateral damage takes back all progress until it is
        repaired."""
        success = bool(verdict and verdict["success"])
        terminated = answered or (self.end_on_success and success and self.kind in ("state", "mixed"))
        truncated = not terminated and self.out_of_steps()
        if self.reward_mode == "progress":
            now = potential(verdict)
            reward = now - self._potential
            self._potential = now
        else:
            reward = 1.0 if (terminated and success and verdict is not None and verdict["clean"]) else 0.0
        if terminated or truncated:
            self.ended = (bool(terminated), bool(truncated))
        return float(reward), bool(terminated), bool(truncated)

    # ------------------------------------------------------------------ a step
    def intake(self, action: Any, viewport: tuple[int, int] | None,
               run: Callable[[str], str | None]) -> tuple[str, str | None]:
        """``action`` as a BrowserGym string, and the error of taking it in: WebGym's tool
        calls and internal dicts are translated (coordinates need a ``viewport``; the lead
        actions a translation needs are performed by ``run``)."""
        if is_webgym_action(action):
            lead, text, error = to_browsergym(action, viewport) if viewport else to_browsergym(action)
            return text, error or next(filter(None, map(run, lead)), None)
        return (action if isinstance(action, str) else str(action)), None

    def step(self, backend: Backend, action: Any) -> tuple[dict, float, bool, bool, dict]:
        """Perform ``action`` through ``backend`` and score it: the gymnasium step.

        Bad actions never raise: they come back as ``obs['last_action_error']``. After the
        episode ended a step runs nothing: it returns reward 0 with the same flags and
        ``info['episode_over']``."""
        if self.ended is not None:
            self.last_action, self.last_error = str(action), EPISODE_OVER
            state = backend.state()
            obs = self.observation(backend, state)
            info = self.info(backend, state, self.judge(backend, state))
            info["episode_over"] = True
            return obs, 0.0, self.ended[0], self.ended[1], info
        perform = getattr(backend, "perform", None)
        if perform is not None:
            self.last_action, error = perform(action)
            self.last_error = error or ""
        else:
            text, error = self.intake(action, backend.viewport, backend.execute)
            self.last_action = text
            self.last_error = error or backend.execute(text) or ""
        self.step_count += 1
        state = backend.state()
        verdict = self.judge(backend, state)
        reward, terminated, truncated = self.score(verdict, final_message(state) is not None)
        return self.observation(backend, state), reward, terminated, truncated, self.info(backend, state, verdict)

    def judge(self, backend: Backend, state: dict) -> dict | None:
        """The verdict on ``state``: the backend's own if it has one (a server judges), else
        the app's (:meth:`verdict`)."""
        own = getattr(backend, "verdict", None)
        return own(state) if own is not None else self.verdict(state)

    # ------------------------------------------------------------------ observation and info
    def observation(self, backend: Backend, state: dict) -> dict[str, Any]:
        """The observation: the backend's keys with the episode's goal, last action, its
        error, the chat and the step counter."""
        obs = backend.observe(state)
        obs.update({
            "goal": self.goal,
            "last_action": self.last_action,
            "last_action_error": self.last_error,
            "chat_messages": [dict(m) for m in state["browser"]["chat"]],
            "step": self.step_count,
        })
        return obs

    def info(self, backend: Backend, state: dict, verdict: dict | None) -> dict[str, Any]:
        """``info``: the verdict, what the backend says about the page, and the task."""
        info: dict[str, Any] = {"verdict": verdict}
        page = backend.page_info(state)
        extra = {k: v for k, v in page.items() if k == "site_error"}
        info.update({k: v for k, v in page.items() if k != "site_error"})
        if self.task is not None:
            info["task"] = self.task.to_json()
        info.update(extra)
        return info


class EpisodeEnv(gym.Env):
    """The gymnasium surface every simweb env shares: an :class:`Episode` (``episode``)
    run through a :class:`Backend` (``backend``)."""

    episode: Episode
    backend: Backend

    @property
    def task(self) -> TaskInstance | None:
        """The current task instance (None: free browsing)."""
        return self.episode.task

    @property
    def reward_mode(self) -> str:
        """``sparse`` or ``progress``."""
        return self.episode.reward_mode

    @property
    def end_on_success(self) -> bool:
        """Whether a state-changing task's episode ends at its first success (off by
        default: the stop is an oracle, see docs/rewards.md)."""
        return self.episode.end_on_success

    @end_on_success.setter
    def end_on_success(self, value: bool) -> None:
        self.episode.end_on_success = bool(value)

    @property
    def max_steps_override(self) -> int | None:
        """The ``max_steps`` the env was given (None: the budget rule)."""
        return self.episode.max_steps_override

    @max_steps_override.setter
    def max_steps_override(self, value: int | None) -> None:
        self.episode.max_steps_override = value

    @property
    def max_steps(self) -> int:
        """The episode's step budget: WebGym's test budget for its difficulty, and at
        least twice the oracle's plan, within the app's step budget (or the ``max_steps``
        given to the constructor)."""
        return self.episode.max_steps

    def step(self, action: Any) -> tuple[dict, float, bool, bool, dict]:
        """Run one BrowserGym action string. Bad actions never raise: they come back as
        ``obs['last_action_error']``. WebGym's action forms (tool calls, internal dicts) are
        accepted too (coordinates need a layout: in-process they report an error).

        After the episode ended (terminated or truncated) a step runs nothing: it returns
        reward 0 with the same flags and ``info['episode_over']``; call reset()."""
        return self.episode.step(self.backend, action)

    def verdict(self) -> dict | None:
        """The task's verdict on the current state (None without a task)."""
        return self.episode.verdict(self.backend.state())

    _verdict = verdict   # the name tests and older callers use

    def observe(self) -> tuple[dict, dict]:
        """The current observation and info, without taking a step."""
        state = self.backend.state()
        return (self.episode.observation(self.backend, state),
                self.episode.info(self.backend, state, self.episode.verdict(state)))

    def oracle_plan(self, final: bool = True) -> list[str]:
        """Actions that solve the current task from its reset state, ending with the agent's
        final action ("done" after a task that changes the site); ``final=False``: the
        template's plan as it is (see :meth:`Episode.oracle_plan`)."""
        return self.episode.oracle_plan(final)

    def start_state(self) -> dict | None:
        """The state right after reset (what the verifier compares against)."""
        return self.episode.start_state()


__all__ = ["Backend", "DONE_ACTION", "EPISODE_OVER", "Episode", "FINAL_ACTIONS", "final_plan", "EpisodeEnv", "plan_budget", "OBSERVATION_KEYS", "TaskError", "find_task", "observation_space",
           "potential"]
