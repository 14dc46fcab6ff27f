"""simweb as a gymnasium env, checked with gymnasium's own tools: check_env (render check
included), make_vec in sync and async mode, seeds drawn from np_random, tasks sampled from
a distribution, and envs that pickle."""
from __future__ import annotations

import pickle
import warnings

import gymnasium
import pytest
from gymnasium.utils.env_checker import check_env

import simweb
from simweb.episodes.env import TaskError


def test_check_env_passes_with_the_render_check(app_name):
    env = simweb.make(app_name)
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # gymnasium reports most problems as warnings
        check_env(env)                   # default: the render check of every declared mode
    for mode in ("html", "ansi"):
        e = gymnasium.make(f"simweb/{app_name}-v0", render_mode=mode)
        e.reset(seed=1)
        out = e.render()
        assert isinstance(out, str) and (out.lstrip().startswith("<") if mode == "html" else "RootWebArea" in out)
    with pytest.raises(ValueError, match="render_mode"):
        simweb.make(app_name, render_mode="rgb_array")


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_make_vec_gives_distinct_instances(mode):
    vec = gymnasium.make_vec("simweb/forum-v0", num_envs=3, vectorization_mode=mode)
    try:
        obs, info = vec.reset(seed=11)
        goals = list(obs["goal"])
        assert len(set(goals)) == 3 and all(goals)
        obs, reward, terminated, truncated, info = vec.step(["noop()"] * 3)
        assert list(obs["step"]) == [1, 1, 1] and len(obs["axtree"]) == 3
        assert all(a.startswith("RootWebArea") for a in obs["axtree"])
        again, _ = vec.reset(seed=11)
        assert list(again["goal"]) == goals          # seeded: the same instances
    finally:
        vec.close()


def test_reset_without_a_seed_draws_the_next_instance_from_np_random():
    env = simweb.make("forum")
    env.reset(seed=5)
    draws = [(env.reset()[1]["task"]["id"], env.state_hash()) for _ in range(4)]
    assert len(set(draws)) == 4                       # never seed 0 every time
    env.reset(seed=5)
    assert [(env.reset()[1]["task"]["id"], env.state_hash()) for _ in range(4)] == draws


def test_reset_without_a_task_samples_one_and_pays_for_it():
    env = simweb.make("forum")
    obs, info = env.reset(seed=3)
    assert obs["goal"] and info["task"]["id"].startswith("forum/") and info["verdict"] is not None
    assert env.oracle_plan()
    free, finfo = env.reset(seed=3, options={"task": None})   # free browsing is asked for explicitly
    assert free["goal"] == "" and finfo["verdict"] is None


def test_the_tasks_distribution_takes_ids_globs_and_difficulty():
    env = simweb.make("forum", tasks=["forum/save_post"])
    assert {env.reset(seed=s)[1]["task"]["id"] for s in range(5)} == {"forum/save_post"}
    globbed = simweb.make("forum", tasks="forum/*vote*")
    ids = {globbed.reset(seed=s)[1]["task"]["id"] for s in range(12)}
    assert ids and all("vote" in t for t in ids)
    hard = simweb.make("forum", tasks=["hard"])
    hard.reset(seed=0)
    assert {hard.reset()[1]["task"]["difficulty"] for _ in range(6)} == {"hard"}
    with pytest.raises(TaskError, match="matches"):
        simweb.make("forum", tasks=["forum/nothing*"])
    with pytest.raises(TaskError, match="unknown task"):
        simweb.make("forum", tasks=["forum/save_pots"])


def test_every_app_env_pickles_mid_episode(app_name):
    env = simweb.make(app_name)
    env.reset(seed=2)
    env.step("noop()")
    copy = pickle.loads(pickle.dumps(env))
    assert copy.state_hash() == env.state_hash() and copy.task.id == env.task.id
    assert copy.episode.step_count == env.episode.step_count == 1
    a = env.step(env.oracle_plan()[0])
    b = copy.step(copy.oracle_plan()[0])
    assert a[1:4] == b[1:4] and env.state_hash() == copy.state_hash()
    assert pickle.loads(pickle.dumps(env.fork())).state_hash() == env.state_hash()
