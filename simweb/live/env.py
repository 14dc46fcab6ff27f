"""A gymnasium env that drives a real browser through an Omniboxes server.

It has the surface of simweb's sim envs: BrowserGym action strings in, observations
``{url, goal, axtree, html, screenshot, last_action, last_action_error, open_pages_urls,
open_pages_titles, active_page_index}`` out, so sim and live runs of one agent can be
compared step by step (see :mod:`simweb.live.compare`).  WebGym's coordinate actions are
accepted too (see :mod:`simweb.live.commands`).
"""

from __future__ import annotations

import os
import re
import time
import urllib.parse
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import gymnasium as gym

from .omnibox import Element, Instance, OmniboxClient, OmniboxError
from .tasks import LiveTask, load_tasks
from ..spaces import JsonValue, Unicode
from .commands import DEFAULT_VIEWPORT, ActionError, Command, translate

__all__ = ["LiveEnv", "build_axtree"]


def _quote(text: str) -> str:
    return repr(" ".join(text.split()))


def build_axtree(title: str, elements: Iterable[Element], text: str = "") -> str:
    """A flattened AX-tree text in BrowserGym's line style, for a live page.

    The first line is ``RootWebArea 'title'``; then one tab-indented line per
    interactive element, ``[id] role 'name'`` followed, as BrowserGym (and simweb's sim)
    print them, by `` value='...'`` and (links) ``, url='...'`` when known; then one ``StaticText '...'`` line per non-empty line of
    the page text that is not already an element's name.
    """
    lines = [f"RootWebArea {_quote(title)}"]
    names = set()
    for e in elements:
        line = f"\t[{e.id}] {e.role} {_quote(e.name)}"
        if e.value not in (None, ""):
            line += f" value={_quote(e.value)}"
        href = e.raw.get("href") if isinstance(e.raw, Mapping) else None
        if e.role == "link" and isinstance(href, str) and href:
            line += f", url={_quote(href)}"
        lines.append(line)
        names.add(" ".join(e.name.split()))
    for raw in text.splitlines():
        chunk = " ".join(raw.split())
        if chunk and chunk not in names:
            lines.append(f"\tStaticText {_quote(chunk)}")
    return "\n".join(lines)


def _absolute(url: str, base: str = "") -> str:
    """``url`` resolved against ``base`` when relative; a bare host gets ``https://``."""
    if re.match(r"[A-Za-z][A-Za-z0-9+.-]*://", url) or url.startswith(("about:", "data:")):
        return url
    if base and url.startswith(("/", "?", "#", "./", "../")):
        return urllib.parse.urljoin(base, url)
    return "https://" + url.lstrip("/")


