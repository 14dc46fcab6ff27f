"""What a cold reset's start page costs, in instructions: the floor under the cold-reset target.

A cold reset (the first of a new task and seed) renders its start page and parses it into
the AX tree: every template starts at its signed-in user's page, which differs per user,
so no cache serves it. This script counts (valgrind's callgrind, as bench_instructions.py)
what the parse of those pages costs on its own, per app:

  * the start pages of every task template at ``--seeds`` new seeds are rendered once
    (the HTML written to a file, outside the counted runs);
  * ``load``: a child under callgrind imports simweb and reads the pages;
  * ``parse``: the same child, then ``parse_page(html).axtree()`` on every page, and
    callgrind's inclusive counts of lexbor's parse and of the compiled walk's parts.

Per page it reports (parse - load) / pages, and the share of it spent in lexbor's HTML
parse (``LexborHTMLParser``), the compiled walk (``walk_body``) and the line formatting
(``format_lines``). With ``--resets FILE`` (a bench_instructions.py JSON) it also gives
that parse as a share of the app's instructions per cold reset.

    python benchmarks/bench_start_page_floor.py [--apps forum,issues] [--seeds 4] [--resets FILE]
"""
from __future__ import annotations

import json
import os
import pickle
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from statistics import median
from typing import Any

from common import parser, print_table, write_json

CHILD = r"""
import pickle, sys
import simweb
from simweb.axtree import parse_page
pages = pickle.load(open(sys.argv[1], "rb"))
if sys.argv[2] == "parse":
    for html in pages:
        parse_page(html).axtree()
print(f"counted pages={len(pages)}", file=sys.stderr)
"""

#: callgrind function names (substrings of callgrind_annotate's lines) whose inclusive
#: counts split a parse.
PARTS = {
    "lexbor": "__pyx_pw_10selectolax_6lexbor_16LexborHTMLParser_1__init__",
    "walk": "_axwalk_5walk_body",
    "format": "_axwalk_9format_lines",
}


def start_pages(name: str, seeds: range) -> list[str]:
    """The start page HTML of every template of ``name`` at ``seeds`` (default world)."""
    import simweb
    from simweb.episodes.env import episode_start

    env = simweb.make(name, seed=0)
    pages = []
    for seed in seeds:
        for tid in sorted(env.app.tasks):
            try:
                pages.append(episode_start(env.app, tid, seed).html)
            except Exception:   # a template that cannot draw at this seed has no start page
                continue
    return pages


def counted(pages_file: Path, kind: str, out_file: Path) -> tuple[int, dict[str, int]]:
    env = dict(os.environ, PYTHONHASHSEED="0")
    cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out_file}", os.path.realpath(sys.executable),
           "-c", CHILD, str(pages_file), kind]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    total = re.search(r"^(?:summary|totals): (\d+)", out_file.read_text() if out_file.exists() else "", re.M)
    if r.returncode != 0 or total is None or "counted pages=" not in r.stderr:
        raise SystemExit(f"bench_start_page_floor: the {kind} run failed:\n{r.stderr[-2000:]}")
    parts: dict[str, int] = {}
    if kind == "parse":
        ann = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", str(out_file)],
                             capture_output=True, text=True, check=False).stdout
        for part, symbol in PARTS.items():
            m = re.search(r"^\s*([\d,]+) \([^)]*\)\s+\S*" + re.escape(symbol) + r"\b", ann, re.M)
            parts[part] = int(m.group(1).replace(",", "")) if m else 0
    return int(total.group(1)), parts


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = parser(__doc__.split("\n")[0])
    p.add_argument("--apps", default=None, help="comma-separated apps (default: every registered app)")
    p.add_argument("--seeds", type=int, default=None, help="new seeds per template (default 4, quick 1)")
    p.add_argument("--resets", default=None, help="a bench_instructions.py JSON: parse as a share of a cold reset")
    args = p.parse_args(argv)
    for tool in ("valgrind", "callgrind_annotate"):
        if shutil.which(tool) is None:
            raise SystemExit(f"bench_start_page_floor: {tool} is not installed (apt-get install valgrind)")
    import simweb

    names = args.apps.split(",") if args.apps else list(simweb.app_names())
    seeds = range(9000, 9000 + (args.seeds or (1 if args.quick else 4)))
    resets = json.loads(Path(args.resets).read_text())["results"] if args.resets else {}
    results: dict[str, Any] = {"seeds": [seeds.start, seeds.stop - 1]}
    rows = []
    with tempfile.TemporaryDirectory(prefix="simweb-floor-") as tmp:
        for name in names:
            pages = start_pages(name, seeds)
            pages_file = Path(tmp) / f"{name}.pages"
            pages_file.write_bytes(pickle.dumps(pages))
            load, _ = counted(pages_file, "load", Path(tmp) / f"{name}.load.cg")
            total, parts = counted(pages_file, "parse", Path(tmp) / f"{name}.parse.cg")
            n = len(pages)
            per_page = (total - load) / n
            res: dict[str, Any] = {"pages": n, "distinct": len(set(pages)),
                                   "html_bytes_median": median(len(h) for h in pages),
                                   "parse_ir_per_page": round(per_page),
                                   "parts_ir_per_page": {k: round(v / n) for k, v in parts.items()}}
            cold = resets.get(name, {}).get("per_op", {}).get("this", {}).get("cold_reset")
            if cold:
                res["cold_reset_ir"] = round(cold)
                res["parse_share_of_cold_reset"] = round(per_page / cold, 3)
            results[name] = res
            rows.append([name, n, res["html_bytes_median"], round(per_page / 1e6, 3),
                         *[round(parts[k] / n / 1e6, 3) for k in PARTS],
                         round(cold / 1e6, 2) if cold else "", res.get("parse_share_of_cold_reset", "")])
            print(f"{name}: done", flush=True)
    print_table("start pages: million instructions per parse (and per cold reset, from --resets)",
                ["app", "pages", "HTML bytes", "parse", *PARTS, "cold reset", "parse share"], rows)
    write_json(args.out, "start_page_floor", results, argv)
    return results


if __name__ == "__main__":
    main(sys.argv[1:])
