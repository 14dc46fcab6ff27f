"""Rollouts at scale: trajectories per hour through the pools, memory per live env, and
the group call's cost per child against a cold reset.

1. Throughput, per app: the same oracle work items (every template x seeds) through
   * the in-process single loop (the reference, one RolloutWorker in this process),
   * the local pool at 1 and 2 worker processes,
   * Ray at 1 and 2 actors (a local Ray started for them, its start not timed),
   each after a warm-up pass (worlds opened in every worker), in two phases: the single
   loop and the local pools with no Ray running, then the single loop again and Ray's
   pools (Ray's idle daemons take CPU that on 2 cores is the local workers'). Within a
   phase the timed passes are interleaved round by round, the pools in an order reversed
   every other round. Reported: trajectories/hour (median of rounds); scaling efficiency
   at 2 workers, ``tph(2) / (2 tph(1))`` from the medians (the headline, within a
   phase), with a 95% bootstrap interval over the rounds and the least and most of the
   rounds' own ratios, and the same against the single loop (``tph(2) / (2 tph(single
   loop))``); Ray's per-episode overhead against its phase's single loop; whether every
   backend returned the reference's bytes. Beside the wall clock, the CPU view of the
   same passes: per item, the driver's CPU, the harness's (the driver and every other
   process this run started: raylet, GCS, idle Ray workers) and the workers'; and the
   machine's cores split into what the workers, the harness and other users' processes
   took (the machine's busy CPU from /proc/stat less this run's) and what stayed idle, so
   that efficiency lost to the harness is told apart from efficiency lost to the
   machine's other load. The load averages at the start and end and the other load in
   cores over the passes are printed with the figures.
2. Memory: N envs of one app made and reset in one fresh process (the world shared):
   RSS growth per env; and the RSS of one Ray actor process holding an env.
3. The group call: a group of 16 from forks (fork + observe per child) against 16 cold
   resets of new instances, interleaved in the same process; and, for comparison, forks
   whose children verify their start again (the path before reset's verdict was reused).

The latest figures (docs/scale.md, BENCHMARKS.md):

    python benchmarks/bench_pool_scale.py --seeds 6 --rounds 6 --mem-envs 1000 \
        --out benchmarks/results_pool_scale_intervals.json

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
from pathlib import Path
from typing import Any

from common import median, parser, percentile, print_table, target, write_json

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
    (its bytes are the reference): no backend finds starts another one cached. The other
    configurations follow in an order reversed every other round (ABC, CBA, ...), so a
    drift in the machine's load over the run hits them alike; per pass the wall time, the
    CPU of every process of this run and the machine's busy CPU are read (:class:`Probe`).

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
        names = ["single loop", *pools]
        passes: dict[str, list[dict]] = {k: [] for k in names}
        same = {k: True for k in pools}
        pids = {name: worker_pids(pool) for name, pool in pools.items()}
        n = 0
        for r in range(rounds):
            items = items_for(app, range(r * seeds, (r + 1) * seeds))
            n = len(items)
            probe = Probe()
            reference = probe.measure(reference_loop, (items, ref_worker), [])[0]
            passes["single loop"].append(probe.result)
            order = list(pools) if r % 2 == 0 else list(reversed(pools))
            for name in order:
                got, row = probe.measure(pools[name].run, (items, "oracle"), pids[name])
                passes[name].append(row)
                same[name] &= got == reference
        for pool in pools.values():
            if isinstance(pool, LocalPool):
                pool.close()
        times = {k: [p["wall"] for p in v] for k, v in passes.items()}
        tph = {k: n / median(v) * 3600 for k, v in times.items() if v}
        res = {"items_per_round": n, "rounds": rounds, "seconds": times, "trajectories_per_hour": tph,
               "byte_identical": same, "passes": passes}
        for backend in ("local", "ray"):
            if f"{backend} x1" in times and f"{backend} x2" in times:
                e = efficiency(times[f"{backend} x1"], times[f"{backend} x2"])
                res[f"efficiency_{backend}_2"] = e["median"]
                res[f"efficiency_{backend}_2_interval"] = e
                res[f"efficiency_{backend}_2_vs_single_loop"] = efficiency(times["single loop"],
                                                                           times[f"{backend} x2"])
                res[f"cpu_efficiency_{backend}_2"] = cpu_efficiency(passes[f"{backend} x1"], passes[f"{backend} x2"])
        if "ray x1" in tph:
            res["ray_overhead_us_per_episode"] = (median(times["ray x1"]) - median(times["single loop"])) / n * 1e6
        res["handoff"] = handoff(passes, pools, n)
        out[app] = res
        print(f"{app}: " + ", ".join(f"{k} {v:,.0f}/h" for k, v in tph.items()) + "; efficiency at 2: " +
              ", ".join(f"{b} {res[f'efficiency_{b}_2']:.2f}" for b in ("local", "ray") if f"efficiency_{b}_2" in res),
              file=sys.stderr, flush=True)
    return out


def efficiency(t1: list[float], t2: list[float], resamples: int = 2000) -> dict:
    """Scaling efficiency at 2 workers from the rounds' wall times at 1 and 2 workers
    (``tph(2) / (2 tph(1))`` = ``t1 / (2 t2)``): the ratio of the medians (the headline),
    a 95% bootstrap interval of it (rounds resampled in pairs: the two configurations of
    a round ran back to back), and the least and most of the rounds' own ratios. The
    resampling is seeded: the same times give the same interval."""
    import random

    def ratio(a: list[float], b: list[float]) -> float:
        return median(a) / (2 * median(b))

    k = min(len(t1), len(t2))
    per_round = [t1[i] / (2 * t2[i]) for i in range(k)]
    rng = random.Random(0)
    boots = []
    for _ in range(resamples if k > 1 else 0):
        pick = [rng.randrange(k) for _ in range(k)]
        boots.append(ratio([t1[i] for i in pick], [t2[i] for i in pick]))
    boots.sort()
    return {"median": ratio(t1, t2), "bootstrap_95": [percentile(boots, 2.5), percentile(boots, 97.5)] if boots
            else [float("nan")] * 2, "round_min": min(per_round, default=float("nan")),
            "round_max": max(per_round, default=float("nan")), "rounds": per_round}


def cpu_efficiency(one: list[dict], two: list[dict]) -> dict:
    """The scaling efficiency at 2 workers that the CPU they and the harness spent allows
    on 2 cores with nothing else running: one worker's CPU per item over the CPU per item
    of two workers and the harness together (driver, raylet, GCS, idle Ray workers):
    ``w1 / (w2 + h2)``. At 1 worker the harness runs on the spare core, at 2 it takes the
    workers' share; other users' load and the workers' waits are left out, which is what
    sets it apart from the wall-clock figure. From the rounds' sums (10 ms ticks), with
    the least and most of the rounds' own values."""
    def per_round(a: dict, b: dict) -> float:
        spent = b["workers_cpu"] + b["driver_cpu"] + b["harness_cpu"]
        return a["workers_cpu"] / spent if spent else float("nan")

    total = per_round({"workers_cpu": sum(r["workers_cpu"] for r in one)},
                      {k: sum(r[k] for r in two) for k in ("workers_cpu", "driver_cpu", "harness_cpu")})
    rounds = [per_round(a, b) for a, b in zip(one, two)]
    return {"value": total, "round_min": min(rounds, default=float("nan")),
            "round_max": max(rounds, default=float("nan"))}


