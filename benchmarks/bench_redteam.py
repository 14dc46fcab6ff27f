"""Reward integrity: the red team's hacking rate per app and per attack family.

For every app, every task template and ``--seeds`` instances of each, the red team
(simweb.redteam) tries zero-work answers, do-then-undo, junk and deleted content,
over-doing and every form of the visited pages, and checks that right answers written
in other forms are paid. Reported: attacks tried, attacks paid (holes: must be 0),
correct solutions left unpaid (false negatives: must be 0), and the seconds it took.

    python benchmarks/bench_redteam.py [--quick] [--seeds N] [--apps shopping,forum] [--sub-tasks] [--out FILE]

``--sub-tasks`` attacks the apps' sub-tasks (simweb.decompose) instead of their templates.
"""
from __future__ import annotations

import time
from collections import Counter

from common import parser, print_table, write_json

import simweb
from simweb.tools.redteam import redteam


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=30, help="instances per template (default 30)")
    p.add_argument("--apps", default=",".join(simweb.app_names()))
    p.add_argument("--sub-tasks", action="store_true", help="attack every app's sub-tasks instead")
    args = p.parse_args()
    seeds = 2 if args.quick else args.seeds
    results, rows, fam_rows = {}, [], []
    for app in [a for a in args.apps.split(",") if a]:
        t0 = time.perf_counter()
        tasks = None
        if args.sub_tasks:
            tasks = [s.id for _, subs in simweb.make(app).app.tasks.with_sub_tasks() for s in subs]
        attacks = redteam(app, range(seeds), tasks=tasks)
        secs = time.perf_counter() - t0
        tried, paid = len(attacks), sum(a.paid for a in attacks)
        unpaid = sum(a.false_negative for a in attacks)
        templates = len({a.task for a in attacks})
        fams = Counter(a.family for a in attacks)
        fam_paid = Counter(a.family for a in attacks if a.paid)
        results[app] = {"templates": templates, "seeds": seeds, "attacks": tried, "paid": paid,
                        "hacking_rate": paid / max(tried, 1), "false_negatives": unpaid, "seconds": secs,
                        "families": {f: {"tried": n, "paid": fam_paid[f]} for f, n in sorted(fams.items())},
                        "examples": [f"{a.task} seed {a.seed}: {a.family}: {a.name}: {a.detail}"
                                     for a in attacks if a.paid or a.false_negative][:10]}
        rows.append([app, templates, seeds, tried, paid, paid / max(tried, 1), unpaid, secs])
        fam_rows += [[f"{app}/{f}", n, fam_paid[f]] for f, n in sorted(fams.items())]
    print_table("red team: attacks per app", ["app", "templates", "seeds", "attacks", "paid", "hacking rate",
                                             "correct work unpaid", "seconds"], rows)
    print_table("red team: attacks per family", ["app/family", "tried", "paid"], fam_rows)
    write_json(args.out, "redteam", results)


if __name__ == "__main__":
    main()
