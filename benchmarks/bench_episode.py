"""The cost of the episode layer: in-process step time of this tree against a reference
source tree of simweb, measured in the same run (alternating subprocesses).

    git archive <commit> | tar -x -C /tmp/ref      # a reference tree, e.g. before a change
    python benchmarks/bench_episode.py --ref /tmp/ref [--app shopping] [--rounds 5]

Two workloads on world seed 0: ``oracle`` (every oracle plan of the app's first 8 task
templates at episode seeds 0-2: real GETs and POSTs) and ``browse`` (reset, then 300
``scroll(0, 100)`` steps: almost nothing but the episode's own bookkeeping, a verdict
from the cache and an observation). Each round runs both trees once, in alternating
order; the figures are the medians over rounds of microseconds per step.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

_CHILD = r"""
import json, sys, time
ref = sys.argv[1]
if ref:
    # The reference tree, not the installed (editable) simweb.
    sys.meta_path = [f for f in sys.meta_path if "editable" not in repr(f).lower()]
    sys.path.insert(0, ref)
import simweb
app = sys.argv[2]
env = simweb.make(app, seed=0)
tasks = sorted(env.app.tasks)[:8]
plans = []
for t in tasks:
    for s in range(3):
        env.reset(seed=s, options={"task": t})
        plans.append((t, s, env.oracle_plan()))
env.max_steps_override = 10 ** 6
out = {}
steps = 0
t0 = time.perf_counter()
for t, s, plan in plans:
    env.reset(seed=s, options={"task": t})
    for a in plan:
        env.step(a)
        steps += 1
out["oracle"] = (time.perf_counter() - t0) / steps * 1e6
env.reset(seed=0, options={"task": tasks[0]})
t0 = time.perf_counter()
for _ in range(300):
    env.step("scroll(0, 100)")
out["browse"] = (time.perf_counter() - t0) / 300 * 1e6
out["simweb"] = simweb.__file__
print(json.dumps(out))
"""


def _run(ref: str, app: str) -> dict:
    env = dict(os.environ)
    done = subprocess.run([sys.executable, "-c", _CHILD, ref, app], capture_output=True, text=True, env=env,
                          timeout=1800)
    if done.returncode != 0:
        raise SystemExit(f"benchmark child failed: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _prepare(ref: Path) -> None:
    """An extracted source tree imports as installed: simweb.apps/specs/verifiers are its folders."""
    for name in ("apps", "specs", "verifiers"):
        link = ref / "simweb" / name
        if not link.exists():
            link.symlink_to(ref / name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ref", required=True, help="a reference simweb source tree (git archive ... | tar -x)")
    parser.add_argument("--app", default="shopping")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    ref = Path(args.ref).resolve()
    if not (ref / "simweb" / "__init__.py").is_file():
        raise SystemExit(f"--ref {ref}: not a simweb source tree")
    _prepare(ref)
    results: dict[str, list[dict]] = {"this tree": [], "reference": []}
    for r in range(args.rounds):
        order = [("this tree", ""), ("reference", str(ref))]
        for label, path in (order if r % 2 == 0 else order[::-1]):
            results[label].append(_run(path, args.app))
    print(f"app {args.app}, {args.rounds} rounds, microseconds per step (median)")
    print(f"{'workload':<10} {'this tree':>10} {'reference':>10} {'ratio':>7}")
    for workload in ("oracle", "browse"):
        mine = statistics.median(r[workload] for r in results["this tree"])
        base = statistics.median(r[workload] for r in results["reference"])
        print(f"{workload:<10} {mine:>10.1f} {base:>10.1f} {mine / base:>7.3f}")


if __name__ == "__main__":
    main()
