"""``parse_page`` of this tree against the one of a git revision (default ``main``), both with
their compiled walk, in one process: per app the median thread-CPU time per page, the two
sides interleaved page by page (their order alternating), and the speedup (base median
over this tree's median).

The pages are bench_parse_floor.py's: the distinct HTML of every request step of the
oracle plans (``--seeds`` seeds) on each app's default world.

The base is built from the revision's ``simweb/axtree.py`` and ``simweb/_axwalk.pyx`` into a
temporary folder, as the modules ``axtree_base`` and ``_axwalk_base`` (same compiler flags
as setup.py); it needs Cython and a C compiler, like the extension itself.

``--gc`` also measures the collector with the parses kept alive, as the parse cache keeps
them: each side in a fresh process parses every page once, keeps every Page, and reports
the time spent in collections (``gc.callbacks``) per 1,000 pages and the objects the
collector tracks per kept page.

``--steps forum,issues`` measures the collector during episodes: each side in fresh processes
(alternating, 3 rounds) steps every oracle plan of the app (seeds 0-2, after one untimed
pass at seed 9 and a full collection), with ``simweb.browsing``'s
``parse_page`` swapped for the side's; reported: the collector's time per step
(``gc.callbacks``), full collections, and the median step's thread-CPU time.

``--loop SIDE APP N`` only parses the first N pages of APP with SIDE (``base`` or ``head``)
inside one ``map()`` call, for an instruction count that leaves out imports and setup
(``none`` parses nothing: its count, of the map() calls made while importing, is the one to
subtract)::

    python benchmarks/bench_parse_ab.py --save-pages /tmp/pages.json   # the page set, once
    valgrind --tool=callgrind --toggle-collect=map_next --callgrind-out-file=F \\
        python benchmarks/bench_parse_ab.py --pages /tmp/pages.json --loop head forum 60

    python benchmarks/bench_parse_ab.py [--base REV] [--apps forum,issues] [--seeds N] [--gc] [--out FILE]
"""
from __future__ import annotations

import importlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from statistics import median
from typing import Any

from common import REPO, parser, print_table, write_json

APPS = "shopping,forum,issues,cms,booking"
_SETUP = """from setuptools import Extension, setup
from Cython.Build import cythonize
setup(ext_modules=cythonize([Extension("_axwalk_base", ["_axwalk_base.pyx"], extra_compile_args=["-O2"],
      libraries=["dl"])], compiler_directives={"language_level": "3"}, quiet=True))
"""


def build_base(rev: str, where: Path) -> Path:
    """Build `rev`'s axtree and compiled walk into `where`; return the folder to import from."""
    def show(path: str) -> str:
        return subprocess.run(["git", "-C", str(REPO), "show", f"{rev}:{path}"], check=True,
                              capture_output=True, text=True).stdout

    axtree = show("simweb/axtree.py")
    marker = 'importlib.import_module("simweb._axwalk")'
    if marker not in axtree:
        raise SystemExit(f"bench_parse_ab: {rev}'s axtree.py does not load simweb._axwalk")
    (where / "axtree_base.py").write_text(axtree.replace(marker, 'importlib.import_module("_axwalk_base")'))
    (where / "_axwalk_base.pyx").write_text(show("simweb/_axwalk.pyx"))
    (where / "setup.py").write_text(_SETUP)
    subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"], cwd=where, check=True,
                   capture_output=True)
    return where


def sides(base_dir: Path) -> dict[str, Any]:
    """{"base": axtree_base, "head": simweb.axtree}, both with their compiled walk."""
    sys.path.insert(0, str(base_dir))
    base = importlib.import_module("axtree_base")
    from simweb.web import axtree
    for name, mod in (("base", base), ("head", axtree)):
        if not mod.COMPILED_WALK:
            raise SystemExit(f"bench_parse_ab: the {name} side has no compiled walk")
    return {"base": base, "head": axtree}


