"""Figure 12: this checkout's engine against an earlier revision, same run, every app.

The reference revision is exported with ``git archive`` into a temporary directory and
imported from there (``PYTHONPATH``), so both sides run the same measuring code on the same
world files. Each round runs one child process per side and app, alternating which side
goes first, so that load from other work on the machine hits both alike. A child measures,
on the app's default world:

  * step: ``env.step`` over the oracle plans of every task template at several seeds
    (reset untimed), wall and thread-CPU time;
  * cold reset: the first reset of a new (task, seed);
  * search page: a ``goto`` of search URLs drawn from the world (as bench_apps.py does);
  * fork: ``env.fork()`` half way through the oracle plan of the first state-changing
    template (as bench_apps.py does), 4 batches of 100 after a collection.

``--factor 10`` measures on the 10x world instead of the default one.

Reported: the median over all rounds of each side, and their ratio (this / reference).

    python benchmarks/bench_engine_ab.py --ref 62d5d0c [--rounds 3] [--seeds 3] [--apps cms,forum] [--factor 10] [--quick]
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from statistics import median
from typing import Any

from common import REPO, parser, print_table, write_json

CHILD = r"""
import json, sys, time
sys.path.insert(0, sys.argv[4])              # benchmarks/ of this checkout (search URLs)
import simweb
from simweb.worlddb import Rng
from bench_apps import SEARCH_URLS
name, seeds, n_urls, factor = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[5])
wall, cpu = time.perf_counter_ns, time.thread_time_ns
env = simweb.make(name, seed=0)
if factor != 1:
    env = simweb.make(name, seed=0, size=env.app.size * factor)
tasks = sorted(env.app.tasks)
def reset(seed, tid):
    try:
        env.reset(seed=seed, options={"task": tid})
        return True
    except Exception:
        return False
out = {"step_wall": [], "step_cpu": [], "reset_wall": [], "reset_cpu": [], "search_wall": [], "search_cpu": [],
       "fork_wall": [], "fork_cpu": []}
for tid in tasks:                            # warm-up: templates compiled, caches primed
    if reset(999, tid):
        for a in env.oracle_plan()[:3]:
            env.step(a)
for seed in range(seeds):
    for tid in tasks:
        if not reset(seed, tid):
            continue
        for a in env.oracle_plan():
            c0, t0 = cpu(), wall(); env.step(a); t1, c1 = wall(), cpu()
            out["step_wall"].append(t1 - t0); out["step_cpu"].append(c1 - c0)
for seed in range(9000, 9000 + seeds):
    for tid in tasks:
        c0, t0 = cpu(), wall(); ok = reset(seed, tid); t1, c1 = wall(), cpu()
        if ok:
            out["reset_wall"].append(t1 - t0); out["reset_cpu"].append(c1 - c0)
