"""Figure 7 (bonus): throughput of ``simweb demo``-style rollouts.

The same job list ``simweb demo`` builds (for every shopping task template and seed: an
oracle rollout that forks random branches from the middle of its trajectory, and a random
agent rollout) is run through ``simweb.rollout.run_pool`` with 1 worker (in this process)
and with 2 worker processes. Throughput = all env steps (oracle + random + branch steps) /
wall-clock time of run_pool, so resets, forks, agents and trajectory bookkeeping (a state
hash per step) are included. Each configuration is repeated and the median reported; 1 and
2 workers alternate so machine load hits both alike.

    python benchmarks/bench_rollout.py [--quick] [--seeds N] [--repeats N] [--out FILE]
"""
from __future__ import annotations

import os
import sys
import time

from common import median, parser, print_table, reset_failures, try_reset, write_json


def jobs_like_demo(seeds: int, branches: int):
    import simweb
    from simweb.episodes.rollout import Job

    env = simweb.make("shopping", seed=0)   # the world and App exist before workers fork
    jobs = []
    for tid in env.app.tasks:
        for s in range(seeds):
            if not try_reset(env, s, tid):
                continue
            mid = len(env.oracle_plan()) // 2
            jobs.append(Job("shopping", 0, None, tid, s, "oracle", fork_at=mid, fork_branches=branches, fork_steps=10))
            jobs.append(Job("shopping", 0, None, tid, s, "random"))
    return jobs


def run(jobs, workers: int) -> dict:
    from simweb.episodes.rollout import run_pool

    t0 = time.perf_counter()
    results = run_pool(jobs, workers)
    wall = time.perf_counter() - t0
    steps = sum(r["steps"] + r.get("fork_steps", 0) for r in results)
    rollout_s = sum(r["seconds"] + r.get("fork_seconds", 0.0) for r in results)
    ok = sum(1 for r in results if r["agent"] == "oracle" and r["success"])
    n_oracle = sum(1 for r in results if r["agent"] == "oracle")
    return {"steps": steps, "wall_s": wall, "steps_per_s": steps / wall, "in_episode_steps_per_s": steps / rollout_s,
            "oracle_success": f"{ok}/{n_oracle}"}


def main(argv: list[str] | None = None) -> dict:
    p = parser(__doc__.split("\n")[0])
    p.add_argument("--seeds", type=int, default=None, help="seeds per template (default 4; quick 1)")
    p.add_argument("--repeats", type=int, default=None, help="repeats per configuration (default 3; quick 1)")
    p.add_argument("--branches", type=int, default=4)
    args = p.parse_args(argv)
    seeds = args.seeds or (1 if args.quick else 4)
    repeats = args.repeats or (1 if args.quick else 3)

    jobs = jobs_like_demo(seeds, args.branches)
    runs: dict[int, list[dict]] = {1: [], 2: []}
    run(jobs[:4], 1)   # warm-up: imports, templates, episode-start cache of this process
    for _ in range(repeats):
        for w in (1, 2):
            runs[w].append(run(jobs, w))
    res: dict = {"jobs": len(jobs), "seeds_per_template": seeds, "branches": args.branches, "repeats": repeats,
                 "cpu_count": os.cpu_count(), "reset_failures (jobs skipped)": reset_failures()}
    for w, rs in runs.items():
        res[f"workers={w}"] = {
            "steps_per_run": rs[0]["steps"],
            "wall_s_median": round(median([r["wall_s"] for r in rs]), 2),
            "steps_per_s_median": round(median([r["steps_per_s"] for r in rs])),
            "in_episode_steps_per_s_median": round(median([r["in_episode_steps_per_s"] for r in rs])),
            "oracle_success": rs[0]["oracle_success"],
            "all_runs_steps_per_s": [round(r["steps_per_s"]) for r in rs],
        }
    res["speedup_2_workers"] = round(res["workers=2"]["steps_per_s_median"] / res["workers=1"]["steps_per_s_median"], 2)
    print_table(f"demo-style rollouts: {len(jobs)} jobs ({seeds} seed(s) x templates x oracle+random, "
                f"{args.branches} forked branches per oracle run), median of {repeats}",
                ["workers", "steps/run", "wall s", "steps/s (wall)", "steps/s in episodes", "oracle ok"],
                [[w, v["steps_per_run"], v["wall_s_median"], v["steps_per_s_median"], v["in_episode_steps_per_s_median"],
                  v["oracle_success"]] for w, v in ((1, res["workers=1"]), (2, res["workers=2"]))])
    print(f"speed-up with 2 workers: {res['speedup_2_workers']}x")
    write_json(args.out, "rollout", res, sys.argv if argv is None else ["benchmarks/bench_rollout.py", *argv])
    return res


if __name__ == "__main__":
    main()
