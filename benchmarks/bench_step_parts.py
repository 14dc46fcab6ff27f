"""Where a median step's time goes: resolve, render, parse, and the rest, per app.

``env.step`` over the oracle plans of every task template (2 seeds, after one warm-up
seed), on each app's default world. A few engine functions are wrapped to add up their
thread-CPU time per step (the wrappers cost about 1 us a call, included in the total):

  * resolve: ``App._resolve`` (the page's URL match, queries and load expressions);
  * render: ``App._render_resolved`` (Jinja, app functions called by the template);
  * parse: ``parse_page`` (lexbor and the walk that builds the AX lines), fresh pages only;
  * action: parsing the action string; verdict: the episode's verdict of the new state;
  * urls: resolving a link or typed URL to the app's path (``SimBrowser._absolute_path``);
  * rest: everything else (the browser's dispatch, form entries, POST handling outside
    resolve/render, observation and info assembly).

Reported per app: the median step (CPU), and for the steps between the 40th and 60th
percentile the mean of each part (what a median step is made of).

    python benchmarks/bench_step_parts.py [--apps forum,issues] [--out FILE]
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from common import parser, print_table, try_reset, write_json

PARTS = ("resolve", "render", "parse", "action", "verdict", "urls")


def _timed(fn: Callable[..., Any], key: str, into: dict[str, int]) -> Callable[..., Any]:
    cpu = time.thread_time_ns

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        c0 = cpu()
        try:
            return fn(*args, **kwargs)
        finally:
            into[key] = into.get(key, 0) + cpu() - c0

    return wrapper


def bench_app(name: str, seeds: int) -> dict[str, Any]:
    import simweb
    from simweb import browsing, episode

    env = simweb.make(name, seed=0)
    cur: dict[str, int] = {}
    app_cls = type(env.app)
    saved = [(browsing, "parse_page"), (browsing, "_parse_action"), (app_cls, "_resolve"),
             (app_cls, "_render_resolved"), (episode.Episode, "verdict"), (browsing.SimBrowser, "_absolute_path")]
    originals = [getattr(obj, attr) for obj, attr in saved]
    keys = ["parse", "action", "resolve", "render", "verdict", "urls"]
    for (obj, attr), fn, key in zip(saved, originals, keys):
        setattr(obj, attr, _timed(fn, key, cur))
    cpu = time.thread_time_ns
    rows: list[tuple[int, dict[str, int]]] = []
    try:
        for seed in [999, *range(seeds)]:
            for tid in sorted(env.app.tasks):
                if not try_reset(env, seed, tid):
                    continue
                for a in env.oracle_plan():
                    cur.clear()
                    c0 = cpu()
                    env.step(a)
                    d = cpu() - c0
                    if seed != 999:
                        rows.append((d, dict(cur)))
    finally:
        for (obj, attr), fn in zip(saved, originals):
            setattr(obj, attr, fn)
    rows.sort(key=lambda r: r[0])
    band = rows[int(len(rows) * 0.4): int(len(rows) * 0.6)] or rows
    mean = {k: sum(r[1].get(k, 0) for r in band) / len(band) / 1e6 for k in PARTS}
    total = sum(r[0] for r in band) / len(band) / 1e6
    mean["rest"] = total - sum(mean.values())
    return {"steps": len(rows), "median_ms": rows[len(rows) // 2][0] / 1e6,
            "band_mean_ms": round(total, 3), "parts_ms": {k: round(v, 3) for k, v in mean.items()},
            "band_share_parsing": round(sum(1 for r in band if "parse" in r[1]) / len(band), 2)}


def main() -> None:
    ap = parser(__doc__.splitlines()[0])
    ap.add_argument("--apps", default="shopping,forum,issues,cms,booking")
    ap.add_argument("--seeds", type=int, default=2)
    args = ap.parse_args()
    res = {name: bench_app(name, args.seeds) for name in args.apps.split(",")}
    print_table("median step and what the 40th-60th percentile steps are made of (thread-CPU ms)",
                ["app", "steps", "median", "band mean", *PARTS, "rest", "share parsing a page"],
                [[n, r["steps"], round(r["median_ms"], 3), r["band_mean_ms"], *(r["parts_ms"][k] for k in PARTS),
                  r["parts_ms"]["rest"], r["band_share_parsing"]] for n, r in res.items()])
    write_json(args.out, "step_parts", res)


if __name__ == "__main__":
    main()