import gc
mid = next(t for t in tasks if env.app.tasks[t].kind != "info")   # as bench_apps.py: half way through a plan
env.reset(seed=7, options={"task": mid})
plan = env.oracle_plan()
for a in plan[: len(plan) // 2]:
    env.step(a)
for _ in range(4):
    gc.collect()
    for _ in range(100):
        c0, t0 = cpu(), wall(); env.fork(); t1, c1 = wall(), cpu()
        out["fork_wall"].append(t1 - t0); out["fork_cpu"].append(c1 - c0)
env.max_steps_override = 10 ** 9
urls = SEARCH_URLS[name](env, Rng.derive("bench-search", name, "default"), n_urls)
for i, u in enumerate(urls):
    if i % 40 == 0:
        env.reset(seed=0)
    c0, t0 = cpu(), wall(); env.step(f"goto({u!r})"); t1, c1 = wall(), cpu()
    out["search_wall"].append(t1 - t0); out["search_cpu"].append(c1 - c0)
import simweb.axtree, simweb.state   # which compiled modules this side ran (1) or their fallbacks (0)
out["compiled_walk"] = [int(getattr(simweb.axtree, "COMPILED_WALK", False))]
out["compiled_copy"] = [int(getattr(simweb.state, "COMPILED_COPY", False))]
print(json.dumps(out))
"""

FIGURES = [("step", "step"), ("reset", "cold reset"), ("search", "search page"), ("fork", "fork")]


def export(rev: str, into: Path) -> Path:
    """``git archive`` of ``rev`` laid out as an importable ``simweb`` package; returns the
    directory to put on PYTHONPATH."""
    src, pkg = into / "src", into / "pkg"
    src.mkdir(parents=True)
    pkg.mkdir()
    archive = subprocess.run(["git", "-C", str(REPO), "archive", rev], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(src)], input=archive, check=True)
    if list((src / "simweb").glob("*.pyx")):
        # The revision's compiled modules, built as `pip install` would: without them the
        # reference would run its Python fallbacks and the comparison would flatter this side.
        done = subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"], cwd=src,
                              capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"building {rev}'s compiled modules failed:\n{done.stderr[-2000:]}")
    (pkg / "simweb").symlink_to(src / "simweb")
    for sub in ("apps", "specs", "verifiers"):
        (src / "simweb" / sub).symlink_to(src / sub)
    return pkg


def run_child(app: str, seeds: int, n_urls: int, pythonpath: str | None, cwd: str,
              factor: int = 1) -> dict[str, list[int]]:
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    else:
        env.pop("PYTHONPATH", None)
    r = subprocess.run([sys.executable, "-c", CHILD, app, str(seeds), str(n_urls), str(REPO / "benchmarks"), str(factor)],
                       env=env, capture_output=True, text=True, cwd=cwd, check=False)   # an empty directory: nothing shadows simweb
    if r.returncode != 0:
        raise SystemExit(f"{app} child ({pythonpath or 'this checkout'}) failed:\n{r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> dict:
    p = parser(__doc__.split("\n")[0])
    p.add_argument("--ref", required=True, help="git revision to compare against (e.g. the commit before a change)")
    p.add_argument("--this", default=None, help="git revision to measure instead of this checkout (exported like --ref,"
                                                " so the working tree can change during the run)")
    p.add_argument("--rounds", type=int, default=None, help="child processes per side and app (default 3, quick 1)")
    p.add_argument("--apps", default=None, help="comma-separated apps (default: every registered app)")
    p.add_argument("--seeds", type=int, default=None, help="episode seeds per task template (default 3, quick 1)")
    p.add_argument("--factor", type=int, default=1, help="world size as a multiple of the app's default (10: the 10x world)")
    args = p.parse_args(argv)
    import simweb

    names = args.apps.split(",") if args.apps else list(simweb.app_names())
    rounds = args.rounds or (1 if args.quick else 3)
    seeds, n_urls = (1, 20) if args.quick else (3, 60)
    seeds = args.seeds or seeds
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", args.this or "HEAD"], capture_output=True, check=False,
                          text=True).stdout.strip()
    results: dict[str, Any] = {"ref": args.ref, "head": head, "rounds": rounds, "seeds": seeds, "search_urls": n_urls,
                               "world_factor": args.factor}
    with tempfile.TemporaryDirectory(prefix="simweb-ref-") as tmp:
        ref_path = str(export(args.ref, Path(tmp) / "ref"))
        this_path = str(export(args.this, Path(tmp) / "this")) if args.this else None
        (Path(tmp) / "cwd").mkdir()
        for name in names:
            samples: dict[str, dict[str, list[int]]] = {"this": {}, "ref": {}}
            for r in range(rounds):
                order = [("this", this_path), ("ref", ref_path)] if r % 2 == 0 else [("ref", ref_path), ("this", this_path)]
                for side, path in order:
                    for k, v in run_child(name, seeds, n_urls, path, str(Path(tmp) / "cwd"), args.factor).items():
                        samples[side].setdefault(k, []).extend(v)
            res: dict[str, Any] = {}
            for key, _ in FIGURES:
                for clock in ("wall", "cpu"):
                    a = median(samples["this"][f"{key}_{clock}"]) / 1e6
                    b = median(samples["ref"][f"{key}_{clock}"]) / 1e6
                    res[f"{key}_{clock}_ms"] = {"this": round(a, 5), "ref": round(b, 5), "ratio": round(a / b, 3),
                                                "n": len(samples["this"][f"{key}_{clock}"])}
            res["compiled"] = {side: {k: sorted(set(samples[side][k])) for k in ("compiled_walk", "compiled_copy")}
                               for side in ("this", "ref")}
            results[name] = res
            print(f"{name}: compiled modules in use (1) or fallbacks (0): {res['compiled']}")
            rows = [[f"{label} ({clock})", res[f"{key}_{clock}_ms"]["this"], res[f"{key}_{clock}_ms"]["ref"],
                     res[f"{key}_{clock}_ms"]["ratio"]] for key, label in FIGURES for clock in ("wall", "cpu")]
            print_table(f"{name}: medians, this checkout ({head}) vs {args.ref}",
                        ["figure", "this ms", "ref ms", "ratio"], rows)
    write_json(args.out, "engine_ab", results, argv)
    return results


if __name__ == "__main__":
    main(sys.argv[1:])
