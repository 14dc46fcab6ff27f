"""Reset latency of any installed counterpart (``--counterpart NAME``, e.g. pretix).

A reset stops the server, copies the pristine data files back (for pretix the SQLite
database alone: a reset never migrates) and starts the server again, returning once its
ready path answers. Measured against two same-run references, interleaved so machine
load hits all three alike:

  * copy: the data-file copy alone (server stopped), the floor of any copy-based reset;
  * restart: stop + start without copying (what the server's own start-up costs).

The counterpart must be installed (``simweb counterpart install NAME``, or ``--home`` on
an installed home); it is left stopped unless it was running.

    python benchmarks/bench_counterpart_reset.py --counterpart pretix [--reps 7] [--home DIR] [--out FILE]
"""
from __future__ import annotations

import time

from common import median, p95, parser, write_json


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--counterpart", default="pretix", help="a registered counterpart name")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--home", default=None, help="an installed counterpart home (default: the cache's)")
    args = ap.parse_args()
    from simweb.live.counterparts import CounterpartError, get

    try:
        cp = get(args.counterpart, args.home)
    except CounterpartError as exc:
        raise SystemExit(str(exc)) from None
    if not cp.installed():
        raise SystemExit(f"{cp.name} is not installed in {cp.home}; run `simweb counterpart install {cp.name}`")
    was_running = cp.status()["running"]
    cp.start()
    samples: dict[str, list[float]] = {"reset": [], "copy": [], "restart": []}
    try:
        for _ in range(args.reps):
            t = time.perf_counter()
            cp.reset()
            samples["reset"].append(time.perf_counter() - t)
            cp.stop()
            t = time.perf_counter()
            cp.restore_pristine()
            samples["copy"].append(time.perf_counter() - t)
            cp.start()
            t = time.perf_counter()
            cp.stop()
            cp.start()
            samples["restart"].append(time.perf_counter() - t)
    finally:
        if not was_running:
            cp.stop()
    rows = {k: {"median_s": round(median(v), 3), "p95_s": round(p95(v), 3), "n": len(v)} for k, v in samples.items()}
    print(f"{'what':<10} {'median s':>9} {'p95 s':>7} {'n':>3}")
    for k, r in rows.items():
        print(f"{k:<10} {r['median_s']:>9.3f} {r['p95_s']:>7.3f} {r['n']:>3}")
    write_json(args.out, f"counterpart_{cp.name}_reset", rows)


if __name__ == "__main__":
    main()
