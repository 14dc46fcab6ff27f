"""Where a Ray pool's extra CPU per item goes (issue 30: Ray's scaling efficiency).

    python benchmarks/bench_ray_cpu.py --app shopping --items 600 [--out results.json]

Three measurements of the same oracle work items, in one run, in CPU time (so other
processes' load inflates them less than wall time would):

1. ``in_process``: the items run by a :class:`~simweb.episodes.rollout.RolloutWorker` in
   this process, ``time.process_time`` per item (median of 3 rounds), before and after
   the Ray measurements;
2. ``ray_task``: the same measurement inside one Ray task (a Ray worker process);
3. ``pool``: a :class:`~simweb.episodes.rollout.RayPool` of 2 actors running the items,
   with the CPU every process spent meanwhile read from /proc and split by process
   (the actors, raylet, GCS, other Ray processes, this driver), per item; once with full
   trajectories and once ``lean`` (observations without their AX-tree text: far fewer
   bytes to return).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

TICK = os.sysconf("SC_CLK_TCK")


def work(app: str, n: int, lean: bool = False) -> list[Any]:
    import simweb
    from simweb.episodes.rollout import WorkItem

    tasks = sorted(simweb.make(app).unwrapped.app.tasks)[:8]
    return [WorkItem(app, tasks[i % len(tasks)], i % 50, lean=lean) for i in range(n)]


def per_item_cpu(app: str, n: int, rounds: int = 3) -> float:
    """Median CPU ms per item of a RolloutWorker in this process."""
    from simweb.episodes.rollout import RolloutWorker, _policy_blob

    worker = RolloutWorker()
    chunk = list(enumerate(work(app, n)))
    blob = [_policy_blob("oracle")]
    worker.run(chunk[:8], blob)   # envs opened, pages warm
    times = []
    for _ in range(rounds):
        t0 = time.process_time()
        worker.run(chunk, blob)
        times.append((time.process_time() - t0) / n * 1000)
    return sorted(times)[len(times) // 2]


def _processes() -> dict[str, float]:
    """CPU seconds so far of this driver and every Ray process, by kind."""
    out: dict[str, float] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            cmd = open(f"/proc/{d}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")
            stat = open(f"/proc/{d}/stat").read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        cpu = (int(fields[11]) + int(fields[12])) / TICK
        if int(d) == os.getpid():
            kind = "driver"
        elif cmd.startswith("ray::"):
            kind = "actors"
        elif "raylet" in cmd:
            kind = "raylet"
        elif "gcs_server" in cmd:
            kind = "gcs"
        elif "ray" in cmd:
            kind = "ray_other"
        else:
            continue
        out[kind] = out.get(kind, 0.0) + cpu
    return out


def pool_split(app: str, n: int, lean: bool) -> dict[str, float]:
    """CPU ms per item by process kind while a 2-actor RayPool runs ``n`` items."""
    from simweb.episodes.rollout import RayPool

    items = work(app, n, lean)
    with RayPool(2) as pool:
        pool.run(items[:40], "oracle")   # actors up, envs open
        before, t0 = _processes(), time.perf_counter()
        pool.run(items, "oracle")
        wall, after = time.perf_counter() - t0, _processes()
    split = {k: round((after.get(k, 0.0) - before.get(k, 0.0)) / n * 1000, 3) for k in sorted(after)}
    split["wall_per_item"] = round(wall / n * 1000, 3)
    return split


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--app", default="shopping")
    ap.add_argument("--items", type=int, default=600)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    import ray

    result: dict[str, Any] = {"app": args.app, "items": args.items, "load_before": os.getloadavg()[0],
                              "in_process_before": per_item_cpu(args.app, args.items)}
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        result["ray_task"] = ray.get(ray.remote(num_cpus=1)(per_item_cpu).remote(args.app, args.items))
    finally:
        ray.shutdown()
    result["pool"] = pool_split(args.app, args.items, lean=False)
    result["pool_lean"] = pool_split(args.app, args.items, lean=True)
    result["in_process_after"] = per_item_cpu(args.app, args.items)
    result["load_after"] = os.getloadavg()[0]
    print(json.dumps(result, indent=1))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
