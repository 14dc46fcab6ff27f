"""Median CPU time of one env.step over every app's oracle plans, for A/B runs of two trees.

Runs bench_step.run_plans (the oracle plans of every task template, reset untimed) for each
app, after one warm-up pass, and prints {app: median step CPU time in us}. To compare a
branch with main, extract main (`git archive main | tar -x -C /tmp/main`, copy the compiled
simweb/*.so next to its sources) and run both alternately:

    PYTHONPATH=/tmp/main python benchmarks/bench_step_plans.py --seeds 3    # main's simweb
    python benchmarks/bench_step_plans.py --seeds 3                         # this tree
"""
from __future__ import annotations

import json
import statistics
import sys

from bench_step import run_plans
from common import parser


def main(argv: list[str]) -> int:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--apps", default="shopping,forum,issues,cms,booking")
    p.add_argument("--seeds", type=int, default=3)
    args = p.parse_args(argv)
    import simweb

    out = {}
    for app in args.apps.split(","):
        env = simweb.make(app, seed=0)
        tasks = sorted(env.app.tasks)
        run_plans(env, tasks, range(1), lambda *a: None)   # warm caches
        samples: list[float] = []
        run_plans(env, tasks, range(args.seeds), lambda tid, a, dt, r, cpu: samples.append(cpu))
        out[app] = round(statistics.median(samples) * 1e6, 1)
    print(json.dumps({"simweb": simweb.__file__, "median_step_cpu_us": out}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