def pages(apps: list[str], seeds: int) -> dict[str, list[str]]:
    from bench_parse_floor import pages_of
    return {app: pages_of(app, seeds) for app in apps}


def interleaved(mods: dict[str, Any], htmls: list[str], reps: int = 3) -> dict[str, list[int]]:
    """Each side's parse_page on each page, interleaved (bench_parse_floor.interleaved)."""
    from bench_parse_floor import interleaved as by_page
    return by_page({key: mod.parse_page for key, mod in mods.items()}, htmls, reps)


_GC_CHILD = r"""
import gc, json, sys, time
sys.path.insert(0, sys.argv[1])
side, pages_file = sys.argv[2], sys.argv[3]
if side == "base":
    import axtree_base as mod
else:
    from simweb import axtree as mod
htmls = json.load(open(pages_file))
spent = [0]
start = [0]
def hook(phase, info):
    if phase == "start":
        start[0] = time.perf_counter_ns()
    else:
        spent[0] += time.perf_counter_ns() - start[0]
gc.collect()
before = len(gc.get_objects())
gc.callbacks.append(hook)
kept = [mod.parse_page(h) for h in htmls]
gc.callbacks.remove(hook)
gc.collect()
print(json.dumps({"gc_ms_per_1000": spent[0] / 1e6 / len(htmls) * 1000,
                  "tracked_per_page": (len(gc.get_objects()) - before) / len(htmls)}))
"""


def gc_cost(base_dir: Path, all_pages: list[str], rounds: int = 3) -> dict[str, dict[str, float]]:
    """Each side in fresh processes, alternating: the median over `rounds` of each figure."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(all_pages, f)
    out: dict[str, list[dict[str, float]]] = {"base": [], "head": []}
    for _ in range(rounds):
        for side in out:
            res = subprocess.run([sys.executable, "-c", _GC_CHILD, str(base_dir), side, f.name], check=True,
                                 capture_output=True, text=True)
            out[side].append(json.loads(res.stdout))
    Path(f.name).unlink()
    return {side: {k: round(median(r[k] for r in runs), 2) for k in runs[0]} for side, runs in out.items()}


_STEPS_CHILD = r"""
import gc, json, sys, time
sys.path.insert(0, sys.argv[1])
sys.path.insert(0, sys.argv[4])
side, app = sys.argv[2], sys.argv[3]
import simweb
from simweb import browsing
if side == "base":
    import axtree_base
    browsing.parse_page = axtree_base.parse_page
browsing.parse_cached.cache_clear()
from bench_apps import step_times
env = simweb.make(app, seed=0)
step_times(env, range(9, 10))
gc.collect()   # both sides start the window from the same collector state
spent, full, start = [0], [0], [0]
def hook(phase, info):
    if phase == "start":
        start[0] = time.perf_counter_ns()
    else:
        spent[0] += time.perf_counter_ns() - start[0]
        full[0] += info["generation"] == 2
