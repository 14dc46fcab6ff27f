"""Figure 9: the same figures for every app, on its default world and on the 10x world.

For each app (default: every registered app) and each world size (the app's default and
ten times it), in one process so the two sizes are measured under the same load:

  * step: ``env.step`` over the oracle plans of every task template and several seeds
    (reset untimed), split into request steps (a GET or POST was made) and UI-only steps;
  * fork: ``env.fork()`` mid-episode (batches interleaved between the two sizes), and the
    state size in bytes;
  * reset: the first reset of a new (task, seed) ("cold") and a repeated one ("cached");
  * memory: bytes allocated per forked env that has taken one navigating step
    (tracemalloc over many forks, divided by their number);
  * search: a search-page step (``goto`` of a search URL: resolve, query, render, AX tree)
    over queries drawn from the world, p50 and p95; the target is p50 <= 5 ms.

The 10x/default ratio of each median is reported next to it: a ratio near 1 means the
figure does not grow with the world.

    python benchmarks/bench_apps.py [--quick] [--apps forum,issues] [--out FILE]
"""
from __future__ import annotations

import sys
import tracemalloc
from collections.abc import Callable
from functools import partial
from typing import Any

import orjson
from common import (
    cpu_ns,
    now_ns,
    parser,
    print_table,
    reset_failures,
    settle,
    summarize,
    target,
    time_each,
    try_reset,
    write_json,
)

from simweb.core.worlddb import Rng

# ----------------------------------------------------------------------------- search URLs

def _words(titles: list[str], rng: Rng, n: int) -> list[str]:
    """Search words as users type them: one or two words of real titles."""
    out = []
    for _ in range(n):
        t = [w.strip(".,:;!?()[]\"'").lower() for w in rng.choice(titles).split()]
        t = [w for w in t if len(w) >= 4 and w.isalpha()] or ["the"]
        out.append(" ".join(rng.sample(t, min(len(t), 1 + rng.below(2)))))
    return out


def shopping_urls(env: Any, rng: Rng, n: int) -> list[str]:
    w = env.app.world
    titles = [p["name"] for p in (w.product(rng.randint(1, w.max_id("products"))) for _ in range(200)) if p]
    sorts = ["relevance", "price_asc", "rating", "newest"]
    return [f"/search?q={q.replace(' ', '+')}&sort={rng.choice(sorts)}" for q in _words(titles, rng, n)]


def forum_urls(env: Any, rng: Rng, n: int) -> list[str]:
    w = env.app.world
    titles = [p["title"] for p in (w.post(rng.randint(1, w.max_id("posts"))) for _ in range(200)) if p]
    sorts = ["relevance", "new", "top", "comments"]
    return [f"/search?q={q.replace(' ', '+')}&sort={rng.choice(sorts)}" for q in _words(titles, rng, n)]


def issues_urls(env: Any, rng: Rng, n: int) -> list[str]:
    w = env.app.world
    rows = [i for i in (w.issue(rng.randint(1, w.max_id("issues"))) for _ in range(200)) if i]
    out = []
    for q in _words([i["title"] for i in rows], rng, n):
        i = rng.choice(rows)
        p = w.project(i["project_id"])
        state = rng.choice(["opened", "closed", "all"])
        sort = rng.choice(["created", "updated", "comments"])
        out.append(f"/projects/{p['path']}/issues?q={q.replace(' ', '+')}&state={state}&sort={sort}")
    return out


def cms_urls(env: Any, rng: Rng, n: int) -> list[str]:
    w = env.app.world
    titles = [p["title"] for p in (w.post(rng.randint(1, w.max_id("posts"))) for _ in range(200)) if p]
    return [f"/search?q={q.replace(' ', '+')}" + (f"&page={1 + rng.below(3)}" if rng.chance(0.3) else "")
            for q in _words(titles, rng, n)]


def booking_urls(env: Any, rng: Rng, n: int) -> list[str]:
    """Availability searches: a city, a stay of 1-7 nights in the year, a party of 1-4."""
    from simweb.core.worlddb import day_to_date

    cities = env.app.world.cities()
    out = []
    for _ in range(n):
        d, nights = rng.randint(1, 350), rng.randint(1, 7)
        sort = rng.choice(["price", "rating", "stars"])
        out.append(f"/search?city={rng.choice(cities)}&checkin={day_to_date(d).isoformat()}"
                   f"&checkout={day_to_date(d + nights).isoformat()}&guests={rng.randint(1, 4)}&sort={sort}")
    return out


SEARCH_URLS: dict[str, Callable[[Any, Rng, int], list[str]]] = {
    "shopping": shopping_urls, "forum": forum_urls, "issues": issues_urls, "cms": cms_urls, "booking": booking_urls,
}


