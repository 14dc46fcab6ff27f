"""Run every benchmark, each in its own process, and write ``benchmarks/results.json``.

    python benchmarks/run_all.py [--quick] [--no-1m] [--only step,search,...]
                                 [--bg-python /tmp/bgvenv/bin/python]

``--bg-python`` (or ``$BROWSERGYM_PYTHON``) is the interpreter of a virtualenv with
browsergym-core installed (see bench_browsergym.py); without it the BrowserGym figure runs
with this interpreter and, if browsergym-core is missing there, falls back to simweb's own
Playwright backend as the browser reference (and says so in the results).

The 1,000,000-product world is built on first use (minutes); ``--no-1m`` skips it.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import HERE, machine_info, print_table

#: name -> (script, accepts --no-1m, extra arguments, needs the 1M world)
BENCHES = {
    "step": ("bench_step.py", False, [], False),
    "step_1m": ("bench_step.py", False, ["--size", "1000000", "--seeds", "10"], True),
    "fork_reset": ("bench_fork_reset.py", True, [], False),
    "memory": ("bench_memory.py", False, [], False),
    "search": ("bench_search.py", True, [], False),
    "browsergym": ("bench_browsergym.py", False, [], False),
    "rollout": ("bench_rollout.py", False, [], False),
    "whatif": ("bench_whatif.py", True, [], False),
    "apps": ("bench_apps.py", False, [], False),
    "gc": ("bench_gc.py", False, [], False),
    "omnibox": ("bench_omnibox.py", False, [], False),
}


def summary_rows(results: dict) -> list[list]:
    """(figure, metric, value, target, met) for the headline numbers."""
    rows: list[list] = []

    def met(t: dict | None) -> str:
        if not t or t.get("met") is None:
            return "-"
        return "met" if t["met"] else "NOT met"

    r = results.get("step", {}).get("results")
    if r:
        rows.append(["1 step (axtree obs)", "median / p95 ms", f"{r['steps']['median']} / {r['steps']['p95']}",
                     "median <= 1 ms", met(r["target_median_ms"])])
        for k, v in r["by_kind"].items():
            rows.append(["1 step: " + k, "median / p95 ms", f"{v['median']} / {v['p95']}", "", ""])
    r = results.get("step_1m", {}).get("results")
    if r:
        rows.append(["1 step, 1M world", "median / p95 ms", f"{r['steps']['median']} / {r['steps']['p95']}",
                     "", ""])
    r = results.get("browsergym", {}).get("results")
    if r and r.get("headline_reference"):
        ref = r[r["headline_reference"]]
        for k, t in r.get("target_step_ratio_by_action", {}).items():
            rows.append([f"2 {r['headline_reference']}", f"{k} step: x slower than simweb",
                         f"{ref['ratios_of_medians_vs_simweb'][k]}", ">= 1000x", met(t)])
        dflt = r.get("BrowserGym BrowserEnv (defaults)", {})
        if "ratios_of_medians_vs_simweb" in dflt:
            for k in ("noop()", "click"):
                if k in dflt["ratios_of_medians_vs_simweb"]:
                    v = dflt["ratios_of_medians_vs_simweb"][k]
                    rows.append(["2 BrowserGym BrowserEnv (defaults)", f"{k} step: x slower than simweb", f"{v}",
                                 ">= 1000x", "met" if v >= 1000 else "NOT met"])
        rows.append(["2 " + r["headline_reference"], "reset / click median ms",
                     f"{ref['reset']['median']} / {ref['click']['median']}", "", ""])
        sim = r["simweb_in_process"]
        rows.append(["2 simweb in-process (same run)", "reset / click median ms",
                     f"{sim['reset']['median']} / {sim['click']['median']}", "", ""])
    r = results.get("fork_reset", {}).get("results")
    if r:
        rows.append(["3 fork 10K", "median / p95 us", f"{r['fork']['10K']['median']} / {r['fork']['10K']['p95']}",
                     "<= 50 us", met(r["target_fork_median_us"])])
        if "1M" in r["fork"]:
            rows.append(["3 fork 1M", "median / p95 us", f"{r['fork']['1M']['median']} / {r['fork']['1M']['p95']}",
                         "<= 50 us", met(r.get("target_fork_median_us_1M"))])
            rows.append(["3 fork ratio 1M/10K", "ratio of medians", f"{r['fork_ratio_1M_over_10K']}", "<= 2",
                         met(r.get("target_fork_ratio"))])
        for k in ("same", "warm_different", "cold"):
            v = r["reset_10K"][k]
            rows.append([f"4 reset ({k})", "median / p95 ms", f"{v['median']} / {v['p95']}", "<= 1 ms",
                         met(r["target_reset_median_ms"][k])])
    r = results.get("memory", {}).get("results")
    if r:
        for k in ("fork_mid", "fork_mid+step", "fork_mid+own_page", "make", "make+reset", "make+reset+steps"):
            if k in r:
                rows.append([f"5 memory {k}", "RSS / py-heap KB per env",
                             f"{r[k]['rss_per_env_kb']} / {r[k]['py_heap_per_env_kb']}", "<= 1024 KB",
                             "met" if max(r[k]["rss_per_env_kb"], r[k]["py_heap_per_env_kb"]) <= 1024 else "NOT met"])
    r = results.get("search", {}).get("results")
    if r:
        for w in ("10K", "1M"):
            if w in r:
                a = r[w]["world.search warm (median of repeats)"]
                b = r[w]["search page step, first"]
                tgt = "p50 <= 5 ms" if w == "1M" else ""
                rows.append([f"6 search {w}: world.search", "p50 / p95 ms", f"{a['p50']} / {a['p95']}", tgt,
                             met(r.get("target_search_p50_ms_on_1M")) if w == "1M" else ""])
                rows.append([f"6 search {w}: page step", "p50 / p95 ms", f"{b['p50']} / {b['p95']}", tgt,
                             met(r.get("target_search_page_step_p50_ms_on_1M")) if w == "1M" else ""])
    r = results.get("rollout", {}).get("results")
    if r:
        for w in ("workers=1", "workers=2"):
            rows.append([f"7 demo rollouts {w}", "steps/s (wall)", f"{r[w]['steps_per_s_median']}", "", ""])
    r = results.get("apps", {}).get("results")
    if r:
        for app, a in r.items():
            if not isinstance(a, dict) or "step_ms" not in a:
                continue
            for w in ("default", "10x"):
                s = a["step_ms"][w]["all"]
                rows.append([f"9 {app} {w} ({a['sizes'][w]:,}): step", "median / p95 ms", f"{s['median']} / {s['p95']}",
                             "median <= 1 ms" if w == "default" else "",
                             met(a["targets"]["step_median_ms_default"]) if w == "default" else ""])
                f, rc = a["fork_us"][w], a["reset_ms"][w]
                rows.append([f"9 {app} {w}: fork / reset cached / reset cold", "median",
                             f"{f['median']} us / {rc['cached']['median']} ms / {rc['cold']['median']} ms", "", ""])
                sp = a["search_page_ms"][w]["first"]
                rows.append([f"9 {app} {w}: search page", "p50 / p95 ms", f"{sp['median']} / {sp['p95']}",
                             "p50 <= 5 ms" if w == "10x" else "",
                             met(a["targets"]["search_page_p50_ms_10x"]) if w == "10x" else ""])
    r = results.get("gc", {}).get("results")
    if r:
        for app, g in r.items():
            rows.append([f"10 GC {app}: frozen vs list records", "tracked objects / slowest step ms / run s",
                         f"{g['A']['tracked_objects_median']} vs {g['B']['tracked_objects_median']} / "
                         f"{g['A']['step_max_ms_median']} vs {g['B']['step_max_ms_median']} / "
                         f"{g['A']['rollout_s_median']} vs {g['B']['rollout_s_median']}", "", ""])
    r = results.get("whatif", {}).get("results")
    if r:
        if "jinja_getattr" in r:
            j = r["jinja_getattr"]
            rows.append(["what-if: jinja dict-first getattr", "median gain % (request steps / search pages)",
                         f"{j['oracle request steps']['median_gain_pct']} / {j['search pages']['median_gain_pct']}",
                         "output identical", "yes" if j["identical_output"] else "NO"])
        if "restore_check" in r:
            j = r["restore_check"]
            rows.append(["what-if: restore validated-hash cache", "median us (stock -> cached)",
                         f"{j['stock']['median']} -> {j['hash_cached_validation']['median']}", "", ""])
        if "cold_reset" in r:
            j = r["cold_reset"]
            rows.append(["what-if: cold reset", "median ms stock / no validation / jinja / both",
                         " / ".join(str(j[k]["median"]) for k in ("stock", "no_validation", "jinja_getattr", "both")),
                         "", ""])
        if "facets_cap" in r:
            j = r["facets_cap"]
            rows.append([f"what-if: 1M facets over {j['cap']} matches", "page step p50 ms (stock -> capped)",
                         f"{j['page_step_p50_ms']['A']} -> {j['page_step_p50_ms']['B']}", "", ""])
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--no-1m", action="store_true")
    p.add_argument("--only", default=None, help="comma-separated subset of: " + ", ".join(BENCHES))
    p.add_argument("--bg-python", default=os.environ.get("BROWSERGYM_PYTHON"),
                   help="interpreter with browsergym-core installed")
    p.add_argument("--out", type=Path, default=HERE / "results.json")
    args = p.parse_args()
    names = args.only.split(",") if args.only else list(BENCHES)
    for n in names:
        if n not in BENCHES:
            p.error(f"unknown benchmark {n!r}")

    results: dict = {}
    if args.out.exists() and args.only:   # a partial run updates the existing file
        try:
            results = json.loads(args.out.read_text()).get("benchmarks", {})
        except (OSError, ValueError):
            results = {}
    with tempfile.TemporaryDirectory(prefix="simweb-bench-") as tmp:
        for name in names:
            script, has_1m, extra, needs_1m = BENCHES[name]
            if needs_1m and args.no_1m:
                continue
            py = args.bg_python if (name == "browsergym" and args.bg_python) else sys.executable
            cmd = [py, str(HERE / script), *extra, "--out", f"{tmp}/{name}.json"]
            if args.quick:
                cmd.append("--quick")
            if args.no_1m and has_1m:
                cmd.append("--no-1m")
            print(f"\n=== {name}: {' '.join(cmd)}", flush=True)
            t0 = time.time()
            proc = subprocess.run(cmd, cwd=str(HERE.parent))
            if proc.returncode != 0:
                results[name] = {"error": f"exit code {proc.returncode}", "command": " ".join(cmd)}
                continue
            doc = json.loads(Path(f"{tmp}/{name}.json").read_text())
            doc["wall_s"] = round(time.time() - t0, 1)
            doc["interpreter"] = py
            results[name] = doc
    out = {"machine": machine_info(), "quick": args.quick, "benchmarks": results}
    try:
        rows = summary_rows(results)
    except Exception as exc:   # never lose the measurements over a summary bug
        rows = [["summary failed", f"{type(exc).__name__}: {exc}", "", "", ""]]
    out["summary"] = [dict(zip(("figure", "metric", "value", "target", "status"), r)) for r in rows]
    args.out.write_text(json.dumps(out, indent=2, default=str) + "\n")
    print_table("summary", ["figure", "metric", "value", "target", "status"], rows)
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
