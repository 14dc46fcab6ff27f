"""The observation corpus: a hash of every observation of a fixed set of episodes, per app.

Engine changes meant to be invisible (render, parse, step overhead) are proven so by
hashing the same observations before and after them. The corpus per app, on its default
world:

  * the oracle plan of every task template at 3 seeds (every step's observation);
  * 3 random-agent runs of 45 steps;
  * 30 search pages (``goto`` of search URLs drawn from the world, as bench_apps.py does).

Per step it hashes the URL, the HTML and the AX tree; per distinct page it also hashes the
parsed :class:`~simweb.axtree.Page` (title, every element's fields, the forms and their
controls), which covers what the browser reads besides the AX text.

    python benchmarks/obs_corpus.py --out /tmp/corpus_before.json       # record
    python benchmarks/obs_corpus.py --check /tmp/corpus_before.json     # compare, exit 1 on a difference

With ``--variants N`` it hashes site variants instead (simweb.runtime.variants): per app,
N variants of the catalogue (:func:`variant_sample`: the benchmark's heaviest variant, then
ids spread evenly over the catalogue), every task template's oracle plan at ``--seeds``
seeds on each, every step's URL, HTML and AX tree (and the parsed page of each distinct
HTML), one hash per variant: what a change to the variants' rendering must leave as is.

    python benchmarks/obs_corpus.py --variants 6 --seeds 2 --out /tmp/variants_before.json
    python benchmarks/obs_corpus.py --variants 6 --seeds 2 --check /tmp/variants_before.json
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from common import parser, try_reset

APPS = ("shopping", "forum", "issues", "cms", "booking")


def _page_digest(page: Any) -> str:
    """A hash of what a parsed page exposes to the browser besides its AX text."""
    h = hashlib.sha256(page.title.encode())
    for bid in page.elements:
        el = page.elements[bid]
        h.update(repr(tuple(getattr(el, f.name) for f in dataclasses.fields(el))).encode())
    for f in page.forms:
        h.update(repr((f.index, f.bid, f.action, f.method, [c.bid for c in f.controls],
                       [c.field_name for c in f.controls])).encode())
    return h.hexdigest()[:16]


class _Hasher:
    def __init__(self) -> None:
        self.steps = hashlib.sha256()
        self.pages = hashlib.sha256()
        self.n_obs = 0
        self.seen: set[str] = set()

    def obs(self, env: Any, obs: dict[str, Any]) -> None:
        from simweb.web.axtree import parse_page

        html = obs["html"]
        for part in (obs["url"], html, obs["axtree"], obs["last_action_error"] or ""):
            self.steps.update(part.encode())
            self.steps.update(b"\x00")
        self.n_obs += 1
        key = hashlib.sha256(html.encode()).hexdigest()
        if key not in self.seen:
            self.seen.add(key)
            # A fresh parse (not the browser's cache): the page as parse_page builds it now.
            self.pages.update(_page_digest(parse_page(html)).encode())


def corpus_app(name: str, seeds: int, random_runs: int, random_steps: int, n_search: int) -> dict[str, Any]:
    import simweb
    from simweb.agents import RandomAgent
    from simweb.core.worlddb import Rng

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_apps import SEARCH_URLS

    env = simweb.make(name, seed=0)
    h = _Hasher()
    per: dict[str, str] = {}
    for seed in range(seeds):
        for tid in sorted(env.app.tasks):
            if not try_reset(env, seed, tid):
                continue
            sub = hashlib.sha256()
            for a in env.oracle_plan():
                obs = env.step(a)[0]
                h.obs(env, obs)
                sub.update(obs["html"].encode() + obs["axtree"].encode())
            per[f"{tid}@{seed}"] = sub.hexdigest()[:12]
    budget = env.max_steps_override
    for run in range(random_runs):
        agent = RandomAgent(run)
        obs, _ = env.reset(seed=100 + run)
        agent.reset(env)
        env.max_steps_override = random_steps + 5
        for _ in range(random_steps):
            obs, _, term, trunc, _ = env.step(agent.act(obs))
            h.obs(env, obs)
            if term or trunc:
                break
        env.max_steps_override = budget
    urls = SEARCH_URLS[name](env, Rng.derive("obs-corpus", name), n_search)
    env.reset(seed=0)
    env.max_steps_override = len(urls) + 5
    for u in urls:
        obs = env.step(f"goto({u!r})")[0]
        h.obs(env, obs)
    env.max_steps_override = budget
    return {"observations": h.n_obs, "distinct_pages": len(h.seen), "steps": h.steps.hexdigest(),
            "pages": h.pages.hexdigest(), "episodes": per}


def variant_sample(name: str, n: int) -> list[int]:
    """``n`` variant ids of ``name``: bench_variants.far_variant's (every factor but the
    policies and flows changed), then ids drawn over the whole catalogue by a hash of the
    app's name and a counter (deterministic)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_variants import far_variant

    from simweb.runtime.variants import catalogue

    count = catalogue(name).count
    ids = [far_variant(name)]
    for i in range(1, 10 * n):
        if len(ids) >= n:
            break
        k = 1 + int(hashlib.sha256(f"{name}/{i}".encode()).hexdigest(), 16) % (count - 1)
        if k not in ids:
            ids.append(k)
    return ids


