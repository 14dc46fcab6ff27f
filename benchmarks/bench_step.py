"""Figure 1: step latency with the axtree observation, over the oracle plans of every task.

For every shopping task template and many episode seeds, reset (untimed), then time each
``env.step(action)`` of the task's oracle plan. Each step returns the full observation
(html, axtree, url, tabs, chat...) and runs the task's verifier, exactly what an agent's
loop pays.

Steps are split by what they did, read from the state's request counter:
  * request steps: the action issued a GET or a form POST (link click, goto, submit,
    go_back), so the page was resolved, rendered and re-parsed;
  * UI-only steps: fill, check, select_option, focus, send_msg_to_user...: only the page's
    UI state changed and the AX tree is re-formatted from the cached parse.

Pass 1 (the headline) runs each (task, seed) once. Pass 2 repeats the same plans (caches
warm). Pass 3 repeats them with timers around the step's phases (action execution, of
which navigate/render; verifier; observation/axtree) to show what dominates; it has its own
small overhead and is not used for the headline numbers.

    python benchmarks/bench_step.py [--quick] [--size N] [--seeds N] [--out FILE]
"""
from __future__ import annotations

import sys
from collections import defaultdict

from common import (
    Stopwatch,
    cpu_ns,
    load_now,
    now_ns,
    parser,
    print_table,
    reset_failures,
    settle,
    stat_row,
    summarize,
    target,
    try_reset,
    write_json,
)


def classify(action: str) -> str:
    return action.split("(", 1)[0].strip()


def run_plans(env, tasks, seeds, record, stepping: list | None = None) -> None:
    """Reset (untimed) and step through every oracle plan; ``record(task, action, dt, requests)``.
    ``stepping[0]`` is True only while a step runs (the phase timers look at it)."""
    flag = stepping if stepping is not None else [False]
    for seed in seeds:
        for tid in tasks:
            if not try_reset(env, seed, tid):
                continue
            plan = env.oracle_plan()
            for a in plan:
                r0 = env.state["meta"]["requests"]
                flag[0] = True
                c0 = cpu_ns()
                t0 = now_ns()
                env.step(a)
                dt = (now_ns() - t0) * 1e-9
                cpu = (cpu_ns() - c0) * 1e-9
                flag[0] = False
                record(tid, a, dt, env.state["meta"]["requests"] - r0, cpu)


