"""The episode options as gymnasium wrappers (simweb.wrappers) against the constructor
switches: on the same seed and actions, the same observations, rewards, terminations and
truncations, step for step; and gymnasium's own check_env on the wrapped env."""
from __future__ import annotations

import warnings
from typing import Any

import pytest
from gymnasium.utils.env_checker import check_env

import simweb
from simweb.agents import make_agent
from simweb.episodes.wrappers import EndOnSuccess, ProgressReward, StepBudget


def _actions(env: Any, task: str, seed: int) -> list[str]:
    """A random walk's first steps, then the oracle's plan, then more random steps: a
    trajectory that fails, recovers, succeeds (before its final answer) and goes on."""
    env.reset(seed=seed, options={"task": task})
    plan = list(env.oracle_plan())
    agent = make_agent("random", seed=seed)
    agent.reset(env, seed=seed)
    obs, _ = env.reset(seed=seed, options={"task": task})
    walk = []
    for _ in range(4):
        a = agent.act(obs)
        if a.startswith(("send_msg_to_user", "report_infeasible")):
            continue
        walk.append(a)
    return walk + plan[:-1] + walk + plan[-1:]


def _run(env: Any, task: str, seed: int, actions: list[str]) -> list[tuple[Any, ...]]:
    obs, info = env.reset(seed=seed, options={"task": task})
    out: list[tuple[Any, ...]] = [("reset", obs["axtree"], info["verdict"])]
    for a in actions:
        obs, r, term, trunc, info = env.step(a)
        out.append((a, obs["axtree"], round(float(r), 9), term, trunc))
        if term or trunc:
            break
    return out


def _state_task(env: Any) -> str:
    return sorted(t for t, tpl in env.app.tasks.items() if tpl.kind == "state")[0]


@pytest.mark.parametrize("app", ["shopping", "forum"])
@pytest.mark.parametrize("reward", ["sparse", "progress"])
def test_wrappers_give_the_switches_trajectories(app, reward):
    probe = simweb.make(app)
    task = _state_task(probe)
    seed = 3
    actions = _actions(probe, task, seed)
    for end, budget in ((True, None), (False, 6), (True, 6), (False, 400)):
        switch = simweb.make(app, reward=reward, end_on_success=end, max_steps=budget)
        wrapped: Any = simweb.make(app)
        if budget is not None:
            wrapped = StepBudget(wrapped, budget)
        if reward == "progress":
            wrapped = ProgressReward(wrapped)
        if end:
            wrapped = EndOnSuccess(wrapped)
        a, b = _run(switch, task, seed, actions), _run(wrapped, task, seed, actions)
        assert a == b, (end, budget)
        last = a[-1]
        if budget == 6:
            assert len(a) == 7 and last[4] is True          # truncated at the budget
        elif end:
            assert last[3] is True and len(a) < len(actions) + 1   # ended at success, before the answer


def test_end_on_success_in_either_order_pays_the_sparse_end_once():
    env = simweb.make("shopping")
    task = _state_task(env)
    plan = (env.reset(seed=1, options={"task": task}), list(env.oracle_plan()))[1]
    wrapped: Any
    for wrapped in (EndOnSuccess(simweb.make("shopping")), ProgressReward(EndOnSuccess(simweb.make("shopping"))),
                    EndOnSuccess(ProgressReward(simweb.make("shopping")))):
        wrapped.reset(seed=1, options={"task": task})
        rewards: list[float] = []
        for a in plan:
            _, r, term, _, _ = wrapped.step(a)
            rewards.append(float(r))
            if term:
                break
        assert term and sum(rewards) == pytest.approx(1.0)
        state = wrapped.unwrapped.state_hash() if hasattr(wrapped.unwrapped, "state_hash") else None
        _, r, term, trunc, info = wrapped.step(plan[0])          # after the end: nothing runs, nothing paid
        assert (r, term, trunc, info.get("episode_over")) == (0.0, True, False, True)
        if state is not None:
            assert wrapped.unwrapped.state_hash() == state


def test_step_budget_lengthens_past_the_rule_and_rejects_nonsense():
    env = StepBudget(simweb.make("forum"), 500)
    env.reset(seed=0)
    sim: Any = env.unwrapped
    assert sim.max_steps == 500
    with pytest.raises(ValueError, match="at least 1"):
        StepBudget(simweb.make("forum"), 0)


def test_check_env_passes_on_the_wrapped_env():
    env = EndOnSuccess(ProgressReward(StepBudget(simweb.make("shopping"), 20)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")        # gymnasium reports most problems as warnings
        # but this one only says that a wrapped env is being checked, which is the point
        warnings.filterwarnings("ignore", message=".*different from the unwrapped version")
        check_env(env, skip_render_check=True)
