"""Site variants' step and cold reset in instructions: per variant, against variant 0, same steps.

bench_variants.py times a variant's step against variant 0's in the same run; on the shared
2-core machine its A/A runs spread a few percent, as wide as the 10% goal's margin.
Instructions executed do not depend on the load: valgrind's callgrind counts every one.
This script runs, per app, one process under callgrind that does what
``bench_variants.py --sample N`` does (the same sampled variants, :func:`sample_variants`):
one environment of variant 0 and, per sampled variant, a new environment of it (both warmed
up alike: every template's first episode at a seed no timed episode uses); every task
template's oracle episode at ``--rounds`` new seeds on both sides, interleaved, the side
that goes first alternating, the parse cache emptied before each episode. Around each cold
reset and around each episode's steps (between its reset and plan and its end) the child
calls ``os.getppid``, which nothing else calls: callgrind dumps its counters (and zeroes
them) before each call (``--dump-before=getppid``), so the dump before the second call
holds that region's instructions alone.

Per variant: ``step_ratio``, the instructions of all its episodes' steps over the same
episodes' steps on variant 0 (same instances, same plans: the variant keeps today's flows);
``step_paired``, the median over episodes of the same ratio per episode; and
``cold_reset_ratio`` (all its cold resets over variant 0's). An episode whose plan has
another number of steps on the variant (a flow the sample does not screen out, such as a
load-more list) is left out of the step figures and counted (``other_steps``). ``--aa M`` adds runs of
variant 0 against a second environment of it. ``--ref REV`` counts the same on a revision
too (``git archive`` of it, its compiled modules built), for a before/after in one run.

    python benchmarks/bench_variant_instructions.py --apps booking,cms [--sample 8] [--rounds 2] [--ref main] [--jobs 2]

Needs valgrind. About 50 times slower than native: one booking variant at ``--rounds 2``
took 5.5 minutes at a load of 4-5 (the process's start and variant 0's warm-up are about
5.5 billion instructions; each variant adds its build, its warm-up and its episodes). ``--keep DIR`` keeps the dumps (``callgrind_annotate`` reads them: where a
variant's extra instructions go, by C function).
"""
from __future__ import annotations

import json
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
from bench_variants import sample_variants
from common import REPO, parser, percentile, print_table, write_json

CHILD = r"""
import json, os, sys
import simweb
from simweb.web.browsing import parse_cached
app, rounds, ids = sys.argv[1], int(sys.argv[2]), [int(x) for x in sys.argv[3].split(",")]
dumps = [0]
log = []

def region(label, fn):
    os.getppid()     # callgrind dumps (and zeroes) its counters before this call: what ran before
    out = fn()
    os.getppid()     # this dump holds fn's instructions alone
    dumps[0] += 2
    log.append([label, dumps[0]])
    return out

base = simweb.make(app)
for tid in sorted(base.app.tasks):   # warm-up: each template's first use on variant 0
    base.reset(seed=999, options={"task": tid})
    for a in base.oracle_plan()[:-1]:
        base.step(a)
seed = 30_000
for k in ids:
    envs = {"v0": base, "k": simweb.make(app, variant=k) if k else simweb.make(app)}
    for tid in sorted(base.app.tasks):   # the same warm-up on the variant's environment
        envs["k"].reset(seed=999, options={"task": tid})
        for a in envs["k"].oracle_plan()[:-1]:
            envs["k"].step(a)
    seed += 1000
    s = seed
    for r in range(rounds + rounds % 2):
        for tid in sorted(base.app.tasks):
            s += 1
            for side in (("v0", "k") if r % 2 == 0 else ("k", "v0")):
                env = envs[side]
                parse_cached.cache_clear()
                region([k, side, tid, s, "reset"], lambda: env.reset(seed=s, options={"task": tid}))
                plan = env.oracle_plan()[:-1]

                def steps():
                    for a in plan:
                        env.step(a)
                region([k, side, tid, s, "steps", len(plan)], steps)
print("REGIONS " + json.dumps(log), file=sys.stderr)
"""

_TOTAL = re.compile(r"^(?:summary|totals): (\d+)", re.M)


def count(app: str, ids: list[int], rounds: int, side: str, pythonpath: str | None, cwd: str,
          out_dir: Path) -> list[dict[str, Any]]:
    """One child under callgrind; each region's label and instructions."""
    env = dict(os.environ, PYTHONHASHSEED="0")   # str hashes (set order, dict probing) alike in every run
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    else:
        env.pop("PYTHONPATH", None)
    out_file = out_dir / f"{app}.{side}.callgrind"
    cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out_file}", "--dump-instr=no",
           "--dump-before=getppid", sys.executable,
           "-c", CHILD, app, str(rounds), ",".join(map(str, ids))]
    r = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    m = re.search(r"^REGIONS (.*)$", r.stderr, re.M)
    if r.returncode != 0 or m is None:
        raise SystemExit(f"bench_variant_instructions: {app} ({side}) failed:\n{r.stderr[-2000:]}")
    regions = []
    for label, n in json.loads(m.group(1)):
        dump = Path(f"{out_file}.{n}")
        total = _TOTAL.search(dump.read_text())
        if total is None:
            raise SystemExit(f"bench_variant_instructions: no total in {dump}")
        regions.append({"label": label, "ir": int(total.group(1)), "dump": dump.name})
    return regions


