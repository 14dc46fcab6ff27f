"""`simweb run` / `fork` with groups, workers and any agent; bad input is one line, exit 2."""
from __future__ import annotations

import time

import orjson
from test_cli import assert_user_error, simweb

TASK = "forum/save_post"


def test_group_of_zero_unknown_policy_and_dead_ray_address_are_one_line(tmp_path):
    assert_user_error(simweb("run", "forum", "--task", TASK, "--group", "0"), "--group must be at least 1")
    assert_user_error(simweb("run", "forum", "--task", TASK, "--agent", "no_such_pkg.mod:Policy"),
                      "cannot import policy module")
    assert_user_error(simweb("eval", "forum", "--agent", "nosuchagent", "--seeds", "0"), "unknown agent")
    t0 = time.monotonic()
    assert_user_error(simweb("run", "forum", "--task", TASK, "--backend", "ray", "--address", "127.0.0.1:9"),
                      "no Ray cluster answers at 127.0.0.1:9")
    assert time.monotonic() - t0 < 60
    state = tmp_path / "s.json"
    assert simweb("run", "forum", "--task", TASK, "--seed", "1", "--save-state", str(state), "--at", "1").returncode == 0
    assert_user_error(simweb("fork", "--state", str(state), "--group", "0", "--out", str(tmp_path / "b")),
                      "--group must be at least 1")


def test_fork_group_split_over_workers_writes_the_same_trajectories(tmp_path):
    state = tmp_path / "s.json"
    assert simweb("run", "forum", "--task", TASK, "--seed", "1", "--save-state", str(state), "--at", "1").returncode == 0
    one, two = tmp_path / "one", tmp_path / "two"
    for out, workers in ((one, "1"), (two, "2")):
        res = simweb("fork", "--state", str(state), "--group", "5", "--steps", "3", "--agent",
                     "tests.policy_fixture:FirstLink", "--workers", workers, "--out", str(out))
        assert res.returncode == 0, res.stderr
        assert "advantage" in res.stdout
    for b in range(5):
        a = (one / f"branch-{b:04d}.jsonl").read_bytes()
        assert a == (two / f"branch-{b:04d}.jsonl").read_bytes()
        head = orjson.loads(a.split(b"\n")[0])
        assert head["child"] == b and "advantage" in head and head["agent"] == "first-link"


def test_run_group_over_seeds_on_a_pool(tmp_path):
    res = simweb("run", "forum", "--task", TASK, "--seeds", "0-2", "--group", "3", "--max-steps", "2", "--agent",
                 "random", "--workers", "2", "--out", str(tmp_path / "g"))
    assert res.returncode == 0, res.stderr
    assert len(list((tmp_path / "g").glob("seed-*-child-*.jsonl"))) == 9


def test_eval_on_worker_processes_matches_the_single_process(tmp_path):
    args = ["eval", "forum", "--agent", "random", "--tasks", TASK, "--seeds", "0-3", "--max-steps", "3"]
    one = simweb(*args, "--out", str(tmp_path / "one"))
    two = simweb(*args, "--workers", "2", "--out", str(tmp_path / "two"))
    assert one.returncode == 0 and two.returncode == 0, (one.stderr, two.stderr)
    assert (tmp_path / "one" / "summary.json").read_bytes() == (tmp_path / "two" / "summary.json").read_bytes()
    for s in range(4):
        a = (tmp_path / "one" / "forum__save_post" / f"seed-{s}.jsonl").read_bytes().split(b"\n")
        b = (tmp_path / "two" / "forum__save_post" / f"seed-{s}.jsonl").read_bytes().split(b"\n")
        assert a[1:] == b[1:]                      # every step line; the pooled header adds policy_version


def test_sim2live_refuses_an_unknown_policy_before_starting_anything(tmp_path):
    assert_user_error(simweb("sim2live", "--pair", "issues:roundup", "--agent", "no_such_pkg.mod:P", "--out",
                             str(tmp_path / "s")), "cannot import policy module")


def test_one_group_split_over_workers_is_the_group_of_one_process(tmp_path):
    args = ["run", "forum", "--task", TASK, "--seed", "2", "--group", "4", "--max-steps", "2", "--agent", "random"]
    one = simweb(*args, "--out", str(tmp_path / "one"))
    two = simweb(*args, "--workers", "2", "--out", str(tmp_path / "two"))
    assert one.returncode == 0 and two.returncode == 0, (one.stderr, two.stderr)
    for i in range(4):
        name = f"seed-2-child-{i:03d}.jsonl"
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()


def test_fork_runs_the_llm_agent_on_worker_processes(tmp_path):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from fake_openai import FakeOpenAI

    state = tmp_path / "s.json"
    assert simweb("run", "forum", "--task", TASK, "--seed", "1", "--save-state", str(state), "--at", "1").returncode == 0
    with FakeOpenAI(lambda body: "```scroll(0, 200)```") as api:
        res = simweb("fork", "--state", str(state), "--group", "3", "--steps", "2", "--agent", "llm", "--model", "m",
                     "--base-url", api.base_url, "--workers", "2", "--out", str(tmp_path / "g"))
        assert res.returncode == 0, res.stderr
        assert len(api.requests) == 6 and {r["body"]["model"] for r in api.requests} == {"m"}
    for b in range(3):
        steps = (tmp_path / "g" / f"branch-{b:04d}.jsonl").read_bytes().split(b"\n")[1:]
        assert [orjson.loads(s)["action"] for s in steps if s] == ["scroll(0, 200)"] * 2