class LiveEnv(gym.Env):
    """Real websites behind simweb's env interface, through an Omniboxes server.

    ``reset(seed, options={"task": LiveTask | task id | WebGym task dict})`` acquires a
    fresh browser instance (releasing the previous one), opens the task's website and
    returns ``(obs, info)``; ``options={"url": ..., "goal": ...}`` runs an ad-hoc task.
    Without a task option, a task of ``tasks`` is drawn with the reset seed.
    ``step(action)`` takes a BrowserGym action string or a WebGym action (string or
    dict) and returns ``(obs, reward, terminated, truncated, info)``.

    Observation: ``url``, ``goal``, ``axtree`` (built from ``get_interactive_rects`` and
    ``get_webpage_text``, see :func:`build_axtree`), ``html`` (always ``""``: the
    protocol has no HTML query), ``screenshot`` (PNG bytes, ``b""`` when disabled or
    unavailable), ``last_action``, ``last_action_error``, ``open_pages_urls``,
    ``open_pages_titles`` and ``active_page_index`` (one tab: the protocol has none),
    and, as in the sim, ``chat_messages`` (the answer as ``{"role": "assistant",
    "message"}``, an infeasibility report with role ``infeasible``),
    ``focused_element_bid`` (always ``""``: the protocol does not report focus) and
    ``step``.

    Reward: there is no LLM judge here, so the reward is always 0.  ``info`` carries what
    an external judge needs: ``task_id``, ``fact_groups`` (WebGym's evaluator reference),
    ``definite_answer``, ``answer`` (the agent's, once given), ``infeasible``,
    ``needs_judge`` (True), plus ``step``, ``budget``, ``command`` (the Omniboxes command
    sent) and ``observe_errors`` (queries that failed while observing).

    Episodes end (terminated) on ``send_msg_to_user``, ``report_infeasible`` or WebGym's
    ``answer``, and are truncated at the task's WebGym step budget for ``split``
    (or ``max_steps``).  Actions the protocol lacks (``go_forward``, ``new_tab``,
    ``tab_focus``...) and failed server calls become ``last_action_error``; only
    :meth:`reset` raises, with :class:`OmniboxError`, when no instance can be had.
    :meth:`close` releases the instance.
    """

    metadata = {"render_modes": []}

    def __init__(
        self,
        client: OmniboxClient | str,
        tasks: Iterable[LiveTask] | str | os.PathLike[str] | None = None,
        *,
        api_key: str | None = None,
        split: str = "test",
        max_steps: int | None = None,
        lifetime_mins: int = 60,
        interaction_mode: str = "coordinates",
        screenshots: bool = True,
        settle_s: float = 0.0,
    ) -> None:
        if isinstance(client, str):
            client = OmniboxClient(client, api_key)
        if split not in ("train", "test"):
            raise ValueError(f"unknown split {split!r}; expected 'train' or 'test'")
        self.client = client
        if isinstance(tasks, (str, os.PathLike)):
            tasks = load_tasks(tasks)
        self.tasks: list[LiveTask] = list(tasks or [])
        self._by_id = {str(t.task_id): t for t in self.tasks}
        self.split = split
        self.max_steps = max_steps
        self.lifetime_mins = lifetime_mins
        self.interaction_mode = interaction_mode
        self.screenshots = screenshots
        self.settle_s = settle_s
        text = Unicode()
        self.action_space = JsonValue(str, Mapping)
        self.observation_space = gym.spaces.Dict({
            "url": text, "goal": text, "axtree": text, "html": text, "screenshot": JsonValue(bytes),
            "last_action": text, "last_action_error": text, "open_pages_urls": JsonValue(list, tuple),
            "open_pages_titles": JsonValue(list, tuple), "active_page_index": JsonValue(int),
            "chat_messages": JsonValue(list), "focused_element_bid": text, "step": JsonValue(int),
        })
        self.instance: Instance | None = None
        self.task: LiveTask | None = None
        self.viewport: tuple[int, int] = DEFAULT_VIEWPORT
        self.elements: list[Element] = []
        self._url = ""
        self._title = ""
        self._steps = 0
        self._done = False
        self._terminated = False
        self._truncated = False
        self._answer: str | None = None
        self._infeasible: str | None = None
        self._last_click: tuple[int, int] | None = None
        self._last_obs: dict[str, Any] | None = None

    # ------------------------------------------------------------------ gymnasium API

    def reset(self, *, seed: int | None = None, options: Mapping[str, Any] | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
        """Start an episode on a fresh browser instance; see the class docstring."""
        super().reset(seed=seed)
        task = self._resolve_task(options or {})
        self._release()
        try:
            self.instance = self.client.acquire(self.lifetime_mins)
        except OmniboxError as exc:
            raise OmniboxError(f"could not acquire a browser instance: {exc}", exc.status) from None
        self.task = task
        self._steps = 0
        self._done = self._terminated = self._truncated = False
        self._answer = self._infeasible = None
        self._last_click = None
        self.elements = []
        self._url = self._title = ""
        errors: list[str] = []
        try:
            self.viewport = self.client.viewport(self.instance)
        except OmniboxError as exc:
            self.viewport = DEFAULT_VIEWPORT
            errors.append(str(exc))
        start = _absolute(task.website)
        command = Command("visit_page", {"url": start})
        error = self._execute(command)
        obs = self._observe("", error, errors)
        return obs, self._info(command, errors)

    def step(self, action: str | Mapping[str, Any]) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        """Perform one action; see the class docstring."""
        if self.instance is None or self.task is None:
            raise RuntimeError("LiveEnv.step() called before reset()")
        label = action if isinstance(action, str) else repr(action)
        if self._done:
            obs = dict(self._last_obs or {}, last_action=label,
                       last_action_error="the episode is over; call reset()")
            return obs, 0.0, self._terminated, self._truncated, self._info(None, [])
        self._steps += 1
        command: Command | None = None
        error = ""
        try:
            command = translate(action, viewport=self.viewport, last_click=self._last_click, elements=self.elements)
        except ActionError as exc:
            error = str(exc)
        if command is not None:
            if command.name == "visit_page":
                command = Command("visit_page", {"url": _absolute(command.args["url"], self._url)})
            error = self._execute(command)
            if command.click_point is not None and not error:
                self._last_click = command.click_point
            if command.terminal:
                self._terminated = True
                self._answer = command.answer
                self._infeasible = command.infeasible
        budget = self._budget()
        self._truncated = not self._terminated and self._steps >= budget
        self._done = self._terminated or self._truncated
        errors: list[str] = []
        obs = self._observe(label, error, errors)
        return obs, 0.0, self._terminated, self._truncated, self._info(command, errors)

    def close(self) -> None:
        """Release the browser instance (a failed release only warns)."""
        self._release()
        super().close()

    # ------------------------------------------------------------------ internals

    def _resolve_task(self, options: Mapping[str, Any]) -> LiveTask:
        task = options.get("task")
        if isinstance(task, LiveTask):
            return task
        if isinstance(task, Mapping):
            return LiveTask.from_dict(task)
        if task is not None:
            try:
                return self._by_id[str(task)]
            except KeyError:
                raise ValueError(f"unknown task {task!r}; this env has {len(self.tasks)} tasks") from None
        if options.get("url"):
            return LiveTask(task_id=str(options.get("task_id", "adhoc")), task_name=str(options.get("goal", "")),
                            website=str(options["url"]))
        if not self.tasks:
            raise ValueError("reset() needs options={'task': ...} or {'url': ...}: this env has no tasks")
        return self.tasks[int(self.np_random.integers(len(self.tasks)))]

    def _budget(self) -> int:
        assert self.task is not None
        return self.max_steps if self.max_steps is not None else self.task.step_budget(self.split)

    def _execute(self, command: Command) -> str:
        """Run a command; returns the error message ("" on success)."""
        if command.name is None:
            return ""
        assert self.instance is not None
        try:
            self.client.execute(self.instance, command.name, command.args)
        except OmniboxError as exc:
            return str(exc)
        if command.name == "visit_page":
            self._url = command.args["url"]  # until the page reports its own URL
        if self.settle_s > 0:
            time.sleep(self.settle_s)
        return ""

    def _observe(self, last_action: str, error: str, errors: list[str]) -> dict[str, Any]:
        assert self.instance is not None and self.task is not None
        inst = self.instance
        try:
            page = self.client.page_metadata(inst)
            self._url = page.url or self._url
            self._title = page.title
        except OmniboxError as exc:
            errors.append(str(exc))
        try:
            self.elements = self.client.interactive_rects(inst)
        except OmniboxError as exc:
            self.elements = []
            errors.append(str(exc))
        try:
            text = self.client.webpage_text(inst)
        except OmniboxError as exc:
            text = ""
            errors.append(str(exc))
        shot = b""
        if self.screenshots:
            try:
                shot = self.client.screenshot(inst, self.interaction_mode)
            except OmniboxError as exc:
                errors.append(str(exc))
        obs = {
            "url": self._url,
            "goal": self.task.goal,
            "axtree": build_axtree(self._title, self.elements, text),
            "html": "",
            "screenshot": shot,
            "last_action": last_action,
            "last_action_error": error,
            "open_pages_urls": [self._url],
            "open_pages_titles": [self._title],
            "active_page_index": 0,
            "chat_messages": self._chat(),
            "focused_element_bid": "",
            "step": self._steps,
        }
        self._last_obs = obs
        return obs

    def _chat(self) -> list[dict[str, str]]:
        if self._answer is not None:
            return [{"role": "assistant", "message": self._answer}]
        if self._infeasible is not None:
            return [{"role": "infeasible", "message": self._infeasible}]
        return []

    def _info(self, command: Command | None, errors: Sequence[str]) -> dict[str, Any]:
        assert self.task is not None
        return {
            "task_id": self.task.task_id,
            "fact_groups": [g.to_dict() for g in self.task.evaluator_reference],
            "definite_answer": self.task.definite_answer,
            "answer": self._answer,
            "infeasible": self._infeasible,
            "needs_judge": True,
            "step": self._steps,
            "budget": self._budget(),
            "command": command.as_dict() if command is not None else None,
            "observe_errors": list(errors),
            "instance": None if self.instance is None else self.instance.params(),
        }

    def _release(self) -> None:
        if self.instance is None:
            return
        instance, self.instance = self.instance, None
        try:
            self.client.release(instance)
        except OmniboxError as exc:
            warnings.warn(f"could not release browser instance {instance.instance_id}: {exc}", RuntimeWarning, stacklevel=3)
