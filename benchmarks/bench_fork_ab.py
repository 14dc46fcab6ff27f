"""Fork: ``SimEnv.fork`` against the fork of the revision before it, interleaved in one process.

The reference is the previous fork written out here (``copy.copy`` of the episode, a
backend holding its env strongly, so every env and fork was a reference cycle): both run
on the same env, half way through the oracle plan of the app's first state-changing
template (as ``bench_apps.py`` measures), in alternating batches of 100 forks that are
dropped at once, after a collection. Reported per app and world: the thread-CPU median
of single forks, the mean (which includes the collections a cycle leaves to the
collector), the state's size, and the ratio this / before.

    python benchmarks/bench_fork_ab.py [--quick] [--apps booking] [--out FILE]
"""
from __future__ import annotations

import copy
import gc
import sys
from statistics import mean, median
from typing import Any

import orjson
from common import cpu_ns, parser, print_table, write_json


class StrongBackend:
    """The backend as it was: it holds its env, so env -> backend -> env is a cycle."""

    def __init__(self, env: Any) -> None:
        self.env = env


def reference_fork(env: Any) -> Any:
    """The fork as it was before (simweb/env.py at f79efb3), for comparison."""
    from simweb.episodes.env import SimEnv
    from simweb.web.browsing import SimBrowser

    child = SimEnv.__new__(SimEnv)
    child.__dict__.update({k: v for k, v in env.__dict__.items() if k not in ("state", "browser", "episode", "backend")})
    child.episode = copy.copy(env.episode)
    child.backend = StrongBackend(child)  # type: ignore[assignment]  # the old backend, duck-typed in its place
    child.state = orjson.loads(orjson.dumps(env.state))
    child.browser = SimBrowser(env.app, child.state)
    child.browser._html = env.browser._html
    child.browser._page = env.browser._page
    child._np_random = None
    return child


def mid_episode(env: Any) -> Any:
    tid = next(t for t in sorted(env.app.tasks) if env.app.tasks[t].kind != "info")
    env.reset(seed=7, options={"task": tid})
    plan = env.oracle_plan()
    for a in plan[: len(plan) // 2]:
        env.step(a)
    return env


def measure(env: Any, rounds: int) -> dict[str, Any]:
    sides = {"this": env.fork, "before": lambda: reference_fork(env)}
    samples: dict[str, list[int]] = {k: [] for k in sides}
    for r in range(rounds):
        for side in (("this", "before") if r % 2 == 0 else ("before", "this")):
            fn = sides[side]
            gc.collect()
            for _ in range(100):
                c0 = cpu_ns()
                fn()
                samples[side].append(cpu_ns() - c0)
    out: dict[str, Any] = {"state_bytes": len(orjson.dumps(env.state))}
    for side, xs in samples.items():
        out[side] = {"median_us": round(median(xs) / 1e3, 2), "mean_us": round(mean(xs) / 1e3, 2), "n": len(xs)}
    out["ratio_median"] = round(out["this"]["median_us"] / out["before"]["median_us"], 3)
    out["ratio_mean"] = round(out["this"]["mean_us"] / out["before"]["mean_us"], 3)
    return out


def main(argv: list[str] | None = None) -> dict:
    p = parser(__doc__.split("\n")[0])
    p.add_argument("--apps", default=None, help="comma-separated apps (default: every registered app)")
    args = p.parse_args(argv)
    import simweb

    names = args.apps.split(",") if args.apps else list(simweb.app_names())
    rounds = 10 if args.quick else 40
    results: dict[str, Any] = {}
    rows = []
    for name in names:
        default = simweb.make(name, seed=0)
        envs = {"default": default, "10x": simweb.make(name, seed=0, size=default.app.size * 10)}
        for k, env in envs.items():
            r = results[f"{name} {k}"] = measure(mid_episode(env), rounds)
            rows.append([f"{name} {k}", r["state_bytes"], r["this"]["median_us"], r["before"]["median_us"],
                         r["ratio_median"], r["this"]["mean_us"], r["before"]["mean_us"], r["ratio_mean"]])
    print_table("fork, thread-CPU time per fork (us)",
                ["app, world", "state bytes", "median", "before", "ratio", "mean", "before", "ratio"], rows)
    write_json(args.out, "fork_ab", results, argv)
    return results


if __name__ == "__main__":
    main(sys.argv[1:])
