"""The env contract, for every registered app: oracle success, random failure, schema
validity under any action sequence, fork/replay equality, snapshot/restore, determinism
across processes, refusal of foreign states, and bad actions as observations."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import gymnasium
import pytest
from conftest import APPS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import simweb
from simweb.core.state import StateError, state_hash
from simweb.tools import check

ORACLE_SEEDS = tuple(range(20))   # every template keeps a clean oracle over 20 instances


def _all_tasks():
    return [(a, t) for a in APPS for t in simweb.make(a, seed=0).app.tasks]


def run_plan(env, actions):
    verdict, obs = None, None
    for a in actions:
        obs, reward, terminated, truncated, info = env.step(a)
        assert obs["last_action_error"] == "", f"{a}: {obs['last_action_error']}"
        verdict = info["verdict"]
        if terminated or truncated:
            break
    return verdict, obs


@pytest.mark.parametrize("app,task", _all_tasks())
def test_oracle_reaches_clean_success(env_of, app, task):
    assert check.check_oracle(env_of(app), task, ORACLE_SEEDS) == []


@pytest.mark.parametrize("app,task", _all_tasks())
def test_reset_verdict_starts_at_zero(env_of, app, task):
    env = env_of(app)
    _, info = env.reset(seed=0, options={"task": task})
    assert info["verdict"]["success"] is False
    assert info["verdict"]["progress"] == 0.0 and info["verdict"]["clean"] is True
    assert info["task"]["difficulty"] in ("easy", "medium", "hard")


def test_templates_cover_every_difficulty(env_of, app_name):
    """Enough templates, every difficulty, and an intended effect for each (the app's limits)."""
    assert check.check_templates(env_of(app_name)) == []


def test_task_parameters_vary_with_the_seed(env_of, app_name):
    env = env_of(app_name)
    for tid, t in env.app.tasks.items():
        params = {json.dumps(t.instantiate(env.app, s).params, sort_keys=True) for s in range(8)}
        assert len(params) >= 4, tid


def test_random_agent_almost_never_succeeds(env_of, app_name):
    assert check.check_random_agent(env_of(app_name), (0, 1)) == []


def test_the_checks_catch_a_broken_app(env_of, monkeypatch):
    """check_app's checks can fail: a template whose oracle does nothing, a random agent
    limit of zero on an app where it sometimes wins, a fork that leaks into its parent."""
    env = env_of("issues")
    template = env.app.tasks["issues/close_issue"]
    monkeypatch.setattr(type(template), "oracle", lambda self, app, p: ["noop()"])
    assert check.check_oracle(env, "issues/close_issue", (0,)) == [
        "issues/close_issue seed 0: not a clean success (issue #79 state = 'closed')"]
    monkeypatch.setattr(type(env), "fork", lambda self: self)
    assert check.check_fork_replay(env, "issues/close_issue", 0)


# ----------------------------------------------------------------------------- invariants

def _action_for(obs, choice: int, text: str) -> str:
    bids = [ln.split("]")[0].split("[")[1] for ln in obs["axtree"].splitlines() if "[" in ln and "]" in ln]
    kind = choice % 9
    if kind == 0 or not bids:
        return ["go_back()", "go_forward()", "noop()", "new_tab()", "tab_close()", "tab_focus(0)",
                "scroll(0, 300)", "goto('/nope')", "goto('/cart')"][choice % 9]
    bid = bids[choice % len(bids)]
    return {1: f"click({bid!r})", 2: f"click({bid!r})", 3: f"fill({bid!r}, {text!r})",
            4: f"select_option({bid!r}, {text!r})", 5: f"check({bid!r})", 6: f"press({bid!r}, 'Enter')",
            7: "click('no-such-bid')", 8: text}[kind]


action_seq = st.lists(st.tuples(st.integers(0, 10_000), st.sampled_from(
    ["", "1", "42", "abc", "x" * 300, "<script>", "M", "Black", "4111 1111 1111 1111", "click(", "fill('a')"])),
    min_size=1, max_size=20)


@pytest.mark.parametrize("app", APPS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seq=action_seq, seed=st.integers(0, 5))
def test_any_action_sequence_keeps_the_state_valid(env_of, app, seq, seed):
    env = env_of(app)
    tid = sorted(env.app.tasks)[seed % len(env.app.tasks)]
    obs, _ = env.reset(seed=seed, options={"task": tid})
    assert env.app.validator.errors(env.state) == []
    for choice, text in seq:
        obs, reward, terminated, truncated, info = env.step(_action_for(obs, choice, text))
        assert isinstance(obs["last_action_error"], str)
        assert env.app.validator.errors(env.state) == []
        json.dumps(env.state)
        if terminated or truncated:
            break


@pytest.mark.parametrize("app", APPS)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seq=action_seq, cut=st.integers(0, 20))
def test_fork_then_replay_equals_original(env_of, app, seq, cut):
    env = env_of(app)
    tid = sorted(env.app.tasks)[cut % len(env.app.tasks)]
    obs, _ = env.reset(seed=cut, options={"task": tid})
    actions = []
    for choice, text in seq:
        a = _action_for(obs, choice, text)
        actions.append(a)
        obs, *_ = env.step(a)
    # Replay the same actions, forking at `cut`: the fork must continue identically.
    env.reset(seed=cut, options={"task": tid})
    k = min(cut, len(actions))
    for a in actions[:k]:
        env.step(a)
    parent_hash = env.state_hash()
    child = env.fork()
    assert child.state_hash() == parent_hash
    for a in actions[k:]:
        child.step(a)
    assert env.state_hash() == parent_hash          # the fork's steps never reach its parent
    for a in actions[k:]:
        env.step(a)
    assert env.state_hash() == child.state_hash()   # fork + replay = original run