def merge_ray_phase(local: dict, ray: dict) -> None:
    """Ray's figures into the local phase's, per app; the Ray phase's own single loop is
    kept as "single loop (ray phase)" (Ray's overhead is against it)."""
    for app, r in ray.items():
        res = local[app]
        for key in ("seconds", "trajectories_per_hour", "passes"):
            res[key]["single loop (ray phase)"] = r[key].pop("single loop")
            res[key].update(r[key])
        res["byte_identical"].update(r["byte_identical"])
        h = r["handoff"]
        h["single loop (ray phase)"] = h.pop("single loop")
        res["handoff"].update(h)
        for key in ("efficiency_ray_2", "efficiency_ray_2_interval", "efficiency_ray_2_vs_single_loop",
                    "cpu_efficiency_ray_2", "ray_overhead_us_per_episode"):
            if key in r:
                res[key] = r[key]


def worker_pids(pool: LocalPool | RayPool) -> list[int]:
    """The worker processes of a warmed-up pool (Ray actors on this machine)."""
    if isinstance(pool, LocalPool):
        return pool.pids()
    import ray

    return [int(p) for p in ray.get([a.ping.remote() for a in pool.actors])]


TICK = os.sysconf("SC_CLK_TCK")


def proc_cpu(pid: int) -> tuple[int, float]:
    """(parent pid, user + system CPU seconds so far) of a process (Linux /proc; 10 ms
    ticks); (-1, nan) if it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return -1, float("nan")
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / TICK


def descendants() -> list[int]:
    """Every process started by this one, at any depth (the local pool's workers, and a
    local Ray's GCS, raylet, actors and idle workers): this run's processes, told apart
    from other users' by ancestry, not by name."""
    children: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            ppid, _ = proc_cpu(int(d))
            children.setdefault(ppid, []).append(int(d))
    out, todo = [], [os.getpid()]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def machine_cpu() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine so far, all cores (/proc/stat)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + v[4]                      # idle + iowait
    busy = sum(v[:8]) - idle                 # user nice system idle iowait irq softirq steal
    return busy / TICK, (busy + idle) / TICK



def _snapshot(pids: list[int]) -> dict[int, float]:
    return {p: c for p, c in ((p, proc_cpu(p)[1]) for p in pids) if c == c}


def _spent(before: dict[int, float], after: dict[int, float]) -> float:
    """CPU seconds between two snapshots, over the processes alive at both (an idle Ray
    worker that exits in between is left out, not read as nan)."""
    return sum(after[p] - c for p, c in before.items() if p in after)


class Probe:
    """One timed pass and where the machine's CPU went meanwhile: the wall time; this
    driver's CPU; the pool's workers' CPU; the harness's other processes (every other
    descendant of this one: raylet, GCS, idle Ray workers); and the rest of the machine's
    busy CPU, which is other users' load (the machine is shared). The process list is
    read before the clock starts, the CPU counters just outside it."""

    def __init__(self) -> None:
        self.result: dict = {}

    def measure(self, fn: Any, args: tuple, workers: list[int]) -> tuple[Any, dict]:
        others = [p for p in descendants() if p not in set(workers)]
        gc.collect()
        m0, w0, h0 = machine_cpu(), _snapshot(workers), _snapshot(others)
        p0, t0 = time.process_time(), time.perf_counter()
        value = fn(*args)
        wall, driver = time.perf_counter() - t0, time.process_time() - p0
        m1, w1, h1 = machine_cpu(), _snapshot(workers), _snapshot(others)
        busy, total = m1[0] - m0[0], m1[1] - m0[1]
        w, h = _spent(w0, w1), _spent(h0, h1)
        ours = driver + w + h
        self.result = {"wall": wall, "driver_cpu": driver, "workers_cpu": w, "harness_cpu": h,
                       "machine_busy_cpu": busy, "machine_cpu": total,
                       "other_load_cpu": max(0.0, busy - ours)}
        return value, self.result


def handoff(passes: dict[str, list[dict]], pools: dict[str, LocalPool | RayPool], n: int) -> dict:
    """Where the CPU went, per backend, summed over the rounds (so the 10 ms ticks of
    /proc average out): per item, the driver's CPU (pickling, dispatch, reading results
    back), the harness's other processes' (Ray's raylet, GCS, idle workers) and the
    workers' (the work itself, against the single loop's); the machine's other load in
    cores (other users' processes, over the passes' wall time); and, of the cores' time
    during the passes (cores x wall), the share each took and the share left idle. At 2
    workers on 2 cores the harness's and the other load's shares are what the workers
    lose to them, which separates the efficiency lost to the harness from that lost to
    the machine. Also the workers' own idle share and items per dispatch."""
    out = {}
    cores = os.cpu_count() or 1
    for name, rows in passes.items():
        if not rows:
            continue
        tot = {k: sum(r[k] for r in rows) for k in rows[0]}
        items = n * len(rows)
        pool = pools.get(name)
        k = pool.workers if pool is not None else 1
        work = tot["workers_cpu"] if pool is not None else tot["driver_cpu"]
        capacity = cores * tot["wall"]
        row = {"parent_cpu_us_per_item": tot["driver_cpu"] / items * 1e6,
               "harness_cpu_us_per_item": (tot["driver_cpu"] * (pool is not None) + tot["harness_cpu"]) / items * 1e6,
               "worker_cpu_us_per_item": work / items * 1e6,
               "other_load_cores": tot["other_load_cpu"] / tot["wall"],
               "machine_idle_share": max(0.0, 1 - tot["machine_busy_cpu"] / tot["machine_cpu"]),
               "share_of_cores": {"workers": work / capacity,
                                  "harness": (tot["driver_cpu"] * (pool is not None) + tot["harness_cpu"]) / capacity,
                                  "other_load": tot["other_load_cpu"] / capacity}}
        if pool is not None:
            row.update(worker_idle_fraction=max(0.0, 1 - work / (k * tot["wall"])),
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
    p.add_argument("--tables", type=Path, default=None, metavar="FILE",
                   help="measure nothing: print the tables of a results file this script wrote")
    a = p.parse_args(argv)
    if a.tables:
        try:
            saved: dict[str, Any] = json.loads(a.tables.read_text())["results"]
        except (OSError, ValueError, KeyError) as exc:
            print(f"bench_pool_scale: {a.tables} is not a results file of this script ({exc})", file=sys.stderr)
            raise SystemExit(2) from None
        for r in saved["throughput"].values():   # a file from before the CPU view had it
            for b in ("local", "ray"):
                if f"{b} x2" in r["passes"] and f"cpu_efficiency_{b}_2" not in r:
                    r[f"cpu_efficiency_{b}_2"] = cpu_efficiency(r["passes"][f"{b} x1"], r["passes"][f"{b} x2"])
        report(saved)
        return
    apps = a.apps.split(",") if a.apps else simweb.app_names()
    if a.quick:
        a.seeds, a.rounds, a.mem_envs = 2, 2, 500
    load_at_start = os.getloadavg()
    machine_at_start = machine_cpu()
    local = throughput(apps, a.seeds, a.rounds, {})            # no Ray on the machine yet
    pools: dict[int, RayPool] = {}
    if not a.no_ray:
        try:
            pools = start_ray_pools([1, 2])
        except Exception as exc:   # no Ray here: the local figures still stand
            print(f"Ray not measured: {exc}")
    ray_idle = None
    if pools:
        for pool in pools.values():
            pool.run(items_for(apps[0], range(100_000, 100_001)), "oracle")   # every actor up
        ray_idle = idle_cost(3.0)
        merge_ray_phase(local, throughput(apps, a.seeds, a.rounds, pools, local=False))
    machine_at_end, load_at_end = machine_cpu(), os.getloadavg()
    results: dict[str, Any] = {"throughput": local,
               "memory": memory(a.mem_app, a.mem_envs, pools.get(1)),
               "group": {app: group_cost(app, max(5, a.rounds * 5)) for app in apps},
               "load_note": load_note(load_at_start[0]),
               "machine": background(local, load_at_start, load_at_end, machine_at_start, machine_at_end),
               "ray_idle_cores": ray_idle}
    for pool in pools.values():
        pool.close()
    report(results)
    write_json(a.out, "pool_scale", results, argv)


def idle_cost(seconds: float) -> float:
    """The CPU (in cores) that this run's other processes take while nothing is asked of
    them: a local Ray's GCS, raylet, agents and idle actors. The harness's CPU per item
    on Ray includes it, spread over the items by the wall time they took."""
    pids = descendants()
    before = _snapshot(pids)
    time.sleep(seconds)
    return _spent(before, _snapshot(pids)) / seconds


def background(thr: dict, load_start: tuple[float, ...], load_end: tuple[float, ...],
               m0: tuple[float, float], m1: tuple[float, float]) -> dict:
    """The machine's load over the throughput measurement: the load averages at its start
    and end, the share of the machine's CPU left idle (/proc/stat), and the other users'
    load in cores during the timed passes (the machine's busy CPU less this run's)."""
    rows = [p for r in thr.values() for v in r["passes"].values() for p in v]
    wall = sum(p["wall"] for p in rows)
    return {"loadavg_start": list(load_start), "loadavg_end": list(load_end),
            "idle_share": 1 - (m1[0] - m0[0]) / max(1e-9, m1[1] - m0[1]), "cores": os.cpu_count(),
            "other_load_cores_in_passes": sum(p["other_load_cpu"] for p in rows) / max(1e-9, wall),
            "seconds": m1[1] - m0[1]}


def _iv(e: dict | None) -> str:
    if not e:
        return "-"
    lo, hi = e["bootstrap_95"]
    return f"{e['median']:.2f} [{lo:.2f}-{hi:.2f}] ({e['round_min']:.2f}-{e['round_max']:.2f})"


def _cpu(e: dict | None) -> str:
    return f"{e['value']:.2f} ({e['round_min']:.2f}-{e['round_max']:.2f})" if e else "-"


def report(results: dict) -> None:
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
    print_table("scaling efficiency at 2 workers: median [bootstrap 95%] (least-most of the rounds); "
                "by CPU: w1 / (w2 + harness2) (least-most)",
                ["app", "local", "ray", "local vs single loop", "ray vs single loop", "local by CPU", "ray by CPU"],
                [[app, _iv(r.get("efficiency_local_2_interval")), _iv(r.get("efficiency_ray_2_interval")),
                  _iv(r.get("efficiency_local_2_vs_single_loop")), _iv(r.get("efficiency_ray_2_vs_single_loop")),
                  _cpu(r.get("cpu_efficiency_local_2")), _cpu(r.get("cpu_efficiency_ray_2"))]
                 for app, r in results["throughput"].items()])
    print_table("CPU per item (us) and shares of the machine's cores during the passes (sums over the rounds)",
                ["app", "backend", "driver", "harness", "worker", "workers idle", "cores: workers", "harness",
                 "other load", "idle", "items/dispatch"],
                [[app, name, f"{h['parent_cpu_us_per_item']:.0f}", f"{h['harness_cpu_us_per_item']:.0f}",
                  f"{h['worker_cpu_us_per_item']:.0f}", f"{h.get('worker_idle_fraction', float('nan')):.2f}",
                  f"{h['share_of_cores']['workers']:.2f}", f"{h['share_of_cores']['harness']:.3f}",
                  f"{h['share_of_cores']['other_load']:.3f}", f"{h['machine_idle_share']:.2f}",
                  f"{h.get('items_per_dispatch', float('nan')):.1f}"]
                 for app, r in results["throughput"].items() for name, h in r["handoff"].items()])
    m = results["machine"]
    print(f"\nmachine: load average {m['loadavg_start'][0]:.2f} at start, {m['loadavg_end'][0]:.2f} at end; "
          f"{m['idle_share']:.0%} of its {m['cores']} cores idle over the {m['seconds'] / (m['cores'] or 1):.0f} s of "
          f"throughput passes and gaps; other users' load during the timed passes "
          f"{m['other_load_cores_in_passes']:.2f} cores")
    if results.get("ray_idle_cores") is not None:
        print(f"a local Ray with both pools' actors, idle: {results['ray_idle_cores']:.3f} cores")
    m = results["memory"]
    print(f"\nmemory: {m}")
    print_table("group of 16: fork+observe per child vs cold reset per instance (us)",
                ["app", "fork", "cold reset", "ratio"],
                [[app, f"{g['fork_and_observe_us_per_child']:.1f}", f"{g['cold_reset_us_per_instance']:.1f}",
                  f"{g['ratio']:.1f}"] for app, g in results["group"].items()])


if __name__ == "__main__":
    main(sys.argv[1:])
