"""Collect `simweb sim2live --agent learned` runs into results files and table rows.

    python benchmarks/s2l_learned_results.py OUT [OUT...] [--command "..."] [--note "..."]

For each OUT (the --out folder of one `simweb sim2live --pair P --agent learned
--checkpoint DIR` run) it writes benchmarks/results_s2l_learned_<app>_<counterpart>.json
(OUT/retained.json plus the command, the wall time of each half and the per-family
divergence counts of both halves) and prints the docs' table rows (docs/sim2live.md, "The
learned policy's retained gain").
"""
from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _ci(x: list[float] | None) -> str:
    return f"[{x[0]:.2f}, {x[1]:.2f}]" if x else "-"


def _num(x: float | None) -> str:
    return "undefined" if x is None else f"{x:.2f}"


def row(name: str, g: dict) -> str:
    """One table row: n, sim before -> after, live before -> after, gains, retained gain."""
    t = g
    ret = (f"{_num(t['retained_gain'])} {_ci(t.get('retained_gain_ci'))}" if t.get("retained_gain") is not None
           else "undefined (sim gain 0)" if t.get("sim_gain") == 0 else "undefined (sim gain <= 0)")
    return (f"| {name} | {t['n']} | {t['sim_before']:.2f} → {t['sim_after']:.2f} | "
            f"{t['live_before']:.2f} → {t['live_after']:.2f} | {t['sim_gain']:+.2f} {_ci(t.get('sim_gain_ci'))} | "
            f"{t['live_gain']:+.2f} {_ci(t.get('live_gain_ci'))} | {ret} |")


def classes(report: dict) -> dict[str, dict[str, int]]:
    """Per family: how many episodes show each divergence class, and at which step they part."""
    out: dict[str, dict[str, int]] = {}
    for e in report["episodes"]:
        c = out.setdefault(e["family"], Counter())
        for k in {d["class"] for d in e["divergences"]}:
            c[k] += 1
        c["episodes"] += 1
        if e.get("parting") is None:
            c["no parting"] += 1
        elif "class" in e["parting"]:
            c[f"parts by {e['parting']['class']}"] += 1
    return {f: dict(sorted(v.items())) for f, v in out.items()}


def divergence_summary(report: dict) -> str:
    """Episodes showing each divergence class, and the first diverging step (median, range)."""
    import statistics

    eps = report["episodes"]
    n = Counter(k for e in eps for k in {d["class"] for d in e["divergences"]})
    steps = [e["parting"]["step"] for e in eps if e.get("parting")]
    part = (f"first diverging step median {statistics.median(steps):g} (range {min(steps)}-{max(steps)}), "
            f"{len(eps) - len(steps)} never part") if steps else "no episode parts"
    why = Counter(e["parting"].get("class", "unclassified") for e in eps if e.get("parting"))
    part += ("; why they part: " + ", ".join(f"{k} {v}" for k, v in why.most_common())) if why else ""
    return ", ".join(f"{k} {n[k]}/{len(eps)}" for k in ("page", "control", "validation", "flow", "state")) + "; " + part


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outs", nargs="+", type=Path)
    ap.add_argument("--command", default=None, help="the command that produced the run (recorded)")
    ap.add_argument("--note", default=None, help="when, load, anything the figures need (recorded)")
    ap.add_argument("--dest", type=Path, default=HERE)
    ap.add_argument("--suffix", default="", help="appended to the file name (two checkpoints of one pair)")
    a = ap.parse_args()
    for out in a.outs:
        g = json.loads((out / "retained.json").read_text())
        init = json.loads((out / "init" / "report.json").read_text())
        trained = init if g.get("same_policy") else json.loads((out / "trained" / "report.json").read_text())
        doc = {**g, "command": a.command, "note": a.note,
               "divergence_episodes": {"init": classes(init), "trained": classes(trained)},
               "steps": {w: {r["family"]: {"sim": r["sim_steps"], "live": r["live_steps"]} for r in rep["families"]}
                         for w, rep in (("init", init), ("trained", trained))}}
        name = g["pair"].replace(":", "_")
        dest = a.dest / f"results_s2l_learned_{name}{a.suffix}.json"
        dest.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
        print(f"{g['pair']} -> {dest}")
        print(row(f"**{g['pair']}** (total)", g["total"]))
        for fam, r in g["families"].items():
            print(row(f"{g['pair']} {fam}", r))
        for which, rep in (("untrained", init), ("trained", trained))[:1 if g.get("same_policy") else 2]:
            print(f"{g['pair']} {which}: {divergence_summary(rep)}")


if __name__ == "__main__":
    main()
