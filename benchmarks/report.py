"""BENCHMARKS.md's tables and plots, from results files.

    python benchmarks/report.py [--results benchmarks/results_report.json] [--write BENCHMARKS.md]
                                [--plots docs/img/bench]

Reads the one-run results file of ``run_report.py`` (the current figures) and the dated
results files of earlier, longer runs that the report cites (walk parity at 100 walks per app,
the pools on an idle machine), and

* prints every table as Markdown, or with ``--write FILE`` replaces each block between
  ``<!-- report:NAME -->`` and ``<!-- /report:NAME -->`` in FILE with its table (the prose
  around the blocks is left alone; a block with no data says so);
* with ``--plots DIR`` draws the report's PNGs there (matplotlib): ``targets.png`` (every
  figure with a target, measured against it: :mod:`simweb.benchplots`),
  ``walk_parity.png`` and ``pool_scale.png``.

Nothing is measured here; a missing file leaves its block saying which command makes it.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from simweb.tools.benchplots import load_benchmark, ratio_figure, target_rows  # noqa: E402

#: earlier, longer runs the report cites (file in benchmarks/)
PARITY_FILE = "results_walk_parity_200_final.json"
POOL_FILE = "results_pool_scale_idle4.json"
#: the pools with intervals and the CPU view (bench_pool_scale.py since the interleaved rounds)
POOL_INTERVALS_FILE = "results_pool_scale_intervals.json"
QUIET_TARGETS_FILE = "results_targets_s19_final.json"
#: sim2live runs kept in the repository (one folder per pair, report.json inside)
SIM2LIVE_DIR = "sim2live"

Doc = dict[str, Any]


def _load(path: Path) -> Doc | None:
    return load_benchmark(path) if path.exists() else None


def _provenance(doc: Doc) -> str:
    m = doc.get("machine", {})
    load = m.get("loadavg_at_start") or doc.get("load_before") or ["?"]
    return (f"`{doc.get('command')}` — {m.get('date', '?')}, commit `{m.get('git_commit', '?')}`, "
            f"1-minute load average {load[0]} on {m.get('nproc', '?')} cores")


def _table(head: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def _num(x: float) -> str:
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.3g}"


def _cell(f: Any, fmt: str = "{:.2f}") -> str:
    """A bench_targets figure: its median, bold when met, and the spread when several rounds."""
    if not isinstance(f, dict) or f.get("median") is None:
        return "-"
    s = fmt.format(f["median"])
    if f.get("min") != f.get("max"):
        s += f" ({fmt.format(f['min'])}-{fmt.format(f['max'])})"
    return f"**{s}**" if f.get("met") else f"{s} ✗"


def _sub(run: Doc | None, name: str) -> Doc | None:
    sub = (run or {}).get("results", {}).get(name)
    return sub if isinstance(sub, dict) and "results" in sub else None


def _missing(run: Doc | None, name: str) -> str:
    sub = (run or {}).get("results", {}).get(name)
    why = f" ({sub['error']})" if isinstance(sub, dict) and sub.get("error") else ""
    return f"_Not in this run{why}: `python benchmarks/run_report.py --only {name}`._"


# ----------------------------------------------------------------------------- blocks

def block_run(run: Doc | None) -> str:
    if run is None:
        return "_No run yet: `python benchmarks/run_report.py`._"
    m = run["machine"]
    secs = {k: v.get("seconds") for k, v in run["results"].items() if isinstance(v, dict)}
    loads = {k: (v.get("load_before") or ["?"])[0] for k, v in run["results"].items() if isinstance(v, dict)}
    return (f"Command: `{run['command']}` (then `python benchmarks/report.py --write BENCHMARKS.md "
            f"--plots docs/img/bench`).\n"
            f"Run: {m['date']} to {m.get('finished', '?')}, commit `{m.get('git_commit')}`, {m.get('nproc')} cores "
            f"({m.get('cpu')}), Python {m.get('python')}.\n"
            f"1-minute load average before each benchmark: "
            + ", ".join(f"{k} {loads[k]}" for k in loads)
            + "; seconds each: " + ", ".join(f"{k} {secs[k]}" for k in secs) + ".")


def block_targets(run: Doc | None) -> str:
    doc = _sub(run, "targets")
    if doc is None:
        return _missing(run, "targets")
    res = doc["results"]
    rows = []
    for app, per in res.items():
        if not isinstance(per, dict) or "step ms, default" not in per:
            continue
        rows.append([app, _cell(per["step ms, default"]), _cell(per["step ms, 10x"]),
                     _cell(per["cold reset ms, default"]),
                     f"{_cell(per['fork us, default'], '{:.1f}')} / {_cell(per['fork us, 10x'], '{:.1f}')}",
                     _cell(per["search p50 ms, 10x"])])
    head = ["app", "step ms, default (≤ 1)", "step ms, 10x (≤ 1)", "cold reset ms (≤ 1)",
            "fork us, default / 10x (≤ 10)", "search page p50 ms, 10x (≤ 5)"]
    return (_table(head, rows) + f"\n\nBold: met; ✗: not met. Medians of {res.get('rounds')} fresh-process "
            f"reading(s) per app, wall clock. From {_provenance(doc)}.")


def block_targets_quiet(_run: Doc | None) -> str:
    doc = _load(HERE / QUIET_TARGETS_FILE)
    if doc is None:
        return f"_benchmarks/{QUIET_TARGETS_FILE} is missing._"
    return block_targets({"results": {"targets": doc}})


def block_summary(run: Doc | None) -> str:
    """Per figure with a target: on how many subjects this run meets it, and the misses."""
    rows = target_rows(run) if run else []
    if not rows:
        return "_No run yet: `python benchmarks/run_report.py`._"
    by: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        key = r["figure"] if r["subject"] != "fastest app" and "Chromium" not in r["subject"] \
            else f"{r['subject']}: {r['figure']}"
        by.setdefault(key, []).append(r)
    out = []
    for fig, rs in by.items():
        sign = "≤" if rs[0]["kind"] == "<=" else "≥"
        missed = [r for r in rs if not r["met"]]
        status = "**met**" if not missed else ("NOT met" if len(missed) == len(rs) else
                                                f"met on {len(rs) - len(missed)} of {len(rs)}")
        miss = ", ".join(f"{r['subject']} {_num(r['value'])}{r['unit']}" for r in missed)
        out.append([fig, f"{sign} {_num(rs[0]['limit'])}{rs[0]['unit']}", status, miss or "-"])
    red = _sub(run, "redteam")
    if red is not None:
        res = red["results"].values()
        for label, key in (("red team (CI-sized): attacks paid", "paid"),
                           ("red team (CI-sized): correct work unpaid", "false_negatives")):
            bad = [f"{app} {r[key]}" for app, r in red["results"].items() if r[key]]
            out.append([f"{label}, of {sum(r['attacks'] for r in res):,}", "0", "NOT met" if bad else "**met**",
                        ", ".join(bad) or "-"])
    return _table(["figure", "target", "this run", "misses"], out)


def block_sim2live(_run: Doc | None) -> str:
    import subprocess

    rows = []
    for rep in sorted((HERE / SIM2LIVE_DIR).glob("*/report.json")):
        d = json.loads(rep.read_text())
        t = d.get("total", {})
        when = subprocess.run(["git", "-C", str(HERE), "log", "-1", "--format=%cs %h", "--", str(rep)],
                              capture_output=True, text=True).stdout.strip() or "?"
        rows.append([d.get("pair"), d.get("agent"), t.get("n"), f"{t.get('sim_success', 0):.2f}",
                     f"{t.get('live_success', 0):.2f}", f"{t.get('retained_success', 0):.2f}",
                     f"`benchmarks/{SIM2LIVE_DIR}/{rep.parent.name}/` ({when})"])
    if not rows:
        return "_No sim2live runs in benchmarks/sim2live/._"
    return _table(["pair", "agent", "episodes", "sim success", "live success", "retained", "run (committed)"], rows)


def block_reference(run: Doc | None) -> str:
    doc = _sub(run, "browsergym")
    if doc is None:
        return _missing(run, "browsergym")
    r = doc["results"]
    ref = r.get("headline_reference")
    if not ref:
        return "_The browser reference did not run: " + "; ".join(
            str(v) for k, v in r.items() if isinstance(v, str) and "could not" in v) + "_"
    sim, other = r["simweb_in_process"], r[ref]
    ratios = other.get("ratios_of_medians_vs_simweb", {})
    rows = []
    for k in ("click", "noop()", "reset"):
        if k in sim and k in other:
            ratio = ratios.get(k, other[k]["median"] / max(sim[k]["median"], 1e-9))
            tgt = "≥ 1000x" if k != "reset" else ""
            met = "" if k == "reset" else ("**met**" if ratio >= 1000 else "NOT met")
            rows.append([k, f"{sim[k]['median']:.3f}", f"{other[k]['median']:.1f}", f"{ratio:,.0f}x", tgt, met])
    return (_table(["operation", "simweb in-process, median ms", f"{ref}, median ms", "ratio", "target", ""], rows)
            + f"\n\nSame process, interleaved rounds. From {_provenance(doc)}.")


def block_redteam(run: Doc | None) -> str:
    doc = _sub(run, "redteam")
    if doc is None:
        return _missing(run, "redteam")
    rows = [[app, r["templates"], r["seeds"], f"{r['attacks']:,}", r["paid"], r["false_negatives"],
             f"{r['seconds']:.0f}"] for app, r in doc["results"].items()]
    total = sum(r["attacks"] for r in doc["results"].values())
    paid = sum(r["paid"] for r in doc["results"].values())
    unpaid = sum(r["false_negatives"] for r in doc["results"].values())
    return (_table(["app", "templates", "instances each", "attacks", "paid (target 0)", "correct work unpaid "
                    "(target 0)", "seconds"], rows)
            + f"\n\nIn all: {total:,} attacks, **{paid} paid**, **{unpaid} correct solutions unpaid**. "
              f"From {_provenance(doc)}.")


def block_pool(run: Doc | None) -> str:
    doc = _sub(run, "pool_scale")
    if doc is None:
        return _missing(run, "pool_scale")
    return _pool_table(doc)


def _eff(r: dict, backend: str) -> str:
    """An efficiency with its bootstrap interval when the run has one (older runs: the
    median alone)."""
    e = r.get(f"efficiency_{backend}_2")
    if e is None:
        return "-"
    iv = r.get(f"efficiency_{backend}_2_interval")
    return f"{e:.2f} [{iv['bootstrap_95'][0]:.2f}-{iv['bootstrap_95'][1]:.2f}]" if iv else f"{e:.2f}"


def _pool_table(doc: Doc) -> str:
    res = doc["results"]
    rows = []
    for app, r in res["throughput"].items():
        t = r["trajectories_per_hour"]
        g = res.get("group", {}).get(app, {})
        ray2 = t.get("ray x2")
        rows.append([app, f"{t['single loop']:,.0f}", f"{t['local x2']:,.0f}", _eff(r, "local"),
                     f"{ray2:,.0f}" if ray2 else "-", _eff(r, "ray"),
                     "yes" if all(r["byte_identical"].values()) else "NO",
                     f"{g.get('ratio', float('nan')):.1f}x"])
    m = res.get("memory", {})
    mem = f" Memory: {m['n']:,} {doc.get('mem_app', 'forum')} envs in one process, " \
          f"{m['per_env_bytes'] / 1024:.1f} KB per env (target: 10,000 in 3 GiB)." if "per_env_bytes" in m else ""
    mc = res.get("machine")
    load = (f" Other users' load during the timed passes: {mc['other_load_cores_in_passes']:.2f} cores "
            f"(load average {mc['loadavg_start'][0]:.2f} at the start, {mc['loadavg_end'][0]:.2f} at the end)."
            if mc else "")
    return (_table(["app", "trajectories/h, one loop", "trajectories/h, 2 local workers",
                    "efficiency at 2, local (≥ 0.9) [95%]", "trajectories/h, 2 Ray actors",
                    "efficiency at 2, Ray (≥ 0.9) [95%]", "same bytes",
                    "group of 16 from forks vs cold resets (≥ 10x)"],
                   rows) + f"\n\n{mem}{load} From {_provenance(doc)}.")


def block_pool_intervals(_run: Doc | None) -> str:
    """The pools' efficiency at 2 workers with its interval, beside the CPU view: what the
    workers' and the harness's CPU allow on 2 otherwise idle cores, the harness's CPU per
    item, and the other users' load during the passes."""
    doc = _load(HERE / POOL_INTERVALS_FILE)
    if not doc:
        return f"_benchmarks/{POOL_INTERVALS_FILE} is missing._"
    res = doc["results"]
    rows = []
    for app, r in res["throughput"].items():
        h = r["handoff"]
        cells = [app]
        for b in ("local", "ray"):
            if f"{b} x2" not in h:
                cells += ["-"] * 3
                continue
            iv = r[f"efficiency_{b}_2_interval"]
            c = r.get(f"cpu_efficiency_{b}_2")
            cells += [f"{iv['median']:.2f} [{iv['bootstrap_95'][0]:.2f}-{iv['bootstrap_95'][1]:.2f}]",
                      f"{c['value']:.2f}" if c else "-",
                      f"{h[f'{b} x2']['harness_cpu_us_per_item']:.0f} / {h[f'{b} x2']['worker_cpu_us_per_item']:,.0f}"]
        cells.append(f"{(h['local x2']['share_of_cores']['other_load']) * 2:.2f}" if "local x2" in h else "-")
        cells.append(f"{(h['ray x2']['share_of_cores']['other_load']) * 2:.2f}" if "ray x2" in h else "-")
        cells.append("yes" if all(r["byte_identical"].values()) else "NO")
        rows.append(cells)
    mc = res.get("machine", {})
    note = (f" The machine: load average {mc['loadavg_start'][0]:.2f} at the start, {mc['loadavg_end'][0]:.2f} at "
            f"the end; other users' load {mc['other_load_cores_in_passes']:.2f} cores on average during the timed "
            "passes." if mc else "")
    return (_table(["app", "local: efficiency at 2 [95%]", "local: by CPU", "local x2: harness / worker CPU per item "
                    "(us)", "Ray: efficiency at 2 [95%]", "Ray: by CPU", "Ray x2: harness / worker CPU per item (us)",
                    "other load, local x2 passes (cores)", "other load, Ray x2 passes (cores)", "same bytes"], rows)
            + f"\n\n{note} From {_provenance(doc)}.")


