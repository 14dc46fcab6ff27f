"""A scripted agent for browsergym-experiments and AgentLab: fixed simweb plans, by goal.

:class:`PlanAgentArgs` is an agent-args dataclass in browsergym-experiments' shape
(``AbstractAgentArgs``, with the ``set_benchmark`` / ``set_reproducibility_mode`` hooks
AgentLab calls on its own ``AgentArgs``): its agent looks the episode's goal up in a table
of plans and sends that plan's actions one per step, each rewritten for the page of the
observation (:func:`simweb.browsergym.actions.from_observation`), then stops (``None``).
:func:`plan_agent_args` fills the table for a benchmark's instances with simweb's oracle
(or random agent) run in-process, so a study over simweb tasks can be run and scored end
to end with no model. It is a harness check, not an agent to evaluate: it reads nothing
but the goal to choose its script.

Plans are a tuple of ``(goal, actions)`` pairs, not a dict: AgentLab flattens nested
dicts of an agent's arguments into result columns, and wants them hashable.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from browsergym.experiments.agent import Agent
from browsergym.experiments.loop import AbstractAgentArgs

from .actions import elements_of, rewrite
from .benchmark import ACTION_SET
from .task import simweb_id


class PlanAgent(Agent):
    """Sends the plan of its goal (see the module docstring)."""

    def __init__(self, plans: dict[str, tuple[str, ...]]):
        self.plans = plans
        self.action_set = ACTION_SET.make_action_set()
        self.i = 0

    def obs_preprocessor(self, obs: dict) -> Any:
        # Only what the rewrite needs, under one key: the experiment loops count the tokens
        # of every top-level string of the observation (with tiktoken, which downloads its
        # encoding on first use), and a script reads no tokens.
        return {"page": {"goal": obs["goal"], "url": obs["url"], "elements": elements_of(obs["dom_object"])}}

    def get_action(self, obs: Any) -> tuple[str | None, dict[str, Any]]:
        # The info is a dict, which both experiment loops read like their AgentInfo and can
        # also write to (they add err_msg to it when an episode fails).
        page = obs["page"]
        plan = self.plans.get(page["goal"])
        if plan is None:
            return None, {"think": "no plan for this goal", "stats": {}}
        if self.i >= len(plan):
            return None, {"think": "plan done", "stats": {}}
        elements = page["elements"]
        action = rewrite(plan[self.i], lambda b: elements[b][0] if b in elements else None,
                         lambda b: elements[b][1] if b in elements else None, page["url"])
        self.i += 1
        return action, {"think": f"step {self.i} of {len(plan)}: {plan[self.i - 1]}", "stats": {}}


@dataclass
class PlanAgentArgs(AbstractAgentArgs):
    """The arguments of a :class:`PlanAgent`: ``plans``, ((goal, (action, ...)), ...)."""

    agent_name: str = "simweb-plan"
    plans: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def make_agent(self) -> PlanAgent:
        return PlanAgent(dict(self.plans))

    def set_benchmark(self, benchmark: Any, demo_mode: bool) -> None:
        """AgentLab's hook (its agents adapt to a benchmark): a plan needs nothing."""

    def set_reproducibility_mode(self) -> None:
        """AgentLab's hook: a fixed plan is already deterministic."""


def plan_agent_args(env_args_list: list[Any], agent: str = "oracle", *, name: str | None = None) -> PlanAgentArgs:
    """Plans for every (task, seed) of ``env_args_list`` (a benchmark's ``env_args_list``):
    the actions simweb's ``agent`` (oracle or random) takes in-process on that instance,
    within the env args' ``max_steps``. Two instances with the same goal must have the
    same plan (ValueError otherwise)."""
    from ...agents import make_agent
    from ...episodes.env import SimEnv
    from ...episodes.rollout import run_episode

    plans: dict[str, tuple[str, ...]] = {}
    envs: dict[str, Any] = {}
    for ea in env_args_list:
        task = simweb_id(ea.task_name)
        app = task.split("/", 1)[0]
        env = envs.get(app) or envs.setdefault(app, SimEnv(app))
        env.max_steps_override = ea.max_steps
        traj = run_episode(env, make_agent(agent, int(ea.task_seed)), task=task, seed=int(ea.task_seed))
        goal = env.task.goal
        actions = tuple(s["action"] for s in traj.steps)
        if plans.get(goal, actions) != actions:
            raise ValueError(f"two instances share the goal {goal[:80]!r} with different plans")
        plans[goal] = actions
    return PlanAgentArgs(agent_name=name or f"simweb-{agent}-plan", plans=tuple(plans.items()))


__all__ = ["PlanAgent", "PlanAgentArgs", "plan_agent_args"]
