"""Walk parity: random BrowserGym walks in-process and in Chromium, compared at every step.

For every app, N random walks of S actions (clicks on any bid, fills with text of every
kind, select_option with options that exist and that do not, check/uncheck, keys,
go_back/go_forward...) from varied start states (a task's oracle plan run part way),
each run in-process and in headless Chromium (simweb.walks). A walk agrees when the URL,
the runtime and meta state and the error class agree after every step; the parity rate
is the share of walks that agree, and every first divergence is counted under its class.

    python benchmarks/bench_walk_parity.py [--walks N] [--steps S] [--apps a,b] [--seed K] [--out FILE]
        [--interleave --log walks.jsonl] [--from-log walks.jsonl] [--variants SPEC]

``--variants SPEC`` (the spec of ``simweb demo --variants``: ``1-20``, ``test:5``...) runs
walk k on the spec's variant ``k mod len(ids)`` (its start state drawn on that site, so
Chromium loads the variant's pages, URLs and words), and reports parity per variant too.

One Chromium is launched per app (by its BrowserEnv); 1-5 s per walk of 25 steps,
depending on the machine's load. With ``--interleave`` the apps take turns walk by walk
(walk k of every app before walk k+1 of any; every app's Chromium open at once) and
``--log`` appends each walk's record as a JSON line when it ends, so a run stopped early
still gives every app the same number of walks: ``--from-log`` reports from such a log
(the walks each app completed). Walk k of an app is the same walk in either mode.
"""
from __future__ import annotations

import json
import random
import sys
import time
from typing import Any, TextIO

from common import parser, print_table, write_json


def main(argv: list[str]) -> int:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--walks", type=int, default=200)
    p.add_argument("--steps", type=int, default=25)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--apps", default=None, help="comma-separated apps (default: all)")
    p.add_argument("--interleave", action="store_true", help="apps take turns, walk by walk")
    p.add_argument("--log", default=None, help="append each walk's record to this JSONL file")
    p.add_argument("--from-log", default=None, help="report from a --log file instead of walking")
    p.add_argument("--variants", default=None, help="site variants, walk k on the k-th (mod their count)")
    args = p.parse_args(argv)
    from simweb.runtime import registry
    from simweb.tools.walks import redeclare, run_walks, summarize

    walks = 5 if args.quick else args.walks
    apps = args.apps.split(",") if args.apps else registry.names()
    results: dict[str, dict] = {}
    rows = []
    done: dict[str, list[dict[str, Any]]] | None = None
    seconds: dict[str, float] = {}
    if args.from_log:
        done = {}
        with open(args.from_log, encoding="utf-8") as f:
            for line in f:
                rec = json.loads(line)
                done.setdefault(rec.pop("app"), []).append(redeclare(rec))
        n = min(len(v) for v in done.values())   # the walks every app completed
        apps = [a for a in apps if a in done]
        done = {a: sorted(done[a], key=lambda r: r["walk"])[:n] for a in apps}
        seconds = {a: round(sum(r.get("seconds", 0.0) for r in done[a]), 1) for a in apps}
    elif args.interleave or args.variants:
        with open(args.log or "/dev/null", "a", encoding="utf-8") as log:
            done, seconds = interleaved(apps, walks, args.steps, args.seed, log, args.variants)
    for app in apps:
        if done is not None:
            report = summarize(app, done[app], args.steps)
            report["seconds"] = seconds[app]
        else:
            t0 = time.perf_counter()
            report = run_walks(app, walks, args.steps, args.seed)
            report["seconds"] = round(time.perf_counter() - t0, 1)
        by_variant: dict[int, list[dict[str, Any]]] = {}
        for w in (done or {}).get(app, []):
            by_variant.setdefault(w.get("variant", 0), []).append(w)
        if args.variants:
            report["per_variant"] = {str(v): {"walks": len(ws), "agreeing": sum(w["divergence"] is None for w in ws),
                                              "agreeing_or_declared": sum(
                                                  w["divergence"] is None or w["divergence"]["class"].startswith("declared ")
                                                  for w in ws)}
                                     for v, ws in sorted(by_variant.items())}
        results[app] = report
        off = [v for v, r in report.get("per_variant", {}).items() if r["agreeing_or_declared"] < r["walks"]]
        if args.variants:
            print(f"  {app}: {len(report['per_variant'])} variants walked, an undeclared divergence on "
                  f"{', '.join(off) if off else 'none'}", flush=True)
        rows.append([app, f"{report['walks']}x{args.steps}", f"{report['parity']:.1%}",
                     f"{report['parity_but_declared']:.1%}",
                     f"{report['steps_agreeing']}/{report['steps_run']}", len(report["classes"]), report["seconds"]])
        for name, entry in report["classes"].items():
            print(f"  {app}: {entry['count']:4d}  {name}  e.g. {entry['example']['action']}", flush=True)
    print_table("walk parity, in-process vs Chromium", ["app", "walks x steps", "parity", "but declared", "steps agreeing",
                                                         "classes", "seconds"], rows)
    write_json(args.out, "walk_parity", results, argv)
    return 0


