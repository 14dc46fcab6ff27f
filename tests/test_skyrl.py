"""simweb's skyrl-gym BaseTextEnv (the extra `skyrl`), made through skyrl_gym.make as SkyRL's
generator makes it: an episode to the reward at the end, a reply that does not parse, the
turn limit, and a group of forks of one state that compares actions."""
from __future__ import annotations

import pytest

skyrl_gym = pytest.importorskip("skyrl_gym", reason="needs the skyrl extra: pip install -e '.[skyrl]'")

import simweb  # noqa: E402
from simweb.tools.trainers.skyrl_env import ENV_ID, SimwebTextEnv, dataset_row  # noqa: E402

pytestmark = pytest.mark.apps("forum")

TASK, SEED = "forum/upvote_post", 3


def _plan() -> list[str]:
    env = simweb.make("forum")
    env.reset(seed=SEED, options={"task": TASK})
    return env.oracle_plan()


def _make(**kw) -> tuple[SimwebTextEnv, list]:
    row = dataset_row("forum", TASK, SEED, **kw)
    env = skyrl_gym.make(row["env_class"], env_config={"reward": "sparse"}, extras=row)
    assert isinstance(env, SimwebTextEnv)
    conversation, meta = env.init(row["prompt"])
    return env, conversation


def test_registered_and_an_episode_pays_at_the_end():
    assert ENV_ID in skyrl_gym.registry
    env, conversation = _make()
    assert [m["role"] for m in conversation] == ["system", "user"]
    assert "# Goal" in conversation[1]["content"] and "# Action syntax" in conversation[1]["content"]
    plan = _plan()
    rewards = []
    for i, action in enumerate(plan):
        out = env.step(f"Step {i}.\n```{action}```")
        rewards.append(out["reward"])
        assert out["postprocessed_action"] == action
        assert out["done"] == (i == len(plan) - 1)
        assert (out["observations"] == []) == out["done"]
    assert rewards[:-1] == [0.0] * (len(plan) - 1) and rewards[-1] == 1.0
    assert env.get_metrics() == {"success": 1.0, "progress": 1.0, "clean": 1.0, "steps": len(plan)}
    assert SimwebTextEnv.aggregate_metrics([env.get_metrics()])["success"] == 1.0


def test_unparsable_reply_and_turn_limit():
    env, _ = _make(max_turns=2)
    out = env.step("I am not sure what to do.")
    assert not out["done"] and out["reward"] == 0.0 and out["postprocessed_action"] is None
    assert out["metadata"]["last_action_error"] == "ValueError: Received an empty action."
    assert "Received an empty action" in out["observations"][0]["content"]
    out = env.step("go_back()")
    assert out["done"] and out["reward"] == 0.0                 # the turn limit ends it, unpaid


def test_a_group_is_forks_of_one_state_and_compares_actions():
    plan = _plan()
    group = [_make(prefix=plan[:1])[0] for _ in range(4)]
    hashes = {g.text.env.state_hash() for g in group}
    assert len(hashes) == 1 and group[0].text.env.state["meta"]["step"] == 1
    rewards = []
    for i, env in enumerate(group):
        actions = plan[1:] if i % 2 == 0 else ["send_msg_to_user('Done.')"]
        out = None
        for action in actions:
            out = env.step(action)
        assert out is not None and out["done"]
        rewards.append(out["reward"])
    assert rewards == [1.0, 0.0, 1.0, 0.0]
    with pytest.raises(ValueError, match="extra_info with app and seed"):
        skyrl_gym.make(ENV_ID, env_config={}, extras={"extra_info": {}})
