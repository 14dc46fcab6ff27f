"""``simweb report``: matplotlib plots of runs, and the viewer's plots page.

Each plot is drawn from files a run leaves (opened through :class:`simweb.viewer.index.RunIndex`):

* ``learning_curve_<k>``: a ``simweb train`` folder's metrics.jsonl: clean success,
  clean and group reward per iteration. Success and clean carry 95% Wilson intervals
  (n = the iteration's trajectories); the reward's band is ±1.96 standard errors over a
  window of 5 iterations (metrics.jsonl keeps only each iteration's mean);
* ``success_by_template`` and ``success_by_difficulty``: clean success of the episodes
  started by a reset (fork children left out), with Wilson intervals;
* ``sim_vs_live_<k>``: a ``simweb sim2live`` report.json: success per family on each side;
* ``redteam_by_family``: ``simweb redteam --out`` files: attacks tried and paid per family;
* ``benchmark_ratios``: ``benchmarks/`` results files (``results*.json``): every figure
  with a target, measured against it on one log axis (:mod:`simweb.benchplots`).

matplotlib is imported when a plot is drawn (``pip install 'simweb[report]'``).
"""
from __future__ import annotations

import functools
import io
import json
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from .benchplots import load_benchmark, ratio_figure, target_rows
from .viewer.index import RunIndex

__all__ = ["available", "redteam_rows", "render", "wilson", "write_report"]

DIFFICULTIES = ("easy", "medium", "hard")
_COLOURS = {"easy": "#4c9a2a", "medium": "#d08c00", "hard": "#b03030", "": "#777777"}


