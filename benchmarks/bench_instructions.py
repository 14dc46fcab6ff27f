"""Figure 22: instructions per cold reset and per step, this checkout against a revision.

On the shared 2-core machines a same-run wall-clock A/B (bench_engine_ab.py) reads a
change that does nothing at up to 1.5x on a fork, and step or reset ratios within +-20%
are not evidence. Instructions executed are: valgrind's callgrind counts every one, the
same on every run, whatever else the machine is doing. This script counts them for the
work of a cold reset and of a step, on both sides, in fresh processes:

  * ``base``: load the app's default world, then a warm-up (every template reset at one
    seed and three steps of its plan run, as bench_engine_ab.py does);
  * ``resets``: the same, then the first reset of every task template at ``--seeds`` new
    seeds;
  * ``plans``: the same resets, each followed by computing its oracle plan;
  * ``steps``: the same as ``plans``, then every plan run.

Per cold reset: (resets - base) / resets done. Per step: (steps - plans) / steps done;
both runs make the same resets and plans, so their difference is the steps alone. The ratio this /
ref is the change in work; it does not say how that work maps to milliseconds (cache
misses and the machine's speed do), which is why the targets are still read from
bench_targets.py.

Needs valgrind (``apt-get install valgrind``). A run is about 50 times slower than native:
about a minute per (app, side, run) at the defaults; ``--jobs`` runs that many at once.

    python benchmarks/bench_instructions.py --ref 72b3028 [--apps issues,forum] [--seeds 2] [--jobs 2]
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench_engine_ab import export
from common import REPO, parser, print_table, write_json

CHILD = r"""
import sys
import simweb
name, seeds, kind = sys.argv[1], int(sys.argv[2]), sys.argv[3]
env = simweb.make(name, seed=0)
for tid in sorted(env.app.tasks):   # warm-up, in every run: each template's first use, caches primed
    try:
        env.reset(seed=999, options={"task": tid})
    except Exception:
        continue
    for a in env.oracle_plan()[:3]:
        env.step(a)
resets = steps = 0
if kind != "base":
    for seed in range(9000, 9000 + seeds):
        for tid in sorted(env.app.tasks):
            try:
                env.reset(seed=seed, options={"task": tid})
            except Exception:
                continue
            resets += 1
            if kind in ("plans", "steps"):
                plan = env.oracle_plan()
                if kind == "steps":
                    for a in plan:
                        env.step(a)
                        steps += 1
import simweb.axtree, simweb.state
print(f"counted resets={resets} steps={steps} walk={int(simweb.axtree.COMPILED_WALK)} copy={int(simweb.state.COMPILED_COPY)}",
      file=sys.stderr)
"""

KINDS = ("base", "resets", "plans", "steps")
_COUNTED = re.compile(r"counted resets=(\d+) steps=(\d+) walk=(\d) copy=(\d)")


def count(app: str, seeds: int, kind: str, side: str, pythonpath: str | None, cwd: str, out_dir: Path
          ) -> dict[str, int]:
    """One child under callgrind: its instruction total and what it did."""
    env = dict(os.environ, PYTHONHASHSEED="0")   # str hashes (set order, dict probing) alike in every run
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    else:
        env.pop("PYTHONPATH", None)
    out_file = out_dir / f"{app}.{side}.{kind}.callgrind"
    # The interpreter itself, not a shim script in front of it (pyenv's `python` is one).
    cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out_file}", os.path.realpath(sys.executable),
           "-c", CHILD, app, str(seeds), kind]
    r = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    done = _COUNTED.search(r.stderr)
    total = re.search(r"^(?:summary|totals): (\d+)", out_file.read_text() if out_file.exists() else "", re.M)
    if r.returncode != 0 or done is None or total is None:
        raise SystemExit(f"bench_instructions: {app} {kind} ({side}) failed:\n{r.stderr[-2000:]}")
    return {"ir": int(total.group(1)), "resets": int(done.group(1)), "steps": int(done.group(2)),
            "compiled_walk": int(done.group(3)), "compiled_copy": int(done.group(4))}


def per_op(runs: dict[str, dict[str, int]]) -> dict[str, float]:
    base, resets, plans, steps = (runs[k] for k in KINDS)
    if not resets["resets"] == plans["resets"] == steps["resets"]:
        raise SystemExit("bench_instructions: the runs made different resets")
    return {"cold_reset": (resets["ir"] - base["ir"]) / max(1, resets["resets"]),
            "step": (steps["ir"] - plans["ir"]) / max(1, steps["steps"]),
            "resets": resets["resets"], "steps": steps["steps"]}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = parser(__doc__.split("\n")[0])
    p.add_argument("--ref", required=True, help="git revision to compare against")
    p.add_argument("--this", default=None, help="git revision to measure instead of this checkout")
    p.add_argument("--apps", default=None, help="comma-separated apps (default: every registered app)")
    p.add_argument("--seeds", type=int, default=None, help="new seeds per task template (default 2, quick 1)")
    p.add_argument("--jobs", type=int, default=2, help="callgrind runs at once (default 2)")
    args = p.parse_args(argv)
    if shutil.which("valgrind") is None:
        raise SystemExit("bench_instructions: valgrind is not installed (apt-get install valgrind)")
    import simweb

    names = args.apps.split(",") if args.apps else list(simweb.app_names())
    seeds = args.seeds or (1 if args.quick else 2)
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", args.this or "HEAD"], capture_output=True,
                          check=False, text=True).stdout.strip()
    results: dict[str, Any] = {"ref": args.ref, "head": head, "seeds": seeds}
    with tempfile.TemporaryDirectory(prefix="simweb-ir-") as tmp:
        paths = {"ref": str(export(args.ref, Path(tmp) / "ref")),
                 "this": str(export(args.this, Path(tmp) / "this")) if args.this else None}
        cwd = Path(tmp) / "cwd"
        cwd.mkdir()
        jobs = [(app, side, kind) for app in names for side in ("this", "ref") for kind in KINDS]
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            futures = {(app, side, kind): pool.submit(count, app, seeds, kind, side, paths[side], str(cwd), Path(tmp))
                       for app, side, kind in jobs}
            for i, (job, fut) in enumerate(futures.items(), 1):
                fut.result()
                print(f"[{i}/{len(jobs)}] {' '.join(job)}", flush=True)
        rows = []
        for app in names:
            runs = {side: {kind: futures[(app, side, kind)].result() for kind in KINDS} for side in ("this", "ref")}
            ops = {side: per_op(runs[side]) for side in runs}
            compiled = {side: {k: runs[side]["steps"][k] for k in ("compiled_walk", "compiled_copy")} for side in runs}
            results[app] = {"per_op": ops, "compiled": compiled,
                            "ratio": {k: round(ops["this"][k] / ops["ref"][k], 3) for k in ("cold_reset", "step")}}
            for k, label in (("cold_reset", "cold reset"), ("step", "step")):
                rows.append([app, label, round(ops["ref"][k] / 1e6, 3), round(ops["this"][k] / 1e6, 3),
                             results[app]["ratio"][k], ops["this"]["resets" if k == "cold_reset" else "steps"]])
    print_table(f"million instructions per operation, this ({head}) vs {args.ref}",
                ["app", "operation", "ref", "this", "ratio", "n"], rows)
    write_json(args.out, "instructions", results, argv)
    return results


if __name__ == "__main__":
    main(sys.argv[1:])
