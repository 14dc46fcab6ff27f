"""``simweb.check_app(name)``: an app's whole contract, checked, in the manner of
gymnasium's ``check_env``.

    report = simweb.check_app("issues")          # raises AppCheckError naming every failure
    report = simweb.check_app("issues", raise_on_failure=False); print(report)

What it checks (each a function of this module, which the shared test families call):
the spec compiles; the world keeps its contract (:func:`simweb.world.check_world`) and every template declares an intended effect; enough templates and
every difficulty; oracle plans reach a clean success at every seed; a random agent
almost never succeeds; every state stays valid under random actions; a fork replays
exactly as its parent; the same seed and actions give the same bytes; the red team pays
nothing; every template that WebGym's rule lets split yields sub-tasks or says why not,
and every sub-task (simweb.decompose) reaches a clean success, resists a random agent and
pays the red team nothing; and, with ``browser=True``, every oracle runs identically in Chromium.
The limits are the app's own (:class:`AppLimits` on its AppDefinition).

Over site variants (docs/variants.md)::

    report = simweb.check_app("shopping", variants="0,test:3")   # or [0, 27, 54]; the spec of demo --variants

the checks that read pages (oracles, the random agent, fork replay, determinism, the red
team, sub-tasks) run on every variant given, each result naming its variant; the ones
that do not (the spec, the world, the templates, decomposition) once; with
``browser=True`` every oracle also runs in Chromium on each variant.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import Any
from urllib.parse import urlsplit

from ..core.world import check_world
from ..core.worlddb import Rng
from ..runtime.app import AppLimits


class AppCheckError(AssertionError):
    """An app broke its contract (the message names every failed check)."""


@dataclass
class CheckResult:
    name: str
    problems: list[str]
    #: The site variant the check ran on (None: a check that reads no page, run once).
    variant: int | None = None

    @property
    def passed(self) -> bool:
        return not self.problems


@dataclass
class AppReport:
    app: str
    results: list[CheckResult] = field(default_factory=list)
    #: The site variants the page checks ran on ([0]: today's site only).
    variants: list[int] = field(default_factory=lambda: [0])

    @property
    def passed(self) -> bool:
        return all(r.passed for r in self.results)

    def failed_variants(self) -> list[int]:
        """The variants on which some check failed."""
        return sorted({r.variant for r in self.results if not r.passed and r.variant is not None})

    def __str__(self) -> str:
        lines = [f"{self.app}: {'contract holds' if self.passed else 'contract broken'}"
                 + (f" (site variants {', '.join(map(str, self.variants))}"
                    + (f"; failed on {', '.join(map(str, self.failed_variants()))}" if self.failed_variants() else "")
                    + ")" if self.variants != [0] else "")]
        for r in self.results:
            where = f"variant {r.variant}: " if r.variant is not None and self.variants != [0] else ""
            lines.append(f"  {'ok  ' if r.passed else 'FAIL'} {where}{r.name}" + (f": {r.problems[0]}" if r.problems else "")
                         + (f" (+{len(r.problems) - 1} more)" if len(r.problems) > 1 else ""))
        return "\n".join(lines)


# ----------------------------------------------------------------------------- single checks

def check_templates(env: Any) -> list[str]:
    """Enough templates, every difficulty, the app's share of medium/hard, an effect each."""
    limits = env.app.definition.limits
    problems = []
    tasks = env.app.tasks
    if len(tasks) < limits.min_templates:
        problems.append(f"{len(tasks)} templates, fewer than the app's {limits.min_templates}")
    diffs = {tid: t.instantiate(env.app, 0).difficulty for tid, t in tasks.items()}
    missing = {"easy", "medium", "hard"} - set(diffs.values())
    if missing and limits.every_difficulty:
        problems.append(f"no {', '.join(sorted(missing))} template")
    share = sum(d != "easy" for d in diffs.values()) / max(len(diffs), 1)
    if share < limits.min_hard_share:
        problems.append(f"{share:.0%} of templates are medium or hard, fewer than {limits.min_hard_share:.0%}")
    for tid in tasks:
        env.reset(seed=0, options={"task": tid})
        try:
            env.app.tasks[tid].effect_for(env.app, env.task.params, env.start_state())
        except NotImplementedError:
            problems.append(f"{tid} declares no intended effect")
    return problems