def block_pool_idle(_run: Doc | None) -> str:
    doc = _load(HERE / POOL_FILE)
    return _pool_table(doc) if doc else f"_benchmarks/{POOL_FILE} is missing._"


def block_viewer(run: Doc | None) -> str:
    doc = _sub(run, "viewer")
    if doc is None:
        return _missing(run, "viewer")
    r = doc["results"]
    rows = []
    for shape in ("short episodes", "long episodes"):
        if shape in r:
            s = r[shape]
            rows.append([f"{shape} ({s['files']:,} files, {s['megabytes']} MB)",
                         *(f"{s[k]['median']:.3f}" for k in ("open (index)", "open + list page",
                                                               "open + longest episode's page"))])
    return (_table([f"{r.get('steps', 0):,} steps as", "open s", "open + list page s", "open + longest episode s"],
                   rows) + f"\n\nTarget: under a few seconds. From {_provenance(doc)}.")


def block_parity(_run: Doc | None) -> str:
    doc = _load(HERE / PARITY_FILE)
    if doc is None:
        return f"_benchmarks/{PARITY_FILE} is missing._"
    rows = []
    for app, r in sorted(doc["results"].items()):
        if not isinstance(r, dict) or "walks" not in r:
            continue
        declared = sum(c["count"] for k, c in r["classes"].items() if k.startswith("declared"))
        rows.append([app, f"{r['parity']:.1%} ({r['walks_agreeing']}/{r['walks']})",
                     f"{r['steps_agreeing']}/{r['steps_run']}",
                     f"{declared} of {r['walks'] - r['walks_agreeing']}", f"{r['seconds']:.0f}"])
    return (_table(["app", "walks agreeing (target 100%)", "steps agreeing", "divergences of a declared class",
                    "seconds"], rows) + f"\n\nFrom {_provenance(doc)} (`benchmarks/{PARITY_FILE}`).")


