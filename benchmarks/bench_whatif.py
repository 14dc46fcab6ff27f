"""Evidence for proposed engine changes: A/B in one process, the engine files untouched.

Each experiment applies a candidate change to the running process only (a patched method
on an object, never an edit of simweb's files), checks that the observable output is
byte-identical to the stock engine's, and times stock (A) against patched (B) in
interleaved blocks so that machine load hits both alike.

  jinja_getattr   Jinja2's ``Environment.getattr`` tries ``getattr(obj, name)`` first and
                  only then ``obj[name]``; every ``{{ p.name }}`` on a dict therefore
                  raises and catches an AttributeError. Candidate: for plain dicts, look the
                  key up first unless the name is a dict method (same semantics, exactly).
                  Measured on the oracle-plan steps of every task and on search pages.
  restore_check   ``SimEnv.restore`` validates the whole state with jsonschema every time.
                  Candidate: remember the canonical hashes of states already validated
                  (an LRU of sha256 digests) and skip re-validating those.
  facets_share    (no change applied) the share of a search page step spent in
                  ``world.facets`` and ``world.search`` on the 10K and 1M worlds.
  cold_reset      The first reset of a (task, seed) validates the start state it built
                  with jsonschema (``App.check_state`` in ``episode_start``) and renders
                  the start page. Candidates: skip the schema validation of states the
                  engine itself built (keep it in tests and for states loaded from
                  outside), the dict-first getattr above, and both.
  facets_cap      On the 1M world, ``ShopWorld.facets`` for a text query reads up to
                  COUNT_CAP + 1 = 10,001 matches (FTS5 scan + join) and counts them.
                  Candidate: count over the 2,000 most popular matches instead (the
                  result is then ``approximate`` for more queries: a product decision).
                  Timed on facets alone and on the full search-page step.

    python benchmarks/bench_whatif.py [--quick] [--no-1m] [--out FILE]
"""
from __future__ import annotations

import hashlib
import sys
import types
from collections import OrderedDict
from functools import partial

from common import now_ns, parser, percentile, print_table, settle, summarize, time_each, try_reset, write_json

_DICT_ATTRS = frozenset(dir(dict))


def dict_first_getattr(self, obj, attribute):
    """Jinja2 Environment.getattr with a fast path for plain dicts (same results)."""
    if type(obj) is dict and attribute not in _DICT_ATTRS:
        try:
            return obj[attribute]
        except (KeyError, TypeError):
            return self.undefined(obj=obj, name=attribute)
    return type(self).getattr(self, obj, attribute)


def clear_engine_caches() -> None:
    """Empty the engine's memo caches of derived data (e.g. parsed pages by HTML) so that
    side B never profits from pages side A already parsed (the HTML is identical)."""
    import simweb.browsing

    for mod in (simweb.browsing,):
        for obj in vars(mod).values():
            if callable(getattr(obj, "cache_clear", None)):
                obj.cache_clear()


def oracle_steps(env, tasks, seeds):
    """Time every oracle step; return (durations of request steps, of UI-only steps,
    digest of all observations)."""
    req: list[float] = []
    ui: list[float] = []
    h = hashlib.sha256()
    for seed in seeds:
        for tid in tasks:
            if not try_reset(env, seed, tid):
                continue
            for a in env.oracle_plan():
                r0 = env.state["meta"]["requests"]
                t0 = now_ns()
                obs, *_ = env.step(a)
                dt = (now_ns() - t0) * 1e-9
                (req if env.state["meta"]["requests"] != r0 else ui).append(dt)
                h.update(obs["html"].encode())
                h.update(obs["axtree"].encode())
    return req, ui, h.hexdigest()


