"""simweb's env interface through a ``simweb omnibox`` server (a client of its protocol).

    env = OmniboxSimEnv("http://127.0.0.1:7000")
    obs, info = env.reset(seed=3, options={"task": "shopping/buy_product"})
    obs, reward, terminated, truncated, info = env.step("click('nav-cart')")
    env.close()                                    # releases the instance

Every step goes through the protocol as a WebGym rollout does: the action becomes one
Omniboxes command on the leased instance (element actions by display id of the last
set-of-marks screenshot, clicks by coordinates), then the observation is a set-of-marks
screenshot (``GET /screenshot``), ``get_screenshot_info`` and ``get_page_metadata``. The
server's simweb extensions fill in what the protocol cannot say: where a simweb bid is on
the page (``/simweb/locate``), the page's AX tree as simweb renders it
(``/simweb/observe``), and the task's verdict (``/simweb/verdict``), so runs through the
server compare step by step with in-process runs (:func:`simweb.live.compare.compare_runs`).

Clicks go to a point on the element (``click_coords``): ``click_id`` clicks the centre
of the element's bounding box, which misses a link wrapped onto two lines. ``fill`` is
``fill_id`` with ``press_enter=False, delete_existing=True``; ``select_option`` focuses
the select (``click_id``), then picks the option by its display id. The answer
(``send_msg_to_user``) stays with the client and goes to the verdict.
"""
from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from ...episodes.episode import Episode, observation_space
from ...judging.taskmodel import episode_budget
from ...runtime.registry import app_of_task, step_cap
from ...web.spaces import JsonValue

DEFAULT_API_KEY = "default_key"


class OmniboxEnvError(RuntimeError):
    """The server refused a call that an episode cannot do without (one line)."""


class _Unsupported(Exception):
    pass


class ProtocolBackend:
    """OmniboxSimEnv's backend (:class:`simweb.episode.Backend`): an action becomes
    protocol commands, the verdict is the server's (``/simweb/verdict``, with the answer the
    client keeps), the state is the agent's chat. The page and the verdict are read once per
    action: a step after the episode ended (which performs nothing) asks the server nothing."""

    viewport = None   # actions are taken as given (perform), never translated by the episode

    def __init__(self, env: OmniboxSimEnv):
        self.env = env
        self._page: dict[str, Any] | None = None
        self._verdict: dict | None = None
        self._judged = False

    def forget(self) -> None:
        """The page changed: the next observation and verdict ask the server."""
        self._page, self._verdict, self._judged = None, None, False

    def perform(self, action: Any) -> tuple[str, str]:
        self.forget()
        return str(action), self.env._take(action)

    def execute(self, action: str) -> str | None:
        return self.perform(action)[1] or None

    def state(self) -> dict:
        answer = self.env.answer
        return {"browser": {"chat": [{"role": "assistant", "message": answer}] if answer is not None else []}}

    def verdict(self, state: dict) -> dict | None:
        if not self._judged:
            body = {"answer": self.env.answer} if self.env.answer is not None else {}
            self._verdict = self.env._ext("POST", "verdict", body=body)["verdict"]
            self._judged = True
        return self._verdict

    def observe(self, state: dict) -> dict[str, Any]:
        if self._page is None:
            self._page = self.env._observe_page()
        return dict(self._page)

    def page_info(self, state: dict) -> dict[str, Any]:
        return {"answer": self.env.answer}