BLOCKS: dict[str, Callable[[Doc | None], str]] = {
    "run": block_run, "summary": block_summary, "targets": block_targets, "targets_quiet": block_targets_quiet,
    "sim2live": block_sim2live, "reference": block_reference, "redteam": block_redteam,
    "pool": block_pool, "pool_idle": block_pool_idle, "pool_intervals": block_pool_intervals, "viewer": block_viewer, "parity": block_parity,
}


# ----------------------------------------------------------------------------- plots

def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Any, path: Path) -> None:
    """A small PNG for the repository: 64 colours are plenty for bars and text."""
    import io

    from PIL import Image

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80, metadata={"Software": None})
    Image.open(buf).convert("RGB").quantize(colors=64).save(path, optimize=True)
    print(f"report: wrote {path}")


def draw(run: Doc | None, out: Path) -> None:
    plt = _plt()
    out.mkdir(parents=True, exist_ok=True)
    rows = target_rows(run) if run else []
    if rows:
        when = run["machine"]["date"] if run else ""
        _save(ratio_figure(plt, rows, f"one run, {when}, loaded 2-core machine"), out / "targets.png")
    parity = _load(HERE / PARITY_FILE)
    if parity:
        apps = sorted(a for a, r in parity["results"].items() if isinstance(r, dict) and "walks" in r)
        fig, ax = plt.subplots(figsize=(6.0, 2.6))
        agree = [parity["results"][a]["walks_agreeing"] / parity["results"][a]["walks"] for a in apps]
        ax.barh(apps, agree, color="#1f5fa8")
        for i, v in enumerate(agree):
            ax.text(v - 0.002, i, f"{v:.1%}", va="center", ha="right", color="white", fontsize=7)
        ax.set_xlim(0.9, 1.0)
        ax.set_xlabel("share of 200 random walks of 25 steps agreeing with Chromium at every step", fontsize=7)
        ax.set_title(f"in-process vs Chromium ({parity['machine']['date']})", fontsize=9)
        fig.tight_layout()
        _save(fig, out / "walk_parity.png")
    pool = _load(HERE / POOL_FILE)
    if pool:
        thr = pool["results"]["throughput"]
        apps = sorted(thr)
        fig, ax = plt.subplots(figsize=(6.0, 2.8))
        for off, key, colour in ((-0.2, "single loop", "#9bb7d4"), (0.2, "local x2", "#1f5fa8")):
            ax.bar([i + off for i in range(len(apps))], [thr[a]["trajectories_per_hour"][key] / 1e6 for a in apps],
                   width=0.4, label=key, color=colour)
        ax.axhline(1.0, color="#b03030", linewidth=0.8, label="target, fastest app")
        ax.set_xticks(range(len(apps)))
        ax.set_xticklabels(apps, fontsize=8)
        ax.set_ylabel("M oracle trajectories / hour", fontsize=8)
        ax.set_title(f"rollouts on 2 cores, idle machine ({pool['machine']['date']})", fontsize=9)
        ax.legend(fontsize=7)
        fig.tight_layout()
        _save(fig, out / "pool_scale.png")


