"""Walk parity: random BrowserGym walks in-process and in Chromium, compared at every step.

For every app, N random walks of S actions (clicks on any bid, fills with text of every
kind, select_option with options that exist and that do not, check/uncheck, keys,
go_back/go_forward...) from varied start states (a task's oracle plan run part way),
each run in-process and in headless Chromium (simweb.walks). A walk agrees when the URL,
the runtime and meta state and the error class agree after every step; the parity rate
is the share of walks that agree, and every first divergence is counted under its class.

    python benchmarks/bench_walk_parity.py [--walks N] [--steps S] [--apps a,b] [--seed K] [--out FILE]

One Chromium is launched per app (by its BrowserEnv); about 1-2 s per walk of 25 steps.
"""
from __future__ import annotations

import sys
import time

from common import parser, print_table, write_json


def main(argv: list[str]) -> int:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--walks", type=int, default=200)
    p.add_argument("--steps", type=int, default=25)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--apps", default=None, help="comma-separated apps (default: all)")
    args = p.parse_args(argv)
    from simweb import registry
    from simweb.walks import run_walks

    walks = 5 if args.quick else args.walks
    apps = args.apps.split(",") if args.apps else registry.names()
    results: dict[str, dict] = {}
    rows = []
    for app in apps:
        t0 = time.perf_counter()
        report = run_walks(app, walks, args.steps, args.seed)
        report["seconds"] = round(time.perf_counter() - t0, 1)
        results[app] = report
        rows.append([app, f"{report['walks']}x{args.steps}", f"{report['parity']:.1%}",
                     f"{report['steps_agreeing']}/{report['steps_run']}", len(report["classes"]), report["seconds"]])
        for name, entry in report["classes"].items():
            print(f"  {app}: {entry['count']:4d}  {name}  e.g. {entry['example']['action']}", flush=True)
    print_table("walk parity, in-process vs Chromium", ["app", "walks x steps", "parity", "steps agreeing",
                                                         "classes", "seconds"], rows)
    write_json(args.out, "walk_parity", results, argv)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
