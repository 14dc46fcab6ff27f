"""The AX tree of a page whose select the agent has set: the cost of one observation.

After ``select_option``, every observation re-formats the select's line and its options'
lines with the chosen value. This script takes the forum's submit page on the default and
the 10x world (its community select lists every community: 71 and 251 options), gives the
select the middle option's value, and times ``Page.axtree(values=...)`` (the best of 5
timeit repeats of 2,000 calls, in microseconds per call).

    python benchmarks/bench_select_overlay.py [--out FILE]
"""
from __future__ import annotations

import sys
import timeit
from functools import partial
from typing import Any

from common import parser, print_table, write_json


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = parser(__doc__.split("\n")[0])
    args = p.parse_args(argv)
    import simweb

    default = simweb.make("forum", seed=0)
    envs = {"default": default, "10x": simweb.make("forum", seed=0, size=default.app.size * 10)}
    n = 200 if args.quick else 2000
    results: dict[str, Any] = {}
    rows = []
    for k, env in envs.items():
        tid = next(t for t in sorted(env.app.tasks) if env.app.tasks[t].sign_in)
        env.reset(seed=0, options={"task": tid})
        obs, *_ = env.step("goto('/submit')")
        if obs["last_action_error"]:
            raise SystemExit(f"bench_select_overlay: /submit failed: {obs['last_action_error']}")
        page = env.browser.page()
        bid, opts = next((b, o) for b, o in page._selects.items() if len(o) > 10)
        values = {bid: opts[len(opts) // 2][1]}
        us = min(timeit.repeat(partial(page.axtree, values=values), number=n, repeat=5)) / n * 1e6
        results[k] = {"options": len(opts), "axtree_us": round(us, 1)}
        rows.append([k, len(opts), round(us, 1)])
    print_table("forum submit page, AX tree with the community select set (us per call)",
                ["world", "options", "axtree us"], rows)
    write_json(args.out, "select_overlay", results, argv)
    return results


if __name__ == "__main__":
    main(sys.argv[1:])
