"""Benchmark results against their targets: the rows, and the ratio plot.

``benchmarks/`` scripts write one JSON document each (``{"benchmark": NAME, "command",
"machine", "results"}``; ``benchmarks/run_report.py`` nests several under ``results``).
:func:`target_rows` reads the figures that have a target out of such a document, one row
per (subject, figure): the measured value, the limit, whether it must stay under it
(``<=``) or reach it (``>=``), and whether it is met. :func:`ratio_figure` draws them all
on one axis: measured / target for a ceiling, target / measured for a floor, so that left
of 1 is met and the distance says by how much (log scale). ``simweb report`` draws it for
any results file it is given; ``benchmarks/report.py`` draws it for BENCHMARKS.md.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["is_benchmark_doc", "load_benchmark", "ratio_figure", "target_rows"]

#: bench_targets.py's figures: label -> unit (the limits are in the document)
_TARGET_UNITS = {"step ms, default": " ms", "step ms, 10x": " ms", "cold reset ms, default": " ms",
                 "fork us, default": " us", "fork us, 10x": " us", "search p50 ms, 10x": " ms"}


def is_benchmark_doc(doc: Any) -> bool:
    """Whether ``doc`` is a results document written by a ``benchmarks/`` script."""
    return isinstance(doc, dict) and isinstance(doc.get("benchmark"), str) and isinstance(doc.get("results"), dict)


def load_benchmark(path: str | Path) -> dict[str, Any] | None:
    """The results document at ``path``, or None when the file is not one (or unreadable)."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if is_benchmark_doc(doc) else None


def _row(subject: str, figure: str, value: Any, limit: float, kind: str, unit: str = "") -> dict[str, Any] | None:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return None
    v = float(value)
    met = v <= limit if kind == "<=" else v >= limit
    return {"subject": subject, "figure": figure, "value": v, "limit": float(limit), "kind": kind, "unit": unit,
            "met": bool(met)}


def target_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Every figure of ``doc`` that has a target (see the module docstring), in a stable order."""
    name, res = doc.get("benchmark"), doc.get("results") or {}
    rows: list[dict[str, Any] | None] = []
    if name == "report":    # run_report.py: one document per benchmark
        out: list[dict[str, Any]] = []
        for sub in res.values():
            if is_benchmark_doc(sub):
                out.extend(target_rows(sub))
        return out
    if name == "targets":
        for app, per in res.items():
            if not isinstance(per, dict):
                continue
            for label, unit in _TARGET_UNITS.items():
                f = per.get(label)
                if isinstance(f, dict):
                    rows.append(_row(app, label.replace(" ms", "").replace(" us", ""), f.get("median"),
                                     f.get("limit", 1.0), "<=", unit))
    elif name == "browsergym":
        ref = res.get("headline_reference")
        ratios = (res.get(ref) or {}).get("ratios_of_medians_vs_simweb", {}) if ref else {}
        short = "BrowserGym" if ref and "BrowserGym" in ref else "Playwright"
        for k in ("click", "noop()"):
            rows.append(_row(f"{short} + Chromium", f"{k} step, x slower than simweb", ratios.get(k), 1000.0, ">=",
                             "x"))
    elif name == "pool_scale":
        thr = res.get("throughput") or {}
        for app, r in thr.items():
            rows.append(_row(app, "efficiency at 2 local workers", r.get("efficiency_local_2"), 0.9, ">="))
        best = max((r.get("trajectories_per_hour", {}).get("local x2", 0.0) for r in thr.values()), default=None)
        if thr:
            rows.append(_row("fastest app", "trajectories/hour, 2 local workers", best, 1_000_000.0, ">=", "/h"))
        for app, g in (res.get("group") or {}).items():
            rows.append(_row(app, "group of 16 from forks vs cold resets", g.get("ratio"), 10.0, ">=", "x"))
    return [r for r in rows if r is not None]


def _num(x: float) -> str:
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.3g}"


def _distance(r: dict[str, Any]) -> float:
    """How far from the target: < 1 is met (measured/limit, or limit/measured for a floor)."""
    v, lim = max(r["value"], 1e-9), max(r["limit"], 1e-9)
    return v / lim if r["kind"] == "<=" else lim / v


def ratio_figure(plt: Any, rows: list[dict[str, Any]], title: str = "benchmarks against their targets") -> Any:
    """One horizontal bar per row: its distance from the target on a log axis, 1 = the target."""
    rows = list(rows)
    fig, ax = plt.subplots(figsize=(8.5, max(2.0, 0.2 * len(rows) + 1.2)))
    ys = list(range(len(rows)))[::-1]
    ds = [_distance(r) for r in rows]
    ax.barh(ys, [d - 1 for d in ds], left=1, height=0.7,
            color=["#4c9a2a" if r["met"] else "#b03030" for r in rows])
    for y, r, d in zip(ys, rows, ds):
        sign = "≤" if r["kind"] == "<=" else "≥"
        ax.text(max(d, 1.0) * 1.08, y, f"{_num(r['value'])}{r['unit']} ({sign} {_num(r['limit'])})", va="center",
                fontsize=6)
    ax.axvline(1.0, color="#333333", linewidth=0.8)
    ax.set_xscale("log")
    lo, hi = min([*ds, 0.5]), max([*ds, 2.0])
    ax.set_xlim(lo / 1.5, hi * 4)
    ticks = [t for t in (0.01, 0.03, 0.1, 0.3, 1, 3, 10, 30, 100) if lo / 1.5 <= t <= hi * 4]
    ax.set_xticks(ticks)
    ax.set_xticklabels([f"{t:g}" for t in ticks], fontsize=7)
    ax.xaxis.set_minor_formatter(plt.NullFormatter())
    ax.set_yticks(ys)
    ax.set_yticklabels([f"{r['subject']}: {r['figure']}" for r in rows], fontsize=6)
    ax.set_xlabel("measured / target (for 'at least' targets: target / measured); left of 1 = met", fontsize=7)
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    return fig
