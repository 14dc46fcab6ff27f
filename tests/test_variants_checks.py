"""check_app and the red team over site variants (docs/variants.md): the contract holds
on a sample of variants of every app, the red team pays nothing there, and a variant's
own links (its decoy banner, its breadcrumb trail) open no way to the reward.

CI-sized: per app, three variants picked from the catalogue (one per moved top-bar
position; together they take as many held-out values and layout options as the first
ids allow), one task seed. The full form is a command: ``simweb redteam APP -n 1
--variants 0-49`` (docs/variants.md, Measured)."""
from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import APPS

import simweb
from simweb.runtime.variants import COVER, VariantError, catalogue, parse_ids
from simweb.tools.check import AppReport, CheckResult
from simweb.tools.redteam import redteam

#: The engine's layout factors (every app has them).
LAYOUT = ("banner", "nav_position", "breadcrumbs", "title_format")


def sample_variants(app: str) -> list[int]:
    """One variant per top-bar position other than today's, each with a banner and a
    breadcrumb trail, picked greedily (smallest id on ties) to take the most factor values
    not yet taken: held-out values first, then the layout factors' options."""
    cat = catalogue(app)
    taken: set[tuple[str, int]] = set()
    out = []
    for nav in ("right", "left", "bottom"):
        best, score = None, (-1, -1)
        for k in range(1, 10 * COVER):
            site = cat.site(k)
            if site.nav != nav or not site.banner or not site.crumbs:
                continue
            new = {(f.name, i) for f, i in zip(cat.factors, cat.choice(k))} - taken
            held = sum(1 for f in cat.factors for name, i in new if name == f.name and i in f.held_out)
            s = (held, sum(1 for name, _ in new if name in LAYOUT))
            if s > score:
                best, score = k, s
        assert best is not None, f"{app}: no variant with the top bar at {nav}, a banner and a trail"
        out.append(best)
        taken |= {(f.name, i) for f, i in zip(cat.factors, cat.choice(best))}
    return out


def test_the_sample_covers_layouts_and_held_out_values():
    for app in APPS:
        cat = catalogue(app)
        ks = sample_variants(app)
        nav = [f for f in cat.factors if f.name == "nav_position"][0]
        # every position of the top bar other than today's, the held-out one included
        assert {cat.values(k)["nav_position"] for k in ks} == {o.label for o in nav.options[1:]}
        assert all(cat.site(k).banner and cat.site(k).crumbs for k in ks)
        assert sum(cat.split(k) == "test" for k in ks) >= 2, (app, ks)


@pytest.mark.parametrize("app", APPS)
def test_check_app_holds_on_a_sample_of_variants(app):
    """Oracles, the random agent, fork replay, determinism, the red team and sub-tasks on
    three variants of the app: every check passes, and the report names each variant."""
    ks = sample_variants(app)
    report = simweb.check_app(app, seeds=(0,), variants=ks, raise_on_failure=False)
    assert report.variants == ks
    assert report.passed, str(report)
    for k in ks:
        names = {r.name for r in report.results if r.variant == k}
        assert "the red team pays nothing" in names and "oracles reach a clean success" in names, (k, names)
        assert f"variant {k}: the red team pays nothing" in str(report)
    # the checks that read no page run once
    assert sum(r.name == "the world keeps its contract" for r in report.results) == 1


def test_a_report_says_which_variant_failed():
    report = AppReport("forum", [CheckResult("the world keeps its contract", []),
                                 CheckResult("oracles reach a clean success", [], 3),
                                 CheckResult("oracles reach a clean success", ["forum/x seed 0: no"], 7)], [3, 7])
    assert not report.passed and report.failed_variants() == [7]
    text = str(report)
    assert "failed on 7" in text and "FAIL variant 7: oracles reach a clean success: forum/x seed 0: no" in text
    assert "ok   variant 3: oracles" in text


def test_check_app_takes_the_demo_spec_and_refuses_bad_ids():
    assert parse_ids("test:3", "forum") == [r["variant"] for r in catalogue("forum").listing("test", 3)]
    assert all(catalogue("forum").split(k) == "train" for k in parse_ids("train:4", "forum"))
    assert parse_ids("0,test:1", "forum")[0] == 0
    for bad in ("test:0", "held:3", "test:x", "-1", "99999999"):
        with pytest.raises(VariantError):
            simweb.check_app("forum", variants=bad, raise_on_failure=False)
    with pytest.raises(VariantError):
        simweb.check_app("forum", variants=[10**9], raise_on_failure=False)


@pytest.mark.parametrize("args", [["check", "forum", "--variants", "x"], ["check", "forum", "--variants", "test:0"],
                                  ["redteam", "forum", "--variants", "99999999"], ["redteam", "forum", "--variants", "1-"]])
def test_cli_bad_variant_spec_one_line_exit_2(args):
    p = subprocess.run([sys.executable, "-m", "simweb.cli", *args], capture_output=True, text=True)
    assert p.returncode == 2, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr, p.stderr