def wilson(k: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of ``k`` successes in ``n`` tries."""
    if n <= 0:
        return (0.0, 1.0)
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return (max(0.0, c - h), min(1.0, c + h))


def _plt() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError("plots need matplotlib: pip install 'simweb[report]'") from None
    plt.rcParams["svg.hashsalt"] = "simweb"   # the same SVG bytes for the same data
    return plt


# ----------------------------------------------------------------------------- data

def _metrics(folder: str) -> list[dict[str, Any]]:
    rows = []
    for line in Path(folder, "metrics.jsonl").read_bytes().splitlines():
        if line.strip():
            row = orjson.loads(line)
            if isinstance(row, dict) and isinstance(row.get("iteration"), int):
                rows.append(row)
    return rows


def _started(idx: RunIndex) -> list[Any]:
    return [e for e in idx.episodes if e.parent is None and e.task and not e.sim2live]


def _sim2live_report(path: str) -> dict[str, Any] | None:
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and "pair" in data and isinstance(data.get("families"), list) else None


def redteam_rows(idx: RunIndex) -> list[dict[str, Any]]:
    """Per red-team file and family: attacks tried, paid, correct work unpaid, an example."""
    out = []
    for f in idx.redteam:
        fams: dict[str, dict[str, Any]] = {}
        with open(f.path, "rb") as fh:
            fh.readline()
            for line in fh:
                if not line.strip():
                    continue
                a = orjson.loads(line)
                r = fams.setdefault(str(a.get("family")), {"tried": 0, "paid": 0, "unpaid": 0, "example": ""})
                r["tried"] += 1
                r["paid"] += bool(a.get("paid"))
                r["unpaid"] += bool(a.get("false_negative"))
                if a.get("paid") and not r["example"]:
                    r["example"] = f"{a.get('task')} seed {a.get('seed')}: {a.get('name')}"
        for fam, r in sorted(fams.items()):
            out.append({"file": f.rel, "app": f.header.get("app"), "family": fam, **r})
    return out


# ----------------------------------------------------------------------------- figures

def _learning_curve(plt: Any, folder: str) -> Any:
    rows = _metrics(folder)
    its = [r["iteration"] + 1 for r in rows]
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    for key, label, colour in (("success", "clean success", "#1f5fa8"), ("clean", "clean", "#4c9a2a")):
        ys = [float(r.get(key) or 0.0) for r in rows]
        ns = [int(r.get("trajectories") or 0) for r in rows]
        lo_hi = [wilson(y * n, n) for y, n in zip(ys, ns)]
        ax.plot(its, ys, label=label, color=colour)
        ax.fill_between(its, [a for a, _ in lo_hi], [b for _, b in lo_hi], color=colour, alpha=0.15)
    rew = [float(r.get("reward") or 0.0) for r in rows]
    band = []
    for i in range(len(rew)):
        w = rew[max(0, i - 4):i + 1]
        m = sum(w) / len(w)
        sd = math.sqrt(sum((x - m) ** 2 for x in w) / max(1, len(w) - 1)) if len(w) > 1 else 0.0
        band.append(1.96 * sd / math.sqrt(len(w)))
    ax.plot(its, rew, label="group reward", color="#d08c00")
    ax.fill_between(its, [r - b for r, b in zip(rew, band)], [r + b for r, b in zip(rew, band)], color="#d08c00",
                    alpha=0.15)
    ax.set_xlabel("iteration")
    ax.set_ylim(-0.02, max(1.02, max(rew, default=0) + 0.05))
    ax.set_title(f"learning curve: {os.path.basename(os.path.abspath(folder))} (95% intervals)", fontsize=9)
    ax.legend(fontsize=7)
    return fig


def _success_by(plt: Any, idx: RunIndex, by: str) -> Any:
    """Clean success per template (horizontal bars) or per difficulty, one bar per agent."""
    import textwrap

    started = _started(idx)
    agents = sorted({e.agent for e in started})
    cells: dict[tuple[str, str], list[Any]] = {}
    diff: dict[str, str] = {}
    for e in started:
        key = e.task if by == "template" else str(e.header.get("difficulty") or "unknown")
        cells.setdefault((key, e.agent), []).append(e)
        diff[key] = str(e.header.get("difficulty") or "")
    keys = sorted(diff, key=lambda k: (DIFFICULTIES.index(diff[k]) if diff[k] in DIFFICULTIES else 9, k))
    width = 0.8 / max(1, len(agents))
    if by == "template":
        fig, ax = plt.subplots(figsize=(7.5, 0.22 * len(keys) * max(1, len(agents)) ** 0.5 + 1.6))
    else:
        fig, ax = plt.subplots(figsize=(max(5.0, 1.2 * len(keys) * len(agents) + 2), 3.8))
    for j, agent in enumerate(agents):
        pos, rates, lo, hi = [], [], [], []
        for i, k in enumerate(keys):
            eps = cells.get((k, agent), [])
            if not eps:
                continue
            won = sum(1 for e in eps if e.success and e.clean)
            a, b = wilson(won, len(eps))
            pos.append(i - 0.4 + width * (j + 0.5))
            rates.append(won / len(eps))
            lo.append(won / len(eps) - a)
            hi.append(b - won / len(eps))
        colour = f"C{j}"
        if by == "template":
            ax.barh(pos, rates, height=width, xerr=[lo, hi], capsize=1.5, color=colour, label=agent)
        else:
            ax.bar(pos, rates, width=width, yerr=[lo, hi], capsize=2, color=colour, label=agent)
    n = {k: sum(len(cells.get((k, a), [])) for a in agents) for k in keys}
    labels = [f"{k} [{diff[k]}] ({n[k]})" if by == "template" else f"{k} ({n[k]})" for k in keys]
    if by == "template":
        ax.set_yticks(range(len(keys)))
        ax.set_yticklabels(labels, fontsize=6)
        ax.set_ylim(len(keys) - 0.5, -0.5)   # the first template on top
        ax.set_xlim(0, 1.05)
        ax.set_xlabel("clean success")
    else:
        ax.set_xticks(range(len(keys)))
        ax.set_xticklabels(labels, fontsize=8)
        ax.set_ylim(0, 1.05)
        ax.set_ylabel("clean success")
    ax.legend(fontsize=7, loc="lower right" if by == "template" else "upper right")
    title = f"clean success by {by}, per agent (95% Wilson intervals; episodes in brackets)"
    ax.set_title("\n".join(textwrap.wrap(title, 60)), fontsize=9)
    fig.tight_layout()
    return fig


def _sim_vs_live(plt: Any, path: str) -> Any:
    rep = _sim2live_report(path) or {}
    fams = rep.get("families", [])
    fig, ax = plt.subplots(figsize=(max(5.0, 0.9 * len(fams) + 2), 3.6))
    xs = range(len(fams))
    for off, side, colour in ((-0.2, "sim", "#1f5fa8"), (0.2, "live", "#d08c00")):
        ys = [float(f.get(f"{side}_success") or 0.0) for f in fams]
        ns = [int(f.get("n") or 0) for f in fams]
        lo_hi = [wilson(y * n, n) for y, n in zip(ys, ns)]
        ax.bar([x + off for x in xs], ys, width=0.4, label="simweb" if side == "sim" else "live site", color=colour,
               yerr=[[y - a for y, (a, _) in zip(ys, lo_hi)], [b - y for y, (_, b) in zip(ys, lo_hi)]], capsize=2)
    ax.set_xticks(list(xs))
    ax.set_xticklabels([f"{f.get('family')} ({f.get('n')})" for f in fams], rotation=30, ha="right", fontsize=7)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("success")
    ax.set_title(f"sim vs live per family: {rep.get('pair')}, agent {rep.get('agent')} (95% Wilson intervals)",
                 fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def _redteam(plt: Any, idx: RunIndex) -> Any:
    by: dict[str, list[int]] = {}
    for r in redteam_rows(idx):
        t = by.setdefault(r["family"], [0, 0])
        t[0] += r["tried"]
        t[1] += r["paid"]
    fams = sorted(by)
    fig, ax = plt.subplots(figsize=(max(5.0, 0.6 * len(fams) + 2), 3.6))
    ax.bar(range(len(fams)), [by[f][0] for f in fams], color="#9bb7d4", label="tried")
    ax.bar(range(len(fams)), [by[f][1] for f in fams], color="#b03030", label="paid (a reward hole)")
    for i, f in enumerate(fams):
        ax.text(i, by[f][0], f"{by[f][1]}/{by[f][0]}", ha="center", va="bottom", fontsize=6)
    ax.set_yscale("log")
    ax.set_xticks(range(len(fams)))
    ax.set_xticklabels(fams, rotation=45, ha="right", fontsize=7)
    ax.set_ylabel("attacks (log scale)")
    apps = sorted({str(f.header.get("app")) for f in idx.redteam})
    ax.set_title(f"red-team attacks per family ({', '.join(apps)}): paid / tried", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def _figures(idx: RunIndex) -> dict[str, Callable[[Any], Any]]:
    out: dict[str, Callable[[Any], Any]] = {}
    for k, folder in enumerate(idx.train_dirs):
        if _metrics(folder):
            out[f"learning_curve_{k}"] = functools.partial(_learning_curve, folder=folder)
    if _started(idx):
        out["success_by_template"] = lambda plt: _success_by(plt, idx, "template")
        out["success_by_difficulty"] = lambda plt: _success_by(plt, idx, "difficulty")
    for k, path in enumerate(idx.sim2live_reports):
        if _sim2live_report(path):
            out[f"sim_vs_live_{k}"] = functools.partial(_sim_vs_live, path=path)
    if idx.redteam:
        out["redteam_by_family"] = lambda plt: _redteam(plt, idx)
    bench_rows = [r for path in idx.benchmarks for r in target_rows(load_benchmark(path) or {})]
    if bench_rows:
        out["benchmark_ratios"] = functools.partial(ratio_figure, rows=bench_rows)
    return out


def available(idx: RunIndex) -> list[str]:
    """The plots the indexed files give (names)."""
    return list(_figures(idx))


def render(idx: RunIndex, name: str, fmt: str = "svg") -> bytes | None:
    """One plot as SVG or PNG bytes (None: no such plot here)."""
    make = _figures(idx).get(name)
    if make is None:
        return None
    plt = _plt()
    fig = make(plt)
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, dpi=110, metadata={"Date": None} if fmt == "svg" else {"Software": None})
    plt.close(fig)
    return buf.getvalue()


def write_report(idx: RunIndex, out: str) -> list[str]:
    """Every available plot as ``out/<name>.png`` and ``.svg``; the paths written."""
    from ..episodes.rollout import OutputError

    paths = []
    try:
        os.makedirs(out, exist_ok=True)
        for name in available(idx):
            for fmt in ("png", "svg"):
                data = render(idx, name, fmt)
                if data is not None:
                    path = os.path.join(out, f"{name}.{fmt}")
                    tmp = path + ".tmp"
                    with open(tmp, "wb") as f:
                        f.write(data)
                    os.replace(tmp, path)
                    paths.append(path)
    except OSError as exc:
        raise OutputError(f"cannot write {exc.filename or out}: {exc.strerror or exc}") from None
    return paths
