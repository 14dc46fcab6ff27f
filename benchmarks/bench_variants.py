"""Site variants (simweb.variants): how different they are, and what they cost.

Per app, variant 0 (today's site) against a test variant whose every app factor differs
(but the policies and the confirmation step: see far_variant):

  diversity  on the same pages (the start page and the final page of every template's
             oracle run, seed 0), the share of distinct AX-tree lines (lines in one
             variant's tree but not the other's, over the lines of both) and of distinct
             accessible names; and how many distinct AX "structures" (lines with the
             names blanked) the pages have;
  cost       median time of an oracle step, a fork and a cold reset (an instance never
             reset before in this process) on the variant against variant 0, measured in
             the same run with the two interleaved (ratio: goal <= 1.10), and the one-off
             time to build a variant's templates (once per process and variant);
  hot step   (--hot) each oracle step at one seed as the best of 12 runs on a fresh fork,
             parse cache emptied, collector off, wall clock: the step's own work, without
             what the loop around it adds (caches other work evicted, the collector);
  sample     (--sample N) the distribution over N variants drawn from the catalogue (by a
             hash of the app's name: the same ids every run) among those that keep today's
             policies, no confirmation step, one-step forms, a signed-in start, the bar shown
             and the filter form in view (their oracle takes today's steps): per variant, the
             cost as above against variant 0 in the same run, interleaved; reported as the
             median, p90 and max of the per-variant ratios and the share within 1.10, with
             ``--aa M`` runs of variant 0 against itself (a second environment) as the
             noise floor of the same measurement. The step is also given paired by index
             (paired_ratio): the median over steps of one step's time on the variant over
             the same step's on variant 0 (the same instance and plan, run next to it),
             which the mix of step kinds does not move as it moves a median of all steps,
             and as a total (total_ratio): the time of all the variant's steps over the
             same steps' on variant 0, what a training run's throughput sees;
  by page    (--sample N --pair page) the N variants drawn from the whole catalogue, the
             flow-changing ones included (a sign-in, a confirmation page, a second form page,
             a menu or a filter form to open: their oracle takes other steps, so steps do
             not pair by index). Each step is keyed by what it did and where (step_key):
             ``render`` (the site served a page), ``reparse`` (a <details> opened: the same
             HTML parsed again) or ``field`` (a field filled, an option selected: the AX tree
             of the same page); the action's name; the page it left and the page it landed
             on (the route's name from the step's info, not the URL). Per variant: ``ratio``,
             the median over the keys both sides took of (the key's median time on the
             variant / on variant 0); ``near_ratio``, with the variant's other keys paired
             with variant 0's steps of the same kind that land on the same page (a second
             form page's submission, a confirmation page's yes); ``total_ratio``, the
             variant's steps on shared keys priced at its medians over the same steps priced
             at variant 0's; ``paired_share``, the share of its steps that found a partner
             (the rest are its own steps: the sign-in, the disclosure, the confirmation
             page); ``episode_ratio``, all its steps over all of variant 0's for the same
             tasks. The A/A runs go through the same pairing. Each side's plans are found
             in a forked child (plans_apart): a flow variant's plan is found by running it,
             which would leave its pages parsed and its text rewritten for the timed steps.
             Work an episode does once (the signed-in user's data) lands on its first step
             that needs it: on a signed-out start, the sign-in's page, so a by-page ratio
             is a little low there. Beside the cost, the size of the pages paired
             (content_paired): ``ax_ratio`` and ``html_ratio``, how much more AX tree and
             HTML the variant's pages hold, and ``per_ax_ratio`` and ``per_html_ratio``,
             each key's time ratio over its AX-size and HTML-size ratio (a step's fixed work
             does not grow with the page, so a ratio below 1 is what a variant with no
             machinery of its own would read; --phases measures the parts).
  phases     (--sample N --pair page --phases) where the step's difference goes, on the
             keys both sides took (Phases, phase_paired): the Jinja template's render and
             the page's parse (content: they grow with what the page draws); the rest of
             the render (its context: on a variant the title, messages and sign-in link),
             the multi-step form split and the rest of the step (the transition, URLs, the
             verdict, the AX text) (machinery: where the variant's own code runs); and the
             collector (within the others). In mean ms a step on each side, as a share of
             the difference, and as what each group adds to today's step.
  today      (--today FACTOR,...) every variant but 0 with these factors held at today's
             option (option 0), its other factors as drawn (hold_today): what a variant costs
             without what those factors draw or do. The ids and the other factors' values
             are the catalogue's; the sites measured are not (no id of the catalogue is
             such a site), so the figures answer "what if", not "what does variant K cost".

    python benchmarks/bench_variants.py [--apps shopping,forum] [--rounds 5] [--clock cpu] [--hot] [--out FILE]
    python benchmarks/bench_variants.py --apps forum --clock cpu --sample 20 --rounds 2 --no-far   # 2-3 min at a load of 7
    python benchmarks/bench_variants.py --apps booking,cms --clock cpu --sample 12 --aa 2 --rounds 2 --no-far --pair page
    python benchmarks/bench_variants.py --clock cpu --sample 12 --aa 2 --rounds 2 --warm 1 --no-far --pair page --phases
    python benchmarks/bench_variants.py --clock cpu --sample 12 --aa 2 --rounds 2 --warm 1 --no-far --pair page --phases \
        --today banner,nav_position,menu,breadcrumbs,list_style,field_markers,field_errors,pagination,filters,confirm_step,form_steps,sign_in,minimum_stay,cancellation,comment_moderation,post_approval,guest_checkout
    python benchmarks/bench_variants.py --screenshots docs/img --apps shopping [--variant 54]   # two PNGs an app

Timings on a shared machine are noisy; compare the ratios, not the absolute figures.
"""
from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path
from typing import Any

from common import load_now, parser, percentile

import simweb
from simweb.runtime.variants import FILTER_DISCLOSED, SHEETS_PATH, catalogue, jinja_for