gc.callbacks.append(hook)
t = step_times(env, range(0, 3))
gc.callbacks.remove(hook)
cpu = sorted(t["cpu"])
print(json.dumps({"steps": len(cpu), "gc_us_per_step": spent[0] / 1e3 / len(cpu), "full_collections": full[0],
                  "median_step_cpu_ms": cpu[len(cpu) // 2] * 1e3}))
"""


def step_gc(base_dir: Path, app: str, rounds: int = 3) -> dict[str, dict[str, float]]:
    """The collector's cost per step of `app`'s oracle plans with each side's parse."""
    out: dict[str, list[dict[str, float]]] = {"base": [], "head": []}
    for _ in range(rounds):
        for side in out:
            res = subprocess.run([sys.executable, "-c", _STEPS_CHILD, str(base_dir), side, app,
                                  str(Path(__file__).resolve().parent)], check=True, capture_output=True, text=True)
            out[side].append(json.loads(res.stdout.strip().splitlines()[-1]))
    return {side: {k: round(median(r[k] for r in runs), 3) for k in runs[0]} for side, runs in out.items()}


def loop(side: str, app: str, n: int, base_dir: Path, pages_file: Path | None) -> None:
    mods = sides(base_dir)   # both imported whatever the side: imports may call map() too
    htmls = (json.loads(pages_file.read_text()) if pages_file else pages([app], 2))[app][:n]
    if side == "none":   # the count to subtract: what map() costs outside the parses
        return
    mod = mods[side]
    for html in htmls[:3]:   # first calls (lazy imports, caches) stay outside the map()
        mod.parse_page(html)
    list(map(lambda h: mod.parse_page(h) and None, htmls))


def main() -> None:
    ap = parser(__doc__.splitlines()[0])
    ap.add_argument("--base", default="main", help="git revision to compare against (default main)")
    ap.add_argument("--apps", default=APPS)
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--gc", action="store_true", help="also measure the collector with the pages kept")
    ap.add_argument("--steps", default="", help="apps whose episodes measure the collector per step")
    ap.add_argument("--save-pages", type=Path, help="write the page set (JSON, by app) to this file and stop")
    ap.add_argument("--pages", type=Path, help="the page set from --save-pages instead of running the plans")
    ap.add_argument("--loop", nargs=3, metavar=("SIDE", "APP", "N"), help="only parse, for callgrind")
    args = ap.parse_args()
    if args.save_pages:
        args.save_pages.write_text(json.dumps(pages(args.apps.split(","), args.seeds)))
        return
    with tempfile.TemporaryDirectory(prefix="parse_ab_") as tmp:
        base_dir = build_base(args.base, Path(tmp))
        if args.loop:
            side, app, n = args.loop
            loop(side, app, int(n), base_dir, args.pages)
            return
        mods = sides(base_dir)
        by_app = json.loads(args.pages.read_text()) if args.pages else pages(args.apps.split(","), args.seeds)
        by_app = {app: by_app[app] for app in args.apps.split(",")}
        res: dict[str, Any] = {}
        every: dict[str, list[int]] = {"base": [], "head": []}
        for app, htmls in by_app.items():
            t = interleaved(mods, htmls)
            for k in every:
                every[k] += t[k]
            b, h = median(t["base"]) / 1e3, median(t["head"]) / 1e3
            res[app] = {"pages": len(htmls), "base_us": round(b, 1), "head_us": round(h, 1),
                        "speedup": round(b / h, 2)}
        b, h = median(every["base"]) / 1e3, median(every["head"]) / 1e3
        res["all"] = {"pages": len(every["base"]) // 3, "base_us": round(b, 1), "head_us": round(h, 1),
                      "speedup": round(b / h, 2)}
        print_table(f"parse_page, thread-CPU us per page (median), {args.base} vs this tree",
                    ["app", "pages", args.base, "this tree", "speedup"],
                    [[a, r["pages"], r["base_us"], r["head_us"], r["speedup"]] for a, r in res.items()])
        out: dict[str, Any] = {"base": args.base, "parse": res}
        if args.gc:
            g = gc_cost(base_dir, [h for hs in by_app.values() for h in hs])
            print_table("collector with every Page kept (fresh process per side, median of 3)",
                        ["side", "gc ms per 1000 pages", "tracked objects per page"],
                        [[s, r["gc_ms_per_1000"], r["tracked_per_page"]] for s, r in g.items()])
            out["gc"] = g
        if args.steps:
            per = {app: step_gc(base_dir, app) for app in args.steps.split(",")}
            print_table("collector per step of the oracle plans (fresh process per side, median of 3)",
                        ["app", "side", "steps", "gc us per step", "full collections", "median step cpu ms"],
                        [[a, s, r["steps"], r["gc_us_per_step"], r["full_collections"], r["median_step_cpu_ms"]]
                         for a, sides_ in per.items() for s, r in sides_.items()])
            out["steps"] = per
        write_json(args.out, "parse_ab", out)


if __name__ == "__main__":
    main()
