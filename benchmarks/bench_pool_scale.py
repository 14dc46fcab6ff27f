"""Rollouts at scale: trajectories per hour through the pools, memory per live env, and
the group call's cost per child against a cold reset.

1. Throughput, per app: the same oracle work items (every template x seeds) through
   * the in-process single loop (the reference, one RolloutWorker in this process),
   * the local pool at 1 and 2 worker processes,
   * Ray at 1 and 2 actors (a local Ray started for them, its start not timed),
   each after a warm-up pass (worlds opened in every worker), in two phases: the single
   loop and the local pools with no Ray running, then the single loop again and Ray's
   pools (Ray's idle daemons take CPU that on 2 cores is the local workers'), the timed
   passes interleaved round by round within a phase. Reported: trajectories/hour (median
   of rounds), scaling efficiency at 2 workers (tph(2) / (2 tph(1)), within a phase),
   Ray's per-episode overhead against its phase's single loop, and whether every backend
   returned the reference's bytes.
2. Memory: N envs of one app made and reset in one fresh process (the world shared):
   RSS growth per env; and the RSS of one Ray actor process holding an env.
3. The group call: a group of 16 from forks (fork + observe per child) against 16 cold
   resets of new instances, interleaved in the same process; and, for comparison, forks
   whose children verify their start again (the path before reset's verdict was reused).

On an idle machine (the figures docs/scale.md and docs/groups.md quote):

    python benchmarks/bench_pool_scale.py --seeds 10 --rounds 5 --mem-envs 10000 \
        --out benchmarks/results_pool_scale_idle2.json

    python benchmarks/bench_pool_scale.py [--quick] [--apps forum,issues] [--seeds 10]
        [--rounds 3] [--mem-envs 10000] [--no-ray] [--out FILE]
"""
from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import time
from typing import Any

from common import median, parser, print_table, target, write_json

import simweb
from simweb.episodes.rollout import LocalPool, RayPool, RolloutWorker, WorkItem, _chunks, start_local_ray


def items_for(app: str, seeds: range) -> list[WorkItem]:
    env = simweb.make(app)
    return [WorkItem(app, t, s) for t in sorted(env.app.tasks) for s in seeds]


def reference_loop(items: list[WorkItem], worker: RolloutWorker) -> list[list[bytes]]:
    from simweb.episodes.policy import load_policy

    policy = load_policy("oracle")
    return [worker.run_item(it, policy) for it in items]


def throughput(apps: list[str], seeds: int, rounds: int, ray_pools: dict[int, RayPool], local: bool = True) -> dict:
    """Every round runs new instances (fresh seeds) on every backend, the single loop first
    (its bytes are the reference): no backend finds starts another one cached.

    Called twice: the local pools with no Ray on the machine, then Ray's pools (``local``
    False) with the single loop measured again beside them. Ray's daemons (GCS, raylet,
    idle actors) take CPU even between calls, which on 2 cores is the local workers' CPU:
    measured in one phase, they charged Ray's cost to the local pool (its scaling
    efficiency read 0.49-0.66 on apps that reach 0.94-0.98 without Ray running)."""
    out: dict = {}
    for app in apps:
        warm = items_for(app, range(100_000, 100_000 + 2))
        ref_worker = RolloutWorker()
        reference_loop(warm, ref_worker)                        # worlds and page caches opened
        pools: dict[str, LocalPool | RayPool] = (
            {f"local x{w}": LocalPool(w, processes=True) for w in (1, 2)} if local else {})
        pools.update({f"ray x{w}": pool for w, pool in ray_pools.items()})
        for pool in pools.values():
            pool.run(warm, "oracle")
        times: dict[str, list[float]] = {k: [] for k in ["single loop", *pools]}
        cpu: dict[str, list[tuple[float, float]]] = {k: [] for k in times}   # (parent, workers) CPU s
        same = {k: True for k in pools}
        pids = {name: worker_pids(pool) for name, pool in pools.items()}
        n = 0
        for r in range(rounds):
            items = items_for(app, range(r * seeds, (r + 1) * seeds))
            n = len(items)
            p0, t0 = time.process_time(), time.perf_counter()
            reference = reference_loop(items, ref_worker)
            times["single loop"].append(time.perf_counter() - t0)
            cpu["single loop"].append((time.process_time() - p0, 0.0))
            for name, pool in pools.items():
                w0, p0, t0 = cpu_seconds(pids[name]), time.process_time(), time.perf_counter()
                got = pool.run(items, "oracle")
                times[name].append(time.perf_counter() - t0)
                cpu[name].append((time.process_time() - p0, cpu_seconds(pids[name]) - w0))
                same[name] &= got == reference
        for pool in pools.values():
            if isinstance(pool, LocalPool):
                pool.close()
        tph = {k: n / median(v) * 3600 for k, v in times.items() if v}
        res = {"items_per_round": n, "rounds": rounds, "seconds": times, "trajectories_per_hour": tph,
               "byte_identical": same}
        if "local x1" in tph:
            res["efficiency_local_2"] = tph["local x2"] / (2 * tph["local x1"])
        if "ray x1" in tph and "ray x2" in tph:
            res["efficiency_ray_2"] = tph["ray x2"] / (2 * tph["ray x1"])
            res["ray_overhead_us_per_episode"] = (median(times["ray x1"]) - median(times["single loop"])) / n * 1e6
        res["handoff"] = handoff(times, cpu, pools, n)
        out[app] = res
    return out


