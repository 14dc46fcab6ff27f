"""simweb as an OpenEnv environment, served by openenv's own server.

    simweb openenv forum --port 8000                    # openenv's create_app under uvicorn

    from simweb.trainers.openenv_env import SimwebAction, SimwebClient

    with SimwebClient(base_url="http://127.0.0.1:8000").sync() as env:
        r = env.reset(task="forum/submit_text_post", seed=3)
        print(r.observation.text)                       # the prompt text (simweb.textenv)
        r = env.step(SimwebAction(action="click('new-post')"))
        r.reward, r.done, r.observation.last_action_error
        fork_id = env.step(SimwebAction(command="fork")).observation.fork_id

The server is ``openenv.core.env_server.http_server.create_app`` (its ``HTTPEnvServer``):
``WS /ws`` gives every connection its own :class:`SimwebEnvironment` (one stateful env per
session), ``/health``, ``/schema``, ``/metadata`` and the stateless ``POST /reset`` /
``/step`` of simulation mode are openenv's. simweb adds no route; what it adds is in its
typed models:

- :class:`SimwebAction`: ``action`` is a reply text, read by the one reply parser
  (:func:`simweb.textenv.parse_reply`; a bare action string reads as itself). A reply that
  does not parse is an observation with ``last_action_error``, never an error. ``command``
  selects simweb's extras: ``fork`` (the session's state kept on the server; the
  observation's ``fork_id`` starts any session there with ``reset(fork=id)``), ``snapshot``
  (the whole state in ``snapshot``), ``restore`` (``state``: a snapshot; checked against
  the app, world and spec, and simweb's size and shape limits), ``verdict`` (the task's
  verdict on the current state: success, progress, clean, checks). Extras take no step.
- reset options: ``task`` (a template id; omitted: drawn by the seed), ``seed`` (the
  instance), ``prefix`` (actions played before the episode is handed over), ``fork`` (a
  fork id). With a seed, every session's start is a fork of one root env per (task, seed,
  prefix) (:class:`simweb.textenv.GroupStarts`), so a GRPO group's sessions start from forks
  of one state. Without a seed, the session's own env draws the next instance from its
  generator, seeded by the session's last seeded reset (gymnasium's rule, as in-process; a
  session never reset with a seed draws as an unseeded gymnasium env does).
  (``variant`` will join these once simweb has variants.)
- :class:`SimwebObservation`: ``text`` (the prompt text: goal, page, AX tree, error; the
  action syntax at reset), the observation's fields, ``terminated`` / ``truncated``.
- :class:`SimwebState`: app, task, seed, step budget, state hash, cumulative reward.

Limits (``simweb openenv`` options): at most ``max_sessions`` sessions (one more is refused
with openenv's ``CAPACITY_REACHED``); a session idle for ``idle_timeout`` seconds is closed
by openenv's reaper, and its next message answers "session ... has ended"; a reply over
:data:`simweb.textenv.MAX_REPLY_CHARS` is refused by the action model (``VALIDATION_ERROR``),
a restored state over simweb's state limits by the env, and a WebSocket message over
``max_message_bytes`` by the server (close code 1009); at most ``max_forks`` forks are kept
(least recently used dropped).
"""
from __future__ import annotations

import functools
import socket
import threading
from collections import OrderedDict
from typing import Any, Literal

import orjson
from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient
from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, ConcurrencyConfig, EnvironmentMetadata, Observation, State
from pydantic import Field

from ...core.limits import DEFAULT_LIMITS, check_shape
from ...episodes.textenv import MAX_REPLY_CHARS, GroupStarts, TextEnv, TextStep

__all__ = ["ForkStore", "SessionEnded", "SimwebAction", "SimwebClient", "SimwebEnvironment", "SimwebObservation",
           "SimwebState", "bind", "make_app", "serve"]

#: What a step before any reset answers.
NO_EPISODE = ("no episode: reset first (a session's episodes live on the WebSocket /ws; the stateless POST /step "
              "gets a fresh env for each request)")

#: Longest task id, and most actions in a reset's ``prefix``.
MAX_TASK_CHARS = 200
MAX_PREFIX = 200


class SimwebAction(Action):
    """A reply text to act on, or one of simweb's extras (see the module doc)."""

    action: str = Field(default="", max_length=MAX_REPLY_CHARS,
                        description="A reply text; its one BrowserGym action call is run (click('12'), fill('5', 'x'), "
                                    "send_msg_to_user('done'), ...).")
    command: Literal["act", "fork", "snapshot", "restore", "verdict"] = Field(
        default="act", description="act: run `action`; fork / snapshot / restore / verdict: simweb's extras.")
    state: dict[str, Any] | None = Field(default=None, description="restore: a state from `snapshot`.")


class SimwebObservation(Observation):
    """What a session sees after a reset, a step or an extra."""

    text: str = Field(default="", description="The prompt text of this observation (goal, page, AX tree, error).")
    goal: str = ""
    url: str = ""
    axtree: str = ""
    last_action: str = ""
    last_action_error: str = ""
    step: int = 0
    terminated: bool = False
    truncated: bool = False
    verdict: dict[str, Any] | None = Field(default=None, description="verdict: the task's verdict.")
    fork_id: str | None = Field(default=None, description="fork: the id `reset(fork=...)` starts from.")
    snapshot: dict[str, Any] | None = Field(default=None, description="snapshot: the whole state.")