# ----------------------------------------------------------------------------- figures

def step_times(env: Any, seeds: range) -> dict[str, list[float]]:
    """Wall time of each step (all, request, ui) and its thread CPU time ("cpu"): on a
    loaded machine the wall clock includes time spent descheduled, the CPU time does not."""
    out: dict[str, list[float]] = {"all": [], "request": [], "ui": [], "cpu": []}
    for seed in seeds:
        for tid in sorted(env.app.tasks):
            if not try_reset(env, seed, tid):
                continue
            for a in env.oracle_plan():
                r0 = env.state["meta"]["requests"]
                c0 = cpu_ns()
                t0 = now_ns()
                env.step(a)
                dt = (now_ns() - t0) * 1e-9
                out["cpu"].append((cpu_ns() - c0) * 1e-9)
                out["all"].append(dt)
                out["request" if env.state["meta"]["requests"] != r0 else "ui"].append(dt)
    return out


def mid_episode(env: Any, seed: int = 7) -> Any:
    """The env halfway through the oracle plan of the app's first state-changing task."""
    tid = next(t for t in sorted(env.app.tasks) if env.app.tasks[t].kind != "info")
    env.reset(seed=seed, options={"task": tid})
    plan = env.oracle_plan()
    for a in plan[: len(plan) // 2]:
        env.step(a)
    return env


def reset_times(env: Any, seeds: range, reps: int) -> dict[str, list[float]]:
    cold, cold_cpu, cached = [], [], []
    for seed in seeds:
        for tid in sorted(env.app.tasks):
            c0 = cpu_ns()
            t0 = now_ns()
            if try_reset(env, seed, tid):
                cold.append((now_ns() - t0) * 1e-9)
                cold_cpu.append((cpu_ns() - c0) * 1e-9)
    settle()
    first = seeds[0]
    for tid in sorted(env.app.tasks):
        opts = {"task": tid}
        if try_reset(env, first, tid):
            cached.extend(time_each(partial(env.reset, seed=first, options=opts), reps, warmup=1))
    return {"cold": cold, "cold_cpu": cold_cpu, "cached": cached}


def bytes_per_fork(env: Any, n: int) -> float:
    start = env.state["browser"]["tabs"][env.state["browser"]["active"]]["url"]
    children = [env.fork()]
    children[0].step(f"goto({start!r})")
    children.clear()
    settle()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    for _ in range(n):
        c = env.fork()
        c.step(f"goto({start!r})")
        children.append(c)
    used = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    children.clear()
    return used / n


def search_times(env: Any, urls: list[str], reps: int) -> dict[str, list[float]]:
    first, first_cpu, repeat = [], [], []
    # One long browsing session: no step budget may end it half way through the URLs.
    budget, env.max_steps_override = env.max_steps_override, 10 ** 9
    env.reset(seed=0)
    for i, u in enumerate(urls):
        if i and i % 40 == 0:
            env.reset(seed=0)   # untimed: an episode without a task ends after 50 steps
        act = f"goto({u!r})"
        c0 = cpu_ns()
        t0 = now_ns()
        obs, *_ = env.step(act)
        first.append((now_ns() - t0) * 1e-9)
        first_cpu.append((cpu_ns() - c0) * 1e-9)
        if obs["last_action_error"]:
            raise RuntimeError(f"search URL {u} failed: {obs['last_action_error']}")
    for u in urls[: max(1, len(urls) // 4)]:
        act = f"goto({u!r})"
        env.reset(seed=0)
        repeat.extend(time_each(partial(env.step, act), reps))
    env.max_steps_override = budget
    return {"first": first, "first_cpu": first_cpu, "repeat": repeat}


def bench_app(name: str, quick: bool) -> dict[str, Any]:
    import simweb

    default = simweb.make(name, seed=0)
    size = default.app.size
    t0 = now_ns()
    big = simweb.make(name, seed=0, size=size * 10, progress=True)
    big_load = (now_ns() - t0) * 1e-9
    envs = {"default": default, "10x": big}
    res: dict[str, Any] = {"sizes": {"default": size, "10x": size * 10}, "world_10x_load_s": round(big_load, 2)}
    seeds = range(0, 2 if quick else 6)

    steps = {k: step_times(e, seeds) for k, e in envs.items()}
    res["step_ms"] = {k: {kind: summarize(v, "ms") for kind, v in s.items() if v} for k, s in steps.items()}

    forks: dict[str, list[float]] = {k: [] for k in envs}
    mids = {k: mid_episode(e) for k, e in envs.items()}
    for _ in range(4 if quick else 20):
        for k, e in mids.items():
            settle()
            forks[k].extend(time_each(e.fork, 100))
    res["fork_us"] = {k: summarize(v, "us") for k, v in forks.items()}
    res["state_bytes"] = {k: len(orjson.dumps(e.state)) for k, e in mids.items()}
    res["bytes_per_forked_env"] = {k: round(bytes_per_fork(e, 50 if quick else 300)) for k, e in mids.items()}

    rs = {k: reset_times(e, range(9000, 9000 + (2 if quick else 6)), 20 if quick else 100) for k, e in envs.items()}
    res["reset_ms"] = {k: {kind: summarize(v, "ms") for kind, v in r.items() if v} for k, r in rs.items()}

    urls: dict[str, list[str]] = {}
    for k, e in envs.items():
        urls[k] = SEARCH_URLS[name](e, Rng.derive("bench-search", name, k), 20 if quick else 80)
    srch = {k: search_times(e, urls[k], 5 if quick else 20) for k, e in envs.items()}
    res["search_page_ms"] = {k: {kind: summarize(v, "ms") for kind, v in s.items()} for k, s in srch.items()}
    res["search_examples"] = urls["default"][:5]

    def ratio(a: dict, b: dict) -> float:
        return round(b["median"] / a["median"], 2) if a["median"] else float("nan")

    res["ratio_10x_over_default"] = {
        "step": ratio(res["step_ms"]["default"]["all"], res["step_ms"]["10x"]["all"]),
        "fork": ratio(res["fork_us"]["default"], res["fork_us"]["10x"]),
        "reset_cached": ratio(res["reset_ms"]["default"]["cached"], res["reset_ms"]["10x"]["cached"]),
        "search_page_first": ratio(res["search_page_ms"]["default"]["first"], res["search_page_ms"]["10x"]["first"]),
    }
    p50 = summarize(srch["10x"]["first"], "ms")
    res["targets"] = {
        "step_median_ms_default": target(res["step_ms"]["default"]["all"]["median"], 1.0),
        "step_median_ms_10x": target(res["step_ms"]["10x"]["all"]["median"], 1.0),
        "step_cpu_median_ms_default": target(res["step_ms"]["default"]["cpu"]["median"], 1.0),
        "reset_cold_median_ms_default": target(res["reset_ms"]["default"]["cold"]["median"], 1.0),
        "reset_cold_cpu_median_ms_default": target(res["reset_ms"]["default"]["cold_cpu"]["median"], 1.0),
        "fork_median_us_default": target(res["fork_us"]["default"]["median"], 10.0),
        "fork_median_us_10x": target(res["fork_us"]["10x"]["median"], 10.0),
        "search_page_cpu_p50_ms_10x": target(summarize(srch["10x"]["first_cpu"], "ms")["median"], 5.0),
        "reset_cached_median_ms": target(res["reset_ms"]["default"]["cached"]["median"], 1.0),
        "search_page_p50_ms_10x": target(p50["median"], 5.0),
    }
    return res


def main(argv: list[str] | None = None) -> dict:
    p = parser(__doc__.split("\n")[0])
    p.add_argument("--apps", default=None, help="comma-separated apps (default: every registered app but shopping, "
                                                "whose figures bench_step/fork_reset/search/memory give in more depth)")
    args = p.parse_args(argv)
    import simweb

    names = args.apps.split(",") if args.apps else [a for a in simweb.app_names() if a != "shopping"]
    results: dict[str, Any] = {}
    for name in names:
        print(f"--- {name}", flush=True)
        results[name] = r = bench_app(name, args.quick)
        rows = []
        for k in ("default", "10x"):
            s = r["step_ms"][k]
            rows.append([f"{name} {k} ({r['sizes'][k]:,})", s["all"]["median"], s["cpu"]["median"],
                         s.get("request", {}).get("median"), s.get("ui", {}).get("median"), r["fork_us"][k]["median"],
                         r["reset_ms"][k]["cold"]["median"], r["reset_ms"][k]["cold_cpu"]["median"],
                         r["reset_ms"][k]["cached"]["median"], r["bytes_per_forked_env"][k] / 1024,
                         r["search_page_ms"][k]["first"]["median"], r["search_page_ms"][k]["first_cpu"]["median"],
                         r["search_page_ms"][k]["first"]["p95"]])
        print_table(f"{name}: medians", ["world", "step ms", "step cpu", "request", "ui", "fork us", "reset cold ms",
                                         "cold cpu", "reset cached ms", "KB/fork", "search p50 ms", "search cpu p50",
                                         "search p95 ms"], rows)
    results["reset_failures (skipped)"] = reset_failures()
    write_json(args.out, "apps", results, argv)
    return results


if __name__ == "__main__":
    main(sys.argv[1:])
