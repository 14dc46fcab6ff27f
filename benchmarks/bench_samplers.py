"""How long each task template takes to draw its parameters, over many new seeds.

A cold reset first draws the task's parameters from the world (``TaskTemplate.instantiate``).
Most templates draw in about 0.1 ms; a rejection sampler that asks the world one query per
candidate can take milliseconds a draw, and an RL run that resets one template at ever new
seeds pays that on every episode. This script instantiates every template of each app at
``--seeds`` new seeds (9000...), in a fresh process per app, with the garbage collector
off (its pauses land on whichever draw allocates last and are not the sampler's), and
reports per template the first draw, the median and mean, and the total; the slowest
templates (by total) first.

    python benchmarks/bench_samplers.py [--apps forum,issues] [--seeds 40] [--top 8]
"""
from __future__ import annotations

import json
import subprocess
import sys
from statistics import mean, median
from typing import Any

from common import parser, print_table, write_json

CHILD = r"""
import gc, json, sys, time
import simweb
name, seeds = sys.argv[1], int(sys.argv[2])
env = simweb.make(name, seed=0)
gc.disable()
out = {}
for tid in sorted(env.app.tasks):
    t = env.app.tasks[tid]
    times = []
    for s in range(9000, 9000 + seeds):
        c = time.thread_time_ns()
        try:
            t.instantiate(env.app, s, None)
        except Exception:   # this seed draws nothing for this template: not a draw
            continue
        times.append(time.thread_time_ns() - c)
    out[tid] = times
print(json.dumps(out))
"""


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = parser(__doc__.split("\n")[0])
    p.add_argument("--apps", default=None, help="comma-separated apps (default: every registered app)")
    p.add_argument("--seeds", type=int, default=None, help="new seeds per template (default 40, quick 10)")
    p.add_argument("--top", type=int, default=8, help="templates shown per app (default 8)")
    args = p.parse_args(argv)
    import simweb

    names = args.apps.split(",") if args.apps else list(simweb.app_names())
    seeds = args.seeds or (10 if args.quick else 40)
    results: dict[str, Any] = {"seeds": seeds}
    rows = []
    for name in names:
        r = subprocess.run([sys.executable, "-c", CHILD, name, str(seeds)], capture_output=True, text=True,
                           check=False)
        if r.returncode != 0:
            raise SystemExit(f"bench_samplers: {name} failed:\n{r.stderr[-2000:]}")
        per = {tid: ts for tid, ts in json.loads(r.stdout.splitlines()[-1]).items() if ts}
        every = [x for ts in per.values() for x in ts]
        stats = {tid: {"draws": len(ts), "first_ms": ts[0] / 1e6, "median_ms": median(ts) / 1e6,
                       "mean_ms": mean(ts) / 1e6, "total_ms": sum(ts) / 1e6} for tid, ts in per.items()}
        results[name] = {"all": {"draws": len(every), "median_ms": median(every) / 1e6, "mean_ms": mean(every) / 1e6},
                         "templates": stats}
        for tid, s in sorted(stats.items(), key=lambda kv: -kv[1]["total_ms"])[: args.top]:
            rows.append([tid, s["draws"], round(s["first_ms"], 2), round(s["median_ms"], 3), round(s["mean_ms"], 3),
                         round(s["total_ms"], 1)])
        rows.append([f"{name}: every template", len(every), "", round(median(every) / 1e6, 3),
                     round(mean(every) / 1e6, 3), round(sum(every) / 1e6, 1)])
        print(f"{name}: done", flush=True)
    print_table(f"parameter draws at {seeds} new seeds per template (thread-CPU, collector off)",
                ["template", "draws", "first ms", "median ms", "mean ms", "total ms"], rows)
    write_json(args.out, "samplers", results, argv)
    return results


if __name__ == "__main__":
    main(sys.argv[1:])
