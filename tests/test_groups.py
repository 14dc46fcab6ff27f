"""The group call (forks, rewards, advantages, length normalisers), the Policy protocol
and the local pool: the same items give the same bytes on one core and on two."""
from __future__ import annotations

import os

import pytest

import simweb
from simweb.episodes.group import GroupError, advantages, rollout_group, step_weights
from simweb.episodes.policy import PolicyError, load_policy
from simweb.episodes.rollout import WorkItem, run_items, trajectory_from_bytes

TASK = "forum/save_post"


def test_a_group_forks_one_state_and_leaves_it_untouched():
    env = simweb.make("forum")
    env.reset(seed=4, options={"task": TASK})
    env.step("noop()")
    before = env.state_hash()
    g = rollout_group(env, "random", 6, seed=1, max_steps=5)
    assert env.state_hash() == before and len(g) == 6
    assert {t.header["start_hash"] for t in g.trajectories} == {before} == {g.parent_hash}
    assert len({tuple(s["action"] for s in t.steps) for t in g.trajectories}) > 1   # children differ
    again = rollout_group(env, "random", 6, seed=1, max_steps=5)
    assert [list(t.lines()) for t in again.trajectories] == [list(t.lines()) for t in g.trajectories]


def test_group_rewards_and_advantages_from_a_task_instance():
    g = rollout_group((TASK, 4), "oracle", 3, reward="outcome")
    assert g.rewards == [1.0, 1.0, 1.0] and g.advantages == [0.0, 0.0, 0.0]   # no signal in a uniform group
    p = rollout_group((TASK, 4), "random", 4, max_steps=3, reward="progress")
    assert all(0.0 <= r <= 1.0 for r in p.rewards)
    snap_env = simweb.make("forum")
    snap_env.reset(seed=4, options={"task": TASK})
    from_snapshot = rollout_group(snap_env.snapshot(), "oracle", 2)
    assert from_snapshot.rewards == [1.0, 1.0]
    from_instance = rollout_group(snap_env.task, "oracle", 2, task_seed=4)   # a TaskInstance: same start
    assert from_instance.parent_hash == from_snapshot.parent_hash == snap_env.state_hash()


def test_advantages_are_group_normalised():
    a = advantages([1.0, 0.0, 0.0, 1.0])
    assert a == pytest.approx([1.0, -1.0, -1.0, 1.0], abs=1e-5)
    assert advantages([1.0, 0.0], scale="none") == [0.5, -0.5]


def test_the_default_normaliser_does_not_underweight_long_failures():
    advs, lengths = [1.0, -1.0], [2, 20]   # a short success, a long failure
    per_traj = step_weights(advs, lengths, "trajectory")
    assert abs(sum(per_traj[1])) == pytest.approx(abs(sum(per_traj[0])))   # the long failure's steps are diluted
    for mode in ("constant", "step"):
        w = step_weights(advs, lengths, mode, constant=30)
        assert abs(w[1][0]) == pytest.approx(abs(w[0][0]))                     # every step weighs the same
        assert abs(sum(w[1])) == pytest.approx(10 * abs(sum(w[0])))           # in proportion to its length


def test_bad_groups_and_policies_are_one_line_errors():
    with pytest.raises(GroupError, match="at least 1"):
        rollout_group((TASK, 0), "random", 0)
    with pytest.raises(GroupError, match="normaliser"):
        rollout_group((TASK, 0), "random", 2, normaliser="per-token")
    with pytest.raises(PolicyError, match="cannot import"):
        load_policy("no_such_pkg.mod:Policy")
    with pytest.raises(PolicyError, match="has no"):
        load_policy("tests.policy_fixture:Missing")
    with pytest.raises(PolicyError, match="unknown agent"):
        load_policy("orcale")


def test_a_users_policy_by_import_path_records_its_logprobs():
    g = rollout_group((TASK, 2), "tests.policy_fixture:FirstLink", 3, max_steps=2)
    steps = [s for t in g.trajectories for s in t.steps]
    assert steps and all(s["logprob"] in (0.0, -1.0986) for s in steps)
    assert {t.header["policy_version"] for t in g.trajectories} == {3}


def test_the_local_pool_gives_the_bytes_of_one_process():
    items = [WorkItem("forum", TASK, s) for s in range(3)] + [WorkItem("forum", None, 7)] + \
            [WorkItem("forum", TASK, 5, group=3, max_steps=3)]
    one = run_items(items, "random", workers=1)
    two = run_items(items, "random", workers=2)
    assert one == two and [len(x) for x in one] == [1, 1, 1, 1, 3]
    heads = [trajectory_from_bytes(x[0]).header for x in one]
    assert heads[3]["task"] and heads[3]["seed"] == 7          # no task: drawn by the env at that seed
    assert "advantage" in trajectory_from_bytes(one[4][0]).header


