"""`simweb omnibox` throughput against WebGym's published rollout rate, and the cost of a
release (everlasting pool: a fresh browser context) against a Chromium relaunch.

Everything is measured in ONE process run:

  A. rollouts: ``--browsers`` instances and as many client threads, each running oracle
     episodes of shopping tasks back to back through the protocol (``OmniboxSimEnv``:
     lease, start URL, then per step one action command plus a set-of-marks screenshot,
     the simweb AX tree and the verdict; release at the end). Reported: episodes per
     minute, steps per minute, seconds per step (median, p95) and the same per CPU core,
     beside WebGym's published rate (1,800 trajectories of 13.2 steps in 30 minutes on
     128 CPUs) scaled per core. WebGym's rate includes its agent's model calls; ours runs
     the oracle plan (no model), so it is the environment's own rate;
  B. per-call latency of the protocol calls a WebGym step makes (GET /screenshot with
     set_of_marks, get_screenshot_info, get_page_metadata, a click by coordinates);
  C. release vs relaunch on one idle instance, interleaved: ``restore_clean`` (what
     POST /reset does: close the context, open a fresh one) vs closing and relaunching
     Chromium (what a release costs when instances are not reused), plus the HTTP
     ``POST /reset`` round trips of phase A.

    python benchmarks/bench_omnibox.py [--quick] [--browsers 2] [--episodes N] [--out FILE]
"""
from __future__ import annotations

import os
import sys
import threading
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from common import load_now, now_ns, parser, print_table, summarize, write_json  # noqa: E402

#: WebGym's published rollout rate: 1,800 trajectories of 13.2 steps in 30 minutes on 128 CPUs.
WEBGYM = {"trajectories": 1800, "steps_per_trajectory": 13.2, "minutes": 30.0, "cpus": 128}
TASKS = ("shopping/product_price", "shopping/order_total", "shopping/register", "shopping/buy_product",
         "shopping/product_rating", "shopping/latest_order_status", "shopping/cheapest_in_category")


def webgym_reference() -> dict[str, float]:
    w = WEBGYM
    episodes_per_min = w["trajectories"] / w["minutes"]
    steps_per_min = episodes_per_min * w["steps_per_trajectory"]
    return {
        "episodes_per_min": round(episodes_per_min, 3),
        "steps_per_min": round(steps_per_min, 3),
        "episodes_per_min_per_core": round(episodes_per_min / w["cpus"], 4),
        "steps_per_min_per_core": round(steps_per_min / w["cpus"], 4),
        "core_seconds_per_step": round(w["cpus"] * 60.0 / steps_per_min, 3),
    }


def episodes(n: int) -> list[tuple[str, int, list[str]]]:
    """``n`` (task, seed, oracle plan) triples, tasks interleaved, seeds from 1."""
    import simweb

    env = simweb.make("shopping", seed=0)
    out: list[tuple[str, int, list[str]]] = []
    seed = 0
    while len(out) < n:
        seed += 1
        for task in TASKS:
            if len(out) >= n:
                break
            try:
                env.reset(seed=seed, options={"task": task})
            except Exception:
                continue
            out.append((task, seed, env.oracle_plan()))
    return out


