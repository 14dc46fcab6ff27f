"""Group rollouts from forks: the GRPO primitive.

    import simweb
    from simweb.group import rollout_group

    env = simweb.make("forum")
    env.reset(seed=3, options={"task": "forum/create_post"})
    group = rollout_group(env, "random", n=16, seed=0)          # 16 forks of env's state
    group.rewards, group.advantages, group.step_weights[0]

One call forks one state N times (a mid-episode env, a snapshot, or the start of a task
instance), runs a policy in each child, and returns the N trajectories with their
rewards and group-normalised advantages. Forks, not re-seeded resets: every child starts
from the identical state (same runtime, browser, clock, history), so the group compares
actions, and a fork costs a copy of the small runtime layers instead of a reset.

Rewards (``reward=``): ``outcome`` pays 1 for a clean success at the end, else 0 (the
sparse reward); ``progress`` pays the final clean progress (``progress if clean else
0``, the potential the progress reward adds up to). Both judge the whole episode from
the task's start, so a group forked mid-episode shares its prefix and differs only in
what the children did.

Advantages: ``A_i = (R_i - mean(R)) / (std(R) + eps)`` (``scale="std"``, GRPO) or
``R_i - mean(R)`` (``scale="none"``, Dr. GRPO). A group whose rewards are all equal has
zero advantages: it carries no signal.

The length normaliser (``normaliser=``) turns an advantage into a weight per step, what a
policy-gradient loss multiplies each step's log-probability by:

- ``trajectory``: ``A_i / |tau_i|``, each trajectory's steps averaged on their own (the
  original GRPO loss). A long trajectory's steps weigh less, so a long *failing*
  trajectory (negative advantage) is penalised less per step than a short one:
  AsyncWebRL measured this under-weighting at about 2.4x on web tasks, and it pushes a
  policy towards long, wandering failures.
- ``step``: ``A_i / sum_j |tau_j|``, every step of the group weighs the same (DAPO's
  token-level mean).
- ``constant`` (the default): ``A_i / C`` with ``C`` the step budget (Dr. GRPO): every step
  weighs the same in every group, whatever the lengths, so a long failure costs in
  proportion to its length and weights are comparable across groups.
"""
from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .episode import potential
from .run import Trajectory, run_episode

__all__ = ["GroupError", "GroupResult", "NORMALISERS", "REWARDS", "advantages", "child_seed", "regroup",
           "rollout_group", "step_weights"]

REWARDS = ("outcome", "progress")
NORMALISERS = ("constant", "step", "trajectory")
SCALES = ("std", "none")
EPS = 1e-6


class GroupError(ValueError):
    """A group that cannot be rolled out (bad size, mode or source): one line."""


@dataclass
class GroupResult:
    """A group: trajectories, their rewards, advantages and per-step weights (same order)."""

    trajectories: list[Trajectory]
    rewards: list[float]
    advantages: list[float]
    step_weights: list[list[float]]
    reward: str = "outcome"
    normaliser: str = "constant"
    parent_hash: str = ""
    meta: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.trajectories)


def child_seed(seed: int, i: int) -> int:
    """The policy seed of child ``i`` of a group with ``seed``: distinct across children and
    groups, a function of (seed, i) alone."""
    return int.from_bytes(hashlib.sha256(f"simweb-group:{seed}:{i}".encode()).digest()[:7], "big")


def trajectory_reward(verdict: dict | None, mode: str) -> float:
    """A finished trajectory's reward: ``outcome`` (1 for a clean success) or ``progress``
    (the final clean progress)."""
    if mode == "outcome":
        return 1.0 if verdict and verdict.get("success") and verdict.get("clean") else 0.0
    return potential(verdict) if verdict else 0.0


def advantages(rewards: Sequence[float], scale: str = "std") -> list[float]:
    """Group-normalised advantages (see the module docstring)."""
    if scale not in SCALES:
        raise GroupError(f"scale must be one of {', '.join(SCALES)}, not {scale!r}")
    n = len(rewards)
    if n == 0:
        return []
    mean = sum(rewards) / n
    centred = [r - mean for r in rewards]
    if scale == "none":
        return centred
    std = math.sqrt(sum(c * c for c in centred) / n)
    return [c / (std + EPS) for c in centred]


def step_weights(advs: Sequence[float], lengths: Sequence[int], normaliser: str = "constant",
                 constant: int | None = None) -> list[list[float]]:
    """The weight of every step of every trajectory (see the module docstring);
    ``constant`` is C for the ``constant`` normaliser (default: the longest trajectory)."""
    if normaliser not in NORMALISERS:
        raise GroupError(f"normaliser must be one of {', '.join(NORMALISERS)}, not {normaliser!r}")
    if normaliser == "trajectory":
        return [[a / n] * n if n else [] for a, n in zip(advs, lengths)]
    if normaliser == "step":
        total = sum(lengths) or 1
        return [[a / total] * n for a, n in zip(advs, lengths)]
    c = constant or max(lengths, default=1) or 1
    return [[a / c] * n for a, n in zip(advs, lengths)]


