"""One episode object for every backend, one task model, and the step budget that
gymnasium's spec carries."""
from __future__ import annotations

from typing import Any

import gymnasium
import pytest
from conftest import APPS

import simweb
import simweb.judging.tasks as sim_tasks
import simweb.live.tasks as live_tasks
from simweb.episodes.episode import EPISODE_OVER, Episode, TaskError, find_task
from simweb.judging.taskmodel import MAX_EPISODE_STEPS, STEP_BUDGETS, episode_budget
from simweb.runtime.registry import step_cap


class ChatBackend:
    """A backend with no site: it records what it was asked to run, and an answer."""

    viewport = None

    def __init__(self) -> None:
        self.ran: list[str] = []
        self.chat: list[dict[str, str]] = []

    def execute(self, action: str) -> str | None:
        self.ran.append(action)
        if action.startswith("send_msg_to_user("):
            self.chat.append({"role": "assistant", "message": action[18:-2]})
        return "no such element" if action.startswith("click(") else None

    def state(self) -> dict:
        return {"browser": {"chat": self.chat}}

    def observe(self, state: dict) -> dict[str, Any]:
        return {"url": "about:blank", "html": "", "axtree": "RootWebArea ''", "open_pages_urls": ["about:blank"],
                "active_page_index": 0, "focused_element_bid": ""}

    def page_info(self, state: dict) -> dict[str, Any]:
        return {"page": None, "status": 200}


# ----------------------------------------------------------------------------- the budget rule

@pytest.mark.parametrize("bucket, plan, cap, budget", [
    ("easy", 0, None, 30), ("medium", 0, None, 50), ("hard", 0, None, 70),
    ("easy", 20, None, 40),          # at least twice the oracle's plan
    ("hard", 42, None, 84), ("hard", 42, 80, 80),   # the app's cap bounds it
    (None, 0, None, 50),             # free browsing
])
def test_one_budget_rule(bucket, plan, cap, budget):
    assert episode_budget(bucket, plan, cap=cap) == budget


def test_the_budget_of_a_split_is_webgyms():
    assert episode_budget("medium", split="train", cap=None) == STEP_BUDGETS["train"]["medium"] == 20
    with pytest.raises(ValueError, match="unknown split 'dev'"):
        episode_budget("easy", split="dev")


def test_one_task_model_for_synthetic_and_live_tasks():
    assert sim_tasks.FactGroup is live_tasks.FactGroup
    assert sim_tasks.STEP_BUDGETS is live_tasks.STEP_BUDGETS
    group = sim_tasks.FactGroup("g", "the answer", ("42",))
    assert group.to_json() == group.to_dict() == {"id": "g", "description": "the answer", "facts": ["42"]}
    task = live_tasks.to_webgym("t", "goal", "https://e.org", [group])
    assert task.evaluator_reference == (group,) and task.step_budget() == episode_budget("easy")


# ----------------------------------------------------------------------------- the episode object

def test_an_answer_ends_the_episode_and_a_later_step_runs_nothing():
    backend, episode = ChatBackend(), Episode(None, max_steps=5)
    episode.begin(None, None, None, goal="say hi")
    obs, reward, terminated, truncated, info = episode.step(backend, "click('x')")
    assert obs["last_action_error"] == "no such element" and obs["goal"] == "say hi" and obs["step"] == 1
    assert (reward, terminated, truncated) == (0.0, False, False) and info["verdict"] is None
    obs, reward, terminated, truncated, _ = episode.step(backend, "send_msg_to_user('hi')")
    assert terminated and not truncated and obs["chat_messages"] == [{"role": "assistant", "message": "hi"}]
    obs, reward, terminated, truncated, info = episode.step(backend, "click('y')")
    assert backend.ran == ["click('x')", "send_msg_to_user('hi')"]   # the action was not run
    assert obs["last_action_error"] == EPISODE_OVER and info["episode_over"] and terminated and reward == 0.0


def test_the_budget_truncates_once():
    backend, episode = ChatBackend(), Episode(None, max_steps=2)
    episode.begin(None, None, None)
    assert episode.step(backend, "noop()")[2:4] == (False, False)
    assert episode.step(backend, "noop()")[2:4] == (False, True)
    assert episode.step(backend, "noop()")[4]["episode_over"] and backend.ran == ["noop()", "noop()"]


def test_the_cap_bounds_a_long_plan_and_max_steps_replaces_the_rule():
    episode = Episode(None, cap=60)
    episode.begin(None, None, None, budget=84)
    assert episode.max_steps == 60
    episode.max_steps_override = 7
    assert episode.max_steps == 7


def test_a_bad_reward_mode_is_refused():
    with pytest.raises(ValueError, match="reward must be 'sparse' or 'progress'"):
        Episode(None, reward="dense")


def test_task_lookup_says_did_you_mean(env_of, app_name):
    app = env_of(app_name).app
    task = sorted(app.tasks)[0]
    assert find_task(app, task) is app.tasks[task]
    with pytest.raises(TaskError, match=f"did you mean '{task}'"):
        find_task(app, task + "x")
    other = next((a for a in simweb.app_names() if a != app_name), None)
    if other is not None:
        with pytest.raises(TaskError, match=f"belongs to app '{other}'"):
            find_task(app, f"{other}/anything")


# ----------------------------------------------------------------------------- gymnasium's spec

def test_the_gymnasium_spec_carries_the_step_budget(app_name):
    spec = gymnasium.spec(f"simweb/{app_name}-v0")
    assert spec.max_episode_steps == step_cap(app_name) == MAX_EPISODE_STEPS


def test_the_env_and_timelimit_end_an_episode_at_the_same_step(env_of, app_name):
    """Every episode budget of the app is within the spec's; an idle episode is truncated by
    the env itself (its own episode-over rule applies) at its budget."""
    cap = gymnasium.spec(f"simweb/{app_name}-v0").max_episode_steps
    env = env_of(app_name)
    for task in sorted(env.app.tasks):
        env.reset(seed=0, options={"task": task})
        assert env.max_steps <= cap, task
    wrapped = gymnasium.make(f"simweb/{app_name}-v0")
    task = sorted(env.app.tasks)[0]
    wrapped.reset(seed=0, options={"task": task})
    inner: Any = wrapped.unwrapped   # the SimEnv under gymnasium's wrappers
    steps = 0
    while True:
        steps += 1
        _, _, terminated, truncated, _ = wrapped.step("noop()")
        if terminated or truncated:
            break
    assert truncated and not terminated and steps == inner.max_steps
    assert inner.episode.ended == (False, True)   # the env ended it, not only the wrapper
    wrapped.close()


@pytest.mark.parametrize("app", APPS[:1])
def test_a_smaller_max_steps_is_honoured_by_the_env(app):
    env = simweb.make(app, seed=0, max_steps=3)
    env.reset(seed=0, options={"task": sorted(env.app.tasks)[0]})
    flags = [env.step("noop()")[2:4] for _ in range(3)]
    assert flags == [(False, False), (False, False), (False, True)]
    obs, *_ = env.step("noop()")
    assert obs["last_action_error"] == EPISODE_OVER
