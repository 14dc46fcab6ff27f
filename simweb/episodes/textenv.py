"""One text interface for LLM policies: observations as prompt text, replies as actions.

Every trainer integration (OpenEnv, TRL, SkyRL; :mod:`simweb.trainers`) and the
OpenAI-compatible agent (:mod:`simweb.agents.llm`) meet simweb through this module:

    from simweb.textenv import TextEnv

    env = TextEnv(simweb.make("forum"))
    step = env.reset(task="forum/submit_text_post", seed=3)
    print(step.text)                          # goal, open tab, AX tree, action syntax
    step = env.step("I open the form. ```click('new-post')```")
    step.reward, step.done, step.action, step.observation["last_action_error"]

- :func:`prompt_text` is what the policy reads first: the goal, the open tab (URL and
  title), the page's AX tree (cut at ``max_axtree_chars``), the last action's error, and
  the action syntax (BrowserGym's action set, one signature, description and example a
  line). :func:`observation_text` is the same without the syntax, for later turns.
- :func:`parse_reply` reads a reply as BrowserGym's non-strict single-action parser reads
  it: the one reader (:func:`simweb.agents.prompts.read_reply`), also used by the LLM
  agent. It never raises: a reply without exactly one known, well-formed call is a
  :class:`~simweb.agents.prompts.Reply` with ``action=None`` and the reading error.
- :class:`TextEnv` steps an env with reply text. A reply that does not parse still takes
  a step (the env refuses it, so an LLM that never writes an action cannot stall an
  episode past its step budget), and the observation's ``last_action_error`` is the
  reading error, which the next prompt shows.
- :class:`GroupStarts` keeps one root env per (app, task, seed, prefix) and hands out
  forks of it, so the generations of one GRPO group start from forks of one state and
  compare actions, not seeds (TRL, SkyRL and the OpenEnv server use it).
- :func:`call_text` writes a named tool call (``click``, ``fill``, ...) as its canonical
  action text; every oracle action round-trips through it (tests/test_textenv.py).
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from ..agents.prompts import (
    BROWSERGYM_ACTIONS,
    MAX_AXTREE_CHARS,
    BrowserGymPrompt,
    Reply,
    _cut,
    page_title,
    read_reply,
    unreadable_action,
)
from ..web.actions import ACTIONS, ActionError, parse_action

__all__ = ["GroupStarts", "MAX_REPLY_CHARS", "TextEnv", "TextStep", "action_syntax", "call_text",
           "observation_text", "parse_reply", "prompt_text", "SYSTEM_PROMPT", "TEXT_ACTIONS"]

#: Longest reply text a TextEnv (and the OpenEnv server) reads; longer replies are refused
#: with a reading error (the env still takes the step).
MAX_REPLY_CHARS = 32_000

#: The actions a text policy may take: BrowserGym's default high-level set and simweb's
#: ``check`` / ``uncheck`` (the oracles tick boxes with them); no coordinate actions, which
#: need a layout.
TEXT_ACTIONS = (*BROWSERGYM_ACTIONS[:7], "check", "uncheck", *BROWSERGYM_ACTIONS[7:])

#: The system message of every simweb text prompt.
SYSTEM_PROMPT = ("You operate a web browser to reach a goal. Read the goal and the page, then reply with the "
                 "single best next action, written exactly as in the action syntax (one call, e.g. click('51')). "
                 "The task ends when you send the user a message: your answer, or that the work is done.")


def action_syntax() -> str:
    """The action set as the prompt shows it (signature, what it does, an example)."""
    return BrowserGymPrompt().action_space(TEXT_ACTIONS)


def observation_text(obs: dict[str, Any], *, max_axtree_chars: int = MAX_AXTREE_CHARS) -> str:
    """An observation as text: goal, the open tab (URL and title), the AX tree, the last
    action's error (when there is one)."""
    urls = list(obs.get("open_pages_urls") or [obs.get("url", "")])
    active = obs.get("active_page_index", 0)
    active = active[0] if isinstance(active, (list, tuple)) and active else active
    active = int(active) if isinstance(active, int) and 0 <= active < len(urls) else 0
    axtree = str(obs.get("axtree", ""))
    parts = [f"# Goal\n{obs.get('goal') or '(no task: browse freely)'}\n",
             f"# Page\nURL: {urls[active] if urls else ''}\nTitle: {page_title(axtree)}\n",
             f"# Accessibility tree\n{_cut(axtree, max_axtree_chars)}\n"]
    error = obs.get("last_action_error") or ""
    if error:
        parts.append(f"# Error from the last action\n{error}\n")
    return "\n".join(parts)


def prompt_text(obs: dict[str, Any], *, max_axtree_chars: int = MAX_AXTREE_CHARS) -> str:
    """The first prompt of an episode: :func:`observation_text` and the action syntax."""
    return (observation_text(obs, max_axtree_chars=max_axtree_chars)
            + f"\n# Action syntax\n{action_syntax()}\n\n# Next action\nReply with one action.\n")


