"""System calls a world's reads make: ``pread64`` per step on the 10x worlds, under strace.

SQLite reads a page of the world file either through a system call (``pread64``, then a
copy into its page cache) or, with the file memory-mapped (``WorldDB.READ_PRAGMAS``),
straight from the mapping. The 10x worlds are larger than SQLite's page cache, and a step
there reads pages on every first visit. This script runs, per app, the oracle plans of
every template at 2 seeds on the 10x world in a child process under ``strace -f -c -e
trace=pread64`` and reports the calls in total and per step. It counts calls, which do not
depend on the machine's load; the time strace gives them is inflated by strace itself.

    python benchmarks/bench_world_reads.py [--apps issues,cms] [--out FILE]
"""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from typing import Any

from common import parser, print_table, write_json

CHILD = r"""
import sys
import simweb
name = sys.argv[1]
default = simweb.make(name, seed=0)
env = simweb.make(name, seed=0, size=default.app.size * 10)
steps = 0
for seed in (0, 1):
    for tid in sorted(env.app.tasks):
        try:
            env.reset(seed=seed, options={"task": tid})
        except Exception:
            continue
        for a in env.oracle_plan():
            env.step(a)
            steps += 1
print(f"counted steps={steps}", file=sys.stderr)
"""


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = parser(__doc__.split("\n")[0])
    p.add_argument("--apps", default=None, help="comma-separated apps (default: every registered app)")
    args = p.parse_args(argv)
    if shutil.which("strace") is None:
        raise SystemExit("bench_world_reads: strace is not installed (apt-get install strace)")
    import simweb

    names = args.apps.split(",") if args.apps else list(simweb.app_names())
    results: dict[str, Any] = {}
    rows = []
    for name in names:
        # the 10x world is built (or opened) first, outside the counted run
        subprocess.run([sys.executable, "-c", f"import simweb; d = simweb.make({name!r}); "
                        f"simweb.make({name!r}, size=d.app.size * 10)"], check=True, capture_output=True)
        r = subprocess.run(["strace", "-f", "-c", "-e", "trace=pread64", sys.executable, "-c", CHILD, name],
                           capture_output=True, text=True, check=False)
        steps = re.search(r"counted steps=(\d+)", r.stderr)
        calls = re.search(r"^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)(?:\s+\d+)?\s+pread64\s*$", r.stderr, re.M)
        if r.returncode != 0 or steps is None:
            raise SystemExit(f"bench_world_reads: {name} failed:\n{r.stderr[-2000:]}")
        n, c = int(steps.group(1)), int(calls.group(1)) if calls else 0
        results[name] = {"steps": n, "pread64": c, "per_step": round(c / max(1, n), 2)}
        rows.append([name, n, c, round(c / max(1, n), 2)])
    print_table("pread64 calls over the oracle plans on the 10x world (2 seeds)", ["app", "steps", "pread64",
                                                                                 "per step"], rows)
    write_json(args.out, "world_reads", results, argv)
    return results


if __name__ == "__main__":
    main(sys.argv[1:])
