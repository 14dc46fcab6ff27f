"""Figure 5: memory per additional env (N envs on one world, in one process).

Measured with /proc/self/statm (RSS) and tracemalloc (Python heap), after a gc, as the
growth from a baseline divided by N. Scenarios (each starts from the same warmed process;
the objects of one scenario are freed before the next):

  * fork_mid: N forks of an env at a mid-episode state (they share the parent's cached
    HTML and parsed page until they step);
  * fork_mid+step: the same forks after one navigating step each, all to the same page
    (each holds its own state and rendered HTML; identical HTML shares one parsed page
    through the engine's parse cache);
  * fork_mid+own_page: each fork then opens a different product page (nothing shared:
    its own HTML and parsed page, the worst case for envs in use);
  * make: N fresh ``simweb.make()`` on the same world (the App, world connection and
    templates are shared process-wide);
  * make+reset: N fresh envs reset to a task (start state copied from the cache; the
    start page's parse is shared);
  * make+reset+steps: the same, then 3 oracle steps each (own pages, own state).

Each scenario runs in its own fresh subprocess (memory freed by one scenario would
otherwise be reused by the next and hide its RSS growth). RSS growth includes allocator
slack and is the number that matters for packing envs in a process; tracemalloc counts the
Python objects actually retained.

    python benchmarks/bench_memory.py [--quick] [--n N] [--out FILE]
"""
from __future__ import annotations

import gc
import json
import subprocess
import sys
import tracemalloc

from common import parser, print_table, rss_bytes, target, write_json

TASK = "shopping/buy_product"
TASKS_FOR_RESET = ["shopping/buy_product", "shopping/add_to_cart", "shopping/cancel_order", "shopping/write_review"]


def measure(build, n: int) -> dict:
    """Build n objects with ``build(i)``; RSS and tracemalloc growth per object."""
    gc.collect()
    rss0 = rss_bytes()
    tracemalloc.start()
    tm0 = tracemalloc.get_traced_memory()[0]
    objs = [build(i) for i in range(n)]
    gc.collect()
    tm1 = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    rss1 = rss_bytes()
    out = {"n": n, "rss_growth_total_mb": round((rss1 - rss0) / 2**20, 2),
           "rss_per_env_kb": round((rss1 - rss0) / n / 1024, 1),
           "py_heap_per_env_kb": round((tm1 - tm0) / n / 1024, 1)}
    del objs
    gc.collect()
    return out


def main(argv: list[str] | None = None) -> dict:
    p = parser(__doc__.split("\n")[0])
    p.add_argument("--n", type=int, default=None, help="envs per scenario (default 200; quick 50)")
    p.add_argument("--scenario", default=None, help=argparse_hidden())
    args = p.parse_args(argv)
    n = args.n or (50 if args.quick else 200)
    if args.scenario is None:
        return orchestrate(args, n, argv)

    import simweb

    rss_start = rss_bytes()
    parent = simweb.make("shopping", seed=0)
    # warm every cache a scenario would otherwise fill on first use (episode starts, templates)
    for i in range(n):
        parent.reset(seed=i % 20, options={"task": TASKS_FOR_RESET[i % len(TASKS_FOR_RESET)]})
        plan = parent.oracle_plan()
        for a in plan[:3]:
            parent.step(a)
    parent.reset(seed=7, options={"task": TASK})
    plan = parent.oracle_plan()
    for a in plan[: len(plan) // 2]:
        parent.step(a)
    nav_action = "goto('/cart')"
    child = parent.fork()
    child.step(nav_action)
    del child
    rss_warm = rss_bytes()

    def fork_step(i):
        c = parent.fork()
        c.step(nav_action)
        return c

    def fork_own_page(i):
        c = parent.fork()
        c.step(f"goto('/p/{i + 1}')")      # a different product page per env: nothing shared
        return c

    def make_reset(i):
        e = simweb.make("shopping", seed=0)
        e.reset(seed=i % 20, options={"task": TASKS_FOR_RESET[i % len(TASKS_FOR_RESET)]})
        return e

    def make_reset_steps(i):
        e = make_reset(i)
        for a in e.oracle_plan()[:3]:
            e.step(a)
        return e

    scenarios = {
        "fork_mid": lambda i: parent.fork(),
        "fork_mid+step": fork_step,
        "fork_mid+own_page": fork_own_page,
        "make": lambda i: simweb.make("shopping", seed=0),
        "make+reset": make_reset,
        "make+reset+steps": make_reset_steps,
    }
    build = scenarios[args.scenario]
    build(0)   # first-use effects outside the measurement
    out = measure(build, n)
    out["process_rss_mb"] = {"before_world": round(rss_start / 2**20, 1), "warm_one_env": round(rss_warm / 2**20, 1)}
    print(json.dumps(out))
    return out


SCENARIOS = ["fork_mid", "fork_mid+step", "fork_mid+own_page", "make", "make+reset", "make+reset+steps"]


def argparse_hidden() -> str:
    import argparse
    return argparse.SUPPRESS


def orchestrate(args, n: int, argv) -> dict:
    res: dict = {"n": n}
    scenarios = SCENARIOS
    for name in scenarios:
        proc = subprocess.run([sys.executable, __file__, "--scenario", name, "--n", str(n)],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            sys.stderr.write(proc.stderr)
            raise SystemExit(f"memory scenario {name!r} failed (exit code {proc.returncode})")
        res[name] = json.loads(proc.stdout.strip().splitlines()[-1])
    res["process_rss_mb"] = res[scenarios[0]].pop("process_rss_mb")
    for name in scenarios[1:]:
        res[name].pop("process_rss_mb", None)
    worst = max(max(res[k]["rss_per_env_kb"], res[k]["py_heap_per_env_kb"]) for k in scenarios)
    res["target_rss_per_env_mb"] = target(round(worst / 1024, 3), 1.0)
    print_table(f"memory per additional env (N={n} per scenario on one world; each scenario in a fresh process)",
                ["scenario", "n", "RSS growth MB", "RSS/env KB", "py heap/env KB"],
                [[k, v["n"], v["rss_growth_total_mb"], v["rss_per_env_kb"], v["py_heap_per_env_kb"]]
                 for k, v in res.items() if isinstance(v, dict) and "rss_per_env_kb" in v])
    print(f"process RSS with one warm env: {res['process_rss_mb']['warm_one_env']} MB")
    print(f"target <= 1 MB per env (worst scenario {worst:.0f} KB): "
          f"{'met' if res['target_rss_per_env_mb']['met'] else 'NOT met'}")
    write_json(args.out, "memory", res, sys.argv if argv is None else ["benchmarks/bench_memory.py", *argv])
    return res


if __name__ == "__main__":
    main()
