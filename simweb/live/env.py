"""A gymnasium env that drives a real browser through an Omniboxes server.

It has the surface of simweb's sim envs: BrowserGym action strings in (and WebGym's own
action forms, see :mod:`simweb.webgym_actions`), observations ``{url, goal, axtree,
html, screenshot, last_action, last_action_error, open_pages_urls, open_pages_titles,
active_page_index, chat_messages, focused_element_bid, step}`` out, so sim and live
runs of one agent can be compared step by step (see :mod:`simweb.live.compare`).

Element ids.  Each observation takes a set-of-marks screenshot, then reads the
server's numbering (``get_screenshot_info``) and the page's regions
(``get_interactive_rects``).  A visible element's bid is the number drawn on the
screenshot; an off-screen one's is its page id (``p<id>`` if that number is also drawn).
An action on a bid is sent with an id the server resolves to that element through its
``id_mapping`` (the display id, or the page id when the mapping leaves it alone), and
otherwise, for a visible element, at the centre of its box. A click or hover whose id
command would miss the element (the server clicks the centre of its bounding box, which
is off a link wrapped over two lines) goes to a point inside one of its client rects
instead, where the server tells them (a `simweb omnibox`, or regions listing several
rects); WebGym's own server reports the bounding box only.
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

from ..episodes.episode import Episode, observation_space
from ..web.spaces import JsonValue
from .commands import DEFAULT_VIEWPORT, ActionError, Command, translate
from .omnibox import (
    Element,
    Instance,
    OmniboxClient,
    OmniboxError,
    Region,
    ScreenshotInfo,
    centre_in_viewport,
    point_on_rects,
    role_of,
)
from .tasks import LiveTask, load_tasks

__all__ = ["LiveEnv", "OmniboxesBackend", "build_axtree", "label_elements"]

#: Roles whose element takes typed keys (a press goes to them after a click focuses them).
_TEXT_ROLES = frozenset({"textbox", "searchbox", "combobox", "spinbutton"})


def _quote(text: str) -> str:
    return repr(" ".join(text.split()))


def build_axtree(title: str, elements: Iterable[Element], text: str = "") -> str:
    """A flattened AX-tree text in BrowserGym's line style, for a live page.

    The first line is ``RootWebArea 'title'``; then one tab-indented ``[bid] role
    'name'`` line per interactive element (the protocol reports neither values nor
    link targets); then one ``StaticText '...'`` line per line of the page text that is
    not already an element's name.
    """
    lines = [f"RootWebArea {_quote(title)}"]
    names = set()
    for e in elements:
        lines.append(f"\t[{e.id}] {e.role} {_quote(e.name)}")
        names.add(" ".join(e.name.split()))
    for raw in text.splitlines():
        chunk = " ".join(raw.split())
        if chunk and chunk not in names:
            lines.append(f"\tStaticText {_quote(chunk)}")
    return "\n".join(lines)


def label_elements(regions: Mapping[str, Region], info: ScreenshotInfo | None,
                   viewport: Sequence[int] = DEFAULT_VIEWPORT) -> list[Element]:
    """The page's elements with their bids and the id (or point) that reaches each.

    ``regions`` is the current page (``get_interactive_rects``); ``info`` the server's
    numbering.  When the numbering describes this page (the same page ids), visible
    elements are named by their drawn number; otherwise by page id.  ``send_id`` is an
    id the server resolves to the element under ``info``'s mapping, or None.
    """
    info = info or ScreenshotInfo.empty()
    fresh = bool(info.regions) and set(info.regions) == set(regions)
    numbering = {pid: d for d, pid in info.numbering(viewport).items()} if fresh else {}
    drawn = set(numbering.values())
    out = []
    for pid, region in sorted(regions.items(), key=lambda kv: (len(kv[0]), kv[0])):
        rect = region.rect
        label = numbering.get(pid) or (f"p{pid}" if pid in drawn else pid)
        out.append(Element(
            id=label, role=role_of(region.role, region.tag_name), name=region.aria_name, tag=region.tag_name,
            rect=rect, visible=centre_in_viewport(rect, viewport), page_id=pid,
            send_id=info.send_id(pid, viewport),
            raw={"tag_name": region.tag_name, "role": region.role, "aria_name": region.aria_name},
            rects=region.rects,
        ))
    return out


def _absolute(url: str, base: str = "") -> str:
    """``url`` resolved against ``base`` when relative; a bare host gets ``https://``."""
    if re.match(r"[A-Za-z][A-Za-z0-9+.-]*://", url) or url.startswith(("about:", "data:")):
        return url
    if base and url.startswith(("/", "?", "#", "./", "../")):
        return urllib.parse.urljoin(base, url)
    return "https://" + url.lstrip("/")