def exp_jinja_getattr(quick: bool) -> dict:
    import simweb

    env = simweb.make("shopping", seed=0)
    jinja = env.app.jinja
    tasks = list(env.app.tasks)
    seeds = list(range(2000, 2002 if quick else 2010))
    search_urls = ["/search?q=cotton", "/search?q=steel&sort=price_asc", "/search?category=3",
                   "/search?q=wool&page=3", "/c/fiction", "/search?q=lamp&rating=4", "/search?sort=newest",
                   "/search?q=organic&stock=1"]

    def patch(on: bool) -> None:
        if on:
            jinja.getattr = types.MethodType(dict_first_getattr, jinja)
        elif "getattr" in jinja.__dict__:
            del jinja.getattr

    def pages() -> tuple[list[float], str]:
        env.reset(seed=0)
        out, h = [], hashlib.sha256()
        for u in search_urls:
            for _ in range(3):
                t0 = now_ns()
                obs, *_ = env.step(f"goto({u!r})")
                out.append((now_ns() - t0) * 1e-9)
            h.update(obs["html"].encode())
        return out, h.hexdigest()

    oracle_steps(env, tasks, seeds)      # warm episode starts and caches
    samples: dict[str, dict[str, list[float]]] = {k: {"A": [], "B": []} for k in ("request", "ui", "pages")}
    digests: dict[str, set[tuple[str, str]]] = {"A": set(), "B": set()}
    for _block in range(2 if quick else 4):
        for side in ("A", "B"):
            patch(side == "B")
            clear_engine_caches()
            settle()
            req, ui, d1 = oracle_steps(env, tasks, seeds)
            p, d2 = pages()
            samples["request"][side].extend(req)
            samples["ui"][side].extend(ui)
            samples["pages"][side].extend(p)
            digests[side].add((d1, d2))
    patch(False)
    same = digests["A"] == digests["B"] and len(digests["A"]) == 1
    # Render alone (App.render of fixed states), A and B alternating call by call.
    render_urls = ["/", "/cart", "/p/5", "/p/77", "/c/fiction", *search_urls]
    states = []
    for u in render_urls:
        env.reset(seed=0)
        env.step(f"goto({u!r})")
        states.append(env.snapshot())
    ra: list[float] = []
    rb: list[float] = []
    for _ in range(10 if quick else 60):
        for st in states:
            for side, acc in (("A", ra), ("B", rb)):
                patch(side == "B")
                t0 = now_ns()
                env.app.render(st)
                acc.append((now_ns() - t0) * 1e-9)
    patch(False)
    out: dict = {"identical_output": same}
    RA, RB = summarize(ra, "ms"), summarize(rb, "ms")
    out["render only (alternating calls)"] = {"stock": RA, "patched": RB,
                                              "median_gain_pct": round(100 * (1 - RB["median"] / RA["median"]), 1),
                                              "mean_gain_pct": round(100 * (1 - RB["mean"] / RA["mean"]), 1)}
    for key, label in (("request", "oracle request steps"), ("ui", "oracle ui-only steps"), ("pages", "search pages")):
        A, B = summarize(samples[key]["A"], "ms"), summarize(samples[key]["B"], "ms")
        out[label] = {"stock": A, "patched": B, "median_gain_pct": round(100 * (1 - B["median"] / A["median"]), 1),
                      "mean_gain_pct": round(100 * (1 - B["mean"] / A["mean"]), 1)}
    return out


