"""The learned policy before and after training, on held-out seeds, in the same run.

    python benchmarks/bench_learner.py RUN_DIR [--seeds 1000-1019] [--workers 2] [--variants test:10] [--out results.json]

RUN_DIR is a `simweb train` folder: its trained policy (RUN_DIR/policy.json) and its
untrained one (RUN_DIR/init) are evaluated on the same task instances (every training
template at every seed given; the seeds are evaluation's held-out range, 1000 and up,
which training never draws), each from the task's start with the task's own step
budget, the env's default termination rule; with ``--from-end J``, J actions before the
end of the oracle plan (where the training curriculum starts most groups). Reported: n, success and clean rates with
bootstrap 95% intervals (10,000 resamples of episodes, a fixed generator), per template
and in total, and the wall time of each evaluation as measured (the machine may be
shared). The same numbers `simweb eval APP --agent learned --checkpoint RUN_DIR[/init]
--tasks ... --seeds ...` prints.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def bootstrap(xs: list[float], n: int = 10_000, seed: int = 0) -> tuple[float, float, float]:
    """(mean, 2.5th, 97.5th percentile) of the mean of ``xs`` over ``n`` resamples."""
    a = np.asarray(xs, dtype=np.float64)
    if a.size == 0:
        return 0.0, 0.0, 0.0
    rng = np.random.default_rng(seed)
    means = a[rng.integers(0, a.size, size=(n, a.size))].mean(axis=1)
    return float(a.mean()), float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def from_end(env: Any, policy: Any, specs: list[Any], j: int) -> list[Any]:
    """Episodes started ``j`` actions before the end of the oracle plan (held-out seeds
    still): what the policy does where the training curriculum starts most groups."""
    from simweb.episodes.rollout import run_episode
    from simweb.tools.evaluate import Episode

    out = []
    for spec in specs:
        env.reset(seed=spec.seed, options={"task": spec.task})
        plan = env.oracle_plan()
        for a in plan[:max(0, len(plan) - j)]:
            env.step(a)
        traj = run_episode(env, policy, task=None, seed=spec.seed, reset=False)
        v = traj.final
        out.append(Episode(spec.task, spec.seed, bool(v.get("success")), float(v.get("progress", 0.0)),
                           bool(v.get("clean", True)), len(traj.steps)))
    return out


def _row(eps: list[Any]) -> dict[str, Any]:
    return {"n": len(eps), "success": bootstrap([float(e.success and e.clean) for e in eps]),
            "raw_success": bootstrap([float(e.success) for e in eps]),
            "clean": bootstrap([float(e.clean) for e in eps]),
            "progress": float(np.mean([e.progress for e in eps])) if eps else 0.0,
            "steps": float(np.mean([e.steps for e in eps])) if eps else 0.0}


def evaluate(run: Path, which: str, seeds: list[int], workers: int, j: int = 0,
             variants: list[int] | None = None) -> dict[str, Any]:
    """The policy ``which`` (trained or init) of ``run`` on every (template, seed) of the
    run's templates, on each site variant in ``variants`` (default: today's site, 0)."""
    from simweb.episodes.env import SimEnv
    from simweb.episodes.learner import load_checkpoint
    from simweb.episodes.rollout import make_pool
    from simweb.tools.evaluate import EpisodeSpec, run_eval

    doc = json.loads((run / "policy.json").read_text())
    cfg = doc["train"]["config"]
    policy = load_checkpoint(run if which == "trained" else run / "init", cfg["app"])
    specs = [EpisodeSpec(t, s) for t in cfg["tasks"] for s in seeds]
    t0 = time.perf_counter()
    by_variant: dict[int, list[Any]] = {}
    with make_pool("local", workers) as pool:
        for v in variants or [0]:
            env = SimEnv(cfg["app"], cfg["world_seed"], size=cfg["size"], variant=v)
            if j:
                by_variant[v] = from_end(env, policy, specs, j)
            else:
                by_variant[v] = run_eval(env, specs, "learned", policy=policy, pool=pool if workers > 1 else None)
    wall = time.perf_counter() - t0
    episodes = [e for v in by_variant for e in by_variant[v]]
    rows = {name: _row([e for e in episodes if name == "total" or e.task == name]) for name in [*cfg["tasks"], "total"]}
    out: dict[str, Any] = {"rows": rows, "wall": wall, "episodes": len(episodes)}
    if variants:
        out["variants"] = {str(v): _row(eps) for v, eps in by_variant.items()}
    return out


def main() -> None:
    from simweb.tools.evaluate import parse_seeds

    ap = argparse.ArgumentParser()
    ap.add_argument("run", type=Path)
    ap.add_argument("--seeds", default="1000-1019")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--from-end", type=int, default=0,
                    help="start J actions before the end of the oracle plan (0: the task's start, the default)")
    ap.add_argument("--variants", default=None,
                    help="site variants to evaluate on (N, N-M or a list; docs/variants.md), or 'test:K': the "
                         "first K held-out (test split) variants; default: today's site")
    args = ap.parse_args()
    seeds = parse_seeds(args.seeds)
    if min(seeds) < 1000:
        ap.error("held-out seeds are 1000 and up")
    variants = None
    if args.variants:
        from simweb.runtime.variants import VariantError, parse_ids

        app = json.loads((args.run / "policy.json").read_text())["train"]["config"]["app"]
        try:
            variants = parse_ids(args.variants, app)   # N, N-M, a list, or test:K (the first K held-out ones)
        except (VariantError, ValueError) as exc:
            ap.error(str(exc))
    metrics = [json.loads(line) for line in (args.run / "metrics.jsonl").read_text().splitlines() if line]
    result = {"run": str(args.run), "seeds": args.seeds, "train_iterations": len(metrics), "from_end": args.from_end,
              "train_wall": metrics[-1]["elapsed"] if metrics else 0.0,
              "variants": variants,
              "init": evaluate(args.run, "init", seeds, args.workers, args.from_end, variants),
              "trained": evaluate(args.run, "trained", seeds, args.workers, args.from_end, variants)}
    fmt = lambda r: f"{r[0]:.2f} [{r[1]:.2f}, {r[2]:.2f}]"   # noqa: E731
    lines = [(name, result["init"]["rows"][name], result["trained"]["rows"][name]) for name in result["trained"]["rows"]]
    lines += [(f"variant {v}", result["init"]["variants"][v], result["trained"]["variants"][v])
              for v in result["trained"].get("variants", {})]
    for name, a, b in lines:
        print(f"{name:32} n={b['n']:4}  success {fmt(a['success'])} -> {fmt(b['success'])}   "
              f"clean {fmt(a['clean'])} -> {fmt(b['clean'])}")
    print(f"eval wall: init {result['init']['wall']:.0f} s, trained {result['trained']['wall']:.0f} s; "
          f"training {result['train_wall']:.0f} s over {result['train_iterations']} iterations")
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