def interleaved(apps: list[str], walks: int, steps: int, seed: int, log: TextIO, variants: str | None = None
                ) -> tuple[dict[str, list[dict[str, Any]]], dict[str, float]]:
    """Walk 0 of every app, then walk 1 of every app...: each app's envs stay open (one
    Chromium for all, a context and a served app each, as tests/test_walk_parity.py has
    them), each walk's record (with its app and seconds) is appended to ``log`` when it ends.
    With ``variants``, walk k starts on the k-th variant of the spec (mod its length): an
    in-process env per variant, the same Chromium env (a restored state renders as its
    variant)."""
    from playwright.sync_api import sync_playwright

    import simweb
    from simweb.runtime.variants import parse_ids
    from simweb.serving.browser import BrowserEnv, ServedApp, launch_chromium
    from simweb.tools.walks import run_walk, start_state

    envs: dict[str, tuple[Any, Any, Any]] = {}
    ids = {a: parse_ids(variants, a) if variants else [0] for a in apps}
    sims: dict[tuple[str, int], Any] = {}
    results: dict[str, list[dict[str, Any]]] = {a: [] for a in apps}
    seconds = dict.fromkeys(apps, 0.0)
    pw = sync_playwright().start()
    chromium = launch_chromium(pw, headless=True)
    try:
        for app in apps:
            served = ServedApp(app, world_seed=0)
            web = BrowserEnv(app, 0, server=served, browser=chromium, screenshots=False, timeout_ms=1000,
                             max_steps=100_000)
            envs[app] = (simweb.make(app, seed=0, max_steps=100_000), web, served)
        for k in range(walks):
            for app in apps:
                sim, web, _ = envs[app]
                v = ids[app][k % len(ids[app])]
                if v:
                    if (app, v) not in sims:
                        sims[app, v] = simweb.make(app, seed=0, variant=v, max_steps=100_000)
                    sim = sims[app, v]
                t0 = time.perf_counter()
                rng = random.Random(f"{seed}:{k}")   # as simweb.walks.run_walks draws walk k
                result = run_walk(sim, web, start_state(sim, rng), rng, steps)
                result["walk"] = k
                if v:
                    result["variant"] = v
                result["seconds"] = round(time.perf_counter() - t0, 2)
                seconds[app] += result["seconds"]
                results[app].append(result)
                log.write(json.dumps({"app": app, **result}) + "\n")
                log.flush()
    finally:
        for extra in sims.values():
            extra.close()
        for sim, web, served in envs.values():
            web.close()
            served.close()
            sim.close()
        chromium.close()
        pw.stop()
    return results, {a: round(v, 1) for a, v in seconds.items()}

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
