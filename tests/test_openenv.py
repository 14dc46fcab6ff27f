"""`simweb openenv APP` driven by openenv's own EnvClient (the extra `openenv`): reset,
steps and a verdict; the same seed and actions give the same observations and rewards as
in-process; concurrent sessions never see each other; a fork; a malformed and an
oversized action; the session cap, a killed client and an idle session that expires; bad
input on the command line is one line and exit 2."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("openenv.core.env_client", reason="needs the openenv extra: pip install -e '.[openenv]'")

import simweb  # noqa: E402
from simweb.tools.trainers.openenv_env import SimwebAction, SimwebClient  # noqa: E402

pytestmark = pytest.mark.apps("forum")

TASK, SEED = "forum/upvote_post", 3
SIMWEB = [sys.executable, "-m", "simweb.cli"]


def _start(*args: str) -> tuple[subprocess.Popen, str]:
    """`simweb openenv forum --port 0 ARGS` in a subprocess; its base URL once it listens."""
    proc = subprocess.Popen([*SIMWEB, "openenv", "forum", "--port", "0", *args], stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert proc.stderr is not None
    line = proc.stderr.readline()
    m = re.search(r"ws://([\d.]+):(\d+)/ws", line)
    if m is None:
        proc.kill()
        raise AssertionError(f"the server did not start: {line}{proc.stderr.read()}")
    return proc, f"http://{m.group(1)}:{m.group(2)}"


def _stop(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    proc, url = _start("--max-sessions", "4", "--max-axtree-chars", "100000")
    yield url
    _stop(proc)


def _client(url: str) -> Any:
    return SimwebClient(base_url=url, message_timeout_s=60).sync()


def _act(text: str) -> SimwebAction:
    return SimwebAction(action=text)


def test_episode_through_openenv_equals_in_process(server: str):
    env = simweb.make("forum")
    obs, _ = env.reset(seed=SEED, options={"task": TASK})
    plan = env.oracle_plan()
    with _client(server) as remote:
        r = remote.reset(task=TASK, seed=SEED)
        assert (r.observation.axtree, r.observation.url, r.observation.goal) == (obs["axtree"], obs["url"], obs["goal"])
        assert "# Action syntax" in r.observation.text and not r.done
        state = remote.state()
        assert (state.app, state.task, state.seed, state.step_count) == ("forum", TASK, SEED, 0)
        assert state.state_hash == env.state_hash() and state.max_steps == env.max_steps
        for action in ["click('no-such-bid')", *plan]:
            obs, reward, terminated, truncated, info = env.step(action)
            r = remote.step(_act(action))
            o = r.observation
            assert (o.axtree, o.url, o.last_action, o.last_action_error, o.step) == (
                obs["axtree"], obs["url"], obs["last_action"], obs["last_action_error"], obs["step"])
            assert (r.reward, r.done, o.terminated, o.truncated) == (reward, terminated or truncated, terminated,
                                                                     truncated)
        assert r.done and r.reward == 1.0
        verdict = remote.step(SimwebAction(command="verdict")).observation.verdict
        assert verdict == json.loads(json.dumps(info["verdict"]))
        assert verdict["success"] and verdict["clean"]
        assert remote.state().state_hash == env.state_hash() and remote.state().cum_reward == 1.0


def test_concurrent_sessions_never_see_each_other(server: str):
    with _client(server) as a, _client(server) as b:
        ra = a.reset(task=TASK, seed=SEED)
        rb = b.reset(task=TASK, seed=SEED)
        assert a.state().state_hash == b.state().state_hash     # both forks of one root
        before = b.state().state_hash
        plan = simweb.make("forum")
        plan.reset(seed=SEED, options={"task": TASK})
        for action in plan.oracle_plan()[:-1]:
            a.step(_act(action))
        assert a.state().state_hash != before and b.state().state_hash == before
        assert b.step(SimwebAction(command="verdict")).observation.verdict["progress"] == 0.0
        assert a.step(SimwebAction(command="verdict")).observation.verdict["progress"] == 1.0
        assert rb.observation.axtree == ra.observation.axtree
        other = b.reset(task="forum/save_post", seed=1)
        assert other.observation.goal != ra.observation.goal and a.state().task == TASK


def test_a_fork_starts_other_sessions_from_one_state(server: str):
    local = simweb.make("forum")
    local.reset(seed=SEED, options={"task": TASK})
    plan = local.oracle_plan()
    with _client(server) as root, _client(server) as c1, _client(server) as c2:
        root.reset(task=TASK, seed=SEED)
        for action in plan[:2]:
            root.step(_act(action))
        fid = root.step(SimwebAction(command="fork")).observation.fork_id
        assert fid
        r1, r2 = c1.reset(fork=fid), c2.reset(fork=fid)
        assert c1.state().state_hash == c2.state().state_hash == root.state().state_hash
        assert r1.observation.axtree == r2.observation.axtree and r1.observation.step == 2
        assert c1.state().fork_of == fid
        for action in plan[2:]:
            r = c1.step(_act(action))
        assert r.done and r.reward == 1.0
        r = c2.step(_act("send_msg_to_user('Done.')"))           # the other branch stops short
        assert r.done and r.reward == 0.0
        assert root.state().step_count == 2                       # the root never moved
        snap = c1.step(SimwebAction(command="snapshot")).observation.snapshot
        root.step(SimwebAction(command="restore", state=snap))
        assert root.state().state_hash == c1.state().state_hash
        with pytest.raises(RuntimeError, match="unknown fork 'f999'"):
            c2.reset(fork="f999")


def test_malformed_and_oversized_actions(server: str):
    with _client(server) as env:
        env.reset(task=TASK, seed=SEED)
        r = env.step(_act("I think I should click somewhere"))
        assert r.observation.last_action_error == "ValueError: Received an empty action." and not r.done
        r = env.step(_act("click('a') click('b')"))
        assert "multi-action" in r.observation.last_action_error
        r = env.step(_act("fill('x')"))
        assert r.observation.last_action_error.startswith("ValueError:")
        # Oversized: refused by the server's action model (a client bypassing its own check)
        big = SimwebAction.model_construct(action="x" * 40_000, command="act", state=None, metadata={})
        with pytest.raises(RuntimeError, match="VALIDATION_ERROR"):
            env.step(big)
        with pytest.raises(RuntimeError, match="unknown reset option"):
            env.reset(task=TASK, seed=SEED, colour="red")
        with pytest.raises(RuntimeError, match="did you mean"):
            env.reset(task="forum/upvote", seed=0)
        with pytest.raises(RuntimeError, match="over the limit"):
            env.step(SimwebAction(command="restore", state={"pad": "x" * 3_000_000}))
        assert env.step(_act("go_back()")).observation.step == 4    # the session is still usable


def test_session_cap_killed_client_and_idle_expiry():
    proc, url = _start("--max-sessions", "1", "--idle-timeout", "1")
    try:
        holder = subprocess.Popen([sys.executable, "-c", (
            "import sys,time\nfrom simweb.trainers.openenv_env import SimwebClient\n"
            f"c = SimwebClient(base_url={url!r}).sync()\nc.connect()\nc.reset(task={TASK!r}, seed=1)\n"
            "print('ready', flush=True)\ntime.sleep(600)\n")], stdout=subprocess.PIPE, text=True)
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        with pytest.raises(Exception, match="CAPACITY_REACHED|at capacity|capacity"):
            with _client(url) as other:
                other.reset(task=TASK, seed=1)
        holder.kill()                                            # a killed client frees its session
        holder.wait()
        deadline = time.monotonic() + 10
        while True:
            try:
                with _client(url) as again:
                    assert again.reset(task=TASK, seed=1).observation.goal
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        with _client(url) as idle:
            idle.reset(task=TASK, seed=1)
            time.sleep(7)                                        # openenv's reaper looks every 5 s
            with pytest.raises(RuntimeError, match="session has ended"):
                idle.step(_act("go_back()"))
    finally:
        _stop(proc)


def test_cli_bad_input_is_one_line_and_exit_2(server: str):
    port = server.rsplit(":", 1)[1]
    for args, want in ((["openenv", "nope"], "unknown app 'nope'"),
                       (["openenv", "forum", "--port", port], "cannot serve on 127.0.0.1:" + port)):
        got = subprocess.run([*SIMWEB, *args], capture_output=True, text=True, timeout=60)
        assert got.returncode == 2 and want in got.stderr, got.stderr
        assert len(got.stderr.strip().splitlines()) == 1 and "Traceback" not in got.stderr


def test_reset_without_a_seed_draws_as_in_process(server: str):
    env = simweb.make("forum")
    env.reset(seed=5)
    want = [env.reset()[0]["goal"] for _ in range(2)]
    with _client(server) as remote:
        remote.reset(seed=5)
        got = [remote.reset().observation.goal for _ in range(2)]
    assert got == want


def test_stateless_http_routes_answer_without_a_traceback(server: str):
    import urllib.request

    def post(path: str, body: dict) -> dict:
        req = urllib.request.Request(server + path, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=60) as resp:
            return json.loads(resp.read())

    got = post("/reset", {"seed": SEED, "task": TASK})
    assert got["observation"]["goal"] and got["done"] is False
    got = post("/step", {"action": {"action": "click('nav-all')"}})       # a fresh env: no episode
    assert got["done"] is True and got["observation"]["last_action_error"].startswith("no episode: reset first")
