"""Figure 6: search latency on the 10,000- and 1,000,000-product worlds.

~200 varied queries (common words, rare words, two-word name prefixes, full product names,
no-match words, filter-only browsing, text + filters, every sort, pagination up to the last
pages before the count cap) are generated deterministically from the 10K world (same
generator vocabulary in both worlds) and run three ways, alternating the two worlds query
by query so that machine load hits both alike:

  * ``world.search(...)``: the catalog query alone (SQLite FTS5 + filters + sort + page);
    first run of each query, then the median of repeats (the query itself warm);
  * ``world.facets(...)``: the filter-sidebar counts the search page also computes;
  * a full search-page step, ``env.step("goto('/search?...')")``: resolve, search, facets,
    render the page, parse it, AX tree, verifier: what an agent pays.

p50 / p95 are taken over queries.

    python benchmarks/bench_search.py [--quick] [--no-1m] [--out FILE]
"""
from __future__ import annotations

import random
import re
import sys
from collections import Counter
from collections.abc import Callable
from functools import partial
from typing import Any
from urllib.parse import urlencode

from common import now_ns, parser, percentile, print_table, settle, target, write_json

SORTS = ["price_asc", "price_desc", "rating", "reviews", "newest"]
WORD = re.compile(r"[a-z]{3,}")
STOP = {"the", "and", "for", "with", "from", "this", "that", "your", "our", "are", "its", "into", "all", "you",
        "has", "was", "not", "but", "per", "one"}