def main(argv: list[str] | None = None) -> dict:
    p = parser(__doc__.split("\n")[0])
    p.add_argument("--size", type=int, default=None, help="world size (default: the app's default, 10,000)")
    p.add_argument("--seeds", type=int, default=None, help="episode seeds per task template")
    args = p.parse_args(argv)
    n_seeds = args.seeds or (3 if args.quick else 40)

    import simweb
    import simweb.episodes.env as env_mod
    import simweb.episodes.episode as episode_mod
    import simweb.runtime.app as app_mod
    import simweb.web.browsing as browsing_mod

    t0 = now_ns()
    env = simweb.make("shopping", seed=0, size=args.size)
    load_s = (now_ns() - t0) * 1e-9
    tasks = list(env.app.tasks)
    seeds = list(range(1000, 1000 + n_seeds))   # seeds no other benchmark in this process touched

    # warm the episode-start cache so resets (untimed anyway) do not dominate wall time
    for seed in seeds:
        for tid in tasks:
            try_reset(env, seed, tid)

    # ---------------------------------------------------------------- pass 1: headline
    all_steps: list[float] = []
    all_cpu: list[float] = []
    cpu_by_kind: dict[str, list[float]] = defaultdict(list)
    by_kind: dict[str, list[float]] = defaultdict(list)
    by_action: dict[str, list[float]] = defaultdict(list)
    by_task: dict[str, list[float]] = defaultdict(list)

    def record(tid, a, dt, requests, cpu):
        all_steps.append(dt)
        all_cpu.append(cpu)
        kind = "request (navigate/submit)" if requests else "ui-only"
        by_kind[kind].append(dt)
        cpu_by_kind[kind].append(cpu)
        by_action[classify(a)].append(dt)
        by_task[tid].append(dt)

    settle()
    load_before = load_now()
    run_plans(env, tasks, seeds, record)

    # ---------------------------------------------------------------- pass 2: same plans again
    repeat: list[float] = []
    settle()
    run_plans(env, tasks, seeds, lambda tid, a, dt, r, c: repeat.append(dt))

    # ---------------------------------------------------------------- pass 3: phases
    phases: dict[str, Stopwatch] = {k: Stopwatch() for k in
                                    ("execute", "execute.navigate", "execute.submit", "verify", "observe",
                                     "observe.axtree")}
    originals = []
    stepping = [False]

    def wrap(owner, name, sw):
        orig = getattr(owner, name)
        originals.append((owner, name, orig))

        def timed(*a, **k):
            if not stepping[0]:
                return orig(*a, **k)
            with sw:
                return orig(*a, **k)
        setattr(owner, name, timed)

    wrap(browsing_mod.SimBrowser, "execute", phases["execute"])
    wrap(app_mod.App, "navigate", phases["execute.navigate"])
    wrap(app_mod.App, "submit", phases["execute.submit"])
    # every env's step is Episode.step: the verdict is the episode's, the observation the backend's
    wrap(episode_mod.Episode, "verdict", phases["verify"])
    wrap(env_mod.InProcessBackend, "observe", phases["observe"])
    wrap(browsing_mod.SimBrowser, "axtree", phases["observe.axtree"])
    profiled: list[float] = []
    try:
        settle()
        for sw in phases.values():
            sw.samples.clear()
        run_plans(env, tasks, seeds[: max(1, len(seeds) // 4)], lambda tid, a, dt, r, c: profiled.append(dt),
                  stepping)
    finally:
        for owner, name, orig in originals:
            setattr(owner, name, orig)
    total_profiled = sum(profiled)
    phase_share = {k: {"total_s": round(sum(sw.samples), 4), "calls": len(sw.samples),
                       "share_of_step_time": round(sum(sw.samples) / total_profiled, 3) if total_profiled else None}
                   for k, sw in phases.items()}

    # ---------------------------------------------------------------- report
    headline = summarize(all_steps, "ms")
    res = {
        "world_size": env.app.size,
        "world_load_s": round(load_s, 2),
        "task_templates": len(tasks),
        "seeds_per_template": n_seeds,
        "loadavg_before_pass1": load_before,
        "steps": summarize(all_steps, "ms"),
        "by_kind": {k: summarize(v, "ms") for k, v in sorted(by_kind.items())},
        "steps_cpu_time": summarize(all_cpu, "ms"),
        "by_kind_cpu_time": {k: summarize(v, "ms") for k, v in sorted(cpu_by_kind.items())},
        "by_action": {k: summarize(v, "ms") for k, v in sorted(by_action.items())},
        "by_task": {k: summarize(v, "ms") for k, v in by_task.items()},
        "repeat_pass": summarize(repeat, "ms"),
        "phases_profiled_pass": phase_share,
        "target_median_ms": target(headline["median"], 1.0),
        "reset_failures (episodes skipped)": reset_failures(),
    }
    print_table(f"step latency, shopping world size={env.app.size}, {len(tasks)} templates x {n_seeds} seeds "
                f"(oracle plans; obs includes axtree + html; verifier runs each step)",
                ["steps", "n", "median", "p95", "unit"],
                [stat_row("all (pass 1)", res["steps"]),
                 *[stat_row(k, v) for k, v in res["by_kind"].items()],
                 stat_row("all (pass 2, same plans)", res["repeat_pass"]),
                 stat_row("all (pass 1), CPU time", res["steps_cpu_time"]),
                 *[stat_row(k + ", CPU time", v) for k, v in res["by_kind_cpu_time"].items()]])
    print_table("by action", ["action", "n", "median", "p95", "unit"],
                [stat_row(k, v) for k, v in res["by_action"].items()])
    print_table("by task template (pass 1)", ["task", "n", "median", "p95", "unit"],
                [stat_row(k, v) for k, v in res["by_task"].items()])
    print_table("where step time goes (profiled pass, share of total step time)", ["phase", "calls", "total s", "share"],
                [[k, v["calls"], v["total_s"], v["share_of_step_time"]] for k, v in phase_share.items()])
    for f in reset_failures():
        print(f"skipped episode: reset of {f['task']} seed {f['seed']} raised {f['error']}")
    print(f"\ntarget: median <= 1 ms -> {headline['median']} ms: {'met' if res['target_median_ms']['met'] else 'NOT met'}")
    write_json(args.out, "step", res, sys.argv if argv is None else ["benchmarks/bench_step.py", *argv])
    return res


if __name__ == "__main__":
    main()
