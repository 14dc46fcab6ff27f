"""What a site variant's URL scheme costs a step (simweb.runtime.url_schemes).

Per app, one variant with a URL scheme (a query-form one where the app has one: its links
go through the most mapping) and, where the app has one, a variant of its slug scheme
(``/product/grey-scarf-12``: every entity link mapped at render, its slug read from the
world, memoised; rows ``APP/slug``), each timed with its scheme and, in the same process, with the
scheme taken out (the same variant's templates built without it, so its pages show
today's URLs): every template's oracle run at seed 0, the two sides interleaved round by
round and alternating who goes first; the figure is CPU time per step (this process's,
which other processes' load does not inflate by preemption). What is left is the
scheme's own cost: the links mapped at render (a data link's filter), the observation's
URL, and the request mapping of every navigation.

    python benchmarks/bench_url_schemes.py [--apps shopping,forum] [--rounds 5] [--out FILE]
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from common import parser

import simweb
from simweb.runtime.variants import catalogue, jinja_for

APPS = ("shopping", "forum", "issues", "cms", "booking")


def scheme_variants(app: str) -> dict[str, int]:
    """Row name -> variant: the first variant whose URL scheme has a query form (else the
    first with a scheme), and the first of a slug scheme (``APP/slug``) where there is one."""
    cat = catalogue(app)
    factor = next(f for f in cat.factors if f.name == "url_scheme")
    labels = {app: next((o.label for o in factor.options if any("?" in w for _, w in o.urls)), factor.options[1].label)}
    slug = next((o.label for o in factor.options if any("<slug:" in w and "." in w for _, w in o.urls)), None)
    if slug is not None:
        labels[f"{app}/slug"] = slug
    return {row: next(k for k in range(1, cat.count) if cat.values(k)["url_scheme"] == label)
            for row, label in labels.items()}


def run_all(env: Any, tasks: list[str]) -> tuple[float, int]:
    """CPU seconds and steps of every template's oracle run (seed 0)."""
    spent, steps, solved = 0.0, 0, 0
    for tid in tasks:
        env.reset(seed=0, options={"task": tid})
        env.unwrapped.browser.invalidate()   # the start page is memoised with the links of the side that made it
        plan = env.unwrapped.oracle_plan()
        t0 = time.process_time()
        info: dict = {}
        for a in plan:
            info = env.step(a)[-1]
        spent += time.process_time() - t0
        steps += len(plan)
        solved += bool(info["verdict"]["success"])
    assert solved == len(tasks), f"{solved}/{len(tasks)} oracle runs solved: the two sides would not be the same runs"
    return spent, steps


def measure(app: str, k: int, rounds: int) -> dict[str, Any]:
    env = simweb.make(app, variant=k, max_steps=100_000)
    u = env.unwrapped
    site = catalogue(app).site(k)
    scheme = site.urls
    with_scheme = jinja_for(u.app, k)
    envs: dict[int, Any] = u.app.__dict__["_variant_jinja"]
    bound: dict[int, Any] = u.app.__dict__["_variant_schemes"]   # the scheme of this world (url_scheme)
    app_scheme = bound[k]
    site.urls = bound[k] = None
    del envs[k]
    without = jinja_for(u.app, k)
    tasks = sorted(u.app.tasks)
    sides = {"with": (scheme, app_scheme, with_scheme), "without": (None, None, without)}
    totals = {"with": [0.0, 0], "without": [0.0, 0]}
    try:
        for r in range(rounds):
            for name in (("with", "without") if r % 2 == 0 else ("without", "with")):
                site.urls, bound[k], envs[k] = sides[name]
                spent, steps = run_all(env, tasks)
                if r:   # the first round warms both up
                    totals[name][0] += spent
                    totals[name][1] += steps
    finally:
        site.urls, bound[k], envs[k] = scheme, app_scheme, with_scheme
    per = {n: round(1e3 * t / max(1, s), 4) for n, (t, s) in totals.items()}
    return {"variant": k, "url_scheme": catalogue(app).values(k)["url_scheme"], "steps": int(totals["with"][1]),
            "step_ms_cpu": per, "ratio": round(per["with"] / per["without"], 3)}


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--apps", default=",".join(APPS))
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    results = {}
    for app in args.apps.split(","):
        for row, k in scheme_variants(app).items():
            res = results[row] = measure(app, k, args.rounds)
            print(f"{row:14} variant {res['variant']:5} ({res['url_scheme']}): step {res['step_ms_cpu']['without']} -> "
                  f"{res['step_ms_cpu']['with']} ms CPU (x{res['ratio']}) over {res['steps']} steps", flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps({"command": " ".join(sys.argv), "apps": results}, indent=1) + "\n")


if __name__ == "__main__":
    main()