def rollouts(base_url: str, work: list[tuple[str, int, list[str]]], threads: int) -> dict[str, Any]:
    from simweb.serving.omnibox.env import OmniboxSimEnv

    lock = threading.Lock()
    todo = list(work)
    steps: list[float] = []
    eps: list[float] = []
    releases: list[float] = []
    outcomes: list[dict[str, Any]] = []

    def worker() -> None:
        while True:
            with lock:
                if not todo:
                    return
                task, seed, plan = todo.pop(0)
            env = OmniboxSimEnv(base_url, max_steps=len(plan) + 5)
            t0 = now_ns()
            env.reset(seed=seed, options={"task": task})
            reward, n = 0.0, 0
            for action in plan:
                s0 = now_ns()
                obs, reward, terminated, truncated, _ = env.step(action)
                with lock:
                    steps.append((now_ns() - s0) * 1e-9)
                n += 1
                if terminated or truncated:
                    break
            r0 = now_ns()
            env.close()
            t1 = now_ns()
            with lock:
                releases.append((t1 - r0) * 1e-9)
                eps.append((t1 - t0) * 1e-9)
                outcomes.append({"task": task, "seed": seed, "steps": n, "reward": reward,
                                 "screenshot_bytes": len(obs["screenshot"])})

    t0 = now_ns()
    pool = [threading.Thread(target=worker) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    wall = (now_ns() - t0) * 1e-9
    total_steps = sum(o["steps"] for o in outcomes)
    cores = os.cpu_count() or 1
    return {
        "episodes": len(outcomes),
        "steps": total_steps,
        "steps_per_episode": round(total_steps / max(1, len(outcomes)), 2),
        "wall_s": round(wall, 2),
        "episodes_per_min": round(60 * len(outcomes) / wall, 3),
        "steps_per_min": round(60 * total_steps / wall, 3),
        "episodes_per_min_per_core": round(60 * len(outcomes) / wall / cores, 4),
        "steps_per_min_per_core": round(60 * total_steps / wall / cores, 4),
        "core_seconds_per_step": round(wall * cores / max(1, total_steps), 3),
        "successes": sum(1 for o in outcomes if o["reward"] == 1.0),
        "min_screenshot_bytes": min((o["screenshot_bytes"] for o in outcomes), default=0),
        "step_s": summarize(steps, "s"),
        "episode_s": summarize(eps, "s"),
        "release_http_s": summarize(releases, "s"),
    }


def call_latency(base_url: str, rounds: int) -> dict[str, Any]:
    """Median latency of the calls of one WebGym step, on the shopping home page."""
    from simweb.serving.omnibox.env import OmniboxSimEnv

    env = OmniboxSimEnv(base_url)
    env.reset(seed=1, options={"task": "shopping/order_total"})
    assert env.instance is not None
    samples: dict[str, list[float]] = {k: [] for k in ("screenshot set_of_marks", "screenshot coordinates",
                                                       "get_screenshot_info", "get_page_metadata",
                                                       "click_coords (no navigation)")}
    for _ in range(rounds):
        for name, fn in (("screenshot set_of_marks", env._screenshot),
                         ("screenshot coordinates", lambda: env._call("GET", "/screenshot",
                                                                      dict(env.instance, interaction_mode="coordinates"))),
                         ("get_screenshot_info", lambda: env.command("get_screenshot_info")),
                         ("get_page_metadata", lambda: env.command("get_page_metadata")),
                         ("click_coords (no navigation)", lambda: env.command("click_coords", {"x": 640, "y": 300}))):
            t0 = now_ns()
            fn()
            samples[name].append((now_ns() - t0) * 1e-9)
    env.close()
    return {k: summarize(v, "ms") for k, v in samples.items()}


def release_vs_relaunch(server: Any, rounds: int) -> dict[str, Any]:
    inst = server.pool.instances[0]
    restore: list[float] = []
    relaunch: list[float] = []
    for _ in range(rounds):
        for _kind, fn, out in (("restore", inst.restore_clean, restore), ("relaunch", inst.relaunch, relaunch)):
            t0 = now_ns()
            inst.call(fn)
            out.append((now_ns() - t0) * 1e-9)
    r, rl = summarize(restore, "ms"), summarize(relaunch, "ms")
    return {"restore_clean": r, "chromium_relaunch": rl, "relaunch_over_restore": round(rl["median"] / r["median"], 1)}


def main() -> None:
    p = parser(__doc__.split("\n\n")[0])
    p.add_argument("--browsers", type=int, default=2)
    p.add_argument("--episodes", type=int, default=None, help="episodes in phase A (default 40, quick 8)")
    args = p.parse_args()
    n_eps = args.episodes or (8 if args.quick else 40)
    rounds = 5 if args.quick else 20

    from simweb.serving.omnibox.server import OmniboxServer

    work = episodes(n_eps)
    load0 = load_now()
    with OmniboxServer(["shopping"], port=0, browsers=args.browsers, status_interval=0) as server:
        a = rollouts(server.base_url, work, threads=args.browsers)
        b = call_latency(server.base_url, rounds)
        server.pool.refresh()
        c = release_vs_relaunch(server, max(3, rounds // 2))
    ref = webgym_reference()
    results = {"browsers": args.browsers, "nproc": os.cpu_count(), "loadavg_before": load0, "loadavg_after": load_now(),
               "rollouts": a, "calls": b, "release": c, "webgym": ref,
               "ratio_episodes_per_core": round(a["episodes_per_min_per_core"] / ref["episodes_per_min_per_core"], 1),
               "ratio_steps_per_core": round(a["steps_per_min_per_core"] / ref["steps_per_min_per_core"], 1)}
    print_table("A. rollouts through simweb omnibox (oracle plans, set-of-marks screenshot every step)",
                ["", "simweb omnibox", "per core", "WebGym (published)", "WebGym per core"],
                [["episodes / min", a["episodes_per_min"], a["episodes_per_min_per_core"], ref["episodes_per_min"],
                  ref["episodes_per_min_per_core"]],
                 ["steps / min", a["steps_per_min"], a["steps_per_min_per_core"], ref["steps_per_min"],
                  ref["steps_per_min_per_core"]],
                 ["core-seconds / step", "", a["core_seconds_per_step"], "", ref["core_seconds_per_step"]]])
    print(f"  {a['episodes']} episodes, {a['steps']} steps ({a['steps_per_episode']}/episode), "
          f"{a['successes']} solved; step median {a['step_s']['median']} s, p95 {a['step_s']['p95']} s; "
          f"smallest screenshot {a['min_screenshot_bytes']} bytes")
    print_table("B. protocol calls (ms)", ["call", "median", "p95"],
                [[k, v["median"], v["p95"]] for k, v in b.items()])
    print_table("C. release (ms)", ["", "median", "p95", "n"],
                [["restore (fresh context)", c["restore_clean"]["median"], c["restore_clean"]["p95"],
                  c["restore_clean"]["n"]],
                 ["Chromium relaunch", c["chromium_relaunch"]["median"], c["chromium_relaunch"]["p95"],
                  c["chromium_relaunch"]["n"]],
                 ["POST /reset (HTTP, phase A)", round(a["release_http_s"]["median"] * 1e3, 1),
                  round(a["release_http_s"]["p95"] * 1e3, 1), a["release_http_s"]["n"]]])
    write_json(args.out, "omnibox", results)


if __name__ == "__main__":
    main()
