"""Figure 15: the two per-page costs of a step, each against a reference in the same process.

For each app, the states after every request step of the oracle plans (2 seeds) are kept;
then, alternating the two sides page by page (and which goes first):

  * render: ``app.render(state)`` with simweb's Jinja environment against a stock
    ``jinja2.Environment`` with the same loader, options, globals, filters and dict-first
    attribute lookup (the output is checked equal first);
  * parse: ``parse_page(html)`` of this checkout against ``simweb/axtree.py`` of a git
    revision (``--ref``), on the distinct pages those states render to (title, AX tree,
    elements and forms checked equal first).

Thread-CPU medians per page, and their ratio (this / reference).

    python benchmarks/bench_render_parse.py --ref 62d5d0c [--apps forum,cms] [--quick]
"""
from __future__ import annotations

import dataclasses
import importlib.util
import subprocess
import sys
import tempfile
from pathlib import Path
from statistics import median
from typing import Any

from common import REPO, cpu_ns, parser, print_table, try_reset, write_json


def _module_at(rev: str, path: str, name: str, into: Path) -> Any:
    """``path`` of the repository at ``rev``, written under ``into`` and imported as ``name``."""
    src = subprocess.run(["git", "-C", str(REPO), "show", f"{rev}:{path}"], capture_output=True, text=True,
                         check=True).stdout
    file = into / f"{name}.py"
    file.write_text(src)
    spec = importlib.util.spec_from_file_location(name, file)
    mod = importlib.util.module_from_spec(spec)   # type: ignore[arg-type]
    sys.modules[name] = mod
    spec.loader.exec_module(mod)   # type: ignore[union-attr]
    return mod


def _fields(el: Any) -> tuple:
    return tuple(getattr(el, f.name) for f in dataclasses.fields(el))


def _same_page(a: Any, b: Any) -> bool:
    return (a.title == b.title and a.axtree() == b.axtree() and list(a.elements) == list(b.elements)
            and all(_fields(a.elements[k]) == _fields(b.elements[k]) for k in a.elements)
            and [(f.action, f.method, [c.bid for c in f.controls]) for f in a.forms]
            == [(f.action, f.method, [c.bid for c in f.controls]) for f in b.forms])


def interleaved(a: Any, b: Any, items: list, reps: int) -> tuple[list[int], list[int]]:
    """CPU ns of ``a(x)`` and ``b(x)`` for every item, alternating which runs first."""
    ta: list[int] = []
    tb: list[int] = []
    for rep in range(reps):
        for i, x in enumerate(items):
            sides = [(a, ta), (b, tb)] if (i + rep) % 2 else [(b, tb), (a, ta)]
            for fn, out in sides:
                c0 = cpu_ns()
                fn(x)
                out.append(cpu_ns() - c0)
    return ta, tb


def bench_app(name: str, ref_axtree: Any, seeds: int, reps: int) -> dict[str, Any]:
    import jinja2

    import simweb
    from simweb.core.state import deep_copy
    from simweb.web.axtree import parse_page

    env = simweb.make(name, seed=0)
    app = env.app
    states = []
    for seed in range(seeds):
        for tid in sorted(app.tasks):
            if not try_reset(env, seed, tid):
                continue
            for a in env.oracle_plan():
                r0 = env.state["meta"]["requests"]
                env.step(a)
                if env.state["meta"]["requests"] != r0:
                    states.append(deep_copy(env.state))
    ours = app.jinja
    stock = jinja2.Environment(loader=ours.loader, autoescape=True, auto_reload=False, cache_size=-1,
                               undefined=jinja2.ChainableUndefined, trim_blocks=True, lstrip_blocks=True)
    stock.getattr = ours.getattr   # type: ignore[method-assign]  # the dict-first lookup predates this figure
    stock.globals.update(ours.globals)
    stock.filters.update(ours.filters)

    def render_with(j: Any) -> Any:
        def run(state: dict) -> str:
            app.jinja = j
            return app.render(state)
        return run

    try:
        for s in states:
            if render_with(ours)(s) != render_with(stock)(s):
                raise SystemExit(f"{name}: simweb's and stock Jinja's HTML differ")
        ra, rb = interleaved(render_with(ours), render_with(stock), states, reps)
        app.jinja = ours
        pages = list(dict.fromkeys(app.render(s) for s in states))
    finally:
        app.jinja = ours
    for h in pages:
        if not _same_page(parse_page(h), ref_axtree.parse_page(h)):
            raise SystemExit(f"{name}: the two parse_page versions disagree on a page")
    pa, pb = interleaved(parse_page, ref_axtree.parse_page, pages, reps)

    def fig(a: list[int], b: list[int], n: int) -> dict[str, Any]:
        ma, mb = median(a) / 1e6, median(b) / 1e6
        return {"this_ms": round(ma, 3), "ref_ms": round(mb, 3), "ratio": round(ma / mb, 3), "pages": n,
                "samples": len(a)}

    return {"render": fig(ra, rb, len(states)), "parse": fig(pa, pb, len(pages))}


def main(argv: list[str] | None = None) -> dict:
    p = parser(__doc__.split("\n")[0])
    p.add_argument("--ref", required=True, help="git revision whose simweb/axtree.py is the parse reference")
    p.add_argument("--apps", default=None, help="comma-separated apps (default: every registered app)")
    args = p.parse_args(argv)
    import simweb

    tmp = tempfile.TemporaryDirectory(prefix="simweb-ref-")
    ref_axtree = _module_at(args.ref, "simweb/axtree.py", "_simweb_axtree_ref", Path(tmp.name))
    names = args.apps.split(",") if args.apps else list(simweb.app_names())
    seeds, reps = (1, 2) if args.quick else (2, 3)
    results: dict[str, Any] = {"ref": args.ref}
    rows = []
    for name in names:
        r = results[name] = bench_app(name, ref_axtree, seeds, reps)
        rows.append([name, r["render"]["this_ms"], r["render"]["ref_ms"], r["render"]["ratio"],
                     r["parse"]["this_ms"], r["parse"]["ref_ms"], r["parse"]["ratio"]])
        print(f"{name}: done", flush=True)
    print_table(f"per page, thread-CPU medians (render: stock Jinja; parse: axtree.py at {args.ref})",
                ["app", "render ms", "stock ms", "ratio", "parse ms", "ref ms", "ratio"], rows)
    write_json(args.out, "render_parse", results, argv)
    return results


if __name__ == "__main__":
    main(sys.argv[1:])