APPS = ("shopping", "forum", "issues", "cms", "booking")
_NAME = re.compile(r"'((?:[^'\\]|\\.)*)'")


def _flow_option(o: Any) -> bool:
    """Whether a factor's option changes the oracle's steps: a policy, a confirmation step,
    a multi-step form, a signed-out start, a menu to open or a filter form behind a
    disclosure (a sign-in is four more, cheap, steps, a menu or a closed filter form one
    more)."""
    return bool(o.policies or o.confirm or o.steps or o.login or o.menu or o.filters in FILTER_DISCLOSED)


def _keeps_flows(app: str) -> list[bool]:
    """Per factor of ``app``'s catalogue: whether any of its options changes the oracle's
    steps (:func:`_flow_option`)."""
    return [any(_flow_option(o) for o in f.options) for f in catalogue(app).factors]


def flows_changed(app: str, k: int) -> list[str]:
    """The factors whose value in variant ``k`` is not today's and changes the oracle's
    steps (another policy, a confirmation step, a sign-in...)."""
    cat = catalogue(app)
    return [f.name for f, i in zip(cat.factors, cat.choice(k)) if i != 0 and _flow_option(f.options[i])]


def sample_variants(app: str, n: int, every: bool = False) -> list[int]:
    """``n`` variant ids of ``app`` drawn over the whole catalogue by a hash of the app's
    name and a counter: the same ids every run. By default only those that keep today's
    policies, no confirmation step, one-step forms, a signed-in start, the bar shown and the
    filter form in view (the oracle takes today's steps on them, so its steps pair by index);
    ``every``: any variant (steps pair by page, :func:`page_paired`)."""
    import hashlib

    cat = catalogue(app)
    keep = _keeps_flows(app)
    out: list[int] = []
    i = 0
    while len(out) < n and i < 1000 * n:
        i += 1
        k = 1 + int(hashlib.sha256(f"{app}/sample/{i}".encode()).hexdigest(), 16) % (cat.count - 1)
        if k not in out and (every or all(c == 0 for c, kept in zip(cat.choice(k), keep) if kept)):
            out.append(k)
    return out


def far_variant(app: str) -> int:
    """The first test variant whose every factor differs from today's site, but the
    policies, the confirmation step, multi-step forms, the sign-in and the menu, which stay
    today's: those change what the oracle does (a confirmation page or a form's second page
    is one more step, a minimum stay another instance), and the cost is compared on the
    same steps. When no variant of the catalogue changes every other factor (booking's
    first 100,000 ids since the menu factor), the first test variant that changes the most."""
    cat = catalogue(app)
    same = _keeps_flows(app)
    best, most = 0, -1
    for k in range(1, cat.count):
        choice = cat.choice(k)
        if any(i != 0 for i, keep in zip(choice, same) if keep) or cat.split(k) != "test":
            continue
        changed = sum(1 for i, keep in zip(choice, same) if not keep and i != 0)
        if changed == len(same) - sum(same):
            return k
        if changed > most:
            best, most = k, changed
    if not best:
        raise RuntimeError(f"{app}: no test variant keeps today's flows")
    return best


def _lines(axtree: str) -> list[str]:
    return [ln.strip() for ln in axtree.splitlines() if ln.strip()]


def pages(app: str, variant: int) -> list[str]:
    """The AX trees of the start and end page of every template's oracle run at seed 0."""
    env = simweb.make(app, variant=variant)
    out = []
    for tid in env.app.tasks:
        obs, _ = env.reset(seed=0, options={"task": tid})
        out.append(obs["axtree"])
        for a in env.oracle_plan()[:-1]:   # the last action is the answer: no new page
            obs, *_ = env.step(a)
        out.append(obs["axtree"])
    return out


def diversity(app: str, k: int) -> dict[str, Any]:
    a, b = pages(app, 0), pages(app, k)
    line_share, name_share = [], []
    for ta, tb in zip(a, b):
        la, lb = set(_lines(ta)), set(_lines(tb))
        line_share.append(len(la ^ lb) / max(1, len(la | lb)))
        na = {m for ln in la for m in _NAME.findall(ln) if m}
        nb = {m for ln in lb for m in _NAME.findall(ln) if m}
        name_share.append(len(na ^ nb) / max(1, len(na | nb)))

    def structure(tree: str) -> str:
        return "\n".join(_NAME.sub("''", ln) for ln in _lines(tree))

    return {"pages": len(a), "distinct_ax_lines": sum(line_share) / len(line_share),
            "distinct_names": sum(name_share) / len(name_share),
            "identical_pages": sum(1 for ta, tb in zip(a, b) if ta == tb),
            "distinct_structures": len({structure(t) for t in a} ^ {structure(t) for t in b})}


#: The clock of the cost figures: wall time, or this process's CPU time (--clock cpu), which
#: other processes' load on a shared machine does not inflate by preempting a step.
CLOCK = time.perf_counter


def step_kind(browser: Any, html: str | None, page: Any) -> str:
    """What a step did to the page, from the browser's page cache before (``html``, ``page``)
    and after it: ``render`` (the site served a page: a navigation, a form's submission, a
    post and its redirect, the same page again), ``reparse`` (the same HTML, another parse:
    a ``<details>`` opened or closed, as a menu or a filter form behind a disclosure) or
    ``field`` (neither: a field filled, an option selected, a box checked; the AX tree is
    the same page's with other values)."""
    if browser._html is not html:
        return "render"
    return "reparse" if browser._page is not page else "field"


def step_key(action: str, kind: str, before: str, after: str) -> str:
    """A step's key for pairing by page: what it did (``kind``, :func:`step_kind`, and the
    action's name: click, fill, goto...) and where (the page it starts on and the page it
    lands on, the info's ``page``: the route's name, not the URL, which holds ids and a
    variant's URL scheme). A navigation's cost is mostly the page it lands on (the
    transition, the render, the parse); a field's is the page it is on (its AX tree)."""
    return f"{kind} {action.split('(', 1)[0]} {before}>{after}"


