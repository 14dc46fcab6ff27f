"""Rollouts: run an agent in an env and record a trajectory; a local process pool.

A trajectory file is JSONL: a header line (app, world, task, seed, agent, start state
hash), then one line per step: the action, its error, the URL, a digest of the
observation, the state hash after the step, the reward and the verdict.
"""
from __future__ import annotations

import errno
import hashlib
import os
import stat
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson

from . import __version__
from .agents import make_agent


def obs_digest(obs: dict[str, Any]) -> str:
    return hashlib.sha256(obs["axtree"].encode()).hexdigest()[:16]


@dataclass
class Trajectory:
    header: dict[str, Any]
    steps: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def final(self) -> dict[str, Any]:
        return self.steps[-1]["verdict"] if self.steps and self.steps[-1]["verdict"] else {}

    def lines(self) -> Iterable[bytes]:
        yield orjson.dumps(self.header)
        for s in self.steps:
            yield orjson.dumps(s)


def run_episode(env: Any, agent: Any, *, task: str | None, seed: int, max_steps: int | None = None,
                reset: bool = True, on_step: Callable[[int, dict], None] | None = None) -> Trajectory:
    """Run ``agent`` in ``env`` until the episode ends (or ``max_steps``)."""
    if reset:
        obs, info = env.reset(seed=seed, options={"task": task} if task else None)
    else:
        obs, info = env.observe()
    agent.reset(env)
    # SimEnv keeps its state; a browser env's state lives with its server (one request).
    state = env.state if hasattr(env, "state") else env.snapshot()
    header = {
        "type": "header", "simweb": __version__, "app": env.app.name,
        "world": dict(state["world"]), "task": env.task.id if env.task else None,
        "params": env.task.params if env.task else None, "seed": seed, "agent": agent.name,
        "start_hash": env.state_hash(), "reset": reset,
    }
    traj = Trajectory(header)
    limit = max_steps if max_steps is not None else env.max_steps
    t0 = time.perf_counter()
    for i in range(limit):
        action = agent.act(obs)
        obs, reward, terminated, truncated, info = env.step(action)
        v = info.get("verdict")
        step = {"type": "step", "step": i + 1, "action": action, "error": obs["last_action_error"],
                "url": obs["url"], "obs": obs_digest(obs), "state_hash": env.state_hash(), "reward": reward,
                "terminated": terminated, "truncated": truncated,
                "verdict": ({"success": v["success"], "progress": v["progress"], "clean": v["clean"]} if v else None)}
        traj.steps.append(step)
        if on_step:
            on_step(i, step)
        if terminated or truncated or getattr(agent, "done", False):   # a finished script stops here
            break
    traj.seconds = time.perf_counter() - t0
    return traj


class OutputError(ValueError):
    """An output file that cannot be written (a missing folder, no permission, a full
    disk): one line naming the file and why."""


def write_atomic(path: str, chunks: Iterable[bytes]) -> None:
    """Write a file so that it either appears whole or not at all: into a temporary file
    beside it, renamed over it at the end. Through a symlink, the file it points to is
    written (the link stays). A path that exists and is not a regular file (a device such
    as /dev/stdout or /dev/null, a FIFO) is written to directly: renaming over it would
    replace the device node with a regular file. Raises :class:`OutputError`."""
    target = os.path.realpath(path)
    try:
        mode = os.stat(target).st_mode
    except OSError:
        mode = None
    try:
        if mode is not None and not stat.S_ISREG(mode):
            if stat.S_ISDIR(mode):
                raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
            with open(target, "wb") as f:
                for c in chunks:
                    f.write(c)
                    f.write(b"\n")
            return
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(target) or ".", prefix=".simweb-", suffix=".tmp")
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            for c in chunks:
                f.write(c)
                f.write(b"\n")
        os.replace(tmp, target)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None
        raise


# ----------------------------------------------------------------------------- pool

@dataclass(frozen=True)
class Job:
    app: str
    world_seed: int
    size: int | None
    task: str
    seed: int
    agent: str
    fork_at: int = 0          # with fork_branches: fork the oracle's state at this step
    fork_branches: int = 0
    fork_steps: int = 0


def run_job(job: Job) -> dict[str, Any]:
    """One unit of pool work, returning a small summary (picklable)."""
    from .env import SimEnv

    env = SimEnv(job.app, job.world_seed, size=job.size)
    agent = make_agent(job.agent, job.seed)
    traj = run_episode(env, agent, task=job.task, seed=job.seed)
    out: dict[str, Any] = {"task": job.task, "seed": job.seed, "agent": job.agent, "steps": len(traj.steps),
           "seconds": traj.seconds, "difficulty": env.task.difficulty if env.task else "",
           "success": bool(traj.final.get("success")), "progress": float(traj.final.get("progress", 0.0)),
           "clean": bool(traj.final.get("clean", True)), "branches": []}
    if job.fork_branches:
        # Replay the oracle to the fork point, then branch random rollouts from there.
        env2 = SimEnv(job.app, job.world_seed, size=job.size)
        env2.reset(seed=job.seed, options={"task": job.task})
        for a in env2.oracle_plan()[: job.fork_at]:
            env2.step(a)
        parent_hash = env2.state_hash()
        t0 = time.perf_counter()
        n_steps = 0
        for b in range(job.fork_branches):
            child = env2.fork()
            t = run_episode(child, make_agent("random", job.seed * 1000 + b), task=None, seed=job.seed,
                            max_steps=job.fork_steps, reset=False)
            n_steps += len(t.steps)
            out["branches"].append(t.final.get("progress", 0.0))
        out["fork_seconds"] = time.perf_counter() - t0
        out["fork_steps"] = n_steps
        out["parent_intact"] = env2.state_hash() == parent_hash
    return out


def run_pool(jobs: list[Job], workers: int, on_done: Callable[[dict], None] | None = None) -> list[dict]:
    """Run jobs on a local process pool (workers=1 runs in this process). Results come
    back in job order, whatever order they finish in."""
    results: list[dict | None] = [None] * len(jobs)
    if workers <= 1:
        for i, j in enumerate(jobs):
            result = run_job(j)
            results[i] = result
            if on_done:
                on_done(result)
        return results  # type: ignore[return-value]
    import multiprocessing as mp

    ctx = mp.get_context("fork") if hasattr(os, "fork") else mp.get_context()
    with ctx.Pool(workers) as pool:
        for i, r in pool.imap_unordered(_indexed, list(enumerate(jobs))):
            results[i] = r
            if on_done:
                on_done(r)
    return results  # type: ignore[return-value]


def _indexed(item: tuple[int, Job]) -> tuple[int, dict]:
    i, job = item
    return i, run_job(job)
