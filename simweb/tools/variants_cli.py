"""The command line of site variants (:mod:`simweb.variants`): ``simweb variants APP``
and the report of ``simweb demo --variants``."""
from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import click


def register(main: click.Group, guard: Callable[[Callable], Callable]) -> None:
    """Add ``simweb variants`` to the command group ``main``."""

    @main.command("variants")
    @click.argument("app")
    @click.option("--split", type=click.Choice(["train", "test"]), default=None,
                  help="Only the train variants (no held-out factor value) or the test ones (at least one).")
    @click.option("--limit", type=click.IntRange(min=1, max=100_000), default=200, show_default=True,
                  help="How many variants to list.")
    @click.option("--start", type=click.IntRange(min=0), default=0, show_default=True, help="First variant id.")
    @click.option("--json", "as_json", is_flag=True, help="One JSON object a line instead of a table.")
    @click.option("--factors", "show_factors", is_flag=True, help="The factors and their options instead.")
    @guard
    def variants_cmd(app: str, split: str | None, limit: int, start: int, as_json: bool, show_factors: bool) -> None:
        """List an app's site variants with their factor values and split (docs/variants.md)."""
        from ..runtime import registry
        from ..runtime.variants import catalogue

        registry.resolve(app)
        cat = catalogue(app)
        if show_factors:
            for f in cat.factors:
                opts = ", ".join(f"{o.label}{_policy_values(o.policies)}{' (held out)' if i in f.held_out else ''}"
                                 for i, o in enumerate(f.options))
                click.echo(f"{f.name}: {opts}" + (f"  # {f.doc}" if f.doc else ""))
            return
        rows = cat.listing(split, limit, cat.check(start))
        if as_json:
            for r in rows:
                click.echo(json.dumps(r, ensure_ascii=False))
            return
        names = [f.name for f in cat.factors]
        click.echo("\t".join(["variant", "split", *names]))
        for r in rows:
            click.echo("\t".join([str(r["variant"]), r["split"], *(r["factors"][n] for n in names)]))
        click.echo(f"# {len(rows)} of {cat.count} {app} variants"
                   + (f" ({split} split)" if split else "") + f"; {cat.combinations} factor combinations", err=True)


def _policy_values(policies: dict[str, Any]) -> str:
    """An option's policies as ``--factors`` lists them: `` (min_stay_nights=2)``; null is "none"."""
    if not policies:
        return ""
    return " (" + ", ".join(f"{k}={'none' if v is None else json.dumps(v)}" for k, v in policies.items()) + ")"


def demo_report(con: Any, results: list[dict[str, Any]], variants_of: dict[str, list[int]]) -> None:
    """After ``simweb demo --variants``: the oracle's and the random agent's success per
    variant, and every (template, variant) where the oracle failed or the random agent won."""
    by: dict[tuple[int, str], list[dict[str, Any]]] = {}
    for r in results:
        by.setdefault((int(r.get("variant", 0)), r["agent"]), []).append(r)
    bad = [r for r in results if (r["agent"] == "oracle" and not (r["success"] and r["clean"]))
           or (r["agent"] == "random" and r["success"])]
    n_variants = sum(len(v) for v in variants_of.values())
    oracle = [r for r in results if r["agent"] == "oracle"]
    rnd = [r for r in results if r["agent"] == "random"]
    worst = min((sum(x["success"] and x["clean"] for x in rs) / len(rs)
                 for (v, a), rs in by.items() if a == "oracle"), default=0.0)
    con.print(f"variants: {n_variants} site variant(s); oracle {sum(r['success'] and r['clean'] for r in oracle)}/"
              f"{len(oracle)} clean successes (worst variant {worst:.2f}), random "
              f"{sum(r['success'] for r in rnd)}/{len(rnd)} successes")
    for r in bad[:50]:
        con.print(f"  variant {r.get('variant', 0)}: {r['agent']} {r['task']} seed {r['seed']}: "
                  f"success {r['success']} clean {r['clean']}")


def redteam_report(con: Any, app: str, attacks: list[Any], variants: list[int]) -> None:
    """After ``simweb redteam --variants``: per variant, its split, the attacks tried, paid
    and correct work unpaid (and the first failure), then the variants that failed."""
    from rich.table import Table

    from ..runtime.variants import catalogue

    cat = catalogue(app)
    by: dict[int, list[Any]] = {v: [] for v in variants}
    for a in attacks:
        by.setdefault(a.variant, []).append(a)
    view = Table(title=f"{app} red team per site variant")
    for col in ("variant", "split", "attacks tried", "attacks paid", "correct work unpaid", "first failure"):
        view.add_column(col, overflow="fold")
    failed = []
    for v, rows in by.items():
        bad = [a for a in rows if a.paid or a.false_negative]
        if bad:
            failed.append(v)
        view.add_row(str(v), cat.split(v), str(len(rows)), str(sum(a.paid for a in rows)),
                     str(sum(a.false_negative for a in rows)),
                     f"{bad[0].task} seed {bad[0].seed}: {bad[0].family}: {bad[0].name}" if bad else "")
    con.print(view)
    click.echo(f"{app}: {len(by)} site variant(s), " + (f"failed on {', '.join(map(str, failed))}" if failed
                                                         else "no attack paid and no correct work unpaid on any"))


def register_check(main: click.Group, guard: Callable[[Callable], Callable],
                   variant_ids: Callable[[list[str], str | None], dict[str, list[int]]]) -> None:
    """Add ``simweb check APP`` (simweb.check_app) to the command group ``main``."""

    @main.command("check")
    @click.argument("app")
    @click.option("--seeds", "-n", type=click.IntRange(min=1, max=100), default=3, show_default=True,
                  help="Task seeds per template (0..N-1) for the oracle checks; the random agent and red team use "
                       "the first two.")
    @click.option("--variants", "ids", default=None,
                  help="Site variants whose pages are checked, as demo --variants takes them (N, N-M, test:K, a "
                       "list; docs/variants.md); default: today's site.")
    @click.option("--browser", is_flag=True, help="Also run every oracle in Chromium, on each variant checked.")
    @guard
    def check_cmd(app: str, seeds: int, ids: str | None, browser: bool) -> None:
        """Check an app's whole contract (simweb.check_app): the spec, the world, oracles, a
        random agent, fork replay, determinism, the red team, sub-tasks; over site variants
        with --variants. Prints the report; exits 1 if a check failed."""
        import sys

        from ..runtime import registry
        from .check import check_app

        registry.resolve(app)
        variants = variant_ids([app], ids)[app]   # one line and exit 2 for a bad spec, before any check
        report = check_app(app, seeds=range(seeds), browser=browser, variants=variants, raise_on_failure=False,
                           progress=(lambda t: click.echo(f"  ... {t}", err=True)) if sys.stderr.isatty() else None)
        click.echo(str(report))
        if not report.passed:
            sys.exit(1)
