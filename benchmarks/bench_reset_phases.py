"""Where a cold reset's time goes, per app, on the default and the 10x world.

A cold reset (the first reset of a new task and seed) draws the task's parameters from
the world, builds the start state, requests the start page (resolve: the page's world
queries; render: Jinja), judges the start state (the start verdict) and parses the page
into the AX tree. This script times each phase on its own, in thread-CPU time, for every
template at new seeds, after the same warm-up as ``bench_apps.py`` (the oracle plans of
every template at seeds 0 and 1), then times whole cold resets at other new seeds.
The phases replay what :func:`simweb.env.episode_start` does, one at a time.

    python benchmarks/bench_reset_phases.py [--quick] [--apps forum,issues] [--out FILE]
"""
from __future__ import annotations

import sys
from typing import Any

from common import cpu_ns, parser, print_table, settle, summarize, try_reset, write_json

from simweb.core.functions import using
from simweb.core.worlddb import Rng
from simweb.web.axtree import parse_page

PHASES = ("sample", "start state", "resolve", "render", "verdict", "parse")


def phases(env: Any, seeds: range) -> dict[str, list[float]]:
    """CPU seconds of each phase of the cold start of every template at ``seeds``."""
    app = env.app
    out: dict[str, list[float]] = {k: [] for k in PHASES}
    out["sum"] = []
    for seed in seeds:
        for tid in sorted(app.tasks):
            t = app.tasks[tid]
            c = [cpu_ns()]
            try:
                p = t.sample(app, Rng.derive("task", t.id, seed))
            except RuntimeError:
                continue
            c.append(cpu_ns())
            goal, facts = t.goal(app, p), t.facts(app, p)
            state = app.initial_state(seed)
            state["meta"]["task"] = {"id": t.id, "params": p}
            if t.sign_in and p.get("user_id") is not None:
                state["browser"]["user"] = int(p["user_id"])
            t.setup(app, state, p)
            url = t.start_url_for(app, p)
            c.append(cpu_ns())
            tab = state["browser"]["tabs"][state["browser"]["active"]]
            with using(app._ctx(state, url)):
                app._tick(state)
                page, penv, status, error, _ = app._resolve(state, url)
                c.append(cpu_ns())
                app._set_tab(state, tab, url, page.name if (page and status == 200) else "error", status, True)
                html = app._render_resolved(state, tab, page, penv, status, error)
            c.append(cpu_ns())
            t.verify(app, p, state, state, None)
            c.append(cpu_ns())
            parse_page(html).axtree()
            c.append(cpu_ns())
            del goal, facts
            for i, k in enumerate(PHASES):
                out[k].append((c[i + 1] - c[i]) * 1e-9)
            out["sum"].append((c[-1] - c[0]) * 1e-9)
    return out


def cold_resets(env: Any, seeds: range) -> list[float]:
    out = []
    for seed in seeds:
        for tid in sorted(env.app.tasks):
            c0 = cpu_ns()
            if try_reset(env, seed, tid):
                out.append((cpu_ns() - c0) * 1e-9)
    return out


def main(argv: list[str] | None = None) -> dict:
    p = parser(__doc__.split("\n")[0])
    p.add_argument("--apps", default=None, help="comma-separated apps (default: every registered app)")
    args = p.parse_args(argv)
    import simweb

    names = args.apps.split(",") if args.apps else list(simweb.app_names())
    n = 2 if args.quick else 4
    results: dict[str, Any] = {}
    rows = []
    for name in names:
        default = simweb.make(name, seed=0)
        envs = {"default": default, "10x": simweb.make(name, seed=0, size=default.app.size * 10)}
        for k, env in envs.items():
            for seed in (0, 1):   # warm-up as bench_apps.py: the oracle plans of every template
                for tid in sorted(env.app.tasks):
                    if try_reset(env, seed, tid):
                        for a in env.oracle_plan():
                            env.step(a)
            settle()
            ph = phases(env, range(8000, 8000 + n))
            settle()
            whole = cold_resets(env, range(9000, 9000 + n))
            res = {k2: summarize(v, "ms") for k2, v in ph.items() if v}
            res["reset"] = summarize(whole, "ms")
            results[f"{name} {k}"] = res
            rows.append([f"{name} {k}", *[res[x]["median"] for x in PHASES], res["sum"]["median"],
                         res["reset"]["median"], res["reset"]["mean"]])
            print(f"{name} {k}: done", flush=True)
    print_table("cold reset phases, thread-CPU medians (ms)",
                ["app, world", *PHASES, "sum", "reset", "reset mean"], rows)
    write_json(args.out, "reset_phases", results, argv)
    return results


if __name__ == "__main__":
    main(sys.argv[1:])