def _parent(source: Any, task_seed: int | None, world_seed: int, size: int | None) -> Any:
    """The env whose state the children fork: ``source`` itself (an env), an env restored
    to a snapshot, or an env reset to a task instance."""
    from .env import SimEnv

    if isinstance(source, SimEnv):
        return source
    if isinstance(source, dict):
        w = source.get("world") if isinstance(source.get("world"), dict) else None
        if w is None or not isinstance(w.get("app"), str):
            raise GroupError("a snapshot source needs its 'world' object (app, seed, size)")
        env = SimEnv(w["app"], int(w.get("seed", 0)), size=w.get("size"))
        env.restore(source)
        return env
    from ..judging.tasks import TaskInstance

    params = None
    if isinstance(source, TaskInstance):   # an instance: its template at its parameters
        source, params = source.id, source.params
    if isinstance(source, tuple) and len(source) == 2:
        source, task_seed = source
    if isinstance(source, str) and "/" in source:
        from ..runtime.registry import app_of_task

        env = SimEnv(app_of_task(source), world_seed, size=size)
        env.reset(seed=0 if task_seed is None else int(task_seed), options={"task": source, "params": params})
        return env
    raise GroupError(f"a group starts from an env, a snapshot dict, a task instance or a task id ('app/template'), not "
                     f"{type(source).__name__}")


def rollout_group(source: Any, policy: Any, n: int, *, seed: int = 0, task_seed: int | None = None,
                  max_steps: int | None = None, reward: str = "outcome", normaliser: str = "constant",
                  scale: str = "std", world_seed: int = 0, size: int | None = None,
                  policy_options: dict[str, Any] | None = None, first_child: int = 0,
                  lean: bool = False) -> GroupResult:
    """Fork ``source`` ``n`` times, run ``policy`` in each child, and return the group.

    ``source``: a :class:`simweb.env.SimEnv` (forked at its current state, left untouched),
    a snapshot dict (``env.snapshot()``, a saved state file's content), a task id
    (``"forum/create_post"``, with ``task_seed``; or a ``(task_id, task_seed)`` pair), or a
    :class:`simweb.tasks.TaskInstance` (``env.task``: its template at its parameters, with
    ``task_seed``),
    reset once on world ``world_seed``. ``policy``: a :class:`simweb.policy.Policy`, a
    built-in agent name or an import path (:func:`simweb.policy.load_policy`). Child ``i``'s
    policy seed is :func:`child_seed` (``seed``, i). ``max_steps`` bounds each child's
    steps (default: the rest of the episode's budget). ``reward``, ``normaliser``,
    ``scale``: see the module docstring. ``first_child``: the index of the first child (a
    group split over workers: each part rolls out its own children, and
    :func:`regroup` computes the advantages over the whole group). ``lean``: the children's
    observations are recorded without their AX-tree text (:func:`simweb.rollout.run_episode`)."""
    from .policy import load_policy

    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise GroupError(f"a group needs at least 1 rollout, not {n!r}")
    if reward not in REWARDS:
        raise GroupError(f"reward must be one of {', '.join(REWARDS)}, not {reward!r}")
    if normaliser not in NORMALISERS:
        raise GroupError(f"normaliser must be one of {', '.join(NORMALISERS)}, not {normaliser!r}")
    if scale not in SCALES:
        raise GroupError(f"scale must be one of {', '.join(SCALES)}, not {scale!r}")
    agent = load_policy(policy, seed, **(policy_options or {}))
    parent = _parent(source, task_seed, world_seed, size)
    parent_hash = parent.state_hash()
    instance_seed = int(parent.state["meta"]["rng"]["seed"])
    budget = parent.max_steps - parent.episode.step_count
    limit = max(0, budget) if max_steps is None else int(max_steps)
    trajectories, rewards = [], []
    for i in range(first_child, first_child + n):
        child = parent.fork()
        traj = run_episode(child, agent, task=None, seed=instance_seed, max_steps=limit, reset=False,
                           policy_seed=child_seed(seed, i), lean=lean)
        traj.header.update(group_seed=seed, child=i, parent_hash=parent_hash, budget=parent.max_steps)
        verdict = child.verdict()
        trajectories.append(traj)
        rewards.append(trajectory_reward(verdict, reward))
    advs = advantages(rewards, scale)
    weights = step_weights(advs, [len(t.steps) for t in trajectories], normaliser,
                           constant=parent.max_steps if normaliser == "constant" else None)
    return GroupResult(trajectories, rewards, advs, weights, reward, normaliser, parent_hash,
                       {"task": parent.task.id if parent.task else None, "instance_seed": instance_seed, "seed": seed})


def regroup(trajectories: list[Trajectory], rewards: list[float], *, normaliser: str = "constant",
            scale: str = "std", budget: int | None = None) -> GroupResult:
    """A group's advantages and step weights from its children's trajectories and rewards,
    however they were rolled out (parts of a group on several workers)."""
    advs = advantages(rewards, scale)
    budget = budget or max((int(t.header.get("budget") or 0) for t in trajectories), default=0) or None
    weights = step_weights(advs, [len(t.steps) for t in trajectories], normaliser,
                           constant=budget if normaliser == "constant" else None)
    head = trajectories[0].header if trajectories else {}
    return GroupResult(trajectories, list(rewards), advs, weights, normaliser=normaliser,
                       parent_hash=str(head.get("parent_hash", "")), meta={"task": head.get("task")})