def merge_ray_phase(local: dict, ray: dict) -> None:
    """Ray's figures into the local phase's, per app; the Ray phase's own single loop is
    kept as "single loop (ray phase)" (Ray's overhead is against it)."""
    for app, r in ray.items():
        res = local[app]
        for key in ("seconds", "trajectories_per_hour"):
            res[key]["single loop (ray phase)"] = r[key].pop("single loop")
            res[key].update(r[key])
        res["byte_identical"].update(r["byte_identical"])
        res["handoff"].update({k: v for k, v in r["handoff"].items() if k != "single loop"})
        for key in ("efficiency_ray_2", "ray_overhead_us_per_episode"):
            if key in r:
                res[key] = r[key]


def worker_pids(pool: LocalPool | RayPool) -> list[int]:
    """The worker processes of a warmed-up pool (Ray actors on this machine)."""
    if isinstance(pool, LocalPool):
        return pool.pids()
    import ray

    return [int(p) for p in ray.get([a.ping.remote() for a in pool.actors])]


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU time of these processes so far (Linux /proc; 10 ms ticks)."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            return float("nan")
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def handoff(times: dict[str, list[float]], cpu: dict[str, list[tuple[float, float]]],
            pools: dict[str, LocalPool | RayPool], n: int) -> dict:
    """What handing the work to other processes costs, per backend, from the same rounds:
    the parent's CPU per item (pickling, dispatch, reading results back: on a machine with
    as many workers as cores it is taken from the workers), the workers' CPU per item
    (against the single loop's: the work itself), the fraction of the workers' wall time
    they were idle (waiting for work, or finished before the others), and the items per
    dispatch. Sums over the rounds, so the 10 ms ticks of /proc average out."""
    out = {}
    for name, v in times.items():
        wall = sum(v)
        parent = sum(c[0] for c in cpu[name])
        workers = sum(c[1] for c in cpu[name])
        pool = pools.get(name)
        k = pool.workers if pool is not None else 1
        row = {"parent_cpu_us_per_item": parent / (n * len(v)) * 1e6}
        if pool is not None:
            row.update(worker_cpu_us_per_item=workers / (n * len(v)) * 1e6,
                       worker_idle_fraction=max(0.0, 1 - workers / (k * wall)),
                       items_per_dispatch=n / len(_chunks([None] * n, k)))   # type: ignore[list-item]
        out[name] = row
    return out


def start_ray_pools(workers: list[int]) -> dict[int, RayPool]:
    # logical CPUs for both pools' actors at once (3 on this 2-core machine): the pools
    # never run at the same time, and an idle actor uses no core; started as RayPool
    # starts its own (actors at nice 0, as the local pool's processes)
    start_local_ray(sum(workers))
    return {w: RayPool(w) for w in workers}


MEM_CHILD = r"""
import gc, json, sys
sys.path.insert(0, "benchmarks")
from common import rss_bytes
import simweb
app, n = sys.argv[1], int(sys.argv[2])
base_env = simweb.make(app); base_env.reset(seed=0)
tids = sorted(base_env.app.tasks)
for s in range(len(tids)):                           # warm the start cache of the instances used
    base_env.reset(seed=s % 50, options={"task": tids[s % len(tids)]})
gc.collect(); before = rss_bytes()
envs = []
for i in range(n):
    e = simweb.make(app); e.reset(seed=i % 50, options={"task": tids[i % len(tids)]}); envs.append(e)
gc.collect(); after = rss_bytes()
print(json.dumps({"n": n, "rss_before": before, "rss_after": after, "per_env_bytes": (after - before) / n}))
"""


def memory(app: str, n: int, ray_pool: RayPool | None) -> dict:
    res = subprocess.run([sys.executable, "-c", MEM_CHILD, app, str(n)], capture_output=True, text=True,
                         cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))), timeout=3600)
    if res.returncode:
        return {"error": res.stderr.strip().splitlines()[-1:]}
    out = json.loads(res.stdout.strip().splitlines()[-1])
    if ray_pool is not None:
        import ray

        pid = ray.get(ray_pool.actors[0].ping.remote())
        with open(f"/proc/{pid}/statm") as f:
            out["ray_actor_rss_bytes"] = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    return out