def run_plan(env: Any, actions: Iterable[str]) -> tuple[dict | None, list[str]]:
    """Run actions until the episode ends; (last verdict, action errors)."""
    verdict, errors = None, []
    for a in actions:
        obs, _, terminated, truncated, info = env.step(a)
        if obs["last_action_error"]:
            errors.append(f"{a}: {obs['last_action_error']}")
        verdict = info["verdict"]
        if terminated or truncated:
            break
    return verdict, errors


def check_oracle(env: Any, task_id: str, seeds: Iterable[int]) -> list[str]:
    """The template's oracle reaches success, progress 1 and clean at every seed, without
    an action error."""
    problems = []
    for seed in seeds:
        env.reset(seed=seed, options={"task": task_id})
        verdict, errors = run_plan(env, env.oracle_plan())
        if errors:
            problems.append(f"{task_id} seed {seed}: {errors[0]}")
        elif not verdict or not (verdict["success"] and verdict["clean"] and verdict["progress"] >= 1 - 1e-9):
            failed = [c["name"] for c in (verdict or {}).get("checks", []) if not c["passed"]]
            problems.append(f"{task_id} seed {seed}: not a clean success ({', '.join(failed[:3])})")
    return problems


def random_action(obs: dict, rng: Rng, *, answers: bool = True) -> str:
    """An action a random agent would take: a click, fill or select on a visible bid,
    navigation, or (with ``answers``) a message to the user, with junk values."""
    import re

    bids = re.findall(r"^\s*\[([^\]]+)\]", obs["axtree"], re.M)
    kind = rng.randint(0, 8 if answers else 7)
    if kind == 0 or not bids:
        return rng.choice(["go_back()", "go_forward()", "noop()", "new_tab()", "tab_close()", "tab_focus(0)",
                           "scroll(0, 300)", "goto('/nope')", "goto('/')"])
    bid = rng.choice(bids)
    text = rng.choice(["", "1", "42", "abc", "x" * 300, "<script>", "2031-01-01", "4111 1111 1111 1111"])
    return {1: f"click({bid!r})", 2: f"click({bid!r})", 3: f"fill({bid!r}, {text!r})",
            4: f"select_option({bid!r}, {text!r})", 5: f"check({bid!r})", 6: f"press({bid!r}, 'Enter')",
            7: "click('no-such-bid')", 8: f"send_msg_to_user({text!r})"}[kind]


def check_random_agent(env: Any, seeds: Iterable[int], tasks: Iterable[str] | None = None) -> list[str]:
    """A random agent almost never succeeds, and every state it reaches is valid (on every
    template, or on the ``tasks`` given)."""
    limits = env.app.definition.limits
    wins = runs = 0
    problems = []
    seeds = list(seeds)
    for tid in (env.app.tasks if tasks is None else tasks):
        for seed in seeds:
            obs, info = env.reset(seed=seed, options={"task": tid})
            rng = Rng.derive("random-agent", tid, seed)
            for _ in range(limits.random_steps):
                obs, _, terminated, truncated, info = env.step(random_action(obs, rng))
                errors = env.app.validator.errors(env.state)
                if errors:
                    problems.append(f"{tid} seed {seed}: invalid state after {obs['last_action']}: {errors[0]}")
                    break
                if terminated or truncated:
                    break
            wins += bool(info["verdict"] and info["verdict"]["success"])
            runs += 1
    if runs and wins / runs > limits.max_random_success:
        problems.append(f"the random agent solved {wins} of {runs} episodes")
    return problems


def check_fork_replay(env: Any, task_id: str, seed: int, steps: int = 12) -> list[str]:
    """A fork continues exactly as its parent would, and never touches the parent."""
    obs, _ = env.reset(seed=seed, options={"task": task_id})
    rng = Rng.derive("fork-replay", task_id, seed)
    actions = []
    for _ in range(steps):
        a = random_action(obs, rng, answers=False)   # an answer would end the episode: nothing left to fork
        actions.append(a)
        obs, *_ = env.step(a)
    end = env.state_hash()
    env.reset(seed=seed, options={"task": task_id})
    cut = steps // 2
    for a in actions[:cut]:
        env.step(a)
    parent = env.state_hash()
    child = env.fork()
    for a in actions[cut:]:
        child.step(a)
    problems = []
    if env.state_hash() != parent:
        problems.append(f"{task_id} seed {seed}: a fork's steps changed its parent")
    if child.state_hash() != end:
        problems.append(f"{task_id} seed {seed}: fork + replay differs from the original run")
    return problems


