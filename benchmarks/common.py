"""Shared helpers for the simweb benchmarks: timing, statistics, tables, JSON results.

Rules every script follows (the machine is small and shared):

* many repetitions, reported as median and p95 (never a single run, never the mean alone);
* anything compared against a reference is measured in the same process run, with the two
  sides interleaved, so that load from other work on the machine hits both alike;
* no timed assertions: scripts report numbers and whether a target is met, they never fail
  on a slow run.

Each script is runnable on its own (``python benchmarks/bench_step.py [--quick]``) and
writes its results as JSON with ``--out FILE``; ``run_all.py`` merges them into
``benchmarks/results.json``.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import gc
import json
import math
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

now_ns = time.perf_counter_ns
cpu_ns = time.thread_time_ns   # CPU time of this thread: immune to being descheduled


# ----------------------------------------------------------------------------- statistics

def percentile(samples: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100) with linear interpolation between closest ranks."""
    if not samples:
        return float("nan")
    xs = sorted(samples)
    if len(xs) == 1:
        return float(xs[0])
    pos = (len(xs) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return float(xs[lo] + (xs[hi] - xs[lo]) * (pos - lo))


def median(samples: Sequence[float]) -> float:
    return percentile(samples, 50)


def p95(samples: Sequence[float]) -> float:
    return percentile(samples, 95)


def summarize(samples_s: Sequence[float], unit: str = "us") -> dict[str, Any]:
    """Summary of durations given in seconds, converted to ``unit`` (s, ms, us)."""
    scale = {"s": 1.0, "ms": 1e3, "us": 1e6}[unit]
    xs = [x * scale for x in samples_s]
    return {
        "unit": unit,
        "n": len(xs),
        "median": round(median(xs), 3),
        "p95": round(p95(xs), 3),
        "p5": round(percentile(xs, 5), 3),
        "min": round(min(xs), 3) if xs else None,
        "max": round(max(xs), 3) if xs else None,
        "mean": round(sum(xs) / len(xs), 3) if xs else None,
    }


# ----------------------------------------------------------------------------- timing

def time_each(fn: Callable[[], Any], n: int, warmup: int = 0) -> list[float]:
    """Call ``fn`` n times (after ``warmup`` untimed calls); one duration (s) per call."""
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(n):
        t0 = now_ns()
        fn()
        out.append((now_ns() - t0) * 1e-9)
    return out


class Stopwatch:
    """``with sw: ...`` appends the block's duration (s) to ``sw.samples``."""

    def __init__(self) -> None:
        self.samples: list[float] = []

    def __enter__(self) -> Stopwatch:
        self._t0 = now_ns()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.samples.append((now_ns() - self._t0) * 1e-9)


def settle() -> None:
    """Collect garbage before a measured section so a collection of the previous
    section's garbage does not land inside it."""
    gc.collect()


# ----------------------------------------------------------------------------- episodes

#: (task, seed, error) of resets that raised; benchmarks skip those episodes and report them.
RESET_FAILURES: list[tuple[str, int, str]] = []


def try_reset(env: Any, seed: int, task: str | None) -> bool:
    """Reset to (task, seed); False (recorded in RESET_FAILURES) if the engine raises, e.g.
    when a task template cannot draw its parameters from this world for this seed."""
    try:
        env.reset(seed=seed, options={"task": task} if task else None)
        return True
    except Exception as exc:  # reported, never hidden
        entry = (str(task), int(seed), f"{type(exc).__name__}: {exc}"[:200])
        if entry not in RESET_FAILURES:
            RESET_FAILURES.append(entry)
        return False


def reset_failures() -> list[dict[str, Any]]:
    return [{"task": t, "seed": s, "error": e} for t, s, e in RESET_FAILURES]


# ----------------------------------------------------------------------------- memory

PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def rss_bytes() -> int:
    """Resident set size of this process, from /proc/self/statm (no psutil needed)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE_SIZE


# ----------------------------------------------------------------------------- machine

def load_now() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def machine_info() -> dict[str, Any]:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        mem_kb = int(next(ln for ln in Path("/proc/meminfo").read_text().splitlines()
                          if ln.startswith("MemTotal")).split()[1])
    except (OSError, StopIteration, ValueError):
        mem_kb = 0
    try:
        commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, timeout=10).stdout.strip() or None
        dirty = bool(subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
                                    capture_output=True, text=True, timeout=10).stdout.strip())
    except (OSError, subprocess.SubprocessError):
        commit, dirty = None, None
    return {
        "date": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "mem_gb": round(mem_kb / 1024 / 1024, 1),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "loadavg_at_start": [round(x, 2) for x in os.getloadavg()],
        "git_commit": commit,
        "git_dirty_tracked": dirty,
        "simweb_cache": os.environ.get("SIMWEB_CACHE") or str(Path.home() / ".cache/simweb/worlds"),
    }


# ----------------------------------------------------------------------------- CLI + output

def parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--quick", action="store_true", help="a short run (smoke test, noisy numbers)")
    p.add_argument("--out", type=Path, default=None, help="write the results as JSON to this file")
    return p


def target(value: float | None, limit: float, kind: str = "<=") -> dict[str, Any]:
    """A target check: ``{"target": "<= 1.0", "met": bool}`` (None when not measured)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return {"target": f"{kind} {limit}", "met": None}
    met = value <= limit if kind == "<=" else value >= limit
    return {"target": f"{kind} {limit}", "met": bool(met)}


def write_json(path: Path | None, name: str, results: dict[str, Any], argv: Iterable[str] | None = None) -> None:
    if path is None:
        return
    words = list(argv) if argv is not None else list(sys.argv)
    if not (words and words[0].endswith(".py")):   # main(sys.argv[1:]): the script's name first
        words.insert(0, f"benchmarks/{Path(sys.argv[0]).name}")
    doc = {"benchmark": name, "command": " ".join(["python", *words]), "machine": machine_info(),
           "results": results}
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(doc, indent=2, sort_keys=False, default=str) + "\n")
    os.replace(tmp, path)


def fmt(x: Any, digits: int = 3) -> str:
    if x is None:
        return "-"
    if isinstance(x, bool):
        return "yes" if x else "NO"
    if isinstance(x, float):
        if math.isnan(x):
            return "-"
        if abs(x) >= 1000:
            return f"{x:,.0f}"
        return f"{x:.{digits}g}" if abs(x) < 1 else f"{x:.{max(1, digits - len(str(int(abs(x)))))}f}"
    return str(x)


def print_table(title: str, headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    rows = [[fmt(c) for c in r] for r in rows]
    widths = [max(len(str(h)), *(len(r[i]) for r in rows)) if rows else len(str(h)) for i, h in enumerate(headers)]
    print(f"\n{title}")
    line = "  ".join(str(h).ljust(w) if i == 0 else str(h).rjust(w) for i, (h, w) in enumerate(zip(headers, widths)))
    print(line)
    print("-" * len(line))
    for r in rows:
        print("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))))
    sys.stdout.flush()


def stat_row(label: str, s: dict[str, Any], extra: Sequence[Any] = ()) -> list[Any]:
    return [label, s["n"], s["median"], s["p95"], s["unit"], *extra]