def group_cost(app: str, rounds: int) -> dict:
    env = simweb.make(app)
    tid = sorted(env.app.tasks)[0]
    env.reset(seed=0, options={"task": tid})
    fork_us, reset_us, reverify_us = [], [], []
    fresh = iter(range(10_000, 10_000_000))
    for _ in range(rounds):
        gc.collect()
        t0 = time.perf_counter_ns()
        for _ in range(16):    # the path before reset seeded the verdict cache: each child verifies
            child = env.fork()
            child.episode._last_verdict = None
            child.observe()
        reverify_us.append((time.perf_counter_ns() - t0) / 16 / 1000)
        t0 = time.perf_counter_ns()
        for _ in range(16):
            child = env.fork()
            child.observe()
        fork_us.append((time.perf_counter_ns() - t0) / 16 / 1000)
        other = simweb.make(app)
        t0 = time.perf_counter_ns()
        for _ in range(16):
            other.reset(seed=next(fresh), options={"task": tid})       # a new instance: nothing cached
        reset_us.append((time.perf_counter_ns() - t0) / 16 / 1000)
    f, r = median(fork_us), median(reset_us)
    return {"task": tid, "fork_and_observe_us_per_child": f,
            "fork_reverifying_us_per_child": median(reverify_us), "cold_reset_us_per_instance": r, "ratio": r / f,
            **target(r / f, 10, ">=")}


def load_note(load: float) -> str:
    """Whether the timing figures of this run mean anything: on a loaded machine the
    workers wait for a core, so trajectories per hour and scaling efficiency measure the
    load; the CPU per item of the hand-off and the fork/reset ratio still stand."""
    cores = os.cpu_count() or 1
    if load > cores / 2:
        return (f"LOADED: load average {load:.1f} on {cores} cores at start; trajectories/hour and scaling "
                "efficiency are not meaningful, the hand-off CPU per item and the group ratio are")
    return f"idle: load average {load:.1f} on {cores} cores at start"


def main(argv: list[str]) -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--apps", default=None)
    p.add_argument("--seeds", type=int, default=10, help="seeds per template")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--mem-envs", type=int, default=10_000)
    p.add_argument("--mem-app", default="forum")
    p.add_argument("--no-ray", action="store_true")
    a = p.parse_args(argv)
    apps = a.apps.split(",") if a.apps else simweb.app_names()
    if a.quick:
        a.seeds, a.rounds, a.mem_envs = 2, 2, 500
    load_at_start = os.getloadavg()[0]
    local = throughput(apps, a.seeds, a.rounds, {})            # no Ray on the machine yet
    pools: dict[int, RayPool] = {}
    if not a.no_ray:
        try:
            pools = start_ray_pools([1, 2])
        except Exception as exc:   # no Ray here: the local figures still stand
            print(f"Ray not measured: {exc}")
    if pools:
        merge_ray_phase(local, throughput(apps, a.seeds, a.rounds, pools, local=False))
    results: dict[str, Any] = {"throughput": local,
               "memory": memory(a.mem_app, a.mem_envs, pools.get(1)),
               "group": {app: group_cost(app, max(5, a.rounds * 5)) for app in apps},
               "load_note": load_note(load_at_start)}
    for pool in pools.values():
        pool.close()
    rows = []
    for app, r in results["throughput"].items():
        t = r["trajectories_per_hour"]
        rows.append([app, r["items_per_round"], *(f"{t.get(k, float('nan')):,.0f}" for k in
                     ("single loop", "local x1", "local x2", "ray x1", "ray x2")),
                     f"{r['efficiency_local_2']:.2f}", f"{r.get('efficiency_ray_2', float('nan')):.2f}",
                     f"{r.get('ray_overhead_us_per_episode', float('nan')):.0f}",
                     all(r["byte_identical"].values())])
    print_table("oracle trajectories per hour", ["app", "items", "single loop", "local x1", "local x2", "ray x1",
                                                 "ray x2", "eff local", "eff ray", "ray us/ep", "same bytes"], rows)
    print_table("hand-off per item (us of CPU; idle: share of the workers' wall time)",
                ["app", "backend", "parent cpu", "worker cpu", "idle", "items/dispatch"],
                [[app, name, f"{h['parent_cpu_us_per_item']:.0f}", f"{h.get('worker_cpu_us_per_item', float('nan')):.0f}",
                  f"{h.get('worker_idle_fraction', float('nan')):.2f}", f"{h.get('items_per_dispatch', float('nan')):.1f}"]
                 for app, r in results["throughput"].items() for name, h in r["handoff"].items()])
    m = results["memory"]
    print(f"\nmemory: {m}")
    print_table("group of 16: fork+observe per child vs cold reset per instance (us)",
                ["app", "fork", "cold reset", "ratio"],
                [[app, f"{g['fork_and_observe_us_per_child']:.1f}", f"{g['cold_reset_us_per_instance']:.1f}",
                  f"{g['ratio']:.1f}"] for app, g in results["group"].items()])
    write_json(a.out, "pool_scale", results, argv)


if __name__ == "__main__":
    main(sys.argv[1:])