class SimwebState(State):
    """A session's episode: the app, task and seed, its budget, the state's hash."""

    app: str = ""
    task: str | None = None
    seed: int | None = None
    world_seed: int = 0
    max_steps: int = 0
    state_hash: str = ""
    cum_reward: float = 0.0
    fork_of: str | None = None


class SessionEnded(RuntimeError):
    """A message to a session that has ended (closed, or expired after being idle)."""


class ForkStore:
    """States kept for ``reset(fork=id)``: forks of envs, at most ``capacity`` (least
    recently used dropped), ids ``f1``, ``f2``, ... in the order made (no clock, no random)."""

    def __init__(self, capacity: int = 256):
        self.capacity = capacity
        self._forks: OrderedDict[str, Any] = OrderedDict()
        self._count = 0
        self._lock = threading.Lock()

    def put(self, env: Any) -> str:
        with self._lock:
            self._count += 1
            fid = f"f{self._count}"
            self._forks[fid] = env.fork()
            while len(self._forks) > self.capacity:
                self._forks.popitem(last=False)
            return fid

    def fork(self, fid: str) -> Any:
        with self._lock:
            env = self._forks.get(fid)
            if env is None:
                raise ValueError(f"unknown fork {fid!r} (the server keeps the {self.capacity} most recent forks)")
            self._forks.move_to_end(fid)
            return env.fork()