def exp_restore(quick: bool) -> dict:
    import simweb
    from simweb.core.state import canonical

    env = simweb.make("shopping", seed=0)
    env.reset(seed=7, options={"task": "shopping/buy_product"})
    plan = env.oracle_plan()
    for a in plan[: len(plan) // 2]:
        env.step(a)
    state = env.snapshot()
    validator = env.app.validator
    stock_check = validator.check
    seen: OrderedDict = OrderedDict()

    def cached_check(st) -> None:
        c = canonical(st)
        digest = hashlib.sha256(c if isinstance(c, bytes) else c.encode()).digest()
        if digest in seen:
            seen.move_to_end(digest)
            return
        stock_check(st)
        seen[digest] = True
        if len(seen) > 4096:
            seen.popitem(last=False)

    n = 300 if quick else 2000
    a, b = [], []
    for _block in range(4):
        settle()
        a.extend(time_each(lambda: env.restore(state), n // 4, warmup=3))
        validator.check = cached_check
        try:
            settle()
            b.extend(time_each(lambda: env.restore(state), n // 4, warmup=3))
        finally:
            del validator.check
    A, B = summarize(a, "us"), summarize(b, "us")
    return {"stock": A, "hash_cached_validation": B, "speedup_median": round(A["median"] / B["median"], 1)}


def exp_facets_share(quick: bool, big: bool) -> dict:
    from bench_search import make_queries, search_kwargs, search_url

    import simweb

    worlds = {"10K": simweb.make("shopping", seed=0)}
    if big:
        worlds["1M"] = simweb.make("shopping", seed=0, size=1_000_000, progress=True)
    queries = [q for q in make_queries(worlds["10K"].app.world, 60 if quick else 200)]
    res = {}
    for name, env in worlds.items():
        env.reset(seed=0)
        w = env.app.world
        step_t, search_t, facet_t = [], [], []
        for d in queries:
            kw = search_kwargs(d)
            action = f"goto({search_url(d)!r})"
            env.step(action)   # first visit outside the timing: here we want the split, not cold effects
            step_t.append(min(time_each(partial(env.step, action), 3)))
            search_t.append(min(time_each(partial(w.search, d["q"], **kw), 3)))
            facet_t.append(min(time_each(partial(w.facets, d["q"], category=d["category"]), 3)))
        tot = sum(step_t)
        res[name] = {"page_step_p50_ms": round(percentile(step_t, 50) * 1e3, 3),
                     "search_p50_ms": round(percentile(search_t, 50) * 1e3, 3),
                     "facets_p50_ms": round(percentile(facet_t, 50) * 1e3, 3),
                     "facets_p95_ms": round(percentile(facet_t, 95) * 1e3, 3),
                     "share_search": round(sum(search_t) / tot, 3), "share_facets": round(sum(facet_t) / tot, 3),
                     "share_rest (render, parse, axtree, verifier)": round(1 - (sum(search_t) + sum(facet_t)) / tot, 3)}
    return res


def exp_cold_reset(quick: bool) -> dict:
    import simweb

    env = simweb.make("shopping", seed=0)
    app = env.app
    jinja = app.jinja
    tasks = list(app.tasks)
    variants = ("stock", "no_validation", "jinja_getattr", "both")

    def apply(v: str) -> None:
        if v in ("no_validation", "both"):
            app.validator.check = lambda state: None
        elif "check" in app.validator.__dict__:
            del app.validator.check
        if v in ("jinja_getattr", "both"):
            jinja.getattr = types.MethodType(dict_first_getattr, jinja)
        elif "getattr" in jinja.__dict__:
            del jinja.getattr

    samples: dict[str, list[float]] = {v: [] for v in variants}
    seed = 20_000
    try:
        for _ in range(3 if quick else 12):
            for tid in tasks:
                for v in variants:       # a fresh seed for every reset: each one is cold
                    seed += 1
                    apply(v)
                    t0 = now_ns()
                    ok = try_reset(env, seed, tid)
                    dt = (now_ns() - t0) * 1e-9
                    if ok:
                        samples[v].append(dt)
    finally:
        apply("stock")
    out = {v: summarize(x, "ms") for v, x in samples.items()}
    for v in variants[1:]:
        out[v]["median_gain_pct"] = round(100 * (1 - out[v]["median"] / out["stock"]["median"]), 1)
    return out


def exp_facets_cap(quick: bool, cap: int = 2000) -> dict:
    from bench_search import make_queries, search_url

    import simweb
    from simweb.apps.shopping import world as W

    env = simweb.make("shopping", seed=0, size=1_000_000, progress=True)
    w = env.app.world
    stock_facets = w.facets

    def capped(query: str = "", category=None):
        old = W.COUNT_CAP
        W.COUNT_CAP = cap          # read by facets() only while this call runs
        try:
            return stock_facets(query, category=category)
        finally:
            W.COUNT_CAP = old

    queries = make_queries(simweb.make("shopping", seed=0).app.world, 60 if quick else 200)
    env.reset(seed=0)
    f: dict[str, list[float]] = {"A": [], "B": []}
    page: dict[str, list[float]] = {"A": [], "B": []}
    approx = {"A": 0, "B": 0}
    for d in queries:
        action = f"goto({search_url(d)!r})"
        for side in ("A", "B"):
            fn = stock_facets if side == "A" else capped
            f[side].append(min(time_each(partial(fn, d["q"], category=d["category"]), 3)))
            approx[side] += bool(fn(d["q"], category=d["category"])["approximate"])
            if side == "B":
                w.facets = capped
            try:
                page[side].append(min(time_each(partial(env.step, action), 2)))
            finally:
                if "facets" in w.__dict__:
                    del w.facets
    return {"cap": cap, "queries": len(queries),
            "facets_p50_ms": {k: round(percentile(v, 50) * 1e3, 3) for k, v in f.items()},
            "facets_p95_ms": {k: round(percentile(v, 95) * 1e3, 3) for k, v in f.items()},
            "page_step_p50_ms": {k: round(percentile(v, 50) * 1e3, 3) for k, v in page.items()},
            "page_step_p95_ms": {k: round(percentile(v, 95) * 1e3, 3) for k, v in page.items()},
            "queries_with_approximate_facets": approx, "A": "stock (10,000)", "B": f"capped ({cap})"}


def main(argv: list[str] | None = None) -> dict:
    p = parser(__doc__.split("\n")[0])
    p.add_argument("--no-1m", action="store_true")
    p.add_argument("--only", default=None,
                   help="comma-separated: jinja_getattr,restore_check,cold_reset,facets_share,facets_cap")
    args = p.parse_args(argv)
    only = set(args.only.split(",")) if args.only else {"jinja_getattr", "restore_check", "cold_reset",
                                                        "facets_share", "facets_cap"}
    if args.no_1m:
        only.discard("facets_cap")
    res: dict = {}
    if "jinja_getattr" in only:
        res["jinja_getattr"] = r = exp_jinja_getattr(args.quick)
        print_table(f"jinja dict-first getattr (output identical: {r['identical_output']})",
                    ["case", "n", "stock median", "patched median", "stock p95", "patched p95", "median gain %"],
                    [[k, r[k]["stock"]["n"], r[k]["stock"]["median"], r[k]["patched"]["median"], r[k]["stock"]["p95"],
                      r[k]["patched"]["p95"], r[k]["median_gain_pct"]]
                     for k in ("render only (alternating calls)", "oracle request steps", "oracle ui-only steps",
                               "search pages")])
    if "restore_check" in only:
        res["restore_check"] = r = exp_restore(args.quick)
        print_table("restore(): jsonschema every time vs validated-hash cache (us)", ["variant", "n", "median", "p95"],
                    [["stock", r["stock"]["n"], r["stock"]["median"], r["stock"]["p95"]],
                     ["hash-cached", r["hash_cached_validation"]["n"], r["hash_cached_validation"]["median"],
                      r["hash_cached_validation"]["p95"]]])
    if "cold_reset" in only:
        res["cold_reset"] = r = exp_cold_reset(args.quick)
        print_table("cold reset (first reset of a new (task, seed)), ms", ["variant", "n", "median", "p95", "median gain %"],
                    [[k, v["n"], v["median"], v["p95"], v.get("median_gain_pct", "-")] for k, v in r.items()])
    if "facets_share" in only:
        res["facets_share"] = r = exp_facets_share(args.quick, not args.no_1m)
        keys = list(next(iter(r.values())))
        print_table("search page step: where the time goes (repeat visits, min of 3)", ["world", *keys],
                    [[w, *[v[k] for k in keys]] for w, v in r.items()])
    if "facets_cap" in only:
        res["facets_cap"] = r = exp_facets_cap(args.quick)
        print_table(f"1M world: facets over the {r['cap']} vs 10,000 most popular text matches (ms, over queries)",
                    ["variant", "facets p50", "facets p95", "page step p50", "page step p95", "approximate"],
                    [[r[k], r["facets_p50_ms"][k], r["facets_p95_ms"][k], r["page_step_p50_ms"][k],
                      r["page_step_p95_ms"][k], r["queries_with_approximate_facets"][k]] for k in ("A", "B")])
    write_json(args.out, "whatif", res, sys.argv if argv is None else ["benchmarks/bench_whatif.py", *argv])
    return res


if __name__ == "__main__":
    main()
