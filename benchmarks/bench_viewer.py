"""How fast `simweb view` opens a large run: 100,000 steps in a directory.

The run is made of real trajectory lines (oracle and random rollouts on forum and
shopping, AX-tree text and verdicts included), copied into files until the directory
holds ``--steps`` steps, in two shapes: many short episodes (``--per-file`` steps each,
2,000 files by default) and a few long ones (10 files of a tenth of the steps each). For
each shape the script times, cold (a new index each time, the files in the page cache):
opening the directory (the index: each file's header and last line), the first list
page, the list sorted by reward, and opening the longest episode's page at a middle step
(its offset index and step lines). It reports medians and p95 over ``--repeats`` runs;
nothing is asserted.

    python benchmarks/bench_viewer.py [--steps 100000] [--per-file 50] [--repeats 5] [--quick] [--out FILE]
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import orjson
from common import parser, print_table, settle, stat_row, summarize, time_each, write_json


def sample_lines() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Headers and step lines of real rollouts."""
    from simweb.agents import make_agent
    from simweb.episodes.env import SimEnv
    from simweb.episodes.rollout import run_episode

    heads, steps = [], []
    for app in ("forum", "shopping"):
        env = SimEnv(app, 0)
        for i, task in enumerate(list(env.app.tasks)[:6]):
            for agent in ("oracle", "random"):
                t = run_episode(env, make_agent(agent, i), task=task, seed=i, max_steps=25)
                heads.append(t.header)
                steps.extend(t.steps)
    return heads, steps


def make_run(folder: Path, n_steps: int, per_file: int, heads: list[dict], steps: list[dict]) -> int:
    """``folder`` filled with files of ``per_file`` steps until ``n_steps``; the file count."""
    folder.mkdir(parents=True, exist_ok=True)
    k = 0
    done = 0
    while done < n_steps:
        n = min(per_file, n_steps - done)
        head = dict(heads[k % len(heads)], seed=k)
        lines = [orjson.dumps(head)]
        for j in range(n):
            s = dict(steps[(k * 7 + j) % len(steps)], step=j + 1)
            lines.append(orjson.dumps(s))
        (folder / f"ep-{k:05d}.jsonl").write_bytes(b"\n".join(lines) + b"\n")
        done += n
        k += 1
    return k


def main(argv: list[str] | None = None) -> None:
    ap = parser(__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=100_000)
    ap.add_argument("--per-file", type=int, default=50)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args(argv)
    if args.quick:
        args.steps, args.repeats = 10_000, 2

    from simweb.tools.viewer.app import create_app
    from simweb.tools.viewer.index import RunIndex

    heads, steps = sample_lines()
    root = Path(tempfile.mkdtemp(prefix="simweb-bench-viewer-"))
    results: dict[str, Any] = {"steps": args.steps, "line_bytes_mean": round(
        sum(len(orjson.dumps(s)) for s in steps) / len(steps))}
    rows = []
    try:
        for shape, per_file in (("short episodes", args.per_file), ("long episodes", max(1, args.steps // 10))):
            folder = root / shape.replace(" ", "-")
            files = make_run(folder, args.steps, per_file, heads, steps)
            size = sum(p.stat().st_size for p in folder.iterdir())
            RunIndex.open([str(folder)])   # warm the page cache: the run was just written, as after a run

            def open_index(folder: Path = folder) -> RunIndex:
                return RunIndex.open([str(folder)])

            def list_page(folder: Path = folder, q: str = "/") -> None:
                client = create_app([str(folder)]).test_client()
                assert client.get(q).status_code == 200

            def episode_page(folder: Path = folder) -> None:
                client = create_app([str(folder)]).test_client()
                idx = client.application.extensions["simweb-viewer"]
                ep = max(idx.episodes, key=lambda e: e.steps)
                assert client.get(f"/episode/{ep.id}?step={ep.steps // 2}").status_code == 200

            out: dict[str, Any] = {"files": files, "megabytes": round(size / 1e6, 1)}
            for name, fn in (("open (index)", open_index), ("open + list page", list_page),
                             ("open + list sorted by reward", lambda: list_page(q="/?sort=-reward")),
                             ("open + longest episode's page", episode_page)):
                settle()
                s = summarize(time_each(fn, args.repeats), "s")
                out[name] = s
                rows.append(stat_row(f"{shape} ({files} files): {name}", s))
            results[shape] = out
            shutil.rmtree(folder)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print_table(f"simweb view over {args.steps:,} steps (cold index each run; pid {os.getpid()})",
                ["what", "n", "median", "p95", "unit"], rows)
    write_json(args.out, "viewer", results, sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    main()