def test_fork_shares_world_but_not_state(env_of, app_name):
    env = env_of(app_name)
    tid = sorted(env.app.tasks)[0]
    env.reset(seed=0, options={"task": tid})
    child = env.fork()
    assert child.app is env.app and child.app.world is env.app.world
    child.state["runtime"]["counters"]["probe"] = 1
    assert "probe" not in env.state["runtime"]["counters"]


def test_snapshot_restore_round_trip(env_of, app_name):
    env = env_of(app_name)
    tid = sorted(env.app.tasks)[-1]
    env.reset(seed=4, options={"task": tid})
    plan = env.oracle_plan()
    for a in plan[: len(plan) // 2]:
        env.step(a)
    snap = env.snapshot()
    json.loads(json.dumps(snap))
    rest = plan[len(plan) // 2:]
    for a in rest:
        env.step(a)
    end_hash = env.state_hash()
    env.restore(snap)
    assert env.snapshot() == snap
    for a in rest:
        env.step(a)
    assert env.state_hash() == end_hash
    # A fresh env restored from the snapshot rebuilds the task and its verdicts.
    other = simweb.make(app_name, seed=0)
    other.restore(snap)
    assert other.task.id == tid and other.state_hash() == state_hash(snap)


def test_foreign_states_are_refused(env_of, app_name):
    env = env_of(app_name)
    env.reset(seed=0, options={"task": None})
    snap = env.snapshot()
    bad_world = json.loads(json.dumps(snap))
    bad_world["world"]["hash"] = bad_world["meta"]["world_hash"] = "0" * 64
    with pytest.raises(StateError, match="another world"):
        env.restore(bad_world)
    bad_spec = json.loads(json.dumps(snap))
    bad_spec["meta"]["spec_hash"] = "f" * 64
    with pytest.raises(StateError, match="another .* spec"):
        env.restore(bad_spec)
    bad_schema = json.loads(json.dumps(snap))
    bad_schema["browser"]["tabs"] = []
    with pytest.raises(StateError, match=r"invalid state at \$\.browser\.tabs"):
        env.restore(bad_schema)
    assert env.snapshot() == snap   # a refused restore leaves the env as it was


def test_same_seed_same_actions_same_bytes(env_of, app_name):
    env = env_of(app_name)
    tid = sorted(env.app.tasks)[2]
    runs = []
    for _ in range(2):
        obs, _ = env.reset(seed=7, options={"task": tid})
        trace = [obs["axtree"]]
        for a in env.oracle_plan():
            obs, *_ = env.step(a)
            trace.append(obs["html"] + obs["axtree"])
        runs.append((env.state_hash(), trace))
    assert runs[0] == runs[1]


def test_random_codes_come_from_the_state_generator(env_of):
    env = env_of("shopping")
    codes = []
    for seed in (5, 5, 6):
        env.reset(seed=seed, options={"task": "shopping/buy_product"})
        counter = env.state["meta"]["rng"]["counter"]
        run_plan(env, env.oracle_plan())
        order = [o for o in env.state["runtime"]["entities"]["orders"].values()][0]
        assert env.state["meta"]["rng"]["counter"] == counter + 1
        codes.append(order["confirmation"])
        assert f"confirmation {order['confirmation']}" in env.render()
    assert codes[0] == codes[1] and codes[0] != codes[2] and len(codes[0]) == 10


SCRIPT = """
import json, sys, simweb
out = {}
for app in sys.argv[1:]:
    env = simweb.make(app, seed=0)
    hashes = []
    for tid in sorted(env.app.tasks):
        env.reset(seed=3, options={"task": tid})
        for a in env.oracle_plan():
            env.step(a)
        hashes.append(env.state_hash())
    out[app] = hashes
print(json.dumps(out))
"""


def test_determinism_across_processes_and_hash_seeds():
    outs = []
    for hs in ("0", "12345", "random"):
        env = dict(os.environ, PYTHONHASHSEED=hs)
        res = subprocess.run([sys.executable, "-c", SCRIPT, *APPS], capture_output=True, text=True, env=env, timeout=600)
        assert res.returncode == 0, res.stderr[-2000:]
        outs.append(json.loads(res.stdout))
    assert outs[0] == outs[1] == outs[2]


# ----------------------------------------------------------------------------- actions

@pytest.mark.parametrize("action,needle", [
    ("click('no-such-bid-xyz')", "Could not find element"),
    ("clik('a')", "did you mean"),
    ("click(", "syntax"),
    ("", "mpty"),
    ("fill('nav-home', 'x')", "not an <input>"),
    ("mouse_click(10, 10)", "browser backend"),
    ("goto('https://example.org/')", "ERR_NAME_NOT_RESOLVED"),
    ("tab_focus(7)", "No tab"),
    ("click('a'); click('b')", "one action"),
])
def test_bad_actions_are_observations(env_of, action, needle):
    env = env_of("shopping")
    env.reset(seed=0, options={"task": "shopping/add_to_cart"})
    before = env.snapshot()["runtime"]
    obs, reward, terminated, truncated, info = env.step(action)
    assert needle.lower() in obs["last_action_error"].lower()
    assert env.snapshot()["runtime"] == before and not terminated


def test_gymnasium_registration(app_name):
    env = gymnasium.make(f"simweb/{app_name}-v0")
    obs, info = env.reset(seed=0, options={"task": None})
    assert obs["url"].startswith("http://") and obs["axtree"].startswith("RootWebArea")
    with pytest.raises(simweb.RegistryError, match="did you mean"):
        simweb.make(app_name[:-1] + "x")


def test_duplicate_registration_raises():
    with pytest.raises(simweb.RegistryError, match="already registered"):
        simweb.register(APPS[0], "somewhere:APP")


def test_gymnasium_env_checker_passes(app_name):
    from gymnasium.utils.env_checker import check_env

    env = simweb.make(app_name, seed=0)
    check_env(env, skip_render_check=True)   # raises on any API violation
    obs, info = env.reset(seed=1, options={"task": None})
    assert env.observation_space.contains(obs)


def test_rewards_sparse_and_progress(app_name):
    for mode in ("sparse", "progress"):
        env = simweb.make(app_name, seed=0, reward=mode)
        task = sorted(t for t, tpl in env.app.tasks.items() if tpl.kind == "state")[0]
        env.reset(seed=2, options={"task": task})
        rewards, done = [], False
        for a in env.oracle_plan():
            _, r, terminated, truncated, _ = env.step(a)
            rewards.append(r)
            done = terminated or truncated
            if done:
                break
        assert done and terminated
        assert sum(rewards) == pytest.approx(1.0)
        if mode == "sparse":
            assert rewards[-1] == 1.0 and all(r == 0.0 for r in rewards[:-1])


@pytest.mark.parametrize("entry_point, needle", [
    ("simweb.apps.no_such_app:APP", "ModuleNotFoundError"),
    ("simweb.apps.shopping:NOPE", "has no attribute 'NOPE'"),
    ("simweb.apps.shopping.world:APP", "is a str, not an AppDefinition"),
])
def test_an_app_that_cannot_load_is_a_one_line_registry_error(entry_point, needle):
    from simweb.runtime import registry

    registry._REGISTRY["broken_app"] = registry.Registration("broken_app", entry_point)
    try:
        with pytest.raises(simweb.RegistryError, match="app 'broken_app'") as exc:
            registry.definition("broken_app")
        assert needle in str(exc.value) and "\n" not in str(exc.value)
    finally:
        del registry._REGISTRY["broken_app"]


@pytest.mark.parametrize("app_name", APPS)
def test_info_task_is_a_fresh_copy_that_cannot_reach_the_verifier(app_name):
    """info['task'] was the task instance's own params dict in every step: editing one
    step's info changed the next step's and the params the verifier judges with."""
    from gymnasium.utils.passive_env_checker import data_shares_objects

    env = simweb.make(app_name, seed=0)
    tid = next(t for t in sorted(env.app.tasks) if env.app.tasks[t].kind != "info")
    _, info0 = env.reset(seed=1, options={"task": tid})
    params = dict(env.task.params)
    plan = env.oracle_plan()
    *_, info1 = env.step(plan[0])
    assert not data_shares_objects(info0, info1)
    info1["task"]["params"].clear()
    info1["task"]["evaluator_reference"].clear()
    assert env.task.params == params
    *_, info2 = env.step("noop()")
    assert info2["task"]["params"] == params and info2["task"]["evaluator_reference"]
    env.reset(seed=1, options={"task": tid})
    for a in plan:
        *_, info = env.step(a)
    assert info["verdict"]["success"]
