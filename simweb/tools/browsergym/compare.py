"""The same episodes in-process and through stock BrowserGym, side by side.

For each (task, seed), simweb's oracle or random agent runs in-process
(:func:`simweb.rollout.run_episode` on :class:`simweb.env.SimEnv`, as ``simweb eval``
runs it); its actions are then sent, one per step, to the task's BrowserGym env
(``gym.make("browsergym/simweb.<app>.<template>")``), each rewritten for the page BrowserGym
shows (:func:`simweb.browsergym.actions.to_browsergym`: BrowserGym's own ``bid`` of the
element, absolute URLs). The episode's rewards, its verdict and the step it ended at
must be the same on both sides: that is what ``simweb browsergym`` prints and its tests
assert.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import gymnasium as gym

from ...agents import make_agent
from ...episodes.rollout import run_episode
from .actions import to_browsergym
from .registration import gym_id

AGENTS = ("oracle", "random")


@dataclass
class Comparison:
    """One episode on both sides: steps, summed reward and verdict (success, progress,
    clean) in-process (``sim_*``) and through BrowserGym (``bg_*``), and BrowserGym's
    action errors."""

    task: str
    seed: int
    agent: str
    sim_steps: int
    sim_reward: float
    sim_verdict: dict[str, Any]
    bg_steps: int
    bg_reward: float
    bg_verdict: dict[str, Any]
    bg_errors: list[str] = field(default_factory=list)

    @property
    def equal(self) -> bool:
        """Same end step, same summed reward, same verdict."""
        return (self.sim_steps == self.bg_steps and abs(self.sim_reward - self.bg_reward) < 1e-9
                and self.sim_verdict == self.bg_verdict)

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "equal": self.equal}


def _short(verdict: dict | None) -> dict[str, Any]:
    if not verdict:
        return {}
    return {"success": bool(verdict["success"]), "progress": float(verdict["progress"]), "clean": bool(verdict["clean"])}


def compare(tasks: list[str], seeds: list[int], agent: str = "oracle", *, reward: str = "sparse",
            max_steps: int | None = None, headless: bool = True, on_episode: Any = None) -> list[Comparison]:
    """Run ``agent`` (oracle or random) on every (task, seed) in-process and through
    BrowserGym (see the module docstring). ``max_steps`` replaces the step budget on both
    sides (so a random walk can be short)."""
    from ...episodes.env import SimEnv

    if agent not in AGENTS:
        raise ValueError(f"unknown agent {agent!r} (choose {', '.join(AGENTS)})")
    out: list[Comparison] = []
    sims: dict[str, Any] = {}
    for task in tasks:
        app = task.split("/", 1)[0]
        sim = sims.get(app)
        if sim is None:
            sim = sims[app] = SimEnv(app, reward=reward, max_steps=max_steps)
        env = gym.make(gym_id(task), disable_env_checker=True, headless=headless,
                       task_kwargs={"reward": reward, "max_steps": max_steps})
        try:
            for seed in seeds:
                traj = run_episode(sim, make_agent(agent, seed), task=task, seed=seed)
                env.reset(seed=seed)
                bg_reward, bg_steps, errors = 0.0, 0, []
                info: dict[str, Any] = {}
                browser_env: Any = env.unwrapped   # browsergym.core.env.BrowserEnv
                for step in traj.steps:
                    obs, r, terminated, truncated, info = env.step(to_browsergym(browser_env.page, step["action"]))
                    bg_reward += float(r)
                    bg_steps += 1
                    if obs["last_action_error"]:
                        errors.append(obs["last_action_error"].splitlines()[0][:200])
                    if terminated or truncated:
                        break
                task_info = info.get("task_info") or {}
                row = Comparison(task, seed, agent, len(traj.steps), float(sum(s["reward"] for s in traj.steps)),
                                 _short(traj.final), bg_steps, bg_reward, _short(task_info.get("verdict")), errors)
                out.append(row)
                if on_episode is not None:
                    on_episode(row)
        finally:
            env.close()
    return out


__all__ = ["AGENTS", "Comparison", "compare"]