class _StepError(Exception):
    """An action that cannot be carried out (its message becomes ``last_action_error``)."""


class OmniboxesBackend:
    """LiveEnv's backend (:class:`simweb.episode.Backend`): actions become Omniboxes
    commands (WebGym's action forms included, by :func:`simweb.live.commands.translate`),
    and the state is the agent's chat. A page is observed once per action: a step after
    the episode ended (which performs nothing) shows the last observation again."""

    viewport = None   # actions are taken as given (perform), never translated by the episode

    def __init__(self, env: LiveEnv):
        self.env = env
        self._page: dict[str, Any] | None = None   # the last observation's page keys
        self._errors: list[str] = []               # queries that failed while taking them

    def forget(self, errors: list[str] | None = None) -> None:
        """The page changed: the next observation queries the server (``errors``: failures
        met already, e.g. while opening the page, reported with the observation's)."""
        self._page = None
        self._errors = list(errors or [])

    def perform(self, action: Any) -> tuple[str, str]:
        self.forget()
        return (action if isinstance(action, str) else repr(action)), self.env._perform(action)

    def execute(self, action: str) -> str | None:
        return self.perform(action)[1] or None

    def state(self) -> dict:
        return {"browser": {"chat": self.env._chat()}}

    def observe(self, state: dict) -> dict[str, Any]:
        if self._page is None:
            self._page = self.env._observe_page(self._errors)
        else:
            self._errors = []   # nothing was queried
        return dict(self._page)

    def page_info(self, state: dict) -> dict[str, Any]:
        return self.env._info(self._errors)


