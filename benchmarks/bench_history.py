"""What recording a state's history costs (simweb.history), and what a replay costs.

Every request appends one entry to ``meta.history`` (a small JSON encoding and a sha256),
and the log makes states longer, so forks copy and hash more. This script runs the oracle
plans of every template of an app over many seeds twice, interleaved episode by episode:
with recording (as shipped) and with ``simweb.app.record`` replaced by a no-op (the log
stays empty), after one untimed warm-up pass and with the side that goes first
alternating, and reports per side the step latency, and at each episode's end the cost of
``fork()`` and ``state_hash()``. It then times ``check_history`` (the replay offline
verification runs) on every final state.

    python benchmarks/bench_history.py [--app shopping] [--seeds N] [--quick] [--out FILE]
"""
from __future__ import annotations

import sys
from typing import Any

from common import now_ns, parser, print_table, settle, stat_row, summarize, write_json


def main(argv: list[str] | None = None) -> None:
    ap = parser(__doc__.splitlines()[0])
    ap.add_argument("--app", default="shopping")
    ap.add_argument("--seeds", type=int, default=6)
    args = ap.parse_args(argv)
    seeds = range(2 if args.quick else args.seeds)

    import simweb
    import simweb.runtime.app as app_module
    from simweb.episodes.replay import check_history

    env = simweb.make(args.app, seed=0)
    tasks = sorted(t for t in env.app.tasks)
    recording = app_module.record

    def no_record(state: dict, entry: list) -> None:
        return None

    sides = {"recorded": recording, "not recorded": no_record}
    steps: dict[str, list[float]] = {k: [] for k in sides}
    forks: dict[str, list[float]] = {k: [] for k in sides}
    hashes: dict[str, list[float]] = {k: [] for k in sides}
    replays: list[float] = []
    log_lengths: list[int] = []
    for seed in seeds:   # warm-up, untimed: every page parsed and rendered once, so neither side pays first visits
        for tid in tasks:
            env.reset(seed=seed, options={"task": tid})
            for action in env.oracle_plan():
                env.step(action)
    settle()
    order = list(sides.items())
    for seed in seeds:
        for tid in tasks:
            order.reverse()   # alternate which side goes first
            for side, fn in order:
                app_module.record = fn
                try:
                    env.reset(seed=seed, options={"task": tid})
                    for action in env.oracle_plan():
                        t0 = now_ns()
                        env.step(action)
                        steps[side].append((now_ns() - t0) / 1e9)
                    t0 = now_ns()
                    env.fork()
                    forks[side].append((now_ns() - t0) / 1e9)
                    t0 = now_ns()
                    env.state_hash()
                    hashes[side].append((now_ns() - t0) / 1e9)
                finally:
                    app_module.record = recording
                if side == "recorded":
                    final = env.snapshot()
                    log_lengths.append(len(final["meta"]["history"]["log"]))
                    t0 = now_ns()
                    check_history(env.app, final)
                    replays.append((now_ns() - t0) / 1e9)

    results: dict[str, Any] = {side: {"step": summarize(steps[side]), "fork": summarize(forks[side]),
                      "state_hash": summarize(hashes[side])} for side in sides}
    results["replay"] = summarize(replays, unit="ms")
    results["log_entries_median"] = sorted(log_lengths)[len(log_lengths) // 2]
    rows = []
    for side in sides:
        for what in ("step", "fork", "state_hash"):
            rows.append(stat_row(f"{what}, {side}", results[side][what]))
    rows.append(stat_row("check_history (replay of a final state)", results["replay"]))
    print_table(f"history recording, {args.app}: {len(tasks)} templates x {len(seeds)} seeds "
                f"(median log {results['log_entries_median']} entries)",
                ["what", "n", "median", "p95", "unit"], rows)
    write_json(args.out, "history", results, argv if argv is not None else sys.argv[1:])


if __name__ == "__main__":
    main()
