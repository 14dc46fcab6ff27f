"""The Ray backend on a real local Ray (not a mock): the same bytes as the local pool for
the same items, and an actor killed mid-run loses and duplicates nothing. Few tests: a
Ray start costs seconds, so one small cluster serves the module."""
from __future__ import annotations

import os

import pytest

ray = pytest.importorskip("ray")

from simweb.episodes.rollout import RayPool, WorkItem, run_items, start_local_ray  # noqa: E402

TASK = "forum/save_post"


@pytest.fixture(scope="module")
def local_ray():
    start_local_ray(2)      # as RayPool starts its own
    yield
    ray.shutdown()


def items() -> list[WorkItem]:
    return [WorkItem("forum", TASK, s, max_steps=4) for s in range(10)] + \
           [WorkItem("forum", TASK, 3, group=4, max_steps=3)]


def test_ray_gives_the_bytes_of_the_local_pool(local_ray, monkeypatch):
    from simweb.episodes import rollout

    local = run_items(items(), "random", workers=2)
    with RayPool(workers=2) as pool:
        assert pool.run(items(), "random") == local
        assert pool.run(items(), "tests.policy_fixture:FirstLink") == run_items(items(), "tests.policy_fixture:FirstLink")
        # a policy too large to go inline goes once into the object store: the same bytes
        monkeypatch.setattr(rollout, "INLINE_POLICY_BYTES", 0)
        assert pool.run(items(), "random") == local


def niceness(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[16])


def test_the_actors_run_at_the_niceness_of_the_local_pools_processes(local_ray):
    """Ray's default (nice 15) made the actors yield their core to any other process on
    the machine; a pool's actors are the work, so they run at nice 0 like the local pool's
    processes (and the driver): at the driver's own niceness (0, or what ``nice`` gave the
    run that started it: Ray counts a worker's niceness from its own)."""
    with RayPool(workers=2) as pool:
        pids = ray.get([a.ping.remote() for a in pool.actors])
    assert len(set(pids)) == 2
    assert niceness(os.getpid()) < 15   # what Ray's default would give them
    assert [niceness(p) for p in pids] == [niceness(os.getpid())] * 2


def test_an_actor_killed_mid_run_loses_and_duplicates_nothing(local_ray):
    """The actor that sent the first result is killed as it arrives: its other batch is
    then still running (a slow policy keeps every batch busy for a quarter of a second or
    more, so the driver cannot fall a whole batch behind), and must be sent again."""
    from simweb.episodes.rollout import _chunks

    policy = "tests.policy_fixture:SlowFirstLink"
    work = items() + [WorkItem("forum", TASK, s, max_steps=4) for s in range(10, 21)]
    expected = run_items(work, policy)
    # batches are handed out in order, two per actor: 0 and 1 to the first, 2 and 3 to
    # the second (each actor then still holds one when its first comes back)
    batches = _chunks(work, 2)
    assert len(batches) >= 4
    holder = {i: 0 if b < 2 else 1 for b, batch in enumerate(batches[:4]) for i, _ in batch}
    seen: list[int] = []
    with RayPool(workers=2) as pool:
        before = list(pool.actors)
        killed: list[object] = []

        def on_done(i: int, out: list[bytes]) -> None:
            seen.append(i)
            if not killed:
                killed.append(before[holder[i]])
                ray.kill(killed[0], no_restart=True)

        got = pool.run(work, policy, on_done=on_done)
        assert pool.restarts >= 1 and killed[0] not in pool.actors
    assert got == expected
    assert sorted(seen) == list(range(len(expected)))   # every item reported exactly once


def test_simweb_eval_on_ray_writes_the_in_process_results(tmp_path):
    """The command line's --backend ray: a local Ray started for the run (in its own
    process, beside this module's), the same episodes as in-process."""
    from test_cli import simweb

    args = ["eval", "forum", "--agent", "random", "--tasks", TASK, "--seeds", "0-2", "--max-steps", "3"]
    here = simweb(*args, "--out", str(tmp_path / "sim"))
    on_ray = simweb(*args, "--backend", "ray", "--workers", "2", "--out", str(tmp_path / "ray"))
    assert here.returncode == 0 and on_ray.returncode == 0, (here.stderr, on_ray.stderr)
    assert (tmp_path / "sim" / "summary.json").read_bytes() == (tmp_path / "ray" / "summary.json").read_bytes()
    for s in range(3):
        a = (tmp_path / "sim" / "forum__save_post" / f"seed-{s}.jsonl").read_bytes().split(b"\n")
        b = (tmp_path / "ray" / "forum__save_post" / f"seed-{s}.jsonl").read_bytes().split(b"\n")
        assert a[1:] == b[1:]
