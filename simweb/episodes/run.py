"""Run one episode: an agent (any :class:`simweb.policy.Policy`) in an env, recorded as a
:class:`Trajectory` (lines in the schema of :mod:`simweb.trajectory`).

The rollout pools (:mod:`simweb.rollout`) and the group call (:mod:`simweb.group`) both run
episodes through :func:`run_episode`; it sits below both.
"""
from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson

from .. import __version__
from .policy import begin_rollout, split_action
from .trajectory import element_box, header_fields, step_fields


def obs_digest(obs: dict[str, Any]) -> str:
    return hashlib.sha256(obs["axtree"].encode()).hexdigest()[:16]


@dataclass
class Trajectory:
    header: dict[str, Any]
    steps: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    #: PNG screenshots by step (0: the start), where the backend takes them; written
    #: beside the file by :func:`simweb.trajectory.write_trajectory`, never in the lines
    screenshots: dict[int, bytes] = field(default_factory=dict, repr=False)

    @property
    def final(self) -> dict[str, Any]:
        return self.steps[-1]["verdict"] if self.steps and self.steps[-1]["verdict"] else {}

    def lines(self) -> Iterable[bytes]:
        yield orjson.dumps(self.header)
        for s in self.steps:
            yield orjson.dumps(s)


def run_episode(env: Any, agent: Any, *, task: str | None, seed: int, max_steps: int | None = None,
                reset: bool = True, on_step: Callable[[int, dict], None] | None = None,
                policy_seed: int | None = None, lean: bool = False) -> Trajectory:
    """Run ``agent`` (any :class:`simweb.policy.Policy`) in ``env`` until the episode ends
    (or ``max_steps``). ``reset``: start the instance (``task``, ``seed``; no task: one
    drawn by the env), else continue from the env's current state (a fork, whose header
    names the state it started from as ``parent``).
    ``policy_seed`` is the rollout's seed given to the policy (default ``seed``).
    ``lean``: record observations without their AX-tree text (rollouts a learner keeps
    in memory only)."""
    if reset:
        obs, info = env.reset(seed=seed, options={"task": task} if task else None)
    else:
        obs, info = env.observe()
    parent = None if reset else {"state_hash": env.state_hash(),
                                  "step": int(getattr(getattr(env, "episode", None), "step_count", 0))}
    begin_rollout(agent, env, seed if policy_seed is None else policy_seed)
    # SimEnv keeps its state; a browser env's state lives with its server (one request).
    state = env.state if hasattr(env, "state") else env.snapshot()
    header = {
        "type": "header", "simweb": __version__, "app": env.app.name,
        "world": dict(state["world"]), "task": env.task.id if env.task else None,
        "params": env.task.params if env.task else None, "seed": seed, "agent": agent.name,
        "start_hash": env.state_hash(), "reset": reset,
        "difficulty": env.task.difficulty if env.task else None, "reward_mode": getattr(env, "reward_mode", None),
        **header_fields(obs, goal=obs.get("goal"), parent=parent, lean=lean),
    }
    if policy_seed is not None:
        header["policy_seed"] = policy_seed
    if getattr(agent, "version", None) is not None:
        header["policy_version"] = agent.version
    traj = Trajectory(header)
    if obs.get("screenshot"):
        traj.screenshots[0] = obs["screenshot"]
    limit = max_steps if max_steps is not None else env.max_steps
    t0 = time.perf_counter()
    for i in range(limit):
        action, logprob = split_action(agent.act(obs))
        box = element_box(env, action) if traj.screenshots else None   # where it acts, on the screenshot
        obs, reward, terminated, truncated, info = env.step(action)
        step = {"type": "step", "step": i + 1, "action": action, "error": obs["last_action_error"],
                "url": obs["url"], "obs": obs_digest(obs), "state_hash": env.state_hash(), "reward": reward,
                "terminated": terminated, "truncated": truncated,
                **step_fields(obs, info, lean=lean)}
        if logprob is not None:
            step["logprob"] = logprob
        if box is not None:
            step["target_box"] = box
        traj.steps.append(step)
        if obs.get("screenshot"):
            traj.screenshots[i + 1] = obs["screenshot"]
        if on_step:
            on_step(i, step)
        if terminated or truncated or getattr(agent, "done", False):   # a finished script stops here
            break
    traj.seconds = time.perf_counter() - t0
    return traj


__all__ = ["Trajectory", "obs_digest", "run_episode"]
