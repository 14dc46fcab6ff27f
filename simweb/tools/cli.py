"""The `simweb` command line.

Every user error (unknown app or task, malformed JSON, a state of another world or spec,
a bad trajectory file) ends with one line on stderr and exit code 2, never a traceback,
and never leaves a half-written output file behind.
"""
from __future__ import annotations

import json
import logging
import math
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import orjson

EXIT_USAGE = 2


class UserError(click.ClickException):
    exit_code = EXIT_USAGE

    def show(self, file: Any = None) -> None:
        click.echo(f"simweb: error: {self.format_message()}", err=True)


def _option_name(param: click.Parameter | None) -> str:
    return param.opts[0] if param is not None and param.opts else "the value"


class _Int64(click.ParamType):
    """An integer in the 64-bit range (what a seed may be: /_simweb/reset accepts the same)."""

    name = "integer"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        n = click.INT.convert(value, param, ctx)
        if not -2**63 <= n < 2**63:
            raise UserError(f"{_option_name(param)} must be a 64-bit integer (from -2**63 to 2**63-1), not {value}")
        return n


INT64 = _Int64()


class FiniteFloatRange(click.FloatRange):
    """click's FloatRange, refusing NaN and infinities: FloatRange lets NaN through (every
    comparison with it is false), and a NaN lifetime never ends."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        x = click.FLOAT.convert(value, param, ctx)
        if not math.isfinite(x):
            raise UserError(f"{_option_name(param)} must be a finite number, not {str(value)!r}")
        return super().convert(x, param, ctx)


def _guard(fn: Callable) -> Callable:
    """Turn the library's user-facing exceptions into one-line errors with exit 2."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from ..core.spec import SpecError
        from ..core.state import StateError
        from ..episodes.env import TaskError
        from ..episodes.group import GroupError
        from ..episodes.learner import CheckpointError
        from ..episodes.policy import PolicyError
        from ..episodes.rollout import OutputError, PoolError
        from ..runtime.registry import RegistryError
        from ..runtime.variants import VariantError
        from .train import TrainError

        try:
            return fn(*args, **kwargs)
        except (RegistryError, TaskError, StateError, SpecError, OutputError, PolicyError, PoolError,
                GroupError, CheckpointError, TrainError, VariantError) as exc:
            raise UserError(str(exc)) from None
        except (BrokenPipeError, KeyboardInterrupt):
            sys.exit(130)

    return wrapper


def _console():
    from rich.console import Console

    # Piped output (files, tests, CI logs) gets a wide table instead of 80 columns of folding.
    return Console(stderr=False, highlight=False, width=None if sys.stdout.isatty() else 240)


def _load_json(path: str, what: str) -> Any:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise UserError(f"cannot read {what} {path}: {exc.strerror}") from None
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise UserError(f"{path} is not valid JSON: {exc}") from None


def _make_env(app: str, world_seed: int, size: int | None, variant: int = 0):
    from ..episodes.env import SimEnv
    from ..runtime.variants import VariantError

    try:
        return SimEnv(app, world_seed, size=size, progress=True, variant=variant)
    except VariantError as exc:   # a variant id past the app's count: one line
        raise UserError(str(exc)) from None


def _env_for_state(state: Any, path: str):
    if not isinstance(state, dict) or not isinstance(state.get("world"), dict):
        raise UserError(f"{path} is not a simweb state (no 'world' object)")
    w = state["world"]
    app, seed, size = w.get("app"), w.get("seed"), w.get("size")
    if not isinstance(app, str) or not isinstance(seed, int) or not isinstance(size, int):
        raise UserError(f"{path}: the 'world' object needs app, seed and size")
    env = _make_env(app, seed, size)
    env.restore(state)
    return env


world_options = [
    click.option("--world-seed", type=int, default=0, show_default=True, help="Seed of the generated world."),
    click.option("--size", type=click.IntRange(min=100), default=None, help="World size (products, posts...)."),
]


def with_world(fn: Callable) -> Callable:
    for opt in reversed(world_options):
        fn = opt(fn)
    return fn


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="simweb")
def main() -> None:
    """simweb: a transition-faithful web simulator for web agents."""


@main.command("apps")
@_guard
def apps_cmd() -> None:
    """List the registered apps."""
    from ..runtime import registry

    for name in registry.names():
        d = registry.definition(name)
        click.echo(f"{name:12} simweb/{name}-v{registry.resolve(name).version}  {d.description}")


@main.command("tasks")
@click.argument("app")
@with_world
@click.option("--seed", type=int, default=0, show_default=True, help="Seed to show an example goal for.")
@click.option("--decomposed", is_flag=True, help="Also list each template's sub-tasks (<id>.<n>) under it.")
@_guard
def tasks_cmd(app: str, world_seed: int, size: int | None, seed: int, decomposed: bool) -> None:
    """List an app's task templates with difficulty and an example goal."""
    from rich.table import Table

    env = _make_env(app, world_seed, size)
    table = Table(title=f"{app} task templates", show_lines=False)
    for col in ("id", "kind", "difficulty", "facts", f"example goal (seed {seed})"):
        table.add_column(col, overflow="fold")
    n_subs = 0
    for t, subs in env.app.tasks.with_sub_tasks() if decomposed else ((t, []) for t in env.app.tasks.values()):
        inst = t.instantiate(env.app, seed)
        table.add_row(t.id, t.kind, inst.difficulty, str(inst.n_facts), inst.goal)
        for sub in subs:
            si = sub.instantiate(env.app, seed)
            table.add_row(f"  {sub.id}", sub.kind, si.difficulty, str(si.n_facts), si.goal)
        n_subs += len(subs)
    _console().print(table)
    if decomposed:
        click.echo(f"{len(env.app.tasks)} templates, {n_subs} sub-tasks")


# ----------------------------------------------------------------------------- agents, groups, pools

AGENT_HELP = ("oracle, random, scripted, llm, or a policy by import path package.module:Name "
              "(a simweb.policy.Policy class or factory).")

llm_options = [
    click.option("--model", default=None, help="llm: the model name sent to the endpoint."),
    click.option("--base-url", default=None, help="llm: the OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1."),
    click.option("--api-key", default=None, help="llm: the API key [default: $OPENAI_API_KEY]."),
    click.option("--prompt", type=click.Choice(["browsergym", "webgym"]), default="browsergym", show_default=True,
                 help="llm: BrowserGym's axtree prompt or WebGym's memory/progress/intention/action prompt."),
    click.option("--timeout", type=FiniteFloatRange(min=0.1), default=120.0, show_default=True,
                 help="llm: seconds to wait for one completion."),
    click.option("--retries", type=click.IntRange(0, 20), default=4, show_default=True,
                 help="llm: more tries on 429/5xx/timeouts, with exponential backoff."),
]

pool_options = [
    click.option("--workers", "-w", type=int, default=1, show_default=True,
                 help="Worker processes (local) or Ray actors (ray)."),
    click.option("--backend", "pool_backend", type=click.Choice(["local", "ray"]), default="local", show_default=True,
                 help="local: processes on this machine; ray: Ray actors (a local Ray, or --address)."),
    click.option("--address", default=None, help="ray: the cluster to join: auto or HOST:PORT (default: a local Ray "
                                                   "started for this run)."),
]

group_options = [
    click.option("--reward", "group_reward", type=click.Choice(["outcome", "progress"]), default="outcome",
                 show_default=True, help="Group reward: clean success (outcome) or final clean progress."),
    click.option("--normaliser", type=click.Choice(["constant", "step", "trajectory"]), default="constant",
                 show_default=True, help="Length normaliser of the step weights (docs/groups.md)."),
]


def with_options(options: list) -> Callable[[Callable], Callable]:
    def apply(fn: Callable) -> Callable:
        for opt in reversed(options):
            fn = opt(fn)
        return fn

    return apply


def _llm_kwargs(model: str | None, base_url: str | None, api_key: str | None, prompt: str, timeout: float,
                retries: int) -> dict[str, Any]:
    if not model or not base_url:
        raise UserError("--agent llm needs --model and --base-url")
    return {"model": model, "base_url": base_url, "api_key": api_key, "prompt": prompt, "timeout": timeout,
            "retries": retries}


def _load_agent(agent: str, seed: int, llm: dict[str, Any] | None = None) -> Any:
    """The policy ``--agent`` names (one line and exit 2 if it cannot be had)."""
    from ..episodes.policy import load_policy

    if agent == "scripted":
        raise UserError("the scripted agent runs the portable families' scripts: use `simweb eval --agent scripted`")
    return load_policy(agent, seed, **(llm or {}) if agent == "llm" else {})


def _check_counts(group: int | None, workers: int) -> None:
    if group is not None and group < 1:
        raise UserError(f"--group must be at least 1, not {group}")
    if not 1 <= workers <= 1024:
        raise UserError(f"--workers must be from 1 to 1024, not {workers}")


def _group_table(title: str, trajs: list, rewards: list[float], advs: list[float], paths: list[str]) -> None:
    from rich.table import Table

    table = Table(title=title)
    for col in ("child", "steps", "success", "progress", "clean", "reward", "advantage", "trajectory"):
        table.add_column(col)
    for i, (t, r, a, p) in enumerate(zip(trajs, rewards, advs, paths)):
        v = t.final
        table.add_row(str(t.header.get("child", i)), str(len(t.steps)), str(v.get("success")), str(v.get("progress")),
                      str(v.get("clean")), f"{r:.3f}", f"{a:+.3f}", p)
    _console().print(table)