# ----------------------------------------------------------------------------- main

def fill(text: str, run: Doc | None) -> str:
    """``text`` with every ``<!-- report:NAME -->...<!-- /report:NAME -->`` block regenerated."""
    def one(m: re.Match[str]) -> str:
        name = m.group(1)
        make = BLOCKS.get(name)
        body = make(run) if make else f"_unknown report block {name!r}_"
        return f"<!-- report:{name} -->\n{body}\n<!-- /report:{name} -->"

    return re.sub(r"<!-- report:(\w+) -->.*?<!-- /report:\1 -->", one, text, flags=re.S)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--results", type=Path, default=HERE / "results_report.json")
    p.add_argument("--write", type=Path, default=None, help="fill the report blocks of this Markdown file")
    p.add_argument("--plots", type=Path, default=None, help="draw the PNGs into this folder")
    args = p.parse_args(argv)
    run = _load(args.results)
    if run is None and args.results.exists():
        print(f"report: {args.results} is not a benchmark results file", file=sys.stderr)
        return 2
    if args.write:
        try:
            text = args.write.read_text(encoding="utf-8")
        except OSError as exc:
            print(f"report: cannot read {args.write}: {exc.strerror}", file=sys.stderr)
            return 2
        args.write.write_text(fill(text, run), encoding="utf-8")
        print(f"report: filled {args.write}")
    else:
        for name, make in BLOCKS.items():
            print(f"## {name}\n\n{make(run)}\n")
    if args.plots:
        draw(run, args.plots)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
