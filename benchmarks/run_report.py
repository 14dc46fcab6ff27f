"""The report's run: the CI-sized forms of the headline benchmarks, in one run, one results file.

BENCHMARKS.md's current figures come from this script. It runs each benchmark below in its
own fresh process (as ``run_all.py`` does), one after another, and writes one JSON file
holding every benchmark's own result document, the machine, the load average before each,
the git commit and the command. ``benchmarks/report.py`` turns that file into the report's
tables and plots.

  * targets:    issue 8's targets per app (step, cold reset, fork, search), ``bench_targets.py --quick``
  * browsergym: the browser reference, same run (``bench_browsergym.py --quick``; without a
                browsergym-core venv, simweb's own Playwright backend is the reference)
  * redteam:    reward integrity per app (``bench_redteam.py --quick``: 2 instances per template)
  * pool_scale: rollouts through the pools, scaling at 2 workers (``bench_pool_scale.py --quick --no-ray``)
  * viewer:     ``simweb view`` over a large run (``bench_viewer.py --quick``)

    python benchmarks/run_report.py [--only targets,redteam] [--rounds 1] [--out benchmarks/results_report.json]

Figures measured on a loaded machine are noisy: compare only within one run (the ratios).
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
from typing import Any

from common import HERE, load_now, machine_info

#: name -> (script, arguments): the CI-sized form of each headline benchmark
BENCHES: dict[str, tuple[str, list[str]]] = {
    "targets": ("bench_targets.py", ["--quick"]),
    "browsergym": ("bench_browsergym.py", ["--quick"]),
    "redteam": ("bench_redteam.py", ["--quick"]),
    "pool_scale": ("bench_pool_scale.py", ["--quick", "--no-ray"]),
    "viewer": ("bench_viewer.py", ["--quick"]),
}


def run_one(name: str, rounds: int, tmp: Path, timeout: float) -> dict[str, Any]:
    """One benchmark in a fresh process: its result document, or why it has none."""
    script, extra = BENCHES[name]
    out = tmp / f"{name}.json"
    args = list(extra) + (["--rounds", str(rounds)] if name == "targets" else [])
    cmd = [sys.executable, str(HERE / script), *args, "--out", str(out)]
    t0 = time.monotonic()
    load = load_now()
    try:
        done = subprocess.run(cmd, cwd=HERE, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s", "load_before": load}
    secs = round(time.monotonic() - t0, 1)
    if done.returncode != 0 or not out.exists():
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        return {"error": " | ".join(tail) or f"exit {done.returncode}", "load_before": load, "seconds": secs}
    doc: dict[str, Any] = json.loads(out.read_text())
    doc["load_before"] = load
    doc["seconds"] = secs
    doc["command"] = " ".join(["python", f"benchmarks/{script}", *args])
    return doc


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", default=",".join(BENCHES), help="comma-separated: " + ", ".join(BENCHES))
    p.add_argument("--rounds", type=int, default=1, help="fresh-process readings per app for the targets")
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds allowed per benchmark")
    p.add_argument("--out", type=Path, default=HERE / "results_report.json")
    args = p.parse_args(argv)
    names = [n for n in args.only.split(",") if n]
    unknown = [n for n in names if n not in BENCHES]
    if unknown:
        print(f"run_report: unknown benchmark(s): {', '.join(unknown)}", file=sys.stderr)
        return 2
    words = ["python", "benchmarks/run_report.py", *(argv if argv is not None else sys.argv[1:])]
    report: dict[str, Any] = {"benchmark": "report", "command": " ".join(words), "machine": machine_info(),
                              "results": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            print(f"run_report: {name} ...", flush=True)
            report["results"][name] = run_one(name, args.rounds, Path(tmp), args.timeout)
            err = report["results"][name].get("error")
            print(f"run_report: {name} {'FAILED: ' + err if err else 'done'}", flush=True)
            args.out.write_text(json.dumps(report, indent=2, default=str) + "\n")  # partial results survive
    report["machine"]["loadavg_at_end"] = load_now()
    report["machine"]["finished"] = machine_info()["date"]
    args.out.write_text(json.dumps(report, indent=2, default=str) + "\n")
    print(f"run_report: wrote {os.path.relpath(args.out)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
