"""Hashes of what a reset produces, to show a reset-path change keeps its output.

For every app, every task template and seeds 0..4 (default world; ``--big`` adds the 10x
world): the reset's observation, info (verdict and task), the start state, the goal, a
fork's state, and every step of the oracle plan at seeds 0 and 1 (observation, reward,
flags, verdict). Also every search page of ``bench_apps.py``'s search URLs.
A reset that raises is recorded by its error's type and message.

    python benchmarks/reset_corpus.py --out /tmp/before.json [--apps shopping,cms] [--big]
    python benchmarks/reset_corpus.py --out /tmp/after.json --compare /tmp/before.json

With ``--compare`` the script prints every key whose hash differs and exits 1 if any does.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
from typing import Any

import orjson

sys.path.insert(0, __import__("os").path.dirname(__file__))
from bench_apps import SEARCH_URLS  # noqa: E402

from simweb.core.worlddb import Rng  # noqa: E402


def _h(value: Any) -> str:
    return hashlib.sha256(orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS,
                                       default=str)).hexdigest()[:16]


def corpus(name: str, size_factor: int) -> dict[str, str]:
    import simweb

    base = simweb.make(name, seed=0)
    env = base if size_factor == 1 else simweb.make(name, seed=0, size=base.app.size * size_factor)
    out: dict[str, str] = {}
    for tid in sorted(env.app.tasks):
        for seed in range(5):
            key = f"{tid}@{seed}"
            try:
                obs, info = env.reset(seed=seed, options={"task": tid})
            except Exception as exc:  # recorded: the same error must come back
                out[key] = f"error {type(exc).__name__}: {exc}"
                continue
            out[key + " obs"] = _h(obs)
            out[key + " info"] = _h(info)
            out[key + " state"] = env.state_hash()
            out[key + " goal"] = _h(obs["goal"])
            out[key + " budget"] = str(env.max_steps)
            out[key + " fork"] = env.fork().state_hash()
            if seed < 2:
                steps = []
                for a in env.oracle_plan():
                    o, r, term, trunc, inf = env.step(a)
                    steps.append(_h([o, r, term, trunc, inf]))
                out[key + " plan"] = _h(steps)
    urls = SEARCH_URLS[name](env, Rng.derive("bench-search", name, "corpus"), 30)
    env.max_steps_override = 10 ** 9
    env.reset(seed=0)
    for i, u in enumerate(urls):
        o, *_ = env.step(f"goto({u!r})")
        out[f"search {i} {u}"] = _h(o)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--apps", default="shopping,forum,issues,cms,booking")
    p.add_argument("--big", action="store_true", help="also the 10x world")
    p.add_argument("--out", required=True)
    p.add_argument("--compare", default=None, help="an earlier --out file to compare with")
    args = p.parse_args(argv)
    result: dict[str, dict[str, str]] = {}
    for name in args.apps.split(","):
        result[f"{name} default"] = corpus(name, 1)
        if args.big:
            result[f"{name} 10x"] = corpus(name, 10)
        print(f"{name}: {sum(len(v) for k, v in result.items() if k.startswith(name))} hashes", flush=True)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1, sort_keys=True)
    if not args.compare:
        return 0
    with open(args.compare) as f:
        ref = json.load(f)
    bad = 0
    for world, hashes in result.items():
        for k, v in hashes.items():
            if ref.get(world, {}).get(k) != v:
                bad += 1
                print(f"DIFFERS {world} {k}: {ref.get(world, {}).get(k)} -> {v}")
        for k in ref.get(world, {}):
            if k not in hashes:
                bad += 1
                print(f"MISSING {world} {k}")
    print(f"{bad} differences over {sum(len(v) for v in result.values())} hashes")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