class OmniboxSimEnv:
    """A step env over a ``simweb omnibox`` server; see the module doc.

    The episode's bookkeeping is simweb's :class:`simweb.episode.Episode` (the server's
    verdict in place of a local one): the same step budget as the in-process env (the
    server reports the task's, ``max_steps`` replaces it), the same reward modes and the
    same episode-over rule. ``screenshots=False`` skips the
    screenshot image in observations (the set-of-marks screenshot is still taken, as the
    ids of the next action refer to it). ``capacity_wait_s`` is how long :meth:`reset`
    retries a 503 from ``/get`` (the master's cached capacity lags releases)."""

    def __init__(self, server: str, api_key: str = DEFAULT_API_KEY, *, max_steps: int | None = None,
                 reward: str = "sparse", end_on_success: bool = False, screenshots: bool = True,
                 lifetime_mins: int = 45, capacity_wait_s: float = 60.0, timeout_s: float = 120.0):
        self.server = server.rstrip("/")
        self.api_key = api_key
        self.episode = Episode(None, reward=reward, end_on_success=end_on_success, max_steps=max_steps)
        self.backend = ProtocolBackend(self)
        self.observation_space = observation_space(screenshot=JsonValue(bytes))
        self.screenshots = screenshots
        self.lifetime_mins = lifetime_mins
        self.capacity_wait_s = capacity_wait_s
        self.timeout_s = timeout_s
        self.instance: dict[str, str] | None = None
        self.task: dict[str, Any] | None = None
        self.answer: str | None = None
        self.calls = 0

    @property
    def max_steps(self) -> int:
        """The current episode's step budget."""
        return self.episode.max_steps

    # ------------------------------------------------------------------ HTTP
    def _call(self, method: str, path: str, params: dict | None = None, body: Any = None) -> tuple[int, bytes]:
        url = self.server + path + ("?" + urllib.parse.urlencode(params) if params else "")
        data = None if body is None else json.dumps(body).encode("utf-8")
        req = urllib.request.Request(url, data=data, method=method, headers={"x-api-key": self.api_key})
        if data is not None:
            req.add_header("content-type", "application/json")
        self.calls += 1
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                return resp.status, resp.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()

    def _ok(self, method: str, path: str, params: dict | None = None, body: Any = None) -> Any:
        status, raw = self._call(method, path, params, body)
        if status != 200:
            raise OmniboxEnvError(f"{method} {path}: HTTP {status}: {raw[:300].decode('utf-8', 'replace')}")
        return json.loads(raw)

    def command(self, name: str, args: dict | None = None) -> tuple[bool, Any]:
        """Run one protocol command; ``(ok, result or error message)``."""
        assert self.instance is not None
        status, raw = self._call("POST", "/execute", body={name: args or {}, **self.instance})
        payload = json.loads(raw) if raw[:1] in (b"{", b"[") else raw.decode("utf-8", "replace")
        if status == 200:
            return True, payload
        return False, payload.get("message", str(payload)) if isinstance(payload, dict) else str(payload)

    def _ext(self, method: str, name: str, body: Any = None, **params: Any) -> Any:
        assert self.instance is not None
        return self._ok(method, "/simweb/" + name, dict(self.instance, **params), body)

    # ------------------------------------------------------------------ episode
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[dict, dict]:
        """Lease an instance (once; later resets reuse it) and start ``options["task"]``
        with episode ``seed`` on it."""
        options = options or {}
        if self.instance is None:
            self.instance = self._lease()
        started = self._ext("POST", "start", task=options.get("task") or "", app=options.get("app") or "",
                            seed=int(seed or 0))
        self.answer = None
        self.backend.forget()
        self.task = self._ext("GET", "verdict")["task"]
        task = self.task or {}
        self.episode.cap = step_cap(app_of_task(task["id"])) if task.get("id") else None
        self.episode.begin(None, None, None, goal=task.get("goal", ""), kind=task.get("kind"),
                           budget=task.get("budget") or episode_budget(None, cap=None))
        obs = self.episode.observation(self.backend, self.backend.state())
        return obs, {"start": started["url"], "task": self.task, "instance": dict(self.instance)}

    def _lease(self) -> dict[str, str]:
        deadline = time.monotonic() + self.capacity_wait_s
        while True:
            status, raw = self._call("POST", "/get", {"lifetime_mins": self.lifetime_mins})
            if status == 200:
                return json.loads(raw)
            if status != 503 or time.monotonic() >= deadline:
                raise OmniboxEnvError(f"POST /get: HTTP {status}: {raw[:200].decode('utf-8', 'replace')}")
            time.sleep(0.2)

    def step(self, action: str) -> tuple[dict, float, bool, bool, dict]:
        """Perform one BrowserGym action string through the protocol
        (:meth:`simweb.episode.Episode.step` through :class:`ProtocolBackend`)."""
        if self.instance is None:
            raise RuntimeError("OmniboxSimEnv.step() called before reset()")
        return self.episode.step(self.backend, action)

    def _take(self, action: Any) -> str:
        """Parse ``action`` and carry it out through the protocol; the error message or ""."""
        from ...web.actions import ActionError, parse_action

        try:
            parsed = parse_action(action)
            return self._perform(parsed.name, list(parsed.args))
        except (ActionError, _Unsupported) as exc:
            return str(exc)

    def close(self) -> None:
        """Release the instance."""
        if self.instance is not None:
            inst, self.instance = self.instance, None
            self._call("POST", "/reset", inst)

    # ------------------------------------------------------------------ actions
    def _where(self, bid: str) -> dict:
        found = self._ext("GET", "locate", bid=bid)
        if found["point"] is None or found["display_id"] is None:
            found = self._ext("GET", "locate", bid=bid, scroll=1)
            self._screenshot()   # renumber what the scroll brought into view
            found = self._ext("GET", "locate", bid=bid)
        return found

    def _point(self, bid: str) -> dict:
        found = self._where(bid)
        if found["point"] is None:
            raise _Unsupported(f"Element with bid '{bid}' is covered or not in the viewport")
        return {"x": found["point"][0], "y": found["point"][1]}

    def _display(self, bid: str) -> str:
        found = self._where(bid)
        if found["display_id"] is None:
            raise _Unsupported(f"Element with bid '{bid}' has no number in the screenshot")
        return found["display_id"]

    def _perform(self, name: str, args: list[Any]) -> str:
        run = self.command
        if name == "send_msg_to_user":
            self.answer = str(args[0])
            return ""
        if name == "report_infeasible":
            self.answer = str(args[0])
            return ""
        if name == "noop":
            return ""
        if name in ("click", "check", "uncheck", "dblclick"):
            ok, out = run("click_coords", self._point(args[0]))
        elif name == "hover":
            ok, out = run("hover_coords", self._point(args[0]))
        elif name == "fill":
            ok, out = run("fill_id", {"id": self._display(args[0]), "value": str(args[1]), "press_enter": False,
                                      "delete_existing": True})
        elif name == "select_option":
            wanted = args[1] if isinstance(args[1], str) else args[1][0]
            ok, out = run("click_id", {"id": self._display(args[0])})   # focus: its options get numbers
            if ok:
                self._screenshot()
                ok, out = self._select(str(wanted))
        elif name == "press":
            ok, out = run("click_coords", self._point(args[0]))
            if ok:
                ok, out = run("keypress", {"keys": str(args[1]).split("+")})
        elif name == "goto":
            assert self.instance is not None
            page = self._ok("POST", "/execute", body={"get_page_metadata": {}, **self.instance})
            ok, out = run("visit_page", {"url": urllib.parse.urljoin(page["url"], str(args[0]))})
        elif name == "go_back":
            ok, out = run("back")
        elif name == "scroll":
            dy = float(args[1])
            ok, out = run("page_down" if dy >= 0 else "page_up", {"amount": abs(dy)})
        else:
            raise _Unsupported(f"{name}() has no Omniboxes command")
        return "" if ok else str(out)

    def _select(self, wanted: str) -> tuple[bool, Any]:
        ok, info = self.command("get_screenshot_info")
        if not ok or "id_mapping" not in info:
            return False, "no screenshot info"
        for display in info["visible_rects"]:
            region = info["interactive_regions"].get(info["id_mapping"].get(display, display), {})
            if region.get("tag_name") == "option" and region.get("aria_name", "").strip() == wanted.strip():
                return self.command("select_option", {"id": display})
        return False, f"Option {wanted!r} not found"

    # ------------------------------------------------------------------ observations
    def _screenshot(self) -> bytes:
        assert self.instance is not None
        status, raw = self._call("GET", "/screenshot", dict(self.instance, interaction_mode="set_of_marks"))
        return raw if status == 200 else b""

    def _observe_page(self) -> dict[str, Any]:
        """The page's observation keys (the episode fills in goal, last action, chat and step)."""
        shot = self._screenshot()
        seen = self._ext("GET", "observe")
        return {"url": seen["url"], "goal": "", "axtree": seen["axtree"], "html": "",
                "screenshot": shot if self.screenshots else b"", "last_action": "", "last_action_error": "",
                "open_pages_urls": [seen["url"]], "active_page_index": 0,
                "focused_element_bid": seen["focused_element_bid"], "chat_messages": [], "step": 0}

    def __enter__(self) -> OmniboxSimEnv:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