def _pooled(items: list, policy: Any, workers: int, backend: str, address: str | None) -> list[list[bytes]]:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from ..episodes.rollout import make_pool

    with Progress(TextColumn("[bold]rollouts"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  transient=True, disable=not sys.stderr.isatty()) as bar:
        job = bar.add_task("", total=len(items))
        with make_pool(backend, workers, address) as pool:
            return pool.run(items, policy, on_done=lambda i, out: bar.advance(job))


@main.command("run")
@click.argument("app")
@click.option("--task", "-t", required=True, help="Task id, e.g. shopping/buy_product.")
@click.option("--seed", "-s", type=int, default=0, show_default=True, help="Episode seed (task parameters).")
@click.option("--seeds", default=None, help="Several episode seeds (N, N-M or a list): one rollout (or group) each; "
                                            "--out is then a directory.")
@click.option("--agent", default="oracle", show_default=True, help=AGENT_HELP)
@click.option("--group", "-g", type=int, default=None,
              help="Roll out a group of N forks of the start instead of one episode (--out: a directory).")
@click.option("--out", "-o", type=click.Path(), default=None, help="Trajectory JSONL to write (a directory for "
                                                                    "--group or --seeds).")
@click.option("--save-state", type=click.Path(dir_okay=False), default=None, help="Save the state to this file...")
@click.option("--at", "at_step", type=click.IntRange(min=0), default=None, help="...after this step (default: the end).")
@click.option("--max-steps", type=click.IntRange(min=1), default=None)
@with_options(group_options)
@with_options(pool_options)
@with_options(llm_options)
@with_world
@_guard
def run_cmd(app: str, task: str, seed: int, seeds: str | None, agent: str, group: int | None, out: str | None,
            save_state: str | None, at_step: int | None, max_steps: int | None, group_reward: str, normaliser: str,
            workers: int, pool_backend: str, address: str | None, model: str | None, base_url: str | None,
            api_key: str | None, prompt: str, timeout: float, retries: int, world_seed: int, size: int | None) -> None:
    """Roll out one agent on one task and write its trajectory; or, with --group, a group of
    forks of the start with rewards and advantages; --seeds and --workers spread instances
    over processes or Ray actors."""
    from ..episodes.rollout import run_episode, write_atomic
    from ..runtime.registry import app_of_task

    if app_of_task(task) != app:
        raise UserError(f"task '{task}' belongs to app '{app_of_task(task)}', not '{app}'")
    _check_counts(group, workers)
    if at_step is not None and not save_state:
        raise UserError("--at needs --save-state")
    env = _make_env(app, world_seed, size)
    env.app_task(task)
    llm = _llm_kwargs(model, base_url, api_key, prompt, timeout, retries) if agent == "llm" else None
    policy = _load_agent(agent, seed, llm)
    if group is not None or seeds is not None or workers > 1 or pool_backend != "local":
        if save_state:
            raise UserError("--save-state is for a single rollout (no --group, --seeds, --workers or --backend ray)")
        from .evaluate import EvalError, parse_seeds

        try:
            seed_list = parse_seeds(seeds) if seeds is not None else [seed]
        except EvalError as exc:
            raise UserError(str(exc)) from None
        # workers build the policy from its name (an LLM agent travels as the object)
        _run_many(app, task, seed_list, agent if agent != "llm" else policy, group, out, max_steps, group_reward,
                  normaliser, workers, pool_backend, address, world_seed, size)
        return
    saved: dict[str, Any] = {}

    def on_step(i: int, step: dict) -> None:
        if save_state and at_step is not None and i + 1 == at_step:
            saved["state"] = env.snapshot()

    env.reset(seed=seed, options={"task": task})
    if save_state and at_step == 0:
        saved["state"] = env.snapshot()
    traj = run_episode(env, policy, task=task, seed=seed, max_steps=max_steps, on_step=on_step)
    if save_state:
        if at_step is not None and at_step > len(traj.steps):
            raise UserError(f"--at {at_step} is past the end of the episode ({len(traj.steps)} steps)")
        state = saved.get("state", env.snapshot())
        write_atomic(save_state, [orjson.dumps(state, option=orjson.OPT_SORT_KEYS)])
    if out:
        from ..episodes.trajectory import write_trajectory

        write_trajectory(out, traj)
    v = traj.final
    click.echo(f"{task} seed={seed} agent={agent}: {len(traj.steps)} steps, success={v.get('success')} "
               f"progress={v.get('progress')} clean={v.get('clean')}"
               + (f" -> {out}" if out else "") + (f", state -> {save_state}" if save_state else ""))


def _run_many(app: str, task: str, seeds: list[int], policy: Any, group: int | None, out: str | None,
              max_steps: int | None, reward: str, normaliser: str, workers: int, backend: str, address: str | None,
              world_seed: int, size: int | None) -> None:
    """``simweb run`` over several seeds and/or as groups, on a pool."""
    from ..episodes.group import regroup
    from ..episodes.rollout import WorkItem, trajectory_from_bytes
    from ..episodes.trajectory import write_trajectory

    # a group is split over the workers when there are fewer seeds than workers: each part
    # resets the same start and forks its own children (child seeds by their group index)
    parts = max(1, min(workers // max(1, len(seeds)), group or 1))
    per = -(-(group or 1) // parts)
    items, owner = [], []
    for s in seeds:
        for k in range(0, group or 1, per):
            items.append(WorkItem(app, task, s, group=min(per, group - k) if group else 0, max_steps=max_steps,
                                  world_seed=world_seed, size=size, reward=reward, normaliser=normaliser,
                                  first_child=k))
            owner.append(s)
    outs = _pooled(items, policy, workers, backend, address)
    by_seed: dict[int, list[bytes]] = {}
    for s, blobs in zip(owner, outs):
        by_seed.setdefault(s, []).extend(blobs)
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
    total = 0
    for s, blobs in by_seed.items():
        trajs = [trajectory_from_bytes(b) for b in blobs]
        g = regroup(trajs, [float(t.header["group_reward"]) for t in trajs], normaliser=normaliser) if group else None
        paths = []
        for i, t in enumerate(trajs):
            name = f"seed-{s}-child-{i:03d}.jsonl" if group else f"seed-{s}.jsonl"
            path = os.path.join(out, name) if out else "-"
            if g is not None:
                t.header.update(advantage=g.advantages[i])   # over the whole group, whatever the split
            if out:
                write_trajectory(path, t)
            paths.append(path)
        total += len(trajs)
        if g is not None:
            _group_table(f"{task} seed {s}: a group of {group} forks ({reward} reward)", trajs, g.rewards,
                         g.advantages, paths)
        else:
            v = trajs[0].final
            click.echo(f"{task} seed={s}: {len(trajs[0].steps)} steps, success={v.get('success')} "
                       f"progress={v.get('progress')} clean={v.get('clean')}" + (f" -> {paths[0]}" if out else ""))
    click.echo(f"{total} trajectories from {len(items)} work items on {backend} ({workers} worker(s))"
               + (f" -> {out}/" if out else ""))


@main.command("fork")
@click.option("--state", "state_path", required=True, type=click.Path(dir_okay=False), help="A saved state (JSON).")
@click.option("--branches", "-n", "--group", "-g", "branches", type=int, default=4, show_default=True,
              help="Children forked from the state (the group size).")
@click.option("--agent", default="random", show_default=True, help=AGENT_HELP)
@click.option("--steps", "-k", type=click.IntRange(min=1), default=20, show_default=True)
@click.option("--seed", "-s", type=int, default=0, show_default=True, help="Seed of the group (its children's policy seeds).")
@click.option("--out", "-o", type=click.Path(file_okay=False), required=True, help="Directory for branch trajectories.")
@with_options(group_options)
@with_options(pool_options)
@with_options(llm_options)
@_guard
def fork_cmd(state_path: str, branches: int, agent: str, steps: int, seed: int, out: str, group_reward: str,
             normaliser: str, workers: int, pool_backend: str, address: str | None, model: str | None,
             base_url: str | None, api_key: str | None, prompt: str, timeout: float, retries: int) -> None:
    """Branch a group of N rollouts from one saved state: a trajectory per branch, and a
    table of rewards and group-normalised advantages."""
    from ..episodes.group import regroup, rollout_group
    from ..episodes.rollout import WorkItem, trajectory_from_bytes

    _check_counts(branches, workers)
    if branches > 10_000:
        raise UserError(f"--group is at most 10000, not {branches}")
    state = _load_json(state_path, "state")
    env = _env_for_state(state, state_path)
    if agent == "oracle" and env.task is None:
        raise UserError("--agent oracle needs a state with a task")
    llm = _llm_kwargs(model, base_url, api_key, prompt, timeout, retries) if agent == "llm" else None
    policy = _load_agent(agent, seed, llm)
    Path(out).mkdir(parents=True, exist_ok=True)
    if workers == 1 and pool_backend == "local":
        g = rollout_group(env, policy, branches, seed=seed, max_steps=steps, reward=group_reward, normaliser=normaliser)
        trajs = g.trajectories
        for t, r, a in zip(trajs, g.rewards, g.advantages):   # the header a pooled part writes
            t.header.update(group_reward=r, advantage=a, policy_version=getattr(policy, "version", None) or 0)
    else:
        # the group split over the workers: each part forks its own children of the same state
        blob = orjson.dumps(state)
        per = -(-branches // workers)
        items = [WorkItem(env.app.name, None, int(state["meta"]["rng"]["seed"]), group=min(per, branches - k),
                          group_seed=seed, max_steps=steps, world_seed=env.app.seed, size=env.app.size,
                          reward=group_reward, normaliser=normaliser, state=blob, first_child=k)
                 for k in range(0, branches, per)]
        outs = _pooled(items, agent if agent != "llm" else policy, workers, pool_backend, address)
        trajs = [trajectory_from_bytes(b) for blobs in outs for b in blobs]
        g = regroup(trajs, [float(t.header["group_reward"]) for t in trajs], normaliser=normaliser)
    from ..episodes.trajectory import write_group

    paths = write_group(out, trajs, [f"branch-{b:04d}.jsonl" for b in range(len(trajs))], parent_state=state,
                        extra=[{"branch": b, "group_reward": r, "advantage": a}
                               for b, (r, a) in enumerate(zip(g.rewards, g.advantages))])
    _group_table(f"{branches} branches from {state_path} ({group_reward} reward, {normaliser} normaliser)",
                 trajs, g.rewards, g.advantages, paths)


@main.command("verify")
@click.option("--task", "-t", required=True)
@click.option("--seed", "-s", type=int, default=0, show_default=True)
@click.option("--state", "state_path", required=True, type=click.Path(dir_okay=False))
@click.option("--answer", default=None, help="The agent's answer (for information tasks).")
@_guard
def verify_cmd(task: str, seed: int, state_path: str, answer: str | None) -> None:
    """Verify a final state (and answer) against a task instance; prints the verdict JSON.

    The state must be one a run produced: its runtime is replayed from its recorded
    history (simweb.episodes.replay), and it must have been made for this task at this seed."""
    from ..episodes.replay import verify_state

    state = _load_json(state_path, "state")
    env = _env_for_state(state, state_path)   # the world of the state (one line if it has none here)
    verdict = verify_state(env.app, task, seed, state, answer)
    click.echo(json.dumps(verdict, indent=2, sort_keys=True))


@main.command("redteam")
@click.argument("app")
@click.option("--seeds", "-n", type=click.IntRange(min=1, max=10_000), default=30, show_default=True,
              help="Instances per template (seeds 0..N-1); 30 or more also measures answer guessing rates.")
@click.option("--task", "-t", "tasks", multiple=True, help="Only these templates (repeatable).")
@click.option("--decomposed", is_flag=True, help="Also attack the sub-tasks of the templates (simweb tasks --decomposed).")
@click.option("--no-events", is_flag=True, help="Skip submitting the pages' forms (faster).")
@click.option("--out", "-o", type=click.Path(dir_okay=False), default=None, help="Every attack as JSONL.")
@click.option("--variants", "variant_ids", default=None,
              help="Site variants to attack, as demo --variants takes them (N, N-M, test:K, a list; docs/variants.md).")
@with_world
@_guard
def redteam_cmd(app: str, seeds: int, tasks: tuple[str, ...], decomposed: bool, no_events: bool, out: str | None,
                variant_ids: str | None, world_seed: int, size: int | None) -> None:
    """Attack every task template's reward: zero work, undo, junk, deletion, over-doing,
    every form of the visited pages; and check that right answers in other forms are paid.
    Exits 1 if any attack was paid or any correct solution was not."""

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Table

    from .redteam import by_family, redteam, table

    env = _make_env(app, world_seed, size)
    ids = list(tasks) or list(env.app.tasks)
    for t in ids:
        env.app_task(t)
    if decomposed:
        ids += [s.id for t in list(ids) for s in env.app.tasks.sub_tasks(t)]
    variants = _demo_variants([app], variant_ids)[app]
    attacks = []
    with Progress(TextColumn("[bold]red team"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.description}"), transient=True, disable=not sys.stderr.isatty()) as bar:
        job = bar.add_task("", total=len(ids) * len(variants))
        for v in variants:
            def step(tid: str, v: int = v) -> None:
                bar.update(job, advance=1, description=tid + (f" (variant {v})" if v else ""))

            attacks += redteam(app, range(seeds), tasks=ids, events=not no_events, world_seed=world_seed, variant=v,
                               progress=step)
    if variant_ids is not None:
        from .variants_cli import redteam_report

        redteam_report(_console(), app, attacks, variants)
    rows = table(attacks)
    view = Table(title=f"{app} red team ({seeds} seeds per template)")
    for col in ("template", "attacks tried", "attacks paid", "correct work unpaid", "example"):
        view.add_column(col, overflow="fold")
    for r in rows:
        view.add_row(r["task"], str(r["tried"]), str(r["paid"]), str(r["false_negatives"]),
                     r["examples"][0] if r["examples"] else "")
    tried, paid = sum(r["tried"] for r in rows), sum(r["paid"] for r in rows)
    unpaid = sum(r["false_negatives"] for r in rows)
    _console().print(view)
    click.echo(f"{app}: {tried} attacks, {paid} paid (hacking rate {paid / max(tried, 1):.4f}), "
               f"{unpaid} correct solutions unpaid")
    click.echo("by family: " + ", ".join(f"{fam} {r['tried']} tried / {r['paid']} paid"
                                         + (f" / {r['false_negatives']} unpaid" if r["false_negatives"] else "")
                                         for fam, r in by_family(attacks).items()))
    if out:
        from ..episodes.trajectory import write_attacks

        write_attacks(out, app, attacks, seeds=seeds, world={"seed": world_seed, "size": size},
                      **({"variants": variants} if variant_ids is not None else {}))
    if paid or unpaid:
        sys.exit(1)


@main.command("replay")
@click.argument("trajectory", type=click.Path(dir_okay=False))
@_guard
def replay_cmd(trajectory: str) -> None:
    """Re-execute a trajectory and check every state hash."""
    from ..episodes.env import SimEnv
    from ..episodes.trajectory import TrajectoryFormatError, read_trajectory

    try:   # the one reader of trajectory files: old schemas upgraded, others refused in one line
        head, rest = read_trajectory(trajectory)
    except TrajectoryFormatError as exc:
        raise UserError(str(exc)) from None
    if head.get("kind", "episode") != "episode":
        raise UserError(f"{trajectory}: a {head.get('kind')} file, not an episode's trajectory")
    lines = [head, *rest]
    if not head.get("reset", True):
        raise UserError(f"{trajectory}: a branch trajectory starts from a saved state; replay it with its state")
    w = head.get("world") or {}
    try:
        env = SimEnv(head["app"], w["seed"], size=w["size"])
    except KeyError as exc:
        raise UserError(f"{trajectory}: header lacks {exc}") from None
    if env.app.world.hash != w.get("hash"):
        raise UserError(f"{trajectory}: recorded on another world (hash {str(w.get('hash'))[:12]}…)")
    options = {"task": head["task"], "params": head["params"]} if head.get("task") else None
    env.reset(seed=head["seed"], options=options)
    if env.state_hash() != head.get("start_hash"):
        raise UserError(f"{trajectory}: start state differs (hash {env.state_hash()[:12]}… vs "
                        f"{str(head.get('start_hash'))[:12]}…): another spec or simweb version?")
    for step in lines[1:]:
        if not isinstance(step, dict) or "action" not in step or "state_hash" not in step:
            raise UserError(f"{trajectory}: step line without action/state_hash")
        env.step(step["action"])
        if env.state_hash() != step["state_hash"]:
            click.echo(f"MISMATCH at step {step.get('step')}: {step['action']}", err=True)
            sys.exit(1)
    click.echo(f"replayed {len(lines) - 1} steps of {trajectory}: every state hash matches")


def _stop_on_signals() -> None:
    """SIGINT and SIGTERM end a long-running command as Ctrl-C does, so its cleanup runs
    (sessions closed, browsers shut). Both are installed explicitly: a shell starts a
    background job with SIGINT ignored, Python keeps an inherited ignored SIGINT ignored,
    and SIGTERM's default would skip the cleanup."""
    import signal

    def stop(*_: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)


def _serve_until_stopped(run: Callable[[], None]) -> None:
    """Run a waitress server's loop (``run``: ``simweb serve``'s and ``simweb omnibox``'s)
    until Ctrl-C, SIGINT or SIGTERM; the caller's ``finally`` does the cleanup."""
    # Waitress warns at every queued request beyond its threads: under a burst that is
    # expected (the queue is what keeps the threads bounded), so only errors are shown.
    logging.getLogger("waitress.queue").setLevel(logging.ERROR)
    _stop_on_signals()
    try:
        run()
    except KeyboardInterrupt:
        pass


@main.command("serve")
@click.argument("app")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", "-p", type=click.IntRange(0, 65535), default=8000, show_default=True)
@click.option("--task", default=None, help="Start new sessions on this task.")
@click.option("--seed", type=INT64, default=0, show_default=True, help="Episode seed of new sessions (64-bit).")
@click.option("--bid-attribute", default="data-simweb-bid", show_default=True,
              help="Element-id attribute in served pages. Not `bid`: stock BrowserGym stamps its own `bid`s "
                   "and refuses pages that already carry one (`--bid-attribute bid` gives simweb's raw pages).")
@click.option("--session-db", default=None, metavar="URL",
              help="SQLAlchemy URL of the session database [default: a SQLite file in the simweb cache].")
@click.option("--max-sessions", type=click.IntRange(min=1), default=10_000, show_default=True,
              help="Established sessions kept (over it the least recently seen one ends).")
@click.option("--max-new-sessions", type=click.IntRange(min=1), default=1_000, show_default=True,
              help="Sessions whose cookie has not come back yet (crawlers, health checks) kept.")
@click.option("--idle-lifetime", type=FiniteFloatRange(min=1), default=86_400, show_default=True,
              help="Seconds without a request after which a session expires.")
@click.option("--control-token", envvar="SIMWEB_CONTROL_TOKEN", default=None,
              help="Token for /_simweb (or $SIMWEB_CONTROL_TOKEN) [default: a new one, printed].")
@click.option("--no-control", is_flag=True, help="Switch the /_simweb endpoints off (a public demo).")
@click.option("--threads", type=click.IntRange(1, 256), default=8, show_default=True, help="Worker threads.")
@click.option("--timeout", type=click.IntRange(min=1), default=30, show_default=True,
              help="Seconds a connection is kept open with no request, or with a request not yet "
                   "arrived whole (a slow client is cut off).")
@click.option("--variant", type=click.IntRange(min=0), default=0, show_default=True,
              help="The site variant new sessions start on (docs/variants.md; 0: today's site).")
@with_world
@_guard
def serve_cmd(app: str, host: str, port: int, task: str | None, seed: int, bid_attribute: str,
              session_db: str | None, max_sessions: int, max_new_sessions: int, idle_lifetime: float,
              control_token: str | None, no_control: bool, threads: int, timeout: int, world_seed: int,
              size: int | None, variant: int = 0) -> None:
    """Serve an app over HTTP for real browsers (waitress; one simulated session per
    cookie, kept in a database across restarts)."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import SQLAlchemyError

    from ..core.worlddb import cache_dir
    from ..serving.server import create_app, make_server

    if session_db is None:
        folder = cache_dir()
        folder.mkdir(parents=True, exist_ok=True)
        session_db = f"sqlite:///{folder / f'sessions-{app}-seed{world_seed}-n{size or 0}.sqlite'}"
    try:
        flask_app = create_app(app, world_seed=world_seed, size=size, task=task, seed=seed,
                               bid_attribute=bid_attribute, session_db=session_db, max_sessions=max_sessions,
                               max_new_sessions=max_new_sessions, idle_lifetime=idle_lifetime,
                               control=not no_control, control_token=control_token, variant=variant)
        server = make_server(flask_app, host, port, threads=threads, channel_timeout=timeout)
    except (ValueError, OSError, SQLAlchemyError) as exc:
        raise UserError(f"cannot serve: {' '.join(str(exc).split())[:300]}") from None
    served = flask_app.extensions["simweb"]
    where = make_url(session_db).render_as_string(hide_password=True)
    click.echo(f"simweb: serving {app} on http://{host}:{server.effective_port}/ ({threads} threads, "
               f"sessions in {where})", err=True)
    if no_control:
        click.echo("simweb: control endpoints /_simweb/* are off", err=True)
    elif control_token:
        click.echo("simweb: /_simweb/* writes need the given control token (Authorization: Bearer <token>); "
                   "task start URLs /_simweb/start?task=<id>&seed=<n> need none", err=True)
    else:
        click.echo(f"simweb: control token {served.control_token} "
                   f"(send 'Authorization: Bearer <token>' to /_simweb/*; task start URLs "
                   f"/_simweb/start?task=<id>&seed=<n> need none)", err=True)
    try:
        _serve_until_stopped(server.run)
    finally:
        served.sessions.dispose()


@main.command("omnibox")
@click.option("--apps", "app_names", default=None, help="Comma-separated apps to serve (default: all).")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", "-p", type=click.IntRange(0, 65535), default=7000, show_default=True,
              help="The master protocol's port (WebGym's default is 7000).")
@click.option("--browsers", "-n", type=click.IntRange(1, 64), default=2, show_default=True,
              help="Browser instances (one Chromium each), reused across episodes.")
@click.option("--apps-port", type=click.IntRange(0, 65535), default=None,
              help="First port of the served apps (default: --port + 1; 0: any free port).")
@click.option("--api-key", envvar="SIMWEB_OMNIBOX_KEY", default="default_key", show_default=True,
              help="The x-api-key clients must send (or $SIMWEB_OMNIBOX_KEY).")
@click.option("--status-interval", type=FiniteFloatRange(min=0), default=10.0, show_default=True,
              help="Seconds between refreshes of the advertised capacity (0: always current).")
@click.option("--lifetime-max", type=click.IntRange(1, 24 * 60), default=60, show_default=True,
              help="Longest lease in minutes; an expired lease is released.")
@click.option("--allow-external", is_flag=True, help="Let the browsers resolve non-loopback hosts.")
@with_world
@_guard
def omnibox_cmd(app_names: str | None, host: str, port: int, browsers: int, apps_port: int | None, api_key: str,
                status_interval: float, lifetime_max: int, allow_external: bool, world_seed: int,
                size: int | None) -> None:
    """Serve WebGym's browser-server protocol over real Chromium on simweb's apps."""
    from ..runtime import registry
    from ..serving.browser import BrowserError
    from ..serving.omnibox.server import OmniboxServer

    names = [a.strip() for a in app_names.split(",") if a.strip()] if app_names else registry.names()
    if not names:
        raise UserError(f"--apps {app_names!r} names no app (known: {', '.join(registry.names())})")
    for name in names:
        registry.resolve(name)   # an unknown app is a one-line error

    _stop_on_signals()
    server = OmniboxServer(names, host=host, port=port, browsers=browsers, api_key=api_key, apps_port=apps_port,
                           world_seed=world_seed, size=size, status_interval=status_interval,
                           lifetime_max=lifetime_max, allow_external=allow_external)
    try:
        try:
            server.start()
        except BrowserError as exc:
            raise UserError(str(exc)) from None
        except OSError as exc:
            raise UserError(f"cannot listen: {exc.strerror or exc}") from None
        click.echo(f"simweb omnibox: {browsers} browser(s) on {server.base_url} (node {server.node})", err=True)
        for name, url in server.apps().items():
            click.echo(f"  {name}: {url}  (task start URLs: {url}/_simweb/start?task=<id>&seed=<n>)", err=True)
        _serve_until_stopped(server.serve_forever)
    except KeyboardInterrupt:   # while Chromium was launching
        pass
    finally:
        # Ctrl-C in a terminal reaches Playwright's driver processes too; their closed pipes
        # are expected now, not errors worth a log line.
        import logging

        logging.getLogger("asyncio").setLevel(logging.CRITICAL)
        server.close()
    click.echo("simweb omnibox: stopped", err=True)


@main.command("spec")
@click.argument("app")
@click.option("--diagram", type=click.Path(dir_okay=False), default=None, help="Write the machine as Mermaid.")
@_guard
def spec_cmd(app: str, diagram: str | None) -> None:
    """Show an app's events: read set, write set and side-effect class."""
    from rich.table import Table

    from ..core.functions import FunctionTable
    from ..core.machine import ControlMachine
    from ..runtime import registry
    from ..runtime.app import _import, load_app_spec

    d = registry.definition(app)
    table_fns: FunctionTable = _import(d.functions)
    spec = load_app_spec(d, table_fns)
    table = Table(title=f"{app} spec v{spec.version} ({len(spec.pages)} pages, {len(spec.events)} events)")
    for col in ("event", "route", "from → to", "effect", "permissions", "workflow moves", "writes", "reads"):
        table.add_column(col, overflow="fold")
    for ev in spec.events.values():
        src = ",".join(ev.sources) if len(ev.sources) < len(spec.pages) else "*"
        eff = ev.effect + (" (declared)" if ev.effect != ev.derived_effect else "")
        table.add_row(ev.name, f"POST {ev.route}", f"{src} → {ev.target or '(same)'}", eff,
                      "\n".join(ev.permissions), "\n".join(ev.moves), "\n".join(ev.writes), "\n".join(ev.reads))
    console = _console()
    console.print(table)
    if spec.permissions:
        used: dict[str, list[str]] = {}
        for ev in spec.events.values():
            for name in ev.permissions:
                used.setdefault(name, []).append(ev.name)
        t = Table(title=f"permissions (roles: {' < '.join(spec.roles) or 'none'})")
        for col in ("permission", "args", "rule", "status", "guards events"):
            t.add_column(col, overflow="fold")
        for perm in spec.permissions.values():
            t.add_row(perm.name, ", ".join(perm.args), perm.cond.source, str(perm.status),
                      ", ".join(used.get(perm.name, [])))
        console.print(t)
    if spec.workflows:
        t = Table(title="workflows")
        for col in ("workflow", "field", "initial", "transitions"):
            t.add_column(col, overflow="fold")
        for wf in spec.workflows.values():
            t.add_row(wf.name, f"{wf.table}.{wf.field}", wf.initial,
                      "\n".join(f"{a} → {b} ({n})" for a, b, n in wf.edges))
        console.print(t)
    if spec.timers:
        t = Table(title="timers (clock-driven events)")
        for col in ("timer", "args", "condition", "writes"):
            t.add_column(col, overflow="fold")
        for tm in spec.timers.values():
            t.add_row(tm.name, ", ".join(tm.args), tm.cond.source if tm.cond else "",
                      "\n".join(sorted({u.writes for u in tm.updates})))
        console.print(t)
    if diagram:
        from ..episodes.rollout import write_atomic

        machine = ControlMachine(spec)
        write_atomic(diagram, [machine.mermaid().encode()])
        click.echo(f"diagram -> {diagram}")
        stem, dot, ext = diagram.rpartition(".")
        for wf in spec.workflows.values():   # each workflow is a diagram of its own
            path = f"{stem}.{wf.name}.{ext}" if dot else f"{diagram}.{wf.name}"
            write_atomic(path, [machine.workflow_mermaid(wf).encode()])
            click.echo(f"workflow {wf.name} -> {path}")


@main.command("world")
@click.argument("app")
@with_world
@_guard
def world_cmd(app: str, world_seed: int, size: int | None) -> None:
    """Build (or open) an app's world data and print its hash."""
    from ..runtime import registry
    from ..runtime.app import _import

    d = registry.definition(app)
    t0 = time.perf_counter()
    w = _import(d.world).load(seed=world_seed, size=size or d.default_size, progress=True)
    click.echo(f"{app} world seed={world_seed} size={size or d.default_size}: hash {w.hash} "
               f"({time.perf_counter() - t0:.1f}s)")


@main.command("export-webgym")
@click.argument("app")
@click.option("--out", "-o", required=True, type=click.Path(dir_okay=False))
@click.option("--per-template", type=click.IntRange(min=1, max=100_000), default=10, show_default=True)
@click.option("--base-url", default="http://127.0.0.1:8000", show_default=True, help="Where `simweb serve` runs.")
@click.option("--decomposed", is_flag=True, help="Also write the sub-tasks of every template that splits.")
@click.option("--variants", "variant_ids", default=None,
              help="Site variants (N, N-M or a list; docs/variants.md): each one a website of its own, "
                   "its start URLs carrying the variant.")
@with_world
@_guard
def export_cmd(app: str, out: str, per_template: int, base_url: str, world_seed: int, size: int | None,
               decomposed: bool, variant_ids: str | None = None) -> None:
    """Write task instances in WebGym's JSONL task format (fact groups, difficulty, the
    expected answer of information tasks, a start URL that sets the task up)."""
    from ..live.tasks import LiveTask, export_task, task_line

    env = _make_env(app, world_seed, size)
    tasks: list[LiveTask] = []
    for v in _demo_variants([app], variant_ids)[app]:
        for t, subs in env.app.tasks.with_sub_tasks() if decomposed else ((t, []) for t in env.app.tasks.values()):
            for tid in [t.id, *(sub.id for sub in subs)]:
                for seed in range(per_template):
                    tasks.append(export_task(env.app, tid, seed, base_url, len(tasks), subdomain=app, variant=v))
    from ..episodes.rollout import write_atomic

    try:   # the folder is made, as dump_tasks makes it
        Path(out).parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"cannot write {out}: {exc.strerror or exc}") from None
    # dump_tasks's lines, written whole or not at all (and never renamed over a device)
    write_atomic(out, [task_line(t).encode("utf-8") for t in tasks])
    click.echo(f"wrote {len(tasks)} tasks -> {out}")


@main.command("compare")
@click.argument("app")
@click.option("--task", "-t", default=None, help="Task whose oracle plan both sides run (not with --walks).")
@click.option("--walks", type=click.IntRange(min=1, max=100_000), default=None,
              help="Instead of an oracle plan: this many random walks from varied states, in-process vs "
                   "Chromium, compared at every step (URL, runtime state, error class); --out gets a JSON report.")
@click.option("--steps", type=click.IntRange(min=1, max=1000), default=25, show_default=True,
              help="--walks: actions per walk.")
@click.option("--seed", "-s", type=int, default=0, show_default=True)
@click.option("--against", type=click.Choice(["browser", "live", "omnibox"]), default="browser", show_default=True,
              help="browser: the same app in headless Chromium; live: a WebGym browser server (Omniboxes); "
                   "omnibox: the app through a `simweb omnibox` server's protocol.")
@click.option("--server", default=None, help="live / omnibox: the server URL.")
@click.option("--api-key", envvar="SIMWEB_OMNIBOX_KEY", default=None, help="live: its x-api-key (or $SIMWEB_OMNIBOX_KEY).")
@click.option("--site", default=None, help="live: base URL the live browser opens (e.g. where `simweb serve` runs).")
@click.option("--out", "-o", required=True, type=click.Path(dir_okay=False), help="Per-step report (JSONL).")
@with_world
@_guard
def compare_cmd(app: str, task: str | None, walks: int | None, steps: int, seed: int, against: str,
                server: str | None, api_key: str | None, site: str | None, out: str, world_seed: int,
                size: int | None) -> None:
    """Run one task's oracle plan in-process and against a browser or a live site, step by
    step, and report where the two runs agree (URL, errors, AX-tree overlap, answers).
    With --walks, run random walks in-process and in Chromium instead and report the
    parity rate and the divergence classes (simweb.walks)."""
    if walks is not None:
        if task is not None or against != "browser":
            raise UserError("--walks compares random walks in-process and in Chromium: no --task, --against browser")
        _compare_walks(app, walks, steps, seed, out, world_seed)
        return
    if task is None:
        raise UserError("compare needs --task (an oracle plan to run) or --walks N (random walks)")
    from ..live.compare import AGREE_ON, LIVE_AGREE_ON, StepEnv, compare_runs, match_bids, write_report
    from ..live.omnibox import OmniboxError
    from ..serving.omnibox.env import OmniboxEnvError

    sim = _make_env(app, world_seed, size)
    sim.reset(seed=seed, options={"task": task})
    actions = sim.oracle_plan()
    other: StepEnv
    if against == "browser":
        from ..serving.browser import BrowserError, make_browser_env

        try:
            other = make_browser_env(app, world_seed, size=size)
        except BrowserError as exc:
            raise UserError(str(exc)) from None
        task_b: Any = task
    elif against == "omnibox":
        from ..serving.omnibox.env import OmniboxSimEnv

        if not server:
            raise UserError("--against omnibox needs --server (the `simweb omnibox` URL)")
        other = OmniboxSimEnv(server, api_key or "default_key")
        task_b = task
    else:
        from ..live import LiveEnv

        if not server or not site:
            raise UserError("--against live needs --server (the Omniboxes URL) and --site (the site's base URL)")
        try:
            other = LiveEnv(server, api_key=api_key, max_steps=len(actions) + 1)   # compare every step of the plan
        except (OmniboxError, ValueError) as exc:
            raise UserError(str(exc)) from None
        from ..live.tasks import start_url

        task_b = {"task_id": 0, "task_name": sim.task.goal, "website": start_url(site, task, seed)}
    try:
        live = against == "live"
        report = compare_runs(sim, other, actions, task_a=task, task_b=task_b, seed=seed,
                              map_action=match_bids if live else None, agree_on=LIVE_AGREE_ON if live else AGREE_ON)
    except (OmniboxError, OmniboxEnvError) as exc:   # no browser instance, a refused key...
        raise UserError(str(exc)) from None
    except OSError as exc:   # urllib's URLError: no server there
        if against != "omnibox":
            raise
        raise UserError(f"cannot reach {server}: {getattr(exc, 'reason', exc)}") from None
    finally:
        other.close()
    write_report(report, out)
    s = report["summary"]
    click.echo(f"{task} seed={seed} sim vs {against}: {s['steps']} steps, URL agreement {s['url_agreement']:.2f}, "
               f"error agreement {s['error_agreement']:.2f}, mean AX-tree overlap {s['mean_jaccard']:.2f}, "
               f"first divergence {s['first_divergence']} -> {out}")


@main.command("browsergym")
@click.argument("app")
@click.option("--tasks", default=None, help="Comma-separated task ids (templates or sub-tasks; default: every one).")
@click.option("--seeds", default="1000", show_default=True, help="Seeds: N, N-M or a list (1000 and up: held out).")
@click.option("--agent", type=click.Choice(["oracle", "random"]), default="oracle", show_default=True,
              help="The simweb agent run in-process whose actions BrowserGym replays.")
@click.option("--reward", type=click.Choice(["sparse", "progress"]), default="sparse", show_default=True)
@click.option("--max-steps", type=click.IntRange(min=1), default=None,
              help="Step budget on both sides (default: the task's).")
@click.option("--out", "-o", type=click.Path(dir_okay=False), default=None, help="Write the rows as JSONL here.")
@click.option("--list", "list_only", is_flag=True, help="Only list the app's BrowserGym task names.")
@_guard
def browsergym_cmd(app: str, tasks: str | None, seeds: str, agent: str, reward: str, max_steps: int | None,
                   out: str | None, list_only: bool) -> None:
    """Run APP's tasks through stock BrowserGym (browsergym/simweb.<app>.<template>) beside
    simweb in-process, on the same seeds: the steps, rewards and verdicts of both sides;
    exit 1 if any differ. The app is served in this process, or taken from
    $SIMWEB_<APP>_URL (docs/browsergym.md)."""
    from ..episodes.episode import find_task
    from ..runtime.registry import definition
    from .evaluate import EvalError, parse_seeds

    name = definition(app).name
    try:
        import simweb.browsergym as sb
    except ImportError as exc:
        raise UserError(str(exc).splitlines()[0]) from None
    from ..episodes.rollout import write_atomic
    from ..runtime.app import load_app
    from ..serving.browser import BrowserError

    ids = [t.strip() for t in tasks.split(",") if t.strip()] if tasks else sb.task_ids([name])
    sim = load_app(definition(name))
    for t in ids:
        if not t.startswith(name + "/"):
            raise UserError(f"task '{t}' is not one of {name}'s")
        find_task(sim, t)   # unknown: one line with "did you mean"
    if list_only:
        for t in ids:
            click.echo(sb.browsergym_name(t))
        return
    try:
        seed_list = parse_seeds(seeds)
    except EvalError as exc:
        raise UserError(str(exc)) from None
    try:
        sb.server_for(name)   # a server named by $SIMWEB_<APP>_URL that does not answer: one line, before any run
        rows = sb.compare(ids, seed_list, agent, reward=reward, max_steps=max_steps,
                          on_episode=lambda r: click.echo(f"{r.task} {r.seed}: {'same' if r.equal else 'DIFFERENT'}",
                                                          err=True))
    except (sb.ServerError, BrowserError) as exc:
        raise UserError(str(exc)) from None
    from rich.table import Table

    table = Table(title=f"{name}: {agent} in-process and through BrowserGym ({reward} reward)")
    for col in ("task", "seed", "steps sim/bg", "reward sim/bg", "success", "progress", "clean", "same"):
        table.add_column(col)
    for r in rows:
        v = r.bg_verdict
        table.add_row(r.task, str(r.seed), f"{r.sim_steps}/{r.bg_steps}", f"{r.sim_reward:g}/{r.bg_reward:g}",
                      str(v.get("success")), f"{v.get('progress', 0):.2f}", str(v.get("clean")),
                      "yes" if r.equal else "NO")
    _console().print(table)
    if out:
        write_atomic(out, [orjson.dumps(r.to_json()) for r in rows])
    different = [r for r in rows if not r.equal]
    if different:
        click.echo(f"{len(different)} of {len(rows)} episodes differ", err=True)
        sys.exit(1)


def _compare_walks(app: str, walks: int, steps: int, seed: int, out: str, world_seed: int) -> None:
    """``simweb compare APP --walks N``: the walk report as JSON, and one line per class."""
    from ..runtime import registry
    from ..serving.browser import BrowserError
    from .walks import run_walks

    registry.resolve(app)
    try:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"cannot write {out}: {exc.strerror or exc}") from None
    try:
        report = run_walks(app, walks, steps, seed, world_seed=world_seed, keep_steps=True)
    except BrowserError as exc:
        raise UserError(str(exc)) from None
    Path(out).write_text(json.dumps(report, indent=1, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
    click.echo(f"{app}: {report['walks_agreeing']}/{report['walks']} walks of {steps} steps agree in-process and "
               f"in Chromium (parity {report['parity']:.2%}; {report['parity_but_declared']:.2%} counting "
               f"declared classes as agreeing); {report['steps_agreeing']}/{report['steps_run']} steps -> {out}")
    for name, entry in report["classes"].items():
        click.echo(f"  {entry['count']:4d}  {name}  e.g. {entry['example']['action']}")


@main.command("demo")
@click.option("--apps", "app_names", default=None, help="Comma-separated apps (default: all).")
@click.option("--seeds", type=click.IntRange(min=1, max=1000), default=2, show_default=True,
              help="Episode seeds per task template.")
@click.option("--workers", type=click.IntRange(min=1, max=64), default=None, help="Processes (default: CPU count).")
@click.option("--branches", type=click.IntRange(min=0, max=1000), default=4, show_default=True,
              help="Random branches forked from the middle of each oracle run.")
@click.option("--out", "-o", type=click.Path(file_okay=False), default=None,
              help="Write every trajectory under this folder (APP/TASK/seed-N-AGENT.jsonl; see `simweb view`).")
@click.option("--variants", "variant_ids", default=None,
              help="Site variants to run every template on: N, N-M or a list (docs/variants.md); each variant "
                   "gets its own task seeds.")
@with_world
@_guard
def demo_cmd(app_names: str | None, seeds: int, workers: int | None, branches: int, out: str | None,
             world_seed: int, size: int | None, variant_ids: str | None = None) -> None:
    """Roll out the oracle and a random agent on every task template, fork branches from
    mid-trajectory states, and print success, progress, clean and throughput; with --out,
    write the trajectories (open them with `simweb view`)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Table

    from ..episodes.rollout import Job, run_pool
    from ..runtime import registry

    names = app_names.split(",") if app_names else registry.names()
    for n in names:
        registry.resolve(n)
    workers = workers or max(1, os.cpu_count() or 1)
    if out:
        try:
            Path(out).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UserError(f"cannot write {out}: {exc.strerror or exc}") from None
    jobs = []
    variants_of = _demo_variants(names, variant_ids)
    for n in names:
        env = _make_env(n, world_seed, size)   # builds the world once, before the workers start
        for tid in env.app.tasks:
            for v in variants_of[n]:
                for s in range(v * seeds, (v + 1) * seeds):   # each variant its own instances
                    env.reset(seed=s, options={"task": tid})
                    mid = len(env.oracle_plan()) // 2
                    jobs.append(Job(n, world_seed, size, tid, s, "oracle", fork_at=mid, fork_branches=branches,
                                    fork_steps=10, out=out, variant=v))
                    jobs.append(Job(n, world_seed, size, tid, s, "random", out=out, variant=v))
    t0 = time.perf_counter()
    with Progress(TextColumn("[bold]rollouts"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  transient=True) as bar:
        job_bar = bar.add_task("rollouts", total=len(jobs))
        results = run_pool(jobs, workers, on_done=lambda r: bar.advance(job_bar))
    wall = time.perf_counter() - t0
    by: dict[tuple[str, str], dict[str, Any]] = {}
    for r in results:
        by.setdefault((r["task"], r["agent"]), {"s": [], "p": [], "c": [], "steps": [], "sec": [], "d": r["difficulty"],
                                              "intact": [], "fsteps": [], "fsec": []})
        e = by[(r["task"], r["agent"])]
        for k, field in (("s", "success"), ("p", "progress"), ("c", "clean"), ("steps", "steps"), ("sec", "seconds")):
            e[k].append(r[field])
        if "parent_intact" in r:
            for k, field in (("intact", "parent_intact"), ("fsteps", "fork_steps"), ("fsec", "fork_seconds")):
                e[k].append(r[field])
    table = Table(title=f"simweb demo: {len(jobs)} rollouts, {seeds} seed(s) per template, {workers} worker(s)")
    for col in ("task", "difficulty", "oracle success", "oracle progress", "clean", "random success",
                "random progress", "steps/s", "forks ok"):
        table.add_column(col, justify="left" if col == "task" else "right")
    total_steps = total_sec = 0.0

    def mean(xs: list) -> float:
        return sum(xs) / len(xs) if xs else 0.0

    for (tid, agent), e in by.items():
        if agent != "oracle":
            continue
        rnd = by.get((tid, "random"), {"s": [0], "p": [0.0], "steps": [], "sec": []})
        steps = sum(e["steps"]) + sum(rnd["steps"]) + sum(e["fsteps"])
        sec = sum(e["sec"]) + sum(rnd["sec"]) + sum(e["fsec"])
        total_steps += steps
        total_sec += sec
        table.add_row(tid, e["d"], f"{mean(e['s']):.2f}", f"{mean(e['p']):.2f}", f"{mean(e['c']):.2f}",
                      f"{mean(rnd['s']):.2f}", f"{mean(rnd['p']):.2f}", f"{steps / sec:,.0f}" if sec else "-",
                      f"{sum(e['intact'])}/{len(e['intact'])}" if e["intact"] else "-")
    con = _console()
    con.print(table)
    con.print(f"{int(total_steps):,} steps in {total_sec:.2f} s of rollout time "
              f"({total_steps / max(total_sec, 1e-9):,.0f} steps/s per worker); wall {wall:.1f} s"
              + (f"; trajectories -> {os.path.join(out, '')} (simweb view {out})" if out else ""))
    if variant_ids is not None:
        from .variants_cli import demo_report

        demo_report(con, results, variants_of)


@main.command("eval")
@click.argument("app")
@click.option("--agent", default="oracle", show_default=True,
              help="oracle, random, scripted (only templates a portable family has scripts for, see docs/agents.md), "
                   "llm, or a policy by import path package.module:Name.")
@click.option("--tasks", "tasks", default=None, help="Comma-separated template ids (default: every template).")
@click.option("--seeds", default="0-4", show_default=True,
              help="Task seeds: N, N-M or a list (0-4,9); for scripted, the families' instance indexes.")
@click.option("--backend", type=click.Choice(["sim", "browser", "ray"]), default="sim", show_default=True,
              help="sim: in-process (with --workers: a local process pool); browser: the app served to headless "
                   "Chromium; ray: in-process envs on Ray actors (--workers of them, --address).")
@click.option("--workers", "-w", type=click.IntRange(1, 1024), default=1, show_default=True,
              help="Worker processes (sim) or Ray actors (ray).")
@click.option("--address", default=None, help="ray: auto or HOST:PORT (default: a local Ray started for this run).")
@click.option("--out", "-o", type=click.Path(file_okay=False), default=None,
              help="Directory for trajectories, episodes.jsonl and summary.json [default: eval-APP-AGENT].")
@click.option("--max-steps", type=click.IntRange(min=1), default=None, help="Step budget (default: the task's).")
@click.option("--checkpoint", default=None, type=click.Path(),
              help="learned: a `simweb train` folder (its trained policy) or its init/ folder (the untrained one).")
@click.option("--screenshots", is_flag=True,
              help="browser: keep a screenshot of every page beside the trajectories (see `simweb view`).")
@click.option("--variant", type=click.IntRange(min=0), default=0, show_default=True,
              help="sim, ray: the site variant the episodes run on (docs/variants.md; 0: today's site).")
@with_options(llm_options)
@with_world
@_guard
def eval_cmd(app: str, agent: str, tasks: str | None, seeds: str, backend: str, workers: int, address: str | None,
             out: str | None, max_steps: int | None, checkpoint: str | None, screenshots: bool, model: str | None,
             base_url: str | None, api_key: str | None, prompt: str, timeout: float, retries: int, world_seed: int,
             size: int | None, variant: int = 0) -> None:
    """Run an agent on an app's task instances; print success / progress / clean per
    template (and in total) and write the trajectories."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Table

    from ..agents.llm import LLMAgent, LLMError
    from .evaluate import EvalError, parse_seeds, plan_episodes, run_eval, summarise

    if screenshots and backend != "browser":
        raise UserError("--screenshots is for --backend browser (in-process pages have no pixels)")
    if variant and backend == "browser":
        raise UserError("--variant runs in-process (sim, ray); a variant in Chromium: `simweb serve --variant K`")
    env = _make_env(app, world_seed, size, variant)
    ids = [t.strip() for t in tasks.split(",") if t.strip()] if tasks else None
    for t in ids or []:
        env.app_task(t)   # unknown or other-app templates: one line, with a suggestion
    llm = None
    policy = None
    if (agent == "learned") != (checkpoint is not None):
        raise UserError("--checkpoint goes with --agent learned (and --agent learned needs --checkpoint DIR)")
    if agent == "learned" and checkpoint is not None:
        from ..episodes.learner import load_checkpoint

        policy = load_checkpoint(checkpoint, app)   # missing, corrupt or another app's: one line, exit 2
    elif agent not in ("oracle", "random", "scripted", "llm"):
        from ..episodes.policy import load_policy

        policy = load_policy(agent)   # an unknown name or import path: one line, exit 2
    try:
        specs = plan_episodes(env.app, agent, ids, parse_seeds(seeds))
        if agent == "llm":
            if not model or not base_url:
                raise EvalError("--agent llm needs --model and --base-url")
            llm = LLMAgent(model=model, base_url=base_url, api_key=api_key, prompt=prompt, timeout=timeout,
                           retries=retries)
    except (EvalError, LLMError) as exc:
        raise UserError(str(exc)) from None
    pool = None
    if workers > 1 or backend == "ray":
        if agent in ("scripted", "llm"):
            raise UserError(f"--agent {agent} runs in this process: drop --workers / --backend ray")
        from ..episodes.rollout import make_pool

        pool = make_pool("ray" if backend == "ray" else "local", workers, address)
    if backend == "browser":
        from ..serving.browser import BrowserError, make_browser_env

        try:
            env = make_browser_env(app, world_seed, size=size, screenshots=screenshots)
        except BrowserError as exc:
            raise UserError(str(exc)) from None
    out = out or f"eval-{app}-{agent}"
    header: dict[str, Any] = {"backend": backend, **({"variant": variant} if variant else {})}
    if checkpoint is not None:
        header["checkpoint"] = str(checkpoint)
    if llm is not None:
        header.update(model=model, base_url=base_url, prompt=prompt)
    try:
        with Progress(TextColumn(f"[bold]{app} {agent}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      TextColumn("{task.description}"), transient=True,
                      disable=not sys.stderr.isatty() or len(specs) < 2) as bar:
            job = bar.add_task("", total=len(specs))
            episodes = run_eval(env, specs, agent, out=out, llm=llm, max_steps=max_steps, header=header,
                                on_episode=lambda e: bar.update(job, advance=1, description=f"{e.task} {e.seed}"),
                                policy=agent if pool is not None and policy is not None and agent != "learned"
                                else policy, pool=pool)
    except LLMError as exc:
        click.echo(f"simweb: error: the model endpoint failed: {exc} (finished episodes are in {out})", err=True)
        sys.exit(1)
    finally:
        if backend == "browser":
            env.close()
        if pool is not None:
            pool.close()
    rows = summarise(episodes)
    view = Table(title=f"{app}: {agent} on {len(episodes)} episodes ({backend})")
    for col in ("template", "episodes", "success", "progress", "clean", "steps"):
        view.add_column(col, justify="left" if col == "template" else "right")
    for r in rows:
        if r["template"] == "total":
            view.add_section()
        view.add_row(r["template"], str(r["episodes"]), f"{r['success']:.2f}", f"{r['progress']:.2f}",
                     f"{r['clean']:.2f}", f"{r['steps']:.1f}")
    _console().print(view)
    stuck = sum(1 for e in episodes if e.stuck)
    click.echo(f"trajectories -> {out}/" + (f"; {stuck} scripted episode(s) stopped at a missing element" if stuck
                                             else ""))


# ----------------------------------------------------------------------------- train

@main.command("train")
@click.option("--app", required=True, help="The app to train on (forum, shopping, issues, cms, booking).")
@click.option("--tasks", default=None, help="Comma-separated template ids (default: the app's easy state templates "
                                            "in simweb.train.DEFAULT_TASKS).")
@click.option("--iterations", "-n", type=click.IntRange(0, 100_000), default=None,
              help="Iterations (default: the app's in simweb.train.DEFAULT_ITERATIONS, 20 for others).")
@click.option("--group", "-g", type=int, default=16, show_default=True, help="Forks per start state (GRPO group).")
@click.option("--instances", type=click.IntRange(1, 10_000), default=6, show_default=True,
              help="Task instances (groups) per iteration.")
@click.option("--seed", "-s", type=int, default=0, show_default=True, help="Seed of the run (instances, actions).")
@click.option("--lr", type=FiniteFloatRange(min=0, min_open=True), default=0.1, show_default=True,
              help="Adam's step size.")
@click.option("--max-steps", type=click.IntRange(1, 500), default=10, show_default=True,
              help="Steps per training rollout (evaluation uses the task's budget).")
@click.option("--reward", "group_reward", type=click.Choice(["outcome", "progress"]), default="progress",
              show_default=True, help="Group reward: clean success (outcome) or final clean progress.")
@click.option("--clean-bonus", type=FiniteFloatRange(min=0), default=0.2, show_default=True,
              help="Weight of staying clean, added to the advantage after the group normalisation.")
@click.option("--end-bonus", type=FiniteFloatRange(min=0), default=0.5, show_default=True,
              help="Added to the reward of a clean success the agent ended with its final message.")
@click.option("--curriculum", type=click.Choice(["adaptive", "plan", "none"]), default="adaptive",
              show_default=True,
              help="adaptive: groups start near the oracle plan's end and earlier as they succeed; plan: at "
                   "points of the plan, most near its end; none: at the task start.")
@click.option("--advance-at", type=FiniteFloatRange(min=0, max=1), default=0.5, show_default=True,
              help="adaptive: the success rate at a template's frontier that moves its start one action earlier.")
@click.option("--out", "-o", required=True, type=click.Path(file_okay=False),
              help="Run folder: policy.json, init/, metrics.jsonl, curve.png. An existing run there is resumed.")
@with_options(pool_options)
@with_world
@_guard
def train_cmd(app: str, tasks: str | None, iterations: int | None, group: int, instances: int, seed: int, lr: float,
              max_steps: int, group_reward: str, clean_bonus: float, end_bonus: float, curriculum: str,
              advance_at: float, out: str, workers: int,
              pool_backend: str,
              address: str | None, world_seed: int, size: int | None) -> None:
    """Train the bundled learned policy with group rollouts from forks and a policy gradient
    on group-normalised advantages; write checkpoints, metrics.jsonl and curve.png. Run it
    again with the same settings to resume a stopped run."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from ..runtime import registry
    from .train import DEFAULT_ITERATIONS, TrainConfig, TrainError, plot_curve, read_metrics, train

    registry.resolve(app)
    if iterations is None:
        iterations = DEFAULT_ITERATIONS.get(app, 20)
    _check_counts(None, workers)
    ids = [t.strip() for t in tasks.split(",") if t.strip()] if tasks else []
    cfg = TrainConfig(app=app, tasks=ids, iterations=iterations, group=group, instances=instances, seed=seed, lr=lr,
                      reward=group_reward, max_steps=max_steps, clean_bonus=clean_bonus, end_bonus=end_bonus,
                      curriculum=curriculum, advance_at=advance_at,
                      world_seed=world_seed,
                      size=size)
    env = _make_env(app, world_seed, size)
    done_before = len(read_metrics(out))
    with Progress(TextColumn("[bold]train"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.description}"), transient=True, disable=not sys.stderr.isatty()) as bar:
        job = bar.add_task("", total=max(0, iterations - done_before) * instances)

        def on_iteration(row: dict) -> None:
            bar.update(job, description=f"it {row['iteration'] + 1}: success {row['success']:.2f} "
                                        f"clean {row['clean']:.2f} reward {row['reward']:.2f}")
            if not sys.stderr.isatty():
                click.echo(f"iteration {row['iteration'] + 1}/{iterations}: success {row['success']:.3f} clean "
                           f"{row['clean']:.3f} progress {row['progress']:.3f} loss {row['loss']:+.4f} steps "
                           f"{row['steps']:.1f} ({row['wall']:.1f} s)", err=True)

        train(cfg, out, backend=pool_backend, workers=workers, address=address, on_iteration=on_iteration,
              on_rollout=lambda: bar.advance(job), env=env)
    try:
        curve = f", curve -> {plot_curve(out, title=f'{app}: ' + ', '.join(t.split('/')[-1] for t in cfg.tasks))}"
    except TrainError as exc:
        curve = f" (no curve: {exc})"
    rows = read_metrics(out)
    click.echo(f"{app}: {len(rows)} iterations -> {out}/policy.json (untrained: {out}/init){curve}")


# ----------------------------------------------------------------------------- counterparts

@main.group("counterpart")
def counterpart_group() -> None:
    """Real counterparts of the apps on loopback: install, start, reset, stop, status."""


def _counterpart(name: str):
    from ..live.counterparts import CounterpartError, get

    try:
        return get(name)
    except CounterpartError as exc:
        raise UserError(str(exc)) from None


def _cp_guard(fn: Callable) -> Callable:
    """One-line errors (exit 2) for counterpart failures on top of :func:`_guard`."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from ..live.counterparts import CounterpartError

        try:
            return fn(*args, **kwargs)
        except CounterpartError as exc:
            raise UserError(str(exc)) from None

    return _guard(wrapper)


@counterpart_group.command("install")
@click.argument("name")
@click.option("--force", is_flag=True, help="Rebuild the venv, the data and the pristine copy.")
@_cp_guard
def counterpart_install_cmd(name: str, force: bool) -> None:
    """Install NAME in its own venv, set it up, seed it and keep a pristine copy."""
    cp = _counterpart(name)
    t0 = time.monotonic()
    was = cp.installed() and not force
    cp.install(force=force, progress=True)
    click.echo(f"{name}: {'already installed' if was else 'installed'} in {cp.home} ({time.monotonic() - t0:.1f} s)")


@counterpart_group.command("start")
@click.argument("name")
@click.option("--port", type=click.IntRange(1, 65535), default=None, help="Loopback port (default: the counterpart's).")
@click.option("--timeout", type=FiniteFloatRange(min=1), default=60, show_default=True, help="Seconds to wait for readiness.")
@_cp_guard
def counterpart_start_cmd(name: str, port: int | None, timeout: float) -> None:
    """Start NAME in the background on 127.0.0.1 and wait until it answers."""
    cp = _counterpart(name)
    url = cp.start(port, timeout=timeout)
    click.echo(f"{name}: running at {url} (pid {cp.status()['pid']}, log {cp.log_path})")


@counterpart_group.command("reset")
@click.argument("name")
@_cp_guard
def counterpart_reset_cmd(name: str) -> None:
    """Stop NAME, copy its pristine data back and start it again."""
    cp = _counterpart(name)
    t0 = time.monotonic()
    cp.reset()
    click.echo(f"{name}: reset, running at {cp.url} ({time.monotonic() - t0:.1f} s)")


@counterpart_group.command("stop")
@click.argument("name")
@_cp_guard
def counterpart_stop_cmd(name: str) -> None:
    """Stop NAME by its own pid (its process group)."""
    cp = _counterpart(name)
    was = cp.status()["running"]
    cp.stop()
    click.echo(f"{name}: {'stopped' if was else 'not running'}")


@counterpart_group.command("status")
@click.argument("name", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@_cp_guard
def counterpart_status_cmd(name: str | None, as_json: bool) -> None:
    """Show whether NAME (or every counterpart) is installed and running."""
    from ..live.counterparts import names

    rows = []
    for n in [name] if name else names():
        try:
            rows.append(_counterpart(n).status())
        except UserError:
            if name:
                raise
            rows.append({"name": n, "installed": False, "running": False, "pid": None, "url": None,
                         "home": None, "available": False})
    if as_json:
        click.echo(json.dumps(rows[0] if name else rows, indent=1))
        return
    for r in rows:
        state = "running at " + r["url"] + f" (pid {r['pid']})" if r["running"] else "stopped"
        inst = "installed" if r["installed"] else ("not in this build" if r.get("available") is False else "not installed")
        click.echo(f"{r['name']:10} {inst:18} {state}")


# ----------------------------------------------------------------------------- sim2live

@main.command("sim2live")
@click.option("--pair", required=True, help="app:counterpart, e.g. issues:roundup.")
@click.option("--agent", default="scripted", show_default=True,
              help="scripted, llm, or a policy by import path package.module:Name (simweb.policy.Policy).")
@click.option("--families", default=None, help="Comma-separated family names (default: all of the pair's).")
@click.option("--instances", "-n", type=click.IntRange(1, 200), default=3, show_default=True, help="Instances per family.")
@click.option("--max-steps", type=click.IntRange(1, 500), default=40, show_default=True)
@click.option("--out", "-o", type=click.Path(file_okay=False), required=True, help="Directory for report and traces.")
@click.option("--model", "--llm-model", "llm_model", default=None, help="llm: the model name sent to the endpoint.")
@click.option("--base-url", "--llm-base-url", "llm_base_url", default=None,
              help="llm: the OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1.")
@click.option("--api-key", default=None, help="llm: the API key [default: $OPENAI_API_KEY].")
@click.option("--prompt", "--llm-format", "llm_format", type=click.Choice(["browsergym", "webgym"]), default=None,
              help="llm: BrowserGym's axtree prompt or WebGym's memory/progress/intention/action prompt.")
@click.option("--timeout", type=FiniteFloatRange(min=0.1), default=120.0, show_default=True,
              help="llm: seconds to wait for one completion.")
@click.option("--retries", type=click.IntRange(0, 20), default=4, show_default=True,
              help="llm: more tries on 429/5xx/timeouts, with exponential backoff.")
@click.option("--checkpoint", default=None, type=click.Path(),
              help="learned: a `simweb train` folder; its init/ and trained policies both run, and "
                   "retained.json gives sim gain, live gain and their ratio.")
@click.option("--first-seed", type=click.IntRange(0, 10**6), default=0, show_default=True,
              help="Instances from this simweb seed on (1000+: never drawn in training); issues:roundup only.")
@_cp_guard
def sim2live_cmd(pair: str, agent: str, families: str | None, instances: int, max_steps: int, out: str,
                 llm_base_url: str | None, llm_model: str | None, api_key: str | None, llm_format: str | None,
                 timeout: float, retries: int, checkpoint: str | None, first_seed: int) -> None:
    """Run one agent on the same instances in simweb and on the live counterpart; write a report."""
    from ..live.sim2live import Settings, Sim2LiveError, run

    llm: dict[str, Any] = {k: v for k, v in {"base_url": llm_base_url, "model": llm_model, "prompt_format": llm_format,
                             "api_key": api_key}.items() if v}
    if llm:
        llm.update(timeout=timeout, retries=retries)
    if (agent == "learned") != (checkpoint is not None):
        raise UserError("--checkpoint goes with --agent learned (and --agent learned needs --checkpoint DIR)")
    if agent == "learned" and checkpoint is not None:
        from ..episodes.learner import load_checkpoint
        from ..live.sim2live import parse_pair

        app = parse_pair(pair)[0]
        for c in (checkpoint, str(Path(checkpoint) / "init")):
            load_checkpoint(c, app)   # missing, corrupt, another app's: one line, before any counterpart starts
    elif agent not in ("scripted", "llm"):
        from ..episodes.policy import load_policy

        load_policy(agent)   # an unknown name or import path: one line, exit 2, before any counterpart starts
    fams = [f.strip() for f in families.split(",") if f.strip()] if families else None

    def show(ep: dict) -> None:
        s, lv = ep["sim"], ep["live"]
        click.echo(f"{ep['family']}#{ep['index']}: sim {'ok' if s['success'] else 'fail'} {s['progress']:.2f} "
                   f"({s['steps']} steps) | live {'ok' if lv['success'] else 'fail'} {lv['progress']:.2f} "
                   f"({lv['steps']} steps) | {len(ep['divergences'])} divergences", err=True)

    try:
        if agent == "learned" and checkpoint is not None:
            from ..live.sim2live_learned import run_learned

            gain = run_learned(pair, checkpoint, out, families=fams, instances=instances, max_steps=max_steps,
                               first_seed=first_seed, on_episode=show, progress=True, echo=lambda m: click.echo(m, err=True))
            t = gain["total"]
            click.echo(f"{pair} learned: {t['n']} paired instances, sim gain {t['sim_gain']}, live gain "
                       f"{t['live_gain']}, retained {t['retained_gain']} -> {Path(out) / 'retained.json'}")
            return
        report = run(Settings(pair=pair, agent=agent, families=fams, instances=instances, out=Path(out),
                              max_steps=max_steps, llm=llm or None, first_seed=first_seed), on_episode=show,
                     progress=True)
    except Sim2LiveError as exc:
        raise UserError(str(exc)) from None
    t = report["total"]
    click.echo(f"{pair} {agent}: {t['n']} episodes, sim success {t['sim_success']:.2f}, live success "
               f"{t['live_success']:.2f} -> {Path(out) / 'report.md'}")


# ----------------------------------------------------------------------------- simweb openenv (issue 25)
@main.command("openenv")
@click.argument("app")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", "-p", type=click.IntRange(0, 65535), default=8000, show_default=True)
@click.option("--world-seed", type=int, default=0, show_default=True, help="Seed of the generated world.")
@click.option("--reward", type=click.Choice(["sparse", "progress"]), default="sparse", show_default=True)
@click.option("--max-sessions", type=click.IntRange(min=1), default=64, show_default=True,
              help="Concurrent WebSocket sessions (one env each); one more is refused (CAPACITY_REACHED).")
@click.option("--idle-timeout", type=FiniteFloatRange(min=1), default=600, show_default=True,
              help="Seconds without a message after which a session is closed.")
@click.option("--max-forks", type=click.IntRange(min=1), default=256, show_default=True,
              help="Forks kept for reset(fork=...) (least recently used dropped).")
@click.option("--max-axtree-chars", type=click.IntRange(min=200), default=40_000, show_default=True,
              help="Characters of AX tree in an observation's prompt text.")
@_guard
def openenv_cmd(app: str, host: str, port: int, world_seed: int, reward: str, max_sessions: int,
                idle_timeout: float, max_forks: int, max_axtree_chars: int) -> None:
    """Serve APP as an OpenEnv environment with openenv's own server (WebSocket /ws, one env per session)."""
    from ..runtime import registry

    registry.resolve(app)   # an unknown app: one line, before anything starts
    try:
        from .trainers import openenv_env
    except ImportError as exc:
        raise UserError(f"simweb openenv needs openenv ({exc}); pip install -e '.[openenv]'") from None
    try:
        sock = openenv_env.bind(host, port)
    except OSError as exc:
        raise UserError(f"cannot serve on {host}:{port}: {exc.strerror or exc}") from None
    fastapi_app = openenv_env.make_app(app, world_seed=world_seed, reward=reward, max_sessions=max_sessions,
                                       idle_timeout=idle_timeout, max_forks=max_forks,
                                       max_axtree_chars=max_axtree_chars)
    click.echo(f"simweb: OpenEnv {app} on ws://{host}:{sock.getsockname()[1]}/ws ({max_sessions} sessions, "
               f"idle timeout {idle_timeout:g} s); Ctrl-C stops it", err=True)
    try:
        openenv_env.serve(sock, fastapi_app)
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()


# ----------------------------------------------------------------------------- view and report

def _open_runs(paths: tuple[str, ...]) -> Any:
    """The trajectory index of ``paths`` (a bad path or unreadable file: one line, exit 2)."""
    from .viewer import RunIndex, ViewerError

    try:
        return RunIndex.open(paths)
    except ViewerError as exc:
        raise UserError(str(exc)) from None


@main.command("view")
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", "-p", type=click.IntRange(0, 65535), default=8050, show_default=True)
@_guard
def view_cmd(paths: tuple[str, ...], host: str, port: int) -> None:
    """Browse trajectory files and run directories in a web page: episodes, steps on the
    AX tree, verdict checks, fork trees, state diffs, sim vs live, plots (docs/trajectories.md)."""
    from ..serving.server import make_server
    from .viewer.app import create_app

    idx = _open_runs(paths)
    try:
        server = make_server(create_app(list(paths), index=idx), host, port, threads=4)
    except OSError as exc:
        raise UserError(f"cannot serve on {host}:{port}: {exc.strerror or exc}") from None
    click.echo(f"simweb: viewing {len(idx.episodes)} episodes ({idx.total_steps} steps) on "
               f"http://{host}:{server.effective_port}/", err=True)
    _serve_until_stopped(server.run)


@main.command("report")
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--out", "-o", required=True, type=click.Path(file_okay=False), help="Folder for the PNG and SVG plots.")
@_guard
def report_cmd(paths: tuple[str, ...], out: str) -> None:
    """Plot runs with matplotlib: learning curves (a train folder), success by template and
    difficulty, sim vs live per family, red-team attacks per family, benchmark results against
    their targets (benchmarks/results*.json)."""
    from .plots import write_report

    idx = _open_runs(paths)
    try:
        files = write_report(idx, out)
    except ImportError as exc:
        raise UserError(str(exc)) from None
    if not files:
        raise UserError(f"nothing to plot in {', '.join(paths)} (no train metrics.jsonl, episodes, sim2live "
                        f"report.json, red-team file or benchmark results)")
    for f in files:
        click.echo(f)


# ----------------------------------------------------------------------------- site variants
# `simweb variants APP` and the demo's --variants (simweb.variants_cli, docs/variants.md).
def _demo_variants(names: list[str], ids: str | None) -> dict[str, list[int]]:
    from ..runtime.variants import parse_ids

    return {n: (parse_ids(ids, n) if ids is not None else [0]) for n in names}


def _register_variants() -> None:
    from .variants_cli import register, register_check

    register(main, _guard)
    register_check(main, _guard, _demo_variants)


_register_variants()


if __name__ == "__main__":
    main()