@pytest.mark.parametrize("app", APPS)
def test_a_variants_own_links_open_no_reward_path(app):
    """The variant-chrome attacks (the banner's promo-* links and the trail's site-crumb*
    ones instead of the task, before it, and on the oracle's last page) run on every
    template of a variant with a banner and a trail, pay nothing and leave no correct work
    unpaid; every attack records its variant; variant 0 has no such links."""
    k = sample_variants(app)[0]
    attacks = redteam(app, (1,), events=False, variant=k)
    assert {a.variant for a in attacks} == {k}
    chrome = [a for a in attacks if a.family == "variant-chrome"]
    tasks = set(simweb.make(app).app.tasks)
    assert {a.task for a in chrome} == tasks
    assert any(a.name.startswith("the start page's promo-") for a in chrome)
    assert any("site-crumb-home" in a.name for a in chrome)
    bad = [f"{a.task}: {a.name}: {a.detail}" for a in attacks if a.paid or a.false_negative]
    assert not bad, "\n".join(bad[:10])
    tid = sorted(tasks)[0]
    assert not [a for a in redteam(app, (1,), tasks=[tid], events=False) if a.family == "variant-chrome"]


def test_cli_redteam_and_check_over_variants():
    """`simweb redteam --variants` prints a row per variant and writes each attack's
    variant; `simweb check --variants` prints each variant's results."""
    app = "booking" if "booking" in APPS else APPS[0]
    ks = sample_variants(app)[:1]
    tid = sorted(simweb.make(app).app.tasks)[0]
    p = subprocess.run([sys.executable, "-m", "simweb.cli", "redteam", app, "-n", "1", "-t", tid, "--no-events",
                        "--variants", f"0,{ks[0]}"], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "red team per site variant" in p.stdout and "no attack paid and no correct work unpaid" in p.stdout
    assert "variant-chrome" in p.stdout
    p = subprocess.run([sys.executable, "-m", "simweb.cli", "check", app, "-n", "1", "--variants", str(ks[0])],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    assert f"contract holds (site variants {ks[0]})" in p.stdout
    assert f"ok   variant {ks[0]}: the red team pays nothing" in p.stdout


def _reference_page_context(site, title: str, site_title: str) -> dict:
    """The documented rewrite: the title in the variant's format, then its words as a
    whole; the trail's parts each in the variant's words."""
    import markupsafe

    split = site.title_parts(title, site_title) if (site.title[0] or site.crumbs) else None
    if split is not None and site.title[0]:
        pattern, joint = site.title
        title = pattern.replace("{site}", " ".join(split[1])).replace("{page}", joint.join(split[0]))
    out = {"title": site.words(title), "spec_title": site.words(site_title)}
    if site.crumbs:
        parts = [markupsafe.escape(site.words(p)) for p in reversed(split[0])] if split is not None else []
        sep = f' <span class="sep" aria-hidden="true">{site.crumbs}</span> '
        out["variant_crumbs"] = markupsafe.Markup("".join(
            sep + (f'<span aria-current="page">{p}</span>' if i == len(parts) - 1 else f"<span>{p}</span>")
            for i, p in enumerate(parts)))
    return out


def test_a_titles_rewrite_by_parts_is_the_whole_titles():
    """Site._page_context rewrites a title part by part (each part's words once, memoised)
    instead of the whole title and then each part again: the same title, site title and
    trail for every title format and trail, and, when a phrase holds a title separator,
    the whole title's rewrite."""
    import dataclasses

    for app in APPS:
        env = simweb.make(app)
        cat, site_title = catalogue(app), env.app.spec.title
        titles = {site_title, "A page of no site", f"{site_title} · {site_title} Plus · x", f"x · {site_title}"}
        for tid in sorted(env.app.tasks)[:6]:
            env.reset(seed=0, options={"task": tid})
            titles.add(env.browser.page().title)
            for a in env.oracle_plan()[:-1]:
                env.step(a)
                titles.add(env.browser.page().title)
        ks = [k for k in range(1, COVER) if cat.site(k).title[0] or cat.site(k).crumbs][:12]
        sites = [cat.site(k) for k in ks]
        # a lexicon whose phrase spans a separator: the whole title is rewritten
        span = dataclasses.replace(sites[0], text={**sites[0].text, f"x · {site_title}": "joined"})
        assert not span._parts_apart and sites[0]._parts_apart
        for site in [*sites, span]:
            for t in sorted(titles):
                for _ in range(2):   # the second time from the memo of parts
                    got = {"title": t}
                    site._page_context(got, site_title)
                    assert got == _reference_page_context(site, t, site_title), (app, site.variant, t)
        assert span.words(f"x · {site_title}") == "joined"


def test_kept_flow_styles_are_each_variants_own():
    """confirm_step and form_steps keep a variant's style on the app after its first check:
    asked in turn for variants of different styles on one App (and for today's site), each
    answers its own site's style every time; two variants never share a kept style."""
    from simweb.runtime.variants import confirm_step, form_steps

    for app in APPS:
        cat = catalogue(app)
        env = simweb.make(app)
        styles: dict[tuple[str, str], int] = {}
        for k in range(1, cat.count):
            site = cat.site(k)
            styles.setdefault((site.confirm, site.steps), k)
            if len(styles) >= 6:
                break
        assert len({c for c, _ in styles}) > 1 and len({s for _, s in styles}) > 1, app
        states = {k: env.app.initial_state(0, variant=k) for k in [0, *styles.values()]}
        for _ in range(2):   # the second pass from the kept styles
            for k, state in states.items():
                want = (cat.site(k).confirm, cat.site(k).steps) if k else ("", "")
                assert (confirm_step(env.app, state), form_steps(env.app, state)) == want, (app, k)
