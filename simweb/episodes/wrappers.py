"""Episode options as ``gymnasium.Wrapper`` s: progress reward, end on success, step budget.

The env's constructor switches (``simweb.make(app, reward="progress", end_on_success=True,
max_steps=N)``) stay the short way to ask for these; the wrappers are the same rules for
code that composes gymnasium wrappers. Each reads only what the env already returns (the
verdict in ``info``, the flags), so on the same seed a wrapped env and an env built with
the switch give the same rewards, terminations and truncations step for step
(``tests/test_wrappers.py``)::

    env = EndOnSuccess(ProgressReward(StepBudget(simweb.make("shopping"), 30)))

* :class:`ProgressReward`: the reward is the change of the potential ``progress if clean
  else 0`` (:func:`simweb.episode.potential`), so an episode's rewards add up to its final
  clean progress and collateral damage takes back all progress until it is repaired.
* :class:`EndOnSuccess`: a state-changing (or mixed) task's episode also ends at its first
  success. Off by default for a reason (docs/rewards.md): the stop tells a policy which of
  its tries succeeded. With a sparse reward the ending step pays 1 if the success is clean.
* :class:`StepBudget`: truncation after ``max_steps`` steps. Unlike
  ``gymnasium.wrappers.TimeLimit`` it replaces simweb's budget rule (at least twice the
  oracle's plan), so it can lengthen an episode as well as shorten it.

A wrapper's own bookkeeping (the last potential, the step count) is not carried by
``env.unwrapped.fork()``: wrap the fork again, or use the switches, for fork groups.
"""
from __future__ import annotations

from typing import Any, SupportsFloat

import gymnasium as gym

from .episode import potential

__all__ = ["EndOnSuccess", "ProgressReward", "StepBudget"]

Step = tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]


def _verdict(info: dict[str, Any]) -> dict[str, Any] | None:
    v = info.get("verdict")
    return v if isinstance(v, dict) else None


class ProgressReward(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Reward = the change of ``potential(verdict)`` since the last step (0 after the end)."""

    #: read by :class:`EndOnSuccess` (through ``get_wrapper_attr``) when it wraps this one
    reward_mode = "progress"

    def __init__(self, env: gym.Env):
        gym.utils.RecordConstructorArgs.__init__(self)   # so that env.spec can rebuild the stack
        gym.Wrapper.__init__(self, env)
        self._potential = 0.0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        obs, info = self.env.reset(seed=seed, options=options)
        self._potential = potential(_verdict(info))
        return obs, info

    def step(self, action: Any) -> Step:
        obs, _reward, terminated, truncated, info = self.env.step(action)
        if info.get("episode_over"):      # a step after the end runs nothing and pays nothing
            return obs, 0.0, terminated, truncated, info
        now = potential(_verdict(info))
        reward, self._potential = now - self._potential, now
        return obs, float(reward), terminated, truncated, info


class EndOnSuccess(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Terminate a state-changing or mixed task's episode at its first success."""

    def __init__(self, env: gym.Env):
        gym.utils.RecordConstructorArgs.__init__(self)
        gym.Wrapper.__init__(self, env)
        #: the last observation and info once this wrapper ended the episode
        self._over: tuple[Any, dict[str, Any]] | None = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        self._over = None
        return self.env.reset(seed=seed, options=options)

    def step(self, action: Any) -> Step:
        if self._over is not None:   # this wrapper ended the episode: the action is not run
            obs, info = self._over
            return obs, 0.0, True, False, {**info, "episode_over": True}
        obs, reward, terminated, truncated, info = self.env.step(action)
        verdict = _verdict(info)
        kind = getattr(getattr(self.env.unwrapped, "episode", None), "kind", None)
        if not terminated and verdict and verdict.get("success") and kind in ("state", "mixed"):
            terminated, truncated, self._over = True, False, (obs, info)
            if self._reward_mode() == "sparse":   # the end pays, as an ending answer would
                reward = 1.0 if verdict.get("clean") else 0.0
        return obs, reward, terminated, truncated, info

    def _reward_mode(self) -> str:
        try:
            return str(self.env.get_wrapper_attr("reward_mode"))
        except AttributeError:
            return "sparse"


class StepBudget(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Truncate after ``max_steps`` steps; a simweb env's own budget rule is replaced by it."""

    def __init__(self, env: gym.Env, max_steps: int):
        if int(max_steps) < 1:
            raise ValueError(f"max_steps must be at least 1, not {max_steps!r}")
        gym.utils.RecordConstructorArgs.__init__(self, max_steps=max_steps)
        gym.Wrapper.__init__(self, env)
        self.max_steps = int(max_steps)
        if hasattr(env.unwrapped, "max_steps_override"):   # the rule must not cut the episode first
            env.unwrapped.max_steps_override = self.max_steps
        self._steps = 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        self._steps = 0
        return self.env.reset(seed=seed, options=options)

    def step(self, action: Any) -> Step:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._steps += 1
        if not terminated and self._steps >= self.max_steps:
            truncated = True
        return obs, reward, terminated, truncated, info
