"""The full sim-to-live run of one pair, plus the counterpart's own timings.

Installs the counterpart if needed (its install time is reported when it happens), times
``reset`` (stop, copy the pristine data back, start) ``--resets`` times, then runs
``simweb sim2live`` on every family of the pair with ``--instances`` per family and
reports the per-family table and the median episode time per side (the simweb side is the
same-run reference for the live side's cost).

    python benchmarks/bench_sim2live.py --pair issues:roundup --agent scripted --instances 5 \
        --out benchmarks/sim2live/issues-roundup

The report and traces land in ``--out`` (report.json, report.md, traces/); the timings are
printed and written to ``--out``/timings.json.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from simweb.live.counterparts import get
from simweb.live.counterparts import pair as parse_pair
from simweb.live.sim2live import Settings, run


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pair", required=True)
    ap.add_argument("--agent", default="scripted", choices=["scripted", "llm"])
    ap.add_argument("--instances", type=int, default=5)
    ap.add_argument("--families", default=None)
    ap.add_argument("--resets", type=int, default=5)
    ap.add_argument("--max-steps", type=int, default=40)
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)

    _, name = parse_pair(args.pair)
    cp = get(name)
    timings: dict = {"pair": args.pair, "agent": args.agent, "instances": args.instances}
    if not cp.installed():
        t0 = time.monotonic()
        cp.install(progress=True)
        timings["install_s"] = round(time.monotonic() - t0, 1)
    was_running = cp.status()["running"]
    cp.start()
    resets = []
    for _ in range(args.resets):
        t0 = time.monotonic()
        cp.reset()
        resets.append(time.monotonic() - t0)
    if not was_running:
        cp.stop()
    timings["reset_median_s"] = round(statistics.median(resets), 2)
    timings["reset_all_s"] = [round(x, 2) for x in resets]

    fams = [f.strip() for f in args.families.split(",")] if args.families else None
    t0 = time.monotonic()
    report = run(Settings(pair=args.pair, agent=args.agent, families=fams, instances=args.instances,
                          out=Path(args.out), max_steps=args.max_steps), progress=True,
                 on_episode=lambda ep: print(f"  {ep['family']}#{ep['index']}: sim {ep['sim']['success']} "
                                             f"live {ep['live']['success']}", file=sys.stderr))
    timings["run_s"] = round(time.monotonic() - t0, 1)
    eps = report["episodes"]
    timings["sim_episode_median_s"] = round(statistics.median(e["sim"]["seconds"] for e in eps), 3)
    timings["live_episode_median_s"] = round(statistics.median(e["live"]["seconds"] for e in eps), 3)
    (Path(args.out) / "timings.json").write_text(json.dumps(timings, indent=1) + "\n")
    print((Path(args.out) / "report.md").read_text())
    print(json.dumps(timings, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