def parse_reply(text: Any) -> Reply:
    """A reply's one action (see the module doc). Never raises, whatever ``text`` is."""
    if not isinstance(text, str):
        return Reply(None, f"TypeError: a reply is text, not {type(text).__name__}.")
    if len(text) > MAX_REPLY_CHARS:
        return Reply(None, f"ValueError: the reply has {len(text)} characters (at most {MAX_REPLY_CHARS}).")
    return read_reply(text, TEXT_ACTIONS)


def call_text(name: str, *args: Any) -> str:
    """The canonical action text of a call (``call_text('fill', '12', 'hi')`` is
    ``fill('12', 'hi')``). Raises :class:`ActionError` for an unknown name or bad arguments."""
    if name not in ACTIONS:
        raise ActionError(f"unknown action '{name}'")
    code = f"{name}({', '.join(repr(a) for a in args)})"
    return parse_action(code).to_code()


@dataclass
class TextStep:
    """One step of a :class:`TextEnv`: the simweb observation, its text, the reward, the
    flags, ``info`` (with the verdict), and the action run (None when the reply did not parse)."""

    observation: dict[str, Any]
    text: str
    reward: float = 0.0
    terminated: bool = False
    truncated: bool = False
    info: dict[str, Any] = field(default_factory=dict)
    action: str | None = None

    @property
    def done(self) -> bool:
        return self.terminated or self.truncated


class TextEnv:
    """A simweb env stepped with reply text (see the module doc). ``env`` is any simweb env
    (``simweb.make(app)``, a fork, a browser env)."""

    def __init__(self, env: Any, *, max_axtree_chars: int = MAX_AXTREE_CHARS):
        self.env = env
        self.max_axtree_chars = max_axtree_chars
        self.last: TextStep | None = None

    def reset(self, task: str | None = None, seed: int | None = None, **options: Any) -> TextStep:
        """Start an episode of ``task`` at instance ``seed`` (the env's own choice when None)."""
        if task is not None:
            options["task"] = task
        obs, info = self.env.reset(seed=seed, options=options)
        self.last = TextStep(obs, prompt_text(obs, max_axtree_chars=self.max_axtree_chars), info=info)
        return self.last

    def start(self) -> TextStep:
        """The current state as the first step of a text episode (for a fork or a restored env)."""
        obs, info = self.env.observe()
        self.last = TextStep(obs, prompt_text(obs, max_axtree_chars=self.max_axtree_chars), info=info)
        return self.last

    def step(self, reply: Any) -> TextStep:
        """Read ``reply`` and run its action; a reply that does not parse takes a step that
        runs nothing, and its reading error is the observation's ``last_action_error``."""
        got = parse_reply(reply)
        if got.action is not None:
            action: str = got.action
        else:
            action = unreadable_action(reply if isinstance(reply, str) else repr(reply)[:200]) or "(empty reply)"
        obs, reward, terminated, truncated, info = self.env.step(action)
        if got.action is None:
            obs = dict(obs)
            obs["last_action_error"] = got.error
        self.last = TextStep(obs, observation_text(obs, max_axtree_chars=self.max_axtree_chars), float(reward),
                             bool(terminated), bool(truncated), info, got.action)
        return self.last

    def fork(self) -> TextEnv:
        """An independent TextEnv at the same state (the env's fork)."""
        child = TextEnv(self.env.fork(), max_axtree_chars=self.max_axtree_chars)
        child.last = self.last
        return child

    def verdict(self) -> dict | None:
        """The task's verdict on the current state (success, progress, clean, checks)."""
        return self.env.verdict()


class GroupStarts:
    """Roots of groups: one env per (app, world seed, task, seed, prefix), reset once and
    played through ``prefix``; :meth:`fork` hands out forks of it. Bounded (least recently
    used roots are dropped) and thread-safe (one lock; a fork is a copy of the runtime layers)."""

    def __init__(self, capacity: int = 64, **make_options: Any):
        self.capacity = capacity
        self.make_options = make_options
        self._roots: OrderedDict[tuple, Any] = OrderedDict()
        self._lock = threading.Lock()

    def fork(self, app: str, task: str | None, seed: int, prefix: tuple[str, ...] | list[str] = (),
             world_seed: int = 0) -> Any:
        """A fork of the root env of this (app, task, seed, prefix); the root is built on first use."""
        key = (app, world_seed, task, int(seed), tuple(prefix))
        with self._lock:
            root = self._roots.get(key)
            if root is None:
                root = self._build(app, task, int(seed), tuple(prefix), world_seed)
                self._roots[key] = root
                while len(self._roots) > self.capacity:
                    self._roots.popitem(last=False)
            else:
                self._roots.move_to_end(key)
            return root.fork()

    def _build(self, app: str, task: str | None, seed: int, prefix: tuple[str, ...], world_seed: int) -> Any:
        from .env import SimEnv

        env = SimEnv(app, world_seed, **self.make_options)
        env.reset(seed=seed, options={} if task is None else {"task": task})   # None: drawn by the seed
        for action in prefix:
            env.step(action)
        return env