def check_determinism(app: str, task_id: str, seed: int, variant: int = 0) -> list[str]:
    """Two independent envs (of site ``variant``) give byte-identical observations and states."""
    from ..episodes.env import SimEnv

    traces = []
    for _ in range(2):
        env = SimEnv(app, seed=0, variant=variant)
        obs, _ = env.reset(seed=seed, options={"task": task_id})
        trace = [obs["axtree"]]
        for a in env.oracle_plan():
            obs, *_ = env.step(a)
            trace.append(obs["html"] + obs["axtree"])
        traces.append((env.state_hash(), json.dumps(trace)))
    return [] if traces[0] == traces[1] else [f"{task_id} seed {seed}: two runs differ"]


def check_red_team(app: str, seeds: Iterable[int], variant: int = 0) -> list[str]:
    """The red team (simweb.redteam) on site ``variant``: no attack paid, no correct work unpaid."""
    from .redteam import redteam

    return [f"{a.task} seed {a.seed}: {a.family}: {a.name}: {a.detail}" for a in redteam(app, seeds, variant=variant)
            if a.paid or a.false_negative]


def check_decomposition(env: Any) -> list[str]:
    """Every template whose instances WebGym's rule lets split yields sub-tasks, or says
    why it cannot (``splits = False`` with a ``split_reason``; simweb.decompose)."""
    from ..judging.decompose import unsplit_templates

    return unsplit_templates(env.app)


def check_sub_tasks(app: str, env: Any, seeds: Iterable[int]) -> list[str]:   # on env's site variant
    """Every sub-task (simweb.decompose) is a task like any other: its oracle reaches a
    clean success, a random agent almost never succeeds, and the red team pays nothing
    on it."""
    from .redteam import redteam

    seeds = list(seeds)
    ids = [s.id for _, subs in env.app.tasks.with_sub_tasks() for s in subs]
    problems = [p for tid in ids for p in check_oracle(env, tid, seeds)]
    if ids:
        problems += check_random_agent(env, seeds[:2], ids)
        problems += [f"{a.task} seed {a.seed}: {a.family}: {a.name}: {a.detail}"
                     for a in redteam(app, seeds[:2], tasks=ids, variant=env.variant) if a.paid or a.false_negative]
    return problems


def check_browser_parity(app: str, task_id: str, seed: int, *, web: Any = None, variant: int = 0) -> list[str]:
    """The oracle plan makes the same transitions in Chromium as in-process: the same
    start, the same page, AX tree, chat and action errors (none) at every step, the same
    runtime and meta (requests, simulated clock) after every step, and the same verdict,
    a clean full success, at the end. ``web`` is a BrowserEnv of the app to use (one is
    started, and closed, otherwise). On a site ``variant`` the episode starts in-process
    and Chromium restores its start state (a state renders as its variant: the variant's
    URLs, words and layout are what Chromium loads)."""
    from ..episodes.env import SimEnv
    from ..serving.browser import make_browser_env

    def path(url: str) -> str:
        parts = urlsplit(url)
        return parts.path + (f"?{parts.query}" if parts.query else "")

    sim = SimEnv(app, seed=0, variant=variant)
    own = web is None
    if own:
        web = make_browser_env(app, 0, screenshots=False)
    where = f"{task_id} seed {seed}" + (f" variant {variant}" if variant else "")
    try:
        so, _ = sim.reset(seed=seed, options={"task": task_id})
        if variant:
            web.restore(sim.snapshot())
            wo, _ = web.observe()
        else:
            wo, _ = web.reset(seed=seed, options={"task": task_id})
        plan = sim.oracle_plan()
        if web.oracle_plan() != plan:
            return [f"{where}: the oracle plan differs in Chromium"]
        si = wi = None
        for i, a in enumerate([None, *plan]):
            if a is not None:
                so, _, _, _, si = sim.step(a)
                wo, _, _, _, wi = web.step(a)
                for side, obs in (("in-process", so), ("Chromium", wo)):
                    if obs["last_action_error"]:
                        return [f"{where} step {i} {a}: {side}: {obs['last_action_error']}"]
            pairs: list[tuple[Any, Any]] = [(sim.snapshot(), web.snapshot())]
            if a is None:
                pairs.append((sim.start_state(), web.start_state()))
            for s, w in pairs:
                for layer in ("runtime", "meta"):
                    if s[layer] != w[layer]:
                        return [f"{where} step {i}: {layer} differs in Chromium"]
            if path(so["url"]) != path(wo["url"]):
                return [f"{where} step {i}: Chromium is on {path(wo['url'])}, in-process on {path(so['url'])}"]
            if so["axtree"] != wo["axtree"]:
                return [f"{where} step {i}: the AX tree differs in Chromium"]
            if so["chat_messages"] != wo["chat_messages"]:
                return [f"{where} step {i}: the chat differs in Chromium"]
        verdict = wi["verdict"] if wi is not None else None
        if si is not None and verdict != si["verdict"]:
            return [f"{where}: the verdict differs in Chromium"]
        if not (verdict and verdict["success"] and verdict["progress"] == 1 and verdict["clean"]):
            return [f"{where}: the oracle's run in Chromium is not a clean full success: {verdict}"]
    finally:
        if own:
            web.close()
    return []