class LiveEnv(gym.Env):
    """Real websites behind simweb's env interface, through an Omniboxes server.

    ``reset(seed, options={"task": LiveTask | task id | WebGym task dict})`` acquires a
    browser instance (releasing the previous one), opens the task's website and returns
    ``(obs, info)``; ``options={"url": ..., "goal": ...}`` runs an ad-hoc task.  Without
    a task option, a task of ``tasks`` is drawn with the reset seed.  ``step(action)``
    takes a BrowserGym action string or a WebGym action and returns ``(obs, reward,
    terminated, truncated, info)``.

    Observation: ``url``, ``goal``, ``axtree`` (see :func:`build_axtree`; bids as in the
    module docstring), ``html`` (always ``""``: the protocol has no HTML query),
    ``screenshot`` (the PNG of ``GET /screenshot`` in ``interaction_mode``; ``b""`` when
    ``screenshots`` is off, the numbering is still taken), ``last_action``,
    ``last_action_error``, ``open_pages_urls``, ``open_pages_titles`` and
    ``active_page_index`` (one tab), ``chat_messages`` (the answer as ``{"role":
    "assistant", "message"}``, an infeasibility report with role ``infeasible``),
    ``focused_element_bid`` (the element this env last clicked or filled on this page)
    and ``step``.

    Reward: there is no judge here, so the reward is always 0 and ``info["verdict"]`` is
    None.  ``info`` carries what an external judge needs: ``task_id``, ``fact_groups``, ``definite_answer``, ``answer``,
    ``infeasible``, ``needs_judge`` (True), plus ``step``, ``budget``, ``commands`` (the
    Omniboxes commands sent for the action), ``command`` (the last of them) and
    ``observe_errors`` (queries that failed while observing).

    Episodes end (terminated) on ``send_msg_to_user``, ``report_infeasible`` or WebGym's
    ``answer``, and are truncated at the task's WebGym step budget for ``split`` (or
    ``max_steps``).  Actions the protocol lacks and failed commands become
    ``last_action_error``; only :meth:`reset` raises (:class:`OmniboxError`) when no
    instance can be had.  :meth:`close` releases the instance.
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
        interaction_mode: str = "set_of_marks",
        screenshots: bool = True,
        text_lines: int = 100,
        settle_s: float = 0.0,
    ) -> None:
        if isinstance(client, str):
            client = OmniboxClient(client, api_key)
        if split not in ("train", "test"):
            raise ValueError(f"unknown split {split!r}; expected 'train' or 'test'")
        if interaction_mode not in ("set_of_marks", "coordinates"):
            raise ValueError(f"unknown interaction_mode {interaction_mode!r}; expected 'set_of_marks' or 'coordinates'")
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
        self.text_lines = text_lines
        self.settle_s = settle_s
        self.action_space = JsonValue(str, Mapping)
        self.observation_space = observation_space(screenshot=JsonValue(bytes), open_pages_urls=JsonValue(list, tuple),
                                                   open_pages_titles=JsonValue(list, tuple))
        self.instance: Instance | None = None
        self.task: LiveTask | None = None
        self.viewport: tuple[int, int] = DEFAULT_VIEWPORT
        self.elements: list[Element] = []
        self.info_numbering: ScreenshotInfo | None = None
        self._url = ""
        self._title = ""
        self._focused: str | None = None   # page id of the element last clicked or filled
        self._sent: list[dict[str, Any]] = []
        # The shared episode (step counter, budget, episode-over rule, observation and
        # info assembly); there is no simweb app here, so no verdict: the reward is 0 and
        # an answer ends the episode.
        self.episode = Episode(None, cap=None)
        self.backend = OmniboxesBackend(self)
        self._answer: str | None = None
        self._infeasible: str | None = None

    # ------------------------------------------------------------------ gymnasium API

    def reset(self, *, seed: int | None = None, options: Mapping[str, Any] | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
        """Start an episode on a browser instance; see the class docstring."""
        super().reset(seed=seed)
        task = self._resolve_task(options or {})
        self._release()
        try:
            self.instance = self.client.acquire(self.lifetime_mins)
        except OmniboxError as exc:
            raise OmniboxError(f"could not acquire a browser instance: {exc}", exc.status) from None
        self.task = task
        self.episode.begin(None, None, None, budget=self._budget(), goal=task.goal)
        self._answer = self._infeasible = None
        self.elements = []
        self._url = self._title = ""
        self._focused = None
        self._sent = []
        errors: list[str] = []
        try:
            self.viewport = self.client.viewport(self.instance)
        except OmniboxError as exc:
            self.viewport = DEFAULT_VIEWPORT
            errors.append(str(exc))
        self.episode.last_error = self._run(Command("visit_page", {"url": _absolute(task.website)}))
        self.backend.forget(errors)
        state = self.backend.state()
        return self.episode.observation(self.backend, state), self.episode.info(self.backend, state, None)

    def step(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        """Perform one action (:meth:`simweb.episode.Episode.step` through
        :class:`OmniboxesBackend`); see the class docstring."""
        if self.instance is None or self.task is None:
            raise RuntimeError("LiveEnv.step() called before reset()")
        return self.episode.step(self.backend, action)

    def close(self) -> None:
        """Release the browser instance (a failed release only warns)."""
        self._release()
        super().close()

    def element(self, bid: str) -> Element:
        """The element of the last observation with this bid; raises KeyError."""
        for e in self.elements:
            if e.id == str(bid):
                return e
        raise KeyError(bid)

    # ------------------------------------------------------------------ actions

    def _perform(self, action: Any) -> str:
        """Translate ``action`` and carry it out; the error message or ""."""
        assert self.task is not None
        self._sent = []
        try:
            command = translate(action, viewport=self.viewport, homepage_url=self.task.website)
        except ActionError as exc:
            return str(exc)
        error = self._run(command)
        if command.terminal:
            self._answer = command.answer
            self._infeasible = command.infeasible
        return error

    def _run(self, command: Command) -> str:
        """Carry out a command (resolving an element command); the error message or ""."""
        try:
            if command.element is not None:
                self._element_command(command)
            elif command.name is not None:
                args = command.args
                if command.name == "visit_page":
                    args = {"url": _absolute(str(args["url"]), self._url)}
                self._send(command.name, args)
        except _StepError as exc:
            return str(exc)
        except OmniboxError as exc:
            return str(exc)
        if self.settle_s > 0:
            time.sleep(self.settle_s)
        return ""

    def _send(self, name: str, args: Mapping[str, Any]) -> Any:
        assert self.instance is not None
        self._sent.append({name: dict(args)})
        return self.client.execute(self.instance, name, args)

    def _target(self, bid: str) -> Element:
        try:
            return self.element(bid)
        except KeyError:
            raise _StepError(f"Could not find element with bid '{bid}' on the page") from None

    def _act(self, verb: str, e: Element, args: Mapping[str, Any] | None = None) -> None:
        """``verb`` (click, fill, hover) on ``e``: a click or hover at a point inside one of
        its client rects when the centre of its box misses it, else by an id that resolves
        to it, else at its centre."""
        args = dict(args or {})
        point = self._point_on(e) if verb in ("click", "hover") else None
        if point is not None:
            self._send(f"{verb}_coords", {"x": round(point[0], 1), "y": round(point[1], 1), **args})
        elif e.send_id is not None:
            self._send(f"{verb}_id", {"id": e.send_id, **args})
        elif e.visible and e.rect is not None:
            x, y = e.rect.center()
            self._send(f"{verb}_coords", {"x": round(x, 1), "y": round(y, 1), **args})
        else:
            raise _StepError(f"element [{e.id}] is off-screen and the server's set-of-marks numbering gives its id "
                             f"to another element; scroll it into view first")
        if verb in ("click", "fill"):
            self._focused = e.page_id

    def _point_on(self, e: Element) -> tuple[float, float] | None:
        """A point inside one of ``e``'s client rects when a click at the centre of its
        bounding box (where the server's ``*_id`` commands click) would miss it, as it
        misses a link wrapped over two lines; None when the centre reaches it or nothing
        better is known. A `simweb omnibox` server says where (``/simweb/locate`` by page
        id, scrolling an off-screen element into view first, as ``click_id`` would); other
        servers only when their regions list the element's client rects (WebGym's page
        script lists the bounding box alone)."""
        assert self.instance is not None
        if self.client.has_simweb_extensions():
            found = self.client.locate(self.instance, e.page_id, scroll=not e.visible)
            if not found or not found.get("point"):
                return None
            if found.get("on_center", True) and e.send_id is not None:
                return None   # the id command reaches it
            x, y = found["point"]
            return float(x), float(y)
        return point_on_rects(e.rects, self.viewport)

    def _element_command(self, command: Command) -> None:
        e = self._target(str(command.element))
        verb = command.verb
        if verb == "click" and e.role == "option":
            verb = "select"   # an option is chosen, not clicked (it has no box)
        if verb in ("click", "hover", "fill"):
            self._act(verb, e, command.args)
        elif verb == "press":
            keys = list(command.args["keys"])
            if e.role in _TEXT_ROLES:
                if self._focused != e.page_id:
                    self._act("click", e)
            elif keys[-1:] in (["Enter"], [" "], ["Space"]):
                self._act("click", e)   # Enter on a link or button activates it
                return
            self._send("keypress", {"keys": keys})
        elif verb == "select":
            self._select(e, command.args.get("option"))
        else:  # pragma: no cover - translate() yields only the verbs above
            raise _StepError(f"unknown element action {verb!r}")

    def _select(self, e: Element, label: str | None) -> None:
        """Choose an option: ``e`` is the option, or the select and ``label`` the option's label."""
        option: Element | None
        if e.role == "option":
            option = e
        else:
            before = {x.page_id for x in self.elements if x.role == "option"}
            self._act("click", e)               # a focused select lists its options
            self._refresh([])
            options = [x for x in self.elements if x.role == "option"
                       and (x.page_id not in before or _inside(x, e))]
            wanted = " ".join(str(label).split())
            option = next((x for x in options if x.name == label), None) or next(
                (x for x in options if " ".join(x.name.split()).casefold() == wanted.casefold()), None)
            if option is None:
                shown = ", ".join(repr(x.name) for x in options[:10]) or "none listed"
                raise _StepError(f"Option {label!r} not found in select [{e.id}] (options: {shown})")
        if option.send_id is None:
            raise _StepError(f"option [{option.id}] cannot be addressed: the server's numbering gives its id "
                             f"to another element")
        self._send("select_option", {"id": option.send_id})

    # ------------------------------------------------------------------ observing

    def _refresh(self, errors: list[str]) -> bytes:
        """Screenshot (recording the numbering), numbering and regions; returns the PNG."""
        assert self.instance is not None
        inst = self.instance
        shot = b""
        try:
            shot = self.client.screenshot(inst, self.interaction_mode)
        except OmniboxError as exc:
            errors.append(str(exc))
        try:
            self.info_numbering = self.client.screenshot_info(inst)
        except OmniboxError as exc:
            self.info_numbering = None
            errors.append(str(exc))
        try:
            regions = self.client.interactive_rects(inst)
        except OmniboxError as exc:
            regions = {}
            errors.append(str(exc))
        self.elements = label_elements(regions, self.info_numbering, self.viewport)
        return shot

    def _observe_page(self, errors: list[str]) -> dict[str, Any]:
        """The page's observation keys (the episode fills in goal, last action, chat and
        step); failed queries are added to ``errors``."""
        assert self.instance is not None and self.task is not None
        inst = self.instance
        try:
            page = self.client.page_metadata(inst)
            if page.url and page.url != self._url:
                self._focused = None   # a new page: nothing of it has focus yet
            self._url = page.url or self._url
            self._title = page.title
        except OmniboxError as exc:
            errors.append(str(exc))
        shot = self._refresh(errors)
        try:
            text = self.client.webpage_text(inst, self.text_lines)
        except OmniboxError as exc:
            text = ""
            errors.append(str(exc))
        focused = next((e.id for e in self.elements if e.page_id == self._focused), "")
        return {
            "url": self._url,
            "goal": "",
            "axtree": build_axtree(self._title, self.elements, text),
            "html": "",
            "screenshot": shot if self.screenshots else b"",
            "last_action": "",
            "last_action_error": "",
            "open_pages_urls": [self._url],
            "open_pages_titles": [self._title],
            "active_page_index": 0,
            "chat_messages": [],
            "focused_element_bid": focused,
            "step": 0,
        }

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
            return LiveTask(task_id=0, task_name=str(options.get("goal", "")), website=str(options["url"]))
        if not self.tasks:
            raise ValueError("reset() needs options={'task': ...} or {'url': ...}: this env has no tasks")
        return self.tasks[int(self.np_random.integers(len(self.tasks)))]

    def _budget(self) -> int:
        assert self.task is not None
        return self.max_steps if self.max_steps is not None else self.task.step_budget(self.split)

    def _chat(self) -> list[dict[str, str]]:
        if self._answer is not None:
            return [{"role": "assistant", "message": self._answer}]
        if self._infeasible is not None:
            return [{"role": "infeasible", "message": self._infeasible}]
        return []

    def _info(self, errors: Sequence[str]) -> dict[str, Any]:
        assert self.task is not None
        return {
            "task_id": self.task.task_id,
            "fact_groups": [g.to_dict() for g in self.task.evaluator_reference],
            "definite_answer": self.task.definite_answer,
            "answer": self._answer,
            "infeasible": self._infeasible,
            "needs_judge": True,
            "step": self.episode.step_count,
            "budget": self._budget(),
            "commands": list(self._sent),
            "command": self._sent[-1] if self._sent else None,
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


def _inside(option: Element, select: Element) -> bool:
    """Whether an option's box lies inside a select's (a list box's rendered options)."""
    if option.rect is None or select.rect is None or option.rect.area <= 0:
        return False
    cx, cy = option.rect.center()
    r = select.rect
    return r.x <= cx <= r.x + r.width and r.y <= cy <= r.y + r.height