def test_the_demos_fork_branches_keep_their_own_seeds():
    """run_episode gives a policy the instance seed unless told otherwise: the demo's
    branches pass their own, so they do not all make the same choices."""
    from simweb.episodes.rollout import Job, run_job

    out = run_job(Job("forum", 0, None, TASK, 1, "oracle", fork_at=1, fork_branches=4, fork_steps=6))
    assert out["parent_intact"] and len(out["branches"]) == 4
    env = simweb.make("forum")
    env.reset(seed=1, options={"task": TASK})
    env.step(env.oracle_plan()[0])
    from simweb.agents import make_agent
    from simweb.episodes.rollout import run_episode

    runs = {tuple(s["action"] for s in run_episode(env.fork(), make_agent("random", 1000 + b), task=None, seed=1,
                                                   max_steps=6, reset=False, policy_seed=1000 + b).steps)
            for b in range(4)}
    assert len(runs) > 1


def test_a_local_worker_killed_mid_run_loses_and_duplicates_nothing():
    import os
    import signal

    from simweb.episodes.rollout import LocalPool

    items = [WorkItem("forum", TASK, s, max_steps=3) for s in range(12)]
    expected = run_items(items, "random")
    seen: list[int] = []
    with LocalPool(2) as pool:
        def on_done(i: int, out: list[bytes]) -> None:
            seen.append(i)
            if len(seen) == 1:
                os.kill(pool.pids()[0], signal.SIGKILL)

        got = pool.run(items, "random", on_done=on_done)
        assert pool.restarts >= 1
    assert got == expected and sorted(seen) == list(range(len(items)))


def test_a_worker_dying_part_way_through_writing_its_results_costs_one_restart(tmp_path, monkeypatch):
    """A worker killed while it writes its batch's results leaves half a message behind.
    With one result queue shared by all workers (concurrent.futures) that wedged the pool
    for ever; with a pipe per worker it reads as that worker's end-of-file, and its batch
    goes again to a new process."""
    import struct

    from simweb.episodes import rollout
    from simweb.episodes.rollout import LocalPool

    flag = tmp_path / "died-once"
    serve = rollout._serve_local

    def dies_mid_write(conn):
        if flag.exists():
            return serve(conn)
        flag.write_text("x")
        conn.recv()
        os.write(conn.fileno(), struct.pack("!i", 1 << 20) + b"partial")   # a header promising 1 MiB, then 7 bytes
        os._exit(9)

    monkeypatch.setattr(rollout, "_serve_local", dies_mid_write)
    items = [WorkItem("forum", TASK, s, max_steps=3) for s in range(8)]
    expected = run_items(items, "random")
    with LocalPool(2) as pool:
        got = pool.run(items, "random")
        assert pool.restarts == 1
    assert got == expected


