"""Figure 10: garbage-collection cost of long random-agent runs, with the AX-tree line
records frozen into tuples after parsing (A) and left as lists (B, the previous engine).

Each variant runs in its own fresh process (so neither inherits the other's heap),
alternating A, B, A, B... ``--rounds`` times per app; each process rolls out the random
agent over every task template (``--steps`` steps in all) and records, with a
``gc.callbacks`` hook, the duration of every full (generation 2) collection, the number of
tracked objects at the end, the step-time median and the slowest step.

    python benchmarks/bench_gc.py [--quick] [--apps forum,shopping] [--rounds N] [--out FILE]
"""
from __future__ import annotations

import json
import subprocess
import sys
from statistics import median

from common import parser, print_table, write_json

CHILD = r"""
import gc, json, sys, time
import simweb
from simweb import axtree
from simweb.agents import RandomAgent
app, variant, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
if variant == "B":
    axtree.FREEZE_RECORDS = False      # the previous engine: records stay lists
full = []
def hook(phase, info, t=[0.0]):
    if info["generation"] == 2:
        if phase == "start":
            t[0] = time.perf_counter()
        else:
            full.append(time.perf_counter() - t[0])
env = simweb.make(app, seed=0)
tasks = sorted(env.app.tasks)
agent = RandomAgent(seed=0)
gc.collect()
gc.callbacks.append(hook)
times, ep = [], 0
while len(times) < steps:
    obs, info = env.reset(seed=ep, options={"task": tasks[ep % len(tasks)]})
    ep += 1
    for _ in range(30):
        t0 = time.perf_counter()
        obs, r, term, trunc, info = env.step(agent.act(obs))
        times.append(time.perf_counter() - t0)
        if term or trunc or len(times) >= steps:
            break
gc.callbacks.remove(hook)
times.sort()
print(json.dumps({"tracked": len(gc.get_objects()), "full_gc_ms": [x * 1e3 for x in full],
                  "step_median_ms": times[len(times) // 2] * 1e3, "step_max_ms": times[-1] * 1e3,
                  "total_s": sum(times)}))
"""


def main(argv: list[str] | None = None) -> dict:
    p = parser(__doc__.split("\n")[0])
    p.add_argument("--apps", default="forum,shopping,issues")
    p.add_argument("--rounds", type=int, default=None, help="A/B process pairs per app (default 3; quick 1)")
    p.add_argument("--steps", type=int, default=None, help="random-agent steps per process (default 1800)")
    args = p.parse_args(argv)
    rounds = args.rounds or (1 if args.quick else 3)
    steps = args.steps or (600 if args.quick else 1800)
    out: dict = {}
    rows = []
    for app in args.apps.split(","):
        runs: dict[str, list[dict]] = {"A": [], "B": []}
        for _ in range(rounds):
            for variant in ("A", "B"):
                res = subprocess.run([sys.executable, "-c", CHILD, app, variant, str(steps)], capture_output=True,
                                     text=True, timeout=1800)
                if res.returncode != 0:
                    raise SystemExit(f"{app}/{variant} failed: {res.stderr[-500:]}")
                runs[variant].append(json.loads(res.stdout))
        summary = {}
        for v, rs in runs.items():
            gcs = [x for r in rs for x in r["full_gc_ms"]]
            summary[v] = {"processes": len(rs), "steps_each": steps,
                          "tracked_objects_median": median(r["tracked"] for r in rs),
                          "full_collections": len(gcs), "full_gc_ms_median": round(median(gcs), 1) if gcs else None,
                          "full_gc_ms_max": round(max(gcs), 1) if gcs else None,
                          "full_gc_s_total_median": round(median(sum(r["full_gc_ms"]) / 1e3 for r in rs), 3),
                          "step_median_ms": round(median(r["step_median_ms"] for r in rs), 3),
                          "step_max_ms_median": round(median(r["step_max_ms"] for r in rs), 1),
                          "rollout_s_median": round(median(r["total_s"] for r in rs), 3)}
            s = summary[v]
            rows.append([f"{app} {'frozen (A)' if v == 'A' else 'lists (B)'}", s["tracked_objects_median"],
                         s["full_collections"], s["full_gc_ms_median"], s["full_gc_ms_max"], s["full_gc_s_total_median"],
                         s["step_median_ms"], s["step_max_ms_median"], s["rollout_s_median"]])
        out[app] = summary
    print_table("garbage collection over random-agent runs (medians over processes)",
                ["app, records", "tracked objs", "full GCs", "GC ms med", "GC ms max", "GC s/run", "step ms",
                 "max step ms", "run s"], rows)
    write_json(args.out, "gc", out, argv)
    return out


if __name__ == "__main__":
    main(sys.argv[1:])
