"""simweb's environments for TRL's GRPOTrainer(environment_factory=...), checked against the
hook's contract without torch: reset(**row) takes every dataset column and returns the
first observation's text; the public methods are the tools (documented for TRL's schema);
the oracle through the tools earns get_reward() == 1; a bad call raises (TRL feeds the
message back) and a call after the end runs nothing; a group is forks of one state; the
OpenEnv variant (through `simweb openenv`) gives the in-process texts and rewards. The
GRPO run itself needs torch: benchmarks/bench_trl.py runs examples/trl_grpo.py."""
from __future__ import annotations

import inspect
import re

import pytest

import simweb
from simweb.tools.trainers.trl_env import INSTRUCTION, SimwebToolEnv, task_dataset
from simweb.web.actions import ActionError, parse_action

pytestmark = pytest.mark.apps("forum")

TASK, SEED = "forum/upvote_post", 3
ROW = {"prompt": [{"role": "user", "content": INSTRUCTION}], "app": "forum", "task": TASK, "seed": SEED, "prefix": []}
TOOLS = {"click", "fill", "select_option", "check", "uncheck", "press", "goto", "go_back", "scroll",
         "send_msg_to_user", "report_infeasible"}


def _tools_of(cls: type) -> set[str]:
    # What TRL lists: functions on the class, minus reset, get_reward and private names.
    return {n for n, _ in inspect.getmembers(cls, predicate=inspect.isfunction)
            if n not in ("reset", "get_reward") and not n.startswith("_")}


def _plan() -> list[str]:
    env = simweb.make("forum")
    env.reset(seed=SEED, options={"task": TASK})
    return env.oracle_plan()


def _call(env, action: str) -> str:
    a = parse_action(action)
    args = [v for p, v in zip(a.spec.params, a.args) if p.required]
    return getattr(env, a.name)(*args)


def test_tools_are_browsergyms_named_actions_and_documented():
    assert _tools_of(SimwebToolEnv) == TOOLS
    for name in TOOLS:
        fn = getattr(SimwebToolEnv, name)
        params = [p for p in inspect.signature(fn).parameters if p != "self"]
        doc = inspect.getdoc(fn) or ""
        assert doc and all(re.search(rf"^\s+{p}: \S", doc, re.M) for p in params), name
    transformers = pytest.importorskip("transformers")
    for name in TOOLS:                   # the schema TRL builds (transformers' get_json_schema)
        schema = transformers.utils.get_json_schema(getattr(SimwebToolEnv(), name))
        assert schema["function"]["name"] == name


def test_oracle_through_the_tools_earns_the_reward():
    env = SimwebToolEnv(max_axtree_chars=1500)
    first = env.reset(**ROW)
    assert first.startswith("# Goal\n") and "is cut)" in first
    plan = _plan()
    for action in plan:
        text = _call(env, action)
    assert text.endswith("The episode is over.") and env.get_reward() == 1.0 and env.steps == len(plan)
    with pytest.raises(ValueError, match="episode is over"):
        env.click("post-up")
    env.reset(**ROW)                                             # reset starts over
    assert env.get_reward() == 0.0 and not env.done
    assert "no-such-bid" in env.click("no-such-bid")             # a missing element: the error text
    with pytest.raises(ActionError):
        env.scroll("down")  # type: ignore[arg-type]             # bad arguments: raised, TRL feeds it back
    assert env.send_msg_to_user("Done.").endswith("The episode is over.") and env.get_reward() == 0.0


def test_a_group_is_forks_of_one_state():
    group = [SimwebToolEnv() for _ in range(4)]
    for env in group:
        env.reset(**ROW)
    assert len({env.text.env.state_hash() for env in group if env.text}) == 1
    plan = _plan()
    for i, env in enumerate(group):
        for action in plan if i < 2 else plan[-1:]:
            _call(env, action)
    assert [env.get_reward() for env in group] == [1.0, 1.0, 0.0, 0.0]


def test_task_dataset_rows():
    pytest.importorskip("datasets")
    ds = task_dataset("forum", [TASK, "forum/save_post"], range(3))
    assert len(ds) == 6 and ds[0]["task"] == TASK and ds[5]["seed"] == 2


def test_openenv_variant_gives_the_in_process_texts_and_rewards():
    pytest.importorskip("openenv.core.env_client")
    from test_openenv import _start, _stop

    from simweb.tools.trainers.trl_env import SimwebOpenEnvToolEnv

    proc, url = _start("--max-sessions", "2")
    try:
        remote = SimwebOpenEnvToolEnv(url, max_axtree_chars=1500)
        local = SimwebToolEnv(max_axtree_chars=1500)
        assert remote.reset(**ROW) == local.reset(**ROW)
        assert _tools_of(SimwebOpenEnvToolEnv) == TOOLS
        for action in ["click('nope')", *_plan()]:
            assert _call(remote, action) == _call(local, action)
        assert remote.get_reward() == local.get_reward() == 1.0
        remote._close()
    finally:
        _stop(proc)