def corpus_variants(name: str, seeds: int, ids: list[int]) -> dict[str, Any]:
    """One hash per variant of every oracle step's URL, HTML and AX tree (and each
    distinct page's parse) at ``seeds`` seeds of every template."""
    import simweb

    out: dict[str, Any] = {}
    for k in ids:
        env = simweb.make(name, seed=0, variant=k)
        h = _Hasher()
        for seed in range(seeds):
            for tid in sorted(env.app.tasks):
                if not try_reset(env, seed, tid):
                    continue
                for a in env.oracle_plan():
                    h.obs(env, env.step(a)[0])
        out[str(k)] = {"observations": h.n_obs, "distinct_pages": len(h.seen), "steps": h.steps.hexdigest(),
                       "pages": h.pages.hexdigest()}
    return out


def main() -> None:
    ap = parser(__doc__.splitlines()[0])
    ap.add_argument("--apps", default=",".join(APPS))
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--check", type=Path, help="compare with a recorded corpus; exit 1 on any difference")
    ap.add_argument("--variants", type=int, default=0,
                    help="hash N site variants per app (oracle steps only) instead of today's site")
    args = ap.parse_args()
    out: dict[str, Any] = {}
    if args.variants:
        for name in args.apps.split(","):
            out[name] = corpus_variants(name, args.seeds, variant_sample(name, args.variants))
            print(f"{name}: variants {', '.join(out[name])}: "
                  f"{sum(v['observations'] for v in out[name].values())} observations", flush=True)
        if args.out:
            args.out.write_text(json.dumps(out, indent=1, sort_keys=True))
        if args.check:
            ref = json.loads(args.check.read_text())
            bad = [f"{name} variant {k}: differs" for name, res in out.items() for k, v in res.items()
                   if ref.get(name, {}).get(k) != v]
            if bad:
                print("\n".join(bad))
                raise SystemExit(1)
            print(f"identical to {args.check}")
        return
    for name in args.apps.split(","):
        out[name] = corpus_app(name, args.seeds, 3, 45, 30)
        print(f"{name}: {out[name]['observations']} observations, {out[name]['distinct_pages']} distinct pages, "
              f"steps {out[name]['steps'][:16]} pages {out[name]['pages'][:16]}", flush=True)
    if args.out:
        args.out.write_text(json.dumps(out, indent=1, sort_keys=True))
    if args.check:
        ref = json.loads(args.check.read_text())
        bad = []
        for name, res in out.items():
            r = ref.get(name)
            if r is None:
                bad.append(f"{name}: not in {args.check}")
                continue
            for k in ("observations", "steps", "pages"):
                if r[k] != res[k]:
                    bad.append(f"{name}: {k} differs")
            diff = sorted(e for e in res["episodes"] if r["episodes"].get(e) != res["episodes"][e])
            if diff:
                bad.append(f"{name}: episodes differ: {', '.join(diff[:8])}")
        if bad:
            print("\n".join(bad))
            raise SystemExit(1)
        print(f"identical to {args.check}")


if __name__ == "__main__":
    main()