def test_local_workers_exit_when_their_parent_is_killed_outright():
    """A driver killed with SIGKILL never closes its pipes, and its forked workers hold
    copies of the parent's ends (theirs and the other workers'): they used to wait on
    their pipes for ever, orphans holding their worlds' memory. They now see the parent
    gone and exit."""
    import signal
    import subprocess
    import sys
    import time

    code = ("import time\nfrom simweb.episodes.rollout import LocalPool, WorkItem\n"
            "pool = LocalPool(2)\n"
            f"pool.run([WorkItem('forum', {TASK!r}, s, max_steps=1) for s in range(4)], 'random')\n"
            "print(*pool.pids(), flush=True)\ntime.sleep(120)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        pids = [int(p) for p in proc.stdout.readline().split()]   # type: ignore[union-attr]
        assert len(pids) == 2
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()

    def running(pid: int) -> bool:
        try:
            with open(f"/proc/{pid}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()[0] != "Z"   # a zombie has exited
        except OSError:
            return False

    deadline = time.monotonic() + 15
    while any(running(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    alive = [p for p in pids if running(p)]
    for p in alive:   # never leave them behind, whatever the verdict
        os.kill(p, signal.SIGKILL)
    assert not alive


def test_a_batch_crosses_the_process_boundary_as_field_tuples_and_one_blob():
    """The pools send a batch's items as plain tuples (no dataclass pickled per item) and
    get its results back as one bytes blob (the driver slices it, never unpickles or
    parses it): both round-trip exactly, an item with no trajectory and an empty
    trajectory included, and a blob whose header does not account for its bytes is
    refused."""
    import pickle

    from simweb.episodes.rollout import (
        RolloutWorker,
        _policy_blob,
        decode_batch,
        encode_batch,
        pack_results,
        unpack_results,
    )

    chunk = [(7, WorkItem("forum", TASK, 3, max_steps=2, lean=True)), (2, WorkItem("forum", None, 4, group=2, variant=5))]
    batch = encode_batch(chunk)
    assert decode_batch(batch) == chunk
    assert b"WorkItem" not in pickle.dumps(batch)      # only ints, strings and tuples cross
    done = [(7, [b"a\nb", b"", "é".encode()]), (2, []), (0, [bytes(range(256)) * 40])]
    blob = pack_results(done)
    assert isinstance(blob, bytes) and unpack_results(blob) == done
    with pytest.raises(ValueError):
        unpack_results(blob + b"x")
    worker, policy = RolloutWorker(), [_policy_blob("random")]
    items = [(i, WorkItem("forum", TASK, s, max_steps=2)) for i, s in ((4, 0), (1, 1))]
    assert unpack_results(worker.run_packed(encode_batch(items), policy)) == worker.run(items, policy)


def test_batched_hand_off_covers_every_item_once_in_a_like_mix():
    """Batches largest first, within ``most``, each a run of a spread order so that it
    mixes the templates; every item in exactly one."""
    from simweb.episodes.rollout import _chunks

    items = [WorkItem("forum", t, s) for t in ("a", "b", "c") for s in range(8)]   # grouped by template
    batches = _chunks(items, 2)
    sizes = [len(b) for b in batches]
    assert sizes == sorted(sizes, reverse=True) and sizes[0] == 8 and sum(sizes) == len(items)   # a third at 2
    assert sorted(i for b in batches for i, _ in b) == list(range(len(items)))
    assert all({it.task for _, it in b} == {"a", "b", "c"} for b in batches if len(b) >= 4)
    big = _chunks([WorkItem("forum", TASK, s) for s in range(1000)], 2, most=64)
    assert max(len(b) for b in big) == 64 and len(big) <= 23 and min(len(b) for b in big[:-1]) >= 4
    assert sorted(i for b in big for i, _ in b) == list(range(1000))
    assert _chunks([], 2) == [] and [len(b) for b in _chunks(items[:3], 2)] == [3]   # never an empty batch


@pytest.mark.parametrize("n_items,workers,slow", [(250, 2, 1.2), (320, 2, 1.5), (330, 3, 1.3), (1000, 2, 1.1)])
def test_workers_pulling_the_batches_finish_together(n_items, workers, slow):
    """Workers that pull the next batch when done (the local pool; Ray's actors with one
    more in hand) finish within a few items of each other, even when one runs slower than
    the others (a core shared with another process): equal batches handed out in advance
    left 2 workers up to a whole batch apart."""
    import heapq

    from simweb.episodes.rollout import _chunks

    batches = _chunks([WorkItem("forum", "t", s) for s in range(n_items)], workers)
    speed = [slow] + [1.0] * (workers - 1)        # time per item of each worker
    free = [(0.0, w) for w in range(workers)]     # (time the worker is free, worker)
    for b in batches:                             # the next batch goes to the first free worker
        t, w = heapq.heappop(free)
        heapq.heappush(free, (t + len(b) * speed[w], w))
    ends = sorted(t for t, _ in free)
    assert ends[-1] - ends[0] <= 4 * slow + 1e-9                   # apart by at most a last batch of 4
    assert ends[-1] <= 1.02 * n_items / sum(1 / s for s in speed) + 4 * slow   # ~ the ideal split
    if workers == 2 and n_items <= 330:    # few dispatches: each costs CPU outside the workers
        assert len(batches) <= 12


def test_a_worker_killed_holding_a_batch_loses_and_duplicates_nothing():
    """A worker dies with a batch of several items in hand: the batch goes again on a new
    process, every item comes back once, and the bytes are those of one process."""
    import os
    import signal

    from simweb.episodes.rollout import LocalPool

    tasks = sorted(simweb.make("forum").app.tasks)[:3]
    items = [WorkItem("forum", t, s, max_steps=3) for t in tasks for s in range(6)]
    expected = run_items(items, "random")
    seen: list[int] = []
    with LocalPool(2) as pool:
        def on_done(i: int, out: list[bytes]) -> None:
            seen.append(i)
            if len(seen) == len(items) // 4:   # one batch back: the others are still in hand
                os.kill(pool.pids()[0], signal.SIGKILL)

        got = pool.run(items, "random", on_done=on_done)
        assert pool.restarts >= 1
    assert got == expected and sorted(seen) == list(range(len(items)))


@pytest.mark.parametrize("app", ["cms", "forum"])
def test_forks_of_a_reset_reuse_its_verdict(app, monkeypatch):
    """reset's verdict (computed once per start) seeds the verdict cache: a group's
    children forked from a fresh reset observe without verifying again, and see the
    verdict a fresh verification gives."""
    env = simweb.make(app)
    tid = sorted(env.app.tasks)[0]
    _, info = env.reset(seed=3, options={"task": tid})
    template = env.app.tasks[tid]
    calls: list[int] = []
    real = type(template).verify

    def counting(self, *args, **kwargs):
        calls.append(1)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(type(template), "verify", counting)
    children = [env.fork() for _ in range(4)]
    verdicts = [c.observe()[1]["verdict"] for c in children]
    assert calls == [] and all(v == info["verdict"] for v in verdicts)
    env.episode._last_verdict = None                 # a fresh verification agrees
    assert env.verdict() == info["verdict"] and calls == [1]
