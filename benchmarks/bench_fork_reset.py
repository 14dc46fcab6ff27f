"""Figures 3 and 4: fork latency (10K and 1M-product worlds) and reset latency.

Fork: an env is brought to a mid-episode state (half of the buy_product oracle plan: signed
in, product page visited, cart filled) and forked >= 10,000 times, each fork timed on its
own. The same is done on the 1,000,000-product world in the same process, interleaving
batches of the two so machine load hits both alike; the figure of merit is the ratio of the
medians (a fork copies runtime + browser + meta, never world data, so it should not grow
with the world). snapshot() and restore() are timed alongside.

Reset, with a task, three ways (every task template):
  * cold: the first reset of a (task, seed) never seen in this process: instantiates the
    task from the world, sets up the start state, renders and parses the start page, and
    caches all of it;
  * same: the same (task, seed) again and again (a copy of the cached start);
  * warm-different: cycling over already-seen (task, seed) pairs, so consecutive resets
    differ (still a copy of a cached start).

    python benchmarks/bench_fork_reset.py [--quick] [--no-1m] [--out FILE]
"""
from __future__ import annotations

import sys
from functools import partial
from typing import Any

import orjson
from common import (
    now_ns,
    parser,
    print_table,
    reset_failures,
    settle,
    stat_row,
    summarize,
    target,
    time_each,
    try_reset,
    write_json,
)

FORK_TASK = "shopping/buy_product"
BIG = 1_000_000


