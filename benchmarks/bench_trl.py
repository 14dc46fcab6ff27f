"""TRL's GRPOTrainer on simweb, in-process and through `simweb openenv` (examples/trl_grpo.py).

    pip install -e '.[trl]'
    nice -n 10 python benchmarks/bench_trl.py [--steps 3] [--warmup-steps 150] [--out benchmarks/results_trl.json]

Runs the example twice with the same arguments, once with the envs in-process and once
through a `simweb openenv` server the example starts, and writes both summaries (wall
times of the model build, the warm start and the GRPO steps; per step the mean reward, its
std within the group, tool calls and failed calls) with the command and the machine. torch
from the registry is its CUDA build (5.3 GB installed), so CI does not run this: CI tests the
environment contract without torch (tests/test_trl_env.py). A run reports; it never fails on
a slow machine.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def run(mode: str, args: argparse.Namespace, out: Path) -> dict:
    cmd = [sys.executable, str(REPO / "examples" / "trl_grpo.py"), "--out", str(out / mode), "--steps", str(args.steps),
           "--warmup-steps", str(args.warmup_steps), "--seeds", str(args.seeds), "--tasks", args.tasks,
           "--max-axtree-chars", str(args.max_axtree_chars), "--group", str(args.group)]
    if mode == "openenv":
        cmd += ["--openenv", "auto"]
    t = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.strip().splitlines()[-5:])
        return {"mode": mode, "error": tail, "seconds_wall": round(time.monotonic() - t, 1)}
    summary = json.loads((out / mode / "summary.json").read_text())
    summary["seconds_wall"] = round(time.monotonic() - t, 1)
    summary["command"] = " ".join(["python", *[str(Path(c).relative_to(REPO)) if c.startswith(str(REPO)) else c
                                               for c in cmd[1:]]])
    return summary


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--warmup-steps", type=int, default=150)
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--group", type=int, default=4)
    ap.add_argument("--tasks", default="forum/upvote_post")
    ap.add_argument("--max-axtree-chars", type=int, default=800)
    ap.add_argument("--modes", default="in-process,openenv")
    ap.add_argument("--work", default="/tmp/simweb-bench-trl")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    import torch
    import transformers
    import trl

    results = {"machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "torch": torch.__version__,
                           "transformers": transformers.__version__, "trl": trl.__version__},
               "runs": [run(mode, args, Path(args.work)) for mode in args.modes.split(",")]}
    text = json.dumps(results, indent=1)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