def near_key(key: str) -> str:
    """The nearest-equivalent key: the kind of step and the page it lands on, whatever the
    action and the page it left (a two-step form's second submission, from the form-step
    page, lands on the page today's one submission lands on; a confirmation page's "yes"
    lands where today's confirmed action lands)."""
    kind, _, route = key.split(" ", 2)
    return f"{kind} {route.split('>', 1)[1]}"


def _median(xs: list[float]) -> float:
    return percentile(xs, 50)


def page_paired(t0: dict[str, list[float]], tk: dict[str, list[float]]) -> dict[str, Any]:
    """Pair variant ``k``'s steps with variant 0's by page (``t0``, ``tk``: step key ->
    times, :func:`step_key`). ``ratio``: the median over the keys both sides took of (the
    key's median time on ``k`` / on variant 0); ``near_ratio``: the same over those keys and
    ``k``'s other keys paired with variant 0's steps of the same :func:`near_key` (pooled);
    ``total_ratio``: ``k``'s steps on shared keys priced at ``k``'s medians over the same
    steps priced at variant 0's (weighted by ``k``'s counts: what a run's throughput sees of
    them); ``paired_share`` and ``near_share``: the share of ``k``'s steps that found a
    partner; ``unpaired``: ``k``'s keys with no partner (its own steps: a sign-in, a
    disclosure opened, a confirmation page), with their count and median time."""
    med = _median
    near0: dict[str, list[float]] = {}
    for key, xs in t0.items():
        near0.setdefault(near_key(key), []).extend(xs)
    keys: dict[str, dict[str, Any]] = {}
    ratios, near_ratios, unpaired = [], [], {}
    num = den = 0.0
    n_all = sum(len(xs) for xs in tk.values())
    n_exact = n_near = 0
    for key in sorted(tk):
        xs = tk[key]
        if key in t0 and med(t0[key]) > 0:
            r = med(xs) / med(t0[key])
            ratios.append(r)
            near_ratios.append(r)
            num += len(xs) * med(xs)
            den += len(xs) * med(t0[key])
            n_exact += len(xs)
            keys[key] = {"n": len(xs), "n0": len(t0[key]), "ms": round(med(xs) * 1e3, 4),
                         "ms0": round(med(t0[key]) * 1e3, 4), "ratio": round(r, 3)}
        elif near_key(key) in near0 and med(near0[near_key(key)]) > 0:
            pool = near0[near_key(key)]
            r = med(xs) / med(pool)
            near_ratios.append(r)
            n_near += len(xs)
            keys[key] = {"n": len(xs), "n0": len(pool), "ms": round(med(xs) * 1e3, 4),
                         "ms0": round(med(pool) * 1e3, 4), "ratio": round(r, 3), "near": near_key(key)}
        else:
            unpaired[key] = {"n": len(xs), "ms": round(med(xs) * 1e3, 4)}
    return {"ratio": round(med(ratios), 3) if ratios else None,
            "near_ratio": round(med(near_ratios), 3) if near_ratios else None,
            "total_ratio": round(num / den, 3) if den else None,
            "keys": len(ratios), "near_keys": len(near_ratios) - len(ratios),
            "paired_share": round(n_exact / max(1, n_all), 3),
            "near_share": round((n_exact + n_near) / max(1, n_all), 3),
            "only0": sorted(k for k in t0 if k not in tk),
            "unpaired": unpaired, "by_key": keys}


def content_paired(t0: dict[str, list[float]], tk: dict[str, list[float]],
                   s0: dict[str, list[tuple[int, int]]], sk: dict[str, list[tuple[int, int]]]) -> dict[str, Any]:
    """How much more page the variant's steps show, by page, beside what they cost (the
    keys both sides took, as ``ratio`` of :func:`page_paired`): ``ax_ratio`` and
    ``html_ratio``, the median over keys of the page's AX-tree (the observation's text) and
    HTML size on the variant over on variant 0; ``per_ax_ratio`` and ``per_html_ratio``, the
    median over keys of the key's time ratio over its AX-size and its HTML-size ratio. A
    step's render and parse grow with the HTML (a variant that draws a banner, a trail or
    a menu pays for them as today's site would), its transition and verdict do not: a
    variant with no machinery of its own would read below 1 over the HTML size, so these
    bound the machinery's share loosely; :class:`Phases` measures it."""
    med = _median
    ax, html, per_ax, per_html = [], [], [], []
    for key, xs in tk.items():
        if key not in t0 or med(t0[key]) <= 0:
            continue
        a0, ak = med([a for a, _ in s0[key]]), med([a for a, _ in sk[key]])
        h0, hk = med([h for _, h in s0[key]]), med([h for _, h in sk[key]])
        if a0 <= 0 or h0 <= 0:
            continue
        ax.append(ak / a0)
        html.append(hk / h0)
        per_ax.append(med(xs) / med(t0[key]) / (ak / a0))
        per_html.append(med(xs) / med(t0[key]) / (hk / h0))
    return {"ax_ratio": round(med(ax), 3) if ax else None, "html_ratio": round(med(html), 3) if html else None,
            "per_ax_ratio": round(med(per_ax), 3) if per_ax else None,
            "per_html_ratio": round(med(per_html), 3) if per_html else None}