def mid_episode(env, seed: int = 7):
    env.reset(seed=seed, options={"task": FORK_TASK})
    plan = env.oracle_plan()
    for a in plan[: len(plan) // 2]:
        env.step(a)
    return env, plan[: len(plan) // 2]


def fork_samples(envs: dict[str, Any], total: int, batch: int) -> dict[str, list[float]]:
    """``total`` individually timed forks per env, in interleaved batches of ``batch``."""
    out: dict[str, list[float]] = {k: [] for k in envs}
    for _ in range(max(1, total // batch)):
        for name, env in envs.items():
            settle()
            out[name].extend(time_each(env.fork, batch))
    return out


def reset_samples(env, tasks, seeds_cold, same_reps, quick) -> dict[str, list[float]]:
    cold, same, warm = [], [], []
    pairs = []
    for seed in seeds_cold:                      # first reset of each (task, seed)
        for tid in tasks:
            t0 = now_ns()
            ok = try_reset(env, seed, tid)
            if ok:
                cold.append((now_ns() - t0) * 1e-9)
                pairs.append((tid, seed))
    settle()
    for tid in tasks:                            # the same (task, seed) repeatedly
        opts = {"task": tid}
        s = next((seed for t, seed in pairs if t == tid), None)
        if s is None:
            continue
        same.extend(time_each(partial(env.reset, seed=s, options=opts), same_reps, warmup=2))
    settle()
    for _ in range(2 if quick else 6):           # cycling over cached, different (task, seed)
        for tid, s in pairs:
            t0 = now_ns()
            env.reset(seed=s, options={"task": tid})
            warm.append((now_ns() - t0) * 1e-9)
    return {"cold": cold, "same": same, "warm_different": warm}


def main(argv: list[str] | None = None) -> dict:
    p = parser(__doc__.split("\n")[0])
    p.add_argument("--no-1m", action="store_true", help="skip the 1,000,000-product world")
    p.add_argument("--forks", type=int, default=None, help="forks per world (default 12,000; quick 2,000)")
    args = p.parse_args(argv)
    n_forks = args.forks or (2_000 if args.quick else 12_000)

    import simweb

    env10k = simweb.make("shopping", seed=0)
    envs = {"10K": mid_episode(env10k)[0]}
    big = None
    if not args.no_1m:
        t0 = now_ns()
        big = simweb.make("shopping", seed=0, size=BIG, progress=True)
        big_load = (now_ns() - t0) * 1e-9
        envs["1M"] = mid_episode(big)[0]

    # sanity: a fork is independent and equal
    child = envs["10K"].fork()
    assert child.state_hash() == envs["10K"].state_hash()
    child.step("noop()")
    assert child.state_hash() != envs["10K"].state_hash()

    # ------------------------------------------------------------ fork
    forks = fork_samples(envs, n_forks, 500)
    snap, restore = {}, {}
    for name, env in envs.items():
        st = env.snapshot()
        settle()
        snap[name] = time_each(env.snapshot, 2000 if not args.quick else 300, warmup=10)
        restore[name] = time_each(partial(env.restore, st), 2000 if not args.quick else 300, warmup=10)
    fork_stats = {k: summarize(v, "us") for k, v in forks.items()}
    res: dict = {
        "fork_state": {"task": FORK_TASK, "steps_taken": len(mid_episode(env10k)[1]),
                       "state_bytes": {k: len(orjson.dumps(e.state)) for k, e in envs.items()}},
        "fork": fork_stats,
        "snapshot": {k: summarize(v, "us") for k, v in snap.items()},
        "restore": {k: summarize(v, "us") for k, v in restore.items()},
        "target_fork_median_us": target(fork_stats["10K"]["median"], 50.0),
    }
    if "1M" in fork_stats:
        ratio = fork_stats["1M"]["median"] / fork_stats["10K"]["median"]
        res["fork_ratio_1M_over_10K"] = round(ratio, 3)
        res["target_fork_ratio"] = target(ratio, 2.0)
        res["target_fork_median_us_1M"] = target(fork_stats["1M"]["median"], 50.0)
        res["world_1M_load_s"] = round(big_load, 2)

    # ------------------------------------------------------------ reset
    tasks = list(env10k.app.tasks)
    n_cold = 3 if args.quick else 25
    resets = reset_samples(env10k, tasks, list(range(5000, 5000 + n_cold)), 50 if args.quick else 300, args.quick)
    res["reset_10K"] = {k: summarize(v, "ms") for k, v in resets.items()}
    res["target_reset_median_ms"] = {"same": target(res["reset_10K"]["same"]["median"], 1.0),
                                     "warm_different": target(res["reset_10K"]["warm_different"]["median"], 1.0),
                                     "cold": target(res["reset_10K"]["cold"]["median"], 1.0)}
    if big is not None:
        r1m = reset_samples(big, tasks, list(range(5000, 5000 + (2 if args.quick else 8))),
                            30 if args.quick else 100, True)
        res["reset_1M"] = {k: summarize(v, "ms") for k, v in r1m.items()}
    res["reset_failures (skipped)"] = reset_failures()

    # ------------------------------------------------------------ print
    rows = [stat_row(f"fork {k}", v) for k, v in fork_stats.items()]
    rows += [stat_row(f"snapshot {k}", v) for k, v in res["snapshot"].items()]
    rows += [stat_row(f"restore {k}", v) for k, v in res["restore"].items()]
    print_table(f"fork / snapshot / restore at a mid-episode state ({FORK_TASK}, "
                f"state {res['fork_state']['state_bytes']} bytes)", ["op", "n", "median", "p95", "unit"], rows)
    if "fork_ratio_1M_over_10K" in res:
        print(f"fork median ratio 1M/10K = {res['fork_ratio_1M_over_10K']} (target <= 2: "
              f"{'met' if res['target_fork_ratio']['met'] else 'NOT met'})")
    print(f"fork median target <= 50 us: {'met' if res['target_fork_median_us']['met'] else 'NOT met'}")
    rows = [stat_row(f"reset 10K {k}", v) for k, v in res["reset_10K"].items()]
    if "reset_1M" in res:
        rows += [stat_row(f"reset 1M {k}", v) for k, v in res["reset_1M"].items()]
    print_table(f"reset with a task ({len(tasks)} templates)", ["reset", "n", "median", "p95", "unit"], rows)
    for k, v in res["target_reset_median_ms"].items():
        print(f"reset ({k}) median <= 1 ms: {'met' if v['met'] else 'NOT met'}")
    write_json(args.out, "fork_reset", res, sys.argv if argv is None else ["benchmarks/bench_fork_reset.py", *argv])
    return res


if __name__ == "__main__":
    main()