class SimwebEnvironment(Environment[SimwebAction, SimwebObservation, SimwebState]):
    """One session's simweb env (openenv's ``Environment``; see the module doc)."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, app: str = "forum", world_seed: int = 0, reward: str = "sparse",
                 starts: GroupStarts | None = None, forks: ForkStore | None = None, max_axtree_chars: int = 40_000):
        super().__init__()
        self.app = app
        self.world_seed = world_seed
        self.reward_mode = reward
        self.starts = starts if starts is not None else GroupStarts(reward=reward)
        self.forks = forks if forks is not None else ForkStore()
        self.max_axtree_chars = max_axtree_chars
        self.text: TextEnv | None = None
        self._own: Any = None
        self._last_seed: int | None = None
        self._state = SimwebState(app=app, world_seed=world_seed)
        self._closed = False

    # ------------------------------------------------------------------ openenv contract
    def reset(self, seed: int | None = None, episode_id: str | None = None, task: str | None = None,
              fork: str | None = None, prefix: list[str] | None = None, **kwargs: Any) -> SimwebObservation:
        """Start an episode (see the module doc for the options). Unknown options are refused."""
        self._alive()
        if kwargs:
            raise ValueError(f"unknown reset option(s) {', '.join(sorted(kwargs))} "
                             "(known: task, seed, prefix, fork, episode_id)")
        if task is not None and (not isinstance(task, str) or len(task) > MAX_TASK_CHARS):
            raise ValueError(f"task must be a task id of at most {MAX_TASK_CHARS} characters")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**63):
            raise ValueError("seed must be an integer from 0 to 2**63-1")
        prefix = list(prefix or [])
        if len(prefix) > MAX_PREFIX or not all(isinstance(a, str) and len(a) <= MAX_REPLY_CHARS for a in prefix):
            raise ValueError(f"prefix must be a list of at most {MAX_PREFIX} action strings")
        if fork is not None:
            env = self.forks.fork(str(fork))
        elif seed is not None:
            self._last_seed = seed
            env = self.starts.fork(self.app, task, seed, prefix, world_seed=self.world_seed)
        else:   # no seed: the session's own env draws the next instance, as an in-process env does
            options = {} if task is None else {"task": task}
            if self._own is None:
                from ...episodes.env import SimEnv

                self._own = SimEnv(self.app, self.world_seed, reward=self.reward_mode)
                if self._last_seed is not None:
                    self._own.reset(seed=self._last_seed, options=options)   # seeds its generator
            self._own.reset(options=options)
            for action in prefix:
                self._own.step(action)
            env = self._own
        self.text = TextEnv(env, max_axtree_chars=self.max_axtree_chars)
        step = self.text.start()
        meta = env.state["meta"]
        t = env.task
        self._state = SimwebState(episode_id=episode_id, step_count=int(meta["step"]), app=self.app,
                                  task=t.id if t is not None else None, seed=int(meta["rng"]["seed"]),
                                  world_seed=self.world_seed, max_steps=int(env.max_steps),
                                  state_hash=env.state_hash(), cum_reward=0.0, fork_of=fork)
        return self._observation(step)

    def step(self, action: SimwebAction, timeout_s: float | None = None, **kwargs: Any) -> SimwebObservation:
        """Run the action's reply (``command="act"``) or one of simweb's extras. Before any reset
        (openenv's stateless ``POST /step`` builds a fresh env for each request) it runs nothing
        and says so in ``last_action_error``."""
        self._alive()
        if self.text is None:
            return SimwebObservation(done=True, reward=0.0, last_action_error=NO_EPISODE, text=NO_EPISODE)
        text = self.text
        if action.command == "fork":
            return self._observation(self._current(text), fork_id=self.forks.put(text.env))
        if action.command == "snapshot":
            return self._observation(self._current(text), snapshot=text.env.snapshot())
        if action.command == "verdict":
            return self._observation(self._current(text), verdict=text.verdict())
        if action.command == "restore":
            if action.state is None:
                raise ValueError("restore needs `state` (a snapshot)")
            self._check_state(action.state)
            text.env.restore(action.state)
            self._state.state_hash = text.env.state_hash()
            self._state.step_count = int(text.env.state["meta"]["step"])
            return self._observation(text.start())
        got = text.step(action.action)
        self._state.step_count = int(text.env.state["meta"]["step"])
        self._state.cum_reward += got.reward
        self._state.state_hash = text.env.state_hash()
        return self._observation(got)

    @property
    def state(self) -> SimwebState:
        self._alive()
        return self._state

    def close(self) -> None:
        """End the session (openenv calls it on disconnect and when the idle reaper expires it)."""
        self._closed = True
        self.text = None

    def get_metadata(self) -> EnvironmentMetadata:
        return EnvironmentMetadata(name=f"simweb-{self.app}", version="0",
                                   description=f"simweb's {self.app} app: BrowserGym actions as reply text, "
                                               "verifier rewards, fork / snapshot / restore / verdict extras.")

    # ------------------------------------------------------------------ helpers
    def _alive(self) -> None:
        if self._closed:
            raise SessionEnded("this simweb session has ended (closed, or idle past the server's timeout); "
                               "open a new session")

    def _current(self, text: TextEnv) -> TextStep:
        last = text.last
        assert last is not None
        return TextStep(last.observation, last.text, 0.0, last.terminated, last.truncated, last.info, last.action)

    def _check_state(self, state: dict[str, Any]) -> None:
        size = len(orjson.dumps(state))
        if size > DEFAULT_LIMITS.max_state:
            raise ValueError(f"state of {size} bytes is over the limit of {DEFAULT_LIMITS.max_state} bytes")
        check_shape(state)

    def _observation(self, step: TextStep, **extra: Any) -> SimwebObservation:
        obs = step.observation
        return SimwebObservation(
            done=step.done, reward=step.reward, text=step.text, goal=str(obs.get("goal") or ""),
            url=str(obs.get("url") or ""), axtree=str(obs.get("axtree") or ""),
            last_action=str(obs.get("last_action") or ""), last_action_error=str(obs.get("last_action_error") or ""),
            step=int(obs.get("step") or 0), terminated=step.terminated, truncated=step.truncated, **extra)


class SimwebClient(EnvClient[SimwebAction, SimwebObservation, SimwebState]):
    """openenv's ``EnvClient`` for a ``simweb openenv`` server (one WebSocket session each)."""

    def _step_payload(self, action: SimwebAction) -> dict[str, Any]:
        return action.model_dump(exclude_defaults=True)

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[SimwebObservation]:
        obs = SimwebObservation(**payload.get("observation", {}), reward=payload.get("reward"),
                                done=bool(payload.get("done", False)))
        return StepResult(observation=obs, reward=payload.get("reward"), done=bool(payload.get("done", False)),
                          metadata=payload.get("metadata"))

    def _parse_state(self, payload: dict[str, Any]) -> SimwebState:
        return SimwebState(**payload)


def make_app(app: str, *, world_seed: int = 0, reward: str = "sparse", max_sessions: int = 64,
             idle_timeout: float | None = 600.0, max_forks: int = 256, max_axtree_chars: int = 40_000) -> Any:
    """The FastAPI app of openenv's ``create_app`` serving ``app`` (see the module doc)."""
    starts = GroupStarts(reward=reward)
    forks = ForkStore(max_forks)
    factory = functools.partial(SimwebEnvironment, app=app, world_seed=world_seed, reward=reward, starts=starts,
                                forks=forks, max_axtree_chars=max_axtree_chars)
    config = ConcurrencyConfig(max_concurrent_envs=max_sessions, session_timeout=idle_timeout)
    return create_app(factory, SimwebAction, SimwebObservation, env_name=f"simweb-{app}", concurrency_config=config,
                      state_cls=SimwebState)


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on (host, port), bound before the app is built, so a port in use
    is one clear error (OSError) instead of uvicorn's exit."""
    family, kind, proto, _, addr = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)   # as uvicorn does: a restart reuses the port
        sock.bind(addr)
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def serve(sock: socket.socket, app: Any, *, max_message_bytes: int = DEFAULT_LIMITS.max_body + 65_536) -> None:
    """Run ``app`` (from :func:`make_app`) under uvicorn on ``sock`` until Ctrl-C or SIGTERM.
    A WebSocket message over ``max_message_bytes`` closes its connection (code 1009)."""
    import uvicorn

    config = uvicorn.Config(app, log_level="warning", ws_max_size=max_message_bytes, lifespan="on")
    uvicorn.Server(config).run(sockets=[sock])