class Phases:
    """Where a step's time goes (``--phases``): wrappers installed for the run time the
    page's render (``App._render_resolved``), the Jinja template's own render within it
    (``jinja2.Template.render``), the multi-step split within it (``App._split_forms``),
    the page's parse (``simweb.web.axtree._parse_page``, in the observation) and the
    collector (``gc.callbacks``; a collection runs inside whatever allocated, so its time
    is inside the phase it interrupted too). :meth:`take` returns what the last step spent
    in each and starts the next step's count. The wrappers cost both sides the same few
    calls a step."""

    NAMES = ("render", "template", "split", "parse", "gc")

    def __init__(self, clock: Any) -> None:
        self.clock = clock
        self.now = dict.fromkeys(self.NAMES, 0.0)
        self._undo: list[tuple[Any, str, Any]] = []
        self._gc_start = 0.0

    def _wrap(self, owner: Any, attr: str, name: str) -> None:
        inner = getattr(owner, attr)
        clock, now = self.clock, self.now

        def timed(*args: Any, **kwargs: Any) -> Any:
            t = clock()
            try:
                return inner(*args, **kwargs)
            finally:
                now[name] += clock() - t

        self._undo.append((owner, attr, inner))
        setattr(owner, attr, timed)

    def _gc(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._gc_start = self.clock()
        else:
            self.now["gc"] += self.clock() - self._gc_start

    def __enter__(self) -> Phases:
        import gc

        import jinja2

        from simweb.runtime.app import App
        from simweb.web import axtree

        self._wrap(App, "_render_resolved", "render")
        self._wrap(jinja2.Template, "render", "template")
        self._wrap(App, "_split_forms", "split")
        self._wrap(axtree, "_parse_page", "parse")
        gc.callbacks.append(self._gc)
        return self

    def __exit__(self, *exc: Any) -> None:
        import gc

        gc.callbacks.remove(self._gc)
        for owner, attr, inner in reversed(self._undo):
            setattr(owner, attr, inner)
        self._undo.clear()

    def take(self) -> dict[str, float]:
        out = dict(self.now)
        for name in self.NAMES:
            self.now[name] = 0.0
        return out


def phase_paired(t0: dict[str, list[float]], tk: dict[str, list[float]],
                 p0: dict[str, list[dict[str, float]]], pk: dict[str, list[dict[str, float]]]) -> dict[str, Any]:
    """Where the difference goes on the keys both sides took (``t0``/``tk``: step key ->
    times; ``p0``/``pk``: step key -> each step's :class:`Phases` record): per phase, the
    mean over each key's steps, weighted by the variant's count of the key (as
    ``total_ratio``), in ms a step on each side, and its share of the step's difference.
    The phases add up to the step: ``template`` (the Jinja template's render) and
    ``parse`` (the page's), which grow with the page a variant draws; ``hooks`` (the rest
    of the page's render: its context, and on a variant its title, messages and sign-in
    link), ``split`` (the multi-step form split) and ``other`` (the rest of the step: the
    transition, URLs, the verdict, the AX tree's text), where the variant's own machinery
    runs. ``content`` and ``machinery`` sum those two groups. Means, not medians, so that
    they add up; the collector's time (``gc``) is within the others."""
    def mean(xs: list[float]) -> float:
        return sum(xs) / len(xs)

    tot: dict[str, dict[str, float]] = {side: dict.fromkeys(("step",) + Phases.NAMES, 0.0) for side in ("v0", "k")}
    n = 0
    for key, xs in tk.items():
        if key not in t0:
            continue
        n += len(xs)
        for side, times, recs in (("v0", t0[key], p0[key]), ("k", xs, pk[key])):
            tot[side]["step"] += len(xs) * mean(times)
            for name in Phases.NAMES:
                tot[side][name] += len(xs) * mean([r[name] for r in recs])
    if not n:
        return {}
    out: dict[str, Any] = {}
    diff = tot["k"]["step"] - tot["v0"]["step"]
    for side in ("v0", "k"):
        t = tot[side]
        t["hooks"] = t["render"] - t["template"] - t["split"]
        t["other"] = t["step"] - t["render"] - t["parse"]
        t["content"] = t["template"] + t["parse"]
        t["machinery"] = t["hooks"] + t["split"] + t["other"]
    for name in PHASE_ROWS:
        a, b = tot["v0"][name], tot["k"][name]
        out[name] = {"variant0_ms": round(a / n * 1e3, 4), "variant_ms": round(b / n * 1e3, 4),
                     "share": round((b - a) / diff, 3) if diff else None}
    out["step"]["mean_ratio"] = round(tot["k"]["step"] / tot["v0"]["step"], 3)
    # each group's difference over today's step: what it adds to the step's ratio
    for name in ("content", "machinery", "gc"):
        out[name]["of_step0"] = round((tot["k"][name] - tot["v0"][name]) / tot["v0"]["step"], 3)
    return out


#: The rows phase_paired reports (the step, its parts, their two groups, the collector).
PHASE_ROWS = ("step", "template", "parse", "hooks", "split", "other", "content", "machinery", "gc")


def plans_apart(envs: dict[str, Any], runs: list[tuple[str, int]]) -> dict[tuple[str, str, int], list[str]]:
    """Each side's oracle plan (final action left out) for each (template, seed) of
    ``runs``, found in a child process (``os.fork``) and sent back through a pipe. On a
    variant that changes the flows (a confirmation step, a menu, a two-step form...) the
    plan is found by running it on a copy of the start (:func:`simweb.episodes.episode.
    confirmed_plan`), which parses and renders the very pages the timed steps then show and
    fills the variant's memos with their text: found in this process, those steps would
    find their pages parsed and their text rewritten (0 parse-cache misses a step on such a
    variant). The child's caches go with it."""
    import gc
    import os

    rd, wr = os.pipe()
    pid = os.fork()
    if pid == 0:   # the child: every plan, as JSON, then exit without running the parent's cleanup
        code = 1
        try:
            os.close(rd)
            out = []
            for v, env in envs.items():
                for tid, seed in runs:
                    env.reset(seed=seed, options={"task": tid})
                    out.append([v, tid, seed, env.oracle_plan()[:-1]])
            with os.fdopen(wr, "wb") as f:
                f.write(json.dumps(out).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(wr)
    with os.fdopen(rd, "rb") as f:
        data = f.read()
    _, status = os.waitpid(pid, 0)
    if status != 0 or not data:
        raise RuntimeError(f"the child that finds the oracle plans failed (status {status})")
    # The fork left this process's pages shared copy-on-write: touch the collector's objects
    # now (untimed) rather than in the first timed steps.
    gc.collect()
    return {(v, tid, seed): plan for v, tid, seed, plan in json.loads(data)}


def cost(app: str, k: int, rounds: int, base: Any = None, seed0: int = 10_000, warm: int = 0,
         phases: Phases | None = None) -> dict[str, Any]:
    """Variant ``k``'s step, fork and cold reset against variant 0's (``base``, an
    environment of variant 0, or a new one), interleaved in this run; ``k`` = 0 measures
    variant 0 against a second environment of it (the noise floor). Each new instance's
    seed counts up from ``seed0`` (a cold reset is an instance not reset before).
    ``warm``: first run that many untimed oracle episodes per template on each side, at
    seeds no timed episode uses (a training run's steady state: the variant's rewrites
    of world text it has shown before are memoised; the timed instances are still new).
    ``phases``: an installed :class:`Phases`, whose records of the steps give
    ``step.page.phases`` (:func:`phase_paired`)."""
    envs = {"v0": base if base is not None else simweb.make(app),
            "k": simweb.make(app, variant=k) if k else simweb.make(app)}
    fresh = catalogue(app).count - 1   # a variant this process has not built yet
    build = 0.0
    if fresh not in envs["k"].app.__dict__.get("_variant_jinja", {}):
        t0 = CLOCK()
        jinja_for(envs["k"].app, fresh)
        build = CLOCK() - t0
    tasks = list(envs["v0"].app.tasks)
    times: dict[str, dict[str, list[float]]] = {v: {"step": [], "fork": [], "cold_reset": []} for v in envs}
    plans: dict[str, list[int]] = {v: [] for v in envs}   # where each episode's steps end
    by_key: dict[str, dict[str, list[float]]] = {v: {} for v in envs}   # step key -> times (page pairing)
    keyseq: dict[str, list[str]] = {v: [] for v in envs}   # every step's key, in order
    # step key -> (AX-tree characters, HTML characters) of the page the step left shown
    sizes: dict[str, dict[str, list[tuple[int, int]]]] = {v: {} for v in envs}
    parts: dict[str, dict[str, list[dict[str, float]]]] = {v: {} for v in envs}   # step key -> Phases records
    from simweb.web.browsing import parse_cached

    for i in range(warm):
        for tid in tasks:
            for env in envs.values():
                env.reset(seed=900_000 + i, options={"task": tid})
                for a in env.oracle_plan()[:-1]:
                    env.step(a)
    runs = [(r, tid, seed0 + 1 + r * len(tasks) + i)   # an even number of rounds: each side goes first as often
            for r in range(rounds + rounds % 2) for i, tid in enumerate(tasks)]
    plan_of = plans_apart(envs, [(tid, seed) for _, tid, seed in runs])
    for r, tid, seed in runs:
        for v in (("v0", "k") if r % 2 == 0 else ("k", "v0")):   # interleaved, alternating order
            env = envs[v]
            # each episode starts with an empty parse cache: no side parses a page the
            # other side just parsed (in the A/A control the two sides' pages are the same)
            parse_cached.cache_clear()
            t = CLOCK()
            # the same instance on both sides (the same plan); what one side leaves memoised
            # for the other (the task's parameters) is balanced by alternating who goes first
            _, info = env.reset(seed=seed, options={"task": tid})
            times[v]["cold_reset"].append(CLOCK() - t)
            t = CLOCK()
            child = env.fork()
            times[v]["fork"].append(CLOCK() - t)
            del child
            here = info["page"]
            for a in plan_of[v, tid, seed]:
                browser = env.browser
                html, page = browser._html, browser._page
                if phases is not None:
                    phases.take()
                t = CLOCK()
                obs, _, _, _, info = env.step(a)
                dt = CLOCK() - t
                times[v]["step"].append(dt)
                key = step_key(a, step_kind(browser, html, page), here, info["page"])
                by_key[v].setdefault(key, []).append(dt)
                sizes[v].setdefault(key, []).append((len(obs["axtree"]), len(obs["html"])))
                keyseq[v].append(key)
                if phases is not None:
                    parts[v].setdefault(key, []).append(phases.take())
                here = info["page"]
            plans[v].append(len(times[v]["step"]))

    def med(xs: list[float]) -> float:
        xs = sorted(xs)
        return xs[len(xs) // 2]

    out: dict[str, Any] = {"template_build_s": round(build, 4)}
    for what in ("step", "fork", "cold_reset"):
        m0, mk = med(times["v0"][what]), med(times["k"][what])
        out[what] = {"variant0_ms": round(m0 * 1e3, 4), "variant_ms": round(mk * 1e3, 4),
                     "ratio": round(mk / m0, 3), "n": len(times["k"][what]), "n0": len(times["v0"][what])}
    # Paired: the two sides take the same steps (the same instance, the same plan) when the
    # variant keeps today's policies and flows; then the median of each step's ratio (its
    # time on the variant over the same step's on variant 0, run next to it) is free of
    # the step mix, which moves a median of many kinds of steps from run to run.
    # By index only when both sides took the same kinds of steps on the same pages in the
    # same order (a variant that keeps today's flows); else the pairs would be misaligned.
    if plans["v0"] == plans["k"] and keyseq["v0"] == keyseq["k"]:
        pairs = sorted(b / a for a, b in zip(times["v0"]["step"], times["k"]["step"]) if a > 0)
        out["step"]["paired_ratio"] = round(pairs[len(pairs) // 2], 3)
        # what a training run sees: the time of all the steps on the variant over the same
        # steps' on variant 0 (a navigation weighs what it costs, a typed field little)
        out["step"]["total_ratio"] = round(sum(times["k"]["step"]) / sum(times["v0"]["step"]), 3)
    # By page: any variant, whatever steps its oracle takes (page_paired)
    page = out["step"]["page"] = page_paired(by_key["v0"], by_key["k"])
    page.update(content_paired(by_key["v0"], by_key["k"], sizes["v0"], sizes["k"]))
    if phases is not None:
        page["phases"] = phase_paired(by_key["v0"], by_key["k"], parts["v0"], parts["k"])
    # What the same tasks cost in all (the variant's own steps included): all of the
    # variant's steps over all of variant 0's, the same instances; and the steps an episode
    # takes on each side. Work done once an episode (the signed-in user's data, read by the
    # first page that shows it) lands on whichever step comes first: on a signed-out start,
    # the sign-in's page, so the steps after it read cheaper by page than today's.
    page["episode_ratio"] = round(sum(times["k"]["step"]) / sum(times["v0"]["step"]), 3)
    page["steps_per_episode"] = round(len(times["k"]["step"]) / len(plans["k"]), 2)
    page["steps_per_episode0"] = round(len(times["v0"]["step"]) / len(plans["v0"]), 2)
    return out


def _distribution(ratios: list[float]) -> dict[str, Any]:
    xs = sorted(ratios)
    if not xs:   # no variant drawn (today's flows are rare in some catalogues: booking's)
        return {"n": 0}
    return {"n": len(xs), "median": round(percentile(xs, 50), 3), "p90": round(percentile(xs, 90), 3),
            "max": round(xs[-1], 3), "min": round(xs[0], 3),
            "within_1.10": round(sum(1 for x in xs if x <= 1.10) / len(xs), 3)}


def sample(app: str, n: int, rounds: int, aa: int, warm: int = 0, every: bool = False,
           phases: Phases | None = None) -> dict[str, Any]:
    """The cost of ``n`` sampled variants (:func:`sample_variants`; ``every``: over the whole
    catalogue) and ``aa`` runs of variant 0 against itself, each against one environment of
    variant 0 in the same run, interleaved; the runs themselves alternate (A/A runs spread
    among the variants'). The step is given by index where the two sides took the same steps
    (``step_paired_ratio``) and by page for every variant (``step_page_*``)."""
    base = simweb.make(app)
    ids = sample_variants(app, n, every)
    order: list[int] = list(ids)
    for j in range(aa):   # the A/A runs spread through the run, not all first or last
        order.insert((j + 1) * len(order) // (aa + 1), 0)
    per: list[dict[str, Any]] = []
    seed0 = 20_000
    loads = [load_now()[0]]
    for k in order:
        c = cost(app, k, rounds, base=base, seed0=seed0, warm=warm, phases=phases)
        seed0 += 1000   # each run on instances no run has reset before
        loads.append(load_now()[0])
        per.append({"variant": k, "factors": catalogue(app).values(k) if k else {},
                    "flows_changed": flows_changed(app, k),
                    **{w: c[w] for w in ("step", "fork", "cold_reset")}})
        pg = c["step"]["page"]
        print(f"  {app} variant {k:6}: step x{c['step']['ratio']} (paired x{c['step'].get('paired_ratio')}, "
              f"total x{c['step'].get('total_ratio')}; by page x{pg['ratio']} over {pg['keys']} keys, "
              f"{pg['paired_share']:.0%} of its steps paired, near x{pg['near_ratio']} {pg['near_share']:.0%}, "
              f"total x{pg['total_ratio']}; episode x{pg['episode_ratio']}), fork x{c['fork']['ratio']}, "
              f"cold reset x{c['cold_reset']['ratio']}", flush=True)
    variants = [p for p in per if p["variant"]]
    controls = [p for p in per if not p["variant"]]
    paired = [p["step"]["paired_ratio"] for p in variants if "paired_ratio" in p["step"]]
    totals = [p["step"]["total_ratio"] for p in variants if "total_ratio" in p["step"]]
    page = {w: [p["step"]["page"][w] for p in variants if p["step"]["page"][w] is not None]
            for w in ("ratio", "near_ratio", "total_ratio", "episode_ratio", "paired_share", "near_share",
                      "ax_ratio", "html_ratio", "per_ax_ratio", "per_html_ratio")}
    # Where the difference goes (--phases): per phase, the median over the variants of its
    # ms a step on each side and of its share of the step's difference
    split_up: dict[str, Any] = {}
    with_phases = [p["step"]["page"]["phases"] for p in variants if p["step"]["page"].get("phases")]
    if with_phases:
        for name in PHASE_ROWS:
            shares = [ph[name]["share"] for ph in with_phases if ph[name]["share"] is not None]
            split_up[name] = {"variant0_ms": round(percentile([ph[name]["variant0_ms"] for ph in with_phases], 50), 4),
                              "variant_ms": round(percentile([ph[name]["variant_ms"] for ph in with_phases], 50), 4),
                              "share": round(percentile(shares, 50), 3) if shares else None}
        split_up["step"]["mean_ratio"] = _distribution([ph["step"]["mean_ratio"] for ph in with_phases])
        for name in ("content", "machinery", "gc"):   # what each adds to the step's ratio, over the variants
            split_up[name]["of_step0"] = _distribution([1 + ph[name]["of_step0"] for ph in with_phases])
    # Per step key, over the variants: the median of their ratios, where the cost goes
    keyed: dict[str, list[float]] = {}
    for p in variants:
        for key, row in p["step"]["page"]["by_key"].items():
            if "near" not in row:
                keyed.setdefault(key, []).append(row["ratio"])
    by_key = {key: {"variants": len(xs), "median": round(percentile(xs, 50), 3), "max": round(max(xs), 3)}
              for key, xs in sorted(keyed.items(), key=lambda kv: -percentile(kv[1], 50))}
    return {"rounds": rounds, "warm": warm, "every": every, "load": loads, "variants": per,
            **{f"{w}_ratio": _distribution([p[w]["ratio"] for p in variants]) for w in ("step", "fork", "cold_reset")},
            **({"step_paired_ratio": _distribution(paired)} if paired else {}),
            **({"step_total_ratio": _distribution(totals)} if totals else {}),
            **{f"step_page_{w}": _distribution(xs) for w, xs in page.items() if xs},
            "step_page_by_key": by_key,
            **({"step_page_phases": split_up} if split_up else {}),
            **({f"aa_{w}_ratio": [p[w]["ratio"] for p in controls] for w in ("step", "fork", "cold_reset")}
               if controls else {}),
            **({"aa_step_paired_ratio": [p["step"].get("paired_ratio") for p in controls],
                "aa_step_total_ratio": [p["step"].get("total_ratio") for p in controls],
                **{f"aa_step_page_{w}": [p["step"]["page"][w] for p in controls]
                   for w in ("ratio", "near_ratio", "total_ratio", "episode_ratio", "paired_share")}}
               if controls else {})}


def hot_step(app: str, k: int, repeats: int = 12) -> dict[str, Any]:
    """The step without what the loop around it adds (caches other work has evicted, the
    collector, the parse cache): every oracle step of every template at one seed, timed as
    the best of ``repeats`` runs, each on a fresh fork with the parse cache emptied and the
    collector off; variant 0 and ``k`` take the same step in turn. Summed over the steps."""
    import gc

    from simweb.web.browsing import parse_cached

    envs = {0: simweb.make(app), k: simweb.make(app, variant=k)}
    total = {v: 0.0 for v in envs}
    steps = 0
    enabled = gc.isenabled()
    gc.disable()
    try:
        for tid in envs[0].app.tasks:
            plans = {}
            for v, env in envs.items():
                env.reset(seed=10_001, options={"task": tid})
                plans[v] = env.oracle_plan()[:-1]
            for i in range(len(plans[0])):
                steps += 1
                for v, env in envs.items():
                    best = float("inf")
                    for _ in range(repeats):
                        child = env.fork()
                        parse_cached.cache_clear()
                        t = time.perf_counter()
                        child.step(plans[v][i])
                        best = min(best, time.perf_counter() - t)
                    total[v] += best
                    env.step(plans[v][i])
    finally:
        if enabled:
            gc.enable()
    return {"steps": steps, "variant0_ms": round(total[0] / steps * 1e3, 4),
            "variant_ms": round(total[k] / steps * 1e3, 4), "ratio": round(total[k] / total[0], 3)}


def screenshots(app: str, k: int, folder: Path) -> list[str]:
    """PNG screenshots of the home page (signed out) of variant 0 and variant ``k``, drawn
    by Chromium from the in-process HTML with the app's stylesheet inlined."""
    from importlib import resources

    from playwright.sync_api import sync_playwright

    from simweb.serving.browser import launch_chromium

    folder.mkdir(parents=True, exist_ok=True)
    static = resources.files(simweb.make(app).app.definition.package) / "static"
    files = []
    with sync_playwright() as pw:
        browser = launch_chromium(pw)
        page = browser.new_page(viewport={"width": 1000, "height": 700})
        for v in (0, k):
            env = simweb.make(app, variant=v)
            env.reset(seed=0, options={"task": None})
            html = env.browser.html()

            def inline(m: re.Match[str]) -> str:
                href = m.group(1)   # the app's stylesheet, or the variant's (served by name)
                css = catalogue(app).stylesheet(href) if href.startswith(SHEETS_PATH) else None
                return "<style>" + (css if css is not None else (static / href[len("/static/"):]).read_text(encoding="utf-8")) + "</style>"

            html = re.sub(r'<link rel="stylesheet"(?: id="[^"]*")? href="(/static/[^"]+)">', inline, html)
            page.set_content(html)
            path = folder / f"variants-{app}-{v}.png"
            page.screenshot(path=str(path))
            files.append(str(path))
        browser.close()
    return files


def hold_today(names: set[str]) -> None:
    """From now on in this process, every variant but 0 takes today's option (option 0) of
    the factors ``names``, its other factors as its id draws them (a benchmark's "what if":
    Catalogue.choice is replaced; call it before any site is built)."""
    from simweb.runtime.variants import Catalogue

    drawn = Catalogue.choice

    def choice(self: Catalogue, variant: int) -> tuple[int, ...]:
        c = drawn(self, variant)
        return c if not variant else tuple(0 if f.name in names else i for f, i in zip(self.factors, c))

    Catalogue.choice = choice   # type: ignore[method-assign]


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--apps", default=",".join(APPS))
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--screenshots", type=Path, default=None, help="write two screenshots per app here and stop")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="time the costs by wall clock or by this process's CPU time (steadier on a loaded machine)")
    ap.add_argument("--hot", action="store_true", help="also time each step as the best of 12 runs on a fresh "
                    "fork (parse cache emptied, collector off): the step's own work, without the loop's cache effects")
    ap.add_argument("--variant", type=int, default=None, help="the variant to compare with 0 (default: each app's "
                    "first test variant whose every factor differs)")
    ap.add_argument("--sample", type=int, default=0, help="also measure N variants drawn from the catalogue (today's "
                    "policies and flows) and report the distribution of their ratios")
    ap.add_argument("--pair", choices=("index", "page"), default="index",
                    help="with --sample: index draws only variants that keep today's flows (their steps pair by "
                         "index, and by page); page draws from the whole catalogue, flow-changing variants "
                         "included, their steps paired by page (the kind of step and the pages it leaves and "
                         "lands on)")
    ap.add_argument("--aa", type=int, default=2, help="with --sample: runs of variant 0 against itself (noise floor)")
    ap.add_argument("--no-far", action="store_true", help="with --sample: skip the heaviest variant's diversity and cost")
    ap.add_argument("--warm", type=int, default=0,
                    help="with --sample: untimed oracle episodes per template on each side first (a run's steady "
                         "state: rewrites of world text shown before are memoised; the timed instances are new)")
    ap.add_argument("--phases", action="store_true",
                    help="with --sample: time the render, the multi-step split, the parse and the collector "
                         "within each step (Phases) and report where the difference goes")
    ap.add_argument("--today", default="", metavar="FACTOR,...",
                    help="hold these factors at today's option on every variant but 0 (hold_today): what the "
                         "variants cost without what those factors draw or do")
    args = ap.parse_args()
    held = set(args.today.split(",")) if args.today else set()
    if held:
        known = {f.name for app in args.apps.split(",") for f in catalogue(app).factors}
        if held - known:
            ap.error(f"--today: no factor {', '.join(sorted(held - known))} in {args.apps}")
        hold_today(held)
    global CLOCK
    CLOCK = time.process_time if args.clock == "cpu" else time.perf_counter
    results: dict[str, Any] = {}
    for app in args.apps.split(","):
        if args.sample and args.no_far:
            k = 0   # the sample alone
        else:
            k = far_variant(app) if args.variant is None else catalogue(app).check(args.variant)
        if args.screenshots:
            print(app, screenshots(app, k, args.screenshots))
            continue
        res: dict[str, Any] = {"clock": args.clock, **({"today": sorted(held)} if held else {})}
        if not (args.sample and args.no_far):
            res.update({"variant": k, "factors": catalogue(app).values(k), **diversity(app, k),
                        "cost": cost(app, k, args.rounds)})
            if args.hot:
                res["hot_step"] = hot_step(app, k)
            c = res["cost"]
            if "paired_ratio" in c["step"]:
                print(f"{app:9} variant {k:5}: step, paired by step: x{c['step']['paired_ratio']}, "
                      f"all steps' time: x{c['step']['total_ratio']}")
            print(f"{app:9} variant {k:5}: distinct AX lines {res['distinct_ax_lines']:.0%}, names "
                  f"{res['distinct_names']:.0%}, identical pages {res['identical_pages']}/{res['pages']}; "
                  f"step x{c['step']['ratio']}, fork x{c['fork']['ratio']}, cold reset x{c['cold_reset']['ratio']}, "
                  f"template build {c['template_build_s']:.2f} s"
                  + (f"; hot step x{res['hot_step']['ratio']}" if args.hot else ""), flush=True)
        if args.sample:
            if args.phases:
                with Phases(CLOCK) as phases:
                    smp = res["sample"] = sample(app, args.sample, args.rounds, args.aa, args.warm,
                                                 args.pair == "page", phases)
            else:
                smp = res["sample"] = sample(app, args.sample, args.rounds, args.aa, args.warm, args.pair == "page")
            for w in ("step", "step_paired", "step_total", "step_page", "step_page_near", "step_page_total",
                      "step_page_episode", "fork", "cold_reset"):
                if not smp.get(f"{w}_ratio", {}).get("n"):
                    continue
                d = smp[f"{w}_ratio"]
                aa = smp.get(f"aa_{w}_ratio", [])
                print(f"{app:9} {d['n']} sampled variants, {w}: median x{d['median']}, p90 x{d['p90']}, "
                      f"max x{d['max']}, within x1.10: {d['within_1.10']:.0%}"
                      + (f"; variant 0 against itself x{', x'.join(map(str, aa))}" if aa else ""), flush=True)
            if "step_page_paired_share" in smp:
                sh, nsh = smp["step_page_paired_share"], smp["step_page_near_share"]
                print(f"{app:9} share of a variant's steps paired by page: median {sh['median']:.0%} "
                      f"(min {sh['min']:.0%}), with the nearest equivalent {nsh['median']:.0%} "
                      f"(min {nsh['min']:.0%}); load {smp['load'][0]}-{max(smp['load'])}", flush=True)
                # where the cost goes: the step keys most over variant 0 in half the variants or more
                drawn = sum(1 for v in smp["variants"] if v["variant"])
                worst = [(key, r) for key, r in smp["step_page_by_key"].items() if 2 * r["variants"] >= drawn]
                ax, per = smp.get("step_page_ax_ratio", {}), smp.get("step_page_per_ax_ratio", {})
                if ax.get("n"):
                    ph = smp["step_page_per_html_ratio"]
                    print(f"{app:9} the same pages' size, variant over variant 0: AX tree median x{ax['median']}, "
                          f"HTML x{smp['step_page_html_ratio']['median']}; the step by page over its AX-size ratio: "
                          f"median x{per['median']}, p90 x{per['p90']}, max x{per['max']}, "
                          f"within x1.10: {per['within_1.10']:.0%}; over its HTML-size ratio: median "
                          f"x{ph['median']}, p90 x{ph['p90']}, max x{ph['max']}, within x1.10: "
                          f"{ph['within_1.10']:.0%}", flush=True)
                if "step_page_phases" in smp:
                    sp = smp["step_page_phases"]
                    print(f"{app:9} where the step's difference goes (paired keys, mean ms a step, median over the "
                          f"variants; step x{sp['step']['mean_ratio']['median']}): "
                          + "; ".join(f"{name} {sp[name]['variant0_ms']:.3f} -> {sp[name]['variant_ms']:.3f} ms"
                                      + (f" ({sp[name]['share']:.0%})" if sp[name]["share"] is not None else "")
                                      for name in PHASE_ROWS[1:]), flush=True)
                    print(f"{app:9} what each adds to today's step (1 + its difference over variant 0's step): "
                          + "; ".join(f"{name} median x{sp[name]['of_step0']['median']}, max x{sp[name]['of_step0']['max']}"
                                      f", within x1.10: {sp[name]['of_step0']['within_1.10']:.0%}"
                                      for name in ("content", "machinery", "gc")), flush=True)
                print(f"{app:9} costliest steps by page (median over the variants that take them): "
                      + "; ".join(f"{key} x{r['median']} ({r['variants']})" for key, r in worst[:5]), flush=True)
        results[app] = res
    if args.out and results:
        Path(args.out).write_text(json.dumps({"command": " ".join(sys.argv), "apps": results}, indent=1) + "\n")


if __name__ == "__main__":
    main()
