"""What a page's parse cannot go below in Python: lexbor alone, lexbor plus visiting every
node from Python, a one-regex tokenizer pass, against ``parse_page``.

The pages are the distinct HTML of every request step of the oracle plans (2 seeds) on
each app's default world. Per page, thread-CPU time (median over pages, 3 passes):

  * lexbor: ``LexborHTMLParser(html)`` (the C parse, nothing read back);
  * lexbor + visit: the same, then every node visited from Python once, reading its tag,
    its attributes and, for a text node, its text (what any Python walk over lexbor pays
    before deciding anything);
  * tokenizer: one compiled regex over the page yielding every tag and text run (no tree,
    no attributes split, no entities decoded): the least a Python tokenizer "fast path"
    would pay instead of lexbor and the visit;
  * parse_page (python): the whole parse (title, AX lines, elements, forms) with the
    Python walk (``SIMWEB_PURE_PARSE=1``'s);
  * parse_page (compiled): the same with the compiled walk (simweb/_axwalk.pyx), when built.

The sides run interleaved (their order alternating page by page) in one process;
"speedup" is the python median over the compiled median.

    python benchmarks/bench_parse_floor.py [--apps forum,issues,cms] [--out FILE]
"""
from __future__ import annotations

import importlib
import re
import time
from collections.abc import Callable
from statistics import median
from typing import Any

from common import parser, print_table, try_reset, write_json

_TOKEN = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9-]*)([^>]*)>|<!--.*?-->|<![^>]*>|([^<]+)", re.S)


def _visit(node: Any) -> int:
    n = 0
    for child in node.iter(include_text=True, skip_empty=True):
        if child.tag == "-text":
            child.text_content   # noqa: B018 - the read is what is measured
        else:
            child.attributes   # noqa: B018
            n += 1 + _visit(child)
    return n


def _tokens(html: str) -> int:
    return sum(1 for _ in _TOKEN.finditer(html))


def pages_of(name: str, seeds: int) -> list[str]:
    import simweb

    env = simweb.make(name, seed=0)
    seen: dict[str, None] = {}
    for seed in range(seeds):
        for tid in sorted(env.app.tasks):
            if not try_reset(env, seed, tid):
                continue
            for a in env.oracle_plan():
                seen.setdefault(env.step(a)[0]["html"], None)
    return list(seen)


def interleaved(sides: dict[str, Callable[[str], Any]], pages: list[str], reps: int = 3) -> dict[str, list[int]]:
    """Thread-CPU ns of each side on each page, ``reps`` passes, the sides' order
    alternating page by page so that drifting load hits them alike."""
    cpu = time.thread_time_ns
    times: dict[str, list[int]] = {k: [] for k in sides}
    for rep in range(reps):
        for i, html in enumerate(pages):
            order = list(sides.items())
            if (i + rep) % 2:
                order.reverse()
            for key, fn in order:
                c0 = cpu()
                fn(html)
                times[key].append(cpu() - c0)
    return times


def bench_app(name: str, seeds: int) -> dict[str, Any]:
    from selectolax.lexbor import LexborHTMLParser

    from simweb.web import axtree

    pages = pages_of(name, seeds)
    sides: dict[str, Callable[[str], Any]] = {
        "lexbor": LexborHTMLParser,
        "lexbor + visit": lambda h: _visit(LexborHTMLParser(h).body),
        "tokenizer": _tokens,
        "parse_page (python)": lambda h: axtree._parse_page(h, None),
    }
    fast = _compiled()
    if fast is not None:
        sides["parse_page (compiled)"] = lambda h: axtree._parse_page(h, fast)
    times = interleaved(sides, pages)
    out = {k: round(median(v) / 1e6, 3) for k, v in times.items()}
    res = {"pages": len(pages), "mean_bytes": round(sum(map(len, pages)) / len(pages)),
           "nodes_per_page": round(median(_visit(LexborHTMLParser(h).body) for h in pages)),
           "median_ms": out}
    if fast is not None:
        res["speedup"] = round(median(times["parse_page (python)"]) / median(times["parse_page (compiled)"]), 2)
    return res


def _compiled() -> Any:
    """simweb._axwalk set up for axtree (also under SIMWEB_PURE_PARSE=1), or None if not built."""
    from simweb.web import axtree

    if axtree._compiled_walk is not None:
        return axtree._compiled_walk
    try:
        import selectolax.lexbor

        _axwalk = importlib.import_module("simweb._axwalk")   # compiled; absent without a C compiler
    except ImportError:
        return None
    if not _axwalk.load(selectolax.lexbor.__file__):
        return None
    _axwalk.configure(vars(axtree), axtree._tag_ids())
    return _axwalk


def main() -> None:
    ap = parser(__doc__.splitlines()[0])
    ap.add_argument("--apps", default="shopping,forum,issues,cms,booking")
    ap.add_argument("--seeds", type=int, default=2)
    args = ap.parse_args()
    res = {name: bench_app(name, args.seeds) for name in args.apps.split(",")}
    keys = [k for k in ("lexbor", "lexbor + visit", "tokenizer", "parse_page (python)", "parse_page (compiled)")
            if all(k in r["median_ms"] for r in res.values())]
    extra = ["speedup"] if all("speedup" in r for r in res.values()) else []
    print_table("parse floor, thread-CPU ms per page (median)", ["app", "pages", "bytes", "elements", *keys, *extra],
                [[n, r["pages"], r["mean_bytes"], r["nodes_per_page"], *(r["median_ms"][k] for k in keys),
                  *(r[k] for k in extra)] for n, r in res.items()])
    write_json(args.out, "parse_floor", res)


if __name__ == "__main__":
    main()
