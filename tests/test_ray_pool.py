"""The Ray backend on a real local Ray (not a mock): the same bytes as the local pool for
the same items, and an actor killed mid-run loses and duplicates nothing. Few tests: a
Ray start costs seconds, so one small cluster serves the module."""
from __future__ import annotations

import pytest

ray = pytest.importorskip("ray")

from simweb.episodes.rollout import RayPool, WorkItem, run_items  # noqa: E402

TASK = "forum/save_post"


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield
    ray.shutdown()


def items() -> list[WorkItem]:
    return [WorkItem("forum", TASK, s, max_steps=4) for s in range(10)] + \
           [WorkItem("forum", TASK, 3, group=4, max_steps=3)]


def test_ray_gives_the_bytes_of_the_local_pool(local_ray):
    local = run_items(items(), "random", workers=2)
    with RayPool(workers=2) as pool:
        assert pool.run(items(), "random") == local
        assert pool.run(items(), "tests.policy_fixture:FirstLink") == run_items(items(), "tests.policy_fixture:FirstLink")


def test_an_actor_killed_mid_run_loses_and_duplicates_nothing(local_ray):
    expected = run_items(items(), "random")
    seen: list[int] = []
    with RayPool(workers=2) as pool:
        victim = pool.actors[0]

        def on_done(i: int, out: list[bytes]) -> None:
            seen.append(i)
            if len(seen) == 1:
                ray.kill(victim, no_restart=True)   # mid-run: chunks are in flight on it

        got = pool.run(items(), "random", on_done=on_done)
        assert pool.restarts >= 1 and pool.actors[0] is not victim
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
