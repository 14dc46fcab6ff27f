"""``simweb eval``: run an agent on an app's task instances and tabulate success, progress
and clean per template.

An evaluation is a list of episodes (template, seed), each run with
:func:`simweb.rollout.run_episode` on the chosen backend (``sim``: in-process;
``browser``: the app served to headless Chromium, one browser for the whole run) and
written as a trajectory file; every step line carries the agent's own record (the
scripted agent's step and the element it found, the LLM's reply, reading error, memory
and token usage). ``summarise`` turns the episodes into one row per template plus a
total over all episodes.

Which episodes: ``oracle``, ``random`` and ``llm`` run every requested template at
every seed. ``scripted`` needs a script per instance, which the portable task families
provide (:mod:`simweb.live.scripts`): it runs only the templates some family covers,
at the families' instances, and ``seeds`` are then instance indexes (0 is each family's
first instance); asking for a template without a script is an error naming those that
have one.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import orjson

from ..agents import OracleAgent, RandomAgent, ScriptedAgent
from ..episodes.rollout import run_episode, write_atomic
from ..episodes.trajectory import write_trajectory
from ..live.scripts import scripted_instances

__all__ = ["EvalError", "Episode", "EpisodeSpec", "parse_seeds", "plan_episodes", "run_eval", "summarise"]

MAX_SEEDS = 100_000


class EvalError(ValueError):
    """A request ``simweb eval`` cannot run (one-line message)."""


@dataclass(frozen=True)
class EpisodeSpec:
    """What to run: a template at a seed, with the script when the agent is scripted."""

    task: str
    seed: int
    steps: list[Any] | None = field(default=None, compare=False)
    family: str | None = None
    index: int | None = None


@dataclass
class Episode:
    """How one episode ended."""

    task: str
    seed: int
    success: bool
    progress: float
    clean: bool
    steps: int
    trajectory: str | None = None
    family: str | None = None
    stuck: bool | None = None     # scripted: a step found no element


def parse_seeds(text: str) -> list[int]:
    """``"0-4"``, ``"3"`` or ``"0,2,5-7"`` -> the seeds, in order, without repeats."""
    seeds: list[int] = []
    for part in str(text).split(","):
        part = part.strip()
        m = re.fullmatch(r"(\d+)(?:\s*-\s*(\d+))?", part)
        if not m:
            raise EvalError(f"bad seeds {text!r}: use N, N-M or a comma-separated list of them (e.g. 0-4,9)")
        lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
        if hi < lo:
            raise EvalError(f"bad seed range {part!r}: the end is before the start")
        if hi - lo + len(seeds) >= MAX_SEEDS:
            raise EvalError(f"too many seeds in {text!r} (at most {MAX_SEEDS})")
        seeds.extend(s for s in range(lo, hi + 1) if s not in seeds)
    return seeds


def plan_episodes(app: Any, agent: str, tasks: list[str] | None, seeds: list[int],
                  families: list[Any] | None = None) -> list[EpisodeSpec]:
    """The episodes of an evaluation (see the module doc). ``app`` is the loaded app."""
    if agent != "scripted":
        ids = tasks or list(app.tasks)
        return [EpisodeSpec(t, s) for t in ids for s in seeds]
    found = scripted_instances(app.name, seeds, families)
    have = sorted({i.task for i in found})
    if not have:
        raise EvalError(f"no scripts for {app.name}: scripted runs use the portable task families' scripts, and "
                        f"no family covers a {app.name} template (use --agent oracle, random or llm)")
    missing = [t for t in (tasks or []) if t not in have]
    if missing:
        raise EvalError(f"no script for {', '.join(missing)}; the templates with scripts are: {', '.join(have)}")
    return [EpisodeSpec(i.task, i.seed, i.steps, i.family, i.index) for i in found if not tasks or i.task in tasks]


def _slug(task: str) -> str:
    return task.replace("/", "__")


def run_eval(env: Any, specs: list[EpisodeSpec], agent_name: str, *, out: str | None = None,
             llm: Any = None, max_steps: int | None = None, header: dict[str, Any] | None = None,
             on_episode: Callable[[Episode], None] | None = None, policy: Any = None,
             pool: Any = None) -> list[Episode]:
    """Run every episode on ``env`` (trajectories under ``out``). ``llm`` is the
    :class:`~simweb.agents.llm.LLMAgent` of an ``llm`` run (reused, reset per episode);
    ``policy`` any :class:`simweb.policy.Policy` (reused, ``reset(env, seed)`` per episode).
    ``pool`` (a :func:`simweb.rollout.make_pool`) runs the episodes on its workers instead
    of ``env`` (the agent then travels by pickle: built-in agents and import paths).
    An endpoint failure (:class:`~simweb.agents.llm.LLMError`) propagates after the
    episodes done so far are written."""
    episodes: list[Episode] = []
    folder = Path(out) if out else None
    if folder is not None:
        folder.mkdir(parents=True, exist_ok=True)

    def record(traj: Any, spec: EpisodeSpec, agent: Any = None) -> None:
        traj.header.update(header or {})
        if spec.family is not None:
            traj.header.update(family=spec.family, instance=spec.index)
        v = traj.final
        path = None
        if folder is not None:
            path = str(folder / _slug(spec.task) / f"seed-{spec.seed}.jsonl")
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            write_trajectory(path, traj)
        ep = Episode(spec.task, spec.seed, bool(v.get("success")), float(v.get("progress", 0.0)),
                     bool(v.get("clean", True)), len(traj.steps), path, spec.family,
                     getattr(agent, "stuck", None))
        episodes.append(ep)
        if on_episode:
            on_episode(ep)

    try:
        if pool is not None:
            from ..episodes.rollout import WorkItem, trajectory_from_bytes

            app = env.app
            items = [WorkItem(app.name, s.task, s.seed, max_steps=max_steps, world_seed=app.seed,
                              size=app.size, variant=int(getattr(env, "variant", 0) or 0)) for s in specs]
            outs = pool.run(items, policy if policy is not None else agent_name)
            for spec, blobs in zip(specs, outs):
                record(trajectory_from_bytes(blobs[0]), spec)
            return episodes
        for spec in specs:
            agent = policy if policy is not None else _agent(agent_name, spec, llm)

            seen = [0]

            def on_step(i: int, step: dict, agent: Any = agent, seen: list[int] = seen) -> None:
                if hasattr(agent, "record"):
                    agent.record({"last_action_error": step["error"]})
                log = getattr(agent, "log", None)
                if log and len(log) > seen[0]:   # the agent's record of the action it just chose
                    step["agent"] = log[-1]
                    seen[0] = len(log)

            traj = run_episode(env, agent, task=spec.task, seed=spec.seed, max_steps=max_steps, on_step=on_step)
            record(traj, spec, agent)
    finally:
        if folder is not None:
            write_atomic(str(folder / "episodes.jsonl"), [orjson.dumps(asdict(e)) for e in episodes])
            write_atomic(str(folder / "summary.json"), [orjson.dumps(summarise(episodes), option=orjson.OPT_INDENT_2)])
    return episodes


def _agent(name: str, spec: EpisodeSpec, llm: Any) -> Any:
    if name == "oracle":
        return OracleAgent()
    if name == "random":
        return RandomAgent(spec.seed)
    if name == "scripted":
        return ScriptedAgent(spec.steps or [])
    if name == "llm":
        if llm is None:
            raise EvalError("an llm run needs the LLM agent")
        return llm
    raise EvalError(f"unknown agent '{name}'")


def summarise(episodes: list[Episode]) -> list[dict[str, Any]]:
    """One row per template (in first-seen order) and a final ``total`` row over every
    episode: episodes, success rate, mean progress, clean rate, mean steps."""
    groups: dict[str, list[Episode]] = {}
    for e in episodes:
        groups.setdefault(e.task, []).append(e)

    def row(name: str, eps: list[Episode]) -> dict[str, Any]:
        n = len(eps)
        return {"template": name, "episodes": n,
                "success": sum(e.success for e in eps) / n if n else 0.0,
                "progress": sum(e.progress for e in eps) / n if n else 0.0,
                "clean": sum(e.clean for e in eps) / n if n else 0.0,
                "steps": sum(e.steps for e in eps) / n if n else 0.0}

    return [row(t, eps) for t, eps in groups.items()] + [row("total", episodes)]