def summarise(regions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per variant: its steps' and cold resets' instructions against variant 0's, same episodes."""
    by: dict[tuple[int, str, int, str], dict[str, Any]] = {}
    for reg in regions:
        k, side, tid, seed, what = reg["label"][:5]
        by[(k, tid, seed, what + ":" + side)] = reg
    out = []
    for k in dict.fromkeys(reg["label"][0] for reg in regions):
        eps = sorted({(tid, seed) for kk, tid, seed, _ in by if kk == k})
        step = {"v0": 0, "k": 0}
        reset = {"v0": 0, "k": 0}
        ratios, nsteps, other = [], 0, 0
        for tid, seed in eps:
            a, b = by[(k, tid, seed, "steps:v0")], by[(k, tid, seed, "steps:k")]
            if a["label"][5] != b["label"][5]:   # the oracle took other steps (a flow the sample keeps)
                other += 1
                continue
            nsteps += a["label"][5]
            step["v0"] += a["ir"]
            step["k"] += b["ir"]
            if a["label"][5]:
                ratios.append(b["ir"] / a["ir"])
            reset["v0"] += by[(k, tid, seed, "reset:v0")]["ir"]
            reset["k"] += by[(k, tid, seed, "reset:k")]["ir"]
        out.append({"variant": k, "episodes": len(eps) - other, "other_steps": other, "steps": nsteps,
                    "step_v0_kir": round(step["v0"] / max(1, nsteps) / 1e3, 1),
                    "step_kir": round(step["k"] / max(1, nsteps) / 1e3, 1),
                    "step_ratio": round(step["k"] / step["v0"], 4),
                    "step_paired": round(percentile(ratios, 50), 4),
                    "cold_reset_ratio": round(reset["k"] / reset["v0"], 4)})
    return out


def distribution(rows: list[dict[str, Any]], key: str) -> dict[str, Any]:
    xs = sorted(r[key] for r in rows if r["variant"])
    if not xs:
        return {"n": 0}
    return {"n": len(xs), "median": round(percentile(xs, 50), 4), "p90": round(percentile(xs, 90), 4),
            "max": round(xs[-1], 4), "within_1.10": round(sum(1 for x in xs if x <= 1.10) / len(xs), 3)}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = parser(__doc__.split("\n")[0])
    p.add_argument("--apps", default="booking,cms")
    p.add_argument("--sample", type=int, default=8, help="variants drawn as bench_variants.py --sample draws them")
    p.add_argument("--rounds", type=int, default=2, help="new seeds per template and variant (even)")
    p.add_argument("--aa", type=int, default=1, help="runs of variant 0 against a second environment of it")
    p.add_argument("--ref", default=None, help="also count this git revision (before/after in one run)")
    p.add_argument("--ids", default=None, help="these variant ids (comma-separated) instead of a sample")
    p.add_argument("--jobs", type=int, default=2, help="callgrind runs at once")
    p.add_argument("--keep", type=Path, default=None, help="keep the callgrind dumps in this directory")
    args = p.parse_args(argv)
    if shutil.which("valgrind") is None:
        raise SystemExit("bench_variant_instructions: valgrind is not installed (apt-get install valgrind)")
    apps = args.apps.split(",")
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                          check=False, text=True).stdout.strip()
    results: dict[str, Any] = {"head": head, "ref": args.ref, "rounds": args.rounds}
    with tempfile.TemporaryDirectory(prefix="simweb-vir-") as tmp:
        out_dir = args.keep or Path(tmp) / "dumps"
        out_dir.mkdir(parents=True, exist_ok=True)
        paths: dict[str, str | None] = {"this": None}
        if args.ref:
            paths["ref"] = str(export(args.ref, Path(tmp) / "ref"))
        cwd = Path(tmp) / "cwd"
        cwd.mkdir()
        chosen = [int(x) for x in args.ids.split(",")] if args.ids else None
        ids = {app: [0] * args.aa + (chosen or sample_variants(app, args.sample)) for app in apps}
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            futures = {(app, side): pool.submit(count, app, ids[app], args.rounds, side, path, str(cwd), out_dir)
                       for app in apps for side, path in paths.items()}
            rows = []
            for (app, side), fut in futures.items():
                per = summarise(fut.result())
                res: dict[str, Any] = {
                    "variants": per, "step_ratio": distribution(per, "step_ratio"),
                    "step_paired": distribution(per, "step_paired"),
                    "cold_reset_ratio": distribution(per, "cold_reset_ratio"),
                    "aa": [{k: r[k] for k in ("step_ratio", "step_paired", "cold_reset_ratio")}
                           for r in per if not r["variant"]]}
                results.setdefault(app, {})[side] = res
                for r in per:
                    print(f"  {app} {side} variant {r['variant']:6}: step {r['step_v0_kir']} -> {r['step_kir']} "
                          f"kIr (x{r['step_ratio']}, paired x{r['step_paired']}), cold reset x{r['cold_reset_ratio']}",
                          flush=True)
                d, c = res["step_ratio"], res["cold_reset_ratio"]
                rows.append([app, side, d.get("median"), d.get("p90"), d.get("max"), d.get("within_1.10"),
                             c.get("median"), c.get("max"),
                             " ".join(f"x{a['step_ratio']}" for a in res["aa"])])
    print_table(f"instructions, variant / variant 0 over the same episodes ({head}"
                + (f" and {args.ref}" if args.ref else "") + ")",
                ["app", "side", "step median", "p90", "max", "within 1.10", "cold reset median", "max", "A/A step"],
                rows)
    write_json(args.out, "variant_instructions", results, argv)
    return results


if __name__ == "__main__":
    main(sys.argv[1:])