def make_queries(world, n: int, seed: int = 0) -> list[dict]:
    """A deterministic, varied query set drawn from ``world``'s products and taxonomy."""
    rnd = random.Random(seed)
    size = world.size
    sample = [world.product(pid) for pid in rnd.sample(range(1, size + 1), min(size, 3000))]
    sample = [p for p in sample if p]
    words: Counter = Counter()
    for p in sample:
        words.update(set(w for w in WORD.findall((p["name"] + " " + p["description"]).lower()) if w not in STOP))
    ranked = [w for w, _ in words.most_common()]
    common = ranked[:60]
    rare = [w for w, c in words.items() if c == 1 and len(w) >= 5]
    rnd.shuffle(rare)
    cats = [c["id"] for c in world._categories]
    leaf_cats = [c["id"] for c in world._categories if c["parent_id"] is not None]
    brands = [b["id"] for b in world._brands]

    def q(kind, text="", **kw):
        d = {"kind": kind, "q": text, "category": None, "brand": None, "min": None, "max": None,
             "rating": None, "stock": False, "sort": "relevance", "page": 1}
        d.update(kw)
        return d

    share = max(1, n // 200)
    out: list[dict] = []
    out += [q("common word", w) for w in common[: 30 * share]]
    out += [q("rare word", w) for w in rare[: 20 * share]]
    out += [q("name prefix (2 words)", " ".join(p["name"].split()[:2])) for p in sample[: 20 * share]]
    out += [q("full product name", p["name"]) for p in sample[100: 100 + 15 * share]]
    out += [q("no match", w) for w in ["zzyzxq", "qwertyuiopz", "flurbnax", "xylophonist", "kwyjibo"][: 5 * share]]
    for _ in range(20 * share):   # filter-only browsing
        f = rnd.choice(["category", "brand", "price", "rating", "stock", "category+price"])
        kw: dict = {}
        if "category" in f:
            kw["category"] = rnd.choice(cats)
        if f == "brand":
            kw["brand"] = [rnd.choice(brands)]
        if "price" in f:
            lo = rnd.choice([0, 1000, 2500, 5000, 10000])
            kw["min"], kw["max"] = lo, lo + rnd.choice([1500, 5000, 20000])
        if f == "rating":
            kw["rating"] = rnd.choice([3, 4, 5])
        if f == "stock":
            kw["stock"] = True
        out.append(q(f"browse by {f}", "", **kw))
    for _ in range(30 * share):   # text + filters
        kw = {}
        if rnd.random() < 0.6:
            kw["category"] = rnd.choice(leaf_cats)
        if rnd.random() < 0.4:
            kw["min"], kw["max"] = 0, rnd.choice([2500, 5000, 10000, 50000])
        if rnd.random() < 0.4:
            kw["rating"] = rnd.choice([3, 4])
        if rnd.random() < 0.3:
            kw["stock"] = True
        if rnd.random() < 0.2:
            kw["brand"] = [rnd.choice(brands)]
        out.append(q("text + filters", rnd.choice(common[:40]), **kw))
    for i in range(30 * share):   # sorts
        if i % 3 == 0:
            out.append(q("browse + sort", "", category=rnd.choice(cats), sort=rnd.choice(SORTS)))
        else:
            out.append(q("text + sort", rnd.choice(common[:40]), sort=rnd.choice(SORTS)))
    for i in range(30 * share):   # pagination, up to the last pages before the count cap
        page = rnd.choice([2, 3, 5, 10, 40, 100, 300, 416])
        if i % 3 == 0:
            out.append(q("browse + page", "", page=page, sort=rnd.choice(["relevance", *SORTS])))
        else:
            out.append(q("text + page", rnd.choice(common[:20]), page=page,
                         sort=rnd.choice(["relevance", "price_asc", "newest"])))
    rnd.shuffle(out)
    return out[:n] if len(out) > n else out


def search_kwargs(d: dict) -> dict:
    return {"category": d["category"], "brand": d["brand"], "price_min_cents": d["min"], "price_max_cents": d["max"],
            "rating_min": float(d["rating"]) if d["rating"] else None, "in_stock": d["stock"], "sort": d["sort"],
            "page": d["page"], "per_page": 24}


def search_url(d: dict) -> str:
    params: list[tuple[str, str]] = []
    if d["q"]:
        params.append(("q", d["q"]))
    if d["category"]:
        params.append(("category", str(d["category"])))
    for b in d["brand"] or []:
        params.append(("brand", str(b)))
    if d["min"] is not None:
        params.append(("min", f"{d['min'] / 100:.2f}"))
    if d["max"] is not None:
        params.append(("max", f"{d['max'] / 100:.2f}"))
    if d["rating"]:
        params.append(("rating", str(d["rating"])))
    if d["stock"]:
        params.append(("stock", "1"))
    if d["sort"] != "relevance":
        params.append(("sort", d["sort"]))
    if d["page"] != 1:
        params.append(("page", str(d["page"])))
    return "/search" + ("?" + urlencode(params) if params else "")


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = now_ns()
    r = fn()
    return (now_ns() - t0) * 1e-9, r


def over_queries(xs: list[float]) -> dict:
    ms = [x * 1e3 for x in xs]
    return {"unit": "ms", "n_queries": len(ms), "p50": round(percentile(ms, 50), 3), "p95": round(percentile(ms, 95), 3),
            "max": round(max(ms), 3) if ms else None}


def main(argv: list[str] | None = None) -> dict:
    p = parser(__doc__.split("\n")[0])
    p.add_argument("--no-1m", action="store_true", help="skip the 1,000,000-product world")
    p.add_argument("--queries", type=int, default=None, help="number of queries (default 200; quick 60)")
    p.add_argument("--repeats", type=int, default=None, help="warm repeats per query (default 5; quick 2)")
    args = p.parse_args(argv)
    n_q = args.queries or (60 if args.quick else 200)
    reps = args.repeats or (2 if args.quick else 5)

    import simweb

    worlds = {"10K": simweb.make("shopping", seed=0)}
    if not args.no_1m:
        worlds["1M"] = simweb.make("shopping", seed=0, size=1_000_000, progress=True)
    queries = make_queries(worlds["10K"].app.world, n_q)

    first: dict[str, list[float]] = {k: [] for k in worlds}
    warm: dict[str, list[float]] = {k: [] for k in worlds}
    facets: dict[str, list[float]] = {k: [] for k in worlds}
    page_first: dict[str, list[float]] = {k: [] for k in worlds}
    page_warm: dict[str, list[float]] = {k: [] for k in worlds}
    totals: dict[str, list[int]] = {k: [] for k in worlds}
    by_kind: dict[str, dict[str, list[float]]] = {}
    step_errors = {k: 0 for k in worlds}
    for env in worlds.values():
        env.reset(seed=0)   # no task: a plain session at the home page
    settle()
    for d in queries:
        kw = search_kwargs(d)
        for name, env in worlds.items():
            w = env.app.world
            dt, r = timed(partial(w.search, d["q"], **kw))
            first[name].append(dt)
            totals[name].append(r["total"])
            rs = []
            for _ in range(reps):
                rs.append(timed(partial(w.search, d["q"], **kw))[0])
            warm[name].append(sorted(rs)[len(rs) // 2])
            by_kind.setdefault(d["kind"], {k: [] for k in worlds})[name].append(sorted(rs)[len(rs) // 2])
            dt_f = [timed(partial(w.facets, d["q"], category=d["category"]))[0] for _ in range(max(1, reps // 2))]
            facets[name].append(sorted(dt_f)[len(dt_f) // 2])
    # the full page step: the page is not cached anywhere, each goto resolves and renders it
    for d in queries:
        action = f"goto({search_url(d)!r})"
        for name, env in worlds.items():
            dt, out = timed(partial(env.step, action))
            if out[0]["last_action_error"]:
                step_errors[name] += 1
            page_first[name].append(dt)
            rs = [timed(partial(env.step, action))[0] for _ in range(max(1, reps // 2))]
            page_warm[name].append(sorted(rs)[len(rs) // 2])

    res: dict = {"queries": len(queries), "repeats": reps,
                 "query_kinds": dict(Counter(d["kind"] for d in queries)),
                 "examples": [search_url(d) for d in queries[:8]]}
    for name in worlds:
        res[name] = {
            "world.search first run": over_queries(first[name]),
            "world.search warm (median of repeats)": over_queries(warm[name]),
            "world.facets warm": over_queries(facets[name]),
            "search page step, first": over_queries(page_first[name]),
            "search page step, repeat": over_queries(page_warm[name]),
            "step_errors": step_errors[name],
            "result_totals_p50": percentile(totals[name], 50),
        }
    res["by_kind_warm_p50_ms"] = {k: {n: round(percentile(v[n], 50) * 1e3, 3) for n in v} for k, v in by_kind.items()}
    big = "1M" if "1M" in worlds else "10K"
    res["target_search_p50_ms_on_" + big] = target(res[big]["world.search warm (median of repeats)"]["p50"], 5.0)
    res["target_search_page_step_p50_ms_on_" + big] = target(res[big]["search page step, first"]["p50"], 5.0)

    rows = []
    for name in worlds:
        for label, s in res[name].items():
            if isinstance(s, dict):
                rows.append([f"{name}  {label}", s["n_queries"], s["p50"], s["p95"], s["max"]])
    print_table(f"search latency over {len(queries)} queries (ms)", ["world / path", "queries", "p50", "p95", "max"], rows)
    print_table("warm world.search p50 by query kind (ms)", ["kind", *worlds],
                [[k, *[v[n] for n in worlds]] for k, v in res["by_kind_warm_p50_ms"].items()])
    for k, v in res.items():
        if k.startswith("target_"):
            print(f"{k}: {v['target']} -> {'met' if v['met'] else 'NOT met'}")
    write_json(args.out, "search", res, sys.argv if argv is None else ["benchmarks/bench_search.py", *argv])
    return res


if __name__ == "__main__":
    main()
