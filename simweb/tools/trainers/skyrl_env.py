"""simweb as a skyrl-gym text environment (``BaseTextEnv``), registered as ``simweb``.

    import simweb.trainers.skyrl_env           # registers the id "simweb" (register() again is a no-op)
    import skyrl_gym

    row = dataset_row("forum", "forum/upvote_post", seed=3)          # what a SkyRL dataset row holds
    env = skyrl_gym.make("simweb", env_config={"reward": "sparse"}, extras=row)
    conversation, meta = env.init(row["prompt"])                     # + the first observation
    out = env.step("```click('vote-up-123')```")                     # BaseTextEnvStepOutput

SkyRL's generator makes one env per trajectory with ``skyrl_gym.make(row["env_class"],
env_config=cfg.environment.skyrl_gym.simweb, extras=row)`` (``extras`` holds the row's
``reward_spec``, ``extra_info`` and ``max_turns``). ``extra_info`` names the instance:
``app``, ``task`` (omitted: drawn by the seed), ``seed``, ``prefix`` (actions played before
the episode is handed over) and ``world_seed``. Every env of one instance is a fork of one
root env in the process (:class:`simweb.textenv.GroupStarts`), so the ``n_samples_per_prompt``
trajectories of a GRPO group start from forks of one state.

``init`` appends the first observation (goal, page, AX tree, action syntax) to the row's
prompt as a user message; ``step(reply)`` reads the reply with the one reply parser
(:func:`simweb.textenv.parse_reply`; a reply that does not parse is an observation with the
reading error, the step counted), returns the next observation as a user message, and the
reward simweb's episode pays: with the default ``reward="sparse"``, 1 at the end for a clean
success and 0 at every other step (``"progress"`` pays the change of clean progress each
step). The episode ends when the agent sends its final message, at simweb's step budget,
or at ``max_turns``. ``get_metrics`` gives the verdict's success, progress and clean.
``env_config`` may set ``reward``, ``world_seed`` and ``max_axtree_chars``.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import skyrl_gym
from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput, ConversationType

from ...episodes.textenv import SYSTEM_PROMPT, GroupStarts, TextEnv

__all__ = ["ENV_ID", "SimwebTextEnv", "dataset_row", "register"]

#: The id the env is registered under.
ENV_ID = "simweb"

# One GroupStarts per reward mode in this process: the roots of every group.
_STARTS: dict[str, GroupStarts] = {}


def _starts(reward: str) -> GroupStarts:
    if reward not in _STARTS:
        _STARTS[reward] = GroupStarts(reward=reward)
    return _STARTS[reward]


def dataset_row(app: str, task: str | None, seed: int, *, prefix: list[str] | None = None, world_seed: int = 0,
                max_turns: int | None = None) -> dict[str, Any]:
    """A SkyRL dataset row for one task instance (the prompt is simweb's system message;
    the env appends the first observation)."""
    row: dict[str, Any] = {
        "env_class": ENV_ID,
        "prompt": [{"role": "system", "content": SYSTEM_PROMPT}],
        "reward_spec": {"method": "rule", "ground_truth": None},
        "extra_info": {"app": app, "task": task, "seed": seed, "prefix": list(prefix or []),
                       "world_seed": world_seed},
    }
    if max_turns is not None:
        row["max_turns"] = max_turns
    return row


class SimwebTextEnv(BaseTextEnv):
    """One trajectory on one simweb task instance (see the module doc)."""

    def __init__(self, env_config: Any = None, extras: Mapping[str, Any] | None = None):
        super().__init__()
        config: dict[str, Any] = dict(env_config or {})
        extras = dict(extras or {})
        info: dict[str, Any] = dict(extras.get("extra_info") or {})
        if "app" not in info or "seed" not in info:
            raise ValueError("simweb's SkyRL env needs extra_info with app and seed (see dataset_row)")
        reward = str(config.get("reward", "sparse"))
        world_seed = int(info.get("world_seed") or config.get("world_seed") or 0)
        env = _starts(reward).fork(str(info["app"]), info.get("task"), int(info["seed"]),
                                   tuple(info.get("prefix") or ()), world_seed=world_seed)
        self.text = TextEnv(env, max_axtree_chars=int(config.get("max_axtree_chars", 40_000)))
        turns = extras.get("max_turns", info.get("max_turns"))
        self.max_turns = int(turns) if turns is not None else int(env.max_steps)
        self.verdict: dict[str, Any] | None = None

    def init(self, prompt: ConversationType) -> tuple[ConversationType, dict[str, Any]]:
        first = self.text.start()
        return [*prompt, {"role": "user", "content": first.text}], {"goal": first.observation.get("goal", "")}

    def step(self, action: str) -> BaseTextEnvStepOutput:
        self.turns += 1
        got = self.text.step(action)
        done = got.done or self.turns >= self.max_turns
        self.verdict = got.info.get("verdict")
        return BaseTextEnvStepOutput(
            observations=[] if done else [{"role": "user", "content": got.text}],
            reward=got.reward, done=done, postprocessed_action=got.action,
            metadata={"last_action_error": got.observation.get("last_action_error", ""), "verdict": self.verdict})

    def get_metrics(self) -> dict[str, Any]:
        v = self.verdict or {}
        return {"success": float(bool(v.get("success"))), "progress": float(v.get("progress") or 0.0),
                "clean": float(bool(v.get("clean", True))), "steps": self.turns}

    def close(self) -> None:
        self.verdict = None


def register() -> None:
    """Register ``simweb`` in skyrl-gym's registry (idempotent)."""
    if ENV_ID not in skyrl_gym.registry:
        skyrl_gym.register(id=ENV_ID, entry_point="simweb.trainers.skyrl_env:SimwebTextEnv")


register()