def _browser_parity(app: str, tasks: list[str], seed: int, variant: int) -> list[str]:
    """:func:`check_browser_parity` for every task, in one Chromium."""
    from ..serving.browser import make_browser_env

    web = make_browser_env(app, 0, screenshots=False)
    try:
        return [p for t in tasks for p in check_browser_parity(app, t, seed, web=web, variant=variant)]
    finally:
        web.close()


# ----------------------------------------------------------------------------- all of it

def _page_checks(name: str, env: Any, seeds: list[int], run: Callable[..., None]) -> None:
    """The checks that read pages, on ``env``'s site variant (``run(title, fn, variant)``)."""
    k = env.variant
    run("oracles reach a clean success", lambda: [p for t in env.app.tasks for p in check_oracle(env, t, seeds)], k)
    run("a random agent almost never succeeds; states stay valid", lambda: check_random_agent(env, seeds[:2]), k)
    run("a fork replays as its parent",
        lambda: [p for t in env.app.tasks for p in check_fork_replay(env, t, seeds[0])], k)
    run("same seed, same bytes",
        lambda: [p for t in sorted(env.app.tasks)[:5] for p in check_determinism(name, t, 1, k)], k)
    run("the red team pays nothing", lambda: check_red_team(name, seeds[:2], k), k)
    run("sub-tasks reach a clean success, resist a random agent and pay nothing to the red team",
        lambda: check_sub_tasks(name, env, seeds), k)


def check_app(name: str, *, seeds: Iterable[int] = range(3), browser: bool = False,
              variants: str | Iterable[int] | None = None,
              raise_on_failure: bool = True, progress: Callable[[str], None] | None = None) -> AppReport:
    """Check an app's whole contract (see the module docstring). Raises
    :class:`AppCheckError` on any failure unless ``raise_on_failure`` is False.

    ``variants``: the site variants the page checks run on, as ids or as the spec
    ``simweb demo --variants`` takes ("0-4", "3,17", "test:5"); None: today's site only.
    A variant the app does not have is a VariantError, before any check runs."""
    from ..core.spec import SpecError
    from ..episodes.env import SimEnv
    from ..runtime.variants import catalogue, parse_ids

    seeds = list(seeds)
    report = AppReport(name)

    def run(title: str, fn: Callable[[], list[str]], variant: int | None = None) -> None:
        if progress is not None:
            progress(title if variant is None or report.variants == [0] else f"variant {variant}: {title}")
        report.results.append(CheckResult(title, fn(), variant))

    try:
        env = SimEnv(name, seed=0)
    except SpecError as exc:
        report.results.append(CheckResult("the app loads and its spec compiles", [str(exc)]))
        if raise_on_failure:
            raise AppCheckError(str(report)) from None
        return report
    if variants is None:
        ids = [0]
    elif isinstance(variants, str):
        ids = parse_ids(variants, name)
    else:
        ids = [catalogue(name).check(v) for v in variants]
    report.variants = list(dict.fromkeys(ids)) or [0]
    report.results.append(CheckResult("the app loads and its spec compiles", []))
    run("the world keeps its contract", lambda: check_world(env.app))
    run("templates and their effects", lambda: check_templates(env))
    run("every decomposable template yields sub-tasks or says why not", lambda: check_decomposition(env))
    for k in report.variants:
        # the checks that read pages, on the variant's site (the world and tasks are the same)
        _page_checks(name, env if k == 0 else SimEnv(name, seed=0, variant=k), seeds, run)
    if browser:
        tasks = list(env.app.tasks)
        for k in report.variants:
            run("oracles run identically in Chromium", partial(_browser_parity, name, tasks, seeds[0], k), k)
    if raise_on_failure and not report.passed:
        raise AppCheckError(str(report))
    return report


__all__ = ["AppCheckError", "AppLimits", "AppReport", "check_app", "check_browser_parity", "check_decomposition",
           "check_determinism",
           "check_fork_replay", "check_oracle", "check_random_agent", "check_red_team", "check_sub_tasks",
           "check_templates"]
